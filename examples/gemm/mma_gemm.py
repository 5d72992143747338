"""C = A @ B on the tensor cores, the sm_80 way: a multistage ``mma.sync`` GEMM, bf16 or f16 in,
f32 accumulate, bf16/f16 out.

A is M×K and B is K×N, both row-major (torch's ``a @ b``), C is M×N row-major. One block of
8 warps (2 × 4) computes a 128×256 tile of C; each warp a 64×64 part of it, as 4×8 ``mma.sync``
m16n8k16 accumulators. The K loop is a 3-stage ``cp.async`` pipeline over K tiles of 64: while
the warps multiply one 128×64 tile of A and 64×256 tile of B, the copies of the next two are in
flight, in 3 × 48 KiB = 144 KiB of dynamic shared memory (sm_80 has 163 KiB, sm_90 227 KiB; not
sm_86/sm_89, which have 99 KiB). Shared tiles are swizzled (``ox.mma.swizzle``) so that
``ldmatrix`` reads and the copies write without bank conflicts: A's 128-byte rows with
Swizzle<3,3,3>, B's 512-byte rows with Swizzle<3,3,5>. Blocks run in groups of 8 tile rows so
that the blocks resident at once share their tiles in L2.

Each lane's ``ldmatrix`` addresses are computed once: the swizzle of a row's first 16-byte
chunk, to which a K step adds (A: the swizzle flips the chunk bits that a step of 16 columns
sets, so the step is an XOR; B: a step of 16 rows keeps the row's low bits, so it is an add)
and a stage adds its base; the copies' global offsets advance by whole rows.

Sizes: any M; N and K multiples of 8 (rows of 16 bytes), K ≤ 2^30. Edges read zeros (``src_bytes=0``, from
offset 0) and stores are guarded.

    mma_gemm[(cdiv(n, BN), cdiv(m, BM)), THREADS, None, SMEM_BYTES](a, b, m, n, k, c)
"""
import oxide as ox
from oxide import MutSlice, Slice, bf16, block, f16, grid, i32, i64, thread, u32

T = ox.TypeVar("T", bf16, f16)

BM = 128  # the block's tile of C
BN = 256
BK = 64  # the K step of the pipeline
STAGES = 3
THREADS = 256  # 8 warps: 2 rows x 4 columns of warp tiles
WM = 64  # a warp's tile of C
WN = 64
MI = 4  # m16 fragments per warp: WM // 16
NI = 8  # n8 fragments per warp: WN // 8
ACC = 32  # MI * NI
A_TILE = 8192  # elements of one stage: BM * BK
B_TILE = 16384  # BK * BN
B_STAGES = 24576  # STAGES * A_TILE: the B stages follow the A stages in the shared array
SMEM_BYTES = 147456  # STAGES * (A_TILE + B_TILE) * 2 bytes
A_COPIES = 4  # 16-byte copies of A per thread and stage: A_TILE // 8 // THREADS
B_COPIES = 8  # B_TILE // 8 // THREADS
GROUP = 8  # tile rows per group of the launch order


