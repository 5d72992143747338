"""A kernel's arguments at a launch through Python: the checks that name a parameter (how many,
array kinds and element types, read-only and self-overlapping arrays, tensors autograd follows,
aliasing between a read and a written view, the GPU each array is on, Constexpr values,
scalars) and their conversion into the slot values the packer writes.

Checked against the kernel's ``Dispatch`` table (``dispatch.py``). ``kernel.py`` imports this
module on the first launch, not with the kernels: it reads arrays (``arrays.py``).
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Sequence

from oxide.abi.launcher import INDEX32_LIMIT
from oxide.abi.params import PRESENT_SLOTS
from oxide.runtime.arrays import (
    ABSENT,
    TYPESTR_DTYPES,
    TensorView,
    ViewError,
    itemsize,
    may_overlap_itself,
    memory_problem,
    tensor_view_of,
    view_of,
)
from oxide.runtime.dispatch import CONSTEXPR, Dispatch, Specialization
from oxide.runtime.launch import ScalarError

# the converters whose argument takes several slots (a list of values): a struct's fields, and a TMA
# descriptor's words. oxide.runtime.struct_params and oxide.runtime.tensor_maps add theirs when they
# are imported, which a kernel with a struct or descriptor parameter does (Kernel._build_dispatch);
# a kernel without one imports neither (issue 28, cold start)
SEVERAL_SLOTS: set[type] = set()

if TYPE_CHECKING:
    from oxide.runtime.arrays import ArrayView

__all__ = [
    "prepare", "check_aliasing", "choose_by_constexprs", "slot_values", "choose_by_scalars", "no_match",
    "check_devices", "is_torch_tensor", "needs_autograd", "numpy_scalar_dtype", "fits_index32", "SEVERAL_SLOTS",
]


def prepare(d: Dispatch, kernel: str, args: Sequence[Any]) -> tuple[Specialization, list[Any], list[ArrayView]]:
    """Checks ``args`` against kernel ``kernel``'s table ``d`` and converts them into slot
    values: all on the CPU."""
    if len(args) != len(d.names):
        raise TypeError(
            f"{kernel}() takes {len(d.names)} argument{'s' if len(d.names) != 1 else ''} "
            f"({', '.join(d.names)}); got {len(args)}"
        )
    views: list[Any] = []
    dtypes: list[str] = []
    absent = False
    for k, (i, ndim, vector) in enumerate(zip(d.view_index, d.tensor_ndim or (0,) * len(d.view_index),
                                              d.vectors or ("",) * len(d.view_index))):
        if args[i] is None:
            if not (d.optional and d.optional[k]):
                raise TypeError(f"parameter {d.names[i]!r} of {kernel} needs an array; got None (declare it "
                                f"Optional[...] in the kernel to take None)")
            views.append(ABSENT)
            dtypes.append("")
            absent = True
            continue
        try:
            if vector:
                from oxide.runtime.vector_views import vector_view_of  # views of vector elements only

                view = vector_view_of(args[i], vector, ndim or 1, ndim > 0)
            else:
                view = tensor_view_of(args[i], ndim) if ndim else view_of(args[i])
        except ViewError as e:
            raise TypeError(e.render(d.names[i], kernel)) from None
        views.append(view)
        dtypes.append(view.dtype)
    key = tuple(dtypes)
    candidates = d.by_view_dtypes.get(key) if not absent else [
        v for known, variants in d.by_view_dtypes.items()
        if all(want == "" or want == have for want, have in zip(key, known)) for v in variants] or None
    if candidates is None:
        raise TypeError(no_match(d, kernel, views))
    if d.constexpr_index:
        candidates = choose_by_constexprs(d, kernel, candidates, args)
    if len(candidates) == 1:
        variant = candidates[0]
        values = slot_values(kernel, variant, args, views)
    else:
        variant, values = choose_by_scalars(d, kernel, candidates, args, views)
    for view, writable, i in zip(views, d.mutable, d.view_index):
        if view is ABSENT:
            continue
        problem = memory_problem(view)
        if problem is not None:
            raise TypeError(f"parameter {d.names[i]!r} of {kernel} {problem}")
        if not writable:
            continue
        if view.readonly:
            raise TypeError(
                f"parameter {d.names[i]!r} of {kernel} is written by the kernel; got a read-only array"
            )
        if type(view) is TensorView and may_overlap_itself(view.shape, view.strides):
            raise TypeError(
                f"parameter {d.names[i]!r} of {kernel} is written by the kernel; got a view whose elements "
                f"overlap (shape {view.shape}, strides {view.strides} elements: a broadcast or expand()ed "
                "array), so threads would write the same element — pass a contiguous copy (.contiguous(), .copy())"
            )
        if is_torch_tensor(view.owner) and needs_autograd(view.owner):
            raise TypeError(
                f"parameter {d.names[i]!r} of {kernel} is written by the kernel; got a tensor that requires "
                "grad, and autograd cannot follow a write by an oxide kernel — write under torch.no_grad(), "
                "or into a tensor that does not require grad (e.g. out.detach())"
            )
    if len(views) > 1:
        check_aliasing(d, kernel, views)
    if variant.index32 is not None and fits_index32(views):
        variant = variant.index32
    for i in d.tensor_map_index:
        # the descriptors' arrays: kept alive through the launch, and the launch joins their
        # framework's stream as it does for views (after the checks, which index views only)
        views.append(args[i].view)
    return variant, values, views


def fits_index32(views: list[Any]) -> bool:
    """Whether every tensor among ``views`` spans at most ``INDEX32_LIMIT`` elements and has no
    extent or stride beyond it, so that a kernel's index32 instance (oxide_build/lower/index32.py)
    reads its shape and strides as i32 and computes each offset exactly, and whose last axis is
    contiguous (stride 1) or of one element, as the instance reads that stride as 1: the rule of
    oxide/include/oxide/index32.h, which the C launcher and launch.hpp apply (tests/test_index32_cpp.py
    holds the three to one table)."""
    for v in views:
        if type(v) is not TensorView:
            continue
        if v.length > INDEX32_LIMIT or any(d > INDEX32_LIMIT for d in v.shape) or any(abs(s) > INDEX32_LIMIT for s in v.strides):
            return False
        # the instance reads the last axis's stride as 1 (an empty tensor has no element to read)
        if v.shape and v.shape[-1] > 1 and v.strides[-1] != 1 and all(d > 0 for d in v.shape):
            return False
    return True

def check_aliasing(d: Dispatch, kernel: str, views: list[Any]) -> None:
    """A read-only view (Slice, Tensor) must not overlap a view the kernel writes: its
    loads go through the read-only data cache, which does not see the kernel's writes."""
    spans = [(v.ptr, v.ptr + v.length * itemsize(v.dtype)) for v in views]
    for a, (lo_a, hi_a) in enumerate(spans):
        if d.mutable[a] or lo_a == hi_a:
            continue
        for b, (lo_b, hi_b) in enumerate(spans):
            if d.mutable[b] and lo_b != hi_b and lo_a < hi_b and lo_b < hi_a:
                ra, rb = d.names[d.view_index[a]], d.names[d.view_index[b]]
                raise TypeError(
                    f"parameter {ra!r} of {kernel} overlaps parameter {rb!r}, which the kernel writes; "
                    f"a read-only view must not alias a writable one — pass a copy, or declare {ra!r} "
                    "DisjointSlice/MutSlice to read and write the same memory"
                )

