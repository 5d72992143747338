"""Views of vector elements as kernel parameters on the GPU (tests/packages/vectorviews/vviewk.py):
arrays of the lanes from torch, CuPy and oxide.DeviceArray, a strided and a transposed one among
them, on fresh random inputs, outputs poisoned before each launch, every element compared with
NumPy's / torch's result (bit for bit: each lane is one rounding, or none). Written with
tests/devices.py: without a GPU the tests that need no CUDA array library run on the CPU device."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent / "packages" / "vectorviews" / "vviewk.py"
BLOCK = 128
N = devices.sized(9 * BLOCK + 45, 2 * BLOCK + 45)  # a partial last block
rng = np.random.default_rng()


@pytest.fixture(scope="module")
def vviewk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    yield devices.compiled_package([KERNELS], "vviewk_pkg", tmp_path_factory.mktemp("vviewk"))


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def signed(n: int, *shape: int) -> np.ndarray:
    """Random non-zero float32 values in ±[0.5, 2)."""
    return (rng.uniform(0.5, 2.0, (n, *shape)) * rng.choice([-1.0, 1.0], (n, *shape))).astype(np.float32)


def test_a_slice_of_f32x4(vviewk: ModuleType) -> None:
    x, a = signed(N, 4), np.float32(rng.uniform(0.5, 2.0))
    out = devices.full((N, 4), -12345.5)
    vviewk.reverse_scale[cdiv(N, BLOCK), BLOCK](devices.array(x), a, out)
    devices.synchronize()
    got, expected = devices.to_numpy(out), x[:, ::-1] * a
    assert np.array_equal(got, expected), np.argwhere(got != expected)[:5]


def test_a_slice_of_f32x4_from_each_array_kind(vviewk: ModuleType) -> None:
    """On the GPU: torch and CuPy CUDA arrays and DeviceArrays; on the CPU device the kinds of host
    memory it takes: NumPy arrays, torch CPU tensors (where torch is installed) and DeviceArrays."""
    from oxide.runtime import DeviceArray, synchronize

    torch = devices.torch_or_none()
    if devices.on_cpu():
        kinds = ["numpy", *(["torch"] if torch is not None else []), "device_array"]
    else:
        import cupy
        import torch

        kinds = ["torch", "cupy", "device_array"]
    for kind in kinds:
        x, a = signed(N, 4), np.float32(rng.uniform(0.5, 2.0))
        poison = np.full((N, 4), -12345.5, np.float32)
        if kind == "numpy":
            dx, dout = x.copy(), poison.copy()
        elif kind == "torch":
            dx, dout = torch.from_numpy(x).to(devices.torch_device()), torch.from_numpy(poison).to(devices.torch_device())
        elif kind == "cupy":
            dx, dout = cupy.asarray(x), cupy.asarray(poison)
        else:
            dx, dout = DeviceArray.from_numpy(x), DeviceArray.from_numpy(poison)
        vviewk.reverse_scale[cdiv(N, BLOCK), BLOCK](dx, a, dout)
        synchronize()
        got = devices.to_numpy(dout)
        expected = x[:, ::-1] * a
        assert np.array_equal(got, expected), (kind, np.argwhere(got != expected)[:5])


def test_a_strided_tensor_of_bf16x2_in_and_a_mut_tensor_out(vviewk: ModuleType) -> None:
    torch = devices.needs_torch("bfloat16 tensors")

    rows, cols = 37, 300
    full = devices.bf16(signed(rows, 2 * cols, 2))
    x = full[:, ::2]  # every other pair: strides (4 * cols, 4, 1) lanes, 2 * cols and 2 pairs
    out = devices.bf16(np.full((rows, cols, 2), -777.0))
    vviewk.swap_pairs[(cdiv(cols, 32), cdiv(rows, 8)), (32, 8)](x, out)
    devices.synchronize()
    host = x.cpu()
    expected = torch.stack([host[..., 1], (host[..., 0].float() + 1.0).to(torch.bfloat16)], dim=-1)
    got = out.cpu()
    assert torch.equal(got.view(torch.int16), expected.view(torch.int16)), (got - expected).abs().max()


def test_a_slice_of_f16x8_widened_into_a_transposed_disjoint_tensor_of_f32x4(vviewk: ModuleType) -> None:
    x = signed(N, 8).astype(np.float16)
    full = devices.full((2, N, 4), -12345.5)
    if isinstance(full, np.ndarray):
        out = full.transpose(1, 0, 2)  # (N, 2) vectors, strides (1, N) vectors
    elif hasattr(full, "permute"):
        out = full.permute(1, 0, 2)
    else:
        pytest.skip("a transposed device array needs torch")
    vviewk.widen_halves[cdiv(N, 64), (64, 2)](devices.array(x), out)
    devices.synchronize()
    got = devices.to_numpy(out)
    expected = x.astype(np.float32).reshape(N, 2, 4)
    assert np.array_equal(got, expected), np.argwhere(got != expected)[:5]


def test_a_mut_slice_of_i32x2_read_and_written(vviewk: ModuleType) -> None:
    x = rng.integers(-1000, 1000, (N, 2), dtype=np.int32)
    before = rng.integers(-1000, 1000, (N, 2), dtype=np.int32)
    n = int(rng.integers(2, 50))
    out = devices.array(before)
    vviewk.accumulate_pairs[cdiv(N, BLOCK), BLOCK](devices.array(x), out, n)
    devices.synchronize()
    expected = before + np.stack([x[:, 0] * n, x[:, 1] - n], axis=-1)
    assert np.array_equal(devices.to_numpy(out), expected)


def test_a_misaligned_or_flat_array_is_refused_before_the_launch(vviewk: Any) -> None:
    flat = devices.zeros(4 * N + 4)
    if not hasattr(flat, "reshape"):
        pytest.skip("slicing a device array needs torch")
    out = devices.full((N, 4), -1.0)
    with pytest.raises(TypeError, match=r"parameter 'x' of reverse_scale holds f32x4 elements: .* not a multiple of 16 "
                                        r"bytes as each f32x4 access needs"):
        vviewk.reverse_scale[cdiv(N, BLOCK), BLOCK](flat[1:4 * N + 1].reshape(N, 4), 1.0, out)
    with pytest.raises(TypeError, match=r"got shape \(\d+,\) \(a flat array of f32: \.view\(-1, 4\) in torch"):
        vviewk.reverse_scale[cdiv(N, BLOCK), BLOCK](flat, 1.0, out)
    vviewk.reverse_scale[cdiv(N, BLOCK), BLOCK](flat[4:].reshape(-1, 4), 1.0, out)
    devices.synchronize()
    assert np.array_equal(devices.to_numpy(out), np.zeros((N, 4), np.float32))
