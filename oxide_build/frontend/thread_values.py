"""Which values of one function instance may differ between the threads of a block, and how
many enclosing conditions depend on such values (``block.sync()`` there could deadlock): the
operand mode of passes/uniformity.py's analysis, as the translation goes.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..ir import nodes as ir
from ..passes.uniformity import differs_between_threads

__all__ = ["ThreadValues"]


@dataclass
class ThreadValues:
    """The locals known to differ between threads, and the divergent conditions around us."""

    varying: set[str] = field(default_factory=set)
    divergent_depth: int = 0

    def differ(self, value: ir.Expr) -> bool:
        """Whether ``value`` may differ between the threads of a block."""
        return differs_between_threads(value, self.varying)

    def assigned(self, name: str, value: ir.Expr) -> None:
        """``name`` now holds ``value``: it varies where the value does."""
        if self.differ(value):
            self.varying.add(name)

    @contextmanager
    def under(self, divergent: bool) -> Iterator[None]:
        """The body of a condition (or loop) that is ``divergent`` or not."""
        self.divergent_depth += divergent
        try:
            yield
        finally:
            self.divergent_depth -= divergent
