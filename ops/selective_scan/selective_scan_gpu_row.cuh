/* "Row" kernels of the selective scan: ONE THREAD PER CHANNEL ROW with all
 * of its N <= 16 states in registers (no per-step shuffles). Part of the one
 * GPU kernel source (included by selective_scan_gpu.cuh; compiled by nvcc and
 * hipcc alike). Used for variable B and C (MambaVision, Mamba LM); anything
 * else goes to the general kernels of selective_scan_gpu.cuh.
 *
 * Block = (batch b, group g, a tile of up to `threads` channels of g). L is
 * walked in chunks of T steps. A chunk of u/delta(/z, dout) is loaded
 * coalesced along L (T consecutive threads cover T steps of one row), kept in
 * REGISTERS while the previous chunk computes (software pipelining: the loads
 * of chunk c+1 are in flight during the recurrence of chunk c), then
 * transposed through shared memory (row stride T+1: conflict-free per-row
 * reads). B/C of the chunk sit in shared memory as [t][NS] (broadcast
 * 16-byte reads). Because the block size is a multiple of T, a thread's
 * element of every load round has the same step and a row index that grows
 * by threads/T: address arithmetic is one add per element.
 *
 * Exponentials use the hardware ex2 with log2(e) folded into A once.
 * Backward: a forward pass saves the state at every chunk start in the
 * workspace (O(Bt*Dm*N*L/T)); then chunks are walked in reverse: the chunk's
 * forward is recomputed from its saved state, keeping the state every TB
 * steps in shared memory; each TB-step sub-chunk is recomputed once more in
 * registers (a_t, h_t) and the adjoint runs backwards through it. Variable
 * dB/dC sums over the block's rows use a fixed warp reduce-scatter + fixed
 * order over warps (and a fixed-order reduce over tiles): bitwise
 * deterministic. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_ROW_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_ROW_CUH

namespace mvrt_scan_gpu {

#define MVRT_SCAN_LN2 0.69314718055994531f

/* softplus(v) with the hardware exp/log: log1p(e) by its series where
 * 1 + e would round (e < 1/64), else log2(1 + e) * ln 2 (error ~1e-5 rel). */
static __device__ __forceinline__ float fast_softplus(float v)
{
    const float e = mvrt_fast_exp2(v * MVRT_SCAN_LOG2E);
    const float sp = e < 0.015625f ? e * (1.f - e * (0.5f - e * 0.33333333f)) : mvrt_fast_log2(1.f + e) * MVRT_SCAN_LN2;
    return v <= 20.f ? sp : v;
}
static __device__ __forceinline__ float fast_sigmoid(float v)
{
    return mvrt_fast_rcp(1.f + mvrt_fast_exp2(-v * MVRT_SCAN_LOG2E));
}

/* NS floats from 16-byte aligned shared memory. */
template <int NS> static __device__ __forceinline__ void lds_vec(float (&v)[NS], const float *src)
{
    if constexpr (NS % 4 == 0) {
#pragma unroll
        for (int i = 0; i < NS / 4; ++i) {
            const float4 q = reinterpret_cast<const float4 *>(src)[i];
            v[4 * i] = q.x; v[4 * i + 1] = q.y; v[4 * i + 2] = q.z; v[4 * i + 3] = q.w;
        }
    } else if constexpr (NS == 2) {
        const float2 q = reinterpret_cast<const float2 *>(src)[0];
        v[0] = q.x; v[1] = q.y;
    } else {
#pragma unroll
        for (int i = 0; i < NS; ++i) v[i] = src[i];
    }
}

/* The per-thread view of a (rows x T) chunk tile: round k covers row
 * row0 + k*rstep at step st. */
struct tile_map {
    int row0, rstep, st;
};
/* Rounds k < valid_rounds hold rows below nrows. */
static __device__ __forceinline__ int valid_rounds(const tile_map &m, int nrows)
{
    const int left = nrows - m.row0;
    return left > 0 ? (left + m.rstep - 1) / m.rstep : 0;
}
static __device__ __forceinline__ tile_map make_tile_map(int T)
{
    tile_map m;
    m.row0 = threadIdx.x / T;
    m.rstep = blockDim.x / T;
    m.st = threadIdx.x % T;
    return m;
}

