"""A package with a CMake-built host extension (_host) and a Python kernel (kernels)."""
