/* mvrt bench scan: times the selective scan (forward and backward) through
 * the public API only, so that the same code measures every backend, on the
 * shapes of shared/ANCHORS.md, and prints ratios in the same run:
 *   CPU: to the plain scalar loop (bench/scan_plain_loop.c) and to 1 thread;
 *   GPU: to the device's copy bandwidth and to the ANCHORS.md H100 figures.
 * Timing uses mvrt events (host timestamps on the CPU backend). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mvrt/mvrt.h"
#include "ops/common/cpu_half.h"
#include "bench.h"

typedef struct scan_row {
    const char *name;
    int64_t batch, dim, len, dstate;
    int with_z;
    int64_t cpu_batch, cpu_len;     /* CPU substitutes (full rows take minutes) */
    int64_t quick_batch, quick_len; /* --quick (CI smoke) */
    /* ANCHORS.md, "Selective scan: the public mamba_ssm CUDA kernel (fp32)":
     * one H100 80GB HBM3, median of CUDA events, ms at the full batch. */
    double h100_fwd_ms, h100_bwd_ms;
    /* the row's name in shared/anchors/scan_mamba.py's JSON (its rows, and
     * the EXTRA_ROWS string of docs/performance.md), without the dtype */
    const char *anchor_key;
} scan_row_t;

static const scan_row_t scan_rows[] = {
    {"MambaVision-T stage 3", 256, 160, 196, 8, 0, 8, 196, 1, 196, 0.194, 0.619, "T s3"},
    {"MambaVision-T stage 4", 256, 320, 49, 8, 0, 8, 49, 1, 49, 0.219, 0.623, "T s4"},
    {"MambaVision-B stage 3", 256, 256, 196, 8, 0, 8, 196, 1, 196, 0.293, 0.930, "B s3"},
    {"MambaVision-B stage 4", 256, 512, 49, 8, 0, 8, 49, 1, 49, 0.336, 0.958, "B s4"},
    {"MambaVision-L stage 3", 64, 392, 196, 8, 0, 8, 196, 1, 196, 0.129, 0.408, "L s3"},
    {"MambaVision-T stage 3, b1", 1, 160, 196, 8, 0, 1, 196, 1, 196, 0.034, 0.090, "T s3 b1"},
    {"Mamba LM layer, z", 8, 1536, 2048, 16, 1, 1, 2048, 1, 256, 0.903, 2.133, "LM z"},
    {"16x64x256x64, z", 16, 64, 256, 64, 1, 16, 256, 2, 256, 0.060, 0.166, "16x64x256x64 z"},
    /* issue #32's further rows (d_state 128 / 256, L 4096 / 8192 at batch
     * 1 and 8): no ANCHORS.md baseline ("-"); shared/anchors/scan_mamba.py
     * times them with EXTRA_ROWS (docs/performance.md gives the string) */
    {"16x64x256x128, z", 16, 64, 256, 128, 1, 16, 256, 2, 256, 0, 0, "16x64x256x128 z"},
    {"16x64x256x256, z", 16, 64, 256, 256, 1, 16, 256, 2, 256, 0, 0, "16x64x256x256 z"},
    {"Mamba LM L4096 b1, z", 1, 1536, 4096, 16, 1, 1, 4096, 1, 256, 0, 0, "LM L4096 b1 z"},
    {"Mamba LM L8192 b1, z", 1, 1536, 8192, 16, 1, 1, 8192, 1, 256, 0, 0, "LM L8192 b1 z"},
    {"Mamba LM L4096 b8, z", 8, 1536, 4096, 16, 1, 1, 4096, 1, 256, 0, 0, "LM L4096 b8 z"},
    {"Mamba LM L8192 b8, z", 8, 1536, 8192, 16, 1, 1, 8192, 1, 256, 0, 0, "LM L8192 b8 z"},
};

#define BENCH_CHECK(call)                                                             \
    do {                                                                              \
        mvrt_status_t st_ = (call);                                                   \
        if (st_ != MVRT_OK) {                                                         \
            fprintf(stderr, "mvrt bench scan: %s failed: %s\n  %s\n", #call,          \
                    mvrt_status_string(st_), mvrt_last_error());                      \
            goto fail;                                                                \
        }                                                                             \
    } while (0)

