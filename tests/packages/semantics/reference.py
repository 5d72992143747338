"""NumPy/Python references for the integer and float semantics of docs/language.md
("Integer and float semantics"), shared by tests/test_semantics.py (LLVM run on the host) and
tests/test_semantics_gpu.py (the kernels of semk.py on the GPU)."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["wrap", "shift_reference", "division_reference", "float_to_int_reference", "special_floats"]


def wrap(value: int, dtype: type) -> int:
    """``value`` wrapped into ``dtype`` (two's complement)."""
    info = np.iinfo(dtype)
    bits = info.bits
    value &= (1 << bits) - 1
    if info.min < 0 and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def shift_reference(op: str, x: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """Python's shift, wrapped to the type; an amount that is negative or at least the width
    shifts everything out (0, or -1 for ``>>`` of a negative signed value)."""
    dtype = x.dtype.type
    bits = np.iinfo(dtype).bits
    out = []
    for v, a in zip(x.tolist(), amount.tolist()):
        a_unsigned = a & ((1 << bits) - 1)
        if a_unsigned >= bits:
            out.append(0 if op == "<<" or v >= 0 else -1)
        else:
            out.append(wrap(v << a_unsigned if op == "<<" else v >> a_unsigned, dtype))
    return np.array(out, dtype=dtype)


def division_reference(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Python's ``//`` and ``%``, wrapped to the type; ``x // 0 == 0`` and ``x % 0 == x``."""
    dtype = x.dtype.type
    out = []
    for a, b in zip(x.tolist(), y.tolist()):
        if b == 0:
            out.append(0 if op == "//" else a)
        else:
            out.append(wrap(a // b if op == "//" else a % b, dtype))
    return np.array(out, dtype=dtype)


def float_to_int_reference(x: np.ndarray, dtype: type) -> np.ndarray:
    """Rust's ``as``: toward zero, saturated to the type's range, NaN → 0."""
    info = np.iinfo(dtype)
    out = []
    for v in x.astype(np.float64).tolist():
        if math.isnan(v):
            out.append(0)
        elif math.isinf(v):
            out.append(int(info.max) if v > 0 else int(info.min))
        else:
            out.append(min(max(int(v), int(info.min)), int(info.max)))
    return np.array(out, dtype=dtype)


def special_floats(dtype: type, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` floats mixing NaN, ±inf, values past every integer range, values near the edges
    of the 8- to 64-bit ranges, and ordinary fractions of both signs."""
    edges: list[float] = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, -0.99, -1.0, 1e30, -1e30]
    for bits in (8, 16, 32, 64):
        for e in (1 << (bits - 1), 1 << bits):
            edges += [e, -e, e - 1, -e + 1, e + 0.5, e * 0.999999, e * 1.000001]
    values = np.concatenate([
        np.array(edges, dtype=np.float64),
        rng.standard_normal(n // 2) * 10.0 ** rng.integers(0, 21, n // 2),
    ])
    values = values.astype(dtype)
    return rng.permutation(np.resize(values, n))
