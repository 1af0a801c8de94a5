/* "Lanes" forward kernel of the selective scan: NS consecutive lanes of a
 * warp per channel row, ONE STATE PER LANE (NS = N rounded up to a power of
 * two, N <= 16). Part of the one GPU kernel source (included by
 * selective_scan_gpu.cuh; compiled by nvcc and hipcc alike).
 *
 * Why: the row kernels give a whole row (all N states) to one thread and
 * need Bt*Dm >= 128 rows per SM to fill the GPU; with few rows (MambaVision
 * at batch 1: 160 rows) one thread walks L serially through N exponentials
 * per step and most SMs idle (measured 49 us for 1x160x196x8). Here each
 * step of a lane is one exponential and two FMAs, and the row count times NS
 * threads are in flight.
 *
 * Two variants. The staged one (below, the batch-1 case) stages its inputs
 * in shared memory. The register one (any strides) uses no shared memory
 * and no block barriers: every lane loads the chunk's T
 * steps of u, delta (the same addresses for the NS lanes of a row: one
 * broadcast transaction) and of its own state's B and C into registers, one
 * chunk ahead of the recurrence (software pipelining: the loads of chunk c+1
 * are in flight while chunk c computes; 16 steps in flight cover only part
 * of the memory latency, hence the staged variant).
 * y_t = sum_n C_n h_n needs a sum over the NS lanes: the T per-step partial
 * sums of a chunk go through one reduce-scatter (about T shuffles per lane
 * instead of T*log2(NS)), after which lane n owns steps n*T/NS .. +T/NS-1 of
 * the chunk and stores them (with z gating, whose values it prefetched too),
 * coalesced along L. The D*u term is added by lane 0 before the sum. The
 * order of every sum is fixed: results are bitwise reproducible.
 *
 * Steps past L inside the last chunk use delta' = 0 (so exp = 1 and the
 * input term is 0: the state is carried unchanged) and store nothing. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_LANES_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_LANES_CUH

namespace mvrt_scan_gpu {

#define MVRT_SCAN_LANES_T 16        /* steps per chunk */
#define MVRT_SCAN_LANES_MAX_THREADS 128 /* launch bound; blocks are one warp */

/* The lanes kernel serves problems of at most 8 rows per SM (measured on an
 * H100: 1x160x196x8 in 29 us vs 50 us on the general kernel, but the LM row
 * 8x1536x2048x16 in 2.06 ms vs 0.66 ms: with many rows the per-lane work
 * and its 220 registers lose to the other kernels). */
static inline bool lanes_path_supported(const mvrt_scan_params_t &p) { return p.dstate >= 1 && p.dstate <= 16; }
static inline bool lanes_path_preferred(const mvrt_scan_params_t &p, int sm_count)
{
    return lanes_path_supported(p) && p.batch * p.dim <= 8 * (int64_t)sm_count;
}

/* Four consecutive elements from a 4-element-aligned address (one 16- or
 * 8-byte load), or zeros. */
template <typename Tin> struct alignas(4 * sizeof(Tin)) vec4_of {
    Tin v[4];
};
template <typename Tin> static __device__ __forceinline__ void ld4(float *dst, const Tin *src, bool in)
{
    if (in) {
        const vec4_of<Tin> q = *reinterpret_cast<const vec4_of<Tin> *>(src);
#pragma unroll
        for (int k = 0; k < 4; ++k) dst[k] = io<Tin>::ld(q.v, k);
    } else {
        dst[0] = dst[1] = dst[2] = dst[3] = 0.f;
    }
}

/* MODE 0: any strides; 1: unit L-strides; 2: unit L-strides, L and every
 * row start a multiple of 4 elements, 4-element-aligned data (vector loads). */
