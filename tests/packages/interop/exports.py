"""Python device functions exported to CUDA C++ (@oxide.device(export=...))."""
import oxide as ox
from oxide import Slice, f32, i64


@ox.device(export="py_gelu")
def gelu(x: f32) -> f32:
    return 0.5 * x * (1.0 + ox.math.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


@ox.device(export="py_dot")
def dot(x: Slice[f32], y: Slice[f32]) -> f32:
    acc = f32(0.0)
    for k in range(len(x)):
        acc += x[k] * y[k]
    return acc
