/* The ONE GPU kernel source of the selective scan, forward and backward,
 * compiled by the CUDA backend (nvcc) and the HIP backend (hipcc). Only names
 * from ops/common/gpu_vendor.h are vendor-specific.
 *
 * Decomposition (designed for MambaVision: short L, N = 8, many channels):
 *   - one block works on (batch b, group g, a tile of CH channels of g);
 *     blocks are a 1-D grid-stride loop over Bt*G*tiles (no capped grid axis);
 *   - TPR consecutive threads own one channel row, each NPT of its states
 *     (N <= NPT*TPR); states live in registers, y and the backward's per-row
 *     sums are combined across the TPR lanes with shuffles;
 *   - L is walked in chunks of Ts steps; a chunk of u/delta (and dout/z) is
 *     loaded coalesced along L into shared memory (rows padded to an odd
 *     stride, so lanes of different rows hit different banks), delta goes
 *     through bias + softplus once in that pass; B/C of the chunk are staged
 *     once in shared memory for every channel of the block;
 *   - outputs are written back from shared memory, coalesced along L.
 * Backward: a forward pass stores the state at every TB-step sub-chunk start
 * in the workspace (O(Bt*Dm*N*L/TB) floats); chunks are then walked in
 * reverse: each sub-chunk recomputes its states in registers from the saved
 * one, then runs the adjoint backwards. Cross-channel sums (variable dB/dC)
 * use a fixed shuffle tree + fixed-order sums over warps and tiles; sums over
 * the batch (dA, dD, ddelta_bias, constant dB/dC) go through per-(b, d)
 * partials summed in fixed order by a second kernel: bitwise deterministic.
 * All offsets are 64-bit.
 *
 * Warp width (AMD CDNA runs 64-wide wavefronts): every lane count, shuffle
 * width, lane/warp index and per-warp shared-memory slot is written in terms
 * of MVRT_WARP_SIZE (ops/common/gpu_vendor.h: 32 for NVIDIA and RDNA, 64 when
 * the HIP device pass targets gfx9), never the literal 32; shuffles go through
 * MVRT_SHFL_XOR (full-warp on CUDA, whole wavefront on HIP) and the reductions
 * loop log2(MVRT_WARP_SIZE) times. The host side plans block sizes and shared
 * memory with the device's reported warpSize (mvrt_gpu_scan_tuning_t), which
 * equals the device pass's constant. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_CUH

#include "../common/gpu_softplus.cuh"
#include "../common/gpu_vendor.h"
#include "scan_params.h"
#include <stdint.h>

namespace mvrt_scan_gpu {

#define MVRT_SCAN_LOG2E 1.4426950408889634f

/* ---------------------------------------------------------------- types */
template <typename T> struct io;
/* wide: a loaded element as f32; ld/st: element i of p, as f32 */
template <> struct io<float> {
    static __device__ __forceinline__ float wide(float v) { return v; }
    static __device__ __forceinline__ float ld(const void *p, int64_t i) { return ((const float *)p)[i]; }
    static __device__ __forceinline__ void st(void *p, int64_t i, float v) { ((float *)p)[i] = v; }
};
template <> struct io<mvrt_gpu_half> {
    static constexpr int h16 = 2; /* storage code of gpu_vendor.h's mvrt_h16_to_f32 / mvrt_h16x2 */
    static __device__ __forceinline__ float wide(mvrt_gpu_half v) { return mvrt_half_to_float(v); }
    static __device__ __forceinline__ float ld(const void *p, int64_t i) { return wide(((const mvrt_gpu_half *)p)[i]); }
    static __device__ __forceinline__ void st(void *p, int64_t i, float v) { ((mvrt_gpu_half *)p)[i] = mvrt_float_to_half(v); }
};
template <> struct io<mvrt_gpu_bf16> {
    static constexpr int h16 = 3;
    static __device__ __forceinline__ float wide(mvrt_gpu_bf16 v) { return mvrt_bf16_to_float(v); }
    static __device__ __forceinline__ float ld(const void *p, int64_t i) { return wide(((const mvrt_gpu_bf16 *)p)[i]); }
    static __device__ __forceinline__ void st(void *p, int64_t i, float v) { ((mvrt_gpu_bf16 *)p)[i] = mvrt_float_to_bf16(v); }
};

/* Launch-wide constants, passed by value. */
struct kparams {
    mvrt_scan_params_t p;
    int64_t nwork;      /* Bt * G * ntiles */
    int ntiles;         /* channel tiles per group */
    int ch;             /* channels per tile (last tile may have fewer) */
    int dpg;            /* channels per group */
    int ts;             /* chunk length (steps staged in shared memory) */
    int srow;           /* shared row stride of (channel, step) tiles: odd, >= ts */
    int np;             /* padded state count NPT*TPR */
    int nsub;           /* backward: sub-chunks of TB steps over L */
    float *ws_state;    /* backward: (Bt, nsub, Dm, N) saved states */
    float *ws_row;      /* backward: (Bt, Dm, 3N+2) per-row partial sums */
    float *ws_bc;       /* backward: (Bt, G, ntiles, 2, N, L) dB/dC tile partials, or NULL */
};

/* q = n / d for n, d < 2^16 with m = floor(2^32/d) + 1 (exact there);
 * d = 1 would need m = 2^32, so m = 0 stands for it. */
static __device__ __forceinline__ int fdiv(int n, uint32_t m) { return m ? (int)__umulhi((uint32_t)n, m) : n; }
static __device__ __forceinline__ uint32_t fdiv_magic(int d) { return d == 1 ? 0u : (uint32_t)(0xffffffffu / (uint32_t)d) + 1u; }

/* Loads per thread issued before any is used in the staging loops: one
 * dependent load at a time leaves HBM mostly idle (measured: 24 % of the
 * copy bandwidth), so each thread keeps U loads per tensor in flight. */
#define MVRT_SCAN_U_FWD 8
#define MVRT_SCAN_U_BWD 4

/* Gathers elements i0 + k*step (k < U, below total) of the (row, step) tile
 * of a (Bt, Dm, L) operand starting at `base`, as float. */
