"""The CPU device's backend: host code from the same IR, JIT-compiled with llvmlite and run
by a native scheduler (``engine.py``; the interface the runtime calls)."""
from __future__ import annotations

__all__: list[str] = []
