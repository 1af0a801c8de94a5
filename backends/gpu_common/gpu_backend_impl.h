/* The host side of a GPU backend plugin, written once for CUDA and HIP.
 *
 * Included (once) by backends/cuda/cuda_backend.c and backends/hip/hip_backend.c
 * after gpu_host_api.h has mapped the neutral gpu* names to one vendor's
 * runtime API and defined the vendor constants (MVRT_GPU_NAME, ...). The two
 * runtimes have the same model (devices, streams, events, stream-ordered
 * memory pools, graph capture), so one implementation serves both.
 *
 * The vendor runtime is linked statically for CUDA (only the driver is
 * needed); without a driver or device every probe returns
 * MVRT_ERR_UNAVAILABLE with the vendor's error name and text, never a crash.
 *
 * Threads: callers may use a device from any thread, so every entry that
 * touches the GPU first makes the device current (gpuSetDevice is cheap).
 *
 * Memory: a per-device memory pool (release threshold: keep everything, so
 * steady-state allocations never reach the driver). mem_alloc allocates on
 * the default stream and waits for that stream, so that the block is usable
 * on any stream at once; mem_free makes the default stream wait for every
 * stream of the device (events) and frees there: work queued on any mvrt
 * stream before the free completes before the memory is reused. Out of
 * memory trims the pool and retries once, then reports
 * MVRT_ERR_OUT_OF_MEMORY; the backend stays usable.
 *
 * MambaVision ops (op_scratch_size / op_run): launched through
 * mv_gpu_launch.h. Their GEMMs use a vendor BLAS where the backend has one
 * (CUDA: cuBLAS, backends/cuda/cuda_blas.h, one handle per opened device,
 * reached under MVRT_GPU_HOST_CUDA only) and our own kernel otherwise (HIP)
 * or when <prefix>GEMM=builtin is set in the environment at device_open
 * (MVRT_CUDA_GEMM=builtin: tests run the HIP GEMM path on NVIDIA with it).
 *
 * Only the entry point is exported.
 */
#ifndef MVRT_GPU_NAME
#error "include gpu_host_api.h (through a backend's source) before gpu_backend_impl.h"
#endif

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt_plugin.h"
#include "mv_gpu_launch.h"
#if defined(MVRT_GPU_HOST_CUDA)
#include "../cuda/cuda_blas.h"
#include "../cuda/cuda_conv_3xtf32.h"
#include "../cuda/cuda_gemm16_sm90.h"
#include "../cuda/cuda_conv16_sm90.h"
#endif

static const mvrt_host_api_t *mvrt_gpu_host;

typedef struct mvrt_gpu_stream {
    gpuStream_t s;
    int owned;          /* 0: wrapped foreign stream, never destroyed */
    gpuEvent_t fence;  /* used by mem_free to order the free after this stream */
    struct mvrt_gpu_stream *next, *prev;
} mvrt_gpu_stream_t;

typedef struct mvrt_gpu_device {
    int index;
    gpuDeviceProp_t prop;
    gpuMemPool_t pool;
    mvrt_gpu_stream_t default_stream;
    pthread_mutex_t lock;           /* guards the stream list */
    mvrt_gpu_stream_t *streams;    /* created and wrapped streams */
    mvrt_gpu_scan_tuning_t tuning;
    mvrt_gpu_op_ctx_t opctx;        /* MambaVision ops: warp width, vendor BLAS hook */
    /* The architecture whose paths host dispatch may choose, major * 10 +
     * minor: the device's, capped by the code the plugin loaded for it
     * (mvrt_gpu_loaded_code_arch) and by MVRT_CUDA_ARCH_CAP. Every
     * "sm_80+" / "sm_90+" choice below reads this, never prop.major: a
     * 75-virtual build on an H100 runs compute_75 code, which has neither
     * the tensor-core, cluster nor dependent-launch paths. */
    int code_arch;
    /* Fault injection for tests (<prefix>FAIL_OP_AT=N, read at open): the
     * N-th op_run on this device makes a real vendor error first (a stream
     * synchronize, which fails and invalidates the capture when the stream
     * is being captured into a graph) and reports it. */
    long fail_op_at;
    long op_runs;                   /* op_run calls so far (atomic) */
} mvrt_gpu_device_t;

