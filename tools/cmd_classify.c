/* mvrt classify: JPEG / PNG files through timm's evaluation transform
 * (mvrt_image_decode + mvrt_preprocess_rgb8) and a MambaVision graph, the
 * top-K ImageNet-1k classes per file. A file that cannot be read or
 * decoded is reported with its name and reason and skipped; the exit code
 * is then 1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strdup */
#endif
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "model_run.h"
#include "mvrt/preprocess.h"
#include "read_file.h"

#define CLASSIFY_MAX_SIDE 16384

static void classify_usage(FILE *to)
{
    fprintf(to,
            "usage: mvrt classify [--weights FILE [--prefix P]] [--config NAME] [--backend NAME]\n"
            "                     [--precision fp32|fast|bf16|fp16] [--top K] [--batch N] [--json]\n"
            "                     [--labels FILE] [--seed S] [--dump-input FILE] FILE|DIR...\n"
            "Decodes JPEG / PNG files (a DIR: its .jpg/.jpeg/.png files), preprocesses them as\n"
            "timm's evaluation transform of the pretrained config does (bicubic resize of the\n"
            "shorter side to 224 / crop_pct, centre crop, ImageNet mean/std) and prints the\n"
            "top-K ImageNet-1k classes of each with their probabilities.\n"
            "  --weights FILE     .safetensors of the model (tools/convert_checkpoint.py);\n"
            "                     without it the weights are seeded and the labels meaningless\n"
            "  --config NAME      T (default), T2, S, B, L, L2, or a .json file holding a\n"
            "                     whole-model config in the golden files' form (\"kind\":\n"
            "                     \"model\", its square \"image\" size: T's transform at that size)\n"
            "  --backend NAME     auto (default), cpu, cuda, cuda:N, hip\n"
            "  --top K            classes per file (default 5)\n"
            "  --batch N          images per graph run (default 8 on the CPU, 64 on a GPU)\n"
            "  --json             one JSON object per file on stdout\n"
            "  --labels FILE      class names, one per line (default: the installed\n"
            "                     imagenet1k_labels.txt)\n"
            "  --dump-input FILE  the preprocessed images as a .safetensors file (one float32\n"
            "                     tensor \"input\", N x 3 x H x W) to compare with another pipeline\n"
            "Exit status: 0 all files classified, 1 some failed, 2 usage error, 77 backend\n"
            "unavailable.\n");
}

/* --config FILE.json: a whole-model config in the golden files' JSON form
 * (mvrt_model_config_from_json) with a square "image" size, preprocessed
 * as T's pretrained transform at that size. 0, or -1 with a message. */
static int config_from_file(const char *path, mvrt_model_config_t *cfg, mvrt_preprocess_t *pp)
{
    char why[256];
    size_t size = 0;
    char *json = mvrt_read_file(path, 1 << 20, &size, why, sizeof why);
    if (!json) {
        fprintf(stderr, "mvrt classify: --config %s: %s\n", path, why);
        return -1;
    }
    int64_t h = 0, w = 0;
    mvrt_status_t st = mvrt_model_config_from_json(json, cfg, NULL, &h, &w, NULL);
    free(json);
    if (st == MVRT_OK && cfg->kind != MVRT_MODEL_NETWORK) {
        fprintf(stderr, "mvrt classify: --config %s: not a whole model (\"kind\": \"model\")\n", path);
        return -1;
    }
    if (st == MVRT_OK && (h < 1 || h != w || h > 4096)) {
        fprintf(stderr, "mvrt classify: --config %s: needs a square \"image\" size up to 4096 (it has %lld x %lld)\n",
                path, (long long)h, (long long)w);
        return -1;
    }
    if (st == MVRT_OK)
        st = mvrt_preprocess_for_config("T", pp);
    if (st != MVRT_OK) {
        fprintf(stderr, "mvrt classify: --config %s: %s\n", path, mvrt_last_error());
        return -1;
    }
    pp->image_size = (int32_t)h;
    return 0;
}

/* ---- file list ---- */
typedef struct {
    char **v;
    size_t n, cap;
} strlist_t;

static int strlist_add(strlist_t *l, const char *s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v, l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(s)))
        return -1;
    l->n++;
    return 0;
}

