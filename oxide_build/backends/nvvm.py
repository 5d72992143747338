"""LLVM IR → PTX or LTO-IR with libNVVM (``cuda.bindings.nvvm``, wheel ``nvidia-nvvm``).

libNVVM reads the NVVM IR dialect, which is LLVM 7 era text with typed pointers. The lowering
prints typed pointers already (``module_text``); this module adapts the rest of the text:

- the NVVM data layout and triple replace the NVPTX ones;
- ``!nvvmir.version`` says which NVVM IR version the module follows (``nvvm.ir_version()``);
- every kernel and exported function is listed in ``@llvm.used``: with ``-gen-lto`` the LTO
  link otherwise drops them (the ``!nvvm.annotations`` kernel mark alone is not enough);
- newer instruction syntax is rewritten into its LLVM 7 equivalent (``fneg`` → ``fsub -0.0``;
  ``atomicrmw fadd``/``uinc_wrap``/``udec_wrap`` → ``llvm.nvvm.atomic.load.add/inc/dec``),
  ``fence`` (which libNVVM rejects as an "unsupported operation") becomes the
  ``llvm.nvvm.membar.*`` intrinsic that CUDA's ``__threadfence()`` compiles to, and function
  attributes libNVVM does not know are removed.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from oxide.errors import CompileError, ToolchainError

from ..targets import arch_number
from .libdevice import libdevice_bytes

__all__ = [
    "NVVM_DATA_LAYOUT",
    "NVVMOutput",
    "compile_nvvm",
    "nvvm_ir_text",
    "nvvm_versions",
    "emit_ptx",
    "emit_ltoir",
]

NVVM_TRIPLE = "nvptx64-nvidia-cuda"
NVVM_DATA_LAYOUT = (
    "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64"
    "-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
)
_PIP_HINT = "pip install nvidia-nvvm (or pip install 'oxide-cuda[build]')"

# Function attributes that libNVVM's LLVM 7 parser accepts; anything else is dropped.
_KNOWN_FN_ATTRS = frozenset({
    "alwaysinline", "cold", "convergent", "inlinehint", "minsize", "noduplicate", "noinline",
    "nounwind", "noreturn", "optsize", "readnone", "readonly", "writeonly", "argmemonly",
    "norecurse", "speculatable",
})

_lock = threading.Lock()


def _nvvm():  # type: ignore[no-untyped-def]
    from ..toolchain import bindings

    nvvm = bindings("NVVM")
    try:
        nvvm.version()
    except Exception as exc:  # the library loaded but is not usable
        raise ToolchainError(f"libNVVM could not be used ({exc}): {_PIP_HINT}") from None
    return nvvm


def nvvm_versions() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(libNVVM version, NVVM IR version it reads), e.g. ((2, 0), (2, 0, 3, 2))."""
    nvvm = _nvvm()
    return tuple(nvvm.version()), tuple(nvvm.ir_version())


@dataclass(frozen=True)
class NVVMOutput:
    data: bytes  # PTX text (encoded) or LTO-IR
    log: str  # libNVVM's warnings, if any


# ---- IR text adaptation --------------------------------------------------------------------

_GLOBAL_NAME = r'@(?:"[^"]+"|[\w.$]+)'
_FNEG_RE = re.compile(r'=\s*fneg\s+(?P<flags>(?:(?:fast|nnan|ninf|nsz|arcp|contract|afn|reassoc)\s+)*)(?P<ty>half|float|double)\s+')
_FN_TYPE_RE = re.compile(r'^define\s+(?:internal\s+|private\s+|linkonce_odr\s+|weak\s+|external\s+)?(?P<ret>.+?)\s+(?P<name>' + _GLOBAL_NAME + r')\((?P<args>.*)\)')


def _fn_pointer_type(ret: str, args: str) -> str:
    """The typed-pointer type of a function, from its definition's return type and arguments."""
    types = []
    depth = 0
    current = ""
    for ch in args:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            types.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        types.append(current)
    arg_types = []
    for a in types:
        a = a.strip()
        # drop the argument name and parameter attributes: keep the type
        a = re.sub(r'\s+%(?:"[^"]*"|[\w.$]+)\s*$', "", a)
        a = re.sub(r'\s+(?:noalias|nocapture|readonly|readnone|writeonly|signext|zeroext|nonnull|noundef)\b', "", a)
        arg_types.append(a)
    return f"{ret} ({', '.join(arg_types)})*"


