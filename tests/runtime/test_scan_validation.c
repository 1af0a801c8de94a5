/* Argument validation of mvrt_selective_scan_fwd / _bwd /
 * _bwd_workspace_size: every rule of include/mvrt/selective_scan.h gives
 * MVRT_ERR_INVALID_ARGUMENT with a message naming the argument, nothing is
 * written to any buffer (all hold a sentinel before and after), and valid
 * arguments of the same fixture are accepted (the positive controls show
 * that each failure comes from the one thing that was changed).
 * Numerics are not checked here (see tests/scan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define INVALID MVRT_ERR_INVALID_ARGUMENT
#define SENTINEL 0xA5
#define MAX_BUFS 160

/* Sizes of the fixtures. Deliberately not multiples of anything. */
enum { BT = 2, DM = 8, L = 5, N = 4, G = 2 };

static mvrt_backend_t *be, *other;
static mvrt_buffer_t *bufs[MAX_BUFS];
static int nbufs;

static void track(mvrt_buffer_t *b)
{
    if (nbufs < MAX_BUFS)
        bufs[nbufs++] = b;
    memset(mvrt_buffer_data(b), SENTINEL, mvrt_buffer_size(b));
}

/* Frees a tracked buffer (before the borrowed memory under it goes away). */
static void untrack_free(mvrt_buffer_t *b)
{
    for (int i = 0; i < nbufs; i++) {
        if (bufs[i] == b) {
            bufs[i] = bufs[--nbufs];
            break;
        }
    }
    mvrt_buffer_free(b);
}

static void refill_all(void)
{
    for (int i = 0; i < nbufs; i++)
        memset(mvrt_buffer_data(bufs[i]), SENTINEL, mvrt_buffer_size(bufs[i]));
}

static int all_intact(void)
{
    for (int i = 0; i < nbufs; i++) {
        const unsigned char *p = mvrt_buffer_data(bufs[i]);
        for (size_t k = 0; k < mvrt_buffer_size(bufs[i]); k++)
            if (p[k] != SENTINEL)
                return 0;
    }
    return 1;
}

/* A contiguous tensor in a buffer of its own on `on`, with `slack` extra
 * bytes after it. */
static mvrt_tensor_t tensor_on(mvrt_backend_t *on, mvrt_dtype_t dt, int rank, int64_t d0,
                               int64_t d1, int64_t d2, int64_t d3, size_t slack)
{
    int64_t shape[4] = {d0, d1, d2, d3};
    int64_t numel = 1;
    for (int i = 0; i < rank; i++)
        numel *= shape[i];
    size_t bytes = (size_t)numel * mvrt_dtype_size(dt) + slack;
    if (bytes == 0)
        bytes = 1;
    mvrt_buffer_t *b = NULL;
    if (mvrt_buffer_alloc(on, bytes, &b) != MVRT_OK) {
        fprintf(stderr, "FAIL: allocation of %zu bytes: %s\n", bytes, mvrt_last_error());
        exit(1);
    }
    track(b);
    return mvrt_tensor_make(b, 0, dt, rank, shape);
}

#define T1(dt, a) tensor_on(be, dt, 1, a, 0, 0, 0, 0)
#define T2(dt, a, b) tensor_on(be, dt, 2, a, b, 0, 0, 0)
#define T3(dt, a, b, c) tensor_on(be, dt, 3, a, b, c, 0, 0)
#define T4(dt, a, b, c, d) tensor_on(be, dt, 4, a, b, c, d, 0)

static const mvrt_dtype_t F32 = MVRT_DTYPE_F32, F16 = MVRT_DTYPE_F16;

/* Fixture A: f32, variable B (Bt, N, L), constant C, D, z, delta_bias. */
static mvrt_selective_scan_args_t argsA;
static mvrt_selective_scan_outputs_t outA;
static mvrt_selective_scan_grads_t gradA;
/* Fixture B: f16, B (Bt, G, N, L) with G = 2, constant C, no optionals. */
static mvrt_selective_scan_args_t argsB;
static mvrt_selective_scan_outputs_t outB;
static mvrt_selective_scan_grads_t gradB;

