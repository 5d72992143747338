// NVIDIA cuda-samples, Samples/5_Domain_Specific/SobelFilter/SobelFilter_kernels.cu (ComputeSobel,
// SobelTex), BSD-3-Clause, Copyright (c) NVIDIA CORPORATION. As upstream except that the texture
// fetch (cudaAddressModeClamp, point filtering) is a read at clamped coordinates, as the port has
// it, one thread per pixel. Upstream image: lena.pgm 512 x 512; benchmark: 4096 x 4096.
typedef unsigned char Pixel;

__device__ unsigned char ComputeSobel(unsigned char ul,  // upper left
                                      unsigned char um,  // upper middle
                                      unsigned char ur,  // upper right
                                      unsigned char ml,  // middle left
                                      unsigned char mm,  // middle (unused)
                                      unsigned char mr,  // middle right
                                      unsigned char ll,  // lower left
                                      unsigned char lm,  // lower middle
                                      unsigned char lr,  // lower right
                                      float fScale) {
  short Horz = ur + 2 * mr + lr - ul - 2 * ml - ll;
  short Vert = ul + 2 * um + ur - ll - 2 * lm - lr;
  short Sum = (short)(fScale * (abs((int)Horz) + abs((int)Vert)));

  if (Sum < 0) {
    return 0;
  } else if (Sum > 0xff) {
    return 0xff;
  }

  return (unsigned char)Sum;
}

__device__ __forceinline__ Pixel tex(const Pixel *img, long long h, long long w, int y, int x) {
  int yy = min(max(y, 0), (int)h - 1);
  int xx = min(max(x, 0), (int)w - 1);
  return img[(long long)yy * w + xx];
}

__global__ void SobelTex(const Pixel *img, long long h, long long w, Pixel *pSobelOriginal, long long oh,
                         long long ow, float fScale) {
  long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= oh || col >= ow) return;
  int u = (int)col;
  int v = (int)row;
  unsigned char pix00 = tex(img, h, w, v - 1, u - 1);
  unsigned char pix01 = tex(img, h, w, v - 1, u);
  unsigned char pix02 = tex(img, h, w, v - 1, u + 1);
  unsigned char pix10 = tex(img, h, w, v, u - 1);
  unsigned char pix11 = tex(img, h, w, v, u);
  unsigned char pix12 = tex(img, h, w, v, u + 1);
  unsigned char pix20 = tex(img, h, w, v + 1, u - 1);
  unsigned char pix21 = tex(img, h, w, v + 1, u);
  unsigned char pix22 = tex(img, h, w, v + 1, u + 1);
  pSobelOriginal[row * ow + col] = ComputeSobel(pix00, pix01, pix02, pix10, pix11, pix12, pix20, pix21, pix22, fScale);
}
