/* conv2d (NCHW) as CUTLASS's implicit-GEMM convolution on tensor cores:
 * 3xTF32 for fp32 math (fp32 accuracy), plain TF32 for fast math, bf16 /
 * fp16 operands with fp32 accumulation for bf16 / fp16 math (contract:
 * cuda_conv_3xtf32.h).
 *
 * Why: the shared conv path (ops/conv2d/conv2d_gpu.cuh) writes the patch
 * matrix X_col (9x the input for 3x3) and reads it back for the GEMM, then
 * gathers the channel-major product into NCHW: on an H100 about 0.85 ms of
 * each 2.2 ms 160-channel conv of MambaVision-T at batch 256 is that
 * traffic. CUTLASS's implicit GEMM forms the patches in shared memory but
 * wants NHWC activations and KRSC filters, so per chunk of images this
 * transposes X to NHWC (one read and one write of the input), runs the
 * convolution into an NHWC scratch, and transposes the result into NCHW
 * with the bias (per output channel), the activation and the residual.
 * In bf16 / fp16 math the NHWC input and the KRSC filter are staged in
 * that type (the transposes round to nearest even: the same operands the
 * im2col + 16-bit GEMM path multiplied) and the NHWC result stays fp32.
 *
 * Chunks: at most MVRT_CONV_IMPLICIT_CAP bytes of NHWC input + output per
 * chunk (the scratch stays bounded at any batch); the filter in KRSC
 * follows them. */
#include "cuda_conv_3xtf32.h"
#include "cuda_conv16_sm90.h"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#ifdef MVRT_HAVE_CUTLASS
#include "cutlass/conv/conv2d_problem_size.h"
#include "cutlass/conv/conv3d_problem_size.h"
#include "cutlass/conv/kernel/default_conv2d_fprop.h"
#include "cutlass/conv/kernel/default_conv2d_fprop_with_broadcast.h"
#include "cutlass/conv/device/implicit_gemm_convolution.h"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/epilogue/thread/linear_combination_bias_elementwise.h"
#include "ops/common/gpu_activation.cuh" /* act_apply */

#define MVRT_CONV_IMPLICIT_CAP ((int64_t)256 << 20)

namespace {

using mvrt_mv_gpu::act_apply;

/* The chunk plan: a pure function of the sizes (scratch query and run). */
struct implicit_plan {
    int64_t chunk;      /* images per convolution */
    int64_t in_bytes;   /* NHWC input of a full chunk */
    int64_t out_bytes;  /* NHWC output of a full chunk */
    int64_t w_bytes;    /* KRSC filter */
    int64_t scratch;
};

int64_t align256(int64_t n) { return (n + 255) / 256 * 256; }

/* Below 8192 output positions per op (batch x Hout x Wout) the implicit
 * GEMM has too few 128-position tiles to fill an H100 and im2col + GEMM
 * (with split-K) is faster. Measured on an H100, MambaVision-T per batch,
 * every eligible conv implicit vs none: batch 1 1.55 vs 1.31 ms, 2 1.82 vs
 * 1.69, 4 2.25 vs 2.25, 8 2.92 vs 3.02, 64 13.8 vs 14.4, 256 51.8 vs 54.3.
 * MVRT_CUDA_CONV=implicit (tests) takes every eligible conv. */
bool forced()
{
    static const bool force = [] {
        const char *e = getenv("MVRT_CUDA_CONV");
        return e && strcmp(e, "implicit") == 0;
    }();
    return force;
}

static bool math16(int math) { return math == MVRT_MATH_BF16 || math == MVRT_MATH_FP16; }

/* The 16-bit map forms (x_nhwc16 / y_nhwc16): bf16 or fp16 math, y NHWC of that type,
 * output and (NHWC) input channels multiples of 4 (16-byte vectors where
 * both are multiples of 8, else 8-byte ones: MambaVision-L's 196
 * channels; an NCHW float input is staged with its channels padded to 8),
 * an epilogue
 * CUTLASS's bias-broadcast epilogue computes. Every size, batch 1
 * included: the graph has no other path for these forms. */
bool eligible_nhwc16(const mvrt_conv2d_params_t *p)
{
    const bool act_ok = p->activation == MVRT_ACT_NONE ||
                        (!p->residual && (p->activation == MVRT_ACT_RELU || p->activation == MVRT_ACT_GELU_TANH));
    /* y of the other 16-bit type (mv_op_params.h): only between two 16-bit maps, without a residual */
    const int t16 = p->math == MVRT_MATH_FP16 ? MVRT_STORAGE16_F16 : MVRT_STORAGE16_BF16;
    const bool y_ok = p->y_nhwc16 == t16 || (p->x_nhwc16 == t16 && !p->residual);
    return p->y_nhwc16 && y_ok && math16(p->math) && act_ok && p->batch > 0 && mvrt_conv2d_y_stored(p) % 4 == 0 &&
           (!p->x_nhwc16 || mvrt_conv2d_x_stored(p) % 4 == 0) && p->kernel >= 1 && p->stride >= 1 &&
           p->out_h > 0 && p->out_w > 0 && p->in_h * p->in_w <= INT_MAX / 8 && p->out_h * p->out_w <= INT_MAX / 8 &&
           mvrt_conv2d_x_stored(p) <= 65536 && mvrt_conv2d_y_stored(p) <= 65536;
}

bool eligible(const mvrt_conv2d_params_t *p)
{
    if (p->x_nhwc16 || p->y_nhwc16) return eligible_nhwc16(p);
    if (!forced() && p->batch * p->out_h * p->out_w < 8192) return false;
    /* 16-byte vectors along C and K (CUTLASS's alignment 4 floats, 8 16-bit
     * values of the operands; the fp32 output 4); int sizes */
    const int vec = math16(p->math) ? 8 : 4;
    return (p->math == MVRT_MATH_FP32 || p->math == MVRT_MATH_FAST || math16(p->math)) && p->batch > 0 &&
           p->in_channels % vec == 0 && p->out_channels % vec == 0 &&
           p->kernel >= 1 && p->stride >= 1 && p->out_h > 0 && p->out_w > 0 && p->in_h * p->in_w <= INT_MAX / 4 &&
           p->out_h * p->out_w <= INT_MAX / 4 && p->in_channels <= 65536 && p->out_channels <= 65536 &&
           !(p->kernel == 1 && p->stride == 1 && p->pad == 0);
}

/* Test knob MVRT_CUDA_CONV_CHUNK_MB: a smaller cap, so that tests run
 * several chunks on small batches. Read once (scratch query and run agree). */
int64_t chunk_cap_bytes()
{
    static const int64_t cap = [] {
        const char *e = getenv("MVRT_CUDA_CONV_CHUNK_MB");
        const long long mb = e ? atoll(e) : 0;
        return mb > 0 && mb < 256 ? (int64_t)mb << 20 : MVRT_CONV_IMPLICIT_CAP;
    }();
    return cap;
}

/* Input channels as staged and multiplied: an NCHW float input's padded
 * to a multiple of 8 (zeros) in the 16-bit forms, a 16-bit map's as
 * stored (x_map_channels). */
int64_t padded_in_channels(const mvrt_conv2d_params_t *p)
{
    return p->y_nhwc16 && !p->x_nhwc16 ? (p->in_channels + 7) / 8 * 8 : mvrt_conv2d_x_stored(p);
}

/* Whether y holds the other 16-bit type than the math's (see eligible_nhwc16). */
bool y_other_type(const mvrt_conv2d_params_t *p)
{
    return p->y_nhwc16 != (p->math == MVRT_MATH_FP16 ? MVRT_STORAGE16_F16 : MVRT_STORAGE16_BF16);
}

/* The 16-bit forms read x (NHWC 16-bit) and write y in place (a y of the
 * other 16-bit type first as the math's type, then converted where it
 * lies); only an NCHW float input is staged. Chunks keep CUTLASS's int
 * element indices (and the staged input within the cap). */
implicit_plan make_plan_nhwc16(const mvrt_conv2d_params_t *p)
{
    implicit_plan c{};
    const int64_t cp = padded_in_channels(p), kp = mvrt_conv2d_y_stored(p);
    const int64_t in_img = cp * p->in_h * p->in_w, out_img = kp * p->out_h * p->out_w;
    int64_t chunk = p->batch;
    if (!p->x_nhwc16) {
        chunk = chunk_cap_bytes() / (in_img * 2);
        if (chunk < 1) chunk = 1;
        if (chunk > p->batch) chunk = p->batch;
    }
    while (chunk > 1 && (chunk * in_img > INT_MAX || chunk * out_img > INT_MAX)) chunk /= 2;
    c.chunk = chunk;
    c.in_bytes = p->x_nhwc16 ? 0 : align256(chunk * in_img * 2);
    c.out_bytes = 0;
    /* filters staged per run unless the graph prepared them (weight16) */
    c.w_bytes = p->weight16 ? 0 : align256(kp * cp * p->kernel * p->kernel * 2) + align256(kp * 4);
    c.scratch = c.in_bytes + c.w_bytes;
    return c;
}

implicit_plan make_plan(const mvrt_conv2d_params_t *p)
{
    if (p->x_nhwc16 || p->y_nhwc16) return make_plan_nhwc16(p);
    implicit_plan c{};
    const int64_t operand_bytes = math16(p->math) ? 2 : 4; /* staged input and filter */
    const int64_t in_img = p->in_channels * p->in_h * p->in_w * operand_bytes;
    const int64_t out_img = p->out_channels * p->out_h * p->out_w * 4;
    int64_t chunk = chunk_cap_bytes() / (in_img + out_img);
    if (chunk < 1) chunk = 1;
    if (chunk > p->batch) chunk = p->batch;
    if (chunk > 65535) chunk = 65535; /* grid z of the transposes */
    /* CUTLASS indexes a tensor's elements with int */
    while (chunk > 1 && (chunk * in_img / operand_bytes > INT_MAX || chunk * out_img / 4 > INT_MAX)) chunk /= 2;
    c.chunk = chunk;
    c.in_bytes = align256(chunk * in_img);
    c.out_bytes = align256(chunk * out_img);
    c.w_bytes = align256(p->out_channels * p->in_channels * p->kernel * p->kernel * operand_bytes);
    c.scratch = c.in_bytes + c.out_bytes + c.w_bytes;
    return c;
}

/* Per image, src (rows, cols) -> (cols, rows) through 32x32 shared tiles
 * (both sides coalesced); `store` writes element (col, row) of the
 * transposed image. Grid: x over column tiles, y over row tiles, z over
 * images. */
template <typename Store>
__global__ void __launch_bounds__(256) transpose_kernel(const float *__restrict__ src, int rows, int cols, Store store)
{
    __shared__ float tile[32][33];
    const int64_t img = blockIdx.z;
    const float *s = src + img * rows * (int64_t)cols;
    const int col0 = blockIdx.x * 32, row0 = blockIdx.y * 32;
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int row = row0 + r, col = col0 + threadIdx.x;
        if (row < rows && col < cols) tile[r][threadIdx.x] = s[(int64_t)row * cols + col];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int col = col0 + r, row = row0 + threadIdx.x;
        if (row < rows && col < cols) store((img * cols + col) * (int64_t)rows + row, col, tile[threadIdx.x][r]);
    }
}

