"""LLTM cell: oxide (examples/lltm, operators from oxide.torch) against the same cell in CUDA C++
(the kernels of benchmarks/lltm_cuda.py compiled by NVRTC, behind C++ operators registered with
TORCH_LIBRARY: benchmarks/lltm_cpp.py) and in pure PyTorch. Needs a GPU, PyTorch and a C++ compiler.

    python benchmarks/lltm.py --out results/

At pytorch/extension-cpp's benchmark size (batch 16, 32 features, state 128) and a larger one,
float32, it reports (medians over repetitions, CUDA events, the GPU synchronised between them):

- ``kernel_forward_us`` / ``kernel_backward_us``: the element-wise kernel alone, oxide's and CUDA
  C++'s, 200 launches captured in one CUDA graph (GPU time, no host gaps);
- ``forward_us``: one forward op (no autograd), ``backward_us``: one backward op,
  ``step_us``: forward with autograd then ``loss.backward()``, each per call over a loop;
- ``host_forward_us``: host time per forward call (the loop's wall time before it synchronises,
  at the small size, where the GPU waits for the host; the four loops taken in turn): oxide's op
  called directly, oxide's op through ``torch.ops``, the C++ op, the PyTorch cell;
- ``host_minimal_op_us``: the same for the smallest op (one input of 4096 floats, one output
  allocated like it, one launch: ``out = 2 x + x`` with examples/saxpy.py's kernel): oxide's op
  direct and through ``torch.ops``, a C++ op launching the same CUfunction, and PyTorch's own
  ``torch.add(x, x, alpha=2)``.

``--host-only`` measures the two host-time tables alone (after the correctness checks).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIZES = {"upstream": (16, 32, 128), "large": (4096, 1024, 1024)}


def _events_us(torch: Any, fn: Callable[[], None], calls: int, reps: int) -> float:
    """Median GPU+host time per call of ``fn`` over ``reps`` loops of ``calls`` calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / calls)
    return statistics.median(times)


def _host_round_robin(torch: Any, fns: dict[str, Callable[[], None]], calls: int, reps: int) -> dict[str, float]:
    """Median host time per call of each of ``fns``, their loops taken in turn (one of each per
    repetition), so that the host's drift (clock ramps, other load) weighs on all alike."""
    for fn in fns.values():
        for _ in range(10):
            fn()
    torch.cuda.synchronize()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times[k].append((time.perf_counter() - t0) * 1e6 / calls)
            torch.cuda.synchronize()
    return {k: statistics.median(v) for k, v in times.items()}


def _graph_us(torch: Any, launch: Callable[[], None], per_graph: int, reps: int) -> float:
    """GPU time per launch: ``per_graph`` launches captured in one CUDA graph, replayed."""
    launch()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(per_graph):
            launch()
    return _events_us(torch, graph.replay, 1, reps) / per_graph


