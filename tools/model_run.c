/* Batch runner over one or several devices (contract: model_run.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model_run.h"

double mvrt_mr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int mr_fail(char *err, size_t errlen, mvrt_status_t *status, mvrt_status_t st, const char *what)
{
    if (status)
        *status = st;
    snprintf(err, errlen, "%s: %s", what, mvrt_last_error());
    return -1;
}

int mvrt_mr_parse_precision(const char *name)
{
    static const char *const names[] = {"fp32", "fast", "bf16", "fp16"};
    for (int i = 0; i < 4; i++)
        if (name && !strcmp(name, names[i]))
            return i;
    return -1;
}

const char *mvrt_mr_precision_words(int math)
{
    switch (math) {
    case 1: return "fast (TF32)";
    case 2: return "bf16 (fp32 accumulation)";
    case 3: return "fp16 (fp32 accumulation)";
    default: return "fp32";
    }
}

int mvrt_mr_model_option(mvrt_mr_spec_t *spec, const char **config, const char *opt, const char *value,
                         const char *cmd)
{
    if (!strcmp(opt, "--backend"))
        spec->backend = value;
    else if (!strcmp(opt, "--config"))
        *config = value;
    else if (!strcmp(opt, "--weights"))
        spec->weights = value;
    else if (!strcmp(opt, "--prefix"))
        spec->prefix = value;
    else if (!strcmp(opt, "--precision")) {
        const int math = mvrt_mr_parse_precision(value);
        if (math < 0) {
            fprintf(stderr, "%s: --precision must be fp32, fast (TF32), bf16 or fp16\n", cmd);
            return -1;
        }
        spec->options.math = math;
    } else {
        return 0;
    }
    return 1;
}

int mvrt_mr_open(mvrt_mr_t *mr, const mvrt_mr_spec_t *spec, mvrt_status_t *status, char *err, size_t errlen)
{
    memset(mr, 0, sizeof *mr);
    mr->opt = spec->options;
    char specs[MVRT_MR_MAX_DEVICES][80];
    if (spec->devices && *spec->devices) {
        const char *s = spec->devices;
        char base[64];
        snprintf(base, sizeof base, "%s", spec->backend);
        char *colon = strchr(base, ':');
        if (colon)
            *colon = '\0';
        if (strcmp(base, "auto") == 0)
            snprintf(base, sizeof base, "cuda");
        while (*s) {
            char *end = NULL;
            long idx = strtol(s, &end, 10);
            if (end == s || idx < 0 || mr->ndev == MVRT_MR_MAX_DEVICES) {
                snprintf(err, errlen, "--devices: expected a list like 0,1 (at most %d), got '%s'",
                         MVRT_MR_MAX_DEVICES, spec->devices);
                if (status)
                    *status = MVRT_ERR_INVALID_ARGUMENT;
                return -1;
            }
            if (snprintf(specs[mr->ndev++], sizeof specs[0], "%s:%ld", base, idx) >= (int)sizeof specs[0])
                specs[mr->ndev - 1][0] = '\0';
            s = *end == ',' ? end + 1 : end;
        }
    } else {
        snprintf(specs[0], sizeof specs[0], "%s", spec->backend);
        mr->ndev = 1;
    }
    if (mr->opt.batch < mr->ndev) {
        snprintf(err, errlen, "the batch (%lld) is smaller than the number of devices (%d)",
                 (long long)mr->opt.batch, mr->ndev);
        if (status)
            *status = MVRT_ERR_INVALID_ARGUMENT;
        return -1;
    }
    mvrt_safetensors_t *file = NULL;
    mvrt_status_t st;
    if (spec->weights && (st = mvrt_safetensors_open(spec->weights, &file)) != MVRT_OK)
        return mr_fail(err, errlen, status, st, "opening the weights");
    int rc = -1;
    for (int d = 0; d < mr->ndev; d++) {
        /* Split the batch as evenly as possible; earlier devices take the remainder. */
        mr->part[d] = mr->opt.batch / mr->ndev + (d < mr->opt.batch % mr->ndev);
        if ((st = mvrt_backend_open(specs[d], &mr->be[d])) != MVRT_OK) {
            mr_fail(err, errlen, status, st, specs[d]);
            goto done;
        }
        if (spec->threads > 0)
            mvrt_backend_set_num_threads(mr->be[d], spec->threads);
        st = file ? mvrt_model_load(mr->be[d], &spec->config, file, spec->prefix, &mr->model[d])
                  : mvrt_model_init_random(mr->be[d], &spec->config, spec->seed, &mr->model[d]);
        if (st != MVRT_OK) {
            mr_fail(err, errlen, status, st, "loading the model");
            goto done;
        }
        mvrt_graph_options_t o = mr->opt;
        o.batch = mr->part[d];
        if ((st = mvrt_graph_create(mr->model[d], &o, &mr->graph[d])) != MVRT_OK) {
            mr_fail(err, errlen, status, st, "building the graph");
            goto done;
        }
        if ((st = mvrt_stream_create(mr->be[d], &mr->stream[d])) != MVRT_OK) {
            mr_fail(err, errlen, status, st, "creating a stream");
            goto done;
        }
    }
    mvrt_tensor_t tin, tout;
    mvrt_graph_input(mr->graph[0], &tin);
    mvrt_graph_output(mr->graph[0], &tout);
    mr->in_item = mvrt_tensor_numel(&tin) / mr->part[0];
    mr->out_item = mvrt_tensor_numel(&tout) / mr->part[0];
    mr->host_in = malloc((size_t)(mr->in_item * mr->opt.batch) * sizeof(float));
    mr->host_out = calloc((size_t)(mr->out_item * mr->opt.batch), sizeof(float));
    if (!mr->host_in || !mr->host_out) {
        snprintf(err, errlen, "out of host memory");
        if (status)
            *status = MVRT_ERR_OUT_OF_MEMORY;
        goto done;
    }
    uint64_t s = spec->seed * 0x9E3779B97F4A7C15ull + 12345;
    for (int64_t i = 0; i < mr->in_item * mr->opt.batch; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        mr->host_in[i] = (float)((double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    }
    /* The same images every batch: uploaded once, so batches time the model. */
    if (mvrt_mr_upload(mr, err, errlen) != 0) {
        if (status)
            *status = MVRT_ERR_DEVICE;
        goto done;
    }
    rc = 0;
done:
    mvrt_safetensors_close(file);
    if (rc)
        mvrt_mr_close(mr);
    return rc;
}

int mvrt_mr_upload(mvrt_mr_t *mr, char *err, size_t errlen)
{
    int64_t first = 0;
    for (int d = 0; d < mr->ndev; d++) {
        mvrt_tensor_t tin;
        mvrt_graph_input(mr->graph[d], &tin);
        mvrt_status_t st = mvrt_copy_host_to_device(mr->stream[d], tin.buffer, tin.offset,
                                                    mr->host_in + first * mr->in_item,
                                                    (size_t)(mr->part[d] * mr->in_item) * sizeof(float));
        if (st == MVRT_OK)
            st = mvrt_stream_synchronize(mr->stream[d]);
        if (st != MVRT_OK)
            return mr_fail(err, errlen, NULL, st, "uploading the input");
        first += mr->part[d];
    }
    return 0;
}

int mvrt_mr_run(mvrt_mr_t *mr, char *err, size_t errlen)
{
    /* every device's graph first: a device-to-host copy into pageable
     * memory returns only once it is done, so a copy issued between two
     * launches would wait for the first device before the second starts
     * (measured on two H100s with copies between the launches: 0,1 ran at
     * the speed of one device, 3298 vs 3351 images/s) */
    for (int d = 0; d < mr->ndev; d++) {
        mvrt_status_t st = mvrt_graph_run(mr->graph[d], mr->stream[d], NULL, NULL);
        if (st != MVRT_OK)
            return mr_fail(err, errlen, NULL, st, "running the graph");
    }
    int64_t first = 0;
    for (int d = 0; d < mr->ndev; d++) {
        mvrt_tensor_t tout;
        mvrt_graph_output(mr->graph[d], &tout);
        mvrt_status_t st = mvrt_copy_device_to_host(mr->stream[d], mr->host_out + first * mr->out_item, tout.buffer,
                                                    tout.offset, (size_t)(mr->part[d] * mr->out_item) * sizeof(float));
        if (st != MVRT_OK)
            return mr_fail(err, errlen, NULL, st, "copying the logits back");
        first += mr->part[d];
    }
    for (int d = 0; d < mr->ndev; d++) {
        mvrt_status_t st = mvrt_stream_synchronize(mr->stream[d]);
        if (st != MVRT_OK)
            return mr_fail(err, errlen, NULL, st, "waiting for the device");
    }
    return 0;
}

void mvrt_mr_close(mvrt_mr_t *mr)
{
    for (int d = 0; d < mr->ndev; d++) {
        mvrt_stream_destroy(mr->stream[d]);
        mvrt_graph_destroy(mr->graph[d]);
        mvrt_model_destroy(mr->model[d]);
        mvrt_backend_close(mr->be[d]);
    }
    free(mr->host_in);
    free(mr->host_out);
    memset(mr, 0, sizeof *mr);
}
