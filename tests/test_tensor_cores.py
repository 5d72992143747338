"""Tensor cores and inline PTX (issue #18, the sm_80 path): ox.asm, ox.mma (fragments,
mma.sync, ldmatrix, swizzle) and ox.cp_async compile to the PTX instructions on both backends,
and every misuse the types can see is a located compile error. tests/test_tensor_cores_gpu.py
checks the results on a GPU."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, compile_module

HEADER = ("import oxide as ox\n"
          "from oxide import Slice, MutSlice, DisjointSlice, bf16, f16, f32, f64, i16, i32, i64, u32, u64, thread, block\n")


def compile_src(tmp_path: Path, body: str, backend: str = "nvptx", bounds_check: bool = True,
                archs: tuple[str, ...] = ("sm_80",)) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    compiled = compile_module(src, "kern", CompileOptions(archs=archs, backend=backend, cache=False,
                                                         bounds_check=bounds_check))
    assert set(compiled.cubins) == set(archs)  # ptxas accepted the PTX
    return compiled.ptx[archs[0]]


def compile_error(tmp_path: Path, body: str) -> CompileError:
    with pytest.raises(CompileError) as exc:
        compile_src(tmp_path, body)
    return exc.value


def instructions(ptx: str) -> list[str]:
    return [line.strip() for line in ptx.splitlines()
            if re.match(r"(mma|ldmatrix|cp\.async|mov\.b64|add\.u32|neg\.f16|membar\.cta)", line.strip())]


# ---- ox.asm ---------------------------------------------------------------------------------

ASM_KERNEL = """
@ox.kernel
def k(x: Slice[u64], h: Slice[f16], out: DisjointSlice[u32], outh: DisjointSlice[f16]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x) and i < len(h) and i < len(outh):
        with ox.unsafe():
            lo, hi = ox.asm("mov.b64 {$0, $1}, $2;", outputs=(("=r", u32), ("=r", u32)), inputs=(("l", x[i]),))
            s = ox.asm("add.u32 $0, $1, $2;", outputs=(("=r", u32),), inputs=(("r", lo), ("n", 7)))
            hh = ox.asm("neg.f16 $0, $1;", outputs=(("=h", f16),), inputs=(("h", h[i]),))
            ox.asm("membar.cta;", memory=True)
        out[i] = s + hi
        outh[i] = hh
"""


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_asm_lowers_to_the_instructions(tmp_path: Path, backend: str) -> None:
    found = " ".join(instructions(compile_src(tmp_path, ASM_KERNEL, backend)))
    assert re.search(r"mov\.b64 \{%r\d+, %r\d+\}, %rd\d+;", found)
    assert re.search(r"add\.u32 %r\d+, %r\d+, 7;", found)
    assert re.search(r"neg\.f16 %rs\d+, %rs\d+;", found)
    assert "membar.cta;" in found


@pytest.mark.parametrize("body, message", [
    ("x = ox.asm('mov.u32 $0, %laneid;', outputs=(('=r', u32),))", "only inside `with ox.unsafe():`"),
    ("with ox.unsafe():\n        x = ox.asm('mov.u32 $0, %laneid;', outputs=(('=q', u32),))", "unknown asm constraint '=q'"),
    ("with ox.unsafe():\n        x = ox.asm('mov.u32 $0, %laneid;', outputs=(('r', u32),))", "an output constraint starts with '='"),
    ("with ox.unsafe():\n        x = ox.asm('mov.u32 $0, %laneid;', outputs=(('=r', f32),))", "constraint 'r' takes a 32-bit integer"),
    ("with ox.unsafe():\n        x = ox.asm('mov.u32 $0, $1;', outputs=(('=r', u32),), inputs=(('l', n),))", "constraint 'l' takes a 64-bit integer (i64, u64); n is i32"),
    ("with ox.unsafe():\n        x = ox.asm('add.u32 $0, $1, $2;', outputs=(('=r', u32),), inputs=(('r', u32(n)),))", "names operand $2, but there are 2"),
    ("with ox.unsafe():\n        x = ox.asm('add.u32 $0, $0, $1;', outputs=(('=r', u32),), inputs=(('n', n),))", "an 'n' operand must be a compile-time integer"),
    ("with ox.unsafe():\n        ox.asm('membar.cta;', volatile=True)", "ox.asm() has no keyword 'volatile'"),
    ("with ox.unsafe():\n        x = ox.asm('mov.u32 $0, %laneid;', outputs=('=r', u32))", "each of ox.asm's outputs is a (constraint, type) pair"),
])
def test_asm_errors(tmp_path: Path, body: str, message: str) -> None:
    err = compile_error(tmp_path, f"""
