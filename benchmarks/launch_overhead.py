"""Host time per kernel launch: oxide against the C floor, CuPy, cuda.core, cuda.bindings and numba.

    python benchmarks/launch_overhead.py --out results/            # on a GPU host
    python benchmarks/launch_overhead.py --ptx-only --out results/ # no oxide_build needed
    python benchmarks/launch_overhead.py --fake --out results/     # no GPU: a stub driver

Every contender launches an (almost) empty kernel of 1 block of 32 threads, in a loop of
``--launches`` launches, ``--reps`` times after a warm-up; the figure is the median over the
repetitions of the host time per launch (the loop's wall time / launches; the GPU is
synchronised between repetitions, outside the timing). The repetitions of a kernel's
contenders are taken in turn, one of each, so the host's drift weighs on all of them alike. Kernels: "p4" (two arrays, two scalars:
the issue's figure), "p1" (one array) and "p16" (four arrays, twelve scalars); oxide alone
also launches "t4" (two ``Tensor[f32, 2]`` views, two scalars), "c4" (two arrays, a scalar and
an ``ox.Constexpr`` that picks one of two specializations) and "a4" ("p4" with two launch
preconditions, ``assert len(x) == len(out)`` and ``assert block.dim.x == 32``, checked by the
runtime before each launch). ``oxide-<kind>-subscript`` times
``k[1, 32](*args)`` (the launch configuration looked up per launch) where ``oxide-<kind>``
reuses one ``k[1, 32]``.

- ``floor``: ``cuLaunchKernel`` in a C loop with pre-packed arguments (compiled here with cc,
  resolved from libcuda with dlopen), launching the very function oxide launches;
- ``torch-floor``: the PyTorch floor, a C function called from Python that does only what any sound
  launch with PyTorch tensors must: one DLPack exchange read per tensor (dtype and device checked),
  PyTorch's current stream, ``requires_grad`` of the written tensors, the GIL released around
  ``cuLaunchKernel`` and the written tensors' version bump (``torch._C._increment_version``);
  ``torch-floor-no-bump`` and ``torch-floor-gil-held`` take one piece away (unsound: they measure it).
  ``oxide-torch/torch-floor`` is then oxide's own cost on top of what PyTorch and CPython impose;
- ``bindings``: ``cuda.bindings.driver.cuLaunchKernel`` from Python with a pre-packed ``void**``;
- ``oxide-torch``, ``oxide-cupy``, ``oxide-devicearray``: ``k[1, 32](a, x, ...)`` with those arrays
  and Python scalars (on the framework's current stream, read per launch);
  ``oxide-torch-given-stream``, ``oxide-cupy-given-stream``: ``k[1, 32, 0]``, the stream given;
  ``oxide-python``: the same launches forced through the pure-Python path;
- ``cupy``: ``RawKernel`` (loaded from the same PTX through ``RawModule``), NumPy scalars;
- ``cuda.core``: ``launch(stream, config, kernel, *args)``;
- ``numba``: a ``@cuda.jit`` kernel of the same signature with device arrays.

Kernels for oxide come from oxide_build (``compile_module``) unless ``--ptx-only`` or the
toolchain is missing; then from hand-written PTX of the same ABI (a view is a u64 pointer and an
i64 length). ``--fake`` replaces the driver by a stub whose ``cuLaunchKernel`` returns at once:
it measures oxide's host path alone, on any machine.

Writes ``launch_overhead.json`` into ``--out`` and prints a table and the ratios the issue asks
for: oxide / floor, oxide / CuPy, oxide / cuda.core.
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# name -> parameters: "f32", "i32" scalars, "view" arrays of f32, "tensor" 2-D arrays of f32,
# "constexpr" an ox.Constexpr[int] compiled for CONSTEXPR_VALUES (launched with the last)
KERNELS: dict[str, list[tuple[str, str]]] = {
    "p1": [("out", "view")],
    "p4": [("a", "f32"), ("x", "view"), ("b", "f32"), ("out", "view")],
    "p16": [("x0", "view"), ("x1", "view"), ("x2", "view"), ("out", "view")]
    + [(f"s{i}", "f32" if i % 2 else "i32") for i in range(12)],
    "t4": [("a", "f32"), ("x", "tensor"), ("b", "f32"), ("out", "tensor")],
    "c4": [("x", "view"), ("R", "constexpr"), ("b", "f32"), ("out", "view")],
    "a4": [("a", "f32"), ("x", "view"), ("b", "f32"), ("out", "view")],
}
OXIDE_ONLY = ("t4", "c4", "a4")  # the other libraries have no Tensor / Constexpr parameters, no asserts
# "a4"'s asserts, as the compiler writes them into the manifest (slots: a, x, len(x), b, out, len(out))
ASSERTS = {"a4": [("len(x) == len(out)", ["eq", ["arg", 2], ["arg", 5]]),
                  ("block.dim.x == 32", ["eq", ["block", 0], ["const", 32]])]}
CONSTEXPR_VALUES = (1, 3)
TENSOR_SHAPE = (32, 32)

SOURCE_HEADER = (
    "import oxide\nfrom oxide import Constexpr, DisjointSlice, DisjointTensor, Slice, Tensor, block, f32, i32, "
    "static_range, thread\n"
)


def _symbols(name: str) -> list[str]:
    """The entry points of a benchmark kernel: one per Constexpr value, like the compiler names them."""
    params = KERNELS[name]
    const = next((p for p, t in params if t == "constexpr"), None)
    return [f"{name}_{const}{v}" for v in CONSTEXPR_VALUES] if const else [name]


# ---------------------------------------------------------------------------------------------
# kernels: oxide source, hand-written PTX of the oxide ABI, plain PTX for the other libraries


def _annotation(p: str, t: str) -> str:
    if t == "view":
        return "DisjointSlice[f32]" if p == "out" else "Slice[f32]"
    if t == "tensor":
        return "DisjointTensor[f32, 2]" if p == "out" else "Tensor[f32, 2]"
    if t == "constexpr":
        return "Constexpr[int]"
    return t


def oxide_source(compiled: bool) -> str:
    out = [SOURCE_HEADER]
    for name, params in KERNELS.items():
        sig = ", ".join(f"{p}: {_annotation(p, t)}" for p, t in params)
        const = next((p for p, t in params if t == "constexpr"), None)
        decorator = f"@oxide.kernel(constexprs={{{const!r}: {list(CONSTEXPR_VALUES)}}})" if const else "@oxide.kernel"
        if not compiled:
            body = "    pass\n"
        elif name == "t4":
            body = ("    r, c = thread.index_2d()\n    if r < out.shape[0] and c < out.shape[1]:\n"
                    "        out[r, c] = a * x[r, c] + b\n")  # fmt: skip
        elif name == "c4":
            body = ("    i = thread.index_1d()\n    if i < len(out):\n        acc = b\n"
                    "        for k in static_range(R):\n            acc += x[i]\n        out[i] = acc\n")  # fmt: skip
        else:  # a real body: the bounds checks make the module carry the error globals
            first = next(p for p, t in params if t == "view" and p != "out")  if name != "p1" else None
            value = f"{first}[i]" if first else "0.0"
            body = "".join(f"    assert {text}\n" for text, _ in ASSERTS.get(name, []))
            body += f"    i = thread.index_1d()\n    if i < len(out):\n        out[i] = {value}\n"
        out.append(f"\n\n{decorator}\ndef {name}({sig}) -> None:\n{body}")
    return "".join(out)


def ptx_module(abi: str) -> str:
    """Empty kernels; ``abi="oxide"``: a view is (u64 pointer, u64 length), else one u64."""
    lines = [".version 7.8", ".target sm_80", ".address_size 64", ""]
    for name, params in KERNELS.items():
        if abi != "oxide" and name in OXIDE_ONLY:
            continue
        decl = []
        for p, t in params:
            if t == "view":
                decl.append(f".param .u64 {p}")
                if abi == "oxide":
                    decl.append(f".param .u64 {p}_len")
            elif t == "tensor":  # pointer, shape[2], strides[2]
                decl += [f".param .u64 {p}"] + [f".param .u64 {p}_{d}" for d in ("n0", "n1", "s0", "s1")]
            elif t != "constexpr":
                decl.append(f".param .{'f32' if t == 'f32' else 's32'} {p}")
        for symbol in _symbols(name):
            lines.append(f".visible .entry {symbol}(\n\t" + ",\n\t".join(decl) + "\n)\n{\n\tret;\n}\n")
    return "\n".join(lines)


def write_oxide_module(root: Path, compile_with_oxide_build: bool) -> tuple[Any, str]:
    """The kernel module, importable, with its manifest; returns (module, how it was built)."""
    from oxide.runtime.manifest import ErrorSite, KernelSpec, ModuleManifest, ParamSpec, Precondition, manifest_path
    from oxide.abi.preconditions import compile_expression

    name = f"oxbench_{uuid.uuid4().hex[:8]}"
    src = root / f"{name}.py"
    how = "ptx"
    if compile_with_oxide_build:
        try:
            from oxide_build.compile import CompileOptions, compile_module
            from oxide_build.package.artifacts import write_module_artifacts

            from oxide.runtime import device

            arch = device.context_device(device.current_context()).arch if not FAKE else "sm_90"
            src.write_text(oxide_source(compiled=True))
            write_module_artifacts(compile_module(src, name, CompileOptions(archs=(arch,))), root)
            how = f"oxide_build ({arch} cubin)"
        except Exception as e:  # no toolchain here: fall back to PTX
            print(f"oxide_build could not compile the benchmark kernels ({type(e).__name__}: {e}); using PTX")
            how = "ptx"
    if how == "ptx":
        src.write_text(oxide_source(compiled=False))
        path = manifest_path(root, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / f"{name}.ptx").write_text(ptx_module("oxide"))
        def param(p: str, t: str) -> ParamSpec:
            if t == "view":
                return ParamSpec(p, "disjoint_slice" if p == "out" else "slice", "f32")
            if t == "tensor":
                return ParamSpec(p, "disjoint_tensor" if p == "out" else "tensor", "f32", 2)
            if t == "constexpr":
                return ParamSpec(p, "constexpr", "i64")
            return ParamSpec(p, "scalar", t)

        sites = [(k, text, expr) for k in KERNELS for text, expr in ASSERTS.get(k, [])]
        kernels = tuple(
            KernelSpec(
                k,
                symbol,
                tuple(param(p, t) for p, t in params),
                {p: str(v) for p, t in params if t == "constexpr"},
                preconditions=tuple(Precondition(i + 1, tuple(compile_expression(expr)))
                                    for i, (kk, _, expr) in enumerate(sites) if kk == k),
            )
            for k, params in KERNELS.items()
            for symbol, v in zip(_symbols(k), CONSTEXPR_VALUES)
        )
        path.write_text(
            ModuleManifest(
                module=name,
                source=src.name,
                source_sha256=hashlib.sha256(src.read_bytes()).hexdigest(),
                kernels=kernels,
                cubins={"sm_90": f"{name}.ptx"} if FAKE else {},
                ptx={"sm_80": f"{name}.ptx"},
                error_sites=tuple(ErrorSite(i + 1, "assert", k, src.name, 1, 5, text) for i, (k, text, _) in enumerate(sites)),
            ).to_json()
        )
    sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location(name, src)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, how


# ---------------------------------------------------------------------------------------------
# the C floor (and, with --fake, the stub driver)

FLOOR_C = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **);
static launch_t resolve(const char *lib) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    return h ? (launch_t)dlsym(h, "cuLaunchKernel") : 0;
}
/* seconds per launch of n launches of fn on stream with params; negative: -(error code) or -1e9 */
double floor_launch(const char *lib, void *fn, void *stream, void **params, long n) {
    static launch_t launch = 0;
    if (!launch) launch = resolve(lib);
    if (!launch) return -1e9;
    struct timespec t0, t1;
    int first_error = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        int err = launch(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, 0);
        if (err && !first_error) first_error = err;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (first_error) return -(double)first_error;
    return ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / n;
}
"""

