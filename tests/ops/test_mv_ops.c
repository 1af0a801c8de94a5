/* CPU kernels of LayerNorm, depthwise conv1d + SiLU, attention, window
 * partition / reverse and affine + average pool against their double
 * references (mvrt_cpu_op_run vs mvrt_ref_op_run), over edge shapes, with
 * 1 and 2 threads.
 *
 * Every output buffer is pre-filled (NaN, or the input itself for the
 * in-place LayerNorm) and the reference buffer starts as a double copy of
 * it, so the comparison over the WHOLE buffer also checks that the kernel
 * writes exactly the elements it should: an element the op must write and
 * did not stays NaN and fails; an element it must not write has to keep its
 * old value (NaN on both sides passes).
 *
 * Pass rule per element: |got - ref| <= atol + rtol * |ref|, where atol is
 * a per-op factor times the largest |ref| of the case (float kernels lose
 * accuracy relative to the magnitudes involved, not to each element). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/common/cpu_half.h"
#include "ops/common/mv_cpu.h"
#include "ops/common/mv_reference.h"

static int g_failures;
static int g_cases;

/* ---- random numbers (splitmix64) ---- */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static double rnd_unit(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;  /* [0, 1) */
}

/* Uniform in [center - half, center + half). */
static void fill_uniform(float *x, size_t n, double center, double half)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(center + half * (2.0 * rnd_unit() - 1.0));
}

static float *falloc(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static double *dalloc(size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof(double));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static void fill_nan(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = NAN;
}

static void to_double(double *d, const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
}

static double max_abs(const double *ref, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(ref[i]) && fabs(ref[i]) > m)
            m = fabs(ref[i]);
    return m;
}

/* Compares the whole output buffer (see the file comment); prints the worst
 * error of the case and returns 0 on pass. atol is absolute. */
static int compare(const char *op, const char *name, int threads, const float *got,
                   const double *ref, size_t n, double rtol, double atol)
{
    const double maxref = max_abs(ref, n);
    double worst_abs = 0.0, worst_ratio = 0.0;
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(ref[i])) {
            if (!isnan(got[i])) {
                if (!bad++)
                    first_bad = i;
            }
            continue;
        }
        const double err = fabs((double)got[i] - ref[i]);
        const double tol = atol + rtol * fabs(ref[i]);
        if (tol == 0.0) { /* exact comparison (data movement) */
            if (err != 0.0 || signbit((double)got[i]) != signbit(ref[i])) {
                if (!bad++)
                    first_bad = i;
            }
            if (err > worst_abs)
                worst_abs = err;
            continue;
        }
        if (!(err <= tol)) {
            if (!bad++)
                first_bad = i;
        }
        if (err > worst_abs || isnan(err))
            worst_abs = err;
        if (err / tol > worst_ratio || isnan(err))
            worst_ratio = err / tol;
    }
    g_cases++;
    printf("%-5s %-12s %-44s t=%d  max|err| %.3e  (max|ref| %.3e)  err/tol %.3f  %s\n",
           bad ? "FAIL" : "ok", op, name, threads, worst_abs, maxref, worst_ratio,
           bad ? "<<<" : "");
    if (bad) {
        printf("      %zu bad elements; first at %zu: got %.9g ref %.9g\n", bad, first_bad,
               (double)got[first_bad], ref[first_bad]);
        g_failures++;
        return 1;
    }
    return 0;
}

static void run_cpu(const mvrt_op_params_t *op, int threads)
{
    /* the scratch the op asks for (the bf16-storage forms), NaN-filled:
     * a kernel that read it before writing would show */
    const size_t bytes = mvrt_cpu_op_scratch_bytes(op);
    float *scratch = bytes ? falloc(bytes / sizeof(float)) : NULL;
    if (scratch)
        fill_nan(scratch, bytes / sizeof(float));
    if (mvrt_cpu_op_run(op, scratch, threads) != 0) {
        printf("FAIL  mvrt_cpu_op_run rejected kind %d\n", op->kind);
        g_failures++;
    }
    free(scratch);
}

static void run_ref(const mvrt_op_params_t *op, double *out)
{
    if (mvrt_ref_op_run(op, out) != 0) {
        printf("FAIL  mvrt_ref_op_run rejected kind %d\n", op->kind);
        g_failures++;
    }
}

/* Runs op on the CPU with 1 and 2 threads, y NaN-filled before each run
 * (elements the op must write), and compares y with ref. */
static void check_threads(const char *kind, const char *name, const mvrt_op_params_t *op, float *y,
                          const double *ref, size_t ny, double rtol, double atol)
{
    for (int t = 1; t <= 2; t++) {
        fill_nan(y, ny);
        run_cpu(op, t);
        compare(kind, name, t, y, ref, ny, rtol, atol);
    }
}

/* ---------------- LayerNorm ---------------- */
/* f32 vs double: the kernel centres with a two-float mean, so its error is
 * a few ulps of the output even for a row mean 1000x its spread. */
#define LN_RTOL 5e-6
#define LN_ATOL 5e-7

static void test_layernorm(int64_t rows, int64_t cols, int64_t x_ld, int64_t y_ld, int inplace,
                           double mean, double spread)
{
    char name[128];
    snprintf(name, sizeof name, "%lldx%lld ld %lld/%lld%s mean %g", (long long)rows,
             (long long)cols, (long long)x_ld, (long long)(inplace ? x_ld : y_ld),
             inplace ? " in-place" : "", mean);
    if (inplace)
        y_ld = x_ld;
    const size_t nx = (size_t)((rows - 1) * x_ld + cols), ny = (size_t)((rows - 1) * y_ld + cols);
    float *x = falloc(nx), *x0 = falloc(nx), *w = falloc((size_t)cols), *b = falloc((size_t)cols);
    float *y = inplace ? x : falloc(ny);
    double *ref = dalloc(ny), *init = dalloc(ny);
    fill_uniform(x0, nx, mean, spread);
    fill_uniform(w, (size_t)cols, 1.0, 0.5);
    fill_uniform(b, (size_t)cols, 0.0, 0.5);
    memcpy(x, x0, nx * sizeof(float));
    if (!inplace)
        fill_nan(y, ny);
    to_double(init, y, ny);

    mvrt_op_params_t op = {.kind = MVRT_OP_LAYERNORM};
    op.u.layernorm = (mvrt_layernorm_params_t){.rows = rows, .cols = cols, .x = x, .x_ld = x_ld,
                                                .y = y, .y_ld = y_ld, .weight = w, .bias = b,
                                                .eps = 1e-5f};
    memcpy(ref, init, ny * sizeof(double));
    run_ref(&op, ref);
    for (int t = 1; t <= 2; t++) {
        memcpy(x, x0, nx * sizeof(float));
        if (!inplace)
            fill_nan(y, ny);
        run_cpu(&op, t);
        compare("layernorm", name, t, y, ref, ny, LN_RTOL, LN_ATOL * max_abs(ref, ny));
    }
    free(x);
    free(x0);
    free(w);
    free(b);
    if (!inplace)
        free(y);
    free(ref);
    free(init);
}

/* ---------------- bf16 storage (the graph's 16-bit activations) ----------------
 * LayerNorm with a bf16 output and linears with a bf16 A and/or Y, against
 * the double reference of the same op on the float values (a bf16 A holds
 * exactly the floats the reference reads). A bf16 output is the fp32
 * result rounded to nearest even once: within half a bf16 ulp, at most
 * 2^-8 of |ref| (truncation would err by up to 2^-7), plus the fp32
 * kernel's own error. Elements outside the output (row padding) keep a
 * sentinel NaN pattern, checked bit for bit. */
#define S16_SENTINEL 0x7fc1u /* a NaN in bf16 and in fp16 */

/* The 16-bit type of the storage tests: MVRT_STORAGE16_BF16, then _F16
 * (main runs them in both). One rounding to it: half an ulp, 2^-8 (bf16)
 * or 2^-11 (fp16) of |ref| at most. */
static int g_t16 = MVRT_STORAGE16_BF16;
static uint16_t to16(float f) { return g_t16 == MVRT_STORAGE16_F16 ? mvrt_f32_to_f16(f) : mvrt_f32_to_bf16(f); }
static float from16(uint16_t h) { return g_t16 == MVRT_STORAGE16_F16 ? mvrt_f16_to_f32(h) : mvrt_bf16_to_f32(h); }
static const char *t16_name(void) { return g_t16 == MVRT_STORAGE16_F16 ? "fp16" : "bf16"; }
static double s16_rtol(void) { return g_t16 == MVRT_STORAGE16_F16 ? 1.0 / 2048.0 : 1.0 / 256.0; }
#define S16_RTOL s16_rtol()

static uint16_t *u16alloc(size_t n)
{
    uint16_t *p = malloc((n ? n : 1) * sizeof(uint16_t));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = S16_SENTINEL;
    return p;
}

