/* GPU kernel of multi-head self-attention (ops/common/mv_op_params.h),
 * compiled by nvcc and by clang as HIP through
 * backends/gpu_common/mv_gpu_launch.cu.
 *
 * Fused path (head_dim <= 64): one block of 64 threads per (batch, head,
 * tile of 64 queries), one query per thread (with few blocks: 16 queries
 * per block, 4 threads per query, see launch_attention). The query row (pre-scaled by
 * scale * log2 e, so the softmax uses exp2) and the output accumulator live
 * in registers (D floats each, D = head_dim rounded up to a multiple of 8, a
 * template parameter; the padding columns are zeros). Keys and values of the
 * (batch, head) stream through shared memory in tiles of 64 keys: each
 * thread scores 16 keys at a time (the K rows are read as 16-byte broadcasts),
 * then updates a running maximum, rescales its sum and accumulator once per
 * 16 keys and accumulates exp2(s - max) * V (online softmax, fp32, max
 * subtracted, so any L works with bounded shared memory). Q is loaded and
 * the output stored through shared memory (rows padded to D + 1 floats), so
 * global accesses are coalesced along head_dim. Nothing depends on the warp
 * width (only block barriers).
 *
 * head_dim > 64 (not used by MambaVision: its head_dim is 32..49) runs a
 * slower direct kernel: one thread per query, two passes over the keys from
 * global memory, the output row used as the accumulator. */
#ifndef MVRT_OPS_ATTENTION_GPU_CUH
#define MVRT_OPS_ATTENTION_GPU_CUH

#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"
#include "../common/gpu_mma_tf32.cuh"
#include "../common/gpu_mma16.cuh"
#include <math.h>
#include <stdint.h>
#if defined(MVRT_GPU_CUDA)
#include <cooperative_groups.h>
#endif

namespace mvrt_mv_gpu {

#define MVRT_ATT_TQ 64  /* queries per block = threads per block */
#define MVRT_ATT_TK 64  /* keys per shared-memory tile */
#define MVRT_ATT_SUB 16 /* keys scored at once in registers */
#define MVRT_ATT_LOG2E 1.4426950408889634f

template <int D, int KS>
__global__ void __launch_bounds__(MVRT_ATT_TQ) attention_kernel(mvrt_attention_params_t p, bool vec4)
{
    constexpr int QB = MVRT_ATT_TQ / KS; /* queries per block */
    /* K tile | V tile, or the (TQ, D + 1) staging of Q and of the output. */
    constexpr int KV = MVRT_ATT_TK * D;
    constexpr int STAGE = MVRT_ATT_TQ * (D + 1);
    constexpr int SM = 2 * KV > STAGE ? 2 * KV : STAGE;
    __shared__ __align__(16) float sm[SM];
    float *Ks = sm, *Vs = sm + KV;

    const int t = threadIdx.x;
    const int qi = t / KS, kl = t % KS; /* this thread's query, and its share of the keys */
    const int d = p.head_dim;
    const int64_t L = p.length;
    const int64_t C = (int64_t)p.heads * d, ld = 3 * C;
    const int h = blockIdx.y;
    const int64_t q0 = (int64_t)blockIdx.x * QB;
    const float qscale = p.scale * MVRT_ATT_LOG2E;

    for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z) {
        const float *base = p.qkv + b * L * ld + (int64_t)h * d;
        /* ---- Q tile -> registers */
        {
            /* QB * d <= QB * D elements, QB * D / 64 per thread, all loaded
             * before any is stored */
            constexpr int PERQ = QB * D / MVRT_ATT_TQ;
            constexpr int GQ = PERQ < 8 ? PERQ : 8;
#pragma unroll 1
            for (int c0 = 0; c0 < PERQ; c0 += GQ) {
                float qv[GQ];
#pragma unroll
                for (int u = 0; u < GQ; u++) {
                    const int idx = t + (c0 + u) * MVRT_ATT_TQ;
                    const int r = idx / d, k = idx - r * d;
                    qv[u] = (c0 + u < PERQ && idx < QB * d && q0 + r < L) ? base[(q0 + r) * ld + k] : 0.f;
                }
#pragma unroll
                for (int u = 0; u < GQ; u++) {
                    const int idx = t + (c0 + u) * MVRT_ATT_TQ;
                    const int r = idx / d, k = idx - r * d;
                    if (c0 + u < PERQ && idx < QB * d) sm[r * (D + 1) + k] = qv[u];
                }
            }
        }
        __syncthreads();
        float q[D], o[D];
#pragma unroll
        for (int k = 0; k < D; k++) {
            q[k] = k < d ? sm[qi * (D + 1) + k] * qscale : 0.f;
            o[k] = 0.f;
        }
        float m = -INFINITY, lsum = 0.f;
        __syncthreads();

        for (int64_t kt0 = 0; kt0 < L; kt0 += MVRT_ATT_TK) {
            /* ---- K, V tile (rows past L and columns past d are zeros) */
            /* Many loads in flight before any is stored: one (or a few) at
             * a time left a block of a small batch waiting on latency (at
             * batch 1 the whole K/V of a head is staged by few blocks). */
            if (vec4) {
                /* rows of d = 4*q floats, 16-byte aligned: D/4 float4 of K
                 * and of V per thread (zeros past d and past L) */
                constexpr int PER4 = MVRT_ATT_TK * (D / 4) / MVRT_ATT_TQ; /* = D / 4 */
                constexpr int G = PER4 < 6 ? PER4 : 6; /* float4 of K and of V in flight */
#pragma unroll 1
                for (int c0 = 0; c0 < PER4; c0 += G) {
                    float4 kv[G], vv[G];
#pragma unroll
                    for (int u = 0; u < G; u++) {
                        const int idx = t + (c0 + u) * MVRT_ATT_TQ;
                        const int j = idx / (D / 4), k4 = idx - j * (D / 4);
                        const bool in = c0 + u < PER4 && kt0 + j < L && 4 * k4 < d;
                        const float4 *row = reinterpret_cast<const float4 *>(base + (kt0 + j) * ld) + k4;
                        kv[u] = in ? row[C / 4] : make_float4(0.f, 0.f, 0.f, 0.f);
                        vv[u] = in ? row[2 * C / 4] : make_float4(0.f, 0.f, 0.f, 0.f);
                    }
#pragma unroll
                    for (int u = 0; u < G; u++) {
                        const int idx = t + (c0 + u) * MVRT_ATT_TQ;
                        if (c0 + u < PER4) {
                            reinterpret_cast<float4 *>(Ks)[idx] = kv[u];
                            reinterpret_cast<float4 *>(Vs)[idx] = vv[u];
                        }
                    }
                }
            } else {
                constexpr int PER = MVRT_ATT_TK * D / MVRT_ATT_TQ; /* = D, a multiple of 8 */
#pragma unroll 1
                for (int c0 = 0; c0 < PER; c0 += 8) {
                    float kv[8], vv[8];
#pragma unroll
                    for (int u = 0; u < 8; u++) {
                        const int idx = t + (c0 + u) * MVRT_ATT_TQ;
                        const int j = idx / D, k = idx - j * D;
                        const bool in = kt0 + j < L && k < d;
                        const float *row = base + (kt0 + j) * ld + k;
                        kv[u] = in ? row[C] : 0.f;
                        vv[u] = in ? row[2 * C] : 0.f;
                    }
#pragma unroll
                    for (int u = 0; u < 8; u++) {
                        const int idx = t + (c0 + u) * MVRT_ATT_TQ;
                        Ks[idx] = kv[u];
                        Vs[idx] = vv[u];
                    }
                }
            }
            __syncthreads();
            const int nk = (int)(L - kt0 < MVRT_ATT_TK ? L - kt0 : MVRT_ATT_TK);
            for (int sub = kl * MVRT_ATT_SUB; sub < nk; sub += MVRT_ATT_SUB * KS) {
                float s[MVRT_ATT_SUB];
                float mt = -INFINITY;
#pragma unroll
                for (int jj = 0; jj < MVRT_ATT_SUB; jj++) {
                    const float4 *kr = reinterpret_cast<const float4 *>(Ks + (sub + jj) * D);
                    float a0 = 0.f, a1 = 0.f;
#pragma unroll
                    for (int k4 = 0; k4 < D / 4; k4++) {
                        const float4 kv = kr[k4];
                        a0 = fmaf(q[4 * k4 + 0], kv.x, a0);
                        a1 = fmaf(q[4 * k4 + 1], kv.y, a1);
                        a0 = fmaf(q[4 * k4 + 2], kv.z, a0);
                        a1 = fmaf(q[4 * k4 + 3], kv.w, a1);
                    }
                    s[jj] = sub + jj < nk ? a0 + a1 : -INFINITY;
                    mt = fmaxf(mt, s[jj]);
                }
                /* mt is finite: key sub of this tile exists */
                const float mnew = fmaxf(m, mt);
                const float corr = exp2f(m - mnew); /* 0 on the first sub-tile (m = -inf) */
                m = mnew;
                lsum *= corr;
#pragma unroll
                for (int k = 0; k < D; k++) o[k] *= corr;
#pragma unroll
                for (int jj = 0; jj < MVRT_ATT_SUB; jj++) {
                    const float pj = exp2f(s[jj] - mnew); /* masked keys: exp2(-inf) = 0 */
                    lsum += pj;
                    const float4 *vr = reinterpret_cast<const float4 *>(Vs + (sub + jj) * D);
#pragma unroll
                    for (int k4 = 0; k4 < D / 4; k4++) {
                        const float4 vv = vr[k4];
                        o[4 * k4 + 0] = fmaf(pj, vv.x, o[4 * k4 + 0]);
                        o[4 * k4 + 1] = fmaf(pj, vv.y, o[4 * k4 + 1]);
                        o[4 * k4 + 2] = fmaf(pj, vv.z, o[4 * k4 + 2]);
                        o[4 * k4 + 3] = fmaf(pj, vv.w, o[4 * k4 + 3]);
                    }
                }
            }
            __syncthreads(); /* the next tile overwrites K, V */
        }

        /* ---- the KS partial softmaxes of a query (each over its own keys)
         * merged by a fixed butterfly: every lane ends with the same sums.
         * A lane that saw no key has m = -inf and weight 0; lane 0 always
         * has key 0, so the merged maximum is finite. */
#pragma unroll
        for (int x = 1; x < KS; x <<= 1) {
            const float mo = MVRT_SHFL_XOR(m, x, MVRT_WARP_SIZE);
            const float lo = MVRT_SHFL_XOR(lsum, x, MVRT_WARP_SIZE);
            const float mn = fmaxf(m, mo);
            const float c1 = m == -INFINITY ? 0.f : exp2f(m - mn);
            const float c2 = mo == -INFINITY ? 0.f : exp2f(mo - mn);
            lsum = lsum * c1 + lo * c2;
#pragma unroll
            for (int k = 0; k < D; k++) o[k] = o[k] * c1 + MVRT_SHFL_XOR(o[k], x, MVRT_WARP_SIZE) * c2;
            m = mn;
        }
        /* ---- output through shared memory, coalesced along head_dim */
        const float inv = 1.f / lsum;
#pragma unroll
        for (int k = 0; k < D; k++)
            if (k < d && kl == 0) sm[qi * (D + 1) + k] = o[k] * inv;
        __syncthreads();
        float *out = p.out + b * L * C + (int64_t)h * d;
        for (int idx = t; idx < QB * d; idx += MVRT_ATT_TQ) {
            const int r = idx / d, k = idx - r * d;
            if (q0 + r < L) out[(q0 + r) * C + k] = sm[r * (D + 1) + k];
        }
        __syncthreads(); /* the next batch element restages Q */
    }
}

