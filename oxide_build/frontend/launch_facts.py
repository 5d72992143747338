"""What the translation of a kernel learns for its launch: the launch preconditions its
``DisjointTensor`` writes need, the launch extents that must be 1 for its disjoint writes at a
``ThreadIndex`` to be one thread's, and whether its leading asserts may still become launch
preconditions (passes/launch_preconditions.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.nodes import LaunchCondition

__all__ = ["LaunchFacts"]


@dataclass
class LaunchFacts:
    """The launch facts of one function instance, as its translation records them."""

    # whether every top-level statement so far left what a later assert means unchanged
    prefix_open: bool
    # (extent, write) pairs already made launch preconditions by a DisjointTensor write
    disjoint_extents: set[tuple[str, str]] = field(default_factory=set)
    # launch extents that must be 1 (index_1d() leaves out y and z, index_2d() z):
    # extent -> (the write, line, col)
    unit_extents: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    # launch preconditions the translation itself records (DisjointTensor extents)
    preconditions: list[LaunchCondition] = field(default_factory=list)
