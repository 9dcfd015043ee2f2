/* qsgd.c - QSGD (Alistarh et al. 2017): s levels per sign, stochastic
 * rounding, one fp32 norm per bucket of `bucket` elements (the paper's
 * bucketing; bucket=0: the whole layer is one bucket).
 *
 *   level_i = sign(x_i) floor(s |x_i| / ||x_B||_2 + u_i),  u_i ~ U[0, 1)
 *   D(x)_i  = ||x_B||_2 level_i / s        (B: the bucket of i)
 * E[D(x)_i] = x_i and E|D(x)_i - x_i|^2 = (||x_B|| / s)^2 f (1 - f) with f
 * the fraction of s |x_i| / ||x_B||, so E||D(x) - x||^2 <= min(n_B / s^2,
 * sqrt(n_B) / s) ||x_B||^2 (the paper's Lemma 3.1).  Levels are stored
 * byte-aligned rather than Elias-coded: int8 when s <= 127 (4x smaller
 * than fp32), int16 up to s = 32767.  Payload: ceil(n / bucket) float
 * norms, then n levels.  Collective: allgather.
 *
 * The rounding, in float as the authors' and the reference codes do it
 * (their GPU and torch quantisers draw one float32 uniform per element
 * and round in float): y = min(|x_i| sc, s) with sc = s / ||x_B|| in
 * float, t = (int)y (floor, y >= 0), f = y - t (exact), level = t + (u < f)
 * with u a multiple of 2^-24.  So P(level = t + 1) = ceil(2^24 f) / 2^24:
 * unbiased for the y it rounds, to 2^-24 of a level; y itself carries the
 * float rounding of |x| s / ||x_B|| (2 ulp relative), below the fp32
 * resolution of the decoded value.
 *
 * The draw: u_i = the top 24 bits of a 32-bit counter hash of i, keyed by
 * (seed, step, layer, rank) through lbs_rng_key.  Why this hash: a pure
 * function of (key, i), so a draw needs no state, any cut of [0, n) over
 * threads gives the same bits and any rank can recompute another's; 32-bit
 * lanes, so it vectorises at every level (the 64-bit SplitMix mixer of
 * lbscale/rng.h needs a 64-bit multiply that only AVX-512DQ has, and kept
 * this loop scalar at 0.035 of STREAM).  It is Wellons' lowbias32
 * (xorshift-multiply, bias ~0.17 of murmur3's finaliser) applied twice,
 * the key's low word xored in before the first round and its high word
 * before the second: one keyed bijection of the counter would make two
 * keys' streams shifted copies of each other; the second round makes the
 * ranks' and steps' streams unrelated permutations.  i / 2^32 is folded
 * into the high word, so layers above 2^32 elements do not repeat draws.
 * tests/test_compress.c checks the mean and the variance of D(x) against
 * the formulas above, and the independence of neighbours and ranks;
 * tests/test_isa.c checks the bits at every level.
 *
 * One pass when bucket > 0: each bucket's norm (a fixed-order sum, the
 * same double at every level and thread count), then its levels while its
 * 2 KiB are in L1.  bucket=0: the norm over 256 fixed pieces, then the
 * levels.
 */
#include <math.h>
#include <string.h>

#include "compress_impl.h"
#include "kfam.h"
#include "qsgd_kern.h"
#include "lbscale/rng.h"

struct qsgd_cfg {
    double s, bucket, seed;
};

