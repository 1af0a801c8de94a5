/* Double reference of window partition / reverse (contract:
 * mv_reference.h), written directly from the definition: pad the map with
 * zeros to multiples of the window, cut row-major windows, tokens row-major
 * inside a window; the reverse crops the padding away. */
#include <stdint.h>

#include "ops/mv/mv_kernels.h"

void mvrt_ref_window_partition(const mvrt_window_params_t *p, double *out)
{
    const int64_t C = p->channels, H = p->height, W = p->width, ws = p->window;
    const int64_t nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t wh = 0; wh < nh; wh++)
            for (int64_t ww = 0; ww < nw; ww++)
                for (int64_t i = 0; i < ws; i++)
                    for (int64_t j = 0; j < ws; j++) {
                        const int64_t tok = ((b * nh + wh) * nw + ww) * ws * ws + i * ws + j;
                        const int64_t y = wh * ws + i, x = ww * ws + j;
                        for (int64_t c = 0; c < C; c++)
                            out[tok * C + c] = (y < H && x < W)
                                                   ? (double)p->src[((b * C + c) * H + y) * W + x]
                                                   : 0.0;
                    }
}

void mvrt_ref_window_reverse(const mvrt_window_params_t *p, double *out)
{
    const int64_t C = p->channels, H = p->height, W = p->width, ws = p->window;
    const int64_t nh = (H + ws - 1) / ws, nw = (W + ws - 1) / ws;
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++) {
                    const int64_t tok =
                        ((b * nh + y / ws) * nw + x / ws) * ws * ws + (y % ws) * ws + x % ws;
                    out[((b * C + c) * H + y) * W + x] = p->src[tok * C + c];
                }
}
