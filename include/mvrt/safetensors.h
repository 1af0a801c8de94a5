/* Reader for the .safetensors format: 8-byte little-endian header length,
 * a JSON header {"name": {"dtype", "shape", "data_offsets"}, ...,
 * "__metadata__": {"key": "string"}}, then the raw little-endian data.
 * Every length, offset, dtype and shape is validated against the file size
 * when the file is opened; a malformed file gives MVRT_ERR_INVALID_ARGUMENT
 * with a message saying what is wrong. The whole file is read into memory
 * owned by the handle; pointers returned stay valid until it is closed.
 * A handle may be read from several threads at once. */
#ifndef MVRT_SAFETENSORS_H
#define MVRT_SAFETENSORS_H

#include "mvrt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mvrt_safetensors mvrt_safetensors_t;

typedef struct mvrt_safetensors_tensor {
    const char *name;
    mvrt_dtype_t dtype;       /* F32, F16, BF16, F64, I32, I64, U8 */
    int32_t rank;             /* 0..8 */
    int64_t shape[8];
    const void *data;         /* little-endian bytes; alignment not guaranteed */
    size_t nbytes;
} mvrt_safetensors_tensor_t;

MVRT_API mvrt_status_t mvrt_safetensors_open(const char *path, mvrt_safetensors_t **out_file);
/* Parses a file image already in memory (copied; `bytes` may be freed after). */
MVRT_API mvrt_status_t mvrt_safetensors_open_memory(const void *bytes, size_t size,
                                                    mvrt_safetensors_t **out_file);
MVRT_API void mvrt_safetensors_close(mvrt_safetensors_t *file);

MVRT_API size_t mvrt_safetensors_count(const mvrt_safetensors_t *file);
/* The index-th tensor in file order (index < count). */
MVRT_API mvrt_status_t mvrt_safetensors_at(const mvrt_safetensors_t *file, size_t index,
                                           mvrt_safetensors_tensor_t *out_tensor);
/* MVRT_ERR_NOT_FOUND (message names the tensor) when absent. */
MVRT_API mvrt_status_t mvrt_safetensors_find(const mvrt_safetensors_t *file, const char *name,
                                             mvrt_safetensors_tensor_t *out_tensor);
/* Value of a __metadata__ key; MVRT_ERR_NOT_FOUND when absent. */
MVRT_API mvrt_status_t mvrt_safetensors_metadata(const mvrt_safetensors_t *file,
                                                 const char *key, const char **out_value);

#ifdef __cplusplus
}
#endif
#endif