TORCH_FLOOR_C = r"""
/* The PyTorch floor: what any sound launch with PyTorch tensors must do from Python, in C, and
   nothing of oxide's (no context, overlap, shape or launch-precondition checks). Per launch: one
   DLPack exchange read per tensor (pointer, extents, strides) with its dtype and device checked,
   PyTorch's current stream, `requires_grad` of each written tensor (writing into one that
   requires grad must be refused), the GIL released around cuLaunchKernel, and the version bump
   of the written tensors (torch._C._increment_version, as autograd needs). Two switches take a
   piece away, to measure it: no bump, or the GIL kept (neither is sound). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                        void **, void **);
typedef struct {
    void *data;
    int32_t device_type, device_id;
    int32_t ndim;
    uint8_t code, bits;
    uint16_t lanes;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLT;
typedef int (*read_t)(void *, DLT *);
typedef int (*stream_t)(int32_t, int32_t, void **);
typedef struct { uint32_t major, minor; void *prev; void *alloc, *from, *to; read_t read; stream_t stream; } API;
static launch_t launch;
static void *fn;
static read_t read_tensor;
static stream_t current_stream;
static PyObject *bump;
static getter rg_get;
static void *rg_closure;
static char kinds[64];
static int n_kinds, do_bump, keep_gil;
static int kept[64], n_kept = -1; /* the slots the entry point declares; -1: all */

/* setup(libcuda, function, kinds, exchange_api_capsule, increment_version, requires_grad_descriptor,
   bump, keep_gil, kept); kept: None, or the slots the entry point declares (KernelSpec.param_slots); kinds: f (f32), i (i32), c (Constexpr: not passed), v / w (a read / written
   1-D f32 view: pointer, length), t / T (a read / written 2-D f32 tensor: pointer, extents, strides) */
static PyObject *setup(PyObject *m, PyObject *args) {
    const char *lib, *k;
    unsigned long long f;
    PyObject *cap, *rg, *keep;
    if (!PyArg_ParseTuple(args, "yKsOOOiiO", &lib, &f, &k, &cap, &bump, &rg, &do_bump, &keep_gil, &keep)) return NULL;
    n_kept = -1;
    if (keep != Py_None) {
        n_kept = (int)PyTuple_Size(keep);
        for (int i = 0; i < n_kept && i < 64; i++) kept[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(keep, i));
        if (PyErr_Occurred()) return NULL;
    }
    void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    launch = h ? (launch_t)dlsym(h, "cuLaunchKernel") : NULL;
    API *api = (API *)PyCapsule_GetPointer(cap, "dlpack_exchange_api");
    if (launch == NULL || api == NULL || api->read == NULL || api->stream == NULL || !Py_IS_TYPE(rg, &PyGetSetDescr_Type)) {
        PyErr_SetString(PyExc_RuntimeError, "torch floor: no driver, exchange API or requires_grad getter");
        return NULL;
    }
    Py_INCREF(bump);
    fn = (void *)(uintptr_t)f;
    read_tensor = api->read;
    current_stream = api->stream;
    rg_get = ((PyGetSetDescrObject *)rg)->d_getset->get;
    rg_closure = ((PyGetSetDescrObject *)rg)->d_getset->closure;
    n_kinds = (int)strlen(k);
    memcpy(kinds, k, (size_t)n_kinds);
    Py_RETURN_NONE;
}

static PyObject *go(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    uint64_t slots[64];
    void *ptrs[64];
    PyObject *written[16];
    int s = 0, nw = 0;
    void *stream = NULL;
    if (nargs != n_kinds || current_stream(2, 0, &stream) != 0) return NULL;
    for (int i = 0; i < n_kinds; i++) {
        char k = kinds[i];
        if (k == 'c') continue;
        if (k == 'f') {
            float x = (float)PyFloat_AsDouble(args[i]);
            slots[s] = 0;
            memcpy(&slots[s++], &x, 4);
            continue;
        }
        if (k == 'i') {
            int32_t x = (int32_t)PyLong_AsLong(args[i]);
            slots[s] = 0;
            memcpy(&slots[s++], &x, 4);
            continue;
        }
        DLT t;
        if (read_tensor(args[i], &t) != 0) return NULL;
        if (t.device_type != 2 || t.code != 2 || t.bits != 32 || t.lanes != 1) {
            PyErr_SetString(PyExc_TypeError, "torch floor: expected a CUDA float32 tensor");
            return NULL;
        }
        slots[s++] = (uint64_t)(uintptr_t)t.data + t.byte_offset;
        if (k == 'v' || k == 'w') {
            memcpy(&slots[s++], &t.shape[0], 8);
        } else {
            memcpy(&slots[s], t.shape, 16);
            if (t.strides) memcpy(&slots[s + 2], t.strides, 16);
            else slots[s + 2] = (uint64_t)t.shape[1], slots[s + 3] = 1;
            s += 4;
        }
        if (k == 'w' || k == 'T') {
            PyObject *r = rg_get(args[i], rg_closure);
            if (r == NULL) return NULL;
            int requires = r != Py_False;
            Py_DECREF(r);
            if (requires) {
                PyErr_SetString(PyExc_RuntimeError, "torch floor: a written tensor requires grad");
                return NULL;
            }
            written[nw++] = args[i];
        }
    }
    int n = 0;
    if (n_kept < 0)
        for (int i = 0; i < s; i++) ptrs[n++] = &slots[i];
    else
        for (int i = 0; i < n_kept; i++) ptrs[n++] = &slots[kept[i]];
    int r;
    if (keep_gil) {
        r = launch(fn, 1, 1, 1, 32, 1, 1, 0, stream, ptrs, 0);
    } else {
        Py_BEGIN_ALLOW_THREADS
        r = launch(fn, 1, 1, 1, 32, 1, 1, 0, stream, ptrs, 0);
        Py_END_ALLOW_THREADS
    }
    if (r != 0) return PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel: %d", r);
    if (do_bump && nw) {
        PyObject *tuple = PyTuple_New(nw);
        if (tuple == NULL) return NULL;
        for (int i = 0; i < nw; i++) PyTuple_SET_ITEM(tuple, i, Py_NewRef(written[i]));
        PyObject *done = PyObject_CallOneArg(bump, tuple);
        Py_DECREF(tuple);
        if (done == NULL) return NULL;
        Py_DECREF(done);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, ""},
    {"launch", (PyCFunction)(void (*)(void))go, METH_FASTCALL, ""},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "MODNAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_MODNAME(void) { return PyModule_Create(&module); }
"""

