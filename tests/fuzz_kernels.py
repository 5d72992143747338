"""A seeded fuzzer over kernel sources: AST mutations of the kernels in examples/ and
tests/packages/, each compiled as the build compiles it (PTX, then cubins through nvJitLink,
which runs ptxas). Every mutant must either compile or fail with a located ``CompileError``
(``file:line``); a traceback from our internals, an unlocated error, an LLVM error or a
ptxas/nvJitLink error is a failure.

tests/test_fuzz.py runs a few hundred mutants; run many more with

    OXIDE_FUZZ_COUNT=10000 OXIDE_FUZZ_SEED=7 python -m pytest tests/test_fuzz.py
    python tests/fuzz_kernels.py --count 10000 --seed 7 --start 0 --out /tmp/fuzz --budget 60

Every compile runs under a budget of CPU time (``--budget`` seconds, 60 unless told;
OXIDE_FUZZ_BUDGET for the test): the compile's own CPU time, user and system, of every thread
and of any child process it waited for, measured with the profiling timer (ITIMER_PROF) and
``os.times()``, not wall-clock time, so a loaded or niced machine does not make a compile over
budget. A mutant that compiles, or fails, after more CPU time than its budget is a failure
(``over budget``), even where the time went in native code that the timer could not interrupt.
A compile that takes 30 times its budget in wall-clock time (it waits, using no CPU) is
stopped and is a failure too (``stalled``).

``--tsv FILE`` appends one line per mutant (index, ok, CPU seconds, wall seconds, outcome,
source, mutations) and skips the indices FILE already holds, so a long run is resumed by
running the same command again, and split into chunks with ``--start``/``--count``;
``--sources FILE`` keeps the list of usable sources (finding it compiles each once) for them.

Mutant ``i`` of seed ``s`` depends on ``(s, i)`` only, so one failure is reproduced with
``--start i --count 1`` (``--out`` keeps the failing sources).
"""
from __future__ import annotations

import argparse
import ast
import copy
import os
import random
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oxide_build.compile import CompileOptions

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["Mutant", "Outcome", "kernel_sources", "make_mutant", "compile_mutant", "run_fuzz", "FuzzReport"]

# Values that sit at the edges of the integer and float types, and a few that are no numbers.
INTERESTING: list[object] = [
    0, 1, -1, 2, 3, 7, 8, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, 1023, 1025, 65535, 65536,
    2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, -2**63, -2**63 - 1,
    2**64 - 1, 2**64, 10**30, -10**30,
    0.0, -0.0, 0.5, -0.5, 1.5, 1e-45, 1e-320, 3.4e38, 3.5e38, 1e308, float("inf"), 65504.0, 65520.0,
    True, False, None, "text", b"bytes", 1j,
]
TYPE_NAMES = ["f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool", "int", "float"]
ANNOTATIONS = TYPE_NAMES + [
    "Slice[f32]", "Slice[i32]", "Slice[u8]", "DisjointSlice[f32]", "DisjointSlice[i64]", "MutSlice[f32]",
    "Tensor[f32, 2]", "MutTensor[f32, 2]", "DisjointTensor[f32, 2]", "Slice", "Slice[Slice[f32]]", "None",
    "ox.ThreadIndex", "list[int]", "T", "Constexpr[int]", "tuple[f32, f32]", "tuple[f32, Slice[f32]]",
    "ox.Slice[ox.f64]", "Ptr[f32]", "'f32'", "Slice[f32, 3]", "Tensor[f32, 9]", "Tensor[f32, 0]",
]
CALLEES = ["len", "abs", "min", "max", "range", "int", "float", "print", "f32", "i32", "u64", "bool",
           "ox.math.exp", "ox.math.sqrt", "ox.math.fma", "ox.math.pow", "ox.static_range",
           "thread.index_1d", "thread.index_2d", "block.sync", "warp.sum", "warp.shfl_down", "ox.atomic.add",
           "ox.atomic.cas", "ox.fence.block", "ox.unsafe", "ox.shared.array", "ox.local.array", "nope"]
INDICES = ["0", "-1", "1.5", "True", "0, 0", "0:1", "2**40", "i + 1", "i * 2", "len(out)", "len(x) - 1", "n", "u32(0)", "-2**63"]
EXPRESSIONS = ["1 << 70", "10 ** 400", "1 >> -1", "(-2**63) // -1", "1 // 0", "1.0 % 0.0", "2**64", "-2**63 - 1",
               "1e309", "0 * 1e308", "x[0]", "len(x)", "thread.index_1d()", "block.dim.x", "warp.lane()", "u32(-1)",
               "i8(300)", "f16(1e6)", "i64(1e30)", "(1, 2)", "not 3", "~2.5", "-True", "x if x else 0"]