static void make_fixtures(void)
{
    memset(&argsA, 0, sizeof argsA);
    argsA.u = T3(F32, BT, DM, L);
    argsA.delta = T3(F32, BT, DM, L);
    argsA.A = T2(F32, DM, N);
    argsA.B = T3(F32, BT, N, L);
    argsA.C = T2(F32, DM, N);
    argsA.D = T1(F32, DM);
    argsA.z = T3(F32, BT, DM, L);
    argsA.delta_bias = T1(F32, DM);
    argsA.delta_softplus = 1;
    memset(&outA, 0, sizeof outA);
    outA.out = T3(F32, BT, DM, L);
    outA.last_state = T3(F32, BT, DM, N);
    gradA.dout = T3(F32, BT, DM, L);
    gradA.du = T3(F32, BT, DM, L);
    gradA.ddelta = T3(F32, BT, DM, L);
    gradA.dA = T2(F32, DM, N);
    gradA.dB = T3(F32, BT, N, L);
    gradA.dC = T2(F32, DM, N);
    gradA.dD = T1(F32, DM);
    gradA.dz = T3(F32, BT, DM, L);
    gradA.ddelta_bias = T1(F32, DM);

    memset(&argsB, 0, sizeof argsB);
    argsB.u = T3(F16, BT, DM, L);
    argsB.delta = T3(F16, BT, DM, L);
    argsB.A = T2(F32, DM, N);
    argsB.B = T4(F16, BT, G, N, L);
    argsB.C = T2(F32, DM, N);
    memset(&outB, 0, sizeof outB);
    outB.out = T3(F16, BT, DM, L);
    memset(&gradB, 0, sizeof gradB);
    gradB.dout = T3(F16, BT, DM, L);
    gradB.du = T3(F16, BT, DM, L);
    gradB.ddelta = T3(F16, BT, DM, L);
    gradB.dA = T2(F32, DM, N);
    gradB.dB = T4(F16, BT, G, N, L);
    gradB.dC = T2(F32, DM, N);
}

/* Every failing call: sentinel everywhere before, the expected status and
 * message, sentinel everywhere after. */
#define EXPECT_FAIL(call, status, ...)                                  \
    do {                                                                \
        refill_all();                                                   \
        CHECK_ERR(call, status, __VA_ARGS__);                           \
        CHECK(all_intact());                                            \
    } while (0)

#define FWD "mvrt_selective_scan_fwd"
#define BWD "mvrt_selective_scan_bwd"
#define WSZ "mvrt_selective_scan_bwd_workspace_size"

/* ---- forward: arguments -------------------------------------------------- */

