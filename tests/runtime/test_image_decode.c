/* mvrt_image_decode against Pillow (tools/make_image_fixtures.py wrote
 * data/images: JPEGs and PNGs and, in expected.safetensors, what
 * Image.open(f).convert("RGB") gives for each): PNGs must equal Pillow's
 * pixels exactly; JPEGs within 1 level (both decode with libjpeg-turbo's
 * ISLOW IDCT, but Pillow bundles its own libjpeg-turbo release). Damaged
 * files must be refused with a reason and *out untouched: truncated JPEG
 * and PNG, a JPEG missing only its end marker, an empty file, an unknown
 * signature, headers claiming 100000 x 100000 / 60000 x 60000 pixels (read
 * from the header, nothing allocated), a max_side below the image; every
 * injected allocation failure returns OUT_OF_MEMORY.
 * usage: test_image_decode DIR  (MVRT_TEST_HAVE_JPEG / _PNG: the build
 * found the library, so UNSUPPORTED is a failure) */
#include <stdint.h>

#include "test_util.h"
#include "mvrt/preprocess.h"

static const char *dir;

static uint8_t *read_file(const char *name, size_t *size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    if (!buf) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    *size = (size_t)n;
    return buf;
}

static int is_jpeg(const char *name) { return strstr(name, ".jpg") != NULL; }

/* A failing decode must leave *out exactly as it was. */
static void check_refused(const char *what, const uint8_t *bytes, size_t size, int64_t max_side, const char *reason)
{
    uint8_t marker = 0;
    mvrt_image_t img = {&marker, 7, 9};
    const mvrt_status_t st = mvrt_image_decode(bytes, size, max_side, &img);
    printf("%-28s -> %s: %s\n", what, mvrt_status_string(st), mvrt_last_error());
    CHECK(st == MVRT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mvrt_last_error(), reason) != NULL);
    CHECK(img.rgb == &marker && img.width == 7 && img.height == 9);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_image_decode DIR\n");
        return 2;
    }
    dir = argv[1];
    char path[1024];
    snprintf(path, sizeof path, "%s/expected.safetensors", dir);
    mvrt_safetensors_t *f = NULL;
    CHECK_OK(mvrt_safetensors_open(path, &f));
    if (!f)
        return 1;
    const int have[2] = {MVRT_TEST_HAVE_JPEG, MVRT_TEST_HAVE_PNG};
    for (size_t i = 0; i < mvrt_safetensors_count(f); i++) {
        mvrt_safetensors_tensor_t want;
        CHECK_OK(mvrt_safetensors_at(f, i, &want));
        const int jpeg = is_jpeg(want.name);
        size_t size = 0;
        uint8_t *bytes = read_file(want.name, &size);
        mvrt_image_t img = {NULL, 0, 0};
        const mvrt_status_t st = mvrt_image_decode(bytes, size, 0, &img);
        if (st == MVRT_ERR_UNSUPPORTED && !have[jpeg ? 0 : 1]) {
            printf("%-12s SKIP: %s\n", want.name, mvrt_last_error());
            free(bytes);
            continue;
        }
        CHECK_OK(st);
        CHECK(img.width == want.shape[1] && img.height == want.shape[0]);
        int64_t worst = 0, differ = 0;
        if (st == MVRT_OK && img.width == want.shape[1] && img.height == want.shape[0]) {
            const uint8_t *w = want.data;
            for (int64_t k = 0; k < img.width * img.height * 3; k++) {
                const int64_t d = llabs((int64_t)img.rgb[k] - (int64_t)w[k]);
                worst = d > worst ? d : worst;
                differ += d != 0;
            }
        }
        printf("%-12s %lld x %lld: %lld bytes differ from Pillow, worst %lld\n", want.name, (long long)img.width,
               (long long)img.height, (long long)differ, (long long)worst);
        CHECK(worst <= (jpeg ? 1 : 0));
        mvrt_image_free(&img);
        CHECK(img.rgb == NULL && img.width == 0);

        if (st == MVRT_OK) {
            /* damaged copies of the same file */
            check_refused(jpeg ? "JPEG cut at 60 %" : "PNG cut at 60 %", bytes, size * 6 / 10, 0, jpeg ? "JPEG" : "PNG");
            if (jpeg)
                check_refused("JPEG without its end marker", bytes, size - 2, 0, "JPEG");
            check_refused("max_side below the image", bytes, size, 5, "over the limit");
            /* every allocation of the decode failed in turn */
            int failures = 0;
            for (int64_t n = 1; n < 64; n++) {
                mvrt_image_t t = {NULL, 0, 0};
                mvrt_debug_fail_allocation(n);
                const mvrt_status_t s2 = mvrt_image_decode(bytes, size, 0, &t);
                mvrt_debug_fail_allocation(0);
                if (s2 == MVRT_OK) {
                    mvrt_image_free(&t);
                    break;
                }
                failures++;
                CHECK(s2 == MVRT_ERR_OUT_OF_MEMORY && t.rgb == NULL);
            }
            CHECK(failures >= 1);
        }
        free(bytes);
    }
    mvrt_safetensors_close(f);

    static const uint8_t gif[] = "GIF89a\x01\x00\x01\x00";
    check_refused("unknown signature", gif, sizeof gif - 1, 0, "signature");
    check_refused("empty file", gif, 0, 0, "empty");
    const char *huge[] = {"huge.png", "huge.jpg"};
    for (int k = 0; k < 2; k++) {
        if (!have[k == 1 ? 0 : 1])
            continue;
        size_t size = 0;
        uint8_t *bytes = read_file(huge[k], &size);
        check_refused(huge[k], bytes, size, 0, "over the limit");
        free(bytes);
    }
    uint8_t marker = 0;
    mvrt_image_t img = {&marker, 1, 1};
    CHECK_ERR(mvrt_image_decode(NULL, 4, 0, &img), MVRT_ERR_INVALID_ARGUMENT, "bytes", NULL);
    CHECK_ERR(mvrt_image_decode(gif, 4, 0, NULL), MVRT_ERR_INVALID_ARGUMENT, "out", NULL);
    CHECK_ERR(mvrt_image_decode(gif, 4, (int64_t)1 << 30, &img), MVRT_ERR_INVALID_ARGUMENT, "max_side", NULL);
    CHECK(img.rgb == &marker);
    mvrt_image_free(NULL);
    TEST_END();
}
