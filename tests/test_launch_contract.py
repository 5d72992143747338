"""One launch contract, three launchers: for the same manifest and the same arguments,
oxide/include/oxide/launch.hpp (built here, against a stand-in libcuda.so.1), the Python runtime's
Python path and its C launcher (both against the fake driver of tests/fakes.py) pass the same
words at the same slot offsets to cuLaunchKernel, and agree on which launch precondition fails.

The kernels are a table: scalars of several types, 1-D and N-d views, a declared subset of slots
(``param_slots``), and preconditions over arguments and launch dimensions that exercise wrapping
arithmetic, casts, a constant of 2**64 - 1 and every comparison and logical operation."""
from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    FUNC_ATTRIBUTES,
    CFakeDriver,
    FakeArray,
    FakeDriver,
    build_launch_program,
    build_stand_in_driver,
    c_driver,
    fake_driver,
    fresh_runtime,
    make_module,
    needs_compilers,
    slot_types,
)

from oxide.abi.manifest import ErrorSite, KernelSpec, ModuleManifest, ParamSpec, Precondition, entry_param_starts
from oxide.abi.preconditions import compile_expression
from oxide.errors import KernelError

__all__: list[str] = []

# ---- the table ----------------------------------------------------------------------------------

Scalar = tuple[str, Any]  # (dtype, value)
View = tuple[str, int, tuple[int, ...], tuple[int, ...]]  # (view kind, address, shape, strides in elements)


class Call(NamedTuple):
    args: tuple[Any, ...]  # Scalar or View, in parameter order
    grid: tuple[int, int, int]
    block: tuple[int, int, int]


class Case(NamedTuple):
    kernel: KernelSpec
    calls: tuple[Call, ...]


def _slice(kind: str, address: int, n: int) -> View:
    return (kind, address, (n,), (1,))


def _tensor(kind: str, address: int, shape: tuple[int, ...]) -> View:
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= extent
    return (kind, address, shape, tuple(strides))


def _site(i: int) -> str:
    return f"<site {i}>"


def _kernel(name: str, params: list[ParamSpec], conditions: dict[int, Any], **extra: Any) -> KernelSpec:
    return KernelSpec(name=name, symbol=name, params=tuple(params), file="contract.py", line=1,
                      preconditions=tuple(Precondition(site, tuple(compile_expression(expr)))
                                          for site, expr in conditions.items()), **extra)


A, B, C = 0x7E0000000000, 0x7E0010000000, 0x7E0020000000  # arrays far apart: no aliasing
H = 2**63 + 0x1000  # an address with the top bit set: a pointer slot is u64 (param_slot_dtypes), never i64
D = 0x7A0000000000  # a tensor spanning more than 2**31 elements, below them

# slots: a 0, x (pointer 1, length 2), n 3, out (pointer 4, length 5)
SLICES = Case(
    _kernel("slices", [ParamSpec("a", "scalar", "f32"), ParamSpec("x", "slice", "f32"), ParamSpec("n", "scalar", "i32"),
                       ParamSpec("out", "disjoint_slice", "f32")], {
        1: ["eq", ["arg", 2], ["cast", "i64", ["arg", 3]]],
        2: ["ge", ["arg", 5], ["arg", 2]],
        3: ["and", [["eq", ["block", 1], ["const", 1]], ["eq", ["block", 2], ["const", 1]],
                    ["eq", ["grid", 1], ["const", 1]]]],
        4: ["le", ["grid", 0], ["const", 65535]],
        5: ["lt", ["arg", 1], ["const", 2**63]],  # fails at x = H, read as u64; as i64 it would hold
    }),
    (
        Call((("f32", 1.5), _slice("slice", A, 100), ("i32", 100), _slice("disjoint_slice", B, 100)), (1, 1, 1), (128, 1, 1)),
        Call((("f32", -2.25), _slice("slice", A, 100), ("i32", 99), _slice("disjoint_slice", B, 100)), (1, 1, 1), (128, 1, 1)),
        Call((("f32", 0.0), _slice("slice", A, 100), ("i32", 100), _slice("disjoint_slice", B, 50)), (1, 1, 1), (128, 1, 1)),
        Call((("f32", 1.0), _slice("slice", A, 8), ("i32", 8), _slice("disjoint_slice", B, 8)), (1, 1, 1), (16, 16, 1)),
        Call((("f32", 1.0), _slice("slice", A, 8), ("i32", 8), _slice("disjoint_slice", B, 8)), (70000, 1, 1), (32, 1, 1)),
        Call((("f32", 1.0), _slice("slice", A, 1), ("i32", 1), _slice("disjoint_slice", B, 1)), (65535, 1, 1), (1, 1, 1)),
        Call((("f32", 1.0), _slice("slice", H, 4), ("i32", 4), _slice("disjoint_slice", B, 4)), (1, 1, 1), (4, 1, 1)),
    ),
)

