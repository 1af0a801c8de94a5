/* Double-precision reference of the conv2d op (mv_op_params.h): direct
 * loops, output at y's positions (NCHW contiguous). */
#include "ops/common/mv_reference.h"
#include "ops/mv/mv_kernels.h"

void mvrt_ref_conv2d(const mvrt_conv2d_params_t *p, double *out)
{
    const int64_t C = p->in_channels, H = p->in_h, W = p->in_w;
    const int64_t O = p->out_channels, OH = p->out_h, OW = p->out_w;
    const int kk = p->kernel;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++) {
                    double s = p->bias ? (double)p->bias[o] : 0.0;
                    for (int64_t c = 0; c < C; c++)
                        for (int pi = 0; pi < kk; pi++) {
                            const int64_t h = i * p->stride + pi - p->pad;
                            if (h < 0 || h >= H)
                                continue;
                            for (int qi = 0; qi < kk; qi++) {
                                const int64_t w = j * p->stride + qi - p->pad;
                                if (w < 0 || w >= W)
                                    continue;
                                s += (double)p->weight[((o * C + c) * kk + pi) * kk + qi] *
                                     (double)p->x[((b * C + c) * H + h) * W + w];
                            }
                        }
                    s = mvrt_ref_activation(p->activation, s);
                    const int64_t idx = ((b * O + o) * OH + i) * OW + j;
                    if (p->residual)
                        s += p->residual[idx];
                    out[idx] = s;
                }
}
