"""8-bit floats (issue #18, sm_89+): ``ox.f8e4m3`` / ``ox.f8e5m2`` are storage types that convert
to and from f32, f16 and bf16 with PTX's ``cvt`` (both backends), multiply on the tensor cores
(``mma.sync`` m16n8k32), and refuse arithmetic and old archs with located errors. The results
are checked on a GPU in tests/test_fp8_gpu.py; the SASS in tests/test_sass.py."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import oxide as ox
from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, compile_module

HEADER = ("import oxide as ox\n"
          "from oxide import Slice, MutSlice, DisjointSlice, bf16, f16, f32, f64, i32, i64, f8e4m3, f8e5m2, thread\n")


def compile_src(tmp_path: Path, body: str, archs: tuple[str, ...] = ("sm_90",), backend: str = "nvptx") -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    compiled = compile_module(src, "kern", CompileOptions(archs=archs, backend=backend, cache=False))
    assert set(compiled.cubins) == set(archs)  # ptxas (nvJitLink) accepted the PTX
    return compiled.ptx[archs[0]]


def compile_error(tmp_path: Path, body: str, archs: tuple[str, ...] = ("sm_90",)) -> CompileError:
    with pytest.raises(CompileError) as exc:
        compile_src(tmp_path, body, archs)
    return exc.value


CONVERSIONS = """
@ox.kernel
def k(x: Slice[f32], h: Slice[f16], q: Slice[f8e4m3], r: Slice[f8e5m2],
      o4: DisjointSlice[f8e4m3], o5: DisjointSlice[f8e5m2], of: DisjointSlice[f32], oh: DisjointSlice[f16]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(h) and i < len(q) and i < len(r) and i < len(o4) and i < len(o5) and i < len(of) and i < len(oh):
        o4[i] = f8e4m3(x[i])
        o5[i] = f8e5m2(h[i])
        of[i] = f32(q[i]) + f32(r[i])
        oh[i] = f16(r[i])
"""


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_conversions_are_cvt_instructions(tmp_path: Path, backend: str) -> None:
    ptx = compile_src(tmp_path, CONVERSIONS, backend=backend)
    assert re.search(r"cvt\.rn\.satfinite\.e4m3x2\.f32\s+%rs\d+, %(r|f)\d+, %(r|f)\d+;", ptx)
    assert re.search(r"cvt\.rn\.satfinite\.e5m2x2\.f32\s", ptx)  # f16 -> f32 (exact) -> e5m2
    assert re.search(r"cvt\.rn\.f16x2\.e4m3x2\s", ptx) and len(re.findall(r"cvt\.rn\.f16x2\.e5m2x2\s", ptx)) >= 1
    assert re.search(r"st\.global\.(u8|b8)\s", ptx) and re.search(r"ld\.global\.(nc\.)?(u8|b8)\s", ptx)
    if backend == "nvptx":  # fp8 -> f16x2 needs PTX ISA 8.1, asked for only where a module uses it
        assert ".version 8.1" in ptx


def test_plain_modules_keep_their_ptx_version(tmp_path: Path) -> None:
    ptx = compile_src(tmp_path, """
@ox.kernel
def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = x[i]
""")
    assert ".version 7.8" in ptx


def test_bf16_and_literals_convert(tmp_path: Path) -> None:
    ptx = compile_src(tmp_path, """
@ox.kernel
def k(b: Slice[bf16], q: Slice[f8e4m3], o4: DisjointSlice[f8e4m3], ob: DisjointSlice[bf16]) -> None:
    i = thread.index_1d()
    if i < len(b) and i < len(q) and i < len(o4) and i < len(ob):
        o4[i] = f8e4m3(b[i]) if i % 2 == 0 else f8e4m3(1.5)
        ob[i] = bf16(q[i])
""")
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx and "cvt.rn.f16x2.e4m3x2" in ptx
    assert re.search(r"cvt\.rn\.bf16\.f32", ptx)  # fp8 -> f16 -> f32 -> bf16, exact


def test_views_of_fp8_take_torch_and_dlpack_dtypes() -> None:
    from oxide.runtime.arrays_dlpack import dlpack_dtype
    from oxide.runtime.arrays_torch import TORCH_DTYPES
    from oxide.runtime.array_view import ITEMSIZE

    assert TORCH_DTYPES["torch.float8_e4m3fn"] == "f8e4m3" and TORCH_DTYPES["torch.float8_e5m2"] == "f8e5m2"
    assert dlpack_dtype(10, 8, 1) == "f8e4m3" and dlpack_dtype(12, 8, 1) == "f8e5m2"
    assert dlpack_dtype(8, 8, 1).startswith("unsupported")  # e4m3 with infinities: not torch's e4m3fn
    assert ITEMSIZE["f8e4m3"] == ITEMSIZE["f8e5m2"] == 1
    assert ox.f8e4m3.kind == "fp8" and ox.f8e4m3.itemsize == 1 and ox.f8e5m2(2) == 2.0


@pytest.mark.parametrize("body, message, hint", [
    ("y = q[i] + q[i]", "operator + cannot take f8e4m3: 8-bit floats are a storage format", "convert first, e.g. f32(x)"),
    ("y = q[i] * 2.0", "operator * cannot take f8e4m3", "ox.f8e4m3(result)"),
    ("y = x[i] + q[i]", "operator + cannot take f8e4m3", ""),
    ("y = q[i] < x[i]", "operator < cannot take f8e4m3", ""),
    ("y = -q[i]", "operator - cannot take f8e4m3", ""),
    ("y = abs(q[i])", "abs() cannot take f8e4m3", ""),
    ("y = max(q[i], q[i])", "operator max cannot take f8e4m3", ""),
    ("y = 1 if q[i] else 0", "a truth test cannot take f8e4m3", ""),
    ("y: f32 = q[i]", "needs f32, got f8e4m3", "convert explicitly with f32(...)"),
    ("o[i] = x[i]", "needs f8e4m3, got f32", "convert explicitly with f8e4m3(...)"),
    ("o[i] = f8e4m3(n)", "ox.f8e4m3() converts f32, f16 or bf16 values, not i32", "ox.f8e4m3(f32(x))"),
    ("o[i] = f8e4m3(r[i])", "ox.f8e4m3() converts f32, f16 or bf16 values, not f8e5m2", "exactly to f32"),
    ("y = i32(q[i])", "i32() of an f8e4m3 value: 8-bit floats convert to f32, f16, bf16 or f64 only", "i32(f32(x))"),
    ("y = ox.math.exp(q[i])", "f8e4m3 does not convert to f32 implicitly", "f32(x)"),
])
def test_fp8_misuse_is_a_located_error(tmp_path: Path, body: str, message: str, hint: str) -> None:
    err = compile_error(tmp_path, f"""
@ox.kernel
def k(x: Slice[f32], q: Slice[f8e4m3], r: Slice[f8e5m2], n: i32, o: DisjointSlice[f8e4m3]) -> None:
    i = thread.index_1d()
    if i < len(o) and i < len(q) and i < len(x) and i < len(r):
        {body}
""")
    assert message in err.message
    assert hint in err.hint
    assert err.location is not None and err.location.line == 8


def test_fp8_scalar_kernel_parameter_is_refused(tmp_path: Path) -> None:
    err = compile_error(tmp_path, """
@ox.kernel
def k(s: f8e4m3, o: DisjointSlice[f8e4m3]) -> None:
    i = thread.index_1d()
    if i < len(o):
        o[i] = s
""")
    assert "a kernel parameter cannot be an f8e4m3 scalar" in err.message and "take an f32" in err.hint
    assert err.location is not None and err.location.line == 5


def test_fp8_below_sm89_is_a_located_error(tmp_path: Path) -> None:
    err = compile_error(tmp_path, CONVERSIONS, archs=("sm_80", "sm_90"))
    assert "converting f8e4m3 values needs sm_89 or newer; this module is built for sm_80" in err.message
    assert 'arch = ["sm_90"]' in err.hint
    assert err.location is not None and err.location.line == 9


def test_copying_fp8_bytes_needs_no_new_arch(tmp_path: Path) -> None:
    ptx = compile_src(tmp_path, """
@ox.kernel
def k(q: Slice[f8e4m3], o: DisjointSlice[f8e4m3]) -> None:
    i = thread.index_1d()
    if i < len(o) and i < len(q):
        o[i] = q[i]
""", archs=("sm_80",))
    assert "cvt.rn" not in ptx


MMA = """
@ox.kernel(bounds_check=False)
def k(c: MutSlice[f32]) -> None:
    sa = ox.shared.array(512, {a})
    sb = ox.shared.array(256, {b})
    lane = thread.idx.x
    fa = ox.mma.fragment_a("m16n8k32", {a})
    fb = ox.mma.fragment_b("m16n8k32", {b})
    acc = ox.mma.fragment_c("m16n8k32")
    for j in ox.static_range(4):
        acc[j] = 0.0
    ox.mma.ldmatrix(fa, sa, (lane % 16) * 32 + 16 * (lane // 16))
    ox.mma.ldmatrix(fb, sb, (lane % 8) * 32 + 16 * ((lane // 8) % 2))
    ox.mma.sync(acc, fa, fb, acc)
    with ox.unsafe():
        c[lane] = acc[0] + acc[3]
"""


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
@pytest.mark.parametrize("a, b", [("f8e4m3", "f8e4m3"), ("f8e5m2", "f8e4m3"), ("f8e4m3", "f8e5m2")])
def test_fp8_mma_ptx(tmp_path: Path, a: str, b: str, backend: str) -> None:
    ptx = compile_src(tmp_path, MMA.format(a=a, b=b), archs=("sm_89",), backend=backend)
    pa, pb = a[2:], b[2:]
    assert re.search(rf"mma\.sync\.aligned\.m16n8k32\.row\.col\.f32\.{pa}\.{pb}\.f32\s", ptx)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx and "ldmatrix.sync.aligned.m8n8.x2.shared.b16" in ptx
    assert ".local" not in ptx  # fragments stay in registers
    if backend == "nvptx":
        assert ".version 8.4" in ptx


@pytest.mark.parametrize("a, b, archs, message, hint", [
    ("f8e4m3", "f8e4m3", ("sm_80",), "an fp8 mma.sync needs sm_89 or newer; this module is built for sm_80", "sm_90"),
    ("f8e4m3", "bf16", ("sm_90",), "an m16n8k32 fragment holds f8e4m3 or f8e5m2, not bf16", "m16n8k32 multiplies f8e4m3"),
])
def test_fp8_mma_errors(tmp_path: Path, a: str, b: str, archs: tuple[str, ...], message: str, hint: str) -> None:
    err = compile_error(tmp_path, MMA.format(a=a, b=b), archs=archs)
    assert message in err.message and hint in err.hint
    assert err.location is not None


def test_fp8_ldmatrix_cannot_transpose(tmp_path: Path) -> None:
    err = compile_error(tmp_path, MMA.format(a="f8e4m3", b="f8e4m3").replace(
        "16 * ((lane // 8) % 2))", "16 * ((lane // 8) % 2), trans=True)"))
    assert "ldmatrix trans=True transposes 16-bit elements, so it cannot transpose f8e4m3 values" in err.message
    assert "K-contiguous" in err.hint
    assert err.location is not None and err.location.line == 15


def test_generic_kernel_over_fp8_and_bf16(tmp_path: Path) -> None:
    ptx = compile_src(tmp_path, """
T = ox.TypeVar("T", bf16, f8e4m3)

@ox.kernel
def scale(x: Slice[T], s: f32, out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        acc: ox.acc_type(T) = ox.acc_type(T)(x[i]) * s
        out[i] = T(acc)
""")
    assert "cvt.rn.satfinite.e4m3x2.f32" in ptx and "cvt.rn.bf16.f32" in ptx
