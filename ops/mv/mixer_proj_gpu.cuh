/* The token-local middle of a MambaVision mixer in one kernel: a GPU-only
 * fused form (MVRT_OP_MIXER_PROJ, mv_op_params.h) of three ops, the
 * two-part dwconv1d and the x_proj / dt_proj linears, whose CPU kernels
 * and double references it is tested against (through the graph:
 * tests/model/test_model_api.c). NVIDIA only: HIP compiles an empty
 * kernel and declines the op, so the graph runner emits the three ops
 * there (not yet run on an AMD GPU). Included by
 * backends/gpu_common/mv_gpu_launch.cu.
 *
 * Why: at batch 1 (T stage 3: 196 tokens, C = 320) the three ops it
 * replaces are three latency-bound kernels (ncu on an H100: conv1d 4.5 us,
 * x_proj as a cluster GEMM 7.6 us, dt_proj 5.1 us) for ~3.5 MFLOP. Here a
 * block takes one token: conv1d + SiLU of all C channels (loads of every
 * tap in flight together), x_proj (a warp per 4 output rows, lanes over
 * channels, shuffle sums), dt_proj + bias (a thread per channel), three
 * steps separated by block barriers. All fp32 FMAs on CUDA cores (fp32
 * accuracy, as the 3xTF32 GEMMs it replaces); every sum has a fixed
 * order: bitwise reproducible. The weights (x_proj and dt_proj ~36 KB at
 * C = 320) are read by every block from L2, so the kernel is for few
 * tokens (mixer_proj_fits). */
#ifndef MVRT_OPS_MV_MIXER_PROJ_GPU_CUH
#define MVRT_OPS_MV_MIXER_PROJ_GPU_CUH

#include "../common/gpu_activation.cuh"
#include "../common/gpu_softplus.cuh"
#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"

