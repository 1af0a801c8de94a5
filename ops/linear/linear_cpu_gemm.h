/* Internal GEMM of the CPU backend, shared by the linear (linear_cpu.c) and
 * the conv2d (conv2d_cpu.c, through im2col). Not installed, not part of the
 * op interface.
 *
 * One GEMM, row-major, with a fused epilogue:
 *   C = (accumulate ? C : 0) + op(A) op(B)          (M x N, row stride ldc)
 *   C = act(C + bias) + residual                     (each when present)
 * op(A) is M x K: A stored M x K (row stride lda), or K x M when trans_a.
 * op(B) is K x N: B stored K x N (row stride ldb), or N x K when trans_b.
 * bias is indexed by row (bias_per_row) or column of this GEMM; residual is
 * M x N with row stride ld_residual. With accumulate the caller passes
 * activation NONE (the linear's beta = 1 contract). C aliases none of A, B,
 * bias, residual. K may be 0 (then C = epilogue of 0 or of the old C).
 *
 * Which kernel runs: OpenBLAS's cblas_sgemm plus a separate epilogue pass
 * when the build found OpenBLAS (MVRT_HAVE_OPENBLAS), else mvrt's own
 * blocked SGEMM for the best instruction set of the CPU (avx512, avx2 or
 * generic vector code), with the epilogue applied to each register tile as
 * it is stored. Tests may force one kernel. */
#ifndef MVRT_OPS_LINEAR_CPU_GEMM_H
#define MVRT_OPS_LINEAR_CPU_GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mvrt_cpu_gemm {
    int64_t M, N, K;
    const float *A; int64_t lda; int trans_a;
    const float *B; int64_t ldb; int trans_b;
    float *C; int64_t ldc;
    int accumulate;              /* 0: C = ..., 1: C += ... */
    const float *bias; int bias_per_row;
    int activation;              /* mvrt_activation_t */
    const float *residual; int64_t ld_residual;
} mvrt_cpu_gemm_t;

/* Runs `batch` GEMMs: item b uses A + b*stride_a, B + b*stride_b,
 * C + b*stride_c, residual + b*stride_residual (bias is shared). Uses the
 * calling thread plus up to threads - 1 OpenMP workers; threads == 1 never
 * opens a parallel region, so it may be called from inside one (several
 * threads at once, each on its own C). Never fails: when a pack buffer
 * cannot be allocated, the affected part is computed by plain loops. */
void mvrt_cpu_gemm_batched(const mvrt_cpu_gemm_t *g, int64_t batch, int64_t stride_a,
                           int64_t stride_b, int64_t stride_c, int64_t stride_residual,
                           int threads);

static inline void mvrt_cpu_gemm_run(const mvrt_cpu_gemm_t *g, int threads)
{
    mvrt_cpu_gemm_batched(g, 1, 0, 0, 0, 0, threads);
}

/* Name of the kernel in use: "openblas", "avx512", "avx2" or "generic". */
const char *mvrt_cpu_gemm_kernel(void);

/* For tests and benchmarks: use kernel `name` (one of the above) from now
 * on, or the default choice for name == NULL. Returns 0, or -1 when that
 * kernel is not built or the CPU lacks its instructions (nothing changes).
 * Not thread-safe against GEMMs running at the same time. */
int mvrt_cpu_gemm_force(const char *name);

/* Applies the epilogue act(C + bias) + residual to rows [r0, r0+m), columns
 * [c0, c0+n) of one GEMM, C pointing at element (r0, c0); bias and residual
 * are those of the whole GEMM (residual at (0, 0)). Float math, as the
 * kernels use. */
void mvrt_cpu_gemm_epilogue(const mvrt_cpu_gemm_t *g, float *c, int64_t ldc, int64_t r0,
                            int64_t c0, int64_t m, int64_t n);

/* The activation in float, as the CPU kernels apply it. */
float mvrt_cpu_activation(int activation, float x);

#ifdef __cplusplus
}
#endif
#endif
