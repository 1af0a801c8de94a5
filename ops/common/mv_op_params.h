/* Resolved arguments of the MambaVision ops (everything except the scan,
 * which has ops/selective_scan/scan_params.h): raw pointers into device
 * memory (host memory on the CPU backend), sizes and element strides.
 *
 * Contract: the graph runner builds these after planning its workspace and
 * validating the model, so kernels may assume consistent, in-range values
 * and non-overlapping inputs/outputs unless a field says otherwise. Data
 * is float32 except where a 16-bit storage field says otherwise (below).
 * Plain C shared by the double reference, the CPU
 * kernels and the GPU kernel sources: no runtime headers here.
 *
 * One op reaches a backend through mvrt_plugin_vtable_t::op_run as a
 * mvrt_op_params_t whose `kind` selects the member of the union. A backend
 * returns MVRT_ERR_UNSUPPORTED (with a message) for a kind it lacks. */
#ifndef MVRT_OPS_MV_OP_PARAMS_H
#define MVRT_OPS_MV_OP_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mvrt_op_kind {
    MVRT_OP_LAYERNORM = 1,
    MVRT_OP_LINEAR = 2,
    MVRT_OP_DWCONV1D_SILU = 3,
    MVRT_OP_ATTENTION = 4,
    MVRT_OP_CONV2D = 5,
    MVRT_OP_WINDOW_PARTITION = 6,
    MVRT_OP_WINDOW_REVERSE = 7,
    MVRT_OP_AFFINE_AVGPOOL = 8,
    MVRT_OP_MIXER_PROJ = 9,
    MVRT_OP_MLP = 10,
    MVRT_OP_KIND_COUNT_ = 11
} mvrt_op_kind_t;

/* Activations applied by the linear and conv2d epilogues. */
typedef enum mvrt_activation {
    MVRT_ACT_NONE = 0,
    MVRT_ACT_RELU = 1,
    MVRT_ACT_GELU_ERF = 2,   /* x/2 (1 + erf(x / sqrt 2)), PyTorch's nn.GELU() */
    MVRT_ACT_GELU_TANH = 3,  /* PyTorch's GELU(approximate='tanh') */
    MVRT_ACT_SILU = 4
} mvrt_activation_t;

/* How a linear or conv multiplies: exact fp32 (default, matches PyTorch with
 * TF32 off), or an opt-in fast mode: TF32 tensor cores (FAST), or bf16 /
 * fp16 operands rounded from fp32 with fp32 accumulation and output (BF16,
 * FP16, as PyTorch autocast). Backends without a faster path compute fp32. */
typedef enum mvrt_math_mode {
    MVRT_MATH_FP32 = 0,
    MVRT_MATH_FAST = 1,
    MVRT_MATH_BF16 = 2,
    MVRT_MATH_FP16 = 3
} mvrt_math_mode_t;

/* 16-bit storage fields (layernorm x16 / y16, linear a16 / y16 / b16,
 * conv2d x_nhwc16 / y_nhwc16, window map_nhwc16, pool x_nhwc16) hold 0
 * (the operand is floats) or the 16-bit type the operand is stored in:
 * MVRT_DTYPE_BF16 (3) or MVRT_DTYPE_F16 (2) of include/mvrt/core.h, as
 * uint16_t bits, values rounded to nearest even when stored. The 16-bit
 * fields of one op that are set hold the same type, and with math BF16 or
 * FP16 that math's type; the one exception is a conv between two 16-bit
 * maps without a residual, whose y may hold the other type (y_nhwc16).
 * Backends answer MVRT_ERR_UNSUPPORTED for anything else
 * (mvrt_op_storage16). */
enum { MVRT_STORAGE16_F16 = 2, MVRT_STORAGE16_BF16 = 3 };

/* y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * weight + bias over `cols`
 * (biased variance, as PyTorch). x and y are row-major with row strides
 * x_ld / y_ld (>= cols); y may equal x (in place). */
typedef struct mvrt_layernorm_params {
    int64_t rows, cols;
    const float *x; int64_t x_ld;
    float *y; int64_t y_ld;
    const float *weight, *bias;   /* (cols) */
    float eps;
    /* 16-bit storage (see MVRT_STORAGE16_*): y holds 16-bit bits (row
     * stride y_ld elements; the CPU computes into scratch and rounds)
     * instead of floats; y may then not alias x. The graph runner asks for
     * it in 16-bit math modes where only a 16-bit GEMM reads y. */
    int y16;
    /* x holds 16-bit bits (row stride x_ld elements) instead of floats,
     * widened exactly; the statistics stay fp32. y may then not alias x.
     * The graph runner's 16-bit residual stream (see linear y16). */
    int x16;
} mvrt_layernorm_params_t;

/* Batched GEMM with epilogue, row-major. For b in [0, batch):
 *   Y_b = beta * Y_b + act(op(A_b) op(B_b) + bias)
 * op(A_b) is M x K: A_b stored M x K (row stride lda) when !trans_a, or
 * K x M (row stride lda) when trans_a. op(B_b) is K x N: stored K x N when
 * !trans_b, or N x K when trans_b (a PyTorch weight (out, in) used as
 * x W^T is B with trans_b = 1). A_b = A + b * batch_stride_a (0 shares one
 * matrix over the batch), likewise B and Y. Y is M x N with row stride ldy.
 * bias: NULL, or per column (bias[n], bias_per_row = 0) or per row
 * (bias[m], bias_per_row = 1). beta is 0 or 1; with beta = 1 the
 * activation must be NONE (a residual accumulate). Y never aliases A or B.
 * residual: NULL, or with beta = 1 the matrix added in place of Y's own
 * contents (same shape, ldy and batch_stride_y as Y; read, never written):
 *   Y_b = residual_b + op(A_b) op(B_b) + bias
 * so that a block's output need not start as a copy of its input; it may
 * equal Y (then as NULL) and aliases neither A nor B. */
typedef struct mvrt_linear_params {
    int64_t batch, M, N, K;
    const float *A; int64_t lda, batch_stride_a; int trans_a;
    const float *B; int64_t ldb, batch_stride_b; int trans_b;
    float *Y; int64_t ldy, batch_stride_y;
    const float *bias; int bias_per_row;
    int activation;   /* mvrt_activation_t */
    float beta;       /* 0 or 1 */
    int math;         /* mvrt_math_mode_t */
    /* 16-bit storage (see MVRT_STORAGE16_*), with the same leading
     * dimensions and batch strides in elements (the CPU converts through
     * scratch). a16: A is 16-bit. y16: Y is stored 16-bit, rounded after
     * bias and activation; with beta 1 the residual (Y's own contents, or
     * `residual`) is 16-bit of the same type too (a 16-bit residual
     * stream): Y = round(R + op(A) op(B) + bias), one rounding where the
     * epilogue is fused (the CPU, Hopper's 16-bit GEMMs, the fp32
     * fallback), two (the product + R, then + bias) where a vendor GEMM
     * is followed by the epilogue pass, as autocast's linear followed by
     * its residual add. With math BF16 / FP16 and a vendor GEMM the
     * product reads / writes them directly; otherwise they are converted
     * through fp32 scratch. */
    int a16, y16;
    /* GPU backends only, where op_scratch_size takes it (the CPU and HIP
     * answer UNSUPPORTED): a LayerNorm of A's rows folded into the
     * product. With ln_weight non-NULL, op(A) is replaced by LN(A),
     *   LN(A)[m, k] = (A[m, k] - mean_m) / sqrt(var_m + ln_eps) * ln_weight[k]
     *                 + beta[k]
     * (mean and biased variance of row m over its K columns), where the
     * LayerNorm's shift beta enters only through `bias` (per column),
     * which the caller sets to b + op(B)^T beta, and
     *   ln_colsum[n] = sum_k op(B)[k, n] ln_weight[k]   (N values).
     * Needs trans_a = 0, K a multiple of 8, fp32 math, no 16-bit storage,
     * a bias per column. The graph runner computes both vectors when it
     * loads the weights (<linear>.ln_colsum / .ln_bias) and emits the
     * LayerNorm and the linear separately where a backend declines. */
    const float *ln_weight, *ln_colsum;
    float ln_eps;
    const float *residual; /* with beta 1: added instead of Y (NULL: Y; above) */
    /* 1: B holds constants (a model's weight) that no earlier work on the
     * stream writes, so a GPU backend may read it before that work has
     * finished (a programmatic dependent launch); 0: B may be an earlier
     * op's output. The graph runner sets it for its weights. */
    int b_constant;
    /* 16-bit B (see MVRT_STORAGE16_*; ldb and batch_stride_b in
     * elements), with math BF16 / FP16 only, of that math's type: a 16-bit
     * graph's weights, rounded once when the graph is made instead of on
     * every run, or a 16-bit activation (the mixer's u and x_proj output).
     * Backends without a 16-bit vendor GEMM (HIP) decline it; the CPU
     * takes it for activations only (b_constant 0: widened through
     * scratch, fp32 math) and declines it for weights (b_constant 1: it
     * multiplies the fp32 weights); op_scratch_size answers UNSUPPORTED. */
    int b16;
} mvrt_linear_params_t;