/* NCHW -> NHWC: a plain store */
struct store_plain {
    float *dst;
    __device__ void operator()(int64_t o, int, float v) const { dst[o] = v; }
};

/* NCHW -> NHWC in 16 bits, E bf16 or half (round to nearest even) */
template <typename E> struct store16 {
    E *dst;
    __device__ void operator()(int64_t o, int, float v) const { dst[o] = E(v); }
};

/* NHWC -> NCHW: y = act(v + bias[k]) + residual, k the output channel */
struct store_epilogue {
    float *y;
    const float *bias, *residual;
    int act;
    __device__ void operator()(int64_t o, int k, float v) const
    {
        v = act_apply(act, v + (bias ? bias[k] : 0.f));
        if (residual) v += residual[o];
        y[o] = v;
    }
};

template <typename Store>
cudaError_t launch_transpose(const float *src, int rows, int cols, int64_t images, Store store, cudaStream_t s)
{
    transpose_kernel<<<dim3((cols + 31) / 32, (rows + 31) / 32, (unsigned)images), dim3(32, 8), 0, s>>>(src, rows, cols,
                                                                                                         store);
    return cudaGetLastError();
}

/* (K, C, R, S) -> (K, R, S, C), as T (float, or bf16 / half rounded to nearest even) */
template <typename T>
__global__ void __launch_bounds__(256) kcrs_to_krsc_kernel(const float *__restrict__ w, T *__restrict__ wt, int K,
                                                           int C, int RS)
{
    const int64_t n = (int64_t)K * C * RS;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = i / ((int64_t)C * RS), rem = i % ((int64_t)C * RS);
        const int64_t c = rem / RS, rs = rem % RS;
        wt[(k * RS + rs) * C + c] = T(w[i]);
    }
}

/* Tiles: GEMM M = output positions, N = output channels; 32-wide N tiles
 * for channel counts that are not multiples of 64 (80, 160 in
 * MambaVision: 64-wide tiles would pad 37.5 % / 17 % away). K slices of 16
 * with 4-5 stages beat 32 with 3 (probe on an H100, 3xTF32, ms per conv:
 * 80->80 56x56 b64 0.603 -> 0.471, 160->160 28x28 b128 0.798 -> 0.750,
 * 80->160 s2 b64 0.275 -> 0.200, 160->320 s2 b128 0.387 -> 0.362 with
 * 128x64x16 s5). N tiles of 40, 80 or 96 compile but gave wrong results in
 * that probe: only power-of-two widths are used. */
/* One CUTLASS Sm80 implicit-GEMM convolution: operands of element T (NHWC
 * activations, KRSC filter), fp32 accumulation and fp32 NHWC output, on
 * the tensor-core instruction INSTR with ALIGN-element vector loads.
 * `what` names the arithmetic in error messages. */
template <typename T, int TM, int TN, int TK, int WM, int WN, int STAGES, typename MathOp, int INSTR_K, int ALIGN>
struct conv_implicit {
    using Kernel = typename cutlass::conv::kernel::DefaultConv2dFprop<
        T, cutlass::layout::TensorNHWC, T, cutlass::layout::TensorNHWC, float, cutlass::layout::TensorNHWC, float,
        cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, cutlass::gemm::GemmShape<TM, TN, TK>,
        cutlass::gemm::GemmShape<WM, WN, TK>, cutlass::gemm::GemmShape<16, 8, INSTR_K>,
        cutlass::epilogue::thread::LinearCombination<float, 4, float, float>,
        cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, STAGES, MathOp,
        cutlass::conv::IteratorAlgorithm::kOptimized, cutlass::conv::StrideSupport::kStrided, ALIGN, ALIGN>::Kernel;
    using Conv = cutlass::conv::device::ImplicitGemmConvolution<Kernel>;

