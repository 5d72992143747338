"""Layer normalization forward, one block per row, half or single precision in, f32 math.

Ported from Triton's tutorial 05-layer-norm.py (`_layer_norm_fwd_fused`), rewritten as
SIMT the way a CUDA author writes it (the shape of apex/PyTorch's LayerNorm forward): a block
strides over its row, mean and then variance reduced through shared memory, the statistics
kept in f32 whatever the element type (`acc_t`), the mean and rstd written per row, the
output converted back to the element type once."""
import oxide as ox
from oxide import MutSlice, Slice, Tensor, bf16, block, f16, f32, i32, thread

T = ox.TypeVar("T", f16, bf16, f32)
BLOCK = 256


def block_sum(buf: MutSlice[f32], v: f32) -> f32:
    tid = thread.idx.x
    buf[tid] = v
    block.sync()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            buf[tid] += buf[tid + s]
        block.sync()
        s >>= 1
    total = buf[0]
    block.sync()
    return total


@ox.kernel(launch_bounds=BLOCK)
def layer_norm_fwd(X: Tensor[T, 2], Y: MutSlice[T], W: Slice[T], B: Slice[T],
                   Mean: MutSlice[f32], Rstd: MutSlice[f32], eps: f32) -> None:
    assert block.dim.x == BLOCK
    row = block.idx.x
    N = X.shape[1]
    buf = ox.shared.array(BLOCK, f32)

    acc: ox.acc_type(T) = 0.0
    for col in range(thread.idx.x, N, BLOCK):
        acc += X[row, col]
    mean = block_sum(buf, acc) / N

    var_acc: ox.acc_type(T) = 0.0
    for col in range(thread.idx.x, N, BLOCK):
        d = X[row, col] - mean
        var_acc += d * d
    var = block_sum(buf, var_acc) / N
    rstd = 1.0 / ox.math.sqrt(var + eps)

    if thread.idx.x == 0:
        with ox.unsafe():
            Mean[row] = mean
            Rstd[row] = rstd

    for col in range(thread.idx.x, N, BLOCK):
        x_hat = (X[row, col] - mean) * rstd
        with ox.unsafe():
            Y[row * N + col] = T(x_hat * W[col] + B[col])
