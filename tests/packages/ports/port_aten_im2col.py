"""im2col: the patches of a multi-channel image unfolded into columns.

Ported from PyTorch, aten/src/ATen/native/cuda/im2col.cuh (`im2col_kernel`), the way its author
writes it: an int64 grid-stride loop (CUDA_KERNEL_LOOP_TYPE), the index split into (channel, h, w)
with `%` and `/`, the column pointer stepped by height_col * width_col per kernel tap, zero
outside the image. The original moves `im` to the patch's first pixel, which can lie before the
image (padding): an integer offset here."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, grid, i64, thread


@ox.kernel(launch_bounds=1024)
def im2col_kernel(n: i64, data_im: Slice[f32], height: i64, width: i64, kernel_height: i64, kernel_width: i64,
                  pad_height: i64, pad_width: i64, stride_height: i64, stride_width: i64, dilation_height: i64,
                  dilation_width: i64, height_col: i64, width_col: i64, data_col: MutSlice[f32]) -> None:
    index = i64(block.idx.x) * block.dim.x + thread.idx.x
    while index < n:
        w_out = index % width_col
        idx = index // width_col
        h_out = idx % height_col
        channel_in = idx // height_col
        channel_out = channel_in * kernel_height * kernel_width
        h_in = h_out * stride_height - pad_height
        w_in = w_out * stride_width - pad_width
        col = (channel_out * height_col + h_out) * width_col + w_out
        im = (channel_in * height + h_in) * width + w_in
        for i in range(kernel_height):
            for j in range(kernel_width):
                h = h_in + i * dilation_height
                w = w_in + j * dilation_width
                with ox.unsafe():
                    data_col[col] = data_im[im + i * dilation_height * width + j * dilation_width] \
                        if h >= 0 and w >= 0 and h < height and w < width else 0.0
                col += height_col * width_col
        index += i64(block.dim.x) * grid.dim.x
