"""Kernels of tests/test_stmatrix_gpu.py: one warp fills shared memory from ``fill`` (the
poison), loads its registers from ``x`` (lane l's 32-bit register r holds x[8l + 2r] and
x[8l + 2r + 1]), stores them with one ``ox.mma.stmatrix`` (.xN, .trans when TRANS) at the row
starts ``rows[l]``, and copies all of shared memory to ``out``. stmatrix needs sm_90."""
import oxide as ox
from oxide import MutSlice, Slice, bf16, block, f16, i32, thread

T = ox.TypeVar("T", bf16, f16)
SMEM = 1024  # 128 rows of 8 16-bit elements (16 bytes): room for rows scattered at random


@ox.kernel(constexprs={"N": [1, 2, 4], "TRANS": [False, True]})
def store(x: Slice[T], rows: Slice[i32], fill: Slice[T], out: MutSlice[T], N: ox.Constexpr[int],
          TRANS: ox.Constexpr[bool]) -> None:
    """N registers from one local array of 2N elements."""
    sm = ox.shared.array(SMEM, T)
    lane = thread.idx.x
    for i in range(lane, SMEM, 32):
        sm[i] = fill[i]
    block.sync()
    regs = ox.local.array(2 * N, T)
    for e in ox.static_range(2 * N):
        regs[e] = x[lane * 8 + e]
    if TRANS:
        ox.mma.stmatrix(regs, sm, rows[lane], trans=True)
    else:
        ox.mma.stmatrix(regs, sm, rows[lane])
    block.sync()
    with ox.unsafe():
        for i in range(lane, SMEM, 32):
            out[i] = sm[i]


@ox.kernel
def store_fragments(x: Slice[T], rows: Slice[i32], fill: Slice[T], out: MutSlice[T]) -> None:
    """.x4 from an A fragment (registers 0-3) and .x4 from two B fragments of an array of them
    (fb[0]: registers 0-1, fb[1]: 2-3), into the two halves of shared memory; lane l's rows
    start at rows[l] and SMEM // 2 + rows[l]."""
    sm = ox.shared.array(SMEM, T)
    lane = thread.idx.x
    for i in range(lane, SMEM, 32):
        sm[i] = fill[i]
    block.sync()
    fa = ox.mma.fragment_a("m16n8k16", T)
    fb = ox.mma.fragment_b("m16n8k16", T, 2)
    for e in ox.static_range(8):
        fa[e] = x[lane * 8 + e]
    for e in ox.static_range(4):
        fb[0, e] = x[lane * 8 + e]
        fb[1, e] = x[lane * 8 + 4 + e]
    ox.mma.stmatrix(fa, sm, rows[lane])
    ox.mma.stmatrix(fb[0], fb[1], sm, SMEM // 2 + rows[lane], trans=True)
    block.sync()
    with ox.unsafe():
        for i in range(lane, SMEM, 32):
            out[i] = sm[i]
