/* "Staged" forward kernel of the selective scan: a channel row's N <= 16
 * states in the registers of 1, 2 or 4 lanes (or one thread per segment of
 * L), inputs staged in shared memory by asynchronous 16/8/4-byte copies.
 * Part of the one GPU kernel source (included by selective_scan_gpu.cuh;
 * compiled by nvcc and hipcc alike: cp.async on NVIDIA sm_80+, plain
 * copies elsewhere).
 *
 * Why (PERF_NOTES v3-v7): the row kernel spends ~180 instructions per
 * (row, step) where the recurrence needs ~50, mostly in its staging: a
 * scalar load, a scalar shared store and a scalar shared load per element
 * and tensor, 64-bit address steps, a softplus round trip through shared
 * memory and a scalar store pass. Here a warp copies whole pieces straight
 * into shared memory (no registers, no conversion), each lane reads 4 steps
 * of its row with one vector load, y + D u replaces u in place, and the
 * store pass copies whole pieces back (applying the z gate, y * silu(z)).
 *
 * Modes (host: make_staged_config):
 *   chunks (MODE 2, many rows): L is walked in chunks of T = 32/16 steps,
 *     double-buffered: the copies of chunk c+1 are in flight while chunk c
 *     computes and stores. Shared rows are T+4 elements apart (16-byte
 *     aligned for f32, conflict-free 16-/8-byte reads). LPR = 1, 2 or 4
 *     lanes per row hold NS/LPR states each: each lane computes 4/LPR of a
 *     4-step group's delta' and gets the others by shuffles; y is summed by
 *     a butterfly. More lanes per row = more warps where rows per SM are
 *     few (the per-step chain is latency-bound).
 *   whole rows (MODE 0/1): the block's rows x L region (contiguous: dense
 *     layouts only) is copied at once. Many rows (L <= 64): 2 lanes per row
 *     as above. Few rows (batch 1): L is split into S segments of SL steps,
 *     one thread each: pass 1 runs every segment from a zero state, giving
 *     its end state and the product of its a_t (= exp2(A log2e * sum of
 *     delta')); each thread folds the (product, end state) pairs of the
 *     segments before it into its start state; pass 2 reruns the segment
 *     from there and writes y. The serial chain is SL steps instead of L.
 *     MODE 1 reads 4 steps per vector load (L and SL multiples of 4), MODE 0
 *     one step per load.
 * B and C of the staged steps sit in shared memory as f32 [t][B n.., C n..]
 * (broadcast 16-byte reads), zero for padded states n >= N (a = 1, no
 * input: those states stay 0 and add nothing).
 * Every sum has a fixed order: results are bitwise reproducible. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_STAGED_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_STAGED_CUH

namespace mvrt_scan_gpu {

#define MVRT_SCAN_STAGED_MAX_THREADS 512 /* launch bound */
#define MVRT_SCAN_STAGED_THREADS 256     /* block size cap of the whole-row mode */
#define MVRT_SCAN_STAGED_BCK 8       /* chunk mode, 16-bit B/C: elements per thread */

/* Launch constants of the staged kernel (host: make_staged_config). */
struct staged_kparams {
    kparams k;        /* work decomposition: Bt * G * tiles of ch rows */
    int T, lgT;       /* chunk mode: steps per chunk (power of two) */
    int S, SL;        /* whole rows: segments per row and their length */
    int srow;         /* shared row stride in elements */
    int vec;          /* bytes per copy piece: 16, 8, 4 or the element size */
    int lg_ppr;       /* chunk mode: log2 of pieces per full chunk row */
    int bc_vec;       /* whole rows: B/C rows copied raw by pieces of this many bytes, then
                       * transposed in shared memory (0: element by element) */
    int bc_raw_off;   /* whole rows: byte offset of that raw B/C area */
    int tens_bytes;   /* bytes of one tensor's rows in a stage (16-aligned) */
    int stage_bytes;  /* bytes of one stage (tensors, then B/C) */
};

/* ------------------------------------------- global -> shared copies */
template <int VEC> struct raw_piece;
template <> struct raw_piece<16> { typedef uint4 t; };
template <> struct raw_piece<8> { typedef uint2 t; };
template <> struct raw_piece<4> { typedef unsigned t; };
template <> struct raw_piece<2> { typedef unsigned short t; };

#if defined(MVRT_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MVRT_SCAN_CP_ASYNC 1
#endif

/* Copies VEC bytes; asynchronous where the hardware can (then visible only
 * after staged_copy_wait() and a barrier). */
template <int VEC> static __device__ __forceinline__ void staged_copy(void *sdst, const void *gsrc)
{
#if defined(MVRT_SCAN_CP_ASYNC)
    if constexpr (VEC >= 4) {
        const unsigned sa = (unsigned)__cvta_generic_to_shared(sdst);
        if constexpr (VEC == 16)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(gsrc) : "memory");
        else
            asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(sa), "l"(gsrc), "n"(VEC) : "memory");
        return;
    }
