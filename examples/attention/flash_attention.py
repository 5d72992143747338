"""Attention forward, FlashAttention-2 style, on the sm_80 tensor-core path.

``o = softmax(q @ k^T * scale [+ causal mask]) @ v`` for q, k, v, o of shape
(batch, heads, seq, D), contiguous, bf16 or f16, D = 64 or 128; f32 accumulation and softmax;
``lse`` (batch, heads, seq) f32 gets each row's log-sum-exp of the scaled scores (natural log).

One block of WARPS warps computes BM = 16 * WARPS query rows of one (batch, head); each warp
owns 16 of them. The warp keeps its Q tile in registers (``fragment_a``), and for every BN-row
tile of K and V:

- ``S = Q K^T`` with ``mma.sync`` m16n8k16, K's fragments read by ``ldmatrix`` from shared
  memory (K is stored [key][d], which is the column-major B that mma wants);
- the online softmax in f32 on the accumulator registers: row maxima and sums over the 4 lanes
  that share a row (``warp.shfl_xor`` 1 and 2), ``exp2`` with the scale folded into one FMA,
  the running output rescaled by ``exp2(m_old - m_new)``;
- ``O += P V`` with P taken straight from S's registers as the A operand (the m16n8k16 C
  layout of two n8 tiles is the A layout of one k16 step, rounded to T), V's fragments read by
  ``ldmatrix.trans``.

K and V tiles are copied by ``cp.async`` into one swizzled shared buffer each (16-byte chunks
XOR-ed with the row, so that ``ldmatrix`` has no bank conflicts): V's copy of tile j is in
flight while S is computed, K's copy of tile j + 1 while the softmax and P V run.

Any ``seq`` works: rows of K and V past the end are zero-filled (``src_bytes=0``) and their
scores masked to -inf, query rows past the end are computed from a clamped row and not stored.
Causal: key tiles past a block's last query row are skipped, the diagonal tiles masked; blocks
are launched heaviest first.

    flash_attention[(cdiv(seq, 16 * warps), batch * heads), 32 * warps](q, k, v, batch * heads, seq, scale, o, lse,
                                                                        D, causal, warps)

(all views flattened; ``examples.attention.attention_forward`` does this for torch tensors).
"""
import oxide as ox
from oxide import MutSlice, Slice, bf16, block, f16, f32, grid, i32, i64, thread, warp

T = ox.TypeVar("T", bf16, f16)

BN = 64  # keys per K/V tile
MAX_THREADS = 256  # 8 warps
LOG2E = 1.4426950408889634


@ox.kernel(bounds_check=False, launch_bounds=MAX_THREADS,
           constexprs={"D": [64, 128], "CAUSAL": [False, True], "WARPS": [4, 8]})
