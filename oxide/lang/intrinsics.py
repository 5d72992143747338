"""Device intrinsics. The compiler recognises these by name; calling them on the host is an error."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Literal, NoReturn, Protocol, TypeVar

from .types import ThreadIndex

__all__ = ["thread", "block", "grid", "warp", "shared", "local", "atomic", "math", "fence", "unsafe", "static_range", "unroll",
           "AtomicScope", "bits", "timer", "volatile", "cache", "asm", "mma", "cp_async", "wgmma", "warpgroup", "mbarrier",
           "cluster"]


def _device_only(name: str) -> NoReturn:
    raise RuntimeError(f"oxide.{name}() exists only inside a kernel or device function compiled by oxide")


class _Dim3Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def x(self) -> int:
        _device_only(f"{self._name}.x")

    @property
    def y(self) -> int:
        _device_only(f"{self._name}.y")

    @property
    def z(self) -> int:
        _device_only(f"{self._name}.z")


class _Thread:
    idx = _Dim3Marker("thread.idx")

    @staticmethod
    def index_1d() -> ThreadIndex:
        """blockIdx.x * blockDim.x + threadIdx.x, as the calling thread's ThreadIndex."""
        _device_only("thread.index_1d")

    @staticmethod
    def index_2d() -> tuple[ThreadIndex, ThreadIndex]:
        """(row, col): the y and x global indices of the calling thread."""
        _device_only("thread.index_2d")

    @staticmethod
    def index_3d() -> tuple[ThreadIndex, ThreadIndex, ThreadIndex]:
        """(depth, row, col): the z, y and x global indices of the calling thread."""
        _device_only("thread.index_3d")


class _Block:
    idx = _Dim3Marker("block.idx")
    dim = _Dim3Marker("block.dim")

    @staticmethod
    def sync() -> None:
        _device_only("block.sync")

    @staticmethod
    def sync_count(predicate: object) -> int:
        """A block barrier that returns how many threads passed a true ``predicate``
        (``__syncthreads_count``)."""
        _device_only("block.sync_count")

    @staticmethod
    def sync_and(predicate: object) -> bool:
        """A block barrier that returns whether every thread's ``predicate`` is true."""
        _device_only("block.sync_and")

    @staticmethod
    def sync_or(predicate: object) -> bool:
        """A block barrier that returns whether any thread's ``predicate`` is true."""
        _device_only("block.sync_or")


class _Grid:
    dim = _Dim3Marker("grid.dim")

    @staticmethod
    def sync() -> None:
        """A barrier of every thread of the grid (cooperative groups' ``grid.sync()``); a
        kernel that reaches it is launched cooperatively."""
        _device_only("grid.sync")


class _Warp:
    """Warp-level operations (32 lanes). Shuffles, votes, match and reductions take ``mask=``
    (the lanes taking part, a u32; the full warp without it); ``active_mask()`` is
    ``__activemask()``; ``size`` is CUDA's ``warpSize`` (32, an ``i32`` constant in kernels)."""

    size = 32

    def __getattr__(self, name: str) -> Any:
        if name in ("lane", "id", "sync", "active_mask", "all", "any", "ballot", "match_any", "shfl_idx", "shfl_up",
                    "shfl_down", "shfl_xor", "reduce_sum", "reduce_min", "reduce_max"):
            return lambda *a, **k: _device_only(f"warp.{name}")
        raise AttributeError(name)


class _Space:
    """``shared.array(shape, dtype)`` / ``shared.dynamic(dtype)`` / ``local.array(shape, dtype)``."""

    def __init__(self, name: str, ops: tuple[str, ...]) -> None:
        self._name, self._ops = name, ops

    def __getattr__(self, name: str) -> Any:
        if name in self._ops:
            return lambda *a, **k: _device_only(f"{self._name}.{name}")
        raise AttributeError(name)


_E = TypeVar("_E")

AtomicScope = Literal["block", "cta", "device", "gpu", "system", "sys"]
"""Which threads an atomic is atomic with respect to; a compile-time string constant.
``"block"`` (``"cta"``): the thread block, like CUDA's ``atomicAdd_block``; ``"device"``
(``"gpu"``, the default): every thread of the GPU, like ``atomicAdd``; ``"system"`` (``"sys"``):
the GPU, the host and peer GPUs (mapped or managed memory), like ``atomicAdd_system``."""


class _AtomicOp(Protocol):
    def __call__(self, target: Any, index: int, value: _E, *, scope: AtomicScope = "device") -> _E: ...


