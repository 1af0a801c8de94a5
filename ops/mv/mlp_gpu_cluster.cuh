/* The MLP half of a MambaVision block for few rows, one kernel
 * (MVRT_OP_MLP, mv_op_params.h; NVIDIA sm_90+ only: HIP and older targets
 * compile an empty kernel and the backend declines the op).
 *
 * Why: at batch 1 the MLP ran as two cluster GEMMs (LayerNorm folded into
 * fc1, then fc2 with the residual) of ~14 us each on an H100, each a few
 * dependent memory round trips and cluster barriers around ~1 us of
 * tensor work. Every step of the MLP is local to a row, so one cluster per
 * 16 rows can run all of it without a grid-wide dependency:
 *   - the S = 8 blocks of a cluster each take one slice of the hidden
 *     units (HS = hidden / S): fc1's output columns and fc2's K are the
 *     same slice, so the hidden activations never leave the block;
 *   - each block normalizes the cluster's 16 rows itself (a warp per row
 *     pair, exact two-pass mean and variance), multiplies them by its
 *     slice of fc1, applies bias and activation, and multiplies the result
 *     by its slice of fc2's columns: a partial (16, C) product, whose
 *     columns [r C/S, (r+1) C/S) it stores straight into block r's shared
 *     memory (distributed shared memory, one slot per writer);
 *   - after one cluster barrier block r sums its S slots in rank order
 *     (bitwise reproducible), adds fc2's bias and the residual, and
 *     writes x in place (every block read its rows before the barrier).
 *
 * Products: 3xTF32 mma.sync m16n8k8 (fp32 accuracy, as the cluster GEMM),
 * one m16 fragment of rows; the activations are split into their two TF32
 * parts once, when stored to shared memory (in fragment order, below); the
 * weights are read by each lane straight from global memory into
 * registers, one 32-long k block ahead, and split there. The tensor-core
 * accumulators are added to an fp32 sum every 128 k (one accumulator over
 * hundreds of k gave several times the error of fp32 adds:
 * linear_gpu_cluster.cuh).
 *
 * What limits it (backends/cuda/PERF_NOTES.md): the two products take
 * ~12.5 of the ~18 us (MambaVision-T stage 3), and are bound by shared
 * memory and tensor issue as much as by the weight stream: with 16-column
 * tasks the activations re-read from shared memory are twice the weights'
 * bytes (hence fc2's 32-column tasks, mlp_plan_for), a probe of the same
 * products without any weight loads takes ~9.6 us, and deeper weight
 * pipelines (bulk copies into shared memory, 2-8 stages) were slower.
 * The LayerNorm costs ~2.6 us, the cluster barrier and sum ~1.4 us.
 * Those figures predate session 29's k loop without register copies
 * (mlp_wstream::load): the copies had waited for the block just
 * requested, so the weights were in effect not loaded ahead; without
 * them the block at batch 1 is ~1.1 us faster. */
#ifndef MVRT_OPS_MV_MLP_GPU_CLUSTER_CUH
#define MVRT_OPS_MV_MLP_GPU_CLUSTER_CUH

#include "../common/gpu_mma_tf32.cuh"
#include "../common/gpu_activation.cuh"
#include "../common/mv_op_params.h"
#if defined(MVRT_GPU_CUDA)
#include <cooperative_groups.h>
#endif

