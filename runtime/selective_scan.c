/* Selective scan entry points: validate every tensor (presence, rank, dtype,
 * shape, strides, extent inside its buffer, backend), resolve them into an
 * mvrt_scan_params_t, and hand that to the backend. Kernels rely on this
 * file: they assume what is checked here.
 *
 * Decisions beyond include/mvrt/selective_scan.h:
 * - Every dimension must be >= 1: an empty batch/channel/length is rejected
 *   ("empty dimension") rather than silently doing nothing.
 * - A tensor's byte offset and its address must be multiples of its element
 *   size (kernels do typed loads).
 * - An output may not have stride 0 along a dimension longer than 1 (it
 *   would overlap itself and make the result depend on write order).
 * - The element count of every tensor must fit int64.
 * - A workspace passed to the backward must be on the same backend, hold at
 *   least the queried number of bytes and be MVRT_SCAN_WORKSPACE_ALIGN-byte
 *   aligned (device allocations always are).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define INVALID MVRT_ERR_INVALID_ARGUMENT
#define MVRT_SCAN_WORKSPACE_ALIGN 64

/* Sizes implied by u, A and B/C, with the tensor each came from. */
typedef struct scan_dims {
    int64_t batch, dim, seqlen, dstate, groups;
    const char *groups_from;
    int complex_a;                  /* A is c64: see include/mvrt/selective_scan.h */
} scan_dims_t;

typedef struct check_ctx {
    const char *fn;                 /* public function name, for messages */
    mvrt_backend_t *backend;        /* every buffer must belong to it */
    const char *backend_from;       /* "the stream", "args->u", "backend" */
} check_ctx_t;

/* One expected dimension: value and a label for messages. */
typedef struct dim_rule {
    int64_t value;
    const char *label;              /* "batch", "channels", ... */
    const char *from;               /* which argument implied it */
} dim_rule_t;

static void format_dims(char *dst, size_t size, int rank, const int64_t *v)
{
    size_t len = 0;
    dst[0] = '\0';
    len += (size_t)snprintf(dst + len, size - len, "(");
    for (int i = 0; i < rank && len < size; i++)
        len += (size_t)snprintf(dst + len, size - len, "%s%lld", i ? "," : "", (long long)v[i]);
    if (len < size)
        snprintf(dst + len, size - len, ")");
}

static int is_input_dtype(mvrt_dtype_t d)
{
    return d == MVRT_DTYPE_F32 || d == MVRT_DTYPE_F16 || d == MVRT_DTYPE_BF16;
}

/* Strides, element count, extent inside the buffer, alignment, backend.
 * The rank is already known to be valid. */
