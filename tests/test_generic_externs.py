"""Generic C++ externs: one @ox.extern over a C++ template ("f<{T}>", instantiated by oxide
behind an extern "C" wrapper per TypeVar constraint) or a name pattern ("f_{T}", one C function
per type), each instance checked against its prototype like any extern (docs/interop.md)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError, LinkError
from oxide_build.compile import CompileOptions, build_ir, compile_module
from oxide_build.link.boundary import boundary_decls, template_instances, template_wrapper

OPTS = CompileOptions(archs=("sm_90",))
PACKAGE = Path(__file__).parent / "packages" / "genericextern"
HEAD = '''
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, Tensor, f16, f32, f64, i32, i64, thread
T = ox.TypeVar("T", f32, f64)
'''


def _project(tmp_path: Path, py: str, cu: str = "") -> Path:
    (tmp_path / "k.cu").write_text(textwrap.dedent(cu).lstrip())
    src = tmp_path / "k.py"
    src.write_text(HEAD + textwrap.dedent(py))
    return src


def test_each_constraint_gets_its_own_symbol(tmp_path: Path) -> None:
    _, frontend = build_ir(PACKAGE / "genx.py", "genx")
    externs = {e.symbol: e.cpp_template for e in frontend.program.externs}
    assert externs == {
        "__ox_tpl_scale_add___half": "scale_add<__half>", "__ox_tpl_scale_add_float": "scale_add<float>",
        "__ox_tpl_scale_add_double": "scale_add<double>",
        "__ox_tpl_mean_of___half": "mean_of<__half>", "__ox_tpl_mean_of_float": "mean_of<float>",
        "__ox_tpl_mean_of_double": "mean_of<double>",
        "twice_f32": "", "twice_f64": "", "half_fma": "",
    }


def test_the_template_wrapper_passes_the_abi_parameters_on() -> None:
    _, frontend = build_ir(PACKAGE / "genx.py", "genx")
    by_symbol = {e.symbol: e for e in frontend.program.externs}
    assert template_wrapper(by_symbol["__ox_tpl_mean_of_float"]) == (
        'extern "C" __device__ float __ox_tpl_mean_of_float(const float* x, long long x_len) '
        '{ return mean_of<float>(x, x_len); }')
    assert template_wrapper(by_symbol["__ox_tpl_scale_add___half"]) == (
        'extern "C" __device__ __half __ox_tpl_scale_add___half(__half x, __half a) '
        '{ return scale_add<__half>(x, a); }')
    decls = boundary_decls(frontend.program)
    appendix = template_instances(decls, str((PACKAGE / "csrc" / "scale.cu").resolve()))
    # six template instances, and the shims the f16 instance and half_fma are is called through (C++'s __half is a
    # 2-byte struct, passed as .b8[2], where the Python side has a 16-bit scalar)
    assert appendix.count("extern \"C\"") == 8 and "twice" not in appendix
    assert ('extern "C" __device__ unsigned short __ox_h16___ox_tpl_scale_add___half(unsigned short x, '
            'unsigned short a) { return __half_as_ushort(__ox_tpl_scale_add___half(__ushort_as_half(x), '
            '__ushort_as_half(a))); }') in appendix
    stub_line = next(n for n, line in enumerate((PACKAGE / "genx.py").read_text().splitlines(), 1)
                     if line.startswith("def scale_add("))
    assert f'#line {stub_line} "{PACKAGE / "genx.py"}"' in appendix


def test_generic_externs_compile_and_link(tmp_path: Path) -> None:
    import shutil

    pkg = tmp_path / "genericextern"
    shutil.copytree(PACKAGE, pkg)
    compiled = compile_module(pkg / "genx.py", "genx", OPTS)
    assert compiled.cubins["sm_90"][:4] == b"\x7fELF"
    assert {k.symbol for k in compiled.kernels} >= {"affine_f16", "affine_f32", "affine_f64", "doubled_f32"}


def test_a_name_pattern_instance_is_checked_against_its_definition(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern("twice_{T}", sources=["k.cu"])
        def twice(x: T) -> T: ...

        @ox.kernel
        def k(x: Slice[T], out: DisjointSlice[T]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = twice(x[i])
    ''', '''
        extern "C" __device__ float twice_f32(float x) { return 2.0f * x; }
        extern "C" __device__ float twice_f64(float x) { return 2.0f * x; }
    ''')
    with pytest.raises(LinkError) as info:
        compile_module(src, "k", OPTS)
    message = str(info.value)
    assert "the C++ declaration of 'twice_f64' does not match the @extern stub" in message
    assert 'expects: extern "C" __device__ double twice_f64(double x);' in message


def test_a_template_the_source_lacks_is_reported_at_the_stub(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern("missing<{T}>", sources=["k.cu"])
        def missing(x: T) -> T: ...

        @ox.kernel
        def k(x: Slice[T], out: DisjointSlice[T]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = missing(x[i])
    ''', '''
        __device__ float unrelated(float x) { return x; }
    ''')
    with pytest.raises(LinkError) as info:
        compile_module(src, "k", OPTS)
    message = str(info.value)
    assert f"{src}(7)" in message and "missing" in message, message


def test_a_tensor_parameter_binds_the_typevar(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern("corner<{T}>", sources=["k.cu"])
        def corner(x: Tensor[T, 2]) -> T: ...

        @ox.kernel
        def k(x: Tensor[T, 2], out: DisjointSlice[T]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = corner(x)
    ''')
    _, frontend = build_ir(src, "k")
    wrappers = {e.symbol: template_wrapper(e) for e in frontend.program.externs}
    assert wrappers["__ox_tpl_corner_double"] == (
        'extern "C" __device__ double __ox_tpl_corner_double(const double* x, long long x_extent0, '
        'long long x_extent1, long long x_stride0, long long x_stride1) '
        '{ return corner<double>(x, x_extent0, x_extent1, x_stride0, x_stride1); }')


@pytest.mark.parametrize("decl, message", [
    ('@ox.extern("twice", sources=["k.cu"])', "the generic @extern symbol 'twice' does not name its type T"),
    ('@ox.extern("twice_{U}", sources=["k.cu"])', "names {U}, which is not a TypeVar of its parameters"),
    ('@ox.extern("twice<{T}>")', "needs sources= naming first the .cu that defines it"),
    ('@ox.extern("twice-{T}", sources=["k.cu"])', "'twice-f32' is not a C identifier"),
])
def test_generic_extern_declaration_errors(tmp_path: Path, decl: str, message: str) -> None:
    src = _project(tmp_path, f'''
        {decl}
        def twice(x: T) -> T: ...

        @ox.kernel
        def k(x: Slice[T], out: DisjointSlice[T]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = twice(x[i])
    ''')
    with pytest.raises(CompileError) as info:
        build_ir(src, "k")
    assert "k.py:6:" in str(info.value) and message in str(info.value), str(info.value)


def test_an_argument_outside_the_constraints(tmp_path: Path) -> None:
    src = _project(tmp_path, '''
        @ox.extern("twice_{T}", sources=["k.cu"])
        def twice(x: T) -> T: ...

        @ox.kernel
        def k(x: Slice[i32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = f32(twice(x[i]))
    ''')
    with pytest.raises(CompileError) as info:
        build_ir(src, "k")
    message = str(info.value)
    assert "k.py:13:" in message and "argument 'x' of twice() is i32, but T allows only f32, f64" in message
