/* 64-bit indexing: a bf16 scan with Bt*Dm*L = 4*4096*131075 > 2^31 elements
 * per (Bt, Dm, L) tensor, and its backward, whose saved-state buffer holds
 * more than 2^31 floats (by default on the lanes backward kernel, states
 * every 8 steps; ctest cuda_scan_64bit_general runs it on the general
 * kernels, MVRT_CUDA_SCAN_PATH=general). Inputs come from a hash of the element index, so the
 * host keeps no copy; a few sampled channels (every batch) are checked
 * against a double-precision per-row reference written here from the spec:
 * out, du, ddelta of those rows and dA, dD, ddelta_bias of those channels.
 * Needs about 40 GB of GPU memory: skips (77) with less, or without a GPU.
 * usage: test_cuda_scan_large PLUGIN_PATH */
#include "cuda_test_util.h"

#define BT 4
#define DM 4096
#define SL 131075
#define NS 8

static const mvrt_plugin_vtable_t *vt;
static void *dev, *stream;

static double hval(uint64_t tensor, uint64_t i)
{
    uint64_t z = i * 0x9e3779b97f4a7c15ull + tensor * 0xd1b54a32d192ed03ull;
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 29)) * 0x94d049bb133111ebull;
    z ^= z >> 32;
    return (double)(z >> 11) * 0x1.0p-53; /* [0, 1) */
}
/* Rounded-to-bf16 input values, as the device sees them. */
static double in_u(uint64_t i) { return tu_bf16_to_f32(tu_f32_to_bf16((float)(2.0 * hval(1, i) - 1.0))); }
static double in_delta(uint64_t i) { return tu_bf16_to_f32(tu_f32_to_bf16((float)(3.0 * hval(2, i) - 2.0))); }
static double in_dout(uint64_t i) { return tu_bf16_to_f32(tu_f32_to_bf16((float)(2.0 * hval(3, i) - 1.0))); }
static double in_B(uint64_t i) { return tu_bf16_to_f32(tu_f32_to_bf16((float)(2.0 * hval(4, i) - 1.0))); }
static double in_C(uint64_t i) { return tu_bf16_to_f32(tu_f32_to_bf16((float)(2.0 * hval(5, i) - 1.0))); }
static double in_A(uint64_t i) { return (double)(float)(-(0.1 + 2.0 * hval(6, i))); }
static double in_D(uint64_t i) { return (double)(float)(2.0 * hval(7, i) - 1.0); }
static double in_bias(uint64_t i) { return (double)(float)(hval(8, i) - 0.5); }

static void *upload_hashed(double (*f)(uint64_t), uint64_t count)
{
    void *d;
    TU_CHECK(vt->mem_alloc(dev, count * 2, &d));
    const uint64_t chunk = 1ull << 26;
    uint16_t *h = malloc(chunk * 2);
    for (uint64_t s = 0; s < count; s += chunk) {
        uint64_t m = count - s < chunk ? count - s : chunk;
        for (uint64_t i = 0; i < m; i++) h[i] = tu_f32_to_bf16((float)f(s + i));
        TU_CHECK(vt->copy_h2d(dev, stream, (char *)d + s * 2, h, m * 2));
        TU_CHECK(vt->stream_synchronize(dev, stream));
    }
    free(h);
    return d;
}
static void *upload_f32(double (*f)(uint64_t), uint64_t count)
{
    void *d;
    TU_CHECK(vt->mem_alloc(dev, count * 4, &d));
    float *h = malloc(count * 4);
    for (uint64_t i = 0; i < count; i++) h[i] = (float)f(i);
    TU_CHECK(vt->copy_h2d(dev, stream, d, h, count * 4));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    free(h);
    return d;
}

