"""Struct and vector kernel parameters (docs/language.md, "Structs"; oxide.abi.params): what the
manifest says about them, the flattened entry point, and on the fake driver the slots the runtime
packs from each kind of host value, and the errors before a launch. GPU results:
test_struct_params_gpu.py."""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from launch_hpp_probe import launch_hpp_answers, needs_cxx
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
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
from oxide.runtime import launcher
from oxide.runtime.manifest import ManifestError, ModuleManifest, ParamSpec
from oxide_build.compile import CompileOptions, build_ir, compile_module

SOURCE = """
import oxide as ox
from oxide import Slice, DisjointSlice, f32, i32, u8, f32x2, f32x4, i32x2, thread


@ox.struct
class Affine:
    scale: f32
    offset: f32
    shift: f32x2


@ox.struct
class Tagged:
    a: Affine
    tag: i32
    on: bool


@ox.kernel
def affine(t: Affine, x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(x):
        out[i] = x[i] * t.scale + t.offset + t.shift.x - t.shift.y


@ox.kernel
def tagged(t: Tagged, n: i32, out: DisjointSlice[f32]) -> None:
    assert n > 0
    i = thread.index_1d()
    if i < len(out) and t.on:
        out[i] = t.a.scale * f32(t.tag + n)


@ox.kernel
def weights(v: f32x4, w: i32x2, b: u8, out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = v.x + v.y * 2.0 + v.z * 3.0 + v.w * f32(w.x - w.y + i32(b))
"""


def compiled(tmp_path: Path) -> Any:
    src = tmp_path / "structsrc.py"
    src.write_text(textwrap.dedent(SOURCE))
    _, frontend = build_ir(src, "structsrc")
    return frontend


def kernels(tmp_path: Path) -> Any:
    return tuple(compiled(tmp_path).kernels)


@pytest.fixture
def specs(tmp_path: Path) -> dict[str, Any]:
    return {k.name: k for k in kernels(tmp_path)}


# ---- the manifest ------------------------------------------------------------------------------

def test_the_manifest_lists_the_scalar_fields_of_struct_and_vector_parameters(specs: dict[str, Any]) -> None:
    t, x, _ = specs["affine"].params
    assert t == ParamSpec("t", "struct", "Affine", 1, (("scale", "f32"), ("offset", "f32"), ("shift.0", "f32"),
                                                         ("shift.1", "f32")))
    assert t.is_aggregate and not t.is_scalar and not t.is_view
    assert x.fields == () and not x.is_aggregate
    nested = specs["tagged"].params[0]
    assert nested.kind == "struct" and nested.dtype == "Tagged"
    assert nested.fields == (("a.scale", "f32"), ("a.offset", "f32"), ("a.shift.0", "f32"), ("a.shift.1", "f32"),
                             ("tag", "i32"), ("on", "bool"))
    v, w, b, _ = specs["weights"].params
    assert v == ParamSpec("v", "vector", "f32x4", 1, (("0", "f32"), ("1", "f32"), ("2", "f32"), ("3", "f32")))
    assert w.fields == (("0", "i32"), ("1", "i32")) and b.kind == "scalar"


def test_fields_round_trip_through_the_manifest_json_and_other_parameters_are_written_as_before(
        specs: dict[str, Any]) -> None:
    m = ModuleManifest("m", "m.py", "0" * 64, tuple(specs.values()), {"sm_90": "m.cubin"})
    text = m.to_json()
    assert ModuleManifest.from_json(text) == m
    params = json.loads(text)["kernels"][0]["params"]
    assert params[0]["fields"] == [["scale", "f32"], ["offset", "f32"], ["shift.0", "f32"], ["shift.1", "f32"]]
    assert "fields" not in params[1] and "fields" not in params[2]


