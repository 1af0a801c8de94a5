/* The batch splitter behind `mvrt run --devices` (tools/model_run.c):
 * a batch split over several devices gives the results of one device.
 * usage: test_model_run --backend NAME
 *
 * With one device the split is exercised as "0,0" (two models, graphs and
 * streams on the same device, each taking part of the batch); where the
 * backend has two or more devices, "0,1" is run too. Graphs for different
 * batch sizes may pick different GEMM blockings, so the comparison is
 * |a - b| <= 1e-4 max(1, max |a|) rather than bitwise. The split itself
 * (which items go where) is checked exactly: item i of the split run is
 * compared with item i of the whole run, so any misplaced item fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt/mvrt.h"
#include "test_util.h"
#include "small_network.h"
#include "tools/model_run.h"

/* Runs the small network on a batch of `batch`, split over `devices`
 * (NULL: one device), and returns the logits (malloc'ed) or NULL. */
static float *run_split(const char *backend, const char *devices, int64_t batch, int *out_ndev)
{
    mvrt_mr_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.backend = backend;
    spec.devices = devices;
    spec.config = small_network();
    spec.seed = 7;
    spec.options.batch = batch;
    spec.options.height = 37, spec.options.width = 45;
    mvrt_mr_t mr;
    mvrt_status_t st = MVRT_OK;
    char err[512];
    if (mvrt_mr_open(&mr, &spec, &st, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL: open %s devices %s: %s\n", backend, devices ? devices : "(one)", err);
        return NULL;
    }
    float *out = NULL;
    if (mvrt_mr_run(&mr, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL: run %s devices %s: %s\n", backend, devices ? devices : "(one)", err);
    } else {
        size_t n = (size_t)(batch * mr.out_item);
        out = malloc(n * sizeof *out);
        if (out)
            memcpy(out, mr.host_out, n * sizeof *out);
        /* a second batch on the same graphs gives the same logits */
        if (out && mvrt_mr_run(&mr, err, sizeof err) == 0)
            CHECK(memcmp(out, mr.host_out, n * sizeof *out) == 0);
    }
    *out_ndev = mr.ndev;
    int64_t parts = 0;
    for (int d = 0; d < mr.ndev; d++)
        parts += mr.part[d];
    CHECK(parts == batch);
    mvrt_mr_close(&mr);
    return out;
}

static void compare(const char *what, const float *a, const float *b, int64_t n)
{
    double scale = 1, worst = 0;
    int finite = 1;
    for (int64_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(a[i]));
        finite &= isfinite(a[i]) && isfinite(b[i]);
    }
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)a[i] - b[i]));
    printf("%-28s max |diff| %.3g (scale %.3g)\n", what, worst, scale);
    CHECK(finite);
    CHECK(worst <= 1e-4 * scale);
}

int main(int argc, char **argv)
{
    const char *backend = "cpu";
    for (int i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--backend"))
            backend = argv[i + 1];
    mvrt_backend_t *be = tu_open_or_skip(backend);
    mvrt_backend_close(be);
    /* a second device? */
    char second[64];
    snprintf(second, sizeof second, "%s:1", backend);
    int count = mvrt_backend_open(second, &be) == MVRT_OK ? 2 : 1;
    if (count == 2)
        mvrt_backend_close(be);

    const int64_t batch = 5, classes = 7;
    int ndev = 0;
    float *one = run_split(backend, NULL, batch, &ndev);
    CHECK(one != NULL && ndev == 1);
    float *split = run_split(backend, "0,0", batch, &ndev);
    CHECK(split != NULL && ndev == 2);
    if (one && split)
        compare("one device vs 0,0", one, split, batch * classes);
    /* items must not move: the whole batch differs from a reordering */
    if (one)
        CHECK(memcmp(one, one + classes, (size_t)classes * sizeof *one) != 0);
    if (count >= 2) {
        float *two = run_split(backend, "0,1", batch, &ndev);
        CHECK(two != NULL && ndev == 2);
        if (one && two)
            compare("one device vs 0,1", one, two, batch * classes);
        free(two);
    } else {
        printf("(one device: 0,1 not run)\n");
    }
    /* errors: more devices than batch items, a malformed list */
    mvrt_mr_spec_t bad;
    memset(&bad, 0, sizeof bad);
    bad.backend = backend;
    bad.config = small_network();
    bad.options.batch = 1, bad.options.height = 37, bad.options.width = 45;
    bad.devices = "0,0";
    mvrt_mr_t mr;
    mvrt_status_t st = MVRT_OK;
    char err[512] = "";
    CHECK(mvrt_mr_open(&mr, &bad, &st, err, sizeof err) != 0 && strstr(err, "smaller") != NULL);
    bad.options.batch = 4, bad.devices = "0,x";
    err[0] = 0;
    CHECK(mvrt_mr_open(&mr, &bad, &st, err, sizeof err) != 0 && strstr(err, "--devices") != NULL);
    free(one);
    free(split);
    TEST_END();
}