/* Loads the chunk tile of a (Bt, Dm, L) operand into registers (0 outside). */
template <typename Tin, int T>
static __device__ __forceinline__ void tile_load(float (&v)[T], const mvrt_scan_operand_t &op, const work &wk,
                                                 int64_t t0, int len, const tile_map &m)
{
    const int64_t s1 = op.stride[1];
    int64_t off = wk.b * op.stride[0] + (wk.d0 + m.row0) * s1 + (t0 + m.st) * op.stride[2];
    int64_t step = (int64_t)m.rstep * s1;
    /* opaque to the optimizer: otherwise it keeps the T products k*step of
     * every tensor live across the chunk loop (spills) */
    MVRT_OPAQUE64(step);
    const int nk = m.st < len ? valid_rounds(m, wk.nrows) : 0;
#pragma unroll
    for (int k = 0; k < T; ++k) {
        v[k] = k < nk ? io<Tin>::ld(op.data, off) : 0.f;
        off += step;
    }
}
template <int T>
static __device__ __forceinline__ void tile_store_smem(float *dst, const float (&v)[T], int srow, const tile_map &m)
{
    /* every round is below blockDim.x, the rows allocated in shared memory */
    float *q = dst + m.row0 * srow + m.st;
    int stp = m.rstep * srow;
    MVRT_OPAQUE32(stp); /* else T hoisted addresses per tensor stay live */
#pragma unroll
    for (int k = 0; k < T; ++k) {
        *q = v[k];
        q += stp;
    }
}

/* Variable B or C of the chunk: KBC = ceil(T*NS / warp) elements per thread
 * at most (blocks have at least one warp). Layout in shared memory [t][NS]. */
template <int T, int NS> struct bc_regs {
    static constexpr int K = (T * NS + MVRT_WARP_SIZE - 1) / MVRT_WARP_SIZE;
    float v[K];
};
template <typename Tin, int T, int NS>
static __device__ __forceinline__ void bc_load(bc_regs<T, NS> &r, const mvrt_scan_operand_t &op, const work &wk,
                                               int64_t t0, int len, int N)
{
    const int64_t base = wk.b * op.stride[0] + wk.g * op.stride[1] + t0 * op.stride[3];
#pragma unroll
    for (int k = 0; k < bc_regs<T, NS>::K; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        const int n = i / T, t = i % T;
        r.v[k] = (i < T * NS && n < N && t < len) ? io<Tin>::ld(op.data, base + n * op.stride[2] + t * op.stride[3]) : 0.f;
    }
}
template <int T, int NS>
static __device__ __forceinline__ void bc_store_smem(float *dst, const bc_regs<T, NS> &r)
{
#pragma unroll
    for (int k = 0; k < bc_regs<T, NS>::K; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < T * NS) dst[(i % T) * NS + i / T] = r.v[k];
    }
}

