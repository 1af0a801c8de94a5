/* Selective-scan conformance suite, written once and run per backend:
 *   scan_conformance --backend NAME [--seed S] [--verbose] [--only I]
 * Uses only the public mvrt API (through golden_scan.c) and compares forward
 * and backward with the double-precision reference (scan_reference.c) on
 * randomized problems covering the edge shapes and flags of the spec:
 * L = 1, L not a multiple of 32/64, L > 4096, N = 1 and 256, Dm = 1, 5, 17,
 * 100, groups > 1, constant B and/or C, no D/z/bias, softplus on/off,
 * softplus threshold crossings, exp underflow, batch up to 16; f32, f16 and
 * bf16 inputs; strided and misaligned tensors; last_state; bitwise
 * determinism of the backward (twice, and with 1 thread vs default).
 *
 * The reference is run on the inputs already rounded to the run dtype, so
 * the comparison measures only the backend's arithmetic and output rounding.
 * Tolerances: mvrt_gs_tolerance (spec values; see golden_scan.c).
 * Exit: 0 all pass, 1 a failure, 77 backend unavailable, 2 usage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt/mvrt.h"
#include "golden_scan.h"

/* How delta is drawn. */
enum { DELTA_NORMAL, DELTA_THRESHOLD, DELTA_LARGE, DELTA_NORMAL_NAN_U };

typedef struct conf_case {
    const char *what;
    int64_t batch, dim, seqlen, dstate, groups;
    int var_b, var_c, has_d, has_z, has_bias, softplus;
    int bc_rank;          /* 3 or 4 for variable B/C (3 only with groups 1) */
    mvrt_dtype_t dtype;
    int layout;           /* see mvrt_gs_run_options_t */
    int delta_mode;
    int thread_check;     /* also compare 1 thread vs default, bitwise */
} conf_case_t;

#define F32 MVRT_DTYPE_F32
#define F16 MVRT_DTYPE_F16
#define BF16 MVRT_DTYPE_BF16

