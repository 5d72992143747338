"""``cpu=`` of ``@ox.extern`` and ``@ox.extern_kernel`` (oxide_build/frontend/cpu_implementations.py):
the Python implementation the CPU device runs in place of CUDA C++. It runs there (device functions
and C++ kernels, generic ones and ``Ptr`` parameters); a C++ function or kernel without one runs its
C++, compiled for the host (backends/cpu/cxx.py), or, where that cannot run, is refused at launch
naming it and saying how to give one; an implementation whose signature
disagrees is a located compile error on both devices; and the GPU build's code is unchanged by it
(the PTX of the Python side, compared with and without ``cpu=``)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from oxide import CompileError

pytest.importorskip("llvmlite")
engine = pytest.importorskip("oxide_build.cpu_engine")
try:
    from oxide_build.backends.cpu.jit import scheduler

    scheduler()
except Exception as e:  # pragma: no cover - an installation without the C extension
    pytest.skip(f"the CPU device's scheduler is not built: {e}", allow_module_level=True)

from oxide_build.compile import CompileOptions, _request, build_ir, run_stages  # noqa: E402

rng = np.random.default_rng()

CU = 'extern "C" __device__ float scaled_tanh(float x) { return 2.0f * tanhf(x); }\n'

SCALED_TANH = """
    import oxide as ox
    from oxide import DisjointSlice, Slice, f32, thread

    def scaled_tanh_on_cpu(x: f32) -> f32:
        return 2.0 * ox.math.tanh(x)

    @ox.extern("scaled_tanh", sources=["tanh.cu"]{cpu})
    def scaled_tanh(x: f32) -> f32: ...

    @ox.kernel
    def apply(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out) and i < len(x):
            out[i] = scaled_tanh(x[i])

    @ox.kernel
    def copy(x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out) and i < len(x):
            out[i] = x[i]
"""


# C++ the host's compiler cannot compile for the CPU device: inline PTX
CU_WITH_PTX = ('extern "C" __device__ float scaled_tanh(float x) {\n'
               '    float y; asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); return 2.0f * y;\n}\n')


def write(tmp_path: Path, source: str, name: str = "kern", cu: str = CU) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    (tmp_path / "tanh.cu").write_text(cu)
    return path


def cpu_module(tmp_path: Path, source: str, name: str = "kern", cu: str = CU):
    return engine.compile_module_for_cpu(write(tmp_path, source, name, cu), name, tmp_path)


def launch(m, name: str, blocks: int, threads: int, **args: list[int]) -> None:
    """Launches kernel ``name`` with each parameter's slot values (a view: pointer, length)."""
    spec = next(k for k in m.kernels if k.name == name)
    flat = [v for p in spec.params for v in args[p.name]]
    values = flat if spec.param_slots is None else [flat[s] for s in spec.param_slots]
    m.function(spec.symbol).launch((blocks, 1, 1), (threads, 1, 1), 0, values)


def view(a: np.ndarray) -> list[int]:
    return [a.ctypes.data, a.size]


def test_an_extern_runs_its_cpu_implementation(tmp_path: Path) -> None:
    m = cpu_module(tmp_path, SCALED_TANH.replace("{cpu}", ", cpu=scaled_tanh_on_cpu"))
    x = rng.uniform(-4, 4, 1000).astype(np.float32)
    out = np.full(1000, np.nan, np.float32)
    launch(m, "apply", 4, 256, x=view(x), out=view(out))
    np.testing.assert_allclose(out, 2.0 * np.tanh(x.astype(np.float64)), rtol=1e-6, atol=1e-7)


def test_an_extern_without_one_runs_its_cpp_compiled_for_the_host(tmp_path: Path) -> None:
    """backends/cpu/cxx.py: tanh.cu compiled by the host's C++ compiler, called by the kernel."""
    m = cpu_module(tmp_path, SCALED_TANH.replace("{cpu}", ""))
    x = rng.uniform(-4, 4, 1000).astype(np.float32)
    out = np.full(1000, np.nan, np.float32)
    launch(m, "apply", 4, 256, x=view(x), out=view(out))
    np.testing.assert_allclose(out, 2.0 * np.tanh(x.astype(np.float64)), rtol=1e-6, atol=1e-7)