TORCH_FLOOR_VARIANTS = {"torch-floor": (1, 0), "torch-floor-no-bump": (0, 0), "torch-floor-gil-held": (1, 1)}


def torch_floor_launchers(tmp: Path) -> dict[str, Any]:
    """One build of TORCH_FLOOR_C per variant (each module keeps its own setup), by name."""
    import sysconfig

    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("no C compiler for the PyTorch floor")
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    out: dict[str, Any] = {}
    for name in TORCH_FLOOR_VARIANTS:
        modname = "oxtorchfloor_" + name.replace("-", "_")
        c = tmp / f"{modname}.c"
        c.write_text(TORCH_FLOOR_C.replace("MODNAME", modname))
        so = tmp / f"{modname}{suffix}"
        subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", str(c), "-o", str(so), "-ldl"], check=True)
        spec = importlib.util.spec_from_file_location(modname, so)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out[name] = module
    return out


def torch_floor_kinds(params: list[tuple[str, str]]) -> str:
    """TORCH_FLOOR_C's kinds string of a benchmark kernel ("out" is the one written)."""
    letters = {"f32": "f", "i32": "i", "constexpr": "c"}
    return "".join(
        ("w" if p == "out" else "v") if t == "view" else ("T" if p == "out" else "t") if t == "tensor" else letters[t]
        for p, t in params
    )


