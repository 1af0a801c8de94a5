/* Launchers of the one GPU kernel source of the selective scan
 * (ops/selective_scan/selective_scan_gpu.cuh) and of the fill kernel, behind
 * a small C interface used by the plugins' C code (gpu_backend_impl.h).
 * Compiled by nvcc for the CUDA backend (MVRT_GPU_HOST_CUDA) and by clang as
 * HIP for the HIP backend (MVRT_GPU_HOST_HIP); gpu_host_api.h maps the few
 * runtime names used here.
 *
 * Path choice: a complex A (p->complex_a) always takes the complex kernels
 * (the only ones that run it): the forward of many short rows (N <= 16,
 * L <= 256, at least 128 rows per SM) the row kernel
 * (selective_scan_gpu_complex_rows.cuh: a lane per state, one step after
 * the other), every other forward and every backward the chunked
 * warp-scan kernels in complex arithmetic (selective_scan_gpu_complex.cuh:
 * 2 steps per lane for L <= 64, else 8 forward / 4 backward);
 * measurements in docs/performance.md, "Complex A".
 * Real A, forward: for few rows of short sequences (at most 4 rows
 * per SM, L <= 256, N <= 16) the warp-scan kernel (a block per row,
 * parallel in L: selective_scan_gpu_wscan.cuh); for N > 16, and for few
 * long rows (L >= 1024, at most 24 rows per SM), its chunked form (a warp
 * per row, parallel in L, 256-step chunks, B and C staged in shared
 * memory; use_wscan_chunks has the measurements); else the staged kernel (one thread per channel row and
 * segment of L, N <= 16, variable B and C, unit L-strides) wherever it
 * applies, else the row kernels (one thread per channel row,
 * N <= 16, variable B and C, many rows) wherever they apply, else the lanes
 * kernel (one lane per state, N <= 16, at most 8 rows per SM: e.g. batch
 * 1), else the general kernels. Backward: the chunked warp-scan backward
 * where the forward takes either warp-scan form (N <= 256), else the
 * staged backward (1, 2 or 4 lanes per channel row, 3 <= N <= 16,
 * variable B and C, unit L-strides),
 * else the lanes backward kernel (one lane per state, N <= 16, variable B
 * and C), else the general kernels (MVRT_CUDA_SCAN_ROWS moves it to the row
 * kernels).
 * Tuning knobs read once from the environment (benchmarks compare variants;
 * MVRT_HIP_ instead of MVRT_CUDA_ on HIP):
 *   MVRT_CUDA_SCAN_PATH=general  force the general kernels
 *   MVRT_CUDA_SCAN_PATH=lanes    the lanes kernels for every problem they support
 *   MVRT_CUDA_SCAN_PATH=wscan    the warp-scan forward for every problem it supports
 *   MVRT_CUDA_SCAN_PATH=wscan-chunks  its chunked form (any N, any L) for every problem
 *                                it supports, forward and backward
 *   MVRT_CUDA_SCAN_WSCAN=0       no warp-scan forward (the paths it replaced)
 *   MVRT_CUDA_SCAN_WSCAN_FAST=0  the warp-scan forward's general kernel also
 *                                where its unit-stride form applies
 *   MVRT_CUDA_SCAN_PATH=staged   the staged forward for every problem it supports
 *                                and the staged backward (by default not for few rows)
 *   MVRT_CUDA_SCAN_PATH=staged-chunks / staged-whole   only that mode of it
 *   MVRT_CUDA_SCAN_BWD_T=8|16|32 chunk length of the staged backward
 *   MVRT_CUDA_SCAN_BWD_LPR=1|2|4 lanes per row of the staged backward
 *   MVRT_CUDA_SCAN_ROWS=32..256  channels per block of the row kernels (forward
 *                                and backward: also moves the backward there)
 *   MVRT_CUDA_SCAN_LPR=1|2|4     lanes per row of the staged kernel's chunks
 *   MVRT_CUDA_SCAN_CX=rows       complex A: the row forward for every N <= 16
 *   MVRT_CUDA_SCAN_CX_BC_MB=N    complex A: cap the backward's variable dB / dC
 *                                partials at N MiB (default 512), so that a test
 *                                reaches tiles of several 8-row groups
 * A thread-per-row override (tuning->tpr_override) also selects the general
 * kernels, whose layouts it describes. */