template <typename Tin, int U>
static __device__ __forceinline__ void gather(float (&v)[U], const mvrt_scan_operand_t &op, int64_t base, int i0,
                                              int step, int total, int len, uint32_t mlen)
{
#pragma unroll
    for (int k = 0; k < U; ++k) {
        const int i = i0 + k * step;
        if (i < total) {
            const int rr = fdiv(i, mlen);
            const int cc = i - rr * len;
            v[k] = io<Tin>::ld(op.data, base + rr * op.stride[1] + cc * op.stride[2]);
        }
    }
}
/* The per-channel f32 vector (delta_bias) at the rows of those elements; 0 if absent. */
template <int U>
static __device__ __forceinline__ void gather_rowvec(float (&v)[U], const mvrt_scan_operand_t &op, int64_t d0, int i0,
                                                     int step, int total, uint32_t mlen)
{
#pragma unroll
    for (int k = 0; k < U; ++k) {
        const int i = i0 + k * step;
        v[k] = 0.f;
        if (op.data && i < total) v[k] = ((const float *)op.data)[(d0 + fdiv(i, mlen)) * op.stride[0]];
    }
}

/* Sum of x over the `width` consecutive lanes of a group (butterfly). */
template <int WIDTH> static __device__ __forceinline__ float group_sum(float x)
{
#pragma unroll
    for (int o = WIDTH / 2; o >= 1; o >>= 1) x += MVRT_SHFL_XOR(x, o, MVRT_WARP_SIZE);
    return x;
}

/* Reduce-scatter of V values over GROUP lanes spaced STRIDE apart (pos = the
 * lane's index in that group): each round halves the values a lane keeps, so
 * V values cost about V shuffles instead of V*log2(GROUP). Afterwards the
 * lane holds `cnt` sums, of value indices idx..idx+cnt-1, and `writer` says
 * whether it is the one lane of its duplicates that should store them.
 * The tree is fixed: results are bitwise reproducible. */
template <int V, int GROUP, int STRIDE>
static __device__ __forceinline__ void reduce_scatter(float (&v)[V], int pos, int &idx, int &cnt, bool &writer)
{
    int c = V;
    idx = 0;
    writer = true;
#pragma unroll
    for (int o = GROUP / 2; o >= 1; o >>= 1) {
        const bool upper = (pos & o) != 0;
        if (c > 1) {
            const int half = c / 2;
#pragma unroll
            for (int i = 0; i < V / 2; ++i) {
                if (i < half) {
                    float send = upper ? v[i] : v[i + half];
                    float keep = upper ? v[i + half] : v[i];
                    v[i] = keep + MVRT_SHFL_XOR(send, o * STRIDE, MVRT_WARP_SIZE);
                }
            }
            if (upper) idx += half;
            c = half;
        } else {
            v[0] += MVRT_SHFL_XOR(v[0], o * STRIDE, MVRT_WARP_SIZE);
            if (upper) writer = false;
        }
    }
    cnt = c;
}

/* Decodes work item w into (b, g, tile) and the block's channel range. */
struct work {
    int64_t b;
    int64_t g;
    int tile;
    int64_t d0;
    int nrows;
};
static __device__ __forceinline__ work decode(const kparams &k, int64_t w)
{
    work r;
    const int64_t per_b = k.p.groups * (int64_t)k.ntiles;
    r.b = w / per_b;
    const int64_t rem = w - r.b * per_b;
    r.g = rem / k.ntiles;
    r.tile = (int)(rem - r.g * k.ntiles);
    r.d0 = r.g * k.dpg + (int64_t)r.tile * k.ch;
    const int left = k.dpg - r.tile * k.ch;
    r.nrows = left < k.ch ? left : k.ch;
    return r;
}

/* A block's sum of variable dB (which 0) or dC (which 1) at state n, step
 * t: to its tile partial when a group spans several tiles (summed over the
 * tiles in order by scan_bwd_reduce_bc), else straight to dB/dC. */
template <typename Tin>
static __device__ __forceinline__ void store_dbc(const kparams &k, const work &wk, int which, int64_t n, int64_t t,
                                                 float v)
{
    const mvrt_scan_params_t &p = k.p;
    if (k.ws_bc) {
        k.ws_bc[((((wk.b * p.groups + wk.g) * k.ntiles + wk.tile) * 2 + which) * p.dstate + n) * p.seqlen + t] = v;
    } else {
        const mvrt_scan_operand_t &op = which == 0 ? p.dB : p.dC;
        io<Tin>::st(op.data, wk.b * op.stride[0] + wk.g * op.stride[1] + n * op.stride[2] + t * op.stride[3], v);
    }
}

/* Stages rows [d0, d0+nrows) x steps [t0, t0+len) of a (Bt, Dm, L) operand
 * into dst[row*srow + step] (as float), coalesced along L. MODE 0: plain;
 * 1: delta (+ bias, softplus); */
template <typename Tin>
static __device__ __forceinline__ void load_rows(float *dst, const mvrt_scan_operand_t &op, const work &wk,
                                                 int64_t t0, int len, int srow, uint32_t mlen)
{
    constexpr int U = MVRT_SCAN_U_FWD;
    const int total = wk.nrows * len;
    const int64_t base = wk.b * op.stride[0] + wk.d0 * op.stride[1] + t0 * op.stride[2];
    for (int i0 = threadIdx.x; i0 < total; i0 += blockDim.x * U) {
        float v[U];
        gather<Tin, U>(v, op, base, i0, blockDim.x, total, len, mlen);
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const int i = i0 + k * blockDim.x;
            if (i < total) {
                const int rr = fdiv(i, mlen);
                dst[rr * srow + (i - rr * len)] = v[k];
            }
        }
    }
}

/* Stages u and delta (+ bias, softplus) of the chunk together. */
template <typename Tin>
static __device__ __forceinline__ void load_u_delta(float *su, float *sd, const mvrt_scan_params_t &p, const work &wk,
                                                    int64_t t0, int len, int srow, uint32_t mlen)
{
    constexpr int U = MVRT_SCAN_U_FWD;
    const int total = wk.nrows * len;
    const int64_t bu = wk.b * p.u.stride[0] + wk.d0 * p.u.stride[1] + t0 * p.u.stride[2];
    const int64_t bd = wk.b * p.delta.stride[0] + wk.d0 * p.delta.stride[1] + t0 * p.delta.stride[2];
    for (int i0 = threadIdx.x; i0 < total; i0 += blockDim.x * U) {
        float vu[U], vd[U], vb[U];
        gather<Tin, U>(vu, p.u, bu, i0, blockDim.x, total, len, mlen);
        gather<Tin, U>(vd, p.delta, bd, i0, blockDim.x, total, len, mlen);
        gather_rowvec<U>(vb, p.delta_bias, wk.d0, i0, blockDim.x, total, mlen);
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const int i = i0 + k * blockDim.x;
            if (i < total) {
                const int rr = fdiv(i, mlen);
                const int o = rr * srow + (i - rr * len);
                su[o] = vu[k];
                float v = vd[k] + vb[k];
                if (p.delta_softplus) v = mvrt_softplusf(v);
                sd[o] = v;
            }
        }
    }
}

