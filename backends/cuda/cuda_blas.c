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
 * ldconfig), then the toolkit's lib directory known at build time.
 *
 * cuBLASLt: a 16-bit linear at batch 1 whose bias and / or residual the
 * Hopper kernels did not take (fewer output tiles than SMs: every linear
 * of a batch-1 MambaVision forward) runs as one cublasLtMatmul with the
 * bias in its epilogue and the residual as C, instead of cublasGemmEx and
 * a second kernel over Y. libcublasLt.so.<major> is the library cuBLAS
 * itself loads; without it (or with MVRT_CUDA_CUBLASLT=0, for the tests
 * of the unfused path) those linears keep GemmEx and the epilogue pass.
 * GELU stays in our epilogue pass: cuBLASLt's GELU is the tanh form. */
#define _GNU_SOURCE
#include "cuda_blas.h"
#include "cuda_gemm_3xtf32.h"

#include <cublasLt.h>
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

/* The cuBLASLt entry points, resolved once (after cuBLAS, which has
 * usually loaded the library already). */
static struct {
    cublasStatus_t (*create)(cublasLtHandle_t *);
    cublasStatus_t (*destroy)(cublasLtHandle_t);
    cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t);
    cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t);
    cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *, size_t);
    cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t, int64_t);
    cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t);
    cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t *);
    cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t);
    cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void *, size_t);
    cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                cublasLtMatmulHeuristicResult_t[], int *);
    cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t,
                             const void *, cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t,
                             void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);
    int loaded; /* 1 resolved, -1 not */
} lt_lib;
static pthread_once_t lt_once = PTHREAD_ONCE_INIT;

static void lt_load(void)
{
    const char *soname = "libcublasLt.so." MVRT_STR(CUBLAS_VER_MAJOR);
    lt_lib.loaded = -1;
    /* the copy cuBLAS loaded (its dependency), else the loader's search */
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
#ifdef MVRT_CUDA_TOOLKIT_LIBDIR
    if (!h) h = dlopen(MVRT_CUDA_TOOLKIT_LIBDIR "/libcublasLt.so." MVRT_STR(CUBLAS_VER_MAJOR), RTLD_NOW | RTLD_LOCAL);
#endif
    if (!h) return;
#define MVRT_RESOLVE_LT(field, sym)                                                                \
    do {                                                                                           \
        *(void **)&lt_lib.field = dlsym(h, sym);                                                   \
        if (!lt_lib.field) return;                                                                 \
    } while (0)
    MVRT_RESOLVE_LT(create, "cublasLtCreate");
    MVRT_RESOLVE_LT(destroy, "cublasLtDestroy");
    MVRT_RESOLVE_LT(desc_create, "cublasLtMatmulDescCreate");
    MVRT_RESOLVE_LT(desc_destroy, "cublasLtMatmulDescDestroy");
    MVRT_RESOLVE_LT(desc_set, "cublasLtMatmulDescSetAttribute");
    MVRT_RESOLVE_LT(layout_create, "cublasLtMatrixLayoutCreate");
    MVRT_RESOLVE_LT(layout_destroy, "cublasLtMatrixLayoutDestroy");
    MVRT_RESOLVE_LT(pref_create, "cublasLtMatmulPreferenceCreate");
    MVRT_RESOLVE_LT(pref_destroy, "cublasLtMatmulPreferenceDestroy");
    MVRT_RESOLVE_LT(pref_set, "cublasLtMatmulPreferenceSetAttribute");
    MVRT_RESOLVE_LT(heuristic, "cublasLtMatmulAlgoGetHeuristic");
    MVRT_RESOLVE_LT(matmul, "cublasLtMatmul");
#undef MVRT_RESOLVE_LT
    lt_lib.loaded = 1;
}

/* One fused GEMM's cuBLASLt plan: what the heuristic was asked (the key)
 * and what it answered. A key with no algorithm (ok 0) is kept too, so
 * that the heuristic runs once per form and the form stays unfused. */
typedef struct lt_key {
    int64_t M, N, K, lda, ldb, ldy;
    int ta, tb, t16, y16, bias, beta1;
    uint32_t align[5]; /* A, B, C, D, bias: the largest power of two (<= 256) dividing each address */
    size_t ws_bytes;
} lt_key_t;
typedef struct lt_plan {
    lt_key_t key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lcd; /* C and D share a layout: R's rows are Y's (ldr = ldy) */
    cublasLtMatmulAlgo_t algo;
    size_t algo_ws;
    int ok;
} lt_plan_t;
#define MVRT_CUDA_LT_PLANS 64

