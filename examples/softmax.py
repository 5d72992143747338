"""Row softmax: ``softmax_rows``, one block per row; block-wide max and sum through warp
shuffles and shared memory; exp via libdevice. It reads the row three times.

``softmax_rows4`` is the kernel to call for bandwidth (through :func:`softmax`, which picks its
launch): one block per row as well, but the row is read from global memory once, into
registers, with 16-byte loads: the kernel sees the row as ``nvec = ncols / 4`` vectors
(``Slice[f32x4]``) and thread ``t`` keeps vectors ``t, t + B, ..., t + (VPT - 1) B`` of a block
of ``B`` threads in a local array that ``ox.static_range`` indexes with constants, so it lives
in registers (``VPT``, a ``Constexpr`` of 1, 2, 4 or 8: 4096 floats in 256 threads are 4 vectors,
16 floats, a thread). Lanes past the row's end hold the lowest float, which changes neither the
maximum nor the sum. The maximum and then the sum of ``exp(x - max)`` are reduced by warp
shuffles, one shared slot per warp and a second shuffle reduction (two barriers in all); the
exponentials stay in registers and are written once, multiplied by ``1 / sum``, with 16-byte
stores. ``exp`` is ``ox.math.exp`` (libdevice's ``expf``, within 2 ulp), so every element is
within 1e-5 relative of a float64 softmax, as torch.softmax is. Short rows (fewer than 256
vectors) take a block of the next power of two of threads, at least a warp; rows longer than
``8 * 4 * 256`` floats take a looped path in the same kernel (three reads, the last two mostly
from L2). Rows whose length is not a multiple of 4, or data not 16-byte aligned, go to
``softmax_rows``. Every index is proven in range from the launch preconditions and the guards
(``oxide inspect examples/softmax.py::softmax_rows4``: no check left in the device code).
"""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, f32x4, grid, i32, i64, thread, warp

NEG_INF = -3.4028234663852886e38


@ox.kernel
def softmax_rows(x: Slice[f32], ncols: i32, out: MutSlice[f32]) -> None:
    # one block per row; this proves every x[base + c] and out[base + c] below in bounds
    assert len(x) == i64(grid.dim.x) * ncols and len(out) == len(x)
    red = ox.shared.array(32, f32)
    base = i64(block.idx.x) * ncols
    lane = warp.lane()
    wid = warp.id()
    nwarps = block.dim.x // 32
    m = f32(NEG_INF)
    for c in range(thread.idx.x, ncols, block.dim.x):
        m = max(m, x[base + c])
    m = warp.reduce_max(m)
    if lane == 0:
        red[wid] = m
    block.sync()
    m = red[lane] if lane < nwarps else f32(NEG_INF)
    m = warp.reduce_max(m)
    block.sync()
    s = f32(0.0)
    for c in range(thread.idx.x, ncols, block.dim.x):
        s += ox.math.exp(x[base + c] - m)
    s = warp.reduce_sum(s)
    if lane == 0:
        red[wid] = s
    block.sync()
    s = red[lane] if lane < nwarps else f32(0.0)
    s = warp.reduce_sum(s)
    inv = f32(1.0) / s
    for c in range(thread.idx.x, ncols, block.dim.x):
        with ox.unsafe():
            out[base + c] = ox.math.exp(x[base + c] - m) * inv


# ---- the fast kernel ------------------------------------------------------------------------------

BLOCK = 256  # threads per block for rows of more than 256 vectors (1024 floats)
MAX_VPT = 8  # the most vectors a thread keeps in registers: rows up to 8 * 4 * 256 = 8192 floats



def max4(a: f32x4) -> f32:
    return max(max(a.x, a.y), max(a.z, a.w))


def sum4(a: f32x4) -> f32:
    return (a.x + a.y) + (a.z + a.w)


def exp4(a: f32x4) -> f32x4:
    return f32x4(ox.math.exp(a.x), ox.math.exp(a.y), ox.math.exp(a.z), ox.math.exp(a.w))


