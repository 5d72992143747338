"""Where a failing device-side check (bounds check, ``assert``) leaves its report.

Each CUDA context has one record of ``RECORD_WORDS`` int64 words in host-mapped memory. A
module with checks has two globals: ``ERROR_PTR_SYMBOL`` (the record's device address, 0:
none, then the thread traps) and ``MODULE_ID_SYMBOL``. The first failing thread moves the
flag from 0 to ``FLAG_CLAIMED``, writes the other words, fences, and sets ``FLAG_PUBLISHED``.
"""
from __future__ import annotations

__all__ = [
    "RECORD_WORDS", "FLAG", "MODULE_ID", "SITE_ID", "INDEX", "LENGTH", "FLAG_CLAIMED", "FLAG_PUBLISHED",
    "ERROR_PTR_SYMBOL", "MODULE_ID_SYMBOL", "FAIL_FUNCTION",
]

# the words of a record, in order
FLAG, MODULE_ID, SITE_ID, INDEX, LENGTH = range(5)
RECORD_WORDS = 5
FLAG_CLAIMED = 1
FLAG_PUBLISHED = 2

ERROR_PTR_SYMBOL = "__oxide_error_ptr"
MODULE_ID_SYMBOL = "__oxide_module_id"
FAIL_FUNCTION = "__oxide_fail"  # __oxide_fail(site, index, length), internal to each module
