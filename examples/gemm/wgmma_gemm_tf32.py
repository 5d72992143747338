"""C = A @ Bᵀ on Hopper's warpgroup tensor cores (sm_90a ``wgmma``) in TF32: f32 in, read as
tf32 (10 fraction bits), f32 accumulate, f32 out — what ``torch.matmul(a, bt.t())`` computes with
``torch.backends.cuda.matmul.allow_tf32 = True``.

A is M×K and Bt is N×K, both row-major: B is taken K-contiguous, because PTX has no transpose
for tf32 ``wgmma`` operands and both A and B must be K-major in shared memory. For a row-major
K×N ``b``, pass ``bt = b.t().contiguous()``. C is M×N row-major.

The structure is examples/gemm/wgmma_gemm.py's with 4-byte elements: a persistent,
warp-specialized kernel, one block per SM, 3 warpgroups. In warpgroup 0 (the producer, its
registers cut to 40) one thread loads a 128×32 box of A and a 256×32 box of Bt per stage with
TMA into a ring of 4 shared stages (4 × (16 + 32) KiB), each stage's bytes counted on its "full"
mbarrier; warpgroups 1 and 2 (the consumers, 232 registers each) multiply a stage, each a 64×256
half of the block's 128×256 tile of C as one ``m64n256k8`` accumulator (128 f32 registers per
thread), four ``wgmma`` per stage (K = 32 = one 128-byte swizzled row of f32), one group kept in
flight while the stage before is handed back on its "empty" mbarrier. The blocks walk the output
tiles in groups of 8 tile rows. A stage holds as many bytes and as much tensor-core time as
wgmma_gemm.py's bf16 stage (tf32 runs at half the bf16 rate, K = 8 per instruction).

Shared tiles are swizzled by 128 bytes: A as [stage][128 rows of M][32 of K], Bt as
[stage][256 rows of N][32 of K], both K-major.

The epilogue stores C with TMA: each consumer writes its accumulator 32 columns at a time (a
64×32 f32 box, 128-byte rows swizzled as the TMA store reads them) into one of its two box
buffers after the stages with 8-byte shared stores, fences it for the async proxy, meets its
warpgroup at a named barrier, and one thread issues the ``tma.store`` of the box (eight per
consumer and tile), which drains while the consumer multiplies its next tile.

Sizes: any M; N and K multiples of 4 (TMA needs 16-byte row strides). TMA fills what lies past
the edges of A and Bt with zeros and clips the boxes of C at its edges. ``gemm_tf32(a, bt)``
below checks the inputs, makes the descriptors and launches:

    a_map = oxide.tma.descriptor(a, box=(BM, BK), swizzle=128)
    b_map = oxide.tma.descriptor(bt, box=(BN, BK), swizzle=128)
    c_map = oxide.tma.descriptor(c, box=(64, C_COLS), swizzle=128)
    wgmma_gemm_tf32[min(num_sms, tiles), THREADS, None, SMEM_BYTES](a_map, b_map, c_map, m, n, k)
"""
import oxide as ox
from oxide import block, f32, grid, i32, thread

BM = 128  # the block's tile of C
BN = 256
BK = 32  # the K step of a stage: one 128-byte swizzled row of f32
STAGES = 4
THREADS = 384  # the producer warpgroup and two consumer warpgroups
A_STAGE = 4096  # BM * BK elements (16 KiB)
B_STAGE = 8192  # BN * BK elements (32 KiB)
B_BASE = 16384  # STAGES * A_STAGE: the Bt stages follow the A stages
C_COLS = 32  # the columns of one TMA box of C: one 128-byte row of f32
C_BOX = 2048  # 64 * C_COLS elements (8 KiB)
C_BASE = 49152  # STAGES * (A_STAGE + B_STAGE): the C boxes follow the Bt stages, two per consumer
SMEM_BYTES = 229376  # (C_BASE + 4 * C_BOX) * 4; with the kernel's static shared memory: all 227 KiB
GROUP = 8  # tile rows per group of the tile order


