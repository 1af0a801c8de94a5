/* Concurrency (issue #8, item 5), on the CPU backend:
 *
 *   test_concurrency backend       backend open/close, list, streams, events,
 *                                  buffers and copies from 8 threads at once,
 *                                  as the first calls of the process (the
 *                                  plugins load lazily under that race); each
 *                                  thread's last error stays its own
 *   test_concurrency scan          one backend; threads each with their own
 *                                  streams run the selective scan forward and
 *                                  backward at once on shared read-only
 *                                  inputs: every result is bitwise equal to
 *                                  the serial run (itself checked against the
 *                                  double reference with the tolerances of
 *                                  tools/golden_scan.c)
 *   test_concurrency scan-threads  as scan, while one more thread keeps
 *                                  changing the backend's thread count
 *                                  (the backward is documented deterministic
 *                                  for every thread count; a workspace is
 *                                  queried under the largest count the
 *                                  changer sets and used under all of them,
 *                                  and NULL-workspace calls size theirs
 *                                  while the count changes)
 * Options: --threads T (default 4), --iters K (default 2 passes over the cases).
 * Exit: 0 pass, 1 failure, 77 CPU backend unavailable, 2 usage.
 *
 * Run under ThreadSanitizer by .ci/hardening.sh (OpenMP off there: see
 * fuzz/README.md), and in every other build as a plain test. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "golden_scan.h"
#include "mvrt/mvrt.h"

#define SKIP 77

static int failures;

#define FAIL(...)                                                   \
    do {                                                            \
        fprintf(stderr, "FAIL: " __VA_ARGS__);                      \
        fputc('\n', stderr);                                        \
        __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);         \
    } while (0)

/* ======================================================================== */
/* backend open/close from several threads                                  */

#define BK_THREADS 8
#define BK_ROUNDS 12

static const char *const bk_names[3] = {"cpu", "cuda", "hip"};

typedef struct bk_result {
    int id;
    int available[3];  /* -1 unknown; what this thread saw for cpu, cuda, hip */
} bk_result_t;

static pthread_barrier_t bk_barrier;

static void bk_note(bk_result_t *r, const char *name, int available)
{
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, bk_names[i]) != 0)
            continue;
        if (r->available[i] >= 0 && r->available[i] != available)
            FAIL("thread %d: backend %s was %savailable, then %savailable", r->id, name,
                 r->available[i] ? "" : "un", available ? "" : "un");
        r->available[i] = available;
    }
}

/* Everything an application does with an open backend, on its own objects. */
static void bk_use(bk_result_t *r, mvrt_backend_t *be, int round)
{
    mvrt_stream_t *s = NULL;
    mvrt_buffer_t *buf = NULL;
    mvrt_event_t *e0 = NULL, *e1 = NULL;
    enum { N = 1024 };
    uint32_t host[N], back[N];
    uint32_t pattern = 0x1000u * (uint32_t)r->id + (uint32_t)round;
    for (int i = 0; i < N; i++)
        host[i] = pattern ^ (uint32_t)i;
    if (mvrt_stream_create(be, &s) != MVRT_OK || mvrt_buffer_alloc(be, sizeof host, &buf) != MVRT_OK ||
        mvrt_event_create(be, &e0) != MVRT_OK || mvrt_event_create(be, &e1) != MVRT_OK) {
        FAIL("thread %d: creating objects: %s", r->id, mvrt_last_error());
    } else if (mvrt_event_record(e0, s) != MVRT_OK ||
               mvrt_copy_host_to_device(s, buf, 0, host, sizeof host) != MVRT_OK ||
               mvrt_copy_device_to_host(s, back, buf, 0, sizeof back) != MVRT_OK ||
               mvrt_event_record(e1, s) != MVRT_OK || mvrt_stream_synchronize(s) != MVRT_OK) {
        FAIL("thread %d: copies: %s", r->id, mvrt_last_error());
    } else if (memcmp(host, back, sizeof host) != 0) {
        FAIL("thread %d: data copied through the device came back different", r->id);
    } else {
        float ms = -1.0f;
        if (mvrt_event_elapsed_ms(e0, e1, &ms) != MVRT_OK || !(ms >= 0.0f))
            FAIL("thread %d: event timing: %s", r->id, mvrt_last_error());
    }
    mvrt_event_destroy(e0);
    mvrt_event_destroy(e1);
    mvrt_buffer_free(buf);
    mvrt_stream_destroy(s);
}