/* ---- 16-bit tensor-core path (MVRT_MATH_BF16 / FP16: NVIDIA sm_80+; FP16 also sm_75) ----
 * One block of 4 warps per (batch, head, tile of 64 queries), 16 queries
 * per warp, flash-attention style: S = Q K^T and O += P V on mma.sync
 * m16n8k16 (bf16 or fp16 operands, the template's T16; fp32 accumulation),
 * the online softmax in fp32 registers. Q (pre-scaled by scale * log2 e;
 * |q scale| stays far inside fp16's range for LayerNorm'd inputs), K and V
 * are rounded to 16 bits while staged in shared memory, P (in [0, 1]) for the second
 * product; the row sums and the rescaling stay fp32. DP = head_dim rounded
 * up to 16 (zero columns). Rows of the staged tiles are padded by 8 values
 * so that the fragment loads of a warp hit 32 distinct banks; V is staged
 * transposed (Vt[d][key]) so that its fragments are 32-bit loads too.
 * Keys past L are zero in K and V and -inf in S. The fragment layouts are
 * those of the PTX ISA for mma.m16n8k16.row.col: lane = 4 g + c holds rows
 * g and g + 8, columns 2c and 2c + 1 (and + 8). Only compiled for NVIDIA
 * devices of compute capability 7.5 or more (gpu_mma16.cuh: sm_75 has
 * fp16 mma.sync m16n8k8 and ldmatrix, no bf16 products and no cp.async);
 * launch_attention uses it only where the context says the device has
 * the dtype's tensor cores (mma16: sm_80+, mma_f16: sm_75+). */
#define MVRT_ATT_MMA_TQ 64  /* queries per block: 4 warps of 16 */
#define MVRT_ATT_MMA_TK 64  /* keys per staged tile */
#if defined(MVRT_MMA16_DEVICE)
#define MVRT_ATT_MMA_DEVICE 1
#endif

#ifdef MVRT_ATT_MMA_DEVICE
/* Four consecutive columns [4 k4, 4 k4 + 4) of one row, zeros past d. */
static __device__ __forceinline__ float4 att_load4(const float *row, int k4, int d, bool vec4)
{
    if (vec4) return 4 * k4 < d ? reinterpret_cast<const float4 *>(row)[k4] : make_float4(0.f, 0.f, 0.f, 0.f);
    const int k = 4 * k4;
    return make_float4(k < d ? row[k] : 0.f, k + 1 < d ? row[k + 1] : 0.f, k + 2 < d ? row[k + 2] : 0.f,
                       k + 3 < d ? row[k + 3] : 0.f);
}

/* A tile of rows [row0, row0 + 128 PER / C4) of C4 float4 chunks each (row
 * r at src + r ld) into the registers of the 128 threads of an mma kernel,
 * all loads in flight before any use: v[u] of thread t is chunk idx = t +
 * 128 u (row idx / C4, chunk idx % C4); zeros for rows at or past L. */
template <int PER, int C4>
static __device__ __forceinline__ void att_load_tile4(float4 (&v)[PER], const float *src, int64_t row0, int64_t L,
                                                      int64_t ld, int t, int d, bool vec4)
{
#pragma unroll
    for (int u = 0; u < PER; u++) {
        const int idx = t + u * 128, r = idx / C4, k4 = idx - r * C4;
        v[u] = row0 + r < L ? att_load4(src + (row0 + r) * ld, k4, d, vec4) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
}

/* One online-softmax step of the mma kernels over NB blocks of 8 keys
 * (keys key0 + 8 nb + 2 c, + 1 of the lane's rows g and g + 8, in the mma
 * accumulator layout): keys >= L masked to -inf, the running maxima m0/m1
 * updated across the quad of lanes that shares a row, sc replaced by
 * exp2(scale s - max) (scale > 0; m0/m1 and max in scaled units; 1 where
 * the scores arrive scaled: then s - max exactly), the lane's partial row
 * sums l0/l1 and the output
 * accumulator o rescaled. Key key0 must be < L (the new maxima are then
 * finite). */
template <int NB, int DJ>
static __device__ __forceinline__ void att_softmax_step(float (&sc)[NB][4], int64_t key0, int c, int64_t L,
                                                        float &m0, float &m1, float &l0, float &l1,
                                                        float (&o)[DJ][4], float scale = 1.f)
{
    float mx0 = -INFINITY, mx1 = -INFINITY;
    if (L - key0 < NB * 8) { /* the last tile: 32-bit compares of the keys left */
        const int left = (int)(L - key0);
#pragma unroll
        for (int nb = 0; nb < NB; nb++) {
            const int key = nb * 8 + 2 * c;
            if (key >= left) sc[nb][0] = sc[nb][2] = -INFINITY;
            if (key + 1 >= left) sc[nb][1] = sc[nb][3] = -INFINITY;
        }
    }
#pragma unroll
    for (int nb = 0; nb < NB; nb++) {
        mx0 = fmaxf(mx0, fmaxf(sc[nb][0], sc[nb][1]));
        mx1 = fmaxf(mx1, fmaxf(sc[nb][2], sc[nb][3]));
    }
#pragma unroll
    for (int x = 1; x < 4; x <<= 1) {
        mx0 = fmaxf(mx0, MVRT_SHFL_XOR(mx0, x, MVRT_WARP_SIZE));
        mx1 = fmaxf(mx1, MVRT_SHFL_XOR(mx1, x, MVRT_WARP_SIZE));
    }
    const float n0 = fmaxf(m0, mx0 * scale), n1 = fmaxf(m1, mx1 * scale); /* scale > 0 */
    const float corr0 = mvrt_fast_exp2(m0 - n0), corr1 = mvrt_fast_exp2(m1 - n1); /* 0 the first time (m = -inf) */
    m0 = n0; m1 = n1;
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int nb = 0; nb < NB; nb++) {
        sc[nb][0] = mvrt_fast_exp2(fmaf(sc[nb][0], scale, -n0));
        sc[nb][1] = mvrt_fast_exp2(fmaf(sc[nb][1], scale, -n0));
        sc[nb][2] = mvrt_fast_exp2(fmaf(sc[nb][2], scale, -n1));
        sc[nb][3] = mvrt_fast_exp2(fmaf(sc[nb][3], scale, -n1));
        s0 += sc[nb][0] + sc[nb][1];
        s1 += sc[nb][2] + sc[nb][3];
    }
    l0 = l0 * corr0 + s0; /* this lane's share; the quad is summed at the end */
    l1 = l1 * corr1 + s1;
#pragma unroll
    for (int j = 0; j < DJ; j++) {
        o[j][0] *= corr0; o[j][1] *= corr0; o[j][2] *= corr1; o[j][3] *= corr1;
    }
}

