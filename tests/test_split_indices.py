"""DisjointTensor writes at the digits of a split ThreadIndex (docs/language.md, "Writing a
DisjointTensor"): c = i % dim, r = i // dim, ... then out[b, c, l]. Accepted for a complete split
by radices every thread shares (with the launch preconditions the ThreadIndex needs), refused with
file:line for an incomplete split, a radix that differs between the remainder and the quotient or
between threads, a digit assigned on one path only, and in device functions; on the device (the CPU
device without a GPU), every element written once with the channel or the position fastest."""
from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import devices
from devices import to_numpy
from oxide.errors import CompileError
from oxide_build.compile import build_ir

HEADER = ("import oxide as ox\n"
          "from oxide import Tensor, DisjointTensor, f32, i32, i64, thread, block\n")
KERNELS = Path(__file__).resolve().parent / "packages" / "splitkernels" / "sk.py"


def source(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(HEADER + textwrap.dedent(body))
    return src


def kernel_preconditions(tmp_path: Path, body: str) -> list[object]:
    _, fe = build_ir(source(tmp_path, body), "kern")
    (fn,) = [f for f in fe.program.functions if f.is_kernel]
    return [p.expr for p in fn.preconditions]


def compile_error(tmp_path: Path, body: str) -> str:
    with pytest.raises(CompileError) as info:
        build_ir(source(tmp_path, body), "kern")
    return str(info.value)


def split_kernel(lines: str, write: str = "out[b, c, l] = 1.0") -> str:
    return f"""
@ox.kernel
def k(x: Tensor[f32, 3], out: DisjointTensor[f32, 3], flag: bool, n: i32) -> None:
    i = thread.index_1d()
    dim = x.shape[1]
    seqlen = x.shape[2]
    if i < 1000:
{textwrap.indent(textwrap.dedent(lines), "        ")}
        {write}
"""


UNIT_EXTENTS = [["eq", ["grid", 1], ["const", 1]], ["eq", ["grid", 2], ["const", 1]],
                ["eq", ["block", 1], ["const", 1]], ["eq", ["block", 2], ["const", 1]]]


@pytest.mark.parametrize("lines, write", [
    ("c = i % dim\nr = i // dim\nl = r % seqlen\nb = r // seqlen", "out[b, c, l] = 1.0"),
    ("c = i % dim\nr = i // dim\nl = r % seqlen\nb = r // seqlen", "out[l, b, c] = 1.0"),  # any order
    ("", "out[i // dim // seqlen, i % dim, i // dim % seqlen] = 1.0"),  # written in place
    ("c = i % (dim + 1)\nr = i // (dim + 1)\nl = r % i64(n)\nb = r // i64(n)", "out[b, c, l] = 1.0"),
    ("c = i % block.dim.x\nr = i // block.dim.x", "out[r, c, c] = 1.0"),
    ("inner = dim if flag else seqlen\nouter = seqlen if flag else dim\nd0 = i % inner\nq = i // inner\n"
     "d1 = q % outer\nb = q // outer\nc = d0 if flag else d1\nl = d1 if flag else d0", "out[b, c, l] = 1.0"),
])
def test_a_complete_split_is_a_disjoint_write(tmp_path: Path, lines: str, write: str) -> None:
    assert kernel_preconditions(tmp_path, split_kernel(lines, write)) == UNIT_EXTENTS


def test_a_split_beside_a_block_coordinate(tmp_path: Path) -> None:
    pre = kernel_preconditions(tmp_path, """
@ox.kernel
def k(out: DisjointTensor[f32, 3], dim: i64) -> None:
    i = thread.index_1d()
    if i < 1000:
        out[block.idx.y, i % dim, i // dim] = 1.0
""")
    assert pre == [["eq", ["grid", 2], ["const", 1]], ["eq", ["block", 1], ["const", 1]],
                   ["eq", ["block", 2], ["const", 1]]]


@pytest.mark.parametrize("lines, write, line, what", [
    ("c = i % dim\nr = i // seqlen\nl = r % seqlen\nb = r // seqlen", "out[b, c, l] = 1.0", 14, "'b'"),  # radix
    ("c = i % dim\nr = i // dim\nl = r % seqlen", "out[0, c, l] = 1.0", 13, "'0'"),  # the last quotient left out
    ("c = i % dim\nr = i // dim\nl = r % seqlen", "out[c, c, l] = 1.0", 13, "'c'"),
    ("t = i64(thread.idx.x) + 1\nc = i % t\nr = i // t", "out[r, c, c] = 1.0", 13, "'r'"),  # not uniform
    ("c = i % x[0, 0, 0]\nr = i // x[0, 0, 0]", "out[r, c, c] = 1.0", 12, "'r'"),  # memory: not uniform
    ("c: i64 = 0\nif flag:\n    c = i % dim\nr = i // dim", "out[r, c, c] = 1.0", 14, "'r'"),  # one path only
    ("j = i + 1\nc = j % dim\nr = j // dim", "out[r, c, c] = 1.0", 13, "'r'"),  # not a ThreadIndex
    ("c = i % dim\nr = i // dim\nd = thread.idx.x % 2 == 0\nl = r % seqlen if d else c\nb = r // seqlen",
     "out[b, c, l] = 1.0", 15, "'b'"),  # a choice that threads make differently
])
def test_an_incomplete_or_unproven_split_is_refused(tmp_path: Path, lines: str, write: str, line: int,
                                                     what: str) -> None:
    text = compile_error(tmp_path, split_kernel(lines, write))
    assert f"kern.py:{line}:" in text, text
    assert f"a DisjointTensor is written only at the calling thread's own index; {what} is not one" in text
    assert "every digit of a ThreadIndex split" in text


def test_a_device_function_cannot_write_a_split(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
def put(out: DisjointTensor[f32, 2], i: i64, dim: i64) -> None:
    out[i // dim, i % dim] = 1.0

@ox.kernel
def k(out: DisjointTensor[f32, 2], dim: i64) -> None:
    i = thread.index_1d()
    put(out, i, dim)
""")
    assert "kern.py:5:" in text and "'i // dim' is not one" in text


@pytest.fixture(scope="module")
def sk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    yield devices.compiled_package([KERNELS], "split_gpu", tmp_path_factory.mktemp("split"))


@pytest.mark.gpu
@pytest.mark.parametrize("channel_fastest", [True, False])
def test_every_element_is_written_once(sk: ModuleType, channel_fastest: bool) -> None:
    batch, dim, seqlen = 3, 17, devices.sized(513, 45)
    x = np.random.default_rng(3).standard_normal((batch, dim, seqlen)).astype(np.float32)
    out = devices.full((batch, dim, seqlen), np.nan)
    n = batch * dim * seqlen
    sk.scale3[(n + 127) // 128, 128](devices.array(x), out, channel_fastest)
    b, c, l = np.meshgrid(np.arange(batch), np.arange(dim), np.arange(seqlen), indexing="ij")
    np.testing.assert_allclose(to_numpy(out), 2 * x + (b * 10000 + c * 100 + l), rtol=1e-6)
    tiles = devices.full((7, 33), np.nan)
    sk.tiles[(7 * 33 + 63) // 64, 64](tiles, 33)
    r, c2 = np.meshgrid(np.arange(7), np.arange(33), indexing="ij")
    np.testing.assert_array_equal(to_numpy(tiles), (r * 1000 + c2).astype(np.float32))


@pytest.mark.gpu
def test_a_launch_whose_threads_would_share_an_element_is_refused(sk: ModuleType) -> None:
    import oxide

    out = devices.full((2, 3, 4), np.nan)
    with pytest.raises(oxide.KernelError, match=r"block.dim.y == 1"):
        sk.scale3[1, (32, 2)](devices.array(np.zeros((2, 3, 4), np.float32)), out, True)


@pytest.mark.parametrize("lines, write, reason", [
    ("c = i % dim\nr = i // seqlen\nl = r % seqlen\nb = r // seqlen", "out[b, c, l] = 1.0",
     "(the digits written do not determine the thread's index: each q % R needs q // R by the same R"),
    ("t = i64(thread.idx.x) + 1\nc = i % t\nr = i // t", "out[r, c, c] = 1.0",
     "(the radix `i64(thread.idx.x) + 1` of 'r' may differ between threads"),
    ("c: i64 = 0\nif flag:\n    c = i % dim\nr = i // dim", "out[r, c, c] = 1.0",
     "('c' is no digit of a ThreadIndex (q % R or q // R of one, q itself, each digit assigned once in a block"),
    ("d = thread.idx.x % 2 == 0\nc = (i % dim) if d else (i % seqlen)\nr = i // dim", "out[r, c, c] = 1.0",
     "(the choice `thread.idx.x % 2 == 0` may differ between threads)"),
])
def test_the_error_says_what_keeps_the_split_from_being_disjoint(tmp_path: Path, lines: str, write: str,
                                                                  reason: str) -> None:
    assert reason in compile_error(tmp_path, split_kernel(lines, write))


def test_a_write_that_is_no_split_keeps_the_plain_message(tmp_path: Path) -> None:
    text = compile_error(tmp_path, """
@ox.kernel
def k(out: DisjointTensor[f32, 2]) -> None:
    r, c = thread.index_2d()
    out[r + 1, c] = 1.0
""")
    assert "'r + 1' is not one\n" in text
