/* The launch hot path of oxide kernels, in C.
 *
 * `LaunchBase` is the base of oxide.runtime.kernel.LaunchConfig: calling one (`k[grid, block]
 * (*args)`) runs `launch_vectorcall` (_launcher_launch.c), which reads each argument (PyTorch tensor, CuPy
 * array, oxide.DeviceArray, any `__cuda_array_interface__` object), checks it against the
 * kernel's `Plan` (dtype; 1-D and contiguous for a Slice, the ndim and non-negative whole-element
 * strides for a Tensor; writable), picks the specialization by the view dtypes and the
 * Constexpr values, converts the scalars with overflow checks, reads the device-error records,
 * packs the parameter block on the C stack, checks the kernel's launch preconditions over the
 * packed slots and the launch dimensions (compiled once, at `configure`, to postfix code) and
 * calls cuLaunchKernel.
 *
 * Reading an array costs a few Python attribute reads at most: a PyTorch tensor is read with one
 * C call through DLPack's C exchange API (`torch.Tensor.__dlpack_c_exchange_api__`, PyTorch
 * >= 2.10; `torch._C._to_dlpack` before), a CuPy array through the C getters of its Cython
 * attributes, a DeviceArray through its slots.
 *
 * `KernelBase` is the base of oxide.runtime.kernel.Kernel: `k[grid, block]` looks the launch
 * configuration up in the kernel's cache here, and calls `k._make_config(key)` on a miss.
 *
 * Anything it does not handle exactly like the Python path (an unknown array type, a NumPy bool,
 * an out-of-range value, a failed check, a kernel error waiting to be raised, a context it has
 * no function for, a generic kernel whose specialization depends on the scalars) makes it call `self._launch_slow(*args)` instead, without side
 * effects: the Python path then launches, or raises its usual error. So the texts of every
 * error are the Python path's, and this file only has to agree with it on what succeeds.
 *
 * No CUDA headers: the driver entry points are handed over as addresses by Python
 * (`set_driver`), resolved from the libcuda the process already loaded.
 *
 * Threads: a launch keeps its state on the C stack (reading an argument can run Python code,
 * which may switch threads), releases the GIL around cuLaunchKernel, and finds its function by
 * the current context's uid (cuCtxGetId), so a context reset under the same handle never gets
 * a function of the context before. The module does not declare free-threading support: a
 * free-threaded interpreter re-enables the GIL when it imports it.
 *
 * This file is the module: its state and the functions Python configures it with. The launch,
 * the array readers, the scalars, the preconditions and the Plan are in the files _launcher.h
 * lists, compiled into this one extension. */
#include "_launcher.h"

cuLaunchKernel_t drv_launch = NULL;
cuCtxGetCurrent_t drv_ctx_get_current = NULL;
cuCtxGetId_t drv_ctx_get_id = NULL; /* NULL: a context is known by its handle */

/* torch.autograd.graph.increment_version, called with each PyTorch tensor a launch writes */
PyObject *torch_bump_version = NULL;
PyObject *torch_bump_versions = NULL; /* torch._C._increment_version: a tuple of tensors */
PyCFunction torch_bump_versions_fn = NULL;
PyObject *torch_bump_versions_self = NULL;

volatile int64_t *records[MAX_RECORDS];
int n_records = 0;

PyTypeObject *array_types[MAX_TYPES];
int array_kinds[MAX_TYPES];
int n_array_types = 0;

const int itemsize[DT_COUNT] = DT_ITEMSIZES;

PyObject *dtype_objs[MAX_DTYPES]; /* torch.dtype / numpy.dtype objects, compared by identity */
int dtype_codes[MAX_DTYPES];
int n_dtypes = 0;
PyObject *typestr_codes = NULL; /* dict: CUDA array interface typestr -> code */

PyTypeObject *scalar_types[MAX_SCALAR_TYPES];
int n_scalar_types = 0;

