"""GPT-2 encoder forward: token plus position embeddings, one thread per output element.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/encoder_forward.cu (`encoder_forward_kernel2`),
the way its author writes it: the flat index split into (b, t, c) with `/` and `%` in int, the
token id looked up per element, the output and the two table rows addressed as pointers moved to
the element (offsets here)."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread


@ox.kernel
def encoder_forward_kernel2(out: MutSlice[f32], inp: Slice[i32], wte: Slice[f32], wpe: Slice[f32],
                            B: i32, T: i32, C: i32) -> None:
    idx = block.idx.x * block.dim.x + thread.idx.x
    N = B * T * C
    if idx < N:
        bt = idx // C
        b = bt // T
        t = bt % T
        c = idx % C
        ix = inp[b * T + t]
        with ox.unsafe():
            out[b * T * C + t * C + c] = wte[ix * C + c] + wpe[t * C + c]
