/* MambaVision models: which parameters each part has (PyTorch names and
 * shapes), reading them from a .safetensors file or making them from a
 * seed, folding for inference, and uploading them in one device buffer.
 *
 * Folding (in double, on the host): BatchNorm into the conv before it
 * (w' = w s, b' = (b - mean) s + beta, s = gamma / sqrt(var + eps)); layer
 * scale gamma into the projection before the residual (rows of out_proj /
 * proj / fc2 and their bias); A = -exp(A_log); the head's BatchNorm into a
 * per-channel scale and shift applied with the average pool. Folded tensors
 * are stored under derived names (".scale", ".A", folded conv ".bias") that
 * the graph builder (graph.c) looks up; model_internal.h lists them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "model_internal.h"

#define INVALID MVRT_ERR_INVALID_ARGUMENT
#define PARAM_ALIGN_FLOATS 64 /* 256 bytes: every parameter starts aligned */

/* How a parameter is made when there is no file (mvrt_model_init_random). */
typedef enum init_role {
    INIT_UNIFORM_FAN_IN, /* uniform(+-1/sqrt(fan_in)): PyTorch's Conv1d/Conv2d default */
    INIT_LINEAR_WEIGHT,  /* normal(0, 0.02): the reference model's _init_weights for every
                            nn.Linear (whose biases it zeroes, dt_proj's included); its cut at
                            +-2 is 100 sigma, which a double's Box-Muller draw (< 8.6 sigma)
                            never reaches */
    INIT_ONES,
    INIT_ZEROS,
    INIT_A_LOG,          /* log(1..N) per row, Mamba's S4D-real init */
    INIT_LAYER_SCALE     /* config layer_scale */
} init_role_t;

typedef struct loader {
    const char *fn;                       /* public function, for messages */
    const mvrt_model_config_t *cfg;
    const mvrt_safetensors_t *file;       /* NULL: random */
    const char *prefix;
    uint64_t seed;
    mv_param_t *params;
    size_t count, cap;
    float *host;                          /* all derived parameters, aligned slots */
    size_t host_len, host_cap;            /* floats */
    int64_t torch_count;                  /* learnable parameters read */
} loader_t;

/* ---- sources ----------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static double uniform01(uint64_t *s)
{
    return (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* normal(0, 1) by Box-Muller (one draw of the pair) */
static double normal01(uint64_t *s)
{
    double u1 = 1.0 - uniform01(s), u2 = uniform01(s); /* u1 in (0, 1] */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static void shape_text(char *buf, size_t cap, int rank, const int64_t *shape)
{
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, ")");
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023u, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 1024u));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 1023u) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Reads the PyTorch parameter `name` (shape given) into a new double array:
 * from the file, or made from the seed by `role`. */
