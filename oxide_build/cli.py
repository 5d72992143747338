"""The ``oxide`` command: compile one file to LLVM IR, PTX or cubins; list a tree's kernels;
the build steps of the CMake package (device-lib, build-kernels, archs).

Errors (a compile error, a missing toolchain component) print their diagnostic and exit with
status 1; a compiler traceback never reaches the terminal.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from oxide.errors import OxideError

if TYPE_CHECKING:
    from oxide_build.config import CompileOptions

__all__ = ["EMIT_KINDS", "main"]

EMIT_KINDS = ("ir", "llvm", "ptx", "cubin", "ltoir", "fatbin")


class UsageError(OxideError):
    """A bad command line that argparse cannot see (a missing file, an unknown arch)."""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("oxide-cuda")
    except Exception:  # not installed: running from a checkout
        import oxide

        return oxide.__version__


def _parser() -> argparse.ArgumentParser:
    from oxide_build.targets import DEFAULT_ARCHS, SUPPORTED_ARCHS

    parser = argparse.ArgumentParser(
        prog="oxide",
        description="Compile CUDA kernels written in typed Python (oxide) ahead of time.",
        epilog="Wheels are built by the PEP 517 backend: build-backend = \"oxide_build\" in pyproject.toml.",
    )
    parser.add_argument("--version", action="version", version=f"oxide {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    compile_cmd = commands.add_parser(
        "compile",
        help="compile the kernels of one Python file",
        description=(
            "Compile every @kernel of FILE (and the device functions it calls) for each arch. "
            "Writes DIR/<module>.ir (--emit ir: oxide's IR as text), DIR/<module>.ll (--emit llvm), DIR/<module>.<arch>.ptx (--emit ptx) and "
            "DIR/<module>.<arch>.cubin (--emit cubin). The options start from the [tool.oxide] table of the "
            "project FILE belongs to (arch, opt-level, bounds-check, backend, fast-math, fma, lineinfo, "
            "max-registers, ptx, include-dirs, defines, nvrtc-options, link), as a build uses them; the "
            "options given here override them (-I, -D and --link add to them); --no-project ignores the table."
        ),
    )
    compile_cmd.add_argument("file", metavar="FILE", type=Path, help="the Python source file")
    compile_cmd.add_argument(
        "--arch",
        action="append",
        metavar="ARCH",
        help=(
            "GPU architecture; repeat it or separate with commas "
            f"(supported: {', '.join(SUPPORTED_ARCHS)}; default: the project's [tool.oxide] arch, else "
            f"{','.join(DEFAULT_ARCHS)})"
        ),
    )
    compile_cmd.add_argument(
        "--emit",
        action="append",
        choices=EMIT_KINDS,
        help="what to write; repeat for several (default: cubin)",
    )
    compile_cmd.add_argument("-o", "--output", metavar="DIR", type=Path, required=True, help="output directory (created if missing)")
    compile_cmd.add_argument("--module", metavar="NAME", help="module name used in file names and symbols (default: FILE's stem)")
    compile_cmd.add_argument(
        "--root",
        metavar="DIR",
        type=Path,
        help=(
            "source tree in which imported modules are looked up (default: the directory that "
            "holds the module's top-level package, i.e. FILE's directory for a name without dots)"
        ),
    )
    compile_cmd.add_argument("-O", dest="opt_level", type=int, choices=range(4), default=None, metavar="N",
                             help="optimization level 0-3 (default: the project's opt-level, else 3)")
    compile_cmd.add_argument("--no-bounds-check", "--unchecked-indexing", dest="no_bounds_check", action="store_true",
                             help="do not check view and array indices on the device (asserts stay)")
    compile_cmd.add_argument("--backend", choices=("nvptx", "nvvm"), default=None,
                             help="what makes the PTX: LLVM's NVPTX target or libNVVM (default: the project's "
                                  "backend, else nvptx)")
    compile_cmd.add_argument("--no-project", action="store_true",
                             help="ignore the [tool.oxide] table of FILE's project: oxide's defaults only")
    from oxide_build.passes import pass_names

    compile_cmd.add_argument("--print-after", metavar="PASS", choices=[*pass_names(), "all"],
                             help="print the IR after this pass of the pipeline to stderr "
                                  f"({', '.join(pass_names())}, or all); --emit ir writes the final IR")
    compile_cmd.add_argument("--header", metavar="FILE", type=Path,
                             help="write a C++ header declaring the module's @device(export=...) functions "
                                  "(use with --emit ltoir: DIR/<module>.<arch>.ltoir)")
    compile_cmd.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                             help="include directory for the module's CUDA C++ sources (NVRTC)")
    compile_cmd.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                             help="preprocessor definition for the module's CUDA C++ sources")
    compile_cmd.add_argument("--link", dest="link_inputs", action="append", default=[], metavar="FILE",
                             help="another linker input: .cu .ltoir .ptx .cubin .fatbin .o .a")

    scan_cmd = commands.add_parser(
        "scan",
        help="list the kernels found in a source tree",
        description="List every module under DIR that defines a @kernel, with its kernels. Reads source only; imports nothing.",
    )
    scan_cmd.add_argument("dir", metavar="DIR", type=Path, nargs="?", default=Path("."), help="project or source root (default: .)")
    scan_cmd.add_argument(
        "--package",
        action="append",
        metavar="NAME",
        help="top-level package to scan; repeat for several (default: every package under DIR)",
    )
    cache_cmd = commands.add_parser(
        "cache",
        help="show or empty the compile cache",
        description="The compile cache holds NVRTC, libNVVM and nvJitLink results and JIT-compiled modules "
                    "($OXIDE_CACHE_DIR, else the user cache dir).",
    )
    cache_cmd.add_argument("action", choices=("info", "clear"), help="info: where it is and how big; clear: empty it")
    inspect_cmd = commands.add_parser(
        "inspect",
        help="registers, shared/local memory and spills of each kernel",
        description="Compile FILE for one arch and print what ptxas made of each kernel (from nvJitLink's "
                    "info log): registers, shared memory, local memory, stack, spills, barriers, and the "
                    "bytes of the parameter block each entry point declares (the parameters its code reads). "
                    "FILE::kernel limits the output to one kernel (all its specializations). The options "
                    "(bounds checks, fast math, C++ link inputs, include dirs, defines) are those of the "
                    "[tool.oxide] table of the project FILE belongs to, as a build would use them.",
    )
    inspect_cmd.add_argument("target", metavar="FILE[::KERNEL]", help="a Python source file, optionally ::kernel")
    inspect_cmd.add_argument("--arch", default="sm_90", help="the arch to compile for (default: sm_90)")
    inspect_cmd.add_argument("--module", help="module name (default: the file stem)")
    inspect_cmd.add_argument("--root", type=Path, help="source root for imports between modules (default: guessed)")
    inspect_cmd.add_argument("--emit", choices=("resources", "sass"), default="resources",
                             help="sass: also print the SASS (needs cuobjdump: pip install nvidia-cuda-cuobjdump)")
    devlib_cmd = commands.add_parser(
        "device-lib",
        help="compile CUDA C++ to a multi-arch LTO-IR device library (NVRTC; CMake's oxide_add_device_library)",
        description="Compile each CUDA C++ FILE for each arch with NVRTC (-dlto) and write one fatbin of "
                    "their LTO-IR, a link input (--link, [tool.oxide] link) for every arch. Needs no CUDA "
                    "toolkit: NVRTC and the CUDA/CCCL headers come from the nvidia-* wheels.",
    )
    devlib_cmd.add_argument("sources", metavar="FILE", type=Path, nargs="+", help="the .cu files")
    devlib_cmd.add_argument("-o", "--output", metavar="FILE", type=Path, required=True, help="the fatbin to write")
    devlib_cmd.add_argument("--arch", action="append", metavar="ARCH",
                            help="GPU architecture, repeat or separate with commas (default: --project's [tool.oxide] arch)")
    devlib_cmd.add_argument("--project", metavar="DIR", type=Path, default=Path("."),
                            help="the project whose [tool.oxide] arch is the default (default: .)")
    devlib_cmd.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR", help="include directory")
    devlib_cmd.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                            help="preprocessor definition")
    devlib_cmd.add_argument("--depfile", metavar="FILE", type=Path,
                            help="also write a Makefile rule of the sources and the headers they include")
    kernels_cmd = commands.add_parser(
        "build-kernels",
        help="compile a project's kernel packages into a wheel-layout directory (CMake's oxide_add_kernels)",
        description="Compile the kernel modules of each --package of PROJECT with its [tool.oxide], plus the "
                    "extra link inputs, into DIR/<package>/_oxide/ as a wheel holds them.",
    )
    kernels_cmd.add_argument("project", metavar="PROJECT", type=Path, help="the project directory (pyproject.toml)")
    kernels_cmd.add_argument("--package", action="append", required=True, metavar="NAME", help="a top-level package to compile")
    kernels_cmd.add_argument("-o", "--output", metavar="DIR", type=Path, required=True, help="output directory")
    kernels_cmd.add_argument("--link", dest="link_inputs", action="append", default=[], metavar="FILE",
                             help="another linker input for every module: .cu .ltoir .fatbin .o .a ...")
    kernels_cmd.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                             help="include directory for the modules' CUDA C++ sources")
    archs_cmd = commands.add_parser(
        "archs",
        help="print a project's archs ([tool.oxide] arch), separated by ';'",
        description="Print the archs a build of PROJECT compiles for: [tool.oxide] arch, overridden by "
                    "OXIDE_ARCH, separated by ';' (a CMake list: CMake's oxide package reads it).",
    )
    archs_cmd.add_argument("project", metavar="PROJECT", type=Path, nargs="?", default=Path("."),
                           help="the project directory, which holds pyproject.toml (default: .)")
    return parser


def _device_lib(args: argparse.Namespace) -> int:
    from oxide_build.cmake_commands import build_device_library, project_archs

    for source in args.sources:
        if not source.is_file():
            raise UsageError(f"oxide: error: {source}: no such file")
    archs = _archs(args.arch) if args.arch else project_archs(args.project)
    path = build_device_library(list(args.sources), args.output, archs, tuple(args.include_dirs), tuple(args.defines),
                                args.depfile)
    print(f"wrote {path} (LTO-IR for {', '.join(archs)})")
    return 0


def _build_kernels(args: argparse.Namespace) -> int:
    from oxide_build.cmake_commands import build_kernel_packages

    if not (args.project / "pyproject.toml").is_file():
        raise UsageError(f"oxide: error: {args.project}: no pyproject.toml")
    count = build_kernel_packages(args.project, tuple(args.package), args.output, tuple(args.link_inputs),
                                  tuple(args.include_dirs))
    if count == 0:
        raise UsageError(f"oxide: error: no kernel module in the packages {', '.join(args.package)} of {args.project}")
    return 0


def _archs(values: list[str] | None) -> tuple[str, ...]:
    from oxide_build.targets import DEFAULT_ARCHS, SUPPORTED_ARCHS

    if not values:
        return DEFAULT_ARCHS
    archs = [a.strip() for v in values for a in v.split(",") if a.strip()]
    for arch in archs:
        if arch not in SUPPORTED_ARCHS:
            raise UsageError(f"oxide: error: unsupported arch {arch!r}; supported archs: {', '.join(SUPPORTED_ARCHS)}")
    return tuple(dict.fromkeys(archs))


def _default_root(source: Path, module: str) -> Path:
    """The directory ``root`` with ``root/<module as a path>.py == source``; FILE's own
    directory when the module name does not match the file's place."""
    parts = module.split(".")
    directory = source.resolve().parent
    if source.name == "__init__.py":
        parts.append("__init__")
    if source.stem != parts[-1]:
        return directory
    for package in reversed(parts[:-1]):
        if directory.name != package:
            return source.resolve().parent
        directory = directory.parent
    return directory


