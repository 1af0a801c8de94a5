/* CUDA instantiation of the one GPU kernel source of the selective scan
 * (ops/selective_scan/selective_scan_gpu.cuh) and of the fill kernel, behind
 * a small C interface used by the plugin's C code (backend_cuda.c). */
#include "scan_cuda.h"
#include <stdio.h>
#include <string.h>
#include "ops/selective_scan/selective_scan_gpu.cuh"

using namespace mvrt_scan_gpu;

static config cfg_for(const mvrt_scan_params_t *p, int bwd, const mvrt_cuda_scan_tuning_t *t)
{
    return make_config(*p, bwd != 0, t->smem_limit, MVRT_WARP_SIZE, t->tpr_override);
}

extern "C" cudaError_t mvrt_cuda_scan_fwd(const mvrt_scan_params_t *p, const mvrt_cuda_scan_tuning_t *t,
                                          cudaStream_t s)
{
    const config c = cfg_for(p, 0, t);
    if (c.smem > t->smem_limit) return cudaErrorInvalidConfiguration;
    const kparams k = make_kparams(*p, c);
    switch (p->input_dtype) {
    case MVRT_SCAN_F32: return launch_fwd_typed<float>(k, c, s);
    case MVRT_SCAN_F16: return launch_fwd_typed<mvrt_gpu_half>(k, c, s);
    case MVRT_SCAN_BF16: return launch_fwd_typed<mvrt_gpu_bf16>(k, c, s);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" size_t mvrt_cuda_scan_bwd_workspace(const mvrt_scan_params_t *p, const mvrt_cuda_scan_tuning_t *t)
{
    const config c = cfg_for(p, 1, t);
    return make_ws_layout(*p, c).total;
}

extern "C" cudaError_t mvrt_cuda_scan_bwd(const mvrt_scan_params_t *p, const mvrt_cuda_scan_tuning_t *t,
                                          cudaStream_t s)
{
    const config c = cfg_for(p, 1, t);
    if (c.smem > t->smem_limit) return cudaErrorInvalidConfiguration;
    const ws_layout w = make_ws_layout(*p, c);
    if (p->workspace_bytes < w.total || (w.total > 0 && p->workspace == NULL)) return cudaErrorInvalidValue;
    kparams k = make_kparams(*p, c);
    char *ws = (char *)p->workspace;
    k.nsub = (int)w.nsub;
    k.ws_state = (float *)(ws + w.state_off);
    k.ws_row = (float *)(ws + w.row_off);
    k.ws_bc = w.bc_off < w.total ? (float *)(ws + w.bc_off) : NULL;
    switch (p->input_dtype) {
    case MVRT_SCAN_F32: return launch_bwd_typed<float>(k, c, s);
    case MVRT_SCAN_F16: return launch_bwd_typed<mvrt_gpu_half>(k, c, s);
    case MVRT_SCAN_BF16: return launch_bwd_typed<mvrt_gpu_bf16>(k, c, s);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" void mvrt_cuda_scan_describe(const mvrt_scan_params_t *p, int bwd, const mvrt_cuda_scan_tuning_t *t,
                                        char *buf, size_t n)
{
    const config c = cfg_for(p, bwd, t);
    snprintf(buf, n, "npt=%d tpr=%d tb=%d ch=%d ntiles=%d threads=%d ts=%d smem=%zu", c.npt, c.tpr, c.tb, c.ch,
             c.ntiles, c.threads, c.ts, c.smem);
}

extern "C" cudaError_t mvrt_cuda_fill_pattern(void *dst, size_t bytes, const void *pattern, size_t psize,
                                              cudaStream_t s)
{
    if (psize == 1) {
        return cudaMemsetAsync(dst, *(const unsigned char *)pattern, bytes, s);
    }
    const int64_t count = (int64_t)(bytes / psize);
    if (count == 0) return cudaSuccess;
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
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
