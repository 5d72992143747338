"""The sm_90a tensor-core intrinsics (oxide_build/intrinsics/wgmma.py, fence.proxy_async,
swizzled shared arrays) on the CPU: the PTX each backend makes, the descriptors' constant bits,
the arch each needs (a located error naming the intrinsic and the arch), every misuse a located
error, the JIT's switch to sm_90a, the 8-bit (e4m3/e5m2) and tf32 (f32) operands, and the SASS of
examples/gemm/wgmma_gemm.py, wgmma_gemm_fp8.py and wgmma_gemm_tf32.py (HGMMA/QGMMA, no local memory) where cuobjdump is installed. The GPU results are in tests/test_wgmma_gpu.py."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError, ToolchainError
from oxide_build.compile import ArchRequirementError, CompileOptions, compile_module
from oxide_build.intrinsics import INTRINSICS
from oxide_build.intrinsics.wgmma import accumulator_shape, matrix_descriptor_bits
from oxide_build.passes.arch_requirements import arch_satisfies

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gemm" / "wgmma_gemm.py"
TILES = ROOT / "tests" / "packages" / "wgmmakernels" / "wgk.py"
HEADER = "import oxide as ox\nfrom oxide import Slice, MutSlice, f16, f32, i32, thread, block\n"
SM90A = CompileOptions(archs=("sm_90a",), link_cubins=False)

def first_entry(ptx: str) -> str:
    """The PTX of the module's first entry point: the kernel as written (a kernel split by the
    launch-instances pass has its ``__fast`` instance after it, with the same instructions but its
    checks')."""
    entries = re.split(r"(?=\.visible \.entry )", ptx)
    return entries[1] if len(entries) > 1 else ptx



def compile_source(tmp_path: Path, body: str, options: CompileOptions = SM90A) -> dict[str, str]:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return compile_module(src, "kern", options).ptx


TILE = """
@ox.kernel
def tile(a: Slice[f16], c: MutSlice[f32]) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    sb = ox.shared.array(8192, f16, swizzle=128)
    for i in range(thread.idx.x, 4096, 128):
        sa[i] = a[i]
        sb[i] = a[i]
    ox.fence.proxy_async()
    block.sync()
    acc = ox.wgmma.accumulator("m64n128k16")
    ox.wgmma.fence()
    ox.wgmma.mma(acc, sa, 0, sb, 16, scale_d=False)
    ox.wgmma.mma(acc, sa, 16, sb, 1024, b_major="mn", b_rows=64)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, acc)
    with ox.unsafe():
        c[thread.idx.x] = acc[0] + acc[63]
"""


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_ptx_of_each_intrinsic(tmp_path: Path, backend: str) -> None:
    ptx = compile_source(tmp_path, TILE + """
@ox.kernel(launch_bounds=384, max_registers=168)
def regs(c: MutSlice[f32]) -> None:
    if ox.warpgroup.id() == 0:
        ox.warpgroup.setmaxnreg_dec(40)
    else:
        ox.warpgroup.setmaxnreg_inc(232)
""", CompileOptions(archs=("sm_90a",), backend=backend))["sm_90a"]
    flat = " ".join(ptx.split())
    assert ".target sm_90a" in flat
    assert ".shared .align 1024" in flat  # swizzled arrays: the swizzle's period
    for text in ("wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned",
                 "fence.proxy.async.shared::cta;", "setmaxnreg.dec.sync.aligned.u32 40;",
                 "setmaxnreg.inc.sync.aligned.u32 232;", "shfl.sync.idx.b32"):
        assert text in flat, text
    mmas = [line for line in first_entry(ptx).splitlines() if "wgmma.mma_async" in line]
    assert len(mmas) == 2
    assert all(line.startswith("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {") for line in mmas)
    assert mmas[0].count(",") == 64 + 6 and mmas[0].endswith("p, 1, 1, 0, 0;")  # 64 registers; K-major B
    assert mmas[1].endswith("p, 1, 1, 0, 1;")  # N-major B: imm-trans-b


def test_descriptor_bits() -> None:
    """CUTLASS's make_gmma_desc: K-major SW128 has LBO 1 (unused), SBO 1024 bytes (8 rows of
    128); N-major SW128 has SBO 1024 (8 rows of K) and LBO the stride between 64-wide chunks."""
    assert matrix_descriptor_bits(128, 2, False, 0) == (1 << 16) | (64 << 32) | (1 << 62)
    assert matrix_descriptor_bits(128, 2, True, 64) == ((64 * 128 >> 4) << 16) | (64 << 32) | (1 << 62)
    assert matrix_descriptor_bits(64, 2, False, 0) == (1 << 16) | (32 << 32) | (2 << 62)
    assert matrix_descriptor_bits(32, 2, True, 16) == ((16 * 32 >> 4) << 16) | (16 << 32) | (3 << 62)
    assert accumulator_shape("wgmma.c:m64n256k16") == (64, 256, 16) and accumulator_shape("c:m16n8k16") is None


