"""Ray casting a scene of spheres, one thread per pixel, RGBA bytes out.

Ported from "CUDA by Example" (Sanders and Kandrot), chapter 6, ray.cu / ray_noconst.cu, the
way its authors write it: a `struct Sphere` with its colour, radius and centre, a `hit()`
returning the depth of the ray's hit and the shading factor through an out-parameter (a tuple
here), the spheres kept in __constant__ memory (a table of their fields here: oxide has no
arrays of structs yet, docs/language.md "Structs"), -INF as "no hit", the pixel offset
`x + y * blockDim.x * gridDim.x`, four byte stores of `(int)(r * 255)`."""
import oxide as ox
from oxide import MutSlice, block, f32, grid, i32, thread

INF = 2e10
SPHERES = 20
FIELDS = 7  # r, g, b, radius, x, y, z


@ox.struct
class Sphere:
    r: f32
    g: f32
    b: f32
    radius: f32
    x: f32
    y: f32
    z: f32


SPHERE_TABLE = ox.constant.array((SPHERES, FIELDS), f32)


def sphere(i: i32) -> Sphere:
    return Sphere(SPHERE_TABLE[i, 0], SPHERE_TABLE[i, 1], SPHERE_TABLE[i, 2], SPHERE_TABLE[i, 3],
                  SPHERE_TABLE[i, 4], SPHERE_TABLE[i, 5], SPHERE_TABLE[i, 6])


def hit(s: Sphere, ox1: f32, oy1: f32) -> tuple[f32, f32]:
    dx = ox1 - s.x
    dy = oy1 - s.y
    if dx * dx + dy * dy < s.radius * s.radius:
        dz = ox.math.sqrt(s.radius * s.radius - dx * dx - dy * dy)
        n = dz / ox.math.sqrt(s.radius * s.radius)
        return dz + s.z, n
    return -INF, 0.0


@ox.kernel
def ray_kernel(ptr: MutSlice[ox.u8], dim: i32) -> None:
    x = thread.idx.x + block.idx.x * block.dim.x
    y = thread.idx.y + block.idx.y * block.dim.y
    offset = x + y * block.dim.x * grid.dim.x
    ox1 = f32(x - dim // 2)
    oy1 = f32(y - dim // 2)

    r = 0.0
    g = 0.0
    b = 0.0
    maxz = -INF
    for i in range(SPHERES):
        s = sphere(i)
        t, n = hit(s, ox1, oy1)
        if t > maxz:
            fscale = n
            r = s.r * fscale
            g = s.g * fscale
            b = s.b * fscale
            maxz = t

    with ox.unsafe():
        ptr[offset * 4 + 0] = i32(r * 255)
        ptr[offset * 4 + 1] = i32(g * 255)
        ptr[offset * 4 + 2] = i32(b * 255)
        ptr[offset * 4 + 3] = 255
