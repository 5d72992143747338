"""CUDA's math API (``ox.math``, libdevice) on the GPU, f32 and f64, every function against a
reference that needs no SciPy: Python's ``math``, NumPy, mpmath (f64), the integral
forms of the Bessel functions J_n and Y_n (tests/bessel_reference.py, checked against mpmath in
tests/test_math_api.py) or Newton steps (the inverse error functions). Inputs are
random, outputs poisoned, every element checked within the function's error bound (in ulps of
the result's type, plus an absolute bound where CUDA states one: near a zero of a Bessel
function or of lgamma). Kernels: packages/mathapi/mathk.py. On the CPU device (tests/devices.py)
the same bounds hold for its forms of the functions."""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu]
mpmath = pytest.importorskip("mpmath")
sys.path.insert(0, str(Path(__file__).parent / "packages" / "mathapi"))
from bessel_reference import bessel_jn, bessel_yn  # noqa: E402
rng = np.random.default_rng()
BLOCK = 128

# the rows of mathk.math_api's outputs, in its order
FLOAT_ROWS = ["sqrt", "rsqrt", "cbrt", "rcbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "logb",
              "sin", "cos", "tan", "sinpi", "cospi", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
              "atanh", "erf", "erfc", "erfinv", "erfcinv", "erfcx", "normcdf", "normcdfinv", "lgamma", "tgamma", "j0",
              "j1", "y0", "y1", "jn", "yn", "cyl_bessel_i0", "cyl_bessel_i1", "floor", "ceil", "trunc", "round", "rint",
              "nearbyint", "fabs", "abs", "pow", "atan2", "fmod", "remainder", "hypot", "rhypot", "norm3d", "rnorm3d",
              "norm4d", "rnorm4d", "copysign", "nextafter", "fdim", "fmin", "fmax", "min", "max", "ldexp", "scalbn",
              "scalbln", "sincos.sin", "sincos.cos", "sincospi.sin", "sincospi.cos", "modf.frac", "modf.int",
              "frexp.mant", "remquo.rem"]
INT_ROWS = ["ilogb", "lround", "llround", "lrint", "llrint", "frexp.exp", "remquo.quo", "isnan", "isinf", "isfinite",
            "signbit"]
EXACT = {"floor", "ceil", "trunc", "round", "rint", "nearbyint", "fabs", "abs", "fmod", "remainder", "copysign",
         "nextafter", "fdim", "fmin", "fmax", "min", "max", "ldexp", "scalbn", "scalbln", "modf.frac", "modf.int",
         "frexp.mant", "remquo.rem", "logb"}
# (ulps, absolute error) beyond the default of 4 ulps: CUDA's documented bounds, with room for
# the reference's own rounding
BOUNDS_F32: dict[str, tuple[float, float]] = {
    "j0": (16, 2e-6), "j1": (16, 2e-6), "y0": (16, 2e-6), "y1": (16, 2e-6), "jn": (64, 4e-6), "yn": (64, 4e-6),
    "lgamma": (16, 2e-6), "tgamma": (16, 0.0), "sinpi": (4, 1e-7), "cospi": (4, 1e-7), "sincospi.sin": (4, 1e-7),
    "sincospi.cos": (4, 1e-7), "pow": (8, 0.0), "erfcinv": (8, 0.0), "normcdfinv": (8, 0.0), "normcdf": (8, 0.0),
    "cyl_bessel_i0": (8, 0.0), "cyl_bessel_i1": (8, 0.0), "expm1": (4, 1e-12), "log1p": (4, 1e-12),
}
# the f64 Bessel functions (j0 … yn of x in [-4, 4] or [0.1, 20], n in 0..5) against references
# accurate to a few ulps (tests/bessel_reference.py): torch.special's CPU Y0/Y1 (Cephes) were off by
# 4e-12 absolute, so they are no longer the reference
BOUNDS_F64: dict[str, tuple[float, float]] = {
    "j0": (64, 2e-12), "j1": (64, 2e-12), "y0": (64, 2e-12), "y1": (64, 2e-12), "jn": (64, 2e-12), "yn": (64, 2e-12),
    "lgamma": (16, 1e-14), "tgamma": (16, 0.0), "sinpi": (4, 4e-15), "cospi": (4, 4e-15), "sincospi.sin": (4, 4e-15),
    "sincospi.cos": (4, 4e-15), "erfcx": (8, 0.0), "normcdf": (32, 0.0), "normcdfinv": (16, 1e-15),
    "erfinv": (8, 0.0), "erfcinv": (8, 0.0), "cyl_bessel_i0": (8, 0.0), "cyl_bessel_i1": (8, 0.0),
    "sin": (4, 1e-16), "cos": (4, 1e-16), "tan": (4, 1e-16), "expm1": (4, 1e-30), "log1p": (4, 1e-30),
}


