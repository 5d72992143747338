"""CUDA as people write it (issue 29): each pattern compiles to what CUDA means, or is refused
with a located message naming the spelling to use. The results on the GPU:
tests/test_cuda_patterns_gpu.py."""
from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import CompileOptions, build_ir, compile_module
from oxide_build.ir.printer import print_program

HEADER = ("import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, f32, f64, i32, u32, thread, block, "
          "grid\nT = ox.TypeVar(\"T\", f32, f64)\n")
HEADER_LINES = HEADER.count("\n")
KERNELS = Path(__file__).parent / "packages" / "cudapatterns" / "patk.py"


def source(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return src


def ir_text(tmp_path: Path, body: str) -> str:
    """The IR after the passes, of the kernels as written (not their fast instances: the
    launch-instances pass's copies without the checks that launch-invariant facts prove)."""
    _, frontend = build_ir(source(tmp_path, body), "kern")
    program = frontend.program
    return print_program(replace(program, functions=[fn for fn in program.functions if not fn.fast_of]))


def error(tmp_path: Path, body: str) -> str:
    src = source(tmp_path, body)
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    return str(info.value).replace(str(src), "kern.py")


def test_the_pattern_kernels_compile() -> None:
    compiled = compile_module(KERNELS, "patk", CompileOptions(archs=("sm_80", "sm_90"), cache=False), root=KERNELS.parent)
    assert {k.name for k in compiled.kernels} == {"literal_choices", "threadfence_sum", "half2_atomic_add"}
    assert "atom.global.inc.u32" in compiled.ptx["sm_90"] and "bar.red.or.pred" in compiled.ptx["sm_90"]


def test_a_conversion_in_a_generic_condition_is_a_value(tmp_path: Path) -> None:
    """Item 4: ``T(4.0)`` in a condition is a conversion, not a type test."""
    text = ir_text(tmp_path, """
        def escapes(xx: T, yy: T) -> bool:
            if xx + yy > T(4.0):
                return True
            return not (T(0.5) * xx < yy)

        @ox.kernel
        def k(x: Slice[T], out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = i32(escapes(x[i], x[i]))
        """)
    assert "if ((xx + yy) > 4.0:f32):" in text and "if ((xx + yy) > 4.0:f64):" in text
    # a real type test on the right is still the located error it was
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[T], out: DisjointSlice[i32]) -> None:
            if f32 is T:
                pass
        """)
    assert "error: write the TypeVar on the left of a type test" in msg


def test_conditionals_of_literals_take_their_type_from_their_use(tmp_path: Path) -> None:
    """Item 8: ``indicator: f32 = 1.0 if c else 0.0`` is f32, so is an unannotated one that meets
    f32, and one stored into an f32 element."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], ix: i32, out: DisjointSlice[f32], o2: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                v = i32(x[i])
                indicator: f32 = 1.0 if v == ix else 0.0
                w = 1.0 if v > ix else 0.5
                out[i] = x[i] * indicator + w * x[i]
                o2[i] = 3.0 if v < 0 else 1.0
                n = 1 if v > 0 else 2
                o2[i] = f32(n + ix)
        """)
    assert "indicator: f32 = select((v == ix), 1.0:f32, 0.0:f32)" in text
    assert "w: f32 = select((v > ix), 1.0:f32, 0.5:f32)" in text
    assert "select((v < 0:i32), 3.0:f32, 1.0:f32)" in text
    assert "n: i32 = select((v > 0:i32), 1:i32, 2:i32)" in text
    assert "f64" not in text
    # alone, it is f64 (as a literal is)
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f64], out: DisjointSlice[f64]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = x[i] * (2.0 if i > 3 else 0.5)
        """)
    assert "select((i64(i) > 3:i64), 2.0:f64, 0.5:f64)" in text or "2.0:f64, 0.5:f64)" in text, text
    # a float literal against an integer annotation is the literal's error
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            n: i32 = 1.0 if i > 0 else 0.0
        """)
    assert f"kern.py:{HEADER_LINES + 5}:5: error: assignment to 'n' needs i32, got the float literal 1.0" in msg, msg


def test_a_device_variable_through_global_names_the_spelling(tmp_path: Path) -> None:
    """Item 2: ``global retirement_count`` is refused with the spelling of a __device__ variable."""
    msg = error(tmp_path, """
        retirement_count = 0

        @ox.kernel
        def k(x: Slice[f32]) -> None:
            global retirement_count
            retirement_count += 1
        """)
    assert msg.startswith(f"kern.py:{HEADER_LINES + 6}:5: error: `global retirement_count` is not supported"), msg
    assert ("`retirement_count = ox.global_memory.array(1, u32)` at module level, used as `retirement_count[0]`"
            in msg and "ox.atomic.inc(retirement_count, 0, limit)" in msg)


FLAG_KERNEL = """
    @ox.kernel
    def k(x: Slice[f32], out: MutSlice[f32]) -> None:
        assert block.dim.x == 128
        am_last = ox.shared.array(1, ox.boolean)
        sdata = ox.shared.array(128, f32)
        if thread.idx.x == 0:
            am_last[0] = x[0] > 0.0
        block.sync()
        if {test}:
            sdata[thread.idx.x] = 1.0
            block.sync()
    """


def test_a_flag_in_shared_memory_tested_through_a_block_vote(tmp_path: Path) -> None:
    """Item 10(a): thread 0's flag, read by every thread, looks thread-dependent; the error says to
    test it through ``block.sync_or``, whose result is the block's one value."""
    msg = error(tmp_path, FLAG_KERNEL.format(test="am_last[0]"))
    assert f"kern.py:{HEADER_LINES + 12}:9: error: block.sync() under a condition that differs between threads" in msg
    assert "test it through a block vote, which every thread gets alike: `if block.sync_or(flag[0]):`" in msg
    ir_text(tmp_path, FLAG_KERNEL.format(test="block.sync_or(am_last[0])"))  # compiles