/* ---- vendor BLAS hook: a handle per device, or none (own GEMM kernel) ---- */
static void mvrt_gpu_blas_open(mvrt_gpu_device_t *d)
{
    d->opctx.blas = NULL;
    d->opctx.gemm = NULL;
    d->opctx.conv = NULL;
    d->opctx.conv_scratch = NULL;
    d->opctx.gemm16 = NULL;
    d->opctx.cluster_gemm = 0;
    d->opctx.cluster_conv = 0;
    const char *env = getenv(MVRT_GPU_ENV_PREFIX "GEMM");
    if (env && strcmp(env, "builtin") == 0) return;
#if defined(MVRT_GPU_HOST_CUDA)
    char msg[256];
    void *blas = NULL;
    /* Without a usable cuBLAS the ops still run, on our own GEMM kernel. */
    if (mvrt_cuda_blas_create(&blas, d->code_arch, msg, sizeof msg) == 0) {
        d->opctx.blas = blas;
        d->opctx.gemm = mvrt_cuda_blas_gemm;
        /* fp32 and fast convs as CUTLASS implicit GEMMs (3xTF32 / TF32)
         * where fp32 GEMMs run on 3xTF32, i.e. the CUTLASS kernels are
         * built and sm_80+ (MVRT_CUDA_CONV=im2col keeps im2col + GEMM;
         * MVRT_CUDA_FP32_GEMM=sgemm does too) */
        const char *conv = getenv("MVRT_CUDA_CONV");
        if (mvrt_cuda_blas_uses_3xtf32(blas) && !(conv && strcmp(conv, "im2col") == 0)) {
            d->opctx.conv = mvrt_cuda_conv_3xtf32;
            d->opctx.conv_scratch = mvrt_cuda_conv_3xtf32_scratch;
            /* the 16-bit map forms on Hopper's wgmma kernels (sm_90a code;
             * MVRT_CUDA_ARCH_CAP below 90 keeps the Sm80 kernels) */
            if (d->code_arch >= 90 && mvrt_cuda_conv16_sm90_usable()) d->opctx.conv = mvrt_cuda_conv_3xtf32_sm90;
        }
        /* bf16 linears with bias / GELU / residual fused into the GEMM on
         * Hopper (sm_90a kernels; MVRT_CUDA_ARCH_CAP below 90 keeps cuBLAS
         * and the separate epilogue, as on other GPUs) */
        if (d->code_arch >= 90 && mvrt_cuda_gemm16_sm90_usable()) d->opctx.gemm16 = mvrt_cuda_gemm16_sm90;
        /* small fp32 GEMMs as one cluster kernel on sm_90+ (split-K summed
         * in distributed shared memory: linear_gpu_cluster.cuh), where fp32
         * GEMMs are not pinned to SGEMM. MVRT_CUDA_GEMM_CLUSTER=n: at most
         * n slices per cluster (2, 4 or 8; 0 or 1: off) */
        const char *fp32 = getenv("MVRT_CUDA_FP32_GEMM");
        const char *cl = getenv("MVRT_CUDA_GEMM_CLUSTER");
        const int slices = cl ? atoi(cl) : 8;
        if (d->code_arch >= 90 && !(fp32 && strcmp(fp32, "sgemm") == 0) && slices >= 1)
            d->opctx.cluster_gemm = slices > 8 ? 8 : slices;
        /* and convs of few output tiles as one cluster kernel (implicit
         * GEMM: conv2d_gpu_cluster.cuh), with the same slice cap, unless
         * MVRT_CUDA_CONV pins im2col + GEMM or the CUTLASS conv */
        d->opctx.cluster_conv = conv && (strcmp(conv, "im2col") == 0 || strcmp(conv, "implicit") == 0)
                                    ? 0 : d->opctx.cluster_gemm;
    }
#endif
}

static void mvrt_gpu_blas_close(mvrt_gpu_device_t *d)
{
#if defined(MVRT_GPU_HOST_CUDA)
    mvrt_cuda_blas_destroy(d->opctx.blas);
#endif
    d->opctx.blas = NULL;
    d->opctx.gemm = NULL;
    d->opctx.conv = NULL;
    d->opctx.conv_scratch = NULL;
    d->opctx.gemm16 = NULL;
    d->opctx.cluster_gemm = 0;
    d->opctx.cluster_conv = 0;
}

/* Maps a vendor error to a status and records "what: <error name>: text".
 * Also clears the non-sticky last error so that the next call starts clean. */
static mvrt_status_t mvrt_gpu_fail(gpuError_t e, const char *what)
{
    (void)gpuGetLastError();
    mvrt_status_t st = MVRT_ERR_DEVICE;
    switch (e) {
    case gpuErrorMemoryAllocation: st = MVRT_ERR_OUT_OF_MEMORY; break;
    MVRT_GPU_UNAVAILABLE_ERROR_CASES st = MVRT_ERR_UNAVAILABLE; break;
    default: break;
    }
    return mvrt_gpu_host->set_error(st, MVRT_GPU_NAME ": %s: %s: %s", what, gpuGetErrorName(e),
                                     gpuGetErrorString(e));
}

#define GPU_TRY(call, what)                                                  \
    do {                                                                      \
        gpuError_t mvrt_e_ = (call);                                         \
        if (mvrt_e_ != gpuSuccess) return mvrt_gpu_fail(mvrt_e_, (what));   \
    } while (0)

static mvrt_status_t mvrt_gpu_enter(mvrt_gpu_device_t *d)
{
    GPU_TRY(gpuSetDevice(d->index), MVRT_GPU_API_PREFIX "SetDevice");
    return MVRT_OK;
}
#define ENTER(d)                                                              \
    do {                                                                      \
        mvrt_status_t mvrt_st_ = mvrt_gpu_enter(d);                          \
        if (mvrt_st_ != MVRT_OK) return mvrt_st_;                             \
    } while (0)

static gpuStream_t mvrt_gpu_native(void *stream)
{
    return ((mvrt_gpu_stream_t *)stream)->s;
}

/* ---- device ------------------------------------------------------------- */

static mvrt_status_t mvrt_gpu_probe(int *out_count)
{
    int n = 0;
    gpuError_t e = gpuGetDeviceCount(&n);
    if (e != gpuSuccess) {
        (void)gpuGetLastError();
        return mvrt_gpu_host->set_error(MVRT_ERR_UNAVAILABLE,
                                         MVRT_GPU_NAME ": " MVRT_GPU_NO_DEVICE_TEXT " (" MVRT_GPU_API_PREFIX "GetDeviceCount: %s: %s)",
                                         gpuGetErrorName(e), gpuGetErrorString(e));
    }
    if (n <= 0)
        return mvrt_gpu_host->set_error(MVRT_ERR_UNAVAILABLE, MVRT_GPU_NAME ": " MVRT_GPU_NO_DEVICE_TEXT " (the driver reports 0 devices)");
    *out_count = n;
    return MVRT_OK;
}

