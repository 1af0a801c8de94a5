/* mvrt_preprocess_rgb8 against Pillow (tools/make_preprocess_fixtures.py
 * wrote data/preprocess_fixtures.safetensors: seeded images and the 8-bit
 * crops that timm's evaluation transform makes of them with Pillow's
 * bicubic resize): the crop must equal Pillow's byte for byte (the
 * resampler is Pillow's fixed-point arithmetic), also from a padded row
 * stride; the normalized output must be (x / 255 - mean) / std of it; bad
 * arguments must be refused with the output untouched; the configs' crop
 * percentages are the model code's.
 * usage: test_preprocess FIXTURES.safetensors */
#include <math.h>
#include <stdint.h>

#include "test_util.h"
#include "mvrt/preprocess.h"

#define SENTINEL -12345.0f

static const mvrt_safetensors_tensor_t *find(const mvrt_safetensors_t *f, const char *name)
{
    static mvrt_safetensors_tensor_t t;
    if (mvrt_safetensors_find(f, name, &t) != MVRT_OK) {
        fprintf(stderr, "fixture %s missing: %s\n", name, mvrt_last_error());
        return NULL;
    }
    return &t;
}

static void check_case(const mvrt_safetensors_t *f, int i)
{
    char key[32], name[48];
    snprintf(key, sizeof key, "case%d", i);
    const char *meta = NULL;
    CHECK_OK(mvrt_safetensors_metadata(f, key, &meta));
    int size = 0;
    double crop = 0.0;
    CHECK(meta && sscanf(meta, "{\"image_size\": %d, \"crop_pct\": %lf}", &size, &crop) == 2);
    snprintf(name, sizeof name, "case%d.input", i);
    const mvrt_safetensors_tensor_t *tin = find(f, name);
    CHECK(tin != NULL);
    if (!tin)
        return;
    const mvrt_safetensors_tensor_t in = *tin;
    snprintf(name, sizeof name, "case%d.expected", i);
    const mvrt_safetensors_tensor_t *tex = find(f, name);
    CHECK(tex != NULL && tex->rank == 3 && tex->shape[0] == size && tex->shape[1] == size && tex->shape[2] == 3);
    CHECK(in.rank == 3 && in.shape[2] == 3 && in.dtype == MVRT_DTYPE_U8);
    if (!tex || size <= 0)
        return;
    const int64_t h = in.shape[0], w = in.shape[1], n = (int64_t)size * size;
    mvrt_preprocess_t pp;
    CHECK_OK(mvrt_preprocess_for_config("T", &pp));
    pp.image_size = size, pp.crop_pct = crop;

    float *out = malloc((size_t)(3 * n) * sizeof(float));
    uint8_t *crop8 = malloc((size_t)(3 * n));
    /* a padded copy: rows 3w + 7 bytes apart, the padding 0xA5 */
    const int64_t stride = 3 * w + 7;
    uint8_t *padded = malloc((size_t)(stride * h));
    if (!out || !crop8 || !padded) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    memset(padded, 0xA5, (size_t)(stride * h));
    for (int64_t y = 0; y < h; y++)
        memcpy(padded + y * stride, (const uint8_t *)in.data + y * 3 * w, (size_t)(3 * w));

    for (int pass = 0; pass < 2; pass++) {
        memset(crop8, 0, (size_t)(3 * n));
        const uint8_t *src = pass ? padded : (const uint8_t *)in.data;
        CHECK_OK(mvrt_preprocess_rgb8(src, w, h, pass ? stride : 3 * w, &pp, out, crop8));
        int64_t differ = 0, worst = 0;
        const uint8_t *want = tex->data;
        for (int64_t k = 0; k < 3 * n; k++) {
            const int64_t d = llabs((int64_t)crop8[k] - (int64_t)want[k]);
            differ += d != 0;
            worst = d > worst ? d : worst;
        }
        double worst_norm = 0.0;
        for (int c = 0; c < 3; c++)
            for (int64_t k = 0; k < n; k++) {
                const float ref = ((float)want[k * 3 + c] / 255.0f - pp.mean[c]) / pp.std[c];
                const double e = fabs((double)out[c * n + k] - (double)ref);
                worst_norm = e > worst_norm ? e : worst_norm;
            }
        printf("case %d %s: %lldx%lld -> %d (crop_pct %g): %lld of %lld bytes differ from Pillow (worst %lld), "
               "normalized worst |err| %.3g\n",
               i, pass ? "padded" : "packed", (long long)w, (long long)h, size, crop, (long long)differ,
               (long long)(3 * n), (long long)worst, worst_norm);
        CHECK(differ == 0);
        CHECK(worst_norm <= 1e-6);
    }
    free(out);
    free(crop8);
    free(padded);
}

