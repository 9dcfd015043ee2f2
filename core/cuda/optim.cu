/* optim.cu - LAMB, SLAMB, AdamW and momentum SGD steps on one GPU
 * (API and semantics: lbs_cuda_optim.h; the reference is the CPU code in
 * core/optim/, whose formulas are repeated next to each kernel).
 *
 * Layout: every buffer (w, g, m, v, u, c) is one flat array, layers back
 * to back.  The work is cut into tiles of TILE elements that never cross
 * a layer; one block per tile, and a tile table on the device tells a
 * block its range and layer, so one launch covers all layers whatever
 * their sizes.
 *
 * Per-layer norms in one launch: each block writes the partial sums of
 * its tile, then counts itself done on its layer (an atomic counter, the
 * pattern of CUDA's threadFenceReduction sample); the block that
 * finishes a layer last adds that layer's partials in a fixed order
 * (deterministic: the same result on every run) and computes the layer's
 * trust ratio and step size into device memory, which the next kernel
 * reads.  So a LAMB step is three launches (gradient check, moments +
 * norms, update) and nothing is copied to the host.
 *
 * Exactness: the CPU reference rounds every product and sum on its own
 * (x86-64 baseline code: no FMA; C11 mode does not contract).  nvcc
 * would fuse a*b+c into one FMA with one rounding, so every operation
 * whose result feeds another is written with its round-to-nearest
 * intrinsic (MUL, ADD, ...): that makes the element-wise results
 * bit-identical to the CPU's, independent of nvcc's -fmad/-prec flags.
 * Norm sums need no such care: their order differs from the CPU's anyway.
 */
#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "lbs_cuda.h"
#include "lbs_cuda_optim.h"
#include "lbscale/mask.h"
#include "lbscale/optim.h"
#include "lbscale/rng.h"

#define MUL __fmul_rn
#define ADD __fadd_rn
#define SUB __fsub_rn
#define DIV __fdiv_rn
#define SQRT __fsqrt_rn

#define THREADS 256
#define PER 8                     /* elements per thread and tile */
#define TILE (THREADS * PER)
#define SPOW_TABLE 4096           /* as slamb.c: beta3^c tabulated below */

/* The kernel families are core's (enum lbs_optim_kernel): each
 * optimizer's ops table names its own (struct lbs_optim_device), so no
 * list of optimizer names lives here. */
#define LAMB LBS_KERNEL_LAMB
#define SLAMB LBS_KERNEL_SLAMB
#define ADAMW LBS_KERNEL_ADAMW
#define SGD LBS_KERNEL_SGD

struct tile {
    unsigned long long lo;        /* first flat element (sync tiles: slot) */
    unsigned n;                   /* elements (slots) in this tile */
    int layer;
};

struct dlayer {
    unsigned long long off, n;    /* flat offset, elements */
    unsigned first_tile, ntiles;  /* its tiles in the tile table */
    float wd;                     /* weight decay of this layer */
    int plain;                    /* exclude_1d and 1-D: trust ratio 1 */
    int noclamp;                  /* slamb, 1-D, clamp_1d=0: the authors'
                                     unclamped ratio */
    int partial;                  /* slamb: random-k layer, else always synced */
    unsigned long long poff;      /* slamb: offset in perm / idx / vals */
    unsigned long long chunks;    /* slamb cyclic: chunks of the permutation */
};

/* Device-side facts of the current step and since the last sync. */
struct dstate {
    float gscale;                 /* clip factor of this step (1: off) */
    int ok;                       /* this step's gradients are finite */
    int bad_now;                  /* first layer with a non-finite update
                                     in this step, INT_MAX: none */
    unsigned layers_done;         /* k_gsq's counter over layers */
    unsigned long long skipped;   /* steps skipped since the last sync */
    unsigned long long first_skip;
    unsigned long long first_bad; /* step << 32 | layer, ~0: none */
};

/* SLAMB's per-layer step parameters (slamb.c's struct slamb_blend). */
struct blend {
    float step_synced, lr, lr_min, phi_max, phi_min;
};

/* Scalars of one step, passed by value. */
struct args {
    float b1, b2, c1, c2, ibc1, ibc2, eps, wd, mu, beta3;
    float fcmin, fcmax;
    double lr, lr_min, cmin, cmax, clip;
    long long t;
    int nesterov, bernoulli;
    unsigned long long seed, thr;
};

/* ---------------------------------------------------------------- */
/* block helpers                                                      */

/* Sum nv (<= 4) doubles over the block; the sums land in sh[q * THREADS]
 * for every thread to read.  Shuffles within each warp, then thread 0
 * adds the warps' sums in order: a fixed pattern, so deterministic, and
 * three barriers (the gradient check moves only 4 bytes per element, a
 * barrier-heavy tree would show). */
__device__ static void block_sum(const double *v, int nv, double *sh)
{
    const unsigned lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    double x[4];
    for (int q = 0; q < nv; q++) {
        x[q] = v[q];
        for (unsigned d = 16; d > 0; d >>= 1)
            x[q] += __shfl_down_sync(0xffffffffu, x[q], d);
    }
    __syncthreads();              /* sh may still be read from a last call */
    if (lane == 0)
        for (int q = 0; q < nv; q++)
            sh[q * THREADS + wid] = x[q];
    __syncthreads();
    if (threadIdx.x == 0)
        for (int q = 0; q < nv; q++) {
            double s = 0;
            for (unsigned k = 0; k < THREADS / 32; k++)
                s += sh[q * THREADS + k];
            sh[q * THREADS] = s;
        }
    __syncthreads();
}

/* Exclusive prefix sum of x in thread order; *total gets the block's sum. */
__device__ static unsigned block_scan(unsigned x, unsigned *total)
{
    __shared__ unsigned warp_sum[THREADS / 32];
    const unsigned lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    unsigned incl = x;
    for (unsigned d = 1; d < 32; d <<= 1) {
        unsigned y = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d)
            incl += y;
    }
    __syncthreads();              /* warp_sum may be read from a last call */
    if (lane == 31)
        warp_sum[wid] = incl;
    __syncthreads();
    unsigned before = 0, all = 0;
    for (unsigned k = 0; k < THREADS / 32; k++) {
        before += k < wid ? warp_sum[k] : 0;
        all += warp_sum[k];
    }
    *total = all;
    return before + incl - x;
}

/* True in the one block that is the last of `total` blocks to call it on
 * counter *count; that block then sees what the others wrote before
 * calling (read it with __ldcg, past the non-coherent L1).  Resets the
 * counter for the next launch. */
