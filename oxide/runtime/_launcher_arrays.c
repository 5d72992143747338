/* Reading each array kind into a View: PyTorch tensors (DLPack exchange API, torch._C._to_dlpack,
   or attributes), CuPy arrays (C getters), oxide DeviceArrays, CUDA array interface objects;
   1-D Slice views and N-d Tensor views. */
#include "_launcher.h"
#include "../include/oxide/index32.h" /* the index32 rule, shared with oxide/launch.hpp */

static const Getter no_getters[N_GETTERS];  /* read everything by name */
static Getter memptr_ptr, memptr_device;
static unsigned int memptr_tag;

PyObject **getter_names(int which) {
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
unsigned int version_tag(PyTypeObject *type) {
#if PY_VERSION_HEX >= 0x030C0000
    if (!PyUnstable_Type_AssignVersionTag(type)) return 0;
    return type->tp_version_tag;
#else
    (void)type;
    return 0; /* no public way to assign one: attributes by name */
#endif
}

/* The getter the instances of `type` reach for `name`, or an empty Getter. */
Getter getter_of(PyTypeObject *type, PyObject *name) {
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

int pointer_of(PyObject *value, uint64_t *out) {
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
    case 10: /* kDLFloat8_e4m3fn (DLPack 1.1) */
        return t.bits == 8 ? DT_F8E4M3 : DT_NONE;
    case 12: /* kDLFloat8_e5m2 */
        return t.bits == 8 ? DT_F8E5M2 : DT_NONE;
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
    if (memptr_type == NULL) { /* the first array: learn its MemoryPointer type, once (tag 0: by name) */
        unsigned int tag = version_tag(tp);
        Getter g = getter_of(tp, s_ptr);
        memptr_ptr = g;
        memptr_device = getter_of(tp, s_device_id);
        memptr_tag = g.get != NULL ? tag : 0;
        memptr_type = (PyTypeObject *)Py_NewRef((PyObject *)tp);
    }
    int fast = tp == memptr_type && memptr_tag != 0 && tp->tp_version_tag == memptr_tag;
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
    v->index32 = oxide_fits_index32((size_t)n, shape, strides); /* a kernel's index32 instance may take it */
    return 1;
}

/* Whether two indices of a Tensor view may name one element (arrays.py may_overlap_itself):
   with its axes of more than one element sorted by stride, each stride must exceed the span
   of the axes below it. The span fits int64 (finish_tensor). */
int tensor_overlaps_itself(const View *v) {
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

int array_type_index(PyObject *obj) {
    PyTypeObject *tp = Py_TYPE(obj);
    for (int i = 0; i < n_array_types; i++)
        if (array_types[i] == tp) return i;
    return -1;
}

/* 1: `obj` read into `v` as an n-dimensional Tensor (v->dims must have room for 2n values);
   0: leave it to the Python path. Never leaves an exception set. */
int resolve_tensor(PyObject *obj, int i, int n, View *v, uint64_t launch_stream) {
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
int resolve_view(PyObject *obj, int i, View *v, uint64_t launch_stream) {
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

