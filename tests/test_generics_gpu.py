"""Generic kernels on the GPU against NumPy in float64: per-type branches (`if T is f64:`),
`T(x)`, half precision computed in `ox.acc_type(T)` and stored back, for torch float16,
bfloat16, float32 and float64 tensors. Inputs are fresh random non-zero values, outputs are
poisoned (NaN / a sentinel) before each launch and every element is compared. The kernels are
in packages/generickernels/genk.py."""
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
from devices import to_numpy

pytestmark = pytest.mark.gpu
torch = devices.torch_or_none()  # bf16 arrays (NumPy has none), and a PyTorch reference, on the GPU
KERNELS = Path(__file__).resolve().parent / "packages" / "generickernels" / "genk.py"
rng = np.random.default_rng()

NUMPY_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
BF16 = pytest.param("bf16", marks=[pytest.mark.skipif(torch is None, reason="needs torch (bf16 arrays: NumPy has none)")])
DTYPES = ["f16", BF16, "f32", "f64"]
# a result rounded once to the type, after f32 (or f64) math: a few units of the last place
TOLERANCE = {"f16": (4e-3, 4e-3), "bf16": (2.4e-2, 2.4e-2), "f32": (1e-4, 1e-4), "f64": (1e-12, 1e-12)}


@pytest.fixture(scope="module")
def genk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    arch = device.context_device(device.current_context()).arch
    root = tmp_path_factory.mktemp("generics")
    pkg = root / "generics_gpu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(KERNELS, pkg / "genk.py")
    if not devices.on_cpu():  # the CPU device compiles the source at the first launch
        compiled = compile_module(pkg / "genk.py", "generics_gpu.genk", CompileOptions(archs=(arch,)), root=root)
        write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    yield importlib.import_module("generics_gpu.genk")
    sys.path.remove(str(root))


def nonzero(shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    x = rng.standard_normal(shape) * scale
    return np.where(np.abs(x) < 1e-3, 0.5, x)


def to_device(a: np.ndarray, name: str):  # type: ignore[no-untyped-def]
    if name == "bf16":
        return devices.bf16(a)
    return devices.array(a.astype(NUMPY_DTYPES[name]))


def as_f64(t) -> np.ndarray:  # type: ignore[no-untyped-def]
    if torch is not None and isinstance(t, torch.Tensor):
        return t.to(torch.float64).cpu().numpy()
    return to_numpy(t).astype(np.float64)


def poisoned(shape: tuple[int, ...], name: str):  # type: ignore[no-untyped-def]
    if name == "bf16":
        return devices.bf16(np.full(shape, np.nan))
    return devices.full(shape, np.nan, NUMPY_DTYPES[name])


@pytest.mark.parametrize("name", DTYPES)
def test_each_instance_takes_its_own_branch(genk: ModuleType, name: str) -> None:
    n = 3001
    x = to_device(nonzero((n,)), name)
    out = poisoned((n,), name)
    genk.per_type[genk.per_type.grid_for(n), 256](x, out)
    xs = as_f64(x)  # the inputs as the kernel saw them (rounded to the type)
    if name == "f64":
        ref = xs * 2.0 + 1.0
    elif name in ("f16", "bf16"):
        ref = np.exp(xs) + 0.25
    else:
        ref = xs * 4.0 - 3.0
    rtol, atol = TOLERANCE[name]
    np.testing.assert_allclose(as_f64(out), ref, rtol=rtol, atol=atol)


def test_an_integer_instance_and_a_float_instance_of_one_kernel(genk: ModuleType) -> None:
    n = 2049
    xi = rng.integers(-10**6, 10**6, n).astype(np.int32)
    xi[xi == 0] = 7
    out_i = devices.full((n,), -12345, np.int32)
    genk.int_or_float[genk.int_or_float.grid_for(n), 256](devices.array(xi), out_i)
    np.testing.assert_array_equal(to_numpy(out_i), (xi >> 1) ^ 5)
    xf = nonzero((n,)).astype(np.float32)
    out_f = poisoned((n,), "f32")
    genk.int_or_float[genk.int_or_float.grid_for(n), 256](devices.array(xf), out_f)
    np.testing.assert_allclose(as_f64(out_f), xf.astype(np.float64) * 0.5 + 5, rtol=1e-6, atol=1e-6)


def launch_2d(kernel, rows: int, cols: int, *args) -> None:  # type: ignore[no-untyped-def]
    kernel[((cols + 31) // 32, (rows + 7) // 8), (32, 8)](*args)


@pytest.mark.parametrize("name", DTYPES)
def test_layer_norm_against_float64(genk: ModuleType, name: str) -> None:
    rows, cols = 67, 96
    x = to_device(nonzero((rows, cols), 3.0) + 1.5, name)
    w = to_device(nonzero((cols,)), name)
    b = to_device(nonzero((cols,)), name)
    out = poisoned((rows, cols), name)
    eps = 1e-5
    launch_2d(genk.layer_norm, rows, cols, x, w, b, eps, out)
    xs, ws, bs = as_f64(x), as_f64(w), as_f64(b)
    mean = xs.mean(axis=1, keepdims=True)
    var = ((xs - mean) ** 2).mean(axis=1, keepdims=True)
    ref = (xs - mean) / np.sqrt(var + eps) * ws + bs
    rtol, atol = TOLERANCE[name]
    np.testing.assert_allclose(as_f64(out), ref, rtol=rtol, atol=atol)
    # and torch's own layer norm, for the half types computed the same way (f32 inside)
    if name != "f64" and torch is not None and not devices.on_cpu():
        ref_torch = torch.nn.functional.layer_norm(x.float(), (cols,), w.float(), b.float(), eps)
        np.testing.assert_allclose(as_f64(out), ref_torch.double().cpu().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", DTYPES)
def test_softmax_against_float64(genk: ModuleType, name: str) -> None:
    rows, cols = 45, 130
    x = to_device(nonzero((rows, cols), 2.0), name)
    out = poisoned((rows, cols), name)
    launch_2d(genk.softmax, rows, cols, x, out)
    xs = as_f64(x)
    e = np.exp(xs - xs.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    rtol, atol = TOLERANCE[name]
    got = as_f64(out)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol / 10)
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("name", DTYPES)
def test_rms_norm_through_a_generic_device_function(genk: ModuleType, name: str) -> None:
    rows, cols = 33, 70
    x = to_device(nonzero((rows, cols), 2.0), name)
    out = poisoned((rows, cols), name)
    launch_2d(genk.rms_norm, rows, cols, x, out)
    xs = as_f64(x)
    ref = xs / np.sqrt((xs * xs).mean(axis=1, keepdims=True) + 1e-6)
    rtol, atol = TOLERANCE[name]
    np.testing.assert_allclose(as_f64(out), ref, rtol=rtol, atol=atol)
