"""The LLTM cell's element-wise kernels in CUDA C++ (the same algorithm as examples/lltm/kernels.py,
written the way pytorch/extension-cpp's CUDA extension writes it: a template over the scalar type,
strided 2-D accessors with 32-bit index arithmetic, ``__restrict__`` inputs), compiled by NVRTC.

``compile_lltm_cuda(arch)`` returns the cubin (NVRTC from the pip toolchain, no CuPy needed), so
``benchmarks/lltm.py`` can load it with the driver and launch it through the same host path as
oxide's kernels (``cuLaunchKernel``), and ``oxide inspect``-style SASS comparisons can run on a
machine without a GPU.
"""
from __future__ import annotations

__all__ = ["LLTM_CUDA_SOURCE", "compile_lltm_cuda", "KERNEL_NAMES"]

LLTM_CUDA_SOURCE = r"""
template <typename scalar_t> struct Accessor2 {  // a PackedTensorAccessor32<scalar_t, 2>
    scalar_t* __restrict__ data;
    int stride0, stride1;
    __device__ __forceinline__ scalar_t& operator()(int i, int j) const { return data[i * stride0 + j * stride1]; }
};

template <typename scalar_t> __device__ __forceinline__ scalar_t sigmoid(scalar_t z) {
    return 1.0 / (1.0 + exp(-z));
}
template <typename scalar_t> __device__ __forceinline__ scalar_t d_sigmoid(scalar_t z) {
    const auto s = sigmoid(z);
    return (1.0 - s) * s;
}
template <typename scalar_t> __device__ __forceinline__ scalar_t d_tanh(scalar_t z) {
    const auto t = tanh(z);
    return 1 - (t * t);
}
template <typename scalar_t> __device__ __forceinline__ scalar_t elu(scalar_t z) {
    return z > 0 ? z : exp(z) - 1.0;
}
template <typename scalar_t> __device__ __forceinline__ scalar_t d_elu(scalar_t z) {
    return z > 0 ? scalar_t(1) : exp(z);
}

template <typename scalar_t>
__device__ void forward(int batch, int state, Accessor2<const scalar_t> gates, Accessor2<const scalar_t> old_cell,
                        Accessor2<scalar_t> new_h, Accessor2<scalar_t> new_cell, Accessor2<scalar_t> input_gate,
                        Accessor2<scalar_t> output_gate, Accessor2<scalar_t> candidate_cell) {
    const int n = blockIdx.y * blockDim.y + threadIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < batch && c < state) {
        input_gate(n, c) = sigmoid(gates(n, c));
        output_gate(n, c) = sigmoid(gates(n, c + state));
        candidate_cell(n, c) = elu(gates(n, c + 2 * state));
        new_cell(n, c) = old_cell(n, c) + candidate_cell(n, c) * input_gate(n, c);
        new_h(n, c) = tanh(new_cell(n, c)) * output_gate(n, c);
    }
}

template <typename scalar_t>
__device__ void backward(int batch, int state, Accessor2<const scalar_t> grad_h, Accessor2<const scalar_t> grad_cell,
                         Accessor2<const scalar_t> new_cell, Accessor2<const scalar_t> input_gate,
                         Accessor2<const scalar_t> output_gate, Accessor2<const scalar_t> candidate_cell,
                         Accessor2<const scalar_t> gates, Accessor2<scalar_t> d_old_cell,
                         Accessor2<scalar_t> d_input_gate, Accessor2<scalar_t> d_output_gate,
                         Accessor2<scalar_t> d_candidate_cell) {
    const int n = blockIdx.y * blockDim.y + threadIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < batch && c < state) {
        const auto d_output_gate_ = tanh(new_cell(n, c)) * grad_h(n, c);
        const auto d_tanh_new_cell = output_gate(n, c) * grad_h(n, c);
        const auto d_new_cell = d_tanh(new_cell(n, c)) * d_tanh_new_cell + grad_cell(n, c);
        d_old_cell(n, c) = d_new_cell;
        d_input_gate(n, c) = candidate_cell(n, c) * d_new_cell * d_sigmoid(gates(n, c));
        d_output_gate(n, c) = d_output_gate_ * d_sigmoid(gates(n, c + state));
        d_candidate_cell(n, c) = input_gate(n, c) * d_new_cell * d_elu(gates(n, c + 2 * state));
    }
}

#define ACC(T, name) T* __restrict__ name, int name##_s0, int name##_s1
#define PASS(T, name) Accessor2<T>{name, name##_s0, name##_s1}

#define INSTANTIATE(scalar_t, suffix)                                                                     \
extern "C" __global__ void lltm_forward_##suffix(int batch, int state, ACC(const scalar_t, gates),         \
        ACC(const scalar_t, old_cell), ACC(scalar_t, new_h), ACC(scalar_t, new_cell),                      \
        ACC(scalar_t, input_gate), ACC(scalar_t, output_gate), ACC(scalar_t, candidate_cell)) {           \
    forward<scalar_t>(batch, state, PASS(const scalar_t, gates), PASS(const scalar_t, old_cell),          \
        PASS(scalar_t, new_h), PASS(scalar_t, new_cell), PASS(scalar_t, input_gate),                      \
        PASS(scalar_t, output_gate), PASS(scalar_t, candidate_cell));                                     \
}                                                                                                         \
extern "C" __global__ void lltm_backward_##suffix(int batch, int state, ACC(const scalar_t, grad_h),       \
        ACC(const scalar_t, grad_cell), ACC(const scalar_t, new_cell), ACC(const scalar_t, input_gate),    \
        ACC(const scalar_t, output_gate), ACC(const scalar_t, candidate_cell), ACC(const scalar_t, gates), \
        ACC(scalar_t, d_old_cell), ACC(scalar_t, d_input_gate), ACC(scalar_t, d_output_gate),             \
        ACC(scalar_t, d_candidate_cell)) {                                                                \
    backward<scalar_t>(batch, state, PASS(const scalar_t, grad_h), PASS(const scalar_t, grad_cell),       \
        PASS(const scalar_t, new_cell), PASS(const scalar_t, input_gate), PASS(const scalar_t, output_gate),\
        PASS(const scalar_t, candidate_cell), PASS(const scalar_t, gates), PASS(scalar_t, d_old_cell),     \
        PASS(scalar_t, d_input_gate), PASS(scalar_t, d_output_gate), PASS(scalar_t, d_candidate_cell));   \
}

INSTANTIATE(float, f32)
INSTANTIATE(double, f64)
"""

