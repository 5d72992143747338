"""Separable convolution, the column pass, with the filter taps in constant memory.

Ported from NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/convolutionSeparable/
convolutionSeparable.cu (`convolutionColumnsKernel`), the way its author writes it:
`__constant__ float c_Kernel[KERNEL_LENGTH]` set from the host with cudaMemcpyToSymbol, a
shared tile with halo rows above and below, `#pragma unroll` loops over the result steps and
the taps, the halo rows zeroed outside the image. The original moves its pointers to the
block's first pixel (`d_Src += baseY * pitch + baseX`), which for the first block row points
above the image (baseY < 0); a view cannot start before its first element, so that offset is
an integer `base` here, as docs/language.md says for a pointer moved before the start."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

KERNEL_RADIUS = 8
KERNEL_LENGTH = 2 * KERNEL_RADIUS + 1
COLUMNS_BLOCKDIM_X = 16
COLUMNS_BLOCKDIM_Y = 8
COLUMNS_RESULT_STEPS = 8
COLUMNS_HALO_STEPS = 1

c_Kernel = ox.constant.array(KERNEL_LENGTH, f32)


@ox.kernel
def convolution_columns(d_Dst: MutSlice[f32], d_Src: Slice[f32], imageW: i32, imageH: i32,
                        pitch: i32) -> None:
    s_Data = ox.shared.array(
        (COLUMNS_BLOCKDIM_X, (COLUMNS_RESULT_STEPS + 2 * COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y + 1), f32)

    base_x = block.idx.x * COLUMNS_BLOCKDIM_X + thread.idx.x
    base_y = (block.idx.y * COLUMNS_RESULT_STEPS - COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y + thread.idx.y
    base = base_y * pitch + base_x

    # main data
    for i in ox.static_range(COLUMNS_HALO_STEPS, COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS):
        s_Data[thread.idx.x, thread.idx.y + i * COLUMNS_BLOCKDIM_Y] = d_Src[base + i * COLUMNS_BLOCKDIM_Y * pitch]

    # upper halo
    for i in ox.static_range(COLUMNS_HALO_STEPS):
        s_Data[thread.idx.x, thread.idx.y + i * COLUMNS_BLOCKDIM_Y] = (
            d_Src[base + i * COLUMNS_BLOCKDIM_Y * pitch] if base_y >= -i * COLUMNS_BLOCKDIM_Y else 0.0)

    # lower halo
    for i in ox.static_range(COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS,
                             COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS + COLUMNS_HALO_STEPS):
        s_Data[thread.idx.x, thread.idx.y + i * COLUMNS_BLOCKDIM_Y] = (
            d_Src[base + i * COLUMNS_BLOCKDIM_Y * pitch] if imageH - base_y > i * COLUMNS_BLOCKDIM_Y else 0.0)

    block.sync()

    for i in ox.static_range(COLUMNS_HALO_STEPS, COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS):
        total = 0.0
        for j in ox.static_range(-KERNEL_RADIUS, KERNEL_RADIUS + 1):
            total += c_Kernel[KERNEL_RADIUS - j] * s_Data[thread.idx.x, thread.idx.y + i * COLUMNS_BLOCKDIM_Y + j]
        with ox.unsafe():
            d_Dst[base + i * COLUMNS_BLOCKDIM_Y * pitch] = total
