/* CPU window partition / reverse (contract: mvrt_window_params_t in
 * mv_op_params.h). Pure data movement between NCHW maps and
 * (windows, window^2, C) token rows, i.e. a transpose of channels against
 * positions: each task handles one row of the (padded) map and goes through
 * WN_CB x WN_XB tiles in a stack buffer, so the map side is read/written
 * along x and the token side along channels, both contiguous. Rows are
 * spread over threads; the op is memory-bound, so threads only start for
 * maps of some size. */
#include <stdint.h>

#include "ops/mv/mv_kernels.h"

#define WN_CB 32
#define WN_XB 64

typedef struct wn_geom {
    int64_t B, C, H, W, nh, nw, Hp, Wp, ws;
} wn_geom_t;

static wn_geom_t wn_geom(const mvrt_window_params_t *p)
{
    wn_geom_t g;
    g.B = p->batch;
    g.C = p->channels;
    g.H = p->height;
    g.W = p->width;
    g.ws = p->window;
    g.nh = (g.H + g.ws - 1) / g.ws;
    g.nw = (g.W + g.ws - 1) / g.ws;
    g.Hp = g.nh * g.ws;
    g.Wp = g.nw * g.ws;
    return g;
}

/* Token row (within the whole token tensor) of padded-map position (y, x) of
 * image b. */
static inline int64_t wn_token(const wn_geom_t *g, int64_t b, int64_t y, int64_t x)
{
    const int64_t win = (b * g->nh + y / g->ws) * g->nw + x / g->ws;
    return win * g->ws * g->ws + (y % g->ws) * g->ws + x % g->ws;
}

/* Padded row y of image b -> its tokens. */
static void wn_partition_row(const mvrt_window_params_t *p, const wn_geom_t *g, int64_t b,
                             int64_t y)
{
    float tile[WN_CB][WN_XB];
    const int64_t C = g->C, HW = g->H * g->W;
    for (int64_t x0 = 0; x0 < g->Wp; x0 += WN_XB) {
        const int nx = (int)(g->Wp - x0 < WN_XB ? g->Wp - x0 : WN_XB);
        /* Columns [x0, x0 + nin) of this tile lie inside the image. */
        int nin = 0;
        if (y < g->H && x0 < g->W)
            nin = (int)(g->W - x0 < nx ? g->W - x0 : nx);
        for (int64_t c0 = 0; c0 < C; c0 += WN_CB) {
            const int nc = (int)(C - c0 < WN_CB ? C - c0 : WN_CB);
            for (int c = 0; c < nc; c++) {
                const float *src = p->src + (b * C + c0 + c) * HW + y * g->W + x0;
                for (int x = 0; x < nin; x++)
                    tile[c][x] = src[x];
                for (int x = nin; x < nx; x++)
                    tile[c][x] = 0.0f;
            }
            for (int x = 0; x < nx; x++) {
                float *dst = p->dst + wn_token(g, b, y, x0 + x) * C + c0;
                for (int c = 0; c < nc; c++)
                    dst[c] = tile[c][x];
            }
        }
    }
}

/* Image row y of image b <- its tokens (padding tokens are never read). */
static void wn_reverse_row(const mvrt_window_params_t *p, const wn_geom_t *g, int64_t b,
                           int64_t y)
{
    float tile[WN_CB][WN_XB];
    const int64_t C = g->C, HW = g->H * g->W;
    for (int64_t x0 = 0; x0 < g->W; x0 += WN_XB) {
        const int nx = (int)(g->W - x0 < WN_XB ? g->W - x0 : WN_XB);
        for (int64_t c0 = 0; c0 < C; c0 += WN_CB) {
            const int nc = (int)(C - c0 < WN_CB ? C - c0 : WN_CB);
            for (int x = 0; x < nx; x++) {
                const float *src = p->src + wn_token(g, b, y, x0 + x) * C + c0;
                for (int c = 0; c < nc; c++)
                    tile[c][x] = src[c];
            }
            for (int c = 0; c < nc; c++) {
                float *dst = p->dst + (b * C + c0 + c) * HW + y * g->W + x0;
                for (int x = 0; x < nx; x++)
                    dst[x] = tile[c][x];
            }
        }
    }
}

typedef void (*wn_row_fn)(const mvrt_window_params_t *, const wn_geom_t *, int64_t, int64_t);

/* Runs row(p, g, b, y) over the batch's rows of `rows_per_image` rows of
 * `width` pixels (the padded grid for partition, the image for reverse),
 * split over threads once the map is large enough to pay for them. */
static void wn_run_rows(const mvrt_window_params_t *p, int threads, wn_row_fn row, int padded)
{
    if (p->batch <= 0 || p->channels <= 0 || p->height <= 0 || p->width <= 0 || p->window <= 0)
        return;
    const wn_geom_t g = wn_geom(p);
    const int64_t rows_per_image = padded ? g.Hp : g.H, width = padded ? g.Wp : g.W;
    const int nt = threads < 1 ? 1 : threads;
    const int64_t nrow = g.B * rows_per_image, elems = nrow * width * g.C;
    (void)nt;
    (void)elems;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && nrow > 1 && elems >= 65536)
#endif
    for (int64_t r = 0; r < nrow; r++)
        row(p, &g, r / rows_per_image, r % rows_per_image);
}

void mvrt_cpu_window_partition(const mvrt_window_params_t *p, int threads)
{
    wn_run_rows(p, threads, wn_partition_row, 1);
}

void mvrt_cpu_window_reverse(const mvrt_window_params_t *p, int threads)
{
    wn_run_rows(p, threads, wn_reverse_row, 0);
}
