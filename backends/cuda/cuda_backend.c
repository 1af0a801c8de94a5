/* The CUDA backend plugin (libmvrt_backend_cuda.so).
 *
 * cudart is linked statically, so the module needs only the NVIDIA driver
 * (libcuda.so.1); without it every probe returns MVRT_ERR_UNAVAILABLE with
 * the CUDA error name and text, never a crash.
 *
 * Threads: callers may use a device from any thread, so every entry that
 * touches the GPU first makes the device current (cudaSetDevice is cheap).
 *
 * Memory: a per-device cudaMemPool (release threshold: keep everything, so
 * steady-state allocations never reach the driver). mem_alloc allocates on
 * the default stream and waits for that stream, so that the block is usable
 * on any stream at once; mem_free makes the default stream wait for every
 * stream of the device (events) and frees there: work queued on any mvrt
 * stream before the free completes before the memory is reused. Out of
 * memory trims the pool and retries once, then reports
 * MVRT_ERR_OUT_OF_MEMORY; the backend stays usable.
 *
 * Only the entry point is exported.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mvrt_plugin.h"
#include "scan_cuda.h"

static const mvrt_host_api_t *mvrt_cuda_host;

typedef struct mvrt_cuda_stream {
    cudaStream_t s;
    int owned;          /* 0: wrapped foreign stream, never destroyed */
    cudaEvent_t fence;  /* used by mem_free to order the free after this stream */
    struct mvrt_cuda_stream *next, *prev;
} mvrt_cuda_stream_t;

typedef struct mvrt_cuda_device {
    int index;
    struct cudaDeviceProp prop;
    cudaMemPool_t pool;
    mvrt_cuda_stream_t default_stream;
    pthread_mutex_t lock;           /* guards the stream list */
    mvrt_cuda_stream_t *streams;    /* created and wrapped streams */
    mvrt_cuda_scan_tuning_t tuning;
} mvrt_cuda_device_t;

/* Maps a CUDA error to a status and records "what: cudaErrorX: text".
 * Also clears the non-sticky last error so that the next call starts clean. */
static mvrt_status_t mvrt_cuda_fail(cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    mvrt_status_t st = MVRT_ERR_DEVICE;
    switch (e) {
    case cudaErrorMemoryAllocation: st = MVRT_ERR_OUT_OF_MEMORY; break;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorInitializationError:
    case cudaErrorNoKernelImageForDevice: st = MVRT_ERR_UNAVAILABLE; break;
    default: break;
    }
    return mvrt_cuda_host->set_error(st, "cuda: %s: %s: %s", what, cudaGetErrorName(e),
                                     cudaGetErrorString(e));
}

#define CUDA_TRY(call, what)                                                  \
    do {                                                                      \
        cudaError_t mvrt_e_ = (call);                                         \
        if (mvrt_e_ != cudaSuccess) return mvrt_cuda_fail(mvrt_e_, (what));   \
    } while (0)

static mvrt_status_t mvrt_cuda_enter(mvrt_cuda_device_t *d)
{
    CUDA_TRY(cudaSetDevice(d->index), "cudaSetDevice");
    return MVRT_OK;
}
#define ENTER(d)                                                              \
    do {                                                                      \
        mvrt_status_t mvrt_st_ = mvrt_cuda_enter(d);                          \
        if (mvrt_st_ != MVRT_OK) return mvrt_st_;                             \
    } while (0)

static cudaStream_t mvrt_cuda_native(void *stream)
{
    return ((mvrt_cuda_stream_t *)stream)->s;
}

/* ---- device ------------------------------------------------------------- */

