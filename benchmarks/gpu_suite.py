"""The kernel benchmarks: each example in oxide, CUDA C++ (NVRTC) and numba-cuda, side by side.

Every benchmark draws fresh random inputs, checks each implementation's output against a
torch reference (float64 where rounding matters) with the output poisoned (NaN) first, and only
then times it. Each implementation is measured in its own try/except: a failure is recorded
with its message and the others still run. All versions use the same launch geometry.
"""
from __future__ import annotations

import importlib
import math
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from benchmarks.env import DeviceInfo, Unavailable, device_info, require_torch
from benchmarks.timing import GpuTimer

__all__ = ["KERNEL_BENCHMARKS", "GpuContext", "run_kernel_benchmark", "measure_ceilings", "finalize_record",
           "measure_library", "LIBRARY_TARGETS"]

KERNEL_RATIO_TARGET = 0.98  # issue 3: each example ≥ 0.98× the same algorithm in CUDA C++
BOUNDS_CHECK_TARGET = 0.98  # issue 3: bounds-checked within 2% of unchecked
# issue 28 item 4: the fast oxide kernel ("oxide_fast") at least as fast as the library op a user
# would call instead ("library"); benchmark name -> (target ratio, the op)
LIBRARY_TARGETS: dict[str, tuple[float, str]] = {"saxpy": (1.0, "torch.add"), "softmax": (1.0, "torch.softmax")}


@dataclass
class GpuContext:
    """What the kernel benchmarks share: torch, the timer, the compiled baselines (built once)."""

    torch: Any
    timer: GpuTimer
    runs: int
    quick: bool
    device: DeviceInfo
    tmp: Path
    restrict: bool = True
    ceilings: dict[str, float] = field(default_factory=dict)
    _cuda: Any = None
    _cuda_error: Exception | None = None
    _numba: Any = None
    _numba_error: Exception | None = None

    @classmethod
    def create(cls, runs: int, quick: bool, restrict: bool = True) -> GpuContext:
        torch = require_torch()
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 references and the cuBLAS ceiling
        torch.backends.cudnn.allow_tf32 = False
        tmp = Path(tempfile.mkdtemp(prefix="oxide-bench-"))
        return cls(torch=torch, timer=GpuTimer(torch), runs=runs, quick=quick, device=device_info(), tmp=tmp,
                   restrict=restrict)

    @property
    def arch(self) -> str:
        return self.device.arch

    def cuda(self) -> Any:
        """The C++ kernels (``benchmarks.kernels_cuda``), compiled on first use."""
        if self._cuda is None and self._cuda_error is None:
            try:
                from benchmarks.kernels_cuda import compile_cuda_kernels

                self._cuda = compile_cuda_kernels(restrict=self.restrict)
            except Exception as e:
                self._cuda_error = e
        if self._cuda_error is not None:
            raise self._cuda_error
        return self._cuda

    def numba(self) -> Any:
        if self._numba is None and self._numba_error is None:
            try:
                from benchmarks.kernels_numba import build_numba_kernels

                self._numba = build_numba_kernels()
            except Exception as e:
                self._numba_error = e
        if self._numba_error is not None:
            raise self._numba_error
        return self._numba

    def nb(self, tensor: Any) -> Any:
        """A numba device array over ``tensor``'s memory (no copy, no stream sync)."""
        cuda = self.numba().cuda
        try:
            return cuda.as_cuda_array(tensor, sync=False)
        except TypeError:  # an older numba without the sync option
            return cuda.as_cuda_array(tensor)


def ptr(t: Any) -> np.uint64:
    """A tensor's device pointer as a kernel argument for CuPy's RawKernel."""
    return np.uint64(t.data_ptr())


# ---- checks ------------------------------------------------------------------------------------

def check_close(out: Any, ref: Any, rtol: float, atol: float, what: str) -> None:
    """Every element of ``out`` finite and within ``atol + rtol*|ref|`` of ``ref``."""
    torch = require_torch()
    out64 = out.double()
    ref64 = ref.double()
    if not bool(torch.isfinite(out64).all()):
        bad = int((~torch.isfinite(out64)).sum())
        raise AssertionError(f"{what}: {bad} elements not finite (unwritten or NaN)")
    err = (out64 - ref64).abs()
    tol = atol + rtol * ref64.abs()
    if not bool((err <= tol).all()):
        idx = int(torch.argmax(err - tol))
        raise AssertionError(
            f"{what}: {int((err > tol).sum())} elements off; worst at {idx}: got {float(out64.flatten()[idx])!r}, "
            f"expected {float(ref64.flatten()[idx])!r}"
        )


