"""Integer and float semantics (docs/language.md): no operation of safe code is undefined.

Shifts by any amount, integer division by zero or of MIN by -1, and float → int conversions
of NaN, ±inf or out-of-range values have one defined result each. The lowering of these
operations is run on the host (llvmlite's JIT) against the Python references of
tests/packages/semantics/reference.py, which tests/test_semantics_gpu.py also uses on the GPU;
the compiled PTX keeps the stores LLVM deleted when the operation was poison; constant
operands out of range and functions that can end without a value are located compile errors."""
from __future__ import annotations

import re

import ctypes
import sys
import types
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from oxide import CompileError
from oxide.lang.types import SCALAR_TYPES
from oxide_build.compile import CompileOptions, compile_module

sys.path.insert(0, str(Path(__file__).parent / "packages" / "semantics"))
from reference import (  # noqa: E402
    division_reference, float_to_int_reference, shift_reference, special_floats,
)

llvm = pytest.importorskip("llvmlite.binding")
from llvmlite import ir as ll  # noqa: E402

from oxide_build.lower.llvm import FunctionLowering  # noqa: E402

rng = np.random.default_rng()
HEADER = "import oxide as ox\nfrom oxide import Slice, DisjointSlice, f32, f64, i8, i32, i64, u8, u32, u64, thread\n"

CTYPES = {
    "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
    "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
    "f32": ctypes.c_float, "f64": ctypes.c_double,
}
LL_TYPES = {"f32": ll.FloatType(), "f64": ll.DoubleType()}


def _ll(name: str) -> ll.Type:
    return LL_TYPES.get(name) or ll.IntType(SCALAR_TYPES[name].bits)


_engines: list[Any] = []


def host_function(ret: str, args: list[str], body: Callable[[Any, list[Any]], Any]) -> Callable[..., Any]:
    """``body(lowering, params)`` built into a host function ``ret f(args)`` and JIT-compiled:
    the lowering's own code for one operation, run on the CPU."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = ll.Module(name="semantics")
    module.triple = llvm.get_process_triple()
    fn = ll.Function(module, ll.FunctionType(_ll(ret), [_ll(a) for a in args]), "f")
    builder = ll.IRBuilder(fn.append_basic_block("entry"))
    lowering = types.SimpleNamespace(b=builder)
    builder.ret(body(lowering, list(fn.args)))
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    target = llvm.Target.from_default_triple().create_target_machine(opt=2)
    engine = llvm.create_mcjit_compiler(parsed, target)
    engine.finalize_object()
    _engines.append(engine)
    proto = ctypes.CFUNCTYPE(CTYPES[ret], *(CTYPES[a] for a in args))
    return proto(engine.get_function_address("f"))  # type: ignore[no-any-return]


def run(fn: Callable[..., Any], dtype: type, *columns: np.ndarray) -> np.ndarray:
    return np.array([fn(*row) for row in zip(*(c.tolist() for c in columns))], dtype=dtype)


def shift_inputs(name: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    dtype = np.dtype(name.replace("i", "int").replace("u", "uint")).type
    info = np.iinfo(dtype)
    bits = info.bits
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    amounts = [a for a in [*range(-3, 2 * bits + 3), int(info.min), int(info.max)] if info.min <= a <= info.max]
    amount = np.array(amounts, dtype=dtype)[rng.integers(0, len(amounts), n)]
    return x, amount


@pytest.mark.parametrize("name", ["i8", "i32", "i64", "u8", "u32", "u64"])
@pytest.mark.parametrize("op", ["<<", ">>"])
def test_shift_by_any_amount_is_pythons_shift(name: str, op: str) -> None:
    x, amount = shift_inputs(name, 3000)
    signed = name.startswith("i")
    fn = host_function(name, [name, name], lambda lo, a: FunctionLowering.shift(lo, op, a[0], a[1], signed))
    np.testing.assert_array_equal(run(fn, x.dtype.type, x, amount), shift_reference(op, x, amount))


@pytest.mark.parametrize("name", ["i8", "i32", "i64", "u8", "u32", "u64"])
@pytest.mark.parametrize("op", ["//", "%"])
def test_integer_division_is_defined_for_zero_and_min_by_minus_one(name: str, op: str) -> None:
    dtype = np.dtype(name.replace("i", "int").replace("u", "uint")).type
    info = np.iinfo(dtype)
    n = 3000
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    x[:50] = info.min
    y = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True) // rng.choice([1, 1 << (info.bits // 2)], n).astype(dtype)
    y[rng.random(n) < 0.2] = 0
    if info.min < 0:
        y[rng.random(n) < 0.1] = -1
    signed = info.min < 0
    fn = host_function(name, [name, name], lambda lo, a: FunctionLowering.int_division(lo, op, a[0], a[1], signed))
    np.testing.assert_array_equal(run(fn, dtype, x, y), division_reference(op, x, y))


@pytest.mark.parametrize("src", ["f32", "f64"])
@pytest.mark.parametrize("dst", ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"])
def test_float_to_int_saturates_and_maps_nan_to_zero(src: str, dst: str) -> None:
    x = special_floats(np.float32 if src == "f32" else np.float64, 2000, rng)
    dtype = np.dtype(dst.replace("i", "int").replace("u", "uint")).type
    fn = host_function(dst, [src], lambda lo, a: FunctionLowering.float_to_int(lo, a[0], SCALAR_TYPES[src], SCALAR_TYPES[dst]))
    np.testing.assert_array_equal(run(fn, dtype, x), float_to_int_reference(x, dtype))


# ---- compiled kernels ----------------------------------------------------------------------------


def compile_source(tmp_path: Path, body: str, emit_llvm: bool = False) -> Any:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + body)
    return compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False))


def compile_error(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as info:
        compile_source(tmp_path, body)
    return str(info.value)


def test_run_time_shift_keeps_its_store(tmp_path: Path) -> None:
    """A shift by 40 was poison: LLVM deleted the store of ``out[i]``."""
    compiled = compile_source(tmp_path, """
