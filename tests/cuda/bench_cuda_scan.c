/* Standalone CUDA scan benchmark at the plugin ABI (until `mvrt bench scan
 * --backend cuda` covers it): for every ANCHORS.md row, forward and backward
 * time (CUDA events, median of many runs after warm-up), GB/s with the bytes
 * ANCHORS.md counts, % of the device-to-device copy bandwidth measured in the
 * same run, and the speed-up over the mamba_ssm reference time. Not a test.
 * usage: bench_cuda_scan PLUGIN_PATH [f32|f16|bf16|all|c64] [reps]
 * (c64: every row with a complex A, f32 inputs: variable B / C of 2L
 * steps; its "x ref" is "-": pass mamba_ssm's complex times beside it,
 * bench/anchors/scan_mamba_complex.py) */
#include "cuda_test_util.h"

static const mvrt_plugin_vtable_t *vt;
static void *dev, *stream;

typedef struct row {
    const char *name;
    int64_t Bt, Dm, L, N;
    int z;
    double ref_fwd_ms, ref_bwd_ms;
} row_t;

static const row_t rows[] = {
    {"MV-T s3 b256", 256, 160, 196, 8, 0, 0.194, 0.619},
    {"MV-T s4 b256", 256, 320, 49, 8, 0, 0.219, 0.623},
    {"MV-B s3 b256", 256, 256, 196, 8, 0, 0.293, 0.930},
    {"MV-B s4 b256", 256, 512, 49, 8, 0, 0.336, 0.958},
    {"MV-L s3 b64", 64, 392, 196, 8, 0, 0.129, 0.408},
    {"MV-T s3 b1", 1, 160, 196, 8, 0, 0.034, 0.090},
    {"LM 8x1536x2048x16 z", 8, 1536, 2048, 16, 1, 0.903, 2.133},
    {"16x64x256x64 z", 16, 64, 256, 64, 1, 0.060, 0.166},
    /* issue #32's few-long-rows case (mamba_ssm fp32 fwd, session 46's call) */
    {"LM 1x1536x4096x16 z", 1, 1536, 4096, 16, 1, 0.249, 0},
};

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static void *dalloc(size_t bytes)
{
    void *p;
    TU_CHECK(vt->mem_alloc(dev, bytes, &p));
    return p;
}
static void *drandom(size_t count, int dt, double lo, double hi)
{
    size_t es = tu_dtype_size(dt);
    void *h = malloc(count * es);
    for (size_t i = 0; i < count; i++) tu_store(h, dt, (int64_t)i, tu_uniform(lo, hi));
    void *d = dalloc(count * es);
    TU_CHECK(vt->copy_h2d(dev, stream, d, h, count * es));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    free(h);
    return d;
}

typedef mvrt_status_t (*run_fn)(void *, void *, const mvrt_scan_params_t *);

static float time_median(run_fn fn, const mvrt_scan_params_t *ps, int nsets, int reps)
{
    void *e0, *e1;
    TU_CHECK(vt->event_create(dev, &e0));
    TU_CHECK(vt->event_create(dev, &e1));
    for (int i = 0; i < 5; i++) TU_CHECK(fn(dev, stream, &ps[i % nsets]));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    float *t = malloc(sizeof(float) * reps);
    for (int i = 0; i < reps; i++) {
        TU_CHECK(vt->event_record(dev, e0, stream));
        TU_CHECK(fn(dev, stream, &ps[i % nsets]));
        TU_CHECK(vt->event_record(dev, e1, stream));
        TU_CHECK(vt->event_synchronize(dev, e1));
        TU_CHECK(vt->event_elapsed_ms(dev, e0, e1, &t[i]));
    }
    qsort(t, reps, sizeof(float), cmp_float);
    float m = t[reps / 2];
    free(t);
    vt->event_destroy(dev, e0);
    vt->event_destroy(dev, e1);
    return m;
}

