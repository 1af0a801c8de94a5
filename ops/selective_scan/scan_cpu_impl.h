/* Body of the CPU selective-scan kernels, compiled once per instruction set
 * by scan_cpu_{avx512,avx2,generic}.c, which define MVRT_SCAN_LANES and
 * MVRT_SCAN_SUFFIX first. Semantics: shared/spec/selective_scan.md.
 *
 * Layout of the work. One vector holds W consecutive channels of one batch
 * row, all in the same group, so that a variable B[n,t] / C[n,t] is one
 * broadcast scalar. A "block" is such a set of <= W channels (a ragged last
 * block of a group uses fewer lanes; its empty lanes compute on zeros and
 * are never stored). Time is processed in tiles of T steps: u, delta, z and
 * dout are transposed into time-major stack/workspace buffers (T x W),
 * B/C rows are copied into contiguous N x T tiles (also avoids the cache
 * aliasing of N rows L apart), and states are advanced 8 (4, 2, 1) at a
 * time with h in registers over the whole tile.
 *
 * Backward, per block: pass 1 runs the recurrence over the row and keeps the
 * state at every chunk start (K steps per chunk; a row that fits in cache
 * is one chunk and skips it); pass 2 walks the chunks backwards and, 8
 * states at a time, recomputes their a_t and h_t from the chunk's saved
 * start state and runs the adjoint recurrence (bwd_chunk). Every result that sums over something
 * the task decomposition splits (channels of a group, batch) goes through
 * fixed partial slots in the workspace, reduced in a fixed order afterwards:
 * the result is bitwise the same for every thread count. */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "scan_cpu_internal.h"
#include "scan_cpu_simd.h"

#define MVRT_CAT2(a, b) a##_##b
#define MVRT_CAT(a, b) MVRT_CAT2(a, b)
#define KFN(name) MVRT_CAT(name, MVRT_SCAN_SUFFIX)

#define MVRT_MIN(a, b) ((a) < (b) ? (a) : (b))

/* Scratch of one block; points into the stack (forward) or the workspace. */
typedef struct scan_scratch {
    int N, K;                    /* states; tile capacity in steps */
    int ldbc;                    /* row pitch of Bs/Cs: K + 16, so that the N
                                  * rows read together do not alias in L1 */
    vf *U, *V, *DT, *DTU, *Y, *Z, *G, *S1, *S2; /* K vectors each */
    vf *G0;                      /* K vectors: dout before the z gate (backward with z) */
    float *Bs, *Cs;              /* N x K (variable B / C) */
    vf *h, *hs, *Av, *Bv, *Cv;   /* N vectors each */
    vf *carry, *dA, *dBc, *dCc;  /* N vectors each (backward) */
    vf *HA, *HH;                 /* K rows of MVRT_BWD_SLAB: a_t and h_t of one slab of
                                  * states over a chunk (backward, bwd_chunk) */
    vf *ckpt;                    /* nch x N: state at each chunk start */
    vf Dv, biasv;
} scan_scratch_t;

/* ---- operand access ------------------------------------------------------ */

static void load_lane_vec(vf *dst, const mvrt_scan_operand_t *op, int64_t d0, int w, int n)
{
    float tmp[W];
    const float *a = (const float *)op->data;
    for (int l = 0; l < W; l++)
        tmp[l] = (l < w && a) ? a[(d0 + l) * op->stride[0] + (int64_t)n * op->stride[1]] : 0.0f;
    *dst = vloadu(tmp);
}

static void load_lane_consts(const mvrt_scan_params_t *p, scan_scratch_t *s, int64_t d0, int w)
{
    const int N = s->N;
    for (int n = 0; n < N; n++) {
        load_lane_vec(&s->Av[n], &p->A, d0, w, n);
        if (!p->b_variable)
            load_lane_vec(&s->Bv[n], &p->B, d0, w, n);
        if (!p->c_variable)
            load_lane_vec(&s->Cv[n], &p->C, d0, w, n);
    }
    load_lane_vec(&s->Dv, &p->D, d0, w, 0);
    load_lane_vec(&s->biasv, &p->delta_bias, d0, w, 0);
}

/* dst[t] (lane l) = op[b, d0 + l, t0 + t] for t < tn, l < w; other lanes 0. */
static void load_tile(vf *dst, const mvrt_scan_operand_t *op, int dt, int64_t b, int64_t d0,
                      int w, int64_t t0, int tn)
{
    const size_t es = dt_size(dt);
    const int64_t s1 = op->stride[1], s2 = op->stride[2];
    const char *base = (const char *)op->data + (size_t)(b * op->stride[0] + d0 * s1 + t0 * s2) * es;
    int t = 0;
    if (w == W && s2 == 1) {
        for (; t + W <= tn; t += W) {
            vf m[W];
            for (int l = 0; l < W; l++)
                m[l] = ld_row(base + (size_t)(l * s1 + t) * es, dt);
            transpose(m);
            for (int l = 0; l < W; l++)
                dst[t + l] = m[l];
        }
    }
    for (; t < tn; t++) {
        float tmp[W];
        for (int l = 0; l < W; l++)
            tmp[l] = l < w ? ld_elem(base, l * s1 + t * s2, dt) : 0.0f;
        dst[t] = vloadu(tmp);
    }
}

/* Asks for the cache lines of op[b, d0 .. d0+w-1, t0 .. t0+tn-1] (the next
 * tile of a contiguous row): rows of one block are W separate streams that
 * the hardware prefetchers do not follow well. */
static void prefetch_tile(const mvrt_scan_operand_t *op, int dt, int64_t b, int64_t d0, int w,
                          int64_t t0, int tn)
{
    if (!op->data || op->stride[2] != 1 || tn <= 0)
        return;
    const size_t es = dt_size(dt);
    const char *base = (const char *)op->data + (size_t)(b * op->stride[0] + d0 * op->stride[1] + t0) * es;
    for (int l = 0; l < w; l++) {
        const char *r = base + (size_t)(l * op->stride[1]) * es;
        for (size_t off = 0; off < (size_t)tn * es; off += 64)
            __builtin_prefetch(r + off, 0, 3);
        __builtin_prefetch(r + (size_t)tn * es - 1, 0, 3);
    }
}

