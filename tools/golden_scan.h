/* Helpers shared by `mvrt check` and the scan tests: reading scan golden
 * files (shared/golden/README.md format), running one scan problem through
 * the PUBLIC mvrt API in a chosen dtype and memory layout, and comparing
 * results with stated tolerances. Host data is always float64 here; it is
 * converted to the backend's dtypes on upload and back on download.
 *
 * Functions returning int give 0 on success and non-zero on failure, with a
 * message in `err` (never printed here: callers decide). */
#ifndef MVRT_TOOLS_GOLDEN_SCAN_H
#define MVRT_TOOLS_GOLDEN_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "mvrt/mvrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- scalar conversions (round to nearest even) ---- */
uint16_t mvrt_gs_f32_to_f16(float x);
float mvrt_gs_f16_to_f32(uint16_t h);
uint16_t mvrt_gs_f32_to_bf16(float x);
float mvrt_gs_bf16_to_f32(uint16_t h);
/* Rounds x through `dtype` (f32, f16 or bf16) and back to double. */
double mvrt_gs_round(double x, mvrt_dtype_t dtype);
void mvrt_gs_round_array(double *x, int64_t n, mvrt_dtype_t dtype);

/* ---- problem description ---- */
typedef struct mvrt_gs_config {
    int64_t batch, dim, seqlen, dstate, groups;
    int variable_B, variable_C, has_D, has_z, has_delta_bias, delta_softplus;
    /* optional key "complex" (default false): complex A. Complex tensors
     * (A, constant B / C, last_state, dA, constant dB / dC) are stored with
     * a trailing axis of 2 (re, im) and run as c64; variable B / C have 2L
     * steps ((re, im) of step l at 2l, 2l + 1). f32 runs only. */
    int is_complex;
} mvrt_gs_config_t;

/* Parses the case JSON of a golden file (keys as in golden/README.md;
 * unknown keys are ignored; every listed key is required). */
int mvrt_gs_parse_config(const char *json, mvrt_gs_config_t *cfg, char *err, size_t errlen);
/* "(2,4,64) N=8 G=1 B:var C:var D z bias softplus" */
void mvrt_gs_config_text(const mvrt_gs_config_t *cfg, char *buf, size_t cap);

enum {
    MVRT_GS_U, MVRT_GS_DELTA, MVRT_GS_A, MVRT_GS_B, MVRT_GS_C, MVRT_GS_D, MVRT_GS_Z,
    MVRT_GS_DELTA_BIAS, MVRT_GS_DOUT, MVRT_GS_NUM_INPUTS
};
enum {
    MVRT_GS_OUT, MVRT_GS_LAST_STATE, MVRT_GS_DU, MVRT_GS_DDELTA, MVRT_GS_DA, MVRT_GS_DB,
    MVRT_GS_DC, MVRT_GS_DD, MVRT_GS_DZ, MVRT_GS_DDELTA_BIAS, MVRT_GS_NUM_OUTPUTS
};
extern const char *const mvrt_gs_input_names[MVRT_GS_NUM_INPUTS];   /* "u", ..., "dout" */
extern const char *const mvrt_gs_output_names[MVRT_GS_NUM_OUTPUTS]; /* "out", ... */

/* Whether input/output `i` exists for this config (D/z/bias optional). */
int mvrt_gs_input_present(const mvrt_gs_config_t *cfg, int i);
int mvrt_gs_output_present(const mvrt_gs_config_t *cfg, int i);
/* Shape of input/output `i`; variable B/C (and dB/dC) have rank bc_rank
 * (3 = (Bt, N, L), only when groups == 1; 4 = (Bt, G, N, L)). */
int mvrt_gs_input_shape(const mvrt_gs_config_t *cfg, int i, int bc_rank, int64_t *shape);
int mvrt_gs_output_shape(const mvrt_gs_config_t *cfg, int i, int bc_rank, int64_t *shape);
int64_t mvrt_gs_numel(int rank, const int64_t *shape);

/* A problem on the host in float64. in[i] NULL when absent; dout NULL means
 * "no backward". ref[i]: expected outputs, NULL when not known. */
typedef struct mvrt_gs_case {
    mvrt_gs_config_t cfg;
    int b_rank, c_rank;
    double *in[MVRT_GS_NUM_INPUTS];
    double *ref[MVRT_GS_NUM_OUTPUTS];
} mvrt_gs_case_t;