static const conf_case_t cases[] = {
    /* what                     Bt  Dm    L    N   G vB vC D  z  b  sp r  dtype lay delta thr */
    {"L=1",                      2,  5,    1,   4, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_NORMAL, 0},
    {"Dm=1 N=1 L=7",             1,  1,    7,   1, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_NORMAL, 0},
    {"L=33 Dm=17",               2, 17,   33,  16, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_NORMAL, 1},
    {"MambaVision-like",         2,100,  100,   8, 1, 1, 1, 1, 0, 1, 1, 3, F32, 0, DELTA_NORMAL, 1},
    {"N=256 L=257",              2,  5,  257, 256, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_NORMAL, 0},
    {"L=4100 (> 4096)",          1,  3, 4100,   4, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_NORMAL, 1},
    {"L=2049 chunk edge",        2,  2, 2049,   2, 1, 1, 1, 1, 0, 1, 1, 3, F32, 0, DELTA_NORMAL, 0},
    {"groups=2 rank4",           2,  6,   65,   8, 2, 1, 1, 1, 1, 1, 1, 4, F32, 0, DELTA_NORMAL, 0},
    {"groups=4",                 3,  8,   40,   4, 4, 1, 1, 1, 0, 1, 1, 4, F32, 0, DELTA_NORMAL, 0},
    {"groups=1 rank4",           2,  5,   20,   3, 1, 1, 1, 1, 1, 1, 1, 4, F32, 0, DELTA_NORMAL, 0},
    {"constant B",               2,  5,  100,  16, 1, 0, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_NORMAL, 0},
    {"constant C",               2,  5,  100,  16, 1, 1, 0, 1, 0, 1, 1, 3, F32, 0, DELTA_NORMAL, 0},
    {"constant B and C",         3,  4,   77,   8, 1, 0, 0, 1, 1, 0, 1, 3, F32, 0, DELTA_NORMAL, 0},
    {"no D z bias, no softplus", 2,  5,   50,   8, 1, 1, 1, 0, 0, 0, 0, 3, F32, 0, DELTA_NORMAL, 0},
    {"softplus off with bias",   2,  5,   50,   8, 1, 1, 1, 1, 1, 1, 0, 3, F32, 0, DELTA_NORMAL, 0},
    {"softplus threshold",       2,  6,   64,   8, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_THRESHOLD, 0},
    {"large delta (underflow)",  2,  5,   45,   8, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_LARGE, 0},
    {"large delta, no softplus", 1,  4,   45,   8, 1, 1, 1, 1, 0, 0, 0, 3, F32, 0, DELTA_LARGE, 0},
    {"batch 16",                16, 17,   49,   8, 1, 1, 1, 1, 0, 1, 1, 3, F32, 0, DELTA_NORMAL, 1},
    {"strided",                  2,  5,  100,   8, 1, 1, 1, 1, 1, 1, 1, 3, F32, 1, DELTA_NORMAL, 0},
    {"strided groups const C",   2,  6,   37,   4, 2, 1, 0, 1, 1, 1, 1, 4, F32, 1, DELTA_NORMAL, 0},
    {"stride 2 along L",         2,  5,   70,   8, 1, 1, 1, 1, 1, 1, 1, 3, F32, 2, DELTA_NORMAL, 0},
    {"f16",                      2, 17,  100,   8, 1, 1, 1, 1, 1, 1, 1, 3, F16, 0, DELTA_NORMAL, 0},
    {"f16 L=1",                  1,  5,    1,   4, 1, 1, 1, 1, 1, 1, 1, 3, F16, 0, DELTA_NORMAL, 0},
    {"f16 const B groups",       2,  6,  130,  16, 2, 0, 1, 1, 1, 1, 1, 4, F16, 0, DELTA_NORMAL, 0},
    {"f16 strided",              2,  5,   33,   8, 1, 1, 1, 1, 1, 1, 1, 3, F16, 1, DELTA_NORMAL, 0},
    {"bf16",                     2, 17,  100,   8, 1, 1, 1, 1, 1, 1, 1, 3, BF16, 0, DELTA_NORMAL, 0},
    {"bf16 long L",              1,  3, 4100,   4, 1, 1, 1, 1, 1, 1, 1, 3, BF16, 0, DELTA_NORMAL, 0},
    {"bf16 threshold",           2,  5,   64,   8, 1, 1, 1, 1, 1, 1, 1, 3, BF16, 0, DELTA_THRESHOLD, 0},
    {"bf16 stride 2 N=256",      1,  3,   65, 256, 1, 1, 1, 1, 1, 1, 1, 3, BF16, 2, DELTA_NORMAL, 0},
    /* limits (issue #8): rows beyond a 16-bit grid dimension, L = 2^20, NaN */
    {"Bt*Dm = 66000 > 65535",    2,33000,  3,   2, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_NORMAL, 0},
    {"L = 2^20",                 1,  1,1048576, 1, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_NORMAL, 0},
    {"NaN in u propagates",      2,  5,   40,   4, 1, 1, 1, 1, 1, 1, 1, 3, F32, 0, DELTA_NORMAL_NAN_U, 0},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* splitmix64: small, good enough, identical everywhere. */
static uint64_t rng_state;
static double urand(double lo, double hi)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) / 9007199254740992.0);
}

static double *fill(int64_t n, double lo, double hi, mvrt_dtype_t round_to)
{
    double *x = malloc((size_t)n * sizeof *x);
    if (!x)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        x[i] = mvrt_gs_round(urand(lo, hi), round_to);
    return x;
}

/* Builds the inputs of a case, rounded to the dtypes they will have on the
 * device, so the reference sees exactly what the backend sees. */
