/* compress.cu - top-k, random-k, sign and error feedback on the GPU, the
 * device twins of core/compress/{topk,randk,sign,ef}.c (see
 * lbs_cuda_compress.h for what "the same" means for each).
 *
 * Top-k is the CPU's radix select moved to the device, digit for digit:
 * the 31 magnitude bits in three levels (bits 30..20, 19..9, 8..0); a
 * level histograms the members of the current prefix bin and a one-block
 * kernel picks the bin holding the need-th largest, exactly as topk.c's
 * level() does.  After level 0 the host reads the state once: when the
 * chosen bin is small (<= max(K, n/32), topk.c's bound) every element at
 * or above it is gathered in index order (one CUB select pass) and the
 * remaining levels run on those few; otherwise (degenerate data) they run
 * on all of x.  The last step keeps a > T, and of the elements equal to
 * the threshold T the first `need` in index order (an exclusive scan gives
 * each tie its rank): the same K elements, ascending, as topk.c.  Gradient
 * data costs two reads of x plus work on ~K elements; all-equal data five.
 *
 * Randomness: random-k's predicate is lbs_mask_bernoulli's, lbs_rng_hit
 * evaluated per index (rng.h is host+device), so the mask is the CPU's.
 *
 * Float arithmetic that must match the CPU bit for bit (decode adds, the
 * ef residual) uses __fmul_rn/__fadd_rn: nvcc would otherwise contract
 * a * p + o into one FMA, which rounds once where the CPU rounds twice.
 * CUB calls are checked like CUDA calls and report the CUB function.
 */
#include <cuda_runtime.h>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "lbs_cuda_compress.h"
#include "lbscale/compress.h"
#include "lbscale/rng.h"

/* Everything but the C API has internal linkage: other .cu files of the
 * library instantiate the same CUB templates and may reuse these names. */
namespace {

#define NTHR 256
#define NBIN 2048   /* widest digit: 11 bits */
#define NSUB 4      /* histogram copies per block (see hist_kernel) */

static const int lev_shift[3] = {20, 9, 0};
static const int lev_width[3] = {11, 11, 9};

/* Blocks for a grid-stride loop over n items: enough to fill any GPU,
 * and a function of n alone, so reductions sum in the same order on
 * every run and every device. */
static unsigned grid_for(size_t n)
{
    size_t b = (n + NTHR - 1) / NTHR;
    return (unsigned)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

__device__ __forceinline__ uint32_t mag(float f)
{
    return __float_as_uint(f) & 0x7fffffffu;
}

/* ---- device scratch ---- */

struct dbuf {
    void *p;
    size_t cap;
};

static int dbuf_get(struct dbuf *b, size_t bytes, struct lbs_err *err)
{
    if (b->p && bytes <= b->cap)
        return 0;
    if (b->p)
        LBS_CU(cudaFree(b->p));
    b->p = NULL;
    b->cap = 0;
    LBS_CU(cudaMalloc(&b->p, bytes ? bytes : 256));
    b->cap = bytes;
    return 0;
}

static void dbuf_free(struct dbuf *b)
{
    if (b->p)
        cudaFree(b->p);   /* teardown: nothing useful to do on failure */
    b->p = NULL;
    b->cap = 0;
}

/* The radix select's state, on the device so levels chain without the
 * host: the prefix so far and how many still to take from its bin. */
struct sel_state {
    unsigned long long need;   /* still to take from the prefix bin */
    unsigned long long in;     /* members of the chosen bin */
    uint32_t prefix;           /* magnitude bits >> shift of the bin */
    uint32_t pad;
};

/* The kernel families are core's (enum lbs_compress_kernel): each
 * compressor's ops table names its own (struct lbs_compress_device), so no
 * list of compressor names lives here. */
#define K_TOPK LBS_CKERNEL_TOPK
#define K_RANDK LBS_CKERNEL_RANDK
#define K_SIGN LBS_CKERNEL_SIGN

}  // namespace

struct lbs_cuda_compressor {
    enum lbs_compress_kernel kind;
    char name[16];
    double k, seed;
    int scale;                  /* randk: decode x/k; sign: 1 = l2 */
    int ef;
    float **resid;              /* ef residuals by layer index */
    size_t *resid_n, nresid;
    struct dbuf tmp;            /* CUB temporary storage */
    struct dbuf gi, gv, rank;   /* top-k candidates and tie ranks */
    struct dbuf midx, part;     /* random-k mask, sign partial sums */
    uint32_t *hist;             /* NBIN counters */
    struct sel_state *st;
    long long *num;             /* [0] selected, [1] gathered */
    int *bad;                   /* a payload index out of range */
    /* the random-k mask of the last (layer, step, n), as randk.c keeps */
    int m_valid, m_layer;
    long m_step;
    size_t m_n, m_count;
};

namespace {

/* Run a CUB device algorithm: size query, scratch, call. */
template <typename F>
static int cub_run(struct lbs_cuda_compressor *c, const char *what, F f,
                   struct lbs_err *err)
{
    size_t tb = 0;
    cudaError_t r = f(nullptr, tb);
    if (r == cudaSuccess) {
        int rc = dbuf_get(&c->tmp, tb, err);
        if (rc)
            return rc;
        r = f(c->tmp.p, tb);
    }
    if (r != cudaSuccess)
        return lbs_err_set(err, -EIO, "%s: %s", what, cudaGetErrorString(r));
    return 0;
}

/* ---- small element-wise kernels ---- */

__global__ void iota_copy_kernel(const float *x, size_t n, uint32_t *idx,
                                 float *val)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        idx[i] = (uint32_t)i;
        val[i] = x[i];
    }
}