/* Stages variable B or C of (b, g), steps [t0, t0+len), into dst[step*np + n],
 * zero for n >= N (padding states then contribute exactly nothing). */
template <typename Tin>
static __device__ __forceinline__ void load_bc(float *dst, const mvrt_scan_operand_t &op, const work &wk,
                                               int64_t t0, int len, int n_states, int np, uint32_t mlen)
{
    constexpr int U = 4;
    const int total = np * len;
    const int64_t base = wk.b * op.stride[0] + wk.g * op.stride[1] + t0 * op.stride[3];
    for (int i0 = threadIdx.x; i0 < total; i0 += blockDim.x * U) {
        float v[U];
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const int i = i0 + k * blockDim.x;
            v[k] = 0.f;
            if (i < total) {
                const int n = fdiv(i, mlen);
                if (n < n_states) v[k] = io<Tin>::ld(op.data, base + n * op.stride[2] + (i - n * len) * op.stride[3]);
            }
        }
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const int i = i0 + k * blockDim.x;
            if (i < total) {
                const int n = fdiv(i, mlen);
                dst[(i - n * len) * np + n] = v[k];
            }
        }
    }
}

/* ============================================================== forward */
template <typename Tin, int NPT, int TPR>
__global__ void __launch_bounds__(256, 3) scan_fwd_kernel(const kparams k)
{
    extern __shared__ float smem[];
    const mvrt_scan_params_t &p = k.p;
    const int rows_alloc = blockDim.x / TPR;
    float *su = smem;                                 /* u, then y */
    float *sd = su + rows_alloc * k.srow;             /* delta after bias/softplus */
    float *sB = sd + rows_alloc * k.srow;             /* [ts][np] */
    float *sC = sB + k.ts * k.np;
    const int r = threadIdx.x / TPR;
    const int sub = threadIdx.x % TPR;
    const int64_t L = p.seqlen;
    const int N = (int)p.dstate;
    const int nchunks = (int)((L + k.ts - 1) / k.ts);

    for (int64_t w = blockIdx.x; w < k.nwork; w += gridDim.x) {
        const work wk = decode(k, w);
        const bool rowvalid = r < wk.nrows;
        const int64_t d = wk.d0 + (rowvalid ? r : 0);
        float A2[NPT], Bc[NPT], Cc[NPT], h[NPT];
#pragma unroll
        for (int j = 0; j < NPT; ++j) {
            const int n = sub * NPT + j;
            const bool ok = rowvalid && n < N;
            A2[j] = ok ? ((const float *)p.A.data)[d * p.A.stride[0] + n * p.A.stride[1]] * MVRT_SCAN_LOG2E : 0.f;
            Bc[j] = (ok && !p.b_variable) ? ((const float *)p.B.data)[d * p.B.stride[0] + n * p.B.stride[1]] : 0.f;
            Cc[j] = (ok && !p.c_variable) ? ((const float *)p.C.data)[d * p.C.stride[0] + n * p.C.stride[1]] : 0.f;
            h[j] = 0.f;
        }
        const float Dd = (p.D.data && rowvalid) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;

        for (int c = 0; c < nchunks; ++c) {
            const int64_t t0 = (int64_t)c * k.ts;
            const int len = (int)((L - t0) < k.ts ? (L - t0) : k.ts);
            const uint32_t mlen = fdiv_magic(len);
            __syncthreads(); /* the previous chunk's shared data is consumed */
            load_u_delta<Tin>(su, sd, p, wk, t0, len, k.srow, mlen);
            if (p.b_variable) load_bc<Tin>(sB, p.B, wk, t0, len, N, k.np, mlen);
            if (p.c_variable) load_bc<Tin>(sC, p.C, wk, t0, len, N, k.np, mlen);
            __syncthreads();

            const float *ur = su + r * k.srow;
            const float *dr = sd + r * k.srow;
#pragma unroll 4
            for (int t = 0; t < len; ++t) {
                const float uv = ur[t];
                const float dv = dr[t];
                const float du = dv * uv;
                float y = 0.f;
#pragma unroll
                for (int j = 0; j < NPT; ++j) {
                    const float bv = p.b_variable ? sB[t * k.np + sub * NPT + j] : Bc[j];
                    const float cv = p.c_variable ? sC[t * k.np + sub * NPT + j] : Cc[j];
                    const float a = mvrt_fast_exp2(dv * A2[j]);
                    h[j] = fmaf(a, h[j], du * bv);
                    y = fmaf(cv, h[j], y);
                }
                y = group_sum<TPR>(y);
                /* Every lane of the row read ur[t] above (its value feeds y,
                 * which the shuffle needed), so overwriting it is safe. */
                if (TPR > 1) MVRT_SYNCWARP();
                if (sub == 0) su[r * k.srow + t] = fmaf(Dd, uv, y);
            }
            __syncthreads();

            {
                const int total = wk.nrows * len;
                const int64_t bo = wk.b * p.out.stride[0] + wk.d0 * p.out.stride[1] + t0 * p.out.stride[2];
                const int64_t bz = p.z.data ? wk.b * p.z.stride[0] + wk.d0 * p.z.stride[1] + t0 * p.z.stride[2] : 0;
                constexpr int U = MVRT_SCAN_U_FWD;
                for (int i0 = threadIdx.x; i0 < total; i0 += blockDim.x * U) {
                    float vz[U];
                    if (p.z.data) gather<Tin, U>(vz, p.z, bz, i0, blockDim.x, total, len, mlen);
#pragma unroll
                    for (int q = 0; q < U; ++q) {
                        const int i = i0 + q * blockDim.x;
                        if (i < total) {
                            const int rr = fdiv(i, mlen);
                            const int cc = i - rr * len;
                            float y = su[rr * k.srow + cc];
                            if (p.z.data) y *= vz[q] / (1.f + expf(-vz[q]));
                            io<Tin>::st(p.out.data, bo + rr * p.out.stride[1] + cc * p.out.stride[2], y);
                        }
                    }
                }
            }
        }
        if (p.last_state.data && rowvalid) {
#pragma unroll
            for (int j = 0; j < NPT; ++j) {
                const int n = sub * NPT + j;
                if (n < N)
                    ((float *)p.last_state.data)[wk.b * p.last_state.stride[0] + d * p.last_state.stride[1] +
                                                 n * p.last_state.stride[2]] = h[j];
            }
        }
    }
}

