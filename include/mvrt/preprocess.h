/* Image preprocessing of the pretrained MambaVision models: what timm's
 * evaluation transform does to a decoded RGB image before the network sees
 * it, so that an application feeding mvrt gets the inputs the published
 * accuracies were measured with, without rewriting it.
 *
 * The transform, for an 8-bit RGB image of width W and height H:
 *   1. resize so that the shorter side is S = floor(image_size / crop_pct)
 *      and the longer side int(S * long / short) (torchvision's Resize with
 *      an int size), with PIL's antialiased bicubic filter (a = -0.5, the
 *      support widened by the downscale factor, two separable passes each
 *      rounded to 8 bits in PIL's 22-bit fixed point, in Pillow 13's pass
 *      order): bit for bit what Pillow's Image.resize(..., BICUBIC)
 *      produces (tests/runtime/test_preprocess.c);
 *   2. the centred image_size x image_size crop (offsets rounded half to
 *      even, as Python's round);
 *   3. x / 255, then (x - mean[c]) / std[c] in fp32, written channel-major
 *      (C, H, W): one image of the model's NCHW input.
 * Blocking, host memory only, no allocation beyond the temporary resize
 * buffers (freed before returning), thread-safe.
 *
 * Errors (nothing written): MVRT_ERR_INVALID_ARGUMENT for NULL pointers,
 * non-positive or overflowing sizes, a row stride below 3 * width, a
 * crop_pct outside (0, 1], mean/std that are not finite or std <= 0;
 * MVRT_ERR_OUT_OF_MEMORY when the resize buffers cannot be allocated. */
#ifndef MVRT_PREPROCESS_H
#define MVRT_PREPROCESS_H

#include "mvrt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mvrt_preprocess {
    int32_t image_size; /* side of the square output */
    double crop_pct;    /* shorter side resized to floor(image_size / crop_pct) */
    float mean[3];      /* per channel, of x / 255 */
    float std[3];
} mvrt_preprocess_t;

/* The evaluation transform of a MambaVision pretrained config: "T" (crop_pct
 * 1.0), "T2" (0.98), "S" (0.93), "B", "L", "L2" (1.0); 224 x 224 images and
 * the ImageNet mean and std, as the model code's default_cfgs state them.
 * Unknown names: MVRT_ERR_INVALID_ARGUMENT listing the known ones. */
MVRT_API mvrt_status_t mvrt_preprocess_for_config(const char *config, mvrt_preprocess_t *out);

/* The transform above. rgb: height rows of width * 3 bytes (R, G, B), row
 * i at rgb + i * row_stride. out_chw: 3 * image_size * image_size floats.
 * out_rgb8: NULL, or image_size * image_size * 3 bytes receiving the
 * cropped 8-bit image before normalization (what PIL would hold). */
MVRT_API mvrt_status_t mvrt_preprocess_rgb8(const uint8_t *rgb, int64_t width, int64_t height, int64_t row_stride,
                                            const mvrt_preprocess_t *pp, float *out_chw, uint8_t *out_rgb8);

/* A decoded 8-bit RGB image: height rows of width * 3 bytes, packed.
 * Owned by mvrt: release it with mvrt_image_free. */
typedef struct mvrt_image {
    uint8_t *rgb;
    int64_t width, height;
} mvrt_image_t;

/* Decodes a JPEG or PNG file held in memory (the format from its
 * signature) into 8-bit RGB, as Pillow's Image.open(f).convert("RGB")
 * gives it: JPEG through libjpeg(-turbo) with its default (ISLOW, fancy
 * upsampling) decoding, grayscale replicated; PNG palettes expanded, alpha
 * dropped (not composited), 16-bit colour samples reduced to their high
 * byte, 16-bit grayscale clipped to 255 (as Pillow converts "I;16"), no
 * gamma or EXIF orientation applied (Pillow applies neither).
 * Refused with MVRT_ERR_INVALID_ARGUMENT and the reason: an unknown
 * signature, an empty, corrupt or truncated file (a JPEG whose data ends
 * early is an error, never a gray-filled image: every libjpeg warning is
 * one), a CMYK / YCCK JPEG, a side over max_side (read from the header,
 * before any large allocation; max_side <= 0 means 16384).
 * MVRT_ERR_UNSUPPORTED: this libmvrt was built without libjpeg or libpng
 * (the message says which). On failure *out is left as it was.
 * Blocking, thread-safe. */
MVRT_API mvrt_status_t mvrt_image_decode(const void *bytes, size_t size, int64_t max_side, mvrt_image_t *out);

/* Releases out->rgb and zeroes *img; NULL or an empty image is a no-op. */
MVRT_API void mvrt_image_free(mvrt_image_t *img);

#ifdef __cplusplus
}
#endif
#endif
