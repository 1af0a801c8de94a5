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

/* Inclusive scan of the lanes' affine maps h -> pa h + pb over each group
 * of 32 lanes, earlier lanes first: afterwards lane i holds the map of
 * lanes 0 .. i (5 shuffle rounds, fixed order). */
static __device__ __forceinline__ float2 wsc_prefix_maps(float pa, float pb, int lane)
{
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const float qa = MVRT_SHFL(pa, (lane - o) & 31, 32), qb = MVRT_SHFL(pb, (lane - o) & 31, 32);
        if (lane >= o) pb = pa * qb + pb, pa *= qa;
    }
    return make_float2(pa, pb);
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
        { const float2 m = wsc_prefix_maps(pa, pb, lane); pa = m.x, pb = m.y; }
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
                v[2 * k] = mvrt_h16_to_f32<io<Tin>::h16>((unsigned short)(w[k] & 0xffffu));
                v[2 * k + 1] = mvrt_h16_to_f32<io<Tin>::h16>((unsigned short)(w[k] >> 16));
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
            constexpr int H = io<Tin>::h16;
            *reinterpret_cast<uint4 *>((Tin *)base + off) =
                make_uint4(mvrt_h16x2<H>(v[0], v[1]), mvrt_h16x2<H>(v[2], v[3]), mvrt_h16x2<H>(v[4], v[5]),
                           mvrt_h16x2<H>(v[6], v[7]));
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < MVRT_SCAN_WSC_T; ++k)
        if (k < nv) io<Tin>::st(base, off + k * stride, v[k]);
}

/* Stages steps [c0, c0 + 256) of states [s0, s0 + nstage) of a variable B
 * or C (base: its (batch, group) offset) into dst[state][step] as floats,
 * zeros past L or N; all 256 threads, 8 steps each per state row. */
