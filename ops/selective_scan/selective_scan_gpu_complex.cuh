/* The selective scan with a complex A on GPUs (CUDA and HIP from this one
 * source): mamba_ssm's selective_scan_ref with a complex A, f32 inputs
 * (the runtime refuses others). Semantics and storage:
 * shared/spec/selective_scan.md, "Complex A"; the recurrences and gradient
 * formulas are the CPU kernel's (ops/selective_scan/scan_cpu_complex.c,
 * where they are derived):
 *   a_t = exp(dt A),  x_t = a_t x_{t-1} + dt u B_t,  y_t = 2 Re(sum_n x_t C_t)
 *   lam_t = 2 g_t conj(C_t) + conj(a_{t+1}) lam_{t+1}.
 *
 * Layout: the chunked warp-scan geometry of the real kernels
 * (selective_scan_gpu_wscan.cuh), in complex arithmetic. A block of 8
 * groups of 32 lanes ("warps", also on 64-wide AMD wavefronts) takes 8
 * channel rows of one (batch, group), a warp one row; L is walked in
 * chunks of 32 TM steps, lane i taking steps [TM i, TM i + TM) of a chunk.
 * Per state, a serial pass over the lane's steps gives its complex affine
 * map x -> a x + b, a 5-round shuffle scan over the lanes the incoming
 * state (from the chunk's start state, kept in shared memory), and a
 * second pass x_t and 2 Re(x_t C_t), summed into the lane's outputs in
 * registers. Why: the serial kernels this replaced (sessions 50-68)
 * walked L one dependent step at a time per row (a unit of lanes per row,
 * its states across lanes), 0.18-0.38x mamba_ssm's forward and 0.04-0.47x
 * its backward on an H200 (docs/performance.md, "Complex A"); here the
 * chain per chunk is 2 TM + 5 steps instead of 32 TM.
 *
 * Backward: pass 1 (more than one chunk) saves each state's value at every
 * chunk start in the workspace; pass 2 walks the chunks backwards and, per
 * state, rebuilds x_t from the saved start (prefix scan over the lanes)
 * and runs the adjoint from the chunk's end carry mu (suffix scan over the
 * lanes: mu_out = conj(prod a) mu_in + q), with the gradients of
 * ops/selective_scan/scan_cpu_complex.c. du and ddelta sum over the states
 * in the lane's registers; dA and constant dB / dC per row through a fixed
 * butterfly over the lanes into the row's workspace slice; variable dB /
 * dC through each warp's partials in shared memory, summed over the
 * block's rows in row order, into the output or (a group split over
 * several tiles) the tile's workspace partial, then over tiles in tile
 * order (scan_cx_reduce_bc). A tile holds a multiple of 8 channels, walked
 * 8 at a time, so that the partials stay under MVRT_CX_BC_BYTES. dA,
 * constant dB / dC, dD and ddelta_bias sum over the batch in batch order
 * (scan_cx_reduce_rows). Every sum has a fixed order: results are bitwise
 * reproducible. Steps past L use delta = 0, u = 0, g = 0 (a = 1, nothing
 * added) and are never stored.
 *
 * TM (steps per lane): 2 for L <= 64 (MambaVision's stage 4 has L = 49:
 * at TM 8 only 7 of 32 lanes would work), else 8 in the forward and 4 in
 * the backward (whose per-step arrays would not fit two blocks per SM at
 * 8). The decay exp(dt A) uses the hardware exp2 and sine / cosine after
 * a two-constant reduction of the angle to [-pi, pi] (their error there,
 * ~1e-6 absolute, is that of rounding the angle dt Im(A) itself at
 * |angle| ~ 10). Any strides; VEC: unit L-strides and 8-element aligned
 * rows of u, delta, z, out (dout, du, ddelta, dz). The per-row carries
 * live in shared memory: N up to a few thousand states (cx_plan says
 * whether a problem fits; the launch refuses one that does not). */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_COMPLEX_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_COMPLEX_CUH

