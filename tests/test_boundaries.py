"""The checked C++ ↔ Python boundary (docs/interop.md, "Checked boundaries"): every ``.cu`` file
of a module is compiled against the prototypes its Python code expects, so a signature that
disagrees is a compile error naming both sides; a symbol defined in both languages is a link
error naming both places. CPU only: NVRTC and nvJitLink run without a GPU."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide.errors import LinkError
from oxide_build.compile import CompileOptions, compile_module
from oxide_build.link.boundary import boundary_decls, boundary_header
from oxide_build.link.lto import cpp_definitions

OPTS = CompileOptions(archs=("sm_90",), cache=False)

KERNEL_HEAD = '''
import oxide as ox
from oxide import DisjointSlice, MutSlice, Ptr, Slice, f16, f32, f64, i32, i64, kernel, thread
'''


def _project(tmp_path: Path, py: str, cu: str) -> Path:
    (tmp_path / "k.cu").write_text(textwrap.dedent(cu).lstrip())
    src = tmp_path / "k.py"
    src.write_text(KERNEL_HEAD + textwrap.dedent(py))
    return src


def _line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def _compile_error(src: Path) -> str:
    with pytest.raises(LinkError) as info:
        compile_module(src, "k", OPTS)
    return str(info.value)


def test_extern_with_other_types_than_its_definition_names_both_sides(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern("ox_scale", sources=["k.cu"])
        def scale(x: f32) -> f32: ...

        @kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = scale(x[i])
    ''', '''
        // a helper first, so that the definition is not on line 1
        extern "C" __device__ double ox_scale(double x) { return 2.0 * x; }
    ''')
    message = _compile_error(src)
    stub_line = _line_of(src, 'def scale(')
    assert f"{tmp_path / 'k.cu'}:2: the C++ declaration of 'ox_scale' does not match the @extern stub" in message
    assert f"declared at {src}:{stub_line}" in message
    assert 'expects: extern "C" __device__ float ox_scale(float x);' in message
    assert 'has:  extern "C" __device__ double ox_scale(double x)' in message
    assert "NVRTC could not compile" in message  # NVRTC's own log follows


def test_slice_without_its_length_is_a_mismatch(tmp_path: Path) -> None:
    """The classic silent bug: a Slice passes a pointer AND a length."""
    src = _project(tmp_path, '''
        @ox.extern("ox_first", sources=["k.cu"])
        def first(x: Slice[f32]) -> f32: ...

        @kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = first(x)
    ''', '''
        extern "C" __device__ float ox_first(const float* x) { return x[0]; }
    ''')
    message = _compile_error(src)
    assert "does not match the @extern stub 'ox_first'" in message
    assert "float ox_first(const float* x, long long x_len);" in message


def test_matching_definitions_compile_and_link(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern("ox_window", sources=["k.cu"])
        def window(x: Slice[f32], out: MutSlice[f32], p: Ptr[f64], i: i64, w: i32) -> f32: ...

        @ox.extern_kernel("ox_fill", sources=["k.cu"])
        def fill(v: f32, out: MutSlice[f32]) -> None: ...

        @kernel
        def k(x: Slice[f32], out: MutSlice[f32], p: MutSlice[f64]) -> None:
            i = thread.index_1d()
            if i < len(x):
                v = window(x, out, p, i64(i), 3)
    ''', '''
        extern "C" __device__ float ox_window(const float* x, long long n, float* out, long long out_n,
                                              double* p, long long i, int w) { return x[i] + (float)p[0]; }
        extern "C" __global__ void ox_fill(float v, float* out, long long n) {
            long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
            if (i < n) out[i] = v;
        }
    ''')
    compiled = compile_module(src, "k", OPTS)
    assert compiled.cubins["sm_90"][:4] == b"\x7fELF"
    roles = {d.symbol: d.role for d in compiled.boundary}
    assert roles == {"ox_window": "@extern", "ox_fill": "@extern_kernel"}


def test_extern_kernel_with_other_parameters_names_both_sides(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern_kernel("ox_fill", sources=["k.cu"])
        def fill(v: f32, out: MutSlice[f32]) -> None: ...
    ''', '''
        extern "C" __global__ void ox_fill(float v, float* out, int n) {}
    ''')
    message = _compile_error(src)
    assert "does not match the @extern_kernel stub 'ox_fill'" in message
    assert 'expects: extern "C" __global__ void ox_fill(float v, float* out, long long out_len);' in message


def test_cpp_declaring_an_export_with_wrong_types_fails(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern("ox_twice", sources=["k.cu"])
        def twice(x: f32) -> f32: ...

        @ox.device(export="py_dot")
        def dot(x: Slice[f32], y: Slice[f32]) -> f32:
            acc = f32(0.0)
            for j in range(len(x)):
                acc += x[j] * y[j]
            return acc

        @kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = twice(x[i])
    ''', '''
        extern "C" __device__ float py_dot(const float* x, const float* y, long long n);
        extern "C" __device__ float ox_twice(float x) { return 2.0f * x; }
    ''')
    message = _compile_error(src)
    line = _line_of(src, "def dot(")  # exported functions are named relative to the project
    assert f"{tmp_path / 'k.cu'}:1: the C++ declaration of 'py_dot' does not match the exported Python device function 'dot'" in message
    assert f"declared at {src.name}:{line}" in message
    assert "py_dot(const float* x, long long x_len, const float* y, long long y_len);" in message


def test_cpp_calls_an_export_through_the_generated_header(tmp_path: Path) -> None:
    """``#include "oxide_exports.h"`` works in a module's .cu with no file on disk; a call
    with the wrong number of arguments is a C++ error."""
    py = '''
        @ox.extern("ox_twice", sources=["k.cu"])
        def twice(x: f32) -> f32: ...

        @ox.device(export="py_half")
        def half(x: f32) -> f32:
            return x * 0.5

        @kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = twice(x[i])
    '''
    src = _project(tmp_path, py, '''
        #include "oxide_exports.h"
        extern "C" __device__ float ox_twice(float x) { return 4.0f * py_half(x); }
    ''')
    assert compile_module(src, "k", OPTS).cubins["sm_90"][:4] == b"\x7fELF"
    src = _project(tmp_path, py, '''
        #include "oxide_exports.h"
        extern "C" __device__ float ox_twice(float x) { return 4.0f * py_half(x, x); }
    ''')
    message = _compile_error(src)
    assert "too many arguments in function call" in message
    assert "k.cu(2)" in message


def test_a_symbol_defined_in_python_and_cpp_names_both_places(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern("ox_twice", sources=["k.cu"])
        def twice(x: f32) -> f32: ...

        @ox.device(export="py_gelu")
        def gelu(x: f32) -> f32:
            return x * 0.5

        @kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = twice(gelu(x[i]))
    ''', '''
        extern "C" __device__ float ox_twice(float x) { return 2.0f * x; }

        extern "C" __device__ float py_gelu(float x)
        {
            return x;
        }
    ''')
    message = _compile_error(src)
    assert "the device symbol 'py_gelu' is defined more than once" in message
    line = _line_of(src, "def gelu(")
    assert f"{src.name}:{line} (Python device function 'gelu')" in message
    assert f"{tmp_path / 'k.cu'}:3 (C++)" in message


def test_boundary_header_points_at_the_python_stubs(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern("ox_h", sources=["k.cu"])
        def h(x: f16, y: Slice[f16]) -> f16: ...

        @kernel
        def k(x: Slice[f16], out: DisjointSlice[f16]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = h(x[i], x)
    ''', '''
        #include <cuda_fp16.h>
        extern "C" __device__ __half ox_h(__half x, const __half* y, long long n) { return x; }
    ''')
    compiled = compile_module(src, "k", OPTS)
    header = boundary_header(compiled.boundary)
    assert "#include <cuda_fp16.h>" in header
    stub_line = _line_of(src, 'def h(')
    assert f'#line {stub_line} "{src}"\nextern "C" __device__ __half ox_h(__half x, const __half* y, long long y_len);' in header


def test_cpp_definitions_finds_multiline_definitions_not_prototypes(tmp_path: Path) -> None:
    cu = tmp_path / "d.cu"
    cu.write_text('extern "C" __device__ float f(float x);\n\nextern "C" __device__ float f(\n    float x)\n{ return x; }\n')
    assert cpp_definitions(cu, "f") == [f"{cu}:3"]
    assert cpp_definitions(cu, "g") == []


def test_boundary_decls_of_a_module_without_cpp_is_empty(tmp_path: Path) -> None:
    from oxide_build.compile import build_ir

    src = tmp_path / "plain.py"
    src.write_text(KERNEL_HEAD + textwrap.dedent('''
        @kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = x[i]
    '''))
    _, frontend = build_ir(src, "plain", OPTS, None)
    assert boundary_decls(frontend.program) == ()
    assert re.search(r"extern", boundary_header(())) is None


def test_tensor_parameters_pass_pointer_extents_and_strides(tmp_path: Path) -> None:
    """The prototype of a tensor parameter is the ABI's: pointer, N extents, N strides."""
    src = _project(tmp_path, '''
        from oxide import Tensor

        @ox.extern("ox_corner", sources=["k.cu"])
        def corner(t: Tensor[f32, 2]) -> f32: ...

        @kernel
        def k(t: Tensor[f32, 2], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = corner(t)
    ''', '''
        extern "C" __device__ float ox_corner(const float* t, long long rows, long long cols,
                                              long long row_stride, long long col_stride) { return t[0]; }
    ''')
    compiled = compile_module(src, "k", OPTS)
    (decl,) = compiled.boundary
    assert decl.declaration == ('extern "C" __device__ float ox_corner(const float* t, long long t_extent0, '
                                'long long t_extent1, long long t_stride0, long long t_stride1);')
    assert compiled.cubins["sm_90"][:4] == b"\x7fELF"


