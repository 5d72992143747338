"""Launches without a stream on a GPU (#17): inside ``with torch.cuda.stream(s):`` they run on
``s`` after the work queued there, ``torch.cuda.graph`` captures them, CuPy's current stream
is followed likewise; on both launch paths (the first launch is Python's, the next C's)."""
from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

from test_runtime_gpu import _inputs, _reference, _write_module

import devices

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def kmod(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return _write_module(tmp_path_factory.mktemp("streams"))


@devices.gpu_only("a torch CUDA stream kept busy by torch.cuda._sleep: CPU launches are synchronous")
def test_launch_inside_torch_stream_follows_a_long_producer(kmod: types.ModuleType) -> None:
    """The producer (a 50 ms sleep, then a copy of new inputs) is queued on a side stream; the
    launch without a stream must run after it, on that stream (a launch on the legacy default
    stream would not wait: PyTorch's streams are non-blocking)."""
    torch = pytest.importorskip("torch")
    n = 1_000_003
    grid = kmod.saxpy.grid_for(n)
    side = torch.cuda.Stream()
    for attempt, seed in enumerate((3, 5, 7)):  # Python path, then C (twice)
        a, x, y = _inputs(n, np.float32, seed)
        old = torch.full((n,), 7.0, device="cuda")
        tx = old.clone()
        ty = torch.as_tensor(y, device="cuda")
        fresh = torch.as_tensor(x, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(100_000_000)  # ~50 ms of GPU time on the side stream
            tx.copy_(fresh)
            kmod.saxpy[grid, 256](a, tx, ty, out)
            after = torch.cuda.current_stream().cuda_stream
        assert after == side.cuda_stream
        side.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), _reference(a, x, y), rtol=1e-6, atol=0,
                                   err_msg=f"launch {attempt}")


@devices.gpu_only("CUDA graph capture (torch.cuda.graph)")
def test_graph_capture_without_a_stream_argument(kmod: types.ModuleType, tmp_path: Path) -> None:
    """``torch.cuda.graph`` makes its capture stream current: launches with no stream are captured
    and replay with the data the inputs hold at replay time; the kernel's first launch inside
    the capture too."""
    torch = pytest.importorskip("torch")
    n = 50_001
    a, x, y = _inputs(n, np.float32, 11)
    tx, ty = torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda")
    mid = torch.full((n,), float("nan"), device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    grid = kmod.saxpy.grid_for(n)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # warm-up outside capture (the module loads, the C plan fills)
        kmod.saxpy[grid, 256](a, tx, ty, mid)
        kmod.saxpy[grid, 256](a, tx, ty, mid)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kmod.saxpy[grid, 256](a, tx, ty, mid)
        kmod.saxpy.launch(2.0, mid, ty, out, grid=grid, block=256)
    for seed in (13, 17):
        _, x2, y2 = _inputs(n, np.float32, seed)
        tx.copy_(torch.as_tensor(x2)), ty.copy_(torch.as_tensor(y2))
        mid.fill_(float("nan")), out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        first = _reference(a, x2, y2).astype(np.float32)
        np.testing.assert_allclose(mid.cpu().numpy(), first, rtol=1e-6, atol=0)
        np.testing.assert_allclose(out.cpu().numpy(), _reference(2.0, first, y2), rtol=1e-6, atol=1e-6)
    fresh = _write_module(tmp_path)  # first launch inside the capture
    graph2 = torch.cuda.CUDAGraph()
    out.fill_(float("nan"))
    with torch.cuda.graph(graph2):
        fresh.saxpy32[grid, 256](a, tx, ty, out)
    graph2.replay()
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), _reference(a, tx.cpu().numpy(), ty.cpu().numpy()), rtol=1e-6, atol=0)


@devices.gpu_only("uses CuPy (GPU arrays and CUDA streams)")
def test_launch_inside_cupy_stream_follows_its_producer(kmod: types.ModuleType) -> None:
    cp = pytest.importorskip("cupy")
    n = 4_000_037
    grid = kmod.saxpy.grid_for(n)
    for attempt, seed in enumerate((19, 23, 29)):
        a, x, y = _inputs(n, np.float32, seed)
        cx = cp.full(n, 7.0, dtype=cp.float32)
        cy = cp.asarray(y)
        src = cp.asarray(x)
        out = cp.full(n, cp.nan, dtype=cp.float32)
        cp.cuda.Device().synchronize()
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            busy = cp.ones(n, dtype=cp.float32)
            for _ in range(300):  # a long producer on the stream, then the real input
                busy = busy * 1.0000001
            cx[...] = src
            kmod.saxpy[grid, 256](a, cx, cy, out)
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(out), _reference(a, x, y), rtol=1e-6, atol=0, err_msg=f"launch {attempt}")
