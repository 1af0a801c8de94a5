/* Quick timings of the MambaVision ops of a GPU plugin at MambaVision-T
 * sizes (batch 256 at 224x224 unless stated): not a test, no checking (the
 * test_cuda_ops test does that). Random inputs, 3 warm-ups, median of 20
 * runs timed with device events; prints time and the achieved rate (GFLOP/s
 * for GEMM-like ops, GB/s of the minimal traffic for the others).
 * <prefix>GEMM=builtin in the environment times our own GEMM kernel.
 * "batch1": only the batch-1 16-bit linears of MambaVision-B, each replayed
 * in a CUDA graph (the graph runner's cost), bf16 beside fp16; any other
 * TEXT: only the rows whose name contains it (e.g. "dt_proj").
 * usage: bench_cuda_ops PLUGIN_PATH [batch1 | TEXT] */
#include "cuda_test_util.h"

static const mvrt_plugin_vtable_t *vt;
static void *dev, *stream;
static const char *row_filter; /* NULL: every row */

static void *dalloc_rand(int64_t n)
{
    float *h = malloc(sizeof(float) * (size_t)n);
    if (!h) { fprintf(stderr, "host OOM\n"); exit(1); }
    for (int64_t i = 0; i < n; i++) h[i] = (float)tu_uniform(-1.0, 1.0);
    void *d = NULL;
    TU_CHECK(vt->mem_alloc(dev, sizeof(float) * (size_t)n, &d));
    TU_CHECK(vt->copy_h2d(dev, stream, d, h, sizeof(float) * (size_t)n));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    free(h);
    return d;
}

static int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* flops > 0: prints GFLOP/s; else bytes -> GB/s */
static void bench(const char *name, const mvrt_op_params_t *p, double flops, double bytes)
{
    if (row_filter && !strstr(name, row_filter)) return;
    size_t sb = 0;
    TU_CHECK(vt->op_scratch_size(dev, p, &sb));
    void *scratch = NULL;
    if (sb) TU_CHECK(vt->mem_alloc(dev, sb, &scratch));
    void *e0, *e1;
    TU_CHECK(vt->event_create(dev, &e0));
    TU_CHECK(vt->event_create(dev, &e1));
    for (int i = 0; i < 3; i++) TU_CHECK(vt->op_run(dev, stream, p, scratch));
    float t[20];
    for (int i = 0; i < 20; i++) {
        TU_CHECK(vt->event_record(dev, e0, stream));
        TU_CHECK(vt->op_run(dev, stream, p, scratch));
        TU_CHECK(vt->event_record(dev, e1, stream));
        TU_CHECK(vt->event_synchronize(dev, e1));
        TU_CHECK(vt->event_elapsed_ms(dev, e0, e1, &t[i]));
    }
    qsort(t, 20, sizeof t[0], cmpf);
    const double ms = t[10];
    if (flops > 0 && bytes > 0)
        printf("%-44s %9.3f ms  %8.1f GFLOP/s  %8.1f GB/s  (scratch %zu MiB)\n", name, ms, flops / ms * 1e-6,
               bytes / ms * 1e-6, sb >> 20);
    else if (flops > 0) printf("%-44s %9.3f ms  %8.1f GFLOP/s  (scratch %zu MiB)\n", name, ms, flops / ms * 1e-6, sb >> 20);
    else printf("%-44s %9.3f ms  %8.1f GB/s\n", name, ms, bytes / ms * 1e-6);
    vt->event_destroy(dev, e0);
    vt->event_destroy(dev, e1);
    if (scratch) vt->mem_free(dev, scratch);
}

/* Microseconds per launch of p in a captured graph of `reps` launches:
 * what a replayed forward pays for the op, without the host's launch
 * cost (the median of 11 replays; one run outside the capture first, so
 * that vendor libraries plan there). */
