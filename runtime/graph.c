/* Graphs: a model planned for one batch and input size, then run many times.
 *
 * Building walks the model twice with the same emitter code. The first
 * pass ("plan") hands out fake addresses: every workspace tensor an
 * emitter asks for (buf) is a virtual buffer with an address range of its
 * own, so the plan learns each one's size and, from the nodes whose
 * parameters point into it, its live range (first to last node). Offsets
 * are then assigned so that buffers whose live ranges overlap never share
 * a byte and the others reuse the same memory (plan_offsets: each at the
 * lowest offset that fits, in a few orders, the smallest plan kept; at
 * large batches the stem and the ConvBlocks also run in two halves of the
 * batch: batch_split), one workspace is
 * allocated, and the second pass ("emit") records the nodes with the
 * final pointers. Nodes run in order on one stream (a GPU kernel launched
 * as a dependent launch writes nothing before its grid-dependency wait:
 * ops/common/gpu_vendor.h), so a node may overwrite what an earlier node
 * read. The graph's input and output live for the whole graph and beyond
 * (the caller writes and reads them between runs). Running queues the
 * nodes; on backends with graph capture (CUDA/HIP) the first run is
 * captured and every run replays the captured graph.
 *
 * Data layout inside a block (Bw sequences of L tokens, width C, h = C/2):
 *   X   (Bw, L, C)      the residual stream, updated in place
 *   T   (Bw, L, C)      LayerNorm output (16-bit in 16-bit graphs); O: attention output
 *   XZ  (Bw, L, C)      in_proj output; QKV (Bw, L, 3C); MLP hidden (Bw, L, 4C)
 *   MX  (Bw, h, L)      silu(conv1d(x)), channel-major: the scan's u
 *   DBL (Bw, R+2N, L)   x_proj output per sequence: dt rows, B rows, C rows
 *   DT  (Bw, h, L)      dt_proj output: the scan's delta
 *   YZ  (Bw, C, L)      rows [0, h): the scan's output y, rows [h, C): z
 * so x_proj, dt_proj and out_proj are batched GEMMs that read and write
 * these layouts directly and no transposes are materialized. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "model_internal.h"
#include "ops/common/cpu_half.h"

#define INVALID MVRT_ERR_INVALID_ARGUMENT

/* The plan's fake address of virtual buffer k: VB_FAKE_BASE + k * 2^VB_SPAN_BITS
 * (no buffer reaches 2^40 bytes: buf refuses one) */
#define VB_FAKE_BASE ((uintptr_t)1 << 52)
#define VB_SPAN_BITS 40
#define VB_MAX ((size_t)1 << 11) /* a valid config needs < 1 400 (4 stages of <= 64 blocks, <= 8 each) */
_Static_assert(sizeof(uintptr_t) >= 8, "the plan's fake addresses need 64-bit pointers");

/* A virtual buffer: bytes (a multiple of 256), the first and last node
 * that reference it (first > last: none; pinned: the whole graph), and
 * its offset in the workspace once planned. */
typedef struct vbuf {
    size_t bytes, first, last, offset;
    int pinned;
    int zeroed; /* pinned, and zero bytes from graph creation on (buf_zeroed) */
} vbuf_t;

enum node_type { NODE_OP, NODE_SCAN, NODE_COPY };

typedef struct gnode {
    int type;
    mvrt_op_params_t op;
    mvrt_scan_params_t scan;
    void *dst; const void *src; size_t bytes;  /* NODE_COPY */
} gnode_t;

struct mvrt_graph {
    mvrt_model_t *model;
    mvrt_backend_t *backend;
    mvrt_graph_options_t opt;
    mvrt_buffer_t *workspace;
    size_t workspace_bytes;
    /* 16-bit graphs on backends that take 16-bit weights (linear b16):
     * the model's weight buffer rounded to the graph's 16-bit type once,
     * element for element (make_weights16); NULL otherwise */
    mvrt_buffer_t *weights16;
    /* the float ranges [offset, offset + count) of the model's weights that
     * ops multiply in 16 bits (recorded by the plan: note_weight16_range;
     * the linears reading weights16, every 16-bit conv), the only ones
     * whose fp16 range make_weights16 checks */
    struct weight_range { size_t offset, count; int f16; } *w16_ranges; /* f16: read as fp16 */
    size_t w16_count, w16_cap;
    /* 16-bit graphs with weights16: the filters of every conv between two
     * 16-bit maps, prepared once in the layout the op's weight16 and
     * bias_stored name (make_conv_filters16); NULL where there is none */
    mvrt_buffer_t *conv_filters16;
    struct conv_filter {
        size_t weight, bias;              /* float offsets into the model's weights (bias: SIZE_MAX for none) */
        int64_t K, kp, C, cp, RS;         /* out / stored out, in / stored in channels, taps */
        int t16;                          /* the 16-bit type the filter is rounded to (the conv's x and math) */
        size_t offset;                    /* bytes into conv_filters16: the filters, then bias_offset */
    } *filters;
    size_t filter_count, filter_cap, filter_bytes;
    size_t in_offset, out_offset;         /* bytes into the workspace */
    size_t scratch_offset, scratch_bytes;
    gnode_t *nodes;
    size_t count, cap;
    int32_t in_rank, out_rank;
    int64_t in_shape[4], out_shape[4];
    double flops;                         /* per run, multiply-adds counted as 2 */
    void *exec;                           /* captured graph (GPU) */
    int capture_failed;
    int64_t runs;
};

typedef struct builder {
    mvrt_graph_t *g;
    int emit;                             /* 0: plan, 1: emit */
    vbuf_t *vb;                           /* the virtual buffers (the plan's; emit reads their offsets) */
    size_t nvb, vb_cap;                   /* plan: count and capacity; emit: handed out so far, the plan's count */
    size_t nodes;                         /* plan: nodes added so far */
    gnode_t pending;                      /* plan: the node last added (its references noted at the next) */
    char *base;                           /* emit: the workspace's base */
    const float *weights;
    mvrt_status_t status;
    int store16;                          /* 16-bit storage type or 0 (see backend_takes_storage16) */
    int map16;                            /* maps NHWC 16-bit: store16, or 0 (see map_buf); the token stages' type */
    int conv16;                           /* the conv stages' maps and convs: map16, or fp16 in a bf16
                                             graph (mvrt_graph_create's plans) */
    int map16_declined;                   /* plan: the backend declined a map16 form */
    int stream16;                         /* the blocks' residual stream is 16-bit of this type, or 0 (emit_stage) */
    const uint16_t *weights16;            /* see use_weight16 (a fake base while planning) */
    char *conv_filters16;                 /* see use_conv_filters16 (likewise) */
} builder_t;

/* ---- builder helpers ----------------------------------------------------- */

/* A new workspace tensor of n elements, 16-bit ones when half (else
 * floats): a virtual buffer (plan: with a fake address; emit: its planned
 * place). Its memory is live from the first node that references it to
 * the last, so a buffer is asked for where its producer is emitted. */
static float *buf(builder_t *b, int64_t n, int half)
{
    static float none;
    if (b->status != MVRT_OK)
        return &none;
    const uint64_t bytes = ((uint64_t)n * (half ? 2u : 4u) + 255) & ~(uint64_t)255;
    if (b->emit) {
        if (b->nvb >= b->vb_cap) { /* the walks disagree: never expected */
            b->status = mvrt_error_set(MVRT_ERR_INTERNAL, "mvrt_graph_create: the emit pass asked for more buffers "
                                                          "than the plan");
            return &none;
        }
        return (float *)(b->base + b->vb[b->nvb++].offset);
    }
    if (n < 0 || n > ((int64_t)1 << 37) || bytes >= ((uint64_t)1 << VB_SPAN_BITS)) {
        b->status = mvrt_error_set(INVALID, "mvrt_graph_create: a workspace tensor of %lld elements is too large "
                                            "(batch or input size)", (long long)n);
        return &none;
    }
    if (b->nvb == b->vb_cap) {
        const size_t cap = b->vb_cap ? 2 * b->vb_cap : 64;
        vbuf_t *v = cap <= VB_MAX ? mvrt_rt_realloc(b->vb, cap * sizeof *v) : NULL;
        if (!v) {
            b->status = cap <= VB_MAX ? mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "mvrt_graph_create: out of host memory")
                                      : mvrt_error_set(MVRT_ERR_INTERNAL, "mvrt_graph_create: more than %zu "
                                                                          "workspace tensors", VB_MAX);
            return &none;
        }
        b->vb = v, b->vb_cap = cap;
    }
    b->vb[b->nvb] = (vbuf_t){(size_t)bytes, SIZE_MAX, 0, 0, 0, 0};
    return (float *)(VB_FAKE_BASE + ((uintptr_t)b->nvb++ << VB_SPAN_BITS));
}

/* Plan: the virtual buffer that p points into, or -1. */
static long vb_of(const builder_t *b, uintptr_t p)
{
    if (p < VB_FAKE_BASE)
        return -1;
    const uintptr_t k = (p - VB_FAKE_BASE) >> VB_SPAN_BITS;
    return k < b->nvb ? (long)k : -1;
}

/* Plan: node `index` references every virtual buffer that a pointer in
 * its parameters points into (read as aligned words: a word that only
 * looks like such a pointer lengthens a live range, which costs memory,
 * never correctness). */
static void note_refs(builder_t *b, const gnode_t *n, size_t index)
{
    const unsigned char *bytes = (const unsigned char *)n;
    for (size_t at = 0; at + sizeof(uintptr_t) <= sizeof *n; at += sizeof(uintptr_t)) {
        uintptr_t w;
        memcpy(&w, bytes + at, sizeof w);
        const long k = vb_of(b, w);
        if (k < 0)
            continue;
        vbuf_t *v = &b->vb[k];
        if (v->first > index)
            v->first = index;
        if (v->last < index)
            v->last = index;
    }
}

/* Plan: a buffer the caller reads or writes between runs (the graph's
 * input and output): live over the whole graph. */
static void pin(builder_t *b, const float *p)
{
    const long k = b->emit ? -1 : vb_of(b, (uintptr_t)p);
    if (k >= 0)
        b->vb[k].pinned = 1;
}

/* A workspace tensor as buf's that holds zeros when the graph is created
 * and is live over the whole graph, so that bytes no op writes (a padded
 * row's tail) stay zero in every run. */
/* Element i of a buffer of floats, or (half) of 16-bit values: buffers
 * keep the float * type whatever they hold. */
static float *elem_at(float *base, int64_t i, int half)
{
    return (float *)(void *)((char *)base + i * (half ? 2 : 4));
}

static float *buf_zeroed(builder_t *b, int64_t n, int half)
{
    float *t = buf(b, n, half);
    const long k = b->emit || b->status != MVRT_OK ? -1 : vb_of(b, (uintptr_t)t);
    if (k >= 0)
        b->vb[k].pinned = b->vb[k].zeroed = 1;
    return t;
}

static const float *weight(builder_t *b, const char *prefix, const char *leaf)
{
    char name[MV_PARAM_NAME_MAX];
    int len = snprintf(name, sizeof name, "%s%s", prefix, leaf);
    const mv_param_t *p = len < (int)sizeof name ? mv_model_param(b->g->model, name) : NULL;
    if (!p) {
        if (b->status == MVRT_OK)
            b->status = mvrt_error_set(MVRT_ERR_INTERNAL, "mvrt_graph_create: the model has no parameter '%s'", name);
        return b->weights;
    }
    return b->weights + p->offset;
}

/* Makes room for one more element in a plan's array (*arr, *cap
 * elements of size bytes, count in use), doubling it; 0 with b->status
 * set when host memory runs out. */
static int grow_plan_array(builder_t *b, void **arr, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return 1;
    const size_t n = *cap ? 2 * *cap : 32;
    void *p = mvrt_rt_realloc(*arr, n * size);
    if (!p) {
        b->status = mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "mvrt_graph_create: out of host memory");
        return 0;
    }
    *arr = p, *cap = n;
    return 1;
}

/* Records that an op multiplies the count floats at w (model weights) in
 * the 16-bit type t16: make_weights16 checks the fp16 range of an fp16
 * graph's (where the backend keeps 16-bit weights), weights_fit_f16 that
 * of a bf16 graph's fp16 conv stages (on every backend: their maps are
 * fp16 even where the weights stay fp32). */
static void note_weight16_range(builder_t *b, const float *w, int64_t count, int t16)
{
    mvrt_graph_t *g = b->g;
    const int conv_f16 = t16 == MVRT_STORAGE16_F16 && b->conv16 != b->map16;
    if ((!b->weights16 && !conv_f16) || b->emit || b->status != MVRT_OK)
        return;
    if (!grow_plan_array(b, (void **)&g->w16_ranges, &g->w16_cap, g->w16_count, sizeof *g->w16_ranges))
        return;
    g->w16_ranges[g->w16_count++] =
        (struct weight_range){(size_t)(w - b->weights), (size_t)count, t16 == MVRT_STORAGE16_F16};
}

/* Points *w (a pointer into the model's weights that an op reads: count
 * floats) at its 16-bit copy in the graph's weights16 where the graph
 * keeps one; returns the op's 16-bit field for that operand (a16 / b16:
 * the type, or 0). The plan records the range (make_weights16 checks it). */
