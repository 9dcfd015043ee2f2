/* qsgd.c - QSGD (Alistarh et al. 2017): s levels per sign, stochastic
 * rounding, one fp32 norm per bucket of `bucket` elements (the paper's
 * bucketing; bucket=0: the whole layer is one bucket).
 *
 *   level_i = sign(x_i) floor(s |x_i| / ||x_B||_2 + u_i),  u_i ~ U[0, 1)
 *   D(x)_i  = ||x_B||_2 level_i / s        (B: the bucket of i)
 * E[D(x)_i] = x_i: unbiased (up to the 2^-32 resolution of u).  Levels are
 * stored byte-aligned rather than Elias-coded: int8 when s <= 127 (4x
 * smaller than fp32), int16 up to s = 32767.  The u_i come from the
 * counter generator keyed by (seed, step, layer, rank): reproducible, and
 * independent across ranks (so averaging over ranks averages the rounding
 * noise too).  Two passes: the bucket norms, then quantisation.
 * Payload: ceil(n / bucket) float norms, then n levels.
 * Collective: allgather.
 */
#include <math.h>
#include <string.h>

#include "compress_impl.h"
#include "kern.h"
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

/* The uniform draws: element i uses 32 bits of lbs_rng_u64(key, i / 2),
 * the low half for even i, the high half for odd i, so one 64-bit draw
 * serves two elements; the rounding is done in double so u keeps all 32
 * bits.  The loop is the dispatched kernel (core/kern, qsgd_levels). */

static int qsgd_compress(struct lbs_compressor *c, const float *x, size_t n,
                         const struct lbs_cctx *ctx, void *payload,
                         size_t *bytes, struct lbs_err *err)
{
    (void)err;
    const struct qsgd_cfg *k = c->cfg;
    const size_t bl = bucket_len(c, n), nb = nbuckets(c, n);
    float *norms = payload;   /* payload is aligned: our own buffer */
    double ss = 0;
    if (nb == 1) {            /* one bucket: parallel over the elements */
#pragma omp parallel for simd reduction(+ : ss) schedule(static) \
    if (n > LBS_PAR_MIN)
        for (size_t i = 0; i < n; i++)
            ss += (double)x[i] * x[i];
        norms[0] = (float)sqrt(ss);
    } else {
#pragma omp parallel for schedule(static) if (n > LBS_PAR_MIN)
        for (size_t b = 0; b < nb; b++) {
            double t = 0;
            size_t end = (b + 1) * bl < n ? (b + 1) * bl : n;
            for (size_t i = b * bl; i < end; i++)
                t += (double)x[i] * x[i];
            norms[b] = (float)sqrt(t);
        }
    }
    const double s = k->s;
    uint64_t key = lbs_rng_key((uint64_t)k->seed ^
                                   lbs_mix64((uint64_t)ctx->rank + 1),
                               (uint64_t)ctx->step, (uint64_t)ctx->layer);
    uint8_t *lv = (uint8_t *)payload + 4 * nb;
    int wide = level_size(c) == 2;
    const struct lbs_kern *K = lbs_kern();
    /* fixed pieces of [0, n), each cut at bucket bounds: the levels do not
     * depend on the cut (element i's draw is a function of i) */
#pragma omp parallel for schedule(static) if (n > LBS_PAR_MIN)
    for (size_t j = 0; j < 256; j++) {
        size_t lo = n * j / 256, hi = n * (j + 1) / 256;
        while (lo < hi) {
            size_t b = lo / bl, e = (b + 1) * bl < hi ? (b + 1) * bl : hi;
            double sc = norms[b] > 0 ? s / (double)norms[b] : 0.0;
            K->qsgd_levels(x, lo, e, sc, s, key, lv, wide);
            lo = e;
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
};