/* A lane's shares of the row sums of rows g (l0) and g + 8 (l1) summed
 * over the quad of lanes that shares those rows (every lane ends with the
 * sums; the whole warp takes part). */
static __device__ __forceinline__ void att_quad_sums(float &l0, float &l1)
{
#pragma unroll
    for (int x = 1; x < 4; x <<= 1) {
        l0 += MVRT_SHFL_XOR(l0, x, MVRT_WARP_SIZE);
        l1 += MVRT_SHFL_XOR(l1, x, MVRT_WARP_SIZE);
    }
}
/* P's accumulators for keys [16 kc, 16 kc + 16) (score blocks 2 kc and
 * 2 kc + 1) as the A fragment of O += P V: the m16n8k16 C layout of two
 * n8 blocks is the A layout of one k16 block. */
template <int T16, int NB>
static __device__ __forceinline__ void att_p_fragment(uint32_t (&pa)[4], const float (&sc)[NB][4], int kc)
{
    pa[0] = mvrt_pack16x2<T16>(sc[2 * kc][0], sc[2 * kc][1]);
    pa[1] = mvrt_pack16x2<T16>(sc[2 * kc][2], sc[2 * kc][3]);
    pa[2] = mvrt_pack16x2<T16>(sc[2 * kc + 1][0], sc[2 * kc + 1][1]);
    pa[3] = mvrt_pack16x2<T16>(sc[2 * kc + 1][2], sc[2 * kc + 1][3]);
}

/* The end of the mma kernels: the quad's row sums added, rows r0 = the
 * warp's first query + g and r1 = r0 + 8 normalized and stored (columns
 * 8 j + 2 c, + 1 below d; rows below L). */
template <int DJ>
static __device__ __forceinline__ void att_store_rows(const float (&o)[DJ][4], float l0, float l1, bool warp_rows,
                                                      int64_t r0, int c, int d, int64_t L, int64_t C, float *out)
{
    att_quad_sums(l0, l1);
    if (!warp_rows) return;
    const float i0 = 1.f / l0, i1 = 1.f / l1;
    const int64_t r1 = r0 + 8;
#pragma unroll
    for (int j = 0; j < DJ; j++) {
        const int k = j * 8 + 2 * c;
        if (r0 < L) {
            if (k < d) out[r0 * C + k] = o[j][0] * i0;
            if (k + 1 < d) out[r0 * C + k + 1] = o[j][1] * i0;
        }
        if (r1 < L) {
            if (k < d) out[r1 * C + k] = o[j][2] * i1;
            if (k + 1 < d) out[r1 * C + k + 1] = o[j][3] * i1;
        }
    }
}
#endif

template <int DP, int T16>
__global__ void __launch_bounds__(128) attention_mma_kernel(mvrt_attention_params_t p, bool vec4)
{
#ifdef MVRT_ATT_MMA_DEVICE
    constexpr int TQ = MVRT_ATT_MMA_TQ, TK = MVRT_ATT_MMA_TK;
    constexpr int QS = DP + 8, KST = DP + 8, VST = TK + 8; /* row strides in 16-bit values */
    constexpr int C4 = DP / 4;                             /* float4 chunks of a row */
    __shared__ __align__(16) uint32_t Qs[TQ * QS / 2];
    __shared__ __align__(16) uint32_t Ks[TK * KST / 2];
    __shared__ __align__(16) uint16_t Vt[DP * VST];

    const int t = threadIdx.x, warp = t >> 5, lane = t & 31, g = lane >> 2, c = lane & 3;
    const int d = p.head_dim;
    const int64_t L = p.length;
    const int64_t C = (int64_t)p.heads * d, ld = 3 * C;
    const int h = blockIdx.y;
    const int64_t q0 = (int64_t)blockIdx.x * TQ;
    const float qscale = p.scale * MVRT_ATT_LOG2E;
    const bool warp_rows = q0 + warp * 16 < L; /* this warp has a query */

    for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z) {
        const float *base = p.qkv + b * L * ld + (int64_t)h * d;
        /* ---- Q tile (scaled) -> 16 bits in shared memory -> A fragments */
        {
            constexpr int PER = TQ * C4 / 128;
            float4 v[PER];
            att_load_tile4<PER, C4>(v, base, q0, L, ld, t, d, vec4);
#pragma unroll
            for (int u = 0; u < PER; u++) {
                const int idx = t + u * 128, r = idx / C4, k4 = idx - r * C4;
                Qs[(r * QS) / 2 + 2 * k4] = mvrt_pack16x2<T16>(v[u].x * qscale, v[u].y * qscale);
                Qs[(r * QS) / 2 + 2 * k4 + 1] = mvrt_pack16x2<T16>(v[u].z * qscale, v[u].w * qscale);
            }
        }
        __syncthreads();
        uint32_t qa[DP / 16][4];
#pragma unroll
        for (int kk = 0; kk < DP / 16; kk++) {
            const uint32_t *r0 = Qs + ((warp * 16 + g) * QS) / 2 + kk * 8 + c;
            const uint32_t *r1 = r0 + (8 * QS) / 2;
            qa[kk][0] = r0[0]; qa[kk][1] = r1[0]; qa[kk][2] = r0[4]; qa[kk][3] = r1[4];
        }
        float o[DP / 8][4];
#pragma unroll
        for (int j = 0; j < DP / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
        float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f; /* rows g and g + 8 */

        for (int64_t kt0 = 0; kt0 < L; kt0 += TK) {
            __syncthreads(); /* the previous tile (and Q's staging) is consumed */
            {
                /* K: TK rows of C4 float4; V: TK / 2 pairs of rows, each
                 * thread's loads all in flight before any store */
                constexpr int PK = TK * C4 / 128, PV = (TK / 2) * C4 / 128;
                float4 kv[PK], va[PV], vb[PV];
                att_load_tile4<PK, C4>(kv, base + C, kt0, L, ld, t, d, vec4);
#pragma unroll
                for (int u = 0; u < PV; u++) {
                    const int idx = t + u * 128, jp = idx / C4, k4 = idx - jp * C4;
                    const int64_t j = kt0 + 2 * jp;
                    va[u] = j < L ? att_load4(base + j * ld + 2 * C, k4, d, vec4) : make_float4(0.f, 0.f, 0.f, 0.f);
                    vb[u] = j + 1 < L ? att_load4(base + (j + 1) * ld + 2 * C, k4, d, vec4)
                                      : make_float4(0.f, 0.f, 0.f, 0.f);
                }
#pragma unroll
                for (int u = 0; u < PK; u++) {
                    const int idx = t + u * 128, j = idx / C4, k4 = idx - j * C4;
                    Ks[(j * KST) / 2 + 2 * k4] = mvrt_pack16x2<T16>(kv[u].x, kv[u].y);
                    Ks[(j * KST) / 2 + 2 * k4 + 1] = mvrt_pack16x2<T16>(kv[u].z, kv[u].w);
                }
                uint32_t *Vt32 = reinterpret_cast<uint32_t *>(Vt);
#pragma unroll
                for (int u = 0; u < PV; u++) {
                    const int idx = t + u * 128, jp = idx / C4, k4 = idx - jp * C4;
                    const int k = 4 * k4;
                    Vt32[((k + 0) * VST) / 2 + jp] = mvrt_pack16x2<T16>(va[u].x, vb[u].x);
                    Vt32[((k + 1) * VST) / 2 + jp] = mvrt_pack16x2<T16>(va[u].y, vb[u].y);
                    Vt32[((k + 2) * VST) / 2 + jp] = mvrt_pack16x2<T16>(va[u].z, vb[u].z);
                    Vt32[((k + 3) * VST) / 2 + jp] = mvrt_pack16x2<T16>(va[u].w, vb[u].w);
                }
            }
            __syncthreads();
            if (!warp_rows) continue;
            /* ---- S = Q K^T for 16 queries x TK keys */
            float sc[TK / 8][4];
#pragma unroll
            for (int nb = 0; nb < TK / 8; nb++) {
                sc[nb][0] = sc[nb][1] = sc[nb][2] = sc[nb][3] = 0.f;
                const uint32_t *kr = Ks + ((nb * 8 + g) * KST) / 2 + c;
#pragma unroll
                for (int kk = 0; kk < DP / 16; kk++) mvrt_mma16816<T16>(sc[nb], qa[kk], kr[kk * 8], kr[kk * 8 + 4]);
            }
            /* ---- online softmax, rows g and g + 8 (key kt0 < L exists) */
            att_softmax_step(sc, kt0, c, L, m0, m1, l0, l1, o);
            /* ---- O += P V: P's accumulator layout is the A fragment of keys 16 kc.. */
            const uint32_t *Vt32 = reinterpret_cast<const uint32_t *>(Vt);
#pragma unroll
            for (int kc = 0; kc < TK / 16; kc++) {
                if (kt0 + kc * 16 >= L) break; /* whole chunk past L: P is 0 there */
                uint32_t pa[4];
                att_p_fragment<T16>(pa, sc, kc);
#pragma unroll
                for (int j = 0; j < DP / 8; j++) {
                    const uint32_t *vr = Vt32 + ((j * 8 + g) * VST) / 2 + kc * 8 + c;
                    mvrt_mma16816<T16>(o[j], pa, vr[0], vr[4]);
                }
            }
        }
        /* ---- normalize and store rows g, g + 8 of this warp */
        att_store_rows(o, l0, l1, warp_rows, q0 + warp * 16 + g, c, d, L, C, p.out + b * L * C + (int64_t)h * d);
        __syncthreads(); /* the next batch element restages Q */
    }
#else
    (void)p; (void)vec4;
    mvrt_gpu_arch_missing();
#endif
}

