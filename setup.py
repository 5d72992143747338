"""The optional C launcher, the CPU device's scheduler, and the CMake package copied into the oxide package; everything
else is in pyproject.toml.

``optional=True``: where the launcher cannot be compiled (no C compiler, no Python headers)
the build goes on without it and oxide launches through its pure-Python path.

The CMake package lives in the checkout's top-level ``cmake/`` and is installed as
``oxide/cmake/`` (``python -m oxide --cmake-dir`` finds either).
"""
import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

# the C launcher, one extension from several files by concern (oxide/runtime/_launcher.h lists them)
LAUNCHER_SOURCES = [
    "oxide/runtime/_launcher.c",
    "oxide/runtime/_launcher_arrays.c",
    "oxide/runtime/_launcher_launch.c",
    "oxide/runtime/_launcher_plan.c",
    "oxide/runtime/_launcher_preconditions.c",
    "oxide/runtime/_launcher_scalars.c",
]


class build_py_with_cmake(build_py):
    def run(self):
        super().run()
        source = Path(__file__).resolve().parent / "cmake"
        target = Path(self.build_lib) / "oxide" / "cmake"
        target.mkdir(parents=True, exist_ok=True)
        for path in sorted(source.glob("*.cmake")):
            shutil.copyfile(path, target / path.name)


setup(
    cmdclass={"build_py": build_py_with_cmake},
    package_data={"oxide": ["include/oxide/*.hpp", "include/oxide/*.h"]},
    ext_modules=[
        Extension(
            "oxide.runtime._launcher",
            LAUNCHER_SOURCES,
            # the headers generated from oxide/abi/ (python -m oxide.abi.header), and the evaluator of
            # launch preconditions the C launcher shares with oxide/launch.hpp
            depends=["oxide/runtime/_abi.h", "oxide/runtime/_launcher.h", "oxide/include/oxide/abi.h",
                     "oxide/include/oxide/preconditions.h", "oxide/include/oxide/index32.h"],
            optional=True,
            # hidden: the files share symbols with each other; the module exports PyInit__launcher only
            extra_compile_args=["-O2", "-fvisibility=hidden"] if sys.platform != "win32" else [],
        ),
        # the CPU device's scheduler (fibers, barriers, warp exchange) that the JIT-compiled
        # kernels call; without it the CPU device is unavailable (its error says so)
        Extension(
            "oxide_build.backends.cpu._fibers",
            ["oxide_build/backends/cpu/_fibers.c"],
            depends=["oxide_build/backends/cpu/_global_races.h"],
            optional=True,
            libraries=["m"] if sys.platform != "win32" else [],
            extra_compile_args=["-O2", "-fvisibility=hidden"] if sys.platform != "win32" else [],
        ),
        # the CPU device's erfinv, erfcinv, erfcx, normcdfinv and Bessel I0/I1, which C's library
        # lacks (computed in long double); without it, a module calling them does not load there
        # (CpuUnavailable, saying to rebuild)
        Extension(
            "oxide_build.backends.cpu._special_math",
            ["oxide_build/backends/cpu/_special_math.c"],
            optional=True,
            libraries=["m"] if sys.platform != "win32" else [],
            extra_compile_args=["-O2", "-fvisibility=hidden"] if sys.platform != "win32" else [],
        ),
    ],
)
