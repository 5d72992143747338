"""ox.bits (popc, clz, brev) on the GPU against Python's integers, for i32/u32/i64/u64 on both
backends. Inputs: random bit patterns over the whole range plus 0, -1 / all ones and the
extremes; outputs poisoned before the launch. The kernels are in packages/bitkernels/bitk.py."""
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

pytestmark = pytest.mark.gpu
KERNELS = Path(__file__).resolve().parent / "packages" / "bitkernels" / "bitk.py"
BLOCK = 128
rng = np.random.default_rng()


@pytest.fixture(scope="module", params=devices.backends())
def bitk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    from oxide.runtime import device
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    arch = device.context_device(device.current_context()).arch
    name = f"bits_{request.param}"
    root = tmp_path_factory.mktemp(name)
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(KERNELS, pkg / "bitk.py")
    if not devices.on_cpu():  # the CPU device compiles the source at the first launch
        compiled = compile_module(pkg / "bitk.py", f"{name}.bitk", CompileOptions(archs=(arch,), backend=request.param), root=root)
        write_module_artifacts(compiled, pkg)
    sys.path.insert(0, str(root))
    yield importlib.import_module(f"{name}.bitk")
    sys.path.remove(str(root))


def dev(a: np.ndarray) -> Any:
    from oxide.runtime import DeviceArray

    return DeviceArray.from_numpy(np.ascontiguousarray(a))


@pytest.mark.parametrize("dtype", ["i32", "u32", "i64", "u64"])
def test_popc_clz_brev_match_python(bitk: ModuleType, dtype: str) -> None:
    from oxide.runtime import synchronize

    np_type = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}[dtype]
    width = np.dtype(np_type).itemsize * 8
    unsigned = np.dtype(f"u{width // 8}")
    info = np.iinfo(np_type)
    n = 1001
    raw = rng.integers(0, 2 ** 63, n, dtype=np.uint64) ^ (rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63))
    x = raw.astype(unsigned).view(np_type)
    x[:6] = [0, 1, info.max, info.min, np_type(-1) if info.min < 0 else info.max - 1, 1 << (width - 2)]
    x[6:20] >>= np.arange(14, dtype=np_type) * (width // 16)  # some leading zeros of each count
    popc, clz = dev(np.full(n, -7, np.int32)), dev(np.full(n, -7, np.int32))
    brev = dev(np.full(n, 3, np_type))
    getattr(bitk, f"bits_{dtype}")[(n + BLOCK - 1) // BLOCK, BLOCK](dev(x), popc, clz, brev)
    synchronize()
    bits = [int(v) for v in x.view(unsigned)]
    np.testing.assert_array_equal(popc.to_numpy(), [bin(v).count("1") for v in bits])
    np.testing.assert_array_equal(clz.to_numpy(), [width - v.bit_length() for v in bits])
    expect = np.array([int(f"{v:0{width}b}"[::-1], 2) for v in bits], dtype=unsigned).view(np_type)
    np.testing.assert_array_equal(brev.to_numpy(), expect)