class CudaKernels:
    """The NVRTC cubin loaded in PyTorch's context; raw launches through cuda.bindings."""

    def __init__(self, torch: Any) -> None:
        from cuda.bindings import driver as drv

        from benchmarks.lltm_cuda import compile_lltm_cuda
        from oxide.runtime import device, launcher

        self.drv = drv
        torch.zeros(1, device="cuda")  # PyTorch's primary context, current
        info = device.context_device(device.current_context())
        err, self.module = drv.cuModuleLoadData(compile_lltm_cuda(info.arch))
        assert int(err) == 0, err
        self.functions = {}
        for name in ("lltm_forward_f32", "lltm_backward_f32", "lltm_forward_f64", "lltm_backward_f64"):
            err, fn = drv.cuModuleGetFunction(self.module, name.encode())
            assert int(err) == 0, err
            self.functions[name] = int(fn)
        points = launcher.driver_entry_points(drv)
        assert points is not None
        self.launch_address = points[0]

    def launch(self, name: str, batch: int, state: int, tensors: list[Any], stream: int) -> None:
        words: list[Any] = [ctypes.c_int(batch), ctypes.c_int(state)]
        for t in tensors:
            words += [ctypes.c_uint64(t.data_ptr()), ctypes.c_int(t.stride(0)), ctypes.c_int(t.stride(1))]
        params = (ctypes.c_void_p * len(words))(*(ctypes.addressof(w) for w in words))
        fn = self.functions[name]
        (err,) = self.drv.cuLaunchKernel(fn, -(-state // 128), -(-batch // 2), 1, 128, 2, 1, 0, stream,
                                         ctypes.addressof(params), 0)
        assert int(err) == 0, err


def bench_minimal_op(torch: Any, cuda: CudaKernels, reps: int) -> dict[str, float]:
    """Host time per call of the smallest op, oxide's and a C++ op's (see the module docstring)."""
    import oxide.torch as oxt
    from examples.saxpy import saxpy

    def saxpy_body(a: float, x: Any, out: Any) -> None:
        saxpy[saxpy.grid_for(x.numel()), 256](a, x, x, out)

    # the hints as objects: torch is no global of this module, so their strings would not resolve
    saxpy_body.__annotations__ = {"a": float, "x": torch.Tensor, "out": torch.Tensor, "return": None}
    saxpy_op = oxt.op("oxide_bench::saxpy", outputs={"out": oxt.Out(like="x")})(saxpy_body)

    x = torch.randn(4096, device="cuda")
    expected = x * 3.0
    torch.testing.assert_close(saxpy_op(2.0, x), expected)  # loads the f32 instance in this context
    from oxide.runtime import device

    _, uid = device.current()
    assert saxpy._dispatch is not None
    instance = next(v for v in saxpy._dispatch.variants if v.spec.specialization.get("T") == "f32" and uid in v.functions)
    fn = int(instance.functions[uid])
    # the slots its entry point declares (the compiler drops the lengths its asserts make unread)
    slots = list(instance.spec.param_slots if instance.spec.param_slots is not None else range(7))
    cpp = torch.ops.lltm_cpp.saxpy
    launch = cuda.launch_address
    for got in (saxpy_op.op(2.0, x), cpp(2.0, x, fn, launch, slots), torch.add(x, x, alpha=2.0)):
        torch.testing.assert_close(got, expected)
    op = saxpy_op.op

    def no_grad(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            with torch.no_grad():
                fn()
        return run

    return _host_round_robin(torch, {
        "oxide": no_grad(lambda: saxpy_op(2.0, x)),
        "oxide_torch_ops": no_grad(lambda: op(2.0, x)),
        "cuda_cpp_op": no_grad(lambda: cpp(2.0, x, fn, launch, slots)),
        "pytorch_add": no_grad(lambda: torch.add(x, x, alpha=2.0)),
    }, 500, 3 * reps)


def bench_host(torch: Any, size: tuple[int, int, int], cuda: CudaKernels, reps: int) -> dict[str, Any]:
    """The host-time tables alone, at ``size``: the forward op's (with its correctness check) and
    the smallest op's."""
    from examples.lltm.lltm import lltm_forward, lltm_reference

    batch, features, state = size
    g = torch.Generator(device="cuda").manual_seed(0)
    stdv = 1.0 / state**0.5
    x = torch.randn(batch, features, device="cuda", generator=g)
    h, c = torch.randn(batch, state, device="cuda", generator=g), torch.randn(batch, state, device="cuda", generator=g)
    w = (torch.rand(3 * state, features + state, device="cuda", generator=g) * 2 - 1) * stdv
    b = (torch.rand(3 * state, device="cuda", generator=g) * 2 - 1) * stdv
    inputs = (x, w, b, h, c)
    cpp = torch.ops.lltm_cpp
    fwd_fn, launch = cuda.functions["lltm_forward_f32"], cuda.launch_address
    ref = lltm_reference(*(t.double() for t in inputs))
    op = lltm_forward.op
    with torch.no_grad():
        for name, got in (("oxide", lltm_forward(*inputs)[:2]), ("oxide torch.ops", op(*inputs)[:2]),
                          ("cuda", cpp.forward(*inputs, fwd_fn, launch)[:2])):
            for gt, rt in zip(got, ref):
                torch.testing.assert_close(gt.double(), rt, rtol=1e-4, atol=1e-4, msg=lambda m: f"{name}: {m}")

    def no_grad(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            with torch.no_grad():
                fn()
        return run

    row: dict[str, Any] = {"size": {"batch": batch, "features": features, "state": state}}
    row["host_forward_us"] = _host_round_robin(torch, {
        "oxide": no_grad(lambda: lltm_forward(*inputs)),
        "oxide_torch_ops": no_grad(lambda: op(*inputs)),
        "cuda_cpp_op": no_grad(lambda: cpp.forward(*inputs, fwd_fn, launch)),
        "pytorch": no_grad(lambda: lltm_reference(*inputs)),
    }, 200, 3 * reps)
    row["host_minimal_op_us"] = bench_minimal_op(torch, cuda, reps)
    return row


def bench_size(torch: Any, label: str, size: tuple[int, int, int], cuda: CudaKernels, reps: int) -> dict[str, Any]:
    from examples.lltm import kernels
    from examples.lltm.lltm import BLOCK, _grid, lltm_backward, lltm_forward, lltm_reference

    batch, features, state = size
    g = torch.Generator(device="cuda").manual_seed(0)
    stdv = 1.0 / state**0.5
    x = torch.randn(batch, features, device="cuda", generator=g)
    h, c = torch.randn(batch, state, device="cuda", generator=g), torch.randn(batch, state, device="cuda", generator=g)
    w = (torch.rand(3 * state, features + state, device="cuda", generator=g) * 2 - 1) * stdv
    b = (torch.rand(3 * state, device="cuda", generator=g) * 2 - 1) * stdv
    inputs = (x, w, b, h, c)
    grad_h, grad_c = torch.randn(batch, state, device="cuda", generator=g), torch.randn(batch, state, device="cuda", generator=g)
    cpp = torch.ops.lltm_cpp
    fwd_fn, bwd_fn, launch = cuda.functions["lltm_forward_f32"], cuda.functions["lltm_backward_f32"], cuda.launch_address

    class CppCell(torch.autograd.Function):  # as extension-cpp's Python wrapper over its C++ ops
        @staticmethod
        def forward(ctx: Any, input: Any, weights: Any, bias: Any, old_h: Any, old_cell: Any) -> Any:
            outputs = cpp.forward(input, weights, bias, old_h, old_cell, fwd_fn, launch)
            new_h, new_cell = outputs[:2]
            ctx.save_for_backward(*outputs[1:], weights)
            return new_h, new_cell

        @staticmethod
        def backward(ctx: Any, gh: Any, gc: Any) -> Any:
            d_old_h, d_input, d_weights, d_bias, d_old_cell = cpp.backward(
                gh.contiguous(), gc.contiguous(), *ctx.saved_tensors, bwd_fn, launch)
            return d_input, d_weights, d_bias, d_old_h, d_old_cell

    # correctness of the three against float64 before timing anything
    ref = lltm_reference(*(t.double() for t in inputs))
    with torch.no_grad():
        for name, got in (("oxide", lltm_forward(*inputs)[:2]), ("cuda", cpp.forward(*inputs, fwd_fn, launch)[:2])):
            for gt, rt in zip(got, ref):
                torch.testing.assert_close(gt.double(), rt, rtol=1e-4, atol=1e-4, msg=lambda m: f"{name} {label}: {m}")

    with torch.no_grad():
        saved = lltm_forward(*inputs)
    new_cell, ig, og, cc, X, gates = saved[1:]
    ox_bwd_args = (grad_h, grad_c, new_cell, ig, og, cc, X, gates, w)
    d_ox = lltm_backward(*ox_bwd_args)
    d_cpp = cpp.backward(*ox_bwd_args, bwd_fn, launch)
    for a, b2 in zip(d_ox, d_cpp):
        torch.testing.assert_close(a, b2, rtol=1e-4, atol=1e-4)

    # the element-wise kernels alone
    outs5 = [torch.empty_like(c) for _ in range(5)]
    d_gates = torch.empty_like(gates)
    d_cell = torch.empty_like(c)
    grid = _grid(batch, state)
    gate_blocks = (gates[:, :state], gates[:, state:2 * state], gates[:, 2 * state:])
    d_blocks = (d_gates[:, :state], d_gates[:, state:2 * state], d_gates[:, 2 * state:])
    fwd_launch = kernels.lltm_forward[grid, BLOCK]
    bwd_launch = kernels.lltm_backward[grid, BLOCK]

    def ox_fwd_kernel() -> None:
        fwd_launch(*gate_blocks, c, *outs5)

    def ox_bwd_kernel() -> None:
        bwd_launch(grad_h, grad_c, new_cell, ig, og, cc, *gate_blocks, d_cell, *d_blocks)

    def cu_fwd_kernel() -> None:
        cuda.launch("lltm_forward_f32", batch, state, [gates, c, *outs5], torch.cuda.current_stream().cuda_stream)

    def cu_bwd_kernel() -> None:
        cuda.launch("lltm_backward_f32", batch, state, [grad_h, grad_c, new_cell, ig, og, cc, gates, d_cell, *d_blocks],
                    torch.cuda.current_stream().cuda_stream)

    row: dict[str, Any] = {"size": {"batch": batch, "features": features, "state": state}}
    per_graph = 200
    row["kernel_forward_us"] = {"oxide": _graph_us(torch, ox_fwd_kernel, per_graph, reps),
                                "cuda": _graph_us(torch, cu_fwd_kernel, per_graph, reps)}
    row["kernel_backward_us"] = {"oxide": _graph_us(torch, ox_bwd_kernel, per_graph, reps),
                                 "cuda": _graph_us(torch, cu_bwd_kernel, per_graph, reps)}

    calls = 200 if batch * state < 1 << 20 else 20

    def step(cell: Callable[..., Any]) -> Callable[[], None]:
        leaves = [t.detach().clone().requires_grad_() for t in inputs]

        def run() -> None:
            new_h, new_c = cell(*leaves)
            ((new_h * grad_h).sum() + (new_c * grad_c).sum()).backward()
        return run

    def no_grad(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            with torch.no_grad():
                fn()
        return run

    ox_cell = lambda *a: lltm_forward(*a)[:2]  # noqa: E731
    fwd = {
        "oxide": no_grad(lambda: lltm_forward(*inputs)),
        "cuda": no_grad(lambda: cpp.forward(*inputs, fwd_fn, launch)),
        "pytorch": no_grad(lambda: lltm_reference(*inputs)),
    }
    row["forward_us"] = {k: _events_us(torch, f, calls, reps) for k, f in fwd.items()}
    row["backward_us"] = {
        "oxide": _events_us(torch, lambda: lltm_backward(*ox_bwd_args), calls, reps),
        "cuda": _events_us(torch, lambda: cpp.backward(*ox_bwd_args, bwd_fn, launch), calls, reps),
    }
    row["step_us"] = {
        "oxide": _events_us(torch, step(ox_cell), calls, reps),
        "cuda": _events_us(torch, step(CppCell.apply), calls, reps),
        "pytorch": _events_us(torch, step(lltm_reference), calls, reps),
    }
    row["backward_us"]["pytorch"] = row["step_us"]["pytorch"] - _events_us(
        torch, step_forward_only(torch, lltm_reference, inputs), calls, reps)
    if label == "upstream":
        op = lltm_forward.op
        row["host_forward_us"] = _host_round_robin(torch, {
            "oxide": fwd["oxide"],
            "oxide_torch_ops": no_grad(lambda: op(*inputs)),
            "cuda_cpp_op": fwd["cuda"],
            "pytorch": fwd["pytorch"],
        }, calls, 3 * reps)
    return row


def bench_kernels(torch: Any, label: str, size: tuple[int, int, int], cuda: CudaKernels, reps: int) -> dict[str, Any]:
    """The element-wise kernels alone, round-robin: oxide's index32 instance (what a launch with
    these tensors runs), oxide's kernel as written (64-bit offsets, launched through the Python
    path told that the tensors do not fit) and CUDA C++, each a CUDA graph of 200 launches,
    replayed in turn ``reps`` times; µs per launch, medians."""
    from examples.lltm import kernels
    from oxide.runtime import arguments

    batch, _, state = size
    g = torch.Generator(device="cuda").manual_seed(0)
    gates = torch.randn(batch, 3 * state, device="cuda", generator=g)
    c, grad_h, grad_c, new_cell, ig, og, cc = (torch.randn(batch, state, device="cuda", generator=g) for _ in range(7))
    outs5 = [torch.empty_like(c) for _ in range(5)]
    d_gates, d_cell = torch.empty_like(gates), torch.empty_like(c)
    grid = (-(-state // 128), -(-batch // 2))
    blocks = tuple(gates[:, k * state:(k + 1) * state] for k in range(3))
    d_blocks = tuple(d_gates[:, k * state:(k + 1) * state] for k in range(3))
    fwd_args = (*blocks, c, *outs5)
    bwd_args = (grad_h, grad_c, new_cell, ig, og, cc, *blocks, d_cell, *d_blocks)

    def wide(kernel: Any, args: tuple[Any, ...]) -> Callable[[], None]:
        def launch() -> None:
            fits, arguments.fits_index32 = arguments.fits_index32, lambda views: False
            try:
                kernel._launch(args, (grid[0], grid[1], 1), (128, 2, 1), torch.cuda.current_stream().cuda_stream, 0)
            finally:
                arguments.fits_index32 = fits
        return launch

    launches = {
        "forward": {"oxide": lambda: kernels.lltm_forward[grid, (128, 2)](*fwd_args),
                    "oxide_64bit": wide(kernels.lltm_forward, fwd_args),
                    "cuda": lambda: cuda.launch("lltm_forward_f32", batch, state, [gates, c, *outs5],
                                                torch.cuda.current_stream().cuda_stream)},
        "backward": {"oxide": lambda: kernels.lltm_backward[grid, (128, 2)](*bwd_args),
                     "oxide_64bit": wide(kernels.lltm_backward, bwd_args),
                     "cuda": lambda: cuda.launch("lltm_backward_f32", batch, state,
                                                 [grad_h, grad_c, new_cell, ig, og, cc, gates, d_cell, *d_blocks],
                                                 torch.cuda.current_stream().cuda_stream)},
    }
    per_graph = 200
    row: dict[str, Any] = {"size": {"batch": batch, "state": state}}
    for which, fns in launches.items():
        graphs = {}
        for name, launch in fns.items():
            launch()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(per_graph):
                    launch()
            graphs[name] = graph
        for graph in graphs.values():
            graph.replay()
        torch.cuda.synchronize()
        times: dict[str, list[float]] = {name: [] for name in graphs}
        for _ in range(reps):
            for name, graph in graphs.items():
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                graph.replay()
                end.record()
                end.synchronize()
                times[name].append(start.elapsed_time(end) * 1000.0 / per_graph)
        row[f"kernel_{which}_us"] = {name: statistics.median(v) for name, v in times.items()}
    return row


def step_forward_only(torch: Any, cell: Callable[..., Any], inputs: tuple[Any, ...]) -> Callable[[], None]:
    leaves = [t.detach().clone().requires_grad_() for t in inputs]

    def run() -> None:
        cell(*leaves)
    return run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory for lltm.json")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--sizes", default=",".join(SIZES), help="comma-separated: " + ", ".join(SIZES))
    ap.add_argument("--kernels-only", action="store_true",
                    help="only the element-wise kernels, round-robin: oxide's index32 instance, oxide's kernel as "
                         "written (64-bit offsets) and CUDA C++ (no C++ operators to build)")
    ap.add_argument("--host-only", action="store_true", help="the host-time tables alone (small size)")
    ap.add_argument("--cpp-lib", type=Path, help="the C++ operators' library, built already (benchmarks/lltm_cpp.py)")
    args = ap.parse_args(argv)
    import torch

    if args.kernels_only:
        cuda = CudaKernels(torch)
        results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sizes": {}}
        for label in args.sizes.split(","):
            row = bench_kernels(torch, label, SIZES[label], cuda, args.reps)
            results["sizes"][label] = row
            print(f"\n== {label} {SIZES[label]} (batch, features, state), float32, kernels alone: µs per launch")
            for key in ("kernel_forward_us", "kernel_backward_us"):
                v = row[key]
                print(f"  {key:20s} " + "  ".join(f"{k}={x:8.3f}" for k, x in v.items()) +
                      f"   C++/oxide {v['cuda'] / v['oxide']:.3f}x, C++/oxide_64bit {v['cuda'] / v['oxide_64bit']:.3f}x")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "lltm_kernels.json").write_text(json.dumps(results, indent=2))
        return 0

    from benchmarks.lltm_cpp import build_lltm_cpp

    t0 = time.perf_counter()
    torch.ops.load_library(str(args.cpp_lib or build_lltm_cpp()))
    print(f"C++ operators built in {time.perf_counter() - t0:.1f} s")
    cuda = CudaKernels(torch)
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "sizes": {}}
    for label in ["upstream"] if args.host_only else args.sizes.split(","):
        if args.host_only:
            row = bench_host(torch, SIZES[label], cuda, args.reps)
        else:
            row = bench_size(torch, label, SIZES[label], cuda, args.reps)
            row["host_minimal_op_us"] = bench_minimal_op(torch, cuda, args.reps) if label == "upstream" else {}
        results["sizes"][label] = row
        print(f"\n== {label} {SIZES[label]} (batch, features, state), float32: µs")
        for key, values in row.items():
            if key == "size":
                continue
            print(f"  {key:20s} " + "  ".join(f"{k}={v:8.2f}" for k, v in values.items()))
        if "kernel_forward_us" in row:
            kb = row["kernel_backward_us"]
            kf = row["kernel_forward_us"]
            print(f"  kernel speed oxide vs CUDA C++: forward {kf['cuda'] / kf['oxide']:.3f}x, "
                  f"backward {kb['cuda'] / kb['oxide']:.3f}x (>1: oxide faster)")
        for key, what in (("host_forward_us", "forward call"), ("host_minimal_op_us", "minimal op call")):
            if row.get(key):
                hf = row[key]
                print(f"  host per {what}, oxide / C++ op: {hf['oxide'] / hf['cuda_cpp_op']:.3f} "
                      f"(through torch.ops: {hf['oxide_torch_ops'] / hf['cuda_cpp_op']:.3f})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lltm.json").write_text(json.dumps(results, indent=2))
    print(f"wrote {out / 'lltm.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
