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


def test_temporaries_are_allocated_passed_and_not_returned() -> None:
    seen: list[Any] = []

    @oxt.op(f"{ns()}::rowsum", outputs={"out": oxt.Out(like="x", shape=lambda x: (x.shape[0],))},
            temporaries={"partial": oxt.Temp(like="x", shape=lambda x: (x.shape[0], 2), dtype=torch.float64,
                                             zeroed=True),
                         "scratch": oxt.Temp(shape="x")})
    def rowsum(x: torch.Tensor, out: torch.Tensor, partial: torch.Tensor, scratch: torch.Tensor) -> None:
        seen.append((partial.clone(), partial.dtype, scratch.shape, scratch.dtype, scratch.is_contiguous()))
        half = x.shape[1] // 2
        partial[:, 0] += x[:, :half].sum(1)  # accumulates into the zeros, as atomics would
        partial[:, 1] += x[:, half:].sum(1)
        scratch.copy_(x)
        out.copy_(partial.sum(1))

    assert rowsum.schema == "(Tensor x) -> Tensor"  # temporaries are not in the schema
    x = torch.randn(3, 4)
    for call in (rowsum, rowsum.op):
        got = call(x)
        assert isinstance(got, torch.Tensor) and torch.allclose(got, x.sum(1))
        zeros, dtype, shape, scratch_dtype, contiguous = seen[-1]
        assert torch.equal(zeros, torch.zeros(3, 2, dtype=torch.float64)) and dtype == torch.float64
        assert shape == (3, 4) and scratch_dtype == torch.float32 and contiguous
    with FakeTensorMode() as mode:  # the fake kernel allocates the output only
        assert rowsum(mode.from_tensor(x)).shape == (3,)
    compiled = torch.compile(lambda x: rowsum(x) * 2, backend="eager", fullgraph=True, dynamic=True)
    torch._dynamo.reset()
    assert torch.allclose(compiled(x), x.sum(1) * 2)
    torch.library.opcheck(rowsum.op, (x,))


def test_temporaries_between_outputs_are_passed_by_name() -> None:
    @oxt.op(f"{ns()}::shuffled", outputs={"out": oxt.Out(like="x")}, temporaries={"tmp": oxt.Temp(like="x")})
    def shuffled(tmp: torch.Tensor, x: torch.Tensor, out: torch.Tensor) -> None:
        torch.mul(x, 2, out=tmp)
        torch.add(tmp, 1, out=out)

    assert shuffled.schema == "(Tensor x) -> Tensor"
    x = torch.randn(5)
    assert torch.equal(shuffled(x), x * 2 + 1) and torch.equal(shuffled.op(x), x * 2 + 1)


@pytest.mark.parametrize("temporaries, message", [
    ({"nope": oxt.Temp()}, r"temporary 'nope' is not a parameter of .*\(its parameters: x, out, t\)"),
    ({"out": oxt.Temp()}, r"'out' is both an output and a temporary"),
    ({"t": oxt.Out()}, r"temporaries\['t'\]: expected an oxide.torch.Temp"),
    ({"t": oxt.Temp(like="q")}, r"temporary 't': like='q' is not a tensor input of the op"),
])  # fmt: skip
def test_temporary_declaration_errors_name_the_function(temporaries: Any, message: str) -> None:
    def f(x: torch.Tensor, out: torch.Tensor, t: torch.Tensor) -> None:
        pass

    with pytest.raises(oxt.OpDeclarationError, match=r"test_torch_op_outputs\.py:\d+: " + message):
        oxt.op(f"{ns()}::bad", outputs={"out": oxt.Out(like="x")}, temporaries=temporaries)(f)


def test_an_output_before_an_input_is_passed_by_name() -> None:
    @oxt.op(f"{ns()}::first", outputs={"out": oxt.Out(like="x")})
    def first(out: torch.Tensor, x: torch.Tensor) -> None:
        torch.mul(x, 3, out=out)

    x = torch.randn(4)
    assert torch.equal(first(x), x * 3) and torch.equal(first.op(x), x * 3)


def test_outputs_after_positional_only_inputs_in_another_order() -> None:
    @oxt.op(f"{ns()}::pair", outputs={"a": oxt.Out(like="x"), "b": oxt.Out(like="x")},
            temporaries={"t": oxt.Temp(like="x")})
    def pair(x: torch.Tensor, /, b: torch.Tensor, t: torch.Tensor, a: torch.Tensor) -> None:
        torch.mul(x, 2, out=t)
        a.copy_(t)
        torch.add(t, 1, out=b)

    x = torch.randn(3)
    for call in (pair, pair.op):
        a, b = call(x)
        assert torch.equal(a, x * 2) and torch.equal(b, x * 2 + 1)
