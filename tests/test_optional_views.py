"""Optional views (docs/language.md, "Optional views"): ``Optional[Tensor[f32, 2]]`` /
``Slice[f32] | None`` kernel and device-function parameters, their flow typing (usable only where
a test proved them present; a located error elsewhere), their ABI (the view's slots and a flag
slot; None packs zeros and 0), asserts that hold only where the view is present (and the bounds
proofs that use them there), the manifest's ``optional`` and format 5, the Python and C
launchers (through the drivers of tests/fakes.py) and launch.hpp's refusal."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    CFakeDriver,
    FakeArray,
    c_driver,
    expect_type_error,
    fresh_runtime,
    make_module,
    paths,
    slot_types,
)

from launch_hpp_probe import launch_hpp_answers, needs_cxx

from oxide.abi import manifest as abi_manifest
from oxide.abi.params import PRESENT_SLOTS, param_slot_count, param_slot_dtypes
from oxide.errors import CompileError
from oxide.runtime import launcher
from oxide.runtime.manifest import KernelSpec, ParamSpec
from oxide_build.compile import build_ir
from oxide_build.ir import nodes as ir
from oxide_build.ir.printer import print_function
from oxide_build.ir.types import type_name

HEADER = ("from typing import Optional\n"
          "import oxide as ox\n"
          "from oxide import Slice, DisjointSlice, MutSlice, Tensor, MutTensor, DisjointTensor, f32, i32, i64, thread\n")


def source(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return src


def frontend(tmp_path: Path, body: str) -> Any:
    return build_ir(source(tmp_path, body), "kern")[1]


def compile_error(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as info:
        build_ir(source(tmp_path, body), "kern")
    return str(info.value)


def checks_left(fn: ir.Function) -> int:
    """The bounds checks a function keeps (accesses with an error site)."""
    found = 0

    def walk(x: object) -> None:
        nonlocal found
        if isinstance(x, (ir.ViewLoad, ir.Store)) and x.check_site is not None:
            found += 1
        if isinstance(x, list):
            for y in x:
                walk(y)
        elif hasattr(x, "__dataclass_fields__"):
            for name in x.__dataclass_fields__:
                walk(getattr(x, name))

    walk(fn.body)
    return found


ADD_BIAS = """
def bias_at(bias: Optional[Slice[f32]], i: i64) -> f32:
    if bias is None:
        return 0.0
    return bias[i]

@ox.kernel
def add_bias(x: Slice[f32], bias: Slice[f32] | None, out: DisjointSlice[f32]) -> None:
    assert len(bias) == len(x) and len(out) == len(x)
    i = thread.index_1d()
    if i < len(x):
        out[i] = x[i] + bias_at(bias, i)
