"""Kernels written in oxide: the algorithms people write in CUDA C++, in typed Python.

Each module holds kernels and, where an algorithm takes several launches, a host function
that runs it. ``tests/test_examples_gpu.py`` checks each against NumPy; ``benchmarks/``
times them against CUDA C++ and numba-cuda.
"""
