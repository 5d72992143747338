// Counter-based random numbers from the cuRAND device API (the nvidia-curand wheel's headers):
// Philox4x32-10, so element i of a draw depends only on (seed, i), whichever thread computes it.
#include <curand_kernel.h>

// A uniform float in (0, 1] for element i of the stream `seed`.
extern "C" __device__ float sample_uniform(unsigned long long seed, long long i) {
    curandStatePhilox4_32_10_t state;
    curand_init(seed, static_cast<unsigned long long>(i), 0, &state);
    return curand_uniform(&state);
}
