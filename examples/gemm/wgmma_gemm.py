"""C = A @ B on Hopper's warpgroup tensor cores (sm_90a ``wgmma``): bf16 or f16 in, f32
accumulate, bf16/f16 out. A is M×K and B is K×N, both row-major (torch's ``a @ b``), C is M×N
row-major.

A persistent, warp-specialized kernel: one block per SM, 3 warpgroups. In warpgroup 0 (the
producer, its registers cut to 40 by ``setmaxnreg``) one thread loads 128×64 boxes of A and four
64×64 boxes of B per stage with TMA into a ring of 4 shared stages, each stage's bytes counted
on its "full" mbarrier; warpgroups 1 and 2 (the consumers, 232 registers each) wait for a stage
to fill, multiply it, each a 64×256 half of the block's 128×256 tile of C as one
``m64n256k16`` accumulator (128 f32 registers per thread), four ``wgmma`` per stage, one group
kept in flight while the stage before is handed back on its "empty" mbarrier. The blocks walk
the output tiles in groups of 8 tile rows, so that the tiles in flight at once share their A and
B in L2.

Shared tiles are swizzled by 128 bytes (``ox.shared.dynamic(T, swizzle=128)``, the TMA
descriptors' ``swizzle=128``): A as [stage][128 rows][64 of K] (K-major), B as [stage][4 chunks
of 64 of N][64 rows of K][64] (N-major, ``b_major="mn"``), the layout ``wgmma`` reads through the
descriptors the compiler builds from the array.

The epilogue stores C with TMA: each consumer converts its accumulator to T 64 columns at a
time and writes that 64×64 box with ``stmatrix`` (the accumulator's layout is stmatrix's) into
one of its two swizzled box buffers after the stages, fences it for the async proxy
(``fence.proxy_async``), meets its warpgroup at a named barrier, and one thread issues the
``tma.store`` of the box. That thread waits until the box before was read out (``store_wait(0,
read=True)``) before the barrier, so the buffer the next box fills is free; the stores of the
last boxes drain while the consumer multiplies its next tile. On the H200 this is 7-9% faster
than storing pairs of elements from registers (0.99x cuBLAS at 4096³ rather than 0.91x;
BENCHMARKS.md).

Sizes: any M; N and K multiples of 8 (TMA needs 16-byte strides). TMA fills what lies past the
edges of A and B with zeros and clips the boxes of C at its edges.

    a_map = oxide.tma.descriptor(a, box=(BM, BK), swizzle=128)
    b_map = oxide.tma.descriptor(b, box=(BK, 64), swizzle=128)
    c_map = oxide.tma.descriptor(c, box=(64, 64), swizzle=128)
    wgmma_gemm[min(num_sms, tiles), THREADS, None, SMEM_BYTES](a_map, b_map, c_map, m, n, k)
"""
import oxide as ox
from oxide import bf16, block, f16, grid, i32, thread

T = ox.TypeVar("T", bf16, f16)

BM = 128  # the block's tile of C
BN = 256
BK = 64  # the K step of a stage: one 128-byte swizzled row of 16-bit elements
STAGES = 4
THREADS = 384  # the producer warpgroup and two consumer warpgroups
A_STAGE = 8192  # BM * BK elements
B_STAGE = 16384  # BK * BN elements
B_BASE = 32768  # STAGES * A_STAGE: the B stages follow the A stages
C_BOX = 4096  # 64 * 64 elements: one TMA box of C
C_BASE = 98304  # STAGES * (A_STAGE + B_STAGE): the C boxes follow the B stages, two per consumer
SMEM_BYTES = 229376  # (C_BASE + 4 * C_BOX) * 2; with the kernel's 3 KiB of static shared memory: all 227 KiB
GROUP = 8  # tile rows per group of the tile order


