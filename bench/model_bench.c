/* mvrt bench model | block: MambaVision through the graph runner, timed
 * with events on the device (median of repeated runs), against the PyTorch
 * figures of shared/ANCHORS.md (H100, fp32 eager / CUDA graph / AMP).
 *
 * Each row prints the time per batch, images (or sequences) per second, the
 * achieved TFLOP/s of the GEMMs, convs and attention, and the ratio to the
 * PyTorch baseline (> 1: faster). The baselines were measured on an H100:
 * ratios are meaningful only for a run on one; on a CPU the rows print the
 * thread scaling instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "tools/model_run.h"

typedef struct bench_row {
    const char *name;
    int block;               /* 0 network, else block kind */
    const char *config;      /* network preset */
    int dim, heads;          /* block width / heads */
    int64_t batch;
    int math;
    double base_us;          /* PyTorch time per batch on the H100 (0: none) */
    const char *base_name;
    double target_ratio;     /* issue #6 target as a ratio to base (0: none) */
} bench_row_t;

/* ANCHORS.md; targets from issue #6. */
static const bench_row_t gpu_rows[] = {
    {"T stage-3 mixer block, batch 1", MVRT_MODEL_MIXER_BLOCK, NULL, 320, 0, 1, 0, 129.0, "PyTorch CUDA graph", 129.0 / 40.0},
    {"T stage-3 mixer block, batch 4", MVRT_MODEL_MIXER_BLOCK, NULL, 320, 0, 4, 0, 0, NULL, 0},
    {"T stage-3 mixer block, batch 16", MVRT_MODEL_MIXER_BLOCK, NULL, 320, 0, 16, 0, 0, NULL, 0},
    {"T stage-3 mixer block, batch 256", MVRT_MODEL_MIXER_BLOCK, NULL, 320, 0, 256, 0, 3871.0, "PyTorch eager", 3871.0 / 2600.0},
    {"T stage-3 mixer block, batch 256, fast", MVRT_MODEL_MIXER_BLOCK, NULL, 320, 0, 256, 1, 3871.0, "PyTorch eager", 0},
    {"T stage-3 mixer block, batch 256, bf16", MVRT_MODEL_MIXER_BLOCK, NULL, 320, 0, 256, 2, 3871.0, "PyTorch eager", 0},
    {"T stage-3 attention block, batch 256", MVRT_MODEL_ATTENTION_BLOCK, NULL, 320, 8, 256, 0, 4429.0, "PyTorch eager", 0},
    {"T stage-3 attention block, batch 256, bf16", MVRT_MODEL_ATTENTION_BLOCK, NULL, 320, 8, 256, 2, 4429.0, "PyTorch eager", 0},
    {"B stage-3 mixer block, batch 256", MVRT_MODEL_MIXER_BLOCK, NULL, 512, 0, 256, 0, 7622.0, "PyTorch eager", 0},
    {"MambaVision-T, batch 256", 0, "T", 0, 0, 256, 0, 256e6 / 3572.0, "PyTorch eager", 5400.0 / 3572.0},
    {"MambaVision-T, batch 256, fast", 0, "T", 0, 0, 256, 1, 256e6 / 10050.0, "PyTorch AMP", 1.0},
    {"MambaVision-T, batch 256, bf16", 0, "T", 0, 0, 256, 2, 256e6 / 10050.0, "PyTorch AMP", 1.0},
    {"MambaVision-T, batch 1", 0, "T", 0, 0, 1, 0, 1e6 / 85.5, "PyTorch eager", 1000.0 / 85.5},
    {"MambaVision-B, batch 256", 0, "B", 0, 0, 256, 0, 256e6 / 1344.0, "PyTorch eager", 0},
    /* 16-bit rows (issue #31); their same-call anchors come from
     * shared/anchors/torch_mambavision.py, not from ANCHORS.md */
    {"MambaVision-T, batch 1, bf16", 0, "T", 0, 0, 1, 2, 0, NULL, 0},
    {"MambaVision-B, batch 256, bf16", 0, "B", 0, 0, 256, 2, 0, NULL, 0},
    {"MambaVision-B, batch 1, bf16", 0, "B", 0, 0, 1, 2, 0, NULL, 0},
    {"MambaVision-L, batch 256, bf16", 0, "L", 0, 0, 256, 2, 0, NULL, 0},
    {"MambaVision-L, batch 1, bf16", 0, "L", 0, 0, 1, 2, 0, NULL, 0},
    {"MambaVision-T, batch 256, fp16", 0, "T", 0, 0, 256, 3, 0, NULL, 0},
    {"MambaVision-T, batch 1, fp16", 0, "T", 0, 0, 1, 3, 0, NULL, 0},
    {"MambaVision-B, batch 256, fp16", 0, "B", 0, 0, 256, 3, 0, NULL, 0},
    {"MambaVision-B, batch 1, fp16", 0, "B", 0, 0, 1, 3, 0, NULL, 0},
    {"MambaVision-L, batch 256, fp16", 0, "L", 0, 0, 256, 3, 0, NULL, 0},
    {"MambaVision-L, batch 1, fp16", 0, "L", 0, 0, 1, 3, 0, NULL, 0},
    /* the other configs of issue #31's per-config target, bf16 */
    {"MambaVision-T2, batch 256, bf16", 0, "T2", 0, 0, 256, 2, 0, NULL, 0},
    {"MambaVision-S, batch 256, bf16", 0, "S", 0, 0, 256, 2, 0, NULL, 0},
    {"MambaVision-L2, batch 256, bf16", 0, "L2", 0, 0, 256, 2, 0, NULL, 0},
    /* the bottom of that target's batch range (64-256) */
    {"MambaVision-T, batch 64, bf16", 0, "T", 0, 0, 64, 2, 0, NULL, 0},
    {"MambaVision-B, batch 64, bf16", 0, "B", 0, 0, 64, 2, 0, NULL, 0},
    {"MambaVision-L, batch 64, bf16", 0, "L", 0, 0, 64, 2, 0, NULL, 0},
    {"MambaVision-T2, batch 64, bf16", 0, "T2", 0, 0, 64, 2, 0, NULL, 0},
    {"MambaVision-S, batch 64, bf16", 0, "S", 0, 0, 64, 2, 0, NULL, 0},
    {"MambaVision-L2, batch 64, bf16", 0, "L2", 0, 0, 64, 2, 0, NULL, 0},
};

