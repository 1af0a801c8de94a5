/* Status strings, the thread-local error message, versions and dtypes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* One message per thread: calls on different threads never see each
 * other's failures. Static storage, so it needs no cleanup. */
static _Thread_local char tls_message[MVRT_ERROR_MAX];

mvrt_status_t mvrt_error_set(mvrt_status_t status, const char *fmt, ...)
{
    /* Format into a scratch buffer first: an argument may point into the
     * current message (a plugin quoting mvrt_last_error()). */
    char scratch[MVRT_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(scratch, sizeof scratch, fmt, ap);
    va_end(ap);
    if (n < 0) {
        snprintf(scratch, sizeof scratch, "(unformattable error message)");
    } else if ((size_t)n >= sizeof scratch) {
        memcpy(scratch + sizeof scratch - 4, "...", 4);
    }
    snprintf(tls_message, sizeof tls_message, "%s", scratch);
    return status;
}

void mvrt_error_save(char *dst, size_t dst_size)
{
    if (dst_size == 0)
        return;
    snprintf(dst, dst_size, "%s", tls_message);
}

void mvrt_error_restore(const char *saved)
{
    snprintf(tls_message, sizeof tls_message, "%s", saved);
}

const char *mvrt_last_error(void)
{
    return tls_message;
}

const char *mvrt_status_string(mvrt_status_t status)
{
    switch (status) {
    case MVRT_OK:
        return "MVRT_OK: success";
    case MVRT_ERR_INVALID_ARGUMENT:
        return "MVRT_ERR_INVALID_ARGUMENT: an argument is invalid";
    case MVRT_ERR_UNAVAILABLE:
        return "MVRT_ERR_UNAVAILABLE: backend, device, driver or plugin unavailable";
    case MVRT_ERR_OUT_OF_MEMORY:
        return "MVRT_ERR_OUT_OF_MEMORY: an allocation failed";
    case MVRT_ERR_UNSUPPORTED:
        return "MVRT_ERR_UNSUPPORTED: not supported by this backend";
    case MVRT_ERR_DEVICE:
        return "MVRT_ERR_DEVICE: a vendor runtime call failed";
    case MVRT_ERR_IO:
        return "MVRT_ERR_IO: a file could not be opened or read";
    case MVRT_ERR_NOT_FOUND:
        return "MVRT_ERR_NOT_FOUND: the named item does not exist";
    case MVRT_ERR_INTERNAL:
        return "MVRT_ERR_INTERNAL: internal error in mvrt (please report it)";
    }
    return "MVRT_ERR_UNKNOWN: unknown status code";
}

#define MVRT_STR2(x) #x
#define MVRT_STR(x) MVRT_STR2(x)

const char *mvrt_version(void)
{
    return MVRT_STR(MVRT_VERSION_MAJOR) "." MVRT_STR(MVRT_VERSION_MINOR) "." MVRT_STR(
        MVRT_VERSION_PATCH);
}

int mvrt_version_number(void)
{
    return MVRT_VERSION_NUMBER;
}

size_t mvrt_dtype_size(mvrt_dtype_t dtype)
{
    switch (dtype) {
    case MVRT_DTYPE_F32:
    case MVRT_DTYPE_I32:
        return 4;
    case MVRT_DTYPE_F16:
    case MVRT_DTYPE_BF16:
        return 2;
    case MVRT_DTYPE_F64:
    case MVRT_DTYPE_I64:
    case MVRT_DTYPE_C64:
        return 8;
    case MVRT_DTYPE_U8:
        return 1;
    case MVRT_DTYPE_INVALID:
        break;
    }
    return 0;
}

const char *mvrt_dtype_name(mvrt_dtype_t dtype)
{
    switch (dtype) {
    case MVRT_DTYPE_F32:
        return "f32";
    case MVRT_DTYPE_F16:
        return "f16";
    case MVRT_DTYPE_BF16:
        return "bf16";
    case MVRT_DTYPE_F64:
        return "f64";
    case MVRT_DTYPE_I32:
        return "i32";
    case MVRT_DTYPE_I64:
        return "i64";
    case MVRT_DTYPE_U8:
        return "u8";
    case MVRT_DTYPE_C64:
        return "c64";
    case MVRT_DTYPE_INVALID:
        break;
    }
    return "invalid";
}

static const mvrt_host_api_t host_api = {
    .abi_version = MVRT_PLUGIN_ABI_VERSION,
    .set_error = mvrt_error_set,
};

const mvrt_host_api_t *mvrt_host_api(void)
{
    return &host_api;
}
