/* "Staged" backward kernel of the selective scan: a channel row's N <= 16
 * states (N >= 3) in the registers of 1, 2 or 4 lanes, variable B and C,
 * unit L-strides; inputs staged in shared memory by the staged forward's
 * piece copies (selective_scan_gpu_staged.cuh: cp.async on NVIDIA sm_80+,
 * plain copies elsewhere). Part of the one GPU kernel source (included by
 * selective_scan_gpu.cuh; compiled by nvcc and hipcc alike).
 *
 * Why (PERF_NOTES v6): the lanes backward keeps one state per lane, so every
 * per-row quantity (delta', the row sums of du/ddelta, dD) is computed or
 * reduced once per state, its staging walks element by element, and it
 * saves states every 8 steps in global memory: 28+ instructions per
 * state-step at 64 registers, 10-14 % of the copy roofline. Here a lane
 * holds NS/LPR states of its row, so per-row work is shared by a whole
 * row's states, and the cross-row sums of dB/dC (the only reduction over
 * rows) go through shared memory as float4 partials summed column-wise by
 * the warp (a fixed order: bitwise reproducible).
 *
 * Block = (batch b, group g, tile of rows of g); LPR consecutive lanes per
 * row (lanes past the block's rows run on their own spare shared rows with
 * zero inputs). L is walked in chunks of T = 8/16/32 steps, double-buffered
 * (the copies of the next chunk are in flight while a chunk computes):
 *   pass 1: chunks 0 .. last-1 forwards from a zero state (u, delta, B),
 *     saving the state at every chunk start in the workspace;
 *   pass 2: chunks in reverse (u, delta, dout, z, B, C): from the chunk's
 *     saved state, a forward run saves the state at every 4-step sub-chunk
 *     start, delta' and softplus' in shared memory; then per sub-chunk, in
 *     reverse, the lane recomputes its 4 steps' states and decay factors
 *     into registers (and, with z, the un-gated y) and runs the adjoint
 *     backwards:
 *       lambda_t = a_{t+1} lambda_{t+1} + C_t dy_t,
 *       S1 = sum_n lambda B, S2 = sum_n A lambda a_t h_{t-1} (over the row's lanes),
 *       du = delta' S1 + D dy, ddelta = (u S1 + S2) softplus',
 *       dA_n += delta' lambda a_t h_{t-1},
 *       dB_n partial = lambda delta' u, dC_n partial = dy h_t (summed over rows).
 *     du, ddelta (, dz) replace u, delta (, z) in shared memory and leave
 *     by the piece copies at the chunk end, with the block's dB/dC (warp
 *     sums added in warp order; tiles through the workspace and the shared
 *     reduction kernel).
 * Steps past len are masked to zero inputs (delta' = 0 carries the state,
 * dout = 0 adds nothing) and never stored. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_STAGED_BWD_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_STAGED_BWD_CUH

namespace mvrt_scan_gpu {

/* launch bound: block size cap by states per lane (4 states per lane: up
 * to 170 registers at 384 threads; 8 states per lane keep
 * ~4x2x8 history registers: up to 255 registers at 256 threads) */
#define MVRT_SCAN_SB_MAX_THREADS(nsl) ((nsl) >= 8 ? 256 : 384)
#define MVRT_SCAN_SB_SUB 4           /* steps per sub-chunk (the register window) */

/* Launch constants of the staged backward (host: make_staged_bwd_config). */
struct staged_bwd_kparams {
    kparams k;       /* work decomposition: Bt * G * tiles of ch rows */
    int T, lgT;      /* steps per chunk (a power of two, >= 8) */
    int srow;        /* shared row stride in elements (T + 4) */
    int vec;         /* bytes per copy piece */
    int lg_ppr;      /* log2 of pieces per full chunk row */
    int rows_alloc;  /* shared rows: one per row index of the threads */
    int tens_bytes;  /* one tensor's rows in a stage (16-aligned) */
    int stage_bytes; /* one stage: u, delta, dout (, z) rows, then B/C [T][2][NS] */
    int k_off;       /* sub-chunk start states [T/4][NSL/4][threads] float4 */
    int dp_off;      /* delta' [T/4][rows] float4, then softplus' [T/4][rows] float4 */
    int pw_off;      /* per warp: dB/dC partials of a sub-chunk [4 * 2NS/4][rows/warp padded] float4 */
    int w_off;       /* per warp: column sums of the chunk [T][2NS] */
};

/* delta' = softplus(v + bias) (or v + bias) of 4 steps, each of the LPR
 * lanes of a row computing 4/LPR of them (steps q, q + LPR, ...) and
 * getting the others by shuffles. SIG: also d delta'/d v of the lane's own
 * steps, in mysg. */
