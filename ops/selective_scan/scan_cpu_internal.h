/* Internal interface between the run-time dispatcher (scan_cpu.c) and the
 * per-ISA builds of the kernels (scan_cpu_avx512.c, scan_cpu_avx2.c,
 * scan_cpu_generic.c, all made from scan_cpu_impl.h). Not installed. */
#ifndef MVRT_OPS_SCAN_CPU_INTERNAL_H
#define MVRT_OPS_SCAN_CPU_INTERNAL_H

#include <stddef.h>

#include "scan_params.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MVRT_CPU_SCAN_DECLARE(isa)                                                   \
    void mvrt_cpu_scan_fwd_##isa(const mvrt_scan_params_t *p, int num_threads);    \
    size_t mvrt_cpu_scan_bwd_ws_##isa(const mvrt_scan_params_t *p, int num_threads); \
    void mvrt_cpu_scan_bwd_##isa(const mvrt_scan_params_t *p, int num_threads);

MVRT_CPU_SCAN_DECLARE(generic)
#if defined(MVRT_SCAN_HAVE_X86)
MVRT_CPU_SCAN_DECLARE(avx2)
MVRT_CPU_SCAN_DECLARE(avx512)
#endif

/* Thread count actually used: n <= 0 means "all" (OpenMP's default). */
static inline int mvrt_cpu_scan_resolve_threads(int n)
{
#ifdef _OPENMP
    if (n <= 0)
        n = omp_get_max_threads();
    return n < 1 ? 1 : n;
#else
    (void)n;
    return 1;
#endif
}

#ifdef __cplusplus
}
#endif
#endif