template <typename Tin, bool VEC>
static __device__ __forceinline__ void wsc_stage(float *dst, const mvrt_scan_operand_t &op, int64_t base, int s0,
                                                 int nstage, int N, int c0, int L)
{
    constexpr int TM = MVRT_SCAN_WSC_T, CH = MVRT_SCAN_WSC_CHUNK, PER = CH / TM; /* 32 pieces per state row */
    for (int k = threadIdx.x; k < nstage * PER; k += MVRT_SCAN_WSCAN_THREADS) {
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
        lds_vec(v, staged + q * MVRT_SCAN_WSC_CHUNK + lane * MVRT_SCAN_WSC_T);
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
                    if (bvar) wsc_stage<Tin, VEC>(sB, p.B, Bg, s0, SB, N, c0, L);
                    if (cvar) wsc_stage<Tin, VEC>(sC, p.C, Cg, s0, SB, N, c0, L);
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
                    { const float2 m = wsc_prefix_maps(pa, pb, lane); pa = m.x, pb = m.y; }
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
static inline bool wsc_vec_operand(const mvrt_scan_operand_t &o, int lstride_axis, int naxes, int64_t es)
{
    if (o.stride[lstride_axis] != 1 || ((uintptr_t)o.data % (uintptr_t)(8 * es)) != 0) return false;
    for (int a = 0; a < naxes; ++a)
        if (a != lstride_axis && o.stride[a] % 8 != 0) return false;
    return true;
}
static inline bool wscan_chunks_vec(const mvrt_scan_params_t &p)
{
    const int64_t es = p.input_dtype == MVRT_SCAN_F32 ? 4 : 2;
    return wsc_vec_operand(p.u, 2, 3, es) && wsc_vec_operand(p.delta, 2, 3, es) && wsc_vec_operand(p.out, 2, 3, es) &&
           (!p.z.data || wsc_vec_operand(p.z, 2, 3, es)) && (!p.b_variable || wsc_vec_operand(p.B, 3, 4, es)) &&
           (!p.c_variable || wsc_vec_operand(p.C, 3, 4, es));
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

/* ---------------------------------------------------------------------
 * The chunked warp-scan backward: the forward's geometry (a block of 8
 * warps takes 8 channel rows of one (batch, group), a warp one row, lane
 * i steps [8 i, 8 i + 8) of each 256-step chunk) for the adjoint. Why: at
 * N > 16 the general backward keeps a row's states in one thread group
 * and walks L serially (0.28-0.40x mamba_ssm at 16x64x256xN, N 64-256, and
 * on the Mamba layer at batch 1; PERF_NOTES, session 48); here both
 * recurrences are parallel in L like the forward.
 *
 * Pass 1 (more than one chunk): the forward's lane maps over chunks 0 ..
 * n-2 give each state's value at every chunk start, saved in the
 * workspace (Bt, nchunks, Dm, N). Pass 2 walks the chunks backwards; per
 * state, the lane maps are rebuilt from the saved start state (h_t in
 * registers), and the adjoint
 *   lambda_t = mu_{t+1} + C_t g_t,  mu_t = a_t lambda_t
 * (mu: what passes to step t - 1) is the same kind of affine recurrence
 * run from the right: a lane's 8 steps map mu_in to mu_out = P mu_in + Q
 * with P the forward's product of a_t, a suffix scan over the lanes
 * (shuffles from lane + o) gives each lane its incoming mu from the
 * chunk's end carry (shared memory, per row and state), and a reverse pass
 * over the lane's steps produces lambda_t and the gradients:
 *   du = delta' sum_n lambda B + D g,  ddelta' = sum_n lambda (B u + A a_t h_{t-1}),
 *   dA_n += lambda delta' a_t h_{t-1},  dB_n,t = lambda delta' u,  dC_n,t = g h_t,
 * with g = dout silu(z) and dz = dout (y + D u) silu'(z) (y summed over the
 * states as the forward does). du and ddelta accumulate in the lane's
 * registers over the states; dA and constant dB / dC per row and state in
 * shared memory (a fixed 5-round butterfly over the lanes per chunk);
 * variable dB / dC go through each warp's partials in shared memory,
 * summed over the block's rows in row order every RS states, then over
 * tiles by the shared reduction kernel. Fixed-order sums throughout:
 * bitwise reproducible. Steps past L: delta' = 0, u = 0 and g = 0 (a = 1,
 * nothing added), never stored. N <= 256; RS (states per round: staged
 * B / C and the warps' partials) is 4, 2 or 1, the most that fits the
 * device's shared memory. */
#define MVRT_SCAN_WSCB_N_MAX 256
#define MVRT_SCAN_WSCB_RS_MAX 4
/* a warp's dB / dC partial row of one state: lane i's 8 steps at 9 i ..
 * 9 i + 7 (scalar stores from the lanes hit 32 different banks) */
#define MVRT_SCAN_WSCB_PROW (32 * (MVRT_SCAN_WSC_T + 1))

static inline bool wscan_chunks_bwd_supported(const mvrt_scan_params_t &p)
{
    return wscan_chunks_supported(p) && p.dstate <= MVRT_SCAN_WSCB_N_MAX;
}

/* staged B / C and the warps' dB / dC partials of rs states, and per row
 * and state: the adjoint's carry, dA, constant dB and dC */
static inline size_t wscan_chunks_bwd_smem(int64_t N, int rs)
{
    constexpr size_t CH = MVRT_SCAN_WSC_CHUNK, R = MVRT_SCAN_WSC_ROWS, PR = MVRT_SCAN_WSCB_PROW;
    return (2 * rs * CH + 2 * R * rs * PR + 4 * R * (size_t)N) * sizeof(float);
}
/* states per round for the shared-memory limit (0: does not fit) */
static inline int wscan_chunks_bwd_rs(int64_t N, size_t smem_limit)
{
    for (int rs = MVRT_SCAN_WSCB_RS_MAX; rs >= 1; rs /= 2)
        if (wscan_chunks_bwd_smem(N, rs) <= smem_limit) return rs;
    return 0;
}

/* This lane's 8 steps of one state's B or C: from its staged row
 * (variable; `staged` points at the lane's first step) or the row's
 * constant value row[off]. */
static __device__ __forceinline__ void wsc_bwd_steps(float (&v)[MVRT_SCAN_WSC_T], bool variable, const float *staged,
                                                     const float *row, int64_t off)
{
    if (variable) {
        lds_vec(v, staged);
        return;
    }
    const float c = row[off];
#pragma unroll
    for (int i = 0; i < MVRT_SCAN_WSC_T; ++i) v[i] = c;
}

/* Launch needs: blockDim 256, dynamic shared memory
 * wscan_chunks_bwd_smem(N, k.np); k from make_chunked_kparams with ch = 8
 * rows per tile, ts = 256, np = RS, nsub = chunks; workspace bound.
 * MINB: blocks per SM of the launch bound (make_wscan_bwd_config). */
template <typename Tin, bool VEC, int MINB>
__global__ void __launch_bounds__(MVRT_SCAN_WSCAN_THREADS, MINB) scan_bwd_wscan_chunks_kernel(const kparams k)
{
    constexpr int TM = MVRT_SCAN_WSC_T, CH = MVRT_SCAN_WSC_CHUNK, R = MVRT_SCAN_WSC_ROWS, PR = MVRT_SCAN_WSCB_PROW;
    const mvrt_scan_params_t &p = k.p;
    extern __shared__ float4 wsc_smem4[];
    const int rs = k.np, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int L = (int)p.seqlen, N = (int)p.dstate, nchunks = k.nsub, K = 3 * N + 2;
    float *sB = reinterpret_cast<float *>(wsc_smem4); /* (rs, CH) staged B */
    float *sC = sB + rs * CH;                         /* (rs, CH) staged C */
    float *wB = sC + rs * CH;                         /* (R, rs, PR) each row's dB of the round's states */
    float *wC = wB + R * rs * PR;                     /* (R, rs, PR) dC */
    float *carry = wC + R * rs * PR + warp * N;       /* this row's h (pass 1) / mu (pass 2) carry */
    float *accA = carry + R * N, *accB = accA + R * N, *accC = accB + R * N; /* this row's sums over L */
    const bool sp = p.delta_softplus != 0, bvar = p.b_variable != 0, cvar = p.c_variable != 0, hz = p.z.data != 0;
    const float *Ap = (const float *)p.A.data;
    for (int64_t w = blockIdx.x; w < k.nwork; w += gridDim.x) {
        const work wk = decode(k, w);
        const bool has_row = warp < wk.nrows;
        const int64_t b = wk.b, d = wk.d0 + (has_row ? warp : 0);
        const int64_t ub = b * p.u.stride[0] + d * p.u.stride[1], db = b * p.delta.stride[0] + d * p.delta.stride[1];
        const int64_t Bg = b * p.B.stride[0] + wk.g * p.B.stride[1], Cg = b * p.C.stride[0] + wk.g * p.C.stride[1];
        const float bias =
            has_row && p.delta_bias.data ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
        const float Dv = has_row && p.D.data ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
        /* chunk c's start state of this row: hsave[c * hstep + n] (c >= 1; no workspace for one chunk) */
        float *hsave = nchunks > 1 ? k.ws_state + (b * nchunks * p.dim + d) * N : 0;
        const int64_t hstep = p.dim * (int64_t)N;
        /* this row's A and constant B / C (state n at n * sA1 / sB1 / sC1),
         * this lane's staged steps and partial slots */
        const float *Arow = Ap + d * p.A.stride[0];
        const float *Brow = (const float *)p.B.data + (bvar ? 0 : d * p.B.stride[0]);
        const float *Crow = (const float *)p.C.data + (cvar ? 0 : d * p.C.stride[0]);
        const int64_t sA1 = p.A.stride[1], sB1 = p.B.stride[1], sC1 = p.C.stride[1];
        const float *sBl = sB + lane * TM, *sCl = sC + lane * TM;
        float *wBl = wB + warp * rs * PR + lane * (TM + 1), *wCl = wC + warp * rs * PR + lane * (TM + 1);

        /* ---- pass 1: every chunk's start state */
        for (int n = lane; n < N; n += 32) carry[n] = 0.f;
        MVRT_SYNCWARP();
        for (int c = 0; c + 1 < nchunks; ++c) {
            const int c0 = c * CH, l0 = c0 + lane * TM, rem = L - l0;
            const int nv = !has_row || rem < 0 ? 0 : rem < TM ? rem : TM;
            float uv[TM], dl[TM], dl_sum = 0.f;
            wsc_load8<Tin, VEC>(uv, p.u.data, ub + l0 * p.u.stride[2], p.u.stride[2], nv);
            wsc_load8<Tin, VEC>(dl, p.delta.data, db + l0 * p.delta.stride[2], p.delta.stride[2], nv);
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const float v = dl[i] + bias;
                dl[i] = i < nv ? (sp ? fast_softplus(v) : v) : 0.f;
                dl_sum += dl[i];
                uv[i] *= dl[i]; /* delta' u */
            }
            for (int s0 = 0; s0 < N; s0 += rs) {
                const int ns = N - s0 < rs ? N - s0 : rs;
                if (bvar) {
                    __syncthreads();
                    wsc_stage<Tin, VEC>(sB, p.B, Bg, s0, ns, N, c0, L);
                    __syncthreads();
                }
                if (!has_row) continue;
                for (int q = 0; q < ns; ++q) {
                    const int n = s0 + q;
                    const float A2 = Arow[n * sA1] * MVRT_SCAN_LOG2E;
                    float bv[TM], pb = 0.f;
                    wsc_bwd_steps(bv, bvar, sBl + q * CH, Brow, n * sB1);
#pragma unroll
                    for (int i = 0; i < TM; ++i) pb = mvrt_fast_exp2(dl[i] * A2) * pb + bv[i] * uv[i];
                    float pa = mvrt_fast_exp2(dl_sum * A2);
                    { const float2 m = wsc_prefix_maps(pa, pb, lane); pa = m.x, pb = m.y; }
                    if (lane == 31) { /* the chunk's map applied to its start state: the next chunk's */
                        const float h = pa * carry[n] + pb;
                        carry[n] = h;
                        hsave[(c + 1) * hstep + n] = h;
                    }
                }
            }
        }

        /* ---- pass 2: chunks in reverse */
        __threadfence_block(); /* lane 31's saved states (global memory) before the warp's reads below */
        MVRT_SYNCWARP();
        for (int n = lane; n < N; n += 32) carry[n] = accA[n] = accB[n] = accC[n] = 0.f;
        float dD = 0.f, dbias = 0.f;
        for (int c = nchunks - 1; c >= 0; --c) {
            MVRT_SYNCWARP(); /* lane 0's carry writes of the chunk after are seen */
            const int c0 = c * CH, l0 = c0 + lane * TM, rem = L - l0;
            const int nv = !has_row || rem < 0 ? 0 : rem < TM ? rem : TM;
            const int64_t gb = b * p.dout.stride[0] + d * p.dout.stride[1] + l0 * p.dout.stride[2];
            const int64_t zb = hz ? b * p.z.stride[0] + d * p.z.stride[1] + l0 * p.z.stride[2] : 0;
            /* per step: du_ = delta' u; s1 = sum_n lambda B, s2 = sum_n A lambda a h_{t-1}, y = sum_n C h */
            float du_[TM], dl[TM], g[TM], y[TM], s1[TM], s2[TM], dl_sum = 0.f;
            wsc_load8<Tin, VEC>(du_, p.u.data, ub + l0 * p.u.stride[2], p.u.stride[2], nv);
            wsc_load8<Tin, VEC>(dl, p.delta.data, db + l0 * p.delta.stride[2], p.delta.stride[2], nv);
            wsc_load8<Tin, VEC>(g, p.dout.data, gb, p.dout.stride[2], nv);
            if (hz) { /* g = dout silu(z) */
                float zv[TM];
                wsc_load8<Tin, VEC>(zv, p.z.data, zb, p.z.stride[2], nv);
#pragma unroll
                for (int i = 0; i < TM; ++i) g[i] *= zv[i] * fast_sigmoid(zv[i]);
            }
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const float v = dl[i] + bias;
                dl[i] = i < nv ? (sp ? fast_softplus(v) : v) : 0.f;
                dl_sum += dl[i];
                du_[i] *= dl[i];
                y[i] = s1[i] = s2[i] = 0.f;
            }
            const float *hstart = c > 0 ? hsave + c * hstep : 0;
            for (int s0 = 0; s0 < N; s0 += rs) {
                const int ns = N - s0 < rs ? N - s0 : rs;
                if (bvar || cvar) {
                    __syncthreads(); /* the round before: staged rows and partials are read */
                    if (bvar) wsc_stage<Tin, VEC>(sB, p.B, Bg, s0, ns, N, c0, L);
                    if (cvar) wsc_stage<Tin, VEC>(sC, p.C, Cg, s0, ns, N, c0, L);
                    __syncthreads();
                }
                if (has_row) {
#pragma unroll 1
                    for (int q = 0; q < ns; ++q) {
                        const int n = s0 + q;
                        const float An = Arow[n * sA1], A2 = An * MVRT_SCAN_LOG2E;
                        const float h0 = hstart ? hstart[n] : 0.f, mu_c = carry[n]; /* read before lane 0 writes */
                        float bv[TM], cv[TM], av[TM], hv[TM], pb = 0.f, qb = 0.f;
                        wsc_bwd_steps(bv, bvar, sBl + q * CH, Brow, n * sB1);
                        wsc_bwd_steps(cv, cvar, sCl + q * CH, Crow, n * sC1);
#pragma unroll
                        for (int i = 0; i < TM; ++i) {
                            av[i] = mvrt_fast_exp2(dl[i] * A2);
                            pb = av[i] * pb + bv[i] * du_[i];
                        }
#pragma unroll
                        for (int i = TM - 1; i >= 0; --i) qb = av[i] * (qb + cv[i] * g[i]);
                        const float p0 = mvrt_fast_exp2(dl_sum * A2); /* the product of av */
                        float pa = p0, ra = p0;
#pragma unroll
                        for (int o = 1; o < 32; o <<= 1) { /* h: prefix over earlier lanes; mu: suffix over later */
                            const float fa = MVRT_SHFL(pa, (lane - o) & 31, 32);
                            const float fb = MVRT_SHFL(pb, (lane - o) & 31, 32);
                            const float sa = MVRT_SHFL(ra, (lane + o) & 31, 32);
                            const float sb = MVRT_SHFL(qb, (lane + o) & 31, 32);
                            if (lane >= o) pb = pa * fb + pb, pa *= fa;
                            if (lane + o < 32) qb = ra * sb + qb, ra *= sa;
                        }
                        const float ea = MVRT_SHFL(pa, (lane - 1) & 31, 32), eb = MVRT_SHFL(pb, (lane - 1) & 31, 32);
                        const float na = MVRT_SHFL(ra, (lane + 1) & 31, 32), nb = MVRT_SHFL(qb, (lane + 1) & 31, 32);
                        const float hin = lane == 0 ? h0 : ea * h0 + eb;
                        float mu = lane == 31 ? mu_c : na * mu_c + nb;
                        float h = hin;
#pragma unroll
                        for (int i = 0; i < TM; ++i) {
                            h = av[i] * h + bv[i] * du_[i];
                            hv[i] = h;
                            if (hz) y[i] += cv[i] * h;
                        }
                        float sA = 0.f, sBc = 0.f, sCc = 0.f;
                        float *pB = wBl + q * PR, *pC = wCl + q * PR;
#pragma unroll
                        for (int i = TM - 1; i >= 0; --i) {
                            const float hp = i > 0 ? hv[i > 0 ? i - 1 : 0] : hin;
                            const float lam = mu + cv[i] * g[i], la = lam * (av[i] * hp);
                            const float gB = lam * du_[i], gC = g[i] * hv[i];
                            s1[i] += lam * bv[i];
                            s2[i] += An * la;
                            sA += dl[i] * la;
                            if (bvar) pB[i] = gB; else sBc += gB;
                            if (cvar) pC[i] = gC; else sCc += gC;
                            mu = av[i] * lam;
                        }
                        if (lane == 0) carry[n] = mu;
                        sA = group_sum<32>(sA);
                        if (!bvar) sBc = group_sum<32>(sBc);
                        if (!cvar) sCc = group_sum<32>(sCc);
                        if (lane == 0) {
                            accA[n] += sA;
                            if (!bvar) accB[n] += sBc;
                            if (!cvar) accC[n] += sCc;
                        }
                    }
                }
                if (bvar || cvar) { /* the round's dB / dC: the block's rows summed in order */
                    __syncthreads();
                    for (int e = threadIdx.x; e < ns * CH; e += MVRT_SCAN_WSCAN_THREADS) {
                        const int q = e / CH, j = e - q * CH, o = q * PR + j + j / TM; /* step j's partial */
                        if (c0 + j >= L) continue;
                        if (bvar) {
                            float s = 0.f;
                            for (int r = 0; r < wk.nrows; ++r) s += wB[r * rs * PR + o];
                            store_dbc<Tin>(k, wk, 0, s0 + q, c0 + j, s);
                        }
                        if (cvar) {
                            float s = 0.f;
                            for (int r = 0; r < wk.nrows; ++r) s += wC[r * rs * PR + o];
                            store_dbc<Tin>(k, wk, 1, s0 + q, c0 + j, s);
                        }
                    }
                }
            }
            if (has_row && nv > 0) {
                /* dz = dout silu'(z) (y + D u); z and dout are loaded again rather
                 * than kept: 16 fewer live registers through the state loop */
                float uv[TM], gdu[TM], gdd[TM], zf[TM];
                wsc_load8<Tin, VEC>(uv, p.u.data, ub + l0 * p.u.stride[2], p.u.stride[2], nv);
                if (hz) {
                    float dv[TM];
                    wsc_load8<Tin, VEC>(zf, p.z.data, zb, p.z.stride[2], nv);
                    wsc_load8<Tin, VEC>(dv, p.dout.data, gb, p.dout.stride[2], nv);
#pragma unroll
                    for (int i = 0; i < TM; ++i) {
                        const float zz = zf[i], sig = fast_sigmoid(zz);
                        zf[i] = dv[i] * sig * (1.f + zz * (1.f - sig)) * (y[i] + Dv * uv[i]);
                    }
                }
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    dD += g[i] * uv[i];
                    gdu[i] = dl[i] * s1[i] + Dv * g[i];
                    gdd[i] = uv[i] * s1[i] + s2[i];
                    if (sp) gdd[i] *= -expm1f(-dl[i]); /* softplus' = sigmoid = 1 - exp(-softplus) */
                    if (i < nv) dbias += gdd[i];
                }
                wsc_store8<Tin, VEC>(p.du.data, b * p.du.stride[0] + d * p.du.stride[1] + l0 * p.du.stride[2],
                                     p.du.stride[2], nv, gdu);
                wsc_store8<Tin, VEC>(p.ddelta.data,
                                     b * p.ddelta.stride[0] + d * p.ddelta.stride[1] + l0 * p.ddelta.stride[2],
                                     p.ddelta.stride[2], nv, gdd);
                if (hz) /* dz is given exactly when z is (runtime/selective_scan.c) */
                    wsc_store8<Tin, VEC>(p.dz.data, b * p.dz.stride[0] + d * p.dz.stride[1] + l0 * p.dz.stride[2],
                                         p.dz.stride[2], nv, zf);
            }
        }
        /* this row's sums over L: [dA n][const dB n][const dC n][dD][ddelta_bias] */
        dD = group_sum<32>(dD);
        dbias = group_sum<32>(dbias);
        MVRT_SYNCWARP(); /* lane 0's sums are seen */
        if (has_row) {
            float *dst = k.ws_row + (b * p.dim + d) * K;
            for (int n = lane; n < N; n += 32) dst[n] = accA[n], dst[N + n] = accB[n], dst[2 * N + n] = accC[n];
            if (lane == 0) dst[3 * N] = dD, dst[3 * N + 1] = dbias;
        }
        MVRT_SYNCWARP(); /* read before the next row resets them */
    }
}

