"""Source problems that used to reach users as tracebacks (issues #12, #13): every one is a
located ``CompileError``. Source encodings follow Python (UTF-8, a BOM, or a PEP 263
declaration); names that would clash in the compiled module are refused where they are
defined; a failure inside lowering names the statement it met."""
from __future__ import annotations

from pathlib import Path

import pytest

from oxide import CompileError
from oxide_build.compile import CompileOptions, compile_module
from oxide_build.scan import scan_tree

KERNEL = (
    "@ox.kernel\ndef {name}(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n"
    "    i = thread.index_1d()\n    if i < len(out) and i < len(x):\n        out[i] = x[i]{extra}\n"
)
HEADER = "import oxide as ox\nfrom oxide import Slice, DisjointSlice, f32, f64, thread\n"
OPTIONS = CompileOptions(archs=("sm_90",), link_cubins=False)


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def compile_error(path: Path, module: str | None = None, root: Path | None = None) -> str:
    with pytest.raises(CompileError) as info:
        compile_module(path, module or path.stem, OPTIONS, root=root)
    return str(info.value)


def test_latin1_source_with_a_pep263_declaration_compiles(tmp_path: Path) -> None:
    src = write(tmp_path / "kern.py", b"# -*- coding: latin-1 -*-\n" + HEADER.encode()
                + "# caf\xe9: a comment in latin-1\n".encode("latin-1") + KERNEL.format(name="k", extra="").encode())
    compiled = compile_module(src, "kern", OPTIONS)
    assert [k.name for k in compiled.kernels] == ["k"]
    assert [m.name for m in scan_tree(tmp_path, ["kern"]).modules] == ["kern"]


def test_utf8_source_with_a_bom_compiles(tmp_path: Path) -> None:
    src = write(tmp_path / "kern.py", b"\xef\xbb\xbf" + HEADER.encode() + "# café\n".encode() + KERNEL.format(name="k", extra="").encode())
    assert [k.name for k in compile_module(src, "kern", OPTIONS).kernels] == ["k"]


def test_non_utf8_source_is_a_located_error(tmp_path: Path) -> None:
    src = write(tmp_path / "kern.py", HEADER.encode() + "# caf\xe9\n".encode("latin-1") + KERNEL.format(name="k", extra="").encode())
    text = compile_error(src)
    assert "kern.py:3:6: error: the source is not valid utf-8: byte 0xe9 cannot be decoded" in text, text
    assert "PEP 263" in text
    with pytest.raises(CompileError, match="not valid utf-8"):
        scan_tree(tmp_path, ["kern"])


def test_unknown_encoding_declaration_is_a_located_error(tmp_path: Path) -> None:
    src = write(tmp_path / "kern.py", "# -*- coding: no-such-codec -*-\n" + HEADER + KERNEL.format(name="k", extra=""))
    assert "kern.py:1:1: error: cannot read the source: unknown encoding: no-such-codec" in compile_error(src)


def test_two_kernels_of_one_name_are_a_located_error(tmp_path: Path) -> None:
    """llvmlite raised DuplicatedNameError."""
    src = write(tmp_path / "kern.py", HEADER + "\n" + KERNEL.format(name="k", extra="") + "\n"
                + KERNEL.format(name="k", extra=" * 2.0"))
    text = compile_error(src)
    assert "kern.py:11:1: error: 'k' is defined twice in this module (first at line 5)" in text, text


def test_kernel_clashing_with_a_specialization_is_a_located_error(tmp_path: Path) -> None:
    src = write(tmp_path / "kern.py", HEADER + 'T = ox.TypeVar("T", f32, f64)\n'
                + KERNEL.format(name="k", extra="").replace("Slice[f32]", "Slice[T]") + "\n" + KERNEL.format(name="k_f32", extra=""))
    text = compile_error(src)
    assert "kern.py:11:1: error: 'k_f32' compiles to the symbol 'k_f32', which kern.py:5 also defines" in text, text


def test_extern_clashing_with_a_kernel_is_a_located_error(tmp_path: Path) -> None:
    src = write(tmp_path / "kern.py", HEADER + '\n@ox.extern("k2", sources=["x.cu"])\ndef helper(x: f32) -> f32: ...\n\n'
                + KERNEL.format(name="k2", extra="").replace("out[i] = x[i]", "out[i] = helper(x[i])"))
    text = compile_error(src)
    assert "compiles to the symbol 'k2', which kern.py:" in text, text


def test_device_functions_of_one_name_in_two_modules_compile(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "__init__.py", "")
    for name, factor in (("a", "1.0"), ("b", "2.0")):
        write(tmp_path / "pkg" / f"{name}.py", f"from oxide import f32\n\ndef g(x: f32) -> f32:\n    return x * {factor}\n")
    main = write(tmp_path / "pkg" / "main.py", HEADER + "from pkg import a, b\n\n"
                 + KERNEL.format(name="k", extra="").replace("out[i] = x[i]", "out[i] = a.g(x[i]) + b.g(x[i])"))
    compiled = compile_module(main, "pkg.main", OPTIONS, root=tmp_path)
    assert "__ox_pkg_a_g" in compiled.llvm_ir and "__ox_pkg_b_g" in compiled.llvm_ir


def test_reserved_symbol_is_a_located_error(tmp_path: Path) -> None:
    """A kernel named like a libdevice function clashed with its declaration."""
    src = write(tmp_path / "kern.py", HEADER + "\n" + KERNEL.format(name="__nv_expf", extra=""))
    assert "kern.py:5:1: error: the name '__nv_expf' is reserved" in compile_error(src)


def test_failure_inside_lowering_is_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide_build.lower import llvm

    def broken(self: object, e: object) -> None:
        raise TypeError("cannot lower this")

    monkeypatch.setattr(llvm.FunctionLowering, "binop", broken)
    src = write(tmp_path / "kern.py", HEADER + "\n" + KERNEL.format(name="k", extra=" + 1.0"))
    text = compile_error(src)
    assert "kern.py:8:9: error: internal compiler error while lowering k(): TypeError: cannot lower this" in text, text


def test_caret_counts_characters_on_a_non_ascii_line(tmp_path: Path) -> None:
    """ast's col_offset counts UTF-8 bytes: the caret stood right of the error by one column
    per extra byte before it (here in a latin-1 file, decoded by its declaration)."""
    src = write(tmp_path / "kern.py", b"# -*- coding: latin-1 -*-\n" + HEADER.encode() + KERNEL.format(name="k", extra="").replace(
        "out[i] = x[i]", "\xe9t\xe9 = 1.0; out[i] = x[i] * nope").encode("latin-1"))
    text = compile_error(src)
    assert "kern.py:8:36: error: unknown name 'nope'" in text, text
    assert text.splitlines()[2].index("^") == text.splitlines()[1].index("nope"), text
