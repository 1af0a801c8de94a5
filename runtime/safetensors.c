/* Reader for .safetensors files (see include/mvrt/safetensors.h).
 *
 * The whole file is read into one owned buffer, then the JSON header is
 * parsed by a small strict recursive-descent parser written for this format
 * (objects, arrays, strings with every JSON escape including \uXXXX and
 * surrogate pairs, numbers, true/false/null). Everything is validated once
 * at open time: afterwards the handle is read-only, so it may be shared by
 * threads. The input is untrusted (it will be fuzzed): every length and
 * index is bounds-checked, every size product is overflow-checked, nesting
 * depth is limited, and every failure frees what was allocated.
 *
 * "File order" (mvrt_safetensors_at) is the order in which tensors appear
 * in the JSON header. */
#include "mvrt/safetensors.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Limits that reject absurd files before any large allocation. */
#define ST_MAX_HEADER_BYTES ((uint64_t)100 * 1024 * 1024) /* as the reference reader */
#define ST_MAX_DEPTH 64
#define ST_MAX_RANK 8
#define ST_LABEL_MAX 128

typedef struct st_tensor {
    char *name;
    mvrt_dtype_t dtype;
    int32_t rank;
    int64_t shape[ST_MAX_RANK];
    uint64_t begin, end; /* offsets into the data section */
} st_tensor_t;

typedef struct st_meta {
    char *key;
    char *value;
} st_meta_t;

struct mvrt_safetensors {
    unsigned char *bytes; /* the whole file */
    size_t size;
    const unsigned char *data; /* start of the data section */
    size_t data_size;
    st_tensor_t *tensors;
    size_t count, cap;
    size_t *sorted; /* tensor indices sorted by name, for find */
    st_meta_t *meta;
    size_t meta_count, meta_cap;
    int has_meta;
    char label[256]; /* file name for messages */
};

/* ------------------------------------------------------------------------ */
/* Parser state and errors                                                  */

typedef struct st_parser {
    const char *label; /* file name used in messages */
    const unsigned char *p, *begin, *end;
    int depth;
    mvrt_safetensors_t *file;
} st_parser_t;

static mvrt_status_t st_fail(const st_parser_t *ps, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT, "%s: %s", ps->label, msg);
}

/* A JSON syntax error, with the byte offset inside the header. */
static mvrt_status_t st_syntax(const st_parser_t *ps, const char *what)
{
    return st_fail(ps, "malformed JSON header at byte %zu: %s",
                   (size_t)(ps->p - ps->begin), what);
}

