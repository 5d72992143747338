"""The SASS of a cubin, for tests that check which instructions a kernel became (issue 18:
HMMA/QMMA of the mma.sync GEMMs, HGMMA/UTMALDG of the wgmma ones). It needs cuobjdump and
nvdisasm (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm, the ``test`` extra, or a CUDA
toolkit: $CUDA_HOME/bin, /usr/local/cuda/bin); a test that asks without them is skipped."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from oxide_build.toolchain import find_tool

__all__ = ["sass_of"]


def sass_of(cubin: bytes) -> str:
    """``cuobjdump -sass`` of ``cubin``: one line per instruction, ``/*0040*/  HMMA.16816.F32.BF16 ...``."""
    cuobjdump = find_tool("cuobjdump")
    places = [str(cuobjdump.parent)] if cuobjdump is not None else []
    places += [str(Path(os.environ[v]) / "bin") for v in ("CUDA_HOME", "CUDA_PATH") if v in os.environ]
    places += ["/usr/local/cuda/bin", os.environ.get("PATH", "")]
    path = os.pathsep.join(places)
    cuobjdump_path = str(cuobjdump) if cuobjdump is not None else shutil.which("cuobjdump", path=path)
    nvdisasm = shutil.which("nvdisasm", path=path)
    if cuobjdump_path is None or nvdisasm is None:
        pytest.skip("cuobjdump and nvdisasm are not installed (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "code.cubin"
        file.write_bytes(cubin)
        env = {**os.environ, "PATH": os.pathsep.join([str(Path(nvdisasm).parent), path])}
        result = subprocess.run([cuobjdump_path, "-sass", str(file)], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout
