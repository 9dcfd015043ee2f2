/* thresh.c - top-k by a sampled threshold, as Deep Gradient Compression
 * (Lin et al. 2018) does it.
 *
 * K = max(1, round(k n)) is the target.  A sample of m = max(sample n,
 * 4096) magnitudes drawn with replacement (counter generator keyed by
 * seed, step, layer and rank) gives the threshold: the round(k m)-th
 * largest sampled magnitude.  One pass then selects every |x| >= thr,
 * counting and gathering at once.  Accepted when the count c lies in
 * [lower K, upper K] (DGC's bounds 0.8 and 1.3); otherwise the threshold
 * is corrected, at most `iters` times, each correction one more pass:
 *   c > upper K, all selected elements gathered: exact top-K among them
 *                (DGC's resample step), no further pass;
 *   c > upper K, gather buffer overflowed: a higher threshold (the sample
 *                rank scaled by K/c, or thr x upper when the sample cannot
 *                resolve it);
 *   c < lower K: a lower threshold likewise (or thr x lower);
 * After the last correction a count still too high falls back to the
 * exact radix select (topk.c), one still too low is accepted.  So the
 * payload never exceeds floor(upper K) pairs and always holds a magnitude
 * prefix: no unselected |x| exceeds a selected one.
 *
 * Payload: c uint32 ascending indices, then c floats (8c bytes, c varies
 * with the data), moved with allgatherv.  Inputs whose sample would cover
 * them (m >= n) take the exact select directly.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "compress_impl.h"
#include "lbscale/rng.h"

struct thresh_cfg {
    double k, sample, iters, lower, upper, seed;
};

#define K_(f) offsetof(struct thresh_cfg, f)
static const struct lbs_param_spec thresh_params[] = {
    {"k", LBS_P_REAL, 0.01, 0, 1, LBS_P_MIN_OPEN, K_(k),
     "target density: K = max(1, round(k n))", NULL},
    {"sample", LBS_P_REAL, 0.001, 0, 1, LBS_P_MIN_OPEN, K_(sample),
     "sampled fraction (at least 4096 samples)", NULL},
    {"iters", LBS_P_INT, 3, 0, 20, 0, K_(iters),
     "threshold corrections at most (one pass each)", NULL},
    {"lower", LBS_P_REAL, 0.8, 0, 1, 0, K_(lower),
     "accept counts >= lower K", NULL},
    {"upper", LBS_P_REAL, 1.3, 1, 10, 0, K_(upper),
     "accept counts <= upper K (payload bound)", NULL},
    {"seed", LBS_P_INT, 1, 0, 4294967295.0, 0, K_(seed),
     "sampling seed", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K_

#define MIN_SAMPLES 4096

struct thresh_state {
    struct lbs_topk_scratch topk;
    struct lbs_cbuf gidx, gval, smp;
};

static inline float float_of_mag(uint32_t a)
{
    float f;
    memcpy(&f, &a, 4);
    return f;
}

static size_t upper_count(const struct thresh_cfg *k, size_t n)
{
    size_t K = lbs_topk_count(k->k, n);
    size_t hi = (size_t)floor(k->upper * (double)K);
    hi = hi < K ? K : hi;
    return hi > n ? n : hi;
}

struct pass {
    const float *x;
    size_t n;
    int nb;
    uint32_t thr;
    uint32_t *gi;
    float *gv;
    size_t off[257], cap[256], cnt[256];
    int overflow;
};

static size_t blk_lo(const struct pass *p, int b)
{
    return p->n * (size_t)b / (size_t)p->nb;
}

/* Count and gather |x| >= thr per block into its own region. */
static void select_pass(struct pass *p)
{
    int of = 0;
#pragma omp parallel for schedule(static, 1) reduction(| : of)
    for (int b = 0; b < p->nb; b++) {
        size_t c = lbs_scan_ge(p->x, blk_lo(p, b), blk_lo(p, b + 1), p->thr,
                               p->gi + p->off[b], p->gv + p->off[b],
                               p->cap[b]);
        p->cnt[b] = c;
        of |= c > p->cap[b];
    }
    p->overflow = of;
}

/* Move the block regions together; returns the total. */
static size_t compact(struct pass *p)
{
    size_t o = 0;
    for (int b = 0; b < p->nb; b++) {
        memmove(p->gi + o, p->gi + p->off[b], p->cnt[b] * 4);
        memmove(p->gv + o, p->gv + p->off[b], p->cnt[b] * 4);
        o += p->cnt[b];
    }
    return o;
}

