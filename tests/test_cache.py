"""The compile cache, the JIT cache and the artifacts on disk: entries are checksummed and a
damaged one is rebuilt, cache directories are checked before use, writes are atomic under
concurrent writers, keys do not depend on where the project lies, and the JIT compiles with
the project's ``[tool.oxide]`` and sees its C++ inputs. No GPU needed."""
from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from oxide_build.link.cache import CacheWarning, CompileCache, cache_dir_problem, cache_key

REPO = Path(__file__).resolve().parent.parent
PACKAGES = Path(__file__).resolve().parent / "packages"

KERNEL = textwrap.dedent('''
    from oxide import DisjointSlice, Slice, f32, kernel, thread


    @kernel
    def scale(a: f32, x: Slice[f32], out: DisjointSlice[f32]) -> None:
        i = thread.index_1d()
        if i < len(out):
            out[i] = a * x[i]
''')


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "oxide-cache"
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(path))
    monkeypatch.delenv("OXIDE_NO_CACHE", raising=False)
    monkeypatch.delenv("OXIDE_ARCH", raising=False)
    from oxide_build.link import cache

    monkeypatch.setattr(cache, "_warned", set())  # each test sees its own warnings
    return path


def _project(tmp_path: Path, name: str = "proj", oxide: str = "", kernel: str = KERNEL) -> Path:
    """A flat-layout project ``name`` with package ``pk`` holding module ``pk.ops``."""
    project = tmp_path / name
    (project / "pk").mkdir(parents=True)
    (project / "pk" / "__init__.py").write_text("")
    (project / "pk" / "ops.py").write_text(kernel)
    (project / "pyproject.toml").write_text(f'[project]\nname = "pk"\nversion = "1"\n[tool.oxide]\n{oxide}\n')
    return project


# --- the compile cache: checksummed entries ----------------------------------------------------


@pytest.mark.parametrize("damage", ["truncate", "flip", "replace"])
def test_damaged_compile_cache_entry_is_discarded(tmp_path: Path, damage: str) -> None:
    cache = CompileCache(tmp_path / "c")
    key = cache_key("entry", "1")
    payload = b"cubin bytes " * 100
    cache.put(key, payload)
    assert cache.get(key) == payload
    (entry,) = [p for p in (tmp_path / "c").rglob("*") if p.is_file()]
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        entry.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:  # an entry of the old format: the bare payload
        entry.write_bytes(payload)
    assert cache.get(key) is None  # a miss, not the damaged bytes
    assert not entry.exists()  # and gone, so the next put rebuilds it
    cache.put(key, payload)
    assert cache.get(key) == payload


def test_damaged_unit_entry_is_rebuilt(tmp_path: Path) -> None:
    """A build whose cached unit was truncated compiles that unit again and writes the same
    artifacts as before."""
    from oxide_build.build import compile_project
    from oxide_build.config import load_config

    project = _project(tmp_path, oxide='arch = ["sm_90"]\nfatbin = false')
    config = load_config(project)
    first = compile_project(project, config, tmp_path / "s1", log=open(os.devnull, "w"), jobs=1)
    assert first.cached == 0
    for entry in (tmp_path / "oxide-cache" / "compile").rglob("*"):
        if entry.is_file():
            entry.write_bytes(entry.read_bytes()[:-7])
    second = compile_project(project, config, tmp_path / "s2", log=open(os.devnull, "w"), jobs=1)
    assert second.cached == 0
    cubin = "pk/_oxide/pk.ops.sm_90.cubin"
    assert (tmp_path / "s2" / cubin).read_bytes() == (tmp_path / "s1" / cubin).read_bytes()
    third = compile_project(project, config, tmp_path / "s3", log=open(os.devnull, "w"), jobs=1)
    assert third.cached == 1


# --- the cache directory is checked --------------------------------------------------------------


