/* Private to libmvrt: the error setter, the object layouts behind the
 * public opaque handles, and the registry's internal entry points.
 * Nothing here is installed or visible to plugins (they get the error
 * setter through mvrt_host_api_t::set_error). */
#ifndef MVRT_RUNTIME_INTERNAL_H
#define MVRT_RUNTIME_INTERNAL_H

#include <stddef.h>

#include "mvrt/mvrt.h"
#include "mvrt_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MVRT_PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define MVRT_PRINTF_LIKE(f, a)
#endif

/* Size of the thread-local message buffer (bytes, including the NUL).
 * Longer messages are truncated with "...". */
#define MVRT_ERROR_MAX 4096

/* Records a printf-style message as this thread's last error and returns
 * `status` unchanged, so callers can write `return mvrt_error_set(...)`.
 * Also the host->set_error given to plugins. */
mvrt_status_t mvrt_error_set(mvrt_status_t status, const char *fmt, ...) MVRT_PRINTF_LIKE(2, 3);

/* Saves / restores this thread's message, for code that calls into a plugin
 * whose failure is not the caller's failure (probing from mvrt_backend_list,
 * which succeeds, must leave the last error untouched). */
void mvrt_error_save(char *dst, size_t dst_size);
void mvrt_error_restore(const char *saved);

/* The host API handed to every plugin. */
const mvrt_host_api_t *mvrt_host_api(void);

/* An open device of one plugin. */
struct mvrt_backend {
    const mvrt_plugin_vtable_t *vt;
    void *device;               /* plugin's device handle */
    int index;                  /* device index within the plugin */
    char name[MVRT_NAME_MAX];   /* "cpu", "cuda", "hip" */
};

struct mvrt_buffer {
    mvrt_backend_t *backend;
    void *data;
    size_t size;
    int owned;                  /* 1: mem_alloc'ed, freed with mem_free */
};

struct mvrt_stream {
    mvrt_backend_t *backend;
    void *handle;               /* plugin's stream object */
};

struct mvrt_event {
    mvrt_backend_t *backend;
    void *handle;               /* plugin's event object */
    int recorded;               /* elapsed_ms needs both events recorded */
};

/* The plugin stream a call runs on: `stream`'s own, or the default stream
 * of `backend` when stream is NULL. */
void *mvrt_stream_handle_for(mvrt_backend_t *backend, mvrt_stream_t *stream);

#ifdef __cplusplus
}
#endif
#endif
