/* LaunchBase: calling k[grid, block, stream, shared_mem] (plan_launch, the hot path), and
   KernelBase: k[grid, block] from the kernel's cache of launch configurations. */
#include "_launcher.h"

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
   on device `ordinal`, as Kernel._framework_stream picks it. 1: found; 0: leave it to Python.
   types[i]: the registered type index of argument i where it is a view (array_type_index). */
static int framework_stream(Plan *plan, const int8_t *types, Py_ssize_t nargs, int ordinal, uint64_t *out) {
    int torch_at = -1, cupy_at = -1;
    for (Py_ssize_t i = 0; i < nargs && torch_at < 0; i++) {
        if (!plan->is_view[i]) continue;
        int t = types[i];
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

/* t.requires_grad, for an argument of registered type `type_index`. Where the type's attribute
   lookup is the generic one and finds a getset descriptor (torch's), its getter is called
   directly: a data descriptor wins over the instance dict, so getattr would call it too, after a
   lookup that costs about as much as the getter. The getter found when the type was registered
   serves while the type keeps its version tag (CPython changes it whenever the type or a base is
   modified); otherwise it is looked up in the type's cache. */
static PyObject *requires_grad_of(PyObject *obj, int type_index) {
    PyTypeObject *tp = Py_TYPE(obj);
    unsigned int tag = type_index >= 0 ? requires_grad_tags[type_index] : 0;
    if (tag != 0 && tp->tp_version_tag == tag && tp == array_types[type_index])
        return requires_grad_getters[type_index].get(obj, requires_grad_getters[type_index].closure);
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
            /* a METH_O builtin's C function directly: what its vectorcall would run, without the
               dispatch (the call runs no Python code of ours; torch's may recurse like any call) */
            PyObject *done = torch_bump_versions_fn != NULL
                                 ? torch_bump_versions_fn(torch_bump_versions_self, written)
                                 : PyObject_CallOneArg(torch_bump_versions, written);
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
    /* the context, and its device, as a variant loaded in it knows them (none yet: Python loads) */
    int slot = 0;
    while (slot < plan->n_contexts && (plan->contexts[slot].ctx != ctx || plan->contexts[slot].uid != (uint64_t)uid))
        slot++;
    if (slot == plan->n_contexts) return FALLBACK;
    int ordinal = plan->contexts[slot].ordinal;
    uint64_t launch_stream = self->stream;
    /* each view argument's registered type, looked up once for the stream and the readers */
    int8_t types[MAX_SLOTS];
    for (Py_ssize_t i = 0; i < nargs; i++) types[i] = plan->is_view[i] ? (int8_t)array_type_index(args[i]) : -1;
    if (self->framework_stream && (ordinal < 0 || !framework_stream(plan, types, nargs, ordinal, &launch_stream)))
        return FALLBACK;

    View views[MAX_SLOTS / SLICE_SLOTS];
    int64_t dims[MAX_SLOTS]; /* the Tensors' shapes and strides: fewer values than slots */
    Py_ssize_t bumps[MAX_SLOTS / SLICE_SLOTS]; /* the PyTorch tensors it writes: their version goes up */
    Py_ssize_t n_bumps = 0;
    /* the views with memory, by whether the kernel writes them (indices into views) */
    Py_ssize_t written[MAX_SLOTS / SLICE_SLOTS], read_only[MAX_SLOTS / SLICE_SLOTS];
    Py_ssize_t n_written = 0, n_read_only = 0;
    Py_ssize_t used = 0;
    Py_ssize_t v = 0;
    int index32 = 1; /* every Tensor fits a kernel's index32 instance (Variant.has_index32) */
    int absent = 0; /* None was passed for an optional view: its code matches every variant's */
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (!plan->is_view[i]) continue;
        int nd = plan->tensor_ndim[i];
        View *view = &views[v];
        if (args[i] == Py_None) {
            if (!plan->is_optional[i]) return FALLBACK; /* Python raises its TypeError */
            /* no memory: null pointer, zero length, shape and strides, flag 0 (oxide.abi.params) */
            memset(view, 0, sizeof(View));
            view->ndim = nd;
            view->dims = dims + used;
            view->device = -1;
            view->index32 = 1;
            memset(view->dims, 0, (size_t)(TENSOR_DIM_SLOTS * nd) * sizeof(int64_t));
            used += TENSOR_DIM_SLOTS * nd;
            absent = 1;
            v++;
            continue;
        }
        if (nd) {
            view->dims = dims + used;
            used += TENSOR_DIM_SLOTS * nd;
            if (!resolve_tensor(args[i], types[i], nd, view, launch_stream)) return FALLBACK;
            index32 &= view->index32; /* its span, extents and strides: finish_tensor */
        } else if (!resolve_view(args[i], types[i], view, launch_stream)) {
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
                PyObject *rg = requires_grad_of(args[i], types[i]);
                if (rg == NULL) PyErr_Clear();
                int requires_grad = rg != NULL && rg != Py_False;
                Py_XDECREF(rg);
                if (requires_grad) return FALLBACK;
                bumps[n_bumps++] = i;
            }
        }
        if (view->length > 0) {
            if (plan->is_mutable[i]) written[n_written++] = v;
            else read_only[n_read_only++] = v;
        }
        v++;
    }
    /* A read-only view must not overlap a view the kernel writes: its loads go through the
       read-only data cache. Any overlap goes to the Python path, which raises the TypeError. */
    for (Py_ssize_t r = 0; r < n_read_only; r++) {
        const View *a = &views[read_only[r]];
        for (Py_ssize_t w = 0; w < n_written; w++) {
            const View *b = &views[written[w]];
            if (a->ptr < b->end && b->ptr < a->end) return FALLBACK;
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
    int matches = 0;
    for (Py_ssize_t k = 0; k < plan->n_variants && (var == NULL || absent); k++) {
        Variant *cand = &plan->variants[k];
        if (cand->fast == -2) continue; /* a fast instance: chosen below, by its condition */
        Py_ssize_t j = 0;
        while (j < v && (cand->view_codes[j] == views[j].code || views[j].code == DT_NONE)) j++;
        if (j != v) continue;
        j = 0;
        while (j < c && cand->constexprs[j] == constexprs[j]) j++;
        if (j == c) {
            if (var == NULL) var = cand;
            matches++;
        }
    }
    /* several variants take these arguments (a None leaves a dtype open): Python picks */
    if (var == NULL || !var->unique || matches > 1) return FALLBACK;

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
                memcpy(&slots[s], view->dims, (size_t)(TENSOR_DIM_SLOTS * view->ndim) * SLOT_BYTES);
                s += TENSOR_DIM_SLOTS * view->ndim;
            } else {
                memcpy(&slots[s++], &view->length, SLOT_BYTES);
            }
            if (plan->is_optional[i]) slots[s++] = args[i] != Py_None; /* present: 1, None: 0 */
        } else if (!pack_scalar(args[i], var->scalar_codes[i], &slots[s++])) {
            return FALLBACK;
        }
    }
    /* a precondition that does not hold: Python re-checks it and raises its KernelError */
    if (var->n_pre && preconditions_failed(var->pre, var->n_pre, slots, self->grid, self->block) >= 0)
        return FALLBACK;
    /* the launch-invariant facts of its fast instance hold: no check of that one can fail */
    if (var->fast >= 0 && preconditions_failed(var->fast_code, var->n_fast_code, slots, self->grid, self->block) < 0)
        var = &plan->variants[var->fast];
    /* reading the arguments ran Python: the slot is still this context's unless it was reset */
    index32 = index32 && var->has_index32;
    void *fn = plan->contexts[slot].uid == (uint64_t)uid ? (index32 ? var->fns32 : var->fns)[slot] : NULL;
    if (fn == NULL || self->shared > (index32 ? var->shared_limits32 : var->shared_limits)[slot]) return FALLBACK;
    if (check_devices) { /* as Kernel._check_devices: arrays without memory have no device */
        for (Py_ssize_t k = 0; k < v; k++)
            if (views[k].ptr != 0 && (views[k].device < 0 || views[k].device != ordinal)) return FALLBACK;
    }
    /* every slot was packed (the preconditions read them all); the entry point declares these */
    const int16_t *passed = index32 ? var->passed32 : var->passed;
    if (passed != NULL) {
        s = index32 ? var->n_passed32 : var->n_passed;
        for (Py_ssize_t i = 0; i < s; i++) pointers[i] = &slots[passed[i]];
    } else {
        for (Py_ssize_t i = 0; i < s; i++) pointers[i] = &slots[i];
    }
    /* A DeviceArray that another thread frees: DeviceArray.free() sets its `ptr` to 0 under
       DeviceArray._uses_lock before it gives the memory back. Reading the other arguments may have
       run Python code, and so another thread: with a DeviceArray passed, the launch takes that
       lock (as the Python path does), reads each DeviceArray's pointer again under it, and keeps
       it until cuLaunchKernel has queued the kernel, so a free() in another thread either came
       before (a freed array goes to the Python path, which raises its TypeError) or waits for the
       launch. The GIL is not held meanwhile: a call blocked on a full launch queue must not
       block every Python thread with it, nor deadlock with a host function (cuLaunchHostFunc)
       ahead in the queue that needs the GIL to finish. */
    PyObject *uses_lock = NULL;
    for (Py_ssize_t i = 0; i < nargs && uses_lock == NULL; i++) {
        if (!plan->is_view[i] || types[i] < 0 || array_kinds[types[i]] != ARRAY_DEVICE_ARRAY) continue;
        uses_lock = PyObject_GetAttr((PyObject *)Py_TYPE(args[i]), s__uses_lock);
        if (uses_lock == NULL) {
            PyErr_Clear();
            return FALLBACK;
        }
        /* blocks (without the GIL) while another thread frees an array or launches with one */
        PyObject *got = PyObject_CallMethodObjArgs(uses_lock, s_acquire, NULL);
        if (got == NULL) { /* interrupted (KeyboardInterrupt): raised by the Python path's own wait */
            Py_DECREF(uses_lock);
            PyErr_Clear();
            return FALLBACK;
        }
        Py_DECREF(got);
    }
    int status = LAUNCHED;
    v = 0;
    for (Py_ssize_t i = 0; uses_lock != NULL && i < nargs; i++) {
        if (!plan->is_view[i]) continue;
        const View *view = &views[v++];
        if (types[i] < 0 || array_kinds[types[i]] != ARRAY_DEVICE_ARRAY) continue;
        PyObject *p = PyObject_GetAttr(args[i], s_ptr);
        uint64_t now = 0;
        int same = p != NULL && pointer_of(p, &now) && now == view->ptr;
        Py_XDECREF(p);
        if (!same) {
            PyErr_Clear();
            status = FALLBACK;
            break;
        }
    }
    /* The arguments stay alive: the caller holds them until we return, and cuLaunchKernel has
       copied the parameter block by then. */
    CUresult r = 0;
    if (status == LAUNCHED) {
        unsigned grid[3] = {self->grid[0], self->grid[1], self->grid[2]};
        unsigned block[3] = {self->block[0], self->block[1], self->block[2]};
        unsigned shared = self->shared;
        void *stream = (void *)(uintptr_t)launch_stream;
        Py_BEGIN_ALLOW_THREADS
        r = drv_launch(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, stream,
                       s ? pointers : NULL, NULL);
        Py_END_ALLOW_THREADS
    }
    if (uses_lock != NULL) {
        PyObject *released = PyObject_CallMethodObjArgs(uses_lock, s_release, NULL);
        Py_XDECREF(released);
        if (released == NULL) PyErr_Clear(); /* only the owner releases: it is ours */
        Py_DECREF(uses_lock);
    }
    if (status != LAUNCHED) return status;
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

PyTypeObject LaunchBaseType = {
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

PyTypeObject KernelBaseType = {
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