BINOPS = [ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift, ast.BitAnd,
          ast.BitOr, ast.BitXor, ast.Pow, ast.MatMult]
CMPOPS = [ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn]
UNARYOPS = [ast.USub, ast.UAdd, ast.Invert, ast.Not]


@dataclass(frozen=True)
class Mutant:
    original: Path  # the source the mutant was made from
    index: int  # (seed, index) reproduces it
    text: str
    mutations: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    ok: bool  # compiled, or failed with a located CompileError
    kind: str  # "compiled", "located error", or the failure's class
    detail: str = ""
    seconds: float = 0.0  # the CPU time its compile took (what the budget is of)
    wall_seconds: float = 0.0  # the wall-clock time its compile took


@dataclass
class FuzzReport:
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def classes(self) -> dict[str, list[Outcome]]:
        out: dict[str, list[Outcome]] = {}
        for o in self.failures:
            out.setdefault(o.kind, []).append(o)
        return out

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for o in self.outcomes:
            counts[o.kind if o.ok else "FAILED"] = counts.get(o.kind if o.ok else "FAILED", 0) + 1
        lines = [f"{len(self.outcomes)} mutants in {self.seconds:.0f} s: "
                 + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))]
        if self.outcomes:
            slowest = max(self.outcomes, key=lambda o: o.seconds)
            lines.append(f"slowest compile: {slowest.seconds:.1f} CPU s ({slowest.wall_seconds:.1f} s wall) "
                         f"({slowest.mutant.original.relative_to(ROOT)} #{slowest.mutant.index}, {slowest.kind})")
        for kind, items in sorted(self.classes().items(), key=lambda kv: -len(kv[1])):
            first = items[0]
            lines.append(f"- {len(items)}× {kind}\n    first: {first.mutant.original.relative_to(ROOT)} "
                         f"#{first.mutant.index}: {'; '.join(first.mutant.mutations)}\n    "
                         + first.detail.strip().replace("\n", "\n    ")[-1500:])
        return "\n".join(lines)


def kernel_sources() -> list[Path]:
    """The examples and the test packages' modules that define kernels."""
    candidates = sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "tests" / "packages").rglob("*.py"))
    return [p for p in candidates if "kernel" in p.read_text(encoding="utf-8") and "def " in p.read_text(encoding="utf-8")]


def _source_root(path: Path) -> tuple[Path, Path]:
    """(root, tree): the directory module names start from, and the part of it to copy."""
    top = path.parent
    while (top / "__init__.py").is_file() and (top.parent / "__init__.py").is_file():
        top = top.parent
    if (top / "__init__.py").is_file():
        return top.parent, top
    return top, top


# ---- mutations ------------------------------------------------------------------------------


def _expr(text: str) -> ast.expr:
    node = ast.parse(text, mode="eval").body
    return node


def _functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)]


def _nodes(tree: ast.Module, kind: type | tuple[type, ...]) -> list[ast.AST]:
    """Nodes of ``kind`` inside the module's functions (signatures included) and in its
    module-level constant assignments."""
    out: list[ast.AST] = []
    for top in tree.body:
        if isinstance(top, (ast.FunctionDef, ast.Assign, ast.AnnAssign)):
            out += [n for n in ast.walk(top) if isinstance(n, kind)]
    return out


def _bodies(tree: ast.Module) -> list[list[ast.stmt]]:
    """Every statement list inside a function."""
    out: list[list[ast.stmt]] = []
    for fn in _functions(tree):
        for node in ast.walk(fn):
            for name in ("body", "orelse"):
                stmts = getattr(node, name, None)
                if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                    out.append(stmts)
    return out


def _replace_child(tree: ast.Module, old: ast.AST, new: ast.AST) -> bool:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return True
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is old:
                        value[k] = new
                        return True
    return False


def _line(node: ast.AST) -> int:
    return getattr(node, "lineno", 0)  # 0: a node an earlier mutation made


def _pick(rng: random.Random, items: list) -> object | None:  # type: ignore[type-arg]
    return rng.choice(items) if items else None


