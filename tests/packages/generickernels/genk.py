"""Generic kernels for tests/test_generics_gpu.py: one source per algorithm, an instance per
type, half precision computed in ox.acc_type(T). The layer norm and softmax are our own
row-wise ports of the usual PyTorch forward (torch.nn.functional.layer_norm / softmax over the
last dimension), one thread per output element recomputing its row's statistics."""
import oxide as ox
from oxide import DisjointSlice, DisjointTensor, Slice, Tensor, bf16, f16, f32, f64, i32, i64, thread

T = ox.TypeVar("T", f16, bf16, f32, f64)
I = ox.TypeVar("I", i32, f32)


@ox.kernel
def per_type(x: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out):
        acc: ox.acc_type(T) = 0.0
        if T is f64:
            acc = x[i] * 2.0 + 1.0
        elif T in (f16, bf16):
            acc = ox.math.exp(x[i]) + ox.acc_type(T)(0.25)
        else:
            acc = x[i] * T(4.0) - 3.0
        out[i] = T(acc)


@ox.kernel
def int_or_float(x: Slice[I], out: DisjointSlice[I]) -> None:
    i = thread.index_1d()
    if i < len(out):
        if I is i32:
            out[i] = (x[i] >> 1) ^ I(5)
        else:
            out[i] = x[i] * 0.5 + I(5)


@ox.kernel
def layer_norm(x: Tensor[T, 2], w: Slice[T], b: Slice[T], eps: f32, out: DisjointTensor[T, 2]) -> None:
    row, col = thread.index_2d()
    if row < out.shape[0] and col < out.shape[1]:
        n = x.shape[1]
        mean: ox.acc_type(T) = 0.0
        for c in range(n):
            mean += x[row, c]
        mean = mean / n
        var: ox.acc_type(T) = 0.0
        for c in range(n):
            d = ox.acc_type(T)(x[row, c]) - mean
            var += d * d
        var = var / n
        rstd = ox.math.rsqrt(var + ox.acc_type(T)(eps))
        y = (ox.acc_type(T)(x[row, col]) - mean) * rstd
        out[row, col] = T(y * w[col] + b[col])


@ox.kernel
def softmax(x: Tensor[T, 2], out: DisjointTensor[T, 2]) -> None:
    row, col = thread.index_2d()
    if row < out.shape[0] and col < out.shape[1]:
        n = x.shape[1]
        top: ox.acc_type(T) = x[row, 0]
        for c in range(1, n):
            top = max(top, ox.acc_type(T)(x[row, c]))
        total: ox.acc_type(T) = 0.0
        for c in range(n):
            total += ox.math.exp(ox.acc_type(T)(x[row, c]) - top)
        out[row, col] = T(ox.math.exp(ox.acc_type(T)(x[row, col]) - top) / total)


def row_mean_square(x: Tensor[T, 2], r: i64) -> ox.acc_type(T):
    acc: ox.acc_type(T) = 0.0
    for c in range(x.shape[1]):
        v = ox.acc_type(T)(x[r, c])
        acc += v * v
    return acc / x.shape[1]


@ox.kernel
def rms_norm(x: Tensor[T, 2], out: DisjointTensor[T, 2]) -> None:
    # a generic device function over a tensor, returning the accumulate type
    row, col = thread.index_2d()
    if row < out.shape[0] and col < out.shape[1] and row < x.shape[0] and col < x.shape[1]:
        scale = ox.math.rsqrt(row_mean_square(x, row) + ox.acc_type(T)(1e-6))
        out[row, col] = T(ox.acc_type(T)(x[row, col]) * scale)
