/* Double reference of LayerNorm (contract: mv_reference.h): two-pass mean
 * and biased variance in double, eps inside the square root. Reads only x,
 * so it is correct for the in-place case (y == x) too. */
#include <math.h>
#include <stdint.h>

#include "ops/mv/mv_kernels.h"

void mvrt_ref_layernorm(const mvrt_layernorm_params_t *p, double *out)
{
    const int64_t n = p->cols;
    for (int64_t r = 0; r < p->rows; r++) {
        const float *x = p->x + r * p->x_ld;
        double *o = out + r * p->y_ld;
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < n; i++)
            mean += x[i];
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++) {
            const double d = x[i] - mean;
            var += d * d;
        }
        var /= (double)n;
        const double rstd = 1.0 / sqrt(var + (double)p->eps);
        for (int64_t i = 0; i < n; i++)
            o[i] = (x[i] - mean) * rstd * p->weight[i] + p->bias[i];
    }
}
