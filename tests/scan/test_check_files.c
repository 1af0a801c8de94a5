/* Tests of `mvrt check` on files generated here:
 *  - a valid scan golden file of a shape mix unlike the shipped one (groups
 *    3 with rank-4 B, constant C, rank-3 B/C, extra config keys in another
 *    order), its outputs computed by the double reference: must pass (exit
 *    0), or exit 77 when the backend is unavailable;
 *  - the same file with one defect each (missing 'cases', a case missing a
 *    tensor, a wrong shape, an integer dtype, malformed case JSON, a
 *    truncated file, ...): must exit 1 with a precise message on stderr,
 *    never crash.
 * Usage: test_check_files PATH_TO_MVRT BACKEND WORKDIR */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "golden_scan.h"
#include "scan_reference.h"
#include "st_write.h"

static const char *mvrt_path, *backend, *workdir;
static int failures = 0;

enum defect {
    OK_FILE, NO_CASES, CASES_NOT_INT, ZERO_CASES, TOO_MANY_CASES, CONFIG_MISSING_KEY,
    CONFIG_BAD_JSON, CONFIG_BAD_GROUPS, MISSING_INPUT, MISSING_GRAD, WRONG_SHAPE, INT_DTYPE,
    TRUNCATED, NOT_SAFETENSORS, WRONG_OUT, WRONG_DB, WRONG_LAST_STATE, NUM_DEFECTS
};

typedef struct gen_case {
    mvrt_gs_config_t cfg;
    int bc_rank;
    const char *json; /* metadata text for the case (extra keys, other order) */
} gen_case_t;

static const gen_case_t gen_cases[2] = {
    {{2, 6, 37, 5, 3, 1, 0, 1, 1, 1, 1, 0}, 4,
     "{\"note\": \"generated\", \"dstate\": 5, \"groups\": 3, \"batch\": 2, \"dim\": 6, "
     "\"seqlen\": 37, \"variable_B\": true, \"variable_C\": false, \"has_D\": true, "
     "\"has_z\": true, \"has_delta_bias\": true, \"delta_softplus\": true, "
     "\"extra\": {\"nested\": [1, 2.5e-3, null]}}"},
    {{1, 3, 19, 2, 1, 1, 1, 0, 0, 0, 0, 0}, 3,
     "{\"batch\": 1, \"dim\": 3, \"seqlen\": 19, \"dstate\": 2, \"groups\": 1, "
     "\"variable_B\": true, \"variable_C\": true, \"has_D\": false, \"has_z\": false, "
     "\"has_delta_bias\": false, \"delta_softplus\": false}"},
};

static uint64_t rs = 99;
static double urand(double lo, double hi)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return lo + (hi - lo) * ((double)(rs >> 11) / 9007199254740992.0);
}