@ox.kernel
def k(x: Slice[u32], out: DisjointSlice[u32], s: u32) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = x[i] >> s
""")
    ptx = compiled.ptx["sm_90"]
    assert "shr.u32" in ptx and "st.global.b32" in ptx


@pytest.mark.parametrize("ty", ["i64", "u64"])
def test_64_bit_shift_amount_is_clamped_before_ptx_truncates_it(tmp_path: Path, ty: str) -> None:
    """PTX's 64-bit shifts take a u32 amount: unclamped, 2**32 or -2**63 shifted by 0 on the
    H200 (LLVM folds the range guard into the shift). The amount is clamped to 64 first."""
    compiled = compile_source(tmp_path, f"""
@ox.kernel
def k(x: Slice[{ty}], s: Slice[{ty}], out: DisjointSlice[{ty}]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x) and i < len(s):
        out[i] = x[i] << s[i]
""")
    ptx = compiled.ptx["sm_90"]
    clamp = re.search(r"min\.u64\s+(%rd\d+), %rd\d+, 64;", ptx)
    assert clamp, ptx
    truncated = re.search(rf"cvt\.u32\.u64\s+(%r\d+), {re.escape(clamp.group(1))};", ptx)
    assert truncated and re.search(rf"shl\.b64\s+%rd\d+, %rd\d+, {re.escape(truncated.group(1))};", ptx), ptx


def test_float_to_int_conversion_handles_nan_in_ptx(tmp_path: Path) -> None:
    compiled = compile_source(tmp_path, """
