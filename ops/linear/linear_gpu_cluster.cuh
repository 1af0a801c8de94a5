/* Small fp32 GEMMs in one kernel: split-K across a thread-block cluster,
 * the slices summed through distributed shared memory (NVIDIA sm_90+ only;
 * included by backends/gpu_common/mv_gpu_launch.cu after linear_gpu.cuh;
 * HIP and older targets compile an empty kernel and never launch it).
 *
 * Why: at batch 1 a MambaVision GEMM has few output tiles (M = 196 or 49
 * tokens), so the vendor path cuts K into S slices, writes S partial
 * products and sums them in a second kernel (splitk_epilogue_kernel). On
 * an H200 that pair costs ~8-10 us per GEMM (ncu) for ~1 us of work, and
 * batch-1 MambaVision-T runs ~70 of them (2026-11-26). Here the S blocks of one
 * output tile form a cluster: each multiplies its K slice (3xTF32 on
 * mma.sync, fp32 accuracy as the CUTLASS path), stores its 64 x 64 partial
 * tile in its own shared memory, and after a cluster barrier block r sums
 * rows [r 64/S, (r+1) 64/S) of all S partial tiles, in slice order (fixed:
 * bitwise reproducible), through distributed shared memory, and applies
 * the full epilogue (bias per row or column, activation, residual, beta).
 * One launch, no global workspace.
 *
 * Layout: grid (tiles, batch, S), cluster (1, 1, S), 128 threads (4 warps,
 * each a 32 x 32 quarter of the tile). A block copies its whole K slice of
 * both operands at once (cp.async, 16-byte pieces where every row allows,
 * else 4-byte; zero-filled beyond M, N and K), in the operand's stored
 * orientation: rows along the contiguous dimension padded to a stride of
 * 8 mod 32 words (k contiguous) or 68 words (m or n contiguous). The k
 * positions of each block of 8 are taken in the order 0,4,1,5,2,6,3,7 by
 * both operands (a sum over k does not depend on its order): the two k
 * values of a lane's fragment, c and c + 4, are then adjacent in memory,
 * one 8-byte load where k is contiguous, and every fragment load of a
 * warp hits 32 distinct banks. */
#ifndef MVRT_OPS_LINEAR_GPU_CLUSTER_CUH
#define MVRT_OPS_LINEAR_GPU_CLUSTER_CUH

#include "../common/gpu_mma_tf32.cuh"
#if defined(MVRT_GPU_CUDA)
#include <cooperative_groups.h>
#endif

namespace mvrt_mv_gpu {

#define MVRT_CGEMM_TILE 64        /* output tile: 64 x 64 */
#define MVRT_CGEMM_THREADS 128
#define MVRT_CGEMM_SLICES_MAX 8   /* cluster size (the portable limit) */
#define MVRT_CGEMM_KS_MAX 64      /* K per slice (see cgemm_plan_for) */
#define MVRT_CGEMM_WIDE 68        /* row stride of an m- or n-contiguous slice (4 mod 32 words) */
#define MVRT_CGEMM_RED 72         /* row stride of the partial tile (8 mod 32 words) */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(MVRT_GPU_HIP)
#define MVRT_CGEMM_DEVICE 1
#endif

/* Row stride of a k-contiguous slice: 8 mod 32 words (the 8-byte
 * fragment loads of a half-warp, 4 rows x 8 words, hit 32 banks). */
static constexpr __host__ __device__ int cgemm_kstride(int ks) { return ks + ((8 - ks % 32) + 32) % 32; }
/* Shared-memory words of one operand's slice: 64 rows of cgemm_kstride(ks)
 * when k is contiguous, else ks rows of MVRT_CGEMM_WIDE. */
static constexpr __host__ __device__ int cgemm_operand_words(bool k_contiguous, int ks)
{
    return k_contiguous ? MVRT_CGEMM_TILE * cgemm_kstride(ks) : ks * MVRT_CGEMM_WIDE;
}
static constexpr __host__ __device__ int cgemm_smem_bytes(bool ta, bool tb, int ks)
{
    const int ops = cgemm_operand_words(!ta, ks) + cgemm_operand_words(tb, ks);
    const int red = MVRT_CGEMM_TILE * MVRT_CGEMM_RED;
    return 4 * (ops > red ? ops : red);
}
/* A folded LayerNorm (gemm_cluster_kernel<..., LN>): slices of up to
 * MVRT_CGEMM_LN_KS_MAX k, staged whole, and after the operand / partial-
 * tile region the 64 rows' (sum, sum of squares) of the slice as float2.
 * An 80-long slice takes 53 KB: the kernel is launched with the opt-in
 * shared-memory size (cgemm_smem_opt_in). Every other plan runs within
 * the default 48 KB. */
#define MVRT_CGEMM_LN_KS_MAX 80
#define MVRT_CGEMM_LN_WORDS 128
static_assert(cgemm_smem_bytes(false, true, MVRT_CGEMM_KS_MAX) <= 48 * 1024 &&
                  cgemm_smem_bytes(true, false, MVRT_CGEMM_KS_MAX) <= 48 * 1024 &&
                  cgemm_smem_bytes(false, true, MVRT_CGEMM_LN_KS_MAX) + 4 * MVRT_CGEMM_LN_WORDS <= 64 * 1024,
              "the cluster GEMM's slices must fit 48 KB of shared memory (64 KB with a folded LayerNorm)");

#ifdef MVRT_CGEMM_DEVICE
/* Copies VEC bytes global -> shared asynchronously; `valid` false stores
 * zeros (src-size 0: nothing is read). */
template <int VEC> static __device__ __forceinline__ void cgemm_copy(float *dst, const float *src, bool valid)
{
    const unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    const int n = valid ? VEC : 0;
    if constexpr (VEC == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sa), "l"(src), "r"(n) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(sa), "l"(src), "r"(n) : "memory");
}