#endif
    typedef typename raw_piece<VEC>::t P;
    *reinterpret_cast<P *>(sdst) = *reinterpret_cast<const P *>(gsrc);
}
static __device__ __forceinline__ void staged_copy_commit()
{
#if defined(MVRT_SCAN_CP_ASYNC)
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/* Waits for this thread's copies (the barrier after it publishes them). */
static __device__ __forceinline__ void staged_copy_wait()
{
#if defined(MVRT_SCAN_CP_ASYNC)
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

/* y * silu(z) for the VEC bytes of y and z at ys, zs (shared), to g. */
template <typename Tin, int VEC>
static __device__ __forceinline__ void gate_piece(char *g, const char *ys, const char *zs)
{
    typedef typename raw_piece<VEC>::t P;
    constexpr int E = VEC / (int)sizeof(Tin);
    union U {
        P raw;
        Tin e[E];
    } y, z;
    y.raw = *reinterpret_cast<const P *>(ys);
    z.raw = *reinterpret_cast<const P *>(zs);
#pragma unroll
    for (int i = 0; i < E; ++i) {
        const float zz = io<Tin>::ld(z.e, i);
        io<Tin>::st(y.e, i, io<Tin>::ld(y.e, i) * (zz * fast_sigmoid(zz)));
    }
    *reinterpret_cast<P *>(g) = y.raw;
}

/* What a piece copy does: global -> shared (asynchronous where possible),
 * shared -> global, or shared -> global through the z gate (z at zoff
 * bytes after y in shared memory). */
enum { PIECE_LOAD = 0, PIECE_STORE = 1, PIECE_STORE_GATED = 2 };
template <typename Tin, int OP, int VEC>
static __device__ __forceinline__ void piece_op(char *s, char *g, int zoff)
{
    typedef typename raw_piece<VEC>::t P;
    if constexpr (OP == PIECE_LOAD)
        staged_copy<VEC>(s, g);
    else if constexpr (OP == PIECE_STORE)
        *reinterpret_cast<P *>(g) = *reinterpret_cast<const P *>(s);
    else
        gate_piece<Tin, VEC>(g, s, s + zoff);
}

/* Runs the statement (which names VEC) for VEC = vec = 16, 8, 4, else the
 * element size ES: the one piece-size switch of every copy loop. */
#define MVRT_BY_PIECE(vec, ES, ...)                                                                                    \
    switch (vec) {                                                                                                     \
    case 16: { constexpr int VEC = 16; __VA_ARGS__; } break;                                                           \
    case 8: { constexpr int VEC = 8; __VA_ARGS__; } break;                                                             \
    case 4: { constexpr int VEC = 4; __VA_ARGS__; } break;                                                             \
    default: { constexpr int VEC = (ES); __VA_ARGS__; } break;                                                         \
    }

/* A contiguous region of `bytes` (a multiple of VEC; both ends aligned). */
template <typename Tin, int OP, int VEC>
static __device__ __forceinline__ void region_op_t(char *smem, char *gmem, int bytes, int zoff)
{
    for (int i = threadIdx.x * VEC; i < bytes; i += blockDim.x * VEC) piece_op<Tin, OP, VEC>(smem + i, gmem + i, zoff);
}
template <typename Tin, int OP>
static __device__ __forceinline__ void region_op(int vec, char *smem, char *gmem, int bytes, int zoff = 0)
{
    MVRT_BY_PIECE(vec, (int)sizeof(Tin), region_op_t<Tin, OP, VEC>(smem, gmem, bytes, zoff))
}

/* nrows rows of row_bytes (<= ppr = 2^lg_ppr pieces of VEC bytes each),
 * shared rows sstride bytes apart, global rows gstride bytes apart. A
 * thread keeps one piece position j of rows rr, rr + rstep, ... (ppr
 * divides the block size): two pointer steps per piece. */
template <typename Tin, int OP, int VEC>
static __device__ __forceinline__ void rows_op_t(char *smem, int sstride, char *gmem, int64_t gstride, int nrows,
                                                 int lg_ppr, int row_bytes, int zoff)
{
    const int j = (int)(threadIdx.x & ((1u << lg_ppr) - 1)) * VEC;
    if (j >= row_bytes) return;
    int rr = (int)(threadIdx.x >> lg_ppr);
    const int rstep = (int)(blockDim.x >> lg_ppr);
    char *sp = smem + rr * sstride + j;
    char *gp = gmem + rr * gstride + j;
    const int sstep = rstep * sstride;
    const int64_t gstep = rstep * gstride;
#pragma unroll 4
    for (; rr < nrows; rr += rstep) {
        piece_op<Tin, OP, VEC>(sp, gp, zoff);
        sp += sstep;
        gp += gstep;
    }
}
template <typename Tin, int OP>
static __device__ __forceinline__ void rows_op(int vec, char *smem, int sstride, char *gmem, int64_t gstride, int nrows,
                                               int lg_ppr, int row_bytes, int zoff = 0)
{
    MVRT_BY_PIECE(vec, (int)sizeof(Tin),
                  rows_op_t<Tin, OP, VEC>(smem, sstride, gmem, gstride, nrows, lg_ppr, row_bytes, zoff))
}

/* Where a block's variable B and C start, and their state and step
 * strides in bytes (computed once per work item). */
struct bc_src {
    const char *base[2]; /* B, C at (batch, group) of the block */
    int64_t sn, st;      /* B's state and step strides in bytes */
    int64_t snc, stc;    /* C's */
};
template <typename Tin> static __device__ __forceinline__ bc_src make_bc_src(const mvrt_scan_params_t &p, const work &wk)
{
    bc_src r;
    r.base[0] = (const char *)p.B.data + (wk.b * p.B.stride[0] + wk.g * p.B.stride[1]) * (int64_t)sizeof(Tin);
    r.base[1] = (const char *)p.C.data + (wk.b * p.C.stride[0] + wk.g * p.C.stride[1]) * (int64_t)sizeof(Tin);
    r.sn = p.B.stride[2] * (int64_t)sizeof(Tin);
    r.st = p.B.stride[3] * (int64_t)sizeof(Tin);
    r.snc = p.C.stride[2] * (int64_t)sizeof(Tin);
    r.stc = p.C.stride[3] * (int64_t)sizeof(Tin);
    return r;
}
/* Element (tensor tn: 0 = B, 1 = C; state n; step t) of variable B/C. */
template <typename Tin>
static __device__ __forceinline__ const Tin *bc_elem(const bc_src &b, int tn, int n, int64_t t)
{
    return (const Tin *)(tn ? b.base[1] + n * b.snc + t * b.stc : b.base[0] + n * b.sn + t * b.st);
}

/* B/C of steps [t0, t0+len) into dst[t][2][NS] (f32), element i of the
 * thread-strided walk being (tensor, state, step) with the step fastest
 * (coalesced). f32 goes by asynchronous 4-byte copies; 16-bit types are
 * loaded and widened. Zero beyond N and len. */
template <typename Tin, int NS>
static __device__ __forceinline__ void bc_stage_whole(float *dst, const bc_src &bs, int64_t t0, int len, int N)
{
    /* (row rest = tensor * NS + state, step t) of the walk, advanced
     * without a division per element */
    int rest = (int)threadIdx.x / len, t = (int)threadIdx.x - rest * len;
    const int step_rows = (int)blockDim.x / len, step_t = (int)blockDim.x - step_rows * len;
    while (rest < 2 * NS) {
        const int n = rest % NS, tn = rest / NS;
        float *q = dst + t * 2 * NS + rest;
        if (n < N) {
            const Tin *g = bc_elem<Tin>(bs, tn, n, t0 + t);
            if constexpr (sizeof(Tin) == 4)
                staged_copy<4>(q, g);
            else
                *q = io<Tin>::ld(g, 0);
        } else {
            *q = 0.f;
        }
        rest += step_rows;
        t += step_t;
        if (t >= len) {
            t -= len;
            ++rest;
        }
    }
}

/* Whole rows, B/C with unit step stride: the 2N rows of L steps copied raw
 * (row_bytes each, VEC-byte pieces, VEC >= 4; a warp per row, its lanes
 * along the row) into raw[tensor * N + state][t], then bc_transpose. */
template <int VEC>
static __device__ __forceinline__ void bc_copy_raw_t(char *raw, const bc_src &bs, int row_bytes, int N)
{
    const int nw = (int)(blockDim.x / MVRT_WARP_SIZE), w = (int)(threadIdx.x / MVRT_WARP_SIZE);
    const int lane = (int)(threadIdx.x % MVRT_WARP_SIZE);
    for (int row = w; row < 2 * N; row += nw) {
        const int tn = row >= N, n = row - tn * N;
        const char *g = bs.base[tn] + n * (tn ? bs.snc : bs.sn);
        char *sm = raw + row * row_bytes;
        for (int j = lane * VEC; j < row_bytes; j += MVRT_WARP_SIZE * VEC) staged_copy<VEC>(sm + j, g + j);
    }
}
static __device__ __forceinline__ void bc_copy_raw(int vec, char *raw, const bc_src &bs, int row_bytes, int N)
{
    MVRT_BY_PIECE(vec, 4, bc_copy_raw_t<VEC>(raw, bs, row_bytes, N))
}
/* raw[tensor * N + state][t] -> dst[t][2][NS] as f32 (zero beyond N).
 * Four loads per thread before their stores: a store may alias the next
 * load, so one element at a time paid a shared-memory latency each
 * (measured at batch 1: 29 % of the stall samples). */
template <typename Tin, int NS>
static __device__ __forceinline__ void bc_transpose(float *dst, const Tin *raw, int len, int N)
{
    const int total = 2 * NS * len;
    const int step = (int)blockDim.x;
    for (int i0 = threadIdx.x; i0 < total; i0 += 4 * step) {
        float v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int i = i0 + k * step;
            const int t = i / (2 * NS), rest = i % (2 * NS);
            const int n = rest % NS, tn = rest / NS;
            v[k] = (i < total && n < N) ? io<Tin>::ld(raw, (tn * N + n) * len + t) : 0.f;
        }
#pragma unroll
        for (int k = 0; k < 4; ++k)
            if (i0 + k * step < total) dst[i0 + k * step] = v[k];
    }
}

/* Chunk mode, 16-bit B/C: the next chunk's elements in registers while the
 * current chunk computes (T * 2NS <= MVRT_SCAN_STAGED_BCK * blockDim.x),
 * kept raw (16-bit, a mask of the elements that exist) and widened only by
 * bc_put_chunk: widening at the fetch made the thread wait for its loads
 * there (measured at MV-T s3 bf16, staged backward: long-scoreboard stalls
 * 0.98 vs 0.18 cycles per issue for f32). */
template <typename Tin> struct bc_raw16 {
    Tin v[MVRT_SCAN_STAGED_BCK];
    unsigned have; /* bit k: v[k] is an element (else 0) */
};
template <typename Tin, int NS>
static __device__ __forceinline__ void bc_fetch_chunk(bc_raw16<Tin> &r, const bc_src &bs, int64_t t0, int len, int N,
                                                      int lgT)
{
    const int total = (2 * NS) << lgT;
    r.have = 0;
#pragma unroll
    for (int k = 0; k < MVRT_SCAN_STAGED_BCK; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        const int t = i & ((1 << lgT) - 1), rest = i >> lgT;
        const int n = rest % NS, tn = rest / NS;
        if (i < total && n < N && t < len) {
            r.v[k] = *bc_elem<Tin>(bs, tn, n, t0 + t);
            r.have |= 1u << k;
        }
    }
}
template <typename Tin, int NS>
static __device__ __forceinline__ void bc_put_chunk(float *dst, const bc_raw16<Tin> &r, int lgT)
{
    const int total = (2 * NS) << lgT;
#pragma unroll
    for (int k = 0; k < MVRT_SCAN_STAGED_BCK; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        const int t = i & ((1 << lgT) - 1), rest = i >> lgT;
        if (i < total) dst[t * 2 * NS + rest] = (r.have >> k) & 1u ? io<Tin>::wide(r.v[k]) : 0.f; /* rest = tn * NS + n */
    }
}
/* Chunk mode, f32 B/C: asynchronous 4-byte copies (zeros stored directly). */
template <typename Tin, int NS>
static __device__ __forceinline__ void bc_copy_chunk(float *dst, const bc_src &bs, int64_t t0, int len, int N, int lgT)
{
    const int total = (2 * NS) << lgT;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
        const int t = i & ((1 << lgT) - 1), rest = i >> lgT;
        const int n = rest % NS, tn = rest / NS;
        float *q = dst + t * 2 * NS + rest;
        if (n < N && t < len)
            staged_copy<4>(q, bc_elem<Tin>(bs, tn, n, t0 + t));
        else
            *q = 0.f;
    }
}

