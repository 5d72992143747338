"""Build time at scale (issue 31 item 6): one module of N element-wise kernels, one arch.

    python benchmarks/build_scale.py                       # N = 250, 500, 1000, 2000
    python benchmarks/build_scale.py --kernels 500 --jobs 2

For each N, in a fresh project and a fresh compile cache, ``oxide_build.build.compile_project``
(what a wheel build runs before packaging) timed as wall seconds: a cold build, a rebuild with
nothing changed, a rebuild after one kernel's constant changed, and one after a line was added
to a kernel (which moves the lines of every kernel after it). Prints one JSON object per N; the
goals: cold time linear in N, each edit at most 2x the no-change rebuild.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["measure", "main"]


def measure(kernels: int, jobs: int, arch: str = "sm_90") -> dict[str, Any]:
    from benchmarks.import_time import kernel_package_source
    from oxide_build.build import compile_project
    from oxide_build.config import OxideConfig

    base = Path(tempfile.mkdtemp(prefix="oxide-build-scale-"))
    previous = os.environ.get("OXIDE_CACHE_DIR")
    os.environ["OXIDE_CACHE_DIR"] = str(base / "cache")
    try:
        project = base / "proj"
        (project / "bigpkg").mkdir(parents=True)
        (project / "pyproject.toml").write_text('[project]\nname = "bigpkg"\nversion = "1"\n')
        (project / "bigpkg" / "__init__.py").write_text("")
        source = project / "bigpkg" / "ops.py"
        source.write_text(kernel_package_source(kernels))
        config = OxideConfig(arch=(arch,))
        out: dict[str, Any] = {"kernels": kernels, "jobs": jobs, "arch": arch}

        def build(label: str) -> None:
            staging = base / "staging"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            started = time.perf_counter()
            done = compile_project(project, config, staging, log=io.StringIO(), jobs=jobs)
            out[label + "_s"] = round(time.perf_counter() - started, 2)
            out[label + "_compiled_units"] = done.units - done.cached
            out["units"] = done.units

        build("cold")
        build("no_change")
        middle = kernels // 2
        source.write_text(source.read_text().replace(f"a * x[i] + {middle}.0", f"a * x[i] + {middle}.5"))
        build("edit_constant")
        source.write_text(source.read_text().replace("    i = thread.index_1d()\n", "    i = thread.index_1d()\n    j = i\n", 1))
        build("edit_add_line")
        out["edit_ratio"] = round(max(out["edit_constant_s"], out["edit_add_line_s"]) / out["no_change_s"], 2)
        out["cold_ms_per_kernel"] = round(1000 * out["cold_s"] / kernels, 1)
        return out
    finally:
        if previous is None:
            os.environ.pop("OXIDE_CACHE_DIR", None)
        else:
            os.environ["OXIDE_CACHE_DIR"] = previous
        shutil.rmtree(base, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, action="append", help="kernels in the module (repeatable; "
                        "default 250, 500, 1000, 2000)")
    parser.add_argument("--jobs", type=int, default=None, help="compile jobs (default: one per CPU)")
    args = parser.parse_args(argv)
    from oxide_build.config import default_jobs

    jobs = args.jobs or default_jobs()
    for kernels in args.kernels or [250, 500, 1000, 2000]:
        print(json.dumps(measure(kernels, jobs)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
