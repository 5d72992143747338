"""Records: how a view of ``@oxide.struct`` elements names its element type in the manifest,
and how the runtime names a NumPy record dtype, so that one string comparison checks that an
array's records are laid out as the kernel reads them (field names, scalar types, byte
offsets and the record's size): ``record{x:f32@0,y:f32@4,mass:f32@8}[12]``."""
from __future__ import annotations

from collections.abc import Sequence

__all__ = ["record_dtype_name", "is_record_dtype", "record_itemsize"]


def record_dtype_name(fields: Sequence[tuple[str, str, int]], itemsize: int) -> str:
    """``fields``: (name, oxide scalar name, byte offset) in order."""
    return "record{" + ",".join(f"{name}:{scalar}@{offset}" for name, scalar, offset in fields) + f"}}[{itemsize}]"


def is_record_dtype(dtype: str) -> bool:
    return dtype.startswith("record{") and dtype.endswith("]")


def record_itemsize(dtype: str) -> int:
    return int(dtype[dtype.rindex("[") + 1:-1])