PyObject *s_is_cuda, *s_shape, *s_is_contiguous, *s_dtype, *s_data_ptr, *s_strides, *s_data, *s_ptr,
    *s_cai, *s_typestr, *s_mask, *s_launch_slow, *s_launch_failed, *s_stride, *s_make_config, *s_ndim, *s_size,
    *s_c_contiguous, *s_exchange_api, *s_get_device, *s_device_id, *s_device, *s_stream, *s__stream, *s_requires_grad, *s_cupy_name,
    *s__uses_lock, *s_acquire, *s_release;

PyObject *array_methods[MAX_TYPES][TORCH_METHODS];

Getter array_getters[MAX_TYPES][N_GETTERS];
Getter requires_grad_getters[MAX_TYPES];
unsigned int requires_grad_tags[MAX_TYPES];
unsigned int getter_tags[MAX_TYPES]; /* the type's version tag when they were looked up */
int cupy_flat[MAX_TYPES];            /* ndim, size and _c_contiguous all have getters */
PyTypeObject *memptr_type = NULL;    /* a CuPy MemoryPointer's type, its `ptr` and `device_id` */

int check_devices = 0;

/* per registered type: its exchange API's DLTensor reader, or NULL */
DLTensorFromPyObject_t exchange_readers[MAX_TYPES];
/* per registered type: its exchange API's current work stream (torch.cuda.current_stream), or NULL */
CurrentWorkStream_t exchange_streams[MAX_TYPES];
/* current_stream(ordinal) -> int handle, per framework, from set_stream_getters: the framework's
   current stream where its exchange API gives none (PyTorch before 2.10, CuPy) */
PyObject *torch_stream_getter = NULL, *cupy_stream_getter = NULL;
PyObject *cupy_get_current_stream = NULL; /* cupy.cuda.get_current_stream, called without a Python frame */

/* torch._C._to_dlpack and torch.Tensor, when set_torch_dlpack gave them: one call then yields a
   plain tensor's pointer, length, stride, dtype and device, instead of five attribute reads
   (PyTorch without the exchange API). */
PyObject *torch_to_dlpack = NULL;
PyTypeObject *torch_tensor_type = NULL;

/* ---------------------------------------------------------------------------------------- */
/* module functions */

static PyObject *set_driver(PyObject *mod, PyObject *args) {
    unsigned long long launch, ctx_get_current, ctx_get_id = 0;
    if (!PyArg_ParseTuple(args, "KK|K", &launch, &ctx_get_current, &ctx_get_id)) return NULL;
    if ((launch == 0) != (ctx_get_current == 0)) {
        PyErr_SetString(PyExc_ValueError, "give both entry points or neither");
        return NULL;
    }
    drv_launch = (cuLaunchKernel_t)(uintptr_t)launch;
    drv_ctx_get_current = (cuCtxGetCurrent_t)(uintptr_t)ctx_get_current;
    drv_ctx_get_id = (cuCtxGetId_t)(uintptr_t)ctx_get_id;
    Py_RETURN_NONE;
}

