/* "Lanes" backward kernel of the selective scan: NS consecutive lanes of a
 * warp per channel row, ONE STATE PER LANE (NS = N rounded up to a power of
 * two, N <= 16), variable B and C. Part of the one GPU kernel source
 * (included by selective_scan_gpu.cuh; compiled by nvcc and hipcc alike).
 *
 * Why (H100, ncu, version 3 notes in backends/cuda/PERF_NOTES.md): the row
 * backward keeps a row's N states, their TB-step histories and the adjoint
 * in one thread (255 registers, 6 warps per SM, issue slots 33 % busy) and
 * sums dB/dC over the 32 rows of a warp with a 16-value reduce-scatter per
 * step. Here a lane holds one state: its T-step history fits in 2T
 * registers, blocks of 256 threads fit several per SM, and the per-step
 * sums are small: dB/dC over the warp's WARP/NS rows (one paired shuffle
 * round, then log2(WARP/NS) - 1 plain ones), the row sums of du/ddelta over
 * the NS lanes once per chunk as one reduce-scatter.
 *
 * Block = (batch b, group g, tile of R <= 256/NS rows of g), R*NS threads.
 * Pass 1 walks L forwards in stages of TS steps staged in shared memory
 * (u, delta' = softplus(delta + bias) computed once per element, B) and
 * saves each lane's state at every T-step chunk start in the workspace
 * (O(Bt*Dm*N*L/T) floats). Pass 2 walks the stages backwards; a stage holds
 * u, delta', softplus', the gated dout, the z factor, B and C. Per chunk, in
 * reverse, each lane recomputes its T states and decay factors from the
 * saved state into registers (and, with z, the un-gated y for dz), then
 * runs the adjoint backwards through them:
 *   lambda_t = a_{t+1} lambda_{t+1} + C_t g_t,
 *   row sums S1 = sum_n lambda B, S2 = sum_n A lambda a_t h_{t-1}:
 *   du = delta' S1 + D g, ddelta' = u S1 + S2 (times softplus'),
 *   dA_n += delta' lambda a_t h_{t-1}, dB_n = sum_rows lambda delta' u,
 *   dC_n = sum_rows g h_t.
 * du/ddelta/dz go back to shared memory and leave at the stage end (each
 * lane storing E = TS/NS consecutive steps of its row) with the block's dB/dC (warps summed in fixed order; tiles through the
 * workspace and the shared reduction kernel). Every sum has a fixed order:
 * bitwise reproducible. Steps past L are zero in shared memory (delta' = 0
 * carries the state, g = 0 adds nothing) and are never stored. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_LANES_BWD_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_LANES_BWD_CUH

namespace mvrt_scan_gpu {

/* Steps per chunk (saved-state spacing and register window) and blocks per
 * SM of the launch bound, per lane count. Measured on an H100 (f32, lanes
 * backward, MambaVision batch-256 rows T s3 / T s4 / B s3 / B s4 / L s3, ms):
 * NS = 8 at 2 blocks, T = 16: 0.497 / 0.327 / 0.726 / 0.465 / 0.316; at 3
 * blocks, T = 8: 0.476 / 0.296 / 0.682 / 0.413 / 0.296; at 4 blocks, T = 8
 * (64 registers, no spills): 0.458 / 0.288 / 0.658 / 0.399 / 0.284. NS = 16
 * (the LM row): 3 blocks, T = 16: 3.29 ms; 4 blocks: 3.50 ms (spills).
 * NS = 4: 3 blocks (spills at 4); NS <= 2 stage 16-32 steps per lane: 2
 * blocks (no spills). T >= NS: a
 * chunk's row sums give each of the NS lanes a (S1, S2) pair. */
#define MVRT_SCAN_LB_T(ns) ((ns) >= 16 ? 16 : 8)
#define MVRT_SCAN_LB_MIN_BLOCKS(ns) ((ns) == 8 ? 4 : (ns) >= 4 ? 3 : 2)
#define MVRT_SCAN_LB_TS 32 /* steps per shared-memory stage (a multiple of T and a power of two) */
#define MVRT_SCAN_LB_MAX_THREADS 256 /* launch bound: block size cap */