static mvrt_status_t check_layout(const check_ctx_t *c, const char *name, const mvrt_tensor_t *t,
                                  int is_output)
{
    char shape[96], strides[96];
    format_dims(shape, sizeof shape, t->rank, t->shape);
    format_dims(strides, sizeof strides, t->rank, t->strides);

    int64_t numel = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->strides[i] < 0)
            return mvrt_error_set(INVALID, "%s: %s has stride[%d] = %lld; strides must be >= 0",
                                  c->fn, name, i, (long long)t->strides[i]);
        if (__builtin_mul_overflow(numel, t->shape[i], &numel))
            return mvrt_error_set(INVALID, "%s: %s has shape %s whose element count overflows int64",
                                  c->fn, name, shape);
        if (is_output && t->strides[i] == 0 && t->shape[i] > 1)
            return mvrt_error_set(INVALID,
                                  "%s: %s has stride[%d] = 0 on a dimension of size %lld; an "
                                  "output must not overlap itself",
                                  c->fn, name, i, (long long)t->shape[i]);
    }

    /* Last addressed element: sum((shape - 1) * stride), all in uint64 with
     * overflow checks; then bytes = offset + (last + 1) * esize. */
    uint64_t esize = mvrt_dtype_size(t->dtype);
    uint64_t last = 0, end = 0;
    int overflow = 0;
    for (int i = 0; i < t->rank && !overflow; i++) {
        uint64_t term;
        overflow |= __builtin_mul_overflow((uint64_t)(t->shape[i] - 1), (uint64_t)t->strides[i],
                                           &term);
        overflow |= __builtin_add_overflow(last, term, &last);
    }
    if (!overflow) {
        overflow |= __builtin_add_overflow(last, (uint64_t)1, &end);
        overflow |= __builtin_mul_overflow(end, esize, &end);
        overflow |= __builtin_add_overflow(end, t->offset, &end);
    }
    if (overflow)
        return mvrt_error_set(INVALID,
                              "%s: %s with shape %s, strides %s and offset %llu addresses more "
                              "than 2^64 bytes",
                              c->fn, name, shape, strides, (unsigned long long)t->offset);
    size_t bufsize = t->buffer->size;
    if (end > (uint64_t)bufsize)
        return mvrt_error_set(INVALID,
                              "%s: %s with shape %s, strides %s and offset %llu needs %llu bytes "
                              "but its buffer has %zu",
                              c->fn, name, shape, strides, (unsigned long long)t->offset,
                              (unsigned long long)end, bufsize);
    if (t->offset % esize != 0)
        return mvrt_error_set(INVALID, "%s: %s has byte offset %llu, not a multiple of its element "
                              "size %llu", c->fn, name, (unsigned long long)t->offset,
                              (unsigned long long)esize);
    if ((uintptr_t)t->buffer->data % esize != 0)
        return mvrt_error_set(INVALID, "%s: %s's buffer address %p is not aligned to its element "
                              "size %llu", c->fn, name, t->buffer->data, (unsigned long long)esize);
    if (t->buffer->backend != c->backend)
        return mvrt_error_set(INVALID, "%s: %s belongs to a different backend (%s %p) than %s "
                              "(%s %p)", c->fn, name, t->buffer->backend->name,
                              (const void *)t->buffer->backend, c->backend_from, c->backend->name,
                              (const void *)c->backend);
    return MVRT_OK;
}

/* Full check of one present tensor against an expected rank, dtype and
 * shape. `what` describes the expected shape for messages, e.g.
 * "(Bt, Dm, L)". */
static mvrt_status_t check_tensor(const check_ctx_t *c, const char *name, const mvrt_tensor_t *t,
                                  int rank, const char *what, mvrt_dtype_t dtype,
                                  const dim_rule_t *dims, int is_output)
{
    if (!t->buffer)
        return mvrt_error_set(INVALID, "%s: %s is required but absent (its buffer is NULL)", c->fn,
                              name);
    if (t->rank != rank)
        return mvrt_error_set(INVALID, "%s: %s has rank %d; expected %d %s", c->fn, name,
                              (int)t->rank, rank, what);
    if (t->dtype != dtype)
        return mvrt_error_set(INVALID, "%s: %s has dtype %s; expected %s", c->fn, name,
                              mvrt_dtype_name(t->dtype), mvrt_dtype_name(dtype));
    for (int i = 0; i < rank; i++) {
        if (t->shape[i] != dims[i].value) {
            char shape[96];
            format_dims(shape, sizeof shape, t->rank, t->shape);
            return mvrt_error_set(INVALID,
                                  "%s: %s has shape %s %s but %s implies %s %lld (dimension %d)",
                                  c->fn, name, shape, what, dims[i].from, dims[i].label,
                                  (long long)dims[i].value, i);
        }
    }
    return check_layout(c, name, t, is_output);
}

/* The (Bt, Dm, L) rule shared by delta, z, out, dout, du, ddelta, dz. */
static void rule_bdl(const scan_dims_t *d, dim_rule_t r[3])
{
    r[0] = (dim_rule_t){d->batch, "batch", "args->u"};
    r[1] = (dim_rule_t){d->dim, "channels", "args->u"};
    r[2] = (dim_rule_t){d->seqlen, "length", "args->u"};
}

static mvrt_status_t check_bdl(const check_ctx_t *c, const scan_dims_t *d, const char *name,
                               const mvrt_tensor_t *t, mvrt_dtype_t dtype, int is_output)
{
    dim_rule_t r[3];
    rule_bdl(d, r);
    return check_tensor(c, name, t, 3, "(Bt, Dm, L)", dtype, r, is_output);
}