    static int run(cudaStream_t s, const mvrt_conv2d_params_t *p, int64_t nb, const T *xt, const T *wt, float *yt,
                   const char *what, char *msg, size_t msg_n)
    {
        using L = cutlass::layout::TensorNHWC;
        const int n = (int)nb, h = (int)p->in_h, w = (int)p->in_w, c = (int)p->in_channels;
        const int k = (int)p->out_channels, r = p->kernel, q = (int)p->out_w, pp = (int)p->out_h;
        cutlass::conv::Conv2dProblemSize size(n, h, w, c, k, r, r, pp, q, p->pad, p->pad, p->stride, p->stride, 1,
                                              1, cutlass::conv::Mode::kCrossCorrelation);
        typename Conv::Arguments args(
            size, cutlass::TensorRef<T, L>(const_cast<T *>(xt), L::packed({n, h, w, c})),
            cutlass::TensorRef<T, L>(const_cast<T *>(wt), L::packed({k, r, r, c})),
            cutlass::TensorRef<float, L>(yt, L::packed({n, pp, q, k})),
            cutlass::TensorRef<float, L>(yt, L::packed({n, pp, q, k})), {1.f, 0.f});
        Conv op;
        if (op.can_implement(args) != cutlass::Status::kSuccess) return MVRT_GPU_GEMM_DECLINED;
        if (Conv::get_workspace_size(args) != 0) return MVRT_GPU_GEMM_DECLINED;
        cutlass::Status st = op.initialize(args, nullptr, s);
        if (st == cutlass::Status::kSuccess) st = op(s);
        if (st != cutlass::Status::kSuccess) {
            const cudaError_t e = cudaGetLastError();
            snprintf(msg, msg_n, "%s implicit-GEMM conv2d (%d images, %dx%dx%d -> %d, k %d, stride %d): %s (%s)", what,
                     n, c, h, w, k, r, p->stride, cutlassGetStatusString(st), cudaGetErrorName(e));
            return MVRT_GPU_GEMM_FAILED;
        }
        return MVRT_GPU_GEMM_OK;
    }
};

/* Tiles: GEMM M = output positions, N = output channels; 32-wide N tiles
 * for channel counts that are not multiples of 64 (80, 160 in
 * MambaVision: 64-wide tiles would pad 37.5 % / 17 % away). K slices of 16
 * with 4-5 stages beat 32 with 3 (probe on an H100, 3xTF32, ms per conv:
 * 80->80 56x56 b64 0.603 -> 0.471, 160->160 28x28 b128 0.798 -> 0.750,
 * 80->160 s2 b64 0.275 -> 0.200, 160->320 s2 b128 0.387 -> 0.362 with
 * 128x64x16 s5). N tiles of 40, 80 or 96 compile but gave wrong results in
 * that probe: only power-of-two widths are used. */
template <int TM, int TN, int TK, int WM, int WN, int STAGES, typename MathOp>
using conv_tf32 = conv_implicit<float, TM, TN, TK, WM, WN, STAGES, MathOp, 8, 4>;
/* 16-bit operands (E: bf16 or half) on the m16n8k16 instruction of that
 * type, 8-element (16-byte) loads */
template <typename E, int TM, int TN, int TK, int WM, int WN, int STAGES>
using conv16 = conv_implicit<E, TM, TN, TK, WM, WN, STAGES, cutlass::arch::OpMultiplyAdd, 16, 8>;

/* bf16 tiles, from MambaVision-T at batch 256 on an H200 (ms per op group,
 * 2026-11-27; 128x32x32 s4, the fp32 path's choice for 80 / 160 channels,
 * gave 20.67 ms for the whole model against 18.19-18.23 for the two
 * below): 128x128x32 s4 took 80->80 56x56 (x2) 1.83 ms, 32->80 s2 0.69,
 * 80->160 s2 0.51; 256x64x32 s3 took 160->160 28x28 (x6) 2.94 ms against
 * 3.27 for 128x128. So: more than 128 output channels at stride 1 ->
 * 256x64, else 128x128 (the padding of 80 channels to 128 costs less than
 * narrower tiles' shared-memory traffic). fp16 takes the same tiles. */
template <typename E>
int run_conv16(cudaStream_t s, const mvrt_conv2d_params_t *p, int64_t nb, const E *xt, const E *wt, float *yt,
               char *msg, size_t msg_n)
{
    const char *what = std::is_same<E, cutlass::half_t>::value ? "fp16" : "bf16";
    if (p->out_channels > 128 && p->stride == 1)
        return conv16<E, 256, 64, 32, 64, 64, 3>::run(s, p, nb, xt, wt, yt, what, msg, msg_n);
    return conv16<E, 128, 128, 32, 64, 64, 4>::run(s, p, nb, xt, wt, yt, what, msg, msg_n);
}

int run_conv(cudaStream_t s, const mvrt_conv2d_params_t *p, int64_t nb, const float *xt, const float *wt, float *yt,
             char *msg, size_t msg_n)
{
    /* fast math: plain TF32 (operands rounded to TF32, one product), where
     * wide tiles win despite the padding of 80 channels to 128 (probe on an
     * H100, ms: 80->80 56x56 b64 128x32x16 s4 0.274, 128x128x32 s3 0.218;
     * 160->160 28x28 b128 0.482 vs 0.332; 32->80 s2 b64 0.197 vs 0.100;
     * 160->320 s2 b128 128x64x16 s5 0.179 vs 0.148) */
    using f3 = cutlass::arch::OpMultiplyAddFastF32;
    using f1 = cutlass::arch::OpMultiplyAdd;
    if (p->math == MVRT_MATH_FAST)
        return conv_tf32<128, 128, 32, 64, 64, 3, f1>::run(s, p, nb, xt, wt, yt, "TF32", msg, msg_n);
    if (p->out_channels % 64 == 0)
        return conv_tf32<128, 64, 16, 64, 32, 5, f3>::run(s, p, nb, xt, wt, yt, "3xTF32", msg, msg_n);
    return conv_tf32<128, 32, 16, 32, 32, 4, f3>::run(s, p, nb, xt, wt, yt, "3xTF32", msg, msg_n);
}

