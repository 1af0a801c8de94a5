/* CPU linear (mv_op_params.h: batched GEMM + bias + activation or residual
 * accumulate) and the GEMM shared with the conv2d (linear_cpu_gemm.h).
 *
 * Two kernels:
 * - OpenBLAS (MVRT_HAVE_OPENBLAS, where our kernel has no vector ISA): one
 *   cblas_sgemm per batch item (beta = 1 accumulates into Y), threaded by
 *   OpenBLAS, calls serialized process-wide (see mvrt_gemm_openblas_items),
 *   then the epilogue (bias, activation) on OpenMP threads;
 * - otherwise mvrt's own blocked SGEMM (linear_cpu_gemm_kernel.h, built
 *   here for avx512 / avx2 / generic vectors and chosen at run time), as
 *   tasks over (batch item, row block, column block) on OpenMP threads
 *   (over items alone when there are enough of them, else each item is cut
 *   so that every thread gets an equal share), applying the epilogue to
 *   each register tile as it is stored.
 * The fast math mode computes fp32 here: CPUs have no faster path that is
 * accurate enough. */
#include <limits.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef MVRT_HAVE_OPENBLAS
#include <cblas.h>
/* Declared by OpenBLAS's cblas.h but not by the reference one, which the
 * build may find first; the library always has them. */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
#endif

#include "ops/common/cpu_vmath.h"
#include "ops/linear/linear_cpu_gemm.h"
#include "ops/mv/mv_kernels.h"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#define MVRT_GEMM_X86 1
#endif

float mvrt_cpu_activation(int activation, float x)
{
    switch (activation) {
    case MVRT_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case MVRT_ACT_GELU_ERF: return mvrt_gelu_erf_v(x);
    case MVRT_ACT_GELU_TANH: return mvrt_gelu_tanh_v(x);
    case MVRT_ACT_SILU: return mvrt_silu_v(x);
    default: return x;
    }
}

static int mvrt_gemm_has_epilogue(const mvrt_cpu_gemm_t *g)
{
    return g->bias || g->activation != MVRT_ACT_NONE || g->residual;
}

/* ---- the built-in kernels, one per instruction set ---------------------- */

#define GK_SUF generic
#define GK_VL 4
#define GK_ATTR
#include "ops/linear/linear_cpu_gemm_kernel.h"
#undef GK_SUF
#undef GK_VL
#undef GK_ATTR

#ifdef MVRT_GEMM_X86
#define GK_SUF avx2
#define GK_VL 8
#define GK_ATTR __attribute__((target("avx2,fma")))
#include "ops/linear/linear_cpu_gemm_kernel.h"
#undef GK_SUF
#undef GK_VL
#undef GK_ATTR

#define GK_SUF avx512
#define GK_VL 16
#define GK_ATTR __attribute__((target("avx512f,avx2,fma")))
#include "ops/linear/linear_cpu_gemm_kernel.h"
#undef GK_SUF
#undef GK_VL
#undef GK_ATTR
#endif

typedef void (*mvrt_gemm_tile_fn)(const mvrt_cpu_gemm_t *, int, int64_t, int64_t, int64_t,
                                  int64_t, float *, float *, int64_t, int64_t, int64_t);
typedef void (*mvrt_gemm_epi_fn)(const mvrt_cpu_gemm_t *, float *, int64_t, int64_t, int64_t,
                                 int64_t, int64_t);

typedef struct mvrt_gemm_isa {
    const char *name;
    int mr, nr;          /* register tile */
    int64_t mc, kc, nc;  /* cache blocks (mc a multiple of mr, nc of nr) */
    mvrt_gemm_tile_fn tile;
    mvrt_gemm_epi_fn epilogue;
} mvrt_gemm_isa_t;

/* Best first. Block sizes: a kc x nr panel of B fits L1, an mc x kc block
 * of A a fraction of L2 (avx2 values tuned on a Zen core, 1-thread
 * GFLOP/s within ~10% of OpenBLAS 0.3.21 on the MambaVision shapes). */