/* Depthwise conv1d along L with PyTorch's padding='same' (left pad
 * (width-1)/2, right pad the rest, zeros), no bias, then SiLU:
 *   y[b, c, l] = silu(sum_j w[c, j] * x[b, c, l + j - (width-1)/2])
 * Element (b, c, l) of x is x[b*x_stride[0] + c*x_stride[1] + l*x_stride[2]]
 * and likewise for y, so the op can read token-major (Bw, L, C) slices and
 * write channel-major (Bw, C, L) rows for the scan. weight is (channels,
 * width) contiguous. y never aliases x.
 * Two parts in one op (split in (0, channels); 0: one part): channels
 * c >= split write y2 instead, element (b, c - split, l) at
 * y2[b*y2_stride[0] + (c-split)*y2_stride[1] + l*y2_stride[2]], with the
 * weights of row c - split of weight2. MambaVision's conv1d_x and conv1d_z
 * read the two halves of one token-major buffer and write to different
 * places (the scan's input, the second half of the out_proj input): one
 * op, one launch on GPUs. y2 never aliases x.
 * 16-bit storage (MVRT_STORAGE16_*, one type per op; strides stay in
 * elements): x16, x is stored in 16 bits (a 16-bit graph's in_proj output);
 * y_copy16, y_copy receives a second, 16-bit copy of the first part's
 * output, rounded from the same fp32 values y gets, at y's strides (the
 * operand of a 16-bit x_proj GEMM while the scan reads y). y_copy is NULL
 * unless y_copy16 is set and aliases none of x, y, y2. y16: y and y2 hold
 * 16-bit values instead of floats (same strides), each rounded once from
 * the fp32 result (a 16-bit graph's whole mixer chain: the scan's u, and z
 * beside the scan's output); y_copy is then NULL. Backends that cannot
 * run a form decline it (op_scratch_size answers UNSUPPORTED): the GPUs
 * take the three on their whole-row kernel only (dwconv1d_gpu.cuh); the
 * CPU takes all three. */
typedef struct mvrt_dwconv1d_params {
    int64_t batch, channels, length;
    int width;
    const float *x; int64_t x_stride[3];
    float *y; int64_t y_stride[3];
    const float *weight;
    int64_t split;
    float *y2; int64_t y2_stride[3];
    const float *weight2;
    int x16;
    float *y_copy; int y_copy16;
    int y16;
} mvrt_dwconv1d_params_t;

/* Multi-head self-attention, not causal, no mask:
 *   qkv (batch, L, 3 * heads * head_dim) row-major, laid out as PyTorch's
 *   qkv(x).reshape(B, L, 3, heads, head_dim): q = [0, C), k = [C, 2C),
 *   v = [2C, 3C) with C = heads * head_dim; head h is columns
 *   [h*head_dim, (h+1)*head_dim) of each part.
 *   out (batch, L, C) row-major, head h at columns [h*head_dim, ...):
 *   out = softmax(q k^T * scale) v per (batch, head).
 * math MVRT_MATH_BF16 (FP16) lets a GPU with bf16 (fp16) tensor cores round
 * q, k, v and the softmax weights to that type (fp32 accumulation and
 * softmax); every other
 * mode, and the CPU, compute with fp32 accuracy (on NVIDIA sm_80+ as 3xTF32
 * on tensor cores: each operand split into two TF32 parts, three products
 * summed in fp32).
 * 16-bit storage (see MVRT_STORAGE16_*; bf16 / fp16 math of that type):
 * qkv16 set: qkv holds 16-bit values (same layout and strides) instead of
 * floats; out16 set: out holds 16-bit values, each rounded once from the
 * fp32 result. A backend takes these forms only where it serves them
 * (op_scratch_size answers UNSUPPORTED otherwise: CUDA with the 16-bit
 * tensor-core kernels, L <= 256, head_dim <= 64, both fields set; the CPU
 * through fp32 scratch, either field). */
