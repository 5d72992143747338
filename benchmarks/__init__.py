"""Benchmarks: oxide's examples against the same algorithms in CUDA C++ (NVRTC through CuPy)
and numba-cuda, plus compile, build, cold-start and launch-overhead figures.

``python -m benchmarks`` on a GPU host runs everything; ``--cpu-only`` runs what needs no GPU.
Every module here imports torch, CuPy and numba lazily, so the package imports anywhere and a
missing tool becomes a "skipped" result with its reason, not a traceback.
"""
from __future__ import annotations

__all__: list[str] = []