static void lt_plan_release(lt_plan_t *p)
{
    if (p->desc) lt_lib.desc_destroy(p->desc);
    if (p->la) lt_lib.layout_destroy(p->la);
    if (p->lb) lt_lib.layout_destroy(p->lb);
    if (p->lcd) lt_lib.layout_destroy(p->lcd);
    memset(p, 0, sizeof *p);
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
    cublasLtHandle_t lt; /* NULL: no cuBLASLt, every epilogue a separate pass */
    lt_plan_t lt_plans[MVRT_CUDA_LT_PLANS];
    int lt_count, lt_next; /* plans held; the one replaced next when all are */
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
    /* no cuBLASLt handle: the fused linears keep GemmEx + epilogue pass */
    pthread_once(&lt_once, lt_load);
    const char *lt_env = getenv("MVRT_CUDA_CUBLASLT");
    if (lt_lib.loaded == 1 && !(lt_env && strcmp(lt_env, "0") == 0) && lt_lib.create(&b->lt) != CUBLAS_STATUS_SUCCESS)
        b->lt = NULL;
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
    for (int i = 0; i < b->lt_count; i++)
        lt_plan_release(&b->lt_plans[i]);
    if (b->lt) lt_lib.destroy(b->lt);
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

int mvrt_cuda_blas_fuses_epilogue16(const void *blas)
{
    const mvrt_cuda_blas_t *b = blas;
    return b && b->lt;
}

static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* Sets the handle's stream and a workspace slot of ours for it (none when
 * every slot belongs to other streams); returns the slot (NULL: none) and
 * its size. The lock is held. */
static char *bind_workspace(mvrt_cuda_blas_t *b, cudaStream_t s, size_t *bytes, cublasStatus_t *st)
{
    *bytes = 0;
    *st = cublas_lib.set_stream(b->h, s);
    if (*st != CUBLAS_STATUS_SUCCESS) return NULL;
    int slot = -1;
    for (int i = 0; i < MVRT_CUDA_BLAS_SLOTS && slot < 0; i++)
        if (b->slot_used[i] && b->slot_stream[i] == s) slot = i;
    for (int i = 0; i < MVRT_CUDA_BLAS_SLOTS && slot < 0; i++)
        if (!b->slot_used[i]) {
            b->slot_used[i] = 1;
            b->slot_stream[i] = s;
            slot = i;
        }
    if (slot < 0) {
        *st = cublas_lib.set_workspace(b->h, NULL, 0);
        return NULL;
    }
    char *ws = b->ws + (size_t)slot * MVRT_CUDA_BLAS_SLOT_BYTES;
    *st = cublas_lib.set_workspace(b->h, ws, MVRT_CUDA_BLAS_SLOT_BYTES);
    *bytes = MVRT_CUDA_BLAS_SLOT_BYTES;
    return ws;
}

/* The forms cuBLASLt fuses (mv_gpu_launch.h: the epilogue fields): 16-bit
 * operands, one matrix, a bias per column and / or a residual, no
 * activation. */
static int lt_fusable(const mvrt_cuda_blas_t *b, const mvrt_gpu_gemm_t *g)
{
    return b->lt && g->ab16 && g->batch == 1 && g->epi_act == MVRT_ACT_NONE && (g->epi_bias || g->epi_r);
}

static uint32_t address_alignment(const void *p)
{
    const uintptr_t a = (uintptr_t)p;
    uint32_t r = 256;
    while (r > 1 && (a & (r - 1)))
        r >>= 1;
    return r;
}

/* Builds the descriptors of key k and asks the heuristic for one
 * algorithm. Where cuBLASLt refuses any step or has no algorithm (e.g. an
 * fp32 bias with a 16-bit D on some version), p keeps the key with ok 0:
 * the form stays unfused, and the heuristic is not asked again. */
