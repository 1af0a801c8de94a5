/* 16-bit NHWC convolutions on Hopper (contract: cuda_conv16_sm90.h):
 * CUTLASS 3 implicit-GEMM conv kernels (TMA im2col loads, wgmma) whose
 * epilogue computes act(acc + bias + beta * residual) in fp32 before the
 * one store of y (LinCombPerColBiasEltAct: the GEMM's N is the output
 * channel, so its per-column bias is the conv's per-channel bias). */
#include "cuda_conv16_sm90.h"
#include "cuda_gemm16_sm90.h" /* mvrt_cuda_device_is_sm90a */

#include <cstdint>
#include <cstdio>

extern "C" int mvrt_cuda_current_sm_count(void)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return sms;
}

#if defined(MVRT_HAVE_SM90A_CUTLASS) && defined(MVRT_HAVE_SM90A_CUTLASS_CONV)
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/kernel_hardware_info.hpp"
#include "cutlass/conv/collective/collective_builder.hpp"
#include "cutlass/conv/convnd_problem_shape.hpp"
#include "cutlass/conv/device/conv_universal_adapter.hpp"
#include "cutlass/conv/kernel/conv_universal.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"

/* a named namespace (see cuda_gemm16_sm90.cu) */
namespace mvrt_conv16_sm90 {

using namespace cute;

/* One fprop kernel: E (bf16 or half) activations, filter and output,
 * fp32 accumulation, Act after the bias, the residual as the epilogue's
 * source C (beta 1). */
/* Stages: 0, as many as the shared memory holds; else that many. */
template <class E, template <class> class Act, class Tile, int Stages = 0>
struct conv16 {
    static constexpr int kAlign = 128 / cutlass::sizeof_bits<E>::value;
    using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<Act, E, float, float, E, float>;
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Shape<_1, _1, _1>,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, E, cutlass::layout::TensorNHWC, kAlign, E,
        cutlass::layout::TensorNHWC, kAlign, cutlass::epilogue::TmaWarpSpecialized, Fusion>::CollectiveOp;
    using Mainloop = typename cutlass::conv::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop, E,
        cutlass::layout::TensorNHWC, kAlign, E, cutlass::layout::TensorNHWC, kAlign, float, Tile, Shape<_1, _1, _1>,
        cute::conditional_t<Stages == 0,
                            cutlass::conv::collective::StageCountAutoCarveout<static_cast<int>(
                                sizeof(typename Epilogue::SharedStorage))>,
                            cutlass::conv::collective::StageCount<Stages>>,
        cutlass::conv::collective::KernelScheduleAuto>::CollectiveOp;
    using Problem = cutlass::conv::ConvProblemShape<Mainloop::DispatchPolicy::ConvOp,
                                                    Mainloop::DispatchPolicy::NumSpatialDimensions>;
    using Kernel = cutlass::conv::kernel::ConvUniversal<Problem, Mainloop, Epilogue>;
    using Conv = cutlass::conv::device::ConvUniversalAdapter<Kernel>;

    static bool loads()
    {
        cudaFuncAttributes a;
        const bool ok = cudaFuncGetAttributes(&a, cutlass::device_kernel<Kernel>) == cudaSuccess;
        (void)cudaGetLastError();
        return ok;
    }

