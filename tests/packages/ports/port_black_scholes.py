"""European option prices, Black-Scholes formula, f32.

Ported from NVIDIA cuda-samples, Samples/5_Domain_Specific/BlackScholes/
BlackScholes_kernel.cuh (`cndGPU`, `BlackScholesBodyGPU`), the way its author writes it:
the polynomial's constants as plain literals in an f32 function."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, thread

A1 = 0.31938153
A2 = -0.356563782
A3 = 1.781477937
A4 = -1.821255978
A5 = 1.330274429
RSQRT2PI = 0.39894228040143267793994605993438


def cnd(d: f32) -> f32:
    k = 1.0 / (1.0 + 0.2316419 * abs(d))
    cnd = RSQRT2PI * ox.math.exp(-0.5 * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))))
    if d > 0:
        cnd = 1.0 - cnd
    return cnd


@ox.kernel
def black_scholes(call: DisjointSlice[f32], put: DisjointSlice[f32], price: Slice[f32],
                  strike: Slice[f32], years: Slice[f32], riskfree: f32, volatility: f32) -> None:
    i = thread.index_1d()
    if i < len(call) and i < len(put) and i < len(price) and i < len(strike) and i < len(years):
        s = price[i]
        x = strike[i]
        t = years[i]
        sqrt_t = ox.math.sqrt(t)
        d1 = (ox.math.log(s / x) + (riskfree + 0.5 * volatility * volatility) * t) / (volatility * sqrt_t)
        d2 = d1 - volatility * sqrt_t
        cnd_d1 = cnd(d1)
        cnd_d2 = cnd(d2)
        exp_rt = ox.math.exp(-riskfree * t)
        call[i] = s * cnd_d1 - x * exp_rt * cnd_d2
        put[i] = x * exp_rt * (1.0 - cnd_d2) - s * (1.0 - cnd_d1)