static mvrt_status_t source_get(loader_t *ld, const char *name, int rank, const int64_t *shape,
                                init_role_t role, int64_t fan_in, double **out)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    double *v = mvrt_rt_malloc((size_t)n * sizeof *v);
    if (!v)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: cannot allocate %lld values for '%s'", ld->fn,
                              (long long)n, name);
    char want[96];
    shape_text(want, sizeof want, rank, shape);
    if (ld->file) {
        char full[320];
        snprintf(full, sizeof full, "%s%s", ld->prefix ? ld->prefix : "", name);
        mvrt_safetensors_tensor_t t;
        if (mvrt_safetensors_find(ld->file, full, &t) != MVRT_OK) {
            free(v);
            return mvrt_error_set(MVRT_ERR_NOT_FOUND,
                                  "%s: the weights have no tensor '%s' (expected shape %s)", ld->fn, full,
                                  want);
        }
        int same = t.rank == rank;
        for (int i = 0; same && i < rank; i++)
            same = t.shape[i] == shape[i];
        if (!same) {
            char got[96];
            shape_text(got, sizeof got, t.rank, t.shape);
            free(v);
            return mvrt_error_set(INVALID, "%s: tensor '%s' has shape %s, expected %s", ld->fn, full, got,
                                  want);
        }
        const unsigned char *b = t.data;
        for (int64_t i = 0; i < n; i++) {
            switch (t.dtype) {
            case MVRT_DTYPE_F32: {
                float f;
                memcpy(&f, b + 4 * i, 4);
                v[i] = f;
                break;
            }
            case MVRT_DTYPE_F64: memcpy(&v[i], b + 8 * i, 8); break;
            case MVRT_DTYPE_F16: {
                uint16_t h;
                memcpy(&h, b + 2 * i, 2);
                v[i] = half_to_float(h);
                break;
            }
            case MVRT_DTYPE_BF16: {
                uint16_t h;
                memcpy(&h, b + 2 * i, 2);
                uint32_t bits = (uint32_t)h << 16;
                float f;
                memcpy(&f, &bits, 4);
                v[i] = f;
                break;
            }
            default:
                free(v);
                return mvrt_error_set(INVALID, "%s: tensor '%s' has dtype %s; expected f32, f16, bf16 or f64",
                                      ld->fn, full, mvrt_dtype_name(t.dtype));
            }
        }
    } else {
        uint64_t s = ld->seed ^ name_hash(name);
        double bound = fan_in > 0 ? 1.0 / sqrt((double)fan_in) : 1.0;
        int64_t cols = rank >= 2 ? shape[rank - 1] : 1;
        for (int64_t i = 0; i < n; i++) {
            switch (role) {
            case INIT_UNIFORM_FAN_IN: v[i] = (2.0 * uniform01(&s) - 1.0) * bound; break;
            case INIT_LINEAR_WEIGHT: v[i] = 0.02 * normal01(&s); break;
            case INIT_ONES: v[i] = 1.0; break;
            case INIT_ZEROS: v[i] = 0.0; break;
            case INIT_A_LOG: v[i] = log((double)(i % cols + 1)); break;
            case INIT_LAYER_SCALE: v[i] = ld->cfg->layer_scale; break;
            }
        }
    }
    /* Running statistics are buffers, not parameters. */
    if (!strstr(name, "running_"))
        ld->torch_count += n;
    *out = v;
    return MVRT_OK;
}

/* ---- derived parameters -------------------------------------------------- */

static mvrt_status_t put(loader_t *ld, const char *name, const double *v, int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    size_t slot = ((size_t)n + PARAM_ALIGN_FLOATS - 1) / PARAM_ALIGN_FLOATS * PARAM_ALIGN_FLOATS;
    if (ld->count == ld->cap) {
        size_t cap = ld->cap ? 2 * ld->cap : 64;
        mv_param_t *p = mvrt_rt_realloc(ld->params, cap * sizeof *p);
        if (!p)
            return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory", ld->fn);
        ld->params = p, ld->cap = cap;
    }
    if (ld->host_len + slot > ld->host_cap) {
        size_t cap = ld->host_cap ? 2 * ld->host_cap : (size_t)1 << 16;
        while (cap < ld->host_len + slot)
            cap *= 2;
        float *h = mvrt_rt_realloc(ld->host, cap * sizeof *h);
        if (!h)
            return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory (%zu MiB of weights)",
                                  ld->fn, cap * sizeof *h >> 20);
        ld->host = h, ld->host_cap = cap;
    }
    mv_param_t *p = &ld->params[ld->count++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->rank = rank;
    memcpy(p->shape, shape, (size_t)rank * sizeof *shape);
    p->numel = n;
    p->offset = ld->host_len;
    for (int64_t i = 0; i < n; i++)
        ld->host[ld->host_len + (size_t)i] = (float)v[i];
    memset(ld->host + ld->host_len + n, 0, (slot - (size_t)n) * sizeof(float));
    ld->host_len += slot;
    return MVRT_OK;
}

#define TRY(x)                                                               \
    do {                                                                     \
        mvrt_status_t st_ = (x);                                             \
        if (st_ != MVRT_OK) {                                                \
            status = st_;                                                    \
            goto done;                                                       \
        }                                                                    \
    } while (0)

/* Names are short (a prefix of ~30 characters and a leaf); a longer one is
 * cut, and the lookup of the cut name then fails with its message. */
