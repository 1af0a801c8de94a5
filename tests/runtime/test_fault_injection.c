/* Allocation fault injection (issue #8): a scenario that touches every kind
 * of object on the CPU backend -- a safetensors file and the model config in
 * its metadata, backend, stream, a model, a graph, a run and the download of
 * its output, buffers and copies, a selective scan forward and backward (with
 * the runtime's own temporary workspace) -- is run once with the N-th allocation of the
 * runtime failing, for N = 1, 2, ... until a run meets no injected failure.
 *
 * For every N:
 *   - each public call returns MVRT_OK or MVRT_ERR_OUT_OF_MEMORY (anything
 *     else fails the test); on OOM the message is non-empty and says
 *     "memory" or "allocat", the scenario cleans up and stops;
 *   - the injected failure is never swallowed: a scenario that succeeds must
 *     not have reached allocation N;
 *   - then, disarmed, a fresh full scenario still works and gives bitwise the
 *     outputs of the reference run (after every K-th failure, K =
 *     --check-every, and after the first failure of every call site).
 * Leaks on any of the error paths are LeakSanitizer's job (make test-asan).
 *
 * usage: test_fault_injection --golden-dir DIR [--check-every K]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mvrt/mvrt.h"
#include "test_util.h"

static const char *golden_dir = NULL;
static const char *const MODEL = "mini_model";

/* ---- the scan's sizes ------------------------------------------------- */

enum { BT = 2, DM = 6, L = 37, N = 4 };
#define N_BDL (BT * DM * L)
#define N_BGNL (BT * 1 * N * L)

/* Every output of one scenario, compared bitwise between runs. */
typedef struct result {
    float out[N_BDL], last_state[BT * DM * N];
    float du[N_BDL], ddelta[N_BDL], dz[N_BDL];
    float dA[DM * N], dB[N_BGNL], dC[N_BGNL], dD[DM], ddelta_bias[DM];
    float model_out[64];
    size_t model_count;
} result_t;

/* Inputs of the scan, deterministic. */
static float in_u[N_BDL], in_delta[N_BDL], in_z[N_BDL], in_dout[N_BDL];
static float in_A[DM * N], in_B[N_BGNL], in_C[N_BGNL], in_D[DM], in_db[DM];

static float lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
}

static void make_inputs(void)
{
    uint32_t s = 12345;
    for (int i = 0; i < N_BDL; i++) {
        in_u[i] = lcg(&s);
        in_delta[i] = lcg(&s);
        in_z[i] = lcg(&s);
        in_dout[i] = lcg(&s);
    }
    for (int i = 0; i < DM * N; i++)
        in_A[i] = -0.5f - (lcg(&s) + 0.5f);
    for (int i = 0; i < N_BGNL; i++) {
        in_B[i] = lcg(&s);
        in_C[i] = lcg(&s);
    }
    for (int i = 0; i < DM; i++) {
        in_D[i] = lcg(&s);
        in_db[i] = lcg(&s);
    }
}

/* ---- one scenario ----------------------------------------------------- */

static const char *stopped_at; /* the call that stopped the last scenario */

/* How a step ended: counts as a failure unless MVRT_OK or an OOM with a
 * message that says so. Returns 1 when the scenario must stop. */
static int step_failed(const char *what, mvrt_status_t st, int64_t armed)
{
    if (st == MVRT_OK)
        return 0;
    stopped_at = what;
    const char *msg = mvrt_last_error();
    tu_checks++;
    if (st != MVRT_ERR_OUT_OF_MEMORY) {
        tu_failures++;
        fprintf(stderr, "allocation %lld failing: %s returned %s (expected OK or OUT_OF_MEMORY): %s\n",
                (long long)armed, what, mvrt_status_string(st), msg);
    } else if (!msg[0] || (!strstr(msg, "memory") && !strstr(msg, "allocat"))) {
        tu_failures++;
        fprintf(stderr, "allocation %lld failing: %s returned OUT_OF_MEMORY with message \"%s\", which "
                "mentions neither memory nor allocation\n", (long long)armed, what, msg);
    } else if (armed > 0 && mvrt_debug_allocation_count() < armed) {
        tu_failures++;
        fprintf(stderr, "allocation %lld failing: %s returned OUT_OF_MEMORY after only %lld allocations: %s\n",
                (long long)armed, what, (long long)mvrt_debug_allocation_count(), msg);
    }
    return 1;
}