__device__ static bool last_block(unsigned *count, unsigned total)
{
    __shared__ bool last;
    __threadfence();              /* this block's partials before the count */
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(count, 1u) == total - 1;
        if (last)
            *count = 0;
    }
    __syncthreads();
    return last;
}

/* A layer's partials (nv per tile) added up; result in sh[q * THREADS]. */
__device__ static void layer_sums(const double *part, int nv,
                                  const struct dlayer &D, double *sh)
{
    double acc[4] = {0, 0, 0, 0};
#pragma unroll 8   /* loads in flight: one block reads every tile's sums */
    for (unsigned j = threadIdx.x; j < D.ntiles; j += THREADS)
        for (int q = 0; q < nv; q++)
            acc[q] += __ldcg(&part[(size_t)(D.first_tile + j) * nv + q]);
    block_sum(acc, nv, sh);
}

__device__ static void flag_bad(struct dstate *st, int layer, long long t)
{
    atomicMin(&st->bad_now, layer);
    atomicMin(&st->first_bad,
              (unsigned long long)t << 32 | (unsigned long long)layer);
}

/* lbs_trust_ratio (kernels.c) */
__device__ static double trust(double wn, double un, double lo, double hi)
{
    double r = (wn > 0 && un > 0) ? wn / un : 1.0;
    return r < lo ? lo : r > hi ? hi : r;
}

/* u = (m ibc1) / (sqrt(v ibc2) + eps) + wd w  (lbs_lamb_u, slamb_u) */
__device__ static float adam_u(const struct args &a, float wd, float m,
                               float v, float w)
{
    return ADD(DIV(MUL(m, a.ibc1), ADD(SQRT(MUL(v, a.ibc2)), a.eps)),
               MUL(wd, w));
}

/* ---------------------------------------------------------------- */
/* the driver's gradient check (optim.c grads_finite) and the clip     */
/* factor (lbs_clip_scale): reads g, 4 bytes per element               */

__global__ void __launch_bounds__(THREADS)
k_gsq(const struct tile *tiles, const struct dlayer *L, int nlayers,
      struct args a, const float *__restrict__ g, double *part,
      double *gsq, unsigned *ctr, struct dstate *st)
{
    __shared__ double sh[THREADS];
    const struct tile T = tiles[blockIdx.x];
    float f = 0;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        unsigned j = threadIdx.x + k * THREADS;
        if (j < T.n) {
            float x = g[T.lo + j];
            f += x * x;
        }
    }
    double v = f;
    block_sum(&v, 1, sh);
    if (threadIdx.x == 0)
        part[blockIdx.x] = sh[0];
    const struct dlayer D = L[T.layer];
    if (!last_block(&ctr[T.layer], D.ntiles))
        return;
    layer_sums(part, 1, D, sh);
    if (threadIdx.x == 0)
        gsq[T.layer] = sh[0];
    if (!last_block(&st->layers_done, (unsigned)nlayers) || threadIdx.x)
        return;
    double total = 0;
    int bad = 0;
    for (int l = 0; l < nlayers; l++) {
        double x = __ldcg(&gsq[l]);
        bad |= !isfinite(x);
        total += x;
    }
    double gnorm = sqrt(total);
    double s = (a.clip > 0 && gnorm > a.clip) ? a.clip / gnorm : 1.0;
    st->gscale = (float)s;
    st->ok = !bad;
    st->bad_now = INT_MAX;
    if (bad && st->skipped++ == 0)
        st->first_skip = (unsigned long long)a.t;
}

/* ---------------------------------------------------------------- */
/* LAMB (lamb.c): pass 1 = m, v, u and ||w||, ||u|| per layer; then     */
/* w -= lr phi u.  40 bytes per element.                              */

__global__ void __launch_bounds__(THREADS)
k_lamb1(const struct tile *tiles, const struct dlayer *L, struct args a,
        const float *__restrict__ g, float *__restrict__ m,
        float *__restrict__ v, const float *__restrict__ w,
        float *__restrict__ u, double *part, unsigned *ctr, float *stepv,
        struct dstate *st)
{
    __shared__ double sh[2 * THREADS];
    if (!st->ok)
        return;
    const struct tile T = tiles[blockIdx.x];
    const float wd = L[T.layer].wd, gs = st->gscale;
    float gk[PER] = {0}, mk[PER] = {0}, vk[PER] = {0}, wk[PER] = {0};
#pragma unroll
    for (int k = 0; k < PER; k++) {   /* all loads first: many in flight */
        unsigned j = threadIdx.x + k * THREADS;
        if (j < T.n) {
            size_t i = T.lo + j;
            gk[k] = g[i], mk[k] = m[i], vk[k] = v[i], wk[k] = w[i];
        }
    }
    float fw = 0, fu = 0;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        unsigned j = threadIdx.x + k * THREADS;
        if (j < T.n) {
            size_t i = T.lo + j;
            float gi = MUL(gk[k], gs);
            float mi = ADD(MUL(a.b1, mk[k]), MUL(a.c1, gi));
            float vi = ADD(MUL(a.b2, vk[k]), MUL(MUL(a.c2, gi), gi));
            float ui = adam_u(a, wd, mi, vi, wk[k]);
            m[i] = mi, v[i] = vi, u[i] = ui;
            fw += wk[k] * wk[k];
            fu += ui * ui;
        }
    }
    double p[2] = {fw, fu};
    block_sum(p, 2, sh);
    if (threadIdx.x == 0)
        part[2 * blockIdx.x] = sh[0], part[2 * blockIdx.x + 1] = sh[THREADS];
    const struct dlayer D = L[T.layer];
    if (!last_block(&ctr[T.layer], D.ntiles))
        return;
    layer_sums(part, 2, D, sh);
    if (threadIdx.x == 0) {
        double wn = sqrt(sh[0]), un = sqrt(sh[THREADS]);
        if (!isfinite(un))
            flag_bad(st, T.layer, a.t);
        double phi = D.plain ? 1.0 : trust(wn, un, a.cmin, a.cmax);
        stepv[T.layer] = (float)(a.lr * phi);
    }
}

/* w -= step u (lbs_lamb_apply); skips layers from the first bad one on,
 * as the CPU returns there. */
__global__ void __launch_bounds__(THREADS)
k_apply(const struct tile *tiles, const float *__restrict__ u,
        float *__restrict__ w, const float *stepv, const struct dstate *st)
{
    if (!st->ok)
        return;
    const struct tile T = tiles[blockIdx.x];
    if (T.layer >= st->bad_now)
        return;
    const float s = stepv[T.layer];
#pragma unroll
    for (int k = 0; k < PER; k++) {
        unsigned j = threadIdx.x + k * THREADS;
        if (j < T.n)
            w[T.lo + j] = SUB(w[T.lo + j], MUL(s, u[T.lo + j]));
    }
}

