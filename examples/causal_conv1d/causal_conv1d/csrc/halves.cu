// Half-precision conversions for the conv-state kernels (state_kernels.py), kept in CUDA C++
// where cuda_fp16.h / cuda_bf16.h already say them: the Python kernels of that module see fp16
// and bf16 tensors as their 16-bit patterns (int16) and convert through these functions, which
// the LTO link inlines.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __device__ float causal_conv1d_f16_bits_to_float(short bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}

extern "C" __device__ float causal_conv1d_bf16_bits_to_float(short bits) {
    return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(bits)));
}

extern "C" __device__ short causal_conv1d_float_to_f16_bits(float v) {
    return static_cast<short>(__half_as_ushort(__float2half_rn(v)));
}

extern "C" __device__ short causal_conv1d_float_to_bf16_bits(float v) {
    return static_cast<short>(__bfloat16_as_ushort(__float2bfloat16_rn(v)));
}