def test_each_entry_records_its_arch() -> None:
    for name in ("wgmma.mma", "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group", "warpgroup.setmaxnreg_inc",
                 "warpgroup.setmaxnreg_dec"):
        assert INTRINSICS[name].min_arch == "sm_90a", name
    assert INTRINSICS["fence.proxy_async"].min_arch == "sm_90"
    assert INTRINSICS["warpgroup.id"].min_arch is None and INTRINSICS["warpgroup.id"].thread_dependent
    assert arch_satisfies("sm_90a", "sm_90a") and not arch_satisfies("sm_90", "sm_90a")
    assert not arch_satisfies("sm_100a", "sm_90a") and arch_satisfies("sm_100", "sm_90") and not arch_satisfies("sm_80", "sm_90")


@pytest.mark.parametrize("arch", ["sm_90", "sm_80", "sm_100a"])
def test_a_wgmma_kernel_for_another_arch_is_a_located_error(tmp_path: Path, arch: str) -> None:
    with pytest.raises(ArchRequirementError) as info:
        compile_source(tmp_path, TILE, CompileOptions(archs=("sm_90a", arch), link_cubins=False))
    message = str(info.value)
    if arch == "sm_80":  # the fence comes first in the source
        assert "ox.fence.proxy_async needs sm_90 or newer; this module is built for sm_80" in message
        assert "kern.py:11:" in message
    else:
        assert "ox.wgmma.fence needs sm_90a (that arch only" in message and f"built for {arch}" in message
        assert "kern.py:14:" in message and "ox.wgmma.fence()" in message
    assert 'arch = ["' in message
    assert info.value.required in ("sm_90", "sm_90a")


def test_fence_proxy_async_compiles_for_sm_90_and_newer(tmp_path: Path) -> None:
    ptx = compile_source(tmp_path, """
@ox.kernel
def k(c: MutSlice[f32]) -> None:
    ox.fence.proxy_async()
""", CompileOptions(archs=("sm_90", "sm_100"), link_cubins=False))
    assert all("fence.proxy.async.shared::cta" in text for text in ptx.values())


MISUSES = [
    ("acc = ox.wgmma.accumulator('m64n250k16')", "unknown wgmma shape 'm64n250k16'"),
    ("acc = ox.wgmma.accumulator('m64n128k16', f16)", "a wgmma accumulator holds f32"),
    ("ox.wgmma.mma(frag, sa, 0, sb, 0)", "acc must be a wgmma accumulator"),
    ("ox.wgmma.mma(acc, plain, 0, sb, 0)", "is a shared array without a swizzle"),
    ("ox.wgmma.mma(acc, si, 0, sb, 0)", "wgmma.mma multiplies f16, bf16, f8e4m3, f8e5m2 or f32 (as tf32), A holds i32"),
    ("ox.wgmma.mma(acc, sf, 0, sb, 0)", "A holds f32 but B holds f16"),
    ("ox.wgmma.mma(acc, loc, 0, sb, 0)", "wgmma.mma reads A from a shared array, got local array"),
    ("ox.wgmma.mma(acc, sa, 0.5, sb, 0)", "the element offset of A must be an integer"),
    ("ox.wgmma.mma(acc, sa, 0, sb)", "takes 5 arguments, got 4"),
    ("ox.wgmma.mma(acc, sa, 0, sb, 0, b_major='mn')", "needs b_rows="),
    ("ox.wgmma.mma(acc, sa, 0, sb, 0, b_major='row')", "b_major= is 'k'"),
    ("ox.wgmma.mma(acc, sa, 0, sb, 0, b_rows=64)", "b_rows= describes an N-major B"),
    ("ox.wgmma.mma(acc, sa, 0, sb, 0, b_major='mn', b_rows=60)", "b_rows= must be a positive compile-time multiple of 8"),
    ("ox.wgmma.mma(acc, sa, 0, sb, 0, scale_a=1)", "wgmma.mma() has no keyword 'scale_a'"),
    ("ox.wgmma.mma(acc, sa, 0, sb, 0, scale_d=1.0)", "scale_d= is a bool"),
    ("ox.wgmma.wait_group(n)", "wgmma.wait_group takes a compile-time count of groups from 0 to 7"),
    ("ox.wgmma.wait_group(0, sa)", "each argument after the count must be a wgmma accumulator"),
    ("ox.wgmma.fence(acc)", "takes"),
    ("ox.warpgroup.setmaxnreg_inc(250)", "a multiple of 8 from 24 to 256"),
    ("ox.warpgroup.setmaxnreg_dec(n)", "a multiple of 8 from 24 to 256"),
    ("bad = ox.shared.array(4096, f16, swizzle=100)", "swizzle= is 32, 64 or 128"),
    ("bad = ox.shared.array(40, f16, swizzle=128)", "holds whole rows of 128 bytes"),
    ("bad = ox.local.array(64, f16, swizzle=128)", "has no keyword argument 'swizzle'"),
]