def test_cache_dir_that_is_a_file_warns_and_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("oops")
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(blocker))
    with pytest.warns(CacheWarning) as record:
        cache = CompileCache()
    assert not cache.enabled
    text = str(record[0].message)
    assert str(blocker) in text and "is a file, not a directory" in text and "OXIDE_CACHE_DIR" in text
    cache.put(cache_key("x"), b"data")  # nothing written, nothing raised
    assert blocker.read_text() == "oops"


def test_build_with_a_cache_dir_that_is_a_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide_build.build import compile_project
    from oxide_build.config import load_config

    blocker = tmp_path / "cachefile"
    blocker.write_text("")
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(blocker))
    project = _project(tmp_path, oxide='arch = ["sm_90"]')
    with pytest.warns(CacheWarning, match=f"not using the cache directory {blocker}"):
        build = compile_project(project, load_config(project), tmp_path / "s", log=open(os.devnull, "w"), jobs=1)
    assert build.units == 1 and build.cached == 0


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX ownership")
def test_world_writable_cache_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide_build.link import cache

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    problem = cache_dir_problem(shared)
    assert problem is not None and "writable by group and others (mode 777)" in problem and "chmod go-w" in problem
    shared.chmod(0o775)
    monkeypatch.setattr(cache, "_private_group", lambda gid, uid: False)
    assert "writable by its group (mode 775)" in (cache_dir_problem(shared) or "")
    # umask 002 with a user private group (Debian, Ubuntu): the group is the user alone
    monkeypatch.setattr(cache, "_private_group", lambda gid, uid: True)
    assert cache_dir_problem(shared) is None
    shared.chmod(0o777)
    assert "writable by group and others" in (cache_dir_problem(shared) or "")
    monkeypatch.setattr(cache, "_private_group", lambda gid, uid: False)
    shared.chmod(0o775)
    with pytest.warns(CacheWarning, match="others could replace the code you run"):
        cache = CompileCache(shared)
    assert not cache.enabled
    shared.chmod(0o755)
    assert cache_dir_problem(shared) is None
    assert CompileCache(shared).enabled


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX ownership")
def test_cache_dir_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    owner = theirs.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    problem = cache_dir_problem(theirs)
    assert problem is not None and f"owned by another user (uid {owner}, you are uid {owner + 1})" in problem
    with pytest.warns(CacheWarning):
        assert not CompileCache(theirs).enabled


def test_unsafe_cache_root_disables_the_compile_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """compile/ of our own is not enough: whoever may write the cache root may swap it."""
    root = tmp_path / "root"
    (root / "compile").mkdir(parents=True, mode=0o700)
    root.chmod(0o777)
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(root))
    with pytest.warns(CacheWarning, match=str(root)):
        assert not CompileCache().enabled


def test_new_cache_dirs_are_private(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path / "new" / "cache")
    assert cache.enabled
    cache.put(cache_key("k"), b"v")
    for d in [tmp_path / "new" / "cache", *[p for p in (tmp_path / "new" / "cache").rglob("*") if p.is_dir()]]:
        assert d.stat().st_mode & 0o077 == 0, oct(d.stat().st_mode)


# --- atomic writes under concurrent writers --------------------------------------------------------


def _artifact_writer(module_dir: str, rounds: int, seed: int) -> None:
    from oxide.runtime.manifest import load_manifest
    from oxide_build.package.artifacts import write_artifacts

    manifest, files = _hammer_manifest()
    for i in range(rounds):
        path = write_artifacts(manifest, files, Path(module_dir))
        # what another process may have just written is whole
        assert load_manifest(path) == manifest
        for name, data in files.items():
            assert (path.parent / name).read_bytes() == data, (seed, i, name)


def _hammer_manifest() -> tuple[object, dict[str, bytes]]:
    from oxide.runtime.manifest import ModuleManifest

    files = {f"m.sm_{a}.cubin": bytes([a]) * 300_000 for a in (80, 90)}
    manifest = ModuleManifest(module="m", source="m.py", source_sha256="0" * 64, kernels=(),
                              cubins={f"sm_{a}": f"m.sm_{a}.cubin" for a in (80, 90)})
    return manifest, files


