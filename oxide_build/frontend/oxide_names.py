"""The names of the ``oxide`` namespace a kernel can use, and the message for one it does not
have: ``ox.const.array`` says that ``ox.const`` does not exist and suggests ``ox.constant.array``;
``ox.math.coshf`` suggests ``ox.math.cosh`` (the nearest name, by difflib's ratio)."""
from __future__ import annotations

import difflib
from functools import lru_cache

__all__ = ["WARP_SIZE_NAME", "known_oxide_names", "unknown_oxide_name"]

# names of the namespace that are not intrinsics: module-level memory, host-side helpers a kernel
# module names at its top level
_MODULE_LEVEL = ("constant.array", "global_memory.array")
WARP_SIZE_NAME = "warp.size"  # CUDA's warpSize: the constant 32 (frontend/names.py)


@lru_cache(maxsize=1)
def known_oxide_names() -> frozenset[str]:
    """Every dotted name under ``oxide`` that the compiler knows: the intrinsics (``math.cosh``,
    ``warp.shfl_down``), the types and decorators (``f32``, ``bf16x8``, ``kernel``), the
    module-level arrays (``constant.array``)."""
    import oxide

    from ..intrinsics import INTRINSICS
    from ..intrinsics.thread import SPECIAL_REGISTERS

    names = {n for n, info in INTRINSICS.items() if not info.method and not info.builtin}
    names.update(f"{group}.{what}.{axis}" for group, what in SPECIAL_REGISTERS for axis in "xyz")
    names.update(oxide.__all__)
    names.update(_MODULE_LEVEL)
    names.add(WARP_SIZE_NAME)
    names.update(("static_range", "unroll", "unsafe", "TypeVar", "Constexpr", "acc_type"))
    return frozenset(names)


def unknown_oxide_name(name: str) -> tuple[str, str]:
    """The error message and hint for ``oxide.<name>``, a name the namespace lacks."""
    known = known_oxide_names()
    group, _, rest = name.partition(".")
    if group == "view" and rest:
        from ..intrinsics import INTRINSICS

        if getattr(INTRINSICS.get(name), "method", False):  # ox.view.load4(x, k): a method, x.load4(k)
            return f"oxide.{name} does not exist", f"{rest} is a method of a view: write x.{rest}(...)"
    groups = {n.partition(".")[0] for n in known}
    if group not in groups:
        message = f"oxide.{group} does not exist"
        suggestion = None
        for near in difflib.get_close_matches(group, sorted(groups), n=3, cutoff=0.5):
            if not rest or f"{near}.{rest}" in known:
                suggestion = f"{near}.{rest}" if rest else near
                break
        if suggestion is None:
            whole = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
            suggestion = whole[0] if whole else None
        return message, (f"did you mean ox.{suggestion}?" if suggestion else
                         "see docs/language.md for the names of the oxide namespace")
    members = sorted(n for n in known if n.startswith(group + "."))
    if name.endswith("f") and name[:-1] in known:  # CUDA's f32 spelling: ox.math.sinf is ox.math.sin
        return f"oxide.{name} does not exist", f"did you mean ox.{name[:-1]}? (one name for f32 and f64)"
    closest = difflib.get_close_matches(name, members, n=1, cutoff=0.5)
    if closest:
        return f"oxide.{name} does not exist", f"did you mean ox.{closest[0]}?"
    return f"oxide.{name} does not exist", (f"ox.{group} has: " + ", ".join(m.partition('.')[2] for m in members[:12])
                                            + (", …" if len(members) > 12 else ""))
