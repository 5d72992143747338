"""C++ host code launches the kernels of a module built in parts (oxide_build/package/module_parts.py)
through oxide/launch.hpp, on a GPU: a package whose kernel module has four independent kernels
(two parts, each its own code) and a pybind11 module that launches each of them from C++; every
element is checked against NumPy on random inputs, and a launch precondition of a kernel in the
second part is told with that part's error site."""
from __future__ import annotations

import importlib
import io
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("C++ host code launching through launch.hpp (needs a GPU)")]

KERNELS = '''\
from oxide import DisjointSlice, Slice, f32, f64, i32, kernel, thread


@kernel
def axpb(a: f32, x: Slice[f32], b: f32, out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = a * x[i] + b


@kernel
def square_add(x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i] * x[i] + y[i]


@kernel
def shift(k: i32, x: Slice[i32], out: DisjointSlice[i32]) -> None:
    assert len(x) == len(out), "x and out have one length"
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i] + k


@kernel
def halve(x: Slice[f64], out: DisjointSlice[f64]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i] * 0.5
'''

NATIVE = r'''
// Launches partpk.ops' kernels (a module built in parts) from C++ with oxide/launch.hpp.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include <oxide/launch.hpp>

namespace py = pybind11;

namespace {
const oxide::Module& ops() {
  static const oxide::Module module = [] {
    std::string init = py::module_::import("partpk").attr("__file__").cast<std::string>();
    return oxide::Module::open(init.substr(0, init.rfind('/')) + "/_oxide", "partpk.ops");
  }();
  return module;
}
unsigned blocks(std::int64_t n) { return static_cast<unsigned>(n > 0 ? (n + 255) / 256 : 1); }
template <class T> const T* in(std::uintptr_t p) { return reinterpret_cast<const T*>(p); }
template <class T> T* out(std::uintptr_t p) { return reinterpret_cast<T*>(p); }
}  // namespace

PYBIND11_MODULE(_native, m) {
  m.def("axpb", [](float a, std::uintptr_t x, float b, std::uintptr_t o, std::int64_t n) {
    ops().kernel("axpb").launch({blocks(n)}, {256}, nullptr, a, oxide::slice(in<float>(x), n), b,
                                oxide::mut_slice(out<float>(o), n));
  });
  m.def("square_add", [](std::uintptr_t x, std::uintptr_t y, std::uintptr_t o, std::int64_t n) {
    ops().kernel("square_add").launch({blocks(n)}, {256}, nullptr, oxide::slice(in<float>(x), n),
                                      oxide::slice(in<float>(y), n), oxide::mut_slice(out<float>(o), n));
  });
  m.def("shift", [](std::int32_t k, std::uintptr_t x, std::int64_t nx, std::uintptr_t o, std::int64_t n) {
    ops().kernel("shift").launch({blocks(n)}, {256}, nullptr, k, oxide::slice(in<std::int32_t>(x), nx),
                                 oxide::mut_slice(out<std::int32_t>(o), n));
  });
  m.def("halve", [](std::uintptr_t x, std::uintptr_t o, std::int64_t n) {
    ops().kernel("halve").launch({blocks(n)}, {256}, nullptr, oxide::slice(in<double>(x), n),
                                 oxide::mut_slice(out<double>(o), n));
  });
}
'''


def build_package(root: Path, arch: str) -> Any:
    """``root``/partpk: the kernels compiled by oxide's build (in parts) and ``_native``, the
    pybind11 module, built with g++ against oxide/launch.hpp; the ModuleManifest."""
    import oxide
    from oxide.abi.manifest import ModuleManifest
    from oxide_build.build import compile_project
    from oxide_build.config import OxideConfig

    pybind11 = pytest.importorskip("pybind11")
    package = root / "partpk"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "partpk"\nversion = "1"\n')
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(KERNELS)
    compile_project(root, OxideConfig(arch=(arch,)), None, log=io.StringIO(), jobs=2)
    manifest = ModuleManifest.from_json((package / "_oxide" / "partpk.ops.json").read_text())
    (package / "native.cpp").write_text(NATIVE)
    target = package / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-Wall", "-Werror",
                    "-I", pybind11.get_include(), "-I", sysconfig.get_paths()["include"],
                    "-I", str(Path(oxide.__file__).parent / "include"), str(package / "native.cpp"),
                    "-o", str(target), "-ldl"], check=True, timeout=300)
    return manifest


def test_cpp_launches_every_kernel_of_a_module_built_in_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    major, minor = torch.cuda.get_device_capability()
    manifest = build_package(tmp_path / "proj", f"sm_{major}{minor}")
    # two parts: the module's own code holds two kernels, its one part the other two
    assert len(manifest.parts) == 1 and len(manifest.parts[0].kernels) == 2, manifest.parts
    monkeypatch.syspath_prepend(str(tmp_path / "proj"))
    native = importlib.import_module("partpk._native")
    rng = np.random.default_rng()
    n = 100_003

    def dev(a: np.ndarray) -> Any:
        return torch.as_tensor(a, device="cuda")

    def poisoned(dtype: Any) -> Any:
        fill = -123456789 if dtype == torch.int32 else float("nan")
        return torch.full((n,), fill, dtype=dtype, device="cuda")

    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    xi = rng.integers(-2**30, 2**30, n, dtype=np.int32)
    xd = rng.standard_normal(n)
    dx, dy, dxi, dxd = dev(x), dev(y), dev(xi), dev(xd)
    torch.cuda.synchronize()
    out = poisoned(torch.float32)
    native.axpb(1.75, dx.data_ptr(), -0.5, out.data_ptr(), n)
    torch.cuda.synchronize()
    # a * x + b contracted into one fma (the default): the f64 result rounded once, within an ulp
    want = (np.float64(1.75) * x.astype(np.float64) - 0.5).astype(np.float32)
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=2e-7, atol=1e-7)
    out = poisoned(torch.float32)
    native.square_add(dx.data_ptr(), dy.data_ptr(), out.data_ptr(), n)
    torch.cuda.synchronize()
    want = (x.astype(np.float64) ** 2 + y.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=2e-7, atol=1e-7)
    out = poisoned(torch.int32)
    native.shift(-77, dxi.data_ptr(), n, out.data_ptr(), n)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), xi - 77)
    outd = poisoned(torch.float64)
    native.halve(dxd.data_ptr(), outd.data_ptr(), n)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(outd.cpu().numpy(), xd * 0.5)
    # shift's assert is a launch precondition, told from the error sites of the part holding it
    line = KERNELS.splitlines().index('    assert len(x) == len(out), "x and out have one length"') + 1
    with pytest.raises(RuntimeError, match=rf"ops\.py:{line}: launch precondition failed.*kernel 'shift'"):
        native.shift(1, dxi.data_ptr(), n - 1, out.data_ptr(), n)
    sys.modules.pop("partpk._native", None)
    sys.modules.pop("partpk", None)