/* Reads metadata "cases" (a non-negative integer). */
int mvrt_gs_case_count(const mvrt_safetensors_t *file, int *out_count, char *err, size_t errlen);
/* Loads case `index`: config from metadata "case<i>", tensors "case<i>.<name>"
 * (F32/F64/F16/BF16), every shape checked against the config. Inputs are
 * required; `out` is required; the backward outputs are required when
 * `dout` is present; last_state is optional. */
int mvrt_gs_load_case(const mvrt_safetensors_t *file, int index, mvrt_gs_case_t *c, char *err,
                      size_t errlen);
void mvrt_gs_case_free(mvrt_gs_case_t *c);

/* ---- running through the public API ---- */
typedef struct mvrt_gs_run_options {
    mvrt_dtype_t dtype;  /* input dtype: F32, F16 or BF16 */
    int layout;          /* 0 contiguous; 1 padded rows/batches (unit stride along L),
                            non-zero offsets; 2 as 1 and stride 2 along L */
    int last_state;      /* request last_state */
    int backward;        /* run the backward too (needs in[DOUT]) */
    int determinism;     /* run the backward twice (explicit workspace, then NULL
                            workspace) and require bitwise-equal gradients */
    int num_threads;     /* >0: mvrt_backend_set_num_threads before running */
} mvrt_gs_run_options_t;

/* Runs forward (and backward) of `c` on `backend`. Inputs are converted to
 * the run dtype (A, D, delta_bias, constant B/C stay f32). Results (float64,
 * contiguous) are malloc'd into res[i] for every computed output, NULL
 * otherwise; free them with mvrt_gs_free_results. Also checks that nothing
 * outside the output tensors was written (padding sentinels) and, with
 * determinism, bitwise repeatability. Returns 0, or non-zero with err set
 * (an mvrt failure gives its status + mvrt_last_error()). */
int mvrt_gs_run(mvrt_backend_t *backend, const mvrt_gs_case_t *c,
                const mvrt_gs_run_options_t *opt, double *res[MVRT_GS_NUM_OUTPUTS], char *err,
                size_t errlen);
void mvrt_gs_free_results(double *res[MVRT_GS_NUM_OUTPUTS]);

/* ---- double-precision reference (ops/selective_scan/scan_reference.c) ---- */
/* Computes every output of `c` (forward; backward when in[DOUT] is given)
 * with the float64 reference, after rounding the inputs exactly as
 * mvrt_gs_run would for a run in `dtype` (F64: no rounding). Results are
 * malloc'd into res[i] (NULL for absent outputs); free with
 * mvrt_gs_free_results. */
int mvrt_gs_reference(const mvrt_gs_case_t *c, mvrt_dtype_t dtype,
                      double *res[MVRT_GS_NUM_OUTPUTS], char *err, size_t errlen);

/* ---- comparison ---- */
typedef struct mvrt_gs_tol {
    double rtol, atol;
} mvrt_gs_tol_t;

/* Tolerance for output `i` computed in `dtype` (see golden_scan.c for the
 * policy: spec tolerances; gradients looser; sums scale with term count). */
mvrt_gs_tol_t mvrt_gs_tolerance(int i, mvrt_dtype_t dtype, const mvrt_gs_config_t *cfg);

typedef struct mvrt_gs_err {
    double max_abs;     /* max |got - ref| */
    double max_rel;     /* max |got - ref| / |ref| over |ref| > atol */
    double worst_ratio; /* max |got - ref| / (atol + rtol |ref|): <= 1 passes */
    int64_t worst_index;
    int64_t nonfinite;  /* got not finite where ref is */
} mvrt_gs_err_t;

void mvrt_gs_compare(const double *got, const double *ref, int64_t n, mvrt_gs_tol_t tol,
                     mvrt_gs_err_t *e);
/* As mvrt_gs_compare with a per-element allowance added to the tolerance:
 * |got - ref| <= atol + rtol |ref| + slack[i] (slack may be NULL). */
void mvrt_gs_compare_slack(const double *got, const double *ref, const double *slack, int64_t n,
                           mvrt_gs_tol_t tol, mvrt_gs_err_t *e);
static inline int mvrt_gs_err_ok(const mvrt_gs_err_t *e)
{
    return e->nonfinite == 0 && e->worst_ratio <= 1.0;
}

#ifdef __cplusplus
}
#endif
#endif
