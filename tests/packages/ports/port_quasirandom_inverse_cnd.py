"""Moro's inverse cumulative normal of 32-bit integers (or of evenly spaced samples).

Ported from NVIDIA cuda-samples (BSD-3-Clause), Samples/5_Domain_Specific/quasirandomGenerator/
quasirandomGenerator_kernel.cu (`MoroInvCNDgpu`, `inverseCNDKernel`), as first written in issue
29's second probe."""
import oxide as ox
from oxide import MutSlice, f32, u32, thread, block, grid


def moro_inv_cnd_gpu(x: u32) -> f32:
    a1 = 2.50662823884
    a2 = -18.61500062529
    a3 = 41.39119773534
    a4 = -25.44106049637
    b1 = -8.4735109309
    b2 = 23.08336743743
    b3 = -21.06224101826
    b4 = 3.13082909833
    c1 = 0.337475482272615
    c2 = 0.976169019091719
    c3 = 0.160797971491821
    c4 = 2.76438810333863E-02
    c5 = 3.8405729373609E-03
    c6 = 3.951896511919E-04
    c7 = 3.21767881768E-05
    c8 = 2.888167364E-07
    c9 = 3.960315187E-07
    z: f32 = 0.0
    negate = False
    if x >= 0x80000000:
        x = 0xffffffff - x
        negate = True
    x1 = f32(1.0) / f32(0xffffffff)
    x2 = x1 / 2.0
    p1 = x * x1 + x2
    p2 = p1 - 0.5
    if p2 > -0.42:
        z = p2 * p2
        z = p2 * (((a4 * z + a3) * z + a2) * z + a1) / ((((b4 * z + b3) * z + b2) * z + b1) * z + 1.0)
    else:
        z = ox.math.fast_log(-ox.math.fast_log(p1))
        z = -(c1 + z * (c2 + z * (c3 + z * (c4 + z * (c5 + z * (c6 + z * (c7 + z * (c8 + z * c9))))))))
    return -z if negate else z


@ox.kernel
def inverse_cnd_kernel(d_output: MutSlice[f32], d_input: MutSlice[u32], path_n: u32) -> None:
    distance = u32(0xffffffff) // (path_n + 1)
    tid = block.dim.x * block.idx.x + thread.idx.x
    thread_n = block.dim.x * grid.dim.x
    if len(d_input) > 0:
        for pos in range(tid, path_n, thread_n):
            d = d_input[pos]
            with ox.unsafe():
                d_output[pos] = f32(moro_inv_cnd_gpu(d))
    else:
        for pos in range(tid, path_n, thread_n):
            d = (pos + 1) * distance
            with ox.unsafe():
                d_output[pos] = f32(moro_inv_cnd_gpu(d))
