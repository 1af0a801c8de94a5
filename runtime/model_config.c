/* MambaVision configurations: the published presets, the JSON of the
 * golden files' metadata, and validation.
 *
 * The JSON reader here is deliberately small: one flat object whose values
 * are numbers, null, true/false, strings or arrays of numbers (that is all
 * the config JSON holds); nested objects are skipped. A malformed text gives
 * MVRT_ERR_INVALID_ARGUMENT naming the position. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#define INVALID MVRT_ERR_INVALID_ARGUMENT

static void config_defaults(mvrt_model_config_t *c, int kind)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->mlp_ratio = 4;
    c->qkv_bias = 1;
    c->d_state = 8;
    c->d_conv = 3;
    c->in_chans = 3;
    c->num_classes = 1000;
}

typedef struct preset {
    const char *name;
    int depths[4], heads[4], dim, in_dim;
    double layer_scale;
} preset_t;

/* spec/mambavision.md: mlp_ratio 4, windows 8, 8, 14, 7, qkv bias. */
static const preset_t presets[] = {
    {"T", {1, 3, 8, 4}, {2, 4, 8, 16}, 80, 32, 0.0},
    {"T2", {1, 3, 11, 4}, {2, 4, 8, 16}, 80, 32, 0.0},
    {"S", {3, 3, 7, 5}, {2, 4, 8, 16}, 96, 64, 0.0},
    {"B", {3, 3, 10, 5}, {2, 4, 8, 16}, 128, 64, 1e-5},
    {"L", {3, 3, 10, 5}, {4, 8, 16, 32}, 196, 64, 1e-5},
    {"L2", {3, 3, 12, 5}, {4, 8, 16, 32}, 196, 64, 1e-5},
};

mvrt_status_t mvrt_model_config_preset(const char *name, mvrt_model_config_t *out_config)
{
    if (!name || !out_config)
        return mvrt_error_set(INVALID, "mvrt_model_config_preset: %s is NULL",
                              !name ? "name" : "out_config");
    const char *n = name;
    /* "mambavision_T", "mamba_vision-T", "MambaVision-T" all name T. */
    static const char *prefixes[] = {"mambavision", "mamba_vision", "mamba-vision"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t len = strlen(prefixes[i]);
        if (strncasecmp(n, prefixes[i], len) == 0) {
            n += len;
            if (*n == '_' || *n == '-')
                n++;
            break;
        }
    }
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++) {
        if (strcasecmp(n, presets[i].name) != 0)
            continue;
        mvrt_model_config_t c;
        config_defaults(&c, MVRT_MODEL_NETWORK);
        memcpy(c.depths, presets[i].depths, sizeof c.depths);
        memcpy(c.heads, presets[i].heads, sizeof c.heads);
        c.windows[0] = 8, c.windows[1] = 8, c.windows[2] = 14, c.windows[3] = 7;
        c.dim = presets[i].dim;
        c.in_dim = presets[i].in_dim;
        c.layer_scale = presets[i].layer_scale;
        *out_config = c;
        return MVRT_OK;
    }
    return mvrt_error_set(MVRT_ERR_NOT_FOUND,
                          "mvrt_model_config_preset: no configuration '%s' (known: T, T2, S, B, L, L2)",
                          name);
}

/* ---- a flat JSON object -------------------------------------------------- */

typedef struct jvalue {
    enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR } type;
    double num;            /* J_NUM, J_BOOL (0/1) */
    char str[64];          /* J_STR (truncated) */
    double arr[16];        /* J_ARR of numbers (first 16) */
    int arr_len;
} jvalue_t;

typedef struct jparser {
    const char *s, *start;
} jparser_t;

static void j_ws(jparser_t *p)
{
    while (*p->s && isspace((unsigned char)*p->s))
        p->s++;
}

static mvrt_status_t j_fail(const jparser_t *p, const char *what)
{
    return mvrt_error_set(INVALID, "mvrt_model_config_from_json: %s at offset %ld", what,
                          (long)(p->s - p->start));
}

