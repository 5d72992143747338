"""launch-instances: a kernel versioned on launch-invariant facts (len(x) >= n for the guard
i < n) becomes two entry points: the kernel keeps its symbol and the checked copy, and says which
condition launches the other; k__fast has the same prefix (its leading assert) and the copy
without checks. No thread evaluates the test."""
import oxide as ox
from oxide import MutSlice, Slice, f32, i32, thread


@ox.kernel
def k(x: Slice[f32], out: MutSlice[f32], n: i32) -> None:
    assert n >= 0
    i = thread.index_1d()
    if i < n:
        with ox.unsafe():
            out[i] = x[i] * 2.0

# AFTER: bounds-elimination
# BEFORE: if {{.*}}len(x){{.*}}:  ; launch-versioned
# CHECK-LABEL: kernel k(
# CHECK-NEXT: ; checked copy: the runtime launches k__fast when ['and', [['ge', ['arg', 1], ['cast', 'i64', ['arg', 4]]], ['ge', ['arg', 3], ['cast', 'i64', ['arg', 4]]]]]
# CHECK-NEXT: check (n >= 0:i32)!{{\d+}}  ; hoistable
# CHECK-NOT: launch-versioned
# CHECK: out[i]!{{\d+}} = (x[i]!{{\d+}} * 2.0:f32)
# CHECK-LABEL: kernel k__fast(
# CHECK-NEXT: ; fast instance of k
# CHECK-NEXT: check (n >= 0:i32)!{{\d+}}  ; hoistable
# CHECK-NOT: launch-versioned
# CHECK: out[i] = (x[i] * 2.0:f32)
