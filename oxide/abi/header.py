"""Writes the C and C++ view of the contract from ``oxide.abi``: two generated headers.

    python -m oxide.abi.header           # rewrite both
    python -m oxide.abi.header --check   # exit status 1 if either is not up to date

- ``oxide/include/oxide/abi.h`` (``PUBLIC_HEADER_PATH``), shipped with the package: every number
  and name of the contract a C or C++ reader needs, prefixed ``OXIDE_``: the manifest formats it
  may read, the parameter slot layout, the parameter and view kinds, dtype codes and sizes, the
  launch precondition encoding's operations and types, the index32 limit, the error record.
  ``oxide/launch.hpp`` and ``oxide/preconditions.h`` (the precondition evaluator the C launcher
  and ``launch.hpp`` share) include it. Valid C99 and C++17.
- ``oxide/runtime/_abi.h`` (``HEADER_PATH``), the C launcher's: it includes the public header
  and gives the launcher's short names (``DT_F32``, ``ARRAY_TORCH``, ``ABI_VERSION``...) to
  those values, so no number is written in it.

Both are checked in (a build of the wheel compiles the C launcher without running Python code
of ours); ``tests/test_abi.py`` regenerates them and compares.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from . import error_record, launcher, manifest, params, preconditions, views
from .scalars import SCALAR_TYPES

__all__ = ["HEADER_PATH", "PUBLIC_HEADER_PATH", "render_header", "render_public_header", "main"]

_PACKAGE = Path(__file__).resolve().parent.parent
HEADER_PATH = _PACKAGE / "runtime" / "_abi.h"
PUBLIC_HEADER_PATH = _PACKAGE / "include" / "oxide" / "abi.h"

_GENERATED = "/* Generated from oxide/abi/ by `python -m oxide.abi.header`: do not edit. */"


def _enum(entries: Sequence[tuple[str, object]]) -> str:
    return "enum { " + ", ".join(f"{name} = {value}" for name, value in entries) + " };"


def _strings(values: list[str]) -> str:
    return "{" + ", ".join(f'"{v}"' for v in values) + "}"


def _dtypes() -> list[tuple[str, int]]:
    return sorted(launcher.DTYPE_CODES.items(), key=lambda item: item[1])


def _dtype_count() -> int:
    return max(launcher.DTYPE_CODES.values()) + 1


def _op_name(op: str) -> str:
    return "OXIDE_OP_" + op.upper()


_RECORD_WORDS = ("FLAG", "MODULE_ID", "SITE_ID", "INDEX", "LENGTH")


def render_public_header() -> str:
    """The text of ``oxide/include/oxide/abi.h``."""
    count = _dtype_count()
    names = [""] * count
    itemsizes = [0] * count
    for name, code in _dtypes():
        names[code] = name
        itemsizes[code] = SCALAR_TYPES[name].itemsize
    arrays = sorted(launcher.ARRAY_KINDS.items(), key=lambda item: item[1])
    kernel_views = [k for k in views.ViewKind if k.is_kernel_param]
    readable = manifest.READABLE_MANIFEST_FORMATS
    lines = [
        _GENERATED,
        "/* The contract between oxide's compiler and its runtimes (the Python runtime, its C launcher and",
        "   oxide/launch.hpp), as C: oxide/abi/ describes it once. */",
        "#ifndef OXIDE_ABI_PUBLIC_H",
        "#define OXIDE_ABI_PUBLIC_H",
        "",
        "/* the manifest (oxide.abi.manifest): the format written, and those a runtime may read */",
        f"#define OXIDE_MANIFEST_FORMAT {manifest.MANIFEST_FORMAT}",
        f"#define OXIDE_READABLE_MANIFEST_FORMATS {{{', '.join(map(str, readable))}}}",
        f"#define OXIDE_READABLE_MANIFEST_FORMAT_COUNT {len(readable)}",
        f"#define OXIDE_LAUNCH_HPP_MANIFEST_FORMATS {{{', '.join(map(str, manifest.LAUNCH_HPP_MANIFEST_FORMATS))}}}",
        f"#define OXIDE_ARTIFACT_DIR \"{manifest.ARTIFACT_DIR}\"",
        "",
        "/* the parameter block (oxide.abi.params): slots of OXIDE_SLOT_BYTES; a scalar (and each scalar",
        "   field of a struct or vector) takes OXIDE_SCALAR_SLOTS, a 1-D view OXIDE_SLICE_SLOTS (pointer,",
        "   length), a tensor OXIDE_TENSOR_SLOTS(ndim) (pointer, shape[ndim], strides[ndim]), a TMA",
        "   descriptor OXIDE_TENSOR_MAP_SLOTS (the map's OXIDE_TENSOR_MAP_WORDS, then one box slot: two",
        "   kernel parameters), a constexpr none; an optional view (ParamSpec.optional) its view's slots",
        "   and OXIDE_PRESENT_SLOTS more, its flag (1: an array was passed; 0: None, its view slots 0) */",
        f"#define OXIDE_SLOT_BYTES {params.SLOT_BYTES}",
        f"#define OXIDE_SCALAR_SLOTS {params.SCALAR_SLOTS}",
        f"#define OXIDE_VIEW_POINTER_SLOTS {params.VIEW_POINTER_SLOTS}",
        f"#define OXIDE_SLICE_SLOTS {params.SLICE_SLOTS}",
        f"#define OXIDE_TENSOR_DIM_SLOTS {params.TENSOR_DIM_SLOTS}",
        "#define OXIDE_TENSOR_SLOTS(ndim) (OXIDE_VIEW_POINTER_SLOTS + OXIDE_TENSOR_DIM_SLOTS * (ndim))",
        f"#define OXIDE_PRESENT_SLOTS {params.PRESENT_SLOTS}",
        f"#define OXIDE_TENSOR_MAP_BYTES {params.TENSOR_MAP_BYTES}",
        f"#define OXIDE_TENSOR_MAP_WORDS {params.TENSOR_MAP_WORDS}",
        f"#define OXIDE_TENSOR_MAP_SLOTS {params.TENSOR_MAP_SLOTS}",
        f"#define OXIDE_TENSOR_MAP_MAX_NDIM {params.TENSOR_MAP_MAX_NDIM}",
        f"#define OXIDE_TENSOR_MAP_MAX_BOX {params.TENSOR_MAP_MAX_BOX}",
        f"#define OXIDE_TENSOR_MAP_SWIZZLES {{{', '.join(map(str, params.TENSOR_MAP_SWIZZLES))}}}",
        f"#define OXIDE_TENSOR_MAP_SWIZZLE_SHIFT {params.TENSOR_MAP_SWIZZLE_SHIFT}",
        f"#define OXIDE_MAX_TENSOR_NDIM {views.MAX_TENSOR_NDIM}",
        "/* the dtype code of the value in a view's pointer slot, in its length, extent and stride",
        "   slots, in a TMA descriptor's slots (oxide.abi.params.param_slot_dtypes) */",
        f"#define OXIDE_VIEW_POINTER_DT OXIDE_DT_{params.VIEW_POINTER_DTYPE.upper()}",
        f"#define OXIDE_VIEW_DIM_DT OXIDE_DT_{params.VIEW_DIM_DTYPE.upper()}",
        f"#define OXIDE_TENSOR_MAP_DT OXIDE_DT_{params.TENSOR_MAP_DTYPE.upper()}",
        f"#define OXIDE_PRESENT_DT OXIDE_DT_{params.PRESENT_DTYPE.upper()}",
        "",
        "/* ParamSpec.kind: the kinds that are not views */",
        f"#define OXIDE_PARAM_SCALAR \"{params.SCALAR_PARAM}\"",
        f"#define OXIDE_PARAM_CONSTEXPR \"{params.CONSTEXPR_PARAM}\"",
        f"#define OXIDE_PARAM_STRUCT \"{params.STRUCT_PARAM}\"",
        f"#define OXIDE_PARAM_VECTOR \"{params.VECTOR_PARAM}\"",
        f"#define OXIDE_PARAM_TENSOR_MAP \"{params.TENSOR_MAP_PARAM}\"",
        "/* ... and the view kinds a kernel takes (oxide.abi.views.ViewKind): name, is_tensor, is_writable */",
        "typedef struct { const char *name; int is_tensor, is_writable; } oxide_view_kind;",
        f"#define OXIDE_VIEW_KIND_COUNT {len(kernel_views)}",
        "static const oxide_view_kind oxide_view_kinds[OXIDE_VIEW_KIND_COUNT] = {"
        + ", ".join(f'{{"{k.value}", {int(k.is_tensor)}, {int(k.is_writable)}}}' for k in kernel_views) + "};",
        "",
        "/* dtype codes (oxide.abi.launcher.DTYPE_CODES), their names and sizes in bytes */",
        _enum([("OXIDE_DT_NONE", 0)] + [("OXIDE_DT_" + name.upper(), code) for name, code in _dtypes()]
              + [("OXIDE_DT_COUNT", count)]),
        "#define OXIDE_DT_ITEMSIZES {" + ", ".join(map(str, itemsizes)) + "}",
        f"static const char *const oxide_dtype_names[OXIDE_DT_COUNT] = {_strings(names)};",
        "",
        "/* launch preconditions (oxide.abi.preconditions): the opcodes of their programs, the most values",
        "   a program's stack holds, the most instructions of a kernel's programs (their checks included),",
        "   and the integer types (dtype codes) of casts and arithmetic */",
        _enum([(_op_name(op), i) for i, op in enumerate(preconditions.OPCODES)]
              + [("OXIDE_OP_COUNT", len(preconditions.OPCODES))]),
        f"#define OXIDE_PRECONDITION_STACK_LIMIT {preconditions.STACK_LIMIT}",
        f"#define OXIDE_PRECONDITION_PROGRAM_LIMIT {preconditions.KERNEL_PROGRAM_LIMIT}",
        f"#define OXIDE_INTEGER_TYPE_COUNT {len(preconditions.INTEGER_TYPES)}",
        "static const int oxide_integer_types[OXIDE_INTEGER_TYPE_COUNT] = {"
        + ", ".join("OXIDE_DT_" + t.upper() for t in preconditions.INTEGER_TYPES) + "};",
        "",
        "/* a kernel's index32 instance is launched when every tensor argument's span, extents and",
        "   |strides| are at most this (oxide.abi.launcher.INDEX32_LIMIT) */",
        f"#define OXIDE_INDEX32_LIMIT {launcher.INDEX32_LIMIT}",
        "",
        "/* the C launcher (oxide/runtime/_launcher*.c): its version, array kinds, most tensor dimensions */",
        f"#define OXIDE_LAUNCHER_ABI_VERSION {launcher.ABI_VERSION}",
        _enum([("OXIDE_ARRAY_NONE", 0)] + [("OXIDE_ARRAY_" + name.upper(), code) for name, code in arrays]),
        f"#define OXIDE_LAUNCHER_MAX_NDIM {launcher.MAX_LAUNCH_NDIM}",
        "",
        "/* the device-error record: int64 words (oxide.abi.error_record) */",
        _enum([("OXIDE_RECORD_" + name, getattr(error_record, name)) for name in _RECORD_WORDS]
              + [("OXIDE_RECORD_WORDS", error_record.RECORD_WORDS)]),
        "",
        "#endif",
        "",
    ]
    return "\n".join(lines)


def render_header() -> str:
    """The text of ``oxide/runtime/_abi.h``: the C launcher's short names for the public header's values."""
    lines = [
        _GENERATED,
        "/* The C launcher's names for the values of oxide/include/oxide/abi.h. */",
        "#ifndef OXIDE_ABI_H",
        "#define OXIDE_ABI_H",
        "",
        '#include "../include/oxide/abi.h"',
        "",
        "/* what launcher.py expects (it ignores an extension built from another version) */",
        "#define ABI_VERSION OXIDE_LAUNCHER_ABI_VERSION",
        "/* a Tensor of more dimensions stays on the Python path */",
        "#define MAX_NDIM OXIDE_LAUNCHER_MAX_NDIM",
        "/* the most elements a tensor may span for a launch of a kernel's index32 instance */",
        "#define INDEX32_LIMIT OXIDE_INDEX32_LIMIT",
        "/* the slot layout */",
        "#define SLOT_BYTES OXIDE_SLOT_BYTES",
        "#define SCALAR_SLOTS OXIDE_SCALAR_SLOTS",
        "#define VIEW_POINTER_SLOTS OXIDE_VIEW_POINTER_SLOTS",
        "#define SLICE_SLOTS OXIDE_SLICE_SLOTS",
        "#define TENSOR_DIM_SLOTS OXIDE_TENSOR_DIM_SLOTS",
        "#define TENSOR_SLOTS(ndim) OXIDE_TENSOR_SLOTS(ndim)",
        "#define PRESENT_SLOTS OXIDE_PRESENT_SLOTS",
        "/* the dtype code of a view's pointer slot, and of its length (a tensor's extents and strides) */",
        "#define VIEW_POINTER_DT OXIDE_VIEW_POINTER_DT",
        "#define VIEW_DIM_DT OXIDE_VIEW_DIM_DT",
        "",
        "/* array kinds (oxide.abi.launcher.ARRAY_KINDS) */",
        _enum([("ARRAY_NONE", "OXIDE_ARRAY_NONE")]
              + [(f"ARRAY_{name.upper()}", f"OXIDE_ARRAY_{name.upper()}") for name in launcher.ARRAY_KINDS]),
        "",
        "/* dtype codes (oxide.abi.launcher.DTYPE_CODES) and their sizes in bytes */",
        _enum([("DT_NONE", "OXIDE_DT_NONE")] + [(f"DT_{name.upper()}", f"OXIDE_DT_{name.upper()}")
                                                for name, _ in _dtypes()] + [("DT_COUNT", "OXIDE_DT_COUNT")]),
        "#define DT_ITEMSIZES OXIDE_DT_ITEMSIZES",
        "",
        "/* the device-error record: int64 words (oxide.abi.error_record) */",
        _enum([(f"RECORD_{name}", f"OXIDE_RECORD_{name}") for name in _RECORD_WORDS]
              + [("RECORD_WORDS", "OXIDE_RECORD_WORDS")]),
        "",
        "#endif",
        "",
    ]
    return "\n".join(lines)


_HEADERS = ((PUBLIC_HEADER_PATH, render_public_header), (HEADER_PATH, render_header))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        stale = [path for path, render in _HEADERS
                 if (path.read_text(encoding="utf-8") if path.is_file() else "") != render()]
        for path in stale:
            print(f"{path} is out of date: run python -m oxide.abi.header", file=sys.stderr)
        return 1 if stale else 0
    for path, render in _HEADERS:
        path.write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
