/* The MambaVision ops of a GPU plugin (op_scratch_size / op_run, ABI v2)
 * against the double-precision references (ops/common/mv_reference.h), at
 * the plugin ABI. Built for the CUDA plugin and, from the same source, for
 * the HIP plugin (tests/hip).
 *
 * Every op kind on edge shapes (sizes 1, odd sizes, sizes that are not
 * multiples of 32/64, padded leading dimensions, batch strides with gaps,
 * shared operands, every transpose combination, activation, bias mode,
 * beta 0/1, fast math) and on MambaVision-sized problems. Outputs are
 * poisoned with NaN before each run: every element the op must write is
 * compared with the reference, every other element of the output buffer
 * (gaps, padding) must be bit-for-bit untouched. The large cases compare
 * sampled rows/images only (the double reference would take minutes).
 * The linear and conv2d cases run five times: on the default path (CUDA:
 * small fp32 GEMMs on the cluster GEMM on sm_90+, the others on CUTLASS
 * 3xTF32 where built and aligned, else cuBLAS), with the cluster GEMM
 * limited to 2 slices (MVRT_CUDA_GEMM_CLUSTER=2) and off (=0), with
 * MVRT_CUDA_FP32_GEMM=sgemm (cuBLAS SGEMM) and with <prefix>GEMM=builtin
 * (our own GEMM kernel, the HIP path).
 * The GPU-only fused forms (a linear with a folded LayerNorm, the fused
 * MLP) are checked where the device takes them and must be declined, by
 * op_run too with the output untouched, where it does not (shapes, knobs).
 * Two ops are also captured into a graph and replayed.
 *
 * Pass criterion per element: |got - ref| <= atol + rtol * |ref|, with
 * (atol, rtol) stated per op in main(); the worst ratio |got-ref| / (atol +
 * rtol |ref|) and the worst absolute error of each case are printed.
 * Exit 77 when no device is usable.
 * usage: test_cuda_ops PLUGIN_PATH [case-name-filter] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setenv */
#endif
#include "cuda_test_util.h"
#include "mv_reference.h"

static const mvrt_plugin_vtable_t *vt;
static void *dev;
static void *stream;
static const char *filter;
static const char *gemm_mode = "default";
static int fails, ran;

/* ---- buffers: host copy + device copy ---- */
typedef struct buf {
    float *h;
    void *d;
    int64_t n;
} buf_t;

static buf_t buf_new(int64_t n)
{
    buf_t b;
    b.n = n > 0 ? n : 1;
    b.h = malloc(sizeof(float) * (size_t)b.n);
    if (!b.h) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    TU_CHECK(vt->mem_alloc(dev, sizeof(float) * (size_t)b.n, &b.d));
    return b;
}
/* random input in [lo, hi), uploaded */
static buf_t buf_rand(int64_t n, double lo, double hi)
{
    buf_t b = buf_new(n);
    for (int64_t i = 0; i < b.n; i++) b.h[i] = (float)tu_uniform(lo, hi);
    TU_CHECK(vt->copy_h2d(dev, stream, b.d, b.h, sizeof(float) * (size_t)b.n));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    return b;
}
static void buf_upload(buf_t *b)
{
    TU_CHECK(vt->copy_h2d(dev, stream, b->d, b->h, sizeof(float) * (size_t)b->n));
    TU_CHECK(vt->stream_synchronize(dev, stream));
}
/* output: host keeps the initial content (NaN poison) that unwritten
 * elements must keep */
static buf_t buf_out(int64_t n)
{
    buf_t b = buf_new(n);
    const uint32_t nan = 0x7fc00000u;
    for (int64_t i = 0; i < b.n; i++) memcpy(&b.h[i], &nan, 4);
    buf_upload(&b);
    return b;
}
static void buf_free(buf_t *b)
{
    if (b->d) vt->mem_free(dev, b->d);
    free(b->h);
    memset(b, 0, sizeof *b);
}
static float *download(const buf_t *b)
{
    float *h = malloc(sizeof(float) * (size_t)b->n);
    if (!h) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    TU_CHECK(vt->copy_d2h(dev, stream, h, b->d, sizeof(float) * (size_t)b->n));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    return h;
}
static double *ref_new(int64_t n)
{
    double *r = malloc(sizeof(double) * (size_t)n);
    if (!r) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    for (int64_t i = 0; i < n; i++) r[i] = NAN;
    return r;
}

/* Runs the op on the device (scratch from op_scratch_size). */
static void run_dev(const mvrt_op_params_t *pd)
{
    size_t bytes = 0;
    if (vt->op_scratch_size) TU_CHECK(vt->op_scratch_size(dev, pd, &bytes));
    void *scratch = NULL;
    if (bytes) TU_CHECK(vt->mem_alloc(dev, bytes, &scratch));
    TU_CHECK(vt->op_run(dev, stream, pd, scratch));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    if (scratch) vt->mem_free(dev, scratch);
}

/* Compares device values `got` (n) with the reference. Elements where ref
 * is NaN were not written by the reference: unless `sampled`, they must
 * still hold the bits of `init` (the buffer's initial content). */
static int compare_values(const char *name, const float *got, const float *init, int64_t n, const double *ref,
                          int sampled, double atol, double rtol)
{
    double worst = 0, worst_abs = 0;
    int64_t wi = -1, checked = 0, untouched_bad = 0, first_bad = -1;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(ref[i])) {
            if (!sampled && memcmp(&got[i], &init[i], 4) != 0) {
                if (first_bad < 0) first_bad = i;
                untouched_bad++;
            }
            continue;
        }
        checked++;
        const double g = got[i], e = fabs(g - ref[i]);
        /* exact ops (atol = rtol = 0): any difference is an infinite ratio */
        const double tol = atol + rtol * fabs(ref[i]);
        const double r = !isfinite(g) ? INFINITY : e == 0 ? 0.0 : tol > 0 ? e / tol : INFINITY;
        if (!(r <= worst)) { worst = r; wi = i; }
        if (isfinite(g) && e > worst_abs) worst_abs = e;
    }
    const int ok = worst <= 1.0 && untouched_bad == 0 && checked > 0;
    printf("%-4s %-7s %-44s checked %10lld  worst |err| %.3g  worst ratio %.3g (atol %.1e rtol %.1e)\n",
           ok ? "ok" : "FAIL", gemm_mode, name, (long long)checked, worst_abs, worst, atol, rtol);
    if (worst > 1.0 && wi >= 0)
        printf("     worst element %lld: got %.9g ref %.9g\n", (long long)wi, got[wi], ref[wi]);
    if (untouched_bad)
        printf("     %lld elements outside the op's output were modified (first %lld: %.9g)\n",
               (long long)untouched_bad, (long long)first_bad, got[first_bad]);
    if (checked == 0) printf("     nothing was checked\n");
    ran++;
    if (!ok) fails++;
    return ok;
}

/* The device output of a float buffer against the reference. */
static int check(const char *name, const buf_t *out, const double *ref, int sampled, double atol, double rtol)
{
    float *got = download(out);
    const int ok = compare_values(name, got, out->h, out->n, ref, sampled, atol, rtol);
    free(got);
    return ok;
}

static int selected(const char *name) { return !filter || strstr(name, filter) != NULL; }

/* ---- 16-bit storage (the graph's bf16 / fp16 modes): uint16 buffers ----
 * g_t16: the 16-bit type of the pass (MVRT_STORAGE16_BF16, or _F16 in the
 * fp16 pass of main): every 16-bit case stores, rounds and multiplies in
 * it; a case written with math BF16 runs with that type's math (m16). */
static int g_t16 = MVRT_STORAGE16_BF16;
static uint16_t to16(float f) { return g_t16 == MVRT_STORAGE16_F16 ? tu_f32_to_f16(f) : tu_f32_to_bf16(f); }
static float from16(uint16_t h) { return g_t16 == MVRT_STORAGE16_F16 ? tu_f16_to_f32(h) : tu_bf16_to_f32(h); }
/* floats rounded to 16-bit values (g_t16) in place (what a 16-bit map holds exactly) */
static void round16(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = from16(to16(x[i]));
}
static int m16(int math) { return math == MVRT_MATH_BF16 && g_t16 == MVRT_STORAGE16_F16 ? MVRT_MATH_FP16 : math; }
/* one rounding to 16 bits: half an ulp, 2^-8 (bf16) or 2^-11 (fp16)
 * relative just above a power of two, with 1/8 to spare */
static double round16_rtol(void) { return g_t16 == MVRT_STORAGE16_F16 ? 0x1.2p-11 : 0x1.2p-8; }
/* ... and absolutely: fp16's subnormals (below 2^-14) are 2^-24 apart, so
 * a value there rounds by up to 2^-25 whatever its size (bf16 has fp32's
 * exponent range: no such floor at these magnitudes) */
static double round16_atol(void) { return g_t16 == MVRT_STORAGE16_F16 ? 0x1p-25 : 0.0; }
/* GEMM tolerances of 16-bit operands scale with their rounding: fp16's
 * (2^-12) is 8x finer than bf16's (2^-9); 4x tighter keeps a margin */
static double gemm16_scale(void) { return g_t16 == MVRT_STORAGE16_F16 ? 0.25 : 1.0; }

typedef struct buf16 {
    uint16_t *h;
    void *d;
    int64_t n;
} buf16_t;

/* device buffer of n 16-bit values: the bits of `init` (or NaN poison) */
static buf16_t buf16_new(int64_t n, const float *init)
{
    buf16_t b;
    b.n = n > 0 ? n : 1;
    b.h = malloc(sizeof(uint16_t) * (size_t)b.n);
    if (!b.h) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    for (int64_t i = 0; i < b.n; i++) b.h[i] = init ? to16(init[i]) : g_t16 == MVRT_STORAGE16_F16 ? 0x7e00u : 0x7fc0u;
    TU_CHECK(vt->mem_alloc(dev, sizeof(uint16_t) * (size_t)b.n, &b.d));
    TU_CHECK(vt->copy_h2d(dev, stream, b.d, b.h, sizeof(uint16_t) * (size_t)b.n));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    return b;
}
static void buf16_free(buf16_t *b)
{
    if (b->d) vt->mem_free(dev, b->d);
    free(b->h);
    memset(b, 0, sizeof *b);
}
/* check() for a 16-bit output: the device bits and the initial bits decoded
 * to floats (exactly, so equal bits stay equal), then compared alike. */
static int check16(const char *name, const buf16_t *out, const double *ref, int sampled, double atol, double rtol)
{
    uint16_t *bits = malloc(sizeof(uint16_t) * (size_t)out->n);
    float *got = malloc(sizeof(float) * (size_t)out->n), *init = malloc(sizeof(float) * (size_t)out->n);
    if (!bits || !got || !init) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    TU_CHECK(vt->copy_d2h(dev, stream, bits, out->d, sizeof(uint16_t) * (size_t)out->n));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    for (int64_t i = 0; i < out->n; i++) {
        got[i] = from16(bits[i]);
        init[i] = from16(out->h[i]);
    }
    const int ok = compare_values(name, got, init, out->n, ref, sampled, atol, rtol);
    free(bits); free(got); free(init);
    return ok;
}

/* LayerNorm with a 16-bit output (y16): the reference in double, then one
 * rounding to 16 bits on top of the fp32 error: atol 2e-5, rtol
 * round16_rtol(). x16: the input is 16-bit too (the graph's 16-bit
 * residual stream; its values are 16-bit numbers, so the reference reads
 * what the device reads); x16 2: 16-bit input, float output (atol and
 * rtol 2e-5). */
static void case_layernorm_s16(const char *name, int64_t rows, int64_t cols, int64_t xpad, int64_t ypad, int x16)
{
    if (!selected(name)) return;
    const int64_t xld = cols + xpad, yld = cols + ypad;
    const int y16 = x16 != 2;
    buf_t x = buf_rand(rows * xld, -2.0, 3.0), w = buf_rand(cols, 0.5, 1.5), bb = buf_rand(cols, -0.5, 0.5);
    buf16_t x16b = {0, 0, 0};
    if (x16) {
        round16(x.h, x.n);
        x16b = buf16_new(x.n, x.h);
    }
    buf16_t y = {0, 0, 0};
    buf_t yf = {0, 0, 0};
    if (y16) y = buf16_new(rows * yld, NULL);
    else yf = buf_out(rows * yld);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_LAYERNORM;
    mvrt_layernorm_params_t *l = &ph.u.layernorm;
    l->rows = rows; l->cols = cols; l->x = x.h; l->x_ld = xld; l->y = NULL; l->y_ld = yld;
    l->weight = w.h; l->bias = bb.h; l->eps = 1e-5f;
    pd = ph;
    pd.u.layernorm.x = x16 ? (const float *)x16b.d : x.d;
    pd.u.layernorm.y = y16 ? (float *)y.d : yf.d;
    pd.u.layernorm.weight = w.d; pd.u.layernorm.bias = bb.d;
    pd.u.layernorm.y16 = y16 ? g_t16 : 0;
    pd.u.layernorm.x16 = x16 ? g_t16 : 0;
    /* the reference writes floats: run it into a float image of y */
    const int64_t ny = rows * yld;
    float *yh = malloc(sizeof(float) * (size_t)ny);
    if (!yh) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    ph.u.layernorm.y = yh;
    double *ref = ref_new(ny);
    mvrt_ref_op_run(&ph, ref);
    run_dev(&pd);
    if (y16) check16(name, &y, ref, 0, 2e-5, round16_rtol());
    else check(name, &yf, ref, 0, 2e-5, 2e-5);
    free(ref); free(yh);
    buf_free(&x); buf_free(&w); buf_free(&bb);
    if (y16) buf16_free(&y);
    else buf_free(&yf);
    if (x16) buf16_free(&x16b);
}
static void case_layernorm_bf16(const char *name, int64_t rows, int64_t cols, int64_t xpad, int64_t ypad)
{
    case_layernorm_s16(name, rows, cols, xpad, ypad, 0);
}

/* Linear with 16-bit storage (g_t16) of A (a16) and/or Y (y16), in the
 * pass's 16-bit math for math BF16 (the vendor 16-bit GEMM reads / writes
 * them directly) or fp32 math (converted through fp32 scratch; also every
 * case of the builtin-GEMM pass). A's values are 16-bit numbers, so the
 * reference sees what the device sees. Tolerance: 16-bit math as the
 * 16-bit linear cases ((6e-3 sqrt(K), 2e-2) x gemm16_scale()); fp32 math
 * 2e-6 sqrt(K) + 1e-6 and rtol 1e-5, or round16_rtol() with a 16-bit Y
 * (its rounding, as in case_layernorm_bf16).
 * res (with y16, act NONE): a 16-bit residual stream, beta 1: RES_INPLACE
 * accumulates onto Y's own 16-bit values, RES_SEPARATE onto another 16-bit
 * matrix (`residual`); values in [-4, 4], 16-bit numbers. Where a vendor
 * GEMM is followed by the epilogue pass, the product + R and then + bias
 * are two roundings (mv_op_params.h): atol gains one rounding of the
 * largest bias (1).
 * pad < 0: no padding and items back to back (the mixer's out_proj
 * layout: with ta, a dense Y and a shared B the GPUs fold the batch into
 * one GEMM over a transposed 16-bit copy of A, from floats or, a16, from
 * the 16-bit chain's scan output). */
enum { RES_NONE = 0, RES_INPLACE = 1, RES_SEPARATE = 2 };
static void case_linear_storage_res(const char *name, int64_t batch, int64_t M, int64_t N, int64_t K, int ta,
                                    int a16, int y16, int bias, int act, int math, int64_t pad, int res)
{
    if (!selected(name)) return;
    /* a16 bit 1 (B16): B (the weight) stored 16-bit as well (b16), taken
     * only by a 16-bit vendor GEMM: op_scratch_size must answer
     * UNSUPPORTED elsewhere */
    const int b16 = (a16 & 2) != 0;
    a16 &= 1;
    math = m16(math);
    const int dense = pad < 0;
    if (dense) pad = 0;
    const int64_t ra = ta ? K : M, ca = ta ? M : K, lda = ca + pad, sa = ra * lda + (dense ? 0 : 2);
    const int64_t ldb = K + pad, sb = 0; /* a shared PyTorch weight (N, K) */
    const int64_t ldy = N + pad, sy = M * ldy + (dense ? 0 : 6);
    buf_t A = buf_rand(batch * sa, -1.0, 1.0), B = buf_rand(N * ldb, -1.0, 1.0);
    round16(A.h, A.n);
    buf_upload(&A);
    if (b16) { /* the reference multiplies the weight as stored */
        round16(B.h, B.n);
        buf_upload(&B);
    }
    buf_t bv = {0, 0, 0};
    if (bias) bv = buf_rand(N, -1.0, 1.0);
    buf16_t A16 = {0, 0, 0}, Y16 = {0, 0, 0}, B16 = {0, 0, 0};
    if (b16) B16 = buf16_new(B.n, B.h);
    buf_t Y = {0, 0, 0};
    if (a16) A16 = buf16_new(A.n, A.h);
    float *yh = malloc(sizeof(float) * (size_t)(batch * sy));
    if (!yh) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    buf_t R = {0, 0, 0};
    buf16_t R16 = {0, 0, 0};
    if (res) { /* 16-bit numbers in [-4, 4]: in Y itself, or in R */
        R = buf_rand(batch * sy, -4.0, 4.0);
        round16(R.h, R.n);
        if (res == RES_INPLACE) memcpy(yh, R.h, sizeof(float) * (size_t)R.n);
        else R16 = buf16_new(R.n, R.h);
    }
    if (y16) Y16 = buf16_new(batch * sy, res == RES_INPLACE ? R.h : NULL);
    else Y = buf_out(batch * sy);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *l = &ph.u.linear;
    l->batch = batch; l->M = M; l->N = N; l->K = K;
    l->A = A.h; l->lda = lda; l->batch_stride_a = sa; l->trans_a = ta;
    l->B = B.h; l->ldb = ldb; l->batch_stride_b = sb; l->trans_b = 1;
    l->Y = yh; l->ldy = ldy; l->batch_stride_y = sy;
    l->bias = bias ? bv.h : NULL;
    l->activation = act; l->beta = res ? 1.f : 0.f; l->math = math;
    l->residual = res == RES_SEPARATE ? R.h : NULL;
    pd = ph;
    pd.u.linear.residual = res == RES_SEPARATE ? (const float *)R16.d : NULL;
    pd.u.linear.A = a16 ? (const float *)A16.d : (const float *)A.d;
    pd.u.linear.B = B.d;
    pd.u.linear.Y = y16 ? (float *)Y16.d : (float *)Y.d;
    pd.u.linear.bias = bias ? bv.d : NULL;
    pd.u.linear.a16 = a16 ? g_t16 : 0; pd.u.linear.y16 = y16 ? g_t16 : 0;
    const int bf16_gemm = math != MVRT_MATH_FP32 && strcmp(gemm_mode, "builtin") != 0;
    if (b16) {
        pd.u.linear.B = (const float *)B16.d;
        pd.u.linear.b16 = g_t16;
        size_t bytes = 0;
        const int taken = vt->op_scratch_size(dev, &pd, &bytes) == MVRT_OK;
        if (taken != (bf16_gemm && K > 0) || !taken) {
            ran++;
            const int ok = taken == (bf16_gemm && K > 0);
            printf("  %-40s [%s] b16 %s%s\n", name, gemm_mode, taken ? "taken" : "declined", ok ? "" : ": FAIL");
            if (!ok) fails++;
            goto done;
        }
    }
    double *ref = ref_new(batch * sy);
    mvrt_ref_op_run(&ph, ref);
    run_dev(&pd);
    const double sk = sqrt((double)K);
    const double atol = (bf16_gemm ? 6e-3 * sk * gemm16_scale() : 2e-6 * sk + 1e-6) +
                        (res && bias && bf16_gemm ? round16_rtol() : 0.0);
    const double rtol = bf16_gemm ? 2e-2 * gemm16_scale() : y16 ? round16_rtol() : 1e-5;
    if (y16) check16(name, &Y16, ref, 0, atol, rtol);
    else check(name, &Y, ref, 0, atol, rtol);
    free(ref);
done:
    free(yh);
    buf_free(&A); buf_free(&B);
    if (bias) buf_free(&bv);
    if (a16) buf16_free(&A16);
    if (b16) buf16_free(&B16);
    if (y16) buf16_free(&Y16);
    else buf_free(&Y);
    if (res) buf_free(&R);
    if (res == RES_SEPARATE) buf16_free(&R16);
}
static void case_linear_storage(const char *name, int64_t batch, int64_t M, int64_t N, int64_t K, int ta, int a16,
                                int y16, int bias, int act, int math, int64_t pad)
{
    case_linear_storage_res(name, batch, M, N, K, ta, a16, y16, bias, act, math, pad, RES_NONE);
}

