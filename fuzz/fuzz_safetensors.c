/* Fuzz target: the .safetensors reader (mvrt_safetensors_open_memory and
 * every accessor) on an arbitrary file image.
 *
 * Besides memory errors (ASan) and undefined behaviour (UBSan), it checks
 * the reader's promises: a failure writes nothing and leaves a message; an
 * accepted file has unique names, ranks 0..8, supported dtypes, data ranges
 * of exactly numel * element size bytes (each is read through, so ASan sees
 * any range outside the owned copy), and find/metadata agree with at(). */
#include <string.h>

#include "fuzz_util.h"
#include "mvrt/safetensors.h"

/* Reads every byte so that an out-of-bounds range is an ASan report (the
 * volatile sink keeps the compiler from dropping the reads). */
static volatile unsigned sink;
static void touch(const void *data, size_t n)
{
    const unsigned char *p = data;
    unsigned acc = 0;
    for (size_t i = 0; i < n; i++)
        acc += p[i];
    sink += acc;
}

static void check_tensor(const mvrt_safetensors_t *f, size_t index)
{
    mvrt_safetensors_tensor_t t, u;
    FUZZ_CHECK(mvrt_safetensors_at(f, index, &t) == MVRT_OK);
    FUZZ_CHECK(t.name != NULL);
    FUZZ_CHECK(t.rank >= 0 && t.rank <= 8);
    size_t es = mvrt_dtype_size(t.dtype);
    FUZZ_CHECK(es != 0);
    /* numel * esize == nbytes, computed with overflow checks (a zero
     * dimension makes the tensor empty). */
    uint64_t bytes = es;
    int empty = 0, overflow = 0;
    for (int32_t i = 0; i < t.rank; i++) {
        FUZZ_CHECK(t.shape[i] >= 0);
        if (t.shape[i] == 0)
            empty = 1;
        else if (!overflow)
            overflow = __builtin_mul_overflow(bytes, (uint64_t)t.shape[i], &bytes);
    }
    if (empty)
        bytes = 0, overflow = 0;
    FUZZ_CHECK(!overflow && bytes == (uint64_t)t.nbytes);
    FUZZ_CHECK(t.nbytes == 0 || t.data != NULL);
    touch(t.data, t.nbytes);
    touch(t.name, strlen(t.name));

    /* Lookup by name finds this very tensor (names are unique). */
    FUZZ_CHECK(mvrt_safetensors_find(f, t.name, &u) == MVRT_OK);
    FUZZ_CHECK(u.data == t.data && u.nbytes == t.nbytes && u.dtype == t.dtype &&
               u.rank == t.rank && strcmp(u.name, t.name) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mvrt_safetensors_t *sentinel = (mvrt_safetensors_t *)&sentinel;
    mvrt_safetensors_t *f = sentinel;
    mvrt_status_t st = mvrt_safetensors_open_memory(data, size, &f);
    if (st != MVRT_OK) {
        FUZZ_CHECK(f == sentinel); /* nothing written on failure */
        FUZZ_CHECK(st == MVRT_ERR_INVALID_ARGUMENT || st == MVRT_ERR_OUT_OF_MEMORY);
        FUZZ_CHECK(mvrt_last_error()[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(f != NULL && f != sentinel);

    size_t n = mvrt_safetensors_count(f);
    for (size_t i = 0; i < n; i++)
        check_tensor(f, i);

    /* Out of range and absent lookups fail cleanly, writing nothing. */
    mvrt_safetensors_tensor_t t;
    memset(&t, 0x5A, sizeof t);
    FUZZ_CHECK(mvrt_safetensors_at(f, n, &t) == MVRT_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(t.rank == 0x5A5A5A5A);
    mvrt_status_t fs = mvrt_safetensors_find(f, "\x01 no such tensor", &t);
    FUZZ_CHECK(fs == MVRT_ERR_NOT_FOUND);

    /* Metadata: the keys the project reads, and a key taken from the input
     * (its first bytes up to a NUL, at most 31) so found keys get covered. */
    static const char *keys[] = {"cases", "case0", "config", "semantics", "mixer_block", ""};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *v = NULL;
        mvrt_status_t ms = mvrt_safetensors_metadata(f, keys[i], &v);
        FUZZ_CHECK(ms == MVRT_OK || ms == MVRT_ERR_NOT_FOUND);
        if (ms == MVRT_OK) {
            FUZZ_CHECK(v != NULL);
            touch(v, strlen(v));
        }
    }
    if (size > 8) {
        char key[32];
        size_t k = 0;
        for (size_t i = 8; i < size && k < sizeof key - 1 && data[i]; i++)
            key[k++] = (char)data[i];
        key[k] = '\0';
        const char *v = NULL;
        mvrt_status_t ms = mvrt_safetensors_metadata(f, key, &v);
        FUZZ_CHECK(ms == MVRT_OK || ms == MVRT_ERR_NOT_FOUND);
        mvrt_status_t ts = mvrt_safetensors_find(f, key, &t);
        FUZZ_CHECK(ts == MVRT_OK || ts == MVRT_ERR_NOT_FOUND);
    }
    mvrt_safetensors_close(f);
    return 0;
}
