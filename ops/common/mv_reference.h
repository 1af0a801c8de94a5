/* Double-precision references of the MambaVision ops (ops/common/
 * mv_op_params.h), for tests and tools; never linked into libmvrt.
 *
 * mvrt_ref_op_run computes the op described by `p` from its float inputs in
 * double precision and writes the result to `out` (double) at the SAME
 * element positions (offsets, strides, leading dimensions) as the op's float
 * output (`y`, `Y`, `out` or `dst` of the params), so a test compares
 * out[i] with the backend's y[i] at the positions the op writes. Elements the
 * op does not write are left untouched. Where an op reads its output
 * (linear with beta = 1), the reference reads the float output of `p` as the
 * initial value. The output pointer of `p` itself is never written. A
 * dwconv1d with two parts writes its y2 elements at out + (y2 - y), i.e.
 * y and y2 must lie in one buffer that `out` mirrors.
 * Returns 0, or -1 for an unknown kind (or, for the MLP, out of host
 * memory). */
#ifndef MVRT_OPS_MV_REFERENCE_H
#define MVRT_OPS_MV_REFERENCE_H

#include "mv_op_params.h"

#ifdef __cplusplus
extern "C" {
#endif

int mvrt_ref_op_run(const mvrt_op_params_t *p, double *out);

/* The activation functions in double, as the references apply them. */
double mvrt_ref_activation(int activation, double x);

#ifdef __cplusplus
}
#endif
#endif