/* The mixer's dt_proj over windows: A (M, K) shared by the batch (16-bit
 * values of type g_t16 when a16, as a 16-bit graph stores the weight),
 * B_b (K, N) and Y_b (M, N) floats with padded rows and gapped batch
 * strides, a per-row bias. More than 2^20 outputs with K <= 64 run
 * gemm_smallk_batched_kernel, which computes in fp32 whatever the math:
 * the fp32 tolerance (2e-6 sqrt(K) + 1e-6, rtol 1e-5) must hold in the
 * 16-bit passes too, which a 16-bit GEMM would miss (its products round
 * B to 8 or 11 bits), so this also checks that the kernel was chosen.
 * a16 bit 1 (IO16): B and Y stored in 16 bits too (b16, y16: the 16-bit
 * mixer chain's dbl -> dt); B's values are then 16-bit numbers, and Y adds
 * one rounding (round16_rtol, round16_atol) to the fp32 tolerance. */
static void case_linear_smallkb(const char *name, int64_t batch, int64_t M, int64_t N, int64_t K, int a16, int math,
                                int64_t pad, int act)
{
    if (!selected(name)) return;
    const int io16 = (a16 & 2) != 0;
    a16 &= 1;
    /* gapped items: unpadded ones keep 16-byte alignment (the kernel's
     * 16-byte staging loads), padded ones do not */
    const int64_t lda = K + pad, ldb = N + pad, ldy = N + pad, sb = K * ldb + (pad ? 3 : 4),
                  sy = M * ldy + (pad ? 5 : 0);
    buf_t A = buf_rand(M * lda, -1.0, 1.0), B = buf_rand(batch * sb, -1.0, 1.0), bias = buf_rand(M, -1.0, 1.0);
    buf16_t A16 = {0, 0, 0}, B16 = {0, 0, 0}, Y16 = {0, 0, 0};
    if (a16) { /* the reference multiplies the weight as stored */
        round16(A.h, A.n);
        A16 = buf16_new(A.n, A.h);
    }
    if (io16) {
        round16(B.h, B.n);
        B16 = buf16_new(B.n, B.h);
        Y16 = buf16_new(batch * sy, NULL);
    }
    buf_t Y = buf_out(batch * sy);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *l = &ph.u.linear;
    l->batch = batch; l->M = M; l->N = N; l->K = K;
    l->A = A.h; l->lda = lda; l->batch_stride_a = 0;
    l->B = B.h; l->ldb = ldb; l->batch_stride_b = sb;
    l->Y = Y.h; l->ldy = ldy; l->batch_stride_y = sy;
    l->bias = bias.h; l->bias_per_row = 1;
    l->activation = act; l->math = m16(math);
    pd = ph;
    pd.u.linear.A = a16 ? (const float *)A16.d : (const float *)A.d;
    pd.u.linear.a16 = a16 ? g_t16 : 0;
    pd.u.linear.B = B.d; pd.u.linear.Y = Y.d; pd.u.linear.bias = bias.d;
    if (io16) {
        pd.u.linear.B = (const float *)B16.d; pd.u.linear.b16 = g_t16;
        pd.u.linear.Y = (float *)Y16.d; pd.u.linear.y16 = g_t16;
    }
    double *ref = ref_new(Y.n);
    mvrt_ref_op_run(&ph, ref);
    run_dev(&pd);
    const double atol = 2e-6 * sqrt((double)K) + 1e-6;
    if (io16) check16(name, &Y16, ref, 0, atol + round16_atol(), 1e-5 + round16_rtol());
    else check(name, &Y, ref, 0, atol, 1e-5);
    free(ref);
    buf_free(&A); buf_free(&B); buf_free(&Y); buf_free(&bias);
    if (a16) buf16_free(&A16);
    if (io16) { buf16_free(&B16); buf16_free(&Y16); }
}

/* check_declined for a 16-bit output: its bits must stay as uploaded. */
static void check_declined16(const char *name, const mvrt_op_params_t *pd, const buf16_t *out)
{
    ran++;
    const mvrt_status_t st = vt->op_run(dev, stream, pd, NULL);
    TU_CHECK(vt->stream_synchronize(dev, stream));
    uint16_t *bits = malloc(sizeof(uint16_t) * (size_t)out->n);
    if (!bits) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    TU_CHECK(vt->copy_d2h(dev, stream, bits, out->d, sizeof(uint16_t) * (size_t)out->n));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    const int ok = st == MVRT_ERR_UNSUPPORTED && memcmp(bits, out->h, sizeof(uint16_t) * (size_t)out->n) == 0;
    printf("  %-40s [%s] declined%s\n", name, gemm_mode, ok ? "" : ": FAIL (op_run ran it or wrote its output)");
    if (!ok) fails++;
    free(bits);
}

/* ------------------------------------------- linear with a folded LayerNorm */
/* An op form the device declined (op_scratch_size said UNSUPPORTED):
 * op_run must decline it too and leave `out` (whose host copy holds what
 * was uploaded) untouched. */
static void check_declined(const char *name, const mvrt_op_params_t *pd, const buf_t *out)
{
    ran++;
    const mvrt_status_t st = vt->op_run(dev, stream, pd, NULL);
    TU_CHECK(vt->stream_synchronize(dev, stream));
    float *after = download(out);
    const int ok = st == MVRT_ERR_UNSUPPORTED && memcmp(out->h, after, sizeof(float) * (size_t)out->n) == 0;
    printf("  %-40s [%s] declined%s\n", name, gemm_mode, ok ? "" : ": FAIL (op_run ran it or wrote its output)");
    if (!ok) fails++;
    free(after);
}

/* The GPU-only form (mv_op_params.h, ln_weight): Y = act(LN(A) W^T + b)
 * [+ Y]. The reference is the LayerNorm of each row in double (mean,
 * centred variance, eps 1e-5) and the linear in double; the op's two
 * vectors are made here from their definition (colsum = W gamma, bias =
 * b + W beta, in double). Rows of A get an offset (row r: offset * (1 +
 * r % 3)) so |mean| >> spread where offset is large. Where the device
 * takes the form (the cluster GEMM: CUDA sm_90+, fp32, few tiles, K % 8 ==
 * 0) the output is compared, with the fp32 linear's tolerance (atol
 * 2e-6 sqrt(K) + 1e-6, rtol 1e-5); where it declines, op_run must decline
 * too and leave Y as it was. ln_taken / ln_declined count the cases. */
static int ln_taken, ln_declined;
static void case_linear_ln(const char *name, int64_t M, int64_t N, int64_t K, int64_t pad, int bias, int act,
                           int beta, double offset)
{
    if (!selected(name)) return;
    const int64_t lda = K + pad, ldb = K + pad, ldy = N + pad;
    buf_t A = buf_rand(M * lda, -2.0, 3.0), B = buf_rand(N * ldb, -1.0, 1.0);
    buf_t gm = buf_rand(K, 0.5, 1.5), bt = buf_rand(K, -0.5, 0.5), b0 = buf_rand(N, -1.0, 1.0);
    for (int64_t r = 0; r < M; r++)
        for (int64_t k = 0; k < K; k++) A.h[r * lda + k] += (float)(offset * (double)(1 + r % 3));
    buf_upload(&A);
    buf_t cs = buf_new(N), fb = buf_new(N);
    for (int64_t n = 0; n < N; n++) {
        double c = 0.0, f = bias ? b0.h[n] : 0.0;
        for (int64_t k = 0; k < K; k++) {
            c += (double)B.h[n * ldb + k] * gm.h[k];
            f += (double)B.h[n * ldb + k] * bt.h[k];
        }
        cs.h[n] = (float)c, fb.h[n] = (float)f;
    }
    buf_upload(&cs), buf_upload(&fb);
    buf_t Y = beta ? buf_rand(M * ldy, -1.0, 1.0) : buf_out(M * ldy);
    mvrt_op_params_t pd;
    memset(&pd, 0, sizeof pd);
    pd.kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *l = &pd.u.linear;
    l->batch = 1; l->M = M; l->N = N; l->K = K;
    l->A = A.d; l->lda = lda;
    l->B = B.d; l->ldb = ldb; l->trans_b = 1;
    l->Y = Y.d; l->ldy = ldy;
    l->bias = fb.d;
    l->activation = act; l->beta = beta ? 1.f : 0.f; l->math = MVRT_MATH_FP32;
    l->ln_weight = gm.d; l->ln_colsum = cs.d; l->ln_eps = 1e-5f;
    size_t bytes = 0;
    if (vt->op_scratch_size(dev, &pd, &bytes) == MVRT_OK) {
        ln_taken++;
        double *ref = ref_new(M * ldy), *ln = malloc(sizeof(double) * (size_t)K);
        if (!ln) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
        for (int64_t r = 0; r < M; r++) {
            const float *x = A.h + r * lda;
            double mean = 0.0, var = 0.0;
            for (int64_t k = 0; k < K; k++) mean += x[k];
            mean /= (double)K;
            for (int64_t k = 0; k < K; k++) var += (x[k] - mean) * (x[k] - mean);
            const double rstd = 1.0 / sqrt(var / (double)K + (double)1e-5f);
            for (int64_t k = 0; k < K; k++) ln[k] = (x[k] - mean) * rstd * gm.h[k] + bt.h[k];
            for (int64_t n = 0; n < N; n++) {
                double v = bias ? b0.h[n] : 0.0;
                for (int64_t k = 0; k < K; k++) v += ln[k] * B.h[n * ldb + k];
                v = mvrt_ref_activation(act, v);
                ref[r * ldy + n] = v + (beta ? Y.h[r * ldy + n] : 0.0);
            }
        }
        free(ln);
        run_dev(&pd);
        check(name, &Y, ref, 0, 2e-6 * sqrt((double)K) + 1e-6, 1e-5);
        free(ref);
    } else {
        ln_declined++;
        check_declined(name, &pd, &Y);
    }
    buf_free(&A), buf_free(&B), buf_free(&gm), buf_free(&bt), buf_free(&b0), buf_free(&cs), buf_free(&fb);
    buf_free(&Y);
}

/* The folded-LayerNorm cases; returns how many the device took. The
 * MambaVision shapes (stage-3 in_proj and fc1, stage-4 qkv, batch 1:
 * slices of 40 and 80 k) and edges: one row, a partial last tile of rows
 * and of columns, padded rows (4-byte loads), beta 1, |mean| 100x the
 * spread; K % 8 != 0, slices over 80 k (K = 1280) and many tiles must be
 * declined. */
static int run_linear_ln_cases(void)
{
    const int before = ln_taken;
    case_linear_ln("linear_ln_inproj_b1", 196, 320, 320, 0, 0, MVRT_ACT_NONE, 0, 0.0);
    case_linear_ln("linear_ln_fc1_b1_gelu", 196, 1280, 320, 0, 1, MVRT_ACT_GELU_ERF, 0, 0.0);
    case_linear_ln("linear_ln_qkv_s4_b1", 49, 1920, 640, 0, 1, MVRT_ACT_NONE, 0, 0.0);
    case_linear_ln("linear_ln_M1_K64", 1, 64, 64, 0, 1, MVRT_ACT_SILU, 0, 0.0);
    case_linear_ln("linear_ln_offset100_beta1_pad", 37, 100, 96, 3, 1, MVRT_ACT_NONE, 1, 100.0);
    case_linear_ln("linear_ln_K640_M200_N72_pad", 200, 72, 640, 1, 1, MVRT_ACT_GELU_TANH, 0, 5.0);
    case_linear_ln("linear_ln_K100_declines", 37, 64, 100, 0, 1, MVRT_ACT_NONE, 0, 0.0);
    case_linear_ln("linear_ln_K1280_declines", 196, 320, 1280, 0, 1, MVRT_ACT_NONE, 0, 0.0);
    case_linear_ln("linear_ln_many_tiles_declines", 50176, 320, 320, 0, 1, MVRT_ACT_NONE, 0, 0.0);
    return ln_taken - before;
}

/* ---------------------------------------------------------------- fused MLP */
/* x += fc2(act(fc1(LayerNorm(x)))) in place (MVRT_OP_MLP, a GPU-only op
 * form) against the double reference of mv_reference.h. Rows get an
 * offset (row r: offset * (1 + r % 3)) so |mean| >> spread where offset
 * is large. Where the device takes it (CUDA sm_90+: few rows, C a
 * multiple of 32 up to 512, hidden / 8 a multiple of 16) x is compared
 * with atol 2e-6 (sqrt(C) + sqrt(hidden)) + 1e-6 and rtol 1e-5 (the fp32
 * linear's tolerance for each of the two products); where it declines,
 * op_run must decline too and leave x as it was. */
static int mlp_taken, mlp_declined;
static void case_mlp(const char *name, int64_t rows, int64_t C, int64_t H, int act, double offset)
{
    if (!selected(name)) return;
    buf_t x = buf_rand(rows * C, -2.0, 2.0), lw = buf_rand(C, 0.5, 1.5), lb = buf_rand(C, -0.5, 0.5);
    buf_t w1 = buf_rand(H * C, -1.0 / sqrt((double)C), 1.0 / sqrt((double)C)), b1 = buf_rand(H, -0.5, 0.5);
    buf_t w2 = buf_rand(C * H, -1.0 / sqrt((double)H), 1.0 / sqrt((double)H)), b2 = buf_rand(C, -0.5, 0.5);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < C; k++) x.h[r * C + k] += (float)(offset * (double)(1 + r % 3));
    buf_upload(&x);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_MLP;
    mvrt_mlp_params_t *q = &ph.u.mlp;
    q->rows = rows; q->channels = C; q->hidden = H; q->ln_eps = 1e-5f; q->activation = act;
    q->x = x.h; q->ln_weight = lw.h; q->ln_bias = lb.h;
    q->fc1_w = w1.h; q->fc1_b = b1.h; q->fc2_w = w2.h; q->fc2_b = b2.h;
    pd = ph;
    pd.u.mlp.x = x.d; pd.u.mlp.ln_weight = lw.d; pd.u.mlp.ln_bias = lb.d;
    pd.u.mlp.fc1_w = w1.d; pd.u.mlp.fc1_b = b1.d; pd.u.mlp.fc2_w = w2.d; pd.u.mlp.fc2_b = b2.d;
    size_t bytes = 0;
    if (vt->op_scratch_size(dev, &pd, &bytes) == MVRT_OK) {
        mlp_taken++;
        double *ref = ref_new(x.n);
        if (mvrt_ref_op_run(&ph, ref) != 0) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
        run_dev(&pd);
        check(name, &x, ref, 0, 2e-6 * (sqrt((double)C) + sqrt((double)H)) + 1e-6, 1e-5);
        free(ref);
    } else {
        mlp_declined++;
        check_declined(name, &pd, &x);
    }
    buf_free(&x), buf_free(&lw), buf_free(&lb), buf_free(&w1), buf_free(&b1), buf_free(&w2), buf_free(&b2);
}

/* The fused-MLP cases; returns how many the device took: MambaVision's
 * stage-3 MLPs at batch 1 (T: C 320, S: 384, B: 512 over 50 rows), one
 * row, a partial last cluster of rows (37) with tanh-GELU, rows whose mean
 * is 100x their spread, a hidden slice of 48 (a last half k block, warps
 * without fc1 work), odd counts of k blocks in warps with several tasks
 * (C 160: fc1's 5 blocks, 14 tasks on 12 warps; C 416 with a hidden slice
 * of 80: fc2's 2.5 blocks, 26 tasks on 8 warps: the next task's first
 * block is carried over after an odd last one); C % 32 != 0, C > 512 and
 * more clusters than the SMs hold at once must be declined. */
#define MLP_CASES_TAKEN 9
static int run_mlp_cases(void)
{
    const int before = mlp_taken;
    case_mlp("mlp_T_s3_b1", 196, 320, 1280, MVRT_ACT_GELU_ERF, 0.0);
    case_mlp("mlp_S_s3_b1", 196, 384, 1536, MVRT_ACT_GELU_ERF, 0.0);
    case_mlp("mlp_B_s3_rows50", 50, 512, 2048, MVRT_ACT_GELU_ERF, 0.0);
    case_mlp("mlp_one_row", 1, 320, 1280, MVRT_ACT_GELU_ERF, 0.0);
    case_mlp("mlp_rows37_C64_tanh", 37, 64, 256, MVRT_ACT_GELU_TANH, 0.0);
    case_mlp("mlp_offset100", 20, 128, 512, MVRT_ACT_GELU_ERF, 100.0);
    case_mlp("mlp_C96_H384_half_block", 45, 96, 384, MVRT_ACT_GELU_ERF, 1.0);
    case_mlp("mlp_C160_H1792_odd_blocks_tasks", 30, 160, 1792, MVRT_ACT_GELU_ERF, 0.0);
    case_mlp("mlp_C416_H640_odd_half_tasks", 20, 416, 640, MVRT_ACT_GELU_TANH, 0.0);
    case_mlp("mlp_C80_declines", 196, 80, 320, MVRT_ACT_GELU_ERF, 0.0);
    case_mlp("mlp_C640_declines", 49, 640, 2560, MVRT_ACT_GELU_ERF, 0.0);
    case_mlp("mlp_rows784_declines", 784, 320, 1280, MVRT_ACT_GELU_ERF, 0.0);
    return mlp_taken - before;
}

/* ---------------------------------------------------------------- layernorm */
static void case_layernorm(const char *name, int64_t rows, int64_t cols, int64_t xpad, int64_t ypad, int inplace)
{
    if (!selected(name)) return;
    const int64_t xld = cols + xpad, yld = inplace ? xld : cols + ypad;
    buf_t x = buf_rand(rows * xld, -2.0, 3.0), w = buf_rand(cols, 0.5, 1.5), bb = buf_rand(cols, -0.5, 0.5);
    buf_t y;
    if (inplace) {
        /* y == x: the output buffer is x itself; its padding keeps x's values */
        y = x;
    } else {
        y = buf_out(rows * yld);
    }
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_LAYERNORM;
    mvrt_layernorm_params_t *l = &ph.u.layernorm;
    l->rows = rows; l->cols = cols; l->x = x.h; l->x_ld = xld; l->y = y.h; l->y_ld = yld;
    l->weight = w.h; l->bias = bb.h; l->eps = 1e-5f;
    pd = ph;
    pd.u.layernorm.x = x.d; pd.u.layernorm.y = y.d; pd.u.layernorm.weight = w.d; pd.u.layernorm.bias = bb.d;
    double *ref = ref_new(y.n);
    mvrt_ref_op_run(&ph, ref);
    run_dev(&pd);
    check(name, &y, ref, 0, 2e-5, 2e-5);
    free(ref);
    buf_free(&x); buf_free(&w); buf_free(&bb);
    if (!inplace) buf_free(&y);
}

/* ---------------------------------------------------------------- linear */
typedef struct lcase {
    const char *name;
    int64_t batch, M, N, K;
    int ta, tb;
    int64_t pad_a, pad_b, pad_y; /* extra leading-dimension elements */
    int share_a, share_b;        /* batch stride 0 */
    int bias;                    /* 0 none, 1 per column, 2 per row */
    int act;
    float beta;
    int math;
    int64_t sample; /* 0: check everything; else rows per sampled block */
    int residual;   /* with beta 1: onto a separate residual (Y starts as NaN: never read) */
} lcase_t;

