/* mvrt core: status codes, the thread-local error message, versions, dtypes.
 *
 * Error model: every fallible call returns mvrt_status_t. When a call fails,
 * it writes a precise, human-readable message (what, which argument, which
 * vendor error) to a thread-local buffer read with mvrt_last_error(). A call
 * that succeeds leaves the message of the last failure untouched. Outputs
 * are written only on success.
 */
#ifndef MVRT_CORE_H
#define MVRT_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define MVRT_API __declspec(dllexport)
#else
#define MVRT_API __attribute__((visibility("default")))
#endif

/* The single source of the semantic version (CMake parses these lines). */
#define MVRT_VERSION_MAJOR 0
#define MVRT_VERSION_MINOR 1
#define MVRT_VERSION_PATCH 0
#define MVRT_VERSION_NUMBER \
    (MVRT_VERSION_MAJOR * 10000 + MVRT_VERSION_MINOR * 100 + MVRT_VERSION_PATCH)

typedef enum mvrt_status {
    MVRT_OK = 0,
    MVRT_ERR_INVALID_ARGUMENT = 1, /* NULL, bad dtype/shape/stride, malformed file */
    MVRT_ERR_UNAVAILABLE = 2,      /* backend/device/driver/plugin missing */
    MVRT_ERR_OUT_OF_MEMORY = 3,    /* host or device allocation failed */
    MVRT_ERR_UNSUPPORTED = 4,      /* valid request this backend cannot do */
    MVRT_ERR_DEVICE = 5,           /* a vendor runtime call failed */
    MVRT_ERR_IO = 6,               /* a file could not be opened or read */
    MVRT_ERR_NOT_FOUND = 7,        /* a named item (tensor, key) does not exist */
    MVRT_ERR_INTERNAL = 8          /* a bug in mvrt: please report it */
} mvrt_status_t;

/* Static English name of a status ("MVRT_ERR_INVALID_ARGUMENT: ..."). Never NULL. */
MVRT_API const char *mvrt_status_string(mvrt_status_t status);

/* Message of the last failed mvrt call on this thread ("" if none).
 * The pointer stays valid until the next mvrt call on this thread. */
MVRT_API const char *mvrt_last_error(void);

/* "MAJOR.MINOR.PATCH" of the loaded library (may differ from the headers). */
MVRT_API const char *mvrt_version(void);
MVRT_API int mvrt_version_number(void);

typedef enum mvrt_dtype {
    MVRT_DTYPE_INVALID = 0,
    MVRT_DTYPE_F32 = 1,
    MVRT_DTYPE_F16 = 2,
    MVRT_DTYPE_BF16 = 3,
    MVRT_DTYPE_F64 = 4,
    MVRT_DTYPE_I32 = 5,
    MVRT_DTYPE_I64 = 6,
    MVRT_DTYPE_U8 = 7,
    /* complex64: (re, im) as two f32, 8 bytes; the selective scan's
     * complex A, constant B / C, last_state and their gradients */
    MVRT_DTYPE_C64 = 8
} mvrt_dtype_t;

/* Size in bytes of one element; 0 for an invalid dtype. */
MVRT_API size_t mvrt_dtype_size(mvrt_dtype_t dtype);
/* "f32", "f16", "bf16", ...; "invalid" otherwise. Never NULL. */
MVRT_API const char *mvrt_dtype_name(mvrt_dtype_t dtype);

#ifdef __cplusplus
}
#endif
#endif