#ifndef MVRT_GPU_BUILD_ARCHS
#define MVRT_GPU_BUILD_ARCHS "(not recorded)"
#endif

#ifdef MVRT_GPU_HOST_CUDA
/* Shared memory one block may opt in to on GPUs of an architecture
 * (major * 10 + minor), from NVIDIA's CUDA C++ Programming Guide (compute
 * capabilities table): 64 KB on sm_75 (T4), 163 KB on sm_80 / sm_87 (A100,
 * Orin), 99 KB on sm_86 / sm_89 / sm_120, 227 KB on sm_90 and sm_100 (H100,
 * B200), 96 KB on sm_70. Other values: the nearest lower one listed. */
static size_t mvrt_gpu_arch_smem_per_block(int arch)
{
    if (arch >= 120) return 99u * 1024u;
    if (arch >= 90) return 227u * 1024u;
    if (arch == 87) return 163u * 1024u;
    if (arch >= 86) return 99u * 1024u;
    if (arch >= 80) return 163u * 1024u;
    if (arch >= 75) return 64u * 1024u;
    if (arch >= 70) return 96u * 1024u;
    return 48u * 1024u;
}
#endif

/* Sets d->code_arch (see the field) for the current device, or fails when
 * the plugin carries no code this device can load; below the device's
 * architecture, also lowers the scan's shared-memory limit to that
 * architecture's. Runs after d->tuning.smem_limit holds the device's. */
static mvrt_status_t mvrt_gpu_code_arch_open(mvrt_gpu_device_t *d)
{
    const int device_arch = d->prop.major * 10 + d->prop.minor;
    gpuError_t e = gpuSuccess;
    int loaded = mvrt_gpu_loaded_code_arch(&e);
    if (loaded == 0)
        return mvrt_gpu_host->set_error(MVRT_ERR_UNAVAILABLE,
                                         MVRT_GPU_NAME ": device %d (%s, sm_%d%d) cannot load this plugin's code, built for "
                                         "architectures " MVRT_GPU_BUILD_ARCHS " (%s: %s); rebuild with an architecture "
                                         "this device runs, e.g. -DMVRT_CUDA_ARCHS=%d",
                                         d->index, d->prop.name, d->prop.major, d->prop.minor, gpuGetErrorName(e),
                                         gpuGetErrorString(e), device_arch);
    if (loaded < 0 || loaded > device_arch) loaded = device_arch;
    d->code_arch = loaded;
    /* MVRT_CUDA_ARCH_CAP=75|80|...: choose the paths of that architecture
     * (tests run the T4 / A100 dispatch on a newer GPU; see docs/api.md) */
    const char *cap = getenv(MVRT_GPU_ENV_PREFIX "ARCH_CAP");
    if (cap && *cap) {
        char *end = NULL;
        const long v = strtol(cap, &end, 10);
        if (!end || *end != '\0' || v < 10 || v > 1000)
            return mvrt_gpu_host->set_error(MVRT_ERR_INVALID_ARGUMENT,
                                             MVRT_GPU_NAME ": " MVRT_GPU_ENV_PREFIX "ARCH_CAP=\"%s\" is not an architecture "
                                             "such as 75, 80 or 90",
                                             cap);
        if (v < d->code_arch) d->code_arch = (int)v;
    }
#ifdef MVRT_GPU_HOST_CUDA
    /* Below the device's own architecture (a capped or older build), plan
     * shared memory as that architecture's GPUs would: a block opts in to
     * at most its limit (the scan's plans read tuning.smem_limit), so a
     * configuration a T4 could not launch is not chosen here either. */
    if (d->code_arch < device_arch) {
        const size_t arch_limit = mvrt_gpu_arch_smem_per_block(d->code_arch);
        if (arch_limit < d->tuning.smem_limit) d->tuning.smem_limit = arch_limit;
    }
#endif
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_device_open(int index, void **out_device)
{
    int n = 0;
    gpuError_t e = gpuGetDeviceCount(&n);
    if (e != gpuSuccess) return mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "GetDeviceCount");
    if (index < 0 || index >= n)
        return mvrt_gpu_host->set_error(MVRT_ERR_INVALID_ARGUMENT,
                                         MVRT_GPU_NAME ": device index %d does not exist (%d device(s))", index, n);
    mvrt_gpu_device_t *d = calloc(1, sizeof *d);
    if (!d)
        return mvrt_gpu_host->set_error(MVRT_ERR_OUT_OF_MEMORY, MVRT_GPU_NAME ": cannot allocate the device record");
    d->index = index;
    mvrt_status_t st = MVRT_OK;
    if ((e = gpuSetDevice(index)) != gpuSuccess) { st = mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "SetDevice"); goto fail; }
    if ((e = gpuGetDeviceProperties(&d->prop, index)) != gpuSuccess) {
        st = mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "GetDeviceProperties");
        goto fail;
    }
    if (d->prop.warpSize != 32 && d->prop.warpSize != 64) {
        /* the kernels are compiled for 32- or 64-wide warps only */
        st = mvrt_gpu_host->set_error(MVRT_ERR_UNAVAILABLE, MVRT_GPU_NAME ": device %d has warp width %d (32 or 64 supported)",
                                      index, d->prop.warpSize);
        goto fail;
    }
    {
        gpuMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = gpuMemAllocationTypePinned;
        props.handleTypes = gpuMemHandleTypeNone;
        props.location.type = gpuMemLocationTypeDevice;
        props.location.id = index;
        if ((e = gpuMemPoolCreate(&d->pool, &props)) != gpuSuccess) {
            st = mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "MemPoolCreate");
            goto fail;
        }
        uint64_t keep = UINT64_MAX; /* cache freed blocks; trimmed on OOM */
        if ((e = gpuMemPoolSetAttribute(d->pool, gpuMemPoolAttrReleaseThreshold, &keep)) != gpuSuccess) {
            st = mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "MemPoolSetAttribute");
            gpuMemPoolDestroy(d->pool);
            goto fail;
        }
    }
    if ((e = gpuStreamCreateWithFlags(&d->default_stream.s, gpuStreamNonBlocking)) != gpuSuccess) {
        st = mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "StreamCreateWithFlags");
        gpuMemPoolDestroy(d->pool);
        goto fail;
    }
    d->default_stream.owned = 1;
    if (pthread_mutex_init(&d->lock, NULL) != 0) {
        gpuStreamDestroy(d->default_stream.s);
        gpuMemPoolDestroy(d->pool);
        st = mvrt_gpu_host->set_error(MVRT_ERR_INTERNAL, MVRT_GPU_NAME ": pthread_mutex_init failed");
        goto fail;
    }
    {
        int optin = 0;
        if (gpuDeviceGetAttribute(&optin, gpuDevAttrMaxSharedMemoryPerBlockOptin, index) != gpuSuccess || optin <= 0)
            optin = (int)d->prop.sharedMemPerBlock;
        (void)gpuGetLastError();
        d->tuning.smem_limit = (size_t)optin;
        d->tuning.warp_size = d->prop.warpSize;
        /* Benchmark knob: threads per channel row of the scan kernels. */
        const char *tpr = getenv(MVRT_GPU_TPR_ENV);
        d->tuning.tpr_override = 0;
        if (tpr) {
            int v = atoi(tpr);
            if (v == 1 || v == 2 || v == 4 || v == 8 || v == 16 || v == 32) d->tuning.tpr_override = v;
        }
    }
    d->opctx.warp_size = d->prop.warpSize;
    d->opctx.sm_count = d->prop.multiProcessorCount;
    if ((st = mvrt_gpu_code_arch_open(d)) != MVRT_OK) {
        pthread_mutex_destroy(&d->lock);
        gpuStreamDestroy(d->default_stream.s);
        gpuMemPoolDestroy(d->pool);
        goto fail;
    }
    d->opctx.smem_limit = d->tuning.smem_limit; /* capped to the code's architecture above */