template <int LPR, bool SIG>
static __device__ __forceinline__ void sb_delta4(float (&dp)[4], float (&mysg)[4 / LPR], const float (&dv)[4],
                                                 float bias, bool sp, int q)
{
    float mine[4 / LPR];
#pragma unroll
    for (int i = 0; i < 4 / LPR; ++i) {
        float v = dv[i * LPR];
#pragma unroll
        for (int qq = 1; qq < LPR; ++qq) v = q == qq ? dv[i * LPR + qq] : v;
        v += bias;
        if (sp) {
            const float e = mvrt_fast_exp2(v * MVRT_SCAN_LOG2E);
            const float s = e < 0.015625f ? e * (1.f - e * (0.5f - e * 0.33333333f)) : mvrt_fast_log2(1.f + e) * MVRT_SCAN_LN2;
            mine[i] = v <= 20.f ? s : v;
            if (SIG) mysg[i] = v <= 20.f ? e * mvrt_fast_rcp(1.f + e) : 1.f;
        } else {
            mine[i] = v;
            if (SIG) mysg[i] = 1.f;
        }
    }
    if constexpr (LPR == 1) {
#pragma unroll
        for (int j = 0; j < 4; ++j) dp[j] = mine[j];
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) dp[j] = MVRT_SHFL(mine[j / LPR], j % LPR, LPR);
    }
}

