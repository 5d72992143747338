#!/usr/bin/env bash
# The runtime on a GPU host, in one go: the C launcher, the runtime's GPU tests (C launcher and
# pure-Python path), the launch-overhead benchmark. From the repository root:
#
#     OUT=/some/dir bash benchmarks/gpu_check.sh
#
# Writes tests.txt, tests_pure_python.txt, bench.txt and launch_overhead.json into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu_check}
mkdir -p "$OUT"
PY=${PYTHON:-python}

# The C launcher: a prebuilt one for this Python (carried), else build it here, else go without.
if ! $PY -c "import oxide.runtime._launcher" 2>/dev/null; then
    $PY setup.py build_ext --inplace >"$OUT/build_ext.txt" 2>&1 \
        || echo "could not build the C launcher (see build_ext.txt): oxide will use its Python path"
fi
$PY - <<'PY' | tee "$OUT/env.txt"
import sys
from oxide.runtime import launcher
print("python", sys.version.split()[0], "| C launcher:", "enabled" if launcher.ENABLED else "DISABLED")
for name in ("torch", "cupy", "numba", "cuda.core", "cuda.bindings", "llvmlite", "oxide_build"):
    try:
        mod = __import__(name, fromlist=["_"])
        print(f"  {name} {getattr(mod, '__version__', '')}")
    except Exception as e:
        print(f"  {name}: not importable ({type(e).__name__})")
PY

status=0
$PY -m pytest -q -rs -p no:cacheprovider tests/test_runtime_gpu.py tests/test_runtime_kernel.py tests/test_runtime_loading.py 2>&1 | tee "$OUT/tests.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
OXIDE_PURE_PYTHON=1 $PY -m pytest -q -rs -p no:cacheprovider tests/test_runtime_gpu.py 2>&1 | tee "$OUT/tests_pure_python.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
$PY benchmarks/launch_overhead.py --out "$OUT" 2>&1 | tee "$OUT/bench.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
exit $status