/* ---- the 16-bit map forms ---- */

/* NCHW floats -> NHWC 16-bit (E) with cp >= C channels (zeros past C),
 * one thread per pixel: reads coalesced along the pixels of each channel. */
template <typename E>
__global__ void __launch_bounds__(256) nchw_to_nhwc16_padded_kernel(const float *__restrict__ x, E *__restrict__ xt,
                                                                     int C, int cp, int hw, int64_t pixels)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < pixels;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t n = i / hw, pix = i % hw;
        for (int c = 0; c < cp; c++)
            xt[i * cp + c] = E(c < C ? x[(n * C + c) * hw + pix] : 0.f);
    }
}

/* (K, C, R, S) floats -> (kp, R, S, cp) 16-bit E (zeros past K and C),
 * and the bias (K floats, or zeros; zeros past K) into a 32-byte aligned
 * copy of kp floats for the epilogue's vector loads. */
template <typename E>
__global__ void __launch_bounds__(256) stage_filter16_kernel(const float *__restrict__ w, const float *__restrict__ bias,
                                                             E *__restrict__ wt,
                                                             float *__restrict__ bias_out, int K, int kp, int C,
                                                             int cp, int RS)
{
    const int64_t n = (int64_t)kp * RS * cp;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = i / ((int64_t)RS * cp), rem = i % ((int64_t)RS * cp);
        const int64_t rs = rem / cp, c = rem % cp;
        wt[i] = E(k < K && c < C ? w[(k * C + c) * RS + rs] : 0.f);
        if (i < kp) bias_out[i] = bias && i < K ? bias[i] : 0.f;
    }
}

/* n values of one 16-bit type converted to the other where they lie
 * (rounded to nearest even), 8 per thread where n allows: a conv's output
 * map of the other type (y_other_type), written first in the math's. */
template <typename Src, typename Dst>
__global__ void __launch_bounds__(256) convert16_in_place_kernel(void *map, int64_t n)
{
    static_assert(sizeof(Src) == 2 && sizeof(Dst) == 2, "16-bit types");
    uint16_t *m = (uint16_t *)map;
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * 8; i < n;
         i += (int64_t)gridDim.x * blockDim.x * 8) {
        if (i + 8 <= n && ((uintptr_t)(m + i) & 15) == 0) {
            uint4 v = *(const uint4 *)(m + i);
            uint16_t *h = (uint16_t *)&v;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const Dst d(float(cutlass::platform::bit_cast<Src>(h[j])));
                h[j] = cutlass::platform::bit_cast<uint16_t>(d);
            }
            *(uint4 *)(m + i) = v;
        } else {
            for (int64_t j = i; j < i + 8 && j < n; j++)
                m[j] = cutlass::platform::bit_cast<uint16_t>(Dst(float(cutlass::platform::bit_cast<Src>(m[j]))));
        }
    }
}

/* One 16-bit implicit-GEMM conv (E: bf16 or half) with the whole
 * epilogue in CUTLASS's bias-broadcast epilogue: y = Act(acc + bias + beta
 * * residual), stored as E NHWC (Act: Identity, ReLu or GELU_taylor,
 * PyTorch's tanh GELU; beta 1 with a residual, else the residual is not
 * read). */
template <typename E, int TM, int TN, int TK, int WM, int WN, int STAGES, typename Act, int ALIGN>
struct conv16_fused {
    using bf16 = E; /* the 16-bit type of every operand and of y */
    using OutOp = cutlass::epilogue::thread::LinearCombinationBiasElementwise<bf16, float, float, bf16, bf16, ALIGN,
                                                                              Act, cutlass::plus<float>, false, float>;
    using Kernel = typename cutlass::conv::kernel::DefaultConv2dFpropWithBroadcast<
        bf16, cutlass::layout::TensorNHWC, bf16, cutlass::layout::TensorNHWC, bf16, cutlass::layout::TensorNHWC, float,
        cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, cutlass::gemm::GemmShape<TM, TN, TK>,
        cutlass::gemm::GemmShape<WM, WN, TK>, cutlass::gemm::GemmShape<16, 8, 16>, OutOp,
        cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, STAGES, cutlass::arch::OpMultiplyAdd,
        cutlass::conv::IteratorAlgorithm::kOptimized, cutlass::conv::StrideSupport::kStrided, ALIGN, ALIGN>::Kernel;
    using Conv = cutlass::conv::device::ImplicitGemmConvolution<Kernel>;