static mvrt_status_t check_channel_vector(const check_ctx_t *c, const scan_dims_t *d,
                                          const char *name, const mvrt_tensor_t *t, int is_output)
{
    dim_rule_t r[1] = {{d->dim, "channels", "args->u"}};
    return check_tensor(c, name, t, 1, "(Dm,)", MVRT_DTYPE_F32, r, is_output);
}

/* B or C (or dB / dC shaped like them). `rank` is the rank of the input
 * (B or C), which decides constant vs variable. */
static mvrt_status_t check_bc_like(const check_ctx_t *c, const scan_dims_t *d, const char *name,
                                   const mvrt_tensor_t *t, int rank, mvrt_dtype_t input_dtype,
                                   int is_output)
{
    const int cx = d->complex_a;
    if (rank == 2) {
        dim_rule_t r[2] = {{d->dim, "channels", "args->u"}, {d->dstate, "states", "args->A"}};
        return check_tensor(c, name, t, 2, cx ? "(Dm, N) c64, as complex A" : "(Dm, N)",
                            cx ? MVRT_DTYPE_C64 : MVRT_DTYPE_F32, r, is_output);
    }
    /* with complex A, variable B / C hold (re, im) of step l at 2l, 2l + 1 */
    const int64_t steps = cx ? 2 * d->seqlen : d->seqlen;
    const char *steps_label = cx ? "2 x length (complex A)" : "length";
    if (rank == 3) {
        dim_rule_t r[3] = {{d->batch, "batch", "args->u"},
                           {d->dstate, "states", "args->A"},
                           {steps, steps_label, "args->u"}};
        return check_tensor(c, name, t, 3, cx ? "(Bt, N, 2L)" : "(Bt, N, L)", input_dtype, r, is_output);
    }
    dim_rule_t r[4] = {{d->batch, "batch", "args->u"},
                       {d->groups, "groups", d->groups_from},
                       {d->dstate, "states", "args->A"},
                       {steps, steps_label, "args->u"}};
    return check_tensor(c, name, t, 4, cx ? "(Bt, G, N, 2L)" : "(Bt, G, N, L)", input_dtype, r, is_output);
}

/* Groups of a variable B/C input (rank 3: 1; rank 4: shape[1]), after the
 * rank is known to be 2, 3 or 4. */
static mvrt_status_t bc_groups(const check_ctx_t *c, const scan_dims_t *d, const char *name,
                               const mvrt_tensor_t *t, int64_t *out_groups)
{
    if (!t->buffer)
        return mvrt_error_set(INVALID, "%s: %s is required but absent (its buffer is NULL)", c->fn,
                              name);
    if (t->rank < 2 || t->rank > 4)
        return mvrt_error_set(INVALID,
                              "%s: %s has rank %d; expected 2 (Dm, N) constant, 3 (Bt, N, L) or "
                              "4 (Bt, G, N, L) variable",
                              c->fn, name, (int)t->rank);
    int64_t g = t->rank == 4 ? t->shape[1] : 1;
    if (t->rank == 4 && g < 1)
        return mvrt_error_set(INVALID, "%s: %s has %lld groups (shape[1]); empty dimension", c->fn,
                              name, (long long)g);
    if (t->rank == 4 && d->dim % g != 0)
        return mvrt_error_set(INVALID,
                              "%s: %s has %lld groups (shape[1]) but the %lld channels of args->u "
                              "are not divisible by it",
                              c->fn, name, (long long)g, (long long)d->dim);
    *out_groups = g;
    return MVRT_OK;
}

/* Validates args (not outputs or grads) and sets the dims. `c->backend` is
 * filled from args->u when the caller has no stream/backend to go by. */