#include "scan_gpu_launch.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/selective_scan/selective_scan_gpu.cuh"
#include "ops/selective_scan/selective_scan_gpu_complex.cuh"
#include "ops/selective_scan/selective_scan_gpu_complex_rows.cuh"

using namespace mvrt_scan_gpu;

/* return FN<element type>(...) for the problem's input dtype */
#define MVRT_SCAN_BY_DTYPE(FN, ...)                                                   \
    switch (p->input_dtype) {                                                         \
    case MVRT_SCAN_F32: return FN<float>(__VA_ARGS__);                                \
    case MVRT_SCAN_F16: return FN<mvrt_gpu_half>(__VA_ARGS__);                        \
    case MVRT_SCAN_BF16: return FN<mvrt_gpu_bf16>(__VA_ARGS__);                       \
    default: return gpuErrorInvalidValue;                                             \
    }

namespace {
struct knobs {
    int force_general;
    int force_lanes;
    int force_wscan;
    int force_wscan_chunks;
    int wscan_off;
    int wscan_fast_off;
    int force_staged;
    int staged_lpr;
    int rows_max;
    int bwd_t;
    int bwd_lpr;
    size_t cx_bc_bytes;
    int cx_rows; /* complex A: every forward of N <= 16 on the row kernel */
};
const knobs &get_knobs()
{
    static knobs k = [] {
        knobs v;
        const char *s = getenv(MVRT_GPU_ENV_PREFIX "SCAN_PATH");
        v.force_general = s && strcmp(s, "general") == 0;
        v.force_lanes = s && strcmp(s, "lanes") == 0;
        v.force_wscan = s && strcmp(s, "wscan") == 0;
        v.force_wscan_chunks = s && strcmp(s, "wscan-chunks") == 0;
        v.force_staged = !s ? STAGED_AUTO
                         : strcmp(s, "staged") == 0 ? STAGED_ANY
                         : strcmp(s, "staged-chunks") == 0 ? STAGED_CHUNKS
                         : strcmp(s, "staged-whole") == 0 ? STAGED_WHOLE : STAGED_AUTO;
        s = getenv(MVRT_GPU_ENV_PREFIX "SCAN_LPR");
        v.staged_lpr = s ? atoi(s) : 0;
        s = getenv(MVRT_GPU_ENV_PREFIX "SCAN_ROWS");
        v.rows_max = s ? atoi(s) : 0;
        s = getenv(MVRT_GPU_ENV_PREFIX "SCAN_WSCAN");
        v.wscan_off = s && strcmp(s, "0") == 0;
        s = getenv(MVRT_GPU_ENV_PREFIX "SCAN_WSCAN_FAST");
        v.wscan_fast_off = s && strcmp(s, "0") == 0;
        s = getenv(MVRT_GPU_ENV_PREFIX "SCAN_BWD_T");
        v.bwd_t = s ? atoi(s) : 0;
        s = getenv(MVRT_GPU_ENV_PREFIX "SCAN_BWD_LPR");
        v.bwd_lpr = s ? atoi(s) : 0;
        s = getenv(MVRT_GPU_ENV_PREFIX "SCAN_CX_BC_MB");
        v.cx_bc_bytes = s && atoi(s) > 0 ? (size_t)atoi(s) << 20 : 0;
        s = getenv(MVRT_GPU_ENV_PREFIX "SCAN_CX");
        v.cx_rows = s && strcmp(s, "rows") == 0;
        return v;
    }();
    return k;
}
int sm_count()
{
    static int cache[64];
    int dev = 0;
    if (gpuGetDevice(&dev) != gpuSuccess || dev < 0) dev = 0;
    if (dev < 64 && cache[dev] > 0) return cache[dev];
    int n = 0;
    if (gpuDeviceGetAttribute(&n, gpuDevAttrMultiProcessorCount, dev) != gpuSuccess || n <= 0) n = 80;
    if (dev < 64) cache[dev] = n;
    return n;
}
/* forward: the staged kernel's plan (mode 0: not used) */
staged_config staged_cfg_for(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    const knobs &kn = get_knobs();
    if (kn.force_general || kn.force_lanes || kn.rows_max > 0 || t->tpr_override != 0) {
        staged_config none;
        memset(&none, 0, sizeof none);
        return none;
    }
    return make_staged_config(*p, t->smem_limit, t->warp_size, sm_count(), kn.force_staged, kn.staged_lpr);
}
bool use_row(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    const int rows = get_knobs().rows_max; /* an explicit tile width asks for the row kernels */
    if (get_knobs().force_general || get_knobs().force_lanes || t->tpr_override != 0) return false;
    return rows > 0 ? row_path_supported(*p, 0) : row_path_supported(*p, sm_count());
}
/* backward on the row kernels: only when a tile width is asked for, or for
 * what the lanes backward does not take (measured on an H100, MambaVision
 * batch-256 rows, ms, lanes vs row: f32 0.458 / 0.288 / 0.658 / 0.399 /
 * 0.284 vs 0.587 / 0.312 / 0.630 / 0.391 / 0.281; bf16 0.460 / 0.288 /
 * 0.663 / 0.408 / 0.286 vs 0.827 / 0.361 / 0.993 / 0.461 / 0.415) */
bool use_row_bwd(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    return use_row(p, t) && (get_knobs().rows_max > 0 || !lanes_bwd_supported(*p));
}
/* backward: the staged kernel's plan (ok 0: not used) */
staged_bwd_config staged_bwd_cfg_for(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    const knobs &kn = get_knobs();
    if (kn.force_general || kn.force_lanes || kn.rows_max > 0 || t->tpr_override != 0) {
        staged_bwd_config none;
        memset(&none, 0, sizeof none);
        return none;
    }
    return make_staged_bwd_config(*p, t->smem_limit, t->warp_size, sm_count(), kn.force_staged == STAGED_ANY, kn.bwd_t,
                                  kn.bwd_lpr);
}
/* forward: the warp-scan kernel for few rows of short sequences (unless a
 * knob asks for another family) */
bool use_wscan(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    const knobs &kn = get_knobs();
    if (kn.force_general || kn.force_lanes || kn.force_staged != STAGED_AUTO || kn.wscan_off || kn.rows_max > 0 ||
        kn.force_wscan_chunks || t->tpr_override != 0)
        return false;
    return kn.force_wscan ? wscan_path_supported(*p) : wscan_path_preferred(*p, sm_count());
}
/* forward: the chunked warp-scan kernel for many states (N > 16, where
 * only the general kernel goes otherwise) and for long rows too few for
 * the staged kernel's thread per row (L >= 1024, at most 24 rows per SM).
 * H200, fp32 fwd ms, chunks / staged: 1 536 rows of L 4096 (a Mamba
 * layer at batch 1) 0.241 / 0.487; 12 288 rows (batch 8) 1.364 / 0.847.
 * Between them the crossover is interpolated from the two kernels'
 * update rates (chunks ~420-600 G/s flat, staged ~rows-proportional up to
 * ~950), not measured: about 28 rows per SM. */
bool use_wscan_chunks(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    const knobs &kn = get_knobs();
    if (wscan_chunks_smem(p->dstate) > t->smem_limit) return false;
    if (kn.force_wscan_chunks) return wscan_chunks_supported(*p);
    if (kn.force_general || kn.force_lanes || kn.force_staged != STAGED_AUTO || kn.force_wscan || kn.rows_max > 0 ||
        t->tpr_override != 0)
        return false;
    return wscan_chunks_supported(*p) &&
           (p->dstate > 16 || (p->seqlen >= 1024 && p->batch * p->dim <= 24 * (int64_t)sm_count()));
}
/* backward: the chunked warp-scan backward where the forward takes either
 * warp-scan form (N > 16, few long rows, few short rows; measurements in
 * PERF_NOTES, session 49), when its shared memory fits (N <= 256). Few
 * short rows, H200, bwd ms, lanes backward / this: MambaVision-T stage 3
 * at batch 1 (160 rows, L 196, N 8) f32 0.075-0.078 / 0.041, bf16
 * 0.077-0.082 / 0.040-0.042; with many rows it loses (T stage 3 at batch
 * 256: staged 0.26-0.29 / 0.52-0.55). */
bool use_wscan_chunks_bwd(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    if (!wscan_chunks_bwd_supported(*p) || wscan_chunks_bwd_rs(p->dstate, t->smem_limit) == 0) return false;
    if (get_knobs().force_wscan_chunks) return true;
    return use_wscan_chunks(p, t) || use_wscan(p, t);
}
/* forward (the backward's lanes kernel: use_lanes_bwd) */
bool use_lanes(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    if (get_knobs().force_general || t->tpr_override != 0) return false;
    return get_knobs().force_lanes ? lanes_path_supported(*p) : lanes_path_preferred(*p, sm_count());
}
/* backward: every problem it supports (N <= 16, variable B and C), unless a
 * knob asks for another family */
bool use_lanes_bwd(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    const knobs &kn = get_knobs();
    if (kn.force_general || kn.rows_max > 0 || t->tpr_override != 0) return false;
    return lanes_bwd_supported(*p);
}
lanes_bwd_config lanes_bwd_cfg_for(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    return make_lanes_bwd_config(*p, t->smem_limit, t->warp_size);
}
/* complex A, forward: the row kernel for many short rows (cx_rows_preferred
 * has the measurements), else the chunked one */
bool use_cx_rows(const mvrt_scan_params_t *p)
{
    if (get_knobs().cx_rows) return cx_rows::cx_rows_supported(*p);
    return cx_rows::cx_rows_preferred(*p, sm_count());
}
row_config row_cfg_for(const mvrt_scan_params_t *p, int bwd, const mvrt_gpu_scan_tuning_t *t)
{
    const knobs &kn = get_knobs();
    return make_row_config(*p, bwd != 0, t->smem_limit, t->warp_size, sm_count(), kn.rows_max);
}
} // namespace

