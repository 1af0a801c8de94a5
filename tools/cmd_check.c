/* mvrt check FILE: runs every case of a scan golden file (format of
 * shared/golden/README.md — any such file) forward and backward through the
 * public API on one backend, and compares every output with the golden
 * values under the tolerances of golden_scan.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt/mvrt.h"
#include "commands.h"
#include "golden_scan.h"
#include "model_golden.h"
#include "model_run.h"

#define CHECK_EXIT_FAIL 1
#define CHECK_EXIT_USAGE 2
#define CHECK_EXIT_UNAVAILABLE 77 /* CTest SKIP_RETURN_CODE */

static void check_usage(FILE *to)
{
    fprintf(to,
            "usage: mvrt check FILE [--backend NAME] [--dtype f32|f16|bf16] [--strided]\n"
            "                  [--precision " MVRT_MR_PRECISION_USAGE "] [--threads N] [--verbose]\n"
            "\n"
            "Runs every case of a selective-scan golden file (.safetensors with metadata\n"
            "'cases' and 'case<i>', tensors 'case<i>.u', ...) forward and backward on one\n"
            "backend and compares out, last_state and every gradient with the file.\n"
            "\n"
            "A MambaVision golden file (metadata <name> = config JSON with \"kind\" mixer,\n"
            "attention, stage or model; tensors <name>.input, <name>.output,\n"
            "<name>.weights.<parameter>) is run through a graph instead: every part in the\n"
            "file, twice (the second run replays the captured graph on GPUs and must be\n"
            "bit-identical), then, when its batch is above 1, its first item alone as a\n"
            "batch-1 graph (whose kernels and layouts differ); each compared with\n"
            "|got - ref| <= atol + rtol |ref|, rtol 2e-4 and\n"
            "atol 2e-4 x RMS(ref) (--precision fast and fp16: 2e-2 and 2e-2 x RMS; bf16:\n"
            "5e-2 and 5e-2 x RMS).\n"
            "\n"
            "  --backend NAME  cpu, cuda, cuda:N, hip, hip:N or auto (default auto)\n"
            "  --dtype T       input dtype of the run (default f32); f16/bf16 inputs are\n"
            "                  rounded from the file's values and compared with the same\n"
            "                  float64 golden outputs under the wider f16/bf16 tolerances\n"
            "  --strided       pass every tensor with padded, non-contiguous strides\n"
            "  --threads N     worker threads of the backend (CPU)\n"
            "  --precision P   MambaVision files: fp32 (default, exact), fast (TF32 GEMMs),\n"
            "                  bf16 or fp16 (16-bit operands and activations)\n"
            "  --verbose       one line per output with its errors and tolerance\n"
            "\n"
            "Tolerance: |x - ref| <= atol + rtol |ref| per element; base rtol/atol f32\n"
            "6e-4/2e-3, f16 3e-3/5e-3, bf16 3e-2/5e-2; ddelta and dA 5x looser; sums\n"
            "(dA, dB, dC, dD, ddelta_bias) scale atol with sqrt(number of terms); f16/bf16\n"
            "gradients 2x looser. When inputs are rounded (f16/bf16), each element's\n"
            "allowance also includes how far that rounding alone moves the exact result,\n"
            "computed by the float64 reference.\n"
            "\n"
            "Exit status: 0 every case passes; 1 a case fails or the file is malformed;\n"
            "2 usage error; 77 the requested backend is unavailable (CTest: skipped).\n");
}

static int parse_dtype(const char *s, mvrt_dtype_t *out)
{
    if (strcmp(s, "f32") == 0)
        *out = MVRT_DTYPE_F32;
    else if (strcmp(s, "f16") == 0)
        *out = MVRT_DTYPE_F16;
    else if (strcmp(s, "bf16") == 0)
        *out = MVRT_DTYPE_BF16;
    else
        return -1;
    return 0;
}

/* 1 when every input of the case is exactly representable in f32. */
static int inputs_f32_exact(const mvrt_gs_case_t *c)
{
    for (int i = 0; i < MVRT_GS_NUM_INPUTS; i++) {
        if (!c->in[i])
            continue;
        int64_t shape[4];
        int r = mvrt_gs_input_shape(&c->cfg, i, i == MVRT_GS_C ? c->c_rank : c->b_rank, shape);
        int64_t n = mvrt_gs_numel(r, shape);
        for (int64_t k = 0; k < n; k++)
            if ((double)(float)c->in[i][k] != c->in[i][k])
                return 0;
    }
    return 1;
}

