"""Compile time as CPU time (issue 28 item 6: no more than 10% slower), robust to a shared machine.

    python benchmarks/compile_cpu_time.py                 # the examples per kernel, a 500-kernel module
    python benchmarks/compile_cpu_time.py --kernels 100   # a smaller big module
    python benchmarks/compile_cpu_time.py --scaling 500,1000,2000   # per kernel at each size

``compile_module`` to PTX for one arch (``time.process_time`` around it, after one untimed run
that pays for importing and initialising llvmlite): the median per kernel over the examples of
``benchmarks.cpu_suite.EXAMPLES`` (medians of 3 runs each), and one module of ``--kernels``
element-wise kernels (``benchmarks.import_time.kernel_package_source``). Wall time on an idle
machine is ``python -m benchmarks --cpu-only --only compile``; this is for comparing two commits
on a loaded one. ``--scaling`` compiles only generated modules of the given kernel counts (issue 31
item 6: linear to 2,000 kernels) and reports the CPU milliseconds per kernel at each size and the
ratio of the largest size's to the smallest's (1.0: linear).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["compile_cpu_ms", "measure", "scaling", "main"]


def compile_cpu_ms(source: Path, module: str, root: Path, runs: int) -> tuple[float, int]:
    """Median CPU milliseconds of compiling ``source`` to PTX, and its number of kernels."""
    from oxide_build.compile import CompileOptions, compile_module

    options = CompileOptions(archs=("sm_90",), link_cubins=False)
    compiled = compile_module(source, module, options, root=root)
    times = []
    for _ in range(runs):
        start = time.process_time()
        compiled = compile_module(source, module, options, root=root)
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e3, len(compiled.kernels)


def measure(kernels: int, runs: int = 3) -> dict[str, Any]:
    from benchmarks.cpu_suite import EXAMPLES
    from benchmarks.import_time import kernel_package_source

    per_example = {}
    for name in EXAMPLES:
        ms, count = compile_cpu_ms(ROOT / "examples" / f"{name}.py", f"examples.{name}", ROOT, runs)
        per_example[name] = {"module_ms": round(ms, 1), "kernels": count, "per_kernel_ms": round(ms / count, 1)}
    tmp = Path(tempfile.mkdtemp(prefix="oxide-compile-"))
    big = tmp / "oxbig.py"
    big.write_text(kernel_package_source(kernels))
    big_ms, big_count = compile_cpu_ms(big, "oxbig", tmp, 1)
    return {"examples": per_example,
            "median_per_kernel_ms": statistics.median(e["per_kernel_ms"] for e in per_example.values()),
            "module_kernels": big_count, "module_ms": round(big_ms, 1)}


def scaling(sizes: Sequence[int]) -> dict[str, Any]:
    """CPU time of compiling a generated module of each of ``sizes`` kernels, once each."""
    from benchmarks.import_time import kernel_package_source

    tmp = Path(tempfile.mkdtemp(prefix="oxide-scaling-"))
    per_size = {}
    for n in sizes:
        src = tmp / f"oxscale{n}.py"
        src.write_text(kernel_package_source(n))
        ms, count = compile_cpu_ms(src, f"oxscale{n}", tmp, 1)
        per_size[str(n)] = {"module_ms": round(ms, 1), "kernels": count, "per_kernel_ms": round(ms / count, 2)}
    first, last = per_size[str(sizes[0])], per_size[str(sizes[-1])]
    return {"sizes": per_size, "per_kernel_ratio": round(last["per_kernel_ms"] / first["per_kernel_ms"], 2)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/compile_cpu_time.py", description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", type=int, default=500, help="kernels in the big module (default 500)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per example (default 3)")
    parser.add_argument("--scaling", metavar="N,N,...", help="only generated modules of these kernel counts")
    args = parser.parse_args(argv)
    if args.scaling:
        sizes = sorted(int(n) for n in args.scaling.split(","))
        print(json.dumps(scaling(sizes), indent=1))
    else:
        print(json.dumps(measure(args.kernels, args.runs), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
