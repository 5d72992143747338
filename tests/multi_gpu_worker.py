"""One process per GPU (torch.multiprocessing.spawn, NCCL), for tests/test_multi_gpu_gpu.py:

- DDP trains ``examples.lltm.LLTM`` (oxide.torch operators: oxide kernels forward and backward)
  for STEPS steps, each rank on its own shard; rank r writes its final weights to ``rank<r>.pt``;
- ``all_reduce`` of an oxide kernel's output (examples/saxpy.py), every element checked;
- a CUDA graph of that kernel captured and replayed on each rank's device;
- on rank 0, CuPy arrays on the last device launched while cuda:0 is current.

Each rank writes ``rank<r>.json``: the elements that were wrong in each check.

    python tests/multi_gpu_worker.py OUT_DIR [WORLD_SIZE]   (default: every GPU)

``shard`` and ``new_model`` are imported by the test for the single-GPU reference.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["FEATURES", "STATE", "BATCH", "STEPS", "LR", "shard", "new_model", "loss_of", "main"]

FEATURES, STATE, BATCH, STEPS, LR = 32, 64, 16, 5, 0.1


def shard(step: int, rank: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The input, hidden and cell state of ``rank``'s shard at ``step`` (on the CPU, float64)."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    return tuple(torch.randn(BATCH, n, generator=g, dtype=torch.float64)  # type: ignore[return-value]
                 for n in (FEATURES, STATE, STATE))


def new_model(device: torch.device) -> torch.nn.Module:
    """The LLTM cell, the same initial weights in every process."""
    from examples.lltm.lltm import LLTM

    torch.manual_seed(0)
    return LLTM(FEATURES, STATE).double().to(device)


def loss_of(model: Any, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    new_h, new_cell = model(x, (h, c))
    return new_h.square().sum() + 0.5 * new_cell.sum()


def _saxpy_checks(rank: int, world: int, device: torch.device) -> dict[str, int]:
    import torch.distributed as dist

    from examples import saxpy as k

    n = 100_003
    grid = k.saxpy.grid_for(n)
    i = torch.arange(n, device=device, dtype=torch.float32)
    x, y = i * (rank + 1), torch.full((n,), float(rank), device=device)
    out = torch.full((n,), float("nan"), device=device)
    k.saxpy[grid, 256](2.0, x, y, out)  # 2 * i * (rank + 1) + rank, on this rank's device
    dist.all_reduce(out)
    ranks = range(world)
    want = sum(2.0 * i * (r + 1) + r for r in ranks)  # exact in f32 below 2**24
    bad = {"all_reduce": int((out != want).sum())}

    static_x, static_out = torch.zeros(n, device=device), torch.full((n,), float("nan"), device=device)
    k.saxpy[grid, 256](3.0, static_x, y, static_out)  # loaded and warm before the capture
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # on PyTorch's capturing stream: the launch's default
        k.saxpy[grid, 256](3.0, static_x, y, static_out)
    static_out.fill_(float("nan"))
    static_x.copy_(i * 0.5)
    graph.replay()
    torch.cuda.synchronize(device)
    bad["cuda_graph"] = int((static_out != 3.0 * (i * 0.5) + y).sum())

    if rank == 0 and torch.cuda.device_count() > 1:
        try:
            import cupy as cp
        except ImportError:
            return bad
        last = torch.cuda.device_count() - 1
        with cp.cuda.Device(last):
            cx = cp.arange(n, dtype=cp.float32)
            cy = cp.ones(n, dtype=cp.float32)
            cout = cp.full(n, cp.nan, dtype=cp.float32)
        assert torch.cuda.current_device() == 0
        k.saxpy[grid, 256](2.0, cx, cy, cout)  # no stream: CuPy's current stream on that device
        with cp.cuda.Device(last):
            cp.cuda.Device(last).synchronize()
            bad["cupy_on_last_device"] = int((cout != 2.0 * cx + cy).sum())
            bad["cupy_device"] = int(cout.device.id != last)
    return bad


def _worker(rank: int, world: int, out_dir: str) -> None:
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{out_dir}/rendezvous", rank=rank, world_size=world)
    device = torch.device("cuda", rank)
    model = new_model(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=LR)
    for step in range(STEPS):
        x, h, c = (t.to(device) for t in shard(step, rank))
        optimizer.zero_grad()
        loss_of(ddp, x, h, c).backward()
        optimizer.step()
    torch.save([p.detach().cpu() for p in model.parameters()], Path(out_dir) / f"rank{rank}.pt")
    bad = _saxpy_checks(rank, world, device)
    dist.barrier()
    dist.destroy_process_group()
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(bad))


def main(argv: list[str]) -> int:
    import torch.multiprocessing as mp

    out_dir = argv[0]
    world = int(argv[1]) if len(argv) > 1 else torch.cuda.device_count()
    mp.spawn(_worker, args=(world, out_dir), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