static mvrt_status_t j_string(jparser_t *p, char *buf, size_t cap)
{
    if (*p->s != '"')
        return j_fail(p, "expected a string");
    p->s++;
    size_t n = 0;
    while (*p->s && *p->s != '"') {
        char c = *p->s++;
        if (c == '\\') {
            if (!*p->s)
                break;
            c = *p->s++;
            if (c == 'u') { /* keep it simple: \uXXXX becomes '?' */
                for (int i = 0; i < 4 && *p->s; i++)
                    p->s++;
                c = '?';
            }
        }
        if (n + 1 < cap)
            buf[n++] = c;
    }
    if (*p->s != '"')
        return j_fail(p, "unterminated string");
    p->s++;
    buf[n] = '\0';
    return MVRT_OK;
}

static mvrt_status_t j_number(jparser_t *p, double *out)
{
    char *end = NULL;
    double v = strtod(p->s, &end);
    if (end == p->s)
        return j_fail(p, "expected a value");
    if (!isfinite(v)) /* strtod takes nan/inf, and 1e999 overflows: not JSON numbers */
        return j_fail(p, "expected a finite number");
    p->s = end;
    *out = v;
    return MVRT_OK;
}

static mvrt_status_t j_skip_nested(jparser_t *p)
{
    int depth = 0;
    do {
        char c = *p->s;
        if (!c)
            return j_fail(p, "unterminated object or array");
        if (c == '"') {
            char tmp[8];
            mvrt_status_t st = j_string(p, tmp, sizeof tmp);
            if (st)
                return st;
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']')
            depth--;
        p->s++;
    } while (depth > 0);
    return MVRT_OK;
}

static mvrt_status_t j_value(jparser_t *p, jvalue_t *v)
{
    memset(v, 0, sizeof *v);
    j_ws(p);
    if (*p->s == '"') {
        v->type = J_STR;
        return j_string(p, v->str, sizeof v->str);
    }
    if (strncmp(p->s, "null", 4) == 0) {
        p->s += 4;
        v->type = J_NULL;
        return MVRT_OK;
    }
    if (strncmp(p->s, "true", 4) == 0 || strncmp(p->s, "false", 5) == 0) {
        v->type = J_BOOL;
        v->num = p->s[0] == 't';
        p->s += v->num ? 4 : 5;
        return MVRT_OK;
    }
    if (*p->s == '{')
        return j_skip_nested(p); /* J_NULL: ignored */
    if (*p->s == '[') {
        const char *save = p->s;
        p->s++;
        v->type = J_ARR;
        j_ws(p);
        if (*p->s == ']') {
            p->s++;
            return MVRT_OK;
        }
        for (;;) {
            j_ws(p);
            double x = 0;
            if (*p->s == '[' || *p->s == '{' || *p->s == '"') { /* not numbers: skip */
                p->s = save;
                v->type = J_NULL;
                return j_skip_nested(p);
            }
            mvrt_status_t st = j_number(p, &x);
            if (st)
                return st;
            if (v->arr_len < 16)
                v->arr[v->arr_len] = x;
            v->arr_len++;
            j_ws(p);
            if (*p->s == ',') {
                p->s++;
                continue;
            }
            if (*p->s == ']') {
                p->s++;
                return MVRT_OK;
            }
            return j_fail(p, "expected ',' or ']' in an array");
        }
    }
    v->type = J_NUM;
    return j_number(p, &v->num);
}

/* Sets an int field from a number, checking it is a whole number in range. */
static mvrt_status_t j_int(const char *key, const jvalue_t *v, int *dst)
{
    if (v->type != J_NUM && v->type != J_BOOL)
        return mvrt_error_set(INVALID, "mvrt_model_config_from_json: \"%s\" must be a number", key);
    if (v->num != floor(v->num) || fabs(v->num) > 1e9)
        return mvrt_error_set(INVALID, "mvrt_model_config_from_json: \"%s\" = %g is not a whole number",
                              key, v->num);
    *dst = (int)v->num;
    return MVRT_OK;
}

/* A size or index from an array element: a whole number of at most 1e9 in
 * magnitude (negative sizes are kept for the graph options to reject). */