def test_concurrent_artifact_writers(tmp_path: Path) -> None:
    """Six processes write the same module's artifacts 25 times each (a build and JIT compiles
    racing): none fails, none reads a short file, no temporary file is left (a fixed
    ``X.tmp`` name gave FileNotFoundError and short reads)."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_artifact_writer, args=(str(tmp_path), 25, n)) for n in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    assert [p.exitcode for p in procs] == [0] * 6
    assert sorted(p.name for p in (tmp_path / "_oxide").iterdir()) == ["m.json", "m.sm_80.cubin", "m.sm_90.cubin"]


JIT_WORKER = textwrap.dedent('''
    import json, sys, time
    from pathlib import Path
    from oxide_build.jit import jit_manifest
    from oxide.runtime.manifest import load_manifest
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.005)
    path = jit_manifest(Path(sys.argv[1]), "pk.ops", "sm_90")
    m = load_manifest(path)
    cubin = (path.parent / m.cubins["sm_90"]).read_bytes()
    print(json.dumps({"path": str(path), "size": len(cubin), "elf": cubin[:4] == b"\\x7fELF"}))
''')


def test_concurrent_jit_compiles_of_one_module(tmp_path: Path) -> None:
    """Five processes JIT-compile the same module at the same moment into an empty cache: each
    gets a whole entry (the same one), nothing raises, no staging directory is left."""
    project = _project(tmp_path)
    worker = tmp_path / "worker.py"
    worker.write_text(JIT_WORKER)
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, str(worker), str(project / "pk" / "ops.py"), str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(5)]
    time.sleep(2.0)  # let them import the compiler, then start them together
    go.write_text("")
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert len({r["path"] for r in results}) == 1
    assert all(r["elf"] and r["size"] == results[0]["size"] for r in results)
    jit = Path(os.environ["OXIDE_CACHE_DIR"]) / "jit"
    entry = Path(results[0]["path"]).parent.parent  # jit/<key>/<variant>/_oxide/pk.ops.json
    assert [p.name for p in jit.iterdir()] == [entry.parent.name]
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]


# --- the JIT cache ----------------------------------------------------------------------------------


def _count_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from oxide_build import jit

    calls: list[str] = []
    real = jit.compile_module

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(str(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(jit, "compile_module", counting)
    return calls


@pytest.mark.parametrize("damage", ["truncate-cubin", "corrupt-manifest", "drop-checksums"])
def test_damaged_jit_entry_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    from oxide.runtime.manifest import load_manifest
    from oxide_build.jit import jit_manifest

    calls = _count_compiles(monkeypatch)
    source = _project(tmp_path) / "pk" / "ops.py"
    path = jit_manifest(source, "pk.ops", "sm_90")
    cubin_path = path.parent / load_manifest(path).cubins["sm_90"]
    good = cubin_path.read_bytes()
    assert jit_manifest(source, "pk.ops", "sm_90") == path and calls == ["pk.ops"]  # a hit
    if damage == "truncate-cubin":
        cubin_path.write_bytes(good[:100])
    elif damage == "corrupt-manifest":
        path.write_text(path.read_text().replace('"kernels"', '"kernelz"'))
    else:
        (path.parent.parent / "checksums.json").unlink()
    again = jit_manifest(source, "pk.ops", "sm_90")
    assert calls == ["pk.ops", "pk.ops"]  # rebuilt, not reused
    assert again == path
    assert (again.parent / load_manifest(again).cubins["sm_90"]).read_bytes() == good


@pytest.mark.parametrize("plant", ["entry", "key", "code-dir", "cubin", "manifest", "fifo", "checksum-outside"])
def test_symlinks_in_a_jit_entry_are_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: str) -> None:
    """Issue 26 item 4: only the cache root and jit/ were checked; a symbolic link planted in an
    entry (jit/<key>/<variant>, its _oxide/ directory or a file in it, even one whose content
    matches the checksum) was followed. Each is now a damaged entry: the link is removed (never
    what it points at) and the module compiled again."""
    from oxide.runtime.manifest import load_manifest
    from oxide_build.jit import jit_manifest

    calls = _count_compiles(monkeypatch)
    source = _project(tmp_path) / "pk" / "ops.py"
    path = jit_manifest(source, "pk.ops", "sm_90")
    entry = path.parent.parent
    cubin = path.parent / load_manifest(path).cubins["sm_90"]
    good = cubin.read_bytes()
    elsewhere = tmp_path / "elsewhere"  # someone else's copy, which the cache must not read or delete
    if plant == "entry":
        shutil.copytree(entry, elsewhere)
        shutil.rmtree(entry)
        entry.symlink_to(elsewhere, target_is_directory=True)
    elif plant == "key":
        shutil.copytree(entry.parent, elsewhere)
        shutil.rmtree(entry.parent)
        entry.parent.symlink_to(elsewhere, target_is_directory=True)
    elif plant == "code-dir":
        shutil.copytree(path.parent, elsewhere)
        shutil.rmtree(path.parent)
        path.parent.symlink_to(elsewhere, target_is_directory=True)
    elif plant in ("cubin", "manifest"):
        victim = cubin if plant == "cubin" else path
        elsewhere.mkdir()
        shutil.copy(victim, elsewhere / victim.name)  # the same bytes: the checksum matches
        victim.unlink()
        victim.symlink_to(elsewhere / victim.name)
    elif plant == "fifo":
        os.mkfifo(path.parent / "extra")
    else:
        elsewhere.mkdir()
        (elsewhere / "x").write_bytes(b"secret")
        sums_path = entry / "checksums.json"
        sums = json.loads(sums_path.read_text())
        import hashlib

        outside = os.path.relpath(elsewhere / "x", entry)  # ../../../../elsewhere/x, say
        assert (entry / outside).read_bytes() == b"secret"
        sums["files"][outside] = hashlib.sha256(b"secret").hexdigest()
        sums_path.write_text(json.dumps(sums))
    again = jit_manifest(source, "pk.ops", "sm_90")
    assert calls == ["pk.ops", "pk.ops"]  # compiled again, the planted entry not used
    assert again == path
    assert not any(p.is_symlink() for p in [entry.parent, entry, *entry.rglob("*")])
    assert (again.parent / load_manifest(again).cubins["sm_90"]).read_bytes() == good
    if plant != "fifo":
        assert elsewhere.exists() and any(elsewhere.rglob("*"))  # what a link pointed at is left alone


def test_jit_reads_the_project_config(tmp_path: Path) -> None:
    """bounds-check = false and fast-math in [tool.oxide] apply to the JIT as to the wheel."""
    from oxide.runtime.manifest import load_manifest
    from oxide_build.jit import jit_compile_options, jit_manifest

    kernel = KERNEL.replace("out[i] = a * x[i]", "out[i] = a * x[i] / x[i + 1]")
    checked = _project(tmp_path, "checked", kernel=kernel)
    unchecked = _project(tmp_path, "unchecked", oxide="bounds-check = false\nfast-math = true\nopt-level = 2", kernel=kernel)
    assert load_manifest(jit_manifest(checked / "pk" / "ops.py", "pk.ops", "sm_90")).error_sites
    # no bounds check left (the launch-shape precondition of its DisjointSlice write stays)
    assert not [s for s in load_manifest(jit_manifest(unchecked / "pk" / "ops.py", "pk.ops", "sm_90")).error_sites
                if s.kind == "bounds"]
    options = jit_compile_options(unchecked, "sm_80")
    assert (options.archs, options.bounds_check, options.fast_math, options.opt_level) == (("sm_80",), False, True, 2)
    assert not options.embed_ptx and not options.fatbin


def test_jit_reads_the_config_of_a_src_layout(tmp_path: Path) -> None:
    from oxide_build.jit import project_dir_of, tree_root

    project = tmp_path / "p"
    (project / "src" / "pk").mkdir(parents=True)
    (project / "src" / "pk" / "__init__.py").write_text("")
    (project / "src" / "pk" / "ops.py").write_text(KERNEL)
    (project / "pyproject.toml").write_text("[tool.oxide]\n")
    assert project_dir_of(tree_root(project / "src" / "pk" / "ops.py")) == project.resolve()
    assert project_dir_of(tmp_path) is None


def test_jit_of_an_edited_module_with_cpp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cu_linked links csrc/*.cu with include-dirs and defines from [tool.oxide]: the JIT links
    them too (it gave a LinkError), and an edit of the .cu, or of a header it includes, is
    compiled again instead of reusing the old entry."""
    from oxide.runtime.manifest import changed_source, load_manifest
    from oxide_build.jit import jit_manifest

    calls = _count_compiles(monkeypatch)
    project = tmp_path / "cu_linked"
    shutil.copytree(PACKAGES / "cu_linked", project)
    ops = project / "culinked" / "ops.py"
    ops.write_text(ops.read_text() + "\n# edited\n")
    first = jit_manifest(ops, "culinked.ops", "sm_90")
    manifest = load_manifest(first)
    # the .cu and the header it includes are recorded, so the runtime sees an edit of either
    assert set(manifest.sources) == {"../csrc/scale.cu", "../include/scale_impl.cuh"}
    cubin_one = (first.parent / manifest.cubins["sm_90"]).read_bytes()
    assert jit_manifest(ops, "culinked.ops", "sm_90") == first and len(calls) == 1

    header = project / "include" / "scale_impl.cuh"
    header.write_text(header.read_text().replace("CL_FACTOR * x", "CL_FACTOR * x + 1.0f"))
    assert changed_source(ops, manifest) == ops.parent / "../include/scale_impl.cuh"
    second = jit_manifest(ops, "culinked.ops", "sm_90")
    assert len(calls) == 2
    cubin_two = (second.parent / load_manifest(second).cubins["sm_90"]).read_bytes()
    assert cubin_two != cubin_one

    cu = project / "csrc" / "scale.cu"
    cu.write_text(cu.read_text().replace("return culinked::scale(x);", "return culinked::scale(x) * 2.0f;"))
    third = jit_manifest(ops, "culinked.ops", "sm_90")
    assert len(calls) == 3
    assert (third.parent / load_manifest(third).cubins["sm_90"]).read_bytes() not in (cubin_one, cubin_two)

    # back to the first C++ (another branch, another checkout): its entry was kept, not replaced
    header.write_text(header.read_text().replace("CL_FACTOR * x + 1.0f", "CL_FACTOR * x"))
    cu.write_text(cu.read_text().replace("return culinked::scale(x) * 2.0f;", "return culinked::scale(x);"))
    assert jit_manifest(ops, "culinked.ops", "sm_90") == first and len(calls) == 3
    assert (first.parent / manifest.cubins["sm_90"]).read_bytes() == cubin_one