static config cfg_for(const mvrt_scan_params_t *p, int bwd, const mvrt_gpu_scan_tuning_t *t)
{
    return make_config(*p, bwd != 0, t->smem_limit, t->warp_size, t->tpr_override);
}

extern "C" gpuError_t mvrt_gpu_scan_fwd(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t,
                                          gpuStream_t s)
{
    if (p->complex_a)
        return use_cx_rows(p) ? cx_rows::launch_cx_rows_fwd(*p, t->warp_size, s)
                              : cx::launch_cx_fwd(*p, t->smem_limit, s);
    if (use_wscan(p, t)) MVRT_SCAN_BY_DTYPE(launch_fwd_wscan_typed, *p, !get_knobs().wscan_fast_off, t->dependent_launch != 0, s);
    if (use_wscan_chunks(p, t)) MVRT_SCAN_BY_DTYPE(launch_fwd_wscan_chunks_typed, *p, s);
    {
        /* a plan (mode != 0) always fits t->smem_limit */
        const staged_config c = staged_cfg_for(p, t);
        if (c.mode != 0) MVRT_SCAN_BY_DTYPE(launch_fwd_staged_typed, c, s);
    }
    if (use_row(p, t)) {
        const row_config c = row_cfg_for(p, 0, t);
        if (c.smem <= t->smem_limit) {
            const kparams k = make_row_kparams(*p, c);
            MVRT_SCAN_BY_DTYPE(launch_fwd_row_typed, k, c, s);
        }
    }
    if (use_lanes(p, t)) {
        MVRT_SCAN_BY_DTYPE(launch_fwd_lanes_typed, *p, t->warp_size, s);
    }
    const config c = cfg_for(p, 0, t);
    if (c.smem > t->smem_limit) return gpuErrorInvalidConfiguration;
    const kparams k = make_kparams(*p, c);
    MVRT_SCAN_BY_DTYPE(launch_fwd_typed, k, c, s);
}

