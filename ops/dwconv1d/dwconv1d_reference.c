/* Double reference of the depthwise conv1d + SiLU (contract:
 * mv_reference.h): 'same' padding with (width - 1) / 2 zeros on the left,
 * the rest on the right, exactly as the params header states. */
#include <math.h>
#include <stdint.h>

#include "ops/mv/mv_kernels.h"

void mvrt_ref_dwconv1d_silu(const mvrt_dwconv1d_params_t *p, double *out)
{
    const int width = p->width, pad = (width - 1) / 2;
    const int64_t L = p->length;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t c = 0; c < p->channels; c++) {
            const float *xr = p->x + b * p->x_stride[0] + c * p->x_stride[1];
            /* the second part (split): `out` stands for y, and y2 is
             * addressed relative to y (out + (y2 - y)) */
            const int second = p->split > 0 && c >= p->split;
            double *o = !second ? out + b * p->y_stride[0] + c * p->y_stride[1]
                                : out + (p->y2 - p->y) + b * p->y2_stride[0] + (c - p->split) * p->y2_stride[1];
            const int64_t ls = second ? p->y2_stride[2] : p->y_stride[2];
            const float *w = second ? p->weight2 + (c - p->split) * (int64_t)width : p->weight + c * (int64_t)width;
            for (int64_t l = 0; l < L; l++) {
                double acc = 0.0;
                for (int j = 0; j < width; j++) {
                    const int64_t s = l + j - pad;
                    if (s >= 0 && s < L)
                        acc += (double)w[j] * (double)xr[s * p->x_stride[2]];
                }
                o[l * ls] = acc / (1.0 + exp(-acc));
            }
        }
}