/* The stream every bench call uses (created per run in mvrt_bench_scan). */
static mvrt_stream_t *bench_stream;

static uint64_t bench_rng = 0x243f6a8885a308d3ull;
static float frand(float lo, float hi)
{
    bench_rng = bench_rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((double)(bench_rng >> 40) / 16777216.0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One device tensor made from host f32 values, converted to dtype. */
static mvrt_status_t upload(mvrt_backend_t *be, mvrt_dtype_t dt, int rank, const int64_t *shape,
                            const float *host, mvrt_buffer_t **out_buf, mvrt_tensor_t *out_t)
{
    int64_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= shape[k];
    size_t es = mvrt_dtype_size(dt);
    mvrt_status_t st = mvrt_buffer_alloc(be, (size_t)n * es, out_buf);
    if (st != MVRT_OK)
        return st;
    *out_t = mvrt_tensor_make(*out_buf, 0, dt, rank, shape);
    if (!host)
        return MVRT_OK;
    void *stage = malloc((size_t)n * es);
    if (!stage)
        return MVRT_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < n; i++) {
        if (dt == MVRT_DTYPE_F32)
            ((float *)stage)[i] = host[i];
        else if (dt == MVRT_DTYPE_F16)
            ((uint16_t *)stage)[i] = mvrt_f32_to_f16(host[i]);
        else
            ((uint16_t *)stage)[i] = mvrt_f32_to_bf16(host[i]);
    }
    st = mvrt_copy_host_to_device(bench_stream, *out_buf, 0, stage, (size_t)n * es);
    if (st == MVRT_OK)
        st = mvrt_stream_synchronize(bench_stream);
    free(stage);
    return st;
}

/* Sum of a device tensor's elements (as a checksum). */
static double checksum(const mvrt_tensor_t *t)
{
    int64_t n = mvrt_tensor_numel(t);
    size_t es = mvrt_dtype_size(t->dtype);
    void *h = malloc((size_t)n * es);
    double s = 0.0;
    if (h && mvrt_copy_device_to_host(bench_stream, h, t->buffer, t->offset, (size_t)n * es) == MVRT_OK &&
        mvrt_stream_synchronize(bench_stream) == MVRT_OK) {
        for (int64_t i = 0; i < n; i++) {
            if (t->dtype == MVRT_DTYPE_F32)
                s += ((float *)h)[i];
            else if (t->dtype == MVRT_DTYPE_F16)
                s += mvrt_f16_to_f32(((uint16_t *)h)[i]);
            else
                s += mvrt_bf16_to_f32(((uint16_t *)h)[i]);
        }
    } else {
        s = NAN;
    }
    free(h);
    return s;
}

typedef struct scan_ctx {
    mvrt_selective_scan_args_t args;
    mvrt_selective_scan_outputs_t outs;
    mvrt_selective_scan_grads_t grads;
    mvrt_buffer_t *ws;
    mvrt_event_t *e0, *e1;
} scan_ctx_t;

static mvrt_status_t run_once(scan_ctx_t *c, int bwd, double *ms)
{
    mvrt_status_t st = mvrt_event_record(c->e0, bench_stream);
    if (st == MVRT_OK)
        st = bwd ? mvrt_selective_scan_bwd(bench_stream, &c->args, &c->grads, c->ws)
                 : mvrt_selective_scan_fwd(bench_stream, &c->args, &c->outs);
    if (st == MVRT_OK)
        st = mvrt_event_record(c->e1, bench_stream);
    if (st == MVRT_OK)
        st = mvrt_event_synchronize(c->e1);
    float f = 0.0f;
    if (st == MVRT_OK)
        st = mvrt_event_elapsed_ms(c->e0, c->e1, &f);
    *ms = f;
    return st;
}

/* Median over repeats chosen to fill ~budget seconds (3..max_reps runs). */
static mvrt_status_t time_op(scan_ctx_t *c, int bwd, double budget, int max_reps, double *out_ms)
{
    double t[64], first;
    mvrt_status_t st = run_once(c, bwd, &first); /* warm-up */
    if (st != MVRT_OK)
        return st;
    st = run_once(c, bwd, &first);
    if (st != MVRT_OK)
        return st;
    int reps = first > 0.0 ? (int)(budget * 1e3 / first) : max_reps;
    reps = reps < 3 ? 3 : reps > max_reps ? max_reps : reps;
    for (int r = 0; r < reps; r++)
        if ((st = run_once(c, bwd, &t[r])) != MVRT_OK)
            return st;
    *out_ms = median(t, reps);
    return MVRT_OK;
}

static double plain_loop_ms(int64_t Bt, int64_t Dm, int64_t L, int64_t N, const float *u,
                            const float *delta, const float *A, const float *B, const float *C,
                            const float *D, const float *bias, double budget)
{
    float *out = malloc((size_t)(Bt * Dm * L) * sizeof *out);
    double t[5];
    int reps = 0;
    double start = now_s();
    do {
        double t0 = now_s();
        mvrt_bench_plain_scan_fwd(Bt, Dm, L, N, u, delta, A, B, C, D, bias, out);
        t[reps++] = (now_s() - t0) * 1e3;
    } while (reps < 5 && (reps < 3 || now_s() - start < budget));
    volatile float sink = out[0];
    (void)sink;
    free(out);
    return median(t, reps);
}

/* Device copy bandwidth (bytes read + written per second), median of 5. */
static double copy_bandwidth_gbs(mvrt_backend_t *be, size_t bytes, scan_ctx_t *c)
{
    mvrt_buffer_t *a = NULL, *b = NULL;
    double gbs = 0.0, t[5];
    if (mvrt_buffer_alloc(be, bytes, &a) != MVRT_OK || mvrt_buffer_alloc(be, bytes, &b) != MVRT_OK)
        goto done;
    unsigned char z = 1;
    if (mvrt_buffer_fill(bench_stream, a, 0, bytes, &z, 1) != MVRT_OK ||
        mvrt_copy_device_to_device(bench_stream, b, 0, a, 0, bytes) != MVRT_OK)
        goto done;
    for (int r = 0; r < 5; r++) {
        float ms = 0.0f;
        if (mvrt_event_record(c->e0, bench_stream) != MVRT_OK ||
            mvrt_copy_device_to_device(bench_stream, b, 0, a, 0, bytes) != MVRT_OK ||
            mvrt_event_record(c->e1, bench_stream) != MVRT_OK || mvrt_event_synchronize(c->e1) != MVRT_OK ||
            mvrt_event_elapsed_ms(c->e0, c->e1, &ms) != MVRT_OK)
            goto done;
        t[r] = ms;
    }
    gbs = 2.0 * (double)bytes / (median(t, 5) * 1e-3) / 1e9;
done:
    mvrt_buffer_free(a);
    mvrt_buffer_free(b);
    return gbs;
}

typedef struct bench_cfg {
    mvrt_backend_t *be;
    mvrt_dtype_t dt;
    int quick, is_cpu;
    double budget;
    int max_reps;
    double copy_gbs;
    const int *threads;
    int nthreads;
    const char *anchor_json; /* --anchor: mamba_ssm's times of the same call, or NULL */
} bench_cfg_t;

/* mamba_ssm's dtype names in scan_mamba.py's keys */
static const char *anchor_dtype(mvrt_dtype_t dt)
{
    return dt == MVRT_DTYPE_BF16 ? "bfloat16" : dt == MVRT_DTYPE_F16 ? "float16" : "float32";
}

/* Under a row's line: mamba_ssm's times for the row and dtype from the
 * anchor file, and the speed-up over them (their ms / ours: > 1 is mvrt
 * faster). Only where this run timed the row's full shape (the CPU's
 * substitute and --quick shapes are other problems) and the file has it. */
static void anchor_print(const bench_cfg_t *cfg, const scan_row_t *row, int64_t Bt, int64_t L, double fms, double bms)
{
    if (!cfg->anchor_json || Bt != row->batch || L != row->len)
        return;
    char key[96];
    snprintf(key, sizeof key, "%s %s", row->anchor_key, anchor_dtype(cfg->dt));
    const double f = mvrt_bench_anchor_field(cfg->anchor_json, key, "fwd_ms");
    const double b = mvrt_bench_anchor_field(cfg->anchor_json, key, "bwd_ms");
    if (f <= 0.0 && b <= 0.0)
        return;
    printf("    mamba_ssm (%s): fwd %.4f ms, bwd %.4f ms; speed-up:", key, f, b);
    if (f > 0.0)
        printf(" fwd %.2fx", f / fms);
    if (b > 0.0)
        printf("%s bwd %.2fx", f > 0.0 ? "," : "", b / bms);
    printf("\n");
}

/* Builds one ANCHORS row on the device, times it for every thread count and
 * prints its lines. Returns 0, or 1 after printing the error. */
static int bench_row(const bench_cfg_t *cfg, scan_ctx_t *cp, const scan_row_t *row)
{
    mvrt_backend_t *be = cfg->be;
    const mvrt_dtype_t dt = cfg->dt;
    const int quick = cfg->quick, is_cpu = cfg->is_cpu, nthreads = cfg->nthreads;
    const int *threads = cfg->threads;
    const double budget = cfg->budget, copy_gbs = cfg->copy_gbs;
    const int max_reps = cfg->max_reps;
    scan_ctx_t c = *cp;
    int rc = 1;
    const int64_t Bt = quick ? row->quick_batch : is_cpu ? row->cpu_batch : row->batch;
    const int64_t L = quick ? row->quick_len : is_cpu ? row->cpu_len : row->len;
    const int64_t Dm = row->dim, N = row->dstate;
    const int hz = row->with_z;
    const int64_t nx = Bt * Dm * L, nbc = Bt * N * L;
    float *hu = malloc((size_t)nx * 4), *hd = malloc((size_t)nx * 4), *hz_ = malloc((size_t)nx * 4);
    float *hg = malloc((size_t)nx * 4), *hB = malloc((size_t)nbc * 4), *hC = malloc((size_t)nbc * 4);
    float *hA = malloc((size_t)(Dm * N) * 4), *hD = malloc((size_t)Dm * 4), *hb = malloc((size_t)Dm * 4);
    mvrt_buffer_t *bufs[20] = {0};
    int nb = 0;
    if (!hu || !hd || !hz_ || !hg || !hB || !hC || !hA || !hD || !hb) {
        fprintf(stderr, "mvrt bench scan: out of host memory\n");
        goto fail;
    }
    for (int64_t i = 0; i < nx; i++) {
        hu[i] = frand(-1, 1);
        hd[i] = frand(-3, 0);
        hz_[i] = frand(-2, 2);
        hg[i] = frand(-1, 1);
    }
    for (int64_t i = 0; i < nbc; i++) {
        hB[i] = frand(-1, 1);
        hC[i] = frand(-1, 1);
    }
    for (int64_t d = 0; d < Dm; d++) {
        for (int64_t n = 0; n < N; n++)
            hA[d * N + n] = -(float)(n + 1) * frand(0.5f, 1.5f); /* S4D-real-like */
        hD[d] = frand(-1, 1);
        hb[d] = frand(-1, 0);
    }
    {
        const int64_t sx[3] = {Bt, Dm, L}, sbc[3] = {Bt, N, L}, sa[2] = {Dm, N}, sd[1] = {Dm};
        mvrt_selective_scan_args_t *a = &c.args;
        mvrt_selective_scan_outputs_t *o = &c.outs;
        mvrt_selective_scan_grads_t *g = &c.grads;
        memset(a, 0, sizeof *a);
        memset(o, 0, sizeof *o);
        memset(g, 0, sizeof *g);
#define UP(dtype, rank, shape, host, t) BENCH_CHECK(upload(be, dtype, rank, shape, host, &bufs[nb++], t))
        UP(dt, 3, sx, hu, &a->u);
        UP(dt, 3, sx, hd, &a->delta);
        UP(MVRT_DTYPE_F32, 2, sa, hA, &a->A);
        UP(dt, 3, sbc, hB, &a->B);
        UP(dt, 3, sbc, hC, &a->C);
        UP(MVRT_DTYPE_F32, 1, sd, hD, &a->D);
        UP(MVRT_DTYPE_F32, 1, sd, hb, &a->delta_bias);
        if (hz)
            UP(dt, 3, sx, hz_, &a->z);
        a->delta_softplus = 1;
        UP(dt, 3, sx, NULL, &o->out);
        UP(dt, 3, sx, hg, &g->dout);
        UP(dt, 3, sx, NULL, &g->du);
        UP(dt, 3, sx, NULL, &g->ddelta);
        UP(MVRT_DTYPE_F32, 2, sa, NULL, &g->dA);
        UP(dt, 3, sbc, NULL, &g->dB);
        UP(dt, 3, sbc, NULL, &g->dC);
        UP(MVRT_DTYPE_F32, 1, sd, NULL, &g->dD);
        UP(MVRT_DTYPE_F32, 1, sd, NULL, &g->ddelta_bias);
        if (hz)
            UP(dt, 3, sx, NULL, &g->dz);
#undef UP
    }
    {
        size_t es = mvrt_dtype_size(dt);
        double x = (double)(nx * (int64_t)es), bc = (double)(nbc * (int64_t)es);
        /* ANCHORS.md: fwd reads u, delta, B, C (+z), writes out;
         * bwd reads u, delta, B, C, dout (+z, out), writes du, ddelta, dB, dC (+dz). */
        double fwd_bytes = 3 * x + 2 * bc + (hz ? x : 0);
        double bwd_bytes = 5 * x + 4 * bc + (hz ? 3 * x : 0);
        double updates = (double)Bt * (double)Dm * (double)L * (double)N;
        char shape[64];
        snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)Bt, (long long)Dm,
                 (long long)L, (long long)N);
        double plain_ms = 0.0;
        if (is_cpu)
            plain_ms = plain_loop_ms(Bt, Dm, L, N, hu, hd, hA, hB, hC, hD, hb, budget);
        double f1 = 0.0, b1 = 0.0;
        for (int ti = 0; ti < nthreads; ti++) {
            if (is_cpu)
                BENCH_CHECK(mvrt_backend_set_num_threads(be, threads[ti]));
            size_t wsb = 0;
            BENCH_CHECK(mvrt_selective_scan_bwd_workspace_size(be, &c.args, &wsb));
            mvrt_buffer_free(c.ws);
            c.ws = NULL;
            BENCH_CHECK(mvrt_buffer_alloc(be, wsb > 0 ? wsb : 1, &c.ws));
            double fms = 0.0, bms = 0.0;
            BENCH_CHECK(time_op(&c, 0, budget, max_reps, &fms));
            BENCH_CHECK(time_op(&c, 1, budget, max_reps, &bms));
            double cs_out = checksum(&c.outs.out), cs_du = checksum(&c.grads.du);
            double fr = updates / (fms * 1e-3) / 1e9, br = updates / (bms * 1e-3) / 1e9;
            double fgb = fwd_bytes / (fms * 1e-3) / 1e9, bgb = bwd_bytes / (bms * 1e-3) / 1e9;
            if (ti == 0)
                f1 = fr, b1 = br;
            if (is_cpu) {
                printf("%-26s %-20s %3d | %8.3f %7.3f %7.3f %7.2f %6.2f %6.2f | %8.3f %7.3f %7.2f %6.2f | %7.2f %.6g, %.6g\n",
                       row->name, shape, threads[ti], fms, fr, fr / threads[ti], fgb,
                       plain_ms / fms, fr / f1, bms, br, bgb, br / b1, bms / fms, cs_out, cs_du);
            } else {
                /* the ratio to the anchor's fp32 time, "-" where it has none */
                char xf[16] = "     -", xb[16] = "     -";
                if (Bt == row->batch && L == row->len && row->h100_fwd_ms > 0) {
                    snprintf(xf, sizeof xf, "%6.2f", row->h100_fwd_ms / fms);
                    snprintf(xb, sizeof xb, "%6.2f", row->h100_bwd_ms / bms);
                }
                printf("%-26s %-20s | %8.4f %7.2f %7.1f %6.1f %s | %8.4f %7.2f %7.1f %6.1f %s | %.6g, %.6g\n",
                       row->name, shape, fms, fr, fgb, copy_gbs > 0 ? 100.0 * fgb / copy_gbs : 0.0, xf, bms, br,
                       bgb, copy_gbs > 0 ? 100.0 * bgb / copy_gbs : 0.0, xb, cs_out, cs_du);
            }
            anchor_print(cfg, row, Bt, L, fms, bms);
            fflush(stdout);
        }
        if (is_cpu)
            printf("%-26s %-20s %3s | %8.3f %7.3f %7.3f %7s %6s %6s |  (plain scalar loop)\n", "",
                   "", "1", plain_ms, updates / (plain_ms * 1e-3) / 1e9,
                   updates / (plain_ms * 1e-3) / 1e9, "", "1.00", "");
    }
    rc = 0;
