"""Does the kernel parameter block's size explain oxide's LLTM backward (index32 instance) being 0.5% behind
CUDA C++? (BENCHMARKS.md, LLTM section) C++ as in benchmarks/lltm_cuda.py (int strides, 216-byte block) against the same C++
with each tensor passed as pointer + 2 shapes + 2 strides of 8 bytes (520 bytes, oxide's layout before its entry points
dropped the parameters they do not read: its index32 instance's block is 216 bytes now, docs/runtime.md),
and oxide's kernel; CUDA graphs of 200 launches, round-robin, medians."""
from __future__ import annotations

import ctypes
import statistics
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
import torch
from cuda.bindings import driver as drv, nvrtc
from benchmarks.lltm_cuda import LLTM_CUDA_SOURCE
from examples.lltm import kernels

def padded_source():
    s = LLTM_CUDA_SOURCE
    s = s.replace("#define ACC(T, name) T* __restrict__ name, int name##_s0, int name##_s1",
                  "#define ACC(T, name) T* __restrict__ name, long long name##_d0, long long name##_d1, long long name##_s0, long long name##_s1")
    s = s.replace("#define PASS(T, name) Accessor2<T>{name, name##_s0, name##_s1}",
                  "#define PASS(T, name) Accessor2<T>{name, (int)name##_s0, (int)name##_s1}")
    return s

def compile_cubin(src, arch):
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"p.cu", 0, [], [])
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"]
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    assert int(err) == 0, err
    err, size = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = b" " * size
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    return cubin

torch.zeros(1, device="cuda")
from oxide.runtime import device
arch = device.context_device(device.current_context()).arch
from benchmarks.lltm_cuda import compile_lltm_cuda
fns = {}
for label, cubin in (("cpp", compile_lltm_cuda(arch)), ("cpp_padded", compile_cubin(padded_source(), arch))):
    err, mod = drv.cuModuleLoadData(cubin); assert int(err) == 0
    err, fn = drv.cuModuleGetFunction(mod, b"lltm_backward_f32"); assert int(err) == 0
    fns[label] = (mod, fn)

def launch_cpp(label, batch, state, tensors, padded):
    words = [ctypes.c_int(batch), ctypes.c_int(state)]
    for t in tensors:
        if padded:
            words += [ctypes.c_uint64(t.data_ptr()), ctypes.c_longlong(t.shape[0]), ctypes.c_longlong(t.shape[1]),
                      ctypes.c_longlong(t.stride(0)), ctypes.c_longlong(t.stride(1))]
        else:
            words += [ctypes.c_uint64(t.data_ptr()), ctypes.c_int(t.stride(0)), ctypes.c_int(t.stride(1))]
    params = (ctypes.c_void_p * len(words))(*(ctypes.addressof(w) for w in words))
    err, = drv.cuLaunchKernel(fns[label][1], -(-state // 128), -(-batch // 2), 1, 128, 2, 1, 0,
                              torch.cuda.current_stream().cuda_stream, ctypes.addressof(params), 0)
    assert int(err) == 0, err

for batch, state in ((16, 128), (4096, 1024)):
    g = torch.Generator(device="cuda").manual_seed(0)
    gates = torch.randn(batch, 3 * state, device="cuda", generator=g)
    grad_h, grad_c, new_cell, ig, og, cc = (torch.randn(batch, state, device="cuda", generator=g) for _ in range(6))
    d_gates, d_cell = torch.empty_like(gates), torch.empty_like(grad_h)
    blocks = tuple(gates[:, k * state:(k + 1) * state] for k in range(3))
    d_blocks = tuple(d_gates[:, k * state:(k + 1) * state] for k in range(3))
    grid = (-(-state // 128), -(-batch // 2))
    cpp_tensors = [grad_h, grad_c, new_cell, ig, og, cc, gates, d_cell, *d_blocks]
    ox_args = (grad_h, grad_c, new_cell, ig, og, cc, *blocks, d_cell, *d_blocks)
    fns_ = {"oxide": lambda: kernels.lltm_backward[grid, (128, 2)](*ox_args),
            "cpp": lambda: launch_cpp("cpp", batch, state, cpp_tensors, False),
            "cpp_padded": lambda: launch_cpp("cpp_padded", batch, state, cpp_tensors, True)}
    outs = {}
    for name, f in fns_.items():
        d_cell.fill_(float("nan")); d_gates.fill_(float("nan")); f(); torch.cuda.synchronize()
        outs[name] = (d_cell.clone(), d_gates.clone())
    for name in outs:
        assert all(torch.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(outs[name], outs["cpp"])), name
    graphs = {}
    for name, f in fns_.items():
        f(); torch.cuda.synchronize()
        gr = torch.cuda.CUDAGraph()
        with torch.cuda.graph(gr):
            for _ in range(200):
                f()
        graphs[name] = gr
    times = {n: [] for n in graphs}
    for r in range(40):
        order = list(graphs.items())
        if r % 2: order.reverse()
        for name, gr in order:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); gr.replay(); e.record(); e.synchronize()
            times[name].append(s.elapsed_time(e) * 1000 / 200)
    med = {n: statistics.median(v) for n, v in times.items()}
    print(f"{batch}x{state}: " + "  ".join(f"{n}={v:.3f}" for n, v in med.items()) +
          f"  cpp/oxide={med['cpp']/med['oxide']:.4f} cpp_padded/oxide={med['cpp_padded']/med['oxide']:.4f} cpp/cpp_padded={med['cpp']/med['cpp_padded']:.4f}")
