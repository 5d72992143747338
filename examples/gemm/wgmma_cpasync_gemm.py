"""C = A @ B on Hopper's warpgroup tensor cores (sm_90a ``wgmma``) without TMA: the same
kernel as wgmma_gemm.py with a ``cp.async`` producer and named hardware barriers in place of
TMA loads and mbarriers (it ran before ``ox.tma`` existed, and shows wgmma reading shared memory
written by ordinary copies), and C stored from registers (wgmma_gemm.py stores it with
``stmatrix`` and TMA). bf16 or f16 in, f32 accumulate, bf16/f16 out. A is M×K and B is
K×N, both row-major (torch's ``a @ b``), C is M×N row-major.

A persistent, warp-specialized kernel: one block per SM, 3 warpgroups. Warpgroup 0 (the
producer, its registers cut to 64 by ``setmaxnreg``: its copy loop spills under 40) copies
128×64 tiles of A and 64×256 tiles of B into a ring of 4 shared stages; warpgroups 1 and 2 (the
consumers, 216 registers each: the block holds 3 × 168 registers a thread, and 64 + 2 × 216 fits in them; more and setmaxnreg.inc waits forever)
multiply them, each a 64×256 half of the block's 128×256 tile of C as one ``m64n256k16``
accumulator (128 f32 registers per thread), four ``wgmma`` per stage, one group kept in flight
while the stage before is handed back. The blocks walk the output tiles in groups of 8 tile
rows, so that the tiles in flight at once share their A and B in L2.

Shared tiles are swizzled by 128 bytes (``ox.shared.dynamic(T, swizzle=128)``): A as
[stage][128 rows][64 of K] (K-major), B as [stage][4 chunks of 64 of N][64 rows of K][64]
(N-major, ``b_major="mn"``); a 16-byte chunk ``c`` of row ``r`` lies at chunk ``c ^ (r % 8)``
(``ox.mma.swizzle(i, 3, 3, 3)``), the layout ``wgmma`` reads through the descriptors the
compiler builds from the array.

The producer loads with ``cp.async`` (16 bytes a thread per copy). Stage handoff uses the
block's named hardware barriers through inline PTX: ``bar.arrive FULL+s`` by the producer once
its copies of stage ``s`` landed (and ``fence.proxy.async`` made them visible to the tensor
cores), ``bar.sync`` by the consumers; ``EMPTY+s`` the other way round.

Sizes: any M; N and K multiples of 8 (rows of 16 bytes). Edges read zeros and stores are
guarded.

    wgmma_cpasync_gemm[min(num_sms, tiles), THREADS, None, SMEM_BYTES](a.view(-1), b.view(-1), m, n, k, c.view(-1))
"""
import oxide as ox
from oxide import MutSlice, Slice, bf16, block, f16, grid, i32, i64, thread

T = ox.TypeVar("T", bf16, f16)

BM = 128  # the block's tile of C
BN = 256
BK = 64  # the K step of a stage: one 128-byte swizzled row of 16-bit elements
STAGES = 4
THREADS = 384  # the producer warpgroup and two consumer warpgroups
A_STAGE = 8192  # BM * BK elements
B_STAGE = 16384  # BK * BN elements
B_BASE = 32768  # STAGES * A_STAGE: the B stages follow the A stages
SMEM_BYTES = 196608  # STAGES * (A_STAGE + B_STAGE) * 2 bytes
# copy groups the producer keeps in flight before announcing the oldest: STAGES - 2, as a
# consumer hands stage j back only once it has stage j + 1 (one wgmma group stays in flight),
# so the producer waiting for stage j must have announced j + 1 already
LAG = 2
GROUP = 8  # tile rows per group of the tile order
FULL = 1  # named barriers FULL..FULL+3: stage s filled; EMPTY..EMPTY+3: stage s free again
EMPTY = 5  # (barrier 0 is block.sync's)


def bar_sync(barrier: i32) -> None:
    """Waits at named barrier ``barrier`` until all 384 threads arrived or waited there."""
    with ox.unsafe():
        ox.asm("bar.sync $0, 384;", inputs=(("r", barrier),), memory=True)


def bar_arrive(barrier: i32) -> None:
    """Arrives at named barrier ``barrier`` without waiting."""
    with ox.unsafe():
        ox.asm("bar.arrive $0, 384;", inputs=(("r", barrier),), memory=True)


