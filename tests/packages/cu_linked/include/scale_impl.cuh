#pragma once
// found through [tool.oxide] include-dirs = ["include"]; CL_FACTOR from [tool.oxide] defines
namespace culinked {
__device__ inline float scale(float x) { return CL_FACTOR * x; }
}
