"""What a kernel's manifest says about it, arranged for a fast launch: the ``Dispatch`` table and
one ``Specialization`` per compiled instance with its launch state. Plain data, cheap to import
(``kernel.py`` imports it with the kernels); ``arguments.py`` checks arguments against it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from oxide.runtime import artifacts
    from oxide.runtime.launch import ArgPacker
    from oxide.runtime.manifest import KernelSpec

__all__ = ["CONSTEXPR", "Dispatch", "Specialization"]


def _constexpr(value: Any) -> Any:  # marks a Constexpr parameter: it selects, it is not packed
    return value


CONSTEXPR = _constexpr


class Specialization:
    """One compiled instance of a kernel (one per TypeVar assignment) and its launch state."""

    __slots__ = ("spec", "packer", "converters", "index", "functions", "planned", "shared_limits", "index32",
                 "is_index32", "fast", "fast_condition")

    def __init__(
        self,
        spec: KernelSpec,
        packer: ArgPacker,
        converters: list[Callable[[Any], Any] | None],  # per parameter; None for views
        index: int = 0,  # position among the kernel's specializations (the C plan's variant)
        is_index32: bool = False,  # the index32 instance of the specialization at ``index``
        fast_index: int | None = None,  # the C plan's variant of its fast instance, if it has one
    ) -> None:
        self.spec = spec
        self.packer = packer
        self.converters = converters
        self.index = index
        self.is_index32 = is_index32
        # its index32 instance (oxide_build/lower/index32.py: the same slots, tensor offsets in
        # 32 bits), launched instead when every tensor argument fits oxide.abi.launcher.INDEX32_LIMIT
        # (arguments.fits_index32); None when it has none
        self.index32: Specialization | None = None
        if spec.index32_symbol and not is_index32:
            # its own entry point, which may declare other parameters (KernelSpec.index32_param_slots)
            self.index32 = Specialization(
                spec._replace(symbol=spec.index32_symbol, index32_symbol="", param_slots=spec.index32_param_slots,
                              index32_param_slots=None),
                packer.passing(spec.index32_param_slots), converters, index, is_index32=True)
        # its fast instance (oxide_build/passes/launch_instances.py: the body proven under
        # launch-invariant facts), launched instead when ``fast_condition`` holds over the packed
        # slots and the launch dimensions (preconditions.evaluate); None when it has none. The
        # index32 instance's fast instance is the fast instance's index32 instance.
        self.fast: Specialization | None = None
        self.fast_condition = spec.fast_condition
        if spec.fast_symbol and fast_index is not None and not is_index32:
            self.fast = Specialization(
                spec._replace(symbol=spec.fast_symbol, param_slots=spec.fast_param_slots,
                              index32_symbol=spec.fast_index32_symbol,
                              index32_param_slots=spec.fast_index32_param_slots, fast_symbol="", fast_condition=(),
                              fast_param_slots=None, fast_index32_symbol="", fast_index32_param_slots=None),
                packer.passing(spec.fast_param_slots), converters, fast_index)
            if self.index32 is not None:
                self.index32.fast = self.fast.index32
        self.functions: dict[int, Any] = {}  # context uid (device.context_uid) -> CUfunction
        # context uid -> the dynamic shared bytes the C plan was told its function there takes
        self.planned: dict[int, int] = {}
        # context uid -> the dynamic shared bytes per block its function takes now
        # (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, raised by dynamic_shared.allow)
        self.shared_limits: dict[int, int] = {}

    @property
    def label(self) -> str:
        if not self.spec.specialization:
            return "(" + ", ".join(f"{p.name}: {p.dtype}" for p in self.spec.params) + ")"
        return "(" + ", ".join(f"{k}={v}" for k, v in sorted(self.spec.specialization.items())) + ")"


class Dispatch:
    """What a kernel's manifest says about it, arranged for a fast launch. (A plain class: a
    NamedTuple would cost a millisecond when a module of kernels is imported.)"""

    __slots__ = ("located", "names", "view_index", "mutable", "variants", "by_view_dtypes", "tensor_ndim",
                 "constexpr_index", "tensor_map_index", "vectors", "on_cpu", "optional")

    located: artifacts.LocatedManifest
    names: tuple[str, ...]
    view_index: tuple[int, ...]  # positions of the view parameters
    mutable: tuple[bool, ...]  # per view parameter: written by the kernel
    variants: list[Specialization]
    by_view_dtypes: dict[tuple[str, ...], list[Specialization]]
    tensor_ndim: tuple[int, ...]  # per view parameter: ndim of a Tensor, 0 for a 1-D view
    constexpr_index: tuple[int, ...]  # positions of Constexpr parameters (pick the variant)
    tensor_map_index: tuple[int, ...]  # positions of TMA descriptor parameters (their arrays join the views)
    # per view parameter: the vector type of its elements ("f32x4": an array of the lanes is read,
    # oxide/runtime/vector_views.py), "" for scalar or record elements; () when no view has vectors
    vectors: tuple[str, ...]
    on_cpu: bool  # read from the module compiled for the CPU device (device_choice.ON_CPU when it was made)
    # per view parameter: it may be None (Optional[...]: ParamSpec.optional); () when none may
    optional: tuple[bool, ...]

    def __init__(self, **fields: Any) -> None:
        fields.setdefault("tensor_map_index", ())
        fields.setdefault("vectors", ())
        fields.setdefault("on_cpu", False)
        fields.setdefault("optional", ())
        for name in self.__slots__:
            setattr(self, name, fields.pop(name))
        if fields:
            raise TypeError(f"unknown fields {sorted(fields)}")
