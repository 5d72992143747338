"""oxide.torch (#27): what an op declares about its inputs (``inputs={...: In(...)}``,
``check=``) and how the real kernel and the fake one both refuse what does not fit. On the CPU:
the functions compute with torch; FakeTensorMode and torch.compile stand for tracing."""
from __future__ import annotations

import uuid
from typing import Any, Optional

import pytest

torch = pytest.importorskip("torch")

import oxide.torch as oxt  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402


def ns() -> str:
    return f"oxin{uuid.uuid4().hex[:8]}"


def _axpy(**declared: oxt.In) -> oxt.Op:
    @oxt.op(f"{ns()}::axpy", inputs=declared, outputs={"out": oxt.Out(like="x")})
    def axpy(a: float, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
        torch.add(x * a, y, out=out)

    return axpy


@pytest.mark.parametrize("declared, x, y, message", [
    ({"y": oxt.In(like="x")}, torch.ones(3), torch.ones(3, dtype=torch.float64),
     r"::axpy: input 'y' is torch\.float64; it needs torch\.float32, the dtype of input 'x' \(the op's declaration, .*\.py:\d+\)"),
    ({"x": oxt.In(dtype=torch.float64)}, torch.ones(3), torch.ones(3),
     r"input 'x' is torch\.float32; it needs torch\.float64"),
    ({"x": oxt.In(dtype=(torch.float16, torch.bfloat16))}, torch.ones(3), torch.ones(3),
     r"input 'x' is torch\.float32; it needs one of torch\.float16, torch\.bfloat16"),
    ({"x": oxt.In(device="cuda")}, torch.ones(3), torch.ones(3), r"input 'x' is on cpu; it needs a tensor on cuda"),
    ({"y": oxt.In(ndim=2)}, torch.ones(3), torch.ones(3), r"input 'y' is a tensor of 1 dimensions \(shape \(3,\)\); it needs 2"),
])  # fmt: skip
def test_an_input_the_declaration_does_not_allow_is_refused_on_every_path(declared: Any, x: Any, y: Any,
                                                                           message: str) -> None:
    axpy = _axpy(**declared)
    for call in (axpy, axpy.op):  # the direct call and the dispatcher's kernel
        with pytest.raises(oxt.OpInputError, match=message):
            call(2.0, x, y)
    with pytest.raises(oxt.OpInputError, match=message):  # autograd's node runs the same checks
        axpy(2.0, x.clone().requires_grad_(x.is_floating_point()), y)
    with FakeTensorMode() as mode:  # the fake kernel: what torch.compile traces
        fx, fy = mode.from_tensor(x), mode.from_tensor(y)
        with pytest.raises(oxt.OpInputError, match=message):
            axpy(2.0, fx, fy)
    compiled = torch.compile(lambda x, y: axpy(2.0, x, y) * 2, backend="eager", fullgraph=True)
    torch._dynamo.reset()
    with pytest.raises(Exception, match=message):
        compiled(x, y)


def test_inputs_that_fit_run_and_mixed_dtypes_are_never_promoted() -> None:
    axpy = _axpy(x=oxt.In(dtype=(torch.float32, torch.float64), device="cpu", ndim=1), y=oxt.In(like="x"))
    for dtype in (torch.float32, torch.float64):
        x, y = torch.arange(3, dtype=dtype), torch.ones(3, dtype=dtype)
        assert torch.equal(axpy(2.0, x, y), x * 2 + 1) and torch.equal(axpy.op(2.0, x, y), x * 2 + 1)
    plain = _axpy()  # nothing declared: nothing checked (torch.add promotes into out's dtype)
    assert plain(1.0, torch.ones(2), torch.ones(2, dtype=torch.float64)).dtype == torch.float32
    torch.library.opcheck(axpy.op, (2.0, torch.randn(4), torch.randn(4)))


def test_an_exact_device_and_an_optional_input() -> None:
    @oxt.op(f"{ns()}::maybe", inputs={"x": oxt.In(device="cpu"), "bias": oxt.In(like="x", ndim=1)},
            outputs={"out": oxt.Out(like="x")})
    def maybe(x: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor) -> None:
        out.copy_(x if bias is None else x + bias)

    x = torch.ones(2, 3)
    assert torch.equal(maybe(x, None), x)  # None is not checked
    assert torch.equal(maybe(x, torch.ones(3)), x * 2)
    with pytest.raises(oxt.OpInputError, match=r"input 'bias' is torch\.float64; it needs torch\.float32"):
        maybe(x, torch.ones(3, dtype=torch.float64))
    exact = _axpy(x=oxt.In(device="cuda:1"))
    with pytest.raises(oxt.OpInputError, match=r"input 'x' is on cpu; it needs a tensor on cuda:1"):
        exact(1.0, torch.ones(2), torch.ones(2))


def test_a_check_function_runs_in_the_real_and_the_fake_kernel() -> None:
    def fits(x: Any, w: Any) -> None:
        if x.shape[1] != w.shape[0]:
            raise oxt.OpInputError(f"x's columns ({x.shape[1]}) must be w's rows ({w.shape[0]})")

    @oxt.op(f"{ns()}::mm", outputs={"out": oxt.Out(like="x", shape=lambda x, w: (x.shape[0], w.shape[1]))},
            check=fits)
    def mm(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
        torch.mm(x, w, out=out)

    x, w = torch.randn(2, 3), torch.randn(3, 4)
    assert torch.allclose(mm(x, w), x @ w)
    for call in (mm, mm.op):
        with pytest.raises(oxt.OpInputError, match=r"x's columns \(3\) must be w's rows \(4\)"):
            call(x, w.t())
    wt = w.t().contiguous()
    with FakeTensorMode() as mode:
        with pytest.raises(oxt.OpInputError, match=r"x's columns \(3\) must be w's rows \(4\)"):
            mm(mode.from_tensor(x), mode.from_tensor(wt))
        assert mm(mode.from_tensor(x), mode.from_tensor(w)).shape == (2, 4)
    compiled = torch.compile(lambda x, w: mm(x, w) + 1, backend="eager", fullgraph=True, dynamic=True)
    torch._dynamo.reset()
    assert torch.allclose(compiled(x, w), x @ w + 1)
    # traced with symbolic shapes: the message shows them with their values ("s27: hint = 5")
    with pytest.raises(Exception, match=r"OpInputError.*x's columns \(s\d+: hint = 5\) must be w's rows \(s\d+: hint = 4\)"):
        compiled(torch.randn(2, 5), w.t())


@pytest.mark.parametrize("declared, check, message", [
    ({"a": oxt.In(dtype=torch.float32)}, None, r"inputs\['a'\]: 'a' is not a tensor input of the op \(its tensor inputs: x, y\)"),
    ({"z": oxt.In()}, None, r"inputs\['z'\]: 'z' is not a tensor input"),
    ({"x": oxt.In(like="x")}, None, r"inputs\['x'\]: like='x' is not another tensor input"),
    ({"x": oxt.In(dtype="float32")}, None, r"dtype must be a torch\.dtype or a tuple of them; got 'float32'"),
    ({"x": oxt.In(device="gpu")}, None, r"device must be a device type \('cuda', 'cpu'\) or a device; got 'gpu'"),
    ({"x": oxt.In(ndim=-1)}, None, r"ndim must be a non-negative int"),
    ({"x": torch.float32}, None, r"inputs\['x'\]: expected an oxide.torch.In"),
    ({}, lambda x, q: None, r"check=: the check function's parameters \['q'\] are not inputs of the op"),
])  # fmt: skip
def test_constraint_declaration_errors_name_the_function(declared: Any, check: Any, message: str) -> None:
    def axpy(a: float, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
        pass

    with pytest.raises(oxt.OpDeclarationError, match=r"test_torch_op_constraints\.py:\d+: .*" + message):
        oxt.op(f"{ns()}::bad", inputs=declared, outputs={"out": oxt.Out(like="x")}, check=check)(axpy)
