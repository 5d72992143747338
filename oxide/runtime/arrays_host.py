"""The host-array adapter: ``__array_interface__`` (NumPy arrays and their subclasses, any
producer of the array interface), read on the CPU device, where kernels run on host memory
(``device_choice.ON_CPU``); on the GPU device such an array is refused, saying how to copy it to
the GPU. The interface's fields are a CUDA array interface's, so ``arrays_cai`` reads them."""
from __future__ import annotations

from typing import Any

from oxide.runtime import arrays_cai, device_choice
from oxide.runtime.array_view import ArrayView, TensorView, ViewError, host_error, type_name

__all__ = ["array_interface", "view", "tensor_view"]


def array_interface(obj: Any) -> Any:
    """``obj.__array_interface__``; ViewError naming the producer when reading it fails."""
    try:
        return obj.__array_interface__
    except Exception as e:
        raise ViewError(f"needs an array; reading __array_interface__ of a {type_name(obj)} failed: "
                        f"{type(e).__name__}: {e}") from None


def view(obj: Any) -> ArrayView:
    if not device_choice.ON_CPU:
        raise host_error(obj)
    return arrays_cai.view(obj, array_interface(obj))


def tensor_view(obj: Any) -> TensorView:
    if not device_choice.ON_CPU:
        raise host_error(obj)
    return arrays_cai.tensor_view(obj, array_interface(obj))
