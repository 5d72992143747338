"""Tensor cores on the GPU (issue #18): single-warp mma.sync / ldmatrix / cp.async kernels
against float64 references (a wrong fragment layout shows as wrong elements), ox.asm, an
sm_90a-only module chosen at load, and the sm_80 GEMM of examples/gemm against torch in
float64 at odd sizes. Inputs are fresh random non-zero values, outputs are poisoned with NaN
before every launch and every element is checked. Kernels: packages/tensorcores/."""
from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("tensor cores (mma)")]
torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[1]
KERNELS = Path(__file__).resolve().parent / "packages" / "tensorcores"
sys.path.insert(0, str(KERNELS))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def randn(*shape: int, dtype: Any = torch.float32) -> Any:
    x = torch.randn(*shape, device="cuda", dtype=torch.float32)
    x[x.abs() < 1e-3] = 0.5  # never zero
    return x.to(dtype)


def poison(*shape: int, dtype: Any = torch.float32) -> Any:
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


@pytest.mark.parametrize("elem", ["bf16", "f16"])
def test_mma_tile_m16n8k16(elem: str) -> None:
    import tck

    a, b, c = randn(16, 16, dtype=DTYPES[elem]), randn(16, 8, dtype=DTYPES[elem]), randn(16, 8)
    out = poison(16, 8)
    tck.mma_tile[1, 32](a.reshape(-1), b.reshape(-1), c.reshape(-1), out.reshape(-1))
    ref = a.double() @ b.double() + c.double()
    bound = 1e-5 * ((a.double().abs() @ b.double().abs()) + c.double().abs()) + 1e-6
    err = (out.double() - ref).abs()
    assert bool((err <= bound).all()), f"max error {err.max().item()} at {divmod(int(err.argmax()), 8)}"


def tf32(x: Any) -> Any:
    """The value the tensor core reads: the low 13 mantissa bits of an f32 dropped."""
    return (x.view(torch.int32) & ~0x1FFF).view(torch.float32)


def test_mma_tf32_m16n8k8() -> None:
    import tck

    a, b = randn(16, 8), randn(8, 8)
    out = poison(16, 8)
    tck.mma_tf32[1, 32](a.reshape(-1), b.reshape(-1), out.reshape(-1))
    ref = tf32(a).double() @ tf32(b).double()
    # rounding (rather than truncating) to tf32 would be within one tf32 ulp of each input
    bound = 2.0 ** -10 * (a.double().abs() @ b.double().abs()) + 1e-6
    err = (out.double() - ref).abs()
    assert bool((err <= bound).all()), f"max error {err.max().item()}"


def test_ldmatrix_x1_plain_and_trans() -> None:
    import tck

    x = torch.arange(1, 65, device="cuda", dtype=torch.float32).to(torch.float16)  # exact in f16
    out = poison(128, dtype=torch.float16)
    tck.ldmatrix_x1[1, 32](x, out)
    m = x.reshape(8, 8).cpu()
    got = out.cpu()
    for lane in range(32):
        for j in range(2):
            row, col = lane // 4, 2 * (lane % 4) + j
            assert got[lane * 2 + j] == m[row, col], (lane, j)
            assert got[64 + lane * 2 + j] == m[col, row], (lane, j, "trans")


def swizzle(offset: int, bits: int, base: int, shift: int) -> int:
    return offset ^ ((offset >> shift) & (((1 << bits) - 1) << base))


