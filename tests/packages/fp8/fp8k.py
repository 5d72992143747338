"""Kernels of tests/test_fp8_gpu.py: conversions to and from the 8-bit floats (sm_89+)."""
import oxide as ox
from oxide import DisjointSlice, Slice, bf16, f8e4m3, f8e5m2, f16, f32, thread

T = ox.TypeVar("T", f32, f16, bf16)


@ox.kernel
def narrow(x: Slice[T], o4: DisjointSlice[f8e4m3], o5: DisjointSlice[f8e5m2]) -> None:
    i = thread.index_1d()
    if i < len(x) and i < len(o4) and i < len(o5):
        o4[i] = f8e4m3(x[i])
        o5[i] = f8e5m2(x[i])


@ox.kernel
def widen(q4: Slice[f8e4m3], q5: Slice[f8e5m2], f4: DisjointSlice[f32], h4: DisjointSlice[f16],
          b4: DisjointSlice[bf16], f5: DisjointSlice[f32], h5: DisjointSlice[f16], b5: DisjointSlice[bf16]) -> None:
    i = thread.index_1d()
    if i < len(q4) and i < len(q5) and i < len(f4) and i < len(h4) and i < len(b4) and i < len(f5) \
            and i < len(h5) and i < len(b5):
        f4[i] = f32(q4[i])
        h4[i] = f16(q4[i])
        b4[i] = bf16(q4[i])
        f5[i] = f32(q5[i])
        h5[i] = f16(q5[i])
        b5[i] = bf16(q5[i])
