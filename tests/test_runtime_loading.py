"""Finding and loading a kernel's code without a GPU: code selection by arch, manifest discovery,
staleness and JIT, and the errors a machine without CUDA gets."""
from __future__ import annotations

import hashlib
import json
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest
from cuda.bindings import driver as real_driver
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    SAXPY_KERNELS,
    FakeArray,
    FakeDriver,
    fake_driver,
    fresh_runtime,
    make_module,
    slot_types,
)

import oxide
from oxide.errors import CudaError
from oxide.runtime import artifacts, device
from oxide.runtime.loader import CodeChoice, parse_arch, select_code
from oxide.runtime.manifest import ModuleManifest, manifest_path

__all__: list[str] = []


# ---------------------------------------------------------------------------------------------
# code selection


@pytest.mark.parametrize(
    ("cubins", "ptx", "capability", "expected"),
    [
        ({"sm_80": "a", "sm_90": "b"}, {}, (9, 0), CodeChoice("cubin", "sm_90", "b")),
        ({"sm_80": "a", "sm_90": "b"}, {}, (8, 0), CodeChoice("cubin", "sm_80", "a")),
        ({"sm_80": "a", "sm_90": "b"}, {}, (8, 6), CodeChoice("cubin", "sm_80", "a")),
        ({"sm_80": "a", "sm_86": "c", "sm_90": "b"}, {}, (8, 9), CodeChoice("cubin", "sm_86", "c")),
        ({"sm_80": "a", "sm_86": "c"}, {"sm_80": "p"}, (8, 6), CodeChoice("cubin", "sm_86", "c")),
        ({"sm_90": "b", "sm_90a": "x"}, {}, (9, 0), CodeChoice("cubin", "sm_90a", "x")),
        ({"sm_90a": "x"}, {"sm_90": "p"}, (9, 0), CodeChoice("cubin", "sm_90a", "x")),
        ({"sm_100a": "x"}, {"sm_90": "p"}, (10, 3), CodeChoice("ptx", "sm_90", "p")),
        ({"sm_100f": "f"}, {}, (10, 3), CodeChoice("cubin", "sm_100f", "f")),
        ({"sm_80": "a", "sm_90": "b"}, {"sm_90": "p"}, (12, 0), CodeChoice("ptx", "sm_90", "p")),
        ({"sm_80": "a", "sm_90": "b"}, {"sm_80": "p8", "sm_90": "p9"}, (10, 0), CodeChoice("ptx", "sm_90", "p9")),
        ({"sm_80": "a", "sm_90": "b"}, {"sm_80": "p8", "sm_90": "p9"}, (8, 9), CodeChoice("cubin", "sm_80", "a")),
        ({}, {"sm_80": "p8", "sm_120": "p12"}, (9, 0), CodeChoice("ptx", "sm_80", "p8")),
        ({"sm_120": "c12"}, {}, (12, 1), CodeChoice("cubin", "sm_120", "c12")),
        ({}, {"compute_75": "p"}, (8, 0), CodeChoice("ptx", "compute_75", "p")),
    ],
)
def test_select_code(
    cubins: dict[str, str], ptx: dict[str, str], capability: tuple[int, int], expected: CodeChoice
) -> None:
    assert select_code(cubins, ptx, capability) == expected


def test_select_code_without_a_match() -> None:
    with pytest.raises(CudaError) as info:
        select_code({"sm_90": "b", "sm_80": "a"}, {"sm_80": "p"}, (7, 5), module="sample.kernels", device_name="Tesla T4")
    assert str(info.value) == (
        "module sample.kernels has no code for this GPU: the device is sm_75 (Tesla T4); the package has cubins "
        "for sm_80, sm_90 and PTX for sm_80. Rebuild the package with sm_75 among its target architectures."
    )
    with pytest.raises(CudaError, match="the package has cubins for sm_90 and PTX for none"):
        select_code({"sm_90": "b"}, {}, (10, 0))


