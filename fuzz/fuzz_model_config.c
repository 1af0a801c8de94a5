/* Fuzz target: MambaVision configs from JSON and weights from a
 * .safetensors image, on the CPU backend.
 *
 * Input: JSON text, a NUL byte, then a .safetensors file image (no NUL: the
 * whole input is JSON and the weights are made from a seed instead). The
 * JSON goes through mvrt_model_config_from_json; a config it accepts must
 * pass mvrt_model_config_validate. Small configs (the gate below keeps each
 * execution in milliseconds) are then loaded with mvrt_model_load from the
 * image (prefix ""), planned as a graph with a small input size taken from
 * the JSON, and run twice: the two results must be bitwise equal.
 * Failures must write nothing to out_* and leave a message. */
#include <string.h>

#include "fuzz_util.h"
#include "mvrt/model.h"

static mvrt_backend_t *cpu_backend(void)
{
    static mvrt_backend_t *be;
    static int tried;
    if (!tried) {
        tried = 1;
        if (mvrt_backend_open("cpu", &be) != MVRT_OK) {
            fprintf(stderr, "fuzz_model_config: the CPU backend is needed: %s\n",
                    mvrt_last_error());
            abort();
        }
        /* One thread: an execution is small, and results are then
         * deterministic by construction. */
        FUZZ_CHECK(mvrt_backend_set_num_threads(be, 1) == MVRT_OK);
    }
    return be;
}

/* Field by field: the struct has padding, which assignment need not copy. */
static int config_equal(const mvrt_model_config_t *a, const mvrt_model_config_t *b)
{
    int same = a->kind == b->kind && a->dim == b->dim && a->mlp_ratio == b->mlp_ratio &&
               memcmp(&a->layer_scale, &b->layer_scale, sizeof a->layer_scale) == 0 &&
               a->qkv_bias == b->qkv_bias && a->d_state == b->d_state && a->d_conv == b->d_conv &&
               a->in_chans == b->in_chans && a->in_dim == b->in_dim &&
               a->num_classes == b->num_classes && a->depth == b->depth &&
               a->num_heads == b->num_heads && a->window == b->window &&
               a->conv_stage == b->conv_stage && a->first_attention == b->first_attention &&
               a->downsample == b->downsample;
    for (int i = 0; i < 4; i++)
        same = same && a->depths[i] == b->depths[i] && a->heads[i] == b->heads[i] &&
               a->windows[i] == b->windows[i];
    return same;
}

/* Keeps weights and one run to about a millisecond or less. */
static int small_config(const mvrt_model_config_t *c)
{
    if (c->mlp_ratio > 4 || c->d_state > 16 || c->d_conv > 4)
        return 0;
    switch (c->kind) {
    case MVRT_MODEL_MIXER_BLOCK:
    case MVRT_MODEL_ATTENTION_BLOCK:
        return c->dim <= 64;
    case MVRT_MODEL_STAGE:
        return c->dim <= 32 && c->depth <= 4;
    case MVRT_MODEL_NETWORK:
        if (c->dim > 8 || c->in_dim > 16 || c->in_chans > 4 || c->num_classes > 16)
            return 0;
        for (int i = 0; i < 4; i++)
            if (c->depths[i] > 2)
                return 0;
        return 1;
    default:
        return 0;
    }
}

/* A size from the JSON for the graph: 0 (absent) gives `dflt`, values
 * beyond `limit` are folded into 1..limit, and values < 0 are kept so that
 * mvrt_graph_create must reject them. */
static int64_t pick(int64_t v, int64_t dflt, int64_t limit)
{
    if (v == 0)
        return dflt;
    if (v < 0)
        return v;
    return v <= limit ? v : 1 + v % limit;
}

