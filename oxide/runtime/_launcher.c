/* The launch hot path of oxide kernels, in C.
 *
 * `LaunchBase` is the base of oxide.runtime.kernel.LaunchConfig: calling one (`k[grid, block]
 * (*args)`) runs `launch_vectorcall` below, which reads each argument (PyTorch tensor, CuPy
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
 * free-threaded interpreter re-enables the GIL when it imports it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_abi.h" /* generated from oxide/abi/: dtype codes, array kinds, ABI_VERSION */

typedef int CUresult;
typedef CUresult (*cuLaunchKernel_t)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned shared, void *stream, void **params, void **extra);
typedef CUresult (*cuCtxGetCurrent_t)(void **ctx);
typedef CUresult (*cuCtxGetId_t)(void *ctx, unsigned long long *id);

static cuLaunchKernel_t drv_launch = NULL;
static cuCtxGetCurrent_t drv_ctx_get_current = NULL;
static cuCtxGetId_t drv_ctx_get_id = NULL; /* NULL: a context is known by its handle */

/* torch.autograd.graph.increment_version, called with each PyTorch tensor a launch writes */
static PyObject *torch_bump_version = NULL;
static PyObject *torch_bump_versions = NULL; /* torch._C._increment_version: a tuple of tensors */

/* Checked unsigned arithmetic: 0 when the result does not fit 64 bits. */
static int add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (b > UINT64_MAX - a) return 0;
    *out = a + b;
    return 1;
}

static int mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

#define MAX_RECORDS 64
static volatile int64_t *records[MAX_RECORDS];
static int n_records = 0;

#define MAX_TYPES 64
static PyTypeObject *array_types[MAX_TYPES];
static int array_kinds[MAX_TYPES];
static int n_array_types = 0;

static const int itemsize[DT_COUNT] = DT_ITEMSIZES;

#define MAX_DTYPES 128
static PyObject *dtype_objs[MAX_DTYPES]; /* torch.dtype / numpy.dtype objects, compared by identity */
static int dtype_codes[MAX_DTYPES];
static int n_dtypes = 0;
static PyObject *typestr_codes = NULL; /* dict: CUDA array interface typestr -> code */

/* NumPy integer and floating scalar types (numpy.float32, numpy.int64, ...): converted through
   their own __index__ / __float__, as the Python converters do. Other types fall back. */
#define MAX_SCALAR_TYPES 32
static PyTypeObject *scalar_types[MAX_SCALAR_TYPES];
static int n_scalar_types = 0;

static int is_numpy_scalar(PyObject *value) {
    PyTypeObject *tp = Py_TYPE(value);
    for (int i = 0; i < n_scalar_types; i++)
        if (scalar_types[i] == tp) return 1;
    return 0;
}

static PyObject *s_is_cuda, *s_shape, *s_is_contiguous, *s_dtype, *s_data_ptr, *s_strides, *s_data, *s_ptr,
    *s_cai, *s_typestr, *s_mask, *s_launch_slow, *s_launch_failed, *s_stride, *s_make_config, *s_ndim, *s_size,
    *s_c_contiguous, *s_exchange_api, *s_get_device, *s_device_id, *s_device, *s_stream, *s__stream, *s_requires_grad, *s_cupy_name;

/* PyTorch's methods, looked up on the registered tensor type once: calling the type's method
   with the tensor skips the per-call attribute lookup on the instance. */
enum { TORCH_IS_CONTIGUOUS = 0, TORCH_DATA_PTR = 1, TORCH_STRIDE = 2, TORCH_GET_DEVICE = 3, TORCH_METHODS = 4 };
static PyObject *array_methods[MAX_TYPES][TORCH_METHODS];

/* A CuPy array's attributes, read through the C getter of the getset descriptor its type's
   attribute lookup finds (what that lookup would call, minus the lookup and the descriptor
   protocol: CuPy's arrays are Cython classes, so all of them are getters). Valid while the type
   keeps the version tag it had then: CPython changes the tag whenever the type or a base is
   modified, as its own attribute caches rely on. */
enum { G_DTYPE = 0, G_NDIM, G_SIZE, G_C_CONTIGUOUS, G_DATA, G_SHAPE, G_STRIDES, N_GETTERS };
typedef struct {
    getter get; /* NULL: read by name */
    void *closure;
} Getter;
static Getter array_getters[MAX_TYPES][N_GETTERS];
static unsigned int getter_tags[MAX_TYPES]; /* the type's version tag when they were looked up */
static int cupy_flat[MAX_TYPES];            /* ndim, size and _c_contiguous all have getters */
static const Getter no_getters[N_GETTERS];  /* read everything by name */
static PyTypeObject *memptr_type = NULL;    /* a CuPy MemoryPointer's type, its `ptr` and `device_id` */
static Getter memptr_ptr, memptr_device;
static unsigned int memptr_tag;

static PyObject **getter_names(int which) {
    static PyObject **names[N_GETTERS] = {&s_dtype, &s_ndim, &s_size, &s_c_contiguous, &s_data, &s_shape, &s_strides};
    return names[which];
}

static PyObject *get_attr(PyObject *obj, const Getter *g, PyObject *name) {
    if (g->get != NULL) return g->get(obj, g->closure);
    return PyObject_GetAttr(obj, name);
}

/* The getters of obj's registered type while they hold. */
static const Getter *getters_for(PyObject *obj, int type_index) {
    unsigned int tag = getter_tags[type_index];
    return tag != 0 && Py_TYPE(obj)->tp_version_tag == tag ? array_getters[type_index] : no_getters;
}

static PyObject *array_attr(PyObject *obj, const Getter *getters, int which) {
    return get_attr(obj, &getters[which], *getter_names(which));
}

/* The type's version tag (assigned now if it has none), 0 if it cannot have one. */
static unsigned int version_tag(PyTypeObject *type) {
#if PY_VERSION_HEX >= 0x030C0000
    if (!PyUnstable_Type_AssignVersionTag(type)) return 0;
    return type->tp_version_tag;
#else
    (void)type;
    return 0; /* no public way to assign one: attributes by name */
#endif
}

/* The getter the instances of `type` reach for `name`, or an empty Getter. */
static Getter getter_of(PyTypeObject *type, PyObject *name) {
    Getter g = {NULL, NULL};
    if (type->tp_getattro != PyObject_GenericGetAttr) return g;
    PyObject *d = PyObject_GetAttr((PyObject *)type, name);
    if (d == NULL) {
        PyErr_Clear();
        return g;
    }
    if (Py_IS_TYPE(d, &PyGetSetDescr_Type)) {
        PyGetSetDescrObject *gs = (PyGetSetDescrObject *)d;
        if (gs->d_getset->get != NULL && PyType_IsSubtype(type, PyDescr_TYPE(gs))) {
            g.get = gs->d_getset->get;
            g.closure = gs->d_getset->closure;
        }
    }
    Py_DECREF(d); /* the type keeps it while its version tag holds: types are held until forget_types */
    return g;
}

#define MAX_CONTEXTS 8
#define MAX_SLOTS 256

typedef struct {
    void *ctx;
    uint64_t uid; /* cuCtxGetId of the context the function was loaded in (its handle without it) */
    void *fn;
    int ordinal;  /* the context's device; -1: unknown */
} ContextFunction;

/* With several GPUs every array must be on the device of the current context (where the kernel
   runs): the launcher then reads each array's device and leaves the launch to the Python path
   (which raises the error, or finds the device by the pointer) if it cannot tell or they differ. */
static int check_devices = 0;

typedef struct {
    int8_t *view_codes;   /* [n_views] */
    int8_t *scalar_codes; /* [n_params]; DT_NONE at a view or a Constexpr */
    int64_t *constexprs;  /* [n_constexprs]: the Constexpr values this variant was compiled for */
    int unique;           /* the view dtypes and Constexpr values pick this variant alone */
    int n_pre;            /* launch preconditions: instructions of `pre` */
    struct PInsn_ *pre;
    int n_contexts;
    ContextFunction contexts[MAX_CONTEXTS];
} Variant;

typedef struct {
    PyObject_HEAD
    int ready;
    Py_ssize_t n_params, n_views, n_slots, n_constexprs;
    int8_t *is_view, *is_mutable; /* [n_params] */
    int8_t *tensor_ndim;          /* [n_params]: N of a Tensor[T, N], 0 for a Slice or a scalar */
    int8_t *is_constexpr;         /* [n_params]: selects the variant, is not passed */
    Py_ssize_t n_variants;
    Variant *variants;
} Plan;

typedef struct {
    uint64_t ptr;
    int64_t length; /* elements spanned from ptr (a Tensor's: its last element's offset + 1) */
    int code;
    int readonly;
    int ndim;       /* 0: a 1-D Slice view; N: a Tensor, whose shape[N] then strides[N] are at dims */
    int64_t *dims;
    int device;     /* the CUDA ordinal of its memory, -1 if not read (read only with several GPUs) */
    int torch;      /* a PyTorch tensor (its version counter goes up when the kernel writes it) */
    uint64_t end;   /* ptr + length * itemsize: the end of its bytes (set by plan_launch) */
} View;

/* ---------------------------------------------------------------------------------------- */
/* arrays */

static int dtype_code_of(PyObject *dtype) {
    for (int i = 0; i < n_dtypes; i++)
        if (dtype_objs[i] == dtype) return dtype_codes[i];
    return DT_NONE;
}

static int dtype_attr_code(PyObject *obj) {
    PyObject *d = PyObject_GetAttr(obj, s_dtype);
    if (d == NULL) return DT_NONE;
    int code = dtype_code_of(d);
    Py_DECREF(d);
    return code;
}

/* A 1-tuple's element as a non-negative length; -1 otherwise. */
static int64_t length_of_shape(PyObject *shape) {
    if (shape == NULL || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) != 1) return -1;
    PyObject *n = PyTuple_GET_ITEM(shape, 0);
    if (!PyLong_Check(n)) return -1;
    long long v = PyLong_AsLongLong(n);
    if (v < 0) return -1;
    return (int64_t)v;
}

static int64_t length_attr(PyObject *obj) {
    PyObject *shape = PyObject_GetAttr(obj, s_shape);
    if (shape == NULL) return -1;
    int64_t n = length_of_shape(shape);
    Py_DECREF(shape);
    return n;
}

static int pointer_of(PyObject *value, uint64_t *out) {
    if (value == Py_None) {
        *out = 0;
        return 1;
    }
    if (!PyLong_Check(value)) return 0;
    unsigned long long p = PyLong_AsUnsignedLongLong(value);
    if (p == (unsigned long long)-1 && PyErr_Occurred()) return 0;
    *out = (uint64_t)p;
    return 1;
}

/* obj.<method>() of a registered array type: through the method looked up on its type when
   there is one (one call, no attribute lookup on the instance). */
