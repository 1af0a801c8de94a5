/* Golden checks of MambaVision parts (contract: model_golden.h).
 *
 * Tolerance: the golden outputs are float64 runs of the PyTorch model on
 * inputs exact in f32; our fp32 run differs by rounding that grows with
 * depth. Per element |got - ref| <= atol + rtol |ref| with rtol 2e-4 and
 * atol 2e-4 times the RMS of the reference output (exact math), 2e-2 and
 * 2e-2 x RMS with the fast (TF32) math and with fp16, 5e-2 and 5e-2 x RMS
 * with bf16 (mvrt_mg_rtol). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_golden.h"

int mvrt_mg_list(const mvrt_safetensors_t *file, char names[][128], int cap)
{
    int n = 0;
    size_t count = mvrt_safetensors_count(file);
    for (size_t i = 0; i < count; i++) {
        mvrt_safetensors_tensor_t t;
        if (mvrt_safetensors_at(file, i, &t) != MVRT_OK)
            continue;
        size_t len = strlen(t.name);
        if (len < 7 || len - 6 >= 128 || strcmp(t.name + len - 6, ".input") != 0)
            continue;
        char base[128];
        memcpy(base, t.name, len - 6);
        base[len - 6] = '\0';
        const char *json = NULL;
        if (mvrt_safetensors_metadata(file, base, &json) != MVRT_OK || !strstr(json, "\"kind\""))
            continue;
        if (n < cap)
            snprintf(names[n], 128, "%s", base);
        n++;
    }
    return n;
}

static int fail(char *err, size_t errlen, const char *what, const char *detail)
{
    snprintf(err, errlen, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
    return -1;
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case MVRT_MODEL_NETWORK: return "model";
    case MVRT_MODEL_STAGE: return "stage";
    case MVRT_MODEL_MIXER_BLOCK: return "mixer";
    default: return "attention";
    }
}

/* k of |got - ref| <= k (RMS(ref) + |ref|) per math mode. bf16 operands
 * and activations carry 8 significant bits (relative rounding 2^-9);
 * fp16 ones 11, as TF32's operands (2^-12), so fp16 takes TF32's bound
 * although it also rounds the stored activations: the measured worst
 * ratios (docs/accuracy.md) stay well inside it. */
double mvrt_mg_rtol(int math)
{
    switch (math) {
    case 0: return 2e-4;
    case 2: return 5e-2;
    default: return 2e-2; /* 1 fast (TF32), 3 fp16 */
    }
}