static void case_linear(const lcase_t *c)
{
    if (g_t16 == MVRT_STORAGE16_F16 && c->math != MVRT_MATH_BF16) return; /* the fp16 pass: 16-bit cases only */
    char name[128];
    snprintf(name, sizeof name, "%s", c->name);
    if (!selected(name)) return;
    const int64_t ra = c->ta ? c->K : c->M, ca = c->ta ? c->M : c->K;
    const int64_t rb = c->tb ? c->N : c->K, cb = c->tb ? c->K : c->N;
    const int64_t lda = ca + c->pad_a, ldb = cb + c->pad_b, ldy = c->N + c->pad_y;
    /* batch strides with a gap so that a stride != matrix size is exercised */
    const int64_t sa = c->share_a ? 0 : ra * lda + 3, sb = c->share_b ? 0 : rb * ldb + 1, sy = c->M * ldy + 5;
    const int64_t na = c->share_a ? ra * lda : c->batch * sa, nb = c->share_b ? rb * ldb : c->batch * sb;
    buf_t A = buf_rand(na, -1.0, 1.0), B = buf_rand(nb, -1.0, 1.0);
    buf_t Y = buf_out(c->batch * sy), R = {0, 0, 0};
    if (c->residual) {
        R = buf_rand(c->batch * sy, -1.0, 1.0);
    } else if (c->beta != 0.f) {
        for (int64_t i = 0; i < Y.n; i++) Y.h[i] = (float)tu_uniform(-1.0, 1.0);
        buf_upload(&Y);
    }
    buf_t bias = {0, 0, 0};
    if (c->bias) bias = buf_rand(c->bias == 2 ? c->M : c->N, -1.0, 1.0);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *l = &ph.u.linear;
    l->batch = c->batch; l->M = c->M; l->N = c->N; l->K = c->K;
    l->A = A.h; l->lda = lda; l->batch_stride_a = sa; l->trans_a = c->ta;
    l->B = B.h; l->ldb = ldb; l->batch_stride_b = sb; l->trans_b = c->tb;
    l->Y = Y.h; l->ldy = ldy; l->batch_stride_y = sy;
    l->bias = c->bias ? bias.h : NULL; l->bias_per_row = c->bias == 2;
    l->activation = c->act; l->beta = c->beta; l->math = m16(c->math);
    l->residual = c->residual ? R.h : NULL;
    /* B is written before the op and never after: the CUDA backend may
     * copy it before the kernel ahead of the op ends (a channel-major A
     * on the cluster GEMM is then a programmatic dependent launch) */
    l->b_constant = 1;
    pd = ph;
    pd.u.linear.A = A.d; pd.u.linear.B = B.d; pd.u.linear.Y = Y.d; pd.u.linear.bias = c->bias ? bias.d : NULL;
    pd.u.linear.residual = c->residual ? (const float *)R.d : NULL;
    double *ref = ref_new(Y.n);
    if (!c->sample) {
        mvrt_ref_op_run(&ph, ref);
    } else {
        /* first, middle and last block of rows of the first and last batch element */
        const int64_t S = c->sample;
        const int64_t starts[3] = {0, (c->M / 2) / S * S, c->M > S ? c->M - S : 0};
        const int64_t bsel[2] = {0, c->batch - 1};
        for (int bi = 0; bi < 2; bi++)
            for (int si = 0; si < 3; si++) {
                const int64_t b = bsel[bi], r0 = starts[si], rows = c->M - r0 < S ? c->M - r0 : S;
                mvrt_op_params_t q = ph;
                mvrt_linear_params_t *s = &q.u.linear;
                s->batch = 1; s->M = rows;
                s->A = A.h + b * sa + (c->ta ? r0 : r0 * lda);
                s->B = B.h + b * sb;
                s->Y = Y.h + b * sy + r0 * ldy;
                if (c->residual) s->residual = R.h + b * sy + r0 * ldy;
                if (c->bias == 2) s->bias = bias.h + r0;
                mvrt_ref_op_run(&q, ref + b * sy + r0 * ldy);
            }
    }
    run_dev(&pd);
    /* fp32: the error of a K-term dot product grows like sqrt(K) (inputs in
     * [-1, 1], |terms| <= 1); TF32 rounds the operands to 10-bit mantissas */
    const double sk = sqrt((double)(c->K > 1 ? c->K : 1));
    if (c->math == MVRT_MATH_FAST) check(name, &Y, ref, c->sample != 0, 1e-3 * sk, 5e-3);
    /* bf16 operands: relative rounding 2^-9 on each (4x TF32's); fp16's
     * 2^-12 (gemm16_scale) */
    else if (c->math == MVRT_MATH_BF16 && strcmp(gemm_mode, "builtin") != 0)
        check(name, &Y, ref, c->sample != 0, 6e-3 * sk * gemm16_scale(), 2e-2 * gemm16_scale());
    else check(name, &Y, ref, c->sample != 0, 2e-6 * sk + 1e-6, 1e-5);
    free(ref);
    buf_free(&A); buf_free(&B); buf_free(&Y);
    if (c->bias) buf_free(&bias);
    if (c->residual) buf_free(&R);
}

/* ---------------------------------------------------------------- dwconv1d */
/* layout 0: token-major in (B, L, Cfull) slice at channel offset, channel-
 * major out (B, C, L); 1: channel-major both (padded rows); 2: token-major both */
static void case_dwconv(const char *name, int64_t batch, int64_t C, int64_t L, int width, int layout)
{
    if (!selected(name)) return;
    int64_t xs[3], ys[3], nx, ny, xoff = 0;
    if (layout == 0) {
        const int64_t Cf = 2 * C + 3; /* the slice is channels [C + 1, 2C + 1) of a wider row */
        xs[0] = L * Cf; xs[1] = 1; xs[2] = Cf; nx = batch * L * Cf; xoff = C + 1;
        ys[0] = C * L; ys[1] = L; ys[2] = 1; ny = batch * C * L;
    } else if (layout == 1) {
        xs[0] = C * (L + 2) + 1; xs[1] = L + 2; xs[2] = 1; nx = batch * xs[0];
        ys[0] = C * (L + 1) + 3; ys[1] = L + 1; ys[2] = 1; ny = batch * ys[0];
    } else {
        xs[0] = L * C; xs[1] = 1; xs[2] = C; nx = batch * L * C;
        ys[0] = L * (C + 1); ys[1] = 1; ys[2] = C + 1; ny = batch * ys[0];
    }
    buf_t x = buf_rand(nx, -2.0, 2.0), w = buf_rand(C * width, -1.0, 1.0), y = buf_out(ny);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_DWCONV1D_SILU;
    mvrt_dwconv1d_params_t *d = &ph.u.dwconv1d;
    d->batch = batch; d->channels = C; d->length = L; d->width = width;
    d->x = x.h + xoff; memcpy(d->x_stride, xs, sizeof xs);
    d->y = y.h; memcpy(d->y_stride, ys, sizeof ys);
    d->weight = w.h;
    pd = ph;
    pd.u.dwconv1d.x = (const float *)x.d + xoff; pd.u.dwconv1d.y = y.d; pd.u.dwconv1d.weight = w.d;
    double *ref = ref_new(y.n);
    mvrt_ref_op_run(&ph, ref);
    run_dev(&pd);
    check(name, &y, ref, 0, 1e-5 * sqrt((double)width) + 1e-6, 1e-5);
    free(ref);
    buf_free(&x); buf_free(&w); buf_free(&y);
}

/* The conv1d's 16-bit outputs (y16: the 16-bit mixer chain's u and z),
 * both halves of a 16-bit token-major (batch, L, 2C) input (x16) into one
 * 16-bit (batch, 2C, L) buffer: the values against the double reference
 * with the float tolerance plus one rounding (round16_rtol, round16_atol),
 * and the padding between items (2 values) left as it was. taken: 1 where
 * the device runs the form (the whole-row kernel), 0 where op_scratch_size
 * and op_run must decline it and leave y's bits untouched (a backend that
 * ran it as the float form would write floats where the graph reads
 * 16-bit values). */
static void case_dwconv_y16(const char *name, int64_t batch, int64_t C, int64_t L, int taken)
{
    if (!selected(name)) return;
    const int64_t Ct = 2 * C, ys = Ct * L + 2;
    buf_t x = buf_rand(batch * L * Ct, -2.0, 2.0), w = buf_rand(C * 3, -1.0, 1.0), w2 = buf_rand(C * 3, -1.0, 1.0);
    round16(x.h, x.n);
    buf16_t xb = buf16_new(x.n, x.h), yb = buf16_new(batch * ys, NULL);
    float *yh = malloc(sizeof(float) * (size_t)yb.n);
    if (!yh) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_DWCONV1D_SILU;
    mvrt_dwconv1d_params_t *d = &ph.u.dwconv1d;
    d->batch = batch; d->channels = Ct; d->length = L; d->width = 3;
    d->x = x.h; d->x_stride[0] = L * Ct; d->x_stride[1] = 1; d->x_stride[2] = Ct;
    d->y = yh; d->y_stride[0] = ys; d->y_stride[1] = L; d->y_stride[2] = 1;
    d->weight = w.h; d->split = C;
    d->y2 = yh + C * L; d->y2_stride[0] = ys; d->y2_stride[1] = L; d->y2_stride[2] = 1;
    d->weight2 = w2.h;
    pd = ph;
    pd.u.dwconv1d.x = (const float *)xb.d; pd.u.dwconv1d.x16 = g_t16;
    pd.u.dwconv1d.y = (float *)yb.d; pd.u.dwconv1d.y2 = (float *)((uint16_t *)yb.d + C * L);
    pd.u.dwconv1d.weight = w.d; pd.u.dwconv1d.weight2 = w2.d;
    pd.u.dwconv1d.y16 = g_t16;
    size_t bytes = 0;
    const int took = vt->op_scratch_size(dev, &pd, &bytes) == MVRT_OK;
    if (took != taken) {
        ran++, fails++;
        printf("FAIL %-7s %-44s %s, expected %s\n", gemm_mode, name, took ? "taken" : "declined",
               taken ? "taken" : "declined");
    } else if (!took) {
        check_declined16(name, &pd, &yb);
    } else {
        double *ref = ref_new(yb.n);
        mvrt_ref_op_run(&ph, ref);
        run_dev(&pd);
        check16(name, &yb, ref, 0, 1e-5 * sqrt(3.0) + 1e-6 + round16_atol(), 1e-5 + round16_rtol());
        free(ref);
    }
    free(yh);
    buf_free(&x); buf_free(&w); buf_free(&w2);
    buf16_free(&xb); buf16_free(&yb);
}

/* Both halves of a token-major (batch, L, 2C) buffer in one op (split = C,
 * MambaVision's conv1d_x / conv1d_z): y channel-major, y2 after it in the
 * same buffer with padded strides and its own weights; y and y2 against
 * the double reference with the float tolerance. The 16-bit forms
 * (mv_op_params.h): x16, the input stored in 16 bits (x's values are then
 * 16-bit numbers in both forms, so the reference reads what the device
 * reads); copy (y_copy16), a 16-bit copy of the first part at y's
 * strides, whose bits must be the rounding of the device's own float y
 * and which leaves the rest (the second part's place, the padding)
 * unwritten. taken: 1 where the device runs the form (the float one
 * always; the 16-bit ones on the whole-row kernel: >= 2 blocks per SM on
 * cards of up to 256 SMs), 0 where it must decline it (op_scratch_size
 * and op_run, y untouched). */
static void case_dwconv_split(const char *name, int64_t batch, int64_t C, int64_t L, int width, int x16, int copy,
                              int taken)
{
    if (!selected(name)) return;
    const int64_t Ct = 2 * C, y2_off = batch * C * L + 5, y2_batch = C * L + 2;
    buf_t x = buf_rand(batch * L * Ct, -2.0, 2.0), w = buf_rand(C * width, -1.0, 1.0);
    buf_t w2 = buf_rand(C * width, -1.0, 1.0), y = buf_out(y2_off + batch * y2_batch);
    if (x16 || copy) {
        round16(x.h, x.n); /* 16-bit numbers in both forms of x */
        buf_upload(&x);
    }
    buf16_t xb = buf16_new(x.n, x.h), cb = buf16_new(y.n, NULL);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_DWCONV1D_SILU;
    mvrt_dwconv1d_params_t *d = &ph.u.dwconv1d;
    d->batch = batch; d->channels = Ct; d->length = L; d->width = width;
    d->x = x.h; d->x_stride[0] = L * Ct; d->x_stride[1] = 1; d->x_stride[2] = Ct;
    d->y = y.h; d->y_stride[0] = C * L; d->y_stride[1] = L; d->y_stride[2] = 1;
    d->weight = w.h;
    d->split = C;
    d->y2 = y.h + y2_off; d->y2_stride[0] = y2_batch; d->y2_stride[1] = L; d->y2_stride[2] = 1;
    d->weight2 = w2.h;
    pd = ph;
    pd.u.dwconv1d.x = x16 ? (const float *)xb.d : (const float *)x.d;
    pd.u.dwconv1d.x16 = x16 ? g_t16 : 0;
    pd.u.dwconv1d.y = y.d; pd.u.dwconv1d.weight = w.d;
    pd.u.dwconv1d.y2 = (float *)y.d + y2_off; pd.u.dwconv1d.weight2 = w2.d;
    pd.u.dwconv1d.y_copy = copy ? (float *)cb.d : NULL;
    pd.u.dwconv1d.y_copy16 = copy ? g_t16 : 0;
    size_t bytes = 0;
    const int took = vt->op_scratch_size(dev, &pd, &bytes) == MVRT_OK;
    if (took != taken) {
        ran++, fails++;
        printf("FAIL %-7s %-44s %s, expected %s\n", gemm_mode, name, took ? "taken" : "declined",
               taken ? "taken" : "declined");
    } else if (!took) {
        check_declined(name, &pd, &y);
    } else {
        double *ref = ref_new(y.n);
        mvrt_ref_op_run(&ph, ref);
        run_dev(&pd);
        check(name, &y, ref, 0, 1e-5 * sqrt((double)width) + 1e-6, 1e-5);
        if (copy) {
            float *got = download(&y);
            uint16_t *bits = malloc(sizeof(uint16_t) * (size_t)cb.n);
            if (!bits) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
            TU_CHECK(vt->copy_d2h(dev, stream, bits, cb.d, sizeof(uint16_t) * (size_t)cb.n));
            TU_CHECK(vt->stream_synchronize(dev, stream));
            int64_t bad = 0, first = -1;
            for (int64_t i = 0; i < cb.n; i++) { /* the first part: [0, batch C L) */
                const uint16_t want = i < batch * C * L ? to16(got[i]) : cb.h[i];
                if (bits[i] != want && first < 0) first = i;
                bad += bits[i] != want;
            }
            ran++;
            if (bad) fails++;
            printf("%-4s %-7s %-44s 16-bit copy: %lld of %lld values wrong (first %lld)\n", bad ? "FAIL" : "ok",
                   gemm_mode, name, (long long)bad, (long long)cb.n, (long long)first);
            free(got); free(bits);
        }
        free(ref);
    }
    buf_free(&x); buf_free(&w); buf_free(&w2); buf_free(&y);
    buf16_free(&xb); buf16_free(&cb);
}

/* the 16-bit forms (g_t16 of the pass): MambaVision-B's stage-3 and
 * stage-4 shapes (32 and 128 channels per block), a channel tail and an
 * even width, a single 16-bit field each; batch 1 is declined */
static void run_dwconv16_cases(void)
{
    case_dwconv_split("dwconv16_x16_copy_mv_256x196_b40", 40, 256, 196, 3, 1, 1, 1);
    case_dwconv_split("dwconv16_x16_copy_mv_512x49_b80", 80, 512, 49, 3, 1, 1, 1);
    case_dwconv_split("dwconv16_x16_c37_w4_b600", 600, 37, 50, 4, 1, 0, 1);
    case_dwconv_split("dwconv16_copy_c37_w4_b600", 600, 37, 50, 4, 0, 1, 1);
    case_dwconv_split("dwconv16_declined_b1", 1, 256, 196, 3, 1, 1, 0);
    case_dwconv_y16("dwconv16_y16_mv_256x196_b40", 40, 256, 196, 1);
    case_dwconv_y16("dwconv16_y16_mv_512x49_b80", 80, 512, 49, 1);
    case_dwconv_y16("dwconv16_y16_declined_b1", 1, 256, 196, 0);
}

/* ---------------------------------------------------------------- attention */
/* The attention op over host buffers qkv (batch, L, 3C) and out (batch, L, C). */
static mvrt_op_params_t attention_op(int64_t batch, int64_t L, int heads, int hd, const float *qkv, float *out)
{
    mvrt_op_params_t ph;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_ATTENTION;
    mvrt_attention_params_t *a = &ph.u.attention;
    a->batch = batch; a->length = L; a->heads = heads; a->head_dim = hd;
    a->scale = (float)(1.0 / sqrt((double)hd));
    a->qkv = qkv; a->out = out;
    return ph;
}
/* The double reference of host op ph into ref: every item, or (sampled)
 * the first, middle and last batch items only (the rest stays NaN). */
static void ref_attention(const mvrt_op_params_t *ph, int sampled, double *ref)
{
    const mvrt_attention_params_t *a = &ph->u.attention;
    if (!sampled) {
        mvrt_ref_op_run(ph, ref);
        return;
    }
    const int64_t L = a->length, C = (int64_t)a->heads * a->head_dim;
    const int64_t bsel[3] = {0, a->batch / 2, a->batch - 1};
    for (int i = 0; i < 3; i++) {
        mvrt_op_params_t q = *ph;
        q.u.attention.batch = 1;
        q.u.attention.qkv = a->qkv + bsel[i] * L * 3 * C;
        q.u.attention.out = a->out + bsel[i] * L * C;
        mvrt_ref_op_run(&q, ref + bsel[i] * L * C);
    }
}
static void case_attention_math(const char *name, int64_t batch, int64_t L, int heads, int hd, int sampled, int math)
{
    if (!selected(name)) return;
    if (g_t16 == MVRT_STORAGE16_F16 && math != MVRT_MATH_BF16) return; /* the fp16 pass: 16-bit cases only */
    math = m16(math);
    const int64_t C = (int64_t)heads * hd;
    buf_t qkv = buf_rand(batch * L * 3 * C, -1.5, 1.5), out = buf_out(batch * L * C);
    const mvrt_op_params_t ph = attention_op(batch, L, heads, hd, qkv.h, out.h);
    mvrt_op_params_t pd = ph;
    pd.u.attention.math = math; /* the reference is fp32/double whatever the mode */
    pd.u.attention.qkv = qkv.d; pd.u.attention.out = out.d;
    double *ref = ref_new(out.n);
    ref_attention(&ph, sampled, ref);
    run_dev(&pd);
    if (math == MVRT_MATH_BF16 || math == MVRT_MATH_FP16) {
        /* q, k, v and the weights rounded to bf16 (relative 2^-9 each): the
         * scores (|q.k| * scale <= ~18 here) move by ~1e-2 at worst and the
         * output, a weighted mean of |v| <= 1.5, by about as much; fp16
         * rounds 8x finer (half the bound kept as margin) */
        const double t = math == MVRT_MATH_FP16 ? 1.5e-2 : 3e-2;
        check(name, &out, ref, sampled, t, t);
    }
    else
        check(name, &out, ref, sampled, 1e-5, 1e-4);
    free(ref);
    buf_free(&qkv); buf_free(&out);
}
static void case_attention(const char *name, int64_t batch, int64_t L, int heads, int hd, int sampled)
{
    case_attention_math(name, batch, L, heads, hd, sampled, MVRT_MATH_FP32);
}

/* ---------------------------------------------------------------- conv2d */
typedef struct ccase {
    const char *name;
    int64_t batch, cin, h, w, cout;
    int k, stride, pad;
    int bias, residual, act;
    int sampled;
    int fast; /* 1: MVRT_MATH_FAST (TF32 GEMM on CUDA), 2: MVRT_MATH_BF16 */
} ccase_t;

