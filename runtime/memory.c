/* Buffers, copies, fills, streams and events: argument checks, then the
 * backend's vtable. Every check happens before the plugin is called, so a
 * rejected call changes nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define INVALID MVRT_ERR_INVALID_ARGUMENT

void *mvrt_stream_handle_for(mvrt_backend_t *backend, mvrt_stream_t *stream)
{
    return stream ? stream->handle : backend->vt->default_stream(backend->device);
}

/* The byte range [offset, offset + bytes) must lie inside the buffer. Written
 * without offset + bytes so that it cannot wrap around. */
static mvrt_status_t check_range(const char *fn, const char *which, const mvrt_buffer_t *buf,
                                 size_t offset, size_t bytes)
{
    if (offset > buf->size || bytes > buf->size - offset)
        return mvrt_error_set(INVALID, "%s: %s_offset %zu + bytes %zu exceeds buffer size %zu", fn,
                              which, offset, bytes, buf->size);
    return MVRT_OK;
}

static mvrt_status_t check_same_backend(const char *fn, const char *a_name,
                                        const mvrt_backend_t *a, const char *b_name,
                                        const mvrt_backend_t *b)
{
    if (a != b)
        return mvrt_error_set(INVALID,
                              "%s: %s and %s belong to different backends (%s %p vs %s %p)", fn,
                              a_name, b_name, a->name, (const void *)a, b->name, (const void *)b);
    return MVRT_OK;
}

/* ---- buffers ------------------------------------------------------------ */

/* The runtime's record of a buffer: owned memory from the plugin, or
 * borrowed memory mvrt never frees. */
static mvrt_status_t new_buffer_record(const char *fn, mvrt_backend_t *backend, void *data,
                                       size_t bytes, int owned, mvrt_buffer_t **out_buffer)
{
    mvrt_buffer_t *b = mvrt_rt_calloc(1, sizeof *b);
    if (!b)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", fn,
                              sizeof *b);
    b->backend = backend;
    b->data = data;
    b->size = bytes;
    b->owned = owned;
    *out_buffer = b;
    return MVRT_OK;
}

mvrt_status_t mvrt_buffer_alloc(mvrt_backend_t *backend, size_t bytes, mvrt_buffer_t **out_buffer)
{
    static const char fn[] = "mvrt_buffer_alloc";
    if (!backend)
        return mvrt_error_set(INVALID, "%s: backend is NULL", fn);
    if (bytes == 0)
        return mvrt_error_set(INVALID, "%s: bytes is 0; it must be > 0", fn);
    if (!out_buffer)
        return mvrt_error_set(INVALID, "%s: out_buffer is NULL", fn);
    void *ptr = NULL;
    mvrt_status_t st = mvrt_rt_device_alloc(fn, backend, bytes, &ptr);
    if (st != MVRT_OK)
        return st;
    st = new_buffer_record(fn, backend, ptr, bytes, 1, out_buffer);
    if (st != MVRT_OK)
        backend->vt->mem_free(backend->device, ptr);
    return st;
}

mvrt_status_t mvrt_buffer_wrap(mvrt_backend_t *backend, void *device_ptr, size_t bytes,
                               mvrt_buffer_t **out_buffer)
{
    static const char fn[] = "mvrt_buffer_wrap";
    if (!backend)
        return mvrt_error_set(INVALID, "%s: backend is NULL", fn);
    if (!device_ptr)
        return mvrt_error_set(INVALID, "%s: device_ptr is NULL", fn);
    if (bytes == 0)
        return mvrt_error_set(INVALID, "%s: bytes is 0; it must be > 0", fn);
    if ((uintptr_t)device_ptr + bytes < (uintptr_t)device_ptr)
        return mvrt_error_set(INVALID, "%s: device_ptr %p + bytes %zu wraps around the address space",
                              fn, device_ptr, bytes);
    if (!out_buffer)
        return mvrt_error_set(INVALID, "%s: out_buffer is NULL", fn);
    return new_buffer_record(fn, backend, device_ptr, bytes, 0, out_buffer);
}

