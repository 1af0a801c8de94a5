/* Benchmarks of the `mvrt bench` command (the bench folder, linked into mvrt). */
#ifndef MVRT_BENCH_BENCH_H
#define MVRT_BENCH_BENCH_H

#include <stdint.h>

/* mvrt bench scan [--backend NAME] [--threads LIST] [--quick] [--dtype T] [--only TEXT]
 * [--anchor JSON]; argv[0] is "scan". Returns the process exit code. */
int mvrt_bench_scan(int argc, char **argv);

/* mvrt bench model|block [--backend NAME] [--quick] [--profile] [--only TEXT] [--anchor JSON];
 * argv[0] is "model" or "block". MambaVision through graphs vs the PyTorch figures of ANCHORS.md
 * and, with --anchor, of the same call. */
int mvrt_bench_model(int argc, char **argv);

/* The peers' figures of one device call, as shared/anchors' scripts write
 * them: a JSON object of objects, e.g. {"T b256 compile-bf16": {"img_s":
 * 19420.7, "ms": 13.18}, ...} (torch_mambavision.py) or {"T s3 float32":
 * {"fwd_ms": 0.18, "bwd_ms": 0.60}, ...} (scan_mamba.py).
 * mvrt_bench_anchor_load reads the file whole (the caller frees it); NULL,
 * with the reason on stderr, when it cannot. mvrt_bench_anchor_field is the
 * number after "field": inside the object of "key", or 0 when either is
 * absent (a flat search: keys must not contain one another's quotes). */
char *mvrt_bench_anchor_load(const char *path);
double mvrt_bench_anchor_field(const char *json, const char *key, const char *field);

/* The baseline every CPU figure is quoted against: the straightforward
 * single-threaded scalar loop over (b, d), t, n with expf, f32, contiguous
 * (Bt, Dm, L) u/delta/out, variable B/C (Bt, N, L), A (Dm, N), D and
 * delta_bias (Dm), softplus on, no z (MambaVision's call). */
void mvrt_bench_plain_scan_fwd(int64_t Bt, int64_t Dm, int64_t L, int64_t N, const float *u,
                               const float *delta, const float *A, const float *B,
                               const float *C, const float *D, const float *delta_bias,
                               float *out);

#endif