/* ============================================================== forward */
template <typename Tin, int NS, int T>
__global__ void __launch_bounds__(256, 2) scan_fwd_row_kernel(const kparams k)
{
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const mvrt_scan_params_t &p = k.p;
    const int srow = T + 1;
    const int rows_alloc = blockDim.x;
    float *sB = smem;                          /* [T][NS] */
    float *sC = sB + T * NS;
    float *su = sC + T * NS;                   /* u, then y */
    float *sd = su + rows_alloc * srow;        /* raw delta */
    float *sz = sd + rows_alloc * srow;        /* z (only with z) */
    const bool has_z = p.z.data != 0;
    const int r = threadIdx.x;
    const int64_t L = p.seqlen;
    const int N = (int)p.dstate;
    const int nchunks = (int)((L + T - 1) / T);
    const tile_map m = make_tile_map(T);

    for (int64_t w = blockIdx.x; w < k.nwork; w += gridDim.x) {
        const work wk = decode(k, w);
        const bool rowvalid = r < wk.nrows;
        const int64_t d = wk.d0 + (rowvalid ? r : 0);
        float A2[NS], h[NS];
#pragma unroll
        for (int j = 0; j < NS; ++j) {
            A2[j] = (rowvalid && j < N) ? ((const float *)p.A.data)[d * p.A.stride[0] + j * p.A.stride[1]] * MVRT_SCAN_LOG2E : 0.f;
            h[j] = 0.f;
        }
        const float Dd = (p.D.data && rowvalid) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        const float bias = (p.delta_bias.data && rowvalid) ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
        const bool sp = p.delta_softplus != 0;

        float ru[T], rd[T], rz[T];
        bc_regs<T, NS> rB, rC;
        {
            const int len0 = (int)(L < T ? L : T);
            tile_load<Tin, T>(ru, p.u, wk, 0, len0, m);
            tile_load<Tin, T>(rd, p.delta, wk, 0, len0, m);
            if (has_z) tile_load<Tin, T>(rz, p.z, wk, 0, len0, m);
            bc_load<Tin, T, NS>(rB, p.B, wk, 0, len0, N);
            bc_load<Tin, T, NS>(rC, p.C, wk, 0, len0, N);
        }
        for (int c = 0; c < nchunks; ++c) {
            const int64_t t0 = (int64_t)c * T;
            const int len = (int)((L - t0) < T ? (L - t0) : T);
            __syncthreads(); /* the previous chunk's shared data is consumed */
            tile_store_smem<T>(su, ru, srow, m);
            tile_store_smem<T>(sd, rd, srow, m);
            if (has_z) tile_store_smem<T>(sz, rz, srow, m);
            bc_store_smem<T, NS>(sB, rB);
            bc_store_smem<T, NS>(sC, rC);
            __syncthreads();
            if (c + 1 < nchunks) { /* in flight while this chunk computes */
                const int64_t t1 = t0 + T;
                const int len1 = (int)((L - t1) < T ? (L - t1) : T);
                tile_load<Tin, T>(ru, p.u, wk, t1, len1, m);
                tile_load<Tin, T>(rd, p.delta, wk, t1, len1, m);
                if (has_z) tile_load<Tin, T>(rz, p.z, wk, t1, len1, m);
                bc_load<Tin, T, NS>(rB, p.B, wk, t1, len1, N);
                bc_load<Tin, T, NS>(rC, p.C, wk, t1, len1, N);
            }
            float *ur = su + r * srow;
            float *dr = sd + r * srow;
            /* delta' of the row's chunk first: T independent chains (ILP),
             * which keeps exp/log latency off the recurrence's path */
            if (len == T) {
#pragma unroll
                for (int t = 0; t < T; ++t) {
                    const float v = dr[t] + bias;
                    dr[t] = sp ? fast_softplus(v) : v;
                }
            } else {
                for (int t = 0; t < len; ++t) {
                    const float v = dr[t] + bias;
                    dr[t] = sp ? fast_softplus(v) : v;
                }
            }
#pragma unroll 2
            for (int t = 0; t < len; ++t) {
                const float uv = ur[t];
                const float dv = dr[t];
                float Bv[NS], Cv[NS];
                lds_vec<NS>(Bv, sB + t * NS);
                lds_vec<NS>(Cv, sC + t * NS);
                const float du = dv * uv;
                float y = 0.f;
#pragma unroll
                for (int j = 0; j < NS; ++j) {
                    const float a = mvrt_fast_exp2(dv * A2[j]);
                    h[j] = fmaf(a, h[j], du * Bv[j]);
                    y = fmaf(Cv[j], h[j], y);
                }
                ur[t] = fmaf(Dd, uv, y);
            }
            __syncthreads();
            {
                int64_t bo = wk.b * p.out.stride[0] + (wk.d0 + m.row0) * p.out.stride[1] + (t0 + m.st) * p.out.stride[2];
                int64_t step = (int64_t)m.rstep * p.out.stride[1];
                MVRT_OPAQUE64(step); /* see tile_load */
                const int nk = m.st < len ? valid_rounds(m, wk.nrows) : 0;
                int so = m.row0 * srow + m.st, sstp = m.rstep * srow;
                MVRT_OPAQUE32(sstp);
#pragma unroll
                for (int q = 0; q < T; ++q) {
                    if (q < nk) {
                        float y = su[so];
                        if (has_z) {
                            const float zz = sz[so];
                            y *= zz * fast_sigmoid(zz);
                        }
                        io<Tin>::st(p.out.data, bo, y);
                    }
                    bo += step;
                    so += sstp;
                }
            }
        }
        if (p.last_state.data && rowvalid) {
#pragma unroll
            for (int j = 0; j < NS; ++j)
                if (j < N)
                    ((float *)p.last_state.data)[wk.b * p.last_state.stride[0] + d * p.last_state.stride[1] +
                                                 j * p.last_state.stride[2]] = h[j];
        }
    }
}