static void case_conv2d(const ccase_t *c)
{
    if (!selected(c->name)) return;
    if (g_t16 == MVRT_STORAGE16_F16 && c->fast != 2) return; /* the fp16 pass: 16-bit cases only */
    const int64_t oh = (c->h + 2 * c->pad - c->k) / c->stride + 1, ow = (c->w + 2 * c->pad - c->k) / c->stride + 1;
    const int64_t in_img = c->cin * c->h * c->w, out_img = c->cout * oh * ow;
    buf_t x = buf_rand(c->batch * in_img, -1.0, 1.0);
    buf_t w = buf_rand(c->cout * c->cin * c->k * c->k, -0.5, 0.5);
    buf_t bias = {0, 0, 0}, res = {0, 0, 0};
    if (c->bias) bias = buf_rand(c->cout, -1.0, 1.0);
    if (c->residual) res = buf_rand(c->batch * out_img, -1.0, 1.0);
    buf_t y = buf_out(c->batch * out_img);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_CONV2D;
    mvrt_conv2d_params_t *v = &ph.u.conv2d;
    v->batch = c->batch; v->in_channels = c->cin; v->in_h = c->h; v->in_w = c->w;
    v->out_channels = c->cout; v->out_h = oh; v->out_w = ow;
    v->kernel = c->k; v->stride = c->stride; v->pad = c->pad;
    v->x = x.h; v->weight = w.h; v->bias = c->bias ? bias.h : NULL; v->residual = c->residual ? res.h : NULL;
    v->y = y.h; v->activation = c->act;
    v->math = c->fast == 2 ? m16(MVRT_MATH_BF16) : c->fast ? MVRT_MATH_FAST : MVRT_MATH_FP32;
    pd = ph;
    pd.u.conv2d.x = x.d; pd.u.conv2d.weight = w.d; pd.u.conv2d.bias = c->bias ? bias.d : NULL;
    pd.u.conv2d.residual = c->residual ? res.d : NULL; pd.u.conv2d.y = y.d;
    double *ref = ref_new(y.n);
    if (!c->sampled) {
        mvrt_ref_op_run(&ph, ref);
    } else {
        const int64_t bsel[2] = {0, c->batch - 1};
        for (int i = 0; i < 2; i++) {
            mvrt_op_params_t q = ph;
            q.u.conv2d.batch = 1;
            q.u.conv2d.x = x.h + bsel[i] * in_img;
            q.u.conv2d.y = y.h + bsel[i] * out_img;
            if (c->residual) q.u.conv2d.residual = res.h + bsel[i] * out_img;
            mvrt_ref_op_run(&q, ref + bsel[i] * out_img);
        }
    }
    run_dev(&pd);
    const double sk = sqrt((double)(c->cin * c->k * c->k));
    if (c->fast == 2 && strcmp(gemm_mode, "builtin") != 0) /* bf16 operands, as the linear's bf16 cases */
        check(c->name, &y, ref, c->sampled, 6e-3 * sk * gemm16_scale(), 2e-2 * gemm16_scale());
    else if (c->fast) /* TF32 (10-bit mantissa) products, as the linear's fast cases */
        check(c->name, &y, ref, c->sampled, 1e-3 * sk, 5e-3);
    else
        check(c->name, &y, ref, c->sampled, 1e-6 * sk + 1e-6, 1e-5);
    free(ref);
    buf_free(&x); buf_free(&w); buf_free(&y);
    if (c->bias) buf_free(&bias);
    if (c->residual) buf_free(&res);
}

/* ------------------------------------------- 16-bit NHWC maps (bf16 mode) */
/* (batch, C, sp) -> (batch, sp, C), for floats and doubles */
static void nchw_to_nhwc_f(const float *src, float *dst, int64_t batch, int64_t C, int64_t sp)
{
    for (int64_t b = 0; b < batch; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < sp; i++) dst[(b * sp + i) * C + c] = src[(b * C + c) * sp + i];
}
static void nchw_to_nhwc_d(const double *src, double *dst, int64_t batch, int64_t C, int64_t sp)
{
    for (int64_t b = 0; b < batch; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < sp; i++) dst[(b * sp + i) * C + c] = src[(b * C + c) * sp + i];
}
/* An NHWC map of C channels (n positions) into one that stores Cs >= C per
 * position, zeros past C (a padded 16-bit map's layout: x_map_channels) */
static void pad_channels_f(const float *src, float *dst, int64_t n, int64_t C, int64_t Cs)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < Cs; c++) dst[i * Cs + c] = c < C ? src[i * C + c] : 0.f;
}
static void pad_channels_d(const double *src, double *dst, int64_t n, int64_t C, int64_t Cs)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < Cs; c++) dst[i * Cs + c] = c < C ? src[i * C + c] : 0.0;
}

/* Whether the device takes op (asked as the graph runner does); on a
 * decline the thread's message is not an error. */
static int dev_takes(const mvrt_op_params_t *pd)
{
    size_t bytes = 0;
    return !vt->op_scratch_size || vt->op_scratch_size(dev, pd, &bytes) == MVRT_OK;
}

/* The graph's 16-bit attention (qkv16, out16; type g_t16): q, k, v are
 * 16-bit numbers (the qkv GEMM's rounded output), the reference is the
 * double attention of those same values; the device rounds P for the
 * second product and the output once, so the bf16 cases' tolerance (3e-2,
 * fp16 1.5e-2) plus one output rounding. Returns 1 when the device took
 * the form; a declined form must be refused by op_run as well, with the
 * output untouched. */
static int case_attention_io16(const char *name, int64_t batch, int64_t L, int heads, int hd, int sampled)
{
    if (!selected(name)) return 0;
    const int64_t C = (int64_t)heads * hd, nq = batch * L * 3 * C, no = batch * L * C;
    float *qkv = malloc(sizeof(float) * (size_t)nq), *outh = malloc(sizeof(float) * (size_t)no);
    if (!qkv || !outh) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    for (int64_t i = 0; i < nq; i++) qkv[i] = (float)tu_uniform(-1.5, 1.5);
    round16(qkv, nq);
    buf16_t q16 = buf16_new(nq, qkv), o16 = buf16_new(no, NULL);
    const mvrt_op_params_t ph = attention_op(batch, L, heads, hd, qkv, outh);
    mvrt_op_params_t pd = ph;
    pd.u.attention.math = m16(MVRT_MATH_BF16);
    pd.u.attention.qkv = (const float *)q16.d; pd.u.attention.out = (float *)o16.d;
    pd.u.attention.qkv16 = pd.u.attention.out16 = g_t16;
    const int taken = dev_takes(&pd);
    if (taken) {
        double *ref = ref_new(no);
        ref_attention(&ph, sampled, ref);
        run_dev(&pd);
        const double t = g_t16 == MVRT_STORAGE16_F16 ? 1.5e-2 : 3e-2;
        check16(name, &o16, ref, sampled, t + round16_atol(), t + round16_rtol());
        free(ref);
    } else {
        /* op_run must refuse it and leave the output's bits as uploaded */
        check_declined16(name, &pd, &o16);
    }
    free(qkv); free(outh);
    buf16_free(&q16); buf16_free(&o16);
    return taken;
}

/* The 16-bit attention cases; returns how many the device took (all of
 * them but the last where it runs the sm_80+ tensor-core kernels: L 257
 * is past the staged length; in fp16 on sm_75 code also not L256_d64,
 * whose K and V need 72 KB of shared memory, past the T4's 64 KB). head_dim 4 / 20 (pair stores, no 16-byte
 * copies), 40 / 64 / 8 / 16 (16-byte copies), 49 (MambaVision-L: odd,
 * element by element), 1; L 1, 17, 77 (partial 64-key tiles), 196, 256
 * (the most shared memory: d 64 needs the opt-in); batch 64 sampled. */
#define ATT_IO16_TAKEN 11
static int run_attention_io16_cases(void)
{
    int n = 0;
    n += case_attention_io16("attention_io16_1x1x1x1", 1, 1, 1, 1, 0);
    n += case_attention_io16("attention_io16_L1_d8", 2, 1, 3, 8, 0);
    n += case_attention_io16("attention_io16_L17_d4", 2, 17, 2, 4, 0);
    n += case_attention_io16("attention_io16_L77_h2_d20", 2, 77, 2, 20, 0);
    n += case_attention_io16("attention_io16_L100_d16", 3, 100, 2, 16, 0);
    n += case_attention_io16("attention_io16_mv_L196_h8_d40_b64", 64, 196, 8, 40, 1);
    n += case_attention_io16("attention_io16_mv_L196_h8_d64_b3", 3, 196, 8, 64, 0);
    n += case_attention_io16("attention_io16_mv_L196_h16_d49", 2, 196, 16, 49, 0);
    n += case_attention_io16("attention_io16_mv_L49_h16_d40_b5", 5, 49, 16, 40, 0);
    n += case_attention_io16("attention_io16_L256_d64", 2, 256, 2, 64, 0);
    n += case_attention_io16("attention_io16_L256_h3_d40", 1, 256, 3, 40, 0);
    n += case_attention_io16("attention_io16_L257_d40_declined", 1, 257, 2, 40, 0);
    return n;
}

/* A 3x3 conv (pad 1) in the 16-bit map form (g_t16): x a 16-bit NHWC map
 * (x16) or NCHW floats (the stem), y and the residual 16-bit NHWC maps,
 * the type's math; xs / ys > cin / cout: the maps store that many
 * channels per position (x_map_channels / y_map_channels), and y's
 * padding channels must come out +0 exactly (0: dense). The reference: the NCHW double conv of the same float
 * values (x and the residual hold 16-bit numbers; the weights are rounded
 * by the device, as the 16-bit conv cases), permuted to NHWC. Tolerance:
 * the 16-bit conv cases' ((6e-3 sqrt(Cin k^2), 2e-2) x gemm16_scale())
 * plus the output's rounding. Returns
 * 1 when the device took the form (0: declined, nothing checked). */
/* prepared: the filters as a graph prepares them (weight16 and
 * bias_stored, mv_op_params.h), with the float weight and bias on the
 * device poisoned (NaN): the CUDA backend must multiply the prepared ones
 * and read the floats not at all. */
/* y_other: y holds the other 16-bit type than x and the math (a bf16
 * graph's boundary between fp16 conv stages and its bf16 maps,
 * mv_op_params.h): rounded to g_t16 first, then to y's type, so the
 * tolerance gains the second type's rounding. */
static int conv16_case(const char *name, int64_t batch, int64_t cin, int64_t h, int64_t w, int64_t cout, int stride,
                       int act, int residual, int x16, int64_t xs, int64_t ys, int prepared, int y_other)
{
    if (!selected(name)) return 0;
    if (!xs) xs = cin;
    if (!ys) ys = cout;
    const int64_t oh = (h + 2 - 3) / stride + 1, ow = (w + 2 - 3) / stride + 1;
    const int64_t nx = batch * cin * h * w, ny = batch * cout * oh * ow;
    const int64_t nxs = nx / cin * xs, nys = ny / cout * ys; /* stored */
    buf_t x = buf_rand(nx, -1.0, 1.0), wt = buf_rand(cout * cin * 9, -0.5, 0.5), bias = buf_rand(cout, -1.0, 1.0);
    float *r32 = malloc(sizeof(float) * (size_t)ny), *xn = malloc(sizeof(float) * (size_t)nx);
    float *rn = malloc(sizeof(float) * (size_t)ny);
    float *xp = malloc(sizeof(float) * (size_t)nxs), *rp = malloc(sizeof(float) * (size_t)nys);
    double *ref = ref_new(ny), *refn = ref_new(ny), *refp = ref_new(nys);
    if (!r32 || !xn || !rn || !xp || !rp) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    if (x16) round16(x.h, nx);
    for (int64_t i = 0; i < ny; i++) r32[i] = (float)tu_uniform(-1.0, 1.0);
    round16(r32, ny);
    nchw_to_nhwc_f(x.h, xn, batch, cin, h * w);
    nchw_to_nhwc_f(r32, rn, batch, cout, oh * ow);
    pad_channels_f(xn, xp, nx / cin, cin, xs);
    pad_channels_f(rn, rp, ny / cout, cout, ys);
    buf16_t x16b = buf16_new(x16 ? nxs : 1, x16 ? xp : NULL);
    buf16_t r16 = buf16_new(residual ? nys : 1, residual ? rp : NULL);
    buf16_t y = buf16_new(nys, NULL);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_CONV2D;
    mvrt_conv2d_params_t *v = &ph.u.conv2d;
    v->batch = batch; v->in_channels = cin; v->in_h = h; v->in_w = w;
    v->out_channels = cout; v->out_h = oh; v->out_w = ow;
    v->kernel = 3; v->stride = stride; v->pad = 1;
    v->x = x.h; v->weight = wt.h; v->bias = bias.h; v->residual = residual ? r32 : NULL;
    v->activation = act; v->math = m16(MVRT_MATH_BF16);
    float *yh = malloc(sizeof(float) * (size_t)ny);
    if (!yh) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    v->y = yh;
    pd = ph;
    pd.u.conv2d.x = x16 ? (const float *)x16b.d : x.d;
    pd.u.conv2d.weight = wt.d; pd.u.conv2d.bias = bias.d;
    pd.u.conv2d.residual = residual ? (const float *)r16.d : NULL;
    pd.u.conv2d.y = y.d;
    const int other16 = g_t16 == MVRT_STORAGE16_F16 ? MVRT_STORAGE16_BF16 : MVRT_STORAGE16_F16;
    pd.u.conv2d.x_nhwc16 = x16 ? g_t16 : 0; pd.u.conv2d.y_nhwc16 = y_other ? other16 : g_t16;
    pd.u.conv2d.x_map_channels = x16 && xs != cin ? xs : 0;
    pd.u.conv2d.y_map_channels = ys != cout ? ys : 0;
    buf16_t w16 = {0};
    buf_t bias_stored = {0}, poison_w = {0}, poison_b = {0};
    if (prepared) { /* (ys, 3, 3, xs), zeros past cout and cin */
        float *wp = calloc((size_t)(ys * 9 * xs), sizeof(float));
        if (!wp) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
        for (int64_t k = 0; k < cout; k++)
            for (int64_t c = 0; c < cin; c++)
                for (int64_t rs = 0; rs < 9; rs++) wp[(k * 9 + rs) * xs + c] = wt.h[(k * cin + c) * 9 + rs];
        w16 = buf16_new(ys * 9 * xs, wp);
        free(wp);
        bias_stored = buf_new(ys);
        for (int64_t k = 0; k < ys; k++) bias_stored.h[k] = k < cout ? bias.h[k] : 0.f;
        buf_upload(&bias_stored);
        poison_w = buf_out(cout * cin * 9), poison_b = buf_out(cout);
        pd.u.conv2d.weight = poison_w.d, pd.u.conv2d.bias = poison_b.d;
        pd.u.conv2d.weight16 = w16.d, pd.u.conv2d.bias_stored = bias_stored.d;
    }
    int taken = dev_takes(&pd);
    if (taken) {
        mvrt_ref_op_run(&ph, refn);
        nchw_to_nhwc_d(refn, ref, batch, cout, oh * ow);
        pad_channels_d(ref, refp, ny / cout, cout, ys);
        run_dev(&pd);
        const double sk = sqrt((double)(cin * 9));
        const double atol = 6e-3 * sk * gemm16_scale(), rtol = 2e-2 * gemm16_scale() + round16_rtol();
        const int t16 = g_t16;
        if (y_other) g_t16 = other16; /* y decoded as its type, plus that type's rounding */
        check16(name, &y, refp, 0, atol + (y_other ? round16_atol() : 0.0), rtol + (y_other ? round16_rtol() : 0.0));
        g_t16 = t16;
        if (ys > cout) { /* the padding channels: +0 bits */
            uint16_t *bits = malloc(sizeof(uint16_t) * (size_t)nys);
            if (!bits) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
            TU_CHECK(vt->copy_d2h(dev, stream, bits, y.d, sizeof(uint16_t) * (size_t)nys));
            TU_CHECK(vt->stream_synchronize(dev, stream));
            for (int64_t i = 0; i < nys; i++)
                if (i % ys >= cout && bits[i] != 0) {
                    fprintf(stderr, "FAIL %s: padding channel %lld of position %lld holds 0x%04x, not +0\n", name,
                            (long long)(i % ys), (long long)(i / ys), bits[i]);
                    fails++;
                    break;
                }
            free(bits);
        }
    }
    free(ref); free(refn); free(refp); free(r32); free(xn); free(rn); free(xp); free(rp); free(yh);
    buf_free(&x); buf_free(&wt); buf_free(&bias);
    buf16_free(&x16b); buf16_free(&r16); buf16_free(&y);
    if (prepared) {
        buf16_free(&w16);
        buf_free(&bias_stored); buf_free(&poison_w); buf_free(&poison_b);
    }
    return taken;
}

static int case_conv2d_nhwc16_stored(const char *name, int64_t batch, int64_t cin, int64_t h, int64_t w, int64_t cout,
                                     int stride, int act, int residual, int x16, int64_t xs, int64_t ys)
{
    return conv16_case(name, batch, cin, h, w, cout, stride, act, residual, x16, xs, ys, 0, 0);
}

/* between two 16-bit maps, y of the other type (no residual) */
static int case_conv2d_nhwc16_other_y(const char *name, int64_t batch, int64_t cin, int64_t h, int64_t w,
                                      int64_t cout, int stride, int act, int64_t xs, int64_t ys)
{
    return conv16_case(name, batch, cin, h, w, cout, stride, act, 0, 1, xs, ys, 0, 1);
}

static int case_conv2d_nhwc16(const char *name, int64_t batch, int64_t cin, int64_t h, int64_t w, int64_t cout,
                              int stride, int act, int residual, int x16)
{
    return conv16_case(name, batch, cin, h, w, cout, stride, act, residual, x16, 0, 0, 0, 0);
}

/* between two 16-bit maps, with the filters a graph prepares */
static int case_conv2d_nhwc16_prepared(const char *name, int64_t batch, int64_t cin, int64_t h, int64_t w,
                                       int64_t cout, int stride, int act, int residual, int64_t xs, int64_t ys)
{
    return conv16_case(name, batch, cin, h, w, cout, stride, act, residual, 1, xs, ys, 1, 0);
}

/* Window partition from / reverse into a 16-bit NHWC map: the partition
 * copies 16-bit values into floats (exact), the reverse rounds floats to
 * 16 bits once (round16_atol, round16_rtol). */
static int case_window_nhwc16(const char *name, int64_t batch, int64_t C, int64_t H, int64_t W, int ws)
{
    char nm[128];
    int taken = 0;
    const int64_t nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
    const int64_t nmap = batch * C * H * W, ntok = batch * nh * nw * ws * ws * C;
    for (int rev = 0; rev < 2; rev++) {
        snprintf(nm, sizeof nm, "%s_%s", name, rev ? "reverse" : "partition");
        if (!selected(nm)) continue;
        buf_t map = buf_rand(nmap, -1.0, 1.0), tok = rev ? buf_rand(ntok, -1.0, 1.0) : buf_out(ntok);
        round16(map.h, nmap);
        float *mapn = malloc(sizeof(float) * (size_t)nmap);
        if (!mapn) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
        nchw_to_nhwc_f(map.h, mapn, batch, C, H * W);
        buf16_t map16 = buf16_new(nmap, rev ? NULL : mapn);
        mvrt_op_params_t ph, pd;
        memset(&ph, 0, sizeof ph);
        ph.kind = rev ? MVRT_OP_WINDOW_REVERSE : MVRT_OP_WINDOW_PARTITION;
        mvrt_window_params_t *p = &ph.u.window;
        p->batch = batch; p->channels = C; p->height = H; p->width = W; p->window = ws;
        p->src = rev ? tok.h : map.h; p->dst = rev ? map.h : tok.h;
        pd = ph;
        pd.u.window.src = rev ? tok.d : (const float *)map16.d;
        pd.u.window.dst = rev ? (float *)map16.d : tok.d;
        pd.u.window.map_nhwc16 = g_t16;
        if (dev_takes(&pd)) {
            taken++;
            double *ref = ref_new(rev ? nmap : ntok);
            mvrt_ref_op_run(&ph, ref);
            run_dev(&pd);
            if (rev) {
                double *refn = ref_new(nmap);
                nchw_to_nhwc_d(ref, refn, batch, C, H * W);
                check16(nm, &map16, refn, 0, round16_atol(), round16_rtol());
                free(refn);
            } else {
                check(nm, &tok, ref, 0, 0.0, 0.0);
            }
            free(ref);
        }
        free(mapn);
        buf_free(&map); buf_free(&tok); buf16_free(&map16);
    }
    return taken;
}