/* op[b, d0 + l, t0 + t] = src[t] (lane l) for t < tn, l < w. */
static void store_tile(const vf *src, const mvrt_scan_operand_t *op, int dt, int64_t b, int64_t d0,
                       int w, int64_t t0, int tn)
{
    const size_t es = dt_size(dt);
    const int64_t s1 = op->stride[1], s2 = op->stride[2];
    char *base = (char *)op->data + (size_t)(b * op->stride[0] + d0 * s1 + t0 * s2) * es;
    int t = 0;
    if (w == W && s2 == 1) {
        for (; t + W <= tn; t += W) {
            vf m[W];
            for (int l = 0; l < W; l++)
                m[l] = src[t + l];
            transpose(m);
            for (int l = 0; l < W; l++)
                st_row(base + (size_t)(l * s1 + t) * es, m[l], dt);
        }
    }
    for (; t < tn; t++) {
        vf v = src[t];
        for (int l = 0; l < w; l++)
            st_elem(base, l * s1 + t * s2, v[l], dt);
    }
}

/* dst[n * ld + t] = op[b, g, n, t0 + t] (variable B or C) as f32. */
static void load_bc_tile(float *dst, int ld, const mvrt_scan_operand_t *op, int dt, int64_t b,
                         int64_t g, int N, int64_t t0, int tn)
{
    const size_t es = dt_size(dt);
    const int64_t s2 = op->stride[2], s3 = op->stride[3];
    const char *base = (const char *)op->data + (size_t)(b * op->stride[0] + g * op->stride[1] + t0 * s3) * es;
    for (int n = 0; n < N; n++) {
        const char *row = base + (size_t)(n * s2) * es;
        float *d = dst + (size_t)n * ld;
        if (s3 == 1 && dt == MVRT_SCAN_F32) {
            memcpy(d, row, (size_t)tn * 4);
        } else if (s3 == 1 && dt == MVRT_SCAN_BF16) {
            const uint16_t *r = (const uint16_t *)row;
            for (int t = 0; t < tn; t++)
                d[t] = mvrt_bf16_to_f32(r[t]);
        } else {
            for (int t = 0; t < tn; t++)
                d[t] = ld_elem(row, t * s3, dt);
        }
    }
}

/* Loads u, delta (and B/C) of a tile; V = delta + bias, DT = softplus(V) or
 * V, DTU = DT * u, and Y = D * u when the output is wanted. Prefetches
 * u and delta of steps [pf_t0, pf_t0 + pf_tn), the tile that comes next. */
static void prep_tile(const mvrt_scan_params_t *p, scan_scratch_t *s, int64_t b, int64_t g,
                      int64_t d0, int w, int64_t t0, int tn, int need_y, int need_c,
                      int64_t pf_t0, int pf_tn)
{
    const int dt = p->input_dtype;
    load_tile(s->U, &p->u, dt, b, d0, w, t0, tn);
    load_tile(s->V, &p->delta, dt, b, d0, w, t0, tn);
    if (pf_tn > 0) {
        prefetch_tile(&p->u, dt, b, d0, w, pf_t0, pf_tn);
        prefetch_tile(&p->delta, dt, b, d0, w, pf_t0, pf_tn);
    }
    const vf bias = s->biasv, Dv = s->Dv;
    for (int t = 0; t < tn; t++) {
        vf v = s->V[t] + bias;
        vf d = p->delta_softplus ? vsoftplus(v) : v;
        s->V[t] = v;
        s->DT[t] = d;
        s->DTU[t] = d * s->U[t];
        if (need_y)
            s->Y[t] = Dv * s->U[t];
    }
    if (p->b_variable)
        load_bc_tile(s->Bs, s->ldbc, &p->B, dt, b, g, s->N, t0, tn);
    if (p->c_variable && need_c)
        load_bc_tile(s->Cs, s->ldbc, &p->C, dt, b, g, s->N, t0, tn);
}

/* ---- the recurrences ----------------------------------------------------- */

/* Advances NC states over tn steps: h = exp(DT A) h + DTU B; Y += C h when
 * want_y; with hist, stores a_t and h_t into HA/HH[t * ldh + j]. */
MVRT_SI void fwd_states(const int NC, const int bvar, const int cvar, const int want_y,
                        const int hist, int tn, int ld, const vf *DT, const vf *DTU, vf *Y,
                        const vf *Av, vf *h, const float *Bs, const vf *Bv, const float *Cs,
                        const vf *Cv, vf *HA, vf *HH, int ldh)
{
    vf hr[8], Ar[8];
#pragma GCC unroll 8
    for (int j = 0; j < NC; j++) {
        hr[j] = h[j];
        Ar[j] = Av[j];
    }
    for (int t = 0; t < tn; t++) {
        const vf dtv = DT[t], du = DTU[t];
        vf y = want_y ? Y[t] : vzero();
#pragma GCC unroll 8
        for (int j = 0; j < NC; j++) {
            vf a = vexp(dtv * Ar[j]);
            vf bb = bvar ? du * Bs[(size_t)j * ld + t] : du * Bv[j];
            hr[j] = a * hr[j] + bb;
            if (want_y)
                y = y + (cvar ? Cs[(size_t)j * ld + t] * hr[j] : Cv[j] * hr[j]);
            if (hist) {
                HA[(size_t)t * ldh + j] = a;
                HH[(size_t)t * ldh + j] = hr[j];
            }
        }
        if (want_y)
            Y[t] = y;
    }
#pragma GCC unroll 8
    for (int j = 0; j < NC; j++)
        h[j] = hr[j];
}

/* The states 8 (4, 2, 1) at a time, without history (the forward, and
 * the backward's pass 1; pass 2 runs its history slab by slab in
 * bwd_chunk). */
