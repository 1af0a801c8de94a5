/* The CPU backend plugin (libmvrt_backend_cpu.so).
 *
 * One device: this machine. Memory is host memory; streams exist only to
 * satisfy the API (work runs to completion inside each call, so any stream
 * is trivially in order); events record a monotonic timestamp so that
 * mvrt_event_elapsed_ms measures host time between two records. The scan
 * runs the vectorized kernels of ops/selective_scan (mvrt_scan_cpu) with
 * the device's thread count.
 *
 * Only the entry point is exported; everything else is hidden (the build
 * uses -fvisibility=hidden) or static.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "mvrt_plugin.h"
#include "ops/selective_scan/scan_cpu.h"
#include "ops/common/mv_cpu.h"

/* Allocation alignment: the public contract promises 256 bytes. */
#define MVRT_CPU_ALIGN 256

static const mvrt_host_api_t *mvrt_cpu_host;

#define CPU_ERROR(status, ...) mvrt_cpu_host->set_error((status), __VA_ARGS__)

typedef struct mvrt_cpu_stream {
    int is_default;
} mvrt_cpu_stream_t;

typedef struct mvrt_cpu_event {
    struct timespec when;
    int recorded;
} mvrt_cpu_event_t;

typedef struct mvrt_cpu_device {
    int num_threads;         /* accessed atomically: set from any thread */
    int default_threads;
    mvrt_cpu_stream_t default_stream;
} mvrt_cpu_device_t;

/* ---- device ------------------------------------------------------------- */

static int mvrt_cpu_default_threads(void)
{
#ifdef _OPENMP
    int n = omp_get_max_threads();
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    return n > 0 ? (int)n : 1;
}

static mvrt_status_t mvrt_cpu_probe(int *out_count)
{
    *out_count = 1;
    return MVRT_OK;
}

static mvrt_status_t mvrt_cpu_device_open(int index, void **out_device)
{
    if (index != 0)
        return CPU_ERROR(MVRT_ERR_INVALID_ARGUMENT, "cpu: device index %d does not exist (only 0)",
                         index);
    mvrt_cpu_device_t *d = calloc(1, sizeof *d);
    if (!d)
        return CPU_ERROR(MVRT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes for the device",
                         sizeof *d);
    d->default_threads = mvrt_cpu_default_threads();
    d->num_threads = d->default_threads;
    d->default_stream.is_default = 1;
    *out_device = d;
    return MVRT_OK;
}

static void mvrt_cpu_device_close(void *device)
{
    free(device);
}

static int mvrt_cpu_threads(void *device)
{
    return __atomic_load_n(&((mvrt_cpu_device_t *)device)->num_threads, __ATOMIC_RELAXED);
}

/* Copies the value after "key<spaces>: " of the first matching line of
 * /proc/cpuinfo into dst; returns 1 if found. */
static int mvrt_cpu_cpuinfo(const char *key, char *dst, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[1024];
    size_t klen = strlen(key);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0)
            continue;
        char *p = line + klen;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ':')
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strcspn(p, "\r\n");
        if (n == 0)
            continue;
        snprintf(dst, size, "%.*s", (int)n, p);
        found = 1;
    }
    fclose(f);
    return found;
}

