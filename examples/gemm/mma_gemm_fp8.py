"""C = scale · A @ Bᵀ on the tensor cores with 8-bit floats (sm_89+): f8e4m3 in, f32 accumulate,
bf16 out — what ``torch._scaled_mm(a, bt.t(), scale_a, scale_b, out_dtype=torch.bfloat16)``
computes with per-tensor scales (``scale`` is their product).

A is M×K and Bt is N×K, both row-major: B is taken K-contiguous ("column-major", as cuBLASLt's
fp8 GEMM wants it), because ``ldmatrix`` transposes 16-bit elements only, so the B fragments of
an fp8 ``mma.sync`` m16n8k32 load untransposed from rows of Bt. The structure is
examples/gemm/mma_gemm.py's in bytes: 8 warps (2 × 4), a 128×256 tile of C per block, 64×64 per
warp as 4×8 m16n8k32 accumulators, a 3-stage ``cp.async`` pipeline over K tiles of 128 (128-byte
rows, Swizzle<3,4,3> on element offsets), 144 KiB of dynamic shared memory.

On sm_89 and sm_120 ``mma.sync`` with e4m3 is one QMMA.16832 instruction. On sm_90 (H100/H200)
there is no such instruction: ptxas unpacks the fragments to f16 (F2FP) and issues two
HMMA.16816, so on Hopper this kernel runs at about the f16 ``mma.sync`` rate; Hopper's fp8 rate
needs ``wgmma`` (examples/gemm/wgmma_gemm_fp8.py).

Sizes: any M; N a multiple of 8 and K of 16 (rows of 16 bytes), K ≤ 2^30.

    mma_gemm_fp8[(cdiv(n, BN), cdiv(m, BM)), THREADS, None, SMEM_BYTES](a, bt, scale, m, n, k, c)
"""
import oxide as ox
from oxide import MutSlice, Slice, bf16, block, f8e4m3, f32, grid, i32, i64, thread

BM = 128  # the block's tile of C
BN = 256
BK = 128  # the K step of the pipeline (bytes and elements)
STAGES = 3
THREADS = 256  # 8 warps: 2 rows x 4 columns of warp tiles
WM = 64  # a warp's tile of C
WN = 64
MI = 4  # m16 fragments per warp: WM // 16
NI = 8  # n8 fragments per warp: WN // 8
ACC = 32  # MI * NI
A_TILE = 16384  # elements of one stage: BM * BK
B_TILE = 32768  # BN * BK
B_STAGES = 49152  # STAGES * A_TILE: the Bt stages follow the A stages in the shared array
SMEM_BYTES = 147456  # STAGES * (A_TILE + B_TILE)
A_COPIES = 4  # 16-byte copies of A per thread and stage: A_TILE // 16 // THREADS
B_COPIES = 8  # B_TILE // 16 // THREADS
GROUP = 8  # tile rows per group of the launch order


