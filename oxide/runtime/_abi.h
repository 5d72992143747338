/* Generated from oxide/abi/ by `python -m oxide.abi.header`: do not edit. */
/* The C launcher's names for the values of oxide/include/oxide/abi.h. */
#ifndef OXIDE_ABI_H
#define OXIDE_ABI_H

#include "../include/oxide/abi.h"

/* what launcher.py expects (it ignores an extension built from another version) */
#define ABI_VERSION OXIDE_LAUNCHER_ABI_VERSION
/* a Tensor of more dimensions stays on the Python path */
#define MAX_NDIM OXIDE_LAUNCHER_MAX_NDIM
/* the most elements a tensor may span for a launch of a kernel's index32 instance */
#define INDEX32_LIMIT OXIDE_INDEX32_LIMIT
/* the slot layout */
#define SLOT_BYTES OXIDE_SLOT_BYTES
#define SCALAR_SLOTS OXIDE_SCALAR_SLOTS
#define VIEW_POINTER_SLOTS OXIDE_VIEW_POINTER_SLOTS
#define SLICE_SLOTS OXIDE_SLICE_SLOTS
#define TENSOR_DIM_SLOTS OXIDE_TENSOR_DIM_SLOTS
#define TENSOR_SLOTS(ndim) OXIDE_TENSOR_SLOTS(ndim)
#define PRESENT_SLOTS OXIDE_PRESENT_SLOTS
/* the dtype code of a view's pointer slot, and of its length (a tensor's extents and strides) */
#define VIEW_POINTER_DT OXIDE_VIEW_POINTER_DT
#define VIEW_DIM_DT OXIDE_VIEW_DIM_DT

/* array kinds (oxide.abi.launcher.ARRAY_KINDS) */
enum { ARRAY_NONE = OXIDE_ARRAY_NONE, ARRAY_TORCH = OXIDE_ARRAY_TORCH, ARRAY_CUPY = OXIDE_ARRAY_CUPY, ARRAY_DEVICE_ARRAY = OXIDE_ARRAY_DEVICE_ARRAY, ARRAY_CAI = OXIDE_ARRAY_CAI };

/* dtype codes (oxide.abi.launcher.DTYPE_CODES) and their sizes in bytes */
enum { DT_NONE = OXIDE_DT_NONE, DT_I8 = OXIDE_DT_I8, DT_I16 = OXIDE_DT_I16, DT_I32 = OXIDE_DT_I32, DT_I64 = OXIDE_DT_I64, DT_U8 = OXIDE_DT_U8, DT_U16 = OXIDE_DT_U16, DT_U32 = OXIDE_DT_U32, DT_U64 = OXIDE_DT_U64, DT_F16 = OXIDE_DT_F16, DT_BF16 = OXIDE_DT_BF16, DT_F32 = OXIDE_DT_F32, DT_F64 = OXIDE_DT_F64, DT_BOOL = OXIDE_DT_BOOL, DT_F8E4M3 = OXIDE_DT_F8E4M3, DT_F8E5M2 = OXIDE_DT_F8E5M2, DT_COUNT = OXIDE_DT_COUNT };
#define DT_ITEMSIZES OXIDE_DT_ITEMSIZES

/* the device-error record: int64 words (oxide.abi.error_record) */
enum { RECORD_FLAG = OXIDE_RECORD_FLAG, RECORD_MODULE_ID = OXIDE_RECORD_MODULE_ID, RECORD_SITE_ID = OXIDE_RECORD_SITE_ID, RECORD_INDEX = OXIDE_RECORD_INDEX, RECORD_LENGTH = OXIDE_RECORD_LENGTH, RECORD_WORDS = OXIDE_RECORD_WORDS };

#endif
