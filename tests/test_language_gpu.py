"""Language features on the GPU against NumPy: Python integer semantics, math, warp
operations, atomics, half types, tensors, Constexpr, device-side errors."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("uses torch CUDA tensors (not yet written with tests/devices.py)")]
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parent / "packages" / "langkernels"))
rng = np.random.default_rng()


def dev(a):  # type: ignore[no-untyped-def]
    return torch.as_tensor(np.ascontiguousarray(a), device="cuda")


def poison(n, dtype=torch.float32):  # type: ignore[no-untyped-def]
    if dtype.is_floating_point:
        return torch.full((n,), float("nan"), dtype=dtype, device="cuda")
    return torch.full((n,), -12345, dtype=dtype, device="cuda")


def test_python_floor_division_and_modulo() -> None:
    import langk

    n = 10007
    a = rng.integers(-10**12, 10**12, n)
    b = rng.integers(1, 1000, n) * rng.choice([-1, 1], n)
    q, r = poison(n, torch.int64), poison(n, torch.int64)
    langk.int_semantics[langk.int_semantics.grid_for(n), 256](dev(a), dev(b), q, r)
    np.testing.assert_array_equal(q.cpu().numpy(), a // b)
    np.testing.assert_array_equal(r.cpu().numpy(), a % b)
    fa, fb = rng.standard_normal(n) * 100, rng.standard_normal(n) * 7
    fq, fr = poison(n, torch.float64), poison(n, torch.float64)
    langk.float_mod[langk.float_mod.grid_for(n), 256](dev(fa), dev(fb), fq, fr)
    np.testing.assert_array_equal(fq.cpu().numpy(), np.floor(fa / fb))
    np.testing.assert_allclose(fr.cpu().numpy(), np.mod(fa, fb), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_math_functions(dtype: type) -> None:
    import langk
    from scipy.special import erf  # type: ignore[import-untyped]

    n = 4099
    x = (rng.standard_normal(n) * 2).astype(dtype)
    out = poison(n, torch.float32 if dtype == np.float32 else torch.float64)
    langk.math_fns[langk.math_fns.grid_for(n, 128), 128](dev(x), out)
    v = x.astype(np.float64)
    ref = (np.exp(v) + np.sqrt(np.abs(v)) + np.sin(v) * np.cos(v) + np.tanh(v) + np.log(np.abs(v) + 1)
           + erf(v) + np.abs(v) ** 1.5 + np.floor(v) + (v * v + 1))
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=2e-6 if dtype == np.float32 else 1e-13, atol=1e-5)


def test_warp_operations() -> None:
    import langk

    n = 32 * 37 + 5
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    outs = [poison(n, torch.int32) for _ in range(4)]
    outs[2] = outs[2].view(torch.uint32)  # ballots are u32
    langk.warp_ops[(n + 127) // 128, 128](dev(x), *outs)
    sums, maxes, ballots, shifted = (o.view(torch.int32).cpu().numpy() for o in outs)
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
    c = counters.cpu().numpy()
    assert c[0] == x.sum() and c[1] == x.min() and c[2] == x.max()
    assert c[3] == np.bitwise_xor.reduce(x) and c[4] == 7 and c[5] == 1


def test_bf16_and_f16() -> None:
    import langk

    n = 3001
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(n, device="cuda", dtype=torch.float16)
    out = poison(n)
    langk.halves[langk.halves.grid_for(n), 256](x, y, out)
    ref = (x.float().cpu().numpy() * 2) + (y.float().cpu().numpy() * 0.5)
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=1e-2, atol=1e-2)


def test_tensors_and_index_2d() -> None:
    import langk

    rows, cols = 37, 53
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal((cols, rows)).astype(np.float32)
    out = torch.full((rows, cols), float("nan"), device="cuda")
    langk.tensor_add[((cols + 15) // 16, (rows + 15) // 16), (16, 16)](dev(a), dev(b), out)
    np.testing.assert_allclose(out.cpu().numpy(), a + b.T * 8, rtol=1e-6)
    # a strided (transposed) view is read through its strides
    bt = dev(b.T.copy()).t()  # shape (cols, rows), non-contiguous
    out2 = torch.full((rows, cols), float("nan"), device="cuda")
    langk.tensor_add[((cols + 15) // 16, (rows + 15) // 16), (16, 16)](dev(a), bt, out2)
    np.testing.assert_allclose(out2.cpu().numpy(), a + b.T * 8, rtol=1e-6)


def test_constexpr_specializations() -> None:
    import langk

    n = 1001
    x = rng.standard_normal(n).astype(np.float32)
    for reps in (1, 3):
        out = poison(n)
        langk.repeat[langk.repeat.grid_for(n), 256](dev(x), reps, out)
        np.testing.assert_allclose(out.cpu().numpy(), x.astype(np.float64) * reps, rtol=1e-6)


def test_bounds_check_raises_kernel_error_and_process_stays_usable() -> None:
    import langk
    import oxide
    from oxide.runtime import synchronize

    n = 1000
    x = dev(rng.standard_normal(n).astype(np.float32))
    out = poison(n)
    langk.checked_read[langk.checked_read.grid_for(n), 256](x, out)
    with pytest.raises(oxide.KernelError) as info:
        synchronize()
    err = info.value
    assert err.kernel == "checked_read" and err.index == 1000 and err.length == 1000
    assert "langk.py:" in str(err) and "x[i + 1]" in str(err)
    # the next launch works and is right
    big = dev(rng.standard_normal(n + 1).astype(np.float32))
    out = poison(n)
    langk.checked_read[langk.checked_read.grid_for(n), 256](big, out)
    synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), big.cpu().numpy()[1:])


def test_assert_raises_kernel_error() -> None:
    import langk
    import oxide
    from oxide.runtime import synchronize

    x = np.abs(rng.standard_normal(513)).astype(np.float32)
    x[200] = -1.0
    out = poison(513)
    langk.asserts[3, 256](dev(x), out)
    with pytest.raises(oxide.KernelError, match="inputs must be non-negative"):
        synchronize()
