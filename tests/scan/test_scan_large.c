/* 64-bit indexing through the public API: a bf16 forward scan whose output
 * (Bt, Dm, L) = (2, 4096, 262147) has 2 147 508 224 > 2^31 elements.
 * u and delta are broadcast over batch and channels (strides 0, 0, 1), so
 * only the output is large (4.3 GB); A and D differ per channel, B and C
 * are constant (Dm, N). Sampled rows, among them the last one (which
 * crosses element 2^31: 32-bit offsets would wrap there), are compared with a double-precision
 * recurrence written here from the spec (header of mvrt/selective_scan.h).
 * Tolerance: |got - ref| <= 8e-3 |ref| + 1e-3 max|ref| (bf16 output).
 * usage: test_scan_large --backend NAME
 * Exit 77 (SKIP) when the backend is unavailable or less than 6 GB of
 * memory is available (host memory on the CPU). */
#define _GNU_SOURCE /* getline */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt/mvrt.h"

#define BT 2
#define DM 4096
#define SL 262147
#define NS 1

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double bf16_to_f64(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* MemAvailable in bytes (Linux), or -1 */
static long long mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

static mvrt_tensor_t tensor(mvrt_buffer_t *b, mvrt_dtype_t dt, int rank, const int64_t *shape,
                            const int64_t *strides)
{
    mvrt_tensor_t t = mvrt_tensor_make(b, 0, dt, rank, shape);
    if (strides)
        for (int i = 0; i < rank; i++)
            t.strides[i] = strides[i];
    return t;
}

static mvrt_buffer_t *upload(mvrt_backend_t *be, mvrt_stream_t *s, const void *src, size_t bytes)
{
    mvrt_buffer_t *b = NULL;
    if (mvrt_buffer_alloc(be, bytes, &b) != MVRT_OK ||
        mvrt_copy_host_to_device(s, b, 0, src, bytes) != MVRT_OK) {
        fprintf(stderr, "FAIL: upload: %s\n", mvrt_last_error());
        exit(1);
    }
    return b;
}

int main(int argc, char **argv)
{
    const char *backend = "cpu";
    for (int i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--backend"))
            backend = argv[i + 1];
    const int64_t numel = (int64_t)BT * DM * SL;
    const size_t out_bytes = (size_t)numel * 2;
    if (numel <= (int64_t)1 << 31) {
        fprintf(stderr, "FAIL: the shape does not exceed 2^31 elements\n");
        return 1;
    }
    mvrt_backend_t *be = NULL;
    if (mvrt_backend_open(backend, &be) != MVRT_OK) {
        printf("SKIP: backend %s: %s\n", backend, mvrt_last_error());
        return 77;
    }
    mvrt_device_info_t info;
    mvrt_backend_device_info(be, &info);
    const long long avail = !strcmp(mvrt_backend_name(be), "cpu") ? mem_available() : (long long)info.total_memory;
    if (avail >= 0 && avail < 6LL << 30) {
        printf("SKIP: %lld MB available, the test needs 6 GB\n", avail >> 20);
        mvrt_backend_close(be);
        return 77;
    }
    mvrt_stream_t *s = NULL;
    if (mvrt_stream_create(be, &s) != MVRT_OK) {
        fprintf(stderr, "FAIL: stream: %s\n", mvrt_last_error());
        return 1;
    }

    /* inputs: u, delta along L only (bf16); per-channel A, D; constant B, C */
    uint16_t *u16 = malloc(SL * 2), *d16 = malloc(SL * 2);
    float *A = malloc(DM * NS * sizeof(float)), *D = malloc(DM * sizeof(float));
    float B[DM * NS], C[DM * NS];
    uint64_t r = 12345;
    for (int64_t t = 0; t < SL; t++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        u16[t] = f32_to_bf16((float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0));
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        d16[t] = f32_to_bf16((float)(0.01 + 0.2 * (double)(r >> 11) / 9007199254740992.0));
    }
    for (int d = 0; d < DM; d++) {
        D[d] = 0.5f - (float)d / DM;
        for (int n = 0; n < NS; n++) {
            A[d * NS + n] = -(0.05f + 2.0f * (float)d / DM) * (float)(n + 1);
            B[d * NS + n] = 0.25f + 0.5f * (float)((d * 7 + n) % 13) / 13.0f;
            C[d * NS + n] = 1.0f - (float)((d * 5 + n) % 11) / 11.0f;
        }
    }
    mvrt_buffer_t *bu = upload(be, s, u16, SL * 2), *bd = upload(be, s, d16, SL * 2);
    mvrt_buffer_t *bA = upload(be, s, A, DM * NS * 4), *bD = upload(be, s, D, DM * 4);
    mvrt_buffer_t *bB = upload(be, s, B, sizeof B), *bC = upload(be, s, C, sizeof C);
    mvrt_buffer_t *bo = NULL;
    if (mvrt_buffer_alloc(be, out_bytes, &bo) != MVRT_OK) {
        printf("SKIP: cannot allocate the %zu-byte output: %s\n", out_bytes, mvrt_last_error());
        return 77;
    }

    const int64_t big[3] = {BT, DM, SL}, bcast[3] = {0, 0, 1}, dn[2] = {DM, NS}, dm[1] = {DM};
    mvrt_selective_scan_args_t a;
    memset(&a, 0, sizeof a);
    a.u = tensor(bu, MVRT_DTYPE_BF16, 3, big, bcast);
    a.delta = tensor(bd, MVRT_DTYPE_BF16, 3, big, bcast);
    a.A = tensor(bA, MVRT_DTYPE_F32, 2, dn, NULL);
    a.B = tensor(bB, MVRT_DTYPE_F32, 2, dn, NULL);
    a.C = tensor(bC, MVRT_DTYPE_F32, 2, dn, NULL);
    a.D = tensor(bD, MVRT_DTYPE_F32, 1, dm, NULL);
    mvrt_selective_scan_outputs_t o;
    memset(&o, 0, sizeof o);
    o.out = tensor(bo, MVRT_DTYPE_BF16, 3, big, NULL);
    if (mvrt_selective_scan_fwd(s, &a, &o) != MVRT_OK || mvrt_stream_synchronize(s) != MVRT_OK) {
        fprintf(stderr, "FAIL: forward: %s\n", mvrt_last_error());
        return 1;
    }

    /* sampled rows: first, middle, and the last row (crossing 2^31) */
    const int64_t rows[4][2] = {{0, 0}, {0, DM / 2 + 1}, {1, 17}, {1, DM - 1}};
    uint16_t *got = malloc(SL * 2);
    int fails = 0;
    for (int k = 0; k < 4; k++) {
        const int64_t b = rows[k][0], d = rows[k][1];
        const uint64_t first = (uint64_t)((b * DM + d) * SL);
        if (mvrt_copy_device_to_host(s, got, bo, first * 2, SL * 2) != MVRT_OK ||
            mvrt_stream_synchronize(s) != MVRT_OK) {
            fprintf(stderr, "FAIL: download: %s\n", mvrt_last_error());
            return 1;
        }
        double h[NS] = {0}, worst = 0, scale = 0;
        double *ref = malloc(SL * sizeof *ref);
        for (int64_t t = 0; t < SL; t++) {
            const double ut = bf16_to_f64(u16[t]), dt = bf16_to_f64(d16[t]);
            double y = (double)D[d] * ut;
            for (int n = 0; n < NS; n++) {
                h[n] = exp(dt * (double)A[d * NS + n]) * h[n] + dt * (double)B[d * NS + n] * ut;
                y += (double)C[d * NS + n] * h[n];
            }
            ref[t] = y;
            scale = fmax(scale, fabs(y));
        }
        int64_t wt = 0;
        for (int64_t t = 0; t < SL; t++) {
            const double e = fabs(bf16_to_f64(got[t]) - ref[t]) / (8e-3 * fabs(ref[t]) + 1e-3 * scale);
            if (!(e <= worst)) {
                worst = e;
                wt = t;
            }
        }
        const int ok = worst <= 1.0;
        printf("%s row (b %lld, d %lld), elements %llu..%llu: worst %.3f of tol (t %lld: got %.6g ref %.6g)\n",
               ok ? "ok  " : "FAIL", (long long)b, (long long)d, (unsigned long long)first,
               (unsigned long long)(first + SL - 1), worst, (long long)wt, bf16_to_f64(got[wt]), ref[wt]);
        fails += !ok;
        free(ref);
    }
    free(got);
    free(u16), free(d16), free(A), free(D);
    mvrt_buffer_free(bu), mvrt_buffer_free(bd), mvrt_buffer_free(bA), mvrt_buffer_free(bD);
    mvrt_buffer_free(bB), mvrt_buffer_free(bC), mvrt_buffer_free(bo);
    mvrt_stream_destroy(s);
    mvrt_backend_close(be);
    printf("%s: %d of 4 rows failed (%lld elements per tensor, > 2^31)\n", fails ? "FAIL" : "PASS", fails,
           (long long)numel);
    return fails ? 1 : 0;
}