def test_parse_arch() -> None:
    assert parse_arch("sm_90") == (9, 0, "")
    assert parse_arch("sm_86") == (8, 6, "")
    assert parse_arch("sm_120") == (12, 0, "")
    assert parse_arch("sm_90a") == (9, 0, "a")
    assert parse_arch("compute_100f") == (10, 0, "f")
    assert parse_arch("gfx90a") is None
    assert parse_arch("sm_9") is None


# ---------------------------------------------------------------------------------------------
# manifest discovery, staleness and JIT


def test_kernel_source_and_module_name() -> None:
    def f() -> None: ...

    assert artifacts.kernel_source(f) == (Path(__file__), __name__)
    ns: dict[str, Any] = {"__name__": "__main__"}
    exec(compile("def g():\n    pass\n", "/somewhere/script.py", "exec"), ns)
    assert artifacts.kernel_source(ns["g"]) == (Path("/somewhere/script.py"), "script")
    exec(compile("def h():\n    pass\n", "<stdin>", "exec"), ns)
    assert artifacts.kernel_source(ns["h"]) == (None, "__main__")


def test_manifest_found_next_to_the_source(tmp_path: Path) -> None:
    m = make_module(tmp_path)
    source, module = artifacts.kernel_source(m.saxpy.func)
    located = artifacts.locate_manifest(source, module, lambda: pytest.fail("no device needed"))
    assert located.path == tmp_path / "_oxide" / f"{m.__name__}.json"
    assert located.directory == tmp_path / "_oxide"
    assert not located.jit
    assert [k.symbol for k in located.manifest.kernels_named("saxpy")] == ["saxpy__f32", "saxpy__f64"]
    assert artifacts.locate_manifest(source, module, lambda: "sm_90") is located  # cached


def test_no_manifest_without_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifacts, "_build_installed", lambda: False)
    monkeypatch.delenv("OXIDE_JIT")
    m = make_module(tmp_path, write_manifest=False)
    with pytest.raises(CudaError) as info:
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    expected_path = tmp_path / "_oxide" / f"{m.__name__}.json"
    assert str(info.value) == (
        f"no precompiled code for module {m.__name__}: {expected_path} does not exist. Build the package with its "
        "oxide_build backend (pip install . installs it with its kernels compiled), or install oxide-cuda[build] "
        "to compile kernels on first launch"
    )


def test_no_manifest_with_jit_disabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifacts, "_build_installed", lambda: True)
    m = make_module(tmp_path, write_manifest=False)
    with pytest.raises(CudaError, match="or unset OXIDE_JIT=0 to let oxide_build compile it on first launch"):
        m.scale[1, 32](1.0, FakeArray(), FakeArray())


def _fake_jit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, calls: list[tuple[Path, str, str]]) -> None:
    def jit_manifest(source_path: Path, module_name: str, arch: str) -> Path:
        calls.append((source_path, module_name, arch))
        cache = tmp_path / "jit-cache"
        cache.mkdir(exist_ok=True)
        m = ModuleManifest(
            module=module_name,
            source=source_path.name,
            source_sha256=hashlib.sha256(source_path.read_bytes()).hexdigest(),
            kernels=SAXPY_KERNELS,
            cubins={arch: f"{module_name}.{arch}.cubin"},
        )
        (cache / f"{module_name}.{arch}.cubin").write_bytes(b"JIT " + arch.encode())
        path = cache / f"{module_name}.json"
        path.write_text(m.to_json())
        return path

    fake = types.ModuleType("oxide_build.jit")
    fake.jit_manifest = jit_manifest  # type: ignore[attr-defined]
    fake.tree_root = lambda source: source.parent  # type: ignore[attr-defined]
    fake.project_dir_of = lambda root: None  # type: ignore[attr-defined]  (no project: editable-rebuild's default)
    fake.editable_rebuild_enabled = lambda source: True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "oxide_build.jit", fake)
    monkeypatch.setattr(artifacts, "_build_installed", lambda: True)
    monkeypatch.delenv("OXIDE_JIT")


