"""Launch preconditions: a kernel's leading ``assert`` whose condition depends only on the
launch (scalar arguments, view lengths and shapes, ``grid.dim``, ``block.dim``) is checked by
the runtime before the launch (``oxide.abi.preconditions``), instead of by every thread.

The frontend marks the checks that stand in the kernel's prefix (before any statement that
could change what a later condition means, checks aside) as ``hoistable``; this pass moves
them, in order, from the body into ``Function.preconditions`` (ahead of the grid limits the
bounds-elimination pass recorded there) until it meets one it cannot encode, which stays on
the device with every check after it. One that the launchers could not evaluate, because its
program (``oxide.abi.preconditions.compile_expression``) needs more than ``STACK_LIMIT`` values
or the kernel's programs would pass ``KERNEL_PROGRAM_LIMIT`` instructions, stays on the device
the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oxide.abi.params import SCALAR_PARAM, STRUCT_PARAM, TENSOR_MAP_PARAM, param_slot_count
from oxide.abi.preconditions import ARITHMETIC, COMPARISONS, KERNEL_PROGRAM_LIMIT, STACK_LIMIT, compile_expression, stack_depth

from ..ir import nodes as ir
from ..ir.types import BOOL, StructType, TensorMapType, VectorType, ViewType, as_scalar, is_int, scalar_leaves

__all__ = ["LaunchPreconditions", "launch_expr", "program_size"]

# what DisjointLaunchShape, which runs after this pass, may add to a kernel's programs: four
# comparisons of three instructions joined by one truth and three ands, and its check
_LAUNCH_SHAPE_RESERVE = 4 * 3 + 4 + 1


def program_size(conditions: list[ir.LaunchCondition]) -> int:
    """The instructions a launcher runs for ``conditions``: their programs and one check each."""
    return sum(len(compile_expression(c.expr)) + 1 for c in conditions)


@dataclass(frozen=True)
class LaunchPreconditions:
    name: str = "launch-preconditions"

    def apply(self, program: ir.Program) -> ir.Program:
        for fn in program.functions:
            if fn.is_kernel and any(isinstance(s, ir.Check) and s.hoistable for s in fn.body):
                self._hoist(fn)
        return program

    @staticmethod
    def _hoist(fn: ir.Function) -> None:
        slots = _slots(fn)
        assigned = {s.name for s in ir.statements(fn.body) if isinstance(s, ir.Assign)}
        hoisted: list[ir.LaunchCondition] = []
        body: list[ir.Stmt] = []
        prefix = True
        size = program_size(fn.preconditions) + _LAUNCH_SHAPE_RESERVE
        for s in fn.body:
            if prefix and isinstance(s, ir.Check) and s.hoistable:
                expr = launch_expr(s.cond, slots, assigned)
                program = compile_expression(expr) if expr is not None else []
                if expr is not None and stack_depth(program) <= STACK_LIMIT and \
                        size + len(program) + 1 <= KERNEL_PROGRAM_LIMIT:
                    hoisted.append(ir.LaunchCondition(s.site, expr))
                    size += len(program) + 1
                    continue
                prefix = False  # it stays on the device: later conditions may rely on it
            body.append(s)
        fn.body = body
        fn.preconditions = hoisted + fn.preconditions


def _slots(fn: ir.Function) -> dict[str, int]:
    """Parameter name -> its first slot in the parameter block (``oxide.abi.params``)."""
    slots: dict[str, int] = {}
    k = 0
    for p in fn.params:
        slots[p.name] = k
        if isinstance(p.ty, ViewType):
            k += param_slot_count(p.ty.kind, p.ty.ndim)
        elif isinstance(p.ty, (StructType, VectorType)):
            k += param_slot_count(STRUCT_PARAM, fields=len(scalar_leaves(p.ty)))
        elif isinstance(p.ty, TensorMapType):
            k += param_slot_count(TENSOR_MAP_PARAM)
        else:
            k += param_slot_count(SCALAR_PARAM)
    return slots


def launch_expr(e: ir.Expr, slots: dict[str, int], assigned: set[str]) -> list[Any] | None:
    """``e`` in the launch-precondition encoding, or None when it depends on more than the
    launch arguments and dimensions (or on a parameter the kernel assigns)."""
    def enc(x: ir.Expr) -> list[Any] | None:
        return launch_expr(x, slots, assigned)

    if isinstance(e, ir.Const):
        return ["const", int(e.value)] if isinstance(e.value, (bool, int)) else None
    if isinstance(e, ir.Var):
        slot = slots.get(e.name)
        scalar = as_scalar(e.ty)
        if slot is None or e.name in assigned or scalar is None or scalar.kind not in ("int", "uint", "bool"):
            return None
        return ["arg", slot]
    if isinstance(e, ir.ViewLen) and isinstance(e.view, ir.Var) and isinstance(e.view.ty, ViewType):
        slot = slots.get(e.view.name)
        return ["arg", slot + 1] if slot is not None and not e.view.ty.is_tensor else None
    if (isinstance(e, ir.ViewDim) and e.which == "shape" and isinstance(e.view, ir.Var)
            and isinstance(e.view.ty, ViewType) and e.view.ty.is_tensor):
        slot = slots.get(e.view.name)
        return ["arg", slot + 1 + e.axis] if slot is not None else None
    if isinstance(e, ir.SpecialReg) and e.name[:-2] in ("nctaid", "ntid"):
        return ["grid" if e.name.startswith("nctaid") else "block", "xyz".index(e.name[-1])]
    if isinstance(e, ir.Cast):
        inner = enc(e.operand)
        ok = e.ty.kind in ("int", "uint", "bool") and (is_int(e.operand.ty) or e.operand.ty == BOOL)
        return ["cast", e.ty.name, inner] if inner is not None and ok else None
    if isinstance(e, ir.BinOp) and e.op in ARITHMETIC and e.ty.kind in ("int", "uint"):
        a, b = enc(e.left), enc(e.right)
        return [ARITHMETIC[e.op], e.ty.name, a, b] if a is not None and b is not None else None
    if isinstance(e, ir.Neg) and e.ty.kind in ("int", "uint"):
        a = enc(e.operand)
        return ["neg", e.ty.name, a] if a is not None else None
    if isinstance(e, ir.Compare) and e.operand_ty.kind in ("int", "uint", "bool"):
        a, b = enc(e.left), enc(e.right)
        return [COMPARISONS[e.op], a, b] if a is not None and b is not None else None
    if isinstance(e, ir.BoolOp):
        parts = [enc(v) for v in e.values]
        return [e.op.value, parts] if all(p is not None for p in parts) else None
    if isinstance(e, ir.Not):
        a = enc(e.operand)
        return ["not", a] if a is not None else None
    return None
