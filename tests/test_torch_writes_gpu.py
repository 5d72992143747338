"""A kernel's writes to torch tensors and autograd, on either device (CUDA tensors on the GPU, CPU
tensors on the CPU device): a tensor saved for backward and then written by a launch makes
backward fail loudly (the launch bumps its version counter); a tensor that requires grad is not
written while grad mode is on, and is under torch.no_grad(); inference tensors have no counter.
The kernel is examples/saxpy.py's (the GPU runtime's own PTX variant is in
test_runtime_soundness_gpu.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import devices

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
torch = pytest.importorskip("torch", reason="needs torch (oxide.runtime's torch tensors): not installed")


def test_autograd_learns_of_writes() -> None:
    from examples.saxpy import saxpy

    device = devices.torch_device()
    n = 4096
    rng = np.random.default_rng(13)
    a = 1.75
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    want = np.float32(a) * x + y
    tx, ty = torch.as_tensor(x, device=device), torch.as_tensor(y, device=device)
    grid = saxpy.grid_for(n)
    for _ in range(3):  # the Python path, then (on the GPU) the C launcher
        w = torch.randn(n, device=device, requires_grad=True)
        saved = torch.rand(n, device=device) + 1.0
        loss = (w * saved).sum()  # saves `saved` for the gradient of w
        before = saved._version
        saxpy[grid, 256](a, tx, ty, saved)
        assert saved._version > before
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
        leaf = torch.zeros(n, device=device, requires_grad=True)
        with pytest.raises(TypeError, match=r"^parameter 'out' of saxpy is written by the kernel; got a tensor that requires grad"):
            saxpy[grid, 256](a, tx, ty, leaf)
        with torch.no_grad():  # as an optimizer's update: allowed
            saxpy[grid, 256](a, tx, ty, leaf)
        devices.synchronize()
        np.testing.assert_allclose(devices.to_numpy(leaf), want, rtol=1e-6, atol=1e-6)
    with torch.inference_mode():  # no version counter: nothing to bump
        inf = torch.empty(n, device=device)
        saxpy[grid, 256](a, tx, ty, inf)
    devices.synchronize()
    np.testing.assert_allclose(devices.to_numpy(inf), want, rtol=1e-6, atol=1e-6)
