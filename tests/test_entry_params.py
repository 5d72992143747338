"""Kernel entry points declare only the parameters their code reads
(oxide_build/lower/entry_params.py, decided on the LLVM module before code generation): which ones
the compiled PTX keeps on both backends, the
manifest's record of them (KernelSpec.param_slots, index32_param_slots; absent in older
manifests: every parameter), and both launch paths passing exactly those slots of the full block
they pack (the Python path and the C launcher, with the fake driver of tests/fakes.py). Results on
the GPU: tests/test_index32_gpu.py (idx32k.mixed) and tests/test_lltm_gpu.py."""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    TADD_PARAMS,
    TENSOR_KERNELS,
    TENSOR_SOURCE,
    CFakeDriver,
    FakeArray,
    FakeDriver,
    c_driver,
    fake_driver,
    fresh_runtime,
    make_module,
    paths,
    slot_types,
)

from oxide.abi.manifest import entry_param_starts
from oxide.runtime import launcher
from oxide.runtime.manifest import KernelSpec, ManifestError, ModuleManifest, ParamSpec
from llvmlite import ir as ll

from oxide_build.compile import CompileOptions, CompiledModule, compile_module
from oxide_build.lower.entry_params import drop_unread_params, parameter_block_bytes, read_params

__all__: list[str] = []

ROOT = Path(__file__).resolve().parent.parent
needs_launcher = pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")

_BYTES = {".u64": 8, ".s64": 8, ".b64": 8, ".f64": 8, ".u32": 4, ".s32": 4, ".b32": 4, ".f32": 4}


def _declared(ptx: str, entry: str) -> list[str]:
    """The PTX type of each parameter ``entry`` declares, in order (named ``<entry>_param_<i>``,
    i = 0, 1, ...)."""
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\(([^)]*)\)", ptx)
    assert m is not None, entry
    declarations = [d.strip() for d in m.group(1).split(",") if d.strip()]
    assert [d.split()[-1] for d in declarations] == [f"{entry}_param_{i}" for i in range(len(declarations))]
    return [next(t for t in d.split()[1:] if t in _BYTES) for d in declarations]