def test_barriers_and_exited_threads(tmp_path: Path) -> None:
    """Item 10(b), PTX's rule: a barrier waits for the threads that have not exited (bar.sync
    counts the CTA's threads; barriers waiting only on exited threads resolve). A kernel's early
    `return` exits its threads, so a barrier after it is fine; a thread that is still running and
    skips a barrier (a thread-dependent loop bound or branch) is refused."""
    ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            i = thread.index_1d()
            if i >= len(x):
                return
            block.sync()
        """)
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: MutSlice[f32]) -> None:
            for j in range(thread.idx.x):
                block.sync()
        """)
    assert f"kern.py:{HEADER_LINES + 5}:9: error: block.sync() under a condition that differs between threads" in msg


def test_a_local_array_declared_again_in_a_second_loop(tmp_path: Path) -> None:
    """Item 9 (arrays): C's ``float reg[4];`` in each of two loops; the second declaration names
    the same per-thread array. A shared array declared twice still needs a new name."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            acc: f32 = 0.0
            for a in range(2):
                reg = ox.local.array(4, f32)
                for j in range(4):
                    reg[j] = x[0] * f32(j)
                acc += reg[3]
            for b in range(2):
                reg = ox.local.array(4, f32)
                for j in range(4):
                    reg[j] = x[0] + f32(j)
                acc += reg[2]
            if i < len(out):
                out[i] = acc
        """)
    assert text.count("local f32[4] reg") == 1 or text.count("reg: local") <= 1, text
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32]) -> None:
            for a in range(2):
                t = ox.shared.array(4, f32)
            for b in range(2):
                t = ox.shared.array(4, f32)
        """)
    assert f"kern.py:{HEADER_LINES + 7}:9: error: 't' is already defined; an array needs a name of its own" in msg


def test_reinterpreting_an_array_is_refused_naming_the_spelling(tmp_path: Path) -> None:
    """Item 11: ``arr.view(f32x4)`` is refused, naming what works: a second dynamic shared
    declaration of another type (every one starts at the same address, as in CUDA)."""
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32]) -> None:
            buf = ox.shared.dynamic(f32)
            v = buf.view(ox.f32x4)
        """)
    assert f"kern.py:{HEADER_LINES + 5}:9: error: buf.view(...): reinterpreting the elements" in msg, msg
    assert "every ox.shared.dynamic(T) starts at the same address, as CUDA's extern __shared__ arrays do" in msg
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            buf = ox.shared.dynamic(f32)
            buf4 = ox.shared.dynamic(ox.f32x4)
            if i < len(out):
                out[i] = buf4[0].y + buf[1]
        """)
    assert "buf4" in text


def test_an_untyped_helper_parameter_names_the_annotation_of_the_call(tmp_path: Path) -> None:
    """Item 1 (refused, with the spelling): ``def block_sum(v: f32, red)`` called with a shared
    array says what to write, from the call's argument."""
    msg = error(tmp_path, """
        def block_sum(v: f32, red) -> f32:
            red[thread.idx.x] = v
            return red[0]

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            red = ox.shared.array(128, f32)
            if i < len(x):
                out[i] = block_sum(x[i], red)
        """)
    assert f"kern.py:{HEADER_LINES + 2}:23: error: parameter 'red' of block_sum() has no type annotation" in msg, msg
    assert f"hint: annotate it with what the call at kern.py:{HEADER_LINES + 11} passes: `red: MutSlice[f32]`" in msg


