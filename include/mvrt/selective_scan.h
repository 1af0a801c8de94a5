/* The Mamba selective scan, with the semantics of mamba_ssm's
 * selective_scan_fn (see docs and shared spec):
 *   delta' = softplus(delta + delta_bias) (softplus optional)
 *   h_t    = exp(delta'_t A) h_{t-1} + delta'_t B_t u_t
 *   out_t  = (C_t . h_t + D u_t) * silu(z_t)   (z optional)
 *
 * Shapes (Bt batch, Dm channels, L length, N states <= 256, G groups):
 *   u, delta          (Bt, Dm, L)       input dtype: f32, f16 or bf16
 *   A                 (Dm, N)           f32
 *   B, C              (Dm, N) f32 = constant, or (Bt, N, L) = one group,
 *                     or (Bt, G, N, L) in the input dtype; Dm % G == 0
 *   D, delta_bias     (Dm,) f32         optional
 *   z                 (Bt, Dm, L)       input dtype, optional
 *   out               (Bt, Dm, L)       input dtype
 *   last_state        (Bt, Dm, N)       f32, optional output: the true h_{L-1}
 * Complex A (mamba_ssm's selective_scan_ref with a complex A): A of dtype
 * MVRT_DTYPE_C64 (Dm, N); constant B / C are then c64 (Dm, N), variable
 * B / C real in the input dtype with 2L steps, (Bt, N, 2L) or
 * (Bt, G, N, 2L), (re, im) of step l at 2l and 2l + 1; the state is
 * complex, y = 2 Re(sum_n x_t C_t) before D, z; last_state (Bt, Dm, N),
 * dA and constant dB / dC are c64, gradients of complex tensors being
 * dL/dre + i dL/dim. f32 inputs only (MVRT_ERR_UNSUPPORTED otherwise);
 * the CPU backend runs it, CUDA and HIP answer MVRT_ERR_UNSUPPORTED.
 * Any strides >= 0 are accepted; unit stride along L is the fast path.
 * Optional tensors are absent when their .buffer is NULL. All tensors must
 * belong to the backend of `stream` (or to one backend when stream is NULL).
 *
 * Both calls are stream-ordered: asynchronous on GPUs, complete on return
 * on the CPU. Inputs are validated before anything is launched; on error
 * nothing is written.
 */
#ifndef MVRT_SELECTIVE_SCAN_H
#define MVRT_SELECTIVE_SCAN_H

#include "mvrt/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MVRT_SCAN_MAX_DSTATE 256

typedef struct mvrt_selective_scan_args {
    mvrt_tensor_t u, delta, A, B, C;
    mvrt_tensor_t D;          /* optional */
    mvrt_tensor_t z;          /* optional */
    mvrt_tensor_t delta_bias; /* optional */
    int delta_softplus;       /* 0 or 1 */
} mvrt_selective_scan_args_t;

typedef struct mvrt_selective_scan_outputs {
    mvrt_tensor_t out;        /* required */
    mvrt_tensor_t last_state; /* optional */
} mvrt_selective_scan_outputs_t;

/* Gradients of sum(out * dout). A gradient flowing into last_state is not
 * supported (as in mamba_ssm). The backward recomputes the forward from the
 * inputs; nothing from the forward needs to be kept. It is deterministic:
 * bitwise the same result on every run and for every thread count. */
typedef struct mvrt_selective_scan_grads {
    mvrt_tensor_t dout;        /* input: (Bt, Dm, L), input dtype */
    mvrt_tensor_t du, ddelta;  /* (Bt, Dm, L), input dtype */
    mvrt_tensor_t dA;          /* (Dm, N) f32 */
    mvrt_tensor_t dB, dC;      /* shape of B / C; f32 when constant, else input dtype */
    mvrt_tensor_t dD;          /* (Dm,) f32; required iff D is given, else absent */
    mvrt_tensor_t dz;          /* (Bt, Dm, L); required iff z is given, else absent */
    mvrt_tensor_t ddelta_bias; /* (Dm,) f32; required iff delta_bias is given */
} mvrt_selective_scan_grads_t;

MVRT_API mvrt_status_t mvrt_selective_scan_fwd(mvrt_stream_t *stream,
                                               const mvrt_selective_scan_args_t *args,
                                               const mvrt_selective_scan_outputs_t *outputs);

/* Bytes of workspace mvrt_selective_scan_bwd needs for these arguments on
 * this backend (saved chunk states, deterministic partial sums). */
MVRT_API mvrt_status_t mvrt_selective_scan_bwd_workspace_size(
    mvrt_backend_t *backend, const mvrt_selective_scan_args_t *args, size_t *out_bytes);

/* workspace: a buffer of at least the queried size on the same backend, or
 * NULL to let the backend allocate a temporary one for this call. */
MVRT_API mvrt_status_t mvrt_selective_scan_bwd(mvrt_stream_t *stream,
                                               const mvrt_selective_scan_args_t *args,
                                               const mvrt_selective_scan_grads_t *grads,
                                               mvrt_buffer_t *workspace);

#ifdef __cplusplus
}
#endif
#endif
