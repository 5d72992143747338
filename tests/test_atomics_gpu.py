"""Atomic scopes on the GPU against NumPy, on both backends (nvptx and nvvm): per-block
histograms and extremes in shared memory with scope="block", grid-wide totals with
scope="system" in device memory and in managed memory that the host reads directly.
Sizes are odd (not multiples of the block); the kernels are in packages/atomickernels/atomk.py."""
from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import devices

# on the CPU device: block- and system-scope atomics lower to inline PTX, which the engine runs not yet
pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent / "packages" / "atomickernels" / "atomk.py"
BLOCK = 256
SIZES = [1, 1000, 100_003]
rng = np.random.default_rng()


@pytest.fixture(scope="module", params=devices.backends())
def atomk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """atomk.py compiled by ``request.param`` for this GPU (or the CPU device) into a package, then imported."""
    name = f"atomics_{request.param}"
    yield devices.compiled_package([KERNELS], name, tmp_path_factory.mktemp(name), request.param)


def dev(a: np.ndarray) -> Any:
    from oxide.runtime import DeviceArray

    return DeviceArray.from_numpy(np.ascontiguousarray(a))


def blocks_for(n: int) -> int:
    return (n + BLOCK - 1) // BLOCK


def per_block(a: np.ndarray) -> list[np.ndarray]:
    """``a`` cut into the slices that each block of BLOCK threads reads."""
    return [a[b * BLOCK:(b + 1) * BLOCK] for b in range(blocks_for(len(a)))]


@pytest.mark.parametrize("n", SIZES)
def test_block_scope_histograms_in_shared_memory(atomk: ModuleType, n: int) -> None:
    from oxide.runtime import synchronize

    bins = atomk.BINS
    keys = rng.integers(0, bins, n).astype(np.int32)
    hists = dev(np.zeros(blocks_for(n) * bins, np.uint32))
    atomk.block_histograms[blocks_for(n), BLOCK](dev(keys), hists)
    synchronize()
    expect = np.stack([np.bincount(part, minlength=bins) for part in per_block(keys)]).astype(np.uint32)
    np.testing.assert_array_equal(hists.to_numpy().reshape(-1, bins), expect)


@pytest.mark.parametrize("n", SIZES)
def test_block_scope_extremes_in_shared_memory(atomk: ModuleType, n: int) -> None:
    from oxide.runtime import synchronize

    x = rng.standard_normal(n).astype(np.float32)
    keys = rng.integers(0, 1 << 20, n).astype(np.int32)
    blocks = blocks_for(n)
    outs = [dev(np.zeros(blocks, dtype)) for dtype in (np.float32, np.int64, np.uint64, np.float64)]
    atomk.block_extremes[blocks, BLOCK](dev(x), dev(keys), *outs)
    synchronize()
    maxes, mins, xors, sums = (o.to_numpy() for o in outs)
    np.testing.assert_array_equal(maxes, [part.max() for part in per_block(x)])
    np.testing.assert_array_equal(mins, [part.min() for part in per_block(keys)])
    np.testing.assert_array_equal(xors, [np.bitwise_xor.reduce(part.astype(np.uint64)) for part in per_block(keys)])
    np.testing.assert_allclose(sums, [part.astype(np.float64).sum() for part in per_block(x)], rtol=1e-12, atol=1e-12)


