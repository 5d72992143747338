"""Shared test setup: ``gpu``-marked tests run on the GPU, or on the CPU device where there is
no NVIDIA GPU and driver (tests/devices.py; those marked ``gpu_only`` skip there with their
reason); the ``ptxas`` fixture assembles PTX."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from devices import cpu_device_problem, gpu_available, gpu_tests_on_cpu

# the tests check the IR's contract after every pass (oxide_build.passes), not only after the frontend
os.environ.setdefault("OXIDE_VERIFY_IR", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a GPU, the ``gpu`` tests run on the CPU device (tests/devices.py), but those
    marked ``gpu_only(reason)``, which skip with their reason; without a working CPU device
    they all skip, saying why."""
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items or gpu_available():
        return
    problem = cpu_device_problem()
    for item in gpu_items:
        if problem is not None:
            item.add_marker(pytest.mark.skip(reason=f"needs an NVIDIA GPU and driver, or the CPU device: {problem}"))
            continue
        only = item.get_closest_marker("gpu_only")
        if only is not None:
            reason = only.args[0] if only.args else "needs a GPU"
            item.add_marker(pytest.mark.skip(reason=f"on the CPU device: {reason}"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A ``gpu`` test run on the CPU device has it chosen before its fixtures (module fixtures
    compile and load kernels), in this process and in those it starts (OXIDE_DEVICE)."""
    if "gpu" in item.keywords and gpu_tests_on_cpu():
        from oxide.runtime import device_choice

        os.environ["OXIDE_DEVICE"] = "cpu"
        device_choice.set_device("cpu")


def pytest_runtest_teardown(item: pytest.Item) -> None:
    if "gpu" in item.keywords and gpu_tests_on_cpu():
        from oxide.runtime import device_choice

        os.environ.pop("OXIDE_DEVICE", None)
        device_choice.set_device("cuda")


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