/* One operand's slice: `rows` x `cols` stored elements (cols contiguous in
 * global memory at stride ld, rows limited to rows_valid, cols to
 * cols_valid) into shared rows of `sstride` words. */
template <int VEC>
static __device__ __forceinline__ void cgemm_stage(float *dst, int sstride, const float *src, int64_t ld, int rows,
                                                   int cols, int rows_valid, int cols_valid)
{
    constexpr int E = VEC / 4;
    const int per_row = cols / E; /* cols is a multiple of 8 */
    const int total = rows * per_row;
    for (int i = threadIdx.x; i < total; i += MVRT_CGEMM_THREADS) {
        const int r = i / per_row, c = (i - r * per_row) * E;
        const bool ok = r < rows_valid && c < cols_valid;
        cgemm_copy<VEC>(dst + r * sstride + c, ok ? src + r * ld + c : src, ok);
    }
}
#endif

#ifdef MVRT_CGEMM_DEVICE
static __device__ __forceinline__ void cgemm_zero(float (&t)[2][4][4])
{
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) t[i][j][e] = 0.f;
}

/* Asks L2 for the 64 bias values of the tile (per row from m0, else per
 * column from n0), and a folded LayerNorm's column sums, at kernel start:
 * the epilogue reads them last, and a layer's bias is read once per
 * forward, from DRAM (one round trip less on the critical path). */
static __device__ __forceinline__ void cgemm_prefetch_bias(const gemm_args &g, int64_t m0, int64_t n0)
{
    if (!g.bias || threadIdx.x >= 3) return;
    const int64_t first = g.bias_per_row ? m0 : n0, extent = g.bias_per_row ? g.M : g.N;
    const int64_t i = first + 32 * (int64_t)threadIdx.x; /* 128-byte lines */
    if (i < extent && i < first + MVRT_CGEMM_TILE) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(g.bias + i));
        if (g.ln_colsum) asm volatile("prefetch.global.L2 [%0];" ::"l"(g.ln_colsum + i));
    }
}

/* acc (this warp's 32 x 32 quarter of the 64 x 64 tile) += the product of
 * the staged slices over their first kend k positions (a multiple of 8;
 * zero-filled past the operand's end). A's slice: !TA (m, k) at
 * m * a_stride + k; TA (k, m) at k * a_stride + m. B's: TB (n, k) at
 * n * b_stride + k; !TB (k, n) at k * b_stride + n. Shared by the cluster
 * GEMM and the cluster conv (conv2d_gpu_cluster.cuh). */
template <bool TA, bool TB>
static __device__ __forceinline__ void cgemm_mma(float (&acc)[2][4][4], const float *As, int a_stride, const float *Bs,
                                                 int b_stride, int kend)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gq = lane >> 2, c = lane & 3;
    const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
    /* the (k = c, k = c + 4) pair of row m (or column n) in a block of 8 at kk */
    auto a_pair = [&](int m, int kk) {
        if constexpr (TA) return make_float2(As[(kk + 2 * c) * a_stride + m], As[(kk + 2 * c + 1) * a_stride + m]);
        else return *reinterpret_cast<const float2 *>(As + m * a_stride + kk + 2 * c);
    };
    auto b_pair = [&](int n, int kk) {
        if constexpr (TB) return *reinterpret_cast<const float2 *>(Bs + n * b_stride + kk + 2 * c);
        else return make_float2(Bs[(kk + 2 * c) * b_stride + n], Bs[(kk + 2 * c + 1) * b_stride + n]);
    };
