/* Double-precision reference of the linear op (mv_op_params.h,
 * contract of the output positions: mv_reference.h). */
#include "ops/common/mv_reference.h"
#include "ops/mv/mv_kernels.h"

void mvrt_ref_linear(const mvrt_linear_params_t *p, double *out)
{
    for (int64_t b = 0; b < p->batch; b++) {
        const float *A = p->A + b * p->batch_stride_a;
        const float *B = p->B + b * p->batch_stride_b;
        const int64_t yoff = b * p->batch_stride_y;
        for (int64_t m = 0; m < p->M; m++) {
            for (int64_t n = 0; n < p->N; n++) {
                double s = 0.0;
                for (int64_t k = 0; k < p->K; k++) {
                    const double a = p->trans_a ? A[k * p->lda + m] : A[m * p->lda + k];
                    const double w = p->trans_b ? B[n * p->ldb + k] : B[k * p->ldb + n];
                    s += a * w;
                }
                if (p->bias)
                    s += p->bias[p->bias_per_row ? m : n];
                s = mvrt_ref_activation(p->activation, s);
                const int64_t i = yoff + m * p->ldy + n;
                /* beta is 0 or 1; beta = 0 never reads Y (it may hold NaN);
                 * a residual replaces Y's own contents */
                const float *src = p->residual ? p->residual : p->Y;
                out[i] = p->beta != 0.0f ? (double)p->beta * src[i] + s : s;
            }
        }
    }
}
