/* topk.c - exact top-k by magnitude, selected by a sampled pre-filter
 * (one pass over x, then work on about 1.3 K candidates) or, where that
 * does not apply, a parallel radix select (no sort); and the sparse
 * (index, value) payload.
 *
 * K = max(1, round(k n)).  The payload holds exactly K pairs: K uint32
 * indices in ascending order, then their K float values (8K bytes).
 * Ties: when several elements share the K-th largest magnitude, the ones
 * with the lowest indices are taken, so the selection is deterministic
 * and identical on every thread count.  NaN ranks above inf (its magnitude
 * bits are larger), so a NaN gradient is always sent and noticed.
 *
 * The select works on the 31 magnitude bits of each float, which order
 * like the magnitudes themselves, in up to three digit levels (bits
 * 30..20, 19..9, 8..0):
 *   1. each thread histograms its static block (four sub-histograms per
 *      thread break the increment dependency chains that skewed gradient
 *      data creates), the merged histogram names the bin holding the K-th
 *      largest;
 *   2. if that bin is small (<= max(K, n/32) elements), one gather pass
 *      copies every element at or above the bin, in index order, into
 *      scratch, and the rest is resolved on that small set: quickselect
 *      on the bin's members gives the exact threshold, a compaction keeps
 *      the survivors;
 *   3. otherwise the next level histograms only that bin's members; after
 *      the last level the threshold is exact and one output pass writes
 *      the K pairs directly, each thread at an offset known from its
 *      counts.
 * That path runs when the sampled pre-filter (below) does not apply: n <
 * 65536, K above about n/5, or an unlucky sample.  Gradient-like data
 * needs two passes over x there (histogram, gather); a degenerate input
 * (all equal) needs four.
 *
 * Bytes model (per element of x, pre-filter path, k = K/n): one read of x
 * (4); the candidates, about c = 1.34 k of the elements at k = 0.01 and
 * n >= 16384 x 16 (the bracket below), written by the scan (8 c), read
 * three times from cache (histogram and members 4 c each, output 8 c) and
 * the pairs written (8 k); the 16384 sampled reads are random lines
 * (64 bytes each, negligible at 100M).  So 4 + 24 c + 8 k = 4 + about
 * 40 k: 4.4 bytes at k = 0.01, of which the read of x, the candidates'
 * 8 c (10.7 MB at 100M: in the L3, or written back) and the pairs go to
 * memory.  The benchmark's GB/s counts 4 (lbscale compress: 4N / time).
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "compress_impl.h"
#include "kern.h"
#include "lbscale/rng.h"

#define NBIN 2048
#define NSUB 4
#define MAXLEV 3
static const int lev_shift[MAXLEV] = {20, 9, 0};
static const int lev_width[MAXLEV] = {11, 11, 9};

/* The static blocks: one per thread of the first region, reused by every
 * later pass so per-block counts stay valid. */
struct blocks {
    int nb;
    size_t n;
};

static inline size_t blk_lo(const struct blocks *b, int i)
{
    return b->n * (size_t)i / (size_t)b->nb;
}

/* Select state: the digit prefix found so far and per-block counts. */
struct sel {
    const float *x;
    struct blocks b;
    uint32_t *hist;     /* nb x NSUB x NBIN, block-merged into sub 0 */
    size_t *sure;       /* per block: elements known to be selected */
    size_t *cand;       /* per block: elements in the current prefix bin */
    size_t need;        /* how many still to take from the prefix bin */
    uint32_t prefix;    /* magnitude bits >> shift of the current bin */
    int shift;          /* of the last resolved level */
};