static void strlist_free(strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int image_extension(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return 0;
    char ext[8] = {0};
    for (size_t i = 0; i < sizeof ext - 1 && dot[1 + i]; i++)
        ext[i] = (char)tolower((unsigned char)dot[1 + i]);
    return !strcmp(ext, "jpg") || !strcmp(ext, "jpeg") || !strcmp(ext, "png");
}

/* A directory contributes its image files (sorted), anything else itself. */
static int collect(strlist_t *files, const char *arg)
{
    struct stat st;
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode))
        return strlist_add(files, arg);
    DIR *d = opendir(arg);
    if (!d)
        return strlist_add(files, arg); /* reported when read */
    strlist_t found = {0};
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || !image_extension(e->d_name))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", arg, e->d_name);
        if (strlist_add(&found, path) != 0) {
            closedir(d);
            strlist_free(&found);
            return -1;
        }
    }
    closedir(d);
    qsort(found.v, found.n, sizeof *found.v, cmp_str);
    for (size_t i = 0; i < found.n; i++)
        if (strlist_add(files, found.v[i]) != 0) {
            strlist_free(&found);
            return -1;
        }
    strlist_free(&found);
    return 0;
}

/* ---- labels ---- */
static int load_labels(const char *path, strlist_t *labels)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strlist_add(labels, line) != 0)
            break;
    }
    fclose(f);
    return 0;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* Softmax of the logits, then the top k (ties: lower index first). */
static void print_top(const char *file, const float *logits, int64_t classes, int k, const strlist_t *labels,
                      int json)
{
    double mx = -INFINITY, sum = 0.0;
    for (int64_t c = 0; c < classes; c++)
        mx = logits[c] > mx ? logits[c] : mx;
    for (int64_t c = 0; c < classes; c++)
        sum += exp((double)logits[c] - mx);
    if (json) {
        printf("{\"file\": ");
        json_string(file);
        printf(", \"top\": [");
    } else {
        printf("%s\n", file);
    }
    int64_t prev = -1;
    double prev_logit = INFINITY;
    for (int r = 0; r < k && r < classes; r++) {
        int64_t best = -1;
        for (int64_t c = 0; c < classes; c++) {
            const double v = logits[c];
            const int after_prev = v < prev_logit || (v == prev_logit && c > prev);
            if (after_prev && (best < 0 || v > logits[best]))
                best = c;
        }
        if (best < 0)
            break;
        const double p = exp((double)logits[best] - mx) / sum;
        const char *name = (size_t)best < labels->n ? labels->v[best] : NULL;
        if (json) {
            printf("%s{\"class\": %lld, \"prob\": %.6f, \"label\": ", r ? ", " : "", (long long)best, p);
            if (name)
                json_string(name);
            else
                printf("null");
            printf("}");
        } else {
            printf("  %8.5f  %s (%lld)\n", p, name ? name : "?", (long long)best);
        }
        prev = best, prev_logit = logits[best];
    }
    if (json)
        printf("]}\n");
}

/* The preprocessed images as a .safetensors file: one F32 tensor "input". */
static int dump_input(const char *path, const float *data, int64_t n, int64_t c, int64_t h, int64_t w)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    const uint64_t bytes = (uint64_t)(n * c * h * w) * sizeof(float);
    char head[256];
    int len = snprintf(head, sizeof head,
                       "{\"input\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld,%lld,%lld],\"data_offsets\":[0,%llu]}}",
                       (long long)n, (long long)c, (long long)h, (long long)w, (unsigned long long)bytes);
    while (len % 8)
        head[len++] = ' ';
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)((uint64_t)len >> (8 * i));
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(head, 1, (size_t)len, f) == (size_t)len &&
             fwrite(data, 1, (size_t)bytes, f) == (size_t)bytes; /* little-endian hosts */
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

