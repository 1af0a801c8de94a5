/* timm's evaluation transform of the MambaVision models (contract:
 * include/mvrt/preprocess.h). The resize follows Pillow's separable
 * resampler step for step: coefficients in double, normalized per output
 * pixel, converted to 22-bit fixed point; two separable passes, each
 * rounded to 8 bits, in Pillow 13's order. Only the output
 * pixels inside the centre crop are computed: each depends on its own
 * coefficients alone, so they equal those of the full resize. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mvrt/preprocess.h"

#define INVALID MVRT_ERR_INVALID_ARGUMENT
#define PIL_PRECISION_BITS (32 - 8 - 2)

typedef struct {
    const char *name;
    double crop_pct;
} crop_entry_t;

/* default_cfgs of NVlabs' mambavision/models/mamba_vision.py (1K models:
 * 224 x 224 inputs, bicubic, ImageNet mean and std) */
static const crop_entry_t crop_table[] = {
    {"T", 1.0}, {"T2", 0.98}, {"S", 0.93}, {"B", 1.0}, {"L", 1.0}, {"L2", 1.0},
};

mvrt_status_t mvrt_preprocess_for_config(const char *config, mvrt_preprocess_t *out)
{
    if (!config || !out)
        return mvrt_error_set(INVALID, "mvrt_preprocess_for_config: %s is NULL", config ? "out" : "config");
    for (size_t i = 0; i < sizeof crop_table / sizeof crop_table[0]; i++) {
        if (strcmp(config, crop_table[i].name) != 0)
            continue;
        const mvrt_preprocess_t pp = {224, crop_table[i].crop_pct, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
        *out = pp;
        return MVRT_OK;
    }
    return mvrt_error_set(INVALID, "mvrt_preprocess_for_config: unknown config \"%s\" (T, T2, S, B, L, L2)", config);
}

/* Pillow's bicubic kernel (a = -0.5). */
static double bicubic(double x)
{
    const double a = -0.5;
    if (x < 0.0)
        x = -x;
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0)
        return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
    return 0.0;
}

/* Coefficients of one axis, in_size -> out_size: for output index i the
 * taps start at bounds[2i] and number bounds[2i + 1], with fixed-point
 * weights kk[i * ksize ..]. */
typedef struct {
    int ksize;
    int *bounds;
    int32_t *kk;
} axis_coeffs_t;

static void axis_free(axis_coeffs_t *a)
{
    free(a->bounds);
    free(a->kk);
    a->bounds = NULL, a->kk = NULL;
}

static int axis_make(int in_size, int out_size, axis_coeffs_t *a)
{
    double filterscale = (double)in_size / out_size;
    const double scale = filterscale;
    if (filterscale < 1.0)
        filterscale = 1.0;
    const double support = 2.0 * filterscale;
    a->ksize = (int)ceil(support) * 2 + 1;
    a->bounds = mvrt_rt_malloc((size_t)out_size * 2 * sizeof(int));
    a->kk = mvrt_rt_malloc((size_t)out_size * (size_t)a->ksize * sizeof(int32_t));
    double *k = mvrt_rt_malloc((size_t)a->ksize * sizeof(double));
    if (!a->bounds || !a->kk || !k) {
        free(k);
        axis_free(a);
        return -1;
    }
    for (int xx = 0; xx < out_size; xx++) {
        const double center = (xx + 0.5) * scale;
        const double ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5);
        if (xmin < 0)
            xmin = 0;
        int xmax = (int)(center + support + 0.5);
        if (xmax > in_size)
            xmax = in_size;
        xmax -= xmin;
        double ww = 0.0;
        for (int x = 0; x < xmax; x++) {
            k[x] = bicubic((x + xmin - center + 0.5) * ss);
            ww += k[x];
        }
        int32_t *kk = a->kk + (size_t)xx * a->ksize;
        for (int x = 0; x < a->ksize; x++) {
            const double w = x < xmax ? (ww != 0.0 ? k[x] / ww : k[x]) : 0.0;
            kk[x] = (int32_t)(w < 0 ? -0.5 + w * (1 << PIL_PRECISION_BITS) : 0.5 + w * (1 << PIL_PRECISION_BITS));
        }
        a->bounds[2 * xx] = xmin;
        a->bounds[2 * xx + 1] = xmax;
    }
    free(k);
    return 0;
}