/* ============================================================= backward */
template <typename Tin, int NPT, int TPR, int TB>
__global__ void __launch_bounds__(256, 2) scan_bwd_kernel(const kparams k)
{
    extern __shared__ float smem[];
    const mvrt_scan_params_t &p = k.p;
    constexpr int RPW = MVRT_WARP_SIZE / TPR; /* rows per warp */
    const int rows_alloc = blockDim.x / TPR;
    const int nwarps = blockDim.x / MVRT_WARP_SIZE;
    float *su = smem;                      /* u, then du */
    float *sd = su + rows_alloc * k.srow;  /* delta', then ddelta */
    float *sg = sd + rows_alloc * k.srow;  /* dout * silu(z) */
    float *sz = sg + rows_alloc * k.srow;  /* dout * dsilu(z), then dz (only with z) */
    float *sB = sz + (p.z.data ? rows_alloc * k.srow : 0); /* [ts][np] */
    float *sC = sB + k.ts * k.np;
    float *swB = sC + k.ts * k.np;         /* [warp][ts][np] warp sums of dB */
    float *swC = swB + nwarps * k.ts * k.np;
    const int r = threadIdx.x / TPR;
    const int sub = threadIdx.x % TPR;
    const int lane = threadIdx.x % MVRT_WARP_SIZE;
    const int warp = threadIdx.x / MVRT_WARP_SIZE;
    const int rw = lane / TPR;
    const int64_t L = p.seqlen;
    const int64_t Dm = p.dim;
    const int N = (int)p.dstate;
    const int nchunks = (int)((L + k.ts - 1) / k.ts);
    const int K = 3 * N + 2;

    for (int64_t w = blockIdx.x; w < k.nwork; w += gridDim.x) {
        const work wk = decode(k, w);
        const bool rowvalid = r < wk.nrows;
        const int64_t d = wk.d0 + (rowvalid ? r : 0);
        float A2[NPT], An[NPT], Bc[NPT], Cc[NPT], h[NPT];
#pragma unroll
        for (int j = 0; j < NPT; ++j) {
            const int n = sub * NPT + j;
            const bool ok = rowvalid && n < N;
            An[j] = ok ? ((const float *)p.A.data)[d * p.A.stride[0] + n * p.A.stride[1]] : 0.f;
            A2[j] = An[j] * MVRT_SCAN_LOG2E;
            Bc[j] = (ok && !p.b_variable) ? ((const float *)p.B.data)[d * p.B.stride[0] + n * p.B.stride[1]] : 0.f;
            Cc[j] = (ok && !p.c_variable) ? ((const float *)p.C.data)[d * p.C.stride[0] + n * p.C.stride[1]] : 0.f;
            h[j] = 0.f;
        }
        const float Dd = (p.D.data && rowvalid) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;

        /* ---- phase 1: forward over L, saving the state at sub-chunk starts */
        if (k.nsub > 1) {
            for (int c = 0; c < nchunks; ++c) {
                const int64_t t0 = (int64_t)c * k.ts;
                const int len = (int)((L - t0) < k.ts ? (L - t0) : k.ts);
                const uint32_t mlen = fdiv_magic(len);
                __syncthreads();
                load_u_delta<Tin>(su, sd, p, wk, t0, len, k.srow, mlen);
                if (p.b_variable) load_bc<Tin>(sB, p.B, wk, t0, len, N, k.np, mlen);
                __syncthreads();
                const float *ur = su + r * k.srow;
                const float *dr = sd + r * k.srow;
                for (int t = 0; t < len; ++t) {
                    if (t % TB == 0 && (t0 + t) > 0 && rowvalid) {
                        const int64_t j = (t0 + t) / TB;
                        float *dst = k.ws_state + ((wk.b * k.nsub + j) * Dm + d) * N;
#pragma unroll
                        for (int q = 0; q < NPT; ++q)
                            if (sub * NPT + q < N) dst[sub * NPT + q] = h[q];
                    }
                    const float uv = ur[t];
                    const float dv = dr[t];
                    const float du = dv * uv;
#pragma unroll
                    for (int q = 0; q < NPT; ++q) {
                        const float bv = p.b_variable ? sB[t * k.np + sub * NPT + q] : Bc[q];
                        h[q] = fmaf(mvrt_fast_exp2(dv * A2[q]), h[q], du * bv);
                    }
                }
            }
        }

        /* ---- phase 2: chunks in reverse */
        float lam[NPT], anext[NPT], dA[NPT], dBc[NPT], dCc[NPT];
#pragma unroll
        for (int q = 0; q < NPT; ++q) { lam[q] = 0.f; anext[q] = 1.f; dA[q] = 0.f; dBc[q] = 0.f; dCc[q] = 0.f; }
        float dDsum = 0.f, dbias = 0.f;

        for (int c = nchunks - 1; c >= 0; --c) {
            const int64_t t0 = (int64_t)c * k.ts;
            const int len = (int)((L - t0) < k.ts ? (L - t0) : k.ts);
            const uint32_t mlen = fdiv_magic(len);
            __syncthreads();
            {
                constexpr int U = MVRT_SCAN_U_BWD;
                const int total = wk.nrows * len;
                const int64_t bu = wk.b * p.u.stride[0] + wk.d0 * p.u.stride[1] + t0 * p.u.stride[2];
                const int64_t bd = wk.b * p.delta.stride[0] + wk.d0 * p.delta.stride[1] + t0 * p.delta.stride[2];
                const int64_t bg = wk.b * p.dout.stride[0] + wk.d0 * p.dout.stride[1] + t0 * p.dout.stride[2];
                const int64_t bz = p.z.data ? wk.b * p.z.stride[0] + wk.d0 * p.z.stride[1] + t0 * p.z.stride[2] : 0;
                for (int i0 = threadIdx.x; i0 < total; i0 += blockDim.x * U) {
                    float vu[U], vd[U], vg[U], vz[U], vb[U];
                    gather<Tin, U>(vu, p.u, bu, i0, blockDim.x, total, len, mlen);
                    gather<Tin, U>(vd, p.delta, bd, i0, blockDim.x, total, len, mlen);
                    gather<Tin, U>(vg, p.dout, bg, i0, blockDim.x, total, len, mlen);
                    if (p.z.data) gather<Tin, U>(vz, p.z, bz, i0, blockDim.x, total, len, mlen);
                    gather_rowvec<U>(vb, p.delta_bias, wk.d0, i0, blockDim.x, total, mlen);
#pragma unroll
                    for (int q = 0; q < U; ++q) {
                        const int i = i0 + q * blockDim.x;
                        if (i < total) {
                            const int rr = fdiv(i, mlen);
                            const int o = rr * k.srow + (i - rr * len);
                            su[o] = vu[q];
                            float v = vd[q] + vb[q];
                            if (p.delta_softplus) v = mvrt_softplusf(v);
                            sd[o] = v;
                            float g = vg[q];
                            if (p.z.data) {
                                const float zz = vz[q];
                                const float sig = 1.f / (1.f + expf(-zz));
                                sz[o] = g * sig * (1.f + zz * (1.f - sig));
                                g *= zz * sig;
                            }
                            sg[o] = g;
                        }
                    }
                }
            }
            if (p.b_variable) load_bc<Tin>(sB, p.B, wk, t0, len, N, k.np, mlen);
            if (p.c_variable) load_bc<Tin>(sC, p.C, wk, t0, len, N, k.np, mlen);
            __syncthreads();

            float *ur = su + r * k.srow;
            float *dr = sd + r * k.srow;
            const float *gr = sg + r * k.srow;
            float *zr = sz + r * k.srow;
            const int nsc = (len + TB - 1) / TB;
            for (int s = nsc - 1; s >= 0; --s) {
                const int ts0 = s * TB;
                const int slen = (len - ts0) < TB ? (len - ts0) : TB;
                const int64_t jsub = (t0 + ts0) / TB;
                float h0[NPT];
#pragma unroll
                for (int q = 0; q < NPT; ++q) h0[q] = 0.f;
                if (jsub > 0 && rowvalid) {
                    const float *src = k.ws_state + ((wk.b * k.nsub + jsub) * Dm + d) * N;
#pragma unroll
                    for (int q = 0; q < NPT; ++q)
                        if (sub * NPT + q < N) h0[q] = src[sub * NPT + q];
                }
                /* recompute a_t and h_t of the sub-chunk in registers */
                float av[TB][NPT], hv[TB][NPT];
                {
                    float hh[NPT];
#pragma unroll
                    for (int q = 0; q < NPT; ++q) hh[q] = h0[q];
#pragma unroll
                    for (int jj = 0; jj < TB; ++jj) {
                        if (jj < slen) {
                            const int t = ts0 + jj;
                            const float uv = ur[t];
                            const float dv = dr[t];
                            const float du = dv * uv;
                            float y = 0.f;
#pragma unroll
                            for (int q = 0; q < NPT; ++q) {
                                const float bv = p.b_variable ? sB[t * k.np + sub * NPT + q] : Bc[q];
                                av[jj][q] = mvrt_fast_exp2(dv * A2[q]);
                                hh[q] = fmaf(av[jj][q], hh[q], du * bv);
                                hv[jj][q] = hh[q];
                                if (p.z.data) {
                                    const float cv = p.c_variable ? sC[t * k.np + sub * NPT + q] : Cc[q];
                                    y = fmaf(cv, hh[q], y);
                                }
                            }
                            if (p.z.data) {
                                y = group_sum<TPR>(y);
                                if (TPR > 1) MVRT_SYNCWARP();
                                if (sub == 0) zr[t] *= fmaf(Dd, uv, y);
                            }
                        }
                    }
                }
                /* adjoint, backwards through the sub-chunk */
#pragma unroll
                for (int jj = TB - 1; jj >= 0; --jj) {
                    if (jj < slen) {
                        const int t = ts0 + jj;
                        const float uv = ur[t];
                        const float dv = dr[t];
                        const float g = gr[t];
                        float red[2] = {0.f, 0.f}; /* du, ddelta' partial sums */
                        float bc[2 * NPT];
#pragma unroll
                        for (int q = 0; q < NPT; ++q) {
                            const float bv = p.b_variable ? sB[t * k.np + sub * NPT + q] : Bc[q];
                            const float cv = p.c_variable ? sC[t * k.np + sub * NPT + q] : Cc[q];
                            const float hprev = jj == 0 ? h0[q] : hv[jj > 0 ? jj - 1 : 0][q];
                            lam[q] = fmaf(anext[q], lam[q], cv * g);
                            const float ldv = lam[q] * dv;
                            const float ah = An[q] * av[jj][q] * hprev;
                            red[0] = fmaf(ldv, bv, red[0]);
                            red[1] = fmaf(lam[q], fmaf(bv, uv, ah), red[1]);
                            dA[q] = fmaf(ldv, av[jj][q] * hprev, dA[q]);
                            const float gB = ldv * uv;
                            const float gC = g * hv[jj][q];
                            if (p.b_variable) bc[q] = rowvalid ? gB : 0.f; else { dBc[q] += gB; bc[q] = 0.f; }
                            if (p.c_variable) bc[NPT + q] = rowvalid ? gC : 0.f; else { dCc[q] += gC; bc[NPT + q] = 0.f; }
                            anext[q] = av[jj][q];
                        }
                        dDsum = fmaf(g, uv, dDsum);
                        /* du / ddelta': sum over the TPR lanes of the row */
                        {
                            int idx, cnt;
                            bool wr;
                            reduce_scatter<2, TPR, 1>(red, sub, idx, cnt, wr);
                            if (TPR > 1) MVRT_SYNCWARP(); /* every lane of the row read ur[t], dr[t] */
                            /* lanes holding index 0 have du, index 1 ddelta' */
                            if (wr) {
                                if (cnt == 2 || idx == 0) ur[t] = fmaf(Dd, g, red[0]);
                                if (cnt == 2 || idx == 1) {
                                    float ddv = cnt == 2 ? red[1] : red[0];
                                    if (p.delta_softplus) ddv *= -expm1f(-dv);
                                    dr[t] = ddv;
                                }
                            }
                            /* ddelta_bias sum: every lane computes it the same
                             * way so lane sub == 0 can keep the total */
                        }
                        if (p.b_variable || p.c_variable) {
                            int idx, cnt;
                            bool wr;
                            reduce_scatter<2 * NPT, RPW, TPR>(bc, rw, idx, cnt, wr);
                            if (wr) {
#pragma unroll
                                for (int i = 0; i < 2 * NPT; ++i) {
                                    if (i < cnt) {
                                        const int vi = idx + i;
                                        const int n = sub * NPT + (vi < NPT ? vi : vi - NPT);
                                        float *dst = vi < NPT ? swB : swC;
                                        dst[(warp * k.ts + t) * k.np + n] = bc[i];
                                    }
                                }
                            }
                        }
                    }
                }
            }
            __syncthreads();

            /* ddelta_bias: the row's ddelta values are in sd now; sum them
             * in step order (one lane per row) — deterministic. */
            if (p.delta_bias.data && sub == 0) {
                for (int t = 0; t < len; ++t) dbias += dr[t];
            }
            /* write du, ddelta, dz of the chunk */
            {
                const int total = wk.nrows * len;
                const int64_t bu = wk.b * p.du.stride[0] + wk.d0 * p.du.stride[1] + t0 * p.du.stride[2];
                const int64_t bd = wk.b * p.ddelta.stride[0] + wk.d0 * p.ddelta.stride[1] + t0 * p.ddelta.stride[2];
                const int64_t bz = p.dz.data ? wk.b * p.dz.stride[0] + wk.d0 * p.dz.stride[1] + t0 * p.dz.stride[2] : 0;
                for (int i = threadIdx.x; i < total; i += blockDim.x) {
                    const int rr = fdiv(i, mlen);
                    const int cc = i - rr * len;
                    io<Tin>::st(p.du.data, bu + rr * p.du.stride[1] + cc * p.du.stride[2], su[rr * k.srow + cc]);
                    io<Tin>::st(p.ddelta.data, bd + rr * p.ddelta.stride[1] + cc * p.ddelta.stride[2], sd[rr * k.srow + cc]);
                    if (p.dz.data)
                        io<Tin>::st(p.dz.data, bz + rr * p.dz.stride[1] + cc * p.dz.stride[2], sz[rr * k.srow + cc]);
                }
            }
            /* variable dB/dC of the chunk: sum the warps in order */
            for (int which = 0; which < 2; ++which) {
                const bool var = which == 0 ? p.b_variable : p.c_variable;
                if (!var) continue;
                const float *sw = which == 0 ? swB : swC;
                const int total = N * len;
                for (int i = threadIdx.x; i < total; i += blockDim.x) {
                    const int n = fdiv(i, mlen);
                    const int cc = i - n * len;
                    /* warps holding no valid row add exact zeros */
                    float s = 0.f;
                    for (int wv = 0; wv < nwarps; ++wv) s += sw[(wv * k.ts + cc) * k.np + n];
                    store_dbc<Tin>(k, wk, which, n, t0 + cc, s);
                }
            }
        }

        /* per-row partial sums over L: [dA n][dB n][dC n][dD][dbias] */
        if (rowvalid) {
            float *dst = k.ws_row + (wk.b * Dm + d) * K;
#pragma unroll
            for (int q = 0; q < NPT; ++q) {
                const int n = sub * NPT + q;
                if (n < N) { dst[n] = dA[q]; dst[N + n] = dBc[q]; dst[2 * N + n] = dCc[q]; }
            }
            if (sub == 0) { dst[3 * N] = dDsum; dst[3 * N + 1] = dbias; }
        }
    }
}

