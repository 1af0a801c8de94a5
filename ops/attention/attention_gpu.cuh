/* GPU kernel of multi-head self-attention (ops/common/mv_op_params.h),
 * compiled by nvcc and by clang as HIP through
 * backends/gpu_common/mv_gpu_launch.cu.
 *
 * Fused path (head_dim <= 64): one block of 64 threads per (batch, head,
 * tile of 64 queries), one query per thread. The query row (pre-scaled by
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
#include <math.h>
#include <stdint.h>

namespace mvrt_mv_gpu {

#define MVRT_ATT_TQ 64  /* queries per block = threads per block */
#define MVRT_ATT_TK 64  /* keys per shared-memory tile */
#define MVRT_ATT_SUB 16 /* keys scored at once in registers */
#define MVRT_ATT_LOG2E 1.4426950408889634f

template <int D>
__global__ void __launch_bounds__(MVRT_ATT_TQ) attention_kernel(mvrt_attention_params_t p)
{
    /* K tile | V tile, or the (TQ, D + 1) staging of Q and of the output. */
    constexpr int KV = MVRT_ATT_TK * D;
    constexpr int STAGE = MVRT_ATT_TQ * (D + 1);
    constexpr int SM = 2 * KV > STAGE ? 2 * KV : STAGE;
    __shared__ __align__(16) float sm[SM];
    float *Ks = sm, *Vs = sm + KV;

    const int t = threadIdx.x;
    const int d = p.head_dim;
    const int64_t L = p.length;
    const int64_t C = (int64_t)p.heads * d, ld = 3 * C;
    const int h = blockIdx.y;
    const int64_t q0 = (int64_t)blockIdx.x * MVRT_ATT_TQ;
    const float qscale = p.scale * MVRT_ATT_LOG2E;

    for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z) {
        const float *base = p.qkv + b * L * ld + (int64_t)h * d;
        /* ---- Q tile -> registers */
        for (int idx = t; idx < MVRT_ATT_TQ * d; idx += MVRT_ATT_TQ) {
            const int r = idx / d, k = idx - r * d;
            sm[r * (D + 1) + k] = q0 + r < L ? base[(q0 + r) * ld + k] : 0.f;
        }
        __syncthreads();
        float q[D], o[D];
#pragma unroll
        for (int k = 0; k < D; k++) {
            q[k] = k < d ? sm[t * (D + 1) + k] * qscale : 0.f;
            o[k] = 0.f;
        }
        float m = -INFINITY, lsum = 0.f;
        __syncthreads();

        for (int64_t kt0 = 0; kt0 < L; kt0 += MVRT_ATT_TK) {
            /* ---- K, V tile (rows past L and columns past d are zeros) */
            for (int idx = t; idx < MVRT_ATT_TK * D; idx += MVRT_ATT_TQ) {
                const int j = idx / D, k = idx - j * D;
                const bool in = kt0 + j < L && k < d;
                const float *row = base + (kt0 + j) * ld + k;
                Ks[idx] = in ? row[C] : 0.f;
                Vs[idx] = in ? row[2 * C] : 0.f;
            }
            __syncthreads();
            const int nk = (int)(L - kt0 < MVRT_ATT_TK ? L - kt0 : MVRT_ATT_TK);
            for (int sub = 0; sub < nk; sub += MVRT_ATT_SUB) {
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

        /* ---- output through shared memory, coalesced along head_dim */
        const float inv = 1.f / lsum;
#pragma unroll
        for (int k = 0; k < D; k++)
            if (k < d) sm[t * (D + 1) + k] = o[k] * inv;
        __syncthreads();
        float *out = p.out + b * L * C + (int64_t)h * d;
        for (int idx = t; idx < MVRT_ATT_TQ * d; idx += MVRT_ATT_TQ) {
            const int r = idx / d, k = idx - r * d;
            if (q0 + r < L) out[(q0 + r) * C + k] = sm[r * (D + 1) + k];
        }
        __syncthreads(); /* the next batch element restages Q */
    }
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

static inline mvrt_gpu_error_t launch_attention(const mvrt_attention_params_t &p, mvrt_gpu_stream_t s)
{
    if (p.batch <= 0 || p.length <= 0 || p.heads <= 0 || p.head_dim <= 0) return MVRT_GPU_SUCCESS;
    const int64_t qtiles = (p.length + MVRT_ATT_TQ - 1) / MVRT_ATT_TQ;
    if (p.head_dim <= 64 && p.heads <= 65535 && qtiles <= 0x7fffffff) {
        dim3 grid((unsigned)qtiles, (unsigned)p.heads, (unsigned)(p.batch < 65535 ? p.batch : 65535));
        switch ((p.head_dim + 7) / 8) {
        case 1: attention_kernel<8><<<grid, MVRT_ATT_TQ, 0, s>>>(p); break;
        case 2: attention_kernel<16><<<grid, MVRT_ATT_TQ, 0, s>>>(p); break;
        case 3: attention_kernel<24><<<grid, MVRT_ATT_TQ, 0, s>>>(p); break;
        case 4: attention_kernel<32><<<grid, MVRT_ATT_TQ, 0, s>>>(p); break;
        case 5: attention_kernel<40><<<grid, MVRT_ATT_TQ, 0, s>>>(p); break;
        case 6: attention_kernel<48><<<grid, MVRT_ATT_TQ, 0, s>>>(p); break;
        case 7: attention_kernel<56><<<grid, MVRT_ATT_TQ, 0, s>>>(p); break;
        default: attention_kernel<64><<<grid, MVRT_ATT_TQ, 0, s>>>(p); break;
        }
    } else {
        const int64_t total = p.batch * p.heads * p.length;
        const int64_t blocks = (total + 127) / 128;
        attention_direct_kernel<<<(unsigned)(blocks < 1048576 ? blocks : 1048576), 128, 0, s>>>(p);
    }
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
