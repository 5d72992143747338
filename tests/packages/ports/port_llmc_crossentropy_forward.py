"""Cross-entropy forward: -log(probs[b, t, targets[b, t]]), a thread per position.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/crossentropy_forward.cu
(`crossentropy_forward_kernel1`), as first written in issue 29's second probe."""
import oxide as ox
from oxide import Slice, MutSlice, f32, i32, thread


@ox.kernel
def crossentropy_forward_kernel1(losses: MutSlice[f32], probs: Slice[f32], targets: Slice[i32], b: i32, t: i32,
                                 v: i32) -> None:
    i = thread.index_1d()
    if i < b * t:
        bb = i // t
        tt = i % t
        bt = bb * t + tt
        probs_bt = probs[bt * v:]
        ix = targets[bt]
        with ox.unsafe():
            losses[bt] = -ox.math.log(probs_bt[ix])
