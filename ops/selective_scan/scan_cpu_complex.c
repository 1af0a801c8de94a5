/* CPU selective scan with a complex A (mamba_ssm's selective_scan_ref with
 * a complex A; spec: shared/spec/selective_scan.md, "Complex A"), forward
 * and backward, f32 inputs (the runtime refuses others for complex A).
 *
 * Per (batch, channel) and state n, with A = ar + i ai:
 *   a_t = exp(dt_t A) = e^(dt ar) (cos(dt ai) + i sin(dt ai))
 *   x_t = a_t x_{t-1} + dt_t u_t B_t                 (complex)
 *   y_t = 2 Re(sum_n x_t C_t) + D u_t,  out_t = y_t silu(z_t)
 * Gradients of a real loss, complex ones as dL/dre + i dL/dim (PyTorch's
 * convention), with the adjoint
 *   lam_t = 2 g_t conj(C_t) + conj(a_{t+1}) lam_{t+1}
 *   dB_t += dt u lam_t,  dC_t += 2 g_t conj(x_t),
 *   dA += dt conj(a_t x_{t-1}) lam_t,
 *   du_t = D g_t + dt sum_n Re(lam_t conj(B_t)),
 *   ddt_t = sum_n [u Re(lam_t conj(B_t)) + Re(lam_t conj(A a_t x_{t-1}))].
 * (Each follows from w = s K, s real: dL/ds = Re(conj(K) G_w), and from
 * w = a x: G_x = conj(a) G_w, G_a = G_w conj(x).)
 *
 * Threads: the forward over rows (batch, channel); the backward over the
 * batch, each task owning its batch element's du / ddelta / dz and
 * variable dB / dC (summed over the group's channels in channel order)
 * and writing its per-(batch, channel) parameter sums (dA, dD,
 * ddelta_bias, constant dB / dC, in double) to the workspace, which are
 * then added over the batch in batch order: bitwise the same result for
 * every thread count. Each thread recomputes a row's states chunk by
 * chunk from states saved every MVRT_CSCAN_CHUNK steps (per-thread
 * workspace: O(L / chunk + chunk) states). Not vectorized: a first,
 * exact implementation. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "scan_cpu_complex.h"
#include "scan_cpu_internal.h"

#define MVRT_CSCAN_CHUNK 64

static float softplus_f(float v) { return v <= 20.f ? log1pf(expf(v)) : v; }
static float sigmoid_f(float v) { return 1.f / (1.f + expf(-v)); }

/* Elements of the operands (f32; complex ones as (re, im) pairs). */
static float at3(const mvrt_scan_operand_t *o, int64_t i, int64_t j, int64_t k)
{
    return ((const float *)o->data)[i * o->stride[0] + j * o->stride[1] + k * o->stride[2]];
}
static float *ptr3(const mvrt_scan_operand_t *o, int64_t i, int64_t j, int64_t k)
{
    return (float *)o->data + i * o->stride[0] + j * o->stride[1] + k * o->stride[2];
}
static float at1(const mvrt_scan_operand_t *o, int64_t i)
{
    return ((const float *)o->data)[i * o->stride[0]];
}
/* complex (re, im) at pair index (i, j) of a 2-axis c64 operand */
static const float *cx2(const mvrt_scan_operand_t *o, int64_t i, int64_t j)
{
    return (const float *)o->data + 2 * (i * o->stride[0] + j * o->stride[1]);
}
/* B or C of (b, g, d, n) at step t: variable (re at 2t, im at 2t + 1) or constant */
static void bc_at(const mvrt_scan_operand_t *o, int variable, int64_t b, int64_t g, int64_t d, int64_t n,
                  int64_t t, float *re, float *im)
{
    if (variable) {
        const float *base = (const float *)o->data + b * o->stride[0] + g * o->stride[1] + n * o->stride[2];
        *re = base[(2 * t) * o->stride[3]];
        *im = base[(2 * t + 1) * o->stride[3]];
    } else {
        const float *v = cx2(o, d, n);
        *re = v[0];
        *im = v[1];
    }
}

/* The step of (b, d, t) after delta_bias and softplus, and v before it. */
static float step_of(const mvrt_scan_params_t *p, int64_t b, int64_t d, int64_t t, float *v_out)
{
    float v = at3(&p->delta, b, d, t);
    if (p->delta_bias.data)
        v += at1(&p->delta_bias, d);
    *v_out = v;
    return p->delta_softplus ? softplus_f(v) : v;
}

/* a = exp(dt A[d, n]) as (re, im). */
static void decay(const mvrt_scan_params_t *p, int64_t d, int64_t n, float dt, float *ar, float *ai)
{
    const float *A = cx2(&p->A, d, n);
    const float mag = expf(dt * A[0]), ang = dt * A[1];
    *ar = mag * cosf(ang);
    *ai = mag * sinf(ang);
}

