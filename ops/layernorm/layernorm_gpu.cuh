/* GPU kernel of LayerNorm (ops/common/mv_op_params.h), compiled by nvcc and
 * by clang as HIP through backends/gpu_common/mv_gpu_launch.cu.
 *
 * One warp (wavefront) per row at a time, rows in a grid-stride loop (with
 * 16-bit input and many rows each warp takes several and prefetches: PF
 * below); rows of more than 8 float4 per lane (1 024 columns), and few
 * rows of 512 or more, take a block of up to 8 warps per row instead
 * (layernorm_split_kernel; the launcher says which and why). The fast path (rows 16-byte aligned, cols a multiple of 4)
 * loads the row once as float4 into registers (NV float4 per lane, a
 * template parameter chosen by the host from cols), then computes the
 * mean and the centered variance from registers (two reductions, no
 * E[x^2] - mean^2 cancellation) and writes.
 * Any other shape goes through a scalar three-pass loop (re-reads hit L1).
 * In place (y == x) is fine: each element is read before its own lane
 * writes it, and a row is read and written by one warp only. Reductions
 * use MVRT_SHFL_XOR over MVRT_WARP_SIZE lanes.
 * Y16 (p.y16: 0, or MVRT_STORAGE16_BF16 / _F16): the output is stored as
 * 16-bit bits of that type (round to nearest even), 8-byte stores of 4 on
 * the fast path. X16 (p.x16): the input is 16-bit bits of that type (the
 * graph's 16-bit residual stream), 8-byte loads of 4 on the fast path,
 * widened exactly; only with Y16 0 or equal (the launcher's forms). */
#ifndef MVRT_OPS_LAYERNORM_GPU_CUH
#define MVRT_OPS_LAYERNORM_GPU_CUH

#include "../common/gpu_vendor.h"
#include "../common/mv_op_params.h"
#include <stdint.h>

namespace mvrt_mv_gpu {

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = MVRT_WARP_SIZE / 2; o > 0; o /= 2) v += MVRT_SHFL_XOR(v, o, MVRT_WARP_SIZE);
    return v;
}

/* Element c of row x: a float, or X16's 16-bit bits widened. */
template <int X16> static __device__ __forceinline__ float ln_load(const float *x, int64_t c)
{
    if constexpr (X16 != 0) return mvrt_h16_to_f32<X16>(reinterpret_cast<const uint16_t *>(x)[c]);
    else return x[c];
}

/* The fast path's slots of a row: four values per lane and slot, as
 * stored (floats: a float4; 16-bit bits: a uint2 of two pairs). */
template <int X16> struct ln_slot {
    typedef uint2 type;
};
template <> struct ln_slot<0> {
    typedef float4 type;
};

/* Slot i of lane `lane`: columns 4 (lane + i W) .. + 3 of row x, zeros
 * past the row's end or where !valid. */