#ifdef MVRT_GPU_HOST_CUDA
    d->opctx.mma16 = d->code_arch >= 80;
    d->opctx.mma_f16 = d->code_arch >= 75;
    {
        /* MVRT_CUDA_FP32_ATTENTION=simt keeps fp32 attention on the fp32
         * SIMT kernel (tests compare both; no accuracy reason to) */
        const char *att = getenv("MVRT_CUDA_FP32_ATTENTION");
        d->opctx.mma_tf32x3 = d->code_arch >= 80 && !(att && strcmp(att, "simt") == 0);
        /* key splits over clusters on sm_90+ (MVRT_CUDA_ATTENTION_SPLIT=0: off) */
        const char *split = getenv("MVRT_CUDA_ATTENTION_SPLIT");
        d->opctx.split_attention = d->code_arch >= 90 && !(split && strcmp(split, "0") == 0);
        /* conv1d + x_proj + dt_proj of a mixer as one kernel for few tokens
         * (ops/mv/mixer_proj_gpu.cuh); MVRT_CUDA_MIXER_PROJ=0: never (tests
         * run the three ops, the form of large mixers, on the golden ones) */
        const char *mp = getenv("MVRT_CUDA_MIXER_PROJ");
        d->opctx.mixer_proj_tokens = mp && strcmp(mp, "0") == 0 ? 0 : MVRT_GPU_MIXER_PROJ_TOKENS;
        /* LayerNorms folded into the cluster GEMM of the linear after them
         * (linear_gpu_cluster.cuh); MVRT_CUDA_LN_FOLD=0: never */
        const char *lnf = getenv("MVRT_CUDA_LN_FOLD");
        d->opctx.ln_fold = !(lnf && strcmp(lnf, "0") == 0);
        /* LayerNorm + fc1 + GELU + fc2 + residual as one cluster kernel for
         * few rows on sm_90+ (ops/mv/mlp_gpu_cluster.cuh);
         * MVRT_CUDA_FUSED_MLP=0: never */
        const char *fm = getenv("MVRT_CUDA_FUSED_MLP");
        d->opctx.fused_mlp = d->code_arch >= 90 && !(fm && strcmp(fm, "0") == 0);
        /* the batch-1 kernels that follow a kernel closely (fused mixer
         * projections, warp-scan forward, out_proj, fused MLP) start while
         * it ends on sm_90+: programmatic dependent launch; MVRT_CUDA_PDL=0:
         * off */
        const char *pdl = getenv("MVRT_CUDA_PDL");
        d->opctx.dependent_launch = d->code_arch >= 90 && !(pdl && strcmp(pdl, "0") == 0);
        d->tuning.dependent_launch = d->opctx.dependent_launch;
    }