static int use_weight16(builder_t *b, const float **w, int64_t count)
{
    if (!b->weights16)
        return 0;
    note_weight16_range(b, *w, count, b->store16);
    *w = (const float *)(const void *)(b->weights16 + (*w - b->weights));
    return b->store16;
}

/* Bytes of a prepared conv filter's 16-bit weights, where its bias starts. */
static size_t filter_bias_offset(const struct conv_filter *f)
{
    return ((size_t)(f->kp * f->RS * f->cp) * sizeof(uint16_t) + 255) & ~(size_t)255;
}

/* Points the 16-bit conv c (between two 16-bit maps) at its filters
 * prepared once in the graph's conv_filters16 (weight16, bias_stored:
 * mv_op_params.h) where the graph keeps 16-bit weights. The plan records
 * each filter once (a conv split over the batch reads one). */
static void use_conv_filters16(builder_t *b, mvrt_conv2d_params_t *c)
{
    if (!b->weights16 || !c->x_nhwc16 || !c->y_nhwc16 || b->status != MVRT_OK)
        return;
    mvrt_graph_t *g = b->g;
    const struct conv_filter want = {
        .weight = (size_t)(c->weight - b->weights), .bias = c->bias ? (size_t)(c->bias - b->weights) : SIZE_MAX,
        .K = c->out_channels, .kp = mvrt_conv2d_y_stored(c), .C = c->in_channels, .cp = mvrt_conv2d_x_stored(c),
        .RS = (int64_t)c->kernel * c->kernel, .t16 = c->x_nhwc16};
    size_t i = 0;
    while (i < g->filter_count &&
           (g->filters[i].weight != want.weight || g->filters[i].bias != want.bias || g->filters[i].kp != want.kp ||
            g->filters[i].cp != want.cp || g->filters[i].K != want.K || g->filters[i].C != want.C ||
            g->filters[i].t16 != want.t16))
        i++;
    if (i == g->filter_count) {
        if (b->emit) { /* the walks disagree: never expected */
            b->status = mvrt_error_set(MVRT_ERR_INTERNAL, "mvrt_graph_create: the emit pass met a conv filter the "
                                                          "plan did not prepare");
            return;
        }
        if (!grow_plan_array(b, (void **)&g->filters, &g->filter_cap, g->filter_count, sizeof *g->filters))
            return;
        g->filters[i] = want;
        g->filters[i].offset = g->filter_bytes;
        g->filter_bytes += filter_bias_offset(&want) + (((size_t)want.kp * sizeof(float) + 255) & ~(size_t)255);
        g->filter_count++;
    }
    c->weight16 = b->conv_filters16 + g->filters[i].offset;
    c->bias_stored = (const float *)(const void *)(b->conv_filters16 + g->filters[i].offset +
                                                   filter_bias_offset(&g->filters[i]));
}

static gnode_t *add_node(builder_t *b, int type)
{
    static gnode_t dummy;
    if (!b->emit && b->status == MVRT_OK) {
        /* the previous node is complete now (callers fill a node right
         * after adding it) */
        if (b->nodes)
            note_refs(b, &b->pending, b->nodes - 1);
        b->nodes++;
        memset(&b->pending, 0, sizeof b->pending);
        b->pending.type = type;
        return &b->pending;
    }
    if (!b->emit || b->status != MVRT_OK)
        return memset(&dummy, 0, sizeof dummy);
    mvrt_graph_t *g = b->g;
    if (g->count == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        gnode_t *n = mvrt_rt_realloc(g->nodes, cap * sizeof *n);
        if (!n) {
            b->status = mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "mvrt_graph_create: out of host memory");
            return memset(&dummy, 0, sizeof dummy);
        }
        g->nodes = n, g->cap = cap;
    }
    gnode_t *n = &g->nodes[g->count++];
    memset(n, 0, sizeof *n);
    n->type = type;
    return n;
}

static double op_flops(const mvrt_op_params_t *op)
{
    switch (op->kind) {
    case MVRT_OP_LINEAR: {
        const mvrt_linear_params_t *l = &op->u.linear;
        return 2.0 * (double)l->batch * (double)l->M * (double)l->N * (double)l->K;
    }
    case MVRT_OP_CONV2D: {
        const mvrt_conv2d_params_t *c = &op->u.conv2d;
        return 2.0 * (double)c->batch * (double)c->out_channels * (double)c->out_h * (double)c->out_w *
               (double)c->in_channels * c->kernel * c->kernel;
    }
    case MVRT_OP_ATTENTION: {
        const mvrt_attention_params_t *a = &op->u.attention;
        return 4.0 * (double)a->batch * a->heads * (double)a->length * (double)a->length * a->head_dim;
    }
    case MVRT_OP_MLP: { /* fc1 and fc2 */
        const mvrt_mlp_params_t *q = &op->u.mlp;
        return 4.0 * (double)q->rows * (double)q->channels * (double)q->hidden;
    }
    case MVRT_OP_MIXER_PROJ: { /* x_proj and dt_proj, as the linears it replaces */
        const mvrt_mixer_proj_params_t *q = &op->u.mixer_proj;
        const double M = (double)q->batch * (double)q->length, h = (double)q->channels / 2, R = (double)q->dt_rank;
        return 2.0 * M * (h * (R + 2.0 * (double)q->dstate) + R * h);
    }
    default: return 0.0;
    }
}

static void add_op(builder_t *b, const mvrt_op_params_t *op)
{
    if (b->emit)
        b->g->flops += op_flops(op);
    mvrt_backend_t *be = b->g->backend;
    if (!b->emit && be->vt->op_scratch_size && b->status == MVRT_OK) {
        size_t need = 0;
        mvrt_status_t st = be->vt->op_scratch_size(be->device, op, &need);
        if (st != MVRT_OK)
            b->status = st;
        else if (need > b->g->scratch_bytes)
            b->g->scratch_bytes = need;
    }
    gnode_t *n = add_node(b, NODE_OP);
    n->op = *op;
}

static void add_copy(builder_t *b, float *dst, const float *src, int64_t floats)
{
    gnode_t *n = add_node(b, NODE_COPY);
    n->dst = dst, n->src = src, n->bytes = (size_t)floats * sizeof(float);
}

/* Whether the backend takes op (a fused form it may decline for some
 * sizes): asked through op_scratch_size, the thread's message left as it
 * was. */
static int backend_takes(mvrt_backend_t *be, const mvrt_op_params_t *op)
{
    if (!be->vt->op_scratch_size)
        return 0;
    char saved[MVRT_ERROR_MAX];
    size_t bytes = 0;
    mvrt_error_save(saved, sizeof saved);
    const int ok = be->vt->op_scratch_size(be->device, op, &bytes) == MVRT_OK;
    mvrt_error_restore(saved);
    return ok;
}

/* 16-bit math (bf16, fp16) on a backend that takes the 16-bit storage op
 * forms of that type (every backend now; the CPU with fp32 math through
 * scratch): activations read only by a 16-bit GEMM (the LayerNorm outputs
 * before in_proj / qkv / fc1, the MLP hidden) or by a 16-bit attention
 * that the backend takes (q, k, v and its output) are stored in 16 bits by
 * their producers, which saves a rounding pass over each of them on GPUs
 * and makes the CPU's 16-bit graph round the same activations. Asked once
 * per graph, through op_scratch_size, leaving the thread's message as it
 * was. */
static int backend_takes_storage16(mvrt_backend_t *be, int type16)
{
    mvrt_op_params_t probe = {.kind = MVRT_OP_LAYERNORM};
    probe.u.layernorm.rows = probe.u.layernorm.cols = 1;
    probe.u.layernorm.x_ld = probe.u.layernorm.y_ld = 1;
    probe.u.layernorm.y16 = type16;
    return backend_takes(be, &probe);
}
static int store16(const builder_t *b) { return b->store16; }

/* 16-bit weights: the backend takes a linear whose B is stored in the
 * graph's 16-bit type (b16: GPU backends with a vendor GEMM of that type).
 * Asked once per graph. */
static int backend_takes_weights16(mvrt_backend_t *be, int math, int type16)
{
    mvrt_op_params_t probe = {.kind = MVRT_OP_LINEAR};
    mvrt_linear_params_t *l = &probe.u.linear;
    l->batch = l->M = l->N = l->K = 1;
    l->lda = l->ldb = l->ldy = 1;
    l->trans_b = 1;
    l->math = math;
    l->b16 = type16;
    l->b_constant = 1; /* a weight (the CPU takes 16-bit activations only) */
    return backend_takes(be, &probe);
}

/* A 16-bit residual stream of type16 (see emit_stage): the backend takes
 * a LayerNorm of 16-bit rows and a linear that accumulates onto 16-bit
 * rows. Asked through op_scratch_size, leaving the thread's message as it
 * was. */
static int backend_takes_stream16(mvrt_backend_t *be, int type16)
{
    mvrt_op_params_t ln = {.kind = MVRT_OP_LAYERNORM};
    ln.u.layernorm.rows = ln.u.layernorm.cols = 1;
    ln.u.layernorm.x_ld = ln.u.layernorm.y_ld = 1;
    ln.u.layernorm.x16 = ln.u.layernorm.y16 = type16;
    mvrt_op_params_t lin = {.kind = MVRT_OP_LINEAR};
    mvrt_linear_params_t *l = &lin.u.linear;
    l->batch = l->M = l->N = l->K = 1;
    l->lda = l->ldb = l->ldy = 1;
    l->trans_b = 1;
    l->math = type16 == MVRT_STORAGE16_F16 ? MVRT_MATH_FP16 : MVRT_MATH_BF16;
    l->a16 = l->y16 = type16;
    l->beta = 1.0f;
    return backend_takes(be, &ln) && backend_takes(be, &lin);
}

enum { DENSE_A16 = 1, DENSE_Y16 = 2 }; /* op_dense storage flags */

#define MV_LAYERNORM_EPS 1e-5f /* MambaVision's nn.LayerNorm default */

static void op_layernorm(builder_t *b, int64_t rows, int64_t cols, const float *x, float *y,
                         const char *prefix, const char *norm, int y16)
{
    char leaf[64];
    mvrt_op_params_t op = {.kind = MVRT_OP_LAYERNORM};
    mvrt_layernorm_params_t *p = &op.u.layernorm;
    p->rows = rows, p->cols = cols, p->x = x, p->x_ld = cols, p->y = y, p->y_ld = cols, p->eps = MV_LAYERNORM_EPS;
    p->y16 = y16 ? store16(b) : 0;
    p->x16 = b->stream16; /* every LayerNorm reads the blocks' residual stream */
    snprintf(leaf, sizeof leaf, "%s.weight", norm);
    p->weight = weight(b, prefix, leaf);
    snprintf(leaf, sizeof leaf, "%s.bias", norm);
    p->bias = weight(b, prefix, leaf);
    add_op(b, &op);
}

/* The fields of a PyTorch Linear `layer` over the rows of x (M, K) into
 * y (M, N), one GEMM against its weight; bias_leaf: the bias parameter's
 * leaf ("bias", the folded "ln_bias") or NULL for none. */
static void dense_params(builder_t *b, mvrt_op_params_t *op, int64_t M, int64_t N, int64_t K, const float *x, float *y,
                         const char *prefix, const char *layer, const char *bias_leaf, int act)
{
    char leaf[96];
    memset(op, 0, sizeof *op);
    op->kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *p = &op->u.linear;
    p->batch = 1, p->M = M, p->N = N, p->K = K;
    p->A = x, p->lda = K;
    snprintf(leaf, sizeof leaf, "%s.weight", layer);
    p->B = weight(b, prefix, leaf), p->ldb = K, p->trans_b = 1;
    p->b_constant = 1;
    p->Y = y, p->ldy = N;
    if (bias_leaf) {
        snprintf(leaf, sizeof leaf, "%s.%s", layer, bias_leaf);
        p->bias = weight(b, prefix, leaf);
    }
    p->activation = act;
    p->math = b->g->opt.math;
}

/* Y (M, N) = act(X (M, K) W^T + bias) [+ R]: a PyTorch Linear over rows,
 * one GEMM; residual R (M, N): NULL for none, Y itself to accumulate in
 * place, or another matrix (act NONE with either). A linear onto the
 * residual stream stores it as the stream is (16-bit when stream16). */
static void op_dense(builder_t *b, int64_t M, int64_t N, int64_t K, const float *x, float *y,
                     const char *prefix, const char *layer, int has_bias, int act, const float *residual,
                     int storage)
{
    mvrt_op_params_t op;
    dense_params(b, &op, M, N, K, x, y, prefix, layer, has_bias ? "bias" : NULL, act);
    op.u.linear.beta = residual ? 1.0f : 0.0f;
    op.u.linear.residual = residual != y ? residual : NULL;
    op.u.linear.a16 = storage & DENSE_A16 ? store16(b) : 0;
    op.u.linear.y16 = (storage & DENSE_Y16) || (residual && b->stream16) ? store16(b) : 0;
    op.u.linear.b16 = use_weight16(b, &op.u.linear.B, N * K);
    add_op(b, &op);
}

/* Y (M, N) = act(LayerNorm(X) W^T + bias) with the LayerNorm `norm` over
 * X's C = K columns: one linear with the LayerNorm folded in
 * (ln_weight, with the model's derived <layer>.ln_colsum / .ln_bias)
 * where the backend takes it (the CUDA cluster GEMM: few rows, fp32;
 * plan and emit ask the same), else LayerNorm into T, then the linear.
 * storage: op_dense's bf16 flags for the unfused pair (with bf16 storage
 * the backend is not asked: the fused form computes in fp32). */