def test_prebuilt_library_is_checked_for_the_symbols_it_must_define(tmp_path: Path) -> None:
    """Prebuilt LTO-IR carries no types: what is checked is that the symbol is there (an
    undefined one names the stub, the call and the inputs searched) and that it is not also
    defined in Python (a clash names the Python side and the prebuilt input)."""
    from oxide_build.cli import main

    (tmp_path / "lib.cu").write_text('extern "C" __device__ float pb_other(float x) { return x; }\n'
                                     'extern "C" __device__ float py_half(float x) { return x; }\n')
    library = tmp_path / "lib.fatbin"
    assert main(["device-lib", str(tmp_path / "lib.cu"), "-o", str(library), "--arch", "sm_90"]) == 0
    src = tmp_path / "k.py"
    src.write_text(KERNEL_HEAD + textwrap.dedent('''
        @ox.extern("pb_twice")
        def twice(x: f32) -> f32: ...

        @kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = twice(x[i])
    '''))
    options = CompileOptions(archs=("sm_90",), cache=False, link_inputs=(str(library),))
    with pytest.raises(LinkError) as info:
        compile_module(src, "k", options)
    message = str(info.value)
    assert f"{src}:{_line_of(src, 'out[i] = twice')}: undefined symbol 'pb_twice'" in message
    assert str(library) in message  # among the inputs searched

    src.write_text(KERNEL_HEAD + textwrap.dedent('''
        @ox.device(export="py_half")
        def half(x: f32) -> f32:
            return x * 0.5

        @kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = half(x[i])
    '''))
    with pytest.raises(LinkError) as info:
        compile_module(src, "k", options)
    message = str(info.value)
    assert "the device symbol 'py_half' is defined more than once" in message
    assert f"{src.name}:{_line_of(src, 'def half(')} (Python device function 'half')" in message
    assert f"{library} (prebuilt, perhaps" in message