#define STEP(call)                                    \
    do {                                              \
        st = (call);                                  \
        if (step_failed(#call, st, armed))            \
            goto done;                                \
    } while (0)

/* A step that creates *out (NULL before): a failing call must not write it. */
#define STEP_OUT(call, out)                                                              \
    do {                                                                                 \
        st = (call);                                                                     \
        if (step_failed(#call, st, armed)) {                                             \
            tu_checks++;                                                                 \
            if ((out) != NULL) {                                                         \
                tu_failures++;                                                           \
                fprintf(stderr, "allocation %lld failing: %s wrote its output\n",        \
                        (long long)armed, #call);                                        \
                (out) = NULL; /* do not destroy what the call may have freed */          \
            }                                                                            \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

/* Byte offsets of the scan's tensors inside three buffers. */
#define OFF(i) ((size_t)(i) * 2048)

/* Runs the whole scenario; `armed` is the allocation made to fail (0: none),
 * only for messages. Returns MVRT_OK, or the status of the step that
 * stopped it. */
static mvrt_status_t scenario(result_t *res, int64_t armed)
{
    mvrt_status_t st = MVRT_OK;
    mvrt_backend_t *be = NULL;
    mvrt_stream_t *stream = NULL;
    mvrt_buffer_t *inb = NULL, *outb = NULL, *gradb = NULL;
    mvrt_safetensors_t *file = NULL;
    mvrt_model_t *model = NULL;
    mvrt_graph_t *graph = NULL;
    memset(res, 0, sizeof *res);

    /* The file and its config first: most allocation points are in the
     * header parser, and failing them early keeps the loop fast. */
    char path[4096];
    snprintf(path, sizeof path, "%s/mv_mini_model.safetensors", golden_dir);
    STEP_OUT(mvrt_safetensors_open(path, &file), file);
    const char *json = NULL;
    STEP(mvrt_safetensors_metadata(file, MODEL, &json));
    mvrt_model_config_t cfg;
    int64_t batch = 0, height = 0, width = 0, tokens = 0;
    STEP(mvrt_model_config_from_json(json, &cfg, &batch, &height, &width, &tokens));
    mvrt_safetensors_tensor_t tin;
    char key[128];
    snprintf(key, sizeof key, "%s.input", MODEL);
    STEP(mvrt_safetensors_find(file, key, &tin));
    STEP_OUT(mvrt_backend_open("cpu", &be), be);
    /* One thread: the runs stay short and steady on a busy machine. */
    STEP(mvrt_backend_set_num_threads(be, 1));
    STEP_OUT(mvrt_stream_create(be, &stream), stream);

    /* Model: weights, graph, run, download. */
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s.weights.", MODEL);
    STEP_OUT(mvrt_model_load(be, &cfg, file, prefix, &model), model);
    mvrt_graph_options_t opt = {0};
    opt.batch = tin.shape[0], opt.height = tin.shape[2], opt.width = tin.shape[3];
    STEP_OUT(mvrt_graph_create(model, &opt, &graph), graph);
    mvrt_tensor_t gin, gout;
    STEP(mvrt_graph_input(graph, &gin));
    STEP(mvrt_graph_output(graph, &gout));
    size_t nout = (size_t)mvrt_tensor_numel(&gout);
    tu_checks++;
    if (nout == 0 || nout > sizeof res->model_out / sizeof res->model_out[0] ||
        (size_t)mvrt_tensor_numel(&gin) * 4 != tin.nbytes) {
        tu_failures++;
        fprintf(stderr, "unexpected graph sizes: %zu outputs, %lld inputs for %zu bytes\n", nout,
                (long long)mvrt_tensor_numel(&gin), tin.nbytes);
        st = MVRT_ERR_INTERNAL;
        goto done;
    }
    STEP(mvrt_copy_host_to_device(stream, gin.buffer, gin.offset, tin.data, tin.nbytes));
    STEP(mvrt_graph_run(graph, stream, NULL, NULL));
    STEP(mvrt_copy_device_to_host(stream, res->model_out, gout.buffer, gout.offset, nout * 4));
    STEP(mvrt_stream_synchronize(stream));
    res->model_count = nout;

    /* Scan: inputs, outputs and gradients in three buffers. */
    STEP_OUT(mvrt_buffer_alloc(be, OFF(9), &inb), inb);
    STEP_OUT(mvrt_buffer_alloc(be, OFF(2), &outb), outb);
    STEP_OUT(mvrt_buffer_alloc(be, OFF(9), &gradb), gradb);
    const int64_t bdl[3] = {BT, DM, L}, dn[2] = {DM, N}, bgnl[4] = {BT, 1, N, L}, d1[1] = {DM},
                  bdn[3] = {BT, DM, N};
    const struct { const float *src; size_t bytes; } up[] = {
        {in_u, sizeof in_u}, {in_delta, sizeof in_delta}, {in_A, sizeof in_A}, {in_B, sizeof in_B},
        {in_C, sizeof in_C}, {in_D, sizeof in_D}, {in_z, sizeof in_z}, {in_db, sizeof in_db},
        {in_dout, sizeof in_dout}};
    for (int i = 0; i < 9; i++)
        STEP(mvrt_copy_host_to_device(stream, inb, OFF(i), up[i].src, up[i].bytes));
    mvrt_selective_scan_args_t a;
    memset(&a, 0, sizeof a);
    a.u = mvrt_tensor_make(inb, OFF(0), MVRT_DTYPE_F32, 3, bdl);
    a.delta = mvrt_tensor_make(inb, OFF(1), MVRT_DTYPE_F32, 3, bdl);
    a.A = mvrt_tensor_make(inb, OFF(2), MVRT_DTYPE_F32, 2, dn);
    a.B = mvrt_tensor_make(inb, OFF(3), MVRT_DTYPE_F32, 4, bgnl);
    a.C = mvrt_tensor_make(inb, OFF(4), MVRT_DTYPE_F32, 4, bgnl);
    a.D = mvrt_tensor_make(inb, OFF(5), MVRT_DTYPE_F32, 1, d1);
    a.z = mvrt_tensor_make(inb, OFF(6), MVRT_DTYPE_F32, 3, bdl);
    a.delta_bias = mvrt_tensor_make(inb, OFF(7), MVRT_DTYPE_F32, 1, d1);
    a.delta_softplus = 1;
    mvrt_selective_scan_outputs_t o;
    memset(&o, 0, sizeof o);
    o.out = mvrt_tensor_make(outb, OFF(0), MVRT_DTYPE_F32, 3, bdl);
    o.last_state = mvrt_tensor_make(outb, OFF(1), MVRT_DTYPE_F32, 3, bdn);
    STEP(mvrt_selective_scan_fwd(stream, &a, &o));
    mvrt_selective_scan_grads_t g;
    memset(&g, 0, sizeof g);
    g.dout = mvrt_tensor_make(inb, OFF(8), MVRT_DTYPE_F32, 3, bdl);
    g.du = mvrt_tensor_make(gradb, OFF(0), MVRT_DTYPE_F32, 3, bdl);
    g.ddelta = mvrt_tensor_make(gradb, OFF(1), MVRT_DTYPE_F32, 3, bdl);
    g.dA = mvrt_tensor_make(gradb, OFF(2), MVRT_DTYPE_F32, 2, dn);
    g.dB = mvrt_tensor_make(gradb, OFF(3), MVRT_DTYPE_F32, 4, bgnl);
    g.dC = mvrt_tensor_make(gradb, OFF(4), MVRT_DTYPE_F32, 4, bgnl);
    g.dD = mvrt_tensor_make(gradb, OFF(5), MVRT_DTYPE_F32, 1, d1);
    g.dz = mvrt_tensor_make(gradb, OFF(6), MVRT_DTYPE_F32, 3, bdl);
    g.ddelta_bias = mvrt_tensor_make(gradb, OFF(7), MVRT_DTYPE_F32, 1, d1);
    /* No workspace: the runtime allocates a temporary one itself. */
    STEP(mvrt_selective_scan_bwd(stream, &a, &g, NULL));
    const struct { void *dst; mvrt_buffer_t *b; size_t off, bytes; } down[] = {
        {res->out, outb, OFF(0), sizeof res->out}, {res->last_state, outb, OFF(1), sizeof res->last_state},
        {res->du, gradb, OFF(0), sizeof res->du}, {res->ddelta, gradb, OFF(1), sizeof res->ddelta},
        {res->dA, gradb, OFF(2), sizeof res->dA}, {res->dB, gradb, OFF(3), sizeof res->dB},
        {res->dC, gradb, OFF(4), sizeof res->dC}, {res->dD, gradb, OFF(5), sizeof res->dD},
        {res->dz, gradb, OFF(6), sizeof res->dz}, {res->ddelta_bias, gradb, OFF(7), sizeof res->ddelta_bias}};
    for (size_t i = 0; i < sizeof down / sizeof down[0]; i++)
        STEP(mvrt_copy_device_to_host(stream, down[i].dst, down[i].b, down[i].off, down[i].bytes));
    STEP(mvrt_stream_synchronize(stream));

done:
    mvrt_graph_destroy(graph);
    mvrt_model_destroy(model);
    mvrt_safetensors_close(file);
    mvrt_buffer_free(gradb);
    mvrt_buffer_free(outb);
    mvrt_buffer_free(inb);
    mvrt_stream_destroy(stream);
    mvrt_backend_close(be);
    return st;
}

/* ---- threads: one process-wide counter ------------------------------- */

enum { THREADS = 4, ROUNDS = 500 };

typedef struct worker {
    mvrt_backend_t *be;
    int ooms, others;
} worker_t;

/* ROUNDS buffer allocations (two counted allocations each when they
 * succeed: the device memory, then the record). */
static void *worker_main(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < ROUNDS; i++) {
        mvrt_buffer_t *b = NULL;
        mvrt_status_t st = mvrt_buffer_alloc(w->be, 256, &b);
        if (st == MVRT_ERR_OUT_OF_MEMORY)
            w->ooms++;
        else if (st != MVRT_OK)
            w->others++;
        mvrt_buffer_free(b);
    }
    return NULL;
}

/* Runs THREADS workers at once; returns the number of OOMs they saw. */
static int run_workers(mvrt_backend_t *be)
{
    pthread_t t[THREADS];
    worker_t w[THREADS];
    int started = 0, ooms = 0;
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){be, 0, 0};
        if (pthread_create(&t[i], NULL, worker_main, &w[i]) == 0)
            started++;
        else
            break;
    }
    CHECK(started == THREADS);
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        ooms += w[i].ooms;
        CHECK(w[i].others == 0);
    }
    return ooms;
}

static void test_threads(void)
{
    mvrt_backend_t *be = NULL;
    CHECK_OK(mvrt_backend_open("cpu", &be));
    if (!be)
        return;
    /* Disarmed: no allocation is lost to a race. */
    mvrt_debug_fail_allocation(0);
    CHECK(run_workers(be) == 0);
    CHECK(mvrt_debug_allocation_count() == 2 * THREADS * ROUNDS);
    /* Armed in the middle: exactly one allocation of one thread fails. When
     * it is a device allocation the call stops before its record, so the
     * count is one short; when it is a record, it is not. */
    mvrt_debug_fail_allocation(THREADS * ROUNDS + 1);
    CHECK(run_workers(be) == 1);
    int64_t count = mvrt_debug_allocation_count();
    CHECK(count == 2 * THREADS * ROUNDS - 1 || count == 2 * THREADS * ROUNDS);
    mvrt_debug_fail_allocation(0);
    mvrt_backend_close(be);
}

/* ---- driver ------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The golden output, loosely: the reference run is the real model. */
static void check_against_golden(const result_t *ref)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/mv_mini_model.safetensors", golden_dir);
    mvrt_safetensors_t *f = NULL;
    CHECK_OK(mvrt_safetensors_open(path, &f));
    if (!f)
        return;
    mvrt_safetensors_tensor_t t;
    CHECK_OK(mvrt_safetensors_find(f, "mini_model.output", &t));
    CHECK(t.nbytes == ref->model_count * 4);
    if (t.nbytes == ref->model_count * 4) {
        double worst = 0, scale = 0;
        for (size_t i = 0; i < ref->model_count; i++) {
            float r;
            memcpy(&r, (const char *)t.data + 4 * i, 4);
            double d = (double)r - ref->model_out[i];
            worst = d < 0 ? (-d > worst ? -d : worst) : (d > worst ? d : worst);
            scale = (r < 0 ? -r : r) > scale ? (r < 0 ? -r : r) : scale;
        }
        CHECK(worst <= 1e-3 * (scale > 1 ? scale : 1));
    }
    mvrt_safetensors_close(f);
}

int main(int argc, char **argv)
{
    int check_every = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--golden-dir"))
            golden_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--check-every"))
            check_every = atoi(argv[i + 1]) > 0 ? atoi(argv[i + 1]) : 1;
    }
    if (!golden_dir) {
        fprintf(stderr, "usage: test_fault_injection --golden-dir DIR [--check-every K]\n");
        return 2;
    }
    mvrt_backend_t *probe = NULL;
    if (mvrt_backend_open("cpu", &probe) != MVRT_OK) {
        fprintf(stderr, "SKIP: cpu backend unavailable: %s\n", mvrt_last_error());
        return MVRT_TEST_SKIP;
    }
    mvrt_backend_close(probe);
    make_inputs();

    /* The hook itself: counting, disarming, only the n-th failing. */
    mvrt_debug_fail_allocation(0);
    CHECK(mvrt_debug_allocation_count() == 0);
    mvrt_backend_t *be = NULL;
    CHECK_OK(mvrt_backend_open("cpu", &be));
    CHECK(mvrt_debug_allocation_count() == 1);
    mvrt_buffer_t *buf = NULL;
    mvrt_debug_fail_allocation(1); /* the device allocation */
    CHECK_ERR(mvrt_buffer_alloc(be, 64, &buf), MVRT_ERR_OUT_OF_MEMORY, "mvrt_buffer_alloc",
              "64 bytes", "memory", "mvrt_debug_fail_allocation");
    CHECK(buf == NULL);
    mvrt_debug_fail_allocation(2); /* the buffer's record, after the device memory */
    CHECK_ERR(mvrt_buffer_alloc(be, 64, &buf), MVRT_ERR_OUT_OF_MEMORY, "mvrt_buffer_alloc",
              "host memory");
    CHECK(buf == NULL);
    CHECK(mvrt_debug_allocation_count() == 2);
    CHECK_OK(mvrt_buffer_alloc(be, 64, &buf)); /* only the n-th fails */
    mvrt_buffer_free(buf);
    mvrt_debug_fail_allocation(-5);
    CHECK_OK(mvrt_buffer_alloc(be, 64, &buf));
    CHECK(mvrt_debug_allocation_count() == 2);
    mvrt_buffer_free(buf);
    mvrt_backend_close(be);

    test_threads();

    /* Reference run, unarmed. */
    static result_t ref, got, again;
    double t0 = now_s();
    mvrt_debug_fail_allocation(0);
    CHECK_OK(scenario(&ref, 0));
    const int64_t total = mvrt_debug_allocation_count();
    double t_full = now_s() - t0;
    fprintf(stderr, "reference scenario: %lld allocations, %.3f s\n", (long long)total, t_full);
    CHECK(total > 0);
    CHECK(ref.model_count > 0);
    check_against_golden(&ref);
    if (tu_failures)
        TEST_END();

    /* Fail allocation n for n = 1, 2, ... until a run meets no failure. */
    int64_t n = 1, covered = 0, checks = 0;
    int last_failures = tu_failures;
    const char *last_site = NULL;
    for (;; n++) {
        mvrt_debug_fail_allocation(n);
        mvrt_status_t st = scenario(&got, n);
        int64_t count = mvrt_debug_allocation_count();
        mvrt_debug_fail_allocation(0);
        if (st == MVRT_OK) {
            tu_checks++;
            if (count >= n) {
                tu_failures++;
                fprintf(stderr, "allocation %lld failed but every call succeeded (the failure was "
                        "swallowed)\n", (long long)n);
            } else if (memcmp(&got, &ref, sizeof ref) != 0) {
                tu_failures++;
                fprintf(stderr, "the unfailed run after n = %lld differs from the reference\n",
                        (long long)n);
            }
            break;
        }
        covered++;
        /* The runtime keeps working after the failure, bit for bit: checked
         * every check_every failures, and whenever the failing call differs
         * from the last one (so every call site that can fail is followed by
         * at least one check). */
        int new_site = stopped_at != last_site;
        last_site = stopped_at;
        if (n % check_every == 0 || new_site) {
            checks++;
            mvrt_status_t st2 = scenario(&again, 0);
            tu_checks++;
            if (st2 != MVRT_OK || memcmp(&again, &ref, sizeof ref) != 0) {
                tu_failures++;
                fprintf(stderr, "after failing allocation %lld: the fresh scenario %s\n", (long long)n,
                        st2 != MVRT_OK ? "failed" : "differs from the reference");
            }
        }
        if (tu_failures > last_failures + 20 || n > 4 * total + 100) {
            fprintf(stderr, "stopping at n = %lld\n", (long long)n);
            tu_failures++;
            break;
        }
    }
    double t_all = now_s() - t0;
    printf("fault injection: %lld allocation points covered (every one failed in turn; %lld in the "
           "unfailed scenario), %lld recovery runs checked bitwise, %.1f s\n",
           (long long)covered, (long long)total, (long long)checks, t_all);
    CHECK(covered == total);
    TEST_END();
}