template <int NV, int X16>
static __device__ __forceinline__ void ln_load_slots(typename ln_slot<X16>::type (&r)[NV], const float *x, int lane,
                                                     int64_t c4n, bool valid)
{
#pragma unroll
    for (int i = 0; i < NV; i++) {
        const int64_t c4 = lane + (int64_t)i * MVRT_WARP_SIZE;
        if constexpr (X16 != 0) r[i] = valid && c4 < c4n ? reinterpret_cast<const uint2 *>(x)[c4] : make_uint2(0u, 0u);
        else r[i] = valid && c4 < c4n ? reinterpret_cast<const float4 *>(x)[c4] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
}

template <int X16> static __device__ __forceinline__ float4 ln_widen(const typename ln_slot<X16>::type &h)
{
    if constexpr (X16 != 0)
        return make_float4(mvrt_h16_to_f32<X16>((unsigned short)h.x), mvrt_h16_to_f32<X16>((unsigned short)(h.x >> 16)),
                           mvrt_h16_to_f32<X16>((unsigned short)h.y), mvrt_h16_to_f32<X16>((unsigned short)(h.y >> 16)));
    else return h;
}

/* Rows per warp of the prefetching form (PF below), where the rows fill
 * two blocks per SM with that many. */
#define MVRT_LN_ROWS_PER_WARP 4

/* NV = 0: scalar path only. Block size a multiple of the warp width.
 * PF (prefetch; 16-bit input, X16, and many rows): each warp walks
 * MVRT_LN_ROWS_PER_WARP rows and loads the next row's slots before it
 * normalizes the current one, so two rows per warp are in flight. With one
 * row per warp a warp's loads are in flight only between its start and its
 * first reduction (H200, same process, 16-bit in and out: 50176 x 512 rows
 * 0.0382 -> 0.0343 ms, 12544 x 1024 0.0223 -> 0.0212, 50176 x 320 0.0287 ->
 * 0.0249). Few rows (batch 1) keep one row per warp: there walking four
 * rows in turn made MambaVision-T's batch-1 bf16 forward 10 % slower. The
 * float form keeps one row per warp: its slots are twice the registers. */
template <int NV, int Y16, int X16, bool PF>
__global__ void __launch_bounds__(256) layernorm_kernel(mvrt_layernorm_params_t p)
{
    constexpr bool LN_PREFETCH = PF && X16 != 0;
    const int lane = threadIdx.x % MVRT_WARP_SIZE;
    const int wpb = blockDim.x / MVRT_WARP_SIZE;
    const int64_t cols = p.cols;
    const float inv_n = 1.f / (float)cols;
    const int64_t warp0 = (int64_t)blockIdx.x * wpb + threadIdx.x / MVRT_WARP_SIZE, nwarps = (int64_t)gridDim.x * wpb;
    /* row `row` of x (element offsets are the same for 16-bit bits) */
    auto x_row = [&](int64_t row) {
        return X16 ? reinterpret_cast<const float *>(reinterpret_cast<const uint16_t *>(p.x) + row * p.x_ld)
                   : p.x + row * p.x_ld;
    };
    /* the guard only matters if the host planned with another warp width */
    if (NV > 0 && cols / 4 <= (int64_t)NV * MVRT_WARP_SIZE) {
        const int64_t c4n = cols / 4;
        const float4 *w4 = reinterpret_cast<const float4 *>(p.weight);
        const float4 *b4 = reinterpret_cast<const float4 *>(p.bias);
        /* the weights and biases are loaded with the first row (up to 8
         * float4 per lane, 4 where two rows' slots are live: with 8 the
         * 16-bit form took 137 registers, one block per SM): each
         * LayerNorm's are read once per forward, from DRAM, and a load
         * after the two reductions added a memory round trip to every
         * call; later rows find them in L1 */
        constexpr bool EARLY = NV <= (LN_PREFETCH ? 4 : 8);
        float4 wv[EARLY && NV > 0 ? NV : 1], bv[EARLY && NV > 0 ? NV : 1];
        if constexpr (EARLY) {
#pragma unroll
            for (int i = 0; i < NV; i++) {
                const int64_t c4 = lane + (int64_t)i * MVRT_WARP_SIZE;
                if (c4 < c4n) wv[i] = w4[c4], bv[i] = b4[c4];
            }
        }
        typename ln_slot<X16>::type cur[NV > 0 ? NV : 1], nxt[NV > 0 ? NV : 1];
        ln_load_slots<(NV > 0 ? NV : 1), X16>(cur, x_row(warp0 < p.rows ? warp0 : 0), lane, c4n, warp0 < p.rows);
        for (int64_t row = warp0; row < p.rows; row += nwarps) {
            const int64_t next = row + nwarps;
            if constexpr (LN_PREFETCH)
                ln_load_slots<(NV > 0 ? NV : 1), X16>(nxt, x_row(next < p.rows ? next : row), lane, c4n, next < p.rows);
            float4 v[NV > 0 ? NV : 1];
            float s = 0.f;
#pragma unroll
            for (int i = 0; i < NV; i++) {
                v[i] = ln_widen<X16>(cur[i]);
                s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
            }
            const float mean = warp_sum(s) * inv_n;
            float q = 0.f;
#pragma unroll
            for (int i = 0; i < NV; i++) {
                const int64_t c4 = lane + (int64_t)i * MVRT_WARP_SIZE;
                if (c4 < c4n) {
                    const float a = v[i].x - mean, b = v[i].y - mean, c = v[i].z - mean, d = v[i].w - mean;
                    q += (a * a + b * b) + (c * c + d * d);
                }
            }
            const float rstd = 1.f / sqrtf(warp_sum(q) * inv_n + p.eps);
            float4 *y4 = Y16 ? nullptr : reinterpret_cast<float4 *>(p.y + row * p.y_ld);
            uint2 *y4h = Y16 ? reinterpret_cast<uint2 *>(reinterpret_cast<uint16_t *>(p.y) + row * p.y_ld) : nullptr;
#pragma unroll
            for (int i = 0; i < NV; i++) {
                const int64_t c4 = lane + (int64_t)i * MVRT_WARP_SIZE;
                if (c4 < c4n) {
                    const float4 w = EARLY ? wv[i] : w4[c4], b = EARLY ? bv[i] : b4[c4];
                    float4 o;
                    o.x = (v[i].x - mean) * rstd * w.x + b.x;
                    o.y = (v[i].y - mean) * rstd * w.y + b.y;
                    o.z = (v[i].z - mean) * rstd * w.z + b.z;
                    o.w = (v[i].w - mean) * rstd * w.w + b.w;
                    if constexpr (Y16 != 0)
                        y4h[c4] = make_uint2(mvrt_h16x2<Y16>(o.x, o.y), mvrt_h16x2<Y16>(o.z, o.w));
                    else
                        y4[c4] = o;
                }
            }
            if constexpr (LN_PREFETCH) {
#pragma unroll
                for (int i = 0; i < NV; i++) cur[i] = nxt[i];
            } else if (next < p.rows) {
                ln_load_slots<(NV > 0 ? NV : 1), X16>(cur, x_row(next), lane, c4n, true);
            }
        }
        return;
    }
    for (int64_t row = warp0; row < p.rows; row += nwarps) {
        const float *x = x_row(row);
        float *y = Y16 ? nullptr : p.y + row * p.y_ld;
        uint16_t *y16 = Y16 ? reinterpret_cast<uint16_t *>(p.y) + row * p.y_ld : nullptr;
        float s = 0.f;
        for (int64_t c = lane; c < cols; c += MVRT_WARP_SIZE) s += ln_load<X16>(x, c);
        const float mean = warp_sum(s) * inv_n;
        float q = 0.f;
        for (int64_t c = lane; c < cols; c += MVRT_WARP_SIZE) {
            const float a = ln_load<X16>(x, c) - mean;
            q += a * a;
        }
        const float rstd = 1.f / sqrtf(warp_sum(q) * inv_n + p.eps);
        for (int64_t c = lane; c < cols; c += MVRT_WARP_SIZE) {
            const float o = (ln_load<X16>(x, c) - mean) * rstd * p.weight[c] + p.bias[c];
            if constexpr (Y16 != 0) y16[c] = mvrt_f32_to_h16<Y16>(o);
            else y[c] = o;
        }
    }
}

/* Split rows (few rows of many columns, e.g. batch 1's 49 x 1568): one
 * block of blockDim.x threads per row, NV slots of 4 columns per thread
 * (slot i of thread t: columns 4 (t + i blockDim.x) .. + 3), the two
 * sums reduced over the warps through shared memory in a fixed order.
 * There one warp per row leaves most SMs idle and walks up to 16 slots
 * with the weights read after the reductions. */
#define MVRT_LN_SPLIT_MAX_WARPS 8
template <int NV, int Y16, int X16>
__global__ void __launch_bounds__(MVRT_LN_SPLIT_MAX_WARPS * MVRT_WARP_SIZE) layernorm_split_kernel(mvrt_layernorm_params_t p)
{
    __shared__ float part[2][MVRT_LN_SPLIT_MAX_WARPS];
    const int t = threadIdx.x, nt = blockDim.x, warp = t / MVRT_WARP_SIZE, nw = nt / MVRT_WARP_SIZE;
    const int64_t c4n = p.cols / 4;
    const float inv_n = 1.f / (float)p.cols;
    const float4 *w4 = reinterpret_cast<const float4 *>(p.weight);
    const float4 *b4 = reinterpret_cast<const float4 *>(p.bias);
    float4 wv[NV], bv[NV];
#pragma unroll
    for (int i = 0; i < NV; i++) {
        const int64_t c4 = t + (int64_t)i * nt;
        if (c4 < c4n) wv[i] = w4[c4], bv[i] = b4[c4];
    }
    for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
        const float *x = X16 ? reinterpret_cast<const float *>(reinterpret_cast<const uint16_t *>(p.x) + row * p.x_ld)
                             : p.x + row * p.x_ld;
        typename ln_slot<X16>::type r[NV];
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const int64_t c4 = t + (int64_t)i * nt;
            if constexpr (X16 != 0) r[i] = c4 < c4n ? reinterpret_cast<const uint2 *>(x)[c4] : make_uint2(0u, 0u);
            else r[i] = c4 < c4n ? reinterpret_cast<const float4 *>(x)[c4] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        float4 v[NV];
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < NV; i++) {
            v[i] = ln_widen<X16>(r[i]);
            s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
        }
        s = warp_sum(s);
        if (t % MVRT_WARP_SIZE == 0) part[0][warp] = s;
        __syncthreads();
        s = 0.f;
        for (int k = 0; k < nw; k++) s += part[0][k];
        const float mean = s * inv_n;
        float q = 0.f;
#pragma unroll
        for (int i = 0; i < NV; i++) {
            if (t + (int64_t)i * nt < c4n) {
                const float a = v[i].x - mean, b = v[i].y - mean, c = v[i].z - mean, d = v[i].w - mean;
                q += (a * a + b * b) + (c * c + d * d);
            }
        }
        q = warp_sum(q);
        if (t % MVRT_WARP_SIZE == 0) part[1][warp] = q;
        __syncthreads();
        q = 0.f;
        for (int k = 0; k < nw; k++) q += part[1][k];
        const float rstd = 1.f / sqrtf(q * inv_n + p.eps);
        float4 *y4 = Y16 ? nullptr : reinterpret_cast<float4 *>(p.y + row * p.y_ld);
        uint2 *y4h = Y16 ? reinterpret_cast<uint2 *>(reinterpret_cast<uint16_t *>(p.y) + row * p.y_ld) : nullptr;
#pragma unroll
        for (int i = 0; i < NV; i++) {
            const int64_t c4 = t + (int64_t)i * nt;
            if (c4 < c4n) {
                float4 o;
                o.x = (v[i].x - mean) * rstd * wv[i].x + bv[i].x;
                o.y = (v[i].y - mean) * rstd * wv[i].y + bv[i].y;
                o.z = (v[i].z - mean) * rstd * wv[i].z + bv[i].z;
                o.w = (v[i].w - mean) * rstd * wv[i].w + bv[i].w;
                if constexpr (Y16 != 0) y4h[c4] = make_uint2(mvrt_h16x2<Y16>(o.x, o.y), mvrt_h16x2<Y16>(o.z, o.w));
                else y4[c4] = o;
            }
        }
        __syncthreads(); /* part[] is rewritten by the next row */
    }
}

