"""Compile tests of the CUDA intrinsics (docs/language.md, "Coming from CUDA C++"): what each
lowers to on both backends, and the located errors for misuse. Results on the GPU:
tests/test_lang_intrinsics_gpu.py."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, compile_module

HEADER = ("import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, f16, bf16, f32, f64, i8, i16, i32, "
          "i64, u16, u32, u64, thread, block, grid, warp\n")
HEADER_LINES = HEADER.count("\n")


def compile_source(tmp_path: Path, body: str, backend: str = "nvptx") -> str:
    """The sm_90 PTX of a module made of HEADER and ``body`` (assembled by ptxas: cubins on)."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",), backend=backend, cache=False), root=tmp_path)
    assert compiled.cubins["sm_90"]
    return compiled.ptx["sm_90"]


def compile_error(tmp_path: Path, body: str) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    with pytest.raises(CompileError) as info:
        compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False, cache=False), root=tmp_path)
    return str(info.value)


def at(line: int, col: int) -> str:
    """``kern.py:L:C`` for line ``line`` of the dedented body (1-based, its first line empty)."""
    return f"kern.py:{HEADER_LINES + line}:{col}"


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_bit_intrinsics_lower_to_their_instructions(tmp_path: Path, backend: str) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[u32], y: Slice[i32], w: Slice[u64], out: DisjointSlice[u32], n: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(y) and i < len(w):
                out[i] = (ox.bits.byte_perm(x[i], y[i], 0x5140) + ox.bits.funnelshift_l(x[i], y[i], x[i])
                          + ox.bits.funnelshift_r(x[i], y[i], 3) + ox.bits.funnelshift_lc(x[i], x[i], y[i])
                          + ox.bits.funnelshift_rc(x[i], x[i], y[i]) + ox.bits.bitcast(y[i], u32))
                n[i] = ox.bits.ffs(x[i]) + ox.bits.ffs(w[i]) + ox.bits.ffs(y[i]) + ox.bits.bitcast(ox.bits.bitcast(y[i], f32), i32)
        """, backend)
    assert "prmt.b32" in ptx
    assert "shf.l.wrap.b32" in ptx and "shf.r.wrap.b32" in ptx


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_mulhi_is_the_high_half_of_the_product(tmp_path: Path, backend: str) -> None:
    # __umulhi / __mulhi / __umul64hi / __mul64hi (Philox, division by multiplication)
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[u32], y: Slice[i32], w: Slice[u64], v: Slice[i64], out: DisjointSlice[u64]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(y) and i < len(w) and i < len(v):
                a = ox.bits.mulhi(0xD2511F53, x[i])
                b = ox.bits.mulhi(y[i], y[i])
                out[i] = u64(a) + u64(b) + ox.bits.mulhi(w[i], w[i]) + u64(ox.bits.mulhi(v[i], v[i]))
        """, backend)
    assert "mul.hi.u64" in ptx and "mul.hi.s64" in ptx
    # 32 bits: mul.hi, or (libNVVM) the wide product whose high word is taken
    assert ("mul.hi.u32" in ptx or "mul.wide.u32" in ptx) and ("mul.hi.s32" in ptx or "mul.wide.s32" in ptx)
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[u32]) -> None:
            i = thread.index_1d()
            out[i] = ox.bits.mulhi(x[i], x[i])
        """)
    assert f"{at(5, 14)}: error: bits.mulhi needs 32- or 64-bit integers, got f32" in msg, msg


def test_bitcast_between_every_same_width_pair(tmp_path: Path) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(f: Slice[f32], d: Slice[f64], h: Slice[f16], b: Slice[bf16], o1: DisjointSlice[i32], o2: DisjointSlice[u64],
              o3: DisjointSlice[i16], o4: DisjointSlice[u16], o5: DisjointSlice[f32], o6: DisjointSlice[f16]) -> None:
            i = thread.index_1d()
            if i < len(f) and i < len(d) and i < len(h) and i < len(b):
                o1[i] = ox.bits.bitcast(f[i], i32)
                o2[i] = ox.bits.bitcast(d[i], u64)
                o3[i] = ox.bits.bitcast(h[i], i16)
                o4[i] = ox.bits.bitcast(b[i], u16)
                o5[i] = ox.bits.bitcast(o1[i], f32)
                o6[i] = ox.bits.bitcast(b[i], f16)
        """)
    # reinterpretations convert nothing: no float conversion at all
    assert not any(c in ptx for c in ("cvt.rn", "cvt.rz", "cvt.f", "cvt.s32.f", "cvt.u16.f")), ptx


