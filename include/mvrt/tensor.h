/* Tensors: a plain value (no ownership) describing typed, strided memory
 * inside a buffer. Strides are in elements; rank <= 4. A tensor whose
 * buffer is NULL means "absent" wherever an argument is optional. */
#ifndef MVRT_TENSOR_H
#define MVRT_TENSOR_H

#include "mvrt/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MVRT_MAX_RANK 4

typedef struct mvrt_tensor {
    mvrt_buffer_t *buffer;          /* NULL: absent */
    uint64_t offset;                /* byte offset of element [0,...,0] */
    mvrt_dtype_t dtype;
    int32_t rank;                   /* 1..4 */
    int64_t shape[MVRT_MAX_RANK];
    int64_t strides[MVRT_MAX_RANK]; /* elements; >= 0 */
} mvrt_tensor_t;

/* A row-major contiguous tensor. Does not validate (validation happens when
 * the tensor is used); shape entries past `rank` are ignored. */
MVRT_API mvrt_tensor_t mvrt_tensor_make(mvrt_buffer_t *buffer, uint64_t offset,
                                        mvrt_dtype_t dtype, int32_t rank,
                                        const int64_t *shape);
/* Element count (product of the shape); 0 on overflow or bad rank. */
MVRT_API int64_t mvrt_tensor_numel(const mvrt_tensor_t *tensor);
/* 1 when the strides are the row-major contiguous ones. */
MVRT_API int mvrt_tensor_is_contiguous(const mvrt_tensor_t *tensor);

#ifdef __cplusplus
}
#endif
#endif