static inline bool lanes_bwd_supported(const mvrt_scan_params_t &p)
{
    return p.b_variable && p.c_variable && p.dstate >= 1 && p.dstate <= 16;
}

struct lanes_bwd_config {
    int ns;          /* lanes (states) per row */
    int rows;        /* rows allocated per block (threads / ns) */
    int threads;     /* block size, a multiple of the warp */
    int ch, ntiles;  /* channels per tile, tiles per group */
    int T;           /* chunk length */
    int nchunks;     /* T-step chunks over L */
    size_t smem;
};

static inline size_t lanes_bwd_smem(int rows, int ns, int threads, int warp, bool has_z)
{
    const size_t sr = MVRT_SCAN_LB_TS + 1;
    size_t f = (size_t)(has_z ? 5 : 4) * rows * sr;         /* u, delta', softplus', g (, z) */
    f += 2 * (size_t)MVRT_SCAN_LB_TS * ns;                  /* B, C as [t][n] */
    f += (size_t)(threads / warp) * MVRT_SCAN_LB_TS * 2 * ns; /* warp sums of dB/dC */
    return f * sizeof(float);
}

/* Blocks of up to MVRT_SCAN_LB_MAX_THREADS, halved until the shared memory fits. */
static inline lanes_bwd_config make_lanes_bwd_config(const mvrt_scan_params_t &p, size_t smem_limit, int warp)
{
    lanes_bwd_config c;
    c.ns = p.dstate <= 1 ? 1 : p.dstate <= 2 ? 2 : p.dstate <= 4 ? 4 : p.dstate <= 8 ? 8 : 16;
    int tmax = MVRT_SCAN_LB_MAX_THREADS;
    if (tmax < warp) tmax = warp;
    const int64_t dpg = p.dim / p.groups;
    for (;;) {
        const int rmax = tmax / c.ns;
        const int64_t nt = (dpg + rmax - 1) / rmax;
        c.ntiles = (int)nt;
        c.ch = (int)((dpg + nt - 1) / nt);
        c.threads = ((c.ch * c.ns + warp - 1) / warp) * warp;
        c.rows = c.threads / c.ns;
        c.smem = lanes_bwd_smem(c.rows, c.ns, c.threads, warp, p.z.data != 0);
        if (c.smem <= smem_limit || tmax <= warp) break;
        tmax /= 2;
    }
    c.T = MVRT_SCAN_LB_T(c.ns);
    c.nchunks = (int)((p.seqlen + c.T - 1) / c.T);
    return c;
}

static inline ws_layout make_lanes_bwd_ws_layout(const mvrt_scan_params_t &p, const lanes_bwd_config &c)
{
    return make_chunked_ws_layout(p, c.nchunks, c.ntiles);
}

/* Stage tiles are split the same way as the recurrence: lane n of row r
 * stages (and later stores) steps n*E .. n*E+E-1 of row r (E = TS/NS), so
 * one row offset per tensor and stage serves all of a lane's elements
 * (measured: with a row-strided split, index arithmetic was 38 % of the
 * kernel's instructions). The NS lanes of a row cover its TS steps. */

/* Steps ts .. ts+EG-1 (those below L) of row (b, d) of a (Bt, Dm, L) operand. */
template <typename Tin, int EG>
static __device__ __forceinline__ void lb_load(float (&v)[EG], const mvrt_scan_operand_t &op, int64_t b, int64_t d,
                                               int64_t ts, int64_t L, bool rowvalid)
{
    const int64_t s2 = op.stride[2];
    const int64_t off = b * op.stride[0] + d * op.stride[1] + ts * s2;
#pragma unroll
    for (int k = 0; k < EG; ++k) v[k] = (rowvalid && ts + k < L) ? io<Tin>::ld(op.data, off + k * s2) : 0.f;
}

