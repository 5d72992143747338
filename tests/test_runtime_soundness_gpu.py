"""Runtime soundness on a GPU (issue 14): many threads launching producer/consumer pairs across
streams (both launch paths), stream-ordered memory freed after the launches that read it,
freed arrays refused, autograd told of writes, a fault in ``unsafe`` code and what recovers
from it, context resets (cuDevicePrimaryCtxReset, cudaDeviceReset, numba.cuda.close()).

Faults and resets run in a subprocess of their own: they destroy the process's primary context,
which this test process (and PyTorch in it) goes on using.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from test_runtime_gpu import _compile_for_this_gpu, _inputs, _reference, kmod  # noqa: F401  (kmod: a fixture)

import devices

pytestmark = pytest.mark.gpu

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _run(script: str, *, pure_python: bool = False, timeout: int = 200) -> str:
    """Runs ``script`` in a fresh interpreter (this checkout first on its path); its stdout.
    Fails with its output when it does not exit with 0 (a crash is a negative return code)."""
    env = dict(os.environ)
    env.pop("OXIDE_PURE_PYTHON", None)
    if pure_python:
        env["OXIDE_PURE_PYTHON"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                            timeout=timeout, env=env)
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
    return result.stdout


# ---------------------------------------------------------------------------------------------
# the stress test: 8 threads x 2,000 launches on their own streams, consumers reading what a
# producer on another stream wrote

STRESS = """
import sys, tempfile, threading
from pathlib import Path
import torch
from test_runtime_gpu import _write_module
from oxide.runtime import DeviceArray, launcher

m = _write_module(Path(tempfile.mkdtemp()))
k = m.saxpy32  # out = a * x + y, f32
THREADS, ITERS, n = 8, 2000, 4096
grid = k.grid_for(n)
streams = [torch.cuda.Stream() for _ in range(THREADS)]
ones = torch.ones(n, device="cuda")
torch.cuda.synchronize()


class Ordered:
    '''A tensor seen through the CUDA array interface, its data ordered on `stream`.'''

    def __init__(self, t, stream):
        self.t = t
        self.__cuda_array_interface__ = {"version": 3, "shape": (n,), "typestr": "<f4", "strides": None,
                                         "data": (t.data_ptr(), False), "stream": stream.cuda_stream}


bad, errors = [], []


def run(i):
    mine, producer = streams[i], streams[(i + 1) % THREADS]
    with torch.cuda.stream(mine):
        wrong = torch.zeros((), dtype=torch.int64, device="cuda")
    try:
        for it in range(ITERS):
            c = float(it % 97)
            with torch.cuda.stream(producer):
                torch.cuda._sleep(3000)  # the producer's data comes late
                buf = None if it % 2 else torch.empty(n, device="cuda")
            if buf is None:  # a stream-ordered DeviceArray (its memory comes back to the pool at once)
                produced = DeviceArray.empty(n, "f32", stream=producer)
            else:  # a CUDA array interface object naming its stream
                buf.record_stream(mine)
                produced = Ordered(buf, producer)
            k[grid, 256, producer](c, ones, ones, produced)  # c + 1 on the producer's stream
            with torch.cuda.stream(mine):
                out = torch.empty(n, device="cuda")
            k[grid, 256, mine](2.0, produced, ones, out)  # 2c + 3 on this thread's stream
            if buf is None:
                produced.free()  # after the consumer's launch, on the GPU
            del produced, buf
            with torch.cuda.stream(mine):
                wrong += (out != 2.0 * c + 3.0).sum()
        mine.synchronize()
        bad.append(int(wrong))
    except Exception as e:
        errors.append(repr(e))


threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
torch.cuda.synchronize()
print("C_LAUNCHER", launcher.ENABLED)
print("ERRORS", errors)
print("BAD", sum(bad), len(bad))
"""


@devices.gpu_only("torch CUDA streams, each kept busy by torch.cuda._sleep: CPU launches are synchronous")
@pytest.mark.parametrize("pure_python", [False, True], ids=["c-launcher", "python-path"])
def test_stress_producers_and_consumers_across_streams(pure_python: bool) -> None:
    pytest.importorskip("torch")
    out = _run(STRESS, pure_python=pure_python, timeout=400)
    assert "ERRORS []" in out, out
    assert "BAD 0 8" in out, out  # every element of every consumer's output, in every thread
    if pure_python:
        assert "C_LAUNCHER False" in out


# ---------------------------------------------------------------------------------------------
# stream-ordered memory: dropped right after a launch on another stream


@devices.gpu_only("stream-ordered GPU memory (cuMemAllocAsync) read on a busy torch CUDA stream")
def test_collected_stream_ordered_array_outlives_its_consumer(kmod: types.ModuleType) -> None:
    """An array made on a producer stream, read by a launch on a busy consumer stream, dropped at
    once: its memory must not go back to the pool (where the next allocation on the producer
    stream gets it and fills it with NaN) before the consumer has read it."""
    torch = pytest.importorskip("torch")
    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("torch.cuda._sleep is not available")
    from oxide.runtime import DeviceArray

    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    n = 1 << 20
    grid = kmod.saxpy.grid_for(n)
    for seed in (3, 5, 7):
        a, x, y = _inputs(n, np.float32, seed)
        ty = torch.as_tensor(y, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        dx = DeviceArray.from_numpy(x, stream=producer)
        torch.cuda.synchronize()
        with torch.cuda.stream(consumer):
            torch.cuda._sleep(50_000_000)  # the consumer reads only after ~25 ms
        kmod.saxpy[grid, 256, consumer](a, dx, ty, out)
        del dx  # collected: freed on the producer stream
        junk = DeviceArray.empty(n, "f32", stream=producer)  # the pool's memory, maybe dx's
        kmod.saxpy[grid, 256, producer](float("nan"), ty, ty, junk)
        consumer.synchronize()
        np.testing.assert_allclose(out.cpu().numpy(), _reference(a, x, y), rtol=1e-6, atol=0)
        producer.synchronize()
        junk.free()
    producer.synchronize()


@devices.gpu_only("stream-ordered GPU memory (cuMemAllocAsync) freed while a torch CUDA stream is busy")
def test_a_free_in_another_thread_waits_for_a_launch_on_another_stream(kmod: types.ModuleType) -> None:
    """Issue 26: thread B frees a stream-ordered array (producer stream) while thread A launches
    a kernel reading it on a busy consumer stream, then refills the pool's memory with NaN on
    the producer stream. Each trial, either A's launch was refused (B freed first) or the free
    was ordered after the launch and A's output is exact, every element. (On the H200, with B
    freeing at once, all 40 launches were refused: B starts later by 0 to 5 ms.)"""
    torch = pytest.importorskip("torch")
    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("torch.cuda._sleep is not available")
    import threading
    import time

    from oxide.runtime import DeviceArray

    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    n = 1 << 18
    grid = kmod.saxpy.grid_for(n)
    launched = refused = 0
    for trial in range(40):
        a, x, y = _inputs(n, np.float32, 100 + trial)
        ty = torch.as_tensor(y, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        dx = DeviceArray.from_numpy(x, stream=producer)
        torch.cuda.synchronize()
        with torch.cuda.stream(consumer):
            torch.cuda._sleep(5_000_000)  # the consumer reads only after a few ms
        start = threading.Barrier(2)
        outcome: list[str] = []

        def launch() -> None:
            start.wait()
            try:
                kmod.saxpy[grid, 256, consumer](a, dx, ty, out)
                outcome.append("launched")
            except TypeError as e:
                assert "parameter 'x' of saxpy is a DeviceArray that was freed" in str(e), str(e)
                outcome.append("refused")

        def free_and_reuse() -> None:
            start.wait()
            time.sleep(trial * 125e-6)  # 0 to 5 ms after the launch begins: some frees come first, most after
            dx.free()
            junk = DeviceArray.empty(n, "f32", stream=producer)  # the pool's memory, maybe dx's
            kmod.saxpy[grid, 256, producer](float("nan"), ty, ty, junk)
            junk.free()

        threads = [threading.Thread(target=launch), threading.Thread(target=free_and_reuse)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        consumer.synchronize()
        producer.synchronize()
        assert len(outcome) == 1
        if outcome[0] == "launched":
            launched += 1
            np.testing.assert_allclose(out.cpu().numpy(), _reference(a, x, y), rtol=1e-6, atol=0)
        else:
            refused += 1
    assert launched + refused == 40 and launched > 0


# ---------------------------------------------------------------------------------------------
# arrays without memory; autograd


def test_freed_array_is_refused_and_the_context_lives(kmod: types.ModuleType) -> None:
    from oxide.runtime import DeviceArray, synchronize

    n = 1000
    a, x, y = _inputs(n, np.float32, 11)
    dx, dy, out = DeviceArray.from_numpy(x), DeviceArray.from_numpy(y), DeviceArray.empty(n, "f32")
    gone = DeviceArray.from_numpy(x)
    gone.free()
    for _ in range(3):  # the Python path, then the C launcher
        kmod.saxpy[kmod.saxpy.grid_for(n), 256](a, dx, dy, out)
        with pytest.raises(TypeError, match=r"^parameter 'x' of saxpy is a DeviceArray that was freed"):
            kmod.saxpy[kmod.saxpy.grid_for(n), 256](a, gone, dy, out)
    synchronize()  # no illegal address: nothing was launched with a NULL pointer
    np.testing.assert_allclose(out.to_numpy(), _reference(a, x, y), rtol=1e-6, atol=0)


def test_autograd_learns_of_writes(kmod: types.ModuleType) -> None:
    """A tensor saved for backward and then written by a kernel: backward fails loudly instead
    of using the new values (the launch bumps its version counter, on both launch paths). A
    tensor that requires grad is not written while grad mode is on."""
    torch = pytest.importorskip("torch")
    n = 4096
    grid = kmod.saxpy.grid_for(n)
    dev = devices.torch_device()  # CPU tensors on the CPU device
    a, x, y = _inputs(n, np.float32, 13)
    tx, ty = torch.as_tensor(x, device=dev), torch.as_tensor(y, device=dev)
    for _ in range(3):  # the Python path, then the C launcher
        w = torch.randn(n, device=dev, requires_grad=True)
        saved = torch.rand(n, device=dev) + 1.0
        loss = (w * saved).sum()  # saves `saved` for the gradient of w
        before = saved._version
        kmod.saxpy[grid, 256](a, tx, ty, saved)
        assert saved._version > before
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
        leaf = torch.zeros(n, device=dev, requires_grad=True)
        with pytest.raises(TypeError, match=r"^parameter 'out' of saxpy is written by the kernel; got a tensor that requires grad"):
            kmod.saxpy[grid, 256](a, tx, ty, leaf)
        with torch.no_grad():  # as an optimizer's update: allowed
            kmod.saxpy[grid, 256](a, tx, ty, leaf)
        devices.synchronize()
        np.testing.assert_allclose(leaf.detach().cpu().numpy(), _reference(a, x, y), rtol=1e-6, atol=0)
    with torch.inference_mode():  # no version counter: nothing to bump
        inf = torch.empty(n, device=dev)
        kmod.saxpy[grid, 256](a, tx, ty, inf)
        kmod.saxpy[grid, 256](a, tx, ty, inf)
    devices.synchronize()
    np.testing.assert_allclose(inf.cpu().numpy(), _reference(a, x, y), rtol=1e-6, atol=0)


# ---------------------------------------------------------------------------------------------
# a fault in unsafe code; context resets

FAULT_SOURCE = '''
import oxide as ox
from oxide import DisjointSlice, MutSlice, Slice, f32, i64, thread


@ox.kernel(bounds_check=False)
def poke(out: MutSlice[f32], at: i64) -> None:
    with ox.unsafe():
        out[at] = 1.0


@ox.kernel
def copy(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i]


@ox.kernel
def shifted(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i + 1]
'''


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    return _compile_for_this_gpu(tmp_path_factory, FAULT_SOURCE, "oxfault")


_COMMON = """
import sys
import numpy as np
sys.path.insert(0, __ROOT__)
mod = __import__(__NAME__)
from oxide.errors import CudaError, KernelError
from oxide.runtime import DeviceArray, device, synchronize

