"""The contract between the compiler (``oxide_build``) and the runtime (``oxide.runtime``).

What crosses from one side to the other is described here once, and both sides read it:

- ``scalars``: the scalar types and their sizes;
- ``vectors``: the vector types (``f32x4``: four ``f32`` lanes), as a view's dtype names them;
- ``views``: the view kinds (``ViewKind``), their language names and properties;
- ``params``: the kernel parameter block (slots per parameter);
- ``preconditions``: the conditions checked at launch: the compiler's expressions and the
  programs (postfix code) the manifest holds and every launcher runs;
- ``error_record``: where a failing device-side check leaves its report;
- ``manifest``: the records of ``_oxide/<module>.json``;
- ``launcher``: the C launcher's dtype codes, array kinds and version; ``header`` writes its
  ``_abi.h`` from them.

A leaf: it imports nothing of oxide outside this package and nothing outside the standard
library (``tests/test_imports.py``), so the runtime needs no compiler to read it.
"""
from __future__ import annotations

__all__: list[str] = []