def _project_options(source: Path) -> CompileOptions:
    """The compile options a build of the project that ``source`` belongs to would use
    (``[tool.oxide]``, ``OXIDE_ARCH``); oxide's defaults outside a project."""
    from oxide_build.config import CompileOptions, load_config
    from oxide_build.jit import project_dir_of, tree_root

    project = project_dir_of(tree_root(source.resolve()))
    if project is None:
        return CompileOptions()
    return load_config(project).compile_options(project)


def _compile(args: argparse.Namespace) -> int:
    from oxide_build.compile import CompileOptions, compile_module

    source: Path = args.file
    if not source.is_file():
        raise UsageError(f"oxide: error: {source}: no such file")
    emit: list[str] = list(dict.fromkeys(args.emit or ["cubin"]))
    module = args.module or source.stem
    base = CompileOptions() if args.no_project else _project_options(source)
    options = replace(
        base,
        archs=_archs(args.arch) if args.arch else base.archs,
        opt_level=base.opt_level if args.opt_level is None else args.opt_level,
        bounds_check=base.bounds_check and not args.no_bounds_check,
        link_cubins="cubin" in emit or "fatbin" in emit,
        backend=args.backend or base.backend,
        include_dirs=(*base.include_dirs, *args.include_dirs),
        defines=(*base.defines, *args.defines),
        link_inputs=(*base.link_inputs, *args.link_inputs),
        fatbin="fatbin" in emit,
        emit_ltoir="ltoir" in emit,
    )
    root = args.root or _default_root(source, module)
    out: Path = args.output
    written: list[Path] = []
    if "ir" in emit:
        from oxide_build.compile import build_ir
        from oxide_build.ir.printer import print_program

        _, frontend = build_ir(source, module, options, root=root, print_after=args.print_after)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{module}.ir"
        path.write_text(print_program(frontend.program), encoding="utf-8")
        written.append(path)
        if emit == ["ir"]:
            return _report(module, {k.name for k in frontend.kernels}, written)
    compiled = compile_module(source, module, options, root=root,
                              print_after=None if "ir" in emit else args.print_after)
    out.mkdir(parents=True, exist_ok=True)
    if "llvm" in emit:
        path = out / f"{module}.ll"
        path.write_text(compiled.llvm_ir, encoding="utf-8")
        written.append(path)
    if args.header is not None:
        from oxide_build.link.exports import write_export_header

        written.append(write_export_header(compiled, args.header))
    if "fatbin" in emit and compiled.fatbin is not None:
        path = out / f"{module}.fatbin"
        path.write_bytes(compiled.fatbin)
        written.append(path)
    for arch in options.archs:
        if "ltoir" in emit:
            path = out / f"{module}.{arch}.ltoir"
            path.write_bytes(compiled.ltoir[arch])
            written.append(path)
        if "ptx" in emit:
            path = out / f"{module}.{arch}.ptx"
            path.write_text(compiled.ptx[arch], encoding="utf-8")
            written.append(path)
        if "cubin" in emit and arch in compiled.cubins:
            path = out / f"{module}.{arch}.cubin"
            path.write_bytes(compiled.cubins[arch])
            written.append(path)
    return _report(module, {k.name for k in compiled.kernels}, written)