template <typename Tin, int NS, int MODE>
__global__ void __launch_bounds__(MVRT_SCAN_LANES_MAX_THREADS) scan_fwd_lanes_kernel(const mvrt_scan_params_t p,
                                                                                int64_t nthreads)
{
    constexpr int T = MVRT_SCAN_LANES_T;
    constexpr int PER = T / NS; /* steps each lane stores per chunk */
    const int64_t L = p.seqlen, Dm = p.dim;
    const int64_t rows = p.batch * Dm;
    const int64_t dpg = Dm / p.groups;
    const int N = (int)p.dstate;
    const int n = (int)(threadIdx.x % NS);
    const bool sp = p.delta_softplus != 0;

    /* grid-stride over whole blocks: the NS lanes of a row always iterate
     * together (nthreads is a multiple of the block size) */
    for (int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; tid < nthreads;
         tid += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = tid / NS;
        const bool rvalid = row < rows;
        const int64_t b = rvalid ? row / Dm : 0;
        const int64_t d = rvalid ? row - b * Dm : 0;
        const int64_t g = d / dpg;
        const bool sv = rvalid && n < N;
        const int ns = sv ? n : 0; /* a valid state index for addresses */

        const float A2 = sv ? ((const float *)p.A.data)[d * p.A.stride[0] + ns * p.A.stride[1]] * MVRT_SCAN_LOG2E : 0.f;
        const float Bc = (sv && !p.b_variable) ? ((const float *)p.B.data)[d * p.B.stride[0] + ns * p.B.stride[1]] : 0.f;
        const float Cc = (sv && !p.c_variable) ? ((const float *)p.C.data)[d * p.C.stride[0] + ns * p.C.stride[1]] : 0.f;
        const float D0 = (p.D.data && rvalid && n == 0) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        const float bias = (p.delta_bias.data && rvalid) ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;

        const int64_t ou = b * p.u.stride[0] + d * p.u.stride[1];
        const int64_t od = b * p.delta.stride[0] + d * p.delta.stride[1];
        const int64_t oo = b * p.out.stride[0] + d * p.out.stride[1];
        const int64_t oz = p.z.data ? b * p.z.stride[0] + d * p.z.stride[1] : 0;
        const int64_t ob = p.b_variable ? b * p.B.stride[0] + g * p.B.stride[1] + ns * p.B.stride[2] : 0;
        const int64_t oc = p.c_variable ? b * p.C.stride[0] + g * p.C.stride[1] + ns * p.C.stride[2] : 0;
        const int64_t su = p.u.stride[2], sd = p.delta.stride[2], so = p.out.stride[2];
        const int64_t sz = p.z.data ? p.z.stride[2] : 0;
        const int64_t sb = p.b_variable ? p.B.stride[3] : 0, sc = p.c_variable ? p.C.stride[3] : 0;

        /* next chunk's values, loaded one chunk ahead. Addresses advance by
         * a running pointer per tensor (CONTIG: unit L-strides, so the steps
         * are immediate offsets); with general strides the opaque step keeps
         * the compiler from precomputing T 64-bit offsets per tensor and
         * holding them in registers. */
        const Tin *pu0 = (const Tin *)p.u.data + ou, *pd0 = (const Tin *)p.delta.data + od;
        const Tin *pb0 = p.b_variable ? (const Tin *)p.B.data + ob : nullptr;
        const Tin *pc0 = p.c_variable ? (const Tin *)p.C.data + oc : nullptr;
        float nu[T], nd[T], nb[T], nc[T], nz[PER];
        auto load_chunk = [&](int64_t t0) {
            const int lim = rvalid ? (int)(L - t0 < T ? L - t0 : T) : 0;
            const bool bv = p.b_variable && sv, cv = p.c_variable && sv;
            if (MODE == 2) {
                /* 4 steps per load (16 bytes f32, 8 bytes f16/bf16): lim is
                 * a multiple of 4 here (L % 4 == 0) */
                const Tin *qu = pu0 + t0, *qd = pd0 + t0, *qb = pb0 + t0, *qc = pc0 + t0;
#pragma unroll
                for (int j = 0; j < T; j += 4) {
                    const bool in = j < lim;
                    ld4<Tin>(nu + j, qu + j, in);
                    ld4<Tin>(nd + j, qd + j, in);
                    if (bv) ld4<Tin>(nb + j, qb + j, in);
                    else nb[j] = nb[j + 1] = nb[j + 2] = nb[j + 3] = p.b_variable ? 0.f : Bc;
                    if (cv) ld4<Tin>(nc + j, qc + j, in);
                    else nc[j] = nc[j + 1] = nc[j + 2] = nc[j + 3] = p.c_variable ? 0.f : Cc;
                }
            } else if (MODE == 1) {
                const Tin *qu = pu0 + t0, *qd = pd0 + t0, *qb = pb0 + t0, *qc = pc0 + t0;
#pragma unroll
                for (int j = 0; j < T; ++j) {
                    nu[j] = j < lim ? io<Tin>::ld(qu, j) : 0.f;
                    nd[j] = j < lim ? io<Tin>::ld(qd, j) : 0.f;
                    nb[j] = bv ? (j < lim ? io<Tin>::ld(qb, j) : 0.f) : Bc;
                    nc[j] = cv ? (j < lim ? io<Tin>::ld(qc, j) : 0.f) : Cc;
                }
            } else {
                int64_t su1 = su, sd1 = sd, sb1 = sb, sc1 = sc;
                MVRT_OPAQUE64(su1); MVRT_OPAQUE64(sd1); MVRT_OPAQUE64(sb1); MVRT_OPAQUE64(sc1);
                const Tin *qu = pu0 + t0 * su1, *qd = pd0 + t0 * sd1, *qb = pb0 + t0 * sb1, *qc = pc0 + t0 * sc1;
#pragma unroll
                for (int j = 0; j < T; ++j) {
                    nu[j] = j < lim ? io<Tin>::ld(qu, 0) : 0.f;
                    nd[j] = j < lim ? io<Tin>::ld(qd, 0) : 0.f;
                    nb[j] = bv ? (j < lim ? io<Tin>::ld(qb, 0) : 0.f) : Bc;
                    nc[j] = cv ? (j < lim ? io<Tin>::ld(qc, 0) : 0.f) : Cc;
                    qu += su1; qd += sd1; qb += sb1; qc += sc1;
                }
            }
#pragma unroll
            for (int q = 0; q < PER; ++q) {
                const int jz = n * PER + q;
                nz[q] = (p.z.data && jz < lim) ? io<Tin>::ld(p.z.data, oz + (t0 + jz) * sz) : 0.f;
            }
        };
        load_chunk(0);

        float h = 0.f;
        for (int64_t t0 = 0; t0 < L; t0 += T) {
            float cu[T], cd[T], cb[T], cc[T], cz[PER];
#pragma unroll
            for (int j = 0; j < T; ++j) cu[j] = nu[j], cd[j] = nd[j], cb[j] = nb[j], cc[j] = nc[j];
#pragma unroll
            for (int q = 0; q < PER; ++q) cz[q] = nz[q];
            if (t0 + T < L) load_chunk(t0 + T);

            float y[T];
#pragma unroll
            for (int j = 0; j < T; ++j) {
                float dv = cd[j] + bias;
                if (sp) dv = fast_softplus(dv);
                if (t0 + j >= L) dv = 0.f;
                const float a = mvrt_fast_exp2(dv * A2);
                h = fmaf(a, h, dv * cu[j] * cb[j]);
                y[j] = fmaf(D0, cu[j], cc[j] * h);
            }
            int idx, cnt;
            bool writer;
            reduce_scatter<T, NS, 1>(y, n, idx, cnt, writer);
            /* lane n now holds the sums of steps idx .. idx+PER-1 = n*PER .. */
            (void)cnt;
            if (rvalid && writer) {
#pragma unroll
                for (int q = 0; q < PER; ++q) {
                    const int64_t t = t0 + idx + q;
                    if (t < L) {
                        float v = y[q];
                        if (p.z.data) v *= cz[q] * fast_sigmoid(cz[q]);
                        io<Tin>::st(p.out.data, oo + t * so, v);
                    }
                }
            }
        }
        if (p.last_state.data && sv)
            ((float *)p.last_state.data)[b * p.last_state.stride[0] + d * p.last_state.stride[1] +
                                         n * p.last_state.stride[2]] = h;
    }
}