static void hist_block(const struct sel *s, int blk, int lev, uint32_t *h)
{
    const float *x = s->x;
    size_t lo = blk_lo(&s->b, blk), hi = blk_lo(&s->b, blk + 1);
    int sh = lev_shift[lev];
    memset(h, 0, NSUB * NBIN * sizeof *h);
    if (lev == 0) {
        size_t i = lo;
        for (; i + NSUB <= hi; i += NSUB)
            for (int u = 0; u < NSUB; u++)
                h[u * NBIN + (lbs_mag(x[i + u]) >> sh)]++;
        for (; i < hi; i++)
            h[lbs_mag(x[i]) >> sh]++;
    } else {
        uint32_t m = (1u << lev_width[lev]) - 1, pre = s->prefix;
        int psh = sh + lev_width[lev];
        for (size_t i = lo; i < hi; i++) {
            uint32_t a = lbs_mag(x[i]);
            if ((a >> psh) == pre)
                h[(a >> sh) & m]++;
        }
    }
    for (int u = 1; u < NSUB; u++)
        for (int j = 0; j < NBIN; j++)
            h[j] += h[u * NBIN + j];
}

/* One level: histogram, then choose the bin holding the need-th largest
 * among the current prefix's members.  Returns that bin's total size. */
static size_t level(struct sel *s, int lev)
{
    int nb = s->b.nb;
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int blk = 0; blk < nb; blk++)
        hist_block(s, blk, lev, s->hist + (size_t)blk * NSUB * NBIN);
    int nbin = 1 << lev_width[lev];
    size_t above = 0, in = 0;
    int chosen = 0;
    for (int j = nbin - 1; j >= 0; j--) {
        size_t t = 0;
        for (int blk = 0; blk < nb; blk++)
            t += s->hist[(size_t)blk * NSUB * NBIN + j];
        if (above + t >= s->need) {
            chosen = j;
            in = t;
            break;
        }
        above += t;
    }
    for (int blk = 0; blk < nb; blk++) {
        const uint32_t *h = s->hist + (size_t)blk * NSUB * NBIN;
        for (int j = chosen + 1; j < nbin; j++)
            s->sure[blk] += h[j];
        s->cand[blk] = h[chosen];
    }
    s->need -= above;
    s->prefix = lev == 0 ? (uint32_t)chosen
                         : s->prefix << lev_width[lev] | (uint32_t)chosen;
    s->shift = lev_shift[lev];
    return in;
}

/* k-th largest (1-based) of a[0, n); reorders a.  Three-way partition
 * because ties are common (quantised or sparse gradients), pivots drawn
 * from the counter generator so no input is adversarial. */
uint32_t lbs_kth_largest_u32(uint32_t *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n, want = k - 1;
    for (uint64_t it = 0; hi - lo > 1; it++) {
        uint32_t piv = a[lo + lbs_rng_below(0x5eed, it, hi - lo)];
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            uint32_t v = a[i];
            if (v > piv) {
                a[i++] = a[lt];
                a[lt++] = v;
            } else if (v < piv) {
                a[i] = a[--gt];
                a[gt] = v;
            } else {
                i++;
            }
        }
        if (want < lt)
            hi = lt;
        else if (want >= gt)
            lo = gt;
        else
            return piv;
    }
    return a[lo];
}

/* Path 2: gather everything at or above the prefix bin, then resolve. */
static int gather_resolve(struct sel *s, size_t K, uint32_t *idx, float *val,
                          struct lbs_topk_scratch *sc, struct lbs_err *err)
{
    int nb = s->b.nb;
    size_t off[257], tot = 0, ncand = 0;
    for (int blk = 0; blk < nb; blk++) {
        off[blk] = tot;
        tot += s->sure[blk] + s->cand[blk];
        ncand += s->cand[blk];
    }
    uint32_t *gi = lbs_cbuf_get(&sc->gidx, tot * 4 + 4);
    float *gv = lbs_cbuf_get(&sc->gval, tot * 4 + 4);
    uint32_t *cm = lbs_cbuf_get(&sc->cand, ncand * 4 + 4);
    if (!gi || !gv || !cm)
        return lbs_err_set(err, -ENOMEM, "topk: out of memory for %zu "
                           "candidates", tot);
    const float *x = s->x;
    const uint32_t pre = s->prefix;
    const int sh = s->shift;
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int blk = 0; blk < nb; blk++) {
        /* bounds in locals: the stores below may alias s->b.nb (an int) */
        size_t o = off[blk], lo = blk_lo(&s->b, blk),
               hi = blk_lo(&s->b, blk + 1);
        for (size_t i = lo; i < hi; i++)
            if ((lbs_mag(x[i]) >> sh) >= pre) {
                gi[o] = (uint32_t)i;
                gv[o++] = x[i];
            }
    }
    size_t c = 0;
    for (size_t j = 0; j < tot; j++)
        if ((lbs_mag(gv[j]) >> sh) == pre)
            cm[c++] = lbs_mag(gv[j]);
    uint32_t T = lbs_kth_largest_u32(cm, ncand, s->need);
    size_t gt = 0;
    for (size_t j = 0; j < ncand; j++)
        gt += cm[j] > T;
    size_t ties = s->need - gt, o = 0;
    for (size_t j = 0; j < tot; j++) {
        uint32_t a = lbs_mag(gv[j]);
        int keep = (a >> sh) > pre || a > T;
        if (!keep && a == T && ties) {
            keep = 1;   /* lowest indices first: gather kept index order */
            ties--;
        }
        if (keep) {
            idx[o] = gi[j];
            val[o++] = gv[j];
        }
    }
    return o == K ? 0 : lbs_err_set(err, -EIO, "topk: internal error: "
                                    "selected %zu of %zu", o, K);
}