def _system_inputs(n: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """x (i64), f (f64) and the initial totals, float totals and counters."""
    x = rng.integers(-10**12, 10**12, n).astype(np.int64)
    f = rng.standard_normal(n)
    initial = [np.array([0, 0, -(1 << 62)], np.int64), np.array([0.0, -np.inf]), np.zeros(3, np.uint32)]
    return x, f, initial


def _check_system_totals(x: np.ndarray, f: np.ndarray, totals: np.ndarray, ftotals: np.ndarray,
                         counters: np.ndarray) -> None:
    np.testing.assert_array_equal(totals, [x.sum(), -x.sum(), x.max()])
    np.testing.assert_allclose(ftotals[0], f.sum(), rtol=1e-9, atol=1e-9)
    assert ftotals[1] == f.max()
    np.testing.assert_array_equal(counters, [len(x), 1, 1])  # inc counts; one thread wins the cas


@pytest.mark.parametrize("n", SIZES)
def test_system_scope_totals_in_device_memory(atomk: ModuleType, n: int) -> None:
    from oxide.runtime import synchronize

    x, f, initial = _system_inputs(n)
    outs = [dev(a) for a in initial]
    atomk.system_totals[blocks_for(n), BLOCK](dev(x), dev(f), *outs)
    synchronize()
    _check_system_totals(x, f, *(o.to_numpy() for o in outs))


class Managed:
    """A 1-D array in CUDA managed memory (``cuMemAllocManaged``): kernels get its
    ``__cuda_array_interface__`` (on the CPU device, whose managed memory is host memory, its
    ``__array_interface__``); the host reads and writes ``host`` in place."""

    def __init__(self, values: np.ndarray) -> None:
        from oxide.runtime import device

        device.current_context()
        drv = device.driver()
        err, self._ptr = drv.cuMemAllocManaged(values.nbytes, int(drv.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL))
        device.check(err, "cuMemAllocManaged")
        buffer = (ctypes.c_char * values.nbytes).from_address(int(self._ptr))
        self.host = np.frombuffer(memoryview(buffer).cast("B"), values.dtype)
        self.host[:] = values
        interface = {"shape": values.shape, "typestr": values.dtype.str, "data": (int(self._ptr), False),
                     "strides": None, "version": 3}
        if devices.on_cpu():
            self.__array_interface__ = interface
        else:
            self.__cuda_array_interface__ = interface

    def free(self) -> None:
        from oxide.runtime import device

        del self.host
        (err,) = device.driver().cuMemFree(self._ptr)
        device.check(err, "cuMemFree")


@pytest.mark.parametrize("n", SIZES)
def test_system_scope_totals_in_managed_memory(atomk: ModuleType, n: int) -> None:
    from oxide.runtime import synchronize

    x, f, initial = _system_inputs(n)
    outs = [Managed(a) for a in initial]
    try:
        atomk.system_totals[blocks_for(n), BLOCK](dev(x), dev(f), *outs)
        synchronize()
        _check_system_totals(x, f, *(o.host.copy() for o in outs))
    finally:
        for o in outs:
            o.free()


@pytest.mark.parametrize("blocks", [1, 2, 97])
def test_release_acquire_relay_between_blocks(atomk: ModuleType, blocks: int) -> None:
    """``ox.atomic.store(order="release")`` / ``ox.atomic.load(order="acquire")`` hand plain
    stores from block to block (ticketed by an atomic counter, so a block waits only on one that
    started before it); every value is the sum so far, none stale."""
    values = dev(np.full(blocks, np.nan))
    flags = dev(np.zeros(blocks, np.uint32))
    counter = dev(np.zeros(1, np.uint32))
    atomk.relay[blocks, 32](values, flags, counter)
    k = np.arange(blocks, dtype=np.float64)
    np.testing.assert_array_equal(values.to_numpy(), k * (k + 1) / 2)
    assert flags.to_numpy().tolist() == [1] * blocks and counter.to_numpy().tolist() == [blocks]


@pytest.mark.parametrize("n", SIZES)
def test_ordered_loads_and_stores_copy_values(atomk: ModuleType, n: int) -> None:
    src = rng.standard_normal(n).astype(np.float32)
    dst = dev(np.full(n, np.nan, np.float32))
    words = dev(np.zeros(n, np.int64))
    atomk.ordered_copy[blocks_for(n), BLOCK](dev(src), dst, words)
    np.testing.assert_array_equal(dst.to_numpy(), src)
    got = words.to_numpy()
    np.testing.assert_array_equal(got >> 32, np.arange(n))
    np.testing.assert_array_equal((got & 0xFFFFFFFF).astype(np.uint32), src.view(np.uint32))
