"""TMA descriptors and the ox.tma / ox.mbarrier intrinsics (docs/language.md, "TMA and mbarrier"):
the PTX of each intrinsic on both backends, each misuse a located error, the descriptor
parameter in the manifest and the parameter block, and on the fake driver the host builder's
checks and what a launch packs. GPU results: test_tma_gpu.py."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from fakes import (  # noqa: F401  (fixtures: fresh_runtime is autouse)
    FakeArray,
    FakeDriver,
    fake_driver,
    fresh_runtime,
    make_module,
    slot_types,
)
from oxide.abi.preconditions import OPCODE
from oxide.abi.params import TENSOR_MAP_SLOTS, param_slot_count
from oxide.errors import CompileError
from oxide.runtime.manifest import ModuleManifest, ParamSpec
from oxide_build.compile import CompileOptions, build_ir, compile_module

SOURCE = """
import oxide as ox
from oxide import f32, bf16, i32, thread, block

STAGES = 3


@ox.kernel
def copy_ring(src: ox.tma.Descriptor[f32, 2], dst: ox.tma.Descriptor[f32, 2], tiles: i32) -> None:
    assert tiles > 0
    smem = ox.shared.array((STAGES, 8, 16), f32)
    flat = ox.shared.array(STAGES * 8 * 16, f32)
    bars = ox.mbarrier.array(STAGES)
    one = ox.mbarrier.array(1)
    t = thread.idx.x
    if t == 0:
        for s in range(STAGES):
            ox.mbarrier.init(bars[s], 1)
        ox.mbarrier.init(one, 32)
        ox.mbarrier.fence_init()
    block.sync()
    for k in range(tiles):
        s = k % STAGES
        phase = (k // STAGES) % 2
        if t == 0:
            ox.tma.prefetch(src, k * 8, 0)
            ox.mbarrier.arrive_expect_tx(bars[s], ox.tma.box_bytes(src))
            ox.tma.load(src, bars[s], flat[s * 128:], k * 8, 0)
        ox.mbarrier.wait(bars[s], phase)
        if t == 0:
            with ox.unsafe():
                ox.tma.store(dst, flat[s * 128:], k * 8, 0)
            ox.tma.store_commit()
            ox.tma.store_wait(0, read=True)
        block.sync()
    ox.mbarrier.arrive(one)
    if ox.mbarrier.try_wait(one, 0):
        ox.mbarrier.expect_tx(bars[0], 0)
    ox.tma.store_wait(0)
    if t == 0:
        ox.mbarrier.inval(one)
"""


SM90 = CompileOptions(archs=("sm_90",))


def write(tmp_path: Path, source: str, name: str = "tmasrc") -> Path:
    src = tmp_path / f"{name}.py"
    src.write_text(textwrap.dedent(source))
    return src


# ---- the PTX of every intrinsic, on both backends ------------------------------------------------

@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_the_intrinsics_compile_to_their_instructions_and_link(tmp_path: Path, backend: str, arch: str) -> None:
    src = write(tmp_path, SOURCE)
    out = compile_module(src, "tmasrc", CompileOptions(archs=(arch,), backend=backend))
    ptx = out.ptx[arch]
    assert out.cubins[arch]  # ptxas took it
    entry = re.search(r"\.entry copy_ring\((.*?)\)", ptx, re.S)
    assert entry is not None
    params = entry.group(1)
    # the descriptors: 128 bytes aligned to 64, each followed by its box's element count
    assert len(re.findall(r"\.param \.align 64 \.b8 copy_ring_param_\d+\[128\]", params)) == 2
    assert "cvta.param.u64" in ptx  # __grid_constant__: the map's address where the driver put it
    for instruction in (
        "mbarrier.init.shared",
        "fence.mbarrier_init.release.cluster",
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        "mbarrier.expect_tx.relaxed.cta.shared::cta.b64",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "mbarrier.inval.shared",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
        "cp.async.bulk.prefetch.tensor.2d.L2.global.tile",
        "cp.async.bulk.commit_group",
        "cp.async.bulk.wait_group.read",
    ):
        assert instruction in ptx, instruction
    assert re.search(r"mbarrier\.arrive(\.shared)?(::cta)?\.b64", ptx)
    assert re.search(r"cp\.async\.bulk\.wait_group\s+0;", ptx)
    # a TMA copy's shared memory is aligned to 128 bytes
    assert re.search(r"\.shared \.align 128 \.b8 __oxide_shared\S*flat\S*\[1536\]", ptx)
    if arch == "sm_90":
        assert ".version 8.0" in ptx or backend == "nvvm"  # the ISA with these instructions


def test_coordinates_are_written_outermost_first_and_passed_innermost_first(tmp_path: Path) -> None:
    src = write(tmp_path, """
        import oxide as ox
        from oxide import f32, i32

        @ox.kernel
        def one(src: ox.tma.Descriptor[f32, 3], row: i32, col: i32) -> None:
            bars = ox.mbarrier.array(1)
            tile = ox.shared.array(64, f32)
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
            ox.mbarrier.arrive_expect_tx(bars, ox.tma.box_bytes(src))
            ox.tma.load(src, bars, tile, 7, row, col)
    """)
    for backend in ("nvptx", "nvvm"):
        ptx = compile_module(src, "tmasrc", CompileOptions(archs=("sm_90a",), backend=backend)).ptx["sm_90a"]
        line = next(l for l in ptx.splitlines() if "cp.async.bulk.tensor.3d" in l)
        coords = re.search(r"\{([^}]*)\}", line)
        assert coords is not None
        first, second, third = [c.strip() for c in coords.group(1).split(",")]
        # the innermost coordinate is the last parameter (col), the outermost the constant 7
        assert third == "7" or re.search(rf"mov\.(b|u)32\s+{re.escape(third)},\s*7;", ptx), (backend, line)


# ---- the manifest and the parameter block --------------------------------------------------------

def test_a_descriptor_parameter_in_the_manifest_and_its_slots(tmp_path: Path) -> None:
    _, frontend = build_ir(write(tmp_path, SOURCE), "tmasrc", SM90)
    (spec,) = frontend.kernels
    assert spec.params[:2] == (ParamSpec("src", "tensor_map", "f32", 2), ParamSpec("dst", "tensor_map", "f32", 2))
    assert spec.params[0].is_tensor_map and not spec.params[0].is_view and not spec.params[0].is_scalar
    assert param_slot_count("tensor_map") == TENSOR_MAP_SLOTS == 17
    # `assert tiles > 0` reads the slot after the two descriptors' 17 each
    (pre,) = spec.preconditions
    assert (OPCODE["arg"], 34) in pre.code
    text = ModuleManifest("m", "m.py", "0" * 64, (spec,), {"sm_90a": "m.cubin"}).to_json()
    assert ModuleManifest.from_json(text).kernels[0].params == spec.params


# ---- misuse: located compile errors -------------------------------------------------------------

KERNEL = """
import oxide as ox
from oxide import f32, bf16, i32, thread

@ox.kernel
def k(src: ox.tma.Descriptor[f32, 2], n: i32) -> None:
    bars = ox.mbarrier.array(2)
    tile = ox.shared.array(256, f32)
    {body}
"""

MISUSES = [
    ("x = bars[0] + 1", "is an mbarrier: it is not read, written or sliced as a number"),
    ("bars[1] = 0", "is an mbarrier"),
    ("ox.mbarrier.wait(bars, 0)", "holds 2 barriers: say which one"),
    ("ox.mbarrier.wait(bars[2], 0)", "barrier 2 is out of bounds of 2 barriers"),
    ("ox.mbarrier.wait(bars[0], 2)", "the phase parity is 0 or 1, got 2"),
    ("ox.mbarrier.wait(tile[0], 0)", "takes a barrier of ox.mbarrier.array(n)"),
    ("ox.mbarrier.init(bars[0], 0)", "the arrival count is from 1 to 2**20 - 1"),
    ("ox.mbarrier.arrive_expect_tx(bars[0], 1.5)", "the transaction byte count must be an integer"),
    ("ox.tma.load(n, bars[0], tile, 0, 0)", "takes a TMA descriptor"),
    ("ox.tma.load(src, bars[0], tile, 0)", "of a 2-d descriptor takes 2 coordinate(s), got 1"),
    ("ox.tma.load(src, tile, tile, 0, 0)", "takes a barrier"),
    ("ox.tma.load(src, bars[0], bars, 0, 0)", "writes a shared array"),
    ("ox.tma.load(src, bars[0], ox.shared.array(256, bf16), 0, 0)", "the descriptor has f32 elements, the shared array bf16"),
    ("ox.tma.load(src, bars[0], tile, 0.5, 0)", "a TMA coordinate must be an integer"),
    ("ox.tma.load(src, bars[0], tile, 0, 3)", "the innermost coordinate 3 is 12 bytes into a row; a TMA box starts at a "
     "multiple of 16 bytes (4 f32 elements)"),
    ("ox.tma.prefetch(src, n, -2)", "the innermost coordinate -2 is -8 bytes into a row"),
    ("ox.tma.load(src, bars[0], tile[4:], 0, 0)", "tile[4:] starts 16 bytes into its array; TMA's shared memory starts "
     "at a multiple of 128 bytes (32 f32 elements)"),
    ("ox.tma.store(src, tile, 0, 0)", "needs `with oxide.unsafe():`"),
    ("ox.tma.store_wait(n)", "a compile-time number of groups"),
    ("d = src", "a TMA descriptor is not copied into a local"),
    ("b = bars", "mbarriers are not copied into a local"),
    ("x = ox.mbarrier.array(0)", "a positive compile-time number of barriers"),
]


@pytest.mark.parametrize("body, message", MISUSES, ids=[m[0] for m in MISUSES])
def test_each_misuse_is_a_located_error(tmp_path: Path, body: str, message: str) -> None:
    src = write(tmp_path, KERNEL.replace("{body}", body))
    with pytest.raises(CompileError) as info:
        build_ir(src, "tmasrc", SM90)
    assert message in str(info.value)
    assert info.value.location is not None and info.value.location.line == 9, str(info.value)


@pytest.mark.parametrize("annotation, message", [
    ("ox.tma.Descriptor[f32]", "takes an element type and a rank"),
    ("ox.tma.Descriptor[f32, 6]", "rank of ox.tma.Descriptor must be an integer from 1 to 5"),
    ("ox.tma.Descriptor", "needs an element type and a rank"),
    ("ox.tma.Descriptor[bool, 2]", "are numbers, not bool"),
])
def test_bad_descriptor_annotations(tmp_path: Path, annotation: str, message: str) -> None:
    src = write(tmp_path, f"""
        import oxide as ox
        from oxide import f32

        @ox.kernel
        def k(src: {annotation}) -> None:
            pass
    """)
    with pytest.raises(CompileError, match=re.escape(message)):
        build_ir(src, "tmasrc", SM90)


def test_a_descriptor_passes_to_a_device_function(tmp_path: Path) -> None:
    src = write(tmp_path, """
        import oxide as ox
        from oxide import f32, i32

        T = ox.TypeVar("T", f32, ox.bf16)

        def issue(d: ox.tma.Descriptor[T, 2], bars: ox.Slice[ox.u64], row: i32) -> None:
            pass

        def load_one(d: ox.tma.Descriptor[T, 2], row: i32) -> i32:
            return ox.tma.box_bytes(d) + row

        @ox.kernel
        def k(src: ox.tma.Descriptor[f32, 2], out: ox.DisjointSlice[i32]) -> None:
            i = ox.thread.index_1d()
            if i < len(out):
                out[i] = load_one(src, 3)
    """)
    for backend in ("nvptx", "nvvm"):
        out = compile_module(src, "tmasrc", CompileOptions(archs=("sm_90a",), backend=backend))
        assert out.cubins["sm_90a"]


# ---- the host: oxide.tma.descriptor on the fake driver ------------------------------------------

class TensorMapDriver(FakeDriver):
    """The fake driver with cuTensorMapEncodeTiled: records the call, returns a map whose 16
    words say which call made it."""

    def __init__(self) -> None:
        super().__init__()
        from cuda.bindings import driver as real

        for enum in ("CUtensorMapDataType", "CUtensorMapInterleave", "CUtensorMapSwizzle", "CUtensorMapL2promotion",
                     "CUtensorMapFloatOOBfill", "cuuint64_t", "cuuint32_t"):
            setattr(self, enum, getattr(real, enum))
        self.encoded: list[tuple[Any, ...]] = []

    def cuTensorMapEncodeTiled(self, *args: Any) -> tuple[Any, Any]:
        self.encoded.append(args)

        class Map:
            opaque = [len(self.encoded) * 0x100 + k for k in range(16)]

        return self.OK, Map()


@pytest.fixture
def tmap_driver(monkeypatch: pytest.MonkeyPatch) -> TensorMapDriver:
    from oxide.runtime import device, tensor_maps

    drv = TensorMapDriver()
    monkeypatch.setattr(device, "_import_bindings", lambda: drv)
    monkeypatch.setattr(tensor_maps, "_cache", type(tensor_maps._cache)())
    return drv


def matrix(rows: int, cols: int, typestr: str = "<f4", *, ptr: int = 0x10000, row_bytes: int | None = None) -> FakeArray:
    size = int(typestr[2:])
    strides = (row_bytes, size) if row_bytes is not None else None
    return FakeArray(typestr=typestr, ptr=ptr, shape=(rows, cols), strides=strides)


def test_descriptor_encodes_innermost_first_and_caches(tmap_driver: TensorMapDriver) -> None:
    import oxide

    a = matrix(100, 72, "<f2", row_bytes=160)
    d = oxide.tma.descriptor(a, box=(64, 32), swizzle=64)
    (call,) = tmap_driver.encoded
    dtype, rank, address, dims, strides, box, elem_strides, _, swizzle, _, _ = call
    assert all(type(v).__name__ == "cuuint64_t" for v in dims + strides)
    assert all(type(v).__name__ == "cuuint32_t" for v in box + elem_strides)
    dims, strides, box, elem_strides = ([int(v) for v in x] for x in (dims, strides, box, elem_strides))
    assert (rank, address, dims, strides, box, elem_strides) == (2, 0x10000, [72, 100], [160], [32, 64], [1, 1])
    assert int(dtype) == int(tmap_driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT16)
    assert int(swizzle) == int(tmap_driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B)
    assert d.data == b"".join((0x100 + k).to_bytes(8, "little") for k in range(16))
    assert (d.dtype, d.shape, d.box, d.box_elements, d.box_bytes, d.array) == ("f16", (100, 72), (64, 32), 2048, 4096, a)
    again = oxide.tma.descriptor(a, box=(64, 32), swizzle=64)
    assert len(tmap_driver.encoded) == 1 and again.data == d.data  # the bytes came from the cache
    oxide.tma.descriptor(a, box=(32, 32), swizzle=64)
    assert len(tmap_driver.encoded) == 2  # another box: encoded anew


@pytest.mark.parametrize("kwargs, message", [
    ({"box": (257, 8)}, "each box dimension is 1 to 256 elements; axis 0 is 257"),
    ({"box": (64, 0)}, "axis 1 is 0"),
    ({"box": (64,)}, "has 1 dimension(s), the array 2"),
    ({"box": (8, 64), "swizzle": 128}, "a box row is 64 x 4 = 256 bytes, more than the swizzle's 128"),
    ({"box": (8, 6)}, "a box row must be a multiple of 16 bytes; it is 6 x 4 = 24 bytes"),
    ({"box": (8, 8), "swizzle": 48}, "swizzle=48: one of 0, 32, 64, 128"),
    ({"box": (8, 8), "dtype": "bf16"}, "dtype=bf16 was asked for, but the array holds f32"),
    ({"box": "8x8"}, "box must be a tuple of ints"),
])
def test_descriptor_checks_name_the_argument(tmap_driver: TensorMapDriver, kwargs: dict[str, Any], message: str) -> None:
    import oxide

    with pytest.raises((TypeError, ValueError)) as info:
        oxide.tma.descriptor(matrix(100, 64), **kwargs)
    assert message in str(info.value)
    assert str(info.value).startswith("oxide.tma.descriptor: ")
    assert not tmap_driver.encoded


def test_descriptor_checks_the_memory(tmap_driver: TensorMapDriver) -> None:
    import oxide

    with pytest.raises(ValueError, match="address 0x10004 is not a multiple of 16 bytes"):
        oxide.tma.descriptor(matrix(10, 16, ptr=0x10004), box=(8, 8))
    with pytest.raises(ValueError, match="the stride of axis 0 is 68 bytes"):
        oxide.tma.descriptor(matrix(10, 16, row_bytes=68), box=(8, 8))
    with pytest.raises(ValueError, match="the innermost dimension must be contiguous"):
        oxide.tma.descriptor(FakeArray(typestr="<f4", ptr=0x10000, shape=(10, 16), strides=(128, 8)), box=(8, 8))
    with pytest.raises(ValueError, match=r"box=\(8, 8\) has 2 dimension\(s\), the array 1"):
        oxide.tma.descriptor(FakeArray(16, ptr=0x10000), box=(8, 8))
    import numpy as np

    with pytest.raises(TypeError, match="host memory"):
        oxide.tma.descriptor(np.zeros((8, 8), np.float32), box=(8, 8))
    assert not tmap_driver.encoded


# ---- a launch on the fake driver -----------------------------------------------------------------

def test_a_launch_packs_the_map_and_its_box_and_keeps_checks(tmp_path: Path, tmap_driver: TensorMapDriver) -> None:
    import oxide

    _, frontend = build_ir(write(tmp_path, SOURCE, "tmamanifest"), "tmamanifest", SM90)
    specs = tuple(frontend.kernels)
    tmap_driver.signatures = {k.symbol: slot_types(k.params) for k in specs}
    assert tmap_driver.signatures["copy_ring"] == ["tensor_map", "i64", "tensor_map", "i64", "i32"]
    m = make_module(tmp_path, SOURCE, specs, error_sites=tuple(frontend.error_sites))
    a, b = matrix(64, 16, ptr=0x20000), matrix(64, 16, ptr=0x30000)
    src, dst = oxide.tma.descriptor(a, box=(8, 16)), oxide.tma.descriptor(b, box=(8, 16))
    m.copy_ring[1, 32](src, dst, 8)
    assert tmap_driver.launches[-1]["values"] == [src.data, 128, dst.data, 128, 8]
    swizzled = oxide.tma.descriptor(b, box=(8, 16), swizzle=64)  # the box's elements, the swizzle above them
    m.copy_ring[1, 32](src, swizzled, 8)
    assert tmap_driver.launches[-1]["values"] == [src.data, 128, swizzled.data, 128 | 64 << 32, 8]
    with pytest.raises(Exception, match="tiles > 0"):  # the precondition reads slot 34
        m.copy_ring[1, 32](src, dst, 0)
    half = oxide.tma.descriptor(matrix(64, 16, "<f2", ptr=0x40000), box=(8, 16))
    with pytest.raises(TypeError, match=r"parameter 'dst' of copy_ring needs a TMA descriptor of 2-d f32; got one of 2-d f16"):
        m.copy_ring[1, 32](src, half, 8)
    with pytest.raises(TypeError, match=r"parameter 'src' of copy_ring needs a TMA descriptor of 2-d f32 .*got FakeArray"):
        m.copy_ring[1, 32](a, dst, 8)
    assert len(tmap_driver.launches) == 2


# ---- clusters --------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_cluster_rank_size_and_sync(tmp_path: Path, backend: str) -> None:
    src = write(tmp_path, """
        import oxide as ox
        from oxide import i32, thread, block

        @ox.kernel
        def ranks(out: ox.DisjointSlice[i32]) -> None:
            i = thread.index_1d()
            ox.cluster.sync()
            if ox.cluster.rank() == 0:  # block-uniform: not divergent for block.sync
                block.sync()
            if i < len(out):
                out[i] = ox.cluster.rank() * 100 + ox.cluster.num_blocks()
    """)
    out = compile_module(src, "tmasrc", CompileOptions(archs=("sm_90",), backend=backend))
    ptx = out.ptx["sm_90"]
    assert out.cubins["sm_90"]
    for instruction in ("%cluster_ctarank", "%cluster_nctarank", "barrier.cluster.arrive", "barrier.cluster.wait"):
        assert instruction in ptx, instruction


def test_a_module_for_sm_80_that_uses_tma_is_refused_at_the_call(tmp_path: Path) -> None:
    src = write(tmp_path, KERNEL.replace("{body}", "ox.mbarrier.init(bars[0], 1); ox.mbarrier.wait(bars[0], 0)"))
    with pytest.raises(CompileError, match=r"ox\.mbarrier\.wait needs sm_90 or newer; this module is built for sm_80") as info:
        compile_module(src, "tmasrc", CompileOptions(archs=("sm_80", "sm_90")))
    assert info.value.location is not None and info.value.location.line == 9
    src = write(tmp_path, KERNEL.replace("{body}", "ox.cluster.sync()"), "tmasrc2")
    with pytest.raises(CompileError, match=r"ox\.cluster\.sync needs sm_90 or newer"):
        compile_module(src, "tmasrc2", CompileOptions(archs=("sm_80",)))


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
def test_a_swizzled_shared_array_checks_the_maps_swizzle(tmp_path: Path, backend: str) -> None:
    src = write(tmp_path, """
        import oxide as ox
        from oxide import f32

        @ox.kernel
        def k(src: ox.tma.Descriptor[f32, 2]) -> None:
            tile = ox.shared.array((8, 32), f32, swizzle=128)
            plain = ox.shared.array((8, 32), f32)
            bars = ox.mbarrier.array(2)
            ox.mbarrier.init(bars[0], 1)
            ox.mbarrier.init(bars[1], 1)
            ox.mbarrier.fence_init()
            ox.mbarrier.arrive_expect_tx(bars[0], ox.tma.box_bytes(src))
            ox.mbarrier.arrive_expect_tx(bars[1], ox.tma.box_bytes(src))
            ox.tma.load(src, bars[0], tile, 0, 0)
            ox.tma.load(src, bars[1], plain, 0, 0)
    """)
    _, frontend = build_ir(src, "tmasrc", SM90)
    whats = [site.what for site in frontend.error_sites]
    # one swizzle check (the swizzled array only), one fit check per load; constant coordinates
    assert sum("the swizzle of src" in w and "128 bytes tile is declared with" in w for w in whats) == 1, whats
    assert sum(w.startswith("one box of src") for w in whats) == 2, whats
    out = compile_module(src, "tmasrc", CompileOptions(archs=("sm_90",), backend=backend))
    assert out.cubins["sm_90"]
    assert re.search(r"shr\.u64\s+%rd\d+, %rd\d+, 32;", out.ptx["sm_90"])


def test_the_shared_address_is_checked_where_the_compiler_cannot_see_it(tmp_path: Path) -> None:
    src = write(tmp_path, """
        import oxide as ox
        from oxide import f32, i32

        @ox.kernel
        def k(src: ox.tma.Descriptor[f32, 2], s: i32) -> None:
            tile = ox.shared.array(1024, f32)
            bars = ox.mbarrier.array(1)
            ox.mbarrier.init(bars, 1)
            ox.mbarrier.fence_init()
            ox.mbarrier.arrive_expect_tx(bars, 4 * ox.tma.box_bytes(src))
            ox.tma.load(src, bars, tile, 0, 0)           # a whole array: aligned by the compiler
            ox.tma.load(src, bars, tile[256:], 0, 0)     # a constant offset of 1024 bytes
            ox.tma.load(src, bars, tile[s * 256:], 0, 0)  # checked at run time (LLVM proves it: s * 1024 bytes)
            ox.tma.load(src, bars, tile[s:], 0, 0)        # checked at run time
    """)
    _, frontend = build_ir(src, "tmasrc", SM90)
    whats = [site.what for site in frontend.error_sites]
    assert [w for w in whats if w.startswith("the shared address")] == [
        "the shared address of tile[s * 256:] for oxide.tma.load, modulo 128 (a multiple of 128 bytes)",
        "the shared address of tile[s:] for oxide.tma.load, modulo 128 (a multiple of 128 bytes)"]
    for backend in ("nvptx", "nvvm"):
        ptx = compile_module(src, "tmasrc", CompileOptions(archs=("sm_90",), backend=backend)).ptx["sm_90"]
        # the address's low 7 bits (LLVM leaves out those it knows are zero: 124 for an f32 offset)
        assert re.search(r"and\.b(32|64)\s+%r\w*\d+, %r\w*\d+, (127|124);", ptx), backend
