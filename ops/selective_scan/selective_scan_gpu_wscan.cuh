/* "Warp-scan" forward kernel of the selective scan, for few channel rows
 * of short sequences (L <= 256): parallel in L as well as in rows and
 * states. Part of the one GPU kernel source (included by
 * selective_scan_gpu.cuh; compiled by nvcc and hipcc alike: its "warps"
 * are groups of 32 lanes and its shuffles are 32 wide, also on 64-wide
 * AMD wavefronts).
 *
 * Why: the other forward kernels walk L serially, one step after the
 * other (a dependent exponential and FMA per step); with few rows
 * (MambaVision at batch 1: 160 rows of L = 196) that chain is the time
 * (the staged kernel: 10.5 us, H100, ncu). Here a block of 8 groups of 32
 * lanes takes one row: group w takes states w and w + 8, lane i the T =
 * ceil(L / 32) <= 8 steps [i T, (i + 1) T). A serial pass over its steps
 * gives each lane the affine map h -> a h + b of its segment (a = prod
 * exp(delta A), b the state reached from 0); an inclusive scan of the
 * maps over the 32 lanes (5 shuffle rounds) gives every lane its incoming
 * state; a second pass produces h_t and the lane's C_t h_t. The chain is
 * 2T + 5 steps instead of L. The partial outputs of the groups meet in
 * shared memory, summed in group order after D u (added by group 0),
 * then gated by silu(z) and stored. Steps past L use delta = 0 (a = 1,
 * b = 0), so the last lane's final state is h_{L-1} (last_state).
 * Every sum has a fixed order: bitwise reproducible.
 *
 * Any strides, variable or constant B and C, groups, D, z, delta_bias,
 * softplus, last_state; N <= 16. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_WSCAN_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_WSCAN_CUH

namespace mvrt_scan_gpu {

#define MVRT_SCAN_WSCAN_THREADS 256 /* 8 groups of 32 lanes */
#define MVRT_SCAN_WSCAN_GROUPS 8
#define MVRT_SCAN_WSCAN_T 8         /* steps per lane: L <= 256 */
#define MVRT_SCAN_WSCAN_L_MAX (32 * MVRT_SCAN_WSCAN_T)

static inline bool wscan_path_supported(const mvrt_scan_params_t &p)
{
    return p.dstate >= 1 && p.dstate <= 2 * MVRT_SCAN_WSCAN_GROUPS && p.seqlen >= 1 &&
           p.seqlen <= MVRT_SCAN_WSCAN_L_MAX && p.batch * p.dim <= INT32_MAX;
}
/* Taken by default for at most 4 rows per SM (a block per row; with more
 * rows the serial kernels, which need no second pass, keep every SM busy
 * anyway). */
static inline bool wscan_path_preferred(const mvrt_scan_params_t &p, int sm_count)
{
    return wscan_path_supported(p) && p.batch * p.dim <= 4 * (int64_t)sm_count;
}

/* One channel row's scan once a lane's operands are in registers (both
 * kernels below): dl becomes the step (delta_bias, softplus), y this
 * group's states' part of the lane's outputs (group 0 also D u), last[q]
 * the final state of state grp + q G (the last lane's is h_{L-1}). */
template <int NS>
static __device__ __forceinline__ void wscan_compute(const mvrt_scan_params_t &p, int64_t d, bool sp, float bias,
                                                     float Dv, const bool (&on)[MVRT_SCAN_WSCAN_T],
                                                     const float (&uv)[MVRT_SCAN_WSCAN_T],
                                                     float (&dl)[MVRT_SCAN_WSCAN_T],
                                                     float (&bv)[NS][MVRT_SCAN_WSCAN_T],
                                                     const float (&cv)[NS][MVRT_SCAN_WSCAN_T],
                                                     float (&y)[MVRT_SCAN_WSCAN_T], float (&last)[NS])
{
    constexpr int TM = MVRT_SCAN_WSCAN_T, G = MVRT_SCAN_WSCAN_GROUPS;
    const int lane = threadIdx.x & 31, grp = threadIdx.x >> 5, N = (int)p.dstate;
    float dl_sum = 0.f;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const float v = dl[i] + bias;
        dl[i] = on[i] ? (sp ? fast_softplus(v) : v) : 0.f; /* past L: delta 0 (a = 1, b = 0) */
        dl_sum += dl[i];
        y[i] = grp == 0 ? Dv * uv[i] : 0.f;
    }