/* Sums the per-row partials over the batch: dA, constant dB/dC, dD,
 * ddelta_bias. Column i = d * (3N + 2) + item of the partials is contiguous
 * across d and item in every batch row, so a block takes 32 consecutive
 * columns (coalesced) and its 8 parts each sum a contiguous eighth of the
 * batch with 8 loads in flight (8 interleaved sums, combined as a tree);
 * part 0 then adds the 8 parts in order. The order depends only on the
 * batch size: bitwise reproducible. Why: one thread per column summing the
 * whole batch was a chain of 256 dependent load latencies at batch 256
 * (~90 us on an H100, a quarter of MV-T s3's backward). */
#define MVRT_SCAN_RR_COLS 32
#define MVRT_SCAN_RR_PARTS 8
static __device__ __forceinline__ bool reduce_rows_item(const mvrt_scan_params_t &p, int64_t i, int N,
                                                        const mvrt_scan_operand_t *&op, int64_t &off)
{
    const int K = 3 * N + 2;
    const int64_t d = i / K;
    const int item = (int)(i - d * K);
    if (item < N) { op = &p.dA; off = d * op->stride[0] + item * op->stride[1]; return true; }
    if (item < 2 * N) { op = &p.dB; off = d * op->stride[0] + (item - N) * op->stride[1]; return !p.b_variable; }
    if (item < 3 * N) { op = &p.dC; off = d * op->stride[0] + (item - 2 * N) * op->stride[1]; return !p.c_variable; }
    if (item == 3 * N) { op = &p.dD; off = d * op->stride[0]; return p.dD.data != 0; }
    op = &p.ddelta_bias;
    off = d * op->stride[0];
    return p.ddelta_bias.data != 0;
}
__global__ void __launch_bounds__(MVRT_SCAN_RR_COLS * MVRT_SCAN_RR_PARTS) scan_bwd_reduce_rows(const kparams k)
{
    __shared__ float parts[MVRT_SCAN_RR_PARTS][MVRT_SCAN_RR_COLS + 1];
    const mvrt_scan_params_t &p = k.p;
    const int N = (int)p.dstate;
    const int64_t cols = p.dim * (3 * N + 2);
    const int col = (int)threadIdx.x % MVRT_SCAN_RR_COLS, part = (int)threadIdx.x / MVRT_SCAN_RR_COLS;
    const int64_t b0 = p.batch * part / MVRT_SCAN_RR_PARTS, b1 = p.batch * (part + 1) / MVRT_SCAN_RR_PARTS;
    for (int64_t c0 = (int64_t)blockIdx.x * MVRT_SCAN_RR_COLS; c0 < cols; c0 += (int64_t)gridDim.x * MVRT_SCAN_RR_COLS) {
        const int64_t i = c0 + col;
        const mvrt_scan_operand_t *op = 0;
        int64_t off = 0;
        const bool need = i < cols && reduce_rows_item(p, i, N, op, off);
        float s = 0.f;
        if (need) {
            const float *src = k.ws_row + i;
            float a[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) a[j] = 0.f;
            int64_t b = b0;
            for (; b + 8 <= b1; b += 8) {
#pragma unroll
                for (int j = 0; j < 8; ++j) a[j] += src[(b + j) * cols];
            }
#pragma unroll
            for (int j = 0; j < 7; ++j)
                if (b + j < b1) a[j] += src[(b + j) * cols];
            s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
        }
        parts[part][col] = s;
        __syncthreads();
        if (part == 0 && need) {
            float t = 0.f;
#pragma unroll
            for (int j = 0; j < MVRT_SCAN_RR_PARTS; ++j) t += parts[j][col];
            ((float *)op->data)[off] = t;
        }
        __syncthreads(); /* parts read before the next columns overwrite them */
    }
}

