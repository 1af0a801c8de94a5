/* Running a MambaVision model (or block) batch after batch on one backend,
 * or split over several devices of one backend: shared by `mvrt run` and
 * `mvrt bench model|block`. */
#ifndef MVRT_TOOLS_MODEL_RUN_H
#define MVRT_TOOLS_MODEL_RUN_H

#include <stddef.h>
#include "mvrt/mvrt.h"

#define MVRT_MR_MAX_DEVICES 16

typedef struct mvrt_mr {
    int ndev;
    mvrt_backend_t *be[MVRT_MR_MAX_DEVICES];
    mvrt_model_t *model[MVRT_MR_MAX_DEVICES];
    mvrt_graph_t *graph[MVRT_MR_MAX_DEVICES];
    mvrt_stream_t *stream[MVRT_MR_MAX_DEVICES];
    int64_t part[MVRT_MR_MAX_DEVICES];   /* batch items on each device */
    mvrt_graph_options_t opt;            /* batch = the whole batch */
    int64_t in_item, out_item;           /* floats per batch item */
    float *host_in, *host_out;           /* whole batch */
} mvrt_mr_t;

typedef struct mvrt_mr_spec {
    const char *backend;        /* "auto", "cpu", "cuda", "cuda:1", ... */
    const char *devices;        /* NULL, or "0,1": split the batch over these devices of `backend` */
    mvrt_model_config_t config;
    const char *weights;        /* .safetensors path, or NULL for seeded weights */
    const char *prefix;         /* tensor name prefix in the weights file ("" / NULL: none) */
    uint64_t seed;
    mvrt_graph_options_t options;
    int threads;                /* CPU threads, 0 = default */
} mvrt_mr_spec_t;

/* --precision's values: "fp32" 0, "fast" 1 (TF32), "bf16" 2, "fp16" 3
 * (mvrt_graph_options_t.math); -1 for any other string. */
int mvrt_mr_parse_precision(const char *name);
/* The math mode in words for reports ("fp32", "fast (TF32)", ...). */
const char *mvrt_mr_precision_words(int math);
#define MVRT_MR_PRECISION_USAGE "fp32|fast|bf16|fp16"

/* The model options `mvrt run` and `mvrt classify` share: --backend,
 * --config (into *config), --weights, --prefix, --precision fp32|fast|bf16|fp16.
 * Returns 1 when `opt` is one of them (spec updated), 0 when it is not,
 * -1 for a bad value (message on stderr, prefixed with `cmd`). */
int mvrt_mr_model_option(mvrt_mr_spec_t *spec, const char **config, const char *opt, const char *value,
                         const char *cmd);

/* Opens the backend(s), loads the model on each, builds the graphs, fills
 * the input with seeded values in [-1, 1] and uploads it (once: every batch
 * runs on the same images). 0 on success, else -1 with a
 * message in err (and *status the mvrt status). */
int mvrt_mr_open(mvrt_mr_t *mr, const mvrt_mr_spec_t *spec, mvrt_status_t *status, char *err, size_t errlen);
/* Uploads host_in (the whole batch, split over the devices) and waits. */
int mvrt_mr_upload(mvrt_mr_t *mr, char *err, size_t errlen);
/* One batch: run on every device, outputs back to host_out, wait. */
int mvrt_mr_run(mvrt_mr_t *mr, char *err, size_t errlen);
void mvrt_mr_close(mvrt_mr_t *mr);

double mvrt_mr_now(void);

#endif