static mvrt_status_t mvrt_cuda_probe(int *out_count)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return mvrt_cuda_host->set_error(MVRT_ERR_UNAVAILABLE,
                                         "cuda: no usable NVIDIA driver or GPU: cudaGetDeviceCount: %s: %s",
                                         cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (n <= 0)
        return mvrt_cuda_host->set_error(MVRT_ERR_UNAVAILABLE, "cuda: the driver reports no CUDA device");
    *out_count = n;
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_device_open(int index, void **out_device)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return mvrt_cuda_fail(e, "cudaGetDeviceCount");
    if (index < 0 || index >= n)
        return mvrt_cuda_host->set_error(MVRT_ERR_INVALID_ARGUMENT,
                                         "cuda: device index %d does not exist (%d device(s))", index, n);
    mvrt_cuda_device_t *d = calloc(1, sizeof *d);
    if (!d)
        return mvrt_cuda_host->set_error(MVRT_ERR_OUT_OF_MEMORY, "cuda: cannot allocate the device record");
    d->index = index;
    mvrt_status_t st = MVRT_OK;
    if ((e = cudaSetDevice(index)) != cudaSuccess) { st = mvrt_cuda_fail(e, "cudaSetDevice"); goto fail; }
    if ((e = cudaGetDeviceProperties(&d->prop, index)) != cudaSuccess) {
        st = mvrt_cuda_fail(e, "cudaGetDeviceProperties");
        goto fail;
    }
    {
        struct cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeNone;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = index;
        if ((e = cudaMemPoolCreate(&d->pool, &props)) != cudaSuccess) {
            st = mvrt_cuda_fail(e, "cudaMemPoolCreate");
            goto fail;
        }
        uint64_t keep = UINT64_MAX; /* cache freed blocks; trimmed on OOM */
        if ((e = cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &keep)) != cudaSuccess) {
            st = mvrt_cuda_fail(e, "cudaMemPoolSetAttribute");
            cudaMemPoolDestroy(d->pool);
            goto fail;
        }
    }
    if ((e = cudaStreamCreateWithFlags(&d->default_stream.s, cudaStreamNonBlocking)) != cudaSuccess) {
        st = mvrt_cuda_fail(e, "cudaStreamCreateWithFlags");
        cudaMemPoolDestroy(d->pool);
        goto fail;
    }
    d->default_stream.owned = 1;
    if (pthread_mutex_init(&d->lock, NULL) != 0) {
        cudaStreamDestroy(d->default_stream.s);
        cudaMemPoolDestroy(d->pool);
        st = mvrt_cuda_host->set_error(MVRT_ERR_INTERNAL, "cuda: pthread_mutex_init failed");
        goto fail;
    }
    {
        int optin = 0;
        if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, index) != cudaSuccess || optin <= 0)
            optin = (int)d->prop.sharedMemPerBlock;
        (void)cudaGetLastError();
        d->tuning.smem_limit = (size_t)optin;
        /* Benchmark knob: threads per channel row of the scan kernels. */
        const char *tpr = getenv("MVRT_CUDA_SCAN_TPR");
        d->tuning.tpr_override = 0;
        if (tpr) {
            int v = atoi(tpr);
            if (v == 1 || v == 2 || v == 4 || v == 8 || v == 16 || v == 32) d->tuning.tpr_override = v;
        }
    }
    *out_device = d;
    return MVRT_OK;
fail:
    free(d);
    return st;
}

static void mvrt_cuda_device_close(void *device)
{
    mvrt_cuda_device_t *d = device;
    if (!d) return;
    if (cudaSetDevice(d->index) == cudaSuccess) {
        cudaStreamSynchronize(d->default_stream.s);
        /* streams the user forgot: release ours, forget foreign ones */
        mvrt_cuda_stream_t *s = d->streams;
        while (s) {
            mvrt_cuda_stream_t *next = s->next;
            if (s->owned) cudaStreamDestroy(s->s);
            if (s->fence) cudaEventDestroy(s->fence);
            free(s);
            s = next;
        }
        cudaStreamDestroy(d->default_stream.s);
        cudaMemPoolDestroy(d->pool);
    }
    (void)cudaGetLastError();
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static mvrt_status_t mvrt_cuda_device_info(void *device, mvrt_device_info_t *out)
{
    mvrt_cuda_device_t *d = device;
    mvrt_device_info_t info;
    memset(&info, 0, sizeof info);
    snprintf(info.backend, sizeof info.backend, "cuda");
    info.device_index = d->index;
    snprintf(info.name, sizeof info.name, "%s", d->prop.name);
    snprintf(info.vendor, sizeof info.vendor, "NVIDIA");
    info.total_memory = (uint64_t)d->prop.totalGlobalMem;
    info.warp_width = d->prop.warpSize;
    info.compute_units = d->prop.multiProcessorCount;
    info.arch_major = d->prop.major;
    info.arch_minor = d->prop.minor;
    snprintf(info.features, sizeof info.features, "sm_%d%d", d->prop.major, d->prop.minor);
    *out = info;
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_set_num_threads(void *device, int n)
{
    (void)device;
    (void)n;
    return MVRT_OK;
}

/* ---- memory ------------------------------------------------------------- */

static mvrt_status_t mvrt_cuda_mem_alloc(void *device, size_t bytes, void **out_ptr)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    void *p = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, d->pool, d->default_stream.s);
    if (e == cudaErrorMemoryAllocation) {
        /* Give cached blocks back to the driver and try once more. */
        (void)cudaGetLastError();
        cudaStreamSynchronize(d->default_stream.s);
        cudaMemPoolTrimTo(d->pool, 0);
        (void)cudaGetLastError();
        e = cudaMallocFromPoolAsync(&p, bytes, d->pool, d->default_stream.s);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (e == cudaErrorMemoryAllocation)
            return mvrt_cuda_host->set_error(MVRT_ERR_OUT_OF_MEMORY,
                                             "cuda: out of device memory allocating %zu bytes on device %d: %s: %s",
                                             bytes, d->index, cudaGetErrorName(e), cudaGetErrorString(e));
        return mvrt_cuda_fail(e, "cudaMallocFromPoolAsync");
    }
    /* The block may be reused from memory whose last use is still queued on
     * the default stream: wait, so that it is usable on every stream. */
    e = cudaStreamSynchronize(d->default_stream.s);
    if (e != cudaSuccess) {
        cudaFreeAsync(p, d->default_stream.s);
        return mvrt_cuda_fail(e, "cudaStreamSynchronize after allocation");
    }
    *out_ptr = p;
    return MVRT_OK;
}