static PyObject *call_array_method(PyObject *obj, int type_index, int which, PyObject *name) {
    PyObject *m = array_methods[type_index][which];
    if (m == NULL) return PyObject_CallMethodNoArgs(obj, name);
    Py_INCREF(m); /* a re-registration in another thread must not free it during the call */
    PyObject *r = PyObject_Vectorcall(m, &obj, 1, NULL);
    Py_DECREF(m);
    return r;
}

static int attr_is_true(PyObject *obj, PyObject *name) {
    PyObject *r = PyObject_GetAttr(obj, name);
    if (r == NULL) return 0;
    int ok = (r == Py_True);
    Py_DECREF(r);
    return ok;
}

static int pointer_from_call(PyObject *obj, int type_index, int which, PyObject *name, uint64_t *out) {
    PyObject *r = call_array_method(obj, type_index, which, name);
    if (r == NULL) return 0;
    int ok = pointer_of(r, out);
    Py_DECREF(r);
    return ok;
}

/* DLPack's DLManagedTensor (v0.8 ABI, what torch._C._to_dlpack returns in a "dltensor" capsule). */
typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice_;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType_;
typedef struct {
    void *data;
    DLDevice_ device;
    int32_t ndim;
    DLDataType_ dtype;
    int64_t *shape;
    int64_t *strides; /* NULL: compact row-major */
    uint64_t byte_offset;
} DLTensor_;
typedef struct DLManagedTensor_ {
    DLTensor_ dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor_ *);
} DLManagedTensor_;

/* DLPack's C exchange API (DLPack >= 1.2): a table of C functions a tensor type publishes as
   `type.__dlpack_c_exchange_api__`, a "dlpack_exchange_api" capsule. Its
   dltensor_from_py_object_no_sync fills a DLTensor on our stack, borrowed from the object until
   we return: no Python call, no allocation (PyTorch >= 2.10 has it). */
typedef struct {
    uint32_t major, minor;
} DLPackVersion_;
typedef struct DLPackExchangeAPIHeader_ {
    DLPackVersion_ version;
    struct DLPackExchangeAPIHeader_ *prev_api;
} DLPackExchangeAPIHeader_;
typedef int (*DLTensorFromPyObject_t)(void *py_object, DLTensor_ *out);
typedef int (*CurrentWorkStream_t)(int32_t device_type, int32_t device_id, void **out_stream);
typedef struct {
    DLPackExchangeAPIHeader_ header;
    void *managed_tensor_allocator;
    void *managed_tensor_from_py_object_no_sync;
    void *managed_tensor_to_py_object_no_sync;
    DLTensorFromPyObject_t dltensor_from_py_object_no_sync; /* may be NULL */
    CurrentWorkStream_t current_work_stream;                /* may be NULL */
} DLPackExchangeAPI_;
/* per registered type: its exchange API's DLTensor reader, or NULL */
static DLTensorFromPyObject_t exchange_readers[MAX_TYPES];
/* per registered type: its exchange API's current work stream (torch.cuda.current_stream), or NULL */
static CurrentWorkStream_t exchange_streams[MAX_TYPES];
/* current_stream(ordinal) -> int handle, per framework, from set_stream_getters: the framework's
   current stream where its exchange API gives none (PyTorch before 2.10, CuPy) */
static PyObject *torch_stream_getter = NULL, *cupy_stream_getter = NULL;
static PyObject *cupy_get_current_stream = NULL; /* cupy.cuda.get_current_stream, called without a Python frame */

/* torch._C._to_dlpack and torch.Tensor, when set_torch_dlpack gave them: one call then yields a
   plain tensor's pointer, length, stride, dtype and device, instead of five attribute reads
   (PyTorch without the exchange API). */
static PyObject *torch_to_dlpack = NULL;
static PyTypeObject *torch_tensor_type = NULL;

static int dlpack_code(DLDataType_ t) {
    if (t.lanes != 1) return DT_NONE;
    switch (t.code) {
    case 0: /* kDLInt */
        return t.bits == 8 ? DT_I8 : t.bits == 16 ? DT_I16 : t.bits == 32 ? DT_I32 : t.bits == 64 ? DT_I64 : DT_NONE;
    case 1: /* kDLUInt; 8 bits is left to the attribute path (older PyTorch exports bool so) */
        return t.bits == 16 ? DT_U16 : t.bits == 32 ? DT_U32 : t.bits == 64 ? DT_U64 : DT_NONE;
    case 2: /* kDLFloat */
        return t.bits == 16 ? DT_F16 : t.bits == 32 ? DT_F32 : t.bits == 64 ? DT_F64 : DT_NONE;
    case 4: /* kDLBfloat */
        return t.bits == 16 ? DT_BF16 : DT_NONE;
    case 6: /* kDLBool */
        return t.bits == 8 ? DT_BOOL : DT_NONE;
    default:
        return DT_NONE;
    }
}

static int finish_tensor(View *v, int n);
static int contiguous_strides(int n, const int64_t *shape, int64_t *strides);

/* A DLTensor as a 1-D contiguous view (n == 0) or an n-dimensional Tensor view. 1: read;
   0: not one the kernel takes (the Python path says why); -1: a dtype DLPack does not name
   plainly, read the attributes instead. */
static int dltensor_view(const DLTensor_ *t, int n, View *v) {
    if (t->device.device_type != 2 /* kDLCUDA */) return 0;
    int code = dlpack_code(t->dtype);
    if (code == DT_NONE) return -1;
    v->code = code;
    v->readonly = 0;
    v->device = t->device.device_id;
    v->ptr = (uint64_t)(uintptr_t)t->data + t->byte_offset;
    if (n == 0) {
        if (t->ndim != 1) return 0;
        int64_t len = t->shape[0];
        if (len < 0 || (len > 1 && t->strides != NULL && t->strides[0] != 1)) return 0;
        v->length = len;
        return 1;
    }
    if (t->ndim != n) return 0;
    int64_t *shape = v->dims, *strides = v->dims + n;
    memcpy(shape, t->shape, (size_t)n * 8);
    if (t->strides != NULL) memcpy(strides, t->strides, (size_t)n * 8);
    else if (!contiguous_strides(n, shape, strides)) return 0;
    return finish_tensor(v, n);
}

/* obj through its type's exchange API (see dltensor_view for the result). */
static int exchange_view(DLTensorFromPyObject_t read, PyObject *obj, int n, View *v) {
    DLTensor_ t;
    if (read((void *)obj, &t) != 0) {
        PyErr_Clear();
        return -1;
    }
    return dltensor_view(&t, n, v);
}

/* A plain torch.Tensor through torch._C._to_dlpack (see dltensor_view for the result). */
static int torch_view_dlpack(PyObject *obj, int n, View *v) {
    PyObject *cap = PyObject_CallOneArg(torch_to_dlpack, obj);
    if (cap == NULL) {
        PyErr_Clear();
        return -1;
    }
    DLManagedTensor_ *m = (DLManagedTensor_ *)PyCapsule_GetPointer(cap, "dltensor");
    int ok = -1;
    if (m == NULL) PyErr_Clear();
    else ok = dltensor_view(&m->dl_tensor, n, v);
    Py_DECREF(cap); /* not consumed: its destructor calls the tensor's deleter */
    return ok;
}

/* t.get_device() into v->device, when several GPUs make it needed. */
static int torch_device(PyObject *obj, int type_index, View *v) {
    if (!check_devices) return 1;
    PyObject *r = call_array_method(obj, type_index, TORCH_GET_DEVICE, s_get_device);
    if (r == NULL) return 0;
    long d = PyLong_Check(r) ? PyLong_AsLong(r) : -1;
    Py_DECREF(r);
    if (d < 0 || d > INT32_MAX) {
        PyErr_Clear();
        return 0;
    }
    v->device = (int)d;
    return 1;
}

/* Cheap checks first; the two method calls (PyTorch parses their arguments) last. */
static int torch_view(PyObject *obj, int type_index, View *v) {
    if (torch_to_dlpack != NULL && Py_TYPE(obj) == torch_tensor_type) {
        int r = torch_view_dlpack(obj, 0, v);
        if (r >= 0) return r;
    }
    if (!attr_is_true(obj, s_is_cuda)) return 0;
    v->code = dtype_attr_code(obj);
    if (v->code == DT_NONE) return 0;
    int64_t n = length_attr(obj);
    if (n < 0) return 0;
    if (n > 1) {
        PyObject *r = call_array_method(obj, type_index, TORCH_IS_CONTIGUOUS, s_is_contiguous);
        if (r == NULL) return 0;
        int contiguous = (r == Py_True);
        Py_DECREF(r);
        if (!contiguous) return 0;
    }
    v->length = n;
    v->readonly = 0;
    return torch_device(obj, type_index, v) && pointer_from_call(obj, type_index, TORCH_DATA_PTR, s_data_ptr, &v->ptr);
}

/* a.data.ptr of a CuPy array, and a.data.device_id with several GPUs */
static int cupy_pointer(PyObject *obj, const Getter *getters, View *v) {
    PyObject *data = array_attr(obj, getters, G_DATA);
    if (data == NULL) return 0;
    PyTypeObject *tp = Py_TYPE(data);
    if (memptr_type == NULL) { /* the first array: learn its MemoryPointer type */
        unsigned int tag = version_tag(tp);
        Getter g = getter_of(tp, s_ptr);
        if (tag != 0 && g.get != NULL) {
            memptr_ptr = g;
            memptr_device = getter_of(tp, s_device_id);
            memptr_tag = tag;
            memptr_type = (PyTypeObject *)Py_NewRef((PyObject *)tp);
        }
    }
    int fast = tp == memptr_type && tp->tp_version_tag == memptr_tag;
    PyObject *p = get_attr(data, fast ? &memptr_ptr : &no_getters[0], s_ptr);
    int ok = p != NULL && pointer_of(p, &v->ptr);
    Py_XDECREF(p);
    if (ok && check_devices) {
        PyObject *d = get_attr(data, fast ? &memptr_device : &no_getters[0], s_device_id);
        long id = d != NULL && PyLong_Check(d) ? PyLong_AsLong(d) : -1;
        Py_XDECREF(d);
        ok = id >= 0 && id <= INT32_MAX;
        v->device = (int)id;
    }
    Py_DECREF(data);
    return ok;
}

/* A non-negative int attribute; -1 otherwise. */
static int64_t count_attr(PyObject *obj, const Getter *getters, int which) {
    PyObject *r = array_attr(obj, getters, which);
    if (r == NULL) return -1;
    long long n = PyLong_Check(r) ? PyLong_AsLongLong(r) : -1;
    Py_DECREF(r);
    return n < 0 ? -1 : (int64_t)n;
}

