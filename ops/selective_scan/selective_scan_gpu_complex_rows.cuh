/* The complex-A forward of many short rows (CUDA and HIP from this one
 * source): N <= 16, L <= 256 and at least 128 rows per SM (MambaVision's
 * stages at batch 64-256), where the rows alone fill the GPU many times
 * over. Every other complex-A forward, and every backward, runs the
 * chunked warp-scan kernels (selective_scan_gpu_complex.cuh, whose header
 * has the semantics and the decay's accuracy).
 *
 * Layout: LPR consecutive lanes per channel row (the next power of two
 * >= N), lane j owning state j, so a warp works on MVRT_WARP_SIZE / LPR
 * rows side by side (4 at N = 8) and walks L one step after the other;
 * the per-step sum over the states is the fixed butterfly group_sum over
 * the row's lanes, and nothing else crosses lanes. Lanes past the last
 * row compute on the last row and store nothing, so every lane takes
 * every shuffle. Why: per step it does about a third of the chunked
 * forward's work (no lane maps, no prefix scan over the lanes), which wins
 * once there are enough rows to hide the step's latency; with few rows
 * or long L the chunked kernel wins by up to 4x (cx_rows_preferred;
 * docs/performance.md, "Complex A"). This is the forward of the serial
 * kernels of sessions 50-68 for N <= 16 (one state a lane), with its
 * arithmetic in the same order. */
#ifndef MVRT_OPS_SELECTIVE_SCAN_GPU_COMPLEX_ROWS_CUH
#define MVRT_OPS_SELECTIVE_SCAN_GPU_COMPLEX_ROWS_CUH

#include "selective_scan_gpu_complex.cuh" /* cx::cx_pair, cx::cx_off, cx::cx_decay */

