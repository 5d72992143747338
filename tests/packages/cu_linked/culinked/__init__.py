"""A Python kernel that calls CUDA C++ (csrc/twice.cu, linked by [tool.oxide] link)."""