KERNEL_NAMES = ("lltm_forward_f32", "lltm_backward_f32", "lltm_forward_f64", "lltm_backward_f64")


def compile_lltm_cuda(arch: str) -> bytes:
    """The cubin of :data:`LLTM_CUDA_SOURCE` for ``arch`` (``"sm_90"``), by NVRTC at -O3
    (its default), as nvcc compiles the upstream extension (no fast math)."""
    from cuda.bindings import nvrtc

    def check(result: tuple, what: str) -> object:  # type: ignore[type-arg]
        err, *rest = result
        if int(err) != 0:
            raise RuntimeError(f"NVRTC {what} failed: {err}")
        return rest[0] if rest else None

    prog = check(nvrtc.nvrtcCreateProgram(LLTM_CUDA_SOURCE.encode(), b"lltm.cu", 0, [], []), "create")
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"]
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if int(err) != 0:
        size = check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
        log = b" " * int(size)  # type: ignore[call-overload]
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(f"NVRTC failed to compile the LLTM kernels:\n{log.decode(errors='replace')}")
    size = check(nvrtc.nvrtcGetCUBINSize(prog), "cubin size")
    cubin = b" " * int(size)  # type: ignore[call-overload]
    check(nvrtc.nvrtcGetCUBIN(prog, cubin), "cubin")
    return cubin
