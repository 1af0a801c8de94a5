/* Test-only .safetensors writer: builds file images in memory from a list of
 * tensors and metadata, or from a raw JSON header (for malformed files).
 * Independent of the reader under test. */
#ifndef MVRT_TESTS_ST_WRITE_H
#define MVRT_TESTS_ST_WRITE_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_buf {
    char *p;
    size_t n, cap;
} st_buf_t;

static inline void stb_put(st_buf_t *b, const void *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->cap + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "st_write: out of memory\n");
            exit(1);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static inline void stb_str(st_buf_t *b, const char *s)
{
    stb_put(b, s, strlen(s));
}

static inline void stb_printf(st_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void stb_printf(st_buf_t *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    stb_str(b, tmp);
}

/* A JSON string literal (escapes ", \ and control characters). */
static inline void stb_json_string(st_buf_t *b, const char *s)
{
    stb_str(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            stb_put(b, e, 2);
        } else if (c < 0x20) {
            stb_printf(b, "\\u%04x", c);
        } else {
            stb_put(b, s, 1);
        }
    }
    stb_str(b, "\"");
}

/* File image: u64 LE header length, header, data. */
static inline void *st_image(const char *header, size_t hlen, const void *data, size_t dlen,
                      size_t *out_size)
{
    size_t n = 8 + hlen + dlen;
    unsigned char *img = malloc(n ? n : 1);
    if (!img) {
        fprintf(stderr, "st_write: out of memory\n");
        exit(1);
    }
    uint64_t h = hlen;
    for (int i = 0; i < 8; i++)
        img[i] = (unsigned char)(h >> (8 * i));
    memcpy(img + 8, header, hlen);
    if (dlen)
        memcpy(img + 8 + hlen, data, dlen);
    *out_size = n;
    return img;
}

/* Incremental writer: add tensors (raw bytes) and metadata, then finish. */
typedef struct st_writer {
    st_buf_t header, data, meta;
    int ntensors;
} st_writer_t;

static inline void stw_init(st_writer_t *w)
{
    memset(w, 0, sizeof *w);
}

static inline void stw_tensor(st_writer_t *w, const char *name, const char *dtype, int rank,
                       const int64_t *shape, const void *bytes, size_t nbytes)
{
    stb_str(&w->header, w->ntensors++ ? "," : "");
    stb_json_string(&w->header, name);
    stb_str(&w->header, ":{\"dtype\":");
    stb_json_string(&w->header, dtype);
    stb_str(&w->header, ",\"shape\":[");
    for (int i = 0; i < rank; i++)
        stb_printf(&w->header, i ? ",%lld" : "%lld", (long long)shape[i]);
    stb_printf(&w->header, "],\"data_offsets\":[%zu,%zu]}", w->data.n, w->data.n + nbytes);
    if (nbytes)
        stb_put(&w->data, bytes, nbytes);
}

/* f32 tensor from doubles. */
static inline void stw_f32(st_writer_t *w, const char *name, int rank, const int64_t *shape,
                    const double *v)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f)
        exit(1);
    for (int64_t i = 0; i < n; i++)
        f[i] = (float)v[i];
    stw_tensor(w, name, "F32", rank, shape, f, (size_t)n * sizeof *f);
    free(f);
}

static inline void stw_meta(st_writer_t *w, const char *key, const char *value)
{
    stb_str(&w->meta, w->meta.n ? "," : "");
    stb_json_string(&w->meta, key);
    stb_str(&w->meta, ":");
    stb_json_string(&w->meta, value);
}

/* Returns the malloc'd image and frees the writer's buffers. Pads the
 * header with spaces to 8 bytes, as the reference writer does. */
static inline void *stw_finish(st_writer_t *w, size_t *out_size)
{
    st_buf_t h = {0};
    stb_str(&h, "{");
    if (w->meta.n) {
        stb_str(&h, "\"__metadata__\":{");
        stb_put(&h, w->meta.p, w->meta.n);
        stb_str(&h, w->ntensors ? "}," : "}");
    }
    if (w->header.n)
        stb_put(&h, w->header.p, w->header.n);
    stb_str(&h, "}");
    while (h.n % 8)
        stb_str(&h, " ");
    void *img = st_image(h.p, h.n, w->data.p, w->data.n, out_size);
    free(h.p);
    free(w->header.p);
    free(w->data.p);
    free(w->meta.p);
    memset(w, 0, sizeof *w);
    return img;
}

static inline int st_write_file(const char *path, const void *img, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t wrote = fwrite(img, 1, n, f);
    int rc = fclose(f);
    return (wrote == n && rc == 0) ? 0 : -1;
}

#endif