def check_equal(out: Any, ref: Any, what: str) -> None:
    torch = require_torch()
    if not torch.equal(out, ref):
        diff = int((out != ref).sum())
        raise AssertionError(f"{what}: {diff} elements differ from the reference")


# ---- one record --------------------------------------------------------------------------------

@dataclass
class Record:
    """A kernel benchmark's result under construction (``to_dict`` is what results.json holds)."""

    name: str
    size: str
    metric: str  # "GB/s" or "TFLOP/s"
    work: float  # bytes or flops of one run
    work_note: str
    ceiling_key: str  # "copy_gbps" or "cublas_tflops"
    impls: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # checked implementations waiting to be timed, round-robin (time_pending): impl -> run, note
    pending: dict[str, tuple[Callable[[], None], str]] = field(default_factory=dict)

    def throughput(self, median_ms: float) -> float:
        scale = 1e9 if self.metric == "GB/s" else 1e12
        return self.work / (median_ms * 1e-3) / scale

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "size": self.size, "metric": self.metric, "work": self.work,
            "work_note": self.work_note, "ceiling_key": self.ceiling_key, "impls": self.impls, "notes": self.notes,
        }


def measure(ctx: GpuContext, rec: Record, impl: str, build: Callable[[], Callable[[], None]],
            check: Callable[[Callable[[], None]], None], note: str = "") -> None:
    """Builds ``impl``'s run function and checks its result; it is timed with the record's other
    contenders, taking turns (``time_pending``). A failure is recorded now."""
    entry: dict[str, Any]
    try:
        run = build()
        check(run)
        rec.pending[impl] = (run, note)
        return
    except Unavailable as e:
        entry = {"status": "skipped", "reason": str(e)}
    except Exception as e:
        entry = {"status": "error", "error": f"{type(e).__name__}: {e}",
                 "traceback": traceback.format_exc(limit=6)[-3000:]}
    if note:
        entry["note"] = note
    rec.impls[impl] = entry
    status = entry["status"]
    detail = f"{entry['median_ms']:.4f} ms, {entry['throughput']:.1f} {rec.metric}" if status == "ok" else \
        entry.get("reason") or entry.get("error", "")
    print(f"  {rec.name:<10} {impl:<16} {status:<7} {detail}", flush=True)


def measure_library(ctx: GpuContext, rec: Record, op: str, build: Callable[[], Callable[[], None]],
                    check: Callable[[Callable[[], None]], None]) -> None:
    """Measures the library call a user would make instead of the kernel (a torch op, named by
    ``op``, e.g. ``"torch.add(y, x, alpha=a, out=out)"``) as the contender ``library``: checked
    like the others, then timed with them round-robin. ``finalize_record`` gives the ratio of
    ``oxide_fast`` (``oxide`` where the record has no fast kernel) to it."""
    measure(ctx, rec, "library", build, check, op)


def time_pending(ctx: GpuContext, rec: Record) -> None:
    """Times every checked implementation of ``rec`` round-robin and records each."""
    if not rec.pending:
        return
    stats = ctx.timer.time_round_robin({impl: run for impl, (run, _) in rec.pending.items()}, ctx.runs)
    for impl, (_, note) in rec.pending.items():
        s = stats[impl]
        entry: dict[str, Any] = {"status": "ok", **s.to_dict(), "throughput": rec.throughput(s.median_ms)}
        if note:
            entry["note"] = note
        rec.impls[impl] = entry
        print(f"  {rec.name:<10} {impl:<16} ok      {s.median_ms:.4f} ms, {entry['throughput']:.1f} {rec.metric}",
              flush=True)
    rec.pending.clear()


def _throughput(rec: dict[str, Any], impl: str) -> float | None:
    e = rec.get("impls", {}).get(impl)
    if e and e.get("status") == "ok":
        return float(e["throughput"])
    return None


