"""examples/lltm on a GPU: the oxide.torch operators against the pure-PyTorch cell computed in
float64, forward and backward, eager, under torch.compile (fullgraph, and CUDA graphs through
mode="reduce-overhead"), captured by torch.cuda.graph and on a side stream."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import devices

pytestmark = pytest.mark.gpu  # on the CPU device, with CPU tensors (torch.compile and CUDA graphs: GPU only)
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

torch = pytest.importorskip("torch")

SIZES = [(16, 32, 128), (7, 19, 131), devices.sized((300, 256, 1000), (40, 64, 300))]  # upstream's; odd; a larger one


def _inputs(batch: int, features: int, state: int, dtype: Any, seed: int) -> tuple[Any, ...]:
    device = devices.torch_device()
    g = torch.Generator(device=device).manual_seed(seed)

    def r(*shape: int, scale: float = 1.0) -> Any:
        return (torch.randn(*shape, generator=g, device=device, dtype=torch.float64) * scale).to(dtype)

    stdv = 1.0 / state**0.5
    return (r(batch, features), r(3 * state, features + state, scale=stdv), r(3 * state, scale=stdv),
            r(batch, state), r(batch, state))


def _tolerance(dtype: Any) -> dict[str, float]:
    return {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {"rtol": 1e-10, "atol": 1e-10}


def _step(cell: Any, inputs: tuple[Any, ...], grads: tuple[Any, Any]) -> tuple[Any, ...]:
    """Forward, then backward of sum(new_h * grad_h + new_cell * grad_cell): outputs and the
    gradients of every input."""
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    new_h, new_cell = cell(*leaves)
    ((new_h * grads[0]).sum() + (new_cell * grads[1]).sum()).backward()
    return (new_h.detach(), new_cell.detach(), *(t.grad for t in leaves))


def _reference(inputs: tuple[Any, ...], grads: tuple[Any, Any]) -> tuple[Any, ...]:
    from examples.lltm.lltm import lltm_reference

    as64 = tuple(t.double() for t in inputs)
    return _step(lltm_reference, as64, (grads[0].double(), grads[1].double()))


def _oxide_cell(*inputs: Any) -> tuple[Any, Any]:
    from examples.lltm.lltm import lltm_forward

    out = lltm_forward(*inputs)
    return out[0], out[1]


def _check(got: tuple[Any, ...], want: tuple[Any, ...], dtype: Any, what: str) -> None:
    names = ["new_h", "new_cell", "d_input", "d_weights", "d_bias", "d_old_h", "d_old_cell"]
    for name, g, w in zip(names, got, want):
        assert g.dtype == dtype, f"{what}: {name} is {g.dtype}"
        assert torch.isfinite(g).all(), f"{what}: {name} has non-finite values"
        torch.testing.assert_close(g.double(), w, **_tolerance(dtype), msg=lambda m: f"{what}: {name}: {m}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("size", SIZES)
def test_lltm_matches_pytorch_in_float64(size: tuple[int, int, int], dtype: Any) -> None:
    batch, features, state = size
    for seed in (1, 2):  # the first call goes through the Python launch path, the second through C
        inputs = _inputs(batch, features, state, dtype, seed)
        grads = _inputs(batch, state, state, dtype, seed + 100)[3:]
        _check(_step(_oxide_cell, inputs, grads), _reference(inputs, grads), dtype, f"eager {size} seed {seed}")


def test_lltm_backward_op_alone() -> None:
    """lltm_backward called directly (no autograd): the gradients of the cell's inputs."""
    from examples.lltm.lltm import lltm_backward, lltm_forward

    inputs = _inputs(33, 40, 257, torch.float64, 5)
    grads = _inputs(33, 257, 257, torch.float64, 6)[3:]
    with torch.no_grad():
        new_h, new_cell, ig, og, cc, X, gates = lltm_forward(*inputs)
        d_old_h, d_input, d_weights, d_bias, d_old_cell = lltm_backward(*grads, new_cell, ig, og, cc, X, gates, inputs[1])
    want = _reference(inputs, grads)
    _check((new_h, new_cell, d_input, d_weights, d_bias, d_old_h, d_old_cell), want, torch.float64, "ops")


@devices.gpu_only("torch.compile of the CUDA operators (CUDA graphs in reduce-overhead)")
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_lltm_under_torch_compile(mode: str) -> None:
    """torch.compile with fullgraph=True (a graph break raises), the backward compiled too;
    "reduce-overhead" runs the graphs as CUDA graphs (replayed on later calls)."""
    from examples.lltm.lltm import LLTM

    torch._dynamo.reset()
    cell = LLTM(48, 200).cuda().double()
    compiled = torch.compile(cell, fullgraph=True, mode=mode)
    for seed in range(4):  # the first calls record, the later ones replay
        inputs = _inputs(24, 48, 200, torch.float64, 10 + seed)
        grads = _inputs(24, 200, 200, torch.float64, 20 + seed)[3:]
        x, h, c = (t.detach().clone().requires_grad_() for t in (inputs[0], inputs[3], inputs[4]))
        cell.zero_grad()
        new_h, new_cell = compiled(x, (h, c))
        ((new_h * grads[0]).sum() + (new_cell * grads[1]).sum()).backward()
        got = (new_h.detach().clone(), new_cell.detach().clone(), x.grad, cell.weights.grad.clone(),
               cell.bias.grad.clone(), h.grad, c.grad)
        want = _reference((inputs[0], cell.weights.detach(), cell.bias.detach(), inputs[3], inputs[4]), grads)
        _check(got, want, torch.float64, f"compiled ({mode}) call {seed}")


@devices.gpu_only("CUDA graphs and streams")
def test_lltm_in_a_cuda_graph_and_on_a_side_stream() -> None:
    from examples.lltm.lltm import lltm_forward

    inputs = _inputs(64, 32, 384, torch.float32, 31)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        torch.cuda._sleep(50_000_000)  # a long wait on the side stream before the op's work
        warm = lltm_forward(*inputs)
    side.synchronize()
    want = _reference(inputs, (torch.ones_like(inputs[3]), torch.ones_like(inputs[4])))
    torch.testing.assert_close(warm[0].double(), want[0], rtol=1e-4, atol=1e-4)
    static = [t.clone() for t in inputs]
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        out = lltm_forward(*static)
    for seed in (32, 33):
        fresh = _inputs(64, 32, 384, torch.float32, seed)
        for s, f in zip(static, fresh):
            s.copy_(f)
        out[0].fill_(float("nan")), out[1].fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        want = _reference(fresh, (torch.ones_like(fresh[3]), torch.ones_like(fresh[4])))
        torch.testing.assert_close(out[0].double(), want[0], rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(out[1].double(), want[1], rtol=1e-4, atol=1e-4)