#pragma unroll
    for (int q = 0; q < NS; ++q) {
        last[q] = 0.f;
        const int n = grp + q * G;
        if (n >= N) break;
        const float A2 = ((const float *)p.A.data)[d * p.A.stride[0] + n * p.A.stride[1]] * MVRT_SCAN_LOG2E;
        float av[TM], pb = 0.f;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            av[i] = mvrt_fast_exp2(dl[i] * A2);
            bv[q][i] *= dl[i] * uv[i];
            pb = av[i] * pb + bv[q][i];
        }
        float pa = mvrt_fast_exp2(dl_sum * A2); /* the product of av: one exponential, off pb's chain */
        /* inclusive scan of the lanes' maps, earlier lanes first */
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const float qa = MVRT_SHFL(pa, (lane - o) & 31, 32), qb = MVRT_SHFL(pb, (lane - o) & 31, 32);
            if (lane >= o) pb = pa * qb + pb, pa *= qa;
        }
        float hs = MVRT_SHFL(pb, (lane - 1) & 31, 32);
        if (lane == 0) hs = 0.f;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            hs = av[i] * hs + bv[q][i];
            y[i] += cv[q][i] * hs;
        }
        last[q] = hs;
    }
}

template <typename Tin>
__global__ void __launch_bounds__(MVRT_SCAN_WSCAN_THREADS) scan_fwd_wscan_kernel(const mvrt_scan_params_t p)
{
    constexpr int TM = MVRT_SCAN_WSCAN_T, G = MVRT_SCAN_WSCAN_GROUPS;
    __shared__ float ys[G][MVRT_SCAN_WSCAN_L_MAX];
    const int lane = threadIdx.x & 31, grp = threadIdx.x >> 5;
    const int L = (int)p.seqlen, N = (int)p.dstate, T = (L + 31) / 32, l0 = lane * T;
    const int ng = N < G ? N : G; /* groups holding states */
    const int64_t rows = p.batch * p.dim, dpg = p.dim / p.groups;
    const bool sp = p.delta_softplus != 0;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t b = row / p.dim, d = row - b * p.dim, g = d / dpg;
        const int64_t ub = b * p.u.stride[0] + d * p.u.stride[1], db = b * p.delta.stride[0] + d * p.delta.stride[1];
        float uv[TM], dl[TM], y[TM], bv[2][TM], cv[2][TM];
        bool on[TM];
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int l = l0 + i;
            on[i] = i < T && l < L;
            uv[i] = on[i] ? io<Tin>::ld(p.u.data, ub + l * p.u.stride[2]) : 0.f;
            dl[i] = on[i] ? io<Tin>::ld(p.delta.data, db + l * p.delta.stride[2]) : 0.f;
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const int n = grp + q * G;
                const bool ok = on[i] && n < N;
                bv[q][i] = !ok ? 0.f
                           : p.b_variable ? io<Tin>::ld(p.B.data, b * p.B.stride[0] + g * p.B.stride[1] +
                                                                  n * p.B.stride[2] + l * p.B.stride[3])
                                          : ((const float *)p.B.data)[d * p.B.stride[0] + n * p.B.stride[1]];
                cv[q][i] = !ok ? 0.f
                           : p.c_variable ? io<Tin>::ld(p.C.data, b * p.C.stride[0] + g * p.C.stride[1] +
                                                                  n * p.C.stride[2] + l * p.C.stride[3])
                                          : ((const float *)p.C.data)[d * p.C.stride[0] + n * p.C.stride[1]];
            }
        }
        const float bias = p.delta_bias.data ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
        const float Dv = p.D.data ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        float last[2];
        wscan_compute<2>(p, d, sp, bias, Dv, on, uv, dl, bv, cv, y, last);
        if (lane == 31 && p.last_state.data)
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const int n = grp + q * G;
                if (n < N)
                    ((float *)p.last_state.data)[b * p.last_state.stride[0] + d * p.last_state.stride[1] +
                                                 n * p.last_state.stride[2]] = last[q];
            }
        if (grp < ng) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
                if (on[i]) ys[grp][l0 + i] = y[i];
        }
        __syncthreads();
        const int64_t ob = b * p.out.stride[0] + d * p.out.stride[1];
        const int64_t zb = p.z.data ? b * p.z.stride[0] + d * p.z.stride[1] : 0;
        for (int l = threadIdx.x; l < L; l += MVRT_SCAN_WSCAN_THREADS) {
            float v = ys[0][l];
            for (int w = 1; w < ng; ++w) v += ys[w][l];
            if (p.z.data) {
                const float zv = io<Tin>::ld(p.z.data, zb + l * p.z.stride[2]);
                v *= zv * fast_sigmoid(zv);
            }
            io<Tin>::st(p.out.data, ob + l * p.out.stride[2], v);
        }
        __syncthreads(); /* ys is free for the next row */
    }
}

