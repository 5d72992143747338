"""oxide-sample: a small GPU library whose kernels are written in Python, linked with CUDA C++
(CUB, cuRAND) and compiled into the wheel by oxide. ``python -m sample`` checks every operation
against NumPy on the GPU.

    import torch, sample
    y = sample.gelu(torch.randn(1 << 20, device="cuda"))

Operations (``sample.ops``): ``gelu``, ``softmax``, ``histogram``, ``dropout``, ``blur``,
``saxpy``, on PyTorch tensors, CuPy arrays and ``oxide.runtime.DeviceArray``.
"""
from __future__ import annotations

from sample.ops import blur, dropout, gelu, histogram, saxpy, softmax

__all__ = ["gelu", "softmax", "histogram", "dropout", "blur", "saxpy"]