@ox.kernel(bounds_check=False, launch_bounds=384, max_registers=168)  # THREADS; 65536 / 384
def wgmma_gemm_tf32(a: ox.tma.Descriptor[f32, 2], bt: ox.tma.Descriptor[f32, 2], c: ox.tma.Descriptor[f32, 2],
                    m: i32, n: i32, k: i32) -> None:
    assert block.dim.x == THREADS
    assert m > 0 and n > 0 and k > 0
    smem = ox.shared.dynamic(f32, swizzle=128)
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
        boxes = C_BASE + (wg - 1) * 2 * C_BOX  # this consumer's two boxes of C
        # thread t holds acc[4j + i] at row 16 * warp + lane // 4 + 8 * (i // 2), column
        # 8j + 2 * (lane % 4) + i % 2: the pair (acc[4j], acc[4j + 1]) of column 8j of a box lands
        # at element c_at + 8j of its row before the swizzle (rows of C_COLS f32)
        c_at = (warp * 16 + lane // 4) * C_COLS + 2 * (lane % 4)
        acc = ox.wgmma.accumulator("m64n256k8")
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
                for kk in ox.static_range(BK // 8):
                    ox.wgmma.mma(acc, smem, s * A_STAGE + half * BK + kk * 8,
                                 smem, B_BASE + s * B_STAGE + kk * 8, scale_d=kt + kk > 0)
                ox.wgmma.commit_group()
                ox.wgmma.wait_group(1)  # the group before this one is done...
                if kt > 0:
                    ox.mbarrier.arrive(empty[(it - 1) % STAGES])  # ...so its stage is free
                it += 1
            ox.wgmma.wait_group(0, acc)
            ox.mbarrier.arrive(empty[(it - 1) % STAGES])
            # the 64x256 half of C in eight 64x32 boxes, alternating between the two buffers;
            # element e of a box's 128-byte rows is stored at ox.mma.swizzle(e, 3, 2, 3) (16-byte
            # chunk c of row r at chunk c ^ (r % 8)), the layout TMA's 128-byte swizzle reads
            for q in ox.static_range(BN // C_COLS):
                box = boxes + (q % 2) * C_BOX
                for jj in ox.static_range(C_COLS // 8):
                    j = 4 * q + jj
                    top = box + ox.mma.swizzle(c_at + 8 * jj, 3, 2, 3)
                    bottom = box + ox.mma.swizzle(c_at + 8 * C_COLS + 8 * jj, 3, 2, 3)  # 8 rows further
                    smem[top] = acc[4 * j]  # even offsets: the pairs become 8-byte stores
                    smem[top + 1] = acc[4 * j + 1]
                    smem[bottom] = acc[4 * j + 2]
                    smem[bottom + 1] = acc[4 * j + 3]
                ox.fence.proxy_async()  # the stores are seen by TMA...
                if tid == 0:
                    ox.tma.store_wait(0, read=True)  # ...and the box before this one was read: its buffer is free
                with ox.unsafe():
                    ox.asm("bar.sync $0, 128;", inputs=(("r", wg),), memory=True)  # the warpgroup's barrier
                    if tid == 0 and m0 + half < m and n0 + q * C_COLS < n:  # TMA clips the box at the edges
                        ox.tma.store(c, smem[box:], m0 + half, n0 + q * C_COLS)
                        ox.tma.store_commit()
            tile += grid.dim.x
        if tid == 0:
            ox.tma.store_wait(0)  # shared memory stays until the last box is written


def check_sizes(m: int, n: int, k: int) -> None:
    """A ``ValueError`` for the sizes ``wgmma_gemm_tf32`` cannot take: empty, past its 32-bit
    indices, N or K not a multiple of 4 (TMA needs the rows of A, Bt and C to be a multiple of 16
    bytes). Any M is fine: TMA zero-fills the boxes past the edges and clips the stores."""
    if m <= 0 or n <= 0 or k <= 0:
        raise ValueError(f"gemm_tf32: M, N and K must be positive, got {m}x{n}x{k}")
    stages = ((m + BM - 1) // BM) * ((n + BN - 1) // BN) * ((k + BK - 1) // BK)
    if max(m, n, k) >= 2**31 or stages >= 2**31:  # the kernel counts tiles and stages in i32
        raise ValueError(f"gemm_tf32: {m}x{n}x{k} does not fit the kernel's 32-bit sizes")
    for what, v in (("K", k), ("N", n)):
        if v % 4:
            raise ValueError(f"gemm_tf32: {what} = {v} is not a multiple of 4: TMA needs the rows of A, Bt and C "
                             "to be a multiple of 16 bytes (pad with zeros to the next multiple of 4)")


def check_operands(a, bt, out=None):  # type: ignore[no-untyped-def]
    """``(m, n, k)`` of ``C = A @ Btᵀ`` for torch tensors ``a`` (M×K) and ``bt`` (N×K), or a
    ``ValueError`` naming what ``wgmma_gemm_tf32`` cannot take: not 2-D f32 CUDA tensors on one
    device, not row-major contiguous, K that differ, sizes ``check_sizes`` refuses, a data pointer
    not 16-byte aligned, an ``out`` that is not a contiguous M×N f32 tensor beside them."""
    import torch

    for name, x in (("a", a), ("bt", bt)):
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.dtype != torch.float32:
            raise ValueError(f"gemm_tf32: {name} must be a 2-D float32 tensor, got "
                             f"{getattr(x, 'dtype', type(x).__name__)} of shape {tuple(getattr(x, 'shape', ()))}")
    (m, k), (n, kb) = a.shape, bt.shape
    if k != kb:
        raise ValueError(f"gemm_tf32: a is {m}x{k} but bt is {n}x{kb}: bt holds B transposed, N×K with the same K")
    check_sizes(m, n, k)
    for name, x in (("a", a), ("bt", bt)):
        if not x.is_contiguous():
            raise ValueError(f"gemm_tf32: {name} must be row-major contiguous (for a K×N b pass "
                             "bt = b.t().contiguous())")
        if not x.is_cuda or x.device != a.device:
            raise ValueError(f"gemm_tf32: a and bt must be CUDA tensors on one device, got {a.device} and {bt.device}")
        if x.data_ptr() % 16:
            raise ValueError(f"gemm_tf32: {name}'s data must be 16-byte aligned for TMA")
    if out is not None and (not isinstance(out, torch.Tensor) or out.dtype != torch.float32
                            or tuple(out.shape) != (m, n) or not out.is_contiguous() or out.device != a.device
                            or out.data_ptr() % 16):
        raise ValueError(f"gemm_tf32: out must be a contiguous, 16-byte aligned {m}x{n} float32 tensor on {a.device}")
    return m, n, k


def gemm_tf32(a, bt, out=None, blocks=None):  # type: ignore[no-untyped-def]
    """``out = a @ bt.t()`` in TF32 by ``wgmma_gemm_tf32`` (sm_90a: H100/H200) for row-major f32
    torch tensors ``a`` (M×K) and ``bt`` (N×K); ``out`` (M×N f32) is allocated when None.
    ``blocks``: the persistent grid (default: one block per SM, no more than there are tiles)."""
    import torch

    import oxide

    m, n, k = check_operands(a, bt, out)
    if out is None:
        out = torch.empty((m, n), dtype=torch.float32, device=a.device)
    tiles = ((m + BM - 1) // BM) * ((n + BN - 1) // BN)
    if blocks is None:
        blocks = torch.cuda.get_device_properties(a.device).multi_processor_count
    a_map = oxide.tma.descriptor(a, box=(BM, BK), swizzle=128)
    b_map = oxide.tma.descriptor(bt, box=(BN, BK), swizzle=128)
    c_map = oxide.tma.descriptor(out, box=(64, C_COLS), swizzle=128)
    wgmma_gemm_tf32[max(1, min(blocks, tiles)), THREADS, None, SMEM_BYTES](a_map, b_map, c_map, m, n, k)
    return out