/* Variable B or C of the stage into dst[t*NS + n] (0 for n >= N, t >= len). */
template <typename Tin, int NS>
static __device__ __forceinline__ void lb_load_bc(float *dst, const mvrt_scan_operand_t &op, const work &wk,
                                                  int64_t t0, int len, int N)
{
    constexpr int TS = MVRT_SCAN_LB_TS;
    const int64_t base = wk.b * op.stride[0] + wk.g * op.stride[1] + t0 * op.stride[3];
    for (int i = threadIdx.x; i < TS * NS; i += blockDim.x) {
        const int n = i / TS, t = i % TS;
        dst[t * NS + n] = (n < N && t < len) ? io<Tin>::ld(op.data, base + n * op.stride[2] + t * op.stride[3]) : 0.f;
    }
}

/* Stores v (EG values from shared memory) at steps ts .. (those below L) of row (b, d). */
template <typename Tin, int EG>
static __device__ __forceinline__ void lb_store(const mvrt_scan_operand_t &op, int64_t b, int64_t d, int64_t ts,
                                                int64_t L, const float *v)
{
    const int64_t s2 = op.stride[2];
    const int64_t off = b * op.stride[0] + d * op.stride[1] + ts * s2;
#pragma unroll
    for (int k = 0; k < EG; ++k)
        if (ts + k < L) io<Tin>::st(op.data, off + k * s2, v[k]);
}

