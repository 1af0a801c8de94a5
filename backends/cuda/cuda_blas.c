/* cuBLAS behind the GEMM hook of the GPU ops (contract: cuda_blas.h).
 *
 * Row-major to column-major: row-major Y (M x N) = op(A) op(B) is, read as
 * column-major, Y^T (N x M) = op(B)^T op(A)^T, so cuBLAS gets B first and A
 * second with m = N, n = M, and the same transpose flags (a row-major
 * matrix read as column-major is already transposed).
 *
 * Workspace: cublasSetStream resets the handle to cuBLAS's own workspace
 * pool, which may allocate (not allowed while a stream is captured), so each
 * call sets a workspace of ours after the stream. Two streams running GEMMs
 * at the same time must not share one workspace: the first few distinct
 * streams get a slot each; later streams run without a workspace (cuBLAS
 * then picks kernels that need none). The lock makes set-stream +
 * set-workspace + GEMM atomic for callers on several threads.
 *
 * Loading: cuBLAS is opened with dlopen at the first device_open, not
 * linked, so that the plugin needs only the driver (cudart is static): on a
 * machine without libcublas.so.<major> the ops run on our own GEMM kernel.
 * Search order: $MVRT_CUBLAS_LIBRARY, the loader's path (LD_LIBRARY_PATH,
 * ldconfig), then the toolkit's lib directory known at build time. */
#define _GNU_SOURCE
#include "cuda_blas.h"
#include "cuda_gemm_3xtf32.h"
#include "cuda_gemm_3xtf32.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MVRT_STR2(x) #x
#define MVRT_STR(x) MVRT_STR2(x)

/* The cuBLAS entry points we call, resolved once from the shared library. */
static struct {
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*set_workspace)(cublasHandle_t, void *, size_t);
    cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
    cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                           const void *, cudaDataType, int, const void *, cudaDataType, int, const void *, void *,
                           cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
    cublasStatus_t (*gemm_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                   const void *, const void *, cudaDataType, int, long long, const void *,
                                   cudaDataType, int, long long, const void *, void *, cudaDataType, int, long long,
                                   int, cublasComputeType_t, cublasGemmAlgo_t);
    const char *(*status_name)(cublasStatus_t);
    const char *(*status_string)(cublasStatus_t);
    int loaded;       /* 1 resolved, -1 failed (why in `why`) */
    char why[192];
} cublas_lib;
static pthread_once_t cublas_once = PTHREAD_ONCE_INIT;

static void *open_first(const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (names[i] && names[i][0]) {
            void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
            if (h) return h;
        }
    return NULL;
}

static void cublas_load(void)
{
    const char *soname = "libcublas.so." MVRT_STR(CUBLAS_VER_MAJOR);
#ifdef MVRT_CUDA_TOOLKIT_LIBDIR
    const char *toolkit = MVRT_CUDA_TOOLKIT_LIBDIR "/libcublas.so." MVRT_STR(CUBLAS_VER_MAJOR);
#else
    const char *toolkit = NULL;
#endif
    const char *names[] = {getenv("MVRT_CUBLAS_LIBRARY"), soname, toolkit};
    void *h = open_first(names, 3);
    if (!h) {
        snprintf(cublas_lib.why, sizeof cublas_lib.why, "%s not found", soname);
        cublas_lib.loaded = -1;
        return;
    }
#define MVRT_RESOLVE(field, sym)                                                                   \
    do {                                                                                           \
        *(void **)&cublas_lib.field = dlsym(h, sym);                                               \
        if (!cublas_lib.field) {                                                                   \
            snprintf(cublas_lib.why, sizeof cublas_lib.why, "%s lacks %s", soname, sym);          \
            cublas_lib.loaded = -1;                                                                \
            return;                                                                                \
        }                                                                                          \
    } while (0)
    MVRT_RESOLVE(create, "cublasCreate_v2");
    MVRT_RESOLVE(destroy, "cublasDestroy_v2");
    MVRT_RESOLVE(set_stream, "cublasSetStream_v2");
    MVRT_RESOLVE(set_workspace, "cublasSetWorkspace_v2");
    MVRT_RESOLVE(set_math_mode, "cublasSetMathMode");
    MVRT_RESOLVE(gemm, "cublasGemmEx");
    MVRT_RESOLVE(gemm_batched, "cublasGemmStridedBatchedEx");
    MVRT_RESOLVE(status_name, "cublasGetStatusName");
    MVRT_RESOLVE(status_string, "cublasGetStatusString");
#undef MVRT_RESOLVE
    /* the handle stays open for the life of the process (cuBLAS keeps
     * per-process state; unloading it under live handles is unsafe) */
    cublas_lib.loaded = 1;
}