def test_no_manifest_compiles_with_jit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver) -> None:
    calls: list[tuple[Path, str, str]] = []
    _fake_jit(monkeypatch, tmp_path, calls)
    m = make_module(tmp_path, write_manifest=False)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert calls == [(tmp_path / f"{m.__name__}.py", m.__name__, "sm_90")]
    assert fake_driver.loaded == [b"JIT sm_90"]


def test_stale_manifest_recompiles_with_jit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver) -> None:
    calls: list[tuple[Path, str, str]] = []
    _fake_jit(monkeypatch, tmp_path, calls)
    m = make_module(tmp_path, sha="0" * 64)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert len(calls) == 1
    assert fake_driver.loaded == [b"JIT sm_90"]


def test_stale_manifest_warns_once_without_compiler(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path, sha="0" * 64)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    with pytest.warns(oxide.runtime.StaleCodeWarning) as record:
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.saxpy[1, 32](1.0, FakeArray(), FakeArray(), FakeArray())  # the same module: no second warning
    assert len(record) == 1
    text = str(record[0].message)
    assert text.startswith(f"oxide: the precompiled kernels of module {m.__name__} (")
    assert text.endswith(
        "; running the old code. Rebuild the package (pip install .) or install oxide-cuda[build] to recompile on "
        "first launch."
    )
    assert fake_driver.loaded == [b"CUBIN sm_90"]


def _without_llvmlite(monkeypatch: pytest.MonkeyPatch) -> None:
    """An install of oxide-cuda without the [build] extra: oxide_build is there, llvmlite is not."""
    import importlib.util

    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "llvmlite" or name.startswith("llvmlite.") else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.delenv("OXIDE_JIT")


def test_without_the_build_extra_a_stale_manifest_runs_the_old_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver
) -> None:
    # issue 31: oxide_build always ships, so looking for it found a compiler that could not run
    # (ModuleNotFoundError: llvmlite at the first launch after editing a kernel)
    _without_llvmlite(monkeypatch)
    assert not artifacts.jit_enabled()
    m = make_module(tmp_path, sha="0" * 64)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    with pytest.warns(oxide.runtime.StaleCodeWarning, match="install oxide-cuda\\[build\\] to recompile"):
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert fake_driver.loaded == [b"CUBIN sm_90"]


def test_without_the_build_extra_a_missing_manifest_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_llvmlite(monkeypatch)
    m = make_module(tmp_path, write_manifest=False)
    with pytest.raises(CudaError, match="or install oxide-cuda\\[build\\] to compile kernels on first launch"):
        m.scale[1, 32](1.0, FakeArray(), FakeArray())


def test_a_recompile_without_a_toolchain_piece_runs_the_old_code_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver
) -> None:
    from oxide.errors import ToolchainError

    def jit_manifest(source_path: Path, module_name: str, arch: str) -> Path:
        raise ToolchainError("nvJitLink not found: pip install nvidia-nvjitlink")

    fake = types.ModuleType("oxide_build.jit")
    fake.jit_manifest = jit_manifest  # type: ignore[attr-defined]
    fake.tree_root = lambda source: source.parent  # type: ignore[attr-defined]
    fake.project_dir_of = lambda root: None  # type: ignore[attr-defined]  (no project: editable-rebuild's default)
    fake.editable_rebuild_enabled = lambda source: True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "oxide_build.jit", fake)
    monkeypatch.setattr(artifacts, "_build_installed", lambda: True)
    monkeypatch.delenv("OXIDE_JIT")
    m = make_module(tmp_path, sha="0" * 64)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    with pytest.warns(oxide.runtime.StaleCodeWarning) as record:
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert len(record) == 1
    assert "running the old code" in str(record[0].message)
    assert "(nvJitLink not found: pip install nvidia-nvjitlink)" in str(record[0].message)
    assert fake_driver.loaded == [b"CUBIN sm_90"]