static void *bk_thread(void *arg)
{
    bk_result_t *r = arg;
    pthread_barrier_wait(&bk_barrier);
    for (int round = 0; round < BK_ROUNDS; round++) {
        /* Every thread starts with a different spec, so that the first
         * loads of cpu, cuda and hip race each other. */
        int which = (r->id + round) % 5;
        char spec[32];
        if (which < 3)
            snprintf(spec, sizeof spec, "%s", bk_names[which]);
        else if (which == 3)
            snprintf(spec, sizeof spec, "auto");
        else
            snprintf(spec, sizeof spec, "nonsense-%d-%d", r->id, round);
        mvrt_backend_t *be = NULL;
        mvrt_status_t st = mvrt_backend_open(spec, &be);
        if (which == 4) {
            /* This thread's own message, not another thread's. */
            if (st != MVRT_ERR_INVALID_ARGUMENT || !strstr(mvrt_last_error(), spec))
                FAIL("thread %d: open(\"%s\") gave %s, message \"%s\"", r->id, spec,
                     mvrt_status_string(st), mvrt_last_error());
            continue;
        }
        if (st == MVRT_OK) {
            const char *name = mvrt_backend_name(be);
            if (which < 3 && strcmp(name, spec) != 0)
                FAIL("thread %d: open(\"%s\") gave a '%s' backend", r->id, spec, name);
            bk_note(r, name, 1);
            bk_use(r, be, round);
            mvrt_backend_close(be);
        } else if (st == MVRT_ERR_UNAVAILABLE && which < 3) {
            bk_note(r, spec, 0);
            if (!strstr(mvrt_last_error(), spec))
                FAIL("thread %d: unavailable '%s' message does not name it: \"%s\"", r->id,
                     spec, mvrt_last_error());
        } else {
            FAIL("thread %d: open(\"%s\") returned %s: %s", r->id, spec,
                 mvrt_status_string(st), mvrt_last_error());
        }
        mvrt_backend_entry_t entries[3];
        size_t count = 0;
        if (mvrt_backend_list(entries, 3, &count) != MVRT_OK || count != 3) {
            FAIL("thread %d: mvrt_backend_list: %s", r->id, mvrt_last_error());
        } else {
            for (int i = 0; i < 3; i++)
                bk_note(r, entries[i].name, entries[i].available);
        }
    }
    return NULL;
}

static int test_backend(void)
{
    pthread_t th[BK_THREADS];
    bk_result_t res[BK_THREADS];
    pthread_barrier_init(&bk_barrier, NULL, BK_THREADS);
    for (int i = 0; i < BK_THREADS; i++) {
        res[i].id = i;
        for (int k = 0; k < 3; k++)
            res[i].available[k] = -1;
        if (pthread_create(&th[i], NULL, bk_thread, &res[i]) != 0) {
            fprintf(stderr, "cannot create thread %d\n", i);
            return 1;
        }
    }
    for (int i = 0; i < BK_THREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bk_barrier);
    /* Every thread saw the same availability of each backend. */
    for (int k = 0; k < 3; k++)
        for (int i = 1; i < BK_THREADS; i++)
            if (res[i].available[k] != res[0].available[k])
                FAIL("backend %s: thread 0 saw available=%d, thread %d saw %d", bk_names[k],
                     res[0].available[k], i, res[i].available[k]);
    if (res[0].available[0] != 1) {
        fprintf(stderr, "SKIP: the CPU backend is unavailable\n");
        return SKIP;
    }
    fprintf(stderr, "backend: %d threads x %d rounds of open/use/close: cpu %d cuda %d hip %d "
            "(1 = available)\n", BK_THREADS, BK_ROUNDS, res[0].available[0],
            res[0].available[1], res[0].available[2]);
    return failures ? 1 : 0;
}

/* ======================================================================== */
/* selective scan from several threads                                      */

typedef struct scan_case {
    const char *what;
    int64_t batch, dim, seqlen, dstate, groups;
    int bc_rank, var_b, var_c, has_d, has_z, has_bias, softplus;
    mvrt_dtype_t dtype;
} scan_case_t;

/* Small (ThreadSanitizer runs them), but each reaches a different kernel
 * path: dtypes, groups, constant B/C, several backward chunks (N = 256). */
