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
 * du/ddelta/dz go back to shared memory and leave coalesced at the stage
 * end with the block's dB/dC (warps summed in fixed order; tiles through the
 * workspace and the shared reduction kernel). Every sum has a fixed order:
 * bitwise reproducible. Steps past L are zero in shared memory (delta' = 0
 * carries the state, g = 0 adds nothing) and are never stored. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_LANES_BWD_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_LANES_BWD_CUH

namespace mvrt_scan_gpu {

#define MVRT_SCAN_LB_T 16  /* steps per chunk: saved-state spacing and register window */
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

/* threads_max: block size cap (0 or above the launch bound: the bound). */
static inline lanes_bwd_config make_lanes_bwd_config(const mvrt_scan_params_t &p, size_t smem_limit, int warp,
                                                     int threads_max)
{
    lanes_bwd_config c;
    c.ns = p.dstate <= 1 ? 1 : p.dstate <= 2 ? 2 : p.dstate <= 4 ? 4 : p.dstate <= 8 ? 8 : 16;
    int tmax = threads_max > 0 && threads_max < MVRT_SCAN_LB_MAX_THREADS ? threads_max : MVRT_SCAN_LB_MAX_THREADS;
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
    c.nchunks = (int)((p.seqlen + MVRT_SCAN_LB_T - 1) / MVRT_SCAN_LB_T);
    return c;
}

static inline ws_layout make_lanes_bwd_ws_layout(const mvrt_scan_params_t &p, const lanes_bwd_config &c)
{
    return make_chunked_ws_layout(p, c.nchunks, c.ntiles);
}

/* A thread's TS/NS elements of a (rows x TS) stage tile: element k is row
 * row0 + k*rstep, step st (blockDim.x is a multiple of TS). */
struct lb_map {
    int row0, rstep, st;
};
static __device__ __forceinline__ lb_map make_lb_map()
{
    lb_map m;
    m.row0 = threadIdx.x / MVRT_SCAN_LB_TS;
    m.rstep = blockDim.x / MVRT_SCAN_LB_TS;
    m.st = threadIdx.x % MVRT_SCAN_LB_TS;
    return m;
}

/* Loads elements q0 .. q0+EG-1 of this thread's part of the stage tile of a
 * (Bt, Dm, L) operand into registers (0 outside the rows and steps). */
template <typename Tin, int EG>
static __device__ __forceinline__ void lb_load(float (&v)[EG], const mvrt_scan_operand_t &op, const work &wk,
                                               int64_t t0, int len, const lb_map &m, int q0)
{
    const int row = m.row0 + q0 * m.rstep;
    int64_t off = wk.b * op.stride[0] + (wk.d0 + row) * op.stride[1] + (t0 + m.st) * op.stride[2];
    int64_t step = (int64_t)m.rstep * op.stride[1];
    MVRT_OPAQUE64(step); /* keeps the EG offsets from being precomputed and held */
#pragma unroll
    for (int k = 0; k < EG; ++k) {
        const bool in = m.st < len && row + k * m.rstep < wk.nrows;
        v[k] = in ? io<Tin>::ld(op.data, off) : 0.f;
        off += step;
    }
}

/* Variable B or C of the stage into dst[t*NS + n] (0 for n >= N, t >= len). */
template <typename Tin, int NS>
static __device__ __forceinline__ void lb_load_bc(float *dst, const mvrt_scan_operand_t &op, const work &wk,
                                                  int64_t t0, int len, int N)
{
    constexpr int TS = MVRT_SCAN_LB_TS;
    const int64_t base = wk.b * op.stride[0] + wk.g * op.stride[1] + t0 * op.stride[3];
    constexpr int MAXK = (TS * NS + 31) / 32; /* blocks have >= 32 threads */
    float v[MAXK];
#pragma unroll
    for (int k = 0; k < MAXK; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        const int n = i / TS, t = i % TS;
        v[k] = (i < TS * NS && n < N && t < len) ? io<Tin>::ld(op.data, base + n * op.stride[2] + t * op.stride[3]) : 0.f;
    }
#pragma unroll
    for (int k = 0; k < MAXK; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < TS * NS) dst[(i % TS) * NS + i / TS] = v[k];
    }
}

/* delta_bias of stage row er (0 when absent or outside the tile) */
static __device__ __forceinline__ float lb_bias(const mvrt_scan_params_t &p, const work &wk, int er)
{
    return (p.delta_bias.data && er < wk.nrows) ? ((const float *)p.delta_bias.data)[(wk.d0 + er) * p.delta_bias.stride[0]] : 0.f;
}