"""


# ---- the ABI ---------------------------------------------------------------------------------

def test_an_optional_view_takes_its_slots_and_a_flag() -> None:
    assert PRESENT_SLOTS == 1
    assert param_slot_count("tensor", 2, optional=True) == param_slot_count("tensor", 2) + 1 == 6
    assert param_slot_count("slice", optional=True) == 3
    assert param_slot_dtypes("mut_tensor", "f32", 1, optional=True) == ["u64", "i64", "i64", "bool"]
    p = ParamSpec("b", "tensor", "f16", 3, optional=True)
    assert p.slot_count == 8 and p.slot_dtypes[-1] == "bool"


def test_the_manifest_records_optional_and_is_format_5(tmp_path: Path) -> None:
    fe = frontend(tmp_path, ADD_BIAS)
    (spec,) = fe.kernels
    assert [(p.name, p.kind, p.optional) for p in spec.params] == [
        ("x", "slice", False), ("bias", "slice", True), ("out", "disjoint_slice", False)]
    m = abi_manifest.ModuleManifest(module="kern", source="kern.py", source_sha256="", kernels=(spec,),
                                    cubins={"sm_90": "kern.sm_90.cubin"})
    data = json.loads(m.to_json())
    assert data["format"] == abi_manifest.OPTIONAL_MANIFEST_FORMAT == 5
    assert [p.get("optional", False) for p in data["kernels"][0]["params"]] == [False, True, False]
    assert "optional" not in data["kernels"][0]["params"][0]  # written as before for the others
    again = abi_manifest.ModuleManifest.from_json(m.to_json())
    assert again.kernels[0].params == spec.params
    plain = m._replace(kernels=(spec._replace(params=tuple(p._replace(optional=False) for p in spec.params)),))
    assert json.loads(plain.to_json())["format"] == abi_manifest.MANIFEST_FORMAT  # unchanged without one
    bad = json.loads(m.to_json())
    bad["kernels"][0]["params"][0] = {"name": "n", "kind": "scalar", "dtype": "i32", "optional": True}
    with pytest.raises(abi_manifest.ManifestError, match="only a view parameter may be None"):
        abi_manifest.ModuleManifest.from_json(json.dumps(bad))


# ---- typing ----------------------------------------------------------------------------------

def test_the_ir_passes_the_view_and_its_flag(tmp_path: Path) -> None:
    fe = frontend(tmp_path, ADD_BIAS)
    kernel = next(f for f in fe.program.functions if f.is_kernel)
    assert [(p.name, type_name(p.ty)) for p in kernel.params] == [
        ("x", "Slice[f32]"), ("bias", "Slice[f32]"), ("bias.present", "bool"), ("out", "DisjointSlice[f32]")]
    helper = next(f for f in fe.program.functions if not f.is_kernel)
    assert [p.name for p in helper.params] == ["bias", "bias.present", "i"]


@pytest.mark.parametrize("test, use", [
    ("if b is not None:", "        v = b[0]"),
    ("if b is None:\n        return\n    if True:", "        v = b[0]"),
    ("if not (b is None):", "        v = b[0]"),
    ("if b is not None and len(b) > 0:", "        v = b[0]"),
    ("if b is None or len(b) == 0:\n        pass\n    else:", "        v = b[0]"),
    ("if None is not b:", "        v = b[len(b) - 1]"),
    ("for k in range(3):\n        if b is None:\n            continue", "        v = b[k]"),
])
def test_a_test_proves_the_view_present(tmp_path: Path, test: str, use: str) -> None:
    frontend(tmp_path, f"""
@ox.kernel
def k(b: Optional[Slice[f32]], out: MutSlice[f32]) -> None:
    v: f32 = 0.0
    {test}
{use}
    with ox.unsafe():
        out[0] = v
""")


@pytest.mark.parametrize("body, line", [
    ("    v = b[0]\n", 8),
    ("    if b is None:\n        v = b[0]\n", 9),
    ("    if b is not None:\n        pass\n    v = b[0]\n", 10),
    ("    if b is not None or len(b) == 0:\n        pass\n", 8),
    ("    v = f32(len(b)) if b is None else 0.0\n", 8),
])
def test_a_use_where_the_view_may_be_none_is_a_located_error(tmp_path: Path, body: str, line: int) -> None:
    text = compile_error(tmp_path, f"""
@ox.kernel
def k(b: Optional[Slice[f32]], out: MutSlice[f32]) -> None:
    v: f32 = 0.0
{body}""")
    assert f"kern.py:{line}:" in text
    assert "'b' is Optional[Slice[f32]] and may be None here" in text
    assert "if b is not None:" in text


def test_an_else_that_returns_proves_the_view_after_the_if(tmp_path: Path) -> None:
    frontend(tmp_path, """
@ox.kernel
def k(b: Optional[Slice[f32]], out: MutSlice[f32]) -> None:
    v: f32 = 0.0
    if b is not None:
        v = 1.0
    else:
        return
    with ox.unsafe():
        out[0] = v + b[1]