static const scan_case_t cases[] = {
    {"MambaVision f32", 2, 8, 49, 8, 1, 3, 1, 1, 1, 0, 1, 1, MVRT_DTYPE_F32},
    {"z bf16", 2, 6, 33, 16, 1, 3, 1, 1, 1, 1, 0, 1, MVRT_DTYPE_BF16},
    {"constant B f16", 1, 5, 70, 4, 1, 3, 0, 1, 0, 1, 1, 0, MVRT_DTYPE_F16},
    {"groups 2 f32", 2, 4, 20, 4, 2, 4, 1, 1, 1, 1, 1, 1, MVRT_DTYPE_F32},
    {"N 256 chunks", 1, 3, 130, 256, 1, 3, 1, 1, 1, 0, 1, 1, MVRT_DTYPE_F32},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct prepared {
    const scan_case_t *c;
    mvrt_gs_case_t gs;                         /* host inputs (double) */
    mvrt_buffer_t *in_buf[MVRT_GS_NUM_INPUTS]; /* shared, read-only */
    mvrt_tensor_t in[MVRT_GS_NUM_INPUTS];
    int out_rank[MVRT_GS_NUM_OUTPUTS];
    int64_t out_shape[MVRT_GS_NUM_OUTPUTS][4];
    mvrt_dtype_t out_dtype[MVRT_GS_NUM_OUTPUTS];
    size_t out_bytes[MVRT_GS_NUM_OUTPUTS];     /* 0: absent */
    unsigned char *serial[MVRT_GS_NUM_OUTPUTS];
} prepared_t;

static mvrt_backend_t *scan_be;
static prepared_t prep[NCASES];
/* scan-threads: the workspace bytes of each case under the largest thread
 * count the changer sets. A workspace queried under a smaller count is
 * rejected by mvrt_selective_scan_bwd once the count grows (the runtime
 * checks the size for the current count), so workspaces are never smaller. */
static size_t ws_floor[NCASES];

static size_t dtype_size(mvrt_dtype_t t)
{
    return t == MVRT_DTYPE_F32 ? 4 : 2;
}

/* Inputs that keep the scan well conditioned: the step delta (after bias
 * and softplus) in about 0.05..0.4 so that exp(delta A) < 1, A in
 * [-2.1, -0.1], the rest in [-1, 1]. */
static double draw(uint64_t *s, int input, int softplus)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    double u01 = (double)(*s >> 11) * (1.0 / 9007199254740992.0);
    switch (input) {
    case MVRT_GS_A: return -(0.1 + 2.0 * u01);
    case MVRT_GS_DELTA: return softplus ? -3.0 + 2.0 * u01 : 0.1 + 0.3 * u01;
    case MVRT_GS_DELTA_BIAS: return 0.1 * u01 - 0.05;
    case MVRT_GS_D: return 0.5 + u01;
    default: return 2.0 * u01 - 1.0;
    }
}

static int input_is_f32(const scan_case_t *c, int i)
{
    return i == MVRT_GS_A || i == MVRT_GS_D || i == MVRT_GS_DELTA_BIAS ||
           (i == MVRT_GS_B && !c->var_b) || (i == MVRT_GS_C && !c->var_c);
}

static int output_is_f32(const scan_case_t *c, int i)
{
    return i == MVRT_GS_LAST_STATE || i == MVRT_GS_DA || i == MVRT_GS_DD ||
           i == MVRT_GS_DDELTA_BIAS || (i == MVRT_GS_DB && !c->var_b) ||
           (i == MVRT_GS_DC && !c->var_c);
}

static void encode(double x, mvrt_dtype_t dt, unsigned char *dst)
{
    if (dt == MVRT_DTYPE_F32) {
        float f = (float)x;
        memcpy(dst, &f, 4);
    } else {
        uint16_t h = dt == MVRT_DTYPE_F16 ? mvrt_gs_f32_to_f16((float)x)
                                          : mvrt_gs_f32_to_bf16((float)x);
        memcpy(dst, &h, 2);
    }
}