static void join(char *dst, size_t cap, const char *a, const char *b)
{
    if (snprintf(dst, cap, "%s%s", a, b) >= (int)cap)
        dst[cap - 1] = '\0';
}

/* A parameter copied as it is. */
static mvrt_status_t copy_param(loader_t *ld, const char *p, const char *leaf, int rank,
                                const int64_t *shape, init_role_t role, int64_t fan_in)
{
    char name[MV_PARAM_NAME_MAX];
    join(name, sizeof name, p, leaf);
    double *v = NULL;
    mvrt_status_t st = source_get(ld, name, rank, shape, role, fan_in, &v);
    if (st == MVRT_OK)
        st = put(ld, name, v, rank, shape);
    free(v);
    return st;
}

/* A linear layer `p` + "weight"/"bias" of shape (out, in), with the rows
 * (and bias) scaled by gamma when gamma is not NULL. */
static mvrt_status_t linear_param(loader_t *ld, const char *p, int64_t out, int64_t in, int has_bias,
                                  const double *gamma)
{
    char name[MV_PARAM_NAME_MAX];
    double *w = NULL, *b = NULL;
    mvrt_status_t status = MVRT_OK;
    int64_t ws[2] = {out, in}, bs[1] = {out};
    join(name, sizeof name, p, "weight");
    TRY(source_get(ld, name, 2, ws, INIT_LINEAR_WEIGHT, 0, &w));
    if (has_bias) {
        join(name, sizeof name, p, "bias");
        TRY(source_get(ld, name, 1, bs, INIT_ZEROS, 0, &b));
    }
    if (gamma)
        for (int64_t o = 0; o < out; o++) {
            for (int64_t i = 0; i < in; i++)
                w[o * in + i] *= gamma[o];
            if (b)
                b[o] *= gamma[o];
        }
    join(name, sizeof name, p, "weight");
    TRY(put(ld, name, w, 2, ws));
    if (b) {
        join(name, sizeof name, p, "bias");
        TRY(put(ld, name, b, 1, bs));
    }
done:
    free(w);
    free(b);
    return status;
}

/* A parameter already stored by this loader, as its floats (NULL when
 * absent); valid until the next put. Searched from the newest. */
static const float *stored(const loader_t *ld, const char *name)
{
    for (size_t i = ld->count; i-- > 0;)
        if (strcmp(ld->params[i].name, name) == 0)
            return ld->host + ld->params[i].offset;
    return NULL;
}

/* The LayerNorm `norm` (+ "weight" gamma, + "bias" beta; width in) before
 * the linear `lin` (+ "weight" W (out, in), + "bias" b when has_bias), both
 * stored already, as the GPU backends' folded form takes it
 * (ops/common/mv_op_params.h, ln_weight): lin + "ln_colsum" = W gamma and
 * lin + "ln_bias" = b + W beta, summed in double from the stored floats. */
static mvrt_status_t ln_fold_param(loader_t *ld, const char *norm, const char *lin, int64_t out, int64_t in,
                                   int has_bias)
{
    char name[MV_PARAM_NAME_MAX];
    const char *const owner[4] = {norm, norm, lin, lin}, *const leaf[4] = {"weight", "bias", "weight", "bias"};
    const float *src[4] = {NULL, NULL, NULL, NULL}; /* gamma, beta, W, b */
    for (int i = 0; i < (has_bias ? 4 : 3); i++) {
        join(name, sizeof name, owner[i], leaf[i]);
        if (!(src[i] = stored(ld, name)))
            return mvrt_error_set(MVRT_ERR_INTERNAL, "%s: '%s' is not loaded before its LayerNorm fold", ld->fn, name);
    }
    double *v = malloc(2 * (size_t)out * sizeof *v);
    if (!v)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory", ld->fn);
    for (int64_t o = 0; o < out; o++) {
        const float *w = src[2] + o * in;
        double colsum = 0.0, bias = src[3] ? src[3][o] : 0.0;
        for (int64_t i = 0; i < in; i++) {
            colsum += (double)w[i] * src[0][i];
            bias += (double)w[i] * src[1][i];
        }
        v[o] = colsum, v[out + o] = bias;
    }
    int64_t shape[1] = {out};
    join(name, sizeof name, lin, "ln_colsum");
    mvrt_status_t st = put(ld, name, v, 1, shape);
    if (st == MVRT_OK) {
        join(name, sizeof name, lin, "ln_bias");
        st = put(ld, name, v + out, 1, shape);
    }
    free(v);
    return st;
}

