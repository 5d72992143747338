"""N-d DisjointTensor writes on the GPU against NumPy in float64: a 3-D tensor written at
thread.index_3d(), rows indexed by block.idx.y (and the launch precondition block.dim.y == 1
refusing a launch whose threads would collide). Inputs random non-zero, outputs poisoned, every
element checked. Kernels in packages/disjointkernels/dtk.py."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent / "packages" / "disjointkernels" / "dtk.py"
rng = np.random.default_rng()


@pytest.fixture(scope="module")
def dtk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("disjoint")
    yield devices.compiled_package([KERNELS], "disjoint_gpu", root)
    sys.path.remove(str(root))


def nonzero(shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape)
    return np.where(np.abs(x) < 1e-3, 0.5, x)


def test_a_3d_tensor_written_at_index_3d(dtk: ModuleType) -> None:
    depth, rows, cols = 5, 37, 91
    x = nonzero((depth, rows, cols))
    out = devices.full((depth, rows, cols), np.nan, np.float64)
    block = (32, 2, 2)  # 128 threads: the kernel's launch_bounds (2 * BLOCK)
    grid = ((cols + 31) // 32, (rows + 1) // 2, (depth + 1) // 2)
    dtk.scale3[grid, block](devices.array(x), out)
    d, r, c = np.meshgrid(np.arange(depth), np.arange(rows), np.arange(cols), indexing="ij")
    ref = x * 2.0 + (d * 10000 + r * 100 + c)
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-15, atol=0)
    # a strided (permuted) input is read through its strides
    xt = devices.permuted(devices.array(x.transpose(2, 0, 1)), (1, 2, 0))
    out2 = devices.full((depth, rows, cols), np.nan, np.float64)
    dtk.scale3[grid, block](xt, out2)
    np.testing.assert_allclose(to_numpy(out2), ref, rtol=1e-15, atol=0)


def test_rows_from_block_idx(dtk: ModuleType) -> None:
    rows, cols = 29, 300
    x = nonzero((rows, cols)).astype(np.float32)
    bias = nonzero((cols,)).astype(np.float32)
    out = devices.full((rows, cols), np.nan)
    dtk.add_rows[((cols + 127) // 128, rows), 128](devices.array(x), devices.array(bias), out)
    ref = x.astype(np.float64) + bias.astype(np.float64)
    np.testing.assert_allclose(to_numpy(out).astype(np.float64), ref, rtol=1e-6, atol=1e-6)


def test_a_launch_whose_threads_would_collide_is_refused(dtk: ModuleType) -> None:
    import oxide

    rows, cols = 8, 64
    x = devices.array(nonzero((rows, cols)).astype(np.float32))
    bias = devices.array(nonzero((cols,)).astype(np.float32))
    out = devices.full((rows, cols), np.nan)
    with pytest.raises(oxide.KernelError, match=r"block\.dim\.y == 1"):
        dtk.add_rows[(1, rows), (64, 2)](x, bias, out)  # two threads per element
    devices.synchronize()
    assert np.isnan(to_numpy(out)).all()  # refused before the launch: nothing written
    with pytest.raises(oxide.KernelError, match=r"grid\.dim\.y"):
        dtk.add_rows[(1, rows + 1), 64](x, bias, out)  # the row fact the proof relies on
