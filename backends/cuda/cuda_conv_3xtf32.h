/* conv2d as CUTLASS's implicit-GEMM convolution on tensor cores, for the
 * CUDA backend: 3xTF32 for math fp32 (fp32 accuracy), TF32 for math fast,
 * bf16 / fp16 operands with fp32 accumulation and output for math bf16 /
 * fp16 (the conv
 * hook of
 * backends/gpu_common/mv_gpu_launch.h). Built with the CUTLASS headers for
 * the sm_80+ targets (as cuda_gemm_3xtf32.h); without them every call
 * declines and the shared im2col path runs.
 *
 * mvrt_cuda_conv_3xtf32_scratch: bytes of scratch the conv needs for p
 * (0 for a conv between two 16-bit maps whose filters the graph prepared:
 * weight16), or -1 when it will decline p (fewer than 8192 output
 * positions per op unless MVRT_CUDA_CONV=implicit, input or output channels
 * not multiples of 4, or of 8 in 16-bit math, a 1x1 stride-1 unpadded conv that the shared path runs
 * as a plain GEMM). A pure function of the sizes (and the knob, read once).
 *
 * mvrt_cuda_conv_3xtf32: the whole op y = act(conv(x, w) + bias) + residual
 * (NCHW, mvrt_conv2d_params_t) queued on `s` in chunks of images: x to NHWC,
 * the convolution into NHWC, then NCHW with the epilogue. The 16-bit map
 * forms (x_nhwc16 / y_nhwc16: bf16 / fp16 math, channels multiples of 4, no
 * activation together with a residual, every batch size) read and write
 * the NHWC 16-bit maps directly with the epilogue inside CUTLASS; only the
 * filter (KRSC, 16-bit) and the bias go to the scratch, unless the graph
 * prepared them (weight16, bias_stored), plus x when it is NCHW floats. No other path serves those forms: a failure there is
 * MVRT_GPU_GEMM_FAILED, never DECLINED. `scratch`: at
 * least the bytes above (may be NULL where they are 0). Allocates nothing, does not synchronize (legal
 * during graph capture). Returns MVRT_GPU_GEMM_OK, MVRT_GPU_GEMM_DECLINED
 * (before writing y: the caller runs the im2col path) or
 * MVRT_GPU_GEMM_FAILED with a message in msg. Thread-safe. */
#ifndef MVRT_BACKENDS_CUDA_CONV_3XTF32_H
#define MVRT_BACKENDS_CUDA_CONV_3XTF32_H

#include <stddef.h>
#include <stdint.h>
#include "../gpu_common/mv_gpu_launch.h"

#ifdef __cplusplus
extern "C" {
#endif

int64_t mvrt_cuda_conv_3xtf32_scratch(const mvrt_conv2d_params_t *p);
int mvrt_cuda_conv_3xtf32(cudaStream_t s, const mvrt_conv2d_params_t *p, void *scratch, char *msg, size_t msg_n);
/* The same, with the 16-bit map forms on the sm_90a kernels of
 * cuda_conv16_sm90.h where they take the sizes (the CUDA backend queues
 * this one on devices where mvrt_cuda_conv16_sm90_usable() holds). */
int mvrt_cuda_conv_3xtf32_sm90(cudaStream_t s, const mvrt_conv2d_params_t *p, void *scratch, char *msg,
                               size_t msg_n);

#ifdef __cplusplus
}
#endif
#endif