static void st_skip_ws(st_parser_t *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* Consumes `c` after optional whitespace; 0 if the next byte is not `c`. */
static int st_accept(st_parser_t *ps, unsigned char c)
{
    st_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Strings                                                                  */

static int st_hex4(const unsigned char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = s[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

/* Length of a valid UTF-8 sequence starting at s (at most `avail` bytes), or
 * 0 when it is invalid (overlong, surrogate, > U+10FFFF, truncated). */
static size_t st_utf8_len(const unsigned char *s, size_t avail)
{
    unsigned c = s[0];
    size_t n;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2; cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3; cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4; cp = c & 0x07;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static size_t st_put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parses a JSON string at the cursor (after whitespace). On success, when
 * out is not NULL, *out is a malloc'd NUL-terminated UTF-8 copy. Strings
 * containing U+0000 are rejected: names and metadata are C strings here. */
static mvrt_status_t st_parse_string(st_parser_t *ps, char **out)
{
    st_skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"')
        return st_syntax(ps, "expected a string");
    ps->p++;
    const unsigned char *start = ps->p;
    /* Decoded text is never longer than the escaped source. */
    size_t maxlen = 0;
    while (start + maxlen < ps->end && start[maxlen] != '"') {
        if (start[maxlen] == '\\' && start + maxlen + 1 < ps->end)
            maxlen++;
        maxlen++;
    }
    char *buf = NULL;
    if (out) {
        buf = mvrt_rt_malloc(maxlen + 1);
        if (!buf)
            return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of memory parsing the header",
                                  ps->label);
    }
    size_t o = 0;
    mvrt_status_t st = MVRT_OK;
    for (;;) {
        if (ps->p >= ps->end) {
            st = st_syntax(ps, "unterminated string");
            break;
        }
        unsigned c = *ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20) {
            st = st_syntax(ps, "control character in a string");
            break;
        }
        if (c != '\\') {
            size_t n = st_utf8_len(ps->p, (size_t)(ps->end - ps->p));
            if (n == 0) {
                st = st_syntax(ps, "invalid UTF-8 in a string");
                break;
            }
            if (buf)
                memcpy(buf + o, ps->p, n);
            o += n;
            ps->p += n;
            continue;
        }
        /* escape */
        if (ps->end - ps->p < 2) {
            st = st_syntax(ps, "unterminated escape");
            break;
        }
        unsigned e = ps->p[1];
        char simple = 0;
        switch (e) {
        case '"': simple = '"'; break;
        case '\\': simple = '\\'; break;
        case '/': simple = '/'; break;
        case 'b': simple = '\b'; break;
        case 'f': simple = '\f'; break;
        case 'n': simple = '\n'; break;
        case 'r': simple = '\r'; break;
        case 't': simple = '\t'; break;
        case 'u': break;
        default:
            st = st_syntax(ps, "invalid escape in a string");
            break;
        }
        if (st != MVRT_OK)
            break;
        if (simple) {
            if (buf)
                buf[o] = simple;
            o++;
            ps->p += 2;
            continue;
        }
        unsigned cp, lo;
        if (ps->end - ps->p < 6 || st_hex4(ps->p + 2, &cp) != 0) {
            st = st_syntax(ps, "invalid \\u escape");
            break;
        }
        ps->p += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            st = st_syntax(ps, "unpaired low surrogate in \\u escape");
            break;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' ||
                st_hex4(ps->p + 2, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) {
                st = st_syntax(ps, "unpaired high surrogate in \\u escape");
                break;
            }
            ps->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0) {
            st = st_syntax(ps, "\\u0000 is not allowed in names and metadata");
            break;
        }
        /* 6 (or 12) source bytes always cover the <= 4 decoded bytes. */
        char tmp[4];
        size_t n = st_put_utf8(tmp, cp);
        if (buf)
            memcpy(buf + o, tmp, n);
        o += n;
    }
    if (st != MVRT_OK) {
        free(buf);
        return st;
    }
    if (buf) {
        buf[o] = '\0';
        *out = buf;
    }
    return MVRT_OK;
}

/* ------------------------------------------------------------------------ */
/* Numbers and generic values                                               */

/* Validates a JSON number at the cursor (grammar only) and consumes it.
 * *is_uint is set when it is a plain non-negative integer (no sign,
 * fraction or exponent) that fits in uint64; its value goes to *value. */
static mvrt_status_t st_parse_number(st_parser_t *ps, int *is_uint, uint64_t *value)
{
    st_skip_ws(ps);
    const unsigned char *s = ps->p, *e = ps->end;
    int plain = 1, overflow = 0;
    uint64_t v = 0;
    if (s < e && *s == '-') {
        plain = 0;
        s++;
    }
    if (s >= e || *s < '0' || *s > '9')
        return st_syntax(ps, "expected a number");
    if (*s == '0') {
        s++;
        if (s < e && *s >= '0' && *s <= '9')
            return st_syntax(ps, "leading zero in a number");
    } else {
        while (s < e && *s >= '0' && *s <= '9') {
            unsigned dgt = (unsigned)(*s - '0');
            if (v > (UINT64_MAX - dgt) / 10)
                overflow = 1;
            else
                v = v * 10 + dgt;
            s++;
        }
    }
    if (s < e && *s == '.') {
        plain = 0;
        s++;
        if (s >= e || *s < '0' || *s > '9')
            return st_syntax(ps, "digit expected after '.'");
        while (s < e && *s >= '0' && *s <= '9')
            s++;
    }
    if (s < e && (*s == 'e' || *s == 'E')) {
        plain = 0;
        s++;
        if (s < e && (*s == '+' || *s == '-'))
            s++;
        if (s >= e || *s < '0' || *s > '9')
            return st_syntax(ps, "digit expected in exponent");
        while (s < e && *s >= '0' && *s <= '9')
            s++;
    }
    ps->p = s;
    if (is_uint)
        *is_uint = plain && !overflow;
    if (value)
        *value = v;
    return MVRT_OK;
}

static int st_literal(st_parser_t *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

/* Parses and discards any JSON value (used for keys we do not interpret). */
static mvrt_status_t st_skip_value(st_parser_t *ps)
{
    st_skip_ws(ps);
    if (ps->p >= ps->end)
        return st_syntax(ps, "unexpected end of header");
    unsigned c = *ps->p;
    if (c == '"')
        return st_parse_string(ps, NULL);
    if (c == '-' || (c >= '0' && c <= '9'))
        return st_parse_number(ps, NULL, NULL);
    if (st_literal(ps, "true") || st_literal(ps, "false") || st_literal(ps, "null"))
        return MVRT_OK;
    if (c != '{' && c != '[')
        return st_syntax(ps, "expected a value");
    if (++ps->depth > ST_MAX_DEPTH)
        return st_syntax(ps, "nesting too deep");
    ps->p++;
    mvrt_status_t st;
    if (c == '[') {
        if (!st_accept(ps, ']')) {
            do {
                if ((st = st_skip_value(ps)) != MVRT_OK)
                    return st;
            } while (st_accept(ps, ','));
            if (!st_accept(ps, ']'))
                return st_syntax(ps, "expected ',' or ']'");
        }
    } else {
        if (!st_accept(ps, '}')) {
            do {
                if ((st = st_parse_string(ps, NULL)) != MVRT_OK)
                    return st;
                if (!st_accept(ps, ':'))
                    return st_syntax(ps, "expected ':'");
                if ((st = st_skip_value(ps)) != MVRT_OK)
                    return st;
            } while (st_accept(ps, ','));
            if (!st_accept(ps, '}'))
                return st_syntax(ps, "expected ',' or '}'");
        }
    }
    ps->depth--;
    return MVRT_OK;
}

/* ------------------------------------------------------------------------ */
/* Tensor entries                                                           */

static mvrt_dtype_t st_dtype_from_name(const char *s)
{
    if (strcmp(s, "F32") == 0) return MVRT_DTYPE_F32;
    if (strcmp(s, "F16") == 0) return MVRT_DTYPE_F16;
    if (strcmp(s, "BF16") == 0) return MVRT_DTYPE_BF16;
    if (strcmp(s, "F64") == 0) return MVRT_DTYPE_F64;
    if (strcmp(s, "I32") == 0) return MVRT_DTYPE_I32;
    if (strcmp(s, "I64") == 0) return MVRT_DTYPE_I64;
    if (strcmp(s, "U8") == 0) return MVRT_DTYPE_U8;
    if (strcmp(s, "C64") == 0) return MVRT_DTYPE_C64;
    return MVRT_DTYPE_INVALID;
}

static size_t st_elem_size(mvrt_dtype_t t)
{
    switch (t) {
    case MVRT_DTYPE_F32: case MVRT_DTYPE_I32: return 4;
    case MVRT_DTYPE_F16: case MVRT_DTYPE_BF16: return 2;
    case MVRT_DTYPE_F64: case MVRT_DTYPE_I64: case MVRT_DTYPE_C64: return 8;
    case MVRT_DTYPE_U8: return 1;
    default: return 0;
    }
}

static const char *st_dtype_label(mvrt_dtype_t t)
{
    switch (t) {
    case MVRT_DTYPE_F32: return "f32";
    case MVRT_DTYPE_F16: return "f16";
    case MVRT_DTYPE_BF16: return "bf16";
    case MVRT_DTYPE_F64: return "f64";
    case MVRT_DTYPE_I32: return "i32";
    case MVRT_DTYPE_I64: return "i64";
    case MVRT_DTYPE_U8: return "u8";
    case MVRT_DTYPE_C64: return "c64";
    default: return "invalid";
    }
}

/* "(2,4,64)" for messages. */
static void st_shape_text(const st_tensor_t *t, char *buf, size_t cap)
{
    size_t o = 0;
    o += (size_t)snprintf(buf, cap, "(");
    for (int32_t i = 0; i < t->rank && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    if (o < cap)
        snprintf(buf + o, cap - o, ")");
}

/* Shortened copy of a name for messages (names in fuzzed files can be huge). */
static const char *st_short(const char *name, char *buf, size_t cap)
{
    size_t n = strlen(name);
    if (n < cap)
        return name;
    memcpy(buf, name, cap - 4);
    memcpy(buf + cap - 4, "...", 4);
    return buf;
}

/* Parses an array of non-negative integers into vals (at most maxn). */
static mvrt_status_t st_parse_uint_array(st_parser_t *ps, const char *tname, const char *field,
                                         uint64_t *vals, int maxn, int *out_n)
{
    int n = 0;
    if (!st_accept(ps, '['))
        return st_fail(ps, "tensor '%s': '%s' must be an array", tname, field);
    if (!st_accept(ps, ']')) {
        do {
            st_skip_ws(ps);
            int is_uint = 0;
            uint64_t v = 0;
            int looks_numeric =
                ps->p < ps->end && (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'));
            mvrt_status_t st = st_parse_number(ps, &is_uint, &v);
            if (st != MVRT_OK && looks_numeric)
                return st; /* the number's own syntax error */
            if (st != MVRT_OK)
                return st_fail(ps, "tensor '%s': '%s' must hold non-negative integers",
                               tname, field);
            if (!is_uint)
                return st_fail(ps, "tensor '%s': '%s' holds a value that is not a "
                               "non-negative integer below 2^64", tname, field);
            if (n >= maxn)
                return st_fail(ps, "tensor '%s': '%s' has more than %d entries", tname, field,
                               maxn);
            vals[n++] = v;
        } while (st_accept(ps, ','));
        if (!st_accept(ps, ']'))
            return st_syntax(ps, "expected ',' or ']'");
    }
    *out_n = n;
    return MVRT_OK;
}

static mvrt_status_t st_add_tensor(st_parser_t *ps, st_tensor_t *t)
{
    mvrt_safetensors_t *f = ps->file;
    if (f->count == f->cap) {
        size_t ncap = f->cap ? f->cap * 2 : 16;
        st_tensor_t *nt = mvrt_rt_realloc(f->tensors, ncap * sizeof *nt);
        if (!nt)
            return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of memory", ps->label);
        f->tensors = nt;
        f->cap = ncap;
    }
    f->tensors[f->count++] = *t;
    return MVRT_OK;
}

/* Parses the object of one tensor; takes ownership of `name`. */
static mvrt_status_t st_parse_tensor(st_parser_t *ps, char *name)
{
    char sbuf[ST_LABEL_MAX];
    const char *tname = st_short(name, sbuf, sizeof sbuf);
    st_tensor_t t;
    memset(&t, 0, sizeof t);
    int have_dtype = 0, have_shape = 0, have_offsets = 0;
    mvrt_status_t st = MVRT_OK;

    if (!st_accept(ps, '{')) {
        st = st_fail(ps, "tensor '%s': entry must be a JSON object", tname);
        goto fail;
    }
    if (!st_accept(ps, '}')) {
        do {
            char *key = NULL;
            if ((st = st_parse_string(ps, &key)) != MVRT_OK)
                goto fail;
            if (!st_accept(ps, ':')) {
                free(key);
                st = st_syntax(ps, "expected ':'");
                goto fail;
            }
            if (strcmp(key, "dtype") == 0) {
                free(key);
                char *dt = NULL;
                if (have_dtype) {
                    st = st_fail(ps, "tensor '%s': 'dtype' given twice", tname);
                    goto fail;
                }
                st_skip_ws(ps);
                if (ps->p >= ps->end || *ps->p != '"') {
                    st = st_fail(ps, "tensor '%s': 'dtype' must be a string", tname);
                    goto fail;
                }
                if ((st = st_parse_string(ps, &dt)) != MVRT_OK)
                    goto fail;
                t.dtype = st_dtype_from_name(dt);
                if (t.dtype == MVRT_DTYPE_INVALID) {
                    char dbuf[64];
                    st = st_fail(ps, "tensor '%s': unsupported dtype '%s' (supported: F32, F16, "
                                 "BF16, F64, I32, I64, U8)", tname, st_short(dt, dbuf, sizeof dbuf));
                    free(dt);
                    goto fail;
                }
                free(dt);
                have_dtype = 1;
            } else if (strcmp(key, "shape") == 0) {
                free(key);
                uint64_t vals[ST_MAX_RANK];
                int n = 0;
                if (have_shape) {
                    st = st_fail(ps, "tensor '%s': 'shape' given twice", tname);
                    goto fail;
                }
                if ((st = st_parse_uint_array(ps, tname, "shape", vals, ST_MAX_RANK, &n)) !=
                    MVRT_OK)
                    goto fail;
                for (int i = 0; i < n; i++) {
                    if (vals[i] > (uint64_t)INT64_MAX) {
                        st = st_fail(ps, "tensor '%s': shape[%d] = %llu is too large", tname, i,
                                     (unsigned long long)vals[i]);
                        goto fail;
                    }
                    t.shape[i] = (int64_t)vals[i];
                }
                t.rank = n;
                have_shape = 1;
            } else if (strcmp(key, "data_offsets") == 0) {
                free(key);
                uint64_t vals[2];
                int n = 0;
                if (have_offsets) {
                    st = st_fail(ps, "tensor '%s': 'data_offsets' given twice", tname);
                    goto fail;
                }
                if ((st = st_parse_uint_array(ps, tname, "data_offsets", vals, 2, &n)) !=
                    MVRT_OK)
                    goto fail;
                if (n != 2) {
                    st = st_fail(ps, "tensor '%s': 'data_offsets' must be [begin, end]", tname);
                    goto fail;
                }
                t.begin = vals[0];
                t.end = vals[1];
                have_offsets = 1;
            } else {
                /* Unknown per-tensor keys are ignored, but must be valid JSON. */
                free(key);
                if ((st = st_skip_value(ps)) != MVRT_OK)
                    goto fail;
            }
        } while (st_accept(ps, ','));
        if (!st_accept(ps, '}')) {
            st = st_syntax(ps, "expected ',' or '}'");
            goto fail;
        }
    }
    if (!have_dtype || !have_shape || !have_offsets) {
        st = st_fail(ps, "tensor '%s': missing '%s'", tname,
                     !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
        goto fail;
    }

    /* Sizes: begin <= end <= data size, end - begin == numel * elemsize. */
    {
        char shp[160];
        st_shape_text(&t, shp, sizeof shp);
        uint64_t bytes = st_elem_size(t.dtype);
        int overflow = 0;
        for (int32_t i = 0; i < t.rank; i++) {
            uint64_t d = (uint64_t)t.shape[i];
            if (d != 0 && bytes > UINT64_MAX / d)
                overflow = 1;
            else
                bytes *= d;
        }
        /* A zero dimension makes the tensor empty whatever the others are. */
        for (int32_t i = 0; i < t.rank; i++)
            if (t.shape[i] == 0) {
                overflow = 0;
                bytes = 0;
            }
        if (t.begin > t.end) {
            st = st_fail(ps, "tensor '%s': data_offsets [%llu, %llu] has begin > end", tname,
                         (unsigned long long)t.begin, (unsigned long long)t.end);
            goto fail;
        }
        if (t.end > (uint64_t)ps->file->data_size) {
            st = st_fail(ps, "tensor '%s': data_offsets [%llu, %llu] end beyond the %zu bytes "
                         "of data", tname, (unsigned long long)t.begin,
                         (unsigned long long)t.end, ps->file->data_size);
            goto fail;
        }
        if (overflow) {
            st = st_fail(ps, "tensor '%s': shape %s %s overflows the byte count", tname, shp,
                         st_dtype_label(t.dtype));
            goto fail;
        }
        if (t.end - t.begin != bytes) {
            st = st_fail(ps, "tensor '%s': data_offsets [%llu, %llu] but shape %s %s needs "
                         "%llu bytes", tname, (unsigned long long)t.begin,
                         (unsigned long long)t.end, shp, st_dtype_label(t.dtype),
                         (unsigned long long)bytes);
            goto fail;
        }
    }
    t.name = name;
    if ((st = st_add_tensor(ps, &t)) != MVRT_OK)
        goto fail;
    return MVRT_OK;
fail:
    free(name);
    return st;
}

/* ------------------------------------------------------------------------ */
/* __metadata__                                                             */

static mvrt_status_t st_parse_metadata(st_parser_t *ps)
{
    mvrt_safetensors_t *f = ps->file;
    mvrt_status_t st;
    if (f->has_meta)
        return st_fail(ps, "'__metadata__' given twice");
    f->has_meta = 1;
    st_skip_ws(ps);
    if (st_literal(ps, "null"))
        return MVRT_OK;
    if (!st_accept(ps, '{'))
        return st_fail(ps, "'__metadata__' must be an object of string values");
    if (st_accept(ps, '}'))
        return MVRT_OK;
    do {
        char *key = NULL, *value = NULL;
        if ((st = st_parse_string(ps, &key)) != MVRT_OK)
            return st;
        if (!st_accept(ps, ':')) {
            free(key);
            return st_syntax(ps, "expected ':'");
        }
        st_skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            char kbuf[ST_LABEL_MAX];
            st = st_fail(ps, "'__metadata__' key '%s': value must be a string",
                         st_short(key, kbuf, sizeof kbuf));
            free(key);
            return st;
        }
        if ((st = st_parse_string(ps, &value)) != MVRT_OK) {
            free(key);
            return st;
        }
        for (size_t i = 0; i < f->meta_count; i++) {
            if (strcmp(f->meta[i].key, key) == 0) {
                char kbuf[ST_LABEL_MAX];
                st = st_fail(ps, "'__metadata__' key '%s' given twice",
                             st_short(key, kbuf, sizeof kbuf));
                free(key);
                free(value);
                return st;
            }
        }
        if (f->meta_count == f->meta_cap) {
            size_t ncap = f->meta_cap ? f->meta_cap * 2 : 8;
            st_meta_t *nm = mvrt_rt_realloc(f->meta, ncap * sizeof *nm);
            if (!nm) {
                free(key);
                free(value);
                return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of memory", ps->label);
            }
            f->meta = nm;
            f->meta_cap = ncap;
        }
        f->meta[f->meta_count].key = key;
        f->meta[f->meta_count].value = value;
        f->meta_count++;
    } while (st_accept(ps, ','));
    if (!st_accept(ps, '}'))
        return st_syntax(ps, "expected ',' or '}'");
    return MVRT_OK;
}

/* ------------------------------------------------------------------------ */
/* Whole header                                                             */

/* Sorted index by name (for find) and duplicate detection. A merge sort of
 * our own: qsort has no context argument in C11. */
static void st_merge_sort(const mvrt_safetensors_t *f, size_t *a, size_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    st_merge_sort(f, a, tmp, h);
    st_merge_sort(f, a + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        if (strcmp(f->tensors[a[i]].name, f->tensors[a[j]].name) <= 0)
            tmp[k++] = a[i++];
        else
            tmp[k++] = a[j++];
    }
    while (i < h)
        tmp[k++] = a[i++];
    while (j < n)
        tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

static mvrt_status_t st_build_index(st_parser_t *ps)
{
    mvrt_safetensors_t *f = ps->file;
    if (f->count == 0)
        return MVRT_OK;
    f->sorted = mvrt_rt_malloc(f->count * sizeof *f->sorted);
    size_t *tmp = mvrt_rt_malloc(f->count * sizeof *tmp);
    if (!f->sorted || !tmp) {
        free(tmp);
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of memory", ps->label);
    }
    for (size_t i = 0; i < f->count; i++)
        f->sorted[i] = i;
    st_merge_sort(f, f->sorted, tmp, f->count);
    free(tmp);
    for (size_t i = 1; i < f->count; i++) {
        const char *a = f->tensors[f->sorted[i - 1]].name, *b = f->tensors[f->sorted[i]].name;
        if (strcmp(a, b) == 0) {
            char sbuf[ST_LABEL_MAX];
            return st_fail(ps, "tensor '%s' appears twice in the header",
                           st_short(a, sbuf, sizeof sbuf));
        }
    }
    return MVRT_OK;
}

static mvrt_status_t st_parse_header(st_parser_t *ps)
{
    mvrt_status_t st;
    if (!st_accept(ps, '{'))
        return st_syntax(ps, "the header must be a JSON object");
    if (!st_accept(ps, '}')) {
        do {
            char *key = NULL;
            if ((st = st_parse_string(ps, &key)) != MVRT_OK)
                return st;
            if (!st_accept(ps, ':')) {
                free(key);
                return st_syntax(ps, "expected ':'");
            }
            if (strcmp(key, "__metadata__") == 0) {
                free(key);
                if ((st = st_parse_metadata(ps)) != MVRT_OK)
                    return st;
            } else if ((st = st_parse_tensor(ps, key)) != MVRT_OK) {
                return st;
            }
        } while (st_accept(ps, ','));
        if (!st_accept(ps, '}'))
            return st_syntax(ps, "expected ',' or '}'");
    }
    /* Writers pad the header with spaces to an 8-byte boundary. */
    st_skip_ws(ps);
    if (ps->p != ps->end)
        return st_syntax(ps, "trailing bytes after the JSON object");
    return st_build_index(ps);
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                             */

void mvrt_safetensors_close(mvrt_safetensors_t *file)
{
    if (!file)
        return;
    for (size_t i = 0; i < file->count; i++)
        free(file->tensors[i].name);
    for (size_t i = 0; i < file->meta_count; i++) {
        free(file->meta[i].key);
        free(file->meta[i].value);
    }
    free(file->tensors);
    free(file->sorted);
    free(file->meta);
    free(file->bytes);
    free(file);
}

/* Takes ownership of `bytes` (malloc'd, `size` long) in every case. */
static mvrt_status_t st_open_bytes(unsigned char *bytes, size_t size, const char *label,
                                   mvrt_safetensors_t **out_file)
{
    st_parser_t ps;
    memset(&ps, 0, sizeof ps);
    ps.label = label;
    if (size < 8) {
        free(bytes);
        return st_fail(&ps, "file of %zu bytes is too short for the 8-byte header length", size);
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | bytes[i];
    if (hlen > (uint64_t)(size - 8)) {
        free(bytes);
        return st_fail(&ps, "header length %llu is beyond the end of the file (%zu bytes after "
                       "the length)", (unsigned long long)hlen, size - 8);
    }
    if (hlen > ST_MAX_HEADER_BYTES) {
        free(bytes);
        return st_fail(&ps, "header length %llu is larger than the limit of %llu bytes",
                       (unsigned long long)hlen, (unsigned long long)ST_MAX_HEADER_BYTES);
    }
    if (hlen < 2) {
        free(bytes);
        return st_fail(&ps, "header length %llu is too small for a JSON object",
                       (unsigned long long)hlen);
    }
    mvrt_safetensors_t *f = mvrt_rt_calloc(1, sizeof *f);
    if (!f) {
        free(bytes);
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    }
    f->bytes = bytes;
    f->size = size;
    snprintf(f->label, sizeof f->label, "%s", label);
    f->data = bytes + 8 + hlen;
    f->data_size = size - 8 - (size_t)hlen;
    ps.begin = ps.p = bytes + 8;
    ps.end = bytes + 8 + hlen;
    ps.file = f;
    mvrt_status_t st = st_parse_header(&ps);
    if (st != MVRT_OK) {
        mvrt_safetensors_close(f);
        return st;
    }
    *out_file = f;
    return MVRT_OK;
}

/* Last path component, for messages ("scan.safetensors: ..."). */
static void st_label_from_path(const char *path, char *buf, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (*base == '\0')
        base = path;
    snprintf(buf, cap, "%s", base);
}

mvrt_status_t mvrt_safetensors_open(const char *path, mvrt_safetensors_t **out_file)
{
    if (!path)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT, "mvrt_safetensors_open: path is NULL");
    if (!out_file)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_safetensors_open: out_file is NULL");
    char label[256];
    st_label_from_path(path, label, sizeof label);

    FILE *fp = fopen(path, "rb");
    if (!fp)
        return mvrt_error_set(MVRT_ERR_IO, "%s: cannot open '%s': %s", label, path,
                              strerror(errno));
    unsigned char *bytes = NULL;
    size_t size = 0, cap = 0;
    mvrt_status_t st = MVRT_OK;
    /* Read by chunks: works for pipes and files whose size changes, and
     * never trusts a size reported in advance. */
    for (;;) {
        if (size == cap) {
            size_t ncap = cap ? cap * 2 : ((size_t)1 << 16);
            if (ncap < cap) {
                st = mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: file too large", label);
                break;
            }
            unsigned char *nb = mvrt_rt_realloc(bytes, ncap);
            if (!nb) {
                st = mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY,
                                    "%s: out of memory reading %zu+ bytes", label, size);
                break;
            }
            bytes = nb;
            cap = ncap;
        }
        size_t got = fread(bytes + size, 1, cap - size, fp);
        size += got;
        if (got == 0) {
            if (ferror(fp))
                st = mvrt_error_set(MVRT_ERR_IO, "%s: read error on '%s' after %zu bytes",
                                    label, path, size);
            break;
        }
    }
    fclose(fp);
    if (st != MVRT_OK) {
        free(bytes);
        return st;
    }
    return st_open_bytes(bytes, size, label, out_file);
}

mvrt_status_t mvrt_safetensors_open_memory(const void *bytes, size_t size,
                                           mvrt_safetensors_t **out_file)
{
    if (!bytes && size > 0)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_safetensors_open_memory: bytes is NULL");
    if (!out_file)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_safetensors_open_memory: out_file is NULL");
    unsigned char *copy = mvrt_rt_malloc(size ? size : 1);
    if (!copy)
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY,
                              "mvrt_safetensors_open_memory: out of memory copying %zu bytes",
                              size);
    if (size)
        memcpy(copy, bytes, size);
    return st_open_bytes(copy, size, "<memory>", out_file);
}

size_t mvrt_safetensors_count(const mvrt_safetensors_t *file)
{
    return file ? file->count : 0;
}

static void st_fill(const mvrt_safetensors_t *f, const st_tensor_t *t,
                    mvrt_safetensors_tensor_t *out)
{
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = t->dtype;
    out->rank = t->rank;
    for (int32_t i = 0; i < t->rank; i++)
        out->shape[i] = t->shape[i];
    out->data = f->data + t->begin;
    out->nbytes = (size_t)(t->end - t->begin);
}

mvrt_status_t mvrt_safetensors_at(const mvrt_safetensors_t *file, size_t index,
                                  mvrt_safetensors_tensor_t *out_tensor)
{
    if (!file)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT, "mvrt_safetensors_at: file is NULL");
    if (!out_tensor)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_safetensors_at: out_tensor is NULL");
    if (index >= file->count)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_safetensors_at: index %zu out of range (%zu tensors)", index,
                              file->count);
    st_fill(file, &file->tensors[index], out_tensor);
    return MVRT_OK;
}

mvrt_status_t mvrt_safetensors_find(const mvrt_safetensors_t *file, const char *name,
                                    mvrt_safetensors_tensor_t *out_tensor)
{
    if (!file)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT, "mvrt_safetensors_find: file is NULL");
    if (!name)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT, "mvrt_safetensors_find: name is NULL");
    if (!out_tensor)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_safetensors_find: out_tensor is NULL");
    size_t lo = 0, hi = file->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const st_tensor_t *t = &file->tensors[file->sorted[mid]];
        int c = strcmp(t->name, name);
        if (c == 0) {
            st_fill(file, t, out_tensor);
            return MVRT_OK;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    char sbuf[ST_LABEL_MAX];
    return mvrt_error_set(MVRT_ERR_NOT_FOUND, "%s: no tensor named '%s'", file->label,
                          st_short(name, sbuf, sizeof sbuf));
}

mvrt_status_t mvrt_safetensors_metadata(const mvrt_safetensors_t *file, const char *key,
                                        const char **out_value)
{
    if (!file)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_safetensors_metadata: file is NULL");
    if (!key)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_safetensors_metadata: key is NULL");
    if (!out_value)
        return mvrt_error_set(MVRT_ERR_INVALID_ARGUMENT,
                              "mvrt_safetensors_metadata: out_value is NULL");
    for (size_t i = 0; i < file->meta_count; i++) {
        if (strcmp(file->meta[i].key, key) == 0) {
            *out_value = file->meta[i].value;
            return MVRT_OK;
        }
    }
    char sbuf[ST_LABEL_MAX];
    return mvrt_error_set(MVRT_ERR_NOT_FOUND, "%s: no metadata key '%s'", file->label,
                          st_short(key, sbuf, sizeof sbuf));
}
