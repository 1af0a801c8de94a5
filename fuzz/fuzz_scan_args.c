/* Fuzz target: argument validation of mvrt_selective_scan_fwd,
 * mvrt_selective_scan_bwd_workspace_size and mvrt_selective_scan_bwd on the
 * CPU backend.
 *
 * The input describes one call: sizes and flags first (a valid call with
 * every optional tensor, dtype, group count and layout the API allows: row
 * major, column major, padded, broadcast), then any number of 3-byte
 * corruptions (a tensor's rank, dtype, a shape entry, a stride, its byte
 * offset, buffer absent / one byte short / misaligned / of another backend,
 * an output stride 0, delta_softplus, NULL args, the workspace, the
 * stream). Every tensor lives in a buffer of exactly the bytes its own
 * description addresses (mvrt_buffer_wrap over malloc), so that an accepted
 * call whose kernel leaves its tensors is an ASan report.
 *
 * Contracts checked (a violation aborts):
 * - the inputs (and dout) are never written;
 * - a call that fails writes no buffer at all and leaves a message;
 * - a call that succeeds writes only its own outputs, and in strided
 *   outputs only the addressed elements (padding stays as it was). */
#include <string.h>

#include "fuzz_util.h"
#include "mvrt/mvrt.h"

enum {
    T_U, T_DELTA, T_A, T_B, T_C, T_D, T_Z, T_DBIAS,          /* args */
    T_OUT, T_LAST,                                             /* outputs */
    T_DOUT, T_DU, T_DDELTA, T_DA, T_DB, T_DC, T_DD, T_DZ, T_DDBIAS, /* grads */
    T_COUNT
};

/* Buffers larger than this are not made: the description is then treated
 * as unaddressable and a small buffer is given (validation must reject). */
#define MAX_BYTES ((uint64_t)8 << 20)

typedef struct slot {
    int present;
    mvrt_tensor_t t;         /* buffer filled in later */
    int misalign;            /* bytes the wrapped address is moved by */
    int shrink;              /* bytes the buffer is made shorter */
    int other_backend;
    size_t bytes;            /* wrapped size */
    unsigned char *alloc;    /* malloc'd: misalign + bytes */
    unsigned char *mem;      /* alloc + misalign: what is wrapped */
    unsigned char *shadow;   /* the contents before a call */
    mvrt_buffer_t *buf;
} slot_t;

static const char is_output_of_fwd[T_COUNT] = {[T_OUT] = 1, [T_LAST] = 1};
static const char is_output_of_bwd[T_COUNT] = {[T_DU] = 1, [T_DDELTA] = 1, [T_DA] = 1,
                                               [T_DB] = 1, [T_DC] = 1, [T_DD] = 1,
                                               [T_DZ] = 1, [T_DDBIAS] = 1};

static mvrt_backend_t *be_main, *be_other;
static mvrt_stream_t *stream_main, *stream_other;

static void open_backends(void)
{
    if (be_main)
        return;
    if (mvrt_backend_open("cpu", &be_main) != MVRT_OK ||
        mvrt_backend_open("cpu", &be_other) != MVRT_OK ||
        mvrt_stream_create(be_main, &stream_main) != MVRT_OK ||
        mvrt_stream_create(be_other, &stream_other) != MVRT_OK) {
        fprintf(stderr, "fuzz_scan_args: the CPU backend is needed: %s\n", mvrt_last_error());
        abort();
    }
}

static int64_t interesting(unsigned v)
{
    static const int64_t table[] = {0, 1, 2, 3, -1, -2, 7, 8, 63, 64, 65, 255, 256, 257,
                                    INT32_MAX, (int64_t)1 << 31, (int64_t)1 << 32,
                                    (int64_t)1 << 62, INT64_MAX, INT64_MIN, INT64_MAX / 2,
                                    INT64_MAX / 3 + 1, -((int64_t)1 << 40)};
    size_t n = sizeof table / sizeof *table;
    return v < 2 * n ? table[v % n] : (int64_t)(v - 2 * n);
}

/* Row-major strides (mode 0), column-major (1), padded row-major (2), or
 * row-major with stride 0 on one dimension (3; inputs only). */
