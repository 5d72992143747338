"""Seeded dropout with a counter-based Philox4x32-10 generator, one element per thread.

Ported from Triton's tutorial 04-low-memory-dropout.py (`_seeded_dropout`, with `tl.rand`'s
Philox from triton/language/random.py), rewritten as SIMT the way a CUDA author writes it (the
shape of curand's Philox4x32_10): the 64-bit seed split into two 32-bit key words, the element
offset as the counter, ten rounds of `__umulhi` and wrapping multiplies by the round constants
with the key bumped by the Weyl constants, the first output word turned into a float in
[0, 1) as `tl.rand` does, elements kept above the dropout probability and scaled by 1/(1-p)."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, i32, thread, u32, u64

PHILOX_KEY_A = 0x9E3779B9
PHILOX_KEY_B = 0xBB67AE85
PHILOX_ROUND_A = 0xD2511F53
PHILOX_ROUND_B = 0xCD9E8D57
N_ROUNDS = 10


def philox_randint(seed: u64, offset: u32) -> u32:
    k0 = u32(seed & 0xFFFFFFFF)
    k1 = u32((seed >> 32) & 0xFFFFFFFF)
    c0 = offset
    c1 = 0
    c2 = 0
    c3 = 0
    for _ in ox.static_range(N_ROUNDS):
        _c0 = c0
        _c2 = c2
        c0 = ox.bits.mulhi(PHILOX_ROUND_B, _c2) ^ c1 ^ k0
        c2 = ox.bits.mulhi(PHILOX_ROUND_A, _c0) ^ c3 ^ k1
        c1 = PHILOX_ROUND_B * _c2
        c3 = PHILOX_ROUND_A * _c0
        k0 += PHILOX_KEY_A
        k1 += PHILOX_KEY_B
    return c0


def uint_to_uniform_float(x: u32) -> f32:
    xi = ox.bits.bitcast(x, i32)
    xi = -xi - 1 if xi < 0 else xi
    return f32(xi) * 4.6566127342e-10


@ox.kernel
def seeded_dropout(x: Slice[f32], output: DisjointSlice[f32], n_elements: i32, p: f32, seed: u64) -> None:
    offset = thread.index_1d()
    if offset < n_elements:
        random = uint_to_uniform_float(philox_randint(seed, u32(offset)))
        x_keep = random > p
        output[offset] = x[offset] / (1 - p) if x_keep else 0.0