static void op_norm_dense(builder_t *b, int64_t M, int64_t N, int64_t K, const float *X, float *T, float *Y,
                          const char *prefix, const char *norm, const char *layer, int has_bias, int act,
                          int storage)
{
    if (!storage) {
        char leaf[96];
        mvrt_op_params_t op;
        dense_params(b, &op, M, N, K, X, Y, prefix, layer, "ln_bias", act);
        snprintf(leaf, sizeof leaf, "%s.weight", norm);
        op.u.linear.ln_weight = weight(b, prefix, leaf);
        snprintf(leaf, sizeof leaf, "%s.ln_colsum", layer);
        op.u.linear.ln_colsum = weight(b, prefix, leaf);
        op.u.linear.ln_eps = MV_LAYERNORM_EPS;
        if (backend_takes(b->g->backend, &op)) {
            add_op(b, &op);
            return;
        }
    }
    op_layernorm(b, M, K, X, T, prefix, norm, (storage & DENSE_A16) != 0);
    op_dense(b, M, N, K, T, Y, prefix, layer, has_bias, act, NULL, storage);
}

/* x += MLP(LayerNorm2(x)): one MVRT_OP_MLP where the backend takes it
 * (the CUDA cluster kernel for few rows in fp32: ops/mv/mlp_gpu_cluster.cuh;
 * plan and emit ask the same), else LayerNorm (or its fold), fc1 + GELU,
 * fc2 + residual. */
static void emit_mlp(builder_t *b, const char *p, int64_t M, int64_t C, float *X)
{
    int64_t hidden = (int64_t)b->g->model->config.mlp_ratio * C;
    if (b->g->opt.math == MVRT_MATH_FP32) {
        mvrt_op_params_t op;
        memset(&op, 0, sizeof op);
        op.kind = MVRT_OP_MLP;
        mvrt_mlp_params_t *q = &op.u.mlp;
        q->rows = M, q->channels = C, q->hidden = hidden, q->x = X;
        q->ln_weight = weight(b, p, "norm2.weight"), q->ln_bias = weight(b, p, "norm2.bias");
        q->ln_eps = MV_LAYERNORM_EPS;
        q->fc1_w = weight(b, p, "mlp.fc1.weight"), q->fc1_b = weight(b, p, "mlp.fc1.bias");
        q->fc2_w = weight(b, p, "mlp.fc2.weight"), q->fc2_b = weight(b, p, "mlp.fc2.bias");
        q->activation = MVRT_ACT_GELU_ERF;
        if (backend_takes(b->g->backend, &op)) {
            add_op(b, &op);
            return;
        }
    }
    const int s16 = store16(b);
    float *T = buf(b, M * C, s16);      /* norm2's output (unless folded) */
    float *H = buf(b, M * hidden, s16); /* the hidden layer */
    op_norm_dense(b, M, hidden, C, X, T, H, p, "norm2", "mlp.fc1", 1, MVRT_ACT_GELU_ERF,
                  s16 ? DENSE_A16 | DENSE_Y16 : 0);
    op_dense(b, M, C, hidden, H, X, p, "mlp.fc2", 1, MVRT_ACT_NONE, X, s16 ? DENSE_A16 : 0);
}

/* The fused form of the mixer's token-local middle (below), its params
 * in *op; 1 when the backend takes it for these sizes. */
static int mixer_proj_fused(builder_t *b, const char *p, int64_t Bw, int64_t L, int64_t C, const float *XZ,
                            float *MX, float *DBL, float *DT, float *YZ, mvrt_op_params_t *op)
{
    const mvrt_model_config_t *cfg = &b->g->model->config;
    memset(op, 0, sizeof *op);
    op->kind = MVRT_OP_MIXER_PROJ;
    mvrt_mixer_proj_params_t *mp = &op->u.mixer_proj;
    mp->batch = Bw, mp->length = L, mp->channels = C, mp->dstate = cfg->d_state, mp->dt_rank = mv_dt_rank((int)C);
    mp->width = cfg->d_conv;
    mp->xz = XZ, mp->u = MX, mp->yz = YZ, mp->dbl = DBL, mp->dt = DT;
    mp->conv_x_w = weight(b, p, "mixer.conv1d_x.weight"), mp->conv_z_w = weight(b, p, "mixer.conv1d_z.weight");
    mp->x_proj_w = weight(b, p, "mixer.x_proj.weight");
    mp->dt_proj_w = weight(b, p, "mixer.dt_proj.weight"), mp->dt_bias = weight(b, p, "mixer.dt_proj.bias");
    mp->dt_softplus = 1;
    return backend_takes(b->g->backend, op);
}

/* silu(conv1d) of both halves of XZ in one op, token-major in,
 * channel-major out: x to MX (the scan's u; rows Lp apart:
 * mixer_token_stride), z straight into the lower half of YZ (rows L
 * apart); xz16: XZ is 16-bit; MX16 (or NULL): a 16-bit copy of MX;
 * y16: MX and YZ are 16-bit (the 16-bit chain: mixer_storage16). */
static void mixer_conv_op(builder_t *b, const char *p, int64_t Bw, int64_t L, int64_t Lp, int64_t C, const float *XZ,
                          int xz16, float *MX, float *MX16, float *YZ, int y16, mvrt_op_params_t *op)
{
    const int64_t h = C / 2;
    memset(op, 0, sizeof *op);
    op->kind = MVRT_OP_DWCONV1D_SILU;
    mvrt_dwconv1d_params_t *q = &op->u.dwconv1d;
    q->batch = Bw, q->channels = C, q->length = L, q->width = b->g->model->config.d_conv;
    q->x = XZ;
    q->x_stride[0] = L * C, q->x_stride[1] = 1, q->x_stride[2] = C;
    q->x16 = xz16 ? store16(b) : 0;
    q->y = MX;
    q->y_stride[0] = h * Lp, q->y_stride[1] = Lp, q->y_stride[2] = 1;
    q->weight = weight(b, p, "mixer.conv1d_x.weight");
    q->split = h;
    q->y2 = elem_at(YZ, h * L, y16);
    q->y2_stride[0] = C * L, q->y2_stride[1] = L, q->y2_stride[2] = 1;
    q->weight2 = weight(b, p, "mixer.conv1d_z.weight");
    q->y_copy = MX16;
    q->y_copy16 = MX16 ? store16(b) : 0;
    q->y16 = y16 ? store16(b) : 0;
}

/* x_proj per sequence: DBL_b (E, Lp) = W (E, h) . U_b (h, Lp), U = MX, or
 * its 16-bit copy MX16 (then read as stored by the 16-bit GEMM), over
 * all Lp columns (mixer_token_stride: the ones past L are zeros); y16:
 * DBL is 16-bit. probe: the op only asks (its weight's 16-bit copy is
 * not recorded). */
static void mixer_x_proj_op(builder_t *b, const char *p, int64_t Bw, int64_t Lp, int64_t C, const float *MX,
                            const float *MX16, float *DBL, int y16, int probe, mvrt_op_params_t *op)
{
    const int64_t h = C / 2, E = mv_dt_rank((int)C) + 2 * b->g->model->config.d_state;
    memset(op, 0, sizeof *op);
    op->kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *l = &op->u.linear;
    l->batch = Bw, l->M = E, l->N = Lp, l->K = h;
    l->A = weight(b, p, "mixer.x_proj.weight"), l->lda = h, l->batch_stride_a = 0;
    l->a16 = probe ? (b->weights16 ? b->store16 : 0) : use_weight16(b, &l->A, E * h);
    l->B = MX16 ? MX16 : MX, l->ldb = Lp, l->batch_stride_b = h * Lp;
    l->b16 = MX16 ? store16(b) : 0;
    l->Y = DBL, l->ldy = Lp, l->batch_stride_y = E * Lp;
    l->y16 = y16 ? store16(b) : 0;
    l->math = b->g->opt.math;
}

/* dt_proj per sequence: DT_b (h, Lp) = W (h, R) . DBL_b[0:R] + bias (per
 * row); io16: DBL and DT are 16-bit. probe: as mixer_x_proj_op. */
static void mixer_dt_proj_op(builder_t *b, const char *p, int64_t Bw, int64_t Lp, int64_t C, const float *DBL,
                             float *DT, int io16, int probe, mvrt_op_params_t *op)
{
    const int64_t h = C / 2, R = mv_dt_rank((int)C), E = R + 2 * b->g->model->config.d_state;
    memset(op, 0, sizeof *op);
    op->kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *l = &op->u.linear;
    l->batch = Bw, l->M = h, l->N = Lp, l->K = R;
    l->A = weight(b, p, "mixer.dt_proj.weight"), l->lda = R, l->batch_stride_a = 0;
    l->a16 = probe ? (b->weights16 ? b->store16 : 0) : use_weight16(b, &l->A, h * R);
    l->B = DBL, l->ldb = Lp, l->batch_stride_b = E * Lp;
    l->b16 = io16 ? store16(b) : 0;
    l->Y = DT, l->ldy = Lp, l->batch_stride_y = h * Lp;
    l->y16 = io16 ? store16(b) : 0;
    l->bias = weight(b, p, "mixer.dt_proj.bias"), l->bias_per_row = 1;
    l->math = b->g->opt.math;
}

/* out_proj per sequence, onto the residual: X_b (L, C) = X_in_b + YZ_b^T (L,
 * C) . W^T; yz16: YZ is 16-bit. probe: as mixer_x_proj_op. */
static void mixer_out_proj_op(builder_t *b, const char *p, int64_t Bw, int64_t L, int64_t C, const float *YZ, int yz16,
                              const float *X_in, float *X, int probe, mvrt_op_params_t *op)
{
    memset(op, 0, sizeof *op);
    op->kind = MVRT_OP_LINEAR;
    mvrt_linear_params_t *l = &op->u.linear;
    l->batch = Bw, l->M = L, l->N = C, l->K = C;
    l->A = YZ, l->lda = L, l->trans_a = 1, l->batch_stride_a = C * L;
    l->a16 = yz16 ? store16(b) : 0;
    l->B = weight(b, p, "mixer.out_proj.weight"), l->ldb = C, l->trans_b = 1;
    l->b_constant = 1;
    l->b16 = probe ? (b->weights16 ? b->store16 : 0) : use_weight16(b, &l->B, C * C);
    l->Y = X, l->ldy = C, l->batch_stride_y = L * C;
    l->y16 = b->stream16;
    l->beta = 1.0f;
    l->residual = X_in != X ? X_in : NULL;
    l->math = b->g->opt.math;
}

/* The mixer's 16-bit activations in a 16-bit graph, where the backend
 * takes their forms at these sizes (plan and emit ask the same; the
 * fused form keeps floats): *xz16, in_proj writes XZ in 16 bits for the
 * conv1d to read (half the bytes both ways); *chain16, the whole chain
 * after it is 16-bit too, as autocast runs it: the conv1d writes u and z
 * in 16 bits (y16), x_proj and dt_proj read and write 16-bit dbl and dt
 * (b16, y16), the scan runs on 16-bit u, dt, B, C and output (spec: the
 * state and every sum stay fp32) and out_proj reads the 16-bit result
 * (a16); else *u16, the conv1d writes a 16-bit copy of the float u that
 * x_proj's 16-bit GEMM reads as stored (instead of rounding a copy on
 * every run) while the scan reads the float u. The CPU takes the chain;
 * the GPUs where the conv1d runs its whole-row kernel and the 16-bit
 * GEMM is there (backends/gpu_common/mv_gpu_launch.cu). Addresses in the
 * probes are stand-ins: takes reads shapes only.
 * MVRT_GRAPH_MIXER_CHAIN16=0 keeps the float chain (test_model_api
 * compares both). */
static void mixer_storage16(builder_t *b, const char *p, int64_t Bw, int64_t L, int64_t Lp, int64_t C, int *xz16,
                            int *u16, int *chain16)
{
    *xz16 = *u16 = *chain16 = 0;
    if (!store16(b))
        return;
    float *any = (float *)(uintptr_t)VB_FAKE_BASE;
    mvrt_op_params_t op;
    if (mixer_proj_fused(b, p, Bw, L, C, any, any, any, any, any, &op))
        return;
    mvrt_backend_t *be = b->g->backend;
    mixer_conv_op(b, p, Bw, L, Lp, C, any, 1, any, NULL, any, 0, &op);
    *xz16 = backend_takes(be, &op);
    mvrt_op_params_t xp, dp, op16;
    const char *chain_env = getenv("MVRT_GRAPH_MIXER_CHAIN16");
    if (*xz16 && !(chain_env && strcmp(chain_env, "0") == 0)) {
        mixer_conv_op(b, p, Bw, L, Lp, C, any, 1, any, NULL, any, 1, &op);
        mixer_x_proj_op(b, p, Bw, Lp, C, NULL, any, any, 1, 1, &xp);
        mixer_dt_proj_op(b, p, Bw, Lp, C, any, any, 1, 1, &dp);
        mixer_out_proj_op(b, p, Bw, L, C, any, 1, any, any, 1, &op16);
        *chain16 = backend_takes(be, &op) && backend_takes(be, &xp) && backend_takes(be, &dp) &&
                   backend_takes(be, &op16);
        if (*chain16)
            return;
    }
    mixer_conv_op(b, p, Bw, L, Lp, C, any, *xz16, any, any, any, 0, &op);
    mixer_x_proj_op(b, p, Bw, Lp, C, any, any, any, 0, 1, &xp);
    *u16 = backend_takes(be, &op) && backend_takes(be, &xp);
}