namespace mvrt_mv_gpu {

#define MVRT_MLP_ROWS 16          /* rows per cluster: one m16 fragment */
#define MVRT_MLP_G 2              /* n fragments per fc1 task (fc2: the kernel's G2, mlp_plan_for) */
#define MVRT_MLP_WARPS_MAX 12     /* the LayerNorm takes two rows per warp: >= 8 */
#define MVRT_MLP_SLICES 8         /* cluster size: hidden slices (the portable limit) */
#define MVRT_MLP_KC_MAX 16        /* C <= 512: a lane holds C / 32 values of each row it normalizes */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(MVRT_GPU_HIP)
#define MVRT_MLP_DEVICE 1
#endif

/* Operands in shared memory are stored in fragment order: for each k8
 * step of a 32-long k block and each lane (g, c) the four values of the
 * lane's m16n8k8 A fragment, contiguous (one 16-byte read per step and m
 * fragment, consecutive lanes on consecutive banks); m fragment i of a
 * K-long operand starts at 16 K i. The k positions of a block are assigned
 * to (step s, fragment column c or c + 4) as
 *   k = 16 (s >> 1) + 4 c + 2 (s & 1) + h     (h = 0: column c, 1: c + 4)
 * so that a lane's B values for the four steps are k = 4c .. 4c + 3 and
 * 16 + 4c .. 16 + 4c + 3 of its weight row: one 16-byte piece per 16 k,
 * the four lanes of a row reading 64 contiguous bytes. A block's first 16
 * k are its steps 0 and 1, so K only needs to be a multiple of 16 (a last
 * half block). A sum over k does not depend on the order of its terms:
 * both operands only have to agree. */
static __host__ __device__ inline int mlp_frag_index(int r, int k, int K)
{
    const int kb = k >> 5, w = k & 31;
    const int s = 2 * (w >> 4) + ((w >> 1) & 1), c = (w >> 2) & 3, h = w & 1;
    const int lane = 4 * (r & 7) + c, slot = 2 * h + ((r >> 3) & 1);
    return 16 * K * (r >> 4) + ((((kb * 4 + s) * 32 + lane) << 2) + slot);
}

/* Shared memory of one block, in words: the normalized rows' TF32 parts
 * (big, small: 16 x C each, fragment order), the hidden slice's parts
 * (16 x HS each), and the S partial products of this block's output
 * columns (S x 16 x C / S: slot s written by block s, remotely, while
 * this block may still be in fc1 or fc2: its own region). */
struct mlp_layout {
    int ab, as, hb, hs, red, words;
};
static __host__ __device__ inline mlp_layout mlp_layout_for(int C, int HS)
{
    const int rows = MVRT_MLP_ROWS;
    mlp_layout l;
    l.ab = 0;
    l.as = l.ab + rows * C;
    l.hb = l.as + rows * C;
    l.hs = l.hb + rows * HS;
    l.red = l.hs + rows * HS;
    l.words = l.red + rows * C;
    return l;
}

#ifdef MVRT_MLP_DEVICE
static __device__ __forceinline__ float mlp_f4(const float4 &v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/* One lane's weights of one 32-long k block for G n fragments: rows
 * (8 j + g), k = 4c .. 4c + 3 (q[j][0]) and 16 + 4c .. 16 + 4c + 3. */
template <int G> struct mlp_bblock {
    float4 q[G][2];
};

/* The weight blocks one warp multiplies in one GEMM: its tasks t =
 * task0, task0 + step, ... < tasks (task t: weight rows 8 G t .. 8 G t +
 * 8 G - 1), each K long (a multiple of 16: ceil(K / 32) blocks), in task
 * order, loaded straight into registers one block ahead of the product
 * (each weight is used by this block once: staging it in shared memory
 * buys nothing; a 4-stage cp.async ring per warp and L1 prefetches 2-3
 * blocks ahead were measured slower). w_lane: the weights at row 0 of the
 * slice and its k origin, plus the lane's offset (row g, k 4c). */
template <int G> struct mlp_wstream {
    int64_t ldw, task_jump; /* from a task's end to the next task's start */
    int K, blocks, total, loaded, kb_load;
    const float *cur;  /* the next block to load */
    const float *home; /* the stream's first block (w_lane when it is empty): a valid address */
    __device__ __forceinline__ mlp_wstream(const float *w_lane, int64_t ldw_, int task0, int step, int tasks, int K_)
        : ldw(ldw_), task_jump((int64_t)step * 8 * G * ldw_ - 32 * ((K_ + 31) / 32)), K(K_), blocks((K_ + 31) / 32),
          total(0), loaded(0), kb_load(0)
    {
        if (task0 < tasks) total = ((tasks - 1 - task0) / step + 1) * blocks;
        cur = w_lane + (int64_t)task0 * 8 * G * ldw_;
        home = total > 0 ? cur : w_lane;
    }
    /* whether a load is left in the stream */
    __device__ __forceinline__ bool more() const { return loaded < total; }
    /* The next block into b. Past the stream's end, and for the missing
     * half of a last half block, it reads an address known valid instead
     * (values never used): the loads stay unconditional. A load under a
     * branch made the compiler copy both register buffers around it every
     * 64 k (~80 of fc1's ~260 instructions per 64 k, 170 of fc2's ~530),
     * and those copies waited for the load just issued, so the block
     * ahead was not ahead any more. */
    __device__ __forceinline__ void load(mlp_bblock<G> &b)
    {
        const bool live = loaded < total;
        const float *const src = live ? cur : home;
        const int second = live && 32 * kb_load + 32 <= K ? 16 : 0;
#pragma unroll
        for (int j = 0; j < G; ++j) {
            b.q[j][0] = __ldg(reinterpret_cast<const float4 *>(src + (int64_t)j * 8 * ldw));
            b.q[j][1] = __ldg(reinterpret_cast<const float4 *>(src + (int64_t)j * 8 * ldw + second));
        }
        if (live) {
            cur += 32;
            if (++kb_load == blocks) kb_load = 0, cur += task_jump;
        }
        ++loaded;
    }
};

/* acc[i][j] += m fragment i of the k block at Af (fragment order, this
 * lane's first value of m fragment 0; big / small; fragments mstride
 * apart) times n fragment j of b, for steps [0, steps). 3xTF32 with the
 * weights split by truncation (2 instructions: big = the top 19 bits,
 * small = the exact rest); the dropped small x small term and small's own
 * truncation by the tensor core stay ~2^-20 of each product. NA
 * accumulators: 3, one per product (the shortest dependency chains), or
 * 2, the two small products sharing one (fewer registers, for wide
 * tasks; they are ~2^-11 of the big one, so sharing costs no accuracy). */
template <int MT, int G, int NA>
static __device__ __forceinline__ void mlp_mma_block(float (&acc)[NA][MT][G][4], const float *Afb, const float *Afs,
                                                     int mstride, const mlp_bblock<G> &b, int steps)
{
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        if (s >= steps) break;
        uint32_t ab[MT][4], as[MT][4];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            const float4 fb = *reinterpret_cast<const float4 *>(Afb + i * mstride + 128 * s);
            const float4 fs = *reinterpret_cast<const float4 *>(Afs + i * mstride + 128 * s);
            ab[i][0] = __float_as_uint(fb.x), ab[i][1] = __float_as_uint(fb.y);
            ab[i][2] = __float_as_uint(fb.z), ab[i][3] = __float_as_uint(fb.w);
            as[i][0] = __float_as_uint(fs.x), as[i][1] = __float_as_uint(fs.y);
            as[i][2] = __float_as_uint(fs.z), as[i][3] = __float_as_uint(fs.w);
        }
        const int e = 2 * (s & 1);
#pragma unroll
        for (int j = 0; j < G; ++j) {
            const float x0 = mlp_f4(b.q[j][s >> 1], e), x1 = mlp_f4(b.q[j][s >> 1], e + 1);
            const uint32_t bb0 = __float_as_uint(x0) & 0xffffe000u, bb1 = __float_as_uint(x1) & 0xffffe000u;
            const uint32_t bs0 = __float_as_uint(x0 - __uint_as_float(bb0));
            const uint32_t bs1 = __float_as_uint(x1 - __uint_as_float(bb1));
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                mma_tf32(acc[0][i][j], as[i], bb0, bb1);
                mma_tf32(acc[NA - 2][i][j], ab[i], bs0, bs1);
                mma_tf32(acc[NA - 1][i][j], ab[i], bb0, bb1);
            }
        }
    }
}