/* The counts are known: write the selection straight into the payload. */
static void write_pass(struct pass *p, uint32_t *idx, float *val)
{
    size_t off[257];
    off[0] = 0;
    for (int b = 0; b < p->nb; b++)
        off[b + 1] = off[b] + p->cnt[b];
#pragma omp parallel for schedule(static, 1)
    for (int b = 0; b < p->nb; b++) {
        size_t o = off[b], lo = blk_lo(p, b), hi = blk_lo(p, b + 1);
        const float *x = p->x;
        const uint32_t thr = p->thr;
        for (size_t i = lo; i < hi; i++)
            if (lbs_mag(x[i]) >= thr) {
                idx[o] = (uint32_t)i;
                val[o++] = x[i];
            }
    }
}

/* A new sample rank aiming at K given count c at rank r; 0 when the
 * sample cannot move (then the caller scales the threshold instead). */
static size_t new_rank(size_t r, size_t m, size_t K, size_t c)
{
    double t = (double)r * (double)K / (double)(c ? c : 1);
    size_t nr = c > K ? (size_t)floor(t) : (size_t)ceil(t);
    if (c > K && nr >= r)
        nr = r - 1;
    if (c < K && nr <= r)
        nr = r + 1;
    return nr >= 1 && nr <= m ? nr : 0;
}

static int init_pass(struct thresh_state *st, struct pass *p, const float *x,
                     size_t n, size_t hiK, struct lbs_err *err)
{
    int nb = omp_get_max_threads();
    nb = nb > 256 ? 256 : nb;
    if ((size_t)nb > n / LBS_PAR_MIN + 1)
        nb = (int)(n / LBS_PAR_MIN + 1);
    p->x = x;
    p->n = n;
    p->nb = nb;
    size_t total = 2 * hiK + 64 * (size_t)nb, o = 0;
    for (int b = 0; b < nb; b++) {
        size_t len = blk_lo(p, b + 1) - blk_lo(p, b);
        p->off[b] = o;
        p->cap[b] = (size_t)((double)total * (double)len / (double)n) + 64;
        o += p->cap[b];
    }
    p->gi = lbs_cbuf_get(&st->gidx, o * 4);
    p->gv = lbs_cbuf_get(&st->gval, o * 4);
    if (!p->gi || !p->gv)
        return lbs_err_set(err, -ENOMEM, "thresh: out of memory");
    return 0;
}

static int draw_sample(struct thresh_state *st, const struct thresh_cfg *k,
                       const float *x, size_t n, size_t m,
                       const struct lbs_cctx *ctx, uint32_t **out)
{
    uint32_t *smp = lbs_cbuf_get(&st->smp, m * 4);
    if (!smp)
        return -ENOMEM;
    uint64_t seed = (uint64_t)k->seed ^ lbs_mix64((uint64_t)ctx->rank + 1);
    uint64_t key = lbs_rng_key(seed, (uint64_t)ctx->step,
                               (uint64_t)ctx->layer);
    lbs_sample_mags(x, n, key, smp, m);   /* n < 2^32 - 1: check_n */
    *out = smp;
    return 0;
}

static int thresh_compress(struct lbs_compressor *c, const float *x,
                           size_t n, const struct lbs_cctx *ctx,
                           void *payload, size_t *bytes, struct lbs_err *err)
{
    const struct thresh_cfg *k = c->cfg;
    struct thresh_state *st = c->state;
    size_t K = lbs_topk_count(k->k, n), hiK = upper_count(k, n);
    size_t loK = (size_t)ceil(k->lower * (double)K);
    size_t m = (size_t)ceil(k->sample * (double)n);
    m = m < MIN_SAMPLES ? MIN_SAMPLES : m;
    uint32_t *idx = payload;
    float *val;
    if (m >= n || K >= n) {
        *bytes = 8 * K;
        return lbs_topk_select(x, n, K, idx, (float *)payload + K, &st->topk,
                               err);
    }
    uint32_t *smp;
    struct pass p;
    if (draw_sample(st, k, x, n, m, ctx, &smp) ||
        init_pass(st, &p, x, n, hiK, err))
        return lbs_err_set(err, -ENOMEM, "thresh: out of memory");
    size_t r = lbs_topk_count(k->k, m);
    p.thr = lbs_kth_largest_u32(smp, m, r);
    for (int it = 0;; it++) {
        select_pass(&p);
        size_t cnt = 0;
        for (int b = 0; b < p.nb; b++)
            cnt += p.cnt[b];
        int last = it >= (int)k->iters;
        if (cnt > hiK && !p.overflow) {        /* resample: exact among c */
            size_t got = compact(&p);
            val = (float *)payload + K;
            int rc = lbs_topk_select(p.gv, got, K, idx, val, &st->topk, err);
            if (rc)
                return rc;
            for (size_t j = 0; j < K; j++)
                idx[j] = p.gi[idx[j]];
            *bytes = 8 * K;
            return 0;
        }
        if (cnt > hiK && last) {               /* bounded: exact select */
            *bytes = 8 * K;
            return lbs_topk_select(x, n, K, idx, (float *)payload + K,
                                   &st->topk, err);
        }
        if (cnt <= hiK && (cnt >= loK || last)) {
            val = (float *)payload + cnt;
            if (p.overflow) {
                write_pass(&p, idx, val);
            } else {
                compact(&p);
                memcpy(idx, p.gi, cnt * 4);
                memcpy(val, p.gv, cnt * 4);
            }
            *bytes = 8 * cnt;
            return 0;
        }
        size_t nr = new_rank(r, m, K, cnt);
        if (nr) {
            r = nr;
            p.thr = lbs_kth_largest_u32(smp, m, r);
        } else {
            float t = float_of_mag(p.thr) *
                      (float)(cnt > K ? k->upper : k->lower);
            uint32_t nt = lbs_mag(t);
            /* make progress even where scaling cannot (thr 0 or tiny) */
            p.thr = cnt > K ? (nt > p.thr ? nt : p.thr + 1)
                            : (nt < p.thr ? nt : (p.thr ? p.thr - 1 : 0));
        }
    }
}

