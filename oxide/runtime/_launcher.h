/* What the C launcher's files share (one extension, oxide.runtime._launcher): the driver entry
 * points, the registries Python fills (array types, dtypes, interned names), the Plan and View
 * records, and the functions one file calls in another. Internal: not installed, not an API.
 *
 *   _launcher.c               the module: its state, the functions Python calls to configure it
 *                             (set_driver, register_array_type, ...), PyInit
 *   _launcher_arrays.c        reading each array kind (PyTorch, CuPy, DeviceArray, CUDA array
 *                             interface, DLPack) into a View
 *   _launcher_scalars.c       converting and packing scalar arguments
 *   _launcher_preconditions.c launch preconditions: compiled to postfix code, evaluated per launch
 *   _launcher_plan.c          Plan: what the launcher knows about one kernel
 *   _launcher_launch.c        LaunchBase (the launch itself) and KernelBase (k[grid, block])
 *
 * Symbols without `static` are shared between these files only: setup.py builds them with
 * hidden visibility, so the extension exports PyInit__launcher alone. */
#ifndef OXIDE_LAUNCHER_H
#define OXIDE_LAUNCHER_H

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

extern cuLaunchKernel_t drv_launch;
extern cuCtxGetCurrent_t drv_ctx_get_current;
extern cuCtxGetId_t drv_ctx_get_id; /* NULL: a context is known by its handle */

/* torch.autograd.graph.increment_version, called with each PyTorch tensor a launch writes */
extern PyObject *torch_bump_version;
extern PyObject *torch_bump_versions; /* torch._C._increment_version: a tuple of tensors */
/* its C function when it is a METH_O builtin (then called without the vectorcall dispatch) */
extern PyCFunction torch_bump_versions_fn;
extern PyObject *torch_bump_versions_self;

/* Checked unsigned arithmetic: 0 when the result does not fit 64 bits. */
static inline int add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (b > UINT64_MAX - a) return 0;
    *out = a + b;
    return 1;
}

static inline int mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

#define MAX_RECORDS 64
extern volatile int64_t *records[MAX_RECORDS];
extern int n_records;

#define MAX_TYPES 64
extern PyTypeObject *array_types[MAX_TYPES];
extern int array_kinds[MAX_TYPES];
extern int n_array_types;

extern const int itemsize[DT_COUNT];

#define MAX_DTYPES 128
extern PyObject *dtype_objs[MAX_DTYPES]; /* torch.dtype / numpy.dtype objects, compared by identity */
extern int dtype_codes[MAX_DTYPES];
extern int n_dtypes;
extern PyObject *typestr_codes; /* dict: CUDA array interface typestr -> code */

/* NumPy integer and floating scalar types (numpy.float32, numpy.int64, ...): converted through
   their own __index__ / __float__, as the Python converters do. Other types fall back. */
#define MAX_SCALAR_TYPES 32
extern PyTypeObject *scalar_types[MAX_SCALAR_TYPES];
extern int n_scalar_types;

extern PyObject *s_is_cuda, *s_shape, *s_is_contiguous, *s_dtype, *s_data_ptr, *s_strides, *s_data, *s_ptr,
    *s_cai, *s_typestr, *s_mask, *s_launch_slow, *s_launch_failed, *s_stride, *s_make_config, *s_ndim, *s_size,
    *s_c_contiguous, *s_exchange_api, *s_get_device, *s_device_id, *s_device, *s_stream, *s__stream, *s_requires_grad, *s_cupy_name,
    *s__uses_lock, *s_acquire, *s_release;

/* PyTorch's methods, looked up on the registered tensor type once: calling the type's method
   with the tensor skips the per-call attribute lookup on the instance. */
enum { TORCH_IS_CONTIGUOUS = 0, TORCH_DATA_PTR = 1, TORCH_STRIDE = 2, TORCH_GET_DEVICE = 3, TORCH_METHODS = 4 };
extern PyObject *array_methods[MAX_TYPES][TORCH_METHODS];

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
extern Getter array_getters[MAX_TYPES][N_GETTERS];
/* A PyTorch type's `requires_grad` getter (TensorBase's getset), valid while the type keeps
   the version tag it had then (requires_grad_tags; 0: read by name). */
extern Getter requires_grad_getters[MAX_TYPES];
extern unsigned int requires_grad_tags[MAX_TYPES];
extern unsigned int getter_tags[MAX_TYPES]; /* the type's version tag when they were looked up */
extern int cupy_flat[MAX_TYPES];            /* ndim, size and _c_contiguous all have getters */
extern PyTypeObject *memptr_type;    /* a CuPy MemoryPointer's type, its `ptr` and `device_id` */

#define MAX_CONTEXTS 8
#define MAX_SLOTS 256

/* A context some variant of a kernel was loaded in: each variant's function there is at the
   same index of its `fns`. */
typedef struct {
    void *ctx;
    uint64_t uid; /* cuCtxGetId of the context (its handle without it) */
    int ordinal;  /* the context's device; -1: unknown */
} Context;

