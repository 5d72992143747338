"""What a process's first launch of a precompiled kernel costs on the host (issue 28, cold start):
reading the manifest compiles no regular expression and loads no OpenSSL (``hashlib``), and
the name checks that replaced the expressions accept exactly what the expressions did."""
from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oxide.abi import manifest as abi_manifest
from oxide.runtime.manifest import manifest_path
from tests.fakes import SAXPY_SOURCE, fresh_runtime, make_module  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent

# the expressions the manifest's checks used to be (match at the start; \Z: the end)
_EXPRESSIONS = {
    "_is_identifier": r"[A-Za-z_][A-Za-z0-9_]*\Z",
    "_is_dotted": r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z",
    "_is_symbol": r"[A-Za-z_$][A-Za-z0-9_$.]*\Z",
    "_is_sha256": r"[0-9a-f]{64}\Z",
    "_is_arch": r"(sm|compute)_[0-9]{2,3}[af]?\Z",
    "_drive_letter": r"[A-Za-z]:",
}


def _samples() -> list[str]:
    rnd = random.Random(28)
    fixed = ["", "_", "if", "a.b", "a..b", ".a", "a.", "$x", "x$.y", "1a", "é", "a\n", "٣", "C:", "c:/x", "é:",
             "sm_90", "sm_90a", "sm_100f", "compute_90", "sm_9", "sm_1000", "sm_90b", "sm_٩٠", "sm_90\n", "sm__90",
             "0" * 64, "0" * 63, "0" * 65, "a" * 64 + "\n", "A" * 64, "f" * 63 + "g"]
    words = ["".join(rnd.choice("aZ_$.09fsmcompute:\n é٣-") for _ in range(rnd.randint(0, 8))) for _ in range(20000)]
    digests = ["".join(rnd.choice("0123456789abcdefgA") for _ in range(64)) for _ in range(500)]
    archs = [rnd.choice(["sm_", "compute_", "sm", "smx_", "compute"]) +
             "".join(rnd.choice("0123456789af_٣") for _ in range(rnd.randint(0, 5))) for _ in range(5000)]
    return fixed + words + digests + archs


def test_name_checks_accept_what_the_expressions_did() -> None:
    samples = _samples()
    for name, expression in _EXPRESSIONS.items():
        check = getattr(abi_manifest, name)
        pattern = re.compile(expression)
        wrong = [s for s in samples if check(s) != bool(pattern.match(s))]
        assert wrong == [], (name, wrong[:5])
        assert any(check(s) for s in samples) and not all(check(s) for s in samples), name


