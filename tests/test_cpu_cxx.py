"""CUDA C++ on the CPU device (oxide_build/backends/cpu/cxx.py): the ``.cu`` sources of ``@ox.extern``
and ``@ox.extern_kernel`` declarations without ``cpu=`` compiled by the host's C++ compiler against
the CUDA shim (cuda_host.py) and called by the JIT-compiled kernels. Checked against NumPy: device
functions with thread indices, ``__shared__`` memory, barriers, warp shuffles and votes, atomics,
a template instance and ``__half``; a C++ kernel launched in place of a Python one; a barrier of the
C++ that part of the block never reaches (synccheck names its line); what cannot run refused at
launch naming the function, what it is and ``cpu=``; and the library cached by content."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from oxide import CompileError
from oxide.errors import SynccheckError

pytest.importorskip("llvmlite")
engine = pytest.importorskip("oxide_build.cpu_engine")
try:
    from oxide_build.backends.cpu.jit import scheduler

    scheduler()
except Exception as e:  # pragma: no cover - an installation without the C extension
    pytest.skip(f"the CPU device's scheduler is not built: {e}", allow_module_level=True)

from oxide_build.backends.cpu.cxx import host_cxx_compiler  # noqa: E402

if host_cxx_compiler() is None:  # pragma: no cover
    pytest.skip("no host C++ compiler (c++, g++, clang++ or $CXX)", allow_module_level=True)

rng = np.random.default_rng()

DEVICE_CU = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>

// the warp's total, in every lane
extern "C" __device__ float ox_warp_total(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    return __shfl_sync(0xffffffffu, v, 0);
}

// the block's total, in every thread: shuffles, then one value per warp in shared memory
extern "C" __device__ float ox_block_total(float v) {
    __shared__ float part[32];
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) part[warp] = v;
    __syncthreads();
    float t = 0.0f;
    for (unsigned w = 0; w < (blockDim.x + 31) / 32; w++) t += part[w];
    __syncthreads();
    return t;
}

// the lanes of the warp whose predicate holds, counted once per warp into *counter
extern "C" __device__ int ox_count(int* counter, int pred) {
    unsigned b = __ballot_sync(0xffffffffu, pred);
    if (threadIdx.x % 32 == 0) atomicAdd(counter, __popc(b));
    return __popc(b);
}

extern "C" __device__ float ox_atomic_fadd(float* p, float v) { return atomicAdd(p, v); }

extern "C" __device__ unsigned ox_global_index() { return blockIdx.x * blockDim.x + threadIdx.x; }

template <typename T> __device__ T twice(T x) { return x + x; }

extern "C" __device__ __half ox_half_scale(__half x) { return __float2half(2.5f * __half2float(x)); }

extern "C" __device__ float ox_fast(float x) { return __saturatef(__expf(x) * rsqrtf(4.0f)); }
"""

DEVICE_PY = """
    import oxide as ox
    from oxide import DisjointSlice, MutSlice, Ptr, Slice, f16, f32, i32, u32, thread

    T = ox.TypeVar("T", f32)

    @ox.extern("ox_warp_total", sources=["device.cu"])
    def warp_total(x: f32) -> f32: ...

    @ox.extern("ox_block_total", sources=["device.cu"])
    def block_total(x: f32) -> f32: ...

    @ox.extern("ox_count", sources=["device.cu"])
    def count(counter: Ptr[i32], pred: i32) -> i32: ...

    @ox.extern("ox_atomic_fadd", sources=["device.cu"])
    def fadd(p: Ptr[f32], v: f32) -> f32: ...

    @ox.extern("ox_global_index", sources=["device.cu"])
    def global_index() -> u32: ...

    @ox.extern("twice<{T}>", sources=["device.cu"])
    def twice(x: T) -> T: ...

    @ox.extern("ox_half_scale", sources=["device.cu"])
    def half_scale(x: f16) -> f16: ...

    @ox.extern("ox_fast", sources=["device.cu"])
    def fast(x: f32) -> f32: ...

    @ox.kernel
    def reduce(x: Slice[f32], warps: MutSlice[f32], totals: MutSlice[f32], positive: MutSlice[i32],
               total: MutSlice[f32], index: DisjointSlice[u32], doubled: MutSlice[f32]) -> None:
        i = thread.index_1d()
        v = f32(0.0)
        if i < len(x):
            v = x[i]
        w = warp_total(v)
        b = block_total(v)
        count(positive, i32(v > 0.0))
        fadd(total, v)
        if i < len(index):
            index[i] = global_index()
        with ox.unsafe():
            if i < len(warps):
                warps[i] = w
                totals[i] = b
                doubled[i] = twice(v)

    @ox.kernel
    def halves(x: Slice[f16], out: DisjointSlice[f16]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = half_scale(x[i])

    @ox.kernel
    def fast_math(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = fast(x[i])
"""


