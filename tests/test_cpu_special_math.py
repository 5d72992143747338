"""The CPU device's erfinv, erfcinv, erfcx, normcdfinv, cyl_bessel_i0 and cyl_bessel_i1
(oxide_build/backends/cpu/_special_math.c), f32 and f64, against mpmath at 40 digits: within
CUDA's documented ulp bounds for each on random inputs over the whole domain (the tails by
orders of magnitude), and exact at the special values (±1, 0, 2, infinities, NaN, outside the
domain)."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

pytest.importorskip("llvmlite")
mpmath = pytest.importorskip("mpmath")
engine = pytest.importorskip("oxide_build.cpu_engine")
try:
    from oxide_build.backends.cpu.jit import scheduler

    scheduler()
except Exception as e:  # pragma: no cover - an installation without the C extension
    pytest.skip(f"the CPU device's scheduler is not built: {e}", allow_module_level=True)

mp = mpmath.mp
mp.dps = 40
rng = np.random.default_rng(20261202)
N = 1200  # random inputs per function and type

# CUDA's maximum ulp errors (CUDA Math API, "Mathematical Functions" appendix): (f32, f64)
CUDA_ULP = {"erfinv": (2, 5), "erfcinv": (4, 6), "erfcx": (4, 4), "normcdfinv": (5, 8),
            "cyl_bessel_i0": (6, 6), "cyl_bessel_i1": (6, 6)}

SOURCE = """
import oxide as ox
from oxide import DisjointSlice, Slice, thread

T = ox.TypeVar("T", ox.f32, ox.f64)
""" + "".join(f"""

@ox.kernel
def apply_{name}(x: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out) and i < len(x):
        out[i] = ox.math.{name}(x[i])