static void test_fwd_args(void)
{
    mvrt_selective_scan_args_t a;

    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, NULL, &outA), INVALID, FWD, "args is NULL");
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, NULL), INVALID, FWD, "outputs is NULL");

    /* u */
    a = argsA;
    a.u.buffer = NULL;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "required");
    a = argsA;
    a.u.rank = 2;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "rank 2");
    a = argsA;
    a.u.rank = 4;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "rank 4");
    a = argsA;
    a.u.dtype = MVRT_DTYPE_F64;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "f64");
    a = argsA;
    a.u.dtype = MVRT_DTYPE_I32;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "i32");
    a = argsA;
    a.u.dtype = (mvrt_dtype_t)42;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "invalid");
    for (int dim = 0; dim < 3; dim++) {
        a = argsA;
        a.u.shape[dim] = 0;
        EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u",
                    "empty dimension");
        a.u.shape[dim] = -3;
        EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u",
                    "empty dimension");
    }
    a = argsA;
    a.u.strides[1] = -5;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "stride[1] = -5");
    a = argsA;
    a.u.offset = 4; /* one element past the end of an exactly sized buffer */
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "needs 324 bytes",
                "has 320");
    a = argsA;
    a.u.offset = UINT64_MAX - 8;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "2^64");
    a = argsA;
    a.u.strides[2] = 2; /* strided along L: reaches past the buffer */
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "strides (40,5,2)");
    a = argsA;
    a.u.strides[0] = INT64_MAX / 2; /* (2-1) * 2^62 elements * 4 bytes */
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "2^64");
    a = argsA;
    a.u.shape[0] = (int64_t)1 << 40; /* element count overflows; strides 0 */
    a.u.shape[1] = (int64_t)1 << 40;
    a.u.strides[0] = a.u.strides[1] = 0;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "overflows int64");

    /* Misaligned offset and misaligned borrowed memory. */
    a = argsA;
    a.u = tensor_on(be, F32, 3, BT, DM, L, 0, 16);
    a.u.offset = 2;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u", "byte offset 2",
                "element size 4");
    unsigned char *raw = malloc(BT * DM * L * 4 + 64);
    mvrt_buffer_t *odd = NULL;
    CHECK_OK(mvrt_buffer_wrap(be, raw + 1, BT * DM * L * 4, &odd));
    if (odd) {
        track(odd);
        int64_t shp[3] = {BT, DM, L};
        a = argsA;
        a.u = mvrt_tensor_make(odd, 0, F32, 3, shp);
        EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->u",
                    "not aligned to its element size 4");
    }

    /* A */
    a = argsA;
    a.A.buffer = NULL;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->A", "required");
    a = argsA;
    a.A.rank = 1;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->A", "rank 1");
    a = argsA;
    a.A = T2(F16, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->A", "dtype f16",
                "expected f32");
    a = argsA;
    a.A = T2(F32, DM - 1, N);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->A", "(7,4)",
                "channels 8");
    a = argsA;
    a.A = tensor_on(be, F32, 2, DM, 0, 0, 0, 64);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->A", "0 states",
                "1..256");
    a = argsA;
    a.A = T2(F32, DM, 257);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->A", "257 states",
                "1..256");
    a = argsA;
    a.A.strides[0] = -1;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->A", "stride[0] = -1");

    /* delta */
    a = argsA;
    a.delta.buffer = NULL;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->delta", "required");
    a = argsA;
    a.delta = T3(F16, BT, DM, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->delta", "dtype f16");
    a = argsA;
    a.delta = T3(F32, 3, DM, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->delta", "(3,8,5)",
                "batch 2");
    a = argsA;
    a.delta = T3(F32, BT, DM, L + 1);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->delta", "length 5");

    /* B and C */
    a = argsA;
    a.B.buffer = NULL;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->B", "required");
    a = argsA;
    a.C.buffer = NULL;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->C", "required");
    a = argsA;
    a.B.rank = 1;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->B", "rank 1");
    a = argsA;
    a.C.rank = 5;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->C", "rank 5");
    a = argsA;
    a.B = T3(F32, 3, N, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->B", "(3,4,5)",
                "args->u implies batch 2");
    a = argsA;
    a.B = T3(F32, BT, N + 1, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->B",
                "args->A implies states 4");
    a = argsA;
    a.B = T3(F16, BT, N, L); /* variable B must be in u's dtype */
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->B", "dtype f16",
                "expected f32");
    a = argsA;
    a.C = T2(F32, DM, N + 1);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->C", "states 4");
    a = argsA;
    a.B.strides[2] = -1;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->B", "stride[2] = -1");
    /* Constant B/C are f32 even for f16 input. */
    a = argsB;
    a.C = T2(F16, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outB), INVALID, "args->C", "dtype f16",
                "expected f32");
    /* Groups: Dm % G, G >= 1, variable B and C agree. */
    a = argsB;
    a.B = T4(F16, BT, 3, N, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outB), INVALID, "args->B", "3 groups",
                "divisible");
    a = argsB;
    a.B = tensor_on(be, F16, 4, BT, 0, N, L, 64);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outB), INVALID, "args->B", "0 groups");
    a = argsB;
    a.C = T4(F16, BT, 4, N, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outB), INVALID, "args->C", "4 group(s)",
                "args->B has 2");
    a = argsB;
    a.C = T3(F16, BT, N, L); /* one group vs B's two */
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outB), INVALID, "args->C", "1 group(s)",
                "args->B has 2");
    a = argsB;
    a.C = T4(F16, BT, G, N, L - 1);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outB), INVALID, "args->C", "length 5");

    /* Optional inputs: checked when present. */
    a = argsA;
    a.D = T2(F32, DM, 1);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->D", "rank 2");
    a = argsA;
    a.D = T1(F16, DM);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->D", "dtype f16");
    a = argsA;
    a.D = T1(F32, DM - 1);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->D", "channels 8");
    a = argsA;
    a.delta_bias = T1(MVRT_DTYPE_F64, DM);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->delta_bias", "f64");
    a = argsA;
    a.delta_bias.offset = 4;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->delta_bias",
                "needs 36 bytes");
    a = argsA;
    a.z = T3(F32, BT, DM + 1, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->z", "channels 8");
    a = argsB;
    a.z = T3(F32, BT, DM, L); /* z in u's dtype (f16) */
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outB), INVALID, "args->z", "dtype f32",
                "expected f16");
    a = argsA;
    a.delta_softplus = 2;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->delta_softplus",
                "is 2");
    a.delta_softplus = -1;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->delta_softplus");

    /* Backends: every tensor on the stream's backend (or u's). */
    a = argsA;
    a.B = tensor_on(other, F32, 3, BT, N, L, 0, 0);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->B",
                "different backend", "args->u");
    a = argsA;
    a.D = tensor_on(other, F32, 1, DM, 0, 0, 0, 0);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->D",
                "different backend");
    mvrt_stream_t *xs = NULL;
    CHECK_OK(mvrt_stream_create(other, &xs));
    EXPECT_FAIL(mvrt_selective_scan_fwd(xs, &argsA, &outA), INVALID, "args->u",
                "different backend", "the stream");
    mvrt_stream_destroy(xs);
    untrack_free(odd);
    free(raw);
}

