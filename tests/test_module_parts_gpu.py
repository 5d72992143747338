"""A module compiled in parts (oxide_build/package/module_parts.py) on the GPU: each kernel runs
from its part's code, against NumPy, and a device error in a part names its kernel and line."""
from __future__ import annotations

import importlib
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from test_module_parts import kernels_source

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
torch = devices.torch_or_none()  # the GPU test's inputs


@devices.gpu_only("module parts are the GPU build's: the CPU device compiles a module whole")
def test_kernels_of_every_part_run_and_report_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import oxide
    from oxide.abi.manifest import ModuleManifest
    from oxide_build.build import compile_project
    from oxide_build.config import OxideConfig

    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    project = tmp_path / "proj"
    (project / "partpk").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "partpk"\nversion = "1"\n')
    (project / "partpk" / "__init__.py").write_text("")
    source = project / "partpk" / "ops.py"
    source.write_text(kernels_source(18))
    major, minor = torch.cuda.get_device_capability()
    compile_project(project, OxideConfig(arch=(f"sm_{major}{minor}",)), None, log=io.StringIO(), jobs=2)
    manifest = ModuleManifest.from_json((project / "partpk" / "_oxide" / "partpk.ops.json").read_text())
    assert len(manifest.parts) == 2
    monkeypatch.syspath_prepend(str(project))
    ops = importlib.import_module("partpk.ops")
    rng = np.random.default_rng()
    n = 10_001
    x = rng.standard_normal(n).astype(np.float32)
    for index in range(18):  # parts 0, 1 and 2
        out = devices.full((n,), np.nan)
        getattr(ops, f"k{index}")[(n + 255) // 256, 256](np.float32(1.5), torch.as_tensor(x, device="cuda"), out)
        # contracted into one fma (the default): the f64 result rounded once, within an ulp
        want = (1.5 * x.astype(np.float64) + index).astype(np.float32)
        np.testing.assert_allclose(to_numpy(out), want, rtol=2e-7, atol=1e-7)
    lines = source.read_text().splitlines()
    read = next(i for i, line in enumerate(lines, 1) if line.endswith("+ 17.0"))
    short = torch.as_tensor(x[:100], device="cuda")
    with pytest.raises(oxide.KernelError, match=rf"k17 .*ops\.py:({read}|{read - 3})"):
        ops.k17[(n + 255) // 256, 256](np.float32(1.0), short, devices.zeros(n))
        devices.synchronize()
        oxide.runtime.check_kernel_errors()
    out = devices.full((n,), np.nan)  # still usable, parts 0 and 2
    ops.k0[(n + 255) // 256, 256](np.float32(2.0), torch.as_tensor(x, device="cuda"), out)
    np.testing.assert_allclose(to_numpy(out), (2.0 * x.astype(np.float64)).astype(np.float32), rtol=2e-7, atol=0)
    sys.modules.pop("partpk.ops", None)
