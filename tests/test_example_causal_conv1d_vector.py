"""examples/causal_conv1d's fast kernels (vector_kernels.py) on the device the tests run on (the
CPU device without a GPU), against NumPy in float64: the channel-first backward (dx, dweight,
dbias) for fp32, fp16 and bf16 words, every width, with and without SiLU and bias, at lengths
that leave a block's last warp partly idle and that take several chunks, so the halo each lane
gets from its neighbours (and lane 31 from the next warp's first vector) is exercised at every
boundary. Launched as cpp_functions.py launches them, without torch."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent / "examples" / "causal_conv1d"
rng = np.random.default_rng(2727)
F32, F16, BF16 = 0, 1, 2


@pytest.fixture(scope="module")
def vk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("cc1d_vec")
    yield devices.compiled_package([ROOT / "causal_conv1d" / "vector_kernels.py"], "cc1d_vector", root)
    sys.modules.pop("cc1d_vector.vector_kernels", None)
    sys.modules.pop("cc1d_vector", None)


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (nearest even), as uint16 bit patterns."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def to_words(a: np.ndarray, dt: int) -> tuple[np.ndarray, np.ndarray]:
    """(the int32 words of ``a`` stored as dtype ``dt``, the values those words hold as float64)."""
    if dt == F32:
        v = np.ascontiguousarray(a, np.float32)
        return v.reshape(-1).view(np.int32).copy(), v.astype(np.float64)
    if dt == F16:
        v = np.ascontiguousarray(a, np.float16)
        return v.reshape(-1).view(np.int32).copy(), v.astype(np.float64)
    bits = bf16_bits(a)
    values = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.reshape(-1).view(np.int32).copy(), values


def from_words(words: np.ndarray, dt: int, shape: tuple[int, ...]) -> np.ndarray:
    if dt == F32:
        return words.view(np.float32).astype(np.float64).reshape(shape)
    if dt == F16:
        return words.view(np.float16).astype(np.float64).reshape(shape)
    return (words.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64).reshape(shape)


def reference_backward(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, dout: np.ndarray,
                       act: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    batch, dim, seqlen = x.shape
    width = w.shape[1]
    xp = np.concatenate([np.zeros((batch, dim, width - 1)), x], axis=2)
    pre = np.zeros(x.shape) + (0.0 if bias is None else bias[None, :, None])
    for k in range(width):
        pre += w[None, :, k, None] * xp[:, :, k:k + seqlen]
    s = 1.0 / (1.0 + np.exp(-pre))
    g = dout * s * (1.0 + pre * (1.0 - s)) if act else dout
    gp = np.concatenate([g, np.zeros((batch, dim, width - 1))], axis=2)
    dx = np.zeros(x.shape)
    dw = np.zeros(w.shape)
    for k in range(width):
        dx += w[None, :, k, None] * gp[:, :, width - 1 - k:width - 1 - k + seqlen]
        dw[:, k] = (xp[:, :, k:k + seqlen] * g).sum(axis=(0, 2))
    return dx, dw, g.sum(axis=(0, 2))


@pytest.mark.parametrize("dt", [F32, F16, BF16])
@pytest.mark.parametrize("width", [2, 3, 4])
@pytest.mark.parametrize("act, with_bias", [(True, True), (False, False)])
@pytest.mark.parametrize("nvec, threads, bpb", [(40, 64, 1), (300, 256, 3), (1100, 256, 2), (300, 128, 1)])
def test_channel_first_backward(vk: ModuleType, dt: int, width: int, act: bool, with_bias: bool, nvec: int,
                                threads: int, bpb: int) -> None:
    """bpb batches a block: 1 and 2 leave several blocks a channel, whose sums the last to arrive
    adds (launched twice: the arrival counters are back at 0 and the sums have the same bits);
    3 (= batch) a block a channel, which writes them itself."""
    batch, dim, seqlen = 3, 3, 8 * nvec
    x_words, x = to_words(rng.standard_normal((batch, dim, seqlen)), dt)
    g_words, dout = to_words(rng.standard_normal((batch, dim, seqlen)), dt)
    w = rng.standard_normal((dim, width)).astype(np.float32)
    bias = rng.standard_normal(dim).astype(np.float32) if with_bias else None
    dx = devices.array(np.full(x_words.shape, 0x7FC00000 if dt == F32 else 0x7E007E00, np.int32))
    dweight = devices.full((dim, width), np.nan)
    dbias = devices.full(dim, np.nan)
    bias_arg = devices.array(bias if bias is not None else np.zeros(dim, np.float32))
    ngroups = -(-batch // bpb)
    partials = devices.full(dim * (width + 1) * ngroups, np.nan)
    arrived = devices.array(np.zeros(dim, np.uint32))
    args = (devices.array(x_words), devices.array(w), bias_arg, devices.array(g_words), dx, dweight, dbias, partials,
            arrived, batch, dim, nvec, bpb, dim * seqlen, seqlen, dim * seqlen, seqlen, dim * seqlen, seqlen,
            with_bias, act, width, dt)
    vk.bwd_channel_first[dim * ngroups, threads](*args)
    first_dw, first_db = to_numpy(dweight).copy(), to_numpy(dbias).copy()
    assert (to_numpy(arrived) == 0).all(), "every channel's counter wraps back to 0"
    vk.bwd_channel_first[dim * ngroups, threads](*args)
    assert to_numpy(dweight).tobytes() == first_dw.tobytes(), "the same sums, bit for bit, the second launch"
    assert to_numpy(dbias).tobytes() == first_db.tobytes()
    want_dx, want_dw, want_db = reference_backward(x, w.astype(np.float64), None if bias is None else
                                                   bias.astype(np.float64), dout, act)
    got_dx = from_words(to_numpy(dx), dt, x.shape)
    rtol = 2e-5 if dt == F32 else (2e-3 if dt == F16 else 1.6e-2)
    np.testing.assert_allclose(got_dx, want_dx, rtol=rtol, atol=rtol * (1.0 + np.abs(want_dx).max()) * 0.05)
    scale = 1e-4 * np.sqrt(batch * seqlen) * (1.0 + np.abs(want_dw).max())
    np.testing.assert_allclose(to_numpy(dweight), want_dw, rtol=1e-4, atol=scale)
    if with_bias:
        np.testing.assert_allclose(to_numpy(dbias), want_db, rtol=1e-4, atol=scale)
    else:
        assert np.isnan(to_numpy(dbias)).all(), "dbias is written only with a bias"
