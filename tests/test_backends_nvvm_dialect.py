"""The lowering's two dialects (oxide_build/lower/dialect.py): NVVM IR for libNVVM is written by
the lowering itself, in the forms libNVVM reads, and differs from the NVPTX form only where
the table in dialect.py says."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide.errors import ToolchainError
from oxide_build.compile import CompileOptions, build_ir
from oxide_build.lower.dialect import NVPTX, NVPTX_DATA_LAYOUT, NVVM_DATA_LAYOUT, nvvm_dialect
from oxide_build.lower.llvm import lower_program

VERSION = (2, 0, 3, 2)

SOURCE = '''
import oxide as ox
from oxide import MutSlice, Slice, f32, f64, i64, u32, thread


@ox.kernel
def every_form(x: Slice[f32], d: Slice[f64], out: MutSlice[f32], dout: MutSlice[f64],
               counters: MutSlice[u32]) -> None:
    i = thread.index_1d()
    if i < len(x):
        ox.atomic.add(out, 0, -x[i])
        ox.atomic.sub(dout, 0, d[i % len(d)])
        ox.atomic.inc(counters, 0, u32(7))
        ox.atomic.dec(counters, 1, u32(7))
        ox.fence.device()
    if i * 4 + 3 < len(x):
        a, b, c, e = x.load4(i)
        with ox.unsafe():
            out[i % len(out)] = a + b + c + e  # a bounds check: a branch with weights


@ox.device(export="ox_neg")
def neg(v: f32) -> f32:
    return -v
'''

# function attributes libNVVM's LLVM 7 parser accepts
LIBNVVM_FUNCTION_ATTRIBUTES = {
    "alwaysinline", "cold", "convergent", "inlinehint", "minsize", "noduplicate", "noinline",
    "nounwind", "noreturn", "optsize", "readnone", "readonly", "writeonly", "argmemonly",
    "norecurse", "speculatable",
}


def _program(tmp_path: Path, lineinfo: bool = False):  # type: ignore[no-untyped-def]
    src = tmp_path / "forms.py"
    src.write_text(textwrap.dedent(SOURCE))
    _, frontend = build_ir(src, "forms", CompileOptions(lineinfo=lineinfo), root=tmp_path)
    return frontend.program


def _text(tmp_path: Path, arch: str = "sm_90", lineinfo: bool = False, nvvm: bool = True) -> str:
    dialect = nvvm_dialect(VERSION, arch) if nvvm else NVPTX
    return lower_program(_program(tmp_path, lineinfo), "forms", lineinfo=lineinfo, dialect=dialect).text()


def test_nvptx_form_keeps_llvm_22_instructions(tmp_path: Path) -> None:
    text = _text(tmp_path, nvvm=False)
    assert f'target datalayout = "{NVPTX_DATA_LAYOUT}"' in text
    assert "fneg float" in text and "atomicrmw fadd float" in text and "atomicrmw fadd double" in text
    assert "atomicrmw uinc_wrap i32" in text and "atomicrmw udec_wrap i32" in text
    assert "freeze <4 x float>" in text
    assert "llvm.used" not in text and "nvvmir.version" not in text


def test_nvvm_form_is_what_libnvvm_reads(tmp_path: Path) -> None:
    text = _text(tmp_path)
    assert f'target datalayout = "{NVVM_DATA_LAYOUT}"' in text
    assert 'target triple = "nvptx64-nvidia-cuda"' in text
    for newer in ("fneg", "atomicrmw fadd", "uinc_wrap", "udec_wrap", "freeze", "\n  fence"):
        assert newer not in text, newer
    assert re.search(r"fsub float\s+0x8000000000000000, ", text)  # -x of a float
    assert re.search(r"fsub double\s+0x8000000000000000, ", text)  # atomic.sub is an add of -x
    for intrinsic in ("llvm.nvvm.atomic.load.add.f32.p1f32", "llvm.nvvm.atomic.load.add.f64.p1f64",
                      "llvm.nvvm.atomic.load.inc.32.p1i32", "llvm.nvvm.atomic.load.dec.32.p1i32"):
        assert re.search(rf'call \w+ @"{re.escape(intrinsic)}"\(', text), intrinsic
        assert re.search(rf'^declare \w+ @"{re.escape(intrinsic)}"\(', text, re.M), intrinsic
    assert "call void @\"llvm.nvvm.membar.gl\"()" in text
    used = next(line for line in text.splitlines() if line.startswith('@"llvm.used"'))
    assert 'appending global [5 x i8*]' in used and 'section "llvm.metadata"' in used
    # the kernel, its fast instance (passes/launch_instances.py) and the export, not internal functions
    for symbol in ('@"every_form"', '@"every_form__fast"', '@"ox_neg"'):
        assert re.search(rf"i8\* bitcast \(\w+ \(.*?\)\* {symbol} to i8\*\)", used), symbol
    for runtime_global in ('@"__oxide_error_ptr"', '@"__oxide_module_id"'):
        assert re.search(rf"i8\* addrspacecast \(\S+ addrspace\(1\)\* {runtime_global} to i8\*\)", used)
    assert "__oxide_fail" not in used
    version = re.search(r"!nvvmir.version = !\{ ?(!\d+) ?\}", text)
    assert version is not None
    assert re.search(rf"^{version.group(1)} = !\{{ ?i32 2, i32 0, i32 3, i32 2 ?\}}", text, re.M)
    assert "!prof" in text  # sm_90 keeps branch weights


def test_nvvm_form_function_attributes_are_known_to_libnvvm(tmp_path: Path) -> None:
    for line in _text(tmp_path).splitlines():
        if line.startswith(("define", "declare")):
            attributes = line[line.rindex(")") + 1:].replace("{", "").split()
            assert set(attributes) <= LIBNVVM_FUNCTION_ATTRIBUTES, line


def test_nvvm_form_drops_branch_weights_from_sm_100(tmp_path: Path) -> None:
    # libNVVM 13.5 crashes on some modules for compute_120 with them (examples/histogram.py)
    assert "!prof" in _text(tmp_path, "sm_90") and "!prof" in _text(tmp_path, "sm_90a")
    assert "!prof" not in _text(tmp_path, "sm_100") and "!prof" not in _text(tmp_path, "sm_120")
    assert "!prof" not in _text(tmp_path, "sm_100a")
    assert nvvm_dialect(VERSION, "sm_120") == nvvm_dialect(VERSION, "compute_120")


def test_nvvm_form_line_table_spells_subprogram_flags_as_fields(tmp_path: Path) -> None:
    nvvm, nvptx = _text(tmp_path, lineinfo=True), _text(tmp_path, lineinfo=True, nvvm=False)
    assert "spFlags" not in nvvm and "isDefinition: true" in nvvm and "isOptimized: true" in nvvm
    assert "spFlags: DISPFlagDefinition | DISPFlagOptimized" in nvptx


def test_libnvvm_compiles_the_nvvm_form(tmp_path: Path) -> None:
    from oxide_build.backends import nvvm

    try:
        version = nvvm.nvvm_ir_version()
    except ToolchainError as exc:
        pytest.skip(str(exc))
    program = _program(tmp_path, lineinfo=True)
    for arch in ("sm_80", "sm_120"):
        text = lower_program(program, "forms", lineinfo=True, dialect=nvvm_dialect(version, arch)).text()
        ptx = nvvm.emit_ptx(text, arch)
        assert ".entry every_form" in ptx and ".loc" in ptx
        for op in ("add.f32", "add.f64", "inc.u32", "dec.u32"):  # sm_120: atom.relaxed.gpu.global.add.f32
            assert re.search(rf"atom(\.relaxed\.gpu)?\.global\.{op}", ptx), op
        assert nvvm.emit_ltoir(text, arch)