static void set_layout(mvrt_tensor_t *t, unsigned mode, unsigned pick, int is_output)
{
    int r = t->rank;
    int64_t s = 1;
    if (mode == 1) {
        for (int i = 0; i < r; i++) {
            t->strides[i] = s;
            s *= t->shape[i];
        }
        return;
    }
    for (int i = r - 1; i >= 0; i--) {
        t->strides[i] = s;
        s *= t->shape[i] + (mode == 2 ? 1 + (int64_t)((pick >> i) & 1) : 0);
    }
    if (mode == 3 && !is_output)
        t->strides[pick % (unsigned)r] = 0;
}

/* Bytes addressed by a tensor as described (valid or not), or 0 when that
 * is not computable or too large; every size the harness makes goes
 * through here, independently of the library's own arithmetic. */
static uint64_t extent(const mvrt_tensor_t *t)
{
    uint64_t es = mvrt_dtype_size(t->dtype);
    if (es == 0)
        es = 4;
    int r = t->rank < 0 ? 0 : t->rank > 4 ? 4 : t->rank;
    uint64_t last = 0;
    for (int i = 0; i < r; i++) {
        if (t->shape[i] <= 0)
            continue;
        uint64_t st = t->strides[i] < 0 ? 0 : (uint64_t)t->strides[i], term;
        if (__builtin_mul_overflow((uint64_t)(t->shape[i] - 1), st, &term) ||
            __builtin_add_overflow(last, term, &last))
            return 0;
    }
    uint64_t end;
    if (__builtin_add_overflow(last, (uint64_t)1, &end) || __builtin_mul_overflow(end, es, &end) ||
        __builtin_add_overflow(end, t->offset, &end) || end > MAX_BYTES)
        return 0;
    return end;
}

/* Deterministic, well-scaled input values of the tensor's dtype (a few
 * special values when `special`): A negative, the rest in about [-2, 2]. */
static void fill_input(slot_t *s, int which, uint64_t *seed, int special)
{
    size_t es = mvrt_dtype_size(s->t.dtype);
    if (es != 2)
        es = 4;
    for (size_t o = 0; o + es <= s->bytes; o += es) {
        uint64_t r = fuzz_mix(seed);
        float v = (float)((double)(r >> 11) * (1.0 / 9007199254740992.0) * 4.0 - 2.0);
        if (which == T_A)
            v = -0.05f - 0.5f * (v + 2.0f);
        if (special && (r & 63) == 0) {
            static const uint32_t sp[] = {0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu,
                                          0x00000001u, 0x80000000u};
            uint32_t bits = sp[(r >> 6) % 6];
            memcpy(&v, &bits, 4);
        }
        uint32_t bits;
        memcpy(&bits, &v, 4);
        if (es == 4) {
            memcpy(s->mem + o, &bits, 4);
        } else if (s->t.dtype == MVRT_DTYPE_BF16) {
            uint16_t h = (uint16_t)(bits >> 16);
            memcpy(s->mem + o, &h, 2);
        } else { /* f16 bits made directly: sign, exponent 8..16, mantissa */
            uint16_t h = (uint16_t)(((r >> 20) & 1) << 15 | (8 + (r >> 21) % 9) << 10 |
                                    ((r >> 30) & 1023));
            if (special && (r & 63) == 1)
                h = (uint16_t)(0x7C00u | ((r >> 6) & 0x200)); /* inf or NaN */
            memcpy(s->mem + o, &h, 2);
        }
    }
}

/* Marks the bytes of every element a valid tensor addresses. */
static void mark_addressed(const slot_t *s, unsigned char *mask)
{
    const mvrt_tensor_t *t = &s->t;
    size_t es = mvrt_dtype_size(t->dtype);
    int64_t idx[4] = {0, 0, 0, 0};
    int r = t->rank;
    for (;;) {
        uint64_t e = 0;
        for (int i = 0; i < r; i++)
            e += (uint64_t)idx[i] * (uint64_t)t->strides[i];
        memset(mask + t->offset + e * es, 1, es);
        int i = r - 1;
        while (i >= 0 && ++idx[i] == t->shape[i])
            idx[i--] = 0;
        if (i < 0)
            break;
    }
}

static void snapshot(slot_t *s)
{
    for (int i = 0; i < T_COUNT; i++)
        if (s[i].buf)
            memcpy(s[i].shadow, s[i].mem, s[i].bytes);
}