typedef struct mvrt_attention_params {
    int64_t batch, length;
    int heads, head_dim;
    float scale;          /* 1/sqrt(head_dim) */
    const float *qkv;
    float *out;
    int math;             /* mvrt_math_mode_t */
    int qkv16, out16;
} mvrt_attention_params_t;

/* 2-D convolution, NCHW, dense (groups 1), square kernel, zero padding:
 *   y[b, o, i, j] = act(bias[o] + sum_{c, p, q} w[o, c, p, q] *
 *                       x[b, c, i*stride + p - pad, j*stride + q - pad])
 *                   + residual[b, o, i, j]        (residual optional)
 * out_h = (in_h + 2 pad - kernel) / stride + 1, likewise out_w. weight is
 * (out_channels, in_channels, kernel, kernel) contiguous; bias may be NULL;
 * residual (same shape as y) may be NULL and may not alias y. y never
 * aliases x. BatchNorm is folded into weight and bias by the model builder. */
typedef struct mvrt_conv2d_params {
    int64_t batch, in_channels, in_h, in_w;
    int64_t out_channels, out_h, out_w;
    int kernel, stride, pad;
    const float *x;
    const float *weight, *bias;
    const float *residual;
    float *y;
    int activation;   /* mvrt_activation_t */
    int math;         /* mvrt_math_mode_t of the GEMM (GPU; the CPU computes in fp32) */
    /* 16-bit maps (the graph's 16-bit conv stages; see MVRT_STORAGE16_*):
     * x_nhwc16 set: x is NHWC 16-bit (channels contiguous) instead of NCHW
     * floats; y_nhwc16 set: y and residual are NHWC 16-bit, y rounded once
     * after bias, activation and residual. A backend takes these forms
     * only where it serves them (op_scratch_size answers UNSUPPORTED
     * otherwise: CUDA with CUTLASS on sm_80+ code, bf16 / fp16 math; the
     * CPU through fp32 scratch); activation and residual are not both set.
     * With both set and no residual, y may hold the other 16-bit type
     * than x and math (the graph's boundary between fp16 conv stages and
     * bf16 token stages): y is rounded to math's type after bias and
     * activation, as a map of that type would hold it, then to y's type
     * (two roundings, the same on every backend). */
    int x_nhwc16, y_nhwc16;
    /* Channels stored per position of the 16-bit maps (0: in_channels for
     * x, out_channels for y and residual; else at least that many, at most
     * 65536): a map padded to a multiple of 8 channels has 16-byte rows,
     * which Hopper's TMA loads need (MambaVision-L's 196 channels). Channels
     * past the model's hold zeros: y's are written as zeros, x's and the
     * residual's must be zeros (what such a conv leaves there). Only with
     * x_nhwc16 / y_nhwc16 set. */
    int64_t x_map_channels, y_map_channels;
    /* Filters prepared once, when a graph is created, for a conv between
     * two 16-bit maps (NULL: a backend that multiplies 16-bit filters
     * converts weight and bias on every run). weight16: weight rounded to
     * x's (and math's) 16-bit type (to nearest even), laid out (y_stored, kernel,
     * kernel, x_stored), zeros past out_channels and in_channels.
     * bias_stored: y_stored floats, bias (zeros where bias is NULL), then
     * zeros. Both or neither, both 256-byte aligned; only with x_nhwc16 and
     * y_nhwc16 set. weight and bias stay set: a backend may read them
     * instead (the CPU does: fp32 math). */
    const void *weight16;
    const float *bias_stored;
} mvrt_conv2d_params_t;

/* A conv's stored channels per position of x and y (see x_map_channels). */
static inline int64_t mvrt_conv2d_x_stored(const mvrt_conv2d_params_t *p)
{
    return p->x_map_channels ? p->x_map_channels : p->in_channels;
}
static inline int64_t mvrt_conv2d_y_stored(const mvrt_conv2d_params_t *p)
{
    return p->y_map_channels ? p->y_map_channels : p->out_channels;
}

/* Window partition and its reverse (MambaVision's window_partition /
 * window_reverse with the layer's zero padding and crop):
 *   map    (batch, channels, height, width) NCHW contiguous
 *   tokens (batch * nh * nw, window * window, channels) row-major, with
 *          nh = ceil(height / window), nw = ceil(width / window); windows in
 *          row-major (wh, ww) order per image, tokens row-major inside one.
 * PARTITION writes every token (zeros where the padded map is outside the
 * image); REVERSE writes every element of the map from its token (padding
 * tokens are dropped). The two never alias. */
