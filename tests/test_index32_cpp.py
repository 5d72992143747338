"""oxide/include/oxide/launch.hpp launches a kernel's index32 instance (the manifest's
``index32_symbol``, oxide_build/lower/index32.py) only when every tensor argument spans at most
2**31 - 1 elements, has no extent or |stride| beyond that and a contiguous last axis (or one of one
element), the kernel as written otherwise; on the CPU, against a stand-in libcuda.so.1
(built here) that prints the entry point each launch runs."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from fakes import FUNC_ATTRIBUTES, build_launch_program, build_stand_in_driver, needs_compilers
from oxide.abi.manifest import MANIFEST_FORMAT  # launch.hpp reads the format the build writes

__all__: list[str] = []

LAUNCH = FUNC_ATTRIBUTES + r"""
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *s, void **p, void **e) {
  printf("launch %s %lld\n", (const char *)f, *(long long *)p[2]); /* the entry point, a's shape[1] */
  return 0;
}
"""

MAIN = r"""
#include <cstdio>
#include <cstdlib>
#include <oxide/launch.hpp>
int main(int, char** argv) {
  oxide::Kernel k = oxide::Module::open(argv[1], "t").kernel("tadd");
  static float a[8], out[8];
  // shape, strides of `a`: (rows, cols, row stride, col stride); `out` is 2 x 2 contiguous
  const int64_t cases[][4] = {
      {2, 2, 2, 1},                      // 4 elements
      {1, 2147483647, 2147483647, 1},    // spans exactly 2**31 - 1 elements
      {1, 2147483648, 2147483648, 1},    // one more
      {2, 2, 1073741824, 1},             // 4 elements spanning 2**30 + 2
      {2, 2, 2147483648, 1},             // 4 elements spanning 2**31 + 2
      {2, 2, -1073741824, 1},            // a negative stride: the span counts its size
      {2, 2, -2147483647, 1},            // spanning 2**31 + 1
      {1, 2, 2147483647, 1},             // a size-1 axis's stride spans nothing
      {1, 2, 2147483648, 1},             // but is read as an int: past it
      {2147483648, 2, 0, 1},             // a broadcast axis: 2 elements, an extent past it
      {0, 8589934592, 8589934592, 1},    // empty, an extent past it
      {0, 9, 9, 1},                      // empty
      {3, 1073741824, 1, 4},             // (cols - 1) * stride = 2**32 - 4
      {2, 2, 1, 2},                      // a transposed 2 x 2: its last axis is not contiguous
      {2, 1, 1, 5},                      // a last axis of one element: its stride is never read
      {0, 2, 1, 3},                      // empty, its last axis not contiguous: no element to read
  };
  for (const auto& c : cases)
    k.launch({1}, {32}, nullptr, oxide::tensor<const float>(a, {c[0], c[1]}, {c[2], c[3]}), 1.5f,
             oxide::tensor<float>(out, {2, 2}, {2, 1}));
  std::fflush(stdout);
  return 0;
}
"""


PARAMS = [{"name": "a", "kind": "tensor", "dtype": "f32", "ndim": 2}, {"name": "s", "kind": "scalar", "dtype": "f32"},
          {"name": "out", "kind": "mut_tensor", "dtype": "f32", "ndim": 2}]


def run(tmp_path: Path, kernel: dict[str, object], main: str = MAIN) -> list[str]:
    """The lines the stand-in driver prints when ``main`` launches ``kernel`` (a manifest record)."""
    tmp_path.mkdir(exist_ok=True)
    lib = build_stand_in_driver(tmp_path, LAUNCH)
    build_launch_program(tmp_path, main)
    art = tmp_path / "art"
    art.mkdir()
    (art / "t.sm_90.cubin").write_bytes(b"stand-in")
    (art / "t.json").write_text(json.dumps({"format": MANIFEST_FORMAT, "cubins": {"sm_90": "t.sm_90.cubin"}, "kernels": [kernel]}))
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib)}
    done = subprocess.run([str(tmp_path / "main"), str(art)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@needs_compilers
def test_launch_hpp_takes_the_index32_instance_only_when_every_tensor_fits(tmp_path: Path) -> None:
    lines = run(tmp_path, {"name": "tadd", "symbol": "tadd", "index32_symbol": "tadd__index32", "file": "t.py",
                           "line": 3, "params": PARAMS})
    narrow, wide = "launch tadd__index32", "launch tadd"
    assert lines == [
        f"{narrow} 2", f"{narrow} 2147483647", f"{wide} 2147483648", f"{narrow} 2", f"{wide} 2", f"{narrow} 2",
        f"{wide} 2", f"{narrow} 2", f"{wide} 2", f"{wide} 2", f"{wide} 8589934592", f"{narrow} 9",
        f"{wide} 1073741824", f"{wide} 2", f"{narrow} 1", f"{narrow} 2",
    ]


@needs_compilers
def test_launch_hpp_without_an_index32_instance_launches_the_kernel_as_written(tmp_path: Path) -> None:
    lines = run(tmp_path, {"name": "tadd", "symbol": "tadd", "file": "t.py", "line": 3, "params": PARAMS})
    assert lines == ["launch tadd " + n for n in ("2", "2147483647", "2147483648", "2", "2", "2", "2", "2", "2", "2",
                                                  "8589934592", "9", "1073741824", "2", "1", "2")]


@needs_compilers
def test_launch_hpp_passes_the_slots_each_entry_point_declares(tmp_path: Path) -> None:
    """The manifest's param_slots (lower/entry_params.py): every slot is packed, kernelParams
    points at the declared ones; the stand-in prints the third: here a's row stride (slot 3) in
    the kernel as written, its column stride (slot 4) in the index32 instance."""
    lines = run(tmp_path, {"name": "tadd", "symbol": "tadd", "index32_symbol": "tadd__index32", "file": "t.py",
                           "line": 3, "params": PARAMS, "param_slots": [0, 2, 3, 5, 6],
                           "index32_param_slots": [0, 3, 4, 5, 6, 9, 10]})
    narrow, wide = "launch tadd__index32", "launch tadd"
    assert lines == [
        f"{narrow} 1", f"{narrow} 1", f"{wide} 2147483648", f"{narrow} 1", f"{wide} 2147483648", f"{narrow} 1",
        f"{wide} -2147483647", f"{narrow} 1", f"{wide} 2147483648", f"{wide} 0", f"{wide} 8589934592", f"{narrow} 1",
        f"{wide} 1", f"{wide} 1", f"{narrow} 5", f"{narrow} 3",
    ]


# (rows, cols, row stride, col stride) of `a` in MAIN, and whether launch.hpp took the index32 instance
CASES = [
    ((2, 2, 2, 1), True), ((1, 2147483647, 2147483647, 1), True), ((1, 2147483648, 2147483648, 1), False),
    ((2, 2, 1073741824, 1), True), ((2, 2, 2147483648, 1), False), ((2, 2, -1073741824, 1), True),
    ((2, 2, -2147483647, 1), False), ((1, 2, 2147483647, 1), True), ((1, 2, 2147483648, 1), False),
    ((2147483648, 2, 0, 1), False), ((0, 8589934592, 8589934592, 1), False), ((0, 9, 9, 1), True),
    ((3, 1073741824, 1, 4), False), ((2, 2, 1, 2), False), ((2, 1, 1, 5), True), ((0, 2, 1, 3), True),
]


@needs_compilers
def test_the_python_path_and_the_shared_c_rule_agree_with_launch_hpp(tmp_path: Path) -> None:
    """One rule, oxide/index32.h, for the C launcher and launch.hpp; the pure-Python path's
    fits_index32 (oxide/runtime/arguments.py) gives the same verdict on every case."""
    from oxide.runtime.arguments import fits_index32
    from oxide.runtime.array_view import TensorView

    rows = ", ".join("{%dLL, %dLL, %dLL, %dLL}" % c for c, _ in CASES)
    (tmp_path / "rule.c").write_text(
        "#include <stdio.h>\n#include <oxide/index32.h>\n"
        f"static const int64_t cases[][4] = {{{rows}}};\n"
        "int main(void) {\n"
        "  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)\n"
        "    printf(\"%d\\n\", oxide_fits_index32(2, cases[i], cases[i] + 2));\n"
        "  return 0;\n}\n")
    include = Path(__import__("oxide").__file__).parent / "include"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-I", str(include), str(tmp_path / "rule.c"), "-o",
                    str(tmp_path / "rule")], check=True)
    c_verdicts = subprocess.run([str(tmp_path / "rule")], capture_output=True, text=True, check=True).stdout.split()
    expected = [fits for _, fits in CASES]
    assert [v == "1" for v in c_verdicts] == expected
    views = [TensorView(0, c[:2], c[2:], "f32", True, None) for c, _ in CASES]
    assert [fits_index32([v]) for v in views] == expected
    assert [line.startswith("launch tadd__index32") for line in run(tmp_path / "hpp", {
        "name": "tadd", "symbol": "tadd", "index32_symbol": "tadd__index32", "file": "t.py", "line": 3,
        "params": PARAMS})] == expected