    static int run(cudaStream_t s, const mvrt_conv2d_params_t *p, int nb, int cp, const bf16 *x, const bf16 *wt,
                   const float *bias, const bf16 *residual, bf16 *y, char *msg, size_t msg_n)
    {
        using L = cutlass::layout::TensorNHWC;
        const int h = (int)p->in_h, w = (int)p->in_w;
        const int k = (int)p->out_channels, r = p->kernel, q = (int)p->out_w, pp = (int)p->out_h;
        cutlass::conv::Conv2dProblemSize size(nb, h, w, cp, k, r, r, pp, q, p->pad, p->pad, p->stride, p->stride, 1,
                                              1, cutlass::conv::Mode::kCrossCorrelation);
        const cutlass::TensorRef<bf16, L> out(y, L::packed({nb, pp, q, k}));
        typename Conv::Arguments args(
            size, cutlass::TensorRef<bf16, L>(const_cast<bf16 *>(x), L::packed({nb, h, w, cp})),
            cutlass::TensorRef<bf16, L>(const_cast<bf16 *>(wt), L::packed({k, r, r, cp})),
            residual ? cutlass::TensorRef<bf16, L>(const_cast<bf16 *>(residual), L::packed({nb, pp, q, k})) : out,
            out, typename OutOp::Params(1.f, residual ? 1.f : 0.f), cutlass::conv::SplitKMode::kSerial,
            const_cast<float *>(bias), nullptr, 0, 0);
        Conv op;
        cutlass::Status st = op.can_implement(args);
        if (st == cutlass::Status::kSuccess && Conv::get_workspace_size(args) != 0) st = cutlass::Status::kErrorInternal;
        if (st == cutlass::Status::kSuccess) st = op.initialize(args, nullptr, s);
        if (st == cutlass::Status::kSuccess) st = op(s);
        if (st != cutlass::Status::kSuccess) {
            const cudaError_t e = cudaGetLastError();
            snprintf(msg, msg_n, "16-bit NHWC implicit-GEMM conv2d (%d images, %dx%dx%d -> %d, k %d, stride %d): %s (%s)",
                     nb, cp, h, w, k, r, p->stride, cutlassGetStatusString(st), cudaGetErrorName(e));
            return MVRT_GPU_GEMM_FAILED;
        }
        return MVRT_GPU_GEMM_OK;
    }
};

/* Tiles as run_conv16's (measured there); the activation picks the
 * epilogue. */
template <typename E, int TM, int TN, int TK, int WM, int WN, int STAGES, int ALIGN>
int run_fused_act(cudaStream_t s, const mvrt_conv2d_params_t *p, int nb, int cp, const E *x, const E *wt,
                  const float *bias, const E *r, E *y, char *msg, size_t msg_n)
{
    namespace th = cutlass::epilogue::thread;
    if (p->activation == MVRT_ACT_RELU)
        return conv16_fused<E, TM, TN, TK, WM, WN, STAGES, th::ReLu<float>, ALIGN>::run(s, p, nb, cp, x, wt, bias, r, y,
                                                                                       msg, msg_n);
    if (p->activation == MVRT_ACT_GELU_TANH)
        return conv16_fused<E, TM, TN, TK, WM, WN, STAGES, th::GELU_taylor<float>, ALIGN>::run(s, p, nb, cp, x, wt, bias,
                                                                                              r, y, msg, msg_n);
    return conv16_fused<E, TM, TN, TK, WM, WN, STAGES, th::Identity<float>, ALIGN>::run(s, p, nb, cp, x, wt, bias, r, y,
                                                                                       msg, msg_n);
}

/* Whether a 16-bit map conv has so few output tiles (at most one 128 x 128
 * tile per two SMs: batch 1) for much work (at least 2^28 products) that
 * 64 x 64 tiles serve it instead: four times the CTAs, each with a
 * quarter of the products. Less work is launch-bound on any tile. The
 * caller asks only where no multiple of 128 channels comes out: there the
 * sm_90a kernels' 64x128 / 128x128 tiles stay faster at batch 1.
 * MambaVision at batch 1, bf16, H200, one call (2026-11-29), ms for six
 * convs, old tile -> 64 x 64:
 *   L 392->392 28x28 (Sm80 256x64, 28 CTAs)      0.333 -> 0.195
 *   L 196->196 56x56 (stored 200; sm_90a 128x224) 0.231 -> 0.161
 *   B 128->128 56x56 (sm_90a 64x128)              0.071 -> 0.080
 *   B 256->256 28x28 (sm_90a 128x128)             0.109 -> 0.120
 * whole forwards: L 1.831 -> 1.566 ms (fp16 1.760 -> 1.509); T and S have
 * under 2^28 products per conv; batch 256 has hundreds of tiles. */
static bool few_tiles(const mvrt_conv2d_params_t *p, int nb, int cp, int kp)
{
    const int sms = mvrt_cuda_current_sm_count();
    const int64_t m = (int64_t)nb * p->out_h * p->out_w;
    const double products = (double)m * kp * cp * p->kernel * p->kernel;
    return ((m + 127) / 128) * ((kp + 127) / 128) * 2 <= sms && products >= (double)(1 << 28);
}

/* E: cutlass::bfloat16_t or cutlass::half_t, the math's type (x's, and
 * y's unless y_other_type: then each chunk's output is rounded to E where
 * it lies, then to y's type, as mv_op_params.h states); sm90: the
 * sm_90a kernels run the chunks they take (cuda_conv16_sm90.h) */
