"""View kinds: what a view parameter is, as the language names it, as the manifest records
it, and what the compiler and the launcher make of it."""
from __future__ import annotations

from enum import Enum

__all__ = ["ViewKind", "VIEW_ANNOTATIONS", "MAX_TENSOR_NDIM"]

MAX_TENSOR_NDIM = 8  # Tensor[T, N]: N from 1 to this (the C launcher's limit too)


class ViewKind(str, Enum):
    """A view kind. Its value is the manifest's spelling, and a member equals, hashes and
    formats as that string, so manifests, dictionaries and messages see plain text."""

    SLICE = "slice"
    DISJOINT_SLICE = "disjoint_slice"
    MUT_SLICE = "mut_slice"
    TENSOR = "tensor"
    MUT_TENSOR = "mut_tensor"
    DISJOINT_TENSOR = "disjoint_tensor"
    PTR = "ptr"  # only in @extern stubs: a plain T* for C++

    __hash__ = str.__hash__
    __str__ = str.__str__
    __format__ = str.__format__  # type: ignore[assignment]
    __repr__ = str.__repr__

    @property
    def annotation(self) -> str:
        """The language's name: ``Slice``, ``MutTensor``, ..."""
        return _ANNOTATION_OF[self]

    @property
    def is_tensor(self) -> bool:
        """N-d and strided: passed as pointer, shape[ndim], strides[ndim]."""
        return self in (ViewKind.TENSOR, ViewKind.MUT_TENSOR, ViewKind.DISJOINT_TENSOR)

    @property
    def is_writable(self) -> bool:
        """Kernels may store through it (DisjointSlice at the thread's own index only)."""
        return self not in (ViewKind.SLICE, ViewKind.TENSOR)

    @property
    def is_kernel_param(self) -> bool:
        """A kernel may take it (a ``Ptr`` is for C++ functions only)."""
        return self is not ViewKind.PTR


# language name -> kind
VIEW_ANNOTATIONS: dict[str, ViewKind] = {
    "Slice": ViewKind.SLICE, "DisjointSlice": ViewKind.DISJOINT_SLICE, "MutSlice": ViewKind.MUT_SLICE,
    "Tensor": ViewKind.TENSOR, "MutTensor": ViewKind.MUT_TENSOR, "DisjointTensor": ViewKind.DISJOINT_TENSOR,
    "Ptr": ViewKind.PTR,
}
_ANNOTATION_OF = {kind: name for name, kind in VIEW_ANNOTATIONS.items()}