static PyObject *set_torch_autograd(PyObject *mod, PyObject *fn) {
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "expected torch.autograd.graph.increment_version or None");
        return NULL;
    }
    Py_XSETREF(torch_bump_version, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_CLEAR(torch_bump_versions);
    torch_bump_versions_fn = NULL;
    torch_bump_versions_self = NULL;
    if (fn != Py_None) {
        /* torch is imported by now (fn is its increment_version) */
        PyObject *c = PyImport_ImportModule("torch._C");
        PyObject *many = c != NULL ? PyObject_GetAttrString(c, "_increment_version") : NULL;
        Py_XDECREF(c);
        if (many != NULL && PyCallable_Check(many)) torch_bump_versions = Py_NewRef(many);
        if (many != NULL && PyCFunction_Check(many) &&
            (PyCFunction_GET_FLAGS(many) & (METH_VARARGS | METH_FASTCALL | METH_NOARGS | METH_O | METH_KEYWORDS |
                                            METH_METHOD)) == METH_O) {
            /* a builtin taking one argument: its C function is what a call of it runs */
            torch_bump_versions_fn = PyCFunction_GET_FUNCTION(many);
            torch_bump_versions_self = PyCFunction_GET_SELF(many);
        }
        Py_XDECREF(many);
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

/* set_stream_getters(torch_current_stream, cupy_current_stream): each None or a callable
   (ordinal) -> int handle, used where the type's exchange API has no current_work_stream. */
static PyObject *set_stream_getters(PyObject *mod, PyObject *args) {
    PyObject *t, *c;
    if (!PyArg_ParseTuple(args, "OO", &t, &c)) return NULL;
    if ((t != Py_None && !PyCallable_Check(t)) || (c != Py_None && !PyCallable_Check(c))) {
        PyErr_SetString(PyExc_TypeError, "stream getters must be callables or None");
        return NULL;
    }
    Py_XSETREF(torch_stream_getter, t == Py_None ? NULL : Py_NewRef(t));
    Py_XSETREF(cupy_stream_getter, c == Py_None ? NULL : Py_NewRef(c));
    Py_CLEAR(cupy_get_current_stream);
    if (c != Py_None) { /* cupy is imported by now: its getter is only given then */
        PyObject *cupy = PyImport_GetModule(s_cupy_name);
        PyObject *cuda = cupy != NULL ? PyObject_GetAttrString(cupy, "cuda") : NULL;
        PyObject *fn = cuda != NULL ? PyObject_GetAttrString(cuda, "get_current_stream") : NULL;
        if (fn != NULL && PyCallable_Check(fn)) cupy_get_current_stream = Py_NewRef(fn);
        Py_XDECREF(fn);
        Py_XDECREF(cuda);
        Py_XDECREF(cupy);
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

static PyObject *has_driver(PyObject *mod, PyObject *unused) { return PyBool_FromLong(drv_launch != NULL); }

static PyObject *set_device_checks(PyObject *mod, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    check_devices = on;
    Py_RETURN_NONE;
}

static PyObject *set_records(PyObject *mod, PyObject *arg) {
    PyObject *fast = PySequence_Fast(arg, "records must be a sequence of addresses");
    if (fast == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MAX_RECORDS) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "too many error records");
        return NULL;
    }
    volatile int64_t *next[MAX_RECORDS];
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned long long a = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (a == (unsigned long long)-1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return NULL;
        }
        next[i] = (volatile int64_t *)(uintptr_t)a;
    }
    Py_DECREF(fast);
    n_records = 0;
    for (Py_ssize_t i = 0; i < n; i++) records[i] = next[i];
    n_records = (int)n;
    Py_RETURN_NONE;
}

/* A PyTorch tensor type's methods the launcher calls, looked up on the type; NULL where the
   lookup fails (the launcher then calls them by name). */
static void lookup_array_methods(int i, PyObject *type, int kind) {
    static PyObject **names[TORCH_METHODS] = {&s_is_contiguous, &s_data_ptr, &s_stride, &s_get_device};
    for (int m = 0; m < TORCH_METHODS; m++) {
        Py_CLEAR(array_methods[i][m]);
        if (kind != ARRAY_TORCH) continue;
        array_methods[i][m] = PyObject_GetAttr(type, *names[m]);
        if (array_methods[i][m] == NULL) PyErr_Clear();
    }
}

/* The DLTensor reader of the exchange API `type` itself publishes (DLPack names the type the
   table was discovered from), major version 1, minor >= 2 (the first with the table); NULL if
   none. The table lives as long as the process (DLPack requires it). */
static const DLPackExchangeAPI_ *exchange_api_of(PyObject *type) {
    PyObject *dict = PyObject_GetAttrString(type, "__dict__");
    if (dict == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *cap = PyObject_GetItem(dict, s_exchange_api);
    Py_DECREF(dict);
    if (cap == NULL) {
        PyErr_Clear();
        return NULL;
    }
    const DLPackExchangeAPIHeader_ *h = NULL;
    if (PyCapsule_IsValid(cap, "dlpack_exchange_api"))
        h = (const DLPackExchangeAPIHeader_ *)PyCapsule_GetPointer(cap, "dlpack_exchange_api");
    Py_DECREF(cap);
    while (h != NULL && h->version.major > 1) h = h->prev_api;
    if (h == NULL || h->version.major != 1 || h->version.minor < 2) return NULL;
    return (const DLPackExchangeAPI_ *)h;
}

/* What the launcher knows of a registered array type beyond its kind: PyTorch's methods, CuPy's
   getters, the exchange API of either (other kinds may carry read-only arrays, which a
   DLTensor does not tell). */
static void learn_type(int i, PyObject *type, int kind, PyObject *api_type) {
    lookup_array_methods(i, type, kind);
    exchange_readers[i] = NULL;
    exchange_streams[i] = NULL;
    cupy_flat[i] = 0;
    getter_tags[i] = 0;
    requires_grad_tags[i] = 0;
    requires_grad_getters[i] = (Getter){NULL, NULL};
    for (int w = 0; w < N_GETTERS; w++) array_getters[i][w] = (Getter){NULL, NULL};
    if (type == NULL) return;
    if (kind == ARRAY_TORCH || kind == ARRAY_CUPY) {
        const DLPackExchangeAPI_ *api = exchange_api_of(api_type);
        if (api != NULL) {
            exchange_readers[i] = api->dltensor_from_py_object_no_sync;
            exchange_streams[i] = api->current_work_stream;
        }
    }
    if (kind == ARRAY_TORCH) {
        unsigned int tag = version_tag((PyTypeObject *)type);
        Getter g = getter_of((PyTypeObject *)type, s_requires_grad);
        if (tag != 0 && g.get != NULL) requires_grad_getters[i] = g, requires_grad_tags[i] = tag;
    }
    if (kind == ARRAY_CUPY && (getter_tags[i] = version_tag((PyTypeObject *)type)) != 0) {
        for (int w = 0; w < N_GETTERS; w++) array_getters[i][w] = getter_of((PyTypeObject *)type, *getter_names(w));
        cupy_flat[i] = array_getters[i][G_NDIM].get && array_getters[i][G_SIZE].get &&
                       array_getters[i][G_C_CONTIGUOUS].get;
    }
}

static PyObject *set_torch_dlpack(PyObject *mod, PyObject *args) {
    PyObject *fn, *type;
    if (!PyArg_ParseTuple(args, "OO!", &fn, &PyType_Type, &type)) return NULL;
    Py_XSETREF(torch_to_dlpack, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_XSETREF(torch_tensor_type, (PyTypeObject *)Py_NewRef(type));
    Py_RETURN_NONE;
}

/* register_array_type(type, kind, api_type=None): api_type, a base of type whose exchange API
   reads instances of type exactly as their attributes do (torch.Tensor for nn.Parameter). */
static PyObject *register_array_type(PyObject *mod, PyObject *args) {
    PyObject *type, *api_type = Py_None;
    int kind;
    if (!PyArg_ParseTuple(args, "O!i|O", &PyType_Type, &type, &kind, &api_type)) return NULL;
    if (api_type != Py_None && !(PyType_Check(api_type) && PyType_IsSubtype((PyTypeObject *)type, (PyTypeObject *)api_type))) {
        PyErr_SetString(PyExc_TypeError, "api_type must be a base of type");
        return NULL;
    }
    if (api_type == Py_None) api_type = type;
    for (int i = 0; i < n_array_types; i++) {
        if (array_types[i] == (PyTypeObject *)type) {
            array_kinds[i] = kind;
            learn_type(i, type, kind, api_type);
            Py_RETURN_TRUE;
        }
    }
    if (n_array_types >= MAX_TYPES) Py_RETURN_FALSE;
    array_types[n_array_types] = (PyTypeObject *)Py_NewRef(type);
    array_kinds[n_array_types] = kind;
    learn_type(n_array_types, type, kind, api_type);
    n_array_types++;
    Py_RETURN_TRUE;
}

static PyObject *register_dtype(PyObject *mod, PyObject *args) {
    PyObject *dtype;
    int code;
    if (!PyArg_ParseTuple(args, "Oi", &dtype, &code)) return NULL;
    if (code <= DT_NONE || code >= DT_COUNT) {
        PyErr_SetString(PyExc_ValueError, "unknown dtype code");
        return NULL;
    }
    for (int i = 0; i < n_dtypes; i++) {
        if (dtype_objs[i] == dtype) {
            dtype_codes[i] = code;
            Py_RETURN_TRUE;
        }
    }
    if (n_dtypes >= MAX_DTYPES) Py_RETURN_FALSE;
    dtype_objs[n_dtypes] = Py_NewRef(dtype);
    dtype_codes[n_dtypes] = code;
    n_dtypes++;
    Py_RETURN_TRUE;
}

static PyObject *set_typestrs(PyObject *mod, PyObject *arg) {
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "expected a dict of typestr -> code");
        return NULL;
    }
    Py_XSETREF(typestr_codes, PyDict_Copy(arg));
    if (typestr_codes == NULL) return NULL;
    Py_RETURN_NONE;
}

static PyObject *register_scalar_type(PyObject *mod, PyObject *type) {
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "expected a type");
        return NULL;
    }
    for (int i = 0; i < n_scalar_types; i++)
        if (scalar_types[i] == (PyTypeObject *)type) Py_RETURN_TRUE;
    if (n_scalar_types >= MAX_SCALAR_TYPES) Py_RETURN_FALSE;
    scalar_types[n_scalar_types++] = (PyTypeObject *)Py_NewRef(type);
    Py_RETURN_TRUE;
}