def m_binop(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, _nodes(tree, ast.BinOp))
    if not isinstance(node, ast.BinOp):
        return None
    old = type(node.op).__name__
    node.op = rng.choice(BINOPS)()
    return f"line {_line(node)}: {old} -> {type(node.op).__name__}"


def m_augop(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, _nodes(tree, ast.AugAssign))
    if not isinstance(node, ast.AugAssign):
        return None
    node.op = rng.choice(BINOPS)()
    return f"line {_line(node)}: augmented {type(node.op).__name__}"


def m_compare(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, _nodes(tree, ast.Compare))
    if not isinstance(node, ast.Compare):
        return None
    k = rng.randrange(len(node.ops))
    node.ops[k] = rng.choice(CMPOPS)()
    return f"line {_line(node)}: comparison -> {type(node.ops[k]).__name__}"


def m_boolop(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, _nodes(tree, ast.BoolOp))
    if not isinstance(node, ast.BoolOp):
        return None
    if rng.random() < 0.5 and len(node.values) > 1:
        del node.values[rng.randrange(len(node.values))]
        if len(node.values) == 1:
            _replace_child(tree, node, node.values[0])
        return f"line {_line(node)}: dropped a boolean operand"
    node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    return f"line {_line(node)}: and <-> or"


def m_unary(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, [n for n in _nodes(tree, ast.expr) if not isinstance(n, (ast.Starred, ast.Slice))
                       and not isinstance(getattr(n, "ctx", None), (ast.Store, ast.Del))])
    if not isinstance(node, ast.expr):
        return None
    op = rng.choice(UNARYOPS)()
    _replace_child(tree, node, ast.UnaryOp(op=op, operand=node))
    return f"line {_line(node)}: {type(op).__name__} applied"


def m_literal(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, [n for n in _nodes(tree, ast.Constant) if not isinstance(n.value, str) or rng.random() < 0.1])
    if not isinstance(node, ast.Constant):
        return None
    old = node.value
    node.value = rng.choice(INTERESTING)
    return f"line {_line(node)}: literal {old!r} -> {node.value!r}"


def m_expression(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, [n for n in _nodes(tree, ast.expr) if isinstance(getattr(n, "ctx", ast.Load()), ast.Load)
                       and not isinstance(n, (ast.Starred, ast.Slice))])
    if not isinstance(node, ast.expr):
        return None
    text = rng.choice(EXPRESSIONS)
    _replace_child(tree, node, _expr(text))
    return f"line {_line(node)}: expression -> {text}"


def m_delete_stmt(tree: ast.Module, rng: random.Random) -> str | None:
    body = _pick(rng, _bodies(tree))
    if not isinstance(body, list):
        return None
    k = rng.randrange(len(body))
    line = _line(body[k])
    del body[k]
    if not body:
        body.append(ast.Pass())
    return f"line {line}: statement deleted"


def m_duplicate_stmt(tree: ast.Module, rng: random.Random) -> str | None:
    body = _pick(rng, _bodies(tree))
    if not isinstance(body, list):
        return None
    k = rng.randrange(len(body))
    body.insert(rng.randrange(len(body) + 1), copy.deepcopy(body[k]))
    return f"line {_line(body[k])}: statement duplicated"


def m_swap_stmts(tree: ast.Module, rng: random.Random) -> str | None:
    bodies = [b for b in _bodies(tree) if len(b) > 1]
    body = _pick(rng, bodies)
    if not isinstance(body, list):
        return None
    k = rng.randrange(len(body) - 1)
    body[k], body[k + 1] = body[k + 1], body[k]
    return f"line {_line(body[k + 1])}: statements swapped"


def m_annotation(tree: ast.Module, rng: random.Random) -> str | None:
    slots: list[tuple[ast.AST, str]] = []
    for fn in _functions(tree):
        slots += [(a, "annotation") for a in fn.args.args] + [(fn, "returns")]
        slots += [(n, "annotation") for n in ast.walk(fn) if isinstance(n, ast.AnnAssign)]
    if not slots:
        return None
    owner, name = rng.choice(slots)
    text = rng.choice(ANNOTATIONS)
    setattr(owner, name, _expr(text))
    return f"line {_line(owner)}: annotation -> {text}"


