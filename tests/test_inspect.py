"""``oxide inspect``: kernel resources read from the linker's info log."""
from __future__ import annotations

from pathlib import Path

from oxide_build.inspect import inspect_module, parse_info_log

ROOT = Path(__file__).resolve().parent.parent

LOG = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem
info    : Function properties for 'k':
info    : used 40 registers, used 1 barriers, 24 stack, 5120 bytes smem, 592 bytes cmem[0], 16 bytes lmem
"""


def test_parse_info_log() -> None:
    r = parse_info_log(LOG)["k"]
    assert (r.registers, r.shared_bytes, r.local_bytes, r.stack_bytes, r.spill_stores, r.spill_loads, r.barriers) == (
        40, 5120, 16, 24, 8, 12, 1)


def test_inspect_sgemm_uses_two_tiles_of_shared_memory() -> None:
    resources, cubin, names, checks, launch_checks, _ = inspect_module(ROOT / "examples" / "sgemm.py", "examples.sgemm", "sm_90", root=ROOT)
    r = resources["sgemm"]
    assert r.shared_bytes >= 2 * 32 * 32 * 4
    assert 0 < r.registers <= 255 and r.spill_stores == 0 and r.barriers == 1
    assert cubin[:4] == b"\x7fELF" and names == {"sgemm": "sgemm"}
    # its preconditions (asserts, checked at launch) prove every index; the device keeps one
    # check at the entry of the k loop, which needs k + 32 to fit an i32
    assert [c.what for c in checks] == ["range(0, k, TILE): stop + step must not exceed 2147483648 (i32 loop variable)"]
    assert [c.what for c in launch_checks][:2] == [
        "block.dim.x == TILE and block.dim.y == TILE",
        "len(a) == i64(m) * k and len(b) == i64(k) * n and (len(c) == i64(m) * n)"]
    assert "grid.x <= 67108864" in launch_checks[2].what


def test_cli_inspect_prints_a_row_per_specialization(capsys) -> None:  # type: ignore[no-untyped-def]
    from oxide_build.cli import main

    rc = main(["inspect", str(ROOT / "examples" / "saxpy.py") + "::saxpy", "--module", "examples.saxpy",
               "--root", str(ROOT), "--arch", "sm_80"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert out[0].split()[:2] == ["kernel", "regs"] and out[0].endswith("params  (sm_80)")
    assert [line.split()[0] for line in out[1:3]] == ["saxpy_f32", "saxpy_f64"]
    # a, x, y, out and out's length (the guard): the lengths of x and y are checked at launch
    assert [int(line.split()[-1]) for line in out[1:3]] == [4 + 4 + 8 * 4, 8 * 5]
    # the bounds-check failure path is inlined: no call ABI inflating the register count
    assert all(int(line.split()[1]) <= 32 for line in out[1:3])
    # the length assert, and the 1-D launch shape its DisjointSlice write at index_1d() needs
    assert out[3:5] == ["checks left in the device code: 0", "checked at launch: 2"]
    assert out[5].endswith(": assert len(x) == len(out) and len(y) == len(out)  [saxpy]")


def test_cli_inspect_unknown_kernel(capsys) -> None:  # type: ignore[no-untyped-def]
    from oxide_build.cli import main

    rc = main(["inspect", str(ROOT / "examples" / "saxpy.py") + "::nope", "--module", "examples.saxpy", "--root", str(ROOT)])
    assert rc == 1
    assert "no kernel 'nope'" in capsys.readouterr().err


def test_inspect_module_that_links_cpp(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A module calling CUDA C++ (CUB) is linked as the build links it, from LTO-IR with its
    .cu sources: its PTX alone has unresolved externs (nvJitLink said ERROR_INTERNAL)."""
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    source = ROOT / "examples" / "cub_reduce" / "block_sum.py"
    resources, cubin, names, checks, *_ = inspect_module(source, "examples.cub_reduce.block_sum", "sm_90", root=ROOT)
    assert names == {"total": "total", "total_by_warps": "total_by_warps"}
    assert set(resources) == {"total", "total_by_warps"}
    # cub::BlockReduce keeps its partials in shared memory and synchronizes the block
    assert resources["total"].shared_bytes > 0 and resources["total"].barriers >= 1
    assert 0 < resources["total_by_warps"].registers <= 255
    assert cubin[:4] == b"\x7fELF"
    assert [c.what for c in checks] == ["out[0]", "out[0]"]


def test_cli_inspect_cub_reduce(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from oxide_build.cli import main

    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    rc = main(["inspect", str(ROOT / "examples" / "cub_reduce" / "block_sum.py")])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    rows = captured.out.splitlines()
    assert [line.split()[0] for line in rows[1:3]] == ["total", "total_by_warps"]


def test_cli_inspect_reads_the_project_config(capsys, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """cu_linked links its C++ through [tool.oxide] (link, include-dirs, defines): inspect links
    it as the build does, instead of failing on the undefined cl_scale."""
    from oxide_build.cli import main

    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    project = ROOT / "tests" / "packages" / "cu_linked"
    rc = main(["inspect", str(project / "culinked" / "ops.py"), "--module", "culinked.ops"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert captured.out.splitlines()[1].split()[0] == "scale"


def test_inspect_cpp_calling_an_exported_python_function(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A .cu that includes the generated oxide_exports.h and calls a Python export is compiled
    with the module's boundary headers, as in the build."""
    monkeypatch.setenv("OXIDE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "both.cu").write_text(
        '#include "oxide_exports.h"\n'
        'extern "C" __global__ void cpp_twice(const float* x, long long x_len, float* out, long long out_len) {\n'
        '    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n'
        '    if (i < out_len && i < x_len) out[i] = py_twice(x[i]);\n'
        '}\n')
    (tmp_path / "both.py").write_text(
        "import oxide as ox\n"
        "from oxide import MutSlice, Slice, f32\n\n\n"
        "@ox.device(export=\"py_twice\")\n"
        "def twice(x: f32) -> f32:\n"
        "    return 2.0 * x\n\n\n"
        "@ox.extern_kernel(\"cpp_twice\", sources=[\"both.cu\"])\n"
        "def cpp_twice(x: Slice[f32], out: MutSlice[f32]) -> None: ...\n")
    resources, cubin, names, *_ = inspect_module(tmp_path / "both.py", "both", "sm_90", root=tmp_path)
    assert names == {"cpp_twice": "cpp_twice"} and set(resources) == {"cpp_twice"}
    assert cubin[:4] == b"\x7fELF"


def test_cli_inspect_says_which_checks_a_fast_instance_has_not(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A kernel split by the launch-instances pass: both entry points on their rows, and each
    check left in the device code says the fast instance has not got it (the guard's len(x) >= n
    is the launch's test)."""
    from oxide_build.cli import main

    (tmp_path / "lv.py").write_text(
        "import oxide as ox\nfrom oxide import MutSlice, Slice, f32, i32, thread\n\n\n"
        "@ox.kernel\ndef k(x: Slice[f32], out: MutSlice[f32], n: i32) -> None:\n"
        "    i = thread.index_1d()\n    if i < n:\n        with ox.unsafe():\n            out[i] = x[i]\n")
    rc = main(["inspect", str(tmp_path / "lv.py"), "--root", str(tmp_path), "--arch", "sm_90"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert [line.split()[0] for line in out[1:3]] == ["k", "k__fast"]
    assert out[3] == "checks left in the device code: 2"
    assert all(line.endswith("[k; not in k__fast]") for line in out[4:6]), out