/* Token stride of the mixer's channel-major u (MX, MX16), dbl and dt.
 * In a 16-bit graph over one sequence (a batch-1 window) whose middle
 * runs as the three ops, L rounded up to 8 values, and x_proj and dt_proj
 * run over all Lp columns: cuBLAS takes its aligned Hopper kernels only
 * when a matrix's extent along its contiguous dimension is a multiple
 * of 8 (with 49 tokens, MambaVision-B stage 4, it ran `nn_align1`
 * fallbacks: x_proj 12.9 us, dt_proj 4.6 us; row strides alone did not
 * change that: backends/cuda/PERF_NOTES.md, session 60). The columns
 * past L of u are zeros (buf_zeroed), so those of dbl and dt are finite;
 * the scan reads only L. Else L: the fused middle writes dense rows, and
 * several sequences make the GEMMs batched ones of their own shapes. */
static int64_t mixer_token_stride(builder_t *b, const char *p, int64_t Bw, int64_t L, int64_t C)
{
    /* MVRT_GRAPH_MIXER_PAD=0: dense rows (test_model_api compares both) */
    const char *pad = getenv("MVRT_GRAPH_MIXER_PAD");
    if (!store16(b) || Bw != 1 || L % 8 == 0 || (pad && strcmp(pad, "0") == 0))
        return L;
    float *any = (float *)(uintptr_t)VB_FAKE_BASE;
    mvrt_op_params_t op;
    if (mixer_proj_fused(b, p, Bw, L, C, any, any, any, any, any, &op))
        return L;
    return (L + 7) / 8 * 8;
}

/* The mixer's token-local middle, xz -> u (MX), z (YZ rows [h, C)), dbl,
 * dt: one MVRT_OP_MIXER_PROJ where the backend takes it for these sizes
 * (the CUDA backend for few tokens: ops/mv/mixer_proj_gpu.cuh;
 * plan and emit ask the same), else the three ops it fuses (the conv1d
 * and x_proj with the 16-bit forms of mixer_storage16; chain16: MX, DBL,
 * DT and YZ are 16-bit). Returns 1 when the op was taken: DT then holds
 * the scan's step already (the second bias and softplus applied:
 * dt_softplus). */
static int emit_mixer_proj(builder_t *b, const char *p, int64_t Bw, int64_t L, int64_t Lp, int64_t C, const float *XZ,
                           int xz16, int chain16, float *MX, float *MX16, float *DBL, float *DT, float *YZ)
{
    mvrt_op_params_t op;
    if (Lp == L && !xz16 && !MX16 && !chain16 && mixer_proj_fused(b, p, Bw, L, C, XZ, MX, DBL, DT, YZ, &op)) {
        add_op(b, &op);
        return 1;
    }
    mixer_conv_op(b, p, Bw, L, Lp, C, XZ, xz16, MX, MX16, YZ, chain16, &op);
    add_op(b, &op);
    /* chain16: MX is the 16-bit operand itself */
    mixer_x_proj_op(b, p, Bw, Lp, C, chain16 ? NULL : MX, chain16 ? MX : MX16, DBL, chain16, 0, &op);
    add_op(b, &op);
    mixer_dt_proj_op(b, p, Bw, Lp, C, DBL, DT, chain16, 0, &op);
    add_op(b, &op);
    return 0;
}

/* One mixer block over Bw sequences of L tokens: X = X_in + mixer(norm1(X_in)),
 * then X += MLP(norm2(X)). X_in may be X (in place: a stage) or the
 * block graph's input (then no copy of it into X comes first). */
static void emit_mixer_block(builder_t *b, const char *p, int64_t Bw, int64_t L, int64_t C, const float *X_in,
                             float *X)
{
    const mvrt_model_config_t *cfg = &b->g->model->config;
    int64_t M = Bw * L, h = C / 2, N = cfg->d_state, R = mv_dt_rank((int)C), E = R + 2 * N;
    const int s16 = store16(b);
    const int64_t Lp = mixer_token_stride(b, p, Bw, L, C);
    int xz16, u16, chain16;
    mixer_storage16(b, p, Bw, L, Lp, C, &xz16, &u16, &chain16);
    float *T = buf(b, M * C, s16); /* norm1's output (unless folded) */
    float *XZ = buf(b, M * C, xz16);
    float *MX = Lp != L ? buf_zeroed(b, Bw * h * Lp, chain16) : buf(b, Bw * h * L, chain16);
    float *MX16 = u16 ? (Lp != L ? buf_zeroed(b, Bw * h * Lp, 1) : buf(b, Bw * h * L, 1)) : NULL;
    float *DBL = buf(b, Bw * E * Lp, chain16);
    float *DT = buf(b, Bw * h * Lp, chain16);
    float *YZ = buf(b, Bw * C * L, chain16);
    mvrt_op_params_t op;

    op_norm_dense(b, M, C, C, X_in, T, XZ, p, "norm1", "mixer.in_proj", 0, MVRT_ACT_NONE,
                  s16 ? DENSE_A16 | (xz16 ? DENSE_Y16 : 0) : 0);

    const int dt_is_step = emit_mixer_proj(b, p, Bw, L, Lp, C, XZ, xz16, chain16, MX, MX16, DBL, DT, YZ);

    /* The scan (the bias goes in a second time as delta_bias: spec step 5;
     * the fused projections applied it and the softplus already). */
    gnode_t *n = add_node(b, NODE_SCAN);
    mvrt_scan_params_t *s = &n->scan;
    s->batch = Bw, s->dim = h, s->seqlen = L, s->dstate = N, s->groups = 1;
    s->input_dtype = !chain16 ? MVRT_SCAN_F32 : store16(b) == MVRT_STORAGE16_F16 ? MVRT_SCAN_F16 : MVRT_SCAN_BF16;
    s->b_variable = s->c_variable = 1;
    s->delta_softplus = !dt_is_step;
    s->u.data = MX, s->u.stride[0] = h * Lp, s->u.stride[1] = Lp, s->u.stride[2] = 1;
    s->delta = s->u, s->delta.data = DT;
    s->A.data = (void *)weight(b, p, "mixer.A"), s->A.stride[0] = N, s->A.stride[1] = 1;
    s->B.data = elem_at(DBL, R * Lp, chain16);
    s->B.stride[0] = E * Lp, s->B.stride[1] = 0, s->B.stride[2] = Lp, s->B.stride[3] = 1;
    s->C = s->B, s->C.data = elem_at(DBL, (R + N) * Lp, chain16);
    s->D.data = (void *)weight(b, p, "mixer.D"), s->D.stride[0] = 1;
    if (!dt_is_step)
        s->delta_bias.data = (void *)weight(b, p, "mixer.dt_proj.bias"), s->delta_bias.stride[0] = 1;
    s->out.data = YZ, s->out.stride[0] = C * L, s->out.stride[1] = L, s->out.stride[2] = 1;

    mixer_out_proj_op(b, p, Bw, L, C, YZ, chain16, X_in, X, 0, &op);
    add_op(b, &op);

    emit_mlp(b, p, M, C, X);
}

/* One attention block, as emit_mixer_block (X_in: its input, may be X). */
static void emit_attention_block(builder_t *b, const char *p, int64_t Bw, int64_t L, int64_t C,
                                 int heads, const float *X_in, float *X)
{
    int64_t M = Bw * L;
    const int s16 = store16(b);
    float *T = buf(b, M * C, s16); /* norm1's output (unless folded) */
    mvrt_op_params_t op = {.kind = MVRT_OP_ATTENTION};
    mvrt_attention_params_t *a = &op.u.attention;
    a->batch = Bw, a->length = L, a->heads = heads, a->head_dim = (int)(C / heads);
    a->scale = (float)(1.0 / sqrt((double)a->head_dim));
    a->qkv = a->out = T; /* stand-ins for the question below; the buffers follow from its answer */
    a->math = b->g->opt.math;
    /* q, k, v and the attention output in 16 bits where the backend's
     * attention takes them (then only 16-bit kernels touch them: the qkv
     * GEMM writes them, the proj GEMM reads the output); plan and emit ask
     * the same */
    if (s16) {
        a->qkv16 = a->out16 = s16;
        if (!backend_takes(b->g->backend, &op))
            a->qkv16 = a->out16 = 0;
    }
    const int io16 = a->qkv16 != 0;
    float *QKV = buf(b, M * 3 * C, io16);
    float *O = buf(b, M * C, io16); /* the attention's output */
    a->qkv = QKV, a->out = O;
    op_norm_dense(b, M, 3 * C, C, X_in, T, QKV, p, "norm1", "mixer.qkv", b->g->model->config.qkv_bias, MVRT_ACT_NONE,
                  s16 ? DENSE_A16 | (io16 ? DENSE_Y16 : 0) : 0);
    add_op(b, &op);
    op_dense(b, M, C, C, O, X, p, "mixer.proj", 1, MVRT_ACT_NONE, X_in, io16 ? DENSE_A16 : 0);
    emit_mlp(b, p, M, C, X);
}

/* The math mode of a conv between maps of 16-bit type t (0: floats, the
 * graph's own mode). */
static int conv_math(const builder_t *b, int t)
{
    return t == MVRT_STORAGE16_F16 ? MVRT_MATH_FP16 : t == MVRT_STORAGE16_BF16 ? MVRT_MATH_BF16 : b->g->opt.math;
}

/* A 3x3 conv (BatchNorm folded) with zero padding 1. x16 / y16: the
 * 16-bit types of the NHWC maps x and y (and residual) are stored in, 0
 * for floats (x: the graph's NCHW input; both 0 where the maps are
 * floats); the conv multiplies in x's type (y's for a float x). x_stored /
 * y_stored: the channels those 16-bit maps store per position (see
 * conv_map_channels). Where the backend declines the 16-bit form while
 * planning, the next plan is tried (mvrt_graph_create). */
static void op_conv(builder_t *b, const char *prefix, const char *conv, int has_bias, int64_t batch,
                    int64_t cin, int64_t H, int64_t W, int64_t cout, int stride, const float *x, float *y,
                    const float *residual, int act, int x16, int y16, int64_t x_stored, int64_t y_stored)
{
    char leaf[96];
    mvrt_op_params_t op = {.kind = MVRT_OP_CONV2D};
    mvrt_conv2d_params_t *c = &op.u.conv2d;
    c->batch = batch, c->in_channels = cin, c->in_h = H, c->in_w = W;
    c->kernel = 3, c->stride = stride, c->pad = 1;
    c->out_channels = cout;
    c->out_h = (H + 2 - 3) / stride + 1, c->out_w = (W + 2 - 3) / stride + 1;
    c->x = x, c->y = y, c->residual = residual, c->activation = act;
    c->math = conv_math(b, x16 ? x16 : y16);
    c->x_nhwc16 = x16;
    c->y_nhwc16 = y16;
    c->x_map_channels = c->x_nhwc16 && x_stored != cin ? x_stored : 0;
    c->y_map_channels = c->y_nhwc16 && y_stored != cout ? y_stored : 0;
    snprintf(leaf, sizeof leaf, "%s.weight", conv);
    c->weight = weight(b, prefix, leaf);
    if (has_bias) {
        snprintf(leaf, sizeof leaf, "%s.bias", conv);
        c->bias = weight(b, prefix, leaf);
    }
    /* a 16-bit conv multiplies 16-bit filters in every form: prepared
     * (below) or staged on each run */
    note_weight16_range(b, c->weight, cout * cin * 9, x16 ? x16 : y16);
    use_conv_filters16(b, c);
    if (b->map16 && !b->emit && !backend_takes(b->g->backend, &op)) {
        b->map16_declined = 1;
        return;
    }
    add_op(b, &op);
}

static int64_t down(int64_t n)
{
    return (n + 2 - 3) / 2 + 1;
}

/* A new map of n elements: NHWC 16-bit when the builder's maps are
 * 16-bit, else NCHW floats. */
static float *map_buf(builder_t *b, int64_t n)
{
    return buf(b, n, b->map16 != 0);
}

/* The channels stored per position of a 16-bit map of C channels that
 * only convs write and read (the stem's output, the conv stages' maps):
 * a multiple of 8, zeros past C (x_map_channels in mv_op_params.h), so
 * that its rows are 16 bytes for the Hopper conv kernels' TMA loads
 * (MambaVision-L's 196 channels: 200). A map that a window partition or
 * the pool reads stays dense, as do float maps. */
static int64_t conv_map_channels(const builder_t *b, int64_t C)
{
    return b->map16 ? (C + 7) / 8 * 8 : C;
}

/* Image `image` of a tensor of per_image elements per image (16-bit ones
 * when half, else floats). */
static float *image_at(const float *p, int64_t image, int64_t per_image, int half)
{
    return (float *)((const char *)p + (size_t)(image * per_image) * (half ? 2u : 4u));
}