namespace mvrt_mv_gpu {

#define MVRT_MPROJ_THREADS 256
#define MVRT_MPROJ_WARPS 8
#define MVRT_MPROJ_H_MAX 2048 /* scan channels (C / 2) staged per block */
#define MVRT_MPROJ_R_MAX 256  /* dt rank */
#define MVRT_MPROJ_W_MAX 8    /* conv1d taps */
/* blocks per SM that fit by registers (102 / 107 of the preload forms,
 * 256 threads; as a launch bound on the small form it made the compiler
 * take 106 and the block graph 2 us slower, H100; the wide form has it):
 * mixer_proj_one_wave */
#define MVRT_MPROJ_BLOCKS_PER_SM 2
/* Weights a block walks at most: x_proj's and dt_proj's h (E + R)
 * floats. Per call at batch 1 against the three ops it replaces (H200,
 * bf16 graphs, `mvrt bench model --profile`, 2026-11-29), us:
 *   mixer (C, tokens)      h (E + R)  fused  three ops
 *   T stage 3 (320, 196)       8 960    9.0    37
 *   T stage 4 (640, 49)       30 720   21.5    49
 *   B stage 3 (512, 196)      20 480   21.6    47
 *   B stage 4 (1024, 49)      73 728   41.7    ~32 (49 in a noisier run)
 *   L stage 3 (784, 196)      44 688   29.2    31
 *   L stage 4 (1568, 49)     166 208   70      36
 * and whole forwards with every mixer on the three ops: T 0.676 ->
 * 0.737 ms, B 1.026 -> 1.011, L 1.984 -> 1.818. One block's serial walk
 * over the weights outgrows the three GEMM kernels past ~40 K floats. */
#define MVRT_MPROJ_WEIGHTS_MAX 40960
/* Sizes the kernel covers, for at most max_tokens tokens (Bw L; the
 * backend's limit: each block reads all of x_proj and dt_proj, so for
 * many tokens the GEMM forms win) and at most MVRT_MPROJ_WEIGHTS_MAX
 * weights per block. */
static inline bool mixer_proj_fits(const mvrt_mixer_proj_params_t &p, int64_t max_tokens)
{
    const int64_t C = p.channels, h = C / 2;
    const int64_t M = p.batch * p.length, E = p.dt_rank + 2 * p.dstate;
    return p.batch >= 1 && p.length >= 1 && M <= max_tokens && M * C < INT32_MAX && M * E < INT32_MAX &&
           h * (E + p.dt_rank) <= MVRT_MPROJ_WEIGHTS_MAX &&
           C >= 2 && C % 2 == 0 && h <= MVRT_MPROJ_H_MAX && p.dstate >= 1 && p.dt_rank >= 1 &&
           p.dt_rank <= MVRT_MPROJ_R_MAX && p.width >= 1 &&
           p.width <= MVRT_MPROJ_W_MAX;
}
/* Whether all blocks of p's grid fit on an empty GPU of sm_count SMs at
 * once (MVRT_MPROJ_BLOCKS_PER_SM per SM). Only
 * then is the kernel queued as a programmatic dependent launch: a grid of
 * several waves that starts early only holds SM slots (batch 4, 784
 * blocks on an H100: 2 % slower). */
static inline bool mixer_proj_one_wave(const mvrt_mixer_proj_params_t &p, int sm_count)
{
    return p.batch * p.length <= (int64_t)MVRT_MPROJ_BLOCKS_PER_SM * sm_count;
}

#if defined(__CUDA_ARCH__) && !defined(MVRT_GPU_HIP)
#define MVRT_MPROJ_DEVICE 1
/* dt_proj's output for the sum a: a + bias, or with dt_softplus the scan's
 * step from it, softplus((a + bias) + bias), in the order and with the
 * function the scan kernels use: bitwise what the scan would compute from
 * the stored dt */
static __device__ __forceinline__ float mproj_dt_out(const mvrt_mixer_proj_params_t &p, float a, float bias)
{
    const float dt = a + bias;
    return p.dt_softplus ? mvrt_softplusf(dt + bias) : dt;
}
/* *q where ok, else 0, as one predicated load from the address as given
 * (a row pointer plus an immediate offset): written as PTX because the
 * compiler otherwise rebuilds the 64-bit address from the kernel
 * parameter under each load's predicate (six instructions per load, over
 * half of this kernel's instructions; ncu, H100) */
static __device__ __forceinline__ float mproj_ldg_if(const float *q, bool ok)
{
    float v = 0.f;
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p ld.global.nc.f32 %0, [%1];\n\t}"
                 : "+f"(v)
                 : "l"(q), "r"((int)ok));
    return v;
}
/* x_proj rows e0 + 8 i (i < V): each lane's partial sum acc[i] summed
 * over the 32 lanes; lane 0 stores the rows below E to the token's dbl
 * column (stride L) and the dt rows (below R) to dtr as well. */
template <int V>
static __device__ __forceinline__ void mproj_finish_rows(float (&acc)[V], int e0, int E, int R, float *dbl_col, int L,
                                                         float *dtr, int lane)
{
#pragma unroll
    for (int i = 0; i < V; ++i) {
        const int e = e0 + i * MVRT_MPROJ_WARPS;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) acc[i] += MVRT_SHFL_XOR(acc[i], o, 32);
        if (lane == 0 && e < E) {
            dbl_col[e * L] = acc[i];
            if (e < R) dtr[e] = acc[i];
        }
    }
}
#endif

/* Grid: one block per token (b L + l), MVRT_MPROJ_THREADS threads. WT:
 * the conv1d taps when fixed at compile time (3: MambaVision's d_conv),
 * 0 for any width up to MVRT_MPROJ_W_MAX. Indices are 32-bit
 * (mixer_proj_fits bounds every tensor below 2^31 elements). */
/* Preloads: the x_proj and dt_proj weights a thread uses are loaded into
 * registers at the start, in flight with the conv1d's loads (and, as a
 * programmatic dependent launch, with the kernel before: one memory
 * round trip for the kernel instead of three), for h <= 256. Two sizes
 * (registers: sm_90, nvcc 13, width 3, no spills;
 * mixer_proj_preload picks the smaller that holds E and R):
 *
 * | form | x_proj rows per warp (E) | dt rank | registers | serves |
 * |---|---|---|---|---|
 * | MPROJ_PRE_SMALL | 5 (E <= 40) | 24 | 102 | T's stage 3 (C 320): 9.2 -> 7.0 us (ncu, H100: backends/cuda/PERF_NOTES.md) |
 * | MPROJ_PRE_WIDE | 6 (E <= 48) | 32 | 107, at most 128 (launch bound: 2 blocks per SM, so 196 tokens are one wave on 132 SMs) | B's stage 3 (C 512, E 48, R 32): 19.3 us walking the weights (ncu, H200, session 61) |
 *
 * Past these (h > 256, E > 48 or R > 32: T's and B's stage 4) the
 * block walks the weights from L2 (mixer_proj_kernel<.., MPROJ_PRE_NONE>). */