    static int run(cudaStream_t s, const mvrt_conv2d_params_t *p, int nb, int cp, const void *x, const void *w,
                   const float *bias, const void *residual, void *y, char *msg, size_t msg_n)
    {
        const int h = (int)p->in_h, wd = (int)p->in_w, k = (int)p->out_channels, r = p->kernel;
        const Problem problem(cutlass::conv::Mode::kCrossCorrelation, {nb, h, wd, cp}, {k, r, r, cp},
                              {p->pad, p->pad}, {p->pad, p->pad}, {p->stride, p->stride}, {1, 1}, 1);
        typename Kernel::StrideC dC{};
        typename Kernel::StrideD dD{};
        /* the output's M modes (q, p, n) take the problem's strides of C
         * (dense NHWC), as CUTLASS's own fprop testbed sets them */
        cute::for_each(cute::make_seq<cute::rank<0>(typename Kernel::StrideC{})>{}, [&](auto i) {
            cute::get<0, i>(dC) = problem.stride_C[Problem::RankT - 2 - i];
            cute::get<0, i>(dD) = problem.stride_C[Problem::RankT - 2 - i];
        });
        typename Conv::Arguments args{
            problem,
            {static_cast<const E *>(x), static_cast<const E *>(w)},
            {{}, static_cast<const E *>(residual ? residual : y), dC, static_cast<E *>(y), dD}};
        auto &fusion = args.epilogue.thread;
        fusion.alpha = 1.f;
        fusion.beta = residual ? 1.f : 0.f;
        fusion.bias_ptr = bias;
        Conv op;
        cutlass::Status st = op.can_implement(args);
        if (st != cutlass::Status::kSuccess || Conv::get_workspace_size(args) != 0) return MVRT_GPU_GEMM_DECLINED;
        st = op.initialize(args, nullptr, s);
        if (st == cutlass::Status::kSuccess) st = op.run(s);
        if (st != cutlass::Status::kSuccess) {
            const cudaError_t e = cudaGetLastError();
            snprintf(msg, msg_n, "sm90 16-bit conv2d (%d images, %dx%dx%d -> %d, k %d, stride %d): %s (%s)", nb, cp,
                     h, wd, k, r, p->stride, cutlassGetStatusString(st), cudaGetErrorName(e));
            return MVRT_GPU_GEMM_FAILED;
        }
        return MVRT_GPU_GEMM_OK;
    }
};

namespace th = cutlass::epilogue::thread;

/* The dispatch table: the tile per output-channel count K (tile = output
 * positions x output channels x reduction slice). MambaVision at batch
 * 256 on an H200, ms per op group against the Sm80 kernels of
 * cuda_conv_3xtf32.cu (2026-11-28; each row from one call):
 *
 *   conv                       Sm80 (mma.sync)  128x128x64  128x160x32  128x80x32
 *   B 128->128 56x56 (x6)        4.02             3.15
 *   B 256->256 28x28 (x6)        4.02             2.51
 *   T 160->160 28x28 (x6)        1.80             2.59        1.39
 *   T  80->80  56x56 (x2)        1.01             1.48                    1.09
 *   T  32->80  112x112 s2        <= 0.26          0.38                    0.27
 *
 * So K a multiple of 128: 128x128x64; K = 160: 128x160x32 (wgmma takes
 * N = 160; 128x128 padded it to 256 and the reduction slice of 64 to 192
 * per filter tap); MambaVision-S's 192: 128x192x32 (2.27 -> 1.51 ms for
 * its six 28x28 convs). MambaVision-L's 196 channels reach these kernels
 * as maps stored with 200 (graph.c pads a conv stage's map to 8 channels
 * for TMA's 16-byte rows), so K = 200: 128x224x32 (CUTLASS's epilogue
 * cannot split N = 200 into its 16-wide subtiles; the 24 columns past K
 * are TMA's zeros, never stored). L, batch 256, bf16, ms per op group
 * (2026-11-28, H200, one call):
 *
 *   conv                       Sm80 (8-byte rows, 196)  Sm80 (200)  128x208x32  128x224x32  128x128x64
 *   L 196->196 56x56 (x12)       17.3 (session 35)        15.04       15.27       13.75
 *   L 392->392 28x28 (x12)                                11.69       13.01       12.12       (whole model 3% slower)
 *
 * K = 128 exactly (MambaVision-B's 56 x 56 stage): 64x128x64 with 4
 * stages (about 100 KB of shared memory, so two CTAs can share an SM and
 * one's epilogue overlap the other's main loop: CUTLASS's sm90 conv
 * kernels are not persistent). B bf16, batch 256, H200, one call, ms for the twelve
 * 56 x 56 convs (the 28 x 28 256-channel ones in brackets):
 *   128x128x64 auto stages 3.29 (2.61); 128x128x64, 4 stages 3.32 (2.65);
 *   64x128x64, 4 stages 3.16 (2.83); 64x128x64, 3 stages 3.34 (3.07);
 *   128x128x64 with 2x1 clusters 3.46 (2.75)
 * so at batch 256 the 64-row tile serves K = 128 only. At batch 1 the
 * other multiples of 128 take it too, where 128 x 128 output tiles would
 * number fewer than the SMs: MambaVision-B's 28 x 28 256-channel convs
 * ran 14 CTAs of 128 x 128 (15.6-17.0 us each), its downsamplers 14, 8
 * and 8 (10.7, 15.6 and 26.6 us: 49 or 196 output positions in 128-row
 * tiles, K up to 4608; ncu, H200, session 61); 64-row tiles halve the
 * rows each CTA multiplies and double the CTAs where M allows.
 * Any other K declines and the Sm80 kernels run it: 80 channels (faster
 * there), S's 96 and L's 392 (above). MambaVision-T at batch 256 in bf16:
 * 22 913 -> 23 903 img/s, B 9 629 -> 10 547 (H200); L 4 027 -> 4 130 with
 * the 128x224 tile. */
using Tile128 = Shape<_128, _128, Shape<_64>>;
using Tile64 = Shape<_64, _128, Shape<_64>>;
using Tile160 = Shape<_128, _160, Shape<_32>>;
using Tile192 = Shape<_128, _192, Shape<_32>>;
using Tile224 = Shape<_128, _224, Shape<_32>>;

template <class E, class Tile, int Stages = 0> struct acts {
    using relu = conv16<E, th::ReLu, Tile, Stages>;
    using gelu_tanh = conv16<E, th::GELU_taylor, Tile, Stages>;
    using identity = conv16<E, th::Identity, Tile, Stages>;
    static bool loads() { return relu::loads() && gelu_tanh::loads() && identity::loads(); }
    static int run(cudaStream_t s, const mvrt_conv2d_params_t *p, int nb, int cp, const void *x, const void *w,
                   const float *bias, const void *r, void *y, char *msg, size_t msg_n)
    {
        if (p->activation == MVRT_ACT_RELU) return relu::run(s, p, nb, cp, x, w, bias, r, y, msg, msg_n);
        if (p->activation == MVRT_ACT_GELU_TANH) return gelu_tanh::run(s, p, nb, cp, x, w, bias, r, y, msg, msg_n);
        return identity::run(s, p, nb, cp, x, w, bias, r, y, msg, msg_n);
    }
};

/* Whether p's output (nb images) makes fewer 128 x 128 tiles than the
 * device has SMs (small batches: batch 1 to 10 for B's 28 x 28 convs;
 * false where the count cannot be read). */
static bool few_128_tiles(const mvrt_conv2d_params_t *p, int nb)
{
    const int sms = mvrt_cuda_current_sm_count();
    const int64_t m = (int64_t)nb * p->out_h * p->out_w;
    return ((m + 127) / 128) * ((p->out_channels + 127) / 128) < sms;
}

template <class E> struct kernels {
    static bool loads()
    {
        return acts<E, Tile128>::loads() && acts<E, Tile64, 4>::loads() && acts<E, Tile160>::loads() &&
               acts<E, Tile192>::loads() && acts<E, Tile224>::loads();
    }
    static int run(cudaStream_t s, const mvrt_conv2d_params_t *p, int nb, int cp, const void *x, const void *w,
                   const float *bias, const void *r, void *y, char *msg, size_t msg_n)
    {
        if (p->out_channels == 160) return acts<E, Tile160>::run(s, p, nb, cp, x, w, bias, r, y, msg, msg_n);
        if (p->out_channels == 192) return acts<E, Tile192>::run(s, p, nb, cp, x, w, bias, r, y, msg, msg_n);
        if (p->out_channels == 200) return acts<E, Tile224>::run(s, p, nb, cp, x, w, bias, r, y, msg, msg_n);
        if (p->out_channels == 128 || few_128_tiles(p, nb))
            return acts<E, Tile64, 4>::run(s, p, nb, cp, x, w, bias, r, y, msg, msg_n);
        return acts<E, Tile128>::run(s, p, nb, cp, x, w, bias, r, y, msg, msg_n);
    }
};

bool takes(const mvrt_conv2d_params_t *p, int t16, int nb, int cp)
{
    const bool act_ok = p->activation == MVRT_ACT_NONE || p->activation == MVRT_ACT_RELU ||
                        p->activation == MVRT_ACT_GELU_TANH;
    const bool k_ok = p->out_channels % 128 == 0 || p->out_channels == 160 || p->out_channels == 192 ||
                      p->out_channels == 200;
    return (t16 == MVRT_STORAGE16_BF16 || t16 == MVRT_STORAGE16_F16) && act_ok && k_ok && nb > 0 && cp % 8 == 0 &&
           p->kernel >= 1 && p->kernel <= 7 && p->stride >= 1 && p->pad >= 0 && p->out_h > 0 && p->out_w > 0;
}

} // namespace mvrt_conv16_sm90

