/* Dispatcher of the MambaVision ops' double references (contract:
 * mv_reference.h), and the activations they share. */
#include <math.h>

#include "ops/common/mv_reference.h"
#include "ops/mv/mv_kernels.h"

double mvrt_ref_activation(int activation, double x)
{
    switch (activation) {
    case MVRT_ACT_RELU: return x > 0.0 ? x : 0.0;
    case MVRT_ACT_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case MVRT_ACT_GELU_TANH: {
        const double k = sqrt(2.0 / 3.14159265358979323846);
        return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
    }
    case MVRT_ACT_SILU: return x / (1.0 + exp(-x));
    default: return x;
    }
}

int mvrt_ref_op_run(const mvrt_op_params_t *p, double *out)
{
    switch (p->kind) {
    case MVRT_OP_LAYERNORM: mvrt_ref_layernorm(&p->u.layernorm, out); return 0;
    case MVRT_OP_LINEAR: mvrt_ref_linear(&p->u.linear, out); return 0;
    case MVRT_OP_DWCONV1D_SILU: mvrt_ref_dwconv1d_silu(&p->u.dwconv1d, out); return 0;
    case MVRT_OP_ATTENTION: mvrt_ref_attention(&p->u.attention, out); return 0;
    case MVRT_OP_CONV2D: mvrt_ref_conv2d(&p->u.conv2d, out); return 0;
    case MVRT_OP_WINDOW_PARTITION: mvrt_ref_window_partition(&p->u.window, out); return 0;
    case MVRT_OP_WINDOW_REVERSE: mvrt_ref_window_reverse(&p->u.window, out); return 0;
    case MVRT_OP_AFFINE_AVGPOOL: mvrt_ref_affine_avgpool(&p->u.pool, out); return 0;
    default: return -1;
    }
}