/* Affine + average pool of a 16-bit NHWC map: atol 1e-5, rtol 1e-5. */
static int case_pool_nhwc16(const char *name, int64_t batch, int64_t C, int64_t spatial)
{
    if (!selected(name)) return 0;
    buf_t x = buf_rand(batch * C * spatial, -1.0, 2.0), sc = buf_rand(C, 0.5, 1.5), sh = buf_rand(C, -1.0, 1.0);
    buf_t y = buf_out(batch * C);
    round16(x.h, x.n);
    float *xn = malloc(sizeof(float) * (size_t)x.n);
    if (!xn) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    nchw_to_nhwc_f(x.h, xn, batch, C, spatial);
    buf16_t x16 = buf16_new(x.n, xn);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_AFFINE_AVGPOOL;
    mvrt_affine_avgpool_params_t *p = &ph.u.pool;
    p->batch = batch; p->channels = C; p->spatial = spatial;
    p->x = x.h; p->scale = sc.h; p->shift = sh.h; p->y = y.h;
    pd = ph;
    pd.u.pool.x = (const float *)x16.d; pd.u.pool.scale = sc.d; pd.u.pool.shift = sh.d; pd.u.pool.y = y.d;
    pd.u.pool.x_nhwc16 = g_t16;
    const int taken = dev_takes(&pd);
    if (taken) {
        double *ref = ref_new(y.n);
        mvrt_ref_op_run(&ph, ref);
        run_dev(&pd);
        check(name, &y, ref, 0, 1e-5, 1e-5);
        free(ref);
    }
    free(xn);
    buf_free(&x); buf_free(&sc); buf_free(&sh); buf_free(&y); buf16_free(&x16);
    return taken;
}

/* The 16-bit map forms; returns how many conv cases the device took (the
 * window and pool forms run everywhere). MambaVision's shapes (stem
 * 3 -> 32 from NCHW floats, 56x56x80 conv blocks, 160-channel tiles,
 * downsamplers), odd sizes, batch 1, ReLU / tanh GELU / residual
 * epilogues. */
#define NHWC16_CONV_CASES 53
#define NHWC16_SMALLK_CASES 9 /* the conv16_stem_* and conv16_stemtc_* cases from NCHW floats */
static int run_nhwc16_cases(void)
{
    int taken = 0;
    taken += case_conv2d_nhwc16("conv16_stem_c3_s2_relu_b2", 2, 3, 64, 61, 32, 2, MVRT_ACT_RELU, 0, 0);
    /* more stems (NCHW floats in, the direct kernel): 64 channels (B, S,
     * L), one input channel at stride 1 with 48, two with 24 */
    taken += case_conv2d_nhwc16("conv16_stem_c3_s2_64_b3", 3, 3, 37, 29, 64, 2, MVRT_ACT_RELU, 0, 0);
    taken += case_conv2d_nhwc16("conv16_stem_c1_s1_48_gelut", 2, 1, 11, 13, 48, 1, MVRT_ACT_GELU_TANH, 0, 0);
    taken += case_conv2d_nhwc16("conv16_stem_c2_s2_24", 2, 2, 9, 10, 24, 2, MVRT_ACT_NONE, 0, 0);
    /* 32 or 64 channels from fewer inputs or with other activations: the
     * direct kernel everywhere */
    taken += case_conv2d_nhwc16("conv16_stem_c1_s1_32_silu", 2, 1, 19, 21, 32, 1, MVRT_ACT_SILU, 0, 0);
    taken += case_conv2d_nhwc16("conv16_stem_c2_s2_64_gelut", 2, 2, 23, 30, 64, 2, MVRT_ACT_GELU_TANH, 0, 0);
    /* RGB at stride 2 into 32 / 64 channels, ReLU or none: on sm_80+ code
     * the TF32 tensor-core stem (conv2d_gpu.cuh; also conv16_stem_c3_*
     * above): two column tiles (150 = 128 + 22 and 131 = 128 + 3 output
     * columns) with a last tile of one row and no activation, then
     * MambaVision's whole 224 x 224 image */
    taken += case_conv2d_nhwc16("conv16_stemtc_wide_9x300_none", 1, 3, 9, 300, 32, 2, MVRT_ACT_NONE, 0, 0);
    taken += case_conv2d_nhwc16("conv16_stemtc_64_17x261_b2", 2, 3, 17, 261, 64, 2, MVRT_ACT_RELU, 0, 0);
    taken += case_conv2d_nhwc16("conv16_stemtc_224_b1", 1, 3, 224, 224, 64, 2, MVRT_ACT_RELU, 0, 0);
    taken += case_conv2d_nhwc16("conv16_stem2_32to80_s2_relu", 3, 32, 32, 32, 80, 2, MVRT_ACT_RELU, 0, 1);
    taken += case_conv2d_nhwc16("conv16_56x56x80_gelut_b2", 2, 80, 56, 56, 80, 1, MVRT_ACT_GELU_TANH, 0, 1);
    taken += case_conv2d_nhwc16("conv16_56x56x80_res_b1", 1, 80, 56, 56, 80, 1, MVRT_ACT_NONE, 1, 1);
    taken += case_conv2d_nhwc16("conv16_28x28x160_res_b3", 3, 160, 28, 28, 160, 1, MVRT_ACT_NONE, 1, 1);
    taken += case_conv2d_nhwc16("conv16_28x28x160_gelut_b1", 1, 160, 28, 28, 160, 1, MVRT_ACT_GELU_TANH, 0, 1);
    taken += case_conv2d_nhwc16("conv16_down_13x11_c16_to_24", 2, 16, 13, 11, 24, 2, MVRT_ACT_NONE, 0, 1);
    taken += case_conv2d_nhwc16("conv16_stem_c5_odd_7x9", 1, 5, 7, 9, 8, 1, MVRT_ACT_GELU_TANH, 0, 0);
    /* MambaVision-L's 196 channels: 8-byte vectors */
    taken += case_conv2d_nhwc16("conv16_L_14x14x196_res_b2", 2, 196, 14, 14, 196, 1, MVRT_ACT_NONE, 1, 1);
    taken += case_conv2d_nhwc16("conv16_L_64to196_s2_relu", 2, 64, 20, 18, 196, 2, MVRT_ACT_RELU, 0, 1);
    taken += case_conv2d_nhwc16("conv16_L_196_gelut_b1", 1, 196, 9, 13, 196, 1, MVRT_ACT_GELU_TANH, 0, 1);
    /* the graph's form for them: maps stored with 200 channels (16-byte
     * rows: the sm_90a kernels' 128x208 tile), the stem's second conv
     * into them, the downsampler out of them into 392, and 392's convs;
     * a small odd form and a stem from NCHW floats into a padded map */
    taken += case_conv2d_nhwc16_stored("conv16_Lp_14x14x196_res_b2", 2, 196, 14, 14, 196, 1, MVRT_ACT_NONE, 1, 1, 200,
                                       200);
    taken += case_conv2d_nhwc16_stored("conv16_Lp_64to196_s2_relu", 2, 64, 20, 18, 196, 2, MVRT_ACT_RELU, 0, 1, 0, 200);
    taken += case_conv2d_nhwc16_stored("conv16_Lp_196_gelut_b3", 3, 196, 9, 13, 196, 1, MVRT_ACT_GELU_TANH, 0, 1, 200,
                                       200);
    taken += case_conv2d_nhwc16_stored("conv16_Lp_196to392_s2", 2, 196, 15, 14, 392, 2, MVRT_ACT_NONE, 0, 1, 200, 0);
    taken += case_conv2d_nhwc16("conv16_L_11x9x392_res_b2", 2, 392, 11, 9, 392, 1, MVRT_ACT_NONE, 1, 1);
    taken += case_conv2d_nhwc16("conv16_L_392_gelut_b1", 1, 392, 7, 8, 392, 1, MVRT_ACT_GELU_TANH, 0, 1);
    /* batch 1 at full size, few 128 x 128 tiles for much work: 64 x 64
     * tiles on CUDA where no multiple of 128 channels comes out
     * (cuda_conv_3xtf32.cu, few_tiles): L's 28 x 28 and 56 x 56 (stored
     * 200) convs and a downsampler; B's 28 x 28 (256 channels) keeps the
     * sm_90a kernels, on their 64x128 tile (fewer 128 x 128 tiles than
     * SMs), as do B's batch-1 downsamplers (49 and 196 positions) */
    taken += case_conv2d_nhwc16("conv16_few_L_28x28x392_gelut_b1", 1, 392, 28, 28, 392, 1, MVRT_ACT_GELU_TANH, 0, 1);
    taken += case_conv2d_nhwc16_stored("conv16_few_Lp_56x56x196_res_b1", 1, 196, 56, 56, 196, 1, MVRT_ACT_NONE, 1, 1,
                                       200, 200);
    taken += case_conv2d_nhwc16("conv16_few_L_392to784_s2_b1", 1, 392, 28, 28, 784, 2, MVRT_ACT_NONE, 0, 1);
    taken += case_conv2d_nhwc16("conv16_B_28x28x256_res_b1", 1, 256, 28, 28, 256, 1, MVRT_ACT_NONE, 1, 1);
    taken += case_conv2d_nhwc16("conv16_B_256to512_s2_gelut_b1", 1, 256, 28, 28, 512, 2, MVRT_ACT_GELU_TANH, 0, 1);
    taken += case_conv2d_nhwc16("conv16_B_512to1024_s2_b1", 1, 512, 14, 14, 1024, 2, MVRT_ACT_NONE, 0, 1);
    taken += case_conv2d_nhwc16_stored("conv16_p_12to20_odd_res", 2, 12, 7, 9, 20, 1, MVRT_ACT_NONE, 1, 1, 16, 24);
    taken += case_conv2d_nhwc16_stored("conv16_p_stem_c3_to12", 2, 3, 13, 11, 12, 2, MVRT_ACT_RELU, 0, 0, 0, 16);
    /* filters prepared at graph creation (the graph's form for every conv
     * between two 16-bit maps): dense, padded in, out or both, both tiles */
    taken += case_conv2d_nhwc16_prepared("conv16_prep_56x56x80_gelut", 2, 80, 56, 56, 80, 1, MVRT_ACT_GELU_TANH, 0, 0, 0);
    taken += case_conv2d_nhwc16_prepared("conv16_prep_B_20x18x128_res", 2, 128, 20, 18, 128, 1, MVRT_ACT_NONE, 1, 0, 0);
    taken += case_conv2d_nhwc16_prepared("conv16_prep_Lp_196_res", 2, 196, 14, 14, 196, 1, MVRT_ACT_NONE, 1, 200, 200);
    taken += case_conv2d_nhwc16_prepared("conv16_prep_Lp_64to196_s2", 2, 64, 20, 18, 196, 2, MVRT_ACT_RELU, 0, 0, 200);
    taken += case_conv2d_nhwc16_prepared("conv16_prep_Lp_196to392_s2", 2, 196, 15, 14, 392, 2, MVRT_ACT_NONE, 0, 200, 0);
    taken += case_conv2d_nhwc16_prepared("conv16_prep_p_12to20_res", 2, 12, 7, 9, 20, 1, MVRT_ACT_NONE, 1, 16, 24);
    /* MambaVision-B's 128 / 256 channels (the sm_90a kernels' 64x128 tile
     * for K = 128 and for these few tiles, 128x128 for 256 channels over
     * at least one 128 x 128 tile per SM: the two c8 cases, 144 tiles;
     * the 160-channel cases above take their 128x160 tile, the 80-channel
     * ones the Sm80 kernels) */
    taken += case_conv2d_nhwc16("conv16_B_20x18x128_res_b2", 2, 128, 20, 18, 128, 1, MVRT_ACT_NONE, 1, 1);
    taken += case_conv2d_nhwc16("conv16_B_13x15x128_gelut_b3", 3, 128, 13, 15, 128, 1, MVRT_ACT_GELU_TANH, 0, 1);
    taken += case_conv2d_nhwc16("conv16_B_128to256_s2_gelut", 3, 128, 15, 17, 256, 2, MVRT_ACT_GELU_TANH, 0, 1);
    taken += case_conv2d_nhwc16("conv16_many_tiles_c8_to256_res_b4", 4, 8, 48, 48, 256, 1, MVRT_ACT_NONE, 1, 1);
    taken += case_conv2d_nhwc16("conv16_many_tiles_c8_to256_gelut_b4", 4, 8, 48, 48, 256, 1, MVRT_ACT_GELU_TANH, 0, 1);
    /* MambaVision-S's 192 channels (the 128x192 tile): residual, and a
     * downsampler into them from 96 */
    taken += case_conv2d_nhwc16("conv16_S_13x15x192_res_b2", 2, 192, 13, 15, 192, 1, MVRT_ACT_NONE, 1, 1);
    taken += case_conv2d_nhwc16("conv16_S_96to192_s2_gelut", 2, 96, 17, 14, 192, 2, MVRT_ACT_GELU_TANH, 0, 1);
    /* and its 96 channels: the stem's second conv, a conv block */
    taken += case_conv2d_nhwc16("conv16_S_64to96_s2_relu", 2, 64, 21, 19, 96, 2, MVRT_ACT_RELU, 0, 1);
    taken += case_conv2d_nhwc16("conv16_S_12x11x96_gelut_b3", 3, 96, 12, 11, 96, 1, MVRT_ACT_GELU_TANH, 0, 1);
    /* y of the other 16-bit type: a bf16 graph's map changing type (the
     * stem's second conv into fp16 conv stages, the last conv stage's
     * downsampler out of them): B's (sm_90a 64x128 tile; 128x128), T's
     * (Sm80 kernels), L's padded 200 -> 392, and batch 1's few tiles */
    taken += case_conv2d_nhwc16_other_y("conv16_other_B_64to128_s2_relu", 2, 64, 21, 19, 128, 2, MVRT_ACT_RELU, 0, 0);
    taken += case_conv2d_nhwc16_other_y("conv16_other_B_256to512_s2", 3, 256, 13, 15, 512, 2, MVRT_ACT_NONE, 0, 0);
    taken += case_conv2d_nhwc16_other_y("conv16_other_T_160to320_s2", 2, 160, 14, 14, 320, 2, MVRT_ACT_NONE, 0, 0);
    taken += case_conv2d_nhwc16_other_y("conv16_other_Lp_196to392_s2", 2, 196, 15, 14, 392, 2, MVRT_ACT_NONE, 200, 0);
    taken += case_conv2d_nhwc16_other_y("conv16_other_few_L_392to784_b1", 1, 392, 28, 28, 784, 2, MVRT_ACT_NONE, 0, 0);
    case_window_nhwc16("window16_mv_14x14_ws14_c320_b3", 3, 320, 14, 14, 14);
    case_window_nhwc16("window16_pad_5x7_ws3_c24", 2, 24, 5, 7, 3);
    case_window_nhwc16("window16_7x7_ws7_c40", 2, 40, 7, 7, 7);
    /* channels no multiple of 8 (MambaVision-L's 196; a padded odd grid):
     * the one-channel kernel, the cases above the 8-channel one */
    case_window_nhwc16("window16_L_14x14_ws14_c196", 2, 196, 14, 14, 14);
    case_window_nhwc16("window16_pad_9x10_ws4_c12", 3, 12, 9, 10, 4);
    case_pool_nhwc16("pool16_mv_9x640x49", 9, 640, 49);
    case_pool_nhwc16("pool16_2x24x5", 2, 24, 5);
    return taken;
}

/* ---------------------------------------------------------------- window */
static void case_window(const char *name, int64_t batch, int64_t C, int64_t H, int64_t W, int ws)
{
    char nm[128];
    const int64_t nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
    const int64_t nmap = batch * C * H * W, ntok = batch * nh * nw * ws * ws * C;
    for (int rev = 0; rev < 2; rev++) {
        snprintf(nm, sizeof nm, "%s_%s", name, rev ? "reverse" : "partition");
        if (!selected(nm)) continue;
        buf_t src = buf_rand(rev ? ntok : nmap, -1.0, 1.0), dst = buf_out(rev ? nmap : ntok);
        mvrt_op_params_t ph, pd;
        memset(&ph, 0, sizeof ph);
        ph.kind = rev ? MVRT_OP_WINDOW_REVERSE : MVRT_OP_WINDOW_PARTITION;
        mvrt_window_params_t *p = &ph.u.window;
        p->batch = batch; p->channels = C; p->height = H; p->width = W; p->window = ws;
        p->src = src.h; p->dst = dst.h;
        pd = ph;
        pd.u.window.src = src.d; pd.u.window.dst = dst.d;
        double *ref = ref_new(dst.n);
        mvrt_ref_op_run(&ph, ref);
        run_dev(&pd);
        check(nm, &dst, ref, 0, 0.0, 0.0); /* a copy: exact */
        free(ref);
        buf_free(&src); buf_free(&dst);
    }
}

/* ---------------------------------------------------------------- pool */
static void case_pool(const char *name, int64_t batch, int64_t C, int64_t spatial)
{
    if (!selected(name)) return;
    buf_t x = buf_rand(batch * C * spatial, -1.0, 2.0), sc = buf_rand(C, 0.5, 1.5), sh = buf_rand(C, -1.0, 1.0);
    buf_t y = buf_out(batch * C);
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_AFFINE_AVGPOOL;
    mvrt_affine_avgpool_params_t *p = &ph.u.pool;
    p->batch = batch; p->channels = C; p->spatial = spatial;
    p->x = x.h; p->scale = sc.h; p->shift = sh.h; p->y = y.h;
    pd = ph;
    pd.u.pool.x = x.d; pd.u.pool.scale = sc.d; pd.u.pool.shift = sh.d; pd.u.pool.y = y.d;
    double *ref = ref_new(y.n);
    mvrt_ref_op_run(&ph, ref);
    run_dev(&pd);
    check(name, &y, ref, 0, 1e-5, 1e-5);
    free(ref);
    buf_free(&x); buf_free(&sc); buf_free(&sh); buf_free(&y);
}

/* ---------------------------------------------------------------- graph */
/* A conv2d (im2col scratch + GEMM + epilogue) then a linear reading its
 * output, captured on a created stream and replayed twice. */
static void case_graph(void)
{
    const char *name = "graph_capture_conv_linear";
    if (!selected(name)) return;
    if (!vt->graph_capture_begin) {
        printf("skip %s: no graph capture\n", name);
        return;
    }
    void *s2 = NULL;
    TU_CHECK(vt->stream_create(dev, &s2));
    const int64_t B = 3, Ci = 5, H = 9, W = 10, Co = 6;
    buf_t x = buf_rand(B * Ci * H * W, -1.0, 1.0), w = buf_rand(Co * Ci * 9, -0.5, 0.5), cb = buf_rand(Co, -1.0, 1.0);
    buf_t y = buf_out(B * Co * H * W);
    buf_t lw = buf_rand(7 * W, -1.0, 1.0), ly = buf_out(B * Co * H * 7);
    mvrt_op_params_t c, l;
    memset(&c, 0, sizeof c);
    memset(&l, 0, sizeof l);
    c.kind = MVRT_OP_CONV2D;
    c.u.conv2d = (mvrt_conv2d_params_t){B, Ci, H, W, Co, H, W, 3, 1, 1, x.d, w.d, cb.d, NULL, y.d, MVRT_ACT_GELU_ERF,
                                        MVRT_MATH_FP32, 0, 0, 0, 0, NULL, NULL};
    /* linear: rows of the conv output (B*Co*H, W) times (7, W)^T */
    l.kind = MVRT_OP_LINEAR;
    l.u.linear = (mvrt_linear_params_t){1, B * Co * H, 7, W, y.d, W, 0, 0, lw.d, W, 0, 1, ly.d, 7, 0, NULL, 0,
                                        MVRT_ACT_NONE, 0.f, MVRT_MATH_FP32, 0, 0, NULL, NULL, 0.f, NULL, 1, 0};
    size_t bytes = 0;
    TU_CHECK(vt->op_scratch_size(dev, &c, &bytes));
    void *scratch = NULL;
    if (bytes) TU_CHECK(vt->mem_alloc(dev, bytes, &scratch));
    void *graph = NULL;
    TU_CHECK(vt->graph_capture_begin(dev, s2));
    TU_CHECK(vt->op_run(dev, s2, &c, scratch));
    TU_CHECK(vt->op_run(dev, s2, &l, NULL));
    TU_CHECK(vt->graph_capture_end(dev, s2, &graph));
    TU_CHECK(vt->graph_launch(dev, graph, s2));
    TU_CHECK(vt->graph_launch(dev, graph, s2));
    TU_CHECK(vt->stream_synchronize(dev, s2));
    /* reference: conv on host data, then linear on the reference conv output
     * rounded to float (the device linear reads the device conv output) */
    mvrt_op_params_t ch = c, lh = l;
    ch.u.conv2d.x = x.h; ch.u.conv2d.weight = w.h; ch.u.conv2d.bias = cb.h; ch.u.conv2d.y = y.h;
    double *rc = ref_new(y.n);
    mvrt_ref_op_run(&ch, rc);
    check("graph_capture_conv2d", &y, rc, 0, 1e-5, 1e-5);
    float *yc = download(&y);
    lh.u.linear.A = yc; lh.u.linear.B = lw.h; lh.u.linear.Y = ly.h;
    double *rl = ref_new(ly.n);
    mvrt_ref_op_run(&lh, rl);
    check("graph_capture_linear", &ly, rl, 0, 1e-5, 1e-5);
    free(yc); free(rc); free(rl);
    vt->graph_destroy(dev, graph);
    if (scratch) vt->mem_free(dev, scratch);
    buf_free(&x); buf_free(&w); buf_free(&cb); buf_free(&y); buf_free(&lw); buf_free(&ly);
    vt->stream_destroy(dev, s2);
}