/* 4 consecutive elements of shared memory (aligned to 4 elements) as f32, and back. */
template <typename Tin> static __device__ __forceinline__ void lds4(float (&v)[4], const Tin *src)
{
    const vec4_of<Tin> q = *reinterpret_cast<const vec4_of<Tin> *>(src);
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = io<Tin>::ld(q.v, i);
}
template <typename Tin> static __device__ __forceinline__ void sts4(Tin *dst, const float (&v)[4])
{
    vec4_of<Tin> q;
#pragma unroll
    for (int i = 0; i < 4; ++i) io<Tin>::st(q.v, i, v[i]);
    *reinterpret_cast<vec4_of<Tin> *>(dst) = q;
}

/* One step of the recurrence for the lane's NSL states (B of them at bc[0],
 * C at bc[NS]); returns the lane's part of sum_n C_n h_n (OUT), summed in
 * two interleaved chains (half the dependent FMA latency of one chain). */
template <int NS, int NSL, bool OUT>
static __device__ __forceinline__ float staged_step(float (&h)[NSL], const float (&A2)[NSL], float dp, float uv,
                                                    const float *bc)
{
    float Bv[NSL];
    lds_vec<NSL>(Bv, bc);
    const float du = dp * uv;
    if constexpr (OUT) {
        float Cv[NSL];
        lds_vec<NSL>(Cv, bc + NS);
        float y0 = 0.f, y1 = 0.f;
#pragma unroll
        for (int j = 0; j < NSL; ++j) {
            h[j] = fmaf(mvrt_fast_exp2(dp * A2[j]), h[j], du * Bv[j]);
            if (j % 2 == 0)
                y0 = fmaf(Cv[j], h[j], y0);
            else
                y1 = fmaf(Cv[j], h[j], y1);
        }
        return y0 + y1;
    } else {
#pragma unroll
        for (int j = 0; j < NSL; ++j) h[j] = fmaf(mvrt_fast_exp2(dp * A2[j]), h[j], du * Bv[j]);
        return 0.f;
    }
}

