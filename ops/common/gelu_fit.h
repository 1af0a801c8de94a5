/* GELU (the erf form) from one exponential, for epilogues whose output is
 * rounded to 16 bits: there erff's two-branch polynomial (about 25
 * instructions per element on sm_90) cost more than the tensor-core
 * product of MambaVision's fc1 (PERF_NOTES, session 37).
 *
 *   GELU(x) = x Phi(x),  t = 1 - Phi(|x|) = erfc(|x| / sqrt 2) / 2 = 2^g(a),
 *   a = min(|x|, 6),     Phi(x) = 1 - t for x >= 0, t for x < 0,
 *
 * g a degree-7 polynomial fitted to log2 t on [0, 6] (least squares
 * reweighted toward minimax: |g - log2 t| <= 4.7e-6, so t is within
 * 3.3e-6 relative). Beyond 6, t(6) = 1e-9 stands in for t: x Phi is then
 * x or about -1e-8 x. Error of the fp32 result against double, x in
 * [-9, 9]: <= 6e-7 absolute and <= 5e-6 relative where |GELU| > 1e-6 —
 * far below a bf16 or fp16 output's rounding (2^-9, 2^-12 relative).
 * tests/ops/test_gelu_fit.c checks those bounds with libm's exp2f; GPUs
 * use the hardware exp2 (about 2 ulp more).
 *
 * MVRT_GELU_ERF_FIT(y, x, EXP2): y = GELU(x) for float lvalue y and float
 * x (evaluated more than once: pass a variable); EXP2 a float -> float
 * 2^x. NaN in, NaN out. C (with <math.h>) and CUDA/HIP device code alike. */
#ifndef MVRT_OPS_COMMON_GELU_FIT_H
#define MVRT_OPS_COMMON_GELU_FIT_H

#define MVRT_GELU_ERF_FIT_CLAMP 6.0f
/* g = the fit of log2 t at a in [0, 6] (float lvalues / values) */
#define MVRT_GELU_ERF_FIT_LOG2T(g, a)                                                              \
    do {                                                                                           \
        (g) = -1.834672389e-06f;                                                                   \
        (g) = (g) * (a) + 6.159541226e-05f;                                                        \
        (g) = (g) * (a) - 9.305011481e-04f;                                                        \
        (g) = (g) * (a) + 8.507791907e-03f;                                                        \
        (g) = (g) * (a) - 5.395985022e-02f;                                                        \
        (g) = (g) * (a) - 4.584646523e-01f;                                                        \
        (g) = (g) * (a) - 1.151250958e+00f;                                                        \
        (g) = (g) * (a) - 9.999952912e-01f;                                                        \
    } while (0)
#define MVRT_GELU_ERF_FIT(y, x, EXP2)                                                              \
    do {                                                                                           \
        const float a_ = fminf(fabsf(x), MVRT_GELU_ERF_FIT_CLAMP);                                 \
        float g_;                                                                                  \
        MVRT_GELU_ERF_FIT_LOG2T(g_, a_);                                                           \
        const float t_ = EXP2(g_);                                                                 \
        (y) = (x) * ((x) >= 0.0f ? 1.0f - t_ : t_);                                                \
    } while (0)

#endif
