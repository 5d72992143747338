"""Arch-specific targets (sm_90a, sm_100a): accepted by the configuration, compiled by both
backends to `.target sm_90a`, linked by nvJitLink, and packaged so that the runtime chooses
them (tests/test_runtime_loading.py has the runtime's rule)."""
from __future__ import annotations

from pathlib import Path

import pytest

from oxide_build.compile import CompileOptions, compile_module
from oxide_build.config import ConfigError, OxideConfig
from oxide_build.targets import SUPPORTED_ARCHS, arch_number, is_arch_specific, newest_arch

REPO = Path(__file__).resolve().parents[1]
SAXPY = REPO / "examples" / "saxpy.py"


def test_arch_names() -> None:
    assert {"sm_90a", "sm_100a"} <= set(SUPPORTED_ARCHS)
    assert arch_number("sm_90a") == 90 and arch_number("sm_120") == 120
    assert is_arch_specific("sm_90a") and not is_arch_specific("sm_90")


def test_forward_compatible_ptx_comes_from_a_portable_arch() -> None:
    assert newest_arch(("sm_80", "sm_90", "sm_90a")) == "sm_90"
    assert newest_arch(("sm_80", "sm_100a")) == "sm_80"
    assert newest_arch(("sm_90a", "sm_100a")) == "sm_100a"
    assert newest_arch(("sm_120", "sm_90a")) == "sm_120"


def test_configuration_accepts_arch_specific_targets(tmp_path: Path) -> None:
    from oxide_build.config import load_config

    (tmp_path / "pyproject.toml").write_text('[tool.oxide]\narch = ["sm_80", "sm_90", "sm_90a"]\n')
    assert load_config(tmp_path, environ={}).arch == ("sm_80", "sm_90", "sm_90a")
    (tmp_path / "pyproject.toml").write_text('[tool.oxide]\narch = ["sm_90b"]\n')
    with pytest.raises(ConfigError, match="sm_90b"):
        load_config(tmp_path, environ={})
    assert OxideConfig().arch == ("sm_80", "sm_90")


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_sm_90a_ptx_and_cubin(backend: str) -> None:
    compiled = compile_module(SAXPY, "saxpy", CompileOptions(archs=("sm_90", "sm_90a"), backend=backend,
                                                                  cache=False, embed_ptx=True))
    assert ".target sm_90a" in compiled.ptx["sm_90a"]
    assert ".target sm_90\n" in compiled.ptx["sm_90"]
    assert set(compiled.cubins) == {"sm_90", "sm_90a"}
    assert compiled.cubins["sm_90a"][:4] == b"\x7fELF"
    assert set(compiled.ptx_fallback) == {"sm_90"}  # sm_90a's PTX would JIT on sm_90 only


def test_sm_100a_links() -> None:
    compiled = compile_module(SAXPY, "saxpy", CompileOptions(archs=("sm_100a",), cache=False))
    assert ".target sm_100a" in compiled.ptx["sm_100a"]
    assert compiled.cubins["sm_100a"][:4] == b"\x7fELF"


def test_fatbin_keeps_an_arch_specific_cubin_for_the_runtime_to_choose() -> None:
    from oxide.runtime.loader import CodeChoice, select_code
    from oxide_build.package.artifacts import as_fatbin, module_files

    compiled = compile_module(SAXPY, "saxpy", CompileOptions(archs=("sm_80", "sm_90", "sm_90a"), cache=False,
                                                                  embed_ptx=True))
    manifest, files = as_fatbin(*module_files(compiled))
    assert manifest.cubins == {"sm_80": "saxpy.fatbin", "sm_90": "saxpy.fatbin", "sm_90a": "saxpy.sm_90a.cubin"}
    assert set(files) == {"saxpy.fatbin", "saxpy.sm_90a.cubin"}
    assert select_code(manifest.cubins, manifest.ptx, (9, 0)) == CodeChoice("cubin", "sm_90a", "saxpy.sm_90a.cubin")
    assert select_code(manifest.cubins, manifest.ptx, (8, 6)) == CodeChoice("cubin", "sm_80", "saxpy.fatbin")
    assert select_code(manifest.cubins, manifest.ptx, (10, 0)) == CodeChoice("ptx", "sm_90", "saxpy.fatbin")
