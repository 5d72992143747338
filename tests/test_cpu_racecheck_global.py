"""racecheck of global memory on the CPU device (_global_races.h), through the engine's entry
point with every slot of the parameter block (as the runtime packs it): a race between threads of
a block with no barrier between them, and between blocks with nothing ordering them (found, the
message naming the kernel, both blocks and threads and both file:lines), and the orders that are
no race: a barrier, atomics, the threadfence reduction's fence + ticket, a look-back chain's fence
+ volatile flag; the same reduction without its fence is a race."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from oxide.errors import KernelError, RacecheckError

pytest.importorskip("llvmlite")
engine = pytest.importorskip("oxide_build.cpu_engine")
try:
    from oxide_build.backends.cpu.jit import scheduler

    scheduler()
except Exception as e:  # pragma: no cover - an installation without the C extension
    pytest.skip(f"the CPU device's scheduler is not built: {e}", allow_module_level=True)

ALL = frozenset({"memcheck", "racecheck", "initcheck", "synccheck"})

SOURCE = '''\
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, grid, i32, thread, u32

N = 64


@ox.kernel
def neighbour_read(x: MutSlice[f32], out: MutSlice[f32], sync: i32) -> None:
    """Each thread writes its element, then reads its neighbour's: a race without the barrier."""
    t = thread.idx.x
    if t < len(x) and t < len(out):
        with ox.unsafe():
            out[t] = x[t]  # WRITE_B
    if sync == 1:
        block.sync()
    v: f32 = 0.0
    if t + 1 < len(out):
        v = out[t + 1]  # READ_B
    block.sync()
    if t < len(x):
        with ox.unsafe():
            x[t] = v


@ox.kernel
def next_block(x: Slice[f32], y: MutSlice[f32], out: MutSlice[f32], sync: i32) -> None:
    """Each thread doubles its element, then reads the element one block (32 threads) on."""
    i = thread.index_1d()
    if i < len(x) and i < len(y):
        with ox.unsafe():
            y[i] = x[i] * 2.0  # WRITE_C
    if sync == 1:
        grid.sync()
    if i < len(out) and len(y) > 0:
        with ox.unsafe():
            out[i] = y[(i + 32) % len(y)]  # READ_C


@ox.kernel
def lost_update(out: MutSlice[f32]) -> None:
    if thread.idx.x == 0:
        with ox.unsafe():
            out[0] = out[0] + f32(block.idx.x)  # UPDATE_G


@ox.kernel
def atomic_writer(out: MutSlice[f32]) -> None:
    if thread.idx.x == 0:
        ox.atomic.add(out, 0, f32(block.idx.x))


@ox.kernel
def last_block_sum(x: Slice[f32], partial: MutSlice[f32], count: MutSlice[u32], total: MutSlice[f32]) -> None:
    """Each block's thread 0 writes its partial sum, fences, takes a ticket; the last block sums them."""
    if thread.idx.x == 0:
        with ox.unsafe():
            partial[block.idx.x] = x[block.idx.x] * 2.0  # WRITE_P
        ox.fence.device()
        ticket = ox.atomic.add(count, 0, u32(1))
        if ticket == u32(grid.dim.x - 1):
            acc: f32 = 0.0
            for j in range(grid.dim.x):
                acc += partial[j]  # READ_P
            with ox.unsafe():
                total[0] = acc


@ox.kernel
def last_block_sum_no_fence(x: Slice[f32], partial: MutSlice[f32], count: MutSlice[u32], total: MutSlice[f32]) -> None:
    if thread.idx.x == 0:
        with ox.unsafe():
            partial[block.idx.x] = x[block.idx.x] * 2.0  # WRITE_NF
        ticket = ox.atomic.add(count, 0, u32(1))
        if ticket == u32(grid.dim.x - 1):
            acc: f32 = 0.0
            for j in range(grid.dim.x):
                acc += partial[j]  # READ_NF
            with ox.unsafe():
                total[0] = acc


@ox.kernel
def chained_prefix(x: Slice[f32], prefix: MutSlice[f32], flags: MutSlice[u32]) -> None:
    """A look-back chain: block b waits for block b-1's flag (volatile), then publishes its prefix."""
    if thread.idx.x == 0:
        b = i32(block.idx.x)
        before: f32 = 0.0
        if b > 0:
            while ox.volatile.load(flags, b - 1) == u32(0):
                pass
            ox.fence.device()
            before = prefix[b - 1]
        with ox.unsafe():
            prefix[b] = before + x[b]
        ox.fence.device()
        with ox.unsafe():
            ox.volatile.store(flags, b, u32(1))