def test_half2_atomics(tmp_path: Path) -> None:
    """Item 12: ``ox.atomic.add(h, k, v)`` with an ``f16x2`` ``v`` is CUDA's atomicAdd on
    ``__half2`` (elements 2k, 2k + 1, bounds-checked at 2k + 1)."""
    src = source(tmp_path, """
        @ox.kernel
        def k(x: Slice[ox.f16], acc: MutSlice[ox.f16]) -> None:
            i = thread.index_1d()
            if 2 * i + 1 < len(x):
                v = ox.f16x2(x[2 * i], x[2 * i + 1])
                prev = ox.atomic.add(acc, i % 4, v)
                sh = ox.shared.array(8, ox.f16)
                ox.atomic.add(sh, 1, prev, scope="block")
        """)
    ptx = compile_module(src, "kern", CompileOptions(archs=("sm_80",), cache=False), root=tmp_path).ptx["sm_80"]
    assert "atom.gpu.global.add.noftz.f16x2" in ptx and "atom.cta.shared.add.noftz.f16x2" in ptx


BF16_ATOMICS = """
    @ox.kernel
    def k(x: Slice[ox.bf16], acc: MutSlice[ox.bf16], total: MutSlice[ox.bf16]) -> None:
        i = thread.index_1d()
        if 2 * i + 1 < len(x):
            prev = ox.atomic.add(acc, i % 4, ox.bf16x2(x[2 * i], x[2 * i + 1]))
            sh = ox.shared.array(8, ox.bf16)
            ox.atomic.add(sh, 1, prev, scope="block")
            ox.atomic.add(acc, 5, prev, scope="system")
            ox.atomic.add(total, 0, x[2 * i])
    """


@pytest.mark.parametrize("opt_level", [0, 3])
def test_bf16x2_atomics_are_native_from_sm_90_and_a_cas_loop_before(tmp_path: Path, opt_level: int) -> None:
    """Item 12: on ``bf16`` elements the pair add is CUDA's atomicAdd on ``__nv_bfloat162``:
    PTX's ``atom.add.noftz.bf16x2`` on sm_90 and newer (and the scalar add ``atom.add.noftz.bf16``),
    a 32-bit compare-and-swap loop on sm_80, chosen per arch by ``__nvvm_reflect("__CUDA_ARCH")``
    in one LLVM module, even unoptimized; every arch's PTX assembles (the cubins)."""
    src = source(tmp_path, BF16_ATOMICS)
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_80", "sm_90", "sm_120"), opt_level=opt_level,
                                                          cache=False), root=tmp_path)
    assert set(compiled.cubins) == {"sm_80", "sm_90", "sm_120"}
    for arch in ("sm_90", "sm_120"):
        ptx = compiled.ptx[arch]
        for op in ("atom.gpu.global.add.noftz.bf16x2", "atom.cta.shared.add.noftz.bf16x2",
                   "atom.sys.global.add.noftz.bf16x2", "atom.gpu.global.add.noftz.bf16 "):
            assert op in ptx, (arch, op)
        assert ".cas." not in ptx.replace("atom.relaxed.sys.cas.b64", ""), arch  # that one: the error record's
    old = compiled.ptx["sm_80"]
    assert "add.noftz.bf16" not in old and "__nvvm_reflect" not in old
    for op in ("atom.gpu.global.cas.b32", "atom.cta.shared.cas.b32", "atom.sys.global.cas.b32", "cas.b16"):
        assert op in old.replace("atom.relaxed.gpu.global.cas.b32", "atom.gpu.global.cas.b32"), op


