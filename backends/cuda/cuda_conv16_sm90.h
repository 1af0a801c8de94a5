/* 16-bit (bf16 / fp16) NHWC convolutions on Hopper's wgmma and TMA
 * (CUTLASS 3 implicit-GEMM conv kernels, im2col through TMA), for the 16-bit
 * map forms of the CUDA backend's conv2d (cuda_conv_3xtf32.h calls it for
 * each chunk of images where the device runs sm_90a code).
 *
 *   y (nb, P, Q, K) = act(conv(x (nb, H, W, cp), w (K, R, R, cp)) + bias) + residual
 *
 * x, w, residual and y: 16-bit of type t16 (MVRT_STORAGE16_BF16 / _F16),
 * NHWC / KRSC, dense; bias: K floats (16-byte aligned); residual may be
 * NULL and is only given with act NONE (the conv2d contract); act: NONE,
 * RELU or GELU_TANH (p->activation). fp32 accumulation, y rounded once
 * to nearest even after the epilogue. K is p->out_channels, which the
 * caller sets to the channels y stores (y_map_channels: filters and bias
 * past the model's are zeros); cp (the staged input channels) and K must
 * be multiples of 8 (TMA's 16-byte rows).
 *
 * Why: the Sm80 kernels of cuda_conv_3xtf32.cu (mma.sync) reach about a
 * quarter of Hopper's 16-bit peak on MambaVision's convs (T, batch 256,
 * H200: 4.0 of 11.6 ms per batch for 0.92 TFLOP); wgmma kernels fed by TMA
 * are Hopper's fast path.
 *
 * Built only for sm_90a with the CUTLASS headers and their tools/util
 * include directory (like cuda_gemm16_sm90);
 * otherwise, or on other devices, mvrt_cuda_conv16_sm90_usable() is 0.
 * mvrt_cuda_conv16_sm90: queued on `s`; allocates nothing, does not
 * synchronize (legal during graph capture). Returns MVRT_GPU_GEMM_OK,
 * MVRT_GPU_GEMM_DECLINED (nothing written: sizes the kernels do not take)
 * or MVRT_GPU_GEMM_FAILED with a message in msg. Thread-safe. */
#ifndef MVRT_BACKENDS_CUDA_CONV16_SM90_H
#define MVRT_BACKENDS_CUDA_CONV16_SM90_H

#include <stddef.h>
#include <stdint.h>
#include "../gpu_common/mv_gpu_launch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The current device's multiprocessor count (the tile choices at few
 * output tiles here and in cuda_conv_3xtf32.cu); 0 where it cannot be
 * read (the error is cleared). */
int mvrt_cuda_current_sm_count(void);
/* 1 when the sm_90a kernels are built and load on the current device. */
int mvrt_cuda_conv16_sm90_usable(void);
int mvrt_cuda_conv16_sm90(cudaStream_t s, const mvrt_conv2d_params_t *p, int t16, int nb, int cp, const void *x,
                          const void *w, const float *bias, const void *residual, void *y, char *msg, size_t msg_n);

#ifdef __cplusplus
}
#endif
#endif
