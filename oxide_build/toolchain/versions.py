"""Which version each piece of the toolchain is, and whether they can work together.

nvJitLink links LTO-IR, and reads only LTO-IR from its own CUDA release or an older one: LTO-IR
from libNVVM or NVRTC 13.5 is refused by nvJitLink 13.0 (``ERROR_OUTDATED_LIBRARY``, or worse,
an internal error). PyTorch pins nvidia-nvjitlink (torch 2.11: 13.0.x) while a plain
``pip install 'oxide-cuda[build]'`` next to it would bring the newest nvidia-nvvm; so the build
checks the set before it compiles anything, and names the packages to install in one message.

Versions come from the distributions that installed the files (``importlib.metadata``, looked
up in the ``sys.path`` entry the file lies under), or from a toolkit's ``version.json``.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path

from oxide.errors import ToolchainError

from .discovery import COMPONENTS, Located, locate, search_roots

__all__ = [
    "LINKER",
    "LTO_PRODUCERS",
    "ComponentVersion",
    "check_link_compatibility",
    "component_version",
    "link_compatibility_problem",
]

LINKER = "nvJitLink"
LTO_PRODUCERS = ("NVVM", "NVRTC")

# version.json keys of a CUDA toolkit, per component
_TOOLKIT_KEYS = {"nvJitLink": "libnvjitlink", "NVVM": "cuda_nvvm", "NVRTC": "cuda_nvrtc", "nvFatbin": "libnvfatbin"}


@dataclass(frozen=True)
class ComponentVersion:
    component: str
    distribution: str
    version: str  # "13.5.37"
    path: Path

    @property
    def release(self) -> tuple[int, int]:
        """(major, minor): the CUDA release, what compatibility is about."""
        numbers = [int(n) for n in re.findall(r"\d+", self.version)[:2]]
        return (numbers + [0, 0])[0], (numbers + [0, 0])[1]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _distribution_version(root: Path, distribution: str) -> str | None:
    wanted = _normalize(distribution)
    for dist in distributions(path=[str(root)]):
        if _normalize(dist.metadata["Name"] or "") == wanted:
            return dist.version
    return None


def _toolkit_version(root: Path, component: str) -> str | None:
    try:
        data = json.loads((root / "version.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = data.get(_TOOLKIT_KEYS.get(component, ""), data.get("cuda"))
    return entry.get("version") if isinstance(entry, dict) else None


def component_version(name: str, path: Path | None = None) -> ComponentVersion | None:
    """The version of component ``name`` as found by ``locate`` (or of the file ``path``, e.g.
    a library another package loaded); ``None`` when no version can be told."""
    component = COMPONENTS[name]
    located: Located | None = locate(name) if path is None else None
    if path is None:
        if located is None:
            return None
        path = located.path
        if located.origin != "environment":
            version = _toolkit_version(located.root, name)
            return ComponentVersion(name, component.distribution, version, path) if version else None
    resolved = path.resolve()
    for root in search_roots():
        if resolved.is_relative_to(root):
            for distribution in component.distributions():  # nvidia-nvjitlink, nvidia-nvjitlink-cu12
                version = _distribution_version(root, distribution)
                if version:
                    return ComponentVersion(name, distribution, version, path)
    return None


def link_compatibility_problem(linker: ComponentVersion, producers: Mapping[str, ComponentVersion]) -> str | None:
    """The message for producers newer than the linker, or ``None`` when the set works."""
    newer = [p for p in producers.values() if p.release > linker.release]
    if not newer:
        return None
    major, minor = linker.release
    pins = " ".join(f'"{p.distribution}=={major}.{minor}.*"' for p in newer)
    found = ", ".join(f"{p.distribution} {p.version} ({p.path})" for p in newer)
    return (
        f"inconsistent CUDA toolchain: {found} make{'s' if len(newer) == 1 else ''} LTO-IR that "
        f"{linker.distribution} {linker.version} ({linker.path}) cannot link (an LTO-IR producer must "
        f"not be newer than nvJitLink).\n"
        f"  install a matching set: pip install {pins}\n"
        f"  (or upgrade {linker.distribution} to {'/'.join(sorted({f'{p.release[0]}.{p.release[1]}' for p in newer}))} "
        f"if nothing pins it; in an isolated build, add the pins to [build-system] requires)"
    )


def check_link_compatibility(linker_path: Path | None = None) -> None:
    """``ToolchainError`` when libNVVM or NVRTC is newer than nvJitLink. ``linker_path``: the
    libnvJitLink the process actually uses, when it is not the one ``locate`` finds."""
    linker = component_version(LINKER, linker_path)
    if linker is None:
        return
    producers = {name: v for name in LTO_PRODUCERS if (v := component_version(name)) is not None}
    problem = link_compatibility_problem(linker, producers)
    if problem is not None:
        raise ToolchainError(problem)
