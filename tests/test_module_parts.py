"""A module of many kernels is compiled in parts (oxide_build/package/module_parts.py): both
cores busy for two kernels, an edit to one kernel recompiling its part only, code and manifest
the same as a build without the cache, whatever the jobs."""
from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import pytest

from oxide.abi.manifest import PARTS_MANIFEST_FORMAT, ModuleManifest, ModulePart
from oxide_build.package.module_parts import PART_KERNELS, part_file_name, split_module


def kernels_source(count: int, extra: str = "") -> str:
    out = ["import oxide as ox", "from oxide import DisjointSlice, Slice, f32, thread", "", extra]
    for i in range(count):
        out += ["", "@ox.kernel", f"def k{i}(a: f32, x: Slice[f32], out: DisjointSlice[f32]) -> None:",
                "    i = thread.index_1d()", "    if i < len(out):", f"        out[i] = a * x[i] + {i}.0", ""]
    return "\n".join(out)


def write_module(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ops.py"
    path.write_text(text)
    return path


def test_two_kernels_make_two_parts_and_many_make_parts_of_at_most_eight(tmp_path: Path) -> None:
    parts = split_module(write_module(tmp_path, kernels_source(2)), ["k0", "k1"], [], False)
    assert parts is not None and [p.kernels for p in parts] == [("k0",), ("k1",)]
    names = [f"k{i}" for i in range(20)]
    path = write_module(tmp_path, kernels_source(20))
    parts = split_module(path, names, [], False)
    assert parts is not None and [len(p.kernels) for p in parts] == [7, 7, 6] and PART_KERNELS == 8
    assert [k for p in parts for k in p.kernels] == names  # source order, each kernel once
    text = path.read_text()
    for part in parts:  # the other kernels blanked: every line keeps its number
        assert part.text.count("\n") == text.count("\n")
        assert [line for line in part.text.splitlines() if line.startswith("def ")] == [
            line for line in text.splitlines() if line.startswith("def ") and line[4:].split("(")[0] in part.kernels]
        assert part.kept_text == "".join(line for n, line in enumerate(text.splitlines(keepends=True), 1)
                                         if n in part.kept_lines)


def test_parts_are_the_module_with_the_other_kernels_blanked_line_by_line(tmp_path: Path) -> None:
    """Every part, made from the module cut once at its kernels, is what blanking the other
    parts' kernels line by line gives: comments and constants between kernels, a CRLF line, a
    second decorator, no newline at the end."""
    lines = ["import oxide as ox", "from oxide import DisjointSlice, Slice, f32, thread", "X = 1\r"]
    for i in range(19):
        lines += ([f"# before k{i}", f"Y{i} = {i}"] if i % 3 == 0 else [""]) + ["@ox.kernel"] + \
            (["@ox.kernel"] if i == 5 else []) + [f"def k{i}(a: f32, x: Slice[f32], out: DisjointSlice[f32]) -> None:",
                                                  "    i = thread.index_1d()", "    if i < len(out):",
                                                  f"        out[i] = a * x[i] + {i}.0"]
    text = "\n".join(lines)  # no newline after the last line
    path = tmp_path / "ops.py"
    path.write_bytes(text.encode())
    import ast

    spans = {n.name: (min([n.lineno, *(d.lineno for d in n.decorator_list)]), n.end_lineno)
             for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    parts = split_module(path, list(spans), [], False)
    assert parts is not None and len(parts) == 3
    source_lines = text.splitlines(keepends=True)
    for part in parts:
        others = {n for name, (first, last) in spans.items() if name not in part.kernels
                  for n in range(first, last + 1)}
        assert part.text == "".join(("\n" if line.endswith("\n") else "") if n in others else line
                                    for n, line in enumerate(source_lines, 1))
        assert part.kept_lines == tuple(n for n in range(1, len(source_lines) + 1) if n not in others)
        assert part.kept_text == "".join(source_lines[n - 1] for n in part.kept_lines)


@pytest.mark.parametrize("why", ["refers", "memory", "extern", "link", "one"])
def test_modules_whose_kernels_depend_on_each_other_compile_whole(tmp_path: Path, why: str) -> None:
    text = kernels_source(1 if why == "one" else 3)
    if why == "refers":
        text += "\nLAUNCHED = k1\n"
    elif why == "memory":
        text = text.replace("import oxide as ox\n", "import oxide as ox\nW = ox.constant.array(4, ox.f32)\n")
    elif why == "extern":
        text += '\n@ox.extern("ox_twice", sources=["twice.cu"])\ndef twice(x: f32) -> f32: ...\n'
    names = ["k0"] if why == "one" else ["k0", "k1", "k2"]
    assert split_module(write_module(tmp_path, text), names, [], why == "link") is None


def test_a_part_of_the_tree_with_module_memory_keeps_the_module_whole(tmp_path: Path) -> None:
    path = write_module(tmp_path, kernels_source(3))
    assert split_module(path, ["k0", "k1", "k2"], ["C = ox.constant.array(2, f32)\n"], False) is None


def test_part_file_names() -> None:
    assert part_file_name("pk.ops.sm_90.cubin", "pk.ops", 0) == "pk.ops.sm_90.cubin"
    assert part_file_name("pk.ops.sm_90.cubin", "pk.ops", 3) == "pk.ops.part3.sm_90.cubin"
    assert part_file_name("pk.ops.fatbin", "pk.ops", 1) == "pk.ops.part1.fatbin"


def test_a_manifest_with_parts_round_trips() -> None:
    from oxide.abi.manifest import MANIFEST_FORMAT, ErrorSite

    site = ErrorSite(id=1, kind="bounds", kernel="k1", file="pk/ops.py", line=9, col=3, what="x[i]")
    plain = ModuleManifest(module="pk.ops", source="ops.py", source_sha256="", kernels=(), cubins={"sm_90": "pk.ops.fatbin"})
    assert f'"format": {MANIFEST_FORMAT}' in plain.to_json() and '"parts"' not in plain.to_json()
    split = plain._replace(parts=(ModulePart(("k1",), {"sm_90": "pk.ops.part1.fatbin"}, {}, (site,)),))
    text = split.to_json()
    assert f'"format": {MANIFEST_FORMAT}' in text and MANIFEST_FORMAT >= PARTS_MANIFEST_FORMAT
    back = ModuleManifest.from_json(text)
    assert back.parts == split.parts
    from oxide.abi.manifest import ManifestError

    with pytest.raises(ManifestError, match=r"parts\[0\].cubins"):
        ModuleManifest.from_json(text.replace('"pk.ops.part1.fatbin"', '"../x"'))


def test_the_runtime_loads_a_kernel_from_its_part(tmp_path: Path) -> None:
    from oxide.abi.manifest import ErrorSite
    from oxide.runtime.artifacts import LocatedManifest, kernel_part

    site = ErrorSite(id=1, kind="bounds", kernel="k1", file="pk/ops.py", line=9, col=3, what="x[i]")
    manifest = ModuleManifest(module="pk.ops", source="ops.py", source_sha256="", kernels=(),
                              cubins={"sm_90": "pk.ops.fatbin"},
                              parts=(ModulePart(("k1", "k2"), {"sm_90": "pk.ops.part1.fatbin"}, {}, (site,)),))
    located = LocatedManifest(manifest, tmp_path / "pk.ops.json", tmp_path, jit=False)
    assert kernel_part(located, "k0") is located
    part = kernel_part(located, "k2")
    assert part.manifest.cubins == {"sm_90": "pk.ops.part1.fatbin"} and part.manifest.error_sites == (site,)
    assert part.directory == tmp_path and str(part.path).endswith("pk.ops.json#part1")  # its own key


# --- a build ------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OXIDE_NO_CACHE", raising=False)
    root = tmp_path / "proj"
    (root / "pk").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "pk"\nversion = "1"\n')
    (root / "pk" / "__init__.py").write_text("")
    (root / "pk" / "ops.py").write_text(kernels_source(18))
    return root


def build(project: Path, jobs: int, archs: tuple[str, ...] = ("sm_90",)) -> tuple[dict[str, bytes], int, int]:
    from oxide_build.build import compile_project
    from oxide_build.config import OxideConfig
    from oxide_build.package.wheel import collect_files

    staging = Path(tempfile.mkdtemp(dir=project.parent))
    done = compile_project(project, OxideConfig(arch=archs), staging, log=io.StringIO(), jobs=jobs)
    return collect_files(staging), done.units, done.cached


def test_a_split_module_builds_in_parts_the_same_whatever_the_jobs(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files, units, cached = build(project, jobs=2, archs=("sm_80", "sm_90"))
    assert (units, cached) == (6, 0)  # 3 parts x 2 archs
    manifest = ModuleManifest.from_json(files["pk/_oxide/pk.ops.json"].decode())
    assert [k.name for k in manifest.kernels] == [f"k{i}" for i in range(18)]
    assert [p.kernels for p in manifest.parts] == [tuple(f"k{i}" for i in range(6, 12)),
                                                   tuple(f"k{i}" for i in range(12, 18))]
    assert sorted(files) == ["pk/_oxide/pk.ops.fatbin", "pk/_oxide/pk.ops.json", "pk/_oxide/pk.ops.part1.fatbin",
                             "pk/_oxide/pk.ops.part2.fatbin"]
    assert {s.kernel for s in manifest.error_sites} == {f"k{i}" for i in range(6)}
    assert {s.kernel for s in manifest.parts[1].error_sites} == {f"k{i}" for i in range(12, 18)}
    monkeypatch.setenv("OXIDE_NO_CACHE", "1")
    assert build(project, jobs=1, archs=("sm_80", "sm_90"))[0] == files


def test_an_edit_to_one_kernel_recompiles_its_part_only(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(project, jobs=2)
    ops = project / "pk" / "ops.py"
    # two lines more in the first part: the other parts come from the cache, their lines moved
    ops.write_text(ops.read_text().replace("    i = thread.index_1d()\n", "    i = thread.index_1d()\n\n\n", 1))
    files, units, cached = build(project, jobs=2)
    assert (units, cached) == (3, 2)
    monkeypatch.setenv("OXIDE_NO_CACHE", "1")
    fresh, _, _ = build(project, jobs=1)
    assert files == fresh  # the error sites and kernel lines of the cached parts are where they are now
    manifest = ModuleManifest.from_json(files["pk/_oxide/pk.ops.json"].decode())
    lines = ops.read_text().splitlines()
    for site in [*manifest.error_sites, *(s for p in manifest.parts for s in p.error_sites)]:
        assert "x[i]" in lines[site.line - 1], site
    for spec in manifest.kernels:
        assert lines[spec.line - 1].startswith(f"def {spec.name}("), spec
    # an edit in the last part: the first part comes from the cache, the manifest names the text now
    monkeypatch.delenv("OXIDE_NO_CACHE")
    ops.write_text(ops.read_text().replace("+ 17.0", "+ 17.5"))
    files, units, cached = build(project, jobs=2)
    assert (units, cached) == (3, 2)
    import hashlib

    manifest = ModuleManifest.from_json(files["pk/_oxide/pk.ops.json"].decode())
    assert manifest.source_sha256 == hashlib.sha256(ops.read_bytes()).hexdigest()
    monkeypatch.setenv("OXIDE_NO_CACHE", "1")
    assert build(project, jobs=1)[0] == files
    assert os.environ["OXIDE_NO_CACHE"] == "1"
