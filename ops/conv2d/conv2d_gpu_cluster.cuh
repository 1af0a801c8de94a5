/* Convolutions of few output tiles (batch 1) in one kernel: an implicit
 * GEMM whose K is split across a thread-block cluster and summed through
 * distributed shared memory (NVIDIA sm_90+ only; included by
 * backends/gpu_common/mv_gpu_launch.cu after linear_gpu_cluster.cuh,
 * whose staging, fragment product and cluster finish it shares; HIP and
 * older targets compile an empty kernel and never launch it).
 *
 * Why: at batch 1 a MambaVision conv (80..640 channels, 56x56..7x7) has
 * 10..98 output tiles of 64 x 64, so the im2col path ran three kernels per
 * conv: im2col into a scratch, a split vendor GEMM and a summing kernel
 * (20-28 us per conv on an H100 by ncu, ~280 us of the 1.14 ms
 * MambaVision-T batch-1 forward, 2026-11-26). Here the S blocks of one
 * output tile (64 output channels x 64 output positions of one image)
 * form a cluster along grid z; block r walks its K slice [r ks, (r+1) ks)
 * of the patch dimension (k = (c kernel + p) kernel + q, the weight's
 * layout) in chunks of MVRT_CCONV_KC, double-buffered by cp.async:
 *   A = weight rows (output channel, k), k contiguous: 16-byte pieces
 *       where K is a multiple of 4, else 4-byte;
 *   B = the patch matrix gathered straight from x (4-byte pieces, zero
 *       filled in the padding): a per-block table gives each k of the
 *       slice its offset c H W + p W + q and (p, q), and each thread keeps
 *       one output position, so a gathered element costs a table read
 *       (a broadcast), two compares and one copy.
 * Each chunk's 3xTF32 products are accumulated by mma.sync in their own
 * registers and then added to an fp32 sum: a long mma accumulation chain
 * rounds less carefully than fp32 adds (measured on the cluster GEMM:
 * one accumulator over 320-504 k gave 4-5x cuBLAS SGEMM's error), and
 * the chunks keep the chain at 32 k. The finish (bias per output channel,
 * activation, residual) is the cluster GEMM's, in slice order: bitwise
 * reproducible, no workspace, no scratch. */
#ifndef MVRT_OPS_CONV2D_GPU_CLUSTER_CUH
#define MVRT_OPS_CONV2D_GPU_CLUSTER_CUH

#include "../linear/linear_gpu_cluster.cuh"
#include "../common/mv_op_params.h"

