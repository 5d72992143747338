"""Kernels exercising ox.bits on the GPU (tests/test_bits_gpu.py): every operation on every
integer type it takes, one element per thread."""
import oxide as ox
from oxide import DisjointSlice, Slice, i32, i64, thread, u32, u64


@ox.kernel
def bits_i32(x: Slice[i32], popc: DisjointSlice[i32], clz: DisjointSlice[i32], brev: DisjointSlice[i32]) -> None:
    i = thread.index_1d()
    if i < len(x):
        popc[i] = ox.bits.popc(x[i])
        clz[i] = ox.bits.clz(x[i])
        brev[i] = ox.bits.brev(x[i])


@ox.kernel
def bits_u32(x: Slice[u32], popc: DisjointSlice[i32], clz: DisjointSlice[i32], brev: DisjointSlice[u32]) -> None:
    i = thread.index_1d()
    if i < len(x):
        popc[i] = ox.bits.popc(x[i])
        clz[i] = ox.bits.clz(x[i])
        brev[i] = ox.bits.brev(x[i])


@ox.kernel
def bits_i64(x: Slice[i64], popc: DisjointSlice[i32], clz: DisjointSlice[i32], brev: DisjointSlice[i64]) -> None:
    i = thread.index_1d()
    if i < len(x):
        popc[i] = ox.bits.popc(x[i])
        clz[i] = ox.bits.clz(x[i])
        brev[i] = ox.bits.brev(x[i])


@ox.kernel
def bits_u64(x: Slice[u64], popc: DisjointSlice[i32], clz: DisjointSlice[i32], brev: DisjointSlice[u64]) -> None:
    i = thread.index_1d()
    if i < len(x):
        popc[i] = ox.bits.popc(x[i])
        clz[i] = ox.bits.clz(x[i])
        brev[i] = ox.bits.brev(x[i])