#pragma unroll 2
    for (int kk = 0; kk < kend; kk += 8) {
        uint32_t ab[2][4], as[2][4], bb[4][2], bs[4][2];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = wm + i * 16 + gq;
            const float2 lo = a_pair(r, kk), hi = a_pair(r + 8, kk);
            mma_split_tf32(lo.x, ab[i][0], as[i][0]);
            mma_split_tf32(hi.x, ab[i][1], as[i][1]);
            mma_split_tf32(lo.y, ab[i][2], as[i][2]);
            mma_split_tf32(hi.y, ab[i][3], as[i][3]);
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const float2 v = b_pair(wn + j * 8 + gq, kk);
            mma_split_tf32(v.x, bb[j][0], bs[j][0]);
            mma_split_tf32(v.y, bb[j][1], bs[j][1]);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) mma_3xtf32_split(acc[i][j], ab[i], as[i], bb[j], bs[j]);
    }
}

/* A folded LayerNorm's A slice: the tile's rows [m0, m0 + 64) at
 * k [k0, k0 + klen) (klen a multiple of 8) loaded into registers, two
 * threads per row taking alternate 4-k pieces, and stored to As (rows of
 * ksp words) as (x - shift) * gamma[k], where shift is the mean of the
 * row's first 8 values, the same in every slice: LN(x) W^T is computed as
 * rstd ((x - shift) gamma W^T - (mean - shift) colsum) + bias, and
 * centring on a value near the mean keeps that difference from cancelling
 * where |mean| >> the spread. The slice's sums of (x - shift) and of its
 * square per row go to stats[row] (float2) for the finish. Rows past M
 * hold zeros; k past klen is not stored (the product reads < klen). VEC:
 * 16-byte loads (rows, A and gamma 16-byte aligned) or 4-byte. Replaces
 * the cp.async staging of A: the normalization costs a few instructions
 * per element as it arrives, off the product's chain. */
template <int VEC>
static __device__ __forceinline__ void cgemm_ln_stage_a(const gemm_args &g, float *As, int ksp, float2 *stats,
                                                        const float *A, int64_t m0, int mval, int64_t k0, int klen)
{
    constexpr int PER = MVRT_CGEMM_LN_KS_MAX / 8; /* 4-k pieces per thread */
    const int r = threadIdx.x >> 1, half = threadIdx.x & 1;
    const bool row_ok = r < mval;
    const float *row = A + (m0 + r) * g.lda;
    auto load4 = [&](const float *p) {
        if constexpr (VEC == 16) return __ldg(reinterpret_cast<const float4 *>(p));
        else return make_float4(__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
    };
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    float4 x[PER], gm[PER];
    const float4 h0 = row_ok ? load4(row) : zero, h1 = row_ok ? load4(row + 4) : zero;
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const int c = (2 * i + half) * 4;
        x[i] = row_ok && c < klen ? load4(row + k0 + c) : zero;
        gm[i] = c < klen ? load4(g.ln_w + k0 + c) : zero;
    }
    const float shift = row_ok ? 0.125f * ((h0.x + h0.y) + (h0.z + h0.w) + (h1.x + h1.y) + (h1.z + h1.w)) : 0.f;
    float s1 = 0.f, s2 = 0.f;
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const int c = (2 * i + half) * 4;
        if (c >= klen) break;
        const float4 a = make_float4(x[i].x - shift, x[i].y - shift, x[i].z - shift, x[i].w - shift);
        if (row_ok) {
            s1 += (a.x + a.y) + (a.z + a.w);
            s2 = fmaf(a.x, a.x, fmaf(a.y, a.y, fmaf(a.z, a.z, fmaf(a.w, a.w, s2))));
        }
        *reinterpret_cast<float4 *>(As + r * ksp + c) =
            make_float4(a.x * gm[i].x, a.y * gm[i].y, a.z * gm[i].z, a.w * gm[i].w);
    }
    s1 += __shfl_xor_sync(0xffffffffu, s1, 1);
    s2 += __shfl_xor_sync(0xffffffffu, s2, 1);
    if (half == 0) stats[r] = make_float2(s1, s2);
}

/* The cluster's finish, called by every block of the cluster (grid z =
 * the S slices, blockIdx.z the rank) once it no longer reads its staged
 * slices: the block's partial tile `acc` goes to its own shared memory
 * (`red`, 64 rows of MVRT_CGEMM_RED words), and after a cluster barrier
 * block `rank` sums rows [rank * 64 / S, (rank + 1) * 64 / S) of all S
 * partial tiles in slice order through distributed shared memory and
 * stores them through epilogue_store (bias, activation, residual, beta)
 * into Y of batch element bz. mval, nval: the tile's rows and columns
 * inside M and N. stats (LN true): the block's row sums of its slice
 * (cgemm_ln_stage_a); those of every slice give the rows' mean and
 * variance, and the sum v of a row's partial tiles becomes
 * rstd (v - (mean - shift) colsum[n]) before the epilogue. */