static void mvrt_cuda_mem_free(void *device, void *ptr)
{
    mvrt_cuda_device_t *d = device;
    if (!ptr || cudaSetDevice(d->index) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    /* Order the free after the work queued on every stream of the device. */
    pthread_mutex_lock(&d->lock);
    for (mvrt_cuda_stream_t *s = d->streams; s; s = s->next) {
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(s->s, &cs) != cudaSuccess || cs != cudaStreamCaptureStatusNone) continue;
        if (cudaEventRecord(s->fence, s->s) == cudaSuccess)
            cudaStreamWaitEvent(d->default_stream.s, s->fence, 0);
    }
    pthread_mutex_unlock(&d->lock);
    cudaFreeAsync(ptr, d->default_stream.s);
    (void)cudaGetLastError();
}

/* ---- streams ------------------------------------------------------------ */

static void *mvrt_cuda_default_stream(void *device)
{
    return &((mvrt_cuda_device_t *)device)->default_stream;
}

static mvrt_status_t mvrt_cuda_stream_add(mvrt_cuda_device_t *d, cudaStream_t native, int owned, void **out)
{
    mvrt_cuda_stream_t *s = calloc(1, sizeof *s);
    if (!s) {
        if (owned) cudaStreamDestroy(native);
        return mvrt_cuda_host->set_error(MVRT_ERR_OUT_OF_MEMORY, "cuda: cannot allocate a stream record");
    }
    cudaError_t e = cudaEventCreateWithFlags(&s->fence, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        if (owned) cudaStreamDestroy(native);
        free(s);
        return mvrt_cuda_fail(e, "cudaEventCreateWithFlags");
    }
    s->s = native;
    s->owned = owned;
    pthread_mutex_lock(&d->lock);
    s->next = d->streams;
    if (d->streams) d->streams->prev = s;
    d->streams = s;
    pthread_mutex_unlock(&d->lock);
    *out = s;
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_stream_create(void *device, void **out_stream)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    cudaStream_t s;
    CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return mvrt_cuda_stream_add(d, s, 1, out_stream);
}

static mvrt_status_t mvrt_cuda_stream_wrap(void *device, void *native, void **out_stream)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    return mvrt_cuda_stream_add(d, (cudaStream_t)native, 0, out_stream);
}

static void mvrt_cuda_stream_destroy(void *device, void *stream)
{
    mvrt_cuda_device_t *d = device;
    mvrt_cuda_stream_t *s = stream;
    if (!s || s == &d->default_stream) return;
    pthread_mutex_lock(&d->lock);
    if (s->prev) s->prev->next = s->next; else d->streams = s->next;
    if (s->next) s->next->prev = s->prev;
    pthread_mutex_unlock(&d->lock);
    if (cudaSetDevice(d->index) == cudaSuccess) {
        /* cudaStreamDestroy lets queued work finish; so does the event */
        if (s->owned) cudaStreamDestroy(s->s);
        cudaEventDestroy(s->fence);
    }
    (void)cudaGetLastError();
    free(s);
}

static mvrt_status_t mvrt_cuda_stream_synchronize(void *device, void *stream)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    CUDA_TRY(cudaStreamSynchronize(mvrt_cuda_native(stream)), "cudaStreamSynchronize");
    return MVRT_OK;
}

static void *mvrt_cuda_stream_native(void *device, void *stream)
{
    (void)device;
    return (void *)mvrt_cuda_native(stream);
}

