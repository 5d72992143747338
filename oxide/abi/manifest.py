"""The manifest (part of the build/runtime contract): what an installed package knows about its precompiled kernels.

Written by ``oxide_build`` next to each compiled module as ``_oxide/<module>.json`` with the
code files beside it; read by the runtime on first launch. Plain JSON, so a wheel can be
inspected with ``unzip -p``.

A manifest is checked against its schema when it is read (``ModuleManifest.from_json``): a
missing, mistyped or out-of-bounds field is a ``ManifestError`` naming the field (the runtime
adds the manifest's path). Every field is bounded: a code file name and ``source`` must be
plain file names inside the module's directory (no directory part, no ``..``, not absolute), so
a manifest cannot make the runtime load, hash or JIT-compile a file from outside its package;
names and symbols are identifiers, digests are SHA-256 hex, counts, dimensions, lines and
slots are within what CUDA and the launchers can take (a parameter block of at most
``MAX_PARAM_SLOTS`` slots, tensors of at most 4 * ``MAX_TENSOR_NDIM`` dimensions), and preconditions follow
their encoding (``oxide.abi.preconditions``: programs over integer slots the kernel has; the
expressions of a manifest of format 3 or older are compiled into programs as they are read).

The kernel parameter block the runtime packs is described in ``oxide.abi.params``.
"""
# No ``from __future__ import annotations`` here: typing.NamedTuple compiles each field's string
# annotation into a ForwardRef, 47 compiles for the classes below, 0.3 ms of a process's first
# launch (issue 28, cold start). The annotations are evaluated instead (Python 3.10's ``X | Y``).

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from .params import (
    AGGREGATE_PARAMS,
    CONSTEXPR_PARAM,
    SCALAR_PARAM,
    STRUCT_PARAM,
    TENSOR_MAP_PARAM,
    TENSOR_MAP_WORDS,
    VECTOR_PARAM,
    param_slot_count,
    param_slot_dtypes,
)
from .preconditions import (
    ARITHMETIC,
    COMPARISONS,
    INTEGER_TYPES,
    KERNEL_PROGRAM_LIMIT,
    Instruction,
    compile_expression,
    program_problem,
)
from .records import is_record_dtype
from .scalars import SCALAR_TYPES
from .vectors import VECTOR_LANES
from .views import MAX_TENSOR_NDIM, ViewKind

if TYPE_CHECKING:  # type checkers see NamedTuple; oxide.abi.records_base says why not at run time
    from typing import NamedTuple as Record
else:
    from .records_base import Record

__all__ = [
    "file_sha256",
    "MANIFEST_FORMAT",
    "PARTS_MANIFEST_FORMAT",
    "OPTIONAL_MANIFEST_FORMAT",
    "ModulePart",
    "READABLE_MANIFEST_FORMATS",
    "LAUNCH_HPP_MANIFEST_FORMATS",
    "EXPRESSION_MANIFEST_FORMATS",
    "MAX_PARAM_SLOTS",
    "SCALAR_PARAM",
    "CONSTEXPR_PARAM",
    "STRUCT_PARAM",
    "VECTOR_PARAM",
    "TENSOR_MAP_PARAM",
    "ARTIFACT_DIR",
    "ParamSpec",
    "KernelSpec",
    "Precondition",
    "ErrorSite",
    "ModuleArrayRecord",
    "ManifestError",
    "ModuleManifest",
    "entry_param_starts",
    "changed_source",
    "code_file_name_problem",
    "manifest_path",
    "load_manifest",
]

# 2: entry points may declare fewer parameters than the slots (KernelSpec.param_slots); a runtime
# that reads only format 1 would pass them every slot, so it must refuse these manifests.
# 3: the kernels are split into parts, each compiled on its own (ModulePart).
# 4: a launch precondition is its program ("code", oxide.abi.preconditions), no longer the
# expression ("expr") each launcher compiled itself
MANIFEST_FORMAT = 4
PARTS_MANIFEST_FORMAT = 3  # the oldest format that may have parts
# 5: a view parameter may be None ("optional": ParamSpec.optional, one more slot), which a runtime
# that reads format 4 would pack wrong: a manifest with such a parameter is written as format 5
OPTIONAL_MANIFEST_FORMAT = 5
# the formats the Python runtime reads (format 1: every entry point takes every slot; formats 1
# to 3: preconditions as expressions, compiled as they are read)
READABLE_MANIFEST_FORMATS = (1, 2, 3, 4, 5)
# the formats oxide/include/oxide/launch.hpp (C++ host code) reads: programs only; an older
# manifest is refused there, with the advice to rebuild the package
LAUNCH_HPP_MANIFEST_FORMATS = (4, 5)
EXPRESSION_MANIFEST_FORMATS = (1, 2, 3)  # preconditions as expressions
ARTIFACT_DIR = "_oxide"

