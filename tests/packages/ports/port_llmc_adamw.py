"""AdamW parameter update, one thread per parameter.

Ported from llm.c (Andrej Karpathy, MIT), dev/cuda/adamw.cu (`lerp`, `adamw_kernel2`), the way its
author writes it: the moments updated with a lerp written as two fmas, the bias corrections
passed in, the early return past the end."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i64, thread


def lerp(start: f32, end: f32, weight: f32) -> f32:
    return ox.math.fma(weight, end, ox.math.fma(-weight, start, start))


@ox.kernel
def adamw_kernel2(params_memory: MutSlice[f32], grads_memory: Slice[f32], m_memory: MutSlice[f32],
                  v_memory: MutSlice[f32], num_parameters: i64, learning_rate: f32, beta1: f32, beta2: f32,
                  beta1_correction: f32, beta2_correction: f32, eps: f32, weight_decay: f32) -> None:
    i = block.idx.x * block.dim.x + thread.idx.x
    if i >= num_parameters:
        return
    grad = grads_memory[i]
    m = m_memory[i]
    v = v_memory[i]
    m = lerp(grad, m, beta1)
    with ox.unsafe():
        m_memory[i] = m
    v = lerp(grad * grad, v, beta2)
    with ox.unsafe():
        v_memory[i] = v
    m /= beta1_correction
    v /= beta2_correction
    with ox.unsafe():
        params_memory[i] -= learning_rate * (m / (ox.math.sqrt(v) + eps) + weight_decay * params_memory[i])
