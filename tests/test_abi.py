"""oxide.abi is the one description of what crosses from the compiler to the runtime: the C
launcher's header is generated from it, and both sides read their layouts from it."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from oxide.abi import error_record, launcher, params, preconditions
from oxide.abi.header import HEADER_PATH, PUBLIC_HEADER_PATH, main, render_header, render_public_header
from oxide.abi.manifest import ModuleManifest, ParamSpec
from oxide.abi.scalars import SCALAR_TYPES
from oxide.abi.views import VIEW_ANNOTATIONS, ViewKind

ROOT = Path(__file__).resolve().parent.parent


def test_the_checked_in_headers_are_what_the_abi_generates() -> None:
    assert HEADER_PATH.read_text(encoding="utf-8") == render_header(), "run: python -m oxide.abi.header"
    assert PUBLIC_HEADER_PATH.read_text(encoding="utf-8") == render_public_header(), "run: python -m oxide.abi.header"
    assert main(["--check"]) == 0


def test_the_c_launcher_takes_its_constants_from_the_header_only() -> None:
    runtime = ROOT / "oxide" / "runtime"
    header = (runtime / "_launcher.h").read_text(encoding="utf-8")
    assert '#include "_abi.h"' in header
    files = sorted(runtime.glob("_launcher*.c"))
    assert len(files) > 1
    for path in [runtime / "_launcher.h", *files]:
        source = path.read_text(encoding="utf-8")
        if path.suffix == ".c":
            assert '#include "_launcher.h"' in source, f"{path.name} does not include _launcher.h"
        for name in ("ABI_VERSION", "MAX_NDIM"):
            assert not re.search(rf"#define\s+{name}\b", source), f"{name} is defined again in {path.name}"
        assert not re.search(r"enum\s*\{\s*DT_NONE", source) and not re.search(r"\bARRAY_TORCH\s*=", source)


def test_setup_builds_the_launcher_from_every_file_of_it() -> None:
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    listed = set(re.findall(r'"oxide/runtime/(_launcher\w*\.c)"', setup))
    assert listed == {p.name for p in (ROOT / "oxide" / "runtime").glob("_launcher*.c")}


def test_the_header_states_every_dtype_code_and_item_size() -> None:
    header = render_public_header()
    for name, code in launcher.DTYPE_CODES.items():
        assert f"OXIDE_DT_{name.upper()} = {code}" in header
        assert f"DT_{name.upper()} = OXIDE_DT_{name.upper()}" in render_header()  # the launcher's name for it
    sizes = re.search(r"#define OXIDE_DT_ITEMSIZES \{([^}]*)\}", header)
    assert sizes is not None
    table = [int(v) for v in sizes.group(1).split(",")]
    assert all(table[code] == SCALAR_TYPES[name].itemsize for name, code in launcher.DTYPE_CODES.items())
    assert f"OXIDE_RECORD_WORDS = {error_record.RECORD_WORDS}" in header
    assert re.search(r"= \d", render_header()) is None  # no number in the launcher's header: it names the public one's


def test_the_runtime_reads_the_abi() -> None:
    from oxide.runtime import kernel_errors
    from oxide.runtime import launcher as runtime_launcher
    from oxide.runtime import manifest

    assert runtime_launcher.DTYPE_CODES is launcher.DTYPE_CODES
    assert runtime_launcher.ARRAY_CAI == launcher.ARRAY_KINDS["cai"]
    assert kernel_errors.RECORD_WORDS == error_record.RECORD_WORDS
    assert kernel_errors.ERROR_PTR_SYMBOL == error_record.ERROR_PTR_SYMBOL.encode()
    assert manifest.ParamSpec is ParamSpec and manifest.ModuleManifest is ModuleManifest
    if runtime_launcher.ENABLED:  # the built extension agrees with the header it was built from
        assert runtime_launcher.MAX_NDIM == launcher.MAX_LAUNCH_NDIM


def test_a_view_kind_is_its_manifest_string() -> None:
    assert ViewKind.MUT_SLICE == "mut_slice" and {"mut_slice": 1}[ViewKind.MUT_SLICE] == 1
    assert f"{ViewKind.TENSOR}" == "tensor" and str(ViewKind.PTR) == "ptr"
    assert {k.annotation for k in ViewKind} == set(VIEW_ANNOTATIONS)
    assert [k.value for k in ViewKind if k.is_writable] == ["disjoint_slice", "mut_slice", "mut_tensor",
                                                            "disjoint_tensor", "ptr"]
    spec = ParamSpec("x", "disjoint_tensor", "f32", 2)
    assert spec.is_view and spec.is_tensor and spec.is_mutable_view
    assert not ParamSpec("p", "ptr", "f32").is_view  # a kernel never takes a Ptr
    assert ParamSpec("a", params.SCALAR_PARAM, "f32").is_scalar and not spec.is_scalar
    assert ParamSpec("c", params.CONSTEXPR_PARAM, "i64").is_constexpr and not spec.is_constexpr


@pytest.mark.parametrize("kind, ndim, slots", [
    (params.SCALAR_PARAM, 1, 1), (params.CONSTEXPR_PARAM, 1, 0), ("slice", 1, 2), ("mut_slice", 1, 2),
    ("tensor", 1, 3), ("disjoint_tensor", 2, 5), ("mut_tensor", 3, 7),
])
def test_the_slot_layout_is_what_the_runtime_packs(kind: str, ndim: int, slots: int) -> None:
    from oxide.runtime.launch import ArgPacker

    assert params.param_slot_count(kind, ndim) == slots
    packer = ArgPacker([ParamSpec("p", kind, "i32", ndim)])
    assert packer.struct.size == slots * params.SLOT_BYTES


def test_the_runtime_evaluates_every_precondition_operation() -> None:
    """Every operation of the expressions compiles into a program the manifest's reader takes,
    and every opcode (check, a launcher's own, aside) is one the runtime evaluates."""
    from oxide.runtime.preconditions import evaluate

    one, two = ["const", 1], ["const", 2]
    examples = {
        "const": one, "arg": ["arg", 0], "grid": ["grid", 0], "block": ["block", 1],
        "cast": ["cast", "u8", ["const", 257]], "neg": ["neg", "i32", one], "not": ["not", one],
        "and": ["and", [one, two]], "or": ["or", [one, ["const", 0]]],
        **{op: [op, "i64", one, two] for op in preconditions.ARITHMETIC.values()},
        **{op: [op, one, two] for op in preconditions.COMPARISONS.values()},
    }
    assert sorted(examples) == sorted(preconditions.OPERATIONS)
    seen: set[int] = set()
    for op in preconditions.OPERATIONS:
        program = preconditions.compile_expression(examples[op])
        assert preconditions.program_problem(program, ["i64"]) is None
        evaluate(program, [7], [1, 1, 1], [32, 4, 1])  # raises ValueError on an unknown opcode
        seen |= {code for code, _ in program}
    assert sorted(seen) == list(range(len(preconditions.OPCODES) - 1))
    assert preconditions.OPCODES[-1] == "check"


def test_the_lowering_writes_the_error_record_the_runtime_reads(tmp_path: Path) -> None:
    pytest.importorskip("llvmlite")
    from oxide_build.compile import CompileOptions, compile_module

    source = tmp_path / "k.py"
    source.write_text(
        "from oxide import kernel, thread, Slice, DisjointSlice, f32\n"
        "@kernel\n"
        "def copy(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n"
        "    i = thread.index_1d()\n"
        "    if i < len(out):\n"
        "        out[i] = x[i]\n"
    )
    compiled = compile_module(source, "k", CompileOptions(archs=("sm_90",), link_cubins=False, cache=False))
    for symbol in (error_record.ERROR_PTR_SYMBOL, error_record.MODULE_ID_SYMBOL, error_record.FAIL_FUNCTION):
        assert f'@"{symbol}"' in compiled.llvm_ir
    assert f"i64 0, i64 {error_record.FLAG_CLAIMED} monotonic" in compiled.llvm_ir
    assert f"store i64 {error_record.FLAG_PUBLISHED}, " in compiled.llvm_ir
    assert struct.calcsize(f"={error_record.RECORD_WORDS}q") == 8 * (error_record.LENGTH + 1)


def test_launch_hpp_and_the_c_launcher_take_the_contract_from_the_generated_header() -> None:
    """No number or kind name of the contract is written in launch.hpp or the C launcher: they name
    oxide/abi.h's (generated), and share the precondition evaluator of oxide/preconditions.h."""
    include = ROOT / "oxide" / "include" / "oxide"
    hpp = (include / "launch.hpp").read_text(encoding="utf-8")
    evaluator = (include / "preconditions.h").read_text(encoding="utf-8")
    assert '#include "abi.h"' in hpp and '#include "preconditions.h"' in hpp and '#include "abi.h"' in evaluator
    assert "oxide_preconditions_failed(" in hpp
    # comments, characters and strings (messages) aside
    code = re.sub(r"//[^\n]*|'(?:[^'\\]|\\.)'|\"(?:[^\"\\]|\\.)*\"", "", hpp)
    for literal in (r"\b17\b", r"\[16\]|\+ 16\b|== 16\b", r"1 \+ 2", r"2 \*", r"2147483647", r"!= 1 &&", r"<< 32\b",
                    r"\b256\b", r"\b(32|64|128)\b &&", r"OXIDE_DT_[IU]64\)", r"> 64\)"):
        assert not re.search(literal, code), f"launch.hpp writes {literal} itself"
    for kind in ("scalar", "constexpr", "tensor_map", "struct", "vector", *(k.value for k in ViewKind)):
        assert f'== "{kind}"' not in hpp and f'!= "{kind}"' not in hpp, f"launch.hpp compares with {kind!r} itself"
    for op in preconditions.OPCODES:
        assert not re.search(rf'(==|!=)\s*"{op}"|"{op}"\s*(==|!=)|compare\(\w*, *\d+, *"{op}"', hpp), \
            f"launch.hpp matches the precondition operation {op!r} itself"
    runtime = ROOT / "oxide" / "runtime"
    for path in sorted(runtime.glob("_launcher*.c")):
        source = path.read_text(encoding="utf-8")
        for literal in (r"1 \+ 2 \*", r"2 \* (nd|view->ndim)", r"MAX_SLOTS / 2\b", r'pre_is\(op, "', r"slots\+\+",
                        r"= DT_[IU]64;", r"DT_BOOL: return \d", r"nesting > \d"):
            assert not re.search(literal, source), f"{path.name} writes {literal} itself"
    pre = (runtime / "_launcher_preconditions.c").read_text(encoding="utf-8")
    assert '#include "../include/oxide/preconditions.h"' in pre and "oxide_preconditions_failed(" in pre
    for op in preconditions.OPCODES:
        assert f'"{op}"' not in pre, f"_launcher_preconditions.c spells {op!r} itself"


def test_the_public_header_compiles_as_c_and_cpp_and_states_the_layout(tmp_path: Path) -> None:
    import shutil
    import subprocess

    if shutil.which("gcc") is None or shutil.which("g++") is None:
        pytest.skip("no gcc/g++")
    include = ROOT / "oxide" / "include"
    program = (
        "#include <stdio.h>\n#include <oxide/preconditions.h>\n"
        "int main(void) {\n"
        "  for (int nd = 1; nd <= OXIDE_MAX_TENSOR_NDIM; nd++) printf(\"%d \", OXIDE_TENSOR_SLOTS(nd));\n"
        "  printf(\"%d %d %d %d\\n\", OXIDE_SLICE_SLOTS, OXIDE_SCALAR_SLOTS, OXIDE_TENSOR_MAP_SLOTS, OXIDE_OP_COUNT);\n"
        "  return 0;\n}\n"
    )
    want = " ".join(str(params.param_slot_count("tensor", nd)) for nd in range(1, 9))
    want += f" {params.param_slot_count('slice')} {params.param_slot_count('scalar')} "
    want += f"{params.param_slot_count('tensor_map')} {len(preconditions.OPCODES)}"
    for compiler, suffix, std in (("gcc", "c", "-std=c99"), ("g++", "cpp", "-std=c++17")):
        src = tmp_path / f"t.{suffix}"
        src.write_text(program)
        subprocess.run([compiler, std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", str(include), str(src), "-o",
                        str(tmp_path / f"t_{suffix}")], check=True)
        done = subprocess.run([str(tmp_path / f"t_{suffix}")], capture_output=True, text=True, check=True)
        assert done.stdout.strip() == want