def choose_by_constexprs(d: Dispatch, kernel: str, candidates: list[Specialization], args: Sequence[Any]
                        ) -> list[Specialization]:
    """Constexpr parameters select the specialization compiled for their values."""
    chosen = candidates
    for i in d.constexpr_index:
        name = d.names[i]
        value = args[i]
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                import operator

                value = operator.index(value)
            except TypeError:
                raise TypeError(f"parameter {name!r} of {kernel} is a compile-time int; "
                                f"got {type(args[i]).__name__}") from None
        matching = [v for v in chosen if v.spec.specialization.get(name) == str(value)]
        if not matching:
            values = sorted({int(v.spec.specialization[name]) for v in candidates if name in v.spec.specialization})
            raise TypeError(f"parameter {name!r} of {kernel} must be one of the compiled values "
                            f"{', '.join(map(str, values))}; got {value}")
        chosen = matching
    return chosen

def slot_values(kernel: str, variant: Specialization, args: Sequence[Any], views: list[ArrayView]) -> list[Any]:
    """The slot values of ``args`` for ``variant`` (views already read)."""
    values: list[Any] = []
    append = values.append
    v = 0
    for i, conv in enumerate(variant.converters):
        if conv is CONSTEXPR:
            continue
        if conv is None:
            view = views[v]
            v += 1
            param = variant.spec.params[i]
            if view is ABSENT:  # None for an optional view: its slots 0, its flag 0 (oxide.abi.params)
                values.extend([0] * (param.slot_count - PRESENT_SLOTS))
                append(False)
                continue
            append(view.ptr)
            if type(view) is TensorView:
                values.extend(view.shape)
                values.extend(view.strides)
            else:
                append(view.length)
            if param.optional:
                append(True)
        else:
            try:
                if type(conv) in SEVERAL_SLOTS:
                    values.extend(conv(args[i]))
                else:
                    append(conv(args[i]))
            except ScalarError as e:
                raise TypeError(f"parameter {variant.spec.params[i].name!r} of {kernel} {e}") from None
    return values