static double decode(const unsigned char *src, mvrt_dtype_t dt)
{
    if (dt == MVRT_DTYPE_F32) {
        float f;
        memcpy(&f, src, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, src, 2);
    return dt == MVRT_DTYPE_F16 ? mvrt_gs_f16_to_f32(h) : mvrt_gs_bf16_to_f32(h);
}

/* One forward + backward of case p on `stream` into the caller's output
 * buffers; host copies of every output go to res[i]. ws_mode 0: NULL
 * workspace (the backend makes a temporary one), 1: a queried one. */
static mvrt_selective_scan_args_t case_args(const prepared_t *p)
{
    mvrt_selective_scan_args_t a = {
        .u = p->in[MVRT_GS_U], .delta = p->in[MVRT_GS_DELTA], .A = p->in[MVRT_GS_A],
        .B = p->in[MVRT_GS_B], .C = p->in[MVRT_GS_C], .D = p->in[MVRT_GS_D],
        .z = p->in[MVRT_GS_Z], .delta_bias = p->in[MVRT_GS_DELTA_BIAS],
        .delta_softplus = p->c->softplus};
    return a;
}

static int run_case(const prepared_t *p, mvrt_stream_t *stream, mvrt_buffer_t **out_buf,
                    int ws_mode, size_t ws_min, unsigned char **res, char *err, size_t errlen)
{
    mvrt_tensor_t t[MVRT_GS_NUM_OUTPUTS];
    memset(t, 0, sizeof t);
    for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++) {
        if (!p->out_bytes[i])
            continue;
        /* Stale results from an earlier run must not pass for new ones. */
        const uint32_t nan_bits = 0x7FC0DEADu;
        if (mvrt_buffer_fill(stream, out_buf[i], 0, p->out_bytes[i], &nan_bits,
                             dtype_size(p->out_dtype[i])) != MVRT_OK) {
            snprintf(err, errlen, "fill: %s", mvrt_last_error());
            return 1;
        }
        t[i] = mvrt_tensor_make(out_buf[i], 0, p->out_dtype[i], p->out_rank[i], p->out_shape[i]);
    }
    mvrt_selective_scan_args_t a = case_args(p);
    mvrt_selective_scan_outputs_t o = {.out = t[MVRT_GS_OUT], .last_state = t[MVRT_GS_LAST_STATE]};
    mvrt_selective_scan_grads_t g = {
        .dout = p->in[MVRT_GS_DOUT], .du = t[MVRT_GS_DU], .ddelta = t[MVRT_GS_DDELTA],
        .dA = t[MVRT_GS_DA], .dB = t[MVRT_GS_DB], .dC = t[MVRT_GS_DC], .dD = t[MVRT_GS_DD],
        .dz = t[MVRT_GS_DZ], .ddelta_bias = t[MVRT_GS_DDELTA_BIAS]};
    mvrt_buffer_t *ws = NULL;
    int rc = 1;
    size_t ws_bytes = 0;
    if (mvrt_selective_scan_fwd(stream, &a, &o) != MVRT_OK) {
        snprintf(err, errlen, "forward: %s", mvrt_last_error());
    } else if (ws_mode == 1 &&
               (mvrt_selective_scan_bwd_workspace_size(scan_be, &a, &ws_bytes) != MVRT_OK ||
                mvrt_buffer_alloc(scan_be, ws_bytes > ws_min ? ws_bytes : ws_min ? ws_min : 1,
                                  &ws) != MVRT_OK)) {
        snprintf(err, errlen, "workspace: %s", mvrt_last_error());
    } else if (mvrt_selective_scan_bwd(stream, &a, &g, ws) != MVRT_OK) {
        snprintf(err, errlen, "backward: %s", mvrt_last_error());
    } else {
        rc = 0;
        for (int i = 0; i < MVRT_GS_NUM_OUTPUTS && rc == 0; i++) {
            if (p->out_bytes[i] &&
                mvrt_copy_device_to_host(stream, res[i], out_buf[i], 0, p->out_bytes[i]) != MVRT_OK) {
                snprintf(err, errlen, "copy: %s", mvrt_last_error());
                rc = 1;
            }
        }
        if (rc == 0 && mvrt_stream_synchronize(stream) != MVRT_OK) {
            snprintf(err, errlen, "synchronize: %s", mvrt_last_error());
            rc = 1;
        }
    }
    mvrt_buffer_free(ws);
    return rc;
}

static int alloc_outputs(const prepared_t *p, mvrt_buffer_t **buf, unsigned char **host)
{
    for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++) {
        buf[i] = NULL;
        host[i] = NULL;
        if (!p->out_bytes[i])
            continue;
        host[i] = malloc(p->out_bytes[i]);
        if (!host[i] || mvrt_buffer_alloc(scan_be, p->out_bytes[i], &buf[i]) != MVRT_OK)
            return 1;
    }
    return 0;
}

