"""Manifests on disk: checked against their schema when read, code file names confined to
``_oxide/``, and a bad manifest is one message that names the manifest file. No GPU needed."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oxide.abi.manifest import EXPRESSION_MANIFEST_FORMATS, MANIFEST_FORMAT
from oxide.abi.preconditions import OPCODE, STACK_LIMIT, compile_expression
from oxide.errors import CudaError
from oxide.runtime import artifacts
from oxide.runtime.manifest import (
    ErrorSite,
    KernelSpec,
    ManifestError,
    ModuleManifest,
    ParamSpec,
    Precondition,
    load_manifest,
    manifest_path,
)

EXPR = ["lt", ["arg", 2], ["const", 2]]  # len(x) < 2
GOOD = ModuleManifest(
    module="pk.ops",
    source="ops.py",
    source_sha256="a" * 64,
    kernels=(KernelSpec("scale", "scale", (ParamSpec("a", "scalar", "f32"), ParamSpec("x", "slice", "f32")),
                        {"T": "f32"}, "ops.py", 7, (Precondition(1, tuple(compile_expression(EXPR))),)),),
    cubins={"sm_80": "pk.ops.fatbin", "sm_90": "pk.ops.fatbin"},
    ptx={"sm_90": "pk.ops.fatbin"},
    error_sites=(ErrorSite(1, "bounds", "scale", "ops.py", 9, 5, "x[i]"),),
    sources={"../lib/helpers.py": "b" * 64},
)


def _data() -> dict[str, Any]:
    out: dict[str, Any] = json.loads(GOOD.to_json())
    return out


def test_round_trip() -> None:
    assert ModuleManifest.from_json(GOOD.to_json()) == GOOD


def _expression_format(data: dict[str, Any], fmt: int = 3) -> dict[str, Any]:
    """``data`` as an older build wrote it: its precondition an expression."""
    data["format"] = fmt
    data["kernels"][0]["preconditions"] = [{"site": 1, "expr": EXPR}]
    return data


def test_manifests_are_written_in_format_4_and_the_older_formats_are_still_read() -> None:
    """Format 4: a precondition is its program, which every launcher evaluates as it is; a
    runtime that reads an expression alone refuses these manifests. The expressions of an older
    build (formats 1 to 3; format 2: entry points may declare only the slots they read) are
    compiled as they are read."""
    data = _data()
    assert data["format"] == MANIFEST_FORMAT == 4
    assert data["kernels"][0]["preconditions"] == [{"site": 1, "code": [[OPCODE["arg"], 2], [OPCODE["const"], 2],
                                                                       [OPCODE["lt"], 0]]}]
    for fmt in EXPRESSION_MANIFEST_FORMATS:
        assert ModuleManifest.from_json(json.dumps(_expression_format(_data(), fmt))) == GOOD


@pytest.mark.parametrize("name", ["../../x", "../pk.ops.fatbin", "/etc/passwd", "sub/pk.ops.cubin", "..",
                                  "a\\b.cubin", "C:x.cubin", ""])
def test_code_file_names_stay_in_the_artifact_dir(name: str) -> None:
    for field in ("cubins", "ptx"):
        data = _data()
        data[field]["sm_90"] = name
        with pytest.raises(ManifestError, match=rf"^{field}\['sm_90'\]: "):
            ModuleManifest.from_json(json.dumps(data))


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: [d], "the manifest: expected an object, got list"),
    (lambda d: "text", "the manifest: expected an object, got str 'text'"),
    (lambda d: {k: v for k, v in d.items() if k != "kernels"}, "kernels: missing"),
    (lambda d: {**d, "kernels": {"scale": 1}}, "kernels: expected a list, got dict"),
    (lambda d: {**d, "cubins": ["sm_90"]}, "cubins: expected an object, got list"),
    (lambda d: {**d, "cubins": {"sm_90": 3}}, "cubins['sm_90']: expected a string, got int 3"),
    (lambda d: {**d, "module": None}, "module: expected a string, got NoneType None"),
    (lambda d: {**d, "sources": {"x.py": 1}}, "sources['x.py']: expected a string, got int 1"),
    (lambda d: {**d, "format": 99}, "manifest format 99, this oxide reads formats 1, 2, 3, 4, 5 (another oxide release built it)"),
    (lambda d: {**d, "format": True}, "manifest format True, this oxide reads formats 1, 2, 3, 4, 5 (another oxide release built it)"),
])
def test_schema_errors_name_the_field(change: Any, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        ModuleManifest.from_json(json.dumps(change(_data())))
    assert str(info.value) == message


def _kernel_change(path: str, value: Any) -> dict[str, Any]:
    data = _data()
    target: Any = data
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    for key in keys[:-1]:
        target = target[key]
    if value is KeyError:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return data


@pytest.mark.parametrize(("path", "value", "message"), [
    ("kernels.0.params.1.kind", "pointer", "kernels[0].params[1].kind: unknown parameter kind 'pointer'"),
    ("kernels.0.params.1.ndim", "1", "kernels[0].params[1].ndim: expected an integer, got str '1'"),
    ("kernels.0.params.1.ndim", -1, "kernels[0].params[1].ndim: -1 is outside 1 to 1 for a slice parameter"),
    ("kernels.0.params.0", ["a", "scalar", "f32"], "kernels[0].params[0]: expected an object, got list"),
    ("kernels.0.symbol", KeyError, "kernels[0].symbol: missing"),
    ("kernels.0.line", True, "kernels[0].line: expected an integer, got bool True"),
    ("kernels.0.preconditions.0.site", "1", "kernels[0].preconditions[0].site: expected an integer, got str '1'"),
    ("error_sites.0.line", None, "error_sites[0].line: expected an integer, got NoneType None"),
    ("error_sites.0.what", KeyError, "error_sites[0].what: missing"),
])
def test_nested_schema_errors_name_the_field(path: str, value: Any, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        ModuleManifest.from_json(json.dumps(_kernel_change(path, value)))
    assert str(info.value) == message


TENSOR = {"name": "t", "kind": "tensor", "dtype": "f32", "ndim": 2}


@pytest.mark.parametrize(("path", "value", "message"), [
    ("source", "/etc/passwd", "source: '/etc/passwd' is not a plain file name (code files lie in _oxide/ itself) "
                              "(the module's source lies beside its _oxide/)"),
    ("source", "../other/ops.py", "source: '../other/ops.py' is not a plain file name (code files lie in _oxide/ "
                                  "itself) (the module's source lies beside its _oxide/)"),
    ("source", "..", "source: '..' is empty or a directory (the module's source lies beside its _oxide/)"),
    ("source", "ops\u0000.py", "source: 'ops\\x00.py' contains a NUL character"),
    ("source_sha256", "xyz", "source_sha256: 'xyz' is not a SHA-256 (64 hex digits)"),
    ("module", "pk ops", "module: 'pk ops' is not a dotted module name"),
    ("module", "a" * 5000, "module: a string of 5000 characters, more than 4096"),
    ("cuda_driver", 10**12, "cuda_driver: 1000000000000 is outside 0 to 1000000"),
    ("cubins", {"sm_90; rm -rf": "x.cubin"}, "cubins: 'sm_90; rm -rf' is not a GPU architecture (sm_90, sm_90a, compute_90)"),
    ("sources", {"/abs/helpers.py": "b" * 64}, "sources: '/abs/helpers.py' is not a relative posix path"),
    ("sources", {"../lib/helpers.py": "nope"}, "sources['../lib/helpers.py']: 'nope' is not a SHA-256 (64 hex digits)"),
    ("kernels.0.params.1", dict(TENSOR, ndim=10**12),
     "kernels[0].params[1].ndim: 1000000000000 is outside 1 to 32 for a tensor parameter"),
    ("kernels.0.params.1", dict(TENSOR, ndim=0), "kernels[0].params[1].ndim: 0 is outside 1 to 32 for a tensor parameter"),
    ("kernels.0.params.1.ndim", 2, "kernels[0].params[1].ndim: 2 is outside 1 to 1 for a slice parameter"),
    ("kernels.0.params.0.ndim", 10**12, "kernels[0].params[0].ndim: 1000000000000 is outside 0 to 32 for a scalar parameter"),
    ("kernels.0.params.0.dtype", "f33", "kernels[0].params[0].dtype: 'f33' is not a scalar type "
     "(i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, bool, f8e4m3, f8e5m2)"),
    ("kernels.0.params.0.name", "a-b", "kernels[0].params[0].name: 'a-b' is not a Python identifier"),
    ("kernels.0.params", [{"name": f"t{i}", "kind": "tensor", "dtype": "f32", "ndim": 32} for i in range(70)],
     "kernels[0].params: 4550 parameter slots, more than CUDA's parameter space holds (4095 of 8 bytes)"),
    ("kernels.0.name", "scale()", "kernels[0].name: 'scale()' is not a Python identifier"),
    ("kernels.0.symbol", "", "kernels[0].symbol: '' is not a symbol of the compiled code"),
    ("kernels.0.index32_symbol", "a b", "kernels[0].index32_symbol: 'a b' is not a symbol of the compiled code"),
    ("kernels.0.line", -3, "kernels[0].line: -3 is outside 0 to 2147483647"),
    ("kernels.0.preconditions.0.expr", ["arg", 3], "kernels[0].preconditions[0].expr[1]: 3 is outside 0 to 2"),
    ("kernels.0.preconditions.0.expr", ["grid", 3], "kernels[0].preconditions[0].expr[1]: 3 is outside 0 to 2"),
    ("kernels.0.preconditions.0.expr", ["lt", 1, 2], "kernels[0].preconditions[0].expr[1]: expected a list, got int 1"),
    ("kernels.0.preconditions.0.expr", ["pow", ["const", 1]],
     "kernels[0].preconditions[0].expr: ['pow', ['const', 1]] is not an operation of the precondition encoding"),
    ("kernels.0.preconditions.0.expr", ["cast", "f32", ["const", 1]],
     "kernels[0].preconditions[0].expr[1]: 'f32' is not an integer type (i8, i16, i32, i64, u8, u16, u32, u64, bool)"),
    ("kernels.0.preconditions.0.expr", ["const", 2**64], "kernels[0].preconditions[0].expr[1]: 18446744073709551616 is "
     "outside -9223372036854775808 to 18446744073709551615"),
    ("kernels.0.preconditions.0.expr", ["eq", ["arg", 0], ["const", 1]],
     "kernels[0].preconditions[0].expr[0]: slot 0 holds a f32, not an integer (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["arg"], 3]],
     "kernels[0].preconditions[0].code[0]: slot 3 is not one of the kernel's 3 slots (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["arg"], 0]],
     "kernels[0].preconditions[0].code[0]: slot 0 holds a f32, not an integer (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["grid"], 3]],
     "kernels[0].preconditions[0].code[0]: axis 3 is not 0, 1 or 2 (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["check"], 0]],
     "kernels[0].preconditions[0].code[0]: 19 is not an opcode of the encoding (0 to 18) (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [["lt", 0]],
     "kernels[0].preconditions[0].code[0]: ['lt', 0] is not an [opcode, operand] pair of integers (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["const"], 2**64]], "kernels[0].preconditions[0].code[0]: the constant "
     "18446744073709551616 is outside -9223372036854775808 to 18446744073709551615 (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["const"], 1], [OPCODE["cast"], 11]],
     "kernels[0].preconditions[0].code[1]: cast's type 11 is not the dtype code of i8, i16, i32, i64, u8, u16, u32, "
     "u64, bool (1, 2, 3, 4, 5, 6, 7, 8, 13) (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["const"], 1], [OPCODE["neg"], 13]],
     "kernels[0].preconditions[0].code[1]: neg's type 13 is not the dtype code of i8, i16, i32, i64, u8, u16, u32, "
     "u64 (1, 2, 3, 4, 5, 6, 7, 8) (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["const"], 1], [OPCODE["not"], 5]],
     "kernels[0].preconditions[0].code[1]: not takes the operand 0, not 5 (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["const"], 1], [OPCODE["eq"], 0]],
     "kernels[0].preconditions[0].code[1]: eq takes 2 values; the stack holds 1 (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["const"], 1]] * 2,
     "kernels[0].preconditions[0].code: leaves 2 values on the stack, not one (oxide.abi.preconditions)"),
    ("kernels.0.preconditions.0.code", [[OPCODE["const"], 1]] * (STACK_LIMIT + 1),
     "kernels[0].preconditions[0].code[32]: the stack holds more than 32 values (oxide.abi.preconditions)"),
    ("kernels.0.preconditions", [{"site": 1, "code": [[OPCODE["const"], 1]] * 31 + [[OPCODE["and"], 0]] * 30}] * 70,
     "kernels[0].preconditions: more than 4096 instructions in all (oxide.abi.preconditions.KERNEL_PROGRAM_LIMIT)"),
    ("error_sites.0.id", 2**40, "error_sites[0].id: 1099511627776 is outside 0 to 2147483647"),
    ("error_sites.0.col", -1, "error_sites[0].col: -1 is outside 0 to 2147483647"),
])
def test_every_field_is_bounded(path: str, value: Any, message: str) -> None:
    """Issue 26 item 5: an absolute or ../ "source" was accepted (hashed, and with JIT on
    compiled), ndim 10**12 ended in a bare MemoryError; each field is now checked and bounded,
    the ManifestError naming it."""
    data = _kernel_change(path, value)
    if ".expr" in path:  # an older build's expression
        data["format"] = 3
        del data["kernels"][0]["preconditions"][0]["code"]
    with pytest.raises(ManifestError) as info:
        ModuleManifest.from_json(json.dumps(data))
    assert str(info.value) == message


def test_module_arrays_and_nesting_are_bounded() -> None:
    array = {"name": "table", "symbol": "table", "space": "constant", "dtype": "f32", "shape": [4]}
    for change, message in [
        ({"shape": [2**30, 2**30]}, "arrays[0].shape: (1073741824, 1073741824) is 1152921504606846976 elements, "
                                    "more than a GPU's memory holds"),
        ({"shape": [-1]}, "arrays[0].shape: -1 is outside 0 to 281474976710656"),
        ({"shape": [1] * 9}, "arrays[0].shape: 9 items, more than the 8 it may have"),
        ({"space": "shared"}, "arrays[0].space: 'shared' is neither 'constant' nor 'global'"),
        ({"symbol": "a\nb"}, "arrays[0].symbol: 'a\\nb' is not a symbol of the compiled code"),
    ]:
        data = _data()
        data["arrays"] = [dict(array, **change)]
        with pytest.raises(ManifestError) as info:
            ModuleManifest.from_json(json.dumps(data))
        assert str(info.value) == message
    deep: Any = ["const", 1]
    for _ in range(100):
        deep = ["not", deep]
    with pytest.raises(ManifestError, match=r"expr(\[1\])+: nested deeper than 64"):
        data = _expression_format(_data())
        data["kernels"][0]["preconditions"][0]["expr"] = deep
        ModuleManifest.from_json(json.dumps(data))
    with pytest.raises(ManifestError, match="^the manifest: nested too deeply to be one$"):
        ModuleManifest.from_json("[" * 100_000 + "]" * 100_000)


def test_a_manifest_out_of_bounds_names_its_path_at_launch(tmp_path: Path) -> None:
    """The runtime's error names the manifest file and the field (no bare MemoryError)."""
    from oxide.errors import CudaError
    from oxide.runtime.artifacts import _read

    path = tmp_path / "_oxide" / "pk.ops.json"
    path.parent.mkdir()
    path.write_text(json.dumps(_kernel_change("kernels.0.params.1", dict(TENSOR, ndim=10**12))))
    with pytest.raises(CudaError) as info:
        _read(path, "pk.ops")
    assert str(info.value) == (f"cannot read the kernel manifest of module pk.ops ({path}): kernels[0].params[1].ndim: "
                               "1000000000000 is outside 1 to 32 for a tensor parameter; rebuild the package with "
                               "this version of oxide")