namespace mvrt_scan_gpu {
namespace cx {

/* Compile-time constants; the first four may be set with -D to build a
 * variant plugin for timing (bench/anchors/README.md, LEASE_SCAN_VARIANTS). */
#ifndef MVRT_CX_ROWS
#define MVRT_CX_ROWS 8                      /* rows (warps of 32 lanes) per block */
#endif
#ifndef MVRT_CX_TMF
#define MVRT_CX_TMF 8 /* forward steps per lane for L > 64 (a multiple of 4) */
#endif
#ifndef MVRT_CX_FWD_MINB
#define MVRT_CX_FWD_MINB 2 /* forward blocks per SM the registers must allow */
#endif
#ifndef MVRT_CX_BWD_MINB
#define MVRT_CX_BWD_MINB 2 /* backward blocks per SM the registers must allow */
#endif
#define MVRT_CX_THREADS (32 * MVRT_CX_ROWS)
#define MVRT_CX_SB 8                        /* forward: states staged per round */
#define MVRT_CX_RS_MAX 4                    /* backward: states per round, at most */
#define MVRT_CX_BC_BYTES ((size_t)512 << 20) /* variable dB / dC tile partials, at most */
#define MVRT_CX_SMEM_PAIR ((size_t)110 << 10) /* two blocks fit an SM of 228 KB */

struct cx_plan_t {
    int tmf, tmb;          /* steps per lane: forward, backward */
    int nchunks;           /* backward chunks (32 tmb steps) over L */
    int rs;                /* backward states per round; 0: the problem does not fit */
    int bc_ws;             /* variable dB / dC summed through tile partials in the workspace */
    int64_t dpg;           /* channels per group */
    int64_t fwd_work;      /* forward blocks' work items: batch * groups * 8-row tiles */
    int64_t tpc, ntiles;   /* backward: channels per tile (a multiple of 8), tiles per group */
    int64_t nwork;         /* backward work items: batch * groups * ntiles */
    size_t fwd_smem, bwd_smem;
    size_t state_off, row_off, bc_off, total; /* backward workspace regions (bytes) */
};

static inline size_t cx_align(size_t v) { return (v + 255) & ~(size_t)255; }
/* a warp's partial row of one state: lane i's 2 TM floats at (2 TM + 1) i
 * (scalar stores from the lanes hit different banks) */
static inline int cx_prow(int tm) { return 32 * (2 * tm + 1); }
/* staged B and C of SB states, each row's carries (N, 2) */
static inline size_t cx_fwd_smem(int tm, int64_t N)
{
    return ((size_t)2 * MVRT_CX_SB * 64 * tm + (size_t)MVRT_CX_ROWS * 2 * N) * sizeof(float);
}
/* staged B and C of rs states, the warps' dB / dC partials of rs states, each row's carries */
static inline size_t cx_bwd_smem(int tm, int64_t N, int rs)
{
    return ((size_t)2 * rs * 64 * tm + (size_t)2 * MVRT_CX_ROWS * rs * cx_prow(tm) + (size_t)MVRT_CX_ROWS * 2 * N) *
           sizeof(float);
}

/* A pure function of the problem, the device's shared memory per block
 * and the cap on the variable dB / dC partials (bc_bytes, 0: the default
 * MVRT_CX_BC_BYTES; a test lowers it to reach the tiles of several 8-row
 * groups), so the workspace query and the launch agree. */
static inline cx_plan_t cx_plan(const mvrt_scan_params_t &p, size_t smem_limit, size_t bc_bytes)
{
    cx_plan_t c = {};
    const int64_t N = p.dstate, L = p.seqlen, R = MVRT_CX_ROWS;
    c.tmf = L <= 64 ? 2 : MVRT_CX_TMF;
    c.tmb = L <= 64 ? 2 : 4;
    c.nchunks = (int)((L + 32 * c.tmb - 1) / (32 * c.tmb));
    c.fwd_smem = cx_fwd_smem(c.tmf, N);
    for (int rs = MVRT_CX_RS_MAX; rs >= 1; rs /= 2) {
        const size_t s = cx_bwd_smem(c.tmb, N, rs);
        if (s <= smem_limit && (s <= MVRT_CX_SMEM_PAIR || rs == 1)) {
            c.rs = rs, c.bwd_smem = s;
            break;
        }
    }
    c.dpg = p.dim / p.groups;
    const int64_t base = p.batch * p.groups, t8 = (c.dpg + R - 1) / R;
    c.fwd_work = base * t8;
    int64_t nt = t8;
    const bool var = p.b_variable || p.c_variable;
    if (var) {
        const size_t per_tile = (size_t)base * 2 * (size_t)N * 2 * (size_t)L * sizeof(float);
        const int64_t cap = (int64_t)((bc_bytes ? bc_bytes : MVRT_CX_BC_BYTES) / (per_tile > 0 ? per_tile : 1));
        if (nt > cap) nt = cap < 1 ? 1 : cap;
    }
    c.tpc = (t8 + nt - 1) / nt * R;
    c.ntiles = (c.dpg + c.tpc - 1) / c.tpc;
    c.nwork = base * c.ntiles;
    c.bc_ws = var && c.ntiles > 1;
    size_t off = 0;
    c.state_off = off;
    if (c.nchunks > 1) off = cx_align(off + (size_t)p.batch * c.nchunks * p.dim * 2 * N * sizeof(float));
    c.row_off = off, off = cx_align(off + (size_t)p.batch * p.dim * (6 * N + 2) * sizeof(float));
    c.bc_off = off;
    if (c.bc_ws) off = cx_align(off + (size_t)base * c.ntiles * 2 * N * 2 * L * sizeof(float));
    c.total = off;
    return c;
}

struct cx_kparams {
    mvrt_scan_params_t p;
    cx_plan_t c;
    float *ws_state; /* (Bt, nchunks, Dm, N, 2) chunk-start states (chunks >= 1) */
    float *ws_row;   /* (Bt, Dm, 6N + 2): dA (N, 2), constant dB, constant dC, dD, ddelta_bias */
    float *ws_bc;    /* (Bt, G, ntiles, 2, N, 2L) variable dB / dC tile partials, or NULL */
};

/* ---------------------------------------------------------------- helpers */
/* the pair (re, im) at index (i, j) of a 2-axis c64 operand */
static __device__ __forceinline__ const float *cx_pair(const mvrt_scan_operand_t &o, int64_t i, int64_t j)
{
    return (const float *)o.data + 2 * (i * o.stride[0] + j * o.stride[1]);
}
/* a = exp(dt A) for A = (ar, ai): the hardware exp2, and the hardware
 * sine / cosine of the angle reduced to [-pi, pi] by k 2 pi in two parts
 * (2 pi = 6.28125 + 1.9353071795864769e-3, the first exact in 8 bits). */
static __device__ __forceinline__ void cx_decay(float dt, float ar, float ai, float &re, float &im)
{
    const float mag = mvrt_fast_exp2(dt * ar * MVRT_SCAN_LOG2E);
    const float ang = dt * ai, k = rintf(ang * 0.15915494309189535f);
    const float r = fmaf(-k, 1.9353071795864769e-3f, fmaf(-k, 6.28125f, ang));
    float s, c;
    __sincosf(r, &s, &c);
    re = mag * c, im = mag * s;
}
/* (xr, xi) = (ar, ai) (xr, xi) + (br, bi) */
static __device__ __forceinline__ void cx_fma(float ar, float ai, float &xr, float &xi, float br, float bi)
{
    const float r = fmaf(ar, xr, fmaf(-ai, xi, br)), m = fmaf(ar, xi, fmaf(ai, xr, bi));
    xr = r, xi = m;
}

/* TM steps of one row of a (Bt, Dm, L) f32 operand from element offset
 * off (L-stride o.stride[2]); zeros past nv. VEC: vector loads. */
template <int TM, bool VEC>
static __device__ __forceinline__ void cx_load(float (&v)[TM], const mvrt_scan_operand_t &o, int64_t off, int nv)
{
    const float *src = (const float *)o.data + off;
    if (VEC && nv == TM) {
        if constexpr (TM == 2) {
            const float2 a = *reinterpret_cast<const float2 *>(src);
            v[0] = a.x, v[1] = a.y;
        } else {
#pragma unroll
            for (int i = 0; i < TM / 4; ++i) {
                const float4 a = reinterpret_cast<const float4 *>(src)[i];
                v[4 * i] = a.x, v[4 * i + 1] = a.y, v[4 * i + 2] = a.z, v[4 * i + 3] = a.w;
            }
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) v[i] = i < nv ? src[i * o.stride[2]] : 0.f;
}
template <int TM, bool VEC>
static __device__ __forceinline__ void cx_store(const mvrt_scan_operand_t &o, int64_t off, int nv, const float (&v)[TM])
{
    float *dst = (float *)o.data + off;
    if (VEC && nv == TM) {
        if constexpr (TM == 2) {
            *reinterpret_cast<float2 *>(dst) = make_float2(v[0], v[1]);
        } else {
#pragma unroll
            for (int i = 0; i < TM / 4; ++i)
                reinterpret_cast<float4 *>(dst)[i] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
        if (i < nv) dst[i * o.stride[2]] = v[i];
}
/* offset of (b, d, step l) in a (Bt, Dm, L) operand */
static __device__ __forceinline__ int64_t cx_off(const mvrt_scan_operand_t &o, int64_t b, int64_t d, int64_t l)
{
    return b * o.stride[0] + d * o.stride[1] + l * o.stride[2];
}

/* A lane's TM steps of row (b, d) from step l0 (nv of them valid): u,
 * and delta turned into the step (delta_bias, softplus; 0 past L, so that
 * a = 1 and nothing is added there); returns the sum of the steps (the
 * exponent of the product of the lane's decays). */
template <int TM, bool VEC>
static __device__ __forceinline__ float cx_lane_steps(const mvrt_scan_params_t &p, int64_t b, int64_t d, int64_t l0,
                                                      int nv, float bias, float (&uv)[TM], float (&dl)[TM])
{
    cx_load<TM, VEC>(uv, p.u, cx_off(p.u, b, d, l0), nv);
    cx_load<TM, VEC>(dl, p.delta, cx_off(p.delta, b, d, l0), nv);
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const float v = dl[i] + bias;
        dl[i] = i < nv ? (p.delta_softplus ? fast_softplus(v) : v) : 0.f;
        sum += dl[i];
    }
    return sum;
}

/* Stages the floats [2 c0, 2 c0 + 64 TM) (steps c0 .. c0 + 32 TM as (re,
 * im) pairs) of states [s0, s0 + ns) of a variable B or C (base: its
 * (batch, group) offset) into dst[q][64 TM]; zeros past 2L. All threads
 * of the block, four loads in flight each. */
template <int TM>
static __device__ __forceinline__ void cx_stage(float *dst, const mvrt_scan_operand_t &o, int64_t base, int s0, int ns,
                                                int64_t c0, int64_t L)
{
    constexpr int W = 64 * TM, U = 4;
    const float *src = (const float *)o.data + base;
    const int total = ns * W;
    for (int k0 = threadIdx.x; k0 < total; k0 += MVRT_CX_THREADS * U) {
        float v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int k = k0 + u * MVRT_CX_THREADS, q = k / W;
            const int64_t f = 2 * c0 + (k - q * W);
            v[u] = k < total && f < 2 * L ? src[(int64_t)(s0 + q) * o.stride[2] + f * o.stride[3]] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (k0 + u * MVRT_CX_THREADS < total) dst[k0 + u * MVRT_CX_THREADS] = v[u];
    }
}

/* This lane's TM steps of state n's B or C: from its staged pairs
 * (variable; `staged` at the lane's first step) or the constant (Dm, N)
 * c64 value of row d (the same address in every lane). */
template <int TM>
static __device__ __forceinline__ void cx_steps(float (&re)[TM], float (&im)[TM], bool variable, const float *staged,
                                                const mvrt_scan_operand_t &o, int64_t d, int n)
{
    if (variable) {
        float v[2 * TM];
        lds_vec<2 * TM>(v, staged);
#pragma unroll
        for (int i = 0; i < TM; ++i) re[i] = v[2 * i], im[i] = v[2 * i + 1];
        return;
    }
    const float *q = cx_pair(o, d, n);
    const float r = q[0], m = q[1];
#pragma unroll
    for (int i = 0; i < TM; ++i) re[i] = r, im[i] = m;
}

/* Inclusive scan of the lanes' complex maps x -> a x + b over 32 lanes,
 * earlier lanes first: afterwards lane i holds the map of lanes 0 .. i
 * (x -> a (a' x + b') + b for an earlier map (a', b')); 5 rounds, fixed
 * order. */
static __device__ __forceinline__ void cx_prefix_maps(float &ar, float &ai, float &br, float &bi, int lane)
{
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int src = (lane - o) & 31;
        const float qar = MVRT_SHFL(ar, src, 32), qai = MVRT_SHFL(ai, src, 32);
        float qbr = MVRT_SHFL(br, src, 32), qbi = MVRT_SHFL(bi, src, 32);
        if (lane >= o) {
            cx_fma(ar, ai, qbr, qbi, br, bi); /* a b' + b */
            br = qbr, bi = qbi;
            const float nr = ar * qar - ai * qai, ni = ar * qai + ai * qar;
            ar = nr, ai = ni;
        }
    }
}
/* The incoming state of this lane from the chunk's start state h (lane
 * 0: h itself; lane i: the prefix map of lanes 0 .. i-1 applied to h). */
static __device__ __forceinline__ void cx_incoming(float par, float pai, float pbr, float pbi, float hr, float hi,
                                                   int lane, float &xr, float &xi)
{
    const int src = (lane - 1) & 31;
    const float ear = MVRT_SHFL(par, src, 32), eai = MVRT_SHFL(pai, src, 32);
    const float ebr = MVRT_SHFL(pbr, src, 32), ebi = MVRT_SHFL(pbi, src, 32);
    xr = hr, xi = hi;
    if (lane > 0) cx_fma(ear, eai, xr, xi, ebr, ebi);
}

/* ---------------------------------------------------------------- forward */
/* Launch: blockDim MVRT_CX_THREADS, dynamic shared memory plan.fwd_smem,
 * plan.fwd_work work items (8-row tiles). */
template <int TM, bool VEC>
__global__ void __launch_bounds__(MVRT_CX_THREADS, MVRT_CX_FWD_MINB) scan_cx_fwd_kernel(const cx_kparams k)
{
    constexpr int W = 64 * TM, R = MVRT_CX_ROWS, SB = MVRT_CX_SB;
    const mvrt_scan_params_t &p = k.p;
    extern __shared__ float4 cx_smem4[];
    float *sB = reinterpret_cast<float *>(cx_smem4), *sC = sB + SB * W; /* (SB, W) staged B, C */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, N = (int)p.dstate;
    float *h0 = sC + SB * W + warp * 2 * N; /* this row's states at the chunk's start, (N, 2) */
    const int64_t L = p.seqlen, t8 = (k.c.dpg + R - 1) / R;
    const bool bvar = p.b_variable != 0, cvar = p.c_variable != 0;
    for (int64_t w = blockIdx.x; w < k.c.fwd_work; w += gridDim.x) {
        const int64_t b = w / (p.groups * t8), rest = w - b * p.groups * t8, g = rest / t8;
        const int64_t d = g * k.c.dpg + (rest - g * t8) * R + warp;
        const bool has_row = d < (g + 1) * k.c.dpg;
        const int64_t Bg = b * p.B.stride[0] + g * p.B.stride[1], Cg = b * p.C.stride[0] + g * p.C.stride[1];
        float bias = 0.f, Dv = 0.f;
        if (has_row) {
            if (p.delta_bias.data) bias = ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]];
            if (p.D.data) Dv = ((const float *)p.D.data)[d * p.D.stride[0]];
            for (int n = lane; n < 2 * N; n += 32) h0[n] = 0.f;
        }
        for (int64_t c0 = 0; c0 < L; c0 += 32 * TM) {
            MVRT_SYNCWARP(); /* lane 31's h0 writes of the chunk before (or the zeros) are seen */
            const int64_t l0 = c0 + lane * TM, rem = L - l0;
            const int nv = !has_row || rem <= 0 ? 0 : rem < TM ? (int)rem : TM;
            float uv[TM], dl[TM], du[TM], y[TM];
            const float dl_sum = cx_lane_steps<TM, VEC>(p, b, d, l0, nv, bias, uv, dl);
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                du[i] = dl[i] * uv[i];
                y[i] = 0.f;
            }
            for (int s0 = 0; s0 < N; s0 += SB) {
                const int ns = N - s0 < SB ? N - s0 : SB;
                if (bvar || cvar) {
                    __syncthreads(); /* the previous states' reads of sB / sC are done */
                    if (bvar) cx_stage<TM>(sB, p.B, Bg, s0, ns, c0, L);
                    if (cvar) cx_stage<TM>(sC, p.C, Cg, s0, ns, c0, L);
                    __syncthreads();
                }
                if (!has_row) continue;
                for (int q = 0; q < ns; ++q) {
                    const int n = s0 + q;
                    const float *An = cx_pair(p.A, d, n);
                    const float ar = An[0], ai = An[1];
                    /* read before the shuffles below; lane 31 writes after them */
                    const float hr0 = h0[2 * n], hi0 = h0[2 * n + 1];
                    float br[TM], bi[TM], cr[TM], ci[TM], avr[TM], avi[TM], pbr = 0.f, pbi = 0.f;
                    cx_steps<TM>(br, bi, bvar, sB + q * W + lane * 2 * TM, p.B, d, n);
                    cx_steps<TM>(cr, ci, cvar, sC + q * W + lane * 2 * TM, p.C, d, n);
#pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        cx_decay(dl[i], ar, ai, avr[i], avi[i]);
                        br[i] *= du[i], bi[i] *= du[i];
                        cx_fma(avr[i], avi[i], pbr, pbi, br[i], bi[i]);
                    }
                    float par, pai; /* the product of the lane's a: one exponential, off pb's chain */
                    cx_decay(dl_sum, ar, ai, par, pai);
                    cx_prefix_maps(par, pai, pbr, pbi, lane);
                    float hr, hi;
                    cx_incoming(par, pai, pbr, pbi, hr0, hi0, lane, hr, hi);
#pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        cx_fma(avr[i], avi[i], hr, hi, br[i], bi[i]);
                        y[i] += 2.f * (hr * cr[i] - hi * ci[i]);
                    }
                    if (lane == 31) h0[2 * n] = hr, h0[2 * n + 1] = hi;
                }
            }
            if (has_row && nv > 0) {
                float zv[TM];
                if (p.z.data) cx_load<TM, VEC>(zv, p.z, cx_off(p.z, b, d, l0), nv);
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    y[i] += Dv * uv[i];
                    if (p.z.data) y[i] *= zv[i] * fast_sigmoid(zv[i]);
                }
                cx_store<TM, VEC>(p.out, cx_off(p.out, b, d, l0), nv, y);
            }
        }
        MVRT_SYNCWARP();
        if (has_row && p.last_state.data)
            for (int n = lane; n < N; n += 32) {
                float *s = (float *)p.last_state.data +
                           2 * (b * p.last_state.stride[0] + d * p.last_state.stride[1] + n * p.last_state.stride[2]);
                s[0] = h0[2 * n], s[1] = h0[2 * n + 1];
            }
        MVRT_SYNCWARP(); /* h0 is reset for the next row after these reads */
    }
}

