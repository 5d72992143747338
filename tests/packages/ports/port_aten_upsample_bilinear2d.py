"""2-D bilinear upsampling (NCHW), a thread per output pixel looping over batch and channels.

Ported from PyTorch (BSD-3-Clause), aten/src/ATen/native/cuda/UpSampleBilinear2d.cu
(`upsample_bilinear2d_out_frame`, `area_pixel_compute_source_index`), as first written in issue
29's second probe: `static_cast<accscalar_t>(0.5)` written `0.5` (`dst_index + 0.5` is f64 as
in C, until it meets the f32 `scale`: then it is computed in f32, as a literal meeting an f32 is;
before that rule the f64 result returned as f32 was a located error)."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread, block


def area_pixel_compute_source_index(scale: f32, dst_index: i32, align_corners: bool, cubic: bool) -> f32:
    if align_corners:
        return scale * dst_index
    src_idx = scale * (dst_index + 0.5) - 0.5
    return 0.0 if (not cubic and src_idx < 0.0) else src_idx


@ox.kernel
def upsample_bilinear2d_out_frame(n: i32, rheight: f32, rwidth: f32, align_corners: bool, idata: Slice[f32],
                                  odata: MutSlice[f32], nbatch: i32, channels: i32, height1: i32, width1: i32,
                                  height2: i32, width2: i32) -> None:
    index = thread.idx.x + block.idx.x * block.dim.x
    if index < n:
        w2 = index % width2
        h2 = index // width2
        h1r = area_pixel_compute_source_index(rheight, h2, align_corners, False)
        h1 = i32(h1r)
        h1p = 1 if h1 < height1 - 1 else 0
        h1lambda = h1r - h1
        h0lambda = 1.0 - h1lambda
        w1r = area_pixel_compute_source_index(rwidth, w2, align_corners, False)
        w1 = i32(w1r)
        w1p = 1 if w1 < width1 - 1 else 0
        w1lambda = w1r - w1
        w0lambda = 1.0 - w1lambda
        for nn in range(nbatch):
            for c in range(channels):
                base = (nn * channels + c)
                val = h0lambda * (w0lambda * idata[(base * height1 + h1) * width1 + w1]
                                  + w1lambda * idata[(base * height1 + h1) * width1 + w1 + w1p]) \
                    + h1lambda * (w0lambda * idata[(base * height1 + h1 + h1p) * width1 + w1]
                                  + w1lambda * idata[(base * height1 + h1 + h1p) * width1 + w1 + w1p])
                with ox.unsafe():
                    odata[(base * height2 + h2) * width2 + w2] = val
