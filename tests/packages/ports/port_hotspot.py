"""Chip temperature simulation: several explicit time steps per launch on a shrinking tile.

Ported from Rodinia 3.1, cuda/hotspot/hotspot.cu (`calculate_temp`), the way its author writes
it: BLOCK_SIZE and IN_RANGE as #define and macro, three shared 16x16 tiles, `float amb_temp
= 80.0`, the reciprocals `Rx_1 = 1/Rx`, the block's valid range clamped at the chip's edges,
the N/S/W/E neighbour indices clamped into it, a `computed` flag declared before the time-step
loop, a uniform `break` between the barriers, `temp_dst[index]` written by the threads that
computed. The host swaps the two temperature buffers between launches."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

BLOCK_SIZE = 16


def in_range(x: i32, lo: i32, hi: i32) -> bool:
    return x >= lo and x <= hi


@ox.kernel
def calculate_temp(iteration: i32, power: Slice[f32], temp_src: Slice[f32], temp_dst: MutSlice[f32],
                   grid_cols: i32, grid_rows: i32, border_cols: i32, border_rows: i32,
                   Cap: f32, Rx: f32, Ry: f32, Rz: f32, step: f32, time_elapsed: f32) -> None:
    temp_on_cuda = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)
    power_on_cuda = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)
    temp_t = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)

    amb_temp = 80.0
    bx = block.idx.x
    by = block.idx.y
    tx = thread.idx.x
    ty = thread.idx.y

    step_div_Cap = step / Cap
    Rx_1 = 1 / Rx
    Ry_1 = 1 / Ry
    Rz_1 = 1 / Rz

    small_block_rows = BLOCK_SIZE - iteration * 2
    small_block_cols = BLOCK_SIZE - iteration * 2

    blkY = small_block_rows * by - border_rows
    blkX = small_block_cols * bx - border_cols
    blkYmax = blkY + BLOCK_SIZE - 1
    blkXmax = blkX + BLOCK_SIZE - 1

    yidx = blkY + ty
    xidx = blkX + tx

    loadYidx = yidx
    loadXidx = xidx
    index = grid_cols * loadYidx + loadXidx

    if in_range(loadYidx, 0, grid_rows - 1) and in_range(loadXidx, 0, grid_cols - 1):
        temp_on_cuda[ty, tx] = temp_src[index]
        power_on_cuda[ty, tx] = power[index]
    block.sync()

    validYmin = -blkY if blkY < 0 else 0
    validYmax = BLOCK_SIZE - 1 - (blkYmax - grid_rows + 1) if blkYmax > grid_rows - 1 else BLOCK_SIZE - 1
    validXmin = -blkX if blkX < 0 else 0
    validXmax = BLOCK_SIZE - 1 - (blkXmax - grid_cols + 1) if blkXmax > grid_cols - 1 else BLOCK_SIZE - 1

    N = ty - 1
    S = ty + 1
    W = tx - 1
    E = tx + 1

    N = validYmin if N < validYmin else N
    S = validYmax if S > validYmax else S
    W = validXmin if W < validXmin else W
    E = validXmax if E > validXmax else E

    computed = False
    for i in range(iteration):
        computed = False
        if (in_range(tx, i + 1, BLOCK_SIZE - i - 2) and in_range(ty, i + 1, BLOCK_SIZE - i - 2)
                and in_range(tx, validXmin, validXmax) and in_range(ty, validYmin, validYmax)):
            computed = True
            temp_t[ty, tx] = temp_on_cuda[ty, tx] + step_div_Cap * (
                power_on_cuda[ty, tx]
                + (temp_on_cuda[S, tx] + temp_on_cuda[N, tx] - 2.0 * temp_on_cuda[ty, tx]) * Ry_1
                + (temp_on_cuda[ty, E] + temp_on_cuda[ty, W] - 2.0 * temp_on_cuda[ty, tx]) * Rx_1
                + (amb_temp - temp_on_cuda[ty, tx]) * Rz_1)
        block.sync()
        if i == iteration - 1:
            break
        if computed:
            temp_on_cuda[ty, tx] = temp_t[ty, tx]
        block.sync()

    if computed:
        with ox.unsafe():
            temp_dst[index] = temp_t[ty, tx]
