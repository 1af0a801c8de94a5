/* bf16 / fp16 GEMMs with the linear epilogue fused, on Hopper (contract:
 * cuda_gemm16_sm90.h). CUTLASS 3 TMA warp-specialized kernels whose
 * epilogue computes act(acc + bias + beta * C) in fp32 before the one
 * store of Y (an epilogue visitor tree: LinCombPerColBiasEltAct). */
#include "cuda_gemm16_sm90.h"

#include <cstdint>
#include <cstdio>

extern "C" int mvrt_cuda_device_is_sm90a(void)
{
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return major == 9 && minor == 0;
}

#if defined(MVRT_HAVE_SM90A_CUTLASS)
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "ops/common/gpu_activation.cuh" /* gelu_erf_fit */

/* a named namespace: kernels whose template arguments live in an
 * anonymous one make nvcc's stub code ambiguous against cute's own */
namespace mvrt_gemm16_sm90 {

using bf16 = cutlass::bfloat16_t;
using f16 = cutlass::half_t;

/* Y = Act(A B^T + bias + beta C): A (M, K) and B (N, K) of ElementAB (bf16
 * or fp16), K contiguous in both (wgmma's native "TN" form); Y row-major
 * of ElementD;
 * C row-major of ElementC (void: no C). Tile, cluster and schedules are
 * the kernel's shape (the dispatch below says which serves what). */
template <class ElementAB, class ElementD, class ElementC, template <class> class Act, class Tile, class Cluster,
          class MainSchedule, class EpiSchedule>
struct gemm16 {
    using ElementSource = cute::conditional_t<cute::is_void_v<ElementC>, ElementD, ElementC>;
    static constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
    static constexpr int kAlignC = 128 / cutlass::sizeof_bits<ElementSource>::value;
    using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<Act, ElementD, float, float, ElementSource, float>;
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, ElementC, cutlass::layout::RowMajor, kAlignC,
        ElementD, cutlass::layout::RowMajor, kAlignD, EpiSchedule, Fusion>::CollectiveOp;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementAB, cutlass::layout::RowMajor, 8, ElementAB,
        cutlass::layout::ColumnMajor, 8, float, Tile, Cluster,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
        MainSchedule>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue>;
    using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

    static bool loads()
    {
        cudaFuncAttributes a;
        const bool ok = cudaFuncGetAttributes(&a, cutlass::device_kernel<Kernel>) == cudaSuccess;
        (void)cudaGetLastError();
        return ok;
    }

    static int run(cudaStream_t s, const mvrt_gpu_gemm16_t *g, const char *what, char *msg, size_t msg_n)
    {
        using StrideA = typename Kernel::StrideA;
        using StrideB = typename Kernel::StrideB;
        using StrideC = typename Kernel::StrideC;
        using StrideD = typename Kernel::StrideD;
        const StrideA dA = cute::make_stride((int64_t)g->lda, cute::Int<1>{}, (int64_t)0);
        const StrideB dB = cute::make_stride((int64_t)g->ldb, cute::Int<1>{}, (int64_t)0);
        const StrideD dD = cute::make_stride((int64_t)g->ldy, cute::Int<1>{}, (int64_t)0);
        const StrideC dC = cute::make_stride((int64_t)(g->R ? g->ldr : g->ldy), cute::Int<1>{}, (int64_t)0);
        typename Gemm::Arguments args{};
        args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
        args.problem_shape = cute::make_shape((int)g->M, (int)g->N, (int)g->K, 1);
        args.mainloop.ptr_A = static_cast<const ElementAB *>(g->A);
        args.mainloop.dA = dA;
        args.mainloop.ptr_B = static_cast<const ElementAB *>(g->B);
        args.mainloop.dB = dB;
        auto &fusion = args.epilogue.thread;
        fusion.alpha = 1.f;
        fusion.beta = g->R ? 1.f : 0.f;
        fusion.bias_ptr = g->bias;
        if constexpr (!cute::is_void_v<ElementC>)
            args.epilogue.ptr_C = static_cast<const ElementC *>(g->R ? g->R : (const void *)g->Y);
        args.epilogue.dC = dC;
        args.epilogue.ptr_D = static_cast<ElementD *>(g->Y);
        args.epilogue.dD = dD;
        Gemm op;
        cutlass::Status st = op.can_implement(args);
        if (st != cutlass::Status::kSuccess || Gemm::get_workspace_size(args) != 0) return MVRT_GPU_GEMM_DECLINED;
        st = op.initialize(args, nullptr, s);
        if (st == cutlass::Status::kSuccess) st = op.run(s);
        if (st != cutlass::Status::kSuccess) {
            const cudaError_t e = cudaGetLastError();
            snprintf(msg, msg_n, "%s 16-bit GEMM (M %lld, N %lld, K %lld): %s (%s)", what, (long long)g->M,
                     (long long)g->N, (long long)g->K, cutlassGetStatusString(st), cudaGetErrorName(e));
            return MVRT_GPU_GEMM_FAILED;
        }
        return MVRT_GPU_GEMM_OK;
    }
};

/* The MLP hidden's activation: GELU's erf form from one exponential
 * (ops/common/gelu_fit.h: within 6e-7, far below the 16-bit output's
 * rounding). erff's ~25 instructions per element made fc1's epilogue
 * longer than its product (PERF_NOTES, session 37). */
template <class T>
struct GeluErfFit {
    static const bool kIsHeavy = true;
    CUTLASS_DEVICE T operator()(T const &v) const { return T(mvrt_mv_gpu::gelu_erf_fit(float(v))); }
};
template <class T, int N>
struct GeluErfFit<cutlass::Array<T, N>> {
    static const bool kIsHeavy = true;
    CUTLASS_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const &v) const
    {
        cutlass::Array<T, N> y;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < N; ++i)
            y[i] = GeluErfFit<T>{}(v[i]);
        return y;
    }
};

