"""examples/causal_conv1d's general kernels (kernels.py: any layout, seq_idx, initial and final
states) on the device the tests run on (the CPU device without a GPU), against NumPy in float64:
their optional views (bias, seq_idx, initial_states, final_states and dfinal_states None or
given) and their DisjointTensor writes at the digits of each thread's split index, with the
channel or the position fastest. Launched as cpp_functions.py launches them, without torch."""
from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent / "examples" / "causal_conv1d"
rng = np.random.default_rng(27)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("cc1d")
    yield devices.compiled_package([ROOT / "causal_conv1d" / "kernels.py"], "cc1d_general", root)
    sys.modules.pop("cc1d_general.kernels", None)
    sys.modules.pop("cc1d_general", None)


def _channel_last(a: Any) -> Any:
    """The (batch, dim, seqlen) view of a dense (batch, seqlen, dim) array: dim of stride 1."""
    if hasattr(a, "permute"):  # a torch tensor (the GPU)
        return a.permute(0, 2, 1)
    if isinstance(a, np.ndarray):  # the CPU device's arrays
        return a.transpose(0, 2, 1)
    pytest.skip("a channel-last view needs torch on the GPU")


def x_of(x: np.ndarray, init: np.ndarray | None, p: int, b: int, c: int, width: int) -> float:
    if p >= 0:
        return float(x[b, c, p])
    return float(init[b, c, width - 1 + p]) if init is not None else 0.0


def reference_pre(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, seq: np.ndarray | None,
                  init: np.ndarray | None) -> np.ndarray:
    batch, dim, seqlen = x.shape
    width = w.shape[1]
    pre = np.zeros(x.shape)
    for b in range(batch):
        for c in range(dim):
            for m in range(seqlen):
                if seq is not None and seq[b, m] < 0:
                    continue
                acc = float(bias[c]) if bias is not None else 0.0
                for k in range(width):
                    p = m - (width - 1) + k
                    same = seq is None or (seq[b, p] if p >= 0 else -1) == seq[b, m]
                    if same:
                        acc += w[c, k] * x_of(x, init, p, b, c, width)
                pre[b, c, m] = acc
    return pre


def silu(v: np.ndarray) -> np.ndarray:
    return v / (1.0 + np.exp(-v))


