"""A kernel's index32 instance on a GPU (oxide_build/lower/index32.py): examples/lltm's forward
kernel launched with small tensors runs its index32 instance, with a tensor spanning more than
2**31 - 1 elements (a strided view of an 8 GiB buffer) the kernel as written; so does a kernel
that reads tensors through a device function and uses a tensor's shape and strides as values
(tests/packages/index32k, whose index32 instance takes them as 32-bit parameters). All against
PyTorch in float64, outputs poisoned before the launch, every element checked."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("tensors of more than 2**31 elements in GPU memory")]
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parent / "packages" / "index32k"))


def _reference(gi: Any, go: Any, gc: Any, old: Any) -> list[Any]:
    gi, go, gc, old = (t.double() for t in (gi, go, gc, old))
    ig, og, cc = torch.sigmoid(gi), torch.sigmoid(go), torch.nn.functional.elu(gc)
    nc = old + cc * ig
    return [torch.tanh(nc) * og, nc, ig, og, cc]


def _f32_variant(kernel: Any) -> Any:
    d = kernel._dispatch or kernel._build_dispatch()
    (variant,) = [v for v in d.variants if v.spec.specialization == {"T": "f32"}]
    assert variant.index32 is not None
    return variant


def _run(gates: tuple[Any, Any, Any], old: Any) -> None:
    from examples.lltm import kernels

    batch, state = old.shape
    outs = [torch.full((batch, state), float("nan"), device="cuda") for _ in range(5)]
    grid = (-(-state // 128), -(-batch // 2))
    kernels.lltm_forward[grid, (128, 2)](*gates, old, *outs)
    torch.cuda.synchronize()
    for got, want in zip(outs, _reference(*gates, old)):
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)


def test_small_tensors_run_the_index32_instance() -> None:
    from examples.lltm import kernels

    g = torch.Generator(device="cuda").manual_seed(17)
    batch, state = 67, 300
    gates = torch.randn(batch, 3 * state, device="cuda", generator=g)
    old = torch.randn(batch, state, device="cuda", generator=g)
    variant = _f32_variant(kernels.lltm_forward)
    launched_wide = len(variant.functions)
    _run(tuple(gates.chunk(3, dim=1)), old)  # type: ignore[arg-type]
    assert variant.index32.functions and len(variant.functions) == launched_wide


def test_a_tensor_spanning_more_than_2_31_elements_runs_the_kernel_as_written() -> None:
    from examples.lltm import kernels

    if torch.cuda.get_device_properties(0).total_memory < 24 << 30:
        pytest.skip("needs 9 GiB of GPU memory")
    g = torch.Generator(device="cuda").manual_seed(18)
    batch, state = 3, 257
    big = torch.empty(2**31 + 2 * state + 64, device="cuda")  # row r of gate_i at element r * 2**30
    gate_i = big.as_strided((batch, state), (2**30, 1))
    gate_i.copy_(torch.randn(batch, state, device="cuda", generator=g))  # spans 2**31 + 257 elements
    assert 1 + (batch - 1) * 2**30 + (state - 1) > 2**31 - 1
    gate_o, gate_c, old = (torch.randn(batch, state, device="cuda", generator=g) for _ in range(3))
    variant = _f32_variant(kernels.lltm_forward)
    launched_narrow = len(variant.index32.functions)
    _run((gate_i, gate_o, gate_c), old)
    assert variant.functions and len(variant.index32.functions) == launched_narrow
    del big
    torch.cuda.empty_cache()


def _shifted(x: Any) -> None:
    import idx32k

    rows, cols = x.shape
    out = torch.full((rows, cols), float("nan"), device="cuda")
    idx32k.shifted[(-(-cols // 32), -(-rows // 8)), (32, 8)](x, out)
    torch.cuda.synchronize()
    dims = (x.stride(0) - x.stride(1) + cols) % 1021
    want = x.double() + x[:, :1].double() + dims / 1024.0
    torch.testing.assert_close(out.double(), want, rtol=1e-6, atol=1e-6)


def test_shape_strides_and_device_functions_in_both_instances() -> None:
    import idx32k

    if torch.cuda.get_device_properties(0).total_memory < 24 << 30:
        pytest.skip("needs 9 GiB of GPU memory")
    g = torch.Generator(device="cuda").manual_seed(19)
    variant = _f32_variant_of(idx32k.shifted)
    _shifted(torch.randn(77, 602, device="cuda", generator=g)[:, 1::2][:, :150])  # strides (602, 2): as written
    assert variant.functions and not variant.index32.functions
    _shifted(torch.randn(77, 350, device="cuda", generator=g)[3:, 5:301])  # strides (350, 1): index32
    assert variant.index32.functions
    _shifted(torch.randn(301, 77, device="cuda", generator=g).t())  # strides (1, 77): not contiguous along rows
    big = torch.empty(2**31 + 4096, device="cuda")
    x = big.as_strided((3, 1000), (2**30, 1))  # spans 2**31 + 1000 elements
    x.copy_(torch.randn(3, 1000, device="cuda", generator=g))
    _shifted(x)
    assert variant.functions
    del big, x
    torch.cuda.empty_cache()


def _f32_variant_of(kernel: Any) -> Any:
    d = kernel._dispatch or kernel._build_dispatch()
    (variant,) = d.variants
    assert variant.index32 is not None
    return variant


def test_entry_points_that_read_only_some_shapes_compute_every_element() -> None:
    """idx32k.mixed: both its entry points drop a's shape, b's shape[0], the unread scalar and
    bias's length (lower/entry_params.py); the launch packs every slot and passes the kept
    ones. Through the Python path, then the C launcher (index32), and the kernel as written
    (the Python path told the tensors do not fit)."""
    import idx32k

    from oxide.runtime import arguments

    g = torch.Generator(device="cuda").manual_seed(23)
    rows, cols = 37, 301
    a = torch.randn(rows, 3 * cols, device="cuda", generator=g)[:, cols:2 * cols]  # strides (3 * cols, 1)
    b = torch.randn(rows, 2 * cols, device="cuda", generator=g)[:, :cols]  # strides (2 * cols, 1)
    bias = torch.randn(cols, device="cuda", generator=g)
    s = 0.8125
    want = a.double() * s + b.double() + bias.double() + cols % 7
    variant = _f32_variant_of(idx32k.mixed)
    assert variant.spec.param_slots == (0, 3, 4, 6, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18)
    assert variant.index32.spec.param_slots == (0, 3, 6, 8, 9, 11, 13, 14, 15, 16, 17)  # no last-axis stride
    grid, block = (-(-cols // 32), -(-rows // 8)), (32, 8)

    def check(launch: Any) -> None:
        out = torch.full((rows, cols), float("nan"), device="cuda")
        launch(out)
        torch.cuda.synchronize()
        torch.testing.assert_close(out.double(), want, rtol=1e-6, atol=1e-6)

    for _ in range(3):
        check(lambda out: idx32k.mixed[grid, block](a, 123.0, b, bias, s, out))
    assert variant.index32.functions and not variant.functions
    fits = arguments.fits_index32
    arguments.fits_index32 = lambda views: False
    try:
        check(lambda out: idx32k.mixed._launch((a, -7.0, b, bias, s, out), (grid[0], grid[1], 1), (32, 8, 1),
                                               torch.cuda.current_stream().cuda_stream, 0))
    finally:
        arguments.fits_index32 = fits
    assert variant.functions