static int cupy_dtype_code(PyObject *obj, const Getter *getters) {
    PyObject *d = array_attr(obj, getters, G_DTYPE);
    if (d == NULL) return DT_NONE;
    int code = dtype_code_of(d);
    Py_DECREF(d);
    return code;
}

static int cupy_view(PyObject *obj, int type_index, View *v) {
    int64_t n;
    const Getter *getters = getters_for(obj, type_index);
    v->code = cupy_dtype_code(obj, getters);
    if (v->code == DT_NONE) return 0;
    if (cupy_flat[type_index] && getters != no_getters) { /* ndim, size, _c_contiguous: no tuples */
        if (count_attr(obj, getters, G_NDIM) != 1) return 0;
        if ((n = count_attr(obj, getters, G_SIZE)) < 0) return 0;
        if (n > 1) {
            PyObject *c = array_attr(obj, getters, G_C_CONTIGUOUS);
            if (c == NULL) return 0;
            int contiguous = (c == Py_True);
            Py_DECREF(c);
            if (!contiguous) return 0;
        }
    } else {
        PyObject *shape = array_attr(obj, getters, G_SHAPE);
        n = length_of_shape(shape);
        Py_XDECREF(shape);
        if (n < 0) return 0;
        if (n > 1) {
            PyObject *strides = array_attr(obj, getters, G_STRIDES);
            if (strides == NULL) return 0;
            int ok = PyTuple_Check(strides) && PyTuple_GET_SIZE(strides) == 1 &&
                     PyLong_Check(PyTuple_GET_ITEM(strides, 0)) &&
                     PyLong_AsLongLong(PyTuple_GET_ITEM(strides, 0)) == itemsize[v->code];
            Py_DECREF(strides);
            if (!ok) return 0;
        }
    }
    v->length = n;
    v->readonly = 0;
    return cupy_pointer(obj, getters, v);
}

/* The stream a launch runs on, as the producer of an array would name it: 0 and 1 are both the
   legacy default stream (a handle of 0 to the driver, 1 in the CUDA array interface). Passed
   down to the readers, never kept: reading an argument may run Python and switch threads. */
static uint64_t same_stream(uint64_t s) { return s == 1 ? 0 : s; }

/* 1 if `producer` (None, or the int handle of the stream an array's data is ordered on) is the
   launch's stream or none; 0 otherwise: the Python path makes the launch wait for it. */
static int on_launch_stream(PyObject *producer, uint64_t launch_stream) {
    if (producer == NULL || producer == Py_None) return 1;
    if (!PyLong_Check(producer)) return 0;
    unsigned long long h = PyLong_AsUnsignedLongLong(producer);
    if (h == (unsigned long long)-1 && PyErr_Occurred()) return 0;
    return same_stream((uint64_t)h) == same_stream(launch_stream);
}

/* A DeviceArray's stream (a stream-ordered one must be the launch's: 0 leaves it to Python) and,
   when several GPUs make it needed, its `device` into v->device (None: -1). */
static int device_array_checks(PyObject *obj, View *v, uint64_t launch_stream) {
    PyObject *stream = PyObject_GetAttr(obj, s__stream); /* stream-ordered: on the launch's stream */
    if (stream == NULL) return 0;
    int same = on_launch_stream(stream, launch_stream);
    Py_DECREF(stream);
    if (!same) return 0;
    if (!check_devices) return 1;
    PyObject *d = PyObject_GetAttr(obj, s_device);
    if (d == NULL) return 0;
    long id = PyLong_Check(d) ? PyLong_AsLong(d) : -1;
    Py_DECREF(d);
    if (id < 0 || id > INT32_MAX) PyErr_Clear();
    else v->device = (int)id;
    return 1;
}

static int device_array_view(PyObject *obj, View *v, uint64_t launch_stream) {
    int64_t n = length_attr(obj);
    if (n < 0) return 0;
    v->code = dtype_attr_code(obj);
    if (v->code == DT_NONE) return 0;
    PyObject *p = PyObject_GetAttr(obj, s_ptr);
    if (p == NULL) return 0;
    int ok = pointer_of(p, &v->ptr);
    Py_DECREF(p);
    v->length = n;
    v->readonly = 0;
    return ok && device_array_checks(obj, v, launch_stream);
}

/* The interface's "data": (pointer, read-only) into v. */
static int cai_data(PyObject *cai, View *v) {
    PyObject *data = PyDict_GetItemWithError(cai, s_data);
    if (data == NULL || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) return 0;
    if (!pointer_of(PyTuple_GET_ITEM(data, 0), &v->ptr)) return 0;
    int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (readonly < 0) return 0;
    v->readonly = readonly;
    return 1;
}

/* The common case of arrays.py `_cai_view`: a contiguous 1-D array, no strides, no mask. */
static int cai_view(PyObject *obj, View *v, uint64_t launch_stream) {
    PyObject *cai = PyObject_GetAttr(obj, s_cai);
    if (cai == NULL) return 0;
    int ok = 0;
    if (!PyDict_Check(cai)) goto done;
    PyObject *shape = PyDict_GetItemWithError(cai, s_shape);
    int64_t n = length_of_shape(shape);
    if (n < 0) goto done;
    PyObject *typestr = PyDict_GetItemWithError(cai, s_typestr);
    if (typestr == NULL) goto done;
    PyObject *code = PyDict_GetItemWithError(typestr_codes, typestr);
    if (code == NULL) goto done;
    v->code = (int)PyLong_AsLong(code);
    PyObject *strides = PyDict_GetItemWithError(cai, s_strides);
    if (strides != NULL && strides != Py_None) goto done;
    PyObject *mask = PyDict_GetItemWithError(cai, s_mask);
    if (mask != NULL && mask != Py_None) goto done;
    if (PyErr_Occurred()) goto done;
    if (!on_launch_stream(PyDict_GetItemWithError(cai, s_stream), launch_stream) || PyErr_Occurred()) goto done;
    if (!cai_data(cai, v)) goto done;
    v->length = n;
    ok = 1;
done:
    Py_DECREF(cai);
    return ok;
}

/* ---------------------------------------------------------------------------------------- */
/* Tensor[T, N] views: pointer, shape[N], strides[N] in elements, as arrays.py tensor_view_of */

/* A tuple of exactly n ints into out[n]; 0 if it is not one. */
static int ints_of_tuple(PyObject *t, int n, int64_t *out) {
    if (t == NULL || !PyTuple_Check(t) || PyTuple_GET_SIZE(t) != n) return 0;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(t, i);
        if (!PyLong_Check(x)) return 0;
        int overflow = 0;
        long long y = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (overflow || (y == -1 && PyErr_Occurred())) return 0;
        out[i] = (int64_t)y;
    }
    return 1;
}

static int shape_attr(PyObject *obj, int n, int64_t *out) {
    PyObject *shape = PyObject_GetAttr(obj, s_shape);
    if (shape == NULL) return 0;
    int ok = ints_of_tuple(shape, n, out);
    Py_DECREF(shape);
    return ok;
}

/* The C-order strides (elements) of a contiguous array: arrays.py _contiguous_strides. 0 if a
   stride does not fit int64 (a shape no memory holds: the Python path refuses it). */
static int contiguous_strides(int n, const int64_t *shape, int64_t *strides) {
    uint64_t step = 1;
    for (int i = n - 1; i >= 0; i--) {
        if (step > INT64_MAX) return 0;
        strides[i] = (int64_t)step;
        if (!mul_u64(step, shape[i] > 1 ? (uint64_t)shape[i] : 1, &step)) return 0;
    }
    return 1;
}

/* Byte strides to element strides: each a non-negative whole number of elements. */
static int element_strides(PyObject *byte_strides, int n, int code, int64_t *out) {
    if (!ints_of_tuple(byte_strides, n, out)) return 0;
    int64_t size = (int64_t)itemsize[code];
    for (int i = 0; i < n; i++) {
        if (out[i] < 0 || out[i] % size != 0) return 0;
        out[i] /= size;
    }
    return 1;
}

/* The checks every reader shares (non-negative shape and strides) and the span for the
   aliasing check: TensorView.length, which must fit int64 (a larger one, a shape that lies, is
   left to the Python path, which refuses it). */
static int finish_tensor(View *v, int n) {
    int64_t *shape = v->dims, *strides = v->dims + n;
    uint64_t span = 1;
    int empty = 0;
    for (int i = 0; i < n; i++) {
        if (shape[i] < 0 || strides[i] < 0) return 0;
        if (shape[i] == 0) empty = 1;
    }
    for (int i = 0; i < n && !empty; i++) {
        uint64_t step;
        if (!mul_u64((uint64_t)(shape[i] - 1), (uint64_t)strides[i], &step) || !add_u64(span, step, &span)) return 0;
    }
    if (span > INT64_MAX) return 0;
    v->length = empty ? 0 : (int64_t)span;
    v->ndim = n;
    return 1;
}

/* Whether two indices of a Tensor view may name one element (arrays.py may_overlap_itself):
   with its axes of more than one element sorted by stride, each stride must exceed the span
   of the axes below it. The span fits int64 (finish_tensor). */
static int tensor_overlaps_itself(const View *v) {
    int n = v->ndim, k = 0;
    int64_t axis_stride[MAX_NDIM], axis_dim[MAX_NDIM];
    if (v->length == 0) return 0; /* no element at all */
    for (int i = 0; i < n; i++) {
        int64_t d = v->dims[i], s = v->dims[n + i];
        if (d <= 1) continue;
        int j = k++;
        while (j > 0 && axis_stride[j - 1] > s) { /* insertion sort by stride */
            axis_stride[j] = axis_stride[j - 1], axis_dim[j] = axis_dim[j - 1];
            j--;
        }
        axis_stride[j] = s, axis_dim[j] = d;
    }
    int64_t span = 0;
    for (int j = 0; j < k; j++) {
        if (axis_stride[j] <= span) return 1;
        span += (axis_dim[j] - 1) * axis_stride[j];
    }
    return 0;
}

static int torch_tensor(PyObject *obj, int type_index, int n, View *v) {
    if (!attr_is_true(obj, s_is_cuda)) return 0;
    v->code = dtype_attr_code(obj);
    if (v->code == DT_NONE) return 0;
    if (!shape_attr(obj, n, v->dims)) return 0;
    PyObject *strides = call_array_method(obj, type_index, TORCH_STRIDE, s_stride);
    if (strides == NULL) return 0;
    int ok = ints_of_tuple(strides, n, v->dims + n);
    Py_DECREF(strides);
    if (!ok) return 0;
    v->readonly = 0;
    return torch_device(obj, type_index, v) &&
           pointer_from_call(obj, type_index, TORCH_DATA_PTR, s_data_ptr, &v->ptr) && finish_tensor(v, n);
}