template <int Y16, int X16, bool PF>
static inline void launch_layernorm_nv(const mvrt_layernorm_params_t &p, int nv, unsigned blocks, int threads,
                                       mvrt_gpu_stream_t s)
{
    switch (nv) {
    case 1: layernorm_kernel<1, Y16, X16, PF><<<blocks, threads, 0, s>>>(p); break;
    case 2: layernorm_kernel<2, Y16, X16, PF><<<blocks, threads, 0, s>>>(p); break;
    case 3: layernorm_kernel<3, Y16, X16, PF><<<blocks, threads, 0, s>>>(p); break;
    case 4: layernorm_kernel<4, Y16, X16, PF><<<blocks, threads, 0, s>>>(p); break;
    case 5: layernorm_kernel<5, Y16, X16, PF><<<blocks, threads, 0, s>>>(p); break;
    case 6: layernorm_kernel<6, Y16, X16, PF><<<blocks, threads, 0, s>>>(p); break;
    case 8: layernorm_kernel<8, Y16, X16, PF><<<blocks, threads, 0, s>>>(p); break;
    default: layernorm_kernel<0, Y16, X16, PF><<<blocks, threads, 0, s>>>(p); break;
    }
}

/* The (input, output) type pairs: floats or a 16-bit type in, floats or
 * that type out; the prefetching form (pf) only with 16-bit input. */