/* One step of row (b, d): x (2N floats) advanced from x_{t-1} to x_t, the
 * decays stored in a (2N) when a is not NULL; returns 2 Re(sum x C). */
static float advance(const mvrt_scan_params_t *p, int64_t b, int64_t g, int64_t d, int64_t t, float dt, float uu,
                     float *x, float *a)
{
    float y = 0.f;
    for (int64_t n = 0; n < p->dstate; n++) {
        float ar, ai, br, bi, cr, ci;
        decay(p, d, n, dt, &ar, &ai);
        bc_at(&p->B, p->b_variable, b, g, d, n, t, &br, &bi);
        bc_at(&p->C, p->c_variable, b, g, d, n, t, &cr, &ci);
        const float xr = x[2 * n], xi = x[2 * n + 1];
        const float nr = ar * xr - ai * xi + dt * uu * br;
        const float ni = ar * xi + ai * xr + dt * uu * bi;
        x[2 * n] = nr;
        x[2 * n + 1] = ni;
        if (a) {
            a[2 * n] = ar;
            a[2 * n + 1] = ai;
        }
        y += 2.f * (nr * cr - ni * ci);
    }
    return y;
}

void mvrt_cpu_scan_fwd_complex(const mvrt_scan_params_t *p, int num_threads)
{
    const int64_t per_group = p->dim / p->groups, rows = p->batch * p->dim;
    const int nt = mvrt_cpu_scan_resolve_threads(num_threads);
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1 && rows > 1)
#endif
    for (int64_t r = 0; r < rows; r++) {
        float x[2 * 256];
        const int64_t b = r / p->dim, d = r % p->dim;
        {
            const int64_t g = d / per_group;
            memset(x, 0, sizeof(float) * 2 * (size_t)p->dstate);
            for (int64_t t = 0; t < p->seqlen; t++) {
                float v;
                const float dt = step_of(p, b, d, t, &v), uu = at3(&p->u, b, d, t);
                float y = advance(p, b, g, d, t, dt, uu, x, NULL);
                if (p->D.data)
                    y += at1(&p->D, d) * uu;
                if (p->z.data) {
                    const float z = at3(&p->z, b, d, t);
                    y *= z * sigmoid_f(z);
                }
                *ptr3(&p->out, b, d, t) = y;
            }
            if (p->last_state.data)
                for (int64_t n = 0; n < p->dstate; n++) {
                    float *s = (float *)p->last_state.data +
                               2 * (b * p->last_state.stride[0] + d * p->last_state.stride[1] +
                                    n * p->last_state.stride[2]);
                    s[0] = x[2 * n];
                    s[1] = x[2 * n + 1];
                }
        }
    }
}

static int64_t chunks_of(const mvrt_scan_params_t *p)
{
    return (p->seqlen + MVRT_CSCAN_CHUNK - 1) / MVRT_CSCAN_CHUNK;
}

/* Doubles of one (batch, channel)'s parameter sums: dA, constant dB and
 * dC (2N each), dD, ddelta_bias. */
static size_t sums_per_row(const mvrt_scan_params_t *p) { return 6 * (size_t)p->dstate + 2; }
/* Floats of one thread's scratch: saved chunk-start states; the states
 * and decays of one chunk; its steps' v, dt and 2 Re(sum x C), kept from
 * the chunk's recompute for the backward steps. */
static size_t thread_floats(const mvrt_scan_params_t *p)
{
    const size_t N = (size_t)p->dstate;
    return (size_t)chunks_of(p) * 2 * N + 2 * (size_t)MVRT_CSCAN_CHUNK * 2 * N + 3 * (size_t)MVRT_CSCAN_CHUNK;
}

size_t mvrt_cpu_scan_bwd_ws_complex(const mvrt_scan_params_t *p, int num_threads)
{
    const int nt = mvrt_cpu_scan_resolve_threads(num_threads);
    return 64 + (size_t)(p->batch * p->dim) * sums_per_row(p) * sizeof(double) +
           (size_t)nt * thread_floats(p) * sizeof(float);
}

/* Zeroes batch element b of a variable dB / dC (real, (Bt, G, N, 2L)). */
static void zero_variable_b(const mvrt_scan_params_t *p, const mvrt_scan_operand_t *o, int64_t b)
{
    for (int64_t g = 0; g < p->groups; g++)
        for (int64_t n = 0; n < p->dstate; n++)
            for (int64_t s = 0; s < 2 * p->seqlen; s++)
                ((float *)o->data)[b * o->stride[0] + g * o->stride[1] + n * o->stride[2] + s * o->stride[3]] = 0.f;
}

/* The backward of batch element b with one thread's scratch (ck, xs, as
 * and the per-step vs, dts, ys of a chunk): its per-element outputs, and
 * the parameter sums of each channel into sums + d * sums_per_row. */
