"""Thread block clusters on the GPU (sm_90+): distributed shared memory through
ox.cluster.map_shared (reads of the next block's array, writes into the previous block's,
atomics into block 0's), the split cluster barrier, an arrival on another block's mbarrier and
a multicast TMA load of one box into every block of a cluster (tests/packages/clusterk/).
Results are checked element by element against NumPy/torch in float64 on fresh random data,
outputs poisoned first, on both backends and clusters of 1, 2, 4 and 8 blocks; a rank or a
multicast mask outside the cluster is a KernelError, and nothing hangs."""
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

pytestmark = [pytest.mark.gpu, devices.gpu_only("thread block clusters")]
PACKAGE = Path(__file__).resolve().parent / "packages" / "clusterk"
POISON = -12345.5
N = 128  # threads per block, elements of each block's shared array
BINS = 16
GRID = 16  # a whole number of clusters of each size tested
BOX = (16, 32)


@pytest.fixture(scope="module", params=["nvptx", "nvvm"])
def clk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    arch = device.context_device(device.current_context()).arch
    if int(arch.removeprefix("sm_").rstrip("a")) < 90:
        pytest.skip("thread block clusters need sm_90")
    backend = request.param
    root = tmp_path_factory.mktemp(f"clk_{backend}")
    pkg_name = f"clk_{backend}"
    pkg = root / pkg_name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(PACKAGE / "clusterk.py", pkg / "clusterk.py")
    compiled = compile_module(pkg / "clusterk.py", f"{pkg_name}.clusterk", CompileOptions(archs=(arch,), backend=backend),
                              root=root)
    write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(f"{pkg_name}.clusterk")
    finally:
        sys.path.remove(str(root))


def random_f32(n: int) -> Any:
    """Random non-zero float32 values in ±[0.5, 2), on the GPU."""
    import torch

    mag = torch.rand(n, dtype=torch.float64, device="cuda") * 1.5 + 0.5
    sign = torch.where(torch.rand(n, device="cuda") < 0.5, -1.0, 1.0).to(torch.float64)
    return (mag * sign).to(torch.float32)


def poisoned(n: int) -> Any:
    import torch

    return torch.full((n,), POISON, dtype=torch.float32, device="cuda")


def as_f32(values: Any) -> Any:
    """float64 values rounded to float32 (one correctly rounded f32 operation), as float64."""
    import torch

    return values.to(torch.float32).to(torch.float64)