#define MVRT_MPROJ_PRE_K 8 /* channels per lane: h <= 256 */
enum { MPROJ_PRE_NONE = 0, MPROJ_PRE_SMALL = 1, MPROJ_PRE_WIDE = 2 };
template <int PRE> struct mproj_pre {
    static constexpr int rows = PRE == MPROJ_PRE_WIDE ? 6 : PRE == MPROJ_PRE_SMALL ? 5 : 1;
    static constexpr int k = PRE ? MVRT_MPROJ_PRE_K : 1;
    static constexpr int r = PRE == MPROJ_PRE_WIDE ? 32 : PRE == MPROJ_PRE_SMALL ? 24 : 1;
    /* the wide form's register budget for two blocks per SM */
    static constexpr int min_blocks = PRE == MPROJ_PRE_WIDE ? MVRT_MPROJ_BLOCKS_PER_SM : 1;
};
static inline int mixer_proj_preload(const mvrt_mixer_proj_params_t &p)
{
    const int64_t E = p.dt_rank + 2 * p.dstate, h = p.channels / 2;
    if (h > MVRT_MPROJ_PRE_K * 32 || h > MVRT_MPROJ_THREADS) return MPROJ_PRE_NONE;
    if (E <= mproj_pre<MPROJ_PRE_SMALL>::rows * MVRT_MPROJ_WARPS && p.dt_rank <= mproj_pre<MPROJ_PRE_SMALL>::r)
        return MPROJ_PRE_SMALL;
    if (E <= mproj_pre<MPROJ_PRE_WIDE>::rows * MVRT_MPROJ_WARPS && p.dt_rank <= mproj_pre<MPROJ_PRE_WIDE>::r)
        return MPROJ_PRE_WIDE;
    return MPROJ_PRE_NONE;
}