""" for name in CUDA_ULP)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("special")
    (root / "special.py").write_text(textwrap.dedent(SOURCE))
    return engine.compile_module_for_cpu(root / "special.py", "special", root)


def run(m, name: str, x: np.ndarray) -> np.ndarray:
    t = "f32" if x.dtype == np.float32 else "f64"
    spec = next(k for k in m.kernels if k.name == f"apply_{name}" and k.specialization["T"] == t)
    out = np.full(x.size, np.float32(1234.5) if t == "f32" else 1234.5, x.dtype)
    values = [x.ctypes.data, x.size, out.ctypes.data, out.size]
    m.function(spec.symbol).launch(((x.size + 255) // 256, 1, 1), (256, 1, 1), 0,
                                   values if spec.param_slots is None else [values[s] for s in spec.param_slots])
    return out


def erfcinv_reference(z: float) -> mpmath.mpf:
    """The root of log erfc(y) = log z (mpmath has no erfcinv), from erfinv(1 - z) at low
    precision, refined at 40 digits."""
    z = mp.mpf(z)
    with mp.workdps(20):
        start = mpmath.erfinv(1 - z) if z > mp.mpf("1e-15") else mpmath.sqrt(-mpmath.log(z))
    return mpmath.findroot(lambda y: mpmath.log(mpmath.erfc(y)) - mpmath.log(z), start)


def erfcx_reference(x: float) -> mpmath.mpf:
    """exp(x^2) erfc(x); for x > 100 as U(1/2, 1/2, x^2) / sqrt(pi) (Tricomi's function, whose
    large-argument expansion mpmath has: its erfc fails for x near 1e300)."""
    x = mp.mpf(x)
    if x > 100:
        return mpmath.hyperu(0.5, 0.5, x * x) / mpmath.sqrt(mpmath.pi)
    return mpmath.exp(x * x) * mpmath.erfc(x)


REFERENCES = {
    "erfinv": lambda x: mpmath.erfinv(mp.mpf(x)),
    "erfcinv": erfcinv_reference,
    "erfcx": lambda x: erfcx_reference(x),
    "normcdfinv": lambda p: -mpmath.sqrt(2) * erfcinv_reference(2 * mp.mpf(p)),
    "cyl_bessel_i0": lambda x: mpmath.besseli(0, mp.mpf(x)),
    "cyl_bessel_i1": lambda x: mpmath.besseli(1, mp.mpf(x)),
}


def inputs(name: str, dtype: type) -> np.ndarray:
    """Random arguments over the function's domain, its tails sampled by orders of magnitude."""
    f32 = dtype is np.float32
    tiny = -37 if f32 else -300
    uniform, log = rng.uniform, lambda lo, hi, n: 10.0 ** rng.uniform(lo, hi, n)
    sign = rng.choice([-1.0, 1.0], N)
    if name == "erfinv":
        x = np.concatenate([uniform(-1, 1, N // 3), sign[: N // 3] * (1 - log(-16 if not f32 else -7.5, -0.3, N // 3)),
                            sign[: N - 2 * (N // 3)] * log(tiny, -1, N - 2 * (N // 3))])
    elif name == "erfcinv":
        x = np.concatenate([uniform(0, 2, N // 3), log(tiny, -0.3, N // 3), 2 - log(-16 if not f32 else -7.5, -0.3,
                                                                                   N - 2 * (N // 3))])
    elif name == "normcdfinv":
        x = np.concatenate([uniform(0, 1, N // 3), log(tiny, -0.3, N // 3), 1 - log(-16 if not f32 else -7.5, -0.3,
                                                                                   N - 2 * (N // 3))])
    elif name == "erfcx":
        x = np.concatenate([uniform(-9 if f32 else -26, 10, N // 2), log(0, 30 if f32 else 300, N // 4),
                            uniform(-0.5, 0.5, N - N // 2 - N // 4)])
    else:
        top = 85 if f32 else 700
        x = np.concatenate([uniform(-top, top, N // 2), sign[: N - N // 2] * log(tiny, 1, N - N // 2)])
    x = x.astype(dtype)
    keep = np.isfinite(x)
    if name in ("erfinv",):
        keep &= np.abs(x) < 1
    if name == "erfcinv":
        keep &= (x > 0) & (x < 2)
    if name == "normcdfinv":
        keep &= (x > 0) & (x < 1)
    return x[keep]


def ulp_error(got: float, want: mpmath.mpf, dtype: type) -> float:
    """|got - want| in units of the last place of ``want`` in ``dtype`` (its subnormal spacing
    at most)."""
    bits, lowest = (24, -149) if dtype is np.float32 else (53, -1074)
    if want == 0:
        return 0.0 if got == 0 else float("inf")
    _, e = mpmath.frexp(want)
    ulp = mpmath.ldexp(1, max(int(e) - bits, lowest))
    return float(abs(mp.mpf(float(got)) - want) / ulp)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(CUDA_ULP))
def test_within_cudas_ulp_bound(compiled, name: str, dtype: type) -> None:
    x = inputs(name, dtype)
    assert x.size > N * 0.9
    got = run(compiled, name, x)
    bound = CUDA_ULP[name][dtype is np.float64]
    limit = float(np.finfo(dtype).max)
    worst, at = 0.0, None
    for xi, gi in zip(x, got):
        want = REFERENCES[name](float(xi))
        if abs(want) > limit:  # overflows the type: infinity of its sign
            assert np.isinf(gi) and (gi > 0) == (want > 0), (name, xi, gi)
            continue
        err = ulp_error(gi, want, dtype)
        if err > worst:
            worst, at = err, (float(xi), float(gi), mpmath.nstr(want, 20))
    assert worst <= bound, f"{name} {np.dtype(dtype).name}: {worst:.2f} ulp at {at} (CUDA's bound: {bound})"
    assert worst <= 1.0, f"{name} {np.dtype(dtype).name}: {worst:.2f} ulp at {at}: computed in long double, " \
                         "rounded once, it should be within an ulp"


INF, NAN = float("inf"), float("nan")
SPECIAL_VALUES = {
    "erfinv": [(0.0, 0.0), (-0.0, -0.0), (1.0, INF), (-1.0, -INF), (1.5, NAN), (-INF, NAN), (NAN, NAN)],
    "erfcinv": [(1.0, 0.0), (0.0, INF), (2.0, -INF), (-0.5, NAN), (2.5, NAN), (INF, NAN), (NAN, NAN)],
    "erfcx": [(0.0, 1.0), (INF, 0.0), (-INF, INF), (-30.0, INF), (NAN, NAN)],
    "normcdfinv": [(0.5, 0.0), (0.0, -INF), (1.0, INF), (-0.1, NAN), (1.1, NAN), (NAN, NAN)],
    "cyl_bessel_i0": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, INF), (800.0, INF), (NAN, NAN)],
    "cyl_bessel_i1": [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF), (-800.0, -INF), (NAN, NAN)],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(CUDA_ULP))
def test_special_values(compiled, name: str, dtype: type) -> None:
    cases = SPECIAL_VALUES[name]
    x = np.array([c[0] for c in cases], dtype)
    got = run(compiled, name, x)
    for (xi, want), gi in zip(cases, got):
        if np.isnan(want):
            assert np.isnan(gi), (name, xi, gi)
        else:
            assert gi == want and np.signbit(gi) == np.signbit(want), (name, xi, gi, want)
