"""Shared test setup: ``gpu``-marked tests are skipped where there is no NVIDIA GPU and driver;
the ``ptxas`` fixture assembles PTX."""
from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

# the tests check the IR's contract after every pass (oxide_build.passes), not only after the frontend
os.environ.setdefault("OXIDE_VERIFY_IR", "1")


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """True when the CUDA driver loads and sees at least one device."""
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return False
        err, count = driver.cuDeviceGetCount()
        return int(err) == 0 and count > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any("gpu" in item.keywords for item in items) or gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and driver")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def ptxas(tmp_path: Path) -> Callable[[str, str], None]:
    """``ptxas(ptx_text, arch)`` asserts that ptxas assembles the PTX for ``arch``; the test is
    skipped where ptxas is not installed (pip install nvidia-cuda-nvcc)."""
    from oxide_build.toolchain import find_tool

    tool = find_tool("ptxas")
    if tool is None:
        pytest.skip("ptxas not installed (pip install nvidia-cuda-nvcc)")

    def assemble(ptx: str, arch: str) -> None:
        path = tmp_path / f"ptxas.{arch}.ptx"
        path.write_text(ptx)
        result = subprocess.run([tool, f"-arch={arch}", "-o", str(path.with_suffix(".cubin")), str(path)],
                                capture_output=True, text=True)
        assert result.returncode == 0, f"{arch}: {result.stderr}"
    return assemble