/* sum += the tensor-core accumulators (NA: mlp_mma_block), which restart
 * from zero */
template <int MT, int G, int NA>
static __device__ __forceinline__ void mlp_flush(float (&sum)[MT][G][4], float (&acc)[NA][MT][G][4])
{
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < G; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float t = acc[0][i][j][e];
#pragma unroll
                for (int a = 1; a < NA; ++a) t += acc[a][i][j][e];
                sum[i][j][e] += t;
#pragma unroll
                for (int a = 0; a < NA; ++a) acc[a][i][j][e] = 0.f;
            }
}

/* sum (MT m fragments x G n fragments) = A . W^T for the stream's next
 * task: A in fragment order (Afb, Afs; K = w.K); b0 holds the task's
 * first block (loaded earlier), and holds the next task's on return. The
 * tensor-core accumulators (NA: mlp_mma_block) go into the fp32 sum
 * every 128 k (then 64 and 32 for the rest of K).
 *
 * The blocks go in turns of four, then two, with the buffers in fixed
 * roles (b1 loaded while b0 is multiplied, then b0 while b1 is), so there
 * are no register copies; only the last block of K can be a half one. An
 * odd last block ends the task with one copy of the next task's first
 * block into b0. A flush every 64 k instead (turns of two) was 1.2 %
 * slower on the T stage-3 block (50 more instructions per 128 k of fc1);
 * its error was 1.3x smaller, both far inside the fp32 tolerance. */
