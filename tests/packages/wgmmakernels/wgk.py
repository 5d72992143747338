"""One-warpgroup wgmma tiles for sm_90a (tests/test_wgmma_gpu.py): C (64×128, f32) = A (64×64)
· B, with B K-major (given as Bᵀ, 128×64 row-major) or N-major (B itself, 64×128 row-major).
The tiles are written into swizzled shared arrays by ordinary stores, made visible to the
tensor cores by fence.proxy_async and a barrier, multiplied by four m64n128k16 wgmmas (the
first with scale_d=False) and read back through the accumulator layout."""
import oxide as ox
from oxide import MutSlice, Slice, bf16, block, f16, f32, thread

T = ox.TypeVar("T", bf16, f16)


@ox.kernel(launch_bounds=128)
def tile_k_major(a: Slice[T], bt: Slice[T], c: MutSlice[f32]) -> None:
    assert block.dim.x == 128 and len(a) == 4096 and len(bt) == 8192 and len(c) == 8192
    sa = ox.shared.array(4096, T, swizzle=128)  # [64 rows of M][64 of K]
    sb = ox.shared.array(8192, T, swizzle=128)  # [128 rows of N][64 of K]
    tid = thread.idx.x
    for i in range(tid, 4096, 128):
        sa[ox.mma.swizzle(i, 3, 3, 3)] = a[i]
    for i in range(tid, 8192, 128):
        sb[ox.mma.swizzle(i, 3, 3, 3)] = bt[i]
    ox.fence.proxy_async()
    block.sync()
    acc = ox.wgmma.accumulator("m64n128k16")
    ox.wgmma.fence()
    for kk in ox.static_range(4):
        ox.wgmma.mma(acc, sa, kk * 16, sb, kk * 16, scale_d=kk > 0)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, acc)
    row = 16 * (tid // 32) + (tid % 32) // 4
    for j in ox.static_range(16):
        col = 8 * j + 2 * (tid % 4)
        with ox.unsafe():
            c[row * 128 + col] = acc[4 * j]
            c[row * 128 + col + 1] = acc[4 * j + 1]
            c[(row + 8) * 128 + col] = acc[4 * j + 2]
            c[(row + 8) * 128 + col + 1] = acc[4 * j + 3]


@ox.kernel(launch_bounds=128)
def tile_n_major(a: Slice[T], b: Slice[T], c: MutSlice[f32]) -> None:
    assert block.dim.x == 128 and len(a) == 4096 and len(b) == 8192 and len(c) == 8192
    sa = ox.shared.array(4096, T, swizzle=128)  # [64 rows of M][64 of K]
    sb = ox.shared.array(8192, T, swizzle=128)  # [2 chunks of 64 of N][64 rows of K][64 of N]
    tid = thread.idx.x
    for i in range(tid, 4096, 128):
        sa[ox.mma.swizzle(i, 3, 3, 3)] = a[i]
    for i in range(tid, 8192, 128):
        kr = i // 128
        nc = i % 128
        sb[(nc // 64) * 4096 + ox.mma.swizzle(kr * 64 + nc % 64, 3, 3, 3)] = b[i]
    ox.fence.proxy_async()
    block.sync()
    acc = ox.wgmma.accumulator("m64n128k16")
    ox.wgmma.fence()
    for kk in ox.static_range(4):
        ox.wgmma.mma(acc, sa, kk * 16, sb, kk * 16 * 64, scale_d=kk > 0, b_major="mn", b_rows=64)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, acc)
    row = 16 * (tid // 32) + (tid % 32) // 4
    for j in ox.static_range(16):
        col = 8 * j + 2 * (tid % 4)
        with ox.unsafe():
            c[row * 128 + col] = acc[4 * j]
            c[row * 128 + col + 1] = acc[4 * j + 1]
            c[(row + 8) * 128 + col] = acc[4 * j + 2]
            c[(row + 8) * 128 + col + 1] = acc[4 * j + 3]