def test_asm_and_swizzle() -> None:
    import tck

    n = 1000
    rng = np.random.default_rng()
    x = rng.integers(1, 2**63, n, dtype=np.int64).astype(np.uint64) * np.uint64(3)
    from oxide.runtime import DeviceArray

    lo, hi = (DeviceArray.from_numpy(np.full(n, 12345, dtype=np.uint32)) for _ in range(2))
    lane, swz = (DeviceArray.from_numpy(np.full(n, -7, dtype=np.int32)) for _ in range(2))
    tck.asm_ops[(n + 127) // 128, 128](DeviceArray.from_numpy(x), lo, hi, lane, swz)
    np.testing.assert_array_equal(lo.to_numpy(), (x & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    np.testing.assert_array_equal(hi.to_numpy(), (x >> np.uint64(32)).astype(np.uint32))
    np.testing.assert_array_equal(lane.to_numpy(), np.arange(n) % 32)
    np.testing.assert_array_equal(swz.to_numpy(), [swizzle(i, 3, 3, 4) for i in range(n)])


def test_sm_90a_cubin_is_chosen_and_runs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A kernel with wgmma.fence (sm_90a only) built for sm_90a: the H200 loads that cubin."""
    from oxide.runtime import device
    from oxide.runtime.loader import select_code
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    if device.context_device(device.current_context()).arch != "sm_90":
        pytest.skip("needs an sm_90 GPU (H100/H200)")
    root = tmp_path_factory.mktemp("tc90a")
    pkg = root / "tc90a_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(KERNELS / "tck90a.py", pkg / "tck90a.py")
    compiled = compile_module(pkg / "tck90a.py", "tc90a_pkg.tck90a", CompileOptions(archs=("sm_90a",)), root=root)
    write_module_artifacts(compiled, pkg)
    assert select_code({"sm_90a": "a"}, {}, (9, 0)).arch == "sm_90a"
    sys.path.insert(0, str(root))
    try:
        mod = importlib.import_module("tc90a_pkg.tck90a")
        x = randn(1000)
        out = poison(1000)
        mod.arch_specific[8, 128](x, out)
        torch.testing.assert_close(out, 2.0 * x, rtol=0, atol=0)
    finally:
        sys.path.remove(str(root))


GEMM_SIZES = [(128, 128, 32), (1000, 776, 392), (300, 136, 8), (513, 1032, 1064), (77, 8, 40)]


@pytest.mark.parametrize("kernel", ["mma_gemm", "mma_gemm_128x128"])
@pytest.mark.parametrize("elem", ["bf16", "f16"])
@pytest.mark.parametrize("mnk", GEMM_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_mma_gemm(elem: str, mnk: tuple[int, int, int], kernel: str) -> None:
    module = importlib.import_module(f"examples.gemm.{kernel}")
    m, n, k = mnk
    dt = DTYPES[elem]
    a, b = randn(m, k, dtype=dt), randn(k, n, dtype=dt)
    c = poison(m, n, dtype=dt)
    grid = ((n + module.BN - 1) // module.BN, (m + module.BM - 1) // module.BM)
    smem = getattr(module, "SMEM_BYTES", 0)  # the 128x256 kernel's stages are dynamic shared memory
    getattr(module, kernel)[grid, module.THREADS, None, smem](a.reshape(-1), b.reshape(-1), m, n, k, c.reshape(-1))
    ref = a.double() @ b.double()
    ulp = 2.0 ** -8 if elem == "bf16" else 2.0 ** -11  # the output's rounding, relative
    bound = ulp * ref.abs() + 1e-6 * (a.double().abs() @ b.double().abs()) + 1e-6
    err = (c.double() - ref).abs()
    bad = ~(err <= bound)  # NaN (an element never written) is bad too
    assert not bool(bad.any()), (f"{int(bad.sum())} of {m * n} wrong, first at "
                                 f"{divmod(int(bad.reshape(-1).nonzero()[0]), n)}, max error {err.max().item()}")


def test_mma_gemm_refuses_unsupported_sizes() -> None:
    import oxide
    from examples.gemm.mma_gemm import SMEM_BYTES, THREADS, mma_gemm
    from oxide.runtime import synchronize

    a, b = randn(16, 16, dtype=torch.bfloat16), randn(16, 12, dtype=torch.bfloat16)
    c = poison(16, 12, dtype=torch.bfloat16)
    with pytest.raises(oxide.KernelError, match="n % 8 == 0"):  # a device assert: raised at the synchronize
        mma_gemm[(1, 1), THREADS, None, SMEM_BYTES](a.reshape(-1), b.reshape(-1), 16, 12, 16, c.reshape(-1))
        synchronize()
    with pytest.raises(oxide.KernelError, match=r"len\(a\) == i64\(m\) \* k"):  # a precondition: before the launch
        mma_gemm[(1, 1), THREADS, None, SMEM_BYTES](a.reshape(-1), b.reshape(-1), 16, 16, 16, c.reshape(-1))
