"""Builds upstream Dao-AILab/causal-conv1d's CUDA extension (``causal_conv1d_cuda``) from its
sources with nvcc, for one arch and the (input, weight) dtypes the benchmark times, as fast as
the cores allow: every explicit instantiation of its .cu files becomes a translation unit of its
own (``torch.utils.cpp_extension.load`` compiles them in parallel with ninja), and those the
benchmark does not call are stubs that raise.

    python benchmarks/causal_conv1d_upstream_build.py UPSTREAM_DIR BUILD_DIR [--arch sm_90]

Afterwards ``BUILD_DIR`` holds ``causal_conv1d_cuda*.so``, importable with ``BUILD_DIR`` on
``sys.path``, and upstream's Python package is importable from ``UPSTREAM_DIR``.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

__all__ = ["build"]

KEEP_INPUTS = ("at::Half", "at::BFloat16")  # the dtypes the benchmark times (weight: float)


def _declaration(instantiation: str) -> str:
    """The template declaration an explicit instantiation line instantiates."""
    m = re.match(r"template void (\w+)<[^>]+>\((.*)\);", instantiation)
    assert m, instantiation
    return f"template<typename input_t, typename weight_t> void {m.group(1)}({m.group(2)});"


def _split(src: Path, out: Path, stem: str) -> list[Path]:
    """``src`` without its explicit instantiations (a header), and one TU per instantiation
    that the benchmark needs; the others become stubs in one TU."""
    text = src.read_text()
    lines = text.splitlines()
    inst = [ln for ln in lines if ln.startswith("template void ")]
    body = "\n".join(ln for ln in lines if not ln.startswith("template void "))
    header = out / f"{stem}_body.cuh"
    header.write_text(body + "\n")
    tus = []
    stubs = []
    for k, ln in enumerate(inst):
        m = re.match(r"template void (\w+)<([^,]+), ([^>]+)>\((.*)\);", ln)
        assert m, ln
        name, it, wt, params = m.groups()
        if it.strip() in KEEP_INPUTS and wt.strip() == "float":
            tu = out / f"{stem}_{k}.cu"
            tu.write_text(f'#include "{header.name}"\n{ln}\n')
            tus.append(tu)
        else:
            stubs.append(f"template<> void {name}<{it}, {wt}>({params}) "
                         f"{{ TORCH_CHECK(false, \"{name}<{it}, {wt}> was not built for the benchmark\"); }}")
    if stubs:
        tu = out / f"{stem}_stubs.cu"
        decls = sorted({_declaration(ln) for ln in inst})
        tu.write_text('#include <c10/util/BFloat16.h>\n#include <c10/util/Half.h>\n#include <c10/util/Exception.h>\n'
                      '#include <cuda_runtime.h>\n#include "causal_conv1d.h"\n' + "\n".join(decls) + "\n"
                      + "\n".join(stubs) + "\n")
        tus.append(tu)
    return tus


def build(upstream: Path, build_dir: Path, arch: str) -> float:
    from torch.utils.cpp_extension import load

    build_dir.mkdir(parents=True, exist_ok=True)
    src = build_dir / "src"
    src.mkdir(exist_ok=True)
    csrc = upstream / "csrc"
    for f in csrc.iterdir():
        if f.suffix in (".h", ".cpp"):
            (src / f.name).write_text(f.read_text())
    sources = [src / "causal_conv1d.cpp"]
    sources += _split(csrc / "causal_conv1d_fwd.cu", src, "fwd")
    sources += _split(csrc / "causal_conv1d_bwd.cu", src, "bwd")
    sources += _split(csrc / "causal_conv1d_update.cu", src, "update")
    cc = arch.removeprefix("sm_")
    flags = ["-O3", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
             "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
             "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
             "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math", "-lineinfo",
             f"-gencode=arch=compute_{cc},code=sm_{cc}"]  # upstream's setup.py flags, one arch
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 8))
    os.environ["TORCH_CUDA_ARCH_LIST"] = f"{cc[0]}.{cc[1:]}"
    start = time.perf_counter()
    load("causal_conv1d_cuda", [str(s) for s in sources], extra_cflags=["-O3"], extra_cuda_cflags=flags,
         extra_include_paths=[str(src)], build_directory=str(build_dir), verbose=False)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("upstream", type=Path)
    ap.add_argument("build_dir", type=Path)
    ap.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    seconds = build(a.upstream, a.build_dir, a.arch)
    print(f"upstream causal_conv1d_cuda built for {a.arch} in {seconds:.1f} s "
          f"(MAX_JOBS={os.environ['MAX_JOBS']}, {len(list((a.build_dir / 'src').glob('*.cu')))} CUDA TUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
