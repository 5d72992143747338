"""2-D max pooling (NCHW) with dilation, the value and its index, NaN propagating.

Ported from PyTorch (BSD-3-Clause), aten/src/ATen/native/cuda/DilatedMaxPool2d.cu
(`max_pool_forward_nchw`, a CUDA_KERNEL_LOOP), as first written in issue 29's second probe; the decoding of the output
index is nchw_position.py's, shared with the avg_pool2d port."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, i64, thread, block, grid
from nchw_position import pooled_position

T = ox.TypeVar("T", f32, ox.f64)


@ox.kernel
def max_pool_forward_nchw(nthreads: i64, bottom_data: Slice[T], channels: i64, height: i64, width: i64,
                          pooled_height: i64, pooled_width: i64, kernel_h: i32, kernel_w: i32, stride_h: i32,
                          stride_w: i32, pad_h: i32, pad_w: i32, dilation_h: i32, dilation_w: i32,
                          top_data: MutSlice[T], top_mask: MutSlice[i64]) -> None:
    for index in range(block.idx.x * block.dim.x + thread.idx.x, nthreads, block.dim.x * grid.dim.x):
        n, c, ph, pw = pooled_position(index, channels, pooled_height, pooled_width)
        hstart = ph * stride_h - pad_h
        wstart = pw * stride_w - pad_w
        hend = min(hstart + (kernel_h - 1) * dilation_h + 1, height)
        wend = min(wstart + (kernel_w - 1) * dilation_w + 1, width)
        while hstart < 0:
            hstart += dilation_h
        while wstart < 0:
            wstart += dilation_w
        maxval = T(float("-inf"))
        maxidx = hstart * width + wstart
        btm = bottom_data[(n * channels + c) * height * width:]
        for h in range(hstart, hend, dilation_h):
            for w in range(wstart, wend, dilation_w):
                tmp = btm[h * width + w]
                if tmp > maxval or ox.math.isnan(tmp):
                    maxidx = h * width + w
                    maxval = tmp
        with ox.unsafe():
            top_data[index] = maxval
            top_mask[index] = maxidx