@ox.kernel(constexprs={"VPT": [1, 2, 4, 8]})
def softmax_rows4(x: Slice[f32x4], nvec: i32, out: MutSlice[f32x4], VPT: ox.Constexpr[int]) -> None:
    # one block per row of nvec vectors (4 * nvec floats); launch preconditions, checked on the
    # host, that prove every x[base + v] and out[base + v] below in bounds
    assert len(x) == i64(grid.dim.x) * nvec and len(out) == len(x)
    assert block.dim.x == 32 or block.dim.x == 64 or block.dim.x == 128 or block.dim.x == 256 or \
        block.dim.x == 512 or block.dim.x == 1024  # whole warps
    red_max = ox.shared.array(32, f32)
    red_sum = ox.shared.array(32, f32)
    base = i64(block.idx.x) * nvec
    t = i64(thread.idx.x)
    bd = i64(block.dim.x)
    lane = warp.lane()
    wid = warp.id()
    nwarps = block.dim.x // 32
    fits = nvec <= VPT * bd  # the row in registers, VPT vectors a thread (the same in every thread)
    vals = ox.local.array(VPT, f32x4)
    # 1. the row's maximum: one read of the row from global memory
    m = f32(NEG_INF)
    if fits:
        for u in ox.static_range(VPT):
            c = t + u * bd  # vector c of the row
            a = f32x4(NEG_INF)  # past the row's end: padding that changes neither max nor sum
            if c < nvec:
                a = x[base + c]
            vals[u] = a
            m = max(m, max4(a))
    else:  # a longer row: read three times (the second and third mostly from L2)
        for c1 in range(t, i64(nvec), bd):
            m = max(m, max4(x[base + c1]))
    m = warp.reduce_max(m)
    if lane == 0:
        red_max[wid] = m
    block.sync()
    m = warp.reduce_max(red_max[lane] if lane < nwarps else f32(NEG_INF))
    # 2. the sum of the exponentials (padding lanes: exp(NEG_INF - m) == 0)
    s = f32(0.0)
    if fits:
        for u in ox.static_range(VPT):
            e = exp4(vals[u] - m)
            vals[u] = e
            s += sum4(e)
    else:
        for c2 in range(t, i64(nvec), bd):
            s += sum4(exp4(x[base + c2] - m))
    s = warp.reduce_sum(s)
    if lane == 0:
        red_sum[wid] = s
    block.sync()
    inv = f32(1.0) / warp.reduce_sum(red_sum[lane] if lane < nwarps else f32(0.0))
    # 3. one write of the row
    if fits:
        for u in ox.static_range(VPT):
            c3 = t + u * bd
            if c3 < nvec:
                with ox.unsafe():
                    out[base + c3] = vals[u] * inv
    else:
        for c4 in range(t, i64(nvec), bd):
            with ox.unsafe():
                out[base + c4] = exp4(x[base + c4] - m) * inv


def fast_launch(ncols: int) -> tuple[int, int]:
    """(threads per block, vectors per thread) of ``softmax_rows4`` for rows of ``ncols``
    floats (a multiple of 4): short rows one vector a thread in a block of a power of two (at
    least 32) threads, longer ones in blocks of ``BLOCK`` with the fewest vectors a thread that hold the
    row (``MAX_VPT`` and the looped path past 8192 floats)."""
    nvec = ncols // 4
    threads = 32
    while threads < BLOCK and threads < nvec:
        threads *= 2
    vpt = 1
    while vpt < MAX_VPT and vpt * threads < nvec:
        vpt *= 2
    return threads, vpt


def _address(a) -> int | None:  # type: ignore[no-untyped-def]
    """The address of an array's first element, where the array says (torch, CuPy, NumPy)."""
    if hasattr(a, "data_ptr"):
        return int(a.data_ptr())
    for name in ("__cuda_array_interface__", "__array_interface__"):
        interface = getattr(a, name, None)
        if interface is not None:
            return int(interface["data"][0])
    return None


class _Vectors:
    """An array of ``4 * m`` floats seen as ``(m, 4)`` through ``__cuda_array_interface__``, for
    arrays without ``reshape`` (``oxide.DeviceArray``)."""

    def __init__(self, a, m: int) -> None:  # type: ignore[no-untyped-def]
        self._a = a  # keeps the memory alive
        cai = dict(a.__cuda_array_interface__)
        cai["shape"], cai["strides"] = (m, 4), None
        self.__cuda_array_interface__ = cai


def _as_vectors(a, m: int):  # type: ignore[no-untyped-def]
    if hasattr(a, "reshape"):
        return a.reshape(m, 4)
    if hasattr(a, "__cuda_array_interface__"):
        return _Vectors(a, m)
    raise TypeError(f"softmax: cannot view a {type(a).__name__} as rows of 4 floats; pass a torch tensor, "
                    "a CuPy or NumPy array or an oxide.DeviceArray")


def softmax(x, ncols, out, stream=None):  # type: ignore[no-untyped-def]
    """``out`` = the softmax of each row of ``x`` (both flat, contiguous f32 arrays of
    ``rows * ncols`` elements, row-major). Rows of a multiple of 4 floats at 16-byte aligned
    addresses go to ``softmax_rows4`` (16-byte loads and stores, the row in registers), others to
    ``softmax_rows``."""
    n = len(x)
    if ncols <= 0 or n % ncols != 0 or len(out) != n:
        raise ValueError(f"softmax: x and out must hold rows * ncols elements, ncols >= 1; got len(x)={n}, "
                         f"len(out)={len(out)}, ncols={ncols}")
    rows = n // ncols
    if rows == 0:
        return
    extra = () if stream is None else (stream,)
    if ncols % 4 == 0 and all((_address(a) or 0) % 16 == 0 for a in (x, out)):
        threads, vpt = fast_launch(ncols)
        softmax_rows4[(rows, threads, *extra)](_as_vectors(x, n // 4), ncols // 4, _as_vectors(out, n // 4), vpt)
    else:
        softmax_rows[(rows, BLOCK, *extra)](x, ncols, out)
