"""oxide.torch (#17): Python functions as PyTorch custom operators in one declaration. On the CPU
the functions compute with torch (the declaration, not the kernels, is under test); the GPU side,
with oxide kernels, is test_torch_ops_gpu.py and examples/lltm's test."""
from __future__ import annotations

import subprocess
import sys
import uuid
from typing import Any, Optional

import pytest

torch = pytest.importorskip("torch")

import oxide.torch as oxt  # noqa: E402


def ns() -> str:
    return f"oxtest{uuid.uuid4().hex[:8]}"


def test_schema_outputs_and_eager_calls() -> None:
    seen: list[tuple[Any, ...]] = []
    name = ns()

    @oxt.op(f"{name}::scaled", outputs={"out": oxt.Out(like="x")})
    def scaled(a: float, x: torch.Tensor, n: int, out: torch.Tensor) -> None:
        seen.append((a, n, out.shape, out.dtype))
        torch.mul(x, a * n, out=out)

    assert scaled.schema == "(float a, Tensor x, SymInt n) -> Tensor"  # ints may be symbolic under compile
    assert scaled.op is getattr(torch.ops, name).scaled.default
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3) + 1
    got = scaled(0.5, x, 3)
    assert torch.equal(got, x * 1.5) and got.dtype == torch.float64 and got.is_contiguous()
    assert torch.equal(scaled.op(0.5, x, 3), x * 1.5)  # the torch.ops path gives the same
    assert torch.equal(scaled(0.5, x.t(), 2), x.t() * 1.0)  # a strided input: a contiguous output
    assert seen[0] == (0.5, 3, (2, 3), torch.float64)
    assert scaled.__name__ == "scaled" and "scaled" in repr(scaled)


def test_outputs_from_shape_and_dtype_functions() -> None:
    @oxt.op(f"{ns()}::outer", outputs={
        "prod": oxt.Out(shape=lambda u, v: (u.shape[0], v.shape[0])),
        "norm": oxt.Out(like="v", shape=lambda u: (1,), dtype=torch.float64),
        "count": oxt.Out(shape=lambda u: (), dtype=lambda u: torch.int64),
    })
    def outer(u: torch.Tensor, v: torch.Tensor, prod: torch.Tensor, norm: torch.Tensor, count: torch.Tensor) -> None:
        torch.outer(u, v, out=prod)
        norm.fill_(float(prod.double().norm()))
        count.fill_(u.numel() * v.numel())

    u, v = torch.tensor([1.0, 2.0], dtype=torch.float32), torch.tensor([3.0, 4.0, 5.0], dtype=torch.float32)
    prod, norm, count = outer(u, v)
    assert torch.equal(prod, torch.outer(u, v)) and prod.dtype == torch.float32
    assert norm.dtype == torch.float64 and norm.shape == (1,) and abs(float(norm) - float(torch.outer(u, v).double().norm())) < 1e-12
    assert count.dtype == torch.int64 and count.shape == () and int(count) == 6
    assert outer.schema == "(Tensor u, Tensor v) -> (Tensor, Tensor, Tensor)"


def test_mutated_inputs_are_declared() -> None:
    @oxt.op(f"{ns()}::accumulate", mutates=["acc"])
    def accumulate(acc: torch.Tensor, x: torch.Tensor, w: Optional[torch.Tensor] = None) -> None:
        acc.add_(x if w is None else x * w)

    assert accumulate.schema == "(Tensor(a0!) acc, Tensor x, Tensor? w=None) -> ()"
    acc, x = torch.zeros(4), torch.arange(4.0)
    assert accumulate(acc, x) is None
    accumulate(acc, x, torch.full((4,), 2.0))
    assert torch.equal(acc, x * 3)

    def twice(acc: Any, x: Any) -> Any:
        accumulate(acc, x)
        return acc * 2

    acc2 = torch.zeros(4)
    out = torch.compile(twice, backend="aot_eager", fullgraph=True)(acc2, x)
    assert torch.equal(acc2, x) and torch.equal(out, x * 2)  # functionalized, then written back