'''


def line_of(path: Path, marker: str) -> int:
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1) if f"# {marker}" in text)


@pytest.fixture(scope="module")
def kern(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("globalrace")
    path = root / "racekern.py"
    path.write_text(textwrap.dedent(SOURCE))
    return engine.compile_module_for_cpu(path, "racekern", root), path


def run(kern, name: str, grid: int, block: int, arrays: list, scalars: tuple[int, ...] = (),
        sanitize=ALL) -> None:
    """Every slot of the parameter block: (pointer, length) per array, then the scalars."""
    m, _ = kern
    spec = next(k for k in m.kernels if k.name == name)
    flat: list[int] = []
    for a in arrays:
        flat += [a.ctypes.data, a.size]
    flat += list(scalars)
    m.function(spec.symbol).launch((grid, 1, 1), (block, 1, 1), 0, flat, frozenset(sanitize))


def test_threads_of_a_block_race_without_a_barrier(kern) -> None:
    m, path = kern
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    with pytest.raises(RacecheckError) as e:
        run(kern, "neighbour_read", 1, 64, [x.copy(), out], (0,), {"racecheck"})
    msg = str(e.value)
    assert "a race on global memory in kernel neighbour_read" in msg
    assert f"racekern.py:{line_of(path, 'WRITE_B')}:" in msg and f"racekern.py:{line_of(path, 'READ_B')}:" in msg
    assert "block (0, 0, 0), thread (1, 0, 0) writes byte 4 of parameter out" in msg and "block (0, 0, 0), thread (0, 0, 0) read it" in msg
    assert isinstance(e.value, KernelError) and e.value.other_block == (0, 0, 0)
    y = x.copy()
    run(kern, "neighbour_read", 1, 64, [y, out], (1,))
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(y, np.append(x[1:], 0))


def test_blocks_updating_one_word_race_unless_atomic(kern) -> None:
    m, path = kern
    out = np.zeros(1, np.float32)
    with pytest.raises(RacecheckError) as e:
        run(kern, "lost_update", 3, 32, [out])
    msg = str(e.value)
    assert "a race on global memory in kernel lost_update: block (1, 0, 0), thread (0, 0, 0) reads byte 0 of parameter out" in msg
    assert "block (0, 0, 0), thread (0, 0, 0) wrote it" in msg and "no grid.sync()" in msg
    assert msg.count(f"racekern.py:{line_of(path, 'UPDATE_G')}:") == 2
    assert e.value.other_block == (0, 0, 0) and e.value.block == (1, 0, 0)
    out[:] = 0
    run(kern, "atomic_writer", 3, 32, [out])
    assert out[0] == 0 + 1 + 2


def test_release_acquire_through_a_fence_and_an_atomic_is_no_race(kern) -> None:
    m, path = kern
    blocks = 37
    x = np.random.default_rng(4).standard_normal(blocks).astype(np.float32)
    partial = np.full(blocks, np.nan, np.float32)
    count = np.zeros(1, np.uint32)
    total = np.full(1, np.nan, np.float32)
    run(kern, "last_block_sum", blocks, 32, [x, partial, count, total])
    assert count[0] == blocks
    np.testing.assert_allclose(total[0], (x * 2).sum(), rtol=1e-5)
    count[:] = 0
    with pytest.raises(RacecheckError) as e:
        run(kern, "last_block_sum_no_fence", blocks, 32, [x, partial, count, total])
    msg = str(e.value)
    assert f"block ({blocks - 1}, 0, 0)" in msg and "release/acquire" in msg
    assert f"racekern.py:{line_of(path, 'READ_NF')}:" in msg and f"racekern.py:{line_of(path, 'WRITE_NF')}:" in msg


def test_look_back_chain_through_volatile_flags_is_no_race(kern) -> None:
    blocks = 20
    x = np.random.default_rng(5).standard_normal(blocks).astype(np.float32)
    prefix = np.full(blocks, np.nan, np.float32)
    flags = np.zeros(blocks, np.uint32)
    run(kern, "chained_prefix", blocks, 32, [x, prefix, flags])
    np.testing.assert_allclose(prefix, np.cumsum(x), rtol=1e-5)


def test_without_racecheck_the_race_runs(kern) -> None:
    out = np.zeros(1, np.float32)
    run(kern, "lost_update", 3, 32, [out], sanitize=frozenset({"memcheck", "initcheck"}))
    assert out[0] == 0 + 1 + 2  # blocks run in order: no update is lost on the CPU


def test_blocks_of_a_cooperative_launch_are_ordered_by_grid_sync(kern) -> None:
    m, path = kern
    x = np.random.default_rng(6).standard_normal(128).astype(np.float32)
    y = np.full(128, np.nan, np.float32)
    out = np.full(128, np.nan, np.float32)
    with pytest.raises(RacecheckError) as e:
        run(kern, "next_block", 4, 32, [x, y, out], (0,), {"racecheck"})
    msg = str(e.value)
    assert "a race on global memory in kernel next_block: block (1, 0, 0), thread (0, 0, 0) writes byte 128 of " \
           "parameter y" in msg
    assert "block (0, 0, 0), thread (0, 0, 0) read it" in msg
    assert f"racekern.py:{line_of(path, 'WRITE_C')}:" in msg and f"racekern.py:{line_of(path, 'READ_C')}:" in msg
    run(kern, "next_block", 4, 32, [x, y, out], (1,))
    np.testing.assert_array_equal(out, np.roll(x * 2, -32))
