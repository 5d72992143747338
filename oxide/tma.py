"""The Tensor Memory Accelerator (sm_90): TMA descriptors on the host, and the kernel
language's ``ox.tma.*`` copies (docs/language.md, "TMA and mbarrier").

On the host, ``oxide.tma.descriptor(tensor, box=(rows, cols), swizzle=128)`` builds the tensor
map a kernel parameter annotated ``ox.tma.Descriptor[T, N]`` takes. In a kernel,
``ox.tma.load/store/prefetch/store_commit/store_wait/box_bytes/box_elements`` use it; calling
them on the host is an error.
"""
from __future__ import annotations

from typing import Any, NoReturn

from oxide.runtime.tensor_maps import MAX_BOX, SWIZZLES, TensorMap, descriptor

__all__ = ["Descriptor", "TensorMap", "descriptor", "MAX_BOX", "SWIZZLES", "load", "store", "prefetch",
           "store_commit", "store_wait", "box_bytes", "box_elements", "swizzle"]


class _DescriptorType:
    """``ox.tma.Descriptor[T, N]``: the annotation of a kernel parameter that takes a
    ``TensorMap`` of an N-d array of T (``oxide.tma.descriptor``)."""

    def __getitem__(self, item: Any) -> _DescriptorType:
        return self

    def __repr__(self) -> str:
        return "oxide.tma.Descriptor"


Descriptor = _DescriptorType()


def _device_only(name: str) -> NoReturn:
    raise RuntimeError(f"oxide.tma.{name}() exists only inside a kernel or device function compiled by oxide")


def load(desc: Any, bar: Any, dst: Any, *coords: Any) -> None:
    """One box of ``desc`` at ``coords`` (outermost first) into the shared array ``dst``; the
    barrier ``bar`` counts its bytes."""
    _device_only("load")


def store(desc: Any, src: Any, *coords: Any) -> None:
    """One box from the shared array ``src`` into ``desc``'s tensor at ``coords``."""
    _device_only("store")


def prefetch(desc: Any, *coords: Any) -> None:
    """Brings the box of ``desc`` at ``coords`` into L2."""
    _device_only("prefetch")


def store_commit() -> None:
    """Closes the stores issued so far into a group."""
    _device_only("store_commit")


def store_wait(n: int, read: bool = False) -> None:
    """Waits until at most ``n`` store groups are unfinished (``read=True``: until their shared
    memory may be reused)."""
    _device_only("store_wait")


def box_bytes(desc: Any) -> int:
    """Bytes of one box of ``desc``."""
    _device_only("box_bytes")


def box_elements(desc: Any) -> int:
    """Elements of one box of ``desc``."""
    _device_only("box_elements")


def swizzle(desc: Any) -> int:
    """The swizzle of ``desc`` in bytes (0, 32, 64 or 128)."""
    _device_only("swizzle")
