"""Monte-Carlo random walks, one per thread, with a per-thread xorshift generator.

Ported from numba-cuda's random-number examples (a 1-D random walk per thread driven by a
counter-seeded xorshift, as in numba.cuda.random's xoroshiro128+ docs example and the classic
Marsaglia xorshift64* recipe), the way a numba author writes it: the state a uint64 seeded
from the thread id with splitmix64, the 64-bit mixing in unsigned arithmetic, the top 24 bits
turned into a float in [0, 1) with a multiply, a step of +1 or -1, the walk's end position and
its largest distance from the start stored per walk."""
import oxide as ox
from oxide import DisjointSlice, f32, i32, thread, u32, u64


def splitmix64(x: u64) -> u64:
    z = x + u64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> 30)) * u64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> 27)) * u64(0x94D049BB133111EB)
    return z ^ (z >> 31)


def xorshift64star(state: u64) -> tuple[u64, u64]:
    state ^= state >> 12
    state ^= state << 25
    state ^= state >> 27
    return state, state * u64(0x2545F4914F6CDD1D)


@ox.kernel
def random_walk(seed: u64, n_steps: i32, final_pos: DisjointSlice[i32], max_dist: DisjointSlice[i32]) -> None:
    tid = thread.index_1d()
    if tid >= len(final_pos) or tid >= len(max_dist):
        return
    state = splitmix64(seed + u64(tid))
    pos = 0
    furthest = 0
    for step in range(n_steps):
        state, r = xorshift64star(state)
        u = f32(u32(r >> 40)) * (1.0 / 16777216.0)
        if u < 0.5:
            pos -= 1
        else:
            pos += 1
        if abs(pos) > furthest:
            furthest = abs(pos)
    final_pos[tid] = pos
    max_dist[tid] = furthest