/* ============================================================= backward */
template <typename Tin, int NS, int T, int TB, bool PF>
__global__ void __launch_bounds__(256, 1) scan_bwd_row_kernel(const kparams k)
{
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const mvrt_scan_params_t &p = k.p;
    constexpr int NSUB = T / TB;
    constexpr int V = 2 * NS;
    const int srow = T + 1;
    const int rows_alloc = blockDim.x;
    const int nwarps = blockDim.x / MVRT_WARP_SIZE;
    const bool has_z = p.z.data != 0;
    float *sB = smem;                          /* [T][NS] */
    float *sC = sB + T * NS;
    float *swb = sC + T * NS;                  /* [warp][T][2NS] warp sums of dB, dC */
    float *sst = swb + nwarps * T * V;         /* [NSUB][NS][rows] sub-chunk start states */
    float *su = sst + NSUB * NS * rows_alloc;  /* u, then du */
    float *sd = su + rows_alloc * srow;        /* raw delta, then delta', then ddelta */
    float *sg = sd + rows_alloc * srow;        /* dout, then dout*silu(z) */
    float *ssig = sg + rows_alloc * srow;      /* d delta'/d v (softplus' or 1) */
    float *sz = ssig + rows_alloc * srow;      /* z, then dz (only with z) */
    const int r = threadIdx.x;
    const int lane = threadIdx.x % MVRT_WARP_SIZE;
    const int warp = threadIdx.x / MVRT_WARP_SIZE;
    const int64_t L = p.seqlen;
    const int64_t Dm = p.dim;
    const int N = (int)p.dstate;
    const int nchunks = (int)((L + T - 1) / T);
    const int K = 3 * N + 2;
    const tile_map m = make_tile_map(T);
    const bool sp = p.delta_softplus != 0;

    for (int64_t w = blockIdx.x; w < k.nwork; w += gridDim.x) {
        const work wk = decode(k, w);
        const bool rowvalid = r < wk.nrows;
        const int64_t d = wk.d0 + (rowvalid ? r : 0);
        float A2[NS], h[NS];
#pragma unroll
        for (int j = 0; j < NS; ++j) {
            A2[j] = (rowvalid && j < N) ? ((const float *)p.A.data)[d * p.A.stride[0] + j * p.A.stride[1]] * MVRT_SCAN_LOG2E : 0.f;
            h[j] = 0.f;
        }
        const float Dd = (p.D.data && rowvalid) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        const float bias = (p.delta_bias.data && rowvalid) ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;

        float ru[T], rd[T], rg[T], rz[T];
        bc_regs<T, NS> rB, rC;

        /* ---- phase 1: forward over chunks 0..nchunks-2, saving chunk-start states */
        if (nchunks > 1) {
            tile_load<Tin, T>(ru, p.u, wk, 0, T, m);
            tile_load<Tin, T>(rd, p.delta, wk, 0, T, m);
            bc_load<Tin, T, NS>(rB, p.B, wk, 0, T, N);
            for (int c = 0; c + 1 < nchunks; ++c) {
                const int64_t t0 = (int64_t)c * T;
                if (!PF && c > 0) { /* full chunks only in this phase */
                    tile_load<Tin, T>(ru, p.u, wk, t0, T, m);
                    tile_load<Tin, T>(rd, p.delta, wk, t0, T, m);
                    bc_load<Tin, T, NS>(rB, p.B, wk, t0, T, N);
                }
                __syncthreads();
                tile_store_smem<T>(su, ru, srow, m);
                tile_store_smem<T>(sd, rd, srow, m);
                bc_store_smem<T, NS>(sB, rB);
                __syncthreads();
                if (PF && c + 2 < nchunks) {
                    tile_load<Tin, T>(ru, p.u, wk, t0 + T, T, m);
                    tile_load<Tin, T>(rd, p.delta, wk, t0 + T, T, m);
                    bc_load<Tin, T, NS>(rB, p.B, wk, t0 + T, T, N);
                }
                if (c > 0 && rowvalid) {
                    float *dst = k.ws_state + ((wk.b * nchunks + c) * Dm + d) * N;
#pragma unroll
                    for (int j = 0; j < NS; ++j)
                        if (j < N) dst[j] = h[j];
                }
                const float *ur = su + r * srow;
                const float *dr = sd + r * srow;
#pragma unroll 4
                for (int t = 0; t < T; ++t) {
                    const float uv = ur[t];
                    const float v = dr[t] + bias;
                    const float dv = sp ? fast_softplus(v) : v;
                    float Bv[NS];
                    lds_vec<NS>(Bv, sB + t * NS);
                    const float du = dv * uv;
#pragma unroll
                    for (int j = 0; j < NS; ++j) h[j] = fmaf(mvrt_fast_exp2(dv * A2[j]), h[j], du * Bv[j]);
                }
            }
            if (rowvalid) {
                float *dst = k.ws_state + ((wk.b * nchunks + (nchunks - 1)) * Dm + d) * N;
#pragma unroll
                for (int j = 0; j < NS; ++j)
                    if (j < N) dst[j] = h[j];
            }
        }

        /* ---- phase 2: chunks in reverse */
        float lam[NS], anext[NS], dA[NS];
#pragma unroll
        for (int j = 0; j < NS; ++j) { lam[j] = 0.f; anext[j] = 1.f; dA[j] = 0.f; }
        float dDsum = 0.f, dbias = 0.f;
        {
            const int64_t t0 = (int64_t)(nchunks - 1) * T;
            const int len = (int)(L - t0);
            tile_load<Tin, T>(ru, p.u, wk, t0, len, m);
            tile_load<Tin, T>(rd, p.delta, wk, t0, len, m);
            tile_load<Tin, T>(rg, p.dout, wk, t0, len, m);
            if (has_z) tile_load<Tin, T>(rz, p.z, wk, t0, len, m);
            bc_load<Tin, T, NS>(rB, p.B, wk, t0, len, N);
            bc_load<Tin, T, NS>(rC, p.C, wk, t0, len, N);
        }
        for (int c = nchunks - 1; c >= 0; --c) {
            const int64_t t0 = (int64_t)c * T;
            const int len = (int)((L - t0) < T ? (L - t0) : T);
            float h0[NS];
#pragma unroll
            for (int j = 0; j < NS; ++j) h0[j] = 0.f;
            if (c > 0 && rowvalid) {
                /* written by this same thread in phase 1 */
                const float *src = k.ws_state + ((wk.b * nchunks + c) * Dm + d) * N;
#pragma unroll
                for (int j = 0; j < NS; ++j)
                    if (j < N) h0[j] = src[j];
            }
            if (!PF && c < nchunks - 1) {
                tile_load<Tin, T>(ru, p.u, wk, t0, T, m);
                tile_load<Tin, T>(rd, p.delta, wk, t0, T, m);
                tile_load<Tin, T>(rg, p.dout, wk, t0, T, m);
                if (has_z) tile_load<Tin, T>(rz, p.z, wk, t0, T, m);
                bc_load<Tin, T, NS>(rB, p.B, wk, t0, T, N);
                bc_load<Tin, T, NS>(rC, p.C, wk, t0, T, N);
            }
            __syncthreads();
            tile_store_smem<T>(su, ru, srow, m);
            tile_store_smem<T>(sd, rd, srow, m);
            tile_store_smem<T>(sg, rg, srow, m);
            if (has_z) tile_store_smem<T>(sz, rz, srow, m);
            bc_store_smem<T, NS>(sB, rB);
            bc_store_smem<T, NS>(sC, rC);
            __syncthreads();
            if (PF && c > 0) { /* the previous (full) chunk, in flight while this one computes */
                const int64_t t1 = t0 - T;
                tile_load<Tin, T>(ru, p.u, wk, t1, T, m);
                tile_load<Tin, T>(rd, p.delta, wk, t1, T, m);
                tile_load<Tin, T>(rg, p.dout, wk, t1, T, m);
                if (has_z) tile_load<Tin, T>(rz, p.z, wk, t1, T, m);
                bc_load<Tin, T, NS>(rB, p.B, wk, t1, T, N);
                bc_load<Tin, T, NS>(rC, p.C, wk, t1, T, N);
            }
            float *ur = su + r * srow;
            float *dr = sd + r * srow;
            float *gr = sg + r * srow;
            float *sgr = ssig + r * srow;
            float *zr = sz + r * srow;

            /* 2a: forward through the chunk; delta' and its derivative and
             * the gated dout go to shared memory, states every TB steps too */
            {
#pragma unroll
                for (int j = 0; j < NS; ++j) h[j] = h0[j];
                for (int t = 0; t < len; ++t) {
                    if (t % TB == 0) {
#pragma unroll
                        for (int j = 0; j < NS; ++j) sst[((t / TB) * NS + j) * rows_alloc + r] = h[j];
                    }
                    const float uv = ur[t];
                    const float v = dr[t] + bias;
                    float dv = v, sg_ = 1.f;
                    if (sp) {
                        dv = fast_softplus(v);
                        sg_ = v <= 20.f ? fast_sigmoid(v) : 1.f;
                    }
                    dr[t] = dv;
                    sgr[t] = sg_;
                    if (has_z) {
                        const float zz = zr[t];
                        const float g = gr[t];
                        const float sig = fast_sigmoid(zz);
                        zr[t] = g * sig * (1.f + zz * (1.f - sig)); /* times y later: dz */
                        gr[t] = g * zz * sig;
                    }
                    float Bv[NS];
                    lds_vec<NS>(Bv, sB + t * NS);
                    const float du = dv * uv;
#pragma unroll
                    for (int j = 0; j < NS; ++j) h[j] = fmaf(mvrt_fast_exp2(dv * A2[j]), h[j], du * Bv[j]);
                }
            }

            /* 2b: sub-chunks in reverse */
            const int nsc = (len + TB - 1) / TB;
            for (int s = nsc - 1; s >= 0; --s) {
                const int ts0 = s * TB;
                const int slen = (len - ts0) < TB ? (len - ts0) : TB;
                float hs[NS];
#pragma unroll
                for (int j = 0; j < NS; ++j) hs[j] = sst[(s * NS + j) * rows_alloc + r];
                float av[TB][NS], hv[TB][NS];
                {
                    float hh[NS];
#pragma unroll
                    for (int j = 0; j < NS; ++j) hh[j] = hs[j];
#pragma unroll
                    for (int jj = 0; jj < TB; ++jj) {
                        if (jj < slen) {
                            const int t = ts0 + jj;
                            const float uv = ur[t];
                            const float dv = dr[t];
                            float Bv[NS];
                            lds_vec<NS>(Bv, sB + t * NS);
                            const float du = dv * uv;
#pragma unroll
                            for (int j = 0; j < NS; ++j) {
                                av[jj][j] = mvrt_fast_exp2(dv * A2[j]);
                                hh[j] = fmaf(av[jj][j], hh[j], du * Bv[j]);
                                hv[jj][j] = hh[j];
                            }
                            if (has_z) {
                                float Cv[NS];
                                lds_vec<NS>(Cv, sC + t * NS);
                                float y = 0.f;
#pragma unroll
                                for (int j = 0; j < NS; ++j) y = fmaf(Cv[j], hh[j], y);
                                zr[t] *= fmaf(Dd, uv, y);
                            }
                        }
                    }
                }
#pragma unroll
                for (int jj = TB - 1; jj >= 0; --jj) {
                    if (jj < slen) {
                        const int t = ts0 + jj;
                        const float uv = ur[t];
                        const float dv = dr[t];
                        const float g = gr[t];
                        float Bv[NS], Cv[NS];
                        lds_vec<NS>(Bv, sB + t * NS);
                        lds_vec<NS>(Cv, sC + t * NS);
                        float sdu = 0.f, sdd = 0.f;
                        float vals[V];
#pragma unroll
                        for (int j = 0; j < NS; ++j) {
                            const float hprev = jj == 0 ? hs[j] : hv[jj > 0 ? jj - 1 : 0][j];
                            lam[j] = fmaf(anext[j], lam[j], Cv[j] * g);
                            const float ldv = lam[j] * dv;
                            const float ah = av[jj][j] * hprev;
                            sdu = fmaf(ldv, Bv[j], sdu);
                            /* A = A2 * ln2 */
                            sdd = fmaf(lam[j], fmaf(Bv[j], uv, (A2[j] * MVRT_SCAN_LN2) * ah), sdd);
                            dA[j] = fmaf(ldv, ah, dA[j]);
                            vals[j] = rowvalid ? ldv * uv : 0.f;
                            vals[NS + j] = rowvalid ? g * hv[jj][j] : 0.f;
                            anext[j] = av[jj][j];
                        }
                        dDsum = fmaf(g, uv, dDsum);
                        const float ddv = sdd * sgr[t];
                        dbias += ddv;
                        ur[t] = fmaf(Dd, g, sdu);
                        dr[t] = ddv;
                        int idx, cnt;
                        bool wr;
                        reduce_scatter<V, MVRT_WARP_SIZE, 1>(vals, lane, idx, cnt, wr);
                        if (wr) {
#pragma unroll
                            for (int i = 0; i < V; ++i)
                                if (i < cnt) swb[(warp * T + t) * V + idx + i] = vals[i];
                        }
                    }
                }
            }
            __syncthreads();

            /* du, ddelta, dz of the chunk, coalesced */
            if (m.st < len) {
                int64_t bu = wk.b * p.du.stride[0] + (wk.d0 + m.row0) * p.du.stride[1] + (t0 + m.st) * p.du.stride[2];
                int64_t bd = wk.b * p.ddelta.stride[0] + (wk.d0 + m.row0) * p.ddelta.stride[1] + (t0 + m.st) * p.ddelta.stride[2];
                int64_t bz = has_z ? wk.b * p.dz.stride[0] + (wk.d0 + m.row0) * p.dz.stride[1] + (t0 + m.st) * p.dz.stride[2] : 0;
                int64_t su1 = (int64_t)m.rstep * p.du.stride[1], sd1 = (int64_t)m.rstep * p.ddelta.stride[1];
                int64_t sz1 = has_z ? (int64_t)m.rstep * p.dz.stride[1] : 0;
                MVRT_OPAQUE64(su1); MVRT_OPAQUE64(sd1); MVRT_OPAQUE64(sz1); /* see tile_load */
                const int nk = valid_rounds(m, wk.nrows);
                int so = m.row0 * srow + m.st, sstp = m.rstep * srow;
                MVRT_OPAQUE32(sstp);
#pragma unroll
                for (int q = 0; q < T; ++q) {
                    if (q < nk) {
                        io<Tin>::st(p.du.data, bu, su[so]);
                        io<Tin>::st(p.ddelta.data, bd, sd[so]);
                        if (has_z) io<Tin>::st(p.dz.data, bz, sz[so]);
                    }
                    bu += su1; bd += sd1; bz += sz1;
                    so += sstp;
                }
            }
            /* variable dB/dC of the chunk: warps summed in order */
            for (int i = threadIdx.x; i < 2 * N * len; i += blockDim.x) {
                const int which = i / (N * len);
                const int rem = i - which * N * len;
                const int n = rem / len;
                const int tt = rem - n * len;
                float s = 0.f;
                for (int wv = 0; wv < nwarps; ++wv) s += swb[(wv * T + tt) * V + which * NS + n];
                store_dbc<Tin>(k, wk, which, n, t0 + tt, s);
            }
        }

        if (rowvalid) {
            float *dst = k.ws_row + (wk.b * Dm + d) * K;
#pragma unroll
            for (int j = 0; j < NS; ++j)
                if (j < N) dst[j] = dA[j];
            dst[3 * N] = dDsum;
            dst[3 * N + 1] = dbias;
        }
    }
}