@pytest.mark.parametrize("param, message", [
    ({"name": "t", "kind": "struct", "dtype": "P"}, "a struct or vector parameter lists its fields"),
    ({"name": "t", "kind": "scalar", "dtype": "f32", "fields": [["x", "f32"]]}, "a struct or vector parameter lists"),
    ({"name": "t", "kind": "vector", "dtype": "f32x2", "fields": [["0"]]}, "expected [field path, scalar type]"),
    ({"name": "t", "kind": "vector", "dtype": "f32x2", "fields": [[0, "f32"]]}, "fields[0][0]: expected a string"),
])
def test_a_manifest_with_broken_fields_is_refused_naming_the_field(param: dict[str, Any], message: str) -> None:
    data = {"format": 1, "module": "m", "source": "m.py", "source_sha256": "", "cubins": {},
            "kernels": [{"name": "k", "symbol": "k", "params": [param]}]}
    with pytest.raises(ManifestError) as info:
        ModuleManifest.from_json(json.dumps(data))
    assert "kernels[0].params[0].fields" in str(info.value) and message in str(info.value)


def test_the_entry_point_takes_each_scalar_field_as_its_own_parameter(tmp_path: Path) -> None:
    src = tmp_path / "structsrc.py"
    src.write_text(textwrap.dedent(SOURCE))
    compiled = compile_module(src, "structsrc", CompileOptions(archs=("sm_90",), link_cubins=False))
    ptx = compiled.ptx["sm_90"]
    ptx = ptx if isinstance(ptx, str) else ptx.decode()

    kept = {k.symbol: k.param_slots for k in compiled.kernels}

    def entry(name: str, full: list[str]) -> None:
        """The entry declares ``full`` (one parameter per slot), less the parameters its code
        never reads (lower/entry_params.py: KernelSpec.param_slots)."""
        match = re.search(rf"\.entry {name}\(([^)]*)\)", ptx)
        assert match is not None, name
        lines = match.group(1).strip().splitlines()
        assert [line.split()[-1].rstrip(",") for line in lines] == [f"{name}_param_{i}" for i in range(len(lines))]
        slots = kept[name] if kept[name] is not None else range(len(full))
        assert [line.split()[1] for line in lines] == [full[i] for i in slots]

    entry("affine", [".f32"] * 4 + [".u64"] * 4)
    entry("tagged", [".f32"] * 4 + [".u32", ".u8", ".u32", ".u64", ".u64"])
    entry("weights", [".f32"] * 4 + [".u32", ".u32", ".u8", ".u64", ".u64"])
    assert kept["tagged"] == (0, 4, 5, 6, 7, 8)  # t.a.scale and what follows the struct: what it reads


def test_a_thread_index_is_still_no_kernel_parameter(tmp_path: Path) -> None:
    from oxide.errors import CompileError

    src = tmp_path / "kern.py"
    src.write_text("import oxide as ox\nfrom oxide import ThreadIndex\n\n@ox.kernel\ndef k(i: ThreadIndex) -> None:\n"
                   "    pass\n")
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    assert "kern.py:5:7: error: a kernel parameter cannot be a ThreadIndex" in str(info.value)


# ---- the runtime (fake driver) -----------------------------------------------------------------

def module(tmp_path: Path, drv: FakeDriver) -> Any:
    frontend = compiled(tmp_path)
    specs = tuple(frontend.kernels)
    # every entry point of each kernel (its fast instance too): no lowering, so each takes every slot
    drv.signatures = {symbol: slot_types(k.params) for k in specs for symbol in k.instances()}
    return make_module(tmp_path, SOURCE, specs, error_sites=tuple(frontend.error_sites))