template <typename Tin, int NS, int LPR>
__global__ void __launch_bounds__(MVRT_SCAN_SB_MAX_THREADS(NS / LPR), 1) scan_bwd_staged_kernel(const staged_bwd_kparams sk)
{
    extern __shared__ float4 sb_smem4[];
    char *smem = reinterpret_cast<char *>(sb_smem4);
    constexpr int ES = (int)sizeof(Tin);
    constexpr int NSL = NS / LPR;               /* states per lane */
    constexpr int WS = MVRT_WARP_SIZE;
    constexpr int RPW = WS / LPR;               /* rows per warp */
    /* quad stride of the partials: conflict-free float4 stores (the LPR
     * lanes of a row write quads 4 apart modulo 8) */
    constexpr int RPWP = LPR > 1 ? RPW + 4 : RPW;
    constexpr int NQ = 2 * NS / 4;              /* quads of a step's dB/dC values */
    constexpr int QC = MVRT_SCAN_SB_SUB * NQ;   /* quad columns of a sub-chunk */
    constexpr int CPL = QC >= WS ? QC / WS : 1; /* columns per lane */
    constexpr int H = QC >= WS ? 1 : WS / QC;   /* lanes per column (each a part of the rows) */
    constexpr int RP = RPW / H;                 /* rows per part */
    static_assert(NSL % 4 == 0, "a lane holds whole quads of states");
    static_assert(RP >= 1 && (RP & (RP - 1)) == 0, "rows per part: a power of two");
    const kparams &k = sk.k;
    const mvrt_scan_params_t &p = k.p;
    const int tid = (int)threadIdx.x;
    const int rr = tid / LPR, q = tid % LPR;
    const int lane = tid % WS, warp = tid / WS, rw = lane / LPR;
    const int nwarps = (int)blockDim.x / WS;
    const int64_t L = p.seqlen, Dm = p.dim;
    const int N = (int)p.dstate;
    const int T = sk.T;
    const int nchunks = (int)((L + T - 1) >> sk.lgT);
    const bool has_z = p.z.data != 0;
    const int ntens = has_z ? 4 : 3;
    const int sbytes = sk.srow * ES;
    const int KPR = 3 * N + 2;
    const bool sp = p.delta_softplus != 0;
    float4 *sK = reinterpret_cast<float4 *>(smem + sk.k_off);
    float4 *sDp = reinterpret_cast<float4 *>(smem + sk.dp_off);
    float4 *sSg = sDp + (T / 4) * sk.rows_alloc;
    float4 *sPw = reinterpret_cast<float4 *>(smem + sk.pw_off) + warp * (QC * RPWP);
    float *sW = reinterpret_cast<float *>(smem + sk.w_off);

    for (int64_t w = blockIdx.x; w < k.nwork; w += gridDim.x) {
        const work wk = decode(k, w);
        const bool active = rr < wk.nrows;
        const int64_t d = wk.d0 + (active ? rr : 0);
        /* the block's first element of each (Bt, Dm, L) tensor, in bytes */
        char *gu = (char *)p.u.data + (wk.b * p.u.stride[0] + wk.d0 * p.u.stride[1]) * ES;
        char *gd = (char *)p.delta.data + (wk.b * p.delta.stride[0] + wk.d0 * p.delta.stride[1]) * ES;
        char *gg = (char *)p.dout.data + (wk.b * p.dout.stride[0] + wk.d0 * p.dout.stride[1]) * ES;
        char *gz = has_z ? (char *)p.z.data + (wk.b * p.z.stride[0] + wk.d0 * p.z.stride[1]) * ES : (char *)0;
        char *gdu = (char *)p.du.data + (wk.b * p.du.stride[0] + wk.d0 * p.du.stride[1]) * ES;
        char *gdd = (char *)p.ddelta.data + (wk.b * p.ddelta.stride[0] + wk.d0 * p.ddelta.stride[1]) * ES;
        char *gdz = has_z ? (char *)p.dz.data + (wk.b * p.dz.stride[0] + wk.d0 * p.dz.stride[1]) * ES : (char *)0;
        const bc_src bs = make_bc_src<Tin>(p, wk);
        bc_raw16<Tin> bcv;

        /* stage of chunk cc: u, delta (, dout, z when full), B/C */
        auto issue = [&](int cc, bool full) {
            char *st = smem + (cc & 1) * sk.stage_bytes;
            const int64_t t0 = (int64_t)cc << sk.lgT;
            const int len = (int)((L - t0) < T ? (L - t0) : T);
            rows_op<Tin, PIECE_LOAD>(sk.vec, st, sbytes, gu + t0 * ES, p.u.stride[1] * ES, wk.nrows, sk.lg_ppr, len * ES);
            rows_op<Tin, PIECE_LOAD>(sk.vec, st + sk.tens_bytes, sbytes, gd + t0 * ES, p.delta.stride[1] * ES, wk.nrows,
                                     sk.lg_ppr, len * ES);
            if (full) {
                rows_op<Tin, PIECE_LOAD>(sk.vec, st + 2 * sk.tens_bytes, sbytes, gg + t0 * ES, p.dout.stride[1] * ES,
                                         wk.nrows, sk.lg_ppr, len * ES);
                if (has_z)
                    rows_op<Tin, PIECE_LOAD>(sk.vec, st + 3 * sk.tens_bytes, sbytes, gz + t0 * ES, p.z.stride[1] * ES,
                                             wk.nrows, sk.lg_ppr, len * ES);
            }
            if constexpr (ES == 4) bc_copy_chunk<Tin, NS>((float *)(st + ntens * sk.tens_bytes), bs, t0, len, N, sk.lgT);
            staged_copy_commit();
        };
        auto chunk_len = [&](int cc) {
            const int64_t t0 = (int64_t)cc << sk.lgT;
            return (int)((L - t0) < T ? (L - t0) : T);
        };

        /* the row's constants (loaded while the first copies are in flight) */
        issue(0, nchunks == 1);
        /* 16-bit B/C: the elements of the next chunk wait in registers
         * (fetched when its copies are issued) and are widened into its
         * stage after the barrier that completes its copies, then a second
         * barrier (pass 1's chunks compute too briefly to cover the loads) */
        if constexpr (ES != 4) bc_fetch_chunk<Tin, NS>(bcv, bs, 0, chunk_len(0), N, sk.lgT);
        auto put_bc = [&](int cc) {
            if constexpr (ES != 4) {
                bc_put_chunk<Tin, NS>((float *)(smem + (cc & 1) * sk.stage_bytes + ntens * sk.tens_bytes), bcv, sk.lgT);
                __syncthreads();
            }
        };
        float A2[NSL]; /* A log2(e); S2 is summed with it and scaled by ln 2 once */
#pragma unroll
        for (int j = 0; j < NSL; ++j) {
            const int n = q * NSL + j;
            A2[j] = (active && n < N) ? ((const float *)p.A.data)[d * p.A.stride[0] + n * p.A.stride[1]] * MVRT_SCAN_LOG2E : 0.f;
        }
        const float Dd = (p.D.data && active) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        const float bias = (p.delta_bias.data && active) ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
        float *state = k.ws_state + ((wk.b * nchunks) * Dm + d) * N + q * NSL; /* + c*Dm*N: chunk c */
        const int64_t cstride = Dm * N;

        /* ---- pass 1: chunks 0 .. nchunks-2 forwards, saving chunk-start states */
        {
            float h[NSL];
#pragma unroll
            for (int j = 0; j < NSL; ++j) h[j] = 0.f;
            for (int cc = 0; cc + 1 < nchunks; ++cc) {
                const char *st = smem + (cc & 1) * sk.stage_bytes;
                const int len = T; /* every chunk but the last is full */
                staged_copy_wait();
                __syncthreads(); /* chunk cc visible; everyone is done with the other stage */
                put_bc(cc);
                issue(cc + 1, cc + 2 == nchunks);
                if constexpr (ES != 4) bc_fetch_chunk<Tin, NS>(bcv, bs, (int64_t)(cc + 1) << sk.lgT, chunk_len(cc + 1), N, sk.lgT);
                const Tin *ur = (const Tin *)st + rr * sk.srow;
                const Tin *dr = (const Tin *)(st + sk.tens_bytes) + rr * sk.srow;
                const float *bcq = (const float *)(st + ntens * sk.tens_bytes) + q * NSL;
                for (int t = 0; t < len; t += 4) {
                    float uv[4], dv[4], dp[4], sg[4 / LPR];
                    lds4<Tin>(uv, ur + t);
                    lds4<Tin>(dv, dr + t);
                    sb_delta4<LPR, false>(dp, sg, dv, bias, sp, q);
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk) {
                        if (!active) { dp[kk] = 0.f; uv[kk] = 0.f; }
                        staged_step<NS, NSL, false>(h, A2, dp[kk], uv[kk], bcq + (t + kk) * 2 * NS);
                    }
                }
                if (active) {
#pragma unroll
                    for (int j = 0; j < NSL; ++j)
                        if (q * NSL + j < N) state[(int64_t)(cc + 1) * cstride + j] = h[j];
                }
            }
        }

        /* ---- pass 2: chunks in reverse */
        float lam[NSL], anext[NSL], dA[NSL];
#pragma unroll
        for (int j = 0; j < NSL; ++j) {
            lam[j] = 0.f;
            anext[j] = 1.f;
            dA[j] = 0.f;
        }
        float dDacc = 0.f, dbacc = 0.f;
        for (int cc = nchunks - 1; cc >= 0; --cc) {
            char *st = smem + (cc & 1) * sk.stage_bytes;
            const int64_t t0 = (int64_t)cc << sk.lgT;
            const int len = chunk_len(cc);
            float h[NSL];
#pragma unroll
            for (int j = 0; j < NSL; ++j)
                h[j] = (cc > 0 && active && q * NSL + j < N) ? state[(int64_t)cc * cstride + j] : 0.f;
            staged_copy_wait();
            __syncthreads(); /* chunk cc visible; everyone is done with the other stage */
            put_bc(cc);
            if (cc > 0) {
                issue(cc - 1, true);
                if constexpr (ES != 4) bc_fetch_chunk<Tin, NS>(bcv, bs, t0 - T, T, N, sk.lgT);
            }
            Tin *ur = (Tin *)st + rr * sk.srow;
            Tin *dr = (Tin *)(st + sk.tens_bytes) + rr * sk.srow;
            const Tin *gr = (const Tin *)(st + 2 * sk.tens_bytes) + rr * sk.srow;
            Tin *zr = (Tin *)(st + 3 * sk.tens_bytes) + rr * sk.srow;
            const float *bcq = (const float *)(st + ntens * sk.tens_bytes) + q * NSL;
            const int nsub = (len + 3) / 4;

            /* forward run through the chunk: sub-chunk start states, delta', softplus' */
            for (int s = 0; s < nsub; ++s) {
                const int t = 4 * s;
                float uv[4], dv[4], dp[4], sg[4 / LPR];
                lds4<Tin>(uv, ur + t);
                lds4<Tin>(dv, dr + t);
                sb_delta4<LPR, true>(dp, sg, dv, bias, sp, q);
#pragma unroll
                for (int jv = 0; jv < NSL / 4; ++jv)
                    sK[(s * (NSL / 4) + jv) * (int)blockDim.x + tid] = make_float4(h[4 * jv], h[4 * jv + 1], h[4 * jv + 2], h[4 * jv + 3]);
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) {
                    const bool valid = active && t + kk < len;
                    dp[kk] = valid ? dp[kk] : 0.f;
                    uv[kk] = valid ? uv[kk] : 0.f;
                }
                if (q == 0) sDp[s * sk.rows_alloc + rr] = make_float4(dp[0], dp[1], dp[2], dp[3]);
                {
                    float *sgr = reinterpret_cast<float *>(sSg + s * sk.rows_alloc + rr);
#pragma unroll
                    for (int i = 0; i < 4 / LPR; ++i) sgr[i * LPR + q] = sg[i];
                }
                if (s + 1 < nsub) {
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk) staged_step<NS, NSL, false>(h, A2, dp[kk], uv[kk], bcq + (t + kk) * 2 * NS);
                }
            }
            if (LPR > 1) MVRT_SYNCWARP(); /* delta' and softplus' of the row's lanes */

            /* sub-chunks in reverse */
            for (int s = nsub - 1; s >= 0; --s) {
                const int t = 4 * s;
                float hk[NSL];
#pragma unroll
                for (int jv = 0; jv < NSL / 4; ++jv) {
                    const float4 v = sK[(s * (NSL / 4) + jv) * (int)blockDim.x + tid];
                    hk[4 * jv] = v.x; hk[4 * jv + 1] = v.y; hk[4 * jv + 2] = v.z; hk[4 * jv + 3] = v.w;
                }
                float dp[4], sg[4], uv[4], gv[4], zv[4];
                {
                    const float4 a = sDp[s * sk.rows_alloc + rr], b = sSg[s * sk.rows_alloc + rr];
                    dp[0] = a.x; dp[1] = a.y; dp[2] = a.z; dp[3] = a.w;
                    sg[0] = b.x; sg[1] = b.y; sg[2] = b.z; sg[3] = b.w;
                }
                lds4<Tin>(uv, ur + t);
                lds4<Tin>(gv, gr + t);
                if (has_z) lds4<Tin>(zv, zr + t);
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) {
                    const bool valid = active && t + kk < len;
                    uv[kk] = valid ? uv[kk] : 0.f;
                    gv[kk] = valid ? gv[kk] : 0.f;
                    zv[kk] = (valid && has_z) ? zv[kk] : 0.f;
                }
                /* states and decay factors of the 4 steps */
                float hs[4][NSL], as[4][NSL];
                {
                    float hh[NSL];
#pragma unroll
                    for (int j = 0; j < NSL; ++j) hh[j] = hk[j];
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk) {
                        float Bv[NSL];
                        lds_vec<NSL>(Bv, bcq + (t + kk) * 2 * NS);
                        const float du = dp[kk] * uv[kk];
#pragma unroll
                        for (int j = 0; j < NSL; ++j) {
                            as[kk][j] = mvrt_fast_exp2(dp[kk] * A2[j]);
                            hh[j] = fmaf(as[kk][j], hh[j], du * Bv[j]);
                            hs[kk][j] = hh[j];
                        }
                    }
                }
                /* the gate: dy = dout silu(z), dz = dout y silu'(z) (y un-gated) */
                float dy[4], dzv[4];
                if (has_z) {
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk) {
                        float Cv[NSL];
                        lds_vec<NSL>(Cv, bcq + (t + kk) * 2 * NS + NS);
                        float y0 = 0.f, y1 = 0.f;
#pragma unroll
                        for (int j = 0; j < NSL; ++j) {
                            if (j % 2 == 0) y0 = fmaf(Cv[j], hs[kk][j], y0);
                            else y1 = fmaf(Cv[j], hs[kk][j], y1);
                        }
                        const float y = fmaf(Dd, uv[kk], group_sum<LPR>(y0 + y1));
                        const float zz = zv[kk];
                        const float sig = fast_sigmoid(zz);
                        dy[kk] = gv[kk] * zz * sig;
                        dzv[kk] = gv[kk] * sig * (1.f + zz * (1.f - sig)) * y;
                    }
                } else {
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk) {
                        dy[kk] = gv[kk];
                        dzv[kk] = 0.f;
                    }
                }
                /* the adjoint backwards through the 4 steps */
                float S1[4], S2[4];