# CUDA's kernel parameter space: 32764 bytes (Volta and newer with CUDA 12.1), 8-byte slots
MAX_PARAM_SLOTS = 32764 // 8
_MAX_TEXT = 4096  # a name, symbol, path or description
_MAX_ITEMS = 1 << 20  # kernels, error sites, arrays, sources of one module
_MAX_LINE = 2**31 - 1
_MAX_TMA_NDIM = 5  # cuTensorMapEncodeTiled's rank limit
# the dimensions a manifest may give a tensor: the compiler writes at most MAX_TENSOR_NDIM (the C
# launcher's limit; the Python path launches more), and a bound keeps ndim: 10**12 from
# allocating 2 * 10**12 slots
_MAX_MANIFEST_NDIM = 4 * MAX_TENSOR_NDIM
_MAX_PRECONDITION_DEPTH = 64
_MAX_PRECONDITION_NODES = 1 << 16


# The shapes of names, checked with str methods, not regular expressions: compiling five patterns
# cost 0.3 ms of a process's first launch, which reads a manifest (issue 28, cold start).
def _is_identifier(text: str) -> bool:
    """``[A-Za-z_][A-Za-z0-9_]*``"""
    return text.isascii() and text.isidentifier()


def _is_dotted(text: str) -> bool:
    """``[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*``"""
    return text.isascii() and all(part.isidentifier() for part in text.split("."))


def _is_symbol(text: str) -> bool:
    """``[A-Za-z_$][A-Za-z0-9_$.]*``"""
    return text[:1] != "." and _is_identifier(text.replace("$", "_").replace(".", "_"))


def _is_sha256(text: str) -> bool:
    """``[0-9a-f]{64}``"""
    return len(text) == 64 and not text.strip("0123456789abcdef")


def _is_arch(text: str) -> bool:
    """``(sm|compute)_[0-9]{2,3}[af]?``"""
    family, underscore, number = text.partition("_")
    if family not in ("sm", "compute") or not underscore:
        return False
    if number[-1:] in ("a", "f"):
        number = number[:-1]
    return 2 <= len(number) <= 3 and number.isascii() and number.isdigit()


def _drive_letter(name: str) -> bool:
    """``[A-Za-z]:`` at the start"""
    return name[1:2] == ":" and name[:1].isascii() and name[:1].isalpha()


# the kinds a kernel parameter may have besides SCALAR_PARAM and CONSTEXPR_PARAM
_PARAM_VIEW_KINDS = frozenset(k for k in ViewKind if k.is_kernel_param)
_PARAM_KINDS = frozenset((SCALAR_PARAM, CONSTEXPR_PARAM, TENSOR_MAP_PARAM, *AGGREGATE_PARAMS, *_PARAM_VIEW_KINDS))
_TENSOR_KINDS = frozenset(k for k in _PARAM_VIEW_KINDS if k.is_tensor)


class ManifestError(ValueError):
    """A manifest that does not follow the schema; the message names the field."""


class ParamSpec(Record):
    name: str
    # SCALAR_PARAM, CONSTEXPR_PARAM (compiled in, not passed), STRUCT_PARAM, VECTOR_PARAM,
    # TENSOR_MAP_PARAM (a TMA descriptor: dtype its element type, ndim its rank) or a ViewKind value
    kind: str
    # scalar type name: "f32", "i64", ...; a struct's class name; a vector's ("f32x4"); a view's
    # element type: a scalar, a vector (Slice[f32x4]: oxide.abi.vectors) or a record (oxide.abi.records)
    dtype: str
    ndim: int = 1  # views: Slice kinds are 1-D; a tensor passes pointer, shape[ndim], strides[ndim]
    # STRUCT_PARAM / VECTOR_PARAM: (field path, scalar type name) of each scalar it is passed as,
    # in slot order; a nested field's path is dotted ("shift.0" is lane 0 of the field shift)
    fields: tuple[tuple[str, str], ...] = ()
    # a view that may be None (``Optional[Tensor[f32, 2]]``): one more slot after the view's, 1
    # where an array was passed, 0 for None (then its view slots are 0); oxide.abi.params
    optional: bool = False

    @property
    def slot_count(self) -> int:
        """The slots it takes in the parameter block (``oxide.abi.params``)."""
        return param_slot_count(self.kind, self.ndim, len(self.fields), self.optional)

    @property
    def slot_dtypes(self) -> list[str]:
        """The scalar type of each of its slots (``oxide.abi.params.param_slot_dtypes``)."""
        return param_slot_dtypes(self.kind, self.dtype, self.ndim, [f[1] for f in self.fields], self.optional)

    @property
    def is_aggregate(self) -> bool:
        """A struct or vector value, passed as its scalar fields (oxide.abi.params)."""
        return self.kind in AGGREGATE_PARAMS

    @property
    def is_tensor_map(self) -> bool:
        """A TMA descriptor (``ox.tma.Descriptor[T, N]``), passed as a 128-byte CUtensorMap."""
        return self.kind == TENSOR_MAP_PARAM

    @property
    def is_scalar(self) -> bool:
        return self.kind == SCALAR_PARAM

    @property
    def is_constexpr(self) -> bool:
        """Compiled into the specialization; not passed at launch."""
        return self.kind == CONSTEXPR_PARAM

    @property
    def is_view(self) -> bool:
        return self.kind in _PARAM_VIEW_KINDS

    @property
    def is_mutable_view(self) -> bool:
        return self.is_view and ViewKind(self.kind).is_writable

    @property
    def is_tensor(self) -> bool:
        return self.is_view and ViewKind(self.kind).is_tensor