#else
    d->opctx.mma16 = 0; /* the mma.sync kernels are NVIDIA-only */
    d->opctx.mma_f16 = 0;
    d->opctx.mma_tf32x3 = 0;
    d->opctx.split_attention = 0;
    d->opctx.mixer_proj_tokens = 0;
    d->opctx.ln_fold = 0;
    d->opctx.fused_mlp = 0;
    d->opctx.dependent_launch = 0;
    d->tuning.dependent_launch = 0;
#endif
    mvrt_gpu_blas_open(d);
    {
        const char *f = getenv(MVRT_GPU_ENV_PREFIX "FAIL_OP_AT");
        d->fail_op_at = f ? atol(f) : 0;
        d->op_runs = 0;
    }
    *out_device = d;
    return MVRT_OK;
fail:
    free(d);
    return st;
}

static void mvrt_gpu_device_close(void *device)
{
    mvrt_gpu_device_t *d = device;
    if (!d) return;
    if (gpuSetDevice(d->index) == gpuSuccess) {
        gpuStreamSynchronize(d->default_stream.s);
        mvrt_gpu_blas_close(d);
        /* streams the user forgot: release ours, forget foreign ones */
        mvrt_gpu_stream_t *s = d->streams;
        while (s) {
            mvrt_gpu_stream_t *next = s->next;
            if (s->owned) gpuStreamDestroy(s->s);
            if (s->fence) gpuEventDestroy(s->fence);
            free(s);
            s = next;
        }
        gpuStreamDestroy(d->default_stream.s);
        gpuMemPoolDestroy(d->pool);
    }
    (void)gpuGetLastError();
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static mvrt_status_t mvrt_gpu_device_info(void *device, mvrt_device_info_t *out)
{
    mvrt_gpu_device_t *d = device;
    mvrt_device_info_t info;
    memset(&info, 0, sizeof info);
    snprintf(info.backend, sizeof info.backend, "%s", MVRT_GPU_NAME);
    info.device_index = d->index;
    snprintf(info.name, sizeof info.name, "%s", d->prop.name);
    snprintf(info.vendor, sizeof info.vendor, "%s", MVRT_GPU_VENDOR);
    info.total_memory = (uint64_t)d->prop.totalGlobalMem;
    info.warp_width = d->prop.warpSize;
    info.compute_units = d->prop.multiProcessorCount;
    info.arch_major = d->prop.major;
    info.arch_minor = d->prop.minor;
    mvrt_gpu_arch_string(&d->prop, info.features, sizeof info.features);
#ifdef MVRT_GPU_HOST_CUDA
    {
        /* the paths dispatch takes on this device with the loaded code */
        const size_t used = strlen(info.features);
        snprintf(info.features + used, sizeof info.features - used,
                 " code=sm_%d tensor-cores=%s clusters=%s dependent-launch=%s fp32-gemm=%s conv=%s"
                 " 16bit-attention=%s 16bit-weights=%s math=%s smem-per-block=%zu",
                 d->code_arch,
                 d->opctx.mma16 ? (d->opctx.mma_tf32x3 ? "bf16,fp16,tf32" : "bf16,fp16")
                 : d->opctx.mma_f16 ? "fp16"
                                    : "none",
                 d->opctx.cluster_gemm > 0 ? "yes" : "no", d->opctx.dependent_launch ? "yes" : "no",
                 d->opctx.blas ? (mvrt_cuda_blas_uses_3xtf32(d->opctx.blas) ? "3xtf32" : "cublas") : "builtin",
                 !d->opctx.conv                                  ? "im2col"
                 : d->opctx.conv == mvrt_cuda_conv_3xtf32_sm90 ? "implicit,16bit-sm90"
                                                                 : "implicit",
                 d->opctx.mma16 || d->opctx.mma_f16 ? "io16" : "simt",
                 d->opctx.gemm ? "once" : "fp32",
                 /* graph math modes: bf16 and TF32 need sm_80+ tensor cores
                  * (mvrt_graph_create refuses bf16 without them; fast math
                  * then runs in fp32); fp16 ones exist on every build target */
                 d->code_arch >= 80 ? "fp32,tf32,bf16,fp16" : "fp32,fp16",
                 d->tuning.smem_limit);
    }
#endif
    *out = info;
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_set_num_threads(void *device, int n)
{
    (void)device;
    (void)n;
    return MVRT_OK;
}

/* ---- memory ------------------------------------------------------------- */

static mvrt_status_t mvrt_gpu_mem_alloc(void *device, size_t bytes, void **out_ptr)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    void *p = NULL;
    gpuError_t e = gpuMallocFromPoolAsync(&p, bytes, d->pool, d->default_stream.s);
    if (e == gpuErrorMemoryAllocation) {
        /* Give cached blocks back to the driver and try once more. */
        (void)gpuGetLastError();
        gpuStreamSynchronize(d->default_stream.s);
        gpuMemPoolTrimTo(d->pool, 0);
        (void)gpuGetLastError();
        e = gpuMallocFromPoolAsync(&p, bytes, d->pool, d->default_stream.s);
    }
    if (e != gpuSuccess) {
        (void)gpuGetLastError();
        if (e == gpuErrorMemoryAllocation)
            return mvrt_gpu_host->set_error(MVRT_ERR_OUT_OF_MEMORY,
                                             MVRT_GPU_NAME ": out of device memory allocating %zu bytes on device %d: %s: %s",
                                             bytes, d->index, gpuGetErrorName(e), gpuGetErrorString(e));
        return mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "MallocFromPoolAsync");
    }
    /* The block may be reused from memory whose last use is still queued on
     * the default stream: wait, so that it is usable on every stream. */
    e = gpuStreamSynchronize(d->default_stream.s);
    if (e != gpuSuccess) {
        gpuFreeAsync(p, d->default_stream.s);
        return mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "StreamSynchronize after allocation");
    }
    *out_ptr = p;
    return MVRT_OK;
}

