"""racecheck's write-write races on the CPU device (_fibers.c's check_shared, _global_races.h's
check_global): two threads of a block storing different values to one shared or global byte with
no barrier between them, and two blocks storing to one global byte with nothing ordering them,
raise RacecheckError naming both threads and both file:lines; the same kernels with the barrier
are clean, and so are the benign forms: stores of the value already there (a flag many threads
set), and atomics against atomics."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from oxide.errors import RacecheckError

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
from oxide import MutSlice, Slice, block, f32, i32, thread, u32


@ox.kernel
def shift_shared(x: Slice[f32], out: MutSlice[f32], sync: i32) -> None:
    """Each thread stores its element, then its negation one place on: the second store races
    with the neighbour's first unless a barrier lies between them."""
    s = ox.shared.array(64, f32)
    t = thread.idx.x
    n = block.dim.x
    if t < len(x):
        s[t] = x[t]  # FIRST_S
    if sync == 1:
        block.sync()
    if t < len(x):
        s[(t + 1) % n] = -x[t]  # SECOND_S
    block.sync()
    if t < len(out):
        with ox.unsafe():
            out[t] = s[t]


@ox.kernel
def shared_flag(out: MutSlice[f32], value_by_thread: i32) -> None:
    """Every thread sets one shared flag: to one value (benign), or each to its own (a race)."""
    flag = ox.shared.array(1, f32)
    t = thread.idx.x
    if value_by_thread == 1:
        flag[0] = f32(t)  # FLAG_BY_THREAD
    else:
        flag[0] = 1.0
    block.sync()
    if t == 0 and len(out) > 0:
        with ox.unsafe():
            out[0] = flag[0]


@ox.kernel
def shared_counter(out: MutSlice[u32]) -> None:
    """Atomics of all threads on one shared word (after a barrier): no race."""
    c = ox.shared.array(1, u32)
    if thread.idx.x == 0:
        c[0] = u32(0)
    block.sync()
    ox.atomic.add(c, 0, u32(1), scope="block")
    block.sync()
    if thread.idx.x == 0 and len(out) > 0:
        with ox.unsafe():
            out[0] = c[0]


@ox.kernel
def shared_volatile(out: MutSlice[i32], plain: i32) -> None:
    """Thread 0 stores a shared word volatile, thread 1 reads it: volatile (no race) or plain (a race)."""
    v = ox.shared.array(1, i32)
    if thread.idx.x == 0:
        ox.volatile.store(v, 0, 5)  # VOLATILE_STORE
    if thread.idx.x == 1 and len(out) > 0:
        r: i32 = 0
        if plain == 1:
            r = v[0]  # PLAIN_READ
        else:
            r = ox.volatile.load(v, 0)
        with ox.unsafe():
            out[0] = r


@ox.kernel
def shift_global(x: Slice[f32], out: MutSlice[f32], sync: i32) -> None:
    """shift_shared in global memory."""
    t = thread.idx.x
    n = block.dim.x
    if t < len(x) and t < len(out):
        with ox.unsafe():
            out[t] = x[t]  # FIRST_G
    if sync == 1:
        block.sync()
    if t < len(x) and len(out) >= n:
        with ox.unsafe():
            out[(t + 1) % n] = -x[t]  # SECOND_G


@ox.kernel
def block_stamp(out: MutSlice[f32], value_by_block: i32) -> None:
    """Thread 0 of every block stores into one word: each block its own index (a race), or one
    value (benign)."""
    if thread.idx.x == 0 and len(out) > 0:
        if value_by_block == 1:
            with ox.unsafe():
                out[0] = f32(block.idx.x)  # STAMP
        else:
            with ox.unsafe():
                out[0] = 7.0


@ox.kernel
def block_atomic_max(out: MutSlice[u32]) -> None:
    if thread.idx.x == 0:
        ox.atomic.max(out, 0, u32(block.idx.x))
