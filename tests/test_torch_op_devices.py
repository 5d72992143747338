"""oxide.torch (#27): per-device bodies (``Op.register_kernel("cpu")``): a CPU implementation
registered for the CPU dispatch key beside the declared (CUDA) body. CPU tests here; the GPU
test runs both bodies on one op."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import oxide.torch as oxt  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402


def ns() -> str:
    return f"oxdev{uuid.uuid4().hex[:8]}"


def _axpy_with_cpu_body(ran: list[str]) -> oxt.Op:
    def grad(ctx: Any, g: Any) -> Any:
        return None, g * ctx.inputs[0], g

    @oxt.op(f"{ns()}::axpy", inputs={"y": oxt.In(like="x")}, outputs={"out": oxt.Out(like="x")},
            temporaries={"tmp": oxt.Temp(like="x")}, backward=grad)
    def axpy(a: float, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor, tmp: torch.Tensor) -> None:
        ran.append(f"main on {x.device.type}")  # the CUDA body: oxide kernels in a real op
        torch.mul(x.detach(), a, out=tmp)
        torch.add(tmp, y.detach(), out=out)

    @axpy.register_kernel("cpu")
    def axpy_cpu(a: float, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor, tmp: torch.Tensor) -> None:
        ran.append("cpu")
        torch.add(y.detach(), x.detach(), alpha=a, out=out)

    return axpy


def test_a_cpu_body_runs_for_cpu_tensors_on_every_path() -> None:
    ran: list[str] = []
    axpy = _axpy_with_cpu_body(ran)
    assert torch._C._dispatch_has_kernel_for_dispatch_key(axpy.qualname, "CPU")
    x, y = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    for call in (axpy, axpy.op):  # the direct call and the dispatcher's CPU kernel
        assert torch.allclose(call(2.0, x, y), 2 * x + y)
        assert ran.pop() == "cpu" and not ran
    xx = x.clone().requires_grad_()  # autograd's node, with the CPU body inside
    axpy(3.0, xx, y).sum().backward()
    assert ran.pop() == "cpu" and torch.equal(xx.grad, torch.full_like(x, 3.0))
    compiled = torch.compile(lambda x, y: axpy(2.0, x, y) + 1, backend="aot_eager", fullgraph=True)
    torch._dynamo.reset()
    assert torch.allclose(compiled(x, y), 2 * x + y + 1) and set(ran) == {"cpu"}
    ran.clear()
    y32 = y.float()
    with FakeTensorMode() as mode:  # the fake kernel is the same for every body; its checks too
        assert axpy(2.0, mode.from_tensor(x), mode.from_tensor(y)).shape == (5,)
        with pytest.raises(oxt.OpInputError, match=r"input 'y' is torch\.float32; it needs torch\.float64"):
            axpy(2.0, mode.from_tensor(x), mode.from_tensor(y32))
    with pytest.raises(oxt.OpInputError, match=r"input 'y' is torch\.float32"):
        axpy(2.0, x, y.float())  # the CPU body gets the declaration's checks
    assert not ran
    torch.library.opcheck(axpy.op, (2.0, x, y))


def test_without_a_cpu_body_the_declared_body_runs_on_the_cpu() -> None:
    ran: list[str] = []

    @oxt.op(f"{ns()}::twice", outputs={"out": oxt.Out(like="x")})
    def twice(x: torch.Tensor, out: torch.Tensor) -> None:
        ran.append("main")
        torch.mul(x, 2, out=out)

    @twice.register_kernel("cuda")
    def twice_cuda(x: torch.Tensor, out: torch.Tensor) -> None:
        ran.append("cuda")
        torch.mul(x, 2, out=out)

    x = torch.randn(3)
    assert torch.equal(twice(x), x * 2) and torch.equal(twice.op(x), x * 2) and ran == ["main", "main"]
    assert torch._C._dispatch_has_kernel_for_dispatch_key(twice.qualname, "CUDA")


@pytest.mark.parametrize("device_type, body, message", [
    ("gpu", lambda x, out: None, r"register_kernel takes a device type \('cpu', 'cuda'\); got 'gpu'"),
    ("cuda:0", lambda x, out: None, r"got 'cuda:0'"),
    ("cpu", lambda x, o: None, r"the cpu body of .*::f takes \(x, o\); it must take the parameters of .*f: \(x, out\)"),
])  # fmt: skip
def test_body_declaration_errors_name_the_body(device_type: str, body: Any, message: str) -> None:
    @oxt.op(f"{ns()}::f", outputs={"out": oxt.Out(like="x")})
    def f(x: torch.Tensor, out: torch.Tensor) -> None:
        pass

    with pytest.raises(oxt.OpDeclarationError, match=r"test_torch_op_devices\.py:\d+: .*" + message):
        f.register_kernel(device_type)(body)


def test_a_second_body_for_a_device_is_refused() -> None:
    @oxt.op(f"{ns()}::g", outputs={"out": oxt.Out(like="x")})
    def g(x: torch.Tensor, out: torch.Tensor) -> None:
        pass

    @g.register_kernel("cpu")
    def first(x: torch.Tensor, out: torch.Tensor) -> None:
        pass

    with pytest.raises(oxt.OpDeclarationError, match=r"already has a cpu body \(.*first\)"):
        g.register_kernel("cpu")(first)


@pytest.mark.gpu
def test_each_device_runs_its_body() -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    ran: list[str] = []
    axpy = _axpy_with_cpu_body(ran)
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(1000, generator=g), torch.randn(1000, generator=g)
    expected = 1.5 * x.double() + y.double()
    cx, cy = x.cuda(), y.cuda()
    for call in (axpy, axpy.op):
        got_cpu, got_cuda = call(1.5, x, y), call(1.5, cx, cy)
        assert ran == ["cpu", "main on cuda"]
        ran.clear()
        assert got_cpu.device.type == "cpu" and got_cuda.device.type == "cuda"
        torch.testing.assert_close(got_cpu.double(), expected, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(got_cuda.cpu().double(), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(oxt.OpInputError, match=r"input 'y' is on cpu; it needs a tensor on cuda:0, the device of input 'x'"):
        axpy(1.5, cx, y)  # mixed devices: refused by In(like="x"), never copied
    xx = cx.clone().requires_grad_()
    axpy(1.5, xx, cy).sum().backward()
    assert ran == ["main on cuda"] and torch.equal(xx.grad, torch.full_like(cx, 1.5))