using namespace mvrt_conv16_sm90;

extern "C" int mvrt_cuda_conv16_sm90_usable(void)
{
    return mvrt_cuda_device_is_sm90a() && kernels<cutlass::bfloat16_t>::loads() && kernels<cutlass::half_t>::loads();
}

extern "C" int mvrt_cuda_conv16_sm90(cudaStream_t s, const mvrt_conv2d_params_t *p, int t16, int nb, int cp,
                                     const void *x, const void *w, const float *bias, const void *residual, void *y,
                                     char *msg, size_t msg_n)
{
    if (!takes(p, t16, nb, cp)) return MVRT_GPU_GEMM_DECLINED;
    return t16 == MVRT_STORAGE16_F16 ? kernels<cutlass::half_t>::run(s, p, nb, cp, x, w, bias, residual, y, msg, msg_n)
                                     : kernels<cutlass::bfloat16_t>::run(s, p, nb, cp, x, w, bias, residual, y, msg,
                                                                         msg_n);
}

#else /* not built for sm_90a with CUTLASS's conv headers: the Sm80 kernels serve every 16-bit conv */

extern "C" int mvrt_cuda_conv16_sm90_usable(void) { return 0; }

extern "C" int mvrt_cuda_conv16_sm90(cudaStream_t s, const mvrt_conv2d_params_t *p, int t16, int nb, int cp,
                                     const void *x, const void *w, const float *bias, const void *residual, void *y,
                                     char *msg, size_t msg_n)
{
    (void)s, (void)p, (void)t16, (void)nb, (void)cp, (void)x, (void)w, (void)bias, (void)residual, (void)y;
    (void)msg, (void)msg_n;
    return MVRT_GPU_GEMM_DECLINED;
}

#endif