static void mvrt_cpu_features(char *dst, size_t size)
{
    size_t len = (size_t)snprintf(dst, size, "scan:%s gemm:%s", mvrt_cpu_scan_isa(),
                                  mvrt_cpu_gemm_library());
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    /* __builtin_cpu_supports needs literal strings. */
    const char *names[8];
    int n = 0;
    if (__builtin_cpu_supports("avx512f"))
        names[n++] = "avx512f";
    if (__builtin_cpu_supports("avx512bw"))
        names[n++] = "avx512bw";
    if (__builtin_cpu_supports("avx512vl"))
        names[n++] = "avx512vl";
    if (__builtin_cpu_supports("avx2"))
        names[n++] = "avx2";
    if (__builtin_cpu_supports("fma"))
        names[n++] = "fma";
    if (__builtin_cpu_supports("f16c"))
        names[n++] = "f16c";
    if (__builtin_cpu_supports("avx"))
        names[n++] = "avx";
    if (__builtin_cpu_supports("sse4.2"))
        names[n++] = "sse4.2";
    for (int i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(dst + len, size - len, " %s", names[i]);
#elif defined(__aarch64__)
    if (len < size)
        snprintf(dst + len, size - len, " neon");
#endif
}

static mvrt_status_t mvrt_cpu_device_info(void *device, mvrt_device_info_t *out)
{
    memset(out, 0, sizeof *out);
    if (!mvrt_cpu_cpuinfo("model name", out->name, sizeof out->name) &&
        !mvrt_cpu_cpuinfo("Model", out->name, sizeof out->name))
        snprintf(out->name, sizeof out->name, "CPU");
    char vendor[48];
    if (mvrt_cpu_cpuinfo("vendor_id", vendor, sizeof vendor)) {
        if (strcmp(vendor, "GenuineIntel") == 0)
            snprintf(out->vendor, sizeof out->vendor, "Intel");
        else if (strcmp(vendor, "AuthenticAMD") == 0)
            snprintf(out->vendor, sizeof out->vendor, "AMD");
        else
            snprintf(out->vendor, sizeof out->vendor, "%s", vendor);
    } else if (mvrt_cpu_cpuinfo("CPU implementer", vendor, sizeof vendor)) {
        snprintf(out->vendor, sizeof out->vendor, "implementer %s", vendor);
    } else {
        snprintf(out->vendor, sizeof out->vendor, "unknown");
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->total_memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    out->warp_width = mvrt_cpu_scan_lanes();
    out->compute_units = mvrt_cpu_threads(device);
    mvrt_cpu_features(out->features, sizeof out->features);
    return MVRT_OK;
}

static mvrt_status_t mvrt_cpu_set_num_threads(void *device, int n)
{
    if (n < 0)
        return CPU_ERROR(MVRT_ERR_INVALID_ARGUMENT, "cpu: thread count %d must be >= 0", n);
    mvrt_cpu_device_t *d = device;
    __atomic_store_n(&d->num_threads, n == 0 ? d->default_threads : n, __ATOMIC_RELAXED);
    return MVRT_OK;
}

/* ---- memory ------------------------------------------------------------- */

static mvrt_status_t mvrt_cpu_mem_alloc(void *device, size_t bytes, void **out_ptr)
{
    (void)device;
    /* aligned_alloc wants a multiple of the alignment. */
    if (bytes > SIZE_MAX - (MVRT_CPU_ALIGN - 1))
        return CPU_ERROR(MVRT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes of host memory",
                         bytes);
    size_t rounded = (bytes + MVRT_CPU_ALIGN - 1) / MVRT_CPU_ALIGN * MVRT_CPU_ALIGN;
    void *p = aligned_alloc(MVRT_CPU_ALIGN, rounded);
    if (!p)
        return CPU_ERROR(MVRT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes of host memory",
                         bytes);
    *out_ptr = p;
    return MVRT_OK;
}

static void mvrt_cpu_mem_free(void *device, void *ptr)
{
    (void)device;
    free(ptr);
}

/* ---- streams and events ------------------------------------------------- */

static void *mvrt_cpu_default_stream(void *device)
{
    return &((mvrt_cpu_device_t *)device)->default_stream;
}

static mvrt_status_t mvrt_cpu_stream_create(void *device, void **out_stream)
{
    (void)device;
    mvrt_cpu_stream_t *s = calloc(1, sizeof *s);
    if (!s)
        return CPU_ERROR(MVRT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate a stream (%zu bytes)",
                         sizeof *s);
    *out_stream = s;
    return MVRT_OK;
}

static mvrt_status_t mvrt_cpu_stream_wrap(void *device, void *native, void **out_stream)
{
    if (native)
        return CPU_ERROR(MVRT_ERR_INVALID_ARGUMENT,
                         "mvrt_stream_wrap: native_stream %p: the CPU backend has no native "
                         "streams and wraps only NULL",
                         native);
    return mvrt_cpu_stream_create(device, out_stream);
}

static void mvrt_cpu_stream_destroy(void *device, void *stream)
{
    (void)device;
    mvrt_cpu_stream_t *s = stream;
    if (s && !s->is_default)
        free(s);
}

static mvrt_status_t mvrt_cpu_stream_synchronize(void *device, void *stream)
{
    (void)device;
    (void)stream;
    return MVRT_OK; /* work completes inside each call */
}

static void *mvrt_cpu_stream_native(void *device, void *stream)
{
    (void)device;
    (void)stream;
    return NULL;
}

static mvrt_status_t mvrt_cpu_event_create(void *device, void **out_event)
{
    (void)device;
    mvrt_cpu_event_t *e = calloc(1, sizeof *e);
    if (!e)
        return CPU_ERROR(MVRT_ERR_OUT_OF_MEMORY, "cpu: cannot allocate an event (%zu bytes)",
                         sizeof *e);
    *out_event = e;
    return MVRT_OK;
}

static void mvrt_cpu_event_destroy(void *device, void *event)
{
    (void)device;
    free(event);
}

static mvrt_status_t mvrt_cpu_event_record(void *device, void *event, void *stream)
{
    (void)device;
    (void)stream;
    mvrt_cpu_event_t *e = event;
    if (clock_gettime(CLOCK_MONOTONIC, &e->when) != 0)
        return CPU_ERROR(MVRT_ERR_DEVICE, "cpu: clock_gettime(CLOCK_MONOTONIC) failed");
    e->recorded = 1;
    return MVRT_OK;
}

static mvrt_status_t mvrt_cpu_stream_wait_event(void *device, void *stream, void *event)
{
    (void)device;
    (void)stream;
    (void)event;
    return MVRT_OK; /* the recorded work has already completed */
}

static mvrt_status_t mvrt_cpu_event_synchronize(void *device, void *event)
{
    (void)device;
    (void)event;
    return MVRT_OK;
}

static mvrt_status_t mvrt_cpu_event_elapsed_ms(void *device, void *start, void *end,
                                               float *out_ms)
{
    (void)device;
    const mvrt_cpu_event_t *a = start, *b = end;
    if (!a->recorded || !b->recorded)
        return CPU_ERROR(MVRT_ERR_INVALID_ARGUMENT,
                         "mvrt_event_elapsed_ms: %s has never been recorded",
                         !a->recorded ? "start" : "end");
    double ms = (double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
                (double)(b->when.tv_nsec - a->when.tv_nsec) * 1e-6;
    *out_ms = (float)ms;
    return MVRT_OK;
}

/* ---- copies and fill ---------------------------------------------------- */

static mvrt_status_t mvrt_cpu_copy(void *device, void *stream, void *dst, const void *src,
                                   size_t n)
{
    (void)device;
    (void)stream;
    memmove(dst, src, n); /* ranges within one buffer may overlap */
    return MVRT_OK;
}

static mvrt_status_t mvrt_cpu_fill(void *device, void *stream, void *dst, size_t bytes,
                                   const void *pattern, size_t pattern_size)
{
    (void)device;
    (void)stream;
    unsigned char *p = dst;
    if (pattern_size == 1) {
        memset(p, *(const unsigned char *)pattern, bytes);
        return MVRT_OK;
    }
    if (pattern_size != 2 && pattern_size != 4)
        return CPU_ERROR(MVRT_ERR_INVALID_ARGUMENT, "cpu: fill pattern size %zu is not 1, 2 or 4",
                         pattern_size);
    /* Write one pattern, then double the filled prefix with memcpy. */
    size_t done = pattern_size < bytes ? pattern_size : bytes;
    memcpy(p, pattern, done);
    while (done < bytes) {
        size_t n = done < bytes - done ? done : bytes - done;
        memcpy(p + done, p, n);
        done += n;
    }
    return MVRT_OK;
}

/* ---- selective scan ----------------------------------------------------- */

static mvrt_status_t mvrt_cpu_scan_fwd_entry(void *device, void *stream,
                                             const mvrt_scan_params_t *p)
{
    (void)stream;
    mvrt_cpu_scan_fwd(p, mvrt_cpu_threads(device));
    return MVRT_OK;
}

static mvrt_status_t mvrt_cpu_scan_bwd_workspace_entry(void *device, const mvrt_scan_params_t *p,
                                                       size_t *out_bytes)
{
    *out_bytes = mvrt_cpu_scan_bwd_workspace_size(p, mvrt_cpu_threads(device));
    return MVRT_OK;
}

static mvrt_status_t mvrt_cpu_scan_bwd_entry(void *device, void *stream,
                                             const mvrt_scan_params_t *p)
{
    (void)stream;
    /* The runtime sized the workspace for the thread count of its query; if
     * set_num_threads raised it since, the kernel runs with as
     * many threads as the workspace allows. Only a workspace too small even
     * for one thread is an error (the kernel would silently do nothing). */
    size_t one = mvrt_cpu_scan_bwd_workspace_size(p, 1);
    if (!p->workspace || p->workspace_bytes < one)
        return CPU_ERROR(MVRT_ERR_INVALID_ARGUMENT,
                         "mvrt_selective_scan_bwd: workspace of %zu bytes is too small "
                         "(%zu needed with one thread)",
                         p->workspace_bytes, one);
    mvrt_cpu_scan_bwd(p, mvrt_cpu_threads(device));
    return MVRT_OK;
}

/* ---- MambaVision ops ---------------------------------------------------- */

/* The fused mixer projections, the fused MLP, the linear with a folded
 * LayerNorm and 16-bit weights (linear b16 with b_constant) are GPU-only
 * forms: the CPU runs the ops they fuse, from fp32 weights. The 16-bit
 * storage forms, bf16 and fp16 (layernorm y16, linear a16 / y16 and b16
 * of an activation, the NHWC 16-bit maps of conv2d, window and pool,
 * dwconv1d x16 / y_copy16 / y16) run here too, in fp32 math through
 * scratch (ops/common/mv_cpu.h), so that a 16-bit graph stores the same
 * activations in 16 bits on every backend that takes the forms. */
static mvrt_status_t cpu_op_form_check(const mvrt_op_params_t *p)
{
    if (p->kind == MVRT_OP_MIXER_PROJ)
        return CPU_ERROR(MVRT_ERR_UNSUPPORTED, "cpu: the fused mixer projections are a GPU-only form");
    if (p->kind == MVRT_OP_MLP)
        return CPU_ERROR(MVRT_ERR_UNSUPPORTED, "cpu: the fused MLP is a GPU-only form");
    if (p->kind == MVRT_OP_LINEAR && p->u.linear.ln_weight)
        return CPU_ERROR(MVRT_ERR_UNSUPPORTED, "cpu: a linear with a folded LayerNorm is a GPU-only form");
    if (p->kind == MVRT_OP_LINEAR && p->u.linear.b16 && p->u.linear.b_constant)
        return CPU_ERROR(MVRT_ERR_UNSUPPORTED,
                         "cpu: a linear's 16-bit weight (b16 with b_constant) is a GPU form; the CPU computes 16-bit "
                         "graphs in fp32 from fp32 weights");
    if (mvrt_op_storage16(p) < 0)
        return CPU_ERROR(MVRT_ERR_UNSUPPORTED,
                         "cpu: op kind %d: 16-bit storage fields must hold 0, MVRT_STORAGE16_BF16 or "
                         "MVRT_STORAGE16_F16, one type per op, matching a bf16 / fp16 math; a conv's x / y_map_channels "
                         "0 or in [channels, 65536] with that map in 16 bits",
                         p->kind);
    return MVRT_OK;
}

/* Scratch of the 16-bit storage forms (fp32 copies), 0 for the others;
 * answers which forms the CPU takes (the graph runner probes with it). */
static mvrt_status_t mvrt_cpu_op_scratch_entry(void *device, const mvrt_op_params_t *p, size_t *out_bytes)
{
    (void)device;
    const mvrt_status_t st = cpu_op_form_check(p);
    if (st == MVRT_OK)
        *out_bytes = mvrt_cpu_op_scratch_bytes(p);
    return st;
}

static mvrt_status_t mvrt_cpu_op_run_entry(void *device, void *stream, const mvrt_op_params_t *p,
                                           void *scratch)
{
    (void)stream;
    const mvrt_status_t st = cpu_op_form_check(p);
    if (st != MVRT_OK)
        return st;
    const int rc = mvrt_cpu_op_run(p, scratch, mvrt_cpu_threads(device));
    if (rc == -2)
        return CPU_ERROR(MVRT_ERR_INVALID_ARGUMENT, "cpu: op kind %d (16-bit storage) needs %zu bytes of scratch, got none",
                         p->kind, mvrt_cpu_op_scratch_bytes(p));
    if (rc != 0)
        return CPU_ERROR(MVRT_ERR_UNSUPPORTED, "cpu: op kind %d is not implemented", p->kind);
    return MVRT_OK;
}

/* ---- entry point -------------------------------------------------------- */

static const mvrt_plugin_vtable_t mvrt_cpu_vtable = {
    .abi_version = MVRT_PLUGIN_ABI_VERSION,
    .name = "cpu",
    .priority = 10,
    .probe = mvrt_cpu_probe,
    .device_open = mvrt_cpu_device_open,
    .device_close = mvrt_cpu_device_close,
    .device_info = mvrt_cpu_device_info,
    .set_num_threads = mvrt_cpu_set_num_threads,
    .mem_alloc = mvrt_cpu_mem_alloc,
    .mem_free = mvrt_cpu_mem_free,
    .default_stream = mvrt_cpu_default_stream,
    .stream_create = mvrt_cpu_stream_create,
    .stream_wrap = mvrt_cpu_stream_wrap,
    .stream_destroy = mvrt_cpu_stream_destroy,
    .stream_synchronize = mvrt_cpu_stream_synchronize,
    .stream_native = mvrt_cpu_stream_native,
    .event_create = mvrt_cpu_event_create,
    .event_destroy = mvrt_cpu_event_destroy,
    .event_record = mvrt_cpu_event_record,
    .stream_wait_event = mvrt_cpu_stream_wait_event,
    .event_synchronize = mvrt_cpu_event_synchronize,
    .event_elapsed_ms = mvrt_cpu_event_elapsed_ms,
    .copy_h2d = mvrt_cpu_copy,
    .copy_d2h = mvrt_cpu_copy,
    .copy_d2d = mvrt_cpu_copy,
    .fill = mvrt_cpu_fill,
    .scan_fwd = mvrt_cpu_scan_fwd_entry,
    .scan_bwd_workspace_size = mvrt_cpu_scan_bwd_workspace_entry,
    .scan_bwd = mvrt_cpu_scan_bwd_entry,
    .op_scratch_size = mvrt_cpu_op_scratch_entry,
    .op_run = mvrt_cpu_op_run_entry,
};

__attribute__((visibility("default"))) const mvrt_plugin_vtable_t *
mvrt_backend_plugin_entry_v1(const mvrt_host_api_t *host, uint32_t runtime_abi_version)
{
    if (!host || !host->set_error || runtime_abi_version != MVRT_PLUGIN_ABI_VERSION)
        return NULL;
    mvrt_cpu_host = host;
    return &mvrt_cpu_vtable;
}