def finalize_record(rec: dict[str, Any], ceilings: dict[str, float]) -> dict[str, Any]:
    """Adds ratios, fraction of the ceiling and the target verdicts to a record's dict."""
    ox = _throughput(rec, "oxide")
    cxx = _throughput(rec, "cuda")
    nb = _throughput(rec, "numba")
    ceiling = ceilings.get(rec.get("ceiling_key", ""))
    rec["ceiling"] = ceiling
    rec["fraction_of_ceiling"] = ox / ceiling if ox and ceiling else None
    rec["ratio_cuda"] = ox / cxx if ox and cxx else None
    rec["ratio_numba"] = ox / nb if ox and nb else None
    unchecked = _throughput(rec, "oxide_unchecked")
    rec["ratio_checked_unchecked"] = ox / unchecked if ox and unchecked else None
    python_fn = _throughput(rec, "oxide_python")
    rec["ratio_lto_python"] = ox / python_fn if ox and python_fn else None
    impls = rec.get("impls", {})
    fast = _throughput(rec, "oxide_fast") if "oxide_fast" in impls else ox
    library = _throughput(rec, "library")
    rec["ratio_library"] = fast / library if fast and library else None
    rec["ratio_simple_library"] = ox / library if ox and library else None
    targets: dict[str, dict[str, Any]] = {
        "ratio_cuda": {"min": KERNEL_RATIO_TARGET, "value": rec["ratio_cuda"],
                       "what": f"oxide ≥ {KERNEL_RATIO_TARGET}× CUDA C++"},
    }
    if "library" in impls and rec.get("name") in LIBRARY_TARGETS:
        minimum, op = LIBRARY_TARGETS[rec["name"]]
        targets["ratio_library"] = {"min": minimum, "value": rec["ratio_library"],
                                    "what": f"oxide fast kernel ≥ {minimum}× {op}"}
    if "oxide_unchecked" in rec.get("impls", {}):
        targets["ratio_checked_unchecked"] = {"min": BOUNDS_CHECK_TARGET, "value": rec["ratio_checked_unchecked"],
                                              "what": "bounds checks cost ≤ 2%"}
    if "oxide_python" in rec.get("impls", {}):
        targets["ratio_lto_python"] = {"min": KERNEL_RATIO_TARGET, "value": rec["ratio_lto_python"],
                                       "what": "C++ function through LTO as fast as the same function in Python"}
    if "oxide_lookback" in rec.get("impls", {}):  # scan: the single-pass scan against torch.cumsum (CUB)
        lookback, cumsum = _throughput(rec, "oxide_lookback"), _throughput(rec, "torch_cumsum")
        rec["ratio_lookback_torch"] = lookback / cumsum if lookback and cumsum else None
        targets["ratio_lookback_torch"] = {"min": 1.0, "value": rec["ratio_lookback_torch"],
                                           "what": "single-pass look-back scan ≥ torch.cumsum (CUB)"}
    for t in targets.values():
        t["met"] = None if t["value"] is None else bool(t["value"] >= t["min"])
    rec["targets"] = targets
    return rec


# ---- the benchmarks ----------------------------------------------------------------------------

def measure_three(ctx: GpuContext, rec: Record, check: Callable[[Callable[[], None]], None], example: str,
                  kernel: str, grid: int | tuple[int, ...], block: int | tuple[int, ...], args: tuple[Any, ...]) -> None:
    """Measures ``examples.<example>.<kernel>`` in oxide, and the CUDA C++ and numba kernels of
    the same name, each launched on ``grid``/``block`` with ``args``: tensors, and ints that
    CUDA C++ takes as i32."""
    grid3 = grid if isinstance(grid, tuple) else (grid,)
    block3 = block if isinstance(block, tuple) else (block,)

    def oxide() -> Callable[[], None]:
        k = getattr(importlib.import_module(f"examples.{example}"), kernel)[grid, block]
        return lambda: k(*args)

    def cuda() -> Callable[[], None]:
        fn = ctx.cuda().function(kernel)
        cargs = tuple(np.int32(a) if isinstance(a, int) else ptr(a) for a in args)
        return lambda: fn(grid3, block3, cargs)

    def numba() -> Callable[[], None]:
        k = getattr(ctx.numba(), kernel)[grid, block]
        nargs = tuple(a if isinstance(a, int) else ctx.nb(a) for a in args)
        return lambda: k(*nargs)

    measure(ctx, rec, "oxide", oxide, check)
    measure(ctx, rec, "cuda", cuda, check)
    measure(ctx, rec, "numba", numba, check)


def _grid1(n: int, block: int) -> int:
    return (n + block - 1) // block


