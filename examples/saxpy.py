"""out = a * x + y: one element per thread (``saxpy``, ``saxpy_unchecked``), and ``saxpy_fast``,
the kernel to call for bandwidth (launched by :func:`saxpy_fast_launch`).

``saxpy_fast`` moves 16 bytes per load and store (``x.load4(k)``: an ``f32x4``, or an ``f64x4``
as two 16-byte accesses) and keeps several of them in flight per thread. The vectors are cut
into tiles of ``VECS * BLOCK`` vectors; a block takes tile after tile (a grid-stride loop over
tiles) and its thread ``t`` handles vectors ``t, t + BLOCK, t + 2 BLOCK, t + 3 BLOCK`` of the
tile, so each of the four loads of a warp reads 512 contiguous bytes (f32). All eight loads
of a tile are issued before the first multiply-add, so a thread waits for memory once per
tile rather than once per vector. One comparison per tile (``4 * last + 3 < len(out)``) picks
this path; in the last, partial tile each whole vector is guarded on its own, and the last
``n % 4`` elements take one thread each. Those guards, the ``assert`` (a launch precondition,
checked on the host) and the loop bounds prove every index in range: no bounds check is left
in the device code (``oxide inspect examples/saxpy.py::saxpy_fast`` says "checks left in the
device code: 0"). The stores go through a ``MutSlice`` inside ``ox.unsafe()`` because a
grid-stride loop writes elements other than ``thread.index_1d()``, which a ``DisjointSlice``
does not allow; the indices are still checked, and proven. The grid (:func:`fast_grid`) is one
block a tile by default, so each block's loop runs once; with ``blocks_per_sm`` a few blocks a
multiprocessor walk the tiles instead (slower on an H200: 4106 against 4315 GB/s).
"""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, f64, grid, i64, kernel, thread

T = ox.TypeVar("T", f32, f64)


@kernel
def saxpy(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    assert len(x) == len(out) and len(y) == len(out)  # also proves x[i] and y[i] in bounds
    i = thread.index_1d()
    if i < len(out):
        out[i] = a * x[i] + y[i]


@kernel(bounds_check=False)
def saxpy_unchecked(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = a * x[i] + y[i]


# ---- the fast kernel (benchmarks/temp_packages.py's cold-start package stops above this line) ----

BLOCK = 256  # threads per block of saxpy_fast
VECS = 4  # vectors in flight per thread and input
TILE = VECS * BLOCK  # vectors per tile
BLOCKS_PER_SM: int | None = None  # None: one block a tile, no grid-stride (the fastest on an H200, 2026-12-03)


@kernel
def saxpy_fast(a: T, x: Slice[T], y: Slice[T], out: MutSlice[T]) -> None:
    # launch preconditions, checked on the host: with the guards below they prove every index
    assert len(x) == len(out) and len(y) == len(out)
    assert block.dim.x == BLOCK
    n4 = len(out) // 4  # whole vectors
    for tile in range(i64(block.idx.x), (n4 + TILE - 1) // TILE, i64(grid.dim.x)):
        base = tile * TILE + thread.idx.x  # this thread's vectors: base + u * BLOCK, u < VECS
        last = base + (VECS - 1) * BLOCK
        if 4 * last + 3 < len(out):  # all four in range: every tile but the last
            x0 = x.load4(base)
            x1 = x.load4(base + BLOCK)
            x2 = x.load4(base + 2 * BLOCK)
            x3 = x.load4(base + 3 * BLOCK)
            y0 = y.load4(base)
            y1 = y.load4(base + BLOCK)
            y2 = y.load4(base + 2 * BLOCK)
            y3 = y.load4(base + 3 * BLOCK)
            with ox.unsafe():
                out.store4(base, a * x0 + y0)
                out.store4(base + BLOCK, a * x1 + y1)
                out.store4(base + 2 * BLOCK, a * x2 + y2)
                out.store4(base + 3 * BLOCK, a * x3 + y3)
        else:  # the last, partial tile: each whole vector on its own
            for u in ox.static_range(VECS):
                k = base + u * BLOCK
                if 4 * k + 3 < len(out):
                    v = a * x.load4(k) + y.load4(k)
                    with ox.unsafe():
                        out.store4(k, v)
    # the last n % 4 elements (fewer than the threads of one block)
    j = n4 * 4 + thread.index_1d()
    if j < len(out):
        with ox.unsafe():
            out[j] = a * x[j] + y[j]


def fast_grid(n: int, sm_count: int | None = None, blocks_per_sm: int | None = BLOCKS_PER_SM) -> int:
    """The grid of ``saxpy_fast`` for ``n`` elements: one block a tile when ``blocks_per_sm`` is
    None (each block's loop runs once, as torch's elementwise kernels: on an H200 at 2^28 floats
    that was 4315 GB/s against 4106 for 4 blocks a multiprocessor), else ``blocks_per_sm`` blocks
    per multiprocessor (of the current device when ``sm_count`` is None) walking the tiles, no
    more than there are tiles; at least 1."""
    tiles = (n // 4 + TILE - 1) // TILE
    if blocks_per_sm is None:
        return max(1, tiles)
    if sm_count is None:
        sm_count = multiprocessor_count()
    return max(1, min(sm_count * blocks_per_sm, tiles))


def saxpy_fast_launch(a, x, y, out, stream=None, sm_count=None, blocks_per_sm=BLOCKS_PER_SM):  # type: ignore[no-untyped-def]
    """``out = a * x + y`` by ``saxpy_fast`` on ``fast_grid(len(out))`` blocks of ``BLOCK``."""
    g = fast_grid(len(out), sm_count, blocks_per_sm)
    if stream is None:
        saxpy_fast[g, BLOCK](a, x, y, out)
    else:
        saxpy_fast[g, BLOCK, stream](a, x, y, out)


_SM_COUNTS: dict[int, int] = {}


def multiprocessor_count() -> int:
    """The current device's number of multiprocessors (asked of the driver once per device)."""
    from oxide.runtime import device

    ordinal = device.context_device(device.current_context()).ordinal
    if ordinal not in _SM_COUNTS:
        drv = device.driver()
        err, dev = drv.cuDeviceGet(ordinal)
        device.check(err, "cuDeviceGet")
        err, sms = drv.cuDeviceGetAttribute(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
        device.check(err, "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)")
        _SM_COUNTS[ordinal] = int(sms)
    return _SM_COUNTS[ordinal]