# slots: t (pointer 0, shape 1 2, strides 3 4), s 5, flag 6, m 7, out (pointer 8, shape 9 10 11, strides 12 13 14)
TENSORS = Case(
    _kernel("tensors", [ParamSpec("t", "tensor", "f32", 2), ParamSpec("s", "scalar", "u32"),
                        ParamSpec("flag", "scalar", "bool"), ParamSpec("m", "scalar", "i64"),
                        ParamSpec("out", "mut_tensor", "f32", 3)], {
        11: ["ne", ["arg", 6], ["const", 0]],
        12: ["gt", ["add", "u32", ["arg", 5], ["const", 1]], ["const", 0]],  # wraps at s = 2**32 - 1
        13: ["ge", ["cast", "i32", ["arg", 7]], ["const", -5]],  # m = 2**31 is -2**31 as i32
        14: ["eq", ["mul", "i64", ["arg", 1], ["arg", 2]], ["mul", "i64", ["arg", 9], ["mul", "i64", ["arg", 10],
                                                                                       ["arg", 11]]]],
        15: ["or", [["lt", ["arg", 3], ["const", 0]], ["not", ["lt", ["neg", "i64", ["arg", 4]], ["const", -8]]]]],
        # 2**64 - s as u64 below 2**64 - 1: exact only if the constant is read as an integer (fails at s = 1)
        16: ["lt", ["cast", "u64", ["neg", "i64", ["arg", 5]]], ["const", 2**64 - 1]],
        17: ["ge", ["sub", "i16", ["arg", 12], ["const", 40000]], ["const", 0]],  # wraps in 16 bits
    }, index32_symbol="tensors__index32"),
    (
        Call((_tensor("tensor", A, (4, 6)), ("u32", 7), ("bool", True), ("i64", 3), _tensor("mut_tensor", B, (2, 3, 4))),
             (2, 1, 1), (64, 1, 1)),
        Call((_tensor("tensor", A, (4, 6)), ("u32", 7), ("bool", False), ("i64", 3), _tensor("mut_tensor", B, (2, 3, 4))),
             (2, 1, 1), (64, 1, 1)),
        Call((_tensor("tensor", A, (4, 6)), ("u32", 2**32 - 1), ("bool", True), ("i64", 3),
              _tensor("mut_tensor", B, (2, 3, 4))), (2, 1, 1), (64, 1, 1)),
        Call((_tensor("tensor", A, (4, 6)), ("u32", 1), ("bool", True), ("i64", 2**31), _tensor("mut_tensor", B, (2, 3, 4))),
             (1, 1, 1), (1, 1, 1)),
        Call((_tensor("tensor", A, (4, 6)), ("u32", 1), ("bool", True), ("i64", -2**40 - 3),
              _tensor("mut_tensor", B, (2, 3, 4))), (1, 1, 1), (1, 1, 1)),
        Call((_tensor("tensor", A, (5, 6)), ("u32", 1), ("bool", True), ("i64", 0), _tensor("mut_tensor", B, (2, 3, 4))),
             (1, 2, 3), (4, 5, 6)),
        Call((("tensor", A, (4, 6), (1, 4)), ("u32", 2), ("bool", True), ("i64", 0), _tensor("mut_tensor", B, (2, 3, 4))),
             (1, 1, 1), (1, 1, 1)),  # a transposed t: its row stride is 1, its column stride 4
        Call((("tensor", A, (4, 6), (16, 9)), ("u32", 2), ("bool", True), ("i64", 0), _tensor("mut_tensor", B, (2, 3, 4))),
             (1, 1, 1), (1, 1, 1)),  # -9 < -8: site 15 fails
        Call((_tensor("tensor", A, (4, 10)), ("u32", 2), ("bool", True), ("i64", 0), _tensor("mut_tensor", B, (2, 4, 5))),
             (1, 1, 1), (1, 1, 1)),  # out's first stride 20 - 40000 wraps to 25556 in i16: holds
        Call((_tensor("tensor", A, (200, 100)), ("u32", 2), ("bool", True), ("i64", 0),
              _tensor("mut_tensor", B, (2, 100, 100))), (1, 1, 1), (1, 1, 1)),  # 10000 - 40000 is -30000: fails
        Call((("tensor", D, (4, 6), (2**31, 1)), ("u32", 2), ("bool", True), ("i64", 0),
              _tensor("mut_tensor", B, (2, 3, 4))), (1, 1, 1), (1, 1, 1)),  # a stride past INDEX32_LIMIT: not index32
        Call((("tensor", D, (4, 6), (2**31 - 1, 1)), ("u32", 2), ("bool", True), ("i64", 0),
              _tensor("mut_tensor", B, (2, 3, 4))), (1, 1, 1), (1, 1, 1)),  # its span is past it: not index32
        Call((("tensor", D, (1, 6), (2**31 - 1, 1)), ("u32", 2), ("bool", True), ("i64", 0),
              _tensor("mut_tensor", B, (1, 2, 12))), (1, 1, 1), (1, 1, 1)),  # a size-1 axis spans nothing: index32
    ),
)

