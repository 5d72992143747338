"""A kernel's fast instance (the manifest's ``fast_symbol``, oxide_build/passes/launch_instances.py):
every launcher evaluates its ``fast_condition`` over the packed slots and the launch dimensions and
launches the fast instance (or its index32 instance) where it holds, the kernel as written
elsewhere, each with the slots its entry point declares: the Python path, the C launcher (on the CPU,
with the fake driver of tests/fakes.py) and oxide/launch.hpp (against a stand-in libcuda.so.1). The
compiler's side: the split kernel's manifest record, and a fast instance only where the test can
be evaluated at the launch."""
from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    TADD_PARAMS,
    TENSOR_KERNELS,
    TENSOR_SOURCE,
    CFakeDriver,
    FakeArray,
    FakeDriver,
    c_driver,
    fake_driver,
    fresh_runtime,
    make_module,
    needs_compilers,
    paths,
    slot_types,
)

from oxide.abi.launcher import INDEX32_LIMIT
from oxide.abi.preconditions import compile_expression
from oxide.runtime import launcher
from oxide.runtime.manifest import KernelSpec, ModuleManifest

__all__: list[str] = []

needs_launcher = pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")

# tadd(a: Tensor[f32, 2], s: f32, out: MutTensor[f32, 2]): a 0 ptr, 1-2 shape, 3-4 strides; s 5;
# out 6 ptr, 7-8 shape, 9-10 strides. The fast instance's facts: a.shape[0] >= 2 and block.dim.x <= 64
CONDITION = tuple((op, x) for op, x in compile_expression(
    ["and", [["ge", ["arg", 1], ["const", 2]], ["le", ["block", 0], ["const", 64]]]]))
FAST_SLOTS = (0, 4, 5, 6, 10)  # the checks gone, no shape is read
FAST32_SLOTS = (0, 5, 6, 9)
SPEC = KernelSpec("tadd", "tadd", TADD_PARAMS, index32_symbol="tadd__index32", fast_symbol="tadd__fast",
                  fast_condition=CONDITION, fast_param_slots=FAST_SLOTS, fast_index32_symbol="tadd__fast__index32",
                  fast_index32_param_slots=FAST32_SLOTS)
KERNELS = (SPEC,) + TENSOR_KERNELS[1:]
FULL = slot_types(TADD_PARAMS)


def _module(tmp_path: Path, drv: FakeDriver) -> types.ModuleType:
    m = make_module(tmp_path, TENSOR_SOURCE, KERNELS)
    drv.signatures = {k.symbol: slot_types(k.params) for k in TENSOR_KERNELS}
    drv.signatures["tadd__index32"] = list(FULL)
    drv.signatures["tadd__fast"] = [FULL[i] for i in FAST_SLOTS]
    drv.signatures["tadd__fast__index32"] = [FULL[i] for i in FAST32_SLOTS]
    return m


def _f32(shape: tuple[int, ...], ptr: int) -> FakeArray:
    return FakeArray(shape=shape, ptr=ptr)


OUT = _f32((2, 3), 1 << 40)
# (a, block.dim.x) -> the entry point that must run
CASES = [
    ((_f32((4, 6), 0x10000), 32), "tadd__fast__index32"),
    ((_f32((4, 6), 0x10000), 128), "tadd__index32"),  # a block larger than the facts allow
    ((_f32((1, 6), 0x10000), 32), "tadd__index32"),  # a.shape[0] < 2
    ((_f32((2, INDEX32_LIMIT), 0x10000), 64), "tadd__fast"),  # too large for index32
    ((_f32((1, INDEX32_LIMIT + 1), 0x10000), 64), "tadd"),
]


def _launch_each(m: types.ModuleType, times: int) -> None:
    for (a, block), _ in CASES:
        for _ in range(times):
            m.tadd[1, block](a, 1.5, OUT)


def _full(a: FakeArray) -> list[object]:
    ia, io = a.__cuda_array_interface__, OUT.__cuda_array_interface__
    return [ia["data"][0], *ia["shape"], ia["shape"][1], 1, 1.5, io["data"][0], *io["shape"], io["shape"][1], 1]


def _declared(fn: str) -> tuple[int, ...]:
    return {"tadd__fast": FAST_SLOTS, "tadd__fast__index32": FAST32_SLOTS}.get(fn, tuple(range(len(FULL))))


def test_the_python_path_launches_the_fast_instance_where_its_condition_holds(
        tmp_path: Path, fake_driver: FakeDriver) -> None:
    m = _module(tmp_path, fake_driver)
    _launch_each(m, 1)
    assert [launch["fn"] for launch in fake_driver.launches] == [want for _, want in CASES]
    for ((a, _), want), launch in zip(CASES, fake_driver.launches):
        assert launch["values"] == [_full(a)[i] for i in _declared(want)]