/* ---------------------------------------------------------------- backward */
/* A block's sum of variable dB (which 0) or dC (which 1) at state n, float
 * f of the 2L axis: into its tile's partial (several tiles per group) or
 * dB / dC; `add`: onto what the tile's earlier rows stored. */
static __device__ __forceinline__ void cx_store_dbc(const cx_kparams &k, int64_t b, int64_t g, int64_t tile, int which,
                                                    int n, int64_t f, float v, bool add)
{
    const mvrt_scan_params_t &p = k.p;
    float *dst;
    if (k.ws_bc) {
        dst = k.ws_bc + ((((b * p.groups + g) * k.c.ntiles + tile) * 2 + which) * p.dstate + n) * 2 * p.seqlen + f;
    } else {
        const mvrt_scan_operand_t &o = which == 0 ? p.dB : p.dC;
        dst = (float *)o.data + b * o.stride[0] + g * o.stride[1] + n * o.stride[2] + f * o.stride[3];
    }
    *dst = add ? *dst + v : v;
}

/* Launch: blockDim MVRT_CX_THREADS, dynamic shared memory plan.bwd_smem,
 * plan.nwork work items; then launch_cx_reductions. */
template <int TM, bool VEC>
__global__ void __launch_bounds__(MVRT_CX_THREADS, MVRT_CX_BWD_MINB) scan_cx_bwd_kernel(const cx_kparams k)
{
    constexpr int W = 64 * TM, R = MVRT_CX_ROWS, PR = 32 * (2 * TM + 1);
    const mvrt_scan_params_t &p = k.p;
    const cx_plan_t &c = k.c;
    extern __shared__ float4 cx_smem4[];
    const int rs = c.rs, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int N = (int)p.dstate, nchunks = c.nchunks, K = 6 * N + 2;
    const int64_t L = p.seqlen;
    float *sB = reinterpret_cast<float *>(cx_smem4); /* (rs, W) staged B */
    float *sC = sB + rs * W;                          /* (rs, W) staged C */
    float *wB = sC + rs * W;                          /* (R, rs, PR) each row's dB of the round's states */
    float *wC = wB + R * rs * PR;                     /* (R, rs, PR) dC */
    float *carry = wC + R * rs * PR + warp * 2 * N;   /* this row's x (pass 1) / mu (pass 2) carry, (N, 2) */
    const bool sp = p.delta_softplus != 0, bvar = p.b_variable != 0, cvar = p.c_variable != 0, hz = p.z.data != 0;
    float *wBl = wB + warp * rs * PR + lane * (2 * TM + 1), *wCl = wC + warp * rs * PR + lane * (2 * TM + 1);
    for (int64_t w = blockIdx.x; w < c.nwork; w += gridDim.x) {
        const int64_t b = w / (p.groups * c.ntiles), rest = w - b * p.groups * c.ntiles, g = rest / c.ntiles;
        const int64_t tile = rest - g * c.ntiles, dt0 = g * c.dpg + tile * c.tpc;
        const int64_t dend = dt0 + c.tpc < (g + 1) * c.dpg ? dt0 + c.tpc : (g + 1) * c.dpg;
        const int64_t Bg = b * p.B.stride[0] + g * p.B.stride[1], Cg = b * p.C.stride[0] + g * p.C.stride[1];
        for (int64_t dsub = dt0; dsub < dend; dsub += R) { /* the tile's rows, 8 at a time */
            const int nrows = dend - dsub < R ? (int)(dend - dsub) : R;
            const bool has_row = warp < nrows, add = dsub > dt0;
            const int64_t d = dsub + (has_row ? warp : 0);
            const float bias =
                has_row && p.delta_bias.data ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
            const float Dv = has_row && p.D.data ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
            float *hsave = nchunks > 1 ? k.ws_state + (b * nchunks * p.dim + d) * 2 * N : 0;
            const int64_t hstep = p.dim * 2 * (int64_t)N;
            float *rsum = k.ws_row + (b * p.dim + d) * K; /* this row's sums over L */

            /* ---- pass 1: every chunk's start state */
            for (int n = lane; n < 2 * N; n += 32) carry[n] = 0.f;
            MVRT_SYNCWARP();
            for (int ck = 0; ck + 1 < nchunks; ++ck) {
                const int64_t c0 = (int64_t)ck * 32 * TM, l0 = c0 + lane * TM, rem = L - l0;
                const int nv = !has_row || rem <= 0 ? 0 : rem < TM ? (int)rem : TM;
                float du[TM], dl[TM];
                const float dl_sum = cx_lane_steps<TM, VEC>(p, b, d, l0, nv, bias, du, dl);
#pragma unroll
                for (int i = 0; i < TM; ++i) du[i] *= dl[i]; /* delta' u */
                for (int s0 = 0; s0 < N; s0 += rs) {
                    const int ns = N - s0 < rs ? N - s0 : rs;
                    if (bvar) {
                        __syncthreads();
                        cx_stage<TM>(sB, p.B, Bg, s0, ns, c0, L);
                        __syncthreads();
                    }
                    if (!has_row) continue;
                    for (int q = 0; q < ns; ++q) {
                        const int n = s0 + q;
                        const float *An = cx_pair(p.A, d, n);
                        const float ar = An[0], ai = An[1];
                        float br[TM], bi[TM], pbr = 0.f, pbi = 0.f;
                        cx_steps<TM>(br, bi, bvar, sB + q * W + lane * 2 * TM, p.B, d, n);
#pragma unroll
                        for (int i = 0; i < TM; ++i) {
                            float avr, avi;
                            cx_decay(dl[i], ar, ai, avr, avi);
                            cx_fma(avr, avi, pbr, pbi, br[i] * du[i], bi[i] * du[i]);
                        }
                        float par, pai;
                        cx_decay(dl_sum, ar, ai, par, pai);
                        cx_prefix_maps(par, pai, pbr, pbi, lane);
                        if (lane == 31) { /* the chunk's map applied to its start state: the next chunk's */
                            float hr = carry[2 * n], hi = carry[2 * n + 1];
                            cx_fma(par, pai, hr, hi, pbr, pbi);
                            carry[2 * n] = hr, carry[2 * n + 1] = hi;
                            hsave[(ck + 1) * hstep + 2 * n] = hr, hsave[(ck + 1) * hstep + 2 * n + 1] = hi;
                        }
                    }
                }
            }

            /* ---- pass 2: chunks in reverse */
            __threadfence_block(); /* lane 31's saved states (global memory) before the warp's reads below */
            MVRT_SYNCWARP();
            for (int n = lane; n < 2 * N; n += 32) carry[n] = 0.f;
            if (has_row)
                for (int n = lane; n < K; n += 32) rsum[n] = 0.f;
            float dD = 0.f, dbias = 0.f;
            for (int ck = nchunks - 1; ck >= 0; --ck) {
                MVRT_SYNCWARP(); /* lane 0's carry and sum writes are seen */
                const int64_t c0 = (int64_t)ck * 32 * TM, l0 = c0 + lane * TM, rem = L - l0;
                const int nv = !has_row || rem <= 0 ? 0 : rem < TM ? (int)rem : TM;
                /* per step: du_ = delta' u; s1 = sum_n Re(lam conj B), s2 = sum_n Re(lam conj(A a x_{t-1})),
                 * y = sum_n 2 Re(x C) */
                float du_[TM], dl[TM], gv[TM], y[TM], s1[TM], s2[TM];
                const float dl_sum = cx_lane_steps<TM, VEC>(p, b, d, l0, nv, bias, du_, dl);
                cx_load<TM, VEC>(gv, p.dout, cx_off(p.dout, b, d, l0), nv);
                if (hz) { /* g = dout silu(z) */
                    float zv[TM];
                    cx_load<TM, VEC>(zv, p.z, cx_off(p.z, b, d, l0), nv);
#pragma unroll
                    for (int i = 0; i < TM; ++i) gv[i] *= zv[i] * fast_sigmoid(zv[i]);
                }
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    du_[i] *= dl[i];
                    y[i] = s1[i] = s2[i] = 0.f;
                }
                const float *hstart = ck > 0 ? hsave + ck * hstep : 0;
                for (int s0 = 0; s0 < N; s0 += rs) {
                    const int ns = N - s0 < rs ? N - s0 : rs;
                    if (bvar || cvar) {
                        __syncthreads(); /* the round before: staged rows and partials are read */
                        if (bvar) cx_stage<TM>(sB, p.B, Bg, s0, ns, c0, L);
                        if (cvar) cx_stage<TM>(sC, p.C, Cg, s0, ns, c0, L);
                        __syncthreads();
                    }
                    if (has_row) {
#pragma unroll 1
                        for (int q = 0; q < ns; ++q) {
                            const int n = s0 + q;
                            const float *An = cx_pair(p.A, d, n);
                            const float ar = An[0], ai = An[1];
                            const float hr0 = hstart ? hstart[2 * n] : 0.f, hi0 = hstart ? hstart[2 * n + 1] : 0.f;
                            const float mr0 = carry[2 * n], mi0 = carry[2 * n + 1]; /* read before lane 0 writes */
                            float br[TM], bi[TM], cr[TM], ci[TM], avr[TM], avi[TM], hvr[TM], hvi[TM];
                            cx_steps<TM>(br, bi, bvar, sB + q * W + lane * 2 * TM, p.B, d, n);
                            cx_steps<TM>(cr, ci, cvar, sC + q * W + lane * 2 * TM, p.C, d, n);
                            float pbr = 0.f, pbi = 0.f, qbr = 0.f, qbi = 0.f;
#pragma unroll
                            for (int i = 0; i < TM; ++i) {
                                cx_decay(dl[i], ar, ai, avr[i], avi[i]);
                                cx_fma(avr[i], avi[i], pbr, pbi, br[i] * du_[i], bi[i] * du_[i]);
                            }
                            /* the lane's adjoint map mu_in -> conj(prod a) mu_in + q, from its last step back */
#pragma unroll
                            for (int i = TM - 1; i >= 0; --i) {
                                const float tr = qbr + 2.f * gv[i] * cr[i], ti = qbi - 2.f * gv[i] * ci[i];
                                qbr = avr[i] * tr + avi[i] * ti, qbi = avr[i] * ti - avi[i] * tr;
                            }
                            float par, pai;
                            cx_decay(dl_sum, ar, ai, par, pai);
                            float rar = par, rai = -pai;
#pragma unroll
                            for (int o = 1; o < 32; o <<= 1) { /* x: prefix over earlier lanes; mu: suffix over later */
                                const int pf = (lane - o) & 31, sf = (lane + o) & 31;
                                const float far = MVRT_SHFL(par, pf, 32), fai = MVRT_SHFL(pai, pf, 32);
                                const float fbr = MVRT_SHFL(pbr, pf, 32), fbi = MVRT_SHFL(pbi, pf, 32);
                                const float sar = MVRT_SHFL(rar, sf, 32), sai = MVRT_SHFL(rai, sf, 32);
                                const float sbr = MVRT_SHFL(qbr, sf, 32), sbi = MVRT_SHFL(qbi, sf, 32);
                                if (lane >= o) {
                                    float xr = fbr, xi = fbi;
                                    cx_fma(par, pai, xr, xi, pbr, pbi);
                                    pbr = xr, pbi = xi;
                                    const float nr = par * far - pai * fai, ni = par * fai + pai * far;
                                    par = nr, pai = ni;
                                }
                                if (lane + o < 32) {
                                    float xr = sbr, xi = sbi;
                                    cx_fma(rar, rai, xr, xi, qbr, qbi);
                                    qbr = xr, qbi = xi;
                                    const float nr = rar * sar - rai * sai, ni = rar * sai + rai * sar;
                                    rar = nr, rai = ni;
                                }
                            }
                            float hinr, hini;
                            cx_incoming(par, pai, pbr, pbi, hr0, hi0, lane, hinr, hini);
                            float mur, mui; /* mu entering the lane's last step from the lanes after it */
                            {
                                const int sf = (lane + 1) & 31;
                                const float nar = MVRT_SHFL(rar, sf, 32), nai = MVRT_SHFL(rai, sf, 32);
                                const float nbr = MVRT_SHFL(qbr, sf, 32), nbi = MVRT_SHFL(qbi, sf, 32);
                                mur = mr0, mui = mi0;
                                if (lane < 31) cx_fma(nar, nai, mur, mui, nbr, nbi);
                            }
                            {
                                float hr = hinr, hi = hini;
#pragma unroll
                                for (int i = 0; i < TM; ++i) {
                                    cx_fma(avr[i], avi[i], hr, hi, br[i] * du_[i], bi[i] * du_[i]);
                                    hvr[i] = hr, hvi[i] = hi;
                                    if (hz) y[i] += 2.f * (hr * cr[i] - hi * ci[i]);
                                }
                            }
                            float sAr = 0.f, sAi = 0.f, sBr = 0.f, sBi = 0.f, sCr = 0.f, sCi = 0.f;
                            float *pB = wBl + q * PR, *pC = wCl + q * PR;
#pragma unroll
                            for (int i = TM - 1; i >= 0; --i) {
                                const float hpr = i > 0 ? hvr[i > 0 ? i - 1 : 0] : hinr;
                                const float hpi = i > 0 ? hvi[i > 0 ? i - 1 : 0] : hini;
                                /* lam_t = mu + 2 g conj(C_t) */
                                const float lr = mur + 2.f * gv[i] * cr[i], li = mui - 2.f * gv[i] * ci[i];
                                /* w = a_t x_{t-1}, A w */
                                const float wr = avr[i] * hpr - avi[i] * hpi, wi = avr[i] * hpi + avi[i] * hpr;
                                const float awr = ar * wr - ai * wi, awi = ar * wi + ai * wr;
                                s1[i] += lr * br[i] + li * bi[i]; /* Re(lam conj(B)) */
                                s2[i] += lr * awr + li * awi;     /* Re(lam conj(A w)) */
                                sAr += dl[i] * (wr * lr + wi * li); /* dA += dt conj(w) lam */
                                sAi += dl[i] * (wr * li - wi * lr);
                                /* dB += dt u lam; dC += 2 g conj(x_t) */
                                const float gBr = du_[i] * lr, gBi = du_[i] * li;
                                const float gCr = 2.f * gv[i] * hvr[i], gCi = -2.f * gv[i] * hvi[i];
                                if (bvar) pB[2 * i] = gBr, pB[2 * i + 1] = gBi;
                                else sBr += gBr, sBi += gBi;
                                if (cvar) pC[2 * i] = gCr, pC[2 * i + 1] = gCi;
                                else sCr += gCr, sCi += gCi;
                                /* carry to t - 1: conj(a_t) lam_t */
                                mur = avr[i] * lr + avi[i] * li, mui = avr[i] * li - avi[i] * lr;
                            }
                            if (lane == 0) carry[2 * n] = mur, carry[2 * n + 1] = mui;
                            sAr = group_sum<32>(sAr), sAi = group_sum<32>(sAi);
                            if (!bvar) sBr = group_sum<32>(sBr), sBi = group_sum<32>(sBi);
                            if (!cvar) sCr = group_sum<32>(sCr), sCi = group_sum<32>(sCi);
                            if (lane == 0) {
                                rsum[2 * n] += sAr, rsum[2 * n + 1] += sAi;
                                if (!bvar) rsum[2 * N + 2 * n] += sBr, rsum[2 * N + 2 * n + 1] += sBi;
                                if (!cvar) rsum[4 * N + 2 * n] += sCr, rsum[4 * N + 2 * n + 1] += sCi;
                            }
                        }
                    }
                    if (bvar || cvar) { /* the round's dB / dC: the block's rows summed in order */
                        __syncthreads();
                        for (int e = threadIdx.x; e < ns * W; e += MVRT_CX_THREADS) {
                            const int q = e / W, j = e - q * W, step = j >> 1;
                            const int o = q * PR + (step / TM) * (2 * TM + 1) + 2 * (step % TM) + (j & 1);
                            if (2 * c0 + j >= 2 * L) continue;
                            if (bvar) {
                                float s = 0.f;
                                for (int r = 0; r < nrows; ++r) s += wB[r * rs * PR + o];
                                cx_store_dbc(k, b, g, tile, 0, s0 + q, 2 * c0 + j, s, add);
                            }
                            if (cvar) {
                                float s = 0.f;
                                for (int r = 0; r < nrows; ++r) s += wC[r * rs * PR + o];
                                cx_store_dbc(k, b, g, tile, 1, s0 + q, 2 * c0 + j, s, add);
                            }
                        }
                    }
                }
                if (has_row && nv > 0) {
                    /* dz = dout silu'(z) (y + D u); z and dout are loaded again rather than kept */
                    float uv[TM], gdu[TM], gdd[TM], zf[TM];
                    cx_load<TM, VEC>(uv, p.u, cx_off(p.u, b, d, l0), nv);
                    if (hz) {
                        float dv[TM];
                        cx_load<TM, VEC>(zf, p.z, cx_off(p.z, b, d, l0), nv);
                        cx_load<TM, VEC>(dv, p.dout, cx_off(p.dout, b, d, l0), nv);
#pragma unroll
                        for (int i = 0; i < TM; ++i) {
                            const float zz = zf[i], sig = fast_sigmoid(zz);
                            zf[i] = dv[i] * sig * (1.f + zz * (1.f - sig)) * (y[i] + Dv * uv[i]);
                        }
                    }
#pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        dD += gv[i] * uv[i];
                        gdu[i] = dl[i] * s1[i] + Dv * gv[i];
                        gdd[i] = uv[i] * s1[i] + s2[i];
                        if (sp) gdd[i] *= -expm1f(-dl[i]); /* softplus' = sigmoid = 1 - exp(-softplus) */
                        if (i < nv) dbias += gdd[i];
                    }
                    cx_store<TM, VEC>(p.du, cx_off(p.du, b, d, l0), nv, gdu);
                    cx_store<TM, VEC>(p.ddelta, cx_off(p.ddelta, b, d, l0), nv, gdd);
                    if (hz) cx_store<TM, VEC>(p.dz, cx_off(p.dz, b, d, l0), nv, zf);
                }
            }
            dD = group_sum<32>(dD);
            dbias = group_sum<32>(dbias);
            MVRT_SYNCWARP(); /* lane 0's sums are seen */
            if (has_row && lane == 0) rsum[6 * N] = dD, rsum[6 * N + 1] = dbias;
            MVRT_SYNCWARP(); /* carry is read before the next rows reset it */
        }
    }
}