/* Path 3: the threshold is exact; write the K pairs in one pass. */
static void output_direct(struct sel *s, uint32_t *idx, float *val)
{
    int nb = s->b.nb;
    size_t off[257], quota[256], left = s->need, tot = 0;
    for (int blk = 0; blk < nb; blk++) {
        quota[blk] = s->cand[blk] < left ? s->cand[blk] : left;
        left -= quota[blk];
        off[blk] = tot;
        tot += s->sure[blk] + quota[blk];
    }
    const float *x = s->x;
    const uint32_t T = s->prefix;
#pragma omp parallel for schedule(static, 1) if (nb > 1)
    for (int blk = 0; blk < nb; blk++) {
        size_t o = off[blk], q = quota[blk], lo = blk_lo(&s->b, blk),
               hi = blk_lo(&s->b, blk + 1);
        for (size_t i = lo; i < hi; i++) {
            uint32_t a = lbs_mag(x[i]);
            int keep = a > T;
            if (!keep && a == T && q) {
                keep = 1;
                q--;
            }
            if (keep) {
                idx[o] = (uint32_t)i;
                val[o++] = x[i];
            }
        }
    }
}

static int radix_select(const float *x, size_t n, size_t K, uint32_t *idx,
                        float *val, struct lbs_topk_scratch *sc,
                        struct lbs_err *err)
{
    if (K >= n) {
#pragma omp parallel for simd schedule(static) if (n > LBS_PAR_MIN)
        for (size_t i = 0; i < n; i++) {
            idx[i] = (uint32_t)i;
            val[i] = x[i];
        }
        return 0;
    }
    int nb = omp_get_max_threads();
    if (nb > 256)
        nb = 256;
    if ((size_t)nb > n / 262144 + 1)  /* small inputs (the pre-filter's
                                         survivors): fewer fork/joins */
        nb = (int)(n / 262144 + 1);
    size_t sure[256] = {0}, cand[256] = {0};
    struct sel s = {.x = x, .b = {nb, n}, .sure = sure, .cand = cand,
                    .need = K};
    s.hist = lbs_cbuf_get(&sc->hist, (size_t)nb * NSUB * NBIN * 4);
    if (!s.hist)
        return lbs_err_set(err, -ENOMEM, "topk: out of memory");
    size_t cap = K > n / 32 ? K : n / 32;
    for (int lev = 0; lev < MAXLEV; lev++) {
        size_t in = level(&s, lev);
        if (lev < MAXLEV - 1 && in <= cap)
            return gather_resolve(&s, K, idx, val, sc, err);
    }
    output_direct(&s, idx, val);
    return 0;
}