fail:
    mvrt_buffer_free(c.ws);
    c.ws = NULL;
    for (int i = 0; i < nb; i++)
        mvrt_buffer_free(bufs[i]);
    free(hu); free(hd); free(hz_); free(hg); free(hB); free(hC); free(hA); free(hD); free(hb);
    return rc;
}

static int parse_threads(const char *s, int maxt, int *out, int cap)
{
    int n = 0;
    const char *p = s;
    while (*p && n < cap) {
        int v;
        if (!strncmp(p, "max", 3)) {
            v = maxt;
            p += 3;
        } else {
            char *end;
            long l = strtol(p, &end, 10);
            if (end == p || l < 1 || l > 4096)
                return -1;
            v = (int)l;
            p = end;
        }
        out[n++] = v;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return n;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: mvrt bench scan [--backend NAME] [--threads LIST] [--quick] [--dtype f32|f16|bf16]\n"
            "                       [--only TEXT] [--anchor JSON]\n"
            "  --backend NAME   cpu, cuda, cuda:N, hip, hip:N or auto (default auto)\n"
            "  --threads LIST   CPU thread counts, e.g. 1,2 or 1,max (default 1,max)\n"
            "  --quick          small shapes, few repeats (CI smoke run)\n"
            "  --dtype T        input dtype of u, delta, B, C, z (default f32)\n"
            "  --only TEXT      only the rows whose name contains TEXT\n"
            "  --anchor JSON    mamba_ssm's times of the same call (shared/anchors/scan_mamba.py's\n"
            "                   scan_mamba.json): each full-shape row prints the speed-up over them\n");
}

