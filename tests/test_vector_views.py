"""Kernel parameters that are views of vector elements (``Slice[f32x4]``, ``Tensor[bf16x2, 2]``,
``DisjointTensor[f32x4, 2]``: CUDA's ``const float4*``; issue 29 item 12): the typing and the
entry point, the manifest, and on the fake driver what the runtime packs from an array of the
lanes (a length, shape and strides in vectors) and every argument it refuses, naming the parameter
and what to pass. The kernels: tests/packages/vectorviews/vviewk.py; GPU results:
tests/test_vector_views_gpu.py."""
from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from launch_hpp_probe import launch_hpp_answers, needs_cxx
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    CFakeDriver,
    FakeArray,
    FakeDLPack,
    FakeDriver,
    _fake_cupy,
    _fake_torch,
    c_driver,
    fake_driver,
    fresh_runtime,
    make_module,
    paths,
    slot_types,
)
from oxide.runtime import launcher
from oxide.runtime.manifest import ManifestError, ModuleManifest, ParamSpec
from oxide_build.compile import CompileOptions, build_ir, compile_module

KERNELS = Path(__file__).parent / "packages" / "vectorviews" / "vviewk.py"


def frontend(tmp_path: Path) -> Any:
    src = tmp_path / "vviewk.py"
    shutil.copy(KERNELS, src)
    _, result = build_ir(src, "vviewk")
    return result


def module(tmp_path: Path, drv: FakeDriver) -> Any:
    result = frontend(tmp_path)
    specs = tuple(result.kernels)
    drv.signatures = {symbol: slot_types(k.params) for k in specs for symbol in (k.symbol, k.index32_symbol) if symbol}
    return make_module(tmp_path, KERNELS.read_text(), specs, error_sites=tuple(result.error_sites))


def f32_lanes(shape: tuple[int, ...], strides: tuple[int, ...] | None = None, ptr: int = 0x10000,
              typestr: str = "<f4", readonly: bool = False) -> FakeArray:
    """An array of the CUDA array interface (strides in elements; C order when None)."""
    size = int(typestr[2:])
    return FakeArray(shape=shape, strides=None if strides is None else tuple(size * s for s in strides), ptr=ptr,
                     typestr=typestr, readonly=readonly)


# ---- typing, the entry point and the manifest ---------------------------------------------------

def test_the_manifest_names_the_vector_type_of_each_view() -> None:
    _, result = build_ir(KERNELS, "vviewk")
    params = {k.name: [(p.name, p.kind, p.dtype, p.ndim) for p in k.params] for k in result.kernels}
    assert params == {
        "reverse_scale": [("x", "slice", "f32x4", 1), ("a", "scalar", "f32", 1), ("out", "disjoint_slice", "f32x4", 1)],
        "swap_pairs": [("x", "tensor", "bf16x2", 2), ("out", "mut_tensor", "bf16x2", 2)],
        "widen_halves": [("x", "slice", "f16x8", 1), ("out", "disjoint_tensor", "f32x4", 2)],
        "accumulate_pairs": [("x", "slice", "i32x2", 1), ("out", "mut_slice", "i32x2", 1), ("n", "scalar", "i32", 1)],
    }


