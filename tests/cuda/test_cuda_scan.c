/* Randomized CUDA selective scan tests against the double-precision
 * reference (ops/selective_scan/scan_reference.h), at the plugin ABI:
 * edge shapes (L = 1, odd L, L > 4096, N = 1, 5, 64, 100, 130, 256, groups,
 * several channel tiles per group, constant B and/or C, every flag, strided
 * and L-strided layouts, fp16/bf16), outputs poisoned with NaN before each
 * run (every element must be written), the backward run twice and compared
 * bitwise (determinism), and NaN propagation without hangs.
 * MVRT_TEST_STREAM=legacy runs every case on CUDA's legacy default stream
 * (a wrapped NULL stream) instead of the backend's own: the kernels queued
 * as programmatic dependent launches must work there too.
 * Exit 77 when no CUDA device is usable.
 * usage: test_cuda_scan PLUGIN_PATH [case-name-filter] */
#include "cuda_test_util.h"
#include "scan_reference.h"

typedef struct tcase {
    const char *name;
    int64_t Bt, Dm, L, N, G;
    int bvar, cvar, hasD, hasZ, hasBias, softplus, dt, layout;
} tcase_t;

static const mvrt_plugin_vtable_t *vt;
static void *dev;
static void *stream;

/* A host+device copy of one operand. */
typedef struct operand {
    int rank;
    int64_t shape[4], stride[4];
    int dt;
    int64_t extent; /* elements spanned */
    void *host;
    void *devp;
} operand_t;

static void op_init(operand_t *o, int rank, const int64_t *shape, const int64_t *stride, int dt)
{
    memset(o, 0, sizeof *o);
    o->rank = rank;
    o->dt = dt;
    o->extent = 1;
    for (int i = 0; i < rank; i++) {
        o->shape[i] = shape[i];
        o->stride[i] = stride[i];
        o->extent += (shape[i] - 1) * stride[i];
    }
    size_t bytes = (size_t)o->extent * tu_dtype_size(dt);
    o->host = malloc(bytes);
    if (!o->host) { fprintf(stderr, "FAIL: host OOM\n"); exit(1); }
    memset(o->host, 0x7f, bytes); /* padding: NaN-ish garbage that must not be read as data */
    TU_CHECK(vt->mem_alloc(dev, bytes, &o->devp));
}
static void op_free(operand_t *o)
{
    if (o->devp) vt->mem_free(dev, o->devp);
    free(o->host);
    memset(o, 0, sizeof *o);
}
static int64_t op_off(const operand_t *o, int64_t lin)
{
    int64_t off = 0;
    for (int i = o->rank - 1; i >= 0; i--) {
        off += (lin % o->shape[i]) * o->stride[i];
        lin /= o->shape[i];
    }
    return off;
}
static int64_t op_numel(const operand_t *o)
{
    int64_t n = 1;
    for (int i = 0; i < o->rank; i++) n *= o->shape[i];
    return n;
}
/* Stores contiguous doubles (rounding them in place to what was stored) and uploads. */
static void op_upload(operand_t *o, double *vals)
{
    int64_t n = op_numel(o);
    for (int64_t i = 0; i < n; i++) vals[i] = tu_store(o->host, o->dt, op_off(o, i), vals[i]);
    TU_CHECK(vt->copy_h2d(dev, stream, o->devp, o->host, (size_t)o->extent * tu_dtype_size(o->dt)));
    TU_CHECK(vt->stream_synchronize(dev, stream));
}
static void op_poison(operand_t *o)
{
    size_t bytes = (size_t)o->extent * tu_dtype_size(o->dt);
    if (o->dt == MVRT_SCAN_F32) {
        uint32_t nan = 0x7fc00000u;
        TU_CHECK(vt->fill(dev, stream, o->devp, bytes, &nan, 4));
    } else {
        uint16_t nan = o->dt == MVRT_SCAN_F16 ? 0x7e00u : 0x7fc0u;
        TU_CHECK(vt->fill(dev, stream, o->devp, bytes, &nan, 2));
    }
}
static void op_download(operand_t *o)
{
    TU_CHECK(vt->copy_d2h(dev, stream, o->host, o->devp, (size_t)o->extent * tu_dtype_size(o->dt)));
    TU_CHECK(vt->stream_synchronize(dev, stream));
}
static mvrt_scan_operand_t op_desc(const operand_t *o)
{
    mvrt_scan_operand_t d;
    memset(&d, 0, sizeof d);
    d.data = o->devp;
    for (int i = 0; i < o->rank; i++) d.stride[i] = o->stride[i];
    return d;
}