static int cupy_tensor(PyObject *obj, int type_index, int n, View *v) {
    const Getter *getters = getters_for(obj, type_index);
    v->code = cupy_dtype_code(obj, getters);
    if (v->code == DT_NONE) return 0;
    PyObject *shape = array_attr(obj, getters, G_SHAPE);
    int ok = ints_of_tuple(shape, n, v->dims);
    Py_XDECREF(shape);
    if (!ok) return 0;
    PyObject *strides = array_attr(obj, getters, G_STRIDES);
    if (strides == NULL) return 0;
    ok = element_strides(strides, n, v->code, v->dims + n);
    Py_DECREF(strides);
    v->readonly = 0;
    return ok && cupy_pointer(obj, getters, v) && finish_tensor(v, n);
}

static int device_array_tensor(PyObject *obj, int n, View *v, uint64_t launch_stream) {
    v->code = dtype_attr_code(obj);
    if (v->code == DT_NONE) return 0;
    if (!shape_attr(obj, n, v->dims)) return 0;
    if (!contiguous_strides(n, v->dims, v->dims + n)) return 0;
    PyObject *p = PyObject_GetAttr(obj, s_ptr);
    if (p == NULL) return 0;
    int ok = pointer_of(p, &v->ptr);
    Py_DECREF(p);
    v->readonly = 0;
    return ok && device_array_checks(obj, v, launch_stream) && finish_tensor(v, n);
}

static int cai_tensor(PyObject *obj, int n, View *v, uint64_t launch_stream) {
    PyObject *cai = PyObject_GetAttr(obj, s_cai);
    if (cai == NULL) return 0;
    int ok = 0;
    if (!PyDict_Check(cai)) goto done;
    PyObject *mask = PyDict_GetItemWithError(cai, s_mask);
    if (mask != NULL && mask != Py_None) goto done;
    if (!on_launch_stream(PyDict_GetItemWithError(cai, s_stream), launch_stream) || PyErr_Occurred()) goto done;
    if (!ints_of_tuple(PyDict_GetItemWithError(cai, s_shape), n, v->dims)) goto done;
    PyObject *typestr = PyDict_GetItemWithError(cai, s_typestr);
    if (typestr == NULL) goto done;
    PyObject *code = PyDict_GetItemWithError(typestr_codes, typestr);
    if (code == NULL) goto done;
    v->code = (int)PyLong_AsLong(code);
    if (v->code <= DT_NONE || v->code >= DT_COUNT) goto done;
    PyObject *strides = PyDict_GetItemWithError(cai, s_strides);
    if (strides == NULL || strides == Py_None) {
        if (PyErr_Occurred() || !contiguous_strides(n, v->dims, v->dims + n)) goto done;
    } else if (!element_strides(strides, n, v->code, v->dims + n)) {
        goto done;
    }
    ok = cai_data(cai, v) && finish_tensor(v, n);
done:
    Py_DECREF(cai);
    return ok;
}

static int array_type_index(PyObject *obj) {
    PyTypeObject *tp = Py_TYPE(obj);
    for (int i = 0; i < n_array_types; i++)
        if (array_types[i] == tp) return i;
    return -1;
}

/* 1: `obj` read into `v` as an n-dimensional Tensor (v->dims must have room for 2n values);
   0: leave it to the Python path. Never leaves an exception set. */
static int resolve_tensor(PyObject *obj, int n, View *v, uint64_t launch_stream) {
    int i = array_type_index(obj);
    v->device = -1;
    v->torch = i >= 0 && array_kinds[i] == ARRAY_TORCH;
    int ok = 0;
    int r = -1;
    if (i >= 0 && exchange_readers[i] != NULL) r = exchange_view(exchange_readers[i], obj, n, v);
    else if (i >= 0 && torch_to_dlpack != NULL && Py_TYPE(obj) == torch_tensor_type) r = torch_view_dlpack(obj, n, v);
    if (r >= 0) {
        ok = r;
    } else if (i >= 0) {
        switch (array_kinds[i]) {
        case ARRAY_TORCH: ok = torch_tensor(obj, i, n, v); break;
        case ARRAY_CUPY: ok = cupy_tensor(obj, i, n, v); break;
        case ARRAY_DEVICE_ARRAY: ok = device_array_tensor(obj, n, v, launch_stream); break;
        case ARRAY_CAI: ok = cai_tensor(obj, n, v, launch_stream); break;
        default: break;
        }
    }
    if (!ok && PyErr_Occurred()) PyErr_Clear();
    return ok;
}

/* 1: `obj` read into `v` as a 1-D contiguous view; 0: leave it to the Python path. Never
   leaves an exception set. */
static int resolve_view(PyObject *obj, View *v, uint64_t launch_stream) {
    int i = array_type_index(obj);
    int kind = i >= 0 ? array_kinds[i] : ARRAY_NONE;
    int ok = 0;
    v->ndim = 0;
    v->device = -1;
    v->torch = kind == ARRAY_TORCH;
    int r = i >= 0 && exchange_readers[i] != NULL ? exchange_view(exchange_readers[i], obj, 0, v) : -1;
    if (r >= 0) kind = ARRAY_NONE, ok = r;
    switch (kind) {
    case ARRAY_TORCH: ok = torch_view(obj, i, v); break;
    case ARRAY_CUPY: ok = cupy_view(obj, i, v); break;
    case ARRAY_DEVICE_ARRAY: ok = device_array_view(obj, v, launch_stream); break;
    case ARRAY_CAI: ok = cai_view(obj, v, launch_stream); break;
    default: break;
    }
    if (!ok && PyErr_Occurred()) PyErr_Clear();
    return ok;
}

/* ---------------------------------------------------------------------------------------- */
/* scalars: the values launch.py's converters accept, packed as its struct formats pack them */

static int as_double(PyObject *value, double *out) {
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        return 1;
    }
    if (PyLong_CheckExact(value) || is_numpy_scalar(value)) {
        double d = PyLong_CheckExact(value) ? PyLong_AsDouble(value) : PyFloat_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        *out = d;
        return 1;
    }
    return 0;
}