__global__ void add_kernel(float *e, const float *g, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        e[i] = __fadd_rn(e[i], g[i]);
}

__global__ void gather_kernel(const float *x, const uint32_t *idx, size_t m,
                              float *p)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < m;
         j += (size_t)gridDim.x * blockDim.x)
        p[j] = x[idx[j]];
}

/* out[idx[j]] += a * v[j]; indices are distinct within a payload, so no
 * two threads touch one element.  Out-of-range indices set *bad. */
__global__ void scatter_add_kernel(const uint32_t *idx, const float *v,
                                   size_t m, size_t n, float a, float *out,
                                   int *bad)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < m;
         j += (size_t)gridDim.x * blockDim.x) {
        uint32_t i = idx[j];
        if (i < n)
            out[i] = __fadd_rn(out[i], __fmul_rn(a, v[j]));
        else
            *bad = 1;
    }
}

/* ---- top-k ---- */

/* Histogram of digit `lev` over the members of the current prefix bin.
 * Gradient magnitudes crowd a few dozen bins, so lanes of a warp often
 * hit the same counter; NSUB copies (lane & 3 picks one, padded onto
 * distinct banks) cut those collisions about fourfold. */
__global__ void hist_kernel(const float *v, size_t m, int sh, int width,
                            const struct sel_state *st, uint32_t *hist)
{
    __shared__ uint32_t h[NSUB * (NBIN + 1)];
    for (int j = threadIdx.x; j < NSUB * (NBIN + 1); j += blockDim.x)
        h[j] = 0;
    __syncthreads();
    const uint32_t pre = st->prefix, mask = (1u << width) - 1;
    const int psh = sh + width;   /* level 0: 31, and prefix 0 passes all */
    uint32_t *mine = h + (threadIdx.x & (NSUB - 1)) * (NBIN + 1);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < m;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t a = mag(v[i]);
        if ((a >> psh) == pre)
            atomicAdd(&mine[(a >> sh) & mask], 1u);
    }
    __syncthreads();
    for (int j = threadIdx.x; j <= (int)mask; j += blockDim.x) {
        uint32_t t = 0;
        for (int s = 0; s < NSUB; s++)
            t += h[s * (NBIN + 1) + j];
        if (t)
            atomicAdd(&hist[j], t);
    }
}

