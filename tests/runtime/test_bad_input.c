/* Bad input to every public function of backend.h, memory.h and tensor.h:
 * the right status, a message naming the argument, no crash, and nothing
 * written (buffers hold a sentinel before and after; out-parameters keep
 * their old value). Two opens of "cpu" are two distinct backends. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

#define INVALID MVRT_ERR_INVALID_ARGUMENT
#define SENTINEL 0xA5
#define BUF_BYTES 128

static void *const POISON = (void *)(uintptr_t)0x5151;

static void sentinel(mvrt_buffer_t *b)
{
    memset(mvrt_buffer_data(b), SENTINEL, mvrt_buffer_size(b));
}

static int intact(const mvrt_buffer_t *b)
{
    const unsigned char *p = mvrt_buffer_data(b);
    for (size_t i = 0; i < mvrt_buffer_size(b); i++)
        if (p[i] != SENTINEL)
            return 0;
    return 1;
}

static int host_intact(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != SENTINEL)
            return 0;
    return 1;
}

static void test_backend_api(mvrt_backend_t *be)
{
    size_t n = 99;
    mvrt_backend_entry_t e[3];
    CHECK_ERR(mvrt_backend_list(e, 3, NULL), INVALID, "mvrt_backend_list", "out_count");
    CHECK_ERR(mvrt_backend_list(NULL, 2, &n), INVALID, "mvrt_backend_list", "out_entries",
              "capacity is 2");
    CHECK(n == 99);

    const char *bad_specs[] = {"", "gpu", "CPU", "cpu:", "cpu:x", "cpu:-1", "cpu:1x", "cuda:+1",
                               "auto:0", "cpu:99999999999999", " cpu", "cpu ", "cpu:0:0"};
    for (size_t i = 0; i < sizeof bad_specs / sizeof bad_specs[0]; i++) {
        mvrt_backend_t *out = POISON;
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", bad_specs[i]);
        CHECK_ERR(mvrt_backend_open(bad_specs[i], &out), INVALID, "mvrt_backend_open", quoted);
        CHECK(out == POISON);
    }
    mvrt_backend_t *out = POISON;
    CHECK_ERR(mvrt_backend_open(NULL, &out), INVALID, "mvrt_backend_open", "spec is NULL");
    CHECK(out == POISON);
    CHECK_ERR(mvrt_backend_open("cpu", NULL), INVALID, "mvrt_backend_open", "out_backend");
    CHECK_ERR(mvrt_backend_open("cpu:1", &out), INVALID, "device index 1 out of range",
              "1 device(s)");
    CHECK(out == POISON);
    CHECK_ERR(mvrt_backend_open("cpu:7", &out), INVALID, "device index 7", "1 device(s)");
    CHECK(out == POISON);

    mvrt_device_info_t info;
    memset(&info, SENTINEL, sizeof info);
    CHECK_ERR(mvrt_backend_device_info(NULL, &info), INVALID, "mvrt_backend_device_info",
              "backend is NULL");
    CHECK(host_intact((const unsigned char *)&info, sizeof info));
    CHECK_ERR(mvrt_backend_device_info(be, NULL), INVALID, "out_info");

    CHECK_ERR(mvrt_backend_set_num_threads(NULL, 1), INVALID, "mvrt_backend_set_num_threads",
              "backend is NULL");
    CHECK_ERR(mvrt_backend_set_num_threads(be, -1), INVALID, "mvrt_backend_set_num_threads",
              "n is -1");
    CHECK_OK(mvrt_backend_device_info(be, &info));
    CHECK(info.compute_units >= 1); /* the failed call changed nothing usable */
    mvrt_backend_close(NULL);
    CHECK(mvrt_backend_name(NULL) != NULL);
}

