"""All-pairs gravitational n-body accelerations with shared tiles of float4 bodies.

Ported from NVIDIA cuda-samples, Samples/5_Domain_Specific/nbody/bodysystemcuda_impl.h
(`bodyBodyInteraction`, `computeBodyAccel`; the GPU Gems 3 chapter 31 kernel), the way its
author writes it: positions as float4 (x, y, z, mass), a float3 accumulator, the softening
squared added to the distance, rsqrtf cubed, the bodies staged through a shared array of
float4 one tile (blockDim.x bodies) at a time, `#pragma unroll` over the tile."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, f32x4, i32, thread

BLOCK = 128


def body_body_interaction(ai: f32x4, bi: f32x4, bj: f32x4, softening_squared: f32) -> f32x4:
    rx = bj.x - bi.x
    ry = bj.y - bi.y
    rz = bj.z - bi.z
    dist_sqr = rx * rx + ry * ry + rz * rz + softening_squared
    inv_dist = ox.math.rsqrt(dist_sqr)
    inv_dist_cube = inv_dist * inv_dist * inv_dist
    s = bj.w * inv_dist_cube
    ai.x += rx * s
    ai.y += ry * s
    ai.z += rz * s
    return ai


@ox.kernel(launch_bounds=BLOCK)
def compute_body_accel(pos: Slice[f32], accel: MutSlice[f32], num_bodies: i32, softening_squared: f32) -> None:
    assert block.dim.x == BLOCK
    shared_pos = ox.shared.array(BLOCK, f32x4)
    index = block.idx.x * BLOCK + thread.idx.x
    my_pos = pos.load4(index) if index < num_bodies else f32x4(0.0)
    acc = f32x4(0.0)
    num_tiles = (num_bodies + BLOCK - 1) // BLOCK
    for tile in range(num_tiles):
        j = tile * BLOCK + thread.idx.x
        shared_pos[thread.idx.x] = pos.load4(j) if j < num_bodies else f32x4(0.0)
        block.sync()
        for counter in ox.static_range(BLOCK):
            acc = body_body_interaction(acc, my_pos, shared_pos[counter], softening_squared)
        block.sync()
    if index < num_bodies:
        with ox.unsafe():
            accel.store4(index, acc)