static int make_inputs(const conf_case_t *k, mvrt_gs_case_t *c)
{
    memset(c, 0, sizeof *c);
    mvrt_gs_config_t *g = &c->cfg;
    g->batch = k->batch; g->dim = k->dim; g->seqlen = k->seqlen; g->dstate = k->dstate;
    g->groups = k->groups; g->variable_B = k->var_b; g->variable_C = k->var_c;
    g->has_D = k->has_d; g->has_z = k->has_z; g->has_delta_bias = k->has_bias;
    g->delta_softplus = k->softplus;
    c->b_rank = c->c_rank = k->bc_rank;
    mvrt_dtype_t io = k->dtype;
    int64_t s[4];
    for (int i = 0; i < MVRT_GS_NUM_INPUTS; i++) {
        if (!mvrt_gs_input_present(g, i))
            continue;
        int64_t n = mvrt_gs_numel(mvrt_gs_input_shape(g, i, k->bc_rank, s), s);
        double lo = -1, hi = 1;
        mvrt_dtype_t dt = io;
        switch (i) {
        case MVRT_GS_A: lo = -2.0; hi = -0.1; dt = F32; break;
        case MVRT_GS_B: dt = k->var_b ? io : F32; break;
        case MVRT_GS_C: dt = k->var_c ? io : F32; break;
        case MVRT_GS_D: dt = F32; break;
        case MVRT_GS_Z: lo = -3; hi = 3; break;
        case MVRT_GS_DELTA_BIAS:
            dt = F32;
            lo = -0.5; hi = 0.5;
            if (k->delta_mode == DELTA_THRESHOLD) { lo = -0.25; hi = 0.25; }
            break;
        case MVRT_GS_DELTA:
            if (k->delta_mode == DELTA_THRESHOLD) {
                lo = 19.0; hi = 21.0;             /* v = delta + bias straddles 20 */
            } else if (k->delta_mode == DELTA_LARGE) {
                lo = 30.0; hi = 120.0;            /* exp(δ A) underflows in f32 */
            } else if (k->softplus) {
                lo = -3.0; hi = 0.5;
            } else {
                lo = 0.6; hi = 1.0;               /* δ = delta + bias must stay > 0 */
            }
            break;
        default: break;
        }
        c->in[i] = fill(n, lo, hi, dt);
        if (!c->in[i])
            return -1;
        /* NaN at two steps of two (batch, channel) rows: the reference
         * (double) says which outputs and gradients become NaN; the backend
         * must produce NaN exactly there (mvrt_gs_compare) and finite
         * values everywhere else. */
        if (i == MVRT_GS_U && k->delta_mode == DELTA_NORMAL_NAN_U && n > k->seqlen + 7) {
            c->in[i][7] = NAN;
            c->in[i][n - k->seqlen - 3] = NAN;
        }
    }
    return 0;
}

static int64_t output_numel(const mvrt_gs_case_t *c, int i)
{
    int64_t s[4];
    return mvrt_gs_numel(mvrt_gs_output_shape(&c->cfg, i, c->b_rank, s), s);
}