/* ---------------------------------------------------------------- */
/* AdamW (adamw.c), one pass, 28 bytes per element:                    */
/*   m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; w -= lr (u)           */

__global__ void __launch_bounds__(THREADS)
k_adamw(const struct tile *tiles, struct args a, const float *__restrict__ g,
        float *__restrict__ m, float *__restrict__ v, float *__restrict__ w,
        struct dstate *st)
{
    if (!st->ok)
        return;
    const struct tile T = tiles[blockIdx.x];
    const float lr = (float)a.lr;
    int bad = 0;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        unsigned j = threadIdx.x + k * THREADS;
        if (j < T.n) {
            size_t i = T.lo + j;
            float gi = g[i], wi = w[i];
            float mi = ADD(MUL(a.b1, m[i]), MUL(a.c1, gi));
            float vi = ADD(MUL(a.b2, v[i]), MUL(MUL(a.c2, gi), gi));
            m[i] = mi, v[i] = vi;
            float ui = adam_u(a, a.wd, mi, vi, wi);
            bad |= !isfinite(ui);
            w[i] = SUB(wi, MUL(lr, ui));
        }
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0)
        flag_bad(st, T.layer, a.t);
}

/* ---------------------------------------------------------------- */
/* momentum SGD (sgd.c via lbs_momentum_pass with gs = a = 1, k = lr):  */
/*   d = g + wd w; b = mu b + d; s = nesterov ? d + mu b : b; w -= lr s */
/* 20 bytes per element.                                              */

__global__ void __launch_bounds__(THREADS)
k_sgd(const struct tile *tiles, struct args a, const float *__restrict__ g,
      float *__restrict__ b, float *__restrict__ w, struct dstate *st)
{
    if (!st->ok)
        return;
    const struct tile T = tiles[blockIdx.x];
    const float lr = (float)a.lr, one = 1.0f;
    int bad = 0;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        unsigned j = threadIdx.x + k * THREADS;
        if (j < T.n) {
            size_t i = T.lo + j;
            float wi = w[i];
            float d = ADD(MUL(one, g[i]), MUL(a.wd, wi));
            float bi = ADD(MUL(a.mu, b[i]), MUL(one, d));
            b[i] = bi;
            float s = a.nesterov ? ADD(MUL(one, d), MUL(a.mu, bi)) : bi;
            bad |= !isfinite(s);
            w[i] = SUB(wi, MUL(lr, s));
        }
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0)
        flag_bad(st, T.layer, a.t);
}

/* ---------------------------------------------------------------- */
/* SLAMB (slamb.c), one rank.  Per step:                               */
/*   mom:     m, v from g; counters c + 1 (partial layers); the mask's   */
/*            size per layer (cyclic: chunk t mod C; Bernoulli: hits per */
/*            tile, turned into each tile's first slot by the layer's    */
/*            last block)                                               */
/*   gather:  vals = m[S] (cyclic: S = the permutation's chunk;          */
/*            Bernoulli: pick = the draws again, compacted in order)     */
/*   scatter: m[S] = vals, c[S] = 0  (the allreduce of vals would sit    */
/*            between the two; on one rank it is the identity)           */
/*   norms:   u, and ||w_S||, ||u_S||, ||w_~S||, ||u_~S|| per layer ->   */
/*            the layer's blend                                         */
/*   apply:   w -= phi_e lr_e u per element                             */

__device__ static bool drawn(unsigned long long key, unsigned long long i,
                             unsigned long long thr)
{
    return lbs_rng_hit(key, i, thr);   /* lbs_mask_bernoulli's */
}

/* This thread's PER elements of tile T from x0, x1, x2 (and, where the
 * layer is partial, the staleness counters c) into registers; elements
 * past the tile keep the zeros the caller initialised them with. */
static __device__ __forceinline__ void
load_tile3(const struct tile &T, const struct dlayer &D,
           const float *__restrict__ x0, const float *__restrict__ x1,
           const float *__restrict__ x2, const unsigned *__restrict__ c,
           float *k0, float *k1, float *k2, unsigned *ck)
{
#pragma unroll
    for (int k = 0; k < PER; k++) {
        unsigned j = threadIdx.x + k * THREADS;
        if (j < T.n) {
            size_t i = T.lo + j;
            k0[k] = x0[i], k1[k] = x1[i], k2[k] = x2[i];
            if (D.partial)
                ck[k] = c[i];
        }
    }
}

/* A kernel's start: the block's tile T and its layer D, or nothing to do
 * once an earlier kernel of the step has failed (st->ok cleared). */
#define TILE_BEGIN(tiles)                                                   \
    if (!st->ok)                                                            \
        return;                                                             \
    const struct tile T = (tiles)[blockIdx.x];                              \
    const struct dlayer D = L[T.layer]

__global__ void __launch_bounds__(THREADS)
k_slamb_mom(const struct tile *tiles, const struct dlayer *L, struct args a,
            const float *__restrict__ g, float *__restrict__ m,
            float *__restrict__ v, unsigned *__restrict__ c,
            unsigned *hits, unsigned *tbase, unsigned *ctr,
            unsigned long long *cnt, unsigned long long *clo,
            struct dstate *st)
{
    TILE_BEGIN(tiles);
    float gk[PER] = {0}, mk[PER] = {0}, vk[PER] = {0};
    unsigned ck[PER] = {0};
    load_tile3(T, D, g, m, v, c, gk, mk, vk, ck);
#pragma unroll
    for (int k = 0; k < PER; k++) {
        unsigned j = threadIdx.x + k * THREADS;
        if (j < T.n) {
            size_t i = T.lo + j;
            float gi = gk[k];
            m[i] = ADD(MUL(a.b1, mk[k]), MUL(a.c1, gi));
            v[i] = ADD(MUL(a.b2, vk[k]), MUL(MUL(a.c2, gi), gi));
            if (D.partial)
                c[i] = ck[k] + (ck[k] != UINT_MAX);
        }
    }
    if (!D.partial)
        return;
    if (!a.bernoulli) {           /* lbs_mask_cyclic_get */
        if (T.lo == D.off && threadIdx.x == 0) {
            unsigned long long ch = (unsigned long long)a.t % D.chunks;
            clo[T.layer] = D.n * ch / D.chunks;
            cnt[T.layer] = D.n * (ch + 1) / D.chunks - clo[T.layer];
        }
        return;
    }
    const unsigned long long key =
        lbs_rng_key(a.seed, (unsigned long long)a.t, (unsigned long long)T.layer);
    unsigned h = 0, total;
    for (unsigned j = threadIdx.x; j < T.n; j += THREADS)
        h += drawn(key, T.lo - D.off + j, a.thr);
    block_scan(h, &total);
    if (threadIdx.x == 0)
        hits[blockIdx.x] = total;
    if (!last_block(&ctr[T.layer], D.ntiles))
        return;
    /* tile counts -> first slots: each thread a contiguous run of tiles */
    const unsigned run = (D.ntiles + THREADS - 1) / THREADS;
    const unsigned lo = min(threadIdx.x * run, D.ntiles),
                   hi = min(lo + run, D.ntiles);
    unsigned s = 0;
#pragma unroll 8
    for (unsigned j = lo; j < hi; j++)
        s += __ldcg(&hits[D.first_tile + j]);
    unsigned base = block_scan(s, &total);
    for (unsigned j = lo; j < hi; j++) {
        tbase[D.first_tile + j] = base;
        base += __ldcg(&hits[D.first_tile + j]);
    }
    if (threadIdx.x == 0)
        cnt[T.layer] = total, clo[T.layer] = 0;
}

