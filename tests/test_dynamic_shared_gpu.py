"""On the GPU: a kernel given more dynamic shared memory than the default 48 KiB
(oxide/runtime/dynamic_shared.py raises the function's limit before the launch), on both launch
paths, up to the device's opt-in maximum; more than that is refused before anything runs."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import oxide

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
sys.path.insert(0, str(Path(__file__).parent / "packages" / "dynshared"))
rng = np.random.default_rng()
dev = devices.array
THREADS = 256


def optin_max() -> int:
    """CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN of the current device (227 KiB on an H200)."""
    from oxide.runtime import device

    drv = device.driver()
    err, dev = drv.cuDeviceGet(device.context_device(device.current_context()).ordinal)
    assert int(err) == 0
    err, value = drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                          dev)
    assert int(err) == 0
    return int(value)


def run_reversal(per_block: int, blocks: int = 5) -> None:
    """Launches reverse_segments with per_block floats of dynamic shared memory per block and
    checks every output element against NumPy (float64 for the sums)."""
    import dynshared_kernels as m

    x = rng.uniform(0.5, 1.5, blocks * per_block).astype(np.float32)  # never zero
    out = devices.full((blocks * per_block,), np.nan)
    sums = devices.full((blocks,), np.nan)
    m.reverse_segments[blocks, THREADS, None, per_block * 4](dev(x), out, sums, per_block)
    devices.synchronize()
    segments = x.reshape(blocks, per_block)
    np.testing.assert_array_equal(to_numpy(out).reshape(blocks, per_block), segments[:, ::-1])
    np.testing.assert_allclose(to_numpy(sums), segments.astype(np.float64).sum(axis=1), rtol=1e-4)


@pytest.mark.parametrize("kib", [100, 200])
def test_a_kernel_gets_more_than_48_kib_of_dynamic_shared_memory(kib: int) -> None:
    assert kib * 1024 < optin_max()
    for _ in range(3):  # the first launch (Python, which raises the limit), then the C launcher's
        run_reversal(kib * 1024 // 4)
    run_reversal(40 * 1024 // 4)  # less than before: the raised limit serves it


def test_the_device_maximum_is_given_and_one_more_is_refused() -> None:
    import dynshared_kernels as m

    most = optin_max() - m.reverse_segments.attributes["shared_bytes"]  # less the static shared memory
    run_reversal(most // 4, blocks=3)
    per_block = most // 4 + 1
    x = dev(rng.uniform(0.5, 1.5, per_block).astype(np.float32))
    out = devices.full((per_block,), np.nan)
    sums = devices.full((1,), np.nan)
    with pytest.raises(oxide.CudaError, match=rf"kernel reverse_segments asks for {per_block * 4} bytes of dynamic "
                                              rf"shared memory per block.*at most {most} bytes"):
        m.reverse_segments[1, THREADS, None, per_block * 4](x, out, sums, per_block)
    with pytest.raises(oxide.CudaError, match=r"asks for 307200 bytes"):  # 300 KiB: beyond every GPU's 227 KiB
        m.reverse_segments[1, THREADS, None, 300 * 1024](x, out, sums, 300 * 1024 // 4)
    devices.synchronize()
    assert np.isnan(to_numpy(out)).all() and np.isnan(to_numpy(sums)).all()  # nothing ran
    run_reversal(1000)  # the kernel still launches afterwards