static mvrt_status_t validate_args(check_ctx_t *c, const mvrt_selective_scan_args_t *a,
                                   scan_dims_t *d)
{
    mvrt_status_t st;
    if (!a)
        return mvrt_error_set(INVALID, "%s: args is NULL", c->fn);

    /* u defines batch, channels and length, and the input dtype. */
    const mvrt_tensor_t *u = &a->u;
    if (!u->buffer)
        return mvrt_error_set(INVALID, "%s: args->u is required but absent (its buffer is NULL)",
                              c->fn);
    if (u->rank != 3)
        return mvrt_error_set(INVALID, "%s: args->u has rank %d; expected 3 (Bt, Dm, L)", c->fn,
                              (int)u->rank);
    if (!is_input_dtype(u->dtype))
        return mvrt_error_set(INVALID, "%s: args->u has dtype %s; expected f32, f16 or bf16", c->fn,
                              mvrt_dtype_name(u->dtype));
    static const char *const bdl[3] = {"batch", "channels", "length"};
    for (int i = 0; i < 3; i++)
        if (u->shape[i] < 1)
            return mvrt_error_set(INVALID, "%s: args->u has %s %lld (shape[%d]); empty dimension",
                                  c->fn, bdl[i], (long long)u->shape[i], i);
    d->batch = u->shape[0];
    d->dim = u->shape[1];
    d->seqlen = u->shape[2];
    if (!c->backend) {
        c->backend = u->buffer->backend;
        c->backend_from = "args->u";
    }
    const mvrt_dtype_t in = u->dtype;
    if ((st = check_layout(c, "args->u", u, 0)) != MVRT_OK)
        return st;

    /* A defines the number of states. */
    const mvrt_tensor_t *A = &a->A;
    if (!A->buffer)
        return mvrt_error_set(INVALID, "%s: args->A is required but absent (its buffer is NULL)",
                              c->fn);
    if (A->rank != 2)
        return mvrt_error_set(INVALID, "%s: args->A has rank %d; expected 2 (Dm, N)", c->fn,
                              (int)A->rank);
    d->complex_a = A->dtype == MVRT_DTYPE_C64;
    if (d->complex_a && in != MVRT_DTYPE_F32)
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED,
                              "%s: complex A (args->A is c64) runs with f32 inputs only; args->u is %s",
                              c->fn, mvrt_dtype_name(in));
    if (A->shape[1] < 1 || A->shape[1] > MVRT_SCAN_MAX_DSTATE)
        return mvrt_error_set(INVALID,
                              "%s: args->A has %lld states (shape[1]); expected 1..%d "
                              "(MVRT_SCAN_MAX_DSTATE)",
                              c->fn, (long long)A->shape[1], MVRT_SCAN_MAX_DSTATE);
    d->dstate = A->shape[1];
    {
        dim_rule_t r[2] = {{d->dim, "channels", "args->u"}, {d->dstate, "states", "args->A"}};
        if ((st = check_tensor(c, "args->A", A, 2, "(Dm, N) f32 or c64", d->complex_a ? MVRT_DTYPE_C64
                                                                                       : MVRT_DTYPE_F32,
                               r, 0)) != MVRT_OK)
            return st;
    }

    if ((st = check_bdl(c, d, "args->delta", &a->delta, in, 0)) != MVRT_OK)
        return st;

    /* B and C: each constant or variable; variable ones must agree on G. */
    int64_t gb, gc;
    if ((st = bc_groups(c, d, "args->B", &a->B, &gb)) != MVRT_OK)
        return st;
    if ((st = bc_groups(c, d, "args->C", &a->C, &gc)) != MVRT_OK)
        return st;
    int bvar = a->B.rank != 2, cvar = a->C.rank != 2;
    if (bvar && cvar && gb != gc)
        return mvrt_error_set(INVALID,
                              "%s: args->C has %lld group(s) but args->B has %lld; variable B and "
                              "C must have the same number of groups",
                              c->fn, (long long)gc, (long long)gb);
    d->groups = bvar ? gb : cvar ? gc : 1;
    d->groups_from = bvar ? "args->B" : "args->C";
    if ((st = check_bc_like(c, d, "args->B", &a->B, a->B.rank, in, 0)) != MVRT_OK)
        return st;
    if ((st = check_bc_like(c, d, "args->C", &a->C, a->C.rank, in, 0)) != MVRT_OK)
        return st;

    if (a->D.buffer && (st = check_channel_vector(c, d, "args->D", &a->D, 0)) != MVRT_OK)
        return st;
    if (a->z.buffer && (st = check_bdl(c, d, "args->z", &a->z, in, 0)) != MVRT_OK)
        return st;
    if (a->delta_bias.buffer &&
        (st = check_channel_vector(c, d, "args->delta_bias", &a->delta_bias, 0)) != MVRT_OK)
        return st;
    if (a->delta_softplus != 0 && a->delta_softplus != 1)
        return mvrt_error_set(INVALID, "%s: args->delta_softplus is %d; expected 0 or 1", c->fn,
                              a->delta_softplus);
    return MVRT_OK;
}