/* Bernoulli: the tile's draws again, written in ascending order to the
 * slots the mom kernel assigned: idx[S] and vals = m[S]. */
__global__ void __launch_bounds__(THREADS)
k_slamb_pick(const struct tile *tiles, const struct dlayer *L, struct args a,
             const float *__restrict__ m, const unsigned *tbase,
             unsigned *__restrict__ idx, float *__restrict__ vals,
             const struct dstate *st)
{
    TILE_BEGIN(tiles);
    if (!D.partial)
        return;
    const unsigned long long key =
        lbs_rng_key(a.seed, (unsigned long long)a.t, (unsigned long long)T.layer);
    unsigned base = tbase[blockIdx.x];
    for (int k = 0; k < PER; k++) {  /* stripe k: THREADS elements in order */
        unsigned j = threadIdx.x + k * THREADS, total;
        unsigned long long li = T.lo - D.off + j;
        unsigned hit = j < T.n && drawn(key, li, a.thr);
        unsigned r = block_scan(hit, &total);
        if (hit) {
            idx[D.poff + base + r] = (unsigned)li;
            vals[D.poff + base + r] = m[D.off + li];
        }
        base += total;
    }
}

/* Cyclic: vals = m[S] with S = perm[clo .. clo + cnt) of the layer. */
__global__ void __launch_bounds__(THREADS)
k_slamb_gather(const struct tile *stiles, const struct dlayer *L,
               const unsigned *__restrict__ perm,
               const unsigned long long *cnt, const unsigned long long *clo,
               const float *__restrict__ m, float *__restrict__ vals,
               const struct dstate *st)
{
    TILE_BEGIN(stiles);
    const unsigned long long n = cnt[T.layer], lo = clo[T.layer];
    for (unsigned q = threadIdx.x; q < T.n; q += THREADS) {
        unsigned long long j = T.lo + q;
        if (j < n)
            vals[D.poff + j] = m[D.off + perm[D.poff + lo + j]];
    }
}

/* m[S] = vals, c[S] = 0 (slamb_sync after the allreduce, one rank: no
 * 1/N scaling).  ix is perm (cyclic, from clo) or idx (Bernoulli). */
__global__ void __launch_bounds__(THREADS)
k_slamb_scatter(const struct tile *stiles, const struct dlayer *L,
                const unsigned *__restrict__ ix,
                const unsigned long long *cnt, const unsigned long long *clo,
                const float *__restrict__ vals, float *__restrict__ m,
                unsigned *__restrict__ c, const struct dstate *st)
{
    TILE_BEGIN(stiles);
    const unsigned long long n = cnt[T.layer], lo = clo[T.layer];
    for (unsigned q = threadIdx.x; q < T.n; q += THREADS) {
        unsigned long long j = T.lo + q;
        if (j < n) {
            unsigned long long i = D.off + ix[D.poff + lo + j];
            m[i] = vals[D.poff + j];
            c[i] = 0;
        }
    }
}

__global__ void __launch_bounds__(THREADS)
k_slamb_norms(const struct tile *tiles, const struct dlayer *L, struct args a,
              const float *__restrict__ m, const float *__restrict__ v,
              const float *__restrict__ w, const unsigned *__restrict__ c,
              float *__restrict__ u, double *part, unsigned *ctr,
              struct blend *bl, struct dstate *st)
{
    __shared__ double sh[4 * THREADS];
    TILE_BEGIN(tiles);
    float mk[PER] = {0}, vk[PER] = {0}, wk[PER] = {0};
    unsigned ck[PER] = {0};
    load_tile3(T, D, m, v, w, c, mk, vk, wk, ck);
    float s4[4] = {0, 0, 0, 0};   /* synced w2, u2, stale w2, u2 */
#pragma unroll
    for (int k = 0; k < PER; k++) {
        unsigned j = threadIdx.x + k * THREADS;
        if (j < T.n) {
            float ui = adam_u(a, D.wd, mk[k], vk[k], wk[k]);
            u[T.lo + j] = ui;
            int q = ck[k] == 0 ? 0 : 2;   /* always-synced layers: c = 0 */
            s4[q] += wk[k] * wk[k];
            s4[q + 1] += ui * ui;
        }
    }
    double p[4] = {s4[0], s4[1], s4[2], s4[3]};
    block_sum(p, 4, sh);
    if (threadIdx.x == 0)
        for (int q = 0; q < 4; q++)
            part[4 * (size_t)blockIdx.x + q] = sh[q * THREADS];
    if (!last_block(&ctr[T.layer], D.ntiles))
        return;
    layer_sums(part, 4, D, sh);
    if (threadIdx.x)
        return;
    double nrm[4];
    for (int q = 0; q < 4; q++)
        nrm[q] = sqrt(sh[q * THREADS]);
    struct blend b;
    if (!D.partial) {             /* slamb.c's cnt == n branch */
        if (!isfinite(nrm[1]))
            flag_bad(st, T.layer, a.t);
        double phi = D.plain ? 1.0
                     : D.noclamp ? trust(nrm[0], nrm[1], 0.0, INFINITY)
                     : trust(nrm[0], nrm[1], a.cmin, a.cmax);
        b.step_synced = (float)(a.lr * phi);
        b.lr = b.lr_min = b.phi_max = b.phi_min = 0;
    } else {                      /* the split branch; with every
                                     coordinate synced it computes what
                                     the cnt == n branch does */
        if (!isfinite(nrm[1] + nrm[3]))
            flag_bad(st, T.layer, a.t);
        double pmax = (nrm[0] > 0 && nrm[1] > 0) ? nrm[0] / nrm[1] : 1.0;
        double pmin = (nrm[2] > 0 && nrm[3] > 0) ? nrm[2] / nrm[3] : 1.0;
        double smax = pmax < a.cmin ? a.cmin : pmax > a.cmax ? a.cmax : pmax;
        b.step_synced = (float)(a.lr * smax);
        b.lr = (float)a.lr;
        b.lr_min = (float)a.lr_min;
        b.phi_max = (float)pmax;
        b.phi_min = (float)pmin;
    }
    bl[T.layer] = b;
}