def _block_bytes(types: list[str]) -> int:
    """The size of a parameter block of these types (each aligned to its size)."""
    size = 0
    for t in types:
        n = _BYTES[t]
        size = -(-size // n) * n + n
    return size


@pytest.fixture(scope="module", params=["nvptx", "nvvm"])
def lltm(request: pytest.FixtureRequest) -> CompiledModule:
    return compile_module(ROOT / "examples" / "lltm" / "kernels.py", "kernels",
                          CompileOptions(archs=("sm_80", "sm_90"), backend=request.param, link_cubins=False))


def _tensor_slots(n: int, shapes_of: int) -> list[int]:
    """Pointer and strides of each of ``n`` 2-D tensors, and the shape of tensor ``shapes_of``."""
    return sorted({5 * t for t in range(n)} | {5 * t + k for t in range(n) for k in (3, 4)}
                  | {5 * shapes_of + 1, 5 * shapes_of + 2})


def test_the_lltm_backward_reads_each_tensors_pointer_and_strides_and_one_shape(lltm: CompiledModule) -> None:
    """13 tensors: the asserts are launch preconditions, so only d_old_cell's shape (the guard)
    is read; the index32 instance reads no last-axis stride either (the runtime gives it only
    contiguous rows: 1), so its block is 13 pointers and row strides and one shape, smaller than
    the CUDA C++ kernel's 216 bytes (it was 312, then 216)."""
    kept = _tensor_slots(13, shapes_of=9)
    kept32 = [i for i in kept if i % 5 != 4]
    (spec,) = [k for k in lltm.kernels if k.symbol == "lltm_backward_f32"]
    assert spec.param_slots == tuple(kept) and spec.index32_param_slots == tuple(kept32)
    for arch in ("sm_80", "sm_90"):
        narrow = _declared(lltm.ptx[arch], "lltm_backward_f32__index32")
        wide = _declared(lltm.ptx[arch], "lltm_backward_f32")
        assert len(narrow) == len(kept32) and len(wide) == len(kept)
        assert narrow == [".u64" if i % 5 == 0 else ".u32" for i in kept32]
        assert _block_bytes(narrow) == 12 * 16 + (8 + 4 + 4 + 4) == 212 == lltm.param_bytes["lltm_backward_f32__index32"]
        assert _block_bytes(wide) == 13 * 3 * 8 + 2 * 8 == 328 == lltm.param_bytes["lltm_backward_f32"]  # was 520


def test_the_lltm_forward_reads_new_h_shape_alone(lltm: CompiledModule) -> None:
    kept = tuple(_tensor_slots(9, shapes_of=4))
    kept32 = tuple(i for i in kept if i % 5 != 4)  # no last-axis stride in the index32 instance
    for k in lltm.kernels:
        if k.name == "lltm_forward":
            assert k.param_slots == kept and k.index32_param_slots == kept32
            assert len(_declared(lltm.ptx["sm_90"], k.index32_symbol)) == len(kept32)


READS_ALL = """
import oxide as ox
from oxide import DisjointSlice, Slice, Tensor, f32, i64, thread


@ox.kernel
def every(x: Tensor[f32, 2], s: f32, v: Slice[f32], out: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x.shape[0] + 3 * x.shape[1] + 5 * x.strides[0] + 7 * x.strides[1] + i64(s) + len(v) + i64(v[0] + x[0, 0])


@ox.kernel
def unread(x: Tensor[f32, 2], s: f32, v: Slice[f32], out: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = i
"""


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_a_kernel_that_reads_every_parameter_keeps_them_all_and_one_that_reads_none_drops_them(
        tmp_path: Path, backend: str) -> None:
    src = tmp_path / "reads.py"
    src.write_text(textwrap.dedent(READS_ALL))
    compiled = compile_module(src, "reads", CompileOptions(archs=("sm_90",), backend=backend))
    specs = {k.name: k for k in compiled.kernels}
    # the index32 instance reads every parameter but x's last stride, which is 1 there (index32.h)
    assert specs["every"].param_slots is None and specs["every"].index32_param_slots == (0, 1, 2, 3, 5, 6, 7, 8, 9)
    assert len(_declared(compiled.ptx["sm_90"], "every")) == len(entry_param_starts(specs["every"].params)) == 10
    assert len(_declared(compiled.ptx["sm_90"], "every__index32")) == 9
    # only out's pointer and length (the guard) are read
    assert specs["unread"].param_slots == specs["unread"].index32_param_slots == (8, 9)
    assert _declared(compiled.ptx["sm_90"], "unread__index32") == [".u64", ".u64"]
    assert compiled.cubins["sm_90"]  # ptxas took the PTX without them


def test_mixed_kernel_keeps_exactly_what_it_reads() -> None:
    """tests/packages/index32k's ``mixed`` (run on the GPU by tests/test_index32_gpu.py)."""
    compiled = compile_module(ROOT / "tests" / "packages" / "index32k" / "idx32k.py", "idx32k",
                              CompileOptions(archs=("sm_90",), link_cubins=False))
    (spec,) = [k for k in compiled.kernels if k.name == "mixed"]
    # a: 0 ptr, 1-2 shape, 3-4 strides; unused: 5; b: 6, 7-8, 9-10; bias: 11 ptr, 12 len; s: 13; out: 14-18;
    # the index32 instance reads no last-axis stride (4, 10, 18: 1 there)
    assert spec.param_slots == (0, 3, 4, 6, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18)
    assert spec.index32_param_slots == (0, 3, 6, 8, 9, 11, 13, 14, 15, 16, 17)


# --- the analysis of the LLVM module ------------------------------------------------------------

I64 = ll.IntType(64)
GLOBAL_PTR = ll.PointerType(ll.FloatType(), 1)


def _kernel(module: ll.Module, name: str, types: list[ll.Type]) -> tuple[ll.Function, ll.IRBuilder]:
    fn = ll.Function(module, ll.FunctionType(ll.VoidType(), types), name)
    return fn, ll.IRBuilder(fn.append_basic_block("entry"))


def test_an_argument_stored_into_a_local_nobody_reads_is_not_read() -> None:
    module = ll.Module()
    k, b = _kernel(module, "k", [I64, I64, GLOBAL_PTR])
    dead, kept = b.alloca(I64), b.alloca(I64)
    b.store(k.args[0], dead)  # the lowering stores every scalar parameter into its local
    b.store(b.add(k.args[1], ll.Constant(I64, 1)), kept)
    b.store(b.sitofp(b.load(kept), ll.FloatType()), k.args[2])  # an effect reads it
    b.ret_void()
    assert read_params(module.functions)[k] == frozenset({1, 2})


def test_a_call_reads_what_the_function_it_calls_reads_and_an_extern_reads_everything() -> None:
    module = ll.Module()
    device = ll.Function(module, ll.FunctionType(ll.VoidType(), [GLOBAL_PTR, I64]), "device")
    device.linkage = "internal"
    db = ll.IRBuilder(device.append_basic_block("entry"))
    db.store(ll.Constant(ll.FloatType(), 1.0), device.args[0])  # the pointer, not the length
    db.ret_void()
    extern = ll.Function(module, ll.FunctionType(ll.VoidType(), [I64]), "extern_fn")
    k, b = _kernel(module, "k", [GLOBAL_PTR, I64, I64])
    b.call(device, [k.args[0], k.args[1]])
    b.call(extern, [k.args[2]])
    b.ret_void()
    reads = read_params(module.functions)
    assert reads[device] == frozenset({0}) and reads[k] == frozenset({0, 2}) and extern not in reads


def test_a_branch_reads_its_condition_and_a_dead_computation_reads_nothing() -> None:
    module = ll.Module()
    k, b = _kernel(module, "k", [I64, I64])
    b.add(k.args[1], k.args[1])  # a value nothing uses
    then = k.append_basic_block("then")
    done = k.append_basic_block("done")
    b.cbranch(b.icmp_signed("<", k.args[0], ll.Constant(I64, 4)), then, done)
    b.position_at_end(then)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    assert read_params(module.functions)[k] == frozenset({0})


def test_a_volatile_load_reads_its_address_even_when_its_value_is_unused() -> None:
    """The lowering's poll (``load volatile``, lower/llvm.py's _VolatileLoad) stays in the code."""

    class VolatileLoad(ll.LoadInstr):  # type: ignore[misc]
        volatile = True

    module = ll.Module()
    k, b = _kernel(module, "k", [GLOBAL_PTR, GLOBAL_PTR])
    b.load(k.args[0])  # a plain load nothing uses: dead
    b.block.instructions.append(VolatileLoad(b.block, k.args[1], typ=ll.FloatType()))
    b.ret_void()
    assert read_params(module.functions)[k] == frozenset({1})


def test_inline_assembly_reads_its_operands_only_when_live_or_marked_with_an_effect() -> None:
    """The NVVM dialect writes ``freeze`` as an opaque ``mov`` (lower/llvm.py): dead when its value
    is unused, as the NVPTX form's ``freeze`` is, so both forms keep the same parameters. Inline
    assembly with ``sideeffect`` or a memory clobber stays."""
    module = ll.Module()
    fnty = ll.FunctionType(I64, [I64])
    k, b = _kernel(module, "k", [I64, I64, I64, I64])
    b.call(ll.InlineAsm(fnty, "mov.b64 $0, $1;", "=l,l", side_effect=False), [k.args[0]])  # dead
    b.call(ll.InlineAsm(fnty, "mov.b64 $0, $1;", "=l,l", side_effect=True), [k.args[1]])
    b.call(ll.InlineAsm(fnty, "ld.volatile.u64 $0, [$1];", "=l,l,~{memory}", side_effect=False), [k.args[2]])
    used = b.call(ll.InlineAsm(fnty, "mov.b64 $0, $1;", "=l,l", side_effect=False), [k.args[3]])
    b.store(used, b.inttoptr(ll.Constant(I64, 64), I64.as_pointer(1)))
    b.ret_void()
    assert read_params(module.functions)[k] == frozenset({1, 2, 3})


def test_both_backends_keep_the_same_parameters_where_a_branch_is_dead(tmp_path: Path) -> None:
    """A fuzzer find (seed 26103, #8159): ``1.0 if True else exp(z)`` left in the NVVM form a
    dead ``freeze`` of an index computed from a tensor's strides, which kept them there but not in
    the NVPTX form; libNVVM builds refused the module as an internal error."""
    source = (ROOT / "examples" / "lltm" / "kernels.py").read_text(encoding="utf-8")
    assert "return 1.0 if z > 0.0 else ox.math.exp(z)" in source
    (tmp_path / "dead_branch.py").write_text(
        source.replace("return 1.0 if z > 0.0 else ox.math.exp(z)", "return 1.0 if True else ox.math.exp(z)"),
        encoding="utf-8")
    kept = {}
    for backend in ("nvptx", "nvvm"):
        compiled = compile_module(tmp_path / "dead_branch.py", "dead_branch",
                                  CompileOptions(archs=("sm_80", "sm_90"), backend=backend, link_cubins=False,
                                                 cache=False), root=tmp_path)
        kept[backend] = {k.name: (k.param_slots, k.index32_param_slots) for k in compiled.kernels}
    assert kept["nvptx"] == kept["nvvm"]


def test_dropping_unread_arguments_changes_the_entry_signature_and_names_the_kept_positions() -> None:
    module = ll.Module()
    k, b = _kernel(module, "k", [I64, GLOBAL_PTR, I64])
    b.store(b.sitofp(k.args[2], ll.FloatType()), k.args[1])
    b.ret_void()
    everything, _ = _kernel(module, "everything", [GLOBAL_PTR])
    ll.IRBuilder(everything.entry_basic_block).store(ll.Constant(ll.FloatType(), 0.0), everything.args[0])
    ll.IRBuilder(everything.entry_basic_block).ret_void()
    kept = drop_unread_params([k, everything], read_params(module.functions))
    assert kept == {"k": (1, 2)}  # only entries that lost some
    assert [a.type for a in k.args] == [GLOBAL_PTR, I64] and k.ftype.args == (GLOBAL_PTR, I64)
    assert 'define void @"k"(float addrspace(1)* %".2", i64 %".3")' in str(module)


def test_the_parameter_block_counts_each_parameter_at_its_alignment() -> None:
    """What `oxide inspect` prints as "params": a TMA map (128 bytes aligned to 64), then 8 + 8 + 4."""
    module = ll.Module()
    k, b = _kernel(module, "k", [ll.PointerType(ll.ArrayType(ll.IntType(8), 128)), I64, GLOBAL_PTR, ll.IntType(32)])
    k.args[0].add_attribute("byval")
    k.args[0].attributes.align = 64
    assert parameter_block_bytes(k) == 148
    small, _ = _kernel(module, "small", [ll.IntType(8), ll.HalfType(), ll.FloatType(), ll.DoubleType()])
    assert parameter_block_bytes(small) == 1 + 1 + 2 + 4 + 8


def test_index32_and_ordinary_instances_both_declare_the_kept_parameters_in_the_cubin_ptx(tmp_path: Path) -> None:
    """The whole-program ptxas path and the shipped PTX are the same text."""
    src = tmp_path / "reads.py"
    src.write_text(textwrap.dedent(READS_ALL))
    compiled = compile_module(src, "reads", CompileOptions(archs=("sm_90",), embed_ptx=True))
    assert compiled.ptx_fallback["sm_90"] == compiled.ptx["sm_90"]
    assert re.search(r"\.entry unread\(\s*\.param \.u64 \.ptr \.global \.align 1 unread_param_0,\s*\.param \.u64 unread_param_1\s*\)",
                     compiled.ptx["sm_90"])
    assert compiled.param_bytes["unread"] == compiled.param_bytes["unread__index32"] == 16


# --- the manifest --------------------------------------------------------------------------------

TMA_PARAMS = (ParamSpec("m", "tensor_map", "f32", 2), ParamSpec("n", "scalar", "i32"),
              ParamSpec("x", "tensor", "f32", 2))


def test_param_starts_follow_the_slot_layout() -> None:
    assert entry_param_starts(TMA_PARAMS) == [0, 16, 17, 18, 19, 20, 21, 22]
    assert entry_param_starts(TADD_PARAMS) == list(range(11))


def _manifest(kernel: dict[str, object]) -> str:
    return json.dumps({"format": 1, "module": "m", "source": "m.py", "source_sha256": "", "cubins": {},
                       "kernels": [kernel]})


def test_a_manifest_without_param_slots_passes_every_parameter_and_new_ones_round_trip() -> None:
    old = {"name": "k", "symbol": "k", "params": [{"name": "x", "kind": "tensor", "dtype": "f32", "ndim": 2}],
           "index32_symbol": "k__index32"}
    (spec,) = ModuleManifest.from_json(_manifest(old)).kernels
    assert spec.param_slots is None and spec.index32_param_slots is None
    m = ModuleManifest("m", "m.py", "", (spec,), {})
    assert "param_slots" not in m.to_json()  # written as before
    pruned = spec._replace(param_slots=(0, 3, 4), index32_param_slots=(0, 4))
    m = ModuleManifest("m", "m.py", "", (pruned,), {})
    assert json.loads(m.to_json())["kernels"][0]["index32_param_slots"] == [0, 4]
    assert ModuleManifest.from_json(m.to_json()) == m
    tma = KernelSpec("t", "t", TMA_PARAMS, param_slots=(0, 17, 18))
    assert ModuleManifest.from_json(ModuleManifest("m", "m.py", "", (tma,), {}).to_json()).kernels == (tma,)


@pytest.mark.parametrize("slots, message", [
    ([0, 0], "slots must increase; got 0 then 0"),
    ([3, 1], "slots must increase; got 3 then 1"),
    ([1], "1 is not the slot of a parameter (they begin at 0, 16, 17, 18, 19, 20, 21, 22)"),  # inside the map
    ([23], "23 is not the slot of a parameter"),
    (["0"], "expected an integer"),
    (0, "expected a list"),
])
def test_a_manifest_with_broken_param_slots_is_refused(slots: object, message: str) -> None:
    params = [{"name": p.name, "kind": p.kind, "dtype": p.dtype, "ndim": p.ndim} for p in TMA_PARAMS]
    with pytest.raises(ManifestError) as info:
        ModuleManifest.from_json(_manifest({"name": "t", "symbol": "t", "params": params, "param_slots": slots}))
    assert "kernels[0].param_slots" in str(info.value) and message in str(info.value)


# --- the launch paths ----------------------------------------------------------------------------

NARROW = "tadd__index32"
# tadd(a: Tensor[f32, 2], s: f32, out: MutTensor[f32, 2]): a 0 ptr, 1-2 shape, 3-4 strides; s 5;
# out 6 ptr, 7-8 shape, 9-10 strides
WIDE_SLOTS = (0, 1, 2, 3, 4, 5, 6, 9, 10)  # out's shape not read
NARROW_SLOTS = (0, 3, 4, 5, 6, 7, 8, 9, 10)  # a's shape not read
KERNELS = (KernelSpec("tadd", "tadd", TADD_PARAMS, index32_symbol=NARROW, param_slots=WIDE_SLOTS,
                      index32_param_slots=NARROW_SLOTS),) + TENSOR_KERNELS[1:]


def _module(tmp_path: Path, drv: FakeDriver) -> object:
    m = make_module(tmp_path, TENSOR_SOURCE, KERNELS)
    full = slot_types(TADD_PARAMS)
    drv.signatures = {k.symbol: slot_types(k.params) for k in TENSOR_KERNELS}
    drv.signatures["tadd"] = [full[i] for i in WIDE_SLOTS]
    drv.signatures[NARROW] = [full[i] for i in NARROW_SLOTS]
    return m


def _full(a: FakeArray, s: float, out: FakeArray) -> list[object]:
    ia, io = a.__cuda_array_interface__, out.__cuda_array_interface__
    return [ia["data"][0], *ia["shape"], *(st // 4 for st in ia["strides"] or (4 * ia["shape"][1], 4)), s,
            io["data"][0], *io["shape"], *(st // 4 for st in io["strides"] or (4 * io["shape"][1], 4))]


def _cases() -> list[tuple[FakeArray, FakeArray, str]]:
    # rows of 5 elements apart, contiguous along them (the index32 instance takes only those)
    small = FakeArray(shape=(3, 4), strides=(20, 4), ptr=0x1000), FakeArray(shape=(3, 4), ptr=0x2000)
    # a stride past 2**31 - 1: the kernel as written
    big = FakeArray(shape=(2, 2), strides=(4 * 2**31, 4), ptr=0x3000), FakeArray(shape=(2, 2), ptr=1 << 40)
    return [(*small, NARROW), (*big, "tadd")]


def test_the_python_path_passes_the_slots_each_entry_point_declares(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = _module(tmp_path, fake_driver)
    for a, out, fn in _cases():
        m.tadd[1, 32](a, 2.5, out)  # type: ignore[attr-defined]
        full = _full(a, 2.5, out)
        slots = NARROW_SLOTS if fn == NARROW else WIDE_SLOTS
        assert fake_driver.launches[-1]["fn"] == fn
        assert fake_driver.launches[-1]["values"] == [full[i] for i in slots]


@needs_launcher
def test_the_c_launcher_passes_the_same_slots_as_the_python_path(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = _module(tmp_path, c_driver)
    for a, out, _ in _cases():
        m.tadd[1, 32](a, 1.5, out)  # type: ignore[attr-defined]
        m.tadd[1, 32](a, 1.5, out)  # type: ignore[attr-defined]
    assert paths(c_driver) == ["python", "c", "python", "c"]
    launches = c_driver.launches
    assert [launch["fn"] for launch in launches] == [NARROW, NARROW, "tadd", "tadd"]
    assert launches[0]["values"] == launches[1]["values"] and launches[2]["values"] == launches[3]["values"]
    a, out, _ = _cases()[0]
    assert launches[1]["values"] == [_full(a, 1.5, out)[i] for i in NARROW_SLOTS]
    a, out, _ = _cases()[1]
    assert launches[3]["values"] == [_full(a, 1.5, out)[i] for i in WIDE_SLOTS]


# --- modules linked with C++ through LTO-IR ------------------------------------------------------

@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_a_module_linked_with_cpp_declares_only_the_read_parameters(backend: str) -> None:
    """tests/packages/interop/pruned_kernels.py: the one lowering drops the unread parameters; the
    LTO-IR the cubins are linked from declares only those (the linked PTX shows it)."""
    root = ROOT / "tests" / "packages" / "interop"
    compiled = compile_module(root / "pruned_kernels.py", "pruned_kernels",
                              CompileOptions(archs=("sm_90",), embed_ptx=True, backend=backend), root=root)
    assert compiled.lto and compiled.cubins["sm_90"]
    specs = {k.symbol: k for k in compiled.kernels}
    # a 0; x 1 ptr, 2 length; unused 3; b 4; out 5 ptr, 6 length
    assert specs["axpb_checked"].param_slots == (0, 1, 4, 5, 6)
    # a 0; x 1 ptr, 2-3 shape, 4-5 strides; b 6; out 7 ptr, 8-9 shape, 10-11 strides; the index32
    # instance reads no last-axis stride (5, 11: 1 there)
    assert specs["axpb_2d"].param_slots == (0, 1, 4, 5, 6, 7, 8, 9, 10, 11)
    assert specs["axpb_2d"].index32_param_slots == (0, 1, 4, 6, 7, 8, 9, 10)
    linked = compiled.ptx_fallback["sm_90"]  # nvJitLink -lto of the same LTO-IR, as PTX
    # the linked entry's parameters are numbered anew: one per kept slot, in order
    assert _declared(linked, "axpb_checked") == [".f32", ".u64", ".f32", ".u64", ".u64"]
    assert _declared(linked, "axpb_2d__index32") == [".f32", ".u64", ".u32", ".f32",
                                                     ".u64", ".u32", ".u32", ".u32"]
    assert compiled.param_bytes["axpb_2d"] == 80 and compiled.param_bytes["axpb_2d__index32"] == 44
    # the module's own PTX (what `oxide compile --emit ptx` shows) declares the same
    assert _declared(compiled.ptx["sm_90"], "axpb_checked") == _declared(linked, "axpb_checked")


def test_oxide_inspect_counts_what_the_linked_entry_points_declare() -> None:
    from oxide_build.inspect import inspect_module

    root = ROOT / "tests" / "packages" / "interop"
    resources, *_ = inspect_module(root / "pruned_kernels.py", "pruned_kernels", "sm_90", root=root)
    assert {s: r.param_bytes for s, r in resources.items()} == {"axpb_checked": 40, "axpb_2d": 80,
                                                                "axpb_2d__index32": 44}