/* Writes a golden file with the given defect; returns 0 on success. */
static int write_golden(const char *path, enum defect defect)
{
    st_writer_t w;
    stw_init(&w);
    rs = 99;
    for (int ci = 0; ci < 2; ci++) {
        const gen_case_t *g = &gen_cases[ci];
        mvrt_gs_case_t c;
        memset(&c, 0, sizeof c);
        c.cfg = g->cfg;
        c.b_rank = c.c_rank = g->bc_rank;
        int64_t s[4];
        for (int i = 0; i < MVRT_GS_NUM_INPUTS; i++) {
            if (!mvrt_gs_input_present(&c.cfg, i))
                continue;
            int64_t n = mvrt_gs_numel(mvrt_gs_input_shape(&c.cfg, i, g->bc_rank, s), s);
            c.in[i] = malloc((size_t)n * sizeof(double));
            for (int64_t k = 0; k < n; k++) {
                double v = i == MVRT_GS_A ? urand(-1.5, -0.2)
                           : i == MVRT_GS_DELTA && !c.cfg.delta_softplus ? urand(0.1, 0.9)
                                                                         : urand(-1, 1);
                c.in[i][k] = (float)v; /* inputs exactly representable in f32 */
            }
        }
        for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++) {
            if (!mvrt_gs_output_present(&c.cfg, i))
                continue;
            int64_t n = mvrt_gs_numel(mvrt_gs_output_shape(&c.cfg, i, g->bc_rank, s), s);
            c.ref[i] = calloc((size_t)n, sizeof(double));
        }
        mvrt_scan_ref_problem_t p = {
            c.cfg.batch, c.cfg.dim, c.cfg.seqlen, c.cfg.dstate, c.cfg.groups,
            c.cfg.variable_B, c.cfg.variable_C, c.cfg.delta_softplus,
            c.in[MVRT_GS_U], c.in[MVRT_GS_DELTA], c.in[MVRT_GS_A], c.in[MVRT_GS_B],
            c.in[MVRT_GS_C], c.in[MVRT_GS_D], c.in[MVRT_GS_Z], c.in[MVRT_GS_DELTA_BIAS]};
        mvrt_scan_ref_grads_t gr = {c.ref[MVRT_GS_DU], c.ref[MVRT_GS_DDELTA], c.ref[MVRT_GS_DA],
                                    c.ref[MVRT_GS_DB], c.ref[MVRT_GS_DC], c.ref[MVRT_GS_DD],
                                    c.ref[MVRT_GS_DZ], c.ref[MVRT_GS_DDELTA_BIAS]};
        if (mvrt_scan_ref_forward(&p, c.ref[MVRT_GS_OUT], c.ref[MVRT_GS_LAST_STATE]) != 0 ||
            mvrt_scan_ref_backward(&p, c.in[MVRT_GS_DOUT], &gr) != 0) {
            fprintf(stderr, "reference failed\n");
            exit(1);
        }
        char name[64];
        for (int i = 0; i < MVRT_GS_NUM_INPUTS; i++) {
            if (!c.in[i])
                continue;
            snprintf(name, sizeof name, "case%d.%s", ci, mvrt_gs_input_names[i]);
            int r = mvrt_gs_input_shape(&c.cfg, i, g->bc_rank, s);
            if (ci == 0 && i == MVRT_GS_U && defect == MISSING_INPUT)
                continue;
            if (ci == 0 && i == MVRT_GS_U && defect == WRONG_SHAPE) {
                int64_t s2[3] = {s[0], s[1] + 1, s[2]};
                double *big = calloc((size_t)mvrt_gs_numel(3, s2), sizeof(double));
                stw_f32(&w, name, 3, s2, big);
                free(big);
                continue;
            }
            if (ci == 1 && i == MVRT_GS_A && defect == INT_DTYPE) {
                int32_t *iv = calloc((size_t)mvrt_gs_numel(r, s), sizeof(int32_t));
                stw_tensor(&w, name, "I32", r, s, iv, (size_t)mvrt_gs_numel(r, s) * 4);
                free(iv);
                continue;
            }
            stw_f32(&w, name, r, s, c.in[i]);
        }
        for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++) {
            if (!c.ref[i])
                continue;
            if (ci == 1 && i == MVRT_GS_DB && defect == MISSING_GRAD)
                continue;
            snprintf(name, sizeof name, "case%d.%s", ci, mvrt_gs_output_names[i]);
            int r = mvrt_gs_output_shape(&c.cfg, i, g->bc_rank, s);
            /* Golden values off by a little more than the tolerance: the
             * check must fail (proves the comparison can fail). */
            if (ci == 0 && i == MVRT_GS_OUT && defect == WRONG_OUT)
                c.ref[i][5] += 3e-3 + 1e-3 * (c.ref[i][5] < 0 ? -c.ref[i][5] : c.ref[i][5]);
            if (ci == 1 && i == MVRT_GS_DB && defect == WRONG_DB)
                c.ref[i][mvrt_gs_numel(r, s) - 1] += 0.01;
            if (ci == 1 && i == MVRT_GS_LAST_STATE && defect == WRONG_LAST_STATE)
                c.ref[i][0] = -c.ref[i][0] + (c.ref[i][0] == 0 ? 1 : 0);
            stw_f32(&w, name, r, s, c.ref[i]);
        }
        snprintf(name, sizeof name, "case%d", ci);
        const char *json = g->json;
        if (ci == 1 && defect == CONFIG_MISSING_KEY)
            json = "{\"batch\": 1, \"dim\": 3, \"seqlen\": 19, \"groups\": 1, "
                   "\"variable_B\": true, \"variable_C\": true, \"has_D\": false, "
                   "\"has_z\": false, \"has_delta_bias\": false, \"delta_softplus\": false}";
        if (ci == 1 && defect == CONFIG_BAD_JSON)
            json = "{\"batch\": 1, \"dim\": 3, \"seqlen\": 19,";
        if (ci == 0 && defect == CONFIG_BAD_GROUPS)
            json = "{\"dstate\": 5, \"groups\": 4, \"batch\": 2, \"dim\": 6, \"seqlen\": 37, "
                   "\"variable_B\": true, \"variable_C\": false, \"has_D\": true, "
                   "\"has_z\": true, \"has_delta_bias\": true, \"delta_softplus\": true}";
        stw_meta(&w, name, json);
        mvrt_gs_case_free(&c);
    }
    if (defect == CASES_NOT_INT)
        stw_meta(&w, "cases", "two");
    else if (defect == ZERO_CASES)
        stw_meta(&w, "cases", "0");
    else if (defect == TOO_MANY_CASES)
        stw_meta(&w, "cases", "3");
    else if (defect != NO_CASES)
        stw_meta(&w, "cases", "2");
    size_t n;
    void *img = stw_finish(&w, &n);
    int rc;
    if (defect == TRUNCATED)
        rc = st_write_file(path, img, n - 100);
    else if (defect == NOT_SAFETENSORS)
        rc = st_write_file(path, "this is not a safetensors file\n", 31);
    else
        rc = st_write_file(path, img, n);
    free(img);
    return rc;
}

