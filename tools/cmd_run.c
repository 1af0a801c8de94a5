/* mvrt run: the main job. Runs a MambaVision model on the best backend
 * batch after batch and reports images/s, latency per batch and a checksum
 * of the logits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "model_run.h"

static void run_usage(FILE *to)
{
    fprintf(to,
            "usage: mvrt run [--backend NAME] [--config NAME] [--weights FILE [--prefix P]]\n"
            "                [--batch N] [--batches N] [--image H[xW]] [--precision fp32|fast|bf16|fp16]\n"
            "                [--devices LIST] [--threads N] [--seed S] [--agreement MIN] [--no-progress]\n"
            "\n"
            "Runs a MambaVision network on random images (seeded) and prints images/s,\n"
            "the latency per batch and a checksum of the logits.\n"
            "\n"
            "  --backend NAME   auto (default: cuda, then hip, then cpu), cpu, cuda, cuda:N, hip\n"
            "  --config NAME    T (default), T2, S, B, L, L2\n"
            "  --weights FILE   .safetensors with the model's PyTorch parameter names\n"
            "                   (tools/convert_checkpoint.py makes one from a .pth.tar);\n"
            "                   default: deterministic weights from --seed\n"
            "  --prefix P       prefix of the tensor names in FILE (default none)\n"
            "  --batch N        images per batch (default 256 on a GPU, 8 on the CPU)\n"
            "  --batches N      timed batches after one warm-up batch (default 30 GPU, 3 CPU)\n"
            "  --image H[xW]    input size (default 224)\n"
            "  --precision P    fp32 (default, matches PyTorch with TF32 off), fast (TF32 GEMMs\n"
            "                   and convs), bf16 or fp16 (16-bit operands and activations, fp32\n"
            "                   accumulation)\n"
            "  --devices LIST   split each batch over devices of the backend, e.g. 0,1\n"
            "  --threads N      CPU threads (default: all cores)\n"
            "  --seed S         seed of the weights (without --weights) and of the images (0)\n"
            "  --agreement MIN  then run the same images in fp32 and compare: the share of\n"
            "                   images whose top-1 class agrees and the largest logit difference;\n"
            "                   exit 1 when the share is below MIN (0..1) or a logit is not finite\n");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The fp32 run of the same images and weights against `logits` (the run
 * under test, batch x classes): prints the top-1 agreement and the largest
 * |difference| relative to the fp32 logits' largest magnitude, and, so that
 * a disagreement can be told from a near-tie, the median fp32 margin
 * between the first and second class and the largest fp32 margin between
 * the two classes of any disagreement; returns 0 when the share agreeing
 * is at least min_agree, 1 otherwise, -1 when the fp32 run failed. */
static int top1_agreement(const mvrt_mr_spec_t *spec, const float *logits, int64_t batch, int64_t classes,
                          double min_agree)
{
    mvrt_mr_spec_t s32 = *spec;
    s32.options.math = 0; /* fp32 */
    mvrt_mr_t mr;
    mvrt_status_t st;
    char err[2048];
    if (mvrt_mr_open(&mr, &s32, &st, err, sizeof err) != 0 || mvrt_mr_run(&mr, err, sizeof err) != 0) {
        fprintf(stderr, "mvrt run: the fp32 run for --agreement: %s\n", err);
        return -1;
    }
    int64_t agree = 0;
    double max_diff = 0.0, max_ref = 0.0, max_split = 0.0;
    double *margin = malloc((size_t)(batch > 0 ? batch : 1) * sizeof *margin);
    if (!margin) {
        mvrt_mr_close(&mr);
        fprintf(stderr, "mvrt run: out of host memory\n");
        return -1;
    }
    for (int64_t b = 0; b < batch; b++) {
        const float *x = logits + b * classes, *r = mr.host_out + b * classes;
        int64_t ix = 0, ir = 0;
        for (int64_t c = 1; c < classes; c++) {
            if (x[c] > x[ix])
                ix = c;
            if (r[c] > r[ir])
                ir = c;
        }
        double second = -INFINITY;
        for (int64_t c = 0; c < classes; c++)
            if (c != ir && r[c] > second)
                second = r[c];
        margin[b] = classes > 1 ? (double)r[ir] - second : 0.0;
        agree += ix == ir;
        if (ix != ir && (double)r[ir] - (double)r[ix] > max_split)
            max_split = (double)r[ir] - (double)r[ix];
        for (int64_t c = 0; c < classes; c++) {
            const double d = fabs((double)x[c] - (double)r[c]);
            max_diff = d > max_diff ? d : max_diff;
            max_ref = fabs((double)r[c]) > max_ref ? fabs((double)r[c]) : max_ref;
        }
    }
    mvrt_mr_close(&mr);
    const double share = batch > 0 ? (double)agree / (double)batch : 1.0;
    printf("  top-1 class equal to the fp32 run's on %lld of %lld images (%.2f %%, needed %.2f %%); "
           "max |logit - fp32| %.3e (max |fp32 logit| %.3e)\n",
           (long long)agree, (long long)batch, 100.0 * share, 100.0 * min_agree, max_diff, max_ref);
    if (batch > 0) {
        qsort(margin, (size_t)batch, sizeof *margin, cmp_double);
        printf("  fp32 margin of the top class over the second: median %.3e; largest fp32 margin between the two "
               "classes of a disagreement: %.3e\n",
               margin[batch / 2], max_split);
    }
    free(margin);
    return share >= min_agree ? 0 : 1;
}

