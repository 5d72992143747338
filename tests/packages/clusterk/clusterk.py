"""Kernels of tests/test_cluster_gpu.py: distributed shared memory (ox.cluster.map_shared) read,
written and updated atomically across the blocks of a cluster, the split cluster barrier, an
arrival on another block's mbarrier, and a multicast TMA load of one box into every block."""
import oxide as ox
from oxide import f32, i32, u32, thread, block, MutSlice, Slice

N = 128  # the threads of a block, and the elements of its shared array
BINS = 16
ROWS = 16  # the multicast box: 16 x 32 elements
COLS = 32


@ox.kernel
def read_neighbour(x: Slice[f32], out: MutSlice[f32]) -> None:
    """Each block puts its chunk of x into its shared array; after a cluster sync, thread t
    reads element (7 t + 3) % N of the next block's array (rank + 1, cyclically) and writes
    it plus 2 x its own element: out[i] = next[(7 t + 3) % N] + 2 buf[t]."""
    t = thread.idx.x
    i = block.idx.x * N + t
    buf = ox.shared.array(N, f32)
    buf[t] = x[i]
    ox.cluster.sync()
    nxt = ox.cluster.map_shared(buf, (ox.cluster.rank() + 1) % ox.cluster.num_blocks())
    value = nxt[(7 * t + 3) % N] + 2.0 * buf[t]
    ox.cluster.sync()  # the next block is still running while this one reads it
    with ox.unsafe():
        out[i] = value


@ox.kernel
def write_neighbour(x: Slice[f32], out: MutSlice[f32]) -> None:
    """Each block writes 3 x its chunk, reversed, into the previous block's 2-d array (rank - 1,
    cyclically); after arrive/wait (release/acquire), each block copies its own array out:
    out[i] = 3 x[chunk of rank + 1][N - 1 - t]."""
    t = thread.idx.x
    i = block.idx.x * N + t
    grid2 = ox.shared.array((2, N // 2), f32)
    nb = ox.cluster.num_blocks()
    prev = ox.cluster.map_shared(grid2, (ox.cluster.rank() + nb - 1) % nb)
    ox.cluster.arrive(relaxed=True)  # every block has started before any writes another's memory
    ox.cluster.wait()
    k = N - 1 - t
    with ox.unsafe():
        prev[k // (N // 2), k % (N // 2)] = 3.0 * x[i]
    ox.cluster.arrive()
    ox.cluster.wait()
    with ox.unsafe():
        out[i] = grid2[t // (N // 2), t % (N // 2)]


@ox.kernel
def cluster_histogram(values: Slice[i32], out: MutSlice[i32]) -> None:
    """A histogram of BINS bins per cluster, in the shared memory of the cluster's block 0:
    every thread of every block adds its value's bin there (atomics on another block's shared
    memory); block 0 writes it to out[cluster * BINS + bin]."""
    t = thread.idx.x
    i = block.idx.x * N + t
    hist = ox.shared.array(BINS, u32)
    if t < BINS:
        hist[t] = 0
    ox.cluster.sync()
    home = ox.cluster.map_shared(hist, 0)
    ox.atomic.add(home, values[i] % BINS, 1)
    ox.cluster.sync()
    if ox.cluster.rank() == 0 and t < BINS:
        with ox.unsafe():
            out[(block.idx.x // ox.cluster.num_blocks()) * BINS + t] = i32(hist[t])


@ox.kernel
def map_rank(x: Slice[f32], rank: i32, out: MutSlice[f32]) -> None:
    """out[i] = the element t of block `rank`'s array: a rank outside the cluster is an error."""
    t = thread.idx.x
    i = block.idx.x * N + t
    buf = ox.shared.array(N, f32)
    buf[t] = x[i]
    ox.cluster.sync()
    value = ox.cluster.map_shared(buf, rank)[t]
    ox.cluster.sync()
    with ox.unsafe():
        out[i] = value


@ox.kernel
def multicast_box(src: ox.tma.Descriptor[f32, 2], out: MutSlice[f32], flags: MutSlice[i32]) -> None:
    """Block 0 of each cluster loads the box at row 16 x cluster, column 0 once, multicast to
    every block of its cluster (each block's barrier gets the bytes); every block copies its
    tile to out[block * ROWS * COLS + k], then arrives on block 0's second barrier, which
    block 0 waits for (count: the cluster's blocks) before it sets flags[cluster] = blocks."""
    tile = ox.shared.array(ROWS * COLS, f32)
    bars = ox.mbarrier.array(2)
    t = thread.idx.x
    nb = ox.cluster.num_blocks()
    rank = ox.cluster.rank()
    cluster = block.idx.x // nb
    if t == 0:
        ox.mbarrier.init(bars[0], 1)
        ox.mbarrier.init(bars[1], nb)
        ox.mbarrier.fence_init()
    ox.cluster.sync()  # every block's barriers are ready before a load or an arrival reaches them
    if t == 0:
        ox.mbarrier.arrive_expect_tx(bars[0], ox.tma.box_bytes(src))
        if rank == 0:
            ox.tma.load(src, bars[0], tile, cluster * ROWS, 0, multicast=(1 << nb) - 1)
    ox.mbarrier.wait(bars[0], 0)
    for k in range(t, ROWS * COLS, block.dim.x):
        with ox.unsafe():
            out[block.idx.x * ROWS * COLS + k] = tile[k]
    block.sync()
    if t == 0:
        ox.cluster.mbarrier_arrive(bars[1], 0)
    if rank == 0:
        ox.mbarrier.wait(bars[1], 0)
        if t == 0:
            with ox.unsafe():
                flags[cluster] = nb
    ox.cluster.sync()


@ox.kernel
def multicast_mask(src: ox.tma.Descriptor[f32, 2], mask: i32, out: MutSlice[f32]) -> None:
    """Block 0 multicasts the box at (0, 0) with `mask`; a mask naming a block outside the
    cluster is refused and reported, and the bytes are counted on the barriers of the blocks
    that exist, so none hangs. Every block copies its tile out."""
    tile = ox.shared.array(ROWS * COLS, f32)
    bars = ox.mbarrier.array(1)
    t = thread.idx.x
    if t == 0:
        ox.mbarrier.init(bars[0], 1)
        ox.mbarrier.fence_init()
    ox.cluster.sync()
    if t == 0:
        ox.mbarrier.arrive_expect_tx(bars[0], ox.tma.box_bytes(src))
        if ox.cluster.rank() == 0:
            ox.tma.load(src, bars[0], tile, 0, 0, multicast=mask)
    ox.mbarrier.wait(bars[0], 0)
    for k in range(t, ROWS * COLS, block.dim.x):
        with ox.unsafe():
            out[block.idx.x * ROWS * COLS + k] = tile[k]
    ox.cluster.sync()
