"""Generic C++ externs on the GPU against NumPy in float64: a C++ template instantiated per
TypeVar constraint (f16, f32, f64) and a name-pattern extern (f32, f64), called from generic
Python kernels. Inputs random non-zero, outputs poisoned, every element checked. Kernels in
packages/genericextern/ (genx.py and csrc/scale.cu). On the CPU device (tests/devices.py) the C++
is compiled by the host's C++ compiler (oxide_build/backends/cpu/cxx.py)."""
from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu]
PACKAGE = Path(__file__).resolve().parent / "packages" / "genericextern"
rng = np.random.default_rng()
DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
TOLERANCE = {"f16": 4e-3, "f32": 1e-5, "f64": 1e-12}


@pytest.fixture(scope="module")
def genx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("genx")
    pkg = root / "genx_gpu"
    shutil.copytree(PACKAGE, pkg)
    (pkg / "__init__.py").write_text("")
    if not devices.on_cpu():  # the CPU device compiles the module (and its C++) at the first launch
        from oxide.runtime import device
        from oxide_build.compile import CompileOptions, compile_module
        from oxide_build.package.artifacts import write_module_artifacts

        arch = device.context_device(device.current_context()).arch
        compiled = compile_module(pkg / "genx.py", "genx_gpu.genx", CompileOptions(archs=(arch,)), root=root)
        write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    yield importlib.import_module("genx_gpu.genx")
    sys.path.remove(str(root))


def nonzero(n: int) -> np.ndarray:
    x = rng.standard_normal(n) * 2
    return np.where(np.abs(x) < 1e-3, 0.5, x)


def on_device(a: np.ndarray, name: str):  # type: ignore[no-untyped-def]
    return devices.array(a.astype(DTYPES[name]))


def as_f64(t) -> np.ndarray:  # type: ignore[no-untyped-def]
    devices.synchronize()
    return devices.to_numpy(t).astype(np.float64)


def poisoned(n: int, dtype: type) -> object:
    return devices.full(n, np.nan, dtype)


@pytest.mark.parametrize("name", list(DTYPES))
def test_a_cpp_template_per_type(genx: ModuleType, name: str) -> None:
    n = 4099
    x, a = on_device(nonzero(n), name), on_device(nonzero(n), name)
    out = poisoned(n, DTYPES[name])
    genx.affine[genx.affine.grid_for(n), 256](x, a, out)
    ref = as_f64(x) * as_f64(a) + 1.0
    tol = TOLERANCE[name]
    np.testing.assert_allclose(as_f64(out), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(DTYPES))
def test_a_template_reading_a_view(genx: ModuleType, name: str) -> None:
    n = 1531
    x = on_device(nonzero(n) + 3.0, name)
    out = poisoned(n, np.float32)
    genx.centered[genx.centered.grid_for(n), 256](x, out)
    xs = as_f64(x)
    np.testing.assert_allclose(as_f64(out), xs - xs.mean(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["f32", "f64"])
def test_a_name_pattern_per_type(genx: ModuleType, name: str) -> None:
    n = 2050
    x = on_device(nonzero(n), name)
    out = poisoned(n, DTYPES[name])
    genx.doubled[genx.doubled.grid_for(n), 256](x, out)
    tol = TOLERANCE[name]
    np.testing.assert_allclose(as_f64(out), as_f64(x) * 2.0 + 0.5, rtol=tol, atol=tol)


def test_a_plain_extern_over_half(genx: ModuleType) -> None:
    n = 4099
    x, a = on_device(nonzero(n), "f16"), on_device(nonzero(n), "f16")
    out = poisoned(n, np.float16)
    genx.half_affine[genx.half_affine.grid_for(n), 256](x, a, 0.75, out)
    ref = as_f64(x) * as_f64(a) + 0.75
    np.testing.assert_allclose(as_f64(out), ref, rtol=2e-3, atol=2e-3)