/* Decodes a bf16 output (rows x cols at ld, count matrices at stride) into
 * got; counts sentinel elements that changed outside the output. */
static size_t decode16(const uint16_t *y16, size_t n, int64_t count, int64_t stride, int64_t rows, int64_t cols,
                       int64_t ld, float *got)
{
    size_t touched = 0;
    for (size_t i = 0; i < n; i++)
        got[i] = from16(y16[i]);
    for (size_t i = 0; i < n; i++) {
        const int64_t b = (int64_t)i / (stride ? stride : (int64_t)n), rem = (int64_t)i - b * (stride ? stride : 0);
        const int inside = b < count && rem / ld < rows && rem % ld < cols;
        if (!inside && y16[i] != S16_SENTINEL)
            touched++;
    }
    return touched;
}

/* x16: the input is 16-bit too (a 16-bit residual stream; its values are
 * 16-bit numbers, so the reference reads what the op reads). */
static void test_layernorm_bf16(int64_t rows, int64_t cols, int64_t x_ld, int64_t y_ld, double mean, double spread,
                                int x16)
{
    char name[128];
    snprintf(name, sizeof name, "%s %sout %lldx%lld ld %lld/%lld mean %g", t16_name(), x16 ? "in+" : "",
             (long long)rows, (long long)cols, (long long)x_ld, (long long)y_ld, mean);
    const size_t nx = (size_t)((rows - 1) * x_ld + cols), ny = (size_t)((rows - 1) * y_ld + cols);
    float *x = falloc(nx), *w = falloc((size_t)cols), *b = falloc((size_t)cols), *got = falloc(ny);
    double *ref = dalloc(ny);
    fill_uniform(x, nx, mean, spread);
    uint16_t *x16b = x16 ? u16alloc(nx) : NULL;
    for (size_t i = 0; x16 && i < nx; i++) {
        x16b[i] = to16(x[i]);
        x[i] = from16(x16b[i]);
    }
    fill_uniform(w, (size_t)cols, 1.0, 0.5);
    fill_uniform(b, (size_t)cols, 0.0, 0.5);
    mvrt_op_params_t op = {.kind = MVRT_OP_LAYERNORM};
    op.u.layernorm = (mvrt_layernorm_params_t){.rows = rows, .cols = cols, .x = x, .x_ld = x_ld, .y = got,
                                                .y_ld = y_ld, .weight = w, .bias = b, .eps = 1e-5f};
    for (size_t i = 0; i < ny; i++)
        ref[i] = NAN; /* outside the output: checked through the sentinel */
    run_ref(&op, ref);
    for (int t = 1; t <= 2; t++) {
        uint16_t *y16 = u16alloc(ny);
        mvrt_op_params_t q = op;
        q.u.layernorm.y = (float *)(void *)y16;
        q.u.layernorm.y16 = g_t16;
        if (x16)
            q.u.layernorm.x = (const float *)(const void *)x16b, q.u.layernorm.x16 = g_t16;
        run_cpu(&q, t);
        const size_t touched = decode16(y16, ny, 1, 0, rows, cols, y_ld, got);
        for (size_t i = 0; i < ny; i++) /* padding: NaN on both sides */
            if (isnan(ref[i]) && y16[i] == S16_SENTINEL)
                got[i] = NAN;
        compare("layernorm", name, t, got, ref, ny, S16_RTOL, LN_ATOL * max_abs(ref, ny));
        if (touched) {
            printf("FAIL  layernorm %s: %zu padding elements written\n", name, touched);
            g_failures++;
        }
        free(y16);
    }
    free(x), free(w), free(b), free(got), free(ref), free(x16b);
}

/* A linear's result after a run on t threads: Y16 (non-NULL: Y stored in
 * 16 bits, items of M x N at row stride ldy, sy apart, padding at the
 * sentinel) decoded into got, else the floats of Y; compared with ref
 * (NaN where the op writes nothing) at the 16-bit or float tolerance. */
static void check_linear_out(const char *name, int t, const uint16_t *Y16, const float *Y, float *got,
                             const double *ref, size_t ny, int64_t batch, int64_t sy, int64_t M, int64_t N,
                             int64_t ldy, double atol)
{
    size_t touched = 0;
    if (Y16) {
        touched = decode16(Y16, ny, batch, sy, M, N, ldy, got);
        for (size_t i = 0; i < ny; i++)
            if (isnan(ref[i]) && Y16[i] == S16_SENTINEL)
                got[i] = NAN;
    } else {
        memcpy(got, Y, ny * sizeof(float));
    }
    compare("linear", name, t, got, ref, ny, Y16 ? S16_RTOL : 1e-5, atol);
    if (touched) {
        printf("FAIL  linear %s: %zu padding elements written\n", name, touched);
        g_failures++;
    }
}

/* A (M x K, or K x M with ta) per batch item with row padding, B a shared
 * PyTorch weight (N x K), a per-column bias; a16: A stored bf16; y16: Y
 * stored bf16 (else fp32). res (with y16 and act NONE): beta 1 onto a
 * 16-bit residual, 1: Y's own values (in place), 2: a separate matrix
 * (`residual`); 16-bit numbers in [-4, 4], the sum rounded once. */
static void test_linear_bf16(int64_t batch, int64_t M, int64_t N, int64_t K, int ta, int a16, int y16, int act,
                             int res)
{
    char name[128];
    snprintf(name, sizeof name, "%s %s%s%s b%lld %lldx%lldx%lld%s act %d", t16_name(), a16 ? "A" : "", y16 ? "Y" : "",
             res == 1 ? " +=Y" : res == 2 ? " +R" : "", (long long)batch, (long long)M, (long long)N, (long long)K,
             ta ? " ta" : "", act);
    const int64_t ra = ta ? K : M, ca = ta ? M : K, lda = ca + 3, sa = ra * lda + 5;
    const int64_t ldy = N + 2, sy = M * ldy + 4;
    const size_t na = (size_t)(batch * sa), nb = (size_t)(N * K), ny = (size_t)(batch * sy);
    float *A = falloc(na), *B = falloc(nb), *bias = falloc((size_t)N), *Y = falloc(ny), *got = falloc(ny);
    double *ref = dalloc(ny);
    fill_uniform(A, na, 0.0, 1.0);
    for (size_t i = 0; i < na; i++) /* values a bf16 A holds exactly */
        A[i] = from16(to16(A[i]));
    fill_uniform(B, nb, 0.0, 1.0);
    fill_uniform(bias, (size_t)N, 0.0, 1.0);
    uint16_t *A16 = u16alloc(na);
    for (size_t i = 0; i < na; i++)
        A16[i] = to16(A[i]);
    float *R = res ? falloc(ny) : NULL; /* the residual's values (16-bit numbers) */
    uint16_t *R16 = res ? u16alloc(ny) : NULL;
    if (res) {
        fill_uniform(R, ny, 0.0, 4.0);
        for (size_t i = 0; i < ny; i++) {
            const int64_t rem = (int64_t)i % sy; /* padding keeps the sentinel: decode16 checks it */
            const int inside = (int64_t)i / sy < batch && rem / ldy < M && rem % ldy < N;
            R16[i] = inside ? to16(R[i]) : S16_SENTINEL;
            R[i] = from16(R16[i]);
        }
    }
    mvrt_op_params_t op = {.kind = MVRT_OP_LINEAR};
    op.u.linear = (mvrt_linear_params_t){.batch = batch, .M = M, .N = N, .K = K, .A = A, .lda = lda,
                                          .batch_stride_a = sa, .trans_a = ta, .B = B, .ldb = K,
                                          .batch_stride_b = 0, .trans_b = 1, .Y = Y, .ldy = ldy,
                                          .batch_stride_y = sy, .bias = bias, .activation = act,
                                          .math = MVRT_MATH_BF16};
    if (res) {
        op.u.linear.beta = 1.0f;
        if (res == 1)
            memcpy(Y, R, ny * sizeof(float));
        else
            op.u.linear.residual = R;
    }
    for (size_t i = 0; i < ny; i++)
        ref[i] = NAN;
    run_ref(&op, ref);
    const double atol = 2e-6 * sqrt((double)K) * max_abs(ref, ny);
    for (int t = 1; t <= 2; t++) {
        mvrt_op_params_t q = op;
        q.u.linear.a16 = a16 ? g_t16 : 0, q.u.linear.y16 = y16 ? g_t16 : 0;
        if (a16)
            q.u.linear.A = (const float *)(const void *)A16;
        uint16_t *Y16 = y16 ? u16alloc(ny) : NULL;
        if (res == 1)
            memcpy(Y16, R16, ny * sizeof(uint16_t));
        if (res == 2)
            q.u.linear.residual = (const float *)(const void *)R16;
        if (y16) {
            q.u.linear.Y = (float *)(void *)Y16;
        } else {
            fill_nan(Y, ny);
        }
        run_cpu(&q, t);
        check_linear_out(name, t, Y16, Y, got, ref, ny, batch, sy, M, N, ldy, atol);
        free(Y16);
    }
    free(A), free(B), free(bias), free(Y), free(got), free(ref), free(A16), free(R), free(R16);
}

