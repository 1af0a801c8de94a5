/* Golden files of MambaVision parts (shared/golden/README.md: kinds
 * "mixer", "attention", "stage", "model"): find the parts a file holds,
 * run one through a graph on a backend, and compare with its output. Used by
 * `mvrt check` and by the tests. */
#ifndef MVRT_TOOLS_MODEL_GOLDEN_H
#define MVRT_TOOLS_MODEL_GOLDEN_H

#include <stddef.h>
#include "mvrt/mvrt.h"

/* Names of the parts in `file` (each has metadata <name> holding a config
 * JSON with "kind", and tensors <name>.input / <name>.output). Returns the
 * count (up to `cap` names written), 0 when there are none. */
int mvrt_mg_list(const mvrt_safetensors_t *file, char names[][128], int cap);

typedef struct mvrt_mg_result {
    double max_abs, max_rel;   /* max |got - ref|, and that relative to max |ref| */
    double worst_ratio;        /* max |got - ref| / (atol + rtol |ref|): <= 1 passes */
    double rtol, atol;
    int64_t count;
    int nonfinite;
    int captured;              /* the graph replayed a captured GPU graph */
    int64_t batch;             /* the file's batch (the part's input's first dimension) */
    char kind[32];
    char shape[96];
} mvrt_mg_result_t;

/* The tolerance factor k of the math mode (rtol = k, atol = k RMS(ref)). */
double mvrt_mg_rtol(int math);
/* Loads the part `name` onto `backend`, runs it twice (the second run
 * replays a captured graph on GPUs; the two must agree bit for bit) and
 * compares with the golden output. math: 0 exact fp32, 1 fast (TF32),
 * 2 bf16, 3 fp16 (mvrt_graph_options_t.math). first_only: a graph of
 * batch 1 over the file's first item, compared with its output alone
 * (batch 1 takes its own kernels and layouts); else the whole batch.
 * Returns 0 when it ran (pass or fail is in *res: worst_ratio <= 1; the
 * file's batch in res->batch), -1 with a message in err when it could
 * not run. */
int mvrt_mg_check(mvrt_backend_t *backend, const mvrt_safetensors_t *file, const char *name, int math, int first_only,
                  mvrt_mg_result_t *res, char *err, size_t errlen);

#endif