def flash_attention(q: Slice[T], k: Slice[T], v: Slice[T], heads: i32, seq: i32, scale: f32,
                    o: MutSlice[T], lse: MutSlice[f32], D: ox.Constexpr[int], CAUSAL: ox.Constexpr[bool],
                    WARPS: ox.Constexpr[int]) -> None:
    # checked by the runtime before the launch...
    assert block.dim.x == 32 * WARPS and grid.dim.y == heads and seq > 0 and heads > 0
    assert len(q) == i64(heads) * seq * D and len(k) == len(q) and len(v) == len(q) and len(o) == len(q)
    assert len(lse) == i64(heads) * seq
    assert scale > 0.0  # on the device (a float), reported at the next synchronize
    SWIZZLE = D // 64 + 2  # a row of D elements is 2^(SWIZZLE + 3) elements: XOR its 16-byte chunk with row % 8
    CHUNKS = D // 8  # 16-byte chunks per row
    THREADS = 32 * WARPS
    BM = 16 * WARPS  # query rows per block
    sk = ox.shared.array(BN * D, T)
    sv = ox.shared.array(BN * D, T)
    qf = ox.mma.fragment_a("m16n8k16", T, D // 16)
    pf = ox.mma.fragment_a("m16n8k16", T)
    kf = ox.mma.fragment_b("m16n8k16", T, 2)
    vf = ox.mma.fragment_b("m16n8k16", T, 2)
    s = ox.mma.fragment_c("m16n8k16", BN // 8)
    acc = ox.mma.fragment_c("m16n8k16", D // 8)
    tid = thread.idx.x
    lane = tid % 32
    quad = lane % 4
    m0 = (grid.dim.x - 1 - block.idx.x) * BM  # the last query tiles first: under CAUSAL they have the most work
    head = i64(block.idx.y) * seq * D  # the first element of this (batch, head)
    row_a = m0 + (tid // 32) * 16 + lane // 4  # this lane's two rows of the warp's 16: row_a and row_a + 8
    row_b = row_a + 8
    # Q: this lane's part of the A fragments, straight from global memory (once per block)
    qa = head + i64(min(row_a, seq - 1)) * D + 2 * quad
    qb = head + i64(min(row_b, seq - 1)) * D + 2 * quad
    for kk in ox.static_range(D // 16):
        for e in ox.static_range(2):
            qf[kk, e] = q[qa + kk * 16 + e]
            qf[kk, 2 + e] = q[qb + kk * 16 + e]
            qf[kk, 4 + e] = q[qa + kk * 16 + 8 + e]
            qf[kk, 6 + e] = q[qb + kk * 16 + 8 + e]
    for i in ox.static_range(D // 8):
        for e in ox.static_range(4):
            acc[i, e] = 0.0
    # this lane's ldmatrix rows in the swizzled tiles, for the four 16-column steps of a 64-column
    # span: the swizzle XORs a chunk with row % 8, so whole 16-row and 64-column steps are plain offsets
    k_at = ox.local.array(4, i32)
    v_at = ox.local.array(4, i32)
    for c in ox.static_range(4):
        k_at[c] = ox.mma.swizzle(((lane // 16) * 8 + lane % 8) * D + c * 16 + ((lane // 8) % 2) * 8, 3, 3, SWIZZLE)
        v_at[c] = ox.mma.swizzle((lane % 16) * D + c * 16 + 8 * (lane // 16), 3, 3, SWIZZLE)
    max_a: f32 = float("-inf")  # running row maxima of the raw scores
    max_b: f32 = float("-inf")
    sum_a: f32 = 0.0  # running sums of exp2((score - max) * scale * log2 e) over this lane's columns
    sum_b: f32 = 0.0
    scale_log2 = scale * f32(LOG2E)
    end = seq
    if CAUSAL:
        end = min(seq, m0 + BM)
    tiles = (end + BN - 1) // BN
    # the prologue: K tile 0
    for i in ox.static_range(BN * CHUNKS // THREADS):
        c = tid + i * THREADS
        r = c // CHUNKS
        col = (c % CHUNKS) * 8
        ox.cp_async.copy(sk, ox.mma.swizzle(r * D + col, 3, 3, SWIZZLE), k, head + i64(min(r, seq - 1)) * D + col, 16,
                         cache="cg", src_bytes=i32(16) if r < seq else i32(0))
    ox.cp_async.commit_group()
    for j in range(tiles):
        n0 = j * BN
        ox.cp_async.wait_group(0)  # K tile j has landed...
        block.sync()  # ...for every thread, and every warp is done with V tile j - 1
        for i in ox.static_range(BN * CHUNKS // THREADS):
            c = tid + i * THREADS
            r = c // CHUNKS
            col = (c % CHUNKS) * 8
            ox.cp_async.copy(sv, ox.mma.swizzle(r * D + col, 3, 3, SWIZZLE), v,
                             head + i64(min(n0 + r, seq - 1)) * D + col, 16,
                             cache="cg", src_bytes=i32(16) if n0 + r < seq else i32(0))
        ox.cp_async.commit_group()
        # S = Q K^T: for each pair of n8 tiles of keys, one ldmatrix.x4 gives both B fragments of a k16 step
        for i in ox.static_range(BN // 8):
            for e in ox.static_range(4):
                s[i, e] = 0.0
        for kk in ox.static_range(D // 16):
            for p in ox.static_range(BN // 16):  # keys p * 16 + 0..15, columns kk * 16 + 0..15
                ox.mma.ldmatrix(kf[0], kf[1], sk, k_at[kk % 4] + (kk // 4) * 64 + p * 16 * D)
                ox.mma.sync(s[2 * p], qf[kk], kf[0], s[2 * p])
                ox.mma.sync(s[2 * p + 1], qf[kk], kf[1], s[2 * p + 1])
        # masks: keys past seq, and under CAUSAL keys after the row (only the tiles that have them)
        if n0 + BN > seq:
            for i in ox.static_range(BN // 8):
                for e in ox.static_range(4):
                    if n0 + i * 8 + 2 * quad + e % 2 >= seq:
                        s[i, e] = float("-inf")
        if CAUSAL:
            if n0 + BN - 1 > m0:
                for i in ox.static_range(BN // 8):
                    for e in ox.static_range(4):
                        if n0 + i * 8 + 2 * quad + e % 2 > row_a + 8 * (e // 2):
                            s[i, e] = float("-inf")
        ox.cp_async.wait_group(0)  # V tile j has landed...
        block.sync()  # ...and every warp is done with K tile j: copy K tile j + 1 during the softmax and P V
        if j + 1 < tiles:
            for i in ox.static_range(BN * CHUNKS // THREADS):
                c = tid + i * THREADS
                r = c // CHUNKS
                col = (c % CHUNKS) * 8
                ox.cp_async.copy(sk, ox.mma.swizzle(r * D + col, 3, 3, SWIZZLE), k,
                                 head + i64(min(n0 + BN + r, seq - 1)) * D + col, 16,
                                 cache="cg", src_bytes=i32(16) if n0 + BN + r < seq else i32(0))
        ox.cp_async.commit_group()
        # the online softmax: tile 0 holds key 0, which every row sees, so the maxima are finite from then on
        new_a = max_a
        new_b = max_b
        for i in ox.static_range(BN // 8):
            new_a = max(new_a, max(s[i, 0], s[i, 1]))
            new_b = max(new_b, max(s[i, 2], s[i, 3]))
        new_a = max(new_a, warp.shfl_xor(new_a, 1))
        new_a = max(new_a, warp.shfl_xor(new_a, 2))
        new_b = max(new_b, warp.shfl_xor(new_b, 1))
        new_b = max(new_b, warp.shfl_xor(new_b, 2))
        alpha_a = ox.math.exp2((max_a - new_a) * scale_log2)  # 0 on the first tile (max_a = -inf)
        alpha_b = ox.math.exp2((max_b - new_b) * scale_log2)
        max_a = new_a
        max_b = new_b
        base_a = new_a * scale_log2
        base_b = new_b * scale_log2
        tile_a: f32 = 0.0
        tile_b: f32 = 0.0
        for i in ox.static_range(BN // 8):
            for e in ox.static_range(2):
                s[i, e] = ox.math.exp2(s[i, e] * scale_log2 - base_a)
                s[i, 2 + e] = ox.math.exp2(s[i, 2 + e] * scale_log2 - base_b)
                tile_a += s[i, e]
                tile_b += s[i, 2 + e]
        sum_a = sum_a * alpha_a + tile_a
        sum_b = sum_b * alpha_b + tile_b
        for i in ox.static_range(D // 8):
            acc[i, 0] *= alpha_a
            acc[i, 1] *= alpha_a
            acc[i, 2] *= alpha_b
            acc[i, 3] *= alpha_b
        # O += P V: P's k16 step kk is S's n8 tiles 2kk and 2kk + 1, rounded to T
        for kk in ox.static_range(BN // 16):
            for e in ox.static_range(4):
                pf[e] = T(s[2 * kk, e])
                pf[4 + e] = T(s[2 * kk + 1, e])
            for p in ox.static_range(D // 16):  # keys kk * 16 + 0..15, columns p * 16 + 0..15
                ox.mma.ldmatrix(vf[0], vf[1], sv, v_at[p % 4] + (p // 4) * 64 + kk * 16 * D, trans=True)
                ox.mma.sync(acc[2 * p], pf, vf[0], acc[2 * p])
                ox.mma.sync(acc[2 * p + 1], pf, vf[1], acc[2 * p + 1])
    ox.cp_async.wait_group(0)
    sum_a += warp.shfl_xor(sum_a, 1)
    sum_a += warp.shfl_xor(sum_a, 2)
    sum_b += warp.shfl_xor(sum_b, 1)
    sum_b += warp.shfl_xor(sum_b, 2)
    inv_a = 1.0 / sum_a
    inv_b = 1.0 / sum_b
    with ox.unsafe():
        if row_a < seq:
            at = head + i64(row_a) * D + 2 * quad
            for i in ox.static_range(D // 8):
                o.store2((at + i * 8) // 2, T(acc[i, 0] * inv_a), T(acc[i, 1] * inv_a))
            if quad == 0:
                lse[i64(block.idx.y) * seq + row_a] = max_a * scale + ox.math.log(sum_a)
        if row_b < seq:
            at = head + i64(row_b) * D + 2 * quad
            for i in ox.static_range(D // 8):
                o.store2((at + i * 8) // 2, T(acc[i, 2] * inv_b), T(acc[i, 3] * inv_b))
            if quad == 0:
                lse[i64(block.idx.y) * seq + row_b] = max_b * scale + ox.math.log(sum_b)