void mvrt_buffer_free(mvrt_buffer_t *buffer)
{
    if (!buffer)
        return;
    if (buffer->owned)
        buffer->backend->vt->mem_free(buffer->backend->device, buffer->data);
    free(buffer);
}

void *mvrt_buffer_data(const mvrt_buffer_t *buffer)
{
    return buffer ? buffer->data : NULL;
}

size_t mvrt_buffer_size(const mvrt_buffer_t *buffer)
{
    return buffer ? buffer->size : 0;
}

mvrt_backend_t *mvrt_buffer_backend(const mvrt_buffer_t *buffer)
{
    return buffer ? buffer->backend : NULL;
}

/* ---- copies and fill ---------------------------------------------------- */

/* One device side of a copy: present, the byte range inside it, and on the
 * same backend as the stream (when one is given). */
static mvrt_status_t check_copy_side(const char *fn, const char *which, const mvrt_buffer_t *buf,
                                     size_t offset, size_t bytes, const mvrt_stream_t *stream)
{
    mvrt_status_t st;
    if (!buf)
        return mvrt_error_set(INVALID, "%s: %s is NULL", fn, which);
    if ((st = check_range(fn, which, buf, offset, bytes)) != MVRT_OK)
        return st;
    if (stream && (st = check_same_backend(fn, "stream", stream->backend, which, buf->backend)))
        return st;
    return MVRT_OK;
}

mvrt_status_t mvrt_copy_host_to_device(mvrt_stream_t *stream, mvrt_buffer_t *dst,
                                       size_t dst_offset, const void *src, size_t bytes)
{
    static const char fn[] = "mvrt_copy_host_to_device";
    mvrt_status_t st;
    if (!src)
        return mvrt_error_set(INVALID, "%s: src is NULL", fn);
    if ((st = check_copy_side(fn, "dst", dst, dst_offset, bytes, stream)) != MVRT_OK)
        return st;
    if (bytes == 0)
        return MVRT_OK;
    mvrt_backend_t *be = dst->backend;
    return be->vt->copy_h2d(be->device, mvrt_stream_handle_for(be, stream),
                            (char *)dst->data + dst_offset, src, bytes);
}

mvrt_status_t mvrt_copy_device_to_host(mvrt_stream_t *stream, void *dst, const mvrt_buffer_t *src,
                                       size_t src_offset, size_t bytes)
{
    static const char fn[] = "mvrt_copy_device_to_host";
    mvrt_status_t st;
    if (!dst)
        return mvrt_error_set(INVALID, "%s: dst is NULL", fn);
    if ((st = check_copy_side(fn, "src", src, src_offset, bytes, stream)) != MVRT_OK)
        return st;
    if (bytes == 0)
        return MVRT_OK;
    mvrt_backend_t *be = src->backend;
    return be->vt->copy_d2h(be->device, mvrt_stream_handle_for(be, stream), dst,
                            (const char *)src->data + src_offset, bytes);
}

mvrt_status_t mvrt_copy_device_to_device(mvrt_stream_t *stream, mvrt_buffer_t *dst,
                                         size_t dst_offset, const mvrt_buffer_t *src,
                                         size_t src_offset, size_t bytes)
{
    static const char fn[] = "mvrt_copy_device_to_device";
    mvrt_status_t st;
    if ((st = check_copy_side(fn, "dst", dst, dst_offset, bytes, stream)) != MVRT_OK)
        return st;
    if ((st = check_copy_side(fn, "src", src, src_offset, bytes, NULL)) != MVRT_OK)
        return st;
    if ((st = check_same_backend(fn, "dst", dst->backend, "src", src->backend)) != MVRT_OK)
        return st;
    if (bytes == 0)
        return MVRT_OK;
    mvrt_backend_t *be = dst->backend;
    return be->vt->copy_d2d(be->device, mvrt_stream_handle_for(be, stream),
                            (char *)dst->data + dst_offset, (const char *)src->data + src_offset,
                            bytes);
}