# the entry point declares x's pointer, n and out's pointer (slots 0, 2, 3) of x (0, 1), n 2, out (3, 4)
DECLARED = Case(
    _kernel("declared", [ParamSpec("x", "slice", "f32"), ParamSpec("n", "scalar", "i64"),
                         ParamSpec("out", "mut_slice", "f32")], {21: ["lt", ["arg", 2], ["arg", 4]]},
            param_slots=(0, 2, 3)),
    (
        Call((_slice("slice", A, 10), ("i64", 9), _slice("mut_slice", C, 10)), (1, 1, 1), (32, 1, 1)),
        Call((_slice("slice", A, 10), ("i64", 10), _slice("mut_slice", C, 10)), (1, 1, 1), (32, 1, 1)),
    ),
)

CASES = (SLICES, TENSORS, DECLARED)
SITES = tuple(ErrorSite(pre.site, "assert", case.kernel.name, "contract.py", 10 + pre.site, 5, _site(pre.site))
              for case in CASES for pre in case.kernel.preconditions)
SOURCE = "from oxide import kernel\n" + "".join(
    f"\n@kernel\ndef {case.kernel.name}({', '.join(p.name for p in case.kernel.params)}) -> None:\n    pass\n"
    for case in CASES)

Outcome = tuple[str, Any]  # ("launch", (entry point, [(slot offset, word), ...])) or ("refused", site id)

# ---- the Python runtime (its Python path, or its C launcher) ------------------------------------

_TYPESTR = {"f32": "<f4"}


def _python_arg(arg: Any) -> Any:
    if arg[0] in ("f32", "f64"):
        return float(arg[1])
    if arg[0] == "bool":
        return bool(arg[1])
    if len(arg) == 2:
        return int(arg[1])
    kind, address, shape, strides = arg
    if "tensor" not in kind:  # a 1-D array: contiguous, as the interface says by no strides
        return FakeArray(ptr=address, shape=shape, typestr="<f4")
    return FakeArray(ptr=address, shape=shape, strides=tuple(4 * s for s in strides), typestr="<f4")


def _declared(kernel: KernelSpec) -> list[int]:
    return list(kernel.param_slots) if kernel.param_slots is not None else entry_param_starts(kernel.params)


