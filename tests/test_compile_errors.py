"""Compile errors: each mistake gets file:line:col, the source line, a caret and a hint.

The expected texts are golden: read them when they change."""
from __future__ import annotations

from pathlib import Path

import pytest

from oxide import CompileError
from oxide_build.compile import CompileOptions, compile_module

HEADER = 'import oxide as ox\nfrom oxide import Slice, DisjointSlice, MutSlice, Tensor, MutTensor, DisjointTensor, f32, f64, i32, i64, u32, thread, block, warp\n'

CASES: dict[str, tuple[str, str]] = {
    'unsupported_syntax_try': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    try:\n        out[i] = x[i]\n    except Exception:\n        pass\n',
        'kern.py:7:5: error: try/except is not supported in kernels or device functions\n        try:\n        ^\n  hint: kernels cannot raise or catch exceptions; use `assert` for checks',
    ),
    'type_mismatch_assign': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[i32]) -> None:\n    i = thread.index_1d()\n    out[i] = x[i]\n',
        'kern.py:7:14: error: store into out needs i32, got f32\n        out[i] = x[i]\n                 ^\n  hint: convert explicitly with i32(...)',
    ),
    'disjoint_write_not_thread_index': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    j = i + 1\n    out[j] = x[i]\n',
        "kern.py:8:9: error: a DisjointSlice can only be written at the calling thread's ThreadIndex; 'j' is i64, which two threads may share\n        out[j] = x[i]\n            ^\n  hint: index with the value of thread.index_1d() (one element per thread); for any other write (one thread per block at out[block.idx.x], a loop) declare the parameter MutSlice[T] and write inside `with oxide.unsafe():`",
    ),
    'unknown_function': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = frobnicate(x[i])\n',
        "kern.py:7:14: error: unknown function 'frobnicate'\n        out[i] = frobnicate(x[i])\n                 ^\n  hint: call a function defined at module level in this project, or an oxide intrinsic",
    ),
    'write_read_only_slice': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    x[i] = 1.0\n',
        "kern.py:7:5: error: 'x' is a read-only Slice\n        x[i] = 1.0\n        ^\n  hint: declare the parameter DisjointSlice[T] to write one element per thread",
    ),
    'mutslice_outside_unsafe': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: MutSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[0] = x[i]\n',
        "kern.py:7:5: error: writing the MutSlice 'out' needs `with oxide.unsafe():`\n        out[0] = x[i]\n        ^\n  hint: wrap the write in `with oxide.unsafe():`, or use a DisjointSlice",
    ),
    'missing_annotation': (
        '\n@ox.kernel\ndef k(x, out: DisjointSlice[f32]) -> None:\n    pass\n',
        "kern.py:5:7: error: parameter 'x' has no type annotation\n    def k(x, out: DisjointSlice[f32]) -> None:\n          ^\n  hint: annotate it, e.g. `x: Slice[f32]` or `a: f32`",
    ),
    'kernel_returns_value': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> f32:\n    return x[0]\n',
        'kern.py:5:50: error: a kernel cannot return a value\n    def k(x: Slice[f32], out: DisjointSlice[f32]) -> f32:\n                                                     ^\n  hint: annotate it `-> None` and write results into a DisjointSlice parameter',
    ),
    'unknown_name': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = x[i] * scale\n',
        "kern.py:7:21: error: unknown name 'scale'\n        out[i] = x[i] * scale\n                        ^\n  hint: define it, or pass it as a parameter",
    ),
    'recursion': (
        '\ndef fact(n: i64) -> i64:\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = f32(fact(5))\n',
        'kern.py:7:16: error: recursion is not supported on the GPU (k -> fact -> fact)\n        return n * fact(n - 1)\n                   ^\n  hint: rewrite the recursion as a loop',
    ),
    'wrong_arg_count': (
        '\ndef axpy(a: f32, x: f32, y: f32) -> f32:\n    return a * x + y\n\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = axpy(x[i], 2.0)\n',
        'kern.py:10:14: error: axpy() takes 3 argument(s), got 2\n        out[i] = axpy(x[i], 2.0)\n                 ^\n  hint: see its definition at kern.py:4',
    ),
    'view_of_another_rank': (
        '\ndef get(x: Tensor[f32, 3], i: i64) -> f32:\n    return x[0, 0, i]\n\n@ox.kernel\ndef k(x: Tensor[f32, 7], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = get(x, i)\n',
        "kern.py:10:14: error: argument 'x' of get() needs Tensor[f32, 3], got Tensor[f32, 7]\n        out[i] = get(x, i)\n                 ^\n  hint: declare the parameter Tensor[f32, 7] at kern.py:4, or pass a view of that shape",
    ),
    'tensor_passed_as_slice': (
        '\ndef get(x: Slice[f32], i: i64) -> f32:\n    return x[i]\n\n@ox.kernel\ndef k(x: Tensor[f32, 2], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = get(x, i)\n',
        "kern.py:10:14: error: argument 'x' of get() needs Slice[f32], got Tensor[f32, 2]\n        out[i] = get(x, i)\n                 ^\n  hint: declare the parameter Tensor[f32, 2] at kern.py:4, or pass a view of that shape",
    ),
    'signed_unsigned_mix': (
        # i32 + u32 is u32 (C's rule); an i32 local cannot hold every u32
        '\n@ox.kernel\ndef k(a: i32, b: u32, out: DisjointSlice[i32]) -> None:\n    v: i32 = a + b\n',
        "kern.py:6:5: error: assignment to 'v' needs i32, got u32\n        v: i32 = a + b\n        ^\n  hint: convert explicitly with i32(...)",
    ),
    'float_index': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = x[1.5]\n',
        'kern.py:7:16: error: view index must be an integer, got f64\n        out[i] = x[1.5]\n                   ^\n  hint: convert it with i64(...)',
    ),
    'unknown_type': (
        '\n@ox.kernel\ndef k(x: Slice[float32], out: DisjointSlice[f32]) -> None:\n    pass\n',
        "kern.py:5:16: error: unknown type 'float32' in parameter 'x'\n    def k(x: Slice[float32], out: DisjointSlice[f32]) -> None:\n                   ^\n  hint: use a scalar type from oxide (i32, i64, u32, u64, f32, f64, bool), a view like Slice[f32], or a TypeVar",
    ),
    'print_of_a_view': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    print(x)\n',
        'kern.py:6:11: error: print() cannot print Slice[f32]: print() in a kernel takes numbers, bools, string literals and f-strings (docs/language.md, "print() in kernels")\n        print(x)\n              ^\n  hint: print an element, e.g. x[i], or len(x)',
    ),
    'thread_index_reassigned': (
        # C's `idx /= HD` on its thread index: the name is a plain i64, which a DisjointSlice refuses
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    i = i + 1\n    out[i] = x[0]\n',
        "kern.py:8:9: error: a DisjointSlice can only be written at the calling thread's ThreadIndex; 'i' is i64, which two threads may share (it held thread.index_1d(), but the function assigns it again, so it is a plain i64)\n        out[i] = x[0]\n            ^\n  hint: keep thread.index_1d() in a name that is never assigned again, and compute the new value into another name; index with the value of thread.index_1d() (one element per thread); for any other write (one thread per block at out[block.idx.x], a loop) declare the parameter MutSlice[T] and write inside `with oxide.unsafe():`",
    ),
    'pow_operator': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = x[i] ** 2\n',
        'kern.py:7:14: error: operator ** is not supported\n        out[i] = x[i] ** 2\n                 ^\n  hint: write x * x for squares',
    ),
    'call_kernel_from_kernel': (
        '\n@ox.kernel\ndef other(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    pass\n\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    other(x, out)\n',
        "kern.py:10:5: error: 'other' is a kernel and cannot be called from device code\n        other(x, out)\n        ^\n  hint: move the shared code into a plain function and call that",
    ),
    'assign_to_view_param': (
        '\n@ox.kernel\ndef k(x: Slice[f32], y: Slice[f32], out: DisjointSlice[f32]) -> None:\n    x = y\n',
        "kern.py:6:5: error: cannot assign to the view parameter 'x'\n        x = y\n        ^\n  hint: views are fixed for the whole kernel; use a new local name",
    ),
    'while_else': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    n = 0\n    while n < 3:\n        n += 1\n    else:\n        n = 5\n',
        'kern.py:10:9: error: while/else is not supported\n            n = 5\n            ^\n  hint: move the else block after the loop',
    ),
    'for_over_view': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    for v in x:\n        pass\n',
        "kern.py:6:14: error: only `for ... in range(...)` loops are supported, not 'x'\n        for v in x:\n                 ^\n  hint: iterate over range(start, stop, step), ox.static_range(...) or a tuple of compile-time integers",
    ),
    'typevar_constraint_violation': (
        '\nT = ox.TypeVar("T", f32, f64)\n\ndef twice(v: T) -> T:\n    return v + v\n\n@ox.kernel\ndef k(x: Slice[i32], out: DisjointSlice[i32]) -> None:\n    i = thread.index_1d()\n    out[i] = twice(x[i])\n',
        "kern.py:12:14: error: argument 'v' of twice() is i32, but T allows only f32, f64\n        out[i] = twice(x[i])\n                 ^\n  hint: convert the argument, or add the type to the TypeVar's constraints",
    ),
    'float_literal_to_int': (
        '\n@ox.kernel\ndef k(out: DisjointSlice[i32]) -> None:\n    i = thread.index_1d()\n    out[i] = 0.5\n',
        'kern.py:7:14: error: store into out needs i32, got the float literal 0.5\n        out[i] = 0.5\n                 ^\n  hint: convert explicitly with i32(...)',
    ),
    'literal_overflow': (
        '\n@ox.kernel\ndef k(out: DisjointSlice[i32]) -> None:\n    i = thread.index_1d()\n    out[i] = 3000000000\n',
        'kern.py:7:14: error: the literal 3000000000 does not fit in i32\n        out[i] = 3000000000\n                 ^\n  hint: use a wider type, e.g. i64 or u32',
    ),
    'block_sync_divergent': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    if i < len(x):\n        block.sync()\n',
        'kern.py:8:9: error: block.sync() under a condition that differs between threads can deadlock the block\n            block.sync()\n            ^\n  hint: move block.sync() out of the branch or loop so every thread reaches it; if every thread sees the same condition (a flag one thread wrote to shared memory before a barrier), test it through a block vote, which every thread gets alike: `if block.sync_or(flag[0]):`',
    ),
    'shared_array_runtime_shape': (
        '\n@ox.kernel\ndef k(n: i32, out: DisjointSlice[f32]) -> None:\n    tile = ox.shared.array(n, f32)\n',
        'kern.py:6:28: error: array dimensions must be positive compile-time integers, got n\n        tile = ox.shared.array(n, f32)\n                               ^\n  hint: \'n\' is a run-time parameter: make it `n: ox.Constexpr[int]` and list its values; use shared.dynamic for launch-time sizes',
    ),
    'atomic_on_readonly_slice': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    ox.atomic.add(x, 0, 1.0)\n',
        "kern.py:6:19: error: atomic.add cannot modify the read-only Slice 'x'\n        ox.atomic.add(x, 0, 1.0)\n                      ^\n  hint: declare the parameter DisjointSlice[T] or MutSlice[T]",
    ),
    'static_range_not_constant': (
        '\n@ox.kernel\ndef k(n: i32, out: DisjointSlice[f32]) -> None:\n    for j in ox.static_range(n):\n        pass\n',
        'kern.py:6:30: error: static_range() needs compile-time integers, got n\n        for j in ox.static_range(n):\n                                 ^\n  hint: \'n\' is a run-time parameter: make it `n: ox.Constexpr[int]` and list its values; or loop with range()',
    ),
    'break_in_static_range': (
        '\n@ox.kernel\ndef k(out: DisjointSlice[f32]) -> None:\n    for j in ox.static_range(4):\n        break\n',
        'kern.py:7:9: error: `break` is not allowed in a static_range loop\n            break\n            ^\n  hint: use range() instead',
    ),
    'tensor_wrong_index_count': (
        '\n@ox.kernel\ndef k(x: Tensor[f32, 2], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = x[i]\n',
        'kern.py:7:16: error: this tensor has 2 dimension(s): index it with 2 value(s)\n        out[i] = x[i]\n                   ^\n  hint: write t[i0, i1]',
    ),
    'disjoint_tensor_not_own_index': (
        '\n@ox.kernel\ndef k(x: Tensor[f32, 2], out: DisjointTensor[f32, 2]) -> None:\n    r, c = thread.index_2d()\n    out[r + 1, c] = x[r, c]\n',
        "kern.py:7:9: error: a DisjointTensor is written only at the calling thread's own index; 'r + 1' is not one\n        out[r + 1, c] = x[r, c]\n            ^\n  hint: index it with `row, col = thread.index_2d()` as out[row, col], or out[block.idx.y, col]; or at every digit of a ThreadIndex split by values every thread shares (c = i % dim, r = i // dim, then out[r, c]), in the kernel",
    ),
    'write_read_only_tensor': (
        '\n@ox.kernel\ndef k(x: Tensor[f32, 2], out: DisjointSlice[f32]) -> None:\n    r, c = thread.index_2d()\n    x[r, c] = 0.0\n',
        "kern.py:7:5: error: 'x' is a read-only Tensor\n        x[r, c] = 0.0\n        ^\n  hint: declare it MutTensor (writes inside `with oxide.unsafe():`) or DisjointTensor",
    ),
    'constexpr_without_values': (
        '\n@ox.kernel\ndef k(N: ox.Constexpr[int], out: DisjointSlice[f32]) -> None:\n    pass\n',
        'kern.py:5:7: error: the Constexpr parameter \'N\' needs its values listed\n    def k(N: ox.Constexpr[int], out: DisjointSlice[f32]) -> None:\n          ^\n  hint: write @kernel(constexprs={"N": [...]})',
    ),
    'unknown_kernel_option': (
        '\n@ox.kernel(fast=True)\ndef k(out: DisjointSlice[f32]) -> None:\n    pass\n',
        "kern.py:4:17: error: unknown @kernel option 'fast'\n    @ox.kernel(fast=True)\n                    ^\n  hint: known options: bounds_check, launch_bounds, max_registers, constexprs, index32",
    ),
    'unpack_count_mismatch': (
        '\ndef pair(a: f32) -> tuple[f32, f32]:\n    return a, a\n\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    a, b, c = pair(x[i])\n',
        'kern.py:10:5: error: cannot unpack 2 values into 3 names\n        a, b, c = pair(x[i])\n        ^\n  hint: use exactly 2 names on the left',
    ),
    'shuffle_width_not_power_of_two': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = warp.shfl_down(x[i], 1, 12)\n',
        'kern.py:7:38: error: the shuffle width must be a power of two ≤ 32\n        out[i] = warp.shfl_down(x[i], 1, 12)\n                                         ^\n  hint: use 1, 2, 4, 8, 16 or 32',
    ),
    'math_on_view': (
        '\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    out[i] = ox.math.exp(x)\n',
        'kern.py:7:26: error: math.exp needs numbers, got Slice[f32]\n        out[i] = ox.math.exp(x)\n                             ^\n  hint: index the view to get an element',
    ),
    'array_index_count': (
        '\n@ox.kernel\ndef k(out: DisjointSlice[f32]) -> None:\n    tile = ox.shared.array((32, 32), f32)\n    tile[0] = 1.0\n',
        'kern.py:7:10: error: this array has 2 dimensions: index it as a[i0, i1]\n        tile[0] = 1.0\n             ^\n  hint: give one index per dimension, separated by commas',
    ),
    # (a shared array declared in a loop body is allowed: one array, as __shared__ in C++)
    'array_declared_twice': (
        '\n@ox.kernel\ndef k(out: DisjointSlice[f32]) -> None:\n    tile = ox.shared.array(32, f32)\n    tile = ox.shared.array(64, f32)\n',
        "kern.py:7:5: error: 'tile' is already defined; an array needs a name of its own\n        tile = ox.shared.array(64, f32)\n        ^\n  hint: a local array of the same shape and type may be declared again (it is the same array); a shared array or one of another shape needs a new name",
    ),
    'unknown_intrinsic': (
        '\n@ox.kernel\ndef k(out: DisjointSlice[f32]) -> None:\n    ox.frobnicate()\n',
        'kern.py:6:5: error: oxide.frobnicate does not exist\n        ox.frobnicate()\n        ^\n  hint: see docs/language.md for the names of the oxide namespace',
    ),
    'constant_index_out_of_bounds': (
        '\n@ox.kernel\ndef k(out: DisjointSlice[f32]) -> None:\n    tile = ox.shared.array(32, f32)\n    tile[32] = 1.0\n',
        'kern.py:7:5: error: index 32 is out of bounds for an array of 32 elements\n        tile[32] = 1.0\n        ^\n  hint: valid indices are 0 to 31',
    ),
    'atomic_unknown_scope': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32]) -> None:\n    ox.atomic.add(h, 0, 1, scope="warp")\n',
        'kern.py:6:34: error: unknown atomic scope \'warp\'\n        ox.atomic.add(h, 0, 1, scope="warp")\n                                     ^\n  hint: write one of "block", "cta", "device", "gpu", "system", "sys"',
    ),
    'atomic_scope_not_constant': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32], s: i32) -> None:\n    ox.atomic.max(h, 0, 1, scope=s)\n',
        'kern.py:6:34: error: the scope of oxide.atomic.max() must be a compile-time string, got s\n        ox.atomic.max(h, 0, 1, scope=s)\n                                     ^\n  hint: write one of "block", "cta", "device", "gpu", "system", "sys"',
    ),
    'atomic_unknown_keyword': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32]) -> None:\n    ox.atomic.cas(h, 0, 1, 2, order="relaxed")\n',
        'kern.py:6:31: error: oxide.atomic.cas() got an unexpected keyword argument \'order\'\n        ox.atomic.cas(h, 0, 1, 2, order="relaxed")\n                                  ^\n  hint: atomics take one keyword: scope="block", "device" (the default) or "system"',
    ),
    'atomic_load_without_order': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32], out: DisjointSlice[u32]) -> None:\n    i = thread.index_1d()\n    out[i] = ox.atomic.load(h, 0)\n',
        'kern.py:7:14: error: oxide.atomic.load() needs its memory order: order="relaxed" or order="acquire"\n        out[i] = ox.atomic.load(h, 0)\n                 ^\n  hint: relaxed orders no other access; acquire: this thread\'s later accesses stay after it',
    ),
    'atomic_load_release': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32], out: DisjointSlice[u32]) -> None:\n    i = thread.index_1d()\n    out[i] = ox.atomic.load(h, 0, order="release")\n',
        'kern.py:7:41: error: oxide.atomic.load(): a load cannot release\n        out[i] = ox.atomic.load(h, 0, order="release")\n                                            ^\n  hint: write order="relaxed" or order="acquire"',
    ),
    'atomic_store_acquire': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32]) -> None:\n    ox.atomic.store(h, 0, 1, order="acquire")\n',
        'kern.py:6:36: error: oxide.atomic.store(): a store cannot acquire\n        ox.atomic.store(h, 0, 1, order="acquire")\n                                       ^\n  hint: write order="relaxed" or order="release"',
    ),
    'atomic_store_read_only': (
        '\n@ox.kernel\ndef k(h: Slice[u32]) -> None:\n    ox.atomic.store(h, 0, 1, order="release")\n',
        'kern.py:6:21: error: atomic.store cannot modify the read-only Slice \'h\'\n        ox.atomic.store(h, 0, 1, order="release")\n                        ^\n  hint: declare the parameter MutSlice[T] (or DisjointSlice[T])',
    ),
    'atomic_load_order_not_constant': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32], o: i32, out: DisjointSlice[u32]) -> None:\n    i = thread.index_1d()\n    out[i] = ox.atomic.load(h, 0, order=o)\n',
        'kern.py:7:41: error: the order of oxide.atomic.load() must be a compile-time string, got o\n        out[i] = ox.atomic.load(h, 0, order=o)\n                                            ^\n  hint: write order="relaxed" or order="acquire"',
    ),
    'atomic_store_seq_cst': (
        '\n@ox.kernel\ndef k(h: MutSlice[i64]) -> None:\n    ox.atomic.store(h, 0, 1, order="seq_cst")\n',
        'kern.py:6:36: error: oxide.atomic.store(): unknown memory order \'seq_cst\'\n        ox.atomic.store(h, 0, 1, order="seq_cst")\n                                       ^\n  hint: write order="relaxed" or order="release"; ox.fence.device() is a sequentially consistent fence',
    ),
    'atomic_scope_by_position': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32]) -> None:\n    ox.atomic.add(h, 0, 1, "block")\n',
        'kern.py:6:28: error: oxide.atomic.add() takes the scope as a keyword\n        ox.atomic.add(h, 0, 1, "block")\n                               ^\n  hint: write scope="block"',
    ),
    'atomic_on_local_array': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32]) -> None:\n    a = ox.local.array(4, u32)\n    ox.atomic.add(a, 0, 1, scope="block")\n',
        'kern.py:7:19: error: atomic.add needs a view or shared array; \'a\' is a local array, which no other thread can see\n        ox.atomic.add(a, 0, 1, scope="block")\n                      ^\n  hint: update a local array with plain arithmetic',
    ),
    'keyword_in_other_intrinsic': (
        '\n@ox.kernel\ndef k(h: MutSlice[u32]) -> None:\n    x = ox.bits.popc(x=h[0])\n',
        'kern.py:6:24: error: keyword arguments are not supported in kernel calls\n        x = ox.bits.popc(x=h[0])\n                           ^\n  hint: pass arguments by position',
    ),
    'mixed_tuple_return': (
        '\ndef two(a: f32) -> tuple[f32, f32]:\n    if a > 0.0:\n        return a, a\n    return a\n\n@ox.kernel\ndef k(x: Slice[f32], out: DisjointSlice[f32]) -> None:\n    i = thread.index_1d()\n    a, b = two(x[i])\n',
        'kern.py:7:12: error: return value needs tuple[f32, f32], got f32\n        return a\n               ^\n  hint: return the same kind of value on every path',
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compile_error_message(name: str, tmp_path: Path) -> None:
    body, expected = CASES[name]
    src = tmp_path / "kern.py"
    src.write_text(HEADER + body)
    with pytest.raises(CompileError) as info:
        compile_module(src, "kern", CompileOptions(archs=("sm_90",), link_cubins=False))
    assert str(info.value).replace(str(src), "kern.py") == expected
    assert info.value.location is not None and info.value.location.line > 0
    assert "Traceback" not in str(info.value)