mvrt_status_t mvrt_buffer_fill(mvrt_stream_t *stream, mvrt_buffer_t *buffer, size_t offset,
                               size_t bytes, const void *pattern, size_t pattern_size)
{
    static const char fn[] = "mvrt_buffer_fill";
    mvrt_status_t st;
    if (!buffer)
        return mvrt_error_set(INVALID, "%s: buffer is NULL", fn);
    if (!pattern)
        return mvrt_error_set(INVALID, "%s: pattern is NULL", fn);
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
        return mvrt_error_set(INVALID, "%s: pattern_size is %zu; it must be 1, 2 or 4", fn,
                              pattern_size);
    if (offset % pattern_size != 0)
        return mvrt_error_set(INVALID, "%s: offset %zu is not a multiple of pattern_size %zu", fn,
                              offset, pattern_size);
    if (bytes % pattern_size != 0)
        return mvrt_error_set(INVALID, "%s: bytes %zu is not a multiple of pattern_size %zu", fn,
                              bytes, pattern_size);
    /* "buffer_offset" would read oddly: name the argument as declared. */
    if (offset > buffer->size || bytes > buffer->size - offset)
        return mvrt_error_set(INVALID, "%s: offset %zu + bytes %zu exceeds buffer size %zu", fn,
                              offset, bytes, buffer->size);
    if (stream &&
        (st = check_same_backend(fn, "stream", stream->backend, "buffer", buffer->backend)))
        return st;
    if (bytes == 0)
        return MVRT_OK;
    mvrt_backend_t *be = buffer->backend;
    return be->vt->fill(be->device, mvrt_stream_handle_for(be, stream),
                        (char *)buffer->data + offset, bytes, pattern, pattern_size);
}

/* ---- streams ------------------------------------------------------------ */

static mvrt_status_t new_stream(const char *fn, mvrt_backend_t *backend, int wrap, void *native,
                                mvrt_stream_t **out_stream)
{
    if (!backend)
        return mvrt_error_set(INVALID, "%s: backend is NULL", fn);
    if (!out_stream)
        return mvrt_error_set(INVALID, "%s: out_stream is NULL", fn);
    mvrt_stream_t *s = mvrt_rt_calloc(1, sizeof *s);
    if (!s)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", fn,
                              sizeof *s);
    void *handle = NULL;
    mvrt_status_t st = wrap ? backend->vt->stream_wrap(backend->device, native, &handle)
                            : backend->vt->stream_create(backend->device, &handle);
    if (st != MVRT_OK) {
        free(s);
        return st;
    }
    s->backend = backend;
    s->handle = handle;
    *out_stream = s;
    return MVRT_OK;
}

mvrt_status_t mvrt_stream_create(mvrt_backend_t *backend, mvrt_stream_t **out_stream)
{
    return new_stream("mvrt_stream_create", backend, 0, NULL, out_stream);
}

mvrt_status_t mvrt_stream_wrap(mvrt_backend_t *backend, void *native_stream,
                               mvrt_stream_t **out_stream)
{
    return new_stream("mvrt_stream_wrap", backend, 1, native_stream, out_stream);
}

mvrt_status_t mvrt_stream_synchronize(mvrt_stream_t *stream)
{
    if (!stream)
        return mvrt_error_set(INVALID,
                              "mvrt_stream_synchronize: stream is NULL (there is no backend to "
                              "take a default stream from)");
    mvrt_backend_t *be = stream->backend;
    return be->vt->stream_synchronize(be->device, stream->handle);
}

void mvrt_stream_destroy(mvrt_stream_t *stream)
{
    if (!stream)
        return;
    /* Also for wrapped streams: the plugin frees its own wrapper object and
     * leaves the foreign native stream alone. */
    stream->backend->vt->stream_destroy(stream->backend->device, stream->handle);
    free(stream);
}

mvrt_backend_t *mvrt_stream_backend(const mvrt_stream_t *stream)
{
    return stream ? stream->backend : NULL;
}