/* The per-row constants of the recurrence (the lane's NSL states). */
template <int NSL> struct staged_row {
    float A2[NSL]; /* A * log2(e) */
    float Dd, bias;
    bool sp;
};

/* Steps [t, t1) of one row from shared memory (u row, delta row, B/C of
 * step 0 at bc). LPR lanes (consecutive, the same t range: every lane of
 * the warp calls this together when LPR > 1) share the row, NSL = NS/LPR
 * states each; in a group of 4 steps each lane computes 4/LPR of the
 * delta' (bias + softplus) and gets the others by shuffles; y is summed over
 * the lanes by a butterfly (the same bits in every lane). OUT: y + D u
 * replaces u in place (the z gate is applied by the store pass), stored by
 * the row's first lane when wr; else dsum collects delta' (pass 1 of the
 * segments). VEC4: groups of 4
 * steps by vector loads (t 4-element aligned), the rest one by one. */
template <typename Tin, int NS, int LPR, bool VEC4, bool OUT>
static __device__ __forceinline__ void staged_steps(float (&h)[NS / LPR], const staged_row<NS / LPR> &c, Tin *urow,
                                                    const Tin *drow, const float *bc, int t, int t1, float &dsum,
                                                    bool wr)
{
    constexpr int NSL = NS / LPR;
    const int q = LPR > 1 ? (int)(threadIdx.x % LPR) : 0;
    bc += q * NSL;
    if constexpr (VEC4) {
        for (; t + 4 <= t1; t += 4) {
            float uv[4], dv[4], yv[4];
            lds4<Tin>(uv, urow + t);
            lds4<Tin>(dv, drow + t);
            if constexpr (LPR == 1) {
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const float v = dv[k] + c.bias;
                    dv[k] = c.sp ? fast_softplus(v) : v;
                }
            } else {
                /* lane q: steps q, q + LPR, ...; then step j from lane j % LPR */
                float mine[4 / LPR];
#pragma unroll
                for (int k = 0; k < 4 / LPR; ++k) {
                    float v = dv[k * LPR]; /* dv[k * LPR + q] by selects (no indexed registers) */
#pragma unroll
                    for (int qq = 1; qq < LPR; ++qq) v = q == qq ? dv[k * LPR + qq] : v;
                    v += c.bias;
                    mine[k] = c.sp ? fast_softplus(v) : v;
                }
#pragma unroll
                for (int j = 0; j < 4; ++j) dv[j] = MVRT_SHFL(mine[j / LPR], j % LPR, LPR);
            }
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                yv[k] = staged_step<NS, NSL, OUT>(h, c.A2, dv[k], uv[k], bc + (t + k) * 2 * NS);
                if (!OUT) dsum += dv[k];
            }
            if constexpr (OUT) {
#pragma unroll
                for (int k = 0; k < 4; ++k) yv[k] = fmaf(c.Dd, uv[k], group_sum<LPR>(yv[k]));
                /* every lane of the row has read u of these steps */
                if (LPR > 1) MVRT_SYNCWARP();
                if (wr && q == 0) sts4<Tin>(urow + t, yv);
            }
        }
    }
#pragma unroll 4
    for (; t < t1; ++t) {
        const float uv = io<Tin>::ld(urow, t);
        const float v = io<Tin>::ld(drow, t) + c.bias;
        const float dv = c.sp ? fast_softplus(v) : v;
        const float y = staged_step<NS, NSL, OUT>(h, c.A2, dv, uv, bc + t * 2 * NS);
        if constexpr (OUT) {
            const float yo = fmaf(c.Dd, uv, group_sum<LPR>(y));
            if (LPR > 1) MVRT_SYNCWARP();
            if (wr && q == 0) io<Tin>::st(urow, t, yo);
        } else {
            dsum += dv;
        }
    }
}

/* MODE 0: whole rows, scalar reads; 1: whole rows, vector reads; 2: chunks
 * (LPR lanes per row; 1 in the whole-row modes). 16-bit chunks: registers
 * capped for two 512-thread blocks per SM (the compiler's own choice, 128,
 * let one block of 320+ threads fit). */
