/* CPU kernels of the selective scan (library mvrt_scan_cpu).
 * Vectorized (AVX-512 / AVX2+FMA / portable), chosen at run time from the
 * CPU's features; multi-threaded with OpenMP over (batch, channel-block)
 * tasks. Parameters are validated by the runtime before these are called.
 * No allocation: the backward's scratch is p->workspace. */
#ifndef MVRT_OPS_SCAN_CPU_H
#define MVRT_OPS_SCAN_CPU_H

#include "scan_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Name of the instruction set in use: "avx512", "avx2", "generic". */
const char *mvrt_cpu_scan_isa(void);
/* Forces an ISA for tests/benchmarks ("avx512", "avx2", "generic", or NULL =
 * best). Returns 0 on success, -1 if the CPU lacks it. Not thread-safe. */
int mvrt_cpu_scan_force_isa(const char *isa);
/* SIMD width in f32 lanes of the ISA in use (16, 8 or 4). */
int mvrt_cpu_scan_lanes(void);

void mvrt_cpu_scan_fwd(const mvrt_scan_params_t *p, int num_threads);
/* Workspace bytes for the backward with this many threads. */
size_t mvrt_cpu_scan_bwd_workspace_size(const mvrt_scan_params_t *p, int num_threads);
void mvrt_cpu_scan_bwd(const mvrt_scan_params_t *p, int num_threads);

#ifdef __cplusplus
}
#endif
#endif
