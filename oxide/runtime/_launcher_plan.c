/* Plan: what the launcher knows about one kernel (its parameters, variants, functions per context),
   filled by oxide.runtime.kernel._configure_plan. */
#include "_launcher.h"

static void plan_clear(Plan *self) {
    if (self->variants != NULL) {
        for (Py_ssize_t i = 0; i < self->n_variants; i++) {
            PyMem_Free(self->variants[i].view_codes);
            PyMem_Free(self->variants[i].scalar_codes);
            PyMem_Free(self->variants[i].constexprs);
            PyMem_Free(self->variants[i].pre);
            PyMem_Free(self->variants[i].passed);
            PyMem_Free(self->variants[i].passed32);
            PyMem_Free(self->variants[i].fast_code);
        }
        PyMem_Free(self->variants);
    }
    PyMem_Free(self->is_view);
    PyMem_Free(self->is_mutable);
    PyMem_Free(self->tensor_ndim);
    PyMem_Free(self->is_constexpr);
    PyMem_Free(self->is_optional);
    self->variants = NULL;
    self->is_view = self->is_mutable = self->tensor_ndim = self->is_constexpr = self->is_optional = NULL;
    self->n_variants = self->n_params = self->n_views = self->n_slots = self->n_constexprs = 0;
    self->n_contexts = 0;
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
int8_t *codes_from(PyObject *seq, Py_ssize_t n) {
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

/* The slots an entry point declares (None: all, *out stays NULL), as increasing indices below
   n_slots; 0 with an exception otherwise. */
static int passed_slots_from(PyObject *seq, Py_ssize_t n_slots, int16_t **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    if (seq == NULL || seq == Py_None) return 1;
    Py_ssize_t n = PySequence_Size(seq);
    if (n < 0) return 0;
    int64_t *values = int64s_from(seq, n);
    if (values == NULL) return 0;
    int16_t *slots = PyMem_Calloc(n > 0 ? n : 1, sizeof(int16_t));
    if (slots == NULL) {
        PyMem_Free(values);
        PyErr_NoMemory();
        return 0;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        if (values[k] < 0 || values[k] >= n_slots || (k > 0 && values[k] <= values[k - 1])) {
            PyMem_Free(values);
            PyMem_Free(slots);
            PyErr_SetString(PyExc_ValueError, "passed slots must increase and be below the number of slots");
            return 0;
        }
        slots[k] = (int16_t)values[k];
    }
    PyMem_Free(values);
    *out = slots;
    *n_out = (int)n;
    return 1;
}

/* The DT_ code of each packed slot of `var` (oxide.abi.params.param_slot_dtypes): a view's
   pointer VIEW_POINTER_DT, its length (a Tensor's shape and strides) VIEW_DIM_DT, a scalar its dtype. */
static void slot_codes_of(const Plan *plan, const Variant *var, int8_t *out) {
    Py_ssize_t s = 0;
    for (Py_ssize_t i = 0; i < plan->n_params; i++) {
        if (plan->is_constexpr[i]) continue;
        if (plan->is_view[i]) {
            int nd = plan->tensor_ndim[i];
            for (int k = 0; k < VIEW_POINTER_SLOTS; k++) out[s++] = VIEW_POINTER_DT;
            for (int k = VIEW_POINTER_SLOTS; k < (nd ? TENSOR_SLOTS(nd) : SLICE_SLOTS); k++) out[s++] = VIEW_DIM_DT;
            if (plan->is_optional[i]) out[s++] = DT_BOOL; /* its flag (PRESENT_SLOTS) */
        } else {
            out[s++] = var->scalar_codes[i];
        }
    }
}

/* configure(is_view, is_mutable, variants, tensor_ndim=None, is_constexpr=None, is_optional=None): per
   parameter, whether it is a view, written, the N of a Tensor[T, N] (0 otherwise), a Constexpr, a view
   that may be None (ParamSpec.optional: its flag slot follows its view's); variants
   is a sequence of (view_codes, scalar_codes, unique[, constexpr_values[, preconditions[,
   has_index32[, passed[, passed32[, fast[, fast_condition]]]]]]]), the preconditions being the
   programs (`code`) of KernelSpec.preconditions, has_index32 whether the variant has an index32
   instance, passed and passed32 the slots its entry points declare (KernelSpec.param_slots,
   index32_param_slots; None: all), fast the index of the variant that is its fast instance
   (KernelSpec.fast_symbol: launched instead when fast_condition, a sequence of one program,
   holds; -1: none; -2: this variant is a fast instance, never matched by arguments). Returns
   whether launches may
   take the C path (False: a parameter layout or a precondition it does not take). Once only:
   a configured plan ignores it (another thread may be inside plan_launch, between two Python
   calls, reading it); reset() first to redo it. */
static PyObject *plan_configure(Plan *self, PyObject *args) {
    PyObject *is_view, *is_mutable, *variants, *tensor_ndim = Py_None, *is_constexpr = Py_None, *is_optional = Py_None;
    if (!PyArg_ParseTuple(args, "OOO|OOO", &is_view, &is_mutable, &variants, &tensor_ndim, &is_constexpr,
                          &is_optional))
        return NULL;
    if (self->ready) Py_RETURN_TRUE;
    plan_clear(self);
    Py_ssize_t n = PySequence_Size(is_view);
    if (n < 0) return NULL;
    self->n_params = n;
    if ((self->is_view = codes_from(is_view, n)) == NULL) goto fail;
    if ((self->is_mutable = codes_from(is_mutable, n)) == NULL) goto fail;
    if ((self->tensor_ndim = codes_from(tensor_ndim, n)) == NULL) goto fail;
    if ((self->is_constexpr = codes_from(is_constexpr, n)) == NULL) goto fail;
    if ((self->is_optional = codes_from(is_optional, n)) == NULL) goto fail;
    Py_ssize_t slots = 0, views = 0, constexprs = 0;
    int fits = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int nd = self->tensor_ndim[i];
        if (self->is_constexpr[i]) {
            constexprs++;
        } else if (self->is_view[i]) {
            views++;
            slots += (nd ? TENSOR_SLOTS(nd) : SLICE_SLOTS) + (self->is_optional[i] ? PRESENT_SLOTS : 0);
            if (nd < 0 || nd > MAX_NDIM) fits = 0;
        } else {
            slots += SCALAR_SLOTS;
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
    /* plan_launch's stack arrays (its per-argument `types` too) */
    fits = fits && slots <= MAX_SLOTS && constexprs <= MAX_SLOTS && self->n_params <= MAX_SLOTS;
    for (Py_ssize_t i = 0; i < nv; i++) {
        PyObject *view_codes, *scalar_codes, *constexpr_values = NULL, *preconditions = NULL, *passed = NULL,
                 *passed32 = NULL, *fast_condition = NULL;
        int unique, has_index32 = 0, fast_variant = -1;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "OOp|OOpOOiO", &view_codes, &scalar_codes, &unique,
                              &constexpr_values, &preconditions, &has_index32, &passed, &passed32, &fast_variant,
                              &fast_condition)) {
            Py_DECREF(fast);
            goto fail;
        }
        Variant *var = &self->variants[i];
        var->unique = unique;
        var->has_index32 = has_index32;
        if (fast_variant < -2 || fast_variant >= nv || fast_variant == i ||
            (fast_variant >= 0 && (fast_condition == NULL || fast_condition == Py_None))) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "a fast instance needs a variant of the plan and its condition");
            goto fail;
        }
        var->fast = fast_variant;
        if (constexpr_values == NULL && constexprs > 0) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "a kernel with Constexpr parameters needs their values per variant");
            goto fail;
        }
        if ((var->view_codes = codes_from(view_codes, views)) == NULL ||
            (var->scalar_codes = codes_from(scalar_codes, n)) == NULL ||
            (constexpr_values != NULL && (var->constexprs = int64s_from(constexpr_values, constexprs)) == NULL) ||
            !passed_slots_from(passed, slots, &var->passed, &var->n_passed) ||
            !passed_slots_from(passed32, slots, &var->passed32, &var->n_passed32)) {
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
        if (fits && fast_variant >= 0) {
            int8_t slot_codes[MAX_SLOTS];
            slot_codes_of(self, var, slot_codes);
            int ok = compile_preconditions(fast_condition, slot_codes, slots, &var->fast_code, &var->n_fast_code);
            if (ok < 0) {
                Py_DECREF(fast);
                goto fail;
            }
            if (!ok || var->n_fast_code == 0) fits = 0; /* Python evaluates it */
        }
    }
    Py_DECREF(fast);
    self->ready = fits;
    return PyBool_FromLong(self->ready);
