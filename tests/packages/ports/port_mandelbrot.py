"""Mandelbrot escape counts.

Ported from the numba-cuda documentation's Mandelbrot example (`mandel` device function,
`mandel_kernel`), the way its author writes it: the iteration limit a parameter, pixel
coordinates from a 2-D grid, the device function returning an int."""
import oxide as ox
from oxide import DisjointTensor, f32, i32, thread, u8


def mandel(x: f32, y: f32, max_iters: i32) -> i32:
    c_re = x
    c_im = y
    z_re = 0.0
    z_im = 0.0
    for i in range(max_iters):
        z_re, z_im = z_re * z_re - z_im * z_im + c_re, 2 * z_re * z_im + c_im
        if (z_re * z_re + z_im * z_im) >= 4:
            return i
    return max_iters


@ox.kernel
def mandel_kernel(min_x: f32, max_x: f32, min_y: f32, max_y: f32, image: DisjointTensor[u8, 2],
                  iters: i32) -> None:
    height = image.shape[0]
    width = image.shape[1]
    pixel_size_x = (max_x - min_x) / width
    pixel_size_y = (max_y - min_y) / height
    y, x = thread.index_2d()
    if y < height and x < width:
        real = min_x + x * pixel_size_x
        imag = min_y + y * pixel_size_y
        image[y, x] = mandel(real, imag, iters)
