/* Tensors: plain values; validation happens where they are used. */
#include <stdint.h>
#include <string.h>

#include "internal.h"

mvrt_tensor_t mvrt_tensor_make(mvrt_buffer_t *buffer, uint64_t offset, mvrt_dtype_t dtype,
                               int32_t rank, const int64_t *shape)
{
    mvrt_tensor_t t;
    memset(&t, 0, sizeof t);
    t.buffer = buffer;
    t.offset = offset;
    t.dtype = dtype;
    t.rank = rank;
    if (rank < 1 || rank > MVRT_MAX_RANK || !shape)
        return t;
    for (int i = 0; i < rank; i++)
        t.shape[i] = shape[i];
    /* Row-major strides. A product that overflows saturates to INT64_MAX so
     * that the extent check at use rejects the tensor instead of accepting
     * a wrapped-around stride. */
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        t.strides[i] = stride;
        int64_t next;
        if (stride == INT64_MAX || __builtin_mul_overflow(stride, shape[i], &next) || next < 0)
            stride = INT64_MAX;
        else
            stride = next;
    }
    return t;
}

int64_t mvrt_tensor_numel(const mvrt_tensor_t *tensor)
{
    if (!tensor || tensor->rank < 1 || tensor->rank > MVRT_MAX_RANK)
        return 0;
    int64_t n = 1;
    for (int i = 0; i < tensor->rank; i++) {
        if (tensor->shape[i] < 0 || __builtin_mul_overflow(n, tensor->shape[i], &n))
            return 0;
    }
    return n;
}

int mvrt_tensor_is_contiguous(const mvrt_tensor_t *tensor)
{
    if (!tensor || tensor->rank < 1 || tensor->rank > MVRT_MAX_RANK)
        return 0;
    int64_t expect = 1;
    for (int i = tensor->rank - 1; i >= 0; i--) {
        if (tensor->shape[i] < 0 || tensor->strides[i] != expect)
            return 0;
        if (__builtin_mul_overflow(expect, tensor->shape[i], &expect))
            return 0;
    }
    return 1;
}