static void lt_plan_make(mvrt_cuda_blas_t *b, const lt_key_t *k, const void *bias, lt_plan_t *p)
{
    memset(p, 0, sizeof *p);
    memcpy(&p->key, k, sizeof *k); /* padding too: keys compare bytewise */
    const cudaDataType t16 = k->t16 == MVRT_STORAGE16_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const cudaDataType yt = k->y16 ? t16 : CUDA_R_32F;
    /* the column-major view of cublasGemmEx above: D (N x M) = op(B) op(A) */
    const cublasOperation_t opa = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t st = lt_lib.desc_create(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (st == CUBLAS_STATUS_SUCCESS) st = lt_lib.desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
    if (st == CUBLAS_STATUS_SUCCESS) st = lt_lib.desc_set(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
    if (st == CUBLAS_STATUS_SUCCESS && k->bias) {
        const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        const int32_t bias_type = CUDA_R_32F; /* the graph's biases stay fp32 */
        st = lt_lib.desc_set(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = lt_lib.desc_set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = lt_lib.desc_set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    }
    if (st == CUBLAS_STATUS_SUCCESS)
        st = lt_lib.layout_create(&p->la, t16, k->tb ? k->K : k->N, k->tb ? k->N : k->K, k->ldb);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = lt_lib.layout_create(&p->lb, t16, k->ta ? k->M : k->K, k->ta ? k->K : k->M, k->lda);
    if (st == CUBLAS_STATUS_SUCCESS) st = lt_lib.layout_create(&p->lcd, yt, k->N, k->M, k->ldy);
    cublasLtMatmulPreference_t pref = NULL;
    if (st == CUBLAS_STATUS_SUCCESS) st = lt_lib.pref_create(&pref);
    const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    /* Lt's A is our B, its B our A */
    const uint32_t align[4] = {k->align[1], k->align[0], k->align[2], k->align[3]};
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++)
        st = lt_lib.pref_set(pref, align_attr[i], &align[i], sizeof align[i]);
    const uint64_t ws = k->ws_bytes;
    if (st == CUBLAS_STATUS_SUCCESS) st = lt_lib.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (st == CUBLAS_STATUS_SUCCESS) {
        cublasLtMatmulHeuristicResult_t r;
        int found = 0;
        memset(&r, 0, sizeof r);
        const cublasStatus_t h = lt_lib.heuristic(b->lt, p->desc, p->la, p->lb, p->lcd, p->lcd, pref, 1, &r, &found);
        if (h == CUBLAS_STATUS_SUCCESS && found > 0 && r.state == CUBLAS_STATUS_SUCCESS && r.workspaceSize <= ws) {
            p->algo = r.algo;
            p->algo_ws = r.workspaceSize;
            p->ok = 1;
        }
    }
    if (pref) lt_lib.pref_destroy(pref);
    if (!p->ok) {
        lt_plan_release(p);
        memcpy(&p->key, k, sizeof *k);
    }
}

/* Y = op(A) op(B) + bias (+ R or Y) in one cublasLtMatmul. Returns 1 when
 * queued, 0 when cuBLASLt has no algorithm for the form (nothing queued),
 * -1 on failure (*st). The lock is held. */
static int lt_gemm(mvrt_cuda_blas_t *b, cudaStream_t s, const mvrt_gpu_gemm_t *g, void *ws, size_t ws_bytes,
                   cublasStatus_t *st)
{
    const void *c = g->epi_r ? g->epi_r : (const void *)g->Y;
    const int beta1 = g->epi_r || g->beta != 0.f;
    lt_key_t k;
    memset(&k, 0, sizeof k); /* compared bytewise: no stray padding */
    k.M = g->M, k.N = g->N, k.K = g->K, k.lda = g->lda, k.ldb = g->ldb, k.ldy = g->ldy;
    k.ta = g->ta, k.tb = g->tb, k.t16 = g->ab16, k.y16 = g->y16, k.bias = g->epi_bias != NULL, k.beta1 = beta1;
    k.align[0] = address_alignment(g->A), k.align[1] = address_alignment(g->B);
    k.align[2] = address_alignment(c), k.align[3] = address_alignment(g->Y);
    k.align[4] = g->epi_bias ? address_alignment(g->epi_bias) : 0;
    k.ws_bytes = ws ? ws_bytes : 0;
    lt_plan_t *p = NULL;
    for (int i = 0; i < b->lt_count && !p; i++)
        if (memcmp(&b->lt_plans[i].key, &k, sizeof k) == 0) p = &b->lt_plans[i];
    if (!p) {
        /* a new form: the next free entry, or the oldest */
        int at = b->lt_count;
        if (b->lt_count < MVRT_CUDA_LT_PLANS) {
            b->lt_count++;
        } else {
            at = b->lt_next;
            b->lt_next = (b->lt_next + 1) % MVRT_CUDA_LT_PLANS;
        }
        p = &b->lt_plans[at];
        lt_plan_release(p);
        lt_plan_make(b, &k, g->epi_bias, p);
    }
    if (!p->ok) return 0;
    if (k.bias) {
        *st = lt_lib.desc_set(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->epi_bias, sizeof g->epi_bias);
        if (*st != CUBLAS_STATUS_SUCCESS) return -1;
    }
    const float one = 1.f, beta = beta1 ? 1.f : 0.f;
    *st = lt_lib.matmul(b->lt, p->desc, &one, g->B, p->la, g->A, p->lb, &beta, c, p->lcd, g->Y, p->lcd, &p->algo,
                        p->algo_ws ? ws : NULL, p->algo_ws, s);
    return *st == CUBLAS_STATUS_SUCCESS ? 1 : -1;
}

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

    const char *what = "cuBLAS";
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    pthread_mutex_lock(&b->lock);
    size_t ws_bytes = 0;
    char *ws = bind_workspace(b, s, &ws_bytes, &st);
    int fused = 0;
    if (st == CUBLAS_STATUS_SUCCESS && lt_fusable(b, g)) {
        fused = lt_gemm(b, s, g, ws, ws_bytes, &st);
        if (fused < 0) what = "cuBLASLt";
    }
    if (st == CUBLAS_STATUS_SUCCESS && !fused) {
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
        snprintf(msg, msg_n, "%s GEMM (M %lld, N %lld, K %lld, batch %lld): %s: %s", what, (long long)g->M,
                 (long long)g->N, (long long)g->K, (long long)g->batch, cublas_lib.status_name(st),
                 cublas_lib.status_string(st));
        return MVRT_GPU_GEMM_FAILED;
    }
    return fused ? MVRT_GPU_GEMM_FUSED : MVRT_GPU_GEMM_OK;
}
