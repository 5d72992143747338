"""oxide.torch (#27): outputs autograd treats as constants (``Out(differentiable=False)``) and
temporaries (``temporaries={...: Temp(...)}``, scratch an op allocates and does not return). On
the CPU: the functions compute with torch."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import oxide.torch as oxt  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402


def ns() -> str:
    return f"oxout{uuid.uuid4().hex[:8]}"


def _clamp_op(with_setup: bool) -> oxt.Op:
    """out = clamp(x, 0, None) and the mask of where it passed (a float output, so autograd would
    track it unless it is declared non-differentiable)."""
    seen: list[Any] = []

    def backward(ctx: Any, grad_out: Any, grad_mask: Any) -> Any:
        seen.append(grad_mask)
        mask = ctx.saved_tensors[0] if with_setup else ctx.outputs[1]
        return grad_out * mask

    def setup(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(output[1])

    @oxt.op(f"{ns()}::relu", outputs={"out": oxt.Out(like="x"), "mask": oxt.Out(like="x", differentiable=False)},
            backward=backward, setup_context=setup if with_setup else None)
    def relu(x: torch.Tensor, out: torch.Tensor, mask: torch.Tensor) -> None:
        torch.clamp(x.detach(), min=0, out=out)
        torch.gt(x.detach(), 0, out=mask)

    relu.seen = seen  # type: ignore[attr-defined]
    return relu


@pytest.mark.parametrize("with_setup", [False, True])
def test_a_non_differentiable_output_never_requires_grad(with_setup: bool) -> None:
    relu = _clamp_op(with_setup)
    x = torch.randn(5, dtype=torch.float64)
    x[0] = -1.0
    for call in (relu, relu.op):  # autograd's node made here, and the dispatcher's
        xx = x.clone().requires_grad_()
        out, mask = call(xx)
        assert out.requires_grad and out.grad_fn is not None
        assert not mask.requires_grad and mask.grad_fn is None
        assert torch.equal(mask, (x > 0).double())
        (out.sum() * 3).backward()
        assert torch.equal(xx.grad, 3 * (x > 0).double())
        assert torch.equal(relu.seen[-1], torch.zeros_like(x))  # backward gets zeros for the mask
        with pytest.raises(RuntimeError, match="does not require grad"):
            mask.sum().backward()
    assert torch.autograd.gradcheck(lambda x: relu(x)[0], (x.clone().requires_grad_(),))
    torch.library.opcheck(relu.op, (x.clone().requires_grad_(),))


def test_an_op_whose_outputs_are_all_non_differentiable_needs_no_backward() -> None:
    @oxt.op(f"{ns()}::signs", outputs={"pos": oxt.Out(like="x", differentiable=False),
                                       "neg": oxt.Out(like="x", differentiable=False)})
    def signs(x: torch.Tensor, pos: torch.Tensor, neg: torch.Tensor) -> None:
        torch.gt(x.detach(), 0, out=pos)
        torch.lt(x.detach(), 0, out=neg)

    x = torch.randn(4, requires_grad=True)
    for call in (signs, signs.op):
        pos, neg = call(x)
        assert not pos.requires_grad and not neg.requires_grad
        assert torch.equal(pos, (x > 0).float()) and torch.equal(neg, (x < 0).float())


def test_some_non_differentiable_outputs_without_backward_are_a_declaration_error() -> None:
    def f(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
        pass

    with pytest.raises(oxt.OpDeclarationError, match=r"test_torch_op_outputs\.py:\d+: outputs 'b' are "
                                                     r"differentiable=False but the op has no backward="):
        oxt.op(f"{ns()}::f", outputs={"a": oxt.Out(like="x"), "b": oxt.Out(like="x", differentiable=False)})(f)