void *mvrt_stream_native(const mvrt_stream_t *stream)
{
    if (!stream)
        return NULL;
    return stream->backend->vt->stream_native(stream->backend->device, stream->handle);
}

/* ---- events ------------------------------------------------------------- */

mvrt_status_t mvrt_event_create(mvrt_backend_t *backend, mvrt_event_t **out_event)
{
    static const char fn[] = "mvrt_event_create";
    if (!backend)
        return mvrt_error_set(INVALID, "%s: backend is NULL", fn);
    if (!out_event)
        return mvrt_error_set(INVALID, "%s: out_event is NULL", fn);
    mvrt_event_t *e = mvrt_rt_calloc(1, sizeof *e);
    if (!e)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", fn,
                              sizeof *e);
    void *handle = NULL;
    mvrt_status_t st = backend->vt->event_create(backend->device, &handle);
    if (st != MVRT_OK) {
        free(e);
        return st;
    }
    e->backend = backend;
    e->handle = handle;
    *out_event = e;
    return MVRT_OK;
}

void mvrt_event_destroy(mvrt_event_t *event)
{
    if (!event)
        return;
    event->backend->vt->event_destroy(event->backend->device, event->handle);
    free(event);
}

mvrt_status_t mvrt_event_record(mvrt_event_t *event, mvrt_stream_t *stream)
{
    static const char fn[] = "mvrt_event_record";
    mvrt_status_t st;
    if (!event)
        return mvrt_error_set(INVALID, "%s: event is NULL", fn);
    if (stream && (st = check_same_backend(fn, "event", event->backend, "stream", stream->backend)))
        return st;
    mvrt_backend_t *be = event->backend;
    st = be->vt->event_record(be->device, event->handle, mvrt_stream_handle_for(be, stream));
    if (st == MVRT_OK)
        event->recorded = 1;
    return st;
}

mvrt_status_t mvrt_stream_wait_event(mvrt_stream_t *stream, mvrt_event_t *event)
{
    static const char fn[] = "mvrt_stream_wait_event";
    mvrt_status_t st;
    if (!event)
        return mvrt_error_set(INVALID, "%s: event is NULL", fn);
    if (stream && (st = check_same_backend(fn, "stream", stream->backend, "event", event->backend)))
        return st;
    /* Waiting on a never-recorded event is a no-op, as in CUDA and HIP. */
    mvrt_backend_t *be = event->backend;
    return be->vt->stream_wait_event(be->device, mvrt_stream_handle_for(be, stream), event->handle);
}

mvrt_status_t mvrt_event_synchronize(mvrt_event_t *event)
{
    static const char fn[] = "mvrt_event_synchronize";
    if (!event)
        return mvrt_error_set(INVALID, "%s: event is NULL", fn);
    return event->backend->vt->event_synchronize(event->backend->device, event->handle);
}

mvrt_status_t mvrt_event_elapsed_ms(const mvrt_event_t *start, const mvrt_event_t *end,
                                    float *out_ms)
{
    static const char fn[] = "mvrt_event_elapsed_ms";
    mvrt_status_t st;
    if (!start)
        return mvrt_error_set(INVALID, "%s: start is NULL", fn);
    if (!end)
        return mvrt_error_set(INVALID, "%s: end is NULL", fn);
    if (!out_ms)
        return mvrt_error_set(INVALID, "%s: out_ms is NULL", fn);
    if ((st = check_same_backend(fn, "start", start->backend, "end", end->backend)) != MVRT_OK)
        return st;
    if (!start->recorded)
        return mvrt_error_set(INVALID, "%s: start has never been recorded", fn);
    if (!end->recorded)
        return mvrt_error_set(INVALID, "%s: end has never been recorded", fn);
    float ms = 0.0f;
    st = start->backend->vt->event_elapsed_ms(start->backend->device, start->handle, end->handle,
                                              &ms);
    if (st == MVRT_OK)
        *out_ms = ms;
    return st;
}
