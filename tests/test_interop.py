"""CUDA C++ interop on the CPU: NVRTC → LTO-IR, libNVVM → LTO-IR, nvJitLink -lto → cubin,
inlining across the language boundary, exports to C++, fatbins, the compile cache, and the
error messages of bad inputs."""
from __future__ import annotations

import multiprocessing
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError, LinkError, ToolchainError
from oxide_build.compile import CompileOptions, compile_module
from oxide_build.toolchain import find_tool

INTEROP = Path(__file__).parent / "packages" / "interop"
FASTMATH = INTEROP / "csrc" / "fastmath.cu"
EXAMPLES = Path(__file__).parent.parent / "examples"
LTOIR_MAGIC = b"\xedCN\x7f"
FATBIN_MAGIC = (0xBA55ED50).to_bytes(4, "little")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "oxide-cache"))


def _compile(name: str, **options) -> object:  # type: ignore[no-untyped-def]
    return compile_module(INTEROP / f"{name}.py", name, CompileOptions(**options), root=INTEROP)


@pytest.fixture(scope="module")
def ffi(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    mp = pytest.MonkeyPatch()
    mp.setenv("OXIDE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "oxide-cache"))
    try:
        yield _compile("ffi_kernels", archs=("sm_80", "sm_90"), embed_ptx=True, fatbin=True)
    finally:
        mp.undo()


def _ptx_function(ptx: str, name: str) -> str:
    """The body of ``.entry``/``.func`` ``name`` in ``ptx``."""
    m = re.search(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?" + re.escape(name) + r"\s*\(", ptx)
    assert m, f"{name} not in the PTX"
    start = ptx.index("{", m.end())
    depth = 0
    for i in range(start, len(ptx)):
        depth += {"{": 1, "}": -1}.get(ptx[i], 0)
        if depth == 0:
            return ptx[start : i + 1]
    raise AssertionError("unbalanced PTX")


# ---- NVRTC ---------------------------------------------------------------------------------

def test_nvrtc_compiles_cu_to_ltoir() -> None:
    from oxide_build.link.nvrtc import CudaSource, compile_cuda

    data = compile_cuda(CudaSource(FASTMATH), "sm_90")
    assert data[:4] == LTOIR_MAGIC
    ptx = compile_cuda(CudaSource(FASTMATH), "sm_80", "ptx").decode()
    assert ".target sm_80" in ptx and ".visible .func" in ptx and "ox_axpb" in ptx


def test_nvrtc_error_carries_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __device__ float broken(float x) {\n  return x +;\n}\n')
    src = tmp_path / "usebad.py"
    src.write_text(textwrap.dedent('''
        import oxide as ox
        from oxide import DisjointSlice, f32, kernel, thread

        @ox.extern("broken", sources=["bad.cu"])
        def broken(x: f32) -> f32: ...

        @kernel
        def k(out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = broken(1.0)
    '''))
    with pytest.raises(LinkError) as info:
        compile_module(src, "usebad", CompileOptions(archs=("sm_90",)))
    text = str(info.value)
    assert f"{bad}(2): error" in text and "expected an expression" in text


def test_include_dependencies_are_tracked() -> None:
    from oxide_build.link.nvrtc import source_dependencies

    deps = source_dependencies(FASTMATH)
    assert [d.name for d in deps] == ["fastmath_impl.cuh"]


# ---- LTO link --------------------------------------------------------------------------------

def test_lto_link_gives_a_cubin_per_arch(ffi) -> None:  # type: ignore[no-untyped-def]
    assert set(ffi.cubins) == {"sm_80", "sm_90"}
    assert set(ffi.ltoir) == {"sm_80", "sm_90"}
    for arch, cubin in ffi.cubins.items():
        assert cubin[:4] == b"\x7fELF"
        for symbol in (b"axpb_cpp", b"softplus_cpp", b"window_sums", b"ox_scale_add"):
            assert b"\0" + symbol + b"\0" in cubin, (arch, symbol)
        assert ffi.ltoir[arch][:4] == LTOIR_MAGIC
    assert ffi.link_inputs == (str(FASTMATH),)
    # the C++ kernel is a kernel of the module like the Python ones
    scale = next(k for k in ffi.kernels if k.name == "scale_add")
    assert scale.symbol == "ox_scale_add"
    assert [(p.name, p.kind) for p in scale.params] == [("a", "scalar"), ("x", "slice"), ("out", "mut_slice")]


def test_small_cpp_function_is_inlined(ffi) -> None:  # type: ignore[no-untyped-def]
    """nvJitLink -lto -ptx shows the linked code: no call to the C++ functions is left."""
    ptx = ffi.ptx_fallback["sm_90"]
    assert ".target sm_90" in ptx
    for kernel in ("axpb_cpp", "softplus_cpp", "window_sums"):
        body = _ptx_function(ptx, kernel)
        assert "ox_axpb" not in body and "ox_softplus" not in body and "ox_window_sum" not in body
        calls = [line for line in body.splitlines() if "call" in line and "__oxide_fail" not in line]
        assert not any("ox_" in line for line in calls), calls
    assert not re.search(r"\.func[^\n]*\box_axpb\b", ptx), "ox_axpb survived the link"
    assert "fma.rn.f32" in _ptx_function(ptx, "axpb_cpp")  # a*x+b, now one instruction


def test_inlining_proof_with_link_ptx() -> None:
    """The same proof through the linker API directly: LTO-IR of both sides, linked to PTX."""
    from oxide_build.link.nvjitlink import LinkInput, link_ptx
    from oxide_build.link.nvrtc import CudaSource, compile_cuda

    compiled = _compile("ffi_kernels", archs=("sm_90",), link_cubins=False)
    inputs = [LinkInput("ffi_kernels", "ltoir", compiled.ltoir["sm_90"]),
              LinkInput(str(FASTMATH), "ltoir", compile_cuda(CudaSource(FASTMATH), "sm_90"))]
    ptx = link_ptx(inputs, "sm_90")
    assert ".entry axpb_cpp" in ptx
    assert "ox_axpb" not in ptx  # neither called nor kept as a function


def test_cub_wrappers_link() -> None:
    compiled = _compile("cub_kernels", archs=("sm_90",))
    cubin = compiled.cubins["sm_90"]
    assert b"\0block_sums\0" in cubin and b"\0warp_sums\0" in cubin


def test_fatbin_holds_every_arch(ffi) -> None:  # type: ignore[no-untyped-def]
    assert ffi.fatbin is not None and ffi.fatbin[:4] == FATBIN_MAGIC
    assert len(ffi.fatbin) > sum(len(c) for c in ffi.cubins.values())  # both cubins and the PTX


def test_fatbin_of_a_plain_module(tmp_path: Path) -> None:
    src = tmp_path / "plain.py"
    src.write_text((EXAMPLES / "saxpy.py").read_text())
    compiled = compile_module(src, "plain", CompileOptions(archs=("sm_80", "sm_90"), embed_ptx=True, fatbin=True))
    assert compiled.fatbin is not None and compiled.fatbin[:4] == FATBIN_MAGIC
    assert not compiled.ltoir  # no interop: the short NVPTX path


# ---- bad input -----------------------------------------------------------------------------

def test_undefined_extern_names_symbol_call_site_and_inputs(tmp_path: Path) -> None:
    shutil.copytree(INTEROP / "csrc", tmp_path / "csrc")
    src = tmp_path / "missing.py"
    src.write_text(textwrap.dedent('''
        import oxide as ox
        from oxide import DisjointSlice, f32, kernel, thread

        @ox.extern("ox_does_not_exist", sources=["csrc/fastmath.cu"])
        def nothing(x: f32) -> f32: ...

        @kernel
        def k(out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = nothing(2.0)
    '''))
    with pytest.raises(LinkError) as info:
        compile_module(src, "missing", CompileOptions(archs=("sm_90",)))
    text = str(info.value)
    assert "'ox_does_not_exist'" in text
    assert f"{src}:12" in text  # the call site
    assert f"{src}:6" in text  # the declaration (its def line)
    assert str(tmp_path / "csrc" / "fastmath.cu") in text  # the inputs searched


def test_missing_extern_kernel(tmp_path: Path) -> None:
    shutil.copytree(INTEROP / "csrc", tmp_path / "csrc")
    src = tmp_path / "nokernel.py"
    src.write_text(textwrap.dedent('''
        import oxide as ox
        from oxide import MutSlice, f32

        @ox.extern_kernel("ox_no_such_kernel", sources=["csrc/fastmath.cu"])
        def k(a: f32, out: MutSlice[f32]) -> None: ...
    '''))
    with pytest.raises(LinkError, match=r"ox_no_such_kernel.*nokernel\.py:6"):
        compile_module(src, "nokernel", CompileOptions(archs=("sm_90",)))


def test_a_generic_extern_kernel_is_a_located_error(tmp_path: Path) -> None:
    src = tmp_path / "generic_ek.py"
    src.write_text(textwrap.dedent('''
        import oxide as ox
        from oxide import MutSlice, Slice, f32, f64

        T = ox.TypeVar("T", f32, f64)

        @ox.extern_kernel("scale_{T}", sources=["csrc/k.cu"])
        def scale(a: T, x: Slice[T], out: MutSlice[T]) -> None: ...
    '''))
    with pytest.raises(CompileError, match=r"generic_ek\.py:8:.*'scale' cannot be generic \(it uses T\)") as e:
        compile_module(src, "generic_ek", CompileOptions(archs=("sm_90",)))
    assert "declare one stub per type" in str(e.value)


def test_missing_source_file(tmp_path: Path) -> None:
    src = tmp_path / "nosrc.py"
    src.write_text(textwrap.dedent('''
        import oxide as ox
        from oxide import DisjointSlice, f32, kernel, thread

        @ox.extern("f", sources=["nowhere.cu"])
        def f(x: f32) -> f32: ...

        @kernel
        def k(out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = f(1.0)
    '''))
    with pytest.raises(LinkError, match=r"nowhere\.cu does not exist.*nosrc\.py:6"):
        compile_module(src, "nosrc", CompileOptions(archs=("sm_90",)))


def test_input_for_another_arch(tmp_path: Path) -> None:
    from oxide_build.link.nvrtc import CudaSource, compile_cuda

    other = tmp_path / "fastmath_sm100.ltoir"
    other.write_bytes(compile_cuda(CudaSource(FASTMATH), "sm_100"))
    src = tmp_path / "k.py"
    src.write_text((INTEROP / "ffi_kernels.py").read_text().replace('sources=["csrc/fastmath.cu"]', "sources=[]"))
    with pytest.raises(LinkError) as info:
        compile_module(src, "k", CompileOptions(archs=("sm_90",), link_inputs=(str(other),)))
    text = str(info.value)
    assert str(other) in text and "another arch than sm_90" in text and "rebuild it" in text


def test_unknown_input_type() -> None:
    from oxide_build.link.inputs import classify_input

    assert classify_input("x.cu") == "cu" and classify_input("lib.a") == "library"
    assert classify_input("k.ltoir") == "ltoir" and classify_input("k.fatbin") == "fatbin"
    with pytest.raises(LinkError, match="unknown input type '.txt'"):
        classify_input("notes.txt")


def test_cudadevrt_from_the_wheels() -> None:
    from oxide_build.link.inputs import cudadevrt_path

    assert cudadevrt_path().name == "libcudadevrt.a"


@pytest.mark.parametrize("module,attr,package", [
    ("nvvm", "version", "nvidia-nvvm"),
    ("nvrtc", "nvrtcVersion", "nvidia-cuda-nvrtc"),
    ("nvjitlink", "version", "nvidia-nvjitlink"),
])
def test_missing_toolchain_names_the_pip_package(monkeypatch: pytest.MonkeyPatch, module: str, attr: str, package: str) -> None:
    import importlib

    mod = importlib.import_module(f"cuda.bindings.{module}")

    def missing(*args: object) -> None:
        raise RuntimeError(f"lib{module}.so: cannot open shared object file")

    monkeypatch.setattr(mod, attr, missing)
    monkeypatch.setenv("OXIDE_NO_CACHE", "1")
    with pytest.raises(ToolchainError, match=f"pip install {package}"):
        _compile("ffi_kernels", archs=("sm_90",))


# ---- nvcc -dc -dlto objects ------------------------------------------------------------------

def test_nvcc_object_input(tmp_path: Path) -> None:
    nvcc = find_tool("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    obj = tmp_path / "fastmath.o"
    run = subprocess.run([nvcc, "-dc", "-dlto", "-arch=sm_90", "-I", str(FASTMATH.parent), str(FASTMATH), "-o", str(obj)],
                         capture_output=True, text=True)
    if run.returncode != 0:
        pytest.skip(f"nvcc cannot build here: {run.stderr[-300:]}")
    src = tmp_path / "k.py"
    src.write_text((INTEROP / "ffi_kernels.py").read_text().replace('sources=["csrc/fastmath.cu"]', "sources=[]"))
    compiled = compile_module(src, "k", CompileOptions(archs=("sm_90",), link_inputs=(str(obj),)))
    assert b"\0axpb_cpp\0" in compiled.cubins["sm_90"] and b"\0ox_scale_add\0" in compiled.cubins["sm_90"]
    # the same object in a static library (ar), as a team's build would ship it
    archive = tmp_path / "libfastmath.a"
    ar = subprocess.run(["ar", "rcs", str(archive), str(obj)], capture_output=True, text=True)
    if ar.returncode != 0:
        pytest.skip(f"ar failed: {ar.stderr}")
    from_archive = compile_module(src, "k", CompileOptions(archs=("sm_90",), link_inputs=(str(archive),)))
    assert b"\0axpb_cpp\0" in from_archive.cubins["sm_90"] and b"\0ox_scale_add\0" in from_archive.cubins["sm_90"]


# ---- the libNVVM backend -----------------------------------------------------------------------

def _ptxas(ptx: str, arch: str, tmp_path: Path) -> None:
    ptxas = find_tool("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is not installed")
    path = tmp_path / f"m.{arch}.ptx"
    path.write_text(ptx)
    run = subprocess.run([ptxas, f"-arch={arch}", str(path), "-o", str(tmp_path / "m.cubin")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "__init__.py")
                         if EXAMPLES.is_dir() else [])
def test_nvvm_backend_ptx_is_accepted_by_ptxas(example: str, tmp_path: Path) -> None:
    src = EXAMPLES / example
    archs = ("sm_80", "sm_90")
    nvvm = compile_module(src, src.stem, CompileOptions(archs=archs, backend="nvvm"), root=EXAMPLES)
    nvptx = compile_module(src, src.stem, CompileOptions(archs=archs, link_cubins=False), root=EXAMPLES)
    for arch in archs:
        assert "Generated by NVIDIA NVVM Compiler" in nvvm.ptx[arch]
        _ptxas(nvvm.ptx[arch], arch, tmp_path)
        assert nvvm.cubins[arch][:4] == b"\x7fELF"
        entries = sorted(re.findall(r"\.entry\s+(\w+)", nvvm.ptx[arch]))
        assert entries == sorted(re.findall(r"\.entry\s+(\w+)", nvptx.ptx[arch]))
    assert nvvm.kernels == nvptx.kernels


def test_nvvm_ir_of_a_module_with_cpp() -> None:
    from oxide_build.backends.nvvm import NVVM_DATA_LAYOUT, nvvm_ir_version
    from oxide_build.compile import ModuleBuild, run_stages

    options = CompileOptions(archs=("sm_90",), link_cubins=False)
    build = run_stages(ModuleBuild(INTEROP / "ffi_kernels.py", "ffi_kernels", options, INTEROP), until="lower")
    try:
        nvvm_ir_version()
    except ToolchainError as exc:
        pytest.skip(str(exc))
    text = build.nvvm_ir("sm_90")
    assert f'target datalayout = "{NVVM_DATA_LAYOUT}"' in text
    assert re.search(r"!nvvmir.version = !\{ ?!\d+ ?\}", text)
    used = next(line for line in text.splitlines() if line.startswith('@"llvm.used"'))
    for kernel in ("axpb_cpp", "axpb_python", "softplus_cpp", "window_sums"):
        assert f'@"{kernel}"' in used
    assert "fneg" not in text and "\n  fence" not in text


# ---- exports to C++ ----------------------------------------------------------------------------

CPP_CALLER = r'''
#include "oxide_exports.h"

extern "C" __global__ void gelu_cpp(const float* x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = py_gelu(x[i]);
}

extern "C" __global__ void dot_cpp(const float* x, const float* y, long long n, float* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = py_dot(x, n, y, n);
}
'''


def test_export_header_and_cpp_caller(tmp_path: Path) -> None:
    from oxide_build.link.exports import write_export_header
    from oxide_build.link.nvjitlink import LinkInput, link_cubin
    from oxide_build.link.nvrtc import CudaSource, compile_cuda

    compiled = _compile("exports", archs=("sm_90",))
    assert not compiled.cubins and set(compiled.ltoir) == {"sm_90"}  # no kernels: LTO-IR only
    header = write_export_header(compiled, tmp_path / "oxide_exports.h").read_text()
    assert 'extern "C" __device__ float py_gelu(float x);' in header
    assert 'extern "C" __device__ float py_dot(const float* x, long long x_len, const float* y, long long y_len);' in header
    caller = tmp_path / "caller.cu"
    caller.write_text(CPP_CALLER)
    cpp = compile_cuda(CudaSource(caller), "sm_90")
    cubin = link_cubin([LinkInput("exports", "ltoir", compiled.ltoir["sm_90"]), LinkInput(str(caller), "ltoir", cpp)],
                       "sm_90", ("-lto",))
    assert b"\0gelu_cpp\0" in cubin and b"\0dot_cpp\0" in cubin


# ---- the compile cache -------------------------------------------------------------------------

def test_second_compile_hits_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide_build.link import cache as cache_mod
    from oxide_build.link import lto

    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    first = _compile("ffi_kernels", archs=("sm_90",))
    info = cache_mod.cache_info()
    assert info.entries >= 3  # NVRTC, libNVVM, nvJitLink

    def no_compiling(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("compiled again despite the cache")

    monkeypatch.setattr(lto, "compile_cuda", no_compiling)
    monkeypatch.setattr(lto, "link_cubin", no_compiling)
    import oxide_build.backends.nvvm as nvvm_backend

    monkeypatch.setattr(nvvm_backend, "compile_nvvm", no_compiling)
    second = _compile("ffi_kernels", archs=("sm_90",))
    assert second.cubins == first.cubins and second.ltoir == first.ltoir
    assert cache_mod.cache_info().entries == info.entries

    # editing an included header changes the key
    monkeypatch.undo()
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    assert cache_mod.clear_cache() >= info.entries
    assert cache_mod.cache_info().entries == 0


def test_cache_is_bounded(tmp_path: Path) -> None:
    from oxide_build.link.cache import CompileCache, cache_key

    cache = CompileCache(tmp_path, max_bytes=10_000)
    for i in range(30):
        cache.put(cache_key("entry", str(i)), bytes(1000))
    entries, size = cache.size()
    assert size <= 10_000 and entries >= 5
    assert cache.get(cache_key("entry", "29")) == bytes(1000)  # the newest survive
    assert cache.get(cache_key("entry", "0")) is None


def _writer(root: str, n: int) -> None:
    from oxide_build.link.cache import CompileCache, cache_key

    cache = CompileCache(Path(root))
    for i in range(50):
        cache.put(cache_key("shared", str(i % 5)), (str(i % 5) * 20000).encode())
        data = cache.get(cache_key("shared", str((i + n) % 5)))
        assert data is None or data == (str((i + n) % 5) * 20000).encode()


def test_cache_concurrent_writers(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), n)) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    from oxide_build.link.cache import CompileCache, cache_key

    cache = CompileCache(tmp_path)
    for k in range(5):
        assert cache.get(cache_key("shared", str(k))) == (str(k) * 20000).encode()
    assert not list(tmp_path.rglob("*.tmp"))


def test_ptr_parameter_passes_only_the_data_pointer(tmp_path: Path) -> None:
    """``Ptr[T]`` in an extern stub: C++ takes a plain ``T*``; the call links and inlines."""
    (tmp_path / "gather.cu").write_text(
        'extern "C" __device__ float ox_at(float* data, long long i) { return data[i]; }\n')
    src = tmp_path / "useptr.py"
    src.write_text(textwrap.dedent('''
        import oxide as ox
        from oxide import DisjointSlice, Ptr, Slice, f32, i64, kernel, thread

        @ox.extern("ox_at", sources=["gather.cu"])
        def at(data: Ptr[f32], i: i64) -> f32: ...

        @kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(x):
                out[i] = at(x, i64(i)) * 2.0
    '''))
    compiled = compile_module(src, "useptr", CompileOptions(archs=("sm_90",), embed_ptx=True))
    assert 'declare float @"ox_at"(float* %' in compiled.llvm_ir
    ptx = compiled.ptx_fallback["sm_90"]
    assert "ox_at" not in _ptx_function(ptx, "k")
    assert compiled.cubins["sm_90"][:4] == b"\x7fELF"
