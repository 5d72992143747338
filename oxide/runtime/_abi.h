/* Generated from oxide/abi/ by `python -m oxide.abi.header`: do not edit. */
#ifndef OXIDE_ABI_H
#define OXIDE_ABI_H

/* what launcher.py expects (it ignores an extension built from another version) */
#define ABI_VERSION 10
/* a Tensor of more dimensions stays on the Python path */
#define MAX_NDIM 8
/* the most elements a tensor may span for a launch of a kernel's index32 instance */
#define INDEX32_LIMIT 2147483647

/* array kinds (oxide.abi.launcher.ARRAY_KINDS) */
enum { ARRAY_NONE = 0, ARRAY_TORCH = 1, ARRAY_CUPY = 2, ARRAY_DEVICE_ARRAY = 3, ARRAY_CAI = 4 };

/* dtype codes (oxide.abi.launcher.DTYPE_CODES) and their sizes in bytes */
enum { DT_NONE = 0, DT_I8 = 1, DT_I16 = 2, DT_I32 = 3, DT_I64 = 4, DT_U8 = 5, DT_U16 = 6, DT_U32 = 7, DT_U64 = 8, DT_F16 = 9, DT_BF16 = 10, DT_F32 = 11, DT_F64 = 12, DT_BOOL = 13, DT_F8E4M3 = 14, DT_F8E5M2 = 15, DT_COUNT = 16 };
#define DT_ITEMSIZES {0, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 1, 1, 1}

/* the device-error record: int64 words (oxide.abi.error_record) */
enum { RECORD_FLAG = 0, RECORD_MODULE_ID = 1, RECORD_SITE_ID = 2, RECORD_INDEX = 3, RECORD_LENGTH = 4, RECORD_WORDS = 5 };

#endif
