"""Generics: ``T(x)`` conversions, compile-time type tests (``if T is f64:``) that keep one
branch per instance, and the accumulate type ``ox.acc_type(T)`` (docs/language.md, "Generics")."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import build_ir
from oxide_build.ir.printer import print_program

HEADER = ("import oxide as ox\n"
          "from oxide import Slice, DisjointSlice, MutSlice, Tensor, DisjointTensor, "
          "f16, bf16, f32, f64, i32, i64, u32, thread, block, grid\n")


def source(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return src


def instances(tmp_path: Path, body: str) -> dict[str, str]:
    """The printed IR of each kernel instance, by symbol."""
    _, frontend = build_ir(source(tmp_path, body), "kern")
    text = print_program(frontend.program)
    out: dict[str, str] = {}
    for chunk in text.split("\n\n"):
        head = chunk.strip().splitlines()[0] if chunk.strip() else ""
        if head.startswith("kernel "):
            out[head.split()[1].split("(")[0]] = chunk
    return out


def compile_error(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as info:
        build_ir(source(tmp_path, body), "kern")
    return str(info.value)


def test_t_of_x_converts_to_each_instance_type(tmp_path: Path) -> None:
    ir = instances(tmp_path, """
    T = ox.TypeVar("T", f16, f32, f64)

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = T(x[i]) * T(4.0)
    """)
    # each instance type, and each one's fast instance (passes/launch_instances.py: len(x) >= len(out))
    assert set(ir) == {"k_f16", "k_f32", "k_f64", "k_f16__fast", "k_f32__fast", "k_f64__fast"}
    assert "out[i] = (f16(x[i]" in ir["k_f16"] and "4.0:f16" in ir["k_f16"]
    assert "out[i] = (x[i]" in ir["k_f32"] and "4.0:f32" in ir["k_f32"]
    assert "out[i] = (f64(x[i]" in ir["k_f64"] and "4.0:f64" in ir["k_f64"]


def test_an_integer_typevar_converts_literals_and_floats(tmp_path: Path) -> None:
    ir = instances(tmp_path, """
    T = ox.TypeVar("T", i32, f32)

    @ox.kernel
    def k(x: Slice[f64], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = T(x[i]) + T(3)
    """)
    assert "i32(x[i]" in ir["k_i32"] and "3:i32" in ir["k_i32"]
    assert "f32(x[i]" in ir["k_f32"] and "3.0:f32" in ir["k_f32"]


def test_a_type_test_keeps_one_branch_and_never_checks_the_other(tmp_path: Path) -> None:
    # `x[i] >> 1` does not type-check for f32 and `ox.math.exp` does not for i32: each instance
    # translates only its own branch
    ir = instances(tmp_path, """
    T = ox.TypeVar("T", i32, f32, f64)

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            if T is i32:
                out[i] = x[i] >> 1
            elif T is f64:
                out[i] = x[i] * 0.25
            else:
                out[i] = ox.math.exp(x[i])
    """)
    assert ">> 1:i32" in ir["k_i32"] and "exp" not in ir["k_i32"] and "0.25" not in ir["k_i32"]
    assert "0.25:f64" in ir["k_f64"] and ">>" not in ir["k_f64"] and "exp" not in ir["k_f64"]
    assert "math.exp" in ir["k_f32"] and ">>" not in ir["k_f32"] and "0.25" not in ir["k_f32"]


@pytest.mark.parametrize("test, chosen", [
    ("T is f64", {"f64"}),
    ("T is not f64", {"f16", "bf16", "f32"}),
    ("T == f32", {"f32"}),
    ("T != ox.f32", {"f16", "bf16", "f64"}),
    ("T in (f16, bf16)", {"f16", "bf16"}),
    ("T not in [f16, bf16]", {"f32", "f64"}),
    ("not T is f16", {"bf16", "f32", "f64"}),
    ("T is f16 or T is f64", {"f16", "f64"}),
    ("T in (f16, bf16, f32) and not T is f32", {"f16", "bf16"}),
    ("ox.acc_type(T) is f32", {"f16", "bf16", "f32"}),
])
def test_type_tests(tmp_path: Path, test: str, chosen: set[str]) -> None:
    ir = instances(tmp_path, f"""
    T = ox.TypeVar("T", f16, bf16, f32, f64)

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            if {test}:
                out[i] = x[i] + T(7.0)
            else:
                out[i] = x[i] + T(9.0)
    """)
    for name in ("f16", "bf16", "f32", "f64"):
        body = ir[f"k_{name}"]
        want, other = ("7.0", "9.0") if name in chosen else ("9.0", "7.0")
        assert f"{want}:{name}" in body and other not in body, (name, body)
        # the run-time `if i < len(out)` only (in each copy, where bounds-elimination versioned the
        # kernel on len(x) >= len(out)): the type test leaves no branch
        branches = [line.strip() for line in body.splitlines() if line.strip().startswith("if (")]
        assert branches and all(b == "if (i64(i) >= len(out)):" or b.endswith("; launch-versioned")
                                for b in branches), (name, body)


def test_a_type_test_in_a_conditional_expression_and_in_a_device_function(tmp_path: Path) -> None:
    ir = instances(tmp_path, """
    T = ox.TypeVar("T", f32, f64)

    def eps(x: T) -> T:
        if T is f64:
            return T(1e-12)
        return T(1e-6)

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = x[i] * (T(2.0) if T is f64 else T(3.0)) + eps(x[i])
    """)
    assert "2.0:f64" in ir["k_f64"] and "3.0" not in ir["k_f64"]
    assert "3.0:f32" in ir["k_f32"] and "2.0" not in ir["k_f32"]
    _, frontend = build_ir(tmp_path / "kern.py", "kern")
    text = print_program(frontend.program)
    assert "return 1e-12:f64" in text and "return 1e-06:f32" in text


def test_locals_assigned_in_the_chosen_branch_stay_defined_after_it(tmp_path: Path) -> None:
    ir = instances(tmp_path, """
    T = ox.TypeVar("T", f16, f32)

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i >= len(out):
            return
        if T is f16:
            scale = 0.5
        else:
            scale = 2.0
        out[i] = T(f32(x[i]) * scale)
    """)
    assert "scale" in ir["k_f16"] and "0.5" in ir["k_f16"] and "2.0" not in ir["k_f16"]


def test_acc_type_defaults_and_the_typevars_acc_option(tmp_path: Path) -> None:
    ir = instances(tmp_path, """
    T = ox.TypeVar("T", f16, bf16, f32, f64)
    U = ox.TypeVar("U", f16, f32, acc={f32: f64})

    @ox.kernel
    def k(x: Slice[T], y: Slice[U], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            acc: ox.acc_type(T) = 0.0
            acc2: ox.acc_type(U) = 0.0
            acc += x[i]
            acc2 += ox.acc_type(U)(y[i])
            out[i] = T(acc + ox.acc_type(T)(acc2))
    """)
    expect_t = {"f16": "f32", "bf16": "f32", "f32": "f32", "f64": "f64"}
    expect_u = {"f16": "f32", "f32": "f64"}
    for t, at in expect_t.items():
        for u, au in expect_u.items():
            body = ir[f"k_{t}_{u}"]
            assert f"acc: {at} = 0.0:{at}" in body, body
            assert f"acc2: {au} = 0.0:{au}" in body, body


def test_half_arithmetic_accumulates_in_f32_and_stores_back(tmp_path: Path) -> None:
    pytest.importorskip("llvmlite")
    from oxide_build.compile import CompileOptions, compile_module

    src = source(tmp_path, """
    T = ox.TypeVar("T", f16, bf16, f32)

    @ox.kernel
    def row_sum(x: Tensor[T, 2], out: DisjointSlice[T]) -> None:
        r = thread.index_1d()
        if r < len(out):
            acc: ox.acc_type(T) = 0.0
            for c in range(x.shape[1]):
                acc += x[r, c] * T(0.5)
            out[r] = T(ox.math.sqrt(acc * acc))
    """)
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",)))
    names = {k.symbol for k in compiled.kernels}
    assert names == {"row_sum_f16", "row_sum_bf16", "row_sum_f32"}
    ptx = compiled.ptx["sm_90"]
    assert "cvt.rn.f16.f32" in ptx and "cvt.rn.bf16.f32" in ptx  # T(acc) stores the f32 sum back


# ---- errors --------------------------------------------------------------------------------

def test_a_typevar_the_function_does_not_bind_is_an_error(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
    T = ox.TypeVar("T", f32, f64)

    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = f32(T(x[i]))
    """)
    assert "kern.py:10:22" in msg and "the TypeVar T is not a type parameter of 'k'" in msg
    assert "use T in a parameter's annotation" in msg


def test_a_type_test_mixed_with_a_run_time_condition_is_an_error(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
    T = ox.TypeVar("T", f32, f64)

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if T is f64 and i < len(out):
            out[i] = x[i]
    """)
    assert "kern.py:9:21" in msg and "cannot be combined with a run-time condition" in msg
    assert "nest the run-time condition" in msg


@pytest.mark.parametrize("test, message", [
    ("T < f32", "a type is tested with `is`"),
    ("T in x", "`in` on a type takes a tuple of types"),
    ("T is 3", "'3' is not a type"),
    ("T in (f16, 2)", "'2' is not a type"),
    ("f64 is T", "write the TypeVar on the left"),
    ("T", "'T' is not a test of a type"),
])
def test_malformed_type_tests(tmp_path: Path, test: str, message: str) -> None:
    msg = compile_error(tmp_path, f"""
    T = ox.TypeVar("T", f32, f64)

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            if {test}:
                out[i] = x[i]
    """)
    assert "kern.py:10:" in msg and message in msg, msg


def test_storing_f32_math_into_a_half_view_names_the_conversion(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
    T = ox.TypeVar("T", f16, f32)

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = ox.math.exp(x[i])
    """)
    assert "kern.py:10:" in msg and "needs f16, got f32" in msg and "T(...)" in msg, msg


@pytest.mark.parametrize("decl, message", [
    ('ox.TypeVar("T", f16, f32, accumulate={f16: f32})', "unknown TypeVar option 'accumulate'"),
    ('ox.TypeVar("T", f16, f32, acc={f64: f64})', "f64 in acc= is not one of the TypeVar's constraints"),
    ('ox.TypeVar("T", f16, f32, acc={f16: 3})', "'3' in acc= is not a scalar type"),
    ('ox.TypeVar("T", f16, f32, acc=f32)', "acc= takes a dict"),
])
def test_typevar_acc_option_errors(tmp_path: Path, decl: str, message: str) -> None:
    msg = compile_error(tmp_path, f"""
    T = {decl}

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = x[i]
    """)
    assert "kern.py:4:" in msg and message in msg, msg


def test_acc_type_needs_a_bound_typevar(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
    @ox.kernel
    def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            acc: ox.acc_type(f32) = 0.0
            out[i] = acc
    """)
    assert "kern.py:8:" in msg and "ox.acc_type takes a TypeVar" in msg, msg


def test_generic_device_functions_over_tensors_and_accumulate_types(tmp_path: Path) -> None:
    _, frontend = build_ir(source(tmp_path, """
    T = ox.TypeVar("T", f16, f32, f64)

    def row_sum(x: Tensor[T, 2], r: i64) -> ox.acc_type(T):
        acc: ox.acc_type(T) = 0.0
        for c in range(x.shape[1]):
            acc += x[r, c]
        return acc

    def scaled(s: ox.acc_type(T), v: T) -> T:
        return T(ox.acc_type(T)(v) * s)

    @ox.kernel
    def k(x: Tensor[T, 2], out: DisjointSlice[T]) -> None:
        tile = ox.shared.array(128, T)
        part = ox.local.array(4, ox.acc_type(T))
        i = thread.index_1d()
        tile[thread.idx.x] = T(1.0)
        block.sync()
        if i < len(out) and i < x.shape[0]:
            part[0] = row_sum(x, i)
            out[i] = scaled(part[0], tile[thread.idx.x])
    """), "kern")
    text = print_program(frontend.program)
    assert "device __ox_kern_row_sum__Tensor_f16, 2_i64(x: Tensor[f16, 2], r: i64) -> f32" in text, text
    assert "device __ox_kern_scaled__f32_f16(s: f32, v: f16) -> f16" in text
    assert "device __ox_kern_scaled__f64_f64(s: f64, v: f64) -> f64" in text


def test_a_tensor_of_another_type_than_the_typevar_allows(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
    T = ox.TypeVar("T", f32, f64)

    def first(x: Tensor[T, 2]) -> T:
        return x[0, 0]

    @ox.kernel
    def k(x: Tensor[f16, 2], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = f32(first(x))
    """)
    assert "kern.py:13:" in msg and "argument 'x' of first() has elements f16, not allowed by T" in msg, msg


def test_a_type_test_as_a_value_is_a_compile_time_bool(tmp_path: Path) -> None:
    ir = instances(tmp_path, """
    T = ox.TypeVar("T", f32, f64)

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        wide: bool = T is f64
        if i < len(out):
            out[i] = x[i] * (T(2.0) if wide else T(3.0))
    """)
    assert "True:bool" in ir["k_f64"] and "False:bool" in ir["k_f32"], ir


def test_a_module_alias_of_the_accumulate_type(tmp_path: Path) -> None:
    _, frontend = build_ir(source(tmp_path, """
    T = ox.TypeVar("T", f16, f32, f64)
    Acc = ox.acc_type(T)

    def total(x: Slice[T]) -> Acc:
        s: Acc = 0.0
        for k in range(len(x)):
            s += Acc(x[k])
        return s

    @ox.kernel
    def k(x: Slice[T], out: DisjointSlice[T]) -> None:
        i = thread.index_1d()
        if i < len(out):
            acc: Acc = total(x)
            if Acc is f64:
                acc = acc * 2.0
            out[i] = T(acc)
    """), "kern")
    text = print_program(frontend.program)
    assert "device __ox_kern_total__Slice_f16(x: Slice[f16]) -> f32" in text
    assert "device __ox_kern_total__Slice_f64(x: Slice[f64]) -> f64" in text
    assert text.count("(acc * 2.0:f64)") == 1 and "2.0:f32" not in text