class Precondition(Record):
    """A kernel ``assert`` (or a limit its bounds proofs assume) that depends only on launch
    arguments and launch dimensions: the runtime checks it before launching, so the device
    does not. ``site`` is its ErrorSite; ``code`` is the condition's program (the encoding of
    ``oxide.abi.preconditions``, which every launcher evaluates)."""

    site: int
    code: tuple[Instruction, ...]


class KernelSpec(Record):
    name: str  # the Python name of the kernel
    symbol: str  # the entry point in the cubin
    params: tuple[ParamSpec, ...]
    specialization: dict[str, str] = {}  # TypeVar name -> scalar name (never mutated)
    file: str = ""
    line: int = 0
    preconditions: tuple[Precondition, ...] = ()
    # reaches grid.sync(): launched cooperatively (all blocks resident at once), always
    cooperative: bool = False
    # the entry point of the kernel's index32 instance (the same parameter slots; tensor offsets,
    # shapes and strides in 32 bits), launched instead of ``symbol`` when every tensor argument's
    # span, extents and strides are at most ``oxide.abi.launcher.INDEX32_LIMIT``; "" when there is
    # none. Optional in the JSON (older manifests lack it: their kernels have one instance; older
    # runtimes ignore it)
    index32_symbol: str = ""
    # the parameters the entry point ``symbol`` declares, each as the slot where it begins
    # (``entry_param_starts``), in order: the compiler drops the parameters its code never reads
    # (oxide_build/lower/entry_params.py), and the runtime packs every slot as before but passes
    # only these to the launch. None: every parameter (what manifests written before it mean)
    param_slots: tuple[int, ...] | None = None
    index32_param_slots: tuple[int, ...] | None = None  # the same for ``index32_symbol``
    # the entry point of the kernel's fast instance (oxide_build/passes/launch_instances.py): the
    # body proven under launch-invariant facts (view lengths, sizes, block.dim), launched instead
    # of ``symbol`` when ``fast_condition`` (a program of oxide.abi.preconditions over the same
    # slots and the launch dimensions) holds; ``symbol`` then holds the checked copy alone. The
    # fast instance has the same parameters and preconditions, and its own index32 instance and
    # declared slots. "" when there is none (older manifests; older runtimes ignore it and launch
    # ``symbol``, which is correct)
    fast_symbol: str = ""
    fast_condition: tuple[Instruction, ...] = ()
    fast_param_slots: tuple[int, ...] | None = None
    fast_index32_symbol: str = ""
    fast_index32_param_slots: tuple[int, ...] | None = None

    def instances(self) -> list[str]:
        """Every entry point of the kernel: as written, its index32 instance, its fast ones."""
        return [s for s in (self.symbol, self.index32_symbol, self.fast_symbol, self.fast_index32_symbol) if s]


def entry_param_starts(params: Sequence[ParamSpec]) -> list[int]:
    """The slot where each parameter of a kernel's full entry point begins (``oxide.abi.params``):
    one per slot, except a TMA descriptor's two (its 128-byte map, then its box's elements)."""
    starts: list[int] = []
    at = 0
    for p in params:
        count = p.slot_count
        if p.kind == TENSOR_MAP_PARAM:
            starts += [at, at + TENSOR_MAP_WORDS]
        else:
            starts += range(at, at + count)
        at += count
    return starts


class ErrorSite(Record):
    """A place in the source where a device-side check can fail (bounds check, assert)."""

    id: int
    kind: str  # "bounds" or "assert"
    kernel: str
    file: str
    line: int
    col: int
    what: str  # e.g. "x[i]"


class ModuleArrayRecord(Record):
    """A module-level array in device memory (``ox.constant.array``, ``ox.global_memory.array``):
    the host reads and writes it by ``symbol`` in the loaded code (``cuModuleGetGlobal``)."""

    name: str  # the Python name in the module
    symbol: str  # the global's symbol in the code
    space: str  # "constant" or "global"
    dtype: str  # element type, e.g. "f32"
    shape: tuple[int, ...]


class ModulePart(Record):
    """Kernels of a module compiled on their own, into code of their own (a build splits a
    module of many kernels into parts that compile in parallel and are cached one by one): the
    runtime loads the part's code for a kernel it holds, with the part's error sites."""

    kernels: tuple[str, ...]  # the Python names of the kernels it holds
    cubins: dict[str, str]  # as ModuleManifest.cubins
    ptx: dict[str, str] = {}  # as ModuleManifest.ptx (never mutated)
    error_sites: tuple[ErrorSite, ...] = ()


