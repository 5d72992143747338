"""Launch arguments: scalar conversion, launch dimensions and the packed parameter block.

The ABI (see :mod:`oxide.runtime.manifest`): a scalar parameter is one value of its dtype; a
view parameter is a device pointer (u64) then its length in elements (i64); a struct or vector
parameter is its scalar fields, one slot each. Every scalar gets one 8-byte slot in a buffer made once per specialization; ``kernelParams`` is a
``void**`` array made once too, pointing at the slots of the parameters the entry point declares
(``KernelSpec.param_slots``: the compiler drops those its code never reads). A launch only packs the new values with
one precompiled ``struct.Struct.pack_into`` and hands the array's address to the driver.
"""
from __future__ import annotations

import math
import operator
import struct
import _thread  # threading's locks without importing threading (0.5 ms at import: issue 28)
from typing import TYPE_CHECKING, Any, Callable, Sequence

from oxide.abi.params import (
    PRESENT_SLOTS, SLICE_SLOTS, SLOT_BYTES, TENSOR_DIM_SLOTS, TENSOR_MAP_WORDS, VIEW_POINTER_SLOTS,
)

if TYPE_CHECKING:
    from oxide.runtime.manifest import ParamSpec

__all__ = [
    "ScalarError",
    "scalar_converter",
    "ArgPacker",
    "normalize_dims",
    "grid_for",
    "grid_for_2d",
    "MAX_BLOCK_THREADS",
    "MAX_GRID",
    "MAX_BLOCK",
]

MAX_BLOCK_THREADS = 1024  # every architecture oxide targets (sm_50 and newer)
MAX_GRID = (2**31 - 1, 65535, 65535)  # CUDA's limits per grid dimension (all compute capabilities)
MAX_BLOCK = (1024, 1024, 64)  # and per block dimension

_SLOT = SLOT_BYTES

# struct codes (standard sizes with "=") of each scalar as the kernel reads it
_FORMATS = {
    "i8": "b", "i16": "h", "i32": "i", "i64": "q",
    "u8": "B", "u16": "H", "u32": "I", "u64": "Q",
    "f16": "e", "bf16": "H", "f32": "f", "f64": "d", "bool": "B",
}  # fmt: skip

_INT_RANGES = {
    "i8": (-(2**7), 2**7 - 1), "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1),
    "u8": (0, 2**8 - 1), "u16": (0, 2**16 - 1), "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1),
}  # fmt: skip

_FLOAT_MAX = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38}


class ScalarError(TypeError):
    """Why a value cannot be a scalar argument; reads after "parameter 'a' of k "."""


def _describe(value: Any) -> str:
    from oxide.runtime.arrays import type_name

    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type_name(value)} {text}"


def _is_numpy_bool(value: Any) -> bool:
    cls = type(value)
    return cls.__module__ == "numpy" and cls.__name__ in ("bool_", "bool")


def _int_converter(dtype: str) -> Callable[[Any], int]:
    lo, hi = _INT_RANGES[dtype]

    def convert(value: Any) -> int:
        if type(value) is int:
            x = value
        else:
            try:
                x = operator.index(value)
            except TypeError:
                raise ScalarError(f"needs an integer ({dtype}); got {_describe(value)}") from None
        if lo <= x <= hi:
            return x
        raise ScalarError(f"needs an integer in the range of {dtype} ({lo}..{hi}); got {x}")

    return convert


def _too_large(value: Any, dtype: str) -> ScalarError:
    return ScalarError(f"needs a number in the range of {dtype}; got {_describe(value)}, too large for a float")