/* ---------------------------------------------------------------- cases */
enum { NONE = MVRT_ACT_NONE, RELU = MVRT_ACT_RELU, GELU = MVRT_ACT_GELU_ERF, GELUT = MVRT_ACT_GELU_TANH, SILU = MVRT_ACT_SILU };
enum { FP32 = MVRT_MATH_FP32, FAST = MVRT_MATH_FAST, BF16 = MVRT_MATH_BF16 };

static const lcase_t linear_cases[] = {
    /* name                          batch   M     N    K  ta tb pa pb py sa sb bias act  beta math sample residual */
    {"linear_1x1x1",                     1,   1,    1,   1, 0, 0, 0, 0, 0, 0, 0, 1, NONE, 0, FP32, 0, 0},
    {"linear_nn_odd",                    1,   3,    5,   7, 0, 0, 1, 2, 3, 0, 0, 1, RELU, 0, FP32, 0, 0},
    {"linear_nt_weight_gelu",            1, 130,   97, 129, 0, 1, 0, 3, 0, 0, 0, 1, GELU, 0, FP32, 0, 0},
    {"linear_tn_rowbias_silu",           2,  33,   65,  17, 1, 0, 2, 0, 1, 0, 0, 2, SILU, 0, FP32, 0, 0},
    {"linear_tt_gelutanh",               3,  70,   31,  45, 1, 1, 0, 1, 2, 0, 0, 1, GELUT, 0, FP32, 0, 0},
    {"linear_batch_shared_a",            4,  19,   40, 200, 0, 1, 0, 0, 0, 1, 0, 0, NONE, 0, FP32, 0, 0},
    {"linear_batch_shared_b",            5,  64,   64,  64, 0, 1, 0, 0, 0, 0, 1, 1, NONE, 0, FP32, 0, 0},
    {"linear_beta1_residual",            2, 129,  130,  33, 0, 1, 0, 0, 4, 0, 0, 1, NONE, 1, FP32, 0, 0},
    {"linear_beta1_nobias_tn",           1,  47,    9, 300, 1, 0, 0, 0, 0, 0, 0, 0, NONE, 1, FP32, 0, 0},
    {"linear_K1",                        2,  10,   12,   1, 0, 0, 0, 0, 0, 0, 0, 2, RELU, 0, FP32, 0, 0},
    {"linear_M1_head",                   1,   1, 1000, 640, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 0, FP32, 0, 0},
    {"linear_N1",                        1, 257,    1,  80, 0, 1, 0, 0, 0, 0, 0, 1, GELU, 0, FP32, 0, 0},
    {"linear_fast_nt",                   1, 200,  150, 320, 0, 1, 0, 0, 0, 0, 0, 1, GELU, 0, FAST, 0, 0},
    {"linear_fast_batch_tn_beta1",       3,  65,   33, 129, 1, 0, 1, 0, 0, 0, 0, 0, NONE, 1, FAST, 0, 0},
    {"linear_mv_fc1_256x196",            1, 50176, 1280, 320, 0, 1, 0, 0, 0, 0, 0, 1, GELU, 0, FP32, 64, 0},
    {"linear_mv_fc2_beta1_256x196",      1, 50176, 320, 1280, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 1, FP32, 64, 0},
    {"linear_mv_fc1_fast",               1, 50176, 1280, 320, 0, 1, 0, 0, 0, 0, 0, 1, GELU, 0, FAST, 64, 0},
    /* batch-1 shapes with few output tiles and a long K: split-K on cuBLAS
     * (S = 16, 8, 8, 16 on a 132-SM H100), every transposition, padding,
     * row bias, beta = 1 */
    {"linear_splitk_b1_fc2_beta1",       1, 196,  320, 1280, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 1, FP32, 0, 0},
    {"linear_splitk_tn_pad_rowbias",     1, 100,   60,  512, 1, 0, 3, 2, 1, 0, 0, 2, SILU, 0, FP32, 0, 0},
    {"linear_splitk_tt_gelu",            1,  49,  640,  640, 1, 1, 0, 0, 0, 0, 0, 1, GELU, 0, FP32, 0, 0},
    {"linear_splitk_fast_nt",            1, 196,  320, 1280, 0, 1, 0, 0, 0, 0, 0, 1, GELUT, 0, FAST, 0, 0},
    /* every (ta, tb) with leading dimensions and batch strides of whole
     * float4s: the 3xTF32 tensor-core path of fp32 GEMMs on sm_80+ (the
     * unaligned cases above decline it and run cuBLAS SGEMM) */
    {"linear_3xtf32_nn_rowbias",         2,  96,   68, 132, 0, 0, 0, 0, 0, 0, 0, 2, RELU, 0, FP32, 0, 0},
    {"linear_3xtf32_tn_beta1_pad",       3,  68,   40, 200, 1, 0, 4, 4, 4, 0, 0, 1, NONE, 1, FP32, 0, 0},
    {"linear_3xtf32_tt_outproj_beta1",   4, 196,  320, 320, 1, 1, 0, 0, 0, 0, 0, 0, NONE, 1, FP32, 0, 0},
    /* NT, batch 1, beta 0 with a per-column bias and GELU (erf) or none:
     * fused into the 3xTF32 GEMM's epilogue (also fc1 and the head above) */
    {"linear_3xtf32_nt_gelu_nobias",     1,  68,   36,  96, 0, 1, 0, 0, 0, 0, 0, 0, GELU, 0, FP32, 0, 0},
    {"linear_3xtf32_nt_bias_pad",        1, 132,   72, 200, 0, 1, 4, 4, 8, 0, 0, 1, NONE, 0, FP32, 0, 0},
    /* NT, batch 1, beta 1 with a per-column bias (fc2, proj): the bias is
     * a broadcast vector in the 3xTF32 GEMM's epilogue on top of Y (also
     * linear_mv_fc2_beta1_256x196 above) */
    {"linear_3xtf32_nt_beta1_bias_pad",  1, 132,   72, 200, 0, 1, 4, 4, 8, 0, 0, 1, NONE, 1, FP32, 0, 0},
    {"linear_3xtf32_nt_beta1_bias_M3",   1,   3,   20,  36, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 1, FP32, 0, 0},
    {"linear_3xtf32_nn_M320_wide",       1, 320, 12544, 1440, 0, 0, 0, 0, 0, 0, 0, 2, GELU, 0, FP32, 64, 0},
    {"linear_3xtf32_nt_shared_a_K4100",  2,  36,   44, 4100, 0, 1, 0, 0, 0, 1, 0, 1, GELU, 0, FP32, 0, 0},
    /* few output tiles in fp32: the cluster GEMM on sm_90+ (split-K over
     * a thread-block cluster, S = 8 / 8 / 4 / 2 / 2 / 8 / 8 slices on a
     * 132-SM device; 16-byte copies where rows allow, 4-byte otherwise;
     * slices partly or wholly past K; slices of at most 64 k, staged
     * whole) */
    {"linear_cluster_b1_inproj",         1, 196,  320,  320, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 0, FP32, 0, 0},
    {"linear_cluster_s4_beta1_K512",     1,  49,  640,  512, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 1, FP32, 0, 0},
    {"linear_cluster_tt_ld49",           1,  49,   36,  160, 1, 1, 0, 0, 0, 0, 0, 0, NONE, 0, FP32, 0, 0},
    {"linear_cluster_nn_K72_rowbias",    1, 160,  196,   72, 0, 0, 0, 0, 0, 0, 0, 2, SILU, 0, FP32, 0, 0},
    {"linear_cluster_uneven_slices_pad", 1,  70,  130,  100, 0, 1, 3, 1, 2, 0, 0, 1, GELUT, 0, FP32, 0, 0},
    {"linear_cluster_tn_batch3_K500",    3,  65,   33,  500, 1, 0, 0, 4, 0, 0, 1, 2, NONE, 1, FP32, 0, 0},
    {"linear_cluster_conv_nn_K264",      1, 160,  392,  264, 0, 0, 0, 0, 0, 0, 0, 2, GELU, 0, FP32, 0, 0},
    /* slices of 65..192 k: the chunked cluster GEMM (32-k chunks, fp32
     * sums; S = 8 here): fc2-like K = 1280, the stage-4 K = 640 at batch
     * 2 with beta 1, every layout, 4-byte copies (padded rows), a last
     * slice shorter than its chunks; K = 2560 would need 320-long slices
     * and takes the vendor path */
    {"linear_cluster_chunked_K1280",     1,  64,   64, 1280, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 0, FP32, 0, 0},
    {"linear_cluster_chunked_tn_b2_K640", 2,  49,  160,  640, 1, 0, 0, 0, 0, 0, 1, 1, NONE, 1, FP32, 0, 0},
    {"linear_cluster_chunked_tt_K700_pad", 1, 49,  100,  700, 1, 1, 1, 3, 0, 0, 0, 2, GELU, 0, FP32, 0, 0},
    {"linear_cluster_chunked_nn_K1100",  1,  70,   90, 1100, 0, 0, 0, 0, 0, 0, 0, 1, SILU, 0, FP32, 0, 0},
    {"linear_cluster_K2560_declines",    1,  49,   64, 2560, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 0, FP32, 0, 0},
    /* K <= 64 with at most 2^20 outputs: the fused SIMT kernel (fp32 FMA
     * chains) on every GEMM path; MambaVision's batch-1 dt_proj (stage 3
     * and 4 shapes), K = 1, every layout with padded rows, shared
     * operands, beta 1 and a row bias; 2^20 + outputs take the GEMM paths */
    {"linear_smallk_dtproj_b1",          1, 196,  160,   20, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 0, FP32, 0, 0},
    {"linear_smallk_dtproj_s4_nn_K40",   1, 320,   49,   40, 0, 0, 0, 0, 0, 0, 0, 2, NONE, 0, FP32, 0, 0},
    {"linear_smallk_K1_tt_pad",          1,  37,   70,    1, 1, 1, 3, 2, 5, 0, 0, 2, SILU, 0, FP32, 0, 0},
    {"linear_smallk_tn_b3_beta1",        3,  65,   33,   32, 1, 0, 1, 0, 2, 1, 0, 2, GELU, 1, FP32, 0, 0},
    {"linear_smallk_nn_fast_shared_b",   2,  50,   90,   17, 0, 0, 0, 3, 0, 0, 1, 1, NONE, 0, FAST, 0, 0},
    {"linear_smallk_K32_over_2p20",      1, 1025, 1024,  32, 0, 1, 0, 0, 0, 0, 0, 1, GELUT, 0, FP32, 64, 0},
    /* M <= 8 rows times a PyTorch weight (tb), K >= 128: one warp per
     * output column on every GEMM path; the batch-1 head, padded rows
     * (4-byte loads) with beta 1 and a row bias, fast math at batch 3
     * with a shared weight */
    {"linear_rows_head_b1",              1,   1, 1000,  640, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 0, FP32, 0, 0},
    {"linear_rows_M7_pad_beta1",         2,   7,  300,  130, 0, 1, 1, 2, 3, 0, 0, 2, GELU, 1, FP32, 0, 0},
    {"linear_rows_M3_shared_b_fast",     3,   3,   77,  256, 0, 1, 0, 0, 0, 0, 1, 1, SILU, 0, FAST, 0, 0},
    {"linear_bf16_nt_bias_gelu",         1, 200,  150, 320, 0, 1, 0, 0, 0, 0, 0, 1, GELU, 0, BF16, 0, 0},
    {"linear_bf16_batch_tn_beta1_pad",   3,  65,   33, 129, 1, 0, 3, 2, 1, 0, 0, 0, NONE, 1, BF16, 0, 0},
    {"linear_bf16_tt_shared_b",          4,  19,   40, 200, 1, 1, 0, 0, 0, 0, 1, 2, SILU, 0, BF16, 0, 0},
    {"linear_bf16_mv_fc2_beta1",         1, 50176, 320, 1280, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 1, BF16, 64, 0},
    /* at least one wave of 128 x 128 output tiles: on Hopper the fused
     * sm_90a GEMM (cuda_gemm16_sm90.h) with a short K (pingpong) onto a
     * separate residual with a bias (proj), with a bias alone (qkv), and
     * padded strides it declines (cuBLAS + epilogue instead) */
    {"linear_bf16_sm90_proj_residual",   1, 8192,  320,  320, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 1, BF16, 0, 1},
    {"linear_bf16_sm90_qkv_bias",        1, 4224,  960,  320, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 0, BF16, 0, 0},
    {"linear_bf16_sm90_pad_declined",    1, 4224,  640,  320, 0, 1, 3, 3, 3, 0, 0, 1, NONE, 1, BF16, 0, 1},
    {"linear_bf16_sm90_ragged_tiles",    1, 4100, 1000,  328, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 1, BF16, 0, 1},
    /* the mixer's batch-1 GEMMs in a 16-bit graph (B stage 4), fp32
     * operands copied to 16 bits: x_proj and dt_proj on rows of 49
     * tokens at a padded stride (56) or dense, out_proj's channel-major
     * input */
    {"linear_bf16_b1_xproj_L49_ld56",    1,   80,   49,  512, 0, 0, 0, 7, 7, 0, 0, 0, NONE, 0, BF16, 0, 0},
    {"linear_bf16_b1_xproj_L49_dense",   1,   80,   49,  512, 0, 0, 0, 0, 0, 0, 0, 0, NONE, 0, BF16, 0, 0},
    {"linear_bf16_b1_dtproj_L49_ld56",   1,  512,   49,   64, 0, 0, 0, 7, 7, 0, 0, 2, NONE, 0, BF16, 0, 0},
    {"linear_bf16_b1_outproj_L49_ld56",  1,   49, 1024, 1024, 1, 1, 7, 0, 0, 0, 0, 0, NONE, 1, BF16, 0, 1},
    {"linear_bf16_b1_outproj_L196",      1,  196,  512,  512, 1, 1, 0, 0, 0, 0, 0, 0, NONE, 1, BF16, 0, 0},
    /* beta 1 onto a separate residual (a block graph's projections onto
     * its input, no copy first) on every GEMM path: the cluster GEMM
     * (out_proj, channel-major A; proj with a bias), the vendor GEMM plus
     * epilogue (batch 4, batch 256 sampled, fast, bf16), the small-K and
     * row kernels */
    {"linear_residual_cluster_outproj",  1, 196,  320,  320, 1, 1, 0, 0, 0, 0, 0, 0, NONE, 1, FP32, 0, 1},
    {"linear_residual_cluster_proj_bias", 1, 196, 320,  320, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 1, FP32, 0, 1},
    {"linear_residual_outproj_b4_pad",   4, 196,  320,  320, 1, 1, 0, 0, 4, 0, 0, 0, NONE, 1, FP32, 0, 1},
    {"linear_residual_proj_256x196",     1, 50176, 320, 320, 0, 1, 0, 0, 0, 0, 0, 1, NONE, 1, FP32, 64, 1},
    {"linear_residual_fast_tn",          3,  65,   33,  129, 1, 0, 1, 0, 0, 0, 0, 0, NONE, 1, FAST, 0, 1},
    {"linear_residual_bf16_nt_bias",     2, 200,  150,  320, 0, 1, 0, 0, 2, 0, 0, 1, NONE, 1, BF16, 0, 1},
    {"linear_residual_smallk_tn_b3",     3,  65,   33,   32, 1, 0, 1, 0, 2, 1, 0, 2, NONE, 1, FP32, 0, 1},
    {"linear_residual_rows_M7_pad",      2,   7,  300,  130, 0, 1, 1, 2, 3, 0, 0, 2, NONE, 1, FP32, 0, 1},
};

/* A batched bf16 linear with A transposed per item (K x M), one shared B
 * and a dense Y (the mixer's out_proj over windows): on the vendor GEMM
 * it runs as one GEMM of batch * M rows (linear_fold_batch). beta 1 onto
 * Y itself, onto a separate residual, or beta 0 with a per-column bias;
 * the bf16 linear cases' tolerance (6e-3 sqrt(K), 2e-2). */
static void case_linear_fold(const char *name, int64_t batch, int64_t M, int64_t N, int64_t K, int mode)
{
    if (!selected(name)) return;
    buf_t A = buf_rand(batch * K * M, -1.0, 1.0), B = buf_rand(N * K, -1.0, 1.0), bias = buf_rand(N, -1.0, 1.0);
    buf_t Y = buf_out(batch * M * N), R = {0, 0, 0};
    if (mode == 1) R = buf_rand(batch * M * N, -1.0, 1.0);
    if (mode == 0) {
        for (int64_t i = 0; i < Y.n; i++) Y.h[i] = (float)tu_uniform(-1.0, 1.0);
        buf_upload(&Y);
    }
    mvrt_op_params_t ph, pd;
    memset(&ph, 0, sizeof ph);
    ph.kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *l = &ph.u.linear;
    l->batch = batch; l->M = M; l->N = N; l->K = K;
    l->A = A.h; l->lda = M; l->batch_stride_a = K * M; l->trans_a = 1;
    l->B = B.h; l->ldb = K; l->batch_stride_b = 0; l->trans_b = 1; l->b_constant = 1;
    l->Y = Y.h; l->ldy = N; l->batch_stride_y = M * N;
    l->bias = mode == 2 ? bias.h : NULL;
    l->beta = mode == 2 ? 0.f : 1.f;
    l->residual = mode == 1 ? R.h : NULL;
    l->math = MVRT_MATH_BF16;
    pd = ph;
    pd.u.linear.A = A.d; pd.u.linear.B = B.d; pd.u.linear.Y = Y.d;
    pd.u.linear.bias = mode == 2 ? bias.d : NULL;
    pd.u.linear.residual = mode == 1 ? R.d : NULL;
    double *ref = ref_new(Y.n);
    for (int64_t i = 0; i < Y.n; i++) ref[i] = Y.h[i];
    mvrt_ref_op_run(&ph, ref);
    run_dev(&pd);
    const int bf16_gemm = strcmp(gemm_mode, "builtin") != 0;
    check(name, &Y, ref, 0, bf16_gemm ? 6e-3 * sqrt((double)K) : 2e-6 * sqrt((double)K) + 1e-6,
          bf16_gemm ? 2e-2 : 1e-5);
    free(ref);
    buf_free(&A); buf_free(&B); buf_free(&bias); buf_free(&Y);
    if (mode == 1) buf_free(&R);
}