class _AtomicCas(Protocol):
    def __call__(self, target: Any, index: int, compare: _E, value: _E, *, scope: AtomicScope = "device") -> _E: ...


AtomicLoadOrder = Literal["relaxed", "acquire"]
AtomicStoreOrder = Literal["relaxed", "release"]


class _AtomicLoad(Protocol):
    def __call__(self, target: Any, index: int, *, order: AtomicLoadOrder, scope: AtomicScope = "device") -> Any: ...


class _AtomicStore(Protocol):
    def __call__(self, target: Any, index: int, value: Any, *, order: AtomicStoreOrder,
                 scope: AtomicScope = "device") -> None: ...


def _atomic_op(name: str) -> Any:
    def op(*args: Any, **keywords: Any) -> NoReturn:
        _device_only(f"atomic.{name}")
    op.__name__ = op.__qualname__ = name
    return op


class _Atomic:
    """``ox.atomic.<op>(target, index, value, scope="device")`` on a writable view or a shared
    array returns the element's old value; ``cas(target, index, compare, value)`` stores
    ``value`` where the element equals ``compare`` (bitwise). ``inc``/``dec`` take a u32 limit,
    like CUDA's atomicInc/atomicDec. ``scope`` is keyword-only (see ``AtomicScope``).
    ``load(target, index, order="relaxed"|"acquire")`` and ``store(target, index, value,
    order="relaxed"|"release")`` are single-copy atomic accesses with a memory order
    (``ld.acquire.gpu`` / ``st.release.gpu``; CUDA's ``cuda::atomic_ref`` load and store)."""

    add: _AtomicOp = _atomic_op("add")
    sub: _AtomicOp = _atomic_op("sub")
    min: _AtomicOp = _atomic_op("min")
    max: _AtomicOp = _atomic_op("max")
    exch: _AtomicOp = _atomic_op("exch")
    and_: _AtomicOp = _atomic_op("and_")
    or_: _AtomicOp = _atomic_op("or_")
    xor: _AtomicOp = _atomic_op("xor")
    inc: _AtomicOp = _atomic_op("inc")
    dec: _AtomicOp = _atomic_op("dec")
    cas: _AtomicCas = _atomic_op("cas")
    load: _AtomicLoad = _atomic_op("load")
    store: _AtomicStore = _atomic_op("store")


thread = _Thread()
warp = _Warp()
shared = _Space("shared", ("array", "dynamic"))
local = _Space("local", ("array",))
atomic = _Atomic()
# CUDA's math API for f32 and f64 (libdevice); docs/language.md "Math" lists each function
math = _Space("math", ("sqrt", "rsqrt", "cbrt", "rcbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10",
                       "log1p", "logb", "sin", "cos", "tan", "sinpi", "cospi", "asin", "acos", "atan", "sinh", "cosh",
                       "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "erfcinv", "erfcx", "normcdf",
                       "normcdfinv", "lgamma", "tgamma", "j0", "j1", "y0", "y1", "jn", "yn", "cyl_bessel_i0",
                       "cyl_bessel_i1", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "lround", "llround",
                       "lrint", "llrint", "abs", "fabs", "pow", "atan2", "fmod", "remainder", "remquo", "hypot",
                       "rhypot", "norm3d", "rnorm3d", "norm4d", "rnorm4d", "copysign", "nextafter", "fdim", "min",
                       "max", "fmin", "fmax", "fma", "ldexp", "scalbn", "scalbln", "frexp", "modf", "ilogb",
                       "sincos", "sincospi", "isnan", "isinf", "isfinite", "signbit",
                       # per call, f32 only: CUDA's __expf, __exp10f, __logf, ..., __powf, __fdividef
                       "fast_exp", "fast_exp2", "fast_exp10", "fast_log", "fast_log2", "fast_log10", "fast_sin", "fast_cos",
                       "fast_tan", "fast_pow", "fast_div", "saturate", "rcp"))
# proxy_async(): fence.proxy.async.shared::cta (sm_90): ordinary shared-memory writes seen by wgmma / TMA
fence = _Space("fence", ("block", "device", "system", "proxy_async"))
# popc(x) / clz(x): the set / leading zero bits of a 32- or 64-bit integer, as an i32; brev(x): its bits reversed
# ffs(x): 1 + the index of the lowest set bit (0 for zero); byte_perm(x, y, s): __byte_perm;
# funnelshift_l/lc/r/rc(lo, hi, n): __funnelshift_*; bitcast(x, T): x's bits read as T (same width);
# mulhi(a, b): the high half of the product (__mulhi, __umulhi, __mul64hi, __umul64hi)
bits = _Space("bits", ("popc", "clz", "brev", "ffs", "byte_perm", "funnelshift_l", "funnelshift_lc",
                       "funnelshift_r", "funnelshift_rc", "bitcast", "mulhi"))