/* ---- forward: outputs ---------------------------------------------------- */

static void test_fwd_outputs(void)
{
    mvrt_selective_scan_outputs_t o;
    o = outA;
    o.out.buffer = NULL;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->out", "required");
    o = outA;
    o.out = T3(F16, BT, DM, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->out", "dtype f16");
    o = outA;
    o.out = T3(F32, BT, DM, L - 1);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->out", "length 5");
    o = outA;
    o.out.strides[2] = 0; /* would overlap itself */
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->out", "stride[2] = 0",
                "overlap");
    o = outA;
    o.out.offset = 8;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->out", "needs 328");
    o = outA;
    o.out = tensor_on(other, F32, 3, BT, DM, L, 0, 0);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->out",
                "different backend");
    o = outA;
    o.last_state = T3(F16, BT, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->last_state",
                "dtype f16");
    o = outA;
    o.last_state = T3(F32, BT, DM, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->last_state",
                "states 4");
    o = outA;
    o.last_state = T2(F32, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->last_state",
                "rank 2");
    o = outA;
    o.last_state.strides[0] = 0;
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &argsA, &o), INVALID, "outputs->last_state",
                "overlap");
}

/* ---- backward ------------------------------------------------------------ */

static void test_bwd(void)
{
    mvrt_selective_scan_grads_t g;
    mvrt_selective_scan_args_t a;

    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, NULL, &gradA, NULL), INVALID, BWD, "args is NULL");
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, NULL, NULL), INVALID, BWD, "grads is NULL");
    a = argsA;
    a.A = T2(F32, DM, 300);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &a, &gradA, NULL), INVALID, BWD, "args->A",
                "300 states");

    const char *req[] = {"grads->dout", "grads->du", "grads->ddelta", "grads->dA", "grads->dB",
                         "grads->dC"};
    for (int i = 0; i < 6; i++) {
        g = gradA;
        mvrt_tensor_t *fields[] = {&g.dout, &g.du, &g.ddelta, &g.dA, &g.dB, &g.dC};
        fields[i]->buffer = NULL;
        EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, req[i], "required");
    }
    g = gradA;
    g.du = T3(F32, BT, DM + 2, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->du",
                "channels 8");
    g = gradA;
    g.ddelta = T3(F16, BT, DM, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->ddelta",
                "dtype f16");
    g = gradA;
    g.dout = T3(F32, 1, DM, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dout",
                "batch 2");
    g = gradA;
    g.dA = T2(F32, DM, N + 1);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dA", "states 4");
    g = gradA;
    g.dA.strides[1] = 0;
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dA", "overlap");
    g = gradA;
    g.dB = T4(F32, BT, 1, N, L); /* B is rank 3: dB must be too */
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dB", "rank 4",
                "expected 3");
    g = gradA;
    g.dC = T3(F32, BT, N, L); /* C is constant */
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dC", "rank 3",
                "expected 2");
    g = gradA;
    g.dB = tensor_on(other, F32, 3, BT, N, L, 0, 0);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dB",
                "different backend");

    /* Optional gradients: present exactly when the input is. */
    g = gradA;
    g.dD.buffer = NULL;
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dD", "required",
                "args->D");
    g = gradA;
    g.dz.buffer = NULL;
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dz", "required",
                "args->z");
    g = gradA;
    g.ddelta_bias.buffer = NULL;
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->ddelta_bias",
                "required");
    g = gradA;
    g.dD = T1(F32, DM + 1);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dD",
                "channels 8");
    g = gradA;
    g.dz = T3(F16, BT, DM, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &g, NULL), INVALID, "grads->dz", "dtype f16");

    g = gradB;
    g.dz = T3(F16, BT, DM, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsB, &g, NULL), INVALID, "grads->dz",
                "args->z is absent");
    g = gradB;
    g.dD = T1(F32, DM);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsB, &g, NULL), INVALID, "grads->dD",
                "args->D is absent");
    g = gradB;
    g.ddelta_bias = T1(F32, DM);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsB, &g, NULL), INVALID, "grads->ddelta_bias",
                "args->delta_bias is absent");
    /* dtypes of dB/dC: input dtype when variable, f32 when constant. */
    g = gradB;
    g.dB = T4(F32, BT, G, N, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsB, &g, NULL), INVALID, "grads->dB", "dtype f32",
                "expected f16");
    g = gradB;
    g.dC = T2(F16, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsB, &g, NULL), INVALID, "grads->dC", "dtype f16",
                "expected f32");
    g = gradB;
    g.dB = T4(F16, BT, 1, N, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsB, &g, NULL), INVALID, "grads->dB", "groups 2");
    g = gradB;
    g.du = T3(F32, BT, DM, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsB, &g, NULL), INVALID, "grads->du", "dtype f32");

    mvrt_stream_t *xs = NULL;
    CHECK_OK(mvrt_stream_create(other, &xs));
    EXPECT_FAIL(mvrt_selective_scan_bwd(xs, &argsA, &gradA, NULL), INVALID, "args->u",
                "different backend", "the stream");
    mvrt_stream_destroy(xs);
}

