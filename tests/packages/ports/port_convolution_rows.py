"""Row pass of a separable convolution through a shared tile with halos.

Ported from NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/convolutionSeparable/
convolutionSeparable.cu (`convolutionRowsKernel`), the way its author writes it: the sizes as
module constants derived from each other, `#pragma unroll` loops over `-KERNEL_RADIUS ...
KERNEL_RADIUS` as static_range, `float sum = 0` as `sum = 0.0`, halo loads under a condition
with a literal 0 on the other side, int index arithmetic. (The filter taps are a parameter here:
the sample keeps them in __constant__ memory.)"""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

KERNEL_RADIUS = 8
KERNEL_LENGTH = 2 * KERNEL_RADIUS + 1
ROWS_BLOCKDIM_X = 16
ROWS_BLOCKDIM_Y = 4
ROWS_RESULT_STEPS = 8
ROWS_HALO_STEPS = 1
TILE_W = (ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X


@ox.kernel
def convolution_rows(d_dst: MutSlice[f32], d_src: Slice[f32], c_kernel: Slice[f32], image_w: i32, image_h: i32,
                     pitch: i32) -> None:
    s_data = ox.shared.array((ROWS_BLOCKDIM_Y, TILE_W), f32)
    # offset to the left halo edge
    base_x = (block.idx.x * ROWS_RESULT_STEPS - ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X + thread.idx.x
    base_y = block.idx.y * ROWS_BLOCKDIM_Y + thread.idx.y
    base = base_y * pitch + base_x
    # main data
    for i in ox.static_range(ROWS_HALO_STEPS, ROWS_HALO_STEPS + ROWS_RESULT_STEPS):
        s_data[thread.idx.y, thread.idx.x + i * ROWS_BLOCKDIM_X] = d_src[base + i * ROWS_BLOCKDIM_X]
    # left halo
    for i in ox.static_range(ROWS_HALO_STEPS):
        s_data[thread.idx.y, thread.idx.x + i * ROWS_BLOCKDIM_X] = (
            d_src[base + i * ROWS_BLOCKDIM_X] if base_x >= -i * ROWS_BLOCKDIM_X else 0)
    # right halo
    for i in ox.static_range(ROWS_HALO_STEPS + ROWS_RESULT_STEPS, ROWS_HALO_STEPS + ROWS_RESULT_STEPS + ROWS_HALO_STEPS):
        s_data[thread.idx.y, thread.idx.x + i * ROWS_BLOCKDIM_X] = (
            d_src[base + i * ROWS_BLOCKDIM_X] if image_w - base_x > i * ROWS_BLOCKDIM_X else 0)
    block.sync()
    for i in ox.static_range(ROWS_HALO_STEPS, ROWS_HALO_STEPS + ROWS_RESULT_STEPS):
        sum = 0.0
        for j in ox.static_range(-KERNEL_RADIUS, KERNEL_RADIUS + 1):
            sum += c_kernel[KERNEL_RADIUS - j] * s_data[thread.idx.y, thread.idx.x + i * ROWS_BLOCKDIM_X + j]
        with ox.unsafe():
            d_dst[base + i * ROWS_BLOCKDIM_X] = sum