static PyObject *forget_types(PyObject *mod, PyObject *unused) {
    int n = n_array_types;
    n_array_types = 0;
    for (int i = 0; i < n; i++) {
        learn_type(i, NULL, ARRAY_NONE, NULL);
        Py_DECREF(array_types[i]);
    }
    Py_CLEAR(memptr_type);
    for (int i = 0; i < n_scalar_types; i++) Py_DECREF(scalar_types[i]);
    n_scalar_types = 0;
    /* the dtype objects too: a process that registers more than MAX_DTYPES (tests with fake
       frameworks, each with dtypes of its own) would leave the later ones unread in C */
    for (int i = 0; i < n_dtypes; i++) Py_DECREF(dtype_objs[i]);
    n_dtypes = 0;
    Py_RETURN_NONE;
}

/* evaluate_preconditions(programs, slot_codes, slot_values, grid, block): what plan_launch decides
   for these preconditions (their programs, KernelSpec.preconditions' `code`) over these slots (packed as a launch packs them): the index of the
   first that does not hold, -1 when all do, None when the evaluator does not take them. For
   the tests, which compare it with oxide.runtime.preconditions. */
static PyObject *evaluate_preconditions(PyObject *mod, PyObject *args) {
    PyObject *programs, *codes_seq, *values_seq;
    unsigned grid[3], block[3];
    if (!PyArg_ParseTuple(args, "OOO(III)(III)", &programs, &codes_seq, &values_seq, &grid[0], &grid[1], &grid[2],
                          &block[0], &block[1], &block[2]))
        return NULL;
    Py_ssize_t n = PySequence_Size(codes_seq);
    if (n < 0) return NULL;
    if (n > MAX_SLOTS || PySequence_Size(values_seq) != n) {
        PyErr_SetString(PyExc_ValueError, "one value per slot code, at most MAX_SLOTS");
        return NULL;
    }
    int8_t *codes = codes_from(codes_seq, n);
    if (codes == NULL) return NULL;
    uint64_t slots[MAX_SLOTS];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PySequence_GetItem(values_seq, i);
        int ok = value != NULL && pack_scalar(value, codes[i], &slots[i]);
        Py_XDECREF(value);
        if (!ok) {
            PyMem_Free(codes);
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "slot %zd: a value its code does not pack", i);
            return NULL;
        }
    }
    PInsn *code;
    int n_code;
    int ok = compile_preconditions(programs, codes, n, &code, &n_code);
    PyMem_Free(codes);
    if (ok < 0) return NULL;
    if (!ok) Py_RETURN_NONE;
    int failed = preconditions_failed(code, n_code, slots, grid, block);
    PyMem_Free(code);
    return PyLong_FromLong(failed);
}

