"""Bessel functions J_n and Y_n in f64 from their integral forms, to check ``ox.math``'s j0 … yn
without SciPy (tests/test_math_api_gpu.py). Accurate to a few ulps of f64, or to a few 1e-16
absolute where the value is small (near a zero), for 0 <= n <= 5 and 0.1 <= x <= 20, the ranges
that test's kernel uses;
tests/test_math_api.py checks both against values computed with mpmath at 40 digits."""
from __future__ import annotations

import numpy as np
from numpy.polynomial.legendre import leggauss

__all__ = ["bessel_jn", "bessel_yn"]


def _gauss_legendre(a: float, b: float, pieces: int, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of ``order``-point Gauss-Legendre on each of ``pieces`` equal parts of [a, b]."""
    z, w = leggauss(order)
    edges = np.linspace(a, b, pieces + 1)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    return (mid[:, None] + half[:, None] * z[None, :]).ravel(), (half[:, None] * w[None, :]).ravel()


def bessel_jn(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """J_n(x) = (1/pi) * integral over [0, pi] of cos(n t - x sin t): the trapezoid rule of a smooth
    periodic integrand, exact to f64 with 256 points for x <= 20."""
    t = np.linspace(0.0, np.pi, 257)
    f = np.cos(n[:, None] * t[None, :] - x[:, None] * np.sin(t)[None, :])
    return (f[:, 1:-1].sum(axis=1) + 0.5 * (f[:, 0] + f[:, -1])) / 256.0  # type: ignore[no-any-return]


def bessel_yn(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Y_n(x) = (1/pi) * integral over [0, pi] of sin(x sin t - n t)
    - (1/pi) * integral over [0, inf) of (e^{n t} + (-1)^n e^{-n t}) e^{-x sinh t} (x > 0).

    Both by Gauss-Legendre on split intervals: the first integrand is smooth but not periodic on
    [0, pi] (16 parts of 32 points); the second is cut at t = 12, where e^{5t - x sinh t} is below
    e^{-60} relative to its peak for x >= 0.1, and split in 96 parts of 24 points, fine enough for
    e^{-20 t} near 0 at x = 20."""
    nn = n.astype(np.float64)[:, None]
    xx = x.astype(np.float64)[:, None]
    theta, w_theta = _gauss_legendre(0.0, np.pi, 16, 32)
    oscillating = (np.sin(xx * np.sin(theta) - nn * theta) * w_theta).sum(axis=1)
    t, w_t = _gauss_legendre(0.0, 12.0, 96, 24)
    sign = np.where(n % 2 == 0, 1.0, -1.0)[:, None]
    decaying = ((np.exp(nn * t - xx * np.sinh(t)) + sign * np.exp(-nn * t - xx * np.sinh(t))) * w_t).sum(axis=1)
    return (oscillating - decaying) / np.pi  # type: ignore[no-any-return]