def m_arguments(tree: ast.Module, rng: random.Random) -> str | None:
    calls = [c for c in _nodes(tree, ast.Call) if isinstance(c, ast.Call) and c.args]
    call = _pick(rng, calls)
    if not isinstance(call, ast.Call):
        return None
    choice = rng.random()
    if choice < 0.5 and len(call.args) > 1:
        i, j = rng.sample(range(len(call.args)), 2)
        call.args[i], call.args[j] = call.args[j], call.args[i]
        return f"line {_line(call)}: arguments {i} and {j} swapped"
    if choice < 0.75:
        del call.args[rng.randrange(len(call.args))]
        return f"line {_line(call)}: argument dropped"
    call.args.append(copy.deepcopy(rng.choice(call.args)))
    return f"line {_line(call)}: argument added"


def m_parameters(tree: ast.Module, rng: random.Random) -> str | None:
    fn = _pick(rng, [f for f in _functions(tree) if f.args.args])
    if not isinstance(fn, ast.FunctionDef):
        return None
    args = fn.args.args
    if rng.random() < 0.5 and len(args) > 1:
        i, j = rng.sample(range(len(args)), 2)
        args[i], args[j] = args[j], args[i]
        return f"line {_line(fn)}: parameters {i} and {j} swapped"
    del args[rng.randrange(len(args))]
    return f"line {_line(fn)}: parameter dropped"


def m_rename(tree: ast.Module, rng: random.Random) -> str | None:
    names = [n for n in _nodes(tree, ast.Name) if isinstance(n, ast.Name)]
    node = _pick(rng, names)
    if not isinstance(node, ast.Name):
        return None
    pool = sorted({n.id for n in names}) + ["len", "range", "print", "ox", "thread", "zz", "None", "i", "x", "out"]
    old = node.id
    node.id = rng.choice(pool)
    return f"line {_line(node)}: name {old} -> {node.id}"


def m_index(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, _nodes(tree, ast.Subscript))
    if not isinstance(node, ast.Subscript):
        return None
    text = rng.choice(INDICES)
    node.slice = _expr(f"x[{text}]").slice  # type: ignore[attr-defined]
    return f"line {_line(node)}: index -> {text}"


def m_convert(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, [n for n in _nodes(tree, ast.expr) if isinstance(getattr(n, "ctx", ast.Load()), ast.Load)
                       and not isinstance(n, (ast.Starred, ast.Slice))])
    if not isinstance(node, ast.expr):
        return None
    name = rng.choice(TYPE_NAMES)
    _replace_child(tree, node, ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[node], keywords=[]))
    return f"line {_line(node)}: wrapped in {name}()"


def m_callee(tree: ast.Module, rng: random.Random) -> str | None:
    call = _pick(rng, _nodes(tree, ast.Call))
    if not isinstance(call, ast.Call):
        return None
    name = rng.choice(CALLEES)
    call.func = _expr(name)
    return f"line {_line(call)}: callee -> {name}"


def m_branch(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, _nodes(tree, (ast.If, ast.While, ast.IfExp)))
    if node is None:
        return None
    if isinstance(node, ast.If) and rng.random() < 0.5:
        node.body, node.orelse = (node.orelse or [ast.Pass()]), node.body
        return f"line {_line(node)}: if/else swapped"
    test = node.test  # type: ignore[attr-defined]
    node.test = rng.choice([ast.UnaryOp(op=ast.Not(), operand=test), ast.Constant(True), ast.Constant(False)])  # type: ignore[attr-defined]
    return f"line {_line(node)}: condition changed"  # type: ignore[attr-defined]


def m_return(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, _nodes(tree, ast.Return))
    if not isinstance(node, ast.Return):
        return None
    choice = rng.random()
    if choice < 0.4:
        node.value = None
        return f"line {_line(node)}: return without a value"
    if choice < 0.7:
        _replace_child(tree, node, ast.Pass())
        return f"line {_line(node)}: return removed"
    node.value = _expr(rng.choice(["0", "1.5", "(1, 2)", "x", "None", "True", "2**70"]))
    return f"line {_line(node)}: return value changed"


def m_loop(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, _nodes(tree, ast.For))
    if not isinstance(node, ast.For):
        return None
    it = node.iter
    if isinstance(it, ast.Call) and it.args and rng.random() < 0.7:
        k = rng.randrange(len(it.args))
        text = rng.choice(["0", "-1", "1.5", "2**40", "len(x)", "-2**63", "10000"])
        it.args[k] = _expr(text)
        return f"line {_line(node)}: range argument {k} -> {text}"
    node.target = _expr(rng.choice(["(a, b)", "x[0]", "i"]))
    return f"line {_line(node)}: loop target changed"