def test_bitcast_of_half_pairs(tmp_path: Path) -> None:
    """A pair of halves and a 32-bit word reinterpret each other: f16x2(v) of an f32x2 is one
    cvt.rn.f16x2.f32 (bf16x2: cvt.rn.bf16x2.f32) and the bitcast moves no bits."""
    ptx = compile_source(tmp_path, """
        from oxide import f16x2, bf16x2, f32x2

        @ox.kernel
        def k(x: Slice[f32], w: Slice[i32], o: DisjointSlice[i32], p: DisjointSlice[u32], q: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if 2 * i + 1 < len(x) and i < len(w):
                v = f32x2(x[2 * i], x[2 * i + 1])
                o[i] = ox.bits.bitcast(f16x2(v), i32)
                p[i] = ox.bits.bitcast(bf16x2(v), u32)
                h = f32x2(ox.bits.bitcast(w[i], bf16x2))
                q[i] = h.x + h.y
        """)
    assert "cvt.rn.f16x2.f32" in ptx and "cvt.rn.bf16x2.f32" in ptx, ptx
    assert "cvt.rn.f16.f32" not in ptx and "cvt.rn.bf16.f32" not in ptx, ptx
    msg = compile_error(tmp_path, """
        from oxide import f16x2

        @ox.kernel
        def k(w: Slice[i64], o: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(w):
                o[i] = f32(ox.bits.bitcast(w[i], f16x2).x)
        """)
    assert f"{at(8, 20)}: error: bits.bitcast cannot reinterpret 64-bit i64 as 32-bit f16x2: the widths differ" in msg, msg


def test_bitcast_errors(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(f: Slice[f32], out: DisjointSlice[i64]) -> None:
            i = thread.index_1d()
            if i < len(f):
                out[i] = ox.bits.bitcast(f[i], i64)
        """)
    assert f"{at(6, 18)}: error: bits.bitcast cannot reinterpret 32-bit f32 as 64-bit i64: the widths differ" in msg, msg
    assert "hint: convert the value instead" in msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = ox.bits.bitcast(1.5, i32)
        """)
    assert f"{at(6, 34)}: error: bits.bitcast needs a typed value, got the literal 1.5" in msg, msg
    assert "bits.bitcast(f32(1.5), i32)" in msg


