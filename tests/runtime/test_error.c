/* The error model: status strings, the per-thread last error, that a
 * successful call leaves it alone, truncation of long messages, versions
 * and dtype helpers. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

/* ---- per-thread messages ------------------------------------------------ */

typedef struct thread_result {
    char initial[64];     /* last error when the thread starts */
    char after[512];      /* after its own failure and the barrier */
    mvrt_status_t status;
} thread_result_t;

static pthread_barrier_t barrier;

static void *fail_open(void *arg)
{
    thread_result_t *r = arg;
    snprintf(r->initial, sizeof r->initial, "%s", mvrt_last_error());
    mvrt_backend_t *be = NULL;
    r->status = mvrt_backend_open("no-such-backend", &be);
    pthread_barrier_wait(&barrier); /* both have failed before either reads */
    pthread_barrier_wait(&barrier);
    snprintf(r->after, sizeof r->after, "%s", mvrt_last_error());
    return NULL;
}

static void *fail_alloc(void *arg)
{
    thread_result_t *r = arg;
    snprintf(r->initial, sizeof r->initial, "%s", mvrt_last_error());
    mvrt_buffer_t *buf = NULL;
    r->status = mvrt_buffer_alloc(NULL, 16, &buf);
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    snprintf(r->after, sizeof r->after, "%s", mvrt_last_error());
    return NULL;
}

static void *read_only(void *arg)
{
    thread_result_t *r = arg;
    snprintf(r->initial, sizeof r->initial, "%s", mvrt_last_error());
    return NULL;
}

static void test_thread_local_messages(void)
{
    /* Give the main thread a message of its own, too. */
    mvrt_tensor_t t;
    memset(&t, 0, sizeof t);
    CHECK_ERR(mvrt_backend_list(NULL, 0, NULL), MVRT_ERR_INVALID_ARGUMENT, "out_count");

    pthread_barrier_init(&barrier, NULL, 2);
    thread_result_t a, b, c;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&c, 0, sizeof c);
    pthread_t ta, tb, tc;
    pthread_create(&ta, NULL, fail_open, &a);
    pthread_create(&tb, NULL, fail_alloc, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_create(&tc, NULL, read_only, &c);
    pthread_join(tc, NULL);
    pthread_barrier_destroy(&barrier);

    CHECK(strcmp(a.initial, "") == 0);
    CHECK(strcmp(b.initial, "") == 0);
    CHECK(strcmp(c.initial, "") == 0);
    CHECK(a.status == MVRT_ERR_INVALID_ARGUMENT);
    CHECK(b.status == MVRT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(a.after, "mvrt_backend_open") && strstr(a.after, "no-such-backend"));
    CHECK(!strstr(a.after, "mvrt_buffer_alloc"));
    CHECK(strstr(b.after, "mvrt_buffer_alloc") && strstr(b.after, "backend is NULL"));
    CHECK(!strstr(b.after, "no-such-backend"));
    /* The main thread still has its own message. */
    CHECK(strstr(mvrt_last_error(), "out_count") != NULL);
}

/* A successful call must not touch the last error, also when it loads
 * plugins whose probing fails internally (this is the process's first
 * mvrt_backend_list, so loading happens inside it). */
static void test_success_keeps_message(void)
{
    mvrt_backend_t *be = NULL;
    CHECK_ERR(mvrt_backend_open(NULL, &be), MVRT_ERR_INVALID_ARGUMENT, "spec is NULL");
    char before[512];
    snprintf(before, sizeof before, "%s", mvrt_last_error());
    mvrt_backend_entry_t entries[3];
    size_t n = 0;
    CHECK_OK(mvrt_backend_list(entries, 3, &n));
    CHECK(n == 3);
    CHECK(strcmp(mvrt_last_error(), before) == 0);
    CHECK(mvrt_dtype_size(MVRT_DTYPE_F32) == 4);
    CHECK(strcmp(mvrt_last_error(), before) == 0);
}

