"""Sobel edge magnitude of an 8-bit image.

Ported from NVIDIA cuda-samples, Samples/5_Domain_Specific/SobelFilter/SobelFilter_kernels.cu
(`ComputeSobel`, `SobelTex`), the way its author writes it: the nine neighbours as unsigned
char, the horizontal and vertical sums as short, `abs((int)Horz)`, the scaled sum clamped to
0..255 with early returns. C computes `ur + 2 * mr + ...` of unsigned chars in int; oxide
computes 8-bit arithmetic in 8 bits, and the port as first written (`horz: i16 = ur + 2 * mr
+ ...`) is refused for that ("this u8 arithmetic can wrap around in u8 before the result
becomes i16"), so the operands are converted first, as the message says. The texture fetch
with clamp-to-edge addressing is a read of the image at clamped coordinates here; one thread
per pixel."""
import oxide as ox
from oxide import DisjointTensor, Tensor, f32, i16, i32, thread, u8


def compute_sobel(ul: u8, um: u8, ur: u8, ml: u8, mm: u8, mr: u8, ll: u8, lm: u8, lr: u8, f_scale: f32) -> u8:
    horz: i16 = i16(ur) + 2 * i16(mr) + i16(lr) - i16(ul) - 2 * i16(ml) - i16(ll)
    vert: i16 = i16(ul) + 2 * i16(um) + i16(ur) - i16(ll) - 2 * i16(lm) - i16(lr)
    sum = i16(f_scale * (abs(i32(horz)) + abs(i32(vert))))
    if sum < 0:
        return 0
    elif sum > 0xff:
        return 0xff
    return u8(sum)


def tex(img: Tensor[u8, 2], y: i32, x: i32) -> u8:
    yy = min(max(y, 0), i32(img.shape[0]) - 1)
    xx = min(max(x, 0), i32(img.shape[1]) - 1)
    return img[yy, xx]


@ox.kernel
def sobel_tex(img: Tensor[u8, 2], out: DisjointTensor[u8, 2], f_scale: f32) -> None:
    row, col = thread.index_2d()
    if row >= out.shape[0] or col >= out.shape[1]:
        return
    u = i32(col)
    v = i32(row)
    pix00 = tex(img, v - 1, u - 1)
    pix01 = tex(img, v - 1, u)
    pix02 = tex(img, v - 1, u + 1)
    pix10 = tex(img, v, u - 1)
    pix11 = tex(img, v, u)
    pix12 = tex(img, v, u + 1)
    pix20 = tex(img, v + 1, u - 1)
    pix21 = tex(img, v + 1, u)
    pix22 = tex(img, v + 1, u + 1)
    out[row, col] = compute_sobel(pix00, pix01, pix02, pix10, pix11, pix12, pix20, pix21, pix22, f_scale)