def test_funnel_shift_and_byte_perm_errors(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[u64], out: DisjointSlice[u32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = ox.bits.funnelshift_l(u32(1), x[i], 3)
        """)
    assert f"{at(6, 48)}: error: hi of bits.funnelshift_l must be an i32 or u32, got u64" in msg, msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[u32], out: DisjointSlice[u32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = ox.bits.byte_perm(x[i], x[i])
        """)
    assert f"{at(6, 18)}: error: oxide.bits.byte_perm() takes 3 argument(s), got 2" in msg, msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = ox.bits.ffs(x[i])
        """)
    assert f"{at(6, 30)}: error: bits.ffs needs a 32- or 64-bit integer, got f32" in msg, msg


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_fast_math_per_call(tmp_path: Path, backend: str) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], h: Slice[f16], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(h):
                out[i] = (ox.math.fast_exp(x[i]) + ox.math.fast_log(x[i]) + ox.math.fast_sin(x[i]) + ox.math.fast_cos(h[i])
                          + ox.math.fast_div(x[i], 3.0) + ox.math.fast_pow(x[i], 2) + ox.math.rcp(x[i])
                          + ox.math.saturate(x[i]) + ox.math.fast_tan(x[i]) + ox.math.fast_log2(x[i])
                          + ox.math.fast_log10(x[i]) + ox.math.fast_exp10(x[i]))
        """, backend)
    for instruction in ("ex2.approx", "lg2.approx", "sin.approx", "cos.approx", "div.approx", "rcp.rn.f32", ".sat.f32"):
        assert instruction in ptx, instruction
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(out):  # every access proven: one copy of the body, not versioned
                out[i] = ox.math.fast_exp2(x[i]) + ox.math.exp2(x[i] + 1.0)
        """, backend)
    assert ptx.count("ex2.approx.ftz.f32") == 1 and ptx.count("ex2.approx.f32") == 1  # fast_exp2, exp2
    # the precise forms stay precise: no fast-math for the whole module
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = ox.math.sin(x[i]) + x[i] / 3.0
        """, backend)
    assert "sin.approx" not in ptx and "div.approx" not in ptx and "div.rn.f32" in ptx


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_fast_math_tanh_is_the_hardware_approximation_as_under_use_fast_math(tmp_path: Path, backend: str) -> None:
    """[tool.oxide] fast-math: f32 tanh is tanh.approx.f32 (one MUFU.TANH, what nvcc
    -use_fast_math makes of tanhf on sm_75 and later); f64 tanh, and tanh without fast-math,
    stay libdevice's."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
        @ox.kernel
        def k(x: Slice[f32], y: Slice[f64], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(y) and i < len(out):
                out[i] = ox.math.tanh(x[i]) + f32(ox.math.tanh(y[i]))
        """))
    for fast, count in ((True, 1), (False, 0)):
        compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",), backend=backend, cache=False,
                                                              fast_math=fast), root=tmp_path)
        assert compiled.cubins["sm_90"]
        assert compiled.ptx["sm_90"].count("tanh.approx.f32") == count


def test_fast_math_refuses_f64(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f64], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = ox.math.fast_exp(x[i])
        """)
    assert f"{at(6, 35)}: error: math.fast_exp is an f32 approximation (CUDA's __expf), got f64" in msg, msg
    assert "hint: convert with f32(...) to accept its precision, or use ox.math.exp for f64" in msg


def test_rcp_of_f64_is_the_double_reciprocal(tmp_path: Path) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[f64], out: DisjointSlice[f64]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = ox.math.rcp(x[i])
        """)
    assert "rcp.rn.f64" in ptx


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_timers_and_nanosleep(tmp_path: Path, backend: str) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(out: DisjointSlice[i64], ns: u32) -> None:
            i = thread.index_1d()
            if i < len(out):
                t0 = ox.timer.clock64()
                ox.timer.nanosleep(ns)
                ox.timer.nanosleep(100)
                t1 = ox.timer.clock64()
                out[i] = t1 - t0 + i64(ox.timer.globaltimer() - u64(ox.timer.clock()))
        """, backend)
    # both reads of the clock stay, around the sleeps (side effects: never merged or moved)
    body = ptx.split(".entry")[1]
    first, second = body.index("%clock64"), body.rindex("%clock64")
    assert first < body.index("nanosleep.u32") < body.rindex("nanosleep.u32") < second
    assert "%globaltimer" in body and "%clock;" in body


def test_nanosleep_errors(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32]) -> None:
            ox.timer.nanosleep(x[0])
        """)
    assert f"{at(4, 24)}: error: timer.nanosleep takes a u32 number of nanoseconds, got f32" in msg, msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32]) -> None:
            ox.timer.nanosleep(-1)
        """)
    assert f"{at(4, 24)}: error: timer.nanosleep takes a u32 number of nanoseconds, got -1" in msg, msg


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_volatile_loads_and_stores(tmp_path: Path, backend: str) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(flag: MutSlice[i32], x: MutSlice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            s = ox.shared.array(4, u16)
            ox.volatile.store(s, 0, 1)
            if i < len(out) and i < len(x):
                ox.volatile.store(out, i, ox.volatile.load(x, i) + f32(ox.volatile.load(s, 0)))
            while ox.volatile.load(flag, 0) == 0:
                pass
            with ox.unsafe():
                ox.volatile.store(flag, 1, 7)
        """, backend)
    # in the kernel as written (flag[0] and flag[1] hold where len(flag) >= 2: a fast instance follows)
    written = ptx.split(".visible .entry ")[1]
    assert written.count("ld.volatile.global") == 2 and written.count("st.volatile.global") == 2
    assert "st.volatile.shared.b16" in ptx or "st.volatile.shared.u16" in ptx
    assert "ld.volatile.shared" in ptx