template <bool LN = false>
static __device__ __forceinline__ void cgemm_cluster_finish(const gemm_args &g, const float (&acc)[2][4][4], float *red,
                                                            int64_t m0, int64_t n0, int mval, int nval, int64_t bz,
                                                            float2 *stats = nullptr)
{
    namespace cg = cooperative_groups;
    constexpr int T = MVRT_CGEMM_TILE;
    const int S = (int)gridDim.z, rank = (int)blockIdx.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gq = lane >> 2, c = lane & 3;
    const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
    __syncthreads(); /* red overlays the staged slices */
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int r = wm + i * 16 + gq, col = wn + j * 8 + 2 * c;
            *reinterpret_cast<float2 *>(red + r * MVRT_CGEMM_RED + col) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2 *>(red + (r + 8) * MVRT_CGEMM_RED + col) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync(); /* every slice's partial tile is visible cluster-wide */

    /* four columns per thread (16-byte reads of every slice's partial tile) */
    const int rows = T / S, row0 = rank * rows;
    float *Y = g.Y + bz * g.sy;
    const float *R = g.R ? g.R + bz * g.sr : nullptr;
    for (int e = threadIdx.x; e < rows * (T / 4); e += MVRT_CGEMM_THREADS) {
        const int r = row0 + e / (T / 4), col = (e % (T / 4)) * 4;
        if (r >= mval || col >= nval) continue; /* no barrier below: leaving early is safe */
        float4 part[MVRT_CGEMM_SLICES_MAX];
#pragma unroll
        for (int s = 0; s < MVRT_CGEMM_SLICES_MAX; ++s)
            if (s < S) part[s] = *reinterpret_cast<const float4 *>(cluster.map_shared_rank(red, s) + r * MVRT_CGEMM_RED + col);
        float4 v = part[0];
#pragma unroll
        for (int s = 1; s < MVRT_CGEMM_SLICES_MAX; ++s)
            if (s < S) v.x += part[s].x, v.y += part[s].y, v.z += part[s].z, v.w += part[s].w;
        float vs[4] = {v.x, v.y, v.z, v.w};
        const int64_t m = m0 + r;
        if constexpr (LN) {
            float2 st = make_float2(0.f, 0.f);
#pragma unroll
            for (int s = 0; s < MVRT_CGEMM_SLICES_MAX; ++s)
                if (s < S) {
                    const float2 p = cluster.map_shared_rank(stats, s)[r];
                    st.x += p.x, st.y += p.y;
                }
            const float inv_k = 1.f / (float)g.K, d = st.x * inv_k;
            const float var = fmaxf(st.y * inv_k - d * d, 0.f), rstd = 1.f / sqrtf(var + g.ln_eps);
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (col + j < nval) vs[j] = rstd * fmaf(-d, g.ln_colsum[n0 + col + j], vs[j]);
        }
        float *yrow = Y + m * g.ldy;
        const float *rrow = R ? R + m * g.ldr : nullptr;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int64_t n = n0 + col + j;
            if (col + j < nval) epilogue_store(g, vs[j], m, n, yrow + n, rrow ? rrow + n : nullptr);
        }
    }
    cluster.sync(); /* no block leaves while another still reads its tile */
}
#endif

/* Grid (tiles_m * tiles_n, batch, S) in clusters of (1, 1, S); ks: K per
 * slice (a multiple of 8, <= MVRT_CGEMM_KS_MAX). VEC 16 needs every stored
 * row of A and B (and its start) 16-byte aligned and its contiguous extent
 * a multiple of 4; VEC 4 has no condition. LN: g's LayerNorm folded in
 * (!TA, K a multiple of 8, ks <= MVRT_CGEMM_LN_KS_MAX, A staged by
 * cgemm_ln_stage_a; MVRT_CGEMM_LN_WORDS more shared memory; VEC 16 also
 * needs the LayerNorm weight 16-byte aligned). */
