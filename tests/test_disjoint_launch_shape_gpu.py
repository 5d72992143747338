"""On the GPU: a kernel that writes a DisjointSlice at thread.index_1d(), launched with 2-D
blocks or a 2-D grid (where threads would share elements), is refused before it runs, on both
launch paths; the same kernel launched 1-D runs."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import oxide

import devices
from devices import to_numpy

pytestmark = pytest.mark.gpu
sys.path.insert(0, str(Path(__file__).parent / "packages" / "ports"))


@pytest.mark.parametrize("grid, block", [(1, (16, 16)), ((4, 2), 128), (2, (32, 1, 2))])
def test_a_launch_whose_threads_share_an_index_1d_is_refused(grid: object, block: object) -> None:
    import port_black_scholes as m

    n = 512
    rng = np.random.default_rng()
    price, strike = (devices.array(rng.uniform(5, 30, n).astype(np.float32)) for _ in range(2))
    years = devices.array(rng.uniform(0.25, 10, n).astype(np.float32))
    call = devices.full((n,), np.nan)
    put = devices.full((n,), np.nan)
    with pytest.raises(oxide.KernelError, match=r"block.dim.y == 1 and block.dim.z == 1 and grid.dim.y == 1"):
        m.black_scholes[grid, block](call, put, price, strike, years, 0.02, 0.3)
    devices.synchronize()
    assert np.isnan(to_numpy(call)).all() and np.isnan(to_numpy(put)).all()  # nothing ran
    m.black_scholes[(n + 127) // 128, 128](call, put, price, strike, years, 0.02, 0.3)
    devices.synchronize()
    assert not np.isnan(to_numpy(call)).any() and not np.isnan(to_numpy(put)).any()