def _to_float(value: Any, dtype: str) -> float:
    if type(value) is float or type(value) is int:
        try:
            return float(value)
        except OverflowError:  # an int beyond the largest double
            raise _too_large(value, dtype) from None
    if isinstance(value, (str, bytes, complex)):
        raise ScalarError(f"needs a number ({dtype}); got {_describe(value)}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ScalarError(f"needs a number ({dtype}); got {_describe(value)}") from None
    except OverflowError:
        raise _too_large(value, dtype) from None


def _narrow_float(x: float, dtype: str) -> float:
    # Out of the narrow type's range: round the way a cast on the GPU does (to +-inf), rather
    # than let struct refuse the value. struct rounds to nearest even and refuses exactly the
    # values that round past the largest finite one (no NumPy: a launch does not need it).
    limit = _FLOAT_MAX.get(dtype)
    if limit is not None and abs(x) > limit and not math.isinf(x):
        try:
            struct.pack("=e" if dtype == "f16" else "=f", x)
        except OverflowError:
            return math.copysign(math.inf, x)
    return x


def _float_converter(dtype: str) -> Callable[[Any], float]:
    if dtype == "f64":
        return lambda value: _to_float(value, "f64")

    limit = _FLOAT_MAX[dtype]

    def convert(value: Any) -> float:
        x = float(value) if type(value) is float else _to_float(value, dtype)
        return x if -limit <= x <= limit else _narrow_float(x, dtype)

    return convert


def _bf16_bits(value: Any) -> int:
    x = _narrow_float(_to_float(value, "bf16"), "bf16")
    if math.isnan(x):
        return 0x7FC0
    (bits,) = struct.unpack("=I", struct.pack("=f", x))
    bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
    return (bits >> 16) & 0xFFFF


def _bool_converter(value: Any) -> int:
    if value is True or value is False or _is_numpy_bool(value):
        return 1 if value else 0
    if type(value) is int and value in (0, 1):
        return value
    raise ScalarError(f"needs a bool; got {_describe(value)}")


def scalar_converter(dtype: str) -> Callable[[Any], Any]:
    """The function that turns a Python or NumPy scalar into what ``dtype``'s slot packs."""
    if dtype in _INT_RANGES:
        return _int_converter(dtype)
    if dtype == "bool":
        return _bool_converter
    if dtype == "bf16":
        return _bf16_bits
    if dtype in ("f16", "f32", "f64"):
        return _float_converter(dtype)
    raise ValueError(f"unknown scalar type {dtype!r} in the manifest")


class ArgPacker:
    """The kernel parameter block of one specialization, built once, refilled per launch.

    Not reentrant: hold :attr:`lock` from :meth:`pack` until the driver has copied the block
    (``cuLaunchKernel`` copies the parameters before it returns).
    """

    def __init__(self, params: Sequence[ParamSpec], passed: Sequence[int] | None = None) -> None:
        """``passed``: the slots where the parameters the entry point declares begin
        (``KernelSpec.param_slots``); None: every parameter. Every slot is packed either way
        (launch preconditions read them all); ``kernelParams`` points at the passed ones."""
        import ctypes  # made on the first launch; importing kernels must not import ctypes

        from oxide.abi.manifest import entry_param_starts

        fmt = "="
        starts = entry_param_starts(params)  # the slot where each kernel parameter (.param) begins
        for p in params:
            if p.is_constexpr:
                continue  # compiled into the specialization, not passed
            if p.is_tensor_map:  # the CUtensorMap (one .param of 128 bytes), then its box's elements
                fmt += f"{TENSOR_MAP_WORDS}Qq"
                continue
            if p.is_tensor:
                fmt += "Q" * VIEW_POINTER_SLOTS + "q" * (TENSOR_DIM_SLOTS * p.ndim)  # pointer, shape, strides (elements)
            elif p.is_view:
                fmt += "Q" * VIEW_POINTER_SLOTS + "q" * (SLICE_SLOTS - VIEW_POINTER_SLOTS)  # pointer, length
            if p.is_view and p.optional:  # its flag: 1 present, 0 None (oxide.abi.params.PRESENT_SLOTS)
                fmt += ("?" + f"{_SLOT - 1}x") * PRESENT_SLOTS
            if not p.is_view:  # a scalar, or each scalar field of a struct or vector (oxide.abi.params)
                for field, dtype in p.fields or (("", p.dtype),):
                    code = _FORMATS.get(dtype)
                    if code is None:
                        what = f"field {field!r} of parameter {p.name!r}" if field else f"parameter {p.name!r}"
                        raise ValueError(f"unknown scalar type {dtype!r} of {what} in the manifest")
                    fmt += code + f"{_SLOT - struct.calcsize('=' + code)}x"
        if passed is not None:
            unknown = sorted(set(passed) - set(starts))
            if unknown:  # the manifest's reader checks this too (oxide.abi.manifest)
                raise ValueError(f"param_slots {unknown} are not the slots of parameters in the manifest")
            starts = list(passed)
        self.params = params
        self.passed = None if passed is None else tuple(passed)
        self.struct = struct.Struct(fmt)
        self.slots = self.struct.size // _SLOT
        self.buffer = ctypes.create_string_buffer(max(self.struct.size, _SLOT))
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(starts), 1))(*(base + _SLOT * i for i in starts))
        self.address = ctypes.addressof(self.pointers) if starts else 0
        self.lock = _thread.allocate_lock()

    def passing(self, passed: Sequence[int] | None) -> ArgPacker:
        """A packer of the same slots for an entry point that declares ``passed`` (this one when
        they are the same): a kernel's index32 instance may read fewer parameters."""
        if passed == self.passed or (passed is not None and self.passed is not None and tuple(passed) == self.passed):
            return self
        return ArgPacker(self.params, passed)

    def pack(self, values: Sequence[Any]) -> int:
        """Writes the slot values; returns the ``void**`` address for ``kernelParams``."""
        self.struct.pack_into(self.buffer, 0, *values)
        return self.address


