"""ox.cp_async on the device the tests run on (on the CPU device: the copy done when started,
committing and waiting nothing, the sanitizers seeing its loads and stores), against NumPy:
copies of every size, a zero-filled tail, and a two-stage pipeline. Kernels:
packages/cpasynckernels/cpak.py."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent / "packages" / "cpasynckernels" / "cpak.py"
rng = np.random.default_rng()


@pytest.fixture(scope="module", params=devices.backends())
def cpak(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    name = f"cpasync_{request.param}"
    yield devices.compiled_package([KERNELS], name, tmp_path_factory.mktemp(name), request.param)


@pytest.mark.parametrize("threads", [1, 7, 64])
@pytest.mark.parametrize("n_bytes", [0, 4, 8, 12, 16])
def test_copy_sizes_and_zero_fill(cpak: ModuleType, threads: int, n_bytes: int) -> None:
    src = rng.integers(-2**31, 2**31 - 1, 4 * threads, dtype=np.int64).astype(np.int32)
    out = devices.array(np.full(4 * threads, 0x5A5A5A5A, np.int32))
    cpak.copy_sizes[1, threads](devices.array(src), n_bytes, out)
    expect = src.copy()
    expect[4 * (threads - 1) + n_bytes // 4:] = 0  # the last thread's words past src_bytes
    np.testing.assert_array_equal(to_numpy(out), expect.reshape(threads, 4)[::-1].reshape(-1))


@pytest.mark.parametrize("tiles", [1, 2, 5])
def test_two_stage_pipeline(cpak: ModuleType, tiles: int) -> None:
    x = rng.standard_normal(tiles * cpak.TILE).astype(np.float32)
    out = devices.full(32, np.nan)
    cpak.pipelined_sums[1, 32](devices.array(x), tiles, out)
    expect = x.astype(np.float64).reshape(tiles, 32, 4).sum(axis=(0, 2))
    np.testing.assert_allclose(to_numpy(out), expect, rtol=1e-5, atol=1e-5)
