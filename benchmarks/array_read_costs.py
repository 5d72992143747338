"""What reading one array costs from Python, per attribute (ns per read, median of repetitions).

    python benchmarks/array_read_costs.py            # on a GPU host with torch and/or CuPy

The C launcher reads each array argument through some of these; this script says which reads
are cheap on the host at hand (the figures differ by a factor of ~1.5 between our H200 hosts).
Each figure is ``timeit`` of the expression on one 1-D float32 array of 1024 elements minus the
empty statement, median of 15 repetitions of 200,000 reads.
"""
from __future__ import annotations

import statistics
import sys
import timeit

N = 200_000
REPS = 15


def cost(stmt: str, env: dict) -> float:
    base = [timeit.timeit("pass", number=N, globals=env) for _ in range(REPS)]
    runs = [timeit.timeit(stmt, number=N, globals=env) for _ in range(REPS)]
    return (statistics.median(runs) - statistics.median(base)) / N * 1e9


def report(title: str, env: dict, stmts: list[str]) -> None:
    print(f"\n{title}")
    for s in stmts:
        try:
            print(f"  {cost(s, env):8.1f} ns  {s}")
        except Exception as e:  # noqa: BLE001 - a read this version lacks
            print(f"  {'-':>8}     {s}  ({type(e).__name__}: {e})")


def main() -> int:
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        t = torch.rand(1024, device="cuda")
        env = {"t": t, "torch": torch, "to_dlpack": torch._C._to_dlpack, "T": torch.Tensor}
        report(f"torch {torch.__version__}", env, [
            "to_dlpack(t)", "t.__dlpack__()", "t.data_ptr()", "T.data_ptr(t)", "t.dtype", "t.is_cuda",
            "len(t)", "t.ndim", "t.dim()", "t.is_contiguous()", "T.is_contiguous(t)", "t.stride()",
            "t.stride(0)", "t.shape", "t.size()", "t.numel()", "t.get_device()", "t.device",
            "t.storage_offset()", "t._version", "t.__cuda_array_interface__",
        ])
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        a = cupy.random.rand(1024, dtype=cupy.float32)
        env = {"a": a, "cupy": cupy}
        report(f"cupy {cupy.__version__}", env, [
            "a.shape", "a.strides", "a.dtype", "a.data", "a.data.ptr", "a.size", "a.ndim", "len(a)",
            "a._c_contiguous", "a.flags.c_contiguous", "a.device", "a.data.device_id",
            "a.__cuda_array_interface__",
        ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
