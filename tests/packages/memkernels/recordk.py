"""Views of records (docs/language.md, "Structs"): an array of particles from a NumPy record
dtype (``ox.struct_dtype(Particle)``), read and written as structs. Checked against NumPy by
tests/test_lang_memory_gpu.py."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i64, thread


@ox.struct
class Particle:
    x: f32
    y: f32
    id: i64
    vx: f32
    vy: f32


def advance(p: Particle, dt: f32) -> Particle:
    q = p
    q.x = p.x + p.vx * dt
    q.y = p.y + p.vy * dt
    q.vy = p.vy - 9.81 * dt
    return q


@ox.kernel
def step(particles: Slice[Particle], dt: f32, out: DisjointSlice[Particle], ids: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(particles) and i < len(out) and i < len(ids):
        p = advance(particles[i], dt)
        out[i] = p
        ids[i] = particles[i].id * 2 + 1
