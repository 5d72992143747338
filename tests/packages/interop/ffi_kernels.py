"""Python kernels calling CUDA C++ device functions (csrc/fastmath.cu) and launching a CUDA C++
kernel, linked through LTO-IR."""
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, f32, i32, i64, kernel, thread


@ox.extern("ox_axpb", sources=["csrc/fastmath.cu"])
def axpb(a: f32, x: f32, b: f32) -> f32: ...


@ox.extern("ox_softplus", sources=["csrc/fastmath.cu"])
def softplus(x: f32) -> f32: ...


@ox.extern("ox_window_sum", sources=["csrc/fastmath.cu"])
def window_sum(x: Slice[f32], i: i64, w: i32) -> f32: ...


@ox.extern_kernel("ox_scale_add", sources=["csrc/fastmath.cu"])
def scale_add(a: f32, x: Slice[f32], out: MutSlice[f32]) -> None: ...


def axpb_py(a: f32, x: f32, b: f32) -> f32:
    return a * x + b


@kernel
def axpb_cpp(a: f32, x: Slice[f32], b: f32, out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = axpb(a, x[i], b)


@kernel
def axpb_python(a: f32, x: Slice[f32], b: f32, out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = axpb_py(a, x[i], b)


@kernel
def softplus_cpp(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = softplus(x[i])


@kernel
def window_sums(x: Slice[f32], w: i32, out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = window_sum(x, i64(i), w)