namespace mvrt_mv_gpu {

#define MVRT_CCONV_KC MVRT_CGEMM_KC /* k per staged chunk (cgemm_chunked_product) */
/* k per slice: longer chains ran no faster than im2col + split GEMM (H100,
 * ncu: 320 -> 640 channels at 14x14, 360-long slices, 25.8 vs 25.0 us) */
#define MVRT_CCONV_KS_MAX 192
#define MVRT_CCONV_SM_BLOCKS 4 /* __launch_bounds__ below: <= 128 registers (the plan takes at most 3) */
/* one chunk: A 64 rows of cgemm_kstride(KC) words, B KC rows of MVRT_CGEMM_WIDE */
#define MVRT_CCONV_A_WORDS (MVRT_CGEMM_TILE * cgemm_kstride(MVRT_CCONV_KC))
#define MVRT_CCONV_STAGE_WORDS (MVRT_CCONV_A_WORDS + MVRT_CCONV_KC * MVRT_CGEMM_WIDE)
/* two chunk buffers, reused for the partial tile */
#define MVRT_CCONV_BUF_WORDS \
    (2 * MVRT_CCONV_STAGE_WORDS > MVRT_CGEMM_TILE * MVRT_CGEMM_RED ? 2 * MVRT_CCONV_STAGE_WORDS \
                                                                     : MVRT_CGEMM_TILE * MVRT_CGEMM_RED)
static constexpr __host__ __device__ int cconv_smem_bytes(int ks)
{
    return 4 * MVRT_CCONV_BUF_WORDS + 8 * ((ks + MVRT_CCONV_KC - 1) / MVRT_CCONV_KC * MVRT_CCONV_KC);
}
static_assert(cconv_smem_bytes(MVRT_CCONV_KS_MAX) <= 48 * 1024,
              "the cluster conv must fit the default 48 KB of dynamic shared memory");

/* What a block needs besides gemm_args (g: M = out_channels, N = Hout Wout,
 * K = in_channels kernel^2, A = weight (lda K), Y = y and R = residual at
 * (channel, position) with ld N and batch stride out_channels N, bias per
 * row, the activation). */
struct cconv_args {
    gemm_args g;
    const float *x;
    int64_t in_image; /* x's batch stride: in_channels in_h in_w (< 2^31) */
    int in_h, in_w, out_w, kernel, stride, pad;
    int ks, tiles_n;
};

/* Grid (tiles_m * tiles_n, batch, S) in clusters of (1, 1, S). VEC 16:
 * the weight 16-byte aligned and K a multiple of 4; VEC 4: no condition. */
template <int VEC>
__global__ void __launch_bounds__(MVRT_CGEMM_THREADS, MVRT_CCONV_SM_BLOCKS) conv_cluster_kernel(cconv_args a)
{
#ifdef MVRT_CGEMM_DEVICE
    extern __shared__ float4 cconv_smem4[];
    float *const sm = reinterpret_cast<float *>(cconv_smem4);
    int2 *const ktab = reinterpret_cast<int2 *>(sm + MVRT_CCONV_BUF_WORDS);
    constexpr int T = MVRT_CGEMM_TILE, KC = MVRT_CCONV_KC, KSP = cgemm_kstride(MVRT_CCONV_KC);
    const gemm_args &g = a.g;
    const int tid = (int)threadIdx.x, rank = (int)blockIdx.z;
    const int tm = (int)blockIdx.x / a.tiles_n, tn = (int)blockIdx.x - tm * a.tiles_n;
    const int64_t m0 = (int64_t)tm * T, n0 = (int64_t)tn * T, bz = blockIdx.y;
    const int k0 = rank * a.ks; /* K < 2^31: the plan */
    const int klen = (int)(g.K - k0 < 0 ? 0 : g.K - k0 < a.ks ? g.K - k0 : a.ks);
    const int mval = (int)(g.M - m0 < T ? g.M - m0 : T), nval = (int)(g.N - n0 < T ? g.N - n0 : T);

    cgemm_prefetch_bias(g, m0, n0);
    /* the slice's k table: offset in the image and tap p kernel + q of each
     * k; the entries up to the next whole chunk past klen get tap 31, never
     * valid (zero fill without a k test per element) */
    const int kk2 = a.kernel * a.kernel, hw = a.in_h * a.in_w;
    const int kpad = (klen + KC - 1) / KC * KC;
    for (int i = tid; i < kpad; i += MVRT_CGEMM_THREADS) {
        const int k = k0 + i, c = k / kk2, r = k - c * kk2, p = r / a.kernel, q = r - p * a.kernel;
        ktab[i] = i < klen ? make_int2(c * hw + p * a.in_w + q, r) : make_int2(0, 31);
    }
    /* this thread's output position (column nl of the tile) and which of
     * its kernel^2 <= 25 taps fall inside the image (none past the
     * positions): a gathered element is then a table read, a bit test and
     * a copy */
    const int nl = tid & (T - 1);
    const int pos = (int)n0 + nl, oy = pos / a.out_w, ox = pos - oy * a.out_w;
    const int iy0 = oy * a.stride - a.pad, ix0 = ox * a.stride - a.pad;
    unsigned taps = 0;
    if (nl < nval)
        for (int p = 0; p < a.kernel; ++p)
            for (int q = 0; q < a.kernel; ++q)
                if ((unsigned)(iy0 + p) < (unsigned)a.in_h && (unsigned)(ix0 + q) < (unsigned)a.in_w)
                    taps |= 1u << (p * a.kernel + q);
    const float *const ximg = a.x + bz * a.in_image;
    /* the position's first tap (p = q = 0; maybe outside the image: read
     * only at valid taps) */
    const float *const xpos = taps ? ximg + (iy0 * a.in_w + ix0) : ximg;
    /* this thread's weight pieces (16-byte staging): rows ar + 32 j, k ac */
    constexpr int AROWS = MVRT_CGEMM_THREADS / (KC / 4);
    const int ar = tid / (KC / 4), ac = (tid % (KC / 4)) * 4;
    const float *const a_src = g.A + (m0 + ar) * g.lda + k0 + ac;
    __syncthreads(); /* the table */

    auto stage = [&](int chunk) {
        float *const As = sm + (chunk & 1) * MVRT_CCONV_STAGE_WORDS, *const Bs = As + MVRT_CCONV_A_WORDS;
        const int kc = chunk * KC;
        if constexpr (VEC == 16) {
            const bool k_ok = kc + ac < klen;
#pragma unroll
            for (int j = 0; j < T / AROWS; ++j) {
                const bool ok = k_ok && ar + AROWS * j < mval;
                cgemm_copy<16>(As + (ar + AROWS * j) * KSP + ac, ok ? a_src + AROWS * j * g.lda + kc : g.A, ok);
            }
        } else {
            cgemm_stage<4>(As, KSP, g.A + m0 * g.lda + k0 + kc, g.lda, T, KC, mval, klen - kc);
        }
        constexpr int KROWS = MVRT_CGEMM_THREADS / T; /* B rows staged per pass */
#pragma unroll 4
        for (int j = 0; j < KC / KROWS; ++j) {
            const int kr = tid / T + KROWS * j;
            const int2 t = ktab[kc + kr];
            const bool ok = (taps >> t.y) & 1u;
            cgemm_copy<4>(Bs + kr * MVRT_CGEMM_WIDE + nl, ok ? xpos + t.x : ximg, ok);
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };

    float sum[2][4][4];
    cgemm_chunked_product<false, false>(sum, sm, MVRT_CCONV_STAGE_WORDS, MVRT_CCONV_A_WORDS, klen, stage);
    cgemm_cluster_finish(g, sum, sm, m0, n0, mval, nval, bz);
#else
    (void)a;
    mvrt_gpu_arch_missing();
#endif
}

#if defined(MVRT_GPU_CUDA)
/* The cluster conv's plan for p (fp32 math; not the 1x1 direct or
 * small-patch convs, which have their own paths): S slices (0: not taken)
 * of ks k each, chosen by cgemm_slices (the cluster GEMM's rule: one wave,
 * at most 3 blocks per SM); not taken for S = 1, for slices over
 * MVRT_CCONV_KS_MAX, where the
 * tiles x batch reach the SM count (larger batches keep the CUTLASS
 * implicit conv or im2col + GEMM), or for images whose offsets need more
 * than 32 bits, or kernels over 5 x 5 (a thread's valid taps are bits of
 * one word). */
static inline cgemm_plan cconv_plan_for(const mvrt_conv2d_params_t &p, int sm_count, int max_slices)
{
    const int64_t K = p.in_channels * p.kernel * p.kernel, nsp = p.out_h * p.out_w;
    if (max_slices < 2 || K < 64 || p.batch > 65535 || p.kernel > 5 ||
        p.in_channels * p.in_h * p.in_w > INT32_MAX || nsp > INT32_MAX || K > INT32_MAX)
        return cgemm_plan{0, 0};
    const int64_t tiles = ((p.out_channels + MVRT_CGEMM_TILE - 1) / MVRT_CGEMM_TILE) *
                          ((nsp + MVRT_CGEMM_TILE - 1) / MVRT_CGEMM_TILE);
    return cgemm_slices(tiles * p.batch, K, sm_count, max_slices, MVRT_CCONV_KS_MAX, cconv_smem_bytes);
}

/* Queues conv p on the cluster conv with plan pl (from cconv_plan_for). */
static gpuError_t launch_conv_cluster(const mvrt_conv2d_params_t &p, const cgemm_plan &pl, gpuStream_t s)
{
    const int64_t K = p.in_channels * p.kernel * p.kernel, nsp = p.out_h * p.out_w;
    const int64_t out_image = p.out_channels * nsp;
    cconv_args a;
    gemm_args &g = a.g;
    g.batch = p.batch; g.M = p.out_channels; g.N = nsp; g.K = K;
    g.A = p.weight; g.lda = K; g.sa = 0; g.ta = 0;
    g.B = nullptr; g.ldb = 0; g.sb = 0; g.tb = 0;
    g.Y = p.y; g.ldy = nsp; g.sy = out_image;
    g.bias = p.bias; g.bias_per_row = 1;
    g.R = p.residual; g.ldr = nsp; g.sr = out_image;
    g.act = p.activation;
    g.beta = 0.f;
    a.x = p.x;
    a.in_image = p.in_channels * p.in_h * p.in_w;
    a.in_h = (int)p.in_h; a.in_w = (int)p.in_w; a.out_w = (int)p.out_w;
    a.kernel = p.kernel; a.stride = p.stride; a.pad = p.pad;
    a.ks = pl.ks;
    a.tiles_n = (int)((nsp + MVRT_CGEMM_TILE - 1) / MVRT_CGEMM_TILE);
    const int tiles_m = (int)((p.out_channels + MVRT_CGEMM_TILE - 1) / MVRT_CGEMM_TILE);
    const bool v16 = cgemm_aligned(p.weight) && K % 4 == 0;
    return mvrt_launch_cluster_z(v16 ? conv_cluster_kernel<16> : conv_cluster_kernel<4>,
                                 dim3((unsigned)(tiles_m * a.tiles_n), (unsigned)p.batch, (unsigned)pl.S),
                                 dim3(MVRT_CGEMM_THREADS), (size_t)cconv_smem_bytes(pl.ks), s, (unsigned)pl.S, a);
}
#endif

} // namespace mvrt_mv_gpu

#endif