def test_volatile_store_follows_the_view_rules(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32]) -> None:
            ox.volatile.store(x, 0, 1.0)
        """)
    assert f"{at(4, 23)}: error: volatile.store cannot write the read-only Slice 'x'" in msg, msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: DisjointSlice[f32]) -> None:
            ox.volatile.store(x, 0, 1.0)
        """)
    assert f"{at(4, 26)}: error: a DisjointSlice can only be written at the calling thread's ThreadIndex" in msg, msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: MutSlice[f32]) -> None:
            ox.volatile.store(x, 0, 1.0)
        """)
    assert f"{at(4, 5)}: error: writing the MutSlice 'x' needs `with oxide.unsafe():`" in msg, msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: MutSlice[f32]) -> None:
            v = ox.volatile.load(3, 0)
        """)
    assert f"{at(4, 26)}: error: volatile.load needs a 1-D view (Slice, DisjointSlice, MutSlice) or an array, got" in msg, msg


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_half_precision_atomics(tmp_path: Path, elem: str) -> None:
    ptx = compile_source(tmp_path, f"""
        @ox.kernel
        def k(x: Slice[{elem}], acc: MutSlice[{elem}], old: DisjointSlice[{elem}]) -> None:
            i = thread.index_1d()
            if i < len(x):
                ox.atomic.add(acc, 0, x[i])
                ox.atomic.sub(acc, 1, x[i], scope="block")
                ox.atomic.max(acc, 2, x[i])
                ox.atomic.min(acc, 3, x[i], scope="system")
                old[i] = ox.atomic.exch(acc, 4, x[i]) + ox.atomic.cas(acc, 5, x[i], {elem}(2.0))
        """)
    if elem == "f16":
        assert "atom.gpu.global.add.noftz.f16" in ptx and "atom.cta.global.add.noftz.f16" in ptx
    else:  # bf16's atom.add needs sm_90 (a CAS loop before: tests/test_cuda_patterns.py)
        assert "atom.gpu.global.add.noftz.bf16" in ptx and "atom.cta.global.add.noftz.bf16" in ptx
    assert "atom.gpu.global.cas.b16" in ptx and "atom.sys.global.cas.b16" in ptx


