"""Types as the compiler sees them. Scalars are the language's own ``ScalarType`` objects."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from oxide.abi.views import ViewKind
from oxide.lang.types import SCALAR_TYPES, ScalarType, boolean, f32, f64, i32, i64
from oxide.abi.records import record_dtype_name
from oxide.lang.vectors import VECTOR_TYPES, VectorType

__all__ = [
    "ScalarType", "VectorType", "VECTOR_TYPES", "ViewType", "TensorMapType", "ThreadIndexType", "VoidType", "ArrayType", "TupleType", "StructType", "Type",
    "THREAD_INDEX", "THREAD_INDEX_DIM", "VOID", "BOOL", "I64", "I32", "F32", "F64", "SCALAR_TYPES",
    "ViewKind", "PRESENT_SUFFIX", "present_name", "is_present_name", "type_name", "is_int", "is_float", "as_scalar", "int_limits", "scalar_leaves", "literal_type",
]

BOOL, I32, I64, F32, F64 = boolean, i32, i64, f32, f64


def literal_type(value: object) -> ScalarType:
    """A Python literal's type before it meets a typed operand: bool, i64 or f64."""
    if isinstance(value, bool):
        return boolean
    if isinstance(value, int):
        return i64
    return f64



PRESENT_SUFFIX = ".present"  # no Python name holds a dot: an optional view's flag never meets a user's name


def present_name(name: str) -> str:
    """The IR name of the bool beside the optional view ``name`` (``ViewType.optional``): true where
    an array was passed, the flag slot of oxide.abi.params."""
    return name + PRESENT_SUFFIX


def is_present_name(name: str) -> bool:
    return name.endswith(PRESENT_SUFFIX)


@dataclass(frozen=True)
class ViewType:
    kind: ViewKind
    elem: ScalarType  # or a StructType of scalar fields (a view of records)
    ndim: int = 1
    # ``Optional[Tensor[f32, 2]]``: a parameter that may be None. The IR passes it as the view and
    # a bool beside it (``present_name``); a use of the view is typed as the view itself, which
    # the frontend allows only where a test proved it present (frontend/optional_views.py)
    optional: bool = False

    @property
    def writable(self) -> bool:
        return self.kind.is_writable

    @property
    def is_tensor(self) -> bool:
        return self.kind.is_tensor

    @property
    def present(self) -> ViewType:
        """The view itself, where it is known not to be None."""
        return ViewType(self.kind, self.elem, self.ndim)

    def __str__(self) -> str:
        lang = self.kind.annotation
        text = f"{lang}[{self.elem.name}, {self.ndim}]" if self.is_tensor else f"{lang}[{self.elem.name}]"
        return f"Optional[{text}]" if self.optional else text


@dataclass(frozen=True)
class ThreadIndexType:
    """An i64 known to be the calling thread's own global index (and so ≥ 0): ``axis`` "1d"
    from ``thread.index_1d()``, "row" / "col" from ``thread.index_2d()``, "depth" / "row" / "col"
    from ``thread.index_3d()`` (the z, y and x global indices)."""

    axis: str = "1d"

    def __str__(self) -> str:
        return "ThreadIndex" if self.axis == "1d" else f"ThreadIndex({self.axis})"


@dataclass(frozen=True)
class VoidType:
    def __str__(self) -> str:
        return "None"


@dataclass(frozen=True)
class ArrayType:
    """An array the kernel allocates: ``shared`` (one per block) or ``local`` (per thread).
    ``shape`` is None for dynamic shared memory, sized at launch."""

    # "shared", "local", module-level "constant" / "global" memory, or "cluster": the shared
    # array of another block of the cluster (ox.cluster.map_shared), a view, never declared
    space: str
    elem: ScalarType
    shape: tuple[int, ...] | None
    # a view into such an array (a slice ``a[k:]``, or an array passed on to a device function
    # where only its length is known): 1-D, its length a run-time value, checked like a view's
    runtime_length: bool = False
    read_only: bool = False  # passed to a ``Slice[T]`` parameter: the callee only reads it
    fragment: str | None = None  # a tensor-core operand (ox.mma.fragment_a/b/c): "a:m16n8k16"
    # a shared array's swizzle (shared.array(..., swizzle=128)): rows of that many bytes whose
    # 16-byte chunks are XORed with the row, the layout wgmma reads; the array is 1024-aligned
    swizzle: int = 0
    # ox.mbarrier.array(n): shared u64 barriers that only the mbarrier.* intrinsics (and tma.load)
    # take; a barrier is never read, written or compared as a number
    barrier: bool = False

    @property
    def size(self) -> int | None:
        if self.shape is None:
            return None
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def writable(self) -> bool:
        return not self.read_only

    @property
    def dynamic(self) -> bool:
        """Dynamic shared memory: sized at launch, its accesses unchecked."""
        return self.shape is None and not self.runtime_length

    def __str__(self) -> str:
        if self.fragment is not None:
            role, _, shape = self.fragment.partition(":")
            if role == "wgmma.c":
                return f"wgmma accumulator {shape} of {self.elem.name}"
            return f"mma fragment {role} {shape} of {self.elem.name}"
        if self.barrier:
            return f"mbarrier array[{'n' if self.shape is None else self.size}]"
        dims = "n" if self.runtime_length else "dynamic" if self.shape is None else "x".join(map(str, self.shape))
        space = "another block's shared" if self.space == "cluster" else self.space  # ox.cluster.map_shared
        text = f"{space} array[{dims}] of {self.elem.name}"
        if self.swizzle:
            text += f" (swizzle {self.swizzle})"
        return f"read-only {text}" if self.read_only else text

    @property
    def symbol_part(self) -> str:
        """The array's type as it appears in the symbol of a device function taking it."""
        dims = "n" if self.runtime_length else "dyn" if self.shape is None else "x".join(map(str, self.shape))
        return f"{self.space}{'_ro' if self.read_only else ''}_{'mbarrier' if self.barrier else self.elem.name}_{dims}"