template <typename E>
int run_conv_nhwc16(cudaStream_t s, const mvrt_conv2d_params_t *p, void *scratch, bool sm90, char *msg,
                    size_t msg_n)
{
    using bf16 = E;
    const implicit_plan c = make_plan_nhwc16(p);
    const int C = (int)p->in_channels, cp = (int)padded_in_channels(p), K = (int)p->out_channels;
    const int kp = (int)mvrt_conv2d_y_stored(p); /* y's stored channels: the GEMM's N, zero filters past K */
    const int RS = p->kernel * p->kernel, HW = (int)(p->in_h * p->in_w), PQ = (int)(p->out_h * p->out_w);
    bf16 *xt = (bf16 *)scratch;
    const bool y_other = y_other_type(p);
    const bf16 *wt = (const bf16 *)p->weight16;
    const float *bias = p->bias_stored;
    if (!wt) { /* not prepared by a graph: staged here, every run */
        bf16 *w_staged = (bf16 *)((char *)scratch + c.in_bytes);
        float *bias_staged = (float *)((char *)scratch + c.in_bytes + align256(kp * (int64_t)cp * RS * 2));
        const int64_t wn = kp * (int64_t)cp * RS;
        stage_filter16_kernel<<<(unsigned)((wn + 255) / 256 < 4096 ? (wn + 255) / 256 : 4096), 256, 0, s>>>(
            p->weight, p->bias, w_staged, bias_staged, K, kp, C, cp, RS);
        wt = w_staged, bias = bias_staged;
    }
    /* the kernels below multiply kp filters (the padded ones give zeros) */
    mvrt_conv2d_params_t padded = *p;
    padded.out_channels = kp;
    p = &padded;
    cudaError_t e = cudaGetLastError();
    for (int64_t b0 = 0; b0 < p->batch && e == cudaSuccess; b0 += c.chunk) {
        const int nb = (int)(p->batch - b0 < c.chunk ? p->batch - b0 : c.chunk);
        const bf16 *x;
        if (p->x_nhwc16) {
            x = (const bf16 *)(const void *)p->x + b0 * (int64_t)HW * cp;
        } else {
            const int64_t pixels = (int64_t)nb * HW;
            nchw_to_nhwc16_padded_kernel<<<(unsigned)((pixels + 255) / 256 < 65535 ? (pixels + 255) / 256 : 65535), 256,
                                           0, s>>>(p->x + b0 * (int64_t)C * HW, xt, C, cp, HW, pixels);
            if ((e = cudaGetLastError()) != cudaSuccess) break;
            x = xt;
        }
        const int64_t off = b0 * (int64_t)PQ * kp;
        bf16 *y = (bf16 *)(void *)p->y + off; /* of type E, also where y_other (converted below) */
        const bf16 *r = p->residual ? (const bf16 *)(const void *)p->residual + off : nullptr;
        const bool few = cp % 8 == 0 && kp % 8 == 0 && kp % 128 != 0 && few_tiles(p, nb, cp, kp);
        int rc = MVRT_GPU_GEMM_DECLINED;
        if (sm90 && !few) {
            const int t16 = std::is_same<E, cutlass::half_t>::value ? MVRT_STORAGE16_F16 : MVRT_STORAGE16_BF16;
            rc = mvrt_cuda_conv16_sm90(s, p, t16, nb, cp, x, wt, bias, r, y, msg, msg_n);
            if (rc != MVRT_GPU_GEMM_OK && rc != MVRT_GPU_GEMM_DECLINED) return MVRT_GPU_GEMM_FAILED;
        }
        /* 8-byte vectors (one tile) where a channel count is not a
         * multiple of 8 (not measured against other tiles) */
        if (rc == MVRT_GPU_GEMM_DECLINED)
            rc = cp % 8 != 0 || kp % 8 != 0
                     ? run_fused_act<E, 128, 128, 32, 64, 64, 4, 4>(s, p, nb, cp, x, wt, bias, r, y, msg, msg_n)
                 : few ? run_fused_act<E, 64, 64, 32, 32, 32, 4, 8>(s, p, nb, cp, x, wt, bias, r, y, msg, msg_n)
                 : p->out_channels > 128 && p->stride == 1
                     ? run_fused_act<E, 256, 64, 32, 64, 64, 3, 8>(s, p, nb, cp, x, wt, bias, r, y, msg, msg_n)
                     : run_fused_act<E, 128, 128, 32, 64, 64, 4, 8>(s, p, nb, cp, x, wt, bias, r, y, msg, msg_n);
        if (rc != MVRT_GPU_GEMM_OK) return MVRT_GPU_GEMM_FAILED; /* no other path serves these forms */
        if (y_other) {
            const int64_t n = (int64_t)nb * PQ * kp;
            const unsigned blocks = (unsigned)((n + 2047) / 2048 < 65535 ? (n + 2047) / 2048 : 65535);
            if (std::is_same<E, cutlass::half_t>::value)
                convert16_in_place_kernel<cutlass::half_t, cutlass::bfloat16_t><<<blocks, 256, 0, s>>>(y, n);
            else
                convert16_in_place_kernel<cutlass::bfloat16_t, cutlass::half_t><<<blocks, 256, 0, s>>>(y, n);
            e = cudaGetLastError();
        }
    }
    if (e != cudaSuccess) {
        snprintf(msg, msg_n, "16-bit NHWC implicit-GEMM conv2d: launch: %s: %s", cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return MVRT_GPU_GEMM_FAILED;
    }
    return MVRT_GPU_GEMM_OK;
}

} // namespace

extern "C" int64_t mvrt_cuda_conv_3xtf32_scratch(const mvrt_conv2d_params_t *p)
{
    return eligible(p) ? make_plan(p).scratch : -1;
}