/* The backward's fixed-order sums of its partials: ws_row (Bt, Dm, 6N + 2) holds each row's dA
 * (N, 2), constant dB, constant dC, dD and ddelta_bias; ws_bc (Bt, G,
 * ntiles, 2, N, 2L), or NULL, the tiles' variable dB / dC partials. */
struct cx_sums {
    mvrt_scan_params_t p;
    const float *ws_row, *ws_bc;
    int64_t ntiles;
};

/* dA, constant dB / dC, dD, ddelta_bias: the rows' sums over the batch, in
 * batch order; a thread per (channel, sum). */
__global__ void __launch_bounds__(256) scan_cx_reduce_rows(const cx_sums k)
{
    const mvrt_scan_params_t &p = k.p;
    const int64_t N = p.dstate, per = 6 * N + 2;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.dim * per) return;
    const int64_t d = i / per, j = i % per;
    const int64_t which = j < 6 * N ? j / (2 * N) : 3 + (j - 6 * N); /* 0 dA, 1 dB, 2 dC, 3 dD, 4 dbias */
    if ((which == 1 && p.b_variable) || (which == 2 && p.c_variable) || (which == 3 && !p.dD.data) ||
        (which == 4 && !p.ddelta_bias.data))
        return;
    float t = 0.f;
    for (int64_t b = 0; b < p.batch; b++) t += k.ws_row[(b * p.dim + d) * per + j];
    if (which <= 2) {
        const int64_t n = (j % (2 * N)) / 2, part = j % 2;
        const mvrt_scan_operand_t &o = which == 0 ? p.dA : which == 1 ? p.dB : p.dC;
        ((float *)o.data)[2 * (d * o.stride[0] + n * o.stride[1]) + part] = t;
    } else if (which == 3) {
        ((float *)p.dD.data)[d * p.dD.stride[0]] = t;
    } else {
        ((float *)p.ddelta_bias.data)[d * p.ddelta_bias.stride[0]] = t;
    }
}