/* ---- the sampled bracket ----
 * From a sample, two magnitudes t <= t_hi that bracket the K-th largest
 * with overwhelming probability: every element with |x| >= t (about 1.3 K
 * of them) is gathered in one streaming pass (scan_ge), each block's
 * candidates stay in index order in its own segment, and right after its
 * scan (the segment still in cache) the block histograms them on PBIN
 * linear bins of (mag - t) >> sh spanning [t, t_hi] (the last bin also
 * takes everything above).  The bin holding the K-th largest then has a
 * few hundred members; a quickselect on them gives the exact threshold T
 * and a last pass over the candidates writes the K pairs.  The answer
 * does not depend on the sample: the K largest (ties included) are all
 * >= t, so they are all gathered, and every block keeps index order, so
 * ties still go to the lowest indices.  A bad bracket only costs time (a
 * big bin); when fewer than K were gathered or a block's share overflowed,
 * the full radix path runs. */
#define PRE_MIN_N 65536
#define PRE_SAMPLES 16384
#define PBIN 2048

size_t lbs_scan_ge(const float *x, size_t lo, size_t hi, uint32_t t,
                   uint32_t *gi, float *gv, size_t room)
{
    /* the dispatched kernel (core/kern/kern_tmpl.c) */
    return lbs_kern()->scan_ge(x, lo, hi, t, gi, gv, room);
}

/* The pre-filter's candidates: block b's are gi/gv[off[b], off[b] +
 * cnt[b]), all with magnitude bits >= t, and hist[b PBIN + j] counts
 * those whose key is j. */
struct cands {
    int nb;
    uint32_t t;
    int sh;
    size_t off[257], cnt[256];
    uint32_t *gi;
    float *gv;
    uint32_t *hist;
};

static inline uint32_t cand_key(const struct cands *c, uint32_t a)
{
    uint32_t d = (a - c->t) >> c->sh;
    return d < PBIN - 1 ? d : PBIN - 1;
}

/* The sampled bracket: t the r-th largest sample, and sh so that PBIN - 1
 * bins of 2^sh magnitude steps from t reach past t_hi, the r_hi-th. */
static void bracket(uint32_t *smp, size_t m, size_t r, size_t r_hi,
                    struct cands *c)
{
    c->t = lbs_kth_largest_u32(smp, m, r);
    /* the quickselect left the r largest in front */
    uint32_t hi = lbs_kth_largest_u32(smp, r, r_hi);
    uint64_t span = hi - c->t;
    c->sh = 0;
    while (((uint64_t)(PBIN - 1) << c->sh) <= span)
        c->sh++;
}

/* One pass over x: scan each block, then histogram its candidates while
 * they are in cache.  Returns nonzero when a block overflowed its share. */
static int gather_ge(const float *x, size_t n, size_t total, struct cands *c)
{
    int nb = c->nb, of = 0;
    for (int b = 0; b <= nb; b++)
        c->off[b] = total * (size_t)b / (size_t)nb;
#pragma omp parallel for schedule(static, 1) reduction(| : of)
    for (int b = 0; b < nb; b++) {
        size_t lo = n * (size_t)b / (size_t)nb,
               hi = n * (size_t)(b + 1) / (size_t)nb,
               o = c->off[b], cap = c->off[b + 1] - o;
        size_t got = lbs_scan_ge(x, lo, hi, c->t, c->gi + o, c->gv + o, cap);
        c->cnt[b] = got;
        of |= got > cap;
        uint32_t *h = c->hist + (size_t)b * PBIN;
        memset(h, 0, PBIN * sizeof *h);
        for (size_t j = o; j < o + got && got <= cap; j++)
            h[cand_key(c, lbs_mag(c->gv[j]))]++;
    }
    return of;
}

/* The bin holding the K-th largest candidate; *above: candidates in higher
 * bins, *in: the bin's size. */
static uint32_t cand_bin(const struct cands *c, size_t K, size_t *above,
                         size_t *in)
{
    size_t sum = 0;
    for (int j = PBIN - 1; j >= 0; j--) {
        size_t t = 0;
        for (int b = 0; b < c->nb; b++)
            t += c->hist[(size_t)b * PBIN + j];
        if (sum + t >= K) {
            *above = sum;
            *in = t;
            return (uint32_t)j;
        }
        sum += t;
    }
    *above = sum;   /* fewer than K candidates: the caller checked */
    *in = 0;
    return 0;
}

/* The members of bin `bin`: their magnitudes in mem and their positions
 * in the candidate arrays in pos, block by block (moff), index order. */