static int conv_3xtf32(cudaStream_t s, const mvrt_conv2d_params_t *p, void *scratch, bool sm90, char *msg,
                       size_t msg_n)
{
    if (!eligible(p) || (!scratch && make_plan(p).scratch > 0)) return MVRT_GPU_GEMM_DECLINED;
    if (p->x_nhwc16 || p->y_nhwc16)
        return p->math == MVRT_MATH_FP16 ? run_conv_nhwc16<cutlass::half_t>(s, p, scratch, sm90, msg, msg_n)
                                         : run_conv_nhwc16<cutlass::bfloat16_t>(s, p, scratch, sm90, msg, msg_n);
    const implicit_plan c = make_plan(p);
    using bf16 = cutlass::bfloat16_t;
    using f16 = cutlass::half_t;
    const bool b16 = p->math == MVRT_MATH_BF16, h16 = p->math == MVRT_MATH_FP16;
    float *xt = (float *)scratch;
    float *yt = (float *)((char *)scratch + c.in_bytes);
    float *wt = (float *)((char *)scratch + c.in_bytes + c.out_bytes);
    const int C = (int)p->in_channels, K = (int)p->out_channels, RS = p->kernel * p->kernel;
    const int HW = (int)(p->in_h * p->in_w), PQ = (int)(p->out_h * p->out_w);
    const unsigned wblocks =
        (unsigned)((K * (int64_t)C * RS + 255) / 256 < 4096 ? (K * (int64_t)C * RS + 255) / 256 : 4096);
    if (b16)
        kcrs_to_krsc_kernel<<<wblocks, 256, 0, s>>>(p->weight, (bf16 *)wt, K, C, RS);
    else if (h16)
        kcrs_to_krsc_kernel<<<wblocks, 256, 0, s>>>(p->weight, (f16 *)wt, K, C, RS);
    else
        kcrs_to_krsc_kernel<<<wblocks, 256, 0, s>>>(p->weight, wt, K, C, RS);
    cudaError_t e = cudaGetLastError();
    for (int64_t b0 = 0; b0 < p->batch && e == cudaSuccess; b0 += c.chunk) {
        const int64_t nb = p->batch - b0 < c.chunk ? p->batch - b0 : c.chunk;
        const float *x = p->x + b0 * (int64_t)C * HW;
        e = b16   ? launch_transpose(x, C, HW, nb, store16<bf16>{(bf16 *)xt}, s)
            : h16 ? launch_transpose(x, C, HW, nb, store16<f16>{(f16 *)xt}, s)
                  : launch_transpose(x, C, HW, nb, store_plain{xt}, s);
        if (e != cudaSuccess) break;
        const int rc = b16   ? run_conv16<bf16>(s, p, nb, (const bf16 *)xt, (const bf16 *)wt, yt, msg, msg_n)
                       : h16 ? run_conv16<f16>(s, p, nb, (const f16 *)xt, (const f16 *)wt, yt, msg, msg_n)
                             : run_conv(s, p, nb, xt, wt, yt, msg, msg_n);
        if (rc != MVRT_GPU_GEMM_OK) {
            /* declining is decided on the first chunk only (equal shapes
             * but the last chunk's image count, which CUTLASS does not
             * restrict): nothing has been written to y yet then */
            if (rc == MVRT_GPU_GEMM_DECLINED && b0 > 0) {
                snprintf(msg, msg_n, "3xTF32 implicit-GEMM conv2d declined a last chunk of %lld images",
                         (long long)nb);
                return MVRT_GPU_GEMM_FAILED;
            }
            return rc;
        }
        const int64_t off = b0 * (int64_t)K * PQ;
        e = launch_transpose(yt, PQ, K, nb,
                             store_epilogue{p->y + off, p->bias, p->residual ? p->residual + off : nullptr, p->activation},
                             s);
    }
    if (e != cudaSuccess) {
        snprintf(msg, msg_n, "3xTF32 implicit-GEMM conv2d: launch: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
        return MVRT_GPU_GEMM_FAILED;
    }
    return MVRT_GPU_GEMM_OK;
}

extern "C" int mvrt_cuda_conv_3xtf32(cudaStream_t s, const mvrt_conv2d_params_t *p, void *scratch, char *msg,
                                     size_t msg_n)
{
    return conv_3xtf32(s, p, scratch, false, msg, msg_n);
}

extern "C" int mvrt_cuda_conv_3xtf32_sm90(cudaStream_t s, const mvrt_conv2d_params_t *p, void *scratch, char *msg,
                                          size_t msg_n)
{
    return conv_3xtf32(s, p, scratch, true, msg, msg_n);
}

#else /* no CUTLASS: the shared im2col path serves every conv */

extern "C" int64_t mvrt_cuda_conv_3xtf32_scratch(const mvrt_conv2d_params_t *p)
{
    (void)p;
    return -1;
}

extern "C" int mvrt_cuda_conv_3xtf32(cudaStream_t s, const mvrt_conv2d_params_t *p, void *scratch, char *msg,
                                     size_t msg_n)
{
    (void)s, (void)p, (void)scratch, (void)msg, (void)msg_n;
    return MVRT_GPU_GEMM_DECLINED;
}

extern "C" int mvrt_cuda_conv_3xtf32_sm90(cudaStream_t s, const mvrt_conv2d_params_t *p, void *scratch, char *msg,
                                          size_t msg_n)
{
    (void)s, (void)p, (void)scratch, (void)msg, (void)msg_n;
    return MVRT_GPU_GEMM_DECLINED;
}

#endif
