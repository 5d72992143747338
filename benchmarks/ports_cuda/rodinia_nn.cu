// Rodinia 3.1, cuda/nn/nn_cuda.cu: euclid as upstream, the LatLong {float lat, lng} records as
// the flat float array of their fields. Upstream data: ~42764 hurricane records (filelist_4);
// here 2^24 records. Launch: 256 threads, a 2-D grid of blocks as upstream sizes it.
typedef struct latLong {
  float lat;
  float lng;
} LatLong;

__global__ void euclid(LatLong *d_locations, float *d_distances, int numRecords, float lat, float lng) {
  // int globalId = gridDim.x * blockDim.x * blockIdx.y + blockDim.x * blockIdx.x + threadIdx.x;
  int globalId = blockDim.x * (gridDim.x * blockIdx.y + blockIdx.x) + threadIdx.x;  // more efficient
  LatLong *latLong = d_locations + globalId;
  if (globalId < numRecords) {
    float *dist = d_distances + globalId;
    *dist = (float)sqrt((lat - latLong->lat) * (lat - latLong->lat) + (lng - latLong->lng) * (lng - latLong->lng));
  }
}
