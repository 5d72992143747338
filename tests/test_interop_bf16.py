"""A module with bf16 kernels links CUDA C++ (issue 25; the causal-conv1d port, issue 27, needs
it). libNVVM's IR has no ``bfloat``, so such a module's Python side is NVPTX's PTX, linked with
the C++ LTO-IR by nvJitLink ``-lto`` (``compile.CodePath``); without bf16 it stays libNVVM's
LTO-IR. CPU only: the cubins are made and checked, not run."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, code_path, compile_module
from oxide_build.link.nvjitlink import link_cubin

__all__: list[str] = []

ELF = b"\x7fELF"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "oxide-cache"))


def _project(tmp_path: Path, element: str = "bf16") -> Path:
    (tmp_path / "twice.cu").write_text('extern "C" __device__ float twice(float x) { return 2.0f * x; }\n')
    src = tmp_path / "bfk.py"
    src.write_text(textwrap.dedent(f"""\
        import oxide as ox
        from oxide import kernel, extern, f32, {element}, Slice, DisjointSlice, thread

        @extern("twice", sources=["twice.cu"])
        def twice(x: f32) -> f32: ...

        @kernel
        def scale(x: Slice[{element}], out: DisjointSlice[{element}], unused: f32) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = {element}(twice(f32(x[i])))
        """))
    return src


def test_a_bf16_module_links_cuda_cpp_through_nvjitlink(tmp_path: Path) -> None:
    src = _project(tmp_path)
    compiled = compile_module(src, "bfk", CompileOptions(archs=("sm_80", "sm_90")), root=tmp_path)
    assert compiled.lto and compiled.link_inputs == (str(tmp_path / "twice.cu"),)
    assert set(compiled.cubins) == {"sm_80", "sm_90"}
    for cubin in compiled.cubins.values():
        assert cubin[:4] == ELF and b"scale" in cubin
    assert not compiled.ltoir  # the Python side went in as PTX
    assert "bfloat" in compiled.llvm_ir and "cvt.rn.bf16.f32" in compiled.ptx["sm_90"]
    # the unread parameter (the f32) is not declared, and the manifest says which slots are
    (spec,) = [k for k in compiled.kernels if k.symbol == "scale"]
    assert spec.param_slots is not None and len(spec.param_slots) < len(spec.params) + 2
    assert "scale_param_" in compiled.ptx["sm_90"]
    assert compiled.fatbin is not None  # CompileOptions' default, as a build's


def test_without_bf16_the_python_side_stays_libnvvm_ltoir(tmp_path: Path) -> None:
    src = _project(tmp_path, "f16")
    compiled = compile_module(src, "bfk", CompileOptions(archs=("sm_90",)), root=tmp_path)
    assert compiled.lto and set(compiled.ltoir) == {"sm_90"} and compiled.cubins["sm_90"][:4] == ELF


def test_the_code_path_is_decided_once(tmp_path: Path) -> None:
    from oxide_build.compile import build_ir

    _, bf = build_ir(_project(tmp_path), "bfk", CompileOptions(archs=("sm_90",)), root=tmp_path)
    path = code_path(bf.program, CompileOptions(archs=("sm_90",)))
    assert (path.lto, path.libnvvm, path.python_ltoir) == (True, False, False)
    with pytest.raises(CompileError, match=r"scale\(\) uses bf16, which libNVVM"):
        code_path(bf.program, CompileOptions(archs=("sm_90",), backend="nvvm"))
    with pytest.raises(CompileError, match="uses bf16"):
        code_path(bf.program, CompileOptions(archs=("sm_90",), emit_ltoir=True))
    # nvJitLink makes PTX of a linked module from LTO-IR only: a PTX fallback is refused, located
    with pytest.raises(CompileError, match=r"bfk.py:8:1: .*cannot ship PTX") as info:
        code_path(bf.program, CompileOptions(archs=("sm_90",), embed_ptx=True))
    assert "ptx = false" in str(info.value)


def test_the_python_ptx_needs_the_cpp_side(tmp_path: Path) -> None:
    """The bf16 module's PTX calls the C++ function: linked without the C++ input, the link
    fails on that symbol (so the cubins above did resolve it from the C++ LTO-IR)."""
    compiled = compile_module(_project(tmp_path), "bfk", CompileOptions(archs=("sm_90",), link_cubins=False),
                              root=tmp_path)
    from oxide_build.link.lto import LinkInput

    with pytest.raises(Exception, match="twice"):
        link_cubin([LinkInput("py", "ptx", compiled.ptx["sm_90"].encode())], "sm_90")


def test_a_bf16_value_crosses_into_cuda_cpp(tmp_path: Path) -> None:
    """An @extern taking and returning bf16 (``__nv_bfloat16``), called through its shim."""
    (tmp_path / "twice16.cu").write_text(
        "#include <cuda_bf16.h>\n"
        'extern "C" __device__ __nv_bfloat16 twice16(__nv_bfloat16 x) { return __hmul(x, __float2bfloat16(2.0f)); }\n')
    src = tmp_path / "bfx.py"
    src.write_text(textwrap.dedent("""\
        import oxide as ox
        from oxide import kernel, extern, bf16, Slice, DisjointSlice, thread

        @extern("twice16", sources=["twice16.cu"])
        def twice16(x: bf16) -> bf16: ...

        @kernel
        def scale(x: Slice[bf16], out: DisjointSlice[bf16]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = twice16(x[i])
        """))
    compiled = compile_module(src, "bfx", CompileOptions(archs=("sm_80", "sm_90")), root=tmp_path)
    assert compiled.lto and sorted(compiled.cubins) == ["sm_80", "sm_90"]
    assert "call.uni (retval0), __ox_h16_twice16" in compiled.ptx["sm_90"]
    assert all(b"scale" in cubin for cubin in compiled.cubins.values())


def test_oxide_inspect_links_a_bf16_module_as_the_build_does(tmp_path: Path) -> None:
    from oxide_build.inspect import inspect_module

    found = inspect_module(_project(tmp_path), "bfk", "sm_90", root=tmp_path)
    assert found.cubin[:4] == ELF and "scale" in found.resources