static void check_bad_arguments(void)
{
    uint8_t img[4 * 4 * 3] = {0};
    float out[3 * 4 * 4];
    mvrt_preprocess_t pp;
    CHECK_OK(mvrt_preprocess_for_config("S", &pp));
    pp.image_size = 4;
    for (size_t k = 0; k < sizeof out / sizeof out[0]; k++)
        out[k] = SENTINEL;
    CHECK_ERR(mvrt_preprocess_rgb8(NULL, 4, 4, 12, &pp, out, NULL), MVRT_ERR_INVALID_ARGUMENT, "rgb", NULL);
    CHECK_ERR(mvrt_preprocess_rgb8(img, 4, 4, 12, NULL, out, NULL), MVRT_ERR_INVALID_ARGUMENT, "pp", NULL);
    CHECK_ERR(mvrt_preprocess_rgb8(img, 4, 4, 12, &pp, NULL, NULL), MVRT_ERR_INVALID_ARGUMENT, "out_chw", NULL);
    CHECK_ERR(mvrt_preprocess_rgb8(img, 0, 4, 12, &pp, out, NULL), MVRT_ERR_INVALID_ARGUMENT, "image 0 x 4", NULL);
    CHECK_ERR(mvrt_preprocess_rgb8(img, 4, (int64_t)1 << 40, 12, &pp, out, NULL), MVRT_ERR_INVALID_ARGUMENT,
              "2^20", NULL);
    CHECK_ERR(mvrt_preprocess_rgb8(img, 4, 4, 11, &pp, out, NULL), MVRT_ERR_INVALID_ARGUMENT, "row_stride", NULL);
    mvrt_preprocess_t bad = pp;
    bad.crop_pct = 0.0;
    CHECK_ERR(mvrt_preprocess_rgb8(img, 4, 4, 12, &bad, out, NULL), MVRT_ERR_INVALID_ARGUMENT, "crop_pct", NULL);
    bad.crop_pct = 1.5;
    CHECK_ERR(mvrt_preprocess_rgb8(img, 4, 4, 12, &bad, out, NULL), MVRT_ERR_INVALID_ARGUMENT, "crop_pct", NULL);
    bad.crop_pct = NAN;
    CHECK_ERR(mvrt_preprocess_rgb8(img, 4, 4, 12, &bad, out, NULL), MVRT_ERR_INVALID_ARGUMENT, "crop_pct", NULL);
    bad = pp;
    bad.std[1] = 0.f;
    CHECK_ERR(mvrt_preprocess_rgb8(img, 4, 4, 12, &bad, out, NULL), MVRT_ERR_INVALID_ARGUMENT, "std[1]", NULL);
    bad = pp;
    bad.image_size = 0;
    CHECK_ERR(mvrt_preprocess_rgb8(img, 4, 4, 12, &bad, out, NULL), MVRT_ERR_INVALID_ARGUMENT, "image_size", NULL);
    int untouched = 1;
    for (size_t k = 0; k < sizeof out / sizeof out[0]; k++)
        untouched &= out[k] == SENTINEL;
    CHECK(untouched);

    /* the configs' crop percentages (mamba_vision.py default_cfgs) */
    const struct { const char *name; double crop; } cfg[] = {
        {"T", 1.0}, {"T2", 0.98}, {"S", 0.93}, {"B", 1.0}, {"L", 1.0}, {"L2", 1.0}};
    for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
        mvrt_preprocess_t c;
        CHECK_OK(mvrt_preprocess_for_config(cfg[k].name, &c));
        CHECK(c.image_size == 224 && c.crop_pct == cfg[k].crop && c.mean[0] == 0.485f && c.std[2] == 0.225f);
    }
    CHECK_ERR(mvrt_preprocess_for_config("XL", &pp), MVRT_ERR_INVALID_ARGUMENT, "unknown config", "T2", NULL);
    CHECK_ERR(mvrt_preprocess_for_config(NULL, &pp), MVRT_ERR_INVALID_ARGUMENT, "config", NULL);
}

/* Every allocation of a resizing call failed in turn: OUT_OF_MEMORY with
 * the output untouched, then the same call succeeds with the same bytes. */
static void check_allocation_failures(void)
{
    enum { W = 37, H = 53, S = 16 };
    static uint8_t img[W * H * 3];
    for (size_t k = 0; k < sizeof img; k++)
        img[k] = (uint8_t)(k * 37u + 11u);
    mvrt_preprocess_t pp;
    CHECK_OK(mvrt_preprocess_for_config("S", &pp));
    pp.image_size = S;
    static float ref[3 * S * S], out[3 * S * S];
    CHECK_OK(mvrt_preprocess_rgb8(img, W, H, 3 * W, &pp, ref, NULL));
    int failures = 0;
    for (int64_t n = 1; n < 32; n++) {
        for (size_t k = 0; k < sizeof out / sizeof out[0]; k++)
            out[k] = SENTINEL;
        mvrt_debug_fail_allocation(n);
        const mvrt_status_t st = mvrt_preprocess_rgb8(img, W, H, 3 * W, &pp, out, NULL);
        mvrt_debug_fail_allocation(0);
        if (st == MVRT_OK) {
            CHECK(memcmp(out, ref, sizeof out) == 0);
            break; /* past the call's last allocation */
        }
        failures++;
        CHECK(st == MVRT_ERR_OUT_OF_MEMORY);
        int untouched = 1;
        for (size_t k = 0; k < sizeof out / sizeof out[0]; k++)
            untouched &= out[k] == SENTINEL;
        CHECK(untouched);
    }
    printf("allocation failures injected: %d (each OUT_OF_MEMORY, output untouched)\n", failures);
    CHECK(failures >= 4); /* two axes' coefficients and two buffers */
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_preprocess FIXTURES.safetensors\n");
        return 2;
    }
    mvrt_safetensors_t *f = NULL;
    CHECK_OK(mvrt_safetensors_open(argv[1], &f));
    if (!f)
        return 1;
    const char *cases = NULL;
    CHECK_OK(mvrt_safetensors_metadata(f, "cases", &cases));
    const int n = cases ? atoi(cases) : 0;
    CHECK(n > 0);
    for (int i = 0; i < n; i++)
        check_case(f, i);
    mvrt_safetensors_close(f);
    check_bad_arguments();
    check_allocation_failures();
    TEST_END();
}