#define MVRT_CUDA_BLAS_SLOTS 4
#define MVRT_CUDA_BLAS_SLOT_BYTES ((size_t)8 << 20)

typedef struct mvrt_cuda_blas {
    cublasHandle_t h;
    pthread_mutex_t lock;
    char *ws; /* MVRT_CUDA_BLAS_SLOTS slots */
    cudaStream_t slot_stream[MVRT_CUDA_BLAS_SLOTS];
    int slot_used[MVRT_CUDA_BLAS_SLOTS];
    int fp32_3xtf32; /* fp32 GEMMs try the 3xTF32 kernels first */
    int sm_count;    /* of the device: picks their tile */
} mvrt_cuda_blas_t;

/* 3xTF32 for fp32 GEMMs: built with CUTLASS, an sm_80+ device (the build's
 * kernels start at sm_80), and not turned off by MVRT_CUDA_FP32_GEMM=sgemm. */
static int want_3xtf32(int code_arch, int *sm_count)
{
    int dev = 0;
    *sm_count = 0;
    if (!mvrt_cuda_gemm_3xtf32_built() || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(sm_count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const char *env = getenv("MVRT_CUDA_FP32_GEMM");
    if (env && strcmp(env, "sgemm") == 0) return 0;
    /* the plugin's dispatch architecture and the code loaded from the
     * CUTLASS file (built for the sm_80+ entries only) both sm_80+ */
    return code_arch >= 80 && mvrt_cuda_gemm_3xtf32_code_arch() >= 80;
}

int mvrt_cuda_blas_create(void **out_blas, int code_arch, char *msg, size_t msg_n)
{
    pthread_once(&cublas_once, cublas_load);
    if (cublas_lib.loaded != 1) {
        snprintf(msg, msg_n, "cuBLAS unavailable: %s", cublas_lib.why);
        return 1;
    }
    mvrt_cuda_blas_t *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(msg, msg_n, "cannot allocate the cuBLAS record");
        return 1;
    }
    cublasStatus_t st = cublas_lib.create(&b->h);
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(msg, msg_n, "cublasCreate: %s", cublas_lib.status_string(st));
        free(b);
        return 1;
    }
    cudaError_t e = cudaMalloc((void **)&b->ws, MVRT_CUDA_BLAS_SLOTS * MVRT_CUDA_BLAS_SLOT_BYTES);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(msg, msg_n, "cudaMalloc of the cuBLAS workspace: %s", cudaGetErrorString(e));
        cublas_lib.destroy(b->h);
        free(b);
        return 1;
    }
    b->fp32_3xtf32 = want_3xtf32(code_arch, &b->sm_count);
    /* Plain fp32 unless a call asks for TF32 through its compute type. */
    cublas_lib.set_math_mode(b->h, CUBLAS_DEFAULT_MATH);
    if (pthread_mutex_init(&b->lock, NULL) != 0) {
        snprintf(msg, msg_n, "pthread_mutex_init failed");
        cudaFree(b->ws);
        cublas_lib.destroy(b->h);
        free(b);
        return 1;
    }
    *out_blas = b;
    return 0;
}

void mvrt_cuda_blas_destroy(void *blas)
{
    mvrt_cuda_blas_t *b = blas;
    if (!b) return;
    cublas_lib.destroy(b->h);
    cudaFree(b->ws);
    (void)cudaGetLastError();
    pthread_mutex_destroy(&b->lock);
    free(b);
}

int mvrt_cuda_blas_uses_3xtf32(const void *blas)
{
    const mvrt_cuda_blas_t *b = blas;
    return b && b->fp32_3xtf32;
}

static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

