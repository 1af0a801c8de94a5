/* The backend plugin ABI. A plugin is a shared module
 * libmvrt_backend_<name>.so exporting one C symbol, MVRT_PLUGIN_ENTRY_SYMBOL,
 * of type mvrt_plugin_entry_fn. The runtime calls it with the host API and
 * the ABI version it speaks; the plugin returns its vtable or NULL.
 * The runtime refuses a vtable whose abi_version differs from its own.
 *
 * Contract for every vtable function: arguments are already validated by the
 * runtime (non-NULL, in range, same device); a failure returns a status and
 * reports the detail through host->set_error(). Plugins never abort, exit or
 * print. Streams and events are opaque `void *` owned by the plugin.
 */
#ifndef MVRT_PLUGIN_H
#define MVRT_PLUGIN_H

#include "mvrt/core.h"
#include "mvrt/backend.h"
#include "../ops/selective_scan/scan_params.h"
#include "../ops/common/mv_op_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: op_scratch_size/op_run added (MambaVision ops). 3: the 16-bit NHWC
 * map fields of the conv2d, window and pool parameters (a plugin built
 * before them would read such maps as NCHW floats: refused instead). 4: a
 * linear's bf16 weights (b16) and the scan's complex A (complex_a),
 * which an older plugin would read as floats or real A. 5: the 16-bit
 * storage fields hold a type (MVRT_STORAGE16_BF16 / _F16) instead of 1,
 * and math MVRT_MATH_FP16; an older plugin would read fp16 as bf16. 6:
 * attention's 16-bit qkv and output (qkv16, out16), which an older plugin
 * would read as floats. 7: a conv's stored map channels (x_map_channels,
 * y_map_channels), which an older plugin would ignore and read a padded
 * map as a dense one. 9: a 16-bit residual stream (layernorm x16; a
 * linear's y16 with beta 1 reads a 16-bit residual), which an older
 * plugin would read as floats. 10: the conv1d's 16-bit input (x16) and
 * 16-bit copy of its output (y_copy, y_copy16), which an older plugin
 * would read as floats and never write. 11: the conv1d's 16-bit outputs
 * (y16), and a linear's b16 on the CPU for a B that is not a weight
 * (b_constant 0), which an older plugin would write or read as floats.
 * The entry symbol keeps its name; the runtime passes its ABI version
 * and checks the vtable's. */
#define MVRT_PLUGIN_ABI_VERSION 11u
#define MVRT_PLUGIN_ENTRY_SYMBOL "mvrt_backend_plugin_entry_v1"

/* What the runtime offers a plugin. */
typedef struct mvrt_host_api {
    uint32_t abi_version;
    /* Records the thread-local error message (printf-style); returns status. */
    mvrt_status_t (*set_error)(mvrt_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
} mvrt_host_api_t;

typedef struct mvrt_plugin_vtable {
    uint32_t abi_version;        /* MVRT_PLUGIN_ABI_VERSION */
    const char *name;            /* "cpu", "cuda", "hip" */
    int priority;                /* for "auto": higher wins */

    /* Probes the vendor runtime. *out_count = usable devices. On failure
     * (no driver, no device) returns MVRT_ERR_UNAVAILABLE with the reason
     * in set_error. Called once per process, then cached. */
    mvrt_status_t (*probe)(int *out_count);

    mvrt_status_t (*device_open)(int index, void **out_device);
    void (*device_close)(void *device);
    mvrt_status_t (*device_info)(void *device, mvrt_device_info_t *out_info);
    mvrt_status_t (*set_num_threads)(void *device, int n);

    /* Memory. mem_free is stream-ordered on GPUs w.r.t. the default stream. */
    mvrt_status_t (*mem_alloc)(void *device, size_t bytes, void **out_ptr);
    void (*mem_free)(void *device, void *ptr);

    /* Streams: the plugin creates a default stream per device on open and
     * returns it here; it is never passed to stream_destroy. */
    void *(*default_stream)(void *device);
    mvrt_status_t (*stream_create)(void *device, void **out_stream);
    mvrt_status_t (*stream_wrap)(void *device, void *native, void **out_stream);
    void (*stream_destroy)(void *device, void *stream);
    mvrt_status_t (*stream_synchronize)(void *device, void *stream);
    void *(*stream_native)(void *device, void *stream);

    mvrt_status_t (*event_create)(void *device, void **out_event);
    void (*event_destroy)(void *device, void *event);
    mvrt_status_t (*event_record)(void *device, void *event, void *stream);
    mvrt_status_t (*stream_wait_event)(void *device, void *stream, void *event);
    mvrt_status_t (*event_synchronize)(void *device, void *event);
    mvrt_status_t (*event_elapsed_ms)(void *device, void *start, void *end, float *out_ms);

    /* Copies and fill; pointers are device pointers (host for cpu). */
    mvrt_status_t (*copy_h2d)(void *device, void *stream, void *dst, const void *src, size_t n);
    mvrt_status_t (*copy_d2h)(void *device, void *stream, void *dst, const void *src, size_t n);
    mvrt_status_t (*copy_d2d)(void *device, void *stream, void *dst, const void *src, size_t n);
    mvrt_status_t (*fill)(void *device, void *stream, void *dst, size_t bytes,
                          const void *pattern, size_t pattern_size);

    /* Selective scan. NULL entries mean "unsupported on this backend". */
    mvrt_status_t (*scan_fwd)(void *device, void *stream, const mvrt_scan_params_t *p);
    mvrt_status_t (*scan_bwd_workspace_size)(void *device, const mvrt_scan_params_t *p,
                                             size_t *out_bytes);
    mvrt_status_t (*scan_bwd)(void *device, void *stream, const mvrt_scan_params_t *p);

    /* ---- appended after ABI v1 was first published: entries below may be
     * NULL (the CPU plugin leaves them NULL); the runtime must check.
     *
     * Graph capture / replay (CUDA graphs, HIP graphs). Used by the graph
     * runner to record a sequence of launches once and replay it cheaply.
     * graph_capture_begin: starts capturing `stream` (thread-local capture
     *   mode: work queued from other threads is not affected); every later
     *   call on that stream is recorded, not run, until graph_capture_end.
     *   Memory allocation/free and synchronizing calls are not allowed
     *   during capture (the vendor runtime invalidates the capture).
     * graph_capture_end: ends the capture of `stream` and instantiates it;
     *   *out_graph receives an executable graph owned by the caller
     *   (release with graph_destroy). On failure nothing is returned and the
     *   stream is no longer capturing.
     * graph_launch: queues one replay of `graph` on `stream` (asynchronous;
     *   any stream of the same device).
     * graph_destroy: releases an executable graph; NULL is a no-op. The
     *   caller must not destroy a graph whose replay is still queued unless
     *   the vendor allows it (CUDA does: it completes first). */
    mvrt_status_t (*graph_capture_begin)(void *device, void *stream);
    mvrt_status_t (*graph_capture_end)(void *device, void *stream, void **out_graph);
    mvrt_status_t (*graph_launch)(void *device, void *graph, void *stream);
    void (*graph_destroy)(void *device, void *graph);

    /* ---- ABI v2: the MambaVision ops (ops/common/mv_op_params.h). Both may
     * be NULL (no ops on this backend); op_run may also answer
     * MVRT_ERR_UNSUPPORTED for one kind.
     * op_scratch_size: bytes of device scratch op_run needs for `p` (e.g. an
     *   im2col buffer); NULL means 0 for every op. Pure function of `p`'s
     *   sizes (pointers may be NULL when queried), so the graph runner plans
     *   it once and nothing is allocated while a graph runs. Answers
     *   MVRT_ERR_UNSUPPORTED for a form of an op the backend does not take
     *   (the graph runner probes the bf16-storage forms this way).
     * op_run: queues the op on `stream` (asynchronous on GPUs, complete on
     *   return on the CPU). `scratch` holds at least the queried bytes (NULL
     *   when 0). Must not allocate, free or synchronize: it is also called
     *   while a stream is being captured into a graph. */
    mvrt_status_t (*op_scratch_size)(void *device, const mvrt_op_params_t *p, size_t *out_bytes);
    mvrt_status_t (*op_run)(void *device, void *stream, const mvrt_op_params_t *p, void *scratch);
} mvrt_plugin_vtable_t;

typedef const mvrt_plugin_vtable_t *(*mvrt_plugin_entry_fn)(const mvrt_host_api_t *host,
                                                            uint32_t runtime_abi_version);

#ifdef __cplusplus
}
#endif
#endif
