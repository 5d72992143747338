"""Attention forward on Hopper's warpgroup tensor cores (sm_90a): TMA loads, ``wgmma``, warp
specialization, FlashAttention-3's overlap of the two GEMMs with the softmax.

``o = softmax(q @ k^T * scale [+ causal mask]) @ v`` for q, k, v, o of shape
(batch, heads, seq, D), contiguous, bf16 or f16, D = 64 or 128; f32 accumulation and softmax;
``lse`` (batch, heads, seq) f32 gets each row's log-sum-exp of the scaled scores (natural log).

One block of 3 warpgroups computes BM = 128 query rows of one (batch, head):

- warpgroup 0, the producer (``setmaxnreg`` down to 40 registers): one thread loads the block's
  Q tile once, then K and V tiles of BN keys (``block_n``: 176 for D = 128 without a mask, else
  128) into a ring of 2 stages each, by TMA (3-d
  tensor maps over (batch·heads, seq, D): rows past ``seq`` read as zeros, and a tile never
  reads another head), each tile's bytes counted on its "full" mbarrier; it waits on the
  tile's "empty" mbarrier before reusing a stage. K tile j + 1 is loaded before V tile j,
  the order the consumers need them in.
- warpgroups 1 and 2, the consumers (232 registers): 64 query rows each. For every key tile
  ``j`` a consumer issues ``S_j = Q K_j^T`` (``wgmma``, both operands in shared memory,
  ``m64nBNk16``), then ``O += P_{j-1} V_{j-1}`` with P in registers (``wgmma`` with a
  register A: the f32 accumulator of S, rounded to T, is the A fragment as it lies), waits for
  ``S_j`` only (``wait_group(1, s)``: the P V group stays in flight) and runs the online
  softmax of ``S_j`` (row maxima and sums over the 4 threads of a row, one ``ex2.approx.ftz``
  per score with the scale folded into one FMA) while the tensor cores finish ``P V``, then
  waits for ``P V``, rescales ``O`` by ``exp2(m_old - m_new)`` and packs ``P_j``. The first
  tile has no ``P V`` to overlap; the last ``P V`` follows the loop.
- with ``PINGPONG``, two named barriers make the consumers take turns issuing their GEMMs, so
  that one's softmax runs while the other's GEMMs occupy the tensor cores (FlashAttention-3's
  inter-warpgroup schedule).

Masks: keys at or past ``seq`` (the last tile only), and under ``CAUSAL`` keys after the row (the
tiles reaching past the consumer's first row), set to -inf. Query rows past ``seq`` are computed
from zeros and not stored. Blocks go heaviest first under ``CAUSAL``, in groups of ``GROUP``
heads so that the K and V of the heads in flight stay in L2.

    q_map = oxide.tma.descriptor(q.view(b * h, seq, D), box=(1, BM, 64), swizzle=128)
    k_map = oxide.tma.descriptor(k.view(b * h, seq, D), box=(1, block_n(D, causal), 64), swizzle=128)
    v_map = oxide.tma.descriptor(v.view(b * h, seq, D), box=(1, block_n(D, causal), 64), swizzle=128)
    wgmma_attention[cdiv(seq, BM) * b * h, THREADS, None, smem_bytes(D, causal)](
        q_map, k_map, v_map, b * h, seq, scale, o.view(-1), lse.view(-1), D, causal, pingpong)

(``examples.attention.attention_forward`` does this for torch tensors).
"""
import oxide as ox
from oxide import MutSlice, bf16, block, f16, f32, i32, i64, thread, warp

T = ox.TypeVar("T", bf16, f16)

BM = 128  # query rows per block: 64 per consumer warpgroup
STAGES = 2  # K and V tiles in flight
THREADS = 384  # the producer warpgroup and two consumer warpgroups
GROUP = 8  # heads per group of the causal block order
LOG2E = 1.4426950408889634
SCHEDULE = 1  # named barriers SCHEDULE, SCHEDULE + 1: consumer 0's and consumer 1's turn (0 is block.sync's)


def block_n(d: int, causal: bool) -> int:
    """Keys per K/V tile (the kernel's ``BN``): 176 for D = 128 without a mask (FlashAttention-3's
    choice; 4% faster than 128 on the H200), 128 otherwise (a causal diagonal tile then covers a
    block's rows exactly)."""
    return 176 if d == 128 and not causal else 128


def smem_bytes(d: int, causal: bool) -> int:
    """The dynamic shared memory of a block: the Q tile, STAGES K and V tiles."""
    return (BM * d + 2 * STAGES * block_n(d, causal) * d) * 2