template <typename Tin, int NS>
__global__ void __launch_bounds__(MVRT_SCAN_LB_MAX_THREADS, MVRT_SCAN_LB_MIN_BLOCKS(NS)) scan_bwd_lanes_kernel(const kparams k)
{
    extern __shared__ float4 lb_smem4[];
    float *smem = reinterpret_cast<float *>(lb_smem4);
    constexpr int T = MVRT_SCAN_LB_T(NS), TS = MVRT_SCAN_LB_TS, SR = TS + 1;
    constexpr int E = TS / NS;      /* stage elements per thread and tensor */
    constexpr int EG = E < 4 ? E : 4; /* of which loaded together (bounds the registers at small NS) */
    constexpr int PER = T / NS;     /* steps of a chunk whose row sums a lane owns */
    constexpr int RPW = MVRT_WARP_SIZE / NS;
    static_assert(NS <= T, "one chunk must cover the lanes of a row");
    static_assert(RPW >= 2, "dB/dC pair two rows per warp");
    const mvrt_scan_params_t &p = k.p;
    const int R = blockDim.x / NS;
    const int nwarps = blockDim.x / MVRT_WARP_SIZE;
    const bool hz = p.z.data != 0;
    float *su = smem;             /* u, then du */
    float *sd = su + R * SR;      /* delta', then ddelta */
    float *ss = sd + R * SR;      /* d delta' / d v */
    float *sg = ss + R * SR;      /* dout (gated by silu(z)) */
    float *sz = sg + R * SR;      /* dout * silu'(z), then dz (only with z) */
    float *sB = sz + (hz ? R * SR : 0); /* [TS][NS] */
    float *sC = sB + TS * NS;
    float *swb = sC + TS * NS;    /* [warp][TS][2][NS] warp sums of dB, dC */

    const int lane = threadIdx.x % MVRT_WARP_SIZE, warp = threadIdx.x / MVRT_WARP_SIZE;
    const int n = lane % NS, rw = lane / NS;
    const int r = threadIdx.x / NS;
    const int64_t L = p.seqlen, Dm = p.dim;
    const int N = (int)p.dstate;
    const int nchunks = (int)((L + T - 1) / T);
    const int nstages = (int)((L + TS - 1) / TS);
    const int K = 3 * N + 2;
    const bool sp = p.delta_softplus != 0;

    for (int64_t w = blockIdx.x; w < k.nwork; w += gridDim.x) {
        const work wk = decode(k, w);
        const bool rowvalid = r < wk.nrows;
        const bool sv = rowvalid && n < N;
        const int64_t d = wk.d0 + (rowvalid ? r : 0);
        const int ns = n < N ? n : 0;
        const float An = sv ? ((const float *)p.A.data)[d * p.A.stride[0] + ns * p.A.stride[1]] : 0.f;
        const float A2 = An * MVRT_SCAN_LOG2E;
        const float Dd = (p.D.data && rowvalid) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        const float bias = (p.delta_bias.data && rowvalid) ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
        float *state = k.ws_state + ((wk.b * nchunks) * Dm + d) * N + ns; /* + c*Dm*N: chunk c */
        const int64_t cstride = Dm * N;

        /* ---- pass 1: forward over chunks 0 .. nchunks-2, saving chunk-start states */
        float h = 0.f;
        for (int s = 0; (int64_t)s * TS < (int64_t)(nchunks - 1) * T; ++s) {
            const int64_t t0 = (int64_t)s * TS;
            const int len = (int)(L - t0 < TS ? L - t0 : TS);
            for (int q0 = 0; q0 < E; q0 += EG) {
                const int tl = n * E + q0; /* this lane's first step of the group, in the stage */
                float vu[EG], vd[EG];
                lb_load<Tin, EG>(vu, p.u, wk.b, d, t0 + tl, L, rowvalid);
                lb_load<Tin, EG>(vd, p.delta, wk.b, d, t0 + tl, L, rowvalid);
                if (q0 == 0) {
                    __syncthreads(); /* the previous stage is consumed */
                    lb_load_bc<Tin, NS>(sB, p.B, wk, t0, len, N);
                }
#pragma unroll
                for (int q = 0; q < EG; ++q) {
                    const bool in = rowvalid && tl + q < len;
                    const float v = vd[q] + bias;
                    su[r * SR + tl + q] = vu[q];
                    sd[r * SR + tl + q] = in ? (sp ? fast_softplus(v) : v) : 0.f;
                }
            }
            __syncthreads();
            const float *ur = su + r * SR, *dr = sd + r * SR;
            for (int cc = 0; cc < TS / T; ++cc) {
                const int c = s * (TS / T) + cc;
                if (c >= nchunks - 1) break;
#pragma unroll
                for (int j = 0; j < T; ++j) {
                    const int t = cc * T + j;
                    const float dv = dr[t];
                    h = fmaf(mvrt_fast_exp2(dv * A2), h, dv * ur[t] * sB[t * NS + n]);
                }
                if (sv) state[(int64_t)(c + 1) * cstride] = h; /* the state at the start of chunk c+1 */
            }
        }

        /* ---- pass 2: stages, and chunks inside them, in reverse */
        float lam = 0.f, anext = 1.f, dA = 0.f, dDacc = 0.f, dbacc = 0.f;
        for (int s = nstages - 1; s >= 0; --s) {
            const int64_t t0 = (int64_t)s * TS;
            const int len = (int)(L - t0 < TS ? L - t0 : TS);
            for (int q0 = 0; q0 < E; q0 += EG) {
                const int tl = n * E + q0;
                float vu[EG], vd[EG], vg[EG], vz[EG];
                lb_load<Tin, EG>(vu, p.u, wk.b, d, t0 + tl, L, rowvalid);
                lb_load<Tin, EG>(vd, p.delta, wk.b, d, t0 + tl, L, rowvalid);
                lb_load<Tin, EG>(vg, p.dout, wk.b, d, t0 + tl, L, rowvalid);
                if (hz) lb_load<Tin, EG>(vz, p.z, wk.b, d, t0 + tl, L, rowvalid);
                if (q0 == 0) {
                    __syncthreads(); /* the previous stage is written out */
                    lb_load_bc<Tin, NS>(sB, p.B, wk, t0, len, N);
                    lb_load_bc<Tin, NS>(sC, p.C, wk, t0, len, N);
                }
#pragma unroll
                for (int q = 0; q < EG; ++q) {
                    const int o = r * SR + tl + q;
                    const bool in = rowvalid && tl + q < len;
                    const float v = vd[q] + bias;
                    float dv = v, dsp = 1.f;
                    if (sp) {
                        dv = fast_softplus(v);
                        dsp = v <= 20.f ? fast_sigmoid(v) : 1.f;
                    }
                    float g = vg[q];
                    if (hz) {
                        const float zz = vz[q];
                        const float sig = fast_sigmoid(zz);
                        sz[o] = g * sig * (1.f + zz * (1.f - sig)); /* times y later: dz */
                        g *= zz * sig;
                    }
                    su[o] = vu[q];
                    sd[o] = in ? dv : 0.f;
                    ss[o] = in ? dsp : 0.f;
                    sg[o] = g;
                }
            }
            __syncthreads();
            float *ur = su + r * SR, *dr = sd + r * SR, *sr_ = ss + r * SR, *gr = sg + r * SR, *zr = sz + r * SR;
            const int nck = (len + T - 1) / T;
            for (int cc = nck - 1; cc >= 0; --cc) {
                const int c = s * (TS / T) + cc;
                const int tl0 = cc * T;
                const float h0 = (c > 0 && sv) ? state[(int64_t)c * cstride] : 0.f; /* written by this lane in pass 1 */
                /* recompute the chunk: decay factors and states */
                float av[T], hv[T];
                {
                    float hh = h0;
#pragma unroll
                    for (int j = 0; j < T; ++j) {
                        const int t = tl0 + j;
                        const float dv = dr[t];
                        av[j] = mvrt_fast_exp2(dv * A2);
                        hh = fmaf(av[j], hh, dv * ur[t] * sB[t * NS + n]);
                        hv[j] = hh;
                    }
                }
                if (hz) {
                    /* un-gated y of the chunk, summed over the row's lanes;
                     * lane n owns steps n*PER .. n*PER+PER-1 */
                    float y[T];
#pragma unroll
                    for (int j = 0; j < T; ++j) {
                        const int t = tl0 + j;
                        y[j] = sC[t * NS + n] * hv[j];
                        if (n == 0) y[j] = fmaf(Dd, ur[t], y[j]);
                    }
                    int idx, cnt;
                    bool wr;
                    reduce_scatter<T, NS, 1>(y, n, idx, cnt, wr);
                    (void)cnt; (void)wr;
#pragma unroll
                    for (int q = 0; q < PER; ++q) zr[tl0 + idx + q] *= y[q]; /* owned by this lane alone */
                }
                /* adjoint backwards through the chunk */
                float rs[2 * T]; /* [2j] lambda*B, [2j+1] A*lambda*a*h_prev: row sums of step j */
#pragma unroll
                for (int j = T - 1; j >= 0; --j) {
                    const int t = tl0 + j;
                    const float g = gr[t];
                    const float dv = dr[t];
                    const float Bv = sB[t * NS + n];
                    lam = fmaf(anext, lam, sC[t * NS + n] * g);
                    anext = av[j];
                    const float ah = av[j] * (j > 0 ? hv[j > 0 ? j - 1 : 0] : h0);
                    const float q = lam * ah;
                    dA = fmaf(dv, q, dA);
                    rs[2 * j] = lam * Bv;
                    rs[2 * j + 1] = An * q;
                    /* dB (lambda delta' u) and dC (g h) summed over the warp's
                     * rows: odd rows send dB and keep dC, even rows the reverse */
                    const float vB = lam * (dv * ur[t]);
                    const float vC = g * hv[j];
                    const bool odd = (rw & 1) != 0;
                    float x = (odd ? vC : vB) + MVRT_SHFL_XOR(odd ? vB : vC, NS, MVRT_WARP_SIZE);
#pragma unroll
                    for (int o = 2 * NS; o < MVRT_WARP_SIZE; o *= 2) x += MVRT_SHFL_XOR(x, o, MVRT_WARP_SIZE);
                    if (rw < 2) swb[((warp * TS) + t) * 2 * NS + rw * NS + n] = x;
                }
                int idx, cnt;
                bool wr;
                reduce_scatter<2 * T, NS, 1>(rs, n, idx, cnt, wr);
                (void)cnt; (void)wr;
                MVRT_SYNCWARP(); /* every lane of the row has read u, delta' of the chunk */
#pragma unroll
                for (int q = 0; q < PER; ++q) {
                    const int t = tl0 + idx / 2 + q;
                    if (t < len) {
                        const float S1 = rs[2 * q], S2 = rs[2 * q + 1];
                        const float uv = ur[t], dv = dr[t], g = gr[t];
                        const float ddv = fmaf(uv, S1, S2) * sr_[t];
                        ur[t] = fmaf(dv, S1, Dd * g);
                        dr[t] = ddv;
                        dDacc = fmaf(g, uv, dDacc);
                        dbacc += ddv;
                    }
                }
            }
            __syncthreads();

            /* du, ddelta (, dz) of the stage: each lane its E steps of its row */
            if (rowvalid) {
                const int tl = n * E;
                lb_store<Tin, E>(p.du, wk.b, d, t0 + tl, L, su + r * SR + tl);
                lb_store<Tin, E>(p.ddelta, wk.b, d, t0 + tl, L, sd + r * SR + tl);
                if (hz) lb_store<Tin, E>(p.dz, wk.b, d, t0 + tl, L, sz + r * SR + tl);
            }
            /* dB/dC of the stage: warps summed in order */
            for (int i = threadIdx.x; i < 2 * NS * TS; i += blockDim.x) {
                const int t = i % TS, wn = i / TS; /* wn = which*NS + n */
                const int which = wn / NS, sn = wn % NS;
                if (t >= len || sn >= N) continue;
                float acc = 0.f;
                for (int wv = 0; wv < nwarps; ++wv) acc += swb[(wv * TS + t) * 2 * NS + wn];
                store_dbc<Tin>(k, wk, which, sn, t0 + t, acc);
            }
        }

        /* per-row partials over L, summed over the batch by scan_bwd_reduce_rows */
        dDacc = group_sum<NS>(dDacc);
        dbacc = group_sum<NS>(dbacc);
        if (rowvalid) {
            float *dst = k.ws_row + (wk.b * Dm + d) * K;
            if (n < N) dst[n] = dA;
            if (n == 0) { dst[3 * N] = dDacc; dst[3 * N + 1] = dbacc; }
        }
    }
}