def m_decorator(tree: ast.Module, rng: random.Random) -> str | None:
    fn = _pick(rng, _functions(tree))
    if not isinstance(fn, ast.FunctionDef):
        return None
    if fn.decorator_list and rng.random() < 0.5:
        fn.decorator_list = []
        return f"line {_line(fn)}: decorators removed"
    text = rng.choice(["ox.kernel", "ox.kernel(launch_bounds=0)", "ox.kernel(bounds_check=2)", "ox.device",
                       'ox.device(export="k")', 'ox.extern("sin")', "staticmethod", "ox.kernel(constexprs={})"])
    fn.decorator_list = [_expr(text)]
    return f"line {_line(fn)}: decorator -> @{text}"


def m_module_constant(tree: ast.Module, rng: random.Random) -> str | None:
    assigns = [n for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)]
    node = _pick(rng, assigns)
    if not isinstance(node, ast.Assign):
        return None
    text = rng.choice(["10 ** 10 ** 10", "1 << 100", "2 ** 64", "-1", "0", "1.5", "'s'", "1 << 10 ** 12", "(1, 2)"])
    node.value = _expr(text)
    return f"line {_line(node)}: module constant -> {text}"


STATEMENTS = [
    "y = x[0] >> 40", "block.sync()", "warp.sync()", "assert i < len(x), 'msg'", "assert False", "return",
    "return 1", "pass", "break", "continue", "while True:\n    pass", "for j in range(3):\n    break",
    "with ox.unsafe():\n    out[0] = out[0]", "out[0] = 1", "x[0] = x[0]", "a = ox.shared.array(64, f32)",
    "a = ox.local.array((2, 2), i32)", "ox.atomic.add(out, 0, 1)", "ox.atomic.cas(out, 0, 1, 2)",
    "q = ox.shared.dynamic(f32)", "z: f32 = 1", "z: i8 = 300", "del x", "global g", "import math",
    "def inner() -> None:\n    pass", "lambda: 0", "[v for v in range(3)]", "print(1)", "x",
    "t = (1, 2)\nu, v = t", "u, v = 1", "k = warp.shfl_down(i, 1)", "k = warp.sum(1.5)",
    "if thread.idx.x == 0:\n    block.sync()", "n2 = len(x) // 0", "n3 = i32(1e10) >> i32(33)",
]
ATTRIBUTES = ["x", "y", "z", "w", "dim", "idx", "lane", "index_1d", "sum", "exp", "add", "array", "shape", "stride", "T"]


def m_insert_stmt(tree: ast.Module, rng: random.Random) -> str | None:
    body = _pick(rng, _bodies(tree))
    if not isinstance(body, list):
        return None
    text = rng.choice(STATEMENTS)
    k = rng.randrange(len(body) + 1)
    body[k:k] = ast.parse(text).body
    return f"line {_line(body[min(k, len(body) - 1)])}: inserted {text!r}"


def m_attribute(tree: ast.Module, rng: random.Random) -> str | None:
    node = _pick(rng, _nodes(tree, ast.Attribute))
    if not isinstance(node, ast.Attribute):
        return None
    old = node.attr
    node.attr = rng.choice(ATTRIBUTES)
    return f"line {_line(node)}: attribute {old} -> {node.attr}"


def m_keyword(tree: ast.Module, rng: random.Random) -> str | None:
    call = _pick(rng, _nodes(tree, ast.Call))
    if not isinstance(call, ast.Call):
        return None
    name = rng.choice(["scope", "bounds_check", "launch_bounds", "max_registers", "constexprs", "sources", "export", "x"])
    value = rng.choice(["'cta'", "'gpu'", "'sys'", "'bad'", "True", "0", "2000", "{}", "['a.cu']", "None"])
    call.keywords.append(ast.keyword(arg=name, value=_expr(value)))
    return f"line {_line(call)}: keyword {name}={value}"


MUTATIONS: list[Callable[[ast.Module, random.Random], str | None]] = [
    m_binop, m_augop, m_compare, m_boolop, m_unary, m_literal, m_literal, m_expression, m_delete_stmt,
    m_duplicate_stmt, m_swap_stmts, m_annotation, m_annotation, m_arguments, m_parameters, m_rename,
    m_index, m_convert, m_callee, m_branch, m_return, m_loop, m_decorator, m_module_constant,
    m_insert_stmt, m_insert_stmt, m_attribute, m_keyword,
]


