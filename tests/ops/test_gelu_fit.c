/* The one-exponential GELU of ops/common/gelu_fit.h against erf in double:
 * every float in [-9, 9] at a step of 2^-12 (73 729 points) plus the
 * clamp's edges, zero, the extremes and NaN. Bounds (the header's claim):
 * |got - GELU(x)| <= 6e-7 everywhere and <= 5e-6 |GELU(x)| where
 * |GELU(x)| > 1e-6. The polynomial's own fit error is checked too: a
 * coefficient typed wrong moves g away from log2 t by far more than that somewhere. */
#include <math.h>
#include <stdio.h>

#include "ops/common/gelu_fit.h"

static int failures, checked;

static double gelu_ref(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }

static void check(float x)
{
    float y;
    MVRT_GELU_ERF_FIT(y, x, exp2f);
    const double ref = gelu_ref((double)x), d = fabs((double)y - ref);
    const int bad = !(d <= 6e-7) || (fabs(ref) > 1e-6 && !(d <= 5e-6 * fabs(ref)));
    checked++;
    if (bad && failures++ < 10)
        printf("FAIL x = %.9g: got %.9g, GELU %.9g (|d| %.3g, relative %.3g)\n", x, y, ref, d, d / fabs(ref));
}

int main(void)
{
    for (int i = -9 * 4096; i <= 9 * 4096; i++)
        check((float)i / 4096.0f);
    const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 5.9999995f, 6.0f, 6.0000005f, -5.9999995f, -6.0f,
                           -6.0000005f, 30.0f, 1e4f, 3e38f};
    for (unsigned i = 0; i < sizeof edges / sizeof edges[0]; i++)
        check(edges[i]);
    /* far negative: the true GELU underflows to -0; the fit gives -1e-9 |x| */
    float y;
    const float far = -1e4f;
    MVRT_GELU_ERF_FIT(y, far, exp2f);
    checked++;
    if (!(fabsf(y) <= 1e-8f * 1e4f) && failures++ < 10)
        printf("FAIL x = -1e4: got %.9g, want about 0\n", y);
    const float nan = NAN;
    MVRT_GELU_ERF_FIT(y, nan, exp2f);
    checked++;
    if (!isnan(y) && failures++ < 10)
        printf("FAIL x = NaN: got %.9g, want NaN\n", y);

    /* the fit itself: |g(a) - log2 t(a)| on [0, 6] within the header's
     * 4.7e-6 plus 4 float ulps of g (its evaluation in float) */
    for (int i = 0; i <= 6 * 4096; i++) {
        const float a = (float)i / 4096.0f;
        float g;
        MVRT_GELU_ERF_FIT_LOG2T(g, a);
        const double want = log2(0.5 * erfc((double)a / sqrt(2.0)));
        checked++;
        if (!(fabs((double)g - want) <= 4.7e-6 + 4.0 * ldexp(fabs(want), -23)) && failures++ < 10)
            printf("FAIL fit at a = %.9g: g %.9g, log2 t %.9g\n", a, g, want);
    }
    printf("%d values, %d failed\n", checked, failures);
    return failures ? 1 : 0;
}