/* ============================================================ host side */

struct row_config {
    int ns;        /* states per thread (N rounded up to 1, 2, 4, 8, 16) */
    int T, TB;     /* chunk length, backward sub-chunk */
    int ch, ntiles, threads;
    int nchunks;
    size_t smem;
};

/* One thread per row needs many rows to fill the GPU: measured on an H100
 * (132 SMs), 12288 rows of L = 2048 (Mamba LM) and 160 rows (batch 1) ran
 * 1.3-2.5x slower than the general kernels (which spread a row's states over
 * several lanes), 25088+ rows (MambaVision batches) 1.5-2.3x faster. */
static inline bool row_path_supported(const mvrt_scan_params_t &p, int sm_count)
{
    return p.b_variable && p.c_variable && p.dstate >= 1 && p.dstate <= 16 &&
           p.batch * p.dim >= 128 * (int64_t)sm_count;
}

static inline int row_ns(int64_t N) { return N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : N <= 8 ? 8 : 16; }

static inline size_t row_smem(bool bwd, bool has_z, int threads, int T, int TB, int ns, int warp)
{
    const size_t srow = (size_t)T + 1;
    size_t f = 2 * (size_t)T * ns;
    if (!bwd) {
        f += (has_z ? 3 : 2) * (size_t)threads * srow;
    } else {
        f += (size_t)(threads / warp) * T * 2 * ns;
        f += (size_t)(T / TB) * ns * threads;
        f += (has_z ? 5 : 4) * (size_t)threads * srow;
    }
    return f * sizeof(float);
}