def run_python(tmp_path: Path, drv: FakeDriver, monkeypatch: pytest.MonkeyPatch) -> tuple[list[list[Outcome]], Path, str]:
    """Launches every call of the table through the runtime; what each passed or refused."""
    words: list[tuple[str, list[tuple[int, int]]]] = []
    launch = FakeDriver.cuLaunchKernel

    def recording(self: FakeDriver, fn: str, *rest: Any) -> Any:
        params = rest[-2]
        n = len(self.signatures[fn])
        pointers = [int(p or 0) for p in (ctypes.c_void_p * max(n, 1)).from_address(params)][:n] if n else []
        first = pointers[0] if n else 0
        words.append((fn, [((p - first) // 8, int.from_bytes(ctypes.string_at(p, 8), "little")) for p in pointers]))
        return launch(self, fn, *rest)

    monkeypatch.setattr(FakeDriver, "cuLaunchKernel", recording)
    for case in CASES:
        by_start = dict(zip(entry_param_starts(case.kernel.params), slot_types(case.kernel.params)))
        drv.signatures[case.kernel.symbol] = [by_start[s] for s in _declared(case.kernel)]
        if case.kernel.index32_symbol:  # the same slots (no index32_param_slots)
            drv.signatures[case.kernel.index32_symbol] = drv.signatures[case.kernel.symbol]
    module = make_module(tmp_path, SOURCE, tuple(c.kernel for c in CASES), error_sites=SITES)
    for case in CASES:  # the first launch of a kernel configures the C launcher's plan of it
        call = case.calls[0]
        getattr(module, case.kernel.name)[call.grid, call.block](*(_python_arg(a) for a in call.args))
    outcomes: list[list[Outcome]] = []
    for case in CASES:
        k = getattr(module, case.kernel.name)
        results: list[Outcome] = []
        for call in case.calls:
            try:
                k[call.grid, call.block](*(_python_arg(a) for a in call.args))
            except KernelError as e:
                found = re.search(r"<site (\d+)>", str(e))
                assert found, str(e)
                results.append(("refused", int(found.group(1))))
            else:
                results.append(("launch", words[-1]))
        outcomes.append(results)
    return outcomes, tmp_path / "_oxide", module.__name__


# ---- oxide/launch.hpp -----------------------------------------------------------------------------

LAUNCH = FUNC_ATTRIBUTES + r"""
static int expected;
void fake_expect(int n) { expected = n; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *s, void **p, void **e) {
  printf("launch %s", (const char *)f);
  for (int i = 0; i < expected; i++)
    printf(" %lld:%llu", (long long)(((char *)p[i] - (char *)p[0]) / 8), *(unsigned long long *)p[i]);
  printf("\n");
  return 0;
}
"""

_CPP_TYPES = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "u32": "uint32_t", "bool": "bool"}


def _cpp_arg(arg: Any) -> str:
    if len(arg) == 2:
        dtype, value = arg
        if dtype == "bool":
            return "true" if value else "false"
        if dtype == "f32":
            return f"{float(value)!r}f"
        if dtype == "i64" and value == -2**63:
            return "INT64_MIN"
        return f"{_CPP_TYPES[dtype]}({value}{'ULL' if dtype[0] == 'u' else 'LL'})"
    kind, address, shape, strides = arg
    writable = kind.startswith(("mut_", "disjoint_"))
    pointer = f"reinterpret_cast<{'' if writable else 'const '}float*>(uintptr_t{{{address}ULL}})"
    if "tensor" in kind:
        return (f"oxide::tensor({pointer}, {{{', '.join(map(str, shape))}}}, "
                f"{{{', '.join(map(str, strides))}}})")
    return f"oxide::{'mut_slice' if writable else 'slice'}({pointer}, {shape[0]})"


def run_cpp(tmp_path: Path, artifact_dir: Path, module: str) -> list[list[Outcome]]:
    lib = build_stand_in_driver(tmp_path, LAUNCH)
    body = []
    for case in CASES:
        body.append(f'  {{ oxide::Kernel k = m.kernel("{case.kernel.name}");')
        for call in case.calls:
            body.append(f"    expect({len(_declared(case.kernel))});")
            body.append(f"    try {{ k.launch({{{', '.join(map(str, call.grid))}}}, {{{', '.join(map(str, call.block))}}}, "
                        f"nullptr, {', '.join(_cpp_arg(a) for a in call.args)}); }}")
            body.append('    catch (const oxide::Error& e) { std::printf("refused %s\\n", e.what()); }')
        body.append('    std::printf("end\\n"); }')
    main = (
        "#include <cstdint>\n#include <cstdio>\n#include <dlfcn.h>\n#include <oxide/launch.hpp>\n"
        "int main(int, char** argv) {\n"
        '  auto expect = reinterpret_cast<void (*)(int)>(dlsym(dlopen("libcuda.so.1", RTLD_NOW), "fake_expect"));\n'
        f'  oxide::Module m = oxide::Module::open(argv[1], "{module}");\n'
        + "\n".join(body) + "\n  std::fflush(stdout);\n  return 0;\n}\n"
    )
    build_launch_program(tmp_path, main)
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib)}
    done = subprocess.run([str(tmp_path / "main"), str(artifact_dir)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    outcomes: list[list[Outcome]] = [[]]
    for line in done.stdout.splitlines():
        if line == "end":
            outcomes.append([])
        elif line.startswith("refused "):
            found = re.search(r"<site (\d+)>", line)
            assert found and "launch precondition failed" in line, line
            outcomes[-1].append(("refused", int(found.group(1))))
        else:
            assert line.startswith("launch"), line
            fn, *words = line.split()[1:]
            outcomes[-1].append(("launch", (fn, [tuple(map(int, w.split(":"))) for w in words])))
    assert outcomes[-1] == []
    return outcomes[:-1]


# ---- the tests ----------------------------------------------------------------------------------


@needs_compilers
@pytest.mark.parametrize("launcher", ["python", "c"])
def test_launch_hpp_and_the_runtime_pack_and_check_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        launcher: str) -> None:
    drv: FakeDriver = CFakeDriver() if launcher == "c" else FakeDriver()
    from oxide.runtime import device
    from oxide.runtime import launcher as runtime_launcher

    if launcher == "c" and not runtime_launcher.ENABLED:
        pytest.skip("the C launcher is not built")
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    (tmp_path / "py").mkdir()
    python, artifact_dir, module = run_python(tmp_path / "py", drv, monkeypatch)
    cpp = run_cpp(tmp_path, artifact_dir, module)
    assert cpp == python
    # the table means something: every precondition fails somewhere and every kernel launches
    refused = {site for results in python for kind, site in results if kind == "refused"}
    assert refused == {s.id for s in SITES}
    assert all(any(kind == "launch" for kind, _ in results) for results in python)
    entry_points = [launched[0] for results in python for kind, launched in results if kind == "launch"]
    assert {"tensors", "tensors__index32"} <= set(entry_points)  # the index32 choice is compared too
    if launcher == "c":  # after the first launch of each entry point (which configures the kernel's C plan
        # and loads the function), the C launcher took every launch itself (it leaves a refusal to
        # Python, which raises it)
        seen: set[str] = set()
        later = []
        for launched in drv.launches:
            if launched["fn"] in seen:
                later.append(launched["path"])
            seen.add(launched["fn"])
        assert len(later) >= 7 and set(later) == {"c"}



_FORMAT_PROGRAM = (
    "#include <cstdio>\n#include <dlfcn.h>\n#include <oxide/launch.hpp>\n"
    "int main(int argc, char** argv) {\n"
    '  auto expect = reinterpret_cast<void (*)(int)>(dlsym(dlopen("libcuda.so.1", RTLD_NOW), "fake_expect"));\n'
    "  expect(2);\n"
    "  for (int i = 2; i < argc; ++i)\n"
    '    try { oxide::Module::open(argv[1], "m").kernel(argv[i]).launch({1}, {32}, nullptr, int64_t(5),\n'
    "          oxide::mut_slice(reinterpret_cast<float*>(uintptr_t{4096}), 8)); }\n"
    '    catch (const oxide::Error& e) { std::printf("refused %s\\n", e.what()); }\n'
    "  return 0;\n}\n")

# launch.hpp's cuLaunchKernel for these tests: the entry point, the image of the code it came from
# (fake_image_of, tests/fakes.py) and the words of its first `expected` parameters
_IMAGE_LAUNCH = LAUNCH.replace('printf("launch %s", (const char *)f);',
                               'printf("launch %s from %s", (const char *)f, fake_image_of(f));')


def _kernel_json(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "symbol": name, "file": "m.py", "line": 3,
            "params": [{"name": "n", "kind": "scalar", "dtype": "i64"},
                       {"name": "out", "kind": "mut_slice", "dtype": "f32", "ndim": 1}], **extra}


def _run_program(tmp_path: Path, lib: Path, art: Path, *kernels: str) -> str:
    done = subprocess.run([str(tmp_path / "main"), str(art), *kernels], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LD_LIBRARY_PATH": str(lib)})
    assert done.returncode == 0, done.stderr
    return done.stdout


@needs_compilers
def test_launch_hpp_reads_the_manifest_formats_the_runtime_reads(tmp_path: Path) -> None:
    """oxide.abi.manifest.LAUNCH_HPP_MANIFEST_FORMATS, through oxide/abi.h: the format the build
    writes launches; an older one (preconditions as expressions, which the Python runtime compiles
    as it reads them) is refused with the advice to rebuild, a newer one naming the formats it reads."""
    from oxide.abi.manifest import (
        EXPRESSION_MANIFEST_FORMATS,
        LAUNCH_HPP_MANIFEST_FORMATS,
        MANIFEST_FORMAT,
        OPTIONAL_MANIFEST_FORMAT,
        READABLE_MANIFEST_FORMATS,
    )

    lib = build_stand_in_driver(tmp_path, _IMAGE_LAUNCH)
    build_launch_program(tmp_path, _FORMAT_PROGRAM)
    # format 5 is 4 with optional views (refused by name: tests/test_optional_views.py)
    assert LAUNCH_HPP_MANIFEST_FORMATS == (MANIFEST_FORMAT, OPTIONAL_MANIFEST_FORMAT)
    assert set(READABLE_MANIFEST_FORMATS) == {*EXPRESSION_MANIFEST_FORMATS, *LAUNCH_HPP_MANIFEST_FORMATS}
    newer = max(READABLE_MANIFEST_FORMATS) + 1
    for fmt in (*READABLE_MANIFEST_FORMATS, newer):
        art = tmp_path / f"art{fmt}"
        art.mkdir()
        (art / "m.sm_90.cubin").write_bytes(b"code of m")
        (art / "m.json").write_text(json.dumps({"format": fmt, "cubins": {"sm_90": "m.sm_90.cubin"},
                                                "kernels": [_kernel_json("k")]}))
        out = _run_program(tmp_path, lib, art, "k")
        listed = " or ".join(map(str, LAUNCH_HPP_MANIFEST_FORMATS))
        if fmt in LAUNCH_HPP_MANIFEST_FORMATS:
            assert out == "launch k from code of m 0:5 1:4096\n"
        elif fmt < MANIFEST_FORMAT:
            assert out == (f"refused oxide: {art}/m.json: manifest format is not {listed} (an older oxide built it: "
                           "rebuild the package with this oxide)\n")
        else:
            assert out == f"refused oxide: {art}/m.json: manifest format is not {listed} (another oxide release built it)\n"


@needs_compilers
def test_launch_hpp_launches_each_kernel_from_the_part_that_holds_it(tmp_path: Path) -> None:
    """A module built in parts (ModuleManifest.parts, oxide_build/package/module_parts.py): each
    kernel is found in its part's code (the module's own for a kernel no part names), and a
    failing launch precondition is told from the error sites of that part (site 5 is another
    site in each)."""
    from oxide.abi.manifest import PARTS_MANIFEST_FORMAT

    lib = build_stand_in_driver(tmp_path, _IMAGE_LAUNCH)
    build_launch_program(tmp_path, _FORMAT_PROGRAM)
    art = tmp_path / "art"
    art.mkdir()
    for name in ("m", "m.part1", "m.part2"):
        (art / f"{name}.sm_90.cubin").write_bytes(f"code of {name}".encode())

    def site(what: str, line: int) -> dict[str, Any]:
        return {"id": 5, "kind": "assert", "kernel": "k", "file": "m.py", "line": line, "col": 5, "what": what}

    positive = [{"site": 5, "expr": ["gt", ["arg", 0], ["const", 0]]}]
    manifest = ModuleManifest.from_json(json.dumps({
        "format": PARTS_MANIFEST_FORMAT, "module": "m", "source": "m.py", "source_sha256": "",
        "cubins": {"sm_90": "m.sm_90.cubin"}, "error_sites": [site("n > 0 (part 0)", 10)],
        "kernels": [_kernel_json(k, preconditions=positive) for k in ("k0", "k1", "k2", "k3")],
        "parts": [{"kernels": ["k1", "k3"], "cubins": {"sm_90": "m.part1.sm_90.cubin"},
                   "error_sites": [site("n > 0 (part 1)", 20)]},
                  {"kernels": ["k2"], "cubins": {"sm_90": "m.part2.sm_90.cubin"},
                   "error_sites": [site("n > 0 (part 2)", 30)]}]}))  # the runtime reads it
    (art / "m.json").write_text(manifest.to_json())
    assert _run_program(tmp_path, lib, art, "k0", "k1", "k2", "k3") == (
        "launch k0 from code of m 0:5 1:4096\n"
        "launch k1 from code of m.part1 0:5 1:4096\n"
        "launch k2 from code of m.part2 0:5 1:4096\n"
        "launch k3 from code of m.part1 0:5 1:4096\n")
    negative = _FORMAT_PROGRAM.replace("int64_t(5)", "int64_t(-5)")
    build_launch_program(tmp_path, negative)
    out = _run_program(tmp_path, lib, art, "k0", "k1", "k2")
    assert out == ("refused m.py:10: launch precondition failed: n > 0 (part 0) (kernel 'k0', grid 1x1x1, block 32x1x1)\n"
                   "refused m.py:20: launch precondition failed: n > 0 (part 1) (kernel 'k1', grid 1x1x1, block 32x1x1)\n"
                   "refused m.py:30: launch precondition failed: n > 0 (part 2) (kernel 'k2', grid 1x1x1, block 32x1x1)\n")


# ---- the parts of the contract each launcher reads for itself ---------------------------------------


@needs_compilers
def test_the_launchers_refuse_the_same_malformed_programs(tmp_path: Path) -> None:
    """A precondition program that is not one of oxide.abi.preconditions: the manifest's reader
    (program_problem) refuses it, the C launcher declines it (oxide_pre_prepare: the kernel goes
    through Python) and launch.hpp throws when the kernel is looked up; the well-formed program
    beside them is taken by all three."""
    from oxide.abi.manifest import MANIFEST_FORMAT, ManifestError
    from oxide.abi.preconditions import OPCODE, OPCODES, STACK_LIMIT
    from oxide.runtime import launcher as runtime_launcher

    one = [OPCODE["const"], 1]
    i64 = runtime_launcher.DTYPE_CODES["i64"]
    good = [[OPCODE["arg"], 0], one, [OPCODE["ge"], 0], [OPCODE["arg"], 1], one, [OPCODE["ge"], 0],
            [OPCODE["and"], 0]]  # n >= 1 and out's pointer (a u64 slot) >= 1
    bad = [
        [[len(OPCODES), 0]], [[OPCODE["check"], 0]], [one, [OPCODE["check"], 0], one], [[275, 0]],
        [[OPCODE["arg"], 3]], [[OPCODE["grid"], 3]],
        [one, [OPCODE["cast"], runtime_launcher.DTYPE_CODES["f32"]]], [one, [OPCODE["neg"], i64 + 100]],
        [one, one, [OPCODE["add"], runtime_launcher.DTYPE_CODES["bool"]]], [one, [OPCODE["not"], 1]],
        [[OPCODE["lt"], 0]], [one, one], [], [one] * (STACK_LIMIT + 1), [[OPCODE["const"], 2**64]],
    ]
    lib = build_stand_in_driver(tmp_path, _IMAGE_LAUNCH)
    build_launch_program(tmp_path, _FORMAT_PROGRAM)
    codes = [runtime_launcher.DTYPE_CODES[t] for t in ("i64", "u64", "i64")]
    for i, program in enumerate([good, *bad]):
        manifest = {"format": MANIFEST_FORMAT, "module": "m", "source": "m.py", "source_sha256": "",
                    "cubins": {"sm_90": "m.sm_90.cubin"}, "error_sites": [],
                    "kernels": [_kernel_json("k", preconditions=[{"site": 1, "code": program}])]}
        art = tmp_path / f"art{i}"
        art.mkdir()
        (art / "m.sm_90.cubin").write_bytes(b"code of m")
        (art / "m.json").write_text(json.dumps(manifest))
        out = _run_program(tmp_path, lib, art, "k")
        c_verdict = (runtime_launcher._ext.evaluate_preconditions([program], codes, [5, 4096, 8], (1, 1, 1), (32, 1, 1))
                     if runtime_launcher.ENABLED else -1)
        if program is good:
            ModuleManifest.from_json(json.dumps(manifest))
            assert out == "launch k from code of m 0:5 1:4096\n" and c_verdict == -1
        else:
            with pytest.raises(ManifestError, match=r"kernels\[0\]\.preconditions\[0\]\.code"):
                ModuleManifest.from_json(json.dumps(manifest))
            assert out.startswith("refused oxide: m.py:3: kernel 'k': a launch precondition "), (program, out)
            assert "rebuild the package" in out, out
            if runtime_launcher.ENABLED:
                assert c_verdict is None, program


@needs_compilers
@pytest.mark.parametrize("launcher", ["python", "c"])
def test_the_launchers_agree_on_which_view_kinds_are_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           launcher: str) -> None:
    """A read-only array (Python) or a const pointer (launch.hpp) for each view kind a kernel
    takes: refused exactly where oxide.abi.views says the kind is written (oxide_view_kinds in
    oxide/abi.h for launch.hpp, ParamSpec.is_mutable_view for the C launcher's plan)."""
    from oxide.abi.views import ViewKind
    from oxide.runtime import device
    from oxide.runtime import launcher as runtime_launcher

    drv: FakeDriver = CFakeDriver() if launcher == "c" else FakeDriver()
    if launcher == "c" and not runtime_launcher.ENABLED:
        pytest.skip("the C launcher is not built")
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    kinds = [k for k in ViewKind if k.is_kernel_param]
    kernels = tuple(KernelSpec(name=f"k_{k.value}", symbol=f"k_{k.value}", file="contract.py", line=1,
                               params=(ParamSpec("x", k.value, "f32", 2 if k.is_tensor else 1),)) for k in kinds)
    for k in kernels:
        drv.signatures[k.symbol] = slot_types(k.params)
    source = "from oxide import kernel\n" + "".join(f"\n@kernel\ndef {k.name}(x) -> None:\n    pass\n" for k in kernels)
    (tmp_path / "py").mkdir()
    module = make_module(tmp_path / "py", source, kernels)
    python: list[bool] = []
    for k, kind in zip(kernels, kinds):
        shape = (4, 6) if kind.is_tensor else (8,)
        try:
            getattr(module, k.name)[1, 32](FakeArray(ptr=A, shape=shape, readonly=True))
        except TypeError as e:
            assert "read-only" in str(e) or "readonly" in str(e) or "writ" in str(e), str(e)
            python.append(False)
        else:
            python.append(True)
    assert python == [not kind.is_writable for kind in kinds]
    lib = build_stand_in_driver(tmp_path, _IMAGE_LAUNCH)
    body = "".join(
        f'  try {{ m.kernel("{k.name}").launch({{1}}, {{32}}, nullptr, '
        + ("oxide::tensor(x, {4, 6}, {6, 1})" if kind.is_tensor else "oxide::slice(x, 8)")
        + '); } catch (const oxide::Error& e) { std::printf("refused %s\\n", e.what()); }\n'
        for k, kind in zip(kernels, kinds))
    build_launch_program(tmp_path, (
        "#include <cstdio>\n#include <dlfcn.h>\n#include <oxide/launch.hpp>\n"
        "int main(int, char** argv) {\n"
        '  reinterpret_cast<void (*)(int)>(dlsym(dlopen("libcuda.so.1", RTLD_NOW), "fake_expect"))(1);\n'
        f'  oxide::Module m = oxide::Module::open(argv[1], "{module.__name__}");\n'
        f"  const float* x = reinterpret_cast<const float*>(uintptr_t{{{A}ULL}});\n" + body + "  return 0;\n}\n"))
    out = _run_program(tmp_path, lib, tmp_path / "py" / "_oxide")
    cpp = [line.startswith("launch ") for line in out.splitlines()]
    assert cpp == python, out
