"""oxide/include/oxide/launch.hpp's launch_shared with dynamic shared memory above 48 KiB, on the
CPU: the header runs against a stand-in libcuda.so.1 (built here) that prints the attribute calls
and launches. The limit is read once, raised by cuFuncSetAttribute only for a launch asking more
than before, and a request beyond the device's opt-in maximum throws before the launch."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from fakes import build_launch_program, build_stand_in_driver, needs_compilers
from oxide.abi.manifest import MANIFEST_FORMAT  # launch.hpp reads the format the build writes


__all__: list[str] = []

LAUNCH = r"""
static int limit = 49152; /* MAX_DYNAMIC_SHARED_SIZE_BYTES: 48 KiB by default */
int cuFuncGetAttribute(int *v, int a, void *f) { printf("get %d\n", a); *v = a == 8 ? limit : a == 1 ? STATIC : -1; return 0; }
int cuFuncSetAttribute(void *f, int a, int v) { printf("set %d %d\n", a, v); if (a == 8) limit = v; return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *s, void **p, void **e) { printf("launch %u\n", shared); return 0; }
"""

MAIN = r"""
#include <cstdio>
#include <cstdlib>
#include <oxide/launch.hpp>
int main(int, char** argv) {
  oxide::Kernel k = oxide::Module::open(argv[1], "dyn").kernel("k");
  for (int i = 2; argv[i]; i++) {
    try {
      k.launch_shared({1}, {32}, static_cast<unsigned>(std::atoi(argv[i])), nullptr, int32_t(7));
    } catch (const oxide::Error& e) {
      std::printf("refused: %s\n", e.what());
    }
  }
  std::fflush(stdout);
  return 0;
}
"""

def run(tmp_path: Path, static: int, *sizes: int) -> list[str]:
    lib = build_stand_in_driver(tmp_path, LAUNCH, f"-DSTATIC={static}")
    build_launch_program(tmp_path, MAIN)
    art = tmp_path / "art"
    art.mkdir()
    (art / "dyn.sm_90.cubin").write_bytes(b"stand-in")
    (art / "dyn.json").write_text(json.dumps({
        "format": MANIFEST_FORMAT, "cubins": {"sm_90": "dyn.sm_90.cubin"},
        "kernels": [{"name": "k", "symbol": "k", "file": "dyn.py", "line": 3,
                     "params": [{"name": "n", "kind": "scalar", "dtype": "i32"}]}],
    }))
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib)}
    done = subprocess.run([str(tmp_path / "main"), str(art), *map(str, sizes)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@needs_compilers
def test_launch_shared_raises_the_limit_once_per_size_and_refuses_beyond_the_device(tmp_path: Path) -> None:
    lines = run(tmp_path, 0, 0, 4096, 102400, 102400, 65536, 153600, 307200)
    assert lines[:-2] == [
        "launch 0",  # no dynamic shared memory: no attribute call
        "get 8", "launch 4096",  # the limit read once: 48 KiB
        "get 1", "set 8 102400", "launch 102400",  # raised before the first launch asking more
        "launch 102400", "launch 65536",  # the raised limit serves these
        "get 1", "set 8 153600", "launch 153600",  # raised again for a bigger one
    ]
    assert lines[-2] == "get 1"
    assert lines[-1] == (
        "refused: dyn.py:3: kernel 'k' asks for 307200 bytes of dynamic shared memory per block; the device gives a "
        "block at most 232448 bytes (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 232448, less the "
        "kernel's 0 bytes of static shared memory): use less shared memory per block; the kernel was not launched")


@needs_compilers
def test_launch_shared_counts_the_static_shared_memory(tmp_path: Path) -> None:
    lines = run(tmp_path, 8192, 224257, 224256)
    assert lines[:2] == ["get 8", "get 1"]
    assert lines[2].startswith("refused: dyn.py:3: kernel 'k' asks for 224257 bytes") and "at most 224256 bytes" in lines[2]
    assert "less the kernel's 8192 bytes of static shared memory" in lines[2]
    assert lines[3:] == ["get 1", "set 8 224256", "launch 224256"]  # exactly the most: allowed