template <int MT, int G, int NA>
static __device__ __forceinline__ void mlp_warp_gemm(float (&sum)[MT][G][4], const float *Afb, const float *Afs,
                                                     mlp_wstream<G> &w, mlp_bblock<G> &b0)
{
    float acc[NA][MT][G][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < G; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                sum[i][j][e] = 0.f;
#pragma unroll
                for (int a = 0; a < NA; ++a) acc[a][i][j][e] = 0.f;
            }
    const int lane = threadIdx.x & 31, mstride = 16 * w.K;
    const float *ab = Afb + 4 * lane, *as = Afs + 4 * lane;
    /* block kb of the task times the weights in b (steps: 4, or 2 for a
     * last half block) */
    auto mma = [&](int kb, const mlp_bblock<G> &b, int steps) {
        mlp_mma_block<MT, G, NA>(acc, ab + 512 * kb, as + 512 * kb, mstride, b, steps);
    };
    auto steps_of = [&](int kb) { return 32 * kb + 32 <= w.K ? 4 : 2; };
    mlp_bblock<G> b1;
    int kb = 0;
    for (; kb + 3 < w.blocks; kb += 4) {
        w.load(b1); /* block kb + 1 */
        mma(kb, b0, 4);
        w.load(b0);
        mma(kb + 1, b1, 4);
        w.load(b1);
        mma(kb + 2, b0, 4);
        w.load(b0); /* block kb + 4, or the next task's first */
        mma(kb + 3, b1, steps_of(kb + 3));
        mlp_flush<MT, G, NA>(sum, acc);
    }
    if (kb + 1 < w.blocks) {
        w.load(b1);
        mma(kb, b0, 4);
        w.load(b0);
        mma(kb + 1, b1, steps_of(kb + 1));
        mlp_flush<MT, G, NA>(sum, acc);
        kb += 2;
    }
    if (kb < w.blocks) { /* an odd last block */
        if (w.more()) {
            w.load(b1); /* the next task's first */
            mma(kb, b0, steps_of(kb));
            b0 = b1;
        } else {
            mma(kb, b0, steps_of(kb));
        }
        mlp_flush<MT, G, NA>(sum, acc);
    }
}

/* v's two TF32 parts (rounded) to big[i] and small[i] */
static __device__ __forceinline__ void mlp_store_split(float *big, float *small, int i, float v)
{
    uint32_t b, s;
    mma_split_tf32(v, b, s);
    big[i] = __uint_as_float(b);
    small[i] = __uint_as_float(s);
}
#endif

/* Grid (ceil(rows / 16), 1, S) in clusters of (1, 1, S), blockDim.x =
 * 32 warps (8 <= warps <= MVRT_MLP_WARPS_MAX), mlp_layout_for(C, hidden /
 * S).words * 4 bytes of dynamic shared memory. Conditions (mlp_plan_for):
 * C a multiple of 32 and <= 32 MVRT_MLP_KC_MAX, hidden / S a multiple of
 * 16, C / S a multiple of 4, x and the weights 16-byte aligned. */