STUB_DRIVER_C = r"""
/* --fake: a driver whose cuLaunchKernel returns at once, reading its parameters like the real one */
#include <stdint.h>
volatile uint64_t sink;
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *stream, void **params, void **extra) {
    sink += (uint64_t)(uintptr_t)f + (params ? *(uint64_t *)params[0] : 0);
    return 0;
}
int cuCtxGetCurrent(void **ctx) { *ctx = (void *)0xC0; return 0; }
"""


def compile_shared(source: str, name: str, tmp: Path, libs: list[str]) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("no C compiler (cc/gcc) for the C floor")
    c = tmp / f"{name}.c"
    c.write_text(source)
    out = tmp / f"lib{name}.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", str(c), "-o", str(out), *libs], check=True)
    return out


def ensure_launcher_built() -> str:
    """Builds oxide's C launcher in place when it is missing (needs cc and Python headers)."""
    import sysconfig

    runtime = ROOT / "oxide" / "runtime"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = runtime / f"_launcher{suffix}"
    if os.environ.get("OXIDE_PURE_PYTHON") == "1":
        return "disabled"
    sources = sorted(runtime.glob("_launcher*.c"))
    newest = max(p.stat().st_mtime for p in [*sources, runtime / "_launcher.h", runtime / "_abi.h"])
    if built.exists() and built.stat().st_mtime >= newest:
        return "present"  # an extension older than its source is rebuilt (launcher.py would ignore it)
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    include = sysconfig.get_paths()["include"]
    if cc is None or not (Path(include) / "Python.h").exists():
        return "missing (no compiler or Python headers): oxide runs its pure-Python path"
    subprocess.run(
        [cc, "-O2", "-shared", "-fPIC", f"-I{include}", *map(str, sources), "-o", str(runtime / f"_launcher{suffix}")],
        check=True,
    )
    return "built now"