/* ---- resolution into scan params ---------------------------------------- */

static mvrt_scan_operand_t operand(const mvrt_tensor_t *t)
{
    mvrt_scan_operand_t o;
    memset(&o, 0, sizeof o);
    if (!t->buffer)
        return o;
    o.data = (char *)t->buffer->data + t->offset;
    for (int i = 0; i < t->rank && i < 4; i++)
        o.stride[i] = t->strides[i];
    return o;
}

/* Variable B/C as (batch, group, state, step): a rank-3 (Bt, N, L) tensor
 * gets group stride 0. */
static mvrt_scan_operand_t bc_operand(const mvrt_tensor_t *t)
{
    mvrt_scan_operand_t o = operand(t);
    if (t->buffer && t->rank == 3) {
        o.stride[3] = t->strides[2];
        o.stride[2] = t->strides[1];
        o.stride[1] = 0;
    }
    return o;
}

static void fill_args(mvrt_scan_params_t *p, const mvrt_selective_scan_args_t *a,
                      const scan_dims_t *d)
{
    memset(p, 0, sizeof *p);
    p->batch = d->batch;
    p->dim = d->dim;
    p->seqlen = d->seqlen;
    p->dstate = d->dstate;
    p->groups = d->groups;
    p->input_dtype = (int)a->u.dtype;
    p->b_variable = a->B.rank != 2;
    p->c_variable = a->C.rank != 2;
    p->delta_softplus = a->delta_softplus;
    p->complex_a = d->complex_a;
    p->u = operand(&a->u);
    p->delta = operand(&a->delta);
    p->A = operand(&a->A);
    p->B = bc_operand(&a->B);
    p->C = bc_operand(&a->C);
    p->D = operand(&a->D);
    p->z = operand(&a->z);
    p->delta_bias = operand(&a->delta_bias);
}

/* ---- public entry points ------------------------------------------------ */

/* Tensors must live on the stream's backend; with no stream, on the backend
 * of the first tensor checked (u). */
static check_ctx_t ctx_for_stream(const char *fn, const mvrt_stream_t *stream)
{
    check_ctx_t c = {fn, NULL, NULL};
    if (stream) {
        c.backend = stream->backend;
        c.backend_from = "the stream";
    }
    return c;
}

mvrt_status_t mvrt_selective_scan_fwd(mvrt_stream_t *stream, const mvrt_selective_scan_args_t *args,
                                      const mvrt_selective_scan_outputs_t *outputs)
{
    check_ctx_t c = ctx_for_stream("mvrt_selective_scan_fwd", stream);
    scan_dims_t d;
    mvrt_status_t st = validate_args(&c, args, &d);
    if (st != MVRT_OK)
        return st;
    if (!outputs)
        return mvrt_error_set(INVALID, "%s: outputs is NULL", c.fn);
    if ((st = check_bdl(&c, &d, "outputs->out", &outputs->out, args->u.dtype, 1)) != MVRT_OK)
        return st;
    if (outputs->last_state.buffer) {
        dim_rule_t r[3] = {{d.batch, "batch", "args->u"},
                           {d.dim, "channels", "args->u"},
                           {d.dstate, "states", "args->A"}};
        if ((st = check_tensor(&c, "outputs->last_state", &outputs->last_state, 3,
                               d.complex_a ? "(Bt, Dm, N) c64, as complex A" : "(Bt, Dm, N)",
                               d.complex_a ? MVRT_DTYPE_C64 : MVRT_DTYPE_F32, r, 1)) != MVRT_OK)
            return st;
    }
    mvrt_backend_t *be = c.backend;
    if (!be->vt->scan_fwd)
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED,
                              "%s: backend '%s' does not implement the selective scan forward",
                              c.fn, be->name);
    mvrt_scan_params_t p;
    fill_args(&p, args, &d);
    p.out = operand(&outputs->out);
    p.last_state = operand(&outputs->last_state);
    return be->vt->scan_fwd(be->device, mvrt_stream_handle_for(be, stream), &p);
}