static const mvrt_gemm_isa_t mvrt_gemm_isas[] = {
#ifdef MVRT_GEMM_X86
    {"avx512", 6, 32, 144, 192, 2048, mvrt_gemm_tile_avx512,
     mvrt_gemm_epilogue_avx512},
    {"avx2", 6, 16, 144, 256, 2048, mvrt_gemm_tile_avx2,
     mvrt_gemm_epilogue_avx2},
#endif
    {"generic", 6, 8, 96, 256, 1024, mvrt_gemm_tile_generic,
     mvrt_gemm_epilogue_generic},
};
#define MVRT_GEMM_NISA ((int)(sizeof mvrt_gemm_isas / sizeof mvrt_gemm_isas[0]))

static int mvrt_gemm_isa_supported(const mvrt_gemm_isa_t *isa)
{
#ifdef MVRT_GEMM_X86
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!strcmp(isa->name, "avx512"))
        return avx2 && __builtin_cpu_supports("avx512f");
    if (!strcmp(isa->name, "avx2"))
        return avx2;
#endif
    return !strcmp(isa->name, "generic");
}

/* Selection, made lazily (a benign race: every thread computes the same
 * value). mvrt_gemm_sel: 0 = not chosen yet, 1 + i = built-in ISA i,
 * -1 = OpenBLAS (with mvrt_gemm_builtin as its fallback for sizes or
 * strides cblas does not take). */
static int mvrt_gemm_sel;
static int mvrt_gemm_builtin; /* 1 + index, 0 = not chosen */

static int mvrt_gemm_best_builtin(void)
{
    int b = __atomic_load_n(&mvrt_gemm_builtin, __ATOMIC_ACQUIRE);
    if (b)
        return b;
    for (int i = 0; i < MVRT_GEMM_NISA; i++)
        if (mvrt_gemm_isa_supported(&mvrt_gemm_isas[i])) {
            b = 1 + i;
            break;
        }
    if (!b)
        b = MVRT_GEMM_NISA; /* generic, always supported */
    __atomic_store_n(&mvrt_gemm_builtin, b, __ATOMIC_RELEASE);
    return b;
}

#ifdef MVRT_HAVE_OPENBLAS
/* Whether OpenBLAS is used: only where our own kernel has no vector ISA
 * (not x86, or x86 without AVX2). On x86 with AVX2 / AVX-512 our kernel is
 * faster here (MambaVision-T mixer block, batch 8, 2 cores: 19 ms against
 * 34 ms) and deterministic, while Debian 12's OpenBLAS 0.3.21 made a graph
 * replay of the golden stage differ from its first run in about one run of
 * three (serialized calls, one OpenBLAS thread included; not root-caused),
 * and it picks kernels by CPU model (a model newer than the library gets
 * its SSE3 fallback). */
static int mvrt_gemm_openblas_fits_cpu(int builtin)
{
    return !strcmp(mvrt_gemm_isas[builtin - 1].name, "generic");
}
#endif

static int mvrt_gemm_selection(void)
{
    int s = __atomic_load_n(&mvrt_gemm_sel, __ATOMIC_ACQUIRE);
    if (s)
        return s;
#ifdef MVRT_HAVE_OPENBLAS
    const int b = mvrt_gemm_best_builtin();
    s = mvrt_gemm_openblas_fits_cpu(b) ? -1 : b;
#else
    s = mvrt_gemm_best_builtin();
#endif
    __atomic_store_n(&mvrt_gemm_sel, s, __ATOMIC_RELEASE);
    return s;
}

const char *mvrt_cpu_gemm_kernel(void)
{
    const int s = mvrt_gemm_selection();
    return s < 0 ? "openblas" : mvrt_gemm_isas[s - 1].name;
}

