/* Fuzz target: image decoding and preprocessing (mvrt_image_decode, then
 * mvrt_preprocess_rgb8 of what it accepts) on an arbitrary file image.
 *
 * Besides memory errors (ASan) and undefined behaviour (UBSan) it checks
 * the decoder's promises: a failure leaves *out as it was and a message; an
 * accepted image has sides in 1 .. max_side and its rgb bytes are all
 * readable; the preprocessing of any accepted image succeeds. The side
 * limit is small (512) so that a fuzzed header cannot ask for much memory. */
#include <string.h>

#include "fuzz_util.h"
#include "mvrt/preprocess.h"

#define FUZZ_MAX_SIDE 512

static volatile unsigned sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t marker = 0;
    mvrt_image_t img = {&marker, -1, -1};
    const mvrt_status_t st = mvrt_image_decode(size ? data : (const uint8_t *)"", size, FUZZ_MAX_SIDE, &img);
    if (st != MVRT_OK) {
        FUZZ_CHECK(img.rgb == &marker && img.width == -1 && img.height == -1);
        FUZZ_CHECK(st == MVRT_ERR_INVALID_ARGUMENT || st == MVRT_ERR_OUT_OF_MEMORY || st == MVRT_ERR_UNSUPPORTED);
        FUZZ_CHECK(mvrt_last_error()[0] != '\0');
        if (fuzz_verbose())
            fprintf(stderr, "refused: %s\n", mvrt_last_error());
        return 0;
    }
    FUZZ_CHECK(img.rgb != NULL && img.width >= 1 && img.height >= 1);
    FUZZ_CHECK(img.width <= FUZZ_MAX_SIDE && img.height <= FUZZ_MAX_SIDE);
    unsigned acc = 0;
    for (int64_t i = 0; i < img.width * img.height * 3; i++)
        acc += img.rgb[i];
    sink += acc;
    mvrt_preprocess_t pp;
    FUZZ_CHECK(mvrt_preprocess_for_config("T2", &pp) == MVRT_OK);
    pp.image_size = 16;
    float out[3 * 16 * 16];
    FUZZ_CHECK(mvrt_preprocess_rgb8(img.rgb, img.width, img.height, img.width * 3, &pp, out, NULL) == MVRT_OK);
    if (fuzz_verbose())
        fprintf(stderr, "decoded %lld x %lld\n", (long long)img.width, (long long)img.height);
    mvrt_image_free(&img);
    return 0;
}
