/* Generated from oxide/abi/ by `python -m oxide.abi.header`: do not edit. */
/* The contract between oxide's compiler and its runtimes (the Python runtime, its C launcher and
   oxide/launch.hpp), as C: oxide/abi/ describes it once. */
#ifndef OXIDE_ABI_PUBLIC_H
#define OXIDE_ABI_PUBLIC_H

/* the manifest (oxide.abi.manifest): the format written, and those a runtime may read */
#define OXIDE_MANIFEST_FORMAT 4
#define OXIDE_READABLE_MANIFEST_FORMATS {1, 2, 3, 4, 5}
#define OXIDE_READABLE_MANIFEST_FORMAT_COUNT 5
#define OXIDE_LAUNCH_HPP_MANIFEST_FORMATS {4, 5}
#define OXIDE_ARTIFACT_DIR "_oxide"

/* the parameter block (oxide.abi.params): slots of OXIDE_SLOT_BYTES; a scalar (and each scalar
   field of a struct or vector) takes OXIDE_SCALAR_SLOTS, a 1-D view OXIDE_SLICE_SLOTS (pointer,
   length), a tensor OXIDE_TENSOR_SLOTS(ndim) (pointer, shape[ndim], strides[ndim]), a TMA
   descriptor OXIDE_TENSOR_MAP_SLOTS (the map's OXIDE_TENSOR_MAP_WORDS, then one box slot: two
   kernel parameters), a constexpr none; an optional view (ParamSpec.optional) its view's slots
   and OXIDE_PRESENT_SLOTS more, its flag (1: an array was passed; 0: None, its view slots 0) */
#define OXIDE_SLOT_BYTES 8
#define OXIDE_SCALAR_SLOTS 1
#define OXIDE_VIEW_POINTER_SLOTS 1
#define OXIDE_SLICE_SLOTS 2
#define OXIDE_TENSOR_DIM_SLOTS 2
#define OXIDE_TENSOR_SLOTS(ndim) (OXIDE_VIEW_POINTER_SLOTS + OXIDE_TENSOR_DIM_SLOTS * (ndim))
#define OXIDE_PRESENT_SLOTS 1
#define OXIDE_TENSOR_MAP_BYTES 128
#define OXIDE_TENSOR_MAP_WORDS 16
#define OXIDE_TENSOR_MAP_SLOTS 17
#define OXIDE_TENSOR_MAP_MAX_NDIM 5
#define OXIDE_TENSOR_MAP_MAX_BOX 256
#define OXIDE_TENSOR_MAP_SWIZZLES {0, 32, 64, 128}
#define OXIDE_TENSOR_MAP_SWIZZLE_SHIFT 32
#define OXIDE_MAX_TENSOR_NDIM 8
/* the dtype code of the value in a view's pointer slot, in its length, extent and stride
   slots, in a TMA descriptor's slots (oxide.abi.params.param_slot_dtypes) */
#define OXIDE_VIEW_POINTER_DT OXIDE_DT_U64
#define OXIDE_VIEW_DIM_DT OXIDE_DT_I64
#define OXIDE_TENSOR_MAP_DT OXIDE_DT_U64
#define OXIDE_PRESENT_DT OXIDE_DT_BOOL

/* ParamSpec.kind: the kinds that are not views */
#define OXIDE_PARAM_SCALAR "scalar"
#define OXIDE_PARAM_CONSTEXPR "constexpr"
#define OXIDE_PARAM_STRUCT "struct"
#define OXIDE_PARAM_VECTOR "vector"
#define OXIDE_PARAM_TENSOR_MAP "tensor_map"
/* ... and the view kinds a kernel takes (oxide.abi.views.ViewKind): name, is_tensor, is_writable */
typedef struct { const char *name; int is_tensor, is_writable; } oxide_view_kind;
#define OXIDE_VIEW_KIND_COUNT 6
static const oxide_view_kind oxide_view_kinds[OXIDE_VIEW_KIND_COUNT] = {{"slice", 0, 0}, {"disjoint_slice", 0, 1}, {"mut_slice", 0, 1}, {"tensor", 1, 0}, {"mut_tensor", 1, 1}, {"disjoint_tensor", 1, 1}};