static const ccase_t conv_cases[] = {
    /* name                      batch cin   h    w  cout k  s  p bias res act  sampled fast */
    {"conv2d_1x1_pixel",             1,   1,   1,   1,   1, 1, 1, 0, 0, 0, NONE, 0, 0},
    {"conv2d_3x3_odd",               2,   3,   7,   5,   4, 3, 1, 1, 1, 0, RELU, 0, 0},
    {"conv2d_stem_s2_relu",          2,   3,  33,  31,  32, 3, 2, 1, 0, 0, RELU, 0, 0},
    {"conv2d_s2_res_gelutanh",       1,   5,   9,  11,   7, 3, 2, 1, 1, 1, GELUT, 0, 0},
    {"conv2d_1x1_direct",            3,   6,   5,   7,   3, 1, 1, 0, 1, 1, GELU, 0, 0},
    {"conv2d_1x1_s2",                2,   6,   8,   7,   5, 1, 2, 0, 1, 0, NONE, 0, 0},
    {"conv2d_5x5_p2",                1,   4,   6,   6,   3, 5, 1, 2, 1, 0, SILU, 0, 0},
    {"conv2d_3x3_nopad",             3,   2,   4,   4,   2, 3, 1, 0, 0, 1, NONE, 0, 0},
    /* 3x3 with 1..4 input channels: the direct small-patch kernel (no
     * GEMM) in every math mode; output channels not multiples of its 16,
     * the edges of odd images, stride 2 */
    {"conv2d_smallk_stem_224_b3",    3,   3, 224, 224,  32, 3, 2, 1, 1, 0, RELU, 1, 0},
    {"conv2d_smallk_c1_res_gelu",    2,   1,  17,  13,  20, 3, 1, 1, 1, 1, GELU, 0, 0},
    {"conv2d_smallk_c4_s2_silu",     2,   4,  15,  16,  37, 3, 2, 1, 0, 1, SILU, 0, 0},
    {"conv2d_smallk_c2_s3_nopad",    1,   2,  20,  11,   5, 3, 3, 0, 1, 0, NONE, 0, 0},
    {"conv2d_smallk_fast_c3",        2,   3,  19,  21,  24, 3, 2, 1, 1, 1, GELUT, 0, 1},
    /* channels in and out multiples of 4: the CUDA backend's implicit-GEMM
     * conv on 3xTF32 (fp32 math); the cases above with odd channel counts
     * decline it and run im2col + GEMM */
    {"conv2d_implicit_5x5_s2_res_silu",  3,   8,  13,  11,  12, 5, 2, 2, 1, 1, SILU, 0, 0},
    {"conv2d_implicit_3x3_nopad_relu",   2,   8,   9,   9,   4, 3, 1, 0, 0, 0, RELU, 0, 0},
    {"conv2d_implicit_1x1_s2",           2,   8,   8,   7,   8, 1, 2, 0, 1, 0, NONE, 0, 0},
    {"conv2d_implicit_3x3_c64_b5_gelu",  5,  64,  14,  14, 128, 3, 1, 1, 1, 1, GELU, 0, 0},
    {"conv2d_mv_56x56x80_s1_b64",   64,  80,  56,  56,  80, 3, 1, 1, 1, 1, GELUT, 1, 0},
    {"conv2d_mv_56x56x80_s2_b16",   16,  80,  56,  56, 160, 3, 2, 1, 0, 0, NONE, 1, 0},
    {"conv2d_mv_28x28x160_b40_res", 40, 160,  28,  28, 160, 3, 1, 1, 1, 1, NONE, 1, 0},
    {"conv2d_splitk_b1_28x28x160",   1, 160,  28,  28, 160, 3, 1, 1, 1, 1, GELU, 0, 0},
    {"conv2d_splitk_1x1_b1",         1, 256,   7,   7,  64, 1, 1, 0, 1, 1, RELU, 0, 0},
    {"conv2d_fast_28x28x160",        9, 160,  28,  28, 160, 3, 1, 1, 1, 1, GELU, 1, 1},
    /* fast math from 8192 output positions: the implicit-GEMM conv on TF32 */
    {"conv2d_fast_implicit_56x56x80_b4",  4,  80,  56,  56,  80, 3, 1, 1, 1, 1, GELUT, 1, 1},
    {"conv2d_fast_implicit_s2_c64_b12",  12,  64,  64,  64, 128, 3, 2, 1, 1, 0, RELU, 1, 1},
    {"conv2d_bf16_28x28x160_s1",     9, 160,  28,  28, 160, 3, 1, 1, 1, 1, GELU, 1, 2},
    {"conv2d_bf16_stem_s2_odd",      3,   3,  33,  31,  32, 3, 2, 1, 1, 0, RELU, 0, 2},
    /* bf16 from 8192 output positions, channels multiples of 8: the
     * implicit-GEMM conv on bf16 tensor cores (CUDA, CUTLASS built):
     * 80 output channels (partial 32-wide tiles), stride 2, 5x5 taps,
     * residual + activation epilogues; the 12-channel case declines it */
    {"conv2d_bf16_implicit_56x56x80_b4",  4,  80,  56,  56,  80, 3, 1, 1, 1, 1, GELUT, 1, 2},
    {"conv2d_bf16_implicit_s2_c64_b12",  12,  64,  64,  64, 128, 3, 2, 1, 1, 0, RELU, 1, 2},
    {"conv2d_bf16_implicit_5x5_s2_res",  40,  16,  41,  39,  24, 5, 2, 2, 1, 1, SILU, 1, 2},
    {"conv2d_bf16_implicit_c12_declines", 3,  12,  64,  64,  16, 3, 1, 1, 0, 1, NONE, 1, 2},
    /* few output tiles in fp32: the cluster conv on sm_90+ (implicit GEMM,
     * K split over a thread-block cluster): MambaVision-T's batch-1 convs
     * (S = 4 / 4 / 8 / 8 slices of 184 / 72 / 96 / 184 k on a 132-SM
     * device; partial channel and position tiles; 320 -> 640 would need
     * 360-long slices and declines); K = 325 (4-byte weight copies, the
     * last slice wholly past K) with 5x5 taps, a 1x1 stride-2 conv
     * (S = 2), no padding at batch 4. The cluster2 pass (at most 2 slices)
     * runs the 32 -> 80 conv and declines the long-K ones (slices over
     * 192 k). */
    {"conv2d_cluster_56x56x80_res_gelut",  1,  80,  56,  56,  80, 3, 1, 1, 1, 1, GELUT, 0, 0},
    {"conv2d_cluster_112_s2_32to80_gelu",  1,  32, 112, 112,  80, 3, 2, 1, 1, 0, GELU, 0, 0},
    {"conv2d_cluster_56_s2_80to160",       1,  80,  56,  56, 160, 3, 2, 1, 1, 0, NONE, 0, 0},
    {"conv2d_cluster_28_s2_160to320",      1, 160,  28,  28, 320, 3, 2, 1, 1, 0, NONE, 0, 0},
    {"conv2d_cluster_14_s2_320to640",      1, 320,  14,  14, 640, 3, 2, 1, 1, 0, NONE, 0, 0},
    {"conv2d_cluster_5x5_K325_b2_res",     2,  13,  17,  19,  37, 5, 1, 2, 1, 1, SILU, 0, 0},
    {"conv2d_cluster_1x1_s2_b3",           3,  70,  15,  13,  33, 1, 2, 0, 1, 0, RELU, 0, 0},
    {"conv2d_cluster_nopad_b4_res",        4,  40,  12,  10,  20, 3, 1, 0, 0, 1, NONE, 0, 0},
};

/* Batch-1 16-bit linears with a bias and / or a residual, below the
 * Hopper kernels' wave of tiles (cuBLAS + the epilogue pass everywhere):
 * MambaVision-B's batch-1 shapes (stage 3: 196 tokens of 512 channels;
 * stage 4: 49 of 1024): qkv (bias, 16-bit out), proj onto a separate
 * residual, fc2 onto the stream in place, a residual without a bias, a
 * float Y with a bias, and odd padded strides (2-byte aligned rows). */
static void run_linear_batch1_16_cases(void)
{
    case_linear_storage("linear_b1_16_qkv", 1, 196, 1536, 512, 0, 3, 1, 1, NONE, BF16, 0);
    case_linear_storage_res("linear_b1_16_proj_sep", 1, 196, 512, 512, 0, 3, 1, 1, NONE, BF16, 0, RES_SEPARATE);
    case_linear_storage_res("linear_b1_16_fc2_inplace_s4", 1, 49, 1024, 4096, 0, 3, 1, 1, NONE, BF16, 0, RES_INPLACE);
    case_linear_storage_res("linear_b1_16_res_nobias_sep", 1, 49, 1024, 1024, 0, 3, 1, 0, NONE, BF16, 0, RES_SEPARATE);
    case_linear_storage("linear_b1_16_float_y_bias", 1, 196, 640, 320, 0, 3, 0, 1, NONE, BF16, 0);
    case_linear_storage_res("linear_b1_16_pad_odd_sep", 1, 37, 75, 130, 0, 1, 1, 1, NONE, BF16, 3, RES_SEPARATE);
    case_linear_storage("linear_b1_16_pad_odd_bias", 1, 50, 33, 72, 0, 3, 1, 1, NONE, BF16, 5);
}

/* The linear's 16-bit storage forms (g_t16). */
static void run_linear_storage_cases(void)
{
    /* bf16 storage (the graph's bf16 mode on GPUs): the MLP's fc1 (bf16 in,
     * bias + GELU, bf16 out) and fc2 (bf16 in), batched / transposed /
     * padded forms, odd sizes (scalar epilogue), fp32 math through scratch */
    case_linear_storage("linear_s16_fc1_a16_y16_gelu", 1, 1000, 1280, 320, 0, 1, 1, 1, GELU, BF16, 0);
    case_linear_storage("linear_s16_fc2_a16", 1, 777, 320, 1280, 0, 1, 0, 1, NONE, BF16, 0);
    /* the same on the fused sm_90a GEMM (a wave of tiles or more): the MLP
     * hidden (bias + erf GELU, bf16 out, 128 x 256 tiles) and fc2 with
     * K >= 1024 (cooperative 128 x 128) */
    case_linear_storage("linear_s16_fc1_sm90_gelu", 1, 4224, 1280, 320, 0, 1, 1, 1, GELU, BF16, 0);
    case_linear_storage("linear_s16_fc2_sm90_bias", 1, 4224, 640, 1280, 0, 1, 0, 1, NONE, BF16, 0);
    /* M, N and K that are no multiples of the tiles (TMA clips the edges) */
    case_linear_storage("linear_s16_fc1_sm90_ragged", 1, 4100, 1288, 328, 0, 1, 1, 1, GELU, BF16, 0);
    /* bf16 weights (b16, as a bf16 graph stores them): the fused sm_90a
     * GEMM, cuBLAS at few rows (a padded ldb), a batched transposed A;
     * declined with fp32 math and without a vendor GEMM */
    case_linear_storage("linear_b16_fc1_sm90_gelu", 1, 4224, 1280, 320, 0, 3, 1, 1, GELU, BF16, 0);
    case_linear_storage("linear_b16_fc2_sm90_bias", 1, 4224, 640, 1280, 0, 3, 0, 1, NONE, BF16, 0);
    case_linear_storage("linear_b16_few_rows_pad", 1, 196, 320, 320, 0, 2, 0, 1, NONE, BF16, 5);
    case_linear_storage("linear_b16_batch_ta_odd", 3, 37, 19, 45, 1, 3, 1, 1, SILU, BF16, 3);
    case_linear_storage("linear_b16_fp32_math_declined", 1, 65, 40, 72, 0, 3, 1, 1, GELU, FP32, 0);
    case_linear_storage("linear_s16_batch_ta_pad_odd", 3, 37, 19, 45, 1, 1, 1, 1, SILU, BF16, 3);
    case_linear_storage("linear_s16_y16_only_odd", 2, 5, 7, 9, 0, 0, 1, 0, NONE, BF16, 1);
    case_linear_storage("linear_s16_fp32_math_a16_y16", 2, 65, 40, 72, 0, 1, 1, 1, GELU, FP32, 2);
    case_linear_storage("linear_s16_fp32_math_K0", 1, 4, 8, 0, 0, 1, 1, 1, NONE, FP32, 0);
    case_linear_storage("linear_s16_bf16_K0", 1, 4, 8, 0, 0, 1, 1, 1, RELU, BF16, 0);
    /* a 16-bit residual stream (y16, beta 1): fc2 and proj onto it on the
     * sm_90a GEMMs with a 16-bit C (K >= 1024: cooperative, else pingpong;
     * B16: 16-bit weights as the graph has them), few rows on cuBLAS plus
     * the epilogue pass (in place with a bias: two roundings; a separate
     * R), the out_proj form (in place, no bias: cuBLAS alone), odd and
     * padded shapes (scalar epilogue), fp32 math through scratch, K 0 */
    case_linear_storage_res("linear_res16_fc2_sm90", 1, 4224, 640, 1280, 0, 3, 1, 1, NONE, BF16, 0, RES_INPLACE);
    case_linear_storage_res("linear_res16_proj_sm90", 1, 8448, 320, 320, 0, 3, 1, 1, NONE, BF16, 0, RES_INPLACE);
    case_linear_storage_res("linear_res16_sm90_separate", 1, 8448, 320, 320, 0, 3, 1, 1, NONE, BF16, 0,
                            RES_SEPARATE);
    case_linear_storage_res("linear_res16_sm90_ragged", 1, 8200, 328, 1032, 0, 1, 1, 1, NONE, BF16, 0, RES_INPLACE);
    case_linear_storage_res("linear_res16_few_rows", 1, 196, 512, 2048, 0, 3, 1, 1, NONE, BF16, 0, RES_INPLACE);
    case_linear_storage_res("linear_res16_few_rows_sep", 1, 196, 512, 512, 0, 3, 1, 1, NONE, BF16, 0, RES_SEPARATE);
    case_linear_storage_res("linear_res16_outproj_nobias", 1, 4224, 320, 320, 0, 3, 1, 0, NONE, BF16, 0, RES_INPLACE);
    case_linear_storage_res("linear_res16_batch_ta_odd", 3, 37, 19, 45, 1, 1, 1, 1, NONE, BF16, 3, RES_INPLACE);
    /* the out_proj of the 16-bit mixer chain (a16, ta, b16, a 16-bit
     * residual stream, dense): folded over a transposed copy of the 16-bit
     * A, by the windows kernel (B's stage 3 at batch 40: 160 blocks) and
     * by the tiles one (odd sizes; few windows) */
    case_linear_storage_res("linear_res16_outproj_fold_a16_b40", 40, 196, 256, 256, 1, 3, 1, 0, NONE, BF16, -1,
                            RES_INPLACE);
    case_linear_storage_res("linear_res16_outproj_fold_a16_odd", 3, 37, 19, 45, 1, 3, 1, 0, NONE, BF16, -1,
                            RES_SEPARATE);
    case_linear_storage_res("linear_res16_outproj_fold_f32_b40", 40, 196, 256, 256, 1, 2, 1, 0, NONE, BF16, -1,
                            RES_INPLACE);
    case_linear_storage_res("linear_res16_odd_sep", 2, 5, 7, 9, 0, 0, 1, 1, NONE, BF16, 1, RES_SEPARATE);
    case_linear_storage_res("linear_res16_fp32_math", 2, 65, 40, 72, 0, 1, 1, 1, NONE, FP32, 2, RES_INPLACE);
    case_linear_storage_res("linear_res16_fp32_math_sep", 2, 65, 40, 72, 0, 1, 1, 1, NONE, FP32, 2, RES_SEPARATE);
    case_linear_storage_res("linear_res16_bf16_K0", 1, 4, 8, 0, 0, 1, 1, 1, NONE, BF16, 0, RES_INPLACE);
    /* dt_proj over windows (gemm_smallk_batched_kernel): MambaVision-B's
     * stage 3 (K 32, 196 columns: 16-byte staging loads and float4
     * stores) with a 16-bit weight, T's stage 4 (49 columns: scalar loads
     * and stores) in fp32, B's stage 4 (K 64: row groups cut from 19 to 17
     * to fit 48 KB; 512 rows in blocks of 136, the last one partial), a
     * padded odd form with K 64 and GELU, K 1 with the widest N (256) */
    case_linear_smallkb("linear_smallkb_dtproj_B_s3_a16", 24, 256, 196, 32, 1, BF16, 0, NONE);
    case_linear_smallkb("linear_smallkb_dtproj_T_s4_fp32", 80, 320, 49, 40, 0, FP32, 0, NONE);
    case_linear_smallkb("linear_smallkb_dtproj_B_s4_a16", 48, 512, 49, 64, 1, BF16, 0, NONE);
    case_linear_smallkb("linear_smallkb_pad_K64_gelu_fast", 30, 301, 130, 64, 0, FAST, 3, GELU);
    case_linear_smallkb("linear_smallkb_K1_N256_a16", 20, 250, 256, 1, 1, BF16, 0, SILU);
    /* the 16-bit chain (B and Y 16-bit): vector and element-wise staging.
     * With a 16-bit A too, NVIDIA devices run gemm_smallk_mma16_kernel:
     * K rounded up to 16 (T's 20 and 40, K 1), rows not a multiple of its
     * 64 per block (330, 250), odd strides (element-wise staging and
     * stores), 49 and 196 columns (16-column tiles past N); a float A
     * keeps the FMA kernel */
    case_linear_smallkb("linear_smallkb_io16_dtproj_B_s3", 24, 256, 196, 32, 3, BF16, 0, NONE);
    case_linear_smallkb("linear_smallkb_io16_B_s4_pad", 48, 512, 49, 64, 3, BF16, 3, NONE);
    case_linear_smallkb("linear_smallkb_io16_T_s3_K20", 40, 160, 196, 20, 3, BF16, 0, NONE);
    case_linear_smallkb("linear_smallkb_io16_T_s4_K40_pad_gelu", 80, 330, 49, 40, 3, BF16, 1, GELU);
    case_linear_smallkb("linear_smallkb_io16_K1_N256_silu", 20, 250, 256, 1, 3, BF16, 0, SILU);
    case_linear_smallkb("linear_smallkb_io16_float_A", 20, 250, 256, 8, 2, BF16, 0, SILU);
    run_linear_batch1_16_cases();
}

static void run_gemm_cases(void)
{
    for (size_t i = 0; i < sizeof linear_cases / sizeof linear_cases[0]; i++) case_linear(&linear_cases[i]);
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) case_conv2d(&conv_cases[i]);
    run_linear_storage_cases();
    /* out_proj over windows as one GEMM: MambaVision-T stage 3 / 4 shapes,
     * in place, onto a residual, and with a column bias at beta 0 */
    case_linear_fold("linear_fold_outproj_b8_L196_inplace", 8, 196, 320, 320, 0);
    case_linear_fold("linear_fold_outproj_b5_L49_residual", 5, 49, 640, 640, 1);
    case_linear_fold("linear_fold_odd_b3_M7_N9_K13_bias", 3, 7, 9, 13, 2);
    /* the transposing stage's two kernels (linear_gpu.cuh): whole windows
     * (where their 64-row blocks number at least the SMs: 128 windows of
     * 2, 17 of 8, 16 of 16) with a row tail (100 = 64 + 36) and rows of 33
     * (16-byte pieces across rows), MambaVision-B's stage-3 and stage-4
     * windows; 64 x 32 tiles for rows longer than a window tile (300), for
     * few windows (batch 1 to 3: B's shapes) and, above, the unaligned
     * odd case */
    case_linear_fold("linear_fold_K100_M33_b128_residual", 128, 33, 64, 100, 1);
    case_linear_fold("linear_fold_outproj_b17_L196_C512", 17, 196, 512, 512, 1);
    case_linear_fold("linear_fold_outproj_b16_L49_C1024", 16, 49, 1024, 1024, 1);
    case_linear_fold("linear_fold_K100_M33_b3_residual", 3, 33, 64, 100, 1);
    case_linear_fold("linear_fold_outproj_b2_L196_C512", 2, 196, 512, 512, 1);
    case_linear_fold("linear_fold_outproj_b3_L49_C1024", 3, 49, 1024, 1024, 1);
    case_linear_fold("linear_fold_outproj_b1_L196_C512", 1, 196, 512, 512, 1);
    case_linear_fold("linear_fold_M300_K70_b2_inplace", 2, 300, 64, 70, 0);
    case_graph();
}

/* The fp32 attention cases: atol 1e-5, rtol 1e-4. On sm_80+ they run on
 * the 3xTF32 tensor-core kernel, with MVRT_CUDA_FP32_ATTENTION=simt on the
 * fp32 SIMT kernels (the second pass of main). */