def test_an_extern_whose_cpp_cannot_run_is_refused_naming_it_and_how_to_give_one(tmp_path: Path) -> None:
    m = cpu_module(tmp_path, SCALED_TANH.replace("{cpu}", ""), cu=CU_WITH_PTX)
    with pytest.raises(CompileError) as info:
        launch(m, "apply", 1, 32, x=[0, 0], out=[0, 0])
    e = info.value
    assert "scaled_tanh()" in e.message and "@extern, declared at kern.py:9" in e.message, e.message
    assert "tanh.cu:2 uses inline PTX assembly (asm)" in e.message, e.message
    assert "cpu=" in e.hint and "docs/interop.md" in e.hint, e.hint
    assert e.location is not None and e.location.file.endswith("kern.py") and e.location.line == 15
    x = rng.uniform(-1, 1, 100).astype(np.float32)  # the module's other kernels run
    out = np.zeros(100, np.float32)
    launch(m, "copy", 1, 128, x=view(x), out=view(out))
    np.testing.assert_array_equal(out, x)


def test_a_generic_extern_with_a_pointer_runs_its_generic_implementation(tmp_path: Path) -> None:
    """The implementation's TypeVar is bound by the extern's types at each call; a ``Ptr[T]``
    parameter is a view of T there."""
    m = cpu_module(tmp_path, """
        import oxide as ox
        from oxide import DisjointSlice, MutSlice, Ptr, Slice, i64, thread

        T = ox.TypeVar("T", ox.f32, ox.f64)
        U = ox.TypeVar("U", ox.f32, ox.f64)

        def axpy_at_on_cpu(a: U, x: Slice[U], i: i64, out: MutSlice[U]) -> None:
            with ox.unsafe():
                out[i] = a * x[i] + out[i]

        @ox.extern("axpy_at<{T}>", sources=["axpy.cu"], cpu=axpy_at_on_cpu)
        def axpy_at(a: T, x: Ptr[T], i: i64, out: Ptr[T]) -> None: ...

        @ox.kernel
        def axpy(a: T, x: Slice[T], out: MutSlice[T]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(x):
                axpy_at(a, x, i64(i), out)
    """)
    for dtype in (np.float32, np.float64):
        x = rng.uniform(-1, 1, 300).astype(dtype)
        y = rng.uniform(-1, 1, 300).astype(dtype)
        out = y.copy()
        spec = next(k for k in m.kernels if k.name == "axpy" and k.specialization["T"] == np.dtype(dtype).name[0] +
                    str(np.dtype(dtype).itemsize * 8))
        a = int(np.array(1.5, dtype).view(np.uint32 if dtype == np.float32 else np.uint64))  # a scalar slot: its bits
        slots = [a] + view(x) + view(out)
        m.function(spec.symbol).launch((2, 1, 1), (256, 1, 1), 0,
                                       slots if spec.param_slots is None else [slots[s] for s in spec.param_slots])
        want = 1.5 * x.astype(np.float64) + y  # contracted into one fma, as on the GPU: within an ulp of 1.5 * x
        np.testing.assert_allclose(out, want, rtol=0, atol=float(np.finfo(dtype).eps) * 2.0)


EXTERN_KERNEL = """
    import oxide as ox
    from oxide import MutSlice, Slice, f32, thread

    def scale_on_cpu(a: f32, x: Slice[f32], out: MutSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out) and i < len(x):
            with ox.unsafe():
                out[i] = a * x[i]

    @ox.extern_kernel("scale_cpp", sources=["tanh.cu"]{cpu})
    def scale(a: f32, x: Slice[f32], out: MutSlice[f32]) -> None: ...
"""