@pytest.mark.parametrize("channel_last", [False, True])
@pytest.mark.parametrize("with_bias, with_seq, with_init", [
    (False, False, False), (True, False, False), (True, True, False), (False, False, True), (True, False, True),
])
def test_forward_and_final_states(kernels: ModuleType, channel_last: bool, with_bias: bool, with_seq: bool,
                                  with_init: bool) -> None:
    batch, dim, seqlen, width = 2, 5, 13, 4
    x = rng.standard_normal((batch, seqlen, dim) if channel_last else (batch, dim, seqlen)).astype(np.float32)
    x = x.transpose(0, 2, 1) if channel_last else x
    w = rng.standard_normal((dim, width)).astype(np.float32)
    bias = rng.standard_normal(dim).astype(np.float32) if with_bias else None
    seq = np.sort(rng.integers(-1, 3, (batch, seqlen)), axis=1).astype(np.int32) if with_seq else None
    init = rng.standard_normal((batch, dim, width - 1)).astype(np.float32) if with_init else None
    out = devices.full(x.shape, np.nan)
    xd = _channel_last(devices.array(np.ascontiguousarray(x.transpose(0, 2, 1)))) if channel_last \
        else devices.array(x)
    n = x.size
    kernels.fwd_general[(n + 255) // 256, 256](
        xd, devices.array(w), None if bias is None else devices.array(bias), None if seq is None else devices.array(seq),
        None if init is None else devices.array(init), out, True, channel_last, width)
    pre = reference_pre(x.astype(np.float64), w.astype(np.float64), bias, seq, init)
    ref = np.where(seq[:, None, :] < 0, 0.0, silu(pre)) if seq is not None else silu(pre)
    np.testing.assert_allclose(to_numpy(out), ref, rtol=2e-5, atol=2e-5)
    final = devices.full((batch, dim, width - 1), np.nan)
    m = batch * dim * (width - 1)
    kernels.final_states[(m + 255) // 256, 256](xd, None if init is None else devices.array(init), final, width)
    want = np.array([[[x_of(x, init, seqlen - (width - 1) + k, b, c, width) for k in range(width - 1)]
                      for c in range(dim)] for b in range(batch)])
    np.testing.assert_array_equal(to_numpy(final), want.astype(np.float32))


@pytest.mark.parametrize("with_bias, with_dfinal", [(False, False), (True, True)])
def test_backward(kernels: ModuleType, with_bias: bool, with_dfinal: bool) -> None:
    """dx, dweight, dbias and dinit against finite differences of the reference (float64): the
    gradient of sum(dout * silu(pre)) + sum(dfinal * final states)."""
    batch, dim, seqlen, width = 2, 3, 9, 3
    x = rng.standard_normal((batch, dim, seqlen))
    w = rng.standard_normal((dim, width))
    bias = rng.standard_normal(dim) if with_bias else None
    init = rng.standard_normal((batch, dim, width - 1))
    dout = rng.standard_normal((batch, dim, seqlen))
    dfinal = rng.standard_normal((batch, dim, width - 1)) if with_dfinal else None

    def loss(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, init: np.ndarray) -> float:
        total = float((dout * silu(reference_pre(x, w, bias, None, init))).sum())
        if dfinal is not None:
            fin = np.array([[[x_of(x, init, seqlen - (width - 1) + k, b, c, width) for k in range(width - 1)]
                             for c in range(dim)] for b in range(batch)])
            total += float((dfinal * fin).sum())
        return total

    def grad(arg: int) -> np.ndarray:
        args = [x, w, bias, init]
        base = args[arg]
        assert base is not None
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            plus, minus = base.copy(), base.copy()
            plus[idx] += 1e-5
            minus[idx] -= 1e-5
            g[idx] = (loss(*[plus if k == arg else a for k, a in enumerate(args)])  # type: ignore[arg-type]
                      - loss(*[minus if k == arg else a for k, a in enumerate(args)])) / 2e-5  # type: ignore[arg-type]
        return g

    f32 = np.float32
    xd, wd, dd = devices.array(x.astype(f32)), devices.array(w.astype(f32)), devices.array(dout.astype(f32))
    bd = None if bias is None else devices.array(bias.astype(f32))
    idd = devices.array(init.astype(f32))
    fd = None if dfinal is None else devices.array(dfinal.astype(f32))
    dx = devices.full(x.shape, np.nan)
    dw = devices.full(w.shape, np.nan)
    db = devices.full(dim, np.nan) if with_bias else None
    dinit = devices.full(init.shape, np.nan)
    kernels.bwd_general_dx[(x.size + 255) // 256, 256](xd, wd, bd, None, idd, dd, fd, dx, True, False, width)
    kernels.bwd_general_dweight[dim, 256](xd, wd, bd, None, idd, dd, dw, db, True, width)
    kernels.bwd_general_dinit[(init.size + 255) // 256, 256](xd, wd, bd, idd, dd, fd, dinit, True, width)
    np.testing.assert_allclose(to_numpy(dx), grad(0), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(to_numpy(dw), grad(1), rtol=1e-3, atol=1e-3)
    if db is not None:
        np.testing.assert_allclose(to_numpy(db), grad(2), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(to_numpy(dinit), grad(3), rtol=1e-3, atol=1e-3)


@pytest.fixture(scope="module")
def state_kernels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("cc1d_state")
    shutil.copytree(ROOT / "causal_conv1d" / "csrc", root / "cc1d_state" / "csrc")
    yield devices.compiled_package([ROOT / "causal_conv1d" / "state_kernels.py"], "cc1d_state", root)
    sys.modules.pop("cc1d_state.state_kernels", None)
    sys.modules.pop("cc1d_state", None)


@pytest.mark.parametrize("with_bias, with_cache, with_indices", [(False, False, False), (True, True, True),
                                                                 (True, False, True)])
def test_state_update(state_kernels: ModuleType, with_bias: bool, with_cache: bool, with_indices: bool) -> None:
    """The conv-state update of fp32 tensors (their 32-bit patterns, S = i32) with bias,
    cache_seqlens and conv_state_indices each None or given, against NumPy."""
    batch, dim, seqlen, width, state_len = 3, 4, 2, 4, 5
    x = rng.standard_normal((batch, dim, seqlen)).astype(np.float32)
    state = rng.standard_normal((batch + 1, dim, state_len)).astype(np.float32)
    w = rng.standard_normal((dim, width)).astype(np.float32)
    bias = rng.standard_normal(dim).astype(np.float32) if with_bias else None
    cache = np.array([7, 1, 3], np.int32) if with_cache else None
    indices = np.array([2, -1, 0], np.int32) if with_indices else None
    want_out = np.zeros(x.shape)
    want_state = state.astype(np.float64)
    for b in range(batch):
        sb = int(indices[b]) if indices is not None else b
        if sb < 0:
            continue
        hist = [want_state[sb, :, (int(cache[b]) - (width - 1) + k) % state_len] if cache is not None
                else want_state[sb, :, state_len - (width - 1) + k] for k in range(width - 1)]
        window = list(hist)
        for t in range(seqlen):
            window.append(x[b, :, t].astype(np.float64))
            acc = sum(w[:, k] * window[-width + k] for k in range(width)) + (bias if bias is not None else 0.0)
            want_out[b, :, t] = acc / (1.0 + np.exp(-acc))
        if cache is not None:
            for t in range(seqlen):
                want_state[sb, :, (int(cache[b]) + t) % state_len] = x[b, :, t]
        else:
            want_state[sb] = np.concatenate([want_state[sb, :, seqlen:], x[b].astype(np.float64)], axis=1)
    xs, st = devices.array(x.view(np.int32)), devices.array(state.view(np.int32))
    out = devices.zeros(x.shape, np.int32)
    state_kernels.update[1, 128](xs, st, devices.array(w), None if bias is None else devices.array(bias), out,
                                 None if cache is None else devices.array(cache),
                                 None if indices is None else devices.array(indices), True, False, width)
    np.testing.assert_allclose(to_numpy(out).view(np.float32), want_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_numpy(st).view(np.float32), want_state, rtol=0, atol=0)
