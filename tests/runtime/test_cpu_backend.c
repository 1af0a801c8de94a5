/* CPU backend basics through the public API: open, list, device info,
 * threads, allocation, copies, fills, streams, events, borrowed memory,
 * and concurrent use of the registry. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

/* Opening from several threads at once, as the first calls of the process:
 * the registry's lazy loading must be race-free and give one answer. */
typedef struct opener {
    mvrt_status_t status;
    int available;
    char name[16];
} opener_t;

static void *open_and_list(void *arg)
{
    opener_t *o = arg;
    mvrt_backend_entry_t e[3];
    size_t n = 0;
    if (mvrt_backend_list(e, 3, &n) == MVRT_OK && n == 3)
        o->available = e[0].available;
    mvrt_backend_t *be = NULL;
    o->status = mvrt_backend_open("cpu", &be);
    if (o->status == MVRT_OK) {
        snprintf(o->name, sizeof o->name, "%s", mvrt_backend_name(be));
        mvrt_buffer_t *buf = NULL;
        if (mvrt_buffer_alloc(be, 4096, &buf) != MVRT_OK)
            o->status = MVRT_ERR_INTERNAL;
        mvrt_buffer_free(buf);
        mvrt_backend_close(be);
    }
    return NULL;
}

static void test_concurrent_open(void)
{
    enum { T = 8 };
    pthread_t th[T];
    opener_t res[T];
    memset(res, 0, sizeof res);
    for (int i = 0; i < T; i++)
        pthread_create(&th[i], NULL, open_and_list, &res[i]);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    if (res[0].status == MVRT_ERR_UNAVAILABLE) {
        fprintf(stderr, "SKIP: cpu backend unavailable\n");
        exit(MVRT_TEST_SKIP);
    }
    for (int i = 0; i < T; i++) {
        CHECK(res[i].status == MVRT_OK);
        CHECK(res[i].available == 1);
        CHECK(strcmp(res[i].name, "cpu") == 0);
    }
}

static void test_list(void)
{
    mvrt_backend_entry_t e[4];
    memset(e, 0x5a, sizeof e);
    size_t n = 0;
    CHECK_OK(mvrt_backend_list(e, 4, &n));
    CHECK(n == 3);
    CHECK(strcmp(e[0].name, "cpu") == 0);
    CHECK(strcmp(e[1].name, "cuda") == 0);
    CHECK(strcmp(e[2].name, "hip") == 0);
    CHECK(e[0].available == 1 && e[0].device_count == 1);
    CHECK(strcmp(e[0].reason, "") == 0);
    const char *suffix = "/libmvrt_backend_cpu.so";
    size_t pl = strlen(e[0].path), sl = strlen(suffix);
    CHECK(pl > sl && strcmp(e[0].path + pl - sl, suffix) == 0);
    for (int i = 1; i < 3; i++) {
        if (!e[i].available) {
            CHECK(e[i].device_count == 0);
            CHECK(strlen(e[i].reason) > 0);
            CHECK(strcmp(e[i].path, "") == 0);
        }
    }
    /* Only `capacity` entries are written. */
    unsigned char *tail = (unsigned char *)&e[3];
    int untouched = 1;
    for (size_t i = 0; i < sizeof e[3]; i++)
        untouched &= tail[i] == 0x5a;
    CHECK(untouched);
    mvrt_backend_entry_t one[2];
    memset(one, 0x5a, sizeof one);
    CHECK_OK(mvrt_backend_list(one, 1, &n));
    CHECK(n == 3 && strcmp(one[0].name, "cpu") == 0 && (unsigned char)one[1].name[0] == 0x5a);
    CHECK_OK(mvrt_backend_list(NULL, 0, &n));
    CHECK(n == 3);
}