/* Runs `mvrt check path --backend B [extra]`; returns the exit code (or
 * 1000 + signal), with stderr captured into errbuf. */
static char outbuf[65536]; /* stdout of the last run */

static void slurp(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (f) {
        size_t got = fread(buf, 1, cap - 1, f);
        buf[got] = '\0';
        fclose(f);
    }
}

static int run_check(const char *path, const char *extra, char *errbuf, size_t cap)
{
    char errpath[1024], outpath[1024];
    snprintf(errpath, sizeof errpath, "%s/check_stderr.txt", workdir);
    snprintf(outpath, sizeof outpath, "%s/check_stdout.txt", workdir);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || nul < 0)
            _exit(126);
        dup2(fd, 2);
        dup2(nul, 1);
        char *args[8] = {(char *)mvrt_path, "check", (char *)path, "--backend", (char *)backend,
                         (char *)extra, NULL};
        execv(mvrt_path, args);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    slurp(errpath, errbuf, cap);
    slurp(outpath, outbuf, sizeof outbuf);
    if (WIFSIGNALED(status))
        return 1000 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const struct {
    enum defect d;
    const char *name;
    const char *expect;
} bad[] = {
    {NO_CASES, "no_cases", "metadata key 'cases' is missing"},
    {CASES_NOT_INT, "cases_not_int", "'cases' = 'two' is not a case count"},
    {ZERO_CASES, "zero_cases", "nothing to check"},
    {TOO_MANY_CASES, "too_many_cases", "metadata key 'case2' is missing"},
    {CONFIG_MISSING_KEY, "config_missing_key", "missing key 'dstate'"},
    {CONFIG_BAD_JSON, "config_bad_json", "metadata 'case1': case config: malformed JSON"},
    {CONFIG_BAD_GROUPS, "config_bad_groups", "dim 6 is not divisible by groups 4"},
    {MISSING_INPUT, "missing_input", "tensor 'case0.u' is missing"},
    {MISSING_GRAD, "missing_grad", "tensor 'case1.dB' is missing"},
    {WRONG_SHAPE, "wrong_shape", "tensor 'case0.u' has shape (2,7,37) but the case config needs (2,6,37)"},
    {INT_DTYPE, "int_dtype", "tensor 'case1.A' has dtype i32"},
    {TRUNCATED, "truncated", "truncated.safetensors: "},
    {NOT_SAFETENSORS, "not_safetensors", "not_safetensors.safetensors: header length"},
};

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s PATH_TO_MVRT BACKEND WORKDIR\n", argv[0]);
        return 2;
    }
    mvrt_path = argv[1];
    backend = argv[2];
    workdir = argv[3];
    char path[1024], errbuf[8192];

    /* Valid generated file. */
    snprintf(path, sizeof path, "%s/gen_scan_ok.safetensors", workdir);
    if (write_golden(path, OK_FILE) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    int skipped = 0;
    const char *variants[3] = {NULL, "--strided", "--verbose"};
    for (int v = 0; v < 3; v++) {
        int rc = run_check(path, variants[v], errbuf, sizeof errbuf);
        if (rc == 77) {
            printf("valid file: backend '%s' unavailable: valid-file runs skipped\n", backend);
            skipped = 1;
            break;
        }
        printf("valid file %s: exit %d\n", variants[v] ? variants[v] : "", rc);
        if (rc != 0) {
            fprintf(stderr, "FAIL: mvrt check on a valid generated file exited %d:\n%s\n", rc,
                    errbuf);
            failures++;
        }
    }

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "%s/%s.safetensors", workdir, bad[i].name);
        if (write_golden(path, bad[i].d) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        int rc = run_check(path, NULL, errbuf, sizeof errbuf);
        int ok = rc == 1 && strstr(errbuf, bad[i].expect) != NULL;
        printf("%-20s exit %d %s\n", bad[i].name, rc, ok ? "ok" : "WRONG");
        if (!ok) {
            fprintf(stderr, "FAIL: %s: want exit 1 and a message containing \"%s\"; got exit "
                    "%d, stderr:\n%s\n", bad[i].name, bad[i].expect, rc, errbuf);
            failures++;
        }
    }
    /* Wrong golden values: must FAIL (only where the backend runs). */
    static const struct {
        enum defect d;
        const char *name, *expect;
    } wrong[] = {
        {WRONG_OUT, "wrong_out", "1 passed, 1 failed"},
        {WRONG_DB, "wrong_db", "1 passed, 1 failed"},
        {WRONG_LAST_STATE, "wrong_last_state", "1 passed, 1 failed"},
    };
    for (size_t i = 0; !skipped && i < sizeof wrong / sizeof wrong[0]; i++) {
        snprintf(path, sizeof path, "%s/%s.safetensors", workdir, wrong[i].name);
        if (write_golden(path, wrong[i].d) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        int rc = run_check(path, NULL, errbuf, sizeof errbuf);
        const char *field = wrong[i].d == WRONG_OUT ? "out " : wrong[i].d == WRONG_DB ? "dB "
                                                                               : "last_state ";
        char want[64];
        snprintf(want, sizeof want, "    %s", field);
        int ok = rc == 1 && strstr(outbuf, wrong[i].expect) && strstr(outbuf, want);
        printf("%-20s exit %d %s\n", wrong[i].name, rc, ok ? "ok (detected)" : "WRONG");
        if (!ok) {
            fprintf(stderr, "FAIL: %s: a wrong golden value was not reported (exit %d):\n%s\n",
                    wrong[i].name, rc, outbuf);
            failures++;
        }
    }

    /* Usage errors. */
    snprintf(path, sizeof path, "%s/gen_scan_ok.safetensors", workdir);
    int rc = run_check(path, "--dtype=f64", errbuf, sizeof errbuf);
    if (rc != 2) {
        fprintf(stderr, "FAIL: unknown option: exit %d, want 2\n", rc);
        failures++;
    }
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("all mvrt check file tests passed%s\n", skipped ? " (valid-file runs skipped)" : "");
    return 0;
}