static mvrt_status_t j_whole(const char *key, int i, double x, int64_t *dst)
{
    if (x != floor(x) || fabs(x) > 1e9)
        return mvrt_error_set(INVALID, "mvrt_model_config_from_json: \"%s\"[%d] = %g is not a whole number",
                              key, i, x);
    *dst = (int64_t)x;
    return MVRT_OK;
}

static mvrt_status_t j_int4(const char *key, const jvalue_t *v, int dst[4])
{
    if (v->type != J_ARR || v->arr_len != 4)
        return mvrt_error_set(INVALID, "mvrt_model_config_from_json: \"%s\" must be an array of 4 numbers",
                              key);
    for (int i = 0; i < 4; i++) {
        if (v->arr[i] != floor(v->arr[i]) || v->arr[i] < 0 || v->arr[i] > 1e9)
            return mvrt_error_set(INVALID, "mvrt_model_config_from_json: \"%s\"[%d] is not a whole number >= 0",
                                  key, i);
        dst[i] = (int)v->arr[i];
    }
    return MVRT_OK;
}

mvrt_status_t mvrt_model_config_from_json(const char *json, mvrt_model_config_t *out_config,
                                          int64_t *out_batch, int64_t *out_height,
                                          int64_t *out_width, int64_t *out_tokens)
{
    if (!json || !out_config)
        return mvrt_error_set(INVALID, "mvrt_model_config_from_json: %s is NULL",
                              !json ? "json" : "out_config");
    jparser_t p = {json, json};
    j_ws(&p);
    if (*p.s != '{')
        return j_fail(&p, "expected a JSON object");
    p.s++;

    mvrt_model_config_t c;
    config_defaults(&c, -1);
    int64_t batch = 0, height = 0, width = 0, tokens = 0;
    int have_transformer_blocks = 0, first_tb = 0, have_window_array = 0;
    mvrt_status_t st = MVRT_OK;
    j_ws(&p);
    if (*p.s == '}')
        p.s++;
    else
        for (;;) {
            char key[64];
            jvalue_t v;
            j_ws(&p);
            if ((st = j_string(&p, key, sizeof key)))
                return st;
            j_ws(&p);
            if (*p.s != ':')
                return j_fail(&p, "expected ':'");
            p.s++;
            if ((st = j_value(&p, &v)))
                return st;

            if (strcmp(key, "kind") == 0) {
                if (v.type != J_STR)
                    return mvrt_error_set(INVALID, "mvrt_model_config_from_json: \"kind\" must be a string");
                if (strcmp(v.str, "mixer") == 0)
                    c.kind = MVRT_MODEL_MIXER_BLOCK;
                else if (strcmp(v.str, "attention") == 0)
                    c.kind = MVRT_MODEL_ATTENTION_BLOCK;
                else if (strcmp(v.str, "stage") == 0)
                    c.kind = MVRT_MODEL_STAGE;
                else if (strcmp(v.str, "model") == 0)
                    c.kind = MVRT_MODEL_NETWORK;
                else
                    return mvrt_error_set(INVALID,
                                          "mvrt_model_config_from_json: unknown kind \"%s\" (mixer, attention, stage, model)",
                                          v.str);
            } else if (strcmp(key, "dim") == 0) {
                st = j_int(key, &v, &c.dim);
            } else if (strcmp(key, "in_dim") == 0) {
                st = j_int(key, &v, &c.in_dim);
            } else if (strcmp(key, "in_chans") == 0) {
                st = j_int(key, &v, &c.in_chans);
            } else if (strcmp(key, "num_classes") == 0) {
                st = j_int(key, &v, &c.num_classes);
            } else if (strcmp(key, "mlp_ratio") == 0) {
                st = j_int(key, &v, &c.mlp_ratio);
            } else if (strcmp(key, "d_state") == 0) {
                st = j_int(key, &v, &c.d_state);
            } else if (strcmp(key, "d_conv") == 0) {
                st = j_int(key, &v, &c.d_conv);
            } else if (strcmp(key, "qkv_bias") == 0) {
                st = j_int(key, &v, &c.qkv_bias);
            } else if (strcmp(key, "depth") == 0) {
                st = j_int(key, &v, &c.depth);
            } else if (strcmp(key, "depths") == 0) {
                st = j_int4(key, &v, c.depths);
            } else if (strcmp(key, "heads") == 0 || strcmp(key, "num_heads") == 0) {
                if (v.type == J_ARR)
                    st = j_int4(key, &v, c.heads);
                else
                    st = j_int(key, &v, &c.num_heads);
            } else if (strcmp(key, "window") == 0 || strcmp(key, "window_size") == 0) {
                if (v.type == J_ARR) {
                    st = j_int4(key, &v, c.windows);
                    have_window_array = 1;
                } else {
                    st = j_int(key, &v, &c.window);
                }
            } else if (strcmp(key, "layer_scale") == 0) {
                if (v.type == J_NUM)
                    c.layer_scale = v.num;
                else if (v.type != J_NULL)
                    st = mvrt_error_set(INVALID, "mvrt_model_config_from_json: \"layer_scale\" must be a number or null");
            } else if (strcmp(key, "downsample") == 0) {
                st = j_int(key, &v, &c.downsample);
            } else if (strcmp(key, "conv") == 0 || strcmp(key, "conv_stage") == 0) {
                st = j_int(key, &v, &c.conv_stage);
            } else if (strcmp(key, "transformer_blocks") == 0) {
                if (v.type != J_ARR)
                    st = mvrt_error_set(INVALID, "mvrt_model_config_from_json: \"transformer_blocks\" must be an array");
                else {
                    int64_t tb = -1;
                    have_transformer_blocks = 1;
                    if (v.arr_len)
                        st = j_whole(key, 0, v.arr[0], &tb);
                    first_tb = (int)tb;
                    for (int i = 1; !st && i < v.arr_len && i < 16; i++)
                        if (v.arr[i] != v.arr[i - 1] + 1)
                            st = mvrt_error_set(INVALID,
                                                "mvrt_model_config_from_json: \"transformer_blocks\" must be consecutive indices ending the stage");
                }
            } else if (strcmp(key, "batch") == 0) {
                int b = 0;
                st = j_int(key, &v, &b);
                batch = b;
            } else if (strcmp(key, "tokens") == 0) {
                int t = 0;
                st = j_int(key, &v, &t);
                tokens = t;
            } else if (strcmp(key, "input") == 0 && v.type == J_ARR && v.arr_len == 4) {
                if (!(st = j_whole(key, 0, v.arr[0], &batch)) &&
                    !(st = j_whole(key, 2, v.arr[2], &height)))
                    st = j_whole(key, 3, v.arr[3], &width);
            } else if (strcmp(key, "image") == 0 && v.type == J_ARR && v.arr_len == 2) {
                if (!(st = j_whole(key, 0, v.arr[0], &height)))
                    st = j_whole(key, 1, v.arr[1], &width);
            }
            if (st)
                return st;
            j_ws(&p);
            if (*p.s == ',') {
                p.s++;
                continue;
            }
            if (*p.s == '}') {
                p.s++;
                break;
            }
            return j_fail(&p, "expected ',' or '}'");
        }
    if (c.kind < 0)
        return mvrt_error_set(INVALID, "mvrt_model_config_from_json: no \"kind\" in the config");
    if (c.kind == MVRT_MODEL_NETWORK && !have_window_array)
        c.windows[0] = 8, c.windows[1] = 8, c.windows[2] = 14, c.windows[3] = 7;
    if (c.kind == MVRT_MODEL_STAGE) {
        /* A stage with transformer_blocks is hybrid; without, ConvBlocks
         * unless it says otherwise. An empty list: all mixers. */
        if (have_transformer_blocks) {
            c.conv_stage = 0;
            c.first_attention = first_tb < 0 ? c.depth : first_tb;
        } else if (!c.conv_stage && c.window > 0) {
            c.first_attention = (c.depth + 1) / 2; /* ceil(d/2) mixers */
        }
        if (c.num_heads <= 0 && !c.conv_stage)
            return mvrt_error_set(INVALID, "mvrt_model_config_from_json: a hybrid stage needs \"heads\"");
    }
    mvrt_status_t vst = mvrt_model_config_validate(&c);
    if (vst)
        return vst;
    *out_config = c;
    if (out_batch)
        *out_batch = batch;
    if (out_height)
        *out_height = height;
    if (out_width)
        *out_width = width;
    if (out_tokens)
        *out_tokens = tokens;
    return MVRT_OK;
}