def bench_saxpy(ctx: GpuContext) -> Record:
    torch = ctx.torch
    n = 1 << 28
    rec = Record("saxpy", "2^28 f32", "GB/s", 12.0 * n, "12 B/elem (read x, y; write out)", "copy_gbps")
    a = 1.7
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty(n, device="cuda")
    ref = torch.add(y, x, alpha=a)
    block, grid = 256, _grid1(n, 256)

    def check(run: Callable[[], None]) -> None:
        out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        check_close(out, ref, 1e-5, 1e-5, "saxpy")

    def oxide(kernel_name: str) -> Callable[[], Callable[[], None]]:
        def build() -> Callable[[], None]:
            import examples.saxpy as m

            k = getattr(m, kernel_name)[grid, block]
            return lambda: k(a, x, y, out)
        return build

    def cuda() -> Callable[[], None]:
        kk = ctx.cuda()
        args = (np.float32(a), ptr(x), np.int64(n), ptr(y), np.int64(n), ptr(out), np.int64(n))
        fn = kk.function("saxpy")
        return lambda: fn((grid,), (block,), args)

    def numba() -> Callable[[], None]:
        k = ctx.numba().saxpy[grid, block]
        xs, ys, os_ = ctx.nb(x), ctx.nb(y), ctx.nb(out)
        a32 = np.float32(a)
        return lambda: k(a32, xs, ys, os_)

    def fast(blocks_per_sm: int | None) -> Callable[[], Callable[[], None]]:
        def build() -> Callable[[], None]:
            import examples.saxpy as m

            per_sm = m.BLOCKS_PER_SM if blocks_per_sm is None else blocks_per_sm
            g = m.fast_grid(n, ctx.device.sm_count, per_sm)
            k = m.saxpy_fast[g, m.BLOCK]
            return lambda: k(a, x, y, out)
        return build

    def library() -> Callable[[], None]:
        return lambda: torch.add(y, x, alpha=a, out=out)

    measure(ctx, rec, "oxide", oxide("saxpy"), check)
    measure(ctx, rec, "oxide_unchecked", oxide("saxpy_unchecked"), check)
    measure(ctx, rec, "cuda", cuda, check)
    measure(ctx, rec, "numba", numba, check)
    measure(ctx, rec, "oxide_fast", fast(None), check,
            "examples/saxpy.py saxpy_fast: 16-byte accesses, 4 vectors in flight a thread, fast_grid's blocks "
            "(BLOCKS_PER_SM: None, one block a tile)")
    measure(ctx, rec, "oxide_fast_4sm", fast(4), check, "saxpy_fast on 4 blocks per SM walking the tiles (tuning: not in the ratios)")
    measure_library(ctx, rec, "torch.add(y, x, alpha=a, out=out)", library, check)
    return rec


def bench_reduce(ctx: GpuContext) -> Record:
    torch = ctx.torch
    n = 1 << 28
    rec = Record("reduce", "2^28 f32", "GB/s", 4.0 * n, "4 B/elem (read x)", "copy_gbps")
    x = torch.rand(n, device="cuda") + 0.5
    out = torch.zeros(1, device="cuda")
    ref = x.sum(dtype=torch.float64)
    block, grid = 256, ctx.device.sm_count * 8
    rec.notes.append(f"grid {grid} blocks (8 per SM) of {block}, grid-stride loop")

    def check(run: Callable[[], None]) -> None:
        out.zero_()
        run()
        torch.cuda.synchronize()
        check_close(out.double(), ref.reshape(1), 1e-4, 0.0, "block_sum")

    def oxide() -> Callable[[], None]:
        from examples.reduce import block_sum

        k = block_sum[grid, block]
        return lambda: k(x, out)

    def cuda() -> Callable[[], None]:
        fn = ctx.cuda().function("block_sum")
        args = (ptr(x), np.int64(n), ptr(out))
        return lambda: fn((grid,), (block,), args)

    def numba() -> Callable[[], None]:
        k = ctx.numba().block_sum[grid, block]
        xs, os_ = ctx.nb(x), ctx.nb(out)
        return lambda: k(xs, os_)

    from benchmarks.kernels_numba import NUMBA_NOTES

    measure(ctx, rec, "oxide", oxide, check)
    measure(ctx, rec, "cuda", cuda, check)
    measure(ctx, rec, "numba", numba, check, NUMBA_NOTES["block_sum"])
    rec.notes.append("the accumulator is not reset between timed runs (one atomicAdd per block either way)")
    return rec


SCAN_BLOCK = 1024


def _scan_levels(n: int) -> list[int]:
    """The block-sum buffer sizes the recursive scan needs: [blocks of n, blocks of that, ...]."""
    sizes = []
    while True:
        blocks = _grid1(n, SCAN_BLOCK)
        sizes.append(blocks)
        if blocks <= 1:
            return sizes
        n = blocks