/* VEC's conditions for the backward: the forward's, for u, delta, z,
 * variable B / C, dout, du, ddelta and dz. */
static inline bool wscan_chunks_bwd_vec(const mvrt_scan_params_t &p)
{
    const int64_t es = p.input_dtype == MVRT_SCAN_F32 ? 4 : 2;
    const mvrt_scan_operand_t *rows[] = {&p.u, &p.delta, &p.dout, &p.du, &p.ddelta};
    for (const mvrt_scan_operand_t *o : rows)
        if (!wsc_vec_operand(*o, 2, 3, es)) return false;
    return (!p.z.data || wsc_vec_operand(p.z, 2, 3, es)) && (!p.dz.data || wsc_vec_operand(p.dz, 2, 3, es)) &&
           (!p.b_variable || wsc_vec_operand(p.B, 3, 4, es)) && (!p.c_variable || wsc_vec_operand(p.C, 3, 4, es));
}

struct wscan_bwd_config {
    int rs;      /* states per round, 0: does not fit */
    int minb;    /* launch bound: blocks per SM (1 or 2) */
    int ntiles;  /* 8-row tiles per group */
    int nchunks; /* 256-step chunks over L */
    size_t smem;
};
/* The launch bound: two blocks per SM (128 registers, ~200 bytes of
 * spills outside the state loop, 10 % more instructions in it) only where
 * the blocks outnumber the SMs, else one (about 190 registers, no spills).
 * H200, bwd ms, one block / two blocks per SM (session 49, calls 1-2):
 * 16x64x256xN (128 blocks) N 64 0.125-0.127 / 0.155, N 128 0.248-0.250 /
 * 0.292, N 256 0.472-0.477 / 0.576 (f32); the Mamba layer at batch 1
 * (192 blocks) 1.26-1.27 / 0.91 (L 4096), 2.51-2.52 / 1.80 (L 8192). Two
 * warps per row each taking half of the states (4-row blocks, twice the
 * blocks) at two blocks per SM: N 64 / 128 / 256 0.144 / 0.260 / 0.502 —
 * not kept. */