/* rows of a head staged whole for mma: L rounded up to the k16 blocks */
static __host__ __device__ inline int64_t att_staged_rows(int64_t L) { return (L + 15) / 16 * 16; }

/* ---- 16-bit in, 16-bit out: the graph's 16-bit attention (NVIDIA sm_80+ code; fp16 also sm_75) ----
 * qkv16 and out16 set: q, k and v arrive as the 16-bit values the qkv
 * linear stored, and the output leaves as 16-bit values for the proj
 * linear, so no fp32 copy of either is made and no kernel converts K or V
 * while it multiplies (what bound attention_mma_staged_kernel: SM 49 %,
 * memory 38 %). One block takes 16 W queries of one (batch, head) and
 * copies that head's whole K and V (L <= MVRT_ATT16_MAXL keys) into shared
 * memory as they are (16 bytes at a time where head_dim % 8 == 0 and the
 * rows are 16-byte aligned, by cp.async on sm_80+ and by plain loads on
 * sm_75; element by element otherwise), half
 * the bytes of the fp32 staging. The warps then run the flash loop of
 * attention_mma_kernel over 64 keys at a time: K fragments by ldmatrix,
 * V fragments by ldmatrix.trans (no transposed copy), S = Q K^T and
 * O += P V on mma.sync m16n8k16 with fp32 accumulation, the softmax in fp32
 * on S times scale * log2 e (the scores are scaled in fp32, not q in 16
 * bits). Q's A fragments come straight from global memory. Rows are
 * DP + 8 values apart, so the 8 rows of an ldmatrix matrix hit 8 distinct
 * 16-byte bank groups for DP 16..64. Columns [d, DP) and rows [L, 16
 * ceil(L / 16)) of K and V are zeroed: the products read them. Each output
 * is rounded to 16 bits once, after the normalization. */
#define MVRT_ATT16_MAXL 256 /* longest sequence staged whole */
#define MVRT_ATT16_MAXW 8   /* warps per block at most */
/* the dynamic shared memory of attention_io16_kernel: K and V of L keys,
 * rows of head_dim rounded up to 16, plus 8 values */
static inline size_t att16_smem_dp(int head_dim, int64_t L)
{
    const int dp = (head_dim + 15) / 16 * 16;
    return (size_t)att_staged_rows(L) * 2u * (size_t)(dp + 8) * sizeof(uint16_t);
}
/* Whether the context's code has the tensor-core kernels of p's math:
 * mma16 (sm_80+: bf16 and fp16), mma_f16 (sm_75+: fp16). */
static inline bool attention_mma_math(const mvrt_attention_params_t &p, bool mma16, bool mma_f16)
{
    return p.math == MVRT_MATH_FP16 ? mma_f16 || mma16 : p.math == MVRT_MATH_BF16 && mma16;
}
/* The forms attention_io16_kernel serves: the math's tensor cores, and
 * the whole K and V within smem_limit, the shared memory a block may opt
 * in to (64 KB on sm_75: head_dim 64 reaches 224 keys there). */
static inline bool attention_io16_takes(const mvrt_attention_params_t &p, bool mma16, bool mma_f16,
                                        size_t smem_limit)
{
    return attention_mma_math(p, mma16, mma_f16) && p.qkv16 && p.out16 && p.head_dim <= 64 &&
           p.length <= MVRT_ATT16_MAXL && p.heads <= 65535 && att16_smem_dp(p.head_dim, p.length) <= smem_limit;
}


/* vec8: head_dim % 8 == 0 and qkv 16-byte aligned (then every K and V row
 * piece is); pair: head_dim even and qkv, out 4-byte aligned. */
template <int DP, int T16>
__global__ void __launch_bounds__(32 * MVRT_ATT16_MAXW, 2)
    attention_io16_kernel(mvrt_attention_params_t p, bool vec8, bool pair)
{
#ifdef MVRT_ATT_MMA_DEVICE
    constexpr int RS = DP + 8, NJ = DP / 8;
    extern __shared__ __align__(16) uint16_t att16_buf[];
    const int d = p.head_dim, DJ = (d + 7) / 8;
    const int64_t L = p.length, LR = att_staged_rows(L);
    uint16_t *Ksm = att16_buf, *Vsm = att16_buf + LR * RS;
    const int64_t C = (int64_t)p.heads * d, ld = 3 * C;
    const int t = threadIdx.x, nthreads = blockDim.x, warp = t >> 5, lane = t & 31, g = lane >> 2, c = lane & 3;
    const int h = blockIdx.y;
    const int64_t q0 = (int64_t)blockIdx.x * (nthreads / 2) + warp * 16; /* the warp's first query */
    const int64_t r0 = q0 + g;
    const float qscale = p.scale * MVRT_ATT_LOG2E;
    /* ldmatrix row addresses of this lane (matrix mi = lane / 8, row mr):
     * K: keys 8 (mi / 2) + mr, columns 8 (mi % 2) -> b0, b1 of two key blocks;
     * V: keys 8 (mi % 2) + mr, columns 8 (mi / 2) -> b0, b1 of two column blocks */
    const int mi = lane >> 3, mr = lane & 7;
    const uint32_t k_lane = (uint32_t)__cvta_generic_to_shared(Ksm + (8 * (mi >> 1) + mr) * RS + 8 * (mi & 1));
    const uint32_t v_lane = (uint32_t)__cvta_generic_to_shared(Vsm + (8 * (mi & 1) + mr) * RS + 8 * (mi >> 1));

    for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z) {
        const uint16_t *base = reinterpret_cast<const uint16_t *>(p.qkv) + b * L * ld + (int64_t)h * d;
        /* ---- K and V of this head -> shared memory, all copies in
         * flight at once (one commit group per 64-key tile, the warps
         * starting on the first while the others land, measured slower:
         * 0.171 -> 0.194 ms per MambaVision-T stage-3 call, 122 registers
         * and a barrier per tile) */
        if (vec8) {
            /* every 16-byte piece of the staged rows [0, LR) x [0, DP) in one
             * pass: a copy where it holds K or V (rows below L, columns below
             * d, a multiple of 8 here), else zeros, which the products read.
             * 32-bit indices over a compile-time row width: the 64-bit
             * divisions by d / 8 this loop had were a third of the kernel's
             * instructions (ncu, MambaVision-B's stage 3, session 64). */
            constexpr int CP = DP / 8;
            const int C8 = d / 8, n = (int)LR * CP;
            const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#ifdef MVRT_MMA16_BF16_DEVICE /* sm_80+: cp.async */
            for (int idx = t; idx < n; idx += nthreads) {
                const int r = idx / CP, k8 = idx - r * CP;
                uint16_t *kd = Ksm + r * RS + 8 * k8, *vd = Vsm + r * RS + 8 * k8;
                if (r < L && k8 < C8) {
                    const uint16_t *src = base + (int64_t)r * ld + 8 * k8;
                    const uint32_t sk = (uint32_t)__cvta_generic_to_shared(kd);
                    const uint32_t sv = (uint32_t)__cvta_generic_to_shared(vd);
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sk), "l"(src + C) : "memory");
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sv), "l"(src + 2 * C) : "memory");
                } else {
                    *reinterpret_cast<uint4 *>(kd) = zero;
                    *reinterpret_cast<uint4 *>(vd) = zero;
                }
            }
            asm volatile("cp.async.commit_group;\n" ::: "memory");
