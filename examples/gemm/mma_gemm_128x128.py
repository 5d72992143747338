"""C = A @ B on the tensor cores, the sm_80 way, in 48 KiB of static shared memory (the first
version of examples/gemm/mma_gemm.py, kept as the small-tile baseline the benchmark compares
with): bf16 or f16 in, f32 accumulate, bf16/f16 out.

A is M×K and B is K×N, both row-major (torch's ``a @ b``), C is M×N row-major. One block of
4 warps computes a 128×128 tile of C; each warp a 64×64 part of it, as 4×8 ``mma.sync``
m16n8k16 accumulators. The K loop is a 3-stage ``cp.async`` pipeline: while the warps multiply
one 128×32 tile of A and 32×128 tile of B from shared memory, the copies of the next two are in
flight. Shared tiles are swizzled (``ox.mma.swizzle``) so that ``ldmatrix`` reads without bank
conflicts: A's 64-byte rows with Swizzle<2,3,3>, B's 256-byte rows with Swizzle<3,3,4>.

Sizes: any M; N and K multiples of 8 (rows of 16 bytes). Edges read zeros (``src_bytes=0``
from a clamped address) and stores are guarded.

    mma_gemm_128x128[(cdiv(n, 128), cdiv(m, 128)), 128](a, b, m, n, k, c)
"""
import oxide as ox
from oxide import MutSlice, Slice, bf16, block, f16, grid, i32, i64, thread

T = ox.TypeVar("T", bf16, f16)

BM = 128  # the block's tile of C
BN = 128
BK = 32  # the K step of the pipeline
STAGES = 3  # 3 × (8 KiB of A + 8 KiB of B) = 48 KiB of static shared memory
THREADS = 128  # 4 warps, 2 × 2
WM = 64  # a warp's tile of C
WN = 64
MI = 4  # m16 fragments per warp: WM // 16
NI = 8  # n8 fragments per warp: WN // 8
A_TILE = 4096  # elements of one stage: BM * BK
B_TILE = 4096  # BK * BN
SA = 12288  # STAGES * A_TILE
SB = 12288  # STAGES * B_TILE
ACC = 32  # MI * NI
GROUP = 8  # tile rows per group of the launch order


@ox.kernel(bounds_check=False, launch_bounds=128)  # THREADS
def mma_gemm_128x128(a: Slice[T], b: Slice[T], m: i32, n: i32, k: i32, c: MutSlice[T]) -> None:
    # checked by the runtime before the launch (launch preconditions)...
    assert block.dim.x == THREADS
    assert len(a) == i64(m) * k and len(b) == i64(k) * n and len(c) == i64(m) * n
    assert m > 0 and n > 0 and k > 0
    # ...and on the device (a precondition has no %), reported at the next synchronize
    assert n % 8 == 0 and k % 8 == 0
    sa = ox.shared.array(SA, T)
    sb = ox.shared.array(SB, T)
    fa = ox.mma.fragment_a("m16n8k16", T, MI)
    fb = ox.mma.fragment_b("m16n8k16", T, NI)
    acc = ox.mma.fragment_c("m16n8k16", ACC)
    for i in ox.static_range(ACC):
        for j in ox.static_range(4):
            acc[i, j] = 0.0
    tid = thread.idx.x
    lane = tid % 32
    wm = (tid // 32) // 2
    wn = (tid // 32) % 2
    # blocks run in groups of GROUP tile rows, column by column inside a group, so that the
    # blocks resident at once share their A and B tiles in L2
    tiles_m = grid.dim.y
    tiles_n = grid.dim.x
    pid = block.idx.y * tiles_n + block.idx.x
    first_m = (pid // (GROUP * tiles_n)) * GROUP
    rows = min(tiles_m - first_m, GROUP)
    m0 = (first_m + (pid % (GROUP * tiles_n)) % rows) * BM
    n0 = ((pid % (GROUP * tiles_n)) // rows) * BN
    k_tiles = (k + BK - 1) // BK
    # iteration `it` starts the copies of K tile `it` and multiplies tile it - (STAGES - 1)
    for it in range(k_tiles + STAGES - 1):
        if it >= STAGES - 1:
            ox.cp_async.wait_group(STAGES - 2)  # the tile to multiply has landed...
            block.sync()  # ...for every thread, and the stage copied next is free again
        if it < k_tiles:
            stage = it % STAGES
            k0 = it * BK
            for i in ox.static_range(A_TILE // 8 // THREADS):  # 16-byte chunks per thread
                q = tid + i * THREADS
                row = q // (BK // 8)
                kc = (q % (BK // 8)) * 8
                inside = m0 + row < m and k0 + kc < k
                src = i64(min(m0 + row, m - 1)) * k + min(k0 + kc, k - 8)
                ox.cp_async.copy(sa, stage * A_TILE + ox.mma.swizzle(row * BK + kc, 2, 3, 3), a, src, 16,
                                 cache="cg", src_bytes=i32(16) if inside else i32(0))
            for i in ox.static_range(B_TILE // 8 // THREADS):
                q = tid + i * THREADS
                kr = q // (BN // 8)
                nc = (q % (BN // 8)) * 8
                inside = k0 + kr < k and n0 + nc < n
                src = i64(min(k0 + kr, k - 1)) * n + min(n0 + nc, n - 8)
                ox.cp_async.copy(sb, stage * B_TILE + ox.mma.swizzle(kr * BN + nc, 3, 3, 4), b, src, 16,
                                 cache="cg", src_bytes=i32(16) if inside else i32(0))
        ox.cp_async.commit_group()  # an empty group past the last tile keeps the count uniform
        if it >= STAGES - 1:
            base_a = ((it - (STAGES - 1)) % STAGES) * A_TILE
            base_b = ((it - (STAGES - 1)) % STAGES) * B_TILE
            for kk in ox.static_range(BK // 16):
                for mi in ox.static_range(MI):
                    row = wm * WM + mi * 16 + lane % 16
                    col = kk * 16 + 8 * (lane // 16)
                    ox.mma.ldmatrix(fa[mi], sa, base_a + ox.mma.swizzle(row * BK + col, 2, 3, 3))
                for p in ox.static_range(NI // 2):  # two n8 fragments of B per ldmatrix.x4.trans
                    kr = kk * 16 + lane % 16
                    nc = wn * WN + p * 16 + 8 * (lane // 16)
                    ox.mma.ldmatrix(fb[2 * p], fb[2 * p + 1], sb, base_b + ox.mma.swizzle(kr * BN + nc, 3, 3, 4),
                                    trans=True)
                for mi in ox.static_range(MI):
                    for ni in ox.static_range(NI):
                        ox.mma.sync(acc[mi * NI + ni], fa[mi], fb[ni], acc[mi * NI + ni])
    ox.cp_async.wait_group(0)
    # lane l holds c[0], c[1] at row l // 4, columns 2 * (l % 4) + 0/1, and c[2], c[3] 8 rows below
    for mi in ox.static_range(MI):
        for ni in ox.static_range(NI):
            row = m0 + wm * WM + mi * 16 + lane // 4
            col = n0 + wn * WN + ni * 8 + 2 * (lane % 4)
            if col < n:
                with ox.unsafe():
                    if row < m:
                        c.store2((i64(row) * n + col) // 2, T(acc[mi * NI + ni, 0]), T(acc[mi * NI + ni, 1]))
                    if row + 8 < m:
                        c.store2((i64(row + 8) * n + col) // 2, T(acc[mi * NI + ni, 2]), T(acc[mi * NI + ni, 3]))
