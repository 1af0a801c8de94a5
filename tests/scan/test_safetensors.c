/* Unit tests of the safetensors reader: round trip of files written here,
 * at/find/metadata/not-found, argument checks, every kind of malformed
 * file (each must give MVRT_ERR_INVALID_ARGUMENT with a precise message,
 * never a crash), and random mutations of a valid file (no crash, no leak
 * under ASan; only OK or INVALID_ARGUMENT).
 * Usage: test_safetensors [GOLDEN_FILE]  (the golden file is also opened). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mvrt/mvrt.h"
#include "st_write.h"

static int failures = 0;

#define EXPECT(cond, ...)                                                    \
    do {                                                                     \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

/* ---- round trip -------------------------------------------------------- */

static void test_round_trip(const char *dir)
{
    st_writer_t w;
    stw_init(&w);
    float f32[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e30f};
    uint16_t f16[3] = {0x3C00, 0xC000, 0x7BFF};
    uint16_t bf16[2] = {0x3F80, 0x4049};
    double f64[2] = {3.141592653589793, -1e-300};
    int32_t i32[4] = {1, -2, 2147483647, -2147483647 - 1};
    int64_t i64[1] = {-1234567890123ll};
    uint8_t u8[5] = {0, 1, 2, 254, 255};
    float scalar = 42.0f;
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s12[2] = {1, 2}, s2[1] = {2}, s4[1] = {4};
    int64_t s111[3] = {1, 1, 1}, s5[1] = {5}, s040[3] = {0, 4, 0};
    stw_tensor(&w, "w.f32", "F32", 2, s23, f32, sizeof f32);
    stw_tensor(&w, "b.f16", "F16", 1, s3, f16, sizeof f16);
    stw_tensor(&w, "a.bf16", "BF16", 2, s12, bf16, sizeof bf16);
    stw_tensor(&w, "f64", "F64", 1, s2, f64, sizeof f64);
    stw_tensor(&w, "i32", "I32", 1, s4, i32, sizeof i32);
    stw_tensor(&w, "i64", "I64", 3, s111, i64, sizeof i64);
    stw_tensor(&w, "u8", "U8", 1, s5, u8, sizeof u8);
    stw_tensor(&w, "scalar", "F32", 0, NULL, &scalar, sizeof scalar);
    stw_tensor(&w, "empty", "F32", 3, s040, NULL, 0);
    stw_tensor(&w, "caf\xc3\xa9 \"quoted\" \\ tab\t", "F32", 0, NULL, &scalar, sizeof scalar);
    stw_meta(&w, "format", "pt");
    stw_meta(&w, "json", "{\"a\": [1, 2], \"b\": \"x\\y\"}");
    size_t n = 0;
    void *img = stw_finish(&w, &n);

    for (int via_file = 0; via_file < 2; via_file++) {
        mvrt_safetensors_t *f = NULL;
        mvrt_status_t st;
        char path[1024];
        if (via_file) {
            snprintf(path, sizeof path, "%s/st_round_trip.safetensors", dir);
            EXPECT(st_write_file(path, img, n) == 0, "cannot write %s", path);
            st = mvrt_safetensors_open(path, &f);
        } else {
            st = mvrt_safetensors_open_memory(img, n, &f);
        }
        EXPECT(st == MVRT_OK, "open (%s): %s", via_file ? "file" : "memory", mvrt_last_error());
        if (st != MVRT_OK)
            continue;
        EXPECT(mvrt_safetensors_count(f) == 10, "count %zu", mvrt_safetensors_count(f));
        const char *order[10] = {"w.f32", "b.f16", "a.bf16", "f64", "i32", "i64", "u8",
                                 "scalar", "empty", "caf\xc3\xa9 \"quoted\" \\ tab\t"};
        for (size_t i = 0; i < 10; i++) {
            mvrt_safetensors_tensor_t t;
            EXPECT(mvrt_safetensors_at(f, i, &t) == MVRT_OK, "at %zu", i);
            EXPECT(strcmp(t.name, order[i]) == 0, "at(%zu) is '%s', want '%s'", i, t.name,
                   order[i]);
            mvrt_safetensors_tensor_t t2;
            EXPECT(mvrt_safetensors_find(f, order[i], &t2) == MVRT_OK, "find '%s': %s",
                   order[i], mvrt_last_error());
            EXPECT(t2.data == t.data && t2.nbytes == t.nbytes && t2.rank == t.rank,
                   "find/at disagree on '%s'", order[i]);
        }
        mvrt_safetensors_tensor_t t;
        EXPECT(mvrt_safetensors_find(f, "w.f32", &t) == MVRT_OK, "find w.f32");
        EXPECT(t.dtype == MVRT_DTYPE_F32 && t.rank == 2 && t.shape[0] == 2 && t.shape[1] == 3 &&
                   t.nbytes == sizeof f32 && memcmp(t.data, f32, sizeof f32) == 0,
               "w.f32 content");
        EXPECT(mvrt_safetensors_find(f, "b.f16", &t) == MVRT_OK && t.dtype == MVRT_DTYPE_F16 &&
                   memcmp(t.data, f16, sizeof f16) == 0, "b.f16 content");
        EXPECT(mvrt_safetensors_find(f, "a.bf16", &t) == MVRT_OK && t.dtype == MVRT_DTYPE_BF16 &&
                   t.shape[1] == 2 && memcmp(t.data, bf16, sizeof bf16) == 0, "a.bf16 content");
        EXPECT(mvrt_safetensors_find(f, "f64", &t) == MVRT_OK && t.dtype == MVRT_DTYPE_F64 &&
                   memcmp(t.data, f64, sizeof f64) == 0, "f64 content");
        EXPECT(mvrt_safetensors_find(f, "i32", &t) == MVRT_OK && t.dtype == MVRT_DTYPE_I32 &&
                   memcmp(t.data, i32, sizeof i32) == 0, "i32 content");
        EXPECT(mvrt_safetensors_find(f, "i64", &t) == MVRT_OK && t.dtype == MVRT_DTYPE_I64 &&
                   t.rank == 3 && memcmp(t.data, i64, sizeof i64) == 0, "i64 content");
        EXPECT(mvrt_safetensors_find(f, "u8", &t) == MVRT_OK && t.dtype == MVRT_DTYPE_U8 &&
                   t.nbytes == 5 && memcmp(t.data, u8, sizeof u8) == 0, "u8 content");
        EXPECT(mvrt_safetensors_find(f, "scalar", &t) == MVRT_OK && t.rank == 0 &&
                   t.nbytes == 4 && memcmp(t.data, &scalar, 4) == 0, "scalar");
        EXPECT(mvrt_safetensors_find(f, "empty", &t) == MVRT_OK && t.rank == 3 &&
                   t.nbytes == 0 && t.shape[1] == 4, "empty tensor");

        EXPECT(mvrt_safetensors_find(f, "nope", &t) == MVRT_ERR_NOT_FOUND, "find absent");
        EXPECT(strstr(mvrt_last_error(), "nope") != NULL, "not-found message names it: %s",
               mvrt_last_error());
        EXPECT(mvrt_safetensors_find(f, "w.f3", &t) == MVRT_ERR_NOT_FOUND, "prefix is absent");
        EXPECT(mvrt_safetensors_at(f, 10, &t) == MVRT_ERR_INVALID_ARGUMENT, "at out of range");

        const char *v = NULL;
        EXPECT(mvrt_safetensors_metadata(f, "format", &v) == MVRT_OK && strcmp(v, "pt") == 0,
               "metadata format");
        EXPECT(mvrt_safetensors_metadata(f, "json", &v) == MVRT_OK &&
                   strcmp(v, "{\"a\": [1, 2], \"b\": \"x\\y\"}") == 0,
               "metadata with escapes: %s", v ? v : "(null)");
        EXPECT(mvrt_safetensors_metadata(f, "absent", &v) == MVRT_ERR_NOT_FOUND,
               "absent metadata");
        /* argument checks */
        EXPECT(mvrt_safetensors_find(f, NULL, &t) == MVRT_ERR_INVALID_ARGUMENT, "NULL name");
        EXPECT(mvrt_safetensors_find(f, "w.f32", NULL) == MVRT_ERR_INVALID_ARGUMENT, "NULL out");
        EXPECT(mvrt_safetensors_metadata(f, NULL, &v) == MVRT_ERR_INVALID_ARGUMENT, "NULL key");
        EXPECT(mvrt_safetensors_at(NULL, 0, &t) == MVRT_ERR_INVALID_ARGUMENT, "NULL file");
        mvrt_safetensors_close(f);
    }
    free(img);

    mvrt_safetensors_t *f = NULL;
    EXPECT(mvrt_safetensors_open("/nonexistent/dir/x.safetensors", &f) == MVRT_ERR_IO,
           "missing file is an IO error");
    EXPECT(strstr(mvrt_last_error(), "x.safetensors") != NULL, "message names the file: %s",
           mvrt_last_error());
    EXPECT(f == NULL, "out untouched on failure");
    EXPECT(mvrt_safetensors_open(NULL, &f) == MVRT_ERR_INVALID_ARGUMENT, "NULL path");
    EXPECT(mvrt_safetensors_open_memory(NULL, 10, &f) == MVRT_ERR_INVALID_ARGUMENT, "NULL bytes");
    EXPECT(mvrt_safetensors_count(NULL) == 0, "count(NULL)");
    mvrt_safetensors_close(NULL);

    /* Empty header object, no metadata, no tensors; \u escapes in names. */
    const char *hdr = "{\"\\u00e9\\ud83d\\ude00\\n\":{\"dtype\":\"U8\",\"shape\":[1],"
                      "\"data_offsets\":[0,1],\"extra\":[{\"x\":null},true,-1.5e3]}}  ";
    uint8_t one = 7;
    void *img2 = st_image(hdr, strlen(hdr), &one, 1, &n);
    EXPECT(mvrt_safetensors_open_memory(img2, n, &f) == MVRT_OK, "escaped name: %s",
           mvrt_last_error());
    if (f) {
        mvrt_safetensors_tensor_t t;
        EXPECT(mvrt_safetensors_find(f, "\xc3\xa9\xf0\x9f\x98\x80\n", &t) == MVRT_OK &&
                   *(const uint8_t *)t.data == 7, "decoded \\u escapes");
        mvrt_safetensors_close(f);
        f = NULL;
    }
    free(img2);
    void *img3 = st_image("{}", 2, NULL, 0, &n);
    EXPECT(mvrt_safetensors_open_memory(img3, n, &f) == MVRT_OK && mvrt_safetensors_count(f) == 0,
           "empty header");
    mvrt_safetensors_close(f);
    free(img3);
}