/* Where a run of convs over the batch is split in two: the stem and each
 * ConvBlock run as two halves when the batch is 64 or more, so that their
 * intermediate map (the stem's first output, a block's conv1 output) is
 * held for one half only, which lowers the workspace's peak (set by the
 * first conv stage: MambaVision-B, bf16, batch 256: 735 -> 637 MiB)
 * while each half still fills the GPU (32+ images of 56x56 or more).
 * Returns the second half's first image, or 0 for no split (also when a
 * half would start off a 256-byte boundary of a tensor of
 * per_image_bytes[i] bytes per image). */
static int64_t batch_split(int64_t batch, const int64_t *per_image_bytes, int n)
{
    if (batch < 64)
        return 0;
    const int64_t half = batch / 2;
    for (int i = 0; i < n; i++)
        if ((half * per_image_bytes[i]) % 256 != 0)
            return 0;
    return half;
}

/* The 16-bit type of a stage's maps (0: floats): a conv stage's are
 * conv16's, a token stage's map16's. */
static int stage_map16(const builder_t *b, int conv)
{
    return conv ? b->conv16 : b->map16;
}

/* One stage on the map `src` (batch, C, H, W; a conv stage's stored with
 * conv_map_channels(C), another's dense; of stage_map16's type). Returns
 * the result map and updates C, H, W; next_conv: the next stage is a conv
 * stage (the downsample's output is then stored as its input, in its
 * type). */
static float *emit_stage(builder_t *b, const char *p, const mv_stage_desc_t *s, int64_t batch, const float *src,
                         int64_t *Cp, int64_t *Hp, int64_t *Wp, int next_conv)
{
    int64_t C = *Cp, H = *Hp, W = *Wp;
    const int t = stage_map16(b, s->conv);
    const int64_t Cs = s->conv ? conv_map_channels(b, C) : C; /* cur's stored channels */
    const float *cur = src;
    char q[MV_PARAM_NAME_MAX];
    if (s->conv) {
        const int64_t img = Cs * H * W, img_bytes = img * (b->map16 ? 2 : 4);
        const int64_t split = batch_split(batch, &img_bytes, 1);
        for (int i = 0; i < s->depth; i++) {
            snprintf(q, sizeof q, "%sblocks.%d.", p, i);
            float *y = map_buf(b, batch * img);
            float *mid = map_buf(b, (batch - split) * img); /* conv1's output, one half at a time */
            for (int part = 0; part < (split ? 2 : 1); part++) {
                const int64_t i0 = part ? split : 0, n = split ? (part ? batch - split : split) : batch;
                op_conv(b, q, "conv1", 1, n, C, H, W, C, 1, image_at(cur, i0, img, b->map16), mid, NULL,
                        MVRT_ACT_GELU_TANH, t, t, Cs, Cs);
                op_conv(b, q, "conv2", 1, n, C, H, W, C, 1, mid, image_at(y, i0, img, b->map16),
                        image_at(cur, i0, img, b->map16), MVRT_ACT_NONE, t, t, Cs, Cs);
            }
            cur = y;
        }
    } else if (s->depth > 0) {
        int ws = s->window;
        int64_t nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
        int64_t Bw = batch * nh * nw, L = (int64_t)ws * ws;
        /* A 16-bit NHWC map whose windows are whole rows of the image
         * (W == window, no padding: every MambaVision config at 224 x 224,
         * stages 3 and 4) already is the tokens' layout, window after
         * window. The blocks then update the map itself in place as a
         * 16-bit residual stream, as autocast's bf16 / fp16 residual adds
         * do: no partition and reverse copies, and the LayerNorms and the
         * linears onto the stream move half the bytes of a float stream
         * (MambaVision-B, bf16, batch 256: 0.31 of 0.62 GB per stage-3
         * block).
         * Elsewhere the stream is floats between a partition and a
         * reverse. */
        const int in_place = b->map16 && W == ws && H % ws == 0 && backend_takes_stream16(b->g->backend, b->map16);
        float *X;
        mvrt_op_params_t op = {.kind = MVRT_OP_WINDOW_PARTITION};
        mvrt_window_params_t *w = &op.u.window;
        w->batch = batch, w->channels = C, w->height = H, w->width = W, w->window = ws;
        w->map_nhwc16 = b->map16;
        if (in_place) {
            X = (float *)cur; /* a workspace map only this stage reads */
            b->stream16 = b->map16;
        } else {
            X = buf(b, Bw * L * C, 0);
            w->src = cur, w->dst = X;
            add_op(b, &op);
        }
        for (int i = 0; i < s->depth; i++) {
            snprintf(q, sizeof q, "%sblocks.%d.", p, i);
            if (i >= s->first_attention)
                emit_attention_block(b, q, Bw, L, C, s->heads, X, X);
            else
                emit_mixer_block(b, q, Bw, L, C, X, X);
        }
        b->stream16 = 0;
        if (in_place) {
            cur = X;
        } else {
            float *y = map_buf(b, batch * C * H * W);
            op.kind = MVRT_OP_WINDOW_REVERSE;
            w->src = X, w->dst = y;
            add_op(b, &op);
            cur = y;
        }
    }
    if (s->downsample) {
        const int64_t ys = next_conv ? conv_map_channels(b, 2 * C) : 2 * C;
        float *y = map_buf(b, batch * ys * down(H) * down(W));
        snprintf(q, sizeof q, "%sdownsample.reduction.0", p);
        op_conv(b, q, "", 0, batch, C, H, W, 2 * C, 2, cur, y, NULL, MVRT_ACT_NONE, t, stage_map16(b, next_conv), Cs,
                ys);
        cur = y;
        C *= 2, H = down(H), W = down(W);
    }
    *Cp = C, *Hp = H, *Wp = W;
    return (float *)cur;
}

static void emit_all(builder_t *b)
{
    mvrt_graph_t *g = b->g;
    const mvrt_model_config_t *c = &g->model->config;
    int64_t batch = g->opt.batch;
    float *in = buf(b, g->in_shape[0] * g->in_shape[1] * g->in_shape[2] * (g->in_rank == 4 ? g->in_shape[3] : 1), 0);
    int64_t out_n = 1;
    for (int i = 0; i < g->out_rank; i++)
        out_n *= g->out_shape[i];
    float *out = buf(b, out_n, 0);
    pin(b, in), pin(b, out);
    switch (c->kind) {
    case MVRT_MODEL_MIXER_BLOCK:
    case MVRT_MODEL_ATTENTION_BLOCK: {
        int64_t L = g->opt.tokens, C = c->dim;
        /* the block reads `in` and writes `out` (its residual comes from
         * `in`): no copy of the input first */
        if (c->kind == MVRT_MODEL_MIXER_BLOCK)
            emit_mixer_block(b, "", batch, L, C, in, out);
        else
            emit_attention_block(b, "", batch, L, C, c->num_heads, in, out);
        break;
    }
    case MVRT_MODEL_STAGE: {
        mv_stage_desc_t s;
        mv_model_stage(c, &s);
        int64_t C = c->dim, H = g->opt.height, W = g->opt.width;
        float *r = emit_stage(b, "", &s, batch, in, &C, &H, &W, 0);
        add_copy(b, out, r, batch * C * H * W);
        break;
    }
    case MVRT_MODEL_NETWORK: {
        int64_t H = g->opt.height, W = g->opt.width, C;
        /* the stem's two convs, in two halves at large batches (batch_split) */
        mv_stage_desc_t s0;
        mv_network_stage(c, 0, &s0);
        const int64_t m1_stored = s0.conv ? conv_map_channels(b, c->dim) : c->dim;
        /* the stem's first map is of the token stages' type (a bf16 graph's
         * stem stays bf16: an fp16 overflow there could hide behind its
         * ReLUs), its output of the first stage's */
        const int t0 = b->map16, t1 = stage_map16(b, s0.conv);
        const int64_t in_img = c->in_chans * H * W, m0_img = c->in_dim * down(H) * down(W);
        const int64_t m1_img = m1_stored * down(down(H)) * down(down(W));
        const int64_t img_bytes[2] = {in_img * 4, m1_img * (b->map16 ? 2 : 4)};
        const int64_t split = batch_split(batch, img_bytes, 2);
        float *m1 = map_buf(b, batch * m1_img);
        float *m0 = map_buf(b, (batch - split) * m0_img);
        for (int part = 0; part < (split ? 2 : 1); part++) {
            const int64_t i0 = part ? split : 0, n = split ? (part ? batch - split : split) : batch;
            op_conv(b, "patch_embed.conv_down.", "0", 1, n, c->in_chans, H, W, c->in_dim, 2, image_at(in, i0, in_img, 0),
                    m0, NULL, MVRT_ACT_RELU, 0, t0, c->in_chans, c->in_dim);
            op_conv(b, "patch_embed.conv_down.", "3", 1, n, c->in_dim, down(H), down(W), c->dim, 2, m0,
                    image_at(m1, i0, m1_img, b->map16), NULL, MVRT_ACT_RELU, t0, t1, c->in_dim, m1_stored);
        }
        H = down(down(H)), W = down(down(W)), C = c->dim;
        float *cur = m1;
        for (int level = 0; level < 4; level++) {
            char p[32];
            mv_stage_desc_t s, next = {0};
            mv_network_stage(c, level, &s);
            if (level < 3)
                mv_network_stage(c, level + 1, &next);
            snprintf(p, sizeof p, "levels.%d.", level);
            cur = emit_stage(b, p, &s, batch, cur, &C, &H, &W, next.conv);
        }
        float *pooled = buf(b, batch * C, 0);
        mvrt_op_params_t op = {.kind = MVRT_OP_AFFINE_AVGPOOL};
        op.u.pool.batch = batch, op.u.pool.channels = C, op.u.pool.spatial = H * W;
        op.u.pool.x = cur, op.u.pool.y = pooled;
        op.u.pool.x_nhwc16 = stage_map16(b, 0); /* the last stage: a token stage */
        op.u.pool.scale = weight(b, "", "norm.scale"), op.u.pool.shift = weight(b, "", "norm.shift");
        add_op(b, &op);
        /* the logits from fp32 operands in every mode (the pooled features
         * are fp32; a tiny GEMM): which class wins is decided by them */
        dense_params(b, &op, batch, c->num_classes, C, pooled, out, "", "head", "bias", MVRT_ACT_NONE);
        op.u.linear.math = MVRT_MATH_FP32;
        add_op(b, &op);
        break;
    }
    }
}

/* ---- workspace plan ------------------------------------------------------ */

/* Fills the buffers that buf_zeroed asked for with zeros, once (blocking,
 * on the backend's default stream: before any run). */
static mvrt_status_t zero_buffers(mvrt_graph_t *g, const vbuf_t *vb, size_t n)
{
    const uint32_t zero = 0;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (!vb[i].zeroed)
            continue;
        mvrt_status_t st = mvrt_buffer_fill(NULL, g->workspace, vb[i].offset, vb[i].bytes, &zero, sizeof zero);
        if (st != MVRT_OK)
            return st;
        any = 1;
    }
    mvrt_backend_t *be = g->backend;
    return any ? be->vt->stream_synchronize(be->device, be->vt->default_stream(be->device)) : MVRT_OK;
}

/* Placement orders tried by plan_offsets (each a qsort comparator over
 * vbuf_t pointers; ties in the order asked for, so a plan is stable). */
static int tie(const vbuf_t *a, const vbuf_t *c) { return a < c ? -1 : a > c; }
static size_t first_of(const vbuf_t *a) { return a->pinned ? 0 : a->first; }
static size_t last_of(const vbuf_t *a) { return a->pinned ? SIZE_MAX : a->last; }

static int by_size(const void *x, const void *y) /* largest first */
{
    const vbuf_t *a = *(vbuf_t *const *)x, *c = *(vbuf_t *const *)y;
    if (a->pinned != c->pinned)
        return c->pinned - a->pinned;
    return a->bytes != c->bytes ? (a->bytes < c->bytes ? 1 : -1) : tie(a, c);
}

static int by_first_use(const void *x, const void *y) /* in the order the nodes need them */
{
    const vbuf_t *a = *(vbuf_t *const *)x, *c = *(vbuf_t *const *)y;
    if (first_of(a) != first_of(c))
        return first_of(a) < first_of(c) ? -1 : 1;
    return a->bytes != c->bytes ? (a->bytes < c->bytes ? 1 : -1) : tie(a, c);
}

static int by_last_use(const void *x, const void *y) /* from the end of the graph backwards */
{
    const vbuf_t *a = *(vbuf_t *const *)x, *c = *(vbuf_t *const *)y;
    if (last_of(a) != last_of(c))
        return last_of(a) > last_of(c) ? -1 : 1;
    return a->bytes != c->bytes ? (a->bytes < c->bytes ? 1 : -1) : tie(a, c);
}

static int by_offset(const void *x, const void *y)
{
    const vbuf_t *a = *(vbuf_t *const *)x, *c = *(vbuf_t *const *)y;
    return a->offset < c->offset ? -1 : a->offset > c->offset;
}

/* Places order[0..live) in that order, each at the lowest offset where it
 * shares no byte with a placed buffer live at the same time; returns the
 * bytes they span. clash: room for live pointers. */