def test_a_driver_older_than_the_toolchain_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver
) -> None:
    # issue 31: the manifest records the driver the cubins need (CUDA 13 toolchain: a CUDA 13.0
    # driver); an older driver is a message naming both, before anything is loaded
    from oxide.runtime import loader

    monkeypatch.setattr(loader, "installed_driver_release", lambda: "550.54.14")
    fake_driver.driver_version = 12040
    m = make_module(tmp_path, cuda_driver=13000)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    with pytest.raises(CudaError) as info:
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert str(info.value) == (
        f"module {m.__name__} was built with the CUDA 13 toolchain: its code needs an NVIDIA driver for CUDA 13.0 "
        "or newer (R580 or newer); this machine's driver 550.54.14, which supports CUDA 12.4. Update the NVIDIA "
        "driver, or rebuild the package with the toolchain of this driver's CUDA release (docs/toolchain.md, "
        "\"Which driver a wheel needs\")"
    )
    assert fake_driver.loaded == []


@pytest.mark.parametrize(("bindings", "driver", "warned"), [("13.5.0", 12040, True), ("13.5.0", 13000, False),
                                                          ("12.9.10", 12040, False), ("12.9.10", 13010, False)])
def test_bindings_newer_than_the_driver_warn_once(monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver,
                                                  bindings: str, driver: int, warned: bool) -> None:
    # the runtime's own bound (issue 31 item 4): cuda-bindings 13 is made for CUDA 13 drivers
    from oxide.runtime import driver_release

    monkeypatch.setattr(driver_release, "installed_driver_release", lambda: "550.54.14")
    monkeypatch.setattr(device, "_bindings_version", lambda: bindings)
    fake_driver.driver_version = driver
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        oxide.runtime.synchronize()
        oxide.runtime.synchronize()
    messages = [str(w.message) for w in caught if issubclass(w.category, device.DriverBindingsWarning)]
    if not warned:
        assert messages == []
        return
    assert messages == [
        "oxide: cuda-bindings 13.5.0, the runtime's driver bindings, is made for CUDA 13 drivers (R580 or newer); "
        "this machine's driver 550.54.14, which supports CUDA 12.4, so a driver call may fail. Update the NVIDIA "
        "driver, or install the bindings of this driver's release: pip install \"cuda-bindings>=12.8,<13\" "
        "(docs/toolchain.md, \"Which driver a wheel needs\")"
    ]


def test_a_new_enough_driver_loads(tmp_path: Path, fake_driver: FakeDriver) -> None:
    fake_driver.driver_version = 13010
    m = make_module(tmp_path, cuda_driver=13000)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert fake_driver.loaded == [b"CUBIN sm_90"]


def test_the_manifest_carries_the_driver_requirement() -> None:
    m = ModuleManifest(module="m", source="m.py", source_sha256="0" * 64, kernels=(), cubins={}, cuda_driver=12000)
    assert ModuleManifest.from_json(m.to_json()).cuda_driver == 12000
    old = ModuleManifest(module="m", source="m.py", source_sha256="0" * 64, kernels=(), cubins={})
    assert "cuda_driver" not in old.to_json()  # not recorded: written as before
    assert ModuleManifest.from_json(old.to_json()).cuda_driver == 0


def test_editable_rebuild_false_runs_the_old_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver
) -> None:
    # [tool.oxide] editable-rebuild = false: a stale module is not recompiled, the warning says why
    import oxide_build.jit as real_jit  # before _fake_jit puts its fake in its place

    calls: list[tuple[Path, str, str]] = []
    _fake_jit(monkeypatch, tmp_path, calls)
    fake = sys.modules["oxide_build.jit"]
    fake.tree_root = real_jit.tree_root  # type: ignore[attr-defined]
    fake.project_dir_of = real_jit.project_dir_of  # type: ignore[attr-defined]
    fake.editable_rebuild_enabled = real_jit.editable_rebuild_enabled  # type: ignore[attr-defined]
    (tmp_path / "pyproject.toml").write_text("[tool.oxide]\neditable-rebuild = false\n")
    m = make_module(tmp_path, sha="0" * 64)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    with pytest.warns(oxide.runtime.StaleCodeWarning, match=r"set \[tool.oxide\] editable-rebuild = true \(it is false\)"):
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert calls == [] and fake_driver.loaded == [b"CUBIN sm_90"]