/* x[0, n) as fill_uniform (center +- half), rounded to 16-bit numbers of
 * g_t16's type, their bits in x16. */
static void fill_uniform16(float *x, uint16_t *x16, size_t n, double center, double half)
{
    fill_uniform(x, n, center, half);
    for (size_t i = 0; i < n; i++) {
        x16[i] = to16(x[i]);
        x[i] = from16(x16[i]);
    }
}

/* The mixer's x_proj / dt_proj forms in a 16-bit graph: B a 16-bit
 * activation of each batch item (b16 with b_constant 0: K x N rows at a
 * padded ldb, gapped items), A a shared float weight (M x K), a per-row
 * bias, Y stored 16-bit (y16) or as floats. The reference multiplies B's
 * 16-bit values exactly; a 16-bit Y is one rounding of the fp32 result. */
static void test_linear_b16_act(int64_t batch, int64_t M, int64_t N, int64_t K, int y16)
{
    char name[128];
    snprintf(name, sizeof name, "%s B%s b%lld %lldx%lldx%lld row bias", t16_name(), y16 ? "Y" : "", (long long)batch,
             (long long)M, (long long)N, (long long)K);
    const int64_t ldb = N + 3, sb = K * ldb + 5, ldy = N + 2, sy = M * ldy + 4;
    const size_t na = (size_t)(M * K), nb = (size_t)(batch * sb), ny = (size_t)(batch * sy);
    float *A = falloc(na), *B = falloc(nb), *bias = falloc((size_t)M), *Y = falloc(ny), *got = falloc(ny);
    double *ref = dalloc(ny);
    uint16_t *B16 = u16alloc(nb);
    fill_uniform(A, na, 0.0, 1.0);
    fill_uniform16(B, B16, nb, 0.0, 2.0);
    fill_uniform(bias, (size_t)M, 0.0, 1.0);
    mvrt_op_params_t op = {.kind = MVRT_OP_LINEAR};
    op.u.linear = (mvrt_linear_params_t){.batch = batch, .M = M, .N = N, .K = K, .A = A, .lda = K,
                                          .batch_stride_a = 0, .B = B, .ldb = ldb, .batch_stride_b = sb,
                                          .Y = Y, .ldy = ldy, .batch_stride_y = sy, .bias = bias,
                                          .bias_per_row = 1, .math = g_t16 == MVRT_STORAGE16_F16 ? MVRT_MATH_FP16
                                                                                              : MVRT_MATH_BF16};
    for (size_t i = 0; i < ny; i++)
        ref[i] = NAN;
    run_ref(&op, ref);
    const double atol = 2e-6 * sqrt((double)K) * max_abs(ref, ny);
    for (int t = 1; t <= 2; t++) {
        mvrt_op_params_t q = op;
        q.u.linear.B = (const float *)(const void *)B16, q.u.linear.b16 = g_t16;
        uint16_t *Y16 = y16 ? u16alloc(ny) : NULL;
        if (y16) {
            q.u.linear.Y = (float *)(void *)Y16, q.u.linear.y16 = g_t16;
            for (size_t i = 0; i < ny; i++)
                Y16[i] = S16_SENTINEL;
        } else {
            fill_nan(Y, ny);
        }
        run_cpu(&q, t);
        check_linear_out(name, t, Y16, Y, got, ref, ny, batch, sy, M, N, ldy, atol);
        free(Y16);
    }
    free(A), free(B), free(bias), free(Y), free(got), free(ref), free(B16);
}

/* ---------------- depthwise conv1d + SiLU ---------------- */
#define DW_RTOL 1e-5
#define DW_ATOL 1e-6

enum { DW_CM, DW_TM_IN, DW_TM_BOTH, DW_CM_PADDED };
static const char *dw_layout_name[] = {"chan-major", "token-major in", "token-major in+out",
                                       "chan-major padded"};

static void test_dwconv_amp(int64_t B, int64_t C, int64_t L, int width, int layout, double amp)
{
    char name[128];
    snprintf(name, sizeof name, "B%lld C%lld L%lld w%d %s amp %g", (long long)B, (long long)C,
             (long long)L, width, dw_layout_name[layout], amp);
    int64_t xs[3], ys[3], xoff = 0;
    size_t nx, ny;
    switch (layout) {
    case DW_TM_IN:
    case DW_TM_BOTH: {
        /* The z half of a (B, L, 2C) in_proj output, as MambaVision reads it. */
        const int64_t Ct = 2 * C;
        xs[0] = L * Ct; xs[1] = 1; xs[2] = Ct;
        xoff = C;
        nx = (size_t)(B * L * Ct);
        if (layout == DW_TM_IN) {
            ys[0] = C * L; ys[1] = L; ys[2] = 1;
            ny = (size_t)(B * C * L);
        } else {
            ys[0] = L * (C + 3); ys[1] = 1; ys[2] = C + 3;
            ny = (size_t)(B * L * (C + 3));
        }
        break;
    }
    case DW_CM_PADDED:
        xs[0] = C * (L + 2) + 1; xs[1] = L + 2; xs[2] = 1;
        ys[0] = C * (L + 5); ys[1] = L + 5; ys[2] = 1;
        nx = (size_t)(B * xs[0]);
        ny = (size_t)(B * ys[0]);
        break;
    default:
        xs[0] = C * L; xs[1] = L; xs[2] = 1;
        ys[0] = C * L; ys[1] = L; ys[2] = 1;
        nx = ny = (size_t)(B * C * L);
        break;
    }
    float *x = falloc(nx), *w = falloc((size_t)(C * width)), *y = falloc(ny);
    double *ref = dalloc(ny);
    fill_uniform(x, nx, 0.0, amp);
    fill_uniform(w, (size_t)(C * width), 0.0, 1.0);
    fill_nan(y, ny);
    to_double(ref, y, ny);

    mvrt_op_params_t op = {.kind = MVRT_OP_DWCONV1D_SILU};
    op.u.dwconv1d = (mvrt_dwconv1d_params_t){.batch = B, .channels = C, .length = L,
                                              .width = width, .x = x + xoff, .y = y,
                                              .weight = w};
    memcpy(op.u.dwconv1d.x_stride, xs, sizeof xs);
    memcpy(op.u.dwconv1d.y_stride, ys, sizeof ys);
    run_ref(&op, ref);
    check_threads("dwconv1d", name, &op, y, ref, ny, DW_RTOL, DW_ATOL * max_abs(ref, ny));
    free(x);
    free(w);
    free(y);
    free(ref);
}

static void test_dwconv(int64_t B, int64_t C, int64_t L, int width, int layout)
{
    test_dwconv_amp(B, C, L, width, layout, 2.0);
}


/* Runs a conv1d op on 1 and 2 threads into y (NaN-filled first) and
 * compares it with ref; where copy_n > 0 it also checks the 16-bit copy
 * cb bit for bit: in [0, copy_n) it holds y's rounding wherever y is
 * written (ref not NaN), and the sentinel everywhere else. */
static void run_dwconv_checked(mvrt_op_params_t *op, const char *name, float *y, const double *ref, size_t ny,
                               uint16_t *cb, size_t copy_n)
{
    for (int t = 1; t <= 2; t++) {
        fill_nan(y, ny);
        for (size_t i = 0; i < ny; i++)
            cb[i] = S16_SENTINEL;
        run_cpu(op, t);
        compare("dwconv1d", name, t, y, ref, ny, DW_RTOL, DW_ATOL * max_abs(ref, ny));
        size_t bad = 0;
        for (size_t i = 0; copy_n > 0 && i < ny; i++)
            bad += cb[i] != (i < copy_n && !isnan(ref[i]) ? to16(y[i]) : S16_SENTINEL);
        if (bad) {
            printf("FAIL  dwconv1d %s (%d threads): %zu elements of the 16-bit copy wrong\n", name, t, bad);
            g_failures++;
        }
    }
}

/* The two-part conv1d of the tests below: x a (B, L, 2C) token-major
 * buffer, the first C channels channel-major into y, the rest into y2 =
 * y + y2_off at item stride y2_batch, weights w and w2. */
