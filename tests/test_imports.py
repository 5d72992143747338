"""The import structure of oxide and oxide_build, read from the source (nothing is imported).

Every import counts, function-local ones included: a cycle hidden inside a function is still a
cycle between the modules' concerns. The runtime reaches the compiler only through one lazy
hook, so that an installed wheel never needs the build side.
"""
from __future__ import annotations

import ast
from pathlib import Path

__all__: list[str] = []

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("oxide", "oxide_build")
# the one place the runtime may import the build side: lazily, for a JIT compile
RUNTIME_TO_BUILD_HOOK = "oxide.runtime.artifacts"
JIT_MODULE = "oxide_build.jit"
KNOWN_CYCLES: list[list[str]] = []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that an import of ``name`` executes last: ``a.b.c`` may be a module,
    or a name inside module ``a.b``."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _type_checking_only(tree: ast.AST) -> set[ast.AST]:
    """The import statements under ``if TYPE_CHECKING:``: they never run."""
    skipped: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                skipped.update(ast.walk(stmt))
    return skipped


def _imported_names(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([base] if base else []))
        # `from pkg import sub` imports the module pkg.sub when there is one
        return [f"{base}.{alias.name}" for alias in node.names] + [base]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return [node.args[0].value]  # importlib.import_module("a.b"): an import too
    return []


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """module -> the modules of ours that importing it, or calling into it, may execute.

    Function-local imports count. Importing ``a.b.c`` executes ``a`` and ``a.b`` first, so
    those are edges too, except towards the importer's own enclosing packages (already being
    executed when the importer runs). ``type_checking``: the imports under ``if
    TYPE_CHECKING:`` count too (what a module's types depend on).
    """
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        own_packages = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skipped = set() if type_checking else _type_checking_only(tree)
        for node in ast.walk(tree):
            if node in skipped:
                continue
            for target in _imported_names(node, package):
                resolved = _resolve(target, modules)
                while resolved:
                    if resolved != name and resolved not in own_packages:
                        graph[name].add(resolved)
                    resolved = resolved.rpartition(".")[0]
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted.

    A package's ``__init__`` that re-exports its own modules is not a cycle with them: a
    module importing a sibling through the package name resolves to the sibling here.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def connect(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return components


def test_there_is_no_import_cycle() -> None:
    graph = import_graph()
    # the JIT hook is called on a first launch only, long after both packages are imported
    graph[RUNTIME_TO_BUILD_HOOK] -= {JIT_MODULE, "oxide_build"}
    cycles = [c for c in import_cycles(graph) if c not in KNOWN_CYCLES]
    assert not cycles, "import cycles (function-local imports included):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_the_known_cycles_are_still_there() -> None:
    """When one is broken, drop it from KNOWN_CYCLES, so that it cannot come back."""
    cycles = import_cycles(import_graph())
    assert [c for c in KNOWN_CYCLES if c not in cycles] == []


def test_the_abi_is_a_leaf() -> None:
    graph = import_graph()
    abi = {v: sorted(w for w in ws if not w.startswith("oxide.abi")) for v, ws in graph.items() if v.startswith("oxide.abi")}
    assert abi and all(not ws for ws in abi.values()), abi


def test_the_runtime_reaches_the_build_side_only_through_the_jit_hook() -> None:
    graph = import_graph()
    edges = sorted(f"{v} -> {w}" for v, ws in graph.items() for w in ws
                   if v.startswith("oxide.") and w.startswith("oxide_build"))
    assert edges == [f"{RUNTIME_TO_BUILD_HOOK} -> oxide_build", f"{RUNTIME_TO_BUILD_HOOK} -> {JIT_MODULE}"]
    hook = ast.parse(_modules()[RUNTIME_TO_BUILD_HOOK].read_text(encoding="utf-8"))
    # lazily: not at module level, so that importing the runtime never loads the compiler
    assert not [n for n in hook.body if "oxide_build" in ast.unparse(n) and isinstance(n, (ast.Import, ast.ImportFrom))]


def test_no_intrinsic_module_imports_the_frontend_or_the_lowering() -> None:
    """An intrinsic sees the compiler through intrinsics/context.py's protocols only, types
    included: the frontend and the lowering may change inside without touching it."""
    graph = import_graph(type_checking=True)
    edges = sorted(f"{v} -> {w}" for v, ws in graph.items() if v.startswith("oxide_build.intrinsics")
                   for w in ws if w.startswith(("oxide_build.frontend", "oxide_build.lower")))
    assert edges == []


def test_building_ir_loads_no_llvmlite() -> None:
    """The frontend and the passes run without llvmlite (``oxide compile --emit ir``, the
    tools that read the IR): the intrinsic modules load it when a lowering first runs."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.path.insert(0, 'tests')\n"
        "from oxide.errors import OxideError\n"
        "from oxide_build.compile import CompileOptions, build_ir\n"
        "from ptx_snapshot import snapshot_modules\n"
        "built = 0\n"
        "for path, module, root in snapshot_modules():\n"
        "    try:\n"
        "        build_ir(path, module, CompileOptions(archs=('sm_90a',)), root=root)\n"
        "        built += 1\n"
        "    except OxideError:\n"
        "        pass\n"
        "assert built > 50, built\n"
        "assert 'llvmlite' not in sys.modules, sorted(m for m in sys.modules if 'llvmlite' in m)\n"
        "from oxide_build.intrinsics.lazy_llvm import LLVM_IR\n"
        "assert LLVM_IR.IntType(32) is LLVM_IR.IntType(32) and 'llvmlite.ir' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_graph_sees_function_local_and_relative_imports() -> None:
    graph = import_graph()
    # compile.py imports the frontend inside compile_module, with a relative import
    assert "oxide_build.frontend" in graph["oxide_build.compile"]
    assert "oxide_build.scan" in graph["oxide_build.compile"]


def test_a_cycle_is_found() -> None:
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


COMPILER_FOLDERS = ("frontend", "intrinsics", "lower", "passes", "ir", "backends", "link", "package", "toolchain")


def folder_graph() -> dict[str, set[str]]:
    """The build side's import graph, ``if TYPE_CHECKING:`` imports included, with each folder
    of the compiler (``oxide_build/<folder>/``) one node and each top-level module its own."""

    def node(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[1] in COMPILER_FOLDERS else module

    graph: dict[str, set[str]] = {}
    for v, ws in import_graph(type_checking=True).items():
        if not v.startswith("oxide_build."):
            continue
        graph.setdefault(node(v), set()).update(
            node(w) for w in ws if w.startswith("oxide_build.") and node(w) != node(v))
    for ws in list(graph.values()):
        for w in ws:
            graph.setdefault(w, set())
    return graph


def test_the_compiler_folders_form_no_cycle() -> None:
    """frontend, intrinsics, lower, passes, ir, backends, link, package and the top-level modules
    (compile.py, the driver, above them all) depend on each other one way, types included."""
    cycles = import_cycles(folder_graph())
    assert not cycles, "cycles between the compiler's folders (TYPE_CHECKING imports included):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)
    graph = folder_graph()
    assert "oxide_build.compile" not in graph["link"] and "backends" not in graph["link"]


# the passes that still name an intrinsic: the fma pass makes math.fma, the fp8 arch check reads
# the operand types of mma.sync's fp8 form
PASSES_NAMING_INTRINSICS = {("oxide_build.passes.fma", "math.fma"), ("oxide_build.passes.fp8_arch", "mma.sync")}


def test_passes_read_intrinsic_roles_not_names() -> None:
    """A pass asks an intrinsic's entry for a role (intrinsics/entry.py's ``Role``) or an
    attribute, so that a new intrinsic of a kind is seen by declaring it in its entry: no pass
    writes an intrinsic's name, or the prefix of a group of them."""
    from oxide_build.intrinsics import INTRINSICS

    groups = {f"{info.group}." for info in INTRINSICS.values() if info.op}
    found = set()
    for name, path in _modules().items():
        if not name.startswith("oxide_build.passes"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        in_messages = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in in_messages and (
                    node.value in INTRINSICS or node.value in groups):
                found.add((name, node.value))
    assert found == PASSES_NAMING_INTRINSICS