/* The same kernel for the common layout (MambaVision's mixer): any
 * input dtype, unit L-strides of u, delta, B, C and out, variable B and
 * C, no z and no last_state, every offset below 2^31. Why: the general kernel spends
 * most of its ~1 440 instructions per warp (ncu, T stage 3 at batch 1:
 * 160 rows, L 196, N 8; 8.1 us) on 64-bit index arithmetic, branches
 * around every guarded load and parameter loads; here each operand's
 * row is one pointer computed once (the steps are immediate offsets) and
 * the guarded loads are predicated. The arithmetic is the general
 * kernel's, in the same order: bitwise the same results. NS: states per
 * group (1: N <= 8, 2: N <= 16). */
static inline bool wscan_fast_supported(const mvrt_scan_params_t &p)
{
    const int64_t lim = INT32_MAX;
    const int64_t L = p.seqlen, dpg = p.groups > 0 ? p.dim / p.groups : 0;
    auto span3 = [&](const mvrt_scan_operand_t &o) {
        return o.stride[0] >= 0 && o.stride[1] >= 0 && (p.batch - 1) * o.stride[0] + (p.dim - 1) * o.stride[1] + L <= lim;
    };
    auto span4 = [&](const mvrt_scan_operand_t &o) {
        return o.stride[0] >= 0 && o.stride[1] >= 0 && o.stride[2] >= 0 &&
               (p.batch - 1) * o.stride[0] + (p.groups - 1) * o.stride[1] + (p.dstate - 1) * o.stride[2] + L <= lim;
    };
    return wscan_path_supported(p) && p.groups >= 1 && dpg >= 1 &&
           p.b_variable && p.c_variable && !p.z.data && !p.last_state.data && p.u.stride[2] == 1 &&
           p.delta.stride[2] == 1 && p.B.stride[3] == 1 && p.C.stride[3] == 1 && p.out.stride[2] == 1 &&
           span3(p.u) && span3(p.delta) && span3(p.out) && span4(p.B) && span4(p.C);
}