/* conv (cout, cin, k, k) at `conv` (+ "weight", + "bias" when has_bias)
 * followed by BatchNorm at `bn` (weight, bias, running_mean, running_var)
 * with eps: stored folded as `conv` + "weight" / "bias". bn NULL: no BN. */
static mvrt_status_t conv_bn_param(loader_t *ld, const char *conv, int64_t cout, int64_t cin, int k,
                                   int has_bias, const char *bn, double eps)
{
    char name[MV_PARAM_NAME_MAX];
    double *w = NULL, *b = NULL, *g = NULL, *beta = NULL, *mean = NULL, *var = NULL;
    mvrt_status_t status = MVRT_OK;
    int64_t ws[4] = {cout, cin, k, k}, cs[1] = {cout};
    int64_t fan_in = cin * k * k;
    join(name, sizeof name, conv, "weight");
    TRY(source_get(ld, name, 4, ws, INIT_UNIFORM_FAN_IN, fan_in, &w));
    if (has_bias) {
        join(name, sizeof name, conv, "bias");
        TRY(source_get(ld, name, 1, cs, INIT_UNIFORM_FAN_IN, fan_in, &b));
    } else if (bn) {
        b = mvrt_rt_calloc((size_t)cout, sizeof *b);
        if (!b)
            TRY(mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory", ld->fn));
    }
    if (bn) {
        join(name, sizeof name, bn, "weight");
        TRY(source_get(ld, name, 1, cs, INIT_ONES, 0, &g));
        join(name, sizeof name, bn, "bias");
        TRY(source_get(ld, name, 1, cs, INIT_ZEROS, 0, &beta));
        join(name, sizeof name, bn, "running_mean");
        TRY(source_get(ld, name, 1, cs, INIT_ZEROS, 0, &mean));
        join(name, sizeof name, bn, "running_var");
        TRY(source_get(ld, name, 1, cs, INIT_ONES, 0, &var));
        for (int64_t o = 0; o < cout; o++) {
            double s = g[o] / sqrt(var[o] + eps);
            for (int64_t i = 0; i < fan_in; i++)
                w[o * fan_in + i] *= s;
            b[o] = (b[o] - mean[o]) * s + beta[o];
        }
    }
    join(name, sizeof name, conv, "weight");
    TRY(put(ld, name, w, 4, ws));
    if (b) {
        join(name, sizeof name, conv, "bias");
        TRY(put(ld, name, b, 1, cs));
    }
done:
    free(w), free(b), free(g), free(beta), free(mean), free(var);
    return status;
}

/* ---- the parts of MambaVision ------------------------------------------- */

int mv_dt_rank(int C)
{
    return (C + 15) / 16; /* ceil(d_model / 16), d_model = C (expand 1) */
}

/* One Block (mixer or attention) under prefix p ("levels.2.blocks.0."). */
static mvrt_status_t load_block(loader_t *ld, const char *p, int64_t C, int attention)
{
    const mvrt_model_config_t *c = ld->cfg;
    char q[MV_PARAM_NAME_MAX], norm[MV_PARAM_NAME_MAX];
    int64_t vec[1] = {C};
    double *gamma1 = NULL, *gamma2 = NULL;
    mvrt_status_t status = MVRT_OK;
    if (c->layer_scale > 0) {
        join(q, sizeof q, p, "gamma_1");
        TRY(source_get(ld, q, 1, vec, INIT_LAYER_SCALE, 0, &gamma1));
        join(q, sizeof q, p, "gamma_2");
        TRY(source_get(ld, q, 1, vec, INIT_LAYER_SCALE, 0, &gamma2));
    }
    TRY(copy_param(ld, p, "norm1.weight", 1, vec, INIT_ONES, 0));
    TRY(copy_param(ld, p, "norm1.bias", 1, vec, INIT_ZEROS, 0));
    join(norm, sizeof norm, p, "norm1.");
    if (attention) {
        join(q, sizeof q, p, "mixer.qkv.");
        TRY(linear_param(ld, q, 3 * C, C, c->qkv_bias, NULL));
        TRY(ln_fold_param(ld, norm, q, 3 * C, C, c->qkv_bias));
        join(q, sizeof q, p, "mixer.proj.");
        TRY(linear_param(ld, q, C, C, 1, gamma1));
    } else {
        int64_t h = C / 2, N = c->d_state, R = mv_dt_rank((int)C);
        int64_t conv_shape[3] = {h, 1, c->d_conv}, hv[1] = {h}, an[2] = {h, N};
        join(q, sizeof q, p, "mixer.in_proj.");
        TRY(linear_param(ld, q, C, C, 0, NULL));
        TRY(ln_fold_param(ld, norm, q, C, C, 0));
        TRY(copy_param(ld, p, "mixer.conv1d_x.weight", 3, conv_shape, INIT_UNIFORM_FAN_IN, c->d_conv));
        TRY(copy_param(ld, p, "mixer.conv1d_z.weight", 3, conv_shape, INIT_UNIFORM_FAN_IN, c->d_conv));
        join(q, sizeof q, p, "mixer.x_proj.");
        TRY(linear_param(ld, q, R + 2 * N, h, 0, NULL));
        join(q, sizeof q, p, "mixer.dt_proj.weight");
        {
            int64_t s[2] = {h, R};
            double *w = NULL;
            TRY(source_get(ld, q, 2, s, INIT_LINEAR_WEIGHT, 0, &w));
            status = put(ld, q, w, 2, s);
            free(w);
            TRY(status);
        }
        TRY(copy_param(ld, p, "mixer.dt_proj.bias", 1, hv, INIT_ZEROS, 0));
        {
            double *alog = NULL;
            join(q, sizeof q, p, "mixer.A_log");
            TRY(source_get(ld, q, 2, an, INIT_A_LOG, 0, &alog));
            for (int64_t i = 0; i < h * N; i++)
                alog[i] = -exp(alog[i]);
            join(q, sizeof q, p, "mixer.A");
            status = put(ld, q, alog, 2, an);
            free(alog);
            TRY(status);
        }
        TRY(copy_param(ld, p, "mixer.D", 1, hv, INIT_ONES, 0));
        join(q, sizeof q, p, "mixer.out_proj.");
        TRY(linear_param(ld, q, C, C, 0, gamma1));
    }
    TRY(copy_param(ld, p, "norm2.weight", 1, vec, INIT_ONES, 0));
    TRY(copy_param(ld, p, "norm2.bias", 1, vec, INIT_ZEROS, 0));
    join(q, sizeof q, p, "mlp.fc1.");
    TRY(linear_param(ld, q, (int64_t)c->mlp_ratio * C, C, 1, NULL));
    join(norm, sizeof norm, p, "norm2.");
    TRY(ln_fold_param(ld, norm, q, (int64_t)c->mlp_ratio * C, C, 1));
    join(q, sizeof q, p, "mlp.fc2.");
    TRY(linear_param(ld, q, C, (int64_t)c->mlp_ratio * C, 1, gamma2));
done:
    free(gamma1);
    free(gamma2);
    return status;
}

/* One ConvBlock under prefix p: conv1 + norm1 (BN eps 1e-5), conv2 + norm2. */
static mvrt_status_t load_conv_block(loader_t *ld, const char *p, int64_t C)
{
    char conv[MV_PARAM_NAME_MAX], bn[MV_PARAM_NAME_MAX];
    mvrt_status_t st;
    join(conv, sizeof conv, p, "conv1.");
    join(bn, sizeof bn, p, "norm1.");
    if ((st = conv_bn_param(ld, conv, C, C, 3, 1, bn, 1e-5)))
        return st;
    join(conv, sizeof conv, p, "conv2.");
    join(bn, sizeof bn, p, "norm2.");
    return conv_bn_param(ld, conv, C, C, 3, 1, bn, 1e-5);
}

/* One stage (level) under prefix p ("levels.1." or "" for a STAGE model). */
static mvrt_status_t load_stage(loader_t *ld, const char *p, const mv_stage_desc_t *s)
{
    char q[MV_PARAM_NAME_MAX];
    mvrt_status_t st;
    for (int i = 0; i < s->depth; i++) {
        snprintf(q, sizeof q, "%sblocks.%d.", p, i);
        st = s->conv ? load_conv_block(ld, q, s->dim) : load_block(ld, q, s->dim, i >= s->first_attention);
        if (st)
            return st;
    }
    if (s->downsample) {
        join(q, sizeof q, p, "downsample.reduction.0.");
        return conv_bn_param(ld, q, 2 * (int64_t)s->dim, s->dim, 3, 0, NULL, 0.0);
    }
    return MVRT_OK;
}

void mv_network_stage(const mvrt_model_config_t *c, int level, mv_stage_desc_t *s)
{
    memset(s, 0, sizeof *s);
    s->dim = c->dim << level;
    s->depth = c->depths[level];
    s->heads = c->heads[level];
    s->window = c->windows[level];
    s->conv = level < 2;
    s->first_attention = s->conv ? s->depth : (s->depth + 1) / 2;
    s->downsample = level < 3;
}

void mv_model_stage(const mvrt_model_config_t *c, mv_stage_desc_t *s)
{
    memset(s, 0, sizeof *s);
    s->dim = c->dim;
    s->depth = c->depth;
    s->heads = c->num_heads;
    s->window = c->window;
    s->conv = c->conv_stage;
    s->first_attention = c->conv_stage ? c->depth : c->first_attention;
    s->downsample = c->downsample;
}

static mvrt_status_t load_all(loader_t *ld)
{
    const mvrt_model_config_t *c = ld->cfg;
    mvrt_status_t st;
    switch (c->kind) {
    case MVRT_MODEL_MIXER_BLOCK: return load_block(ld, "", c->dim, 0);
    case MVRT_MODEL_ATTENTION_BLOCK: return load_block(ld, "", c->dim, 1);
    case MVRT_MODEL_STAGE: {
        mv_stage_desc_t s;
        mv_model_stage(c, &s);
        return load_stage(ld, "", &s);
    }
    case MVRT_MODEL_NETWORK: {
        if ((st = conv_bn_param(ld, "patch_embed.conv_down.0.", c->in_dim, c->in_chans, 3, 0,
                                "patch_embed.conv_down.1.", 1e-4)))
            return st;
        if ((st = conv_bn_param(ld, "patch_embed.conv_down.3.", c->dim, c->in_dim, 3, 0,
                                "patch_embed.conv_down.4.", 1e-4)))
            return st;
        for (int level = 0; level < 4; level++) {
            char p[32];
            mv_stage_desc_t s;
            mv_network_stage(c, level, &s);
            snprintf(p, sizeof p, "levels.%d.", level);
            if ((st = load_stage(ld, p, &s)))
                return st;
        }
        /* Head: BatchNorm2d (eps 1e-5) as scale/shift, then the Linear. */
        int64_t C = (int64_t)c->dim << 3, cs[1] = {C};
        double *g = NULL, *b = NULL, *m = NULL, *v = NULL;
        mvrt_status_t status = MVRT_OK;
        TRY(source_get(ld, "norm.weight", 1, cs, INIT_ONES, 0, &g));
        TRY(source_get(ld, "norm.bias", 1, cs, INIT_ZEROS, 0, &b));
        TRY(source_get(ld, "norm.running_mean", 1, cs, INIT_ZEROS, 0, &m));
        TRY(source_get(ld, "norm.running_var", 1, cs, INIT_ONES, 0, &v));
        for (int64_t i = 0; i < C; i++) {
            double s = g[i] / sqrt(v[i] + 1e-5);
            b[i] -= m[i] * s;
            g[i] = s;
        }
        TRY(put(ld, "norm.scale", g, 1, cs));
        TRY(put(ld, "norm.shift", b, 1, cs));
        TRY(linear_param(ld, "head.", c->num_classes, C, 1, NULL));
    done:
        free(g), free(b), free(m), free(v);
        return status;
    }
    default:
        return mvrt_error_set(INVALID, "%s: unknown model kind %d", ld->fn, c->kind);
    }
}

static mvrt_status_t model_create(const char *fn, mvrt_backend_t *backend, const mvrt_model_config_t *cfg,
                                  const mvrt_safetensors_t *file, const char *prefix, uint64_t seed,
                                  mvrt_model_t **out_model)
{
    if (!backend || !cfg || !out_model)
        return mvrt_error_set(INVALID, "%s: %s is NULL", fn,
                              !backend ? "backend" : !cfg ? "config" : "out_model");
    if (mvrt_model_config_validate(cfg) != MVRT_OK) {
        char saved[MVRT_ERROR_MAX];
        mvrt_error_save(saved, sizeof saved);
        return mvrt_error_set(INVALID, "%s: %s", fn, saved);
    }
    if (!backend->vt->op_run)
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED, "%s: the %s backend does not run MambaVision ops", fn,
                              backend->name);
    loader_t ld = {fn, cfg, file, prefix, seed, NULL, 0, 0, NULL, 0, 0, 0};
    mvrt_status_t st = load_all(&ld);
    mvrt_model_t *m = NULL;
    if (st == MVRT_OK) {
        m = mvrt_rt_calloc(1, sizeof *m);
        if (!m)
            st = mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    }
    if (st == MVRT_OK) {
        m->backend = backend;
        m->config = *cfg;
        m->params = ld.params, m->count = ld.count;
        ld.params = NULL;
        m->torch_count = ld.torch_count;
        m->weight_bytes = ld.host_len * sizeof(float);
        st = mvrt_buffer_alloc(backend, m->weight_bytes ? m->weight_bytes : 256, &m->weights);
        if (st == MVRT_OK && m->weight_bytes) /* a config may have no parameters */
            st = mvrt_copy_host_to_device(NULL, m->weights, 0, ld.host, m->weight_bytes);
        if (st == MVRT_OK)
            st = backend->vt->stream_synchronize(backend->device, backend->vt->default_stream(backend->device));
        if (st != MVRT_OK) {
            mvrt_model_destroy(m);
            m = NULL;
        }
    }
    free(ld.params);
    free(ld.host);
    if (st == MVRT_OK)
        *out_model = m;
    return st;
}