#else /* sm_75: 16-byte loads, 4 of K and 4 of V in flight per thread before any store */
            constexpr int G = 4;
            for (int i0 = t; i0 < n; i0 += G * nthreads) {
                uint4 kv[G], vv[G];
#pragma unroll
                for (int u = 0; u < G; u++) {
                    const int idx = i0 + u * nthreads, r = idx / CP, k8 = idx - r * CP;
                    kv[u] = vv[u] = zero;
                    if (idx < n && r < L && k8 < C8) {
                        const uint4 *src = reinterpret_cast<const uint4 *>(base + (int64_t)r * ld + 8 * k8);
                        kv[u] = src[C / 8];
                        vv[u] = src[2 * C / 8];
                    }
                }
#pragma unroll
                for (int u = 0; u < G; u++) {
                    const int idx = i0 + u * nthreads, r = idx / CP, k8 = idx - r * CP;
                    if (idx < n) {
                        *reinterpret_cast<uint4 *>(Ksm + r * RS + 8 * k8) = kv[u];
                        *reinterpret_cast<uint4 *>(Vsm + r * RS + 8 * k8) = vv[u];
                    }
                }
            }
#endif
        } else {
            /* element by element (odd head_dim, unaligned heads): G loads
             * of K and of V in flight per thread before any is stored */
            constexpr int G = 8;
            const int n = (int)L * d;
            for (int i0 = t; i0 < n; i0 += G * nthreads) {
                uint16_t kv[G], vv[G];
                int at[G];
#pragma unroll
                for (int u = 0; u < G; u++) {
                    const int idx = i0 + u * nthreads, r = idx / d, k = idx - r * d;
                    at[u] = r * RS + k;
                    kv[u] = idx < n ? base[(int64_t)r * ld + C + k] : (uint16_t)0;
                    vv[u] = idx < n ? base[(int64_t)r * ld + 2 * C + k] : (uint16_t)0;
                }
#pragma unroll
                for (int u = 0; u < G; u++) {
                    if (i0 + u * nthreads < n) {
                        Ksm[at[u]] = kv[u];
                        Vsm[at[u]] = vv[u];
                    }
                }
            }
            /* zeros that the products read where no copy writes (disjoint from the copies) */
            for (int idx = t; idx < (int)LR * (DP - d); idx += nthreads) {
                const int r = idx / (DP - d), k = d + (idx - r * (DP - d));
                Ksm[r * RS + k] = 0;
                Vsm[r * RS + k] = 0;
            }
            for (int idx = t; idx < (int)(LR - L) * d; idx += nthreads) {
                const int r = (int)L + idx / d, k = idx % d;
                Ksm[r * RS + k] = 0;
                Vsm[r * RS + k] = 0;
            }
        }
        /* ---- Q: this lane's A fragments (rows r0, r0 + 8), from global */
        uint32_t qa[DP / 16][4];
        const uint16_t *qr0 = base + r0 * ld, *qr1 = base + (r0 + 8) * ld;
#pragma unroll
        for (int kk = 0; kk < DP / 16; kk++) {
#pragma unroll
            for (int hi = 0; hi < 2; hi++) { /* columns 16 kk + 2 c (+ 8 for hi) */
                const int k = kk * 16 + 2 * c + 8 * hi;
                qa[kk][2 * hi] = r0 < L ? mvrt_load_pair16(qr0, k, d, pair) : 0u;
                qa[kk][2 * hi + 1] = r0 + 8 < L ? mvrt_load_pair16(qr1, k, d, pair) : 0u;
            }
        }
#ifdef MVRT_MMA16_BF16_DEVICE
        if (vec8) asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
        __syncthreads();

        if (q0 < L) { /* warp-uniform */
            float o[NJ][4];
#pragma unroll
            for (int j = 0; j < NJ; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
            float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
            for (int64_t kt0 = 0; kt0 < L; kt0 += 64) {
                /* ---- S = Q K^T for 16 queries x 64 keys, pairs of 8-key
                 * blocks (a pair starting at or past L skipped: masked) */
                float sc[8][4];
                const uint32_t k_tile = k_lane + (uint32_t)(kt0 * RS * 2);
#pragma unroll
                for (int np = 0; np < 4; np++) {
#pragma unroll
                    for (int u = 0; u < 4; u++) sc[2 * np][u] = sc[2 * np + 1][u] = 0.f;
                    if (kt0 + np * 16 >= L) continue;
#pragma unroll
                    for (int kk = 0; kk < DP / 16; kk++) {
                        uint32_t kb[4];
                        mvrt_ldsm4(kb, k_tile + (uint32_t)((np * 16 * RS + kk * 16) * 2));
                        mvrt_mma16816<T16>(sc[2 * np], qa[kk], kb[0], kb[1]);
                        mvrt_mma16816<T16>(sc[2 * np + 1], qa[kk], kb[2], kb[3]);
                    }
                }
                /* the scale enters the exponent's FMA (one instruction a score
                 * fewer); a last tile of few keys exponentiates only its
                 * 16-key blocks (L 196: 4 keys in the fourth tile, where all
                 * 64 were a quarter of the softmax's work) */
                const int64_t left = L - kt0;
                if (left <= 16)
                    att_softmax_step(reinterpret_cast<float(&)[2][4]>(sc), kt0, c, L, m0, m1, l0, l1, o, qscale);
                else if (left <= 32)
                    att_softmax_step(reinterpret_cast<float(&)[4][4]>(sc), kt0, c, L, m0, m1, l0, l1, o, qscale);
                else if (left <= 48)
                    att_softmax_step(reinterpret_cast<float(&)[6][4]>(sc), kt0, c, L, m0, m1, l0, l1, o, qscale);
                else
                    att_softmax_step(sc, kt0, c, L, m0, m1, l0, l1, o, qscale);
                /* ---- O += P V over the chunks of 16 keys below L */
                const uint32_t v_tile = v_lane + (uint32_t)(kt0 * RS * 2);
#pragma unroll
                for (int kc = 0; kc < 4; kc++) {
                    if (kt0 + kc * 16 >= L) break;
                    uint32_t pa[4];
                    att_p_fragment<T16>(pa, sc, kc);
#pragma unroll
                    for (int jp = 0; jp < NJ / 2; jp++) {
                        if (2 * jp >= DJ) break;
                        uint32_t vb[4];
                        mvrt_ldsm4_trans(vb, v_tile + (uint32_t)((kc * 16 * RS + jp * 16) * 2));
                        mvrt_mma16816<T16>(o[2 * jp], pa, vb[0], vb[1]);
                        mvrt_mma16816<T16>(o[2 * jp + 1], pa, vb[2], vb[3]);
                    }
                }
            }
            /* ---- the quad's row sums, then each output rounded once */
            att_quad_sums(l0, l1);
            const float i0 = 1.f / l0, i1 = 1.f / l1;
            uint16_t *out = reinterpret_cast<uint16_t *>(p.out) + b * L * C + (int64_t)h * d;
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int k = j * 8 + 2 * c;
                if (r0 < L) mvrt_store_pair16<T16>(out + r0 * C, k, d, pair, o[j][0] * i0, o[j][1] * i0);
                if (r0 + 8 < L) mvrt_store_pair16<T16>(out + (r0 + 8) * C, k, d, pair, o[j][2] * i1, o[j][3] * i1);
            }
        }
        __syncthreads(); /* the next batch element restages K and V */
    }
#else
    (void)p; (void)vec8; (void)pair;
    mvrt_gpu_arch_missing();
#endif
}