# ---------------------------------------------------------------------------------------------
# timing


Contender = tuple[Callable[[int], Any], int, int]  # (launch n times, launches per rep, reps)


def measure(contenders: dict[str, Contender], sync: Callable[[], Any]) -> dict[str, dict[str, float]]:
    """Median, min and max of host µs per launch of each contender over its reps, each rep a
    loop of its launches. The reps are taken round-robin (one of each contender in turn), so a
    drift of the host's speed during the run weighs on all of them alike."""
    for launch_n, launches, _ in contenders.values():
        for _ in range(3):  # warm-up: loads, caches, the C plan
            launch_n(min(launches, 200))
            sync()
    per_launch: dict[str, list[float]] = {name: [] for name in contenders}
    for rep in range(max((reps for _, _, reps in contenders.values()), default=0)):
        for name, (launch_n, launches, reps) in contenders.items():
            if rep >= reps:
                continue
            sync()
            t0 = time.perf_counter()
            result = launch_n(launches)
            t1 = time.perf_counter()
            per_launch[name].append(result if isinstance(result, float) else (t1 - t0) / launches)
    sync()
    out: dict[str, dict[str, float]] = {}
    for name, times in per_launch.items():
        us = [1e6 * t for t in times]
        out[name] = {"median_us": statistics.median(us), "min_us": min(us), "max_us": max(us)}
    return out


def loop(call: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[int], None]:
    def run(n: int) -> None:
        for _ in range(n):
            call(*args)

    return run


# ---------------------------------------------------------------------------------------------


FAKE = False


def scalar_values(params: list[tuple[str, str]]) -> list[Any]:
    return [1.5 if t == "f32" else 7 for _, t in params if t not in ("view", "tensor", "constexpr")]


def oxide_args(params: list[tuple[str, str]], arrays: list[Any], tensors: list[Any] | None = None) -> tuple[Any, ...]:
    it, tensor_it = iter(arrays), iter(tensors or [])
    out: list[Any] = []
    for _, t in params:
        if t == "view":
            out.append(next(it))
        elif t == "tensor":
            out.append(next(tensor_it))
        elif t == "constexpr":
            out.append(CONSTEXPR_VALUES[-1])
        else:
            out.append(1.5 if t == "f32" else 7)
    return tuple(out)