int mvrt_cpu_gemm_force(const char *name)
{
    if (!name) {
        __atomic_store_n(&mvrt_gemm_builtin, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&mvrt_gemm_sel, 0, __ATOMIC_RELEASE);
        mvrt_gemm_selection();
        return 0;
    }
#ifdef MVRT_HAVE_OPENBLAS
    if (!strcmp(name, "openblas")) {
        __atomic_store_n(&mvrt_gemm_sel, -1, __ATOMIC_RELEASE);
        mvrt_gemm_best_builtin();
        return 0;
    }
#endif
    for (int i = 0; i < MVRT_GEMM_NISA; i++)
        if (!strcmp(name, mvrt_gemm_isas[i].name)) {
            if (!mvrt_gemm_isa_supported(&mvrt_gemm_isas[i]))
                return -1;
            __atomic_store_n(&mvrt_gemm_builtin, 1 + i, __ATOMIC_RELEASE);
            __atomic_store_n(&mvrt_gemm_sel, 1 + i, __ATOMIC_RELEASE);
            return 0;
        }
    return -1;
}

void mvrt_cpu_gemm_epilogue(const mvrt_cpu_gemm_t *g, float *c, int64_t ldc, int64_t r0,
                            int64_t c0, int64_t m, int64_t n)
{
    mvrt_gemm_isas[mvrt_gemm_best_builtin() - 1].epilogue(g, c, ldc, r0, c0, m, n);
}

const char *mvrt_cpu_linear_library(void)
{
    return mvrt_gemm_selection() < 0 ? "openblas" : "builtin";
}

/* ---- drivers ------------------------------------------------------------- */

/* g with its pointers moved to batch item b. */
static mvrt_cpu_gemm_t mvrt_gemm_item(const mvrt_cpu_gemm_t *g, int64_t b, int64_t sa,
                                      int64_t sb, int64_t sc, int64_t sr)
{
    mvrt_cpu_gemm_t it = *g;
    it.A = g->A + b * sa;
    it.B = g->B + b * sb;
    it.C = g->C + b * sc;
    if (g->residual)
        it.residual = g->residual + b * sr;
    return it;
}

/* Plain loops over rows [m0, m1) x columns [n0, n1): the fallback when no
 * pack buffer could be allocated, and the K = 0 case. */
static void mvrt_gemm_plain(const mvrt_cpu_gemm_t *g, int has_epi, int64_t m0, int64_t m1,
                            int64_t n0, int64_t n1)
{
    for (int64_t i = m0; i < m1; i++) {
        float *c = g->C + i * g->ldc;
        for (int64_t j = n0; j < n1; j++) {
            float s = 0.0f;
            for (int64_t k = 0; k < g->K; k++) {
                const float a = g->trans_a ? g->A[k * g->lda + i] : g->A[i * g->lda + k];
                const float b = g->trans_b ? g->B[j * g->ldb + k] : g->B[k * g->ldb + j];
                s += a * b;
            }
            c[j] = (g->accumulate ? c[j] : 0.0f) + s;
        }
        if (has_epi)
            mvrt_cpu_gemm_epilogue(g, c + n0, g->ldc, i, n0, 1, n1 - n0);
    }
}

/* Start of part `i` of `parts` of [0, n), on multiples of `align`. */
static int64_t mvrt_gemm_split(int64_t n, int64_t parts, int64_t i, int64_t align)
{
    const int64_t units = (n + align - 1) / align;
    const int64_t s = units * i / parts * align;
    return s < n ? s : n;
}