static mvrt_status_t copy_run(void *d, void *s, const mvrt_scan_params_t *p)
{
    /* (abuses the params struct to carry dst/src/bytes) */
    return vt->copy_d2d(d, s, p->out.data, p->u.data, p->workspace_bytes);
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s PLUGIN [f32|f16|bf16|all] [reps]\n", argv[0]); return 2; }
    vt = tu_open_plugin(argv[1], &dev);
    stream = vt->default_stream(dev);
    const char *which = argc > 2 ? argv[2] : "f32";
    const int cx = strcmp(which, "c64") == 0; /* complex A */
    int reps = argc > 3 ? atoi(argv[3]) : 50;
    mvrt_device_info_t info;
    TU_CHECK(vt->device_info(dev, &info));

    /* copy roofline: 1 GiB device-to-device, bytes read + written */
    const size_t cb = (size_t)1 << 30;
    mvrt_scan_params_t cp;
    memset(&cp, 0, sizeof cp);
    cp.u.data = dalloc(cb);
    cp.out.data = dalloc(cb);
    cp.workspace_bytes = cb;
    uint32_t pat = 0x3f800000u;
    TU_CHECK(vt->fill(dev, stream, cp.u.data, cb, &pat, 4));
    float cms = time_median(copy_run, &cp, 1, 20);
    double copy_gbs = 2.0 * cb / (cms * 1e-3) / 1e9;
    vt->mem_free(dev, cp.u.data);
    vt->mem_free(dev, cp.out.data);
    const char *tpr = getenv("MVRT_CUDA_SCAN_TPR");
    const char *path = getenv("MVRT_CUDA_SCAN_PATH");
    const char *rmax = getenv("MVRT_CUDA_SCAN_ROWS");
    printf("device %s (%s), copy roofline %.0f GB/s, TPR override %s, path %s, rows/block %s\n", info.name,
           info.features, copy_gbs, tpr ? tpr : "auto", path ? path : "auto", rmax ? rmax : "auto");
    printf("%-22s %-5s %9s %8s %6s %7s | %9s %8s %6s %7s\n", "case", "dtype", "fwd ms", "GB/s", "%roof", "x ref",
           "bwd ms", "GB/s", "%roof", "x ref");

    const int dts[3] = {MVRT_SCAN_F32, MVRT_SCAN_F16, MVRT_SCAN_BF16};
    /* MVRT_BENCH_ROWS="0,1,5": only those rows (variant sweeps stay short) */
    const char *only = getenv("MVRT_BENCH_ROWS");
    for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
        const row_t *r = &rows[ri];
        if (only) {
            int want = 0;
            for (const char *q = only; *q;) {
                char *end;
                long v = strtol(q, &end, 10);
                if (end == q) { q++; continue; }
                if (v == (long)ri) want = 1;
                q = end;
            }
            if (!want) continue;
        }
        for (int di = 0; di < 3; di++) {
            int dt = dts[di];
            if (cx ? dt != MVRT_SCAN_F32 : strcmp(which, "all") != 0 && strcmp(which, tu_dtype_name(dt)) != 0)
                continue;
            const int64_t steps = cx ? 2 * r->L : r->L; /* of variable B / C */
            const int64_t nx = r->Bt * r->Dm * r->L, nbc = r->Bt * r->N * steps;
            const int64_t a_floats = cx ? 2 : 1; /* floats per element of A (and dA) */
            const size_t es = tu_dtype_size(dt);
            /* input sets: enough to exceed the 50 MB L2 when a set is small */
            double set_bytes = (double)nx * es * 3;
            int nsets = set_bytes > 64e6 ? 1 : 3;
            if (r->Bt == 1) nsets = 1; /* batch 1: the realistic case is L2-resident */
            mvrt_scan_params_t ps[3];
            void *allocs[3][20];
            int na[3] = {0};
            size_t wsb = 0;
            for (int s = 0; s < nsets; s++) {
                mvrt_scan_params_t *p = &ps[s];
                memset(p, 0, sizeof *p);
                p->batch = r->Bt; p->dim = r->Dm; p->seqlen = r->L; p->dstate = r->N; p->groups = 1;
                p->input_dtype = dt; p->b_variable = 1; p->c_variable = 1; p->delta_softplus = 1;
                p->complex_a = cx;
                mvrt_scan_operand_t x3 = {NULL, {r->Dm * r->L, r->L, 1, 0}};
                mvrt_scan_operand_t bc = {NULL, {r->N * steps, r->N * steps, steps, 1}};
                mvrt_scan_operand_t dn = {NULL, {r->N, 1, 0, 0}}, d1 = {NULL, {1, 0, 0, 0}};
#define ALLOC(field, tmpl, ptr) do { p->field = tmpl; p->field.data = (ptr); allocs[s][na[s]++] = p->field.data; } while (0)
                ALLOC(u, x3, drandom(nx, dt, -1, 1));
                ALLOC(delta, x3, drandom(nx, dt, -3, 0));
                ALLOC(B, bc, drandom(nbc, dt, -1, 1));
                ALLOC(C, bc, drandom(nbc, dt, -1, 1));
                ALLOC(A, dn, drandom(a_floats * r->Dm * r->N, MVRT_SCAN_F32, -2, -0.1));
                ALLOC(D, d1, drandom(r->Dm, MVRT_SCAN_F32, -1, 1));
                ALLOC(delta_bias, d1, drandom(r->Dm, MVRT_SCAN_F32, -1, 0));
                if (r->z) { ALLOC(z, x3, drandom(nx, dt, -1, 1)); ALLOC(dz, x3, dalloc(nx * es)); }
                ALLOC(out, x3, dalloc(nx * es));
                ALLOC(dout, x3, drandom(nx, dt, -1, 1));
                ALLOC(du, x3, dalloc(nx * es));
                ALLOC(ddelta, x3, dalloc(nx * es));
                ALLOC(dB, bc, dalloc(nbc * es));
                ALLOC(dC, bc, dalloc(nbc * es));
                ALLOC(dA, dn, dalloc(a_floats * r->Dm * r->N * 4));
                ALLOC(dD, d1, dalloc(r->Dm * 4));
                ALLOC(ddelta_bias, d1, dalloc(r->Dm * 4));
                if (s == 0) TU_CHECK(vt->scan_bwd_workspace_size(dev, p, &wsb));
                p->workspace = wsb ? dalloc(wsb) : NULL;
                p->workspace_bytes = wsb;
                if (p->workspace) allocs[s][na[s]++] = p->workspace;
            }
            float fms = time_median(vt->scan_fwd, ps, nsets, reps);
            float bms = time_median(vt->scan_bwd, ps, nsets, reps);
            double xb = (double)nx * es, bcb = (double)nbc * es;
            double fbytes = 2 * xb + 2 * bcb + (r->z ? xb : 0) + xb;
            double bbytes = 3 * xb + 2 * bcb + (r->z ? 2 * xb : 0) + 2 * xb + 2 * bcb + (r->z ? xb : 0);
            double fg = fbytes / (fms * 1e-3) / 1e9, bg = bbytes / (bms * 1e-3) / 1e9;
            /* "x ref" is "-" for a row without a reference time (and for c64) */
            char xfwd[16] = "-", xbwd[16] = "-";
            if (r->ref_fwd_ms > 0 && !cx) snprintf(xfwd, sizeof xfwd, "%.2f", r->ref_fwd_ms / fms);
            if (r->ref_bwd_ms > 0 && !cx) snprintf(xbwd, sizeof xbwd, "%.2f", r->ref_bwd_ms / bms);
            printf("%-22s %-5s %9.4f %8.0f %6.1f %7s | %9.4f %8.0f %6.1f %7s   (ws %.1f MB)\n", r->name,
                   cx ? "c64" : tu_dtype_name(dt), fms, fg, 100 * fg / copy_gbs, xfwd, bms, bg, 100 * bg / copy_gbs, xbwd, wsb / 1e6);
            fflush(stdout);
            for (int s = 0; s < nsets; s++)
                for (int i = 0; i < na[s]; i++) vt->mem_free(dev, allocs[s][i]);
        }
    }
    vt->device_close(dev);
    return 0;
}