@pytest.mark.parametrize("line, message", MISUSES, ids=[m[0] for m in MISUSES])
def test_misuse_is_a_located_error(tmp_path: Path, line: str, message: str) -> None:
    body = f"""
@ox.kernel
def k(c: MutSlice[f32], n: i32) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    sb = ox.shared.array(4096, f16, swizzle=128)
    sf = ox.shared.array(4096, f32, swizzle=128)
    si = ox.shared.array(4096, i32, swizzle=128)
    plain = ox.shared.array(4096, f16)
    loc = ox.local.array(64, f16)
    frag = ox.mma.fragment_c("m16n8k16")
    acc = ox.wgmma.accumulator("m64n64k16")
    {line}
"""
    with pytest.raises(CompileError) as info:
        compile_source(tmp_path, body)
    assert message in str(info.value)
    assert "kern.py:14:" in str(info.value)  # the line of the misuse


TILE_FP8 = """
from oxide import f8e4m3, f8e5m2


@ox.kernel
def tile8(a: Slice[f8e4m3], b: Slice[f8e5m2], c: MutSlice[f32]) -> None:
    sa = ox.shared.array(8192, f8e4m3, swizzle=128)
    sb = ox.shared.array(16384, f8e4m3, swizzle=128)
    s5 = ox.shared.array(16384, f8e5m2, swizzle=128)
    for i in range(thread.idx.x, 8192, 128):
        sa[i] = a[i]
        sb[i] = a[i]
        s5[i] = b[i]
    ox.fence.proxy_async()
    block.sync()
    acc = ox.wgmma.accumulator("m64n128k32")
    ox.wgmma.fence()
    ox.wgmma.mma(acc, sa, 0, sb, 0, scale_d=False)
    ox.wgmma.mma(acc, sa, 32, sb, 32)
    ox.wgmma.mma(acc, sa, 64, s5, 64)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, acc)
    with ox.unsafe():
        c[thread.idx.x] = acc[0] + acc[63]
"""


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_ptx_of_an_8_bit_wgmma(tmp_path: Path, backend: str) -> None:
    """8-bit operands: shape k32, PTX types .e4m3/.e5m2 (A and B may differ), and no
    imm-trans-a/imm-trans-b operands (PTX has none for 8-bit types: both are K-major)."""
    ptx = compile_source(tmp_path, TILE_FP8, CompileOptions(archs=("sm_90a",), backend=backend))["sm_90a"]
    mmas = [line for line in first_entry(ptx).splitlines() if "wgmma.mma_async" in line]
    assert len(mmas) == 3
    assert all(line.startswith("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {") for line in mmas[:2])
    assert mmas[2].startswith("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2 {")
    # 64 registers (63 commas), then a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b
    assert all(line.count(",") == 63 + 5 and line.endswith("p, 1, 1;") for line in mmas)


FP8_MISUSES = [
    ("ox.wgmma.mma(acc8, s8, 0, s8, 0, b_major='mn', b_rows=64)",
     "wgmma with 8-bit operands (f8e4m3) reads both A and B K-major: PTX has no transpose for them"),
    ("ox.wgmma.mma(acc8, s8, 0, s8, 0, b_major='mn')", "reads both A and B K-major"),
    ("ox.wgmma.mma(acc8, s8, 0, sa, 0)", "A holds f8e4m3 but B holds f16"),
    ("ox.wgmma.mma(acc8, sa, 0, s8, 0)", "A holds f16 but B holds f8e4m3"),
    ("ox.wgmma.mma(acc, s8, 0, s8, 0)", "the accumulator's shape m64n64k16 does not fit f8e4m3 inputs"),
    ("ox.wgmma.mma(acc8, sa, 0, sa, 0)", "the accumulator's shape m64n64k32 does not fit f16 inputs"),
    ("bad = ox.wgmma.accumulator('m64n64k4')", "unknown wgmma shape 'm64n64k4'"),
]


@pytest.mark.parametrize("line, message", FP8_MISUSES, ids=[m[0] for m in FP8_MISUSES])
def test_8_bit_misuse_is_a_located_error(tmp_path: Path, line: str, message: str) -> None:
    body = f"""
from oxide import f8e4m3


@ox.kernel
def k(c: MutSlice[f32], n: i32) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    s8 = ox.shared.array(8192, f8e4m3, swizzle=128)
    acc = ox.wgmma.accumulator("m64n64k16")
    acc8 = ox.wgmma.accumulator("m64n64k32")
    {line}
"""
    with pytest.raises(CompileError) as info:
        compile_source(tmp_path, body)
    assert message in str(info.value)
    assert "kern.py:13:" in str(info.value)  # the line of the misuse