#define MVRT_FWD_STATES_CHUNKS(bvar, cvar, want_y)                                            \
    for (int n0 = 0; n0 < N;) {                                                              \
        int rem = N - n0;                                                                    \
        int nc = rem >= 8 ? 8 : rem >= 4 ? 4 : rem >= 2 ? 2 : 1;                             \
        const float *bs_ = (bvar) ? s->Bs + (size_t)n0 * s->ldbc : NULL;                        \
        const float *cs_ = (cvar) ? s->Cs + (size_t)n0 * s->ldbc : NULL;                        \
        const vf *bv_ = (bvar) ? NULL : s->Bv + n0, *cv_ = (cvar) ? NULL : s->Cv + n0;       \
        switch (nc) {                                                                        \
        case 8: fwd_states(8, bvar, cvar, want_y, 0, tn, s->ldbc, s->DT, s->DTU, s->Y,           \
                           s->Av + n0, s->h + n0, bs_, bv_, cs_, cv_, NULL, NULL, 0); break;  \
        case 4: fwd_states(4, bvar, cvar, want_y, 0, tn, s->ldbc, s->DT, s->DTU, s->Y,           \
                           s->Av + n0, s->h + n0, bs_, bv_, cs_, cv_, NULL, NULL, 0); break;  \
        case 2: fwd_states(2, bvar, cvar, want_y, 0, tn, s->ldbc, s->DT, s->DTU, s->Y,           \
                           s->Av + n0, s->h + n0, bs_, bv_, cs_, cv_, NULL, NULL, 0); break;  \
        default: fwd_states(1, bvar, cvar, want_y, 0, tn, s->ldbc, s->DT, s->DTU, s->Y,          \
                            s->Av + n0, s->h + n0, bs_, bv_, cs_, cv_, NULL, NULL, 0); break; \
        }                                                                                    \
        n0 += nc;                                                                            \
    }

#define MVRT_DEF_FWD_VARIANT(name, bvar, cvar, want_y)                         \
    static void name(scan_scratch_t *s, int tn)                                \
    {                                                                          \
        const int N = s->N;                                                    \
        MVRT_FWD_STATES_CHUNKS(bvar, cvar, want_y)                             \
    }

/* Forward output (y) */
MVRT_DEF_FWD_VARIANT(fwd_y_vv, 1, 1, 1)
MVRT_DEF_FWD_VARIANT(fwd_y_vc, 1, 0, 1)
MVRT_DEF_FWD_VARIANT(fwd_y_cv, 0, 1, 1)
MVRT_DEF_FWD_VARIANT(fwd_y_cc, 0, 0, 1)
/* States only (backward pass 1; C irrelevant) */
MVRT_DEF_FWD_VARIANT(fwd_h_v, 1, 0, 0)
MVRT_DEF_FWD_VARIANT(fwd_h_c, 0, 0, 0)

static void run_fwd_states(const mvrt_scan_params_t *p, scan_scratch_t *s, int tn, int want_y)
{
    const int bv = p->b_variable != 0, cv = p->c_variable != 0;
    if (want_y) {
        if (bv)
            cv ? fwd_y_vv(s, tn) : fwd_y_vc(s, tn);
        else
            cv ? fwd_y_cv(s, tn) : fwd_y_cc(s, tn);
    } else {
        bv ? fwd_h_v(s, tn) : fwd_h_c(s, tn);
    }
}

/* Adjoint recurrence over NC states, steps tn-1 .. 0 of a chunk:
 *   lam_t = C_t g_t + a_{t+1} lam_{t+1}        (carry = a_{t+1} lam_{t+1})
 *   S1_t += sum_n lam B,  S2_t += sum_n A a h_{t-1} lam,
 *   dA += dt a h_{t-1} lam,  dB: lam dt u (kept in HA for variable B),
 *   dC (constant): g h_t. */