@pytest.mark.parametrize("cluster", [1, 2, 4, 8])
def test_each_block_reads_the_next_blocks_shared_array(clk: ModuleType, cluster: int) -> None:
    import torch

    from oxide.runtime import synchronize

    x = random_f32(GRID * N)
    out = poisoned(GRID * N)
    clk.read_neighbour.launch(x, out, grid=GRID, block=N, cluster=cluster)
    synchronize()
    xs = x.to(torch.float64).reshape(GRID, N)
    blocks = torch.arange(GRID, device="cuda")
    nxt = (blocks // cluster) * cluster + (blocks % cluster + 1) % cluster
    t = torch.arange(N, device="cuda")
    want = as_f32(xs[nxt][:, (7 * t + 3) % N] + 2.0 * xs)
    assert torch.equal(out.to(torch.float64).reshape(GRID, N), want)


@pytest.mark.parametrize("cluster", [1, 2, 4, 8])
def test_each_block_writes_the_previous_blocks_2d_shared_array(clk: ModuleType, cluster: int) -> None:
    import torch

    from oxide.runtime import synchronize

    x = random_f32(GRID * N)
    out = poisoned(GRID * N)
    clk.write_neighbour.launch(x, out, grid=GRID, block=N, cluster=cluster)
    synchronize()
    xs = x.to(torch.float64).reshape(GRID, N)
    blocks = torch.arange(GRID, device="cuda")
    writer = (blocks // cluster) * cluster + (blocks % cluster + 1) % cluster  # the block that wrote mine
    want = as_f32(3.0 * xs[writer].flip(1))
    assert torch.equal(out.to(torch.float64).reshape(GRID, N), want)


@pytest.mark.parametrize("cluster", [1, 2, 4, 8])
def test_atomics_into_block_0s_shared_memory_make_a_histogram_per_cluster(clk: ModuleType, cluster: int) -> None:
    import numpy as np
    import torch

    from oxide.runtime import synchronize

    values = torch.randint(1, 1000, (GRID * N,), dtype=torch.int32, device="cuda")
    out = torch.full((GRID // cluster * BINS,), -7, dtype=torch.int32, device="cuda")
    clk.cluster_histogram.launch(values, out, grid=GRID, block=N, cluster=cluster)
    synchronize()
    v = values.cpu().numpy().reshape(GRID // cluster, cluster * N)
    want = np.stack([np.bincount(row % BINS, minlength=BINS) for row in v]).astype(np.int64)
    got = out.to(torch.int64).cpu().numpy().reshape(GRID // cluster, BINS)
    np.testing.assert_array_equal(got, want)
    assert want.sum() == GRID * N


def test_a_rank_outside_the_cluster_is_a_kernel_error(clk: ModuleType) -> None:
    import torch

    import oxide
    from oxide.runtime import synchronize

    x = random_f32(GRID * N)
    for rank in (2, -1):
        out = poisoned(GRID * N)
        with pytest.raises(oxide.KernelError, match=r"map_rank at .*clusterk\.py:\d+:\d+: the cluster rank rank of "
                                                    r"oxide\.cluster\.map_shared\(buf, \.\.\.\)"):
            clk.map_rank.launch(x, rank, out, grid=GRID, block=N, cluster=2)
            synchronize()
    out = poisoned(GRID * N)
    clk.map_rank.launch(x, 1, out, grid=GRID, block=N, cluster=2)  # the context still works
    synchronize()
    xs = x.to(torch.float64).reshape(GRID // 2, 2, N)
    want = xs[:, 1:2, :].expand(GRID // 2, 2, N)
    assert torch.equal(out.to(torch.float64).reshape(GRID // 2, 2, N), want)


@pytest.mark.parametrize("cluster", [1, 2, 4])
def test_a_multicast_box_lands_in_every_block_of_the_cluster(clk: ModuleType, cluster: int) -> None:
    import torch

    import oxide
    from oxide.runtime import synchronize

    rows, cols = GRID // cluster * BOX[0] + 5, 40  # a few rows past the last box, a row of 160 bytes
    src = random_f32(rows * cols).reshape(rows, cols)
    out = poisoned(GRID * BOX[0] * BOX[1])
    flags = torch.full((GRID // cluster,), -1, dtype=torch.int32, device="cuda")
    clk.multicast_box.launch(oxide.tma.descriptor(src, box=BOX), out, flags, grid=GRID, block=N, cluster=cluster)
    synchronize()
    got = out.to(torch.float64).reshape(GRID, BOX[0], BOX[1])
    for b in range(GRID):
        c = b // cluster
        want = src[c * BOX[0]:(c + 1) * BOX[0], :BOX[1]].to(torch.float64)
        assert torch.equal(got[b], want), b
    # every block's arrival reached block 0's barrier (else block 0 would still wait)
    assert torch.equal(flags, torch.full_like(flags, cluster))


def test_a_multicast_mask_outside_the_cluster_is_a_kernel_error_and_nothing_hangs(clk: ModuleType) -> None:
    import torch

    import oxide
    from oxide.runtime import synchronize

    src = random_f32(BOX[0] * BOX[1]).reshape(BOX)
    for mask in (7, 6):  # a block outside the cluster; 6 leaves out the issuing block 0 too
        out = poisoned(GRID * BOX[0] * BOX[1])
        with pytest.raises(oxide.KernelError, match=r"multicast_mask at .*clusterk\.py:\d+:\d+: the multicast mask mask of "
                                                    r"oxide\.tma\.load"):
            clk.multicast_mask.launch(oxide.tma.descriptor(src, box=BOX), mask, out, grid=GRID, block=N, cluster=2)
            synchronize()
    out = poisoned(GRID * BOX[0] * BOX[1])
    clk.multicast_mask.launch(oxide.tma.descriptor(src, box=BOX), 3, out, grid=GRID, block=N, cluster=2)
    synchronize()
    got = out.to(torch.float64).reshape(GRID, BOX[0], BOX[1])
    assert torch.equal(got, src.to(torch.float64).expand(GRID, *BOX))