template <bool TA, bool TB, int VEC, bool LN = false>
__global__ void __launch_bounds__(MVRT_CGEMM_THREADS) gemm_cluster_kernel(gemm_args g, int ks, int tiles_n)
{
#ifdef MVRT_CGEMM_DEVICE
    extern __shared__ float4 cgemm_smem4[];
    float *const sm = reinterpret_cast<float *>(cgemm_smem4);
    constexpr int T = MVRT_CGEMM_TILE;
    const int rank = (int)blockIdx.z; /* the cluster spans z */
    const int tm = (int)blockIdx.x / tiles_n, tn = (int)blockIdx.x - tm * tiles_n;
    const int64_t m0 = (int64_t)tm * T, n0 = (int64_t)tn * T, bz = blockIdx.y;
    const int64_t k0 = (int64_t)rank * ks;
    const int klen = (int)(g.K - k0 < 0 ? 0 : g.K - k0 < ks ? g.K - k0 : ks);
    const int mval = (int)(g.M - m0 < T ? g.M - m0 : T), nval = (int)(g.N - n0 < T ? g.N - n0 : T);

    /* the whole slice of both operands at once, in their stored orientation */
    const int ksp = cgemm_kstride(ks);
    float *const As = sm;
    float *const Bs = sm + cgemm_operand_words(!TA, ks);
    const float *A = g.A + bz * g.sa, *B = g.B + bz * g.sb;
    cgemm_prefetch_bias(g, m0, n0);
    /* as a programmatic dependent launch (launch_gemm_cluster) a constant
     * B is copied while the kernel before ends; A is its output */
    if (!g.b_const) mvrt_grid_dep_wait();
    if (TB) cgemm_stage<VEC>(Bs, ksp, B + n0 * g.ldb + k0, g.ldb, T, ks, nval, klen);
    else cgemm_stage<VEC>(Bs, MVRT_CGEMM_WIDE, B + k0 * g.ldb + n0, g.ldb, ks, T, klen, nval);
    if (g.b_const) mvrt_grid_dep_wait();
    mvrt_grid_dep_launch_dependents();
    float2 *const stats = reinterpret_cast<float2 *>(sm + cgemm_smem_bytes(TA, TB, ks) / 4);
    if constexpr (LN) {
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        cgemm_ln_stage_a<VEC>(g, As, ksp, stats, A, m0, mval, k0, klen); /* with B's copies in flight */
    } else {
        if (!TA) cgemm_stage<VEC>(As, ksp, A + m0 * g.lda + k0, g.lda, T, ks, mval, klen);
        else cgemm_stage<VEC>(As, MVRT_CGEMM_WIDE, A + k0 * g.lda + m0, g.lda, ks, T, klen, mval);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    __syncthreads();

    float acc[2][4][4];
    cgemm_zero(acc);
    cgemm_mma<TA, TB>(acc, As, TA ? MVRT_CGEMM_WIDE : ksp, Bs, TB ? ksp : MVRT_CGEMM_WIDE, (klen + 7) & ~7);
    cgemm_cluster_finish<LN>(g, acc, sm, m0, n0, mval, nval, bz, stats);
#else
    (void)g, (void)ks, (void)tiles_n;
    mvrt_gpu_arch_missing();
#endif
}

/* Longer slices (MVRT_CGEMM_KS_MAX < ks <= MVRT_CGEMM_KS_CHUNKED_MAX): the
 * same cluster GEMM, but each block walks its slice in chunks of
 * MVRT_CGEMM_KC k, double-buffered by cp.async, and adds each chunk's mma
 * accumulator to an fp32 sum: one accumulation chain over a long slice
 * rounds less carefully than fp32 adds (one 320-long chain gave 4-5x
 * cuBLAS SGEMM's error), chunks of 32 keep it at the short slices' level.
 * Same grid, layouts and VEC conditions as gemm_cluster_kernel. */
#define MVRT_CGEMM_KC 32
#define MVRT_CGEMM_KS_CHUNKED_MAX 192
#define MVRT_CGEMM_CHUNKED_BLOCKS 4 /* blocks per SM (__launch_bounds__: <= 128 registers) */
static constexpr __host__ __device__ int cgemm_chunk_words(bool ta, bool tb)
{
    return cgemm_operand_words(!ta, MVRT_CGEMM_KC) + cgemm_operand_words(tb, MVRT_CGEMM_KC);
}
static constexpr __host__ __device__ int cgemm_chunked_smem_bytes(bool ta, bool tb)
{
    return 4 * (2 * cgemm_chunk_words(ta, tb) > MVRT_CGEMM_TILE * MVRT_CGEMM_RED ? 2 * cgemm_chunk_words(ta, tb)
                                                                                 : MVRT_CGEMM_TILE * MVRT_CGEMM_RED);
}
static_assert(cgemm_chunked_smem_bytes(false, true) <= 48 * 1024 && cgemm_chunked_smem_bytes(true, false) <= 48 * 1024,
              "the chunked cluster GEMM must fit 48 KB of shared memory");

#ifdef MVRT_CGEMM_DEVICE
/* The chunked product of one block's slice, shared by the chunked cluster
 * GEMM and the cluster conv: sum = A_slice . B_slice over klen k, walked
 * in chunks of MVRT_CGEMM_KC staged by stage(chunk) (cp.async into buffer
 * chunk & 1 at sm + (chunk & 1) * chunk_words, A first and B a_words
 * later, one commit group per call) two chunks deep; each chunk's mma
 * accumulator is added to the fp32 sum. Ends after a barrier: the buffers
 * are free. */
template <bool TA, bool TB, typename Stage>
static __device__ __forceinline__ void cgemm_chunked_product(float (&sum)[2][4][4], const float *sm, int chunk_words,
                                                             int a_words, int klen, Stage stage)
{
    constexpr int KC = MVRT_CGEMM_KC, KSP = cgemm_kstride(MVRT_CGEMM_KC);
    float acc[2][4][4];
    cgemm_zero(sum);
    const int chunks = (klen + KC - 1) / KC;
    if (chunks > 0) stage(0);
    for (int ch = 0; ch < chunks; ++ch) {
        if (ch + 1 < chunks) {
            stage(ch + 1); /* into the buffer the previous chunk used (released by its barrier) */
            asm volatile("cp.async.wait_group 1;\n" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::: "memory");
        }
        __syncthreads();
        cgemm_zero(acc);
        const float *const As = sm + (ch & 1) * chunk_words;
        const int left = klen - ch * KC;
        cgemm_mma<TA, TB>(acc, As, TA ? MVRT_CGEMM_WIDE : KSP, As + a_words, TB ? KSP : MVRT_CGEMM_WIDE,
                          left < KC ? (left + 7) & ~7 : KC);
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) sum[i][j][e] += acc[i][j][e];
        __syncthreads(); /* the buffer is free for the chunk after next */
    }
}
#endif

