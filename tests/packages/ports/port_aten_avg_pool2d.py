"""2-D average pooling (NCHW), with count_include_pad and divisor_override.

Ported from PyTorch (BSD-3-Clause), aten/src/ATen/native/cuda/AveragePool2d.cu
(`avg_pool2d_out_cuda_frame`), as first written in issue 29's second probe; the decoding of the output index is
nchw_position.py's, shared with the max_pool2d port."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, i64, thread, block, grid
from nchw_position import pooled_position


@ox.kernel
def avg_pool2d_out_cuda_frame(nthreads: i32, bottom_data: Slice[f32], channels: i64, height: i64, width: i64,
                              pooled_height: i64, pooled_width: i32, kernel_h: i32, kernel_w: i32, stride_h: i32,
                              stride_w: i32, pad_h: i32, pad_w: i32, top_data: MutSlice[f32], divisor_override: i32,
                              count_include_pad: bool, use_divisor: bool) -> None:
    for index in range(block.idx.x * block.dim.x + thread.idx.x, nthreads, block.dim.x * grid.dim.x):
        n, c, ph, pw = pooled_position(index, channels, pooled_height, pooled_width)
        hstart = ph * stride_h - pad_h
        wstart = pw * stride_w - pad_w
        hend = min(hstart + kernel_h, height + pad_h)
        wend = min(wstart + kernel_w, width + pad_w)
        pool_size = (hend - hstart) * (wend - wstart)
        hstart = max(hstart, 0)
        wstart = max(wstart, 0)
        hend = min(hend, height)
        wend = min(wend, width)
        if hstart >= hend or wstart >= wend:
            with ox.unsafe():
                top_data[index] = 0.0
            continue
        aveval = 0.0
        bottom_slice = bottom_data[(n * channels + c) * height * width:]
        for h in range(hstart, hend):
            for w in range(wstart, wend):
                aveval += bottom_slice[h * width + w]
        divide_factor = 0
        if use_divisor:
            divide_factor = divisor_override
        else:
            if count_include_pad:
                divide_factor = pool_size
            else:
                divide_factor = (hend - hstart) * (wend - wstart)
        with ox.unsafe():
            top_data[index] = aveval / divide_factor