#if defined(MVRT_GPU_CUDA)
/* Queues attention_io16_kernel<DP, T16>, opting in to more than 48 KB of
 * shared memory only where this sequence needs it (op-by-op runs then pay
 * no attribute call at MambaVision's d 40 windows). */
template <int DP, int T16>
static cudaError_t launch_attention_io16_dp(const mvrt_attention_params_t &p, size_t smem_limit, cudaStream_t s)
{
    void (*kernel)(mvrt_attention_params_t, bool, bool) = attention_io16_kernel<DP, T16>;
    const size_t smem = att16_smem_dp(DP, p.length);
    if (smem > 48u * 1024u) {
        /* the most any length needs, within the block limit (attention_io16_takes: smem <= smem_limit) */
        const size_t most = att16_smem_dp(DP, MVRT_ATT16_MAXL);
        const cudaError_t opt_in = mvrt_gpu_func_set_max_dyn_smem(kernel, (int)(most < smem_limit ? most : smem_limit));
        if (opt_in != cudaSuccess) return opt_in;
    }
    const int64_t q16 = (p.length + 15) / 16;                              /* 16-query groups */
    const int64_t blocks = (q16 + MVRT_ATT16_MAXW - 1) / MVRT_ATT16_MAXW; /* per (batch, head) */
    const int warps = (int)((q16 + blocks - 1) / blocks);                  /* balanced */
    const dim3 grid((unsigned)blocks, (unsigned)p.heads, (unsigned)(p.batch < 65535 ? p.batch : 65535));
    const uintptr_t qa = (uintptr_t)p.qkv, oa = (uintptr_t)p.out;
    const bool vec8 = p.head_dim % 8 == 0 && (qa & 15u) == 0;
    const bool pair = p.head_dim % 2 == 0 && (qa & 3u) == 0 && (oa & 3u) == 0;
    kernel<<<grid, 32 * warps, smem, s>>>(p, vec8, pair);
    return cudaGetLastError();
}
template <int T16>
static cudaError_t launch_attention_io16(const mvrt_attention_params_t &p, size_t smem_limit, cudaStream_t s)
{
    switch ((p.head_dim + 15) / 16) {
    case 1: return launch_attention_io16_dp<16, T16>(p, smem_limit, s);
    case 2: return launch_attention_io16_dp<32, T16>(p, smem_limit, s);
    case 3: return launch_attention_io16_dp<48, T16>(p, smem_limit, s);
    default: return launch_attention_io16_dp<64, T16>(p, smem_limit, s);
    }
}
#endif

/* ---- fp32 tensor-core path (MVRT_MATH_FP32 / FAST, NVIDIA sm_80+) ----
 * The same flash-attention structure as attention_mma_kernel (4 warps of 16
 * queries per block of 64, key tiles of 64, online softmax in fp32
 * registers), with both products on mma.sync m16n8k8 TF32 as 3xTF32: every
 * operand x is split into big = tf32(x) and small = tf32(x - big), and
 * a.b is accumulated as small_a big_b + big_a small_b + big_a big_b in fp32,
 * which keeps about fp32's accuracy (the dropped small_a small_b term is
 * ~2^-22 relative). Q, K and V are staged as fp32 rows of DP + 4 floats
 * (DP = head_dim rounded up to 8; the stride is 4 mod 8 words, so the
 * fragment loads of a warp hit 32 distinct banks) and split when loaded
 * into fragments; Q's staging reuses K's buffer. For O += P V the keys of
 * each block of 8 are taken in the order 0,2,4,6,1,3,5,7: then the score
 * accumulator a lane holds (keys 2c, 2c + 1 of rows g, g + 8) is exactly
 * its A fragment, and the lane loads V rows 2c and 2c + 1 for its B
 * fragment (the sum over keys does not depend on their order). Fragment
 * layouts of the PTX ISA for mma.m16n8k8.row.col tf32: lane = 4 g + c
 * holds A (g, c), (g + 8, c), (g, c + 4), (g + 8, c + 4); B (k = c, n = g),
 * (c + 4, g); C as in m16n8k16. */
#define MVRT_ATT_TF_TQ 64 /* queries per block: 4 warps of 16 */
#define MVRT_ATT_TF_TK 64 /* keys per staged tile */

/* Key splits (R > 1, NVIDIA sm_90+): at small batch the grid has few blocks
 * (MambaVision-T stage 3 at batch 1: 4 query tiles x 8 heads = 32), each
 * walking all the keys (21 us per op on an H200). Then the R blocks of a
 * cluster take every R-th key tile of the same queries, each keeps its own
 * online-softmax state (row max m, row sum l, unnormalized O), writes it to
 * its shared memory, and after a cluster barrier block r merges rows
 * [r 64/R, (r+1) 64/R) of the R states through distributed shared memory,
 * in block order: O = sum_i 2^(m_i - M) O_i / sum_i 2^(m_i - M) l_i with
 * M = max_i m_i (a block without keys has m = -inf, l = 0: weight 0).
 * Grid z = batch x R, cluster (1, 1, R). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(MVRT_GPU_HIP)
#define MVRT_ATT_SPLIT_DEVICE 1
#endif

template <int DP, int R>
__global__ void __launch_bounds__(128, DP <= 40 ? 4 : 3) attention_tf32x3_kernel(mvrt_attention_params_t p, bool vec4)
{
#if defined(MVRT_ATT_MMA_DEVICE) && defined(MVRT_MMA_TF32_DEVICE) /* sm_80+: TF32 products */
#if !defined(MVRT_ATT_SPLIT_DEVICE)
    /* key splits merge over a cluster (sm_90+): host dispatch launches R > 1
     * only on sm_90+ code. (This test once sat in the #if above as
     * "R == 1", which the preprocessor reads as 0 == 1: the whole kernel
     * was empty in sm_80 code and fp32 attention silently wrong there.) */
    if constexpr (R > 1) {
        mvrt_gpu_arch_missing();
        return;
    }
