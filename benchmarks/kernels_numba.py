"""The examples' algorithms in numba-cuda, transcribed like ``kernels_cuda``.

Where numba cannot say what the oxide example says, the kernel is written as close as numba
allows and :data:`NUMBA_NOTES` says what differs:

- ``block_sum``: numba has no 16-byte vector load from a float32 array; each iteration does the
  same work with four scalar loads of consecutive elements.
- ``axpb_cpp`` (LTO): numba calls foreign device functions with its own ABI (an ``int`` status and
  the result through a pointer), so the ``.cu`` source holds a wrapper ``ox_axpb_numba`` around
  the same ``ox_axpb``; linked with ``lto=True`` where this numba-cuda supports it.

Everything is built inside :func:`build_numba_kernels`, so importing this module never imports
numba.
"""
from __future__ import annotations

import math  # the numba kernels call math.exp (libdevice __nv_expf for float32)
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks.env import require_numba_cuda

__all__ = ["NUMBA_NOTES", "build_numba_kernels", "build_numba_lto_kernel"]

NUMBA_NOTES = {
    "block_sum": "numba: four scalar loads per iteration instead of one float4 load",
    "axpb_cpp": "numba: calls ox_axpb through a numba-ABI wrapper in the same .cu file",
}

NEG_INF = -3.4028234663852886e38
FULL_MASK = 0xFFFFFFFF


