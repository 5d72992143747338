"""The CUDA intrinsics of docs/language.md on the GPU against NumPy / Python: bit operations,
bit casts, per-call fast math, timers, volatile access, f16/bf16 atomics, partial-mask warp
operations, grid-wide sync and print(). Inputs are fresh random non-zero values, outputs are
poisoned before each launch and every element is checked. Kernels: packages/langintr/."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
torch = devices.torch_or_none()  # the GPU's streams of test_grid_sync_many_rounds_across_blocks
sys.path.insert(0, str(Path(__file__).parent / "packages" / "langintr"))
rng = np.random.default_rng()
BLOCK = 128


dev = devices.array


def poison(n, dtype=np.float32):  # type: ignore[no-untyped-def]
    if dtype == "bf16":
        return devices.bf16(np.full(n, np.nan))
    dtype = np.dtype(dtype)
    return dev(np.full(n, np.nan if dtype.kind == "f" else -12345 if dtype.kind == "i" else 12345, dtype))


def host(t):  # type: ignore[no-untyped-def]
    devices.synchronize()
    return to_numpy(t)


def random_u32(n: int) -> np.ndarray:
    return rng.integers(1, 2**32, n, dtype=np.uint64).astype(np.uint32)


def test_ffs_byte_perm_funnel_shifts() -> None:
    import intrk

    n = 3001
    x, y = random_u32(n), random_u32(n)
    x[:4] = [0, 1, 0x80000000, 0xFFFFFFFF]                 # ffs of 0 is 0
    x[4:36] = np.uint32(1) << np.arange(32, dtype=np.uint32)
    s = rng.integers(0, 70, n, dtype=np.uint32)               # shifts beyond 32 too (mod 32 / clamp)
    s[:300] = random_u32(300)                                 # byte_perm selectors over all bits
    x64 = rng.integers(1, 2**63, n, dtype=np.int64).astype(np.uint64) << rng.integers(0, 40, n, dtype=np.uint64)
    x64[:2] = [0, 1 << 63]
    outs = [poison(n, np.int32), poison(n, np.int32)] + [poison(n, np.uint32) for _ in range(5)]
    intrk.bit_ops[(n + BLOCK - 1) // BLOCK, BLOCK](dev(x), dev(y), dev(s), dev(x64), *outs)
    ffs32, ffs64, perm, shl, shlc, shr, shrc = (host(o) for o in outs)

    def ffs(v: int) -> int:
        return (v & -v).bit_length()

    def byte_perm(a: int, b: int, sel: int) -> int:
        src = a | (b << 32)
        out = 0
        for k in range(4):
            nib = (sel >> (4 * k)) & 0xF
            byte = (src >> (8 * (nib & 7))) & 0xFF
            if nib & 8:  # PTX prmt (what nvcc makes of __byte_perm): replicate the byte's sign bit
                byte = 0xFF if byte & 0x80 else 0
            out |= byte << (8 * k)
        return out

    xs, ys, ss = (int(v) for v in x), (int(v) for v in y), (int(v) for v in s)
    ref = {"ffs32": [], "ffs64": [], "perm": [], "shl": [], "shlc": [], "shr": [], "shrc": []}  # type: dict[str, list[int]]
    for a, b, k, w in zip(xs, ys, ss, (int(v) for v in x64)):
        ref["ffs32"].append(ffs(a))
        ref["ffs64"].append(ffs(w))
        ref["perm"].append(byte_perm(a, b, k))
        wide = (b << 32) | a
        ref["shl"].append(((wide << (k & 31)) >> 32) & 0xFFFFFFFF)
        ref["shlc"].append(((wide << min(k, 32)) >> 32) & 0xFFFFFFFF)
        ref["shr"].append((wide >> (k & 31)) & 0xFFFFFFFF)
        ref["shrc"].append((wide >> min(k, 32)) & 0xFFFFFFFF)
    np.testing.assert_array_equal(ffs32, ref["ffs32"])
    np.testing.assert_array_equal(ffs64, ref["ffs64"])
    np.testing.assert_array_equal(shl, ref["shl"])
    np.testing.assert_array_equal(shlc, ref["shlc"])
    np.testing.assert_array_equal(shr, ref["shr"])
    np.testing.assert_array_equal(shrc, ref["shrc"])
    np.testing.assert_array_equal(perm, ref["perm"])


def test_bit_casts() -> None:
    import intrk

    n = 2001
    f = (rng.standard_normal(n) * 1e3).astype(np.float32)
    d = rng.standard_normal(n) * 1e100
    h = (rng.standard_normal(n) * 100).astype(np.float16)
    f[:3], d[:3], h[:3] = [np.inf, -0.0, 1e-40], [-np.inf, 5e-324, -0.0], [np.inf, -0.0, 6e-8]
    outs = [poison(n, np.int32), poison(n), poison(n, np.int64), poison(n, np.float64),
            poison(n, np.int16), poison(n, np.float16)]
    intrk.bit_casts[(n + BLOCK - 1) // BLOCK, BLOCK](dev(f), dev(d), dev(h), *outs)
    f_bits, f_back, d_bits, d_back, h_bits, h_back = (host(o) for o in outs)
    np.testing.assert_array_equal(f_bits, f.view(np.int32))
    np.testing.assert_array_equal(f_back.view(np.uint32), (-f).view(np.uint32))
    np.testing.assert_array_equal(d_bits, d.view(np.int64))
    np.testing.assert_array_equal(d_back.view(np.uint64), (-d).view(np.uint64))
    np.testing.assert_array_equal(h_bits, h.view(np.int16))
    np.testing.assert_array_equal(h_back.view(np.uint16), (-h).view(np.uint16))


def test_pair_bit_casts() -> None:
    """bitcast between a pair of halves (f16x2, bf16x2) and a 32-bit word: lane 0 the low half."""
    import intrk

    n = 2001
    x = (rng.standard_normal(2 * n) * 100).astype(np.float32)
    w = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    outs = [poison(n, np.int32), poison(n, np.uint32), poison(n), poison(n)]
    intrk.pair_casts[(n + BLOCK - 1) // BLOCK, BLOCK](dev(x), dev(w), *outs)
    h_word, b_word, h_back, b_back = (host(o) for o in outs)
    np.testing.assert_array_equal(h_word.view(np.int32), x.astype(np.float16).view(np.int32))
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # to nearest even
    np.testing.assert_array_equal(b_word.view(np.uint32), rounded.view(np.uint32))
    halves = w.view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(h_back, halves[0::2] * 2 + halves[1::2])
    words = w.view(np.uint16).astype(np.uint32) << 16
    bf = words.view(np.float32)
    np.testing.assert_array_equal(b_back, bf[0::2] * 2 + bf[1::2])


def within_relative(actual: np.ndarray, desired: np.ndarray, rtol: np.ndarray) -> None:
    bad = ~(np.abs(actual - desired) <= rtol * np.abs(desired))
    assert not bad.any(), f"{bad.sum()} elements out of bounds, first: {actual[bad][:5]} vs {desired[bad][:5]}"


def test_fast_math_per_call() -> None:
    """Within the documented error bounds of CUDA's __expf, __logf, __sinf, ... (CUDA C++
    Programming Guide, "Intrinsic Functions"); rcp (__frcp_rn) and saturate are exact."""
    import intrk

    n = 4097
    x = rng.uniform(0.05, 50.0, n).astype(np.float32)
    y = rng.uniform(-8.0, 8.0, n).astype(np.float32)
    y[:4] = [-3.0, 0.5, 1.5, 2.0]  # saturate's edges: below 0, inside, above 1
    ang = rng.uniform(-np.pi, np.pi, n).astype(np.float32)
    outs = [poison(n) for _ in range(10)]
    intrk.fast_math[(n + BLOCK - 1) // BLOCK, BLOCK](dev(x), dev(y), dev(ang), *outs)
    exp_, log_, sin_, cos_, div_, pow_, rcp_, sat_, log2_, exp10_ = (host(o).astype(np.float64) for o in outs)
    xv, yv, av = x.astype(np.float64), y.astype(np.float64), ang.astype(np.float64)
    ulp = np.spacing(np.float32(1)).astype(np.float64)
    # the bound of __expf grows with |x| (elementwise), which assert_allclose's scalar rtol cannot say
    within_relative(exp_, np.exp(yv), (2 + np.floor(np.abs(1.2 * yv)) + 3) * ulp)
    np.testing.assert_allclose(log_, np.log(xv), atol=2.0 ** -21.41 * 2, rtol=4 * ulp)
    np.testing.assert_allclose(sin_, np.sin(av), atol=2.0 ** -21.41 * 2)
    np.testing.assert_allclose(cos_, np.cos(av), atol=2.0 ** -21.41 * 2)
    np.testing.assert_allclose(div_, yv / xv, rtol=3 * ulp)
    np.testing.assert_allclose(pow_, xv ** (yv * 0.25), rtol=3e-5)
    np.testing.assert_array_equal(rcp_, (np.float32(1) / x).astype(np.float64))
    np.testing.assert_array_equal(sat_, np.clip(yv, 0.0, 1.0))
    np.testing.assert_allclose(log2_, np.log2(xv), atol=2.0 ** -22 * 2, rtol=3 * ulp)
    within_relative(exp10_, 10.0 ** (yv * 0.25), (2 + np.floor(np.abs(2.95 * yv * 0.25)) + 2) * ulp)
    d = rng.uniform(0.1, 1e6, n) * rng.choice([-1, 1], n)
    r = poison(n, np.float64)
    intrk.rcp64[(n + BLOCK - 1) // BLOCK, BLOCK](dev(d), r)
    np.testing.assert_array_equal(host(r), 1.0 / d)


def test_timers_and_nanosleep() -> None:
    import intrk

    n = 512
    cycles, elapsed, clock32 = poison(n, np.int64), poison(n, np.int64), poison(n, np.int64)
    stamps = dev(np.full(n, 12345, np.uint64))
    intrk.timers[n // BLOCK, BLOCK](20000, cycles, elapsed, clock32, stamps)
    c, e, k, t = host(cycles), host(elapsed), host(clock32), host(stamps)
    # nanosleep(20 µs) sleeps for somewhere in [0, 40 µs] (PTX ISA); the clocks only move forward
    assert (c > 0).all() and (c < 10**9).all(), c
    assert (k > 0).all() and (k < 2**32).all(), k
    assert (e >= 0).all() and (e < 10**9).all(), e
    # the global timer counts nanoseconds since some epoch: every thread read it within this launch
    assert (t > 10**9).all() and int(t.max()) - int(t.min()) < 10**9, t


def test_volatile_loads_stores_and_a_flag_handoff() -> None:
    import intrk

    blocks = 24
    n = blocks * BLOCK
    x = rng.integers(-10**6, 10**6, n, dtype=np.int32) | 1
    out, seen = poison(n, np.int32), poison(blocks, np.int32)
    intrk.volatile_handoff[blocks, BLOCK](dev(x), out, seen)
    np.testing.assert_array_equal(host(out), x * 3)
    np.testing.assert_array_equal(host(seen), x[:blocks] + 7)


def test_half_atomics() -> None:
    """Sums of multiples of 1/8 below 32 are exact in f16, so the order of the adds does not
    matter and the result is compared exactly."""
    import intrk

    n, slots, per = 1024, 8, 128
    x = (rng.integers(1, 16, n) / 8.0 * rng.choice([-1, 1], n)).astype(np.float16)
    slot = rng.permutation(np.repeat(np.arange(slots, dtype=np.int32), per))
    per_sum = np.array([x[slot == j].astype(np.float64).sum() for j in range(slots)])
    assert (np.abs(per_sum) < 2048).all()
    base = rng.integers(1, 8, 2 * slots).astype(np.float16)
    sums = dev(base)
    lows, highs = dev(np.full(slots, 100.0, np.float16)), dev(np.full(slots, -100.0, np.float16))
    swapped = dev(np.concatenate([np.full(slots, 3.5), np.full(slots, -3.0)]).astype(np.float16))
    old_exch, old_cas = poison(n, np.float16), poison(n, np.float16)
    intrk.half_atomics[n // BLOCK, BLOCK](dev(x), dev(slot), sums, lows, highs, swapped, old_exch, old_cas)
    got = host(sums).astype(np.float64)
    np.testing.assert_array_equal(got[:slots], base[:slots].astype(np.float64) + per_sum)
    np.testing.assert_array_equal(got[slots:], base[slots:].astype(np.float64) - per_sum)
    np.testing.assert_array_equal(host(lows), [x[slot == j].min() for j in range(slots)])
    np.testing.assert_array_equal(host(highs), [x[slot == j].max() for j in range(slots)])
    final, oe, oc = host(swapped), host(old_exch), host(old_cas)
    for j in range(slots):
        mine = slot == j
        # exch: the old values and the final value are the start value and the inputs, each once
        np.testing.assert_array_equal(np.sort(np.append(oe[mine], final[j])), np.sort(np.append(x[mine], np.float16(3.5))))
        # cas from -3.0: exactly one thread saw -3.0 and its value is the one stored
        winners = np.flatnonzero(mine & (oc == np.float16(-3.0)))
        assert len(winners) == 1 and final[slots + j] == x[winners[0]], (j, winners)
        np.testing.assert_array_equal(oc[mine & (oc != np.float16(-3.0))], np.full(per - 1, final[slots + j]))


def test_bf16_atomics() -> None:
    """Multiples of 1/4 below 32 are exact in bf16 (8 significant bits): 32 values of at most
    0.75 per slot keep every partial sum, in any order, exact."""
    import intrk

    n, slots, per = 256, 8, 32
    x_np = rng.integers(1, 4, n) / 4.0
    slot = rng.permutation(np.repeat(np.arange(slots, dtype=np.int32), per))
    per_sum = np.array([x_np[slot == j].sum() for j in range(slots)])
    x = devices.bf16(x_np)
    assert (to_numpy(x) == x_np).all()
    sums = devices.bf16(np.concatenate([rng.integers(1, 8, slots), np.full(slots, -1.0)]))
    start = to_numpy(sums).astype(np.float64)
    lows = devices.bf16(np.full(slots, 100.0))
    highs = devices.bf16(np.full(slots, -100.0))
    old_cas = poison(n, "bf16")
    intrk.bf16_atomics[n // BLOCK, BLOCK](x, dev(slot), sums, lows, highs, old_cas)
    assert (start[:slots] + per_sum < 32).all()
    devices.synchronize()
    got = to_numpy(sums).astype(np.float64)
    np.testing.assert_array_equal(got[:slots], start[:slots] + per_sum)
    np.testing.assert_array_equal(to_numpy(lows), [x_np[slot == j].min() for j in range(slots)])
    np.testing.assert_array_equal(to_numpy(highs), [x_np[slot == j].max() for j in range(slots)])
    oc = to_numpy(old_cas).astype(np.float64)
    for j in range(slots):
        winners = np.flatnonzero((slot == j) & (oc == -1.0))
        assert len(winners) == 1 and got[slots + j] == x_np[winners[0]], (j, winners)


def test_partial_mask_warp_operations() -> None:
    """In each warp only the lanes of a random mask take the branch and operate with that mask
    (`__reduce_add_sync(mask, v)`, `__ballot_sync(mask, p)`, ...); the other lanes' outputs
    stay poisoned."""
    import intrk

    warps = 64
    n = warps * 32
    x = rng.integers(-10**8, 10**8, n, dtype=np.int32) | 1
    masks = rng.integers(1, 2**32, warps, dtype=np.uint64).astype(np.uint32)
    masks[:3] = [0xFFFFFFFF, 1, 0x80000001]
    sel = np.repeat(masks, 32)
    outs = [poison(n, np.uint32)] + [poison(n, np.int32) for _ in range(3)] + [
        poison(n, np.uint32), poison(n, np.int32), poison(n, np.uint32), poison(n, np.uint32)]
    intrk.masked_warp[n // BLOCK, BLOCK](dev(x), dev(sel), *outs)
    active, total, low, high, votes, first, same, umax = (host(o) for o in outs)
    poisoned = {"active": 12345, "total": -12345, "low": -12345, "high": -12345, "votes": 12345, "first": -12345,
                "same": 12345, "umax": 12345}
    for w in range(warps):
        m = int(masks[w])
        lanes = [k for k in range(32) if m >> k & 1]
        xs = x[w * 32:(w + 1) * 32]
        members = xs[lanes].astype(np.int64)
        ballot = sum(1 << k for k in lanes if xs[k] > 0)
        for k in range(32):
            i = w * 32 + k
            got = {"active": int(active[i]), "total": int(total[i]), "low": int(low[i]), "high": int(high[i]),
                   "votes": int(votes[i]), "first": int(first[i]), "same": int(same[i]), "umax": int(umax[i])}
            if k not in lanes:
                assert got == poisoned, (w, k, got)
                continue
            # active_mask(): the lanes running together now, a subset of the branch's lanes with this one
            assert got["active"] & ~m == 0 and got["active"] >> k & 1, (w, k, hex(got["active"]), hex(m))
            wrapped = int((members.sum() + 2**31) % 2**32 - 2**31)
            assert got["total"] == wrapped, (w, k)
            assert got["low"] == members.min() and got["high"] == members.max(), (w, k)
            assert got["votes"] == ballot, (w, k)
            assert got["first"] == xs[lanes[0]], (w, k)
            assert got["same"] == sum(1 << j for j in lanes if (xs[j] & 3) == (xs[k] & 3)), (w, k)
            assert got["umax"] == max(int(v) for v in xs[lanes].view(np.uint32)), (w, k)


def test_grid_sync_many_rounds_across_blocks() -> None:
    """Each round reads what other blocks wrote in the previous one: any barrier that lets a
    block run ahead gives a wrong element. The barrier is reused 2 * rounds + 1 times per
    launch, by launches on two streams, and the kernel is launched with k[grid, block]: the
    runtime makes it cooperative (the manifest says it calls grid.sync()). On the CPU device
    (no streams to order) the three launches take the default stream."""
    import intrk

    n = 96 * 256 + 77  # a partial last block
    rounds = 41
    grid = (n + 255) // 256
    x = rng.integers(-10**6, 10**6, n, dtype=np.int32) | 1
    expect = np.roll(x, -37 * rounds) + rounds
    gpu_streams = torch is not None and not devices.on_cpu()
    streams = (torch.cuda.current_stream(), torch.cuda.Stream(), torch.cuda.current_stream()) if gpu_streams else (None,) * 3
    for stream in streams:
        a, b, out, xd = poison(n, np.int32), poison(n, np.int32), poison(n, np.int32), dev(x)
        devices.synchronize()  # the inputs are made on the default stream
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            intrk.rotate_rounds[grid, 256](xd, a, b, rounds, out)
        np.testing.assert_array_equal(host(out), expect)
        np.testing.assert_array_equal(host(out), expect)  # twice: nothing still running changes it


def test_grid_sync_refuses_a_grid_that_cannot_be_resident() -> None:
    import intrk

    n = devices.sized(1 << 24, 1 << 20)  # 4096 blocks of 256: more than the CPU device's 132 SMs hold
    x = dev(np.ones(n, np.int32))
    a, b, out = poison(n, np.int32), poison(n, np.int32), poison(n, np.int32)
    with pytest.raises(ValueError, match=r"a cooperative launch of rotate_rounds needs all its blocks resident at "
                                         r"once: at most \d+ blocks of 256 threads"):
        intrk.rotate_rounds[n // 256, 256](x, a, b, 3, out)
    assert (host(out) == -12345).all()  # not launched


PRINT_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import printk
from oxide.runtime import DeviceArray, synchronize

data = np.load(sys.argv[2])
x, n, u = (DeviceArray.from_numpy(data[k]) for k in ("x", "n", "u"))
printk.show[2, 64](x, n, u)
synchronize()
"""


