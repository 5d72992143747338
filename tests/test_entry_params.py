"""Kernel entry points declare only the parameters their code reads
(oxide_build/backends/entry_params.py): which ones the compiled PTX keeps on both backends, the
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
from oxide_build.backends.entry_params import (
    declared_bytes,
    drop_params,
    drop_unread_params,
    entry_params,
    read_params_of_entries,
)
from oxide_build.compile import CompileOptions, CompiledModule, compile_module

__all__: list[str] = []

ROOT = Path(__file__).resolve().parent.parent
needs_launcher = pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")

_BYTES = {".u64": 8, ".s64": 8, ".b64": 8, ".f64": 8, ".u32": 4, ".s32": 4, ".b32": 4, ".f32": 4}


def _declared(ptx: str, entry: str) -> dict[int, str]:
    """parameter index -> its PTX type, of what ``entry`` declares."""
    params = entry_params(ptx, entry)
    assert params is not None, entry
    return {i: next(t for t in d.split()[1:] if t in _BYTES) for d, i in zip(params.declarations, params.indices)}


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
    is read; the index32 block is the CUDA C++ kernel's 216 bytes (it was 312)."""
    kept = _tensor_slots(13, shapes_of=9)
    (spec,) = [k for k in lltm.kernels if k.symbol == "lltm_backward_f32"]
    assert spec.param_slots == spec.index32_param_slots == tuple(kept)
    for arch in ("sm_80", "sm_90"):
        narrow = _declared(lltm.ptx[arch], "lltm_backward_f32__index32")
        wide = _declared(lltm.ptx[arch], "lltm_backward_f32")
        assert sorted(narrow) == sorted(wide) == kept
        assert [narrow[i] for i in kept] == [".u64" if i % 5 == 0 else ".u32" for i in kept]
        assert _block_bytes(list(narrow.values())) == 13 * (8 + 4 + 4) + 2 * 4 == 216
        assert _block_bytes(list(wide.values())) == 13 * 3 * 8 + 2 * 8 == 328  # was 520


def test_the_lltm_forward_reads_new_h_shape_alone(lltm: CompiledModule) -> None:
    kept = tuple(_tensor_slots(9, shapes_of=4))
    for k in lltm.kernels:
        if k.name == "lltm_forward":
            assert k.param_slots == k.index32_param_slots == kept
            assert sorted(_declared(lltm.ptx["sm_90"], k.index32_symbol)) == list(kept)


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
    assert specs["every"].param_slots is None and specs["every"].index32_param_slots is None
    assert len(_declared(compiled.ptx["sm_90"], "every")) == len(entry_param_starts(specs["every"].params)) == 10
    # only out's pointer and length (the guard) are read
    assert specs["unread"].param_slots == specs["unread"].index32_param_slots == (8, 9)
    assert sorted(_declared(compiled.ptx["sm_90"], "unread__index32")) == [8, 9]
    assert compiled.cubins["sm_90"]  # ptxas took the PTX without them


def test_mixed_kernel_keeps_exactly_what_it_reads() -> None:
    """tests/packages/index32k's ``mixed`` (run on the GPU by tests/test_index32_gpu.py)."""
    compiled = compile_module(ROOT / "tests" / "packages" / "index32k" / "idx32k.py", "idx32k",
                              CompileOptions(archs=("sm_90",), link_cubins=False))
    (spec,) = [k for k in compiled.kernels if k.name == "mixed"]
    # a: 0 ptr, 1-2 shape, 3-4 strides; unused: 5; b: 6, 7-8, 9-10; bias: 11 ptr, 12 len; s: 13; out: 14-18
    assert spec.param_slots == spec.index32_param_slots == (0, 3, 4, 6, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18)


# --- the PTX analysis --------------------------------------------------------------------------

PTX = """
.visible .entry k(
	.param .align 64 .b8 k_param_0[128],
	.param .u64 k_param_1,
	.param .u64 .ptr .global .align 1 k_param_2,
	.param .u32 k_param_10
)
.maxntid 128, 1, 1
{
	mov.b64 	%rd1, k_param_0;
	ld.param.u64 	%rd2, [k_param_10];
	// k_param_1x: another name
	ld.param.u64 	%rd3, [k_param_2+0];
}
.visible .entry k_param_1x(
	.param .u64 k_param_1x_param_0
)
{
	ret;
}
"""


def test_a_parameter_is_read_when_its_name_occurs_in_the_code() -> None:
    ptx = PTX.replace("k_param_10", "k_param_3")
    assert read_params_of_entries(ptx, ["k", "k_param_1x"]) == {"k": {0, 2, 3}, "k_param_1x": set()}
    out, kept = drop_unread_params({"sm_90": ptx}, {"k": 4, "k_param_1x": 1})
    assert kept == {"k": [0, 2, 3], "k_param_1x": []}
    assert sorted(_declared_names(out["sm_90"], "k")) == ["k_param_0", "k_param_2", "k_param_3"]
    assert ".visible .entry k_param_1x()" in out["sm_90"] and "mov.b64 \t%rd1, k_param_0;" in out["sm_90"]


def test_declared_bytes_count_each_parameter_at_its_alignment() -> None:
    """What `oxide inspect` prints as "params": the 128-byte map aligned to 64, then 8 + 8 + 4."""
    assert declared_bytes(PTX, "k") == 148
    assert declared_bytes(PTX.replace("k_param_1,", "k_param_1[3],").replace(".u64 k_param_1", ".u16 k_param_1"),
                          "k") == 128 + 6 + 2 + 8 + 4
    assert declared_bytes(PTX, "k_param_1x") == 8 and declared_bytes(PTX, "absent") is None