def test_edited_cu_makes_an_editable_install_stale(tmp_path: Path) -> None:
    """Artifacts written next to the sources (an editable install) record the C++ inputs: the
    runtime's staleness check sees an edited .cu and recompiles instead of running old code."""
    from oxide.runtime.manifest import changed_source, load_manifest
    from oxide_build.build import compile_project
    from oxide_build.config import load_config

    project = tmp_path / "cu_linked"
    shutil.copytree(PACKAGES / "cu_linked", project)
    compile_project(project, load_config(project), None, log=open(os.devnull, "w"), jobs=1)
    ops = project / "culinked" / "ops.py"
    manifest = load_manifest(project / "culinked" / "_oxide" / "culinked.ops.json")
    assert changed_source(ops, manifest) is None
    cu = project / "csrc" / "scale.cu"
    cu.write_text(cu.read_text() + "\n// edited\n")
    assert changed_source(ops, manifest) == ops.parent / "../csrc/scale.cu"


def test_jit_key_covers_toolchain_and_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide_build import jit
    from oxide_build.package import module_cache

    project = _project(tmp_path)
    source = project / "pk" / "ops.py"
    root = jit.tree_root(source)

    def key(options: object = None) -> str:
        return jit._entry_key(source, "pk.ops", root, project, options or jit.jit_compile_options(project, "sm_90"))

    base = key()
    assert key(jit.jit_compile_options(project, "sm_80")) != base
    (project / "pyproject.toml").write_text("[tool.oxide]\nfast-math = true\n")
    assert key() != base
    (project / "pyproject.toml").write_text("[tool.oxide]\n")
    assert key() == base
    monkeypatch.setattr(module_cache, "toolchain_versions", lambda: "nvidia-nvjitlink=99.0")
    assert key() != base