static void test_buffers(mvrt_backend_t *be)
{
    mvrt_buffer_t *out = POISON;
    CHECK_ERR(mvrt_buffer_alloc(NULL, 16, &out), INVALID, "mvrt_buffer_alloc", "backend is NULL");
    CHECK_ERR(mvrt_buffer_alloc(be, 0, &out), INVALID, "mvrt_buffer_alloc", "bytes is 0");
    CHECK_ERR(mvrt_buffer_alloc(be, 16, NULL), INVALID, "mvrt_buffer_alloc", "out_buffer");
    CHECK(out == POISON);
    /* Impossible sizes fail cleanly with the size in the message. */
    CHECK_ERR(mvrt_buffer_alloc(be, SIZE_MAX, &out), MVRT_ERR_OUT_OF_MEMORY, "18446744073709551615");
    CHECK_ERR(mvrt_buffer_alloc(be, (size_t)1 << 62, &out), MVRT_ERR_OUT_OF_MEMORY,
              "4611686018427387904");
    CHECK(out == POISON);

    unsigned char host[32];
    CHECK_ERR(mvrt_buffer_wrap(NULL, host, 32, &out), INVALID, "mvrt_buffer_wrap", "backend is NULL");
    CHECK_ERR(mvrt_buffer_wrap(be, NULL, 32, &out), INVALID, "mvrt_buffer_wrap", "device_ptr is NULL");
    CHECK_ERR(mvrt_buffer_wrap(be, host, 0, &out), INVALID, "mvrt_buffer_wrap", "bytes is 0");
    CHECK_ERR(mvrt_buffer_wrap(be, host, 32, NULL), INVALID, "mvrt_buffer_wrap", "out_buffer");
    CHECK_ERR(mvrt_buffer_wrap(be, (void *)(uintptr_t)(UINTPTR_MAX - 15), 32, &out), INVALID,
              "mvrt_buffer_wrap", "wraps around");
    CHECK(out == POISON);

    mvrt_buffer_free(NULL);
    CHECK(mvrt_buffer_data(NULL) == NULL);
    CHECK(mvrt_buffer_size(NULL) == 0);
    CHECK(mvrt_buffer_backend(NULL) == NULL);
}