static void free_outputs(mvrt_buffer_t **buf, unsigned char **host)
{
    for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++) {
        mvrt_buffer_free(buf[i]);
        free(host[i]);
    }
}

/* Inputs, uploads, the serial run and its check against the reference. */
static int prepare(int k)
{
    prepared_t *p = &prep[k];
    const scan_case_t *c = &cases[k];
    p->c = c;
    mvrt_gs_case_t *gs = &p->gs;
    memset(gs, 0, sizeof *gs);
    gs->cfg = (mvrt_gs_config_t){c->batch, c->dim, c->seqlen, c->dstate, c->groups,
                                 c->var_b, c->var_c, c->has_d, c->has_z, c->has_bias,
                                 c->softplus, 0};
    gs->b_rank = gs->c_rank = c->bc_rank;
    uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)(k + 1);
    for (int i = 0; i < MVRT_GS_NUM_INPUTS; i++) {
        if (!mvrt_gs_input_present(&gs->cfg, i))
            continue;
        int64_t shape[4];
        int rank = mvrt_gs_input_shape(&gs->cfg, i, c->bc_rank, shape);
        int64_t n = mvrt_gs_numel(rank, shape);
        mvrt_dtype_t dt = input_is_f32(c, i) ? MVRT_DTYPE_F32 : c->dtype;
        gs->in[i] = malloc((size_t)n * sizeof(double));
        unsigned char *bytes = malloc((size_t)n * dtype_size(dt));
        if (!gs->in[i] || !bytes)
            return 1;
        for (int64_t e = 0; e < n; e++) {
            gs->in[i][e] = draw(&seed, i, c->softplus);
            encode(gs->in[i][e], dt, bytes + (size_t)e * dtype_size(dt));
        }
        size_t nb = (size_t)n * dtype_size(dt);
        mvrt_status_t st = mvrt_buffer_alloc(scan_be, nb, &p->in_buf[i]);
        if (st == MVRT_OK)
            st = mvrt_copy_host_to_device(NULL, p->in_buf[i], 0, bytes, nb);
        free(bytes);
        if (st != MVRT_OK) {
            fprintf(stderr, "upload: %s\n", mvrt_last_error());
            return 1;
        }
        p->in[i] = mvrt_tensor_make(p->in_buf[i], 0, dt, rank, shape);
    }
    for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++) {
        if (!mvrt_gs_output_present(&gs->cfg, i))
            continue;
        p->out_rank[i] = mvrt_gs_output_shape(&gs->cfg, i, c->bc_rank, p->out_shape[i]);
        p->out_dtype[i] = output_is_f32(c, i) ? MVRT_DTYPE_F32 : c->dtype;
        p->out_bytes[i] =
            (size_t)mvrt_gs_numel(p->out_rank[i], p->out_shape[i]) * dtype_size(p->out_dtype[i]);
    }

    /* The serial run, on this (the main) thread. */
    mvrt_buffer_t *buf[MVRT_GS_NUM_OUTPUTS];
    mvrt_stream_t *s = NULL;
    char err[512];
    if (alloc_outputs(p, buf, p->serial) != 0 || mvrt_stream_create(scan_be, &s) != MVRT_OK ||
        run_case(p, s, buf, 0, 0, p->serial, err, sizeof err) != 0) {
        fprintf(stderr, "%s: serial run: %s %s\n", c->what, err, mvrt_last_error());
        return 1;
    }
    for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++)
        mvrt_buffer_free(buf[i]);
    mvrt_stream_destroy(s);

    /* ... which must be right, or bitwise equality below proves little. */
    double *ref[MVRT_GS_NUM_OUTPUTS];
    if (mvrt_gs_reference(gs, c->dtype, ref, err, sizeof err) != 0) {
        fprintf(stderr, "%s: reference: %s\n", c->what, err);
        return 1;
    }
    double worst = 0.0;
    const char *worst_name = "";
    for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++) {
        if (!p->out_bytes[i] || !ref[i])
            continue;
        int64_t n = mvrt_gs_numel(p->out_rank[i], p->out_shape[i]);
        double *got = malloc((size_t)n * sizeof *got);
        if (!got)
            return 1;
        for (int64_t e = 0; e < n; e++)
            got[e] = decode(p->serial[i] + (size_t)e * dtype_size(p->out_dtype[i]),
                            p->out_dtype[i]);
        mvrt_gs_err_t er;
        mvrt_gs_compare(got, ref[i], n, mvrt_gs_tolerance(i, c->dtype, &gs->cfg), &er);
        free(got);
        if (!mvrt_gs_err_ok(&er))
            FAIL("%s: serial %s differs from the reference: max abs %.3g, worst ratio %.3g "
                 "(<= 1 passes) at %lld, %lld non-finite", c->what, mvrt_gs_output_names[i],
                 er.max_abs, er.worst_ratio, (long long)er.worst_index, (long long)er.nonfinite);
        if (er.worst_ratio > worst) {
            worst = er.worst_ratio;
            worst_name = mvrt_gs_output_names[i];
        }
    }
    mvrt_gs_free_results(ref);
    fprintf(stderr, "  %-16s serial vs reference: worst |err|/tol %.3f (%s)\n", c->what, worst,
            worst_name);
    return 0;
}