def test_file_sha256_is_hashlibs(tmp_path: Path) -> None:
    import hashlib

    for data in (b"", b"abc", bytes(range(256)) * 1000):
        path = tmp_path / "f.bin"
        path.write_bytes(data)
        assert abi_manifest.file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_reading_a_manifest_compiles_no_expression_and_loads_no_openssl(tmp_path: Path) -> None:
    """A fresh process reads and checks a manifest (what a first launch does) without importing
    hashlib (OpenSSL: 2.5 ms) or compiling a regular expression (0.3 ms for the five)."""
    module = make_module(tmp_path, SAXPY_SOURCE, sources={"helper.py": "0" * 64})
    path = manifest_path(tmp_path, module.__name__)
    code = textwrap.dedent(f"""
        import re, sys
        from pathlib import Path
        from oxide.runtime.manifest import changed_source, load_manifest
        compiled = len(re._cache)
        m = load_manifest(Path({str(path)!r}))
        assert m.kernels and m.sources, m
        assert changed_source(Path({module.__file__!r}), m) is None
        assert len(re._cache) == compiled, list(re._cache)[compiled:]
        loaded = sorted(set(sys.modules) & {{"hashlib", "_hashlib", "_ssl"}})
        assert not loaded, loaded
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_array_readers_load_with_their_first_array() -> None:
    """Reading a DeviceArray or a CUDA-array-interface array (the cold start's first launch)
    imports no reader of PyTorch, CuPy, NumPy or DLPack arrays; the names the tests and the C
    launcher read from ``arrays`` still resolve, and an array of another kind loads its reader."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from oxide.runtime import arrays
        readers = {"oxide.runtime.arrays_torch", "oxide.runtime.arrays_cupy", "oxide.runtime.arrays_dlpack",
                   "oxide.runtime.arrays_host"}
        class Cai:
            __cuda_array_interface__ = {"version": 3, "shape": (4,), "typestr": "<f4", "data": (0x7F0000001000, False),
                                        "strides": None}
        assert arrays.view_of(Cai()).length == 4
        assert not readers & set(sys.modules), readers & set(sys.modules)
        assert arrays._TORCH_DTYPES["torch.float32"] == "f32" and "oxide.runtime.arrays_torch" in sys.modules
        from oxide.runtime.arrays import _DLTensor
        assert _DLTensor.__name__ == "_DLTensor" and "oxide.runtime.arrays_dlpack" in sys.modules
        try:
            arrays.no_such_name
        except AttributeError as e:
            assert "no_such_name" in str(e)
        else:
            raise SystemExit("no AttributeError")
        from oxide.runtime import device_choice
        device_choice.set_device("cpu")
        assert arrays.view_of(np.zeros(3, np.float32)).length == 3 and "oxide.runtime.arrays_host" in sys.modules
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_named_tuples_of_a_cold_start_have_evaluated_annotations() -> None:
    """The NamedTuples a cold start creates (the manifest's, the array views', the loader's,
    the scalar and vector types) are made from evaluated annotations: typing compiles a string
    annotation into a ForwardRef per field (47 for the manifest's alone, 0.3 ms of a first
    launch), which ``from __future__ import annotations`` in their module would bring back."""
    import importlib
    import typing

    modules = ["oxide.abi.manifest", "oxide.abi.scalars", "oxide.lang.vectors", "oxide.runtime.array_view",
               "oxide.runtime.arrays_cai", "oxide.runtime.artifacts", "oxide.runtime.loader"]
    tuples = []
    for name in modules:
        module = importlib.import_module(name)
        tuples += [v for v in vars(module).values()
                   if isinstance(v, type) and issubclass(v, tuple) and v.__module__ == name and v.__annotations__]
    assert {t.__name__ for t in tuples} >= {"ParamSpec", "KernelSpec", "ModuleManifest", "ScalarType", "VectorType",
                                            "ArrayView", "TensorView", "LocatedManifest", "CodeChoice"}
    lazy = [(t.__name__, n) for t in tuples for n, a in t.__annotations__.items()
            if isinstance(a, (str, typing.ForwardRef))]
    assert lazy == []


def test_cold_start_profile_breaks_a_fake_first_launch_into_its_steps() -> None:
    """benchmarks/cold_start_profile.py (run on the GPU host for the driver's share) runs with
    the fake driver: each phase's steps, the driver calls the first launch makes, the modules
    each phase imports, and the second launch, which loads and imports nothing."""
    from benchmarks.cold_start_profile import format_profile, profile_cold_start

    rec = profile_cold_start(1, fake=True)
    rows = {(phase, kind, name): (ms, count) for phase, kind, name, ms, count in rec["rows"]}
    steps = [name for phase, kind, name in rows if kind == "step"]
    assert steps == ["import oxide", "import oxcold.kernels", "from oxide.runtime import DeviceArray",
                     "first launch + synchronize", "second launch + synchronize"], steps
    launch_calls = {name for phase, kind, name in rows if phase == "launch" and kind == "driver"}
    assert {"cuInit", "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuCtxSynchronize"} <= launch_calls
    assert rows[("launch", "driver", "cuModuleLoadData")][1] == 1
    imported = {phase: {name for p, kind, name in rows if p == phase and kind == "import"} for phase in ("import", "launch")}
    assert {"oxide", "oxide.lang", "oxcold.kernels", "oxide.runtime.kernel"} <= imported["import"]
    assert {"oxide.abi.manifest", "oxide.runtime.loader"} <= imported["launch"]
    assert not imported["import"] & imported["launch"]
    # what a kernel without struct, vector-element or TMA parameters does not need, nor a driver
    # new enough for the package (the driver-release facts are for a too old one's message)
    lazy = {"oxide.runtime.struct_params", "oxide.runtime.vector_views", "oxide.runtime.tensor_maps",
            "oxide.runtime.driver_release", "oxide.runtime.manifest", "oxide.runtime.arrays_torch"}
    assert not lazy & (imported["import"] | imported["launch"]), lazy & (imported["import"] | imported["launch"])
    second = {(kind, name) for phase, kind, name in rows if phase == "second"}
    assert ("driver", "cuModuleLoadData") not in second and not any(kind == "import" for kind, _ in second)
    # each phase's imports are inside its steps (self times: nothing counted twice)
    for phase in ("import", "launch"):
        step_ms = sum(ms for (p, kind, _), (ms, _n) in rows.items() if p == phase and kind == "step")
        import_ms = sum(ms for (p, kind, _), (ms, _n) in rows.items() if p == phase and kind == "import")
        assert 0 < import_ms <= step_ms, (phase, import_ms, step_ms)
    text = format_profile(rec)
    assert "cuModuleLoadData" in text and "python (the rest)" in text and "floor" not in text


def test_parse_arch_reads_what_the_expression_did() -> None:
    """The loader's arch reader, once a regular expression compiled at import (a first launch
    imports the loader), reads exactly what the expression with two or more digits did."""
    from oxide.runtime.loader import parse_arch

    pattern = re.compile(r"^(?:sm|compute)_(\d+)([af]?)$")

    def by_expression(arch: str) -> tuple[int, int, str] | None:
        m = pattern.match(arch)
        if m is None or len(m.group(1)) < 2:
            return None
        return int(m.group(1)[:-1]), int(m.group(1)[-1]), m.group(2)

    samples = _samples() + ["sm_90a\n", "sm_90\n\n", "compute_120f", "sm_٩٠", "sm_90a ", " sm_90", "sm_1234"]
    wrong = [s for s in samples if parse_arch(s) != by_expression(s)]
    assert wrong == [], wrong[:5]
    assert parse_arch("sm_90a") == (9, 0, "a") and parse_arch("sm_120") == (12, 0, "") and parse_arch("sm_9") is None



def test_loader_names_the_driver_release_facts_on_first_use() -> None:
    code = textwrap.dedent("""
        import sys
        from oxide.runtime import loader
        assert "oxide.runtime.driver_release" not in sys.modules
        from oxide.runtime.driver_release import DRIVER_RELEASE_OF_CUDA, installed_driver_release
        assert loader.DRIVER_RELEASE_OF_CUDA is DRIVER_RELEASE_OF_CUDA
        assert loader.installed_driver_release is installed_driver_release
        try:
            loader.no_such_name
        except AttributeError as e:
            assert "no_such_name" in str(e)
        else:
            raise SystemExit("no AttributeError")
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_collector_is_paused_for_oxides_import_and_back_on_after() -> None:
    """With the cycle collector made to run at every allocation, it never runs inside the modules
    that importing oxide executes (it did hundreds of times before the pause); it is on again
    afterwards, and a collector its program turned off stays off (oxide/__init__.py,
    ``_CollectorPaused``)."""
    code = textwrap.dedent("""
        import gc, os, sys, typing
        inside = []
        def runs(phase, info):
            frame = sys._getframe(1) if phase == "start" else None
            while frame is not None:
                path = frame.f_code.co_filename
                if os.sep + "oxide" + os.sep in path and not path.endswith(os.path.join("oxide", "__init__.py")):
                    inside.append(path)
                    break
                frame = frame.f_back
        gc.callbacks.append(runs)
        gc.set_threshold(1)
        import oxide
        gc.set_threshold(700)
        assert gc.isenabled()
        assert "oxide.lang.intrinsics" in sys.modules and not inside, inside[:5]
        for name in [m for m in sys.modules if m == "oxide" or m.startswith("oxide.")]:
            del sys.modules[name]
        gc.disable()
        import oxide
        assert not gc.isenabled()
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_a_first_launch_turns_the_collector_back_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first launch pauses the collector while it imports the launch modules, reads the
    manifest and loads the code, and turns it back on, also when that launch fails; a collector
    the program turned off stays off."""
    import gc

    from oxide.errors import CudaError
    from oxide.runtime import device
    from tests.fakes import SAXPY_KERNELS, FakeArray, FakeDriver, slot_types

    drv = FakeDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    m = make_module(tmp_path)
    drv.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    assert gc.isenabled()
    m.scale[1, 64](1.5, FakeArray(), FakeArray())
    assert gc.isenabled() and drv.launches
    missing = make_module(tmp_path, write_manifest=False)
    with pytest.raises(CudaError, match="no precompiled code"):
        missing.scale[1, 64](1.5, FakeArray(), FakeArray())
    assert gc.isenabled()
    drv.signatures["saxpy__f32"] = slot_types(SAXPY_KERNELS[0].params)
    gc.disable()
    try:
        m.saxpy[1, 64](2.0, FakeArray(), FakeArray(), FakeArray())
        assert not gc.isenabled() and len(drv.launches) == 2
    finally:
        gc.enable()


def test_the_manifest_fields_quick_acceptance_refuses_what_the_checks_refuse(tmp_path: Path) -> None:
    """The manifest reader accepts most fields without naming them (``_ACCEPTS``); a value any
    check refuses still fails naming its field, as before."""
    import json

    module = make_module(tmp_path, SAXPY_SOURCE)
    good = json.loads(manifest_path(tmp_path, module.__name__).read_text())
    good["kernels"][0]["preconditions"] = [{"code": [[0, 1], [0, 1], [13, 0]], "site": 0}]
    abi_manifest.ModuleManifest.from_json(json.dumps(good))
    cases = {
        ("name", "1x"): "kernels[0].name: '1x' is not a Python identifier",
        ("name", "é"): "kernels[0].name: 'é' is not a Python identifier",
        ("symbol", ".s"): "kernels[0].symbol: '.s' is not a symbol",
        ("line", True): "kernels[0].line: expected an integer, got bool",
        ("line", -1): "kernels[0].line: -1 is outside 0 to",
        ("line", 2**31): "kernels[0].line: 2147483648 is outside",
        ("cooperative", 1): "kernels[0].cooperative: expected true or false, got int",
        ("file", "a\0b"): "kernels[0].file: 'a\\x00b' contains a NUL character",
        ("file", "x" * 5000): "kernels[0].file: a string of 5000 characters",
        ("file", 3): "kernels[0].file: expected a string, got int",
    }
    for (key, value), message in cases.items():
        bad = json.loads(json.dumps(good))
        bad["kernels"][0][key] = value
        with pytest.raises(abi_manifest.ManifestError) as e:
            abi_manifest.ModuleManifest.from_json(json.dumps(bad))
        assert message in str(e.value), (key, value, str(e.value))
    for insn in ([True, 0], [1, False], [1.0, 0]):
        bad = json.loads(json.dumps(good))
        bad["kernels"][0]["preconditions"][0]["code"][0] = insn
        with pytest.raises(abi_manifest.ManifestError, match=r"preconditions\[0\]\.code\[0\]: .* is not an \[opcode, operand\] pair"):
            abi_manifest.ModuleManifest.from_json(json.dumps(bad))