n = 100_000
host = np.arange(n, dtype=np.float32) * 0.5 + 1.0


def step(tag, fn):
    try:
        print(tag, fn())
    except Exception as e:
        print(tag, "raised", type(e).__name__, getattr(e, "name", ""), str(e)[:300].replace(chr(10), " "))


def copy_ok():
    x, out = DeviceArray.from_numpy(host), DeviceArray.from_numpy(np.full(n, np.nan, np.float32))
    for _ in range(3):  # the Python path, then the C launcher
        mod.copy[mod.copy.grid_for(n), 256](x, out)
    synchronize()
    return np.array_equal(out.to_numpy(), host)


def kernel_error():
    x, out = DeviceArray.from_numpy(host), DeviceArray.empty(n, "f32")
    mod.shifted[mod.shifted.grid_for(n), 256](x, out)
    try:
        synchronize()
        return "no error"
    except KernelError as e:
        return f"{e.index} {e.length}"


def state():
    drv = device.driver()
    err, dev = drv.cuDeviceGet(0)
    err, flags, active = drv.cuDevicePrimaryCtxGetState(dev)
    err2, ctx = drv.cuCtxGetCurrent()
    err3, uid = drv.cuCtxGetId(ctx) if ctx is not None and int(ctx) else (None, None)
    return f"active={active} ctx={ctx} uid={uid} ({err3})"