/* ---- validation ---------------------------------------------------------- */

#define NEED(cond, ...)                                                      \
    do {                                                                     \
        if (!(cond))                                                         \
            return mvrt_error_set(INVALID, "mvrt_model_config: " __VA_ARGS__); \
    } while (0)

static mvrt_status_t validate_block_width(int C, int heads, int attention, const mvrt_model_config_t *c)
{
    NEED(C >= 2 && C <= 65536, "width %d out of range [2, 65536]", C);
    NEED(C % 2 == 0, "width %d must be even (the mixer splits it in two halves)", C);
    if (attention) {
        NEED(heads >= 1, "attention heads %d must be >= 1", heads);
        NEED(C % heads == 0, "width %d is not divisible by %d heads", C, heads);
    }
    (void)c;
    return MVRT_OK;
}

mvrt_status_t mvrt_model_config_validate(const mvrt_model_config_t *c)
{
    if (!c)
        return mvrt_error_set(INVALID, "mvrt_model_config_validate: config is NULL");
    NEED(c->mlp_ratio >= 1 && c->mlp_ratio <= 64, "mlp_ratio %d out of range [1, 64]", c->mlp_ratio);
    NEED(c->d_state >= 1 && c->d_state <= 256, "d_state %d out of range [1, 256]", c->d_state);
    NEED(c->d_conv >= 1 && c->d_conv <= 16, "d_conv %d out of range [1, 16]", c->d_conv);
    NEED(c->layer_scale >= 0 && isfinite(c->layer_scale), "layer_scale must be >= 0 (0: none)");
    switch (c->kind) {
    case MVRT_MODEL_MIXER_BLOCK:
        return validate_block_width(c->dim, 0, 0, c);
    case MVRT_MODEL_ATTENTION_BLOCK:
        return validate_block_width(c->dim, c->num_heads, 1, c);
    case MVRT_MODEL_STAGE:
        NEED(c->depth >= 0 && c->depth <= 64, "stage depth %d out of range [0, 64]", c->depth);
        if (!c->conv_stage) {
            NEED(c->window >= 1 && c->window <= 64, "window %d out of range [1, 64]", c->window);
            NEED(c->first_attention >= 0 && c->first_attention <= c->depth,
                 "first_attention %d out of range [0, depth %d]", c->first_attention, c->depth);
            return validate_block_width(c->dim, c->num_heads, c->first_attention < c->depth, c);
        }
        NEED(c->dim >= 1 && c->dim <= 65536, "width %d out of range", c->dim);
        return MVRT_OK;
    case MVRT_MODEL_NETWORK:
        NEED(c->in_chans >= 1 && c->in_chans <= 64, "in_chans %d out of range [1, 64]", c->in_chans);
        NEED(c->in_dim >= 1 && c->in_dim <= 65536, "in_dim %d out of range", c->in_dim);
        NEED(c->dim >= 1 && c->dim <= 16384, "dim %d out of range [1, 16384]", c->dim);
        NEED(c->num_classes >= 1 && c->num_classes <= 1000000, "num_classes %d out of range", c->num_classes);
        for (int i = 0; i < 4; i++) {
            NEED(c->depths[i] >= 0 && c->depths[i] <= 64, "depths[%d] = %d out of range [0, 64]", i,
                 c->depths[i]);
            if (i >= 2) {
                NEED(c->windows[i] >= 1 && c->windows[i] <= 64, "windows[%d] = %d out of range [1, 64]",
                     i, c->windows[i]);
                mvrt_status_t st = validate_block_width(c->dim << i, c->heads[i],
                                                        c->depths[i] > (c->depths[i] + 1) / 2, c);
                if (st)
                    return st;
            }
        }
        return MVRT_OK;
    default:
        return mvrt_error_set(INVALID, "mvrt_model_config: unknown kind %d", c->kind);
    }
}