def test_half_precision_atomics_through_libnvvm(tmp_path: Path) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[f16], acc: MutSlice[f16]) -> None:
            i = thread.index_1d()
            if i < len(x):
                ox.atomic.add(acc, 0, x[i])
                ox.atomic.max(acc, 1, x[i])
        """, "nvvm")
    assert "add.noftz.f16" in ptx and "cas.b16" in ptx


def test_half_precision_atomics_refuse_bitwise_ops(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(acc: MutSlice[f16]) -> None:
            ox.atomic.and_(acc, 0, f16(1.0))
        """)
    assert f"{at(4, 5)}: error: atomic.and_ needs integer elements, got f16" in msg, msg


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_partial_mask_warp_operations(tmp_path: Path, backend: str) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[i32], f: Slice[f64], out: DisjointSlice[i32], g: DisjointSlice[f64], m: DisjointSlice[u32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(f) and i < len(out) and i < len(g) and i < len(m):  # one copy: not versioned
                if warp.lane() < 20:
                    mask = warp.active_mask()
                    a = warp.reduce_sum(x[i], mask=mask) + warp.reduce_max(x[i], mask=0xFFFFF)
                    b = warp.shfl_down(f[i], 1, mask=mask) + warp.shfl_xor(f[i], 1, width=16, mask=mask)
                    out[i] = a + i32(warp.all(x[i] > 0, mask=mask)) + i32(warp.any(x[i] > 5, mask=mask))
                    g[i] = b
                    m[i] = warp.ballot(x[i] > 0, mask=mask) | warp.match_any(x[i], mask=mask)
                    warp.sync(mask=mask)
        """, backend)
    body = ptx.split(".entry")[1]
    mask = body.split("activemask.b32")[1].split(";")[0].strip()  # the register it lands in
    assert "redux.sync.add.s32" in body and "redux.sync.max.s32" in body
    for op in ("shfl.sync.down.b32", "shfl.sync.bfly.b32", "vote.sync.ballot.b32", "vote.sync.all.pred",
               "vote.sync.any.pred", "match.any.sync.b32", "bar.warp.sync"):
        lines = [line for line in body.splitlines() if op in line]
        assert lines and all(line.rstrip(";").endswith(mask) or f"{mask};" in line for line in lines), (op, lines)
    assert "4127" in body  # width=16: the shuffle's clamp operand ((32 - 16) << 8 | 31)


def test_warp_operations_without_mask_use_the_full_warp(tmp_path: Path) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[i32], out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = warp.shfl_down(x[i], 1) + warp.reduce_sum(x[i]) + i32(warp.ballot(x[i] > 0))
        """)
    assert "redux" not in ptx and "activemask" not in ptx and "-1;" in ptx


def test_partial_mask_errors(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = warp.reduce_sum(x[i], mask=warp.active_mask())
        """)
    assert (f"{at(6, 45)}: error: warp.reduce_sum with a mask takes an i32 or u32 (PTX redux.sync, CUDA's "
            "__reduce_add_sync), got f32") in msg, msg
    assert "hint: reduce over the full warp without mask=" in msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = warp.shfl_down(x[i], 1, mask=x[i])
        """)
    assert f"{at(6, 47)}: error: the mask needs u32, got f32" in msg, msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = warp.shfl_down(x[i], 1, lanes=3)
        """)
    assert f"{at(6, 42)}: error: oxide.warp.shfl_down() got an unexpected keyword argument 'lanes'" in msg, msg
    assert "hint: its keywords: mask, width" in msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = warp.shfl_down(x[i], 1, 16, width=16)
        """)
    assert f"{at(6, 52)}: error: oxide.warp.shfl_down() got the width twice" in msg, msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = f32(warp.ballot(x[i] > 0, mask=-1))
        """)
    assert f"{at(6, 49)}: error: the literal -1 does not fit in u32" in msg, msg


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_grid_sync_is_a_global_barrier_and_marks_the_kernel_cooperative(tmp_path: Path, backend: str) -> None:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent("""
        def phase() -> None:
            grid.sync()

        @ox.kernel
        def k(x: Slice[f32], tmp: MutSlice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(tmp):
                with ox.unsafe():
                    tmp[i] = x[i] * 2.0
            phase()
            if i < len(out) and i < len(tmp):
                out[i] = tmp[len(tmp) - 1 - i]

        @ox.kernel
        def direct(out: MutSlice[f32]) -> None:
            grid.sync()

        @ox.kernel
        def plain(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(x):
                out[i] = x[i]
        """))
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",), backend=backend, cache=False), root=tmp_path)
    assert {k.name: k.cooperative for k in compiled.kernels} == {"k": True, "direct": True, "plain": False}
    ptx = compiled.ptx["sm_90"]
    assert "__oxide_grid_barrier" in ptx and "atom.add.release.gpu.global.u32" in ptx
    body = ptx.split(".entry direct")[1].split(".entry")[0]
    # block barrier, arrive (a release add), poll (acquire reads), block barrier: acquire/release
    # at GPU scope as cooperative groups' barrier, not seq_cst fences and system-scope polls,
    # and no fence after the wait
    order = [body.index(s) for s in ("bar.sync", "atom.add.release.gpu.global.u32", "ld.acquire.gpu.global.u32")]
    assert order == sorted(order) and body.rindex("bar.sync") > order[-1], body
    assert body.count("bar.sync") == 2 and "fence" not in body
    assert "membar.gl" not in body and "fence.sc" not in body and "ld.volatile" not in body
    assert "__oxide_grid_barrier" not in ptx.split(".entry plain")[1].split(".entry")[0]


def test_grid_sync_under_a_divergent_condition(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32]) -> None:
            if thread.index_1d() < len(x):
                grid.sync()
        """)
    assert f"{at(5, 9)}: error: grid.sync() under a condition that differs between threads can deadlock the grid" in msg, msg
    assert "hint: move grid.sync() out of the branch or loop so every thread of every block reaches it" in msg
    msg = compile_error(tmp_path, """
        def phase() -> None:
            grid.sync()

        @ox.kernel
        def k(x: Slice[f32]) -> None:
            if x[thread.index_1d()] > 0.0:
                phase()
        """)
    assert (f"{at(8, 9)}: error: phase() reaches grid.sync() (at " in msg and "the grid can deadlock" in msg
            and "hint: call phase() where every thread of the grid calls it" in msg), msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32]) -> None:
            grid.sync(1)
        """)
    assert f"{at(4, 5)}: error: grid.sync() takes no arguments" in msg, msg


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_block_votes_are_reducing_barriers(tmp_path: Path, backend: str) -> None:
    # __syncthreads_count / __syncthreads_and / __syncthreads_or
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            v = x[i] if i < len(x) else 0.0
            n = block.sync_count(v > 0.0)
            every = block.sync_and(v > -5.0)
            some = block.sync_or(i32(v))
            if i < len(out):
                out[i] = n + i32(every) * 1000 + i32(some) * 100000
        """, backend)
    assert "bar.red.popc.u32" in ptx and "bar.red.and.pred" in ptx and "bar.red.or.pred" in ptx


