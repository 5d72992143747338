// Linked into every kernel module by [tool.oxide] link = ["csrc/*.cu"].
#include "scale_impl.cuh"

extern "C" __device__ float cl_scale(float x) { return culinked::scale(x); }
