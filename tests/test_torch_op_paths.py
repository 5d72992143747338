"""oxide.torch (#17): which path an op call takes (the direct eager call, or the dispatcher
through ``torch.ops``), and outputs the function makes itself (``Out(returned=True)``). On the
CPU: the functions compute with torch; the GPU side is tests/test_lltm_gpu.py."""
from __future__ import annotations

import uuid
from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")

import oxide.torch as oxt  # noqa: E402


def ns() -> str:
    return f"oxpath{uuid.uuid4().hex[:8]}"


class Counted:
    """An op whose direct calls and dispatcher calls are counted apart."""

    def __init__(self, op: oxt.Op) -> None:
        self.op = op
        self.direct = 0
        self.dispatched = 0
        call, dispatch = op._call, op.op

        def counted_call(args: Any) -> Any:
            self.direct += 1
            return call(args)

        def counted_dispatch(*args: Any, **kwargs: Any) -> Any:
            self.dispatched += 1
            return dispatch(*args, **kwargs)

        op._call = counted_call  # type: ignore[method-assign]
        op.op = counted_dispatch

    def took(self) -> str:
        path = "direct" if (self.direct, self.dispatched) == (1, 0) else "dispatcher" if self.dispatched == 1 else "?"
        self.direct = self.dispatched = 0
        return path


def _scale_op(backward: bool = True) -> oxt.Op:
    def grad_of(ctx: Any, grad: Any) -> Any:
        return None, grad * ctx.inputs[0]

    @oxt.op(f"{ns()}::scale", outputs={"out": oxt.Out(like="x")}, backward=grad_of if backward else None)
    def scale(a: float, x: torch.Tensor, out: torch.Tensor) -> None:
        out.copy_(x.detach() * a)  # as a kernel writes it: no autograd inside

    return scale


def test_plain_eager_calls_are_direct() -> None:
    op = Counted(_scale_op())
    x = torch.arange(4.0)
    assert torch.equal(op.op(2.0, x), x * 2) and op.took() == "direct"
    assert torch.equal(op.op(2.0, torch.nn.Parameter(x)).detach(), x * 2) and op.took() == "direct"
    with torch.no_grad():
        assert torch.equal(op.op(2.0, x.clone().requires_grad_()), x * 2) and op.took() == "direct"


@pytest.mark.parametrize("case", ["keyword", "fake tensors", "dispatch mode", "function mode", "subclass", "vmap",
                                  "grad, no backward"])
