/* Double-precision reference of the selective scan, forward and backward,
 * written as plainly as possible from shared/spec/selective_scan.md so that
 * it can be checked by reading. Tests and tools compare every backend with
 * it; it is not part of libmvrt and is not fast (the backward keeps every
 * state: O(Bt*Dm*N*L) is fine for a reference).
 *
 * All arrays are contiguous, row-major, float64:
 *   u, delta, z, out, dout, du, ddelta, dz   (batch, dim, seqlen)
 *   A, dA                                    (dim, dstate)
 *   B, C, dB, dC  constant:                  (dim, dstate)
 *                 variable:                  (batch, groups, dstate, seqlen)
 *                 (groups = 1 is the same memory as (batch, dstate, seqlen))
 *   D, delta_bias, dD, ddelta_bias           (dim)
 *   last_state                               (batch, dim, dstate)
 * Optional inputs D, z, delta_bias are absent when NULL. */
#ifndef MVRT_OPS_SCAN_REFERENCE_H
#define MVRT_OPS_SCAN_REFERENCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mvrt_scan_ref_problem {
    int64_t batch, dim, seqlen, dstate, groups;  /* all >= 1; dim % groups == 0 */
    int b_variable, c_variable;                  /* 0: constant (dim, dstate) */
    int delta_softplus;
    const double *u, *delta, *A, *B, *C;
    const double *D, *z, *delta_bias;            /* optional (NULL) */
} mvrt_scan_ref_problem_t;

typedef struct mvrt_scan_ref_grads {
    double *du, *ddelta, *dA, *dB, *dC;
    double *dD;          /* written iff D is given (may be NULL otherwise) */
    double *dz;          /* written iff z is given */
    double *ddelta_bias; /* written iff delta_bias is given */
} mvrt_scan_ref_grads_t;

/* The softplus of the spec: log1p(exp(v)) for v <= 20, v above. */
double mvrt_scan_ref_softplus(double v);

/* 0 when the dims are usable (positive, dim % groups == 0, required
 * pointers present), -1 otherwise. */
int mvrt_scan_ref_check(const mvrt_scan_ref_problem_t *p);

/* Forward: out (required) and last_state = h_{L-1} (optional, NULL to skip).
 * Returns 0, or -1 for an unusable problem. */
int mvrt_scan_ref_forward(const mvrt_scan_ref_problem_t *p, double *out, double *last_state);

/* Backward: gradients of sum(out * dout) with respect to every input.
 * Every gradient array is overwritten (not accumulated into).
 * Returns 0, -1 for an unusable problem, -2 when memory runs out. */
int mvrt_scan_ref_backward(const mvrt_scan_ref_problem_t *p, const double *dout,
                           const mvrt_scan_ref_grads_t *g);

/* Element counts of the B/C operands for this problem (constant or variable). */
int64_t mvrt_scan_ref_b_numel(const mvrt_scan_ref_problem_t *p);
int64_t mvrt_scan_ref_c_numel(const mvrt_scan_ref_problem_t *p);

#ifdef __cplusplus
}
#endif
#endif