extern "C" size_t mvrt_gpu_scan_bwd_workspace(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t)
{
    if (p->complex_a) return cx::cx_plan(*p, t->smem_limit, get_knobs().cx_bc_bytes).total;
    if (use_wscan_chunks_bwd(p, t))
        return make_wscan_bwd_ws_layout(*p, make_wscan_bwd_config(*p, t->smem_limit, sm_count())).total;
    if (use_row_bwd(p, t)) {
        const row_config c = row_cfg_for(p, 1, t);
        if (c.smem <= t->smem_limit) return make_row_ws_layout(*p, c).total;
    }
    {
        const staged_bwd_config c = staged_bwd_cfg_for(p, t);
        if (c.ok) return make_staged_bwd_ws_layout(*p, c).total;
    }
    if (use_lanes_bwd(p, t)) {
        const lanes_bwd_config c = lanes_bwd_cfg_for(p, t);
        if (c.smem <= t->smem_limit) return make_lanes_bwd_ws_layout(*p, c).total;
    }
    const config c = cfg_for(p, 1, t);
    return make_ws_layout(*p, c).total;
}

/* Points k at the regions of the caller's workspace; false if it is too small. */
static bool bind_workspace(kparams &k, const ws_layout &w, const mvrt_scan_params_t *p)
{
    if (p->workspace_bytes < w.total || (w.total > 0 && p->workspace == NULL)) return false;
    char *ws = (char *)p->workspace;
    k.ws_state = (float *)(ws + w.state_off);
    k.ws_row = (float *)(ws + w.row_off);
    k.ws_bc = w.bc_off < w.total ? (float *)(ws + w.bc_off) : NULL;
    return true;
}

