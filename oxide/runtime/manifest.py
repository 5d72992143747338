"""The manifest: what an installed package knows about its precompiled kernels.

The records live in ``oxide.abi.manifest`` (the contract between build and runtime); this
module keeps the runtime's import path working.
"""
from __future__ import annotations

from oxide.abi.manifest import (
    ARTIFACT_DIR,
    MANIFEST_FORMAT,
    ErrorSite,
    KernelSpec,
    ManifestError,
    ModuleArrayRecord,
    ModuleManifest,
    ParamSpec,
    Precondition,
    changed_source,
    code_file_name_problem,
    load_manifest,
    manifest_path,
)

__all__ = [
    "MANIFEST_FORMAT",
    "ARTIFACT_DIR",
    "ParamSpec",
    "KernelSpec",
    "Precondition",
    "ErrorSite",
    "ManifestError",
    "ModuleManifest",
    "ModuleArrayRecord",
    "changed_source",
    "code_file_name_problem",
    "manifest_path",
    "load_manifest",
]