static inline wscan_bwd_config make_wscan_bwd_config(const mvrt_scan_params_t &p, size_t smem_limit, int sm_count)
{
    wscan_bwd_config c;
    c.rs = wscan_chunks_bwd_rs(p.dstate, smem_limit);
    c.ntiles = (int)((p.dim / p.groups + MVRT_SCAN_WSC_ROWS - 1) / MVRT_SCAN_WSC_ROWS);
    c.minb = p.batch * p.groups * c.ntiles > sm_count ? 2 : 1;
    c.nchunks = (int)((p.seqlen + MVRT_SCAN_WSC_CHUNK - 1) / MVRT_SCAN_WSC_CHUNK);
    c.smem = c.rs ? wscan_chunks_bwd_smem(p.dstate, c.rs) : 0;
    return c;
}
static inline ws_layout make_wscan_bwd_ws_layout(const mvrt_scan_params_t &p, const wscan_bwd_config &c)
{
    return make_chunked_ws_layout(p, c.nchunks, c.ntiles);
}
static inline kparams make_wscan_bwd_kparams(const mvrt_scan_params_t &p, const wscan_bwd_config &c)
{
    return make_chunked_kparams(p, c.ntiles, MVRT_SCAN_WSC_ROWS, MVRT_SCAN_WSC_CHUNK, c.rs, c.nchunks);
}

template <typename Tin>
static mvrt_gpu_error_t launch_bwd_wscan_chunks_typed(const kparams &k, const wscan_bwd_config &c, mvrt_gpu_stream_t s)
{
    const bool vec = wscan_chunks_bwd_vec(k.p);
    void (*fn)(const kparams) = c.minb == 2 ? (vec ? scan_bwd_wscan_chunks_kernel<Tin, true, 2>
                                                   : scan_bwd_wscan_chunks_kernel<Tin, false, 2>)
                                            : (vec ? scan_bwd_wscan_chunks_kernel<Tin, true, 1>
                                                   : scan_bwd_wscan_chunks_kernel<Tin, false, 1>);
    return launch_scan_bwd_kernel<Tin>(fn, k, MVRT_SCAN_WSCAN_THREADS, c.smem, s);
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