/* ---- workspace ----------------------------------------------------------- */

static void test_workspace(void)
{
    size_t need = 12345;
    CHECK_OK(mvrt_selective_scan_bwd_workspace_size(be, &argsA, &need));
    CHECK(need != 12345);

    size_t bytes = 777;
    EXPECT_FAIL(mvrt_selective_scan_bwd_workspace_size(NULL, &argsA, &bytes), INVALID, WSZ,
                "backend is NULL");
    EXPECT_FAIL(mvrt_selective_scan_bwd_workspace_size(be, &argsA, NULL), INVALID, WSZ,
                "out_bytes is NULL");
    EXPECT_FAIL(mvrt_selective_scan_bwd_workspace_size(be, NULL, &bytes), INVALID, WSZ,
                "args is NULL");
    mvrt_selective_scan_args_t a = argsA;
    a.B = T4(F32, BT, 3, N, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd_workspace_size(be, &a, &bytes), INVALID, WSZ, "args->B",
                "divisible");
    EXPECT_FAIL(mvrt_selective_scan_bwd_workspace_size(other, &argsA, &bytes), INVALID, WSZ,
                "args->u", "different backend", "backend");
    CHECK(bytes == 777);

    /* A workspace from another backend, too small, or misaligned. */
    mvrt_buffer_t *xw = NULL;
    CHECK_OK(mvrt_buffer_alloc(other, need + 256, &xw));
    if (xw) {
        track(xw);
        EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &gradA, xw), INVALID, BWD, "workspace",
                    "different backend");
    }
    if (need > 0) {
        mvrt_buffer_t *small = NULL;
        CHECK_OK(mvrt_buffer_alloc(be, need - 1, &small));
        if (small) {
            track(small);
            char n1[64], n2[64];
            snprintf(n1, sizeof n1, "has %zu bytes", need - 1);
            snprintf(n2, sizeof n2, "need %zu", need);
            EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &gradA, small), INVALID, BWD,
                        "workspace", n1, n2);
        }
    } else {
        fprintf(stderr, "note: the backward needs no workspace here; size check not exercised\n");
    }
    unsigned char *raw = aligned_alloc(64, (need + 128 + 63) / 64 * 64);
    mvrt_buffer_t *mis = NULL;
    CHECK_OK(mvrt_buffer_wrap(be, raw + 8, need + 64, &mis));
    if (mis) {
        track(mis);
        EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &argsA, &gradA, mis), INVALID, BWD, "workspace",
                    "aligned");
    }

    /* Positive controls: exact-size workspace, larger one, and NULL. */
    mvrt_buffer_t *ws = NULL;
    CHECK_OK(mvrt_buffer_alloc(be, need ? need : 1, &ws));
    if (ws) {
        track(ws);
        refill_all();
        CHECK_OK(mvrt_selective_scan_bwd(NULL, &argsA, &gradA, ws));
    }
    mvrt_buffer_t *big = NULL;
    CHECK_OK(mvrt_buffer_alloc(be, need + 4096, &big));
    if (big) {
        track(big);
        CHECK_OK(mvrt_selective_scan_bwd(NULL, &argsA, &gradA, big));
    }
    CHECK_OK(mvrt_selective_scan_bwd(NULL, &argsA, &gradA, NULL));
    mvrt_stream_t *s = NULL;
    CHECK_OK(mvrt_stream_create(be, &s));
    CHECK_OK(mvrt_selective_scan_bwd(s, &argsB, &gradB, NULL));
    mvrt_stream_destroy(s);
    untrack_free(mis); /* before the memory it borrows */
    free(raw);
}

