"""causal_conv1d on oxide: the causal depthwise conv1d of Mamba (Dao-AILab/causal-conv1d's API),
its kernels written in Python and compiled into this py3-none-any wheel by oxide."""
from __future__ import annotations

__version__ = "1.6.1+oxide"

from causal_conv1d.causal_conv1d_interface import causal_conv1d_fn, causal_conv1d_update
from causal_conv1d.causal_conv1d_varlen import causal_conv1d_varlen_states

__all__ = ["causal_conv1d_fn", "causal_conv1d_update", "causal_conv1d_varlen_states", "__version__"]