/* ---- events ------------------------------------------------------------- */

static mvrt_status_t mvrt_cuda_event_create(void *device, void **out_event)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    cudaEvent_t ev;
    CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDefault), "cudaEventCreate");
    *out_event = (void *)ev;
    return MVRT_OK;
}

static void mvrt_cuda_event_destroy(void *device, void *event)
{
    mvrt_cuda_device_t *d = device;
    if (!event) return;
    if (cudaSetDevice(d->index) == cudaSuccess) cudaEventDestroy((cudaEvent_t)event);
    (void)cudaGetLastError();
}

static mvrt_status_t mvrt_cuda_event_record(void *device, void *event, void *stream)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    CUDA_TRY(cudaEventRecord((cudaEvent_t)event, mvrt_cuda_native(stream)), "cudaEventRecord");
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_stream_wait_event(void *device, void *stream, void *event)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    CUDA_TRY(cudaStreamWaitEvent(mvrt_cuda_native(stream), (cudaEvent_t)event, 0), "cudaStreamWaitEvent");
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_event_synchronize(void *device, void *event)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    CUDA_TRY(cudaEventSynchronize((cudaEvent_t)event), "cudaEventSynchronize");
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_event_elapsed_ms(void *device, void *start, void *end, float *out_ms)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    float ms = 0.f;
    CUDA_TRY(cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)end), "cudaEventElapsedTime");
    *out_ms = ms;
    return MVRT_OK;
}

/* ---- copies and fill ---------------------------------------------------- */