template <bool TA, bool TB, int VEC>
__global__ void __launch_bounds__(MVRT_CGEMM_THREADS, MVRT_CGEMM_CHUNKED_BLOCKS)
    gemm_cluster_chunked_kernel(gemm_args g, int ks, int tiles_n)
{
#ifdef MVRT_CGEMM_DEVICE
    extern __shared__ float4 cgemm_smem4[];
    float *const sm = reinterpret_cast<float *>(cgemm_smem4);
    constexpr int T = MVRT_CGEMM_TILE, KC = MVRT_CGEMM_KC, KSP = cgemm_kstride(MVRT_CGEMM_KC);
    constexpr int CHUNK = cgemm_chunk_words(TA, TB), A_WORDS = cgemm_operand_words(!TA, MVRT_CGEMM_KC);
    const int rank = (int)blockIdx.z;
    const int tm = (int)blockIdx.x / tiles_n, tn = (int)blockIdx.x - tm * tiles_n;
    const int64_t m0 = (int64_t)tm * T, n0 = (int64_t)tn * T, bz = blockIdx.y;
    const int64_t k0 = (int64_t)rank * ks;
    const int klen = (int)(g.K - k0 < 0 ? 0 : g.K - k0 < ks ? g.K - k0 : ks);
    const int mval = (int)(g.M - m0 < T ? g.M - m0 : T), nval = (int)(g.N - n0 < T ? g.N - n0 : T);
    const float *A = g.A + bz * g.sa, *B = g.B + bz * g.sb;
    cgemm_prefetch_bias(g, m0, n0);
    mvrt_grid_dep_wait(); /* as gemm_cluster_kernel (the chunks copy A and B together) */
    mvrt_grid_dep_launch_dependents();

    auto stage = [&](int chunk) {
        float *const As = sm + (chunk & 1) * CHUNK, *const Bs = As + A_WORDS;
        const int64_t kc = k0 + chunk * KC;
        const int kv = klen - chunk * KC;
        if (!TA) cgemm_stage<VEC>(As, KSP, A + m0 * g.lda + kc, g.lda, T, KC, mval, kv);
        else cgemm_stage<VEC>(As, MVRT_CGEMM_WIDE, A + kc * g.lda + m0, g.lda, KC, T, kv, mval);
        if (TB) cgemm_stage<VEC>(Bs, KSP, B + n0 * g.ldb + kc, g.ldb, T, KC, nval, kv);
        else cgemm_stage<VEC>(Bs, MVRT_CGEMM_WIDE, B + kc * g.ldb + n0, g.ldb, KC, T, kv, nval);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    float sum[2][4][4];
    cgemm_chunked_product<TA, TB>(sum, sm, CHUNK, A_WORDS, klen, stage);
    cgemm_cluster_finish(g, sum, sm, m0, n0, mval, nval, bz);
#else
    (void)g, (void)ks, (void)tiles_n;
    mvrt_gpu_arch_missing();
#endif
}

#if defined(MVRT_GPU_CUDA)
/* The cluster GEMM's plan for g: slices S (0: not taken) and K per slice.
 * S is the largest power of two <= max_slices (and 8) with K / S >= 32 whose
 * tiles x S blocks all fit on the SMs at once, at most
 * MVRT_CGEMM_PLAN_BLOCKS per SM (and as shared memory and registers
 * allow): a second wave would double the latency. Slices up to
 * MVRT_CGEMM_KS_MAX = 64 are staged whole (gemm_cluster_kernel), longer
 * ones up to max_ks (<= MVRT_CGEMM_KS_CHUNKED_MAX = 192) in 32-k chunks
 * with fp32 chunk sums (gemm_cluster_chunked_kernel: one mma accumulator
 * over a 320-long slice gave 4-5x the error of cuBLAS SGEMM). Not taken
 * (the vendor path runs) for S = 1 (K < 64: one block would run the whole
 * tile's epilogue, measured slower than GEMM + epilogue kernel), for
 * slices over max_ks, and where even 64 x 64 tiles x the batch reach the
 * SM count. Measured on an H200 (ncu, batch-1 MambaVision-T): 1.5-2.3 us
 * saved per GEMM on the K = 320 linears; on an H100 the chunked kernel
 * took fc2 (K = 1280) from 16.2 to 13.6 us and the stage-4 K = 640
 * linears from ~11-16 to 8-13 us (2026-11-26). */
struct cgemm_plan {
    int S, ks;
};
#define MVRT_CGEMM_SM_SMEM 233472 /* shared memory per SM on sm_90 (228 KB) */
/* at most 3 blocks per SM in a plan (registers and shared memory allow
 * 4-5: __launch_bounds__ of the kernels): fewer, longer slices beat 4-5 blocks
 * per SM (H100, batch-1 MambaVision-T: fc1 196 x 1280 x 320 at S = 8, 640
 * blocks, 15.0 us vs S = 4 chunked, 320 blocks, 12.7 us; model 1.036 /
 * 1.049 vs 1.020 / 1.021 ms; a cap of 2 gave 1.047) */
#define MVRT_CGEMM_PLAN_BLOCKS 3
/* The slice choice shared by the cluster GEMM and the cluster conv: the
 * largest power of two S <= max_slices (and 8) with K / S >= 32 whose
 * `tiles` x S blocks fit one wave at the blocks per SM that smem_bytes(ks)
 * allows, and at most MVRT_CGEMM_PLAN_BLOCKS; {0, 0} when even 64 x 64
 * tiles reach the SM count, for S = 1, or for slices over max_ks. */
template <typename SmemBytes>
static inline cgemm_plan cgemm_slices(int64_t tiles, int64_t K, int sm_count, int max_slices, int max_ks,
                                      SmemBytes smem_bytes)
{
    cgemm_plan p = {0, 0};
    if (tiles >= sm_count) return p;
    int S = 1;
    while (2 * S <= max_slices && 2 * S <= MVRT_CGEMM_SLICES_MAX && K / (2 * S) >= 32) S *= 2;
    for (; S >= 2; S /= 2) {
        const int64_t ks = ((K + S - 1) / S + 7) / 8 * 8;
        if (ks > max_ks) return p; /* fewer slices are only longer */
        int per_sm = MVRT_CGEMM_SM_SMEM / (smem_bytes((int)ks) + 1024);
        if (per_sm > MVRT_CGEMM_PLAN_BLOCKS) per_sm = MVRT_CGEMM_PLAN_BLOCKS;
        if (tiles * S <= (int64_t)per_sm * sm_count) {
            p.S = S;
            p.ks = (int)ks;
            return p;
        }
    }
    return p;
}

/* With a folded LayerNorm (g.ln_w) slices are staged whole, up to
 * MVRT_CGEMM_LN_KS_MAX k. */
static inline cgemm_plan cgemm_plan_for(const gemm_args &g, int sm_count, int max_slices,
                                        int max_ks = MVRT_CGEMM_KS_CHUNKED_MAX)
{
    if (max_slices < 2 || g.y16 || g.K < 64 || g.batch > 65535 || g.M > INT32_MAX / 2 || g.N > INT32_MAX / 2)
        return cgemm_plan{0, 0};
    const int64_t tiles = ((g.M + MVRT_CGEMM_TILE - 1) / MVRT_CGEMM_TILE) * ((g.N + MVRT_CGEMM_TILE - 1) / MVRT_CGEMM_TILE);
    if (g.ln_w)
        return cgemm_slices(tiles * g.batch, g.K, sm_count, max_slices,
                            max_ks < MVRT_CGEMM_LN_KS_MAX ? max_ks : MVRT_CGEMM_LN_KS_MAX, [&](int ks) {
                                return cgemm_smem_bytes(g.ta != 0, g.tb != 0, ks) + 4 * MVRT_CGEMM_LN_WORDS;
                            });
    return cgemm_slices(tiles * g.batch, g.K, sm_count, max_slices, max_ks, [&](int ks) {
        return ks > MVRT_CGEMM_KS_MAX ? cgemm_chunked_smem_bytes(g.ta != 0, g.tb != 0)
                                      : cgemm_smem_bytes(g.ta != 0, g.tb != 0, ks);
    });
}

static inline bool cgemm_aligned(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* The kernel, grid and shared memory of g's cluster GEMM under plan pl. */
struct cgemm_launch {
    void (*fn)(gemm_args, int, int);
    dim3 grid;
    int smem, tiles_n;
};
template <bool TA, bool TB, bool LN>
static cgemm_launch cgemm_launch_t(const gemm_args &g, const cgemm_plan &pl, int vec)
{
    const int tiles_n = (int)((g.N + MVRT_CGEMM_TILE - 1) / MVRT_CGEMM_TILE);
    const int tiles_m = (int)((g.M + MVRT_CGEMM_TILE - 1) / MVRT_CGEMM_TILE);
    const bool chunked = !LN && pl.ks > MVRT_CGEMM_KS_MAX;
    cgemm_launch c;
    c.smem = chunked ? cgemm_chunked_smem_bytes(TA, TB)
                     : cgemm_smem_bytes(TA, TB, pl.ks) + (LN ? 4 * MVRT_CGEMM_LN_WORDS : 0);
    if (LN) c.fn = vec == 16 ? gemm_cluster_kernel<TA, TB, 16, true> : gemm_cluster_kernel<TA, TB, 4, true>;
    else c.fn = chunked ? (vec == 16 ? gemm_cluster_chunked_kernel<TA, TB, 16> : gemm_cluster_chunked_kernel<TA, TB, 4>)
                        : (vec == 16 ? gemm_cluster_kernel<TA, TB, 16> : gemm_cluster_kernel<TA, TB, 4>);
    c.grid = dim3((unsigned)(tiles_m * tiles_n), (unsigned)g.batch, (unsigned)pl.S);
    c.tiles_n = tiles_n;
    return c;
}
static cgemm_launch cgemm_launch_for(const gemm_args &g, const cgemm_plan &pl)
{
    /* 16-byte pieces: every stored row's start aligned, its contiguous
     * extent (K, or M / N for the transposed layouts) a multiple of 4 */
    const int64_t a_extent = g.ta ? g.M : g.K, b_extent = g.tb ? g.K : g.N;
    const bool v16 = cgemm_aligned(g.A) && cgemm_aligned(g.B) && g.lda % 4 == 0 && g.ldb % 4 == 0 &&
                     g.sa % 4 == 0 && g.sb % 4 == 0 && a_extent % 4 == 0 && b_extent % 4 == 0;
    const int vec = v16 ? 16 : 4;
    /* cgemm_ln_layout: !ta, tb */
    if (g.ln_w) return cgemm_launch_t<false, true, true>(g, pl, v16 && cgemm_aligned(g.ln_w) ? 16 : 4);
    if (!g.ta && !g.tb) return cgemm_launch_t<false, false, false>(g, pl, vec);
    if (!g.ta && g.tb) return cgemm_launch_t<false, true, false>(g, pl, vec);
    if (g.ta && !g.tb) return cgemm_launch_t<true, false, false>(g, pl, vec);
    return cgemm_launch_t<true, true, false>(g, pl, vec);
}

/* Lets c's kernel take its shared memory where it exceeds the default
 * 48 KB (the folded LayerNorm's 80-long slices). */
static gpuError_t cgemm_smem_opt_in(const cgemm_launch &c)
{
    if (c.smem <= 48 * 1024) return gpuSuccess;
    return cudaFuncSetAttribute(c.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, c.smem);
}

/* Queues g on the cluster GEMM with plan pl (from cgemm_plan_for);
 * `dependent`: as a programmatic dependent launch (gpu_vendor.h). */
static gpuError_t launch_gemm_cluster(const gemm_args &g, const cgemm_plan &pl, bool dependent, gpuStream_t s)
{
    const cgemm_launch c = cgemm_launch_for(g, pl);
    const gpuError_t e = cgemm_smem_opt_in(c);
    if (e != gpuSuccess) return e;
    return mvrt_launch_ex(c.fn, c.grid, dim3(MVRT_CGEMM_THREADS), (size_t)c.smem, s, (unsigned)pl.S, dependent, g,
                          pl.ks, c.tiles_n);
}

/* The layout a folded LayerNorm (g.ln_w) needs: A (M, K) row-major, B a
 * PyTorch weight (N, K), a bias per column, K a multiple of 8, fp32
 * output, no residual. */
static bool cgemm_ln_layout(const gemm_args &g)
{
    return g.ln_w && g.ln_colsum && g.bias && !g.bias_per_row && !g.ta && g.tb && g.K % 8 == 0 && !g.y16 && !g.R;
}

/* Whether the current device can run g (with a folded LayerNorm) under
 * plan pl: its shared memory allowed and its clusters co-scheduled (asked
 * of the occupancy API at planning time: the plain cluster GEMM falls
 * back to the vendor path when a launch is refused, which cannot compute
 * the folded LayerNorm). */
static bool cgemm_ln_fits(const gemm_args &g, const cgemm_plan &pl)
{
    const cgemm_launch c = cgemm_launch_for(g, pl);
    if (cgemm_smem_opt_in(c) != gpuSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return mvrt_cluster_z_fits(c.fn, c.grid, dim3(MVRT_CGEMM_THREADS), (size_t)c.smem, (unsigned)pl.S);
}
#endif

} // namespace mvrt_mv_gpu

#endif
