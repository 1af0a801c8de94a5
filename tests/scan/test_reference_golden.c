/* Validates the double-precision reference itself against a scan golden
 * file (made independently from the original Python code in float64).
 * No backend is involved. The golden values are float64 results stored as
 * float32, so the reference must agree to float32 rounding: |x - g| <=
 * 1e-6 |g| + 1e-8 max|g| (the second term covers sums that cancel to
 * near zero, where the float64 summation order of the two codes differs).
 * Usage: test_reference_golden FILE.safetensors */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt/mvrt.h"
#include "golden_scan.h"
#include "scan_reference.h"

static double max_abs(const double *x, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(x[i]) > m)
            m = fabs(x[i]);
    return m;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.safetensors\n", argv[0]);
        return 2;
    }
    mvrt_safetensors_t *f = NULL;
    if (mvrt_safetensors_open(argv[1], &f) != MVRT_OK) {
        fprintf(stderr, "cannot read %s: %s\n", argv[1], mvrt_last_error());
        return 1;
    }
    char err[512];
    int ncases = 0, failed = 0;
    if (mvrt_gs_case_count(f, &ncases, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        mvrt_safetensors_close(f);
        return 1;
    }
    for (int ci = 0; ci < ncases; ci++) {
        mvrt_gs_case_t c;
        if (mvrt_gs_load_case(f, ci, &c, err, sizeof err) != 0) {
            fprintf(stderr, "case %d: %s\n", ci, err);
            failed++;
            continue;
        }
        const mvrt_gs_config_t *g = &c.cfg;
        mvrt_scan_ref_problem_t p = {
            .batch = g->batch, .dim = g->dim, .seqlen = g->seqlen, .dstate = g->dstate,
            .groups = g->groups, .b_variable = g->variable_B, .c_variable = g->variable_C,
            .delta_softplus = g->delta_softplus, .u = c.in[MVRT_GS_U],
            .delta = c.in[MVRT_GS_DELTA], .A = c.in[MVRT_GS_A], .B = c.in[MVRT_GS_B],
            .C = c.in[MVRT_GS_C], .D = c.in[MVRT_GS_D], .z = c.in[MVRT_GS_Z],
            .delta_bias = c.in[MVRT_GS_DELTA_BIAS]};
        double *res[MVRT_GS_NUM_OUTPUTS] = {0};
        int64_t n[MVRT_GS_NUM_OUTPUTS] = {0};
        for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++) {
            int64_t s[4];
            int r = mvrt_gs_output_shape(g, i, i == MVRT_GS_DC ? c.c_rank : c.b_rank, s);
            n[i] = mvrt_gs_numel(r, s);
            res[i] = calloc((size_t)n[i], sizeof(double));
            if (!res[i]) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
        }
        int rc = mvrt_scan_ref_forward(&p, res[MVRT_GS_OUT], res[MVRT_GS_LAST_STATE]);
        if (rc == 0 && c.in[MVRT_GS_DOUT]) {
            mvrt_scan_ref_grads_t gr = {
                res[MVRT_GS_DU], res[MVRT_GS_DDELTA], res[MVRT_GS_DA], res[MVRT_GS_DB],
                res[MVRT_GS_DC], res[MVRT_GS_DD], res[MVRT_GS_DZ], res[MVRT_GS_DDELTA_BIAS]};
            rc = mvrt_scan_ref_backward(&p, c.in[MVRT_GS_DOUT], &gr);
        }
        char cfgtxt[160];
        mvrt_gs_config_text(g, cfgtxt, sizeof cfgtxt);
        int ok = rc == 0, compared = 0;
        double worst = 0;
        const char *worst_name = "-";
        for (int i = 0; ok && i < MVRT_GS_NUM_OUTPUTS; i++) {
            if (!c.ref[i])
                continue;
            mvrt_gs_tol_t tol = {1e-6, 1e-8 * max_abs(c.ref[i], n[i]) + 1e-30};
            mvrt_gs_err_t e;
            mvrt_gs_compare(res[i], c.ref[i], n[i], tol, &e);
            compared++;
            if (e.worst_ratio >= worst) {
                worst = e.worst_ratio;
                worst_name = mvrt_gs_output_names[i];
            }
            if (!mvrt_gs_err_ok(&e)) {
                ok = 0;
                fprintf(stderr, "case %d: %s: max abs err %.3g (ratio to tolerance %.3g at "
                        "index %lld: ref %.9g got %.9g)\n", ci, mvrt_gs_output_names[i],
                        e.max_abs, e.worst_ratio, (long long)e.worst_index,
                        c.ref[i][e.worst_index], res[i][e.worst_index]);
            }
        }
        printf("case %d %s: %d outputs, worst %s at %.3f of tolerance  %s\n", ci, cfgtxt,
               compared, worst_name, worst, ok ? "PASS" : "FAIL");
        failed += !ok;
        for (int i = 0; i < MVRT_GS_NUM_OUTPUTS; i++)
            free(res[i]);
        mvrt_gs_case_free(&c);
    }
    mvrt_safetensors_close(f);
    printf("%d passed, %d failed\n", ncases - failed, failed);
    return failed ? 1 : 0;
}