static double graph_us(const mvrt_op_params_t *p, int reps)
{
    size_t sb = 0;
    TU_CHECK(vt->op_scratch_size(dev, p, &sb));
    void *scratch = NULL, *g = NULL, *e0, *e1;
    if (sb) TU_CHECK(vt->mem_alloc(dev, sb, &scratch));
    TU_CHECK(vt->op_run(dev, stream, p, scratch));
    TU_CHECK(vt->stream_synchronize(dev, stream));
    TU_CHECK(vt->graph_capture_begin(dev, stream));
    for (int i = 0; i < reps; i++) TU_CHECK(vt->op_run(dev, stream, p, scratch));
    TU_CHECK(vt->graph_capture_end(dev, stream, &g));
    TU_CHECK(vt->event_create(dev, &e0));
    TU_CHECK(vt->event_create(dev, &e1));
    for (int i = 0; i < 3; i++) TU_CHECK(vt->graph_launch(dev, g, stream));
    float t[11];
    for (int i = 0; i < 11; i++) {
        TU_CHECK(vt->event_record(dev, e0, stream));
        TU_CHECK(vt->graph_launch(dev, g, stream));
        TU_CHECK(vt->event_record(dev, e1, stream));
        TU_CHECK(vt->event_synchronize(dev, e1));
        TU_CHECK(vt->event_elapsed_ms(dev, e0, e1, &t[i]));
    }
    qsort(t, 11, sizeof t[0], cmpf);
    vt->event_destroy(dev, e0);
    vt->event_destroy(dev, e1);
    vt->graph_destroy(dev, g);
    if (scratch) vt->mem_free(dev, scratch);
    return t[5] * 1e3 / reps;
}

/* MambaVision-B's batch-1 linears as its 16-bit graph runs them (16-bit
 * A, weight and Y; fp32 bias; the residual stream 16-bit), bf16 and fp16,
 * in graphs of 20 launches. The roofline of each is the larger of its
 * products at 790 TFLOP/s and its bytes (weight, A, Y, residual) at 4.3
 * TB/s: the bf16 matrix product and the device-to-device copy measured on
 * an H200 (KINDS.md of the device library, 2026-11-04). */
