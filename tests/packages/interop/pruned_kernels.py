"""Python kernels linked with CUDA C++ through LTO-IR whose entry points drop parameters their
code never reads (oxide_build/lower/entry_params.py: the one lowering drops them):
x's length and ``unused`` (axpb_checked), x's shape (axpb_2d). tests/test_entry_params.py checks the
linked entry points, tests/test_interop_gpu.py the results."""
import oxide as ox
from oxide import DisjointSlice, DisjointTensor, Slice, Tensor, f32, kernel, thread


@ox.extern("ox_axpb", sources=["csrc/fastmath.cu"])
def axpb(a: f32, x: f32, b: f32) -> f32: ...


@kernel
def axpb_checked(a: f32, x: Slice[f32], unused: f32, b: f32, out: DisjointSlice[f32]) -> None:
    """out[i] = a * x[i] + b, in C++"""
    assert len(x) == len(out)
    i = thread.index_1d()
    if i < len(out):
        out[i] = axpb(a, x[i], b)


@kernel
def axpb_2d(a: f32, x: Tensor[f32, 2], b: f32, out: DisjointTensor[f32, 2]) -> None:
    """out[r, c] = a * x[r, c] + b, in C++"""
    assert x.shape[0] == out.shape[0] and x.shape[1] == out.shape[1]
    row, col = thread.index_2d()
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = axpb(a, x[row, col], b)