@pytest.mark.parametrize("signature, where, message", [
    ("def pair(a: f32, b: f32) -> tuple[f32, f32]:\n    return a + b, a - b",
     "tuple[f32, f32]", "the exported function 'pair' returns tuple[f32, f32], which has no C type"),
    ("def pair(a: ox.f32x2) -> f32:\n    return a.x + a.y", "a: ox.f32x2",
     "the exported function 'pair' takes 'a' as a f32x2, which has no C type"),
    ("def pair(a: ox.f8e4m3) -> f32:\n    return f32(a)", "a: ox.f8e4m3",
     "the exported function 'pair' takes 'a' as a f8e4m3, which has no C type"),
])
def test_an_export_whose_signature_has_no_c_type_is_a_located_error(tmp_path: Path, signature: str, where: str,
                                                                   message: str) -> None:
    """A fuzzer finding: a tuple result reached link/boundary.py's c_type as an AssertionError."""
    from oxide.errors import CompileError

    src = tmp_path / "k.py"
    src.write_text(KERNEL_HEAD + '\n@ox.device(export="py_pair")\n' + signature + "\n")
    with pytest.raises(CompileError) as info:
        compile_module(src, "k", OPTS, root=tmp_path)
    msg = str(info.value)
    line = _line_of(src, where)
    col = src.read_text().splitlines()[line - 1].index(where) + 1
    assert f"k.py:{line}:{col}: error: {message}" in msg, msg
    assert "hint: " in msg
