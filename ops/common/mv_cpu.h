/* CPU kernels of the MambaVision ops (ops/common/mv_op_params.h), linked
 * into the CPU backend plugin as the static library mvrt_mv_cpu.
 *
 * mvrt_cpu_op_run runs one op to completion on the calling thread plus up to
 * `threads` - 1 OpenMP workers. Parameters are already validated. Returns 0,
 * -1 for an op kind this library does not implement, or -2 when the op
 * needs scratch (mvrt_cpu_op_scratch_bytes > 0) and `scratch` is NULL.
 * The 16-bit storage forms, bf16 or fp16 (layernorm y16, linear a16 /
 * y16, the NHWC 16-bit maps of conv2d, window and pool: the graph's 16-bit
 * activations) compute in fp32 exactly as the float forms
 * do: a 16-bit A is widened (exactly) into scratch, a 16-bit output is
 * computed into scratch and rounded to nearest even once, after bias and
 * activation (and a conv's residual), as the GPU backends store it. The linear uses
 * OpenBLAS (cblas_sgemm) when the build found it, else mvrt's own blocked
 * SGEMM; mvrt_cpu_gemm_library() names which ("openblas" / "builtin"). */
#ifndef MVRT_OPS_MV_CPU_H
#define MVRT_OPS_MV_CPU_H

#include <stddef.h>
#include "mv_op_params.h"

#ifdef __cplusplus
extern "C" {
#endif

int mvrt_cpu_op_run(const mvrt_op_params_t *p, void *scratch, int threads);
/* Bytes of scratch mvrt_cpu_op_run needs for p: fp32 copies of the
 * 16-bit operands of the storage forms; 0 for every other op. */
size_t mvrt_cpu_op_scratch_bytes(const mvrt_op_params_t *p);
const char *mvrt_cpu_gemm_library(void);

#ifdef __cplusplus
}
#endif
#endif