def test_each_element_is_one_access_at_an_offset_in_vectors(tmp_path: Path) -> None:
    """The slots are the usual ones (pointer, length / shape and strides) counting vectors: an
    element is one 16-byte access at pointer + 16 * index (a bf16x2 one of 4 bytes, an f16x8 one of
    16), with both backends (nvvm has no bf16: the kernels without it)."""
    compiled = compile_module(KERNELS, "vviewk", CompileOptions(archs=("sm_90",), cache=False), root=KERNELS.parent)
    ptx = compiled.ptx["sm_90"]
    body = {name: ptx.split(f".entry {name}(")[1].split(".entry")[0]
            for name in ("reverse_scale", "swap_pairs", "widen_halves", "accumulate_pairs")}
    assert "ld.global.nc.v4.b32" in body["reverse_scale"] and "st.global.v4.b32" in body["reverse_scale"]
    assert "shl.b64" in body["reverse_scale"] and ", 4;" in body["reverse_scale"]  # index * 16 bytes
    assert "ld.global.nc.v2.b16" in body["swap_pairs"] and "st.global.v2.b16" in body["swap_pairs"]
    assert "ld.global.nc.v4.b32" in body["widen_halves"] and body["widen_halves"].count("st.global.v4.b32") == 2
    assert "ld.global.v2.b32" in body["accumulate_pairs"] and "st.global.v2.b32" in body["accumulate_pairs"]
    no_bf16 = "\n\n\n".join(part for part in KERNELS.read_text().split("\n\n\n") if "bf16" not in part)
    src = tmp_path / "vviewk.py"
    src.write_text(no_bf16)
    nvvm = compile_module(src, "vviewk", CompileOptions(archs=("sm_90",), cache=False, backend="nvvm"), root=tmp_path)
    assert {k.name for k in nvvm.kernels} == {"reverse_scale", "widen_halves", "accumulate_pairs"}
    assert "ld.global.nc.v4" in nvvm.ptx["sm_90"] and "st.global.v2" in nvvm.ptx["sm_90"]


def test_vector_views_round_trip_through_the_manifest_and_a_bad_element_type_is_refused() -> None:
    _, result = build_ir(KERNELS, "vviewk")
    manifest = ModuleManifest("vviewk", "vviewk.py", "0" * 64, tuple(result.kernels), {"sm_90": "vviewk.sm_90.cubin"})
    again = ModuleManifest.from_json(manifest.to_json())
    assert again.kernels == manifest.kernels
    data = json.loads(manifest.to_json())
    data["kernels"][0]["params"][0]["dtype"] = "f32x3"
    with pytest.raises(ManifestError, match=r"kernels\[0\]\.params\[0\]\.dtype: 'f32x3' is not an element type of a "
                                            r"view \(a scalar type, a vector type such as f32x4, or a record"):
        ModuleManifest.from_json(json.dumps(data))


@pytest.mark.parametrize("body, message", [
    ("""
     @ox.kernel
     def k(x: Slice[ox.f32x4], out: DisjointSlice[f32]) -> None:
         i = thread.index_1d()
         if i < len(out):
             out[i] = x.load4(i).x
     """, "kern.py:9:18: error: load4 reads scalar elements; 'x' holds f32x4 vectors\n"),
    ("""
     @ox.kernel
     def k(out: DisjointSlice[ox.f32x4]) -> None:
         i = thread.index_1d()
         if i < len(out):
             out[i].x = 1.0
     """, "kern.py:9:9: error: cannot assign to 'out[i].x'\n"),
    ("""
     @ox.kernel
     def k(out: MutSlice[ox.f32x4]) -> None:
         ox.atomic.add(out, 0, ox.f32x4(1.0))
     """, "kern.py:7:19: error: atomics need elements of i32, u32, i64, u64, f32, f64, f16, bf16, got f32x4"),
    ("""
     @ox.kernel
     def k(out: DisjointSlice[ox.f32x4]) -> None:
         i = thread.index_1d()
         if i < len(out):
             out[i] = 1.0
     """, "kern.py:9:18: error: store into out needs f32x4, got f64"),
])
def test_what_a_view_of_vectors_cannot_do_is_a_located_error(tmp_path: Path, body: str, message: str) -> None:
    from oxide.errors import CompileError

    src = tmp_path / "kern.py"
    src.write_text("import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, f32, thread\n\n"
                   + textwrap.dedent(body))
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    assert message in str(info.value).replace(str(src), "kern.py"), str(info.value)


