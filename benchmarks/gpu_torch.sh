#!/usr/bin/env bash
# PyTorch and CuPy on a GPU host (#17), in one go: the LLTM benchmark, the launch overhead with
# PyTorch and CuPy arrays (the current stream read per launch, and given), then the GPU tests of
# framework streams, oxide.torch and the LLTM example (two pytest processes side by side).
# From the repository root, after `pip install -e .` and `python setup.py build_ext --inplace`:
#
#     OUT=/some/dir bash benchmarks/gpu_torch.sh
#
# Writes summary.txt, lltm_bench.txt, lltm.json, overhead.txt, launch_overhead.json,
# tests_streams.txt and tests_lltm.txt into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu_torch}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
status=0

step() {  # step NAME SECONDS COMMAND...: output into $OUT/NAME.txt, its tail shown
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    local rc=$?
    echo "$name: rc=$rc in $((SECONDS - t0)) s" | tee -a "$OUT/summary.txt"
    [ "$rc" -eq 0 ] || status=1
    return "$rc"
}

step lltm_bench "${LLTM_LIMIT:-80}" $PY benchmarks/lltm.py --out "$OUT" --reps 9
tail -30 "$OUT/lltm_bench.txt"
step overhead "${OVERHEAD_LIMIT:-40}" $PY benchmarks/launch_overhead.py --out "$OUT" --launches 5000 --reps 9 \
    --only floor,oxide-torch,oxide-torch-given-stream,oxide-cupy,oxide-cupy-given-stream,oxide-devicearray
grep -E "^p4|^  (floor|oxide)|/floor" "$OUT/overhead.txt" | head -30

PYTEST="$PY -m pytest -q -rs -p no:cacheprovider"
step tests_lltm "${TESTS_LIMIT:-140}" $PYTEST tests/test_lltm_gpu.py &
lltm_pid=$!
step tests_streams "${TESTS_LIMIT:-140}" bash -c "$PYTEST tests/test_framework_streams_gpu.py tests/test_framework_streams.py \
    tests/test_torch_ops.py && OXIDE_PURE_PYTHON=1 $PYTEST tests/test_framework_streams_gpu.py"
wait "$lltm_pid" || status=1
for f in tests_streams tests_lltm; do echo "== $f"; tail -15 "$OUT/$f.txt"; done
cat "$OUT/summary.txt"
exit $status