MVRT_SI void bwd_states(const int NC, const int bvar, const int cvar, int tn, int ld, int first,
                        const vf *G, const vf *DT, const vf *DTU, vf *S1, vf *S2, const vf *Av,
                        vf *carry, vf *dA, vf *dBc, vf *dCc, const float *Bs, const vf *Bv,
                        const float *Cs, const vf *Cv, vf *HA, const vf *HH, const vf *hstart,
                        int ldh)
{
    vf cr[8], dAr[8], dBr[8], dCr[8];
#pragma GCC unroll 8
    for (int j = 0; j < NC; j++) {
        cr[j] = carry[j];
        dAr[j] = dA[j];
        dBr[j] = bvar ? vzero() : dBc[j];
        dCr[j] = cvar ? vzero() : dCc[j];
    }
    for (int t = tn - 1; t >= 0; t--) {
        const vf g = G[t], dtv = DT[t], du = DTU[t];
        const vf *hprev = t > 0 ? HH + (size_t)(t - 1) * ldh : hstart;
        vf s1 = vzero(), s2 = vzero();
#pragma GCC unroll 8
        for (int j = 0; j < NC; j++) {
            vf ct = cvar ? vbc(Cs[(size_t)j * ld + t]) : Cv[j];
            vf lam = ct * g + cr[j];
            vf a = HA[(size_t)t * ldh + j];
            vf wv = lam * (a * hprev[j]);
            vf bt = bvar ? vbc(Bs[(size_t)j * ld + t]) : Bv[j];
            s1 = s1 + lam * bt;
            s2 = s2 + Av[j] * wv;
            dAr[j] = dAr[j] + dtv * wv;
            cr[j] = a * lam;
            if (bvar)
                HA[(size_t)t * ldh + j] = lam * du;
            else
                dBr[j] = dBr[j] + lam * du;
            if (!cvar)
                dCr[j] = dCr[j] + g * HH[(size_t)t * ldh + j];
        }
        if (first) {
            S1[t] = s1;
            S2[t] = s2;
        } else {
            S1[t] = S1[t] + s1;
            S2[t] = S2[t] + s2;
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NC; j++) {
        carry[j] = cr[j];
        dA[j] = dAr[j];
        if (!bvar)
            dBc[j] = dBr[j];
        if (!cvar)
            dCc[j] = dCr[j];
    }
}

/* ---- forward ------------------------------------------------------------- */

static int fwd_tile_steps(int N)
{
    int T = 4096 / N;
    T -= T % W;
    if (T > 64)
        T = 64;
    if (T < W)
        T = W;
    return T;
}

static void fwd_block(const mvrt_scan_params_t *p, scan_scratch_t *s, int64_t b, int64_t g,
                      int64_t d0, int w)
{
    const int N = s->N, T = s->K;
    const int64_t L = p->seqlen;
    load_lane_consts(p, s, d0, w);
    for (int n = 0; n < N; n++)
        s->h[n] = vzero();
    for (int64_t t0 = 0; t0 < L; t0 += T) {
        const int tn = (int)MVRT_MIN((int64_t)T, L - t0);
        const int64_t nx0 = t0 + T;
        const int nxn = (int)MVRT_MIN((int64_t)T, L - nx0);
        prep_tile(p, s, b, g, d0, w, t0, tn, 1, 1, nx0, nxn);
        if (p->z.data && nxn > 0)
            prefetch_tile(&p->z, p->input_dtype, b, d0, w, nx0, nxn);
        run_fwd_states(p, s, tn, 1);
        if (p->z.data) {
            load_tile(s->Z, &p->z, p->input_dtype, b, d0, w, t0, tn);
            for (int t = 0; t < tn; t++)
                s->Y[t] = s->Y[t] * (s->Z[t] * vsigmoid(s->Z[t]));
        }
        store_tile(s->Y, &p->out, p->input_dtype, b, d0, w, t0, tn);
    }
    if (p->last_state.data) {
        float *ls = (float *)p->last_state.data;
        const int64_t *st = p->last_state.stride;
        for (int n = 0; n < N; n++)
            for (int l = 0; l < w; l++)
                ls[b * st[0] + (d0 + l) * st[1] + (int64_t)n * st[2]] = s->h[n][l];
    }
}

/* Consecutive tasks handed to one thread at a time: enough chunks per
 * thread for balance, long enough runs that prefetching the next task's
 * first tile pays. Only scheduling depends on it, never a result. */
static int64_t sched_chunk(int64_t ntask, int nt)
{
    int64_t c = ntask / (8 * (int64_t)nt);
    return c < 1 ? 1 : c > 4 ? 4 : c;
}

/* Prefetches u, delta (and dout, z) of steps [t0, t0 + tn) of a block. */
static void prefetch_block(const mvrt_scan_params_t *p, int64_t b, int64_t d0, int w, int64_t t0,
                           int tn, int bwd)
{
    const int dt = p->input_dtype;
    prefetch_tile(&p->u, dt, b, d0, w, t0, tn);
    prefetch_tile(&p->delta, dt, b, d0, w, t0, tn);
    if (p->z.data)
        prefetch_tile(&p->z, dt, b, d0, w, t0, tn);
    if (bwd)
        prefetch_tile(&p->dout, dt, b, d0, w, t0, tn);
}

void KFN(mvrt_cpu_scan_fwd)(const mvrt_scan_params_t *p, int num_threads)
{
    const int64_t Bt = p->batch, Dm = p->dim, G = p->groups;
    const int N = (int)p->dstate;
    const int64_t cpg = Dm / G, nbg = (cpg + W - 1) / W;
    const int64_t ntask = Bt * G * nbg;
    const int nt = mvrt_cpu_scan_resolve_threads(num_threads);
    const int64_t chunk = sched_chunk(ntask, nt);
    (void)nt;
#ifdef _OPENMP
/* Dynamic: tasks are coarse and independent of the thread count, so a
 * thread slowed by another process just takes fewer chunks of them. */
#pragma omp parallel for schedule(dynamic, chunk) num_threads(nt) if (nt > 1 && ntask > 1)
#endif
    for (int64_t task = 0; task < ntask; task++) {
        const int T = fwd_tile_steps(N);
        const int nbs = p->b_variable ? N * (T + 16) : 1, ncs = p->c_variable ? N * (T + 16) : 1;
        /* Stack scratch, at most ~70 KB (N = 256): no allocation per call. */
        vf U[T], V[T], DT[T], DTU[T], Y[T], Z[T];
        vf h[N], Av[N], Bv[p->b_variable ? 1 : N], Cv[p->c_variable ? 1 : N];
        float Bs[nbs], Cs[ncs];
        scan_scratch_t s;
        memset(&s, 0, sizeof s);
        s.N = N;
        s.K = T;
        s.ldbc = T + 16;
        s.U = U; s.V = V; s.DT = DT; s.DTU = DTU; s.Y = Y; s.Z = Z;
        s.h = h; s.Av = Av; s.Bv = Bv; s.Cv = Cv;
        s.Bs = Bs; s.Cs = Cs;
        if ((task + 1) % chunk != 0 && task + 1 < ntask) { /* the next task is ours */
            const int64_t nb = (task + 1) / (G * nbg), nr = (task + 1) % (G * nbg);
            const int64_t nj = nr % nbg, nd0 = (nr / nbg) * cpg + nj * W;
            prefetch_block(p, nb, nd0, (int)MVRT_MIN((int64_t)W, cpg - nj * W), 0,
                           (int)MVRT_MIN((int64_t)T, p->seqlen), 0);
        }
        const int64_t b = task / (G * nbg), r = task % (G * nbg), g = r / nbg, j = r % nbg;
        const int64_t d0 = g * cpg + j * W;
        fwd_block(p, &s, b, g, d0, (int)MVRT_MIN((int64_t)W, cpg - j * W));
    }
}

/* ---- backward ------------------------------------------------------------ */

/* States per slab of pass 2 (bwd_chunk): the most one fwd_states /
 * bwd_states call keeps in registers. */
#define MVRT_BWD_SLAB 8

/* Chunk length. Per step, pass 2 keeps in cache the chunk's B and C tile
 * columns (2 N floats), its step vectors (U .. G0: 10) and one slab's
 * a_t and h_t (2 MVRT_BWD_SLAB vectors). A row whose steps fit in
 * MVRT_BWD_WHOLE_BYTES (one core's L2 on the 2-core AMD EPYC of
 * docs/performance.md; 1-2 MB on current x86 server cores) takes one
 * chunk, which skips pass 1 (a whole forward over the row); longer rows
 * take chunks of MVRT_BWD_CHUNK_BYTES, which stay in cache while pass 2
 * walks them. Measured (session 57, that EPYC, 1 thread, bwd of
 * 16x64x256xN, same run): one chunk against the earlier chunks of 256 KB
 * of whole-N history 1.53 -> 2.08 G/s at N = 64, 1.52 -> 2.03 at 128,
 * 0.96-1.20 -> 1.47-1.73 at 256 (whose chunks were 16 steps; 64- and
 * 128-step chunks sat in between); the LM rows (N 16, 2048-8192 steps:
 * several chunks) measured as before in 256 KB chunks, and no faster in
 * 1 MB ones. */
#define MVRT_BWD_WHOLE_BYTES (1 << 20)
#define MVRT_BWD_CHUNK_BYTES (1 << 18)
static int bwd_chunk_steps(int N, int64_t L)
{
    const int64_t per_step = 8 * (int64_t)N + (10 + 2 * MVRT_BWD_SLAB) * (int64_t)W * 4;
    int64_t K = L <= MVRT_BWD_WHOLE_BYTES / per_step ? (L + W - 1) / W * W : MVRT_BWD_CHUNK_BYTES / per_step;
    K -= K % W;
    if (K < W)
        K = W;
    return (int)K;
}

/* Variable B/C partial slots per (batch, group): enough tasks for a large
 * CPU, independent of the thread count. */
static int64_t bwd_slots(const mvrt_scan_params_t *p, int64_t nbg)
{
    if (!p->b_variable && !p->c_variable)
        return nbg;
    int64_t rows = p->batch * p->groups;
    int64_t S = (64 + rows - 1) / rows;
    return S < 1 ? 1 : S > nbg ? nbg : S;
}

typedef struct bwd_layout {
    float *pA, *pD, *pbias, *pB, *pC; /* per-batch partials (Bt, Dm, N) / (Bt, Dm) */
    float *slotB, *slotC;             /* (Bt, G, S, N, L) */
    char *threads;                    /* per-thread scratch */
    size_t per_thread, total;
} bwd_layout_t;

static size_t al64(size_t x) { return (x + 63) & ~(size_t)63; }

/* Carves the workspace (base may be NULL to only compute sizes). */
static void bwd_plan(const mvrt_scan_params_t *p, char *base, int nt, bwd_layout_t *lo)
{
    const size_t Bt = (size_t)p->batch, Dm = (size_t)p->dim, N = (size_t)p->dstate;
    const size_t G = (size_t)p->groups, L = (size_t)p->seqlen;
    const int64_t nbg = ((int64_t)Dm / (int64_t)G + W - 1) / W;
    const size_t S = (size_t)bwd_slots(p, nbg);
    const size_t K = (size_t)bwd_chunk_steps((int)N, (int64_t)L);
    const size_t nch = (L + K - 1) / K;
    size_t off = 0;
#define MVRT_TAKE(ptr, bytes)                                             \
    do {                                                                  \
        size_t b_ = al64(bytes);                                          \
        (ptr) = base ? (void *)(base + off) : NULL;                       \
        off += b_;                                                        \
    } while (0)
    memset(lo, 0, sizeof *lo);
    MVRT_TAKE(lo->pA, Bt * Dm * N * 4);
    if (p->D.data)
        MVRT_TAKE(lo->pD, Bt * Dm * 4);
    if (p->delta_bias.data)
        MVRT_TAKE(lo->pbias, Bt * Dm * 4);
    if (!p->b_variable)
        MVRT_TAKE(lo->pB, Bt * Dm * N * 4);
    if (!p->c_variable)
        MVRT_TAKE(lo->pC, Bt * Dm * N * 4);
    if (p->b_variable)
        MVRT_TAKE(lo->slotB, Bt * G * S * N * L * 4);
    if (p->c_variable)
        MVRT_TAKE(lo->slotC, Bt * G * S * N * L * 4);
    lo->threads = base ? base + off : NULL;
    const size_t vb = W * 4;
    lo->per_thread = al64(10 * K * vb) + al64(2 * K * MVRT_BWD_SLAB * vb) + al64(9 * N * vb) +
                     al64((nch ? nch : 1) * N * vb) + 2 * al64(N * (K + 16) * 4);
    lo->total = off + (size_t)nt * lo->per_thread;
#undef MVRT_TAKE
}

static void bwd_scratch(const mvrt_scan_params_t *p, const bwd_layout_t *lo, int tid, scan_scratch_t *s)
{
    const size_t N = (size_t)p->dstate, L = (size_t)p->seqlen;
    const size_t K = (size_t)bwd_chunk_steps((int)N, (int64_t)L);
    const size_t nch = (L + K - 1) / K;
    char *c = lo->threads + (size_t)tid * lo->per_thread;
    memset(s, 0, sizeof *s);
    s->N = (int)N;
    s->K = (int)K;
    s->ldbc = (int)K + 16;
    vf *v = (vf *)c;
    s->U = v; s->V = v + K; s->DT = v + 2 * K; s->DTU = v + 3 * K; s->Y = v + 4 * K;
    s->Z = v + 5 * K; s->G = v + 6 * K; s->S1 = v + 7 * K; s->S2 = v + 8 * K; s->G0 = v + 9 * K;
    c += al64(10 * K * sizeof(vf));
    s->HA = (vf *)c;
    s->HH = s->HA + K * (size_t)MVRT_BWD_SLAB;
    c += al64(2 * K * (size_t)MVRT_BWD_SLAB * sizeof(vf));
    v = (vf *)c;
    s->h = v; s->hs = v + N; s->Av = v + 2 * N; s->Bv = v + 3 * N; s->Cv = v + 4 * N;
    s->carry = v + 5 * N; s->dA = v + 6 * N; s->dBc = v + 7 * N; s->dCc = v + 8 * N;
    c += al64(9 * N * sizeof(vf));
    s->ckpt = (vf *)c;
    c += al64((nch ? nch : 1) * N * sizeof(vf));
    s->Bs = (float *)c;
    c += al64(N * (K + 16) * 4);
    s->Cs = (float *)c;
}

/* dst[t] (+)= sum over lanes of (mul[t] *) X[t * ldx], t < tn, fixed tree. */
static void reduce_lanes(float *dst, const vf *X, size_t ldx, const vf *mul, int tn, int acc)
{
    for (int tt = 0; tt < tn; tt += W) {
        vf in[W];
        const int cnt = MVRT_MIN(W, tn - tt);
        if (cnt == W) {
            for (int i = 0; i < W; i++)
                in[i] = mul ? mul[tt + i] * X[(size_t)(tt + i) * ldx] : X[(size_t)(tt + i) * ldx];
        } else {
            for (int i = 0; i < W; i++)
                in[i] = i >= cnt ? vzero()
                        : mul    ? mul[tt + i] * X[(size_t)(tt + i) * ldx]
                                 : X[(size_t)(tt + i) * ldx];
        }
        vf r = hsum_lanes(in);
        if (cnt == W) {
            if (acc)
                r = vloadu(dst + tt) + r;
            vstoreu(dst + tt, r);
        } else {
            for (int i = 0; i < cnt; i++)
                dst[tt + i] = acc ? dst[tt + i] + r[i] : r[i];
        }
    }
}

/* Pass 2 of one chunk of tn steps from t0, slab by slab: MVRT_BWD_SLAB
 * states at a time run the chunk's recurrence from its start state hs
 * (their a_t and h_t into HA / HH: 2 tn slab vectors, which stay in L1;
 * y accumulated where z needs it), then the adjoint over the same steps,
 * then their variable dB / dC lane sums into the slots. The states are
 * independent in both recurrences, and y, S1 and S2 sum over the slabs
 * in state order, so the results are those of whole-chunk passes; only
 * the history's footprint shrinks from 2 tn N vectors (at N = 256 it
 * streamed from L2). */
#define MVRT_BWD_SLAB_STEP(NC, bvar, cvar, want_y)                                                          \
    do {                                                                                                   \
        const float *bs_ = (bvar) ? s->Bs + (size_t)n0 * s->ldbc : NULL;                                   \
        const float *cs_ = (cvar) ? s->Cs + (size_t)n0 * s->ldbc : NULL;                                   \
        const vf *bv_ = (bvar) ? NULL : s->Bv + n0, *cv_ = (cvar) ? NULL : s->Cv + n0;                      \
        fwd_states(NC, bvar, cvar, want_y, 1, tn, s->ldbc, s->DT, s->DTU, s->Y, s->Av + n0, s->h + n0, bs_, \
                   bv_, cs_, cv_, s->HA, s->HH, MVRT_BWD_SLAB);                                            \
        bwd_states(NC, bvar, cvar, tn, s->ldbc, n0 == 0, s->G, s->DT, s->DTU, s->S1, s->S2, s->Av + n0,     \
                   s->carry + n0, s->dA + n0, s->dBc + n0, s->dCc + n0, bs_, bv_, cs_, cv_, s->HA, s->HH,  \
                   s->hs + n0, MVRT_BWD_SLAB);                                                             \
        for (int j = 0; (bvar) && j < (NC); j++)                                                           \
            reduce_lanes(slotB + (size_t)(n0 + j) * L + t0, s->HA + j, MVRT_BWD_SLAB, NULL, tn, acc);     \
        for (int j = 0; (cvar) && j < (NC); j++)                                                           \
            reduce_lanes(slotC + (size_t)(n0 + j) * L + t0, s->HH + j, MVRT_BWD_SLAB, s->G, tn, acc);     \
    } while (0)

#define MVRT_DEF_BWD_CHUNK(name, bvar, cvar, want_y)                                                  \
    static void name(scan_scratch_t *s, int tn, int64_t t0, int64_t L, float *slotB, float *slotC,  \
                     int acc)                                                                        \
    {                                                                                                \
        const int N = s->N;                                                                          \
        for (int n0 = 0; n0 < N;) {                                                                  \
            const int rem = N - n0;                                                                  \
            const int nc = rem >= 8 ? 8 : rem >= 4 ? 4 : rem >= 2 ? 2 : 1;                           \
            switch (nc) {                                                                            \
            case 8: MVRT_BWD_SLAB_STEP(8, bvar, cvar, want_y); break;                                \
            case 4: MVRT_BWD_SLAB_STEP(4, bvar, cvar, want_y); break;                                \
            case 2: MVRT_BWD_SLAB_STEP(2, bvar, cvar, want_y); break;                                \
            default: MVRT_BWD_SLAB_STEP(1, bvar, cvar, want_y); break;                               \
            }                                                                                        \
            n0 += nc;                                                                                \
        }                                                                                            \
    }

MVRT_DEF_BWD_CHUNK(bwd_chunk_vv, 1, 1, 0)
MVRT_DEF_BWD_CHUNK(bwd_chunk_vc, 1, 0, 0)
MVRT_DEF_BWD_CHUNK(bwd_chunk_cv, 0, 1, 0)
MVRT_DEF_BWD_CHUNK(bwd_chunk_cc, 0, 0, 0)
MVRT_DEF_BWD_CHUNK(bwd_chunk_vv_y, 1, 1, 1)
MVRT_DEF_BWD_CHUNK(bwd_chunk_vc_y, 1, 0, 1)
MVRT_DEF_BWD_CHUNK(bwd_chunk_cv_y, 0, 1, 1)
MVRT_DEF_BWD_CHUNK(bwd_chunk_cc_y, 0, 0, 1)

static void bwd_chunk(const mvrt_scan_params_t *p, scan_scratch_t *s, int tn, int want_y, int64_t t0, int64_t L,
                      float *slotB, float *slotC, int acc)
{
    const int bv = p->b_variable != 0, cv = p->c_variable != 0;
    if (want_y) {
        if (bv)
            cv ? bwd_chunk_vv_y(s, tn, t0, L, slotB, slotC, acc) : bwd_chunk_vc_y(s, tn, t0, L, slotB, slotC, acc);
        else
            cv ? bwd_chunk_cv_y(s, tn, t0, L, slotB, slotC, acc) : bwd_chunk_cc_y(s, tn, t0, L, slotB, slotC, acc);
    } else {
        if (bv)
            cv ? bwd_chunk_vv(s, tn, t0, L, slotB, slotC, acc) : bwd_chunk_vc(s, tn, t0, L, slotB, slotC, acc);
        else
            cv ? bwd_chunk_cv(s, tn, t0, L, slotB, slotC, acc) : bwd_chunk_cc(s, tn, t0, L, slotB, slotC, acc);
    }
}

static void bwd_block(const mvrt_scan_params_t *p, scan_scratch_t *s, const bwd_layout_t *lo,
                      int64_t b, int64_t g, int64_t d0, int w, int first_in_task,
                      float *slotB, float *slotC)
{
    const int N = s->N, K = s->K, dt = p->input_dtype;
    const int64_t L = p->seqlen, Dm = p->dim;
    const int64_t nch = (L + K - 1) / K;
    const int has_z = p->z.data != NULL;
    load_lane_consts(p, s, d0, w);

    /* pass 1: state at every chunk start */
    for (int n = 0; n < N; n++)
        s->h[n] = vzero();
    for (int64_t c = 0; c + 1 < nch; c++) {
        memcpy(s->ckpt + (size_t)c * N, s->h, (size_t)N * sizeof(vf));
        prep_tile(p, s, b, g, d0, w, c * K, K, 0, 0, (c + 1) * K,
                  (int)MVRT_MIN((int64_t)K, L - (c + 1) * K));
        run_fwd_states(p, s, K, 0);
    }
    if (nch > 0)
        memcpy(s->ckpt + (size_t)(nch - 1) * N, s->h, (size_t)N * sizeof(vf));

    /* pass 2: chunks backwards */
    for (int n = 0; n < N; n++) {
        s->carry[n] = vzero();
        s->dA[n] = vzero();
        s->dBc[n] = vzero();
        s->dCc[n] = vzero();
    }
    vf dDacc = vzero(), dbacc = vzero();
    for (int64_t c = nch - 1; c >= 0; c--) {
        const int64_t t0 = c * K;
        const int tn = (int)MVRT_MIN((int64_t)K, L - t0);
        const int pfn = c > 0 ? K : 0; /* the previous chunk comes next */
        prep_tile(p, s, b, g, d0, w, t0, tn, has_z, 1, t0 - K, pfn);
        load_tile(s->G, &p->dout, dt, b, d0, w, t0, tn);
        if (pfn) {
            prefetch_tile(&p->dout, dt, b, d0, w, t0 - K, pfn);
            if (has_z)
                prefetch_tile(&p->z, dt, b, d0, w, t0 - K, pfn);
        }
        memcpy(s->h, s->ckpt + (size_t)c * N, (size_t)N * sizeof(vf));
        memcpy(s->hs, s->h, (size_t)N * sizeof(vf));
        if (has_z) { /* the adjoint's g = dout silu(z); dz needs the whole y (below) */
            load_tile(s->Z, &p->z, dt, b, d0, w, t0, tn);
            for (int t = 0; t < tn; t++) {
                vf z = s->Z[t], sg = vsigmoid(z), gv = s->G[t];
                s->G0[t] = gv;
                s->G[t] = gv * (z * sg);
            }
        }
        bwd_chunk(p, s, tn, has_z, t0, L, slotB, slotC, !first_in_task);
        if (has_z) {
            for (int t = 0; t < tn; t++) {
                vf z = s->Z[t], sg = vsigmoid(z), gv = s->G0[t];
                s->Y[t] = gv * s->Y[t] * sg * (1.0f + z * (1.0f - sg)); /* dz */
            }
            if (p->dz.data)
                store_tile(s->Y, &p->dz, dt, b, d0, w, t0, tn);
        }
        const vf Dv = s->Dv;
        for (int t = 0; t < tn; t++) {
            vf s1 = s->S1[t], gv = s->G[t], u = s->U[t];
            vf ddt = u * s1 + s->S2[t];
            vf dv = ddt;
            if (p->delta_softplus) {
                vf v = s->V[t];
                dv = vsel(v > 20.0f, ddt, ddt * vsigmoid(v));
            }
            s->S1[t] = Dv * gv + s->DT[t] * s1; /* du */
            s->S2[t] = dv;
            dDacc = dDacc + gv * u;
            dbacc = dbacc + dv;
        }
        store_tile(s->S1, &p->du, dt, b, d0, w, t0, tn);
        store_tile(s->S2, &p->ddelta, dt, b, d0, w, t0, tn);
    }

    /* per-batch partials of the (b, t) reductions; each (b, d) has one owner */
    for (int l = 0; l < w; l++) {
        const size_t bd = (size_t)(b * Dm + d0 + l);
        for (int n = 0; n < N; n++) {
            lo->pA[bd * N + n] = s->dA[n][l];
            if (lo->pB)
                lo->pB[bd * N + n] = s->dBc[n][l];
            if (lo->pC)
                lo->pC[bd * N + n] = s->dCc[n][l];
        }
        if (lo->pD)
            lo->pD[bd] = dDacc[l];
        if (lo->pbias)
            lo->pbias[bd] = dbacc[l];
    }
}

size_t KFN(mvrt_cpu_scan_bwd_ws)(const mvrt_scan_params_t *p, int num_threads)
{
    bwd_layout_t lo;
    bwd_plan(p, NULL, mvrt_cpu_scan_resolve_threads(num_threads), &lo);
    return lo.total + 64; /* room to align the caller's pointer */
}

void KFN(mvrt_cpu_scan_bwd)(const mvrt_scan_params_t *p, int num_threads)
{
    int nt = mvrt_cpu_scan_resolve_threads(num_threads);
    while (nt > 1 && KFN(mvrt_cpu_scan_bwd_ws)(p, nt) > p->workspace_bytes)
        nt--;
    if (!p->workspace || KFN(mvrt_cpu_scan_bwd_ws)(p, nt) > p->workspace_bytes)
        return; /* the runtime checks the size first; never write out of bounds */
    char *base = (char *)(((uintptr_t)p->workspace + 63) & ~(uintptr_t)63);
    bwd_layout_t lo;
    bwd_plan(p, base, nt, &lo);

    const int64_t Bt = p->batch, Dm = p->dim, G = p->groups, N = p->dstate, L = p->seqlen;
    const int64_t cpg = Dm / G, nbg = (cpg + W - 1) / W;
    const int64_t S = bwd_slots(p, nbg);
    const int64_t ntask = Bt * G * S;
    const int64_t chunk = sched_chunk(ntask, nt);
    const int dt = p->input_dtype;

#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        scan_scratch_t s;
        bwd_scratch(p, &lo, tid, &s);
        /* Results do not depend on which thread runs a task (each task owns
         * its output slots; per-thread memory is scratch), so balance freely. */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, chunk)
#endif
        for (int64_t task = 0; task < ntask; task++) {
            const int64_t b = task / (G * S), r = task % (G * S), g = r / S, si = r % S;
            const int64_t j0 = si * nbg / S, j1 = (si + 1) * nbg / S;
            const size_t slot = (size_t)((b * G + g) * S + si) * (size_t)(N * L);
            for (int64_t j = j0; j < j1; j++) {
                /* the first chunk the next block needs is its last one */
                int64_t nb = b, nj = j + 1, ng = g;
                if (nj == j1) {
                    nj = -1;
                    if ((task + 1) % chunk != 0 && task + 1 < ntask) {
                        nb = (task + 1) / (G * S);
                        const int64_t nr = (task + 1) % (G * S), ns = nr % S;
                        ng = nr / S;
                        nj = ns * nbg / S;
                    }
                }
                if (nj >= 0 && L > 0) {
                    const int64_t K = s.K, lt0 = ((L - 1) / K) * K;
                    prefetch_block(p, nb, ng * cpg + nj * W, (int)MVRT_MIN((int64_t)W, cpg - nj * W),
                                   lt0, (int)(L - lt0), 1);
                }
                bwd_block(p, &s, &lo, b, g, g * cpg + j * W, (int)MVRT_MIN((int64_t)W, cpg - j * W),
                          j == j0, lo.slotB ? lo.slotB + slot : NULL,
                          lo.slotC ? lo.slotC + slot : NULL);
            }
        }
        /* fixed-order reductions over the batch (implicit barrier above) */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t d = 0; d < Dm; d++) {
            for (int64_t n = 0; n < N; n++) {
                float a = 0.0f, sb = 0.0f, sc = 0.0f;
                for (int64_t b = 0; b < Bt; b++) {
                    const size_t i = (size_t)((b * Dm + d) * N + n);
                    a += lo.pA[i];
                    if (lo.pB)
                        sb += lo.pB[i];
                    if (lo.pC)
                        sc += lo.pC[i];
                }
                ((float *)p->dA.data)[d * p->dA.stride[0] + n * p->dA.stride[1]] = a;
                if (lo.pB)
                    ((float *)p->dB.data)[d * p->dB.stride[0] + n * p->dB.stride[1]] = sb;
                if (lo.pC)
                    ((float *)p->dC.data)[d * p->dC.stride[0] + n * p->dC.stride[1]] = sc;
            }
            if (lo.pD) {
                float a = 0.0f;
                for (int64_t b = 0; b < Bt; b++)
                    a += lo.pD[b * Dm + d];
                if (p->dD.data)
                    ((float *)p->dD.data)[d * p->dD.stride[0]] = a;
            }
            if (lo.pbias) {
                float a = 0.0f;
                for (int64_t b = 0; b < Bt; b++)
                    a += lo.pbias[b * Dm + d];
                if (p->ddelta_bias.data)
                    ((float *)p->ddelta_bias.data)[d * p->ddelta_bias.stride[0]] = a;
            }
        }
        /* variable dB / dC: sum the S slots of each (b, g) row in order */
        const int64_t nrows = Bt * G * N;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int64_t row = 0; row < nrows; row++) {
            const int64_t b = row / (G * N), g = (row / N) % G, n = row % N;
            for (int which = 0; which < 2; which++) {
                const float *slots = which ? lo.slotC : lo.slotB;
                const mvrt_scan_operand_t *op = which ? &p->dC : &p->dB;
                if (!slots)
                    continue;
                const float *src = slots + (size_t)((b * G + g) * S) * (size_t)(N * L) + (size_t)(n * L);
                const int64_t *st = op->stride;
                const int64_t o = b * st[0] + g * st[1] + n * st[2];
                float acc[512];
                for (int64_t t0 = 0; t0 < L; t0 += 512) {
                    const int tn = (int)MVRT_MIN((int64_t)512, L - t0);
                    memcpy(acc, src + t0, (size_t)tn * sizeof(float));
                    for (int64_t si = 1; si < S; si++) {
                        const float *sp = src + (size_t)si * (size_t)(N * L) + (size_t)t0;
                        for (int t = 0; t < tn; t++)
                            acc[t] += sp[t];
                    }
                    for (int t = 0; t < tn; t++)
                        st_elem(op->data, o + (t0 + t) * st[3], acc[t], dt);
                }
            }
        }
    }
}
