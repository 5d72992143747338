"""Device structs (docs/language.md, "Structs"): a particle integrated one step (the update of
NVIDIA's n-body sample, per particle), through device functions taking and returning structs.
Checked against NumPy by tests/test_lang_memory_gpu.py."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, f32x2, thread


@ox.struct
class Particle:
    pos: f32x2
    vel: f32x2
    mass: f32


@ox.struct
class Force:
    value: f32x2


def gravity(p: Particle, g: f32) -> Force:
    return Force(f32x2(0.0, -g) * p.mass)


def integrate(p: Particle, f: Force, dt: f32) -> Particle:
    q = p
    q.vel = p.vel + f.value * (dt / p.mass)
    q.pos = p.pos + q.vel * dt
    return q


@ox.kernel
def step(px: Slice[f32], py: Slice[f32], vx: Slice[f32], vy: Slice[f32], mass: Slice[f32], g: f32, dt: f32,
         out_x: DisjointSlice[f32], out_y: DisjointSlice[f32], out_speed2: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(px) and i < len(py) and i < len(vx) and i < len(vy) and i < len(mass) \
            and i < len(out_x) and i < len(out_y) and i < len(out_speed2):
        p = Particle(pos=f32x2(px[i], py[i]), vel=f32x2(vx[i], vy[i]), mass=mass[i])
        p = integrate(p, gravity(p, g), dt)
        out_x[i] = p.pos.x
        out_y[i] = p.pos.y
        v = p.vel
        out_speed2[i] = v.x * v.x + v.y * v.y