int mvrt_mg_check(mvrt_backend_t *backend, const mvrt_safetensors_t *file, const char *name, int math, int first_only,
                  mvrt_mg_result_t *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    const char *json = NULL;
    char key[160];
    if (mvrt_safetensors_metadata(file, name, &json) != MVRT_OK)
        return fail(err, errlen, "no config metadata", name);
    mvrt_model_config_t cfg;
    int64_t batch = 0, height = 0, width = 0, tokens = 0;
    if (mvrt_model_config_from_json(json, &cfg, &batch, &height, &width, &tokens) != MVRT_OK)
        return fail(err, errlen, "bad config", mvrt_last_error());
    snprintf(res->kind, sizeof res->kind, "%s", kind_name(cfg.kind));

    mvrt_safetensors_tensor_t in, out;
    snprintf(key, sizeof key, "%s.input", name);
    if (mvrt_safetensors_find(file, key, &in) != MVRT_OK)
        return fail(err, errlen, "missing input", mvrt_last_error());
    snprintf(key, sizeof key, "%s.output", name);
    if (mvrt_safetensors_find(file, key, &out) != MVRT_OK)
        return fail(err, errlen, "missing output", mvrt_last_error());
    if (in.dtype != MVRT_DTYPE_F32 || out.dtype != MVRT_DTYPE_F32)
        return fail(err, errlen, "input and output must be F32", name);

    /* The input tensor's shape decides the graph's size. */
    mvrt_graph_options_t opt = {0};
    opt.math = math;
    int is_block = cfg.kind == MVRT_MODEL_MIXER_BLOCK || cfg.kind == MVRT_MODEL_ATTENTION_BLOCK;
    if (is_block) {
        if (in.rank != 3 || in.shape[2] != cfg.dim)
            return fail(err, errlen, "a block's input must be (batch, tokens, dim)", name);
        opt.batch = in.shape[0], opt.tokens = in.shape[1];
    } else {
        if (in.rank != 4)
            return fail(err, errlen, "a stage's or model's input must be (batch, channels, H, W)", name);
        opt.batch = in.shape[0], opt.height = in.shape[2], opt.width = in.shape[3];
    }
    res->batch = opt.batch;
    /* item 0 alone: the leading 1 / batch of the input and of the output
     * (both batch-major) */
    const int64_t items = first_only ? 1 : opt.batch;
    if (in.shape[0] < 1 || out.rank < 1 || out.shape[0] != in.shape[0])
        return fail(err, errlen, "the input and the output must have the same batch (their first dimension)", name);
    const size_t in_bytes = in.nbytes / (size_t)in.shape[0] * (size_t)items;
    const size_t out_bytes = out.nbytes / (size_t)out.shape[0] * (size_t)items;
    opt.batch = items;
    snprintf(res->shape, sizeof res->shape, "input (%lld, %lld, %lld%s", (long long)items,
             (long long)in.shape[1], (long long)in.shape[2], in.rank == 4 ? "" : ")");
    if (in.rank == 4)
        snprintf(res->shape + strlen(res->shape), sizeof res->shape - strlen(res->shape), ", %lld)",
                 (long long)in.shape[3]);

    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s.weights.", name);
    mvrt_model_t *model = NULL;
    mvrt_graph_t *graph = NULL;
    mvrt_stream_t *stream = NULL;
    float *got = NULL, *again = NULL;
    int rc = -1;
    if (mvrt_model_load(backend, &cfg, file, prefix, &model) != MVRT_OK) {
        fail(err, errlen, "loading the weights", mvrt_last_error());
        goto done;
    }
    if (mvrt_graph_create(model, &opt, &graph) != MVRT_OK) {
        fail(err, errlen, "building the graph", mvrt_last_error());
        goto done;
    }
    mvrt_tensor_t gin, gout;
    mvrt_graph_input(graph, &gin);
    mvrt_graph_output(graph, &gout);
    int64_t nin = mvrt_tensor_numel(&gin), nout = mvrt_tensor_numel(&gout);
    if ((size_t)nin * 4 != in_bytes) {
        fail(err, errlen, "the input's size does not match the config", name);
        goto done;
    }
    if ((size_t)nout * 4 != out_bytes) {
        fail(err, errlen, "the golden output's size differs from the graph's output", name);
        goto done;
    }
    got = malloc((size_t)nout * sizeof *got);
    again = malloc((size_t)nout * sizeof *again);
    float *inbuf = malloc(in_bytes);
    if (!got || !again || !inbuf) {
        free(inbuf);
        fail(err, errlen, "out of host memory", NULL);
        goto done;
    }
    memcpy(inbuf, in.data, in_bytes);
    mvrt_status_t st = mvrt_stream_create(backend, &stream);
    if (st == MVRT_OK)
        st = mvrt_copy_host_to_device(stream, gin.buffer, gin.offset, inbuf, in_bytes);
    if (st == MVRT_OK)
        st = mvrt_graph_run(graph, stream, NULL, NULL);
    if (st == MVRT_OK)
        st = mvrt_copy_device_to_host(stream, got, gout.buffer, gout.offset, (size_t)nout * 4);
    if (st == MVRT_OK)
        st = mvrt_stream_synchronize(stream);
    /* Second run: replays the captured graph on GPUs; input re-uploaded. */
    if (st == MVRT_OK)
        st = mvrt_copy_host_to_device(stream, gin.buffer, gin.offset, inbuf, in_bytes);
    if (st == MVRT_OK)
        st = mvrt_graph_run(graph, stream, NULL, NULL);
    if (st == MVRT_OK)
        st = mvrt_copy_device_to_host(stream, again, gout.buffer, gout.offset, (size_t)nout * 4);
    if (st == MVRT_OK)
        st = mvrt_stream_synchronize(stream);
    free(inbuf);
    if (st != MVRT_OK) {
        fail(err, errlen, "running the graph", mvrt_last_error());
        goto done;
    }
    if (memcmp(got, again, (size_t)nout * 4) != 0) {
        fail(err, errlen, "the second run differs from the first (graph replay is not bit-identical)", NULL);
        goto done;
    }
    mvrt_graph_stats_t gs;
    mvrt_graph_get_stats(graph, &gs);
    res->captured = gs.captured;

    const float *ref = out.data;
    double sum2 = 0, max_ref = 0;
    for (int64_t i = 0; i < nout; i++) {
        float r;
        memcpy(&r, ref + i, 4);
        sum2 += (double)r * r;
        max_ref = fabs(r) > max_ref ? fabs(r) : max_ref;
    }
    double rms = sqrt(sum2 / (double)nout);
    res->rtol = mvrt_mg_rtol(math);
    res->atol = res->rtol * rms;
    res->count = nout;
    for (int64_t i = 0; i < nout; i++) {
        float r;
        memcpy(&r, ref + i, 4);
        double g = got[i], d = fabs(g - r);
        if (!isfinite(g)) {
            res->nonfinite = 1;
            res->worst_ratio = INFINITY;
            continue;
        }
        if (d > res->max_abs)
            res->max_abs = d;
        double ratio = d / (res->atol + res->rtol * fabs(r));
        if (ratio > res->worst_ratio)
            res->worst_ratio = ratio;
    }
    res->max_rel = max_ref > 0 ? res->max_abs / max_ref : res->max_abs;
    rc = 0;
done:
    free(got);
    free(again);
    mvrt_stream_destroy(stream);
    mvrt_graph_destroy(graph);
    mvrt_model_destroy(model);
    return rc;
}
