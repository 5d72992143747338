"""A name the oxide namespace does not have (issue 29 item 3): the error says it does not exist
and suggests the nearest one that does, at the call, at a module-level definition, or at an
attribute read."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import build_ir
from oxide_build.frontend.oxide_names import known_oxide_names, unknown_oxide_name

HEADER = "import oxide as ox\nfrom oxide import Slice, DisjointSlice, f32, thread\n"


def error_of(tmp_path: Path, body: str) -> str:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    with pytest.raises(CompileError) as info:
        build_ir(src, "kern")
    return str(info.value).replace(str(src), "kern.py")


def test_a_misspelled_namespace_at_module_level(tmp_path: Path) -> None:
    msg = error_of(tmp_path, """
        c_kernel = ox.const.array([1.0, 2.0, 3.0], f32)

        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = x[i] * c_kernel[0]
        """)
    assert msg.startswith("kern.py:4:12: error: oxide.const does not exist (in the definition of 'c_kernel', "
                          "used at line 10)"), msg
    assert "hint: did you mean ox.constant.array?" in msg


@pytest.mark.parametrize("call, message, hint", [
    ("ox.math.coshf(x[i])", "oxide.math.coshf does not exist", "did you mean ox.math.cosh? (one name for f32 and f64)"),
    ("ox.mathh.cosh(x[i])", "oxide.mathh does not exist", "did you mean ox.math.cosh?"),
    ("f32(ox.wrap.lane())", "oxide.wrap does not exist", "did you mean ox.warp.lane?"),
    ("f32(ox.atomic.inc2(x, 0, 1))", "oxide.atomic.inc2 does not exist", "did you mean ox.atomic.inc?"),
    ("f32(ox.thread.idx.w)", "oxide.thread.idx.w does not exist", "did you mean ox.thread.idx.z?"),
])
def test_a_misspelled_name_in_a_kernel(tmp_path: Path, call: str, message: str, hint: str) -> None:
    msg = error_of(tmp_path, f"""
        @ox.kernel
        def k(x: Slice[f32], out: DisjointSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x):
                out[i] = {call}
        """)
    col = 18 + call.index("ox.")
    assert msg.startswith(f"kern.py:8:{col}: error: {message}\n"), msg
    assert f"hint: {hint}" in msg, msg


def test_every_known_name_is_known_and_nothing_else() -> None:
    known = known_oxide_names()
    assert {"math.cosh", "constant.array", "bf16x8", "warp.shfl_down", "kernel"} <= known
    assert unknown_oxide_name("nonsense_name_here")[1] == "see docs/language.md for the names of the oxide namespace"