static uint8_t clip8(int32_t v)
{
    if (v >= (1 << PIL_PRECISION_BITS << 8))
        return 255;
    if (v <= 0)
        return 0;
    return (uint8_t)(v >> PIL_PRECISION_BITS);
}

/* One output sample: the 8-bit taps at src, src + step, ... */
static uint8_t tap_sum(const uint8_t *src, ptrdiff_t step, const int32_t *kk, int n)
{
    int32_t ss = 1 << (PIL_PRECISION_BITS - 1);
    for (int x = 0; x < n; x++)
        ss += src[x * step] * kk[x];
    return clip8(ss);
}

/* Python's round(v) of a non-negative half-integer-or-integer v = n / 2. */
static int64_t round_half_even_div2(int64_t n)
{
    const int64_t q = n / 2;
    return (n % 2 == 0) ? q : (q % 2 == 0 ? q : q + 1);
}

mvrt_status_t mvrt_preprocess_rgb8(const uint8_t *rgb, int64_t width, int64_t height, int64_t row_stride,
                                   const mvrt_preprocess_t *pp, float *out_chw, uint8_t *out_rgb8)
{
    static const char fn[] = "mvrt_preprocess_rgb8";
    if (!rgb || !pp || !out_chw)
        return mvrt_error_set(INVALID, "%s: %s is NULL", fn, !rgb ? "rgb" : !pp ? "pp" : "out_chw");
    if (width <= 0 || height <= 0 || width > (1 << 20) || height > (1 << 20))
        return mvrt_error_set(INVALID, "%s: image %lld x %lld (each side 1 .. 2^20)", fn, (long long)width,
                              (long long)height);
    if (row_stride < 3 * width)
        return mvrt_error_set(INVALID, "%s: row_stride %lld < 3 * width (%lld)", fn, (long long)row_stride,
                              (long long)(3 * width));
    if (pp->image_size <= 0 || pp->image_size > (1 << 16))
        return mvrt_error_set(INVALID, "%s: image_size %d (1 .. 65536)", fn, pp->image_size);
    if (!(pp->crop_pct > 0.0 && pp->crop_pct <= 1.0))
        return mvrt_error_set(INVALID, "%s: crop_pct %g outside (0, 1]", fn, pp->crop_pct);
    for (int c = 0; c < 3; c++)
        if (!isfinite(pp->mean[c]) || !isfinite(pp->std[c]) || !(pp->std[c] > 0.f))
            return mvrt_error_set(INVALID, "%s: mean[%d] = %g, std[%d] = %g (finite, std > 0)", fn, c,
                                  (double)pp->mean[c], c, (double)pp->std[c]);
    /* resized size: torchvision's Resize(int) with timm's scale size */
    const double scaled = floor(pp->image_size / pp->crop_pct);
    if (scaled > (double)(1 << 20))
        return mvrt_error_set(INVALID, "%s: image_size / crop_pct = %g is too large", fn, scaled);
    const int64_t S = (int64_t)scaled;
    const int64_t shortside = width <= height ? width : height, longside = width <= height ? height : width;
    const int64_t longnew = (int64_t)((double)(S * longside) / (double)shortside);
    const int64_t new_w = width <= height ? S : longnew, new_h = width <= height ? longnew : S;
    const int64_t size = pp->image_size;
    if (new_w < size || new_h < size || new_w > (1 << 24) || new_h > (1 << 24))
        return mvrt_error_set(INVALID, "%s: a %lld x %lld image resizes to %lld x %lld, outside the %lld crop's range",
                              fn, (long long)width, (long long)height, (long long)new_w, (long long)new_h,
                              (long long)size);
    const int64_t top = round_half_even_div2(new_h - size), left = round_half_even_div2(new_w - size);

    const int resize_w = new_w != width, resize_h = new_h != height;
    axis_coeffs_t ax = {0, NULL, NULL}, ay = {0, NULL, NULL};
    if ((resize_w && axis_make((int)width, (int)new_w, &ax) != 0) ||
        (resize_h && axis_make((int)height, (int)new_h, &ay) != 0)) {
        axis_free(&ax);
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of memory for the resize coefficients", fn);
    }
    /* Pillow 13 runs the vertical pass first when the height shrinks by
     * more than twice as many pixels as the width (older Pillow always went
     * horizontal first: those results differ by a few levels at most) */
    const int vertical_first = resize_w && resize_h && height - new_h > 0 && height - new_h > (width - new_w) * 2;
    /* source rows / columns the crop's output rows / columns read */
    int64_t y0 = top, y1 = top + size, x0 = left, x1 = left + size;
    if (resize_h)
        y0 = ay.bounds[2 * top], y1 = ay.bounds[2 * (top + size - 1)] + ay.bounds[2 * (top + size - 1) + 1];
    if (resize_w)
        x0 = ax.bounds[2 * left], x1 = ax.bounds[2 * (left + size - 1)] + ax.bounds[2 * (left + size - 1) + 1];
    /* first pass into mid: horizontal over rows y0 .. y1 (size columns), or
     * vertical over columns x0 .. x1 (size rows) */
    const int64_t mid_rows = vertical_first ? size : y1 - y0, mid_cols = vertical_first ? x1 - x0 : size;
    uint8_t *mid = mvrt_rt_malloc((size_t)mid_rows * (size_t)mid_cols * 3);
    uint8_t *crop = mvrt_rt_malloc((size_t)size * (size_t)size * 3);
    if (!mid || !crop) {
        free(mid);
        free(crop);
        axis_free(&ax);
        axis_free(&ay);
        return mvrt_error_set(MVRT_ERR_OUT_OF_MEMORY, "%s: out of memory for the resize buffers", fn);
    }
    const ptrdiff_t mid_row = (ptrdiff_t)mid_cols * 3;
    for (int64_t r = 0; r < mid_rows; r++)
        for (int64_t x = 0; x < mid_cols; x++)
            for (int c = 0; c < 3; c++) {
                uint8_t *dst = mid + r * mid_row + x * 3 + c;
                if (vertical_first) {
                    const int64_t yy = top + r;
                    *dst = tap_sum(rgb + (size_t)ay.bounds[2 * yy] * (size_t)row_stride + (x0 + x) * 3 + c,
                                   (ptrdiff_t)row_stride, ay.kk + (size_t)yy * ay.ksize, ay.bounds[2 * yy + 1]);
                } else {
                    const uint8_t *src = rgb + (y0 + r) * row_stride;
                    const int64_t xx = left + x;
                    *dst = resize_w ? tap_sum(src + (size_t)ax.bounds[2 * xx] * 3 + c, 3,
                                              ax.kk + (size_t)xx * ax.ksize, ax.bounds[2 * xx + 1])
                                    : src[xx * 3 + c];
                }
            }
    /* second pass into the crop */
    for (int64_t y = 0; y < size; y++)
        for (int64_t x = 0; x < size; x++)
            for (int c = 0; c < 3; c++) {
                uint8_t *dst = crop + (y * size + x) * 3 + c;
                const int64_t yy = top + y, xx = left + x;
                if (vertical_first)
                    *dst = tap_sum(mid + y * mid_row + (ax.bounds[2 * xx] - x0) * 3 + c, 3,
                                   ax.kk + (size_t)xx * ax.ksize, ax.bounds[2 * xx + 1]);
                else if (resize_h)
                    *dst = tap_sum(mid + (ay.bounds[2 * yy] - y0) * mid_row + x * 3 + c, mid_row,
                                   ay.kk + (size_t)yy * ay.ksize, ay.bounds[2 * yy + 1]);
                else
                    *dst = mid[(yy - y0) * mid_row + x * 3 + c];
            }
    /* ToTensor and Normalize, channel-major */
    for (int c = 0; c < 3; c++)
        for (int64_t i = 0; i < size * size; i++)
            out_chw[c * size * size + i] = ((float)crop[i * 3 + c] / 255.0f - pp->mean[c]) / pp->std[c];
    if (out_rgb8)
        memcpy(out_rgb8, crop, (size_t)size * (size_t)size * 3);
    free(mid);
    free(crop);
    axis_free(&ax);
    axis_free(&ay);
    return MVRT_OK;
}