template <typename Tin, int NS, int MODE, int LPR>
__global__ void __launch_bounds__(MVRT_SCAN_STAGED_MAX_THREADS, MODE == 2 && sizeof(Tin) == 2 ? 2 : 1)
    scan_fwd_staged_kernel(const staged_kparams sk)
{
    extern __shared__ float4 smem4[];
    char *smem = reinterpret_cast<char *>(smem4);
    constexpr int ES = (int)sizeof(Tin);
    constexpr int NSL = NS / LPR;
    /* several lanes per row: chunks, or whole rows without segments */
    constexpr bool ROWLANES = MODE == 2 || LPR > 1;
    const kparams &k = sk.k;
    const mvrt_scan_params_t &p = k.p;
    const int R = k.ch;
    const int r = ROWLANES ? (int)threadIdx.x / LPR : (int)threadIdx.x % R;
    const int s = ROWLANES ? 0 : (int)threadIdx.x / R;
    const int q = ROWLANES ? (int)threadIdx.x % LPR : 0; /* the lane's states: q*NSL .. q*NSL+NSL-1 */
    const int64_t L = p.seqlen;
    const int N = (int)p.dstate;
    const int ntens = p.z.data ? 3 : 2;
    float dummy = 0.f;

    for (int64_t w = blockIdx.x; w < k.nwork; w += gridDim.x) {
        const work wk = decode(k, w);
        const bool active = r < wk.nrows && s < sk.S;
        const int64_t d = wk.d0 + (active ? r : 0);
        staged_row<NSL> c;
        float h[NSL];
        /* the row's constants, loaded once the block's first copies are in
         * flight (their latencies overlap) */
        auto load_row = [&]() {
#pragma unroll
            for (int j = 0; j < NSL; ++j) {
                const int n = q * NSL + j;
                c.A2[j] = (active && n < N) ? ((const float *)p.A.data)[d * p.A.stride[0] + n * p.A.stride[1]] * MVRT_SCAN_LOG2E : 0.f;
                h[j] = 0.f;
            }
            c.Dd = (p.D.data && active) ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
            c.bias = (p.delta_bias.data && active) ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
            c.sp = p.delta_softplus != 0;
        };
        const bool has_z = p.z.data != 0;
        /* the block's first element of each (Bt, Dm, L) tensor, in bytes */
        char *gu = (char *)p.u.data + (wk.b * p.u.stride[0] + wk.d0 * p.u.stride[1]) * ES;
        char *gd = (char *)p.delta.data + (wk.b * p.delta.stride[0] + wk.d0 * p.delta.stride[1]) * ES;
        char *gz = has_z ? (char *)p.z.data + (wk.b * p.z.stride[0] + wk.d0 * p.z.stride[1]) * ES : (char *)0;
        char *go = (char *)p.out.data + (wk.b * p.out.stride[0] + wk.d0 * p.out.stride[1]) * ES;
        const bc_src bs = make_bc_src<Tin>(p, wk);

        if constexpr (MODE == 2) {
            const int T = sk.T;
            const int sbytes = sk.srow * ES;
            const int nchunks = (int)((L + T - 1) >> sk.lgT);
            /* every lane runs the steps (the lanes of a row shuffle); lanes
             * past the block's rows run on their own spare shared row (never
             * written: no race) and store nothing */
            const int rr = r;
            bc_raw16<Tin> bcv;
            /* stage i of chunk c: tensors then B/C */
            auto issue = [&](int cc) {
                char *st = smem + (cc & 1) * sk.stage_bytes;
                const int64_t t0 = (int64_t)cc << sk.lgT;
                const int len = (int)((L - t0) < T ? (L - t0) : T);
                rows_op<Tin, PIECE_LOAD>(sk.vec, st, sbytes, gu + t0 * ES, p.u.stride[1] * ES, wk.nrows, sk.lg_ppr, len * ES);
                rows_op<Tin, PIECE_LOAD>(sk.vec, st + sk.tens_bytes, sbytes, gd + t0 * ES, p.delta.stride[1] * ES, wk.nrows,
                                sk.lg_ppr, len * ES);
                if (has_z)
                    rows_op<Tin, PIECE_LOAD>(sk.vec, st + 2 * sk.tens_bytes, sbytes, gz + t0 * ES, p.z.stride[1] * ES, wk.nrows,
                                    sk.lg_ppr, len * ES);
                if constexpr (ES == 4)
                    bc_copy_chunk<Tin, NS>((float *)(st + ntens * sk.tens_bytes), bs, t0, len, N, sk.lgT);
                staged_copy_commit();
            };
            /* the copies first: the row constants' loads are consumed at
             * once (A * log2 e), so issued before the copies they would
             * serialize the two latencies */
            issue(0);
            load_row();
            if constexpr (ES != 4) {
                bc_fetch_chunk<Tin, NS>(bcv, bs, 0, (int)(L < T ? L : T), N, sk.lgT);
                bc_put_chunk<Tin, NS>((float *)(smem + ntens * sk.tens_bytes), bcv, sk.lgT);
            }
            for (int cc = 0; cc < nchunks; ++cc) {
                char *st = smem + (cc & 1) * sk.stage_bytes;
                const int64_t t0 = (int64_t)cc << sk.lgT;
                const int len = (int)((L - t0) < T ? (L - t0) : T);
                staged_copy_wait();
                __syncthreads(); /* chunk cc visible; everyone is done with the other stage */
                const bool more = cc + 1 < nchunks;
                if (more) {
                    issue(cc + 1);
                    if constexpr (ES != 4) {
                        const int64_t t1 = t0 + T;
                        bc_fetch_chunk<Tin, NS>(bcv, bs, t1, (int)((L - t1) < T ? (L - t1) : T), N, sk.lgT);
                    }
                }
                {
                    Tin *ur = (Tin *)st + rr * sk.srow;
                    staged_steps<Tin, NS, LPR, true, true>(h, c, ur, (const Tin *)(st + sk.tens_bytes) + rr * sk.srow,
                                                           (const float *)(st + ntens * sk.tens_bytes), 0, len, dummy,
                                                           active);
                }
                if constexpr (ES != 4) {
                    if (more) bc_put_chunk<Tin, NS>((float *)(smem + ((cc + 1) & 1) * sk.stage_bytes + ntens * sk.tens_bytes), bcv, sk.lgT);
                }
                __syncthreads(); /* y of chunk cc complete */
                /* z rows sit 2 tensors after the y rows */
                if (has_z)
                    rows_op<Tin, PIECE_STORE_GATED>(sk.vec, st, sbytes, go + t0 * ES, p.out.stride[1] * ES, wk.nrows,
                                                    sk.lg_ppr, len * ES, 2 * sk.tens_bytes);
                else
                    rows_op<Tin, PIECE_STORE>(sk.vec, st, sbytes, go + t0 * ES, p.out.stride[1] * ES, wk.nrows, sk.lg_ppr,
                                              len * ES);
            }
        } else {
            /* whole rows: dense (row stride L) regions of nrows * L elements */
            constexpr bool VEC4 = MODE == 1;
            Tin *su = (Tin *)smem;
            Tin *sd = (Tin *)(smem + sk.tens_bytes);
            Tin *sz = (Tin *)(smem + 2 * sk.tens_bytes);
            float *sbc = (float *)(smem + ntens * sk.tens_bytes);
            float *sseg = sbc + L * 2 * NS; /* [S][R][P, h_end] */
            const int rbytes = wk.nrows * (int)L * ES;
            region_op<Tin, PIECE_LOAD>(sk.vec, (char *)su, gu, rbytes);
            region_op<Tin, PIECE_LOAD>(sk.vec, (char *)sd, gd, rbytes);
            if (has_z) region_op<Tin, PIECE_LOAD>(sk.vec, (char *)sz, gz, rbytes);
            if (sk.bc_vec)
                bc_copy_raw(sk.bc_vec, smem + sk.bc_raw_off, bs, (int)L * ES, N);
            else
                bc_stage_whole<Tin, NS>(sbc, bs, 0, (int)L, N);
            staged_copy_commit();
            load_row(); /* after the copies (see chunks): measured at batch 1,
                         * 28 % of the stall samples were before the copies */
            staged_copy_wait();
            __syncthreads();
            if (sk.bc_vec) {
                bc_transpose<Tin, NS>(sbc, (const Tin *)(smem + sk.bc_raw_off), (int)L, N);
                __syncthreads();
            }
            const int t0 = s * sk.SL;
            const int t1 = (int)(t0 + sk.SL < L ? t0 + sk.SL : L);
            /* with lanes per row every lane runs the steps (see chunks) */
            const int ro = r * (int)L;
            if constexpr (LPR == 1) { /* segments: one lane per row */
                if (sk.S > 1) {
                    if (active && s + 1 < sk.S) {
                        float dsum = 0.f;
                        staged_steps<Tin, NS, 1, VEC4, false>(h, c, su + ro, sd + ro, sbc, t0, t1, dsum, false);
                        float *qs = sseg + (s * R + r) * 2 * NS;
#pragma unroll
                        for (int j = 0; j < NS; ++j) {
                            qs[j] = mvrt_fast_exp2(dsum * c.A2[j]);
                            qs[NS + j] = h[j];
                        }
                    }
                    __syncthreads();
                    if (active) {
#pragma unroll
                        for (int j = 0; j < NS; ++j) h[j] = 0.f;
                        for (int kk = 0; kk < s; ++kk) {
                            const float *qs = sseg + (kk * R + r) * 2 * NS;
#pragma unroll
                            for (int j = 0; j < NS; ++j) h[j] = fmaf(qs[j], h[j], qs[NS + j]);
                        }
                    }
                }
            }
            if (active || LPR > 1)
                staged_steps<Tin, NS, LPR, VEC4, true>(h, c, su + ro, sd + ro, sbc, t0, t1, dummy, active);
            __syncthreads();
            if (has_z)
                region_op<Tin, PIECE_STORE_GATED>(sk.vec, (char *)su, go, rbytes, 2 * sk.tens_bytes);
            else
                region_op<Tin, PIECE_STORE>(sk.vec, (char *)su, go, rbytes);
        }
        if (p.last_state.data && active && s + 1 == sk.S) {
#pragma unroll
            for (int j = 0; j < NSL; ++j)
                if (q * NSL + j < N)
                    ((float *)p.last_state.data)[wk.b * p.last_state.stride[0] + d * p.last_state.stride[1] +
                                                 (q * NSL + j) * p.last_state.stride[2]] = h[j];
        }
        __syncthreads(); /* the next work item reuses shared memory */
    }
}