static void bench_batch1_linears(void)
{
    /* every A is row-major (M x K): for out_proj that is the batch
     * fold's form, not the transposed A a batch-1 graph passes it today
     * (which cuBLAS runs on unaligned kernels: PERF_NOTES, session 60) */
    enum { NONE_R = 0, INPLACE_R = 1, SEPARATE_R = 2 };
    static const struct {
        const char *what;
        int64_t M, N, K;
        int bias, act, res, count; /* count: instances in one forward */
    } rows[] = {
        {"s3 in_proj", 196, 512, 512, 0, MVRT_ACT_NONE, NONE_R, 5},
        {"s3 out_proj, A row-major", 196, 512, 512, 0, MVRT_ACT_NONE, INPLACE_R, 5},
        {"s3 qkv +bias", 196, 1536, 512, 1, MVRT_ACT_NONE, NONE_R, 5},
        {"s3 proj +bias +R", 196, 512, 512, 1, MVRT_ACT_NONE, INPLACE_R, 5},
        {"s3 fc1 +bias +GELU", 196, 2048, 512, 1, MVRT_ACT_GELU_ERF, NONE_R, 10},
        {"s3 fc2 +bias +R", 196, 512, 2048, 1, MVRT_ACT_NONE, INPLACE_R, 10},
        {"s4 in_proj", 49, 1024, 1024, 0, MVRT_ACT_NONE, NONE_R, 3},
        {"s4 out_proj, A row-major", 49, 1024, 1024, 0, MVRT_ACT_NONE, INPLACE_R, 3},
        {"s4 qkv +bias", 49, 3072, 1024, 1, MVRT_ACT_NONE, NONE_R, 2},
        {"s4 proj +bias +R", 49, 1024, 1024, 1, MVRT_ACT_NONE, INPLACE_R, 2},
        {"s4 fc1 +bias +GELU", 49, 4096, 1024, 1, MVRT_ACT_GELU_ERF, NONE_R, 5},
        {"s4 fc2 +bias +R", 49, 1024, 4096, 1, MVRT_ACT_NONE, INPLACE_R, 5},
        {"s4 proj onto a separate R", 49, 1024, 1024, 1, MVRT_ACT_NONE, SEPARATE_R, 0},
    };
    const int t16[2] = {MVRT_STORAGE16_BF16, MVRT_STORAGE16_F16};
    printf("MambaVision-B batch-1 16-bit linears, us per launch in a graph of 20 (x count per forward)\n");
    printf("%-32s %-16s %9s %9s %8s %9s %9s %8s\n", "linear", "M x N x K", "bf16 us", "fp16 us", "bf16/fp16",
           "roof us", "bf16 TF/s", "count");
    double total[2] = {0, 0};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const int64_t M = rows[r].M, N = rows[r].N, K = rows[r].K;
        /* float buffers hold twice the 16-bit values a 16-bit view needs */
        float *a = dalloc_rand(M * K), *w = dalloc_rand(N * K), *y = dalloc_rand(M * N), *rr = dalloc_rand(M * N);
        float *bias = dalloc_rand(N);
        double us[2];
        for (int d = 0; d < 2; d++) {
            mvrt_op_params_t p;
            memset(&p, 0, sizeof p);
            p.kind = MVRT_OP_LINEAR;
            mvrt_linear_params_t *l = &p.u.linear;
            l->batch = 1, l->M = M, l->N = N, l->K = K;
            l->A = a, l->lda = K, l->a16 = t16[d];
            l->B = w, l->ldb = K, l->trans_b = 1, l->b16 = t16[d], l->b_constant = 1;
            l->Y = y, l->ldy = N, l->y16 = t16[d];
            l->bias = rows[r].bias ? bias : NULL;
            l->activation = rows[r].act;
            l->beta = rows[r].res ? 1.f : 0.f;
            l->residual = rows[r].res == SEPARATE_R ? rr : NULL;
            l->math = t16[d] == MVRT_STORAGE16_F16 ? MVRT_MATH_FP16 : MVRT_MATH_BF16;
            us[d] = graph_us(&p, 20);
            total[d] += us[d] * rows[r].count;
        }
        const double flops = 2.0 * M * N * K;
        const double bytes = 2.0 * (N * K + M * K + M * N * (rows[r].res ? 2 : 1)) + (rows[r].bias ? 4.0 * N : 0);
        const double roof_us = fmax(flops / 790e12, bytes / 4.3e12) * 1e6;
        char shape[32];
        snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
        printf("%-32s %-16s %9.2f %9.2f %8.3f %9.2f %9.1f %8d\n", rows[r].what, shape, us[0], us[1], us[0] / us[1],
               roof_us, flops / us[0] * 1e-6, rows[r].count);
        vt->mem_free(dev, a), vt->mem_free(dev, w), vt->mem_free(dev, y), vt->mem_free(dev, rr);
        vt->mem_free(dev, bias);
    }
    printf("per forward (count x us): bf16 %.1f us, fp16 %.1f us, bf16 - fp16 %.1f us\n", total[0], total[1],
           total[0] - total[1]);
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s PLUGIN [batch1 | TEXT]\n", argv[0]); return 2; }
    vt = tu_open_plugin(argv[1], &dev);
    stream = vt->default_stream(dev);
    if (argc > 2 && strcmp(argv[2], "batch1") == 0) {
        if (!vt->graph_capture_begin || !vt->op_run) {
            fprintf(stderr, "the plugin has no graph capture or ops\n");
            return 1;
        }
        bench_batch1_linears();
        vt->device_close(dev);
        return 0;
    }
    if (argc > 2) row_filter = argv[2];
    const int64_t B = 256, L = 196, C = 320, T = B * L;
    mvrt_op_params_t p;

    /* stage 3 MLP of MambaVision-T: fc1 (T, 320) -> (T, 1280) + GELU, fc2 back + residual */
    float *x = dalloc_rand(T * C), *w1 = dalloc_rand(4 * C * C), *b1 = dalloc_rand(4 * C);
    float *h = dalloc_rand(T * 4 * C), *w2 = dalloc_rand(4 * C * C), *y = dalloc_rand(T * C);
    memset(&p, 0, sizeof p);
    p.kind = MVRT_OP_LINEAR;
    p.u.linear = (mvrt_linear_params_t){1, T, 4 * C, C, x, C, 0, 0, w1, C, 0, 1, h, 4 * C, 0, b1, 0,
                                        MVRT_ACT_GELU_ERF, 0.f, MVRT_MATH_FP32, 0, 0, NULL, NULL, 0.f, NULL, 1, 0};
    const double f1 = 2.0 * T * 4 * C * C;
    bench("linear fc1 50176x1280x320 +bias+GELU fp32", &p, f1, 0);
    p.u.linear.math = MVRT_MATH_FAST;
    bench("linear fc1 50176x1280x320 +bias+GELU tf32", &p, f1, 0);
    p.u.linear = (mvrt_linear_params_t){1, T, C, 4 * C, h, 4 * C, 0, 0, w2, 4 * C, 0, 1, y, C, 0, b1, 0,
                                        MVRT_ACT_NONE, 1.f, MVRT_MATH_FP32, 0, 0, NULL, NULL, 0.f, NULL, 1, 0};
    bench("linear fc2 50176x320x1280 +bias beta1 fp32", &p, f1, 0);

    /* dt_proj over MambaVision-B's stage-3 windows: DT_b (256, 196) = W
     * (256, 32) . DBL_b[0:32] + bias per row, 256 windows (h's rows hold
     * DBL: 48 rows of 196 per window; y holds DT) */
    memset(&p, 0, sizeof p);
    p.kind = MVRT_OP_LINEAR;
    p.u.linear = (mvrt_linear_params_t){B, 256, L, 32, w1, 32, 0, 0, h, L, 48 * L, 0, y, L, 256 * L, b1, 1,
                                        MVRT_ACT_NONE, 0.f, MVRT_MATH_FP32, 0, 0, NULL, NULL, 0.f, NULL, 1, 0};
    bench("linear dt_proj b256 256x196x32 rowbias fp32", &p, 2.0 * B * 256 * L * 32, 4.0 * B * (32 + 256) * L);
    p.u.linear.math = MVRT_MATH_BF16;
    bench("linear dt_proj b256 256x196x32 rowbias bf16", &p, 2.0 * B * 256 * L * 32, 4.0 * B * (32 + 256) * L);
    /* ... and over stage 4's: DT_b (512, 49) = W (512, 64) . DBL_b[0:64] (80
     * rows of 49 per window) */
    p.u.linear = (mvrt_linear_params_t){B, 512, 49, 64, w1, 64, 0, 0, h, 49, 80 * 49, 0, y, 49, 512 * 49, b1, 1,
                                        MVRT_ACT_NONE, 0.f, MVRT_MATH_BF16, 0, 0, NULL, NULL, 0.f, NULL, 1, 0};
    bench("linear dt_proj b256 512x49x64 rowbias bf16", &p, 2.0 * B * 512 * 49 * 64, 4.0 * B * (64 + 512) * 49);
    /* both as the 16-bit mixer chain runs them: 16-bit W, DBL and DT (a16,
     * b16, y16; the buffers' bits read as bf16 values) */
    p.u.linear.a16 = p.u.linear.b16 = p.u.linear.y16 = MVRT_STORAGE16_BF16;
    p.u.linear.b_constant = 0;
    bench("linear dt_proj b256 512x49x64 rowbias bf16 16-bit io", &p, 2.0 * B * 512 * 49 * 64,
          2.0 * B * (64 + 512) * 49);
    p.u.linear = (mvrt_linear_params_t){B, 256, L, 32, w1, 32, 0, 0, h, L, 48 * L, 0, y, L, 256 * L, b1, 1,
                                        MVRT_ACT_NONE, 0.f, MVRT_MATH_BF16, 0, 0, NULL, NULL, 0.f, NULL, 1, 0};
    p.u.linear.a16 = p.u.linear.b16 = p.u.linear.y16 = MVRT_STORAGE16_BF16;
    p.u.linear.b_constant = 0;
    bench("linear dt_proj b256 256x196x32 rowbias bf16 16-bit io", &p, 2.0 * B * 256 * L * 32,
          2.0 * B * (32 + 256) * L);
    /* ... and T's: stage 3 (160 x 196, K 20; dbl 36 rows), stage 4 (320 x 49, K 40; 56 rows) */
    p.u.linear.M = 160, p.u.linear.K = 20, p.u.linear.lda = 20, p.u.linear.batch_stride_b = 36 * L;
    p.u.linear.batch_stride_y = 160 * L;
    bench("linear dt_proj b256 160x196x20 rowbias bf16 16-bit io", &p, 2.0 * B * 160 * L * 20,
          2.0 * B * (20 + 160) * L);
    p.u.linear.M = 320, p.u.linear.N = 49, p.u.linear.K = 40, p.u.linear.lda = 40, p.u.linear.ldb = 49;
    p.u.linear.ldy = 49, p.u.linear.batch_stride_b = 56 * 49, p.u.linear.batch_stride_y = 320 * 49;
    bench("linear dt_proj b256 320x49x40 rowbias bf16 16-bit io", &p, 2.0 * B * 320 * 49 * 40,
          2.0 * B * (40 + 320) * 49);
    /* x_proj there: DBL_b (48, 196) = W (48, 256) . MX_b (256, 196) (y
     * holds MX, h DBL) */
    p.u.linear = (mvrt_linear_params_t){B, 48, L, 256, w1, 256, 0, 0, y, L, 256 * L, 0, h, L, 48 * L, NULL, 0,
                                        MVRT_ACT_NONE, 0.f, MVRT_MATH_BF16, 0, 0, NULL, NULL, 0.f, NULL, 1, 0};
    bench("linear x_proj b256 48x196x256 bf16", &p, 2.0 * B * 48 * L * 256, 4.0 * B * (256 + 48) * L);
    /* ... as the 16-bit graph runs it: MX's 16-bit copy read as stored (b16;
     * y's bits read as bf16 values), the weight in 16 bits (a16) */
    p.u.linear.b16 = p.u.linear.a16 = MVRT_STORAGE16_BF16;
    p.u.linear.b_constant = 0;
    bench("linear x_proj b256 48x196x256 bf16 16-bit u", &p, 2.0 * B * 48 * L * 256, B * (2.0 * 256 + 4.0 * 48) * L);

    /* attention, stage 3 of T: qkv (B, 196, 960), 8 heads of 40 */
    float *qkv = dalloc_rand(T * 3 * C), *ao = dalloc_rand(T * C);
    memset(&p, 0, sizeof p);
    p.kind = MVRT_OP_ATTENTION;
    p.u.attention = (mvrt_attention_params_t){B, L, 8, 40, 0.158113883f, qkv, ao, MVRT_MATH_FP32, 0, 0};
    bench("attention b256 L196 h8 d40", &p, 4.0 * B * 8 * L * L * 40, 0);
    p.u.attention.batch = 64;
    bench("attention b64 L196 h8 d40", &p, 4.0 * 64 * 8 * L * L * 40, 0);
    /* bf16 math: fp32 q, k, v and output, then the graph's 16-bit form
     * (qkv16, out16; the buffers' bits read as bf16 values); the bytes
     * moved by the 16-bit form (qkv read, out written) set its roofline */
    p.u.attention.batch = B;
    p.u.attention.math = MVRT_MATH_BF16;
    bench("attention b256 L196 h8 d40 bf16", &p, 4.0 * B * 8 * L * L * 40, 0);
    p.u.attention.qkv16 = p.u.attention.out16 = MVRT_STORAGE16_BF16;
    bench("attention b256 L196 h8 d40 bf16 16-bit io", &p, 4.0 * B * 8 * L * L * 40, 2.0 * (double)T * 4 * C);
    /* MambaVision-B's stages 3 and 4: qkv (B, 196, 1536), 8 heads of 64;
     * (B, 49, 3072), 16 heads of 64 (buffers of T's sizes hold them) */
    p.u.attention.head_dim = 64;
    p.u.attention.scale = 0.125f;
    bench("attention b256 L196 h8 d64 bf16 16-bit io", &p, 4.0 * B * 8 * L * L * 64, 2.0 * (double)T * 4 * 512);
    p.u.attention.length = 49;
    p.u.attention.heads = 16;
    bench("attention b256 L49 h16 d64 bf16 16-bit io", &p, 4.0 * B * 16 * 49 * 49 * 64, 2.0 * (double)B * 49 * 4 * 1024);

    /* layernorm (T, 320) */
    memset(&p, 0, sizeof p);
    p.kind = MVRT_OP_LAYERNORM;
    p.u.layernorm = (mvrt_layernorm_params_t){T, C, x, C, y, C, w1, b1, 1e-5f, 0, 0};
    bench("layernorm 50176x320", &p, 0, 2.0 * T * C * 4);

    /* dwconv1d on the mixer's x half: token-major (B, 196, 320) cols [0,160) -> (B, 160, 196) */
    memset(&p, 0, sizeof p);
    p.kind = MVRT_OP_DWCONV1D_SILU;
    p.u.dwconv1d = (mvrt_dwconv1d_params_t){B, C / 2, L, 3, x, {L * C, 1, C}, h, {C / 2 * L, L, 1}, w1, 0, NULL, {0, 0, 0}, NULL, 0, NULL, 0};
    bench("dwconv1d+silu b256 C160 L196 transpose", &p, 0, 2.0 * B * C / 2 * L * 4);

    /* window partition / reverse (B, 320, 14, 14), ws 14 */
    memset(&p, 0, sizeof p);
    p.kind = MVRT_OP_WINDOW_PARTITION;
    p.u.window = (mvrt_window_params_t){B, C, 14, 14, 14, x, y, 0};
    bench("window partition b256 C320 14x14", &p, 0, 2.0 * T * C * 4);
    p.kind = MVRT_OP_WINDOW_REVERSE;
    bench("window reverse b256 C320 14x14", &p, 0, 2.0 * T * C * 4);

    /* head: affine + pool (B, 640, 7x7) */
    memset(&p, 0, sizeof p);
    p.kind = MVRT_OP_AFFINE_AVGPOOL;
    p.u.pool = (mvrt_affine_avgpool_params_t){B, 640, 49, x, w1, b1, y, 0};
    bench("affine+avgpool b256 C640 7x7", &p, 0, (double)B * 640 * 49 * 4);

    /* stage 1 conv block conv: (B, 80, 56, 56) 3x3 s1 + bias + GELU-tanh + residual */
    float *cx = dalloc_rand(B * 80 * 56 * 56), *cw = dalloc_rand(160 * 80 * 9), *cy = dalloc_rand(B * 80 * 56 * 56);
    float *cr = dalloc_rand(B * 80 * 56 * 56);
    memset(&p, 0, sizeof p);
    p.kind = MVRT_OP_CONV2D;
    p.u.conv2d = (mvrt_conv2d_params_t){B, 80, 56, 56, 80, 56, 56, 3, 1, 1, cx, cw, b1, cr, cy, MVRT_ACT_GELU_TANH, MVRT_MATH_FP32, 0, 0, 0, 0, NULL, NULL};
    bench("conv2d b256 80->80 56x56 3x3 s1 +res", &p, 2.0 * B * 80 * 80 * 9 * 56 * 56, 0);
    p.u.conv2d = (mvrt_conv2d_params_t){B, 80, 56, 56, 160, 28, 28, 3, 2, 1, cx, cw, NULL, NULL, cy, MVRT_ACT_NONE, MVRT_MATH_FP32, 0, 0, 0, 0, NULL, NULL};
    bench("conv2d b256 80->160 56x56 3x3 s2", &p, 2.0 * B * 160 * 80 * 9 * 28 * 28, 0);

    /* MambaVision-B at batch 256 (bf16 graph forms): the mixer's two-part
     * conv1d (token-major (B, L, 2h) -> channel-major x half and z half),
     * out_proj over windows (A = the fp32 (C, L) rows per window, staged
     * as 16-bit (B L, C); 16-bit weight; onto the fp32 residual) and half a
     * batch of the 3-channel stem (NCHW floats -> NHWC bf16, ReLU) */
    {
        const int64_t bl[2][2] = {{196, 512}, {49, 1024}};
        for (int i = 0; i < 2; i++) {
            const int64_t Lb = bl[i][0], Cb = bl[i][1], hb = Cb / 2, Mb = B * Lb;
            float *xz = dalloc_rand(Mb * Cb), *mx = dalloc_rand(Mb * hb), *yz = dalloc_rand(Mb * Cb);
            float *wx = dalloc_rand(hb * 3), *wz = dalloc_rand(hb * 3), *wo = dalloc_rand(Cb * Cb / 2);
            float *res = dalloc_rand(Mb * Cb), *out = dalloc_rand(Mb * Cb);
            char name[96];
            memset(&p, 0, sizeof p);
            p.kind = MVRT_OP_DWCONV1D_SILU;
            p.u.dwconv1d = (mvrt_dwconv1d_params_t){B, Cb, Lb, 3, xz, {Lb * Cb, 1, Cb}, mx, {hb * Lb, Lb, 1}, wx,
                                                    hb, yz + hb * Lb, {Cb * Lb, Lb, 1}, wz, 0, NULL, 0};
            snprintf(name, sizeof name, "dwconv1d+silu two-part b256 C%lld L%lld", (long long)Cb, (long long)Lb);
            bench(name, &p, 0, 2.0 * Mb * Cb * 4);
            /* the 16-bit graph's form: 16-bit xz in, a 16-bit copy of u out
             * (the buffers' bits read as bf16 values) */
            p.u.dwconv1d.x16 = MVRT_STORAGE16_BF16;
            p.u.dwconv1d.y_copy = res, p.u.dwconv1d.y_copy16 = MVRT_STORAGE16_BF16;
            snprintf(name, sizeof name, "dwconv1d+silu two-part b256 C%lld L%lld x16 copy16", (long long)Cb,
                     (long long)Lb);
            bench(name, &p, 0, Mb * Cb * (2.0 + 4) + Mb * hb * 2.0);
            memset(&p, 0, sizeof p);
            p.kind = MVRT_OP_LINEAR;
            mvrt_linear_params_t *l = &p.u.linear;
            l->batch = B, l->M = Lb, l->N = Cb, l->K = Cb;
            l->A = yz, l->lda = Lb, l->trans_a = 1, l->batch_stride_a = Cb * Lb;
            l->B = wo, l->ldb = Cb, l->trans_b = 1, l->b16 = MVRT_STORAGE16_BF16, l->b_constant = 1;
            l->Y = out, l->ldy = Cb, l->batch_stride_y = Lb * Cb, l->beta = 1.f, l->residual = res;
            l->math = MVRT_MATH_BF16;
            snprintf(name, sizeof name, "out_proj b256 M%lld N%lld K%lld bf16 +res", (long long)Lb, (long long)Cb,
                     (long long)Cb);
            bench(name, &p, 2.0 * Mb * Cb * Cb, Mb * Cb * (4.0 + 4 + 4 + 2 + 2));
        }
        float *sx = dalloc_rand(128 * 3 * 224 * 224), *sw = dalloc_rand(64 * 27), *sb = dalloc_rand(64);
        float *sy = dalloc_rand(128 * 112 * 112 * 64 / 2);
        memset(&p, 0, sizeof p);
        p.kind = MVRT_OP_CONV2D;
        p.u.conv2d = (mvrt_conv2d_params_t){128, 3, 224, 224, 64, 112, 112, 3, 2, 1, sx, sw, sb, NULL, sy, MVRT_ACT_RELU,
                                            MVRT_MATH_BF16, 0, MVRT_STORAGE16_BF16, 0, 0, NULL, NULL};
        bench("conv2d stem b128 3->64 224 s2 ->NHWC bf16 relu", &p, 2.0 * 128 * 64 * 27 * 112 * 112,
              128 * (3 * 224 * 224 * 4.0 + 112 * 112 * 64 * 2.0));
    }
    vt->device_close(dev);
    return 0;
}