static mvrt_op_params_t dwconv_two_parts(int64_t B, int64_t C, int64_t L, int width, const float *x, float *y,
                                         const float *w, const float *w2, int64_t y2_off, int64_t y2_batch)
{
    const int64_t Ct = 2 * C;
    mvrt_op_params_t op = {.kind = MVRT_OP_DWCONV1D_SILU};
    mvrt_dwconv1d_params_t *d = &op.u.dwconv1d;
    d->batch = B, d->channels = Ct, d->length = L, d->width = width;
    d->x = x, d->x_stride[0] = L * Ct, d->x_stride[1] = 1, d->x_stride[2] = Ct;
    d->y = y, d->y_stride[0] = C * L, d->y_stride[1] = L, d->y_stride[2] = 1;
    d->weight = w;
    d->split = C;
    d->y2 = y + y2_off, d->y2_stride[0] = y2_batch, d->y2_stride[1] = L, d->y2_stride[2] = 1;
    d->weight2 = w2;
    return op;
}

/* Both halves of a (B, L, 2C) token-major buffer in one op (split = C, as
 * MambaVision's conv1d_x / conv1d_z): the first half channel-major into y,
 * the second into y2, which follows y in the same buffer with its own
 * padded strides and weights; both against the double reference with the
 * float tolerance. The 16-bit forms (mv_op_params.h, g_t16's type): x16,
 * the input stored in 16 bits (x's values are then 16-bit numbers, so the
 * reference reads what the op reads); copy (y_copy16), a 16-bit copy of
 * the first part at y's strides, whose bits must be the rounding of the
 * op's own float y and which leaves everything else (the second part's
 * place, the padding) unwritten. */
static void test_dwconv_split(int64_t B, int64_t C, int64_t L, int width, int x16, int copy)
{
    char name[128];
    char form[32] = "";
    if (x16 || copy)
        snprintf(form, sizeof form, "%s%s%s ", t16_name(), x16 ? " x16" : "", copy ? " copy16" : "");
    snprintf(name, sizeof name, "%sB%lld C%lld+%lld L%lld w%d two parts", form, (long long)B, (long long)C,
             (long long)C, (long long)L, width);
    const int64_t Ct = 2 * C, y2_off = B * C * L + 5, y2_batch = C * L + 2;
    const size_t nx = (size_t)(B * L * Ct), ny = (size_t)(y2_off + B * y2_batch);
    float *x = falloc(nx), *w = falloc((size_t)(C * width)), *w2 = falloc((size_t)(C * width)), *y = falloc(ny);
    double *ref = dalloc(ny);
    uint16_t *xb = u16alloc(nx), *cb = u16alloc(ny);
    fill_uniform(x, nx, 0.0, 2.0);
    for (size_t i = 0; (x16 || copy) && i < nx; i++) {
        xb[i] = to16(x[i]);
        x[i] = from16(xb[i]);
    }
    fill_uniform(w, (size_t)(C * width), 0.0, 1.0);
    fill_uniform(w2, (size_t)(C * width), 0.5, 1.0);
    fill_nan(y, ny);
    to_double(ref, y, ny);
    mvrt_op_params_t op = dwconv_two_parts(B, C, L, width, x, y, w, w2, y2_off, y2_batch);
    mvrt_dwconv1d_params_t *d = &op.u.dwconv1d;
    run_ref(&op, ref);
    if (x16)
        d->x = (const float *)(const void *)xb, d->x16 = g_t16;
    if (copy)
        d->y_copy = (float *)(void *)cb, d->y_copy16 = g_t16;
    /* the copy covers the first part only: [0, B C L) */
    run_dwconv_checked(&op, name, y, ref, ny, cb, copy ? (size_t)(B * C * L) : 0);
    free(x), free(w), free(w2), free(y), free(ref), free(xb), free(cb);
}

/* y16: both parts of the op (split = C, as test_dwconv_split) written in
 * 16 bits, y2 at its own padded strides in the same buffer: each value
 * within one rounding of the double reference (s16_rtol) plus the float
 * tolerance, every place the op does not own left at the sentinel. */
static void test_dwconv_y16(int64_t B, int64_t C, int64_t L, int width, int x16)
{
    char name[128];
    snprintf(name, sizeof name, "%s%s y16 B%lld C%lld+%lld L%lld w%d two parts", t16_name(), x16 ? " x16" : "",
             (long long)B, (long long)C, (long long)C, (long long)L, width);
    const int64_t Ct = 2 * C, y2_off = B * C * L + 5, y2_batch = C * L + 2;
    const size_t nx = (size_t)(B * L * Ct), ny = (size_t)(y2_off + B * y2_batch);
    float *x = falloc(nx), *w = falloc((size_t)(C * width)), *w2 = falloc((size_t)(C * width)), *got = falloc(ny);
    double *ref = dalloc(ny);
    uint16_t *xb = u16alloc(nx), *yb = u16alloc(ny);
    fill_uniform16(x, xb, nx, 0.0, 2.0);
    fill_uniform(w, (size_t)(C * width), 0.0, 1.0);
    fill_uniform(w2, (size_t)(C * width), 0.5, 1.0);
    for (size_t i = 0; i < ny; i++)
        ref[i] = NAN;
    mvrt_op_params_t op = dwconv_two_parts(B, C, L, width, x, got, w, w2, y2_off, y2_batch);
    mvrt_dwconv1d_params_t *d = &op.u.dwconv1d;
    run_ref(&op, ref);
    if (x16)
        d->x = (const float *)(const void *)xb, d->x16 = g_t16;
    d->y = (float *)(void *)yb, d->y2 = (float *)(void *)(yb + y2_off), d->y16 = g_t16;
    const double atol = DW_ATOL * max_abs(ref, ny);
    for (int t = 1; t <= 2; t++) {
        for (size_t i = 0; i < ny; i++)
            yb[i] = S16_SENTINEL;
        run_cpu(&op, t);
        size_t bad = 0;
        for (size_t i = 0; i < ny; i++) {
            if (isnan(ref[i])) {
                bad += yb[i] != S16_SENTINEL;
                continue;
            }
            const double v = from16(yb[i]);
            bad += !(fabs(v - ref[i]) <= (s16_rtol() + DW_RTOL) * fabs(ref[i]) + atol);
        }
        if (bad) {
            printf("FAIL  dwconv1d %s (%d threads): %zu elements wrong\n", name, t, bad);
            g_failures++;
        } else {
            printf("ok    dwconv1d %s (%d threads)\n", name, t);
        }
    }
    free(x), free(w), free(w2), free(got), free(ref), free(xb), free(yb);
}

/* The 16-bit forms with strides that are neither channel- nor length-
 * contiguous (x: channel stride 2, position stride 2C; y token-major with
 * a padded row): the CPU's one-value-at-a-time conversions. */
static void test_dwconv16_strided(int64_t B, int64_t C, int64_t L, int width)
{
    char name[128];
    snprintf(name, sizeof name, "%s x16 copy16 strided B%lld C%lld L%lld w%d", t16_name(), (long long)B,
             (long long)C, (long long)L, width);
    const int64_t xs[3] = {2 * C * L + 3, 2, 2 * C}, ys[3] = {L * (C + 1), 1, C + 1};
    const size_t nx = (size_t)(B * xs[0]), ny = (size_t)(B * ys[0]);
    float *x = falloc(nx), *w = falloc((size_t)(C * width)), *y = falloc(ny);
    double *ref = dalloc(ny);
    uint16_t *xb = u16alloc(nx), *cb = u16alloc(ny);
    fill_uniform16(x, xb, nx, 0.0, 2.0);
    fill_uniform(w, (size_t)(C * width), 0.0, 1.0);
    fill_nan(y, ny);
    to_double(ref, y, ny);
    mvrt_op_params_t op = {.kind = MVRT_OP_DWCONV1D_SILU};
    mvrt_dwconv1d_params_t *d = &op.u.dwconv1d;
    d->batch = B, d->channels = C, d->length = L, d->width = width, d->x = x, d->y = y, d->weight = w;
    memcpy(d->x_stride, xs, sizeof xs);
    memcpy(d->y_stride, ys, sizeof ys);
    run_ref(&op, ref);
    d->x = (const float *)(const void *)xb, d->x16 = g_t16;
    d->y_copy = (float *)(void *)cb, d->y_copy16 = g_t16;
    run_dwconv_checked(&op, name, y, ref, ny, cb, ny);
    free(x), free(w), free(y), free(ref), free(xb), free(cb);
}

/* ---------------- attention ---------------- */
/* The output is a convex combination of value rows, so errors are measured
 * against max|v|: atol = max|v| * (AT_ATOL + AT_LOGIT_EPS * cond), where
 * cond = max over query/key pairs of scale * sum_k |q_k k_k| bounds the
 * magnitude of the terms of a score. A float dot product is off by about
 * eps * that sum, and the softmax turns an absolute score error into the
 * same relative weight error, so peaked (large-logit) cases get a
 * proportionally larger tolerance. */
#define AT_RTOL 1e-5
#define AT_ATOL 5e-6
#define AT_LOGIT_EPS 3e-8