static size_t place(vbuf_t **order, size_t live, vbuf_t **clash)
{
    size_t end = 0;
    for (size_t i = 0; i < live; i++) {
        vbuf_t *v = order[i];
        size_t m = 0;
        for (size_t j = 0; j < i; j++)
            if (first_of(v) <= last_of(order[j]) && first_of(order[j]) <= last_of(v))
                clash[m++] = order[j];
        qsort(clash, m, sizeof *clash, by_offset);
        size_t at = 0;
        for (size_t j = 0; j < m && clash[j]->offset < at + v->bytes; j++)
            if (clash[j]->offset + clash[j]->bytes > at)
                at = clash[j]->offset + clash[j]->bytes;
        v->offset = at;
        if (at + v->bytes > end)
            end = at + v->bytes;
    }
    return end;
}

/* Offsets for the n virtual buffers such that two live at the same time
 * (their node ranges meet, or either is pinned) share no byte; buffers no
 * node references take no room. First-fit placement in each of a few
 * orders, keeping the one that spans the fewest bytes (no order is best
 * for every model: a larger buffer placed early can leave a gap that the
 * next stage's buffers do not fit). *total: the bytes they span. */
static mvrt_status_t plan_offsets(vbuf_t *vb, size_t n, size_t *total)
{
    static int (*const orders[])(const void *, const void *) = {by_size, by_first_use, by_last_use};
    vbuf_t **order = mvrt_rt_calloc(n ? n : 1, sizeof *order);
    vbuf_t **clash = mvrt_rt_calloc(n ? n : 1, sizeof *clash);
    size_t *best = mvrt_rt_calloc(n ? n : 1, sizeof *best);
    if (!order || !clash || !best) {
        free(order), free(clash), free(best);
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "mvrt_graph_create: out of host memory");
    }
    size_t live = 0, best_end = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        vb[i].offset = 0;
        if (vb[i].pinned || vb[i].first <= vb[i].last)
            order[live++] = &vb[i];
    }
    for (size_t k = 0; k < sizeof orders / sizeof *orders; k++) {
        qsort(order, live, sizeof *order, orders[k]);
        const size_t end = place(order, live, clash);
        if (end < best_end) {
            best_end = end;
            for (size_t i = 0; i < n; i++)
                best[i] = vb[i].offset;
        }
    }
    for (size_t i = 0; i < n; i++)
        vb[i].offset = best[i];
    /* the one property a wrong plan would break, checked (n is small) */
    mvrt_status_t st = MVRT_OK;
    for (size_t i = 0; i < live && st == MVRT_OK; i++)
        for (size_t j = i + 1; j < live && st == MVRT_OK; j++) {
            const vbuf_t *a = order[i], *c = order[j];
            if (first_of(a) <= last_of(c) && first_of(c) <= last_of(a) && a->offset < c->offset + c->bytes &&
                c->offset < a->offset + a->bytes)
                st = mvrt_error_set(MVRT_ERR_INTERNAL, "mvrt_graph_create: the workspace plan overlaps two "
                                                       "tensors in use at the same time");
        }
    free(order), free(clash), free(best);
    *total = live ? best_end : 0;
    return st;
}

/* ---- public API ---------------------------------------------------------- */

/* g->weights16: the model's weights rounded to the 16-bit type (to
 * nearest even), element for element, so that a weight at float offset i
 * is at 16-bit offset i. Converted on the host in slices (no second full
 * copy of a large model in host memory), each slice's upload finished
 * before its host buffer is refilled. fp16: a finite weight that an op
 * reads in 16 bits (g->w16_ranges) beyond fp16's range (65504) would
 * become infinite, so the graph is refused instead. */
static mvrt_status_t make_weights16(mvrt_graph_t *g, int type16)
{
    static const char fn[] = "mvrt_graph_create";
    enum { SLICE = 1 << 20 }; /* floats per slice */
    const mvrt_model_t *m = g->model;
    mvrt_backend_t *be = g->backend;
    const size_t count = m->weight_bytes / sizeof(float);
    mvrt_status_t st = mvrt_buffer_alloc(be, count ? count * sizeof(uint16_t) : 256, &g->weights16);
    if (st)
        return st;
    float *f32 = malloc(SLICE * sizeof *f32);
    uint16_t *b16 = malloc(SLICE * sizeof *b16);
    if (!f32 || !b16)
        st = mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    for (size_t i = 0; st == MVRT_OK && i < count; i += SLICE) {
        const size_t n = count - i < SLICE ? count - i : SLICE;
        st = mvrt_copy_device_to_host(NULL, f32, m->weights, i * sizeof(float), n * sizeof(float));
        if (st == MVRT_OK)
            st = be->vt->stream_synchronize(be->device, be->vt->default_stream(be->device));
        for (size_t j = 0; st == MVRT_OK && j < n; j++)
            b16[j] = type16 == MVRT_STORAGE16_F16 ? mvrt_f32_to_f16(f32[j]) : mvrt_f32_to_bf16(f32[j]);
        for (size_t r = 0; st == MVRT_OK && type16 == MVRT_STORAGE16_F16 && r < g->w16_count; r++) {
            const size_t lo = g->w16_ranges[r].offset, hi = lo + g->w16_ranges[r].count;
            for (size_t k = lo > i ? lo : i; st == MVRT_OK && k < hi && k < i + n; k++)
                if ((b16[k - i] & 0x7c00u) == 0x7c00u && isfinite(f32[k - i]))
                    st = mvrt_error_set(MVRT_ERR_UNSUPPORTED,
                                        "%s: fp16 math: weight element %zu of the model (%g) is beyond fp16's range "
                                        "(65504); use bf16 or fp32 math",
                                        fn, k, (double)f32[k - i]);
        }
        if (st == MVRT_OK)
            st = mvrt_copy_host_to_device(NULL, g->weights16, i * sizeof(uint16_t), b16, n * sizeof(uint16_t));
        if (st == MVRT_OK)
            st = be->vt->stream_synchronize(be->device, be->vt->default_stream(be->device));
    }
    free(f32);
    free(b16);
    return st;
}

/* g->conv_filters16: each conv filter the plan recorded (use_conv_filters16)
 * rounded to its 16-bit type and laid out (kp, RS, cp) with zeros past K
 * and C, its bias as kp floats with zeros past K, uploaded filter by
 * filter (after make_weights16 or weights_fit_f16 checked the fp16 range
 * of those rounded to fp16). */
static mvrt_status_t make_conv_filters16(mvrt_graph_t *g)
{
    static const char fn[] = "mvrt_graph_create";
    if (!g->filter_count)
        return MVRT_OK;
    const mvrt_model_t *m = g->model;
    mvrt_backend_t *be = g->backend;
    mvrt_status_t st = mvrt_buffer_alloc(be, g->filter_bytes, &g->conv_filters16);
    if (st)
        return st;
    size_t most = 0; /* bytes of the largest prepared filter */
    int64_t most_w = 0;
    for (size_t i = 0; i < g->filter_count; i++) {
        const struct conv_filter *f = &g->filters[i];
        const size_t bytes = filter_bias_offset(f) + (size_t)f->kp * sizeof(float);
        most = bytes > most ? bytes : most;
        most_w = f->K * f->C * f->RS > most_w ? f->K * f->C * f->RS : most_w;
    }
    float *w = malloc((size_t)most_w * sizeof *w);
    char *host = malloc(most);
    if (!w || !host)
        st = mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    for (size_t i = 0; st == MVRT_OK && i < g->filter_count; i++) {
        const struct conv_filter *f = &g->filters[i];
        const int64_t n = f->K * f->C * f->RS;
        uint16_t *w16 = (uint16_t *)(void *)host;
        float *bias = (float *)(void *)(host + filter_bias_offset(f));
        memset(host, 0, filter_bias_offset(f) + (size_t)f->kp * sizeof(float));
        st = mvrt_copy_device_to_host(NULL, w, m->weights, f->weight * sizeof(float), (size_t)n * sizeof(float));
        if (st == MVRT_OK && f->bias != SIZE_MAX)
            st = mvrt_copy_device_to_host(NULL, bias, m->weights, f->bias * sizeof(float),
                                          (size_t)f->K * sizeof(float));
        if (st == MVRT_OK)
            st = be->vt->stream_synchronize(be->device, be->vt->default_stream(be->device));
        /* (K, C, RS) floats -> (kp, RS, cp) 16-bit */
        for (int64_t j = 0; st == MVRT_OK && j < n; j++) {
            const int64_t k = j / (f->C * f->RS), c = j / f->RS % f->C, rs = j % f->RS;
            w16[(k * f->RS + rs) * f->cp + c] =
                f->t16 == MVRT_STORAGE16_F16 ? mvrt_f32_to_f16(w[j]) : mvrt_f32_to_bf16(w[j]);
        }
        if (st == MVRT_OK)
            st = mvrt_copy_host_to_device(NULL, g->conv_filters16, f->offset, host,
                                          filter_bias_offset(f) + (size_t)f->kp * sizeof(float));
        if (st == MVRT_OK)
            st = be->vt->stream_synchronize(be->device, be->vt->default_stream(be->device));
    }
    free(w);
    free(host);
    return st;
}

/* Whether every weight range the plan recorded as read in fp16 (a bf16
 * graph's fp16 conv stages) is within fp16's range: 1 yes, 0 no (or a
 * copy failed: *st says so). Read in slices of the model's weights. */
static int weights_fit_f16(mvrt_graph_t *g, mvrt_status_t *st)
{
    enum { SLICE = 1 << 18 }; /* floats per slice */
    mvrt_backend_t *be = g->backend;
    float *f32 = malloc(SLICE * sizeof *f32);
    int fit = 1;
    if (!f32) {
        *st = mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "mvrt_graph_create: out of host memory");
        return 0;
    }
    for (size_t r = 0; fit && *st == MVRT_OK && r < g->w16_count; r++) {
        if (!g->w16_ranges[r].f16)
            continue;
        for (size_t i = 0; fit && *st == MVRT_OK && i < g->w16_ranges[r].count; i += SLICE) {
            const size_t n = g->w16_ranges[r].count - i < SLICE ? g->w16_ranges[r].count - i : SLICE;
            *st = mvrt_copy_device_to_host(NULL, f32, g->model->weights, (g->w16_ranges[r].offset + i) * sizeof(float),
                                           n * sizeof(float));
            if (*st == MVRT_OK)
                *st = be->vt->stream_synchronize(be->device, be->vt->default_stream(be->device));
            for (size_t j = 0; *st == MVRT_OK && j < n; j++)
                if ((mvrt_f32_to_f16(f32[j]) & 0x7c00u) == 0x7c00u && isfinite(f32[j]))
                    fit = 0;
        }
    }
    free(f32);
    return fit && *st == MVRT_OK;
}

static mvrt_status_t io_shapes(mvrt_graph_t *g)
{
    const mvrt_model_config_t *c = &g->model->config;
    const mvrt_graph_options_t *o = &g->opt;
    static const char fn[] = "mvrt_graph_create";
    if (o->batch < 1 || o->batch > (1 << 24))
        return mvrt_error_set(INVALID, "%s: options->batch = %lld out of range [1, 2^24]", fn, (long long)o->batch);
    if (o->math < 0 || o->math > 3)
        return mvrt_error_set(INVALID, "%s: options->math = %d (0 exact fp32, 1 fast TF32, 2 fast bf16, 3 fast fp16)",
                              fn, o->math);
    if (c->kind == MVRT_MODEL_MIXER_BLOCK || c->kind == MVRT_MODEL_ATTENTION_BLOCK) {
        if (o->tokens < 1 || o->tokens > (1 << 20))
            return mvrt_error_set(INVALID, "%s: options->tokens = %lld out of range [1, 2^20] for a block", fn,
                                  (long long)o->tokens);
        g->in_rank = g->out_rank = 3;
        g->in_shape[0] = g->out_shape[0] = o->batch;
        g->in_shape[1] = g->out_shape[1] = o->tokens;
        g->in_shape[2] = g->out_shape[2] = c->dim;
        return MVRT_OK;
    }
    if (o->height < 1 || o->width < 1 || o->height > 65536 || o->width > 65536)
        return mvrt_error_set(INVALID, "%s: options->height/width = %lld x %lld out of range [1, 65536]", fn,
                              (long long)o->height, (long long)o->width);
    g->in_rank = 4;
    g->in_shape[0] = o->batch;
    g->in_shape[2] = o->height, g->in_shape[3] = o->width;
    if (c->kind == MVRT_MODEL_STAGE) {
        g->in_shape[1] = c->dim;
        g->out_rank = 4;
        g->out_shape[0] = o->batch;
        g->out_shape[1] = c->downsample ? 2 * c->dim : c->dim;
        g->out_shape[2] = c->downsample ? down(o->height) : o->height;
        g->out_shape[3] = c->downsample ? down(o->width) : o->width;
    } else {
        g->in_shape[1] = c->in_chans;
        g->out_rank = 2;
        g->out_shape[0] = o->batch;
        g->out_shape[1] = c->num_classes;
    }
    return MVRT_OK;
}

/* A 16-bit math mode the device has no tensor cores for. A GPU backend
 * lists the graph math modes its device runs in its features ("math=fp32,
 * fp16" for CUDA code below sm_80, e.g. a T4): bf16 there would run
 * cuBLAS's emulated bf16 GEMMs, slower than fp32, so it is refused with
 * the mode to use instead. Backends without the list (CPU, HIP) take
 * every mode. */
