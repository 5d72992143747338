// A pybind11 host module that launches the Python kernel cmkern.ops.gelu_scaled from C++
// (oxide/launch.hpp): the manifest and cubins are read from the installed package.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include <oxide/launch.hpp>

namespace py = pybind11;

namespace {
const oxide::Module& ops() {
  static const oxide::Module module = [] {
    std::string init = py::module_::import("cmkern").attr("__file__").cast<std::string>();
    return oxide::Module::open(init.substr(0, init.rfind('/')) + "/_oxide", "cmkern.ops");
  }();
  return module;
}
}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "Launches cmkern's Python kernels from C++";
  m.def("kernel_params", [](const std::string& name) {
    py::list out;
    for (const auto& p : ops().kernel(name).params()) out.append(py::make_tuple(p.name, p.kind, p.dtype));
    return out;
  });
  // x, out: device pointers of n float32; stream: a CUDA stream handle (0: the default stream)
  m.def("gelu_scaled", [](std::uintptr_t x, std::uintptr_t out, std::int64_t n, std::uintptr_t stream) {
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    ops().kernel("gelu_scaled").launch({blocks > 0 ? blocks : 1}, {256}, reinterpret_cast<void*>(stream),
                                       oxide::slice(reinterpret_cast<const float*>(x), n),
                                       oxide::mut_slice(reinterpret_cast<float*>(out), n));
  }, py::arg("x"), py::arg("out"), py::arg("n"), py::arg("stream") = 0);
  // the same call with float64 pointers: refused before anything reaches the GPU
  m.def("gelu_scaled_f64", [](std::uintptr_t x, std::uintptr_t out, std::int64_t n) {
    ops().kernel("gelu_scaled").launch({1}, {256}, nullptr, oxide::slice(reinterpret_cast<const double*>(x), n),
                                       oxide::mut_slice(reinterpret_cast<double*>(out), n));
  });
  // 16x16 blocks for a kernel that writes its DisjointSlice at thread.index_1d(): two threads
  // would share an element, so its launch precondition refuses it before anything reaches the GPU
  m.def("gelu_scaled_2d_blocks", [](std::uintptr_t x, std::uintptr_t out, std::int64_t n) {
    ops().kernel("gelu_scaled").launch({1}, {16, 16}, nullptr, oxide::slice(reinterpret_cast<const float*>(x), n),
                                       oxide::mut_slice(reinterpret_cast<float*>(out), n));
  });
}