#pragma unroll
                for (int kk = 3; kk >= 0; --kk) {
                    float Bv[NSL], Cv[NSL];
                    lds_vec<NSL>(Bv, bcq + (t + kk) * 2 * NS);
                    lds_vec<NSL>(Cv, bcq + (t + kk) * 2 * NS + NS);
                    const float dpu = dp[kk] * uv[kk];
                    float s1a = 0.f, s1b = 0.f, s2a = 0.f, s2b = 0.f;
                    float pb[NSL], pc[NSL];
#pragma unroll
                    for (int j = 0; j < NSL; ++j) {
                        lam[j] = fmaf(anext[j], lam[j], Cv[j] * dy[kk]);
                        const float hp = kk > 0 ? hs[kk > 0 ? kk - 1 : 0][j] : hk[j];
                        const float qv = lam[j] * as[kk][j] * hp;
                        dA[j] = fmaf(dp[kk], qv, dA[j]);
                        if (j % 2 == 0) {
                            s2a = fmaf(A2[j], qv, s2a);
                            s1a = fmaf(lam[j], Bv[j], s1a);
                        } else {
                            s2b = fmaf(A2[j], qv, s2b);
                            s1b = fmaf(lam[j], Bv[j], s1b);
                        }
                        pb[j] = lam[j] * dpu;
                        pc[j] = dy[kk] * hs[kk][j];
                        anext[j] = as[kk][j];
                    }
                    S1[kk] = s1a + s1b;
                    S2[kk] = (s2a + s2b) * MVRT_SCAN_LN2;
#pragma unroll
                    for (int jv = 0; jv < NSL / 4; ++jv) {
                        sPw[(kk * NQ + (q * NSL) / 4 + jv) * RPWP + rw] =
                            make_float4(pb[4 * jv], pb[4 * jv + 1], pb[4 * jv + 2], pb[4 * jv + 3]);
                        sPw[(kk * NQ + (NS + q * NSL) / 4 + jv) * RPWP + rw] =
                            make_float4(pc[4 * jv], pc[4 * jv + 1], pc[4 * jv + 2], pc[4 * jv + 3]);
                    }
                }
                /* row sums over the row's lanes; du, ddelta, dz of the 4 steps */
                float duv[4], ddv[4];
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) {
                    const float s1 = group_sum<LPR>(S1[kk]), s2 = group_sum<LPR>(S2[kk]);
                    duv[kk] = fmaf(dp[kk], s1, Dd * dy[kk]);
                    ddv[kk] = fmaf(uv[kk], s1, s2) * sg[kk];
                    dDacc = fmaf(dy[kk], uv[kk], dDacc);
                    dbacc += (active && t + kk < len) ? ddv[kk] : 0.f;
                }
                MVRT_SYNCWARP(); /* the row's lanes have read u, z; the warp's partials are in place */
                if (q == 0) {
                    sts4<Tin>(ur + t, duv);
                    sts4<Tin>(dr + t, ddv);
                    if (has_z) sts4<Tin>(zr + t, dzv);
                }
                /* dB/dC of the 4 steps summed over the warp's rows: column
                 * (step, quad) by lanes, rows in a lane-staggered (fixed)
                 * order (conflict-free), parts combined by shuffles */