def bench_scan(ctx: GpuContext) -> Record:
    torch = ctx.torch
    n = 1 << 26
    rec = Record("scan", "2^26 f32", "GB/s", 8.0 * n, "8 B/elem (read x, write out; the algorithm moves 16)",
                 "copy_gbps")
    x = torch.rand(n, device="cuda")
    out = torch.empty(n, device="cuda")
    ref = torch.cumsum(x.double(), 0)
    levels = _scan_levels(n)
    # scratch for every level, allocated once: (block sums, scanned block sums) per level
    scratch = {m: [torch.empty(m, device="cuda"), torch.empty(m, device="cuda")] for m in levels}
    rec.notes.append(f"{SCAN_BLOCK}-thread blocks; levels of block sums: {levels}; scratch preallocated")

    def pool() -> Callable[[int], Any]:
        used: dict[int, int] = {}

        def empty_like(m: int) -> Any:
            k = used.get(m, 0)
            used[m] = k + 1
            return scratch[m][k % 2]
        return empty_like

    def check(run: Callable[[], None]) -> None:
        out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        check_close(out, ref, 1e-4, 1e-3, "inclusive_scan")

    def oxide() -> Callable[[], None]:
        from examples.scan import inclusive_scan

        return lambda: inclusive_scan(x, out, pool())

    def cuda() -> Callable[[], None]:
        kk = ctx.cuda()
        scan_blocks, add_offsets = kk.function("scan_blocks"), kk.function("add_block_offsets")

        def scan(xs: Any, outs: Any, empty_like: Callable[[int], Any]) -> None:
            m = xs.numel()
            blocks = _grid1(m, SCAN_BLOCK)
            sums = empty_like(blocks)
            scan_blocks((blocks,), (SCAN_BLOCK,), (ptr(xs), np.int64(m), ptr(outs), np.int64(outs.numel()), ptr(sums)))
            if blocks > 1:
                scanned = empty_like(blocks)
                scan(sums, scanned, empty_like)
                add_offsets((blocks,), (SCAN_BLOCK,), (ptr(scanned), ptr(outs), np.int64(outs.numel())))

        return lambda: scan(x, out, pool())

    def numba() -> Callable[[], None]:
        nbk = ctx.numba()
        wrapped = {id(t): ctx.nb(t) for t in [x, out] + [t for pair in scratch.values() for t in pair]}

        def scan(xs: Any, outs: Any, empty_like: Callable[[int], Any]) -> None:
            m = xs.numel()
            blocks = _grid1(m, SCAN_BLOCK)
            sums = empty_like(blocks)
            nbk.scan_blocks[blocks, SCAN_BLOCK](wrapped[id(xs)], wrapped[id(outs)], wrapped[id(sums)])
            if blocks > 1:
                scanned = empty_like(blocks)
                scan(sums, scanned, empty_like)
                nbk.add_block_offsets[blocks, SCAN_BLOCK](wrapped[id(scanned)], wrapped[id(outs)])

        return lambda: scan(x, out, pool())

    def oxide_lookback(tile: int, vecs: int) -> Callable[[], Callable[[], None]]:
        def build() -> Callable[[], None]:
            from examples.scan import LookbackState, inclusive_scan_lookback

            # the status words and epoch kept between calls, as a user would: no init launch
            state = LookbackState(lambda m: torch.zeros(m, dtype=torch.int64, device="cuda"))
            return lambda: inclusive_scan_lookback(x, out, state, tile, vecs)
        return build

    def torch_cumsum() -> Callable[[], None]:
        return lambda: torch.cumsum(x, 0, out=out)

    measure(ctx, rec, "oxide", oxide, check)
    measure(ctx, rec, "cuda", cuda, check)
    measure(ctx, rec, "numba", numba, check)
    from examples.scan import LB_TILE, LB_VECS

    # the default build (examples/scan.py LB_TILE, LB_VECS: 8192 floats a tile, 128 threads x 64) is
    # oxide_lookback, the one ratio_lookback_torch compares; the other 8192-float tiles (256 x 32,
    # 512 x 16), the fastest 4096-float build of the last round (128 x 32) and 64 x 64
    others = ((8192, 8), (8192, 4), (4096, 8), (4096, 16))
    builds = [(LB_TILE, LB_VECS)] + [b for b in others if b != (LB_TILE, LB_VECS)]
    for tile, vecs in builds:
        threads = tile // (4 * vecs)
        suffix = "" if (tile, vecs) == (LB_TILE, LB_VECS) else f"_{threads}x{4 * vecs}"
        measure(ctx, rec, f"oxide_lookback{suffix}", oxide_lookback(tile, vecs), check,
                f"single pass, decoupled look-back (examples/scan.py scan_lookback): tiles of {threads} threads x "
                f"{4 * vecs} floats, epoch-tagged status words (no init launch)")
    measure(ctx, rec, "torch_cumsum", torch_cumsum, check, "torch.cumsum(x, 0, out=out): CUB's DeviceScan")
    return rec