/* One block of NTHR threads: the bin holding the need-th largest, scanning
 * bins from the top (topk.c's level()): the unique j with
 * above(j) < need <= above(j) + hist[j]. */
__global__ void choose_kernel(const uint32_t *hist, int width,
                              struct sel_state *st)
{
    typedef cub::BlockScan<unsigned long long, NTHR> Scan;
    __shared__ typename Scan::TempStorage ts;
    const int nbin = 1 << width, per = NBIN / NTHR;
    const unsigned long long need = st->need;
    const uint32_t pre = st->prefix;
    unsigned long long c[NBIN / NTHR];
    for (int r = 0; r < per; r++) {   /* item t*per + r is bin nbin-1-... */
        int j = nbin - 1 - (int)(threadIdx.x * per + r);
        c[r] = j >= 0 ? hist[j] : 0;
    }
    Scan(ts).InclusiveSum(c, c);
    __syncthreads();   /* every thread has read st before one writes it */
    for (int r = 0; r < per; r++) {
        int j = nbin - 1 - (int)(threadIdx.x * per + r);
        if (j < 0)
            break;
        unsigned long long h = hist[j], above = c[r] - h;
        if (above < need && need <= c[r]) {
            st->need = need - above;
            st->in = h;
            st->prefix = pre << width | (uint32_t)j;
        }
    }
}

static int level(struct lbs_cuda_compressor *c, const float *v, size_t m,
                 int lev, struct lbs_err *err)
{
    LBS_CU(cudaMemsetAsync(c->hist, 0, NBIN * sizeof *c->hist));
    hist_kernel<<<grid_for(m), NTHR>>>(v, m, lev_shift[lev], lev_width[lev],
                                       c->st, c->hist);
    LBS_CU_LAUNCHED();
    choose_kernel<<<1, NTHR>>>(c->hist, lev_width[lev], c->st);
    LBS_CU_LAUNCHED();
    return 0;
}

struct ge_bin {   /* (index, value) at or above level 0's bin */
    uint32_t pre;
    __device__ bool operator()(const thrust::tuple<uint32_t, float> &t) const
    {
        return (mag(thrust::get<1>(t)) >> 20) >= pre;
    }
};

struct is_tie {   /* 1 for a magnitude equal to the final threshold */
    const struct sel_state *st;
    __device__ uint32_t operator()(float f) const
    {
        return mag(f) == st->prefix;
    }
};

struct keep {     /* above the threshold, or one of the first `need` ties */
    const struct sel_state *st;
    template <typename T>
    __device__ bool operator()(const T &t) const
    {
        uint32_t a = mag(thrust::get<1>(t)), T0 = st->prefix;
        return a > T0 || (a == T0 && thrust::get<2>(t) < st->need);
    }
};

/* Keep the K winners of (src_idx[j], v[j]), j < m, in order. */
template <typename IdxIt>
static int final_select(struct lbs_cuda_compressor *c, IdxIt src_idx,
                        const float *v, size_t m, size_t K, long long gathered,
                        uint32_t *idx, float *val, struct lbs_err *err)
{
    int rc = dbuf_get(&c->rank, m * sizeof(uint32_t), err);
    if (rc)
        return rc;
    uint32_t *rank = (uint32_t *)c->rank.p;
    auto ties = thrust::make_transform_iterator(v, is_tie{c->st});
    rc = cub_run(c, "cub::DeviceScan::ExclusiveSum (top-k ties)",
                 [&](void *t, size_t &tb) {
                     return cub::DeviceScan::ExclusiveSum(t, tb, ties, rank,
                                                          (int64_t)m);
                 }, err);
    if (rc)
        return rc;
    auto in = thrust::make_zip_iterator(thrust::make_tuple(src_idx, v, rank));
    auto out = thrust::make_zip_iterator(
        thrust::make_tuple(idx, val, thrust::make_discard_iterator()));
    rc = cub_run(c, "cub::DeviceSelect::If (top-k output)",
                 [&](void *t, size_t &tb) {
                     return cub::DeviceSelect::If(t, tb, in, out, c->num,
                                                  (int64_t)m, keep{c->st});
                 }, err);
    if (rc)
        return rc;
    long long got[2];
    LBS_CU(cudaMemcpy(got, c->num, sizeof got, cudaMemcpyDeviceToHost));
    if (got[0] != (long long)K || (gathered >= 0 && got[1] != gathered))
        return lbs_err_set(err, -EIO, "topk (cuda): internal error: selected "
                           "%lld of %zu", got[0], K);
    return 0;
}

