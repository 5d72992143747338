"""Kernel entry points declare only the parameters their code reads.

A kernel is lowered with one parameter per slot of the block the runtime packs
(``oxide.abi.params``), but its optimized code often reads fewer: a tensor's shape is not read
where the kernel's ``assert``s became launch preconditions and proved its bounds checks, a
slice's length not where a guard proved them, a scalar not where it only fed such a check. The
driver copies the whole declared block at every launch, and at a few microseconds a kernel that
copy is part of the time (the LLTM backward's index32 instance: 312 bytes declared, 216 read).

So, after the backend: the parameters of each entry point whose name the PTX body never mentions
are removed from its declaration, and the runtime passes only the kept ones
(``KernelSpec.param_slots``). Both backends name an entry's parameters ``<entry>_param_<i>`` and
read a parameter only through that name (``ld.param``, ``mov``/``cvta.param`` of its address for
a ``__grid_constant__`` map), so "the name does not occur after the declaration" means "not
read"; a declaration this module does not recognize keeps every parameter of its entry. The
analysis runs on the module's own PTX, per arch, and keeps the union over the archs; each PTX
text is read once (``_PtxIndex``), so a module of many kernels costs linear time. A module
whose cubins are made from PTX (no C++, or C++ with bf16: ``compile.CodePath``) has this PTX
rewritten here. A module linked with C++ through
LTO-IR has them made from LTO-IR: its PTX (C++ functions left undefined, so any parameter passed
to them counts as read) is analysed all the same, and the compiler lowers the module again
without the dropped parameters (``lower_program(dropped=...)``, oxide_build/compile.py).
"""
from __future__ import annotations

import re
from collections import Counter

__all__ = ["EntryParams", "entry_params", "declared_bytes", "drop_params", "drop_unread_params", "read_params_of_entries"]

