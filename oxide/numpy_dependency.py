"""NumPy, an optional dependency of oxide: neither ``import oxide``, a launch with PyTorch or
CuPy arrays, nor a build (``oxide_build``) needs it, so neither the runtime's requirements nor
the ``[build]`` extra name it (an isolated build installs no NumPy). What does need it imports
it through ``import_numpy``: ``DeviceArray`` (its ``dtype`` is a NumPy dtype), the CPU device
(its memory is NumPy's), module arrays' ``read``/``write`` and ``struct_dtype``; without NumPy
they fail saying what to install."""
from __future__ import annotations

from types import ModuleType

__all__ = ["import_numpy"]


def import_numpy(what: str) -> ModuleType:
    """The ``numpy`` module, or an ``ImportError`` naming ``what`` needs it and how to get it."""
    try:
        import numpy
    except ImportError as exc:
        raise ImportError(
            f"{what} needs NumPy, which is not installed: pip install numpy "
            f"(oxide itself does not require it) ({exc})",
            name="numpy",
        ) from None
    return numpy
