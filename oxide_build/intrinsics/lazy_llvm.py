"""llvmlite's IR module for the intrinsics' lowerings, imported when a lowering first uses it.

The intrinsic modules hold both an intrinsic's typing and its lowering; the frontend imports
them for the typing. So that building the IR (``compile.build_ir``, ``oxide compile --emit
ir``) never loads llvmlite, they bind ``ll`` to ``LLVM_IR`` below, which imports
``llvmlite.ir`` on its first attribute read and then holds that module's names as its own
(later reads are plain attribute reads). mypy sees ``llvmlite.ir`` itself::

    if TYPE_CHECKING:
        from llvmlite import ir as ll
    else:
        from .lazy_llvm import LLVM_IR as ll

A lowering reads ``ll`` inside its functions only: a module-level ``ll.IntType(32)`` would load
llvmlite with the module (tests/test_imports.py checks that ``build_ir`` does not).
"""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["LLVM_IR"]


class _LazyModule:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        # only names not yet copied reach here: the first read, or a name the module lacks
        module = importlib.import_module(self._name)
        self.__dict__.update(vars(module))
        return getattr(module, attr)


LLVM_IR = _LazyModule("llvmlite.ir")