/* max over elements of |got - ref| / (atol * max|ref| + rtol * |ref|); NaN -> inf */
static double compare(const char *what, const operand_t *o, const double *ref, double rtol, double atol)
{
    int64_t n = op_numel(o);
    double scale = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(ref[i]));
    if (scale == 0) scale = 1;
    double worst = 0;
    int64_t wi = 0;
    for (int64_t i = 0; i < n; i++) {
        double got = tu_load(o->host, o->dt, op_off(o, i));
        double tol = atol * scale + rtol * fabs(ref[i]);
        double r = isfinite(got) ? fabs(got - ref[i]) / tol : INFINITY;
        if (!(r <= worst)) { worst = r; wi = i; }
    }
    if (worst > 1.0)
        printf("    %-12s worst element %lld: got %.8g ref %.8g (ratio %.3g, scale %.3g)\n", what, (long long)wi,
               tu_load(o->host, o->dt, op_off(o, wi)), ref[wi], worst, scale);
    return worst;
}

static void shape3_strides(int layout, int64_t Bt, int64_t Dm, int64_t L, int64_t *st)
{
    if (layout == 1) { st[2] = 1; st[1] = L + 3; st[0] = Dm * (L + 3) + 5; }
    else if (layout == 2) { st[0] = Dm; st[1] = 1; st[2] = Bt * Dm; }
    else { st[2] = 1; st[1] = L; st[0] = Dm * L; }
}