@ox.kernel(bounds_check=False, launch_bounds=256)  # THREADS
def mma_gemm(a: Slice[T], b: Slice[T], m: i32, n: i32, k: i32, c: MutSlice[T]) -> None:
    # checked by the runtime before the launch (launch preconditions)...
    assert block.dim.x == THREADS
    assert len(a) == i64(m) * k and len(b) == i64(k) * n and len(c) == i64(m) * n
    assert m > 0 and n > 0 and k > 0 and k <= 1 << 30
    # ...and on the device (a precondition has no %), reported at the next synchronize
    assert n % 8 == 0 and k % 8 == 0
    smem = ox.shared.dynamic(T)  # STAGES tiles of A, then STAGES tiles of B
    fa = ox.mma.fragment_a("m16n8k16", T, MI)
    fb = ox.mma.fragment_b("m16n8k16", T, NI)
    acc = ox.mma.fragment_c("m16n8k16", ACC)
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
    # this thread's copies: A rows a_row + 32 i at column a_col, B rows b_row + 8 i at column b_col
    a_row = tid // 8
    a_col = (tid % 8) * 8
    b_row = tid // 32
    b_col = (tid % 32) * 8
    b_inside_n = n0 + b_col < n
    # this lane's ldmatrix rows (kk = 0, first fragment), swizzled
    a_lane = ox.mma.swizzle((wm * WM + lane % 16) * BK + 8 * (lane // 16), 3, 3, 3)
    b_lane = ox.mma.swizzle((lane % 16) * BN + wn * WN + 8 * (lane // 16), 3, 3, 5)
    # the first STAGES - 1 tiles; then iteration kt waits for tile kt, starts the copies of tile
    # kt + STAGES - 1 into the stage tile kt - 1 left, and multiplies tile kt. Copies past the last
    # tile read nothing (src_bytes=0), so the loop body is one basic block: ptxas interleaves the
    # copies, ldmatrix and mma.sync of an iteration freely
    for s in ox.static_range(STAGES - 1):
        ka = s * BK + a_col
        for i in ox.static_range(A_COPIES):
            row = a_row + 32 * i
            inside = m0 + row < m and ka < k
            src = i64(m0 + row) * k + ka if inside else i64(0)
            ox.cp_async.copy(smem, s * A_TILE + ox.mma.swizzle(row * BK + a_col, 3, 3, 3), a, src, 16,
                             cache="cg", src_bytes=i32(16) if inside else i32(0))
        for i in ox.static_range(B_COPIES):
            kr = s * BK + b_row + 8 * i
            inside = kr < k and b_inside_n
            src = i64(kr) * n + (n0 + b_col) if inside else i64(0)
            ox.cp_async.copy(smem, B_STAGES + s * B_TILE + ox.mma.swizzle((b_row + 8 * i) * BN + b_col, 3, 3, 5), b,
                             src, 16, cache="cg", src_bytes=i32(16) if inside else i32(0))
        ox.cp_async.commit_group()
    read = i32(0)  # the stage of tile kt
    write = i32(STAGES - 1)  # the stage of tile kt + STAGES - 1
    for kt in range(k_tiles):
        ox.cp_async.wait_group(STAGES - 2)  # tile kt has landed...
        block.sync()  # ...for every thread, and every warp is done with the stage written next
        k0 = (kt + STAGES - 1) * BK
        ka = k0 + a_col
        for i in ox.static_range(A_COPIES):
            row = a_row + 32 * i
            inside = m0 + row < m and ka < k
            src = i64(m0 + row) * k + ka if inside else i64(0)
            ox.cp_async.copy(smem, write * A_TILE + ox.mma.swizzle(row * BK + a_col, 3, 3, 3), a, src, 16,
                             cache="cg", src_bytes=i32(16) if inside else i32(0))
        for i in ox.static_range(B_COPIES):
            kr = b_row + 8 * i
            inside = k0 + kr < k and b_inside_n
            src = i64(u32(k0 + kr)) * n + (n0 + b_col) if inside else i64(0)  # u32: a row, >= 0
            ox.cp_async.copy(smem, B_STAGES + write * B_TILE + ox.mma.swizzle(kr * BN + b_col, 3, 3, 5), b, src,
                             16, cache="cg", src_bytes=i32(16) if inside else i32(0))
        ox.cp_async.commit_group()
        base_a = read * A_TILE + a_lane
        base_b = B_STAGES + read * B_TILE + b_lane
        for kk in ox.static_range(BK // 16):
            for mi in ox.static_range(MI):
                ox.mma.ldmatrix(fa[mi], smem, (base_a ^ (kk * 16)) + mi * 16 * BK)
            for p in ox.static_range(NI // 2):  # two n8 fragments of B per ldmatrix.x4.trans
                ox.mma.ldmatrix(fb[2 * p], fb[2 * p + 1], smem, (base_b ^ (p * 16)) + kk * 16 * BN, trans=True)
            for mi in ox.static_range(MI):
                for ni in ox.static_range(NI):
                    ox.mma.sync(acc[mi * NI + ni], fa[mi], fb[ni], acc[mi * NI + ni])
        write = read
        read = read + 1 if read + 1 < STAGES else i32(0)
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
