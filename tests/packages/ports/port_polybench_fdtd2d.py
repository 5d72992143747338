"""2-D finite-difference time domain: three kernels per time step.

Ported from PolyBench-GPU 1.0, CUDA/FDTD-2D/fdtd2d.cu (`fdtd_step1_kernel`, `fdtd_step2_kernel`,
`fdtd_step3_kernel`), the way its author writes it: NX/NY as #defines (module constants), ex of
NX x (NY + 1), ey of (NX + 1) x NY, the source row from `_fict_[t]`."""
import oxide as ox
from oxide import MutSlice, Slice, block, f32, i32, thread

NX = 2048
NY = 2048


@ox.kernel
def fdtd_step1_kernel(_fict_: Slice[f32], ex: Slice[f32], ey: MutSlice[f32], hz: Slice[f32], t: i32) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x
    i = block.idx.y * block.dim.y + thread.idx.y
    if i < NX and j < NY:
        with ox.unsafe():
            if i == 0:
                ey[i * NY + j] = _fict_[t]
            else:
                ey[i * NY + j] = ey[i * NY + j] - 0.5 * (hz[i * NY + j] - hz[(i - 1) * NY + j])


@ox.kernel
def fdtd_step2_kernel(ex: MutSlice[f32], ey: Slice[f32], hz: Slice[f32], t: i32) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x
    i = block.idx.y * block.dim.y + thread.idx.y
    if i < NX and j < NY and j > 0:
        with ox.unsafe():
            ex[i * (NY + 1) + j] = ex[i * (NY + 1) + j] - 0.5 * (hz[i * NY + j] - hz[i * NY + (j - 1)])


@ox.kernel
def fdtd_step3_kernel(ex: Slice[f32], ey: Slice[f32], hz: MutSlice[f32], t: i32) -> None:
    j = block.idx.x * block.dim.x + thread.idx.x
    i = block.idx.y * block.dim.y + thread.idx.y
    if i < NX and j < NY:
        with ox.unsafe():
            hz[i * NY + j] = hz[i * NY + j] - 0.7 * (ex[i * (NY + 1) + (j + 1)] - ex[i * (NY + 1) + j]
                                                     + ey[(i + 1) * NY + j] - ey[i * NY + j])