"""


def _common(module: types.ModuleType) -> str:
    """The helpers of the subprocess scripts, importing ``module`` (compiled by the fixture)."""
    root = str(Path(module.__file__ or "").parent)
    return _COMMON.replace("__ROOT__", repr(root)).replace("__NAME__", repr(module.__name__))


@devices.gpu_only("a fault of real GPU memory (CUDA_ERROR_ILLEGAL_ADDRESS) and a primary context reset")
def test_fault_in_unsafe_code_is_a_cuda_error_and_only_a_new_process_recovers(faulty: types.ModuleType) -> None:
    """What docs/runtime.md promises: the fault is a CudaError (at the next synchronization);
    the context is then dead (every launch and synchronization raises the same CudaError,
    nothing crashes); a reset of the primary context does not bring the device back (on the
    H200 with a CUDA 13.0 driver, retaining it again fails with the same error); a new process
    works."""
    script = _common(faulty) + """
step("BEFORE", copy_ok)
step("STATE0", state)
x0, out = DeviceArray.from_numpy(host), DeviceArray.empty(n, "f32")
mod.poke[1, 1](out, 1 << 40)
step("FAULT", synchronize)
step("DEAD_LAUNCH", lambda: mod.copy[mod.copy.grid_for(n), 256](x0, out))
step("DEAD_SYNC", synchronize)
step("DEAD_ALLOC", lambda: DeviceArray.empty(n, "f32"))
drv = device.driver()
err, dev = drv.cuDeviceGet(0)
(err,) = drv.cuDevicePrimaryCtxReset(dev)
print("RESET", int(err))
step("STATE1", state)
step("AFTER_RESET", copy_ok)
step("STILL", copy_ok)
"""
    out = _run(script)
    assert "BEFORE True" in out, out
    assert "FAULT raised CudaError CUDA_ERROR_ILLEGAL_ADDRESS" in out, out
    assert "DEAD_LAUNCH raised CudaError CUDA_ERROR_ILLEGAL_ADDRESS" in out, out
    assert "DEAD_SYNC raised CudaError CUDA_ERROR_ILLEGAL_ADDRESS" in out, out
    assert "DEAD_ALLOC raised CudaError CUDA_ERROR_ILLEGAL_ADDRESS" in out, out
    assert "RESET 0" in out, out
    # the device stays unusable in this process, with a CudaError each time (no crash: exit 0)
    assert "AFTER_RESET raised CudaError" in out and "STILL raised CudaError" in out, out
    assert "True" not in out.split("RESET 0", 1)[1], out
    fresh = _run(_common(faulty) + 'step("NEW_PROCESS", copy_ok)\nstep("RECORD", kernel_error)\n')
    assert "NEW_PROCESS True" in fresh and "RECORD 100000 100000" in fresh, fresh


@devices.gpu_only("real CUDA context resets (cudaDeviceReset, numba.cuda.close())")
def test_context_resets_by_other_libraries(faulty: types.ModuleType) -> None:
    """cudaDeviceReset and numba.cuda.close() destroy the primary context under oxide's feet
    (its modules, its pinned memory): the next launches load again and compute the right
    values; nothing crashes."""
    script = _common(faulty) + """
step("START", copy_ok)
step("RECORD0", kernel_error)
from cuda.bindings import runtime
(err,) = runtime.cudaDeviceReset()
print("CUDART_RESET", int(err))
step("STATE1", state)
step("AFTER_CUDART", copy_ok)
step("RECORD1", kernel_error)
try:
    from numba import cuda
except ImportError:
    print("NUMBA missing")
else:
    step("NUMBA_CTX", lambda: cuda.current_context() is not None)
    step("WITH_NUMBA", copy_ok)
    step("NUMBA_CLOSE", cuda.close)
    step("STATE2", state)
    step("AFTER_NUMBA", copy_ok)
    step("RECORD2", kernel_error)
"""
    out = _run(script)
    assert "START True" in out and "RECORD0 100000 100000" in out, out
    assert "CUDART_RESET 0" in out, out
    assert "AFTER_CUDART True" in out and "RECORD1 100000 100000" in out, out
    if "NUMBA missing" not in out:
        assert "WITH_NUMBA True" in out and "AFTER_NUMBA True" in out and "RECORD2 100000 100000" in out, out