template <typename Tin, int NS>
__global__ void __launch_bounds__(MVRT_SCAN_WSCAN_THREADS) scan_fwd_wscan_fast_kernel(const mvrt_scan_params_t p)
{
    constexpr int TM = MVRT_SCAN_WSCAN_T, G = MVRT_SCAN_WSCAN_GROUPS;
    __shared__ float ys[G][MVRT_SCAN_WSCAN_L_MAX];
    const int lane = threadIdx.x & 31, grp = threadIdx.x >> 5;
    const int L = (int)p.seqlen, N = (int)p.dstate, T = (L + 31) / 32, l0 = lane * T;
    const int ng = N < G ? N : G; /* groups holding states */
    const int dim = (int)p.dim, rows = (int)(p.batch * p.dim), dpg = (int)(p.dim / p.groups);
    const bool sp = p.delta_softplus != 0;
    const int sB = (int)p.B.stride[2], sC = (int)p.C.stride[2];
    /* as a programmatic dependent launch (launch_fwd_wscan_typed): the
     * inputs are the kernel before's output */
    mvrt_grid_dep_wait();
    mvrt_grid_dep_launch_dependents();
    for (int row = (int)blockIdx.x; row < rows; row += (int)gridDim.x) {
        const int b = row / dim, d = row - b * dim, g = d / dpg;
        const Tin *u = (const Tin *)p.u.data + (int)(b * p.u.stride[0] + d * p.u.stride[1]) + l0;
        const Tin *dt = (const Tin *)p.delta.data + (int)(b * p.delta.stride[0] + d * p.delta.stride[1]) + l0;
        const Tin *Bp = (const Tin *)p.B.data + (int)(b * p.B.stride[0] + g * p.B.stride[1]) + l0;
        const Tin *Cp = (const Tin *)p.C.data + (int)(b * p.C.stride[0] + g * p.C.stride[1]) + l0;
        float uv[TM], dl[TM], y[TM], bv[NS][TM], cv[NS][TM];
        bool on[TM];
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            on[i] = i < T && l0 + i < L;
            uv[i] = on[i] ? io<Tin>::wide(u[i]) : 0.f;
            dl[i] = on[i] ? io<Tin>::wide(dt[i]) : 0.f;
#pragma unroll
            for (int q = 0; q < NS; ++q) {
                const int n = grp + q * G;
                const bool ok = on[i] && n < N;
                bv[q][i] = ok ? io<Tin>::wide(Bp[n * sB + i]) : 0.f;
                cv[q][i] = ok ? io<Tin>::wide(Cp[n * sC + i]) : 0.f;
            }
        }
        const float bias = p.delta_bias.data ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
        const float Dv = p.D.data ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        float last[NS];
        wscan_compute<NS>(p, d, sp, bias, Dv, on, uv, dl, bv, cv, y, last);
        if (grp < ng) {
#pragma unroll
            for (int i = 0; i < TM; ++i)
                if (on[i]) ys[grp][l0 + i] = y[i];
        }
        __syncthreads();
        const int64_t ob = b * p.out.stride[0] + d * p.out.stride[1];
        for (int l = threadIdx.x; l < L; l += MVRT_SCAN_WSCAN_THREADS) {
            float v = ys[0][l];
            for (int w = 1; w < ng; ++w) v += ys[w][l];
            io<Tin>::st(p.out.data, ob + l, v);
        }
        __syncthreads(); /* ys is free for the next row */
    }
}

/* ---------------------------------------------------------------------
 * The warp-scan forward for any N and any L ("chunks"): many states and
 * long sequences, where the serial kernels are slow (at N = 64 the
 * general kernel spends a warp per row and a 5-round shuffle sum of y on
 * every step; at batch 1 the staged kernel walks L = 4096 one step after
 * the other). A block of 8 warps takes 8 channel rows of one (batch,
 * group), a warp one row; L is walked in chunks of 256 steps, lane i
 * taking steps [8 i, 8 i + 8) of a chunk. Per state, a serial pass over
 * the lane's 8 steps gives its affine map h -> a h + b, a 5-round shuffle
 * scan over the lanes the incoming state (from the state at the chunk's
 * start, kept in shared memory between chunks), and a second pass h_t and
 * C_t h_t, summed into the lane's 8 outputs in registers: y needs no
 * reduction over lanes or warps. The chunk's variable B and C (shared by
 * the block's rows) are staged in shared memory 16 states at a time by
 * the whole block, every load in flight at once, so a state's operands
 * are a shared-memory read away instead of a global round trip; A's row
 * (16 states) is one load per lane, broadcast by shuffles. Steps past L
 * use delta = 0 and B = 0 (a = 1, b = 0): the last lane's state is the
 * chunk's end state and, after the last chunk, last_state. Fixed-order
 * sums: bitwise reproducible. VEC: unit L-strides and 8-element-aligned
 * rows of u, delta, z, out and variable B / C (one or two 16-byte loads
 * per lane and operand). Any strides otherwise, variable or constant B and
 * C, groups, D, z, delta_bias, softplus, last_state; N <= 1024. */