def _saxpy_op() -> Any:
    def backward(ctx: Any, grad: Any) -> Any:
        a, x, y = ctx.inputs
        (out,) = ctx.outputs
        assert out.shape == x.shape and out.dtype == x.dtype  # traced too: no data-dependent checks
        return None, grad * a, grad

    @oxt.op(f"{ns()}::saxpy", outputs={"out": oxt.Out(like="x")}, backward=backward)
    def saxpy(a: float, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
        torch.add(y, x, alpha=a, out=out)

    return saxpy


def test_autograd_from_a_backward_function() -> None:
    saxpy = _saxpy_op()
    x = torch.randn(7, dtype=torch.float64, requires_grad=True)
    y = torch.randn(7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, y: saxpy(1.75, x, y), (x, y))
    out = saxpy(2.0, x, y)
    (out * torch.arange(7.0, dtype=torch.float64)).sum().backward()
    assert torch.equal(x.grad, 2.0 * torch.arange(7.0, dtype=torch.float64))
    assert torch.equal(y.grad, torch.arange(7.0, dtype=torch.float64))


def test_opcheck_passes() -> None:
    """PyTorch's own checks of a custom op: schema, fake kernel, autograd registration, and
    the same results through every way of calling it."""
    saxpy = _saxpy_op()
    x, y = torch.randn(5, dtype=torch.float64, requires_grad=True), torch.randn(5, dtype=torch.float64)
    torch.library.opcheck(saxpy.op, (2.0, x, y))
    torch.library.opcheck(saxpy.op, (2.0, x.detach(), y))


def test_torch_compile_has_no_graph_break() -> None:
    saxpy = _saxpy_op()

    def step(x: Any, y: Any) -> Any:
        return (saxpy(3.0, x, y) * 2).sum()

    torch._dynamo.reset()
    counts = torch._dynamo.utils.counters
    counts.clear()
    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    x = torch.randn(9, dtype=torch.float64, requires_grad=True)
    y = torch.randn(9, dtype=torch.float64)
    loss = compiled(x, y)
    loss.backward()
    assert torch.allclose(loss, ((3 * x + y) * 2).sum())
    assert torch.equal(x.grad, torch.full((9,), 6.0, dtype=torch.float64))
    assert not counts["graph_break"]
    explained = torch._dynamo.explain(step)(x.detach(), y)
    assert explained.graph_break_count == 0 and explained.graph_count == 1


def test_dynamic_shapes_in_the_fake_kernel() -> None:
    @oxt.op(f"{ns()}::pairs", outputs={"out": oxt.Out(shape=lambda x: (x.shape[0] // 2, 2))})
    def pairs(x: torch.Tensor, out: torch.Tensor) -> None:
        out.copy_(x[: out.shape[0] * 2].reshape(-1, 2))

    compiled = torch.compile(lambda x: pairs(x) + 1, backend="aot_eager", fullgraph=True, dynamic=True)
    for n in (6, 9, 14):
        x = torch.arange(float(n))
        assert torch.equal(compiled(x), x[: (n // 2) * 2].reshape(-1, 2) + 1)


def test_modes_take_the_dispatcher_and_autograd_gets_its_node() -> None:
    """The direct call is only taken where the dispatcher would do nothing else: a dispatch
    mode sees the op; a tensor that requires grad gets the autograd node the op's autograd
    kernel would make (the same autograd.Function, applied here)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    saxpy = _saxpy_op()
    seen: list[Any] = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x, y = torch.randn(3), torch.randn(3)
    with Spy():
        saxpy(2.0, x, y)
    assert saxpy.op in seen
    direct: list[int] = []
    dispatched: list[int] = []
    original, op = saxpy._call, saxpy.op
    saxpy._call = lambda a: direct.append(1) or original(a)  # type: ignore[method-assign]
    saxpy.op = lambda *a, **k: dispatched.append(1) or op(*a, **k)  # what the fallback calls
    try:
        saxpy(2.0, x, y)
        assert direct == [1] and dispatched == []
        out = saxpy(2.0, x.requires_grad_(), y)
        assert direct == [1, 1] and dispatched == []
        assert type(out.grad_fn).__name__ == f"GeneratedBackwardFor_{saxpy.qualname.replace('::', '_')}_defaultBackward"
        through_torch_ops = op(2.0, x, y)  # the dispatcher's node: the same class name, the same gradient
        assert type(through_torch_ops.grad_fn).__name__ == type(out.grad_fn).__name__
        grads = [torch.autograd.grad((o * torch.arange(3.0)).sum(), x)[0] for o in (out, through_torch_ops)]
        assert torch.equal(grads[0], grads[1]) and torch.equal(grads[0], 2.0 * torch.arange(3.0))
        direct.clear()
        with torch.no_grad():
            saxpy(2.0, x, y)
        assert direct == [1] and dispatched == []
    finally:
        saxpy._call = original  # type: ignore[method-assign]
        saxpy.op = op


def test_autograd_keeps_no_reference_cycle_through_the_node() -> None:
    """The default setup_context keeps no tensor outside save_for_backward: an output (whose
    grad_fn is the node) is freed when its last reference goes, with no GC pass, on both paths."""
    import gc
    import weakref

    saxpy = _saxpy_op()
    x, y = torch.randn(4, dtype=torch.float64, requires_grad=True), torch.randn(4, dtype=torch.float64)
    gc.collect()
    gc.disable()
    try:
        for call in (saxpy, saxpy.op):
            for backward in (False, True):
                out = call(2.0, x, y)
                freed = weakref.ref(out)
                if backward:
                    out.sum().backward()
                del out
                assert freed() is None, (call, backward)
    finally:
        gc.enable()


def test_a_wrong_count_of_gradients_is_refused_on_both_paths() -> None:
    def backward(ctx: Any, grad: Any) -> Any:
        return grad  # one gradient for three inputs

    @oxt.op(f"{ns()}::short", outputs={"out": oxt.Out(like="x")}, backward=backward)
    def short(a: float, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
        torch.add(y, x, alpha=a, out=out)

    x, y = torch.randn(3, requires_grad=True), torch.randn(3)
    for call in (short, short.op):
        with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
            call(2.0, x, y).sum().backward()


@pytest.mark.parametrize("declare, message", [
    (lambda f: oxt.op("nonamespace", outputs={})(f), "the op's name must be 'namespace::name'; got 'nonamespace'"),
    (lambda f: oxt.op(f"{ns()}::a", outputs={"nope": oxt.Out()})(f), "output 'nope' is not a parameter of"),
    (lambda f: oxt.op(f"{ns()}::b", outputs={"out": oxt.Out(like="n")})(f), "output 'out': like='n' is not a tensor input of the op (its tensor inputs: x)"),
    (lambda f: oxt.op(f"{ns()}::c", outputs={"out": oxt.Out(shape=lambda z: (1,))})(f), "the shape function's parameters ['z'] are not inputs of the op (its inputs: x, n)"),
    (lambda f: oxt.op(f"{ns()}::d", mutates=["out"], outputs={"out": oxt.Out()})(f), "mutates names 'out', which is not an input of the op"),
    (lambda f: oxt.op(f"{ns()}::e", outputs={"out": oxt.Out(dtype="float32")})(f), "dtype must be a torch.dtype or a function of the inputs; got 'float32'"),
])  # fmt: skip
def test_declaration_errors_name_the_function(declare: Any, message: str) -> None:
    def f(x: torch.Tensor, n: int, out: torch.Tensor) -> None:
        pass

    with pytest.raises(oxt.OpDeclarationError) as info:
        declare(f)
    text = str(info.value)
    assert message in text
    assert text.startswith(f"{__file__}:{f.__code__.co_firstlineno}: ")


def test_inputs_need_type_hints() -> None:
    def f(x, out: torch.Tensor) -> None:  # type: ignore[no-untyped-def]
        pass

    with pytest.raises(oxt.OpDeclarationError, match="the op's inputs need type hints .*; none on x"):
        oxt.op(f"{ns()}::f", outputs={"out": oxt.Out(like="x")})(f)


def test_importing_oxide_torch_does_not_import_torch() -> None:
    code = "import sys, oxide, oxide.torch; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_preserve_layout_output_keeps_the_input_stride_order() -> None:
    name = ns()

    @oxt.op(f"{name}::copy", outputs={"out": oxt.Out(like="x", layout="preserve")})
    def copy(x: torch.Tensor, out: torch.Tensor) -> None:
        out.copy_(x)

    base = torch.randn(2, 8, 12)
    channel_last = base[:, :, 2:10].transpose(1, 2)       # (2, 8, 8), channel stride 1, not dense
    got = copy(channel_last)
    assert got.stride() == (64, 1, 8) and torch.equal(got, channel_last)
    assert copy.op(channel_last).stride() == (64, 1, 8)  # the dispatcher path allocates the same
    with torch._subclasses.fake_tensor.FakeTensorMode():  # and so does the fake kernel
        fake = copy.op(torch.empty(2, 8, 8).transpose(1, 2))
    assert fake.stride() == (64, 1, 8)
    contiguous = copy(base.transpose(1, 2).contiguous())
    assert contiguous.is_contiguous()


def test_a_bad_layout_is_a_declaration_error() -> None:
    with pytest.raises(oxt.OpDeclarationError, match="layout must be 'contiguous' or 'preserve'"):
        @oxt.op(f"{ns()}::bad", outputs={"out": oxt.Out(like="x", layout="channels_last")})
        def bad(x: torch.Tensor, out: torch.Tensor) -> None: ...
    with pytest.raises(oxt.OpDeclarationError, match="leave shape= unset"):
        @oxt.op(f"{ns()}::bad2", outputs={"out": oxt.Out(like="x", shape=lambda x: (1,), layout="preserve")})
        def bad2(x: torch.Tensor, out: torch.Tensor) -> None: ...
