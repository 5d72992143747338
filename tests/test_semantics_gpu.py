"""Integer and float semantics on the GPU (docs/language.md): shifts by run-time amounts of
any size, integer division by zero and of MIN by -1, and float → int conversions of NaN, ±inf
and out-of-range values give the documented results, checked element by element against the
Python references that tests/test_semantics.py also runs the lowering against on the host."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
sys.path.insert(0, str(Path(__file__).parent / "packages" / "semantics"))
from reference import (  # noqa: E402
    division_reference, float_to_int_reference, shift_reference, special_floats,
)

rng = np.random.default_rng()
INT_TYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64]
N = 10_007


def poisoned(n: int, dtype: type):  # type: ignore[no-untyped-def]
    from oxide.runtime import DeviceArray

    fill = np.nan if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).max // 3
    return DeviceArray.from_numpy(np.full(n, fill, dtype=dtype))


def launch(kernel, *args) -> None:  # type: ignore[no-untyped-def]
    from oxide.runtime import DeviceArray, synchronize

    device_args = [DeviceArray.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[kernel.grid_for(N, 128), 128](*device_args)
    synchronize()


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_shifts_by_run_time_amounts(dtype: type) -> None:
    import semk

    info = np.iinfo(dtype)
    bits = info.bits
    x = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    amounts = [a for a in [*range(-3, 2 * bits + 3), int(info.min), int(info.max)] if info.min <= a <= info.max]
    s = np.array(amounts, dtype=dtype)[rng.integers(0, len(amounts), N)]
    left, right = poisoned(N, dtype), poisoned(N, dtype)
    launch(semk.shifts, x, s, left, right)
    np.testing.assert_array_equal(left.to_numpy(), shift_reference("<<", x, s))
    np.testing.assert_array_equal(right.to_numpy(), shift_reference(">>", x, s))


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_division_by_zero_and_min_by_minus_one(dtype: type) -> None:
    import semk

    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    x[rng.random(N) < 0.05] = info.min
    y = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    small = rng.random(N) < 0.5
    y[small] = rng.integers(max(int(info.min), -50), min(int(info.max), 50), int(small.sum()), endpoint=True).astype(dtype)
    y[rng.random(N) < 0.15] = 0
    if info.min < 0:
        y[rng.random(N) < 0.1] = -1
    q, r = poisoned(N, dtype), poisoned(N, dtype)
    launch(semk.divisions, x, y, q, r)
    np.testing.assert_array_equal(q.to_numpy(), division_reference("//", x, y))
    np.testing.assert_array_equal(r.to_numpy(), division_reference("%", x, y))


@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_float_to_int_saturates_with_nan_to_zero(src: type) -> None:
    import semk

    x = special_floats(src, N, rng)
    targets = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
    outs = [poisoned(N, t) for t in targets]
    launch(semk.to_ints, x, *outs)
    for t, out in zip(targets, outs):
        np.testing.assert_array_equal(out.to_numpy(), float_to_int_reference(x, t), err_msg=f"{np.dtype(src)} -> {np.dtype(t)}")
