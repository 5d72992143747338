"""Warp vote functions: any, all, and a vote written through a moved pointer.

Ported from NVIDIA cuda-samples, Samples/0_Introduction/simpleVoteIntrinsics/
simpleVote_kernel.cuh (`VoteAnyKernel1`, `VoteAllKernel2`, `VoteAnyKernel3`), the way its
author writes it: `int mask = 0xffffffff` as a local, the unsigned input used as the
predicate, the bool result stored into an unsigned array, a bool pointer moved to the
thread's three flags (`bool *offs = info + (tx * 3)`), `(warp_size * 3) / 2` in int."""
import oxide as ox
from oxide import MutSlice, Slice, boolean, i32, thread, u32, warp


@ox.kernel
def vote_any_kernel1(input: Slice[u32], result: MutSlice[u32], size: i32) -> None:
    tx = thread.idx.x
    mask = 0xffffffff
    with ox.unsafe():
        result[tx] = warp.any(input[tx], mask=mask)


@ox.kernel
def vote_all_kernel2(input: Slice[u32], result: MutSlice[u32], size: i32) -> None:
    tx = thread.idx.x
    mask = 0xffffffff
    with ox.unsafe():
        result[tx] = warp.all(input[tx], mask=mask)


@ox.kernel
def vote_any_kernel3(info: MutSlice[boolean], warp_size: i32) -> None:
    tx = thread.idx.x
    mask = 0xffffffff
    offs = info + tx * 3
    with ox.unsafe():
        offs[0] = warp.any(tx >= (warp_size * 3) // 2, mask=mask)
        offs[1] = True if tx >= (warp_size * 3) // 2 else False
        if warp.all(tx >= (warp_size * 3) // 2, mask=mask):
            offs[2] = True