# `.entry name(` — the names LLVM writes for our kernels are plain identifiers
_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$][\w$]*)\s*\(", re.MULTILINE)
_IDENTIFIER = re.compile(r"[\w$]+")  # a maximal run: a whole identifier (or number)


class EntryParams:
    """One entry point's parameter list in a PTX text: where it lies and what it declares."""

    __slots__ = ("name", "start", "end", "declarations", "indices")

    def __init__(self, name: str, start: int, end: int, declarations: list[str], indices: list[int]) -> None:
        self.name = name
        self.start = start  # the text between `(` and `)`: [start, end)
        self.end = end
        self.declarations = declarations  # each `.param ...` declaration, stripped
        self.indices = indices  # i of each declaration's <name>_param_<i>


def entry_params(ptx: str, name: str) -> EntryParams | None:
    """The parameter list of entry ``name`` in ``ptx``; None when it is not there or not in the
    form this module reads (``.param <type...> <name>_param_<i>[<bytes>]``)."""
    return _PtxIndex(ptx).entry(name)


class _PtxIndex:
    """One PTX text read once: its entries' parameter lists, and how often each parameter name
    occurs as a whole identifier (so that a module of many kernels is read in linear time)."""

    def __init__(self, ptx: str) -> None:
        self.ptx = ptx
        self._starts: dict[str, int] = {}
        for m in _ENTRY.finditer(ptx):
            self._starts.setdefault(m.group(1), m.end())
        self._entries: dict[str, EntryParams | None] = {}
        self._counts: Counter[str] | None = None

    def entry(self, name: str) -> EntryParams | None:
        if name not in self._entries:
            self._entries[name] = self._parse(name)
        return self._entries[name]

    def _parse(self, name: str) -> EntryParams | None:
        start = self._starts.get(name)
        if start is None:
            return None
        end = self.ptx.find(")", start)
        if end < 0:
            return None
        inner = self.ptx[start:end]
        declarations = [d.strip() for d in inner.split(",")] if inner.strip() else []
        param = re.compile(r"^\.param\s.*\s" + re.escape(name) + r"_param_(\d+)(\[\d+\])?$", re.DOTALL)
        indices = []
        for d in declarations:
            pm = param.match(d)
            if pm is None:
                return None
            indices.append(int(pm.group(1)))
        return EntryParams(name, start, end, declarations, indices)

    def mentioned(self, name: str, i: int, outside: tuple[int, int]) -> bool:
        """Whether ``<name>_param_<i>`` occurs as a whole identifier outside ``outside`` (the
        declaration list)."""
        if self._counts is None:
            self._counts = Counter(t for t in _IDENTIFIER.findall(self.ptx) if "_param_" in t)
        token = f"{name}_param_{i}"
        inside = _IDENTIFIER.findall(self.ptx, outside[0], outside[1]).count(token)
        return self._counts[token] > inside


def read_params_of_entries(ptx: str, names: list[str]) -> dict[str, set[int] | None]:
    """entry -> the indices of the parameters its code reads; None when unknown (keep all)."""
    return _read_params(_PtxIndex(ptx), names)


def _read_params(index: _PtxIndex, names: list[str]) -> dict[str, set[int] | None]:
    out: dict[str, set[int] | None] = {}
    for name in names:
        params = index.entry(name)
        if params is None or params.indices != list(range(len(params.indices))):  # not LLVM's 0, 1, ...
            out[name] = None
            continue
        out[name] = {i for i in params.indices if index.mentioned(name, i, (params.start, params.end))}
    return out


def drop_params(ptx: str, keep: dict[str, list[int]]) -> str:
    """``ptx`` with each entry of ``keep`` declaring only the parameters listed there (indices of
    its full list; their names stay ``<entry>_param_<i>``: the body reads them by name)."""
    return _drop(_PtxIndex(ptx), keep)


def _drop(index: _PtxIndex, keep: dict[str, list[int]]) -> str:
    ptx = index.ptx
    edits: list[tuple[int, int, str]] = []
    for name, kept in keep.items():
        params = index.entry(name)
        if params is None:
            raise ValueError(f"entry {name} is not in the PTX in the form entry_params reads")
        missing = [i for i in params.indices
                   if i not in kept and index.mentioned(name, i, (params.start, params.end))]
        if missing:  # never drop a parameter the code reads
            raise ValueError(f"entry {name} reads parameters {missing}, which would be dropped")
        chosen = [d for d, i in zip(params.declarations, params.indices) if i in kept]
        text = ("\n\t" + ",\n\t".join(chosen) + "\n") if chosen else ""
        edits.append((params.start, params.end, text))
    pieces: list[str] = []
    at = 0
    for start, end, text in sorted(edits):
        pieces += [ptx[at:start], text]
        at = end
    pieces.append(ptx[at:])
    return "".join(pieces)


def drop_unread_params(ptx: dict[str, str], entries: dict[str, int]) -> tuple[dict[str, str], dict[str, list[int]]]:
    """``ptx`` (arch -> text) with each of ``entries`` (entry -> the number of parameters the
    runtime's slot layout gives it: ``oxide.abi.manifest.entry_param_starts``) declaring only the
    parameters its code reads on some arch, and entry -> the indices kept, for the entries that
    lost some. An entry that declares another number of parameters keeps them all: its indices
    would not name the runtime's slots."""
    indexes = {arch: _PtxIndex(text) for arch, text in ptx.items()}
    kept: dict[str, list[int]] = {}
    for name, expected in entries.items():
        reads: set[int] = set()
        declared: int | None = None
        for index in indexes.values():
            params = index.entry(name)
            used = _read_params(index, [name])[name]
            if params is None or used is None or declared not in (None, len(params.indices)):
                declared = None
                break
            declared = len(params.indices)
            reads |= used
        if declared == expected and len(reads) < declared:
            kept[name] = sorted(reads)
    if not kept:
        return ptx, kept
    return {arch: _drop(index, kept) for arch, index in indexes.items()}, kept


_SCALAR_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8}


def declared_bytes(ptx: str, name: str) -> int | None:
    """The size of the parameter block entry ``name`` declares (what the driver copies per
    launch: each parameter at its alignment); None when its declaration is not in that form."""
    params = entry_params(ptx, name)
    if params is None:
        return None
    size = 0
    for d in params.declarations:
        # `.param [.align N] .<type><bits> [.ptr [.space] .align N] name[[count]]`
        m = re.match(r"^\.param(?:\s+\.align\s+(\d+))?\s+\.[a-z]+(\d+)(?:\s+\.ptr(?:\s+\.\w+)?\s+\.align\s+\d+)?"
                     r"\s+[\w$]+?(?:\[(\d+)\])?$", d)
        if m is None or m.group(2) not in _SCALAR_BYTES:
            return None
        elem = _SCALAR_BYTES[m.group(2)]
        align = int(m.group(1)) if m.group(1) else elem
        size = -(-size // align) * align + elem * (int(m.group(3)) if m.group(3) else 1)
    return size