static void mvrt_gpu_mem_free(void *device, void *ptr)
{
    mvrt_gpu_device_t *d = device;
    if (!ptr || gpuSetDevice(d->index) != gpuSuccess) {
        (void)gpuGetLastError();
        return;
    }
    /* Order the free after the work queued on every stream of the device. */
    pthread_mutex_lock(&d->lock);
    for (mvrt_gpu_stream_t *s = d->streams; s; s = s->next) {
        gpuStreamCaptureStatus cs = gpuStreamCaptureStatusNone;
        if (gpuStreamIsCapturing(s->s, &cs) != gpuSuccess || cs != gpuStreamCaptureStatusNone) continue;
        if (gpuEventRecord(s->fence, s->s) == gpuSuccess)
            gpuStreamWaitEvent(d->default_stream.s, s->fence, 0);
    }
    pthread_mutex_unlock(&d->lock);
    gpuFreeAsync(ptr, d->default_stream.s);
    (void)gpuGetLastError();
}

/* ---- streams ------------------------------------------------------------ */

static void *mvrt_gpu_default_stream(void *device)
{
    return &((mvrt_gpu_device_t *)device)->default_stream;
}

static mvrt_status_t mvrt_gpu_stream_add(mvrt_gpu_device_t *d, gpuStream_t native, int owned, void **out)
{
    mvrt_gpu_stream_t *s = calloc(1, sizeof *s);
    if (!s) {
        if (owned) gpuStreamDestroy(native);
        return mvrt_gpu_host->set_error(MVRT_ERR_OUT_OF_MEMORY, MVRT_GPU_NAME ": cannot allocate a stream record");
    }
    gpuError_t e = gpuEventCreateWithFlags(&s->fence, gpuEventDisableTiming);
    if (e != gpuSuccess) {
        if (owned) gpuStreamDestroy(native);
        free(s);
        return mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "EventCreateWithFlags");
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

static mvrt_status_t mvrt_gpu_stream_create(void *device, void **out_stream)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    gpuStream_t s;
    GPU_TRY(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking), MVRT_GPU_API_PREFIX "StreamCreateWithFlags");
    return mvrt_gpu_stream_add(d, s, 1, out_stream);
}

static mvrt_status_t mvrt_gpu_stream_wrap(void *device, void *native, void **out_stream)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    return mvrt_gpu_stream_add(d, (gpuStream_t)native, 0, out_stream);
}

static void mvrt_gpu_stream_destroy(void *device, void *stream)
{
    mvrt_gpu_device_t *d = device;
    mvrt_gpu_stream_t *s = stream;
    if (!s || s == &d->default_stream) return;
    pthread_mutex_lock(&d->lock);
    if (s->prev) s->prev->next = s->next; else d->streams = s->next;
    if (s->next) s->next->prev = s->prev;
    pthread_mutex_unlock(&d->lock);
    if (gpuSetDevice(d->index) == gpuSuccess) {
        /* gpuStreamDestroy lets queued work finish; so does the event */
        if (s->owned) gpuStreamDestroy(s->s);
        gpuEventDestroy(s->fence);
    }
    (void)gpuGetLastError();
    free(s);
}

static mvrt_status_t mvrt_gpu_stream_synchronize(void *device, void *stream)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    GPU_TRY(gpuStreamSynchronize(mvrt_gpu_native(stream)), MVRT_GPU_API_PREFIX "StreamSynchronize");
    return MVRT_OK;
}

static void *mvrt_gpu_stream_native(void *device, void *stream)
{
    (void)device;
    return (void *)mvrt_gpu_native(stream);
}

/* ---- events ------------------------------------------------------------- */

static mvrt_status_t mvrt_gpu_event_create(void *device, void **out_event)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    gpuEvent_t ev;
    GPU_TRY(gpuEventCreateWithFlags(&ev, gpuEventDefault), MVRT_GPU_API_PREFIX "EventCreate");
    *out_event = (void *)ev;
    return MVRT_OK;
}

static void mvrt_gpu_event_destroy(void *device, void *event)
{
    mvrt_gpu_device_t *d = device;
    if (!event) return;
    if (gpuSetDevice(d->index) == gpuSuccess) gpuEventDestroy((gpuEvent_t)event);
    (void)gpuGetLastError();
}

static mvrt_status_t mvrt_gpu_event_record(void *device, void *event, void *stream)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    GPU_TRY(gpuEventRecord((gpuEvent_t)event, mvrt_gpu_native(stream)), MVRT_GPU_API_PREFIX "EventRecord");
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_stream_wait_event(void *device, void *stream, void *event)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    GPU_TRY(gpuStreamWaitEvent(mvrt_gpu_native(stream), (gpuEvent_t)event, 0), MVRT_GPU_API_PREFIX "StreamWaitEvent");
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_event_synchronize(void *device, void *event)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    GPU_TRY(gpuEventSynchronize((gpuEvent_t)event), MVRT_GPU_API_PREFIX "EventSynchronize");
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_event_elapsed_ms(void *device, void *start, void *end, float *out_ms)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    float ms = 0.f;
    GPU_TRY(gpuEventElapsedTime(&ms, (gpuEvent_t)start, (gpuEvent_t)end), MVRT_GPU_API_PREFIX "EventElapsedTime");
    *out_ms = ms;
    return MVRT_OK;
}

