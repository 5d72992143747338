#!/usr/bin/env bash
# One GPU lease for a whole session's checks, in about 10 minutes on an H100 or H200 (16 cores):
# install the checkout, the GPU tests, the ports benchmark, and causal-conv1d against upstream
# (its CUDA extension built from source by nvcc in the background meanwhile). From the
# repository root, with upstream's sources (a checkout of Dao-AILab/causal-conv1d) in UPSTREAM:
#
#     OUT=/some/dir UPSTREAM=path/to/causal-conv1d BUDGET=575 bash benchmarks/gpu_session.sh
#
# Each step gets at most its own limit and what is left of BUDGET seconds; a step with no time
# left is skipped (times.txt says which). Logs and JSON go into $OUT.
set -u
R=$(pwd); T0=$(date +%s); END=$((T0 + ${BUDGET:-575}))
OUT=${OUT:-out/gpu_session}; mkdir -p "$OUT"
UPSTREAM=${UPSTREAM:-}
[ -n "$UPSTREAM" ] && UPSTREAM=$(cd "$UPSTREAM" && pwd)
left() { echo $(( END - $(date +%s) )); }
step() {
    local name=$1 lim=$2; shift 2
    local l; l=$(left)
    if [ "$l" -lt 15 ]; then echo "$name skipped (no time)" | tee -a "$OUT/times.txt"; return; fi
    [ "$lim" -gt "$l" ] && lim=$l
    local t; t=$(date +%s)
    timeout "$lim" "$@"
    echo "$name rc=$? $(( $(date +%s) - t ))s" | tee -a "$OUT/times.txt"
}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
step install 120 bash -c "python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . > '$OUT/install.txt' 2>&1"
step pytest_gpu 200 bash -c "python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests > '$OUT/pytest_gpu.txt' 2>&1"
tail -3 "$OUT/pytest_gpu.txt"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20
UP=
if [ -n "$UPSTREAM" ]; then
    (MAX_JOBS=10 python3 benchmarks/causal_conv1d_upstream_build.py "$UPSTREAM" /tmp/upbuild --arch sm_90 \
        > "$OUT/upbuild.txt" 2>&1; echo "upbuild rc=$?" >> "$OUT/times.txt") &
    UP=$!
    step wheel 90 bash -c "python3 -m pip install -q --no-index --no-deps --no-build-isolation ./examples/causal_conv1d > '$OUT/wheel.txt' 2>&1"
fi
step ports 170 bash -c "python3 -m benchmarks --only ports --quick --out '$OUT/ports' > '$OUT/ports.txt' 2>&1"
grep -i geomean "$OUT/ports.txt"
if [ -n "$UP" ]; then
    wait "$UP"
    step uptests 120 bash -c "cd /tmp && python3 -m pytest -q -x -n 12 -p no:cacheprovider '$R/examples/causal_conv1d/tests/test_causal_conv1d.py' > '$OUT/upstream_tests.txt' 2>&1"
    tail -2 "$OUT/upstream_tests.txt"
    step cc1d 150 bash -c "cd /tmp && python3 '$R/benchmarks/causal_conv1d_vs_upstream.py' '$UPSTREAM' /tmp/upbuild --reps 20 --json '$OUT/cc1d.json' > '$OUT/cc1d.txt' 2>&1"
    tail -30 "$OUT/cc1d.txt"
fi
cat "$OUT/times.txt"