static void test_open_and_info(void)
{
    mvrt_backend_t *cpu = tu_open_or_skip("cpu");
    CHECK(strcmp(mvrt_backend_name(cpu), "cpu") == 0);
    mvrt_device_info_t info;
    memset(&info, 0, sizeof info);
    CHECK_OK(mvrt_backend_device_info(cpu, &info));
    CHECK(strcmp(info.backend, "cpu") == 0);
    CHECK(info.device_index == 0);
    CHECK(strlen(info.name) > 0);
    CHECK(strlen(info.vendor) > 0);
    CHECK(info.total_memory >= (64ull << 20)); /* any machine that runs this has 64 MiB */
    CHECK(info.warp_width == 4 || info.warp_width == 8 || info.warp_width == 16);
    CHECK(info.compute_units >= 1);
    CHECK(info.arch_major == 0 && info.arch_minor == 0);
    CHECK(strncmp(info.features, "scan:", 5) == 0);
    int default_threads = info.compute_units;

    CHECK_OK(mvrt_backend_set_num_threads(cpu, 1));
    CHECK_OK(mvrt_backend_device_info(cpu, &info));
    CHECK(info.compute_units == 1);
    CHECK_OK(mvrt_backend_set_num_threads(cpu, 3));
    CHECK_OK(mvrt_backend_device_info(cpu, &info));
    CHECK(info.compute_units == 3);
    CHECK_OK(mvrt_backend_set_num_threads(cpu, 0));
    CHECK_OK(mvrt_backend_device_info(cpu, &info));
    CHECK(info.compute_units == default_threads);

    /* "cpu:0" is the same device; auto picks some available backend. */
    mvrt_backend_t *cpu0 = NULL;
    CHECK_OK(mvrt_backend_open("cpu:0", &cpu0));
    CHECK(cpu0 != NULL && cpu0 != cpu);
    mvrt_backend_close(cpu0);
    mvrt_backend_t *any = NULL;
    CHECK_OK(mvrt_backend_open("auto", &any));
    if (any) {
        const char *n = mvrt_backend_name(any);
        CHECK(strcmp(n, "cpu") == 0 || strcmp(n, "cuda") == 0 || strcmp(n, "hip") == 0);
        mvrt_backend_close(any);
    }
    mvrt_backend_close(NULL); /* no-op */
    mvrt_backend_close(cpu);
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + seed * 7u + 1u);
}

static void test_memory(void)
{
    mvrt_backend_t *cpu = tu_open_or_skip("cpu");
    enum { N = 1000 };
    mvrt_buffer_t *a = NULL, *b = NULL;
    CHECK_OK(mvrt_buffer_alloc(cpu, N, &a));
    CHECK_OK(mvrt_buffer_alloc(cpu, N, &b));
    if (!a || !b)
        return;
    CHECK(mvrt_buffer_size(a) == N);
    CHECK(mvrt_buffer_backend(a) == cpu);
    CHECK(mvrt_buffer_data(a) != NULL && (uintptr_t)mvrt_buffer_data(a) % 256 == 0);
    CHECK(mvrt_buffer_data(a) != mvrt_buffer_data(b));

    unsigned char src[N], dst[N], expect[N];
    fill_pattern(src, N, 1);
    /* h2d then d2h, whole and at offsets. */
    CHECK_OK(mvrt_copy_host_to_device(NULL, a, 0, src, N));
    memset(dst, 0, N);
    CHECK_OK(mvrt_copy_device_to_host(NULL, dst, a, 0, N));
    CHECK(memcmp(src, dst, N) == 0);
    CHECK_OK(mvrt_copy_host_to_device(NULL, a, 10, src + 500, 100));
    memcpy(expect, src, N);
    memcpy(expect + 10, src + 500, 100);
    CHECK_OK(mvrt_copy_device_to_host(NULL, dst, a, 0, N));
    CHECK(memcmp(expect, dst, N) == 0);
    memset(dst, 0, N);
    CHECK_OK(mvrt_copy_device_to_host(NULL, dst, a, N - 7, 7));
    CHECK(memcmp(dst, expect + N - 7, 7) == 0);
    /* The exact end of the buffer, and zero bytes there, are in range. */
    CHECK_OK(mvrt_copy_host_to_device(NULL, a, N, src, 0));
    /* d2d */
    fill_pattern(src, N, 2);
    CHECK_OK(mvrt_copy_host_to_device(NULL, b, 0, src, N));
    CHECK_OK(mvrt_copy_device_to_device(NULL, a, 100, b, 300, 200));
    memcpy(expect + 100, src + 300, 200);
    CHECK_OK(mvrt_copy_device_to_host(NULL, dst, a, 0, N));
    CHECK(memcmp(expect, dst, N) == 0);

    /* fill with 1-, 2- and 4-byte patterns; bytes outside stay. */
    const uint8_t p1 = 0xab;
    const uint16_t p2 = 0x1234;
    const uint32_t p4 = 0xdeadbeef;
    CHECK_OK(mvrt_copy_host_to_device(NULL, a, 0, src, N));
    memcpy(expect, src, N);
    CHECK_OK(mvrt_buffer_fill(NULL, a, 3, 5, &p1, 1));
    memset(expect + 3, 0xab, 5);
    CHECK_OK(mvrt_buffer_fill(NULL, a, 20, 14, &p2, 2));
    for (int i = 0; i < 7; i++)
        memcpy(expect + 20 + 2 * i, &p2, 2);
    CHECK_OK(mvrt_buffer_fill(NULL, a, 64, 36, &p4, 4));
    for (int i = 0; i < 9; i++)
        memcpy(expect + 64 + 4 * i, &p4, 4);
    CHECK_OK(mvrt_buffer_fill(NULL, a, 996, 4, &p4, 4)); /* up to the very end */
    memcpy(expect + 996, &p4, 4);
    CHECK_OK(mvrt_buffer_fill(NULL, a, 200, 0, &p4, 4)); /* empty: nothing */
    CHECK_OK(mvrt_copy_device_to_host(NULL, dst, a, 0, N));
    CHECK(memcmp(expect, dst, N) == 0);

    /* Borrowed memory: mvrt writes into it and never frees it. */
    unsigned char host[256];
    memset(host, 0, sizeof host);
    mvrt_buffer_t *w = NULL;
    CHECK_OK(mvrt_buffer_wrap(cpu, host, sizeof host, &w));
    CHECK(mvrt_buffer_data(w) == host && mvrt_buffer_size(w) == sizeof host);
    CHECK(mvrt_buffer_backend(w) == cpu);
    CHECK_OK(mvrt_buffer_fill(NULL, w, 16, 8, &p4, 4));
    CHECK(memcmp(host + 16, &p4, 4) == 0 && memcmp(host + 20, &p4, 4) == 0);
    CHECK(host[15] == 0 && host[24] == 0);
    CHECK_OK(mvrt_copy_device_to_device(NULL, w, 100, a, 0, 50));
    CHECK(memcmp(host + 100, expect, 50) == 0);
    mvrt_buffer_free(w); /* must not free `host` (ASan would see it) */
    host[0] = 1;
    CHECK(host[0] == 1);

    mvrt_buffer_free(NULL);
    mvrt_buffer_free(a);
    mvrt_buffer_free(b);
    mvrt_backend_close(cpu);
}

