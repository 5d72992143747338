"""Memory spaces (docs/language.md, "Constant and global memory"): a constant table with
initial values, one filled from the host, a tuple of numbers, and device globals (a counter, a
flag) read and written by the host. Checked against NumPy by tests/test_lang_memory_gpu.py."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, u32, thread

TAPS = 5
WEIGHTS = ox.constant.array(TAPS, f32, init=(0.0625, 0.25, 0.375, 0.25, 0.0625))
SCALE = ox.constant.array(2, f32)  # filled from the host: (multiplier, offset)
OFFSETS = (3, -1, 4, -1, 5, -9, 2, 6)
COUNTER = ox.global_memory.array(1, u32)
FLAG = ox.global_memory.array(1, i32)
PER_BUCKET = ox.global_memory.array(8, u32)


def dot(w: Slice[f32], x: Slice[f32]) -> f32:
    acc: f32 = 0.0
    for k in range(len(w)):
        acc += w[k] * x[k]
    return acc


@ox.kernel
def blur(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    """out[i] = (WEIGHTS · x[i:i+5]) * SCALE[0] + SCALE[1] + OFFSETS[i % 8] (the
    convolutionSeparable sample's __constant__ kernel, ported)."""
    i = thread.index_1d()
    if i < len(out) and i + TAPS <= len(x):
        out[i] = dot(WEIGHTS, x[i:i + TAPS]) * SCALE[0] + SCALE[1] + f32(OFFSETS[i % 8])


@ox.kernel
def count_above(x: Slice[f32], threshold: f32) -> None:
    """COUNTER += how many x > threshold; FLAG = 1 when some x is negative; PER_BUCKET[b] counts
    the elements with i % 8 == b."""
    i = thread.index_1d()
    if i < len(x):
        if x[i] > threshold:
            ox.atomic.add(COUNTER, 0, u32(1))
        if x[i] < 0.0:
            with ox.unsafe():
                FLAG[0] = 1
        ox.atomic.add(PER_BUCKET, i % 8, u32(1))