static void test_copies(mvrt_backend_t *be, mvrt_backend_t *other)
{
    mvrt_buffer_t *a = NULL, *b = NULL, *x = NULL;
    CHECK_OK(mvrt_buffer_alloc(be, BUF_BYTES, &a));
    CHECK_OK(mvrt_buffer_alloc(be, BUF_BYTES, &b));
    CHECK_OK(mvrt_buffer_alloc(other, BUF_BYTES, &x)); /* same kind, other backend */
    mvrt_stream_t *xs = NULL;
    CHECK_OK(mvrt_stream_create(other, &xs));
    if (!a || !b || !x || !xs)
        return;
    sentinel(a);
    sentinel(b);
    sentinel(x);
    unsigned char host[2 * BUF_BYTES];
    memset(host, 0x11, sizeof host);
    unsigned char hdst[2 * BUF_BYTES];
    memset(hdst, SENTINEL, sizeof hdst);

    /* host -> device */
    const char *h2d = "mvrt_copy_host_to_device";
    CHECK_ERR(mvrt_copy_host_to_device(NULL, NULL, 0, host, 8), INVALID, h2d, "dst is NULL");
    CHECK_ERR(mvrt_copy_host_to_device(NULL, a, 0, NULL, 8), INVALID, h2d, "src is NULL");
    CHECK_ERR(mvrt_copy_host_to_device(NULL, a, 100, host, 50), INVALID,
              "mvrt_copy_host_to_device: dst_offset 100 + bytes 50 exceeds buffer size 128");
    CHECK_ERR(mvrt_copy_host_to_device(NULL, a, 0, host, 129), INVALID, h2d, "bytes 129");
    CHECK_ERR(mvrt_copy_host_to_device(NULL, a, 129, host, 0), INVALID, h2d, "dst_offset 129");
    CHECK_ERR(mvrt_copy_host_to_device(NULL, a, SIZE_MAX, host, 2), INVALID, h2d, "dst_offset");
    CHECK_ERR(mvrt_copy_host_to_device(NULL, a, 8, host, SIZE_MAX - 4), INVALID, h2d, "bytes");
    CHECK_ERR(mvrt_copy_host_to_device(xs, a, 0, host, 8), INVALID, h2d, "stream", "dst",
              "different backends");
    CHECK(intact(a));

    /* device -> host */
    const char *d2h = "mvrt_copy_device_to_host";
    CHECK_ERR(mvrt_copy_device_to_host(NULL, NULL, a, 0, 8), INVALID, d2h, "dst is NULL");
    CHECK_ERR(mvrt_copy_device_to_host(NULL, hdst, NULL, 0, 8), INVALID, d2h, "src is NULL");
    CHECK_ERR(mvrt_copy_device_to_host(NULL, hdst, a, 120, 16), INVALID, d2h,
              "src_offset 120 + bytes 16 exceeds buffer size 128");
    CHECK_ERR(mvrt_copy_device_to_host(NULL, hdst, a, SIZE_MAX, SIZE_MAX), INVALID, d2h,
              "src_offset");
    CHECK_ERR(mvrt_copy_device_to_host(xs, hdst, a, 0, 8), INVALID, d2h, "different backends");
    CHECK(host_intact(hdst, sizeof hdst));

    /* device -> device */
    const char *d2d = "mvrt_copy_device_to_device";
    CHECK_ERR(mvrt_copy_device_to_device(NULL, NULL, 0, b, 0, 8), INVALID, d2d, "dst is NULL");
    CHECK_ERR(mvrt_copy_device_to_device(NULL, a, 0, NULL, 0, 8), INVALID, d2d, "src is NULL");
    CHECK_ERR(mvrt_copy_device_to_device(NULL, a, 64, b, 0, 65), INVALID, d2d,
              "dst_offset 64 + bytes 65 exceeds buffer size 128");
    CHECK_ERR(mvrt_copy_device_to_device(NULL, a, 0, b, 64, 65), INVALID, d2d,
              "src_offset 64 + bytes 65 exceeds buffer size 128");
    CHECK_ERR(mvrt_copy_device_to_device(NULL, a, 0, x, 0, 8), INVALID, d2d, "dst", "src",
              "different backends");
    CHECK_ERR(mvrt_copy_device_to_device(NULL, x, 0, a, 0, 8), INVALID, d2d, "different backends");
    CHECK_ERR(mvrt_copy_device_to_device(xs, a, 0, b, 0, 8), INVALID, d2d, "stream",
              "different backends");
    CHECK(intact(a) && intact(b) && intact(x));

    /* fill */
    const char *fill = "mvrt_buffer_fill";
    const uint32_t pat = 0x01020304;
    CHECK_ERR(mvrt_buffer_fill(NULL, NULL, 0, 8, &pat, 4), INVALID, fill, "buffer is NULL");
    CHECK_ERR(mvrt_buffer_fill(NULL, a, 0, 8, NULL, 4), INVALID, fill, "pattern is NULL");
    CHECK_ERR(mvrt_buffer_fill(NULL, a, 0, 8, &pat, 3), INVALID, fill, "pattern_size is 3");
    CHECK_ERR(mvrt_buffer_fill(NULL, a, 0, 8, &pat, 8), INVALID, fill, "pattern_size is 8");
    CHECK_ERR(mvrt_buffer_fill(NULL, a, 0, 8, &pat, 0), INVALID, fill, "pattern_size is 0");
    CHECK_ERR(mvrt_buffer_fill(NULL, a, 2, 8, &pat, 4), INVALID, fill, "offset 2",
              "multiple of pattern_size 4");
    CHECK_ERR(mvrt_buffer_fill(NULL, a, 0, 6, &pat, 4), INVALID, fill, "bytes 6",
              "multiple of pattern_size 4");
    CHECK_ERR(mvrt_buffer_fill(NULL, a, 1, 1, &pat, 2), INVALID, fill, "offset 1");
    CHECK_ERR(mvrt_buffer_fill(NULL, a, 124, 8, &pat, 4), INVALID, fill,
              "offset 124 + bytes 8 exceeds buffer size 128");
    CHECK_ERR(mvrt_buffer_fill(NULL, a, SIZE_MAX - 3, 8, &pat, 4), INVALID, fill, "exceeds");
    CHECK_ERR(mvrt_buffer_fill(xs, a, 0, 8, &pat, 4), INVALID, fill, "different backends");
    CHECK(intact(a));

    mvrt_stream_destroy(xs);
    mvrt_buffer_free(a);
    mvrt_buffer_free(b);
    mvrt_buffer_free(x);
}