static void run_graph(mvrt_model_t *m, const mvrt_model_config_t *c, int64_t batch,
                      int64_t height, int64_t width, int64_t tokens)
{
    mvrt_graph_options_t o;
    memset(&o, 0, sizeof o);
    o.batch = pick(batch, 1, 2);
    int block = c->kind == MVRT_MODEL_MIXER_BLOCK || c->kind == MVRT_MODEL_ATTENTION_BLOCK;
    if (block) {
        o.tokens = pick(tokens, 16, 40);
    } else {
        int64_t lim = c->kind == MVRT_MODEL_NETWORK ? 48 : 24;
        o.height = pick(height, 16, lim);
        o.width = pick(width, 16, lim);
    }
    mvrt_graph_t *sentinel = (mvrt_graph_t *)&sentinel, *g = sentinel;
    mvrt_status_t st = mvrt_graph_create(m, &o, &g);
    if (st != MVRT_OK && fuzz_verbose())
        fprintf(stderr, "  graph_create: %s\n", mvrt_last_error());
    if (st != MVRT_OK) {
        FUZZ_CHECK(g == sentinel);
        FUZZ_CHECK(mvrt_last_error()[0] != '\0');
        return;
    }
    mvrt_tensor_t in, out;
    FUZZ_CHECK(mvrt_graph_input(g, &in) == MVRT_OK);
    FUZZ_CHECK(mvrt_graph_output(g, &out) == MVRT_OK);
    int64_t nin = mvrt_tensor_numel(&in), nout = mvrt_tensor_numel(&out);
    FUZZ_CHECK(nin > 0 && nout > 0);
    FUZZ_CHECK(in.dtype == MVRT_DTYPE_F32 && out.dtype == MVRT_DTYPE_F32);
    const float fill = 0.25f;
    FUZZ_CHECK(mvrt_buffer_fill(NULL, in.buffer, in.offset, (size_t)nin * 4, &fill, 4) == MVRT_OK);
    float *r1 = malloc((size_t)nout * 4), *r2 = malloc((size_t)nout * 4);
    FUZZ_CHECK(r1 && r2);
    st = mvrt_graph_run(g, NULL, NULL, NULL);
    if (fuzz_verbose())
        fprintf(stderr, "  graph batch %lld tokens %lld %lldx%lld: run %s %s\n",
                (long long)o.batch, (long long)o.tokens, (long long)o.height,
                (long long)o.width, mvrt_status_string(st), st ? mvrt_last_error() : "");
    if (st == MVRT_OK) {
        FUZZ_CHECK(mvrt_copy_device_to_host(NULL, r1, out.buffer, out.offset, (size_t)nout * 4) ==
                   MVRT_OK);
        /* The input tensor is inside the workspace: set it again. */
        FUZZ_CHECK(mvrt_buffer_fill(NULL, in.buffer, in.offset, (size_t)nin * 4, &fill, 4) ==
                   MVRT_OK);
        FUZZ_CHECK(mvrt_graph_run(g, NULL, NULL, NULL) == MVRT_OK);
        FUZZ_CHECK(mvrt_copy_device_to_host(NULL, r2, out.buffer, out.offset, (size_t)nout * 4) ==
                   MVRT_OK);
        FUZZ_CHECK(memcmp(r1, r2, (size_t)nout * 4) == 0);
        mvrt_graph_stats_t s;
        FUZZ_CHECK(mvrt_graph_get_stats(g, &s) == MVRT_OK);
        FUZZ_CHECK(s.runs == 2 && s.nodes > 0);
    } else {
        /* Only "this backend lacks an op" is acceptable for a planned graph. */
        FUZZ_CHECK(st == MVRT_ERR_UNSUPPORTED);
    }
    free(r1);
    free(r2);
    mvrt_graph_destroy(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t jlen = nul ? (size_t)(nul - data) : size;
    char *json = malloc(jlen + 1);
    FUZZ_CHECK(json != NULL);
    memcpy(json, data, jlen);
    json[jlen] = '\0';

    mvrt_model_config_t cfg, before;
    memset(&cfg, 0x5A, sizeof cfg);
    before = cfg;
    int64_t batch = -7, height = -7, width = -7, tokens = -7;
    mvrt_status_t st = mvrt_model_config_from_json(json, &cfg, &batch, &height, &width, &tokens);
    /* The optional outputs may be NULL. */
    mvrt_model_config_t cfg2;
    mvrt_status_t st2 = mvrt_model_config_from_json(json, &cfg2, NULL, NULL, NULL, NULL);
    free(json);
    FUZZ_CHECK(st == st2);
    if (st != MVRT_OK) {
        FUZZ_CHECK(st == MVRT_ERR_INVALID_ARGUMENT);
        FUZZ_CHECK(memcmp(&cfg, &before, sizeof cfg) == 0);
        FUZZ_CHECK(batch == -7 && height == -7 && width == -7 && tokens == -7);
        FUZZ_CHECK(mvrt_last_error()[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(config_equal(&cfg, &cfg2));
    FUZZ_CHECK(mvrt_model_config_validate(&cfg) == MVRT_OK);
    if (!small_config(&cfg)) {
        if (fuzz_verbose())
            fprintf(stderr, "config kind %d dim %d: parsed, too large to load\n", cfg.kind,
                    cfg.dim);
        return 0;
    }

    mvrt_backend_t *be = cpu_backend();
    mvrt_model_t *sentinel = (mvrt_model_t *)&sentinel, *m = sentinel;
    if (nul) {
        mvrt_safetensors_t *f = NULL;
        size_t isize = size - jlen - 1;
        if (mvrt_safetensors_open_memory(nul + 1, isize, &f) != MVRT_OK)
            return 0;
        st = mvrt_model_load(be, &cfg, f, "", &m);
        mvrt_safetensors_close(f); /* the model must not keep pointers into it */
    } else {
        st = mvrt_model_init_random(be, &cfg, 1, &m);
    }
    if (fuzz_verbose())
        fprintf(stderr, "model kind %d dim %d: %s %s\n", cfg.kind, cfg.dim,
                nul ? "load" : "init_random", st ? mvrt_last_error() : "ok");
    if (st != MVRT_OK) {
        FUZZ_CHECK(m == sentinel);
        /* Seeded weights for a config that validates cannot be wrong. */
        FUZZ_CHECK(nul || st == MVRT_ERR_OUT_OF_MEMORY);
        FUZZ_CHECK(st == MVRT_ERR_INVALID_ARGUMENT || st == MVRT_ERR_NOT_FOUND ||
                   st == MVRT_ERR_OUT_OF_MEMORY || st == MVRT_ERR_UNSUPPORTED);
        FUZZ_CHECK(mvrt_last_error()[0] != '\0');
        return 0;
    }
    mvrt_model_config_t got;
    FUZZ_CHECK(mvrt_model_get_config(m, &got) == MVRT_OK);
    FUZZ_CHECK(config_equal(&got, &cfg));
    FUZZ_CHECK(mvrt_model_parameter_count(m) >= 0);
    run_graph(m, &cfg, batch, height, width, tokens);
    mvrt_model_destroy(m);
    return 0;
}