fail:
    plan_clear(self);
    return NULL;
}

/* set_function(variant, context, function, ordinal=-1, uid=context, shared_limit=0, index32=False):
   the CUfunction of a variant (index32: of its index32 instance) in a context (its handle and its
   cuCtxGetId), and the dynamic shared memory per block it takes (launches asking for more take
   the Python path). */
static PyObject *plan_set_function(Plan *self, PyObject *args) {
    Py_ssize_t index;
    unsigned long long ctx, fn, uid = (unsigned long long)-1;
    int ordinal = -1, index32 = 0;
    unsigned shared_limit = 0;
    if (!PyArg_ParseTuple(args, "nKK|iKIp", &index, &ctx, &fn, &ordinal, &uid, &shared_limit, &index32)) return NULL;
    if (uid == (unsigned long long)-1) uid = ctx;
    if (index < 0 || index >= self->n_variants) {
        PyErr_SetString(PyExc_IndexError, "no such variant");
        return NULL;
    }
    Context entry = {(void *)(uintptr_t)ctx, (uint64_t)uid, ordinal};
    int slot = 0;
    while (slot < self->n_contexts && self->contexts[slot].ctx != entry.ctx) slot++;
    if (slot == self->n_contexts) {
        if (slot == MAX_CONTEXTS) Py_RETURN_NONE; /* launches in more contexts take the Python path */
        self->contexts[slot] = entry;
        self->n_contexts++;
    } else if (self->contexts[slot].uid != entry.uid || self->contexts[slot].ordinal != entry.ordinal) {
        /* A context with the same handle and another uid is one that was reset (or destroyed and
           its handle reused): the functions of the one before are forgotten in every variant,
           while the GIL is held. */
        for (Py_ssize_t k = 0; k < self->n_variants; k++) {
            self->variants[k].fns[slot] = self->variants[k].fns32[slot] = NULL;
            self->variants[k].shared_limits[slot] = self->variants[k].shared_limits32[slot] = 0;
        }
        self->contexts[slot] = entry;
    }
    if (index32 && !self->variants[index].has_index32) {
        PyErr_SetString(PyExc_ValueError, "this variant has no index32 instance");
        return NULL;
    }
    (index32 ? self->variants[index].fns32 : self->variants[index].fns)[slot] = (void *)(uintptr_t)fn;
    (index32 ? self->variants[index].shared_limits32 : self->variants[index].shared_limits)[slot] = shared_limit;
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
     "set_function(variant, context, function, ordinal=-1, uid=context, shared_limit=0, index32=False): the "
     "function (of the index32 instance) in that context (its handle and cuCtxGetId), on that device, and the "
     "dynamic shared bytes per block it takes"},
    {"reset", (PyCFunction)plan_reset, METH_NOARGS, "forget everything (tests only: not safe while launching)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef plan_getset[] = {
    {"ready", (getter)plan_get_ready, NULL, "configured: launches may take the C path", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oxide.runtime._launcher.Plan",
    .tp_basicsize = sizeof(Plan),
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "What the C launcher knows about one kernel: parameters, variants, functions per context.",
    .tp_methods = plan_methods,
    .tp_getset = plan_getset,
    .tp_new = PyType_GenericNew,
};

/* The size in bytes of an element of dtype `code` (oxide/abi.h's OXIDE_DT_ITEMSIZES); 8 for none. */
uint64_t itemsize_of(int code) {
    static const uint64_t sizes[DT_COUNT] = DT_ITEMSIZES;
    return code > DT_NONE && code < DT_COUNT ? sizes[code] : 8;
}