static double attention_cond(const float *qkv, int64_t B, int64_t L, int H, int d, double scale)
{
    const int64_t C = (int64_t)H * d, ld = 3 * C;
    double cond = 0.0;
    for (int64_t b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int64_t i = 0; i < L; i++)
                for (int64_t j = 0; j < L; j++) {
                    const float *q = qkv + (b * L + i) * ld + (int64_t)h * d;
                    const float *k = qkv + (b * L + j) * ld + C + (int64_t)h * d;
                    double s = 0.0;
                    for (int kk = 0; kk < d; kk++)
                        s += fabs((double)q[kk] * k[kk]);
                    if (s * scale > cond)
                        cond = s * scale;
                }
    return cond;
}

/* The fp32 attention's absolute tolerance for these q, k, v (see above):
 * max|v| * (AT_ATOL + AT_LOGIT_EPS * cond) with scale 1 / sqrt(d). */
static double attention_atol(const float *qkv, int64_t B, int64_t L, int H, int d)
{
    const int64_t C = (int64_t)H * d;
    double vmax = 0.0;
    for (int64_t r = 0; r < B * L; r++)
        for (int64_t c = 0; c < C; c++)
            vmax = fmax(vmax, fabs((double)qkv[r * 3 * C + 2 * C + c]));
    const double cond = attention_cond(qkv, B, L, H, d, (float)(1.0 / sqrt((double)d)));
    return vmax * (AT_ATOL + AT_LOGIT_EPS * cond);
}

static void test_attention(int64_t B, int64_t L, int H, int d, double amp)
{
    char name[128];
    snprintf(name, sizeof name, "B%lld L%lld heads %d dim %d amp %g", (long long)B, (long long)L,
             H, d, amp);
    const int64_t C = (int64_t)H * d;
    const size_t nqkv = (size_t)(B * L * 3 * C), no = (size_t)(B * L * C);
    float *qkv = falloc(nqkv), *out = falloc(no);
    double *ref = dalloc(no);
    fill_uniform(qkv, nqkv, 0.0, amp);
    fill_nan(out, no);
    to_double(ref, out, no);

    mvrt_op_params_t op = {.kind = MVRT_OP_ATTENTION};
    op.u.attention = (mvrt_attention_params_t){.batch = B, .length = L, .heads = H,
                                                .head_dim = d,
                                                .scale = (float)(1.0 / sqrt((double)d)),
                                                .qkv = qkv, .out = out};
    run_ref(&op, ref);
    check_threads("attention", name, &op, out, ref, no, AT_RTOL, attention_atol(qkv, B, L, H, d));
    free(qkv);
    free(out);
    free(ref);
}

/* Attention with 16-bit q, k, v (qkv16) and/or output (out16): q, k, v
 * hold 16-bit numbers (both sides read the same values), the reference is
 * the double attention of them, the CPU computes in fp32 (the fp32 cases'
 * tolerance) and rounds a 16-bit output once (S16_RTOL more). */
static void test_attention16(int64_t B, int64_t L, int H, int d, int qkv16, int out16)
{
    char name[128];
    snprintf(name, sizeof name, "%s%s%s B%lld L%lld heads %d dim %d", t16_name(), qkv16 ? " qkv" : "",
             out16 ? " out" : "", (long long)B, (long long)L, H, d);
    const int64_t C = (int64_t)H * d;
    const size_t nqkv = (size_t)(B * L * 3 * C), no = (size_t)(B * L * C);
    float *qkv = falloc(nqkv), *out = falloc(no), *got = falloc(no);
    double *ref = dalloc(no);
    fill_uniform(qkv, nqkv, 0.0, 1.5);
    uint16_t *qkv_h = u16alloc(nqkv), *out_h = u16alloc(no);
    for (size_t i = 0; i < nqkv; i++) {
        qkv_h[i] = to16(qkv[i]);
        qkv[i] = from16(qkv_h[i]);
    }
    mvrt_op_params_t op = {.kind = MVRT_OP_ATTENTION};
    op.u.attention = (mvrt_attention_params_t){.batch = B, .length = L, .heads = H, .head_dim = d,
                                                .scale = (float)(1.0 / sqrt((double)d)), .qkv = qkv, .out = out};
    run_ref(&op, ref);
    const double atol = attention_atol(qkv, B, L, H, d);
    op.u.attention.math = g_t16 == MVRT_STORAGE16_F16 ? MVRT_MATH_FP16 : MVRT_MATH_BF16;
    if (qkv16)
        op.u.attention.qkv = (const float *)(const void *)qkv_h, op.u.attention.qkv16 = g_t16;
    if (out16)
        op.u.attention.out = (float *)(void *)out_h, op.u.attention.out16 = g_t16;
    for (int t = 1; t <= 2; t++) {
        fill_nan(out, no);
        for (size_t i = 0; i < no; i++)
            out_h[i] = S16_SENTINEL;
        run_cpu(&op, t);
        if (out16)
            decode16(out_h, no, 1, 0, 1, (int64_t)no, (int64_t)no, got);
        else
            memcpy(got, out, no * sizeof(float));
        compare("attention", name, t, got, ref, no, AT_RTOL + (out16 ? S16_RTOL : 0.0), atol);
    }
    free(qkv), free(out), free(got), free(ref), free(qkv_h), free(out_h);
}

/* ---------------- window partition / reverse ---------------- */
/* Pure data movement: results must be exact (zero tolerance). */

static void test_window(int64_t B, int64_t C, int64_t H, int64_t W, int ws)
{
    char name[128];
    snprintf(name, sizeof name, "B%lld C%lld %lldx%lld window %d", (long long)B, (long long)C,
             (long long)H, (long long)W, ws);
    const int64_t nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
    const size_t nmap = (size_t)(B * C * H * W), ntok = (size_t)(B * nh * nw * ws * ws * C);
    float *map = falloc(nmap), *tok = falloc(ntok), *map2 = falloc(nmap);
    float *tok_in = falloc(ntok);
    double *ref_tok = dalloc(ntok), *ref_map = dalloc(nmap);
    fill_uniform(map, nmap, 0.0, 1.0);
    fill_uniform(tok_in, ntok, 0.0, 1.0);

    /* Partition into a NaN-filled buffer: padding tokens must become 0. */
    mvrt_op_params_t op = {.kind = MVRT_OP_WINDOW_PARTITION};
    op.u.window = (mvrt_window_params_t){.batch = B, .channels = C, .height = H, .width = W,
                                          .window = ws, .src = map, .dst = tok};
    fill_nan(tok, ntok);
    to_double(ref_tok, tok, ntok);
    run_ref(&op, ref_tok);
    check_threads("win-part", name, &op, tok, ref_tok, ntok, 0.0, 0.0);

    /* Round trip: reverse(partition(map)) == map, bit for bit. */
    for (int t = 1; t <= 2; t++) {
        mvrt_op_params_t rev = {.kind = MVRT_OP_WINDOW_REVERSE};
        rev.u.window = (mvrt_window_params_t){.batch = B, .channels = C, .height = H,
                                               .width = W, .window = ws, .src = tok, .dst = map2};
        fill_nan(map2, nmap);
        run_cpu(&rev, t);
        to_double(ref_map, map, nmap);
        compare("win-trip", name, t, map2, ref_map, nmap, 0.0, 0.0);
    }

    /* Reverse from arbitrary tokens (padding tokens hold data to drop). */
    op.kind = MVRT_OP_WINDOW_REVERSE;
    op.u.window.src = tok_in;
    op.u.window.dst = map2;
    fill_nan(map2, nmap);
    to_double(ref_map, map2, nmap);
    run_ref(&op, ref_map);
    check_threads("win-rev", name, &op, map2, ref_map, nmap, 0.0, 0.0);
    free(map);
    free(tok);
    free(map2);
    free(tok_in);
    free(ref_tok);
    free(ref_map);
}

/* ---------------- affine + average pool ---------------- */
#define AP_RTOL 2e-6
#define AP_ATOL 2e-7

static void test_pool(int64_t B, int64_t C, int64_t S, double mean)
{
    char name[128];
    snprintf(name, sizeof name, "B%lld C%lld spatial %lld mean %g", (long long)B, (long long)C,
             (long long)S, mean);
    const size_t nx = (size_t)(B * C * S), ny = (size_t)(B * C);
    float *x = falloc(nx), *sc = falloc((size_t)C), *sh = falloc((size_t)C), *y = falloc(ny);
    double *ref = dalloc(ny);
    fill_uniform(x, nx, mean, 1.0);
    fill_uniform(sc, (size_t)C, 0.0, 2.0);
    fill_uniform(sh, (size_t)C, 0.0, 1.0);
    fill_nan(y, ny);
    to_double(ref, y, ny);
    mvrt_op_params_t op = {.kind = MVRT_OP_AFFINE_AVGPOOL};
    op.u.pool = (mvrt_affine_avgpool_params_t){.batch = B, .channels = C, .spatial = S, .x = x,
                                                .scale = sc, .shift = sh, .y = y};
    run_ref(&op, ref);
    check_threads("pool", name, &op, y, ref, ny, AP_RTOL, AP_ATOL * max_abs(ref, ny));
    free(x);
    free(sc);
    free(sh);
    free(y);
    free(ref);
}

