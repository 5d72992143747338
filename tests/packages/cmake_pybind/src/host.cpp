// The host side: a pybind11 extension next to the Python kernels.
#include <pybind11/pybind11.h>

static long long blocks_for(long long n, long long block) { return (n + block - 1) / block; }

PYBIND11_MODULE(_host, m) {
    m.doc() = "host helpers of the cmake_pybind fixture";
    m.def("blocks_for", &blocks_for, "blocks of `block` threads covering n elements");
}