static size_t thresh_max(const struct lbs_compressor *c, size_t n)
{
    return 8 * upper_count(c->cfg, n);
}

static size_t thresh_bytes(struct lbs_compressor *c, size_t n,
                           const struct lbs_cctx *ctx)
{
    (void)c; (void)n; (void)ctx;
    return 0;   /* depends on the values */
}

static int thresh_decompress_add(struct lbs_compressor *c,
                                 const void *payload, size_t bytes, size_t n,
                                 const struct lbs_cctx *ctx, float alpha,
                                 float *out, struct lbs_err *err)
{
    (void)ctx;
    if (bytes > thresh_max(c, n))
        return lbs_err_set(err, -EINVAL, "thresh: payload of %zu bytes "
                           "exceeds the bound %zu", bytes, thresh_max(c, n));
    return lbs_sparse_decompress_add(c, payload, bytes, n, alpha, out, err);
}

static int thresh_check(const void *cfg, struct lbs_err *err)
{
    const struct thresh_cfg *k = cfg;
    if (k->lower > 1 || k->upper < 1)
        return lbs_err_set(err, -EINVAL, "thresh: need lower <= 1 <= upper");
    return 0;
}

static int thresh_init(struct lbs_compressor *c, struct lbs_err *err)
{
    c->state = calloc(1, sizeof(struct thresh_state));
    return c->state ? 0 : lbs_err_set(err, -ENOMEM, "out of memory");
}

static void thresh_fini(struct lbs_compressor *c)
{
    struct thresh_state *st = c->state;
    if (!st)
        return;
    lbs_topk_scratch_free(&st->topk);
    lbs_cbuf_free(&st->gidx);
    lbs_cbuf_free(&st->gval);
    lbs_cbuf_free(&st->smp);
    free(st);
}

/* Invariant (lbs_compress_wrong): the kept values are exact and are the
 * largest |x| (a magnitude prefix); the count stays within the bounded
 * correction, at most floor(upper K) pairs, K = round(k n) in [1, n]. */
static long thresh_wrong(const struct lbs_compressor *c,
                         struct lbs_compress_check *ck)
{
    const struct thresh_cfg *k = c->cfg;
    size_t n = ck->n, K = (size_t)(k->k * (double)n + 0.5);
    K = K < 1 ? 1 : K > n ? n : K;
    return lbs_cmp_sparse_wrong(ck, 1) +
           (ck->bytes / 8 > (size_t)floor(k->upper * (double)K));
}

const struct lbs_compress_ops lbs_cmp_thresh = {
    .name = "thresh",
    .summary = "DGC top-k: threshold from a sample, bounded corrections",
    .params = thresh_params,
    .cfg_size = sizeof(struct thresh_cfg),
    .coll = LBS_COLL_ALLGATHERV,
    /* memory traffic (lbs_compress_traffic): one select pass over x (no
     * correction pass counted), the pairs written; decoding as top-k */
    .traffic = {.comp = 4, .comp_w = 1, .dec_once = 4,
                .dec_part = 0, .dec_w = 2, .known = 1},
    .ef_ok = 1,
    .check = thresh_check,
    .init = thresh_init,
    .fini = thresh_fini,
    .wire_bytes = thresh_bytes,
    .max_bytes = thresh_max,
    .compress = thresh_compress,
    .decompress_add = thresh_decompress_add,
    .wrong = thresh_wrong,
};