/* Variable dB / dC of a group split over several tiles: the tiles'
 * partials summed in tile order; a thread per (batch, group, B or C,
 * state, float of 2L). */
__global__ void __launch_bounds__(256) scan_cx_reduce_bc(const cx_sums k)
{
    const mvrt_scan_params_t &p = k.p;
    const int64_t N = p.dstate, S = 2 * p.seqlen;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.batch * p.groups * 2 * N * S) return;
    const int64_t s = i % S, n = i / S % N, which = i / (S * N) % 2, bg = i / (S * N * 2);
    if ((which == 0 && !p.b_variable) || (which == 1 && !p.c_variable)) return;
    float t = 0.f;
    for (int64_t tile = 0; tile < k.ntiles; tile++)
        t += k.ws_bc[((bg * k.ntiles + tile) * 2 + which) * N * S + n * S + s];
    const mvrt_scan_operand_t &o = which == 0 ? p.dB : p.dC;
    const int64_t b = bg / p.groups, g = bg % p.groups;
    ((float *)o.data)[b * o.stride[0] + g * o.stride[1] + n * o.stride[2] + s * o.stride[3]] = t;
}

/* Queues both sums (the tiles' one only with ws_bc) on stream s. */
static inline mvrt_gpu_error_t launch_cx_reductions(const mvrt_scan_params_t &p, const float *ws_row,
                                                   const float *ws_bc, int64_t ntiles, mvrt_gpu_stream_t s)
{
    const cx_sums k = {p, ws_row, ws_bc, ntiles};
    scan_cx_reduce_rows<<<grid_for((p.dim * (6 * p.dstate + 2) + 255) / 256), 256, 0, s>>>(k);
    mvrt_gpu_error_t e = mvrt_gpu_get_last_error();
    if (e != MVRT_GPU_SUCCESS || !ws_bc) return e;
    scan_cx_reduce_bc<<<grid_for((p.batch * p.groups * 2 * p.dstate * 2 * p.seqlen + 255) / 256), 256, 0, s>>>(k);
    return mvrt_gpu_get_last_error();
}