def test_fresh_manifest_does_not_warn(tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = make_module(tmp_path)
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.scale[1, 32](1.0, FakeArray(), FakeArray())


def _helper_module(directory: Path, text: str = "def square(x):\n    return x * x\n") -> tuple[Path, str]:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "helpers.py"
    path.write_text(text)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def test_changed_device_function_module_makes_the_kernels_stale(tmp_path: Path, fake_driver: FakeDriver) -> None:
    helpers, sha = _helper_module(tmp_path / "common")
    sources = {"common/helpers.py": sha}
    fresh = make_module(tmp_path, sources=sources)
    fake_driver.signatures = {k.symbol: slot_types(k.params) for k in SAXPY_KERNELS}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh.scale[1, 32](1.0, FakeArray(), FakeArray())
    helpers.write_text(helpers.read_text() + "# changed\n")
    stale = make_module(tmp_path, sources=sources)
    with pytest.warns(oxide.runtime.StaleCodeWarning) as record:
        stale.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert len(record) == 1
    assert f"were built from a different version of {helpers}; running the old code" in str(record[0].message)
    assert fake_driver.loaded == [b"CUBIN sm_90", b"CUBIN sm_90"]


def test_dependencies_are_compared_relative_to_the_module(tmp_path: Path) -> None:
    helpers, sha = _helper_module(tmp_path / "lib")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "kernels.py").write_text("pass\n")
    manifest = ModuleManifest(
        module="pkg.kernels", source="kernels.py",
        source_sha256=hashlib.sha256(b"pass\n").hexdigest(), kernels=(), cubins={},
        sources={"../lib/helpers.py": sha, "../gone.py": "0" * 64},  # a file not there is not compared
    )  # fmt: skip
    assert ModuleManifest.from_json(manifest.to_json()) == manifest
    assert artifacts.changed_source(pkg / "kernels.py", manifest) is None
    helpers.write_text("def square(x):\n    return x * x * 1\n")
    assert artifacts.changed_source(pkg / "kernels.py", manifest) == pkg / "../lib/helpers.py"
    (pkg / "kernels.py").write_text("pass  # changed\n")
    assert artifacts.changed_source(pkg / "kernels.py", manifest) == pkg / "kernels.py"  # its own source first
    # a manifest written before the field existed reads as having no other sources
    old = json.loads(manifest.to_json())
    del old["sources"]
    assert ModuleManifest.from_json(json.dumps(old)).sources == {}


def test_changed_device_function_module_recompiles_with_jit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_driver: FakeDriver
) -> None:
    calls: list[tuple[Path, str, str]] = []
    _fake_jit(monkeypatch, tmp_path, calls)
    helpers, sha = _helper_module(tmp_path)
    helpers.write_text("# changed since the build\n")
    m = make_module(tmp_path, sources={"helpers.py": sha})
    fake_driver.signatures = {"scale": slot_types(SAXPY_KERNELS[2].params)}
    m.scale[1, 32](1.0, FakeArray(), FakeArray())
    assert calls == [(tmp_path / f"{m.__name__}.py", m.__name__, "sm_90")]
    assert fake_driver.loaded == [b"JIT sm_90"]


def test_compiled_manifest_records_the_device_function_modules(tmp_path: Path) -> None:
    pytest.importorskip("llvmlite")
    import shutil

    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import module_manifest

    project = tmp_path / "scanproj"
    shutil.copytree(Path(__file__).parent / "packages" / "scanproj", project)
    source = project / "mylib" / "sub" / "kernels.py"
    compiled = compile_module(source, "mylib.sub.kernels", CompileOptions(archs=("sm_90",), link_cubins=False), root=project)
    manifest = module_manifest(compiled)
    helpers = project / "mylib" / "helpers.py"
    assert manifest.sources.get("../helpers.py") == hashlib.sha256(helpers.read_bytes()).hexdigest()
    assert "kernels.py" not in manifest.sources  # the module's own source is source_sha256
    assert artifacts.changed_source(source, manifest) is None
    helpers.write_text(helpers.read_text() + "\n# changed\n")
    assert artifacts.changed_source(source, manifest) == source.parent / "../helpers.py"