@ox.kernel(bounds_check=False, launch_bounds=256)  # THREADS
def mma_gemm_fp8(a: Slice[f8e4m3], bt: Slice[f8e4m3], scale: f32, m: i32, n: i32, k: i32, c: MutSlice[bf16]) -> None:
    assert block.dim.x == THREADS
    assert len(a) == i64(m) * k and len(bt) == i64(n) * k and len(c) == i64(m) * n
    assert m > 0 and n > 0 and k > 0 and k <= 1 << 30
    assert n % 8 == 0 and k % 16 == 0
    smem = ox.shared.dynamic(f8e4m3)  # STAGES tiles of A, then STAGES tiles of Bt
    fa = ox.mma.fragment_a("m16n8k32", f8e4m3, MI)
    fb = ox.mma.fragment_b("m16n8k32", f8e4m3, NI)
    acc = ox.mma.fragment_c("m16n8k32", ACC)
    for i in ox.static_range(ACC):
        for j in ox.static_range(4):
            acc[i, j] = 0.0
    tid = thread.idx.x
    lane = tid % 32
    wm = (tid // 32) // 4
    wn = (tid // 32) % 4
    tiles_m = grid.dim.y
    tiles_n = grid.dim.x
    pid = block.idx.y * tiles_n + block.idx.x
    first_m = (pid // (GROUP * tiles_n)) * GROUP
    rows = min(tiles_m - first_m, GROUP)
    m0 = (first_m + (pid % (GROUP * tiles_n)) % rows) * BM
    n0 = ((pid % (GROUP * tiles_n)) // rows) * BN
    k_tiles = (k + BK - 1) // BK
    # this thread's copies: rows row0 + 32 i of A and of Bt, at column col
    row0 = tid // 8
    col = (tid % 8) * 16
    # this lane's ldmatrix rows (kk = 0, first fragment), swizzled: A rows of m, Bt rows of n
    a_lane = ox.mma.swizzle((wm * WM + lane % 16) * BK + 16 * (lane // 16), 3, 4, 3)
    b_lane = ox.mma.swizzle((wn * WN + 8 * (lane // 16) + lane % 8) * BK + 16 * ((lane // 8) % 2), 3, 4, 3)
    # as in mma_gemm.py: the first STAGES - 1 tiles, then one basic block per K tile
    for s in ox.static_range(STAGES - 1):
        kc = s * BK + col
        for i in ox.static_range(A_COPIES):
            row = row0 + 32 * i
            inside = m0 + row < m and kc < k
            src = i64(m0 + row) * k + kc if inside else i64(0)
            ox.cp_async.copy(smem, s * A_TILE + ox.mma.swizzle(row * BK + col, 3, 4, 3), a, src, 16,
                             cache="cg", src_bytes=i32(16) if inside else i32(0))
        for i in ox.static_range(B_COPIES):
            row = row0 + 32 * i
            inside = n0 + row < n and kc < k
            src = i64(n0 + row) * k + kc if inside else i64(0)
            ox.cp_async.copy(smem, B_STAGES + s * B_TILE + ox.mma.swizzle(row * BK + col, 3, 4, 3), bt, src, 16,
                             cache="cg", src_bytes=i32(16) if inside else i32(0))
        ox.cp_async.commit_group()
    read = i32(0)  # the stage of tile kt
    write = i32(STAGES - 1)  # the stage of tile kt + STAGES - 1
    for kt in range(k_tiles):
        ox.cp_async.wait_group(STAGES - 2)
        block.sync()
        kc = (kt + STAGES - 1) * BK + col
        inside_k = kc < k
        for i in ox.static_range(A_COPIES):
            row = row0 + 32 * i
            inside = m0 + row < m and inside_k
            src = i64(m0 + row) * k + kc if inside else i64(0)
            ox.cp_async.copy(smem, write * A_TILE + ox.mma.swizzle(row * BK + col, 3, 4, 3), a, src, 16,
                             cache="cg", src_bytes=i32(16) if inside else i32(0))
        for i in ox.static_range(B_COPIES):
            row = row0 + 32 * i
            inside = n0 + row < n and inside_k
            src = i64(n0 + row) * k + kc if inside else i64(0)
            ox.cp_async.copy(smem, B_STAGES + write * B_TILE + ox.mma.swizzle(row * BK + col, 3, 4, 3), bt, src,
                             16, cache="cg", src_bytes=i32(16) if inside else i32(0))
        ox.cp_async.commit_group()
        base_a = read * A_TILE + a_lane
        base_b = B_STAGES + read * B_TILE + b_lane
        for kk in ox.static_range(BK // 32):
            for mi in ox.static_range(MI):
                ox.mma.ldmatrix(fa[mi], smem, (base_a ^ (kk * 32)) + mi * 16 * BK)
            for p in ox.static_range(NI // 2):  # n8 fragments 2p and 2p + 1: 16 rows of Bt
                ox.mma.ldmatrix(fb[2 * p], fb[2 * p + 1], smem, (base_b ^ (kk * 32)) + p * 16 * BK)
            for mi in ox.static_range(MI):
                for ni in ox.static_range(NI):
                    ox.mma.sync(acc[mi * NI + ni], fa[mi], fb[ni], acc[mi * NI + ni])
        write = read
        read = read + 1 if read + 1 < STAGES else i32(0)
    ox.cp_async.wait_group(0)
    for mi in ox.static_range(MI):
        for ni in ox.static_range(NI):
            row = m0 + wm * WM + mi * 16 + lane // 4
            col_c = n0 + wn * WN + ni * 8 + 2 * (lane % 4)
            if col_c < n:
                with ox.unsafe():
                    if row < m:
                        c.store2((i64(row) * n + col_c) // 2, bf16(acc[mi * NI + ni, 0] * scale),
                                 bf16(acc[mi * NI + ni, 1] * scale))
                    if row + 8 < m:
                        c.store2((i64(row + 8) * n + col_c) // 2, bf16(acc[mi * NI + ni, 2] * scale),
                                 bf16(acc[mi * NI + ni, 3] * scale))
