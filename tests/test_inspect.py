"""``oxide inspect``: kernel resources read from the linker's info log."""
from __future__ import annotations

from pathlib import Path

from oxide_build.inspect import inspect_module, parse_info_log

ROOT = Path(__file__).resolve().parent.parent

LOG = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem
info    : Function properties for 'k':
info    : used 40 registers, used 1 barriers, 24 stack, 5120 bytes smem, 592 bytes cmem[0], 16 bytes lmem
"""


def test_parse_info_log() -> None:
    r = parse_info_log(LOG)["k"]
    assert (r.registers, r.shared_bytes, r.local_bytes, r.stack_bytes, r.spill_stores, r.spill_loads, r.barriers) == (
        40, 5120, 16, 24, 8, 12, 1)


def test_inspect_sgemm_uses_two_tiles_of_shared_memory() -> None:
    resources, cubin = inspect_module(ROOT / "examples" / "sgemm.py", "examples.sgemm", "sm_90", root=ROOT)
    r = resources["sgemm"]
    assert r.shared_bytes >= 2 * 32 * 32 * 4
    assert 0 < r.registers <= 255 and r.spill_stores == 0 and r.barriers == 1
    assert cubin[:4] == b"\x7fELF"
