"""The LLTM cell's forward and backward as C++ operators registered with ``TORCH_LIBRARY`` (what
pytorch/extension-cpp's extension does), calling the CUDA C++ kernels of ``lltm_cuda.py``: the
host-overhead baseline of a C++ op registration for ``benchmarks/lltm.py``; and the smallest op,
``saxpy`` (one input, one output, one launch of a given kernel), its baseline for a minimal op.

No CUDA headers are needed: the kernels are launched through the address of ``cuLaunchKernel``
and the ``CUfunction`` handles, passed in as ints, on the legacy default stream (the benchmark's
stream). Built with the host C++ compiler against the installed PyTorch's headers and libraries,
then loaded with ``torch.ops.load_library``: ``torch.ops.lltm_cpp.forward`` / ``.backward``.
"""
from __future__ import annotations

import os
import subprocess
import sysconfig
import tempfile
from pathlib import Path

__all__ = ["CPP_SOURCE", "build_lltm_cpp"]

CPP_SOURCE = r"""
#include <torch/library.h>
#include <ATen/ATen.h>
#include <cstdint>
#include <vector>

typedef int (*launch_t)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                        void**);

static void launch(int64_t fn, int64_t launch_ptr, int batch, int state, const std::vector<at::Tensor>& ts) {
    std::vector<void*> data;
    std::vector<int> strides;
    data.reserve(ts.size());
    strides.reserve(2 * ts.size());
    for (const auto& t : ts) {
        data.push_back(t.data_ptr());
        strides.push_back((int)t.stride(0));
        strides.push_back((int)t.stride(1));
    }
    std::vector<void*> params;
    params.push_back(&batch);
    params.push_back(&state);
    for (size_t i = 0; i < ts.size(); i++) {
        params.push_back(&data[i]);
        params.push_back(&strides[2 * i]);
        params.push_back(&strides[2 * i + 1]);
    }
    const unsigned bx = 128, by = 2;
    unsigned gx = (state + bx - 1) / bx, gy = (batch + by - 1) / by;
    int err = ((launch_t)launch_ptr)((void*)fn, gx, gy, 1, bx, by, 1, 0, nullptr, params.data(), nullptr);
    TORCH_CHECK(err == 0, "cuLaunchKernel failed: ", err);
}

std::vector<at::Tensor> lltm_forward(const at::Tensor& input, const at::Tensor& weights, const at::Tensor& bias,
                                     const at::Tensor& old_h, const at::Tensor& old_cell, int64_t fn,
                                     int64_t launch_ptr) {
    auto X = at::cat({old_h, input}, 1);
    auto gates = at::addmm(bias, X, weights.t());
    const int batch = old_cell.size(0), state = old_cell.size(1);
    auto new_h = at::empty_like(old_cell), new_cell = at::empty_like(old_cell), input_gate = at::empty_like(old_cell),
         output_gate = at::empty_like(old_cell), candidate_cell = at::empty_like(old_cell);
    launch(fn, launch_ptr, batch, state, {gates, old_cell, new_h, new_cell, input_gate, output_gate, candidate_cell});
    return {new_h, new_cell, input_gate, output_gate, candidate_cell, X, gates};
}

std::vector<at::Tensor> lltm_backward(const at::Tensor& grad_h, const at::Tensor& grad_cell, const at::Tensor& new_cell,
                                      const at::Tensor& input_gate, const at::Tensor& output_gate,
                                      const at::Tensor& candidate_cell, const at::Tensor& X, const at::Tensor& gates,
                                      const at::Tensor& weights, int64_t fn, int64_t launch_ptr) {
    const int batch = new_cell.size(0), state = new_cell.size(1);
    auto d_old_cell = at::empty_like(new_cell);
    auto d_gates = at::empty_like(gates);
    launch(fn, launch_ptr, batch, state, {grad_h, grad_cell, new_cell, input_gate, output_gate, candidate_cell,
                                          gates, d_old_cell, d_gates, d_gates.narrow(1, state, state),
                                          d_gates.narrow(1, 2 * state, state)});
    auto d_weights = d_gates.t().mm(X);
    auto d_bias = d_gates.sum(0);
    auto d_X = d_gates.mm(weights);
    auto d_old_h = d_X.slice(1, 0, state);
    auto d_input = d_X.slice(1, state);
    return {d_old_h, d_input, d_weights, d_bias, d_old_cell};
}

// The smallest op: one input, one output allocated like it, one launch (of the kernel whose
// CUfunction is given: oxide's saxpy instance, out = a * x + x, parameters as oxide packs them,
// passing the slots its entry point declares: `slots`, KernelSpec.param_slots).
at::Tensor saxpy(double a, const at::Tensor& x, int64_t fn, int64_t launch_ptr, at::IntArrayRef slots) {
    auto out = at::empty_like(x);
    float a32 = (float)a;
    uint64_t xp = (uint64_t)x.data_ptr(), op = (uint64_t)out.data_ptr();
    int64_t n = x.numel();
    void* all[] = {&a32, &xp, &n, &xp, &n, &op, &n};
    void* params[7];
    TORCH_CHECK(slots.size() <= 7, "saxpy: at most 7 slots");
    for (size_t i = 0; i < slots.size(); i++) {
        TORCH_CHECK(slots[i] >= 0 && slots[i] < 7, "saxpy: slot out of range");
        params[i] = all[slots[i]];
    }
    unsigned grid = (unsigned)((n + 255) / 256);
    int err = ((launch_t)launch_ptr)((void*)fn, grid, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
    TORCH_CHECK(err == 0, "cuLaunchKernel failed: ", err);
    return out;
}

TORCH_LIBRARY(lltm_cpp, m) {
    m.def("saxpy(float a, Tensor x, int fn, int launch, int[] slots) -> Tensor");
    m.def("forward(Tensor input, Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell, int fn, int launch) -> Tensor[]");
    m.def("backward(Tensor grad_h, Tensor grad_cell, Tensor new_cell, Tensor input_gate, Tensor output_gate, "
          "Tensor candidate_cell, Tensor X, Tensor gates, Tensor weights, int fn, int launch) -> Tensor[]");
}

TORCH_LIBRARY_IMPL(lltm_cpp, CompositeExplicitAutograd, m) {
    m.impl("forward", &lltm_forward);
    m.impl("backward", &lltm_backward);
    m.impl("saxpy", &saxpy);
}
"""


def build_lltm_cpp(out_dir: Path | None = None) -> Path:
    """Compiles :data:`CPP_SOURCE` into a shared library for the installed PyTorch; its path.
    (The backward kernel writes the three gate blocks of ``d_gates`` through three strided views:
    the first is ``d_gates`` itself, of which it writes the first ``state`` columns.)"""
    import torch
    from torch.utils import cpp_extension

    out = out_dir or Path(tempfile.mkdtemp(prefix="lltm_cpp_"))
    src = out / "lltm_cpp.cpp"
    src.write_text(CPP_SOURCE)
    lib = out / "lltm_cpp.so"
    torch_lib = Path(torch.__file__).parent / "lib"
    cmd = [os.environ.get("CXX", "g++"), "-O2", "-shared", "-fPIC", "-std=c++17", str(src), "-o", str(lib),
           *(f"-I{p}" for p in cpp_extension.include_paths()), f"-I{sysconfig.get_paths()['include']}",
           f"-L{torch_lib}", "-lc10", "-ltorch_cpu", "-ltorch", f"-Wl,-rpath,{torch_lib}",
           f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return lib
