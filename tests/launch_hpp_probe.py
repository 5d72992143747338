"""What ``oxide/launch.hpp`` answers when C++ host code asks a module for its kernels: a tiny
C++ program built with g++ against the shipped header opens a module's manifest and calls
``Module::kernel`` for each name, printing ``accepted NAME`` or ``refused: <what>``."""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from oxide.runtime.manifest import KernelSpec, ModuleManifest

__all__ = ["needs_cxx", "launch_hpp_answers"]

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")

_MAIN = r"""
#include <oxide/launch.hpp>
#include <iostream>
int main(int argc, char** argv) {
  oxide::Module m = oxide::Module::open(argv[1], "MODULE");
  for (const char* name : {NAMES}) {
    try {
      m.kernel(name);
      std::cout << "accepted " << name << "\n";
    } catch (const oxide::Error& e) {
      std::cout << "refused: " << e.what() << "\n";
    }
  }
}
"""


def launch_hpp_answers(tmp_path: Path, module: str, kernels: Sequence[KernelSpec], names: Sequence[str]) -> list[str]:
    """The lines ``launch.hpp`` gives for ``names`` of a module ``module`` whose manifest holds
    ``kernels`` (a stand-in sm_90 cubin name: ``Module::kernel`` reads the manifest only)."""
    import oxide

    artifacts = tmp_path / "_oxide"
    artifacts.mkdir()
    manifest = ModuleManifest(module, f"{module}.py", "0" * 64, tuple(kernels), {"sm_90": f"{module}.sm_90.cubin"})
    (artifacts / f"{module}.json").write_text(manifest.to_json())
    source = _MAIN.replace("MODULE", module).replace("NAMES", ", ".join(f'"{n}"' for n in names))
    (tmp_path / "main.cpp").write_text(source)
    include = Path(oxide.__file__).parent / "include"
    subprocess.run(["g++", "-std=c++17", "-I", str(include), "-o", str(tmp_path / "main"), str(tmp_path / "main.cpp"),
                    "-ldl"], check=True)
    return subprocess.run([str(tmp_path / "main"), str(artifacts)], check=True, capture_output=True,
                          text=True).stdout.splitlines()
