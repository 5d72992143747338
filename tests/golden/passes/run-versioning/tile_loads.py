"""run-versioning: the loads of an unrolled tile copy (and a conditional halo load) are tested
together before the run, which runs without their checks when every one holds; the run as
written, with every check, is the other branch. A barrier ends a run: the stores after it are
a run of their own."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def k(dst: MutSlice[f32], src: Slice[f32], W: i32, H: i32) -> None:
    tile = ox.shared.array((16, 40), f32)
    base = block.idx.x * 16 + thread.idx.x
    for i in ox.static_range(4):
        tile[thread.idx.x, thread.idx.y + 8 * i] = src[base + i * 8 * W]
    tile[thread.idx.x, thread.idx.y + 32] = src[base + 32 * W] if base < H else 0.0
    block.sync()
    with ox.unsafe():
        dst[base] = tile[thread.idx.x, thread.idx.y]
        dst[base + W] = tile[thread.idx.x, thread.idx.y + 8]

# AFTER: bounds-elimination(launch_versioning=0)
# CHECK-LABEL: kernel k(
# CHECK: base: i32 =
# CHECK-NEXT: if ({{.*}}(i64(%tid.x) < 16:i64){{.*}}< len(src){{.*}}((not (base < H)) or {{.*}}< len(src){{.*}}):  ; check-versioned
# CHECK-NEXT: tile[flat_index(((checked_index(i64(%tid.x), 16:i64):i64 * 40:i64) + checked_index(i64((%tid.y + 0:i32)), 40:i64):i64)):i64] = src[(base + (0:i32 * W))]
# CHECK-NEXT: tile[{{.*}}] = src[(base + (8:i32 * W))]
# CHECK-NOT: !
# CHECK: = select((base < H), src[(base + (32:i32 * W))], 0.0:f32)
# CHECK-NEXT: else:
# CHECK-NEXT: tile[flat_index(((checked_index(i64(%tid.x), 16:i64)!{{\d+}}:i64 * 40:i64) + checked_index(i64((%tid.y + 0:i32)), 40:i64)!{{\d+}}:i64)):i64] = src[(base + (0:i32 * W))]!{{\d+}}
# CHECK: = select((base < H), src[(base + (32:i32 * W))]!{{\d+}}, 0.0:f32)
# CHECK: call llvm.nvvm.barrier0()
# CHECK-NEXT: if ({{.*}}< len(dst){{.*}}< len(dst){{.*}}):  ; check-versioned
# CHECK-NEXT: dst[base] =
# CHECK-NEXT: dst[(base + W)] =
# CHECK-NEXT: else:
# CHECK-NEXT: dst[base]!{{\d+}} =
# CHECK-NEXT: dst[(base + W)]!{{\d+}} =


def clamp(x: i32, hi: i32) -> i32:
    return x if x < hi else hi


def synced(x: f32) -> f32:
    block.sync()
    return x


@ox.kernel
def calls(dst: MutSlice[f32], src: Slice[f32], W: i32) -> None:
    i = thread.idx.x + W
    a = src[clamp(i, W)] + src[i + 1] + src[i + 4]
    b = synced(src[i + 2]) + src[i + 3]
    with ox.unsafe():
        dst[i] = a + b

# A call of a device function without barriers stays in a run (its index is not the run's to
# test: it keeps its check); one that reaches a barrier ends the run.
# CHECK-LABEL: kernel calls(
# CHECK: if ({{.*}}(i64((i + 1:i32)) < len(src)){{.*}}(i64((i + 4:i32)) < len(src)){{.*}}):  ; check-versioned
# CHECK-NEXT: a: f32 = ((src[call {{\S+}}clamp{{\S*}}(i, W)]!{{\d+}} + src[(i + 1:i32)]) + src[(i + 4:i32)])
# CHECK-NEXT: else:
# CHECK-NOT: check-versioned
# CHECK: b: f32 = (call {{\S+}}synced{{\S*}}(src[(i + 2:i32)]!{{\d+}}) + src[(i + 3:i32)]!{{\d+}})
# CHECK-NOT: check-versioned