def _report(module: str, kernels: set[str], written: list[Path]) -> int:
    print(f"{module}: {', '.join(sorted(kernels)) or 'no kernels'}")
    for path in written:
        print(f"  wrote {path}")
    return 0


def _scan(args: argparse.Namespace) -> int:
    from oxide_build.scan import scan_root
    from oxide_build.scan import scan_tree

    directory: Path = args.dir
    if not directory.is_dir():
        raise UsageError(f"oxide: error: {directory}: no such directory")
    root = scan_root(directory)
    result = scan_tree(root, args.package)
    modules = sorted(result.modules, key=lambda m: m.name)
    for module in modules:
        try:
            shown = Path(module.path).resolve().relative_to(root.resolve())
        except ValueError:
            shown = Path(module.path)
        print(f"{module.name} ({shown.as_posix()}): {', '.join(module.kernels)}")
    count = sum(len(m.kernels) for m in modules)
    print(f"{count} kernel{'s' if count != 1 else ''} in {len(modules)} module{'s' if len(modules) != 1 else ''}")
    return 0


def _cache(args: argparse.Namespace) -> int:
    from oxide_build.link.cache import cache_info, clear_cache

    if args.action == "clear":
        removed = clear_cache()
        print(f"removed {removed} cache entr{'y' if removed == 1 else 'ies'}")
        return 0
    print(cache_info().render())
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from oxide_build.inspect import disassemble, inspect_module

    file_text, _, kernel = args.target.partition("::")
    source = Path(file_text)
    if not source.is_file():
        raise UsageError(f"oxide: error: no such file: {source}")
    (arch,) = _archs([args.arch])
    module = args.module or source.stem
    from oxide_build.jit import jit_compile_options, project_dir_of, tree_root

    options = jit_compile_options(project_dir_of(tree_root(source)), arch)  # the build's [tool.oxide]
    resources, cubin, names, checks, launch_checks, fast_sites = inspect_module(
        source, module, arch, options, root=args.root or _default_root(source, module))
    rows = [r for sym, r in sorted(resources.items()) if not kernel or names.get(sym) == kernel]
    if kernel and not rows:
        raise UsageError(f"oxide: error: no kernel {kernel!r} in {source} (kernels: {', '.join(sorted(set(names.values())))})")
    print(f"{'kernel':<28} {'regs':>5} {'shared':>8} {'local':>7} {'stack':>6} {'spill st':>9} {'spill ld':>9} {'bars':>5} "
          f"{'params':>6}  ({arch})")
    for r in rows:
        print(f"{r.symbol:<28} {r.registers:>5} {r.shared_bytes:>8} {r.local_bytes:>7} {r.stack_bytes:>6} "
              f"{r.spill_stores:>9} {r.spill_loads:>9} {r.barriers:>5} {r.param_bytes or '?':>6}")
    shown = {names.get(r.symbol) for r in rows}
    # a kernel's fast instances (passes/launch_instances.py), launched where their facts hold
    fast_of = {name: [sym for sym in sorted(fast_sites) if names.get(sym) == name] for name in shown}
    for title, sites in (("checks left in the device code", checks), ("checked at launch", launch_checks)):
        kept = [c for c in sites if c.kernel in shown]
        ids: dict[tuple[str, int, int, str, str, str], set[int]] = {}
        for c in kept:
            ids.setdefault((c.file, c.line, c.col, c.kind, c.what, c.kernel), set()).add(c.id)
        print(f"{title}: {len(ids)}")
        for (file, line, col, kind, what, kernel), site_ids in ids.items():
            absent = [sym for sym in fast_of.get(kernel, []) if not site_ids & fast_sites[sym]]
            where = kernel + (f"; not in {', '.join(absent)}" if absent and sites is checks else "")
            print(f"  {file}:{line}:{col}: {kind} {what}  [{where}]")
    if args.emit == "sass":
        print(disassemble(cubin))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "compile":
            return _compile(args)
        if args.command == "cache":
            return _cache(args)
        if args.command == "inspect":
            return _inspect(args)
        if args.command == "device-lib":
            return _device_lib(args)
        if args.command == "build-kernels":
            return _build_kernels(args)
        if args.command == "archs":
            from oxide_build.cmake_commands import project_archs

            print(";".join(project_archs(args.project)))
            return 0
        return _scan(args)
    except OxideError as exc:
        sys.stdout.flush()
        print(exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