#endif
    constexpr int TQ = MVRT_ATT_TF_TQ, TK = MVRT_ATT_TF_TK, KB = 32; /* KB: keys per softmax step */
    constexpr int S = DP + 4;  /* row stride in floats (a multiple of 4: float4 stores) */
    constexpr int C4 = DP / 4; /* float4 chunks of a row */
    static_assert(TQ == TK, "Q is staged in K's buffer");
    __shared__ __align__(16) float Ks[TK * S]; /* K tile, or the Q tile */
    __shared__ __align__(16) float Vs[TK * S];

    const int t = threadIdx.x, warp = t >> 5, lane = t & 31, g = lane >> 2, c = lane & 3;
    const int d = p.head_dim;
    const int64_t L = p.length;
    const int64_t C = (int64_t)p.heads * d, ld = 3 * C;
    const int h = blockIdx.y;
    const int64_t q0 = (int64_t)blockIdx.x * TQ;
    const float qscale = p.scale * MVRT_ATT_LOG2E;
    const bool warp_rows = q0 + warp * 16 < L; /* this warp has a query */
    const int rank = R > 1 ? (int)(blockIdx.z % R) : 0; /* key tiles rank, rank + R, ... */

    for (int64_t b = blockIdx.z / R; b < p.batch; b += gridDim.z / R) {
        const float *base = p.qkv + b * L * ld + (int64_t)h * d;
        /* ---- Q tile (scaled) -> shared memory -> split A fragments */
        {
            constexpr int PER = TQ * C4 / 128;
            float4 v[PER];
            att_load_tile4<PER, C4>(v, base, q0, L, ld, t, d, vec4);
#pragma unroll
            for (int u = 0; u < PER; u++) {
                const int idx = t + u * 128, r = idx / C4, k4 = idx - r * C4;
                reinterpret_cast<float4 *>(Ks + r * S)[k4] =
                    make_float4(v[u].x * qscale, v[u].y * qscale, v[u].z * qscale, v[u].w * qscale);
            }
        }
        __syncthreads();
        uint32_t qb[DP / 8][4], qs[DP / 8][4];
#pragma unroll
        for (int kk = 0; kk < DP / 8; kk++) {
            const float *r0 = Ks + (warp * 16 + g) * S + kk * 8 + c, *r1 = r0 + 8 * S;
            mma_split_tf32(r0[0], qb[kk][0], qs[kk][0]);
            mma_split_tf32(r1[0], qb[kk][1], qs[kk][1]);
            mma_split_tf32(r0[4], qb[kk][2], qs[kk][2]);
            mma_split_tf32(r1[4], qb[kk][3], qs[kk][3]);
        }
        float o[DP / 8][4];
#pragma unroll
        for (int j = 0; j < DP / 8; j++) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
        float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f; /* rows g and g + 8 */

        for (int64_t kt0 = (int64_t)rank * TK; kt0 < L; kt0 += R * TK) {
            __syncthreads(); /* the previous tile (and Q's staging) is consumed */
            {
                constexpr int PK = TK * C4 / 128;
                float4 kv[PK], vv[PK];
                att_load_tile4<PK, C4>(kv, base + C, kt0, L, ld, t, d, vec4);
                att_load_tile4<PK, C4>(vv, base + 2 * C, kt0, L, ld, t, d, vec4);
#pragma unroll
                for (int u = 0; u < PK; u++) {
                    const int idx = t + u * 128, j = idx / C4, k4 = idx - j * C4;
                    reinterpret_cast<float4 *>(Ks + j * S)[k4] = kv[u];
                    reinterpret_cast<float4 *>(Vs + j * S)[k4] = vv[u];
                }
            }
            __syncthreads();
            if (!warp_rows) continue;
            /* ---- per 32 keys of the tile (fewer live registers than 64):
             * S = Q K^T for 16 queries x 32 keys (blocks of 8 keys past L
             * skipped), online softmax, O += P V */
#pragma unroll
            for (int kh = 0; kh < TK; kh += KB) {
                if (kt0 + kh >= L) break;
                float sc[KB / 8][4];
#pragma unroll
                for (int nb = 0; nb < KB / 8; nb++) {
                    sc[nb][0] = sc[nb][1] = sc[nb][2] = sc[nb][3] = 0.f;
                    if (kt0 + kh + nb * 8 < L) {
                        const float *kr = Ks + (kh + nb * 8 + g) * S + c;
#pragma unroll
                        for (int kk = 0; kk < DP / 8; kk++)
                            mma_3xtf32(sc[nb], qb[kk], qs[kk], kr[kk * 8], kr[kk * 8 + 4]);
                    }
                }
                /* rows g and g + 8 (key kt0 + kh < L exists) */
                att_softmax_step(sc, kt0 + kh, c, L, m0, m1, l0, l1, o);
                /* O += P V over blocks of 8 keys (keys in the order 0,2,..,1,3,..) */
#pragma unroll
                for (int kc = 0; kc < KB / 8; kc++) {
                    if (kt0 + kh + kc * 8 >= L) break; /* whole block past L: P is 0 there */
                    uint32_t pb[4], ps[4];
                    mma_split_tf32(sc[kc][0], pb[0], ps[0]);
                    mma_split_tf32(sc[kc][2], pb[1], ps[1]);
                    mma_split_tf32(sc[kc][1], pb[2], ps[2]);
                    mma_split_tf32(sc[kc][3], pb[3], ps[3]);
                    const float *v0 = Vs + (kh + kc * 8 + 2 * c) * S + g, *v1 = v0 + S;
#pragma unroll
                    for (int j = 0; j < DP / 8; j++) mma_3xtf32(o[j], pb, ps, v0[j * 8], v1[j * 8]);
                }
            }
        }
        float *out = p.out + b * L * C + (int64_t)h * d;
        if constexpr (R == 1) {
            /* ---- normalize and store rows g, g + 8 of this warp */
            att_store_rows(o, l0, l1, warp_rows, q0 + warp * 16 + g, c, d, L, C, out);
        } else {
#ifdef MVRT_ATT_SPLIT_DEVICE
            /* ---- this block's state into Vs: row r = O (DP), m, l */
            att_quad_sums(l0, l1);
            __syncthreads(); /* every warp is done with the last tile */
            if (warp_rows) {
                float *r0 = Vs + (warp * 16 + g) * S, *r1 = r0 + 8 * S;
#pragma unroll
                for (int j = 0; j < DP / 8; j++) {
                    const int k = j * 8 + 2 * c;
                    r0[k] = o[j][0], r0[k + 1] = o[j][1];
                    r1[k] = o[j][2], r1[k + 1] = o[j][3];
                }
                if (c == 0) r0[DP] = m0, r0[DP + 1] = l0, r1[DP] = m1, r1[DP + 1] = l1;
            }
            cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
            cluster.sync(); /* every block's state is visible cluster-wide */
            /* ---- block rank merges rows [rank * TQ / R, (rank + 1) * TQ / R) */
            constexpr int RR = TQ / R;
            for (int e = t; e < RR * DP; e += 128) {
                const int row = rank * RR + e / DP, col = e % DP;
                if (q0 + row >= L || col >= d) continue;
                float mi[R], li[R], oi[R];
#pragma unroll
                for (int i = 0; i < R; i++) {
                    const float *pr = cluster.map_shared_rank(Vs, i) + row * S;
                    mi[i] = pr[DP], li[i] = pr[DP + 1], oi[i] = pr[col];
                }
                float M = mi[0];
#pragma unroll
                for (int i = 1; i < R; i++) M = fmaxf(M, mi[i]);
                float num = 0.f, den = 0.f;
#pragma unroll
                for (int i = 0; i < R; i++) {
                    const float w = exp2f(mi[i] - M);
                    num = fmaf(w, oi[i], num);
                    den = fmaf(w, li[i], den);
                }
                out[(q0 + row) * C + col] = num / den;
            }
            cluster.sync(); /* no block reuses or leaves its Vs while others read it */
#endif
        }
        __syncthreads(); /* the next batch element restages Q */
    }
#else
    (void)p; (void)vec4;
    mvrt_gpu_arch_missing();
#endif
}

/* Any head_dim: one thread per (batch, head, query), grid-stride. */
__global__ void __launch_bounds__(128) attention_direct_kernel(mvrt_attention_params_t p)
{
    const int d = p.head_dim;
    const int64_t L = p.length, C = (int64_t)p.heads * d, ld = 3 * C;
    const int64_t total = p.batch * p.heads * L;
    const float qscale = p.scale * MVRT_ATT_LOG2E;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t qi = i % L, bh = i / L;
        const int64_t h = bh % p.heads, b = bh / p.heads;
        const float *base = p.qkv + b * L * ld + h * d;
        const float *q = base + qi * ld;
        float m = -INFINITY;
        for (int64_t j = 0; j < L; j++) {
            const float *kr = base + j * ld + C;
            float s = 0.f;
            for (int k = 0; k < d; k++) s = fmaf(q[k], kr[k], s);
            m = fmaxf(m, s * qscale);
        }
        float *o = p.out + (b * L + qi) * C + h * d;
        for (int k = 0; k < d; k++) o[k] = 0.f;
        float lsum = 0.f;
        for (int64_t j = 0; j < L; j++) {
            const float *kr = base + j * ld + C, *vr = base + j * ld + 2 * C;
            float s = 0.f;
            for (int k = 0; k < d; k++) s = fmaf(q[k], kr[k], s);
            const float e = exp2f(s * qscale - m);
            lsum += e;
            for (int k = 0; k < d; k++) o[k] = fmaf(e, vr[k], o[k]);
        }
        const float inv = 1.f / lsum;
        for (int k = 0; k < d; k++) o[k] *= inv;
    }
}

/* vec4: float4 staging of Q/K/V (head_dim, the row stride 3C and the
 * pointer allow 16-byte loads; launch_attention decides). */
template <int KS>
static inline void launch_attention_ks(const mvrt_attention_params_t &p, dim3 grid, bool vec4, mvrt_gpu_stream_t s)
{
    switch ((p.head_dim + 7) / 8) {
    case 1: attention_kernel<8, KS><<<grid, MVRT_ATT_TQ, 0, s>>>(p, vec4); break;
    case 2: attention_kernel<16, KS><<<grid, MVRT_ATT_TQ, 0, s>>>(p, vec4); break;
    case 3: attention_kernel<24, KS><<<grid, MVRT_ATT_TQ, 0, s>>>(p, vec4); break;
    case 4: attention_kernel<32, KS><<<grid, MVRT_ATT_TQ, 0, s>>>(p, vec4); break;
    case 5: attention_kernel<40, KS><<<grid, MVRT_ATT_TQ, 0, s>>>(p, vec4); break;
    case 6: attention_kernel<48, KS><<<grid, MVRT_ATT_TQ, 0, s>>>(p, vec4); break;
    case 7: attention_kernel<56, KS><<<grid, MVRT_ATT_TQ, 0, s>>>(p, vec4); break;
    default: attention_kernel<64, KS><<<grid, MVRT_ATT_TQ, 0, s>>>(p, vec4); break;
    }
}