def make_mutant(original: Path, text: str, seed: int, index: int) -> Mutant:
    """One to three mutations of ``text``, chosen by ``(seed, index)`` only."""
    rng = random.Random(f"{seed}:{index}")
    tree = ast.parse(text)
    done: list[str] = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        for _attempt in range(10):
            what = rng.choice(MUTATIONS)(tree, rng)
            if what is not None:
                done.append(f"{what}".replace("m_", ""))
                break
    ast.fix_missing_locations(tree)
    try:
        mutated = ast.unparse(tree)
    except Exception as exc:  # an AST that Python itself cannot print: keep the original
        mutated, done = text, [f"unprintable mutation ({type(exc).__name__})"]
    return Mutant(original, index, mutated + "\n", tuple(done))


# ---- compiling ------------------------------------------------------------------------------


class _Timeout(BaseException):
    """The budget's alarm: a BaseException, so that no ``except Exception`` of the compiler (which
    wraps what it catches as an internal compiler error) takes it for a failure of its own."""


class _Stalled(BaseException):
    """The wall-clock backstop's alarm: the compile used little CPU for a long time (it waits
    on something), which the CPU budget alone would never stop."""


def _cpu_alarm(signum: int, frame: FrameType | None) -> None:
    raise _Timeout()


def _wall_alarm(signum: int, frame: FrameType | None) -> None:
    raise _Stalled()


def _cpu_seconds() -> float:
    """CPU time (user and system) of this process, every thread, and of its waited-for children."""
    t = os.times()  # its children's; time.process_time() for this process, at a finer resolution
    return time.process_time() + t.children_user + t.children_system


def _located(exc: BaseException, path: Path) -> bool:
    """A CompileError at a line of a source, or a LinkError that names a line of the mutant
    (an @extern no input defines, a stub that its C++ definition does not match, NVRTC's
    ``file(line)`` through the boundary header's #line); not an internal compiler error."""
    import re

    from oxide.errors import CompileError, LinkError

    if "internal compiler error" in str(exc):
        return False
    if isinstance(exc, CompileError):
        return exc.location is not None and exc.location.line > 0
    return isinstance(exc, LinkError) and re.search(re.escape(str(path)) + r"(?::\d+\b|\(\d+\))", str(exc)) is not None


DEFAULT_BUDGET_S = 60
WALL_BACKSTOP_FACTOR = 30  # a compile may take this many times its CPU budget in wall-clock time


def compile_mutant(mutant: Mutant, workdir: Path, timeout_s: int = DEFAULT_BUDGET_S) -> Outcome:
    """Compiles ``mutant`` in a copy of its source tree under ``workdir`` as the build does:
    PTX for sm_80 and sm_90 with the options of ``_options``, then cubins (nvJitLink runs
    ptxas). The budget is CPU time, the compile's own (user and system, every thread, and any
    child process it waited for), not wall-clock time, so a loaded or niced machine does not
    make a compile over budget. A compile that uses more than ``timeout_s`` CPU seconds is a
    failure: the profiling timer (ITIMER_PROF) stops one in Python code; one that overran in
    native code is judged by its CPU time when it ends. One that takes more than
    WALL_BACKSTOP_FACTOR times the budget in wall-clock time (it waits on something, using no
    CPU) is stopped too, as ``stalled``."""
    outcome, seconds = _compile_timed(mutant, workdir, timeout_s)
    if outcome.ok and seconds > timeout_s:
        return Outcome(mutant, False, f"over budget ({timeout_s} s)",
                       f"{outcome.kind} after {seconds:.1f} CPU s\n--- mutant ---\n{mutant.text}", seconds,
                       outcome.wall_seconds)
    return outcome