/* Sums variable dB/dC tile partials over the channel tiles in order. */
template <typename Tin>
__global__ void scan_bwd_reduce_bc(const kparams k)
{
    const mvrt_scan_params_t &p = k.p;
    const int64_t N = p.dstate, L = p.seqlen;
    const int64_t total = p.batch * p.groups * 2 * N * L;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = i;
        const int64_t t = rem % L; rem /= L;
        const int64_t n = rem % N; rem /= N;
        const int which = (int)(rem % 2); rem /= 2;
        const int64_t g = rem % p.groups;
        const int64_t b = rem / p.groups;
        if (which == 0 ? !p.b_variable : !p.c_variable) continue;
        float s = 0.f;
        for (int tile = 0; tile < k.ntiles; ++tile)
            s += k.ws_bc[((((b * p.groups + g) * k.ntiles + tile) * 2 + which) * N + n) * L + t];
        const mvrt_scan_operand_t &op = which == 0 ? p.dB : p.dC;
        io<Tin>::st(op.data, b * op.stride[0] + g * op.stride[1] + n * op.stride[2] + t * op.stride[3], s);
    }
}

/* Fills `count` elements of a 2- or 4-byte pattern. */
template <typename W>
__global__ void fill_kernel(W *dst, int64_t count, W value)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = value;
}

