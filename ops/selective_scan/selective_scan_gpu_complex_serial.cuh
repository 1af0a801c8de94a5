/* The serial complex-A kernels, the default until the chunked ones
 * (selective_scan_gpu_complex.cuh) have run on a GPU: they replace these
 * once `ctest -L cuda` passes with them and they measure faster (issue
 * #32; docs/performance.md, "Complex A"). The selective scan with a
 * complex A on GPUs (CUDA and HIP from this one source): mamba_ssm's selective_scan_ref with a complex A, f32 inputs
 * (the runtime refuses others). Semantics and storage:
 * shared/spec/selective_scan.md, "Complex A"; the recurrences and gradient
 * formulas are the CPU kernel's (ops/selective_scan/scan_cpu_complex.c,
 * where they are derived):
 *   a_t = exp(dt A),  x_t = a_t x_{t-1} + dt u B_t,  y_t = 2 Re(sum_n x_t C_t)
 *   lam_t = 2 g_t conj(C_t) + conj(a_{t+1}) lam_{t+1}.
 *
 * Layout: LPR consecutive lanes per unit of work (the next power of two
 * >= N up to 16 states, else the whole warp), lane j of a unit owning the
 * states j, j + LPR, ... (SPL of them, N <= SPL * LPR), so a warp works on
 * MVRT_WARP_SIZE / LPR units side by side (e.g. 4 rows at N = 8); a
 * state's values never leave its lane, so the sums over states (y, du,
 * ddelta) are the fixed butterfly group_sum over the unit's lanes and
 * nothing else crosses lanes. Lanes past the last unit (or past the last
 * channel of a shorter tile) compute on a clamped index and store no
 * result (only into workspace slices of their own), so every lane takes
 * every shuffle.
 *   forward: a unit is one (batch, channel) row;
 *   backward: a unit is (batch, group, a tile of the group's channels),
 *     walked channel by channel in order. Per channel the forward is run
 *     once saving the state at every CH-step chunk start, then chunks are
 *     walked from the end: the chunk's states are recomputed into the
 *     unit's history (workspace), and the adjoint runs back over them.
 *     Variable dB / dC of the unit's channels are summed in channel order
 *     into the unit's own slice of the workspace, then over the tiles in
 *     tile order; dA, constant dB / dC, dD and
 *     ddelta_bias are summed per row into the workspace and over the batch
 *     in batch order (both by cx_chunked::launch_cx_reductions, shared with
 *     the chunked kernels). Every sum has a fixed order:
 *     results are bitwise reproducible.
 * The decay exp(dt A) uses the hardware exp2 and sine / cosine after a
 * two-constant reduction of the angle to [-pi, pi] (their error there,
 * ~1e-6 absolute, is that of rounding the angle dt Im(A) itself at
 * |angle| ~ 10). No speed target in issue #32 covers complex A yet: per
 * step the lanes of a unit load the same u / delta, and the backward
 * re-reads its history from global memory (L2). The units' count and the
 * chunk length are planned by cx_plan so that the workspace stays within
 * a few hundred MB for any shape. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_COMPLEX_SERIAL_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_COMPLEX_SERIAL_CUH

#include "selective_scan_gpu_complex.cuh" /* cx_chunked::launch_cx_reductions */