@dataclass(frozen=True)
class TensorMapType:
    """``ox.tma.Descriptor[T, N]``: a TMA tensor map of an N-d array of ``T`` that the host
    built (a kernel parameter: the 128-byte ``CUtensorMap`` and the elements of one box,
    ``oxide.abi.params``). Inside a function its value is the map's generic address and the
    box's element count; only the ``tma.*`` intrinsics take it."""

    elem: ScalarType
    ndim: int

    def __str__(self) -> str:
        return f"tma.Descriptor[{self.elem.name}, {self.ndim}]"

    @property
    def symbol_part(self) -> str:
        return f"tmap_{self.elem.name}_{self.ndim}d"


@dataclass(frozen=True)
class StructType:
    """An ``@oxide.struct`` class: named fields, a value (like a C struct passed by value).
    ``qualname`` ("module:Class") tells apart structs of one name in different modules."""

    name: str
    qualname: str
    fields: tuple[tuple[str, "Type"], ...]

    def field_index(self, name: str) -> int | None:
        for k, (field_name, _) in enumerate(self.fields):
            if field_name == name:
                return k
        return None

    def __str__(self) -> str:
        return self.name

    # as an element in memory (views of records): C's layout, which is LLVM's for the NVPTX data
    # layout and NumPy's for an aligned record dtype
    kind = "struct"

    @property
    def alignment(self) -> int:
        return max(_alignment(t) for _, t in self.fields)

    @property
    def offsets(self) -> tuple[int, ...]:
        out, at = [], 0
        for _, t in self.fields:
            a = _alignment(t)
            at = (at + a - 1) // a * a
            out.append(at)
            at += _size(t)
        return tuple(out)

    @property
    def itemsize(self) -> int:
        a = self.alignment
        end = self.offsets[-1] + _size(self.fields[-1][1])
        return (end + a - 1) // a * a

    @property
    def bits(self) -> int:
        return 8 * self.itemsize

    def record_dtype(self) -> str:
        """The manifest's name of this element type (``oxide.abi.records``); scalar fields only."""
        return record_dtype_name([(name, type_name(t), off) for (name, t), off in zip(self.fields, self.offsets)],
                                 self.itemsize)


def _alignment(t: "Type") -> int:
    if isinstance(t, StructType):
        return t.alignment
    if isinstance(t, VectorType):
        return t.itemsize
    assert isinstance(t, ScalarType)
    return t.itemsize


def _size(t: "Type") -> int:
    assert isinstance(t, (ScalarType, VectorType, StructType))
    return t.itemsize


@dataclass(frozen=True)
class TupleType:
    elems: tuple["Type", ...]

    def __str__(self) -> str:
        return "tuple[" + ", ".join(type_name(e) for e in self.elems) + "]"


THREAD_INDEX = ThreadIndexType()
# the hardware dimension each ThreadIndex axis is the global index along
THREAD_INDEX_DIM = {"1d": "x", "col": "x", "row": "y", "depth": "z"}
VOID = VoidType()

Type = Union[ScalarType, VectorType, ViewType, ThreadIndexType, VoidType, ArrayType, TupleType, StructType,
             TensorMapType]


def scalar_leaves(ty: Type, path: str = "") -> list[tuple[str, ScalarType]]:
    """The scalars a struct or vector value is made of, in order, each with its dotted path
    ("shift.0" is lane 0 of field shift): how a kernel parameter of it is passed
    (``oxide.abi.params``)."""
    if isinstance(ty, ScalarType):
        return [(path, ty)]
    if isinstance(ty, VectorType):
        return [(f"{path}.{k}" if path else str(k), ty.elem) for k in range(ty.lanes)]
    assert isinstance(ty, StructType)
    out: list[tuple[str, ScalarType]] = []
    for name, field in ty.fields:
        out += scalar_leaves(field, f"{path}.{name}" if path else name)
    return out


def type_name(ty: Type) -> str:
    return ty.name if isinstance(ty, (ScalarType, VectorType)) else str(ty)


def as_scalar(ty: Type) -> ScalarType | None:
    """The scalar a value of ``ty`` computes with (ThreadIndex computes as i64)."""
    if isinstance(ty, ScalarType):
        return ty
    if isinstance(ty, ThreadIndexType):
        return I64
    return None


def is_int(ty: Type) -> bool:
    s = as_scalar(ty)
    return s is not None and s.kind in ("int", "uint")


def int_limits(ty: ScalarType) -> tuple[int, int]:
    """The smallest and largest value of an integer type."""
    if ty.kind == "uint":
        return 0, (1 << ty.bits) - 1
    return -(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1


def is_float(ty: Type) -> bool:
    s = as_scalar(ty)
    return s is not None and s.kind == "float"


def is_half_float(ty: Type) -> bool:
    """``f16`` or ``bf16`` (C++'s ``__half`` / ``__nv_bfloat16``, 2-byte structs in its ABI)."""
    return isinstance(ty, ScalarType) and ty.name in ("f16", "bf16")
