"""The index32 instance of kernels with tensor parameters (oxide_build/lower/index32.py): which
kernels get one, the manifest's name for it, and its code: tensor offsets in 32-bit arithmetic,
per-axis bounds checks still at full width, device functions that take a tensor called through
their index32 twin. The runtime's choice between the two is tested in tests/test_index32_runtime.py
and tests/test_index32_cpp.py; results on the GPU in tests/test_index32_gpu.py."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide_build.compile import CompileOptions, CompiledModule, compile_module

__all__: list[str] = []

SOURCE = '''
import oxide as ox
from oxide import DisjointSlice, DisjointTensor, Slice, Tensor, f32, i64, thread


def at(x: Tensor[f32, 2], r: i64, c: i64) -> f32:
    return x[r, c]


@ox.kernel
def t2(x: Tensor[f32, 2], out: DisjointTensor[f32, 2]) -> None:
    assert x.shape[0] == out.shape[0] and x.shape[1] == out.shape[1]
    row, col = thread.index_2d()
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = 2.0 * x[row, col] + at(x, row, col)


@ox.kernel
def gather(x: Tensor[f32, 2], rows: Slice[i64], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[rows[i], 1]  # rows[i] is not proven in bounds: checked, at full width


@ox.kernel
def flat(x: Slice[f32], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = x[i]
'''


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> CompiledModule:
    path = tmp_path_factory.mktemp("index32") / "idx.py"
    path.write_text(textwrap.dedent(SOURCE))
    return compile_module(path, "idx", CompileOptions(archs=("sm_90",)), root=path.parent)


def _define(llvm: str, name: str) -> str:
    match = re.search(r"^define [^\n]*@\"?" + re.escape(name) + r"\"?\((.*?)\n}\n", llvm, re.S | re.M)
    assert match is not None, f"no function {name}"
    return match.group(1)


def _entry(ptx: str, name: str) -> str:
    match = re.search(r"\.entry " + re.escape(name) + r"\((.*?)\n}\n", ptx, re.S)
    assert match is not None, f"no entry {name}"
    return match.group(1)


def test_kernels_with_a_tensor_parameter_get_an_index32_instance(compiled: CompiledModule) -> None:
    symbols = {k.name: (k.symbol, k.index32_symbol) for k in compiled.kernels}
    assert symbols == {"t2": ("t2", "t2__index32"), "gather": ("gather", "gather__index32"), "flat": ("flat", "")}
    ptx = compiled.ptx["sm_90"]
    entries = re.findall(r"\.visible \.entry (\w+)\(", ptx)
    # flat's x[i] and gather's rows[i] hold where their lengths are len(out) or more: each has a fast
    # instance (passes/launch_instances.py), and gather's has its own index32 instance
    assert sorted(entries) == ["flat", "flat__fast", "gather", "gather__fast", "gather__fast__index32",
                               "gather__index32", "t2", "t2__index32"]
    spec = next(k for k in compiled.kernels if k.name == "gather")
    assert (spec.fast_symbol, spec.fast_index32_symbol) == ("gather__fast", "gather__fast__index32")
    assert compiled.cubins["sm_90"]  # ptxas and nvJitLink take both instances


def test_index32_offsets_are_32_bit_arithmetic(compiled: CompiledModule) -> None:
    ptx = compiled.ptx["sm_90"]
    wide, narrow = _entry(ptx, "t2"), _entry(ptx, "t2__index32")
    # as written: i64 products of index and stride; index32: mad.lo.s32, one mul.wide.s32 to bytes
    assert "mul.lo.s64" in wide and "mul.wide.s32" not in wide
    assert "mul.lo.s64" not in narrow and "mul.wide.s32" in narrow
    assert len(re.findall(r"\bmad\.lo\.s32|\bmul\.lo\.s32", narrow)) >= 2
    # the same slots: index32 reads each tensor's shape and strides as their low 32 bits, and
    # not the last axis's stride, which the runtime gives it only as 1 (index32.h)
    assert re.findall(r"\.param \.(\w+) ", wide) == ["u64"] * 10
    assert re.findall(r"\.param \.(\w+) ", narrow) == ["u64", "u32", "u32", "u32"] * 2


def test_index32_keeps_full_width_bounds_checks(compiled: CompiledModule) -> None:
    llvm = compiled.llvm_ir
    for name in ("gather", "gather__index32"):
        body = _define(llvm, name)
        assert "__oxide_fail" in body  # rows[i] against x.shape[0]
        assert re.search(r"icmp (uge|ult|ugt|ule) i64", body)


def test_device_functions_taking_a_tensor_have_an_index32_twin(compiled: CompiledModule) -> None:
    llvm = compiled.llvm_ir
    twins = re.findall(r'define internal float @"(__ox_idx_at[^"]*__index32)"\(', llvm)
    assert len(twins) == 1
    narrow, wide = _define(llvm, "t2__index32"), _define(llvm, "t2")
    assert twins[0] in narrow and twins[0] not in wide
    assert twins[0].removesuffix("__index32") in wide


def test_the_nvvm_backend_compiles_both_instances(tmp_path: Path) -> None:
    path = tmp_path / "idx.py"
    path.write_text(textwrap.dedent(SOURCE))
    module = compile_module(path, "idx", CompileOptions(archs=("sm_90",), backend="nvvm", link_cubins=False),
                            root=tmp_path)
    ptx = module.ptx["sm_90"]
    assert "mul.lo.s64" not in _entry(ptx, "t2__index32") and "mul.lo.s64" in _entry(ptx, "t2")


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_lineinfo_gives_each_instance_its_own_subprogram(tmp_path: Path, backend: str) -> None:
    """With line info both instances have a DISubprogram of their own (one shared by both broke
    libNVVM's verifier: "DISubprogram attached to more than one function")."""
    path = tmp_path / "idx.py"
    path.write_text(textwrap.dedent(SOURCE))
    module = compile_module(path, "idx", CompileOptions(archs=("sm_90",), backend=backend, lineinfo=True,
                                                        link_cubins=False), root=tmp_path)
    assert ".loc" in _entry(module.ptx["sm_90"], "t2__index32") and ".loc" in _entry(module.ptx["sm_90"], "t2")


def test_the_gpu_tests_package_compiles_with_32_bit_shape_and_stride_parameters() -> None:
    package = Path(__file__).parent / "packages" / "index32k"
    module = compile_module(package / "idx32k.py", "idx32k", CompileOptions(archs=("sm_90",), link_cubins=False),
                            root=package)
    assert [(k.symbol, k.index32_symbol) for k in module.kernels] == [("shifted", "shifted__index32"),
                                                                      ("mixed", "mixed__index32")]
    narrow = _entry(module.ptx["sm_90"], "shifted__index32")
    assert "ld.param.s32" in narrow or "cvt.s64.s32" in narrow  # x.strides[0] etc. sign-extended as values


def test_a_kernel_whose_instance_name_is_taken_has_none(tmp_path: Path) -> None:
    path = tmp_path / "taken.py"
    path.write_text(textwrap.dedent('''
        import oxide as ox
        from oxide import DisjointTensor, Tensor, f32, thread


        @ox.kernel
        def k(x: Tensor[f32, 1], out: DisjointTensor[f32, 1]) -> None:
            i = thread.index_1d()
            if i < out.shape[0] and i < x.shape[0]:
                out[i] = x[i]


        @ox.kernel
        def k__index32(x: Tensor[f32, 1], out: DisjointTensor[f32, 1]) -> None:
            i = thread.index_1d()
            if i < out.shape[0] and i < x.shape[0]:
                out[i] = 2.0 * x[i]
    '''))
    module = compile_module(path, "taken", CompileOptions(archs=("sm_90",), link_cubins=False), root=tmp_path)
    assert {k.symbol: k.index32_symbol for k in module.kernels} == {"k": "", "k__index32": "k__index32__index32"}
    entries = re.findall(r"\.visible \.entry (\w+)\(", module.ptx["sm_90"])
    assert sorted(entries) == ["k", "k__index32", "k__index32__index32"]


def test_oxide_inspect_shows_both_instances() -> None:
    from oxide_build.inspect import inspect_module

    package = Path(__file__).parent / "packages" / "index32k"
    resources, _, names, *_ = inspect_module(package / "idx32k.py", "idx32k", "sm_90", root=package)
    assert names == {"shifted": "shifted", "shifted__index32": "shifted", "mixed": "mixed", "mixed__index32": "mixed"}
    assert set(resources) == set(names)
    assert 0 < resources["shifted__index32"].registers <= resources["shifted"].registers
    # shape and strides of two 2-D tensors: 8-byte slots as written, 4-byte in the index32 instance,
    # which does not read the last axis's stride (1): two pointers, 3 + 3 words, the second
    # pointer aligned to 8
    assert (resources["shifted"].param_bytes, resources["shifted__index32"].param_bytes) == (80, 44)


def test_index32_false_keeps_a_single_instance(tmp_path: Path) -> None:
    src = tmp_path / "tables.py"
    src.write_text(textwrap.dedent("""
        import oxide as ox
        from oxide import MutSlice, Tensor, f32, thread

        @ox.kernel(index32=False)
        def scaled(w: Tensor[f32, 2], x: MutSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < w.shape[0]:
                with ox.unsafe():
                    x[i] = x[i] * w[i, 0]

        @ox.kernel
        def twinned(w: Tensor[f32, 2], x: MutSlice[f32]) -> None:
            i = thread.index_1d()
            if i < len(x) and i < w.shape[0]:
                with ox.unsafe():
                    x[i] = x[i] * w[i, 0]
    """))
    module = compile_module(src, "tables", CompileOptions(archs=("sm_90",), link_cubins=False))
    ptx = module.ptx["sm_90"]
    specs = {k.name: k for k in module.kernels}
    assert specs["scaled"].index32_symbol == "" and ".entry scaled__index32" not in ptx
    assert specs["twinned"].index32_symbol == "twinned__index32" and ".entry twinned__index32" in ptx