def test_an_extern_kernel_launches_its_cpu_implementation(tmp_path: Path) -> None:
    m = cpu_module(tmp_path, EXTERN_KERNEL.replace("{cpu}", ", cpu=scale_on_cpu"))
    spec = next(k for k in m.kernels if k.name == "scale")
    assert spec.symbol == "scale_cpp" and [p.name for p in spec.params] == ["a", "x", "out"]
    x = rng.uniform(-1, 1, 700).astype(np.float32)
    out = np.full(700, np.nan, np.float32)
    a = int(np.array(3.0, np.float32).view(np.uint32))
    launch(m, "scale", 3, 256, a=[a], x=view(x), out=view(out))
    np.testing.assert_array_equal(out, np.float32(3.0) * x)


SCALE_CU = CU + """
extern "C" __global__ void scale_cpp(float a, const float* x, long long x_len, float* out, long long out_len) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_len && i < x_len) out[i] = a * x[i];
}
"""


def test_an_extern_kernel_without_one_launches_its_cpp_compiled_for_the_host(tmp_path: Path) -> None:
    m = cpu_module(tmp_path, EXTERN_KERNEL.replace("{cpu}", ""), cu=SCALE_CU)
    x = rng.uniform(-1, 1, 700).astype(np.float32)
    out = np.full(700, np.nan, np.float32)
    a = int(np.array(3.0, np.float32).view(np.uint32))
    launch(m, "scale", 3, 256, a=[a], x=view(x), out=view(out))
    np.testing.assert_array_equal(out, np.float32(3.0) * x)


def test_an_extern_kernel_without_one_is_refused_at_its_stub_where_no_source_defines_it(tmp_path: Path) -> None:
    m = cpu_module(tmp_path, EXTERN_KERNEL.replace("{cpu}", ""))
    with pytest.raises(CompileError) as info:
        launch(m, "scale", 1, 32, a=[0], x=[0, 0], out=[0, 0])
    e = info.value
    assert ("the CUDA C++ kernel scale_cpp (an @extern_kernel, declared at kern.py:12), which none of its sources "
            "defines for the host") in e.message, e.message
    assert "cpu=" in e.hint and "docs/interop.md" in e.hint, e.hint
    assert e.location is not None and e.location.file.endswith("kern.py") and e.location.line == 12


@pytest.mark.parametrize("device", ["cuda", "cpu"])
@pytest.mark.parametrize("impl, line, message", [
    ("def scaled_tanh_on_cpu(x: ox.f64) -> f32:", 6,
     r"parameter 'x' of the CPU implementation scaled_tanh_on_cpu\(\) is f64; the @extern scaled_tanh\(\) it "
     r"implements on the CPU device \(kern.py:10\) takes f32 there"),
    ("def scaled_tanh_on_cpu(x: f32, y: f32) -> f32:", 6,
     r"scaled_tanh_on_cpu\(\) takes 2 parameter\(s\), the @extern scaled_tanh\(\) .* takes 1"),
    ("def scaled_tanh_on_cpu(x: f32) -> ox.f64:", 6, r"scaled_tanh_on_cpu\(\) returns f64; .* returns f32"),
    ("def scaled_tanh_on_cpu(x: f32):", 6, r"scaled_tanh_on_cpu\(\) returns None; .* returns f32"),
    ("def scaled_tanh_on_cpu(x) -> f32:", 6, r"parameter 'x' of the CPU implementation .* has no type annotation"),
])
def test_a_cpu_implementation_of_another_signature_is_a_located_error(tmp_path: Path, device: str, impl: str,
                                                                      line: int, message: str) -> None:
    source = SCALED_TANH.replace("{cpu}", ", cpu=scaled_tanh_on_cpu").replace(
        "def scaled_tanh_on_cpu(x: f32) -> f32:", "\n    " + impl)
    path = write(tmp_path, source)
    with pytest.raises(CompileError, match=message) as info:
        build_ir(path, "kern", CompileOptions(device=device), tmp_path)
    assert info.value.location is not None and info.value.location.line == line
    assert "give it the signature of scaled_tanh(): def scaled_tanh_on_cpu(x: f32) -> f32" in info.value.hint


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_an_extern_kernels_cpu_implementation_of_another_signature_is_a_located_error(tmp_path: Path,
                                                                                     device: str) -> None:
    source = EXTERN_KERNEL.replace("{cpu}", ", cpu=scale_on_cpu").replace("x: Slice[f32], out", "x: Slice[ox.f64], out", 1)
    path = write(tmp_path, source)
    with pytest.raises(CompileError, match=r"parameter 'x' of the CPU implementation scale_on_cpu\(\) is "
                                           r"Slice\[f64\]; the @extern_kernel scale\(\) .* takes Slice\[f32\]") as info:
        build_ir(path, "kern", CompileOptions(device=device), tmp_path)
    assert info.value.location is not None and info.value.location.line == 5