static const bench_row_t cpu_rows[] = {
    {"T stage-3 mixer block, batch 8", MVRT_MODEL_MIXER_BLOCK, NULL, 320, 0, 8, 0, 0, NULL, 0},
    {"T stage-3 attention block, batch 8", MVRT_MODEL_ATTENTION_BLOCK, NULL, 320, 8, 8, 0, 0, NULL, 0},
    {"MambaVision-T, batch 4", 0, "T", 0, 0, 4, 0, 0, NULL, 0},
};

/* ---- same-call PyTorch figures (--anchor FILE) ----
 * shared/anchors/torch_mambavision.py writes {"T b256 compile-bf16":
 * {"img_s": 19420.7, "ms": 13.18, "peak_mib": 750.2}, ...} from the same
 * device call; each network row prints its ratios to every mode of its
 * config, batch and precision found there (anchor_print). */
static char *anchor_json;

/* Field `field` ("img_s", "peak_mib") of entry "<config> b<batch> <mode>",
 * or 0 when absent. */
static double anchor_value(const char *config, int64_t batch, const char *mode, const char *field)
{
    char key[96];
    snprintf(key, sizeof key, "%s b%lld %s", config, (long long)batch, mode);
    return mvrt_bench_anchor_field(anchor_json, key, field);
}

/* The row's ratios to every PyTorch mode of its config, batch and
 * precision in the anchor file: throughput (> 1: mvrt faster) and, where
 * the file has PyTorch's max_memory_allocated, device memory (mvrt's
 * weights + workspace of device 0 / PyTorch's; < 1: mvrt smaller). */