@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[i32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = i32(x[i])
""")
    # PTX's cvt.rzi saturates, but does not give 0 for NaN everywhere: on an H100,
    # cvt.rzi.s64.f32 and cvt.rzi.s32.f64 of NaN are the type's minimum. So the NaN test stays.
    ptx = compiled.ptx["sm_90"]
    assert "fptosi" in compiled.llvm_ir and "fcmp uno" in compiled.llvm_ir
    assert "cvt.rzi.s32.f32" in ptx and "setp.nan.f32" in ptx and "st.global.b32" in ptx
    assert "2147483647" in ptx and "-2147483648" in ptx


def test_division_by_a_run_time_divisor_is_guarded(tmp_path: Path) -> None:
    compiled = compile_source(tmp_path, """
@ox.kernel
def k(x: Slice[i32], y: Slice[i32], out: DisjointSlice[i32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x) and i < len(y):
        out[i] = x[i] // y[i]
""")
    assert "icmp eq i32" in compiled.llvm_ir and "st.global.b32" in compiled.ptx["sm_90"]


def test_constant_divisor_needs_no_guard(tmp_path: Path) -> None:
    compiled = compile_source(tmp_path, """
@ox.kernel
def k(x: Slice[i32], out: DisjointSlice[i32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = x[i] // 32 + x[i] % 32 + (x[i] >> 3)
""")
    assert "icmp eq i32" not in compiled.llvm_ir  # no divisor or amount guard


@pytest.mark.parametrize("expr, message", [
    ("x[i] >> 40", "kern.py:7:14: error: shift by 40: u32 shifts by 0 to 31"),
    ("x[i] << 32", "kern.py:7:14: error: shift by 32: u32 shifts by 0 to 31"),
    ("x[i] + (1 << 70)", "kern.py:7:22: error: shift by 70 in a constant expression: the amount must be 0 to 64"),
    ("x[i] + (8 >> -1)", "kern.py:7:22: error: shift by -1 in a constant expression: the amount must be 0 to 64"),
    ("x[i] // 0", "kern.py:7:14: error: integer division by the constant 0"),
    ("x[i] % u32(0)", "kern.py:7:14: error: integer modulo by the constant 0"),
    ("x[i] + (1 << 64) * 2", "kern.py:7:22: error: the constant expression's value 18446744073709551616 does not fit in 64 bits"),
])
def test_constant_out_of_range_is_a_located_error(tmp_path: Path, expr: str, message: str) -> None:
    text = compile_error(tmp_path, f"""
@ox.kernel
def k(x: Slice[u32], out: DisjointSlice[u32]) -> None:
    i = thread.index_1d()
    out[i] = {expr}
""")
    assert message in text, text


def test_unannotated_literal_past_i64_is_a_located_error(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
@ox.kernel
def k(out: DisjointSlice[u64]) -> None:
    i = thread.index_1d()
    y = 18446744073709551615
    y += 1
    out[i] = u64(y)
""")
    assert "kern.py:7:9: error: the literal 18446744073709551615 does not fit in i64" in text, text


def test_function_that_can_end_without_a_value_is_a_located_error(tmp_path: Path) -> None:
    """It compiled to ``unreachable``: LLVM was free to assume x > 0."""
    text = compile_error(tmp_path, """
def f(x: i64) -> i64:
    if x > 0:
        return 1

@ox.kernel
def k(x: Slice[i64], out: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = f(x[i])
""")
    assert "kern.py:5:5: error: not every path of f() returns a value" in text, text


@pytest.mark.parametrize("body", [
    "    if x > 0:\n        return 1\n    else:\n        return 2\n",
    "    while True:\n        if x > 0:\n            return 1\n        x += 1\n",
    "    if x > 0:\n        return 1\n    elif x < 0:\n        return -1\n    return 0\n",
])
def test_functions_that_return_on_every_path_compile(tmp_path: Path, body: str) -> None:
    compiled = compile_source(tmp_path, f"""
def f(x: i64) -> i64:
{body}
@ox.kernel
def k(x: Slice[i64], out: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = f(x[i])
""")
    assert "st.global.b64" in compiled.ptx["sm_90"]


def test_while_true_with_a_break_can_end_without_a_value(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
def f(x: i64) -> i64:
    while True:
        if x > 0:
            break
        x += 1

@ox.kernel
def k(x: Slice[i64], out: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = f(x[i])
""")
    assert "not every path of f() returns a value" in text


def test_libnvvm_accepts_the_guarded_operations(tmp_path: Path) -> None:
    """The guards are plain compares and selects, which the libNVVM backend's older LLVM
    dialect takes too (it has no llvm.fpto*i.sat)."""
    source = Path(__file__).parent / "packages" / "semantics" / "semk.py"
    compiled = compile_module(source, "semk", CompileOptions(archs=("sm_90",), backend="nvvm"))
    assert compiled.cubins["sm_90"] and "cvt.rzi.s32.f32" in compiled.ptx["sm_90"]