class ModuleManifest(Record):
    module: str  # dotted module name, e.g. "sample.kernels"
    source: str  # source file name, relative to the module's directory
    source_sha256: str
    kernels: tuple[KernelSpec, ...]
    cubins: dict[str, str]  # arch ("sm_90") -> file name inside ARTIFACT_DIR
    ptx: dict[str, str] = {}  # arch -> file name, forward-compat fallback (never mutated)
    error_sites: tuple[ErrorSite, ...] = ()
    # every other source file of the tree the kernels' code came from (device functions in
    # other modules): path relative to the module's directory (posix, may start with "..")
    # -> sha256; a change to any of them makes the compiled code stale, like ``source``'s
    sources: dict[str, str] = {}  # (never mutated)
    format: int = MANIFEST_FORMAT
    arrays: tuple[ModuleArrayRecord, ...] = ()  # module-level constant and global memory
    # the oldest CUDA driver that loads the code, as cuDriverGetVersion counts (1000 * major +
    # 10 * minor: 13000 is CUDA 13.0): a cubin needs a driver of its toolchain's CUDA major
    # release; 0: not recorded (a manifest of an older build), not checked
    cuda_driver: int = 0
    # more parts, each with its own code: a kernel named by one is loaded from its code;
    # ``cubins``, ``ptx`` and ``error_sites`` above are those of the other kernels (part 0)
    parts: tuple[ModulePart, ...] = ()

    def to_json(self) -> str:
        return json.dumps(_plain(self), indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> "ModuleManifest":
        """Parses and checks a manifest; ``ManifestError`` (a ``ValueError``) names what is
        wrong, ``json.JSONDecodeError`` (also one) says where the JSON is broken."""
        try:
            parsed = json.loads(text)
        except RecursionError:
            raise ManifestError("the manifest: nested too deeply to be one") from None
        data = _dict(parsed, "the manifest")
        fmt = data.get("format")
        if isinstance(fmt, bool) or fmt not in READABLE_MANIFEST_FORMATS:
            raise ManifestError(f"manifest format {fmt!r}, this oxide reads formats "
                                f"{', '.join(map(str, READABLE_MANIFEST_FORMATS))} (another oxide release built it)")
        kernels = tuple(_kernel(k, f"kernels[{i}]", fmt)
                        for i, k in enumerate(_list(_need(data, "kernels", ""), "kernels")))
        source = _text(_need(data, "source", ""), "source")
        problem = code_file_name_problem(source)
        if problem is not None:
            raise ManifestError(f"source: {source!r} is {problem} (the module's source lies beside its _oxide/)")
        source_sha256 = _text(_need(data, "source_sha256", ""), "source_sha256")
        if source_sha256 and not _is_sha256(source_sha256):
            raise ManifestError(f"source_sha256: {source_sha256!r:.80} is not a SHA-256 (64 hex digits)")
        return ModuleManifest(
            module=_matching(_need(data, "module", ""), "module", _is_dotted, "a dotted module name"),
            source=source,
            source_sha256=source_sha256,
            kernels=kernels,
            cubins=_code_files(_need(data, "cubins", ""), "cubins"),
            ptx=_code_files(data.get("ptx", {}), "ptx"),
            error_sites=tuple(_error_site(e, f"error_sites[{i}]")
                              for i, e in enumerate(_list(data.get("error_sites", []), "error_sites"))),
            sources=_sources(data.get("sources", {}), "sources"),
            arrays=tuple(_module_array(a, f"arrays[{i}]") for i, a in enumerate(_list(data.get("arrays", []), "arrays"))),
            cuda_driver=_bounded(data.get("cuda_driver", 0), "cuda_driver", 0, 10**6),
            parts=tuple(_part(p, f"parts[{i}]") for i, p in enumerate(_list(data.get("parts", []), "parts"))),
        )

    def kernels_named(self, name: str) -> list[KernelSpec]:
        return [k for k in self.kernels if k.name == name]


def _plain(value: Any) -> Any:
    """``value`` with its records turned into dicts, for JSON."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        # a parameter without fields (all but structs and vectors), a kernel without an index32
        # instance, are written as before those existed
        names = [n for n in value._fields
                 if not (n == "fields" and isinstance(value, ParamSpec) and not value.fields)
                 and not (n == "optional" and isinstance(value, ParamSpec) and not value.optional)
                 and not (n in _EMPTY_SYMBOL_FIELDS and isinstance(value, KernelSpec) and not getattr(value, n))
                 and not (n in _ALL_SLOTS_FIELDS and isinstance(value, KernelSpec) and getattr(value, n) is None)
                 and not (n == "cuda_driver" and isinstance(value, ModuleManifest) and not value.cuda_driver)
                 and not (n == "parts" and isinstance(value, ModuleManifest) and not value.parts)]
        if isinstance(value, ModuleManifest) and value.parts:
            value = value._replace(format=max(value.format, PARTS_MANIFEST_FORMAT))
        if isinstance(value, ModuleManifest) and any(p.optional for k in value.kernels for p in k.params):
            value = value._replace(format=max(value.format, OPTIONAL_MANIFEST_FORMAT))
        return {name: _plain(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# None (every parameter): not written
_ALL_SLOTS_FIELDS = ("param_slots", "index32_param_slots", "fast_param_slots", "fast_index32_param_slots")
# "" (no such instance), () (no fast condition): not written
_EMPTY_SYMBOL_FIELDS = ("index32_symbol", "fast_symbol", "fast_condition", "fast_index32_symbol")


# --- the schema ---------------------------------------------------------------------------------

_T = TypeVar("_T")


def _need(data: dict[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise ManifestError(f"{where + '.' if where else ''}{key}: missing")
    return data[key]


def _typed(value: Any, kind: type, what: str, where: str) -> Any:
    # bool is an int to Python, never to the schema
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        shown = f" {value!r:.60}" if value is None or isinstance(value, (str, int, float)) else ""
        raise ManifestError(f"{where}: expected {what}, got {type(value).__name__}{shown}")
    return value


def _dict(value: Any, where: str) -> dict[str, Any]:
    out: dict[str, Any] = _typed(value, dict, "an object", where)
    return out


def _list(value: Any, where: str, limit: int = _MAX_ITEMS) -> list[Any]:
    out: list[Any] = _typed(value, list, "a list", where)
    if len(out) > limit:
        raise ManifestError(f"{where}: {len(out)} items, more than the {limit} it may have")
    return out


def _str(value: Any, where: str) -> str:
    return _text(value, where)


def _text(value: Any, where: str, limit: int = _MAX_TEXT) -> str:
    """A string of at most ``limit`` characters, without NUL."""
    out: str = _typed(value, str, "a string", where)
    if len(out) > limit:
        raise ManifestError(f"{where}: a string of {len(out)} characters, more than {limit}")
    if "\0" in out:
        raise ManifestError(f"{where}: {out!r:.80} contains a NUL character")
    return out


def _matching(value: Any, where: str, pattern: Callable[[str], bool], what: str) -> str:
    out = _text(value, where)
    if not pattern(out):
        raise ManifestError(f"{where}: {out!r:.80} is not {what}")
    return out


def _identifier(value: Any, where: str) -> str:
    return _matching(value, where, _is_identifier, "a Python identifier")


def _symbol(value: Any, where: str) -> str:
    return _matching(value, where, _is_symbol, "a symbol of the compiled code")


def _int(value: Any, where: str) -> int:
    out: int = _typed(value, int, "an integer", where)
    return out


def _bounded(value: Any, where: str, low: int, high: int) -> int:
    out = _int(value, where)
    if not low <= out <= high:
        raise ManifestError(f"{where}: {str(out)[:40]} is outside {low} to {high}")
    return out


def _line(value: Any, where: str) -> int:
    return _bounded(value, where, 0, _MAX_LINE)


def _bool(value: Any, where: str) -> bool:
    out: bool = _typed(value, bool, "true or false", where)
    return out


def _str_dict(value: Any, where: str) -> dict[str, str]:
    data = _dict(value, where)
    if len(data) > _MAX_ITEMS:
        raise ManifestError(f"{where}: {len(data)} entries, more than the {_MAX_ITEMS} it may have")
    return {_text(k, f"{where} key {k!r:.80}"): _str(v, f"{where}[{k!r:.80}]") for k, v in data.items()}


def _sources(value: Any, where: str) -> dict[str, str]:
    """``ModuleManifest.sources``: relative paths (they may climb out of the module's directory
    into the tree, with ``..``; never absolute) -> SHA-256."""
    files = _str_dict(value, where)
    for name, digest in files.items():
        if not name or name.startswith(("/", "\\")) or _drive_letter(name) or "\\" in name:
            raise ManifestError(f"{where}: {name!r:.80} is not a relative posix path")
        if not _is_sha256(digest):
            raise ManifestError(f"{where}[{name!r:.80}]: {digest!r:.80} is not a SHA-256 (64 hex digits)")
    return files


def _field(data: dict[str, Any], key: str, where: str, check: Callable[[Any, str], _T], default: _T | None = None) -> _T:
    if key in data:
        value = data[key]
        accepts = _ACCEPTS.get(check)
        if accepts is not None and accepts(value):
            return value  # type: ignore[no-any-return]
        return check(value, f"{where}.{key}")
    if default is not None:
        return default
    return check(_need(data, key, where), f"{where}.{key}")


def _plain_text(value: Any) -> bool:
    return type(value) is str and len(value) <= _MAX_TEXT and "\0" not in value


# What each check of _field takes, decided without naming the field: most fields pass, and
# building each one's "kernels[0].params[1].dtype" only for a field that fails keeps a first
# launch's manifest read short (issue 28 item 5). Each says yes only where its check would
# accept the value as it is (exact types: what json.loads makes); anything else goes through the
# check, which accepts it or names the field.
_ACCEPTS: dict[Callable[..., Any], Callable[[Any], bool]] = {
    _str: _plain_text,
    _identifier: lambda v: _plain_text(v) and _is_identifier(v),
    _symbol: lambda v: _plain_text(v) and _is_symbol(v),
    _int: lambda v: type(v) is int,
    _line: lambda v: type(v) is int and 0 <= v <= _MAX_LINE,
    _bool: lambda v: type(v) is bool,
}


def code_file_name_problem(name: str) -> str | None:
    """Why ``name`` is not a plain file name inside ``_oxide/``, or None."""
    if not name or name in (".", ".."):
        return "empty or a directory"
    if "/" in name or "\\" in name or "\0" in name or ":" in name:
        return "not a plain file name (code files lie in _oxide/ itself)"
    return None


def _part(value: Any, where: str) -> ModulePart:
    data = _dict(value, where)
    kernels = tuple(_matching(k, f"{where}.kernels[{i}]", _is_dotted, "a kernel name")
                    for i, k in enumerate(_list(_need(data, "kernels", where), f"{where}.kernels")))
    return ModulePart(
        kernels=kernels,
        cubins=_code_files(_need(data, "cubins", where), f"{where}.cubins"),
        ptx=_code_files(data.get("ptx", {}), f"{where}.ptx"),
        error_sites=tuple(_error_site(e, f"{where}.error_sites[{i}]")
                          for i, e in enumerate(_list(data.get("error_sites", []), f"{where}.error_sites"))),
    )


def _code_files(value: Any, where: str) -> dict[str, str]:
    files = _str_dict(value, where)
    for arch, name in files.items():
        if not _is_arch(arch):
            raise ManifestError(f"{where}: {arch!r:.80} is not a GPU architecture (sm_90, sm_90a, compute_90)")
        problem = code_file_name_problem(name)
        if problem is not None:
            raise ManifestError(f"{where}[{arch!r}]: {name!r} is {problem}")
    return files


def _param(value: Any, where: str) -> ParamSpec:
    data = _dict(value, where)
    kind = _field(data, "kind", where, _str)
    if kind not in _PARAM_KINDS:
        raise ManifestError(f"{where}.kind: unknown parameter kind {kind!r}")
    ndim = _field(data, "ndim", where, _int, 1)
    tensor = kind in _TENSOR_KINDS
    low, high = ((1, _MAX_MANIFEST_NDIM) if tensor else (1, _MAX_TMA_NDIM) if kind == TENSOR_MAP_PARAM
                 else (1, 1) if kind in _PARAM_VIEW_KINDS else (0, _MAX_MANIFEST_NDIM))
    if not low <= ndim <= high:
        raise ManifestError(f"{where}.ndim: {str(ndim)[:40]} is outside {low} to {high} for a {kind} parameter")
    fields = tuple(_param_field(f, f"{where}.fields[{i}]")
                   for i, f in enumerate(_field(data, "fields", where, _list, list[Any]())))
    if (kind in AGGREGATE_PARAMS) != bool(fields):
        raise ManifestError(f"{where}.fields: a struct or vector parameter lists its fields, no other does")
    dtype = _field(data, "dtype", where, _str)
    if kind == SCALAR_PARAM and dtype not in SCALAR_TYPES:
        raise ManifestError(f"{where}.dtype: {dtype!r:.80} is not a scalar type ({', '.join(SCALAR_TYPES)})")
    if kind in _PARAM_VIEW_KINDS and not (dtype in SCALAR_TYPES or dtype in VECTOR_LANES or is_record_dtype(dtype)):
        raise ManifestError(f"{where}.dtype: {dtype!r:.80} is not an element type of a view (a scalar type, a vector "
                            "type such as f32x4, or a record{...})")
    optional = _field(data, "optional", where, _bool, False)
    if optional and kind not in _PARAM_VIEW_KINDS:
        raise ManifestError(f"{where}.optional: only a view parameter may be None, not a {kind} parameter")
    return ParamSpec(_field(data, "name", where, _identifier), kind, dtype, ndim, fields, optional)


def _param_field(value: Any, where: str) -> tuple[str, str]:
    pair = _list(value, where)
    if len(pair) != 2:
        raise ManifestError(f"{where}: expected [field path, scalar type], got {len(pair)} items")
    scalar = _str(pair[1], f"{where}[1]")
    if scalar not in SCALAR_TYPES:
        raise ManifestError(f"{where}[1]: {scalar!r:.80} is not a scalar type")
    return _str(pair[0], f"{where}[0]"), scalar


def _precondition(value: Any, where: str, slot_dtypes: list[str], fmt: int) -> Precondition:
    data = _dict(value, where)
    if fmt in EXPRESSION_MANIFEST_FORMATS:  # an older build's expression: compiled here
        expr = _need(data, "expr", where)
        _precondition_expr(expr, f"{where}.expr", len(slot_dtypes), [0], 0)
        program: list[Any] = [list(insn) for insn in compile_expression(expr)]
        key = "expr"
    else:
        program = _list(_need(data, "code", where), f"{where}.code", KERNEL_PROGRAM_LIMIT)
        key = "code"
    problem = program_problem(program, slot_dtypes)
    if problem is not None:
        raise ManifestError(f"{where}.{key}{problem if problem.startswith('[') else ': ' + problem} "
                            "(oxide.abi.preconditions)")
    return Precondition(_field(data, "site", where, _line), tuple((op, operand) for op, operand in program))


def _precondition_expr(e: Any, where: str, n_slots: int, nodes: list[int], depth: int) -> None:
    """Checks ``e`` against the encoding of ``oxide.abi.preconditions``, with parameter slots
    below ``n_slots``: a launcher evaluates it as it is."""
    nodes[0] += 1
    if depth > _MAX_PRECONDITION_DEPTH or nodes[0] > _MAX_PRECONDITION_NODES:
        raise ManifestError(f"{where}: nested deeper than {_MAX_PRECONDITION_DEPTH} or more than "
                            f"{_MAX_PRECONDITION_NODES} operations")
    items = _list(e, where, 4)
    op = _str(items[0], f"{where}[0]") if items else ""
    arity = {"const": 1, "arg": 1, "grid": 1, "block": 1, "cast": 2, "neg": 2, "not": 1, "and": 1, "or": 1,
             **{name: 3 for name in ARITHMETIC.values()}, **{name: 2 for name in COMPARISONS.values()}}
    if op not in arity or len(items) != 1 + arity[op]:
        raise ManifestError(f"{where}: {str(e)[:80]} is not an operation of the precondition encoding")
    sub = depth + 1
    if op == "const":
        _bounded(items[1], f"{where}[1]", -2**63, 2**64 - 1)
    elif op == "arg":
        _bounded(items[1], f"{where}[1]", 0, n_slots - 1)
    elif op in ("grid", "block"):
        _bounded(items[1], f"{where}[1]", 0, 2)
    elif op in ("and", "or"):
        for i, operand in enumerate(_list(items[1], f"{where}[1]", _MAX_PRECONDITION_NODES)):
            _precondition_expr(operand, f"{where}[1][{i}]", n_slots, nodes, sub)
    elif op == "not" or op in COMPARISONS.values():
        for i in range(1, len(items)):
            _precondition_expr(items[i], f"{where}[{i}]", n_slots, nodes, sub)
    else:  # cast, neg and arithmetic: a type, then operands
        if items[1] not in INTEGER_TYPES:
            raise ManifestError(f"{where}[1]: {str(items[1])[:40]!r} is not an integer type ({', '.join(INTEGER_TYPES)})")
        for i in range(2, len(items)):
            _precondition_expr(items[i], f"{where}[{i}]", n_slots, nodes, sub)


def _param_slots(data: dict[str, Any], key: str, where: str, params: tuple[ParamSpec, ...]) -> tuple[int, ...] | None:
    """A ``KernelSpec.param_slots`` list: parameter starts of the full entry point, increasing
    (a list the runtime would pass wrongly is refused here, not at a launch)."""
    if data.get(key) is None:
        return None
    slots = tuple(_int(s, f"{where}.{key}") for s in _list(data[key], f"{where}.{key}", MAX_PARAM_SLOTS))
    starts = entry_param_starts(params)
    known = set(starts)
    for a, b in zip(slots, slots[1:]):
        if b <= a:
            raise ManifestError(f"{where}.{key}: slots must increase; got {a} then {b}")
    for s in slots:
        if s not in known:
            raise ManifestError(f"{where}.{key}: {s} is not the slot of a parameter (they begin at "
                                f"{', '.join(map(str, starts)) or 'none'})")
    return slots


def _kernel(value: Any, where: str, fmt: int) -> KernelSpec:
    data = _dict(value, where)
    params = tuple(_param(p, f"{where}.params[{i}]")
                   for i, p in enumerate(_list(_need(data, "params", where), f"{where}.params", MAX_PARAM_SLOTS)))
    n_slots = sum(p.slot_count for p in params)
    if n_slots > MAX_PARAM_SLOTS:
        raise ManifestError(f"{where}.params: {n_slots} parameter slots, more than CUDA's parameter space "
                            f"holds ({MAX_PARAM_SLOTS} of 8 bytes)")
    index32_symbol = _field(data, "index32_symbol", where, _str, "")
    if index32_symbol:
        _symbol(index32_symbol, f"{where}.index32_symbol")
    slot_dtypes = [t for p in params for t in p.slot_dtypes]
    preconditions = tuple(_precondition(c, f"{where}.preconditions[{i}]", slot_dtypes, fmt)
                          for i, c in enumerate(_field(data, "preconditions", where, _list, list[Any]())))
    # with one check each, as a launcher runs them
    if sum(len(c.code) + 1 for c in preconditions) > KERNEL_PROGRAM_LIMIT:
        raise ManifestError(f"{where}.preconditions: more than {KERNEL_PROGRAM_LIMIT} instructions in all "
                            "(oxide.abi.preconditions.KERNEL_PROGRAM_LIMIT)")
    fast_symbol = _field(data, "fast_symbol", where, _str, "")
    fast_index32_symbol = _field(data, "fast_index32_symbol", where, _str, "")
    fast_condition: tuple[Instruction, ...] = ()
    for key, sym in (("fast_symbol", fast_symbol), ("fast_index32_symbol", fast_index32_symbol)):
        if sym:
            _symbol(sym, f"{where}.{key}")
    if fast_index32_symbol and not fast_symbol:
        raise ManifestError(f"{where}.fast_index32_symbol: a kernel without a fast_symbol has no fast index32 instance")
    if fast_symbol:
        program = _list(_need(data, "fast_condition", where), f"{where}.fast_condition", KERNEL_PROGRAM_LIMIT)
        problem = program_problem(program, slot_dtypes)
        if problem is not None or not program:
            raise ManifestError(f"{where}.fast_condition{problem if problem and problem.startswith('[') else ': ' + (problem or 'empty')} "
                                "(oxide.abi.preconditions)")
        fast_condition = tuple((op, operand) for op, operand in program)
    return KernelSpec(
        name=_field(data, "name", where, _identifier),
        symbol=_field(data, "symbol", where, _symbol),
        params=params,
        specialization=_field(data, "specialization", where, _str_dict, {}),
        file=_field(data, "file", where, _str, ""),
        line=_field(data, "line", where, _line, 0),
        preconditions=preconditions,
        cooperative=_field(data, "cooperative", where, _bool, False),
        index32_symbol=index32_symbol,
        param_slots=_param_slots(data, "param_slots", where, params),
        index32_param_slots=_param_slots(data, "index32_param_slots", where, params),
        fast_symbol=fast_symbol,
        fast_condition=fast_condition,
        fast_param_slots=_param_slots(data, "fast_param_slots", where, params),
        fast_index32_symbol=fast_index32_symbol,
        fast_index32_param_slots=_param_slots(data, "fast_index32_param_slots", where, params),
    )


def _error_site(value: Any, where: str) -> ErrorSite:
    data = _dict(value, where)
    return ErrorSite(
        id=_field(data, "id", where, _line),
        kind=_field(data, "kind", where, _str),
        kernel=_field(data, "kernel", where, _str),
        file=_field(data, "file", where, _str),
        line=_field(data, "line", where, _line),
        col=_field(data, "col", where, _line),
        what=_field(data, "what", where, _str),
    )


def _module_array(value: Any, where: str) -> ModuleArrayRecord:
    data = _dict(value, where)
    shape = tuple(_bounded(d, f"{where}.shape", 0, 2**48)
                  for d in _list(_need(data, "shape", where), f"{where}.shape", MAX_TENSOR_NDIM))
    size = 1
    for d in shape:
        size *= d
    if size > 2**48:
        raise ManifestError(f"{where}.shape: {shape} is {size} elements, more than a GPU's memory holds")
    space = _field(data, "space", where, _str)
    if space not in ("constant", "global"):
        raise ManifestError(f"{where}.space: {space!r:.80} is neither 'constant' nor 'global'")
    return ModuleArrayRecord(
        name=_field(data, "name", where, _identifier),
        symbol=_field(data, "symbol", where, _symbol),
        space=space,
        dtype=_field(data, "dtype", where, _str),
        shape=shape,
    )


def manifest_path(module_dir: Path, module_name: str) -> Path:
    """Where the manifest of ``module_name`` (whose source lies in ``module_dir``) lives."""
    return module_dir / ARTIFACT_DIR / f"{module_name}.json"


def load_manifest(path: Path) -> ModuleManifest:
    """Reads and checks the manifest at ``path``; ``OSError``, or ``ValueError`` (broken JSON,
    a ``ManifestError``, bytes that are not UTF-8) saying what is wrong."""
    return ModuleManifest.from_json(path.read_text(encoding="utf-8"))


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, hex, from CPython's own SHA-256 (the module ``hashlib`` falls back
    on). Not ``hashlib.sha256``: that loads and initializes OpenSSL's libcrypto, 2.5 ms of a
    process's first launch, which checks the module's source (issue 28, cold start); a source
    file hashes in microseconds either way."""
    try:
        from _sha256 import sha256  # CPython 3.10, 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found, no-redef]  # CPython 3.12 and newer
        except ImportError:  # another interpreter
            from hashlib import sha256  # type: ignore[assignment]
    return sha256(path.read_bytes()).hexdigest()


def changed_source(built_from: Path, manifest: ModuleManifest) -> Path | None:
    """The first source file the manifest's code was compiled from that differs now: the
    module's own source, then each other file its code came from (tree modules with device
    functions, C++ inputs and the headers they include). None when all match. Files that are
    not there (a wheel installed without some of its sources) are not compared."""
    if built_from.is_file() and manifest.source_sha256 and file_sha256(built_from) != manifest.source_sha256:
        return built_from
    for relative, digest in manifest.sources.items():
        path = built_from.parent / relative
        if path.is_file() and file_sha256(path) != digest:
            return path
    return None