#pragma unroll
                for (int ci = 0; ci < CPL; ++ci) {
                    const int col = QC >= WS ? lane + ci * WS : lane % QC;
                    const int part = QC >= WS ? 0 : lane / QC;
                    const float4 *src = sPw + col * RPWP + part * RP;
                    float4 acc = src[lane & (RP - 1)];
#pragma unroll
                    for (int i = 1; i < RP; ++i) {
                        const float4 v = src[(i + lane) & (RP - 1)];
                        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
                    }
#pragma unroll
                    for (int o = QC; o < WS; o *= 2) {
                        acc.x += MVRT_SHFL_XOR(acc.x, o, WS);
                        acc.y += MVRT_SHFL_XOR(acc.y, o, WS);
                        acc.z += MVRT_SHFL_XOR(acc.z, o, WS);
                        acc.w += MVRT_SHFL_XOR(acc.w, o, WS);
                    }
                    /* column col = step kk, quad v4: at (kk * 2NS + 4 v4) = 4 col */
                    if (part == 0) reinterpret_cast<float4 *>(sW + (warp * T + t) * 2 * NS)[col] = acc;
                }
                MVRT_SYNCWARP(); /* partials read before the next sub-chunk writes them */
            }
            __syncthreads(); /* du, ddelta, dz and the warp sums of the chunk complete */
            rows_op<Tin, PIECE_STORE>(sk.vec, st, sbytes, gdu + t0 * ES, p.du.stride[1] * ES, wk.nrows, sk.lg_ppr, len * ES);
            rows_op<Tin, PIECE_STORE>(sk.vec, st + sk.tens_bytes, sbytes, gdd + t0 * ES, p.ddelta.stride[1] * ES, wk.nrows,
                                      sk.lg_ppr, len * ES);
            if (has_z)
                rows_op<Tin, PIECE_STORE>(sk.vec, st + 3 * sk.tens_bytes, sbytes, gdz + t0 * ES, p.dz.stride[1] * ES,
                                          wk.nrows, sk.lg_ppr, len * ES);
            /* dB/dC of the chunk: warp sums added in warp order */
            for (int i = tid; i < T * 2 * NS; i += (int)blockDim.x) {
                const int t = i / (2 * NS), v = i % (2 * NS);
                const int which = v / NS, n = v % NS;
                if (t >= len || n >= N) continue;
                float acc = 0.f;
                for (int wv = 0; wv < nwarps; ++wv) acc += sW[(wv * T + t) * 2 * NS + v];
                store_dbc<Tin>(k, wk, which, n, t0 + t, acc);
            }
        }

        /* per-row partials over L, summed over the batch by scan_bwd_reduce_rows */
        if (active) {
            float *dst = k.ws_row + (wk.b * Dm + d) * KPR;
#pragma unroll
            for (int j = 0; j < NSL; ++j)
                if (q * NSL + j < N) dst[q * NSL + j] = dA[j];
            if (q == 0) {
                dst[3 * N] = dDacc;
                dst[3 * N + 1] = dbacc;
            }
        }
        __syncthreads(); /* the next work item reuses shared memory */
    }
}

