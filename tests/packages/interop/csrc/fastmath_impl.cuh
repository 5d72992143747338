#pragma once
namespace oxide_test {
__device__ inline float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
}