def test_read_only_jit_cache_compiles_without_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JIT cache that cannot be written (a read-only mount) is a warning, and the module is
    compiled into a temporary directory of the process (a bare OSError before)."""
    import tempfile

    from oxide.runtime.manifest import load_manifest
    from oxide_build.jit import jit_manifest

    real = tempfile.mkdtemp

    def read_only(*args, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("dir") is not None:
            raise OSError(30, "Read-only file system")
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    source = _project(tmp_path) / "pk" / "ops.py"
    with pytest.warns(CacheWarning, match=r"not using the cache directory .*jit: it cannot be written \(Read-only file system\)"):
        path = jit_manifest(source, "pk.ops", "sm_90")
    assert not str(path).startswith(os.environ["OXIDE_CACHE_DIR"])
    assert (path.parent / load_manifest(path).cubins["sm_90"]).read_bytes()[:4] == b"\x7fELF"


def test_unsafe_jit_cache_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oxide_build.jit import jit_manifest

    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("")
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(blocker))
    source = _project(tmp_path) / "pk" / "ops.py"
    with pytest.warns(CacheWarning, match="is a file, not a directory") as record:
        path = jit_manifest(source, "pk.ops", "sm_90")
    assert "compiling into a temporary directory of this process" in str(record[0].message)
    assert path.is_file() and blocker.read_text() == ""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process
        jit_manifest(source, "pk.ops", "sm_90")


# --- keys that do not depend on where the project lies ----------------------------------------------


def test_moved_project_with_cpp_hits_the_cache(tmp_path: Path) -> None:
    """Build cu_linked (a .cu, a header through include-dirs, link globs), move the checkout,
    build again: every unit comes from the cache and the artifacts are the same."""
    from oxide_build.build import compile_project
    from oxide_build.config import load_config

    first = tmp_path / "here" / "cu_linked"
    shutil.copytree(PACKAGES / "cu_linked", first)
    built = compile_project(first, load_config(first), tmp_path / "s1", log=open(os.devnull, "w"), jobs=1)
    assert built.units == 1 and built.cached == 0
    moved = tmp_path / "elsewhere" / "deeper" / "cu_linked"
    moved.parent.mkdir(parents=True)
    shutil.move(str(first), str(moved))
    again = compile_project(moved, load_config(moved), tmp_path / "s2", log=open(os.devnull, "w"), jobs=1)
    assert again.cached == again.units == 1
    for f in (tmp_path / "s1").rglob("*"):
        if f.is_file():
            assert (tmp_path / "s2" / f.relative_to(tmp_path / "s1")).read_bytes() == f.read_bytes()
    # a change of the C++ still misses
    header = moved / "include" / "scale_impl.cuh"
    header.write_text(header.read_text() + "\n// edited\n")
    third = compile_project(moved, load_config(moved), tmp_path / "s3", log=open(os.devnull, "w"), jobs=1)
    assert third.cached == 0


# --- module x arch units in parallel ---------------------------------------------------------------


def test_one_module_for_two_archs_compiles_in_parallel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both units of one module built for two archs run in worker processes at the same time
    (they ran one after the other in the parent while the summary said "2 jobs")."""
    from oxide_build import build
    from oxide_build.config import load_config
    from oxide_build.package import module_cache

    if not build._can_fork():
        pytest.skip("no fork on this platform: units run one after another")
    marks = tmp_path / "marks"
    marks.mkdir()
    real = module_cache.compile_unit

    def recording(unit):  # type: ignore[no-untyped-def]
        start = time.time()
        time.sleep(0.5)
        result = real(unit)
        (marks / f"{unit.arch}.json").write_text(json.dumps({"pid": os.getpid(), "start": start, "end": time.time()}))
        return result

    monkeypatch.setattr(module_cache, "compile_unit", recording)
    monkeypatch.setenv("OXIDE_NO_CACHE", "1")
    project = _project(tmp_path, oxide='arch = ["sm_80", "sm_90"]')
    result = build.compile_project(project, load_config(project), tmp_path / "s", log=open(os.devnull, "w"), jobs=2)
    assert result.jobs == 2 and result.units == 2
    runs = [json.loads((marks / f"sm_{a}.json").read_text()) for a in (80, 90)]
    assert os.getpid() not in {r["pid"] for r in runs} and runs[0]["pid"] != runs[1]["pid"]
    assert max(r["start"] for r in runs) < min(r["end"] for r in runs)  # they overlapped
    one = build.compile_project(project, load_config(project), tmp_path / "s1", log=open(os.devnull, "w"), jobs=1)
    assert one.jobs == 1
    for f in (tmp_path / "s").rglob("*"):
        if f.is_file():
            assert (tmp_path / "s1" / f.relative_to(tmp_path / "s")).read_bytes() == f.read_bytes()