typedef struct mvrt_window_params {
    int64_t batch, channels, height, width;
    int window;
    const float *src;
    float *dst;
    /* set (MVRT_STORAGE16_*): the map is NHWC 16-bit instead of NCHW
     * floats, the tokens stay floats (the graph's 16-bit conv stages;
     * backends that take the conv2d's nhwc16 forms take this) */
    int map_nhwc16;
} mvrt_window_params_t;

/* Per-channel affine then global average pool (BatchNorm2d at inference
 * followed by AdaptiveAvgPool2d(1) and flatten):
 *   y[b, c] = scale[c] * mean_{h, w} x[b, c, h, w] + shift[c]
 * x NCHW contiguous, y (batch, channels) contiguous. */
typedef struct mvrt_affine_avgpool_params {
    int64_t batch, channels, spatial;  /* spatial = height * width */
    const float *x;
    const float *scale, *shift;
    float *y;
    int x_nhwc16;   /* set (MVRT_STORAGE16_*): x is NHWC 16-bit instead of NCHW floats */
} mvrt_affine_avgpool_params_t;

/* The token-local middle of a MambaVision mixer, one op (GPU backends
 * that take it, for few tokens; the CPU answers UNSUPPORTED and the graph
 * runner emits the three ops it replaces: the two-part dwconv1d, x_proj
 * and dt_proj of runtime/graph.c, emit_mixer_block). For each token
 * (b, l) of Bw sequences of L tokens, C channels, h = C / 2:
 *   u[b, c, l]       = silu(conv1d_x(xz[b, :, c])[l])          c < h
 *   yz[b, h + c, l]  = silu(conv1d_z(xz[b, :, h + c])[l])      c < h
 *   dbl[b, e, l]     = sum_c x_proj_w[e, c] u[b, c, l]         e < E = R + 2N
 *   dt[b, c, l]      = sum_r dt_proj_w[c, r] dbl[b, r, l] + dt_bias[c]
 * conv1d with 'same' padding (left (width-1)/2) along l, no bias, as
 * mvrt_dwconv1d_params_t; xz (Bw, L, C) row-major; u, dt (Bw, h, L); dbl
 * (Bw, E, L); yz (Bw, C, L) (rows [0, h) untouched). Weights: conv (h,
 * width) each, x_proj (E, h), dt_proj (h, R), dt_bias (h). No output
 * aliases xz or another output.
 * dt_softplus = 1: dt holds the scan's step instead,
 *   dt[b, c, l] = softplus((sum_r ... + dt_bias[c]) + dt_bias[c])
 * (spec step 5: the bias a second time as delta_bias, then softplus, in
 * the scan kernels' order and function), so that the scan after it takes
 * neither delta_bias nor softplus: computed once per (token, channel)
 * here, off the scan's serial chain. */
typedef struct mvrt_mixer_proj_params {
    int64_t batch, length, channels, dstate, dt_rank;
    int width;
    const float *xz;
    float *u, *yz, *dbl, *dt;
    const float *conv_x_w, *conv_z_w, *x_proj_w, *dt_proj_w, *dt_bias;
    int dt_softplus;
} mvrt_mixer_proj_params_t;

/* The MLP half of a MambaVision block, one op (GPU backends that take
 * it: CUDA sm_90+ for few rows, fp32; the CPU and HIP answer UNSUPPORTED
 * and the graph runner emits LayerNorm, fc1 and fc2, runtime/graph.c
 * emit_mlp). Over the rows of x (rows, channels) row-major, in place:
 *   x[r, :] += fc2_w act(fc1_w LN(x[r, :]) + fc1_b) + fc2_b
 * LN as mvrt_layernorm_params_t (ln_weight, ln_bias, ln_eps); fc1_w
 * (hidden, channels), fc2_w (channels, hidden) PyTorch weights, fc1_b
 * (hidden), fc2_b (channels); the layer scale is already folded into
 * fc2 by the model builder. Every row is read before any is written. */
typedef struct mvrt_mlp_params {
    int64_t rows, channels, hidden;
    float *x;
    const float *ln_weight, *ln_bias;
    float ln_eps;
    const float *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    int activation;   /* mvrt_activation_t */
} mvrt_mlp_params_t;