#define MVRT_SCAN_WSC_T 8                          /* steps per lane and chunk */
#define MVRT_SCAN_WSC_CHUNK (32 * MVRT_SCAN_WSC_T) /* steps per chunk */
#define MVRT_SCAN_WSC_ROWS 8                       /* rows (warps) per block */
#define MVRT_SCAN_WSC_SB 16                        /* states staged at a time */
#define MVRT_SCAN_WSC_N_MAX 1024

static inline bool wscan_chunks_supported(const mvrt_scan_params_t &p)
{
    return p.dstate >= 1 && p.dstate <= MVRT_SCAN_WSC_N_MAX && p.seqlen >= 1 && p.batch * p.dim <= INT32_MAX &&
           p.groups >= 1 && p.dim % p.groups == 0;
}

/* 8 consecutive elements of one row from element offset `off` (steps
 * `stride` apart), as f32; zeros past `nv` valid ones. VEC: one (16-bit)
 * or two (f32) 16-byte loads when all 8 are valid. */
template <typename Tin, bool VEC>
static __device__ __forceinline__ void wsc_load8(float (&v)[MVRT_SCAN_WSC_T], const void *base, int64_t off,
                                                 int64_t stride, int nv)
{
    if (VEC && nv == MVRT_SCAN_WSC_T) {
        if constexpr (sizeof(Tin) == 4) {
            const float4 a = reinterpret_cast<const float4 *>((const float *)base + off)[0];
            const float4 b = reinterpret_cast<const float4 *>((const float *)base + off)[1];
            v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
        } else {
            const uint4 q = *reinterpret_cast<const uint4 *>((const Tin *)base + off);
            const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const unsigned short lo = (unsigned short)(w[k] & 0xffffu), hi = (unsigned short)(w[k] >> 16);
                Tin a, b;
                memcpy(&a, &lo, 2);
                memcpy(&b, &hi, 2);
                v[2 * k] = io<Tin>::wide(a), v[2 * k + 1] = io<Tin>::wide(b);
            }
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < MVRT_SCAN_WSC_T; ++k) v[k] = k < nv ? io<Tin>::ld(base, off + k * stride) : 0.f;
}

/* Stores v's first nv values as elements off, off + stride, ... of one
 * row. VEC: one (16-bit) or two (f32) 16-byte stores when all 8 are valid. */
