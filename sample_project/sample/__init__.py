"""oxide-sample: a generic saxpy kernel, precompiled into the wheel. Run ``python -m sample``."""
from __future__ import annotations

from sample.kernels import saxpy

__all__ = ["saxpy"]
