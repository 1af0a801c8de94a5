/* Plain scalar selective-scan forward: the baseline of the CPU ratios.
 * Deliberately the obvious code (one libm expf per state update), built with
 * the project's normal optimization flags. Do not optimize it. */
#include <math.h>

#include "bench.h"

void mvrt_bench_plain_scan_fwd(int64_t Bt, int64_t Dm, int64_t L, int64_t N, const float *u,
                               const float *delta, const float *A, const float *B,
                               const float *C, const float *D, const float *delta_bias,
                               float *out)
{
    float h[256];
    for (int64_t b = 0; b < Bt; b++) {
        for (int64_t d = 0; d < Dm; d++) {
            const int64_t row = (b * Dm + d) * L;
            for (int64_t n = 0; n < N; n++)
                h[n] = 0.0f;
            for (int64_t t = 0; t < L; t++) {
                float v = delta[row + t] + delta_bias[d];
                float dt = v <= 20.0f ? log1pf(expf(v)) : v;
                float ut = u[row + t];
                float y = D[d] * ut;
                for (int64_t n = 0; n < N; n++) {
                    float a = expf(dt * A[d * N + n]);
                    h[n] = a * h[n] + dt * B[(b * N + n) * L + t] * ut;
                    y += C[(b * N + n) * L + t] * h[n];
                }
                out[row + t] = y;
            }
        }
    }
}