/* Validation of the gradients against validated args. */
static mvrt_status_t validate_grads(const check_ctx_t *c, const mvrt_selective_scan_args_t *a,
                                    const scan_dims_t *d, const mvrt_selective_scan_grads_t *g)
{
    mvrt_status_t st;
    const mvrt_dtype_t in = a->u.dtype;
    if (!g)
        return mvrt_error_set(INVALID, "%s: grads is NULL", c->fn);
    if ((st = check_bdl(c, d, "grads->dout", &g->dout, in, 0)) != MVRT_OK)
        return st;
    if ((st = check_bdl(c, d, "grads->du", &g->du, in, 1)) != MVRT_OK)
        return st;
    if ((st = check_bdl(c, d, "grads->ddelta", &g->ddelta, in, 1)) != MVRT_OK)
        return st;
    {
        dim_rule_t r[2] = {{d->dim, "channels", "args->u"}, {d->dstate, "states", "args->A"}};
        if ((st = check_tensor(c, "grads->dA", &g->dA, 2, "(Dm, N) like args->A",
                               d->complex_a ? MVRT_DTYPE_C64 : MVRT_DTYPE_F32, r, 1)) != MVRT_OK)
            return st;
    }
    if ((st = check_bc_like(c, d, "grads->dB", &g->dB, a->B.rank, in, 1)) != MVRT_OK)
        return st;
    if ((st = check_bc_like(c, d, "grads->dC", &g->dC, a->C.rank, in, 1)) != MVRT_OK)
        return st;

    /* Optional gradients: present exactly when their input is. */
    struct {
        const char *gname, *aname;
        const mvrt_tensor_t *gt, *at;
        int kind; /* 0: (Dm,) f32, 1: (Bt, Dm, L) */
    } opt[3] = {
        {"grads->dD", "args->D", &g->dD, &a->D, 0},
        {"grads->dz", "args->z", &g->dz, &a->z, 1},
        {"grads->ddelta_bias", "args->delta_bias", &g->ddelta_bias, &a->delta_bias, 0},
    };
    for (int i = 0; i < 3; i++) {
        if (opt[i].at->buffer && !opt[i].gt->buffer)
            return mvrt_error_set(INVALID, "%s: %s is required because %s is given (its buffer is "
                                  "NULL)", c->fn, opt[i].gname, opt[i].aname);
        if (!opt[i].at->buffer && opt[i].gt->buffer)
            return mvrt_error_set(INVALID, "%s: %s is given but %s is absent; pass it only with "
                                  "%s", c->fn, opt[i].gname, opt[i].aname, opt[i].aname);
        if (!opt[i].gt->buffer)
            continue;
        st = opt[i].kind == 0 ? check_channel_vector(c, d, opt[i].gname, opt[i].gt, 1)
                              : check_bdl(c, d, opt[i].gname, opt[i].gt, in, 1);
        if (st != MVRT_OK)
            return st;
    }
    return MVRT_OK;
}

static mvrt_status_t query_workspace(const check_ctx_t *c, const mvrt_scan_params_t *p,
                                     size_t *out_bytes)
{
    mvrt_backend_t *be = c->backend;
    if (!be->vt->scan_bwd)
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED,
                              "%s: backend '%s' does not implement the selective scan backward",
                              c->fn, be->name);
    size_t bytes = 0;
    if (be->vt->scan_bwd_workspace_size) {
        mvrt_status_t st = be->vt->scan_bwd_workspace_size(be->device, p, &bytes);
        if (st != MVRT_OK)
            return st;
    }
    *out_bytes = bytes;
    return MVRT_OK;
}

mvrt_status_t mvrt_selective_scan_bwd_workspace_size(mvrt_backend_t *backend,
                                                     const mvrt_selective_scan_args_t *args,
                                                     size_t *out_bytes)
{
    check_ctx_t c = {"mvrt_selective_scan_bwd_workspace_size", backend, "backend"};
    if (!backend)
        return mvrt_error_set(INVALID, "%s: backend is NULL", c.fn);
    if (!out_bytes)
        return mvrt_error_set(INVALID, "%s: out_bytes is NULL", c.fn);
    scan_dims_t d;
    mvrt_status_t st = validate_args(&c, args, &d);
    if (st != MVRT_OK)
        return st;
    /* The plugin sizes the workspace from the forward arguments only; the
     * backward fields of the params are left empty here. */
    mvrt_scan_params_t p;
    fill_args(&p, args, &d);
    size_t bytes = 0;
    if ((st = query_workspace(&c, &p, &bytes)) != MVRT_OK)
        return st;
    *out_bytes = bytes;
    return MVRT_OK;
}