int mvrt_bench_scan(int argc, char **argv)
{
    const char *backend_name = "auto", *threads_arg = NULL, *only = NULL, *anchor_path = NULL;
    int quick = 0;
    mvrt_dtype_t dt = MVRT_DTYPE_F32;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            backend_name = argv[++i];
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads_arg = argv[++i];
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--anchor") && i + 1 < argc) {
            anchor_path = argv[++i];
        } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            const char *d = argv[++i];
            if (!strcmp(d, "f32"))
                dt = MVRT_DTYPE_F32;
            else if (!strcmp(d, "f16"))
                dt = MVRT_DTYPE_F16;
            else if (!strcmp(d, "bf16"))
                dt = MVRT_DTYPE_BF16;
            else {
                fprintf(stderr, "mvrt bench scan: unknown dtype '%s'\n", d);
                return 2;
            }
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "mvrt bench scan: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    char *anchor_json = NULL;
    if (anchor_path && !(anchor_json = mvrt_bench_anchor_load(anchor_path)))
        return 2;
    mvrt_backend_t *be = NULL;
    mvrt_status_t st = mvrt_backend_open(backend_name, &be);
    if (st != MVRT_OK) {
        fprintf(stderr, "mvrt bench scan: cannot open backend '%s': %s\n  %s\n", backend_name,
                mvrt_status_string(st), mvrt_last_error());
        free(anchor_json);
        return st == MVRT_ERR_UNAVAILABLE ? 3 : 1;
    }
    mvrt_device_info_t info;
    memset(&info, 0, sizeof info);
    mvrt_backend_device_info(be, &info);
    const int is_cpu = !strcmp(mvrt_backend_name(be), "cpu");
    int maxt = info.compute_units > 0 ? info.compute_units : 1;
    int threads[16], nthreads;
    if (!is_cpu) {
        threads[0] = 0;
        nthreads = 1;
    } else {
        char def[32];
        snprintf(def, sizeof def, maxt > 1 ? "1,%d" : "1", maxt);
        nthreads = parse_threads(threads_arg ? threads_arg : def, maxt, threads, 16);
        if (nthreads <= 0) {
            fprintf(stderr, "mvrt bench scan: bad --threads list '%s'\n", threads_arg);
            free(anchor_json);
            mvrt_backend_close(be);
            return 2;
        }
    }
    const double budget = quick ? 0.05 : 0.4;
    const int max_reps = quick ? 5 : 50;

    scan_ctx_t c;
    memset(&c, 0, sizeof c);
    int rc = 1;
    BENCH_CHECK(mvrt_stream_create(be, &bench_stream));
    BENCH_CHECK(mvrt_event_create(be, &c.e0));
    BENCH_CHECK(mvrt_event_create(be, &c.e1));

    double copy_gbs = copy_bandwidth_gbs(be, quick ? (size_t)64 << 20 : (size_t)256 << 20, &c);
    printf("mvrt bench scan: backend %s, device %s [%s], dtype %s%s\n", mvrt_backend_name(be),
           info.name, info.features, mvrt_dtype_name(dt), quick ? ", quick" : "");
    printf("device copy bandwidth (mvrt_copy_device_to_device, read+write): %.1f GB/s\n", copy_gbs);
    printf("variable B/C (Bt,N,L), D, delta_bias, softplus%s; Gupd/s = 1e9 (batch,channel,step,state)"
           " updates per second;\nGB/s counted as in ANCHORS.md; median of mvrt-event timings.\n",
           "");
    if (is_cpu) {
        printf("CPU rows use a smaller batch (and --quick a shorter LM row) than ANCHORS.md.\n"
               "xplain = speed / the plain scalar loop (1 thread, expf, f32, no z) timed on the same shape\n"
               "in this run; scale = speed / speed with the first thread count.\n\n");
        printf("%-26s %-20s %3s | %8s %7s %7s %7s %6s %6s | %8s %7s %7s %6s | %7s %s\n", "case",
               "Bt x Dm x L x N", "thr", "fwd ms", "Gupd/s", "/thread", "GB/s", "xplain", "scale",
               "bwd ms", "Gupd/s", "GB/s", "scale", "bwd/fwd", "checksum(out, du)");
    } else {
        printf("%% copy = achieved GB/s / the copy bandwidth above; xH100 = ANCHORS.md H100 ms (mamba_ssm\n"
               "kernel, fp32, full batch) / this run's ms (> 1 is faster).\n\n");
        printf("%-26s %-20s | %8s %7s %7s %6s %6s | %8s %7s %7s %6s %6s | %s\n", "case",
               "Bt x Dm x L x N", "fwd ms", "Gupd/s", "GB/s", "%copy", "xH100", "bwd ms", "Gupd/s",
               "GB/s", "%copy", "xH100", "checksum(out, du)");
    }

    for (size_t ri = 0; ri < sizeof scan_rows / sizeof scan_rows[0]; ri++) {
        if (only && !strstr(scan_rows[ri].name, only))
            continue;
        bench_cfg_t cfg = {be, dt, quick, is_cpu, budget, max_reps, copy_gbs, threads, nthreads, anchor_json};
        if (bench_row(&cfg, &c, &scan_rows[ri]) != 0)
            goto fail;
    }
    rc = 0;
fail:
    mvrt_buffer_free(c.ws);
    mvrt_event_destroy(c.e0);
    mvrt_event_destroy(c.e1);
    mvrt_stream_destroy(bench_stream);
    bench_stream = NULL;
    mvrt_backend_close(be);
    free(anchor_json);
    return rc;
}