typedef struct worker {
    int id, iters;
    long runs, bad_calls;
} worker_t;

static pthread_barrier_t scan_barrier;
static int toggler_stop;

static void *scan_worker(void *arg)
{
    worker_t *w = arg;
    mvrt_stream_t *own = NULL;
    if (mvrt_stream_create(scan_be, &own) != MVRT_OK) {
        FAIL("worker %d: stream: %s", w->id, mvrt_last_error());
        pthread_barrier_wait(&scan_barrier);
        return NULL;
    }
    pthread_barrier_wait(&scan_barrier);
    for (int it = 0; it < w->iters; it++) {
        for (int j = 0; j < NCASES; j++) {
            /* Threads walk the cases in different orders, so that different
             * kernels and the same kernel both run at once. */
            const prepared_t *p = &prep[(w->id + j) % NCASES];
            mvrt_buffer_t *buf[MVRT_GS_NUM_OUTPUTS];
            unsigned char *host[MVRT_GS_NUM_OUTPUTS];
            char err[512];
            if (alloc_outputs(p, buf, host) != 0) {
                FAIL("worker %d: outputs: %s", w->id, mvrt_last_error());
                free_outputs(buf, host);
                continue;
            }
            /* Every other run on a stream of its own, made and destroyed
             * while the other threads run. */
            mvrt_stream_t *fresh = NULL, *s = own;
            if ((it + j) % 2 == 1) {
                if (mvrt_stream_create(scan_be, &fresh) != MVRT_OK)
                    FAIL("worker %d: stream: %s", w->id, mvrt_last_error());
                else
                    s = fresh;
            }
            if (run_case(p, s, buf, (w->id + it + j) % 2, ws_floor[(w->id + j) % NCASES], host,
                         err, sizeof err) != 0) {
                FAIL("worker %d, %s: %s", w->id, p->c->what, err);
            } else {
                for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++)
                    if (p->out_bytes[i] && memcmp(host[i], p->serial[i], p->out_bytes[i]) != 0)
                        FAIL("worker %d, %s: %s differs from the serial run (bitwise)", w->id,
                             p->c->what, mvrt_gs_output_names[i]);
                w->runs++;
            }
            mvrt_stream_destroy(fresh);
            free_outputs(buf, host);

            /* A rejected call reports this thread's own mistake. */
            mvrt_selective_scan_args_t bad = {.u = p->in[MVRT_GS_U], .delta = p->in[MVRT_GS_DELTA],
                                              .A = p->in[MVRT_GS_A], .B = p->in[MVRT_GS_B],
                                              .C = p->in[MVRT_GS_C],
                                              .delta_softplus = 1000 + w->id};
            size_t bytes = 0;
            char want[32];
            snprintf(want, sizeof want, "is %d", 1000 + w->id);
            mvrt_status_t st = mvrt_selective_scan_bwd_workspace_size(scan_be, &bad, &bytes);
            if (st != MVRT_ERR_INVALID_ARGUMENT || !strstr(mvrt_last_error(), want))
                FAIL("worker %d: bad delta_softplus gave %s, message \"%s\"", w->id,
                     mvrt_status_string(st), mvrt_last_error());
            w->bad_calls++;
        }
    }
    mvrt_stream_destroy(own);
    return NULL;
}

/* Changes the backend's thread count (1, 2, 3, default) until told to stop;
 * test_scan sizes ws_floor for the largest of these. */