def test_a_struct_argument_is_packed_as_its_fields_one_slot_each(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = module(tmp_path, fake_driver)
    x, out = FakeArray(5, ptr=0x1000), FakeArray(5, ptr=0x2000)
    m.affine[1, 32](m.Affine(1.5, -2.25, m.ox.f32x2(0.5, 4.0)), x, out)
    m.affine[1, 32](m.Affine(3, 7, [1, 2]), x, out)  # ints convert, a list is a vector's lanes
    record = np.array([(0.75, 1.25, (2.5, -8.0))],
                      dtype=np.dtype([("scale", "<f4"), ("offset", "<f4"), ("shift", "<f4", (2,))]))[0]
    m.affine[1, 32](record, x, out)
    values = [launch["values"] for launch in fake_driver.launches]
    assert values == [
        [1.5, -2.25, 0.5, 4.0, 0x1000, 5, 0x2000, 5],
        [3.0, 7.0, 1.0, 2.0, 0x1000, 5, 0x2000, 5],
        [0.75, 1.25, 2.5, -8.0, 0x1000, 5, 0x2000, 5],
    ]


def test_a_nested_struct_and_its_bool_field_and_a_precondition_after_it(tmp_path: Path,
                                                                        fake_driver: FakeDriver) -> None:
    m = module(tmp_path, fake_driver)
    out = FakeArray(3, ptr=0x3000)
    m.tagged[1, 32](m.Tagged(m.Affine(2.0, 0.5, (1.0, -1.0)), -7, True), 9, out)
    assert fake_driver.launches[-1]["values"] == [2.0, 0.5, 1.0, -1.0, -7, 1, 9, 0x3000, 3]
    # `assert n > 0` reads slot 6 (after the struct's six), checked before the launch
    with pytest.raises(Exception, match="n > 0"):
        m.tagged[1, 32](m.Tagged(m.Affine(2.0, 0.5, (1.0, -1.0)), 3, False), 0, out)
    assert len(fake_driver.launches) == 1


def test_a_vector_argument_from_a_tuple_a_list_or_a_numpy_array(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = module(tmp_path, fake_driver)
    out = FakeArray(4, ptr=0x4000)
    m.weights[1, 32](m.ox.f32x4(1.0, 2.0, 3.0, 4.0), (5, -6), 7, out)
    m.weights[1, 32]([0.5, 0.25, 0.125, -1.0], np.array([1, 2], dtype=np.int32), np.uint8(3), out)
    m.weights[1, 32](np.array([9.0, 8.0, 7.0, 6.0], dtype=np.float32), [np.int64(-3), 4], 0, out)
    assert [launch["values"] for launch in fake_driver.launches] == [
        [1.0, 2.0, 3.0, 4.0, 5, -6, 7, 0x4000, 4],
        [0.5, 0.25, 0.125, -1.0, 1, 2, 3, 0x4000, 4],
        [9.0, 8.0, 7.0, 6.0, -3, 4, 0, 0x4000, 4],
    ]


@pytest.mark.parametrize("call, message", [
    (lambda m, x, o: m.affine[1, 32]((1.0, 2.0, (3.0, 4.0)), x, o),
     "parameter 't' of affine needs the struct Affine (an instance of its @oxide.struct class, or a NumPy record with the "
     "fields scale, offset, shift); got tuple (1.0, 2.0, (3.0, 4.0))"),
    (lambda m, x, o: m.affine[1, 32](m.Tagged(m.Affine(1.0, 2.0, (3.0, 4.0)), 1, True), x, o),
     "parameter 't' of affine needs the struct Affine (an instance of its @oxide.struct class, or a NumPy record with the "
     "fields scale, offset, shift); got Tagged"),
    (lambda m, x, o: m.affine[1, 32](m.Affine(1.0, 2.0, (3.0, 4.0, 5.0)), x, o),
     "parameter 't' of affine needs a vector of 2 lanes (a tuple, a list or a 1-D NumPy array) (field shift); "
     "got tuple (3.0, 4.0, 5.0)"),
    (lambda m, x, o: m.affine[1, 32](m.Affine("a", 2.0, (3.0, 4.0)), x, o),
     "parameter 't' of affine (field scale) needs a number (f32); got str 'a'"),
    (lambda m, x, o: m.affine[1, 32](np.zeros(1, dtype=[("scale", "<f4"), ("offset", "<f4")])[0], x, o),
     "parameter 't' of affine needs the struct Affine (an instance of its @oxide.struct class, or a NumPy record with the "
     "fields scale, offset, shift); got void"),
    (lambda m, x, o: m.weights[1, 32]((1.0, 2.0, 3.0), (1, 2), 0, o),
     "parameter 'v' of weights needs a vector of 4 lanes (a tuple, a list or a 1-D NumPy array); got tuple "
     "(1.0, 2.0, 3.0)"),
    (lambda m, x, o: m.weights[1, 32](np.ones((2, 2), dtype=np.float32), (1, 2), 0, o),
     "parameter 'v' of weights needs a vector of 4 lanes (a tuple, a list or a 1-D NumPy array); got ndarray"),
    (lambda m, x, o: m.weights[1, 32]((1.0, 2.0, 3.0, 4.0), (1, 2**40), 0, o),
     "parameter 'w' of weights (field 1) needs an integer in the range of i32 (-2147483648..2147483647); got "
     "1099511627776"),
    (lambda m, x, o: m.weights[1, 32](2.0, (1, 2), 0, o),
     "parameter 'v' of weights needs a vector of 4 lanes (a tuple, a list or a 1-D NumPy array); got float 2.0"),
])
def test_a_bad_struct_or_vector_argument_is_an_error_naming_the_kernel_and_parameter(
        tmp_path: Path, fake_driver: FakeDriver, call: Any, message: str) -> None:
    m = module(tmp_path, fake_driver)
    with pytest.raises(TypeError) as info:
        call(m, FakeArray(4, ptr=0x1000), FakeArray(4, ptr=0x2000))
    assert str(info.value).startswith(message), str(info.value)
    assert fake_driver.launches == []


@pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")
def test_the_c_launcher_leaves_struct_and_vector_kernels_to_the_python_path(tmp_path: Path,
                                                                            c_driver: CFakeDriver) -> None:
    m = module(tmp_path, c_driver)
    out = FakeArray(4, ptr=0x4000)
    for k in range(3):
        m.weights[1, 32]((1.0, 2.0, 3.0, float(k)), (5, -6), 7, out)
    assert paths(c_driver) == ["python"] * 3
    assert [launch["values"][3] for launch in c_driver.launches] == [0.0, 1.0, 2.0]


@needs_cxx
def test_launch_hpp_refuses_kernels_with_struct_or_vector_parameters(tmp_path: Path) -> None:
    lines = launch_hpp_answers(tmp_path, "structsrc", kernels(tmp_path), ["affine", "weights"])
    assert lines == [
        "refused: structsrc.py:21: kernel 'affine' parameter 't' is a struct (Affine), passed as its scalar fields, "
        "which this C++ API does not pack yet: launch it from Python",
        "refused: structsrc.py:36: kernel 'weights' parameter 'v' is a vector (f32x4), passed as its scalar fields, "
        "which this C++ API does not pack yet: launch it from Python",
    ]


def test_an_extern_kernel_cannot_take_a_struct_or_vector(tmp_path: Path) -> None:
    from oxide.errors import CompileError

    src = tmp_path / "kern.py"
    (tmp_path / "k.cu").write_text('extern "C" __global__ void ox_fill(float4 v, float* out, long long n) {}\n')
    src.write_text("import oxide as ox\nfrom oxide import MutSlice, f32, f32x4\n\n"
                   "@ox.extern_kernel(\"ox_fill\", sources=[\"k.cu\"])\n"
                   "def fill(v: f32x4, out: MutSlice[f32]) -> None: ...\n")
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    message = str(info.value).replace(str(src), "kern.py")
    assert "kern.py:5:10: error: a parameter of an @extern_kernel cannot be a vector (f32x4)" in message
    assert "hint: pass its fields as scalar parameters, or write the kernel in Python" in message
