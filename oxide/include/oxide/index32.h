/* oxide/index32.h: whether a tensor argument may be launched on a kernel's index32 instance
   (oxide_build/lower/index32.py, the manifest's "index32_symbol"), the rule the C launcher
   (oxide/runtime/_launcher_arrays.c, finish_tensor) and oxide/launch.hpp share; C99 and C++17.

   The instance computes each offset in 32-bit arithmetic and reads the tensor's shape and
   strides as int, so it takes a tensor that spans at most OXIDE_INDEX32_LIMIT elements
   (1 + sum over its axes of (extent - 1) * |stride|; an empty tensor spans none) and has no
   extent or |stride| beyond that; and it takes the last axis's stride to be 1 (a loop along
   a row then steps a pointer by a constant, as C++'s raw pointers do), so a non-empty tensor
   whose last axis has more than one element at another stride goes to the kernel as written. The Python runtime's pure-Python path asks the same of its
   TensorView (oxide/runtime/arguments.py, fits_index32); tests/test_index32_cpp.py holds the
   three to one table of cases. */
#ifndef OXIDE_INDEX32_H
#define OXIDE_INDEX32_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"

static inline int oxide_fits_index32(size_t ndim, const int64_t *shape, const int64_t *strides) {
    uint64_t span = 1;
    size_t k;
    int empty = 0;
    for (k = 0; k < ndim; k++) {
        uint64_t stride = strides[k] < 0 ? (uint64_t)0 - (uint64_t)strides[k] : (uint64_t)strides[k];
        if (shape[k] < 0 || (uint64_t)shape[k] > OXIDE_INDEX32_LIMIT || stride > OXIDE_INDEX32_LIMIT) return 0;
        if (shape[k] == 0) empty = 1;
    }
    if (empty) return 1; /* no element */
    /* the instance reads the last axis's stride as 1: elements contiguous along it, or one */
    if (ndim > 0 && shape[ndim - 1] > 1 && strides[ndim - 1] != 1) return 0;
    for (k = 0; k < ndim; k++) {
        uint64_t stride = strides[k] < 0 ? (uint64_t)0 - (uint64_t)strides[k] : (uint64_t)strides[k];
        /* both at most 2^31 - 1: the product and the running span (at most the limit before it)
           fit 64 bits */
        span += (uint64_t)(shape[k] - 1) * stride;
        if (span > OXIDE_INDEX32_LIMIT) return 0;
    }
    return 1;
}

#endif /* OXIDE_INDEX32_H */
