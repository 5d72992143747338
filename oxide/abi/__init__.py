"""The contract between the compiler (``oxide_build``) and the runtime (``oxide.runtime``).

Both sides read the layout of what crosses from one to the other from here: scalar types.
A leaf: it imports nothing of oxide and nothing outside the standard library, so that the
runtime, the compiler and the C launcher's generated header agree by construction.
"""
from __future__ import annotations

__all__: list[str] = []