template <int G2>
__global__ void __launch_bounds__(32 * MVRT_MLP_WARPS_MAX) mlp_cluster_kernel(mvrt_mlp_params_t p)
{
#ifdef MVRT_MLP_DEVICE
    namespace cg = cooperative_groups;
    constexpr int MT = 1, R = MVRT_MLP_ROWS; /* one m16 fragment of rows per cluster */
    extern __shared__ float4 mlp_smem4[];
    float *const sm = reinterpret_cast<float *>(mlp_smem4);
    constexpr int S = MVRT_MLP_SLICES; /* = gridDim.z: launch_mlp_cluster */
    const int rank = (int)blockIdx.z;
    const int C = (int)p.channels, Hd = (int)p.hidden, HS = Hd / S;
    const int warps = (int)(blockDim.x >> 5), warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const mlp_layout L = mlp_layout_for(C, HS);
    cg::cluster_group cluster = cg::this_cluster();
    /* every block of the cluster started before any stores into another's
     * shared memory (phase 3): arrive now, wait there */
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    const int g = lane >> 2, c = lane & 3;
    const int64_t m0 = (int64_t)blockIdx.x * R;
    const int mval = (int)(p.rows - m0 < R ? p.rows - m0 : R);
    float *const Ab = sm + L.ab, *const As = sm + L.as, *const Hb = sm + L.hb, *const Hs = sm + L.hs;
    const int64_t h0 = (int64_t)rank * HS;
    constexpr int G1 = MVRT_MLP_G, NA1 = 3, NA2 = G2 >= 4 ? 2 : 3; /* accumulators: mlp_warp_gemm */
    const int tasks1 = HS / (8 * G1), tasks2 = C / (8 * G2);

    /* This block's weight slices into L2 at once, their 128-byte lines
     * shared out over the clusters (each asks for every gridDim.x-th): in
     * a whole model the weights come from DRAM (MambaVision-T's 121 MB do
     * not stay in L2), and one block ahead would pay a DRAM round trip
     * per k block. */
    {
        const int per_row2 = (HS + 31) / 32; /* fc2: C rows of HS floats, 128-byte lines */
        const int lines1 = HS * C / 32, lines = lines1 + C * per_row2;
        for (int i = (int)(threadIdx.x + blockDim.x * blockIdx.x); i < lines; i += (int)(blockDim.x * gridDim.x)) {
            const float *a = i < lines1 ? p.fc1_w + h0 * C + 32 * (int64_t)i
                                        : p.fc2_w + (int64_t)((i - lines1) / per_row2) * Hd + h0 +
                                              32 * ((i - lines1) % per_row2);
            asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
        }
    }

    /* fc1's first weight block in flight during the LayerNorm */
    mlp_wstream<G1> w1(p.fc1_w + (h0 + g) * C + 4 * c, C, warp, warps, tasks1, C);
    mlp_bblock<G1> b1;
    w1.load(b1);
    /* a programmatic dependent launch starts here while the kernel before
     * runs (the weight requests above overlap its end); x is its output */
    mvrt_grid_dep_wait();
    mvrt_grid_dep_launch_dependents();

    /* 1. LayerNorm, a warp per row pair (r, r + warps), straight from
     * global memory into registers (lane: k = lane + 32 i), exact two-pass
     * mean and variance; the TF32 parts into Ab / As in fragment order (k =
     * lane + 32 i sits at the lane's position + 512 i). Padding rows past
     * the end are zeros. */
    for (int r0 = warp; r0 < R; r0 += 2 * warps) {
        const int nk = C / 32;
        const int r1 = r0 + warps < R ? r0 + warps : r0;
        const bool v0 = r0 < mval, v1 = r1 < mval;
        const float *x0 = p.x + (m0 + (v0 ? r0 : 0)) * (int64_t)C, *x1 = p.x + (m0 + (v1 ? r1 : 0)) * (int64_t)C;
        float a0[MVRT_MLP_KC_MAX], a1[MVRT_MLP_KC_MAX], lw[MVRT_MLP_KC_MAX], lb[MVRT_MLP_KC_MAX];
        float s0 = 0.f, s1 = 0.f;
#pragma unroll
        for (int i = 0; i < MVRT_MLP_KC_MAX; ++i)
            if (i < nk) { /* the LayerNorm's vectors with the rows: one round trip (0.4 us) */
                a0[i] = v0 ? x0[lane + 32 * i] : 0.f;
                a1[i] = v1 ? x1[lane + 32 * i] : 0.f;
                lw[i] = __ldg(p.ln_weight + lane + 32 * i);
                lb[i] = __ldg(p.ln_bias + lane + 32 * i);
            }
#pragma unroll
        for (int i = 0; i < MVRT_MLP_KC_MAX; ++i)
            if (i < nk) s0 += a0[i], s1 += a1[i];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            s0 += __shfl_xor_sync(0xffffffffu, s0, o), s1 += __shfl_xor_sync(0xffffffffu, s1, o);
        const float mean0 = s0 / (float)C, mean1 = s1 / (float)C;
        float q0 = 0.f, q1 = 0.f;
#pragma unroll
        for (int i = 0; i < MVRT_MLP_KC_MAX; ++i)
            if (i < nk) {
                a0[i] -= mean0, a1[i] -= mean1;
                q0 = fmaf(a0[i], a0[i], q0), q1 = fmaf(a1[i], a1[i], q1);
            }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            q0 += __shfl_xor_sync(0xffffffffu, q0, o), q1 += __shfl_xor_sync(0xffffffffu, q1, o);
        const float rstd0 = v0 ? 1.f / sqrtf(q0 / (float)C + p.ln_eps) : 0.f;
        const float rstd1 = v1 ? 1.f / sqrtf(q1 / (float)C + p.ln_eps) : 0.f;
        const float keep0 = v0 ? 1.f : 0.f, keep1 = v1 ? 1.f : 0.f;
        const int o0 = mlp_frag_index(r0, lane, C), o1 = mlp_frag_index(r1, lane, C);
#pragma unroll
        for (int i = 0; i < MVRT_MLP_KC_MAX; ++i)
            if (i < nk) {
                const float w = lw[i], b = lb[i];
                mlp_store_split(Ab, As, o0 + 512 * i, fmaf(a0[i] * rstd0, w, b * keep0));
                mlp_store_split(Ab, As, o1 + 512 * i, fmaf(a1[i] * rstd1, w, b * keep1));
            }
    }
    __syncthreads();

    /* 2. fc1 over this block's hidden slice [rank HS, (rank + 1) HS): tasks
     * of MVRT_MLP_G n fragments x all rows; bias and activation; TF32
     * parts to Hb / Hs. fc2's first weight block is loaded once the warp's
     * last fc1 block is in. */
    mlp_wstream<G2> w2(p.fc2_w + (int64_t)g * Hd + h0 + 4 * c, Hd, warp, warps, tasks2, HS);
    mlp_bblock<G2> b2;
    {
        for (int t = warp; t < tasks1; t += warps) {
            float sum[MT][G1][4];
            mlp_warp_gemm<MT, G1, NA1>(sum, Ab, As, w1, b1);
            if (t + warps >= tasks1) w2.load(b2);
            const int col = t * 8 * G1 + 2 * c;
#pragma unroll
            for (int j = 0; j < G1; ++j) {
                const int n = col + 8 * j;
                const float b0 = __ldg(p.fc1_b + h0 + n), b1 = __ldg(p.fc1_b + h0 + n + 1);
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    const int r = 16 * i + g;
                    mlp_store_split(Hb, Hs, mlp_frag_index(r, n, HS), act_apply(p.activation, sum[i][j][0] + b0));
                    mlp_store_split(Hb, Hs, mlp_frag_index(r, n + 1, HS), act_apply(p.activation, sum[i][j][1] + b1));
                    mlp_store_split(Hb, Hs, mlp_frag_index(r + 8, n, HS), act_apply(p.activation, sum[i][j][2] + b0));
                    mlp_store_split(Hb, Hs, mlp_frag_index(r + 8, n + 1, HS),
                                    act_apply(p.activation, sum[i][j][3] + b1));
                }
            }
        }
        if (warp >= tasks1) w2.load(b2); /* a warp without fc1 work */
    }
    __syncthreads();

    /* 3. this slice's part of fc2 for all C outputs, each column pair
     * stored straight into its owner's slot for this block (distributed
     * shared memory: the stores overlap the rest of fc2 and the barrier,
     * and the sum below reads only local memory) */
    float *const Red = sm + L.red;
    const int CS = C / S;
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    {
        for (int t = warp; t < tasks2; t += warps) {
            float sum[MT][G2][4];
            mlp_warp_gemm<MT, G2, NA2>(sum, Hb, Hs, w2, b2);
            const int col = t * 8 * G2 + 2 * c;
#pragma unroll
            for (int j = 0; j < G2; ++j) {
                const int n = col + 8 * j, owner = n / CS; /* n, n + 1: one owner (CS even) */
                float *pr = cluster.map_shared_rank(Red, owner) + (rank * R + g) * CS + (n - owner * CS);
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    *reinterpret_cast<float2 *>(pr + 16 * i * CS) = make_float2(sum[i][j][0], sum[i][j][1]);
                    *reinterpret_cast<float2 *>(pr + (16 * i + 8) * CS) = make_float2(sum[i][j][2], sum[i][j][3]);
                }
            }
        }
    }
    /* every block's partial products in place: arrive now (release: this
     * thread's remote stores first), wait once this thread's residual and
     * bias are loaded (0.1 us less than one cluster.sync() after the
     * loads) */
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    /* this block's outputs: columns [rank C/S, (rank + 1) C/S) of the
     * rows; the residual and fc2's bias of a thread's first float4 loaded
     * before the barrier */
    const int cw4 = C / S / 4;
    const int e0 = (int)threadIdx.x, r_e0 = e0 / cw4, col_e0 = rank * (C / S) + (e0 - r_e0 * cw4) * 4;
    float4 x_e0 = make_float4(0.f, 0.f, 0.f, 0.f), b_e0 = x_e0;
    if (r_e0 < mval) {
        x_e0 = *reinterpret_cast<const float4 *>(p.x + (m0 + r_e0) * (int64_t)C + col_e0);
        b_e0 = __ldg(reinterpret_cast<const float4 *>(p.fc2_b + col_e0));
    }
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");

    /* 4. the S partial products in rank order, fc2's bias, the residual.
     * No block touches another's shared memory after the barrier (every
     * remote store came before its writer's arrive), so none waits for
     * the others to leave. */
    for (int e = e0; e < R * cw4; e += (int)blockDim.x) {
        const int r = e / cw4, col = rank * (C / S) + (e - r * cw4) * 4;
        if (r >= mval) continue;
        const float *red = Red + r * CS + (col - rank * CS);
        float4 v = *reinterpret_cast<const float4 *>(red);
#pragma unroll
        for (int s = 1; s < S; ++s) {
            const float4 t = *reinterpret_cast<const float4 *>(red + s * R * CS);
            v.x += t.x, v.y += t.y, v.z += t.z, v.w += t.w;
        }
        float4 b = b_e0, x = x_e0;
        if (e != e0) {
            b = __ldg(reinterpret_cast<const float4 *>(p.fc2_b + col));
            x = *reinterpret_cast<const float4 *>(p.x + (m0 + r) * (int64_t)C + col);
        }
        *reinterpret_cast<float4 *>(p.x + (m0 + r) * (int64_t)C + col) =
            make_float4((v.x + b.x) + x.x, (v.y + b.y) + x.y, (v.z + b.z) + x.z, (v.w + b.w) + x.w);
    }
