"""Distributed shared memory, the split cluster barrier, remote mbarrier arrivals and multicast
TMA loads (docs/language.md, "Thread block clusters"): the PTX of each on both backends (checked
by ptxas), the checks a kernel keeps (the rank against the cluster's size, accesses against the
array's length, the multicast mask), and each misuse a located compile error. GPU results:
test_cluster_gpu.py."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from oxide.errors import CompileError
from oxide_build.compile import ArchRequirementError, CompileOptions, compile_module

HEADER = """
import oxide as ox
from oxide import f32, i32, u32, thread, block, MutSlice, Slice, DisjointSlice

"""

DSMEM = HEADER + """
def bump(view: MutSlice[f32], k: i32) -> None:
    with ox.unsafe():
        view[k] = view[k] + 1.0


@ox.kernel
def dsmem(x: Slice[f32], out: DisjointSlice[f32], k: i32) -> None:
    i = thread.index_1d()
    t = thread.idx.x
    buf = ox.shared.array(64, f32)
    counts = ox.shared.array(8, u32)
    tile = ox.shared.array((4, 16), f32)
    if t < 64:
        buf[t] = x[t]
        tile[t // 16, t % 16] = x[t]
    if t < 8:
        counts[t] = 0
    ox.cluster.sync()
    nb = ox.cluster.num_blocks()
    nxt = ox.cluster.map_shared(buf, (ox.cluster.rank() + 1) % nb)
    home = ox.cluster.map_shared(counts, 0)
    ox.atomic.add(home, t % 8, 1)
    ox.atomic.max(home, 0, 3, scope="system")
    v = nxt[k] + ox.cluster.map_shared(tile, 0)[k // 16, k % 16]
    with ox.unsafe():
        nxt[(t + 1) % 64] = v
    bump(nxt, 3)
    ox.cluster.arrive()
    ox.cluster.wait()
    ox.cluster.arrive(relaxed=True)
    ox.cluster.wait()
    if i < len(out):
        out[i] = v + ox.cluster.map_shared(buf[8:], 1)[2]
"""

MULTICAST = HEADER + """
@ox.kernel
def mcast(src: ox.tma.Descriptor[f32, 2], mask: i32) -> None:
    tile = ox.shared.array((16, 32), f32)
    bars = ox.mbarrier.array(2)
    t = thread.idx.x
    if t == 0:
        ox.mbarrier.init(bars[0], 1)
        ox.mbarrier.init(bars[1], ox.cluster.num_blocks())
        ox.mbarrier.fence_init()
    ox.cluster.sync()
    if t == 0:
        ox.mbarrier.arrive_expect_tx(bars[0], ox.tma.box_bytes(src))
        if ox.cluster.rank() == 0:
            ox.tma.load(src, bars[0], tile, 0, 0, multicast=mask)
    ox.mbarrier.wait(bars[0], 0)
    if t == 0:
        ox.cluster.mbarrier_arrive(bars[1], 0)
    ox.cluster.sync()
"""


def write(tmp_path: Path, source: str, name: str = "clsrc") -> Path:
    src = tmp_path / f"{name}.py"
    src.write_text(textwrap.dedent(source))
    return src


def compile_for(tmp_path: Path, source: str, backend: str = "nvptx", arch: str = "sm_90", bounds: bool = True,
                name: str = "clsrc") -> tuple[str, object]:
    src = write(tmp_path, source, name)
    out = compile_module(src, name, CompileOptions(archs=(arch,), backend=backend, bounds_check=bounds))
    assert out.cubins[arch]  # ptxas took it
    return out.ptx[arch], out


def kernel_body(ptx: str, kernel: str) -> str:
    start = ptx.index(f".entry {kernel}(")
    return ptx[start:]


# ---- the instructions, on both backends -----------------------------------------------------------

@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_map_shared_reads_writes_and_atomics_are_generic_accesses_of_a_mapa_address(
        tmp_path: Path, backend: str, arch: str) -> None:
    ptx, _ = compile_for(tmp_path, DSMEM, backend, arch)
    body = kernel_body(ptx, "dsmem")
    # the generic address of the other block's array: mapa on a generic address
    assert len(re.findall(r"mapa\.u64\s", body)) >= 4, body
    # generic (not .shared) loads, stores and atomics reach it
    assert re.search(r"ld\.(b|f|u)32\s+%\w+, \[%rd\d+\]", body)
    assert re.search(r"st\.(b|f|u)32\s+\[%rd\d+\]", body)
    assert re.search(r"atom\.add\.u32\s", body), "a device-scope atomic on the mapped array is a generic atom"
    assert re.search(r"atom\.sys\.max\.u32\s", body), "scope=system: atom.sys with no state space"
    # the split barrier, release then acquire, and the relaxed arrive
    for instruction in ("barrier.cluster.arrive;", "barrier.cluster.wait;", "barrier.cluster.arrive.relaxed;"):
        assert instruction in body, instruction
    if backend == "nvptx" and arch == "sm_90":
        assert ".version 8.0" in ptx  # barrier.cluster.arrive.relaxed is PTX 8.0


@pytest.mark.parametrize("backend", ["nvptx", "nvvm"])
@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_multicast_load_and_remote_arrive(tmp_path: Path, backend: str, arch: str) -> None:
    ptx, _ = compile_for(tmp_path, MULTICAST, backend, arch)
    load = re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes"
                     r"\.multicast::cluster \[%r\w*\d+\], \[%rd\d+, \{[^}]*\}\], \[[^\]]+\], %rs\d+;", ptx)
    assert load is not None, ptx
    assert re.search(r"mapa\.shared::cluster\.u32 remote, %r\d+, %r\d+; "
                     r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64 _, \[remote\];", ptx)
    # a refused load counts its bytes on the barrier of each block of the mask that exists
    assert len(re.findall(r"mbarrier\.complete_tx\.relaxed\.cluster\.shared::cluster\.b64", ptx)) == 16
    if backend == "nvptx" and arch == "sm_90":
        assert ".version 8.0" in ptx


def test_a_load_without_multicast_is_unchanged(tmp_path: Path) -> None:
    ptx, _ = compile_for(tmp_path, MULTICAST.replace(", multicast=mask", ""))
    assert "multicast" not in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [" in ptx
    assert "mbarrier.complete_tx.relaxed.cluster" not in ptx


# ---- the checks that remain in the kernel ---------------------------------------------------------

def _sites(out: object) -> list[str]:
    return [site.what for site in out.error_sites]  # type: ignore[attr-defined]


def test_the_rank_and_the_mask_are_checked_against_the_clusters_size(tmp_path: Path) -> None:
    _, out = compile_for(tmp_path, DSMEM)
    sites = _sites(out)
    assert "the cluster rank (ox.cluster.rank() + 1) % nb of oxide.cluster.map_shared(buf, ...) " \
           "(below ox.cluster.num_blocks())" in sites
    assert any(s.startswith("the cluster rank 0 of oxide.cluster.map_shared(counts, ...)") for s in sites)
    ptx, out = compile_for(tmp_path, MULTICAST, name="clsrc2")
    sites = _sites(out)
    assert any(s.startswith("the multicast mask mask of oxide.tma.load, minus 1") for s in sites), sites
    assert any(s.startswith("the cluster rank 0 of oxide.cluster.mbarrier_arrive(bars[1], ...)") for s in sites), sites


def test_accesses_through_a_mapped_view_are_checked_against_the_arrays_length(tmp_path: Path) -> None:
    source = HEADER + textwrap.dedent("""
    @ox.kernel
    def k(out: DisjointSlice[f32], j: i32) -> None:
        i = thread.index_1d()
        buf = ox.shared.array(64, f32)
        buf[thread.idx.x % 64] = 1.5
        ox.cluster.sync()
        other = ox.cluster.map_shared(buf, 1)
        v = other[j]
        ox.cluster.sync()
        if i < len(out):
            out[i] = v
    """)
    ptx, out = compile_for(tmp_path, source)
    assert "other[j]" in _sites(out)
    # the index compared with the array's length before the load
    assert re.search(r"setp\.(lt|ge|gt|le)\.u(32|64)\s+%p\d+, %rd?\d+, 64;", ptx), ptx
    _, unchecked = compile_for(tmp_path, source, bounds=False, name="clsrc3")
    assert not any("cluster rank" in s or s == "other[j]" for s in _sites(unchecked))


def test_a_device_function_given_a_mapped_view_writes_it_only_inside_unsafe(tmp_path: Path) -> None:
    """The view keeps its type in the callee (a MutSlice parameter takes the caller's array
    type): bump() of DSMEM writes inside unsafe and compiles; poke() does not."""
    source = HEADER + textwrap.dedent("""
    def poke(view: MutSlice[f32]) -> None:
        view[0] = 2.5


    @ox.kernel
    def k() -> None:
        buf = ox.shared.array(64, f32)
        ox.cluster.sync()
        poke(ox.cluster.map_shared(buf, 1))
        ox.cluster.sync()
    """)
    src = write(tmp_path, source)
    with pytest.raises(CompileError, match=r"writing 'view', the shared memory of another block of the cluster") as info:
        compile_module(src, "clsrc", CompileOptions(archs=("sm_90",)))
    assert info.value.location is not None and info.value.location.line == 7


# ---- misuse: located compile errors -----------------------------------------------------------------

KERNEL = HEADER + """
@ox.kernel
def k(x: Slice[f32], m: MutSlice[f32], out: DisjointSlice[f32], src: ox.tma.Descriptor[f32, 2]) -> None:
    buf = ox.shared.array(64, f32)
    loc = ox.local.array(4, f32)
    bars = ox.mbarrier.array(2)
    r = ox.cluster.rank()
    {body}
"""
BODY_LINE = 12  # the line of {body} in the written file


@pytest.mark.parametrize("body, message", [
    ("v = ox.cluster.map_shared(loc, r)", r"oxide\.cluster\.map_shared maps a shared array of this block .* got local "
                                          r"array\[4\] of f32"),
    ("v = ox.cluster.map_shared(x, r)", r"oxide\.cluster\.map_shared maps a shared array .* got Slice\[f32\]"),
    ("v = ox.cluster.map_shared(bars, r)", r"maps data, and 'bars' holds mbarriers"),
    ("v = ox.cluster.map_shared(buf, 1.5)", r"the block's rank in the cluster must be an integer, got f64"),
    ("v = ox.cluster.map_shared(buf, 16)", r"rank 16 is outside a cluster, whose ranks are 0 to 15"),
    ("v = ox.cluster.map_shared(buf)", r"oxide\.cluster\.map_shared\(\) takes 2 argument\(s\), got 1"),
    ("ox.cluster.map_shared(buf, r)[0] = 1.0", r"writing .* the shared memory of another block of the cluster, needs "
                                              r"`with oxide\.unsafe\(\):`"),
    ("ox.atomic.add(ox.cluster.map_shared(buf, r), 0, 1.0, scope=\"block\")",
     r"at block scope on .*another block of the cluster"),
    ("ox.tma.load(src, bars[0], ox.cluster.map_shared(buf, r), 0, 0)",
     r"oxide\.tma\.load writes a shared array .* got another block's shared array\[64\] of f32"),
    ("ox.cluster.mbarrier_arrive(buf[0], r)", r"oxide\.cluster\.mbarrier_arrive takes a barrier of ox\.mbarrier\.array"),
    ("ox.cluster.mbarrier_arrive(bars[1], 2.0)", r"the block's rank in the cluster must be an integer"),
    ("ox.cluster.arrive(relaxed=1)", r"relaxed= is True or False, a constant"),
    ("ox.cluster.arrive(release=True)", r"oxide\.cluster\.arrive\(\) has no keyword 'release'"),
    ("ox.cluster.wait(relaxed=True)", r"keyword arguments are not supported"),
    ("ox.tma.load(src, bars[0], buf, 0, 0, multicast=1.0)", r"multicast= is a mask of the cluster's blocks, an integer, "
                                                             r"got f64"),
    ("ox.tma.load(src, bars[0], buf, 0, 0, multicast=0)", r"multicast=0 names no block of a cluster"),
    ("ox.tma.load(src, bars[0], buf, 0, 0, multicast=65536)", r"multicast=65536 names no block of a cluster"),
    ("ox.tma.load(src, bars[0], buf, 0, 0, mask=3)", r"oxide\.tma\.load\(\) has no keyword 'mask'"),
])
def test_misuse_is_a_located_compile_error(tmp_path: Path, body: str, message: str) -> None:
    src = write(tmp_path, KERNEL.replace("{body}", body))
    with pytest.raises(CompileError, match=message) as info:
        compile_module(src, "clsrc", CompileOptions(archs=("sm_90",)))
    assert info.value.location is not None and info.value.location.line == BODY_LINE, info.value


@pytest.mark.parametrize("body, name", [
    ("v = ox.cluster.map_shared(buf, r)", "map_shared"),
    ("ox.cluster.mbarrier_arrive(bars[0], 0)", "mbarrier_arrive"),
    ("ox.cluster.arrive()", "arrive"),
    ("ox.cluster.wait()", "wait"),
])
def test_an_sm_80_module_is_refused_at_the_call(tmp_path: Path, body: str, name: str) -> None:
    src = write(tmp_path, KERNEL.replace("{body}", body).replace("    r = ox.cluster.rank()\n", "    r = 1\n"))
    with pytest.raises(ArchRequirementError, match=rf"ox\.cluster\.{name} needs sm_90 or newer; this module is built "
                                                   r"for sm_80") as info:
        compile_module(src, "clsrc", CompileOptions(archs=("sm_80",)))
    assert info.value.location is not None and info.value.location.line == BODY_LINE
