"""The manifest (part of the build/runtime contract): what an installed package knows about its precompiled kernels.

Written by ``oxide_build`` next to each compiled module as ``_oxide/<module>.json`` with the
code files beside it; read by the runtime on first launch. Plain JSON, so a wheel can be
inspected with ``unzip -p``.

A manifest is checked against its schema when it is read (``ModuleManifest.from_json``): a
missing or mistyped field is a ``ManifestError`` naming the field, and a code file name must
be a plain file name inside ``_oxide/`` (no directory part, no ``..``, not absolute), so a
manifest cannot make the runtime load a file from outside its package.

The kernel parameter block the runtime packs is described in ``oxide.abi.params``.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence, TypeVar

from .params import (
    AGGREGATE_PARAMS,
    CONSTEXPR_PARAM,
    SCALAR_PARAM,
    STRUCT_PARAM,
    TENSOR_MAP_PARAM,
    TENSOR_MAP_WORDS,
    VECTOR_PARAM,
    param_slot_count,
)
from .views import ViewKind

__all__ = [
    "MANIFEST_FORMAT",
    "READABLE_MANIFEST_FORMATS",
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
# that reads only format 1 would pass them every slot, so it must refuse these manifests
MANIFEST_FORMAT = 2
READABLE_MANIFEST_FORMATS = (1, 2)  # format 1: every entry point takes every slot
ARTIFACT_DIR = "_oxide"

# the kinds a kernel parameter may have besides SCALAR_PARAM and CONSTEXPR_PARAM
_PARAM_VIEW_KINDS = frozenset(k for k in ViewKind if k.is_kernel_param)


class ManifestError(ValueError):
    """A manifest that does not follow the schema; the message names the field."""


class ParamSpec(NamedTuple):
    name: str
    # SCALAR_PARAM, CONSTEXPR_PARAM (compiled in, not passed), STRUCT_PARAM, VECTOR_PARAM,
    # TENSOR_MAP_PARAM (a TMA descriptor: dtype its element type, ndim its rank) or a ViewKind value
    kind: str
    dtype: str  # scalar type name: "f32", "i64", ...; a struct's class name; a vector's ("f32x4")
    ndim: int = 1  # views: Slice kinds are 1-D; a tensor passes pointer, shape[ndim], strides[ndim]
    # STRUCT_PARAM / VECTOR_PARAM: (field path, scalar type name) of each scalar it is passed as,
    # in slot order; a nested field's path is dotted ("shift.0" is lane 0 of the field shift)
    fields: tuple[tuple[str, str], ...] = ()

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


class Precondition(NamedTuple):
    """A kernel ``assert`` (or a limit its bounds proofs assume) that depends only on launch
    arguments and launch dimensions: the runtime checks it before launching, so the device
    does not. ``site`` is its ErrorSite; ``expr`` is the condition as nested lists — see
    oxide/runtime/preconditions.py for the encoding."""

    site: int
    expr: Any


class KernelSpec(NamedTuple):
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
    # (oxide_build/backends/entry_params.py), and the runtime packs every slot as before but passes
    # only these to the launch. None: every parameter (what manifests written before it mean)
    param_slots: tuple[int, ...] | None = None
    index32_param_slots: tuple[int, ...] | None = None  # the same for ``index32_symbol``


def entry_param_starts(params: Sequence[ParamSpec]) -> list[int]:
    """The slot where each parameter of a kernel's full entry point begins (``oxide.abi.params``):
    one per slot, except a TMA descriptor's two (its 128-byte map, then its box's elements)."""
    starts: list[int] = []
    at = 0
    for p in params:
        count = param_slot_count(p.kind, p.ndim, len(p.fields))
        if p.kind == TENSOR_MAP_PARAM:
            starts += [at, at + TENSOR_MAP_WORDS]
        else:
            starts += range(at, at + count)
        at += count
    return starts


class ErrorSite(NamedTuple):
    """A place in the source where a device-side check can fail (bounds check, assert)."""

    id: int
    kind: str  # "bounds" or "assert"
    kernel: str
    file: str
    line: int
    col: int
    what: str  # e.g. "x[i]"


class ModuleArrayRecord(NamedTuple):
    """A module-level array in device memory (``ox.constant.array``, ``ox.global_memory.array``):
    the host reads and writes it by ``symbol`` in the loaded code (``cuModuleGetGlobal``)."""

    name: str  # the Python name in the module
    symbol: str  # the global's symbol in the code
    space: str  # "constant" or "global"
    dtype: str  # element type, e.g. "f32"
    shape: tuple[int, ...]


class ModuleManifest(NamedTuple):
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

    def to_json(self) -> str:
        return json.dumps(_plain(self), indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> ModuleManifest:
        """Parses and checks a manifest; ``ManifestError`` (a ``ValueError``) names what is
        wrong, ``json.JSONDecodeError`` (also one) says where the JSON is broken."""
        data = _dict(json.loads(text), "the manifest")
        fmt = data.get("format")
        if isinstance(fmt, bool) or fmt not in READABLE_MANIFEST_FORMATS:
            raise ManifestError(f"manifest format {fmt!r}, this oxide reads formats "
                                f"{', '.join(map(str, READABLE_MANIFEST_FORMATS))} (another oxide release built it)")
        kernels = tuple(_kernel(k, f"kernels[{i}]") for i, k in enumerate(_list(_need(data, "kernels", ""), "kernels")))
        return ModuleManifest(
            module=_str(_need(data, "module", ""), "module"),
            source=_str(_need(data, "source", ""), "source"),
            source_sha256=_str(_need(data, "source_sha256", ""), "source_sha256"),
            kernels=kernels,
            cubins=_code_files(_need(data, "cubins", ""), "cubins"),
            ptx=_code_files(data.get("ptx", {}), "ptx"),
            error_sites=tuple(_error_site(e, f"error_sites[{i}]")
                              for i, e in enumerate(_list(data.get("error_sites", []), "error_sites"))),
            sources=_str_dict(data.get("sources", {}), "sources"),
            arrays=tuple(_module_array(a, f"arrays[{i}]") for i, a in enumerate(_list(data.get("arrays", []), "arrays"))),
            cuda_driver=_int(data.get("cuda_driver", 0), "cuda_driver"),
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
                 and not (n == "index32_symbol" and isinstance(value, KernelSpec) and not value.index32_symbol)
                 and not (n in _ALL_SLOTS_FIELDS and isinstance(value, KernelSpec) and getattr(value, n) is None)
                 and not (n == "cuda_driver" and isinstance(value, ModuleManifest) and not value.cuda_driver)]
        return {name: _plain(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_ALL_SLOTS_FIELDS = ("param_slots", "index32_param_slots")  # None (every parameter): not written


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


def _list(value: Any, where: str) -> list[Any]:
    out: list[Any] = _typed(value, list, "a list", where)
    return out


def _str(value: Any, where: str) -> str:
    out: str = _typed(value, str, "a string", where)
    return out


def _int(value: Any, where: str) -> int:
    out: int = _typed(value, int, "an integer", where)
    return out


def _bool(value: Any, where: str) -> bool:
    out: bool = _typed(value, bool, "true or false", where)
    return out


def _str_dict(value: Any, where: str) -> dict[str, str]:
    return {k: _str(v, f"{where}[{k!r}]") for k, v in _dict(value, where).items()}


def _field(data: dict[str, Any], key: str, where: str, check: Callable[[Any, str], _T], default: _T | None = None) -> _T:
    if key not in data and default is not None:
        return default
    return check(_need(data, key, where), f"{where}.{key}")


def code_file_name_problem(name: str) -> str | None:
    """Why ``name`` is not a plain file name inside ``_oxide/``, or None."""
    if not name or name in (".", ".."):
        return "empty or a directory"
    if "/" in name or "\\" in name or "\0" in name or ":" in name:
        return "not a plain file name (code files lie in _oxide/ itself)"
    return None


def _code_files(value: Any, where: str) -> dict[str, str]:
    files = _str_dict(value, where)
    for arch, name in files.items():
        problem = code_file_name_problem(name)
        if problem is not None:
            raise ManifestError(f"{where}[{arch!r}]: {name!r} is {problem}")
    return files


def _param(value: Any, where: str) -> ParamSpec:
    data = _dict(value, where)
    kind = _field(data, "kind", where, _str)
    if kind not in (SCALAR_PARAM, CONSTEXPR_PARAM, TENSOR_MAP_PARAM, *AGGREGATE_PARAMS, *_PARAM_VIEW_KINDS):
        raise ManifestError(f"{where}.kind: unknown parameter kind {kind!r}")
    ndim = _field(data, "ndim", where, _int, 1)
    if ndim < 0:
        raise ManifestError(f"{where}.ndim: {ndim} is negative")
    fields = tuple(_param_field(f, f"{where}.fields[{i}]")
                   for i, f in enumerate(_field(data, "fields", where, _list, list[Any]())))
    if (kind in AGGREGATE_PARAMS) != bool(fields):
        raise ManifestError(f"{where}.fields: a struct or vector parameter lists its fields, no other does")
    return ParamSpec(_field(data, "name", where, _str), kind, _field(data, "dtype", where, _str), ndim, fields)


def _param_field(value: Any, where: str) -> tuple[str, str]:
    pair = _list(value, where)
    if len(pair) != 2:
        raise ManifestError(f"{where}: expected [field path, scalar type], got {len(pair)} items")
    return _str(pair[0], f"{where}[0]"), _str(pair[1], f"{where}[1]")


def _precondition(value: Any, where: str) -> Precondition:
    data = _dict(value, where)
    return Precondition(_field(data, "site", where, _int), _need(data, "expr", where))


def _param_slots(data: dict[str, Any], key: str, where: str, params: tuple[ParamSpec, ...]) -> tuple[int, ...] | None:
    """A ``KernelSpec.param_slots`` list: parameter starts of the full entry point, increasing
    (a list the runtime would pass wrongly is refused here, not at a launch)."""
    if data.get(key) is None:
        return None
    slots = tuple(_int(s, f"{where}.{key}") for s in _list(data[key], f"{where}.{key}"))
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


def _kernel(value: Any, where: str) -> KernelSpec:
    data = _dict(value, where)
    params = tuple(_param(p, f"{where}.params[{i}]") for i, p in enumerate(_field(data, "params", where, _list)))
    return KernelSpec(
        name=_field(data, "name", where, _str),
        symbol=_field(data, "symbol", where, _str),
        params=params,
        specialization=_field(data, "specialization", where, _str_dict, {}),
        file=_field(data, "file", where, _str, ""),
        line=_field(data, "line", where, _int, 0),
        preconditions=tuple(_precondition(c, f"{where}.preconditions[{i}]")
                            for i, c in enumerate(_field(data, "preconditions", where, _list, list[Any]()))),
        cooperative=_field(data, "cooperative", where, _bool, False),
        index32_symbol=_field(data, "index32_symbol", where, _str, ""),
        param_slots=_param_slots(data, "param_slots", where, params),
        index32_param_slots=_param_slots(data, "index32_param_slots", where, params),
    )


def _error_site(value: Any, where: str) -> ErrorSite:
    data = _dict(value, where)
    return ErrorSite(
        id=_field(data, "id", where, _int),
        kind=_field(data, "kind", where, _str),
        kernel=_field(data, "kernel", where, _str),
        file=_field(data, "file", where, _str),
        line=_field(data, "line", where, _int),
        col=_field(data, "col", where, _int),
        what=_field(data, "what", where, _str),
    )


def _module_array(value: Any, where: str) -> ModuleArrayRecord:
    data = _dict(value, where)
    shape = _field(data, "shape", where, _list)
    return ModuleArrayRecord(
        name=_field(data, "name", where, _str),
        symbol=_field(data, "symbol", where, _str),
        space=_field(data, "space", where, _str),
        dtype=_field(data, "dtype", where, _str),
        shape=tuple(_int(d, f"{where}.shape") for d in shape),
    )


def manifest_path(module_dir: Path, module_name: str) -> Path:
    """Where the manifest of ``module_name`` (whose source lies in ``module_dir``) lives."""
    return module_dir / ARTIFACT_DIR / f"{module_name}.json"


def load_manifest(path: Path) -> ModuleManifest:
    """Reads and checks the manifest at ``path``; ``OSError``, or ``ValueError`` (broken JSON,
    a ``ManifestError``, bytes that are not UTF-8) saying what is wrong."""
    return ModuleManifest.from_json(path.read_text(encoding="utf-8"))


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def changed_source(built_from: Path, manifest: ModuleManifest) -> Path | None:
    """The first source file the manifest's code was compiled from that differs now: the
    module's own source, then each other file its code came from (tree modules with device
    functions, C++ inputs and the headers they include). None when all match. Files that are
    not there (a wheel installed without some of its sources) are not compared."""
    if built_from.is_file() and manifest.source_sha256 and _file_sha256(built_from) != manifest.source_sha256:
        return built_from
    for relative, digest in manifest.sources.items():
        path = built_from.parent / relative
        if path.is_file() and _file_sha256(path) != digest:
            return path
    return None