static int topk_select(struct lbs_cuda_compressor *c, const float *x,
                       size_t n, size_t K, uint32_t *idx, float *val,
                       struct lbs_err *err)
{
    if (K >= n) {
        iota_copy_kernel<<<grid_for(n), NTHR>>>(x, n, idx, val);
        LBS_CU_LAUNCHED();
        return 0;
    }
    struct sel_state s = {K, 0, 0, 0};
    LBS_CU(cudaMemcpy(c->st, &s, sizeof s, cudaMemcpyHostToDevice));
    int rc = level(c, x, n, 0, err);
    if (rc)
        return rc;
    /* the one host decision: gather the few, or stay on all of x */
    LBS_CU(cudaMemcpy(&s, c->st, sizeof s, cudaMemcpyDeviceToHost));
    size_t cap = K > n / 32 ? K : n / 32;
    if (s.in > cap) {
        for (int lev = 1; lev < 3 && !rc; lev++)
            rc = level(c, x, n, lev, err);
        return rc ? rc : final_select(c, thrust::counting_iterator<uint32_t>(0),
                                      x, n, K, -1, idx, val, err);
    }
    size_t tot = (size_t)(K - s.need + s.in);   /* above the bin + in it */
    if ((rc = dbuf_get(&c->gi, tot * 4, err)) ||
        (rc = dbuf_get(&c->gv, tot * 4, err)))
        return rc;
    uint32_t *gi = (uint32_t *)c->gi.p;
    float *gv = (float *)c->gv.p;
    auto in = thrust::make_zip_iterator(
        thrust::make_tuple(thrust::counting_iterator<uint32_t>(0), x));
    auto out = thrust::make_zip_iterator(thrust::make_tuple(gi, gv));
    rc = cub_run(c, "cub::DeviceSelect::If (top-k gather)",
                 [&](void *t, size_t &tb) {
                     return cub::DeviceSelect::If(t, tb, in, out, c->num + 1,
                                                  (int64_t)n,
                                                  ge_bin{s.prefix});
                 }, err);
    for (int lev = 1; lev < 3 && !rc; lev++)
        rc = level(c, gv, tot, lev, err);
    return rc ? rc : final_select(c, gi, gv, tot, K, (long long)tot, idx,
                                  val, err);
}

/* ---- random-k ---- */

struct bernoulli {   /* lbs_mask_bernoulli's test for index i */
    uint64_t key, thr;
    __device__ bool operator()(uint32_t i) const
    {
        return lbs_rng_hit(key, i, thr);
    }
};

/* The mask of (layer, step) for n elements, drawn at most once. */
static int randk_mask(struct lbs_cuda_compressor *c, size_t n, int layer,
                      long step, const uint32_t **idx, size_t *count,
                      struct lbs_err *err)
{
    if (!(c->m_valid && c->m_layer == layer && c->m_step == step &&
          c->m_n == n)) {
        c->m_valid = 0;     /* before dbuf_get, which may free midx */
        int rc = dbuf_get(&c->midx, n * 4, err);
        if (rc)
            return rc;
        /* exactly mask.c's key and threshold */
        uint64_t key = lbs_rng_key((uint64_t)c->seed, (uint64_t)step,
                                   (uint64_t)layer);
        uint64_t thr = lbs_rng_thr61(c->k);
        uint32_t *out = (uint32_t *)c->midx.p;
        rc = cub_run(c, "cub::DeviceSelect::If (random-k mask)",
                     [&](void *t, size_t &tb) {
                         return cub::DeviceSelect::If(
                             t, tb, thrust::counting_iterator<uint32_t>(0),
                             out, c->num, (int64_t)n, bernoulli{key, thr});
                     }, err);
        if (rc)
            return rc;
        long long m;
        LBS_CU(cudaMemcpy(&m, c->num, sizeof m, cudaMemcpyDeviceToHost));
        c->m_count = (size_t)m;
        c->m_layer = layer;
        c->m_step = step;
        c->m_n = n;
        c->m_valid = 1;
    }
    *idx = (const uint32_t *)c->midx.p;
    *count = c->m_count;
    return 0;
}

