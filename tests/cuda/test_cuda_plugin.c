/* GPU plugin basics at the ABI (the CUDA plugin, and the HIP plugin through
 * the same source): device info, allocation (and recovery
 * from out-of-memory), copies, 1/2/4-byte fills, streams (own and wrapped
 * foreign), events and timing, graph capture/replay, and CUDA errors mapped
 * to statuses with the CUDA error name. Exit 77 without a usable GPU.
 * usage: test_cuda_plugin PLUGIN_PATH */
#include "cuda_test_util.h"

static int fails;
#define EXPECT(cond, ...)                                                    \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fails++;                                                         \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                      \
            printf(__VA_ARGS__);                                             \
            printf("\n");                                                    \
        }                                                                    \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s PLUGIN\n", argv[0]); return 2; }
    void *dev;
    const mvrt_plugin_vtable_t *vt = tu_open_plugin(argv[1], &dev);
    const int is_hip = strcmp(vt->name, "hip") == 0;
    EXPECT(is_hip || strcmp(vt->name, "cuda") == 0, "name %s", vt->name);

    mvrt_device_info_t info;
    TU_CHECK(vt->device_info(dev, &info));
    EXPECT(strcmp(info.vendor, is_hip ? "AMD" : "NVIDIA") == 0, "vendor %s", info.vendor);
    /* 64-wide wavefronts on CDNA (MI200/MI300), 32 on RDNA and NVIDIA */
    EXPECT(info.warp_width == 32 || (is_hip && info.warp_width == 64), "warp %d", info.warp_width);
    EXPECT(info.compute_units > 0 && info.total_memory > 0, "SMs %d mem %llu", info.compute_units,
           (unsigned long long)info.total_memory);
    EXPECT(strncmp(info.features, is_hip ? "gfx" : "sm_", 3) == 0, "features %s", info.features);
    printf("device: %s, %d SMs, %s, %.1f GiB\n", info.name, info.compute_units, info.features,
           info.total_memory / 1073741824.0);

    void *s0 = vt->default_stream(dev);
    const size_t n = 1 << 20;
    void *a, *b;
    TU_CHECK(vt->mem_alloc(dev, n, &a));
    TU_CHECK(vt->mem_alloc(dev, n, &b));
    EXPECT(((uintptr_t)a & 255) == 0, "alignment");
    unsigned char *h = malloc(n), *h2 = malloc(n);
    for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 7 + 3);
    TU_CHECK(vt->copy_h2d(dev, s0, a, h, n));
    TU_CHECK(vt->copy_d2d(dev, s0, b, a, n));
    /* fills over sub-ranges: 1-byte at [16, 1040), 2-byte at [2048, 4096), 4-byte at [8192, n) */
    unsigned char p1 = 0xab;
    uint16_t p2 = 0x1234;
    uint32_t p4 = 0xdeadbeefu;
    TU_CHECK(vt->fill(dev, s0, (char *)b + 16, 1024, &p1, 1));
    TU_CHECK(vt->fill(dev, s0, (char *)b + 2048, 2048, &p2, 2));
    TU_CHECK(vt->fill(dev, s0, (char *)b + 8192, n - 8192, &p4, 4));
    TU_CHECK(vt->copy_d2h(dev, s0, h2, b, n));
    TU_CHECK(vt->stream_synchronize(dev, s0));
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char want = h[i];
        if (i >= 16 && i < 1040) want = 0xab;
        else if (i >= 2048 && i < 4096) want = ((const unsigned char *)&p2)[i & 1];
        else if (i >= 8192) want = ((const unsigned char *)&p4)[i & 3];
        if (h2[i] != want) bad++;
    }
    EXPECT(bad == 0, "%d bytes wrong after copy+fill", bad);

    /* own stream + events */
    void *s1, *e0, *e1;
    TU_CHECK(vt->stream_create(dev, &s1));
    TU_CHECK(vt->event_create(dev, &e0));
    TU_CHECK(vt->event_create(dev, &e1));
    TU_CHECK(vt->event_record(dev, e0, s1));
    for (int i = 0; i < 20; i++) TU_CHECK(vt->copy_d2d(dev, s1, a, b, n));
    TU_CHECK(vt->event_record(dev, e1, s1));
    TU_CHECK(vt->stream_wait_event(dev, s0, e1));
    TU_CHECK(vt->event_synchronize(dev, e1));
    float ms = -1;
    TU_CHECK(vt->event_elapsed_ms(dev, e0, e1, &ms));
    EXPECT(ms >= 0 && ms < 1000, "elapsed %g ms", ms);

    /* wrapping a foreign stream: usable, and destroying the wrapper leaves it alive */
    void *native = vt->stream_native(dev, s1);
    void *w;
    TU_CHECK(vt->stream_wrap(dev, native, &w));
    EXPECT(vt->stream_native(dev, w) == native, "wrapped native handle");
    TU_CHECK(vt->copy_d2d(dev, w, a, b, n));
    vt->stream_destroy(dev, w);
    TU_CHECK(vt->copy_d2d(dev, s1, a, b, n)); /* the native stream still works */
    TU_CHECK(vt->stream_synchronize(dev, s1));

    /* out of memory is reported, and the backend stays usable */
    void *huge = NULL;
    tu_last_error[0] = 0;
    mvrt_status_t st = vt->mem_alloc(dev, (size_t)1 << 50, &huge);
    EXPECT(st == MVRT_ERR_OUT_OF_MEMORY, "1 PiB allocation returned %d", (int)st);
    EXPECT(strstr(tu_last_error, "cudaError") != NULL, "OOM message: '%s'", tu_last_error);
    printf("OOM message: %s\n", tu_last_error);
    void *c;
    TU_CHECK(vt->mem_alloc(dev, n, &c));

    /* CUDA error mapping: timing against an event that was never recorded
     * is refused by CUDA (a non-sticky error) */
    void *e2;
    TU_CHECK(vt->event_create(dev, &e2));
    tu_last_error[0] = 0;
    st = vt->event_elapsed_ms(dev, e2, e1, &ms);
    EXPECT(st == MVRT_ERR_DEVICE && strstr(tu_last_error, "cudaError") != NULL, "unrecorded event: %d '%s'",
           (int)st, tu_last_error);
    printf("CUDA error message: %s\n", tu_last_error);
    vt->event_destroy(dev, e2);
    TU_CHECK(vt->copy_d2d(dev, s0, c, a, n)); /* still usable */
    TU_CHECK(vt->stream_synchronize(dev, s0));

    /* graph capture / replay: fill c with a pattern and copy it to a */
    if (vt->graph_capture_begin) {
        uint32_t q = 0x01020304u;
        void *g = NULL;
        TU_CHECK(vt->graph_capture_begin(dev, s1));
        TU_CHECK(vt->fill(dev, s1, c, n, &q, 4));
        TU_CHECK(vt->copy_d2d(dev, s1, a, c, n));
        TU_CHECK(vt->graph_capture_end(dev, s1, &g));
        /* nothing ran yet: a still holds the old data */
        TU_CHECK(vt->copy_h2d(dev, s1, a, h, n));
        TU_CHECK(vt->graph_launch(dev, g, s1));
        TU_CHECK(vt->graph_launch(dev, g, s1));
        TU_CHECK(vt->copy_d2h(dev, s1, h2, a, n));
        TU_CHECK(vt->stream_synchronize(dev, s1));
        bad = 0;
        for (size_t i = 0; i < n; i++) if (h2[i] != ((const unsigned char *)&q)[i & 3]) bad++;
        EXPECT(bad == 0, "graph replay: %d bytes wrong", bad);
        vt->graph_destroy(dev, g);
    }

    vt->event_destroy(dev, e0);
    vt->event_destroy(dev, e1);
    vt->stream_destroy(dev, s1);
    vt->mem_free(dev, a);
    vt->mem_free(dev, b);
    vt->mem_free(dev, c);
    vt->device_close(dev);
    free(h);
    free(h2);
    printf("%s\n", fails ? "FAILED" : "all plugin checks passed");
    return fails ? 1 : 0;
}