TILE_TF32 = """
@ox.kernel
def tile32(a: Slice[f32], c: MutSlice[f32]) -> None:
    sa = ox.shared.array(2048, f32, swizzle=128)
    sb = ox.shared.array(4096, f32, swizzle=128)
    for i in range(thread.idx.x, 2048, 128):
        sa[i] = a[i]
        sb[i] = a[i]
        sb[i + 2048] = a[i]
    ox.fence.proxy_async()
    block.sync()
    acc = ox.wgmma.accumulator("m64n128k8")
    ox.wgmma.fence()
    ox.wgmma.mma(acc, sa, 0, sb, 0, scale_d=False)
    ox.wgmma.mma(acc, sa, 8, sb, 8)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, acc)
    with ox.unsafe():
        c[thread.idx.x] = acc[0] + acc[63]
"""


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_ptx_of_a_tf32_wgmma(tmp_path: Path, backend: str) -> None:
    """f32 operands are read as tf32: shape k8, PTX types .tf32.tf32, no imm-trans operands (PTX
    has none for tf32: both are K-major); ptxas assembles the module for sm_90a."""
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(TILE_TF32))
    compiled = compile_module(src, "kern", CompileOptions(archs=("sm_90a",), backend=backend))
    mmas = [line for line in first_entry(compiled.ptx["sm_90a"]).splitlines() if "wgmma.mma_async" in line]
    assert len(mmas) == 2
    assert all(line.startswith("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {") for line in mmas)
    # 64 registers (63 commas), then a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b
    assert all(line.count(",") == 63 + 5 and line.endswith("p, 1, 1;") for line in mmas)
    assert set(compiled.cubins) == {"sm_90a"} and compiled.cubins["sm_90a"]  # ptxas took it


def test_tf32_descriptors_step_32_bytes_per_k8(tmp_path: Path) -> None:
    """The K step of 8 f32 elements moves the descriptor's start address by 32 bytes (2 in its
    16-byte units), as 16 bf16 elements do: the second mma's start is the first's plus 2."""
    ptx = compile_source(tmp_path, TILE_TF32)["sm_90a"]
    flat = " ".join(ptx.split())
    assert "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32" in flat
    # the constant bits of a K-major 128-byte swizzled descriptor: SBO 1024 bytes, LBO 16, layout 1
    assert matrix_descriptor_bits(128, 4, False, 0) == matrix_descriptor_bits(128, 2, False, 0)


TF32_MISUSES = [
    ("ox.wgmma.mma(acc32, sf, 0, sf, 0, b_major='mn', b_rows=64)",
     "wgmma with f32 operands (read as tf32) reads both A and B K-major: PTX has no transpose for tf32"),
    ("ox.wgmma.mma(acc32, sf, 0, sa, 0)", "A holds f32 but B holds f16"),
    ("ox.wgmma.mma(acc32, sa, 0, sf, 0)", "A holds f16 but B holds f32"),
    ("ox.wgmma.mma(acc, sf, 0, sf, 0)", "the accumulator's shape m64n64k16 does not fit f32 inputs: wgmma multiplies "
     "K = 8 of them"),
    ("ox.wgmma.mma(acc32, sa, 0, sa, 0)", "the accumulator's shape m64n64k8 does not fit f16 inputs"),
    ("ox.wgmma.mma(acc32, fa, sf, 0)", "a register A of wgmma.mma is an ox.mma.fragment_a(\"m16n8k16\", T) of f16 "
     "or bf16"),
    ("bad = ox.wgmma.accumulator('m64n250k8')", "unknown wgmma shape 'm64n250k8'"),
]


@pytest.mark.parametrize("line, message", TF32_MISUSES, ids=[m[0] for m in TF32_MISUSES])
def test_tf32_misuse_is_a_located_error(tmp_path: Path, line: str, message: str) -> None:
    body = f"""
@ox.kernel
def k(c: MutSlice[f32], n: i32) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    sf = ox.shared.array(4096, f32, swizzle=128)
    fa = ox.mma.fragment_a("m16n8k8", f32)
    acc = ox.wgmma.accumulator("m64n64k16")
    acc32 = ox.wgmma.accumulator("m64n64k8")
    {line}
"""
    with pytest.raises(CompileError) as info:
        compile_source(tmp_path, body)
    assert message in str(info.value)
    assert "kern.py:11:" in str(info.value)  # the line of the misuse