def main() -> int:
    global FAKE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="directory for launch_overhead.json")
    ap.add_argument("--ptx-only", action="store_true", help="oxide kernels from hand-written PTX, no oxide_build")
    ap.add_argument("--fake", action="store_true", help="no GPU: a stub driver (measures oxide's host path)")
    ap.add_argument("--launches", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--only", default="", help="comma-separated contenders to run (default: all)")
    args = ap.parse_args()
    FAKE = args.fake
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="oxbench_"))
    launcher_state = ensure_launcher_built()

    import numpy as np

    from oxide.runtime import device, launcher
    from oxide.runtime.device_array import DeviceArray

    wanted = set(filter(None, args.only.split(",")))

    def want(name: str) -> bool:
        return not wanted or name in wanted or name.split("-")[0] in wanted

    if FAKE:
        stub = compile_shared(STUB_DRIVER_C, "stubdriver", tmp, [])
        install_fake_driver(stub)
    results: dict[str, dict[str, Any]] = {}
    module, built = write_oxide_module(tmp, compile_with_oxide_build=not args.ptx_only and not FAKE)
    n = 1024
    _, ctx_uid = device.current()  # the runtime keeps functions by the context's uid
    drv = device.driver()

    def sync() -> None:
        if not FAKE:
            (err,) = drv.cuCtxSynchronize()
            assert int(err) == 0, err

    floor: Any = None
    try:
        floor = ctypes.CDLL(str(compile_shared(FLOOR_C, "oxfloor", tmp, ["-ldl"])))
        floor.floor_launch.restype = ctypes.c_double
        floor.floor_launch.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        print(f"no C floor: {e}")
    driver_lib = (str(stub) if FAKE else ("libcuda.so.1" if sys.platform != "win32" else "nvcuda.dll")).encode()

    arrays: dict[str, list[Any]] = {}
    tensors: dict[str, list[Any]] = {}  # per array kind: two TENSOR_SHAPE arrays
    keep: list[Any] = []
    if not FAKE:
        arrays["devicearray"] = [DeviceArray.empty(n, "f32") for _ in range(4)]
        tensors["devicearray"] = [DeviceArray.empty(TENSOR_SHAPE, "f32") for _ in range(2)]
        try:
            import torch

            arrays["torch"] = [torch.zeros(n, dtype=torch.float32, device="cuda") for _ in range(4)]
            tensors["torch"] = [torch.zeros(TENSOR_SHAPE, dtype=torch.float32, device="cuda") for _ in range(2)]
        except ImportError:
            print("torch: not installed")
        try:
            import cupy as cp

            arrays["cupy"] = [cp.zeros(n, dtype=cp.float32) for _ in range(4)]
            tensors["cupy"] = [cp.zeros(TENSOR_SHAPE, dtype=cp.float32) for _ in range(2)]
        except ImportError:
            print("cupy: not installed")
    else:
        arrays["devicearray"] = [DeviceArray(0x7F0000000000 + 0x10000 * i, (n,), "f32", owned=False) for i in range(4)]
        tensors["devicearray"] = [
            DeviceArray(0x7F0000200000 + 0x10000 * i, TENSOR_SHAPE, "f32", owned=False) for i in range(2)
        ]

        class CAIArray:
            def __init__(self, ptr: int, shape: tuple[int, ...] = (n,)) -> None:
                self.__cuda_array_interface__ = {"version": 3, "shape": shape, "typestr": "<f4", "data": (ptr, False), "strides": None}

        arrays["cai"] = [CAIArray(0x7F0000100000 + 0x10000 * i) for i in range(4)]
        tensors["cai"] = [CAIArray(0x7F0000300000 + 0x10000 * i, TENSOR_SHAPE) for i in range(2)]

    torch_floors: dict[str, Any] = {}
    if "torch" in arrays and any(want(name) for name in TORCH_FLOOR_VARIANTS):
        try:
            torch_floors = {k: m for k, m in torch_floor_launchers(tmp).items() if want(k)}
        except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
            print(f"no PyTorch floor: {e}")

    for kname, params in KERNELS.items():
        kernel = getattr(module, kname)
        row: dict[str, Any] = {}
        results[kname] = row
        launch = kernel[1, 32]
        first_kind = next(iter(arrays))
        first_arrays, first_tensors = arrays[first_kind], tensors.get(first_kind, [])
        launch(*oxide_args(params, first_arrays, first_tensors))  # loads the module, fills the C plan
        sync()
        # the function oxide launched: a kernel with tensor parameters launches its index32
        # instance for these small tensors (same argument slots), and the slots its entry point
        # declares (KernelSpec.param_slots: the compiler drops the parameters its code never reads)
        launched = next(w for v in kernel._dispatch.variants for w in (v.index32, v)
                        if w is not None and ctx_uid in w.functions)
        fn = launched.functions[ctx_uid]
        passed = launched.spec.param_slots

        # the C floor: the same CUfunction, arguments packed once
        slots: list[Any] = []

        def device_address(a: Any) -> int:
            return int(getattr(a, "ptr", 0) or a.__cuda_array_interface__["data"][0])

        ptr_it = iter(device_address(a) for a in first_arrays)
        tensor_it = iter(device_address(a) for a in first_tensors)
        for _, t in params:
            if t == "view":
                slots += [ctypes.c_uint64(next(ptr_it)), ctypes.c_int64(n)]
            elif t == "tensor":
                slots += [ctypes.c_uint64(next(tensor_it))] + [
                    ctypes.c_int64(v) for v in (*TENSOR_SHAPE, TENSOR_SHAPE[1], 1)
                ]
            elif t == "constexpr":
                continue
            elif t == "f32":
                slots.append(ctypes.c_float(1.5))
            else:
                slots.append(ctypes.c_int32(7))
        declared = slots if passed is None else [slots[k] for k in passed]
        pointers = (ctypes.c_void_p * len(declared))(*(ctypes.addressof(s) for s in declared))
        keep += [slots, pointers]
        fn_handle = int(fn)

        def floor_n(count: int, fn_handle: int = fn_handle, pointers: Any = pointers) -> float:
            t = floor.floor_launch(driver_lib, fn_handle, None, pointers, count)
            if t < 0:
                raise RuntimeError(f"cuLaunchKernel failed in the C floor: {t}")
            return t

        contenders: dict[str, Contender] = {}
        if want("floor") and floor is not None:
            contenders["floor"] = (floor_n, args.launches, args.reps)
        if torch_floors:
            import torch

            api = torch.Tensor.__dlpack_c_exchange_api__
            requires_grad = torch._C.TensorBase.__dict__["requires_grad"]
            torch_args = oxide_args(params, arrays["torch"], tensors.get("torch"))
            for name, floor_module in torch_floors.items():
                do_bump, keep_gil = TORCH_FLOOR_VARIANTS[name]
                floor_module.setup(driver_lib, fn_handle, torch_floor_kinds(params), api, torch._C._increment_version,
                                   requires_grad, do_bump, keep_gil, tuple(passed) if passed is not None else None)
                floor_module.launch(*torch_args)  # fails here, not in the timing, if it cannot launch
                contenders[name] = (loop(floor_module.launch, torch_args), args.launches, args.reps)
        if want("bindings") and not FAKE:
            address = ctypes.addressof(pointers)
            contenders["bindings"] = (
                loop(drv.cuLaunchKernel, (fn, 1, 1, 1, 32, 1, 1, 0, 0, address, 0)), args.launches, args.reps
            )
        for kind, arrs in arrays.items():
            if "tensor" in dict(params).values() and kind not in tensors:
                continue
            kargs = oxide_args(params, arrs, tensors.get(kind))
            if want(f"oxide-{kind}"):
                contenders[f"oxide-{kind}"] = (loop(launch, kargs), args.launches, args.reps)
            if kind in ("torch", "cupy") and want(f"oxide-{kind}-given-stream"):
                # the stream given: no read of the framework's current stream (what that costs)
                contenders[f"oxide-{kind}-given-stream"] = (loop(kernel[1, 32, 0], kargs), args.launches, args.reps)
            if want(f"oxide-{kind}-subscript"):
                def subscripted(count: int, kernel: Any = kernel, kargs: tuple[Any, ...] = kargs) -> None:
                    for _ in range(count):
                        kernel[1, 32](*kargs)

                contenders[f"oxide-{kind}-subscript"] = (subscripted, args.launches, args.reps)
        if want("oxide-python"):
            a = oxide_args(params, first_arrays, first_tensors)
            contenders["oxide-python"] = (
                loop(kernel._launch, (a, launch.grid, launch.block, launch.stream, launch.shared_mem)), args.launches, args.reps
            )
        if not FAKE and kname not in OXIDE_ONLY:
            for name, bench in (("cupy", bench_cupy), ("cuda.core", bench_cuda_core), ("numba", bench_numba)):
                if not want(name):
                    continue
                try:
                    run = bench(kname, params, n)
                except Exception as e:  # not installed, or an API this script does not know
                    row[name] = {"skipped": f"{type(e).__name__}: {e}"}
                    continue
                reps = args.reps if name != "numba" else max(3, args.reps // 4)
                contenders[name] = (run, args.launches if name != "numba" else 200, reps)
        row.update(measure(contenders, sync))
        report_row(kname, row)

    summary = ratios(results)
    payload = {
        "host": platform.node(),
        "python": sys.version.split()[0],
        "fake_driver": FAKE,
        "oxide_kernels": built,
        "c_launcher": f"{'enabled' if launcher.ENABLED else 'disabled'} ({launcher_state})",
        "launches_per_rep": args.launches,
        "reps": args.reps,
        "results": results,
        "ratios": summary,
    }
    if not FAKE:
        err, dev = drv.cuCtxGetDevice()
        err, raw = drv.cuDeviceGetName(256, dev)
        payload["gpu"] = raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw)
    (args.out / "launch_overhead.json").write_text(json.dumps(payload, indent=1) + "\n")
    print(f"\nC launcher: {payload['c_launcher']}; oxide kernels: {built}")
    for k, r in summary.items():
        print(f"{k}: " + ", ".join(f"{name} {value:.2f}" for name, value in r.items()))
    print(f"wrote {args.out / 'launch_overhead.json'}")
    return 0


