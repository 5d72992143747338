"""Only the optional C launcher; everything else is in pyproject.toml.

``optional=True``: where it cannot be compiled (no C compiler, no Python headers) the build
goes on without it and oxide launches through its pure-Python path.
"""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "oxide.runtime._launcher",
            ["oxide/runtime/_launcher.c"],
            depends=["oxide/runtime/_abi.h"],  # generated from oxide/abi/ (python -m oxide.abi.header)
            optional=True,
            extra_compile_args=["-O2"] if __import__("sys").platform != "win32" else [],
        )
    ]
)