__device__ static float clampf(float x, float lo, float hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* slamb_update_full / slamb_update_split */
__global__ void __launch_bounds__(THREADS)
k_slamb_apply(const struct tile *tiles, const struct dlayer *L,
              struct args a, const struct blend *bl,
              const float *__restrict__ spow, const float *__restrict__ u,
              const unsigned *__restrict__ c, float *__restrict__ w,
              const struct dstate *st)
{
    if (!st->ok)
        return;
    const struct tile T = tiles[blockIdx.x];
    if (T.layer >= st->bad_now)
        return;
    const int partial = L[T.layer].partial;
    const struct blend b = bl[T.layer];
#pragma unroll
    for (int k = 0; k < PER; k++) {
        unsigned j = threadIdx.x + k * THREADS;
        if (j >= T.n)
            continue;
        size_t i = T.lo + j;
        unsigned ci = partial ? c[i] : 0;
        float step = b.step_synced;
        if (ci) {
            /* beyond the table: device powf (<= 2 ulp off glibc's, so
             * not bit-exact; the weight is ~0 unless beta3 > ~0.999) */
            float s = ci < SPOW_TABLE ? spow[ci] : powf(a.beta3, (float)ci);
            float lr_e = ADD(MUL(s, b.lr), MUL(SUB(1.0f, s), b.lr_min));
            float phi_e = clampf(ADD(MUL(s, b.phi_max),
                                     MUL(SUB(1.0f, s), b.phi_min)),
                                 a.fcmin, a.fcmax);
            step = MUL(lr_e, phi_e);
        }
        w[i] = SUB(w[i], MUL(step, u[i]));
    }
}

/* ---------------------------------------------------------------- */
/* host side                                                          */

struct lbs_cuda_optim {
    enum lbs_optim_kernel kind;
    const char *name;                 /* the optimizer's (static) */
    /* hyperparameters: the parsed config through the optimizer's device
     * hook (struct lbs_optim_device) */
    struct lbs_optim_device_hp hp;
    struct lbs_optim_config *conf;    /* the parsed spec (owned) */
    double bpe;                       /* the hook's bytes model + 4 */
    size_t nlayers, total, ntiles, nstiles, partial_total;
    size_t *off, *n;                  /* host copy of the layout */
    int has_v, has_c;
    struct dlayer *L_host;
    long t;                           /* steps counted by the host */
    double lr_scale;
    cudaStream_t s;
    cudaEvent_t ev[2];
    /* device */
    struct tile *tiles, *stiles;
    struct dlayer *L;
    float *w, *g, *m, *v, *u, *vals, *spow, *stepv;
    unsigned *c, *perm, *idx, *ctr, *hits, *tbase;
    unsigned long long *cnt, *clo;
    double *part, *gsq;
    struct blend *bl;
    struct dstate *st;
};

static const struct dstate dstate_init = {1.0f, 1, INT_MAX, 0, 0, 0, ~0ull};

/* Parse spec with the CPU parser (lbs_optim_config: the same keys, ranges
 * and cross-checks, no layers) and take the kernel family and the
 * hyperparameters from the optimizer's device hook (its own mapping of its
 * parsed config, in its file): no list of keys or names lives here.  With
 * h, the config is kept in h->conf (for the bytes model). */
static int parse(const char *spec, struct lbs_cuda_optim *h,
                 struct lbs_err *err)
{
    struct lbs_optim_config *o;
    struct lbs_optim_props p;
    struct lbs_optim_device_hp hp;
    int rc = lbs_optim_config_new(spec, &o, err);
    if (rc)
        return rc;
    lbs_optim_props(lbs_optim_config_name(o), &p, NULL);
    rc = lbs_optim_config_device(o, &hp, err);
    if (!rc && hp.kwarm > 0)    /* slamb.c's k warm-up: no kernel for it */
        rc = lbs_err_set(err, -ENOTSUP, "slamb: kwarm (the k warm-up) runs "
                         "on the CPU only; give kwarm=0 for the GPU");
    if (!rc && h) {
        h->kind = p.device->kernel;
        h->name = p.name;
        h->hp = hp;
        h->conf = o;
        return 0;
    }
    lbs_optim_config_free(o);
    return rc;
}

extern "C" int lbs_cuda_optim_check(const char *spec, struct lbs_err *err)
{
    return parse(spec, NULL, err);
}

/* Tiles of at most TILE over [0, n) of each layer; sync = 1 builds the
 * table of SLAMB's sync slots (partial layers, up to the mask's largest
 * size) instead. */
static size_t make_tiles(const struct lbs_cuda_optim *h, struct dlayer *L,
                         struct tile *t, int sync)
{
    size_t nt = 0;
    for (size_t l = 0; l < h->nlayers; l++) {
        unsigned long long len = L[l].n, base = L[l].off;
        if (sync) {
            if (!L[l].partial)
                continue;
            len = h->hp.bernoulli ? L[l].n
                               : (L[l].n + L[l].chunks - 1) / L[l].chunks;
            base = 0;
        } else {
            L[l].first_tile = (unsigned)nt;
        }
        for (unsigned long long j = 0; j < len; j += TILE, nt++)
            if (t) {
                t[nt].lo = base + j;
                t[nt].n = (unsigned)(len - j < TILE ? len - j : TILE);
                t[nt].layer = (int)l;
            }
        if (!sync)
            L[l].ntiles = (unsigned)(nt - L[l].first_tile);
    }
    return nt;
}

static int alloc(void **p, size_t bytes, const char *what,
                 struct lbs_err *err)
{
    cudaError_t rc = cudaMalloc(p, bytes ? bytes : 1);
    if (rc != cudaSuccess)   /* LBS_CU's message, plus what and how much */
        return lbs_err_set(err, rc == cudaErrorMemoryAllocation ? -ENOMEM
                                                                : -EIO,
                           "cudaMalloc(%s, %zu bytes): %s", what, bytes,
                           cudaGetErrorString(rc));
    LBS_CU(cudaMemset(*p, 0, bytes ? bytes : 1));
    return 0;
}
#define ALLOC(field, count, what)                                           \
    do {                                                                    \
        if ((rc = alloc((void **)&h->field, (count) * sizeof *h->field,     \
                        what, err)))                                        \
            goto fail;                                                      \
    } while (0)

/* The cyclic permutation of every partial layer, built on the host by the
 * CPU's own lbs_mask_cyclic_new (same seed, same layer index: the same
 * chunks), chunk after chunk, which is the order it holds them in. */
static int upload_perms(struct lbs_cuda_optim *h, struct lbs_err *err)
{
    for (size_t l = 0; l < h->nlayers; l++) {
        struct dlayer *D = &h->L_host[l];
        if (!D->partial)
            continue;
        struct lbs_mask_cyclic *mc;
        int rc = lbs_mask_cyclic_new((uint64_t)h->hp.seed, (int)l, D->n,
                                     h->hp.k, &mc, err);
        if (rc)
            return rc;
        D->chunks = lbs_mask_cyclic_chunks(mc);
        size_t at = D->poff;
        for (size_t ch = 0; ch < D->chunks; ch++) {
            const uint32_t *idx;
            size_t cnt;
            lbs_mask_cyclic_get(mc, (long)ch, &idx, &cnt);
            LBS_CU_GOTO(cudaMemcpy(h->perm + at, idx, cnt * sizeof *idx,
                                   cudaMemcpyHostToDevice), out);
            at += cnt;
        }
    out:
        lbs_mask_cyclic_free(mc);
        if (rc)
            return rc;
    }
    return 0;
}

/* The host's layer table: offsets, per-layer flags (1-D handling, wd)
 * and SLAMB's partial layers with their slice of the permutation. */
static int plan_layers(struct lbs_cuda_optim *h,
                       const struct lbs_layer *layers, size_t nlayers,
                       struct lbs_err *err)
{
    for (size_t l = 0; l < nlayers; l++) {
        const struct lbs_layer *Ly = &layers[l];
        struct dlayer *D = &h->L_host[l];
        int is1d = Ly->ndim <= 1;
        h->off[l] = h->total;
        h->n[l] = Ly->n;
        D->off = h->total;
        D->n = Ly->n;
        D->plain = h->hp.exclude_1d != 0 && is1d;
        D->noclamp = h->kind == SLAMB && is1d && !D->plain &&
                     h->hp.clamp_1d == 0;
        /* lamb/slamb exclude 1-D layers from wd; adamw and sgd never do */
        D->wd = (float)((h->kind == LAMB || h->kind == SLAMB) && D->plain
                            ? 0.0 : h->hp.wd);
        if (h->kind == SLAMB && !is1d && (double)Ly->n >= h->hp.small) {
            if (Ly->n > UINT32_MAX)
                return lbs_err_set(err, -EINVAL, "slamb: layer %zu has %zu "
                                   "elements (masks index with uint32)", l,
                                   Ly->n);
            D->partial = 1;
            D->poff = h->partial_total;
            D->chunks = 1;
            h->partial_total += Ly->n;
        }
        h->total += Ly->n;
    }
    return 0;
}

/* The stream, its two timing events and the per-element state. */
static int alloc_state(struct lbs_cuda_optim *h, struct lbs_err *err)
{
    int rc = 0;
    LBS_CU_GOTO(cudaStreamCreate(&h->s), fail);
    LBS_CU_GOTO(cudaEventCreate(&h->ev[0]), fail);
    LBS_CU_GOTO(cudaEventCreate(&h->ev[1]), fail);
    h->has_v = h->kind != SGD;
    h->has_c = h->kind == SLAMB;
    ALLOC(w, h->total, "w");
    ALLOC(g, h->total, "g");
    ALLOC(m, h->total, "m");
    if (h->has_v)
        ALLOC(v, h->total, "v");
    if (h->kind == LAMB || h->kind == SLAMB)
        ALLOC(u, h->total, "u");
    if (h->has_c)
        ALLOC(c, h->total, "c");
    if (h->kind == SLAMB && h->partial_total) {
        ALLOC(vals, h->partial_total, "vals");
        if (h->hp.bernoulli)
            ALLOC(idx, h->partial_total, "idx");
        else {
            ALLOC(perm, h->partial_total, "perm");
            rc = upload_perms(h, err);
        }
    }
fail:
    return rc;
}

/* SLAMB's extra device tables: beta3^j, per-layer blend and counters, the
 * tiles' slots and the sync tiles (host_stiles: the host's copy). */
static int alloc_slamb(struct lbs_cuda_optim *h, size_t nlayers,
                       const struct tile *host_stiles, struct lbs_err *err)
{
    int rc = 0;
    float spow[SPOW_TABLE];   /* slamb_init's table, same expression */
    for (size_t j = 0; j < SPOW_TABLE; j++)
        spow[j] = (float)pow(h->hp.beta3, (double)j);
    ALLOC(spow, SPOW_TABLE, "spow");
    ALLOC(bl, nlayers, "blend");
    ALLOC(cnt, nlayers, "counts");
    ALLOC(clo, nlayers, "chunk starts");
    ALLOC(hits, h->ntiles, "hits");
    ALLOC(tbase, h->ntiles, "tile slots");
    if (h->nstiles)
        ALLOC(stiles, h->nstiles, "sync tiles");
    LBS_CU_GOTO(cudaMemcpy(h->spow, spow, sizeof spow,
                           cudaMemcpyHostToDevice), fail);
    if (h->nstiles)
        LBS_CU_GOTO(cudaMemcpy(h->stiles, host_stiles,
                               h->nstiles * sizeof *host_stiles,
                               cudaMemcpyHostToDevice), fail);
fail:
    return rc;
}

/* The tiles (built on the host), the layer table, the per-layer buffers
 * and the initial device state. */
static int upload_tables(struct lbs_cuda_optim *h, size_t nlayers,
                         struct lbs_err *err)
{
    int rc = 0;
    h->ntiles = make_tiles(h, h->L_host, NULL, 0);
    h->nstiles = make_tiles(h, h->L_host, NULL, 1);
    struct tile *th =
        (struct tile *)malloc((h->ntiles + h->nstiles) * sizeof *th);
    if (!th)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    make_tiles(h, h->L_host, th, 0);
    make_tiles(h, h->L_host, th + h->ntiles, 1);
    ALLOC(tiles, h->ntiles, "tiles");
    ALLOC(L, nlayers, "layers");
    ALLOC(part, 4 * h->ntiles, "partials");
    ALLOC(gsq, nlayers, "gsq");
    ALLOC(ctr, nlayers, "counters");
    ALLOC(stepv, nlayers, "steps");
    ALLOC(st, 1, "state");
    LBS_CU_GOTO(cudaMemcpy(h->tiles, th, h->ntiles * sizeof *th,
                           cudaMemcpyHostToDevice), fail);
    LBS_CU_GOTO(cudaMemcpy(h->L, h->L_host, nlayers * sizeof *h->L_host,
                           cudaMemcpyHostToDevice), fail);
    LBS_CU_GOTO(cudaMemcpy(h->st, &dstate_init, sizeof dstate_init,
                           cudaMemcpyHostToDevice), fail);
    if (h->kind == SLAMB)
        rc = alloc_slamb(h, nlayers, th + h->ntiles, err);
fail:
    free(th);
    return rc;
}

extern "C" int lbs_cuda_optim_new(const char *spec,
                                  const struct lbs_layer *layers,
                                  size_t nlayers, struct lbs_cuda_optim **out,
                                  struct lbs_err *err)
{
    *out = NULL;
    struct lbs_cuda_optim *h =
        (struct lbs_cuda_optim *)calloc(1, sizeof *h);
    if (!h)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = parse(spec, h, err);
    if (rc) {
        free(h);
        return rc;
    }
    char gpu[256];
    if ((rc = lbs_layers_check(layers, nlayers, 0, err)) >= 0) {
        h->bpe = lbs_optim_config_device_bytes(h->conf, layers, nlayers);
        rc = lbs_cuda_probe(gpu, sizeof gpu, err);   /* GPUs, or < 0 */
    }
    if (rc < 0) {
        lbs_optim_config_free(h->conf);
        free(h);
        return rc;
    }
    rc = 0;
    h->lr_scale = 1.0;
    h->nlayers = nlayers;
    h->off = (size_t *)calloc(nlayers, sizeof *h->off);
    h->n = (size_t *)calloc(nlayers, sizeof *h->n);
    h->L_host = (struct dlayer *)calloc(nlayers, sizeof *h->L_host);
    if (!h->off || !h->n || !h->L_host)
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    else if (!(rc = plan_layers(h, layers, nlayers, err)) &&
             !(rc = alloc_state(h, err)))
        rc = upload_tables(h, nlayers, err);
    if (rc) {
        lbs_cuda_optim_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

extern "C" void lbs_cuda_optim_free(struct lbs_cuda_optim *h)
{
    if (!h)
        return;
    void *bufs[] = {h->tiles, h->stiles, h->L, h->w, h->g, h->m, h->v, h->u,
                    h->vals, h->spow, h->stepv, h->c, h->perm, h->idx,
                    h->ctr, h->hits, h->tbase, h->cnt, h->clo, h->part,
                    h->gsq, h->bl, h->st};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);        /* teardown: nothing left to report to */
    if (h->ev[0])
        cudaEventDestroy(h->ev[0]);
    if (h->ev[1])
        cudaEventDestroy(h->ev[1]);
    if (h->s)
        cudaStreamDestroy(h->s);
    free(h->off);
    free(h->n);
    free(h->L_host);
    lbs_optim_config_free(h->conf);
    free(h);
}

static int buffer(struct lbs_cuda_optim *h, const char *what, size_t layer,
                  void **p, size_t *esize, struct lbs_err *err)
{
    if (layer >= h->nlayers)
        return lbs_err_set(err, -EINVAL, "layer %zu of %zu", layer,
                           h->nlayers);
    float *f = !strcmp(what, "w") ? h->w : !strcmp(what, "g") ? h->g
             : !strcmp(what, "m") ? h->m
             : !strcmp(what, "v") ? h->v : NULL;
    *esize = 4;
    if (f)
        *p = f + h->off[layer];
    else if (!strcmp(what, "c") && h->c)
        *p = h->c + h->off[layer];
    else
        return lbs_err_set(err, -ENOENT, "%s (cuda) has no buffer '%s'",
                           h->name, what);
    return 0;
}

extern "C" int lbs_cuda_optim_write(struct lbs_cuda_optim *h,
                                    const char *what, size_t layer,
                                    const float *src, struct lbs_err *err)
{
    void *p = NULL;
    size_t es;
    int rc = buffer(h, what, layer, &p, &es, err);
    if (rc)
        return rc;
    if (strcmp(what, "w") && strcmp(what, "g"))
        return lbs_err_set(err, -EINVAL, "only w and g can be written");
    LBS_CU(cudaMemcpyAsync(p, src, h->n[layer] * es, cudaMemcpyHostToDevice,
                           h->s));
    LBS_CU(cudaStreamSynchronize(h->s));
    return 0;
}

extern "C" int lbs_cuda_optim_read(struct lbs_cuda_optim *h,
                                   const char *what, size_t layer, void *dst,
                                   struct lbs_err *err)
{
    void *p = NULL;
    size_t es;
    int rc = buffer(h, what, layer, &p, &es, err);
    if (rc)
        return rc;
    LBS_CU(cudaMemcpyAsync(dst, p, h->n[layer] * es, cudaMemcpyDeviceToHost,
                           h->s));
    LBS_CU(cudaStreamSynchronize(h->s));
    return 0;
}

/* This step's scalars, computed on the host exactly as the CPU files do
 * (same double expressions, same casts), so the kernels get the same
 * floats. */
static struct args step_args(const struct lbs_cuda_optim *h)
{
    struct args a;
    memset(&a, 0, sizeof a);
    a.b1 = (float)h->hp.b1;
    a.b2 = (float)h->hp.b2;
    a.c1 = (float)(1 - h->hp.b1);
    a.c2 = (float)(1 - h->hp.b2);
    a.ibc1 = a.ibc2 = 1.0f;
    if (h->hp.bias_correction) {
        a.ibc1 = (float)(1.0 / (1.0 - pow(h->hp.b1, (double)h->t)));
        a.ibc2 = (float)(1.0 / (1.0 - pow(h->hp.b2, (double)h->t)));
    }
    a.eps = (float)h->hp.eps;
    a.wd = (float)h->hp.wd;
    a.mu = (float)h->hp.momentum;
    a.nesterov = h->hp.nesterov != 0;
    a.beta3 = (float)h->hp.beta3;
    a.lr = h->hp.lr * h->lr_scale;
    a.lr_min = a.lr / sqrt(1.0);  /* lr / sqrt(N), one rank */
    a.cmin = h->hp.cmin;
    a.cmax = h->hp.cmax;
    a.fcmin = (float)h->hp.cmin;
    a.fcmax = (float)h->hp.cmax;
    a.clip = h->kind == LAMB ? h->hp.clip : 0;
    a.t = h->t;
    a.bernoulli = h->hp.bernoulli != 0;
    a.seed = (unsigned long long)h->hp.seed;
    a.thr = lbs_rng_thr61(h->hp.k);
    return a;
}

/* The kernels of step h->t, enqueued on h->s. */
static int enqueue_step(struct lbs_cuda_optim *h, struct lbs_err *err)
{
    const struct args a = step_args(h);
    const unsigned nt = (unsigned)h->ntiles, ns = (unsigned)h->nstiles;
    cudaStream_t s = h->s;
    k_gsq<<<nt, THREADS, 0, s>>>(h->tiles, h->L, (int)h->nlayers, a, h->g,
                                 h->part, h->gsq, h->ctr, h->st);
    LBS_CU_LAUNCHED();
    switch (h->kind) {
    case LAMB:
        k_lamb1<<<nt, THREADS, 0, s>>>(h->tiles, h->L, a, h->g, h->m, h->v,
                                       h->w, h->u, h->part, h->ctr, h->stepv,
                                       h->st);
        LBS_CU_LAUNCHED();
        k_apply<<<nt, THREADS, 0, s>>>(h->tiles, h->u, h->w, h->stepv, h->st);
        LBS_CU_LAUNCHED();
        break;
    case ADAMW:
        k_adamw<<<nt, THREADS, 0, s>>>(h->tiles, a, h->g, h->m, h->v, h->w,
                                       h->st);
        LBS_CU_LAUNCHED();
        break;
    case SGD:
        k_sgd<<<nt, THREADS, 0, s>>>(h->tiles, a, h->g, h->m, h->w, h->st);
        LBS_CU_LAUNCHED();
        break;
    case SLAMB:
        k_slamb_mom<<<nt, THREADS, 0, s>>>(h->tiles, h->L, a, h->g, h->m,
                                           h->v, h->c, h->hits, h->tbase,
                                           h->ctr, h->cnt, h->clo, h->st);
        LBS_CU_LAUNCHED();
        if (ns) {
            if (h->hp.bernoulli)
                k_slamb_pick<<<nt, THREADS, 0, s>>>(h->tiles, h->L, a, h->m,
                                                    h->tbase, h->idx,
                                                    h->vals, h->st);
            else
                k_slamb_gather<<<ns, THREADS, 0, s>>>(h->stiles, h->L,
                                                      h->perm, h->cnt,
                                                      h->clo, h->m, h->vals,
                                                      h->st);
            LBS_CU_LAUNCHED();
            k_slamb_scatter<<<ns, THREADS, 0, s>>>(
                h->stiles, h->L, h->hp.bernoulli ? h->idx : h->perm, h->cnt,
                h->clo, h->vals, h->m, h->c, h->st);
            LBS_CU_LAUNCHED();
        }
        k_slamb_norms<<<nt, THREADS, 0, s>>>(h->tiles, h->L, a, h->m, h->v,
                                             h->w, h->c, h->u, h->part,
                                             h->ctr, h->bl, h->st);
        LBS_CU_LAUNCHED();
        k_slamb_apply<<<nt, THREADS, 0, s>>>(h->tiles, h->L, a, h->bl,
                                             h->spow, h->u, h->c, h->w,
                                             h->st);
        LBS_CU_LAUNCHED();
        break;
    }
    return 0;
}

extern "C" int lbs_cuda_optim_step(struct lbs_cuda_optim *h,
                                   struct lbs_err *err)
{
    h->t++;
    int rc = enqueue_step(h, err);
    if (rc)
        h->t--;     /* a launch failed: t is not advanced (kernels enqueued
                     * before it may run, so the state is undefined) */
    return rc;
}

extern "C" int lbs_cuda_optim_sync(struct lbs_cuda_optim *h,
                                   struct lbs_err *err)
{
    struct dstate d;
    LBS_CU(cudaStreamSynchronize(h->s));
    LBS_CU(cudaMemcpy(&d, h->st, sizeof d, cudaMemcpyDeviceToHost));
    if (!d.skipped && d.first_bad == ~0ull)
        return 0;
    int rc = 0;
    if (d.skipped) {
        h->t -= (long)d.skipped;
        rc = lbs_err_set(err, 1, "%s (cuda): %llu step(s) skipped since the "
                         "last sync, the first at step %llu: non-finite "
                         "gradient", h->name, d.skipped,
                         d.first_skip);
    }
    if (d.first_bad != ~0ull)
        rc = lbs_err_set(err, -EDOM, "%s (cuda): non-finite gradient or "
                         "update in layer %llu at step %llu",
                         h->name, d.first_bad & 0xffffffffull,
                         d.first_bad >> 32);
    d.skipped = 0;
    d.first_skip = 0;
    d.first_bad = ~0ull;
    LBS_CU(cudaMemcpy(h->st, &d, sizeof d, cudaMemcpyHostToDevice));
    return rc;
}

extern "C" int lbs_cuda_optim_time(struct lbs_cuda_optim *h, long warmup,
                                   long iters, double *ms,
                                   struct lbs_err *err)
{
    for (long i = 0; i < warmup + iters; i++) {
        LBS_CU(cudaEventRecord(h->ev[0], h->s));
        int rc = lbs_cuda_optim_step(h, err);
        if (rc)
            return rc;
        LBS_CU(cudaEventRecord(h->ev[1], h->s));
        LBS_CU(cudaEventSynchronize(h->ev[1]));
        float t;
        LBS_CU(cudaEventElapsedTime(&t, h->ev[0], h->ev[1]));
        if (i >= warmup)
            ms[i - warmup] = t;
    }
    return lbs_cuda_optim_sync(h, err);
}

extern "C" void lbs_cuda_optim_set_lr_scale(struct lbs_cuda_optim *h,
                                            double f)
{
    h->lr_scale = f;
}

extern "C" long lbs_cuda_optim_steps(const struct lbs_cuda_optim *h)
{
    return h->t;
}

/* The optimizer's GPU bytes model (its device hook, beside the CPU model
 * in its file) plus the driver's 4-byte gradient check, for these layers. */
extern "C" double lbs_cuda_optim_bytes_per_elem(const struct lbs_cuda_optim *h)
{
    return h->bpe;
}

extern "C" float *lbs_cuda_optim_params(struct lbs_cuda_optim *h)
{
    return h->w;
}

extern "C" float *lbs_cuda_optim_grads(struct lbs_cuda_optim *h)
{
    return h->g;
}
