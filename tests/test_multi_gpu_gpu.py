"""oxide in multi-GPU jobs (issue 32), on two GPUs or more; skipped with fewer.

One process per GPU (tests/multi_gpu_worker.py, spawned by torch.multiprocessing, NCCL):
DistributedDataParallel trains a module of oxide.torch operators (examples/lltm's LLTM, float64)
and its weights equal a single-GPU reference that averages the same shards' gradients;
``all_reduce`` of an oxide kernel's output; a CUDA graph captured on each device; CuPy arrays
on the last device. In this process: several GPUs at once, each with its own CUDA graph.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import devices

pytestmark = [pytest.mark.gpu, devices.gpu_only("several GPUs")]

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
torch = pytest.importorskip("torch")


def _needs_two_gpus() -> int:
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    try:
        import torch.distributed as dist
    except ImportError:
        pytest.skip("torch.distributed is not available")
    if not dist.is_nccl_available():
        pytest.skip("NCCL is not available")
    return int(torch.cuda.device_count())


@pytest.fixture(scope="module")
def spawned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The worker run once on every GPU: its output directory and the world size."""
    world = _needs_two_gpus()
    pytest.importorskip("llvmlite")  # the examples' kernels are compiled on first launch
    out = tmp_path_factory.mktemp("multi_gpu")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, str(TESTS / "multi_gpu_worker.py"), str(out), str(world)],
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return out, world


def _checks(spawned: tuple[Path, int]) -> list[dict[str, int]]:
    out, world = spawned
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]


def test_ddp_training_of_oxide_ops_equals_the_averaged_gradients_reference(spawned: tuple[Path, int]) -> None:
    import multi_gpu_worker as w

    out, world = spawned
    ranks = [torch.load(out / f"rank{r}.pt") for r in range(world)]
    for r in range(1, world):  # DDP keeps the replicas identical
        for a, b in zip(ranks[0], ranks[r]):
            assert torch.equal(a, b), f"rank {r}'s weights differ from rank 0's"
    device = torch.device("cuda", 0)
    model = w.new_model(device)
    initial = [p.detach().cpu().clone() for p in model.parameters()]
    for step in range(w.STEPS):  # every shard's gradient on one GPU, averaged, one SGD step
        total = [torch.zeros_like(p) for p in model.parameters()]
        for r in range(world):
            model.zero_grad()
            w.loss_of(model, *(t.to(device) for t in w.shard(step, r))).backward()
            for acc, p in zip(total, model.parameters()):
                acc += p.grad
        with torch.no_grad():
            for acc, p in zip(total, model.parameters()):
                p -= w.LR * (acc / world)
    for got, want, start in zip(ranks[0], model.parameters(), initial):
        want = want.detach().cpu()
        assert not torch.equal(want, start)  # it trained
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_all_reduce_of_an_oxide_kernels_output(spawned: tuple[Path, int]) -> None:
    assert [c["all_reduce"] for c in _checks(spawned)] == [0] * spawned[1]  # wrong elements, per rank


def test_cuda_graphs_captured_on_each_device(spawned: tuple[Path, int]) -> None:
    assert [c["cuda_graph"] for c in _checks(spawned)] == [0] * spawned[1]


def test_cupy_arrays_on_another_device_than_the_current(spawned: tuple[Path, int]) -> None:
    pytest.importorskip("cupy")
    first = _checks(spawned)[0]
    assert (first["cupy_on_last_device"], first["cupy_device"]) == (0, 0)


def test_several_gpus_in_one_process_each_with_a_cuda_graph() -> None:
    """One process driving every GPU: each device loads its own copy of the module, runs it
    under the tensors' device without a stream given, and replays a graph captured there."""
    world = _needs_two_gpus()
    pytest.importorskip("llvmlite")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from examples import saxpy as k

    n = 65_537
    grid = k.saxpy.grid_for(n)
    torch.cuda.set_device(0)
    graphs: list[Any] = []
    for d in range(world):
        dev = torch.device("cuda", d)
        x = torch.randn(n, device=dev)
        y = torch.randn(n, device=dev)
        out = torch.full((n,), float("nan"), device=dev)
        k.saxpy[grid, 256](1.5, x, y, out)  # cuda:0 current; launched under cuda:d
        torch.cuda.synchronize(dev)
        np.testing.assert_allclose(out.cpu().numpy(), (1.5 * x + y).cpu().numpy(), rtol=1e-6, atol=1e-6)
        with torch.cuda.device(d):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                k.saxpy[grid, 256](2.0, x, y, out)
        graphs.append((graph, x, y, out, dev))
    for graph, x, y, out, dev in graphs:
        out.fill_(float("nan"))
        x.copy_(torch.arange(n, device=dev, dtype=torch.float32))
        graph.replay()
    for graph, x, y, out, dev in graphs:
        torch.cuda.synchronize(dev)
        np.testing.assert_allclose(out.cpu().numpy(), (2.0 * x + y).cpu().numpy(), rtol=1e-6, atol=1e-6)
    assert torch.cuda.current_device() == 0


FORK = """
import os, sys
import numpy as np
sys.path.insert(0, {root!r})
from examples import saxpy as k
from oxide.runtime import DeviceArray
import oxide

def launch():
    n = 4099
    x = np.arange(n, dtype=np.float32)
    dx, dy, out = DeviceArray.from_numpy(x), DeviceArray.from_numpy(x), DeviceArray.empty(n, "f32")
    k.saxpy[k.saxpy.grid_for(n), 256](2.0, dx, dy, out)
    return bool((out.to_numpy() == 3 * x).all())

def in_child():
    pid = os.fork()
    if pid == 0:
        try:
            print("CHILD", "ok" if launch() else "wrong", flush=True)
        except oxide.CudaError as e:
            print("CHILD CudaError", str(e).splitlines()[0][:300], flush=True)
        except BaseException as e:
            print("CHILD other", type(e).__name__, str(e)[:300], flush=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("STATUS", status, flush=True)

{before}
print("PARENT", "ok" if launch() else "wrong", flush=True)
{after}
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_fork_before_and_after_cuda_is_initialized(when: str) -> None:
    """A child forked before the parent used CUDA launches normally; one forked after cannot
    use CUDA (the driver's rule): its launch raises oxide.CudaError, it does not crash or hang."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    pytest.importorskip("llvmlite")
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    script = FORK.format(root=str(ROOT), before="in_child()" if when == "before" else "",
                         after="in_child()" if when == "after" else "")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "PARENT ok" in lines and "STATUS 0" in lines, result.stdout
    child = next(line for line in lines if line.startswith("CHILD"))
    if when == "before":
        assert child == "CHILD ok", result.stdout
    else:
        assert child.startswith("CHILD CudaError"), result.stdout