static int pack_scalar(PyObject *value, int code, uint64_t *slot) {
    if (code >= DT_I8 && code <= DT_U64 && !PyLong_Check(value) && is_numpy_scalar(value)) {
        PyObject *index = PyNumber_Index(value); /* numpy.int32(5) -> 5; numpy.float32 refuses */
        if (index == NULL) {
            PyErr_Clear();
            return 0;
        }
        int ok = pack_scalar(index, code, slot);
        Py_DECREF(index);
        return ok;
    }
    unsigned char *p = (unsigned char *)slot;
    *slot = 0;
    if (code >= DT_I8 && code <= DT_U32 && code != DT_I64) {
        if (!PyLong_Check(value)) return 0;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        switch (code) {
        case DT_I8: if (x < INT8_MIN || x > INT8_MAX) return 0; { int8_t y = (int8_t)x; memcpy(p, &y, 1); } break;
        case DT_I16: if (x < INT16_MIN || x > INT16_MAX) return 0; { int16_t y = (int16_t)x; memcpy(p, &y, 2); } break;
        case DT_I32: if (x < INT32_MIN || x > INT32_MAX) return 0; { int32_t y = (int32_t)x; memcpy(p, &y, 4); } break;
        case DT_U8: if (x < 0 || x > UINT8_MAX) return 0; { uint8_t y = (uint8_t)x; memcpy(p, &y, 1); } break;
        case DT_U16: if (x < 0 || x > UINT16_MAX) return 0; { uint16_t y = (uint16_t)x; memcpy(p, &y, 2); } break;
        case DT_U32: if (x < 0 || x > (long long)UINT32_MAX) return 0; { uint32_t y = (uint32_t)x; memcpy(p, &y, 4); } break;
        }
        return 1;
    }
    if (code == DT_I64) {
        if (!PyLong_Check(value)) return 0;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        int64_t y = (int64_t)x;
        memcpy(p, &y, 8);
        return 1;
    }
    if (code == DT_U64) {
        if (!PyLong_Check(value)) return 0;
        unsigned long long x = PyLong_AsUnsignedLongLong(value);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        uint64_t y = (uint64_t)x;
        memcpy(p, &y, 8);
        return 1;
    }
    if (code == DT_BOOL) {
        uint8_t y;
        if (value == Py_True) y = 1;
        else if (value == Py_False) y = 0;
        else if (PyLong_CheckExact(value)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (overflow || (x != 0 && x != 1)) return 0;
            y = (uint8_t)x;
        } else return 0;
        memcpy(p, &y, 1);
        return 1;
    }
    double d;
    if (!as_double(value, &d)) return 0;
    switch (code) {
    case DT_F64:
        memcpy(p, &d, 8);
        return 1;
    case DT_F32: {
        if (fabs(d) > FLT_MAX && !isinf(d)) return 0; /* the Python path rounds these the GPU's way */
        float f = (float)d;
        memcpy(p, &f, 4);
        return 1;
    }
    case DT_F16:
        if (fabs(d) > 65504.0 && !isinf(d)) return 0;
#if PY_VERSION_HEX >= 0x030B0000
        if (PyFloat_Pack2(d, (char *)p, PY_LITTLE_ENDIAN) < 0) {
#else
        if (_PyFloat_Pack2(d, p, PY_LITTLE_ENDIAN) < 0) {
#endif
            PyErr_Clear();
            *slot = 0;
            return 0;
        }
        return 1;
    case DT_BF16: {
        uint16_t y;
        if (isnan(d)) y = 0x7FC0;
        else {
            if (fabs(d) > 3.3895313892515355e38 && !isinf(d)) return 0;
            float f = (float)d;
            uint32_t bits;
            memcpy(&bits, &f, 4);
            uint64_t rounded = (uint64_t)bits + 0x7FFF + ((bits >> 16) & 1); /* to nearest even */
            y = (uint16_t)((rounded >> 16) & 0xFFFF);
        }
        memcpy(p, &y, 2);
        return 1;
    }
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* launch preconditions (oxide/runtime/preconditions.py), compiled once per variant into
   postfix code over the packed slots and the launch dimensions, evaluated before every launch.

   Python evaluates them over unbounded ints; every value an expression can have lies in
   [-2^63, 2^64) (slots, dimensions and the results of the wrapping operations are i64 or u64
   values; constants outside that range are refused at compile time), so a value here is its
   low 64 bits and a sign flag: `neg` is 1 exactly when the value is negative. Comparisons
   are then exact, and the wrapping operations (to at most 64 bits) need only the low bits. */

enum { PC_CONST, PC_ARG, PC_GRID, PC_BLOCK, PC_CAST, PC_ADD, PC_SUB, PC_MUL, PC_NEG, PC_LT, PC_LE, PC_GT, PC_GE,
       PC_EQ, PC_NE, PC_AND, PC_OR, PC_NOT, PC_TRUTH, PC_CHECK };

typedef struct PInsn_ {
    uint8_t op;
    uint8_t ty;     /* a DT_ integer or bool code: of PC_ARG's slot, of PC_CAST and the arithmetic */
    uint8_t neg;    /* PC_CONST: the value is negative */
    uint16_t index; /* PC_ARG: slot; PC_GRID, PC_BLOCK: axis; PC_CHECK: which precondition */
    uint64_t bits;  /* PC_CONST: the value's low 64 bits */
} PInsn;

typedef struct {
    uint64_t bits;
    uint64_t neg;
} PValue;

#define PRE_STACK 32     /* the deepest expression the evaluator takes; deeper ones stay in Python */
#define PRE_MAX_CODE 4096 /* instructions per variant */

/* preconditions._wrap(ty, v) of a value whose low 64 bits are `low` (ty not bool) */
static inline PValue pre_wrap(int ty, uint64_t low) {
    PValue r;
    switch (ty) {
    case DT_I8: r.bits = (uint64_t)(int64_t)(int8_t)(uint8_t)low; break;
    case DT_I16: r.bits = (uint64_t)(int64_t)(int16_t)(uint16_t)low; break;
    case DT_I32: r.bits = (uint64_t)(int64_t)(int32_t)(uint32_t)low; break;
    case DT_U8: r.bits = (uint8_t)low; r.neg = 0; return r;
    case DT_U16: r.bits = (uint16_t)low; r.neg = 0; return r;
    case DT_U32: r.bits = (uint32_t)low; r.neg = 0; return r;
    case DT_U64: r.bits = low; r.neg = 0; return r;
    default: r.bits = low; break; /* DT_I64 */
    }
    r.neg = r.bits >> 63;
    return r;
}

/* The slot's value as the Python path has it: what pack_scalar or the view wrote, of type ty. */
static inline PValue pre_load(int ty, const uint64_t *slot) {
    switch (ty) {
    case DT_I8: { int8_t y; memcpy(&y, slot, 1); return pre_wrap(DT_I64, (uint64_t)(int64_t)y); }
    case DT_I16: { int16_t y; memcpy(&y, slot, 2); return pre_wrap(DT_I64, (uint64_t)(int64_t)y); }
    case DT_I32: { int32_t y; memcpy(&y, slot, 4); return pre_wrap(DT_I64, (uint64_t)(int64_t)y); }
    case DT_U8: case DT_BOOL: { uint8_t y; memcpy(&y, slot, 1); return pre_wrap(DT_U64, y); }
    case DT_U16: { uint16_t y; memcpy(&y, slot, 2); return pre_wrap(DT_U64, y); }
    case DT_U32: { uint32_t y; memcpy(&y, slot, 4); return pre_wrap(DT_U64, y); }
    case DT_U64: return pre_wrap(DT_U64, *slot);
    default: return pre_wrap(DT_I64, *slot); /* DT_I64: a length, shape, stride or i64 scalar */
    }
}

static inline int pre_less(PValue a, PValue b) { return a.neg != b.neg ? (int)a.neg : a.bits < b.bits; }

static inline PValue pre_flag(int x) {
    PValue r = {(uint64_t)(x != 0), 0};
    return r;
}

/* The index of the first precondition that does not hold, or -1 when all do. */
static int preconditions_failed(const PInsn *code, int n, const uint64_t *slots, const unsigned *grid,
                                const unsigned *block) {
    PValue st[PRE_STACK];
    int sp = 0;
    for (const PInsn *in = code, *end = code + n; in < end; in++) {
        switch (in->op) {
        case PC_CONST: st[sp].bits = in->bits, st[sp].neg = in->neg, sp++; break;
        case PC_ARG: st[sp++] = pre_load(in->ty, &slots[in->index]); break;
        case PC_GRID: st[sp].bits = grid[in->index], st[sp].neg = 0, sp++; break;
        case PC_BLOCK: st[sp].bits = block[in->index], st[sp].neg = 0, sp++; break;
        case PC_CAST: st[sp - 1] = in->ty == DT_BOOL ? pre_flag(st[sp - 1].bits != 0) : pre_wrap(in->ty, st[sp - 1].bits); break;
        case PC_ADD: sp--, st[sp - 1] = pre_wrap(in->ty, st[sp - 1].bits + st[sp].bits); break;
        case PC_SUB: sp--, st[sp - 1] = pre_wrap(in->ty, st[sp - 1].bits - st[sp].bits); break;
        case PC_MUL: sp--, st[sp - 1] = pre_wrap(in->ty, st[sp - 1].bits * st[sp].bits); break;
        case PC_NEG: st[sp - 1] = pre_wrap(in->ty, (uint64_t)0 - st[sp - 1].bits); break;
        case PC_LT: sp--, st[sp - 1] = pre_flag(pre_less(st[sp - 1], st[sp])); break;
        case PC_LE: sp--, st[sp - 1] = pre_flag(!pre_less(st[sp], st[sp - 1])); break;
        case PC_GT: sp--, st[sp - 1] = pre_flag(pre_less(st[sp], st[sp - 1])); break;
        case PC_GE: sp--, st[sp - 1] = pre_flag(!pre_less(st[sp - 1], st[sp])); break;
        case PC_EQ: sp--, st[sp - 1] = pre_flag(st[sp - 1].bits == st[sp].bits && st[sp - 1].neg == st[sp].neg); break;
        case PC_NE: sp--, st[sp - 1] = pre_flag(st[sp - 1].bits != st[sp].bits || st[sp - 1].neg != st[sp].neg); break;
        case PC_AND: sp--, st[sp - 1] = pre_flag(st[sp - 1].bits != 0 && st[sp].bits != 0); break;
        case PC_OR: sp--, st[sp - 1] = pre_flag(st[sp - 1].bits != 0 || st[sp].bits != 0); break;
        case PC_NOT: st[sp - 1] = pre_flag(st[sp - 1].bits == 0); break;
        case PC_TRUTH: st[sp - 1] = pre_flag(st[sp - 1].bits != 0); break;
        case PC_CHECK:
            if (st[--sp].bits == 0) return in->index;
            break;
        }
    }
    return -1;
}

typedef struct {
    PInsn *code;
    int n, cap, depth, max_depth;
    const int8_t *slot_codes; /* [n_slots]: the DT_ code of each packed slot */
    Py_ssize_t n_slots;
} PreCompiler;

static int pre_emit(PreCompiler *c, int op, int ty, int index, int delta) {
    if (c->n >= PRE_MAX_CODE) return 0;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        PInsn *code = PyMem_Realloc(c->code, (size_t)cap * sizeof(PInsn));
        if (code == NULL) return 0;
        c->code = code, c->cap = cap;
    }
    PInsn *in = &c->code[c->n++];
    memset(in, 0, sizeof *in);
    in->op = (uint8_t)op, in->ty = (uint8_t)ty, in->index = (uint16_t)index;
    c->depth += delta;
    if (c->depth > c->max_depth) c->max_depth = c->depth;
    return c->depth <= PRE_STACK;
}

static int pre_is(PyObject *s, const char *name) {
    return PyUnicode_Check(s) && PyUnicode_CompareWithASCIIString(s, name) == 0;
}

/* A type name of the encoding as its DT_ code; DT_NONE if it is not one. */
static int pre_type(PyObject *s) {
    static const char *names[] = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool"};
    static const int codes[] = {DT_I8, DT_I16, DT_I32, DT_I64, DT_U8, DT_U16, DT_U32, DT_U64, DT_BOOL};
    for (int i = 0; i < 9; i++)
        if (pre_is(s, names[i])) return codes[i];
    return DT_NONE;
}

/* A non-negative int below `limit`, or -1. */
static long pre_small_int(PyObject *x, long limit) {
    if (!PyLong_Check(x)) return -1;
    int overflow = 0;
    long v = PyLong_AsLongAndOverflow(x, &overflow);
    if (overflow || v < 0 || v >= limit) {
        PyErr_Clear();
        return -1;
    }
    return v;
}

/* Appends the code of expression e; 0 where the evaluator cannot take it exactly like
   preconditions.evaluate (the kernel then launches through Python). Leaves no exception set. */
static int pre_compile(PreCompiler *c, PyObject *e, int nesting) {
    if (nesting > 64 || !(PyList_Check(e) || PyTuple_Check(e))) return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(e);
    PyObject **item = PySequence_Fast_ITEMS(e);
    if (n < 1 || !PyUnicode_Check(item[0])) return 0;
    PyObject *op = item[0];
    if (pre_is(op, "const")) {
        if (n != 2 || !PyLong_Check(item[1])) return 0;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(item[1], &overflow);
        uint64_t bits;
        if (overflow > 0) {
            unsigned long long u = PyLong_AsUnsignedLongLong(item[1]); /* [2^63, 2^64) */
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
            bits = (uint64_t)u;
        } else if (overflow < 0 || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        } else {
            bits = (uint64_t)v;
        }
        if (!pre_emit(c, PC_CONST, 0, 0, 1)) return 0;
        c->code[c->n - 1].bits = bits;
        c->code[c->n - 1].neg = overflow == 0 && v < 0;
        return 1;
    }
    if (pre_is(op, "arg")) {
        long k = n == 2 ? pre_small_int(item[1], (long)c->n_slots) : -1;
        if (k < 0) return 0;
        int ty = c->slot_codes[k];
        if (!((ty >= DT_I8 && ty <= DT_U64) || ty == DT_BOOL)) return 0; /* a float: Python truncates it */
        return pre_emit(c, PC_ARG, ty, (int)k, 1);
    }
    if (pre_is(op, "grid") || pre_is(op, "block")) {
        long a = n == 2 ? pre_small_int(item[1], 3) : -1;
        return a >= 0 && pre_emit(c, pre_is(op, "grid") ? PC_GRID : PC_BLOCK, 0, (int)a, 1);
    }
    if (pre_is(op, "cast")) {
        int ty = n == 3 ? pre_type(item[1]) : DT_NONE;
        return ty != DT_NONE && pre_compile(c, item[2], nesting + 1) && pre_emit(c, PC_CAST, ty, 0, 0);
    }
    if (pre_is(op, "add") || pre_is(op, "sub") || pre_is(op, "mul")) {
        int ty = n == 4 ? pre_type(item[1]) : DT_NONE;
        int code = pre_is(op, "add") ? PC_ADD : pre_is(op, "sub") ? PC_SUB : PC_MUL;
        /* arithmetic in bool (never emitted by the compiler) needs the exact result: Python's */
        return ty != DT_NONE && ty != DT_BOOL && pre_compile(c, item[2], nesting + 1) &&
               pre_compile(c, item[3], nesting + 1) && pre_emit(c, code, ty, 0, -1);
    }
    if (pre_is(op, "neg")) {
        int ty = n == 3 ? pre_type(item[1]) : DT_NONE;
        return ty != DT_NONE && ty != DT_BOOL && pre_compile(c, item[2], nesting + 1) && pre_emit(c, PC_NEG, ty, 0, 0);
    }
    static const char *comparisons[] = {"lt", "le", "gt", "ge", "eq", "ne"};
    for (int i = 0; i < 6; i++) {
        if (pre_is(op, comparisons[i]))
            return n == 3 && pre_compile(c, item[1], nesting + 1) && pre_compile(c, item[2], nesting + 1) &&
                   pre_emit(c, PC_LT + i, 0, 0, -1);
    }
    if (pre_is(op, "and") || pre_is(op, "or")) {
        int is_and = pre_is(op, "and");
        if (n != 2 || !(PyList_Check(item[1]) || PyTuple_Check(item[1]))) return 0;
        Py_ssize_t m = PySequence_Fast_GET_SIZE(item[1]);
        PyObject **parts = PySequence_Fast_ITEMS(item[1]);
        if (m == 0) { /* all([]) is 1, any([]) is 0 */
            if (!pre_emit(c, PC_CONST, 0, 0, 1)) return 0;
            c->code[c->n - 1].bits = (uint64_t)is_and;
            return 1;
        }
        if (!pre_compile(c, parts[0], nesting + 1) || !pre_emit(c, PC_TRUTH, 0, 0, 0)) return 0;
        for (Py_ssize_t i = 1; i < m; i++)
            if (!pre_compile(c, parts[i], nesting + 1) || !pre_emit(c, is_and ? PC_AND : PC_OR, 0, 0, -1)) return 0;
        return 1;
    }
    if (pre_is(op, "not")) return n == 2 && pre_compile(c, item[1], nesting + 1) && pre_emit(c, PC_NOT, 0, 0, 0);
    return 0; /* an operation this launcher does not know: Python says what it is */
}

/* The code that checks every expression of `exprs` (a sequence, or None for none), in order,
   over slots of the given codes: *out (NULL when there are none) and its length. 0 if the
   evaluator cannot take them; -1 with an exception set on a malformed argument. */
static int compile_preconditions(PyObject *exprs, const int8_t *slot_codes, Py_ssize_t n_slots, PInsn **out,
                                 int *n_out) {
    *out = NULL, *n_out = 0;
    if (exprs == NULL || exprs == Py_None) return 1;
    PyObject *fast = PySequence_Fast(exprs, "preconditions must be a sequence");
    if (fast == NULL) return -1;
    PreCompiler c = {NULL, 0, 0, 0, 0, slot_codes, n_slots};
    int ok = 1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    for (Py_ssize_t i = 0; i < count && ok; i++) {
        ok = i < UINT16_MAX && pre_compile(&c, PySequence_Fast_GET_ITEM(fast, i), 0) &&
             pre_emit(&c, PC_CHECK, 0, (int)i, -1);
    }
    Py_DECREF(fast);
    if (PyErr_Occurred()) PyErr_Clear();
    if (!ok) {
        PyMem_Free(c.code);
        return 0;
    }
    *out = c.code, *n_out = c.n;
    return 1;
}

/* ---------------------------------------------------------------------------------------- */
/* Plan: what the launcher needs to know about one kernel */

static void plan_clear(Plan *self) {
    if (self->variants != NULL) {
        for (Py_ssize_t i = 0; i < self->n_variants; i++) {
            PyMem_Free(self->variants[i].view_codes);
            PyMem_Free(self->variants[i].scalar_codes);
            PyMem_Free(self->variants[i].constexprs);
            PyMem_Free(self->variants[i].pre);
        }
        PyMem_Free(self->variants);
    }
    PyMem_Free(self->is_view);
    PyMem_Free(self->is_mutable);
    PyMem_Free(self->tensor_ndim);
    PyMem_Free(self->is_constexpr);
    self->variants = NULL;
    self->is_view = self->is_mutable = self->tensor_ndim = self->is_constexpr = NULL;
    self->n_variants = self->n_params = self->n_views = self->n_slots = self->n_constexprs = 0;
    self->ready = 0;
}

static void plan_dealloc(Plan *self) {
    plan_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A sequence of n ints as int64 values (all zero when seq is None), or NULL with an exception. */
static int64_t *int64s_from(PyObject *seq, Py_ssize_t n) {
    int64_t *out = PyMem_Calloc(n > 0 ? n : 1, sizeof(int64_t));
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (seq == Py_None) return out;
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of ints");
    if (fast == NULL || PySequence_Fast_GET_SIZE(fast) != n) {
        if (fast != NULL) PyErr_SetString(PyExc_ValueError, "wrong number of values");
        Py_XDECREF(fast);
        PyMem_Free(out);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            PyMem_Free(out);
            Py_DECREF(fast);
            return NULL;
        }
        out[i] = (int64_t)v;
    }
    Py_DECREF(fast);
    return out;
}

/* The same as small codes (dtype codes, flags, ndims), or NULL with an exception. */
static int8_t *codes_from(PyObject *seq, Py_ssize_t n) {
    int64_t *values = int64s_from(seq, n);
    if (values == NULL) return NULL;
    int8_t *out = PyMem_Calloc(n > 0 ? n : 1, 1);
    if (out == NULL) {
        PyMem_Free(values);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (values[i] < INT8_MIN || values[i] > INT8_MAX) {
            PyMem_Free(values);
            PyMem_Free(out);
            PyErr_SetString(PyExc_ValueError, "a code out of range");
            return NULL;
        }
        out[i] = (int8_t)values[i];
    }
    PyMem_Free(values);
    return out;
}

/* The DT_ code of each packed slot of `var`: a view's pointer is u64, its length (a Tensor's
   shape and strides) i64, a scalar its dtype. */
static void slot_codes_of(const Plan *plan, const Variant *var, int8_t *out) {
    Py_ssize_t s = 0;
    for (Py_ssize_t i = 0; i < plan->n_params; i++) {
        if (plan->is_constexpr[i]) continue;
        if (plan->is_view[i]) {
            int nd = plan->tensor_ndim[i];
            out[s++] = DT_U64;
            for (int k = 0; k < (nd ? 2 * nd : 1); k++) out[s++] = DT_I64;
        } else {
            out[s++] = var->scalar_codes[i];
        }
    }
}

/* configure(is_view, is_mutable, variants, tensor_ndim=None, is_constexpr=None): per parameter,
   whether it is a view, written, the N of a Tensor[T, N] (0 otherwise), a Constexpr; variants
   is a sequence of (view_codes, scalar_codes, unique[, constexpr_values[, preconditions]]), the
   preconditions being the `expr`s of KernelSpec.preconditions. Returns whether launches may
   take the C path (False: a parameter layout or a precondition it does not take). Once only:
   a configured plan ignores it (another thread may be inside plan_launch, between two Python
   calls, reading it); reset() first to redo it. */
static PyObject *plan_configure(Plan *self, PyObject *args) {
    PyObject *is_view, *is_mutable, *variants, *tensor_ndim = Py_None, *is_constexpr = Py_None;
    if (!PyArg_ParseTuple(args, "OOO|OO", &is_view, &is_mutable, &variants, &tensor_ndim, &is_constexpr)) return NULL;
    if (self->ready) Py_RETURN_TRUE;
    plan_clear(self);
    Py_ssize_t n = PySequence_Size(is_view);
    if (n < 0) return NULL;
    self->n_params = n;
    if ((self->is_view = codes_from(is_view, n)) == NULL) goto fail;
    if ((self->is_mutable = codes_from(is_mutable, n)) == NULL) goto fail;
    if ((self->tensor_ndim = codes_from(tensor_ndim, n)) == NULL) goto fail;
    if ((self->is_constexpr = codes_from(is_constexpr, n)) == NULL) goto fail;
    Py_ssize_t slots = 0, views = 0, constexprs = 0;
    int fits = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int nd = self->tensor_ndim[i];
        if (self->is_constexpr[i]) {
            constexprs++;
        } else if (self->is_view[i]) {
            views++;
            slots += nd ? 1 + 2 * nd : 2;
            if (nd < 0 || nd > MAX_NDIM) fits = 0;
        } else {
            slots++;
        }
    }
    self->n_slots = slots;
    self->n_views = views;
    self->n_constexprs = constexprs;
    PyObject *fast = PySequence_Fast(variants, "variants must be a sequence");
    if (fast == NULL) goto fail;
    Py_ssize_t nv = PySequence_Fast_GET_SIZE(fast);
    self->variants = PyMem_Calloc(nv > 0 ? nv : 1, sizeof(Variant));
    if (self->variants == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        goto fail;
    }
    self->n_variants = nv;
    fits = fits && slots <= MAX_SLOTS && constexprs <= MAX_SLOTS; /* plan_launch's stack arrays */
    for (Py_ssize_t i = 0; i < nv; i++) {
        PyObject *view_codes, *scalar_codes, *constexpr_values = NULL, *preconditions = NULL;
        int unique;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "OOp|OO", &view_codes, &scalar_codes, &unique,
                              &constexpr_values, &preconditions)) {
            Py_DECREF(fast);
            goto fail;
        }
        Variant *var = &self->variants[i];
        var->unique = unique;
        if (constexpr_values == NULL && constexprs > 0) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "a kernel with Constexpr parameters needs their values per variant");
            goto fail;
        }
        if ((var->view_codes = codes_from(view_codes, views)) == NULL ||
            (var->scalar_codes = codes_from(scalar_codes, n)) == NULL ||
            (constexpr_values != NULL && (var->constexprs = int64s_from(constexpr_values, constexprs)) == NULL)) {
            Py_DECREF(fast);
            goto fail;
        }
        if (fits && preconditions != NULL && preconditions != Py_None) {
            int8_t slot_codes[MAX_SLOTS];
            slot_codes_of(self, var, slot_codes);
            int ok = compile_preconditions(preconditions, slot_codes, slots, &var->pre, &var->n_pre);
            if (ok < 0) {
                Py_DECREF(fast);
                goto fail;
            }
            if (!ok) fits = 0; /* every launch of this kernel goes through Python, which checks them */
        }
    }
    Py_DECREF(fast);
    self->ready = fits;
    return PyBool_FromLong(self->ready);
