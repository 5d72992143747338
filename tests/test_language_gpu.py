"""Language features on the GPU against NumPy: Python integer semantics, math, warp
operations, atomics, half types, tensors, Constexpr, device-side errors."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
sys.path.insert(0, str(Path(__file__).parent / "packages" / "langkernels"))
rng = np.random.default_rng()


dev = devices.array


def poison(n, dtype=np.float32):  # type: ignore[no-untyped-def]
    dtype = np.dtype(dtype)
    return devices.full(n, np.nan if dtype.kind == "f" else -12345 if dtype.kind == "i" else 12345, dtype)


def test_python_floor_division_and_modulo() -> None:
    import langk

    n = 10007
    a = rng.integers(-10**12, 10**12, n)
    b = rng.integers(1, 1000, n) * rng.choice([-1, 1], n)
    q, r = poison(n, np.int64), poison(n, np.int64)
    langk.int_semantics[langk.int_semantics.grid_for(n), 256](dev(a), dev(b), q, r)
    np.testing.assert_array_equal(to_numpy(q), a // b)
    np.testing.assert_array_equal(to_numpy(r), a % b)
    fa, fb = rng.standard_normal(n) * 100, rng.standard_normal(n) * 7
    fq, fr = poison(n, np.float64), poison(n, np.float64)
    langk.float_mod[langk.float_mod.grid_for(n), 256](dev(fa), dev(fb), fq, fr)
    np.testing.assert_array_equal(to_numpy(fq), np.floor(fa / fb))
    np.testing.assert_allclose(to_numpy(fr), np.mod(fa, fb), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_functions(dtype: type) -> None:
    import langk

    n = 4099
    x = (rng.standard_normal(n) * 2).astype(dtype)
    out = poison(n, dtype)
    langk.math_fns[langk.math_fns.grid_for(n, 128), 128](dev(x), out)
    v = x.astype(np.float64)
    ref = (np.exp(v) + np.sqrt(np.abs(v)) + np.sin(v) * np.cos(v) + np.tanh(v) + np.log(np.abs(v) + 1)
           + np.vectorize(math.erf)(v) + np.abs(v) ** 1.5 + np.floor(v) + (v * v + 1))
    np.testing.assert_allclose(to_numpy(out), ref, rtol=2e-6 if dtype == np.float32 else 1e-13, atol=1e-5)


def test_warp_operations() -> None:
    import langk

    n = 32 * 37 + 5
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    outs = [poison(n, np.int32), poison(n, np.int32), poison(n, np.uint32), poison(n, np.int32)]  # ballots are u32
    langk.warp_ops[(n + 127) // 128, 128](dev(x), *outs)
    sums, maxes, ballots, shifted = (to_numpy(o) for o in outs)
    padded = np.zeros((n + 31) // 32 * 32, np.int64)
    padded[:n] = x
    warps = padded.reshape(-1, 32)
    np.testing.assert_array_equal(sums, np.repeat(warps.sum(1), 32)[:n])
    np.testing.assert_array_equal(maxes, np.repeat(warps.max(1), 32)[:n])
    bits = (warps > 0).astype(np.uint64) << np.arange(32, dtype=np.uint64)
    np.testing.assert_array_equal(ballots.view(np.uint32), np.repeat(bits.sum(1).astype(np.uint32), 32)[:n])
    lane = np.arange(n) % 32
    expect = np.where(lane < 31, padded[np.minimum(np.arange(n) + 1, len(padded) - 1)], padded[np.arange(n)])
    np.testing.assert_array_equal(shifted, expect)


def test_atomics() -> None:
    import langk

    n = 100003
    x = rng.integers(-50, 50, n).astype(np.int32)
    counters = dev(np.array([0, 1 << 30, -(1 << 30), 0, 0, 0], np.int32))
    langk.atomics[langk.atomics.grid_for(n), 256](dev(x), counters)
    c = to_numpy(counters)
    assert c[0] == x.sum() and c[1] == x.min() and c[2] == x.max()
    assert c[3] == np.bitwise_xor.reduce(x) and c[4] == 7 and c[5] == 1


def test_bf16_and_f16() -> None:
    import langk

    n = 3001
    x = devices.bf16(rng.standard_normal(n))
    y = rng.standard_normal(n).astype(np.float16)
    out = poison(n)
    langk.halves[langk.halves.grid_for(n), 256](x, dev(y), out)
    ref = (to_numpy(x).astype(np.float64) * 2) + (y.astype(np.float64) * 0.5)
    np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-2, atol=1e-2)


def test_tensors_and_index_2d() -> None:
    import langk

    rows, cols = 37, 53
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal((cols, rows)).astype(np.float32)
    out = devices.full((rows, cols), np.nan)
    langk.tensor_add[((cols + 15) // 16, (rows + 15) // 16), (16, 16)](dev(a), dev(b), out)
    np.testing.assert_allclose(to_numpy(out), a + b.T * 8, rtol=1e-6)
    # a strided (transposed) view is read through its strides
    bt = dev(b.T.copy()).T  # shape (cols, rows), non-contiguous
    out2 = devices.full((rows, cols), np.nan)
    langk.tensor_add[((cols + 15) // 16, (rows + 15) // 16), (16, 16)](dev(a), bt, out2)
    np.testing.assert_allclose(to_numpy(out2), a + b.T * 8, rtol=1e-6)


def test_constexpr_specializations() -> None:
    import langk

    n = 1001
    x = rng.standard_normal(n).astype(np.float32)
    for reps in (1, 3):
        out = poison(n)
        langk.repeat[langk.repeat.grid_for(n), 256](dev(x), reps, out)
        np.testing.assert_allclose(to_numpy(out), x.astype(np.float64) * reps, rtol=1e-6)


def test_bounds_check_raises_kernel_error_and_process_stays_usable() -> None:
    import langk
    import oxide
    from oxide.runtime import synchronize

    n = 1000
    x = dev(rng.standard_normal(n).astype(np.float32))
    out = poison(n)
    with pytest.raises(oxide.KernelError) as info:  # raised by the launch on the CPU device
        langk.checked_read[langk.checked_read.grid_for(n), 256](x, out)
        synchronize()
    err = info.value
    assert err.kernel == "checked_read" and err.index == 1000 and err.length == 1000
    assert "langk.py:" in str(err) and "x[i + 1]" in str(err)
    # the next launch works and is right
    big = dev(rng.standard_normal(n + 1).astype(np.float32))
    out = poison(n)
    langk.checked_read[langk.checked_read.grid_for(n), 256](big, out)
    synchronize()
    np.testing.assert_array_equal(to_numpy(out), to_numpy(big)[1:])


def test_assert_raises_kernel_error() -> None:
    import langk
    import oxide
    from oxide.runtime import synchronize

    x = np.abs(rng.standard_normal(513)).astype(np.float32)
    x[200] = -1.0
    out = poison(513)
    with pytest.raises(oxide.KernelError, match="inputs must be non-negative"):  # at the launch on the CPU device
        langk.asserts[3, 256](dev(x), out)
        synchronize()