/* ---------------- 16-bit NHWC maps (the graph's bf16 conv stages) ----------------
 * conv2d, window partition / reverse and pool with bf16 NHWC maps, against
 * the double reference of the NCHW op on the same float values (bf16
 * inputs hold them exactly), permuted to NHWC. The CPU computes in fp32
 * with fp32 weights and rounds a bf16 output once: rtol 1.125 * 2^-8 on
 * top of fp32 accuracy (atol 1e-5 of the largest |ref|). */
#define MAP16_RTOL (1.125 * s16_rtol())
#define MAP16_ATOL 1e-5

/* NCHW (batch, C, sp) -> NHWC with Cs >= C channels stored per position
 * (zeros past C: a padded map, x_map_channels) */
static void nchw_to_nhwc(const double *src, double *dst, int64_t batch, int64_t C, int64_t Cs, int64_t sp)
{
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < sp; i++)
            for (int64_t c = 0; c < Cs; c++)
                dst[(b * sp + i) * Cs + c] = c < C ? src[(b * C + c) * sp + i] : 0.0;
}

/* n random floats rounded to bf16, as floats (NCHW) and as NHWC bits with
 * Cs >= C channels stored per position (zeros past C) */
static float *map16_values(int64_t batch, int64_t C, int64_t Cs, int64_t sp, uint16_t **out16)
{
    const size_t n = (size_t)(batch * C * sp);
    float *x = falloc(n);
    uint16_t *x16 = calloc((size_t)(batch * Cs * sp) + 1, sizeof(uint16_t));
    if (!x16) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    fill_uniform(x, n, 0.0, 1.0);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < sp; i++) {
                const uint16_t h = to16(x[(b * C + c) * sp + i]);
                x[(b * C + c) * sp + i] = from16(h);
                x16[(b * sp + i) * Cs + c] = h;
            }
    *out16 = x16;
    return x;
}

/* Runs op with 1 and 2 threads into the 16-bit y16 (NaN bits before each
 * run) and compares the values decoded as g_t16 with ref (rtol on top of
 * MAP16_ATOL). */
static void check_threads16_rtol(const char *kind, const char *name, const mvrt_op_params_t *op, uint16_t *y16,
                                 const double *ref, size_t n, double rtol)
{
    float *got = falloc(n);
    for (int t = 1; t <= 2; t++) {
        for (size_t i = 0; i < n; i++)
            y16[i] = 0x7fc0u;
        run_cpu(op, t);
        for (size_t i = 0; i < n; i++)
            got[i] = from16(y16[i]);
        compare(kind, name, t, got, ref, n, rtol, MAP16_ATOL * max_abs(ref, n));
    }
    free(got);
}
static void check_threads16(const char *kind, const char *name, const mvrt_op_params_t *op, uint16_t *y16,
                            const double *ref, size_t n)
{
    check_threads16_rtol(kind, name, op, y16, ref, n, MAP16_RTOL);
}

/* xs, ys: the channels x's and y's 16-bit maps store per position
 * (x_map_channels / y_map_channels when more than cin / cout): the padding
 * channels of y must come out +0 exactly. y_other: y holds the other
 * 16-bit type than x (g_t16) and the math (a bf16 graph's boundary between
 * its fp16 conv stages and its bf16 maps, mv_op_params.h; no residual):
 * rounded to x's type, then to y's, so the tolerance is the coarser
 * type's (bf16: 1.125 of its half ulp); a y decoded as the wrong type is
 * off by orders of magnitude. */
static void conv2d_nhwc16_case(int64_t batch, int64_t cin, int64_t h, int64_t w, int64_t cout, int stride, int act,
                               int residual, int x16, int64_t xs, int64_t ys, int y_other)
{
    const int tx = g_t16, ty = y_other ? (g_t16 == MVRT_STORAGE16_F16 ? MVRT_STORAGE16_BF16 : MVRT_STORAGE16_F16) : g_t16;
    char name[160];
    snprintf(name, sizeof name, "nhwc %s%s b%lld %lld->%lld %lldx%lld s%d act %d%s%s stored %lld->%lld", t16_name(),
             y_other ? (ty == MVRT_STORAGE16_F16 ? ">fp16" : ">bf16") : "", (long long)batch, (long long)cin,
             (long long)cout, (long long)h, (long long)w, stride, act, residual ? " res" : "",
             x16 ? "" : " x NCHW f32", (long long)xs, (long long)ys);
    const int64_t oh = (h + 2 - 3) / stride + 1, ow = (w + 2 - 3) / stride + 1;
    const size_t ny = (size_t)(batch * ys * oh * ow), ny_dense = (size_t)(batch * cout * oh * ow);
    uint16_t *xb, *rb;
    float *x = map16_values(batch, cin, xs, h * w, &xb), *r = map16_values(batch, cout, ys, oh * ow, &rb);
    float *wt = falloc((size_t)(cout * cin * 9)), *bias = falloc((size_t)cout), *y32 = falloc(ny_dense);
    uint16_t *y16 = malloc(ny * sizeof(uint16_t));
    double *refn = dalloc(ny_dense), *ref = dalloc(ny);
    if (!y16) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    fill_uniform(wt, (size_t)(cout * cin * 9), 0.0, 0.5);
    fill_uniform(bias, (size_t)cout, 0.0, 1.0);
    mvrt_op_params_t op = {.kind = MVRT_OP_CONV2D};
    op.u.conv2d = (mvrt_conv2d_params_t){.batch = batch, .in_channels = cin, .in_h = h, .in_w = w,
                                         .out_channels = cout, .out_h = oh, .out_w = ow, .kernel = 3,
                                         .stride = stride, .pad = 1, .x = x, .weight = wt, .bias = bias,
                                         .residual = residual ? r : NULL, .y = y32, .activation = act,
                                         .math = tx == MVRT_STORAGE16_F16 ? MVRT_MATH_FP16 : MVRT_MATH_BF16};
    run_ref(&op, refn);
    nchw_to_nhwc(refn, ref, batch, cout, ys, oh * ow);
    op.u.conv2d.x = x16 ? (const float *)(const void *)xb : x;
    op.u.conv2d.residual = residual ? (const float *)(const void *)rb : NULL;
    op.u.conv2d.y = (float *)(void *)y16;
    op.u.conv2d.x_nhwc16 = x16 ? tx : 0, op.u.conv2d.y_nhwc16 = ty;
    op.u.conv2d.x_map_channels = x16 && xs != cin ? xs : 0;
    op.u.conv2d.y_map_channels = ys != cout ? ys : 0;
    g_cases++;
    if (mvrt_op_storage16(&op) != tx) { /* the rule every backend checks first */
        printf("FAIL  conv2d %s: mvrt_op_storage16 %d, want %d\n", name, mvrt_op_storage16(&op), tx);
        g_failures++;
    }
    g_t16 = ty; /* y decoded as its type */
    check_threads16_rtol("conv2d", name, &op, y16, ref, ny, y_other ? 1.125 / 256.0 : MAP16_RTOL);
    g_t16 = tx;
    g_cases++;
    for (size_t i = 0; i < ny; i++)
        if ((int64_t)(i % (size_t)ys) >= cout && y16[i] != 0) {
            fprintf(stderr, "FAIL conv2d %s: padding channel %lld of position %zu holds 0x%04x, not +0\n", name,
                    (long long)(i % (size_t)ys), i / (size_t)ys, y16[i]);
            g_failures++;
            break;
        }
    free(x), free(xb), free(r), free(rb), free(wt), free(bias), free(y32), free(y16), free(refn), free(ref);
}
static void test_conv2d_nhwc16(int64_t batch, int64_t cin, int64_t h, int64_t w, int64_t cout, int stride, int act,
                               int residual, int x16, int64_t xs, int64_t ys)
{
    conv2d_nhwc16_case(batch, cin, h, w, cout, stride, act, residual, x16, xs, ys, 0);
}
static void test_conv2d_nhwc16_other_y(int64_t batch, int64_t cin, int64_t h, int64_t w, int64_t cout, int stride,
                                       int act, int64_t xs, int64_t ys)
{
    conv2d_nhwc16_case(batch, cin, h, w, cout, stride, act, 0, 1, xs, ys, 1);
}

/* The rule every backend checks before a conv (mvrt_op_storage16): a
 * stored channel count is 0 or in [channels, 65536], and only on a map in
 * 16 bits, prepared filters as below; anything else is -1 (refused as
 * unsupported). */