int mvrt_cmd_classify(int argc, char **argv)
{
    mvrt_mr_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.backend = "auto";
    const char *config = "T", *labels_path = NULL, *dump_path = NULL;
    int64_t batch = 0;
    int top = 5, json = 0;
    strlist_t files = {0}, labels = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            classify_usage(stdout);
            strlist_free(&files);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (collect(&files, a) != 0) {
                fprintf(stderr, "mvrt classify: out of memory\n");
                strlist_free(&files);
                return 1;
            }
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "mvrt classify: missing value for '%s'\n\n", a);
            classify_usage(stderr);
            strlist_free(&files);
            return 2;
        }
        const char *v = argv[++i];
        char *end = NULL;
        const int model_opt = mvrt_mr_model_option(&spec, &config, a, v, "mvrt classify");
        if (model_opt < 0) {
            strlist_free(&files);
            return 2;
        }
        if (model_opt > 0)
            continue;
        if (!strcmp(a, "--labels"))
            labels_path = v;
        else if (!strcmp(a, "--dump-input"))
            dump_path = v;
        else if (!strcmp(a, "--top") || !strcmp(a, "--batch") || !strcmp(a, "--seed")) {
            const long long n = strtoll(v, &end, 10);
            if (end == v || *end || n < (strcmp(a, "--seed") ? 1 : 0) || n > 1000000) {
                fprintf(stderr, "mvrt classify: %s needs a whole number, not '%s'\n", a, v);
                strlist_free(&files);
                return 2;
            }
            if (!strcmp(a, "--top"))
                top = (int)n;
            else if (!strcmp(a, "--batch"))
                batch = n;
            else
                spec.seed = (uint64_t)n;
        } else {
            fprintf(stderr, "mvrt classify: unknown option or value '%s %s'\n\n", a, v);
            classify_usage(stderr);
            strlist_free(&files);
            return 2;
        }
    }
    if (files.n == 0) {
        fprintf(stderr, "mvrt classify: no files given (or no .jpg/.jpeg/.png in the directories)\n\n");
        classify_usage(stderr);
        strlist_free(&files);
        return 2;
    }
    mvrt_preprocess_t pp;
    const size_t config_len = strlen(config);
    if (config_len > 5 && !strcmp(config + config_len - 5, ".json")) {
        if (config_from_file(config, &spec.config, &pp) != 0) {
            strlist_free(&files);
            return 2;
        }
    } else if (mvrt_model_config_preset(config, &spec.config) != MVRT_OK ||
               mvrt_preprocess_for_config(config, &pp) != MVRT_OK) {
        fprintf(stderr, "mvrt classify: %s\n", mvrt_last_error());
        strlist_free(&files);
        return 2;
    }
    /* class names: --labels, the installed file, the source tree's */
    const char *candidates[] = {labels_path, labels_path ? NULL : MVRT_DATA_INSTALL_DIR "/imagenet1k_labels.txt",
                                labels_path ? NULL : MVRT_DATA_SOURCE_DIR "/imagenet1k_labels.txt"};
    int have_labels = 0;
    for (size_t c = 0; c < 3 && !have_labels; c++)
        have_labels = candidates[c] && load_labels(candidates[c], &labels) == 0;
    if (labels_path && !have_labels) {
        fprintf(stderr, "mvrt classify: cannot read the labels file %s\n", labels_path);
        strlist_free(&files);
        return 2;
    }
    if (!have_labels)
        fprintf(stderr, "mvrt classify: no imagenet1k_labels.txt found: printing class indices only\n");
    if (!spec.weights)
        fprintf(stderr, "mvrt classify: seeded weights (no --weights): the classes printed are meaningless\n");

    mvrt_backend_t *probe = NULL;
    mvrt_status_t st = mvrt_backend_open(spec.backend, &probe);
    if (st != MVRT_OK) {
        fprintf(stderr, "mvrt classify: backend '%s': %s\n", spec.backend, mvrt_last_error());
        strlist_free(&files);
        strlist_free(&labels);
        return st == MVRT_ERR_UNAVAILABLE ? 77 : 2;
    }
    static char resolved[64];
    snprintf(resolved, sizeof resolved, "%s", mvrt_backend_name(probe));
    mvrt_backend_close(probe);
    if (!strcmp(spec.backend, "auto"))
        spec.backend = resolved;
    if (!batch)
        batch = !strcmp(resolved, "cpu") ? 8 : 64;
    if ((size_t)batch > files.n)
        batch = (int64_t)files.n;
    spec.options.batch = batch;
    spec.options.height = spec.options.width = pp.image_size;

    mvrt_mr_t mr;
    char err[2048];
    if (mvrt_mr_open(&mr, &spec, &st, err, sizeof err) != 0) {
        fprintf(stderr, "mvrt classify: %s\n", err);
        strlist_free(&files);
        strlist_free(&labels);
        return st == MVRT_ERR_UNAVAILABLE ? 77 : 1;
    }
    const int64_t item = mr.in_item, classes = mr.out_item, S = pp.image_size;
    if (labels.n && labels.n != (size_t)classes) {
        fprintf(stderr, "mvrt classify: the model has %lld classes, the labels file %zu names: printing class "
                        "indices only\n", (long long)classes, labels.n);
        strlist_free(&labels);
    }
    const int progress = isatty(2) && !json && files.n > (size_t)batch;
    size_t *slot_file = malloc((size_t)batch * sizeof *slot_file);
    float *dump = NULL;
    int64_t dumped = 0;
    if (dump_path && !(dump = malloc((size_t)(item * (int64_t)files.n) * sizeof(float)))) {
        fprintf(stderr, "mvrt classify: out of memory for --dump-input\n");
        free(slot_file);
        mvrt_mr_close(&mr);
        strlist_free(&files);
        strlist_free(&labels);
        return 1;
    }
    size_t failed = 0, classified = 0, next = 0;
    int rc = 0;
    const double t0 = mvrt_mr_now();
    while (next < files.n && slot_file) {
        int64_t k = 0;
        for (; next < files.n && k < batch; next++) {
            char why[512];
            size_t size = 0;
            uint8_t *bytes = (uint8_t *)mvrt_read_file(files.v[next], (size_t)1 << 30, &size, why, sizeof why);
            mvrt_image_t img = {NULL, 0, 0};
            mvrt_status_t s2 = MVRT_ERR_INVALID_ARGUMENT;
            if (bytes && (s2 = mvrt_image_decode(bytes, size, CLASSIFY_MAX_SIDE, &img)) == MVRT_OK)
                s2 = mvrt_preprocess_rgb8(img.rgb, img.width, img.height, img.width * 3, &pp, mr.host_in + k * item,
                                          NULL);
            if (bytes && s2 != MVRT_OK)
                snprintf(why, sizeof why, "%s", mvrt_last_error());
            free(bytes);
            mvrt_image_free(&img);
            if (s2 != MVRT_OK) {
                fprintf(stderr, "%s%s: skipped: %s\n", progress ? "\n" : "", files.v[next], why);
                failed++;
                continue;
            }
            if (dump)
                memcpy(dump + dumped++ * item, mr.host_in + k * item, (size_t)item * sizeof(float));
            slot_file[k++] = next;
        }
        if (k == 0)
            continue;
        memset(mr.host_in + k * item, 0, (size_t)((batch - k) * item) * sizeof(float));
        if (mvrt_mr_upload(&mr, err, sizeof err) != 0 || mvrt_mr_run(&mr, err, sizeof err) != 0) {
            fprintf(stderr, "mvrt classify: %s\n", err);
            rc = 1;
            break;
        }
        for (int64_t j = 0; j < k; j++)
            print_top(files.v[slot_file[j]], mr.host_out + j * classes, classes, top, &labels, json);
        classified += (size_t)k;
        fflush(stdout);
        if (progress) {
            const int w = 30, done = (int)(next * (size_t)w / files.n);
            fprintf(stderr, "\r  [%.*s%*s] %zu/%zu files", done, "##############################", w - done, "", next,
                    files.n);
        }
    }
    const double secs = mvrt_mr_now() - t0;
    if (progress)
        fprintf(stderr, "\n");
    fprintf(stderr, "mvrt classify: %zu files, %zu classified, %zu failed, %.1f images/s (MambaVision-%s on %s)\n",
            files.n, classified, failed, secs > 0 ? (double)classified / secs : 0.0, config, spec.backend);
    if (dump && rc == 0 && dump_input(dump_path, dump, dumped, 3, S, S) != 0) {
        fprintf(stderr, "mvrt classify: cannot write %s\n", dump_path);
        rc = 1;
    }
    if (!slot_file) {
        fprintf(stderr, "mvrt classify: out of memory\n");
        rc = 1;
    }
    free(dump);
    free(slot_file);
    mvrt_mr_close(&mr);
    strlist_free(&files);
    strlist_free(&labels);
    return rc ? rc : failed ? 1 : 0;
}