mvrt_status_t mvrt_model_load(mvrt_backend_t *backend, const mvrt_model_config_t *config,
                              const mvrt_safetensors_t *file, const char *prefix, mvrt_model_t **out_model)
{
    if (!file)
        return mvrt_error_set(INVALID, "mvrt_model_load: file is NULL (use mvrt_model_init_random for seeded weights)");
    return model_create("mvrt_model_load", backend, config, file, prefix, 0, out_model);
}

mvrt_status_t mvrt_model_init_random(mvrt_backend_t *backend, const mvrt_model_config_t *config, uint64_t seed,
                                     mvrt_model_t **out_model)
{
    return model_create("mvrt_model_init_random", backend, config, NULL, NULL, seed, out_model);
}

void mvrt_model_destroy(mvrt_model_t *model)
{
    if (!model)
        return;
    mvrt_buffer_free(model->weights);
    free(model->params);
    free(model);
}

mvrt_status_t mvrt_model_get_config(const mvrt_model_t *model, mvrt_model_config_t *out_config)
{
    if (!model || !out_config)
        return mvrt_error_set(INVALID, "mvrt_model_get_config: %s is NULL", !model ? "model" : "out_config");
    *out_config = model->config;
    return MVRT_OK;
}

int64_t mvrt_model_parameter_count(const mvrt_model_t *model)
{
    return model ? model->torch_count : 0;
}

const mv_param_t *mv_model_param(const mvrt_model_t *m, const char *name)
{
    for (size_t i = 0; i < m->count; i++)
        if (strcmp(m->params[i].name, name) == 0)
            return &m->params[i];
    return NULL;
}
