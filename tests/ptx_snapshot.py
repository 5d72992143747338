"""A snapshot of what the compiler makes of every example and fixture package, to hold a
refactoring of the compiler to "byte-identical output".

    python tests/ptx_snapshot.py write DIR     # before the change (e.g. on main)
    python tests/ptx_snapshot.py compare DIR   # after: exit status 1 and a list of what differs

For every module under examples/ and tests/packages/ that has a kernel or a device function,
it records the PTX of each arch (NVPTX backend, bounds checks on and off; libNVVM for sm_90),
the kernel specs and the error sites (what goes into the manifest), and the text of a
CompileError for the modules that must not compile. The LLVM IR is recorded too; a difference
there is reported but does not fail (the PTX is what ships).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oxide.errors import OxideError  # noqa: E402
from oxide_build.compile import CompileOptions, compile_module  # noqa: E402

__all__ = ["snapshot_modules", "modules_of", "write_snapshot", "compare_snapshot"]

VARIANTS: dict[str, CompileOptions] = {
    "checked": CompileOptions(archs=("sm_80", "sm_90"), link_cubins=False, cache=False),
    "unchecked": CompileOptions(archs=("sm_90",), link_cubins=False, cache=False, bounds_check=False),
    "nvvm": CompileOptions(archs=("sm_90",), link_cubins=False, cache=False, backend="nvvm"),
}


def snapshot_modules() -> list[tuple[Path, str, Path]]:
    """(source, dotted module name, import root) of every module that defines GPU code."""
    return modules_of(sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "tests" / "packages").rglob("*.py")))


def modules_of(files: list[Path]) -> list[tuple[Path, str, Path]]:
    """(source, dotted module name, import root) of each of ``files`` that may define GPU code."""
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        if "@kernel" not in text and "@device" not in text and "ox.kernel" not in text and "oxide" not in text:
            continue
        parts = [path.stem] if path.name != "__init__.py" else []
        root = path.parent
        while (root / "__init__.py").is_file():
            parts.insert(0, root.name)
            root = root.parent
        if not parts:
            continue
        found.append((path, ".".join(parts), root))
    return found


def _record(path: Path, module: str, root: Path, variant: str, options: CompileOptions) -> dict[str, str]:
    key = f"{path.relative_to(ROOT).as_posix()}@{variant}"
    try:
        compiled = compile_module(path, module, options, root=root)
    except OxideError as exc:
        # the checkout's own path out, so that two checkouts compare
        return {f"{key}.error": f"{type(exc).__name__}: {exc}\n".replace(str(ROOT), "<root>")}
    out = {f"{key}.{arch}.ptx": text for arch, text in compiled.ptx.items()}
    out[f"{key}.ll"] = compiled.llvm_ir
    out[f"{key}.kernels"] = "".join(f"{k!r}\n" for k in compiled.kernels)
    out[f"{key}.error_sites"] = "".join(f"{s!r}\n" for s in compiled.error_sites)
    return out


def take_snapshot() -> dict[str, str]:
    snapshot: dict[str, str] = {}
    for path, module, root in snapshot_modules():
        for variant, options in VARIANTS.items():
            started = time.perf_counter()
            snapshot.update(_record(path, module, root, variant, options))
            print(f"{time.perf_counter() - started:7.3f}s {variant:9} {path.relative_to(ROOT)}", file=sys.stderr)
    return snapshot


def write_snapshot(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in take_snapshot().items():
        (directory / name.replace("/", "__")).write_text(text, encoding="utf-8")


def compare_snapshot(directory: Path) -> int:
    now = {name.replace("/", "__"): text for name, text in take_snapshot().items()}
    before = {p.name: p.read_text(encoding="utf-8") for p in directory.iterdir()}
    failures, notes = [], []
    for name in sorted(set(now) | set(before)):
        if now.get(name) == before.get(name):
            continue
        (notes if name.endswith(".ll") else failures).append(
            f"{name}: {'missing now' if name not in now else 'new' if name not in before else 'differs'}")
    for line in notes:
        print(f"note: LLVM IR {line}")
    for line in failures:
        print(f"DIFFERS: {line}")
    print(f"{len(now)} files compared: {len(failures)} differ, {len(notes)} LLVM IR notes")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "compare"):
        raise SystemExit(__doc__)
    if sys.argv[1] == "write":
        write_snapshot(Path(sys.argv[2]))
    else:
        raise SystemExit(compare_snapshot(Path(sys.argv[2])))
