// NVIDIA cuda-samples, Samples/5_Domain_Specific/BlackScholes/BlackScholes_kernel.cuh (cndGPU,
// BlackScholesBodyGPU, BlackScholesGPU), BSD-3-Clause, Copyright (c) NVIDIA CORPORATION. As
// upstream, one option per thread (upstream's float2 pairs of options are two scalar options
// here, as the port has them; upstream's float2 kernel also carries __launch_bounds__(128), this
// scalar one does not). Upstream benchmark: OPT_N = 4000000, RISKFREE 0.02, VOLATILITY 0.30.
// The sample calls the fast intrinsics (__expf, __logf, __fdividef) itself: oxide's fast-math.

///////////////////////////////////////////////////////////////////////////////
// Polynomial approximation of cumulative normal distribution function
///////////////////////////////////////////////////////////////////////////////
__device__ inline float cndGPU(float d) {
  const float A1 = 0.31938153f;
  const float A2 = -0.356563782f;
  const float A3 = 1.781477937f;
  const float A4 = -1.821255978f;
  const float A5 = 1.330274429f;
  const float RSQRT2PI = 0.39894228040143267793994605993438f;

  float K = __fdividef(1.0f, (1.0f + 0.2316419f * fabsf(d)));

  float cnd = RSQRT2PI * __expf(-0.5f * d * d) *
              (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));

  if (d > 0) cnd = 1.0f - cnd;

  return cnd;
}

///////////////////////////////////////////////////////////////////////////////
// Black-Scholes formula for both call and put
///////////////////////////////////////////////////////////////////////////////
__device__ inline void BlackScholesBodyGPU(float &CallResult, float &PutResult,
                                           float S,  // Stock price
                                           float X,  // Option strike
                                           float T,  // Option years
                                           float R,  // Riskless rate
                                           float V   // Volatility rate
) {
  float sqrtT, expRT;
  float d1, d2, CNDD1, CNDD2;

  sqrtT = __fdividef(1.0F, rsqrtf(T));
  d1 = __fdividef(__logf(S / X) + (R + 0.5f * V * V) * T, V * sqrtT);
  d2 = d1 - V * sqrtT;

  CNDD1 = cndGPU(d1);
  CNDD2 = cndGPU(d2);

  // Calculate Call and Put simultaneously
  expRT = __expf(-R * T);
  CallResult = S * CNDD1 - X * expRT * CNDD2;
  PutResult = X * expRT * (1.0f - CNDD2) - S * (1.0f - CNDD1);
}

////////////////////////////////////////////////////////////////////////////////
// Process an array of optN options on GPU
////////////////////////////////////////////////////////////////////////////////
__global__ void BlackScholesGPU(float *__restrict d_CallResult, float *__restrict d_PutResult,
                                const float *__restrict d_StockPrice, const float *__restrict d_OptionStrike,
                                const float *__restrict d_OptionYears, float Riskfree, float Volatility,
                                int optN) {
  const int opt = blockDim.x * blockIdx.x + threadIdx.x;

  if (opt < optN) {
    float callResult, putResult;
    BlackScholesBodyGPU(callResult, putResult, d_StockPrice[opt], d_OptionStrike[opt], d_OptionYears[opt],
                        Riskfree, Volatility);
    d_CallResult[opt] = callResult;
    d_PutResult[opt] = putResult;
  }
}
