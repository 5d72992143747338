"""The CMake fixture on a GPU: a pybind11 module launches a Python kernel (linked with a CUDA
C++ device library CMake built) through oxide/launch.hpp, and the Python runtime launches the
same kernel; both match NumPy."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from test_cmake import _build, _cmake_missing

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("C++ host code launching through launch.hpp (needs a GPU)")]


def _device_arch() -> str:
    from cuda.bindings import driver

    driver.cuInit(0)
    _, dev = driver.cuDeviceGet(0)
    _, major = driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    _, minor = driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    return f"sm_{major}{minor}"


SCRIPT = r'''
import numpy as np
from oxide.runtime import DeviceArray, synchronize
import cmkern._native as native
from cmkern.ops import gelu_scaled

n = 100_003
x = np.random.default_rng(7).uniform(-4.0, 4.0, n).astype(np.float32)
x64 = x.astype(np.float64)
want = 2.0 * 0.5 * x64 * (1.0 + np.tanh(0.7978845608 * (x64 + 0.044715 * x64 ** 3)))
dx = DeviceArray.from_numpy(x)
for how in ("cpp", "python"):
    out = DeviceArray.from_numpy(np.full(n, np.nan, np.float32))
    if how == "cpp":
        synchronize()
        native.gelu_scaled(dx.__cuda_array_interface__["data"][0], out.__cuda_array_interface__["data"][0], n, 0)
    else:
        gelu_scaled[(n + 255) // 256, 256](dx, out)
    synchronize()
    got = out.to_numpy().astype(np.float64)
    err = np.max(np.abs(got - want))
    assert np.all(np.isfinite(got)), how
    assert err < 1e-4, (how, err)
    print(how, "ok", err)
'''


def test_cpp_launches_the_python_kernel(tmp_path: Path) -> None:
    reason = _cmake_missing()
    if reason is not None:
        pytest.skip(reason)
    result, out = _build(tmp_path, False, f"oxide.arch={_device_arch()}")
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    (wheel,) = out.glob("cmake_kernels-0.1.0-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    check = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=site, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(" ok ") == 2, check.stdout