@ox.kernel
def k(n: i32, out: MutSlice[u32]) -> None:
    {body}
""")
    assert message in str(err), str(err)
    assert err.location is not None and "ox.asm(" in err.location.source_line


# ---- mma, ldmatrix, cp.async ----------------------------------------------------------------

MMA_KERNEL = """
@ox.kernel
def mma_tile(a: Slice[ELEM], b: Slice[ELEM], out: MutSlice[f32]) -> None:
    sa = ox.shared.array(256, ELEM)
    sb = ox.shared.array(128, ELEM)
    lane = thread.idx.x
    ox.cp_async.copy(sa, lane * 8, a, lane * 8, 16, cache="cg")
    if lane < 16:
        ox.cp_async.copy(sb, lane * 8, b, lane * 8, 16, src_bytes=16)
    ox.cp_async.commit_group()
    ox.cp_async.wait_group(0)
    block.sync()
    fa = ox.mma.fragment_a("m16n8k16", ELEM)
    fb = ox.mma.fragment_b("m16n8k16", ELEM)
    acc = ox.mma.fragment_c("m16n8k16")
    for i in ox.static_range(4):
        acc[i] = 0.0
    ox.mma.ldmatrix(fa, sa, (lane % 16) * 16 + 8 * (lane // 16))
    ox.mma.ldmatrix(fb, sb, (lane % 16) * 8, trans=True)
    ox.mma.sync(acc, fa, fb, acc)
    with ox.unsafe():
        out[lane] = acc[0] + acc[1] + acc[2] + acc[3]
"""


@pytest.mark.parametrize("elem, backend", [("bf16", "nvptx"), ("f16", "nvptx"), ("f16", "nvvm")])
def test_mma_ldmatrix_cp_async_ptx(tmp_path: Path, elem: str, backend: str) -> None:
    ptx = compile_src(tmp_path, MMA_KERNEL.replace("ELEM", elem), backend)
    found = instructions(ptx)
    text = "\n".join(found)
    assert re.search(r"cp\.async\.cg\.shared\.global \[%rd\d+\], \[%rd\d+\], 16;", text)
    assert re.search(r"cp\.async\.ca\.shared\.global \[%rd\d+\], \[%rd\d+\], 16, (%r\d+|16);", text)  # zero-fill
    assert "cp.async.commit_group;" in text and re.search(r"cp\.async\.wait_group\s+0;", text)
    assert re.search(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16 \{%r\d+, %r\d+, %r\d+, %r\d+\}", text)
    assert re.search(r"ldmatrix\.sync\.aligned\.m8n8\.x2\.trans\.shared\.b16 \{%r\d+, %r\d+\}", text)
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{elem}.{elem}.f32" in text
    # the fragments live in registers: no local memory
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_tf32_mma_and_ldmatrix_x1(tmp_path: Path) -> None:
    ptx = compile_src(tmp_path, """
@ox.kernel
def k(a: Slice[f32], h: Slice[f16], out: MutSlice[f32]) -> None:
    sh = ox.shared.array(64, f16)
    lane = thread.idx.x
    if lane < 8:
        ox.cp_async.copy(sh, lane * 8, h, lane * 8, 8)
        ox.cp_async.copy(sh, lane * 8 + 4, h, lane * 8 + 4, 8)
    ox.cp_async.commit_group()
    ox.cp_async.wait_group(0)
    block.sync()
    fa = ox.mma.fragment_a("m16n8k8", f32)
    fb = ox.mma.fragment_b("m16n8k8", f32)
    acc = ox.mma.fragment_c("m16n8k8")
    pair = ox.local.array(2, f16)
    ox.mma.ldmatrix(pair, sh, (lane % 8) * 8)
    for i in ox.static_range(4):
        fa[i] = a[lane * 4 + i]
        acc[i] = f32(pair[0]) + f32(pair[1])
    fb[0] = a[lane]
    fb[1] = a[lane + 32]
    ox.mma.sync(acc, fa, fb, acc)
    with ox.unsafe():
        out[lane] = acc[0] + acc[3]
""", bounds_check=False)
    text = "\n".join(instructions(ptx))
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in text
    assert re.search(r"ldmatrix\.sync\.aligned\.m8n8\.x1\.shared\.b16 \{?%r\d+\}?", text)
    assert re.search(r"cp\.async\.ca\.shared\.global \[%rd\d+\], \[%rd\d+\], 8;", text)


def test_ldmatrix_and_cp_async_are_bounds_checked(tmp_path: Path) -> None:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(MMA_KERNEL.replace("ELEM", "bf16")))
    checked = compile_module(src, "kern", CompileOptions(archs=("sm_80",), cache=False, link_cubins=False))
    whats = [s.what for s in checked.error_sites if s.kind == "bounds"]
    assert any(w.startswith("ldmatrix row sa[") for w in whats)
    assert "sa[lane * 8 : +8]" in whats and "a[lane * 8 : +8]" in whats
    unchecked = compile_module(src, "kern", CompileOptions(archs=("sm_80",), cache=False, link_cubins=False,
                                                            bounds_check=False))
    assert not [s for s in unchecked.error_sites if s.kind == "bounds"]


def test_swizzle_is_integer_arithmetic(tmp_path: Path) -> None:
    from oxide_build.compile import build_ir
    from oxide_build.ir.printer import print_program

    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
        @ox.kernel
        def k(out: MutSlice[i32]) -> None:
            with ox.unsafe():
                out[0] = ox.mma.swizzle(thread.idx.x, 3, 3, 3)
        """))
    text = print_program(build_ir(src, "kern")[1].program)
    assert "(%tid.x ^ ((%tid.x >> 3:i32) & 56:i32))" in text


