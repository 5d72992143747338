"""The manifest (part of the build/runtime contract): what an installed package knows about its precompiled kernels.

Written by ``oxide_build`` next to each compiled module as ``_oxide/<module>.json`` with the
code files beside it; read by the runtime on first launch. Plain JSON, so a wheel can be
inspected with ``unzip -p``.

The kernel parameter block the runtime packs is described in ``oxide.abi.params``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from .params import CONSTEXPR_PARAM, SCALAR_PARAM
from .views import ViewKind

__all__ = [
    "MANIFEST_FORMAT",
    "SCALAR_PARAM",
    "CONSTEXPR_PARAM",
    "ARTIFACT_DIR",
    "ParamSpec",
    "KernelSpec",
    "Precondition",
    "ErrorSite",
    "ModuleManifest",
    "manifest_path",
    "load_manifest",
]

MANIFEST_FORMAT = 1
ARTIFACT_DIR = "_oxide"

# the kinds a kernel parameter may have besides SCALAR_PARAM and CONSTEXPR_PARAM
_PARAM_VIEW_KINDS = frozenset(k for k in ViewKind if k.is_kernel_param)


class ParamSpec(NamedTuple):
    name: str
    kind: str  # SCALAR_PARAM, CONSTEXPR_PARAM (compiled in, not passed) or a ViewKind value
    dtype: str  # scalar type name: "f32", "i64", ...
    ndim: int = 1  # views: Slice kinds are 1-D; a tensor passes pointer, shape[ndim], strides[ndim]

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


class ErrorSite(NamedTuple):
    """A place in the source where a device-side check can fail (bounds check, assert)."""

    id: int
    kind: str  # "bounds" or "assert"
    kernel: str
    file: str
    line: int
    col: int
    what: str  # e.g. "x[i]"


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

    def to_json(self) -> str:
        return json.dumps(_plain(self), indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> ModuleManifest:
        data: dict[str, Any] = json.loads(text)
        if data.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"manifest format {data.get('format')!r}, this oxide reads {MANIFEST_FORMAT}")
        kernels = tuple(
            KernelSpec(
                name=k["name"],
                symbol=k["symbol"],
                params=tuple(ParamSpec(**p) for p in k["params"]),
                specialization=dict(k.get("specialization", {})),
                file=k.get("file", ""),
                line=k.get("line", 0),
                preconditions=tuple(Precondition(**c) for c in k.get("preconditions", [])),
            )
            for k in data["kernels"]
        )
        return ModuleManifest(
            module=data["module"],
            source=data["source"],
            source_sha256=data["source_sha256"],
            kernels=kernels,
            cubins=dict(data["cubins"]),
            ptx=dict(data.get("ptx", {})),
            error_sites=tuple(ErrorSite(**e) for e in data.get("error_sites", [])),
            sources=dict(data.get("sources", {})),
        )

    def kernels_named(self, name: str) -> list[KernelSpec]:
        return [k for k in self.kernels if k.name == name]


def _plain(value: Any) -> Any:
    """``value`` with its records turned into dicts, for JSON."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {name: _plain(getattr(value, name)) for name in value._fields}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def manifest_path(module_dir: Path, module_name: str) -> Path:
    """Where the manifest of ``module_name`` (whose source lies in ``module_dir``) lives."""
    return module_dir / ARTIFACT_DIR / f"{module_name}.json"


def load_manifest(path: Path) -> ModuleManifest:
    return ModuleManifest.from_json(path.read_text(encoding="utf-8"))
