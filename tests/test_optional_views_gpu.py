"""Optional views on the device the tests run on (the GPU, or the CPU device: tests/conftest.py):
the same kernels launched with an array and with None, through the Python path and (on the GPU)
the C launcher, the assert that holds only where the view is passed, and an oxide.torch op whose
Optional[torch.Tensor] input goes to the kernel as it is. Kernels in packages/optionalkernels."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Optional

import numpy as np
import pytest

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent / "packages" / "optionalkernels" / "okern.py"
rng = np.random.default_rng(7)


@pytest.fixture(scope="module")
def okern(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    yield devices.compiled_package([KERNELS], "optional_gpu", tmp_path_factory.mktemp("optional"))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_bias_that_may_be_none(okern: ModuleType, dtype: type) -> None:
    n = devices.sized(100_003, 1_001)
    x = rng.standard_normal(n).astype(dtype)
    bias = rng.standard_normal(n).astype(np.float32)
    grid = (n + 255) // 256
    for _ in range(3):  # the first launch teaches the C launcher (on the GPU); the others take it
        out = devices.full(n, np.nan, dtype)
        okern.add_bias[grid, 256](devices.array(x), devices.array(bias), out)
        ref = (x.astype(np.float32) + bias).astype(dtype)
        np.testing.assert_allclose(to_numpy(out).astype(np.float32), ref.astype(np.float32), rtol=1e-3 if dtype == np.float16 else 1e-6)
        out = devices.full(n, np.nan, dtype)
        okern.add_bias[grid, 256](devices.array(x), None, out)
        np.testing.assert_array_equal(to_numpy(out), x)


def test_the_assert_holds_only_where_the_view_is_passed(okern: ModuleType) -> None:
    import oxide

    n = 64
    x = devices.array(np.ones(n, np.float32))
    with pytest.raises(oxide.KernelError, match=r"okern.py:22:.*len\(bias\) == len\(x\)"):
        okern.add_bias[1, 64](x, devices.array(np.ones(n - 1, np.float32)), devices.zeros(n))
    with pytest.raises(oxide.KernelError, match=r"len\(out\) == len\(x\)"):  # the other operand holds always
        okern.add_bias[1, 64](x, None, devices.zeros(n - 1))
    okern.add_bias[1, 64](x, None, devices.zeros(n))
    devices.synchronize()


def test_an_optional_tensor_and_an_optional_output(okern: ModuleType) -> None:
    rows, cols = 37, devices.sized(1000, 91)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    scale = rng.standard_normal(rows).astype(np.float32)
    grid, block = ((cols + 31) // 32, (rows + 7) // 8), (32, 8)
    for s, t in [(scale, True), (None, True), (scale, False), (None, False)]:
        out = devices.full((rows, cols), np.nan)
        total = devices.zeros(1) if t else None
        okern.scale_rows[grid, block](devices.array(x), None if s is None else devices.array(s), out, total)
        ref = x * (scale[:, None] if s is not None else 1.0)
        np.testing.assert_allclose(to_numpy(out), ref, rtol=1e-6)
        if total is not None:
            np.testing.assert_allclose(to_numpy(total)[0], ref.astype(np.float64).sum(), rtol=1e-3, atol=1e-2)
    # a strided (transposed) scale is read through its stride
    wide = rng.standard_normal((rows, 2)).astype(np.float32)
    out = devices.full((rows, cols), np.nan)
    if devices.on_cpu() or devices.torch_or_none() is not None:  # a NumPy or torch column: stride 2
        strided = devices.array(wide)[:, 1]
        okern.scale_rows[grid, block](devices.array(x), strided, out, None)
        np.testing.assert_allclose(to_numpy(out), x * wide[:, 1:2], rtol=1e-6)


torch = devices.torch_or_none()
_okern: ModuleType | None = None  # the kernels the op's body launches (its hints are read at module level)


def _add_bias_body(x: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor) -> None:
    assert _okern is not None
    _okern.add_bias[(x.numel() + 255) // 256, 256](x, bias, out)


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
def test_an_op_passes_its_optional_input_to_the_kernel(okern: ModuleType) -> None:
    import oxide.torch as oxt

    assert torch is not None
    global _okern
    _okern = okern
    add_bias = oxt.op("oxtest_optional::add_bias", outputs={"out": oxt.Out(like="x")})(_add_bias_body)

    device = "cpu" if devices.on_cpu() else "cuda"
    x = torch.randn(1000, device=device)
    b = torch.randn(1000, device=device)
    torch.testing.assert_close(add_bias(x, b), x + b)
    torch.testing.assert_close(add_bias(x, None), x)
    assert "Tensor? bias" in str(add_bias.schema)


@pytest.mark.skipif(devices.on_cpu(), reason="the C launcher launches on a GPU only (the CPU device takes the Python path)")
def test_the_c_launcher_takes_launches_with_none(okern: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide.runtime import kernel, launcher

    if not launcher.ENABLED:
        pytest.skip("the C launcher is not built")
    n = 4096
    x, b = devices.array(np.ones(n, np.float32)), devices.array(np.full(n, 2.0, np.float32))
    out = devices.zeros(n)
    for bias in (b, None):  # the Python path teaches the plan both
        okern.add_bias[n // 256, 256](x, bias, out)
    devices.synchronize()

    def python_path(*args: object, **kwargs: object) -> None:
        raise AssertionError("the launch took the Python path")

    monkeypatch.setattr(kernel.LaunchConfig, "_launch_slow", python_path)
    okern.add_bias[n // 256, 256](x, None, out)
    np.testing.assert_array_equal(to_numpy(out), np.ones(n, np.float32))
    okern.add_bias[n // 256, 256](x, b, out)
    np.testing.assert_array_equal(to_numpy(out), np.full(n, 3.0, np.float32))