/* After a call: `outputs` may have changed (only where addressed), nothing
 * else; when the call failed, nothing at all. */
static void check_writes(slot_t *s, const char *outputs, mvrt_status_t st, const char *what)
{
    for (int i = 0; i < T_COUNT; i++) {
        if (!s[i].buf || memcmp(s[i].shadow, s[i].mem, s[i].bytes) == 0)
            continue;
        if (st != MVRT_OK || !outputs[i]) {
            fprintf(stderr, "%s returned %s but changed tensor slot %d (%s)\n", what,
                    mvrt_status_string(st), i, st != MVRT_OK ? "failed call" : "not an output");
            abort();
        }
        /* Accepted: the tensor is valid, so its elements can be walked. */
        unsigned char *mask = calloc(s[i].bytes, 1);
        FUZZ_CHECK(mask != NULL);
        mark_addressed(&s[i], mask);
        for (size_t b = 0; b < s[i].bytes; b++) {
            if (!mask[b] && s[i].mem[b] != s[i].shadow[b]) {
                fprintf(stderr, "%s wrote byte %zu of tensor slot %d, outside its elements\n",
                        what, b, i);
                abort();
            }
        }
        free(mask);
    }
    if (st != MVRT_OK)
        FUZZ_CHECK(mvrt_last_error()[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    open_backends();
    fuzz_reader_t rd = {data, size};

    /* ---- the valid call ---- */
    int64_t Bt = 1 + fuzz_u8(&rd) % 3;
    int64_t Dm = 1 + fuzz_u8(&rd) % 8;
    unsigned lb = fuzz_u8(&rd), nb = fuzz_u8(&rd), flags = fuzz_u8(&rd), mode = fuzz_u8(&rd);
    unsigned gb = fuzz_u8(&rd);
    int bvar = flags & 1, cvar = (flags >> 1) & 1, grouped = (flags >> 2) & 1;
    int hasD = (flags >> 3) & 1, hasz = (flags >> 4) & 1, hasbias = (flags >> 5) & 1;
    int softplus = (flags >> 6) & 1, haslast = (flags >> 7) & 1;
    mvrt_dtype_t in = (mvrt_dtype_t)(MVRT_DTYPE_F32 + (mode & 3) % 3);
    int threads = 1 + (int)((mode >> 2) % 3);
    int64_t L, N;
    if ((mode >> 5) & 1) { /* many states: a few backward chunks */
        static const int64_t big[] = {64, 128, 256};
        N = big[nb % 3];
        L = 1 + lb % 140;
    } else {
        N = 1 + nb % 20;
        L = 1 + lb % 70 + ((mode >> 4) & 1 ? 700 : 0); /* long rows */
    }
    int special = (mode >> 6) & 1;
    int stream_mode = (mode >> 7) & 1; /* 0: NULL (default stream), 1: a created stream */
    int64_t G = 1;
    if (grouped) {
        int64_t divs[8], nd = 0;
        for (int64_t g = 1; g <= Dm; g++)
            if (Dm % g == 0)
                divs[nd++] = g;
        G = divs[gb % nd];
    }

    slot_t s[T_COUNT];
    memset(s, 0, sizeof s);
    const int64_t bdl[3] = {Bt, Dm, L};
    for (int i = 0; i < T_COUNT; i++) {
        mvrt_tensor_t *t = &s[i].t;
        t->dtype = in;
        t->rank = 3;
        memcpy(t->shape, bdl, sizeof bdl);
        s[i].present = 1;
    }
    int bc_var[2] = {bvar, cvar};
    int bc_slots[2][2] = {{T_B, T_DB}, {T_C, T_DC}};
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < 2; j++) {
            mvrt_tensor_t *t = &s[bc_slots[k][j]].t;
            if (!bc_var[k]) {
                *t = (mvrt_tensor_t){.dtype = MVRT_DTYPE_F32, .rank = 2, .shape = {Dm, N}};
            } else if (grouped) {
                *t = (mvrt_tensor_t){.dtype = in, .rank = 4, .shape = {Bt, G, N, L}};
            } else {
                *t = (mvrt_tensor_t){.dtype = in, .rank = 3, .shape = {Bt, N, L}};
            }
        }
    }
    s[T_A].t = s[T_DA].t = (mvrt_tensor_t){.dtype = MVRT_DTYPE_F32, .rank = 2, .shape = {Dm, N}};
    const int vec[] = {T_D, T_DBIAS, T_DD, T_DDBIAS};
    for (int i = 0; i < 4; i++)
        s[vec[i]].t = (mvrt_tensor_t){.dtype = MVRT_DTYPE_F32, .rank = 1, .shape = {Dm}};
    s[T_LAST].t = (mvrt_tensor_t){.dtype = MVRT_DTYPE_F32, .rank = 3, .shape = {Bt, Dm, N}};
    s[T_D].present = s[T_DD].present = hasD;
    s[T_Z].present = s[T_DZ].present = hasz;
    s[T_DBIAS].present = s[T_DDBIAS].present = hasbias;
    s[T_LAST].present = haslast;

    /* One layout byte per tensor: strides, element offset. */
    for (int i = 0; i < T_COUNT; i++) {
        unsigned lay = fuzz_u8(&rd);
        int out = is_output_of_fwd[i] || is_output_of_bwd[i];
        set_layout(&s[i].t, lay & 3, lay >> 4, out);
        s[i].t.offset = ((lay >> 2) & 3) * mvrt_dtype_size(s[i].t.dtype);
    }

    /* ---- corruptions ---- */
    int null_args = 0, null_outputs = 0, null_grads = 0, ws_mode = 0, ws_backend = 0;
    int softplus_value = softplus;
    while (rd.n >= 3) {
        unsigned target = fuzz_u8(&rd) % (T_COUNT + 1), field = fuzz_u8(&rd), v = fuzz_u8(&rd);
        if (target == T_COUNT) { /* whole-call corruptions */
            switch (field % 6) {
            case 0: softplus_value = (int)(int8_t)v; break;
            case 1: null_args = 1; break;
            case 2: *(v & 1 ? &null_grads : &null_outputs) = 1; break;
            case 3: ws_mode = (int)(v % 6); break;
            case 4: stream_mode = (int)(v % 3); break;
            case 5: ws_backend = (int)(v % 3); break;
            }
            continue;
        }
        slot_t *sl = &s[target];
        mvrt_tensor_t *t = &sl->t;
        unsigned dim = (field >> 4) & 3;
        switch (field % 11) {
        case 0: sl->present = !sl->present; break;
        case 1: t->rank = (int32_t)(v % 7) - 1; break;
        case 2: t->dtype = (mvrt_dtype_t)(v % 10); break;
        case 3: t->shape[dim] = interesting(v); break;
        case 4: t->strides[dim] = interesting(v); break;
        case 5: t->offset = v < 16 ? v : (uint64_t)interesting(v); break;
        case 6: sl->shrink = 1 + (int)(v % 8); break;
        case 7: sl->other_backend = 1; break;
        case 8: sl->misalign = 1 + (int)(v % 3); break;
        case 9: t->shape[dim] += t->shape[dim] < INT64_MAX; break;
        case 10: t->strides[dim] = 0; break;
        }
    }

    /* ---- buffers ---- */
    uint64_t seed = 0x243F6A8885A308D3ull ^ (uint64_t)size;
    for (int i = 0; i < T_COUNT; i++) {
        slot_t *sl = &s[i];
        if (!sl->present)
            continue;
        uint64_t e = extent(&sl->t);
        if (e == 0)
            e = 64;
        if ((uint64_t)sl->shrink < e)
            e -= (uint64_t)sl->shrink;
        sl->bytes = (size_t)e;
        sl->alloc = malloc((size_t)sl->misalign + sl->bytes);
        sl->shadow = malloc(sl->bytes);
        FUZZ_CHECK(sl->alloc && sl->shadow);
        sl->mem = sl->alloc + sl->misalign;
        FUZZ_CHECK(mvrt_buffer_wrap(sl->other_backend ? be_other : be_main, sl->mem, sl->bytes,
                                    &sl->buf) == MVRT_OK);
        sl->t.buffer = sl->buf;
        if (is_output_of_fwd[i] || is_output_of_bwd[i])
            memset(sl->mem, 0xA5, sl->bytes);
        else
            fill_input(sl, i, &seed, special);
    }

    mvrt_selective_scan_args_t args = {
        .u = s[T_U].t, .delta = s[T_DELTA].t, .A = s[T_A].t, .B = s[T_B].t, .C = s[T_C].t,
        .D = s[T_D].t, .z = s[T_Z].t, .delta_bias = s[T_DBIAS].t,
        .delta_softplus = softplus_value};
    mvrt_selective_scan_outputs_t outs = {.out = s[T_OUT].t, .last_state = s[T_LAST].t};
    mvrt_selective_scan_grads_t grads = {
        .dout = s[T_DOUT].t, .du = s[T_DU].t, .ddelta = s[T_DDELTA].t, .dA = s[T_DA].t,
        .dB = s[T_DB].t, .dC = s[T_DC].t, .dD = s[T_DD].t, .dz = s[T_DZ].t,
        .ddelta_bias = s[T_DDBIAS].t};
    mvrt_stream_t *stream = stream_mode == 0 ? NULL : stream_mode == 1 ? stream_main : stream_other;
    FUZZ_CHECK(mvrt_backend_set_num_threads(be_main, threads) == MVRT_OK);

    /* ---- forward ---- */
    snapshot(s);
    mvrt_status_t fst = mvrt_selective_scan_fwd(stream, null_args ? NULL : &args,
                                                null_outputs ? NULL : &outs);
    check_writes(s, is_output_of_fwd, fst, "mvrt_selective_scan_fwd");

    /* ---- workspace query ---- */
    mvrt_backend_t *qbe = ws_backend == 0 ? be_main : ws_backend == 1 ? be_other : NULL;
    size_t ws_bytes = (size_t)-1;
    snapshot(s);
    mvrt_status_t qs =
        mvrt_selective_scan_bwd_workspace_size(qbe, null_args ? NULL : &args, &ws_bytes);
    static const char no_outputs[T_COUNT];
    check_writes(s, no_outputs, qs, "mvrt_selective_scan_bwd_workspace_size");
    if (qs != MVRT_OK)
        FUZZ_CHECK(ws_bytes == (size_t)-1);
    else
        FUZZ_CHECK(ws_bytes < ((size_t)1 << 32));

    /* ---- backward, with the workspace as the input asks ---- */
    unsigned char *ws_alloc = NULL;
    mvrt_buffer_t *ws = NULL;
    if (ws_mode != 0 && qs == MVRT_OK) {
        size_t n = ws_bytes ? ws_bytes : 1;
        int misalign = 0;
        mvrt_backend_t *wbe = be_main;
        switch (ws_mode) {
        case 2: n = ws_bytes > 1 ? ws_bytes - 1 : 1; break; /* one byte short */
        case 3: misalign = 8; break;                           /* not 64-byte aligned */
        case 4: wbe = be_other; break;
        case 5: n += 4096; break;
        }
        /* 64-byte aligned base (the documented workspace alignment). */
        ws_alloc = aligned_alloc(64, (n + misalign + 63) / 64 * 64);
        FUZZ_CHECK(ws_alloc != NULL);
        FUZZ_CHECK(mvrt_buffer_wrap(wbe, ws_alloc + misalign, n, &ws) == MVRT_OK);
    }
    snapshot(s);
    mvrt_status_t st = mvrt_selective_scan_bwd(stream, null_args ? NULL : &args, null_grads ? NULL : &grads,
                                 ws);
    check_writes(s, is_output_of_bwd, st, "mvrt_selective_scan_bwd");

    if (fuzz_verbose())
        fprintf(stderr, "scan Bt=%lld Dm=%lld L=%lld N=%lld G=%lld dtype=%d: fwd %s, query %s, "
                "bwd %s: %s\n", (long long)Bt, (long long)Dm, (long long)L, (long long)N,
                (long long)G, (int)in, fst == MVRT_OK ? "ok" : "rejected",
                qs == MVRT_OK ? "ok" : "rejected", st == MVRT_OK ? "ok" : "rejected",
                fst == MVRT_OK && st == MVRT_OK ? "" : mvrt_last_error());
    mvrt_buffer_free(ws);
    free(ws_alloc);
    for (int i = 0; i < T_COUNT; i++) {
        mvrt_buffer_free(s[i].buf);
        free(s[i].alloc);
        free(s[i].shadow);
    }
    return 0;
}