/* ---------------------------------------------------------------------
 * Staged variant (the common case at batch 1: unit L-strides, L and row
 * starts multiples of 4 elements, and whole blocks inside one (batch,
 * group)). Block = one warp = R = warp/NS rows. Measured on the register
 * kernel above: each chunk waited on its loads (16 steps in flight cover
 * about a third of the memory latency). Here a stage of up to TS steps of
 * u, delta' (bias + softplus applied once per element, not once per lane),
 * z and the block's shared B and C (loaded once for its R rows, not once
 * per row) goes to shared memory with 16- or 8-byte loads, many in flight
 * per lane; then the recurrence reads shared memory only. Shared rows are
 * padded to TS + 4 floats: the NS states' float4 reads of B/C fall in
 * different banks. Steps past L within the last 16-step chunk are zero
 * (delta' = 0: the state is carried, nothing is stored). */
#define MVRT_SCAN_LANES_TS 256 /* steps per stage (a multiple of 16) */
#define MVRT_SCAN_LANES_G 8    /* vector loads in flight per lane while staging */

static inline size_t lanes_staged_smem(int rows, int ns, bool has_z)
{
    return (size_t)((has_z ? 3 : 2) * rows + 2 * ns) * (MVRT_SCAN_LANES_TS + 4) * sizeof(float);
}