/* Frees a temporary workspace after work queued on `stream` that uses it.
 * mem_free is ordered on the default stream only, so work on another stream
 * is made to precede it through an event; if that fails, we wait. */
static void release_temp_workspace(mvrt_backend_t *be, void *stream, void *ptr)
{
    const mvrt_plugin_vtable_t *vt = be->vt;
    void *def = vt->default_stream(be->device);
    if (stream != def) {
        char saved[MVRT_ERROR_MAX];
        mvrt_error_save(saved, sizeof saved);
        void *ev = NULL;
        int ordered = vt->event_create(be->device, &ev) == MVRT_OK;
        if (ordered) {
            ordered = vt->event_record(be->device, ev, stream) == MVRT_OK &&
                      vt->stream_wait_event(be->device, def, ev) == MVRT_OK;
            vt->event_destroy(be->device, ev);
        }
        if (!ordered)
            (void)vt->stream_synchronize(be->device, stream);
        mvrt_error_restore(saved);
    }
    vt->mem_free(be->device, ptr);
}

mvrt_status_t mvrt_selective_scan_bwd(mvrt_stream_t *stream, const mvrt_selective_scan_args_t *args,
                                      const mvrt_selective_scan_grads_t *grads,
                                      mvrt_buffer_t *workspace)
{
    check_ctx_t c = ctx_for_stream("mvrt_selective_scan_bwd", stream);
    scan_dims_t d;
    mvrt_status_t st = validate_args(&c, args, &d);
    if (st != MVRT_OK)
        return st;
    if ((st = validate_grads(&c, args, &d, grads)) != MVRT_OK)
        return st;

    mvrt_backend_t *be = c.backend;
    mvrt_scan_params_t p;
    fill_args(&p, args, &d);
    size_t needed = 0;
    if ((st = query_workspace(&c, &p, &needed)) != MVRT_OK)
        return st;
    p.dout = operand(&grads->dout);
    p.du = operand(&grads->du);
    p.ddelta = operand(&grads->ddelta);
    p.dA = operand(&grads->dA);
    p.dB = bc_operand(&grads->dB);
    p.dC = bc_operand(&grads->dC);
    p.dD = operand(&grads->dD);
    p.dz = operand(&grads->dz);
    p.ddelta_bias = operand(&grads->ddelta_bias);

    if (workspace) {
        if (workspace->backend != be)
            return mvrt_error_set(INVALID,
                                  "%s: workspace belongs to a different backend (%s %p) than %s "
                                  "(%s %p)",
                                  c.fn, workspace->backend->name, (const void *)workspace->backend,
                                  c.backend_from, be->name, (const void *)be);
        if (workspace->size < needed)
            return mvrt_error_set(INVALID,
                                  "%s: workspace has %zu bytes but these arguments need %zu "
                                  "(see mvrt_selective_scan_bwd_workspace_size)",
                                  c.fn, workspace->size, needed);
        if ((uintptr_t)workspace->data % MVRT_SCAN_WORKSPACE_ALIGN != 0)
            return mvrt_error_set(INVALID, "%s: workspace address %p is not %d-byte aligned", c.fn,
                                  workspace->data, MVRT_SCAN_WORKSPACE_ALIGN);
        p.workspace = needed ? workspace->data : NULL;
        p.workspace_bytes = needed ? workspace->size : 0;
    }

    void *sh = mvrt_stream_handle_for(be, stream);
    void *temp = NULL;
    if (!workspace && needed > 0) {
        if ((st = mvrt_rt_device_alloc(c.fn, be, needed, &temp)) != MVRT_OK)
            return st;
        p.workspace = temp;
        p.workspace_bytes = needed;
    }
    st = be->vt->scan_bwd(be->device, sh, &p);
    if (temp)
        release_temp_workspace(be, sh, temp);
    return st;
}