namespace mvrt_scan_gpu {
namespace cx_rows {

#define MVRT_CXR_WARPS 4 /* warps per block */

static inline bool cx_rows_supported(const mvrt_scan_params_t &p)
{
    return p.dstate >= 1 && p.dstate <= 16 && p.batch * p.dim <= INT32_MAX;
}
/* One H100, one call (session 69), against mamba_ssm's complex forward:
 * this kernel 1.00x / 2.31x / 0.94x at 40 960 / 81 920 / 25 088 rows of
 * L 196 / 49 / 196 (N 8), the chunked one 0.82x / 1.35x / 0.83x; the
 * chunked one leads at 160 rows of L 196 (1.29x against 0.36x), 1 024 of
 * L 256 (N 64) and 1 536-12 288 of L 2 048-4 096 (N 16) by 3-4x. Between
 * them the row count is the real row kernels' (selective_scan_gpu_row.cuh),
 * not measured here. */
static inline bool cx_rows_preferred(const mvrt_scan_params_t &p, int sm_count)
{
    return cx_rows_supported(p) && p.seqlen <= 256 && p.batch * p.dim >= 128 * (int64_t)sm_count;
}

/* ---------------------------------------------------------------- helpers */
/* B or C of state n at step t: variable ((re, im) at steps 2t, 2t + 1) or the constant */
static __device__ __forceinline__ void cx_bc(const mvrt_scan_operand_t &o, int variable, int64_t b, int64_t g,
                                             int64_t n, int64_t t, float cre, float cim, float &re, float &im)
{
    if (!variable) {
        re = cre, im = cim;
        return;
    }
    const float *q = (const float *)o.data + b * o.stride[0] + g * o.stride[1] + n * o.stride[2];
    re = q[(2 * t) * o.stride[3]];
    im = q[(2 * t + 1) * o.stride[3]];
}

/* ---------------------------------------------------------------- forward */
/* LPR: lanes per row (a power of two, N <= LPR <= 16); state j is lane j
 * of its row. Launch: MVRT_CXR_WARPS warps per block. */
template <int LPR> __global__ void __launch_bounds__(256) scan_cx_rows_fwd_kernel(const mvrt_scan_params_t p)
{
    constexpr int RPW = MVRT_WARP_SIZE / LPR; /* rows per warp */
    const int lane = (int)(threadIdx.x % MVRT_WARP_SIZE), j = lane % LPR;
    const int64_t rows = p.batch * p.dim;
    const int64_t warp = (int64_t)blockIdx.x * MVRT_CXR_WARPS + threadIdx.x / MVRT_WARP_SIZE;
    if (warp * RPW >= rows) return; /* a whole warp leaves together */
    int64_t row = warp * RPW + lane / LPR;
    const bool active = row < rows;
    if (!active) row = rows - 1; /* computes a copy, stores nothing */
    const int64_t b = row / p.dim, d = row % p.dim, g = d / (p.dim / p.groups);
    /* the row's delta_bias and D; the lane's A and constant B / C (0 past N) */
    const float bias = p.delta_bias.data ? ((const float *)p.delta_bias.data)[d * p.delta_bias.stride[0]] : 0.f;
    const float Dd = p.D.data ? ((const float *)p.D.data)[d * p.D.stride[0]] : 0.f;
    const bool has_state = j < p.dstate;
    float ar = 0.f, ai = 0.f, cbr = 0.f, cbi = 0.f, ccr = 0.f, cci = 0.f;
    if (has_state) {
        const float *a = cx::cx_pair(p.A, d, j);
        ar = a[0], ai = a[1];
        if (!p.b_variable) {
            const float *q = cx::cx_pair(p.B, d, j);
            cbr = q[0], cbi = q[1];
        }
        if (!p.c_variable) {
            const float *q = cx::cx_pair(p.C, d, j);
            ccr = q[0], cci = q[1];
        }
    }
    float xr = 0.f, xi = 0.f;
    for (int64_t t = 0; t < p.seqlen; t++) {
        const float v = ((const float *)p.delta.data)[cx::cx_off(p.delta, b, d, t)] + bias;
        const float dt = p.delta_softplus ? mvrt_softplusf(v) : v;
        const float uu = ((const float *)p.u.data)[cx::cx_off(p.u, b, d, t)];
        float y = 0.f;
        if (has_state) {
            float dar, dai, br, bi, cr, ci;
            cx::cx_decay(dt, ar, ai, dar, dai);
            cx_bc(p.B, p.b_variable, b, g, j, t, cbr, cbi, br, bi);
            cx_bc(p.C, p.c_variable, b, g, j, t, ccr, cci, cr, ci);
            const float nr = dar * xr - dai * xi + dt * uu * br;
            const float ni = dar * xi + dai * xr + dt * uu * bi;
            xr = nr, xi = ni;
            y += 2.f * (nr * cr - ni * ci);
        }
        y = group_sum<LPR>(y);
        if (active && j == 0) {
            y += Dd * uu;
            if (p.z.data) {
                const float z = ((const float *)p.z.data)[cx::cx_off(p.z, b, d, t)];
                y *= z * (1.f / (1.f + expf(-z)));
            }
            ((float *)p.out.data)[cx::cx_off(p.out, b, d, t)] = y;
        }
    }
    if (p.last_state.data && active && has_state) {
        float *s = (float *)p.last_state.data +
                   2 * (b * p.last_state.stride[0] + d * p.last_state.stride[1] + j * p.last_state.stride[2]);
        s[0] = xr, s[1] = xi;
    }
}

/* ---------------------------------------------------------------- launch */
static inline mvrt_gpu_error_t launch_cx_rows_fwd(const mvrt_scan_params_t &p, int warp_size, mvrt_gpu_stream_t s)
{
    const int64_t N = p.dstate;
    const int lpr = N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : N <= 8 ? 8 : 16;
    const int64_t rows_per_block = (int64_t)MVRT_CXR_WARPS * (warp_size / lpr);
    const dim3 grid((unsigned)((p.batch * p.dim + rows_per_block - 1) / rows_per_block));
    const dim3 block((unsigned)(MVRT_CXR_WARPS * warp_size));
    switch (lpr) {
    case 1: scan_cx_rows_fwd_kernel<1><<<grid, block, 0, s>>>(p); break;
    case 2: scan_cx_rows_fwd_kernel<2><<<grid, block, 0, s>>>(p); break;
    case 4: scan_cx_rows_fwd_kernel<4><<<grid, block, 0, s>>>(p); break;
    case 8: scan_cx_rows_fwd_kernel<8><<<grid, block, 0, s>>>(p); break;
    default: scan_cx_rows_fwd_kernel<16><<<grid, block, 0, s>>>(p); break;
    }
    return mvrt_gpu_get_last_error();
}

} /* namespace cx_rows */
} /* namespace mvrt_scan_gpu */

#endif