def test_optional_fields_default() -> None:
    data = _data()
    for key in ("ptx", "error_sites", "sources"):
        del data[key]
    for key in ("specialization", "file", "line", "preconditions"):
        del data["kernels"][0][key]
    del data["kernels"][0]["params"][0]["ndim"]
    m = ModuleManifest.from_json(json.dumps(data))
    assert (m.ptx, m.error_sites, m.sources) == ({}, (), {})
    k = m.kernels[0]
    assert (k.specialization, k.file, k.line, k.preconditions, k.params[0].ndim) == ({}, "", 0, (), 1)


@pytest.mark.parametrize(("text", "fragment"), [
    ("[]", ": the manifest: expected an object, got list"),
    (json.dumps({**json.loads(GOOD.to_json()), "cubins": {"sm_90": "../../../../etc/passwd"}}),
     ": cubins['sm_90']: '../../../../etc/passwd' is not a plain file name"),
    ('{"format": 1,', ": Expecting property name"),
])
def test_runtime_names_the_bad_manifest(tmp_path: Path, text: str, fragment: str) -> None:
    """The runtime's lookup turns a bad manifest into one CudaError naming the module and the
    manifest file (a JSON list gave AttributeError), and never loads a file outside _oxide/."""
    source = tmp_path / "ops.py"
    source.write_text("")
    path = manifest_path(tmp_path, "ops")
    path.parent.mkdir()
    path.write_text(text)
    artifacts._reset_for_tests()
    with pytest.raises(CudaError) as info:
        artifacts.locate_manifest(source, "ops", lambda: pytest.fail("no device needed"))
    message = str(info.value)
    assert message.startswith(f"cannot read the kernel manifest of module ops ({path}){fragment}"), message
    assert message.endswith("rebuild the package with this version of oxide")


def test_load_manifest_of_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ValueError):
        load_manifest(path)