/* dtype codes (oxide.abi.launcher.DTYPE_CODES), their names and sizes in bytes */
enum { OXIDE_DT_NONE = 0, OXIDE_DT_I8 = 1, OXIDE_DT_I16 = 2, OXIDE_DT_I32 = 3, OXIDE_DT_I64 = 4, OXIDE_DT_U8 = 5, OXIDE_DT_U16 = 6, OXIDE_DT_U32 = 7, OXIDE_DT_U64 = 8, OXIDE_DT_F16 = 9, OXIDE_DT_BF16 = 10, OXIDE_DT_F32 = 11, OXIDE_DT_F64 = 12, OXIDE_DT_BOOL = 13, OXIDE_DT_F8E4M3 = 14, OXIDE_DT_F8E5M2 = 15, OXIDE_DT_COUNT = 16 };
#define OXIDE_DT_ITEMSIZES {0, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 1, 1, 1}
static const char *const oxide_dtype_names[OXIDE_DT_COUNT] = {"", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "bool", "f8e4m3", "f8e5m2"};

/* launch preconditions (oxide.abi.preconditions): the opcodes of their programs, the most values
   a program's stack holds, the most instructions of a kernel's programs (their checks included),
   and the integer types (dtype codes) of casts and arithmetic */
enum { OXIDE_OP_CONST = 0, OXIDE_OP_ARG = 1, OXIDE_OP_GRID = 2, OXIDE_OP_BLOCK = 3, OXIDE_OP_CAST = 4, OXIDE_OP_ADD = 5, OXIDE_OP_SUB = 6, OXIDE_OP_MUL = 7, OXIDE_OP_NEG = 8, OXIDE_OP_LT = 9, OXIDE_OP_LE = 10, OXIDE_OP_GT = 11, OXIDE_OP_GE = 12, OXIDE_OP_EQ = 13, OXIDE_OP_NE = 14, OXIDE_OP_AND = 15, OXIDE_OP_OR = 16, OXIDE_OP_NOT = 17, OXIDE_OP_TRUTH = 18, OXIDE_OP_CHECK = 19, OXIDE_OP_COUNT = 20 };
#define OXIDE_PRECONDITION_STACK_LIMIT 32
#define OXIDE_PRECONDITION_PROGRAM_LIMIT 4096
#define OXIDE_INTEGER_TYPE_COUNT 9
static const int oxide_integer_types[OXIDE_INTEGER_TYPE_COUNT] = {OXIDE_DT_I8, OXIDE_DT_I16, OXIDE_DT_I32, OXIDE_DT_I64, OXIDE_DT_U8, OXIDE_DT_U16, OXIDE_DT_U32, OXIDE_DT_U64, OXIDE_DT_BOOL};

/* a kernel's index32 instance is launched when every tensor argument's span, extents and
   |strides| are at most this (oxide.abi.launcher.INDEX32_LIMIT) */
#define OXIDE_INDEX32_LIMIT 2147483647

/* the C launcher (oxide/runtime/_launcher*.c): its version, array kinds, most tensor dimensions */
#define OXIDE_LAUNCHER_ABI_VERSION 12
enum { OXIDE_ARRAY_NONE = 0, OXIDE_ARRAY_TORCH = 1, OXIDE_ARRAY_CUPY = 2, OXIDE_ARRAY_DEVICE_ARRAY = 3, OXIDE_ARRAY_CAI = 4 };
#define OXIDE_LAUNCHER_MAX_NDIM 8

/* the device-error record: int64 words (oxide.abi.error_record) */
enum { OXIDE_RECORD_FLAG = 0, OXIDE_RECORD_MODULE_ID = 1, OXIDE_RECORD_SITE_ID = 2, OXIDE_RECORD_INDEX = 3, OXIDE_RECORD_LENGTH = 4, OXIDE_RECORD_WORDS = 5 };

#endif