template <typename Tin, int NS>
__global__ void __launch_bounds__(MVRT_SCAN_LANES_MAX_THREADS) scan_fwd_lanes_staged_kernel(const mvrt_scan_params_t p)
{
    extern __shared__ __align__(16) float lanes_smem[];
    float *smem = lanes_smem;
    constexpr int T = MVRT_SCAN_LANES_T;
    constexpr int PER = T / NS;
    constexpr int TS = MVRT_SCAN_LANES_TS, SR = MVRT_SCAN_LANES_TS + 4;
    const int R = blockDim.x / NS;
    const bool hz = p.z.data != nullptr;
    float *su = smem, *sd = su + R * SR, *sz = sd + R * SR;
    float *sB = sz + (hz ? R * SR : 0), *sC = sB + NS * SR;

    const int64_t L = p.seqlen, Dm = p.dim;
    const int64_t rows = p.batch * Dm;
    const int64_t dpg = Dm / p.groups;
    const int N = (int)p.dstate;
    const int lane = threadIdx.x, n = lane % NS, r = lane / NS;
    const bool sp = p.delta_softplus != 0;

    for (int64_t row0 = (int64_t)blockIdx.x * R; row0 < rows; row0 += (int64_t)gridDim.x * R) {
        /* the block's rows share (b, g): R divides dpg (the launcher checks) */
        const int64_t b = row0 / Dm, d0 = row0 - b * Dm, g = d0 / dpg;
        const int64_t d = d0 + r;
        const bool sv = n < N;
        const float A2 = sv ? ((const float *)p.A.data)[d * p.A.stride[0] + n * p.A.stride[1]] * MVRT_SCAN_LOG2E : 0.f;
        const float D0 = (p.D.data && n == 0) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        const Tin *gu = (const Tin *)p.u.data + b * p.u.stride[0] + d0 * p.u.stride[1];
        const Tin *gd = (const Tin *)p.delta.data + b * p.delta.stride[0] + d0 * p.delta.stride[1];
        const Tin *gz = hz ? (const Tin *)p.z.data + b * p.z.stride[0] + d0 * p.z.stride[1] : nullptr;
        const Tin *gB = (const Tin *)p.B.data + b * p.B.stride[0] + g * p.B.stride[1];
        const Tin *gC = (const Tin *)p.C.data + b * p.C.stride[0] + g * p.C.stride[1];
        const int64_t out0 = b * p.out.stride[0] + d * p.out.stride[1];
        float h = 0.f;

        for (int64_t t0 = 0; t0 < L; t0 += TS) {
            const int len = (int)(L - t0 < TS ? L - t0 : TS);
            const int len16 = (len + 15) & ~15;
            const int q4 = len16 / 4; /* float4 items per shared row */
            /* items: R rows of u, delta (, z), then NS rows of B, C */
            const int nrow_items = hz ? 3 * R : 2 * R;
            const int total = (nrow_items + 2 * NS) * q4;
            __syncthreads(); /* the previous stage is consumed */
            for (int i0 = lane; i0 < total; i0 += MVRT_SCAN_LANES_G * (int)blockDim.x) {
                float v[MVRT_SCAN_LANES_G][4], bias[MVRT_SCAN_LANES_G];
#pragma unroll
                for (int k = 0; k < MVRT_SCAN_LANES_G; ++k) {
                    const int i = i0 + k * (int)blockDim.x;
                    const int srow = i / q4, c4 = i - srow * q4;
                    const int64_t t = t0 + 4 * c4;
                    const Tin *src = nullptr;
                    bool in = i < total && 4 * c4 < len;
                    if (srow < R) src = gu + srow * p.u.stride[1];
                    else if (srow < 2 * R) src = gd + (srow - R) * p.delta.stride[1];
                    else if (srow < nrow_items) src = gz + (srow - 2 * R) * p.z.stride[1];
                    else if (srow < nrow_items + NS) {
                        const int sn = srow - nrow_items;
                        in = in && sn < N;
                        src = gB + (sn < N ? sn : 0) * p.B.stride[2];
                    } else {
                        const int sn = srow - nrow_items - NS;
                        in = in && sn < N;
                        src = gC + (sn < N ? sn : 0) * p.C.stride[2];
                    }
                    ld4<Tin>(v[k], src + t, in);
                    bias[k] = (i < total && srow >= R && srow < 2 * R && p.delta_bias.data)
                                  ? ((const float *)p.delta_bias.data)[(d0 + srow - R) * p.delta_bias.stride[0]] : 0.f;
                }
#pragma unroll
                for (int k = 0; k < MVRT_SCAN_LANES_G; ++k) {
                    const int i = i0 + k * (int)blockDim.x;
                    if (i < total) {
                        const int srow = i / q4, c4 = i - srow * q4;
                        float *dst;
                        if (srow < R) dst = su + srow * SR;
                        else if (srow < 2 * R) {
                            dst = sd + (srow - R) * SR;
#pragma unroll
                            for (int e = 0; e < 4; ++e) {
                                float x = v[k][e] + bias[k];
                                if (sp) x = fast_softplus(x);
                                v[k][e] = 4 * c4 + e < len ? x : 0.f; /* delta' = 0 past L */
                            }
                        } else if (srow < nrow_items) dst = sz + (srow - 2 * R) * SR;
                        else if (srow < nrow_items + NS) dst = sB + (srow - nrow_items) * SR;
                        else dst = sC + (srow - nrow_items - NS) * SR;
                        *reinterpret_cast<float4 *>(dst + 4 * c4) = make_float4(v[k][0], v[k][1], v[k][2], v[k][3]);
                    }
                }
            }
            __syncthreads();

            const float *ur = su + r * SR, *dr = sd + r * SR, *zr = sz + r * SR;
            const float *br = sB + n * SR, *cr = sC + n * SR;
            for (int c0 = 0; c0 < len16; c0 += T) {
                float y[T];
#pragma unroll
                for (int j4 = 0; j4 < T; j4 += 4) {
                    const float4 u4 = *reinterpret_cast<const float4 *>(ur + c0 + j4);
                    const float4 d4 = *reinterpret_cast<const float4 *>(dr + c0 + j4);
                    const float4 b4 = *reinterpret_cast<const float4 *>(br + c0 + j4);
                    const float4 e4 = *reinterpret_cast<const float4 *>(cr + c0 + j4);
                    const float uu[4] = {u4.x, u4.y, u4.z, u4.w}, dd[4] = {d4.x, d4.y, d4.z, d4.w};
                    const float bb[4] = {b4.x, b4.y, b4.z, b4.w}, cc[4] = {e4.x, e4.y, e4.z, e4.w};
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const float a = mvrt_fast_exp2(dd[e] * A2);
                        h = fmaf(a, h, dd[e] * uu[e] * bb[e]);
                        y[j4 + e] = fmaf(D0, uu[e], cc[e] * h);
                    }
                }
                int idx, cnt;
                bool writer;
                reduce_scatter<T, NS, 1>(y, n, idx, cnt, writer);
                (void)cnt;
                if (writer) {
#pragma unroll
                    for (int q = 0; q < PER; ++q) {
                        const int tl = c0 + idx + q;
                        if (tl < len) {
                            float v = y[q];
                            if (hz) {
                                const float zv = zr[tl];
                                v *= zv * fast_sigmoid(zv);
                            }
                            io<Tin>::st(p.out.data, out0 + (t0 + tl) * p.out.stride[2], v);
                        }
                    }
                }
            }
        }
        if (p.last_state.data && sv)
            ((float *)p.last_state.data)[b * p.last_state.stride[0] + d * p.last_state.stride[1] +
                                         n * p.last_state.stride[2]] = h;
    }
}

