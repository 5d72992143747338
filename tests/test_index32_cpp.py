"""oxide/include/oxide/launch.hpp launches a kernel's index32 instance (the manifest's
``index32_symbol``, oxide_build/lower/index32.py) only when every tensor argument spans at most
2**31 - 1 elements and has no extent or |stride| beyond that, the kernel as written otherwise; on the CPU, against a stand-in libcuda.so.1
(built here) that prints the entry point each launch runs."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import oxide

__all__: list[str] = []

FAKE_CUDA = r"""
#include <stdio.h>
static int ctx_obj, mod_obj;
static char names[16][64];
static int n_names;
int cuInit(unsigned f) { return 0; }
int cuCtxGetCurrent(void **c) { *c = &ctx_obj; return 0; }
int cuCtxSetCurrent(void *c) { return 0; }
int cuCtxGetDevice(int *d) { *d = 0; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = &ctx_obj; return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 9 : a == 76 ? 0 : a == 97 ? 232448 : -1; return 0; }
int cuModuleLoadData(void **m, const void *image) { *m = &mod_obj; return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) {
  snprintf(names[n_names], sizeof names[0], "%s", name);
  *f = names[n_names++];
  return 0;
}
int cuFuncGetAttribute(int *v, int a, void *f) { *v = 0; return 0; }
int cuFuncSetAttribute(void *f, int a, int v) { return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *s, void **p, void **e) {
  printf("launch %s %lld\n", (const char *)f, *(long long *)p[2]); /* the entry point, a's shape[1] */
  return 0;
}
int cuGetErrorName(int r, const char **n) { *n = "CUDA_ERROR_FAKE"; return 0; }
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
  };
  for (const auto& c : cases)
    k.launch({1}, {32}, nullptr, oxide::tensor<const float>(a, {c[0], c[1]}, {c[2], c[3]}), 1.5f,
             oxide::tensor<float>(out, {2, 2}, {2, 1}));
  std::fflush(stdout);
  return 0;
}
"""

needs_compilers = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None,
                                     reason="no gcc/g++ to build the stand-in driver and the program")

PARAMS = [{"name": "a", "kind": "tensor", "dtype": "f32", "ndim": 2}, {"name": "s", "kind": "scalar", "dtype": "f32"},
          {"name": "out", "kind": "mut_tensor", "dtype": "f32", "ndim": 2}]


def run(tmp_path: Path, kernel: dict[str, object]) -> list[str]:
    (tmp_path / "lib").mkdir()
    (tmp_path / "fake.c").write_text(FAKE_CUDA)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "lib" / "libcuda.so.1"), str(tmp_path / "fake.c")],
                   check=True)
    (tmp_path / "main.cpp").write_text(MAIN)
    include = Path(oxide.__file__).parent / "include"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", "-I", str(include), str(tmp_path / "main.cpp"), "-o",
                    str(tmp_path / "main"), "-ldl"], check=True)
    art = tmp_path / "art"
    art.mkdir()
    (art / "t.sm_90.cubin").write_bytes(b"stand-in")
    (art / "t.json").write_text(json.dumps({"format": 2, "cubins": {"sm_90": "t.sm_90.cubin"}, "kernels": [kernel]}))
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path / "lib")}
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
        f"{wide} 1073741824",
    ]


@needs_compilers
def test_launch_hpp_without_an_index32_instance_launches_the_kernel_as_written(tmp_path: Path) -> None:
    lines = run(tmp_path, {"name": "tadd", "symbol": "tadd", "file": "t.py", "line": 3, "params": PARAMS})
    assert lines == ["launch tadd " + n for n in ("2", "2147483647", "2147483648", "2", "2", "2", "2", "2", "2", "2",
                                                  "8589934592", "9", "1073741824")]


@needs_compilers
def test_launch_hpp_passes_the_slots_each_entry_point_declares(tmp_path: Path) -> None:
    """The manifest's param_slots (backends/entry_params.py): every slot is packed, kernelParams
    points at the declared ones; the stand-in prints the third: here a's row stride (slot 3) in
    the kernel as written, its column stride (slot 4) in the index32 instance."""
    lines = run(tmp_path, {"name": "tadd", "symbol": "tadd", "index32_symbol": "tadd__index32", "file": "t.py",
                           "line": 3, "params": PARAMS, "param_slots": [0, 2, 3, 5, 6],
                           "index32_param_slots": [0, 3, 4, 5, 6, 9, 10]})
    narrow, wide = "launch tadd__index32", "launch tadd"
    assert lines == [
        f"{narrow} 1", f"{narrow} 1", f"{wide} 2147483648", f"{narrow} 1", f"{wide} 2147483648", f"{narrow} 1",
        f"{wide} -2147483647", f"{narrow} 1", f"{wide} 2147483648", f"{wide} 0", f"{wide} 8589934592", f"{narrow} 1",
        f"{wide} 1",
    ]
