"""tests/devices.py and conftest's choice: without a GPU, a ``gpu`` test runs on the CPU device
(chosen before its fixtures, and in the environment of what it starts); other tests do not."""
from __future__ import annotations

import os

import numpy as np
import pytest

import devices


@pytest.fixture
def kind_in_a_fixture() -> str:
    from oxide.runtime import device_kind

    return device_kind()


@pytest.mark.gpu
def test_a_gpu_test_without_a_gpu_runs_on_the_cpu_device(kind_in_a_fixture: str) -> None:
    from oxide.runtime import device_kind

    if devices.gpu_available():
        pytest.skip("this machine has a GPU: gpu tests run there")
    assert (kind_in_a_fixture, device_kind(), os.environ.get("OXIDE_DEVICE")) == ("cpu", "cpu", "cpu")
    a = devices.array(np.arange(5, dtype=np.float32))
    assert isinstance(a, np.ndarray) and devices.on_cpu()
    np.testing.assert_array_equal(devices.to_numpy(devices.full(3, -1.5)), np.full(3, -1.5, np.float32))
    assert devices.backends() == ["nvptx"] and devices.sized(10, 2) == 2


def test_other_tests_run_with_the_device_the_environment_names() -> None:
    from oxide.runtime import device_kind

    assert device_kind() == ("cpu" if os.environ.get("OXIDE_DEVICE", "").strip().lower() == "cpu" else "cuda")