/* ---- copies and fill ---------------------------------------------------- */

static mvrt_status_t mvrt_gpu_copy(void *device, void *stream, void *dst, const void *src, size_t n,
                                    gpuMemcpyKind kind, const char *what)
{
    mvrt_gpu_device_t *d = device;
    if (n == 0) return MVRT_OK;
    ENTER(d);
    GPU_TRY(gpuMemcpyAsync(dst, src, n, kind, mvrt_gpu_native(stream)), what);
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_copy_h2d(void *device, void *stream, void *dst, const void *src, size_t n)
{
    return mvrt_gpu_copy(device, stream, dst, src, n, gpuMemcpyHostToDevice, MVRT_GPU_API_PREFIX "MemcpyAsync (host to device)");
}
static mvrt_status_t mvrt_gpu_copy_d2h(void *device, void *stream, void *dst, const void *src, size_t n)
{
    return mvrt_gpu_copy(device, stream, dst, src, n, gpuMemcpyDeviceToHost, MVRT_GPU_API_PREFIX "MemcpyAsync (device to host)");
}
static mvrt_status_t mvrt_gpu_copy_d2d(void *device, void *stream, void *dst, const void *src, size_t n)
{
    return mvrt_gpu_copy(device, stream, dst, src, n, gpuMemcpyDeviceToDevice,
                          MVRT_GPU_API_PREFIX "MemcpyAsync (device to device)");
}

static mvrt_status_t mvrt_gpu_fill(void *device, void *stream, void *dst, size_t bytes, const void *pattern,
                                    size_t pattern_size)
{
    mvrt_gpu_device_t *d = device;
    if (bytes == 0) return MVRT_OK;
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
        return mvrt_gpu_host->set_error(MVRT_ERR_INVALID_ARGUMENT, MVRT_GPU_NAME ": fill pattern size %zu (1, 2 or 4)",
                                         pattern_size);
    ENTER(d);
    GPU_TRY(mvrt_gpu_fill_pattern(dst, bytes, pattern, pattern_size, mvrt_gpu_native(stream)), "fill");
    return MVRT_OK;
}

/* ---- selective scan ----------------------------------------------------- */

static mvrt_status_t mvrt_gpu_scan_fwd_entry(void *device, void *stream, const mvrt_scan_params_t *p)
{
    mvrt_gpu_device_t *d = device;
    if (p->batch == 0 || p->dim == 0 || p->seqlen == 0) return MVRT_OK;
    ENTER(d);
    GPU_TRY(mvrt_gpu_scan_fwd(p, &d->tuning, mvrt_gpu_native(stream)), "selective scan forward launch");
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_scan_bwd_workspace_entry(void *device, const mvrt_scan_params_t *p,
                                                        size_t *out_bytes)
{
    mvrt_gpu_device_t *d = device;
    *out_bytes = mvrt_gpu_scan_bwd_workspace(p, &d->tuning);
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_scan_bwd_entry(void *device, void *stream, const mvrt_scan_params_t *p)
{
    mvrt_gpu_device_t *d = device;
    if (p->batch == 0 || p->dim == 0 || p->seqlen == 0) return MVRT_OK;
    size_t need = mvrt_gpu_scan_bwd_workspace(p, &d->tuning);
    if (p->workspace_bytes < need || (need > 0 && !p->workspace))
        return mvrt_gpu_host->set_error(MVRT_ERR_INVALID_ARGUMENT,
                                         MVRT_GPU_NAME ": scan backward workspace of %zu bytes is too small (needs %zu)",
                                         p->workspace_bytes, need);
    ENTER(d);
    GPU_TRY(mvrt_gpu_scan_bwd(p, &d->tuning, mvrt_gpu_native(stream)), "selective scan backward launch");
    return MVRT_OK;
}

/* ---- MambaVision ops ------------------------------------------------------ */

static mvrt_status_t mvrt_gpu_op_scratch_entry(void *device, const mvrt_op_params_t *p, size_t *out_bytes)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d); /* whether a form runs may ask the device (occupancy, kernel attributes) */
    if (!mvrt_gpu_op_takes(p, &d->opctx))
        return mvrt_gpu_host->set_error(MVRT_ERR_UNSUPPORTED,
                                         MVRT_GPU_NAME ": op kind %d does not run with these sizes on this device",
                                         p->kind);
    *out_bytes = mvrt_gpu_op_scratch(p, &d->opctx);
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_op_run_entry(void *device, void *stream, const mvrt_op_params_t *p, void *scratch)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    if (d->fail_op_at > 0 && __atomic_add_fetch(&d->op_runs, 1, __ATOMIC_RELAXED) == d->fail_op_at) {
        gpuError_t fe = gpuStreamSynchronize(mvrt_gpu_native(stream));
        (void)gpuGetLastError();
        return mvrt_gpu_fail(fe != gpuSuccess ? fe : gpuErrorInvalidValue,
                             "MambaVision op (fault injected by " MVRT_GPU_ENV_PREFIX "FAIL_OP_AT)");
    }
    gpuError_t e = gpuSuccess;
    char msg[256];
    switch (mvrt_gpu_op_run(p, scratch, &d->opctx, mvrt_gpu_native(stream), &e, msg, sizeof msg)) {
    case MVRT_GPU_OP_OK: return MVRT_OK;
    case MVRT_GPU_OP_UNSUPPORTED:
        if (msg[0]) return mvrt_gpu_host->set_error(MVRT_ERR_UNSUPPORTED, MVRT_GPU_NAME ": %s", msg);
        return mvrt_gpu_host->set_error(MVRT_ERR_UNSUPPORTED, MVRT_GPU_NAME ": op kind %d is not implemented", p->kind);
    case MVRT_GPU_OP_NO_SCRATCH:
        return mvrt_gpu_host->set_error(MVRT_ERR_INVALID_ARGUMENT,
                                         MVRT_GPU_NAME ": op kind %d needs %zu bytes of scratch, got none", p->kind,
                                         mvrt_gpu_op_scratch(p, &d->opctx));
    case MVRT_GPU_OP_TOO_LARGE:
        return mvrt_gpu_host->set_error(MVRT_ERR_UNSUPPORTED, MVRT_GPU_NAME ": %s", msg);
    case MVRT_GPU_OP_BLAS:
        (void)gpuGetLastError();
        return mvrt_gpu_host->set_error(MVRT_ERR_DEVICE, MVRT_GPU_NAME ": op kind %d: %s", p->kind, msg);
    default: return mvrt_gpu_fail(e, "MambaVision op launch");
    }
}

/* ---- graphs ------------------------------------------------------------- */

static mvrt_status_t mvrt_gpu_graph_capture_begin(void *device, void *stream)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    GPU_TRY(gpuStreamBeginCapture(mvrt_gpu_native(stream), gpuStreamCaptureModeThreadLocal),
             MVRT_GPU_API_PREFIX "StreamBeginCapture");
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_graph_capture_end(void *device, void *stream, void **out_graph)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    gpuGraph_t g = NULL;
    GPU_TRY(gpuStreamEndCapture(mvrt_gpu_native(stream), &g), MVRT_GPU_API_PREFIX "StreamEndCapture");
    gpuGraphExec_t exec = NULL;
    gpuError_t e = gpuGraphInstantiateSimple(&exec, g);
    gpuGraphDestroy(g);
    if (e != gpuSuccess) return mvrt_gpu_fail(e, MVRT_GPU_API_PREFIX "GraphInstantiate");
    *out_graph = (void *)exec;
    return MVRT_OK;
}