fail:
    plan_clear(self);
    return NULL;
}

/* set_function(variant, context, function, ordinal=-1, uid=context): the CUfunction of a variant
   in a context (its handle and its cuCtxGetId). */
static PyObject *plan_set_function(Plan *self, PyObject *args) {
    Py_ssize_t index;
    unsigned long long ctx, fn, uid = (unsigned long long)-1;
    int ordinal = -1;
    if (!PyArg_ParseTuple(args, "nKK|iK", &index, &ctx, &fn, &ordinal, &uid)) return NULL;
    if (uid == (unsigned long long)-1) uid = ctx;
    if (index < 0 || index >= self->n_variants) {
        PyErr_SetString(PyExc_IndexError, "no such variant");
        return NULL;
    }
    Variant *var = &self->variants[index];
    /* A context with the same handle is one that was reset (or destroyed and its handle reused):
       its entry is replaced, whole, while the GIL is held. */
    ContextFunction entry = {(void *)(uintptr_t)ctx, (uint64_t)uid, (void *)(uintptr_t)fn, ordinal};
    for (int i = 0; i < var->n_contexts; i++) {
        if (var->contexts[i].ctx == entry.ctx) {
            var->contexts[i] = entry;
            Py_RETURN_NONE;
        }
    }
    if (var->n_contexts < MAX_CONTEXTS) var->contexts[var->n_contexts++] = entry;
    Py_RETURN_NONE;
}

