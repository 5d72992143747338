"""What the CPU device's host code and its scheduler agree on: the thread context the kernels
read their indices from, and the scheduler's functions they call (``backends/cpu/_fibers.c``
defines both). A leaf: the lowering (``lower/llvm.py``), the intrinsics' CPU forms and the CPU
backend read it."""
from __future__ import annotations

from typing import TYPE_CHECKING

from oxide.errors import CompileError

if TYPE_CHECKING:
    from llvmlite import ir as ll

__all__ = ["NoCpuForm", "NoCpuFormError", "CONTEXT_SYMBOL", "CONTEXT_FIELDS", "POSITION_FIELD", "SHARED_FIELD", "SPECIAL_REGISTER_FIELDS", "RUNTIME_FUNCTIONS", "context_type",
           "runtime_function_type"]



class NoCpuForm(Exception):
    """Host code (the CPU device) was asked for a GPU instruction it has no form of: an NVVM
    intrinsic, a libdevice function or a special register (``what``). The lowering turns it
    into a located ``CompileError`` naming the construct."""

    def __init__(self, what: str, hint: str = "") -> None:
        self.what = what
        self.hint = hint  # what to do instead, where there is more to say than the default
        super().__init__(what)


class NoCpuFormError(CompileError):
    """A function uses what the CPU device cannot run (located, naming the construct). The CPU
    lowering keeps it per function: the kernels that reach it are refused when launched, the
    module's other kernels run."""


CONTEXT_SYMBOL = "oxide_cpu_context"
# oxide_cpu_context_t, in order: tid[3], ctaid[3], ntid[3], nctaid[3] (i32), the block's shared
# memory (a pointer), the loop form's thread position (i64)
CONTEXT_FIELDS = ("tid", "ctaid", "ntid", "nctaid", "shared", "position")
SPECIAL_REGISTER_FIELDS = {"tid": 0, "ctaid": 1, "ntid": 2, "nctaid": 3}
SHARED_FIELD = 4
POSITION_FIELD = 5

# name -> (result, parameters) in the letters i (i32), l (i64), f (f32), p (i64*), b (i8*), v (void)
RUNTIME_FUNCTIONS = {
    "oxide_cpu_barrier": ("v", "i"),  # (barrier site)
    "oxide_cpu_block_vote": ("i", "ii"),  # (barrier site, predicate) -> threads whose predicate holds
    "oxide_cpu_warp_exchange": ("p", "il"),  # (mask, value) -> the 32 lanes' u64 values
    "oxide_cpu_grid_sync": ("v", "i"),  # (barrier site)
    "oxide_cpu_active_mask": ("i", "i"),  # (call site) -> the lanes of the warp at that call together
    "oxide_cpu_yield": ("v", ""),  # lets the launch's other threads run (nanosleep)
    "oxide_cpu_exit_thread": ("v", ""),  # ends the calling thread (after a failed check)
    "oxide_cpu_trap": ("v", ""),  # ends the launch (a failed check with no error record)
    # sanitizers: (address, bytes, access: 0 read / 1 write / 2 atomic read-modify-write / 3 atomic or
    # volatile load / 4 atomic or volatile store, access site, space: 1 global / 3 shared, the bytes a
    # store writes or null: racecheck's write-write check compares them with memory's)
    "oxide_cpu_access": ("v", "bliiib"),
    "oxide_cpu_fence": ("v", ""),  # racecheck: the running thread executed a fence (release/acquire)
    # memcheck of a local array at a run-time index: (address, bytes, access, access site, the array, its bytes)
    "oxide_cpu_local_access": ("v", "bliibl"),
    # fp8 (kind 0: e4m3, 1: e5m2): f32 -> the byte, rounded to nearest even and saturated to
    # the largest finite value (NaN stays NaN, PTX's cvt.rn.satfinite); the byte -> f32, exactly
    "oxide_cpu_to_fp8": ("i", "fi"),
    "oxide_cpu_from_fp8": ("f", "ii"),
}


def context_type() -> ll.Type:
    from llvmlite import ir as ll

    dims = ll.ArrayType(ll.IntType(32), 3)
    return ll.LiteralStructType([dims, dims, dims, dims, ll.PointerType(ll.IntType(8)), ll.IntType(64)])


def runtime_function_type(name: str) -> ll.FunctionType:
    from llvmlite import ir as ll

    letters = {"i": ll.IntType(32), "l": ll.IntType(64), "p": ll.PointerType(ll.IntType(64)),
               "b": ll.PointerType(ll.IntType(8)), "f": ll.FloatType(), "v": ll.VoidType()}
    result, params = RUNTIME_FUNCTIONS[name]
    return ll.FunctionType(letters[result], [letters[c] for c in params])