static void cand_members(const struct cands *c, uint32_t bin,
                         const size_t *moff, uint32_t *mem, uint32_t *pos)
{
    size_t got = 0;
    for (int b = 0; b < c->nb; b++)
        got += c->cnt[b];
#pragma omp parallel for schedule(static, 1) if (got > LBS_PAR_MIN)
    for (int b = 0; b < c->nb; b++) {
        size_t q = moff[b];
        for (size_t j = c->off[b]; j < c->off[b] + c->cnt[b]; j++) {
            uint32_t a = lbs_mag(c->gv[j]);
            if (cand_key(c, a) == bin) {
                mem[q] = a;
                pos[q++] = (uint32_t)j;
            }
        }
    }
}

/* Where each block's output goes: out_off[b], and split[b], the position
 * after the last member equal to the threshold T that the block keeps
 * (ties go to the lowest indices, so to the first blocks, and within a
 * block to the first members): the block keeps >= T before split[b] and
 * > T from there on.  bin holds the K-th largest, above candidates lie
 * in higher bins, in in the bin; mem has room for 3 in.  Returns T, the
 * K-th largest magnitude. */
static uint32_t cand_threshold(const struct cands *c, size_t K, uint32_t bin,
                               size_t above, size_t in, uint32_t *mem,
                               size_t *out_off, size_t *split)
{
    size_t moff[257];
    moff[0] = 0;
    for (int b = 0; b < c->nb; b++)
        moff[b + 1] = moff[b] + c->hist[(size_t)b * PBIN + bin];
    uint32_t *pos = mem + in, *sel = mem + 2 * in;
    cand_members(c, bin, moff, mem, pos);
    memcpy(sel, mem, in * sizeof *mem);
    uint32_t T = lbs_kth_largest_u32(sel, in, K - above);
    size_t gt[256], gtot = 0;
    for (int b = 0; b < c->nb; b++) {
        const uint32_t *h = c->hist + (size_t)b * PBIN;
        gt[b] = 0;
        for (uint32_t j = bin + 1; j < PBIN; j++)
            gt[b] += h[j];
        for (size_t j = moff[b]; j < moff[b + 1]; j++)
            gt[b] += mem[j] > T;
        gtot += gt[b];
    }
    size_t ties = K - gtot;
    out_off[0] = 0;
    for (int b = 0; b < c->nb; b++) {
        size_t q = 0;
        split[b] = c->off[b];
        for (size_t j = moff[b]; j < moff[b + 1] && q < ties; j++)
            if (mem[j] == T) {
                q++;
                split[b] = pos[j] + 1;
            }
        ties -= q;
        out_off[b + 1] = out_off[b] + gt[b] + q;
    }
    return T;
}

/* The K pairs in index order: each block's candidates >= T before its
 * split and > T after it (the kernel's compress-store, as the scan). */
static void cand_output(const struct cands *c, uint32_t T,
                        const size_t *out_off, const size_t *split,
                        uint32_t *idx, float *val)
{
    const struct lbs_kern *kn = lbs_kern();
#pragma omp parallel for schedule(static, 1) if (out_off[c->nb] > LBS_PAR_MIN)
    for (int b = 0; b < c->nb; b++) {
        size_t o = out_off[b], room = out_off[b + 1] - o,
               end = c->off[b] + c->cnt[b];
        size_t h = kn->filter_ge(c->gv, c->gi, c->off[b], split[b], T,
                                 idx + o, val + o, room);
        kn->filter_ge(c->gv, c->gi, split[b], end, T + 1, idx + o + h,
                      val + o + h, room - h);
    }
}

