"""Test fixture: Python kernels compiled by CMake (oxide_add_kernels), calling a CUDA C++ device
library CMake built."""
