"""k-means assignment step: each point finds its nearest cluster centre.

Ported from Rodinia 3.1, cuda/kmeans/kmeans_cuda_kernel.cu (`kmeansPoint`), the way its
author writes it: the cluster centres in __constant__ memory filled from the host with
cudaMemcpyToSymbol, features stored feature-major (`features[l * npoints + point_id]`), the
index computed from a 2-D grid of 1-D blocks, FLT_MAX as the starting distance, int indices."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, block, f32, grid, i32, thread

ASSUMED_NR_CLUSTERS = 32
MAX_FEATURES = 16
FLT_MAX = 3.402823466e38

c_clusters = ox.constant.array(ASSUMED_NR_CLUSTERS * MAX_FEATURES, f32)


@ox.kernel
def kmeans_point(features: Slice[f32], nfeatures: i32, npoints: i32, nclusters: i32,
                 membership: MutSlice[i32]) -> None:
    block_id = grid.dim.x * block.idx.y + block.idx.x
    point_id = block_id * block.dim.x * block.dim.y + thread.idx.x
    index = -1
    if point_id < npoints:
        min_dist = FLT_MAX
        for i in range(nclusters):
            cluster_base_index = i * nfeatures
            ans: f32 = 0.0
            for l in range(nfeatures):
                addr = point_id + l * npoints
                diff = features[addr] - c_clusters[cluster_base_index + l]
                ans += diff * diff
            dist = ans
            if dist < min_dist:
                min_dist = dist
                index = i
    if point_id < npoints:
        with ox.unsafe():
            membership[point_id] = index
