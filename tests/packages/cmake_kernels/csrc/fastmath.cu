// A device library built by CMake (oxide_add_device_library) and linked into cmkern's Python
// kernels by oxide_add_kernels(... LINK cmk_fastmath).
#include "cmk_math.cuh"

extern "C" __device__ float cmk_fast_tanh(float x) { return cmk::fast_tanh(x); }

extern "C" __device__ float cmk_scale(float x) { return CMK_SCALE * x; }