""")


@pytest.mark.parametrize("annotation", [
    "Optional[Tensor[f32, 2]]", "Tensor[f32, 2] | None", "None | MutTensor[f32, 2]", "Optional[DisjointTensor[f32, 2]]",
])
def test_every_spelling_and_view_kind(tmp_path: Path, annotation: str) -> None:
    fe = frontend(tmp_path, f"""
@ox.kernel
def k(t: {annotation}, out: MutSlice[f32]) -> None:
    if t is not None:
        with ox.unsafe():
            out[0] = t[0, 0]
""")
    (spec,) = fe.kernels
    assert spec.params[0].optional and spec.params[0].ndim == 2


def test_a_generic_optional_view_binds_its_typevar_from_the_argument(tmp_path: Path) -> None:
    fe = frontend(tmp_path, """
T = ox.TypeVar("T", f32, ox.f16)

def first(b: Tensor[T, 1] | None) -> f32:
    if b is not None:
        return f32(b[0])
    return 0.0

@ox.kernel
def k(x: Tensor[T, 1], b: Optional[Tensor[T, 1]], out: MutSlice[f32]) -> None:
    with ox.unsafe():
        out[0] = first(b) + first(x)
""")
    assert {s.specialization["T"] for s in fe.kernels} == {"f32", "f16"}
    names = {f.symbol for f in fe.program.functions if not f.is_kernel}
    assert len(names) == 2  # one first() per T: a plain view passes to the optional parameter as present


@pytest.mark.parametrize("body, message", [
    ("def k(a: Optional[f32]) -> None:\n    pass\n", "only a view may be None: Optional[f32]"),
    ("def k(a: Optional[Optional[Slice[f32]]]) -> None:\n    pass\n", "only a view may be None"),
    ("def k(b: Optional[Slice[f32]], out: MutSlice[f32]) -> None:\n    with ox.unsafe():\n        out[0] = h(b)\n",
     "argument 'b' of h() is Slice[f32]; 'b' is Optional[Slice[f32]] and may be None here"),
])
def test_refusals(tmp_path: Path, body: str, message: str) -> None:
    text = compile_error(tmp_path, "def h(b: Slice[f32]) -> f32:\n    return b[0]\n\n@ox.kernel\n" + body)
    assert message in text and "kern.py:" in text


def test_an_extern_kernel_and_an_export_refuse_optional_views(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
@ox.extern_kernel("k_cu", sources=["k.cu"])
def k(b: Optional[Slice[f32]]) -> None: ...
""")
    assert "kern.py:6:" in text and "cannot be an optional view ('b')" in text
    text = compile_error(tmp_path, """
@ox.device(export="f_c")
def f(b: Optional[Slice[f32]]) -> f32:
    if b is None:
        return 0.0
    return b[0]
""")
    assert "kern.py:6:" in text and "cannot take an optional view ('b')" in text


# ---- asserts and proofs ---------------------------------------------------------------------

def test_an_assert_about_an_optional_view_holds_only_where_it_is_present(tmp_path: Path) -> None:
    fe = frontend(tmp_path, ADD_BIAS)
    kernel = next(f for f in fe.program.functions if f.is_kernel)
    # slots: x 0-1, bias 2-3, its flag 4, out 5-6
    assert kernel.preconditions[0].expr == [
        "and", [["or", [["not", ["arg", 4]], ["eq", ["arg", 3], ["arg", 1]]]], ["eq", ["arg", 6], ["arg", 1]]]]
    # and it proves bias[i] in bounds where bias is present (in the device function too: its
    # guard is i < len(x) in the kernel, so only the kernel's accesses are proven)
    assert checks_left(kernel) == 0