/* Complex A (A of dtype c64): constant B / C, last_state, dA and constant
 * dB / dC are c64, variable B / C have 2L steps, inputs are f32; each rule
 * broken once, and the valid fixture accepted forward and backward. */
static void test_complex_a(void)
{
    const mvrt_dtype_t C64 = MVRT_DTYPE_C64;
    mvrt_selective_scan_args_t a, c;
    memset(&c, 0, sizeof c);
    c.u = T3(F32, BT, DM, L);
    c.delta = T3(F32, BT, DM, L);
    c.A = T2(C64, DM, N);
    c.B = T3(F32, BT, N, 2 * L);
    c.C = T2(C64, DM, N);
    c.D = T1(F32, DM);
    c.delta_softplus = 1;
    mvrt_selective_scan_outputs_t o;
    memset(&o, 0, sizeof o);
    o.out = T3(F32, BT, DM, L);
    o.last_state = T3(C64, BT, DM, N);
    mvrt_selective_scan_grads_t g;
    memset(&g, 0, sizeof g);
    g.dout = T3(F32, BT, DM, L);
    g.du = T3(F32, BT, DM, L);
    g.ddelta = T3(F32, BT, DM, L);
    g.dA = T2(C64, DM, N);
    g.dB = T3(F32, BT, N, 2 * L);
    g.dC = T2(C64, DM, N);
    g.dD = T1(F32, DM);

    a = c;
    a.u = T3(F16, BT, DM, L);
    a.delta = T3(F16, BT, DM, L);
    a.B = T3(F16, BT, N, 2 * L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &o), MVRT_ERR_UNSUPPORTED, "complex A", "f32 inputs only");
    a = c;
    a.B = T3(F32, BT, N, L);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &o), INVALID, "args->B", "2 x length");
    a = c;
    a.C = T2(F32, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &o), INVALID, "args->C", "dtype f32", "expected c64");
    a = argsA; /* real A: a c64 constant C is refused */
    a.C = T2(C64, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &a, &outA), INVALID, "args->C", "dtype c64", "expected f32");
    mvrt_selective_scan_outputs_t ob = o;
    ob.last_state = T3(F32, BT, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_fwd(NULL, &c, &ob), INVALID, "outputs->last_state", "expected c64");
    mvrt_selective_scan_grads_t gb = g;
    gb.dA = T2(F32, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &c, &gb, NULL), INVALID, "grads->dA", "expected c64");
    gb = g;
    gb.dC = T2(F32, DM, N);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &c, &gb, NULL), INVALID, "grads->dC", "expected c64");
    gb = g;
    gb.dB = T3(F32, BT, N, L);
    EXPECT_FAIL(mvrt_selective_scan_bwd(NULL, &c, &gb, NULL), INVALID, "grads->dB", "2 x length");

    CHECK_OK(mvrt_selective_scan_fwd(NULL, &c, &o));
    CHECK_OK(mvrt_selective_scan_bwd(NULL, &c, &g, NULL));
    size_t ws = 0;
    CHECK_OK(mvrt_selective_scan_bwd_workspace_size(be, &c, &ws));
    CHECK(ws > 0);
}