/* rows_max: channels per block at most (0: automatic from the SM count). */
static inline row_config make_row_config(const mvrt_scan_params_t &p, bool bwd, size_t smem_limit, int warp,
                                         int sm_count, int rows_max)
{
    row_config c;
    c.ns = row_ns(p.dstate);
    c.T = 16; /* forward chunk (T = 32 spilled: 64 prefetch registers) */
    c.TB = c.ns >= 16 ? 2 : c.ns >= 8 ? 4 : 8;
    const int64_t dpg = p.dim / p.groups;
    int rmax = rows_max;
    if (rmax <= 0) {
        /* the largest tile (fewest blocks, least B/C staging) that still
         * gives every SM about two blocks */
        rmax = 256;
        while (rmax > warp && p.batch * p.groups * ((dpg + rmax - 1) / rmax) < 2 * (int64_t)sm_count) rmax /= 2;
        /* short sequences: 64-row tiles (measured on an H100 at L = 49:
         * forward 6 %, backward 4-13 % faster than the 128/256-row tiles;
         * a tie at L = 196) */
        if (p.seqlen <= 64 && rmax > 64) rmax = 64;
    }
    if (rmax < warp) rmax = warp;
    if (rmax > 256) rmax = 256;
    for (;;) {
        const int64_t nt = (dpg + rmax - 1) / rmax;
        c.ntiles = (int)nt;
        c.ch = (int)((dpg + nt - 1) / nt);
        c.threads = ((c.ch + warp - 1) / warp) * warp;
        c.smem = row_smem(bwd, p.z.data != 0, c.threads, c.T, c.TB, c.ns, warp);
        if (c.smem <= smem_limit || rmax <= warp) break;
        rmax /= 2;
    }
    c.nchunks = (int)((p.seqlen + c.T - 1) / c.T);
    return c;
}