template <typename Tin, bool VEC>
static __device__ __forceinline__ void wsc_store8(void *base, int64_t off, int64_t stride, int nv,
                                                  const float (&v)[MVRT_SCAN_WSC_T])
{
    if (VEC && nv == MVRT_SCAN_WSC_T) {
        if constexpr (sizeof(Tin) == 4) {
            float4 *d = reinterpret_cast<float4 *>((float *)base + off);
            d[0] = make_float4(v[0], v[1], v[2], v[3]);
            d[1] = make_float4(v[4], v[5], v[6], v[7]);
        } else {
            uint32_t w[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                Tin a, b;
                io<Tin>::st(&a, 0, v[2 * k]);
                io<Tin>::st(&b, 0, v[2 * k + 1]);
                unsigned short lo, hi;
                memcpy(&lo, &a, 2);
                memcpy(&hi, &b, 2);
                w[k] = (uint32_t)lo | ((uint32_t)hi << 16);
            }
            *reinterpret_cast<uint4 *>((Tin *)base + off) = make_uint4(w[0], w[1], w[2], w[3]);
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < MVRT_SCAN_WSC_T; ++k)
        if (k < nv) io<Tin>::st(base, off + k * stride, v[k]);
}

/* Stages steps [c0, c0 + 256) of states [s0, s0 + SB) of a variable B or
 * C (base: its (batch, group) offset) into dst[state][step] as floats,
 * zeros past L or N; all 256 threads, 8 steps each per state row. */
template <typename Tin, bool VEC>
static __device__ __forceinline__ void wsc_stage(float *dst, const mvrt_scan_operand_t &op, int64_t base, int s0,
                                                 int N, int c0, int L)
{
    constexpr int TM = MVRT_SCAN_WSC_T, CH = MVRT_SCAN_WSC_CHUNK, PER = CH / TM; /* 32 pieces per state row */
    for (int k = threadIdx.x; k < MVRT_SCAN_WSC_SB * PER; k += MVRT_SCAN_WSCAN_THREADS) {
        const int q = k / PER, j = (k - q * PER) * TM, n = s0 + q, l = c0 + j, rem = L - l;
        const int nv = n >= N || rem <= 0 ? 0 : rem < TM ? rem : TM;
        float v[TM];
        wsc_load8<Tin, VEC>(v, op.data, base + (int64_t)n * op.stride[2] + (int64_t)l * op.stride[3], op.stride[3], nv);
        float4 *d4 = reinterpret_cast<float4 *>(dst + q * CH + j);
        d4[0] = make_float4(v[0], v[1], v[2], v[3]);
        d4[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
}

/* This lane's 8 steps of staged state q's B or C: from its staged row
 * (variable: staged (SB, CH) floats) or lane q's constant value (every
 * lane calls it with the same `variable`: the shuffle is warp-wide). */
static __device__ __forceinline__ void wsc_state_steps(float (&v)[MVRT_SCAN_WSC_T], bool variable,
                                                       const float *staged, float lane_const, int q, int lane)
{
    static_assert(MVRT_SCAN_WSC_T == 8, "two float4 per lane");
    if (variable) {
        const float4 *r4 = reinterpret_cast<const float4 *>(staged + q * MVRT_SCAN_WSC_CHUNK + lane * MVRT_SCAN_WSC_T);
        const float4 x0 = r4[0], x1 = r4[1];
        v[0] = x0.x, v[1] = x0.y, v[2] = x0.z, v[3] = x0.w, v[4] = x1.x, v[5] = x1.y, v[6] = x1.z, v[7] = x1.w;
        return;
    }
    const float c = MVRT_SHFL(lane_const, q, 32);
#pragma unroll
    for (int i = 0; i < MVRT_SCAN_WSC_T; ++i) v[i] = c;
}

/* Launch needs: blockDim 256, dynamic shared memory wscan_chunks_smem(N). */
static inline size_t wscan_chunks_smem(int64_t N)
{
    return (size_t)(2 * MVRT_SCAN_WSC_SB * MVRT_SCAN_WSC_CHUNK + MVRT_SCAN_WSC_ROWS * N) * sizeof(float);
}

template <typename Tin, bool VEC>
__global__ void __launch_bounds__(MVRT_SCAN_WSCAN_THREADS, 2) scan_fwd_wscan_chunks_kernel(const mvrt_scan_params_t p)
{
    constexpr int TM = MVRT_SCAN_WSC_T, CH = MVRT_SCAN_WSC_CHUNK, R = MVRT_SCAN_WSC_ROWS, SB = MVRT_SCAN_WSC_SB;
    extern __shared__ float4 wsc_smem4[];
    float *sB = reinterpret_cast<float *>(wsc_smem4); /* (SB, CH) */
    float *sC = sB + SB * CH;                         /* (SB, CH) */
    float *hc = sC + SB * CH;                         /* (R, N): each row's states at the chunk's start */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int L = (int)p.seqlen, N = (int)p.dstate;
    const int64_t dpg = p.dim / p.groups, tiles = (dpg + R - 1) / R, nwork = p.batch * p.groups * tiles;
    const bool sp = p.delta_softplus != 0, bvar = p.b_variable != 0, cvar = p.c_variable != 0;
    const float *Ap = (const float *)p.A.data;
    float *h0 = hc + warp * N;
    for (int64_t w = blockIdx.x; w < nwork; w += gridDim.x) {
        const int64_t b = w / (p.groups * tiles), rest = w - b * p.groups * tiles, g = rest / tiles;
        const int64_t d = g * dpg + (rest - g * tiles) * R + warp; /* this warp's row */
        const bool has_row = d < (g + 1) * dpg;
        const int64_t ub = b * p.u.stride[0] + d * p.u.stride[1], db = b * p.delta.stride[0] + d * p.delta.stride[1];
        const int64_t zb = b * p.z.stride[0] + d * p.z.stride[1], ob = b * p.out.stride[0] + d * p.out.stride[1];
        const int64_t Bg = b * p.B.stride[0] + g * p.B.stride[1], Cg = b * p.C.stride[0] + g * p.C.stride[1];
        float bias = 0.f, Dv = 0.f;
        if (has_row) {
            if (p.delta_bias.data) bias = ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]];
            if (p.D.data) Dv = ((const float *)p.D.data)[d * p.D.stride[0]];
            for (int n = lane; n < N; n += 32) h0[n] = 0.f;
        }
        MVRT_SYNCWARP();
        for (int c0 = 0; c0 < L; c0 += CH) {
            MVRT_SYNCWARP(); /* lane 31's h0 writes of the chunk before are seen (constant B and C: no barrier) */
            const int l0 = c0 + lane * TM, rem = L - l0, nv = !has_row || rem < 0 ? 0 : rem < TM ? rem : TM;
            float uv[TM], du[TM], dl[TM], y[TM], dl_sum = 0.f;
            wsc_load8<Tin, VEC>(uv, p.u.data, ub + l0 * p.u.stride[2], p.u.stride[2], nv);
            wsc_load8<Tin, VEC>(dl, p.delta.data, db + l0 * p.delta.stride[2], p.delta.stride[2], nv);
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const float v = dl[i] + bias;
                dl[i] = i < nv ? (sp ? fast_softplus(v) : v) : 0.f; /* past L: a = 1, b = 0 */
                dl_sum += dl[i];
                du[i] = dl[i] * uv[i];
                y[i] = 0.f;
            }
            for (int s0 = 0; s0 < N; s0 += SB) {
                if (bvar || cvar) {
                    __syncthreads(); /* the previous states' reads of sB / sC are done */
                    if (bvar) wsc_stage<Tin, VEC>(sB, p.B, Bg, s0, N, c0, L);
                    if (cvar) wsc_stage<Tin, VEC>(sC, p.C, Cg, s0, N, c0, L);
                    __syncthreads();
                }
                if (!has_row) continue;
                /* A, constant B and C of states s0 + lane (lane < SB), broadcast below */
                const int nl = s0 + (lane & (SB - 1));
                const bool okl = nl < N;
                const float Al = okl ? Ap[d * p.A.stride[0] + nl * p.A.stride[1]] * MVRT_SCAN_LOG2E : 0.f;
                const float Bl = !bvar && okl ? ((const float *)p.B.data)[d * p.B.stride[0] + nl * p.B.stride[1]] : 0.f;
                const float Cl = !cvar && okl ? ((const float *)p.C.data)[d * p.C.stride[0] + nl * p.C.stride[1]] : 0.f;
                const int ns = N - s0 < SB ? N - s0 : SB;
#pragma unroll 2
                for (int q = 0; q < ns; ++q) {
                    const int n = s0 + q;
                    const float A2 = MVRT_SHFL(Al, q, 32);
                    const float carry = h0[n]; /* read before the shuffles below; lane 31 writes after them */
                    float bv[TM], cv[TM];
                    wsc_state_steps(bv, bvar, sB, Bl, q, lane);
                    wsc_state_steps(cv, cvar, sC, Cl, q, lane);
                    float av[TM], pb = 0.f;
#pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        av[i] = mvrt_fast_exp2(dl[i] * A2);
                        bv[i] *= du[i];
                        pb = av[i] * pb + bv[i];
                    }
                    float pa = mvrt_fast_exp2(dl_sum * A2); /* the product of av: one exponential, off pb's chain */
#pragma unroll
                    for (int o = 1; o < 32; o <<= 1) {
                        const float qa = MVRT_SHFL(pa, (lane - o) & 31, 32), qb = MVRT_SHFL(pb, (lane - o) & 31, 32);
                        if (lane >= o) pb = pa * qb + pb, pa *= qa;
                    }
                    const float ea = MVRT_SHFL(pa, (lane - 1) & 31, 32), eb = MVRT_SHFL(pb, (lane - 1) & 31, 32);
                    float h = lane == 0 ? carry : ea * carry + eb;
#pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        h = av[i] * h + bv[i];
                        y[i] += cv[i] * h;
                    }
                    if (lane == 31) h0[n] = h;
                }
            }
            if (has_row && nv > 0) {
                float zv[TM];
                if (p.z.data) wsc_load8<Tin, VEC>(zv, p.z.data, zb + l0 * p.z.stride[2], p.z.stride[2], nv);
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    y[i] += Dv * uv[i];
                    if (p.z.data) y[i] *= zv[i] * fast_sigmoid(zv[i]);
                }
                wsc_store8<Tin, VEC>(p.out.data, ob + l0 * p.out.stride[2], p.out.stride[2], nv, y);
            }
        }
        MVRT_SYNCWARP();
        if (has_row && p.last_state.data)
            for (int n = lane; n < N; n += 32)
                ((float *)p.last_state.data)[b * p.last_state.stride[0] + d * p.last_state.stride[1] +
                                             n * p.last_state.stride[2]] = h0[n];
        MVRT_SYNCWARP(); /* h0 is reset for the next row after these reads */
    }
}

