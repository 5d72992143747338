"""TMA and mbarrier on the GPU (sm_90+): the kernels of tests/packages/tma/ copy, transpose and
pipeline torch tensors through shared memory at odd sizes (boxes past the edge are zero-filled
on load and clipped on store), checked element by element against torch in float64, outputs
poisoned first, with both backends and descriptors of torch, CuPy and DeviceArray arrays."""
from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("TMA (tensor memory accelerator)")]
PACKAGE = Path(__file__).resolve().parent / "packages" / "tma"
POISON = -12345.5


@pytest.fixture(scope="module", params=["nvptx", "nvvm"])
def tmak(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    arch = device.context_device(device.current_context()).arch
    if int(arch.removeprefix("sm_").rstrip("a")) < 90:
        pytest.skip("TMA needs sm_90")
    backend = request.param
    root = tmp_path_factory.mktemp(f"tmak_{backend}")
    pkg_name = f"tmak_{backend}"
    pkg = root / pkg_name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(PACKAGE / "tmak.py", pkg / "tmak.py")
    compiled = compile_module(pkg / "tmak.py", f"{pkg_name}.tmak", CompileOptions(archs=(arch,), backend=backend),
                              root=root)
    write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(f"{pkg_name}.tmak")
    finally:
        sys.path.remove(str(root))


def torch_values(shape: tuple[int, ...], dtype: Any) -> Any:
    """Random non-zero values in ±[0.5, 2)."""
    import torch

    mag = torch.rand(shape, dtype=torch.float64, device="cuda") * 1.5 + 0.5
    sign = torch.where(torch.rand(shape, device="cuda") < 0.5, -1.0, 1.0).to(torch.float64)
    return (mag * sign).to(dtype)


def poisoned(shape: tuple[int, ...], dtype: Any) -> Any:
    import torch

    return torch.full(shape, POISON, dtype=dtype, device="cuda")


@pytest.mark.parametrize("shape", [(101, 76), (16, 32), (7, 4), (300, 1000)])
@pytest.mark.parametrize("dtype_name", ["float32", "float16"])
def test_tile_copy_at_odd_sizes(tmak: ModuleType, shape: tuple[int, int], dtype_name: str) -> None:
    import torch

    import oxide

    dtype = getattr(torch, dtype_name)
    rows, cols = shape
    if (cols * dtype.itemsize) % 16:
        cols += (16 - (cols * dtype.itemsize) % 16) // dtype.itemsize  # a row stride of whole 16 bytes
    src = torch_values((rows, cols), dtype)
    dst = poisoned((rows, cols), dtype)
    grid = (-(-cols // 32), -(-rows // 16))
    tmak.tile_copy[grid, 64](oxide.tma.descriptor(src, box=(16, 32)), oxide.tma.descriptor(dst, box=(16, 32)))
    torch.cuda.synchronize()
    assert torch.equal(dst.to(torch.float64), src.to(torch.float64))


def test_tile_copy_from_cupy_and_device_arrays(tmak: ModuleType) -> None:
    import numpy as np

    import oxide
    from oxide.runtime import DeviceArray

    rng = np.random.default_rng()
    host = (rng.uniform(0.5, 2.0, (45, 40)) * rng.choice([-1.0, 1.0], (45, 40))).astype(np.float32)
    src = DeviceArray.from_numpy(host)
    dst = DeviceArray.from_numpy(np.full((45, 40), POISON, np.float32))
    tmak.tile_copy[(2, 3), 32](oxide.tma.descriptor(src, box=(16, 32)), oxide.tma.descriptor(dst, box=(16, 32)))
    np.testing.assert_array_equal(dst.to_numpy(), host)
    cupy = pytest.importorskip("cupy")
    csrc = cupy.asarray(host)
    cdst = cupy.full((45, 40), POISON, dtype=cupy.float32)
    tmak.tile_copy[(2, 3), 32](oxide.tma.descriptor(csrc, box=(16, 32)), oxide.tma.descriptor(cdst, box=(16, 32)))
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(cupy.asnumpy(cdst), host)


@pytest.mark.parametrize("shape", [(100, 68), (32, 32), (65, 4)])
def test_tile_transpose(tmak: ModuleType, shape: tuple[int, int]) -> None:
    import torch

    import oxide

    rows, cols = shape
    src = torch_values((rows, cols), torch.float32)
    dst = poisoned((cols, rows + (-rows) % 4), torch.float32)[:, :rows]  # rows padded to 16 bytes
    grid = (-(-cols // 32), -(-rows // 32))
    tmak.tile_transpose[grid, 128](oxide.tma.descriptor(src, box=(32, 32)), oxide.tma.descriptor(dst, box=(32, 32)))
    torch.cuda.synchronize()
    assert torch.equal(dst.to(torch.float64), src.to(torch.float64).T)


@pytest.mark.parametrize("row, col", [(0, 0), (90, 60), (-5, -8), (99, 68), (200, 0), (-5, 0), (0, -4), (5, 72)])
def test_a_box_past_the_edge_reads_zeros(tmak: ModuleType, row: int, col: int) -> None:
    """Boxes at any row, and at columns that are a multiple of 16 bytes (4 f32), past either edge."""
    import torch

    import oxide

    src = torch_values((100, 72), torch.float32)
    out = poisoned((16 * 32,), torch.float32)
    tmak.box_to_global[1, 128](oxide.tma.descriptor(src, box=(16, 32)), row, col, out)
    torch.cuda.synchronize()
    want = torch.zeros((16, 32), dtype=torch.float64, device="cuda")
    r0, c0 = max(row, 0), max(col, 0)
    r1, c1 = min(row + 16, 100), min(col + 32, 72)
    if r0 < r1 and c0 < c1:
        want[r0 - row:r1 - row, c0 - col:c1 - col] = src[r0:r1, c0:c1].to(torch.float64)
    assert torch.equal(out.to(torch.float64).reshape(16, 32), want)


@pytest.mark.parametrize("tiles", [1, 3, 4, 7, 20])
def test_an_mbarrier_ring_of_three_stages(tmak: ModuleType, tiles: int) -> None:
    import torch

    import oxide

    src = torch_values((tiles * 8 - 3, 32), torch.float32)  # the last tile past the edge: zeros
    out = poisoned((tiles * 256,), torch.float32)
    tmak.ring[1, 96](oxide.tma.descriptor(src, box=(8, 32)), tiles, out)
    torch.cuda.synchronize()
    want = torch.ones((tiles * 8, 32), dtype=torch.float64, device="cuda")
    want[: tiles * 8 - 3] += 2.0 * src.to(torch.float64)
    # the kernel computes 2x + 1 in f32 with one rounding (an fma; 2x is exact): the float64
    # value rounded once to f32
    assert torch.equal(out.reshape(tiles * 8, 32), want.to(torch.float32))


@pytest.mark.parametrize("threads", [32, 128])
def test_a_box_larger_than_the_shared_array_is_a_kernel_error_and_nothing_hangs(tmak: ModuleType, threads: int) -> None:
    import torch

    import oxide
    from oxide.runtime import synchronize

    src = torch_values((64, 64), torch.float32)
    out = poisoned((16 * 32,), torch.float32)
    with pytest.raises(oxide.KernelError, match=r"box_to_global at .*tmak\.py:\d+:\d+: one box of src in tile"):
        tmak.box_to_global[1, threads](oxide.tma.descriptor(src, box=(32, 32)), 0, 0, out)
        synchronize()
    # the waiting threads went on (the load's bytes were counted as arrived) and copied the
    # tile they had; the context is usable: the next launch works
    tmak.box_to_global[1, threads](oxide.tma.descriptor(src, box=(16, 32)), 0, 0, out)
    synchronize()
    assert torch.equal(out.reshape(16, 32), src[:16, :32])


@pytest.mark.parametrize("col", [1, -9, 71])
def test_a_column_not_on_16_bytes_is_a_kernel_error_and_nothing_hangs(tmak: ModuleType, col: int) -> None:
    """The GPU faults on such a TMA copy (an illegal instruction, which ends the context); the
    kernel's check reports it instead, skips the copy and counts its bytes as arrived."""
    import torch

    import oxide
    from oxide.runtime import synchronize

    src = torch_values((100, 72), torch.float32)
    out = poisoned((16 * 32,), torch.float32)
    with pytest.raises(oxide.KernelError, match=r"the innermost coordinate col of oxide\.tma\.load: its byte offset "
                                                r"modulo 16 .* with index (4|12) but length 1"):
        tmak.box_to_global[1, 64](oxide.tma.descriptor(src, box=(16, 32)), 0, col, out)
        synchronize()
    tmak.box_to_global[1, 64](oxide.tma.descriptor(src, box=(16, 32)), 0, 8, out)  # the context still works
    synchronize()
    assert torch.equal(out.reshape(16, 32), src[:16, 8:40])


def test_a_swizzled_shared_array_holds_the_box_swizzled(tmak: ModuleType) -> None:
    """swizzle=128: the 16-byte chunk c of row r lands at chunk c ^ (r % 8) (CUTLASS's
    Swizzle<3, 4, 3>); a map without that swizzle is refused by the kernel's check."""
    import torch

    import oxide
    from oxide.runtime import synchronize

    src = torch_values((8, 32), torch.float32)
    out = poisoned((8 * 32,), torch.float32)
    tmak.swizzled_box[1, 64](oxide.tma.descriptor(src, box=(8, 32), swizzle=128), out)
    synchronize()
    want = torch.empty_like(src)
    for r in range(8):
        for c in range(32):
            want[r, ((c // 4) ^ (r % 8)) * 4 + c % 4] = src[r, c]
    assert torch.equal(out.reshape(8, 32), want)
    with pytest.raises(oxide.KernelError, match=r"the swizzle of src .* XOR the 128 bytes tile is declared with .* with "
                                                r"index 128 but length 1"):
        tmak.swizzled_box[1, 64](oxide.tma.descriptor(src, box=(8, 32)), out)
        synchronize()


def test_a_shared_tile_off_128_bytes_is_a_kernel_error_and_nothing_hangs(tmak: ModuleType) -> None:
    import torch

    import oxide
    from oxide.runtime import synchronize

    src = torch_values((16, 32), torch.float32)
    out = poisoned((16 * 32,), torch.float32)
    tmak.box_at_offset[1, 64](oxide.tma.descriptor(src, box=(16, 32)), 96, out)  # 384 bytes: aligned
    synchronize()
    assert torch.equal(out.reshape(16, 32), src)
    with pytest.raises(oxide.KernelError, match=r"the shared address of tile\[off:\] for oxide\.tma\.load, modulo 128 "
                                                r".* with index 16 but length 1"):
        tmak.box_at_offset[1, 64](oxide.tma.descriptor(src, box=(16, 32)), 4, out)  # 16 bytes: refused
        synchronize()
    tmak.box_at_offset[1, 64](oxide.tma.descriptor(src, box=(16, 32)), 0, out)  # the context still works
    synchronize()
    assert torch.equal(out.reshape(16, 32), src)


def test_a_descriptor_of_another_dtype_is_refused_before_launch(tmak: ModuleType) -> None:
    import torch

    import oxide

    src = torch_values((32, 32), torch.float64)
    with pytest.raises(TypeError, match="parameter 'src' of tile_transpose needs a TMA descriptor of 2-d f32; got one of 2-d f64"):
        tmak.tile_transpose[1, 32](oxide.tma.descriptor(src, box=(32, 32)),
                                   oxide.tma.descriptor(torch_values((32, 32), torch.float32), box=(32, 32)))


@pytest.mark.parametrize("cluster", [1, 2, 4])
def test_cluster_rank_and_size(tmak: ModuleType, cluster: int) -> None:
    import torch

    out = torch.full((8 * 32 - 5,), -7, dtype=torch.int32, device="cuda")
    tmak.cluster_ranks.launch(out, grid=8, block=32, cluster=cluster)
    torch.cuda.synchronize()
    block = torch.arange(out.numel(), device="cuda") // 32
    assert torch.equal(out.to(torch.int64), (block % cluster) * 100 + cluster)