/* Workspace of the backward kernels that save the state every chunk (row
 * and lanes kernels): chunk-start states, per-row partials, dB/dC tile
 * partials when a group spans several tiles. */
static inline ws_layout make_chunked_ws_layout(const mvrt_scan_params_t &p, int nchunks, int ntiles)
{
    ws_layout w;
    w.nsub = nchunks;
    const size_t nstate = nchunks > 1 ? (size_t)p.batch * nchunks * p.dim * p.dstate : 0;
    const size_t nrow = (size_t)p.batch * p.dim * (3 * p.dstate + 2);
    const size_t nbc = ntiles > 1 ? (size_t)p.batch * p.groups * ntiles * 2 * p.dstate * p.seqlen : 0;
    w.state_off = 0;
    w.row_off = align256(nstate * sizeof(float));
    w.bc_off = w.row_off + align256(nrow * sizeof(float));
    w.total = w.bc_off + align256(nbc * sizeof(float));
    return w;
}
static inline ws_layout make_row_ws_layout(const mvrt_scan_params_t &p, const row_config &c)
{
    return make_chunked_ws_layout(p, c.nchunks, c.ntiles);
}

/* Launch constants of the chunked kernels: ts = chunk or stage length, np =
 * states per thread or lane group, nchunks = saved-state chunks over L. */
