"""Small packages of oxide kernels written into a temporary directory and precompiled there,
the way a wheel carries them: ``compile_module`` + ``write_module_artifacts`` put
``_oxide/<module>.json`` and the cubin next to each source, so the runtime loads them without a
JIT compile.

- ``oxbench_sgemm_unchecked``: examples/sgemm.py with ``@ox.kernel(bounds_check=False)``;
- ``oxbench_lto``: a Python kernel calling a CUDA C++ device function through LTO, and the same
  kernel with the function written in Python;
- ``oxcold``: a package with examples/saxpy.py as ``oxcold.kernels``, for the cold start.
"""
from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from types import ModuleType

from benchmarks.env import REPO

__all__ = [
    "AXPB_CU", "LTO_MODULE", "unchecked_source", "compile_into", "import_from",
    "build_sgemm_unchecked", "build_lto_package", "build_cold_package",
]

AXPB_CU = r"""// The C++ side of the LTO benchmark: a small device function the Python kernel calls.
extern "C" __device__ float ox_axpb(float a, float x, float b) { return a * x + b; }

// numba-cuda's foreign-function ABI: an int status, the result through the first pointer
extern "C" __device__ int ox_axpb_numba(float* ret, float a, float x, float b) {
    *ret = ox_axpb(a, x, b);
    return 0;
}
"""

LTO_MODULE = '''"""A Python kernel calling CUDA C++ ``ox_axpb`` (csrc/axpb.cu) through LTO-IR and nvJitLink,
and the same kernel with the function in Python."""
import oxide as ox
from oxide import DisjointSlice, Slice, f32, kernel, thread


@ox.extern("ox_axpb", sources=["csrc/axpb.cu"])
def axpb(a: f32, x: f32, b: f32) -> f32: ...


def axpb_py(a: f32, x: f32, b: f32) -> f32:
    return a * x + b


@kernel
def axpb_cpp(a: f32, x: Slice[f32], b: f32, out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = axpb(a, x[i], b)


@kernel
def axpb_python(a: f32, x: Slice[f32], b: f32, out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = axpb_py(a, x[i], b)
'''


def unchecked_source(text: str) -> str:
    """``text`` with every bare ``@ox.kernel`` / ``@kernel`` made ``(bounds_check=False)``."""
    out, count = re.subn(r"^(\s*)@(ox\.kernel|kernel)\s*$", r"\1@\2(bounds_check=False)", text, flags=re.M)
    if count == 0:
        raise ValueError("no bare @ox.kernel / @kernel decorator to turn unchecked")
    return out


def compile_into(root: Path, source: Path, module: str, arch: str, bounds_check: bool = True) -> Path:
    """Compiles ``source`` (module ``module``, under ``root``) for ``arch`` and writes its
    artifacts beside it; returns the manifest path."""
    from oxide_build.compile import CompileOptions, compile_module
    from oxide_build.package.artifacts import write_module_artifacts

    compiled = compile_module(source, module, CompileOptions(archs=(arch,), bounds_check=bounds_check), root=root)
    return write_module_artifacts(compiled, source.parent)


def import_from(root: Path, module: str) -> ModuleType:
    """Imports ``module`` with ``root`` first on ``sys.path``."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    return importlib.import_module(module)


def build_sgemm_unchecked(root: Path, arch: str) -> ModuleType:
    name = "oxbench_sgemm_unchecked"
    root.mkdir(parents=True, exist_ok=True)
    src = root / f"{name}.py"
    src.write_text(unchecked_source((REPO / "examples" / "sgemm.py").read_text()))
    compile_into(root, src, name, arch, bounds_check=False)
    return import_from(root, name)


def build_lto_package(root: Path, arch: str) -> tuple[ModuleType, Path]:
    """The LTO module, compiled; returns it and its .cu source (numba links the same file)."""
    name = "oxbench_lto"
    (root / "csrc").mkdir(parents=True, exist_ok=True)
    cu = root / "csrc" / "axpb.cu"
    cu.write_text(AXPB_CU)
    src = root / f"{name}.py"
    src.write_text(LTO_MODULE)
    compile_into(root, src, name, arch)
    return import_from(root, name), cu


COLD_START_CUT = "# ---- the fast kernel"  # examples/saxpy.py: what follows is not in the cold-start package


def build_cold_package(root: Path, arch: str) -> Path:
    """``root/oxcold/kernels.py`` (examples/saxpy.py up to its fast kernel: ``saxpy`` and
    ``saxpy_unchecked``, the module the cold-start rounds have measured) precompiled; returns
    ``root``."""
    pkg = root / "oxcold"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text('"""Precompiled kernels for the cold-start benchmark."""\n')
    src = pkg / "kernels.py"
    source = (REPO / "examples" / "saxpy.py").read_text()
    src.write_text(source.split(COLD_START_CUT)[0])
    compile_into(root, src, "oxcold.kernels", arch)
    return root