#else
    (void)p;
    mvrt_gpu_arch_missing();
#endif
}

#if defined(MVRT_GPU_CUDA)
/* The fused MLP's launch for p: S slices (0: not taken), warps per block,
 * shared-memory bytes, fc2's n fragments per warp task (the kernel's G2),
 * clusters. */
struct mlp_plan {
    int S, warps, smem, g2;
    unsigned row_tiles;
};
static inline bool mlp_aligned(const void *q) { return ((uintptr_t)q & 15u) == 0; }
/* Taken where all ceil(rows / 16) clusters of MVRT_MLP_SLICES blocks fit
 * on the SMs at once (batch-1 stage 3 of MambaVision: 196 rows, 13
 * clusters, 104 blocks; a second wave would double the time) and the
 * shapes are ones the kernel covers: C a multiple of 32 up to 512 (the
 * stage-3 widths of T, S and B), hidden / 8 a multiple of 16. */
static inline mlp_plan mlp_plan_for(const mvrt_mlp_params_t &p, int sm_count)
{
    mlp_plan pl = {0, 0, 0, 0, 0};
    const int S = MVRT_MLP_SLICES;
    const int64_t C = p.channels, Hd = p.hidden;
    if (p.rows < 1 || C < 32 || C % 32 || C > 32 * MVRT_MLP_KC_MAX || Hd < 16 * S || Hd % (16 * S) || Hd / S > 4096 ||
        (C / S) % 4)
        return pl;
    if (!mlp_aligned(p.x) || !mlp_aligned(p.ln_weight) || !mlp_aligned(p.ln_bias) || !mlp_aligned(p.fc1_w) ||
        !mlp_aligned(p.fc2_w) || !mlp_aligned(p.fc2_b) || !p.fc1_b)
        return pl;
    const int64_t tiles = (p.rows + MVRT_MLP_ROWS - 1) / MVRT_MLP_ROWS;
    if (tiles * S > sm_count) return pl;
    const int tasks1 = (int)(Hd / S / (8 * MVRT_MLP_G));
    pl.warps = tasks1 < 8 ? 8 : tasks1 > MVRT_MLP_WARPS_MAX ? MVRT_MLP_WARPS_MAX : tasks1;
    /* fc2's tasks 32 columns wide where each warp then has at most one
     * (MambaVision-T and -S stage 3: 10 and 12), else 16 as fc1's: every
     * task re-reads the 16 hidden rows (both TF32 parts) from shared
     * memory, twice the bytes of its weights, so wider tasks read less;
     * but a warp with two wide tasks while others idle loses more (B's
     * stage 3: 16 tasks on 12 warps measured 0.6 us slower than 32 narrow
     * ones). */
    pl.g2 = C / 32 <= pl.warps ? 4 : 2;
    pl.smem = 4 * mlp_layout_for((int)C, (int)(Hd / S)).words;
    if (pl.smem > 227 * 1024) return pl;
    pl.S = S;
    pl.row_tiles = (unsigned)tiles;
    return pl;
}