def test_block_votes_under_a_divergent_condition(tmp_path: Path) -> None:
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = block.sync_count(x[i] > 0.0)
        """)
    assert f"{at(6, 18)}: error: block.sync_count() under a condition that differs between threads" in msg, msg
    msg = compile_error(tmp_path, """
        def anyone(v: f32) -> bool:
            return block.sync_or(v > 0.0)

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(out) and i < len(x):
                out[i] = i32(anyone(x[i]))
        """)
    assert f"{at(9, 22)}: error: anyone() reaches block.sync_or() (at " in msg and "the block can deadlock" in msg, msg
    msg = compile_error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32]) -> None:
            n = block.sync_and()
        """)
    assert f"{at(4, 9)}: error: block.sync_and() takes one predicate" in msg, msg


def print_format(tmp_path: Path, body: str) -> list[str]:
    """The printf formats of the kernel's print() calls, from the IR."""
    from oxide_build.compile import build_ir

    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    program = build_ir(src, "kern")[1].program
    found: list[str] = []

    def walk(e: object) -> None:
        from oxide_build.ir import nodes as ir

        if isinstance(e, ir.Intrinsic) and e.name == "builtin.print":
            found.append(e.text)
        for child in ir.children(e) if hasattr(e, "ty") else ():
            walk(child)

    from oxide_build.ir import nodes as ir
    for fn in program.functions:
        stack = list(fn.body)
        while stack:
            s = stack.pop(0)
            if isinstance(s, ir.ExprStmt):
                walk(s.value)
            for attr in ("then", "orelse", "body"):
                stack.extend(getattr(s, attr, []) or [])
    return found