static void bwd_batch(const mvrt_scan_params_t *p, int64_t b, float *ck, float *xs, float *as, float *vs,
                      double *sums)
{
    float *dts = vs + MVRT_CSCAN_CHUNK, *ys = dts + MVRT_CSCAN_CHUNK;
    const int64_t N = p->dstate, L = p->seqlen, per_group = p->dim / p->groups, nch = chunks_of(p);
    const int64_t CH = MVRT_CSCAN_CHUNK;
    float x[2 * 256];
    if (p->b_variable)
        zero_variable_b(p, &p->dB, b);
    if (p->c_variable)
        zero_variable_b(p, &p->dC, b);
    for (int64_t d = 0; d < p->dim; d++) {
        const int64_t g = d / per_group;
        const float Dd = p->D.data ? at1(&p->D, d) : 0.f;
        double *gA = sums + (size_t)d * sums_per_row(p), *gB = gA + 2 * N, *gC = gB + 2 * N;
        double dD = 0.0, dbias = 0.0;
        memset(gA, 0, sizeof(double) * 6 * (size_t)N);
        /* forward, saving the state before every chunk */
        memset(x, 0, sizeof(float) * 2 * (size_t)N);
        for (int64_t t = 0; t < L; t++) {
            if (t % CH == 0)
                memcpy(ck + (t / CH) * 2 * N, x, sizeof(float) * 2 * (size_t)N);
            float v;
            const float dt = step_of(p, b, d, t, &v);
            advance(p, b, g, d, t, dt, at3(&p->u, b, d, t), x, NULL);
        }
        /* backward, chunk by chunk from the end; carry = conj(a_{t+1}) lam_{t+1} */
        float carry[2 * 256];
        memset(carry, 0, sizeof(float) * 2 * (size_t)N);
        for (int64_t k = nch - 1; k >= 0; k--) {
            const int64_t t0 = k * CH, t1 = t0 + CH < L ? t0 + CH : L;
            memcpy(x, ck + k * 2 * N, sizeof(float) * 2 * (size_t)N);
            for (int64_t t = t0; t < t1; t++) {
                dts[t - t0] = step_of(p, b, d, t, &vs[t - t0]);
                ys[t - t0] = advance(p, b, g, d, t, dts[t - t0], at3(&p->u, b, d, t), x, as + (t - t0) * 2 * N);
                memcpy(xs + (t - t0) * 2 * N, x, sizeof(float) * 2 * (size_t)N);
            }
            for (int64_t t = t1 - 1; t >= t0; t--) {
                const float v = vs[t - t0], dt = dts[t - t0], uu = at3(&p->u, b, d, t);
                const float *xt = xs + (t - t0) * 2 * N, *at = as + (t - t0) * 2 * N;
                const float *xprev = t > t0 ? xs + (t - 1 - t0) * 2 * N : ck + k * 2 * N;
                float gt = at3(&p->dout, b, d, t);
                if (p->z.data) {
                    const float y = Dd * uu + ys[t - t0]; /* before the gate, D u included */
                    const float z = at3(&p->z, b, d, t), sz = sigmoid_f(z);
                    *ptr3(&p->dz, b, d, t) = gt * y * sz * (1.f + z * (1.f - sz));
                    gt *= z * sz;
                }
                dD += (double)gt * uu;
                float du = Dd * gt, ddt = 0.f;
                for (int64_t n = 0; n < N; n++) {
                    float br, bi, cr, ci;
                    bc_at(&p->B, p->b_variable, b, g, d, n, t, &br, &bi);
                    bc_at(&p->C, p->c_variable, b, g, d, n, t, &cr, &ci);
                    /* lam_t = conj(a_{t+1}) lam_{t+1} + 2 g conj(C_t) */
                    const float lr = carry[2 * n] + 2.f * gt * cr, li = carry[2 * n + 1] - 2.f * gt * ci;
                    /* Re(lam conj(B)) */
                    const float lb = lr * br + li * bi;
                    du += dt * lb;
                    /* w = a_t x_{t-1}; A w; Re(lam conj(A w)) */
                    const float ar = at[2 * n], ai = at[2 * n + 1];
                    const float wr = ar * xprev[2 * n] - ai * xprev[2 * n + 1];
                    const float wi = ar * xprev[2 * n + 1] + ai * xprev[2 * n];
                    const float *A = cx2(&p->A, d, n);
                    const float awr = A[0] * wr - A[1] * wi, awi = A[0] * wi + A[1] * wr;
                    ddt += uu * lb + (lr * awr + li * awi);
                    /* dA += dt conj(w) lam */
                    gA[2 * n] += (double)dt * (wr * lr + wi * li);
                    gA[2 * n + 1] += (double)dt * (wr * li - wi * lr);
                    /* dB += dt u lam; dC += 2 g conj(x_t) */
                    const float sbu = dt * uu;
                    const float dcr = 2.f * gt * xt[2 * n], dci = -2.f * gt * xt[2 * n + 1];
                    if (p->b_variable) {
                        float *base = (float *)p->dB.data + b * p->dB.stride[0] + g * p->dB.stride[1] +
                                      n * p->dB.stride[2];
                        base[(2 * t) * p->dB.stride[3]] += sbu * lr;
                        base[(2 * t + 1) * p->dB.stride[3]] += sbu * li;
                    } else {
                        gB[2 * n] += (double)sbu * lr;
                        gB[2 * n + 1] += (double)sbu * li;
                    }
                    if (p->c_variable) {
                        float *base = (float *)p->dC.data + b * p->dC.stride[0] + g * p->dC.stride[1] +
                                      n * p->dC.stride[2];
                        base[(2 * t) * p->dC.stride[3]] += dcr;
                        base[(2 * t + 1) * p->dC.stride[3]] += dci;
                    } else {
                        gC[2 * n] += dcr;
                        gC[2 * n + 1] += dci;
                    }
                    /* carry for t - 1: conj(a_t) lam_t */
                    carry[2 * n] = ar * lr + ai * li;
                    carry[2 * n + 1] = ar * li - ai * lr;
                }
                const float dv = p->delta_softplus && v <= 20.f ? ddt * sigmoid_f(v) : ddt;
                *ptr3(&p->du, b, d, t) = du;
                *ptr3(&p->ddelta, b, d, t) = dv;
                dbias += dv;
            }
        }
        gA[6 * N] = dD;
        gA[6 * N + 1] = dbias;
    }
}

