/* CPU selective scan with a complex A (p->complex_a; f32 inputs): OpenMP
 * threads, bitwise the same result for every thread count, no allocation
 * (the backward's scratch is p->workspace: mvrt_cpu_scan_bwd_ws_complex
 * bytes for num_threads; with less, fewer threads run). Semantics and the
 * gradient formulas: scan_cpu_complex.c. */
#ifndef MVRT_OPS_SCAN_CPU_COMPLEX_H
#define MVRT_OPS_SCAN_CPU_COMPLEX_H

#include "scan_params.h"

#ifdef __cplusplus
extern "C" {
#endif

void mvrt_cpu_scan_fwd_complex(const mvrt_scan_params_t *p, int num_threads);
size_t mvrt_cpu_scan_bwd_ws_complex(const mvrt_scan_params_t *p, int num_threads);
void mvrt_cpu_scan_bwd_complex(const mvrt_scan_params_t *p, int num_threads);

#ifdef __cplusplus
}
#endif
#endif