@pytest.mark.parametrize("cpu, message", [
    ("cpu=nowhere", r"cpu= of @extern 'scaled_tanh' must name a function of the kernel language .* got 'nowhere'"),
    ("cpu=copy", r"the CPU implementation copy\(\) of 'scaled_tanh' is @kernel, not a plain function"),
    ("cpu=2", r"must name a function of the kernel language"),
])
def test_cpu_must_name_a_plain_function(tmp_path: Path, cpu: str, message: str) -> None:
    path = write(tmp_path, SCALED_TANH.replace("{cpu}", ", " + cpu))
    with pytest.raises(CompileError, match=message) as info:
        build_ir(path, "kern", CompileOptions(device="cpu"), tmp_path)
    assert info.value.location is not None and info.value.location.line == 8


def test_the_decorators_refuse_what_cannot_be_an_implementation() -> None:
    import oxide as ox

    with pytest.raises(TypeError, match=r"cpu=\.\.\.\) takes a plain function"):
        ox.extern("f", cpu=3)  # type: ignore[arg-type]

    @ox.kernel
    def k() -> None: ...

    with pytest.raises(TypeError, match=r"@extern_kernel\('g', cpu=\.\.\.\) takes a plain function"):
        ox.extern_kernel("g", cpu=k)

    def impl(x: ox.f32) -> ox.f32:
        return x

    stub = ox.extern("h", sources=["h.cu"], cpu=impl)(lambda x: x)
    assert stub.__oxide_extern__["cpu"] is impl


def gpu_ptx(path: Path, name: str, root: Path) -> dict[str, str]:
    build = run_stages(_request(path, name, CompileOptions(archs=("sm_80", "sm_90")), root, None), until="ptx")
    return build.device.ptx


def test_the_gpu_build_is_unchanged_by_cpu_implementations(tmp_path: Path) -> None:
    """The GPU build never compiles the implementations: the Python side's PTX is the same with and
    without cpu= (the extern, the extern kernel), and its IR holds no implementation."""
    both = SCALED_TANH.replace("{cpu}", "{cpu_tanh}") + EXTERN_KERNEL.split("\n", 4)[4].replace("{cpu}", "{cpu_scale}")
    both = both.replace("from oxide import DisjointSlice, Slice", "from oxide import DisjointSlice, MutSlice, Slice")
    for d, cpu in ((tmp_path / "with", True), (tmp_path / "without", False)):
        d.mkdir()
        write(d, both.replace("{cpu_tanh}", ", cpu=scaled_tanh_on_cpu" if cpu else "")
              .replace("{cpu_scale}", ", cpu=scale_on_cpu" if cpu else ""))
    with_cpu, without = tmp_path / "with", tmp_path / "without"
    a, b = gpu_ptx(with_cpu / "kern.py", "kern", with_cpu), gpu_ptx(without / "kern.py", "kern", without)
    assert set(a) == {"sm_80", "sm_90"} and a == b
    _, frontend = build_ir(with_cpu / "kern.py", "kern", CompileOptions(), with_cpu)
    assert not any("on_cpu" in f.python_name for f in frontend.program.functions)
    assert [e.symbol for e in frontend.program.externs] == ["scaled_tanh"]
    assert [e.symbol for e in frontend.program.extern_kernels] == ["scale_cpp"]
