"""Atomics on the CPU: every op × element type × scope × memory space compiles, on both
backends, to the PTX instruction with that scope (``atom.cta.*``, ``atom.sys.*``, and the
plain device-scope ``atom.*``, whose PTX scope is .gpu), and ptxas assembles it. The mistakes
in ``scope=`` are pinned in test_compile_errors.py."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from oxide_build.compile import CompileOptions, CompiledModule, compile_module

INT_OPS = ("add", "sub", "min", "max", "exch", "cas", "and_", "or_", "xor")
FLOAT_OPS = ("add", "sub", "min", "max", "exch", "cas")
SCOPES = {"block": "cta", "device": "gpu", "system": "sys"}  # spelled as in kernels → PTX
CASES = [(op, ty) for ty in ("i32", "u32", "i64", "u64") for op in INT_OPS]
CASES += [("inc", "u32"), ("dec", "u32")] + [(op, ty) for ty in ("f32", "f64") for op in FLOAT_OPS]
ARCHS = ("sm_80", "sm_90")


def kernel_name(space: str, op: str, ty: str, scope: str) -> str:
    return f"{space}_{op.rstrip('_')}_{ty}_{scope}"


def kernel_source(space: str, op: str, ty: str, scope: str) -> str:
    operands = "v, v" if op == "cas" else "v"
    keyword = "" if scope == "device" else f', scope="{scope}"'  # device scope is the default
    if space == "global":
        body = f"    ox.atomic.{op}(t, 0, {operands}{keyword})\n"
    else:
        body = (f"    sh = ox.shared.array(32, {ty})\n"
                f"    r = ox.atomic.{op}(sh, thread.idx.x % 32, {operands}{keyword})\n"
                "    with ox.unsafe():\n        t[0] = r\n")
    return (f"\n@ox.kernel(bounds_check=False)\ndef {kernel_name(space, op, ty, scope)}(t: MutSlice[{ty}], v: {ty}) -> None:\n"
            + body)


def expected_instruction(space: str, op: str, ty: str, scope: str, backend: str) -> str:
    """The one ``atom`` instruction (without operands) the kernel compiles to."""
    bits = ty[1:]
    if op == "cas" or (op in ("min", "max") and ty[0] == "f"):  # float min/max: a cas loop
        core = f"cas.b{bits}"
    elif op in ("add", "sub"):  # sub adds the negation
        core = f"add.{'f' if ty[0] == 'f' else 'u'}{bits}"
    elif op in ("min", "max"):
        core = f"{op}.{'u' if ty[0] == 'u' else 's'}{bits}"
    elif op in ("inc", "dec"):
        core = f"{op}.u32"
    else:
        core = f"{op.rstrip('_')}.b{bits}"
    ptx_scope = SCOPES[scope]
    if ptx_scope != "gpu":
        return f"atom.{ptx_scope}.{space}.{core}"
    if core.startswith("cas") and backend == "nvptx":  # LLVM's cmpxchg keeps syncscope("device")
        return f"atom.relaxed.gpu.{space}.{core}"
    return f"atom.{space}.{core}"


ALL = [(space, op, ty, scope) for space in ("global", "shared") for op, ty in CASES for scope in SCOPES]
SOURCE = ("import oxide as ox\nfrom oxide import MutSlice, f32, f64, i32, i64, thread, u32, u64\n"
          + "".join(kernel_source(*case) for case in ALL))


@pytest.fixture(scope="module", params=["nvptx", "nvvm"])
def compiled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, CompiledModule]:
    src = tmp_path_factory.mktemp("atomics") / "atomics_matrix.py"
    src.write_text(SOURCE)
    backend = request.param
    return backend, compile_module(src, "atomics_matrix", CompileOptions(archs=ARCHS, backend=backend, link_cubins=False))


def atom_instructions(ptx: str, kernel: str) -> list[str]:
    start = ptx.index(f".entry {kernel}(")
    end = ptx.find(".entry ", start + 1)
    body = ptx[start:end if end >= 0 else len(ptx)]
    return [line.split()[0] for line in body.splitlines() if line.strip().startswith("atom.")]


def test_every_atomic_has_its_scope(compiled: tuple[str, CompiledModule]) -> None:
    backend, module = compiled
    for arch in ARCHS:
        wrong = []
        for case in ALL:
            want = expected_instruction(*case, backend)
            got = atom_instructions(module.ptx[arch], kernel_name(*case))
            if got != [want]:
                wrong.append(f"{kernel_name(*case)}: {got} instead of [{want}]")
        assert not wrong, f"{backend} {arch}:\n" + "\n".join(wrong)


def test_ptxas_assembles_scoped_atomics(compiled: tuple[str, CompiledModule], ptxas: Callable[[str, str], None]) -> None:
    for arch in ARCHS:
        ptxas(compiled[1].ptx[arch], arch)


def test_scope_spellings_and_module_constants(tmp_path: Path) -> None:
    """``cta``/``gpu``/``sys`` are the PTX names of block/device/system; a module-level string
    constant is a compile-time scope too."""
    src = tmp_path / "spellings.py"
    src.write_text(
        "import oxide as ox\nfrom oxide import MutSlice, u32\n\nSCOPE = \"system\"\n\n"
        "@ox.kernel(bounds_check=False)\ndef k(t: MutSlice[u32]) -> None:\n"
        "    ox.atomic.add(t, 0, u32(1), scope=\"cta\")\n    ox.atomic.or_(t, 1, u32(1), scope=\"gpu\")\n"
        "    ox.atomic.xor(t, 2, u32(1), scope=\"sys\")\n    ox.atomic.and_(t, 3, u32(1), scope=SCOPE)\n"
    )
    ptx = compile_module(src, "spellings", CompileOptions(archs=("sm_90",), link_cubins=False)).ptx["sm_90"]
    assert atom_instructions(ptx, "k") == ["atom.cta.global.add.u32", "atom.global.or.b32",
                                           "atom.sys.global.xor.b32", "atom.sys.global.and.b32"]


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_gpu_test_kernels_compile(backend: str, ptxas: Callable[[str, str], None]) -> None:
    """The kernels of test_atomics_gpu.py, checked here where there is no GPU."""
    src = Path(__file__).parent / "packages" / "atomickernels" / "atomk.py"
    module = compile_module(src, "atomk", CompileOptions(archs=ARCHS, backend=backend, link_cubins=False))
    assert sorted(k.name for k in module.kernels) == ["block_extremes", "block_histograms", "ordered_copy", "relay",
                                                      "system_totals"]
    assert "atom.cta.shared.add.u32" in atom_instructions(module.ptx["sm_90"], "block_histograms")
    assert "atom.cta.shared.cas.b32" in atom_instructions(module.ptx["sm_90"], "block_extremes")  # f32 max
    assert "atom.sys.global.inc.u32" in atom_instructions(module.ptx["sm_90"], "system_totals")
    for arch in ARCHS:
        ptxas(module.ptx[arch], arch)


ORDERED_TYPES = ("i32", "u32", "i64", "u64", "f32", "f64")


def ordered_source() -> str:
    """A kernel per (space, type, order, scope) of ``ox.atomic.load`` and one of
    ``ox.atomic.store``."""
    out = ["import oxide as ox\nfrom oxide import MutSlice, f32, f64, i32, i64, thread, u32, u64\n"]
    for space in ("global", "shared"):
        for ty in ORDERED_TYPES:
            for scope in SCOPES:
                for order in ("relaxed", "acquire"):
                    target = "t" if space == "global" else "sh"
                    decl = f"    sh = ox.shared.array(32, {ty})\n" if space == "shared" else ""
                    out.append(f"\n@ox.kernel(bounds_check=False)\ndef load_{space}_{ty}_{order}_{scope}(t: MutSlice[{ty}]) -> None:\n"
                               f"{decl}    r = ox.atomic.load({target}, 1, order=\"{order}\", scope=\"{scope}\")\n"
                               "    with ox.unsafe():\n        t[0] = r\n")
                for order in ("relaxed", "release"):
                    target = "t" if space == "global" else "sh"
                    decl = f"    sh = ox.shared.array(32, {ty})\n" if space == "shared" else ""
                    out.append(f"\n@ox.kernel(bounds_check=False)\ndef store_{space}_{ty}_{order}_{scope}(t: MutSlice[{ty}], v: {ty}) -> None:\n"
                               f"{decl}    ox.atomic.store({target}, 1, v, order=\"{order}\", scope=\"{scope}\")\n"
                               + ("    with ox.unsafe():\n        t[0] = sh[1]\n" if space == "shared" else ""))
    return "".join(out)


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_ordered_loads_and_stores(backend: str, tmp_path: Path, ptxas: Callable[[str, str], None]) -> None:
    """``ox.atomic.load(order=...)`` is one ``ld.<order>.<scope>.<space>.b<bits>`` and
    ``ox.atomic.store`` one ``st.<order>.<scope>.<space>.b<bits>`` (floats move as their bits),
    for every type, scope and order, in global and shared memory, on both backends; ptxas
    assembles them for sm_80 and sm_90."""
    src = tmp_path / "ordered.py"
    src.write_text(ordered_source())
    module = compile_module(src, "ordered", CompileOptions(archs=ARCHS, backend=backend, link_cubins=False))
    wrong = []
    for k in module.kernels:
        kind, space, ty, order, scope = k.name.split("_")
        start = module.ptx["sm_90"].index(f".entry {k.name}(")
        end = module.ptx["sm_90"].find(".entry ", start + 1)
        body = module.ptx["sm_90"][start:end if end >= 0 else None]
        op = "ld" if kind == "load" else "st"
        ordered = [line.split()[0] for line in body.splitlines()
                   if line.strip().startswith((f"{op}.relaxed", f"{op}.acquire", f"{op}.release"))]
        want = f"{op}.{order}.{SCOPES[scope]}.{space}.b{ty[1:]}"
        if ordered != [want]:
            wrong.append(f"{k.name}: {ordered} instead of [{want}]")
    assert len(module.kernels) == 2 * 6 * 3 * 4
    assert not wrong, "\n".join(wrong)
    for arch in ARCHS:
        ptxas(module.ptx[arch], arch)


def test_ordered_access_in_a_polling_loop(tmp_path: Path) -> None:
    """A relaxed load polled in a loop stays in the loop (inline PTX with side effects: never
    hoisted nor merged), and the store before it is not moved after it."""
    src = tmp_path / "poll.py"
    src.write_text("import oxide as ox\nfrom oxide import MutSlice, i64\n\n"
                   "@ox.kernel(bounds_check=False)\ndef k(flags: MutSlice[i64]) -> None:\n"
                   "    ox.atomic.store(flags, 0, i64(1), order=\"release\")\n"
                   "    while ox.atomic.load(flags, 1, order=\"acquire\") == 0:\n        pass\n")
    ptx = compile_module(src, "poll", CompileOptions(archs=("sm_90",), link_cubins=False)).ptx["sm_90"]
    lines = [line.strip() for line in ptx.splitlines()]
    store = next(i for i, line in enumerate(lines) if line.startswith("st.release.gpu.global.b64"))
    load = next(i for i, line in enumerate(lines) if line.startswith("ld.acquire.gpu.global.b64"))
    assert store < load
    branch_back = [line for line in lines[load:] if line.startswith("@%p") and "bra" in line]
    assert branch_back, "the poll's loop"
