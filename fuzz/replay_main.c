/* A main() for the fuzz targets without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on every file named on the command line, or
 * on every file of a directory named there (sorted, not recursive). Built
 * with the project's normal compiler, this replays the committed corpus and
 * the regression inputs in every build, the ASan+UBSan and TSan ones
 * included. Exits 1 when no input was found (an empty corpus would hide a
 * broken setup). A contract violation aborts inside the target. */
#define _DEFAULT_SOURCE /* DT_DIR */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            fprintf(stderr, "replay: out of memory reading %s\n", path);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        uint8_t *nb = realloc(buf, cap);
        if (!nb)
            free(buf);
        buf = nb;
    }
    fclose(f);
    /* An exact-size copy, so that reads past the input are ASan reports as
     * they would be under libFuzzer. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    long done = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (run_file(argv[i]) != 0)
                return 1;
            done++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "replay: cannot open directory %s\n", argv[i]);
            return 1;
        }
        char **names = NULL;
        size_t count = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            if (count == cap) {
                cap = cap ? 2 * cap : 64;
                char **nn = realloc(names, cap * sizeof *nn);
                if (!nn)
                    return 1;
                names = nn;
            }
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[count] = malloc(len);
            if (!names[count])
                return 1;
            snprintf(names[count], len, "%s/%s", argv[i], e->d_name);
            count++;
        }
        closedir(d);
        qsort(names, count, sizeof *names, cmp_names);
        for (size_t k = 0; k < count; k++) {
            struct stat fb;
            if (stat(names[k], &fb) == 0 && S_ISREG(fb.st_mode)) {
                if (run_file(names[k]) != 0)
                    return 1;
                done++;
            }
            free(names[k]);
        }
        free(names);
    }
    if (done == 0) {
        fprintf(stderr, "replay: no input files given or found\n");
        return 1;
    }
    fprintf(stderr, "replay: %ld inputs ran without a contract violation or crash\n", done);
    return 0;
}
