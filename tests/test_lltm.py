"""examples/lltm's operators on the CPU: the oxide kernels replaced by the same math in PyTorch,
written into the views they are given, so the operators' plumbing (outputs, matmuls, gate views,
autograd, torch.compile) is checked against the pure-PyTorch cell here; tests/test_lltm_gpu.py
runs the real kernels."""
from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


class _Launch:
    def __init__(self, body: Any, launches: list[tuple[Any, Any]]) -> None:
        self.body, self.launches = body, launches

    def __getitem__(self, config: Any) -> Any:
        def run(*args: Any) -> None:
            self.launches.append(config)
            self.body(*args)
        return run


def _forward_kernel(gi: Any, go: Any, gc: Any, old_cell: Any, new_h: Any, new_cell: Any, ig: Any, og: Any, cc: Any) -> None:
    ig.copy_(torch.sigmoid(gi))
    og.copy_(torch.sigmoid(go))
    cc.copy_(torch.nn.functional.elu(gc))
    new_cell.copy_(old_cell + cc * ig)
    new_h.copy_(torch.tanh(new_cell) * og)


def _backward_kernel(grad_h: Any, grad_cell: Any, new_cell: Any, ig: Any, og: Any, cc: Any, gi: Any, go: Any, gc: Any,
                     d_old_cell: Any, d_ig: Any, d_og: Any, d_cc: Any) -> None:
    d_nc = (1 - torch.tanh(new_cell) ** 2) * og * grad_h + grad_cell
    d_old_cell.copy_(d_nc)
    s_i, s_o = torch.sigmoid(gi), torch.sigmoid(go)
    d_ig.copy_(cc * d_nc * s_i * (1 - s_i))
    d_og.copy_(torch.tanh(new_cell) * grad_h * s_o * (1 - s_o))
    d_cc.copy_(ig * d_nc * torch.where(gc > 0, torch.ones_like(gc), torch.exp(gc)))


@pytest.fixture
def lltm(monkeypatch: pytest.MonkeyPatch) -> Any:
    from examples.lltm import lltm as module

    launches: list[tuple[Any, Any]] = []
    fake = types.SimpleNamespace(lltm_forward=_Launch(_forward_kernel, launches),
                                 lltm_backward=_Launch(_backward_kernel, launches))
    monkeypatch.setattr(module, "kernels", fake)
    module.launches = launches  # type: ignore[attr-defined]
    return module


def _inputs(batch: int, features: int, state: int, seed: int) -> tuple[Any, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*shape, generator=g, dtype=torch.float64)
                 for shape in ((batch, features), (3 * state, features + state), (3 * state,), (batch, state), (batch, state)))


def test_forward_and_backward_match_the_pytorch_cell(lltm: Any) -> None:
    inputs = _inputs(5, 7, 130, 1)
    leaves = [t.clone().requires_grad_() for t in inputs]
    ref_leaves = [t.clone().requires_grad_() for t in inputs]
    new_h, new_cell = lltm.lltm_forward(*leaves)[:2]
    ref_h, ref_cell = lltm.lltm_reference(*ref_leaves)
    torch.testing.assert_close(new_h, ref_h)
    torch.testing.assert_close(new_cell, ref_cell)
    gh, gc = torch.randn_like(new_h), torch.randn_like(new_cell)
    ((new_h * gh).sum() + (new_cell * gc).sum()).backward()
    ((ref_h * gh).sum() + (ref_cell * gc).sum()).backward()
    for name, a, b in zip(["input", "weights", "bias", "old_h", "old_cell"], leaves, ref_leaves):
        torch.testing.assert_close(a.grad, b.grad, msg=lambda m: f"d_{name}: {m}")
    # one thread per (row, column): grid (ceil(state / 128), ceil(batch / 2)) of blocks (128, 2)
    assert lltm.launches == [((2, 3), (128, 2))] * 2


def test_gradcheck(lltm: Any) -> None:
    inputs = [t.requires_grad_() for t in _inputs(3, 4, 6, 2)]
    assert torch.autograd.gradcheck(lambda *a: lltm.lltm_forward(*a)[:2], inputs)


def test_the_module_compiles_without_graph_breaks(lltm: Any) -> None:
    torch._dynamo.reset()
    cell = lltm.LLTM(6, 10).double()
    compiled = torch.compile(cell, backend="aot_eager", fullgraph=True)
    x, h, c = _inputs(4, 6, 10, 3)[0], *_inputs(4, 6, 10, 3)[3:]
    new_h, new_cell = compiled(x, (h, c))
    ref_h, ref_cell = lltm.lltm_reference(x, cell.weights, cell.bias, h, c)
    torch.testing.assert_close(new_h, ref_h)
    (new_h.sum() + new_cell.sum()).backward()
    grads = [p.grad.clone() for p in cell.parameters()]
    cell.zero_grad()
    (ref_h.sum() + ref_cell.sum()).backward()
    for a, p in zip(grads, cell.parameters()):
        torch.testing.assert_close(a, p.grad)


def test_schemas() -> None:
    from examples.lltm.lltm import lltm_backward, lltm_forward

    assert lltm_forward.schema == ("(Tensor input, Tensor weights, Tensor bias, Tensor old_h, Tensor old_cell) -> "
                                   "(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)")
    assert lltm_backward.schema.endswith("Tensor weights) -> (Tensor, Tensor, Tensor, Tensor, Tensor)")
    assert lltm_forward.op is torch.ops.oxide_lltm.forward.default