def test_sass_of_the_tf32_gemm_holds_hgmma_tf32_and_no_local_memory() -> None:
    """examples/gemm/wgmma_gemm_tf32.py runs on the warpgroup tensor cores in TF32 (HGMMA
    64x256x8 .TF32), its 128 accumulators stay in registers, one group in flight, one box of A
    and one of Bt per stage with UTMALDG, C through 8-byte shared stores and UTMASTG."""
    from oxide_build.inspect import disassemble, inspect_module

    found = inspect_module(EXAMPLE.parent / "wgmma_gemm_tf32.py", "wgmma_gemm_tf32", "sm_90a")
    assert list(found.resources) == ["wgmma_gemm_tf32"]
    for symbol, res in found.resources.items():
        assert res.local_bytes == 0 and res.spill_stores == 0 and res.spill_loads == 0, symbol
    try:
        sass = disassemble(found.cubin)
    except ToolchainError as e:
        pytest.skip(f"no SASS: {e}")
    assert sass.count("HGMMA.64x256x8.F32.TF32") == 8  # 4 per stage, the loop's body twice
    assert "HMMA" not in sass.replace("HGMMA", "")
    assert "LDL" not in sass and "STL" not in sass
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in sass
    assert sass.count("UTMALDG.2D") == 2
    assert sass.count("STS.64") == 64 and sass.count("UTMASTG.2D") == 8  # 8 boxes of 64x32 per tile


@pytest.mark.parametrize("mnk, message", [
    ((128, 256, 30), "K = 30 is not a multiple of 4"),
    ((128, 250, 32), "N = 250 is not a multiple of 4"),
    ((0, 256, 32), "M, N and K must be positive"),
    ((2**31, 256, 32), "does not fit the kernel's 32-bit sizes"),
    ((2**20, 2**20, 2**12), "does not fit the kernel's 32-bit sizes"),
])
def test_the_tf32_gemm_refuses_sizes_it_cannot_take(mnk: tuple[int, int, int], message: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """gemm_tf32's size rules (tests/wgmma_gemm_tf32_cases.py checks the rest on the GPU: dtypes,
    layouts, devices, alignment): TMA needs rows of a multiple of 16 bytes; any M is taken."""
    monkeypatch.syspath_prepend(str(ROOT))
    from examples.gemm.wgmma_gemm_tf32 import check_sizes

    with pytest.raises(ValueError, match=message):
        check_sizes(*mnk)
    for fine in ((1, 4, 4), (999, 520, 328), (77, 8, 40), (4096, 4096, 4096)):
        check_sizes(*fine)


def test_sass_of_the_fp8_gemm_holds_qgmma_and_no_local_memory() -> None:
    """examples/gemm/wgmma_gemm_fp8.py runs on the warpgroup tensor cores with e4m3 (QGMMA
    64x256x32), its 128 accumulators stay in registers, one group in flight, and it loads one
    box of A and one of Bt per stage with UTMALDG."""
    from oxide_build.inspect import disassemble, inspect_module

    found = inspect_module(EXAMPLE.parent / "wgmma_gemm_fp8.py", "wgmma_gemm_fp8", "sm_90a")
    assert list(found.resources) == ["wgmma_gemm_fp8"]
    for symbol, res in found.resources.items():
        assert res.local_bytes == 0 and res.spill_stores == 0 and res.spill_loads == 0, symbol
    try:
        sass = disassemble(found.cubin)
    except ToolchainError as e:
        pytest.skip(f"no SASS: {e}")
    assert sass.count("QGMMA.64x256x32.F32.E4M3.E4M3") == 8  # 4 per stage, the loop's body twice
    assert "HMMA" not in sass and "HGMMA" not in sass
    assert "LDL" not in sass and "STL" not in sass
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in sass
    assert sass.count("UTMALDG.2D") == 2


def test_jit_compiles_a_wgmma_module_for_sm_90a(tmp_path: Path) -> None:
    """The runtime asks the JIT for the device's arch (sm_90 on an H200); a module whose kernels
    need sm_90a gets an sm_90a cubin, which the loader picks on that GPU. Other modules stay."""
    from oxide_build.jit import _compile

    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(TILE))
    compiled = _compile(src, "kern", CompileOptions(archs=("sm_90",)), tmp_path)
    assert set(compiled.cubins) == {"sm_90a"}
    with pytest.raises(ArchRequirementError):  # sm_80 has no sm_90a
        _compile(src, "kern", CompileOptions(archs=("sm_80",)), tmp_path)
    plain = tmp_path / "plain.py"
    plain.write_text(HEADER + "@ox.kernel\ndef k(c: MutSlice[f32]) -> None:\n    pass\n")
    assert set(_compile(plain, "plain", CompileOptions(archs=("sm_90",)), tmp_path).cubins) == {"sm_90"}