int mvrt_cuda_blas_gemm(void *blas, cudaStream_t s, const mvrt_gpu_gemm_t *g, char *msg, size_t msg_n)
{
    mvrt_cuda_blas_t *b = blas;
    if (b->fp32_3xtf32 && g->math == MVRT_MATH_FP32 && !g->ab16) {
        const int rc = mvrt_cuda_gemm_3xtf32(s, g, b->sm_count, msg, msg_n);
        if (rc != MVRT_GPU_GEMM_DECLINED) return rc;
    }
    /* cuBLAS takes int sizes and needs ld >= rows of each column-major
     * matrix; anything else is left to our own kernel. */
    const int64_t ldb_min = g->tb ? g->K : g->N, lda_min = g->ta ? g->M : g->K;
    if (!fits_int(g->M) || !fits_int(g->N) || !fits_int(g->K) || !fits_int(g->batch) || !fits_int(g->lda) ||
        !fits_int(g->ldb) || !fits_int(g->ldy) || g->ldb < ldb_min || g->lda < lda_min || g->ldy < g->N ||
        g->ldb < 1 || g->lda < 1 || g->ldy < 1)
        return MVRT_GPU_GEMM_DECLINED;
    const float one = 1.f, beta = g->beta;
    /* 16-bit operands: plain fp32 accumulation (the products of two bf16 or
     * two fp16 values are exact in fp32); TF32 only when asked for */
    const cublasComputeType_t ct = g->math == MVRT_MATH_FAST && !g->ab16 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                         : CUBLAS_COMPUTE_32F;
    const cudaDataType t16 = g->ab16 == MVRT_STORAGE16_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const cudaDataType ab = g->ab16 ? t16 : CUDA_R_32F;
    const cudaDataType yt = g->ab16 && g->y16 ? t16 : CUDA_R_32F;
    const cublasOperation_t opb = g->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opa = g->ta ? CUBLAS_OP_T : CUBLAS_OP_N;

    pthread_mutex_lock(&b->lock);
    cublasStatus_t st = cublas_lib.set_stream(b->h, s);
    if (st == CUBLAS_STATUS_SUCCESS) {
        int slot = -1;
        for (int i = 0; i < MVRT_CUDA_BLAS_SLOTS && slot < 0; i++)
            if (b->slot_used[i] && b->slot_stream[i] == s) slot = i;
        for (int i = 0; i < MVRT_CUDA_BLAS_SLOTS && slot < 0; i++)
            if (!b->slot_used[i]) {
                b->slot_used[i] = 1;
                b->slot_stream[i] = s;
                slot = i;
            }
        if (slot >= 0)
            st = cublas_lib.set_workspace(b->h, b->ws + (size_t)slot * MVRT_CUDA_BLAS_SLOT_BYTES, MVRT_CUDA_BLAS_SLOT_BYTES);
        else
            st = cublas_lib.set_workspace(b->h, NULL, 0);
    }
    if (st == CUBLAS_STATUS_SUCCESS) {
        if (g->batch == 1)
            st = cublas_lib.gemm(b->h, opb, opa, (int)g->N, (int)g->M, (int)g->K, &one, g->B, ab, (int)g->ldb,
                              g->A, ab, (int)g->lda, &beta, g->Y, yt, (int)g->ldy, ct,
                              CUBLAS_GEMM_DEFAULT);
        else
            st = cublas_lib.gemm_batched(b->h, opb, opa, (int)g->N, (int)g->M, (int)g->K, &one, g->B, ab,
                                            (int)g->ldb, (long long)g->sb, g->A, ab, (int)g->lda,
                                            (long long)g->sa, &beta, g->Y, yt, (int)g->ldy,
                                            (long long)g->sy, (int)g->batch, ct, CUBLAS_GEMM_DEFAULT);
    }
    pthread_mutex_unlock(&b->lock);
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(msg, msg_n, "cuBLAS GEMM (M %lld, N %lld, K %lld, batch %lld): %s: %s", (long long)g->M,
                 (long long)g->N, (long long)g->K, (long long)g->batch, cublas_lib.status_name(st),
                 cublas_lib.status_string(st));
        return MVRT_GPU_GEMM_FAILED;
    }
    return MVRT_GPU_GEMM_OK;
}
