"""The C launcher's contexts (oxide/runtime/_launcher_plan.c, set_function): one table per kernel
of the contexts its variants were loaded in, each variant's function at the context's index.
A context reset under the same handle forgets the functions of every variant, not only of the
one loaded again first."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes import FakeArray, paths  # noqa: F401
from fakes import fresh_runtime  # noqa: F401  (autouse)
from oxide.runtime import device, launcher
from test_runtime_soundness import ResettableDriver, saxpy_module

__all__: list[str] = []

needs_launcher = pytest.mark.skipif(not launcher.ENABLED, reason="the C launcher is not built (or OXIDE_PURE_PYTHON=1)")


@needs_launcher
def test_a_reset_context_forgets_the_functions_of_every_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drv = ResettableDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    launched: list[int] = []
    original = drv._launch_from_c

    def launch_from_c(fn: int, *rest: Any) -> int:
        launched.append(fn)
        return original(fn, *rest)

    drv._launch_from_c = launch_from_c  # type: ignore[method-assign]
    drv._c_launch = type(drv._c_launch)(launch_from_c)
    m = saxpy_module(tmp_path, drv)
    f32 = [FakeArray(8, "<f4") for _ in range(3)]
    f64 = [FakeArray(8, "<f8") for _ in range(3)]
    for arrays in (f32, f32, f64, f64):
        m.saxpy[1, 32](2.0, *arrays)
    assert paths(drv) == ["python", "c", "python", "c"]  # each variant's function: Python first
    before = list(launched)
    assert before and all(fn >> 12 == 0xF + 1 for fn in before)
    drv.reset()  # same handle, new id: the functions of before belong to a context that is gone
    for arrays in (f32, f32, f64, f64):
        m.saxpy[1, 32](2.0, *arrays)
    # f32 loads the module again; f64's function of before is forgotten with it, not launched
    assert paths(drv)[4:] == ["python", "c", "python", "c"]
    after = launched[len(before):]
    assert len(after) == 2 and all(fn >> 12 == 0xF + 2 for fn in after), [hex(f) for f in after]
