"""Scanning: kernels and device functions are found from the source alone."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from oxide_build.compile import CompileOptions, compile_module
from oxide_build.scan import PackageNotFound, scan_tree

PROJECT = Path(__file__).parent / "packages" / "scanproj"


def test_scan_finds_kernels_without_importing() -> None:
    result = scan_tree(PROJECT)
    assert [(m.name, m.kernels) for m in result.modules] == [("mylib.sub.kernels", ["k_square", "k_copy"])]
    # every module of the fixture raises on import: scanning must not have imported any
    assert not any(name.startswith("mylib") for name in sys.modules)


def test_scan_limited_to_packages() -> None:
    assert scan_tree(PROJECT, packages=["mylib"]).modules[0].name == "mylib.sub.kernels"
    # a package that is not there was a wheel without kernels (issue 31); now it is named
    with pytest.raises(PackageNotFound, match="'nothing_here' is neither a package directory nor a module under .*; packages there: mylib"):
        scan_tree(PROJECT, packages=["nothing_here"])


def test_device_functions_found_transitively_across_modules() -> None:
    src = PROJECT / "mylib" / "sub" / "kernels.py"
    compiled = compile_module(src, "mylib.sub.kernels", CompileOptions(archs=("sm_90",), link_cubins=False), root=PROJECT)
    ir_text = compiled.llvm_ir
    # scale (same module) calls square (another module, imported two ways)
    assert "__ox_mylib_sub_kernels_scale__f32" in ir_text
    assert "__ox_mylib_helpers_square__f32" in ir_text
    assert "unused" not in ir_text and "not_a_kernel" not in ir_text
    assert [k.name for k in compiled.kernels] == ["k_square", "k_copy"]
    assert not any(name.startswith("mylib") for name in sys.modules)


def test_bounds_check_option_and_guard_elimination() -> None:
    src = PROJECT / "mylib" / "sub" / "kernels.py"
    compiled = compile_module(src, "mylib.sub.kernels", CompileOptions(archs=("sm_90",), link_cubins=False), root=PROJECT)
    # k_square reads x[i] unproven (guard is on out): one check site; out[i] is proven by the guard;
    # k_copy has bounds_check=False: no site
    sites = [(s.kernel, s.what) for s in compiled.error_sites if s.kind == "bounds"]
    assert sites == [("k_square", "x[i]")]
    assert ".visible .entry k_copy(" in compiled.ptx["sm_90"]


def test_generic_kernel_one_instance_per_constraint(tmp_path: Path) -> None:
    src = tmp_path / "gen.py"
    src.write_text(
        "import oxide as ox\n"
        "from oxide import Slice, DisjointSlice, f32, f64, i32, thread\n"
        "T = ox.TypeVar('T', f32, f64, i32)\n"
        "@ox.kernel\n"
        "def copy(x: Slice[T], out: DisjointSlice[T]) -> None:\n"
        "    i = thread.index_1d()\n"
        "    if i < len(x) and i < len(out):\n"
        "        out[i] = x[i]\n"
    )
    compiled = compile_module(src, "gen", CompileOptions(archs=("sm_80",), link_cubins=False))
    assert [(k.symbol, k.specialization) for k in compiled.kernels] == [
        ("copy_f32", {"T": "f32"}), ("copy_f64", {"T": "f64"}), ("copy_i32", {"T": "i32"}),
    ]
    # both reads and the write are proven by the guard; what is left is each instance's launch
    # shape (its DisjointSlice write at index_1d() needs a 1-D launch)
    assert [s.kind for s in compiled.error_sites] == ["assert"] * 3
    assert [p.dtype for p in compiled.kernels[1].params] == ["f64", "f64"]