def nvvm_ir_text(llvm_ir: str, keep: tuple[str, ...] | None = None, arch: str = "") -> str:
    """Adapts typed-pointer LLVM IR printed by llvmlite to what libNVVM reads.

    ``arch``: the target ("sm_120"); from sm_100 on, branch-weight metadata is dropped: libNVVM
    13.5 crashes on some modules for compute_120 with it (seen on examples/histogram.py).
    ``keep``: functions to list in ``@llvm.used`` (default: every non-internal definition,
    i.e. kernels and exported device functions); externally visible global variables are
    always listed.
    """
    major, minor, dbg_major, dbg_minor = _nvvm().ir_version()
    out: list[str] = []
    defined: list[tuple[str, str]] = []  # (symbol as printed, pointer type)
    globals_: list[tuple[str, str]] = []
    has_used = False
    membars: set[str] = set()
    declares: dict[str, str] = {}
    drop_prof = bool(arch) and arch_number(arch) >= 100
    temp = 0
    for line in llvm_ir.splitlines():
        # a line table (lineinfo) attaches `, !dbg !N`: set it aside so that the rewrites below
        # see the instruction as without one, and give it back to what they make of it
        dbg = _DBG_RE.search(line)
        if dbg is not None:
            line = line[:dbg.start()]
        elif "spFlags:" in line:  # LLVM 7 spells a subprogram's flags as fields
            line = line.replace("spFlags: DISPFlagDefinition | DISPFlagOptimized", "isDefinition: true, isOptimized: true")
        stripped = line.strip()
        if stripped.startswith("target triple"):
            out.append(f'target triple = "{NVVM_TRIPLE}"')
            continue
        if stripped.startswith("target datalayout"):
            out.append(f'target datalayout = "{NVVM_DATA_LAYOUT}"')
            continue
        if drop_prof and ", !prof !" in line:
            line = re.sub(r", !prof !\d+", "", line)
        if stripped.startswith("@llvm.used"):
            has_used = True
        if stripped.startswith("define "):
            line = _adapt_define(line)
            m = _FN_TYPE_RE.match(line.strip())
            if m and not re.match(r"^define\s+(internal|private)\b", line.strip()):
                ret = re.sub(r"^(?:dso_local\s+|hidden\s+|protected\s+|fastcc\s+|ptx_kernel\s+)+", "", m.group("ret"))
                defined.append((m.group("name"), _fn_pointer_type(ret, m.group("args"))))
        elif " = freeze " in line:
            # LLVM 7 has no `freeze`; a no-op bitcast keeps the value and its name
            line = re.sub(r"= freeze (?P<ty>.+?) (?P<v>%\S+)\s*$", lambda m: f"= bitcast {m.group('ty')} {m.group('v')} to {m.group('ty')}", line)
        elif "fneg" in line:
            line = _FNEG_RE.sub(lambda m: f"= fsub {m.group('flags')}{m.group('ty')} -0.0, ", line)
        elif " atomicrmw " in line:
            m = _ATOMIC_RMW_RE.match(line)
            if m:
                # LLVM 7 has no floating-point nor wrapping atomicrmw: nvcc's NVVM IR used these
                # intrinsics (atomicAdd on floats, atomicInc, atomicDec)
                ty, space = m.group("ty"), m.group("space") or "0"
                bits = {"float": "f32", "double": "f64", "i32": "i32"}[ty]
                base = {"fadd": "add", "fsub": "add", "uinc_wrap": "inc.32", "udec_wrap": "dec.32"}[m.group("op")]
                name = f"llvm.nvvm.atomic.load.{base}{'.' + bits if ty != 'i32' else ''}.p{space}{bits}"
                ptr_ty = m.group("ptrty")
                value = m.group("value")
                if m.group("op") == "fsub":
                    temp += 1
                    neg = f'%"oxide.neg.{temp}"'
                    out.append(f"{m.group('indent')}{neg} = fsub {ty} -0.0, {value}")
                    value = neg
                line = f"{m.group('indent')}{m.group('result')} = call {ty} @{name}({ptr_ty} {m.group('ptr')}, {ty} {value})"
                declares[name] = f"declare {ty} @{name}({ptr_ty}, {ty})"
        elif stripped.startswith("fence "):
            # libNVVM: "unsupported operation" for IR fences; __threadfence() is this intrinsic
            scope = "cta" if 'syncscope("block")' in stripped else "sys" if "system" in stripped else "gl"
            line = line[: len(line) - len(line.lstrip())] + f"call void @llvm.nvvm.membar.{scope}()"
            membars.add(scope)
        kept_global = _kept_global(stripped)
        if kept_global is not None:
            globals_.append(kept_global)
        out.append(line + (dbg.group(0) if dbg is not None else ""))
    if keep is not None:
        wanted = set(keep)
        defined = [(n, t) for n, t in defined if n.strip('@"') in wanted]
    entries = [f"i8* bitcast ({t} {n} to i8*)" for n, t in defined]
    entries += [f"i8* addrspacecast ({t} {n} to i8*)" for n, t in globals_]
    if entries and not has_used:
        items = ", ".join(entries)
        out.append(f'@llvm.used = appending global [{len(entries)} x i8*] [{items}], section "llvm.metadata"')
    for name, decl in declares.items():
        if f"@{name}(" not in llvm_ir:
            out.append(decl)
    for scope in sorted(membars):
        if f"@llvm.nvvm.membar.{scope}(" not in llvm_ir:
            out.append(f"declare void @llvm.nvvm.membar.{scope}()")
    out.append(f"!nvvmir.version = !{{!{_next_md(llvm_ir)}}}")
    out.append(f"!{_next_md(llvm_ir)} = !{{i32 {major}, i32 {minor}, i32 {dbg_major}, i32 {dbg_minor}}}")
    return "\n".join(out) + "\n"