def bench_histogram(ctx: GpuContext) -> Record:
    torch = ctx.torch
    n = 1 << 28
    rec = Record("histogram", "2^28 u8, 256 bins", "GB/s", 1.0 * n, "1 B/elem (read data)", "copy_gbps")
    data = torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda")
    hist = torch.zeros(256, dtype=torch.int32, device="cuda")
    ref = torch.bincount(data, minlength=256).to(torch.int32)
    block, grid = 256, ctx.device.sm_count * 8
    rec.notes.append(f"grid {grid} blocks (8 per SM) of {block}, grid-stride loop; uniform random bytes")

    def check(run: Callable[[], None]) -> None:
        hist.zero_()
        run()
        torch.cuda.synchronize()
        check_equal(hist, ref, "histogram")

    def oxide() -> Callable[[], None]:
        from examples.histogram import histogram

        if not hasattr(torch, "uint32"):
            raise Unavailable("this torch has no uint32 dtype for the u32 histogram")
        h32 = hist.view(torch.uint32)
        k = histogram[grid, block]
        return lambda: k(data, h32)

    def cuda() -> Callable[[], None]:
        fn = ctx.cuda().function("histogram")
        args = (ptr(data), np.int64(n), ptr(hist))
        return lambda: fn((grid,), (block,), args)

    def numba() -> Callable[[], None]:
        k = ctx.numba().histogram[grid, block]
        ds, hs = ctx.nb(data), ctx.nb(hist).view(np.uint32)
        return lambda: k(ds, hs)

    measure(ctx, rec, "oxide", oxide, check)
    measure(ctx, rec, "cuda", cuda, check)
    measure(ctx, rec, "numba", numba, check)
    return rec