def test_the_assert_proves_accesses_in_the_branch_where_the_view_is_present(tmp_path: Path) -> None:
    fe = frontend(tmp_path, """
@ox.kernel
def k(x: Tensor[f32, 2], scale: Optional[Tensor[f32, 1]], out: DisjointTensor[f32, 2]) -> None:
    assert scale.shape[0] == x.shape[0]
    assert out.shape[0] == x.shape[0] and out.shape[1] == x.shape[1]
    r, c = thread.index_2d()
    if r < x.shape[0] and c < x.shape[1]:
        v = x[r, c]
        if scale is not None:
            v = v * scale[r]
        out[r, c] = v
""")
    kernel = next(f for f in fe.program.functions if f.is_kernel)
    assert checks_left(kernel) == 0


# ---- launches: the Python path and the C launcher, through the fake drivers ----------------

OPT_SOURCE = """
from typing import Optional
from oxide import kernel, f32, f16, Tensor, MutTensor, Slice
import oxide as ox

T = ox.TypeVar("T", f32, f16)

@kernel
def tsc(a: Tensor[f32, 2], scale: Optional[Tensor[f32, 1]], out: MutTensor[f32, 2]) -> None:
    pass

@kernel
def gen(b: Optional[Slice[T]], x: Slice[T], s: f32) -> None:
    pass

@kernel
def onlyopt(b: Optional[Slice[T]]) -> None:
    pass
"""
OPT_KERNELS = (
    KernelSpec("tsc", "tsc", (ParamSpec("a", "tensor", "f32", 2), ParamSpec("scale", "tensor", "f32", 1, optional=True),
                              ParamSpec("out", "mut_tensor", "f32", 2))),
    *(KernelSpec("gen", f"gen_{t}", (ParamSpec("b", "slice", t, optional=True), ParamSpec("x", "slice", t),
                                     ParamSpec("s", "scalar", "f32")), {"T": t}) for t in ("f32", "f16")),
    *(KernelSpec("onlyopt", f"onlyopt_{t}", (ParamSpec("b", "slice", t, optional=True),), {"T": t}) for t in ("f32", "f16")),
)  # fmt: skip


def _opt_module(tmp_path: Path, drv: Any) -> Any:
    m = make_module(tmp_path, OPT_SOURCE, OPT_KERNELS)
    drv.signatures = {k.symbol: slot_types(k.params) for k in OPT_KERNELS}
    return m


def test_python_path_packs_none_as_zeros_and_a_zero_flag(tmp_path: Path, c_driver: CFakeDriver) -> None:
    launcher._ext.set_driver(0, 0) if launcher.ENABLED else None  # the Python path alone
    m = _opt_module(tmp_path, c_driver)
    a, out = FakeArray(shape=(3, 4), ptr=0x1000), FakeArray(shape=(3, 4), ptr=0x2000)
    m.tsc[1, 32](a, FakeArray(shape=(3,), ptr=0x3000), out)
    m.tsc[1, 32](a, None, out)
    first, second = (launch["values"] for launch in c_driver.launches)
    assert first == [0x1000, 3, 4, 4, 1, 0x3000, 3, 1, True, 0x2000, 3, 4, 4, 1]
    assert second == [0x1000, 3, 4, 4, 1, 0, 0, 0, False, 0x2000, 3, 4, 4, 1]
    # None leaves the TypeVar to the other views; a None for every view picks the first instance
    m.gen[1, 32](None, FakeArray(5, ptr=0x4000, typestr="<f2"), 1.0)
    assert c_driver.launches[-1]["fn"] == "gen_f16" and c_driver.launches[-1]["values"][:3] == [0, 0, False]
    m.onlyopt[1, 32](None)
    assert c_driver.launches[-1]["fn"] == "onlyopt_f32"
    expect_type_error(lambda: m.tsc[1, 32](None, None, out),
                      "parameter 'a' of tsc needs an array; got None (declare it Optional[...] in the kernel to take None)")


needs_launcher = pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")