static mvrt_status_t mvrt_gpu_graph_launch(void *device, void *graph, void *stream)
{
    mvrt_gpu_device_t *d = device;
    ENTER(d);
    GPU_TRY(gpuGraphLaunch((gpuGraphExec_t)graph, mvrt_gpu_native(stream)), MVRT_GPU_API_PREFIX "GraphLaunch");
    return MVRT_OK;
}

static void mvrt_gpu_graph_destroy(void *device, void *graph)
{
    mvrt_gpu_device_t *d = device;
    if (!graph) return;
    if (gpuSetDevice(d->index) == gpuSuccess) gpuGraphExecDestroy((gpuGraphExec_t)graph);
    (void)gpuGetLastError();
}

/* ---- entry point -------------------------------------------------------- */

static const mvrt_plugin_vtable_t mvrt_gpu_vtable = {
    .abi_version = MVRT_PLUGIN_ABI_VERSION,
    .name = MVRT_GPU_NAME,
    .priority = MVRT_GPU_PRIORITY,
    .probe = mvrt_gpu_probe,
    .device_open = mvrt_gpu_device_open,
    .device_close = mvrt_gpu_device_close,
    .device_info = mvrt_gpu_device_info,
    .set_num_threads = mvrt_gpu_set_num_threads,
    .mem_alloc = mvrt_gpu_mem_alloc,
    .mem_free = mvrt_gpu_mem_free,
    .default_stream = mvrt_gpu_default_stream,
    .stream_create = mvrt_gpu_stream_create,
    .stream_wrap = mvrt_gpu_stream_wrap,
    .stream_destroy = mvrt_gpu_stream_destroy,
    .stream_synchronize = mvrt_gpu_stream_synchronize,
    .stream_native = mvrt_gpu_stream_native,
    .event_create = mvrt_gpu_event_create,
    .event_destroy = mvrt_gpu_event_destroy,
    .event_record = mvrt_gpu_event_record,
    .stream_wait_event = mvrt_gpu_stream_wait_event,
    .event_synchronize = mvrt_gpu_event_synchronize,
    .event_elapsed_ms = mvrt_gpu_event_elapsed_ms,
    .copy_h2d = mvrt_gpu_copy_h2d,
    .copy_d2h = mvrt_gpu_copy_d2h,
    .copy_d2d = mvrt_gpu_copy_d2d,
    .fill = mvrt_gpu_fill,
    .scan_fwd = mvrt_gpu_scan_fwd_entry,
    .scan_bwd_workspace_size = mvrt_gpu_scan_bwd_workspace_entry,
    .scan_bwd = mvrt_gpu_scan_bwd_entry,
    .graph_capture_begin = mvrt_gpu_graph_capture_begin,
    .graph_capture_end = mvrt_gpu_graph_capture_end,
    .graph_launch = mvrt_gpu_graph_launch,
    .graph_destroy = mvrt_gpu_graph_destroy,
    .op_scratch_size = mvrt_gpu_op_scratch_entry,
    .op_run = mvrt_gpu_op_run_entry,
};

__attribute__((visibility("default"))) const mvrt_plugin_vtable_t *
mvrt_backend_plugin_entry_v1(const mvrt_host_api_t *host, uint32_t runtime_abi_version)
{
    if (!host || !host->set_error || runtime_abi_version != MVRT_PLUGIN_ABI_VERSION)
        return NULL;
    mvrt_gpu_host = host;
    return &mvrt_gpu_vtable;
}
