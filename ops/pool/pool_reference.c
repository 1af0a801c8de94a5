/* Double reference of the per-channel affine + global average pool
 * (contract: mv_reference.h). */
#include <stdint.h>

#include "ops/mv/mv_kernels.h"

void mvrt_ref_affine_avgpool(const mvrt_affine_avgpool_params_t *p, double *out)
{
    const int64_t C = p->channels, S = p->spatial;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t c = 0; c < C; c++) {
            const float *x = p->x + (b * C + c) * S;
            double s = 0.0;
            for (int64_t i = 0; i < S; i++)
                s += x[i];
            out[b * C + c] = (double)p->scale[c] * (s / (double)S) + (double)p->shift[c];
        }
}
