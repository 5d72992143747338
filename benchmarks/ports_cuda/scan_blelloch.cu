// GPU Gems 3, chapter 39 (Harris, Sengupta, Owens), "Parallel Prefix Sum (Scan) with CUDA",
// Example 39-2 (prescan) with the CONFLICT_FREE_OFFSET padding of section 39.2.3, as the chapter
// writes it, n = 1024 a compile-time size here (the port's N). Benchmark: 2^16 blocks of 1024.
#define NUM_BANKS 32
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(n) ((n) >> LOG_NUM_BANKS)
#define N 1024

__global__ void prescan(float *g_odata, float *g_idata) {
  __shared__ float temp[N + N / NUM_BANKS];  // allocated on invocation
  int thid = threadIdx.x;
  int base = blockIdx.x * N;
  int offset = 1;
  int ai = thid;
  int bi = thid + (N / 2);
  int bankOffsetA = CONFLICT_FREE_OFFSET(ai);
  int bankOffsetB = CONFLICT_FREE_OFFSET(bi);
  temp[ai + bankOffsetA] = g_idata[base + ai];
  temp[bi + bankOffsetB] = g_idata[base + bi];
  for (int d = N >> 1; d > 0; d >>= 1)  // build sum in place up the tree
  {
    __syncthreads();
    if (thid < d) {
      int ai = offset * (2 * thid + 1) - 1;
      int bi = offset * (2 * thid + 2) - 1;
      ai += CONFLICT_FREE_OFFSET(ai);
      bi += CONFLICT_FREE_OFFSET(bi);
      temp[bi] += temp[ai];
    }
    offset *= 2;
  }
  if (thid == 0) { temp[N - 1 + CONFLICT_FREE_OFFSET(N - 1)] = 0; }  // clear the last element
  for (int d = 1; d < N; d *= 2)  // traverse down tree & build scan
  {
    offset >>= 1;
    __syncthreads();
    if (thid < d) {
      int ai = offset * (2 * thid + 1) - 1;
      int bi = offset * (2 * thid + 2) - 1;
      ai += CONFLICT_FREE_OFFSET(ai);
      bi += CONFLICT_FREE_OFFSET(bi);
      float t = temp[ai];
      temp[ai] = temp[bi];
      temp[bi] += t;
    }
  }
  __syncthreads();
  g_odata[base + ai] = temp[ai + bankOffsetA];  // write results to device memory
  g_odata[base + bi] = temp[bi + bankOffsetB];
}