static inline kparams make_lanes_bwd_kparams(const mvrt_scan_params_t &p, const lanes_bwd_config &c)
{
    return make_chunked_kparams(p, c.ntiles, c.ch, MVRT_SCAN_LB_TS, c.ns, c.nchunks);
}

template <typename Tin, int NS>
static mvrt_gpu_error_t launch_bwd_lanes_t(const kparams &k, const lanes_bwd_config &c, mvrt_gpu_stream_t s)
{
    return launch_scan_bwd_kernel<Tin>(scan_bwd_lanes_kernel<Tin, NS>, k, c.threads, c.smem, s);
}

template <typename Tin>
static mvrt_gpu_error_t launch_bwd_lanes_typed(const kparams &k, const lanes_bwd_config &c, mvrt_gpu_stream_t s)
{
    switch (c.ns) {
    case 1: return launch_bwd_lanes_t<Tin, 1>(k, c, s);
    case 2: return launch_bwd_lanes_t<Tin, 2>(k, c, s);
    case 4: return launch_bwd_lanes_t<Tin, 4>(k, c, s);
    case 8: return launch_bwd_lanes_t<Tin, 8>(k, c, s);
    case 16: return launch_bwd_lanes_t<Tin, 16>(k, c, s);
    default: return (mvrt_gpu_error_t)1;
    }
}

} /* namespace mvrt_scan_gpu */

#endif