def bench_transpose(ctx: GpuContext) -> Record:
    torch = ctx.torch
    rows = cols = 16384
    n = rows * cols
    rec = Record("transpose", "16384² f32", "GB/s", 8.0 * n, "8 B/elem (read, write)", "copy_gbps")
    x = torch.randn(n, device="cuda")
    out = torch.empty(n, device="cuda")
    ref = x.view(rows, cols).t().contiguous().view(-1)
    grid, block = ((cols + 31) // 32, (rows + 31) // 32), (32, 8)

    def check(run: Callable[[], None]) -> None:
        out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        check_equal(out, ref, "transpose")

    measure_three(ctx, rec, check, "transpose", "transpose", grid, block, (x, rows, cols, out))
    return rec


def bench_softmax(ctx: GpuContext) -> Record:
    torch = ctx.torch
    rows, cols = 16384, 4096
    n = rows * cols
    rec = Record("softmax", "16384×4096 f32", "GB/s", 8.0 * n, "8 B/elem (read x once, write out)", "copy_gbps")
    x = torch.randn(n, device="cuda") * 4
    out = torch.empty(n, device="cuda")
    ref = torch.softmax(x.view(rows, cols).double(), dim=1).view(-1)
    grid, block = rows, 256

    def check(run: Callable[[], None]) -> None:
        out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        check_close(out, ref, 1e-5, 1e-7, "softmax_rows")

    measure_three(ctx, rec, check, "softmax", "softmax_rows", grid, block, (x, cols, out))

    def fast() -> Callable[[], None]:
        from examples.softmax import fast_launch, softmax_rows4

        threads, vpt = fast_launch(cols)
        k = softmax_rows4[rows, threads]
        x4, out4 = x.view(-1, 4), out.view(-1, 4)
        return lambda: k(x4, cols // 4, out4, vpt)

    x2 = x.view(rows, cols)
    result: list[Any] = [None]

    def library() -> Callable[[], None]:
        def run() -> None:
            result[0] = torch.softmax(x2, dim=1)
        return run

    def check_library(run: Callable[[], None]) -> None:
        result[0] = None
        run()
        torch.cuda.synchronize()
        check_close(result[0].view(-1), ref, 1e-5, 1e-7, "torch.softmax")

    measure(ctx, rec, "oxide_fast", fast, check,
            "examples/softmax.py softmax_rows4: the row in registers (16-byte loads, 4 vectors a thread at 4096), "
            "one read and one write")
    measure_library(ctx, rec, "torch.softmax(x, dim=1) (allocates its output, as a user's call does)", library,
                    check_library)
    return rec


def bench_stencil(ctx: GpuContext) -> Record:
    torch = ctx.torch
    rows = cols = 16384
    n = rows * cols
    rec = Record("stencil", "16384² f32", "GB/s", 8.0 * n, "8 B/elem (read x once, write out)", "copy_gbps")
    x = torch.randn(n, device="cuda")
    out = torch.empty(n, device="cuda")
    x2 = x.view(rows, cols)
    ref2 = x2.clone()
    ref2[1:-1, 1:-1] = 0.25 * (x2[:-2, 1:-1] + x2[2:, 1:-1] + x2[1:-1, :-2] + x2[1:-1, 2:])
    ref = ref2.view(-1)
    del ref2
    grid, block = ((cols + 31) // 32, (rows + 7) // 8), (32, 8)

    def check(run: Callable[[], None]) -> None:
        out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        check_close(out, ref, 1e-5, 1e-6, "stencil5")

    measure_three(ctx, rec, check, "stencil", "stencil5", grid, block, (x, rows, cols, out))
    return rec


def bench_sgemm(ctx: GpuContext) -> Record:
    torch = ctx.torch
    m = n = k = 4096
    rec = Record("sgemm", "4096³ f32", "TFLOP/s", 2.0 * m * n * k, "2·M·N·K", "cublas_tflops")
    a = torch.randn(m * k, device="cuda")
    b = torch.randn(k * n, device="cuda")
    c = torch.empty(m * n, device="cuda")
    ref = (a.view(m, k).double() @ b.view(k, n).double()).view(-1)
    grid, block = ((n + 31) // 32, (m + 31) // 32), (32, 32)

    def check(run: Callable[[], None]) -> None:
        c.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        check_close(c, ref, 1e-4, 1e-4 * math.sqrt(k), "sgemm")

    def oxide(unchecked: bool) -> Callable[[], Callable[[], None]]:
        def build() -> Callable[[], None]:
            if unchecked:
                from benchmarks.temp_packages import build_sgemm_unchecked

                kern = build_sgemm_unchecked(ctx.tmp / "unchecked", ctx.arch).sgemm
            else:
                from examples.sgemm import sgemm as kern
            launch = kern[grid, block]
            return lambda: launch(a, b, m, n, k, c)
        return build

    def cuda() -> Callable[[], None]:
        fn = ctx.cuda().function("sgemm")
        args = (ptr(a), ptr(b), np.int32(m), np.int32(n), np.int32(k), ptr(c))
        return lambda: fn(grid, block, args)

    def numba() -> Callable[[], None]:
        kern = ctx.numba().sgemm[grid, block]
        as_, bs, cs = ctx.nb(a), ctx.nb(b), ctx.nb(c)
        return lambda: kern(as_, bs, m, n, k, cs)

    measure(ctx, rec, "oxide", oxide(False), check)
    measure(ctx, rec, "oxide_unchecked", oxide(True), check,
            "examples/sgemm.py compiled with @ox.kernel(bounds_check=False) into a temporary package")
    measure(ctx, rec, "cuda", cuda, check)
    measure(ctx, rec, "numba", numba, check)
    return rec


def bench_lto(ctx: GpuContext) -> Record:
    """A Python kernel calling a C++ device function through LTO (out = a*x + b)."""
    torch = ctx.torch
    n = 1 << 28
    rec = Record("lto", "2^28 f32", "GB/s", 8.0 * n, "8 B/elem (read x, write out)", "copy_gbps")
    a, bconst = 1.7, -0.3
    x = torch.randn(n, device="cuda")
    out = torch.empty(n, device="cuda")
    ref = x * a + bconst
    block, grid = 256, _grid1(n, 256)
    state: dict[str, Any] = {}

    def package() -> tuple[Any, Path]:
        if "pkg" not in state:
            from benchmarks.temp_packages import build_lto_package

            try:
                state["pkg"] = build_lto_package(ctx.tmp / "lto", ctx.arch)
            except ImportError as e:
                raise Unavailable(f"oxide_build cannot build @ox.extern modules here: {e}") from None
        return state["pkg"]

    def check(run: Callable[[], None]) -> None:
        out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        check_close(out, ref, 1e-5, 1e-5, "axpb")

    def oxide(kernel_name: str) -> Callable[[], Callable[[], None]]:
        def build() -> Callable[[], None]:
            mod, _ = package()
            launch = getattr(mod, kernel_name)[grid, block]
            return lambda: launch(a, x, bconst, out)
        return build

    def cuda() -> Callable[[], None]:
        fn = ctx.cuda().function("axpb_cpp")
        args = (np.float32(a), ptr(x), np.int64(n), np.float32(bconst), ptr(out), np.int64(n))
        return lambda: fn((grid,), (block,), args)

    def numba() -> Callable[[], None]:
        from benchmarks.kernels_numba import build_numba_lto_kernel

        _, cu = package()
        xs, os_ = ctx.nb(x), ctx.nb(out)
        a32, b32 = np.float32(a), np.float32(bconst)
        try:
            kern = build_numba_lto_kernel(cu, lto=True)
            kern[grid, block](a32, xs, b32, os_)
            torch.cuda.synchronize()
            rec.notes.append("numba: ox_axpb linked with lto=True (numba-ABI wrapper)")
        except Exception as e:
            kern = build_numba_lto_kernel(cu, lto=False)
            rec.notes.append(f"numba: linked without LTO ({type(e).__name__}: {str(e)[:160]})")
        launch = kern[grid, block]
        return lambda: launch(a32, xs, b32, os_)

    measure(ctx, rec, "oxide", oxide("axpb_cpp"), check, "Python kernel, C++ device function, LTO by nvJitLink")
    measure(ctx, rec, "oxide_python", oxide("axpb_python"), check, "the same kernel with the function in Python")
    measure(ctx, rec, "cuda", cuda, check)
    measure(ctx, rec, "numba", numba, check)
    return rec


KERNEL_BENCHMARKS: dict[str, Callable[[GpuContext], Record]] = {
    "saxpy": bench_saxpy,
    "reduce": bench_reduce,
    "scan": bench_scan,
    "histogram": bench_histogram,
    "transpose": bench_transpose,
    "softmax": bench_softmax,
    "stencil": bench_stencil,
    "sgemm": bench_sgemm,
    "lto": bench_lto,
}


def run_kernel_benchmark(ctx: GpuContext, name: str) -> dict[str, Any]:
    """Runs one kernel benchmark; any failure outside the per-implementation guards becomes an
    error record. GPU memory is returned to the pool afterwards."""
    try:
        record = KERNEL_BENCHMARKS[name](ctx)
        time_pending(ctx, record)
        rec = record.to_dict()
        rec["status"] = "ok" if any(e.get("status") == "ok" for e in rec["impls"].values()) else "error"
    except Unavailable as e:
        rec = {"name": name, "status": "skipped", "reason": str(e), "impls": {}}
    except Exception as e:
        rec = {"name": name, "status": "error", "error": f"{type(e).__name__}: {e}",
               "traceback": traceback.format_exc(limit=8)[-3000:], "impls": {}}
        print(f"  {name}: error: {type(e).__name__}: {e}", flush=True)
    finally:
        try:
            ctx.torch.cuda.synchronize()
            ctx.torch.cuda.empty_cache()
        except Exception:
            pass
    return finalize_record(rec, ctx.ceilings)


def measure_ceilings(ctx: GpuContext) -> dict[str, Any]:
    """Device-to-device copy bandwidth (torch ``copy_``, read + write bytes) and fp32 cuBLAS
    (``torch.matmul``, TF32 off), timed like the kernels."""
    torch = ctx.torch
    out: dict[str, Any] = {}
    try:
        n = 1 << 28
        src = torch.rand(n, device="cuda")
        dst = torch.empty(n, device="cuda")
        dst.copy_(src)
        torch.cuda.synchronize()
        if not torch.equal(dst, src):
            raise AssertionError("copy_ result differs from its source")
        stats = ctx.timer.time(lambda: dst.copy_(src), ctx.runs)
        ctx.ceilings["copy_gbps"] = 8.0 * n / (stats.median_ms * 1e-3) / 1e9
        out["copy"] = {"status": "ok", "size": "2^28 f32 (read + write 8 B/elem)", **stats.to_dict(),
                       "gbps": ctx.ceilings["copy_gbps"]}
        del src, dst
    except Exception as e:
        out["copy"] = {"status": "error", "error": f"{type(e).__name__}: {e}"}
    try:
        m = 4096
        a = torch.randn(m, m, device="cuda")
        b = torch.randn(m, m, device="cuda")
        c = torch.matmul(a, b)
        ref = a.double() @ b.double()
        check_close(c, ref, 1e-4, 1e-4 * math.sqrt(m), "cuBLAS sgemm")
        stats = ctx.timer.time(lambda: torch.matmul(a, b, out=c), ctx.runs)
        ctx.ceilings["cublas_tflops"] = 2.0 * m**3 / (stats.median_ms * 1e-3) / 1e12
        out["cublas"] = {"status": "ok", "size": "4096³ fp32, TF32 off", **stats.to_dict(),
                         "tflops": ctx.ceilings["cublas_tflops"]}
    except Exception as e:
        out["cublas"] = {"status": "error", "error": f"{type(e).__name__}: {e}"}
    torch.cuda.empty_cache()
    for key, v in out.items():
        print(f"  ceiling {key:<8} {v.get('status')} "
              f"{v.get('gbps', v.get('tflops', v.get('error', '')))}", flush=True)
    return out
