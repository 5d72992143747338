"""The runtime requirement of a project with kernels: ``oxide-cuda`` in ``[project] dependencies``.

A wheel with kernels needs the oxide runtime (``oxide.runtime``) to load its fatbins, and the
runtime must read the wheel's manifest format. The backend does not add that requirement
behind the author's back: frontends such as uv take static ``[project]`` metadata as it is
(PEP 621) and never see what a backend adds at build time, and the sdist's PKG-INFO would lack
it. So, as with scikit-build-core, the runtime dependency is the author's to declare, and the
build checks it: a project with kernels whose dependencies do not name ``oxide-cuda`` with a
range that reads this build's manifests fails with the line to add. A project without kernels
needs nothing. With ``dynamic = ["dependencies"]`` the check runs on the metadata the host
backend produced instead.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from oxide import __version__
from oxide.errors import OxideError
from oxide.runtime.manifest import MANIFEST_FORMAT

__all__ = [
    "RUNTIME_DISTRIBUTION",
    "RUNTIME_RANGES",
    "RuntimeRequirementError",
    "check_requirements",
    "dependencies_are_dynamic",
    "metadata_requirements",
    "runtime_requirement",
]

RUNTIME_DISTRIBUTION = "oxide-cuda"

# manifest format -> the oxide-cuda releases whose runtime reads it; a new format gets a line
# (formats 2 to 4, oxide.abi.manifest, are read from 0.1.0 on as built from this repository;
# oxide-cuda has no release before them)
RUNTIME_RANGES: dict[int, str] = {1: ">=0.1,<0.2", 2: ">=0.1,<0.2", 3: ">=0.1,<0.2", 4: ">=0.1,<0.2"}


class RuntimeRequirementError(OxideError):
    """A project with kernels does not require a runtime that reads its manifests."""


def runtime_requirement(manifest_format: int = MANIFEST_FORMAT) -> str:
    """``oxide-cuda>=X,<Y``: the requirement that admits exactly the readers of the format."""
    return f"{RUNTIME_DISTRIBUTION}{RUNTIME_RANGES[manifest_format]}"


def _upper_bound(manifest_format: int) -> str:
    (bound,) = [s.version for s in _specifier_set(RUNTIME_RANGES[manifest_format]) if s.operator == "<"]
    return bound


def _specifier_set(text: str) -> Any:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(text)


def dependencies_are_dynamic(pyproject: Mapping[str, Any]) -> bool:
    """True when the host backend, not ``[project]``, decides the dependencies."""
    project = pyproject.get("project")
    if not isinstance(project, dict):
        return True  # setup.py / setup.cfg metadata
    dynamic = project.get("dynamic", [])
    return isinstance(dynamic, list) and "dependencies" in dynamic


def metadata_requirements(metadata: str) -> list[str]:
    """The ``Requires-Dist`` values of a METADATA / PKG-INFO text."""
    headers = metadata.split("\n\n", 1)[0]
    return [line.split(":", 1)[1].strip() for line in headers.splitlines()
            if line.lower().startswith("requires-dist:")]


def check_requirements(requirements: Iterable[str], kernel_modules: Sequence[str], source: str) -> None:
    """``RuntimeRequirementError`` unless ``requirements`` (PEP 508 strings, from ``source``:
    "pyproject.toml [project] dependencies" or a METADATA file) name oxide-cuda with a range
    whose every release reads this build's manifest format. Nothing is needed without kernels."""
    if not kernel_modules:
        return
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    wanted = runtime_requirement()
    modules = ", ".join(kernel_modules[:3]) + (f" and {len(kernel_modules) - 3} more" if len(kernel_modules) > 3 else "")
    found = None
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue  # the host backend reports a malformed requirement itself
        if canonicalize_name(req.name) == RUNTIME_DISTRIBUTION and (req.marker is None or req.marker.evaluate({"extra": ""})):
            found = req
            break
    if found is None:
        raise RuntimeRequirementError(
            f"{source}: this project has kernels ({modules}), and its wheels need the oxide runtime to "
            f"load them; add it to the dependencies:\n"
            f"    [project]\n    dependencies = [\"{wanted}\"]\n"
            f"(oxide_build does not add it at build time: frontends such as uv read [project] as it is)"
        )
    upper = _upper_bound(MANIFEST_FORMAT)
    spec = found.specifier
    admits_current = spec.contains(__version__, prereleases=True)
    admits_newer_format = spec.contains(upper, prereleases=True) or spec.contains("9999", prereleases=True)
    if not admits_current or admits_newer_format:
        why = (f"it excludes oxide-cuda {__version__}, which builds this wheel" if not admits_current else
               f"it admits oxide-cuda {upper} and later, whose runtime may not read the manifests of this "
               f"build (format {MANIFEST_FORMAT})")
        raise RuntimeRequirementError(
            f"{source}: the requirement \"{found}\" does not fit: {why}; require \"{wanted}\""
        )