static double softplus(double v) { return v <= 20 ? log1p(exp(v)) : v; }

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s PLUGIN\n", argv[0]); return 2; }
    vt = tu_open_plugin(argv[1], &dev);
    stream = vt->default_stream(dev);
    mvrt_device_info_t info;
    TU_CHECK(vt->device_info(dev, &info));
    const uint64_t nx = (uint64_t)BT * DM * SL;
    if (info.total_memory < 44ull << 30) {
        printf("SKIP: needs ~40 GiB of GPU memory, %s has %.1f GiB\n", info.name, info.total_memory / 1073741824.0);
        return SKIP_CODE;
    }
    printf("elements per tensor: %llu (2^31 = %llu)\n", (unsigned long long)nx, 1ull << 31);

    void *u = upload_hashed(in_u, nx), *delta = upload_hashed(in_delta, nx), *dout = upload_hashed(in_dout, nx);
    void *B = upload_hashed(in_B, (uint64_t)BT * NS * SL), *C = upload_hashed(in_C, (uint64_t)BT * NS * SL);
    void *A = upload_f32(in_A, DM * NS), *D = upload_f32(in_D, DM), *bias = upload_f32(in_bias, DM);
    void *out, *du, *ddelta, *dB, *dC, *dA, *dD, *dbias;
    TU_CHECK(vt->mem_alloc(dev, nx * 2, &out));
    TU_CHECK(vt->mem_alloc(dev, nx * 2, &du));
    TU_CHECK(vt->mem_alloc(dev, nx * 2, &ddelta));
    TU_CHECK(vt->mem_alloc(dev, (size_t)BT * NS * SL * 2, &dB));
    TU_CHECK(vt->mem_alloc(dev, (size_t)BT * NS * SL * 2, &dC));
    TU_CHECK(vt->mem_alloc(dev, DM * NS * 4, &dA));
    TU_CHECK(vt->mem_alloc(dev, DM * 4, &dD));
    TU_CHECK(vt->mem_alloc(dev, DM * 4, &dbias));

    mvrt_scan_params_t p;
    memset(&p, 0, sizeof p);
    p.batch = BT; p.dim = DM; p.seqlen = SL; p.dstate = NS; p.groups = 1;
    p.input_dtype = MVRT_SCAN_BF16; p.b_variable = 1; p.c_variable = 1; p.delta_softplus = 1;
    mvrt_scan_operand_t x3 = {NULL, {(int64_t)DM * SL, SL, 1, 0}};
    mvrt_scan_operand_t bc = {NULL, {(int64_t)NS * SL, (int64_t)NS * SL, SL, 1}};
    mvrt_scan_operand_t dn = {NULL, {NS, 1, 0, 0}}, d1 = {NULL, {1, 0, 0, 0}};
    p.u = x3; p.u.data = u;
    p.delta = x3; p.delta.data = delta;
    p.out = x3; p.out.data = out;
    p.dout = x3; p.dout.data = dout;
    p.du = x3; p.du.data = du;
    p.ddelta = x3; p.ddelta.data = ddelta;
    p.B = bc; p.B.data = B;
    p.C = bc; p.C.data = C;
    p.dB = bc; p.dB.data = dB;
    p.dC = bc; p.dC.data = dC;
    p.A = dn; p.A.data = A;
    p.dA = dn; p.dA.data = dA;
    p.D = d1; p.D.data = D;
    p.dD = d1; p.dD.data = dD;
    p.delta_bias = d1; p.delta_bias.data = bias;
    p.ddelta_bias = d1; p.ddelta_bias.data = dbias;

    TU_CHECK(vt->scan_fwd(dev, stream, &p));
    size_t wsb = 0;
    TU_CHECK(vt->scan_bwd_workspace_size(dev, &p, &wsb));
    printf("backward workspace: %.2f GiB (%.3g floats)\n", wsb / 1073741824.0, wsb / 4.0);
    if (wsb / 4 <= (1ull << 31)) printf("note: workspace does not exceed 2^31 floats\n");
    void *ws;
    TU_CHECK(vt->mem_alloc(dev, wsb, &ws));
    p.workspace = ws;
    p.workspace_bytes = wsb;
    TU_CHECK(vt->scan_bwd(dev, stream, &p));
    TU_CHECK(vt->stream_synchronize(dev, stream));

    /* sampled channels: first, second, middle, last; every batch row */
    const int64_t chans[] = {0, 1, DM / 2 + 3, DM - 1};
    double *hs = malloc(sizeof(double) * SL * NS), *as = malloc(sizeof(double) * SL * NS);
    double *dl = malloc(sizeof(double) * SL), *vv = malloc(sizeof(double) * SL);
    uint16_t *row = malloc(SL * 2);
    double *rout = malloc(sizeof(double) * SL), *rdu = malloc(sizeof(double) * SL), *rdd = malloc(sizeof(double) * SL);
    double worst = 0;
    for (size_t ci = 0; ci < sizeof chans / sizeof chans[0]; ci++) {
        const int64_t d = chans[ci];
        double dA_ref[NS] = {0}, dD_ref = 0, db_ref = 0;
        for (int64_t b = 0; b < BT; b++) {
            const uint64_t rb = ((uint64_t)b * DM + d) * SL;
            double h[NS] = {0};
            for (int64_t t = 0; t < SL; t++) {
                double v = in_delta(rb + t) + in_bias(d);
                vv[t] = v;
                double dt = softplus(v);
                dl[t] = dt;
                double uu = in_u(rb + t), y = 0;
                for (int n = 0; n < NS; n++) {
                    double a = exp(dt * in_A(d * NS + n));
                    h[n] = a * h[n] + dt * in_B(((uint64_t)b * NS + n) * SL + t) * uu;
                    hs[t * NS + n] = h[n];
                    as[t * NS + n] = a;
                    y += in_C(((uint64_t)b * NS + n) * SL + t) * h[n];
                }
                rout[t] = y + in_D(d) * uu;
            }
            double lam[NS] = {0};
            for (int64_t t = SL - 1; t >= 0; t--) {
                double g = in_dout(rb + t), uu = in_u(rb + t), dt = dl[t], sdu = 0, sdd = 0;
                for (int n = 0; n < NS; n++) {
                    double Bv = in_B(((uint64_t)b * NS + n) * SL + t), Cv = in_C(((uint64_t)b * NS + n) * SL + t);
                    lam[n] = Cv * g + (t + 1 < SL ? as[(t + 1) * NS + n] * lam[n] : 0.0);
                    double hp = t > 0 ? hs[(t - 1) * NS + n] : 0.0;
                    sdu += lam[n] * Bv * dt;
                    sdd += lam[n] * (Bv * uu + in_A(d * NS + n) * as[t * NS + n] * hp);
                    dA_ref[n] += lam[n] * dt * as[t * NS + n] * hp;
                }
                rdu[t] = in_D(d) * g + sdu;
                double sig = vv[t] <= 20 ? 1.0 / (1.0 + exp(-vv[t])) : 1.0;
                rdd[t] = sdd * sig;
                dD_ref += g * uu;
                db_ref += rdd[t];
            }
            /* compare the row */
            void *srcs[3] = {out, du, ddelta};
            double *refs[3] = {rout, rdu, rdd};
            const char *names[3] = {"out", "du", "ddelta"};
            for (int k = 0; k < 3; k++) {
                TU_CHECK(vt->copy_d2h(dev, stream, row, (char *)srcs[k] + rb * 2, SL * 2));
                TU_CHECK(vt->stream_synchronize(dev, stream));
                double scale = 0, w = 0;
                for (int64_t t = 0; t < SL; t++) scale = fmax(scale, fabs(refs[k][t]));
                for (int64_t t = 0; t < SL; t++) {
                    double got = tu_bf16_to_f32(row[t]);
                    double r = fabs(got - refs[k][t]) / (1e-2 * scale + 1.6e-2 * fabs(refs[k][t]));
                    if (!isfinite(got)) r = INFINITY;
                    if (!(r <= w)) w = r;
                }
                if (w > 1) printf("  FAIL %s b=%lld d=%lld ratio %.3g\n", names[k], (long long)b, (long long)d, w);
                worst = fmax(worst, w);
            }
        }
        float gA[NS], gD, gb;
        TU_CHECK(vt->copy_d2h(dev, stream, gA, (char *)dA + d * NS * 4, NS * 4));
        TU_CHECK(vt->copy_d2h(dev, stream, &gD, (char *)dD + d * 4, 4));
        TU_CHECK(vt->copy_d2h(dev, stream, &gb, (char *)dbias + d * 4, 4));
        TU_CHECK(vt->stream_synchronize(dev, stream));
        double sA = 0;
        for (int n = 0; n < NS; n++) sA = fmax(sA, fabs(dA_ref[n]));
        for (int n = 0; n < NS; n++) {
            double r = fabs(gA[n] - dA_ref[n]) / (1e-3 * sA + 1e-3 * fabs(dA_ref[n]));
            if (!isfinite(gA[n])) r = INFINITY;
            if (r > 1) printf("  FAIL dA[%lld,%d] got %g ref %g\n", (long long)d, n, gA[n], dA_ref[n]);
            worst = fmax(worst, r);
        }
        double rD = fabs(gD - dD_ref) / (1e-3 * fabs(dD_ref) + 1e-2), rb = fabs(gb - db_ref) / (2e-3 * fabs(db_ref) + 1e-1);
        if (!isfinite(gD)) rD = INFINITY;
        if (!isfinite(gb)) rb = INFINITY;
        if (rD > 1 || rb > 1) printf("  FAIL dD %g/%g ddelta_bias %g/%g (channel %lld)\n", gD, dD_ref, gb, db_ref, (long long)d);
        worst = fmax(worst, fmax(rD, rb));
    }
    printf("%s: large bf16 scan, worst error ratio %.3g\n", worst <= 1 ? "ok" : "FAIL", worst);
    void *bufs[] = {u, delta, dout, B, C, A, D, bias, out, du, ddelta, dB, dC, dA, dD, dbias, ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) vt->mem_free(dev, bufs[i]);
    vt->device_close(dev);
    return worst <= 1 ? 0 : 1;
}