def cpu_module(tmp_path: Path, source: str, files: dict[str, str], name: str = "kern"):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    for file, text in files.items():
        (tmp_path / file).write_text(text)
    return engine.compile_module_for_cpu(path, name, tmp_path)


def launch(m, name: str, blocks: int, threads: int, **args: list[int]) -> None:
    """Launches kernel ``name`` with each parameter's slot values (a view: pointer, length)."""
    spec = next(k for k in m.kernels if k.name == name)
    flat = [v for p in spec.params for v in args[p.name]]
    values = flat if spec.param_slots is None else [flat[s] for s in spec.param_slots]
    m.function(spec.symbol).launch((blocks, 1, 1), (threads, 1, 1), 0, values)


def view(a: np.ndarray) -> list[int]:
    return [a.ctypes.data, a.size]


def f32_bits(v: float) -> list[int]:
    return [int(np.array(v, np.float32).view(np.uint32))]


def test_cpp_device_functions_with_shared_memory_barriers_warp_operations_and_atomics(tmp_path: Path) -> None:
    m = cpu_module(tmp_path, DEVICE_PY, {"device.cu": DEVICE_CU})
    n, blocks = 1000, 4
    x = rng.standard_normal(n).astype(np.float32)
    warps, block_totals, doubled = (np.full(n, np.nan, np.float32) for _ in range(3))
    positive, total, index = np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(n, np.uint32)
    launch(m, "reduce", blocks, 256, x=view(x), warps=view(warps), totals=view(block_totals), positive=view(positive),
           total=view(total), index=view(index), doubled=view(doubled))
    padded = np.concatenate([x, np.zeros(blocks * 256 - n, np.float32)]).astype(np.float64)
    np.testing.assert_allclose(warps, padded.reshape(-1, 32).sum(axis=1).repeat(32)[:n], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(block_totals, padded.reshape(-1, 256).sum(axis=1).repeat(256)[:n], rtol=1e-5,
                               atol=1e-4)
    assert positive[0] == (x > 0).sum()
    np.testing.assert_allclose(total[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(index, np.arange(n, dtype=np.uint32))
    np.testing.assert_array_equal(doubled, 2 * x)

    h = np.linspace(-100, 100, 300).astype(np.float16)
    out = np.zeros(300, np.float16)
    launch(m, "halves", 3, 128, x=view(h), out=view(out))
    np.testing.assert_array_equal(out, (np.float32(2.5) * h.astype(np.float32)).astype(np.float16))

    y = rng.uniform(-5, 2, 500).astype(np.float32)
    out32 = np.full(500, np.nan, np.float32)
    launch(m, "fast_math", 2, 256, x=view(y), out=view(out32))
    np.testing.assert_allclose(out32, np.clip(np.exp(y.astype(np.float64)) * 0.5, 0, 1), rtol=1e-6, atol=1e-7)


KERNEL_CU = r"""
// a C++ kernel with shared memory and a barrier: out[i] = the sum of x over i's block, minus x[i]
extern "C" __global__ void others_sum(const float* x, long long x_len, float* out, long long out_len) {
    __shared__ float values[128];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    values[threadIdx.x] = i < x_len ? x[i] : 0.0f;
    __syncthreads();
    float s = 0.0f;
    for (unsigned k = 0; k < blockDim.x; k++) s += values[k];
    if (i < out_len) out[i] = s - values[threadIdx.x];
}
"""


def test_a_cpp_kernel_without_cpu_implementation_launches_on_the_cpu_device(tmp_path: Path) -> None:
    m = cpu_module(tmp_path, """
        import oxide as ox
        from oxide import MutSlice, Slice, f32

        @ox.extern_kernel("others_sum", sources=["kernel.cu"])
        def others_sum(x: Slice[f32], out: MutSlice[f32]) -> None: ...
    """, {"kernel.cu": KERNEL_CU})
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    launch(m, "others_sum", 8, 128, x=view(x), out=view(out))
    padded = np.concatenate([x, np.zeros(8 * 128 - n, np.float32)]).astype(np.float64).reshape(8, 128)
    want = (padded.sum(axis=1, keepdims=True) - padded).reshape(-1)[:n]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_a_cpp_barrier_part_of_the_block_never_reaches_is_a_synccheck_error_at_its_line(tmp_path: Path) -> None:
    m = cpu_module(tmp_path, """
        import oxide as ox
        from oxide import MutSlice, f32, i32, thread

        @ox.extern("ox_sync_if", sources=["sync.cu"])
        def sync_if(p: i32) -> None: ...

        @ox.kernel
        def partial(out: MutSlice[f32]) -> None:
            sync_if(i32(thread.idx.x < 16))
    """, {"sync.cu": 'extern "C" __device__ void ox_sync_if(int p) {\n    if (p)\n        __syncthreads();\n}\n'})
    out = np.zeros(1, np.float32)
    with pytest.raises(SynccheckError) as info:
        launch(m, "partial", 1, 32, out=view(out))
    message = str(info.value)
    assert "kernel partial" in message and "sync.cu:3" in message and "16 of them exited" in message, message


@pytest.mark.parametrize("cu, what", [
    ('#include <cub/block/block_reduce.cuh>\nextern "C" __device__ float f(float x) { return x; }\n',
     "f.cu:1 includes <cub/block/block_reduce.cuh> (CUB), GPU code the host's C++ compiler cannot compile"),
    ('#include <curand_kernel.h>\nextern "C" __device__ float f(float x) { return x; }\n',
     "f.cu:1 includes <curand_kernel.h> (cuRAND)"),
    ('extern "C" __device__ float f(float x) {\n  float y;\n  asm("mov.f32 %0, %1;" : "=f"(y) : "f"(x));\n'
     '  return y;\n}\n', "f.cu:3 uses inline PTX assembly (asm), which has no host form"),
    ('extern __shared__ float dynamic[];\nextern "C" __device__ float f(float x) { return dynamic[0] + x; }\n',
     "f.cu:1 uses dynamic shared memory (extern __shared__)"),
    ('extern "C" __device__ float f(float x) { return __gpu_only_builtin(x); }\n',
     "f.cu:1:49: error: "),
    ('extern "C" __device__ float g(float x) { return x; }\n', "which none of its sources defines for the host"),
    ('extern "C" __device__ float helper(float);\nextern "C" __device__ float f(float x) { return helper(x); }\n',
     "the host's linker cannot complete"),
])
def test_cpp_the_cpu_device_cannot_run_is_refused_naming_the_function_and_cpu(tmp_path: Path, cu: str,
                                                                               what: str) -> None:
    m = cpu_module(tmp_path, """
        import oxide as ox
        from oxide import DisjointSlice, Slice, f32, thread

        @ox.extern("f", sources=["f.cu"])
        def f(x: f32) -> f32: ...

        @ox.kernel
        def apply(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(x):
                out[i] = f(x[i])

        @ox.kernel
        def copy(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(x):
                out[i] = x[i]
    """, {"f.cu": cu})
    with pytest.raises(CompileError) as info:
        launch(m, "apply", 1, 32, x=[0, 0], out=[0, 0])
    e = info.value
    assert "apply() uses the CUDA C++ function f() (an @extern, declared at kern.py:6" in e.message, e.message
    assert what in e.message, e.message
    if "__gpu_only_builtin" in cu:
        assert "__gpu_only_builtin" in e.message, e.message  # the compiler's error, naming what it lacks
    if "helper" in cu:
        assert "undefined reference to `helper'" in e.message, e.message  # the linker's
    assert "cpu=" in e.hint and "docs/interop.md" in e.hint, e.hint
    assert e.location is not None and e.location.file.endswith("kern.py") and e.location.line == 12
    x = rng.uniform(-1, 1, 100).astype(np.float32)  # the module's other kernels run
    out = np.zeros(100, np.float32)
    launch(m, "copy", 1, 128, x=view(x), out=view(out))
    np.testing.assert_array_equal(out, x)


def test_the_library_is_cached_by_content_and_an_edited_source_recompiles(tmp_path: Path) -> None:
    source = """
        import oxide as ox
        from oxide import DisjointSlice, Slice, f32, thread

        @ox.extern("scale", sources=["scale.cu"])
        def scale(x: f32) -> f32: ...

        @ox.kernel
        def apply(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(x):
                out[i] = scale(x[i])
    """
    x = rng.uniform(-1, 1, 64).astype(np.float32)
    results = []
    for factor in ("3.0f", "3.0f", "5.0f"):
        m = cpu_module(tmp_path, source, {"scale.cu": f'extern "C" __device__ float scale(float x) {{ return {factor} * x; }}\n'})
        out = np.zeros(64, np.float32)
        launch(m, "apply", 1, 64, x=view(x), out=view(out))
        results.append((m.cxx.library, out))
    assert results[0][0] == results[1][0] != results[2][0]  # the same library; a new one for the new source
    assert Path(results[0][0]).is_file()
    np.testing.assert_array_equal(results[0][1], np.float32(3.0) * x)
    np.testing.assert_array_equal(results[2][1], np.float32(5.0) * x)


EXPORT_CALLER_CU = r"""
#include "oxide_exports.h"

// a C++ kernel calling the module's exported Python functions
extern "C" __global__ void gelu_cpp(const float* x, long long x_len, float* out, long long out_len) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_len && i < x_len) out[i] = py_gelu(x[i]) + py_dot(x, 3, x, 3);
}
"""


def test_cpp_calls_the_modules_exported_python_functions(tmp_path: Path) -> None:
    m = cpu_module(tmp_path, """
        import oxide as ox
        from oxide import MutSlice, Slice, f32

        @ox.device(export="py_gelu")
        def gelu(x: f32) -> f32:
            return 0.5 * x * (1.0 + ox.math.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

        @ox.device(export="py_dot")
        def dot(x: Slice[f32], y: Slice[f32]) -> f32:
            acc = f32(0.0)
            for k in range(len(x)):
                acc += x[k] * y[k]
            return acc

        @ox.extern_kernel("gelu_cpp", sources=["caller.cu"])
        def gelu_cpp(x: Slice[f32], out: MutSlice[f32]) -> None: ...
    """, {"caller.cu": EXPORT_CALLER_CU})
    n = 5001
    x = rng.uniform(-6, 6, n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    launch(m, "gelu_cpp", (n + 255) // 256, 256, x=view(x), out=view(out))
    x64 = x.astype(np.float64)
    ref = 0.5 * x64 * (1.0 + np.tanh(0.7978845608 * (x64 + 0.044715 * x64**3))) + (x64[:3] ** 2).sum()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_a_cooperative_kernel_reaching_cpp_shared_variables_is_refused_and_the_others_run(tmp_path: Path) -> None:
    """The host keeps one copy of a C++ ``__shared__`` variable, serving a launch's blocks one after
    another: a cooperative kernel (grid.sync(), its blocks run together), reaching such a function
    through a device function of the module, is refused naming both; a plain kernel calling it runs."""
    cu = ('extern "C" __device__ float ox_first(float v) {\n  __shared__ float s;\n'
          '  if (threadIdx.x == 0) s = v;\n  __syncthreads();\n  float r = s;\n  __syncthreads();\n  return r;\n}\n')
    m = cpu_module(tmp_path, """
        import oxide as ox
        from oxide import DisjointSlice, Slice, f32, grid, thread

        @ox.extern("ox_first", sources=["first.cu"])
        def first(v: f32) -> f32: ...

        def via(v: f32) -> f32:
            return first(v)

        @ox.kernel
        def together(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            v = via(x[i] if i < len(x) else 0.0)
            grid.sync()
            if i < len(out):
                out[i] = v

        @ox.kernel
        def apart(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            v = via(x[i] if i < len(x) else 0.0)
            if i < len(out):
                out[i] = v
    """, {"first.cu": cu})
    with pytest.raises(CompileError) as info:
        launch(m, "together", 2, 32, x=[0, 0], out=[0, 0])
    e = info.value
    assert "together() is a cooperative kernel (grid.sync()) that reaches the CUDA C++ function ox_first()" \
        in e.message, e.message
    assert "cpu=" in e.hint, e.hint
    x = rng.uniform(-1, 1, 64).astype(np.float32)
    out = np.full(64, np.nan, np.float32)
    launch(m, "apart", 2, 32, x=view(x), out=view(out))
    np.testing.assert_array_equal(out, np.repeat(x[[0, 32]], 32))
