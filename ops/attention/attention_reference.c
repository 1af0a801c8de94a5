/* Double reference of multi-head attention (contract: mv_reference.h).
 * Per query: a first pass finds the maximum score, a second accumulates
 * exp(score - max) and the weighted values straight into `out`, so no
 * scratch memory is needed (scores are recomputed; fine for a reference). */
#include <math.h>
#include <stdint.h>

#include "ops/mv/mv_kernels.h"

void mvrt_ref_attention(const mvrt_attention_params_t *p, double *out)
{
    const int64_t L = p->length, d = p->head_dim, C = (int64_t)p->heads * d, ld = 3 * C;
    const double scale = p->scale;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t h = 0; h < p->heads; h++) {
            const float *qb = p->qkv + b * L * ld + h * d;
            const float *kb = qb + C, *vb = qb + 2 * C;
            for (int64_t i = 0; i < L; i++) {
                const float *q = qb + i * ld;
                double *o = out + (b * L + i) * C + h * d;
                double m = -INFINITY;
                for (int64_t j = 0; j < L; j++) {
                    double s = 0.0;
                    for (int64_t k = 0; k < d; k++)
                        s += (double)q[k] * kb[j * ld + k];
                    s *= scale;
                    if (s > m)
                        m = s;
                }
                for (int64_t k = 0; k < d; k++)
                    o[k] = 0.0;
                double sum = 0.0;
                for (int64_t j = 0; j < L; j++) {
                    double s = 0.0;
                    for (int64_t k = 0; k < d; k++)
                        s += (double)q[k] * kb[j * ld + k];
                    const double e = exp(s * scale - m);
                    sum += e;
                    for (int64_t k = 0; k < d; k++)
                        o[k] += e * vb[j * ld + k];
                }
                for (int64_t k = 0; k < d; k++)
                    o[k] /= sum;
            }
        }
}
