"""check-versioning: a local the body assigns once before the access stands for its value
(`addr = p + l * n`), and a 1-D constant array's check compares with its element count; a local
assigned after the access (last trip's value) keeps its check."""
import oxide as ox
from oxide import MutSlice, Slice, f32, i32, thread

TABLE = ox.constant.array(64, f32)


@ox.kernel
def k(features: Slice[f32], out: MutSlice[f32], nf: i32, n: i32, base: i32) -> None:
    p = thread.index_1d()
    s: f32 = 0.0
    late = 0
    for l in range(nf):
        addr = i32(p) + l * n
        s += features[addr] - TABLE[base + l]
    for m in range(nf):
        s += features[late]
        late = m * 2
    with ox.unsafe():
        out[p] = s

# AFTER: bounds-elimination(launch_versioning=0)
# CHECK-LABEL: kernel k(
# CHECK: if ({{.*}}len(features){{.*}}64:i64{{.*}}):
# CHECK-NEXT: while (l < $stop1):
# CHECK-NEXT: addr: i32 = (i32(p) + (l * n))
# CHECK-NEXT: s: f32 = (s + (features[addr] - @{{\w+}}TABLE[(base + l)]))
# CHECK: else:
# CHECK: s: f32 = (s + (features[addr]!{{\d+}} - @{{\w+}}TABLE[(base + l)]!{{\d+}}))
# CHECK: while (m < $stop3):
# CHECK-NEXT: s: f32 = (s + features[late]!{{\d+}})
# CHECK-NOT: else:
