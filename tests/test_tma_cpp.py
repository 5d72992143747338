"""oxide/include/oxide/launch.hpp with a TMA descriptor parameter, on the CPU: the header runs
against a stand-in libcuda.so.1 (built here) whose cuLaunchKernel prints the parameters it is
given: the 128-byte map as one parameter, then the box's element count, then the rest; a
wrong element type, rank, box or a view where a map is declared throws before the launch."""
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
  const uint64_t *map = (const uint64_t *)p[0];
  printf("launch map %llx..%llx box %lld n %d\n", (unsigned long long)map[0], (unsigned long long)map[15],
         (long long)*(const int64_t *)p[1], *(const int32_t *)p[2]);
  return 0;
}
"""

MAIN = r"""
#include <cstdio>
#include <oxide/launch.hpp>
alignas(64) static uint64_t map[16];
int main(int, char** argv) {
  for (int i = 0; i < 16; i++) map[i] = 0xA0 + i;
  oxide::Kernel k = oxide::Module::open(argv[1], "tm").kernel("k");
  auto attempt = [](auto&& launch) {
    try { launch(); } catch (const oxide::Error& e) { std::printf("refused: %s\n", e.what()); }
  };
  attempt([&] { k.launch({1}, {32}, nullptr, oxide::tensor_map<float>(map, {16, 32}), int32_t(7)); });
  attempt([&] { k.launch({1}, {32}, nullptr, oxide::tensor_map<float>(map, {8, 32}, 128), int32_t(7)); });
  attempt([&] { k.launch({1}, {32}, nullptr, oxide::tensor_map<float>(map, {8, 32}, 48), int32_t(7)); });
  attempt([&] { k.launch({1}, {32}, nullptr, oxide::tensor_map<double>(map, {16, 32}), int32_t(7)); });
  attempt([&] { k.launch({1}, {32}, nullptr, oxide::tensor_map<float>(map, {16}), int32_t(7)); });
  attempt([&] { k.launch({1}, {32}, nullptr, oxide::tensor_map<float>(map, {16, 512}), int32_t(7)); });
  float* data = nullptr;
  attempt([&] { k.launch({1}, {32}, nullptr, oxide::tensor(data, {4, 4}, {4, 1}), int32_t(7)); });
  std::fflush(stdout);
  return 0;
}
"""


@needs_compilers
def test_launch_hpp_passes_a_tensor_map_as_one_parameter(tmp_path: Path) -> None:
    lib = build_stand_in_driver(tmp_path, LAUNCH)
    build_launch_program(tmp_path, MAIN)
    art = tmp_path / "art"
    art.mkdir()
    (art / "tm.sm_90.cubin").write_bytes(b"stand-in")
    (art / "tm.json").write_text(json.dumps({
        "format": MANIFEST_FORMAT, "cubins": {"sm_90": "tm.sm_90.cubin"},
        "kernels": [{"name": "k", "symbol": "k", "file": "tm.py", "line": 3,
                     "params": [{"name": "src", "kind": "tensor_map", "dtype": "f32", "ndim": 2},
                                {"name": "n", "kind": "scalar", "dtype": "i32"}]}],
    }))
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib)}
    done = subprocess.run([str(tmp_path / "main"), str(art)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "launch map a0..af box 512 n 7",
        f"launch map a0..af box {256 | 128 << 32} n 7",
        "refused: tm.py:3: kernel 'k' parameter 'src' is tensor_map[f32, 2], got a swizzle of 48 bytes (0, 32, 64 or 128)",
        "refused: tm.py:3: kernel 'k' parameter 'src' is tensor_map[f32, 2], got tensor_map[f64, 2]",
        "refused: tm.py:3: kernel 'k' parameter 'src' is tensor_map[f32, 2], got tensor_map[f32, 1]",
        "refused: tm.py:3: kernel 'k' parameter 'src' is tensor_map[f32, 2], got a box extent of 512 (1 to 256)",
        "refused: tm.py:3: kernel 'k' parameter 'src' is tensor_map[f32, 2], got tensor[f32, 2]",
    ]