_DBG_RE = re.compile(r",\s*!dbg\s+!\d+\s*$")
_ATOMIC_RMW_RE = re.compile(
    r'^(?P<indent>\s*)(?P<result>%(?:"[^"]+"|[\w.$]+))\s*=\s*atomicrmw\s+(?:volatile\s+)?'
    r'(?P<op>fadd|fsub|uinc_wrap|udec_wrap)\s+'
    r'(?P<ptrty>(?P<ty>float|double|i32)(?:\s+addrspace\((?P<space>\d+)\))?\s*\*)\s+(?P<ptr>%(?:"[^"]+"|[\w.$]+)),\s*'
    r'(?:float|double|i32)\s+(?P<value>[^,\s]+(?:\s*"[^"]*")?)\s+(?:syncscope\("[^"]*"\)\s+)?\w+(?:,\s*align\s+\d+)?\s*$'
)
_GLOBAL_DEF_RE = re.compile(
    r'^(?P<name>@(?:"[^"]+"|[\w.$]+))\s*=\s*(?P<linkage>(?:[a-z_]+\s+)*?)(?:addrspace\((?P<as>\d+)\)\s+)?'
    r'(?:global|constant)\s+(?P<rest>.*)$'
)


def _kept_global(line: str) -> tuple[str, str] | None:
    """(name, typed pointer type) of a global variable the runtime looks up by name
    (``__oxide_error_ptr``, ``__oxide_module_id``, …): a defined, externally visible one.
    Listed in ``@llvm.used`` so that LTO neither drops it nor folds its loads to the
    initializer."""
    m = _GLOBAL_DEF_RE.match(line)
    if not m or m.group("name").strip('@"').startswith("llvm."):
        return None
    linkage = m.group("linkage").split()
    if any(word in ("internal", "private", "external", "extern_weak") for word in linkage):
        return None
    rest = m.group("rest")
    end = _type_end(rest, 0)
    if end >= len(rest.rstrip()) or rest[end:].lstrip().startswith(","):
        return None  # a declaration: no initializer
    space = m.group("as") or "0"
    pointer = f"{rest[:end].strip()} addrspace({space})*" if space != "0" else f"{rest[:end].strip()}*"
    return m.group("name"), pointer


def _type_end(s: str, i: int) -> int:
    """The index just past the LLVM type that starts at ``s[i]``."""
    pairs = {"[": "]", "{": "}", "<": ">", "(": ")"}
    if s[i] in pairs:
        depth = 0
        j = i
        while j < len(s):
            if s[j] in "[{<(":
                depth += 1
            elif s[j] in "]}>)":
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            j += 1
    else:
        m = re.match(r'%?(?:"[^"]*"|[\w.$]+)', s[i:])
        j = i + (m.end() if m else 1)
    while True:  # pointer suffixes: *, addrspace(N)*
        m = re.match(r"\s*(\*|addrspace\(\d+\)\s*\*)", s[j:])
        if not m:
            return j
        j += m.end()


