"""The JIT of an editable install, end to end on a GPU: a module linking CUDA C++ through
``[tool.oxide]`` (include dirs, defines, link globs) is built next to its sources; editing the
C++ header, then the Python side, each runs the new code on the next launch (each launch in a
fresh process, as after an edit). Results are compared with NumPy in float64 on fresh random
inputs; outputs start as NaN. On the CPU device (tests/devices.py), which compiles the module and
its C++ (with the host's C++ compiler) at the first launch, the same edits run the same new code."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu]

REPO = Path(__file__).resolve().parent.parent
PACKAGES = Path(__file__).resolve().parent / "packages"

LAUNCH = """
import json, sys
from pathlib import Path
import numpy as np
from oxide.runtime import DeviceArray
from oxide.runtime.artifacts import locate_manifest
import culinked.ops as ops

n = int(sys.argv[1])
x = np.random.default_rng(int(sys.argv[2])).standard_normal(n).astype(np.float32)
out = DeviceArray.from_numpy(np.full(n, np.nan, dtype=np.float32))
ops.scale[ops.scale.grid_for(n), 256](DeviceArray.from_numpy(x), out)
located = locate_manifest(Path(ops.__file__), "culinked.ops", lambda: "")  # found at the launch
print(json.dumps({"x": x.tolist(), "out": out.to_numpy().tolist(), "jit": located.jit}))
"""


def _device_arch() -> str:
    from cuda.bindings import driver

    (err,) = driver.cuInit(0)
    err, dev = driver.cuDeviceGet(0)
    attr = driver.CUdevice_attribute
    err, major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)
    err, minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)
    return f"sm_{major}{minor}"


def _launch(project: Path, tmp_path: Path, seed: int) -> tuple[np.ndarray, np.ndarray, bool]:
    script = tmp_path / "launch.py"
    script.write_text(LAUNCH)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project), str(REPO)]),
           "OXIDE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OXIDE_JIT", None)
    run = subprocess.run([sys.executable, str(script), "100003", str(seed)], capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout.strip().splitlines()[-1])
    return np.array(data["x"], dtype=np.float64), np.array(data["out"], dtype=np.float64), bool(data["jit"])


def test_editable_cpp_module_runs_edited_code(tmp_path: Path) -> None:
    from oxide_build.build import compile_project
    from oxide_build.config import load_config

    project = tmp_path / "cu_linked"
    shutil.copytree(PACKAGES / "cu_linked", project)
    cpu = devices.on_cpu()  # the launch compiles from the sources: no artifacts to be stale
    if not cpu:
        config = load_config(project, environ={"OXIDE_ARCH": _device_arch()})
        compile_project(project, config, None, log=open(os.devnull, "w"), jobs=1)  # next to the sources

    x, out, jit = _launch(project, tmp_path, 1)
    assert cpu or not jit
    np.testing.assert_allclose(out, 3.0 * x, rtol=1e-6)  # CL_FACTOR=3.0f from [tool.oxide] defines

    header = project / "include" / "scale_impl.cuh"
    header.write_text(header.read_text().replace("CL_FACTOR * x", "CL_FACTOR * x + 1.0f"))
    x, out, jit = _launch(project, tmp_path, 2)
    assert cpu or jit  # the manifest records the header: stale, recompiled with [tool.oxide]
    np.testing.assert_allclose(out, 3.0 * x + 1.0, rtol=1e-6, atol=1e-6)

    ops = project / "culinked" / "ops.py"
    ops.write_text(ops.read_text().replace("out[i] = cl_scale(x[i])", "out[i] = cl_scale(x[i]) - x[i]"))
    x, out, jit = _launch(project, tmp_path, 3)
    assert cpu or jit
    np.testing.assert_allclose(out, 2.0 * x + 1.0, rtol=1e-6, atol=1e-6)