int mvrt_cmd_run(int argc, char **argv)
{
    mvrt_mr_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.backend = "auto";
    const char *config = "T";
    int64_t batch = 0, batches = -1, height = 224, width = 224;
    int progress = isatty(2);
    double min_agree = -1.0; /* --agreement: off */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--no-progress")) {
            progress = 0;
            continue;
        }
        if (i + 1 >= argc || a[0] != '-') {
            fprintf(stderr, "mvrt run: %s '%s'\n\n", a[0] == '-' ? "missing value for" : "unexpected argument", a);
            run_usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        char *end = NULL;
        const int model_opt = mvrt_mr_model_option(&spec, &config, a, v, "mvrt run");
        if (model_opt < 0)
            return 2;
        if (model_opt > 0)
            continue;
        if (!strcmp(a, "--devices"))
            spec.devices = v;
        else if (!strcmp(a, "--agreement")) {
            min_agree = strtod(v, &end);
            if (end == v || *end || !(min_agree >= 0.0 && min_agree <= 1.0)) {
                fprintf(stderr, "mvrt run: --agreement takes a share in [0, 1], not '%s'\n", v);
                return 2;
            }
        }
        else if (!strcmp(a, "--batch") || !strcmp(a, "--batches") || !strcmp(a, "--threads") ||
                   !strcmp(a, "--seed")) {
            long long n = strtoll(v, &end, 10);
            if (end == v || *end || n < 0 || (n < 1 && strcmp(a, "--seed") && strcmp(a, "--batches"))) {
                fprintf(stderr, "mvrt run: %s needs a whole number, not '%s'\n", a, v);
                return 2;
            }
            if (!strcmp(a, "--batch"))
                batch = n;
            else if (!strcmp(a, "--batches"))
                batches = n;
            else if (!strcmp(a, "--threads"))
                spec.threads = (int)n;
            else
                spec.seed = (uint64_t)n;
        } else if (!strcmp(a, "--image")) {
            height = strtoll(v, &end, 10);
            width = height;
            if (end != v && (*end == 'x' || *end == 'X'))
                width = strtoll(end + 1, &end, 10);
            if (*end || height < 1 || width < 1) {
                fprintf(stderr, "mvrt run: --image takes H or HxW, not '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "mvrt run: unknown option '%s'\n\n", a);
            run_usage(stderr);
            return 2;
        }
    }
    if (mvrt_model_config_preset(config, &spec.config) != MVRT_OK) {
        fprintf(stderr, "mvrt run: %s\n", mvrt_last_error());
        return 2;
    }

    /* Defaults depend on what "auto" resolves to. */
    mvrt_backend_t *probe = NULL;
    mvrt_status_t st = mvrt_backend_open(spec.backend, &probe);
    if (st != MVRT_OK) {
        fprintf(stderr, "mvrt run: backend '%s': %s\n", spec.backend, mvrt_last_error());
        return st == MVRT_ERR_UNAVAILABLE ? 77 : 2;
    }
    char resolved[64];
    snprintf(resolved, sizeof resolved, "%s", mvrt_backend_name(probe));
    mvrt_device_info_t info;
    memset(&info, 0, sizeof info);
    mvrt_backend_device_info(probe, &info);
    mvrt_backend_close(probe);
    int on_cpu = strcmp(resolved, "cpu") == 0;
    if (!strcmp(spec.backend, "auto"))
        spec.backend = resolved;
    if (!batch)
        batch = on_cpu ? 8 : 256;
    if (batches < 0)
        batches = on_cpu ? 3 : 30;
    spec.options.batch = batch;
    spec.options.height = height, spec.options.width = width;

    mvrt_mr_t mr;
    char err[2048];
    double t0 = mvrt_mr_now();
    if (mvrt_mr_open(&mr, &spec, &st, err, sizeof err) != 0) {
        fprintf(stderr, "mvrt run: %s\n", err);
        return st == MVRT_ERR_UNAVAILABLE ? 77 : 1;
    }
    double t_load = mvrt_mr_now() - t0;
    mvrt_graph_stats_t gs;
    mvrt_graph_get_stats(mr.graph[0], &gs);
    printf("mvrt run: MambaVision-%s (%.1f M parameters, %s), %lldx%lld images, batch %lld on %s%s%s (%s), "
           "%s math\n",
           config, (double)mvrt_model_parameter_count(mr.model[0]) / 1e6,
           spec.weights ? spec.weights : "seeded weights", (long long)height, (long long)width, (long long)batch,
           spec.backend, spec.devices ? " devices " : "", spec.devices ? spec.devices : "",
           info.name[0] ? info.name : "?", mvrt_mr_precision_words(spec.options.math));
    printf("  setup %.2f s: weights %.1f MiB, workspace %.1f MiB per device, %lld ops per batch\n", t_load,
           (double)gs.weight_bytes / 1048576.0, (double)gs.workspace_bytes / 1048576.0, (long long)gs.nodes);

    /* One warm-up batch: captures the GPU graph. */
    if (mvrt_mr_run(&mr, err, sizeof err) != 0) {
        fprintf(stderr, "mvrt run: %s\n", err);
        mvrt_mr_close(&mr);
        return 1;
    }
    double *lat = calloc((size_t)(batches > 0 ? batches : 1), sizeof *lat);
    double start = mvrt_mr_now();
    for (int64_t b = 0; b < batches; b++) {
        double t = mvrt_mr_now();
        if (mvrt_mr_run(&mr, err, sizeof err) != 0) {
            fprintf(stderr, "\nmvrt run: %s\n", err);
            free(lat);
            mvrt_mr_close(&mr);
            return 1;
        }
        lat[b] = mvrt_mr_now() - t;
        if (progress) {
            int w = 30, done = (int)((b + 1) * w / batches);
            fprintf(stderr, "\r  [%.*s%*s] %lld/%lld batches", done, "##############################", w - done, "",
                    (long long)(b + 1), (long long)batches);
            fflush(stderr);
        }
    }
    double total = mvrt_mr_now() - start;
    if (progress)
        fprintf(stderr, "\n");
    if (batches > 0) {
        qsort(lat, (size_t)batches, sizeof *lat, cmp_double);
        printf("  %.1f images/s over %lld batches; latency per batch: median %.3f ms, min %.3f ms, max %.3f ms\n",
               (double)(batch * batches) / total, (long long)batches, 1e3 * lat[batches / 2], 1e3 * lat[0],
               1e3 * lat[batches - 1]);
    }
    mvrt_graph_get_stats(mr.graph[0], &gs);
    int64_t n = mr.out_item * batch;
    double sum = 0, sum_abs = 0;
    int finite = 1;
    for (int64_t i = 0; i < n; i++) {
        sum += mr.host_out[i];
        sum_abs += fabs(mr.host_out[i]);
        finite &= isfinite(mr.host_out[i]) != 0;
    }
    printf("  logits (%lld x %lld): checksum sum %.6e, sum|x| %.6e, first %.6f %.6f %.6f%s\n", (long long)batch,
           (long long)mr.out_item, sum, sum_abs, mr.host_out[0], n > 1 ? mr.host_out[1] : 0.0,
           n > 2 ? mr.host_out[2] : 0.0, finite ? "" : "  (NON-FINITE VALUES)");
    printf("  %s\n", gs.captured ? "runs replay a captured GPU graph" : "ops launched one by one");
    free(lat);
    int agreement = 0;
    if (min_agree >= 0.0) {
        /* the run's logits, then its device memory back before the fp32 graph */
        float *logits = malloc((size_t)n * sizeof *logits);
        if (!logits) {
            fprintf(stderr, "mvrt run: out of host memory\n");
            mvrt_mr_close(&mr);
            return 1;
        }
        memcpy(logits, mr.host_out, (size_t)n * sizeof *logits);
        const int64_t classes = mr.out_item;
        mvrt_mr_close(&mr);
        agreement = top1_agreement(&spec, logits, batch, classes, min_agree);
        free(logits);
    } else {
        mvrt_mr_close(&mr);
    }
    return finite && agreement == 0 ? 0 : 1;
}