def report_row(kname: str, row: dict[str, Any]) -> None:
    print(f"\n{kname} ({len(KERNELS[kname])} parameters): median µs per launch [min..max]")
    for name, r in row.items():
        if "median_us" in r:
            print(f"  {name:<20} {r['median_us']:8.2f}   [{r['min_us']:.2f}..{r['max_us']:.2f}]")
        else:
            print(f"  {name:<20} {r.get('skipped', '')}")


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for kname, row in results.items():
        med = {k: v["median_us"] for k, v in row.items() if "median_us" in v}
        r: dict[str, float] = {}
        for oxide_kind in [k for k in med if k.startswith("oxide-")]:
            for ref in ("floor", "torch-floor", "cupy", "cuda.core", "bindings"):
                if ref in med and (ref != "torch-floor" or oxide_kind.startswith("oxide-torch")):
                    r[f"{oxide_kind}/{ref}"] = med[oxide_kind] / med[ref]
        if "floor" in med:
            for variant in TORCH_FLOOR_VARIANTS:
                if variant in med:
                    r[f"{variant}/floor"] = med[variant] / med["floor"]
        out[kname] = r
    return out


# ---------------------------------------------------------------------------------------------
# the other libraries

_MODULES: dict[str, Any] = {}  # library -> its module of the plain-ABI PTX, loaded once


def _np_scalars(params: list[tuple[str, str]]) -> list[Any]:
    import numpy as np

    return [np.float32(1.5) if t == "f32" else np.int32(7) for _, t in params if t != "view"]