static PyObject *plan_reset(Plan *self, PyObject *unused) {
    plan_clear(self);
    Py_RETURN_NONE;
}

static PyObject *plan_get_ready(Plan *self, void *closure) { return PyBool_FromLong(self->ready); }

static PyMethodDef plan_methods[] = {
    {"configure", (PyCFunction)plan_configure, METH_VARARGS, "configure(is_view, is_mutable, variants)"},
    {"set_function", (PyCFunction)plan_set_function, METH_VARARGS,
     "set_function(variant, context, function, ordinal=-1, uid=context): the function in that context (its handle "
     "and cuCtxGetId), on that device"},
    {"reset", (PyCFunction)plan_reset, METH_NOARGS, "forget everything (tests only: not safe while launching)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef plan_getset[] = {
    {"ready", (getter)plan_get_ready, NULL, "configured: launches may take the C path", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oxide.runtime._launcher.Plan",
    .tp_basicsize = sizeof(Plan),
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "What the C launcher knows about one kernel: parameters, variants, functions per context.",
    .tp_methods = plan_methods,
    .tp_getset = plan_getset,
    .tp_new = PyType_GenericNew,
};

static uint64_t itemsize_of(int code) {
    switch (code) {
    case DT_I8: case DT_U8: case DT_BOOL: return 1;
    case DT_I16: case DT_U16: case DT_F16: case DT_BF16: return 2;
    case DT_I32: case DT_U32: case DT_F32: return 4;
    default: return 8;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* LaunchBase: k[grid, block, stream, shared_mem] */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Plan *plan;
    unsigned grid[3], block[3], shared;
    uint64_t stream;
    int framework_stream; /* no stream given: the current stream of the arguments' framework */
} LaunchBase;

enum { LAUNCHED = 0, FALLBACK = 1, CUDA_FAILED = 2 };

/* The current stream of the framework whose arrays a launch without a stream takes (PyTorch's if
   any argument is a tensor, else CuPy's if any is a CuPy array, else the legacy default stream),
   on device `ordinal`, as Kernel._framework_stream picks it. 1: found; 0: leave it to Python. */
static int framework_stream(Plan *plan, PyObject *const *args, Py_ssize_t nargs, int ordinal, uint64_t *out) {
    int torch_at = -1, cupy_at = -1;
    for (Py_ssize_t i = 0; i < nargs && torch_at < 0; i++) {
        if (!plan->is_view[i]) continue;
        int t = array_type_index(args[i]);
        if (t < 0) continue;
        if (array_kinds[t] == ARRAY_TORCH) torch_at = t;
        else if (array_kinds[t] == ARRAY_CUPY && cupy_at < 0) cupy_at = t;
    }
    int t = torch_at >= 0 ? torch_at : cupy_at;
    *out = 0;
    if (t < 0) return 1;
    if (ordinal < 0) return 0;
    if (exchange_streams[t] != NULL) {
        void *s = NULL;
        if (exchange_streams[t](2 /* kDLCUDA */, ordinal, &s) != 0) {
            PyErr_Clear();
            return 0;
        }
        *out = (uint64_t)(uintptr_t)s;
        return 1;
    }
    PyObject *getter = torch_at >= 0 ? torch_stream_getter : cupy_stream_getter;
    if (getter == NULL) return 0;
    PyObject *index = PyLong_FromLong(ordinal);
    if (index == NULL) return 0;
    if (torch_at < 0 && cupy_get_current_stream != NULL) {
        /* cupy_current_stream's first step, in C; on any failure (a CuPy without the device
           argument) that function does it all */
        PyObject *stream = PyObject_CallOneArg(cupy_get_current_stream, index);
        PyObject *ptr = stream != NULL ? PyObject_GetAttr(stream, s_ptr) : NULL;
        Py_XDECREF(stream);
        int ok = ptr != NULL && PyLong_Check(ptr) && pointer_of(ptr, out);
        Py_XDECREF(ptr);
        if (ok) {
            Py_DECREF(index);
            return 1;
        }
        PyErr_Clear();
    }
    PyObject *r = PyObject_CallOneArg(getter, index);
    Py_DECREF(index);
    if (r == NULL) {
        PyErr_Clear();
        return 0;
    }
    int ok = pointer_of(r, out);
    Py_DECREF(r);
    if (!ok) PyErr_Clear();
    return ok;
}

/* t.requires_grad. Where the type's attribute lookup is the generic one and finds a getset
   descriptor (torch's), its getter is called directly: a data descriptor wins over the instance
   dict, so getattr would call it too, after a lookup that costs about as much as the getter. */
static PyObject *requires_grad_of(PyObject *obj) {
    PyTypeObject *tp = Py_TYPE(obj);
    if (tp->tp_getattro == PyObject_GenericGetAttr) {
        PyObject *d = _PyType_Lookup(tp, s_requires_grad); /* borrowed, from the type's cache */
        if (d != NULL && Py_IS_TYPE(d, &PyGetSetDescr_Type)) {
            PyGetSetDescrObject *gs = (PyGetSetDescrObject *)d;
            if (gs->d_getset->get != NULL && PyType_IsSubtype(tp, PyDescr_TYPE(gs)))
                return gs->d_getset->get(obj, gs->d_getset->closure);
        }
    }
    return PyObject_GetAttr(obj, s_requires_grad);
}

/* Autograd learns of the launch's writes (an in-place op's bump): all written tensors in one
   call of torch._C._increment_version where torch has it (what increment_version calls, without
   its Python frame), else one increment_version call per tensor. An inference tensor has no
   version counter: PyTorch skips it. */
static void bump_versions(PyObject *const *args, const Py_ssize_t *bumps, Py_ssize_t n_bumps) {
    if (torch_bump_versions != NULL) {
        PyObject *written = PyTuple_New(n_bumps);
        if (written != NULL) {
            for (Py_ssize_t k = 0; k < n_bumps; k++) PyTuple_SET_ITEM(written, k, Py_NewRef(args[bumps[k]]));
            PyObject *done = PyObject_CallOneArg(torch_bump_versions, written);
            Py_DECREF(written);
            if (done != NULL) {
                Py_DECREF(done);
                return;
            }
        }
        PyErr_Clear(); /* one by one below */
    }
    for (Py_ssize_t k = 0; k < n_bumps; k++) {
        PyObject *done = PyObject_CallOneArg(torch_bump_version, args[bumps[k]]);
        if (done == NULL) PyErr_Clear();
        Py_XDECREF(done);
    }
}

static int plan_launch(LaunchBase *self, PyObject *const *args, Py_ssize_t nargs, CUresult *err) {
    Plan *plan = self->plan;
    for (int i = 0; i < n_records; i++)
        if (*records[i] != 0) return FALLBACK; /* a kernel failed a check: Python raises KernelError */
    if (nargs != plan->n_params || drv_launch == NULL) return FALLBACK;
    if (self->grid[0] == 0 || self->grid[1] == 0 || self->grid[2] == 0) return FALLBACK;
    void *ctx = NULL;
    if (drv_ctx_get_current(&ctx) != 0 || ctx == NULL) return FALLBACK;
    unsigned long long uid = (unsigned long long)(uintptr_t)ctx;
    if (drv_ctx_get_id != NULL && drv_ctx_get_id(ctx, &uid) != 0) return FALLBACK;
    uint64_t launch_stream = self->stream;
    if (self->framework_stream) {
        /* the current context's device, known from any variant loaded in it (else Python) */
        int ordinal = -1;
        for (Py_ssize_t k = 0; k < plan->n_variants && ordinal < 0; k++) {
            Variant *var = &plan->variants[k];
            for (int i = 0; i < var->n_contexts; i++) {
                if (var->contexts[i].ctx == ctx && var->contexts[i].uid == (uint64_t)uid) {
                    ordinal = var->contexts[i].ordinal;
                    break;
                }
            }
        }
        if (ordinal < 0 || !framework_stream(plan, args, nargs, ordinal, &launch_stream)) return FALLBACK;
    }

    View views[MAX_SLOTS / 2];
    int64_t dims[MAX_SLOTS]; /* the Tensors' shapes and strides: fewer values than slots */
    Py_ssize_t bumps[MAX_SLOTS / 2]; /* the PyTorch tensors it writes: their version goes up */
    Py_ssize_t n_bumps = 0;
    Py_ssize_t used = 0;
    Py_ssize_t v = 0;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (!plan->is_view[i]) continue;
        int nd = plan->tensor_ndim[i];
        View *view = &views[v];
        if (nd) {
            view->dims = dims + used;
            used += 2 * nd;
            if (!resolve_tensor(args[i], nd, view, launch_stream)) return FALLBACK;
        } else if (!resolve_view(args[i], view, launch_stream)) {
            return FALLBACK;
        }
        /* no memory (a freed DeviceArray, a NULL pointer), or bytes beyond the address space (a
           shape that lies): the Python path raises its TypeError */
        uint64_t nbytes;
        if (view->length < 0 || !mul_u64((uint64_t)view->length, itemsize_of(view->code), &nbytes) ||
            !add_u64(view->ptr, nbytes, &view->end) || (view->ptr == 0 && view->length > 0))
            return FALLBACK;
        if (plan->is_mutable[i]) {
            if (view->readonly || (nd && tensor_overlaps_itself(view))) return FALLBACK;
            if (view->torch && torch_bump_version != NULL) {
                /* a tensor that requires grad: Python decides (refused unless grad mode is off) */
                PyObject *rg = requires_grad_of(args[i]);
                if (rg == NULL) PyErr_Clear();
                int requires_grad = rg != NULL && rg != Py_False;
                Py_XDECREF(rg);
                if (requires_grad) return FALLBACK;
                bumps[n_bumps++] = i;
            }
        }
        v++;
    }
    /* A read-only view must not overlap a view the kernel writes: its loads go through the
       read-only data cache. Any overlap goes to the Python path, which raises the TypeError. */
    if (v > 1) {
        Py_ssize_t a = 0;
        for (Py_ssize_t i = 0; i < nargs; i++) {
            if (!plan->is_view[i]) continue;
            if (!plan->is_mutable[i] && views[a].length > 0) {
                Py_ssize_t b = 0;
                for (Py_ssize_t j = 0; j < nargs; j++) {
                    if (!plan->is_view[j]) continue;
                    if (plan->is_mutable[j] && views[b].length > 0 && views[a].ptr < views[b].end &&
                        views[b].ptr < views[a].end)
                        return FALLBACK;
                    b++;
                }
            }
            a++;
        }
    }
    /* Constexpr arguments: plain ints select the variant compiled for their values (anything
       else, e.g. a NumPy integer or a bool, is left to the Python path). */
    int64_t constexprs[MAX_SLOTS];
    Py_ssize_t c = 0;
    if (plan->n_constexprs) {
        for (Py_ssize_t i = 0; i < nargs; i++) {
            if (!plan->is_constexpr[i]) continue;
            if (!PyLong_CheckExact(args[i])) return FALLBACK;
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(args[i], &overflow);
            if (overflow || (x == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return FALLBACK;
            }
            constexprs[c++] = (int64_t)x;
        }
    }
    Variant *var = NULL;
    for (Py_ssize_t k = 0; k < plan->n_variants && var == NULL; k++) {
        Variant *cand = &plan->variants[k];
        Py_ssize_t j = 0;
        while (j < v && cand->view_codes[j] == views[j].code) j++;
        if (j != v) continue;
        j = 0;
        while (j < c && cand->constexprs[j] == constexprs[j]) j++;
        if (j == c) var = cand;
    }
    if (var == NULL || !var->unique) return FALLBACK;

    uint64_t slots[MAX_SLOTS];
    void *pointers[MAX_SLOTS];
    Py_ssize_t s = 0;
    v = 0;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (plan->is_constexpr[i]) continue; /* compiled into the variant, not passed */
        if (plan->is_view[i]) {
            View *view = &views[v++];
            slots[s++] = view->ptr;
            if (view->ndim) { /* shape[N] then strides[N], in elements */
                memcpy(&slots[s], view->dims, (size_t)(2 * view->ndim) * 8);
                s += 2 * view->ndim;
            } else {
                memcpy(&slots[s++], &view->length, 8);
            }
        } else if (!pack_scalar(args[i], var->scalar_codes[i], &slots[s++])) {
            return FALLBACK;
        }
    }
    /* a precondition that does not hold: Python re-checks it and raises its KernelError */
    if (var->n_pre && preconditions_failed(var->pre, var->n_pre, slots, self->grid, self->block) >= 0)
        return FALLBACK;
    void *fn = NULL;
    int ordinal = -1;
    for (int i = 0; i < var->n_contexts; i++) {
        if (var->contexts[i].ctx == ctx && var->contexts[i].uid == (uint64_t)uid) {
            fn = var->contexts[i].fn;
            ordinal = var->contexts[i].ordinal;
            break;
        }
    }
    if (fn == NULL) return FALLBACK;
    if (check_devices) { /* as Kernel._check_devices: arrays without memory have no device */
        for (Py_ssize_t k = 0; k < v; k++)
            if (views[k].ptr != 0 && (views[k].device < 0 || views[k].device != ordinal)) return FALLBACK;
    }
    for (Py_ssize_t i = 0; i < s; i++) pointers[i] = &slots[i];
    /* The arguments stay alive: the caller holds them until we return, and cuLaunchKernel has
       copied the parameter block by then. The GIL is released: a full launch queue blocks the
       call, and must not block every Python thread with it. */
    CUresult r;
    unsigned grid[3] = {self->grid[0], self->grid[1], self->grid[2]};
    unsigned block[3] = {self->block[0], self->block[1], self->block[2]};
    unsigned shared = self->shared;
    void *stream = (void *)(uintptr_t)launch_stream;
    Py_BEGIN_ALLOW_THREADS
    r = drv_launch(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, stream, s ? pointers : NULL,
                   NULL);
    Py_END_ALLOW_THREADS
    *err = r;
    if (r != 0) return CUDA_FAILED;
    if (n_bumps) bump_versions(args, bumps, n_bumps);
    return LAUNCHED;
}

static PyObject *launch_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    LaunchBase *self = (LaunchBase *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (self->plan != NULL && self->plan->ready && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        CUresult err = 0;
        int status = plan_launch(self, args, nargs, &err);
        if (status == LAUNCHED) Py_RETURN_NONE;
        if (status == CUDA_FAILED) return PyObject_CallMethod(callable, "_launch_failed", "i", (int)err);
    }
    PyObject *slow = PyObject_GetAttr(callable, s_launch_slow);
    if (slow == NULL) return NULL;
    PyObject *result = PyObject_Vectorcall(slow, args, nargs, kwnames);
    Py_DECREF(slow);
    return result;
}

static PyObject *launch_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    LaunchBase *self = (LaunchBase *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = launch_vectorcall;
    self->plan = NULL;
    return (PyObject *)self;
}

static void launch_dealloc(LaunchBase *self) {
    Py_CLEAR(self->plan);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* _bind(plan, grid3, block3, stream, shared_mem, framework_stream): plan may be None (Python path
   only); framework_stream: no stream was given, the launch takes the arguments' framework's. */
static PyObject *launch_bind(LaunchBase *self, PyObject *args) {
    PyObject *plan;
    unsigned gx, gy, gz, bx, by, bz, shared;
    unsigned long long stream;
    int framework = 0;
    if (!PyArg_ParseTuple(args, "O(III)(III)KI|p", &plan, &gx, &gy, &gz, &bx, &by, &bz, &stream, &shared, &framework))
        return NULL;
    if (plan != Py_None && !PyObject_TypeCheck(plan, &PlanType)) {
        PyErr_SetString(PyExc_TypeError, "plan must be a Plan or None");
        return NULL;
    }
    Py_XSETREF(self->plan, plan == Py_None ? NULL : (Plan *)Py_NewRef(plan));
    self->grid[0] = gx, self->grid[1] = gy, self->grid[2] = gz;
    self->block[0] = bx, self->block[1] = by, self->block[2] = bz;
    self->stream = stream;
    self->framework_stream = framework;
    self->shared = shared;
    Py_RETURN_NONE;
}

static PyMethodDef launch_methods[] = {
    {"_bind", (PyCFunction)launch_bind, METH_VARARGS, "_bind(plan, grid, block, stream, shared_mem)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LaunchBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oxide.runtime._launcher.LaunchBase",
    .tp_basicsize = sizeof(LaunchBase),
    .tp_dealloc = (destructor)launch_dealloc,
    .tp_vectorcall_offset = offsetof(LaunchBase, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "The C launch path; oxide.runtime.kernel.LaunchConfig derives from it.",
    .tp_methods = launch_methods,
    .tp_new = launch_new,
};

/* ---------------------------------------------------------------------------------------- */
/* KernelBase: k[grid, block, ...] from the kernel's cache of launch configurations */

typedef struct {
    PyObject_HEAD
    PyObject *configs; /* dict: the subscript key -> LaunchConfig; Kernel._configs */
} KernelBase;

static PyObject *kernel_subscript(KernelBase *self, PyObject *key) {
    if (self->configs != NULL && PyDict_CheckExact(self->configs)) {
        PyObject *config = PyDict_GetItemWithError(self->configs, key);
        if (config != NULL) return Py_NewRef(config);
        if (PyErr_Occurred()) PyErr_Clear(); /* unhashable: the slow path says what it accepts */
    }
    return PyObject_CallMethodOneArg((PyObject *)self, s_make_config, key);
}

static PyObject *kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    KernelBase *self = (KernelBase *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    if ((self->configs = PyDict_New()) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int kernel_traverse(KernelBase *self, visitproc visit, void *arg) {
    Py_VISIT(self->configs); /* a static type: a heap subclass's traverse visits the type */
    return 0;
}

static int kernel_clear(KernelBase *self) {
    Py_CLEAR(self->configs);
    return 0;
}

static void kernel_dealloc(KernelBase *self) {
    PyObject_GC_UnTrack(self);
    kernel_clear(self);
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free((PyObject *)self);
}

static PyObject *kernel_get_configs(KernelBase *self, void *closure) {
    return Py_NewRef(self->configs != NULL ? self->configs : Py_None);
}

static int kernel_set_configs(KernelBase *self, PyObject *value, void *closure) {
    if (value == NULL || !PyDict_CheckExact(value)) {
        PyErr_SetString(PyExc_TypeError, "_configs must be a dict");
        return -1;
    }
    Py_XSETREF(self->configs, Py_NewRef(value));
    return 0;
}

static PyGetSetDef kernel_getset[] = {
    {"_configs", (getter)kernel_get_configs, (setter)kernel_set_configs, "launch configurations by subscript", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMappingMethods kernel_mapping = {
    .mp_subscript = (binaryfunc)kernel_subscript,
};

static PyTypeObject KernelBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oxide.runtime._launcher.KernelBase",
    .tp_basicsize = sizeof(KernelBase),
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_traverse = (traverseproc)kernel_traverse,
    .tp_clear = (inquiry)kernel_clear,
    .tp_as_mapping = &kernel_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "k[grid, block]: the cached launch configuration; oxide.runtime.kernel.Kernel derives from it.",
    .tp_getset = kernel_getset,
    .tp_new = kernel_new,
};

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
    if (fn != Py_None) {
        /* torch is imported by now (fn is its increment_version) */
        PyObject *c = PyImport_ImportModule("torch._C");
        PyObject *many = c != NULL ? PyObject_GetAttrString(c, "_increment_version") : NULL;
        Py_XDECREF(c);
        if (many != NULL && PyCallable_Check(many)) torch_bump_versions = Py_NewRef(many);
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
    for (int w = 0; w < N_GETTERS; w++) array_getters[i][w] = (Getter){NULL, NULL};
    if (type == NULL) return;
    if (kind == ARRAY_TORCH || kind == ARRAY_CUPY) {
        const DLPackExchangeAPI_ *api = exchange_api_of(api_type);
        if (api != NULL) {
            exchange_readers[i] = api->dltensor_from_py_object_no_sync;
            exchange_streams[i] = api->current_work_stream;
        }
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

/* evaluate_preconditions(exprs, slot_codes, slot_values, grid, block): what plan_launch decides
   for these preconditions over these slots (packed as a launch packs them): the index of the
   first that does not hold, -1 when all do, None when the evaluator does not take them. For
   the tests, which compare it with oxide.runtime.preconditions. */
static PyObject *evaluate_preconditions(PyObject *mod, PyObject *args) {
    PyObject *exprs, *codes_seq, *values_seq;
    unsigned grid[3], block[3];
    if (!PyArg_ParseTuple(args, "OOO(III)(III)", &exprs, &codes_seq, &values_seq, &grid[0], &grid[1], &grid[2],
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
    int ok = compile_preconditions(exprs, codes, n, &code, &n_code);
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
     "evaluate_preconditions(exprs, slot_codes, slot_values, grid, block): index of the first failing, -1, or None"},
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