/* ============================================================ host side */

struct staged_config {
    int mode; /* 0: not applicable; 1: whole rows; 2: chunks */
    int lpr;  /* chunks: lanes per row */
    int vec4; /* whole rows: vector reads */
    int ns, T, S, SL, ch, ntiles, threads, vec;
    size_t smem;
    staged_kparams sk;
};

static inline int staged_align16(int64_t b) { return (int)((b + 15) / 16 * 16); }

/* Largest piece (16, 8, 4 bytes, else the element size) dividing every
 * byte quantity of the list. */
static inline int staged_piece(const int64_t *q, int nq, int es)
{
    for (int v = 16; v >= 4; v /= 2) {
        bool ok = true;
        for (int i = 0; i < nq && ok; ++i) ok = q[i] % v == 0;
        if (ok) return v;
    }
    return es;
}

/* Every problem with variable B and C, N <= 16 and unit L-strides of u,
 * delta, z, out; whole-row mode also needs dense rows (row stride L).
 * force (tests, benchmarks): 0 = only where it is expected to win: many
 * rows (chunks; whole rows at L <= 64), or few rows (segments) with short
 * enough L; 1 = every supported problem, 2 = chunks only, 3 = whole rows
 * only. */
enum { STAGED_AUTO = 0, STAGED_ANY = 1, STAGED_CHUNKS = 2, STAGED_WHOLE = 3 };
static inline staged_config make_staged_config(const mvrt_scan_params_t &p, size_t smem_limit, int warp, int sm_count,
                                               int force, int lpr_force = 0)
{
    staged_config c;
    memset(&c, 0, sizeof c);
    if (!(p.b_variable && p.c_variable && p.dstate >= 1 && p.dstate <= 16)) return c;
    const mvrt_scan_operand_t *ts[4] = {&p.u, &p.delta, &p.out, p.z.data ? &p.z : (const mvrt_scan_operand_t *)0};
    const int nt = p.z.data ? 4 : 3, ntens = p.z.data ? 3 : 2;
    const int64_t L = p.seqlen, es = p.input_dtype == MVRT_SCAN_F32 ? 4 : 2;
    bool dense = true;
    for (int i = 0; i < nt; ++i) {
        if (ts[i]->stride[2] != 1 && L > 1) return c;
        if (ts[i]->stride[1] != L) dense = false;
    }
    c.ns = row_ns(p.dstate);
    const int64_t dpg = p.dim / p.groups;
    const int64_t rows = p.batch * p.dim;
    const bool few = rows < 32 * (int64_t)sm_count;
    const int64_t bc_bytes_per_step = 2 * (int64_t)c.ns * 4;

    if (dense && force != STAGED_CHUNKS && (few || L <= 64 || force != STAGED_AUTO)) {
        /* whole rows; segments when rows are few */
        int S = 1;
        if (few) {
            S = (int)((L + 7) / 8);
            if (S > 32) S = 32;
            if (S < 1) S = 1;
        }
        int SL = (int)((L + S - 1) / S);
        if (S > 1 && L % 4 == 0) SL = (SL + 3) / 4 * 4;
        S = (int)((L + SL - 1) / SL); /* every segment non-empty */
        /* rows per block: 64 at many rows (measured lead of the row
         * kernels at L = 49); with few rows, at most 128 threads and
         * blocks for every SM where the rows allow */
        int rmax = 64;
        if (S > 1) {
            rmax = 128 / S;
            /* at least 4 rows per block even where that leaves SMs idle:
             * each block copies and transposes the whole of B/C, so more
             * rows share that work (measured at batch 1, MV-T s3, rows per
             * block 1 / 2 / 3 / 4 / 5 / 8: 0.020 / 0.016 / 0.016 / 0.0156
             * / 0.017 / 0.018 ms; kernel 12.1 us at 2, 10.5 us at 4) */
            const int64_t per_sm = (rows + sm_count - 1) / sm_count;
            const int64_t want = per_sm > 4 ? per_sm : 4;
            if (want < rmax) rmax = (int)want;
        }
        if (rmax < 1) rmax = 1;
        if (rmax * S > MVRT_SCAN_STAGED_THREADS) rmax = MVRT_SCAN_STAGED_THREADS / S;
        /* lanes per row without segments, as in chunk mode (measured whole
         * rows at L = 49, one lane per row: 11 of 64 warps per SM active,
         * 7 cycles between issues) */
        int wlpr = 1;
        if (S == 1) {
            const int64_t rows_sm = (rows + sm_count - 1) / sm_count;
            if (c.ns >= 4 && rows_sm < 1024) wlpr = 2;
            if (lpr_force == 1 || (lpr_force == 2 && c.ns >= 4)) wlpr = lpr_force;
        }
        for (; rmax >= 1; rmax = rmax > 1 ? rmax / 2 : 0) {
            const int64_t ntl = (dpg + rmax - 1) / rmax;
            const int ch = (int)((dpg + ntl - 1) / ntl);
            const int threads = (ch * S * wlpr + warp - 1) / warp * warp;
            /* a shared row for every row index of the threads (lanes past
             * the block's rows run on their own spare row) */
            const int64_t rows_alloc = S > 1 ? ch : threads / wlpr;
            const int tens = staged_align16(rows_alloc * L * es);
            /* B/C rows copied raw in pieces where they have unit step
             * strides and aligned rows (then transposed in shared memory) */
            int bc_vec = 0;
            /* only with segments (few rows: measured at batch 1, the
             * element-wise staging took 43 % of the stall samples); with
             * many rows the transposition pass costs more than it saves
             * (measured at L = 49: 0.052 -> 0.060 ms at MV-B s4) */
            if (S > 1 && p.B.stride[3] == 1 && p.C.stride[3] == 1) {
                const int64_t qb[8] = {p.B.stride[0] * es, p.B.stride[1] * es, p.B.stride[2] * es,
                                       (int64_t)(uintptr_t)p.B.data, p.C.stride[0] * es, p.C.stride[1] * es,
                                       p.C.stride[2] * es, L * es};
                const int64_t qc[1] = {(int64_t)(uintptr_t)p.C.data};
                bc_vec = staged_piece(qb, 8, (int)es);
                const int vc = staged_piece(qc, 1, (int)es);
                if (vc < bc_vec) bc_vec = vc;
                if (bc_vec < 4) bc_vec = 0;
            }
            const size_t seg_bytes = S > 1 ? (size_t)S * ch * 2 * c.ns * 4 : 0;
            const size_t bc_raw_off = (size_t)ntens * tens + (size_t)staged_align16(L * bc_bytes_per_step + (int64_t)seg_bytes);
            const size_t smem = bc_raw_off + (bc_vec ? (size_t)staged_align16(2 * p.dstate * L * es) : 0);
            if (smem > smem_limit) continue;
            int64_t q[8];
            int nq = 0;
            for (int i = 0; i < nt; ++i) {
                q[nq++] = ts[i]->stride[0] * es;
                q[nq++] = (int64_t)(uintptr_t)ts[i]->data;
            }
            int vec = staged_piece(q, nq, (int)es);
            const int64_t q2[2] = {(int64_t)ch * L * es, dpg * L * es};
            const int v2 = staged_piece(q2, 2, (int)es);
            if (v2 < vec) vec = v2;
            c.mode = 1;
            c.lpr = wlpr;
            c.vec4 = (L % 4 == 0 && SL % 4 == 0) ? 1 : 0;
            c.S = S;
            c.SL = SL;
            c.ch = ch;
            c.ntiles = (int)ntl;
            c.threads = threads;
            c.vec = vec;
            c.smem = smem;
            c.sk.tens_bytes = tens;
            c.sk.stage_bytes = (int)smem;
            c.sk.srow = (int)L;
            c.sk.bc_vec = bc_vec;
            c.sk.bc_raw_off = (int)bc_raw_off;
            break;
        }
    }
    if (c.mode == 0 && force != STAGED_WHOLE && (!few || force != STAGED_AUTO)) {
        /* chunks: tiles of up to 256 rows; the most used lanes times the
         * share of SMs with a block (ties: larger tiles) */
        int best_nt = 0;
        double best = -1;
        /* lanes per row: more warps where rows per SM are few (latency of
         * the per-step chain; measured on an H100 with one lane per row:
         * 10 warps/SM at MV-T s3, issue slots 38 % busy). Measured f32,
         * lanes 1 / 2 / 4, ms: MV-T s3 0.079 / 0.065 / 0.072, MV-B s3
         * 0.132 / 0.103 / 0.123, MV-L s3 (190 rows/SM) 0.076 / 0.047 /
         * 0.059, LM 8x1536x2048x16 (93 rows/SM) 0.60 / 0.42 / 0.42 */
        const int64_t rows_sm = (rows + sm_count - 1) / sm_count;
        int lpr = 1;
        if (c.ns >= 4 && rows_sm < 1024) lpr = 2;
        if (c.ns >= 8 && rows_sm < 128) lpr = 4;
        if (lpr_force == 1 || (lpr_force == 2 && c.ns >= 4) || (lpr_force == 4 && c.ns >= 8)) lpr = lpr_force;
        int rcap = MVRT_SCAN_STAGED_MAX_THREADS / lpr;
        if (rcap > MVRT_SCAN_STAGED_THREADS) rcap = MVRT_SCAN_STAGED_THREADS;
        for (int ntl = (int)((dpg + rcap - 1) / rcap); ntl <= dpg && ntl <= 64; ++ntl) {
            const int ch = (int)((dpg + ntl - 1) / ntl);
            const int thr = (ch * lpr + warp - 1) / warp * warp;
            const double eff = (double)dpg * lpr / ((double)ntl * thr);
            const double cover = (double)(p.batch * p.groups * ntl) / sm_count;
            const double score = eff * (cover < 1 ? cover : 1);
            if (score > best + 0.005) {
                best = score;
                best_nt = ntl;
            }
            if (score > 0.99) break;
        }
        if (best_nt == 0) return c;
        const int ch = (int)((dpg + best_nt - 1) / best_nt);
        const int threads = (ch * lpr + warp - 1) / warp * warp;
        const int64_t blocks = p.batch * p.groups * best_nt;
        const int64_t per_sm = (blocks + sm_count - 1) / sm_count;
        for (int T = 32; T >= 16; T /= 2) {
            const int srow = T + 4;
            /* a shared row for every row index of the threads (see above) */
            const int tens = staged_align16((int64_t)(threads / lpr) * srow * es);
            const int stage = ntens * tens + (int)(T * bc_bytes_per_step);
            const size_t smem = 2 * (size_t)stage;
            /* two stages of every resident block within ~220 KiB, or T 16 */
            if (smem > smem_limit || (T > 16 && (size_t)(per_sm < 4 ? per_sm : 4) * (smem + 1024) > 220 * 1024)) continue;
            if (es == 2 && T * 2 * c.ns > MVRT_SCAN_STAGED_BCK * threads) continue;
            int64_t q[12];
            int nq = 0;
            for (int i = 0; i < nt; ++i) {
                q[nq++] = ts[i]->stride[0] * es;
                q[nq++] = ts[i]->stride[1] * es;
                q[nq++] = (int64_t)(uintptr_t)ts[i]->data;
            }
            int vec = staged_piece(q, nq, (int)es);
            const int64_t q2[3] = {L * es, (int64_t)T * es, (int64_t)srow * es};
            const int v2 = staged_piece(q2, 3, (int)es);
            if (v2 < vec) vec = v2;
            c.mode = 2;
            c.lpr = lpr;
            c.vec4 = 1;
            c.T = T;
            c.S = 1;
            c.SL = 0;
            c.ch = ch;
            c.ntiles = best_nt;
            c.threads = threads;
            c.vec = vec;
            c.smem = smem;
            c.sk.tens_bytes = tens;
            c.sk.stage_bytes = stage;
            c.sk.srow = srow;
            int lg = 0;
            while ((1 << lg) < T) ++lg;
            c.sk.T = T;
            c.sk.lgT = lg;
            int lp = 0;
            while ((1 << lp) * vec < T * es) ++lp;
            c.sk.lg_ppr = lp;
            break;
        }
    }
    if (c.mode == 0) return c;
    c.sk.k = make_chunked_kparams(p, c.ntiles, c.ch, c.mode == 2 ? c.T : (int)L, c.ns, 1);
    c.sk.S = c.S;
    c.sk.SL = c.SL;
    c.sk.vec = c.vec;
    return c;
}