def test_print_in_kernels(tmp_path: Path) -> None:
    """Device printf's output, read from a subprocess's stdout, against Python's own formatting
    of the same values (print, f-strings, and C's %g for a bare float)."""
    import subprocess

    count = 128
    x = (rng.standard_normal(count) * 10.0 ** rng.integers(-3, 6, count)).astype(np.float32)
    n = rng.integers(-10**6, 10**6, count, dtype=np.int32)
    n[n == 0] = 7
    u = rng.integers(1, 2**63, count, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    np.savez(tmp_path / "data.npz", x=x, n=n, u=u)
    result = subprocess.run([sys.executable, "-c", PRINT_SCRIPT, str(Path(__file__).parent / "packages" / "langintr"),
                             str(tmp_path / "data.npz")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    expect = []
    for i in range(count):
        xi, ni, ui = float(x[i]), int(n[i]), int(u[i])
        expect.append(f"row {i} {ni} {ui} {ni > 0}")
        expect.append(f"fmt {i}: x={xi:.3f} n={ni:>6d}|{ni:<6d}|{ni & 0xFFFFFFFF:08x}|{ui:#x}|{xi:+.4e}|{ni:.2f} 100%!")
        expect.append(f"g,{i},{'%g' % xi}")
    assert sorted(line for line in lines if line.startswith(("row ", "fmt ", "g,"))) == sorted(expect)


def test_block_votes() -> None:
    import blockvotes

    block, blocks = 256, 6
    n = blocks * block - 37                       # the last block's missing threads vote with 0.0
    x = rng.uniform(0.6, 2.0, n).astype(np.float32)
    x[block:2 * block] = rng.uniform(-2.0, 0.4, block)          # no thread above the threshold
    x[2 * block:3 * block] *= np.where(rng.integers(0, 2, block) == 1, 1.0, -1.0).astype(np.float32)
    x[3 * block + 17] = -1.0                                    # one thread below
    outs = [dev(np.full(n, -7, np.int32)) for _ in range(3)]
    blockvotes.block_votes[blocks, block](dev(x), 0.5, *outs)
    v = np.pad(x, (0, blocks * block - n)).reshape(blocks, block) > 0.5
    for got, ref in zip(outs, (v.sum(1), v.all(1), v.any(1))):
        np.testing.assert_array_equal(host(got), np.repeat(ref.astype(np.int32), block)[:n])