/* ============================================================ host side */

/* Launch configuration, a pure function of the problem and the device's
 * shared-memory limit, so that the workspace query and the launch agree. */
struct config {
    int npt, tpr;      /* states per thread, threads per row */
    int tb;            /* backward sub-chunk (a function of npt) */
    int ch, ntiles;    /* channels per block tile, tiles per group */
    int threads;       /* block size (multiple of the warp) */
    int ts, srow;      /* chunk length, shared row stride */
    size_t smem;       /* dynamic shared memory bytes */
};

static inline int pick_tb(int npt) { return npt >= 8 ? 4 : npt == 4 ? 4 : npt == 2 ? 8 : 16; }

/* tpr_override: 0 = automatic; otherwise threads per row (power of 2 <= 32). */
static inline void pick_npt_tpr(int64_t N, int tpr_override, int *npt, int *tpr)
{
    int t;
    if (tpr_override > 0) t = tpr_override;
    else if (N <= 1) t = 1;
    else { t = 1; while (t < 32 && 2 * t < N) t *= 2; } /* NPT = 2 up to N = 64 */
    int n = (int)((N + t - 1) / t);
    int q = 1;
    while (q < n) q *= 2;
    if (q > 8) { /* too many states for 32 lanes x 8: cannot happen for N <= 256 */ q = 8; }
    /* supported (npt, tpr) pairs; anything else falls back to a wider row */
    if (q == 1 && t != 1) { q = 2; t = t > 1 ? t / 2 : 1; }
    if (q == 4 && t != 2 && t != 32) { t = t < 32 ? 32 : t; q = (int)((N + 31) / 32) <= 4 ? 4 : 8; }
    if (q == 8) t = 32;
    *npt = q;
    *tpr = t;
}

static inline size_t smem_bytes(bool bwd, bool has_z, int rows, int srow, int ts, int np, int nwarps)
{
    size_t f = (size_t)(bwd ? (has_z ? 4 : 3) : 2) * rows * srow + 2 * (size_t)ts * np;
    if (bwd) f += 2 * (size_t)nwarps * ts * np;
    return f * sizeof(float);
}

static inline config make_config(const mvrt_scan_params_t &p, bool bwd, size_t smem_limit, int warp, int tpr_override)
{
    config c;
    pick_npt_tpr(p.dstate, tpr_override, &c.npt, &c.tpr);
    c.tb = pick_tb(c.npt);
    const int64_t dpg = p.dim / p.groups;
    int maxrows = 256 / c.tpr;
    const int np = c.npt * c.tpr;
    int ts_max = bwd ? 32 : 64;
    if (bwd && ts_max < c.tb) ts_max = c.tb;
    for (;;) {
        int64_t ntiles = (dpg + maxrows - 1) / maxrows;
        c.ch = (int)((dpg + ntiles - 1) / ntiles);
        c.ntiles = (int)ntiles;
        c.threads = ((c.ch * c.tpr + warp - 1) / warp) * warp;
        /* balanced chunks: e.g. L = 196 -> 4 x 49 rather than 64+64+64+4 */
        int64_t nch = (p.seqlen + ts_max - 1) / ts_max;
        int64_t ts = (p.seqlen + nch - 1) / nch;
        if (bwd) ts = ((ts + c.tb - 1) / c.tb) * c.tb; /* sub-chunks must not straddle chunks */
        c.ts = (int)ts;
        c.srow = c.ts | 1;
        c.smem = smem_bytes(bwd, p.z.data != NULL, c.threads / c.tpr, c.srow, c.ts, np, c.threads / warp);
        if (c.smem <= smem_limit) break;
        if (ts_max > (bwd ? c.tb : 8)) ts_max /= 2;
        else if (maxrows > 1) maxrows /= 2;
        else break; /* cannot shrink further: the launch reports the error */
    }
    return c;
}

/* Workspace layout of the backward (256-byte aligned regions). */
struct ws_layout {
    size_t state_off, row_off, bc_off, total;
    int64_t nsub;
};
static inline size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }
static inline ws_layout make_ws_layout(const mvrt_scan_params_t &p, const config &c)
{
    ws_layout w;
    w.nsub = (p.seqlen + c.tb - 1) / c.tb;
    const size_t nstate = w.nsub > 1 ? (size_t)p.batch * w.nsub * p.dim * p.dstate : 0;
    const size_t nrow = (size_t)p.batch * p.dim * (3 * p.dstate + 2);
    const size_t nbc = (c.ntiles > 1 && (p.b_variable || p.c_variable))
                           ? (size_t)p.batch * p.groups * c.ntiles * 2 * p.dstate * p.seqlen : 0;
    w.state_off = 0;
    w.row_off = align256(nstate * sizeof(float));
    w.bc_off = w.row_off + align256(nrow * sizeof(float));
    w.total = w.bc_off + align256(nbc * sizeof(float));
    return w;
}