def _declared_names(ptx: str, entry: str) -> list[str]:
    params = entry_params(ptx, entry)
    assert params is not None
    return [d.split()[-1].split("[")[0] for d in params.declarations]


def test_an_entry_in_a_form_it_does_not_read_keeps_every_parameter() -> None:
    # parameters not numbered 0, 1, ... (here 0, 1, 2, 10): not LLVM's naming, so no analysis
    assert read_params_of_entries(PTX, ["k"]) == {"k": None}
    renamed = PTX.replace("k_param_1,", "weird,")
    assert entry_params(renamed, "k") is None and entry_params(PTX, "absent") is None
    out, kept = drop_unread_params({"sm_90": renamed}, {"k": 4})
    assert kept == {} and out == {"sm_90": renamed}
    # a parameter count other than the slot layout's: the indices would not name its slots
    ptx = PTX.replace("k_param_10", "k_param_3")
    assert drop_unread_params({"sm_90": ptx}, {"k": 5}) == ({"sm_90": ptx}, {})


def test_archs_keep_the_union_of_what_each_reads() -> None:
    base = PTX.replace("k_param_10", "k_param_3")
    other = base.replace("[k_param_2+0]", "[k_param_1]")  # another arch reads 1, not 2
    assert drop_unread_params({"sm_80": base, "sm_90": base}, {"k": 4})[1] == {"k": [0, 2, 3]}
    out, kept = drop_unread_params({"sm_80": base, "sm_90": other}, {"k": 4})
    assert kept == {} and out == {"sm_80": base, "sm_90": other}  # each is read on some arch
    with pytest.raises(ValueError, match=r"entry k reads parameters \[2\], which would be dropped"):
        drop_params(base, {"k": [0, 3]})


def test_index32_and_ordinary_instances_are_both_rewritten_in_the_cubin_ptx(tmp_path: Path) -> None:
    """The whole-program ptxas path and the shipped PTX take the rewritten text."""
    src = tmp_path / "reads.py"
    src.write_text(textwrap.dedent(READS_ALL))
    compiled = compile_module(src, "reads", CompileOptions(archs=("sm_90",), embed_ptx=True))
    assert compiled.ptx_fallback["sm_90"] == compiled.ptx["sm_90"]
    assert re.search(r"\.entry unread\(\s*\.param \.u64 \.ptr \.global \.align 1 unread_param_8,\s*\.param \.u64 unread_param_9\s*\)",
                     compiled.ptx["sm_90"])


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
    small = FakeArray(shape=(3, 4), strides=(4, 12), ptr=0x1000), FakeArray(shape=(3, 4), ptr=0x2000)
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
def test_a_module_linked_with_cpp_is_lowered_again_without_the_unread_parameters(backend: str) -> None:
    """tests/packages/interop/pruned_kernels.py: its own PTX says which parameters are read; the
    LTO-IR the cubins are linked from declares only those (the linked PTX shows it)."""
    root = ROOT / "tests" / "packages" / "interop"
    compiled = compile_module(root / "pruned_kernels.py", "pruned_kernels",
                              CompileOptions(archs=("sm_90",), embed_ptx=True, backend=backend), root=root)
    assert compiled.lto and compiled.cubins["sm_90"]
    specs = {k.symbol: k for k in compiled.kernels}
    # a 0; x 1 ptr, 2 length; unused 3; b 4; out 5 ptr, 6 length
    assert specs["axpb_checked"].param_slots == (0, 1, 4, 5, 6)
    # a 0; x 1 ptr, 2-3 shape, 4-5 strides; b 6; out 7 ptr, 8-9 shape, 10-11 strides
    assert specs["axpb_2d"].param_slots == specs["axpb_2d"].index32_param_slots == (0, 1, 4, 5, 6, 7, 8, 9, 10, 11)
    linked = compiled.ptx_fallback["sm_90"]  # nvJitLink -lto of the same LTO-IR, as PTX
    # the linked entry's parameters are numbered anew: one per kept slot, in order
    assert _declared(linked, "axpb_checked") == {0: ".f32", 1: ".u64", 2: ".f32", 3: ".u64", 4: ".u64"}
    assert _declared(linked, "axpb_2d__index32") == {0: ".f32", 1: ".u64", 2: ".u32", 3: ".u32", 4: ".f32",
                                                      5: ".u64", 6: ".u32", 7: ".u32", 8: ".u32", 9: ".u32"}
    assert declared_bytes(linked, "axpb_2d") == 80 and declared_bytes(linked, "axpb_2d__index32") == 56
    # the module's own PTX (what `oxide compile --emit ptx` shows) is as analysed: every parameter
    assert len(_declared(compiled.ptx["sm_90"], "axpb_checked")) == 7


def test_oxide_inspect_counts_what_the_linked_entry_points_declare() -> None:
    from oxide_build.inspect import inspect_module

    root = ROOT / "tests" / "packages" / "interop"
    resources, *_ = inspect_module(root / "pruned_kernels.py", "pruned_kernels", "sm_90", root=root)
    assert {s: r.param_bytes for s, r in resources.items()} == {"axpb_checked": 40, "axpb_2d": 80,
                                                                "axpb_2d__index32": 56}