/* ---- sign ---- */

/* One warp packs 32 elements into one 32-bit word with a ballot: lane j's
 * bit lands at bit j, i.e. byte j/8, bit j%8 - sign.c's layout in
 * little-endian.  The warp loop bound is warp-uniform so every lane
 * takes part in the ballot; lanes past n count as +0. */
__global__ void sign_pack_kernel(const float *x, size_t n, uint8_t *bits,
                                 size_t nbytes, int l2, double *part)
{
    typedef cub::BlockReduce<double, NTHR> Reduce;
    __shared__ typename Reduce::TempStorage ts;
    const unsigned lane = threadIdx.x & 31;
    const size_t nwords = (n + 31) / 32,
                 warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32,
                 nwarps = (size_t)gridDim.x * blockDim.x / 32;
    double acc = 0;
    for (size_t w = warp; w < nwords; w += nwarps) {
        size_t i = w * 32 + lane;
        float f = i < n ? x[i] : 0.0f;
        unsigned b = __ballot_sync(0xffffffffu, f < 0);
        acc += l2 ? (double)f * f : fabs((double)f);
        if (lane == 0) {
            size_t o = w * 4;
            if (o + 4 <= nbytes)   /* bits = payload + 4: 4-aligned */
                *(uint32_t *)(bits + o) = b;
            else
                for (size_t q = o; q < nbytes; q++)
                    bits[q] = (uint8_t)(b >> (8 * (q - o)));
        }
    }
    double s = Reduce(ts).Sum(acc);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

/* The scale from the block sums, in a fixed order; sign.c's formula. */
__global__ void sign_scale_kernel(const double *part, unsigned np, size_t n,
                                  int l2, float *scale)
{
    typedef cub::BlockReduce<double, NTHR> Reduce;
    __shared__ typename Reduce::TempStorage ts;
    double acc = 0;
    for (unsigned j = threadIdx.x; j < np; j += blockDim.x)
        acc += part[j];
    double s = Reduce(ts).Sum(acc);
    if (threadIdx.x == 0)
        *scale = (float)(l2 ? sqrt(s / (double)n) : s / (double)n);
}

/* out[i] += (alpha * scale) * (+-1), as sign.c's table decode does. */
__global__ void sign_unpack_kernel(const uint8_t *payload, size_t n,
                                   float alpha, float *out)
{
    const float a = __fmul_rn(alpha, *(const float *)payload);
    const uint8_t *bits = payload + 4;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float t = (bits[i / 8] >> (i % 8)) & 1 ? -1.0f : 1.0f;
        out[i] = __fadd_rn(out[i], __fmul_rn(a, t));
    }
}

}  // namespace

/* ---- the compressor ---- */