def _compile_timed(mutant: Mutant, workdir: Path, timeout_s: int) -> tuple[Outcome, float]:
    """The outcome and the compile's CPU seconds."""
    from oxide.errors import ToolchainError
    from oxide_build.compile import compile_module
    from oxide_build.scan import module_name_for

    root, tree = _source_root(mutant.original)
    copy_root = workdir / f"tree_{abs(hash(str(tree))) % 10**8}"
    copy_tree = copy_root / tree.relative_to(root) if tree != root else copy_root
    if not copy_tree.exists():
        shutil.copytree(tree, copy_tree, ignore=shutil.ignore_patterns("__pycache__", "build", "_oxide"))
    path = copy_tree / mutant.original.relative_to(tree)
    saved = path.read_bytes()
    path.write_text(mutant.text, encoding="utf-8")
    use_timers = hasattr(signal, "setitimer") and hasattr(signal, "SIGPROF")
    if use_timers:
        previous_prof = signal.signal(signal.SIGPROF, _cpu_alarm)
        previous_alrm = signal.signal(signal.SIGALRM, _wall_alarm)
        signal.setitimer(signal.ITIMER_PROF, timeout_s)
        signal.setitimer(signal.ITIMER_REAL, timeout_s * WALL_BACKSTOP_FACTOR)
    began, began_cpu = time.monotonic(), _cpu_seconds()

    def timed(ok: bool, kind: str, detail: str = "") -> tuple[Outcome, float]:
        cpu = _cpu_seconds() - began_cpu
        return Outcome(mutant, ok, kind, detail, cpu, time.monotonic() - began), cpu

    try:
        try:
            compile_module(path, module_name_for(path, copy_root), _options(mutant.index), root=copy_root)
        finally:
            if use_timers:  # no alarm after this point, in the handlers below included
                signal.setitimer(signal.ITIMER_PROF, 0)
                signal.setitimer(signal.ITIMER_REAL, 0)
        return timed(True, "compiled")
    except _Timeout:
        return timed(False, f"over budget ({timeout_s} s)",
                     f"stopped after {timeout_s} CPU s\n" + traceback.format_exc() + "\n--- mutant ---\n" + mutant.text)
    except _Stalled:
        wall = timeout_s * WALL_BACKSTOP_FACTOR
        return timed(False, f"stalled ({wall} s wall-clock)",
                     f"stopped after {wall} s wall-clock\n" + traceback.format_exc() + "\n--- mutant ---\n" + mutant.text)
    except ToolchainError:
        raise
    except Exception as exc:
        if _located(exc, path):
            return timed(True, "located error")
        inner = exc.__cause__ or exc.__context__  # what an "internal compiler error" wraps
        detail = "".join(traceback.format_exception(inner)) if inner is not None else ""
        return timed(False, _failure_class(exc), detail + traceback.format_exc() + "\n--- mutant ---\n" + mutant.text)
    finally:
        if use_timers:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGPROF, previous_prof)
            signal.signal(signal.SIGALRM, previous_alrm)
        path.write_bytes(saved)


def _options(index: int) -> CompileOptions:
    """The build options of mutant ``index``: every fourth goes through libNVVM (its own dialect
    of LLVM IR), and line tables, unchecked indexing and fast math come in every few."""
    from oxide_build.compile import CompileOptions

    return CompileOptions(archs=("sm_80", "sm_90"), backend="nvvm" if index % 4 == 3 else "nvptx",
                          lineinfo=index % 5 == 1, bounds_check=index % 7 != 2, fast_math=index % 6 == 4)


def _failure_class(exc: BaseException) -> str:
    """What groups failures of one cause: the exception type, and where in our code it came from
    (or, for errors of the tools, the first line of the message without numbers)."""
    import re

    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    while (exc.__cause__ or exc.__context__) is not None:  # an internal compiler error: group by what it wraps
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/oxide" in f.filename and "fuzz_kernels" not in f.filename]
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].name}" if frames else ""
    if "internal compiler error: " in first:  # the frontend's wrapper: group by what it wrapped
        first = "internal compiler error: " + first.split("internal compiler error: ", 1)[1]
    first = re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", first))[:120]
    return f"{type(exc).__name__}{where}: {first}"


def usable_sources(workdir: Path, cache: Path | None = None) -> list[Path]:
    """The kernel sources whose unmutated text the fuzzer's options handle (compiled, or a
    located error as in tests/packages/compile_error): a fixture that needs its project's
    configuration (include directories for a .cu, say) cannot be judged by its mutants.
    With ``cache``, the list is read from that file (paths relative to the repository, one a
    line) where it exists, else found and written there: finding it compiles every source."""
    if cache is not None and cache.is_file():
        return [ROOT / line for line in cache.read_text(encoding="utf-8").splitlines() if line]
    out = []
    for path in kernel_sources():
        outcome = compile_mutant(Mutant(path, 0, path.read_text(encoding="utf-8"), ()), workdir)
        if outcome.ok:
            out.append(path)
    if cache is not None:
        cache.write_text("".join(f"{p.relative_to(ROOT)}\n" for p in out), encoding="utf-8")
    return out


