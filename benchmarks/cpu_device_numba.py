"""The numba-cuda kernels of ``benchmarks/cpu_device.py``: the same algorithms as the oxide ones
(examples/saxpy.py, examples/sgemm.py, benchmarks/cpu_device_kernels.py), run by numba-cuda's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``, set by cpu_device.py before this module is imported). At
module level: the simulator swaps the ``cuda`` global a kernel reads for its own."""
from numba import cuda, float32


@cuda.jit
def saxpy(a, x, y, out):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]


@cuda.jit
def block_reduce(x, out):  # type: ignore[no-untyped-def]
    tile = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < x.shape[0] else float32(0.0)
    cuda.syncthreads()
    s = 128
    while s > 0:
        if t < s:
            tile[t] = tile[t] + tile[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out[cuda.blockIdx.x] = tile[0]


@cuda.jit
def warp_scan(x, out):  # type: ignore[no-untyped-def]
    """The simulator has no warp shuffles (numba-cuda 0.30: no shfl_*_sync, no laneid reads
    in lockstep): each shfl_up is a write to shared memory, a barrier, a read of lane - d and a
    barrier, the way CUDA did it before shuffles."""
    buf = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else float32(0.0)
    lane = t % 32
    d = 1
    while d < 32:
        buf[t] = v
        cuda.syncthreads()
        if lane >= d:
            v += buf[t - d]
        cuda.syncthreads()
        d *= 2
    if i < out.shape[0]:
        out[i] = v


@cuda.jit
def sgemm(a, b, m, n, k, c):  # type: ignore[no-untyped-def]
    a_tile = cuda.shared.array((32, 32), float32)
    b_tile = cuda.shared.array((32, 32), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * 32 + ty
    col = cuda.blockIdx.x * 32 + tx
    acc = float32(0.0)
    for t in range(0, k, 32):
        a_tile[ty, tx] = a[row * k + t + tx] if row < m and t + tx < k else float32(0.0)
        b_tile[ty, tx] = b[(t + ty) * n + col] if t + ty < k and col < n else float32(0.0)
        cuda.syncthreads()
        for kk in range(32):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        cuda.syncthreads()
    if row < m and col < n:
        c[row * n + col] = acc