using cute::Shape;
using cute::_1;
using cute::_64;
using cute::_128;
using cute::_256;
namespace ep = cutlass::epilogue;
namespace th = cutlass::epilogue::thread;
using Coop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using CoopEpi = ep::TmaWarpSpecializedCooperative;
using Ping = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using PingEpi = ep::TmaWarpSpecialized;

/* The kernel shapes the dispatch below uses (AB: bf16 or f16). */
template <class AB, class D, class C, template <class> class Act>
using coop_128x128 = gemm16<AB, D, C, Act, Shape<_128, _128, _64>, Shape<_1, _1, _1>, Coop, CoopEpi>;
template <class AB, class D, class C, template <class> class Act>
using coop_128x256 = gemm16<AB, D, C, Act, Shape<_128, _256, _64>, Shape<_1, _1, _1>, Coop, CoopEpi>;
template <class AB, class D, class C, template <class> class Act>
using ping_128x128 = gemm16<AB, D, C, Act, Shape<_128, _128, _64>, Shape<_1, _1, _1>, Ping, PingEpi>;

constexpr int64_t kLongK = 1024;

/* The dispatch table (MambaVision shapes on an H200, 2026-11-27; ms per
 * GEMM with its epilogue, against cuBLAS's product alone):
 *
 *   linear (T, batch 256)         coop 128x128  coop 128x256  pingpong 128x128  cuBLAS, no epilogue
 *   fc1  50176x1280x320 bf16 GELU   0.170         0.151         0.213            0.075 (+0.17 epilogue)
 *   fc2  50176x320x1280 +bias +R    0.108         0.166         0.120            0.078 (+0.06)
 *   qkv  50176x960x320  +bias       0.102         0.094         0.087            0.076 (+0.06)
 *   proj 50176x320x320  +bias +R    0.055         0.069         0.056            0.057 (+0.06)
 *   fc2  12544x640x2560 +bias +R    0.084         0.120         0.108            0.068
 *   qkv  12544x1920x640 +bias       0.080         0.072         0.083            0.058
 *
 * With GELU from one exponential (GeluErfFit, session 37) fc1 takes 0.116
 * ms on 128x256 tiles; the whole of T in bf16: 9.79 ms against 10.15 with
 * erff, 9.88 with pingpong 128x128 and 9.90 with cooperative 128x128.
 * So: the MLP hidden (bf16, bias + GELU) on 128x256 tiles, and so q, k, v
 * where attention takes them in 16 bits (bias only; cuBLAS writing them
 * and a second pass adding the bias took 0.233 ms per call at
 * MambaVision-B's 50176x1536x512 and 0.128 at T's 50176x960x320, this
 * kernel 0.141 and 0.072, H200, session 35); float outputs
 * with a long K (fc2) on cooperative 128x128, with a short K on pingpong
 * 128x128 (its epilogue overlaps the other warp group's products). Pingpong
 * 64x128 was slower on every shape. A product with no epilogue, or only
 * the accumulate into Y itself (in_proj, out_proj), stays on cuBLAS, which
 * is faster there (in_proj 0.030 vs 0.038 ms) and adds Y itself. So does
 * an output of fewer 128x128 tiles than SMs: at batch 1 (196 rows) these
 * tiles left most SMs idle (MambaVision-T in bf16: 0.869 -> 1.062 ms per
 * image) where cuBLAS picks small tiles and split-K. fp16 graphs take the
 * same tiles (the operands' width and the instruction shapes are bf16's).
 * A 16-bit residual stream (16-bit Y and R: fc2 and proj onto the
 * stream) takes the float outputs' tiles with a 16-bit C and D. The
 * float outputs remain for fp32 streams: block graphs (their input and
 * output are the caller's floats) and stages whose windows pad the map
 * (runtime/graph.c, emit_stage). */
