/* Fake backend plugins for the loader tests, one module per FAKE_MODE:
 *   FAKE_GOOD        a working plugin with 2 "devices" over host memory and
 *                    no scan (NULL entries: the op is unsupported)
 *   FAKE_ABI         returns a vtable claiming the next ABI version (ours + 1)
 *   FAKE_NO_ENTRY    exports a different symbol only
 *   FAKE_PROBE_FAIL  probe reports that the vendor driver is missing
 *   FAKE_NULL_VTABLE the entry point refuses (returns NULL with a reason)
 *   FAKE_WRONG_NAME  claims to be another backend
 * FAKE_NAME is the backend name the module is built for. */
#include <stdlib.h>
#include <string.h>

#include "mvrt_plugin.h"

#define FAKE_GOOD 1
#define FAKE_ABI 2
#define FAKE_NO_ENTRY 3
#define FAKE_PROBE_FAIL 4
#define FAKE_NULL_VTABLE 5
#define FAKE_WRONG_NAME 6

#ifndef FAKE_MODE
#error "FAKE_MODE must be defined"
#endif

static const mvrt_host_api_t *host;
static int default_stream_obj;

static mvrt_status_t fake_probe(int *out_count)
{
#if FAKE_MODE == FAKE_PROBE_FAIL
    (void)out_count;
    return host->set_error(MVRT_ERR_UNAVAILABLE,
                           "fake: no driver (libfakevendor.so.1: cannot open shared object)");
#else
    *out_count = 2;
    return MVRT_OK;
#endif
}

static mvrt_status_t fake_device_open(int index, void **out)
{
    int *d = malloc(sizeof *d);
    if (!d)
        return host->set_error(MVRT_ERR_OUT_OF_MEMORY, "fake: out of memory");
    *d = index;
    *out = d;
    return MVRT_OK;
}
static void fake_device_close(void *d) { free(d); }
static mvrt_status_t fake_device_info(void *d, mvrt_device_info_t *info)
{
    memset(info, 0, sizeof *info);
    strcpy(info->name, "Fake Device");
    strcpy(info->vendor, "Fake");
    info->total_memory = 1u << 20;
    info->warp_width = 64;
    info->compute_units = 10 + *(int *)d;
    info->arch_major = 9;
    return MVRT_OK;
}
static mvrt_status_t fake_set_num_threads(void *d, int n) { (void)d; (void)n; return MVRT_OK; }
static mvrt_status_t fake_mem_alloc(void *d, size_t bytes, void **out)
{
    (void)d;
    void *p = calloc(1, bytes);
    if (!p)
        return host->set_error(MVRT_ERR_OUT_OF_MEMORY, "fake: cannot allocate %zu bytes", bytes);
    *out = p;
    return MVRT_OK;
}
static void fake_mem_free(void *d, void *p) { (void)d; free(p); }
static void *fake_default_stream(void *d) { (void)d; return &default_stream_obj; }
static mvrt_status_t fake_stream_create(void *d, void **out)
{
    (void)d;
    *out = malloc(1);
    return *out ? MVRT_OK : MVRT_ERR_OUT_OF_MEMORY;
}
static mvrt_status_t fake_stream_wrap(void *d, void *native, void **out)
{
    (void)native;
    return fake_stream_create(d, out);
}
static void fake_stream_destroy(void *d, void *s) { (void)d; free(s); }
static mvrt_status_t fake_sync(void *d, void *s) { (void)d; (void)s; return MVRT_OK; }
static void *fake_stream_native(void *d, void *s) { (void)d; return s; }
static mvrt_status_t fake_event_create(void *d, void **out) { return fake_stream_create(d, out); }
static void fake_event_destroy(void *d, void *e) { (void)d; free(e); }
static mvrt_status_t fake_event_record(void *d, void *e, void *s)
{
    (void)d; (void)e; (void)s;
    return MVRT_OK;
}
static mvrt_status_t fake_wait(void *d, void *s, void *e) { (void)d; (void)s; (void)e; return MVRT_OK; }
static mvrt_status_t fake_elapsed(void *d, void *a, void *b, float *ms)
{
    (void)d; (void)a; (void)b;
    *ms = 0.0f;
    return MVRT_OK;
}
static mvrt_status_t fake_copy(void *d, void *s, void *dst, const void *src, size_t n)
{
    (void)d; (void)s;
    memmove(dst, src, n);
    return MVRT_OK;
}
static mvrt_status_t fake_fill(void *d, void *s, void *dst, size_t bytes, const void *pat,
                               size_t ps)
{
    (void)d; (void)s;
    for (size_t i = 0; i < bytes; i++)
        ((unsigned char *)dst)[i] = ((const unsigned char *)pat)[i % ps];
    return MVRT_OK;
}

static const mvrt_plugin_vtable_t vtable = {
#if FAKE_MODE == FAKE_ABI
    .abi_version = MVRT_PLUGIN_ABI_VERSION + 1,
#else
    .abi_version = MVRT_PLUGIN_ABI_VERSION,
#endif
#if FAKE_MODE == FAKE_WRONG_NAME
    .name = "cpu",
#else
    .name = FAKE_NAME,
#endif
    .priority = 30,
    .probe = fake_probe,
    .device_open = fake_device_open,
    .device_close = fake_device_close,
    .device_info = fake_device_info,
    .set_num_threads = fake_set_num_threads,
    .mem_alloc = fake_mem_alloc,
    .mem_free = fake_mem_free,
    .default_stream = fake_default_stream,
    .stream_create = fake_stream_create,
    .stream_wrap = fake_stream_wrap,
    .stream_destroy = fake_stream_destroy,
    .stream_synchronize = fake_sync,
    .stream_native = fake_stream_native,
    .event_create = fake_event_create,
    .event_destroy = fake_event_destroy,
    .event_record = fake_event_record,
    .stream_wait_event = fake_wait,
    .event_synchronize = fake_sync,
    .event_elapsed_ms = fake_elapsed,
    .copy_h2d = fake_copy,
    .copy_d2h = fake_copy,
    .copy_d2d = fake_copy,
    .fill = fake_fill,
    /* scan entries NULL: unsupported */
};

#if FAKE_MODE == FAKE_NO_ENTRY
__attribute__((visibility("default"))) const mvrt_plugin_vtable_t *
mvrt_backend_plugin_entry_v0(const mvrt_host_api_t *h, uint32_t abi)
#else
__attribute__((visibility("default"))) const mvrt_plugin_vtable_t *
mvrt_backend_plugin_entry_v1(const mvrt_host_api_t *h, uint32_t abi)
#endif
{
    (void)abi;
    host = h;
#if FAKE_MODE == FAKE_NULL_VTABLE
    (void)vtable;
    h->set_error(MVRT_ERR_UNAVAILABLE, "fake: refusing to load");
    return NULL;
#else
    return &vtable;
#endif
}