namespace mvrt_scan_gpu {
namespace cx_serial {

/* Warps per block of both row kernels. */
#define MVRT_CX_WARPS 4
/* The backward aims at this many units (warps) when the batch and groups
 * alone give fewer; variable dB / dC partials are capped at
 * MVRT_CX_BC_BYTES (fewer, longer tiles past it). */
#define MVRT_CX_UNITS 16384
#define MVRT_CX_BC_BYTES ((size_t)512 << 20)

struct cx_plan_t {
    int np;             /* lanes per unit: 1, 2, 4, 8, 16, or 0 for the whole warp */
    int spl;            /* states per lane: 1, 2, 4 or 8 */
    int upw;            /* units per warp: warp width / lanes per unit */
    int ch;             /* backward chunk length */
    int64_t nch;        /* chunks over L */
    int64_t ntiles;     /* channel tiles per group */
    int64_t tpc;        /* channels per tile (the last may have fewer) */
    int64_t units;      /* batch * groups * ntiles */
    int64_t slots;      /* units rounded up to whole warps: the per-unit workspace slices */
    size_t row_off, ck_off, hist_off, ys_off, bc_off, total; /* workspace regions (bytes) */
};

static inline size_t cx_align(size_t v) { return (v + 255) & ~(size_t)255; }

/* A pure function of the problem and the warp width, so the workspace
 * query and the launch agree. */
static inline cx_plan_t cx_plan(const mvrt_scan_params_t &p, int warp_size)
{
    cx_plan_t c = {};
    const int64_t N = p.dstate, W = warp_size > 0 ? warp_size : 32;
    c.np = N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : N <= 8 ? 8 : N <= 16 ? 16 : 0;
    c.spl = N <= W ? 1 : N <= 2 * W ? 2 : N <= 4 * W ? 4 : 8;
    c.upw = c.np ? (int)(W / c.np) : 1;
    c.ch = N <= 16 ? 64 : N <= 64 ? 32 : 16;
    c.nch = (p.seqlen + c.ch - 1) / c.ch;
    const int64_t dpg = p.dim / p.groups, base = p.batch * p.groups;
    int64_t nt = (MVRT_CX_UNITS + base - 1) / base;
    if (p.b_variable || p.c_variable) {
        const size_t per_tile = (size_t)base * 2 * (size_t)N * 2 * (size_t)p.seqlen * sizeof(float);
        const int64_t cap = (int64_t)(MVRT_CX_BC_BYTES / (per_tile > 0 ? per_tile : 1));
        if (nt > cap) nt = cap;
    }
    if (nt < 1) nt = 1;
    if (nt > dpg) nt = dpg;
    c.tpc = (dpg + nt - 1) / nt;
    c.ntiles = (dpg + c.tpc - 1) / c.tpc;
    c.units = base * c.ntiles;
    c.slots = (c.units + c.upw - 1) / c.upw * c.upw;
    const size_t rowsums = 6 * (size_t)N + 2;
    size_t off = 0;
    c.row_off = off, off = cx_align(off + (size_t)(p.batch * p.dim) * rowsums * sizeof(float));
    c.ck_off = off, off = cx_align(off + (size_t)c.slots * (size_t)c.nch * 2 * (size_t)N * sizeof(float));
    c.hist_off = off, off = cx_align(off + (size_t)c.slots * (size_t)c.ch * 2 * (size_t)N * sizeof(float));
    c.ys_off = off, off = cx_align(off + (size_t)c.slots * (size_t)c.ch * sizeof(float));
    c.bc_off = off;
    if (p.b_variable || p.c_variable)
        off = cx_align(off + (size_t)c.slots * 2 * (size_t)N * 2 * (size_t)p.seqlen * sizeof(float));
    c.total = off;
    return c;
}

struct cx_kparams {
    mvrt_scan_params_t p;
    cx_plan_t c;
    float *ws_row, *ws_ck, *ws_hist, *ws_ys, *ws_bc;
};

/* ---------------------------------------------------------------- helpers */
static __device__ __forceinline__ float cx_at3(const mvrt_scan_operand_t &o, int64_t i, int64_t j, int64_t k)
{
    return ((const float *)o.data)[i * o.stride[0] + j * o.stride[1] + k * o.stride[2]];
}
static __device__ __forceinline__ float *cx_ptr3(const mvrt_scan_operand_t &o, int64_t i, int64_t j, int64_t k)
{
    return (float *)o.data + i * o.stride[0] + j * o.stride[1] + k * o.stride[2];
}
/* the pair (re, im) at index (i, j) of a 2-axis c64 operand */
static __device__ __forceinline__ float *cx_pair(const mvrt_scan_operand_t &o, int64_t i, int64_t j)
{
    return (float *)o.data + 2 * (i * o.stride[0] + j * o.stride[1]);
}
/* The step of (b, d, t) after delta_bias and softplus; v before softplus. */
static __device__ __forceinline__ float cx_step(const mvrt_scan_params_t &p, int64_t b, int64_t d, int64_t t,
                                                float bias, float &v)
{
    v = cx_at3(p.delta, b, d, t) + bias;
    return p.delta_softplus ? mvrt_softplusf(v) : v;
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
static __device__ __forceinline__ float cx_sigmoid(float v) { return 1.f / (1.f + expf(-v)); }

/* Per-lane constants of channel d: A, and constant B / C, of the lane's
 * states; the channel's delta_bias and D (0 where absent). */
template <int LPR, int SPL> struct cx_row_consts {
    float ar[SPL], ai[SPL], br[SPL], bi[SPL], cr[SPL], ci[SPL];
    float bias, Dd;
    __device__ __forceinline__ void load(const mvrt_scan_params_t &p, int64_t d, int j)
    {
        bias = p.delta_bias.data ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
        Dd = p.D.data ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
#pragma unroll
        for (int k = 0; k < SPL; k++) {
            const int64_t n = j + (int64_t)k * LPR;
            ar[k] = ai[k] = br[k] = bi[k] = cr[k] = ci[k] = 0.f;
            if (n >= p.dstate) continue;
            const float *a = cx_pair(p.A, d, n);
            ar[k] = a[0], ai[k] = a[1];
            if (!p.b_variable) {
                const float *q = cx_pair(p.B, d, n);
                br[k] = q[0], bi[k] = q[1];
            }
            if (!p.c_variable) {
                const float *q = cx_pair(p.C, d, n);
                cr[k] = q[0], ci[k] = q[1];
            }
        }
    }
};
/* B or C of state n at step t: variable ((re, im) at steps 2t, 2t + 1) or the constant */
static __device__ __forceinline__ void cx_bc(const mvrt_scan_operand_t &o, int variable, int64_t b, int64_t g,
                                             int64_t n, int64_t t, float cre, float cim, float &re, float &im)
{
    if (!variable) {
        re = cre, im = cim;
        return;
    }
    const float *q = (const float *)o.data + b * o.stride[0] + g * o.stride[1] + n * o.stride[2];
    re = q[(2 * t) * o.stride[3]];
    im = q[(2 * t + 1) * o.stride[3]];
}

/* One step of row (b, d) for the lane's states: x advanced from x_{t-1}
 * to x_t; returns the lane's part of 2 Re(sum x C). */
template <int LPR, int SPL>
static __device__ __forceinline__ float cx_advance(const mvrt_scan_params_t &p, const cx_row_consts<LPR, SPL> &rc,
                                                   int64_t b, int64_t g, int64_t t, float dt, float uu, int j,
                                                   float (&xr)[SPL], float (&xi)[SPL])
{
    float y = 0.f;
#pragma unroll
    for (int k = 0; k < SPL; k++) {
        const int64_t n = j + (int64_t)k * LPR;
        if (n >= p.dstate) continue;
        float ar, ai, br, bi, cr, ci;
        cx_decay(dt, rc.ar[k], rc.ai[k], ar, ai);
        cx_bc(p.B, p.b_variable, b, g, n, t, rc.br[k], rc.bi[k], br, bi);
        cx_bc(p.C, p.c_variable, b, g, n, t, rc.cr[k], rc.ci[k], cr, ci);
        const float nr = ar * xr[k] - ai * xi[k] + dt * uu * br;
        const float ni = ar * xi[k] + ai * xr[k] + dt * uu * bi;
        xr[k] = nr, xi[k] = ni;
        y += 2.f * (nr * cr - ni * ci);
    }
    return y;
}

/* ---------------------------------------------------------------- forward */
/* NP: lanes per unit (0: the whole warp); SPL: states per lane. */
template <int NP, int SPL> __global__ void __launch_bounds__(256) scan_cx_fwd_kernel(const mvrt_scan_params_t p)
{
    constexpr int LPR = NP ? NP : MVRT_WARP_SIZE, UPW = MVRT_WARP_SIZE / LPR;
    const int lane = (int)(threadIdx.x % MVRT_WARP_SIZE), j = lane % LPR;
    const int64_t rows = p.batch * p.dim;
    const int64_t warp = (int64_t)blockIdx.x * MVRT_CX_WARPS + threadIdx.x / MVRT_WARP_SIZE;
    if (warp * UPW >= rows) return; /* a whole warp leaves together */
    int64_t row = warp * UPW + lane / LPR;
    const bool active = row < rows;
    if (!active) row = rows - 1; /* computes a copy, stores nothing */
    const int64_t b = row / p.dim, d = row % p.dim, g = d / (p.dim / p.groups);
    cx_row_consts<LPR, SPL> rc;
    rc.load(p, d, j);
    const float bias = rc.bias, Dd = rc.Dd;
    float xr[SPL], xi[SPL];
#pragma unroll
    for (int k = 0; k < SPL; k++) xr[k] = xi[k] = 0.f;
    for (int64_t t = 0; t < p.seqlen; t++) {
        float v;
        const float dt = cx_step(p, b, d, t, bias, v), uu = cx_at3(p.u, b, d, t);
        float y = group_sum<LPR>(cx_advance<LPR, SPL>(p, rc, b, g, t, dt, uu, j, xr, xi));
        if (active && j == 0) {
            y += Dd * uu;
            if (p.z.data) {
                const float z = cx_at3(p.z, b, d, t);
                y *= z * cx_sigmoid(z);
            }
            *cx_ptr3(p.out, b, d, t) = y;
        }
    }
    if (p.last_state.data && active) {
#pragma unroll
        for (int k = 0; k < SPL; k++) {
            const int64_t n = j + (int64_t)k * LPR;
            if (n >= p.dstate) continue;
            float *s = (float *)p.last_state.data +
                       2 * (b * p.last_state.stride[0] + d * p.last_state.stride[1] + n * p.last_state.stride[2]);
            s[0] = xr[k], s[1] = xi[k];
        }
    }
}

/* ---------------------------------------------------------------- backward */
template <int NP, int SPL> __global__ void __launch_bounds__(256) scan_cx_bwd_kernel(const cx_kparams k)
{
    constexpr int LPR = NP ? NP : MVRT_WARP_SIZE, UPW = MVRT_WARP_SIZE / LPR;
    const mvrt_scan_params_t &p = k.p;
    const cx_plan_t &c = k.c;
    const int lane = (int)(threadIdx.x % MVRT_WARP_SIZE), j = lane % LPR;
    const int64_t warp = (int64_t)blockIdx.x * MVRT_CX_WARPS + threadIdx.x / MVRT_WARP_SIZE;
    if (warp * UPW >= c.units) return; /* a whole warp leaves together */
    /* slot: the unit's workspace slices; lanes past the last unit have
     * slices of their own (cx_plan's slots) and compute a copy of it */
    const int64_t slot = warp * UPW + lane / LPR;
    const bool active = slot < c.units;
    const int64_t unit = active ? slot : c.units - 1;
    const int64_t N = p.dstate, L = p.seqlen, dpg = p.dim / p.groups, N2 = 2 * N;
    const int64_t b = unit / (p.groups * c.ntiles), g = unit / c.ntiles % p.groups, tile = unit % c.ntiles;
    const int64_t d0 = g * dpg + tile * c.tpc, d1 = d0 + c.tpc < (g + 1) * dpg ? d0 + c.tpc : (g + 1) * dpg;
    float *ck = k.ws_ck + slot * c.nch * N2;       /* (nch, N, 2) chunk-start states */
    float *hist = k.ws_hist + slot * c.ch * N2;    /* (CH, N, 2) states of the chunk */
    float *ys = k.ws_ys + slot * c.ch;             /* (CH) 2 Re(sum x C) of the chunk */
    float *bc = k.ws_bc ? k.ws_bc + slot * 2 * N * 2 * L : nullptr; /* (2, N, 2L) variable dB, dC */
    /* every unit walks tpc channels (the same trip counts in all lanes);
     * those past its tile's end compute a copy of its last and store nothing */
    for (int64_t dc = 0; dc < c.tpc; dc++) {
        const bool first = dc == 0, st = active && d0 + dc < d1;
        const int64_t d = st ? d0 + dc : d1 - 1;
        cx_row_consts<LPR, SPL> rc;
        rc.load(p, d, j);
        const float bias = rc.bias, Dd = rc.Dd;
        float xr[SPL], xi[SPL];
#pragma unroll
        for (int s = 0; s < SPL; s++) xr[s] = xi[s] = 0.f;
        /* forward, saving the state before every chunk */
        for (int64_t t = 0; t < L; t++) {
            if (t % c.ch == 0) {
#pragma unroll
                for (int s = 0; s < SPL; s++) {
                    const int64_t n = j + (int64_t)s * LPR;
                    if (n < N) ck[(t / c.ch) * N2 + 2 * n] = xr[s], ck[(t / c.ch) * N2 + 2 * n + 1] = xi[s];
                }
            }
            float v;
            const float dt = cx_step(p, b, d, t, bias, v);
            cx_advance<LPR, SPL>(p, rc, b, g, t, dt, cx_at3(p.u, b, d, t), j, xr, xi);
        }
        /* backward over the chunks from the end; lam carry = conj(a_{t+1}) lam_{t+1} */
        float lcr[SPL], lci[SPL], gAr[SPL], gAi[SPL], gBr[SPL], gBi[SPL], gCr[SPL], gCi[SPL];
#pragma unroll
        for (int s = 0; s < SPL; s++)
            lcr[s] = lci[s] = gAr[s] = gAi[s] = gBr[s] = gBi[s] = gCr[s] = gCi[s] = 0.f;
        float dD = 0.f, dbias = 0.f;
        for (int64_t kc = c.nch - 1; kc >= 0; kc--) {
            const int64_t t0 = kc * c.ch, t1 = t0 + c.ch < L ? t0 + c.ch : L;
#pragma unroll
            for (int s = 0; s < SPL; s++) {
                const int64_t n = j + (int64_t)s * LPR;
                if (n < N) xr[s] = ck[kc * N2 + 2 * n], xi[s] = ck[kc * N2 + 2 * n + 1];
            }
            for (int64_t t = t0; t < t1; t++) {
                float v;
                const float dt = cx_step(p, b, d, t, bias, v);
                const float y =
                    group_sum<LPR>(cx_advance<LPR, SPL>(p, rc, b, g, t, dt, cx_at3(p.u, b, d, t), j, xr, xi));
                if (j == 0) ys[t - t0] = y;
#pragma unroll
                for (int s = 0; s < SPL; s++) {
                    const int64_t n = j + (int64_t)s * LPR;
                    if (n < N) hist[(t - t0) * N2 + 2 * n] = xr[s], hist[(t - t0) * N2 + 2 * n + 1] = xi[s];
                }
            }
            for (int64_t t = t1 - 1; t >= t0; t--) {
                float v;
                const float dt = cx_step(p, b, d, t, bias, v), uu = cx_at3(p.u, b, d, t);
                float gt = cx_at3(p.dout, b, d, t);
                if (p.z.data) {
                    const float z = cx_at3(p.z, b, d, t), sz = cx_sigmoid(z);
                    if (st && j == 0) {
                        const float y = Dd * uu + ys[t - t0]; /* before the gate, D u included */
                        *cx_ptr3(p.dz, b, d, t) = gt * y * sz * (1.f + z * (1.f - sz));
                    }
                    gt *= z * sz;
                }
                dD += gt * uu;
                float du = 0.f, ddt = 0.f;
#pragma unroll
                for (int s = 0; s < SPL; s++) {
                    const int64_t n = j + (int64_t)s * LPR;
                    if (n >= N) continue;
                    float br, bi, cr, ci, ar, ai;
                    cx_bc(p.B, p.b_variable, b, g, n, t, rc.br[s], rc.bi[s], br, bi);
                    cx_bc(p.C, p.c_variable, b, g, n, t, rc.cr[s], rc.ci[s], cr, ci);
                    cx_decay(dt, rc.ar[s], rc.ai[s], ar, ai);
                    const float *xt = hist + (t - t0) * N2 + 2 * n;
                    const float *xp = t > t0 ? hist + (t - 1 - t0) * N2 + 2 * n : ck + kc * N2 + 2 * n;
                    /* lam_t = conj(a_{t+1}) lam_{t+1} + 2 g conj(C_t) */
                    const float lr = lcr[s] + 2.f * gt * cr, li = lci[s] - 2.f * gt * ci;
                    const float lb = lr * br + li * bi; /* Re(lam conj(B)) */
                    du += dt * lb;
                    /* w = a_t x_{t-1}; Re(lam conj(A w)) */
                    const float wr = ar * xp[0] - ai * xp[1], wi = ar * xp[1] + ai * xp[0];
                    const float awr = rc.ar[s] * wr - rc.ai[s] * wi, awi = rc.ar[s] * wi + rc.ai[s] * wr;
                    ddt += uu * lb + (lr * awr + li * awi);
                    /* dA += dt conj(w) lam */
                    gAr[s] += dt * (wr * lr + wi * li);
                    gAi[s] += dt * (wr * li - wi * lr);
                    /* dB += dt u lam; dC += 2 g conj(x_t) */
                    const float sbu = dt * uu, dcr = 2.f * gt * xt[0], dci = -2.f * gt * xt[1];
                    if (p.b_variable) {
                        if (st) {
                            float *q = bc + n * 2 * L + 2 * t;
                            q[0] = first ? sbu * lr : q[0] + sbu * lr;
                            q[1] = first ? sbu * li : q[1] + sbu * li;
                        }
                    } else {
                        gBr[s] += sbu * lr, gBi[s] += sbu * li;
                    }
                    if (p.c_variable) {
                        if (st) {
                            float *q = bc + (N + n) * 2 * L + 2 * t;
                            q[0] = first ? dcr : q[0] + dcr;
                            q[1] = first ? dci : q[1] + dci;
                        }
                    } else {
                        gCr[s] += dcr, gCi[s] += dci;
                    }
                    /* carry for t - 1: conj(a_t) lam_t */
                    lcr[s] = ar * lr + ai * li;
                    lci[s] = ar * li - ai * lr;
                }
                du = Dd * gt + group_sum<LPR>(du);
                ddt = group_sum<LPR>(ddt);
                const float dv = p.delta_softplus && v <= 20.f ? ddt * cx_sigmoid(v) : ddt;
                dbias += dv;
                if (st && j == 0) {
                    *cx_ptr3(p.du, b, d, t) = du;
                    *cx_ptr3(p.ddelta, b, d, t) = dv;
                }
            }
        }
        if (!st) continue;
        /* the row's parameter sums: (dA, constant dB, constant dC) as (N, 2) each, dD, ddelta_bias */
        float *rs = k.ws_row + (b * p.dim + d) * (6 * N + 2);
#pragma unroll
        for (int s = 0; s < SPL; s++) {
            const int64_t n = j + (int64_t)s * LPR;
            if (n >= N) continue;
            rs[2 * n] = gAr[s], rs[2 * n + 1] = gAi[s];
            rs[N2 + 2 * n] = gBr[s], rs[N2 + 2 * n + 1] = gBi[s];
            rs[2 * N2 + 2 * n] = gCr[s], rs[2 * N2 + 2 * n + 1] = gCi[s];
        }
        if (j == 0) rs[6 * N] = dD, rs[6 * N + 1] = dbias;
    }
}

/* ---------------------------------------------------------------- launch */
static inline unsigned cx_blocks(int64_t items, int64_t per_block)
{
    return (unsigned)((items + per_block - 1) / per_block);
}

/* kernel<np, spl> for the plan's layout (np 0: the whole warp; below 17
 * states one lane per state, so spl is 1) */
#define MVRT_CX_BY_LAYOUT(KERNEL, c, grid, block, s, arg)                                \
    switch ((c).np) {                                                                   \
    case 1: KERNEL<1, 1><<<grid, block, 0, s>>>(arg); break;                            \
    case 2: KERNEL<2, 1><<<grid, block, 0, s>>>(arg); break;                            \
    case 4: KERNEL<4, 1><<<grid, block, 0, s>>>(arg); break;                            \
    case 8: KERNEL<8, 1><<<grid, block, 0, s>>>(arg); break;                            \
    case 16: KERNEL<16, 1><<<grid, block, 0, s>>>(arg); break;                          \
    default:                                                                            \
        switch ((c).spl) {                                                              \
        case 1: KERNEL<0, 1><<<grid, block, 0, s>>>(arg); break;                        \
        case 2: KERNEL<0, 2><<<grid, block, 0, s>>>(arg); break;                        \
        case 4: KERNEL<0, 4><<<grid, block, 0, s>>>(arg); break;                        \
        default: KERNEL<0, 8><<<grid, block, 0, s>>>(arg); break;                       \
        }                                                                               \
    }

static inline mvrt_gpu_error_t launch_cx_fwd(const mvrt_scan_params_t &p, int warp_size, mvrt_gpu_stream_t s)
{
    const cx_plan_t c = cx_plan(p, warp_size);
    const dim3 grid(cx_blocks(p.batch * p.dim, (int64_t)MVRT_CX_WARPS * c.upw));
    const dim3 block((unsigned)(MVRT_CX_WARPS * warp_size));
    MVRT_CX_BY_LAYOUT(scan_cx_fwd_kernel, c, grid, block, s, p);
    return mvrt_gpu_get_last_error();
}

/* plan is cx_plan(p, warp_size); the caller checked p.workspace_bytes >= plan.total. */
static inline mvrt_gpu_error_t launch_cx_bwd(const mvrt_scan_params_t &p, const cx_plan_t &plan, int warp_size,
                                             mvrt_gpu_stream_t s)
{
    cx_kparams k;
    k.p = p;
    k.c = plan;
    char *ws = (char *)p.workspace;
    k.ws_row = (float *)(ws + k.c.row_off);
    k.ws_ck = (float *)(ws + k.c.ck_off);
    k.ws_hist = (float *)(ws + k.c.hist_off);
    k.ws_ys = (float *)(ws + k.c.ys_off);
    k.ws_bc = p.b_variable || p.c_variable ? (float *)(ws + k.c.bc_off) : nullptr;
    const dim3 grid(cx_blocks(k.c.units, (int64_t)MVRT_CX_WARPS * k.c.upw));
    const dim3 block((unsigned)(MVRT_CX_WARPS * warp_size));
    MVRT_CX_BY_LAYOUT(scan_cx_bwd_kernel, k.c, grid, block, s, k);
    const mvrt_gpu_error_t e = mvrt_gpu_get_last_error();
    return e != MVRT_GPU_SUCCESS ? e : cx_chunked::launch_cx_reductions(p, k.ws_row, k.ws_bc, k.c.ntiles, s);
}
#undef MVRT_CX_BY_LAYOUT

} /* namespace cx_serial */
} /* namespace mvrt_scan_gpu */

#endif