def test_the_tile_fixtures_compile_for_sm_90a() -> None:
    compiled = compile_module(TILES, "wgk", CompileOptions(archs=("sm_90a",)))
    assert set(compiled.cubins) == {"sm_90a"}


@pytest.mark.parametrize("example", ["wgmma_gemm", "wgmma_cpasync_gemm"])
def test_sass_of_the_gemm_holds_hgmma_and_no_local_memory(example: str) -> None:
    """The sm_90a GEMMs run on the warpgroup tensor cores (HGMMA, not HMMA), their 128
    accumulators stay in registers (no local memory), the wgmmas are not serialized, and the
    TMA one loads with UTMALDG and stores C with STSM (stmatrix) and UTMASTG."""
    from oxide_build.inspect import disassemble, inspect_module

    found = inspect_module(EXAMPLE.parent / f"{example}.py", example, "sm_90a")
    assert len(found.resources) == 2  # bf16 and f16
    for symbol, res in found.resources.items():
        assert res.local_bytes == 0 and res.spill_stores == 0 and res.spill_loads == 0, symbol
    try:
        sass = disassemble(found.cubin)
    except ToolchainError as e:
        pytest.skip(f"no SASS: {e}")
    assert sass.count("HGMMA.64x256x16.F32.BF16") == 8 and sass.count("HGMMA.64x256x16.F32 ") == 8
    assert "HMMA" not in sass.replace("HGMMA", "")
    assert "LDL" not in sass and "STL" not in sass
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in sass  # one group kept in flight
    assert sass.count("UTMALDG.2D") == (2 * 5 if example == "wgmma_gemm" else 0)  # A and 4 boxes of B, per type
    if example == "wgmma_gemm":  # the TMA-store epilogue: 4 boxes of 64x64, each 4 stmatrix .x4 per warp
        assert sass.count("STSM.16.M88.4") == 2 * 16 and sass.count("UTMASTG.2D") == 2 * 4
        assert "STG" not in sass.replace("UTMASTG", "")  # no element goes out from registers


ORDER_CASES = {
    "read before the wait": ("ox.wgmma.commit_group()\n    x = acc[0]", "is read while the ox.wgmma.mma at line 11"),
    "read after wait_group(1)": ("ox.wgmma.commit_group()\n    ox.wgmma.wait_group(1, acc)\n    x = acc[0]",
                                 "is read while"),
    "wait_group(0) not naming it": ("ox.wgmma.commit_group()\n    ox.wgmma.wait_group(0)\n    x = acc[0]",
                                    "call ox.wgmma.wait_group(0, acc) first"),
    "written before the wait": ("acc[3] = 1.0", "is written while"),
    "read in a branch": ("if n > 0:\n        with ox.unsafe():\n            c[0] = acc[1]", "is read while"),
}


@pytest.mark.parametrize("case", ORDER_CASES)
def test_an_accumulator_used_before_its_wait_is_a_located_error(tmp_path: Path, case: str) -> None:
    code, message = ORDER_CASES[case]
    body = f"""
@ox.kernel
def k(c: MutSlice[f32], n: i32) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    sb = ox.shared.array(4096, f16, swizzle=128)
    acc = ox.wgmma.accumulator("m64n64k16")
    acc[0] = 0.0
    ox.wgmma.fence()
    ox.wgmma.mma(acc, sa, 0, sb, 0)
    {code}
"""
    with pytest.raises(CompileError) as info:
        compile_source(tmp_path, body)
    assert message in str(info.value)
    assert "kern.py:1" in str(info.value)