int main(int argc, char **argv)
{
    const char *backend_name = NULL;
    uint64_t seed = 20240601;
    int verbose = 0, only = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
            backend_name = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = atoi(argv[++i]);
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = 1;
        else {
            fprintf(stderr, "usage: %s --backend NAME [--seed S] [--only I] [--verbose]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!backend_name) {
        fprintf(stderr, "usage: %s --backend NAME [--seed S] [--only I] [--verbose]\n", argv[0]);
        return 2;
    }
    mvrt_backend_t *be = NULL;
    mvrt_status_t st = mvrt_backend_open(backend_name, &be);
    if (st == MVRT_ERR_UNAVAILABLE) {
        printf("backend '%s' unavailable (skipped): %s\n", backend_name, mvrt_last_error());
        return 77;
    }
    if (st != MVRT_OK) {
        fprintf(stderr, "cannot open backend '%s': %s\n", backend_name, mvrt_last_error());
        return 1;
    }
    printf("scan conformance on backend %s, seed %llu\n", mvrt_backend_name(be),
           (unsigned long long)seed);

    int failed = 0, ran = 0;
    for (int ci = 0; ci < NCASES; ci++) {
        if (only >= 0 && ci != only)
            continue;
        const conf_case_t *k = &cases[ci];
        rng_state = seed * 1000003ull + (uint64_t)ci; /* each case reproducible alone */
        mvrt_gs_case_t c;
        double *ref[MVRT_GS_NUM_OUTPUTS] = {0}, *got[MVRT_GS_NUM_OUTPUTS] = {0};
        double *got1[MVRT_GS_NUM_OUTPUTS] = {0};
        char err[1024] = "";
        int ok = 1;
        ran++;
        /* Inputs are already rounded to their device dtypes: the reference
         * sees exactly the values the backend sees. */
        if (make_inputs(k, &c) != 0 || mvrt_gs_reference(&c, k->dtype, ref, err, sizeof err)) {
            fprintf(stderr, "case %d: building the reference failed: %s\n", ci, err);
            return 1;
        }
        mvrt_gs_run_options_t opt = {k->dtype, k->layout, 1, 1, 1, 0};
        if (mvrt_gs_run(be, &c, &opt, got, err, sizeof err) != 0) {
            printf("case %2d %-26s ERROR: %s\n", ci, k->what, err);
            ok = 0;
        }
        char detail[512] = "";
        double worst = 0;
        const char *worst_name = "-";
        for (int i = 0; ok && i < MVRT_GS_NUM_OUTPUTS; i++) {
            if (!ref[i])
                continue;
            if (!got[i]) {
                snprintf(detail, sizeof detail, "%s not computed", mvrt_gs_output_names[i]);
                ok = 0;
                break;
            }
            mvrt_gs_err_t e;
            mvrt_gs_tol_t tol = mvrt_gs_tolerance(i, k->dtype, &c.cfg);
            mvrt_gs_compare(got[i], ref[i], output_numel(&c, i), tol, &e);
            if (verbose)
                printf("    %-12s max abs %.3e  max rel %.3e  %.4f of tol\n",
                       mvrt_gs_output_names[i], e.max_abs, e.max_rel, e.worst_ratio);
            if (e.worst_ratio >= worst) {
                worst = e.worst_ratio;
                worst_name = mvrt_gs_output_names[i];
            }
            if (!mvrt_gs_err_ok(&e)) {
                snprintf(detail, sizeof detail,
                         "%s: %.2f x tolerance at [%lld] ref %.7g got %.7g (max abs %.3e)",
                         mvrt_gs_output_names[i], e.worst_ratio, (long long)e.worst_index,
                         ref[i][e.worst_index], got[i][e.worst_index], e.max_abs);
                ok = 0;
            }
        }
        /* Same results, bit for bit, with one thread as with the default. */
        if (ok && k->thread_check) {
            mvrt_gs_run_options_t o1 = opt;
            o1.num_threads = 1;
            o1.determinism = 0;
            if (mvrt_gs_run(be, &c, &o1, got1, err, sizeof err) != 0) {
                snprintf(detail, sizeof detail, "1-thread run: %s", err);
                ok = 0;
            }
            for (int i = 0; ok && i < MVRT_GS_NUM_OUTPUTS; i++) {
                if (!got[i])
                    continue;
                if (memcmp(got[i], got1[i], (size_t)output_numel(&c, i) * sizeof(double))) {
                    snprintf(detail, sizeof detail,
                             "%s differs between 1 thread and the default thread count",
                             mvrt_gs_output_names[i]);
                    ok = 0;
                }
            }
            mvrt_backend_set_num_threads(be, 0);
        }
        char cfgtxt[160];
        mvrt_gs_config_text(&c.cfg, cfgtxt, sizeof cfgtxt);
        printf("case %2d %-26s %s %s%s worst %s %.3f of tol  %s%s%s\n", ci, k->what, cfgtxt,
               mvrt_dtype_name(k->dtype), k->layout ? " strided" : "", worst_name, worst,
               ok ? "PASS" : "FAIL", detail[0] ? ": " : "", detail);
        failed += !ok;
        mvrt_gs_free_results(got);
        mvrt_gs_free_results(got1);
        mvrt_gs_free_results(ref);
        mvrt_gs_case_free(&c);
    }
    mvrt_backend_close(be);
    printf("%d passed, %d failed\n", ran - failed, failed);
    return failed ? 1 : 0;
}