static void run_attention_cases(void)
{
    case_attention("attention_1x1x1x1", 1, 1, 1, 1, 0);
    case_attention("attention_L5_h3_d7", 2, 5, 3, 7, 0);
    case_attention("attention_L64_d8", 1, 64, 2, 8, 0);
    case_attention("attention_L65_d40", 3, 65, 2, 40, 0);
    case_attention("attention_L196_h8_d40", 2, 196, 8, 40, 0);
    case_attention("attention_L49_h16_d49", 2, 49, 16, 49, 0);
    case_attention("attention_L130_d64", 1, 130, 2, 64, 0);
    case_attention("attention_L33_d72_direct", 1, 33, 2, 72, 0);
    case_attention("attention_L300_d32", 1, 300, 1, 32, 0);
    case_attention("attention_mv_L196_h8_d40_b64", 64, 196, 8, 40, 1);
    /* SIMT kernel (the simt pass): few blocks -> 4 lanes per query over
     * shares of the keys; L = 20: lanes 2 and 3 see no key at all */
    case_attention("attention_split_keys_L20_d16", 1, 20, 2, 16, 0);
    /* enough blocks -> one lane per query, a partial last query tile */
    case_attention("attention_one_lane_L130_h8_b8", 8, 130, 8, 40, 0);
    /* few blocks on sm_90+: the keys split over clusters of 4 (2 for 2-3
     * key tiles; several tiles per block for L = 1000), states merged
     * through distributed shared memory (also L65, L196, L130 and L300
     * above, and fast L77 below); the cluster2 pass turns it off */
    case_attention("attention_keysplit_b1_L196_h8_d40", 1, 196, 8, 40, 0);
    case_attention("attention_keysplit_L1000_d24_b2", 2, 1000, 1, 24, 0);
    /* fast math computes attention in fp32 as well (same tolerance) */
    case_attention_math("attention_fast_L196_h8_d40", 3, 196, 8, 40, 0, MVRT_MATH_FAST);
    case_attention_math("attention_fast_L77_h2_d20", 2, 77, 2, 20, 0, MVRT_MATH_FAST);
}

/* 16-bit output (y16, g_t16): atol 2e-5, rtol round16_rtol(); vector
 * (cols % 4 == 0, 8-byte aligned rows) and scalar paths */
static void run_layernorm16_cases(void)
{
    case_layernorm_bf16("layernorm_bf16_33x320_vec", 33, 320, 0, 0);
    case_layernorm_bf16("layernorm_bf16_12x640_vec", 12, 640, 0, 0);
    case_layernorm_bf16("layernorm_bf16_9x97_ld101", 9, 97, 4, 4);
    case_layernorm_bf16("layernorm_bf16_7x96_ld98_scalar", 7, 96, 0, 2);
    case_layernorm_bf16("layernorm_bf16_mv_50176x320", 50176, 320, 0, 0);
    /* 16-bit input (the residual stream): 16-bit or float output, the
     * vector path (B's 512 and 1024 channels), strided and scalar rows */
    case_layernorm_s16("layernorm_x16_y16_50176x512", 50176, 512, 0, 0, 1);
    case_layernorm_s16("layernorm_x16_y16_33x1024", 33, 1024, 0, 0, 1);
    /* 16-bit input: several rows per warp, the next one prefetched (B's
     * stage-4 rows; one row; rows ending mid-warp with padded rows) */
    case_layernorm_s16("layernorm_x16_y16_12544x1024", 12544, 1024, 0, 0, 1);
    case_layernorm_s16("layernorm_x16_y16_1x320", 1, 320, 0, 0, 1);
    case_layernorm_s16("layernorm_x16_f32_301x640_ld648", 301, 640, 8, 4, 2);
    case_layernorm_s16("layernorm_x16_f32_9001x320_ld324", 9001, 320, 4, 4, 2);
    case_layernorm_s16("layernorm_x16_y16_9x97_ld101", 9, 97, 4, 4, 1);
    case_layernorm_s16("layernorm_x16_f32_12x640", 12, 640, 0, 0, 2);
    case_layernorm_s16("layernorm_x16_f32_7x96_ld98", 7, 96, 2, 0, 2);
    /* split rows: MambaVision-L's batch-1 stage-4 rows (8 warps, 2 slots
     * per thread), many rows of 1568, few of 640 (5 warps) and 1024 */
    case_layernorm_s16("layernorm_x16_y16_49x1568_split", 49, 1568, 0, 0, 1);
    case_layernorm_s16("layernorm_x16_f32_2000x1568_split", 2000, 1568, 0, 0, 2);
    case_layernorm_s16("layernorm_x16_y16_49x640_split", 49, 640, 0, 0, 1);
    case_layernorm_bf16("layernorm_bf16_49x1024_split", 49, 1024, 0, 0);
}

/* The 16-bit attention cases (math bf16, fp16 in the fp16 pass). */
static void run_attention16_cases(void)
{
    /* bf16 math: the tensor-core kernel on sm_80+ (atol 3e-2, rtol 3e-2),
     * the fp32 kernels elsewhere; head_dim 7/16/40/49/64 (padded to 16..64,
     * odd ones staged without vector loads), partial query and key tiles */
    case_attention_math("attention_bf16_1x1x1x1", 1, 1, 1, 1, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L5_h3_d7", 2, 5, 3, 7, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L65_d16_b3", 3, 65, 2, 16, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L49_h16_d49", 2, 49, 16, 49, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L130_d64", 1, 130, 2, 64, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L300_d32", 1, 300, 1, 32, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_mv_L196_h8_d40_b64", 64, 196, 8, 40, 1, MVRT_MATH_BF16);
    /* edges of the tiled kernel (fp32 q, k, v with 16-bit math; the
     * graph's 16-bit form has its own cases, attention_io16_*): L 1, 17,
     * 256 and 257, head_dim 4 / 20 (a half block of 8 output columns) /
     * 64, MambaVision's stage-4 shape */
    case_attention_math("attention_bf16_L1_d8", 2, 1, 3, 8, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L17_d4", 2, 17, 2, 4, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L77_h2_d20", 2, 77, 2, 20, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L256_d40", 2, 256, 3, 40, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L257_d40", 1, 257, 2, 40, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_L256_d64", 1, 256, 2, 64, 0, MVRT_MATH_BF16);
    case_attention_math("attention_bf16_mv_L49_h16_d40_b5", 5, 49, 16, 40, 0, MVRT_MATH_BF16);
}

/* Closes and reopens device 0 so that GEMM and attention knobs set in the
 * environment (read when a device opens) take effect; `mode` names the pass in the
 * output. 0 or -1 (message printed). */
/* How many cases of an optional op form the device must take in this pass
 * (-1: any). Folded LayerNorm: the 6 that fit the cluster GEMM on CUDA
 * sm_90+ with the cluster GEMM at its default 8 slices, none where the
 * cluster GEMM is off, on other devices, or with MVRT_CUDA_LN_FOLD=0.
 * Fused MLP: MLP_CASES_TAKEN on CUDA sm_90+, none on other devices or
 * with MVRT_CUDA_FUSED_MLP=0. */
static void check_taken(const char *form, int taken, int want)
{
    if (filter || want < 0) return;
    ran++;
    if (taken != want) {
        printf("FAIL: [%s] %d %s cases taken, %d expected\n", gemm_mode, taken, form, want);
        fails++;
    }
}

static int reopen_device(const char *mode)
{
    vt->device_close(dev);
    if (vt->device_open(0, &dev) != MVRT_OK) {
        fprintf(stderr, "FAIL: device_open(0) again: %s\n", tu_last_error);
        return -1;
    }
    stream = vt->default_stream(dev);
    gemm_mode = mode;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s PLUGIN [filter]\n", argv[0]); return 2; }
    vt = tu_open_plugin(argv[1], &dev);
    if (!vt->op_run) {
        fprintf(stderr, "FAIL: the plugin has no op_run\n");
        return 1;
    }
    stream = vt->default_stream(dev);
    filter = argc > 2 ? argv[2] : NULL;

    /* layernorm: atol 2e-5, rtol 2e-5 */
    case_layernorm("layernorm_1x1", 1, 1, 0, 0, 0);
    case_layernorm("layernorm_3x5", 3, 5, 0, 0, 0);
    case_layernorm("layernorm_7x80", 7, 80, 0, 0, 0);
    case_layernorm("layernorm_33x320_vec", 33, 320, 0, 0, 0);
    case_layernorm("layernorm_5x1568_vec", 5, 1568, 0, 0, 0);
    /* 5, 6 and 8 float4 per lane (640 / 700 / 1024 channels) */
    case_layernorm("layernorm_12x640_vec", 12, 640, 0, 0, 0);
    case_layernorm("layernorm_9x700_vec", 9, 700, 0, 0, 0);
    case_layernorm("layernorm_6x1024_vec", 6, 1024, 0, 0, 0);
    /* split rows (a block of up to 8 warps per row): 5 and 4 slots of 4
     * columns per thread; 2048 float4 (the most it takes), 2049 (scalar) */
    case_layernorm("layernorm_4x4100_split", 4, 4100, 0, 0, 0);
    case_layernorm("layernorm_3x8192_split", 3, 8192, 0, 0, 0);
    case_layernorm("layernorm_2x8196_scalar", 2, 8196, 0, 0, 0);
    case_layernorm("layernorm_inplace_7x2000_split", 7, 2000, 0, 0, 1);
    case_layernorm("layernorm_17x96_ld100", 17, 96, 4, 8, 0);
    case_layernorm("layernorm_9x97_ld101", 9, 97, 4, 1, 0);
    case_layernorm("layernorm_inplace_65x160", 65, 160, 0, 0, 1);
    case_layernorm("layernorm_inplace_odd_ld", 11, 33, 2, 0, 1);
    case_layernorm("layernorm_mv_50176x320", 50176, 320, 0, 0, 0);
    run_layernorm16_cases();

    /* dwconv1d + SiLU: atol 1e-5 sqrt(width) + 1e-6, rtol 1e-5 */
    case_dwconv("dwconv_1x1x1_w1", 1, 1, 1, 1, 0);
    case_dwconv("dwconv_L1_w3", 2, 5, 1, 3, 0);
    case_dwconv("dwconv_L2_w3", 3, 33, 2, 3, 1);
    case_dwconv("dwconv_w4_even", 2, 7, 29, 4, 2);
    case_dwconv("dwconv_w5_chmajor", 1, 40, 130, 5, 1);
    case_dwconv("dwconv_w40_direct", 2, 3, 70, 40, 0);
    case_dwconv("dwconv_mv_160x196_b64", 64, 160, 196, 3, 0);
    case_dwconv("dwconv_mv_320x49_b256", 256, 320, 49, 3, 0);
    case_dwconv("dwconv_mv_tokmajor_both", 3, 97, 65, 3, 2);
    /* fewer 64-position tiles than SMs: 16-position tiles (batch 1) */
    case_dwconv("dwconv_mv_160x196_b1_short", 1, 160, 196, 3, 0);
    case_dwconv("dwconv_mv_320x49_b1_short", 1, 320, 49, 3, 0);
    case_dwconv("dwconv_short_w5_chmajor_b2", 2, 45, 37, 5, 1);
    /* two parts in one op (MambaVision's x and z halves): batch 1 (short
     * tiles), batch 64, a split inside a 32-channel tile, the direct kernel */
    case_dwconv_split("dwconv_split_mv_160_b1", 1, 160, 196, 3, 0, 0, 1);
    case_dwconv_split("dwconv_split_mv_320x49_b64", 64, 320, 49, 3, 0, 0, 1);
    case_dwconv_split("dwconv_split_c37_w4_b3", 3, 37, 50, 4, 0, 0, 1);
    case_dwconv_split("dwconv_split_w40_direct", 2, 9, 70, 40, 0, 0, 1);
    run_dwconv16_cases();
    /* the whole-row kernel (token-major in, length-contiguous out, L <= 256,
     * width <= 8, >= 2 blocks per SM on 132-SM cards; 32 channels per block,
     * 128 where L + width - 1 <= 65): a channel tail, an even width, the
     * longest L, L = 1, the longest short form, a split that falls inside
     * a tile */
    case_dwconv("dwconv_rows_c37_w4_L256_b140", 140, 37, 256, 4, 0);
    case_dwconv("dwconv_rows_c33_w8_L1_b600", 600, 33, 1, 8, 0);
    case_dwconv("dwconv_rows_c64_w3_L196_b256", 256, 64, 196, 3, 0);
    case_dwconv("dwconv_tiled_c40_w3_L257_b300", 300, 40, 257, 3, 0);
    case_dwconv_split("dwconv_split_rows_c45_w3_b300", 300, 45, 50, 3, 0, 0, 1);
    case_dwconv("dwconv_rows_short_c200_w3_L49_b140", 140, 200, 49, 3, 0);
    case_dwconv("dwconv_rows_short_c130_w5_L61_b300", 300, 130, 61, 5, 0);
    case_dwconv_split("dwconv_split_rows_mv_b256", 256, 256, 196, 3, 0, 0, 1);

    run_attention16_cases();

    /* window partition / reverse: exact */
    case_window("window_1x1", 1, 1, 1, 1, 1);
    case_window("window_pad_5x7_ws3", 2, 3, 5, 7, 3);
    case_window("window_14x14_ws7_c33", 2, 33, 14, 14, 7);
    case_window("window_17x9_ws8_c40", 1, 40, 17, 9, 8);
    case_window("window_56x56_ws8_c64", 3, 64, 56, 56, 8);
    case_window("window_mv_14x14_ws14_c320_b64", 64, 320, 14, 14, 14);
    /* position tiles of 32 spanning rows, windows and padding; ws 1 */
    case_window("window_pad_30x23_ws7_c70_b3", 3, 70, 30, 23, 7);
    case_window("window_ws1_5x6_c3", 2, 3, 5, 6, 1);
    case_window("window_mv_7x7_ws7_c640_b9", 9, 640, 7, 7, 7);

    /* affine + average pool: atol 1e-5, rtol 1e-5 */
    case_pool("pool_1x1x1", 1, 1, 1);
    case_pool("pool_2x3x49", 2, 3, 49);
    case_pool("pool_3x33x7", 3, 33, 7);
    case_pool("pool_2x5x3136", 2, 5, 3136);
    case_pool("pool_mv_256x640x49", 256, 640, 49);

    /* linear: fp32 atol 2e-6 sqrt(K) + 1e-6, rtol 1e-5; fast (TF32) atol
     * 1e-3 sqrt(K), rtol 5e-3. conv2d: atol 1e-6 sqrt(Cin k^2) + 1e-6, rtol 1e-5 */
    run_gemm_cases();
    run_attention_cases();
    /* linears with a folded LayerNorm: taken on CUDA sm_90+ (unless the
     * environment already turns it or the cluster GEMM off), declined
     * elsewhere; then declined everywhere with MVRT_CUDA_LN_FOLD=0 */
    {
        mvrt_device_info_t info;
        TU_CHECK(vt->device_info(dev, &info));
        const int pinned = getenv("MVRT_CUDA_LN_FOLD") || getenv("MVRT_CUDA_GEMM_CLUSTER") ||
                           getenv("MVRT_CUDA_FP32_GEMM") || getenv("MVRT_CUDA_GEMM");
        /* the paths' architecture: "code=sm_XX" of the features (the
         * loaded code, capped by MVRT_CUDA_ARCH_CAP), else the device's */
        const char *code = strstr(info.features, "code=sm_");
        const int code_arch = code ? atoi(code + 8) : info.arch_major * 10 + info.arch_minor;
        const int cluster = strcmp(info.backend, "cuda") == 0 && code_arch >= 90;
        check_taken("folded-LayerNorm", run_linear_ln_cases(), pinned ? -1 : cluster ? 6 : 0);
        /* the 16-bit map convs: every case where the CUTLASS conv serves
         * (conv=implicit: CUTLASS built, sm_80+ code), elsewhere only the
         * stem's (direct kernel, 3 NCHW float input channels) */
        check_taken("NHWC bf16 conv", run_nhwc16_cases(),
                    strstr(info.features, "conv=implicit") ? NHWC16_CONV_CASES : NHWC16_SMALLK_CASES);
        /* the 16-bit attention: where the math's tensor-core kernels run
         * (bf16: sm_80+ code; fp16: sm_75+, where the 64 KB a block may
         * have leaves out head_dim 64 at 256 keys, 72 KB) */
        const int cuda = strcmp(info.backend, "cuda") == 0;
        const int att16 = cuda && code_arch >= 80 ? ATT_IO16_TAKEN : 0;
        const int att16_f16 = cuda && code_arch >= 80 ? ATT_IO16_TAKEN : cuda && code_arch >= 75 ? ATT_IO16_TAKEN - 1 : 0;
        check_taken("16-bit bf16 attention", run_attention_io16_cases(), att16);
        /* the fp16 pass: every 16-bit case again in fp16 storage and math
         * (case names as in bf16; the pass is named fp16) */
        g_t16 = MVRT_STORAGE16_F16;
        if (reopen_device("fp16") != 0) return 1;
        run_layernorm16_cases();
        run_dwconv16_cases();
        run_attention16_cases();
        for (size_t i = 0; i < sizeof linear_cases / sizeof linear_cases[0]; i++) case_linear(&linear_cases[i]);
        for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) case_conv2d(&conv_cases[i]);
        run_linear_storage_cases();
        check_taken("NHWC fp16 conv", run_nhwc16_cases(),
                    strstr(info.features, "conv=implicit") ? NHWC16_CONV_CASES : NHWC16_SMALLK_CASES);
        check_taken("16-bit fp16 attention", run_attention_io16_cases(), att16_f16);
        g_t16 = MVRT_STORAGE16_BF16;
        setenv("MVRT_CUDA_LN_FOLD", "0", 1);
        if (reopen_device("lnfold0") != 0) return 1;
        check_taken("folded-LayerNorm", run_linear_ln_cases(), 0);
        unsetenv("MVRT_CUDA_LN_FOLD");
        /* the fused MLP: the same rule, its own switch */
        if (reopen_device("default") != 0) return 1;
        const int mlp_pinned = getenv("MVRT_CUDA_FUSED_MLP") != NULL;
        check_taken("fused-MLP", run_mlp_cases(), mlp_pinned ? -1 : cluster ? MLP_CASES_TAKEN : 0);
        setenv("MVRT_CUDA_FUSED_MLP", "0", 1);
        if (reopen_device("fusedmlp0") != 0) return 1;
        check_taken("fused-MLP", run_mlp_cases(), 0);
        unsetenv("MVRT_CUDA_FUSED_MLP");
    }

    /* the cluster GEMM limited to 2 slices and attention without key
     * splits, then the cluster GEMM off (small fp32 GEMMs on the split
     * CUTLASS / cuBLAS path) */
    setenv("MVRT_CUDA_GEMM_CLUSTER", "2", 1);
    setenv("MVRT_CUDA_ATTENTION_SPLIT", "0", 1);
    if (reopen_device("cluster2") != 0) return 1;
    run_gemm_cases();
    run_attention_cases(); /* without key splits */
    check_taken("folded-LayerNorm", run_linear_ln_cases(), -1);
    setenv("MVRT_CUDA_GEMM_CLUSTER", "0", 1);
    if (reopen_device("nocluster") != 0) return 1;
    run_gemm_cases();
    check_taken("folded-LayerNorm", run_linear_ln_cases(), 0);

    /* the same GEMM cases with fp32 GEMMs on cuBLAS SGEMM instead of
     * 3xTF32, and the attention cases on the fp32 SIMT kernels */
    setenv("MVRT_CUDA_FP32_GEMM", "sgemm", 1);
    setenv("MVRT_CUDA_FP32_ATTENTION", "simt", 1);
    if (reopen_device("sgemm") != 0) return 1;
    run_gemm_cases();
    run_attention_cases();

    /* the same GEMM cases on our own kernel (the HIP backend's path) */
    setenv("MVRT_CUDA_GEMM", "builtin", 1);
    setenv("MVRT_HIP_GEMM", "builtin", 1);
    if (reopen_device("builtin") != 0) return 1;
    run_gemm_cases();
    check_taken("folded-LayerNorm", run_linear_ln_cases(), 0);
    vt->device_close(dev);

    printf("%s: %d of %d checks failed (folded LayerNorm: %d cases taken, %d declined; fused MLP: %d taken, %d "
           "declined; over the passes)\n",
           fails ? "FAIL" : "PASS", fails, ran, ln_taken, ln_declined, mlp_taken, mlp_declined);
    return fails ? 1 : 0;
}