def iter_mutants(count: int, seed: int, start: int = 0, sources: list[Path] | None = None) -> Iterator[Mutant]:
    sources = kernel_sources() if sources is None else sources
    texts = {p: p.read_text(encoding="utf-8") for p in sources}
    for index in range(start, start + count):
        original = sources[random.Random(f"{seed}:{index}:source").randrange(len(sources))]
        yield make_mutant(original, texts[original], seed, index)


def _tsv_line(o: Outcome) -> str:
    cells = [str(o.mutant.index), str(o.ok), f"{o.seconds:.2f}", f"{o.wall_seconds:.2f}", o.kind,
             str(o.mutant.original.relative_to(ROOT)), "; ".join(o.mutant.mutations)]
    return "\t".join(c.replace("\t", " ").replace("\n", " ") for c in cells) + "\n"


def _tsv_indices(tsv: Path) -> set[int]:
    """The mutant indices a results file holds (complete lines only)."""
    if not tsv.is_file():
        return set()
    text = tsv.read_text(encoding="utf-8")
    return {int(line.split("\t", 1)[0]) for line in text.split("\n")[: -1] if line.split("\t", 1)[0].isdigit()}


def run_fuzz(count: int, seed: int, workdir: Path, start: int = 0, out: Path | None = None,
             progress: Callable[[int, Outcome], None] | None = None,
             budget_s: int = DEFAULT_BUDGET_S, tsv: Path | None = None,
             sources_cache: Path | None = None) -> FuzzReport:
    """Compiles mutants ``start`` .. ``start + count - 1`` of ``seed``; with ``tsv``, appends a
    line per mutant there and skips the indices it already holds (their outcomes are not in the
    report)."""
    report = FuzzReport()
    began = time.monotonic()
    done = _tsv_indices(tsv) if tsv is not None else set()
    if done >= set(range(start, start + count)):
        return report
    for n, mutant in enumerate(iter_mutants(count, seed, start, usable_sources(workdir, sources_cache))):
        if mutant.index in done:
            continue
        outcome = compile_mutant(mutant, workdir, budget_s)
        report.outcomes.append(outcome)
        if tsv is not None:
            with open(tsv, "a", encoding="utf-8") as log:
                log.write(_tsv_line(outcome))
        if not outcome.ok and out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"mutant_{seed}_{mutant.index}.py").write_text(
                f"# from {mutant.original.relative_to(ROOT)}: {'; '.join(mutant.mutations)}\n"
                f"# {outcome.kind}\n" + mutant.text)
            (out / f"mutant_{seed}_{mutant.index}.txt").write_text(outcome.detail)
        if progress is not None:
            progress(n, outcome)
    report.seconds = time.monotonic() - began
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="index of the first mutant")
    parser.add_argument("--out", type=Path, help="write failing mutants and their tracebacks here")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET_S, metavar="SECONDS",
                        help="the most CPU seconds one mutant's compile may take (its own CPU time, not wall-clock "
                             "time); a slower one is a failure "
                             f"(default {DEFAULT_BUDGET_S})")
    parser.add_argument("--tsv", type=Path, metavar="FILE",
                        help="append one line per mutant to FILE and skip the indices it already holds (resumes a run)")
    parser.add_argument("--sources", type=Path, metavar="FILE",
                        help="the usable sources, read from FILE where it exists, else found (every source "
                             "compiled once) and written there; chunks of one run share it")
    args = parser.parse_args(argv)
    if args.budget < 1:
        parser.error(f"--budget must be at least 1 second, got {args.budget}")
    import tempfile

    try:  # a mutant that makes the compiler allocate without bound fails with MemoryError, not the OOM killer
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
    except (ImportError, ValueError, OSError):
        pass

    sys.path.insert(0, str(ROOT))

    def progress(n: int, outcome: Outcome) -> None:
        if not outcome.ok:
            print(f"#{outcome.mutant.index} FAILED {outcome.kind} ({'; '.join(outcome.mutant.mutations)})", flush=True)
        elif (n + 1) % 100 == 0:
            print(f"{n + 1} done", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        report = run_fuzz(args.count, args.seed, Path(tmp), args.start, args.out, progress, args.budget, args.tsv,
                          args.sources)
    print(report.summary())
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