/* With several GPUs every array must be on the device of the current context (where the kernel
   runs): the launcher then reads each array's device and leaves the launch to the Python path
   (which raises the error, or finds the device by the pointer) if it cannot tell or they differ. */
extern int check_devices;

typedef struct oxide_pre_insn PInsn; /* one instruction of a launch precondition (oxide/include/oxide/preconditions.h) */

typedef struct {
    int8_t *view_codes;   /* [n_views] */
    int8_t *scalar_codes; /* [n_params]; DT_NONE at a view or a Constexpr */
    int64_t *constexprs;  /* [n_constexprs]: the Constexpr values this variant was compiled for */
    int unique;           /* the view dtypes and Constexpr values pick this variant alone */
    int n_pre;            /* launch preconditions: instructions of `pre` */
    PInsn *pre;
    void *fns[MAX_CONTEXTS]; /* the CUfunction in the plan's contexts[i], NULL while not loaded there */
    /* the dynamic shared bytes per block fns[i] takes (its MAX_DYNAMIC_SHARED_SIZE_BYTES, as
       Python last read or raised it): a launch asking for more goes to Python, which raises it */
    unsigned shared_limits[MAX_CONTEXTS];
    /* the variant's index32 instance (KernelSpec.index32_symbol): launched instead of fns when
       every Tensor argument fits it (View.index32) */
    int has_index32;
    void *fns32[MAX_CONTEXTS];
    unsigned shared_limits32[MAX_CONTEXTS];
    /* the slots whose parameters fns (passed) and fns32 (passed32) declare, increasing
       (KernelSpec.param_slots): kernelParams points at these alone; NULL: at every slot */
    int16_t *passed, *passed32;
    int n_passed, n_passed32;
    /* the variant of its fast instance (KernelSpec.fast_symbol), launched instead when fast_code
       (KernelSpec.fast_condition, with its check) holds; -1: none; -2: this variant is a fast
       instance, which arguments never match */
    int fast;
    int n_fast_code;
    PInsn *fast_code;
} Variant;

typedef struct {
    PyObject_HEAD
    int ready;
    Py_ssize_t n_params, n_views, n_slots, n_constexprs;
    int8_t *is_view, *is_mutable; /* [n_params] */
    int8_t *tensor_ndim;          /* [n_params]: N of a Tensor[T, N], 0 for a Slice or a scalar */
    int8_t *is_constexpr;         /* [n_params]: selects the variant, is not passed */
    int8_t *is_optional;          /* [n_params]: a view that may be None (one more slot: 1 present, 0 None) */
    Py_ssize_t n_variants;
    Variant *variants;
    int n_contexts;
    Context contexts[MAX_CONTEXTS];
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
    int index32;    /* a Tensor whose span, extents and strides are at most INDEX32_LIMIT (finish_tensor) */
} View;


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
extern DLTensorFromPyObject_t exchange_readers[MAX_TYPES];
/* per registered type: its exchange API's current work stream (torch.cuda.current_stream), or NULL */
extern CurrentWorkStream_t exchange_streams[MAX_TYPES];
/* current_stream(ordinal) -> int handle, per framework, from set_stream_getters: the framework's
   current stream where its exchange API gives none (PyTorch before 2.10, CuPy) */
extern PyObject *torch_stream_getter, *cupy_stream_getter;
extern PyObject *cupy_get_current_stream; /* cupy.cuda.get_current_stream, called without a Python frame */

/* torch._C._to_dlpack and torch.Tensor, when set_torch_dlpack gave them: one call then yields a
   plain tensor's pointer, length, stride, dtype and device, instead of five attribute reads
   (PyTorch without the exchange API). */
extern PyObject *torch_to_dlpack;
extern PyTypeObject *torch_tensor_type;

/* _launcher_arrays.c */
PyObject **getter_names(int which);
unsigned int version_tag(PyTypeObject *type);
Getter getter_of(PyTypeObject *type, PyObject *name);
int pointer_of(PyObject *value, uint64_t *out);
int tensor_overlaps_itself(const View *v);
int array_type_index(PyObject *obj);
/* i: array_type_index(obj), which the caller looked up once */
int resolve_tensor(PyObject *obj, int i, int n, View *v, uint64_t launch_stream);
int resolve_view(PyObject *obj, int i, View *v, uint64_t launch_stream);

/* _launcher_scalars.c */
int pack_scalar(PyObject *value, int code, uint64_t *slot);

/* _launcher_preconditions.c */
int preconditions_failed(const PInsn *code, int n, const uint64_t *slots, const unsigned *grid, const unsigned *block);
int compile_preconditions(PyObject *exprs, const int8_t *slot_codes, Py_ssize_t n_slots, PInsn **out, int *n_out);

/* _launcher_plan.c */
extern PyTypeObject PlanType;
int8_t *codes_from(PyObject *seq, Py_ssize_t n);
uint64_t itemsize_of(int code);

/* _launcher_launch.c */
extern PyTypeObject LaunchBaseType;
extern PyTypeObject KernelBaseType;

#endif /* OXIDE_LAUNCHER_H */