static mvrt_status_t check_math_mode(mvrt_backend_t *be, int math)
{
    if (math != MVRT_MATH_BF16)
        return MVRT_OK;
    mvrt_device_info_t info;
    const mvrt_status_t st = mvrt_backend_device_info(be, &info);
    if (st != MVRT_OK)
        return st; /* with its message */
    const char *modes = strstr(info.features, " math=");
    if (!modes)
        return MVRT_OK;
    /* the list as ",fp32,fp16," to look for ",bf16," */
    char list[64];
    snprintf(list, sizeof list, ",%.*s,", (int)strcspn(modes + 6, " "), modes + 6);
    if (strstr(list, ",bf16,"))
        return MVRT_OK;
    const char *code = strstr(info.features, "code=");
    const int code_n = code ? (int)strcspn(code + 5, " ") : 0;
    return mvrt_error_set(MVRT_ERR_UNSUPPORTED,
                          "mvrt_graph_create: bf16 math (options->math = 2) needs bf16 tensor cores, which %s device "
                          "%d (%s, paths of %.*s) lacks; use fp16 math (3, --precision fp16) or fp32",
                          info.backend, info.device_index, info.name, code ? code_n : 7, code ? code + 5 : "unknown");
}

mvrt_status_t mvrt_graph_create(mvrt_model_t *model, const mvrt_graph_options_t *options, mvrt_graph_t **out_graph)
{
    static const char fn[] = "mvrt_graph_create";
    if (!model || !options || !out_graph)
        return mvrt_error_set(INVALID, "%s: %s is NULL", fn, !model ? "model" : !options ? "options" : "out_graph");
    mvrt_graph_t *g = mvrt_rt_calloc(1, sizeof *g);
    if (!g)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    g->model = model;
    g->backend = model->backend;
    g->opt = *options;
    mvrt_status_t st = io_shapes(g);
    if (st == MVRT_OK)
        st = check_math_mode(g->backend, g->opt.math);
    if (st) {
        free(g);
        return st;
    }

    /* Plan: sizes and live ranges with fake addresses (no pointer is
     * dereferenced); plan and emit passes must agree on the op forms */
    const int math = g->opt.math;
    const int type16 = math == MVRT_MATH_BF16 ? MVRT_STORAGE16_BF16 : math == MVRT_MATH_FP16 ? MVRT_STORAGE16_F16 : 0;
    const int s16 = type16 && backend_takes_storage16(g->backend, type16) ? type16 : 0;
    /* 16-bit weights rounded once here, not on every run (a fake base while planning) */
    const uint16_t *fake16 =
        s16 && backend_takes_weights16(g->backend, math, s16) ? (const uint16_t *)(uintptr_t)0x200000 : NULL;
    char *const fake_filters = fake16 ? (char *)(uintptr_t)0x400000 : NULL;
    /* The plans tried in turn, {map16, conv16}: a network's maps in 16-bit
     * NHWC where the backend takes every conv in that form, else NCHW
     * floats. A bf16 network first runs its conv stages (the ConvBlocks
     * and their downsamplers; the stem stays bf16) in fp16, whose 11 significant bits
     * against bf16's 8 keep the rounding of the conv filters and maps from
     * flipping near-tied classes (docs/mambavision.md: MambaVision-B's
     * top-1 agreement), at bf16's speed; it falls back to bf16 conv stages
     * where a filter the GPU rounds to fp16 is beyond fp16's range. */
    int plans[3][2], nplans = 0;
    if (model->config.kind == MVRT_MODEL_NETWORK && s16) {
        if (s16 == MVRT_STORAGE16_BF16 && backend_takes_storage16(g->backend, MVRT_STORAGE16_F16))
            plans[nplans][0] = s16, plans[nplans++][1] = MVRT_STORAGE16_F16;
        plans[nplans][0] = plans[nplans][1] = s16, nplans++;
    }
    plans[nplans][0] = plans[nplans][1] = 0, nplans++;
    builder_t b = {0};
    for (int i = 0; i < nplans; i++) {
        g->scratch_bytes = 0;
        g->w16_count = 0;
        g->filter_count = g->filter_bytes = 0;
        free(b.vb);
        b = (builder_t){.g = g, .weights = mvrt_buffer_data(model->weights), .store16 = s16, .map16 = plans[i][0],
                        .conv16 = plans[i][1], .weights16 = fake16, .conv_filters16 = fake_filters};
        emit_all(&b);
        if (b.status != MVRT_OK)
            break;
        if (b.map16_declined)
            continue;
        if (b.conv16 != b.map16 && !weights_fit_f16(g, &b.status) && b.status == MVRT_OK)
            continue;
        break;
    }
    if (b.status == MVRT_OK && b.nodes)
        note_refs(&b, &b.pending, b.nodes - 1);
    size_t total = 0;
    if (b.status == MVRT_OK)
        b.status = plan_offsets(b.vb, b.nvb, &total);
    if (b.status) {
        free(b.vb), free(g->w16_ranges), free(g->filters), free(g);
        return b.status;
    }
    /* emit_all asks for the input first, the output second */
    g->in_offset = b.vb[0].offset, g->out_offset = b.vb[1].offset;
    g->scratch_offset = total;
    total += (g->scratch_bytes + 255) & ~(size_t)255;
    g->workspace_bytes = total;
    st = mvrt_buffer_alloc(g->backend, total ? total : 256, &g->workspace);
    if (st) {
        free(b.vb), free(g->w16_ranges), free(g->filters), free(g);
        return st;
    }
    if ((st = zero_buffers(g, b.vb, b.nvb)) != MVRT_OK ||
        (fake16 && ((st = make_weights16(g, s16)) != MVRT_OK || (st = make_conv_filters16(g)) != MVRT_OK))) {
        free(b.vb);
        mvrt_graph_destroy(g);
        return st;
    }

    /* Emit: the same walk with the planned places. */
    builder_t e = {.g = g, .emit = 1, .vb = b.vb, .vb_cap = b.nvb, .base = mvrt_buffer_data(g->workspace),
                   .weights = mvrt_buffer_data(model->weights), .store16 = s16, .map16 = b.map16, .conv16 = b.conv16,
                   .weights16 = g->weights16 ? mvrt_buffer_data(g->weights16) : NULL,
                   .conv_filters16 = g->conv_filters16 ? mvrt_buffer_data(g->conv_filters16) : NULL};
    emit_all(&e);
    free(b.vb);
    if (e.status == MVRT_OK && e.nvb != b.nvb)
        e.status = mvrt_error_set(MVRT_ERR_INTERNAL, "%s: the emit pass asked for %zu buffers, the plan %zu", fn,
                                  e.nvb, b.nvb);
    if (e.status) {
        mvrt_graph_destroy(g);
        return e.status;
    }
    *out_graph = g;
    return MVRT_OK;
}

void mvrt_graph_destroy(mvrt_graph_t *graph)
{
    if (!graph)
        return;
    mvrt_backend_t *be = graph->backend;
    if (graph->exec && be->vt->graph_destroy)
        be->vt->graph_destroy(be->device, graph->exec);
    mvrt_buffer_free(graph->workspace);
    mvrt_buffer_free(graph->weights16);
    mvrt_buffer_free(graph->conv_filters16);
    free(graph->w16_ranges);
    free(graph->filters);
    free(graph->nodes);
    free(graph);
}

static mvrt_tensor_t workspace_tensor(const mvrt_graph_t *g, size_t offset, int32_t rank, const int64_t *shape)
{
    return mvrt_tensor_make(g->workspace, offset, MVRT_DTYPE_F32, rank, shape);
}

mvrt_status_t mvrt_graph_input(const mvrt_graph_t *graph, mvrt_tensor_t *out_tensor)
{
    if (!graph || !out_tensor)
        return mvrt_error_set(INVALID, "mvrt_graph_input: %s is NULL", !graph ? "graph" : "out_tensor");
    *out_tensor = workspace_tensor(graph, graph->in_offset, graph->in_rank, graph->in_shape);
    return MVRT_OK;
}

mvrt_status_t mvrt_graph_output(const mvrt_graph_t *graph, mvrt_tensor_t *out_tensor)
{
    if (!graph || !out_tensor)
        return mvrt_error_set(INVALID, "mvrt_graph_output: %s is NULL", !graph ? "graph" : "out_tensor");
    *out_tensor = workspace_tensor(graph, graph->out_offset, graph->out_rank, graph->out_shape);
    return MVRT_OK;
}

static mvrt_status_t check_io(const mvrt_graph_t *g, const char *what, const mvrt_tensor_t *t, int32_t rank,
                              const int64_t *shape)
{
    static const char fn[] = "mvrt_graph_run";
    if (!t->buffer)
        return mvrt_error_set(INVALID, "%s: %s has no buffer", fn, what);
    if (t->buffer->backend != g->backend)
        return mvrt_error_set(INVALID, "%s: %s is on backend %s, the graph on %s", fn, what,
                              t->buffer->backend->name, g->backend->name);
    if (t->dtype != MVRT_DTYPE_F32)
        return mvrt_error_set(INVALID, "%s: %s has dtype %s; graphs take f32", fn, what, mvrt_dtype_name(t->dtype));
    int same = t->rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = t->shape[i] == shape[i];
    if (!same) {
        char want[96] = "(", got[96] = "(";
        for (int i = 0; i < rank; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? ", " : "", (long long)shape[i]);
        for (int i = 0; i < t->rank && i < MVRT_MAX_RANK; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "", (long long)t->shape[i]);
        return mvrt_error_set(INVALID, "%s: %s has shape %s), the graph's is %s)", fn, what, got, want);
    }
    if (!mvrt_tensor_is_contiguous(t))
        return mvrt_error_set(INVALID, "%s: %s must be contiguous", fn, what);
    int64_t n = mvrt_tensor_numel(t);
    if (t->offset > t->buffer->size || (uint64_t)n * 4 > t->buffer->size - t->offset)
        return mvrt_error_set(INVALID, "%s: %s extends past the end of its buffer", fn, what);
    return MVRT_OK;
}

static mvrt_status_t run_node(mvrt_graph_t *g, void *stream, const gnode_t *n, void *scratch);

/* The ops' scratch: the workspace's tail, or NULL where no op needs any. */
static void *graph_scratch(const mvrt_graph_t *g)
{
    return g->scratch_bytes ? (char *)mvrt_buffer_data(g->workspace) + g->scratch_offset : NULL;
}

static mvrt_status_t run_nodes(mvrt_graph_t *g, void *stream)
{
    void *scratch = graph_scratch(g);
    for (size_t i = 0; i < g->count; i++) {
        mvrt_status_t st = run_node(g, stream, &g->nodes[i], scratch);
        if (st)
            return st;
    }
    return MVRT_OK;
}

static int capture_enabled(void)
{
    const char *e = getenv("MVRT_GRAPH_CAPTURE");
    return !(e && strcmp(e, "0") == 0);
}

mvrt_status_t mvrt_graph_run(mvrt_graph_t *graph, mvrt_stream_t *stream, const mvrt_tensor_t *input,
                             const mvrt_tensor_t *output)
{
    static const char fn[] = "mvrt_graph_run";
    if (!graph)
        return mvrt_error_set(INVALID, "%s: graph is NULL", fn);
    mvrt_backend_t *be = graph->backend;
    if (stream && stream->backend != be)
        return mvrt_error_set(INVALID, "%s: stream is on backend %s, the graph on %s", fn, stream->backend->name,
                              be->name);
    mvrt_status_t st;
    if (input && (st = check_io(graph, "input", input, graph->in_rank, graph->in_shape)))
        return st;
    if (output && (st = check_io(graph, "output", output, graph->out_rank, graph->out_shape)))
        return st;
    void *s = mvrt_stream_handle_for(be, stream);
    char *ws = mvrt_buffer_data(graph->workspace);
    if (input) {
        size_t bytes = (size_t)mvrt_tensor_numel(input) * sizeof(float);
        st = be->vt->copy_d2d(be->device, s, ws + graph->in_offset,
                              (char *)mvrt_buffer_data(input->buffer) + input->offset, bytes);
        if (st)
            return st;
    }
    if (graph->exec) {
        st = be->vt->graph_launch(be->device, graph->exec, s);
    } else if (be->vt->graph_capture_begin && !graph->capture_failed && capture_enabled()) {
        /* Capture once; if the backend cannot capture these ops, fall back
         * to launching op by op from now on. */
        st = be->vt->graph_capture_begin(be->device, s);
        if (st == MVRT_OK) {
            mvrt_status_t run_st = run_nodes(graph, s);
            void *exec = NULL;
            mvrt_status_t end_st = be->vt->graph_capture_end(be->device, s, &exec);
            if (run_st == MVRT_OK && end_st == MVRT_OK) {
                graph->exec = exec;
                st = be->vt->graph_launch(be->device, exec, s);
            } else {
                if (exec)
                    be->vt->graph_destroy(be->device, exec);
                graph->capture_failed = 1;
                st = run_nodes(graph, s);
            }
        } else {
            graph->capture_failed = 1;
            st = run_nodes(graph, s);
        }
    } else {
        st = run_nodes(graph, s);
    }
    if (st)
        return st;
    if (output) {
        int64_t n = 1;
        for (int i = 0; i < graph->out_rank; i++)
            n *= graph->out_shape[i];
        st = be->vt->copy_d2d(be->device, s, (char *)mvrt_buffer_data(output->buffer) + output->offset,
                              ws + graph->out_offset, (size_t)n * sizeof(float));
        if (st)
            return st;
    }
    graph->runs++;
    return MVRT_OK;
}

