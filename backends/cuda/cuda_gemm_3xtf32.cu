/* fp32 GEMMs through CUTLASS's 3xTF32 tensor-core kernels (contract and
 * why: cuda_gemm_3xtf32.h).
 *
 * Layouts: the hook's row-major Y (M x N) = op(A) op(B). A stored M x K
 * row-major is CUTLASS RowMajor; with ta it is stored K x M, i.e. M x K
 * ColumnMajor. B stored K x N row-major is RowMajor; with tb it is stored
 * N x K, i.e. K x N ColumnMajor. One instantiation per (ta, tb) and tile.
 *
 * Tiles (K step 32, 3 stages, 4 warps each owning a (TM/2) x (TN/2)
 * quarter, except 32-row tiles: 32 x (TN/4)) were chosen on an H100 (CUDA
 * 13, CUTLASS 4.2; TFLOP/s; cuBLAS SGEMM for comparison):
 *   NT 50176x1280x320 (fc1)    128x64 66  64x128 64  64x64 63  SGEMM 48
 *   NT 50176x320x1280 (fc2)    128x64 71  64x128 60  64x64 67  SGEMM 41
 *   NN 80x78400x720 (conv)     128x64 40  64x128 40  32x128 51  32x256 56  SGEMM 28
 *   NN 160x40000x1440 (conv)   128x64 43  64x128 54  32x128 65  32x256 71  SGEMM 35
 *   NN 320x12544x1440 (conv)   128x64 44  64x128 67  32x128 59  32x256 65  SGEMM 45
 *   NT 196x1280x320 (batch 1)  128x64 10  64x64 14  32x128 17  SGEMM 5 (16 us)
 *   NT 196x640x320 (batch 1)   128x64 6   64x64 9   32x128 9   SGEMM 5
 * 128x128 and 256x128 tiles spilled (24-30 TFLOP/s on the fc shapes). */
#include "cuda_gemm_3xtf32.h"

#include <climits>
#include <cstdint>
#include <cstdio>

#ifdef MVRT_HAVE_CUTLASS
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/epilogue/thread/linear_combination_bias_elementwise.h"
#include "cutlass/epilogue/thread/linear_combination_gelu.h"
#include "cutlass/gemm/device/gemm_universal.h"
#include "cutlass/gemm/device/gemm_universal_with_broadcast.h"

namespace {

using epi_linear = cutlass::epilogue::thread::LinearCombination<float, 4, float, float>;
using epi_gelu = cutlass::epilogue::thread::LinearCombinationGELU<float, 4, float, float>;

/* Queues a CUTLASS device GEMM with these arguments: DECLINED when CUTLASS
 * cannot take them (alignment) or would need a workspace (no split-K here),
 * FAILED with a message naming `what` and the sizes, else OK. */
template <typename Gemm>
int launch_gemm(const typename Gemm::Arguments &args, cudaStream_t s, const char *what, const mvrt_gpu_gemm_t *g,
                char *msg, size_t msg_n)
{
    Gemm op;
    if (op.can_implement(args) != cutlass::Status::kSuccess) return MVRT_GPU_GEMM_DECLINED;
    if (Gemm::get_workspace_size(args) != 0) return MVRT_GPU_GEMM_DECLINED;
    cutlass::Status st = op.initialize(args, nullptr, s);
    if (st == cutlass::Status::kSuccess) st = op.run(s);
    if (st != cutlass::Status::kSuccess) {
        const cudaError_t e = cudaGetLastError();
        snprintf(msg, msg_n, "%s (M %lld, N %lld, K %lld, batch %lld, beta %g): %s (%s: %s)", what, (long long)g->M,
                 (long long)g->N, (long long)g->K, (long long)g->batch, (double)g->beta, cutlassGetStatusString(st),
                 cudaGetErrorName(e), cudaGetErrorString(e));
        return MVRT_GPU_GEMM_FAILED;
    }
    return MVRT_GPU_GEMM_OK;
}

/* D = epi(alpha * op(A) op(B) + beta * C) with C = Y (beta 0 or 1). */
template <int TM, int TN, typename LayoutA, typename LayoutB, typename Epi = epi_linear>
struct gemm_3xtf32 {
    using Gemm = cutlass::gemm::device::GemmUniversal<
        float, LayoutA, float, LayoutB, float, cutlass::layout::RowMajor, float, cutlass::arch::OpClassTensorOp,
        cutlass::arch::Sm80, cutlass::gemm::GemmShape<TM, TN, 32>,
        cutlass::gemm::GemmShape<(TM > 32 ? TM / 2 : 32), (TM > 32 ? TN / 2 : TN / 4), 32>,
        cutlass::gemm::GemmShape<16, 8, 8>, Epi, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>, 3, 4, 4,
        cutlass::arch::OpMultiplyAddFastF32>;

