"""What the runtime's Python side and its C launcher (``oxide/runtime/_launcher*.c``) agree on: dtype codes,
array kinds and the launcher's version. ``_abi.h`` is generated from this module
(``python -m oxide.abi.header``); ``tests/test_abi.py`` checks that it is up to date."""
from __future__ import annotations

__all__ = ["ABI_VERSION", "DTYPE_CODES", "ARRAY_KINDS", "MAX_LAUNCH_NDIM", "INDEX32_LIMIT"]

# an extension built from another version of _launcher.c is ignored (launcher.py)
ABI_VERSION = 12  # 7: Plan.set_function takes the dynamic shared memory limit; 8: and the index32 flag; 9: fp8 dtype codes; 10: each variant's passed slots (KernelSpec.param_slots); 11: preconditions as programs (oxide.abi.preconditions), not expressions; 12: optional views (Plan.configure's is_optional, a flag slot after the view's)

# scalar type name -> the launcher's dtype code (0: none)
DTYPE_CODES: dict[str, int] = {
    "i8": 1, "i16": 2, "i32": 3, "i64": 4, "u8": 5, "u16": 6, "u32": 7, "u64": 8,
    "f16": 9, "bf16": 10, "f32": 11, "f64": 12, "bool": 13, "f8e4m3": 14, "f8e5m2": 15,
}  # fmt: skip

# the kinds of array the C launcher reads itself (0: none, the Python path)
ARRAY_KINDS: dict[str, int] = {"torch": 1, "cupy": 2, "device_array": 3, "cai": 4}

MAX_LAUNCH_NDIM = 8  # a Tensor of more dimensions stays on the Python path

# A kernel's index32 instance (KernelSpec.index32_symbol, oxide_build/lower/index32.py) is launched
# only when every tensor argument's span 1 + Σ (shape[k] - 1)·|stride[k]| (0 for an empty tensor),
# each of its extents and each |stride| are at most this: every element's offset Σ index·stride
# then fits a signed 32-bit int, and so do the shapes and strides it reads as i32.
INDEX32_LIMIT = 2**31 - 1