def bench_cupy(kname: str, params: list[tuple[str, str]], n: int) -> Callable[[int], None]:
    import cupy as cp
    import numpy as np

    if "cupy" not in _MODULES:
        path = Path(tempfile.mkdtemp()) / "plain.ptx"
        path.write_text(ptx_module("plain"))
        _MODULES["cupy"] = cp.RawModule(path=str(path))
    kernel = _MODULES["cupy"].get_function(kname)
    arrays = iter([cp.zeros(n, dtype=cp.float32) for _ in range(4)])
    kargs = tuple(next(arrays) if t == "view" else (np.float32(1.5) if t == "f32" else np.int32(7)) for _, t in params)
    grid, block = (1,), (32,)

    def run(count: int) -> None:
        for _ in range(count):
            kernel(grid, block, kargs)

    return run


def bench_cuda_core(kname: str, params: list[tuple[str, str]], n: int) -> Callable[[int], None]:
    import numpy as np

    try:
        from cuda.core import Device, LaunchConfig, ObjectCode, launch
    except ImportError:
        from cuda.core.experimental import Device, LaunchConfig, ObjectCode, launch  # type: ignore[no-redef]
    dev = Device()
    dev.set_current()
    stream = dev.default_stream
    if "cuda.core" not in _MODULES:
        _MODULES["cuda.core"] = ObjectCode.from_ptx(ptx_module("plain").encode())  # a str is taken for a path
    kernel = _MODULES["cuda.core"].get_kernel(kname)
    buffers = [dev.allocate(4 * n, stream=stream) for _ in range(4)]
    it = iter(buffers)
    kargs = tuple(next(it) if t == "view" else (np.float32(1.5) if t == "f32" else np.int32(7)) for _, t in params)
    config = LaunchConfig(grid=1, block=32)

    def run(count: int) -> None:
        for _ in range(count):
            launch(stream, config, kernel, *kargs)

    run.buffers = buffers  # type: ignore[attr-defined]
    return run


def bench_numba(kname: str, params: list[tuple[str, str]], n: int) -> Callable[[int], None]:
    import numpy as np

    np.row_stack = np.vstack  # type: ignore[attr-defined]  # numba-cuda still uses the removed name
    from numba import cuda

    names = [p for p, _ in params]
    src = f"def {kname}({', '.join(names)}):\n    pass\n"
    ns: dict[str, Any] = {}
    exec(src, ns)
    kernel = cuda.jit(ns[kname])
    arrays = iter([cuda.device_array(n, dtype=np.float32) for _ in range(4)])
    kargs = tuple(next(arrays) if t == "view" else (np.float32(1.5) if t == "f32" else np.int32(7)) for _, t in params)
    launch = kernel[1, 32]
    launch(*kargs)
    cuda.synchronize()

    def run(count: int) -> None:
        for _ in range(count):
            launch(*kargs)

    return run


# ---------------------------------------------------------------------------------------------
# --fake: the runtime against a stub driver


def install_fake_driver(stub: Path) -> None:
    from cuda.bindings import driver as real

    from oxide.runtime import device

    lib = ctypes.CDLL(str(stub))
    launch_address = ctypes.cast(lib.cuLaunchKernel, ctypes.c_void_p).value
    ctx_address = ctypes.cast(lib.cuCtxGetCurrent, ctypes.c_void_p).value

    class StubDriver:
        CUresult = real.CUresult
        CUdevice_attribute = real.CUdevice_attribute
        CUfunction_attribute = real.CUfunction_attribute
        CU_MEMHOSTALLOC_DEVICEMAP = real.CU_MEMHOSTALLOC_DEVICEMAP
        CU_MEMHOSTALLOC_PORTABLE = real.CU_MEMHOSTALLOC_PORTABLE
        OK = real.CUresult.CUDA_SUCCESS

        def __init__(self) -> None:
            self.buffers: list[Any] = []

        def _oxide_entry_points(self) -> tuple[int, int]:
            return launch_address or 0, ctx_address or 0

        def cuInit(self, flags: int) -> Any:
            return (self.OK,)

        def cuCtxGetCurrent(self) -> Any:
            return self.OK, 0xC0

        def cuCtxGetDevice(self) -> Any:
            return self.OK, 0

        def cuDeviceGetCount(self) -> Any:
            return self.OK, 1

        def cuDeviceGetAttribute(self, attr: Any, dev: int) -> Any:
            return self.OK, 9 if attr == self.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR else 0

        def cuDeviceGetName(self, n: int, dev: int) -> Any:
            return self.OK, b"stub\0"

        def cuModuleLoadData(self, image: bytes) -> Any:
            return self.OK, 0x1111

        def cuModuleGetFunction(self, mod: Any, name: bytes) -> Any:
            return self.OK, 0x2000 + len(name)

        def cuModuleGetGlobal(self, mod: Any, name: bytes) -> Any:
            return self.CUresult.CUDA_ERROR_NOT_FOUND, 0, 0

        def cuLaunchKernel(self, *a: Any) -> Any:
            return (self.OK,)

        def cuFuncGetAttribute(self, attr: Any, fn: Any) -> Any:  # the dynamic shared memory limit: 48 KiB
            return self.OK, 49152

        def cuCtxSynchronize(self) -> Any:
            return (self.OK,)

    device._import_bindings = lambda: StubDriver()  # type: ignore[assignment]


if __name__ == "__main__":
    sys.exit(main())