/* ---- malformed files ---------------------------------------------------- */

typedef struct bad_case {
    const char *what;
    const char *header; /* NULL: raw image below */
    size_t data_bytes;
    const char *expect; /* substring of the message */
} bad_case_t;

static const bad_case_t bad_cases[] = {
    {"bad JSON: unterminated", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]",
     4, "malformed JSON"},
    {"bad JSON: trailing comma", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}",
     4, "malformed JSON"},
    {"bad JSON: not an object", "[1,2]", 0, "must be a JSON object"},
    {"bad JSON: trailing bytes", "{} x", 0, "trailing bytes"},
    {"bad JSON: single quotes", "{'a':1}", 0, "malformed JSON"},
    {"bad JSON: bad escape", "{\"a\\x\":{}}", 0, "invalid escape"},
    {"bad JSON: lone surrogate", "{\"\\ud800\":{}}", 0, "surrogate"},
    {"bad JSON: low surrogate", "{\"\\udc00x\":{}}", 0, "surrogate"},
    {"bad JSON: short \\u", "{\"\\u12\":{}}", 0, "\\u escape"},
    {"bad JSON: \\u0000", "{\"a\\u0000\":{}}", 0, "\\u0000"},
    {"bad JSON: control char", "{\"a\tb\":{}}", 0, "control character"},
    {"bad JSON: invalid UTF-8", "{\"a\xff\":{}}", 0, "UTF-8"},
    {"bad JSON: overlong UTF-8", "{\"a\xc0\xaf\":{}}", 0, "UTF-8"},
    {"bad JSON: leading zero", "{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}",
     4, "leading zero"},
    {"bad JSON: deep nesting",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":"
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}",
     4, "nesting too deep"},
    {"bad JSON: bare word", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
     "\"x\":nan}}", 4, "expected a value"},
    {"tensor not an object", "{\"a\":[1]}", 0, "tensor 'a': entry must be a JSON object"},
    {"offsets out of range", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
     4, "tensor 'a': data_offsets [0, 8] end beyond the 4 bytes of data"},
    {"offsets begin > end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}",
     8, "begin > end"},
    {"size mismatch",
     "{\"case0.u\":{\"dtype\":\"F32\",\"shape\":[2,4,64],\"data_offsets\":[0,100]}}", 2048,
     "tensor 'case0.u': data_offsets [0, 100] but shape (2,4,64) f32 needs 2048 bytes"},
    {"unknown dtype", "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': unsupported dtype 'F8_E4M3'"},
    {"dtype BOOL", "{\"w\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4,
     "unsupported dtype 'BOOL'"},
    {"dtype not a string", "{\"w\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "'dtype' must be a string"},
    {"duplicate names",
     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
     "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2,
     "tensor 'a' appears twice"},
    {"rank 9", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
     1, "more than 8 entries"},
    {"negative dim", "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,1]}}", 1,
     "not a non-negative integer"},
    {"fractional dim", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}}", 1,
     "not a non-negative integer"},
    {"dim overflows u64",
     "{\"a\":{\"dtype\":\"U8\",\"shape\":[99999999999999999999999],\"data_offsets\":[0,1]}}", 1,
     "below 2^64"},
    {"dim above int64",
     "{\"a\":{\"dtype\":\"U8\",\"shape\":[18446744073709551615],\"data_offsets\":[0,1]}}", 1,
     "too large"},
    {"byte count overflows",
     "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,8]}}",
     8, "overflows"},
    {"shape not an array", "{\"a\":{\"dtype\":\"U8\",\"shape\":1,\"data_offsets\":[0,1]}}", 1,
     "'shape' must be an array"},
    {"offsets of 3", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 2,
     "more than 2 entries"},
    {"offsets of 1", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1]}}", 2,
     "must be [begin, end]"},
    {"missing data_offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1,
     "tensor 'a': missing 'data_offsets'"},
    {"missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "missing 'dtype'"},
    {"shape given twice",
     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     "given twice"},
    {"metadata value not a string", "{\"__metadata__\":{\"cases\":8}}", 0,
     "'__metadata__' key 'cases': value must be a string"},
    {"metadata not an object", "{\"__metadata__\":[\"a\"]}", 0, "'__metadata__' must be"},
    {"metadata key twice", "{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0,
     "'__metadata__' key 'k' given twice"},
    {"metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, "given twice"},
};

static void expect_bad(const char *what, const void *img, size_t n, const char *substr)
{
    mvrt_safetensors_t *f = (mvrt_safetensors_t *)(uintptr_t)1; /* must stay untouched */
    mvrt_status_t st = mvrt_safetensors_open_memory(img, n, &f);
    EXPECT(st == MVRT_ERR_INVALID_ARGUMENT, "%s: status %d (%s)", what, (int)st,
           mvrt_last_error());
    EXPECT(f == (mvrt_safetensors_t *)(uintptr_t)1, "%s: out_file written on failure", what);
    EXPECT(strstr(mvrt_last_error(), substr) != NULL, "%s: message '%s' lacks '%s'", what,
           mvrt_last_error(), substr);
    if (st == MVRT_OK && f != (mvrt_safetensors_t *)(uintptr_t)1)
        mvrt_safetensors_close(f);
}

static void test_malformed(const char *dir)
{
    size_t n;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case_t *b = &bad_cases[i];
        char *data = calloc(b->data_bytes + 1, 1);
        void *img = st_image(b->header, strlen(b->header), data, b->data_bytes, &n);
        expect_bad(b->what, img, n, b->expect);
        free(img);
        free(data);
    }
    /* Raw images. */
    unsigned char tiny[5] = {1, 0, 0, 0, 0};
    expect_bad("truncated: 5 bytes", tiny, sizeof tiny, "too short");
    expect_bad("empty file", tiny, 0, "too short");

    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    float one = 1.0f;
    void *img = st_image(hdr, strlen(hdr), &one, 4, &n);
    expect_bad("truncated inside the header", img, 8 + strlen(hdr) / 2,
               "beyond the end of the file");
    expect_bad("truncated inside the data", img, n - 2, "end beyond the 2 bytes of data");
    unsigned char *m = malloc(n);
    memcpy(m, img, n);
    m[0] = 0xFF; m[1] = 0xFF; m[6] = 0x00; m[7] = 0x00;
    expect_bad("header length beyond the file", m, n, "beyond the end of the file");
    memset(m, 0xFF, 8);
    expect_bad("header length 2^64-1", m, n, "beyond the end of the file");
    memset(m, 0, 8);
    expect_bad("header length 0", m, n, "too small");
    free(m);

    /* The same truncation read from a file goes through the file path too. */
    char path[1024];
    snprintf(path, sizeof path, "%s/st_truncated.safetensors", dir);
    EXPECT(st_write_file(path, img, n - 3) == 0, "write %s", path);
    mvrt_safetensors_t *f = NULL;
    EXPECT(mvrt_safetensors_open(path, &f) == MVRT_ERR_INVALID_ARGUMENT, "truncated file");
    EXPECT(strstr(mvrt_last_error(), "st_truncated.safetensors: ") == mvrt_last_error(),
           "message starts with the file name: %s", mvrt_last_error());
    free(img);
}