template <class AB> struct kernels {
    using hidden_gelu = coop_128x256<AB, AB, void, GeluErfFit>;
    using out16_bias = coop_128x256<AB, AB, void, th::Identity>;
    using float_long_k = coop_128x128<AB, float, float, th::Identity>;
    using float_short_k = ping_128x128<AB, float, float, th::Identity>;
    using res16_long_k = coop_128x128<AB, AB, AB, th::Identity>;
    using res16_short_k = ping_128x128<AB, AB, AB, th::Identity>;
    static bool loads()
    {
        return hidden_gelu::loads() && out16_bias::loads() && float_long_k::loads() && float_short_k::loads() &&
               res16_long_k::loads() && res16_short_k::loads();
    }
    static int run(cudaStream_t s, const mvrt_gpu_gemm16_t *g, char *msg, size_t msg_n)
    {
        if (g->y16 && g->R && g->K >= kLongK) return res16_long_k::run(s, g, "sm90 128x128 16-bit residual", msg, msg_n);
        if (g->y16 && g->R) return res16_short_k::run(s, g, "sm90 pingpong 128x128 16-bit residual", msg, msg_n);
        if (g->y16 && g->act == MVRT_ACT_GELU_ERF) return hidden_gelu::run(s, g, "sm90 128x256 GELU", msg, msg_n);
        if (g->y16) return out16_bias::run(s, g, "sm90 128x256", msg, msg_n);
        if (g->K >= kLongK) return float_long_k::run(s, g, "sm90 128x128", msg, msg_n);
        return float_short_k::run(s, g, "sm90 pingpong 128x128", msg, msg_n);
    }
};
bool takes(const mvrt_gpu_gemm16_t *g)
{
    /* at least one wave of 128 x 128 output tiles */
    if (((g->M + 127) / 128) * ((g->N + 127) / 128) < g->sm_count) return false;
    /* 16-bit Y (of the operands' type): the MLP hidden (bias + GELU), q,
     * k, v (bias) or the 16-bit residual stream (R, with a bias or R not
     * Y); float Y: an epilogue beyond Y += product. Y += product alone
     * stays on cuBLAS (the table above). */
    const bool epilogue = g->act == MVRT_ACT_NONE && (g->bias || (g->R && g->R != g->Y));
    const bool act_ok = g->y16 && !g->R ? g->act == MVRT_ACT_GELU_ERF || (g->act == MVRT_ACT_NONE && g->bias)
                                        : epilogue;
    /* TMA: 16-byte aligned bases and row strides; int sizes */
    const int ysize = g->y16 ? 2 : 4;
    const bool types_ok = (g->ab16 == MVRT_STORAGE16_BF16 || g->ab16 == MVRT_STORAGE16_F16) &&
                          (!g->y16 || g->y16 == g->ab16);
    return types_ok && act_ok && g->M > 0 && g->N > 0 && g->K > 0 && g->M <= INT32_MAX &&
           g->N <= INT32_MAX && g->K <= INT32_MAX && g->K % 8 == 0 && g->N % 8 == 0 && g->lda % 8 == 0 &&
           g->ldb % 8 == 0 && (g->ldy * ysize) % 16 == 0 && (!g->R || (g->ldr * ysize) % 16 == 0) &&
           (uintptr_t)g->A % 16 == 0 && (uintptr_t)g->B % 16 == 0 && (uintptr_t)g->Y % 16 == 0 &&
           (uintptr_t)g->R % 16 == 0 && (uintptr_t)g->bias % 16 == 0;
}

} // namespace mvrt_gemm16_sm90

using namespace mvrt_gemm16_sm90;

extern "C" int mvrt_cuda_gemm16_sm90_usable(void)
{
    return mvrt_cuda_device_is_sm90a() && kernels<bf16>::loads() && kernels<f16>::loads();
}

extern "C" int mvrt_cuda_gemm16_sm90(cudaStream_t s, const mvrt_gpu_gemm16_t *g, char *msg, size_t msg_n)
{
    if (!takes(g)) return MVRT_GPU_GEMM_DECLINED;
    return g->ab16 == MVRT_STORAGE16_F16 ? kernels<f16>::run(s, g, msg, msg_n) : kernels<bf16>::run(s, g, msg, msg_n);
}

#else /* not built for sm_90a with CUTLASS: cuBLAS serves every 16-bit linear */

extern "C" int mvrt_cuda_gemm16_sm90_usable(void) { return 0; }

extern "C" int mvrt_cuda_gemm16_sm90(cudaStream_t s, const mvrt_gpu_gemm16_t *g, char *msg, size_t msg_n)
{
    (void)s, (void)g, (void)msg, (void)msg_n;
    return MVRT_GPU_GEMM_DECLINED;
}

#endif
