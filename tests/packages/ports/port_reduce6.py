"""Multi-element-per-thread sum reduction with a warp-shuffle tail (the sample's fastest).

Ported from NVIDIA cuda-samples, Samples/2_Concepts_and_Techniques/reduction/
reduction_kernel.cu (`reduce6<T, blockSize, nIsPow2>`), the way its author writes it:
blockSize and nIsPow2 template parameters, `unsigned int n`, a grid-stride loop adding two
elements per step (the second only when `nIsPow2 || i + blockSize < n`), the shared tree
steps as `sdata[tid] = mySum = mySum + sdata[tid + 128]` guarded by `blockSize >= 256`, and
the last warp reduced with shuffles after a read of the second warp's partial sum."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, grid, thread, u32, warp


@ox.kernel(constexprs={"BLOCK_SIZE": [128, 256, 512], "N_IS_POW2": [False, True]})
def reduce6(g_idata: Slice[f32], g_odata: MutSlice[f32], n: u32, BLOCK_SIZE: ox.Constexpr[int],
            N_IS_POW2: ox.Constexpr[bool]) -> None:
    sdata = ox.shared.array(BLOCK_SIZE, f32)
    tid = thread.idx.x
    grid_size = BLOCK_SIZE * 2 * grid.dim.x
    my_sum = 0.0

    i = block.idx.x * BLOCK_SIZE * 2 + thread.idx.x
    while i < n:
        my_sum += g_idata[i]
        if N_IS_POW2 or i + BLOCK_SIZE < n:
            my_sum += g_idata[i + BLOCK_SIZE]
        i += grid_size

    sdata[tid] = my_sum
    block.sync()

    if BLOCK_SIZE >= 512 and tid < 256:
        sdata[tid] = my_sum = my_sum + sdata[tid + 256]
    block.sync()
    if BLOCK_SIZE >= 256 and tid < 128:
        sdata[tid] = my_sum = my_sum + sdata[tid + 128]
    block.sync()
    if BLOCK_SIZE >= 128 and tid < 64:
        sdata[tid] = my_sum = my_sum + sdata[tid + 64]
    block.sync()

    if tid < 32:
        if BLOCK_SIZE >= 64:
            my_sum += sdata[tid + 32]
        offset = 32 // 2
        while offset > 0:
            my_sum += warp.shfl_down(my_sum, offset)
            offset //= 2

    if tid == 0:
        with ox.unsafe():
            g_odata[block.idx.x] = my_sum