/* 1: done; 0: not applicable or unlucky (take the radix path); <0: error */
static int prefilter(const float *x, size_t n, size_t K, uint32_t *idx,
                     float *val, struct lbs_topk_scratch *sc,
                     struct lbs_err *err)
{
    size_t m = n / 16 < PRE_SAMPLES ? n / 16 : PRE_SAMPLES;
    double mu = (double)m * (double)K / (double)n;
    size_t r = (size_t)ceil(mu + 4.0 * sqrt(mu) + 4.0);
    double lo = floor(mu - 4.0 * sqrt(mu) - 4.0);
    size_t r_hi = lo < 1 ? 1 : (size_t)lo;
    if (n < PRE_MIN_N || r > m / 4)
        return 0;   /* not selective enough to pay off */
    uint32_t *smp = lbs_cbuf_get(&sc->smp, m * 4);
    if (!smp)
        return lbs_err_set(err, -ENOMEM, "topk: out of memory");
    lbs_sample_mags(x, n, lbs_rng_key(0x70b4, n, K), smp, m);
    struct cands c;
    bracket(smp, m, r, r_hi, &c);
    int nb = omp_get_max_threads();
    c.nb = nb > 256 ? 256 : nb;
    /* room for twice the expected count, so overflow is rare */
    size_t total = (size_t)(2.0 * (double)n * (double)r / (double)m) +
                   64 * (size_t)c.nb;
    total = total > n ? n : total;
    c.gi = lbs_cbuf_get(&sc->pidx, total * 4);
    c.gv = lbs_cbuf_get(&sc->pval, total * 4);
    c.hist = lbs_cbuf_get(&sc->hist, (size_t)c.nb * PBIN * 4);
    if (!c.gi || !c.gv || !c.hist)
        return lbs_err_set(err, -ENOMEM, "topk: out of memory");
    if (gather_ge(x, n, total, &c))
        return 0;
    size_t got = 0;
    for (int b = 0; b < c.nb; b++)
        got += c.cnt[b];
    if (got < K)
        return 0;
    size_t above, in;
    uint32_t bin = cand_bin(&c, K, &above, &in);
    uint32_t *mem = lbs_cbuf_get(&sc->cand, 3 * in * 4 + 4);
    if (!mem)
        return lbs_err_set(err, -ENOMEM, "topk: out of memory");
    size_t out_off[257], split[256];
    uint32_t T = cand_threshold(&c, K, bin, above, in, mem, out_off, split);
    cand_output(&c, T, out_off, split, idx, val);
    return 1;
}

int lbs_topk_select(const float *x, size_t n, size_t K, uint32_t *idx,
                    float *val, struct lbs_topk_scratch *sc,
                    struct lbs_err *err)
{
    int rc = K < n ? prefilter(x, n, K, idx, val, sc, err) : 0;
    if (rc)
        return rc < 0 ? rc : 0;
    return radix_select(x, n, K, idx, val, sc, err);
}

void lbs_topk_scratch_free(struct lbs_topk_scratch *s)
{
    lbs_cbuf_free(&s->smp);
    lbs_cbuf_free(&s->pidx);
    lbs_cbuf_free(&s->pval);
    lbs_cbuf_free(&s->hist);
    lbs_cbuf_free(&s->gidx);
    lbs_cbuf_free(&s->gval);
    lbs_cbuf_free(&s->cand);
}

/* ---- the sparse payload, shared with thresh ---- */

int lbs_sparse_decompress_add(const struct lbs_compressor *c,
                              const void *payload, size_t bytes, size_t n,
                              float alpha, float *out, struct lbs_err *err)
{
    if (bytes % 8)
        return lbs_err_set(err, -EINVAL, "%s: payload of %zu bytes is not "
                           "a list of (index, value) pairs", c->ops->name,
                           bytes);
    size_t m = bytes / 8;
    const uint32_t *idx = payload;
    const float *val = (const float *)payload + m;
    int bad = 0;
    /* indices are distinct within one payload: no write conflicts */
#pragma omp parallel for reduction(| : bad) schedule(static) \
    if (m > LBS_PAR_MIN)
    for (size_t j = 0; j < m; j++) {
        if (idx[j] < n)
            out[idx[j]] += alpha * val[j];
        else
            bad = 1;
    }
    return bad ? lbs_err_set(err, -EINVAL, "%s: payload index out of range "
                             "for a layer of %zu", c->ops->name, n)
               : 0;
}

/* ---- the compressor ---- */

struct topk_cfg {
    double k;
};

