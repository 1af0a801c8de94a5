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

/* Allocation layer (alloc.c). Every host allocation of libmvrt goes through
 * these (free stays plain free), and every device allocation the runtime
 * itself asks a backend for goes through mvrt_rt_device_alloc, so that one
 * counter sees them all and mvrt_debug_fail_allocation can make any one of
 * them fail. The host wrappers return NULL on failure (injected or real) and
 * set no message: the caller does, as for malloc. */
void *mvrt_rt_malloc(size_t size);
void *mvrt_rt_calloc(size_t count, size_t size);
void *mvrt_rt_realloc(void *ptr, size_t size);

/* backend->vt->mem_alloc behind the counter. An injected failure returns
 * MVRT_ERR_OUT_OF_MEMORY with a message naming `fn`, the size and the
 * backend, as a real device OOM would; otherwise the plugin's status. */
mvrt_status_t mvrt_rt_device_alloc(const char *fn, mvrt_backend_t *backend, size_t bytes,
                                   void **out_ptr);

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