/* VEC's conditions: unit L-strides of u, delta, z, out and variable B / C,
 * every other stride of them a multiple of 8 elements and their data
 * aligned to 8 elements, so that every lane's 8 steps start 8-element
 * aligned. */
static inline bool wscan_chunks_vec(const mvrt_scan_params_t &p)
{
    const int64_t es = p.input_dtype == MVRT_SCAN_F32 ? 4 : 2;
    auto ok = [&](const mvrt_scan_operand_t &o, int lstride_axis, int naxes) {
        if (o.stride[lstride_axis] != 1 || ((uintptr_t)o.data % (uintptr_t)(8 * es)) != 0) return false;
        for (int a = 0; a < naxes; ++a)
            if (a != lstride_axis && o.stride[a] % 8 != 0) return false;
        return true;
    };
    return ok(p.u, 2, 3) && ok(p.delta, 2, 3) && ok(p.out, 2, 3) && (!p.z.data || ok(p.z, 2, 3)) &&
           (!p.b_variable || ok(p.B, 3, 4)) && (!p.c_variable || ok(p.C, 3, 4));
}

template <typename Tin>
static mvrt_gpu_error_t launch_fwd_wscan_chunks_typed(const mvrt_scan_params_t &p, mvrt_gpu_stream_t s)
{
    const size_t smem = wscan_chunks_smem(p.dstate);
    const int64_t tiles = (p.dim / p.groups + MVRT_SCAN_WSC_ROWS - 1) / MVRT_SCAN_WSC_ROWS;
    void (*fn)(const mvrt_scan_params_t) =
        wscan_chunks_vec(p) ? scan_fwd_wscan_chunks_kernel<Tin, true> : scan_fwd_wscan_chunks_kernel<Tin, false>;
    return launch_scan_kernel(fn, p, p.batch * p.groups * tiles, MVRT_SCAN_WSCAN_THREADS, smem, s);
}

/* allow_fast: the unit-stride form where it applies (the launcher's knob
 * can keep the general kernel, which tests and benchmarks compare), as a
 * programmatic dependent launch when `dependent` (CUDA sm_90+: the
 * unit-stride form waits for the kernel before; gpu_vendor.h) */
template <typename Tin>
static mvrt_gpu_error_t launch_fwd_wscan_typed(const mvrt_scan_params_t &p, bool allow_fast, bool dependent,
                                               mvrt_gpu_stream_t s)
{
    if (allow_fast && wscan_fast_supported(p)) {
        void (*fn)(const mvrt_scan_params_t) = p.dstate <= MVRT_SCAN_WSCAN_GROUPS ? scan_fwd_wscan_fast_kernel<Tin, 1>
                                                                                : scan_fwd_wscan_fast_kernel<Tin, 2>;
        return mvrt_launch_ex(fn, dim3(grid_for(p.batch * p.dim)), dim3(MVRT_SCAN_WSCAN_THREADS), 0, s, 0, dependent,
                              p);
    }
    scan_fwd_wscan_kernel<Tin><<<grid_for(p.batch * p.dim), MVRT_SCAN_WSCAN_THREADS, 0, s>>>(p);
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_scan_gpu

#endif