static const struct lbs_param_spec topk_params[] = {
    {"k", LBS_P_REAL, 0.01, 0, 1, LBS_P_MIN_OPEN, offsetof(struct topk_cfg, k),
     "density: K = max(1, round(k n)) elements kept", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

static int topk_init(struct lbs_compressor *c, struct lbs_err *err)
{
    c->state = calloc(1, sizeof(struct lbs_topk_scratch));
    return c->state ? 0 : lbs_err_set(err, -ENOMEM, "out of memory");
}

static void topk_fini(struct lbs_compressor *c)
{
    if (c->state)
        lbs_topk_scratch_free(c->state);
    free(c->state);
}

static size_t topk_max(const struct lbs_compressor *c, size_t n)
{
    const struct topk_cfg *k = c->cfg;
    return 8 * lbs_topk_count(k->k, n);
}

static size_t topk_bytes(struct lbs_compressor *c, size_t n,
                         const struct lbs_cctx *ctx)
{
    (void)ctx;
    return topk_max(c, n);
}

static int topk_compress(struct lbs_compressor *c, const float *x, size_t n,
                         const struct lbs_cctx *ctx, void *payload,
                         size_t *bytes, struct lbs_err *err)
{
    (void)ctx;
    const struct topk_cfg *k = c->cfg;
    size_t K = lbs_topk_count(k->k, n);
    uint32_t *idx = payload;
    *bytes = 8 * K;
    return lbs_topk_select(x, n, K, idx, (float *)payload + K, c->state, err);
}

static int topk_decompress_add(struct lbs_compressor *c, const void *payload,
                               size_t bytes, size_t n,
                               const struct lbs_cctx *ctx, float alpha,
                               float *out, struct lbs_err *err)
{
    (void)ctx;
    int rc = lbs_cmp_expect_bytes(c, bytes, topk_max(c, n), err);
    return rc ? rc
              : lbs_sparse_decompress_add(c, payload, bytes, n, alpha, out,
                                          err);
}

/* Invariant (lbs_compress_wrong): the kept values are exact and are the
 * largest |x| (a magnitude prefix); the payload is K indices and K
 * values, K = round(k n) clamped to [1, n]. */
static long topk_wrong(const struct lbs_compressor *c,
                       struct lbs_compress_check *ck)
{
    const struct topk_cfg *k = c->cfg;
    size_t n = ck->n, K = (size_t)(k->k * (double)n + 0.5);
    K = K < 1 ? 1 : K > n ? n : K;
    return lbs_cmp_sparse_wrong(ck, 1) + (ck->bytes != 8 * K);
}

/* The GPU kernel (core/cuda/compress.cu: the same radix select on the
 * device) and the cases tests/gpu/check_compress.c compares it with this
 * file on: payload, decode and residual bit-identical. */
static const struct lbs_compress_device_check topk_gpu_checks[] = {
    {"topk:k=0.01", 0},
    {"topk:k=0.001", 0},
    {"topk:k=0.3", 0},
    {"topk:k=1", 0},
    {"topk:k=0.01,ef=1", 1},
    {NULL, 0},
};
static void topk_gpu_hp(const void *cfg, struct lbs_compress_device_hp *hp)
{
    const struct topk_cfg *k = cfg;
    hp->k = k->k;
}
static const struct lbs_compress_device topk_gpu = {
    .kernel = LBS_CKERNEL_TOPK,
    .exact = 1,
    .checks = topk_gpu_checks,
    .hparams = topk_gpu_hp,
};

const struct lbs_compress_ops lbs_cmp_topk = {
    .name = "topk",
    .summary = "exact top-k by |x| (parallel radix select), index+value pairs",
    .params = topk_params,
    .cfg_size = sizeof(struct topk_cfg),
    .coll = LBS_COLL_ALLGATHER,
    /* memory traffic (lbs_compress_traffic): two reads of x (histogram,
     * gather), the pairs written; decoding a part reads it and updates its K
     * entries */
    .traffic = {.comp = 8, .comp_w = 1, .dec_once = 4,
                .dec_part = 0, .dec_w = 2, .known = 1},
    .ef_ok = 1,
    .init = topk_init,
    .fini = topk_fini,
    .wire_bytes = topk_bytes,
    .max_bytes = topk_max,
    .compress = topk_compress,
    .decompress_add = topk_decompress_add,
    .wrong = topk_wrong,
    .device = &topk_gpu,
};
