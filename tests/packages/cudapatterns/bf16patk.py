"""bf16 kernels for tests/test_cuda_patterns_gpu.py (issue 29 item 12), apart from patk.py
because libNVVM cannot compile bf16 (patk.py builds with both backends)."""
import oxide as ox
from oxide import MutSlice, Slice, block, i32, thread


@ox.kernel
def bf16x2_atomic_add(x: Slice[ox.bf16], acc: MutSlice[ox.bf16], per_block: MutSlice[ox.bf16], total: MutSlice[ox.bf16],
                      slots: i32) -> None:
    """atomicAdd on __nv_bfloat162 at device scope (acc, pair i % slots), at block scope (the
    block's own pair of per_block) and system scope (pair 0 of total), and a bf16 atomicAdd
    (total[2]); each returns the old value, which the kernel ignores."""
    i = thread.index_1d()
    if 2 * i + 1 < len(x):
        v = ox.bf16x2(x[2 * i], x[2 * i + 1])
        ox.atomic.add(acc, i % slots, v)
        ox.atomic.add(per_block, block.idx.x, v, scope="block")
        ox.atomic.add(total, 0, v, scope="system")
        ox.atomic.add(total, 2, x[2 * i])
