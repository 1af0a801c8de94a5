/* Dispatcher of the MambaVision ops' double references (contract:
 * mv_reference.h), and the activations they share. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

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

/* x + fc2(act(fc1(LN(x)))) row by row, everything in double (the fused
 * MLP op, mv_op_params.h); out mirrors x. Returns -1 when out of memory. */
static int ref_mlp(const mvrt_mlp_params_t *p, double *out)
{
    const int64_t C = p->channels, H = p->hidden;
    double *a = malloc(sizeof(double) * (size_t)(C + H));
    if (!a)
        return -1;
    double *h = a + C;
    for (int64_t r = 0; r < p->rows; r++) {
        const float *x = p->x + r * C;
        double mean = 0.0, var = 0.0;
        for (int64_t k = 0; k < C; k++)
            mean += x[k];
        mean /= (double)C;
        for (int64_t k = 0; k < C; k++)
            var += (x[k] - mean) * (x[k] - mean);
        const double rstd = 1.0 / sqrt(var / (double)C + (double)p->ln_eps);
        for (int64_t k = 0; k < C; k++)
            a[k] = (x[k] - mean) * rstd * p->ln_weight[k] + p->ln_bias[k];
        for (int64_t n = 0; n < H; n++) {
            double s = p->fc1_b[n];
            for (int64_t k = 0; k < C; k++)
                s += a[k] * p->fc1_w[n * C + k];
            h[n] = mvrt_ref_activation(p->activation, s);
        }
        for (int64_t n = 0; n < C; n++) {
            double s = p->fc2_b[n];
            for (int64_t k = 0; k < H; k++)
                s += h[k] * p->fc2_w[n * H + k];
            out[r * C + n] = (double)x[n] + s;
        }
    }
    free(a);
    return 0;
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
    case MVRT_OP_MLP: return ref_mlp(&p->u.mlp, out);
    default: return -1;
    }
}