def choose_by_scalars(
    d: Dispatch, kernel: str, candidates: list[Specialization], args: Sequence[Any], views: list[ArrayView]
) -> tuple[Specialization, list[Any]]:
    # Only scalars tell these specializations apart: a NumPy scalar picks by its dtype,
    # a Python number the first specialization it converts to.
    for variant in candidates:
        if all(
            numpy_scalar_dtype(a) in (None, p.dtype)
            for a, p in zip(args, variant.spec.params)
            if not (p.is_view or p.is_aggregate)
        ):
            try:
                return variant, slot_values(kernel, variant, args, views)
            except TypeError:
                continue
    raise TypeError(no_match(d, kernel, views, args))

def no_match(d: Dispatch, kernel: str, views: list[ArrayView], args: Sequence[Any] = ()) -> str:
    """Why no specialization takes these arguments."""
    if len(d.variants) == 1:
        params = d.variants[0].spec.params
        for view, i in zip(views, d.view_index):
            if view is not ABSENT and view.dtype != params[i].dtype:
                return f"parameter {d.names[i]!r} of {kernel} needs {params[i].dtype} elements; got {view.dtype}"
    got = ", ".join(f"{d.names[i]}: {v.dtype or 'None'}" for v, i in zip(views, d.view_index))
    if args:
        scalars = [i for i in range(len(d.names)) if i not in d.view_index]
        got = ", ".join(filter(None, [got] + [f"{d.names[i]}: {type(args[i]).__name__}" for i in scalars]))
    available = ", ".join(v.label for v in d.variants)
    return f"{kernel} has no specialization for these arguments ({got}); available: {available}"


def check_devices(d: Dispatch, kernel: str, views: list[Any], ctx: int) -> None:
    """With several GPUs: every array must be on the device of the current context, where
    the kernel runs (pointers of another device would fault or read the wrong memory)."""
    from oxide.runtime import device

    here = device.context_device(ctx).ordinal
    found = [(d.names[i], device.pointer_device(v.ptr)) for v, i in zip(views, d.view_index) if v.ptr]
    on = {name: ordinal for name, ordinal in found if ordinal is not None}
    if len(set(on.values())) > 1:
        listed = ", ".join(f"{name!r} on cuda:{ordinal}" for name, ordinal in on.items())
        raise TypeError(f"the arrays passed to {kernel} are on different GPUs ({listed}); "
                        "put them on one device")
    for name, ordinal in on.items():
        if ordinal != here:
            raise TypeError(
                f"parameter {name!r} of {kernel} is on cuda:{ordinal}, but the current device is "
                f"cuda:{here}, where the kernel would run; make cuda:{ordinal} current first "
                f"(torch.cuda.set_device({ordinal}), cupy.cuda.Device({ordinal}).use(), ...)")


def is_torch_tensor(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, getattr(torch, "Tensor", ()))


def needs_autograd(t: Any) -> bool:
    """A write into ``t`` would have to be recorded by autograd: it requires grad and grad mode
    is on (PyTorch refuses in-place operations on such leaves; under torch.no_grad() they are
    fine, as an optimizer's updates)."""
    if not getattr(t, "requires_grad", False):
        return False
    enabled = getattr(sys.modules["torch"], "is_grad_enabled", None)
    return bool(enabled()) if enabled is not None else True


def numpy_scalar_dtype(value: Any) -> str | None:
    """The dtype of a NumPy scalar; None for anything else."""
    cls = type(value)
    if cls.__module__ != "numpy":
        return None
    dtype = getattr(value, "dtype", None)
    return TYPESTR_DTYPES.get(getattr(dtype, "str", ""), None)
