/* Buffers, streams and events.
 *
 * Buffer: a device allocation owned by mvrt, or borrowed memory (wrap) that
 * mvrt never frees. Stream: an in-order queue of work; NULL wherever a
 * stream is taken means the backend's default stream. On the CPU backend
 * work runs to completion before the call returns. On GPU backends copies,
 * fills and ops are asynchronous: host memory passed to a copy must stay
 * valid and unchanged until the stream is synchronized.
 *
 * Lifetimes: buffers, streams and events must be destroyed before their
 * backend is closed; destroying NULL is a no-op.
 */
#ifndef MVRT_MEMORY_H
#define MVRT_MEMORY_H

#include "mvrt/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mvrt_buffer mvrt_buffer_t;
typedef struct mvrt_stream mvrt_stream_t;
typedef struct mvrt_event mvrt_event_t;

/* Allocates `bytes` (> 0) of device memory, aligned to at least 256 bytes. */
MVRT_API mvrt_status_t mvrt_buffer_alloc(mvrt_backend_t *backend, size_t bytes,
                                         mvrt_buffer_t **out_buffer);
/* Borrows `bytes` of existing device memory at `device_ptr` (host memory for
 * the CPU backend). mvrt never frees it; it must outlive the buffer. */
MVRT_API mvrt_status_t mvrt_buffer_wrap(mvrt_backend_t *backend, void *device_ptr,
                                        size_t bytes, mvrt_buffer_t **out_buffer);
/* Frees an owned allocation (stream-ordered on GPUs: work already queued
 * that uses it completes first) or forgets a wrapped one. NULL is a no-op. */
MVRT_API void mvrt_buffer_free(mvrt_buffer_t *buffer);
MVRT_API void *mvrt_buffer_data(const mvrt_buffer_t *buffer);   /* NULL if buffer is NULL */
MVRT_API size_t mvrt_buffer_size(const mvrt_buffer_t *buffer);  /* 0 if buffer is NULL */
MVRT_API mvrt_backend_t *mvrt_buffer_backend(const mvrt_buffer_t *buffer);

/* Copies (stream-ordered). Offsets and sizes in bytes; ranges are checked. */
MVRT_API mvrt_status_t mvrt_copy_host_to_device(mvrt_stream_t *stream, mvrt_buffer_t *dst,
                                                size_t dst_offset, const void *src,
                                                size_t bytes);
MVRT_API mvrt_status_t mvrt_copy_device_to_host(mvrt_stream_t *stream, void *dst,
                                                const mvrt_buffer_t *src, size_t src_offset,
                                                size_t bytes);
MVRT_API mvrt_status_t mvrt_copy_device_to_device(mvrt_stream_t *stream, mvrt_buffer_t *dst,
                                                  size_t dst_offset, const mvrt_buffer_t *src,
                                                  size_t src_offset, size_t bytes);
/* Fills `bytes` at `offset` with a repeated pattern of pattern_size (1, 2 or
 * 4) bytes; offset and bytes must be multiples of pattern_size. */
MVRT_API mvrt_status_t mvrt_buffer_fill(mvrt_stream_t *stream, mvrt_buffer_t *buffer,
                                        size_t offset, size_t bytes, const void *pattern,
                                        size_t pattern_size);

/* Streams. `stream` NULL in a copy/fill/op call uses the default stream of
 * the backend the buffers belong to. */
MVRT_API mvrt_status_t mvrt_stream_create(mvrt_backend_t *backend, mvrt_stream_t **out_stream);
/* Wraps a foreign native stream (cudaStream_t / hipStream_t as void*); mvrt
 * never destroys it. The CPU backend accepts NULL only. The native stream
 * must outlive the wrapper: destroying it while mvrt still holds the wrapper
 * (or has work queued on it) is the caller's error, which mvrt cannot
 * detect; the vendor runtime's behaviour then applies. */
MVRT_API mvrt_status_t mvrt_stream_wrap(mvrt_backend_t *backend, void *native_stream,
                                        mvrt_stream_t **out_stream);
MVRT_API mvrt_status_t mvrt_stream_synchronize(mvrt_stream_t *stream);
MVRT_API void mvrt_stream_destroy(mvrt_stream_t *stream);
MVRT_API mvrt_backend_t *mvrt_stream_backend(const mvrt_stream_t *stream);
/* The native handle (cudaStream_t etc.), NULL on CPU. */
MVRT_API void *mvrt_stream_native(const mvrt_stream_t *stream);

/* Events, for ordering between streams and timing. */
MVRT_API mvrt_status_t mvrt_event_create(mvrt_backend_t *backend, mvrt_event_t **out_event);
MVRT_API void mvrt_event_destroy(mvrt_event_t *event);
MVRT_API mvrt_status_t mvrt_event_record(mvrt_event_t *event, mvrt_stream_t *stream);
/* Makes later work on `stream` wait until `event` has completed. */
MVRT_API mvrt_status_t mvrt_stream_wait_event(mvrt_stream_t *stream, mvrt_event_t *event);
MVRT_API mvrt_status_t mvrt_event_synchronize(mvrt_event_t *event);
/* Milliseconds between two recorded, completed events of one backend. */
MVRT_API mvrt_status_t mvrt_event_elapsed_ms(const mvrt_event_t *start, const mvrt_event_t *end,
                                             float *out_ms);

#ifdef __cplusplus
}
#endif
#endif