static void test_long_message_truncated(void)
{
    static char spec[10000];
    memset(spec, 'x', sizeof spec - 1);
    spec[sizeof spec - 1] = '\0';
    mvrt_backend_t *be = NULL;
    CHECK_ERR(mvrt_backend_open(spec, &be), MVRT_ERR_INVALID_ARGUMENT, "mvrt_backend_open");
    size_t len = strlen(mvrt_last_error());
    CHECK(len > 1000 && len < sizeof spec);
    CHECK(len >= 3 && strcmp(mvrt_last_error() + len - 3, "...") == 0);
}

static void test_status_strings(void)
{
    const mvrt_status_t all[] = {MVRT_OK,
                                 MVRT_ERR_INVALID_ARGUMENT,
                                 MVRT_ERR_UNAVAILABLE,
                                 MVRT_ERR_OUT_OF_MEMORY,
                                 MVRT_ERR_UNSUPPORTED,
                                 MVRT_ERR_DEVICE,
                                 MVRT_ERR_IO,
                                 MVRT_ERR_NOT_FOUND,
                                 MVRT_ERR_INTERNAL};
    const char *names[] = {"MVRT_OK",
                           "MVRT_ERR_INVALID_ARGUMENT",
                           "MVRT_ERR_UNAVAILABLE",
                           "MVRT_ERR_OUT_OF_MEMORY",
                           "MVRT_ERR_UNSUPPORTED",
                           "MVRT_ERR_DEVICE",
                           "MVRT_ERR_IO",
                           "MVRT_ERR_NOT_FOUND",
                           "MVRT_ERR_INTERNAL"};
    size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        const char *s = mvrt_status_string(all[i]);
        CHECK(s != NULL);
        if (!s)
            continue;
        /* Starts with its own name followed by ':'. */
        size_t k = strlen(names[i]);
        CHECK(strncmp(s, names[i], k) == 0 && s[k] == ':');
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(s, mvrt_status_string(all[j])) != 0);
    }
    const char *unknown = mvrt_status_string((mvrt_status_t)12345);
    CHECK(unknown != NULL && strlen(unknown) > 0);
}

static void test_version(void)
{
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", MVRT_VERSION_MAJOR, MVRT_VERSION_MINOR,
             MVRT_VERSION_PATCH);
    CHECK(strcmp(mvrt_version(), expect) == 0);
    int major = -1, minor = -1, patch = -1;
    CHECK(sscanf(mvrt_version(), "%d.%d.%d", &major, &minor, &patch) == 3);
    CHECK(mvrt_version_number() == major * 10000 + minor * 100 + patch);
    CHECK(mvrt_version_number() == MVRT_VERSION_NUMBER);
}

static void test_dtypes(void)
{
    struct {
        mvrt_dtype_t d;
        size_t size;
        const char *name;
    } table[] = {
        {MVRT_DTYPE_F32, 4, "f32"}, {MVRT_DTYPE_F16, 2, "f16"}, {MVRT_DTYPE_BF16, 2, "bf16"},
        {MVRT_DTYPE_F64, 8, "f64"}, {MVRT_DTYPE_I32, 4, "i32"}, {MVRT_DTYPE_I64, 8, "i64"},
        {MVRT_DTYPE_U8, 1, "u8"},   {MVRT_DTYPE_C64, 8, "c64"}, {MVRT_DTYPE_INVALID, 0, "invalid"},
        {(mvrt_dtype_t)99, 0, "invalid"}, {(mvrt_dtype_t)-1, 0, "invalid"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        CHECK(mvrt_dtype_size(table[i].d) == table[i].size);
        CHECK(strcmp(mvrt_dtype_name(table[i].d), table[i].name) == 0);
    }
}

int main(void)
{
    CHECK(strcmp(mvrt_last_error(), "") == 0); /* nothing failed yet */
    test_success_keeps_message();
    test_thread_local_messages();
    test_long_message_truncated();
    test_status_strings();
    test_version();
    test_dtypes();
    TEST_END();
}