static void describe_node(const gnode_t *n, mvrt_graph_op_profile_t *r)
{
    static const char *const names[MVRT_OP_KIND_COUNT_] = {
        "?",        "layernorm", "linear", "dwconv1d",   "attention", "conv2d",
        "win_part", "win_rev",   "pool",   "mixer_proj", "mlp"};
    memset(r, 0, sizeof *r);
    if (n->type == NODE_COPY) {
        snprintf(r->op, sizeof r->op, "copy");
        snprintf(r->shape, sizeof r->shape, "%zu bytes", n->bytes);
        return;
    }
    if (n->type == NODE_SCAN) {
        const mvrt_scan_params_t *q = &n->scan;
        snprintf(r->op, sizeof r->op, "scan");
        snprintf(r->shape, sizeof r->shape, "b%lld D%lld L%lld N%lld", (long long)q->batch, (long long)q->dim,
                 (long long)q->seqlen, (long long)q->dstate);
        return;
    }
    const mvrt_op_params_t *o = &n->op;
    const int k = (int)o->kind;
    snprintf(r->op, sizeof r->op, "%s", k > 0 && k < MVRT_OP_KIND_COUNT_ ? names[k] : "?");
    r->flops = op_flops(o);
    switch (o->kind) {
    case MVRT_OP_LAYERNORM:
        snprintf(r->shape, sizeof r->shape, "%lld x %lld", (long long)o->u.layernorm.rows,
                 (long long)o->u.layernorm.cols);
        break;
    case MVRT_OP_LINEAR: {
        const mvrt_linear_params_t *l = &o->u.linear;
        snprintf(r->shape, sizeof r->shape, "b%lld M%lld N%lld K%lld", (long long)l->batch, (long long)l->M,
                 (long long)l->N, (long long)l->K);
        break;
    }
    case MVRT_OP_DWCONV1D_SILU: {
        const mvrt_dwconv1d_params_t *d = &o->u.dwconv1d;
        snprintf(r->shape, sizeof r->shape, "b%lld C%lld L%lld w%d", (long long)d->batch, (long long)d->channels,
                 (long long)d->length, d->width);
        break;
    }
    case MVRT_OP_ATTENTION: {
        const mvrt_attention_params_t *a = &o->u.attention;
        snprintf(r->shape, sizeof r->shape, "b%lld L%lld h%d d%d", (long long)a->batch, (long long)a->length,
                 a->heads, a->head_dim);
        break;
    }
    case MVRT_OP_CONV2D: {
        const mvrt_conv2d_params_t *c = &o->u.conv2d;
        /* the 16-bit maps' types (x>y where they differ): which convs of
         * a bf16 graph run in fp16 */
        const char *tx = c->x_nhwc16 == MVRT_STORAGE16_F16 ? "fp16" : c->x_nhwc16 ? "bf16" : "f32";
        const char *ty = c->y_nhwc16 == MVRT_STORAGE16_F16 ? "fp16" : "bf16";
        char types[16] = "";
        if (c->y_nhwc16 && c->x_nhwc16 == c->y_nhwc16)
            snprintf(types, sizeof types, " %s", ty);
        else if (c->y_nhwc16)
            snprintf(types, sizeof types, " %s>%s", tx, ty);
        snprintf(r->shape, sizeof r->shape, "b%lld %lld->%lld %lldx%lld k%d s%d%s", (long long)c->batch,
                 (long long)c->in_channels, (long long)c->out_channels, (long long)c->in_h, (long long)c->in_w,
                 c->kernel, c->stride, types);
        break;
    }
    case MVRT_OP_WINDOW_PARTITION:
    case MVRT_OP_WINDOW_REVERSE: {
        const mvrt_window_params_t *w = &o->u.window;
        snprintf(r->shape, sizeof r->shape, "b%lld C%lld %lldx%lld w%d", (long long)w->batch,
                 (long long)w->channels, (long long)w->height, (long long)w->width, w->window);
        break;
    }
    case MVRT_OP_MIXER_PROJ: {
        const mvrt_mixer_proj_params_t *q = &o->u.mixer_proj;
        snprintf(r->shape, sizeof r->shape, "b%lld L%lld C%lld R%lld N%lld", (long long)q->batch,
                 (long long)q->length, (long long)q->channels, (long long)q->dt_rank, (long long)q->dstate);
        break;
    }
    case MVRT_OP_MLP: {
        const mvrt_mlp_params_t *q = &o->u.mlp;
        snprintf(r->shape, sizeof r->shape, "M%lld C%lld H%lld", (long long)q->rows, (long long)q->channels,
                 (long long)q->hidden);
        break;
    }
    case MVRT_OP_AFFINE_AVGPOOL: {
        const mvrt_affine_avgpool_params_t *q = &o->u.pool;
        snprintf(r->shape, sizeof r->shape, "b%lld C%lld S%lld", (long long)q->batch, (long long)q->channels,
                 (long long)q->spatial);
        break;
    }
    default: break;
    }
}

static mvrt_status_t run_node(mvrt_graph_t *g, void *stream, const gnode_t *n, void *scratch)
{
    mvrt_backend_t *be = g->backend;
    if (n->type == NODE_OP)
        return be->vt->op_run(be->device, stream, &n->op, scratch);
    if (n->type == NODE_SCAN)
        return be->vt->scan_fwd(be->device, stream, &n->scan);
    return be->vt->copy_d2d(be->device, stream, n->dst, n->src, n->bytes);
}

/* The arguments both profiles take (their contracts: include/mvrt/model.h). */
static mvrt_status_t check_profile_args(const char *fn, const mvrt_graph_t *graph, const mvrt_stream_t *stream,
                                        const mvrt_graph_op_profile_t *out_ops, size_t capacity,
                                        const size_t *out_count)
{
    if (!graph || !out_count)
        return mvrt_error_set(INVALID, "%s: %s is NULL", fn, !graph ? "graph" : "out_count");
    if (capacity && !out_ops)
        return mvrt_error_set(INVALID, "%s: out_ops is NULL with capacity %zu", fn, capacity);
    if (stream && stream->backend != graph->backend)
        return mvrt_error_set(INVALID, "%s: stream is on backend %s, the graph on %s", fn, stream->backend->name,
                              graph->backend->name);
    return MVRT_OK;
}

mvrt_status_t mvrt_graph_profile(mvrt_graph_t *graph, mvrt_stream_t *stream, mvrt_graph_op_profile_t *out_ops,
                                 size_t capacity, size_t *out_count)
{
    static const char fn[] = "mvrt_graph_profile";
    mvrt_status_t ast = check_profile_args(fn, graph, stream, out_ops, capacity, out_count);
    if (ast != MVRT_OK)
        return ast;
    mvrt_backend_t *be = graph->backend;
    if (!be->vt->event_create || !be->vt->event_record || !be->vt->event_elapsed_ms)
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED, "%s: backend %s has no timing events", fn, be->name);
    void *s = mvrt_stream_handle_for(be, stream);
    void *scratch = graph_scratch(graph);
    const size_t n = graph->count;
    void **ev = mvrt_rt_calloc(n + 1, sizeof *ev);
    if (!ev)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu event handles", fn, n + 1);
    mvrt_status_t st = MVRT_OK;
    size_t made = 0;
    for (; made <= n && st == MVRT_OK; made++)
        st = be->vt->event_create(be->device, &ev[made]);
    if (st != MVRT_OK)
        made--; /* the failed one holds nothing */
    if (st == MVRT_OK)
        st = be->vt->event_record(be->device, ev[0], s);
    for (size_t i = 0; i < n && st == MVRT_OK; i++) {
        st = run_node(graph, s, &graph->nodes[i], scratch);
        if (st == MVRT_OK)
            st = be->vt->event_record(be->device, ev[i + 1], s);
    }
    if (st == MVRT_OK)
        st = be->vt->event_synchronize(be->device, ev[n]);
    for (size_t i = 0; i < n && i < capacity && st == MVRT_OK; i++) {
        float ms = 0.f;
        st = be->vt->event_elapsed_ms(be->device, ev[i], ev[i + 1], &ms);
        describe_node(&graph->nodes[i], &out_ops[i]);
        out_ops[i].ms = ms;
    }
    for (size_t i = 0; i < made; i++)
        be->vt->event_destroy(be->device, ev[i]);
    free(ev);
    if (st != MVRT_OK)
        return st;
    *out_count = n;
    return MVRT_OK;
}

/* Captures `repeats` runs of node n on stream s into a graph of its own,
 * replays it once, then three times with events e0 / e1 around each, and
 * sets *ms to the fastest replay's time divided by `repeats`. */
static mvrt_status_t time_node_replayed(mvrt_graph_t *graph, void *s, const gnode_t *n, void *scratch, int repeats,
                                        void *e0, void *e1, float *ms)
{
    mvrt_backend_t *be = graph->backend;
    const struct mvrt_plugin_vtable *vt = be->vt;
    mvrt_status_t st = vt->graph_capture_begin(be->device, s);
    if (st != MVRT_OK)
        return st;
    mvrt_status_t run_st = MVRT_OK;
    for (int r = 0; r < repeats && run_st == MVRT_OK; r++)
        run_st = run_node(graph, s, n, scratch);
    void *exec = NULL;
    /* end the capture even after a failed op, so the stream is usable */
    const mvrt_status_t end_st = vt->graph_capture_end(be->device, s, &exec);
    if (run_st != MVRT_OK || end_st != MVRT_OK) {
        if (exec)
            vt->graph_destroy(be->device, exec);
        /* the backend's capture_end names what failed */
        return run_st != MVRT_OK ? run_st : end_st;
    }
    st = vt->graph_launch(be->device, exec, s);
    float best = -1.f;
    for (int k = 0; k < 3 && st == MVRT_OK; k++) {
        float t = 0.f;
        st = vt->event_record(be->device, e0, s);
        if (st == MVRT_OK)
            st = vt->graph_launch(be->device, exec, s);
        if (st == MVRT_OK)
            st = vt->event_record(be->device, e1, s);
        if (st == MVRT_OK)
            st = vt->event_synchronize(be->device, e1);
        if (st == MVRT_OK)
            st = vt->event_elapsed_ms(be->device, e0, e1, &t);
        if (st == MVRT_OK && (best < 0.f || t < best))
            best = t;
    }
    vt->graph_destroy(be->device, exec);
    *ms = best / (float)repeats;
    return st;
}

mvrt_status_t mvrt_graph_profile_replayed(mvrt_graph_t *graph, mvrt_stream_t *stream, int repeats,
                                          mvrt_graph_op_profile_t *out_ops, size_t capacity, size_t *out_count)
{
    static const char fn[] = "mvrt_graph_profile_replayed";
    mvrt_status_t ast = check_profile_args(fn, graph, stream, out_ops, capacity, out_count);
    if (ast != MVRT_OK)
        return ast;
    if (repeats < 1 || repeats > 1000)
        return mvrt_error_set(INVALID, "%s: repeats is %d, not in 1..1000", fn, repeats);
    mvrt_backend_t *be = graph->backend;
    const struct mvrt_plugin_vtable *vt = be->vt;
    if (!vt->graph_capture_begin || !vt->graph_capture_end || !vt->graph_launch || !vt->graph_destroy)
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED, "%s: backend %s has no graph capture (mvrt_graph_profile times "
                              "ops there)", fn, be->name);
    if (!vt->event_create || !vt->event_record || !vt->event_elapsed_ms || !vt->event_synchronize)
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED, "%s: backend %s has no timing events", fn, be->name);
    if (graph->capture_failed)
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED, "%s: this graph's ops could not be captured (it runs op by op)",
                              fn);
    void *s = mvrt_stream_handle_for(be, stream);
    void *scratch = graph_scratch(graph);
    void *e0 = NULL, *e1 = NULL;
    mvrt_status_t st = vt->event_create(be->device, &e0);
    if (st == MVRT_OK)
        st = vt->event_create(be->device, &e1);
    const size_t n = graph->count;
    for (size_t i = 0; i < n && st == MVRT_OK; i++) {
        float ms = 0.f;
        st = time_node_replayed(graph, s, &graph->nodes[i], scratch, repeats, e0, e1, &ms);
        if (st == MVRT_OK && i < capacity) {
            describe_node(&graph->nodes[i], &out_ops[i]);
            out_ops[i].ms = ms;
        }
    }
    if (e1)
        vt->event_destroy(be->device, e1);
    if (e0)
        vt->event_destroy(be->device, e0);
    if (st != MVRT_OK)
        return st;
    *out_count = n;
    return MVRT_OK;
}

mvrt_status_t mvrt_graph_get_stats(const mvrt_graph_t *graph, mvrt_graph_stats_t *out_stats)
{
    if (!graph || !out_stats)
        return mvrt_error_set(INVALID, "mvrt_graph_get_stats: %s is NULL", !graph ? "graph" : "out_stats");
    const size_t w16 = (graph->weights16 ? graph->weights16->size : 0) +
                       (graph->conv_filters16 ? graph->conv_filters16->size : 0);
    mvrt_graph_stats_t s = {graph->workspace_bytes + w16, graph->model->weight_bytes, (int64_t)graph->count,
                            graph->exec != NULL, graph->runs, graph->flops};
    *out_stats = s;
    return MVRT_OK;
}
