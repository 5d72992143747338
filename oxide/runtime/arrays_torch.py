"""The PyTorch adapter: a ``torch.Tensor`` read through its own accessors (its
``__cuda_array_interface__`` is slow Python): a CUDA tensor on the GPU, a CPU tensor on the CPU
device. torch is never imported here."""
from __future__ import annotations

from typing import Any

from oxide.runtime import device_choice
from oxide.runtime.array_view import ArrayView, TensorView, ViewError, check_1d_contiguous, gpu_memory_error, host_error

__all__ = ["TORCH_DTYPES", "dtype_of", "view", "tensor_view"]

TORCH_DTYPES = {
    "torch.float32": "f32", "torch.float64": "f64", "torch.float16": "f16",
    "torch.bfloat16": "bf16", "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32",
    "torch.int64": "i64", "torch.uint8": "u8", "torch.uint16": "u16", "torch.uint32": "u32",
    "torch.uint64": "u64", "torch.bool": "bool", "torch.float8_e4m3fn": "f8e4m3", "torch.float8_e5m2": "f8e5m2",
}  # fmt: skip
_torch_dtype_cache: dict[Any, str] = {}


def dtype_of(t: Any) -> str:
    """The oxide name of a tensor's dtype (or a description); raises for a tensor that is not on
    the device kernels run on: a CUDA device, or the CPU on the CPU device."""
    if device_choice.ON_CPU:
        if t.device.type != "cpu":
            if t.is_cuda:
                raise gpu_memory_error(f"a torch.Tensor on {t.device}")
            raise ViewError(f"needs a tensor in host memory (the CPU device runs kernels there); got a torch.Tensor "
                            f"on device {t.device}: pass {{param}}.cpu()")
    elif not t.is_cuda:
        if t.device.type == "cpu":
            raise host_error(t)
        raise ViewError(f"needs a CUDA device array; got a torch.Tensor on device {t.device}")
    key = t.dtype
    dtype = _torch_dtype_cache.get(key)
    if dtype is None:
        dtype = TORCH_DTYPES.get(str(key), f"unsupported element type {key}")
        _torch_dtype_cache[key] = dtype
    return dtype


def view(t: Any) -> ArrayView:
    dtype = dtype_of(t)
    if t.dim() != 1:
        raise ViewError(f"needs a 1-D array; got shape {tuple(t.shape)}")
    n = check_1d_contiguous((t.shape[0],), t.stride(0))
    return ArrayView(t.data_ptr(), n, dtype, False, t)


def tensor_view(t: Any) -> TensorView:
    dtype = dtype_of(t)  # first: a host tensor is refused before its memory is read
    return TensorView(t.data_ptr(), tuple(t.shape), tuple(t.stride()), dtype, False, t)
