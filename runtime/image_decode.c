/* JPEG and PNG decoding into 8-bit RGB (contract: include/mvrt/preprocess.h)
 * through libjpeg(-turbo) and libpng, built in when CMake finds them
 * (MVRT_HAVE_JPEG / MVRT_HAVE_PNG). Both libraries report fatal errors by
 * calling back; the callbacks longjmp to the decoder, which frees what it
 * allocated and returns the library's message. */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mvrt/preprocess.h"

#define INVALID MVRT_ERR_INVALID_ARGUMENT
#define MVRT_IMAGE_DEFAULT_MAX_SIDE 16384

#ifdef MVRT_HAVE_JPEG
#include <jpeglib.h>
#endif
#ifdef MVRT_HAVE_PNG
#include <png.h>
#endif

static const char fn[] = "mvrt_image_decode";

/* ---- JPEG ---------------------------------------------------------------- */
#ifdef MVRT_HAVE_JPEG
typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
} jpeg_errors_t;

static void jpeg_fail(j_common_ptr cinfo)
{
    jpeg_errors_t *err = (jpeg_errors_t *)(void *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->jump, 1);
}

/* A warning means damaged data (libjpeg would fill the rest with gray):
 * an error here. Trace messages (level > 0) are ignored. */
static void jpeg_message(j_common_ptr cinfo, int level)
{
    if (level < 0)
        jpeg_fail(cinfo);
}

static mvrt_status_t decode_jpeg(const uint8_t *bytes, size_t size, int64_t max_side, mvrt_image_t *out)
{
    struct jpeg_decompress_struct cinfo;
    jpeg_errors_t err;
    uint8_t *volatile rgb = NULL;
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = jpeg_fail;
    err.pub.emit_message = jpeg_message;
    err.message[0] = '\0';
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        free(rgb);
        return mvrt_error_set(INVALID, "%s: JPEG: %s", fn, err.message);
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, bytes, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    if ((int64_t)cinfo.image_width > max_side || (int64_t)cinfo.image_height > max_side) {
        const unsigned w = cinfo.image_width, h = cinfo.image_height;
        jpeg_destroy_decompress(&cinfo);
        return mvrt_error_set(INVALID, "%s: JPEG of %u x %u pixels: a side over the limit %lld", fn, w, h,
                              (long long)max_side);
    }
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&cinfo);
        return mvrt_error_set(INVALID, "%s: CMYK / YCCK JPEGs are not supported", fn);
    }
    cinfo.out_color_space = JCS_RGB; /* grayscale is replicated */
    jpeg_start_decompress(&cinfo);
    const size_t row = (size_t)cinfo.output_width * 3;
    rgb = mvrt_rt_malloc(row * cinfo.output_height);
    if (!rgb) {
        jpeg_destroy_decompress(&cinfo);
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: cannot allocate %u x %u RGB pixels", fn,
                              cinfo.output_width, cinfo.output_height);
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW line = rgb + (size_t)cinfo.output_scanline * row;
        jpeg_read_scanlines(&cinfo, &line, 1);
    }
    jpeg_finish_decompress(&cinfo); /* reads to EOI: a missing end warns, and fails here */
    out->rgb = rgb;
    out->width = cinfo.output_width;
    out->height = cinfo.output_height;
    jpeg_destroy_decompress(&cinfo);
    return MVRT_OK;
}
#endif

/* ---- PNG ----------------------------------------------------------------- */
#ifdef MVRT_HAVE_PNG
typedef struct {
    const uint8_t *bytes;
    size_t size, pos;
    jmp_buf jump;
    char message[256];
} png_source_t;