static void test_streams_events(mvrt_backend_t *be, mvrt_backend_t *other)
{
    mvrt_stream_t *s = POISON;
    CHECK_ERR(mvrt_stream_create(NULL, &s), INVALID, "mvrt_stream_create", "backend is NULL");
    CHECK_ERR(mvrt_stream_create(be, NULL), INVALID, "mvrt_stream_create", "out_stream");
    CHECK_ERR(mvrt_stream_wrap(NULL, NULL, &s), INVALID, "mvrt_stream_wrap", "backend is NULL");
    CHECK_ERR(mvrt_stream_wrap(be, NULL, NULL), INVALID, "mvrt_stream_wrap", "out_stream");
    /* The CPU backend has no native streams: only NULL can be wrapped. */
    CHECK_ERR(mvrt_stream_wrap(be, (void *)(uintptr_t)0x1000, &s), INVALID, "mvrt_stream_wrap",
              "native_stream");
    CHECK(s == POISON);
    CHECK_ERR(mvrt_stream_synchronize(NULL), INVALID, "mvrt_stream_synchronize", "stream is NULL");
    mvrt_stream_destroy(NULL);
    CHECK(mvrt_stream_backend(NULL) == NULL);
    CHECK(mvrt_stream_native(NULL) == NULL);

    mvrt_event_t *e = POISON;
    CHECK_ERR(mvrt_event_create(NULL, &e), INVALID, "mvrt_event_create", "backend is NULL");
    CHECK_ERR(mvrt_event_create(be, NULL), INVALID, "mvrt_event_create", "out_event");
    CHECK(e == POISON);
    mvrt_event_destroy(NULL);

    mvrt_stream_t *xs = NULL;
    mvrt_event_t *e1 = NULL, *e2 = NULL, *xe = NULL;
    CHECK_OK(mvrt_stream_create(other, &xs));
    CHECK_OK(mvrt_event_create(be, &e1));
    CHECK_OK(mvrt_event_create(be, &e2));
    CHECK_OK(mvrt_event_create(other, &xe));
    if (!xs || !e1 || !e2 || !xe)
        return;
    CHECK_ERR(mvrt_event_record(NULL, NULL), INVALID, "mvrt_event_record", "event is NULL");
    CHECK_ERR(mvrt_event_record(e1, xs), INVALID, "mvrt_event_record", "different backends");
    CHECK_ERR(mvrt_stream_wait_event(NULL, NULL), INVALID, "mvrt_stream_wait_event",
              "event is NULL");
    CHECK_ERR(mvrt_stream_wait_event(xs, e1), INVALID, "mvrt_stream_wait_event",
              "different backends");
    CHECK_ERR(mvrt_event_synchronize(NULL), INVALID, "mvrt_event_synchronize", "event is NULL");

    float ms = 123.0f;
    const char *el = "mvrt_event_elapsed_ms";
    CHECK_ERR(mvrt_event_elapsed_ms(NULL, e2, &ms), INVALID, el, "start is NULL");
    CHECK_ERR(mvrt_event_elapsed_ms(e1, NULL, &ms), INVALID, el, "end is NULL");
    CHECK_ERR(mvrt_event_elapsed_ms(e1, e2, NULL), INVALID, el, "out_ms is NULL");
    CHECK_ERR(mvrt_event_elapsed_ms(e1, e2, &ms), INVALID, el, "start", "never been recorded");
    CHECK_OK(mvrt_event_record(e1, NULL));
    CHECK_ERR(mvrt_event_elapsed_ms(e1, e2, &ms), INVALID, el, "end", "never been recorded");
    CHECK_OK(mvrt_event_record(xe, xs));
    CHECK_ERR(mvrt_event_elapsed_ms(e1, xe, &ms), INVALID, el, "different backends");
    CHECK(ms == 123.0f);

    mvrt_event_destroy(e1);
    mvrt_event_destroy(e2);
    mvrt_event_destroy(xe);
    mvrt_stream_destroy(xs);
}