static inline bool lanes_vec_ok(const mvrt_scan_operand_t &op, int nstride, size_t esize)
{
    for (int i = 0; i < nstride; ++i)
        if (op.stride[i] % 4 != 0) return false;
    return ((uintptr_t)op.data % (4 * esize)) == 0;
}

/* block: threads per block, a multiple of NS and of the warp (the warp
 * width: few rows spread over as many SMs as possible). */
template <typename Tin, int NS>
static mvrt_gpu_error_t launch_fwd_lanes_t(const mvrt_scan_params_t &p, int block, mvrt_gpu_stream_t s)
{
    const int64_t threads = p.batch * p.dim * NS;
    const int64_t nthreads = (threads + block - 1) / block * block;
    const unsigned grid = grid_for(nthreads / block);
    const bool contig = p.u.stride[2] == 1 && p.delta.stride[2] == 1 && (!p.b_variable || p.B.stride[3] == 1) &&
                        (!p.c_variable || p.C.stride[3] == 1);
    const size_t es = sizeof(Tin);
    const bool vec = contig && p.seqlen % 4 == 0 && lanes_vec_ok(p.u, 2, es) && lanes_vec_ok(p.delta, 2, es) &&
                     (!p.b_variable || lanes_vec_ok(p.B, 3, es)) && (!p.c_variable || lanes_vec_ok(p.C, 3, es));
    const int R = block / NS;
    const bool zvec = !p.z.data || (p.z.stride[2] == 1 && lanes_vec_ok(p.z, 2, es));
    const size_t smem = lanes_staged_smem(R, NS, p.z.data != nullptr);
    if (vec && zvec && p.b_variable && p.c_variable && (p.dim / p.groups) % R == 0 && smem <= 48 * 1024) {
        const int64_t nblk = p.batch * p.dim / R;
        scan_fwd_lanes_staged_kernel<Tin, NS><<<grid_for(nblk), block, smem, s>>>(p);
        return mvrt_gpu_get_last_error();
    }
    if (vec) scan_fwd_lanes_kernel<Tin, NS, 2><<<grid, block, 0, s>>>(p, nthreads);
    else if (contig) scan_fwd_lanes_kernel<Tin, NS, 1><<<grid, block, 0, s>>>(p, nthreads);
    else scan_fwd_lanes_kernel<Tin, NS, 0><<<grid, block, 0, s>>>(p, nthreads);
    return mvrt_gpu_get_last_error();
}

template <typename Tin>
static mvrt_gpu_error_t launch_fwd_lanes_typed(const mvrt_scan_params_t &p, int warp, mvrt_gpu_stream_t s)
{
    const int64_t N = p.dstate;
    if (N <= 1) return launch_fwd_lanes_t<Tin, 1>(p, warp, s);
    if (N <= 2) return launch_fwd_lanes_t<Tin, 2>(p, warp, s);
    if (N <= 4) return launch_fwd_lanes_t<Tin, 4>(p, warp, s);
    if (N <= 8) return launch_fwd_lanes_t<Tin, 8>(p, warp, s);
    if (N <= 16) return launch_fwd_lanes_t<Tin, 16>(p, warp, s);
    return (mvrt_gpu_error_t)1;
}

} /* namespace mvrt_scan_gpu */

#endif
