"""Struct and vector kernel parameters on the GPU: the kernels of tests/packages/structparams/
against NumPy in float64, on fresh random non-zero inputs and parameters, outputs poisoned before
each launch, every element checked, with both backends."""
from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = pytest.mark.gpu
PACKAGE = Path(__file__).resolve().parent / "packages" / "structparams"
BLOCK = 128
N = 5 * BLOCK + 37  # a partial last block
rng = np.random.default_rng()
POISON = np.float32(-12345.5)


@pytest.fixture(scope="module", params=devices.backends())
def structk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    backend = request.param
    root = tmp_path_factory.mktemp(f"structk_{backend}")
    arch = device.context_device(device.current_context()).arch
    pkg_name = f"structk_{backend}"
    pkg = root / pkg_name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(PACKAGE / "structk.py", pkg / "structk.py")
    if not devices.on_cpu():  # the CPU device compiles the source at the first launch
        compiled = compile_module(pkg / "structk.py", f"{pkg_name}.structk", CompileOptions(archs=(arch,), backend=backend),
                                  root=root)
        write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(f"{pkg_name}.structk")
    finally:
        sys.path.remove(str(root))


def dev(a: np.ndarray) -> Any:
    from oxide.runtime import DeviceArray

    return DeviceArray.from_numpy(np.ascontiguousarray(a))


def values(n: int) -> np.ndarray:
    """Random non-zero float32 values in ±[0.5, 2)."""
    return (rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)).astype(np.float32)


def run(kernel: Any, *args: Any) -> np.ndarray:
    """Launches ``kernel`` over N elements with ``args`` then a poisoned output; its result."""
    from oxide.runtime import synchronize

    out = dev(np.full(N, POISON, np.float32))
    kernel[(N + BLOCK - 1) // BLOCK, BLOCK](*args, out)
    synchronize()
    got: np.ndarray = out.to_numpy()
    return got


def assert_close(got: np.ndarray, exact: np.ndarray, abs_terms: np.ndarray, ops: int) -> None:
    """float32 results against float64 ones: each of ``ops`` roundings errs by at most 2**-24
    of the magnitudes involved (``abs_terms``, the sum of the terms' absolute values)."""
    assert got.shape == exact.shape
    bound = ops * 2.0**-23 * abs_terms + 1e-6
    bad = ~(np.abs(got.astype(np.float64) - exact) <= bound)  # a NaN or the poison fails too
    assert not bad.any(), (np.flatnonzero(bad)[:10], got[bad][:10], exact[bad][:10])


def test_a_struct_with_a_vector_field_passed_by_value(structk: ModuleType) -> None:
    x = values(N)
    scale, offset, sx, sy = (float(v) for v in values(4))
    x64 = x.astype(np.float64)
    exact = x64 * scale + offset + sx * x64 * x64 - sy
    terms = np.abs(x64 * scale) + abs(offset) + np.abs(sx * x64 * x64) + abs(sy)
    t = structk.Affine(scale, offset, structk.ox.f32x2(sx, sy))
    assert_close(run(structk.affine, t, dev(x)), exact, terms, 6)
    # the same as a NumPy record of the struct's fields
    record = np.array([(scale, offset, (sx, sy))],
                      dtype=np.dtype([("scale", "<f4"), ("offset", "<f4"), ("shift", "<f4", (2,))]))[0]
    assert_close(run(structk.affine, record, dev(x)), exact, terms, 6)


def test_a_nested_struct_with_int_and_bool_fields(structk: ModuleType) -> None:
    x = values(N)
    x64 = x.astype(np.float64)
    scale, offset, sx, sy = (float(np.float32(v)) for v in values(4))
    tag = int(rng.integers(-50, 50)) or 7
    n = int(rng.integers(1, 40))
    on = structk.Tagged(structk.Affine(scale, offset, (sx, sy)), tag, True)
    exact = x64 * scale + offset + sx - sy + tag * n
    terms = np.abs(x64 * scale) + abs(offset) + abs(sx) + abs(sy) + abs(tag * n)
    assert_close(run(structk.tagged, on, n, dev(x)), exact, terms, 6)
    off = structk.Tagged(structk.Affine(scale, offset, (sx, sy)), tag, False)
    assert_close(run(structk.tagged, off, n, dev(x)), n - x64, n + np.abs(x64), 2)


def test_an_f32x4_passed_by_value(structk: ModuleType) -> None:
    x = values(N)
    x64 = x.astype(np.float64)
    v = [float(np.float32(c)) for c in values(4)]
    exact = ((v[0] * x64 + v[1]) * x64 + v[2]) * x64 + v[3]
    terms = np.abs(v[0] * x64**3) + np.abs(v[1] * x64**2) + np.abs(v[2] * x64) + abs(v[3])
    assert_close(run(structk.cubic, structk.ox.f32x4(*v), dev(x)), exact, terms, 8)
    assert_close(run(structk.cubic, np.array(v, dtype=np.float32), dev(x)), exact, terms, 8)


def test_vectors_and_a_small_scalar_between_them_keep_their_slots(structk: ModuleType) -> None:
    x = values(N)
    x64 = x.astype(np.float64)
    w = (int(rng.integers(2, 30)), int(rng.integers(-1000, 1000)) or 11)
    b = int(rng.integers(1, 255))
    v = [float(np.float32(c)) for c in values(4)]
    exact = x64 * w[0] + (w[1] - b) + v[0] - v[1] + v[2] - v[3]
    terms = np.abs(x64 * w[0]) + abs(w[1] - b) + sum(abs(c) for c in v)
    assert_close(run(structk.mixed, w, np.uint8(b), tuple(v), dev(x)), exact, terms, 8)