'''


def line_of(path: Path, marker: str) -> int:
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1) if f"# {marker}" in text)


@pytest.fixture(scope="module")
def kern(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("writerace")
    path = root / "writekern.py"
    path.write_text(textwrap.dedent(SOURCE))
    return engine.compile_module_for_cpu(path, "writekern", root), path


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


def test_two_stores_to_a_shared_byte_race_without_a_barrier(kern) -> None:
    m, path = kern
    x = (np.arange(64, dtype=np.float32) + 1.0)
    out = np.full(64, np.nan, np.float32)
    with pytest.raises(RacecheckError) as e:
        run(kern, "shift_shared", 1, 64, [x, out], (0,))
    msg = str(e.value)
    assert "a race on shared memory in kernel shift_shared" in msg
    # thread 0 ran both its stores before thread 1 stored its element over the second
    assert "thread (1, 0, 0) writes byte 4" in msg and "thread (0, 0, 0) wrote it" in msg
    assert f"writekern.py:{line_of(path, 'FIRST_S')}:" in msg and f"writekern.py:{line_of(path, 'SECOND_S')}:" in msg
    assert "two writes of different values" in msg
    assert e.value.location.startswith(f"writekern.py:{line_of(path, 'FIRST_S')}:")  # thread 1's store
    assert e.value.other_location.startswith(f"writekern.py:{line_of(path, 'SECOND_S')}:")  # thread 0's
    run(kern, "shift_shared", 1, 64, [x, out], (1,))
    np.testing.assert_array_equal(out, -np.roll(x, 1))


def test_a_shared_flag_set_to_one_value_is_no_race(kern) -> None:
    m, path = kern
    out = np.zeros(1, np.float32)
    run(kern, "shared_flag", 1, 64, [out], (0,))
    assert out[0] == 1.0
    with pytest.raises(RacecheckError) as e:
        run(kern, "shared_flag", 1, 64, [out], (1,))
    msg = str(e.value)
    assert re.search(r"thread \(1, 0, 0\) writes byte \d+ at", msg) and "thread (0, 0, 0) wrote it" in msg
    assert msg.count(f"writekern.py:{line_of(path, 'FLAG_BY_THREAD')}:") == 2


def test_atomics_on_one_shared_word_are_no_race(kern) -> None:
    out = np.zeros(1, np.uint32)
    run(kern, "shared_counter", 1, 96, [out])
    assert out[0] == 96


def test_volatile_accesses_of_shared_memory_do_not_race_with_each_other(kern) -> None:
    m, path = kern
    out = np.zeros(1, np.int32)
    run(kern, "shared_volatile", 1, 32, [out], (0,))
    assert out[0] == 5
    with pytest.raises(RacecheckError) as e:
        run(kern, "shared_volatile", 1, 32, [out], (1,))
    msg = str(e.value)
    assert re.search(r"thread \(1, 0, 0\) reads byte \d+ at", msg) and "thread (0, 0, 0) wrote (volatile) it" in msg
    assert f"writekern.py:{line_of(path, 'PLAIN_READ')}:" in msg and f"writekern.py:{line_of(path, 'VOLATILE_STORE')}:" in msg


def test_two_stores_to_a_global_byte_race_without_a_barrier(kern) -> None:
    m, path = kern
    x = (np.arange(32, dtype=np.float32) + 1.0)
    out = np.full(32, np.nan, np.float32)
    with pytest.raises(RacecheckError) as e:
        run(kern, "shift_global", 1, 32, [x, out], (0,))
    msg = str(e.value)
    assert "a race on global memory in kernel shift_global: block (0, 0, 0), thread (1, 0, 0) writes byte 4 of " \
           "parameter out" in msg
    assert "block (0, 0, 0), thread (0, 0, 0) wrote it" in msg and "no barrier between them" in msg
    assert f"writekern.py:{line_of(path, 'FIRST_G')}:" in msg and f"writekern.py:{line_of(path, 'SECOND_G')}:" in msg
    run(kern, "shift_global", 1, 32, [x, out], (1,))
    np.testing.assert_array_equal(out, -np.roll(x, 1))


def test_blocks_storing_to_one_word_race_unless_one_value_or_atomic(kern) -> None:
    m, path = kern
    out = np.zeros(1, np.float32)
    with pytest.raises(RacecheckError) as e:
        run(kern, "block_stamp", 3, 32, [out], (1,))
    msg = str(e.value)
    assert "block (1, 0, 0), thread (0, 0, 0) writes byte 0 of parameter out" in msg
    assert "block (0, 0, 0), thread (0, 0, 0) wrote it" in msg and "no grid.sync()" in msg
    assert msg.count(f"writekern.py:{line_of(path, 'STAMP')}:") == 2
    run(kern, "block_stamp", 3, 32, [out], (0,))
    assert out[0] == 7.0
    counter = np.zeros(1, np.uint32)
    run(kern, "block_atomic_max", 5, 32, [counter])
    assert counter[0] == 4


def test_without_racecheck_the_stores_run(kern) -> None:
    x = (np.arange(64, dtype=np.float32) + 1.0)
    out = np.full(64, np.nan, np.float32)
    run(kern, "shift_shared", 1, 64, [x, out], (0,), frozenset({"memcheck", "initcheck"}))
    # the CPU runs each thread up to the barrier in turn: thread t + 1's first store overwrites
    # thread t's second, save thread 0's element, which thread 63 stored last
    expected = x.copy()
    expected[0] = -x[63]
    np.testing.assert_array_equal(out, expected)
