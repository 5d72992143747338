"""Views of vector elements as kernel parameters on the GPU (tests/packages/vectorviews/vviewk.py):
arrays of the lanes from torch, CuPy and oxide.DeviceArray, a strided and a transposed one among
them, on fresh random inputs, outputs poisoned before each launch, every element compared with
NumPy's / torch's result (bit for bit: each lane is one rounding, or none)."""
from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("arrays of vector lanes from torch and CuPy CUDA memory")]
KERNELS = Path(__file__).resolve().parent / "packages" / "vectorviews" / "vviewk.py"
BLOCK = 128
N = 9 * BLOCK + 45  # a partial last block
rng = np.random.default_rng()


@pytest.fixture(scope="module")
def vviewk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    root = tmp_path_factory.mktemp("vviewk")
    arch = device.context_device(device.current_context()).arch
    pkg = root / "vviewk_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(KERNELS, pkg / "vviewk.py")
    compiled = compile_module(pkg / "vviewk.py", "vviewk_pkg.vviewk", CompileOptions(archs=(arch,)), root=root)
    write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("vviewk_pkg.vviewk")
    finally:
        sys.path.remove(str(root))


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def signed(n: int, *shape: int) -> np.ndarray:
    """Random non-zero float32 values in ±[0.5, 2)."""
    return (rng.uniform(0.5, 2.0, (n, *shape)) * rng.choice([-1.0, 1.0], (n, *shape))).astype(np.float32)


def test_a_slice_of_f32x4_from_each_array_kind(vviewk: ModuleType) -> None:
    import cupy
    import torch

    from oxide.runtime import DeviceArray, synchronize

    for kind in ("torch", "cupy", "device_array"):
        x, a = signed(N, 4), np.float32(rng.uniform(0.5, 2.0))
        poison = np.full((N, 4), -12345.5, np.float32)
        if kind == "torch":
            dx, dout = torch.from_numpy(x).cuda(), torch.from_numpy(poison).cuda()
        elif kind == "cupy":
            dx, dout = cupy.asarray(x), cupy.asarray(poison)
        else:
            dx, dout = DeviceArray.from_numpy(x), DeviceArray.from_numpy(poison)
        vviewk.reverse_scale[cdiv(N, BLOCK), BLOCK](dx, a, dout)
        synchronize()
        got = dout.cpu().numpy() if kind == "torch" else cupy.asnumpy(dout) if kind == "cupy" else dout.to_numpy()
        expected = x[:, ::-1] * a
        assert np.array_equal(got, expected), (kind, np.argwhere(got != expected)[:5])


def test_a_strided_tensor_of_bf16x2_in_and_a_mut_tensor_out(vviewk: ModuleType) -> None:
    import torch

    from oxide.runtime import synchronize

    rows, cols = 37, 300
    full = torch.from_numpy(signed(rows, 2 * cols, 2)).to(torch.bfloat16).cuda()
    x = full[:, ::2]  # every other pair: strides (4 * cols, 4, 1) lanes, 2 * cols and 2 pairs
    out = torch.full((rows, cols, 2), -777.0, dtype=torch.bfloat16, device="cuda")
    vviewk.swap_pairs[(cdiv(cols, 32), cdiv(rows, 8)), (32, 8)](x, out)
    synchronize()
    host = x.cpu()
    expected = torch.stack([host[..., 1], (host[..., 0].float() + 1.0).to(torch.bfloat16)], dim=-1)
    got = out.cpu()
    assert torch.equal(got.view(torch.int16), expected.view(torch.int16)), (got - expected).abs().max()


def test_a_slice_of_f16x8_widened_into_a_transposed_disjoint_tensor_of_f32x4(vviewk: ModuleType) -> None:
    import cupy

    from oxide.runtime import synchronize

    x = signed(N, 8).astype(np.float16)
    full = cupy.full((2, N, 4), -12345.5, dtype=cupy.float32)
    out = full.transpose(1, 0, 2)  # (N, 2) vectors, strides (1, N) vectors
    vviewk.widen_halves[cdiv(N, 64), (64, 2)](cupy.asarray(x), out)
    synchronize()
    got = cupy.asnumpy(out)
    expected = x.astype(np.float32).reshape(N, 2, 4)
    assert np.array_equal(got, expected), np.argwhere(got != expected)[:5]


def test_a_mut_slice_of_i32x2_read_and_written(vviewk: ModuleType) -> None:
    from oxide.runtime import DeviceArray, synchronize

    x = rng.integers(-1000, 1000, (N, 2), dtype=np.int32)
    before = rng.integers(-1000, 1000, (N, 2), dtype=np.int32)
    n = int(rng.integers(2, 50))
    out = DeviceArray.from_numpy(before)
    vviewk.accumulate_pairs[cdiv(N, BLOCK), BLOCK](DeviceArray.from_numpy(x), out, n)
    synchronize()
    expected = before + np.stack([x[:, 0] * n, x[:, 1] - n], axis=-1)
    assert np.array_equal(out.to_numpy(), expected)


def test_a_misaligned_or_flat_array_is_refused_before_the_launch(vviewk: Any) -> None:
    import torch

    flat = torch.zeros(4 * N + 4, device="cuda")
    out = torch.full((N, 4), -1.0, device="cuda")
    with pytest.raises(TypeError, match=r"parameter 'x' of reverse_scale holds f32x4 elements: .* not a multiple of 16 "
                                        r"bytes as each f32x4 access needs"):
        vviewk.reverse_scale[cdiv(N, BLOCK), BLOCK](flat[1:4 * N + 1].view(N, 4), 1.0, out)
    with pytest.raises(TypeError, match=r"got shape \(4\d+,\) \(a flat array of f32: \.view\(-1, 4\) in torch"):
        vviewk.reverse_scale[cdiv(N, BLOCK), BLOCK](flat, 1.0, out)
    vviewk.reverse_scale[cdiv(N, BLOCK), BLOCK](flat[4:].view(-1, 4), 1.0, out)
    torch.cuda.synchronize()
    assert torch.equal(out, torch.zeros_like(out))
