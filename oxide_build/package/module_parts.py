"""Splitting a module of many kernels into parts that compile, and are cached, one by one.

A build compiles each kernel module for each arch; a module of hundreds of kernels would be one
unit of work, keeping one core busy and compiling every kernel again when one changes. A
module whose kernels do not depend on one another is therefore split into *parts*: runs of at
most ``PART_KERNELS`` (8) consecutive kernels (and at least two parts for two kernels or more, so
two cores work on a module of two kernels). Each part is compiled on its own from the module's
source with the other parts' kernels blanked out (their lines made empty, so every line keeps
its number: error sites, diagnostics and line tables are the module's own), into code of its
own (``ModuleManifest.parts``; the runtime loads the part that holds a kernel).

The split depends on the source only (never on ``jobs``), so the wheel does not depend on the
machine. A module is compiled whole, as one part, when splitting could change what it means:

- one kernel refers to another by name (a launch from the device, a kernel passed along);
- it or a module of the tree it imports declares module memory (``ox.constant.array``,
  ``ox.global_memory.array``: one copy per module, shared by its kernels), links C++
  (``@ox.extern``, ``@ox.extern_kernel``, ``@ox.device(export=)``, ``link``), or uses the
  device runtime;
- a kernel is not a plain top-level ``def`` of the module.

A part's cache key holds its *kept text*: the module's lines without the other parts' kernels.
So an edit to one kernel changes the key of its own part only, even where it adds or removes
lines: the other parts' results are taken from the cache and their line numbers (error sites,
kernel specs) moved to where the lines are now (``relocate``). With ``lineinfo`` the code
itself holds line numbers, and the key holds the lines' positions as well.
"""
from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..scan import read_source

if TYPE_CHECKING:
    from oxide.runtime.manifest import ModuleManifest

__all__ = ["PART_KERNELS", "ModulePart", "part_file_name", "relocate", "split_module"]

PART_KERNELS = 8  # kernels per part at most: an edit recompiles this many
# what makes a module compile whole: module memory, C++ linking, the device runtime
_WHOLE_MODULE_MARKERS = ("constant.array", "global_memory.array", "extern", "export", "cudadevrt")


@dataclass(frozen=True)
class ModulePart:
    """One part of a split module: its kernels and the source it is compiled from."""

    number: int  # 0 for the first part
    kernels: tuple[str, ...]  # Python names, in source order
    text: str  # the module's source, the other parts' kernels blanked
    kept_text: str  # the module's source without the other parts' kernels (the cache key's)
    kept_lines: tuple[int, ...]  # the (1-based) line of the module of each kept line

    @property
    def key_digest(self) -> str:
        return hashlib.sha256(self.kept_text.encode()).hexdigest()


def part_file_name(name: str, module: str, number: int) -> str:
    """A code file of part ``number`` (``mod.sm_90.cubin`` -> ``mod.part3.sm_90.cubin``); the
    first part keeps the module's names."""
    if number == 0:
        return name
    assert name.startswith(module + "."), (name, module)
    return f"{module}.part{number}{name[len(module):]}"


def _kernel_defs(tree: ast.Module, kernels: list[str]) -> list[tuple[str, int, int]] | None:
    """``(name, first line, last line)`` of each kernel's top-level ``def`` (decorators
    included), in source order; None when a kernel is not one."""
    found: dict[str, tuple[int, int]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in kernels:
            if node.name in found or node.end_lineno is None:
                return None  # defined twice: the last one wins in Python; compile it whole
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found[node.name] = (first, node.end_lineno)
    if set(found) != set(kernels):
        return None
    return sorted(((name, *span) for name, span in found.items()), key=lambda k: k[1])


def _refers_to_another_kernel(tree: ast.Module, spans: list[tuple[str, int, int]]) -> bool:
    names = {name for name, _, _ in spans}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            return True  # a def binds its name without an ast.Name: any use is a reference
        if isinstance(node, ast.Attribute) and node.attr in names:
            return True
    return False


def _part_sizes(count: int) -> list[int]:
    """At most PART_KERNELS kernels a part, at least two parts, as even as can be."""
    parts = max(2, -(-count // PART_KERNELS))
    base, extra = divmod(count, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def split_module(source: Path, kernels: list[str], tree_texts: list[str], link_inputs: bool) -> list[ModulePart] | None:
    """The parts of the module at ``source`` whose kernels are ``kernels``, or None when it is
    compiled whole. ``tree_texts``: the sources of the tree modules it imports (module memory
    or C++ there keeps it whole); ``link_inputs``: the build links C++ into every module."""
    if len(kernels) < 2 or link_inputs:
        return None
    text = read_source(source)
    if any(marker in t for t in (text, *tree_texts) for marker in _WHOLE_MODULE_MARKERS):
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None  # the compile reports it
    spans = _kernel_defs(tree, kernels)
    if spans is None or _refers_to_another_kernel(tree, spans):
        return None
    lines = text.splitlines(keepends=True)
    # The module cut at its kernels, once: gap i lies before kernel i, the last gap after the
    # last kernel. A part is then the gaps, its own kernels and the others' blanks, joined: linear
    # in the module's length a part (blanking line by line for each part was quadratic in it).
    gaps: list[tuple[str, range]] = []
    kernel_texts: list[str] = []
    blanks: list[str] = []
    at = 1
    for _, first, last in spans:
        gaps.append(("".join(lines[at - 1:first - 1]), range(at, first)))
        own_lines = lines[first - 1:last]
        kernel_texts.append("".join(own_lines))
        blanks.append("".join("\n" if line.endswith("\n") else "" for line in own_lines))
        at = last + 1
    gaps.append(("".join(lines[at - 1:]), range(at, len(lines) + 1)))
    parts: list[ModulePart] = []
    start = 0
    for number, size in enumerate(_part_sizes(len(spans))):
        mine = range(start, start + size)
        start += size
        out: list[str] = []
        kept: list[str] = []
        kept_lines: list[int] = []
        for index, (_, first, last) in enumerate(spans):
            gap, gap_lines = gaps[index]
            out.append(gap)
            kept.append(gap)
            kept_lines.extend(gap_lines)
            if index in mine:
                out.append(kernel_texts[index])
                kept.append(kernel_texts[index])
                kept_lines.extend(range(first, last + 1))
            else:
                out.append(blanks[index])
        gap, gap_lines = gaps[-1]
        out.append(gap)
        kept.append(gap)
        kept_lines.extend(gap_lines)
        parts.append(ModulePart(number, tuple(spans[i][0] for i in mine), "".join(out), "".join(kept),
                                tuple(kept_lines)))
    return parts


def relocate(manifest: ModuleManifest, file: str, built_at: tuple[int, ...], now_at: tuple[int, ...]) -> ModuleManifest:
    """A cached part's manifest with its kernel specs' lines and its error sites' lines in
    ``file`` (the module's source as error sites name it, relative to the source root) moved from where its kept lines were (``built_at``) to where
    they are now (``now_at``): the same kept text, so as many lines."""
    if built_at == now_at:
        return manifest
    where = dict(zip(built_at, now_at))
    sites = tuple(s._replace(line=where.get(s.line, s.line)) if s.file == file else s for s in manifest.error_sites)
    kernels = tuple(k._replace(line=where.get(k.line, k.line)) for k in manifest.kernels)  # the module's own
    return manifest._replace(error_sites=sites, kernels=kernels)