def test_a_kernel_passes_a_slice_of_its_vector_view_to_a_device_function(tmp_path: Path) -> None:
    src = tmp_path / "kern.py"
    src.write_text(textwrap.dedent("""
        import oxide as ox
        from oxide import Slice, DisjointSlice, f32, thread

        def total(v: Slice[ox.f32x4]) -> f32:
            s = ox.f32x4(0.0)
            for k in range(len(v)):
                s = s + v[k]
            return s.x + s.w

        @ox.kernel
        def k(x: Slice[ox.f32x4], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = total(x[1:3]) + f32(len(x))
        """))
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",), cache=False), root=tmp_path)
    assert "ld.global.nc.v4.b32" in compiled.ptx["sm_90"] or "ld.global.v4.b32" in compiled.ptx["sm_90"]


# ---- the runtime: what is packed ----------------------------------------------------------------

def test_an_array_of_the_lanes_is_packed_as_a_view_counting_vectors(tmp_path: Path, fake_driver: FakeDriver,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    torch, cupy = _fake_torch(), _fake_cupy()
    monkeypatch.setitem(__import__("sys").modules, "torch", torch)
    monkeypatch.setitem(__import__("sys").modules, "cupy", cupy)
    m = module(tmp_path, fake_driver)
    m.reverse_scale[1, 32](f32_lanes((3, 4), ptr=0x10000), 2.0, f32_lanes((3, 4), ptr=0x20000))
    # every other pair of a (4, 12, 2) bfloat16 tensor (x[:, ::2]): strides 24 and 4 lanes, so 12 and 2
    # pairs: not contiguous along its last axis, the kernel as written (index32 takes rows of stride 1)
    x = torch.Tensor(0, torch.bfloat16, 0x30000, shape=(4, 6, 2), strides=(24, 4, 1))
    out = torch.Tensor(0, torch.bfloat16, 0x40000, shape=(4, 6, 2), strides=(12, 2, 1))
    m.swap_pairs[(1, 1), (8, 8)](x, out)
    # a transposed output: (5, 2) vectors of a (2, 5, 4) float32 array (vector strides 1 and 5: as written)
    halves = cupy.ndarray(0, np.float16, 0x50000, shape=(5, 8))
    m.widen_halves[1, (32, 2)](halves, f32_lanes((5, 2, 4), (4, 20, 1), ptr=0x60000))
    m.accumulate_pairs[1, 32](FakeDLPack((6, 2), code=0, bits=32, ptr=0x70000),
                              f32_lanes((6, 2), ptr=0x80000, typestr="<i4"), 3)
    # an empty array: nothing is read, so its address need not be aligned
    m.reverse_scale[1, 32](f32_lanes((0, 4), ptr=0x90004), 1.0, f32_lanes((0, 4), ptr=0xA0000))
    assert [launch["fn"] for launch in fake_driver.launches] == [
        "reverse_scale", "swap_pairs", "widen_halves", "accumulate_pairs", "reverse_scale"]
    assert [launch["values"] for launch in fake_driver.launches] == [
        [0x10000, 3, 2.0, 0x20000, 3],
        [0x30000, 4, 6, 12, 2, 0x40000, 4, 6, 6, 1],
        [0x50000, 5, 0x60000, 5, 2, 1, 5],
        [0x70000, 6, 0x80000, 6, 3],
        [0x90004, 0, 1.0, 0xA0000, 0],
    ]


@pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")
def test_the_c_launcher_leaves_kernels_with_vector_views_to_the_python_path(tmp_path: Path,
                                                                            c_driver: CFakeDriver) -> None:
    m = module(tmp_path, c_driver)
    for k in range(3):
        m.reverse_scale[1, 32](f32_lanes((2, 4), ptr=0x10000), float(k), f32_lanes((2, 4), ptr=0x20000))
    assert paths(c_driver) == ["python"] * 3
    assert [launch["values"] for launch in c_driver.launches] == [[0x10000, 2, float(k), 0x20000, 2] for k in range(3)]


# ---- the runtime: what is refused ---------------------------------------------------------------

EXPECTED_F32X4 = ("parameter 'x' of reverse_scale holds f32x4 elements: pass an array of f32 whose last dimension is "
                  "its 4 lanes, shape (n, 4) with the lanes contiguous; ")


@pytest.mark.parametrize("x, message", [
    (f32_lanes((8,)), EXPECTED_F32X4 + "got shape (8,) (a flat array of f32: .view(-1, 4) in torch, "
                                       ".reshape(-1, 4) in CuPy)"),
    (f32_lanes((2, 4), typestr="<f2"), EXPECTED_F32X4 + "got f16 elements"),
    (f32_lanes((2, 3)), EXPECTED_F32X4 + "got shape (2, 3), whose last dimension is 3"),
    (f32_lanes((2, 4), (8, 2)), EXPECTED_F32X4 + "got a stride of 2 elements between the lanes, not 1 — pass a "
                                                 "contiguous copy (.contiguous(), .copy())"),
    (f32_lanes((2, 4), (5, 1)), EXPECTED_F32X4 + "got strides (5, 1) elements: an element starts 5 lanes after the "
                                                 "one before, not a whole number of f32x4 — pass a contiguous copy "
                                                 "(.contiguous(), .copy())"),
    (f32_lanes((2, 4), (8, 1)), EXPECTED_F32X4 + "got 8 f32 from one vector to the next, not 4 (a Slice is "
                                                 "contiguous: pass a contiguous copy, or take a Tensor)"),
    (f32_lanes((2, 4), ptr=0x10008), EXPECTED_F32X4 + "got data at 0x10008, not a multiple of 16 bytes as each "
                                                      "f32x4 access needs (CUDA aligns the vector type so) — pass an "
                                                      "array whose data starts at a multiple of 16 bytes (a slice of "
                                                      "a larger one may not)"),
    (f32_lanes((2, 2, 4)), EXPECTED_F32X4 + "got shape (2, 2, 4) (a flat array of f32: .view(-1, 4) in torch, "
                                            ".reshape(-1, 4) in CuPy)"),
    (np.zeros((2, 4), np.float32), "parameter 'x' of reverse_scale needs a device array; got a numpy.ndarray (host "
                                   "memory) — copy it to the GPU first, e.g. torch.as_tensor(x, device='cuda') or "
                                   "cupy.asarray(x), or run it on the CPU device (OXIDE_DEVICE=cpu)"),
])
def test_a_slice_of_vectors_refuses_any_other_array_naming_what_to_pass(
        tmp_path: Path, fake_driver: FakeDriver, x: Any, message: str) -> None:
    m = module(tmp_path, fake_driver)
    with pytest.raises(TypeError) as info:
        m.reverse_scale[1, 32](x, 1.0, f32_lanes((2, 4), ptr=0x20000))
    assert str(info.value) == message
    assert fake_driver.launches == []


@pytest.mark.parametrize("call, message", [
    (lambda m: m.swap_pairs[1, 32](f32_lanes((4, 2), typestr="<f2"), f32_lanes((4, 4, 2), ptr=0x20000)),
     "parameter 'x' of swap_pairs holds bf16x2 elements: pass an array of bf16 whose last dimension is its 2 lanes, "
     "shape (d0, d1, 2) with the lanes contiguous; got shape (4, 2)"),
    (lambda m: m.widen_halves[1, (32, 2)](f32_lanes((2, 8), typestr="<f2", ptr=0x10000),
                                          f32_lanes((2, 2, 4), ptr=0x20004)),
     "parameter 'out' of widen_halves holds f32x4 elements: pass an array of f32 whose last dimension is its 4 lanes, "
     "shape (d0, d1, 4) with the lanes contiguous; got data at 0x20004, not a multiple of 16 bytes as each f32x4 "
     "access needs (CUDA aligns the vector type so) — pass an array whose data starts at a multiple of 16 bytes (a "
     "slice of a larger one may not)"),
    (lambda m: m.widen_halves[1, (32, 2)](f32_lanes((2, 8), typestr="<f2", ptr=0x10000),
                                          f32_lanes((2, 2, 4), (8, 2, 1), ptr=0x20000)),
     "parameter 'out' of widen_halves holds f32x4 elements: pass an array of f32 whose last dimension is its 4 lanes, "
     "shape (d0, d1, 4) with the lanes contiguous; got strides (8, 2, 1) elements: an element starts 2 lanes after the "
     "one before, not a whole number of f32x4 — pass a contiguous copy (.contiguous(), .copy())"),
    (lambda m: m.accumulate_pairs[1, 32](f32_lanes((4, 2), typestr="<i4", ptr=0x10000),
                                         f32_lanes((4, 2), typestr="<i4", ptr=0x20004), 1),
     "parameter 'out' of accumulate_pairs holds i32x2 elements: pass an array of i32 whose last dimension is its 2 "
     "lanes, shape (n, 2) with the lanes contiguous; got data at 0x20004, not a multiple of 8 bytes as each i32x2 "
     "access needs (CUDA aligns the vector type so) — pass an array whose data starts at a multiple of 8 bytes (a "
     "slice of a larger one may not)"),
    (lambda m: m.reverse_scale[1, 32](f32_lanes((2, 4), ptr=0x10000), 1.0,
                                      f32_lanes((2, 4), ptr=0x20000, readonly=True)),
     "parameter 'out' of reverse_scale is written by the kernel; got a read-only array"),
    # 4 vectors of 16 bytes from 0x10000 reach past 0x10030, where the written view begins
    (lambda m: m.reverse_scale[1, 32](f32_lanes((4, 4), ptr=0x10000), 1.0, f32_lanes((1, 4), ptr=0x10030)),
     "parameter 'x' of reverse_scale overlaps parameter 'out', which the kernel writes; a read-only view must not "
     "alias a writable one — pass a copy, or declare 'x' DisjointSlice/MutSlice to read and write the same memory"),
    (lambda m: m.widen_halves[1, (32, 2)](f32_lanes((2, 8), typestr="<f2", ptr=0x10000),
                                          f32_lanes((2, 2, 4), (0, 4, 1), ptr=0x20000)),
     "parameter 'out' of widen_halves is written by the kernel; got a view whose elements overlap (shape (2, 2), strides "
     "(0, 1) elements: a broadcast or expand()ed array), so threads would write the same element — pass a contiguous "
     "copy (.contiguous(), .copy())"),
])
def test_tensors_of_vectors_refuse_arrays_naming_the_parameter(tmp_path: Path, fake_driver: FakeDriver,
                                                               call: Any, message: str) -> None:
    m = module(tmp_path, fake_driver)
    with pytest.raises(TypeError) as info:
        call(m)
    assert str(info.value) == message
    assert fake_driver.launches == []


@needs_cxx
def test_launch_hpp_refuses_kernels_with_views_of_vectors(tmp_path: Path) -> None:
    _, result = build_ir(KERNELS, "vviewk")
    lines = launch_hpp_answers(tmp_path, "vviewk", result.kernels, ["reverse_scale", "swap_pairs"])
    assert lines == [
        "refused: vviewk.py:9: kernel 'reverse_scale' parameter 'x' is a view of f32x4 elements (CUDA's float4*, "
        "half2*), which this C++ API does not pack yet: launch it from Python",
        "refused: vviewk.py:18: kernel 'swap_pairs' parameter 'x' is a view of bf16x2 elements (CUDA's float4*, "
        "half2*), which this C++ API does not pack yet: launch it from Python",
    ]


def test_a_scalar_view_still_takes_a_flat_array(tmp_path: Path, fake_driver: FakeDriver) -> None:
    """The reading of vector views changes nothing for scalar ones: ParamSpec defaults kept."""
    assert ParamSpec("x", "slice", "f32").ndim == 1
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": ["f32", "u64", "i64", "u64", "i64"]}
    m.scale[1, 32](1.0, FakeArray(4, ptr=0x1000), FakeArray(4, ptr=0x2000))
    assert fake_driver.launches[-1]["values"] == [1.0, 0x1000, 4, 0x2000, 4]