/* sm_count: the device's multiprocessors. With fewer blocks of 64 queries
 * than SMs (MambaVision at batch 1: 4 x 8 heads) each query is shared by
 * MVRT_ATT_KS lanes that take every MVRT_ATT_KS-th sub-tile of 16 keys, so
 * MVRT_ATT_KS times more blocks run, each over a share of the keys.
 * mma16 / mma_f16: the device runs attention_mma_kernel in bf16 and fp16
 * (NVIDIA sm_80+) / in fp16 (NVIDIA sm_75+); it is used for that math
 * and head_dim <= 64. mma_tf32x3: the other modes run
 * attention_tf32x3_kernel (head_dim <= 64). smem_limit: the shared
 * memory a block may opt in to (attention_io16_kernel). */
#define MVRT_ATT_KS 4
#if defined(MVRT_GPU_CUDA)
/* attention_tf32x3_kernel<DP, R> with R key splits per cluster (R > 1). */
template <int DP, int R>
static cudaError_t launch_attention_split(const mvrt_attention_params_t &p, bool vec4, cudaStream_t s)
{
    const dim3 grid((unsigned)((p.length + MVRT_ATT_TF_TQ - 1) / MVRT_ATT_TF_TQ), (unsigned)p.heads,
                    (unsigned)(p.batch * R));
    return mvrt_launch_cluster_z(attention_tf32x3_kernel<DP, R>, grid, dim3(128), 0, s, R, p, vec4);
}
template <int DP>
static cudaError_t launch_attention_split_dp(const mvrt_attention_params_t &p, int R, bool vec4, cudaStream_t s)
{
    return R == 4 ? launch_attention_split<DP, 4>(p, vec4, s) : launch_attention_split<DP, 2>(p, vec4, s);
}
#endif

/* The kernel for each case:
 *   16-bit qkv and output (qkv16, out16; sm_80+ code, fp16 also sm_75,
 *     L <= 256, head_dim <= 64, K and V within the block's shared
 *     memory)            -> attention_io16_kernel (the graph's 16-bit modes)
 *   bf16 / fp16 math, sm_80+ (fp16: sm_75+) -> attention_mma_kernel (64 keys per tile)
 *   fp32 / fast, sm_80+  -> attention_tf32x3_kernel (key splits below)
 *   else                 -> the SIMT kernels (head_dim <= 64) or direct.
 * split_keys (NVIDIA sm_90+): fp32/fast attention grids of fewer than half
 * the SMs split the keys over clusters of 2 or 4 blocks (see
 * attention_tf32x3_kernel). */
template <int T16>
static inline void launch_attention_mma(const mvrt_attention_params_t &p, dim3 grid, bool vec4, mvrt_gpu_stream_t s)
{
    switch ((p.head_dim + 15) / 16) {
    case 1: attention_mma_kernel<16, T16><<<grid, 128, 0, s>>>(p, vec4); break;
    case 2: attention_mma_kernel<32, T16><<<grid, 128, 0, s>>>(p, vec4); break;
    case 3: attention_mma_kernel<48, T16><<<grid, 128, 0, s>>>(p, vec4); break;
    default: attention_mma_kernel<64, T16><<<grid, 128, 0, s>>>(p, vec4); break;
    }
}

static inline mvrt_gpu_error_t launch_attention(const mvrt_attention_params_t &p, int sm_count, bool mma16,
                                                bool mma_f16, bool mma_tf32x3, bool split_keys, size_t smem_limit,
                                                mvrt_gpu_stream_t s)
{
    const bool math16 = p.math == MVRT_MATH_BF16 || p.math == MVRT_MATH_FP16;
    const bool f16 = p.math == MVRT_MATH_FP16;
    if (p.batch <= 0 || p.length <= 0 || p.heads <= 0 || p.head_dim <= 0) return MVRT_GPU_SUCCESS;
#if defined(MVRT_GPU_CUDA)
    /* 16-bit qkv and output (mvrt_gpu_op_run refused the forms it does not serve) */
    if (p.qkv16 || p.out16)
        return f16 ? launch_attention_io16<MVRT_STORAGE16_F16>(p, smem_limit, s)
                   : launch_attention_io16<MVRT_STORAGE16_BF16>(p, smem_limit, s);
#else
    (void)smem_limit;
#endif
    const int64_t qtiles = (p.length + MVRT_ATT_TQ - 1) / MVRT_ATT_TQ;
    const int64_t qtiles_ks = (p.length + MVRT_ATT_TQ / MVRT_ATT_KS - 1) / (MVRT_ATT_TQ / MVRT_ATT_KS);
    if (p.head_dim <= 64 && p.heads <= 65535 && qtiles_ks <= 0x7fffffff) {
        const unsigned bz = (unsigned)(p.batch < 65535 ? p.batch : 65535);
        /* float4 staging: head_dim, the row stride 3C and the pointer allow 16-byte loads */
        const bool vec4 = p.head_dim % 4 == 0 && ((uintptr_t)p.qkv & 15u) == 0;
        if (attention_mma_math(p, mma16, mma_f16)) {
            const dim3 grid((unsigned)((p.length + MVRT_ATT_MMA_TQ - 1) / MVRT_ATT_MMA_TQ), (unsigned)p.heads, bz);
            if (f16) launch_attention_mma<MVRT_STORAGE16_F16>(p, grid, vec4, s);
            else launch_attention_mma<MVRT_STORAGE16_BF16>(p, grid, vec4, s);
        } else if (mma_tf32x3 && !math16) {
            const int64_t tf_qtiles = (p.length + MVRT_ATT_TF_TQ - 1) / MVRT_ATT_TF_TQ;
            const int64_t ktiles = (p.length + MVRT_ATT_TF_TK - 1) / MVRT_ATT_TF_TK;
            const int R = !split_keys || 2 * tf_qtiles * p.heads * p.batch > sm_count || p.batch * 4 > 65535 ? 1
                          : ktiles >= 4 ? 4 : ktiles >= 2 ? 2 : 1;
#if defined(MVRT_GPU_CUDA)
            if (R > 1) {
                cudaError_t e;
                switch ((p.head_dim + 7) / 8) {
                case 1: e = launch_attention_split_dp<8>(p, R, vec4, s); break;
                case 2: e = launch_attention_split_dp<16>(p, R, vec4, s); break;
                case 3: e = launch_attention_split_dp<24>(p, R, vec4, s); break;
                case 4: e = launch_attention_split_dp<32>(p, R, vec4, s); break;
                case 5: e = launch_attention_split_dp<40>(p, R, vec4, s); break;
                case 6: e = launch_attention_split_dp<48>(p, R, vec4, s); break;
                case 7: e = launch_attention_split_dp<56>(p, R, vec4, s); break;
                default: e = launch_attention_split_dp<64>(p, R, vec4, s); break;
                }
                /* a device (or MIG slice) that cannot co-schedule the
                 * cluster runs the unsplit kernel below */
                if (e != cudaErrorInvalidClusterSize) return e;
                (void)cudaGetLastError();
            }
#else
            (void)R; /* no clusters on HIP (mma_tf32x3 is 0 there) */
#endif
            const dim3 grid((unsigned)tf_qtiles, (unsigned)p.heads, bz);
            switch ((p.head_dim + 7) / 8) {
            case 1: attention_tf32x3_kernel<8, 1><<<grid, 128, 0, s>>>(p, vec4); break;
            case 2: attention_tf32x3_kernel<16, 1><<<grid, 128, 0, s>>>(p, vec4); break;
            case 3: attention_tf32x3_kernel<24, 1><<<grid, 128, 0, s>>>(p, vec4); break;
            case 4: attention_tf32x3_kernel<32, 1><<<grid, 128, 0, s>>>(p, vec4); break;
            case 5: attention_tf32x3_kernel<40, 1><<<grid, 128, 0, s>>>(p, vec4); break;
            case 6: attention_tf32x3_kernel<48, 1><<<grid, 128, 0, s>>>(p, vec4); break;
            case 7: attention_tf32x3_kernel<56, 1><<<grid, 128, 0, s>>>(p, vec4); break;
            default: attention_tf32x3_kernel<64, 1><<<grid, 128, 0, s>>>(p, vec4); break;
            }
        } else if (qtiles * p.heads * p.batch < sm_count && p.length > MVRT_ATT_SUB)
            launch_attention_ks<MVRT_ATT_KS>(p, dim3((unsigned)qtiles_ks, (unsigned)p.heads, bz), vec4, s);
        else
            launch_attention_ks<1>(p, dim3((unsigned)qtiles, (unsigned)p.heads, bz), vec4, s);
    } else {
        const int64_t total = p.batch * p.heads * p.length;
        const int64_t blocks = (total + 127) / 128;
        attention_direct_kernel<<<(unsigned)(blocks < 1048576 ? blocks : 1048576), 128, 0, s>>>(p);
    }
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