static void png_fail(png_structp png, png_const_charp msg)
{
    png_source_t *src = png_get_error_ptr(png);
    snprintf(src->message, sizeof src->message, "%s", msg);
    longjmp(src->jump, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg; /* ancillary-chunk warnings: the pixels are intact */
}

static void png_read_mem(png_structp png, png_bytep data, png_size_t n)
{
    png_source_t *src = png_get_io_ptr(png);
    if (n > src->size - src->pos)
        png_error(png, "the file ends early (truncated)");
    memcpy(data, src->bytes + src->pos, n);
    src->pos += n;
}

static mvrt_status_t decode_png(const uint8_t *bytes, size_t size, int64_t max_side, mvrt_image_t *out)
{
    /* the IHDR chunk's size first (bytes 16..23 of every PNG): a clear
     * message, and nothing allocated for an oversized image */
    if (size >= 24) {
        const uint32_t w = (uint32_t)bytes[16] << 24 | (uint32_t)bytes[17] << 16 | (uint32_t)bytes[18] << 8 | bytes[19];
        const uint32_t h = (uint32_t)bytes[20] << 24 | (uint32_t)bytes[21] << 16 | (uint32_t)bytes[22] << 8 | bytes[23];
        if ((int64_t)w > max_side || (int64_t)h > max_side)
            return mvrt_error_set(INVALID, "%s: PNG of %u x %u pixels: a side over the limit %lld", fn, w, h,
                                  (long long)max_side);
    }
    png_source_t src;
    memset(&src, 0, sizeof src);
    src.bytes = bytes, src.size = size;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fail, png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    uint8_t *volatile raw = NULL;
    uint8_t *volatile rgb = NULL;
    png_bytep *volatile rows = NULL;
    if (!png || !info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: cannot create the PNG reader", fn);
    }
    if (setjmp(src.jump)) {
        png_destroy_read_struct(&png, &info, NULL);
        free(raw), free(rgb), free(rows);
        return mvrt_error_set(INVALID, "%s: PNG: %s", fn, src.message);
    }
    png_set_read_fn(png, &src, png_read_mem);
    png_set_user_limits(png, (png_uint_32)max_side, (png_uint_32)max_side);
    png_read_info(png, info);
    const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    /* palettes to RGB (tRNS not turned into alpha: convert("RGB") drops
     * it), low-depth gray to 8 bits, 16-bit samples big-endian as stored */
    if (color == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    const int channels = png_get_channels(png, info), bytes_per = png_get_bit_depth(png, info) == 16 ? 2 : 1;
    const size_t rowbytes = png_get_rowbytes(png, info);
    raw = mvrt_rt_malloc(rowbytes * h);
    rgb = mvrt_rt_malloc((size_t)w * h * 3);
    rows = mvrt_rt_malloc(sizeof(png_bytep) * h);
    if (!raw || !rgb || !rows) {
        png_destroy_read_struct(&png, &info, NULL);
        free(raw), free(rgb), free(rows);
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: cannot allocate a %u x %u PNG", fn, w, h);
    }
    for (png_uint_32 y = 0; y < h; y++)
        rows[y] = raw + (size_t)y * rowbytes;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    const int gray = channels <= 2;
    for (png_uint_32 y = 0; y < h; y++)
        for (png_uint_32 x = 0; x < w; x++) {
            const uint8_t *p = rows[y] + (size_t)x * channels * bytes_per;
            uint8_t *q = rgb + ((size_t)y * w + x) * 3;
            for (int c = 0; c < 3; c++) {
                const uint8_t *s = p + (gray ? 0 : c) * bytes_per;
                if (bytes_per == 1)
                    q[c] = s[0];
                else if (gray && channels == 1) /* Pillow's "I;16" -> RGB clips */
                    q[c] = (uint8_t)((s[0] << 8 | s[1]) > 255 ? 255 : s[1]);
                else
                    q[c] = s[0]; /* the high byte, as Pillow's 16-bit unpackers */
            }
        }
    png_destroy_read_struct(&png, &info, NULL);
    free(raw);
    free(rows);
    out->rgb = rgb;
    out->width = w;
    out->height = h;
    return MVRT_OK;
}
#endif

mvrt_status_t mvrt_image_decode(const void *bytes, size_t size, int64_t max_side, mvrt_image_t *out)
{
    if (!bytes || !out)
        return mvrt_error_set(INVALID, "%s: %s is NULL", fn, !bytes ? "bytes" : "out");
    if (max_side <= 0)
        max_side = MVRT_IMAGE_DEFAULT_MAX_SIDE;
    if (max_side > 1 << 20)
        return mvrt_error_set(INVALID, "%s: max_side %lld over 2^20", fn, (long long)max_side);
    const uint8_t *b = bytes;
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    mvrt_image_t img = {NULL, 0, 0};
    mvrt_status_t st;
    if (size == 0)
        return mvrt_error_set(INVALID, "%s: the file is empty", fn);
    if (size >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
#ifdef MVRT_HAVE_JPEG
        st = decode_jpeg(b, size, max_side, &img);
#else
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED, "%s: this libmvrt was built without libjpeg", fn);
#endif
    } else if (size >= 8 && memcmp(b, png_sig, 8) == 0) {
#ifdef MVRT_HAVE_PNG
        st = decode_png(b, size, max_side, &img);
#else
        return mvrt_error_set(MVRT_ERR_UNSUPPORTED, "%s: this libmvrt was built without libpng", fn);
#endif
    } else {
        return mvrt_error_set(INVALID, "%s: neither a JPEG nor a PNG file (unknown signature)", fn);
    }
    if (st == MVRT_OK)
        *out = img;
    return st;
}

void mvrt_image_free(mvrt_image_t *img)
{
    if (!img)
        return;
    free(img->rgb);
    img->rgb = NULL;
    img->width = img->height = 0;
}
