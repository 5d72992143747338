"""Issue 16 items 2, 3, 10, 11 on the GPU: the kernels of tests/packages/langtypes/typek.py
against NumPy / Python integers, on both backends. Inputs are fresh random non-zero values,
outputs are poisoned before each launch and every element is compared."""
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
KERNELS = Path(__file__).resolve().parent / "packages" / "langtypes" / "typek.py"
BLOCK = 128
rng = np.random.default_rng()


@pytest.fixture(scope="module", params=devices.backends())
def typek(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    arch = device.context_device(device.current_context()).arch
    name = f"langtypes_{request.param}"
    root = tmp_path_factory.mktemp(name)
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(KERNELS, pkg / "typek.py")
    if not devices.on_cpu():  # the CPU device compiles the source at the first launch
        compiled = compile_module(pkg / "typek.py", f"{name}.typek", CompileOptions(archs=(arch,), backend=request.param), root=root)
        write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    yield importlib.import_module(f"{name}.typek")
    sys.path.remove(str(root))


def dev(a: np.ndarray) -> Any:
    from oxide.runtime import DeviceArray

    return DeviceArray.from_numpy(np.ascontiguousarray(a))


def poisoned(n: int, dtype: Any) -> Any:
    return dev(np.full(n, 0x5A5A5A5A, dtype=np.int64).astype(dtype))


def nonzero_ints(n: int, low: int, high: int) -> np.ndarray:
    v = rng.integers(low, high, n, dtype=np.int64)
    v[v == 0] = 1
    return v


def test_integer_mixing_follows_the_documented_rules(typek: ModuleType) -> None:
    from oxide.runtime import synchronize

    n = 1000
    x = nonzero_ints(n, -(1 << 31), 1 << 31).astype(np.int32)
    x[:4] = [-5, 5, -1, np.iinfo(np.int32).min]
    size, count = 64, int(rng.integers(20, 40))
    outs = [poisoned(n, np.uint32), poisoned(n, np.int32), poisoned(n, np.int32), poisoned(n, np.int32),
            poisoned(n, np.int64)]
    typek.int_mix[(n + BLOCK - 1) // BLOCK, BLOCK](dev(x), np.uint32(size), np.uint32(count), *outs)
    synchronize()
    lane, flip, below, shift, total = (o.to_numpy() for o in outs)
    xs = [int(v) for v in x]
    tid = np.arange(n) % BLOCK
    np.testing.assert_array_equal(lane, (tid & (size - 1)).astype(np.uint32))
    np.testing.assert_array_equal(flip, np.array([v ^ (1 if v > 0 else 0) for v in xs], dtype=np.int32))
    np.testing.assert_array_equal(below, np.array([1 if v < count else 0 for v in xs], dtype=np.int32))
    np.testing.assert_array_equal(shift, np.array([v >> (size >> 3) for v in xs], dtype=np.int32))
    np.testing.assert_array_equal(total, np.array([sum(range(v % 16, count)) for v in xs], dtype=np.int64))


@pytest.mark.parametrize("half", [1, 3])
@pytest.mark.parametrize("scale", [False, True])
def test_compile_time_values(typek: ModuleType, half: int, scale: bool) -> None:
    from oxide.runtime import synchronize

    n = 1000
    x = rng.uniform(0.5, 2.0, n).astype(np.float32) * rng.choice([-1.0, 1.0], n).astype(np.float32)
    out = dev(np.full(n, np.nan, dtype=np.float32))
    typek.constants[(n + BLOCK - 1) // BLOCK, BLOCK](dev(x), out, half, scale)
    synchronize()
    w = half + 1
    x64 = x.astype(np.float64)
    padded = np.concatenate([np.zeros(w), x64, np.zeros(w)])
    expect = np.array([padded[i:i + 2 * w + 1].sum() for i in range(n)]) + 10.0
    expect += np.array([x64[:i % 7].sum() for i in range(n)])
    if scale:
        expect *= np.float32(0.319)
    np.testing.assert_allclose(out.to_numpy(), expect, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("reps", [1, 2, 3])
def test_small_syntax(typek: ModuleType, reps: int) -> None:
    from oxide.runtime import synchronize

    blocks = 17
    n = 64 * blocks
    x = rng.uniform(0.5, 2.0, n).astype(np.float32) * rng.choice([-1.0, 1.0], n).astype(np.float32)
    out = dev(np.full(n, np.nan, dtype=np.float32))
    typek.small_syntax[blocks, 64](dev(x), np.int32(reps), out)
    synchronize()
    chunks = x.reshape(blocks, 64)
    moved = chunks[:, ::-1] if reps % 2 else chunks
    np.testing.assert_array_equal(out.to_numpy(), (moved.reshape(n) + x).astype(np.float32))


def test_literal_locals_and_narrowing_stores(typek: ModuleType) -> None:
    from oxide.runtime import synchronize

    n = 1000
    steps = int(rng.integers(5, 20))
    x = rng.uniform(0.5, 2.0, n).astype(np.float32) * rng.choice([-1.0, 1.0], n).astype(np.float32)
    counts = dev(np.full(n, 7, dtype=np.uint8))
    out = dev(np.full(n, np.nan, dtype=np.float32))
    typek.literal_locals[(n + BLOCK - 1) // BLOCK, BLOCK](dev(x), np.int32(steps), counts, out)
    synchronize()
    x64 = x.astype(np.float64)
    windows = np.array([[x64[(i + j) % n] for j in range(steps)] for i in range(n)])
    np.testing.assert_allclose(out.to_numpy(), windows.sum(axis=1) * windows.max(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(counts.to_numpy(), np.full(n, (steps + 250) % 256, dtype=np.uint8))