    /* DECLINED when CUTLASS cannot take the shape (alignment), else OK or
     * FAILED. */
    static int run(cudaStream_t s, const mvrt_gpu_gemm_t *g, float beta, char *msg, size_t msg_n)
    {
        typename Gemm::Arguments args(
            g->batch > 1 ? cutlass::gemm::GemmUniversalMode::kBatched : cutlass::gemm::GemmUniversalMode::kGemm,
            {(int)g->M, (int)g->N, (int)g->K}, (int)g->batch, {1.f, beta}, (const float *)g->A,
            (const float *)g->B, g->Y, g->Y, g->sa, g->sb, g->sy, g->sy, g->lda, g->ldb, g->ldy, g->ldy);
        return launch_gemm<Gemm>(args, s, "3xTF32 GEMM", g, msg, msg_n);
    }
    static int run(cudaStream_t s, const mvrt_gpu_gemm_t *g, char *msg, size_t msg_n)
    {
        return run(s, g, g->beta, msg, msg_n);
    }
};

/* GELU without a bias (NT, batch 1, beta 0) in the GEMM's epilogue; the
 * source is never read (beta 0). Returns FUSED, DECLINED or FAILED. */
template <int TM, int TN>
int run_fused_nt(cudaStream_t s, const mvrt_gpu_gemm_t *g, char *msg, size_t msg_n)
{
    using R = cutlass::layout::RowMajor;
    using C = cutlass::layout::ColumnMajor;
    const int rc = gemm_3xtf32<TM, TN, R, C, epi_gelu>::run(s, g, 0.f, msg, msg_n);
    return rc == MVRT_GPU_GEMM_OK ? MVRT_GPU_GEMM_FUSED : rc;
}

/* Dense linears with a bias (NT, batch 1): Y = act(op(A) op(B) + bias[col])
 * with beta 0 (fc1, qkv, the head), or Y += op(A) op(B) + bias[col] with
 * beta 1 (fc2, proj: the source C is Y). The bias is the broadcast vector of
 * CUTLASS's epilogue-with-broadcast (one entry per column, row step ldr 0),
 * loaded once per tile column; with beta 0 no source is read at all. Saves
 * the bias pass over Y after the residual GEMMs (fc2 of MambaVision-T stage
 * 3 at batch 256: 0.08 ms of 0.65) and the per-element reads of a
 * zero-stride bias matrix. Returns FUSED, DECLINED or FAILED. */
template <typename Act>
using epi_bias_act = cutlass::epilogue::thread::LinearCombinationBiasElementwise<float, float, float, float, float, 4,
                                                                                 Act, cutlass::plus<float>, false>;

template <int TM, int TN, typename Act>
int run_fused_bias_nt(cudaStream_t s, const mvrt_gpu_gemm_t *g, char *msg, size_t msg_n)
{
    using Gemm = cutlass::gemm::device::GemmUniversalWithBroadcast<
        float, cutlass::layout::RowMajor, float, cutlass::layout::ColumnMajor, float, cutlass::layout::RowMajor, float,
        cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, cutlass::gemm::GemmShape<TM, TN, 32>,
        cutlass::gemm::GemmShape<TM / 2, TN / 2, 32>, cutlass::gemm::GemmShape<16, 8, 8>, epi_bias_act<Act>,
        cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>, 3, 4, 4, cutlass::arch::OpMultiplyAddFastF32>;
    typename Gemm::Arguments args(cutlass::gemm::GemmUniversalMode::kGemm, {(int)g->M, (int)g->N, (int)g->K}, 1,
                                  {1.f, g->beta}, g->A, g->B, g->Y, g->Y, const_cast<float *>(g->epi_bias), nullptr, 0,
                                  0, 0, 0, 0, 0, g->lda, g->ldb, g->ldy, g->ldy, 0, 0);
    const int rc = launch_gemm<Gemm>(args, s, "3xTF32 GEMM with a bias epilogue", g, msg, msg_n);
    return rc == MVRT_GPU_GEMM_OK ? MVRT_GPU_GEMM_FUSED : rc;
}

template <int TM, int TN>
int run_fused_bias(cudaStream_t s, const mvrt_gpu_gemm_t *g, char *msg, size_t msg_n)
{
    if (g->epi_act == MVRT_ACT_GELU_ERF)
        return run_fused_bias_nt<TM, TN, cutlass::epilogue::thread::GELU<float>>(s, g, msg, msg_n);
    return run_fused_bias_nt<TM, TN, cutlass::epilogue::thread::Identity<float>>(s, g, msg, msg_n);
}

template <int TM, int TN>
int run_tile(cudaStream_t s, const mvrt_gpu_gemm_t *g, char *msg, size_t msg_n)
{
    using R = cutlass::layout::RowMajor;
    using C = cutlass::layout::ColumnMajor;
    if (!g->ta && g->tb) return gemm_3xtf32<TM, TN, R, C>::run(s, g, msg, msg_n);
    if (!g->ta) return gemm_3xtf32<TM, TN, R, R>::run(s, g, msg, msg_n);
    if (g->tb) return gemm_3xtf32<TM, TN, C, C>::run(s, g, msg, msg_n);
    return gemm_3xtf32<TM, TN, C, R>::run(s, g, msg, msg_n);
}

/* NN only (the convs' W . X_col and the per-sequence x_proj/dt_proj):
 * wide-N tiles read B (row-major K x N) in long rows. */
template <int TM, int TN>
int run_tile_nn(cudaStream_t s, const mvrt_gpu_gemm_t *g, char *msg, size_t msg_n)
{
    using R = cutlass::layout::RowMajor;
    return gemm_3xtf32<TM, TN, R, R>::run(s, g, msg, msg_n);
}

int64_t blocks_of(const mvrt_gpu_gemm_t *g, int tm, int tn)
{
    return ((g->M + tm - 1) / tm) * ((g->N + tn - 1) / tn) * g->batch;
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }
bool multiple_of_4(int64_t v) { return v % 4 == 0; }
bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

} // namespace