/* ---- mutations: never crash -------------------------------------------- */

static uint64_t rs = 12345;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static void test_mutations(void)
{
    st_writer_t w;
    stw_init(&w);
    float v[12];
    for (int i = 0; i < 12; i++)
        v[i] = (float)i;
    int64_t s[2] = {3, 4};
    stw_tensor(&w, "x.weight", "F32", 2, s, v, sizeof v);
    stw_tensor(&w, "y\\u00e9", "BF16", 2, s, v, 24);
    stw_meta(&w, "cases", "1");
    size_t n;
    unsigned char *img = stw_finish(&w, &n);
    unsigned char *m = malloc(n + 16);
    int ok = 0, bad = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(m, img, n);
        size_t len = n;
        int kind = (int)(rnd() % 4);
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits; e++) {
            size_t pos = (size_t)(rnd() % len);
            if (kind == 0)
                m[pos] ^= (unsigned char)(1u << (rnd() % 8));
            else if (kind == 1)
                m[pos] = "{}[]\":,\\u0123456789-.eE \x80\xff"[rnd() % 26];
            else if (kind == 2)
                len = pos + 1;
            else
                m[pos] = (unsigned char)rnd();
        }
        mvrt_safetensors_t *f = NULL;
        mvrt_status_t st = mvrt_safetensors_open_memory(m, len, &f);
        if (st == MVRT_OK) {
            ok++;
            /* Whatever was accepted must be self-consistent. */
            for (size_t i = 0; i < mvrt_safetensors_count(f); i++) {
                mvrt_safetensors_tensor_t t;
                if (mvrt_safetensors_at(f, i, &t) != MVRT_OK) {
                    EXPECT(0, "at failed on an accepted file");
                    continue;
                }
                size_t need = mvrt_dtype_size(t.dtype);
                for (int r = 0; r < t.rank; r++)
                    need *= (size_t)t.shape[r];
                EXPECT(need == t.nbytes, "accepted tensor with inconsistent size");
                volatile unsigned char sink = 0;
                for (size_t b = 0; b < t.nbytes; b++)
                    sink ^= ((const unsigned char *)t.data)[b]; /* must be readable */
                (void)sink;
            }
            mvrt_safetensors_close(f);
        } else {
            bad++;
            EXPECT(st == MVRT_ERR_INVALID_ARGUMENT, "mutation gave status %d: %s", (int)st,
                   mvrt_last_error());
            EXPECT(mvrt_last_error()[0] != '\0', "empty message");
        }
    }
    printf("mutations: %d accepted, %d rejected\n", ok, bad);
    free(m);
    free(img);
}

