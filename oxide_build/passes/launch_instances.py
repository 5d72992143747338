"""Launch instances: a kernel that bounds elimination versioned on launch-invariant facts
(``if len(x) >= n and block.dim.x <= 256: <fast copy> else: <checked copy>``,
``If.launch_versioned``) becomes two entry points, so that no thread evaluates the test.

The test reads only scalar arguments, view lengths, tensor shapes and the launch dimensions; its
launch-precondition encoding (``launch_preconditions.launch_expr``, ``oxide.abi.preconditions``)
goes into the manifest as the kernel's ``fast_condition``. The kernel keeps its symbol and the
checked copy (``Function.fast_symbol`` set: the versioning passes after this one leave it as
written, as they left the ``else`` branch); a second kernel, ``<symbol>__fast``
(``Function.fast_of``), has the same prefix (the leading asserts, which the next pass moves to
the runtime in both alike, and the shared arrays) and the fast copy. Every launcher evaluates the
condition over the packed arguments and launches the fast instance where it holds, the kernel as
written elsewhere: a failing access is reported as without the split, and a launcher that does not
know the fast instance (an older runtime) runs the checked copy, which is correct.

Kept in one kernel: a test the encoding cannot say (the length of a tensor, a parameter the kernel
assigns), or a program larger than a launcher's limits (``STACK_LIMIT``, ``KERNEL_PROGRAM_LIMIT``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from oxide.abi.preconditions import KERNEL_PROGRAM_LIMIT, STACK_LIMIT, compile_expression, stack_depth

from ..ir import nodes as ir
from .bounds_elimination import _clone
from .launch_preconditions import _slots, launch_expr

__all__ = ["FAST_SUFFIX", "LaunchInstances"]

FAST_SUFFIX = "__fast"


@dataclass(frozen=True)
class LaunchInstances:
    name: str = "launch-instances"

    def apply(self, program: ir.Program) -> ir.Program:
        taken = {f.symbol for f in program.functions}
        out: list[ir.Function] = []
        for fn in program.functions:
            out.append(fn)
            fast = _split(fn, taken)
            if fast is not None:
                out.append(fast)  # kernels stay ahead of device functions
                taken.add(fast.symbol)
        program.functions = out
        return program


def _split(fn: ir.Function, taken: set[str]) -> ir.Function | None:
    """The fast instance of ``fn`` (whose body becomes its checked copy), or None when ``fn`` is
    not a kernel versioned on a test the launchers can evaluate."""
    if not fn.is_kernel or not fn.body or fn.fast_symbol or fn.fast_of:
        return None
    last = fn.body[-1]
    if not (isinstance(last, ir.If) and last.launch_versioned):
        return None
    symbol = fn.symbol + FAST_SUFFIX
    if symbol in taken:
        return None
    assigned = {s.name for s in ir.statements(fn.body) if isinstance(s, ir.Assign)}
    expr = launch_expr(last.cond, _slots(fn), assigned)
    if expr is None:
        return None
    code = compile_expression(expr)
    if stack_depth(code) > STACK_LIMIT or len(code) + 1 > KERNEL_PROGRAM_LIMIT:
        return None
    prefix = fn.body[:-1]
    fast = replace(
        fn, symbol=symbol, body=_clone(prefix, {}) + last.then, locals=dict(fn.locals),
        preconditions=list(fn.preconditions), assign_counts=dict(fn.assign_counts),
        grid_sites=dict(fn.grid_sites), unit_extents=dict(fn.unit_extents),
        specialization=dict(fn.specialization), fast_of=fn.symbol)
    fn.body = prefix + last.orelse
    fn.fast_symbol, fn.fast_condition = symbol, expr
    return fast