def build_numba_kernels() -> SimpleNamespace:
    """The numba kernels (compiled lazily by numba at their first launch)."""
    cuda = require_numba_cuda()
    from numba import float32, int32, uint32

    @cuda.jit
    def saxpy(a, x, y, out):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = a * x[i] + y[i]

    @cuda.jit
    def block_sum(x, out):  # type: ignore[no-untyped-def]
        partial = cuda.shared.array(32, float32)
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        n = x.shape[0]
        n4 = n // 4
        acc = float32(0.0)
        j = i
        while j < n4:
            b = 4 * j
            acc += (x[b] + x[b + 1]) + (x[b + 2] + x[b + 3])
            j += stride
        j = n4 * 4 + i
        while j < n:
            acc += x[j]
            j += stride
        off = 16
        while off > 0:
            acc += cuda.shfl_xor_sync(FULL_MASK, acc, off)
            off //= 2
        lane = cuda.laneid
        wid = cuda.threadIdx.x // 32
        if lane == 0:
            partial[wid] = acc
        cuda.syncthreads()
        if wid == 0:
            v = partial[lane] if lane < cuda.blockDim.x // 32 else float32(0.0)
            off = 16
            while off > 0:
                v += cuda.shfl_xor_sync(FULL_MASK, v, off)
                off //= 2
            if lane == 0:
                cuda.atomic.add(out, 0, v)

    @cuda.jit
    def scan_blocks(x, out, block_sums):  # type: ignore[no-untyped-def]
        warp_sums = cuda.shared.array(32, float32)
        i = cuda.grid(1)
        v = x[i] if i < x.shape[0] else float32(0.0)
        lane = cuda.laneid
        wid = cuda.threadIdx.x // 32
        for k in range(5):
            d = int32(1 << k)
            t = cuda.shfl_up_sync(FULL_MASK, v, d)
            if lane >= d:
                v += t
        if lane == 31:
            warp_sums[wid] = v
        cuda.syncthreads()
        if wid == 0:
            s = warp_sums[lane] if lane < cuda.blockDim.x // 32 else float32(0.0)
            for k in range(5):
                d = int32(1 << k)
                t = cuda.shfl_up_sync(FULL_MASK, s, d)
                if lane >= d:
                    s += t
            warp_sums[lane] = s
        cuda.syncthreads()
        if wid > 0:
            v += warp_sums[wid - 1]
        if i < out.shape[0]:
            out[i] = v
        if cuda.threadIdx.x == cuda.blockDim.x - 1:
            block_sums[cuda.blockIdx.x] = v

    @cuda.jit
    def add_block_offsets(scanned_sums, out):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < out.shape[0] and cuda.blockIdx.x > 0:
            out[i] = out[i] + scanned_sums[cuda.blockIdx.x - 1]

    @cuda.jit
    def histogram(data, hist):  # type: ignore[no-untyped-def]
        local_hist = cuda.shared.array(256, uint32)
        b = cuda.threadIdx.x
        while b < 256:
            local_hist[b] = 0
            b += cuda.blockDim.x
        cuda.syncthreads()
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        j = i
        while j < data.shape[0]:
            cuda.atomic.add(local_hist, int32(data[j]), uint32(1))
            j += stride
        cuda.syncthreads()
        b = cuda.threadIdx.x
        while b < 256:
            cuda.atomic.add(hist, b, local_hist[b])
            b += cuda.blockDim.x

    @cuda.jit
    def transpose(x, rows, cols, out):  # type: ignore[no-untyped-def]
        tile = cuda.shared.array((32, 33), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        col = cuda.blockIdx.x * 32 + tx
        for k in range(0, 32, 8):
            row = cuda.blockIdx.y * 32 + ty + k
            if row < rows and col < cols:
                tile[ty + k, tx] = x[row * cols + col]
        cuda.syncthreads()
        out_col = cuda.blockIdx.y * 32 + tx
        for k in range(0, 32, 8):
            out_row = cuda.blockIdx.x * 32 + ty + k
            if out_row < cols and out_col < rows:
                out[out_row * rows + out_col] = tile[tx, ty + k]

    @cuda.jit
    def softmax_rows(x, ncols, out):  # type: ignore[no-untyped-def]
        red = cuda.shared.array(32, float32)
        base = cuda.blockIdx.x * ncols
        lane = cuda.laneid
        wid = cuda.threadIdx.x // 32
        nwarps = cuda.blockDim.x // 32
        m = float32(NEG_INF)
        c = cuda.threadIdx.x
        while c < ncols:
            v = x[base + c]
            m = m if m > v else v
            c += cuda.blockDim.x
        off = 16
        while off > 0:
            m = max(m, cuda.shfl_xor_sync(FULL_MASK, m, off))
            off //= 2
        if lane == 0:
            red[wid] = m
        cuda.syncthreads()
        m = red[lane] if lane < nwarps else float32(NEG_INF)
        off = 16
        while off > 0:
            m = max(m, cuda.shfl_xor_sync(FULL_MASK, m, off))
            off //= 2
        cuda.syncthreads()
        s = float32(0.0)
        c = cuda.threadIdx.x
        while c < ncols:
            s += math.exp(x[base + c] - m)
            c += cuda.blockDim.x
        off = 16
        while off > 0:
            s += cuda.shfl_xor_sync(FULL_MASK, s, off)
            off //= 2
        if lane == 0:
            red[wid] = s
        cuda.syncthreads()
        s = red[lane] if lane < nwarps else float32(0.0)
        off = 16
        while off > 0:
            s += cuda.shfl_xor_sync(FULL_MASK, s, off)
            off //= 2
        inv = float32(1.0) / s
        c = cuda.threadIdx.x
        while c < ncols:
            out[base + c] = math.exp(x[base + c] - m) * inv
            c += cuda.blockDim.x

    @cuda.jit
    def stencil5(x, rows, cols, out):  # type: ignore[no-untyped-def]
        c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        if r < rows and c < cols:
            i = r * cols + c
            v = x[i]
            if r > 0 and r < rows - 1 and c > 0 and c < cols - 1:
                v = float32(0.25) * (x[i - cols] + x[i + cols] + x[i - 1] + x[i + 1])
            out[i] = v

    @cuda.jit
    def sgemm(a, b, m, n, k, c):  # type: ignore[no-untyped-def]
        a_tile = cuda.shared.array((32, 32), float32)
        b_tile = cuda.shared.array((32, 32), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
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

    return SimpleNamespace(
        cuda=cuda, saxpy=saxpy, block_sum=block_sum, scan_blocks=scan_blocks,
        add_block_offsets=add_block_offsets, histogram=histogram, transpose=transpose,
        softmax_rows=softmax_rows, stencil5=stencil5, sgemm=sgemm,
    )


def build_numba_lto_kernel(cu_source: Path, lto: bool) -> Any:
    """The numba kernel calling C++ ``ox_axpb`` through the numba-ABI wrapper ``ox_axpb_numba``
    in ``cu_source``, linked with ``lto=True`` or without. Numba compiles at the first launch, so
    an LTO problem shows there (the caller falls back to ``lto=False``)."""
    cuda = require_numba_cuda()
    axpb = cuda.declare_device("ox_axpb_numba", "float32(float32, float32, float32)")

    def axpb_cpp(a, x, b, out):  # type: ignore[no-untyped-def]
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = axpb(a, x[i], b)

    if lto:
        return cuda.jit(link=[str(cu_source)], lto=True)(axpb_cpp)
    return cuda.jit(link=[str(cu_source)])(axpb_cpp)

