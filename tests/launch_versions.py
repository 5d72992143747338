"""How many copies of its body a compiled kernel has: bounds elimination may version a kernel at
launch (oxide_build/passes/bounds_elimination.py: ``if <the facts its proofs need>: <the body
unchecked> else: <the body as written>``, an ``ir.If`` marked ``launch_versioned``), so a test that
counts the operations of the body counts them per copy."""
from __future__ import annotations

from oxide_build.ir import nodes as ir

__all__ = ["body_copies"]


def body_copies(kernel: ir.Function) -> int:
    """2 when ``kernel``'s body was versioned at launch, 1 otherwise."""
    return 2 if any(isinstance(s, ir.If) and s.launch_versioned for s in ir.statements(kernel.body)) else 1