def bar_sync(barrier: i32) -> None:
    """Waits at named barrier ``barrier`` until both consumer warpgroups (256 threads) arrived."""
    with ox.unsafe():
        ox.asm("bar.sync $0, 256;", inputs=(("r", barrier),), memory=True)


def bar_arrive(barrier: i32) -> None:
    """Arrives at named barrier ``barrier`` for the other consumer warpgroup, without waiting."""
    with ox.unsafe():
        ox.asm("bar.arrive $0, 256;", inputs=(("r", barrier),), memory=True)


@ox.kernel(bounds_check=False, launch_bounds=384, max_registers=168,  # THREADS; 65536 / 384
           constexprs={"D": [64, 128], "CAUSAL": [False, True], "PINGPONG": [False, True]})
def wgmma_attention(q: ox.tma.Descriptor[T, 3], k: ox.tma.Descriptor[T, 3], v: ox.tma.Descriptor[T, 3],
                    heads: i32, seq: i32, scale: f32, o: MutSlice[T], lse: MutSlice[f32],
                    D: ox.Constexpr[int], CAUSAL: ox.Constexpr[bool], PINGPONG: ox.Constexpr[bool]) -> None:
    assert block.dim.x == THREADS and seq > 0 and heads > 0
    assert len(o) == i64(heads) * seq * D and len(lse) == i64(heads) * seq
    assert scale > 0.0  # on the device (a float), reported at the next synchronize
    BN = 176 if D == 128 and not CAUSAL else 128  # keys per K/V tile: block_n() on the host
    CHUNKS = D // 64  # 64-column chunks of a row: one 128-byte swizzled row each
    Q_SIZE = BM * D  # elements
    TILE = BN * D
    K_BASE = Q_SIZE
    V_BASE = Q_SIZE + STAGES * TILE
    smem = ox.shared.dynamic(T, swizzle=128)  # Q [CHUNKS][BM][64], then K and V stages [CHUNKS][BN][64]
    q_full = ox.mbarrier.array(1)
    k_full = ox.mbarrier.array(STAGES)
    k_empty = ox.mbarrier.array(STAGES)
    v_full = ox.mbarrier.array(STAGES)
    v_empty = ox.mbarrier.array(STAGES)
    if thread.idx.x == 0:
        ox.mbarrier.init(q_full[0], 1)
        for s in range(STAGES):
            ox.mbarrier.init(k_full[s], 1)
            ox.mbarrier.init(k_empty[s], 256)  # every consumer thread
            ox.mbarrier.init(v_full[s], 1)
            ox.mbarrier.init(v_empty[s], 256)
        ox.mbarrier.fence_init()
    block.sync()
    # the block's tile: under CAUSAL the heaviest (last) row tiles first, GROUP heads at a time
    m_tiles = (seq + BM - 1) // BM
    group_heads = i32(GROUP if CAUSAL else 1)
    idx = i32(block.idx.x)
    group = idx // (group_heads * m_tiles)
    in_group = min(group_heads, heads - group * group_heads)
    at = idx % (group_heads * m_tiles)
    m0 = (m_tiles - 1 - at // in_group) * BM
    bh = group * group_heads + at % in_group
    end = seq
    if CAUSAL:
        end = min(seq, m0 + BM)
    tiles = (end + BN - 1) // BN
    wg = ox.warpgroup.id()
    tid = thread.idx.x % 128
    if wg == 0:
        ox.warpgroup.setmaxnreg_dec(40)
        if tid == 0:
            ox.mbarrier.arrive_expect_tx(q_full[0], CHUNKS * ox.tma.box_bytes(q))
            for c in ox.static_range(CHUNKS):
                ox.tma.load(q, q_full[0], smem[c * BM * 64:], bh, m0, c * 64)
            tile_bytes = CHUNKS * ox.tma.box_bytes(k)
            ox.mbarrier.arrive_expect_tx(k_full[0], tile_bytes)
            for c in ox.static_range(CHUNKS):
                ox.tma.load(k, k_full[0], smem[K_BASE + c * BN * 64:], bh, 0, c * 64)
            for j in range(tiles):
                if j + 1 < tiles:  # K tile j + 1...
                    s = (j + 1) % STAGES
                    if j + 1 >= STAGES:
                        ox.mbarrier.wait(k_empty[s], ((j + 1) // STAGES - 1) % 2)
                    ox.mbarrier.arrive_expect_tx(k_full[s], tile_bytes)
                    for c in ox.static_range(CHUNKS):
                        ox.tma.load(k, k_full[s], smem[K_BASE + s * TILE + c * BN * 64:], bh, (j + 1) * BN, c * 64)
                s = j % STAGES  # ...then V tile j
                if j >= STAGES:
                    ox.mbarrier.wait(v_empty[s], (j // STAGES - 1) % 2)
                ox.mbarrier.arrive_expect_tx(v_full[s], tile_bytes)
                for c in ox.static_range(CHUNKS):
                    ox.tma.load(v, v_full[s], smem[V_BASE + s * TILE + c * BN * 64:], bh, j * BN, c * 64)
    else:
        ox.warpgroup.setmaxnreg_inc(232)
        me = wg - 1  # this consumer: rows 64 * me to 64 * me + 63 of the block's tile
        warp_in = tid // 32
        lane = tid % 32
        quad = lane % 4
        row_a = m0 + me * 64 + warp_in * 16 + lane // 4  # this thread's two rows: row_a and row_a + 8
        row_b = row_a + 8
        sacc = ox.wgmma.accumulator(f"m64n{BN}k16")
        oacc = ox.wgmma.accumulator(f"m64n{D}k16")
        pf = ox.mma.fragment_a("m16n8k16", T, BN // 16)
        for i in ox.static_range(D // 2):
            oacc[i] = 0.0
        scale_log2 = scale * f32(LOG2E)
        max_a: f32 = float("-inf")  # running row maxima of the raw scores
        max_b: f32 = float("-inf")
        sum_a: f32 = 0.0  # running sums of exp2((score - max) * scale * log2 e), this thread's columns
        sum_b: f32 = 0.0
        q_at = me * 64 * 64  # this consumer's 64 rows of chunk 0 of Q
        if PINGPONG and me == 1:
            bar_arrive(SCHEDULE)  # consumer 0 goes first
        ox.mbarrier.wait(q_full[0], 0)
        # tile j: S_j = Q K_j^T issued, then (j > 0) O += P_{j-1} V_{j-1} with P in registers; the
        # softmax of S_j runs while P V is in flight (wait_group(1)); O is rescaled once P V is done
        for j in range(tiles):  # S_j, then P_{j-1} V_{j-1} (j > 0) while S_j's softmax runs
            n0 = j * BN
            s = j % STAGES
            ox.mbarrier.wait(k_full[s], (j // STAGES) % 2)
            if PINGPONG:
                bar_sync(SCHEDULE + me)  # this consumer's turn to issue
            ox.wgmma.fence()
            for kk in ox.static_range(D // 16):
                ox.wgmma.mma(sacc, smem, (kk // 4) * BM * 64 + q_at + (kk % 4) * 16,
                             smem, K_BASE + s * TILE + (kk // 4) * BN * 64 + (kk % 4) * 16, scale_d=kk > 0)
            ox.wgmma.commit_group()
            if j > 0:  # O += P_{j-1} V_{j-1}
                sv = (j - 1) % STAGES
                ox.mbarrier.wait(v_full[sv], ((j - 1) // STAGES) % 2)
                for kk in ox.static_range(BN // 16):
                    ox.wgmma.mma(oacc, pf[kk], smem, V_BASE + sv * TILE + kk * 16 * 64, b_major="mn", b_rows=BN)
                ox.wgmma.commit_group()
                if PINGPONG:
                    bar_arrive(SCHEDULE + 1 - me)  # the other consumer's turn
                ox.wgmma.wait_group(1, sacc)  # S_j done; P V still in flight
            else:
                if PINGPONG:
                    bar_arrive(SCHEDULE + 1 - me)
                ox.wgmma.wait_group(0, sacc)
            ox.mbarrier.arrive(k_empty[s])
            # masks: keys past seq, and under CAUSAL keys after the row (only the tiles that have them)
            if n0 + BN > seq:
                for i in ox.static_range(BN // 8):
                    for e in ox.static_range(4):
                        if n0 + i * 8 + 2 * quad + e % 2 >= seq:
                            sacc[4 * i + e] = float("-inf")
            if CAUSAL:
                if n0 + BN - 1 > m0 + me * 64:
                    for i in ox.static_range(BN // 8):
                        for e in ox.static_range(4):
                            if n0 + i * 8 + 2 * quad + e % 2 > row_a + 8 * (e // 2):
                                sacc[4 * i + e] = float("-inf")
            # the online softmax: tile 0 holds key 0, which every row sees, so the maxima are finite from then on
            new_a = max_a
            new_b = max_b
            for i in ox.static_range(BN // 8):
                new_a = ox.math.max(new_a, ox.math.max(sacc[4 * i], sacc[4 * i + 1]))
                new_b = ox.math.max(new_b, ox.math.max(sacc[4 * i + 2], sacc[4 * i + 3]))
            new_a = ox.math.max(new_a, warp.shfl_xor(new_a, 1))
            new_a = ox.math.max(new_a, warp.shfl_xor(new_a, 2))
            new_b = ox.math.max(new_b, warp.shfl_xor(new_b, 1))
            new_b = ox.math.max(new_b, warp.shfl_xor(new_b, 2))
            alpha_a = ox.math.fast_exp2((max_a - new_a) * scale_log2)  # 0 on the first tile (max_a = -inf)
            alpha_b = ox.math.fast_exp2((max_b - new_b) * scale_log2)
            max_a = new_a
            max_b = new_b
            base_a = new_a * scale_log2
            base_b = new_b * scale_log2
            tile_a: f32 = 0.0
            tile_b: f32 = 0.0
            for i in ox.static_range(BN // 8):
                for e in ox.static_range(2):
                    sacc[4 * i + e] = ox.math.fast_exp2(sacc[4 * i + e] * scale_log2 - base_a)
                    sacc[4 * i + 2 + e] = ox.math.fast_exp2(sacc[4 * i + 2 + e] * scale_log2 - base_b)
                    tile_a += sacc[4 * i + e]
                    tile_b += sacc[4 * i + 2 + e]
            sum_a = sum_a * alpha_a + tile_a
            sum_b = sum_b * alpha_b + tile_b
            ox.wgmma.wait_group(0, oacc)  # P_{j-1} V_{j-1} done: V's stage and P's registers are free
            if j > 0:
                ox.mbarrier.arrive(v_empty[(j - 1) % STAGES])
            for i in ox.static_range(D // 8):
                oacc[4 * i] *= alpha_a
                oacc[4 * i + 1] *= alpha_a
                oacc[4 * i + 2] *= alpha_b
                oacc[4 * i + 3] *= alpha_b
            # P_j: S's k16 step kk is its n8 tiles 2kk and 2kk + 1, the A fragment's layout, rounded to T
            for kk in ox.static_range(BN // 16):
                for e in ox.static_range(8):
                    pf[kk, e] = T(sacc[8 * kk + e])
            ox.wgmma.fence_operand(pf)  # P packed here, not between the mma calls that read it
        sv = (tiles - 1) % STAGES  # O += P_last V_last
        ox.mbarrier.wait(v_full[sv], ((tiles - 1) // STAGES) % 2)
        if PINGPONG:
            bar_sync(SCHEDULE + me)
        ox.wgmma.fence()
        for kk in ox.static_range(BN // 16):
            ox.wgmma.mma(oacc, pf[kk], smem, V_BASE + sv * TILE + kk * 16 * 64, b_major="mn", b_rows=BN)
        ox.wgmma.commit_group()
        if PINGPONG and me == 0:  # (consumer 1's last turn has no taker)
            bar_arrive(SCHEDULE + 1)
        ox.wgmma.wait_group(0, oacc)
        sum_a += warp.shfl_xor(sum_a, 1)
        sum_a += warp.shfl_xor(sum_a, 2)
        sum_b += warp.shfl_xor(sum_b, 1)
        sum_b += warp.shfl_xor(sum_b, 2)
        inv_a = ox.math.fast_div(1.0, sum_a)  # (an IEEE division is a call, which serializes every wgmma)
        inv_b = ox.math.fast_div(1.0, sum_b)
        head = i64(bh) * seq * D
        with ox.unsafe():
            if row_a < seq:
                at_a = head + i64(row_a) * D + 2 * quad
                for i in ox.static_range(D // 8):
                    o.store2((at_a + i * 8) // 2, T(oacc[4 * i] * inv_a), T(oacc[4 * i + 1] * inv_a))
                if quad == 0:
                    lse[i64(bh) * seq + row_a] = max_a * scale + ox.math.log(sum_a)
            if row_b < seq:
                at_b = head + i64(row_b) * D + 2 * quad
                for i in ox.static_range(D // 8):
                    o.store2((at_b + i * 8) // 2, T(oacc[4 * i + 2] * inv_b), T(oacc[4 * i + 3] * inv_b))
                if quad == 0:
                    lse[i64(bh) * seq + row_b] = max_b * scale + ox.math.log(sum_b)