/* Valid variants that must be accepted (so the failures above are caused by
 * the one change each made). */
static void test_positive_controls(void)
{
    CHECK_OK(mvrt_selective_scan_fwd(NULL, &argsA, &outA));
    CHECK_OK(mvrt_selective_scan_fwd(NULL, &argsB, &outB));
    mvrt_stream_t *s = NULL;
    CHECK_OK(mvrt_stream_create(be, &s));
    CHECK_OK(mvrt_selective_scan_fwd(s, &argsA, &outA));
    mvrt_stream_destroy(s);

    mvrt_selective_scan_outputs_t o = outA;
    o.last_state.buffer = NULL; /* optional */
    CHECK_OK(mvrt_selective_scan_fwd(NULL, &argsA, &o));
    mvrt_selective_scan_args_t a = argsA;
    a.D.buffer = NULL;
    a.z.buffer = NULL;
    a.delta_bias.buffer = NULL;
    a.delta_softplus = 0;
    CHECK_OK(mvrt_selective_scan_fwd(NULL, &a, &outA));
    /* Rank-3 B with rank-4 C of one group agree; constant B with variable C. */
    a = argsB;
    a.B = T3(F16, BT, N, L);
    a.C = T4(F16, BT, 1, N, L);
    CHECK_OK(mvrt_selective_scan_fwd(NULL, &a, &outB));
    a = argsB;
    a.B = T2(F32, DM, N);
    a.C = T4(F16, BT, G, N, L);
    CHECK_OK(mvrt_selective_scan_fwd(NULL, &a, &outB));
    /* bf16, N at its maximum, broadcast (zero-stride) inputs, offsets. */
    a = argsB;
    a.u = T3(MVRT_DTYPE_BF16, BT, DM, L);
    a.delta = tensor_on(be, MVRT_DTYPE_BF16, 3, 1, 1, L, 0, 8);
    a.delta.shape[0] = BT;
    a.delta.shape[1] = DM;
    a.delta.strides[0] = a.delta.strides[1] = 0;
    a.delta.offset = 4;
    a.A = T2(F32, DM, MVRT_SCAN_MAX_DSTATE);
    a.B = T4(MVRT_DTYPE_BF16, BT, G, MVRT_SCAN_MAX_DSTATE, L);
    a.C = T2(F32, DM, MVRT_SCAN_MAX_DSTATE);
    mvrt_selective_scan_outputs_t ob;
    memset(&ob, 0, sizeof ob);
    ob.out = T3(MVRT_DTYPE_BF16, BT, DM, L);
    ob.last_state = T3(F32, BT, DM, MVRT_SCAN_MAX_DSTATE);
    CHECK_OK(mvrt_selective_scan_fwd(NULL, &a, &ob));
}

int main(void)
{
    be = tu_open_or_skip("cpu");
    other = tu_open_or_skip("cpu"); /* a second, distinct backend */
    CHECK(be != other);
    make_fixtures();
    test_fwd_args();
    test_fwd_outputs();
    test_bwd();
    test_workspace();
    test_complex_a();
    test_positive_controls();
    for (int i = 0; i < nbufs; i++)
        mvrt_buffer_free(bufs[i]);
    mvrt_backend_close(be);
    mvrt_backend_close(other);
    TEST_END();
}