static void anchor_print(const bench_row_t *row, double items_per_s, double mib)
{
    static const char *const fp32_modes[] = {"eager-fp32", "compile-fp32", "graphs-fp32", NULL};
    static const char *const bf16_modes[] = {"eager-bf16", "compile-bf16", "autotune-bf16", "graphs-bf16", NULL};
    static const char *const fp16_modes[] = {"eager-fp16", "compile-fp16", "autotune-fp16", "graphs-fp16", NULL};
    if (!anchor_json || row->block || row->math == 1)
        return;
    const char *const *modes = row->math == 2 ? bf16_modes : row->math == 3 ? fp16_modes : fp32_modes;
    int any = 0;
    for (const char *const *m = modes; *m; m++) {
        const double theirs = anchor_value(row->config, row->batch, *m, "img_s");
        if (theirs <= 0.0)
            continue;
        printf("%s %s %.2fx", any ? "," : "    same call, mvrt / PyTorch:", *m, items_per_s / theirs);
        any = 1;
    }
    if (any)
        printf("\n");
    any = 0;
    for (const char *const *m = modes; *m; m++) {
        const double theirs = anchor_value(row->config, row->batch, *m, "peak_mib");
        if (theirs <= 0.0)
            continue;
        printf("%s %s %.0f MiB %.2fx", any ? "," : "    memory, mvrt / PyTorch (< 1: mvrt uses less):", *m, theirs,
               mib / theirs);
        any = 1;
    }
    if (any)
        printf(" (mvrt %.1f MiB: weights + workspace)\n", mib);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median ms per run of the graph on device 0, timed with events. */
static int time_graph(mvrt_mr_t *mr, int reps, float *out_ms, char *err, size_t errlen)
{
    mvrt_event_t *e0 = NULL, *e1 = NULL;
    float *t = calloc((size_t)reps, sizeof *t);
    mvrt_status_t st = t ? MVRT_OK : MVRT_ERR_OUT_OF_MEMORY;
    if (st == MVRT_OK)
        st = mvrt_event_create(mr->be[0], &e0);
    if (st == MVRT_OK)
        st = mvrt_event_create(mr->be[0], &e1);
    for (int i = 0; st == MVRT_OK && i < 2; i++) /* warm-up (the first run captures) */
        st = mvrt_graph_run(mr->graph[0], mr->stream[0], NULL, NULL);
    for (int r = 0; st == MVRT_OK && r < reps; r++) {
        st = mvrt_event_record(e0, mr->stream[0]);
        if (st == MVRT_OK)
            st = mvrt_graph_run(mr->graph[0], mr->stream[0], NULL, NULL);
        if (st == MVRT_OK)
            st = mvrt_event_record(e1, mr->stream[0]);
        if (st == MVRT_OK)
            st = mvrt_event_synchronize(e1);
        if (st == MVRT_OK)
            st = mvrt_event_elapsed_ms(e0, e1, &t[r]);
    }
    if (st == MVRT_OK) {
        qsort(t, (size_t)reps, sizeof *t, cmp_float);
        *out_ms = t[reps / 2];
    } else {
        snprintf(err, errlen, "%s", mvrt_last_error());
    }
    mvrt_event_destroy(e0);
    mvrt_event_destroy(e1);
    free(t);
    return st == MVRT_OK ? 0 : -1;
}

/* Per-op breakdown: totals per op kind, then the slowest ops. Where the
 * backend captures graphs, each op's time is its own replay's
 * (mvrt_graph_profile_replayed: no launch gaps, which at batch 1 are most
 * of an op-by-op run); elsewhere an op-by-op run's. The op-by-op total is
 * printed either way. */
static void print_profile(mvrt_mr_t *mr)
{
    size_t n = 0;
    if (mvrt_graph_profile(mr->graph[0], mr->stream[0], NULL, 0, &n) != MVRT_OK) {
        printf("    profile: %s\n", mvrt_last_error());
        return;
    }
    mvrt_graph_op_profile_t *ops = calloc(n ? n : 1, sizeof *ops);
    if (!ops || mvrt_graph_profile(mr->graph[0], mr->stream[0], ops, n, &n) != MVRT_OK) {
        printf("    profile: %s\n", ops ? mvrt_last_error() : "out of memory");
        free(ops);
        return;
    }
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += ops[i].ms;
    printf("    op-by-op run: %.3f ms over %zu ops (launch gaps included)\n", total, n);
    const int repeats = 20;
    mvrt_graph_op_profile_t *replayed = calloc(n ? n : 1, sizeof *replayed);
    size_t rn = 0;
    const mvrt_status_t rst =
        replayed ? mvrt_graph_profile_replayed(mr->graph[0], mr->stream[0], repeats, replayed, n, &rn)
                 : MVRT_ERR_OUT_OF_MEMORY;
    if (rst == MVRT_OK && rn == n) {
        free(ops);
        ops = replayed;
        total = 0;
        for (size_t i = 0; i < n; i++)
            total += ops[i].ms;
        printf("    each op alone, replayed in a graph of %d: %.3f ms over %zu ops (the breakdown below)\n", repeats,
               total, n);
    } else {
        if (rst != MVRT_ERR_UNSUPPORTED)
            printf("    replayed profile: %s (the breakdown below is op by op)\n",
                   replayed ? mvrt_last_error() : "out of memory");
        free(replayed);
    }
    char seen[32][16];
    int kinds = 0;
    for (size_t i = 0; i < n; i++) {
        int k = 0;
        while (k < kinds && strcmp(seen[k], ops[i].op) != 0)
            k++;
        if (k < kinds || kinds == 32)
            continue;
        snprintf(seen[kinds++], sizeof seen[0], "%s", ops[i].op);
        double ms = 0, fl = 0;
        int count = 0;
        for (size_t j = i; j < n; j++)
            if (!strcmp(ops[j].op, ops[i].op))
                ms += ops[j].ms, fl += ops[j].flops, count++;
        printf("    %-10s x%-4d %9.3f ms %5.1f %%", ops[i].op, count, ms, 100.0 * ms / total);
        if (fl > 0)
            printf("  %6.2f TFLOP/s", fl / (ms * 1e9));
        printf("\n");
    }
    /* the costliest (op, shape) groups: equal layers of a stage add up */
    for (int top = 0; top < 24; top++) {
        size_t best = n;
        double best_ms = 0, best_fl = 0;
        int best_count = 0;
        for (size_t i = 0; i < n; i++) {
            if (ops[i].ms < 0)
                continue;
            double ms = 0, fl = 0;
            int count = 0;
            for (size_t j = i; j < n; j++)
                if (ops[j].ms >= 0 && !strcmp(ops[j].op, ops[i].op) && !strcmp(ops[j].shape, ops[i].shape))
                    ms += ops[j].ms, fl += ops[j].flops, count++;
            if (best == n || ms > best_ms)
                best = i, best_ms = ms, best_fl = fl, best_count = count;
        }
        if (best == n)
            break;
        printf("    #%-3zu %-10s %-40s x%-3d %8.3f ms", best, ops[best].op, ops[best].shape, best_count, best_ms);
        if (best_fl > 0)
            printf("  %6.2f TFLOP/s", best_fl / (best_ms * 1e9));
        printf("\n");
        for (size_t j = n; j-- > best;)
            if (ops[j].ms >= 0 && !strcmp(ops[j].op, ops[best].op) && !strcmp(ops[j].shape, ops[best].shape))
                ops[j].ms = -1;
    }
    free(ops);
}

/* Times the row's graph. With keep != NULL the opened runner is handed
 * back (for the profile) and the caller closes it. */
static int run_row(const char *backend, const bench_row_t *row, int threads, int reps, mvrt_mr_t *keep,
                   float *out_ms, double *out_flops, double *out_mib, char *err, size_t errlen)
{
    mvrt_mr_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.backend = backend;
    spec.threads = threads;
    spec.seed = 1;
    spec.options.batch = row->batch;
    spec.options.math = row->math;
    if (row->block) {
        memset(&spec.config, 0, sizeof spec.config);
        spec.config.kind = row->block;
        spec.config.dim = row->dim;
        spec.config.num_heads = row->heads;
        spec.config.mlp_ratio = 4, spec.config.qkv_bias = 1, spec.config.d_state = 8, spec.config.d_conv = 3;
        spec.options.tokens = 196;
    } else {
        if (mvrt_model_config_preset(row->config, &spec.config) != MVRT_OK) {
            snprintf(err, errlen, "%s", mvrt_last_error());
            return -1;
        }
        spec.options.height = spec.options.width = 224;
    }
    mvrt_mr_t mr;
    mvrt_status_t st;
    if (mvrt_mr_open(&mr, &spec, &st, err, errlen) != 0)
        return -1;
    mvrt_graph_stats_t gs;
    mvrt_graph_get_stats(mr.graph[0], &gs);
    *out_flops = gs.flops;
    *out_mib = (double)(gs.workspace_bytes + gs.weight_bytes) / 1048576.0;
    int rc = time_graph(&mr, reps, out_ms, err, errlen);
    if (rc == 0 && keep)
        *keep = mr;
    else
        mvrt_mr_close(&mr);
    return rc;
}

int mvrt_bench_model(int argc, char **argv)
{
    const char *backend = "auto";
    const char *only = NULL;
    int quick = 0, profile = 0, want_model = !strcmp(argv[0], "model");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            backend = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--profile"))
            profile = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--anchor") && i + 1 < argc) {
            free(anchor_json);
            if (!(anchor_json = mvrt_bench_anchor_load(argv[++i])))
                return 2;
        } else {
            fprintf(stderr, "usage: mvrt bench %s [--backend NAME] [--quick] [--profile] [--only TEXT] [--anchor JSON]\n",
                    argv[0]);
            return 2;
        }
    }
    mvrt_backend_t *be = NULL;
    if (mvrt_backend_open(backend, &be) != MVRT_OK) {
        fprintf(stderr, "mvrt bench %s: %s\n", argv[0], mvrt_last_error());
        free(anchor_json);
        anchor_json = NULL;
        return 77;
    }
    mvrt_device_info_t info;
    memset(&info, 0, sizeof info);
    mvrt_backend_device_info(be, &info);
    char name[32];
    snprintf(name, sizeof name, "%s", mvrt_backend_name(be));
    mvrt_backend_close(be);
    int on_cpu = !strcmp(name, "cpu");
    printf("mvrt bench %s on %s (%s); baselines: shared/ANCHORS.md (PyTorch on an H100)\n", argv[0], name,
           info.name[0] ? info.name : "?");
    const bench_row_t *rows = on_cpu ? cpu_rows : gpu_rows;
    size_t nrows = on_cpu ? sizeof cpu_rows / sizeof *cpu_rows : sizeof gpu_rows / sizeof *gpu_rows;
    int failures = 0;
    printf("%-40s %10s %12s %9s %12s %9s %s\n", "case", "ms/batch", "items/s", "TFLOP/s", "baseline ms",
           "x base", on_cpu ? "(1 thread ms, 1->N threads)" : "target");
    for (size_t r = 0; r < nrows; r++) {
        const bench_row_t *row = &rows[r];
        if ((row->block != 0) == want_model)
            continue;
        if (quick && row->batch > 64 && !on_cpu)
            continue;
        if (only && !strstr(row->name, only))
            continue;
        float ms = 0, ms1 = 0;
        double flops = 0, mib = 0;
        char err[1024];
        int reps = on_cpu ? 3 : (row->batch > 64 ? 20 : 200);
        mvrt_mr_t kept;
        if (run_row(name, row, 0, reps, profile ? &kept : NULL, &ms, &flops, &mib, err, sizeof err) != 0) {
            printf("%-40s ERROR: %s\n", row->name, err);
            failures++;
            continue;
        }
        printf("%-40s %10.3f %12.1f %9.2f", row->name, ms, (double)row->batch * 1e3 / ms, flops / (ms * 1e9));
        if (on_cpu) {
            if (run_row(name, row, 1, reps, NULL, &ms1, &flops, &mib, err, sizeof err) == 0)
                printf(" %12s %9s (%.2f ms, %.2fx)\n", "-", "-", ms1, ms1 / ms);
            else
                printf("  (1 thread: %s)\n", err);
        } else if (!row->base_name) {
            printf(" %12s %9s (no baseline)\n", "-", "-"); /* small-batch rows: ours only */
        } else {
            double ratio = row->base_us / (1e3 * ms);
            printf(" %12.3f %9.2f %s", row->base_us / 1e3, ratio, row->base_name);
            if (row->target_ratio > 0)
                printf(" (target %.2fx: %s)", row->target_ratio, ratio >= row->target_ratio ? "met" : "NOT met");
            printf("\n");
        }
        anchor_print(row, (double)row->batch * 1e3 / ms, mib);
        if (profile) {
            print_profile(&kept);
            mvrt_mr_close(&kept);
        }
        fflush(stdout);
    }
    free(anchor_json);
    anchor_json = NULL;
    return failures ? 1 : 0;
}