@ox.kernel(bounds_check=False, launch_bounds=384, max_registers=168)  # THREADS; 65536 / 384
def wgmma_gemm(a: ox.tma.Descriptor[T, 2], b: ox.tma.Descriptor[T, 2], c: ox.tma.Descriptor[T, 2],
               m: i32, n: i32, k: i32) -> None:
    assert block.dim.x == THREADS
    assert m > 0 and n > 0 and k > 0
    smem = ox.shared.dynamic(T, swizzle=128)
    full = ox.mbarrier.array(STAGES)  # stage s filled (its bytes landed)
    empty = ox.mbarrier.array(STAGES)  # stage s read by both consumers
    if thread.idx.x == 0:
        for s in range(STAGES):
            ox.mbarrier.init(full[s], 1)
            ox.mbarrier.init(empty[s], 256)  # every consumer thread
        ox.mbarrier.fence_init()
    block.sync()
    wg = ox.warpgroup.id()
    tid = thread.idx.x % 128
    tiles_m = (m + BM - 1) // BM
    tiles_n = (n + BN - 1) // BN
    tiles = tiles_m * tiles_n
    k_tiles = (k + BK - 1) // BK
    per_group = GROUP * tiles_n
    if wg == 0:
        ox.warpgroup.setmaxnreg_dec(40)
        if tid == 0:
            stage_bytes = ox.tma.box_bytes(a) + 4 * ox.tma.box_bytes(b)
            it = i32(0)  # stages filled so far, over all tiles: stage it % STAGES
            tile = block.idx.x
            while tile < tiles:
                first_m = (tile // per_group) * GROUP
                rows = min(tiles_m - first_m, GROUP)
                m0 = (first_m + (tile % per_group) % rows) * BM
                n0 = ((tile % per_group) // rows) * BN
                for kt in range(k_tiles):
                    s = it % STAGES
                    if it >= STAGES:  # both consumers are done with what the stage held
                        ox.mbarrier.wait(empty[s], (it // STAGES - 1) % 2)
                    ox.mbarrier.arrive_expect_tx(full[s], stage_bytes)
                    ox.tma.load(a, full[s], smem[s * A_STAGE:], m0, kt * BK)
                    for q in ox.static_range(BN // 64):
                        ox.tma.load(b, full[s], smem[B_BASE + s * B_STAGE + q * BK * 64:], kt * BK, n0 + q * 64)
                    it += 1
                tile += grid.dim.x
    else:
        ox.warpgroup.setmaxnreg_inc(232)
        half = (wg - 1) * 64  # this consumer's rows of the block's tile
        warp = tid // 32
        lane = tid % 32
        boxes = C_BASE + (wg - 1) * 2 * C_BOX  # this consumer's two boxes of C
        # stmatrix .x4 of 16 rows x 16 columns: lanes 8i..8i+7 give the rows of matrix i (rows
        # 0-7 of the warp's 16, then 8-15; columns 0-7 for i < 2, 8-15 after)
        c_row = warp * 16 + lane % 8 + 8 * ((lane // 8) % 2)
        c_col = 8 * (lane // 16)
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
                ox.mbarrier.wait(full[s], (it // STAGES) % 2)
                ox.wgmma.fence()
                for kk in ox.static_range(BK // 16):
                    ox.wgmma.mma(acc, smem, s * A_STAGE + half * BK + kk * 16,
                                 smem, B_BASE + s * B_STAGE + kk * 16 * 64,
                                 scale_d=kt + kk > 0, b_major="mn", b_rows=BK)
                ox.wgmma.commit_group()
                ox.wgmma.wait_group(1)  # the group before this one is done...
                if kt > 0:
                    ox.mbarrier.arrive(empty[(it - 1) % STAGES])  # ...so its stage is free
                it += 1
            ox.wgmma.wait_group(0, acc)
            ox.mbarrier.arrive(empty[(it - 1) % STAGES])
            # the 64x256 half of C in four 64x64 boxes, alternating between the two buffers:
            # thread t holds acc[4j + i] at row 16 * warp + lane // 4 + 8 * (i // 2), column
            # 8j + 2 * (lane % 4) + i % 2, the layout of stmatrix's four 8x8 matrices, in order
            for q in ox.static_range(BN // 64):
                box = boxes + (q % 2) * C_BOX
                for p in ox.static_range(4):
                    frag = ox.local.array(8, T)
                    for e in ox.static_range(8):
                        frag[e] = T(acc[32 * q + 8 * p + e])
                    ox.mma.stmatrix(frag, smem, box + ox.mma.swizzle(c_row * 64 + 16 * p + c_col, 3, 3, 3))
                ox.fence.proxy_async()  # the stores are seen by TMA...
                if tid == 0:
                    ox.tma.store_wait(0, read=True)  # ...and the box before this one was read: its buffer is free
                with ox.unsafe():
                    ox.asm("bar.sync $0, 128;", inputs=(("r", wg),), memory=True)  # the warpgroup's barrier
                    if tid == 0 and m0 + half < m and n0 + q * 64 < n:  # TMA clips the box at the edges
                        ox.tma.store(c, smem[box:], m0 + half, n0 + q * 64)
                        ox.tma.store_commit()
            tile += grid.dim.x
        if tid == 0:
            ox.tma.store_wait(0)  # shared memory stays until the last box is written