static void *toggler(void *arg)
{
    long *changes = arg;
    pthread_barrier_wait(&scan_barrier);
    int n = 1;
    while (!__atomic_load_n(&toggler_stop, __ATOMIC_ACQUIRE)) {
        if (mvrt_backend_set_num_threads(scan_be, n) != MVRT_OK)
            FAIL("toggler: %s", mvrt_last_error());
        n = (n + 1) % 4;
        (*changes)++;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int test_scan(int nthreads, int iters, int toggle)
{
    if (mvrt_backend_open("cpu", &scan_be) != MVRT_OK) {
        fprintf(stderr, "SKIP: %s\n", mvrt_last_error());
        return SKIP;
    }
    mvrt_device_info_t info;
    if (mvrt_backend_device_info(scan_be, &info) == MVRT_OK)
        fprintf(stderr, "cpu backend: %d threads, %s\n", info.compute_units, info.features);
    for (int k = 0; k < NCASES; k++)
        if (prepare(k) != 0)
            return 1;
    if (failures)
        return 1;
    if (toggle) {
        int most = 3; /* the toggler's counts: 1, 2, 3 and the default */
        if (mvrt_backend_device_info(scan_be, &info) == MVRT_OK && info.compute_units > most)
            most = info.compute_units;
        if (mvrt_backend_set_num_threads(scan_be, most) != MVRT_OK)
            FAIL("set_num_threads(%d): %s", most, mvrt_last_error());
        for (int k = 0; k < NCASES && !failures; k++) {
            mvrt_selective_scan_args_t a = case_args(&prep[k]);
            if (mvrt_selective_scan_bwd_workspace_size(scan_be, &a, &ws_floor[k]) != MVRT_OK)
                FAIL("%s: workspace size: %s", prep[k].c->what, mvrt_last_error());
        }
        if (mvrt_backend_set_num_threads(scan_be, 0) != MVRT_OK)
            FAIL("set_num_threads(0): %s", mvrt_last_error());
        if (failures)
            return 1;
    }

    pthread_t th[64], tog;
    worker_t w[64];
    long changes = 0;
    if (nthreads > 64)
        nthreads = 64;
    pthread_barrier_init(&scan_barrier, NULL, (unsigned)(nthreads + (toggle ? 1 : 0)));
    for (int i = 0; i < nthreads; i++) {
        w[i] = (worker_t){.id = i, .iters = iters};
        if (pthread_create(&th[i], NULL, scan_worker, &w[i]) != 0) {
            fprintf(stderr, "cannot create thread %d\n", i);
            return 1;
        }
    }
    if (toggle && pthread_create(&tog, NULL, toggler, &changes) != 0) {
        fprintf(stderr, "cannot create the toggler thread\n");
        return 1;
    }
    long runs = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        runs += w[i].runs;
    }
    if (toggle) {
        __atomic_store_n(&toggler_stop, 1, __ATOMIC_RELEASE);
        pthread_join(tog, NULL);
    }
    pthread_barrier_destroy(&scan_barrier);
    fprintf(stderr, "%s: %d threads, %ld forward+backward runs%s%ld, all bitwise equal to "
            "serial: %s\n", toggle ? "scan-threads" : "scan", nthreads, runs,
            toggle ? ", thread-count changes " : "", toggle ? changes : 0L,
            failures ? "NO" : "yes");
    if (runs != (long)nthreads * iters * NCASES && !failures)
        FAIL("only %ld of %ld runs completed", runs, (long)nthreads * iters * NCASES);

    for (int k = 0; k < NCASES; k++) {
        for (int i = 0; i < MVRT_GS_NUM_INPUTS; i++) {
            mvrt_buffer_free(prep[k].in_buf[i]);
            free(prep[k].gs.in[i]);
        }
        for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++)
            free(prep[k].serial[i]);
    }
    mvrt_backend_close(scan_be);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    int nthreads = 4, iters = 2;
    const char *which = argc > 1 ? argv[1] : "";
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else
            which = "";
    }
    if (nthreads < 1 || iters < 1)
        which = "";
    int rc;
    if (!strcmp(which, "backend"))
        rc = test_backend();
    else if (!strcmp(which, "scan"))
        rc = test_scan(nthreads, iters, 0);
    else if (!strcmp(which, "scan-threads"))
        rc = test_scan(nthreads, iters, 1);
    else {
        fprintf(stderr, "usage: test_concurrency backend|scan|scan-threads [--threads T] "
                "[--iters K]\n");
        return 2;
    }
    fprintf(stderr, "%s\n", rc == 0 ? "PASS" : rc == SKIP ? "SKIP" : "FAIL");
    return rc;
}