@ox.kernel(bounds_check=False, launch_bounds=384, max_registers=168)  # THREADS; 65536 / 384
def wgmma_cpasync_gemm(a: Slice[T], b: Slice[T], m: i32, n: i32, k: i32, c: MutSlice[T]) -> None:
    assert block.dim.x == THREADS
    assert len(a) == i64(m) * k and len(b) == i64(k) * n and len(c) == i64(m) * n
    assert m > 0 and n > 0 and k > 0
    assert n % 8 == 0 and k % 8 == 0
    smem = ox.shared.dynamic(T, swizzle=128)
    wg = ox.warpgroup.id()
    tid = thread.idx.x % 128
    tiles_m = (m + BM - 1) // BM
    tiles_n = (n + BN - 1) // BN
    tiles = tiles_m * tiles_n
    k_tiles = (k + BK - 1) // BK
    per_group = GROUP * tiles_n
    if wg == 0:
        ox.warpgroup.setmaxnreg_dec(64)
        it = i32(0)  # stages filled so far, over all tiles: stage it % STAGES
        tile = block.idx.x
        while tile < tiles:
            first_m = (tile // per_group) * GROUP
            rows = min(tiles_m - first_m, GROUP)
            m0 = (first_m + (tile % per_group) % rows) * BM
            n0 = ((tile % per_group) // rows) * BN
            for kt in range(k_tiles):
                s = it % STAGES
                if it >= STAGES:
                    bar_sync(EMPTY + s)  # the consumers are done with what the stage held
                k0 = kt * BK
                for i in ox.static_range(A_STAGE // 8 // 128):  # 16-byte chunks per thread
                    q = tid + i * 128
                    row = q // 8
                    kc = (q % 8) * 8
                    inside = m0 + row < m and k0 + kc < k
                    src = i64(min(m0 + row, m - 1)) * k + min(k0 + kc, k - 8)
                    ox.cp_async.copy(smem, s * A_STAGE + ox.mma.swizzle(row * BK + kc, 3, 3, 3), a, src, 16,
                                     cache="cg", src_bytes=i32(16) if inside else i32(0))
                for i in ox.static_range(B_STAGE // 8 // 128):
                    q = tid + i * 128
                    kr = q // 32
                    nc = (q % 32) * 8
                    inside = k0 + kr < k and n0 + nc < n
                    src = i64(min(k0 + kr, k - 1)) * n + min(n0 + nc, n - 8)
                    chunk = B_BASE + s * B_STAGE + (nc // 64) * (BK * 64)
                    ox.cp_async.copy(smem, chunk + ox.mma.swizzle(kr * 64 + nc % 64, 3, 3, 3), b, src, 16,
                                     cache="cg", src_bytes=i32(16) if inside else i32(0))
                ox.cp_async.commit_group()
                if it >= LAG:
                    ox.cp_async.wait_group(LAG)  # this thread's copies of stage it - LAG landed
                    ox.fence.proxy_async()  # ...and are visible to the tensor cores
                    bar_arrive(FULL + (it - LAG) % STAGES)
                it += 1
            tile += grid.dim.x
        ox.cp_async.wait_group(0)
        ox.fence.proxy_async()
        for j in ox.static_range(LAG):  # the stages still unannounced
            if it - LAG + j >= 0:
                bar_arrive(FULL + (it - LAG + j) % STAGES)
        for j in ox.static_range(STAGES):  # take the consumers' last releases
            if it - STAGES + j >= 0:
                bar_sync(EMPTY + (it - STAGES + j) % STAGES)
    else:
        ox.warpgroup.setmaxnreg_inc(216)
        half = (wg - 1) * 64  # this consumer's rows of the block's tile
        warp = tid // 32
        lane = tid % 32
        acc = ox.wgmma.accumulator("m64n256k16")
        it = i32(0)
        tile = block.idx.x
        while tile < tiles:
            first_m = (tile // per_group) * GROUP
            rows = min(tiles_m - first_m, GROUP)
            m0 = (first_m + (tile % per_group) % rows) * BM
            n0 = ((tile % per_group) // rows) * BN
            for kt in range(k_tiles):
                s = it % STAGES
                bar_sync(FULL + s)
                ox.wgmma.fence()
                for kk in ox.static_range(BK // 16):
                    ox.wgmma.mma(acc, smem, s * A_STAGE + half * BK + kk * 16,
                                 smem, B_BASE + s * B_STAGE + kk * 16 * 64,
                                 scale_d=kt + kk > 0, b_major="mn", b_rows=BK)
                ox.wgmma.commit_group()
                ox.wgmma.wait_group(1)  # the group before this one is done...
                if kt > 0:
                    bar_arrive(EMPTY + (it - 1) % STAGES)  # ...so its stage is free
                it += 1
            ox.wgmma.wait_group(0, acc)
            bar_arrive(EMPTY + (it - 1) % STAGES)
            # thread t holds acc[4j + i] at row 16 * warp + lane // 4 + 8 * (i // 2),
            # column 8 * j + 2 * (lane % 4) + i % 2
            row = m0 + half + warp * 16 + lane // 4
            for j in ox.static_range(BN // 8):
                col = n0 + j * 8 + 2 * (lane % 4)
                if col < n:
                    with ox.unsafe():
                        if row < m:
                            c.store2((i64(row) * n + col) // 2, T(acc[4 * j]), T(acc[4 * j + 1]))
                        if row + 8 < m:
                            c.store2((i64(row + 8) * n + col) // 2, T(acc[4 * j + 2]), T(acc[4 * j + 3]))
            tile += grid.dim.x
