"""Nearest-neighbour 2-D upsampling of N*C planes, a 3-D grid over (w, h, planes).

Ported from PyTorch, aten/src/ATen/native/cuda/UpSampleNearest2d.cu
(`upsample_nearest2d_out_frame`, with `nearest_neighbor_compute_source_index` of UpSample.cuh),
the way its author writes it: the plane index and its stride over the z dimension, the source
index `min(int(floor(dst * scale)), size - 1)`, size_t index arithmetic, a loop over planes."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, grid, i32, i64, thread


def nearest_neighbor_compute_source_index(scale: f32, dst_index: i32, input_size: i32) -> i32:
    return min(i32(ox.math.floor(dst_index * scale)), input_size - 1)


@ox.kernel(launch_bounds=1024)
def upsample_nearest2d_out_frame(idata: Slice[f32], odata: MutSlice[f32], nc: i64, height1: i64, width1: i64,
                                 height2: i64, width2: i64, height_scale: f32, width_scale: f32) -> None:
    nc_iter = i64(thread.idx.z + block.idx.z * block.dim.z)
    w2 = i32(thread.idx.x + block.idx.x * block.dim.x)
    h2 = i32(thread.idx.y + block.idx.y * block.dim.y)
    if w2 >= width2 or h2 >= height2:
        return
    nc_stride = i32(block.dim.z * grid.dim.z)
    h1 = i64(h2) if height1 == height2 else i64(nearest_neighbor_compute_source_index(height_scale, h2, i32(height1)))
    w1 = i64(w2) if width1 == width2 else i64(nearest_neighbor_compute_source_index(width_scale, w2, i32(width1)))
    src_index = (nc_iter * height1 + h1) * width1 + w1
    src_index_stride = nc_stride * width1 * height1
    dst_index = (nc_iter * height2 + h2) * width2 + w2
    dst_index_stride = nc_stride * width2 * height2
    while nc_iter < nc:
        with ox.unsafe():
            odata[dst_index] = idata[src_index]
        dst_index += dst_index_stride
        src_index += src_index_stride
        nc_iter += nc_stride