static void test_golden(const char *path)
{
    mvrt_safetensors_t *f = NULL;
    EXPECT(mvrt_safetensors_open(path, &f) == MVRT_OK, "open %s: %s", path, mvrt_last_error());
    if (!f)
        return;
    const char *v = NULL;
    EXPECT(mvrt_safetensors_metadata(f, "cases", &v) == MVRT_OK, "golden has 'cases'");
    mvrt_safetensors_tensor_t t;
    EXPECT(mvrt_safetensors_find(f, "case0.u", &t) == MVRT_OK && t.dtype == MVRT_DTYPE_F32 &&
               t.rank == 3, "golden case0.u");
    /* Every tensor is reachable both ways. */
    for (size_t i = 0; i < mvrt_safetensors_count(f); i++) {
        mvrt_safetensors_tensor_t a, b;
        EXPECT(mvrt_safetensors_at(f, i, &a) == MVRT_OK, "at %zu", i);
        EXPECT(mvrt_safetensors_find(f, a.name, &b) == MVRT_OK && a.data == b.data,
               "find '%s'", a.name);
    }
    printf("golden: %zu tensors\n", mvrt_safetensors_count(f));
    mvrt_safetensors_close(f);
}

int main(int argc, char **argv)
{
    const char *dir = ".";
    test_round_trip(dir);
    test_malformed(dir);
    test_mutations();
    if (argc > 1)
        test_golden(argv[1]);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all safetensors checks passed\n");
    return 0;
}