extern "C" gpuError_t mvrt_gpu_scan_bwd(const mvrt_scan_params_t *p, const mvrt_gpu_scan_tuning_t *t,
                                          gpuStream_t s)
{
    if (p->complex_a) {
        const cx::cx_plan_t plan = cx::cx_plan(*p, t->smem_limit, get_knobs().cx_bc_bytes);
        if (p->workspace_bytes < plan.total || p->workspace == NULL) return gpuErrorInvalidValue;
        return cx::launch_cx_bwd(*p, plan, s);
    }
    if (use_wscan_chunks_bwd(p, t)) {
        const wscan_bwd_config c = make_wscan_bwd_config(*p, t->smem_limit, sm_count());
        kparams k = make_wscan_bwd_kparams(*p, c);
        if (!bind_workspace(k, make_wscan_bwd_ws_layout(*p, c), p)) return gpuErrorInvalidValue;
        MVRT_SCAN_BY_DTYPE(launch_bwd_wscan_chunks_typed, k, c, s);
    }
    if (use_row_bwd(p, t)) {
        const row_config c = row_cfg_for(p, 1, t);
        if (c.smem <= t->smem_limit) {
            const ws_layout w = make_row_ws_layout(*p, c);
            kparams k = make_row_kparams(*p, c);
            if (!bind_workspace(k, w, p)) return gpuErrorInvalidValue;
            MVRT_SCAN_BY_DTYPE(launch_bwd_row_typed, k, c, s);
        }
    }
    {
        /* a plan (ok != 0) always fits t->smem_limit */
        staged_bwd_config c = staged_bwd_cfg_for(p, t);
        if (c.ok) {
            if (!bind_workspace(c.sk.k, make_staged_bwd_ws_layout(*p, c), p)) return gpuErrorInvalidValue;
            MVRT_SCAN_BY_DTYPE(launch_bwd_staged_typed, c, s);
        }
    }
    if (use_lanes_bwd(p, t)) {
        const lanes_bwd_config c = lanes_bwd_cfg_for(p, t);
        if (c.smem <= t->smem_limit) {
            const ws_layout w = make_lanes_bwd_ws_layout(*p, c);
            kparams k = make_lanes_bwd_kparams(*p, c);
            if (!bind_workspace(k, w, p)) return gpuErrorInvalidValue;
            MVRT_SCAN_BY_DTYPE(launch_bwd_lanes_typed, k, c, s);
        }
    }
    const config c = cfg_for(p, 1, t);
    if (c.smem > t->smem_limit) return gpuErrorInvalidConfiguration;
    const ws_layout w = make_ws_layout(*p, c);
    kparams k = make_kparams(*p, c);
    k.nsub = (int)w.nsub;
    if (!bind_workspace(k, w, p)) return gpuErrorInvalidValue;
    MVRT_SCAN_BY_DTYPE(launch_bwd_typed, k, c, s);
}

extern "C" gpuError_t mvrt_gpu_fill_pattern(void *dst, size_t bytes, const void *pattern, size_t psize,
                                              gpuStream_t s)
{
    if (psize == 1) {
        return gpuMemsetAsync(dst, *(const unsigned char *)pattern, bytes, s);
    }
    const int64_t count = (int64_t)(bytes / psize);
    if (count == 0) return gpuSuccess;
    const int64_t blocks64 = (count + 255) / 256;
    const unsigned blocks = (unsigned)(blocks64 < 65536 ? blocks64 : 65536);
    if (psize == 2) {
        uint16_t v;
        memcpy(&v, pattern, 2);
        fill_kernel<uint16_t><<<blocks, 256, 0, s>>>((uint16_t *)dst, count, v);
    } else if (psize == 4) {
        uint32_t v;
        memcpy(&v, pattern, 4);
        fill_kernel<uint32_t><<<blocks, 256, 0, s>>>((uint32_t *)dst, count, v);
    } else {
        return gpuErrorInvalidValue;
    }
    return gpuGetLastError();
}