def _next_md(text: str) -> int:
    ids = [int(m) for m in re.findall(r"^!(\d+)\s*=", text, flags=re.M)]
    return max(ids, default=-1) + 1


def _adapt_define(line: str) -> str:
    """Removes function attributes libNVVM's parser does not know from a ``define`` line."""
    m = re.match(r'^(?P<sig>define\s.*\))(?P<attrs>[^)]*?)(?P<brace>\s*\{?\s*)$', line)
    if not m:
        return line
    attrs = re.sub(r"!dbg\s+!", "!dbg!", m.group("attrs")).split()
    kept = [a.replace("!dbg!", "!dbg !") for a in attrs if a in _KNOWN_FN_ATTRS or a.startswith(("#", "!dbg!"))]
    return m.group("sig") + ("" if not kept else " " + " ".join(kept)) + m.group("brace")


# ---- compiling -----------------------------------------------------------------------------

def compile_nvvm(ir_text: str, arch: str, options: tuple[str, ...] = (), name: str = "module",
                 libdevice: bool = False) -> NVVMOutput:
    """Compiles NVVM IR text for ``arch`` ("sm_90" or "compute_90"); ``options`` are libNVVM's
    (``-gen-lto``, ``-opt=3``)."""
    nvvm = _nvvm()
    compute = arch.replace("sm_", "compute_")
    opts = [f"-arch={compute}", *options]
    with _lock:  # libNVVM programs are independent, but be conservative about its globals
        prog = nvvm.create_program()
        try:
            data = ir_text.encode()
            nvvm.add_module_to_program(prog, data, len(data), name)
            if libdevice:
                bc = libdevice_bytes()
                nvvm.lazy_add_module_to_program(prog, bc, len(bc), "libdevice")
            try:
                nvvm.compile_program(prog, len(opts), opts)
            except nvvm.nvvmError as exc:
                log = _program_log(nvvm, prog)
                raise CompileError(
                    f"libNVVM rejected the module {name} for {compute} ({exc}):\n{log}".rstrip(),
                    hint="this is a bug in oxide's lowering for libNVVM; the nvptx backend (the default) may work",
                ) from None
            size = nvvm.get_compiled_result_size(prog)
            buf = bytearray(size)
            nvvm.get_compiled_result(prog, buf)
            log = _program_log(nvvm, prog)
        finally:
            nvvm.destroy_program(prog)
    return NVVMOutput(bytes(buf).rstrip(b"\0") if "-gen-lto" not in options else bytes(buf), log)


def _program_log(nvvm, prog) -> str:  # type: ignore[no-untyped-def]
    try:
        size = nvvm.get_program_log_size(prog)
        buf = bytearray(size)
        nvvm.get_program_log(prog, buf)
        return buf.rstrip(b"\0").decode(errors="replace")
    except Exception:
        return ""


_LIBDEVICE_CALL_RE = re.compile(r'^declare\b[^@]*@"?__nv_', re.M)


def _uses_libdevice(llvm_ir: str) -> bool:
    return _LIBDEVICE_CALL_RE.search(llvm_ir) is not None


def emit_ptx(llvm_ir: str, arch: str, opt_level: int = 3, name: str = "module") -> str:
    """Typed-pointer LLVM IR → PTX text for ``arch``."""
    text = nvvm_ir_text(llvm_ir, arch=arch)
    opts = (f"-opt={3 if opt_level > 0 else 0}", *_line_info(llvm_ir))
    out = compile_nvvm(text, arch, opts, name, _uses_libdevice(llvm_ir))
    return out.data.decode()


def _line_info(llvm_ir: str) -> tuple[str, ...]:
    """libNVVM writes the line table (``.loc``) of a module built with lineinfo only when asked."""
    return ("-generate-line-info",) if "!llvm.dbg.cu" in llvm_ir else ()


def emit_ltoir(llvm_ir: str, arch: str, opt_level: int = 3, name: str = "module") -> bytes:
    """Typed-pointer LLVM IR → LTO-IR for ``arch`` (``-gen-lto``), for nvJitLink ``-lto``;
    the libdevice functions it calls are compiled into it."""
    text = nvvm_ir_text(llvm_ir, arch=arch)
    opts = ("-gen-lto", f"-opt={3 if opt_level > 0 else 0}", *_line_info(llvm_ir))
    return compile_nvvm(text, arch, opts, name, _uses_libdevice(llvm_ir)).data