static void test_conv_map_channels_rule(void)
{
    mvrt_op_params_t op = {.kind = MVRT_OP_CONV2D};
    mvrt_conv2d_params_t *c = &op.u.conv2d;
    c->in_channels = 12, c->out_channels = 12, c->math = MVRT_MATH_BF16;
    c->x_nhwc16 = c->y_nhwc16 = MVRT_STORAGE16_BF16;
    static const struct {
        int x16, y16;
        int64_t xs, ys;
        int want;
    } cases[] = {
        {1, 1, 0, 0, MVRT_STORAGE16_BF16},     {1, 1, 16, 16, MVRT_STORAGE16_BF16},
        {1, 1, 12, 65536, MVRT_STORAGE16_BF16}, {1, 1, 8, 16, -1},
        {1, 1, 16, 11, -1},                     {1, 1, 16, 65537, -1},
        {0, 1, 16, 16, -1},                     {0, 1, 0, 16, MVRT_STORAGE16_BF16},
        {1, 0, 0, 16, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        c->x_nhwc16 = cases[i].x16 ? MVRT_STORAGE16_BF16 : 0;
        c->y_nhwc16 = cases[i].y16 ? MVRT_STORAGE16_BF16 : 0;
        c->x_map_channels = cases[i].xs, c->y_map_channels = cases[i].ys;
        const int got = mvrt_op_storage16(&op);
        g_cases++;
        if (got != cases[i].want) {
            printf("FAIL  conv map channels rule, case %zu (x16 %d y16 %d stored %lld / %lld): %d, want %d\n", i,
                   cases[i].x16, cases[i].y16, (long long)cases[i].xs, (long long)cases[i].ys, got, cases[i].want);
            g_failures++;
        }
    }
    /* prepared filters (weight16, bias_stored): both or neither, both
     * 256-byte aligned, only between two 16-bit maps */
    static const struct {
        int x16, y16;
        uintptr_t w, b;
        int want;
    } prep[] = {
        {1, 1, 0x1000, 0x2000, MVRT_STORAGE16_BF16}, {1, 1, 0x1000, 0, -1}, {1, 1, 0, 0x2000, -1},
        {0, 1, 0x1000, 0x2000, -1},                  {1, 0, 0x1000, 0x2000, -1}, {1, 1, 0x1080, 0x2000, -1},
        {1, 1, 0x1000, 0x2010, -1},                  {0, 1, 0, 0, MVRT_STORAGE16_BF16},
    };
    /* y of the other 16-bit type: only between two 16-bit maps, without a
     * residual; x stays of the math's type */
    static const struct {
        int math, x16, y16, residual, want;
    } other[] = {
        {MVRT_MATH_FP16, MVRT_STORAGE16_F16, MVRT_STORAGE16_BF16, 0, MVRT_STORAGE16_F16},
        {MVRT_MATH_BF16, MVRT_STORAGE16_BF16, MVRT_STORAGE16_F16, 0, MVRT_STORAGE16_BF16},
        {MVRT_MATH_FP16, MVRT_STORAGE16_F16, MVRT_STORAGE16_BF16, 1, -1},
        {MVRT_MATH_FP16, 0, MVRT_STORAGE16_BF16, 0, -1},
        {MVRT_MATH_BF16, MVRT_STORAGE16_F16, MVRT_STORAGE16_BF16, 0, -1},
        {MVRT_MATH_FP16, MVRT_STORAGE16_F16, 5, 0, -1},
    };
    c->x_map_channels = c->y_map_channels = 0;
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        c->math = other[i].math;
        c->x_nhwc16 = other[i].x16, c->y_nhwc16 = other[i].y16;
        c->residual = other[i].residual ? (const float *)(uintptr_t)0x3000 : NULL;
        const int got = mvrt_op_storage16(&op);
        g_cases++;
        if (got != other[i].want) {
            printf("FAIL  conv y of the other type rule, case %zu (math %d x16 %d y16 %d residual %d): %d, want %d\n",
                   i, other[i].math, other[i].x16, other[i].y16, other[i].residual, got, other[i].want);
            g_failures++;
        }
    }
    c->math = MVRT_MATH_BF16, c->residual = NULL;
    for (size_t i = 0; i < sizeof prep / sizeof *prep; i++) {
        c->x_nhwc16 = prep[i].x16 ? MVRT_STORAGE16_BF16 : 0;
        c->y_nhwc16 = prep[i].y16 ? MVRT_STORAGE16_BF16 : 0;
        c->weight16 = (const void *)prep[i].w, c->bias_stored = (const float *)prep[i].b;
        const int got = mvrt_op_storage16(&op);
        g_cases++;
        if (got != prep[i].want) {
            printf("FAIL  conv prepared filters rule, case %zu (x16 %d y16 %d weight16 %#lx bias_stored %#lx): %d, "
                   "want %d\n",
                   i, prep[i].x16, prep[i].y16, (unsigned long)prep[i].w, (unsigned long)prep[i].b, got, prep[i].want);
            g_failures++;
        }
    }
}

static void test_window_nhwc16(int64_t batch, int64_t C, int64_t H, int64_t W, int ws)
{
    char name[128];
    snprintf(name, sizeof name, "nhwc %s b%lld c%lld %lldx%lld ws %d", t16_name(), (long long)batch, (long long)C,
             (long long)H, (long long)W, ws);
    const int64_t nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
    const size_t nmap = (size_t)(batch * C * H * W), ntok = (size_t)(batch * nh * nw * ws * ws * C);
    uint16_t *m16;
    float *map = map16_values(batch, C, C, H * W, &m16);
    float *tok = falloc(ntok), *map32 = falloc(nmap);
    double *ref = dalloc(ntok > nmap ? ntok : nmap), *refn = dalloc(nmap);
    /* partition: bf16 map -> float tokens, exact */
    mvrt_op_params_t op = {.kind = MVRT_OP_WINDOW_PARTITION};
    op.u.window = (mvrt_window_params_t){.batch = batch, .channels = C, .height = H, .width = W, .window = ws,
                                         .src = map, .dst = tok};
    for (size_t i = 0; i < ntok; i++)
        ref[i] = NAN;
    run_ref(&op, ref);
    op.u.window.src = (const float *)(const void *)m16, op.u.window.map_nhwc16 = g_t16;
    check_threads("window", name, &op, tok, ref, ntok, 0.0, 0.0);
    /* reverse: float tokens (random, not bf16 values) -> bf16 map, rounded once */
    fill_uniform(tok, ntok, 0.0, 1.0);
    op.kind = MVRT_OP_WINDOW_REVERSE;
    op.u.window.src = tok, op.u.window.dst = map32, op.u.window.map_nhwc16 = 0;
    run_ref(&op, refn);
    nchw_to_nhwc(refn, ref, batch, C, C, H * W);
    op.u.window.dst = (float *)(void *)m16, op.u.window.map_nhwc16 = g_t16;
    check_threads16("window rev", name, &op, m16, ref, nmap);
    free(map), free(m16), free(tok), free(map32), free(ref), free(refn);
}

static void test_pool_nhwc16(int64_t batch, int64_t C, int64_t spatial)
{
    char name[128];
    snprintf(name, sizeof name, "nhwc %s b%lld c%lld sp %lld", t16_name(), (long long)batch, (long long)C,
             (long long)spatial);
    uint16_t *x16;
    float *x = map16_values(batch, C, C, spatial, &x16);
    float *sc = falloc((size_t)C), *sh = falloc((size_t)C), *y = falloc((size_t)(batch * C));
    double *ref = dalloc((size_t)(batch * C));
    fill_uniform(sc, (size_t)C, 1.0, 0.5);
    fill_uniform(sh, (size_t)C, 0.0, 1.0);
    mvrt_op_params_t op = {.kind = MVRT_OP_AFFINE_AVGPOOL};
    op.u.pool = (mvrt_affine_avgpool_params_t){.batch = batch, .channels = C, .spatial = spatial, .x = x,
                                               .scale = sc, .shift = sh, .y = y};
    run_ref(&op, ref);
    op.u.pool.x = (const float *)(const void *)x16, op.u.pool.x_nhwc16 = g_t16;
    check_threads("pool", name, &op, y, ref, (size_t)(batch * C), AP_RTOL, AP_ATOL * max_abs(ref, (size_t)(batch * C)));
    free(x), free(x16), free(sc), free(sh), free(y), free(ref);
}