template <int WT, int PRE>
__global__ void __launch_bounds__(MVRT_MPROJ_THREADS, mproj_pre<PRE>::min_blocks)
    mixer_proj_kernel(mvrt_mixer_proj_params_t p)
{
#ifdef MVRT_MPROJ_DEVICE
    constexpr int WMAX = WT > 0 ? WT : MVRT_MPROJ_W_MAX;
    __shared__ float vec[MVRT_MPROJ_H_MAX]; /* the token's u over channels */
    __shared__ float dtr[MVRT_MPROJ_R_MAX]; /* its dt rows of dbl */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int L = (int)p.length, C = (int)p.channels, h = C / 2, N = (int)p.dstate, R = (int)p.dt_rank;
    const int E = R + 2 * N;
    const int W = WT > 0 ? WT : p.width, pad = (W - 1) / 2;
    const int t = (int)blockIdx.x, b = t / L, l = t - b * L;
    constexpr int PROWS = mproj_pre<PRE>::rows, PK = mproj_pre<PRE>::k, PR = mproj_pre<PRE>::r;
    float wx[PROWS][PK], wd[PR];
    if constexpr (PRE != MPROJ_PRE_NONE) {
        /* one pointer per weight row, the steps along it immediate offsets,
         * the bounds as predicates computed once (per-load index arithmetic
         * and guards were over half of the kernel's instructions) */
        bool kok[PK];
#pragma unroll
        for (int j = 0; j < PK; ++j) kok[j] = lane + 32 * j < h;
#pragma unroll
        for (int i = 0; i < PROWS; ++i) {
            const int e = warp + i * MVRT_MPROJ_WARPS;
            const bool rok = e < E;
            const float *w = p.x_proj_w + (rok ? e * h : 0) + lane;
#pragma unroll
            for (int j = 0; j < PK; ++j) wx[i][j] = mproj_ldg_if(w + 32 * j, rok && kok[j]);
        }
        const int ch = threadIdx.x;
        const float *wr = p.dt_proj_w + (ch < h ? ch * R : 0);
#pragma unroll
        for (int r = 0; r < PR; ++r) wd[r] = mproj_ldg_if(wr + r, ch < h && r < R);
    }
    /* a programmatic dependent launch preloads the weights above while
     * the kernel before runs; xz is that kernel's output */
    mvrt_grid_dep_wait();
    mvrt_grid_dep_launch_dependents();
    /* conv1d + SiLU of both halves: every tap's load issued before the sum */
#pragma unroll 2
    for (int ch = threadIdx.x; ch < C; ch += MVRT_MPROJ_THREADS) {
        const bool xpart = ch < h;
        const float *w = xpart ? p.conv_x_w + ch * W : p.conv_z_w + (ch - h) * W;
        float xv[WMAX], wv[WMAX];
#pragma unroll
        for (int j = 0; j < WMAX; ++j) {
            const int lj = l + j - pad;
            const bool on = j < W && lj >= 0 && lj < L;
            xv[j] = on ? p.xz[(b * L + lj) * C + ch] : 0.f; /* written by the kernel before: not __ldg */
            wv[j] = on ? __ldg(w + j) : 0.f;
        }
        float acc = 0.f;
#pragma unroll
        for (int j = 0; j < WMAX; ++j) acc += wv[j] * xv[j];
        const float s = act_apply(MVRT_ACT_SILU, acc);
        if (xpart) {
            vec[ch] = s;
            p.u[(b * h + ch) * L + l] = s;
        } else {
            p.yz[(b * C + ch) * L + l] = s;
        }
    }
    __syncthreads();
    if constexpr (PRE != MPROJ_PRE_NONE) {
        /* x_proj: warp w takes rows w + 8 i; dt_proj: thread ch */
        float acc[PROWS];
#pragma unroll
        for (int i = 0; i < PROWS; ++i) acc[i] = 0.f;
#pragma unroll
        for (int j = 0; j < PK; ++j) {
            const int k = lane + 32 * j;
            const float v = k < h ? vec[k] : 0.f;
#pragma unroll
            for (int i = 0; i < PROWS; ++i) acc[i] += wx[i][j] * v;
        }
        mproj_finish_rows(acc, warp, E, R, p.dbl + b * E * L + l, L, dtr, lane);
        __syncthreads();
        const int ch = threadIdx.x;
        if (ch < h) {
            float a = 0.f;
#pragma unroll
            for (int r = 0; r < PR; ++r)
                if (r < R) a += wd[r] * dtr[r];
            p.dt[(b * h + ch) * L + l] = mproj_dt_out(p, a, __ldg(p.dt_bias + ch));
        }
    } else {
        /* x_proj: warp w takes rows w, w + 8, w + 16, w + 24 of each group of 32 */
        for (int e0 = warp; e0 < E; e0 += 4 * MVRT_MPROJ_WARPS) {
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
            const float *w0 = p.x_proj_w + e0 * h;
#pragma unroll 4
            for (int k = lane; k < h; k += 32) {
                const float v = vec[k];
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    if (e0 + i * MVRT_MPROJ_WARPS < E) acc[i] += __ldg(w0 + i * MVRT_MPROJ_WARPS * h + k) * v;
            }
            mproj_finish_rows(acc, e0, E, R, p.dbl + b * E * L + l, L, dtr, lane);
        }
        __syncthreads();
        /* dt_proj + bias: a thread per channel */
        for (int ch = threadIdx.x; ch < h; ch += MVRT_MPROJ_THREADS) {
            const float *w = p.dt_proj_w + ch * R;
            float acc = 0.f;
#pragma unroll 8
            for (int r = 0; r < R; ++r) acc += __ldg(w + r) * dtr[r];
            p.dt[(b * h + ch) * L + l] = mproj_dt_out(p, acc, __ldg(p.dt_bias + ch));
        }
    }
#else
    (void)p;
    mvrt_gpu_arch_missing();
#endif
}

} // namespace mvrt_mv_gpu

#endif