def swizzle(offset: int, bits: int, base: int, shift: int) -> int:
    return offset ^ ((offset >> shift) & (((1 << bits) - 1) << base))


def test_swizzle_reference_is_a_permutation_of_each_row_block() -> None:
    # Swizzle<3,3,3> on a 64-element (128-byte) row: the 8 16-byte chunks of row r go to r ^ chunk
    for row in range(8):
        chunks = {swizzle(row * 64 + 8 * c, 3, 3, 3) // 8 - row * 8 for c in range(8)}
        assert chunks == set(range(8))
        assert swizzle(row * 64 + 8, 3, 3, 3) == row * 64 + 8 * (1 ^ row)


FRAGMENTS = """
    fa = ox.mma.fragment_a("m16n8k16", bf16)
    fb = ox.mma.fragment_b("m16n8k16", bf16)
    fc = ox.mma.fragment_c("m16n8k16")
    ha = ox.mma.fragment_a("m16n8k16", f16)
    ta = ox.mma.fragment_a("m16n8k8", f32)
    sm = ox.shared.array(256, bf16)
    loc = ox.local.array(8, bf16)
"""


@pytest.mark.parametrize("body, message", [
    ("x = ox.mma.fragment_a('m16n8k64', bf16)", "unknown mma shape 'm16n8k64'"),
    ("x = ox.mma.fragment_a('m16n8k16', f32)", "an m16n8k16 fragment holds f16 or bf16, not f32"),
    ("x = ox.mma.fragment_b('m16n8k8', f16)", "an m16n8k8 fragment holds f32, not f16"),
    ("ox.mma.sync(fc, fb, fa, fc)", "takes a as a fragment m16n8k16, got mma fragment b m16n8k16 of bf16"),
    ("ox.mma.sync(fa, fa, fb, fc)", "takes d as c fragment m16n8k16, got mma fragment a m16n8k16 of bf16"),
    ("ox.mma.sync(fc, ha, fb, fc)", "a holds f16 but b holds bf16"),
    ("ox.mma.sync(fc, ta, fb, fc)", "takes d as c fragment m16n8k8 (the shape of a), got mma fragment c m16n8k16"),
    ("ox.mma.sync(fc, loc, fb, fc)", "a must be an mma fragment"),
    ("ox.mma.ldmatrix(fa, fb, sm, 0)", "ldmatrix loads 1, 2 or 4 8x8 matrices"),
    ("ox.mma.ldmatrix(fa, loc, 0)", "ldmatrix reads a shared array of 16-bit or 8-bit elements"),
    ("ox.mma.ldmatrix(ta, sm, 0)", "ldmatrix fills fragments of 16-bit elements"),
    ("ox.mma.ldmatrix(fa, sm, 0, trans=1)", "takes one keyword, trans=True or trans=False"),
    ("ox.cp_async.copy(sm, 0, x, 0, 8, cache='cg')", "cache='cg' copies 16 bytes only, not 8"),
    ("ox.cp_async.copy(sm, 0, x, 0, 12)", "copies 4, 8 or 16 bytes"),
    ("ox.cp_async.copy(sm, 0, y, 0, 16)", "copies f32 into a shared array of bf16"),
    ("ox.cp_async.copy(loc, 0, x, 0, 16)", "cp_async.copy writes a shared array"),
    ("ox.cp_async.copy(sm, 0, x, 0, 16, cache='cs')", "cache= is 'ca' (L1 and L2) or 'cg' (L2 only)"),
    ("ox.cp_async.wait_group(n)", "wait_group takes a compile-time count of groups"),
    ("out[0] = ox.mma.swizzle(n, 3, 3, 2)", "shift (2) must be at least bits (3)"),
    ("out[0] = ox.mma.swizzle(n, 3, m, 3)", "swizzle's base must be a compile-time integer"),
])
def test_tensor_core_errors(tmp_path: Path, body: str, message: str) -> None:
    err = compile_error(tmp_path, f"""
@ox.kernel
def k(x: Slice[bf16], y: Slice[f32], n: i32, m: i32, out: MutSlice[i32]) -> None:{FRAGMENTS}
    with ox.unsafe():
        {body}
""")
    assert message in str(err), str(err)
    assert err.location is not None and err.location.line == 15


def test_gemm_example_is_all_tensor_core_instructions_in_registers() -> None:
    """examples/gemm/mma_gemm.py (128x256x64 tiles, 8 warps) and its 128x128x32 baseline: both
    instances compile to mma.sync, ldmatrix and cp.async.cg, with the accumulators and the
    fragments in registers (no local memory)."""
    gemm = Path(__file__).resolve().parents[1] / "examples" / "gemm"
    for name, kk, copies in (("mma_gemm", 4, 3 * 12), ("mma_gemm_128x128", 2, 8)):  # 2 stages ahead + the loop
        compiled = compile_module(gemm / f"{name}.py", name, CompileOptions(archs=("sm_80",), cache=False))
        ptx = compiled.ptx["sm_80"]
        for elem in ("bf16", "f16"):
            assert ptx.count(f"mma.sync.aligned.m16n8k16.row.col.f32.{elem}.{elem}.f32") == kk * 32  # k-steps x 4 x 8
        assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 2 * kk * 4
        assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 2 * kk * 4
        assert ptx.count("cp.async.cg.shared.global") == 2 * copies
        assert "ld.local" not in ptx and "st.local" not in ptx


def test_gemm_copies_widen_with_one_32_bit_multiply() -> None:
    """The mma GEMM has no bounds checks; its row offsets i64(u32(k0 + kr)) * n still widen with
    zext on both sides (mul.wide.u32, or adds once LLVM strength-reduces them), not a
    sign-extended 64-bit multiply: the bounds-elimination pass proves n >= 0 from the
    precondition n > 0, a fact that needs no run-time check."""
    from oxide_build.compile import build_ir
    from oxide_build.ir.printer import print_program

    root = Path(__file__).resolve().parents[1]
    _, frontend = build_ir(root / "examples" / "gemm" / "mma_gemm.py", "examples.gemm.mma_gemm",
                           CompileOptions(archs=("sm_90",), cache=False), root=root)
    text = print_program(frontend.program)
    assert text.count("i64(u32((k0 + kr))) * i64.nonneg(n)") == 2 * 8  # 8 copies of B, 2 instances
    assert "grid" not in " ".join(str(p) for f in frontend.program.functions for p in f.preconditions)