def test_accumulators_across_a_loop(tmp_path: Path) -> None:
    """An mma in a loop leaves the accumulator pending after it (and at the top of the next trip)."""
    loop = """
@ox.kernel
def k(c: MutSlice[f32], n: i32) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    sb = ox.shared.array(4096, f16, swizzle=128)
    acc = ox.wgmma.accumulator("m64n64k16")
    for i in range(n):
        {top}
        ox.wgmma.fence()
        ox.wgmma.mma(acc, sa, 0, sb, 0, scale_d=i > 0)
        ox.wgmma.commit_group()
        ox.wgmma.wait_group(1)
    {after}
    with ox.unsafe():
        c[thread.idx.x] = acc[0]
"""
    with pytest.raises(CompileError, match="is read while the ox.wgmma.mma at line 12"):
        compile_source(tmp_path, loop.format(top="pass", after="pass"))
    with pytest.raises(CompileError, match="is read while"):
        compile_source(tmp_path, loop.format(top="x = acc[5]", after="ox.wgmma.wait_group(0, acc)"))
    assert compile_source(tmp_path, loop.format(top="pass", after="ox.wgmma.wait_group(0, acc)"))


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_static_shared_keeps_a_swizzled_dynamic_array_on_its_period(tmp_path: Path, backend: str) -> None:
    """The driver places dynamic shared memory right after the static shared memory, 16-byte
    aligned whatever its declaration asks: next to a swizzled dynamic array every static shared
    array (the mbarriers here, 4 × 8 bytes) is a whole number of 1024-byte periods, 1024-aligned.
    Without a swizzled dynamic array nothing is padded."""
    body = """
@ox.kernel
def k(c: MutSlice[f32]) -> None:
    smem = ox.shared.dynamic(f16, swizzle={swizzle})
    bars = ox.mbarrier.array(4)
    rows = ox.shared.array(100, f32)
    if thread.idx.x == 0:
        ox.mbarrier.init(bars[0], 1)
    rows[thread.idx.x % 100] = 1.0
    block.sync()
    with ox.unsafe():
        c[thread.idx.x] = f32(smem[thread.idx.x]) + rows[(thread.idx.x + 1) % 100]
"""
    options = CompileOptions(archs=("sm_90",), backend=backend, link_cubins=False)
    padded = " ".join(compile_source(tmp_path, body.replace("{swizzle}", "128"), options)["sm_90"].split())
    assert ".extern .shared .align 1024" in padded
    statics = re.findall(r"\.shared \.align (\d+) \.b8 \S+\[(\d+)\]", first_entry(padded))
    assert len(statics) == 2 and all(a == "1024" and int(n) % 1024 == 0 for a, n in statics), statics
    plain = " ".join(compile_source(tmp_path, body.replace(", swizzle={swizzle}", ""), options)["sm_90"].split())
    statics = re.findall(r"\.shared \.align (\d+) \.b8 \S+\[(\d+)\]", first_entry(plain))
    assert sorted(int(n) for _, n in statics) == [32, 400] and all(a == "16" for a, _ in statics), statics


REGISTER_A = """
@ox.kernel
def rs(a: Slice[f16], c: MutSlice[f32]) -> None:
    sb = ox.shared.array(8192, f16, swizzle=128)
    for i in range(thread.idx.x, 8192, 128):
        sb[i] = a[i]
    ox.fence.proxy_async()
    block.sync()
    pf = ox.mma.fragment_a("m16n8k16", f16, 2)
    for kk in ox.static_range(2):
        for e in ox.static_range(8):
            pf[kk, e] = a[thread.idx.x * 16 + kk * 8 + e]
    acc = ox.wgmma.accumulator("m64n64k16")
    ox.wgmma.fence()
    ox.wgmma.mma(acc, pf[0], sb, 0, scale_d=False)
    ox.wgmma.mma(acc, pf[1], sb, 16 * 64, b_major="mn", b_rows=32)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, acc)
    with ox.unsafe():
        c[thread.idx.x] = acc[0] + acc[31]
"""


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_ptx_of_a_register_a_wgmma(tmp_path: Path, backend: str) -> None:
    """``wgmma.mma(acc, fragment, b, b_index)``: A's four 32-bit registers in the instruction,
    no transpose operand for A, B's as given."""
    ptx = compile_source(tmp_path, REGISTER_A, CompileOptions(archs=("sm_90a",), backend=backend))["sm_90a"]
    mmas = [line for line in first_entry(ptx).splitlines() if "wgmma.mma_async" in line]
    assert len(mmas) == 2
    for line, trans in zip(mmas, "01"):
        assert line.startswith("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {")
        a_regs = line.split("}, {")[1].split("}")[0].split(", ")
        assert len(a_regs) == 4 and all(r.startswith("%r") for r in a_regs), line
        assert line.endswith(f"p, 1, 1, {trans};"), line  # scale-d, imm-scale-a/b, imm-trans-b only


REGISTER_A_MISUSE = {
    "an f32 array as A": ("x = ox.local.array(8, f32)\n    ox.wgmma.mma(acc, x, sb, 0)",
                          "a register A of wgmma.mma is an ox.mma.fragment_a(\"m16n8k16\", T) of f16 or bf16"),
    "a B fragment as A": ("x = ox.mma.fragment_b(\"m16n8k16\", f16)\n    ox.wgmma.mma(acc, x, sb, 0)",
                          "a register A of wgmma.mma"),
    "bf16 A, f16 B": ("x = ox.mma.fragment_a(\"m16n8k16\", bf16)\n    ox.wgmma.mma(acc, x, sb, 0)",
                      "A holds bf16 but B holds f16"),
    "three arguments": ("ox.wgmma.mma(acc, pf, sb)", "wgmma.mma takes (acc, a, a_index, b, b_index)"),
}


