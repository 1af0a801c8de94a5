/* Per-op entry points behind the dispatchers mvrt_cpu_op_run (mv_cpu.c) and
 * mvrt_ref_op_run (mv_reference.c). Each op folder implements its pair:
 *   ops/<op>/<op>_cpu.c        void mvrt_cpu_<op>(const params *, int threads)
 *   ops/<op>/<op>_reference.c  void mvrt_ref_<op>(const params *, double *out)
 * with the contracts of ops/common/mv_cpu.h and ops/common/mv_reference.h.
 * The window op has one function per direction. */
#ifndef MVRT_OPS_MV_KERNELS_H
#define MVRT_OPS_MV_KERNELS_H

#include "ops/common/mv_op_params.h"

#ifdef __cplusplus
extern "C" {
#endif

void mvrt_cpu_layernorm(const mvrt_layernorm_params_t *p, int threads);
void mvrt_cpu_linear(const mvrt_linear_params_t *p, int threads);
void mvrt_cpu_dwconv1d_silu(const mvrt_dwconv1d_params_t *p, int threads);
void mvrt_cpu_attention(const mvrt_attention_params_t *p, int threads);
void mvrt_cpu_conv2d(const mvrt_conv2d_params_t *p, int threads);
void mvrt_cpu_window_partition(const mvrt_window_params_t *p, int threads);
void mvrt_cpu_window_reverse(const mvrt_window_params_t *p, int threads);
void mvrt_cpu_affine_avgpool(const mvrt_affine_avgpool_params_t *p, int threads);
/* "openblas" or "builtin" (ops/linear/linear_cpu.c). */
const char *mvrt_cpu_linear_library(void);

void mvrt_ref_layernorm(const mvrt_layernorm_params_t *p, double *out);
void mvrt_ref_linear(const mvrt_linear_params_t *p, double *out);
void mvrt_ref_dwconv1d_silu(const mvrt_dwconv1d_params_t *p, double *out);
void mvrt_ref_attention(const mvrt_attention_params_t *p, double *out);
void mvrt_ref_conv2d(const mvrt_conv2d_params_t *p, double *out);
void mvrt_ref_window_partition(const mvrt_window_params_t *p, double *out);
void mvrt_ref_window_reverse(const mvrt_window_params_t *p, double *out);
void mvrt_ref_affine_avgpool(const mvrt_affine_avgpool_params_t *p, double *out);

#ifdef __cplusplus
}
#endif
#endif