static int run_case(const tcase_t *c)
{
    const int64_t Bt = c->Bt, Dm = c->Dm, L = c->L, N = c->N, G = c->G;
    const int dt = c->dt;
    const int64_t nx = Bt * Dm * L;
    const int64_t nbv = Bt * G * N * L, nbc = Dm * N;
    double *u = malloc(sizeof(double) * nx), *delta = malloc(sizeof(double) * nx), *z = malloc(sizeof(double) * nx);
    double *dout = malloc(sizeof(double) * nx);
    double *A = malloc(sizeof(double) * Dm * N), *D = malloc(sizeof(double) * Dm), *bias = malloc(sizeof(double) * Dm);
    int64_t nB = c->bvar ? nbv : nbc, nC = c->cvar ? nbv : nbc;
    double *B = malloc(sizeof(double) * nB), *C = malloc(sizeof(double) * nC);
    for (int64_t i = 0; i < nx; i++) {
        u[i] = tu_normal();
        delta[i] = c->softplus ? tu_uniform(-2.0, 1.0) : tu_uniform(0.01, 0.5);
        z[i] = tu_normal();
        dout[i] = tu_normal();
    }
    for (int64_t i = 0; i < Dm * N; i++) A[i] = -tu_uniform(0.1, 3.0);
    /* without softplus a negative delta + bias would make exp(delta A) > 1 and
     * the state explode over long L: keep delta + bias positive then */
    for (int64_t i = 0; i < Dm; i++) { D[i] = tu_normal(); bias[i] = c->softplus ? tu_uniform(-1.0, 0.5) : tu_uniform(0.0, 0.3); }
    for (int64_t i = 0; i < nB; i++) B[i] = tu_normal();
    for (int64_t i = 0; i < nC; i++) C[i] = tu_normal();

    /* device operands */
    int64_t s3[4], sh3[4] = {Bt, Dm, L, 0};
    shape3_strides(c->layout, Bt, Dm, L, s3);
    int64_t shv[4] = {Bt, G, N, L}, sv[4];
    if (c->layout == 2) { sv[3] = Bt * G * N; sv[0] = G * N; sv[1] = N; sv[2] = 1; }
    else if (c->layout == 1) { sv[3] = 1; sv[2] = L + 1; sv[1] = N * (L + 1); sv[0] = G * N * (L + 1) + 2; }
    else { sv[3] = 1; sv[2] = L; sv[1] = N * L; sv[0] = G * N * L; }
    int64_t shc[2] = {Dm, N}, sc[2];
    if (c->layout == 1) { sc[0] = 1; sc[1] = Dm; } else { sc[0] = N; sc[1] = 1; }
    int64_t sh1[1] = {Dm}, s1[1] = {c->layout == 1 ? 2 : 1};
    int64_t shs[3] = {Bt, Dm, N}, ss[3] = {c->layout == 1 ? Dm * N + 3 : Dm * N, N, 1};

    operand_t ou, odl, oz, oA, oB, oC, oD, obias, oout, olast, odout, odu, oddl, odA, odB, odC, odD, odz, odbias;
    op_init(&ou, 3, sh3, s3, dt);
    op_init(&odl, 3, sh3, s3, dt);
    op_init(&oA, 2, shc, sc, MVRT_SCAN_F32);
    if (c->bvar) op_init(&oB, 4, shv, sv, dt); else op_init(&oB, 2, shc, sc, MVRT_SCAN_F32);
    if (c->cvar) op_init(&oC, 4, shv, sv, dt); else op_init(&oC, 2, shc, sc, MVRT_SCAN_F32);
    op_init(&oout, 3, sh3, s3, dt);
    op_init(&olast, 3, shs, ss, MVRT_SCAN_F32);
    op_init(&odout, 3, sh3, s3, dt);
    op_init(&odu, 3, sh3, s3, dt);
    op_init(&oddl, 3, sh3, s3, dt);
    op_init(&odA, 2, shc, sc, MVRT_SCAN_F32);
    if (c->bvar) op_init(&odB, 4, shv, sv, dt); else op_init(&odB, 2, shc, sc, MVRT_SCAN_F32);
    if (c->cvar) op_init(&odC, 4, shv, sv, dt); else op_init(&odC, 2, shc, sc, MVRT_SCAN_F32);
    memset(&oz, 0, sizeof oz); memset(&oD, 0, sizeof oD); memset(&obias, 0, sizeof obias);
    memset(&odz, 0, sizeof odz); memset(&odD, 0, sizeof odD); memset(&odbias, 0, sizeof odbias);
    if (c->hasZ) { op_init(&oz, 3, sh3, s3, dt); op_init(&odz, 3, sh3, s3, dt); }
    if (c->hasD) { op_init(&oD, 1, sh1, s1, MVRT_SCAN_F32); op_init(&odD, 1, sh1, s1, MVRT_SCAN_F32); }
    if (c->hasBias) { op_init(&obias, 1, sh1, s1, MVRT_SCAN_F32); op_init(&odbias, 1, sh1, s1, MVRT_SCAN_F32); }

    op_upload(&ou, u);
    op_upload(&odl, delta);
    op_upload(&oA, A);
    op_upload(&oB, B);
    op_upload(&oC, C);
    op_upload(&odout, dout);
    if (c->hasZ) op_upload(&oz, z);
    if (c->hasD) op_upload(&oD, D);
    if (c->hasBias) op_upload(&obias, bias);

    /* reference on the rounded inputs */
    mvrt_scan_ref_problem_t rp;
    memset(&rp, 0, sizeof rp);
    rp.batch = Bt; rp.dim = Dm; rp.seqlen = L; rp.dstate = N; rp.groups = G;
    rp.b_variable = c->bvar; rp.c_variable = c->cvar; rp.delta_softplus = c->softplus;
    rp.u = u; rp.delta = delta; rp.A = A; rp.B = B; rp.C = C;
    rp.D = c->hasD ? D : NULL; rp.z = c->hasZ ? z : NULL; rp.delta_bias = c->hasBias ? bias : NULL;
    double *rout = malloc(sizeof(double) * nx), *rlast = malloc(sizeof(double) * Bt * Dm * N);
    double *rdu = malloc(sizeof(double) * nx), *rddl = malloc(sizeof(double) * nx), *rdz = malloc(sizeof(double) * nx);
    double *rdA = malloc(sizeof(double) * Dm * N), *rdB = malloc(sizeof(double) * nB), *rdC = malloc(sizeof(double) * nC);
    double *rdD = malloc(sizeof(double) * Dm), *rdbias = malloc(sizeof(double) * Dm);
    if (mvrt_scan_ref_forward(&rp, rout, rlast) != 0) { fprintf(stderr, "FAIL: reference forward\n"); exit(1); }
    mvrt_scan_ref_grads_t rg = {rdu, rddl, rdA, rdB, rdC, rdD, rdz, rdbias};
    if (mvrt_scan_ref_backward(&rp, dout, &rg) != 0) { fprintf(stderr, "FAIL: reference backward\n"); exit(1); }

    mvrt_scan_params_t p;
    memset(&p, 0, sizeof p);
    p.batch = Bt; p.dim = Dm; p.seqlen = L; p.dstate = N; p.groups = G;
    p.input_dtype = dt; p.b_variable = c->bvar; p.c_variable = c->cvar; p.delta_softplus = c->softplus;
    p.u = op_desc(&ou); p.delta = op_desc(&odl); p.A = op_desc(&oA); p.B = op_desc(&oB); p.C = op_desc(&oC);
    if (c->hasD) p.D = op_desc(&oD);
    if (c->hasZ) p.z = op_desc(&oz);
    if (c->hasBias) p.delta_bias = op_desc(&obias);
    p.out = op_desc(&oout);
    p.last_state = op_desc(&olast);

    /* tolerances (relative to the element and to the tensor's max |ref|) */
    double rtol, atol;
    if (dt == MVRT_SCAN_F32) { rtol = 2e-4; atol = 2e-5; }
    else if (dt == MVRT_SCAN_F16) { rtol = 2e-3; atol = 1e-3; }
    else { rtol = 1.6e-2; atol = 8e-3; }
    const double grad_loose = 5.0; /* ddelta, dA, dB/dC: long sums with cancellation */

    op_poison(&oout);
    op_poison(&olast);
    TU_CHECK(vt->scan_fwd(dev, stream, &p));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    op_download(&oout);
    op_download(&olast);
    double worst = 0, r;
    r = compare("out", &oout, rout, rtol, atol); worst = fmax(worst, r);
    r = compare("last_state", &olast, rlast, 2e-4, 2e-5); worst = fmax(worst, r);
    double wf = worst;

    /* backward */
    p.dout = op_desc(&odout);
    p.du = op_desc(&odu); p.ddelta = op_desc(&oddl); p.dA = op_desc(&odA); p.dB = op_desc(&odB); p.dC = op_desc(&odC);
    if (c->hasD) p.dD = op_desc(&odD);
    if (c->hasZ) p.dz = op_desc(&odz);
    if (c->hasBias) p.ddelta_bias = op_desc(&odbias);
    size_t wsb = 0;
    TU_CHECK(vt->scan_bwd_workspace_size(dev, &p, &wsb));
    void *ws = NULL;
    if (wsb) TU_CHECK(vt->mem_alloc(dev, wsb, &ws));
    p.workspace = ws;
    p.workspace_bytes = wsb;
    operand_t *gout[] = {&odu, &oddl, &odA, &odB, &odC, &odD, &odz, &odbias};
    const char *gname[] = {"du", "ddelta", "dA", "dB", "dC", "dD", "dz", "ddelta_bias"};
    double *gref[] = {rdu, rddl, rdA, rdB, rdC, rdD, rdz, rdbias};
    double gl[] = {1, grad_loose, grad_loose, grad_loose, grad_loose, 1, 1, grad_loose};
    void *first[8] = {0};
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < 8; i++) if (gout[i]->devp) op_poison(gout[i]);
        TU_CHECK(vt->scan_bwd(dev, stream, &p));
        TU_CHECK(vt->stream_synchronize(dev, stream));
        for (int i = 0; i < 8; i++) {
            if (!gout[i]->devp) continue;
            op_download(gout[i]);
            size_t bytes = (size_t)gout[i]->extent * tu_dtype_size(gout[i]->dt);
            if (rep == 0) {
                /* f32 gradients (dA, dD, constant dB/dC, ddelta_bias) are summed in f32 */
                double rt = (gout[i]->dt == MVRT_SCAN_F32 ? (dt == MVRT_SCAN_F32 ? rtol : 2e-4) : rtol) * gl[i];
                double at = (gout[i]->dt == MVRT_SCAN_F32 ? (dt == MVRT_SCAN_F32 ? atol : 2e-5) : atol) * gl[i];
                r = compare(gname[i], gout[i], gref[i], rt, at);
                worst = fmax(worst, r);
                first[i] = malloc(bytes);
                memcpy(first[i], gout[i]->host, bytes);
            } else {
                /* compare only the elements of the tensor (padding is untouched) */
                int64_t n = op_numel(gout[i]);
                size_t es = tu_dtype_size(gout[i]->dt);
                for (int64_t k = 0; k < n; k++) {
                    int64_t off = op_off(gout[i], k);
                    if (memcmp((char *)first[i] + off * es, (char *)gout[i]->host + off * es, es) != 0) {
                        printf("    %s: backward not deterministic at element %lld\n", gname[i], (long long)k);
                        worst = INFINITY;
                        break;
                    }
                }
                free(first[i]);
            }
        }
    }
    int ok = worst <= 1.0;
    printf("%s %-22s %s Bt=%lld Dm=%lld L=%lld N=%lld G=%lld B%c C%c%s%s%s%s layout=%d  fwd %.3g  all %.3g\n",
           ok ? "ok  " : "FAIL", c->name, tu_dtype_name(dt), (long long)Bt, (long long)Dm, (long long)L, (long long)N,
           (long long)G, c->bvar ? 'v' : 'c', c->cvar ? 'v' : 'c', c->hasD ? " D" : "", c->hasZ ? " z" : "",
           c->hasBias ? " bias" : "", c->softplus ? " softplus" : "", c->layout, wf, worst);

    if (ws) vt->mem_free(dev, ws);
    operand_t *all[] = {&ou, &odl, &oz, &oA, &oB, &oC, &oD, &obias, &oout, &olast, &odout, &odu, &oddl, &odA,
                        &odB, &odC, &odD, &odz, &odbias};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) if (all[i]->host) op_free(all[i]);
    free(u); free(delta); free(z); free(dout); free(A); free(D); free(bias); free(B); free(C);
    free(rout); free(rlast); free(rdu); free(rddl); free(rdz); free(rdA); free(rdB); free(rdC); free(rdD); free(rdbias);
    return ok;
}