template <int T16>
static inline void launch_layernorm_t16(const mvrt_layernorm_params_t &p, int nv, bool pf, unsigned blocks,
                                        int threads, mvrt_gpu_stream_t s)
{
    if (p.x16 && p.y16 && pf) launch_layernorm_nv<T16, T16, true>(p, nv, blocks, threads, s);
    else if (p.x16 && p.y16) launch_layernorm_nv<T16, T16, false>(p, nv, blocks, threads, s);
    else if (p.x16 && pf) launch_layernorm_nv<0, T16, true>(p, nv, blocks, threads, s);
    else if (p.x16) launch_layernorm_nv<0, T16, false>(p, nv, blocks, threads, s);
    else launch_layernorm_nv<T16, 0, false>(p, nv, blocks, threads, s);
}

/* The split-row kernel for NV slots per thread (1..8). */
template <int Y16, int X16>
static inline void launch_layernorm_split_nv(const mvrt_layernorm_params_t &p, int nv, unsigned blocks, int threads,
                                             mvrt_gpu_stream_t s)
{
    switch (nv) {
    case 1: layernorm_split_kernel<1, Y16, X16><<<blocks, threads, 0, s>>>(p); break;
    case 2: layernorm_split_kernel<2, Y16, X16><<<blocks, threads, 0, s>>>(p); break;
    case 3: layernorm_split_kernel<3, Y16, X16><<<blocks, threads, 0, s>>>(p); break;
    case 4: layernorm_split_kernel<4, Y16, X16><<<blocks, threads, 0, s>>>(p); break;
    default: layernorm_split_kernel<8, Y16, X16><<<blocks, threads, 0, s>>>(p); break;
    }
}
template <int T16>
static inline void launch_layernorm_split_t16(const mvrt_layernorm_params_t &p, int nv, unsigned blocks, int threads,
                                              mvrt_gpu_stream_t s)
{
    if (p.x16 && p.y16) launch_layernorm_split_nv<T16, T16>(p, nv, blocks, threads, s);
    else if (p.x16) launch_layernorm_split_nv<0, T16>(p, nv, blocks, threads, s);
    else launch_layernorm_split_nv<T16, 0>(p, nv, blocks, threads, s);
}

