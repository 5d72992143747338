"""The output element an index names in NCHW pooling, decoded as PyTorch's pooling kernels decode
it (aten/src/ATen/native/cuda/AveragePool2d.cu, DilatedMaxPool2d.cu): shared by the
avg_pool2d and max_pool2d ports."""
import oxide as ox
from oxide import i32, i64

Index = ox.TypeVar("Index", i32, i64)


def pooled_position(index: Index, channels: i64, pooled_height: i64,
                    pooled_width: Index) -> tuple[i64, i64, i64, Index]:
    """``(n, c, ph, pw)`` of element ``index`` of an ``(N, channels, pooled_height, pooled_width)``
    output."""
    pw = index % pooled_width
    ph = (index // pooled_width) % pooled_height
    c = (index // pooled_width // pooled_height) % channels
    n = index // pooled_width // pooled_height // channels
    return n, c, ph, pw