/* NaN in delta at (b=0, d=1, t=5): out of that row is NaN from t=5 on,
 * every other row stays finite, and the call returns (no hang). */
static int nan_case(void)
{
    const int64_t Bt = 2, Dm = 6, L = 40, N = 8;
    int64_t sh3[3] = {Bt, Dm, L}, s3[3] = {Dm * L, L, 1}, shc[2] = {Dm, N}, sc[2] = {N, 1};
    int64_t shv[4] = {Bt, 1, N, L}, sv[4] = {N * L, N * L, L, 1};
    operand_t ou, odl, oA, oB, oC, oout;
    op_init(&ou, 3, sh3, s3, MVRT_SCAN_F32);
    op_init(&odl, 3, sh3, s3, MVRT_SCAN_F32);
    op_init(&oA, 2, shc, sc, MVRT_SCAN_F32);
    op_init(&oB, 4, shv, sv, MVRT_SCAN_F32);
    op_init(&oC, 4, shv, sv, MVRT_SCAN_F32);
    op_init(&oout, 3, sh3, s3, MVRT_SCAN_F32);
    double *x = malloc(sizeof(double) * Bt * (Dm > N ? Dm : N) * L);
    for (int64_t i = 0; i < Bt * Dm * L; i++) x[i] = tu_normal();
    op_upload(&ou, x);
    for (int64_t i = 0; i < Bt * Dm * L; i++) x[i] = tu_uniform(0.01, 0.5);
    x[1 * L + 5] = NAN;
    op_upload(&odl, x);
    for (int64_t i = 0; i < Dm * N; i++) x[i] = -tu_uniform(0.1, 2);
    op_upload(&oA, x);
    for (int64_t i = 0; i < Bt * N * L; i++) x[i] = tu_normal();
    op_upload(&oB, x);
    op_upload(&oC, x);
    mvrt_scan_params_t p;
    memset(&p, 0, sizeof p);
    p.batch = Bt; p.dim = Dm; p.seqlen = L; p.dstate = N; p.groups = 1;
    p.input_dtype = MVRT_SCAN_F32; p.b_variable = 1; p.c_variable = 1;
    p.u = op_desc(&ou); p.delta = op_desc(&odl); p.A = op_desc(&oA); p.B = op_desc(&oB); p.C = op_desc(&oC);
    p.out = op_desc(&oout);
    TU_CHECK(vt->scan_fwd(dev, stream, &p));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    op_download(&oout);
    int ok = 1;
    for (int64_t b = 0; b < Bt; b++)
        for (int64_t d = 0; d < Dm; d++)
            for (int64_t t = 0; t < L; t++) {
                float v = ((float *)oout.host)[(b * Dm + d) * L + t];
                int expect_nan = b == 0 && d == 1 && t >= 5;
                if (expect_nan != !!isnan(v)) ok = 0;
            }
    printf("%s nan_propagation\n", ok ? "ok  " : "FAIL");
    free(x);
    op_free(&ou); op_free(&odl); op_free(&oA); op_free(&oB); op_free(&oC); op_free(&oout);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s PLUGIN [filter]\n", argv[0]); return 2; }
    vt = tu_open_plugin(argv[1], &dev);
    stream = vt->default_stream(dev);
    const char *on_stream = getenv("MVRT_TEST_STREAM");
    const int legacy = on_stream && strcmp(on_stream, "legacy") == 0;
    if (legacy) {
        TU_CHECK(vt->stream_wrap(dev, NULL, &stream));
        printf("on the legacy default stream\n");
    }
    const char *filter = argc > 2 ? argv[2] : NULL;
    enum { F = MVRT_SCAN_F32, H = MVRT_SCAN_F16, BF = MVRT_SCAN_BF16 };
    static const tcase_t cases[] = {
        /* name              Bt   Dm    L    N   G bv cv  D  z bias sp dt layout */
        {"mambavision_like",  3, 160, 196,   8, 1, 1, 1, 1, 0, 1, 1, F, 0},
        {"L1",                2,   5,   1,   4, 1, 1, 1, 1, 1, 1, 1, F, 0},
        {"odd_L_padded",      2,  37,  49,   8, 1, 1, 1, 1, 0, 1, 1, F, 1},
        {"long_L",            1,   3, 4100, 16, 1, 1, 1, 1, 1, 1, 0, F, 0},
        {"N1_Lstrided",       2,   7,  33,   1, 1, 1, 1, 1, 1, 0, 1, F, 2},
        {"N256",              1,   4,  20, 256, 1, 1, 1, 1, 0, 1, 1, F, 0},
        {"groups",            2,  12,  50,   8, 3, 1, 1, 1, 1, 1, 1, F, 1},
        {"groups_tiles",      2, 300,  37,   8, 2, 1, 1, 1, 0, 1, 1, F, 0},
        {"const_B",           2,  20,  45,   8, 1, 0, 1, 1, 1, 1, 1, F, 0},
        {"const_C",           2,  20,  45,   8, 1, 1, 0, 1, 0, 0, 0, F, 2},
        {"const_BC",          3,   9,  70,  16, 1, 0, 0, 0, 1, 1, 1, F, 1},
        {"N5",                2,  13,  31,   5, 1, 1, 1, 1, 1, 1, 1, F, 0},
        {"N100_groups",       1,   6,  40, 100, 2, 1, 1, 1, 0, 1, 1, F, 0},
        {"N130",              1,   3,  17, 130, 1, 1, 1, 1, 1, 1, 1, F, 1},
        {"N64",               2,  33,  65,  64, 1, 1, 1, 1, 0, 1, 1, F, 1},
        {"no_flags",          2,  10,  25,   8, 1, 1, 1, 0, 0, 0, 0, F, 0},
        {"big_dim",           1, 1100,  9,  16, 1, 1, 1, 1, 0, 1, 1, F, 0},
        {"lm_like",           1,  24, 2048, 16, 1, 1, 1, 1, 1, 1, 1, F, 0},
        {"f16_mv",            2,  64, 196,   8, 1, 1, 1, 1, 0, 1, 1, H, 0},
        {"bf16_mv_Lstrided",  2,  64,  49,   8, 1, 1, 1, 1, 0, 1, 1, BF, 2},
        {"f16_z_long",        1,   8, 1000, 16, 1, 1, 1, 1, 1, 1, 1, H, 0},
        {"bf16_groups_constC",2,  24,  77,   8, 4, 1, 0, 1, 1, 1, 1, BF, 1},
        {"f16_N1_L1",         3,   3,   1,   1, 1, 1, 1, 1, 1, 1, 1, H, 0},
        {"bf16_constB_tiles", 2, 200,  30,   8, 1, 0, 1, 1, 1, 1, 1, BF, 0},
        /* variable B/C with unit L-strides: the staged forward's modes
         * (whole rows, segments, chunks), 16-bit pieces, odd strides */
        {"bf16_mv",           2,  64, 196,   8, 1, 1, 1, 1, 0, 1, 1, BF, 0},
        {"bf16_z_L49",        3,  96,  49,   8, 1, 1, 1, 1, 1, 1, 1, BF, 0},
        {"bf16_odd_padded",   2,  40,  37,   4, 1, 1, 1, 1, 1, 1, 1, BF, 1},
        {"f16_N16_groups",    2,  48,  64,  16, 2, 1, 1, 1, 0, 1, 1, H, 0},
        {"z_N2_L100",         2,  96, 100,   2, 1, 1, 1, 0, 1, 1, 1, F, 0},
        /* many states and long rows: the chunked warp-scan forward (256-step
         * chunks of 8 steps per lane; VEC where rows are 8-element aligned
         * with unit L-strides: L 512 and 600, fp32 and bf16) */
        {"N48_L512_vec",      2,  24, 512,  48, 1, 1, 1, 1, 0, 1, 1, F, 0},
        {"bf16_N64_z_L600",   2,  40, 600,  64, 1, 1, 1, 1, 1, 1, 1, BF, 0},
        {"f16_N128_grp_cC",   2,  16, 300, 128, 2, 1, 0, 1, 1, 0, 1, H, 0},
        {"N24_L257_padded",   1,  20, 257,  24, 1, 1, 1, 0, 1, 1, 1, F, 1},
        {"N32_L520_strided",  2,   9, 520,  32, 1, 0, 1, 1, 0, 1, 0, F, 2},
        {"many_rows_L196",   30, 160, 196,   8, 1, 1, 1, 1, 0, 1, 1, F, 0},
        {"many_rows_L49",    16, 320,  49,   8, 1, 1, 1, 1, 0, 1, 1, F, 0},
        {"bf16_many_rows",   28, 160, 196,   8, 1, 1, 1, 1, 0, 1, 1, BF, 0},
        {"many_rows_L20_N16",20, 256,  20,  16, 2, 1, 1, 1, 0, 1, 1, F, 0},
        {"f16_many_L49_z",   18, 256,  49,   4, 1, 1, 1, 1, 1, 1, 1, H, 0},
        /* batches past 8 per part of the batch reduction (8 loads in
         * flight, then a tail), constant B reduced over the batch too */
        {"big_batch",        70,  12,  20,   8, 1, 1, 1, 1, 0, 1, 1, F, 0},
        {"big_batch_constB", 67,  10,  12,   4, 1, 0, 1, 1, 1, 1, 1, F, 1},
    };
    int fails = 0, ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (filter && !strstr(cases[i].name, filter)) continue;
        ran++;
        if (!run_case(&cases[i])) fails++;
    }
    if (!filter || strstr("nan_propagation", filter)) { ran++; if (!nan_case()) fails++; }
    if (legacy) vt->stream_destroy(dev, stream);
    vt->device_close(dev);
    printf("%d of %d cases failed\n", fails, ran);
    return fails ? 1 : (ran ? 0 : 1);
}
