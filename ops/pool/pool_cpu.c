/* CPU per-channel affine + global average pool (contract:
 * mvrt_affine_avgpool_params_t in mv_op_params.h). Each (b, c) plane is
 * summed in double with four independent accumulators (exact enough for any
 * plane size, and no serial add chain); the affine is applied to the mean,
 * which equals averaging the affine-transformed map. */
#include <stdint.h>

#include "ops/mv/mv_kernels.h"

static float ap_plane(const float *x, int64_t n, float scale, float shift)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i];
        s1 += x[i + 1];
        s2 += x[i + 2];
        s3 += x[i + 3];
    }
    for (; i < n; i++)
        s0 += x[i];
    const double mean = ((s0 + s1) + (s2 + s3)) / (double)n;
    return (float)((double)scale * mean + (double)shift);
}

void mvrt_cpu_affine_avgpool(const mvrt_affine_avgpool_params_t *p, int threads)
{
    const int64_t B = p->batch, C = p->channels, S = p->spatial;
    if (B <= 0 || C <= 0 || S <= 0)
        return;
    const int nt = threads < 1 ? 1 : threads;
    const int64_t planes = B * C;
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && planes > 1 && planes * S >= 65536)
#endif
    for (int64_t i = 0; i < planes; i++) {
        const int64_t c = i % C;
        p->y[i] = ap_plane(p->x + i * S, S, p->scale[c], p->shift[c]);
    }
}
