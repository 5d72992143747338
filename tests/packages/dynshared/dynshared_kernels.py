"""A kernel that holds a whole segment of its input in dynamic shared memory, sized at launch
beyond the default 48 KiB (tests/test_dynamic_shared_gpu.py)."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def reverse_segments(x: Slice[f32], out: MutSlice[f32], sums: MutSlice[f32], per_block: i32) -> None:
    """Block b copies x[b*per_block : (b+1)*per_block] into dynamic shared memory, then writes
    it reversed to out, and thread 0 sums it in order into sums[b]: every element of the
    buffer is written and read, the last ones by the first threads."""
    buf = ox.shared.dynamic(f32)
    base = block.idx.x * per_block
    for i in range(thread.idx.x, per_block, block.dim.x):
        buf[i] = x[base + i]
    block.sync()
    with ox.unsafe():
        for i in range(thread.idx.x, per_block, block.dim.x):
            out[base + i] = buf[per_block - 1 - i]
        if thread.idx.x == 0:
            total = f32(0.0)
            for i in range(per_block):
                total += buf[i]
            sums[block.idx.x] = total