static inline kparams make_chunked_kparams(const mvrt_scan_params_t &p, int ntiles, int ch, int ts, int np, int nchunks)
{
    kparams k;
    k.p = p;
    k.ntiles = ntiles;
    k.ch = ch;
    k.dpg = (int)(p.dim / p.groups);
    k.nwork = p.batch * p.groups * ntiles;
    k.ts = ts;
    k.srow = ts + 1;
    k.np = np;
    k.nsub = nchunks;
    k.ws_state = k.ws_row = k.ws_bc = 0;
    return k;
}
static inline kparams make_row_kparams(const mvrt_scan_params_t &p, const row_config &c)
{
    return make_chunked_kparams(p, c.ntiles, c.ch, c.T, c.ns, c.nchunks);
}

template <typename Tin, int NS, int T>
static mvrt_gpu_error_t launch_fwd_row_t(const kparams &k, const row_config &c, mvrt_gpu_stream_t s)
{
    return launch_scan_kernel(scan_fwd_row_kernel<Tin, NS, T>, k, c.threads, c.smem, s);
}

template <typename Tin, int NS>
static mvrt_gpu_error_t launch_bwd_row_t(const kparams &k, const row_config &c, mvrt_gpu_stream_t s)
{
    constexpr int TB = NS >= 16 ? 2 : NS >= 8 ? 4 : 8;
    return launch_scan_bwd_kernel<Tin>(scan_bwd_row_kernel<Tin, NS, 16, TB, false>, k, c.threads, c.smem, s);
}

template <typename Tin>
static mvrt_gpu_error_t launch_fwd_row_typed(const kparams &k, const row_config &c, mvrt_gpu_stream_t s)
{
#define MVRT_ROW_FWD(NSV)                                                   \
    if (c.ns == NSV) {                                                      \
        return launch_fwd_row_t<Tin, NSV, 16>(k, c, s);                     \
    }
    MVRT_ROW_FWD(1) MVRT_ROW_FWD(2) MVRT_ROW_FWD(4) MVRT_ROW_FWD(8) MVRT_ROW_FWD(16)
#undef MVRT_ROW_FWD
    return (mvrt_gpu_error_t)1;
}
template <typename Tin>
static mvrt_gpu_error_t launch_bwd_row_typed(const kparams &k, const row_config &c, mvrt_gpu_stream_t s)
{
    switch (c.ns) {
    case 1: return launch_bwd_row_t<Tin, 1>(k, c, s);
    case 2: return launch_bwd_row_t<Tin, 2>(k, c, s);
    case 4: return launch_bwd_row_t<Tin, 4>(k, c, s);
    case 8: return launch_bwd_row_t<Tin, 8>(k, c, s);
    case 16: return launch_bwd_row_t<Tin, 16>(k, c, s);
    default: return (mvrt_gpu_error_t)1;
    }
}

} /* namespace mvrt_scan_gpu */

#endif