def elementwise(fn: Callable[..., float]) -> Callable[..., np.ndarray]:
    return lambda *a: np.array([fn(*(float(v) for v in vals)) for vals in zip(*a)], dtype=np.float64)


def mp(fn: Callable[[object], object], a: np.ndarray) -> np.ndarray:
    """``fn`` of each element at 30 digits (mpmath), rounded to f64; NaN where it has no real value."""
    out = np.empty(len(a))
    with mpmath.workdps(30):
        for k, v in enumerate(a):
            try:
                r = fn(mpmath.mpf(float(v)))
                out[k] = float(r) if not isinstance(r, mpmath.mpc) else np.nan
            except (ValueError, ZeroDivisionError):
                out[k] = np.nan
    return out


def erfinv_mp(y: object) -> object:
    return mpmath.erfinv(y) if abs(y) < 1 else (mpmath.inf if y == 1 else -mpmath.inf if y == -1 else mpmath.nan)  # type: ignore[operator]


def newton_inverse(f: Callable[[float], float], df: Callable[[float], float], y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Two Newton steps on f(z) = y from z: the inverse functions to the reference's precision."""
    out = z.copy()
    for _ in range(2):
        out = np.array([zz - (f(zz) - yy) / df(zz) for zz, yy in zip(out, y)])
    return out


def round_half_away(h: np.ndarray) -> np.ndarray:
    t = np.trunc(h)
    return np.where(np.abs(h - t) >= 0.5, t + np.copysign(1.0, h), t)  # type: ignore[no-any-return]


def references(dt: type, x: np.ndarray, y: np.ndarray, u: np.ndarray, p: np.ndarray, h: np.ndarray,
               n: np.ndarray, e: np.ndarray) -> dict[str, np.ndarray]:
    """f64 references of each row; the arguments the kernel computes (2u - 1, 1 + p, ...) are
    rounded in the kernel's type first, as the kernel rounds them."""
    c = dt  # the kernel's float type, to round an argument as the kernel does

    def arg(a: np.ndarray) -> np.ndarray:
        return a.astype(c).astype(np.float64)
    v, w, uu, pp, hh = (a.astype(np.float64) for a in (x, y, u, p, h))
    sym = arg(c(2.0) * u - c(1.0))
    erf_d = lambda z: 2.0 / math.sqrt(math.pi) * math.exp(-z * z)  # noqa: E731
    erfinv = newton_inverse(math.erf, erf_d, sym, mp(erfinv_mp, sym))
    y2 = arg(c(2.0) * u)
    erfcinv = newton_inverse(math.erfc, lambda z: -erf_d(z), y2, mp(lambda z: erfinv_mp(1 - z), y2))
    rem = elementwise(math.remainder)(v, w)
    mant, _ = np.frexp(v)
    frac, integral = np.modf(hh)
    ref = {
        "sqrt": np.sqrt(pp), "rsqrt": 1.0 / np.sqrt(pp), "cbrt": np.cbrt(v), "rcbrt": 1.0 / np.cbrt(v),
        "exp": np.exp(v), "exp2": np.exp2(v), "exp10": 10.0 ** v, "expm1": np.expm1(v), "log": np.log(pp),
        "log2": np.log2(pp), "log10": np.log10(pp), "log1p": np.log1p(arg(p - c(0.09))),
        "logb": np.frexp(v)[1].astype(np.float64) - 1.0, "sin": np.sin(v), "cos": np.cos(v), "tan": np.tan(v),
        "sinpi": np.sin(np.pi * np.fmod(v, 2.0)), "cospi": np.cos(np.pi * np.fmod(v, 2.0)),
        "asin": np.arcsin(sym), "acos": np.arccos(sym), "atan": np.arctan(v), "sinh": np.sinh(v), "cosh": np.cosh(v),
        "tanh": np.tanh(v), "asinh": np.arcsinh(v), "acosh": np.arccosh(arg(c(1.0) + p)), "atanh": np.arctanh(sym),
        "erf": elementwise(math.erf)(v), "erfc": elementwise(math.erfc)(v), "erfinv": erfinv, "erfcinv": erfcinv,
        "erfcx": mp(lambda z: mpmath.exp(z * z) * mpmath.erfc(z), v), "normcdf": 0.5 * elementwise(math.erfc)(-v / math.sqrt(2.0)),
        "normcdfinv": mp(lambda z: mpmath.sqrt(2) * erfinv_mp(2 * z - 1), uu), "lgamma": elementwise(math.lgamma)(v),
        "tgamma": elementwise(math.gamma)(v), "j0": bessel_jn(np.zeros_like(v), v),
        "j1": bessel_jn(np.ones_like(v), v), "y0": bessel_yn(np.zeros_like(n), pp),
        "y1": bessel_yn(np.ones_like(n), pp), "jn": bessel_jn(n.astype(np.float64), pp),
        "yn": bessel_yn(n, pp), "cyl_bessel_i0": mp(lambda z: mpmath.besseli(0, z), v), "cyl_bessel_i1": mp(lambda z: mpmath.besseli(1, z), v),
        "floor": np.floor(hh), "ceil": np.ceil(hh), "trunc": np.trunc(hh), "round": round_half_away(hh),
        "rint": np.rint(hh), "nearbyint": np.rint(hh), "fabs": np.abs(v), "abs": np.abs(v), "pow": pp ** v,
        "atan2": np.arctan2(v, w), "fmod": np.fmod(v, w), "remainder": rem, "hypot": np.hypot(v, w),
        "rhypot": 1.0 / np.hypot(v, w), "norm3d": np.sqrt(v * v + w * w + pp * pp),
        "rnorm3d": 1.0 / np.sqrt(v * v + w * w + pp * pp), "norm4d": np.sqrt(v * v + w * w + pp * pp + uu * uu),
        "rnorm4d": 1.0 / np.sqrt(v * v + w * w + pp * pp + uu * uu), "copysign": np.copysign(pp, v),
        "nextafter": np.nextafter(x, y).astype(np.float64), "fdim": np.where(x > y, x - y, c(0.0)).astype(np.float64),
        "fmin": np.minimum(v, w), "fmax": np.maximum(v, w), "min": np.minimum(v, w), "max": np.maximum(v, w),
        "ldexp": np.ldexp(v, e), "scalbn": np.ldexp(v, e), "scalbln": np.ldexp(v, e),
        "sincos.sin": np.sin(v), "sincos.cos": np.cos(v), "sincospi.sin": np.sin(np.pi * np.fmod(v, 2.0)),
        "sincospi.cos": np.cos(np.pi * np.fmod(v, 2.0)), "modf.frac": frac, "modf.int": integral, "frexp.mant": mant,
        "remquo.rem": rem,
    }
    assert set(ref) == set(FLOAT_ROWS)
    return ref


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_math_function_against_a_reference(dtype: type) -> None:
    import mathk

    m = 4099
    dt = dtype
    x = rng.uniform(-4.0, 4.0, m).astype(dt)
    y = (rng.uniform(0.25, 4.0, m) * rng.choice([-1.0, 1.0], m)).astype(dt)
    u = rng.uniform(0.001, 0.999, m).astype(dt)
    p = rng.uniform(0.1, 20.0, m).astype(dt)
    h = rng.uniform(-10.0, 10.0, m).astype(dt)
    h[: m // 2] = (rng.integers(-40, 40, m // 2) / 2.0).astype(dt)  # halfway cases for round / rint / lround
    special = rng.uniform(-3.0, 3.0, m).astype(dt)
    special[:7] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40 if dt is np.float32 else 1e-310, -np.nan]
    special[7: m // 3] = rng.choice(special[:7], m // 3 - 7)
    orders = rng.integers(0, 6, m).astype(np.int32)
    exps = rng.integers(-12, 12, m).astype(np.int32)
    out = devices.full(len(FLOAT_ROWS) * m, np.nan, dt)
    iout = devices.full(len(INT_ROWS) * m, -12345, np.int64)
    ins = [devices.array(a) for a in (x, y, u, p, h, special, orders, exps)]
    mathk.math_api[(m + BLOCK - 1) // BLOCK, BLOCK](*ins, out, iout)
    devices.synchronize()
    got = devices.to_numpy(out).astype(np.float64).reshape(len(FLOAT_ROWS), m)
    igot = devices.to_numpy(iout).reshape(len(INT_ROWS), m)

    ref = references(dt, x, y, u, p, h, orders, exps)
    bounds = BOUNDS_F32 if dt is np.float32 else BOUNDS_F64
    failures = []
    for row, name in enumerate(FLOAT_ROWS):
        r, g = ref[name], got[row]
        if name in EXACT:
            ok = (g == r) | (np.isnan(g) & np.isnan(r))
        else:
            ulps, atol = bounds.get(name, (4, 0.0))
            finite_r = np.where(np.isfinite(r), r, 0.0)
            spacing = np.spacing(np.abs(finite_r).astype(dt)).astype(np.float64)
            ok = (np.abs(g - r) <= ulps * spacing + atol) | (g == r) | (np.isnan(g) & np.isnan(r))
        if not ok.all():
            k = int(np.flatnonzero(~ok)[0])
            failures.append(f"{name}: {int((~ok).sum())} of {m} wrong, e.g. element {k}: got {g[k]!r}, want {r[k]!r}")
    hv, v64, w64 = h.astype(np.float64), x.astype(np.float64), y.astype(np.float64)
    quotient = np.rint((v64 - ref["remquo.rem"]) / w64).astype(np.int64)
    quo = igot[INT_ROWS.index("remquo.quo")]
    quo_ok = ((np.abs(quo) & 7) == (np.abs(quotient) & 7)) & (
        ((np.abs(quotient) & 7) == 0) | (np.sign(quo) == np.sign(v64 / w64)))
    if not quo_ok.all():
        failures.append(f"remquo.quo: {int((~quo_ok).sum())} wrong")
    iref = {"ilogb": np.frexp(v64)[1] - 1, "lround": round_half_away(hv).astype(np.int64),
            "llround": round_half_away(hv).astype(np.int64), "lrint": np.rint(hv).astype(np.int64),
            "llrint": np.rint(hv).astype(np.int64), "frexp.exp": np.frexp(v64)[1],
            "isnan": np.isnan(special), "isinf": np.isinf(special), "isfinite": np.isfinite(special),
            "signbit": np.signbit(special)}
    for name, want in iref.items():
        g = igot[INT_ROWS.index(name)]
        bad = g != want.astype(np.int64)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            failures.append(f"{name}: {int(bad.sum())} of {m} wrong, e.g. element {k}: got {g[k]}, want {want[k]}")
    assert not failures, "\n".join(failures)