static PyMethodDef module_methods[] = {
    {"set_driver", set_driver, METH_VARARGS,
     "set_driver(cuLaunchKernel, cuCtxGetCurrent, cuCtxGetId=0): entry point addresses"},
    {"set_torch_autograd", set_torch_autograd, METH_O,
     "set_torch_autograd(torch.autograd.graph.increment_version or None): bumps written tensors' versions"},
    {"has_driver", has_driver, METH_NOARGS, "whether set_driver gave entry points"},
    {"set_stream_getters", set_stream_getters, METH_VARARGS,
     "set_stream_getters(torch_fn, cupy_fn): (ordinal) -> current stream handle, each or None"},
    {"set_device_checks", set_device_checks, METH_O,
     "set_device_checks(bool): several GPUs: check that every array is on the current context's device"},
    {"set_records", set_records, METH_O, "set_records(addresses): the error records every launch reads"},
    {"register_array_type", register_array_type, METH_VARARGS, "register_array_type(type, kind)"},
    {"set_torch_dlpack", set_torch_dlpack, METH_VARARGS,
     "set_torch_dlpack(torch._C._to_dlpack or None, torch.Tensor): read plain tensors through DLPack"},
    {"register_dtype", register_dtype, METH_VARARGS, "register_dtype(dtype_object, code)"},
    {"set_typestrs", set_typestrs, METH_O, "set_typestrs({typestr: code})"},
    {"register_scalar_type", register_scalar_type, METH_O, "register_scalar_type(numpy_scalar_type)"},
    {"forget_types", forget_types, METH_NOARGS, "unregister every array, scalar and dtype object"},
    {"evaluate_preconditions", evaluate_preconditions, METH_VARARGS,
     "evaluate_preconditions(programs, slot_codes, slot_values, grid, block): index of the first failing, -1, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef launcher_module = {
    PyModuleDef_HEAD_INIT, "oxide.runtime._launcher", "The launch hot path of oxide kernels, in C.", -1,
    module_methods,
};

#define INTERN(var, text)                                                                                    \
    do {                                                                                                     \
        if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL;                                   \
    } while (0)

PyMODINIT_FUNC PyInit__launcher(void) {
    INTERN(s_is_cuda, "is_cuda");
    INTERN(s_shape, "shape");
    INTERN(s_is_contiguous, "is_contiguous");
    INTERN(s_dtype, "dtype");
    INTERN(s_data_ptr, "data_ptr");
    INTERN(s_strides, "strides");
    INTERN(s_data, "data");
    INTERN(s_ptr, "ptr");
    INTERN(s_cai, "__cuda_array_interface__");
    INTERN(s_typestr, "typestr");
    INTERN(s_mask, "mask");
    INTERN(s_launch_slow, "_launch_slow");
    INTERN(s_launch_failed, "_launch_failed");
    INTERN(s_stride, "stride");
    INTERN(s_make_config, "_make_config");
    INTERN(s_ndim, "ndim");
    INTERN(s_size, "size");
    INTERN(s_c_contiguous, "_c_contiguous");
    INTERN(s_exchange_api, "__dlpack_c_exchange_api__");
    INTERN(s_get_device, "get_device");
    INTERN(s_device_id, "device_id");
    INTERN(s_device, "device");
    INTERN(s_stream, "stream");
    INTERN(s__stream, "_stream");
    INTERN(s__uses_lock, "_uses_lock");
    INTERN(s_acquire, "acquire");
    INTERN(s_release, "release");
    INTERN(s_requires_grad, "requires_grad");
    INTERN(s_cupy_name, "cupy");
    if ((typestr_codes = PyDict_New()) == NULL) return NULL;
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&LaunchBaseType) < 0 || PyType_Ready(&KernelBaseType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&launcher_module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Plan", (PyObject *)&PlanType) < 0 ||
        PyModule_AddObjectRef(m, "LaunchBase", (PyObject *)&LaunchBaseType) < 0 ||
        PyModule_AddObjectRef(m, "KernelBase", (PyObject *)&KernelBaseType) < 0 ||
        PyModule_AddIntConstant(m, "MAX_NDIM", MAX_NDIM) < 0 ||
        PyModule_AddIntConstant(m, "ABI_VERSION", ABI_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "MAX_SLOTS", MAX_SLOTS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