/* ============================================================ host side */

struct staged_bwd_config {
    int ok;   /* 0: not applicable */
    int ns, lpr, T, ch, ntiles, threads, nchunks, vec;
    size_t smem;
    staged_bwd_kparams sk;
};

/* Every backward with variable B and C, 3 <= N <= 16 and unit L-strides of
 * u, delta, dout, z, du, ddelta, dz. force: also where few rows (< 16 per
 * SM) would leave most lanes idle (there the lanes backward is faster:
 * MV-T s3 batch 1 0.071 vs 0.126 ms, H100); t_force: chunk length
 * 8/16/32; lpr_force: lanes per row 1/2/4 (where 4 <= NS/LPR <= 8). */
static inline staged_bwd_config make_staged_bwd_config(const mvrt_scan_params_t &p, size_t smem_limit, int warp,
                                                       int sm_count, bool force = false, int t_force = 0,
                                                       int lpr_force = 0)
{
    staged_bwd_config c;
    memset(&c, 0, sizeof c);
    if (!(p.b_variable && p.c_variable && p.dstate >= 3 && p.dstate <= 16)) return c;
    const bool hz = p.z.data != 0;
    const mvrt_scan_operand_t *ts[7] = {&p.u, &p.delta, &p.dout, &p.du, &p.ddelta, hz ? &p.z : &p.u, hz ? &p.dz : &p.u};
    const int nt = hz ? 7 : 5, ntens = hz ? 4 : 3;
    const int64_t L = p.seqlen, es = p.input_dtype == MVRT_SCAN_F32 ? 4 : 2;
    for (int i = 0; i < nt; ++i)
        if (ts[i]->stride[2] != 1 && L > 1) return c;
    c.ns = row_ns(p.dstate);
    const int64_t dpg = p.dim / p.groups;
    const int64_t rows = p.batch * p.dim;
    if (!force && rows < 16 * (int64_t)sm_count) return c;
    const int64_t rows_sm = (rows + sm_count - 1) / sm_count;
    /* tiles for lpr lanes per row: the most used lanes times the use of
     * the SMs over the waves of blocks, with as many resident blocks per
     * SM as the launch bound's registers allow (measured on an H100, f32:
     * the LM row in 24 tiles of 64 rows = 1.45 waves 2.30 ms, in 16 tiles
     * of 96 rows = one wave 1.51 ms; MV-L s3 5 tiles of 79 rows 0.261 ms,
     * 4 of 98 rows 0.226 ms). Gives the tile count, 0 if none. */
    auto tiles_for = [&](int lpr_c) {
        const int tmax_c = MVRT_SCAN_SB_MAX_THREADS(c.ns / lpr_c);
        int rcap = tmax_c / lpr_c;
        if (rcap > 256) rcap = 256;
        int best_nt = 0;
        double best = -1;
        for (int ntl = (int)((dpg + rcap - 1) / rcap); ntl <= dpg && ntl <= 64; ++ntl) {
            const int ch = (int)((dpg + ntl - 1) / ntl);
            const int thr = (ch * lpr_c + warp - 1) / warp * warp;
            const double eff = (double)dpg * lpr_c / ((double)ntl * thr);
            const int64_t nb = p.batch * p.groups * ntl;
            const int64_t slots = (int64_t)sm_count * (tmax_c / thr > 1 ? tmax_c / thr : 1);
            const double waves = (double)((nb + slots - 1) / slots);
            const double score = eff * (double)nb / (waves * (double)slots);
            if (score > best + 0.005) {
                best = score;
                best_nt = ntl;
            }
            if (score > 0.99) break;
        }
        return best_nt;
    };
    /* warps resident on an SM with lpr lanes per row in ntl tiles (blocks
     * per SM: the registers' slots, or fewer where the blocks are few) */
    auto resident_warps = [&](int lpr_c, int ntl) {
        if (ntl == 0) return 0.0;
        const int ch = (int)((dpg + ntl - 1) / ntl);
        const int thr = (ch * lpr_c + warp - 1) / warp * warp;
        const int tmax_c = MVRT_SCAN_SB_MAX_THREADS(c.ns / lpr_c);
        int64_t per_sm = (p.batch * p.groups * ntl + sm_count - 1) / sm_count;
        const int64_t slots = tmax_c / thr > 1 ? tmax_c / thr : 1;
        if (per_sm > slots) per_sm = slots;
        return (double)per_sm * thr / warp;
    };
    /* lanes per row (a lane holds 4 or 8 states: 16 states in one lane
     * spill 328 bytes at 255 registers). 8 states: 2 lanes only where
     * they bring at least 1.5x the resident warps, since the second lane
     * repeats the per-row work (~20 % more instructions) and the kernel
     * is latency-bound. Measured on an H100, f32 ms, LPR 1 / 2 (both on
     * their own tiles): MV-T s3 0.304 / 0.257 (5 / 10 warps per SM), MV-T
     * s4 0.208 / 0.179 (5 / 10), MV-B s3 0.390 / 0.443 (8 / 8), MV-B s4
     * 0.272 / 0.291 (8 / 11), MV-L s3 0.175 / 0.207 (7 / 7). 16 states: 4
     * lanes where rows are few (LM 8x1536x2048x16, LPR 4: 1.51 ms). */
    int lpr = 1, nt1 = 0, nt2 = 0;
    if (c.ns == 8) {
        nt1 = tiles_for(1);
        nt2 = tiles_for(2);
        if (resident_warps(2, nt2) >= 1.5 * resident_warps(1, nt1)) lpr = 2;
    }
    if (c.ns >= 16) lpr = rows_sm < 256 ? 4 : 2;
    if ((lpr_force == 1 || lpr_force == 2 || lpr_force == 4) && c.ns / lpr_force >= 4 && c.ns / lpr_force <= 8)
        lpr = lpr_force;
    /* 8 states take 1 or 2 lanes, both plans made above */
    const int best_nt = c.ns == 8 ? (lpr == 2 ? nt2 : nt1) : tiles_for(lpr);
    if (best_nt == 0) return c;
    const int ch = (int)((dpg + best_nt - 1) / best_nt);
    const int threads = (ch * lpr + warp - 1) / warp * warp;
    const int rows_alloc = threads / lpr;
    const int nwarps = threads / warp;
    const int rpw = warp / lpr;
    const int rpwp = lpr > 1 ? rpw + 4 : rpw;
    const int nq = 2 * c.ns / 4;
    /* chunk length: the longest that keeps the resident blocks per SM the
     * launch bound's registers allow (up to the blocks there are), else
     * the longest that fits, not longer than L needs. Measured on an H100
     * (1 block/SM by registers), T 8 / 16 / 32: LM row in tiles of 64 rows
     * 2.82 / 2.47 / 2.30 ms; MV-L s3 in tiles of 98 rows - / 0.259 / 0.226 ms */
    const int64_t nblocks = p.batch * p.groups * best_nt;
    int want = MVRT_SCAN_SB_MAX_THREADS(c.ns / lpr) / threads;
    const int64_t need = (nblocks + sm_count - 1) / sm_count;
    if (need < want) want = (int)need;
    if (want < 1) want = 1;
    /* shared-memory layout of a chunk length: two stages, then the
     * unbuffered areas (offsets as in staged_bwd_kparams) */
    auto layout = [&](int T, staged_bwd_kparams &s) {
        s.T = T;
        s.lgT = T == 8 ? 3 : T == 16 ? 4 : 5;
        s.srow = T + 4;
        s.rows_alloc = rows_alloc;
        s.tens_bytes = staged_align16((int64_t)rows_alloc * s.srow * es);
        s.stage_bytes = ntens * s.tens_bytes + T * 2 * c.ns * 4;
        s.k_off = 2 * s.stage_bytes;
        s.dp_off = s.k_off + (T / 4) * threads * (c.ns / lpr) * 4;
        s.pw_off = s.dp_off + 2 * (T / 4) * rows_alloc * 16;
        s.w_off = s.pw_off + nwarps * MVRT_SCAN_SB_SUB * nq * rpwp * 16;
        return (size_t)s.w_off + (size_t)nwarps * T * 2 * c.ns * 4;
    };
    staged_bwd_kparams &s = c.sk;
    int T = 0;
    if (t_force == 8 || t_force == 16 || t_force == 32) {
        T = t_force;
    } else {
        for (int t = 32; t >= 8 && !T; t /= 2)
            if ((t == 8 || t / 2 < L) && (size_t)want * (layout(t, s) + 1024) <= smem_limit + 1024) T = t;
        for (int t = 32; t >= 8 && !T; t /= 2)
            if (layout(t, s) <= smem_limit) T = t;
        if (!T) return c;
    }
    const size_t smem = layout(T, s);
    if (smem > smem_limit || (es == 2 && T * 2 * c.ns > MVRT_SCAN_STAGED_BCK * threads)) return c;
    int64_t q[21];
    int nq2 = 0;
    for (int i = 0; i < nt; ++i) {
        q[nq2++] = ts[i]->stride[0] * es;
        q[nq2++] = ts[i]->stride[1] * es;
        q[nq2++] = (int64_t)(uintptr_t)ts[i]->data;
    }
    int vec = staged_piece(q, nq2, (int)es);
    const int64_t q2[3] = {L * es, (int64_t)T * es, (int64_t)s.srow * es};
    const int v2 = staged_piece(q2, 3, (int)es);
    if (v2 < vec) vec = v2;
    /* 2-byte pieces (16-bit rows of odd length, e.g. L = 49): a copy
     * instruction per element; there the lanes backward is faster
     * (measured bf16 MV-T s4 / MV-B s4: 0.357 / 0.579 ms vs 0.285 / 0.406) */
    if (vec < 4 && !force) return c;
    int lp = 0;
    while ((1 << lp) * vec < T * es) ++lp;
    s.vec = vec;
    s.lg_ppr = lp;
    c.ok = 1;
    c.lpr = lpr;
    c.T = T;
    c.ch = ch;
    c.ntiles = best_nt;
    c.threads = threads;
    c.nchunks = (int)((L + T - 1) / T);
    c.vec = vec;
    c.smem = smem;
    c.sk.k = make_chunked_kparams(p, c.ntiles, c.ch, c.T, c.ns, c.nchunks);
    return c;
}