@needs_launcher
def test_the_c_launcher_launches_the_fast_instance_where_its_condition_holds(
        tmp_path: Path, c_driver: CFakeDriver) -> None:
    m = _module(tmp_path, c_driver)
    _launch_each(m, 3)
    assert [launch["fn"] for launch in c_driver.launches] == [want for _, want in CASES for _ in range(3)]
    # each entry point's first launch teaches the C path its function; every later one is C's
    seen: set[str] = set()
    expected = []
    for _, want in CASES:
        expected += ["c" if want in seen else "python", "c", "c"]
        seen.add(want)
    assert paths(c_driver) == expected
    for i, launch in enumerate(c_driver.launches):
        (a, _), want = CASES[i // 3]
        assert launch["values"] == [_full(a)[k] for k in _declared(want)]


def test_a_manifest_writes_the_fast_instance_only_when_there_is_one_and_refuses_a_broken_one() -> None:
    old = ModuleManifest("m", "m.py", "", TENSOR_KERNELS, {"sm_90": "m.cubin"})
    assert "fast_symbol" not in old.to_json() and "fast_condition" not in old.to_json()
    new = old._replace(kernels=KERNELS)
    back = ModuleManifest.from_json(new.to_json()).kernels[0]
    assert back == SPEC and back.instances() == ["tadd", "tadd__index32", "tadd__fast", "tadd__fast__index32"]
    data = json.loads(new.to_json())
    del data["kernels"][0]["fast_condition"]
    with pytest.raises(ValueError, match=r"kernels\[0\]\.fast_condition: missing"):
        ModuleManifest.from_json(json.dumps(data))
    data["kernels"][0]["fast_condition"] = [[1, 99]]  # a slot the kernel does not have
    with pytest.raises(ValueError, match=r"kernels\[0\]\.fast_condition"):
        ModuleManifest.from_json(json.dumps(data))


HPP_MAIN = r"""
#include <cstdio>
#include <oxide/launch.hpp>
int main(int, char** argv) {
  oxide::Kernel k = oxide::Module::open(argv[1], "t").kernel("tadd");
  static float a[8], out[8];
  const int64_t rows[] = {4, 1, 2, 1};
  const int64_t cols[] = {2, 2, 2147483648LL, 2147483648LL};
  for (int i = 0; i < 4; ++i)
    for (unsigned block : {32u, 128u})
      k.launch({1}, {block}, nullptr, oxide::tensor<const float>(a, {rows[i], cols[i]}, {cols[i], 1}), 1.5f,
               oxide::tensor<float>(out, {2, 2}, {2, 1}));
  std::fflush(stdout);
  return 0;
}
"""


@needs_compilers
def test_launch_hpp_launches_the_fast_instance_where_its_condition_holds(tmp_path: Path) -> None:
    import test_index32_cpp

    record = json.loads(ModuleManifest("t", "t.py", "", (SPEC,), {"sm_90": "t.sm_90.cubin"}).to_json())["kernels"][0]
    lines = test_index32_cpp.run(tmp_path, record, main=HPP_MAIN)
    # the stand-in prints the entry point and its third declared slot: a.shape[1] (slot 2) where
    # every slot is declared, s (slot 5: the bits of 1.5f) in the fast instance
    assert [line.split()[1:] for line in lines if "fast__index32" not in line] == [
        ["tadd__index32", "2"], ["tadd__index32", "2"], ["tadd__index32", "2"],
        ["tadd__fast", str(0x3FC00000)], ["tadd", "2147483648"], ["tadd", "2147483648"], ["tadd", "2147483648"]]
    assert lines[0].split()[1] == "tadd__fast__index32"


# repeat(x: Slice[f32], REPS: Constexpr, k: i32, out: DisjointSlice[f32]): x 0 ptr, 1 len; k 2;
# out 3 ptr, 4 len. Each Constexpr specialization has its own fast instance, taken where
# len(x) >= k (the second one's only where k >= 4 too): the plan's variant of each fast instance
# follows the specializations' (kernel.py), and the C path must find the right one.
def _repeat_specs() -> tuple[KernelSpec, ...]:
    out = []
    for spec, extra in zip(TENSOR_KERNELS[1:], ([], [["ge", ["arg", 2], ["const", 4]]])):
        cond = ["and", [["ge", ["arg", 1], ["cast", "i64", ["arg", 2]]], *extra]]
        out.append(spec._replace(fast_symbol=spec.symbol + "__fast",
                                 fast_condition=tuple((op, x) for op, x in compile_expression(cond))))
    return (KernelSpec("tadd", "tadd", TADD_PARAMS),) + tuple(out)


@needs_launcher
def test_each_constexpr_specialization_takes_its_own_fast_instance_on_both_paths(
        tmp_path: Path, c_driver: CFakeDriver) -> None:
    specs = _repeat_specs()
    m = make_module(tmp_path, TENSOR_SOURCE, specs)
    c_driver.signatures = {symbol: slot_types(k.params) for k in specs for symbol in k.instances()}
    x, out = FakeArray(8, ptr=0x100), FakeArray(8, ptr=0x1000)
    calls = [(1, 5), (3, 5), (3, 2), (1, 9), (3, 8), (1, 5), (3, 2), (3, 5), (1, 9)]
    for reps, k in calls:
        m.repeat[1, 32](x, reps, k, out)
    want = {(1, 5): "repeat_REPS1__fast", (3, 5): "repeat_REPS3__fast", (3, 2): "repeat_REPS3",
            (1, 9): "repeat_REPS1", (3, 8): "repeat_REPS3__fast"}
    assert [launch["fn"] for launch in c_driver.launches] == [want[c] for c in calls]
    # the second round is the C path's: every entry point was taught by its first launch
    assert paths(c_driver)[5:] == ["c", "c", "c", "c"]
