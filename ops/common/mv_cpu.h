/* CPU kernels of the MambaVision ops (ops/common/mv_op_params.h), linked
 * into the CPU backend plugin as the static library mvrt_mv_cpu.
 *
 * mvrt_cpu_op_run runs one op to completion on the calling thread plus up to
 * `threads` - 1 OpenMP workers. Parameters are already validated. Returns 0,
 * or -1 for an op kind this library does not implement. The linear uses
 * OpenBLAS (cblas_sgemm) when the build found it, else mvrt's own blocked
 * SGEMM; mvrt_cpu_gemm_library() names which ("openblas" / "builtin"). */
#ifndef MVRT_OPS_MV_CPU_H
#define MVRT_OPS_MV_CPU_H

#include "mv_op_params.h"

#ifdef __cplusplus
extern "C" {
#endif

int mvrt_cpu_op_run(const mvrt_op_params_t *p, int threads);
const char *mvrt_cpu_gemm_library(void);

#ifdef __cplusplus
}
#endif
#endif