static inline ws_layout make_staged_bwd_ws_layout(const mvrt_scan_params_t &p, const staged_bwd_config &c)
{
    return make_chunked_ws_layout(p, c.nchunks, c.ntiles);
}

template <typename Tin, typename F>
static mvrt_gpu_error_t launch_staged_bwd(F fn, const staged_bwd_config &c, mvrt_gpu_stream_t s)
{
    const mvrt_gpu_error_t e = launch_scan_kernel(fn, c.sk, c.sk.k.nwork, c.threads, c.smem, s);
    return e != MVRT_GPU_SUCCESS ? e : launch_bwd_reductions<Tin>(c.sk.k, s);
}

template <typename Tin, int NS>
static mvrt_gpu_error_t launch_bwd_staged_t(const staged_bwd_config &c, mvrt_gpu_stream_t s)
{
    if constexpr (NS >= 16)
        if (c.lpr == 4) return launch_staged_bwd<Tin>(scan_bwd_staged_kernel<Tin, NS, 4>, c, s);
    if constexpr (NS >= 8)
        if (c.lpr == 2) return launch_staged_bwd<Tin>(scan_bwd_staged_kernel<Tin, NS, 2>, c, s);
    if constexpr (NS <= 8) return launch_staged_bwd<Tin>(scan_bwd_staged_kernel<Tin, NS, 1>, c, s);
    return (mvrt_gpu_error_t)1; /* the plan gives 16 states 2 or 4 lanes */
}

/* c.sk.k must have its workspace regions bound. */
template <typename Tin>
static mvrt_gpu_error_t launch_bwd_staged_typed(const staged_bwd_config &c, mvrt_gpu_stream_t s)
{
    switch (c.ns) {
    case 4: return launch_bwd_staged_t<Tin, 4>(c, s);
    case 8: return launch_bwd_staged_t<Tin, 8>(c, s);
    case 16: return launch_bwd_staged_t<Tin, 16>(c, s);
    default: return (mvrt_gpu_error_t)1;
    }
}

} /* namespace mvrt_scan_gpu */

#endif
