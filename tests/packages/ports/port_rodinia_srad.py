"""Speckle-reducing anisotropic diffusion, the update step over 16x16 tiles in shared memory.

Ported from Rodinia 3.1 (University of Virginia, BSD-style), cuda/srad/srad_v2/srad_kernel.cu
(`srad_cuda_2`), as first written in issue 29's second probe. On the last block row the C reads
`C_cuda[index_s]` one block row past the array's end before it replaces the value; oxide's bounds
check reports that read (tests/test_ports_gpu.py passes a padded array)."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread, block

BLOCK_SIZE = 16


@ox.kernel
def srad_cuda_2(e_c: Slice[f32], w_c: Slice[f32], n_c: Slice[f32], s_c: Slice[f32], j_cuda: MutSlice[f32],
                c_cuda: Slice[f32], cols: i32, rows: i32, lambda_: f32, q0sqr: f32) -> None:
    bx = block.idx.x
    by = block.idx.y
    tx = thread.idx.x
    ty = thread.idx.y
    index = cols * BLOCK_SIZE * by + BLOCK_SIZE * bx + cols * ty + tx
    index_s = cols * BLOCK_SIZE * (by + 1) + BLOCK_SIZE * bx + tx
    index_e = cols * BLOCK_SIZE * by + BLOCK_SIZE * (bx + 1) + cols * ty
    south_c = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)
    east_c = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)
    c_cuda_temp = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)
    c_cuda_result = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)
    temp = ox.shared.array((BLOCK_SIZE, BLOCK_SIZE), f32)
    temp[ty, tx] = j_cuda[index]
    block.sync()
    south_c[ty, tx] = c_cuda[index_s]
    if by == ox.grid.dim.y - 1:
        south_c[ty, tx] = c_cuda[cols * BLOCK_SIZE * (ox.grid.dim.y - 1) + BLOCK_SIZE * bx + cols * (BLOCK_SIZE - 1) + tx]
    block.sync()
    east_c[ty, tx] = c_cuda[index_e]
    if bx == ox.grid.dim.x - 1:
        east_c[ty, tx] = c_cuda[cols * BLOCK_SIZE * by + BLOCK_SIZE * (ox.grid.dim.x - 1) + cols * ty + BLOCK_SIZE - 1]
    block.sync()
    c_cuda_temp[ty, tx] = c_cuda[index]
    block.sync()
    cc = c_cuda_temp[ty, tx]
    if ty == BLOCK_SIZE - 1 and tx == BLOCK_SIZE - 1:
        cn = cc
        cs = south_c[ty, tx]
        cw = cc
        ce = east_c[ty, tx]
    elif tx == BLOCK_SIZE - 1:
        cn = cc
        cs = c_cuda_temp[ty + 1, tx]
        cw = cc
        ce = east_c[ty, tx]
    elif ty == BLOCK_SIZE - 1:
        cn = cc
        cs = south_c[ty, tx]
        cw = cc
        ce = c_cuda_temp[ty, tx + 1]
    else:
        cn = cc
        cs = c_cuda_temp[ty + 1, tx]
        cw = cc
        ce = c_cuda_temp[ty, tx + 1]
    d_sum = cn * n_c[index] + cs * s_c[index] + cw * w_c[index] + ce * e_c[index]
    c_cuda_result[ty, tx] = temp[ty, tx] + 0.25 * lambda_ * d_sum
    block.sync()
    with ox.unsafe():
        j_cuda[index] = c_cuda_result[ty, tx]
