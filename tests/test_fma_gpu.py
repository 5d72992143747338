"""FMA contraction on the GPU (passes/fma.py, [tool.oxide] fma), both backends: with c = -fl(a*b)
a fused a * b + c is the rounding error of the product (exactly representable, mostly not 0),
an unfused one is exactly 0. Inputs random, outputs poisoned with NaN before the launch. The
kernel is tests/packages/fmakernels/fmak.py."""
from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent / "packages" / "fmakernels" / "fmak.py"
BLOCK = 128
N = 4099
rng = np.random.default_rng()


@pytest.fixture(scope="module", params=[(backend, fma) for backend in devices.backends() for fma in (True, False)],
                ids=lambda p: f"{p[0]}-fma={p[1]}")
def fmak(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, bool]]:
    """fmak.py compiled with ``fma`` on or off: for the GPU here, with each backend; on the CPU
    device (which compiles the source at the first launch, with its project's options) in a
    project whose pyproject.toml says ``[tool.oxide] fma``."""
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    backend, fma = request.param
    name = f"fma_{backend}_{'on' if fma else 'off'}"
    root = tmp_path_factory.mktemp(name)
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(KERNELS, pkg / "fmak.py")
    if devices.on_cpu():
        (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "0"\n\n'
                                             f'[tool.oxide]\nfma = {str(fma).lower()}\n')
        sys.path.insert(0, str(root))
        yield importlib.import_module(f"{name}.fmak"), fma
        sys.path.remove(str(root))
        return
    arch = device.context_device(device.current_context()).arch
    options = CompileOptions(archs=(arch,), backend=backend, fma=fma)
    write_module_artifacts(compile_module(pkg / "fmak.py", f"{name}.fmak", options, root=root), pkg)
    sys.path.insert(0, str(root))
    yield importlib.import_module(f"{name}.fmak"), fma
    sys.path.remove(str(root))


def dev(a: np.ndarray) -> Any:
    from oxide.runtime import DeviceArray

    return DeviceArray.from_numpy(np.ascontiguousarray(a))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_times_b_plus_c_rounds_once_or_twice(fmak: tuple[ModuleType, bool], dtype: type) -> None:
    from oxide.runtime import synchronize

    module, fma = fmak
    a = (rng.random(N) + 0.5).astype(dtype) * dtype(rng.choice([-1.0, 1.0], N))
    b = (rng.random(N) + 0.5).astype(dtype)
    c = -(a * b)  # -fl(a*b), rounded in dtype by NumPy
    out = dev(np.full(N, np.nan, dtype))
    module.muladd[(N + BLOCK - 1) // BLOCK, BLOCK](dev(a), dev(b), dev(c), out)
    synchronize()
    got = out.to_numpy()
    if fma:
        # the exact a*b - fl(a*b) is representable in dtype: a fused result equals it exactly
        exact = np.array([float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))) for x, y, z in zip(a, b, c)],
                         dtype)
        np.testing.assert_array_equal(got, exact)
        assert np.count_nonzero(got) > N // 2  # most products are inexact
    else:
        np.testing.assert_array_equal(got, np.zeros(N, dtype))