/* A MambaVision golden file: every part through a graph. */
static int check_model_file(const mvrt_safetensors_t *file, const char *path, char parts[][128], int nparts,
                            const char *backend_name, int threads, int math, int verbose)
{
    mvrt_backend_t *be = NULL;
    mvrt_status_t st = mvrt_backend_open(backend_name, &be);
    if (st != MVRT_OK) {
        fprintf(stderr, "mvrt check: backend '%s': %s\n", backend_name, mvrt_last_error());
        return st == MVRT_ERR_UNAVAILABLE ? CHECK_EXIT_UNAVAILABLE : CHECK_EXIT_USAGE;
    }
    if (threads > 0)
        mvrt_backend_set_num_threads(be, threads);
    mvrt_device_info_t info;
    memset(&info, 0, sizeof info);
    mvrt_backend_device_info(be, &info);
    printf("mvrt check %s: %d MambaVision part(s) on %s (%s), %s math\n", path, nparts, mvrt_backend_name(be),
           info.name[0] ? info.name : "?", mvrt_mr_precision_words(math));
    int passed = 0, failed = 0;
    /* each part over the file's batch, then (batch > 1) its first item
     * alone: a batch-1 graph, whose kernels and layouts differ */
    for (int i = 0; i < nparts; i++) {
        for (int first_only = 0; first_only < 2; first_only++) {
            mvrt_mg_result_t r;
            char err[1024];
            if (mvrt_mg_check(be, file, parts[i], math, first_only, &r, err, sizeof err) != 0) {
                printf("%s%s: ERROR: %s\n", parts[i], first_only ? " (item 0 alone)" : "", err);
                failed++;
                break;
            }
            int ok = !r.nonfinite && r.worst_ratio <= 1.0;
            printf("%s (%s, %s%s): max abs err %.3e, max rel err %.3e (of max |ref|), worst %.3f of tol "
                   "(rtol %.1e, atol %.2e)%s %s\n",
                   parts[i], r.kind, r.shape, first_only ? ", item 0 alone" : "", r.max_abs, r.max_rel,
                   r.worst_ratio, r.rtol, r.atol, r.captured ? ", graph replayed" : "", ok ? "PASS" : "FAIL");
            (void)verbose;
            if (ok)
                passed++;
            else
                failed++;
            if (r.batch <= 1)
                break;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    mvrt_backend_close(be);
    return failed ? CHECK_EXIT_FAIL : 0;
}

int mvrt_cmd_check(int argc, char **argv)
{
    const char *path = NULL, *backend_name = "auto";
    mvrt_dtype_t dtype = MVRT_DTYPE_F32;
    int verbose = 0, strided = 0, threads = 0, math = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            check_usage(stdout);
            return 0;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            verbose = 1;
        } else if (strcmp(a, "--strided") == 0) {
            strided = 1;
        } else if (strcmp(a, "--precision") == 0) {
            math = i + 1 < argc ? mvrt_mr_parse_precision(argv[i + 1]) : -1;
            if (math < 0) {
                fprintf(stderr, "mvrt check: --precision must be fp32, fast (TF32), bf16 or fp16\n");
                return CHECK_EXIT_USAGE;
            }
            ++i;
        } else if (strcmp(a, "--backend") == 0 || strcmp(a, "--dtype") == 0 ||
                   strcmp(a, "--threads") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "mvrt check: %s needs a value\n", a);
                return CHECK_EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (a[2] == 'b') {
                backend_name = v;
            } else if (a[2] == 'd') {
                if (parse_dtype(v, &dtype) != 0) {
                    fprintf(stderr, "mvrt check: --dtype must be f32, f16 or bf16, not '%s'\n",
                            v);
                    return CHECK_EXIT_USAGE;
                }
            } else {
                char *end = NULL;
                long n = strtol(v, &end, 10);
                if (end == v || *end || n < 1 || n > 4096) {
                    fprintf(stderr, "mvrt check: --threads must be a positive integer\n");
                    return CHECK_EXIT_USAGE;
                }
                threads = (int)n;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "mvrt check: unknown option '%s'\n\n", a);
            check_usage(stderr);
            return CHECK_EXIT_USAGE;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "mvrt check: only one FILE may be given ('%s', '%s')\n", path, a);
            return CHECK_EXIT_USAGE;
        }
    }
    if (!path) {
        check_usage(stderr);
        return CHECK_EXIT_USAGE;
    }

    mvrt_safetensors_t *file = NULL;
    if (mvrt_safetensors_open(path, &file) != MVRT_OK) {
        fprintf(stderr, "mvrt check: %s\n", mvrt_last_error());
        return CHECK_EXIT_FAIL;
    }
    char err[1024];
    int ncases = 0;
    const char *cases_meta = NULL;
    if (mvrt_safetensors_metadata(file, "cases", &cases_meta) != MVRT_OK) {
        static char parts[64][128];
        int nparts = mvrt_mg_list(file, parts, 64);
        if (nparts > 0) {
            int rc = check_model_file(file, path, parts, nparts < 64 ? nparts : 64, backend_name, threads, math,
                                      verbose);
            mvrt_safetensors_close(file);
            return rc;
        }
    }
    if (mvrt_gs_case_count(file, &ncases, err, sizeof err) != 0) {
        fprintf(stderr, "mvrt check: %s: %s\n", path, err);
        mvrt_safetensors_close(file);
        return CHECK_EXIT_FAIL;
    }

    if (ncases == 0) {
        fprintf(stderr, "mvrt check: %s: metadata 'cases' is 0: nothing to check\n", path);
        mvrt_safetensors_close(file);
        return CHECK_EXIT_FAIL;
    }

    /* Validate every case (metadata, tensor names, shapes, dtypes) before
     * touching a backend, so a malformed file is reported as such (exit 1)
     * even where the backend is unavailable. */
    int malformed = 0;
    for (int ci = 0; ci < ncases; ci++) {
        mvrt_gs_case_t c;
        if (mvrt_gs_load_case(file, ci, &c, err, sizeof err) != 0) {
            fprintf(stderr, "mvrt check: %s: case %d: %s\n", path, ci, err);
            malformed++;
            continue;
        }
        mvrt_gs_case_free(&c);
    }
    if (malformed) {
        fprintf(stderr, "mvrt check: %s: %d malformed case(s); nothing was run\n", path,
                malformed);
        mvrt_safetensors_close(file);
        return CHECK_EXIT_FAIL;
    }

    mvrt_backend_t *be = NULL;
    mvrt_status_t st = mvrt_backend_open(backend_name, &be);
    if (st != MVRT_OK) {
        fprintf(stderr, "mvrt check: backend '%s': %s\n", backend_name, mvrt_last_error());
        mvrt_safetensors_close(file);
        return st == MVRT_ERR_UNAVAILABLE ? CHECK_EXIT_UNAVAILABLE : CHECK_EXIT_USAGE;
    }
    mvrt_device_info_t info;
    memset(&info, 0, sizeof info);
    mvrt_backend_device_info(be, &info);
    printf("mvrt check %s: %d cases on %s (%s), inputs %s%s\n", path, ncases,
           mvrt_backend_name(be), info.name[0] ? info.name : "?", mvrt_dtype_name(dtype),
           strided ? ", strided" : "");

    int passed = 0, failed = 0;
    for (int ci = 0; ci < ncases; ci++) {
        mvrt_gs_case_t c;
        if (mvrt_gs_load_case(file, ci, &c, err, sizeof err) != 0) {
            fprintf(stderr, "mvrt check: %s: case %d: %s\n", path, ci, err);
            printf("case %d: ERROR (malformed case)\n", ci);
            failed++;
            continue;
        }
        char cfgtxt[160];
        mvrt_gs_config_text(&c.cfg, cfgtxt, sizeof cfgtxt);

        /* Inputs rounded to the run dtype by mvrt_gs_run; the golden
         * outputs stay those of the f32 inputs (float64 truth). */
        mvrt_gs_run_options_t opt = {dtype, strided ? 1 : 0, 1, 1, 0, threads};
        double *res[MVRT_GS_NUM_OUTPUTS] = {0};
        if (mvrt_gs_run(be, &c, &opt, res, err, sizeof err) != 0) {
            fprintf(stderr, "mvrt check: case %d: %s\n", ci, err);
            printf("case %d %s: ERROR (run failed)\n", ci, cfgtxt);
            failed++;
            mvrt_gs_case_free(&c);
            continue;
        }

        /* Inputs of the run differ from the file's when rounded to f16/bf16
         * (or to f32 from a file holding f64 inputs): the golden outputs are
         * those of the unrounded inputs, and the input rounding alone moves
         * the exact result by more than the spec tolerances (the spec's
         * tolerances are for a kernel against a reference fed the SAME
         * low-precision inputs). So the allowance adds, per element, that
         * movement |ref(rounded inputs) - golden|, computed in float64 by the
         * reference (which tests check against the golden files to 1e-6). */
        double *moved[MVRT_GS_NUM_OUTPUTS] = {0};
        int rounded = dtype != MVRT_DTYPE_F32 || !inputs_f32_exact(&c);
        if (rounded && mvrt_gs_reference(&c, dtype, moved, err, sizeof err) != 0) {
            fprintf(stderr, "mvrt check: case %d: %s\n", ci, err);
            printf("case %d %s: ERROR (reference failed)\n", ci, cfgtxt);
            failed++;
            mvrt_gs_free_results(res);
            mvrt_gs_case_free(&c);
            continue;
        }
        for (int i = 0; rounded && i < MVRT_GS_NUM_OUTPUTS; i++) {
            if (!moved[i] || !c.ref[i])
                continue;
            int64_t shape[4];
            int64_t n = mvrt_gs_numel(mvrt_gs_output_shape(&c.cfg, i, i == MVRT_GS_DC
                                                           ? c.c_rank : c.b_rank, shape), shape);
            for (int64_t k = 0; k < n; k++)
                moved[i][k] = fabs(moved[i][k] - c.ref[i][k]);
        }

        int ok = 1, compared = 0;
        double worst_ratio = -1, max_abs = 0, max_rel = 0;
        const char *worst = "-", *abs_name = "-", *rel_name = "-";
        for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++) {
            if (!c.ref[i] || !res[i])
                continue;
            int64_t shape[4];
            int r = mvrt_gs_output_shape(&c.cfg, i, i == MVRT_GS_DC ? c.c_rank : c.b_rank,
                                         shape);
            int64_t n = mvrt_gs_numel(r, shape);
            mvrt_gs_tol_t tol = mvrt_gs_tolerance(i, dtype, &c.cfg);
            mvrt_gs_err_t e;
            mvrt_gs_compare_slack(res[i], c.ref[i], moved[i], n, tol, &e);
            compared++;
            int this_ok = mvrt_gs_err_ok(&e);
            ok &= this_ok;
            if (e.worst_ratio > worst_ratio) {
                worst_ratio = e.worst_ratio;
                worst = mvrt_gs_output_names[i];
            }
            if (e.max_abs > max_abs) {
                max_abs = e.max_abs;
                abs_name = mvrt_gs_output_names[i];
            }
            if (e.max_rel > max_rel) {
                max_rel = e.max_rel;
                rel_name = mvrt_gs_output_names[i];
            }
            if (verbose || !this_ok) {
                printf("    %-12s max abs %.3e  max rel %.3e  worst %.3f of tol (rtol %.2g "
                       "atol %.2g)", mvrt_gs_output_names[i], e.max_abs, e.max_rel,
                       e.worst_ratio, tol.rtol, tol.atol);
                if (!this_ok && e.worst_index >= 0)
                    printf("  at [%lld]: ref %.7g got %.7g%s", (long long)e.worst_index,
                           c.ref[i][e.worst_index], res[i][e.worst_index],
                           e.nonfinite ? " (non-finite values)" : "");
                if (moved[i]) {
                    double mm = 0;
                    for (int64_t k = 0; k < n; k++)
                        mm = moved[i][k] > mm ? moved[i][k] : mm;
                    printf("  (input rounding moves it by up to %.3e)", mm);
                }
                printf("%s\n", this_ok ? "" : "  FAIL");
            }
        }
        if (compared == 0)
            ok = 0;
        printf("case %d %s: max abs err %.3e (%s) max rel err %.3e (%s) worst %.3f of tol "
               "(%s) %s\n", ci, cfgtxt, max_abs, abs_name, max_rel, rel_name,
               worst_ratio < 0 ? 0.0 : worst_ratio, worst, ok ? "PASS" : "FAIL");
        if (ok)
            passed++;
        else
            failed++;
        mvrt_gs_free_results(res);
        mvrt_gs_free_results(moved);
        mvrt_gs_case_free(&c);
    }
    printf("%d passed, %d failed\n", passed, failed);
    mvrt_backend_close(be);
    mvrt_safetensors_close(file);
    return failed ? CHECK_EXIT_FAIL : 0;
}
