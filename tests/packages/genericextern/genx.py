"""Generic C++ externs for tests/test_generic_externs*.py: a C++ template per TypeVar
constraint ("scale_add<{T}>"), and a name pattern ("twice_{F}")."""
import oxide as ox
from oxide import DisjointSlice, Slice, f16, f32, f64, thread

T = ox.TypeVar("T", f16, f32, f64)  # bf16: libNVVM, which links with C++, has none
F = ox.TypeVar("F", f32, f64)
SOURCES = ["csrc/scale.cu"]


@ox.extern("scale_add<{T}>", sources=SOURCES)
def scale_add(x: T, a: T) -> T: ...


@ox.extern("mean_of<{T}>", sources=SOURCES)
def mean_of(x: Slice[T]) -> f32: ...


@ox.extern("twice_{F}", sources=SOURCES)
def twice(x: F) -> F: ...


@ox.kernel
def affine(x: Slice[T], a: Slice[T], out: DisjointSlice[T]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = scale_add(x[i], a[i])


@ox.kernel
def centered(x: Slice[T], out: DisjointSlice[f32]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = f32(x[i]) - mean_of(x)


@ox.kernel
def doubled(x: Slice[F], out: DisjointSlice[F]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = twice(x[i]) + F(0.5)


@ox.extern("half_fma", sources=SOURCES)
def half_fma(x: f16, a: f16, b: f32) -> f16: ...


@ox.kernel
def half_affine(x: Slice[f16], a: Slice[f16], b: f32, out: DisjointSlice[f16]) -> None:
    i = thread.index_1d()
    if i < len(out):
        out[i] = half_fma(x[i], a[i], b)
