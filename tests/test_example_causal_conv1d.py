"""examples/causal_conv1d's fast kernels (vector_kernels.py) compile on a machine without a GPU
and keep the properties their speed and the port's promises rest on (CPU only): 16-byte
accesses of 8 halves in the channel-first kernels, 4-byte whole-row accesses with everything in
registers in the channel-last forward, and no atomics anywhere (the backward is deterministic:
dweight and dbias are summed in a fixed order). The GPU side (upstream's tests, the timings) is
benchmarks/causal_conv1d_vs_upstream.py."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from oxide_build.compile import CompileOptions, compile_module

ROOT = Path(__file__).resolve().parent.parent / "examples" / "causal_conv1d"
KERNELS = ("fwd_channel_first", "fwd_channel_last", "bwd_channel_first", "bwd_channel_last")


@pytest.fixture(scope="module")
def ptx() -> str:
    compiled = compile_module(ROOT / "causal_conv1d" / "vector_kernels.py", "causal_conv1d.vector_kernels",
                              CompileOptions(archs=("sm_90",), link_cubins=False, cache=False), root=ROOT)
    return compiled.ptx["sm_90"]


def _entry(ptx: str, symbol: str) -> str:
    start = ptx.index(f".entry {symbol}(")
    end = ptx.find(".entry ", start + 1)
    return ptx[start:] if end < 0 else ptx[start:end]


def test_every_width_and_dtype_has_an_entry_point(ptx: str) -> None:
    entries = set(re.findall(r"\.entry (\w+)\(", ptx))
    expected = {f"{k}_W{w}_DT{dt}" for k in KERNELS for w in (2, 3, 4) for dt in (0, 1, 2)}
    expected |= {f"reduce_partials_W{w}" for w in (2, 3, 4)}
    assert entries == expected


def test_no_float_atomics_the_backward_sums_in_a_fixed_order(ptx: str) -> None:
    # the only atomic: the channel-first backward's arrival counter (a u32 wrap-around ticket)
    atomics = re.findall(r"^\s*(?:@!?%p\d+\s+)?((?:atom|red)\.\S+)", ptx, re.MULTILINE)
    assert atomics and all(a.startswith("atom.global.inc.u32") for a in atomics), atomics


@pytest.mark.parametrize("dt", [1, 2])  # fp16, bf16
def test_channel_first_kernels_move_8_halves_a_16_byte_access(ptx: str, dt: int) -> None:
    for kernel in ("fwd_channel_first", "bwd_channel_first"):
        body = _entry(ptx, f"{kernel}_W4_DT{dt}")
        assert "ld.global.nc.v4.b32" in body and "st.global.v4.b32" in body, kernel
    assert "bar.sync" not in _entry(ptx, f"fwd_channel_first_W4_DT{dt}")
    # the backward's positions before a vector and gradients after it: the neighbour lanes'
    assert "shfl.sync.up" in _entry(ptx, f"bwd_channel_first_W4_DT{dt}")
    assert "shfl.sync.down" in _entry(ptx, f"bwd_channel_first_W4_DT{dt}")


@pytest.mark.parametrize("dt", [0, 1, 2])
def test_the_channel_last_forward_keeps_its_column_in_registers(ptx: str, dt: int) -> None:
    body = _entry(ptx, f"fwd_channel_last_W4_DT{dt}")
    assert ".local" not in body  # windows, weights and the prefetched rows: no local memory
    assert "bar.sync" not in body and "ld.shared" not in body
    assert "ld.global.nc.b32" in body and "st.global.b32" in body  # a warp: one 128-byte row
    assert "ld.global.nc.v" not in body