@needs_launcher
def test_c_launcher_packs_optional_views_like_python(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = _opt_module(tmp_path, c_driver)
    a, out, scale = FakeArray(shape=(3, 4), ptr=0x1000), FakeArray(shape=(3, 4), ptr=0x2000), FakeArray(shape=(3,), ptr=0x3000)
    for b in (scale, None, scale, None):
        m.tsc[1, 32](a, b, out)
    assert paths(c_driver) == ["python", "c", "c", "c"]
    c_values = [launch["values"] for launch in c_driver.launches]
    assert c_values[1] == [0x1000, 3, 4, 4, 1, 0, 0, 0, False, 0x2000, 3, 4, 4, 1]
    assert c_values[2] == [0x1000, 3, 4, 4, 1, 0x3000, 3, 1, True, 0x2000, 3, 4, 4, 1]
    # a None that leaves two instances open goes to Python, which picks; one left open is C's
    x16 = FakeArray(5, ptr=0x4000, typestr="<f2")
    for _ in range(2):
        m.gen[1, 32](None, x16, 1.0)
    assert paths(c_driver)[-2:] == ["python", "c"] and c_driver.launches[-1]["fn"] == "gen_f16"
    for _ in range(2):
        m.onlyopt[1, 32](None)
    assert paths(c_driver)[-2:] == ["python", "python"]
    # the same launches through the Python path alone pack the same bytes
    launched = [launch["values"] for launch in c_driver.launches]
    c_driver.launches.clear()
    launcher._ext.set_driver(0, 0)
    for b in (scale, None, scale, None):
        m.tsc[1, 32](a, b, out)
    for _ in range(2):
        m.gen[1, 32](None, x16, 1.0)
    for _ in range(2):
        m.onlyopt[1, 32](None)
    assert [launch["values"] for launch in c_driver.launches] == launched


@needs_launcher
def test_c_launcher_leaves_none_for_a_required_view_to_python(tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = _opt_module(tmp_path, c_driver)
    a, out = FakeArray(shape=(3, 4), ptr=0x1000), FakeArray(shape=(3, 4), ptr=0x2000)
    m.tsc[1, 32](a, None, out)
    m.tsc[1, 32](a, None, out)
    expect_type_error(lambda: m.tsc[1, 32](a, None, None), "parameter 'out' of tsc needs an array; got None (declare "
                      "it Optional[...] in the kernel to take None)")
    assert paths(c_driver) == ["python", "c"]


@needs_cxx
def test_launch_hpp_refuses_a_kernel_with_an_optional_view_by_name(tmp_path: Path) -> None:
    plain = KernelSpec("plain", "plain", (ParamSpec("x", "slice", "f32"),), file="m.py", line=3)
    lines = launch_hpp_answers(tmp_path, "m", (OPT_KERNELS[0]._replace(file="m.py", line=9), plain), ["tsc", "plain"])
    assert lines == ["refused: m.py:9: kernel 'tsc' parameter 'scale' is an optional view (tensor that may be None: a "
                     "flag slot after its view's), which this C++ API does not pack yet: launch it from Python",
                     "accepted plain"]


def test_none_passes_to_a_device_functions_optional_parameter(tmp_path: Path) -> None:
    fe = frontend(tmp_path, """
def first(b: Optional[Slice[f32]], x: Slice[f32]) -> f32:
    if b is None:
        return x[0]
    return b[0]

@ox.kernel
def k(x: Slice[f32], out: MutSlice[f32]) -> None:
    with ox.unsafe():
        out[0] = first(None, x) + first(x, x)
""")
    kernel = next(f for f in fe.program.functions if f.is_kernel)
    text = print_function(kernel)
    assert "(None, False:bool, x)" in text and "(x, True:bool, x)" in text  # one instance, the flag beside
    text = compile_error(tmp_path, """
def h(b: Slice[f32]) -> f32:
    return b[0]

@ox.kernel
def k(out: MutSlice[f32]) -> None:
    with ox.unsafe():
        out[0] = h(None)
""")
    assert "kern.py:11:20:" in text and "argument 'b' of h() is Slice[f32], which cannot be None" in text
    assert "declare the parameter Optional[Slice[f32]] at kern.py:5" in text
