"""Kernels of tests/test_tensor_cores_gpu.py: one warp, one mma each, so a wrong fragment
layout shows up as wrong elements."""
import oxide as ox
from oxide import MutSlice, Slice, bf16, block, f16, f32, i32, u32, u64, thread

T = ox.TypeVar("T", bf16, f16)


@ox.kernel
def mma_tile(a: Slice[T], b: Slice[T], c: Slice[f32], out: MutSlice[f32]) -> None:
    """out (16×8, f32) = a (16×16, row-major) @ b (16×8, row-major) + c: cp.async into shared
    memory, ldmatrix (A .x4, B .x2.trans), one mma.sync m16n8k16."""
    sa = ox.shared.array(256, T)
    sb = ox.shared.array(128, T)
    lane = thread.idx.x
    ox.cp_async.copy(sa, lane * 8, a, lane * 8, 16, cache="cg")
    if lane < 16:
        ox.cp_async.copy(sb, lane * 8, b, lane * 8, 8)
        ox.cp_async.copy(sb, lane * 8 + 4, b, lane * 8 + 4, 8)
    ox.cp_async.commit_group()
    ox.cp_async.wait_group(0)
    block.sync()
    fa = ox.mma.fragment_a("m16n8k16", T)
    fb = ox.mma.fragment_b("m16n8k16", T)
    acc = ox.mma.fragment_c("m16n8k16")
    r = lane // 4
    col = 2 * (lane % 4)
    acc[0] = c[r * 8 + col]
    acc[1] = c[r * 8 + col + 1]
    acc[2] = c[(r + 8) * 8 + col]
    acc[3] = c[(r + 8) * 8 + col + 1]
    ox.mma.ldmatrix(fa, sa, (lane % 16) * 16 + 8 * (lane // 16))
    ox.mma.ldmatrix(fb, sb, (lane % 16) * 8, trans=True)
    ox.mma.sync(acc, fa, fb, acc)
    with ox.unsafe():
        out[r * 8 + col] = acc[0]
        out[r * 8 + col + 1] = acc[1]
        out[(r + 8) * 8 + col] = acc[2]
        out[(r + 8) * 8 + col + 1] = acc[3]


@ox.kernel
def mma_tf32(a: Slice[f32], b: Slice[f32], out: MutSlice[f32]) -> None:
    """out (16×8) = a (16×8, row-major) @ b (8×8, row-major), tf32 inputs: the fragments are
    filled by hand in PTX's m16n8k8 layout."""
    lane = thread.idx.x
    g = lane // 4
    t = lane % 4
    fa = ox.mma.fragment_a("m16n8k8", f32)
    fb = ox.mma.fragment_b("m16n8k8", f32)
    acc = ox.mma.fragment_c("m16n8k8")
    fa[0] = a[g * 8 + t]
    fa[1] = a[(g + 8) * 8 + t]
    fa[2] = a[g * 8 + t + 4]
    fa[3] = a[(g + 8) * 8 + t + 4]
    fb[0] = b[t * 8 + g]
    fb[1] = b[(t + 4) * 8 + g]
    for i in ox.static_range(4):
        acc[i] = 0.0
    ox.mma.sync(acc, fa, fb, acc)
    with ox.unsafe():
        out[g * 8 + 2 * t] = acc[0]
        out[g * 8 + 2 * t + 1] = acc[1]
        out[(g + 8) * 8 + 2 * t] = acc[2]
        out[(g + 8) * 8 + 2 * t + 1] = acc[3]


@ox.kernel
def ldmatrix_x1(x: Slice[f16], out: MutSlice[f16]) -> None:
    """One 8×8 matrix (.x1) and its transpose: out[0:64] as each lane holds it, out[64:128] .trans."""
    sm = ox.shared.array(64, f16)
    lane = thread.idx.x
    if lane < 16:
        ox.cp_async.copy(sm, lane * 4, x, lane * 4, 8)
    ox.cp_async.commit_group()
    ox.cp_async.wait_group(0)
    block.sync()
    plain = ox.local.array(2, f16)
    trans = ox.local.array(2, f16)
    ox.mma.ldmatrix(plain, sm, (lane % 8) * 8)
    ox.mma.ldmatrix(trans, sm, (lane % 8) * 8, trans=True)
    with ox.unsafe():
        out[lane * 2] = plain[0]
        out[lane * 2 + 1] = plain[1]
        out[64 + lane * 2] = trans[0]
        out[64 + lane * 2 + 1] = trans[1]


@ox.kernel
def asm_ops(x: Slice[u64], out_lo: MutSlice[u32], out_hi: MutSlice[u32], out_lane: MutSlice[i32],
            swz: MutSlice[i32]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(out_lo) and i < len(out_hi) and i < len(out_lane) and i < len(swz):
        with ox.unsafe():
            lo, hi = ox.asm("mov.b64 {$0, $1}, $2;", outputs=(("=r", u32), ("=r", u32)), inputs=(("l", x[i]),))
            lane = ox.asm("mov.u32 $0, %laneid;", outputs=(("=r", i32),))
            out_lo[i] = lo
            out_hi[i] = hi
            out_lane[i] = lane
            swz[i] = ox.mma.swizzle(i32(i), 3, 3, 4)