def test_pair_atomics_other_than_add_are_refused_with_the_lane_spelling(tmp_path: Path) -> None:
    msg = error(tmp_path, """
        @ox.kernel
        def k(acc: MutSlice[ox.bf16]) -> None:
            ox.atomic.max(acc, 0, ox.bf16x2(ox.bf16(1.0)))
        """)
    assert f"kern.py:{HEADER_LINES + 4}:27: error: atomic.max of a bf16x2 on bf16 elements is not supported" in msg, msg
    assert "CUDA has only atomicAdd on pairs: write ox.atomic.max(h, 2 * k, v.x)" in msg
    msg = error(tmp_path, """
        @ox.kernel
        def k(acc: MutSlice[ox.bf16]) -> None:
            ox.atomic.add(acc, 0, ox.f16x2(ox.f16(1.0)))
        """)
    assert "error: atomic.add of a f16x2 on bf16 elements is not supported" in msg, msg
    assert "hint: a pair atomic is ox.atomic.add(h, k, v) with v an f16x2 and h a view of f16 elements" in msg


def test_a_loop_variable_of_another_type_is_a_new_variable(tmp_path: Path) -> None:
    """Item 9 (loop variables): ``for k in range(len(x))`` (i64) then ``for k in range(n)`` (i32):
    C's ``for (int k ...)`` declares a new k; so does the second loop."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            acc: f32 = 0.0
            for k in range(len(x)):
                acc += x[k]
            for k in range(n):
                acc += f32(k)
            if i < len(out):
                out[i] = acc
        """)
    assert "k: i64 = 0:i64" in text and f"k${HEADER_LINES + 8}: i32 = 0:i32" in text, text
    # a loop that assigns its variable keeps the old rule (one variable, one type)
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: i32) -> None:
            for k in range(len(x)):
                pass
            for k in range(n):
                k = k + 1
        """)
    assert "error: loop variable 'k' is i64 but the range is i32" in msg, msg


def test_a_run_time_shuffle_width_and_an_int_mask(tmp_path: Path) -> None:
    """Probe 2 (cuda-samples shfl_scan): ``__shfl_up_sync(mask, v, i, width)`` with a run-time
    width builds PTX's c operand at run time, ((32 - width) << 8) | clamp, as CUDA's header does;
    an ``i32`` mask (``(1 << n) - 1``) is taken bit for bit; a constant width that is not a power
    of two is still refused."""
    src = source(tmp_path, """
        @ox.kernel
        def k(x: Slice[i32], width: i32, out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                mask = (1 << (block.dim.x // 32)) - 1
                out[i] = ox.warp.shfl_up(x[i], 1, width) + ox.warp.shfl_down(x[i], 2, width, mask=mask)
        """)
    ptx = compile_module(src, "kern", CompileOptions(archs=("sm_90",), cache=False), root=tmp_path).ptx["sm_90"]
    shuffles = [line.split() for line in ptx.splitlines() if "shfl.sync" in line]
    # two shuffles in each copy of the body (bounds-elimination versions the kernel on len(out) >= len(x))
    assert len(shuffles) in (2, 4) and all(s[-2].startswith("%r") for s in shuffles), shuffles  # c in a register
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[i32], out: DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = ox.warp.shfl_up(x[i], 1, 12)
        """)
    assert f"kern.py:{HEADER_LINES + 6}:43: error: the shuffle width must be a power of two ≤ 32" in msg, msg


def test_a_thread_index_decoded_in_place_is_a_plain_integer(tmp_path: Path) -> None:
    """Probe 2 (llm.c repkv): ``int idx = blockIdx.x * blockDim.x + threadIdx.x; ... idx /= HD;``
    works: a name of thread.index_1d() that the function assigns again is an i64 from the start;
    a DisjointSlice write through it is refused, saying why."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], hd: i32, out: MutSlice[f32]) -> None:
            idx = thread.index_1d()
            if idx >= len(out):
                return
            flat = idx
            d = idx % hd
            idx //= hd
            with ox.unsafe():
                out[flat] = x[idx * hd + d]
        """)
    assert "idx: i64 = i64(" in text, text
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            idx = thread.index_1d()
            flat = idx
            idx //= 4
            out[idx] = x[flat]
        """)
    assert "(it held thread.index_1d(), but the function assigns it again, so it is a plain i64)" in msg, msg
    assert "hint: keep thread.index_1d() in a name that is never assigned again" in msg


def test_a_variable_declared_in_a_sibling_block_with_another_type_is_a_new_variable(tmp_path: Path) -> None:
    """Probe 2 (cuda-samples quasirandomGenerator): ``unsigned int d`` in the if-branch's loop
    and ``float d`` in the else-branch are two variables in C; so they are here, from the second
    assignment to the end of its block. Where the old variable is read after the block, or was
    assigned in an enclosing block (C would assign it), the type error stands."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[u32], out: MutSlice[f32], n: u32) -> None:
            tid = thread.index_1d()
            if len(x) > 0:
                for pos in range(tid, n, 64):
                    d = x[pos]
                    with ox.unsafe():
                        out[pos] = f32(d)
            else:
                d = f32(tid) * 0.5
                for pos in range(tid, n, 64):
                    with ox.unsafe():
                        out[pos] = d
                    d += 1.0
        """)
    assert "d: u32 = " in text and f"d${HEADER_LINES + 11}: f32 = " in text, text
    assigned_in_the_branch = """
        @ox.kernel
        def k(x: Slice[u32], out: MutSlice[f32]) -> None:
            d = x[0]
            if len(x) > 1:
                d = f32(len(x)) * 0.5
    """
    for read in ("""
            with ox.unsafe():
                out[0] = f32(d)
    """, """
                with ox.unsafe():
                    out[1] = d
    """):  # the old variable read after the block; the one assigned in the enclosing block
        msg = error(tmp_path, assigned_in_the_branch + read)
        assert f"kern.py:{HEADER_LINES + 6}:9: error: assignment to 'd' needs u32, got f32" in msg, msg


VECTOR_VIEW_HELPERS = """
    def total(v: Slice[ox.f32x4]) -> f32:
        s = ox.f32x4(0.0)
        for k in range(len(v)):
            s = s + v[k]
        return s.x + s.y + s.z + s.w

    def bump(v: MutSlice[ox.f32x4], k: i32) -> None:
        e = v[k]
        e.w = e.w + 1.0
        with ox.unsafe():
            v[k] = e

    @ox.kernel
    def k(out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        t = ox.shared.array(64, ox.f32x4)
        if thread.idx.x < 64:
            t[thread.idx.x] = ox.f32x4(f32(thread.idx.x))
        block.sync()
        if thread.idx.x == 0:
            bump(t, 3)
        block.sync()
        if i < len(out):
            out[i] = total(t) + total(t[2:5])
    """


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_a_device_function_takes_a_view_of_vector_elements(tmp_path: Path, backend: str) -> None:
    """Item 12 (views of vector elements; probe 2's fp16ScalarProduct): a helper's
    ``Slice[f32x4]`` / ``MutSlice[f16x2]`` parameter takes a shared array of vectors (CUDA's
    ``__device__ void f(float4* v)`` called with a ``__shared__ float4 v[N]``), or a slice of it;
    an element is one 16-byte access, bounds-checked against the count of vectors."""
    src = source(tmp_path, VECTOR_VIEW_HELPERS)
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90",), backend=backend, cache=False), root=tmp_path)
    ptx = compiled.ptx["sm_90"]
    assert compiled.cubins["sm_90"]
    assert "ld.shared.v4" in ptx and "st.shared.v4" in ptx, ptx


def test_atomics_on_a_view_of_vector_elements_are_refused(tmp_path: Path) -> None:
    """Atomics take scalar elements: on a view of vectors they are a located error (a kernel
    parameter of vector elements works since: tests/test_vector_views.py)."""
    msg = error(tmp_path, """
        def f(v: MutSlice[ox.f32x4]) -> None:
            ox.atomic.add(v, 0, ox.f32x4(1.0))

        @ox.kernel
        def k(out: DisjointSlice[f32]) -> None:
            t = ox.shared.array(4, ox.f32x4)
            f(t)
        """)
    assert "error: atomics need elements of i32, u32, i64, u64, f32, f64, f16, bf16, got f32x4" in msg, msg


def test_warp_size_is_cudas_warpsize(tmp_path: Path) -> None:
    """``warpSize`` is ``warp.size``: the i32 constant 32 (folded: no special register read)."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            lane = thread.idx.x % ox.warp.size
            if i < len(x) and i < len(out):
                out[i] = x[i] + f32(lane)
        """)
    assert "lane: i32 = (%tid.x %u+ 32:i32)" in text, text


def test_a_nested_conditional_of_literals_takes_its_type_from_its_use(tmp_path: Path) -> None:
    """``float s = acc > 0 ? 1.0f : (acc < 0 ? -1.0f : 0.0f);`` (a sign): the nested choice of
    literals is f32 where it meets an f32, as the single one is (item 8)."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(out):
                s = 1.0 if x[i] > 0 else (-1.0 if x[i] < 0 else 0.0)
                out[i] = x[i] * s
        """)
    assert "f64" not in text, text


def test_an_integer_atomic_operand_converts_as_a_store_does(tmp_path: Path) -> None:
    """``atomicAdd(&counter, __popc(mask))``: an i32 operand of a u32 counter converts as C
    converts the argument (as a store into the element does); a float operand of an integer
    element is still refused."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(mask: u32, counter: MutSlice[u32]) -> None:
            ox.atomic.add(counter, 0, ox.bits.popc(mask))
        """)
    assert "atomic.add[gpu](counter, 0:i64?, u32(bits.popc(mask):i32))" in text, text
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], counter: MutSlice[i32]) -> None:
            ox.atomic.add(counter, 0, x[0])
        """)
    assert "error: the atomic.add operand needs i32, got f32" in msg, msg


def test_an_integer_literal_local_that_accumulates_floats_is_a_float(tmp_path: Path) -> None:
    """C's ``float sum = 0;`` ported as ``sum = 0`` then ``sum += a * b`` with f32 values: the
    local is an f32 from the start (as the Python reads), not an i64 the sum cannot go into."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            sum = 0
            for j in range(len(x)):
                sum += x[j] * x[j]
            if i < len(out):
                out[i] = sum
        """)
    assert "sum: f32 = 0.0:f32" in text, text


def test_a_thread_coordinate_passes_as_unsigned(tmp_path: Path) -> None:
    """C's ``unsigned int tid = threadIdx.x;`` passed to an ``unsigned`` parameter: thread.idx.x
    (and a local assigned once from it) is never negative, so its i32 converts to u32 without
    loss; another i32 still needs u32(...)."""
    text = ir_text(tmp_path, """
        def twice(t: u32) -> u32:
            return t * 2

        @ox.kernel
        def k(out: DisjointSlice[u32]) -> None:
            i = thread.index_1d()
            tid = thread.idx.x
            if i < len(out):
                out[i] = twice(tid) + twice(block.dim.x)
        """)
    assert "twice__u32(u32(tid))" in text and "twice__u32(u32(%ntid.x))" in text, text
    msg = error(tmp_path, """
        def twice(t: u32) -> u32:
            return t * 2

        @ox.kernel
        def k(n: i32, out: DisjointSlice[u32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                out[i] = twice(n)
        """)
    assert "error: argument 't' of twice() needs u32, got i32" in msg, msg


def test_a_loop_over_a_tuple_of_constants_is_unrolled(tmp_path: Path) -> None:
    """``for off in (16, 8, 4, 2, 1):`` (a warp reduction's offsets, C's ``for (int off = 16; off
    > 0; off >>= 1)``): the body once per value, the variable a constant as in static_range; a
    tuple element that is not a compile-time integer is a located error."""
    text = ir_text(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(out):
                v = x[i]
                for off in (16, 8, 4, 2, 1):
                    v += ox.warp.shfl_xor(v, off)
                out[i] = v
        """)
    for off in (16, 8, 4, 2, 1):
        assert f"shfl_xor(v, {off}:i32, 32:i32)" in text, text
    msg = error(tmp_path, """
        @ox.kernel
        def k(x: Slice[f32], n: i32, out: DisjointSlice[f32]) -> None:
            for off in (16, n):
                pass
        """)
    assert f"kern.py:{HEADER_LINES + 4}:21: error: a loop over a tuple needs compile-time integers, got n" in msg, msg


def test_pythons_round_and_pow_name_the_kernel_spelling(tmp_path: Path) -> None:
    for call, hint in (("round(x[i])", "ox.math.rint(x) rounds the same way to a float"),
                       ("pow(x[i], 2.0)", "use ox.math.pow(x, y)")):
        msg = error(tmp_path, f"""
            @ox.kernel
            def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
                i = thread.index_1d()
                if i < len(x) and i < len(out):
                    out[i] = f32({call})
            """)
        assert f"error: unknown function '{call.split('(')[0]}'" in msg and hint in msg, msg


def test_a_local_type_alias_converts_as_the_type(tmp_path: Path) -> None:
    """C++'s ``using acc_t = at::opmath_type<scalar_t>;`` inside the kernel: ``acc_t =
    ox.acc_type(T)`` (or ``= T``, ``= f32``) names the type for the rest of the body, so
    ``acc_t(x)`` converts; a value assigned to that name later is refused."""
    text = ir_text(tmp_path, """
        H = ox.TypeVar("H", ox.f16, f32)

        @ox.kernel
        def k(a: Slice[H], out: MutSlice[H], alpha: f32) -> None:
            i = thread.index_1d()
            acc_t = ox.acc_type(H)
            if i < len(a) and i < len(out):
                v = acc_t(a[i]) * acc_t(alpha)
                with ox.unsafe():
                    out[i] = H(v)
        """)
    assert "v: f32 = (f32(a[i]" in text and text.count("kernel k") == 2, text
    msg = error(tmp_path, """
        @ox.kernel
        def k(a: Slice[f32]) -> None:
            acc_t = f32
            acc_t = 1.0
        """)
    assert f"kern.py:{HEADER_LINES + 5}:5: error: 'acc_t' names a type in this function" in msg, msg


def test_an_f64_made_only_by_a_float_literal_takes_the_float_it_meets(tmp_path: Path) -> None:
    """Probe 2's upsample port (PyTorch's ``scale * (dst_index + static_cast<accscalar_t>(0.5))``
    written with ``0.5``): ``i + 0.5`` with an integer ``i`` is f64, as in C, but meeting an f32 it
    is computed in f32, as ``0.5 * x`` is; nested with more integers and literals too, in a
    comparison too. An explicit f64, or an f64 partner, keeps f64; alone it stays f64."""
    text = ir_text(tmp_path, """
        def source_index(scale: f32, dst_index: i32) -> f32:
            return scale * (dst_index + 0.5) - 0.5

        @ox.kernel
        def k(x: Slice[f32], d: f64, n: i32, out: DisjointSlice[f32], wide: DisjointSlice[f64]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < len(out) and i < len(wide):
                y = ((n * 0.5 + 2) * 3 - n) * x[i]
                if (n + 0.25) < x[i]:
                    y = y + source_index(x[i], n)
                out[i] = y
                wide[i] = d * (n + 0.5) + f32(1.0) * (f64(n) + 0.5)
        """)
    source_index = text[text.index("source_index"):text.index("kernel k")]
    assert "return math.fma(scale, (f32(dst_index) + 0.5:f32), (-0.5:f32)):f32" in source_index, source_index
    assert "f64" not in source_index
    kernel = text[text.index("kernel k"):]
    assert ("y: f32 = (math.fma(math.fma(f32(n), 0.5:f32, 2.0:f32):f32, 3.0:f32, (-f32(n))):f32 * x[i])"
            in kernel), kernel
    assert "if ((f32(n) + 0.25:f32) < x[i]):" in kernel, kernel
    # with an f64 partner, and an explicit f64 meeting an f32: f64 as before
    assert "math.fma(f64(1.0:f32), (f64(n) + 0.5:f64), (d * (f64(n) + 0.5:f64))):f64" in kernel, kernel
    msg = error(tmp_path, """
        @ox.kernel
        def k(n: i32, out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(out):
                r = n + 0.5
                out[i] = r
        """)
    assert f"kern.py:{HEADER_LINES + 7}:18: error: store into out needs f32, got f64" in msg, msg
