// sample._native: a pybind11 module that launches the Python kernel sample.kernels.gelu_forward
// from C++ with oxide/launch.hpp (header-only; the CUDA driver is opened at run time, so building
// this needs no CUDA toolkit). The manifest and the GPU code come from the installed package.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include <oxide/launch.hpp>

namespace py = pybind11;

namespace {
const oxide::Module& kernels() {
  static const oxide::Module module = [] {
    std::string init = py::module_::import("sample").attr("__file__").cast<std::string>();
    return oxide::Module::open(init.substr(0, init.rfind('/')) + "/_oxide", "sample.kernels");
  }();
  return module;
}
}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "C++ host code launching sample's Python kernels (oxide/launch.hpp)";
  m.def(
      "gelu",
      [](std::uintptr_t x, std::uintptr_t out, std::int64_t n, std::uintptr_t stream) {
        if (n <= 0) return;
        const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
        kernels().kernel("gelu_forward").launch({blocks}, {256}, reinterpret_cast<void*>(stream),
                                                oxide::slice(reinterpret_cast<const float*>(x), n),
                                                oxide::mut_slice(reinterpret_cast<float*>(out), n));
      },
      py::arg("x"), py::arg("out"), py::arg("n"), py::arg("stream") = 0,
      "out[i] = gelu(x[i]) for n float32 elements at device addresses x and out, on `stream`");
}