int main(void)
{
    /* LayerNorm: 1 column (zero variance), odd widths, widths that are not
     * multiples of 16/32/64, padded rows, in place, large mean. */
    test_layernorm(1, 1, 1, 1, 0, 0.0, 1.0);
    test_layernorm(3, 1, 4, 2, 0, 5.0, 1.0);
    test_layernorm(1, 33, 33, 33, 0, 0.0, 1.0);
    test_layernorm(5, 65, 70, 66, 0, 0.5, 2.0);
    test_layernorm(7, 320, 333, 321, 0, 0.0, 1.0);
    test_layernorm(9, 17, 20, 20, 1, 0.0, 1.0);
    test_layernorm(5, 784, 800, 800, 1, 3.0, 1.0);
    test_layernorm(64, 80, 80, 80, 0, 1000.0, 1.0);
    test_layernorm(33, 196, 200, 197, 0, -250.0, 0.01);
    test_layernorm(300, 160, 160, 160, 0, 0.0, 3.0);
    test_layernorm(257, 97, 101, 99, 1, 10.0, 1.0);

    /* 16-bit storage forms, bf16 then fp16: LayerNorm outputs (padded
     * rows, a large mean), the MLP's fc1 (16-bit A and Y, bias + GELU) and
     * fc2 (16-bit A, fp32 Y), a transposed batched A, odd sizes */
    for (int pass = 0; pass < 2; pass++) {
        g_t16 = pass ? MVRT_STORAGE16_F16 : MVRT_STORAGE16_BF16;
        test_layernorm_bf16(1, 1, 1, 1, 0.0, 1.0, 0);
        test_dwconv_split(2, 160, 196, 3, 1, 1);
        test_dwconv_split(3, 33, 49, 4, 1, 0);
        test_dwconv_split(2, 5, 7, 3, 0, 1);
        test_dwconv16_strided(2, 5, 7, 3);
        test_dwconv_y16(2, 160, 196, 3, 1);
        test_dwconv_y16(3, 33, 49, 4, 0);
        test_linear_b16_act(3, 256, 196, 32, 1);
        test_linear_b16_act(2, 48, 49, 256, 1);
        test_linear_b16_act(2, 7, 5, 3, 0);
        test_layernorm_bf16(7, 320, 333, 322, 0.0, 1.0, 0);
        test_layernorm_bf16(33, 97, 101, 99, 100.0, 1.0, 0);
        test_linear_bf16(1, 49, 64, 40, 0, 1, 1, MVRT_ACT_GELU_ERF, 0);
        test_linear_bf16(1, 37, 33, 129, 0, 1, 0, MVRT_ACT_NONE, 0);
        test_linear_bf16(3, 17, 9, 21, 1, 1, 1, MVRT_ACT_SILU, 0);
        test_linear_bf16(2, 5, 7, 3, 0, 0, 1, MVRT_ACT_RELU, 0);
        /* a 16-bit residual stream: LayerNorms of 16-bit rows, linears
         * accumulating onto 16-bit rows (in place, or another matrix) */
        test_layernorm_bf16(7, 320, 333, 322, 0.0, 1.0, 1);
        test_layernorm_bf16(33, 97, 101, 99, 100.0, 1.0, 1);
        test_linear_bf16(1, 49, 64, 40, 0, 1, 1, MVRT_ACT_NONE, 1);
        test_linear_bf16(3, 17, 9, 21, 1, 1, 1, MVRT_ACT_NONE, 1);
        test_linear_bf16(2, 5, 7, 3, 0, 0, 1, MVRT_ACT_NONE, 2);
        test_attention16(2, 49, 2, 16, 1, 1);
        test_attention16(1, 17, 3, 7, 1, 0);
        test_attention16(3, 5, 1, 40, 0, 1);
    }

    /* Depthwise conv1d: widths 1..5 (odd and even 'same' padding), lengths
     * 1 and 2 (shorter than the kernel), the MambaVision token-major read,
     * lengths over one tile (254), and the direct path for huge widths. */
    const int64_t lens[] = {1, 2, 3, 49, 196};
    for (int width = 1; width <= 5; width++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (int layout = 0; layout < 4; layout++)
                test_dwconv(2, 33, lens[li], width, layout);
    test_dwconv(1, 1, 1, 3, DW_CM);
    test_dwconv(3, 80, 49, 3, DW_TM_IN);
    test_dwconv(2, 196, 196, 3, DW_TM_IN);
    test_dwconv(1, 65, 300, 3, DW_TM_IN);
    test_dwconv(1, 65, 600, 4, DW_CM_PADDED);
    test_dwconv(2, 40, 517, 5, DW_TM_BOTH);
    test_dwconv_split(2, 160, 196, 3, 0, 0);
    test_dwconv_split(3, 33, 49, 4, 0, 0);
    test_dwconv_split(1, 5, 1, 3, 0, 0);
    test_dwconv(1, 3, 300, 128, DW_CM);
    test_dwconv(1, 3, 300, 129, DW_TM_IN);
    test_dwconv(2, 5, 40, 200, DW_CM_PADDED);
    /* Pre-activations far beyond +-87, where SiLU's exp saturates. */
    test_dwconv_amp(2, 37, 77, 3, DW_TM_IN, 100.0);
    test_dwconv_amp(1, 9, 300, 5, DW_CM, 300.0);
    test_dwconv_amp(1, 9, 50, 129, DW_CM, 30.0);

    /* Attention: L = 1, odd L, 49 and 196; head dims 8/16/32/40/33 and 1;
     * logits large enough to need the max subtraction (amp 30). */
    test_attention(1, 1, 1, 8, 1.0);
    test_attention(2, 1, 3, 33, 1.0);
    test_attention(1, 7, 8, 8, 1.0);
    test_attention(3, 17, 3, 33, 1.0);
    test_attention(2, 49, 2, 16, 1.0);
    test_attention(1, 49, 5, 40, 2.0);
    test_attention(1, 196, 8, 40, 1.0);
    test_attention(1, 196, 1, 40, 1.0);
    test_attention(2, 196, 4, 32, 2.0);
    test_attention(1, 101, 6, 1, 1.0);
    test_attention(1, 63, 2, 24, 30.0);
    test_attention(1, 49, 4, 40, 30.0);
    test_attention(5, 33, 7, 16, 1.0);

    /* Window partition / reverse: H, W not multiples of the window, a map
     * smaller than one window, one exact window, several windows, and rows
     * wider than the kernels' 64-column tiles. */
    test_window(1, 3, 9, 11, 4);
    test_window(2, 5, 1, 1, 7);
    test_window(1, 33, 14, 14, 14);
    test_window(2, 80, 28, 28, 7);
    test_window(3, 70, 15, 130, 8);
    test_window(1, 1, 7, 7, 7);
    test_window(2, 40, 23, 9, 1);

    /* Affine + average pool. */
    test_pool(1, 1, 1, 0.0);
    test_pool(3, 33, 1, 0.0);
    test_pool(2, 3, 49, 0.0);
    test_pool(2, 640, 49, 0.0);
    test_pool(1, 5, 3136, 100.0);
    test_pool(4, 65, 256, -3.0);

    /* 16-bit NHWC maps: the stem from NCHW floats (3 channels), conv
     * blocks (tanh GELU; bias + residual), a downsampler, odd sizes; window
     * partition / reverse with padding; pool. */
    for (int pass = 0; pass < 2; pass++) {
        g_t16 = pass ? MVRT_STORAGE16_F16 : MVRT_STORAGE16_BF16;
        test_conv2d_nhwc16(2, 3, 17, 15, 8, 2, MVRT_ACT_RELU, 0, 0, 3, 8);
        test_conv2d_nhwc16(1, 8, 9, 11, 16, 1, MVRT_ACT_GELU_TANH, 0, 1, 8, 16);
        test_conv2d_nhwc16(2, 16, 7, 6, 16, 1, MVRT_ACT_NONE, 1, 1, 16, 16);
        test_conv2d_nhwc16(3, 5, 10, 9, 7, 2, MVRT_ACT_NONE, 0, 1, 5, 7);
        test_conv_map_channels_rule();
        /* maps padded to 8 channels (MambaVision-L's 196 -> 200 in small) */
        test_conv2d_nhwc16(2, 12, 9, 7, 12, 1, MVRT_ACT_GELU_TANH, 0, 1, 16, 16);
        test_conv2d_nhwc16(2, 12, 9, 7, 12, 1, MVRT_ACT_NONE, 1, 1, 16, 24);
        test_conv2d_nhwc16(1, 12, 9, 8, 24, 2, MVRT_ACT_NONE, 0, 1, 16, 24);
        test_conv2d_nhwc16(1, 3, 11, 9, 12, 2, MVRT_ACT_RELU, 0, 0, 3, 16);
        /* y of the other type: the downsampler into a bf16 graph's token stages */
        test_conv2d_nhwc16_other_y(2, 16, 9, 7, 32, 2, MVRT_ACT_NONE, 16, 32);
        test_conv2d_nhwc16_other_y(1, 12, 8, 8, 20, 2, MVRT_ACT_GELU_TANH, 16, 24);
        test_window_nhwc16(2, 24, 5, 7, 3);
        test_window_nhwc16(1, 40, 14, 14, 14);
        test_pool_nhwc16(2, 24, 5);
        test_pool_nhwc16(3, 640, 49);
    }

    printf("%d comparisons, %d failures\n", g_cases, g_failures);
    return g_failures ? 1 : 0;
}
