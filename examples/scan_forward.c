/* The README's example: one selective-scan forward on the best backend. */
#include <mvrt/mvrt.h>
#include <stdio.h>

enum { BT = 2, DM = 4, L = 16, N = 8 };
static float u[BT * DM * L], dt[BT * DM * L], A[DM * N], B[BT * N * L], C[BT * N * L], out[BT * DM * L];

/* Copies host data into a new device buffer and describes it as a tensor. */
static mvrt_tensor_t upload(mvrt_backend_t *be, mvrt_stream_t *s, const float *host, int rank,
                            const int64_t *shape, mvrt_buffer_t **buf)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    if (mvrt_buffer_alloc(be, (size_t)n * sizeof(float), buf) == MVRT_OK && host)
        mvrt_copy_host_to_device(s, *buf, 0, host, (size_t)n * sizeof(float));
    return mvrt_tensor_make(*buf, 0, MVRT_DTYPE_F32, rank, shape);
}

int main(void)
{
    for (int i = 0; i < BT * DM * L; i++) { u[i] = (float)(i % 7) * 0.1f; dt[i] = 0.05f; }
    for (int i = 0; i < DM * N; i++) A[i] = -1.0f - (float)(i % N);
    for (int i = 0; i < BT * N * L; i++) { B[i] = 0.5f; C[i] = (float)(i % 3) * 0.2f; }

    mvrt_backend_t *be = NULL;
    mvrt_stream_t *s = NULL;
    mvrt_buffer_t *bufs[6] = {0};
    if (mvrt_backend_open("auto", &be) != MVRT_OK || mvrt_stream_create(be, &s) != MVRT_OK) {
        fprintf(stderr, "mvrt: %s\n", mvrt_last_error());
        return 1;
    }
    const int64_t x[] = {BT, DM, L}, a[] = {DM, N}, bc[] = {BT, N, L};
    mvrt_selective_scan_args_t args = {
        .u = upload(be, s, u, 3, x, &bufs[0]),     .delta = upload(be, s, dt, 3, x, &bufs[1]),
        .A = upload(be, s, A, 2, a, &bufs[2]),     .B = upload(be, s, B, 3, bc, &bufs[3]),
        .C = upload(be, s, C, 3, bc, &bufs[4]),    .delta_softplus = 1};
    mvrt_selective_scan_outputs_t outs = {.out = upload(be, s, NULL, 3, x, &bufs[5])};

    mvrt_status_t st = mvrt_selective_scan_fwd(s, &args, &outs);  /* async on GPUs */
    if (st == MVRT_OK) st = mvrt_copy_device_to_host(s, out, bufs[5], 0, sizeof out);
    if (st == MVRT_OK) st = mvrt_stream_synchronize(s);
    if (st == MVRT_OK) printf("%s: out[0][1][5] = %.6f\n", mvrt_backend_name(be), out[L + 5]);
    else fprintf(stderr, "mvrt: %s: %s\n", mvrt_status_string(st), mvrt_last_error());

    for (int i = 0; i < 6; i++) mvrt_buffer_free(bufs[i]);
    mvrt_stream_destroy(s);
    mvrt_backend_close(be);
    return st == MVRT_OK ? 0 : 1;
}