void mvrt_cpu_scan_bwd_complex(const mvrt_scan_params_t *p, int num_threads)
{
    int nt = mvrt_cpu_scan_resolve_threads(num_threads);
    while (nt > 1 && mvrt_cpu_scan_bwd_ws_complex(p, nt) > p->workspace_bytes)
        nt--;
    if (!p->workspace || mvrt_cpu_scan_bwd_ws_complex(p, nt) > p->workspace_bytes)
        return; /* the backend checks the size first; never write out of bounds */
    const int64_t N = p->dstate, rowsums = (int64_t)sums_per_row(p);
    double *sums = (double *)(((uintptr_t)p->workspace + 63) & ~(uintptr_t)63); /* (Bt, Dm, rowsums) */
    float *scratch = (float *)(sums + (size_t)(p->batch * p->dim) * (size_t)rowsums);
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1 && p->batch > 1)
#endif
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        float *ck = scratch + (size_t)tid * thread_floats(p);
        float *xs = ck + chunks_of(p) * 2 * N, *as = xs + MVRT_CSCAN_CHUNK * 2 * N;
        float *vs = as + MVRT_CSCAN_CHUNK * 2 * N;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (int64_t b = 0; b < p->batch; b++)
            bwd_batch(p, b, ck, xs, as, vs, sums + (size_t)(b * p->dim) * (size_t)rowsums);
    }
    /* the parameter sums over the batch, in batch order */
    for (int64_t d = 0; d < p->dim; d++) {
        for (int64_t k = 0; k < rowsums; k++) {
            double t = 0.0;
            for (int64_t b = 0; b < p->batch; b++)
                t += sums[(size_t)(b * p->dim + d) * (size_t)rowsums + (size_t)k];
            sums[(size_t)d * (size_t)rowsums + (size_t)k] = t; /* row b = 0 holds the totals */
        }
        const double *gA = sums + (size_t)d * (size_t)rowsums, *gB = gA + 2 * N, *gC = gB + 2 * N;
        for (int64_t n = 0; n < N; n++) {
            float *dA = (float *)p->dA.data + 2 * (d * p->dA.stride[0] + n * p->dA.stride[1]);
            dA[0] = (float)gA[2 * n];
            dA[1] = (float)gA[2 * n + 1];
            if (!p->b_variable) {
                float *o = (float *)p->dB.data + 2 * (d * p->dB.stride[0] + n * p->dB.stride[1]);
                o[0] = (float)gB[2 * n];
                o[1] = (float)gB[2 * n + 1];
            }
            if (!p->c_variable) {
                float *o = (float *)p->dC.data + 2 * (d * p->dC.stride[0] + n * p->dC.stride[1]);
                o[0] = (float)gC[2 * n];
                o[1] = (float)gC[2 * n + 1];
            }
        }
        if (p->dD.data)
            ((float *)p->dD.data)[d * p->dD.stride[0]] = (float)gA[6 * N];
        if (p->ddelta_bias.data)
            ((float *)p->ddelta_bias.data)[d * p->ddelta_bias.stride[0]] = (float)gA[6 * N + 1];
    }
}