static inline kparams make_kparams(const mvrt_scan_params_t &p, const config &c)
{
    kparams k;
    k.p = p;
    k.ntiles = c.ntiles;
    k.ch = c.ch;
    k.dpg = (int)(p.dim / p.groups);
    k.nwork = p.batch * p.groups * c.ntiles;
    k.ts = c.ts;
    k.srow = c.srow;
    k.np = c.npt * c.tpr;
    k.nsub = 0;
    k.ws_state = k.ws_row = k.ws_bc = 0;
    return k;
}

static inline unsigned grid_for(int64_t nwork)
{
    const int64_t cap = (int64_t)1 << 30;
    return (unsigned)(nwork < cap ? nwork : cap);
}

/* Launches a kernel taking launch constants kp over nwork work items
 * (raising its dynamic shared-memory limit first where it needs more than
 * the default 48 KiB). */
template <typename F, typename K>
static mvrt_gpu_error_t launch_scan_kernel(F fn, const K &kp, int64_t nwork, int threads, size_t smem,
                                           mvrt_gpu_stream_t s)
{
    if (smem > 48 * 1024) {
        mvrt_gpu_error_t e = mvrt_gpu_func_set_max_dyn_smem(fn, (int)smem);
        if (e != MVRT_GPU_SUCCESS) return e;
    }
    fn<<<grid_for(nwork), threads, smem, s>>>(kp);
    return mvrt_gpu_get_last_error();
}
template <typename F>
static mvrt_gpu_error_t launch_scan_kernel(F fn, const kparams &k, int threads, size_t smem, mvrt_gpu_stream_t s)
{
    return launch_scan_kernel(fn, k, k.nwork, threads, smem, s);
}

template <typename Tin, int NPT, int TPR>
static mvrt_gpu_error_t launch_fwd_t(const kparams &k, const config &c, mvrt_gpu_stream_t s)
{
    return launch_scan_kernel(scan_fwd_kernel<Tin, NPT, TPR>, k, c.threads, c.smem, s);
}

/* The backward's second stage, shared by both kernel families: fixed-order
 * sums of the per-row partials (dA, dD, ddelta_bias, constant dB/dC) over the
 * batch, and of the per-tile dB/dC partials over channel tiles. */
template <typename Tin>
static mvrt_gpu_error_t launch_bwd_reductions(const kparams &k, mvrt_gpu_stream_t s)
{
    const int64_t nrow_items = k.p.dim * (3 * k.p.dstate + 2);
    scan_bwd_reduce_rows<<<grid_for((nrow_items + MVRT_SCAN_RR_COLS - 1) / MVRT_SCAN_RR_COLS),
                           MVRT_SCAN_RR_COLS * MVRT_SCAN_RR_PARTS, 0, s>>>(k);
    mvrt_gpu_error_t e = mvrt_gpu_get_last_error();
    if (e != MVRT_GPU_SUCCESS) return e;
    if (k.ws_bc) {
        const int64_t n = k.p.batch * k.p.groups * 2 * k.p.dstate * k.p.seqlen;
        scan_bwd_reduce_bc<Tin><<<grid_for((n + 255) / 256), 256, 0, s>>>(k);
        e = mvrt_gpu_get_last_error();
    }
    return e;
}

/* A backward kernel, then the shared reductions of its partials. */
template <typename Tin, typename F>
static mvrt_gpu_error_t launch_scan_bwd_kernel(F fn, const kparams &k, int threads, size_t smem, mvrt_gpu_stream_t s)
{
    const mvrt_gpu_error_t e = launch_scan_kernel(fn, k, threads, smem, s);
    return e != MVRT_GPU_SUCCESS ? e : launch_bwd_reductions<Tin>(k, s);
}

template <typename Tin, int NPT, int TPR>
static mvrt_gpu_error_t launch_bwd_t(const kparams &k, const config &c, mvrt_gpu_stream_t s)
{
    constexpr int TB = NPT >= 8 ? 4 : NPT == 4 ? 4 : NPT == 2 ? 8 : 16;
    return launch_scan_bwd_kernel<Tin>(scan_bwd_kernel<Tin, NPT, TPR, TB>, k, c.threads, c.smem, s);
}

/* Dispatch over the supported (NPT, TPR) pairs. Returns false when the pair
 * is not compiled (cannot happen with pick_npt_tpr). */
#define MVRT_SCAN_DISPATCH(FN, TIN, npt, tpr, ...)                              \
    do {                                                                        \
        if (npt == 1 && tpr == 1) return FN<TIN, 1, 1>(__VA_ARGS__);            \
        if (npt == 2 && tpr == 1) return FN<TIN, 2, 1>(__VA_ARGS__);            \
        if (npt == 2 && tpr == 2) return FN<TIN, 2, 2>(__VA_ARGS__);            \
        if (npt == 2 && tpr == 4) return FN<TIN, 2, 4>(__VA_ARGS__);            \
        if (npt == 2 && tpr == 8) return FN<TIN, 2, 8>(__VA_ARGS__);            \
        if (npt == 2 && tpr == 16) return FN<TIN, 2, 16>(__VA_ARGS__);          \
        if (npt == 2 && tpr == 32) return FN<TIN, 2, 32>(__VA_ARGS__);          \
        if (npt == 4 && tpr == 2) return FN<TIN, 4, 2>(__VA_ARGS__);            \
        if (npt == 4 && tpr == 32) return FN<TIN, 4, 32>(__VA_ARGS__);          \
        if (npt == 8 && tpr == 32) return FN<TIN, 8, 32>(__VA_ARGS__);          \
    } while (0)

template <typename Tin>
static mvrt_gpu_error_t launch_fwd_typed(const kparams &k, const config &c, mvrt_gpu_stream_t s)
{
    MVRT_SCAN_DISPATCH(launch_fwd_t, Tin, c.npt, c.tpr, k, c, s);
    return (mvrt_gpu_error_t)1; /* invalid value */
}
template <typename Tin>
static mvrt_gpu_error_t launch_bwd_typed(const kparams &k, const config &c, mvrt_gpu_stream_t s)
{
    MVRT_SCAN_DISPATCH(launch_bwd_t, Tin, c.npt, c.tpr, k, c, s);
    return (mvrt_gpu_error_t)1;
}

} /* namespace mvrt_scan_gpu */

#include "selective_scan_gpu_row.cuh"
#include "selective_scan_gpu_lanes.cuh"
#include "selective_scan_gpu_lanes_bwd.cuh"
#include "selective_scan_gpu_staged.cuh"
#include "selective_scan_gpu_staged_bwd.cuh"
#include "selective_scan_gpu_wscan.cuh"

#endif