template <typename F> static mvrt_gpu_error_t launch_staged(F fn, const staged_config &c, mvrt_gpu_stream_t s)
{
    return launch_scan_kernel(fn, c.sk, c.sk.k.nwork, c.threads, c.smem, s);
}

template <typename Tin, int NS>
static mvrt_gpu_error_t launch_fwd_staged_t(const staged_config &c, mvrt_gpu_stream_t s)
{
    if (c.mode == 2) {
        if constexpr (NS >= 8)
            if (c.lpr == 4) return launch_staged(scan_fwd_staged_kernel<Tin, NS, 2, 4>, c, s);
        if constexpr (NS >= 4)
            if (c.lpr == 2) return launch_staged(scan_fwd_staged_kernel<Tin, NS, 2, 2>, c, s);
        return launch_staged(scan_fwd_staged_kernel<Tin, NS, 2, 1>, c, s);
    }
    if constexpr (NS >= 4)
        if (c.lpr == 2) {
            if (c.vec4) return launch_staged(scan_fwd_staged_kernel<Tin, NS, 1, 2>, c, s);
            return launch_staged(scan_fwd_staged_kernel<Tin, NS, 0, 2>, c, s);
        }
    if (c.vec4) return launch_staged(scan_fwd_staged_kernel<Tin, NS, 1, 1>, c, s);
    return launch_staged(scan_fwd_staged_kernel<Tin, NS, 0, 1>, c, s);
}

template <typename Tin>
static mvrt_gpu_error_t launch_fwd_staged_typed(const staged_config &c, mvrt_gpu_stream_t s)
{
    switch (c.ns) {
    case 1: return launch_fwd_staged_t<Tin, 1>(c, s);
    case 2: return launch_fwd_staged_t<Tin, 2>(c, s);
    case 4: return launch_fwd_staged_t<Tin, 4>(c, s);
    case 8: return launch_fwd_staged_t<Tin, 8>(c, s);
    case 16: return launch_fwd_staged_t<Tin, 16>(c, s);
    default: return (mvrt_gpu_error_t)1;
    }
}

} /* namespace mvrt_scan_gpu */

#endif
