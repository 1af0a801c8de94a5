/* Resolved, validated arguments of one selective-scan launch: raw pointers
 * (buffer data + tensor offset already applied), sizes and element strides.
 * The runtime fills this after validating everything; kernels may assume
 * it is consistent. Plain C, shared by CPU kernels, the reference and the
 * GPU kernel sources (no runtime headers here). */
#ifndef MVRT_OPS_SCAN_PARAMS_H
#define MVRT_OPS_SCAN_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element type codes, equal to the public mvrt_dtype_t values. */
enum { MVRT_SCAN_F32 = 1, MVRT_SCAN_F16 = 2, MVRT_SCAN_BF16 = 3 };

/* One strided operand. Axis meaning depends on the operand:
 *   (Bt, Dm, L) tensors: stride[0] = batch, [1] = channel, [2] = step
 *   variable B/C:        stride[0] = batch, [1] = group, [2] = state, [3] = step
 *                        (a rank-3 (Bt, N, L) tensor has group stride 0)
 *   constant B/C and A:  stride[0] = channel, [1] = state
 *   D, delta_bias, dD:   stride[0] = channel
 *   last_state:          stride[0] = batch, [1] = channel, [2] = state */
typedef struct mvrt_scan_operand {
    void *data;          /* NULL: absent */
    int64_t stride[4];
} mvrt_scan_operand_t;

typedef struct mvrt_scan_params {
    int64_t batch, dim, seqlen, dstate, groups;
    int input_dtype;             /* dtype of u, delta, z, out, variable B/C */
    int b_variable, c_variable;  /* 0: constant (Dm, N) f32 */
    int delta_softplus;
    /* 1: complex A (mamba_ssm's selective_scan_ref with a complex A): A,
     * constant B / C, last_state, dA and constant dB / dC are complex64
     * ((re, im) f32 pairs; strides count pairs); variable B / C and their
     * gradients are real in the input dtype with 2L steps, step l's value
     * being (re, im) at steps 2l, 2l + 1; y = 2 Re(sum_n x C). Backends
     * that do not run it answer MVRT_ERR_UNSUPPORTED. */
    int complex_a;

    /* forward inputs */
    mvrt_scan_operand_t u, delta, A, B, C, D, z, delta_bias;
    /* forward outputs */
    mvrt_scan_operand_t out, last_state;

    /* backward: input dout, outputs (dD/dz/ddelta_bias present iff D/z/bias) */
    mvrt_scan_operand_t dout, du, ddelta, dA, dB, dC, dD, dz, ddelta_bias;
    void *workspace;             /* backward scratch, >= the queried size */
    size_t workspace_bytes;
} mvrt_scan_params_t;

#ifdef __cplusplus
}
#endif
#endif
