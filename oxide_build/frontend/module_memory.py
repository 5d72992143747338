"""Module-level arrays in constant and global memory: what a declaration such as

    WEIGHTS = ox.constant.array(5, f32, init=(0.1, 0.2, 0.4, 0.2, 0.1))   # __constant__ float[5]
    COUNTER = ox.global_memory.array(1, u32)                              # __device__ unsigned[1]
    OFFSETS = (0, 1, 3, 7)                                                # a tuple of numbers: constant i64

declares (read from the source, never executed) and the ``ModuleArrayDecl`` a kernel that
names it refers to. The host reads and writes them through the same objects
(``oxide.lang.module_memory``; docs/runtime.md).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from oxide.abi.manifest import ModuleArrayRecord
from oxide.lang.types import ScalarType

from ..ir import nodes as ir
from ..ir.types import BOOL, F64, I64, ArrayType
from ..scan import ModuleSource, constant_value
from .annotations import oxide_name, resolve_annotation
from .promotion import fits

if TYPE_CHECKING:
    from .program import ProgramBuilder

__all__ = ["MEMORY_CALLS", "module_array_decl", "array_symbol", "module_array_records", "check_constant_memory"]

MEMORY_CALLS = {"constant.array": "constant", "global_memory.array": "global"}
MAX_ELEMENTS = 1 << 24
CONSTANT_MEMORY_BYTES = 64 * 1024  # CUDA's __constant__ space: 64 KiB for all of a module's arrays (ptxas)


def array_symbol(module: ModuleSource | str, name: str) -> str:
    dotted = module if isinstance(module, str) else module.name
    return f"__oxg_{dotted.replace('.', '_')}_{name}"


def module_array_records(program: ir.Program, module_name: str) -> tuple[ModuleArrayRecord, ...]:
    """The manifest's records of the arrays ``module_name`` declares (arrays of other modules
    that its device functions use are compiled in as copies, and not listed)."""
    out = []
    for decl in program.arrays:
        ty = decl.ty
        assert isinstance(ty, ArrayType) and ty.shape is not None
        if decl.symbol == array_symbol(module_name, decl.name):
            out.append(ModuleArrayRecord(decl.name, decl.symbol, ty.space, ty.elem.name, ty.shape))
    return tuple(sorted(out))


def module_array_decl(builder: ProgramBuilder, module: ModuleSource, name: str) -> ir.ModuleArrayDecl | None:
    """The declaration of the module-level array ``name`` of ``module``, or None when ``name``
    is no such array. A malformed declaration is a located error at its line."""
    sym = module.symbols.get(name)
    if sym is None or sym.kind != "unknown" or not isinstance(sym.node, (ast.Assign, ast.AnnAssign)):
        return None
    value = sym.node.value
    file = builder.relative_file(module)
    if isinstance(value, (ast.Tuple, ast.List)):
        values = _values(module, value, name)
        if values is None:
            return None  # not a tuple of numbers: not an array
        table_elem = BOOL if all(isinstance(v, bool) for v in values) else (
            F64 if any(isinstance(v, float) for v in values) else I64)
        table = ArrayType("constant", table_elem, (len(values),), read_only=True)
        return ir.ModuleArrayDecl(name, array_symbol(module, name), table, _checked(module, value, values, table_elem, name),
                                  file, value.lineno)
    if not isinstance(value, ast.Call):
        return None
    space = MEMORY_CALLS.get(oxide_name(module, value.func) or "")
    if space is None:
        return None
    call = f"ox.{'constant' if space == 'constant' else 'global_memory'}.array"
    init: ast.expr | None = None
    for kw in value.keywords:
        if kw.arg != "init":
            raise module.error(kw.value if kw.arg is None else kw, f"{call}() takes the keyword init= only",
                               f"write {name} = {call}(shape, dtype, init=(...))")
        init = kw.value
    if len(value.args) != 2:
        raise module.error(value, f"{call}() takes a shape and an element type, got {len(value.args)} argument(s)",
                           f"write {name} = {call}(16, f32) or {call}((4, 4), f32, init=(...))")
    shape = _shape(module, value.args[0], call)
    resolved = resolve_annotation(module, value.args[1], {}, f"the element type of {name}")
    if not isinstance(resolved, ScalarType):
        raise module.error(value.args[1], f"the elements of {name} must be a scalar type, e.g. f32")
    elem = resolved
    size = 1
    for d in shape:
        size *= d
    initial: tuple[int | float | bool, ...] | None = None
    if init is not None:
        values = _values(module, init, name)
        if values is None:
            raise module.error(init, f"init= of {name} must be a tuple of numbers (constants)",
                               "write the values out, e.g. init=(0.25, 0.5, 0.25)")
        if len(values) != size:
            raise module.error(init, f"init= of {name} has {len(values)} value(s); its shape {shape} holds {size}",
                               "give one value per element (nested tuples are read row by row)")
        initial = _checked(module, init, values, elem, name)
    ty = ArrayType(space, elem, shape, read_only=space == "constant")
    return ir.ModuleArrayDecl(name, array_symbol(module, name), ty, initial, file, value.lineno)


def _nbytes(decl: ir.ModuleArrayDecl) -> int:
    ty = decl.ty
    assert isinstance(ty, ArrayType) and ty.shape is not None
    n = ty.elem.itemsize
    for extent in ty.shape:
        n *= extent
    return n


def check_constant_memory(module: ModuleSource, decl: ir.ModuleArrayDecl, arrays: list[ir.ModuleArrayDecl]) -> None:
    """``decl``, a constant array the program has just taken in beside ``arrays`` (its module's
    and the other modules' its device functions use, all compiled into one PTX module), must not
    take the program's constant data past CUDA's 64 KiB (ptxas: "uses too much global constant
    data"): a located error at the declaration that crosses it."""
    if not isinstance(decl.ty, ArrayType) or decl.ty.space != "constant":
        return
    constant = [a for a in arrays if isinstance(a.ty, ArrayType) and a.ty.space == "constant"]
    total = sum(_nbytes(a) for a in constant)
    if total <= CONSTANT_MEMORY_BYTES:
        return
    sym = module.symbols.get(decl.name)
    node = sym.node.value if sym is not None and isinstance(sym.node, (ast.Assign, ast.AnnAssign)) else None
    others = [a for a in constant if a is not decl]
    with_others = (f"; with {', '.join(f'{a.name} ({_nbytes(a)} bytes)' for a in others)}, the program's constant "
                   f"data is {total} bytes" if others else "")
    raise module.error(node if node is not None else module.tree,
                       f"constant array {decl.name} takes {_nbytes(decl)} bytes{with_others}: more than the "
                       f"{CONSTANT_MEMORY_BYTES} bytes (64 KiB) of CUDA's constant memory",
                       "make it smaller, or put large tables in global memory: "
                       f"{decl.name} = ox.global_memory.array(shape, dtype), or a Slice parameter")


def _shape(module: ModuleSource, node: ast.expr, call: str) -> tuple[int, ...]:
    dims = node.elts if isinstance(node, ast.Tuple) else [node]
    shape: list[int] = []
    for d in dims:
        v = _number(module, d)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise module.error(d, f"the shape of {call}() takes positive integer constants",
                               "use literals or module-level integer constants")
        shape.append(v)
    total = 1
    for extent in shape:
        total *= extent
    if total > MAX_ELEMENTS:
        raise module.error(node, f"{call}() of {total} elements is too large for a module-level array",
                           "allocate large buffers on the host and pass them as views")
    return tuple(shape)


def _number(module: ModuleSource, node: ast.expr) -> int | float | bool | None:
    """The value of a constant expression of literals and module constants (``KERNEL_LENGTH``
    defined as ``2 * KERNEL_RADIUS + 1``, ``ROWS * COLS``), as the scan folded them."""
    known = {n: s.value for n, s in module.symbols.items() if s.kind == "constant" and s.value is not None}
    return constant_value(node, known)


def _values(module: ModuleSource, node: ast.expr, name: str) -> list[int | float | bool] | None:
    """The numbers of a (nested) tuple, row by row, or None when it holds something else."""
    out: list[int | float | bool] = []
    stack: list[ast.expr] = [node]
    while stack:
        e = stack.pop()
        if isinstance(e, (ast.Tuple, ast.List)):
            stack.extend(reversed(e.elts))
            continue
        v = _number(module, e)
        if v is None:
            return None
        out.append(v)
    return out if out else None


def _checked(module: ModuleSource, node: ast.expr, values: list[int | float | bool], elem: ScalarType,
             name: str) -> tuple[int | float | bool, ...]:
    for v in values:
        if elem.kind in ("int", "uint") and isinstance(v, float):
            raise module.error(node, f"{name} holds {elem.name}, but its values include the float {v}",
                               "give it a float element type, or write integers")
        if elem.kind in ("int", "uint") and not fits(int(v), elem):
            raise module.error(node, f"the value {v} of {name} does not fit in {elem.name}",
                               "use a wider element type")
    return tuple(values)