@pytest.mark.parametrize("case", REGISTER_A_MISUSE)
def test_register_a_misuse_is_a_located_error(tmp_path: Path, case: str) -> None:
    code, message = REGISTER_A_MISUSE[case]
    body = f"""
@ox.kernel
def k(c: MutSlice[f32]) -> None:
    sb = ox.shared.array(4096, f16, swizzle=128)
    pf = ox.mma.fragment_a("m16n8k16", f16)
    acc = ox.wgmma.accumulator("m64n64k16")
    {code}
"""
    with pytest.raises(CompileError) as info:
        compile_source(tmp_path, "from oxide import bf16\n" + body)
    assert message in str(info.value)
    assert "kern.py:1" in str(info.value)


OVERLAP = """
@ox.kernel
def k(c: MutSlice[f32], n: i32) -> None:
    sa = ox.shared.array(4096, f16, swizzle=128)
    sb = ox.shared.array(4096, f16, swizzle=128)
    s = ox.wgmma.accumulator("m64n64k16")
    o = ox.wgmma.accumulator("m64n64k16")
    pf = ox.mma.fragment_a("m16n8k16", f16)
    for e in ox.static_range(8):
        pf[e] = f16(e)
    ox.wgmma.fence()
    for i in range(n):
        ox.wgmma.mma(s, sa, 0, sb, 0, scale_d=False)
        ox.wgmma.commit_group()
        ox.wgmma.mma(o, pf, sb, 0)
        ox.wgmma.commit_group()
        ox.wgmma.wait_group({wait}, s)
        with ox.unsafe():
            {use}
        ox.wgmma.wait_group(0, o)
        ox.wgmma.fence()
    with ox.unsafe():
        c[thread.idx.x] = o[0]
"""


def test_wait_group_completes_the_older_groups(tmp_path: Path) -> None:
    """FlashAttention-3's overlap: S then O issued, each committed; wait_group(1, s) makes S
    readable while O's group is pending, and O's register A may not be written until O's wait."""
    assert compile_source(tmp_path, OVERLAP.format(wait=1, use="c[0] = s[0]"))
    with pytest.raises(CompileError, match="'s' is read while the ox.wgmma.mma at line 15"):
        compile_source(tmp_path, OVERLAP.format(wait=2, use="c[0] = s[0]"))
    with pytest.raises(CompileError, match="'o' is read while the ox.wgmma.mma at line 17"):
        compile_source(tmp_path, OVERLAP.format(wait=1, use="c[0] = o[0]"))
    with pytest.raises(CompileError, match="the register A operand 'pf' is written while the ox.wgmma.mma at line 17"):
        compile_source(tmp_path, OVERLAP.format(wait=1, use="c[0] = s[0]\n            pf[0] = f16(s[0])"))
    assert compile_source(tmp_path, OVERLAP.format(wait=1, use="c[1] = f32(pf[0]) + s[1]"))  # reading A is fine


def test_a_register_a_made_from_an_accumulator_stays_packed(tmp_path: Path) -> None:
    """P = T(S) written element by element into a fragment: each pair is one cvt.rn.f16x2.f32
    into one register, and the register A of the next wgmma is that register, not halves
    re-packed where the mma reads them (which ptxas would answer by serializing the wgmmas)."""
    ptx = compile_source(tmp_path, """
@ox.kernel
def k(c: MutSlice[f32]) -> None:
    sb = ox.shared.array(4096, f16, swizzle=128)
    s = ox.wgmma.accumulator("m64n64k16")
    o = ox.wgmma.accumulator("m64n64k16")
    pf = ox.mma.fragment_a("m16n8k16", f16, 4)
    ox.wgmma.fence()
    ox.wgmma.mma(s, sb, 0, sb, 0, scale_d=False)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, s)
    for kk in ox.static_range(4):
        for e in ox.static_range(8):
            pf[kk, e] = f16(s[8 * kk + e] * 0.5)
    ox.wgmma.fence_operand(pf)
    ox.wgmma.fence()
    for kk in ox.static_range(4):
        ox.wgmma.mma(o, pf[kk], sb, kk * 16 * 64, b_major="mn", b_rows=64, scale_d=kk > 0)
    ox.wgmma.commit_group()
    ox.wgmma.wait_group(0, o)
    with ox.unsafe():
        c[thread.idx.x] = o[0]
""")["sm_90a"]
    assert first_entry(ptx).count("cvt.rn.f16x2.f32") == 16
    assert "prmt" not in ptx and "cvt.rn.f16.f32" not in ptx


def test_fence_operand_refuses_what_is_not_a_register_fragment(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match="wgmma.fence_operand takes wgmma accumulators and mma fragments"):
        compile_source(tmp_path, """
@ox.kernel
def k(c: MutSlice[f32]) -> None:
    x = ox.local.array(8, f32)
    ox.wgmma.fence_operand(x)
""")