static void test_tensors(void)
{
    int64_t shape[4] = {2, 3, 4, 5};
    mvrt_tensor_t t = mvrt_tensor_make(NULL, 16, MVRT_DTYPE_F16, 3, shape);
    CHECK(t.rank == 3 && t.offset == 16 && t.dtype == MVRT_DTYPE_F16 && t.buffer == NULL);
    CHECK(t.shape[0] == 2 && t.shape[1] == 3 && t.shape[2] == 4);
    CHECK(t.strides[0] == 12 && t.strides[1] == 4 && t.strides[2] == 1);
    CHECK(t.shape[3] == 0 && t.strides[3] == 0); /* entries past rank ignored */
    CHECK(mvrt_tensor_numel(&t) == 24);
    CHECK(mvrt_tensor_is_contiguous(&t) == 1);
    t.strides[1] = 5;
    CHECK(mvrt_tensor_is_contiguous(&t) == 0);

    mvrt_tensor_t t4 = mvrt_tensor_make(NULL, 0, MVRT_DTYPE_F32, 4, shape);
    CHECK(t4.strides[0] == 60 && t4.strides[1] == 20 && t4.strides[2] == 5 && t4.strides[3] == 1);
    CHECK(mvrt_tensor_numel(&t4) == 120);

    /* Bad ranks / shapes. */
    mvrt_tensor_t r0 = mvrt_tensor_make(NULL, 0, MVRT_DTYPE_F32, 0, shape);
    CHECK(mvrt_tensor_numel(&r0) == 0 && mvrt_tensor_is_contiguous(&r0) == 0);
    mvrt_tensor_t r5 = mvrt_tensor_make(NULL, 0, MVRT_DTYPE_F32, 5, shape);
    CHECK(mvrt_tensor_numel(&r5) == 0 && mvrt_tensor_is_contiguous(&r5) == 0);
    mvrt_tensor_t rn = mvrt_tensor_make(NULL, 0, MVRT_DTYPE_F32, 2, NULL);
    CHECK(rn.rank == 2 && rn.shape[0] == 0 && rn.strides[0] == 0);
    CHECK(mvrt_tensor_numel(NULL) == 0);
    CHECK(mvrt_tensor_is_contiguous(NULL) == 0);
    int64_t neg[2] = {3, -2};
    mvrt_tensor_t tn = mvrt_tensor_make(NULL, 0, MVRT_DTYPE_F32, 2, neg);
    CHECK(mvrt_tensor_numel(&tn) == 0);

    /* Overflowing products: numel 0, strides saturate instead of wrapping. */
    int64_t huge[3] = {(int64_t)1 << 40, (int64_t)1 << 40, 8};
    mvrt_tensor_t th = mvrt_tensor_make(NULL, 0, MVRT_DTYPE_F32, 3, huge);
    CHECK(mvrt_tensor_numel(&th) == 0);
    CHECK(th.strides[2] == 1 && th.strides[1] == 8 && th.strides[0] == ((int64_t)1 << 43));
    int64_t huge4[4] = {4, (int64_t)1 << 40, (int64_t)1 << 40, 8};
    mvrt_tensor_t th4 = mvrt_tensor_make(NULL, 0, MVRT_DTYPE_F32, 4, huge4);
    CHECK(th4.strides[0] == INT64_MAX);
    CHECK(mvrt_tensor_numel(&th4) == 0);
    CHECK(mvrt_tensor_is_contiguous(&th4) == 0);
}

int main(void)
{
    mvrt_backend_t *be = tu_open_or_skip("cpu");
    mvrt_backend_t *other = tu_open_or_skip("cpu");
    CHECK(be != other);
    test_backend_api(be);
    test_buffers(be);
    test_copies(be, other);
    test_streams_events(be, other);
    test_tensors();
    mvrt_backend_close(be);
    mvrt_backend_close(other);
    TEST_END();
}