template <typename Tin, int NS>
__global__ void __launch_bounds__(MVRT_SCAN_LB_MAX_THREADS, 2) scan_bwd_lanes_kernel(const kparams k)
{
    extern __shared__ float4 lb_smem4[];
    float *smem = reinterpret_cast<float *>(lb_smem4);
    constexpr int T = MVRT_SCAN_LB_T, TS = MVRT_SCAN_LB_TS, SR = TS + 1;
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
    const lb_map m = make_lb_map();

    for (int64_t w = blockIdx.x; w < k.nwork; w += gridDim.x) {
        const work wk = decode(k, w);
        const bool rowvalid = r < wk.nrows;
        const bool sv = rowvalid && n < N;
        const int64_t d = wk.d0 + (rowvalid ? r : 0);
        const int ns = n < N ? n : 0;
        const float An = sv ? ((const float *)p.A.data)[d * p.A.stride[0] + ns * p.A.stride[1]] : 0.f;
        const float A2 = An * MVRT_SCAN_LOG2E;
        const float Dd = (p.D.data && rowvalid) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        float *state = k.ws_state + ((wk.b * nchunks) * Dm + d) * N + ns; /* + c*Dm*N: chunk c */
        const int64_t cstride = Dm * N;

        /* ---- pass 1: forward over chunks 0 .. nchunks-2, saving chunk-start states */
        float h = 0.f;
        for (int s = 0; (int64_t)s * TS < (int64_t)(nchunks - 1) * T; ++s) {
            const int64_t t0 = (int64_t)s * TS;
            const int len = (int)(L - t0 < TS ? L - t0 : TS);
            for (int q0 = 0; q0 < E; q0 += EG) {
                float vu[EG], vd[EG];
                lb_load<Tin, EG>(vu, p.u, wk, t0, len, m, q0);
                lb_load<Tin, EG>(vd, p.delta, wk, t0, len, m, q0);
                if (q0 == 0) {
                    __syncthreads(); /* the previous stage is consumed */
                    lb_load_bc<Tin, NS>(sB, p.B, wk, t0, len, N);
                }
#pragma unroll
                for (int q = 0; q < EG; ++q) {
                    const int er = m.row0 + (q0 + q) * m.rstep, o = er * SR + m.st;
                    const bool in = m.st < len && er < wk.nrows;
                    const float v = vd[q] + lb_bias(p, wk, er);
                    su[o] = vu[q];
                    sd[o] = in ? (sp ? fast_softplus(v) : v) : 0.f;
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
                float vu[EG], vd[EG], vg[EG], vz[EG];
                lb_load<Tin, EG>(vu, p.u, wk, t0, len, m, q0);
                lb_load<Tin, EG>(vd, p.delta, wk, t0, len, m, q0);
                lb_load<Tin, EG>(vg, p.dout, wk, t0, len, m, q0);
                if (hz) lb_load<Tin, EG>(vz, p.z, wk, t0, len, m, q0);
                if (q0 == 0) {
                    __syncthreads(); /* the previous stage is written out */
                    lb_load_bc<Tin, NS>(sB, p.B, wk, t0, len, N);
                    lb_load_bc<Tin, NS>(sC, p.C, wk, t0, len, N);
                }
#pragma unroll
                for (int q = 0; q < EG; ++q) {
                    const int er = m.row0 + (q0 + q) * m.rstep, o = er * SR + m.st;
                    const bool in = m.st < len && er < wk.nrows;
                    const float v = vd[q] + lb_bias(p, wk, er);
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

            /* du, ddelta (, dz) of the stage, coalesced */
            {
                int64_t bu = wk.b * p.du.stride[0] + (wk.d0 + m.row0) * p.du.stride[1] + (t0 + m.st) * p.du.stride[2];
                int64_t bd = wk.b * p.ddelta.stride[0] + (wk.d0 + m.row0) * p.ddelta.stride[1] + (t0 + m.st) * p.ddelta.stride[2];
                int64_t bz = hz ? wk.b * p.dz.stride[0] + (wk.d0 + m.row0) * p.dz.stride[1] + (t0 + m.st) * p.dz.stride[2] : 0;
                int64_t su1 = (int64_t)m.rstep * p.du.stride[1], sd1 = (int64_t)m.rstep * p.ddelta.stride[1];
                int64_t sz1 = hz ? (int64_t)m.rstep * p.dz.stride[1] : 0;
                MVRT_OPAQUE64(su1); MVRT_OPAQUE64(sd1); MVRT_OPAQUE64(sz1); /* see lb_load */
                const int o0 = m.row0 * SR + m.st, stp = m.rstep * SR;
#pragma unroll
                for (int q = 0; q < E; ++q) {
                    if (m.st < len && m.row0 + q * m.rstep < wk.nrows) {
                        const int o = o0 + q * stp;
                        io<Tin>::st(p.du.data, bu, su[o]);
                        io<Tin>::st(p.ddelta.data, bd, sd[o]);
                        if (hz) io<Tin>::st(p.dz.data, bz, sz[o]);
                    }
                    bu += su1; bd += sd1; bz += sz1;
                }
            }
            /* dB/dC of the stage: warps summed in order */
            for (int i = threadIdx.x; i < 2 * NS * TS; i += blockDim.x) {
                const int t = i % TS, wn = i / TS; /* wn = which*NS + n */
                const int which = wn / NS, sn = wn % NS;
                if (t >= len || sn >= N) continue;
                float acc = 0.f;
                for (int wv = 0; wv < nwarps; ++wv) acc += swb[(wv * TS + t) * 2 * NS + wn];
                if (k.ws_bc) {
                    const int64_t o = ((((wk.b * p.groups + wk.g) * k.ntiles + wk.tile) * 2 + which) * N + sn) * L + t0 + t;
                    k.ws_bc[o] = acc;
                } else {
                    const mvrt_scan_operand_t &op = which == 0 ? p.dB : p.dC;
                    io<Tin>::st(op.data, wk.b * op.stride[0] + wk.g * op.stride[1] + sn * op.stride[2] + (t0 + t) * op.stride[3], acc);
                }
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
    auto fn = scan_bwd_lanes_kernel<Tin, NS>;
    if (c.smem > 48 * 1024) {
        mvrt_gpu_error_t e = mvrt_gpu_func_set_max_dyn_smem(fn, (int)c.smem);
        if (e != MVRT_GPU_SUCCESS) return e;
    }
    fn<<<grid_for(k.nwork), c.threads, c.smem, s>>>(k);
    mvrt_gpu_error_t e = mvrt_gpu_get_last_error();
    if (e != MVRT_GPU_SUCCESS) return e;
    return launch_bwd_reductions<Tin>(k, s);
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