extern "C" int mvrt_cuda_gemm_3xtf32_built(void) { return 1; }

extern "C" int mvrt_cuda_gemm_3xtf32(cudaStream_t s, const mvrt_gpu_gemm_t *g, int sm_count, char *msg,
                                     size_t msg_n)
{
    if (g->ab16 || g->y16) return MVRT_GPU_GEMM_DECLINED;
    if (!fits_int(g->M) || !fits_int(g->N) || !fits_int(g->K) || !fits_int(g->batch) || g->batch < 1)
        return MVRT_GPU_GEMM_DECLINED;
    /* 16-byte vector loads of every row (and of every batch item) */
    if (!aligned16(g->A) || !aligned16(g->B) || !aligned16(g->Y) || !multiple_of_4(g->lda) ||
        !multiple_of_4(g->ldb) || !multiple_of_4(g->ldy) || !multiple_of_4(g->sa) || !multiple_of_4(g->sb) ||
        !multiple_of_4(g->sy) || g->lda < 1 || g->ldb < 1 || g->ldy < 1)
        return MVRT_GPU_GEMM_DECLINED;
    /* a fused epilogue (NT, batch 1, a 16-byte aligned bias): a bias and
     * GELU or none with beta 0, a bias with beta 1 (no activation); GELU
     * without a bias (beta 0) in the plain GELU epilogue */
    const bool nt1 = !g->ta && g->tb && g->batch == 1 && (!g->epi_bias || aligned16(g->epi_bias));
    const bool fuse_bias = nt1 && g->epi_bias &&
                           ((g->beta == 0.f && (g->epi_act == MVRT_ACT_NONE || g->epi_act == MVRT_ACT_GELU_ERF)) ||
                            (g->beta == 1.f && g->epi_act == MVRT_ACT_NONE));
    const bool fuse_gelu = nt1 && !g->epi_bias && g->beta == 0.f && g->epi_act == MVRT_ACT_GELU_ERF;
    /* Tile choice, from H100 measurements (the table in the file comment):
     * fewer than two waves of the large tile -> 64x64 (more blocks; 32x128
     * measured within 5 % of it either way on the batch-1 GEMMs); NN with
     * M <= 192 (conv output channels 80, 160) ->
     * 32x256 (less padding of M: 56-71 TFLOP/s against 40-43 for 128x64);
     * other NN -> 64x128; every other layout -> 128x64. */
    const int64_t two_waves = 2 * (int64_t)(sm_count > 0 ? sm_count : 1);
    if (!g->ta && !g->tb) {
        if (g->M <= 192 && blocks_of(g, 32, 256) >= two_waves) return run_tile_nn<32, 256>(s, g, msg, msg_n);
        if (g->M > 192 && blocks_of(g, 64, 128) >= two_waves) return run_tile_nn<64, 128>(s, g, msg, msg_n);
        return run_tile<64, 64>(s, g, msg, msg_n);
    }
    const bool small = blocks_of(g, 128, 64) < two_waves;
    if (fuse_bias) {
        const int rc = small ? run_fused_bias<64, 64>(s, g, msg, msg_n) : run_fused_bias<128, 64>(s, g, msg, msg_n);
        if (rc != MVRT_GPU_GEMM_DECLINED) return rc;
    }
    if (fuse_gelu) {
        const int rc = small ? run_fused_nt<64, 64>(s, g, msg, msg_n) : run_fused_nt<128, 64>(s, g, msg, msg_n);
        if (rc != MVRT_GPU_GEMM_DECLINED) return rc;
    }
    return small ? run_tile<64, 64>(s, g, msg, msg_n) : run_tile<128, 64>(s, g, msg, msg_n);
}

#else /* no CUTLASS in this build: cuBLAS SGEMM serves every fp32 GEMM */

extern "C" int mvrt_cuda_gemm_3xtf32_built(void) { return 0; }

extern "C" int mvrt_cuda_gemm_3xtf32(cudaStream_t s, const mvrt_gpu_gemm_t *g, int sm_count, char *msg,
                                     size_t msg_n)
{
    (void)s, (void)g, (void)sm_count, (void)msg, (void)msg_n;
    return MVRT_GPU_GEMM_DECLINED;
}

#endif

/* An empty kernel of this file (built for the sm_80+ entries of
 * MVRT_CUDA_ARCHS only): its attributes say which of them the driver
 * loaded for the current device. */
__global__ void mvrt_cuda_3xtf32_code_arch_probe_kernel() {}

extern "C" int mvrt_cuda_gemm_3xtf32_code_arch(void)
{
    cudaFuncAttributes a;
    memset(&a, 0, sizeof a);
    if (cudaFuncGetAttributes(&a, mvrt_cuda_3xtf32_code_arch_probe_kernel) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.ptxVersion;
}