static const struct lbs_param_spec qsgd_params[] = {
    {"s", LBS_P_INT, 127, 1, 32767, 0, offsetof(struct qsgd_cfg, s),
     "levels per sign (<= 127: 1 byte/element, else 2)", NULL},
    {"bucket", LBS_P_INT, 512, 0, 4294967295.0, 0,
     offsetof(struct qsgd_cfg, bucket),
     "elements sharing one norm (0: the whole layer)", NULL},
    {"seed", LBS_P_INT, 1, 0, 4294967295.0, 0, offsetof(struct qsgd_cfg, seed),
     "rounding seed (mixed with the rank)", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

static size_t bucket_len(const struct lbs_compressor *c, size_t n)
{
    const struct qsgd_cfg *k = c->cfg;
    return k->bucket == 0 || (size_t)k->bucket > n ? n : (size_t)k->bucket;
}

static size_t nbuckets(const struct lbs_compressor *c, size_t n)
{
    size_t b = bucket_len(c, n);
    return (n + b - 1) / b;
}

static size_t level_size(const struct lbs_compressor *c)
{
    const struct qsgd_cfg *k = c->cfg;
    return k->s <= 127 ? 1 : 2;
}

static size_t qsgd_max(const struct lbs_compressor *c, size_t n)
{
    return 4 * nbuckets(c, n) + n * level_size(c);
}

static size_t qsgd_bytes(struct lbs_compressor *c, size_t n,
                         const struct lbs_cctx *ctx)
{
    (void)ctx;
    return qsgd_max(c, n);
}

/* levels of x[lo, hi), all in bucket b of norm nb */
static void levels(const struct lbs_qsgd_kern *Q, const float *x, size_t lo,
                   size_t hi, float nb, float s, uint64_t key, uint8_t *lv,
                   int wide)
{
    float sc = nb > 0 ? s / nb : 0.0f;   /* NaN or 0 norm: all levels 0 */
    sc = sc < INFINITY ? sc : 0.0f;      /* a subnormal norm */
    Q->qsgd_levels(x, lo, hi, sc, s, key, lv, wide);
}

/* bucket=0: one norm, from fixed pieces (the same at any thread count) */
static void whole_layer(const struct lbs_kern *K,
                        const struct lbs_qsgd_kern *Q, const float *x,
                        size_t n, float s, uint64_t key, float *norm,
                        uint8_t *lv, int wide)
{
    double part[256], ss = 0;
#pragma omp parallel for schedule(static) if (n > LBS_PAR_MIN)
    for (size_t j = 0; j < 256; j++)
        part[j] = K->sumsq_fixed(x + n * j / 256,
                                 n * (j + 1) / 256 - n * j / 256);
    for (size_t j = 0; j < 256; j++)
        ss += part[j];
    *norm = (float)sqrt(ss);
#pragma omp parallel for schedule(static) if (n > LBS_PAR_MIN)
    for (size_t j = 0; j < 256; j++)
        levels(Q, x, n * j / 256, n * (j + 1) / 256, *norm, s, key, lv, wide);
}

static int qsgd_compress(struct lbs_compressor *c, const float *x, size_t n,
                         const struct lbs_cctx *ctx, void *payload,
                         size_t *bytes, struct lbs_err *err)
{
    (void)err;
    const struct qsgd_cfg *k = c->cfg;
    const size_t bl = bucket_len(c, n), nb = nbuckets(c, n);
    float *norms = payload;   /* payload is aligned: our own buffer */
    const float s = (float)k->s;
    uint64_t key = lbs_rng_key((uint64_t)k->seed ^
                                   lbs_mix64((uint64_t)ctx->rank + 1),
                               (uint64_t)ctx->step, (uint64_t)ctx->layer);
    uint8_t *lv = (uint8_t *)payload + 4 * nb;
    int wide = level_size(c) == 2;
    const struct lbs_kern *K = lbs_kern();
    const struct lbs_qsgd_kern *Q = lbs_kfam_cur(&lbs_qsgd_kfam);
    if (nb == 1) {
        whole_layer(K, Q, x, n, s, key, norms, lv, wide);
    } else {
#pragma omp parallel for schedule(static) if (n > LBS_PAR_MIN)
        for (size_t b = 0; b < nb; b++) {
            size_t lo = b * bl, hi = lo + bl < n ? lo + bl : n;
            norms[b] = (float)sqrt(K->sumsq_fixed(x + lo, hi - lo));
            levels(Q, x, lo, hi, norms[b], s, key, lv, wide);
        }
    }
    *bytes = qsgd_max(c, n);
    return 0;
}

static int qsgd_decompress_add(struct lbs_compressor *c, const void *payload,
                               size_t bytes, size_t n,
                               const struct lbs_cctx *ctx, float alpha,
                               float *out, struct lbs_err *err)
{
    (void)ctx;
    const struct qsgd_cfg *k = c->cfg;
    int rc = lbs_cmp_expect_bytes(c, bytes, qsgd_max(c, n), err);
    if (rc)
        return rc;
    const size_t bl = bucket_len(c, n), nb = nbuckets(c, n);
    const uint8_t *lv = (const uint8_t *)payload + 4 * nb;
    int wide = level_size(c) == 2;
    /* a gathered payload may sit at any offset: read norms bytewise; the
     * levels stay 2-aligned since every payload size is even when wide */
#pragma omp parallel for schedule(static) if (n > LBS_PAR_MIN)
    for (size_t b = 0; b < nb; b++) {
        float norm;
        memcpy(&norm, (const uint8_t *)payload + 4 * b, 4);
        const float a = alpha * norm / (float)k->s;
        size_t end = (b + 1) * bl < n ? (b + 1) * bl : n;
        if (wide)
            for (size_t i = b * bl; i < end; i++)
                out[i] += a * (float)((const int16_t *)lv)[i];
        else
            for (size_t i = b * bl; i < end; i++)
                out[i] += a * (float)((const int8_t *)lv)[i];
    }
    return 0;
}

/* Invariant (lbs_compress_wrong): stochastic rounding moves an element by
 * less than one level, |out - x| <= ||x_B|| / s for its bucket B (the
 * norms head the payload), with 1e-5 relative slack for float. */
static long qsgd_wrong(const struct lbs_compressor *c,
                       struct lbs_compress_check *ck)
{
    const struct qsgd_cfg *k = c->cfg;
    size_t n = ck->n;
    double s = k->s, bl = k->bucket;
    size_t B = bl == 0 || bl > (double)n ? n : (size_t)bl;
    long bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (size_t i = 0; i < n; i++) {
        float nb;
        memcpy(&nb, (const char *)ck->payload + 4 * (i / B), 4);
        bad += fabs((double)ck->out[i] - ck->x[i]) > nb / s * (1 + 1e-5) +
               1e-30;
    }
    return bad;
}

const struct lbs_compress_ops lbs_cmp_qsgd = {
    .name = "qsgd",
    .summary = "QSGD: s levels, stochastic rounding, a norm per bucket (unbiased)",
    .params = qsgd_params,
    .cfg_size = sizeof(struct qsgd_cfg),
    .coll = LBS_COLL_ALLGATHER,
    /* memory traffic (lbs_compress_traffic): two passes over x (bucket norms,
     * levels), codes written; decoding a part updates every element */
    .traffic = {.comp = 8, .comp_w = 1, .dec_once = 4,
                .dec_part = 8, .dec_w = 1, .known = 1},
    .ef_ok = 1,
    .wire_bytes = qsgd_bytes,
    .max_bytes = qsgd_max,
    .compress = qsgd_compress,
    .decompress_add = qsgd_decompress_add,
    .wrong = qsgd_wrong,
    .kern = &lbs_qsgd_kfam,
};
