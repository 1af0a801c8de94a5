/* Benchmarks of the `mvrt bench` command (the bench folder, linked into mvrt). */
#ifndef MVRT_BENCH_BENCH_H
#define MVRT_BENCH_BENCH_H

#include <stdint.h>

/* mvrt bench scan [--backend NAME] [--threads LIST] [--quick] [--dtype T]
 * argv[0] is "scan". Returns the process exit code. */
int mvrt_bench_scan(int argc, char **argv);

/* mvrt bench model|block [--backend NAME] [--quick] [--profile] [--only TEXT]; argv[0] is "model" or
 * "block". MambaVision through graphs vs the PyTorch figures of ANCHORS.md. */
int mvrt_bench_model(int argc, char **argv);

/* The baseline every CPU figure is quoted against: the straightforward
 * single-threaded scalar loop over (b, d), t, n with expf, f32, contiguous
 * (Bt, Dm, L) u/delta/out, variable B/C (Bt, N, L), A (Dm, N), D and
 * delta_bias (Dm), softplus on, no z (MambaVision's call). */
void mvrt_bench_plain_scan_fwd(int64_t Bt, int64_t Dm, int64_t L, int64_t N, const float *u,
                               const float *delta, const float *A, const float *B,
                               const float *C, const float *D, const float *delta_bias,
                               float *out);

#endif
