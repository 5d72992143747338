"""C = scale · A @ Bᵀ on Hopper's warpgroup tensor cores (sm_90a ``wgmma``) with 8-bit floats:
f8e4m3 in, f32 accumulate, bf16 out — what ``torch._scaled_mm(a, bt.t(), scale_a, scale_b,
out_dtype=torch.bfloat16)`` computes with per-tensor scales (``scale`` is their product).

A is M×K and Bt is N×K, both row-major: B is taken K-contiguous, as cuBLASLt's fp8 GEMM wants it
and as ``wgmma`` needs it — for 8-bit operands PTX has no transpose, both A and B are read
K-major. C is M×N row-major.

The structure is examples/gemm/wgmma_gemm.py's in bytes: a persistent, warp-specialized kernel,
one block per SM, 3 warpgroups. In warpgroup 0 (the producer, its registers cut to 40) one thread
loads a 128×128 box of A and a 256×128 box of Bt per stage with TMA into a ring of 4 shared
stages (4 × (16 + 32) KiB), each stage's bytes counted on its "full" mbarrier; warpgroups 1 and 2
(the consumers, 232 registers each) multiply a stage, each a 64×256 half of the block's 128×256
tile of C as one ``m64n256k32`` accumulator (128 f32 registers per thread), four ``wgmma`` per
stage (K = 128 = one 128-byte swizzled row), one group kept in flight while the stage before is
handed back on its "empty" mbarrier. The blocks walk the output tiles in groups of 8 tile rows.

Shared tiles are swizzled by 128 bytes: A as [stage][128 rows of M][128 of K], Bt as
[stage][256 rows of N][128 of K], both K-major.

Sizes: any M; N and K multiples of 16 (TMA needs 16-byte strides). TMA fills what lies past the
edges with zeros, and stores are guarded.

    a_map = oxide.tma.descriptor(a, box=(BM, BK), swizzle=128)
    b_map = oxide.tma.descriptor(bt, box=(BN, BK), swizzle=128)
    wgmma_gemm_fp8[min(num_sms, tiles), THREADS, None, SMEM_BYTES](a_map, b_map, scale, m, n, k, c)
"""
import oxide as ox
from oxide import MutSlice, bf16, block, f8e4m3, f32, grid, i32, i64, thread

BM = 128  # the block's tile of C
BN = 256
BK = 128  # the K step of a stage: one 128-byte swizzled row of 8-bit elements
STAGES = 4
THREADS = 384  # the producer warpgroup and two consumer warpgroups
A_STAGE = 16384  # BM * BK elements (bytes)
B_STAGE = 32768  # BN * BK
B_BASE = 65536  # STAGES * A_STAGE: the Bt stages follow the A stages
SMEM_BYTES = 196608  # STAGES * (A_STAGE + B_STAGE)
GROUP = 8  # tile rows per group of the tile order


@ox.kernel(bounds_check=False, launch_bounds=384, max_registers=168)  # THREADS; 65536 / 384
def wgmma_gemm_fp8(a: ox.tma.Descriptor[f8e4m3, 2], bt: ox.tma.Descriptor[f8e4m3, 2], scale: f32, m: i32, n: i32,
                   k: i32, c: MutSlice[bf16]) -> None:
    assert block.dim.x == THREADS
    assert len(c) == i64(m) * n
    assert m > 0 and n > 0 and k > 0
    assert n % 16 == 0 and k % 16 == 0
    smem = ox.shared.dynamic(f8e4m3, swizzle=128)
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
            stage_bytes = ox.tma.box_bytes(a) + ox.tma.box_bytes(bt)
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
                    ox.tma.load(bt, full[s], smem[B_BASE + s * B_STAGE:], n0, kt * BK)
                    it += 1
                tile += grid.dim.x
    else:
        ox.warpgroup.setmaxnreg_inc(232)
        half = (wg - 1) * 64  # this consumer's rows of the block's tile
        warp = tid // 32
        lane = tid % 32
        acc = ox.wgmma.accumulator("m64n256k32")
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
                for kk in ox.static_range(BK // 32):
                    ox.wgmma.mma(acc, smem, s * A_STAGE + half * BK + kk * 32,
                                 smem, B_BASE + s * B_STAGE + kk * 32, scale_d=kt + kk > 0)
                ox.wgmma.commit_group()
                ox.wgmma.wait_group(1)  # the group before this one is done...
                if kt > 0:
                    ox.mbarrier.arrive(empty[(it - 1) % STAGES])  # ...so its stage is free
                it += 1
            ox.wgmma.wait_group(0, acc)
            ox.mbarrier.arrive(empty[(it - 1) % STAGES])
            # thread t holds acc[4j + i] at row 16 * warp + lane // 4 + 8 * (i // 2),
            # column 8 * j + 2 * (lane % 4) + i % 2; c.store2 indexes pairs of elements
            row = m0 + half + warp * 16 + lane // 4
            col = n0 + 2 * (lane % 4)
            pair = (i64(row) * n + col) // 2
            below = i64(n) * 4  # 8 rows further, in pairs
            with ox.unsafe():
                if m0 + BM <= m and n0 + BN <= n:  # an inner tile: no element to leave out
                    for j in ox.static_range(BN // 8):
                        c.store2(pair + 4 * j, bf16(acc[4 * j] * scale), bf16(acc[4 * j + 1] * scale))
                        c.store2(pair + below + 4 * j, bf16(acc[4 * j + 2] * scale), bf16(acc[4 * j + 3] * scale))
                else:
                    for j in ox.static_range(BN // 8):
                        if col + 8 * j < n:
                            if row < m:
                                c.store2(pair + 4 * j, bf16(acc[4 * j] * scale), bf16(acc[4 * j + 1] * scale))
                            if row + 8 < m:
                                c.store2(pair + below + 4 * j, bf16(acc[4 * j + 2] * scale),
                                         bf16(acc[4 * j + 3] * scale))
            tile += grid.dim.x