/* ---------------------------------------------------------------- launch */
/* VEC's conditions: unit L-strides and 8-element aligned rows of every
 * (Bt, Dm, L) operand the kernel reads or writes. */
static inline bool cx_vec(const mvrt_scan_params_t &p, bool bwd)
{
    const mvrt_scan_operand_t *rows[] = {&p.u, &p.delta, &p.out, &p.z, &p.dout, &p.du, &p.ddelta, &p.dz};
    for (const mvrt_scan_operand_t *o : rows) {
        if (!o->data || (!bwd && (o == &p.dout || o == &p.du || o == &p.ddelta || o == &p.dz))) continue;
        if (bwd && o == &p.out) continue;
        if (!wsc_vec_operand(*o, 2, 3, 4)) return false;
    }
    return true;
}

static inline mvrt_gpu_error_t launch_cx_fwd(const mvrt_scan_params_t &p, size_t smem_limit, mvrt_gpu_stream_t s)
{
    cx_kparams k = {};
    k.p = p;
    k.c = cx_plan(p, smem_limit, 0);
    if (k.c.fwd_smem > smem_limit) return gpuErrorInvalidConfiguration;
    const bool vec = cx_vec(p, false);
    constexpr int TM = MVRT_CX_TMF;
    void (*fn)(const cx_kparams) = k.c.tmf == 2 ? (vec ? scan_cx_fwd_kernel<2, true> : scan_cx_fwd_kernel<2, false>)
                                                : (vec ? scan_cx_fwd_kernel<TM, true> : scan_cx_fwd_kernel<TM, false>);
    return launch_scan_kernel(fn, k, k.c.fwd_work, MVRT_CX_THREADS, k.c.fwd_smem, s);
}