def test_jit_cache_key_covers_the_imported_tree_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("llvmlite")
    import shutil

    from oxide_build import jit

    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    project = tmp_path / "scanproj"
    shutil.copytree(Path(__file__).parent / "packages" / "scanproj", project)
    source = project / "mylib" / "sub" / "kernels.py"
    first = jit.jit_manifest(source, "mylib.sub.kernels", "sm_90")
    assert jit.jit_manifest(source, "mylib.sub.kernels", "sm_90") == first
    helpers = project / "mylib" / "helpers.py"
    helpers.write_text(helpers.read_text() + "\n# changed\n")
    assert jit.jit_manifest(source, "mylib.sub.kernels", "sm_90") != first


def test_kernel_missing_from_manifest(tmp_path: Path) -> None:
    m = make_module(tmp_path, kernels=SAXPY_KERNELS[:2])
    with pytest.raises(CudaError, match="kernel scale is not in the compiled module"):
        m.scale[1, 32](1.0, FakeArray(), FakeArray())


def test_unreadable_manifest(tmp_path: Path) -> None:
    m = make_module(tmp_path)
    manifest_path(tmp_path, m.__name__).write_text('{"format": 99}')
    with pytest.raises(CudaError, match="cannot read the kernel manifest of module .*manifest format 99"):
        m.scale[1, 32](1.0, FakeArray(), FakeArray())


# ---------------------------------------------------------------------------------------------
# no GPU, no driver


def test_no_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class NoLibcuda:
        CUresult = real_driver.CUresult

        def cuInit(self, flags: int) -> Any:
            raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search.')

    monkeypatch.setattr(device, "_import_bindings", lambda: NoLibcuda())
    m = make_module(tmp_path)
    with pytest.raises(CudaError) as info:
        m.scale[1, 32](1.0, FakeArray(), FakeArray())
    lib = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so"
    assert str(info.value) == f"no CUDA driver found ({lib} could not be loaded): oxide kernels need an NVIDIA GPU and driver, or run them on the CPU device: OXIDE_DEVICE=cpu"
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoGpu(FakeDriver):
        def cuInit(self, flags: int) -> tuple[Any]:
            return (real_driver.CUresult.CUDA_ERROR_NO_DEVICE,)

    monkeypatch.setattr(device, "_import_bindings", lambda: NoGpu())
    with pytest.raises(CudaError) as info:
        oxide.runtime.synchronize()
    assert str(info.value) == ("no CUDA device found (cuInit: CUDA_ERROR_NO_DEVICE): oxide kernels need an NVIDIA GPU, "
                               "or run them on the CPU device: OXIDE_DEVICE=cpu")


def test_no_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Any:
        raise ImportError("No module named 'cuda'")

    monkeypatch.setattr(device, "_import_bindings", missing)
    with pytest.raises(CudaError, match=r"^cuda-bindings is not installed .*pip install cuda-bindings$"):
        oxide.runtime.DeviceArray.empty(4, "f32")


def test_other_init_errors_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(FakeDriver):
        def cuInit(self, flags: int) -> tuple[Any]:
            return (real_driver.CUresult.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,)

    monkeypatch.setattr(device, "_import_bindings", lambda: Broken())
    with pytest.raises(CudaError, match=r"^cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH \(fake description\)$"):
        device.driver()


def test_real_bindings_without_a_driver_give_one_line() -> None:
    from conftest import gpu_available

    if gpu_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(CudaError) as info:
        device.driver()
    assert "\n" not in str(info.value)