typedef void (*mlp_kernel_fn)(mvrt_mlp_params_t);
static inline mlp_kernel_fn mlp_kernel_for(const mlp_plan &pl)
{
    return pl.g2 == 4 ? mlp_cluster_kernel<4> : mlp_cluster_kernel<2>;
}

static gpuError_t mlp_smem_opt_in(const mlp_plan &pl)
{
    if (pl.smem <= 48 * 1024) return gpuSuccess;
    return cudaFuncSetAttribute(mlp_kernel_for(pl), cudaFuncAttributeMaxDynamicSharedMemorySize, pl.smem);
}

/* Queues p under plan pl (from mlp_plan_for, checked by mlp_fits);
 * `dependent`: as a programmatic dependent launch (gpu_vendor.h). */
static gpuError_t launch_mlp_cluster(const mvrt_mlp_params_t &p, const mlp_plan &pl, bool dependent, gpuStream_t s)
{
    const gpuError_t e = mlp_smem_opt_in(pl);
    if (e != gpuSuccess) return e;
    return mvrt_launch_ex(mlp_kernel_for(pl), dim3(pl.row_tiles, 1, (unsigned)pl.S), dim3(32 * pl.warps),
                          (size_t)pl.smem, s, (unsigned)pl.S, dependent, p);
}

/* Whether the current device co-schedules all of the plan's clusters at
 * once (asked when the graph is planned: a refused launch could not fall
 * back, and a second wave would double the time). */
static bool mlp_fits(const mlp_plan &pl)
{
    if (mlp_smem_opt_in(pl) != gpuSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    const mvrt_launch_config cfg(dim3(pl.row_tiles, 1, (unsigned)pl.S), dim3(32 * pl.warps), (size_t)pl.smem, 0,
                                 (unsigned)pl.S, false);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, mlp_kernel_for(pl), &cfg.cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return clusters >= (int)pl.row_tiles;
}
#endif

} // namespace mvrt_mv_gpu

#endif
