"""Shortest downward path through a grid of weights, several rows per launch (a pyramid).

Ported from Rodinia 3.1, cuda/pathfinder/pathfinder.cu (`dynproc_kernel`), the way its author
writes it: BLOCK_SIZE and HALO as #defines, IN_RANGE and MIN as macros (small functions
here), each block computing `iteration` rows of the dynamic programme on a shrinking range
of its shared row, a `computed` flag declared before the loop, a uniform `break` between the
barriers, int everywhere. The host swaps the two result buffers between launches."""
import oxide as ox
from oxide import MutSlice, Slice, block, i32, thread

BLOCK_SIZE = 256
HALO = 1


def in_range(x: i32, lo: i32, hi: i32) -> bool:
    return x >= lo and x <= hi


def min2(a: i32, b: i32) -> i32:
    return a if a <= b else b


@ox.kernel(launch_bounds=BLOCK_SIZE)
def dynproc_kernel(iteration: i32, gpu_wall: Slice[i32], gpu_src: Slice[i32], gpu_results: MutSlice[i32],
                   cols: i32, rows: i32, start_step: i32, border: i32) -> None:
    prev = ox.shared.array(BLOCK_SIZE, i32)
    result = ox.shared.array(BLOCK_SIZE, i32)

    bx = block.idx.x
    tx = thread.idx.x

    small_block_cols = BLOCK_SIZE - iteration * HALO * 2
    blk_x = small_block_cols * bx - border
    blk_x_max = blk_x + BLOCK_SIZE - 1
    xidx = blk_x + tx

    valid_x_min = -blk_x if blk_x < 0 else 0
    valid_x_max = BLOCK_SIZE - 1 - (blk_x_max - cols + 1) if blk_x_max > cols - 1 else BLOCK_SIZE - 1

    W = tx - 1
    E = tx + 1
    W = valid_x_min if W < valid_x_min else W
    E = valid_x_max if E > valid_x_max else E

    is_valid = in_range(tx, valid_x_min, valid_x_max)

    if in_range(xidx, 0, cols - 1):
        prev[tx] = gpu_src[xidx]
    block.sync()

    computed = False
    for i in range(iteration):
        computed = False
        if in_range(tx, i + 1, BLOCK_SIZE - i - 2) and is_valid:
            computed = True
            left = prev[W]
            up = prev[tx]
            right = prev[E]
            shortest = min2(left, up)
            shortest = min2(shortest, right)
            index = cols * (start_step + i) + xidx
            result[tx] = shortest + gpu_wall[index]
        block.sync()
        if i == iteration - 1:
            break
        if computed:
            prev[tx] = result[tx]
        block.sync()

    if computed:
        with ox.unsafe():
            gpu_results[xidx] = result[tx]