/* warp_size: the device's (equals the device pass's MVRT_WARP_SIZE);
 * sm_count: its multiprocessors (how many rows make PF worth it). */
static inline mvrt_gpu_error_t launch_layernorm(const mvrt_layernorm_params_t &p, int warp_size, int sm_count,
                                                mvrt_gpu_stream_t s)
{
    if (p.rows <= 0 || p.cols <= 0) return MVRT_GPU_SUCCESS;
    const int threads = 256;
    const int64_t wpb = threads / warp_size;
    auto a16 = [](const void *q) { return ((uintptr_t)q & 15u) == 0; };
    auto a8 = [](const void *q) { return ((uintptr_t)q & 7u) == 0; };
    const bool vec = p.cols % 4 == 0 && p.x_ld % 4 == 0 && p.y_ld % 4 == 0 && (p.x16 ? a8(p.x) : a16(p.x)) &&
                     (p.y16 ? a8(p.y) : a16(p.y)) && a16(p.weight) && a16(p.bias);
    const int64_t c4n = p.cols / 4, per_lane = (c4n + warp_size - 1) / warp_size;
    /* Split rows (H200, 16-bit in, graphs of 20 launches, us per launch,
     * one warp per row -> 8 warps per row): 49 x 1568 5.30 -> 2.06,
     * 245 x 1568 5.35 -> 2.28, 49 x 1024 2.67 -> 1.94, 49 x 640 2.19 ->
     * 1.89, 196 x 784 2.62 -> 2.02, 392 x 784 2.66 -> 2.19; no gain at
     * 196 x 320 (1.90 -> 1.89) and 784 x 392 (2.15 -> 2.18 with 2 warps).
     * So: rows of more than 8 float4 per lane (the 16-slot form spills
     * and reads the weights after its reductions), and few rows (at most
     * 4 per SM) of at least 512 columns; warps per row up to 8, one slot
     * of 4 columns per thread where that covers the row. */
    if (vec && c4n <= (int64_t)8 * MVRT_LN_SPLIT_MAX_WARPS * warp_size &&
        (per_lane > 8 || (p.rows <= 4 * (int64_t)(sm_count > 0 ? sm_count : 1) && c4n >= 4 * (int64_t)warp_size))) {
        const int64_t w = (c4n + warp_size - 1) / warp_size;
        const int warps = (int)(w < MVRT_LN_SPLIT_MAX_WARPS ? w : MVRT_LN_SPLIT_MAX_WARPS);
        const int64_t nv = (c4n + (int64_t)warps * warp_size - 1) / ((int64_t)warps * warp_size);
        const unsigned blocks = (unsigned)(p.rows < 0x7fffffff ? p.rows : 0x7fffffff);
        const int t16 = p.y16 ? p.y16 : p.x16;
        if (t16 == MVRT_STORAGE16_F16) launch_layernorm_split_t16<MVRT_STORAGE16_F16>(p, (int)nv, blocks, warps * warp_size, s);
        else if (t16) launch_layernorm_split_t16<MVRT_STORAGE16_BF16>(p, (int)nv, blocks, warps * warp_size, s);
        else launch_layernorm_split_nv<0, 0>(p, (int)nv, blocks, warps * warp_size, s);
        return mvrt_gpu_get_last_error();
    }
    /* float4 per lane: exact up to 6 (MambaVision's 320 / 640 / 1024
     * channels: 3 / 5 / 8), so that no registers hold unused slots (640
     * channels on 8 slots: 119 registers, 22 % occupancy, H200 ncu) */
    const int nv = !vec ? 0 : per_lane <= 6 ? (int)per_lane : per_lane <= 8 ? 8 : 0;
    /* several rows per warp where they still fill two blocks per SM */
    const bool pf = p.x16 && nv > 0 && p.rows >= (int64_t)MVRT_LN_ROWS_PER_WARP * wpb * 2 * (sm_count > 0 ? sm_count : 1);
    const int64_t rpw = pf ? MVRT_LN_ROWS_PER_WARP : 1;
    const int64_t blocks64 = (p.rows + wpb * rpw - 1) / (wpb * rpw);
    const unsigned blocks = (unsigned)(blocks64 < 0x7fffffff ? blocks64 : 0x7fffffff);
    /* the one 16-bit type of the op (mvrt_op_storage16 checked it) */
    const int t16 = p.y16 ? p.y16 : p.x16;
    if (t16 == MVRT_STORAGE16_F16) launch_layernorm_t16<MVRT_STORAGE16_F16>(p, nv, pf, blocks, threads, s);
    else if (t16) launch_layernorm_t16<MVRT_STORAGE16_BF16>(p, nv, pf, blocks, threads, s);
    else launch_layernorm_nv<0, 0, false>(p, nv, blocks, threads, s);
    return mvrt_gpu_get_last_error();
}

} // namespace mvrt_mv_gpu

#endif