def test_the_dispatcher_takes_every_other_call(case: str) -> None:
    """Each of these is a call the dispatcher does more for than run the function: it must see it."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    op = Counted(_scale_op(backward=case != "grad, no backward"))
    x = torch.arange(4.0)

    class Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    class SeenFunction(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    class Sub(torch.Tensor):
        pass

    if case == "keyword":
        got = op.op(2.0, x=x)
    elif case == "fake tensors":
        with FakeTensorMode() as mode:
            got = op.op(2.0, mode.from_tensor(x))
        assert type(got).__name__ == "FakeTensor" and got.shape == (4,)
        assert op.took() == "dispatcher"
        return
    elif case == "dispatch mode":
        with Seen():
            got = op.op(2.0, x)
    elif case == "function mode":
        with SeenFunction():
            got = op.op(2.0, x)
    elif case == "subclass":
        got = op.op(2.0, x.as_subclass(Sub))
    elif case == "vmap":
        got = torch.vmap(lambda row: op.op(2.0, row))(torch.stack([x, x + 1]))
        assert torch.equal(got, torch.stack([x, x + 1]) * 2) and op.took() == "dispatcher"
        return
    else:  # autograd of an op without backward=: the dispatcher's autograd kernel decides
        got = op.op(2.0, x.clone().requires_grad_())
    assert torch.equal(torch.as_tensor(got).detach(), x * 2)
    assert op.took() == "dispatcher"


# --- outputs the function returns ------------------------------------------------------------


def _cat_op(make: Callable[..., Any] | None = None) -> oxt.Op:
    def backward(ctx: Any, grad_joined: Any, grad_doubled: Any) -> Any:
        a, b = ctx.inputs
        g = grad_joined + 2 * grad_doubled
        return g[:, : a.shape[1]], g[:, a.shape[1]:]

    @oxt.op(f"{ns()}::joined", outputs={
        "joined": oxt.Out(like="a", shape=lambda a, b: (a.shape[0], a.shape[1] + b.shape[1]), returned=True),
        "doubled": oxt.Out(like="a", shape=lambda a, b: (a.shape[0], a.shape[1] + b.shape[1])),
    }, backward=backward)
    def joined(a: torch.Tensor, b: torch.Tensor, doubled: torch.Tensor) -> Any:
        j = torch.cat([a, b], dim=1) if make is None else make(a, b)
        if isinstance(j, torch.Tensor) and j.shape == doubled.shape:
            torch.mul(j, 2, out=doubled)
        return j

    return joined


def test_a_returned_output_comes_back_in_declaration_order_on_every_path() -> None:
    op = _cat_op()
    assert op.schema == "(Tensor a, Tensor b) -> (Tensor, Tensor)"
    a, b = torch.randn(3, 2, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    expected = torch.cat([a, b], dim=1)
    for call in (op, op.op):
        joined, doubled = call(a, b)
        assert torch.equal(joined, expected) and torch.equal(doubled, expected * 2)
    compiled = torch.compile(lambda a, b: op(a, b)[0] * op(a, b)[1], backend="aot_eager", fullgraph=True, dynamic=True)
    torch._dynamo.reset()
    assert torch.equal(compiled(a, b), expected * expected * 2)
    torch.library.opcheck(op.op, (a.clone().requires_grad_(), b))
    aa, bb = a.clone().requires_grad_(), b.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: op(a, b), (aa, bb))
    joined, doubled = op(aa, bb)
    (joined.sum() + doubled.sum()).backward()
    assert torch.equal(aa.grad, torch.full_like(a, 3.0)) and torch.equal(bb.grad, torch.full_like(b, 3.0))


@pytest.mark.parametrize("make, message", [
    (lambda a, b: torch.cat([a, b], dim=0), r"output 'joined' \(returned=True\) is a tensor of shape \(6, 2\)"),
    (lambda a, b: torch.cat([a, b], dim=1).float(), r"torch\.float32 .*its declaration says a contiguous tensor of shape \(3, 4\), torch\.float64"),
    (lambda a, b: torch.empty_strided((3, 4), (1, 3), dtype=torch.float64).copy_(torch.cat([a, b], dim=1)), r"not contiguous"),
    (lambda a, b: torch.cat([a, b, a, b], dim=1)[:, :4], r"is a tensor of shape \(3, 4\), torch\.float64 on cpu, not contiguous"),
    (lambda a, b: torch.cat([a, b], dim=1).t(), r"is a tensor of shape \(4, 3\)"),
    (lambda a, b: [torch.cat([a, b], dim=1)], r"is list"),
    (lambda a, b: None, r"is NoneType"),
])  # fmt: skip
def test_a_returned_output_that_differs_from_its_declaration_is_refused(make: Any, message: str) -> None:
    op = _cat_op(make)
    a, b = torch.randn(3, 2, dtype=torch.float64), torch.randn(3, 2, dtype=torch.float64)
    for call in (op, op.op):
        with pytest.raises((TypeError, RuntimeError), match=message):
            call(a, b)


def test_a_contiguous_view_of_a_fresh_intermediate_is_returned_on_every_path() -> None:
    made: list[Any] = []

    def rows(a: Any, b: Any) -> Any:  # the first 3 rows of a fresh (6, 4) tensor: a contiguous view
        m = torch.cat([torch.cat([a, b], dim=1), torch.cat([b, a], dim=1)], dim=0)
        made.append(m)
        return m[:3]

    op = _cat_op(rows)
    a, b = torch.randn(3, 2, dtype=torch.float64), torch.randn(3, 2, dtype=torch.float64)
    expected = torch.cat([a, b], dim=1)
    for call in (op, op.op):
        joined, doubled = call(a, b)
        assert torch.equal(joined, expected) and torch.equal(doubled, expected * 2)
        # the same memory as the intermediate's, but no view of it (the fake kernel's is fresh too)
        assert joined._base is None and joined.data_ptr() == made[-1].data_ptr()
    viewed = _cat_op(lambda a, b: torch.cat([a, b], dim=1).flatten().view(3, 4))
    compiled = torch.compile(lambda a, b: viewed(a, b)[0] + 1, backend="aot_eager", fullgraph=True)
    torch._dynamo.reset()
    assert torch.equal(compiled(a, b), expected + 1)
    aa = a.clone().requires_grad_()
    joined, doubled = op(aa, b)
    (joined.sum() + doubled.sum()).backward()
    assert torch.equal(aa.grad, torch.full_like(a, 3.0))
    torch.library.opcheck(op.op, (a.clone().requires_grad_(), b))


def test_a_view_of_an_input_or_of_another_output_is_refused() -> None:
    @oxt.op(f"{ns()}::head", outputs={"out": oxt.Out(like="x", shape=lambda x: (2,), returned=True)})
    def head(x: torch.Tensor) -> Any:
        return x[:2]

    @oxt.op(f"{ns()}::halves", outputs={"p": oxt.Out(like="x", shape=lambda x: (2,), returned=True),
                                        "q": oxt.Out(like="x", shape=lambda x: (2,), returned=True)})
    def halves(x: torch.Tensor) -> Any:
        both = x * 2
        return both[:2], both[2:]

    x = torch.randn(4)
    for call, message in ((head, r"output 'out' \(returned=True\) is a view of one of the op's inputs"),
                          (halves, r"output 'p' \(returned=True\) is a view of another output's memory")):
        for path in (call, call.op):
            with pytest.raises(TypeError, match=message):
                path(x)


def test_returning_an_input_is_refused() -> None:
    @oxt.op(f"{ns()}::same", outputs={"out": oxt.Out(like="x", returned=True)})
    def same(x: torch.Tensor) -> Any:
        return x

    with pytest.raises(TypeError, match=r"output 'out' \(returned=True\) is one of the op's inputs"):
        same(torch.randn(3))


def test_a_function_that_returns_the_wrong_count_is_refused() -> None:
    @oxt.op(f"{ns()}::two", outputs={"p": oxt.Out(like="x", returned=True), "q": oxt.Out(like="x", returned=True)})
    def two(x: torch.Tensor) -> Any:
        return x * 2

    with pytest.raises(TypeError, match=r"returned Tensor; it must return its returned=True outputs \(p, q\) as a tuple"):
        two(torch.randn(3))


def test_a_returned_output_is_no_parameter() -> None:
    def f(x: torch.Tensor, out: torch.Tensor) -> None:
        pass

    with pytest.raises(oxt.OpDeclarationError, match="output 'out' is returned=True: .* not a parameter of the function"):
        oxt.op(f"{ns()}::p", outputs={"out": oxt.Out(like="x", returned=True)})(f)