def _dims(value: Any, what: str) -> tuple[int, int, int]:
    if type(value) is int:
        dims: tuple[Any, ...] = (value,)
    elif isinstance(value, (tuple, list)) and 1 <= len(value) <= 3:
        dims = tuple(value)
    else:
        try:
            dims = (operator.index(value),)
        except TypeError:
            raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints; got {value!r}") from None
    out = []
    for d in dims:
        try:
            n = operator.index(d)
        except TypeError:
            raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints; got {value!r}") from None
        if n < 0 or n > 0xFFFFFFFF:
            raise ValueError(f"{what} dimensions must be between 0 and 2**32-1; got {value!r}")
        out.append(n)
    while len(out) < 3:
        out.append(1)
    return (out[0], out[1], out[2])


def normalize_dims(grid: Any, block: Any, kernel: str = "") -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(grid, block)`` as 3-tuples; dimensions beyond CUDA's limits (grid x < 2**31, y and z
    <= 65535; block x, y <= 1024, z <= 64, at most 1024 threads) are refused here, before
    anything is launched."""
    g = _dims(grid, "grid")
    b = _dims(block, "block")
    of = f" of kernel {kernel}" if kernel else ""
    for what, dims, limits in (("grid", g, MAX_GRID), ("block", b, MAX_BLOCK)):
        for axis, n, limit in zip("xyz", dims, limits):
            if n > limit:
                raise ValueError(
                    f"the {what}{of} is at most {limit} along {axis}; got {what} {dims} "
                    f"(CUDA's limits: grid {MAX_GRID}, block {MAX_BLOCK})"
                )
    threads = b[0] * b[1] * b[2]
    if threads > MAX_BLOCK_THREADS:
        raise ValueError(f"a block has at most {MAX_BLOCK_THREADS} threads; got block {b} = {threads} threads")
    if threads == 0:
        raise ValueError(f"a block needs at least one thread; got block {block!r}")
    return g, b


MAX_PORTABLE_CLUSTER_BLOCKS = 8  # more needs the kernel's non-portable cluster size (up to 16 on sm_90)


def cluster_dims(cluster: Any, grid: tuple[int, int, int]) -> tuple[int, int, int]:
    """``cluster`` (an int or a tuple of up to 3 ints) as a 3-tuple that tiles ``grid``."""
    c = _dims(cluster, "cluster")
    if 0 in c:
        raise ValueError(f"a cluster has at least one block in each dimension; got cluster {cluster!r}")
    if any(g % k for g, k in zip(grid, c)):
        raise ValueError(
            f"grid {grid} is not a whole number of clusters {c}: each grid dimension must be a multiple "
            "of the cluster's"
        )
    return c


def grid_for(n: int, block: int = 256) -> int:
    """The number of blocks of ``block`` threads that cover ``n`` elements: ceil(n / block)."""
    n = operator.index(n)
    block = operator.index(block)
    if block <= 0:
        raise ValueError(f"block must be positive; got {block}")
    if n < 0:
        raise ValueError(f"n must not be negative; got {n}")
    return -(-n // block)


def grid_for_2d(rows: int, cols: int, block: tuple[int, int] = (32, 8)) -> tuple[int, int]:
    """The 2-D grid of ``block`` = (threads along x, threads along y) blocks that covers a
    ``rows`` x ``cols`` domain, x running along the columns (``thread.index_2d()``'s order):
    ``(ceil(cols / block[0]), ceil(rows / block[1]))``. Zero rows or columns give an empty grid,
    which launches nothing."""
    bx, by = block
    return grid_for(cols, bx), grid_for(rows, by)