# clock() -> u32, clock64() -> i64 (SM cycles), globaltimer() -> u64 (ns), nanosleep(ns)
timer = _Space("timer", ("clock", "clock64", "globaltimer", "nanosleep"))
# load(x, i) / store(x, i, v): accesses that always reach memory, like CUDA's volatile T*
volatile = _Space("volatile", ("load", "store"))
# load(x, i, hint) / store(x, i, v, hint): a global access with a cache hint, CUDA's __ldcs(&x[i])
# ("cs", "cg", "ca", "lu", "cv") and __stcs(&x[i], v) ("cs", "cg", "wb", "wt")
cache = _Space("cache", ("load", "store"))

# tensor cores (sm_80): fragment_a/b(shape, T), fragment_c(shape), sync(d, a, b, c),
# ldmatrix(dst..., smem, index, trans=False), stmatrix(src..., smem, index, trans=False) (sm_90),
# swizzle(offset, bits, base, shift)
mma = _Space("mma", ("fragment_a", "fragment_b", "fragment_c", "sync", "ldmatrix", "stmatrix", "swizzle"))
# asynchronous global-to-shared copies (sm_80): copy(dst, dst_index, src, src_index, nbytes,
# cache="ca", src_bytes=n), commit_group(), wait_group(n)
cp_async = _Space("cp_async", ("copy", "commit_group", "wait_group"))
# tensor cores (sm_90a): accumulator(shape), mma(acc, a, a_index, b, b_index, scale_d=True,
# b_major="k", b_rows=n) on swizzled shared arrays, fence(), commit_group(), wait_group(n, acc...)
wgmma = _Space("wgmma", ("accumulator", "mma", "fence", "fence_operand", "commit_group", "wait_group"))
# id(): thread.idx.x // 128, warp-uniform; setmaxnreg_inc(n) / setmaxnreg_dec(n) (sm_90a)
warpgroup = _Space("warpgroup", ("id", "setmaxnreg_inc", "setmaxnreg_dec"))
# shared-memory barriers with transaction counts (sm_90): array(n), init(bar, count), arrive(bar),
# arrive_expect_tx(bar, nbytes), expect_tx(bar, nbytes), try_wait(bar, phase), wait(bar, phase),
# fence_init(), inval(bar); a barrier is bars[k] of bars = mbarrier.array(n)
mbarrier = _Space("mbarrier", ("array", "init", "arrive", "arrive_expect_tx", "expect_tx", "try_wait", "wait",
                               "fence_init", "inval"))
# thread block clusters (sm_90; launch with cluster=): rank(), num_blocks(), sync(),
# arrive(relaxed=False), wait(); map_shared(arr, rank): another block's shared array (distributed
# shared memory); mbarrier_arrive(bars[k], rank): an arrival on another block's barrier
cluster = _Space("cluster", ("rank", "num_blocks", "sync", "arrive", "wait", "map_shared", "mbarrier_arrive"))


def asm(template: str, *, outputs: tuple[tuple[str, Any], ...] = (), inputs: tuple[tuple[str, Any], ...] = (),
        memory: bool = False) -> Any:
    """Inline PTX, only inside ``with ox.unsafe():``. ``outputs``: ``("=r", u32)`` pairs of a
    constraint and the type produced; ``inputs``: ``("r", value)`` pairs; operands are ``$0``,
    ``$1``, ... (outputs first). Gives None, the one output, or a tuple of them."""
    _device_only("asm")


def static_range(*args: int) -> range:
    """A range the compiler unrolls completely; its bounds must be compile-time constants."""
    return range(*args)


def unroll(loop: range, count: int = 0) -> range:
    """``for i in unroll(range(n), 4)``: a run-time loop the compiler unrolls ``count`` times
    (CUDA's ``#pragma unroll 4``; without a count, ``#pragma unroll``; 1 keeps it rolled)."""
    return loop
block = _Block()
grid = _Grid()


@contextmanager
def unsafe() -> Iterator[None]:
    """Marks code allowed to write a ``MutSlice`` anywhere."""
    yield