/* plan is cx_plan(p, smem_limit, ...); the caller checked p.workspace_bytes >= plan.total. */
static inline mvrt_gpu_error_t launch_cx_bwd(const mvrt_scan_params_t &p, const cx_plan_t &plan, mvrt_gpu_stream_t s)
{
    if (plan.rs == 0) return gpuErrorInvalidConfiguration;
    cx_kparams k = {};
    k.p = p;
    k.c = plan;
    char *ws = (char *)p.workspace;
    k.ws_state = (float *)(ws + plan.state_off);
    k.ws_row = (float *)(ws + plan.row_off);
    k.ws_bc = plan.bc_ws ? (float *)(ws + plan.bc_off) : nullptr;
    const bool vec = cx_vec(p, true);
    void (*fn)(const cx_kparams) = plan.tmb == 2 ? (vec ? scan_cx_bwd_kernel<2, true> : scan_cx_bwd_kernel<2, false>)
                                                 : (vec ? scan_cx_bwd_kernel<4, true> : scan_cx_bwd_kernel<4, false>);
    const mvrt_gpu_error_t e = launch_scan_kernel(fn, k, plan.nwork, MVRT_CX_THREADS, plan.bwd_smem, s);
    return e != MVRT_GPU_SUCCESS ? e : launch_cx_reductions(p, k.ws_row, k.ws_bc, plan.ntiles, s);
}

} /* namespace cx */
} /* namespace mvrt_scan_gpu */

#endif
