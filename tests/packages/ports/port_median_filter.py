"""3x3 median filter with a per-thread window sorted in place.

Ported from the numba-cuda image-filter pattern (the median filter of numba's CUDA examples
and courses: `cuda.grid(2)`, a `cuda.local.array(9, float32)` window filled by two nested
loops over -1..1, a bubble sort with tuple swaps, the middle element out), the way a numba
author writes it: `x, y = cuda.grid(2)` (here `row, col = thread.index_2d()`), `img.shape`
unpacked, border pixels copied through."""
import oxide as ox
from oxide import DisjointTensor, Tensor, f32, thread


@ox.kernel
def median_filter(img: Tensor[f32, 2], out: DisjointTensor[f32, 2]) -> None:
    row, col = thread.index_2d()
    h, w = img.shape
    if row >= h or col >= w or row >= out.shape[0] or col >= out.shape[1]:
        return
    if row < 1 or col < 1 or row >= h - 1 or col >= w - 1:
        out[row, col] = img[row, col]
        return
    window = ox.local.array(9, f32)
    k = 0
    for i in range(-1, 2):
        for j in range(-1, 2):
            window[k] = img[row + i, col + j]
            k += 1
    for i in range(9):
        for j in range(8 - i):
            if window[j] > window[j + 1]:
                window[j], window[j + 1] = window[j + 1], window[j]
    out[row, col] = window[4]