typedef struct mvrt_op_params {
    int kind;  /* mvrt_op_kind_t */
    union {
        mvrt_layernorm_params_t layernorm;
        mvrt_linear_params_t linear;
        mvrt_dwconv1d_params_t dwconv1d;
        mvrt_attention_params_t attention;
        mvrt_conv2d_params_t conv2d;
        mvrt_window_params_t window;
        mvrt_affine_avgpool_params_t pool;
        mvrt_mixer_proj_params_t mixer_proj;
        mvrt_mlp_params_t mlp;
    } u;
} mvrt_op_params_t;

/* The op's 16-bit storage type: 0 (all floats), MVRT_STORAGE16_BF16 or
 * MVRT_STORAGE16_F16; -1 when its 16-bit fields break the rules above
 * (an unknown value, two types in one op, or a type other than its 16-bit
 * math's). Backends refuse -1 with MVRT_ERR_UNSUPPORTED. */
static inline int mvrt_op_storage16(const mvrt_op_params_t *p)
{
    int f[3] = {0, 0, 0}, math = MVRT_MATH_FP32;
    switch (p->kind) {
    case MVRT_OP_LAYERNORM: f[0] = p->u.layernorm.y16, f[1] = p->u.layernorm.x16; break;
    case MVRT_OP_LINEAR:
        f[0] = p->u.linear.a16, f[1] = p->u.linear.y16, f[2] = p->u.linear.b16, math = p->u.linear.math;
        break;
    case MVRT_OP_CONV2D: {
        const mvrt_conv2d_params_t *c = &p->u.conv2d;
        /* stored channels: only for 16-bit maps, between the channels and 2^16 */
        if ((c->x_map_channels && (!c->x_nhwc16 || c->x_map_channels < c->in_channels ||
                                   c->x_map_channels > 65536)) ||
            (c->y_map_channels && (!c->y_nhwc16 || c->y_map_channels < c->out_channels ||
                                   c->y_map_channels > 65536)))
            return -1;
        /* prepared filters: both, between two 16-bit maps, bias aligned */
        if ((!c->weight16 != !c->bias_stored) ||
            (c->weight16 && (!c->x_nhwc16 || !c->y_nhwc16 || (((uintptr_t)c->weight16 | (uintptr_t)c->bias_stored) & 255u))))
            return -1;
        f[0] = c->x_nhwc16, f[1] = c->y_nhwc16, math = c->math;
        /* y of the other 16-bit type (a graph's map between fp16 conv
         * stages and bf16 token stages; see x_nhwc16 above): not with a
         * residual, which would be read in y's type */
        if (c->y_nhwc16 && c->x_nhwc16 && !c->residual && c->y_nhwc16 != c->x_nhwc16 &&
            (c->y_nhwc16 == MVRT_STORAGE16_BF16 || c->y_nhwc16 == MVRT_STORAGE16_F16))
            f[1] = 0;
        break;
    }
    case MVRT_OP_WINDOW_PARTITION:
    case MVRT_OP_WINDOW_REVERSE: f[0] = p->u.window.map_nhwc16; break;
    case MVRT_OP_AFFINE_AVGPOOL: f[0] = p->u.pool.x_nhwc16; break;
    case MVRT_OP_DWCONV1D_SILU:
        if (!p->u.dwconv1d.y_copy != !p->u.dwconv1d.y_copy16 || (p->u.dwconv1d.y16 && p->u.dwconv1d.y_copy16))
            return -1;
        f[0] = p->u.dwconv1d.x16, f[1] = p->u.dwconv1d.y_copy16, f[2] = p->u.dwconv1d.y16;
        break;
    case MVRT_OP_ATTENTION:
        f[0] = p->u.attention.qkv16, f[1] = p->u.attention.out16, math = p->u.attention.math;
        break;
    default: return 0;
    }
    /* the type a 16-bit math fixes, else the first field's */
    int t = math == MVRT_MATH_BF16 ? MVRT_STORAGE16_BF16 : math == MVRT_MATH_FP16 ? MVRT_STORAGE16_F16 : 0;
    int any = 0;
    for (int i = 0; i < 3; i++) {
        if (!f[i])
            continue;
        if ((f[i] != MVRT_STORAGE16_BF16 && f[i] != MVRT_STORAGE16_F16) || (t && f[i] != t))
            return -1;
        t = f[i], any = 1;
    }
    return any ? t : 0;
}

#ifdef __cplusplus
}
#endif
#endif