static int64_t mvrt_gemm_gcd(int64_t a, int64_t b)
{
    while (b) {
        const int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void *mvrt_gemm_alloc(int64_t floats)
{
    size_t bytes = (size_t)floats * sizeof(float);
    bytes = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

#ifdef MVRT_HAVE_OPENBLAS
/* Whether cblas_sgemm takes g as it is: 32-bit sizes, and leading
 * dimensions it accepts (it would report others through xerbla, which
 * prints; our own kernel has no such limits). */
static int mvrt_gemm_cblas_ok(const mvrt_cpu_gemm_t *g)
{
    const int64_t acols = g->trans_a ? g->M : g->K, bcols = g->trans_b ? g->K : g->N;
    return g->M <= INT_MAX && g->N <= INT_MAX && g->K <= INT_MAX && g->lda <= INT_MAX &&
           g->ldb <= INT_MAX && g->ldc <= INT_MAX && g->lda >= (acols > 1 ? acols : 1) &&
           g->ldb >= (bcols > 1 ? bcols : 1) && g->ldc >= (g->N > 1 ? g->N : 1);
}

/* OpenBLAS is called from one thread at a time, for a whole item, with
 * its own threads: concurrent cblas_sgemm calls from several threads gave
 * results that changed from run to run with Debian 12's OpenBLAS 0.3.21
 * (measured: a graph replay differed in about one run of three; serialized,
 * never), and its thread count is process-global state. The lock also
 * serializes callers on different streams. The epilogue (bias,
 * activation) then runs on OpenMP threads. */
static pthread_mutex_t mvrt_cblas_lock = PTHREAD_MUTEX_INITIALIZER;

static void mvrt_gemm_openblas_items(const mvrt_cpu_gemm_t *g, int64_t batch, int64_t sa,
                                     int64_t sb, int64_t sc, int64_t sr, int threads)
{
    const int has_epi = mvrt_gemm_has_epilogue(g);
    pthread_mutex_lock(&mvrt_cblas_lock);
    if (openblas_get_num_threads() != threads)
        openblas_set_num_threads(threads);
    for (int64_t b = 0; b < batch; b++) {
        const mvrt_cpu_gemm_t it = mvrt_gemm_item(g, b, sa, sb, sc, sr);
        cblas_sgemm(CblasRowMajor, it.trans_a ? CblasTrans : CblasNoTrans,
                    it.trans_b ? CblasTrans : CblasNoTrans, (int)it.M, (int)it.N, (int)it.K, 1.0f,
                    it.A, (int)it.lda, it.B, (int)it.ldb, it.accumulate ? 1.0f : 0.0f, it.C,
                    (int)it.ldc);
        if (!has_epi)
            continue;
        const int64_t rows_per = 16, nblk = (it.M + rows_per - 1) / rows_per;
        (void)nblk;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && nblk > 1)
#endif
        for (int64_t blk = 0; blk < nblk; blk++) {
            const int64_t r0 = blk * rows_per, r1 = r0 + rows_per < it.M ? r0 + rows_per : it.M;
            mvrt_cpu_gemm_epilogue(&it, it.C + r0 * it.ldc, it.ldc, r0, 0, r1 - r0, it.N);
        }
    }
    pthread_mutex_unlock(&mvrt_cblas_lock);
}
#endif

/* The GEMMs as tasks over (batch item, row block, column block), spread
 * over `threads` OpenMP threads; each task runs the built-in kernel `isa`
 * on its block, epilogue included. */
static void mvrt_gemm_tasks(const mvrt_gemm_isa_t *isa, const mvrt_cpu_gemm_t *g,
                            int64_t batch, int64_t sa, int64_t sb, int64_t sc, int64_t sr,
                            int threads)
{
    const int64_t M = g->M, N = g->N, K = g->K;
    const int has_epi = mvrt_gemm_has_epilogue(g);

    /* Tiles per item: enough for batch * tiles to be a multiple of the
     * thread count (equal shares), none when the items alone balance. Rows
     * are split first (each tile packs B once, so keep >= 4 MR rows), then
     * columns. */
    int64_t tiles = 1;
    if (threads > 1 && batch < 4 * (int64_t)threads)
        tiles = threads / mvrt_gemm_gcd(batch, threads);
    const int64_t tm_max = (M + 4 * isa->mr - 1) / (4 * isa->mr);
    int64_t tm = tiles < tm_max ? tiles : tm_max;
    if (tm < 1)
        tm = 1;
    int64_t tn = (tiles + tm - 1) / tm;
    const int64_t tn_max = (N + isa->nr - 1) / isa->nr;
    if (tn > tn_max)
        tn = tn_max;
    const int64_t per_item = tm * tn, ntask = batch * per_item;
    int nt = threads;
    if (nt > ntask)
        nt = (int)ntask;

    /* Pack buffers per thread (built-in kernel), sized for the largest
     * tile. */
    const int64_t mrows = (M + tm - 1) / tm + isa->mr;
    const int64_t mc = isa->mc < mrows ? isa->mc : (mrows + isa->mr - 1) / isa->mr * isa->mr;
    const int64_t kc = K < isa->kc ? K : isa->kc;
    int64_t ncols = (N + tn - 1) / tn + isa->nr;
    ncols = (ncols + isa->nr - 1) / isa->nr * isa->nr;
    const int64_t nc = ncols < isa->nc ? ncols : isa->nc;

#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
    {
        float *abuf = mvrt_gemm_alloc(mc * kc);
        float *bbuf = mvrt_gemm_alloc(kc * nc);
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t task = 0; task < ntask; task++) {
            const int64_t b = task / per_item, t = task % per_item;
            const int64_t im = t / tn, in = t % tn;
            const mvrt_cpu_gemm_t it = mvrt_gemm_item(g, b, sa, sb, sc, sr);
            const int64_t m0 = mvrt_gemm_split(M, tm, im, isa->mr);
            const int64_t m1 = mvrt_gemm_split(M, tm, im + 1, isa->mr);
            const int64_t n0 = mvrt_gemm_split(N, tn, in, isa->nr);
            const int64_t n1 = mvrt_gemm_split(N, tn, in + 1, isa->nr);
            if (m0 >= m1 || n0 >= n1)
                continue;
            if (abuf && bbuf)
                isa->tile(&it, has_epi, m0, m1, n0, n1, abuf, bbuf, mc, kc, nc);
            else
                mvrt_gemm_plain(&it, has_epi, m0, m1, n0, n1);
        }
        free(abuf);
        free(bbuf);
    }
}

void mvrt_cpu_gemm_batched(const mvrt_cpu_gemm_t *g, int64_t batch, int64_t stride_a,
                           int64_t stride_b, int64_t stride_c, int64_t stride_residual,
                           int threads)
{
    if (batch <= 0 || g->M <= 0 || g->N <= 0)
        return;
    if (threads < 1)
        threads = 1;
    if (g->K <= 0) {
        const int has_epi = mvrt_gemm_has_epilogue(g);
        for (int64_t b = 0; b < batch; b++) {
            const mvrt_cpu_gemm_t it =
                mvrt_gemm_item(g, b, stride_a, stride_b, stride_c, stride_residual);
            mvrt_gemm_plain(&it, has_epi, 0, it.M, 0, it.N);
        }
        return;
    }
    const int s = mvrt_gemm_selection();
    const int isa = s > 0 ? s - 1 : mvrt_gemm_best_builtin() - 1;
#ifdef MVRT_HAVE_OPENBLAS
    if (s < 0 && mvrt_gemm_cblas_ok(g)) {
        mvrt_gemm_openblas_items(g, batch, stride_a, stride_b, stride_c, stride_residual, threads);
        return;
    }
#endif
    mvrt_gemm_tasks(&mvrt_gemm_isas[isa], g, batch, stride_a, stride_b, stride_c,
                    stride_residual, threads);
}

void mvrt_cpu_linear(const mvrt_linear_params_t *p, int threads)
{
    /* beta = 1 with a residual other than Y: the GEMM's residual epilogue
     * (activation NONE by the contract) instead of accumulating into Y */
    const int separate = p->beta != 0.0f && p->residual && p->residual != p->Y;
    const mvrt_cpu_gemm_t g = {
        .M = p->M, .N = p->N, .K = p->K,
        .A = p->A, .lda = p->lda, .trans_a = p->trans_a,
        .B = p->B, .ldb = p->ldb, .trans_b = p->trans_b,
        .C = p->Y, .ldc = p->ldy,
        .accumulate = p->beta != 0.0f && !separate,
        .bias = p->bias, .bias_per_row = p->bias_per_row,
        .activation = p->activation,
        .residual = separate ? p->residual : NULL, .ld_residual = separate ? p->ldy : 0,
    };
    mvrt_cpu_gemm_batched(&g, p->batch, p->batch_stride_a, p->batch_stride_b,
                          p->batch_stride_y, separate ? p->batch_stride_y : 0, threads);
}
