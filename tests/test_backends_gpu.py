"""The libNVVM backend gives the same results as the NVPTX backend, on the GPU."""
from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("compares the nvptx and nvvm backends' GPU code")]
torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parent.parent
rng = np.random.default_rng()


@pytest.fixture(scope="module")
def nvvm_examples(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    root = tmp_path_factory.mktemp("nvvm")
    pkg = root / "nvvm_examples"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("saxpy", "softmax", "sgemm"):
        shutil.copy(ROOT / "examples" / f"{name}.py", pkg / f"{name}.py")
        compiled = compile_module(pkg / f"{name}.py", f"nvvm_examples.{name}",
                                  CompileOptions(archs=("sm_90",), backend="nvvm"), root=root)
        write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    yield lambda name: importlib.import_module(f"nvvm_examples.{name}")
    sys.path.remove(str(root))


def test_nvvm_saxpy(nvvm_examples) -> None:  # type: ignore[no-untyped-def]
    saxpy = nvvm_examples("saxpy").saxpy
    n = 100_003
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = torch.full((n,), float("nan"), device="cuda")
    saxpy[saxpy.grid_for(n), 256](2.5, torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda"), out)
    np.testing.assert_allclose(out.cpu().numpy(), 2.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)


def test_nvvm_softmax_and_sgemm(nvvm_examples) -> None:  # type: ignore[no-untyped-def]
    softmax_rows = nvvm_examples("softmax").softmax_rows
    rows, cols = 33, 1025
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = torch.full((rows * cols,), float("nan"), device="cuda")
    softmax_rows[rows, 256](torch.as_tensor(x.ravel(), device="cuda"), cols, out)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out.cpu().numpy().reshape(rows, cols), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    sgemm = nvvm_examples("sgemm").sgemm
    m, n, k = 65, 97, 130
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = torch.full((m * n,), float("nan"), device="cuda")
    sgemm[((n + 31) // 32, (m + 31) // 32), (32, 32)](torch.as_tensor(a.ravel(), device="cuda"),
                                                      torch.as_tensor(b.ravel(), device="cuda"), m, n, k, c)
    np.testing.assert_allclose(c.cpu().numpy().reshape(m, n), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