static mvrt_status_t mvrt_cuda_copy(void *device, void *stream, void *dst, const void *src, size_t n,
                                    enum cudaMemcpyKind kind, const char *what)
{
    mvrt_cuda_device_t *d = device;
    if (n == 0) return MVRT_OK;
    ENTER(d);
    CUDA_TRY(cudaMemcpyAsync(dst, src, n, kind, mvrt_cuda_native(stream)), what);
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_copy_h2d(void *device, void *stream, void *dst, const void *src, size_t n)
{
    return mvrt_cuda_copy(device, stream, dst, src, n, cudaMemcpyHostToDevice, "cudaMemcpyAsync (host to device)");
}
static mvrt_status_t mvrt_cuda_copy_d2h(void *device, void *stream, void *dst, const void *src, size_t n)
{
    return mvrt_cuda_copy(device, stream, dst, src, n, cudaMemcpyDeviceToHost, "cudaMemcpyAsync (device to host)");
}
static mvrt_status_t mvrt_cuda_copy_d2d(void *device, void *stream, void *dst, const void *src, size_t n)
{
    return mvrt_cuda_copy(device, stream, dst, src, n, cudaMemcpyDeviceToDevice,
                          "cudaMemcpyAsync (device to device)");
}

static mvrt_status_t mvrt_cuda_fill(void *device, void *stream, void *dst, size_t bytes, const void *pattern,
                                    size_t pattern_size)
{
    mvrt_cuda_device_t *d = device;
    if (bytes == 0) return MVRT_OK;
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
        return mvrt_cuda_host->set_error(MVRT_ERR_INVALID_ARGUMENT, "cuda: fill pattern size %zu (1, 2 or 4)",
                                         pattern_size);
    ENTER(d);
    CUDA_TRY(mvrt_cuda_fill_pattern(dst, bytes, pattern, pattern_size, mvrt_cuda_native(stream)), "fill");
    return MVRT_OK;
}

/* ---- selective scan ----------------------------------------------------- */

static mvrt_status_t mvrt_cuda_scan_fwd_entry(void *device, void *stream, const mvrt_scan_params_t *p)
{
    mvrt_cuda_device_t *d = device;
    if (p->batch == 0 || p->dim == 0 || p->seqlen == 0) return MVRT_OK;
    ENTER(d);
    CUDA_TRY(mvrt_cuda_scan_fwd(p, &d->tuning, mvrt_cuda_native(stream)), "selective scan forward launch");
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_scan_bwd_workspace_entry(void *device, const mvrt_scan_params_t *p,
                                                        size_t *out_bytes)
{
    mvrt_cuda_device_t *d = device;
    *out_bytes = mvrt_cuda_scan_bwd_workspace(p, &d->tuning);
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_scan_bwd_entry(void *device, void *stream, const mvrt_scan_params_t *p)
{
    mvrt_cuda_device_t *d = device;
    if (p->batch == 0 || p->dim == 0 || p->seqlen == 0) return MVRT_OK;
    size_t need = mvrt_cuda_scan_bwd_workspace(p, &d->tuning);
    if (p->workspace_bytes < need || (need > 0 && !p->workspace))
        return mvrt_cuda_host->set_error(MVRT_ERR_INVALID_ARGUMENT,
                                         "cuda: scan backward workspace of %zu bytes is too small (needs %zu)",
                                         p->workspace_bytes, need);
    ENTER(d);
    CUDA_TRY(mvrt_cuda_scan_bwd(p, &d->tuning, mvrt_cuda_native(stream)), "selective scan backward launch");
    return MVRT_OK;
}

/* ---- graphs ------------------------------------------------------------- */

static mvrt_status_t mvrt_cuda_graph_capture_begin(void *device, void *stream)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    CUDA_TRY(cudaStreamBeginCapture(mvrt_cuda_native(stream), cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCapture");
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_graph_capture_end(void *device, void *stream, void **out_graph)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    cudaGraph_t g = NULL;
    CUDA_TRY(cudaStreamEndCapture(mvrt_cuda_native(stream), &g), "cudaStreamEndCapture");
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) return mvrt_cuda_fail(e, "cudaGraphInstantiate");
    *out_graph = (void *)exec;
    return MVRT_OK;
}

static mvrt_status_t mvrt_cuda_graph_launch(void *device, void *graph, void *stream)
{
    mvrt_cuda_device_t *d = device;
    ENTER(d);
    CUDA_TRY(cudaGraphLaunch((cudaGraphExec_t)graph, mvrt_cuda_native(stream)), "cudaGraphLaunch");
    return MVRT_OK;
}

static void mvrt_cuda_graph_destroy(void *device, void *graph)
{
    mvrt_cuda_device_t *d = device;
    if (!graph) return;
    if (cudaSetDevice(d->index) == cudaSuccess) cudaGraphExecDestroy((cudaGraphExec_t)graph);
    (void)cudaGetLastError();
}

/* ---- entry point -------------------------------------------------------- */

static const mvrt_plugin_vtable_t mvrt_cuda_vtable = {
    .abi_version = MVRT_PLUGIN_ABI_VERSION,
    .name = "cuda",
    .priority = 30,
    .probe = mvrt_cuda_probe,
    .device_open = mvrt_cuda_device_open,
    .device_close = mvrt_cuda_device_close,
    .device_info = mvrt_cuda_device_info,
    .set_num_threads = mvrt_cuda_set_num_threads,
    .mem_alloc = mvrt_cuda_mem_alloc,
    .mem_free = mvrt_cuda_mem_free,
    .default_stream = mvrt_cuda_default_stream,
    .stream_create = mvrt_cuda_stream_create,
    .stream_wrap = mvrt_cuda_stream_wrap,
    .stream_destroy = mvrt_cuda_stream_destroy,
    .stream_synchronize = mvrt_cuda_stream_synchronize,
    .stream_native = mvrt_cuda_stream_native,
    .event_create = mvrt_cuda_event_create,
    .event_destroy = mvrt_cuda_event_destroy,
    .event_record = mvrt_cuda_event_record,
    .stream_wait_event = mvrt_cuda_stream_wait_event,
    .event_synchronize = mvrt_cuda_event_synchronize,
    .event_elapsed_ms = mvrt_cuda_event_elapsed_ms,
    .copy_h2d = mvrt_cuda_copy_h2d,
    .copy_d2h = mvrt_cuda_copy_d2h,
    .copy_d2d = mvrt_cuda_copy_d2d,
    .fill = mvrt_cuda_fill,
    .scan_fwd = mvrt_cuda_scan_fwd_entry,
    .scan_bwd_workspace_size = mvrt_cuda_scan_bwd_workspace_entry,
    .scan_bwd = mvrt_cuda_scan_bwd_entry,
    .graph_capture_begin = mvrt_cuda_graph_capture_begin,
    .graph_capture_end = mvrt_cuda_graph_capture_end,
    .graph_launch = mvrt_cuda_graph_launch,
    .graph_destroy = mvrt_cuda_graph_destroy,
};

__attribute__((visibility("default"))) const mvrt_plugin_vtable_t *
mvrt_backend_plugin_entry_v1(const mvrt_host_api_t *host, uint32_t runtime_abi_version)
{
    if (!host || !host->set_error || runtime_abi_version != MVRT_PLUGIN_ABI_VERSION)
        return NULL;
    mvrt_cuda_host = host;
    return &mvrt_cuda_vtable;
}