def test_print_formats(tmp_path: Path) -> None:
    formats = print_format(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: Slice[i32], u: Slice[u64], h: Slice[f16], d: Slice[f64]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(n) and i < len(u) and i < len(h) and i < len(d):
                print("thread", i, x[i], n[i] > 0, u[i], h[i], i8(n[i]), u32(n[i]), d[i])
                print(f"x={x[i]:.3f} n={n[i]:>6d}|{n[i]:<6d}|{u32(n[i]):08x} {u[i]:#x} {x[i]:+e} {n[i]:.2f} 100%", end="!")
                print(1, 2.5, "50%", sep=", ")
                print()
                print(f"{i}", f"{n[i]:X}{u[i]:o}{d[i]:G}{x[i]: 10.2f}{n[i]:c}")
        """)
    assert formats == [
        "thread %lld %g %s %llu %g %d %u %g\n",
        "x=%.3f n=%6d|%-6d|%08x %#llx %+e %.2f 100%%!",
        "%lld, %g, 50%%\n",
        "\n",
        "%lld %X%llo%G% 10.2f%c\n",
    ]


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_print_lowers_to_vprintf(tmp_path: Path, backend: str) -> None:
    ptx = compile_source(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: Slice[i32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(n):
                print("row", i, x[i], n[i] > 0)
                print()
        """, backend)
    import re

    assert re.search(r"\.extern \.func\s+\(\.param \.b32 func_retval0\) vprintf", ptx)
    assert len(re.findall(r"call\.uni\s*\(retval0\),\s*vprintf", ptx)) == 2
    assert "cvta.const.u64" in ptx
    # the format and the two strings a bool prints as, as constants
    formats = ["row %lld %g %s\n", "True", "False", "\n"]
    for text in formats:
        data = ", ".join(str(b) for b in text.encode())  # PTX leaves the trailing NUL implicit
        assert ("{" + data + "}") in ptx.replace("{ ", "{").replace(" }", "}"), text


def test_print_errors(tmp_path: Path) -> None:
    """Located errors; inside an f-string the column is the field's on Python 3.12 and the
    f-string's before, so those cases check the line only."""
    cases = [
        ("print(x)", 11, "print() cannot print Slice[f32]: print() in a kernel takes numbers, bools, string literals "
                         "and f-strings", "hint: print an element, e.g. x[i], or len(x)"),
        ('print(f"{x[0]:^8}")', None, "print(): {...:^8}: fill characters and '^'/'=' alignment are not available "
                                      "on the GPU", "hint: use '<' or '>' with a width"),
        ('print(f"{x[0]:d}")', None, "print(): the format type 'd' is for integers, and this value is f32",
         "hint: convert it, e.g. {i32(x):d}, or use f, e or g"),
        ('print(f"{len(x):,}")', None, "print(): {...:,}: digit grouping (',') is not available on the GPU", ""),
        ('print(f"{len(x):.3d}")', None, "print(): {...:.3d}: integers take no precision", ""),
        ('print(f"{len(x):b}")', None, "print(): the format type 'b' is not available on the GPU",
         "hint: use one of d, x, X, o, c, e, E, f, F, g, G"),
        ('print(f"{x[0]!r}")', None, "print(): the conversion !r is not available on the GPU", ""),
        ('print(f"{x[0]:{w}}")', None, "print(): a format spec must be written out, not computed", ""),
        ("print(x[0], file=None)", 17, "print() in a kernel does not take file=", ""),
        ("print(x[0], sep=s)", 21, "print(): sep= must be a string literal, got s", ""),
        ("print(*x)", 11, "print(*values) is not available on the GPU", ""),
        ('print(f"{x[0] > 0:>5}")', None, "print(): {...:>5} on a bool is not available on the GPU", ""),
        ('print(f"{len(x):<06d}")', None, "print(): {...:<06d}: '0' with '<' pads with zeros on the right in Python",
         "hint: drop the '0', or the '<'"),
    ]
    for call, col, message, hint in cases:
        msg = compile_error(tmp_path, f"""
        @ox.kernel
        def k(x: Slice[f32]) -> None:
            w = 3
            s = 2
            {call}
        """)
        where = at(6, col) if col is not None else at(6, 0).rsplit(":", 1)[0]
        assert f"{where}:" in msg and f"error: {message}" in msg, (call, msg)
        assert hint in msg, (call, msg)