def test_full_jit_cache_compiles_without_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails half-way (a full disk) is a warning; the process gets its code from a
    temporary directory and no part of an entry is left in the cache."""
    from oxide_build import jit

    real = jit.write_module_artifacts
    cache = Path(os.environ["OXIDE_CACHE_DIR"])

    def full(compiled, directory):  # type: ignore[no-untyped-def]
        if str(directory).startswith(str(cache)):
            real(compiled, directory)
            raise OSError(28, "No space left on device")
        return real(compiled, directory)

    monkeypatch.setattr(jit, "write_module_artifacts", full)
    source = _project(tmp_path) / "pk" / "ops.py"
    with pytest.warns(CacheWarning, match=r"it cannot be written \(No space left on device\)"):
        path = jit.jit_manifest(source, "pk.ops", "sm_90")
    assert path.is_file() and not str(path).startswith(str(cache))
    assert [p for p in (cache / "jit").rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("verbose", [True, False])
def test_an_editable_rebuild_says_so_unless_editable_verbose_is_false(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], verbose: bool
) -> None:
    """A stale module with built code beside it (an editable install) is recompiled with a line
    before and after (scikit-build-core's editable.verbose); a tree never built stays silent."""
    from oxide_build.build import compile_project
    from oxide_build.config import load_config
    from oxide_build.jit import jit_manifest

    project = _project(tmp_path)
    source = project / "pk" / "ops.py"
    jit_manifest(source, "pk.ops", "sm_90")  # no built code beside it: silent
    assert "recompil" not in capfd.readouterr().err
    (project / "pyproject.toml").write_text(f"[tool.oxide]\neditable.verbose = {str(verbose).lower()}\n")
    compile_project(project, load_config(project), None, log=open(os.devnull, "w"), jobs=1)
    source.write_text(source.read_text() + "\n# edited\n")
    capfd.readouterr()
    jit_manifest(source, "pk.ops", "sm_90")
    err = capfd.readouterr().err
    assert ("oxide: recompiling pk.ops for sm_90: " in err and "oxide: recompiled pk.ops in " in err) == verbose, err
    if not verbose:
        assert err == ""