static void test_streams_events(void)
{
    mvrt_backend_t *cpu = tu_open_or_skip("cpu");
    mvrt_stream_t *s = NULL, *w = NULL;
    CHECK_OK(mvrt_stream_create(cpu, &s));
    CHECK(s != NULL && mvrt_stream_backend(s) == cpu);
    CHECK(mvrt_stream_native(s) == NULL);
    CHECK_OK(mvrt_stream_wrap(cpu, NULL, &w));
    CHECK(w != NULL && mvrt_stream_backend(w) == cpu && w != s);

    mvrt_buffer_t *buf = NULL;
    CHECK_OK(mvrt_buffer_alloc(cpu, 64, &buf));
    unsigned char src[64], dst[64];
    fill_pattern(src, 64, 3);
    CHECK_OK(mvrt_copy_host_to_device(s, buf, 0, src, 64));
    CHECK_OK(mvrt_stream_synchronize(s));
    CHECK_OK(mvrt_copy_device_to_host(w, dst, buf, 0, 64));
    CHECK_OK(mvrt_stream_synchronize(w));
    CHECK(memcmp(src, dst, 64) == 0);

    mvrt_event_t *e1 = NULL, *e2 = NULL;
    CHECK_OK(mvrt_event_create(cpu, &e1));
    CHECK_OK(mvrt_event_create(cpu, &e2));
    CHECK_OK(mvrt_event_record(e1, s));
    /* Some host time passes between the records. */
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CHECK_OK(mvrt_event_record(e2, NULL)); /* default stream */
    CHECK_OK(mvrt_stream_wait_event(w, e1));
    CHECK_OK(mvrt_stream_wait_event(NULL, e2));
    CHECK_OK(mvrt_event_synchronize(e2));
    float ms = -1.0f;
    CHECK_OK(mvrt_event_elapsed_ms(e1, e2, &ms));
    CHECK(ms >= 1.0f); /* slept 2 ms; monotonic clock */
    CHECK_OK(mvrt_event_elapsed_ms(e1, e1, &ms));
    CHECK(ms == 0.0f);

    mvrt_event_destroy(e1);
    mvrt_event_destroy(e2);
    mvrt_event_destroy(NULL);
    mvrt_buffer_free(buf);
    mvrt_stream_destroy(s);
    mvrt_stream_destroy(w);
    mvrt_stream_destroy(NULL);
    mvrt_backend_close(cpu);
}

int main(void)
{
    test_concurrent_open();
    test_list();
    test_open_and_info();
    test_memory();
    test_streams_events();
    TEST_END();
}
