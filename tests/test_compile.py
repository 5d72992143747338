"""The compile pipeline on the CPU: LLVM IR → PTX (checked by ptxas) → cubin (nvJitLink)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from oxide_build.compile import CompileOptions, compile_module
from oxide_build.toolchain import find_tool

SAXPY = '''
import oxide as ox
from oxide import DisjointSlice, Slice, f32, f64, kernel, thread

T = ox.TypeVar("T", f32, f64)

def axpy(a: T, x: T, y: T) -> T:
    return a * x + y

@kernel
def saxpy(a: T, x: Slice[T], y: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = axpy(a, x[i], y[i])
'''

CONTROL_FLOW = '''
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, i64, u32, thread, block

BIG: int = 1 << 20

def clamp(v: i64, lo: i64, hi: i64) -> i64:
    return max(lo, min(v, hi))

@ox.kernel
def mixed(x: Slice[i64], n: i32, flag: bool, out: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i >= len(out):
        return
    acc = 0
    for k in range(0, n, 2):
        if k == 6:
            continue
        acc += x[i] // (k + 1) + x[i] % 3
        if acc > BIG:
            break
    j = 10
    while j > 0:
        j -= 3
    t = thread.idx.x + block.dim.x * block.idx.x
    out[i] = clamp(acc, -5, 5) + (1 if flag and t >= 0 else 2) + abs(i64(j)) + i64(u32(7)) * 2
'''


@pytest.fixture(scope="module")
def compiled_saxpy(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    src = tmp_path_factory.mktemp("saxpy") / "saxpy.py"
    src.write_text(SAXPY)
    return compile_module(src, "saxpy", CompileOptions(archs=("sm_80", "sm_90")))


def test_kernels_and_manifest_data(compiled_saxpy) -> None:  # type: ignore[no-untyped-def]
    specs = [(k.symbol, [(p.name, p.kind, p.dtype) for p in k.params]) for k in compiled_saxpy.kernels]
    assert specs == [
        ("saxpy_f32", [("a", "scalar", "f32"), ("x", "slice", "f32"), ("y", "slice", "f32"), ("out", "disjoint_slice", "f32")]),
        ("saxpy_f64", [("a", "scalar", "f64"), ("x", "slice", "f64"), ("y", "slice", "f64"), ("out", "disjoint_slice", "f64")]),
    ]
    assert len(compiled_saxpy.source_sha256) == 64


def test_ptx_per_arch_with_fma(compiled_saxpy) -> None:  # type: ignore[no-untyped-def]
    for arch in ("sm_80", "sm_90"):
        ptx = compiled_saxpy.ptx[arch]
        assert f".target {arch}" in ptx
        assert ".visible .entry saxpy_f32(" in ptx and ".visible .entry saxpy_f64(" in ptx
        assert "fma.rn.f32" in ptx  # contraction on by default, like nvcc
        assert "ld.global" in ptx and "st.global" in ptx


def test_cubins_are_elf_for_each_arch(compiled_saxpy) -> None:  # type: ignore[no-untyped-def]
    assert sorted(compiled_saxpy.cubins) == ["sm_80", "sm_90"]
    for cubin in compiled_saxpy.cubins.values():
        assert cubin[:4] == b"\x7fELF"
        assert b"saxpy_f32" in cubin and b"saxpy_f64" in cubin


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source", ["saxpy", "control_flow"])
def test_ptxas_accepts_ptx(arch: str, source: str, tmp_path: Path) -> None:
    ptxas = find_tool("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not installed (pip install nvidia-cuda-nvcc)")
    src = tmp_path / f"{source}.py"
    src.write_text(SAXPY if source == "saxpy" else CONTROL_FLOW)
    compiled = compile_module(src, source, CompileOptions(archs=(arch,), link_cubins=False))
    ptx_file = tmp_path / f"{source}.ptx"
    ptx_file.write_text(compiled.ptx[arch])
    result = subprocess.run([ptxas, f"-arch={arch}", "-o", str(tmp_path / "out.cubin"), str(ptx_file)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.cubin").stat().st_size > 0


def test_python_division_semantics_in_ir(tmp_path: Path) -> None:
    src = tmp_path / "cf.py"
    src.write_text(CONTROL_FLOW)
    compiled = compile_module(src, "cf", CompileOptions(archs=("sm_90",), link_cubins=False))
    # floor division and modulo adjust the truncating sdiv/srem results toward -inf
    assert "sdiv" in compiled.llvm_ir and "srem" in compiled.llvm_ir
    assert "select" in compiled.llvm_ir
    # the early return `if i >= len(out): return` proves out[i]; x[i] stays checked
    whats = [s.what for s in compiled.error_sites]
    assert whats[:2] == ["x[i]", "x[i]"] and len(whats) == 3 and whats[2].startswith("block.dim.y == 1")


def test_unknown_arch_is_an_error(tmp_path: Path) -> None:
    from oxide import CompileError

    src = tmp_path / "s.py"
    src.write_text(SAXPY)
    with pytest.raises(CompileError, match="unknown arch 'sm_42'"):
        compile_module(src, "s", CompileOptions(archs=("sm_42",)))


INTRINSICS = '''
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, f32, i32, u32, thread, block, warp

@ox.kernel
def dyn(x: Slice[f32], out: DisjointSlice[f32], flags: MutSlice[u32]) -> None:
    buf = ox.shared.dynamic(f32)
    t = thread.idx.x
    i = thread.index_1d()
    buf[t] = x[i] if i < len(x) else f32(0.0)
    block.sync()
    ox.fence.block()
    ok = warp.all(buf[t] >= 0.0)
    anyneg = warp.any(buf[t] < 0.0)
    mask = warp.match_any(i32(t) % 4)
    ox.atomic.or_(flags, 0, u32(1) if anyneg else u32(0))
    ox.atomic.max(flags, 1, mask)
    ox.fence.device()
    if i < len(out):
        out[i] = buf[(t + 1) % block.dim.x] if ok else -1.0
'''


def test_dynamic_shared_memory_votes_fences_and_atomics(tmp_path: Path) -> None:
    src = tmp_path / "intr.py"
    src.write_text(INTRINSICS)
    compiled = compile_module(src, "intr", CompileOptions(archs=("sm_80", "sm_90")))
    ptx = compiled.ptx["sm_90"]
    assert ".extern .shared .align 16 .b8 __oxide_dynamic_shared[]" in ptx
    assert "vote.sync.all.pred" in ptx and "vote.sync.any.pred" in ptx
    assert "match.any.sync.b32" in ptx
    assert "membar.cta" in ptx and "membar.gl" in ptx
    assert "atom.global.or.b32" in ptx and "atom.global.max.u32" in ptx
    assert all(c[:4] == b"\x7fELF" for c in compiled.cubins.values())
    # dynamic shared memory has no size to check against: its accesses are not bounds-checked
    sites = [s.what for s in compiled.error_sites]
    assert "flags[0]" in sites and "flags[1]" in sites
    assert not any(w.startswith("buf[") for w in sites)


def test_if_without_else_branches_on_the_negated_integer_test_only(tmp_path: Path) -> None:
    """`if i < n and j > 0:` branches past its body on `i >= n or j <= 0` (nvcc's layout); a float
    test is not negated that way (`not (a < b)` is not `a >= b` when either is NaN)."""
    src = tmp_path / "k.py"
    src.write_text(
        "import oxide as ox\nfrom oxide import MutSlice, Slice, f32, i32, thread\n\n"
        "@ox.kernel\ndef k(x: Slice[f32], n: i32, out: MutSlice[f32]) -> None:\n"
        "    i = thread.idx.x\n"
        "    if i < n and i > 2:\n"
        "        with ox.unsafe():\n            out[0] = f32(1.0)\n"
        "    if x[0] < f32(0.5):\n"
        "        with ox.unsafe():\n            out[1] = f32(2.0)\n"
    )
    compiled = compile_module(src, "k", CompileOptions(archs=("sm_90",), link_cubins=False, bounds_check=False))
    ir = compiled.llvm_ir
    assert 'icmp sge i32' in ir and 'icmp sle i32' in ir  # the negated integer comparisons
    assert "fcmp olt float" in ir and "fcmp uge" not in ir and "fcmp oge" not in ir