extern "C" int lbs_cuda_compressor_new(const char *spec,
                                       struct lbs_cuda_compressor **out,
                                       struct lbs_err *err)
{
    *out = NULL;
    struct lbs_compressor *ref;
    int rc = lbs_compressor_new(spec, &ref, err);   /* the CPU's parser */
    if (rc)
        return rc;
    const char *name = lbs_compressor_name(ref);
    struct lbs_cuda_compressor *c =
        (struct lbs_cuda_compressor *)calloc(1, sizeof *c);
    if (!c) {
        lbs_compressor_free(ref);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    /* the kernel family and its values from the compressor's device hook
     * (its own mapping of its parsed config, in its file) */
    const struct lbs_compress_device *dev;
    struct lbs_compress_device_hp hp;
    rc = lbs_compressor_device(ref, &dev, &hp, err);
    if (!rc) {
        c->kind = dev->kernel;
        c->k = hp.k;
        c->seed = hp.seed;
        c->scale = hp.scale;
        snprintf(c->name, sizeof c->name, "%s", name);
        c->ef = lbs_compressor_ef(ref);
    }
    lbs_compressor_free(ref);
    if (rc) {
        free(c);
        return rc;
    }
    cudaError_t r = cudaMalloc(&c->hist, NBIN * sizeof *c->hist);
    if (r == cudaSuccess)
        r = cudaMalloc(&c->st, sizeof *c->st);
    if (r == cudaSuccess)
        r = cudaMalloc(&c->num, 2 * sizeof *c->num);
    if (r == cudaSuccess)
        r = cudaMalloc(&c->bad, sizeof *c->bad);
    if (r != cudaSuccess) {
        lbs_cuda_compressor_free(c);
        return lbs_err_set(err, -EIO, "cudaMalloc (compressor scratch): %s",
                           cudaGetErrorString(r));
    }
    *out = c;
    return 0;
}

extern "C" void lbs_cuda_compressor_free(struct lbs_cuda_compressor *c)
{
    if (!c)
        return;
    for (size_t l = 0; l < c->nresid; l++)
        if (c->resid[l])
            cudaFree(c->resid[l]);
    free(c->resid);
    free(c->resid_n);
    dbuf_free(&c->tmp);
    dbuf_free(&c->gi);
    dbuf_free(&c->gv);
    dbuf_free(&c->rank);
    dbuf_free(&c->midx);
    dbuf_free(&c->part);
    cudaFree(c->hist);   /* cudaFree(NULL) is a no-op */
    cudaFree(c->st);
    cudaFree(c->num);
    cudaFree(c->bad);
    free(c);
}

static size_t topk_count(const struct lbs_cuda_compressor *c, size_t n)
{
    double v = c->k * (double)n + 0.5;   /* lbs_topk_count */
    size_t K = v >= (double)n ? n : (size_t)v;
    return K ? K : 1;
}

extern "C" size_t lbs_cuda_compress_max_bytes(
    const struct lbs_cuda_compressor *c, size_t n)
{
    switch (c->kind) {
    case K_TOPK: return 8 * topk_count(c, n);
    case K_RANDK: return 4 * n;
    case K_SIGN: return 4 + (n + 7) / 8;
    }
    return 0;
}

static int check_call(const struct lbs_cuda_compressor *c, size_t n,
                      int layer, struct lbs_err *err)
{
    if (n == 0 || n >= UINT32_MAX)
        return lbs_err_set(err, -EINVAL, "%s: layer of %zu elements (must be "
                           "1..2^32-2)", c->name, n);
    if (layer < 0)
        return lbs_err_set(err, -EINVAL, "%s: layer index %d (must be >= 0)",
                           c->name, layer);
    return 0;
}

/* out += alpha * D(payload): the one decode behind decompress and ef. */
static int decompress_add(struct lbs_cuda_compressor *c, const void *p,
                          size_t bytes, size_t n, int layer, long step,
                          float alpha, float *out, struct lbs_err *err)
{
    size_t want = c->kind == K_RANDK ? 0 : lbs_cuda_compress_max_bytes(c, n);
    const uint32_t *idx = (const uint32_t *)p;
    size_t m = 0;
    int rc = 0;
    if (c->kind == K_RANDK) {
        if ((rc = randk_mask(c, n, layer, step, &idx, &m, err)))
            return rc;
        want = 4 * m;
    }
    if (bytes != want)
        return lbs_err_set(err, -EINVAL, "%s: payload of %zu bytes, expected "
                           "%zu", c->name, bytes, want);
    switch (c->kind) {
    case K_TOPK: {
        size_t K = bytes / 8;
        LBS_CU(cudaMemsetAsync(c->bad, 0, sizeof *c->bad));
        scatter_add_kernel<<<grid_for(K), NTHR>>>(
            idx, (const float *)p + K, K, n, alpha, out, c->bad);
        LBS_CU_LAUNCHED();
        int bad;
        LBS_CU(cudaMemcpy(&bad, c->bad, sizeof bad, cudaMemcpyDeviceToHost));
        if (bad)
            return lbs_err_set(err, -EINVAL, "%s: payload index out of range "
                               "for a layer of %zu", c->name, n);
        return 0;
    }
    case K_RANDK: {
        float a = c->scale ? alpha / (float)c->k : alpha;   /* randk.c */
        scatter_add_kernel<<<grid_for(m), NTHR>>>(idx, (const float *)p, m, n,
                                                  a, out, c->bad);
        LBS_CU_LAUNCHED();
        break;
    }
    case K_SIGN:
        sign_unpack_kernel<<<grid_for(n), NTHR>>>((const uint8_t *)p, n,
                                                  alpha, out);
        LBS_CU_LAUNCHED();
        break;
    }
    LBS_CU(cudaDeviceSynchronize());
    return 0;
}

static int compress_raw(struct lbs_cuda_compressor *c, const float *x,
                        size_t n, int layer, long step, void *p,
                        size_t *bytes, struct lbs_err *err)
{
    int rc = 0;
    switch (c->kind) {
    case K_TOPK: {
        size_t K = topk_count(c, n);
        *bytes = 8 * K;
        rc = topk_select(c, x, n, K, (uint32_t *)p, (float *)p + K, err);
        break;
    }
    case K_RANDK: {
        const uint32_t *idx;
        size_t m;
        if ((rc = randk_mask(c, n, layer, step, &idx, &m, err)))
            return rc;
        gather_kernel<<<grid_for(m), NTHR>>>(x, idx, m, (float *)p);
        LBS_CU_LAUNCHED();
        *bytes = 4 * m;
        break;
    }
    case K_SIGN: {
        size_t nbytes = (n + 7) / 8;
        unsigned nb = grid_for((n + 31) / 32 * 32);
        if ((rc = dbuf_get(&c->part, nb * sizeof(double), err)))
            return rc;
        sign_pack_kernel<<<nb, NTHR>>>(x, n, (uint8_t *)p + 4, nbytes,
                                       c->scale, (double *)c->part.p);
        LBS_CU_LAUNCHED();
        sign_scale_kernel<<<1, NTHR>>>((const double *)c->part.p, nb, n,
                                       c->scale, (float *)p);
        LBS_CU_LAUNCHED();
        *bytes = 4 + nbytes;
        break;
    }
    }
    if (!rc)
        LBS_CU(cudaDeviceSynchronize());
    return rc;
}

/* ef.c's lbs_ef_begin: x = g + e in the layer's residual (e = g first). */
static int ef_begin(struct lbs_cuda_compressor *c, const float *g, size_t n,
                    int layer, float **e, struct lbs_err *err)
{
    size_t l = (size_t)layer;
    if (l >= c->nresid) {
        size_t cap = c->nresid ? c->nresid : 16;
        while (cap <= l)
            cap *= 2;
        float **r = (float **)realloc(c->resid, cap * sizeof *r);
        if (r)
            c->resid = r;
        size_t *rn = r ? (size_t *)realloc(c->resid_n, cap * sizeof *rn)
                       : NULL;
        if (!rn)
            return lbs_err_set(err, -ENOMEM, "out of memory");
        c->resid_n = rn;
        memset(c->resid + c->nresid, 0, (cap - c->nresid) * sizeof *r);
        memset(c->resid_n + c->nresid, 0, (cap - c->nresid) * sizeof *rn);
        c->nresid = cap;
    }
    if (c->resid[l] && c->resid_n[l] != n)
        return lbs_err_set(err, -EINVAL, "layer %d changed size from %zu to "
                           "%zu elements", layer, c->resid_n[l], n);
    if (!c->resid[l]) {
        float *r = NULL;
        LBS_CU(cudaMalloc(&r, n * sizeof(float)));
        cudaError_t ce = cudaMemcpy(r, g, n * sizeof(float),
                                    cudaMemcpyDeviceToDevice);
        if (ce != cudaSuccess) {
            /* keep no residual rather than one of uninitialised memory */
            cudaFree(r);
            return lbs_err_set(err, -EIO, "cudaMemcpy(residual, g): %s",
                               cudaGetErrorString(ce));
        }
        c->resid[l] = r;
        c->resid_n[l] = n;
    } else {
        add_kernel<<<grid_for(n), NTHR>>>(c->resid[l], g, n);
        LBS_CU_LAUNCHED();
    }
    *e = c->resid[l];
    return 0;
}

extern "C" int lbs_cuda_compress(struct lbs_cuda_compressor *c,
                                 const float *d_g, size_t n, int layer,
                                 long step, void *d_payload, size_t *bytes,
                                 struct lbs_err *err)
{
    int rc = check_call(c, n, layer, err);
    if (rc)
        return rc;
    if (!c->ef)
        return compress_raw(c, d_g, n, layer, step, d_payload, bytes, err);
    float *e = NULL;
    if ((rc = ef_begin(c, d_g, n, layer, &e, err)) ||
        (rc = compress_raw(c, e, n, layer, step, d_payload, bytes, err)))
        return rc;
    return decompress_add(c, d_payload, *bytes, n, layer, step, -1.0f, e,
                          err);
}

extern "C" int lbs_cuda_decompress(struct lbs_cuda_compressor *c,
                                   const void *d_payload, size_t bytes,
                                   size_t n, int layer, long step,
                                   float *d_out, struct lbs_err *err)
{
    int rc = check_call(c, n, layer, err);
    if (rc)
        return rc;
    LBS_CU(cudaMemsetAsync(d_out, 0, n * sizeof(float)));
    return decompress_add(c, d_payload, bytes, n, layer, step, 1.0f, d_out,
                          err);
}

extern "C" int lbs_cuda_compress_residual(const struct lbs_cuda_compressor *c,
                                          int layer, float *h_e, size_t n,
                                          struct lbs_err *err)
{
    if (layer < 0 || (size_t)layer >= c->nresid || !c->resid[layer])
        return lbs_err_set(err, -ENOENT, "%s: no residual for layer %d",
                           c->name, layer);
    if (c->resid_n[layer] != n)
        return lbs_err_set(err, -EINVAL, "%s: residual of layer %d has %zu "
                           "elements, not %zu", c->name, layer,
                           c->resid_n[layer], n);
    LBS_CU(cudaMemcpy(h_e, c->resid[layer], n * sizeof(float),
                      cudaMemcpyDeviceToHost));
    return 0;
}

/* ---- device memory and copy bandwidth ---- */

extern "C" int lbs_cuda_mem_alloc(void **d, size_t bytes, struct lbs_err *err)
{
    *d = NULL;
    LBS_CU(cudaMalloc(d, bytes ? bytes : 256));
    return 0;
}

extern "C" void lbs_cuda_mem_free(void *d)
{
    cudaFree(d);
}

extern "C" int lbs_cuda_mem_put(void *d, const void *h, size_t bytes,
                                struct lbs_err *err)
{
    LBS_CU(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    /* From pageable memory cudaMemcpy returns once h is staged, before
     * the DMA into d has finished (CUDA's "API synchronization
     * behavior"); that DMA is ordered only on the legacy stream, not for
     * the nccl backend's non-blocking stream that may read d next
     * (lbscale coll --backend nccl).  Wait for it: the copy is done on
     * return, as the header says of every call. */
    LBS_CU(cudaStreamSynchronize(0));
    return 0;
}

extern "C" int lbs_cuda_mem_get(void *h, const void *d, size_t bytes,
                                struct lbs_err *err)
{
    LBS_CU(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    return 0;
}

