/* test_compress.c - the compressors' invariants.
 *
 *  - every compressor round-trips: payload size == lbs_compress_wire_bytes
 *    (or <= max for thresh), finite output, relative error within the
 *    compressor's bound;
 *  - error feedback: D(C(x)) + e_new == g + e_old to float rounding, over
 *    several steps, for every compressor that accepts ef;
 *  - topk returns exactly the K largest magnitudes, ties to the lowest
 *    indices, in ascending index order, on the gather, direct and K >= n
 *    paths, identically on 1 and 2 threads;
 *  - thresh selects a magnitude prefix within [lower K, upper K];
 *  - randk masks are identical across ranks (data and rank do not matter)
 *    and have density k (Binomial bound, fixed seed); cyclick covers every
 *    coordinate once per cycle;
 *  - QSGD is unbiased (mean of many draws), its mean and variance match a
 *    double-precision model, its draws are independent across neighbours
 *    and ranks and reproducible across threads; sign decodes to +-mean|x|;
 *  - PowerSGD reproduces an exact low-rank matrix;
 *  - the bytes the record backend logs for lbs_compress_exchange equal the
 *    compressor's wire bytes, in its declared collective, and the exchange
 *    over 4 identical fake ranks gives D(C(g));
 *  - the bad specs of issue 3 fail with one clear message.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/lbscale.h"

/* Gradient-like: N(0,1) times a log-normal scale per 256-element block. */
static float *grad(size_t n, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    /* salted so no compressor's mask stream coincides with the data's */
    uint64_t key = lbs_rng_key(lbs_mix64(seed ^ 0xda7a5eedc0ffeeull), 0, 0);
    for (size_t i = 0; i < n; i++) {
        double u1 = lbs_rng_uniform(key, 2 * i), u2 = lbs_rng_uniform(key, 2 * i + 1);
        double z = sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2);
        double b = lbs_rng_uniform(key, (uint64_t)1 << 62 | (i / 256));
        x[i] = (float)(z * exp(2.0 * (b - 0.5)));
    }
    return x;
}

static double nrm(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return sqrt(s);
}

static struct lbs_compressor *mk(const char *spec)
{
    struct lbs_compressor *c;
    struct lbs_err e = {{0}};
    int rc = lbs_compressor_new(spec, &c, &e);
    cr_assert_eq(rc, 0, "%s: %s", spec, e.msg);
    return c;
}

/* compress + decompress at (layer, step); returns bytes */
static size_t roundtrip(struct lbs_compressor *c, const float *x, size_t n,
                        int layer, long step, float *out, void **payload)
{
    struct lbs_err e = {{0}};
    size_t cap = lbs_compress_max_bytes(c, n), bytes = 0;
    void *p = malloc(cap + 16);
    cr_assert_eq(lbs_compress(c, x, n, layer, step, p, &bytes, &e), 0,
                 "%s: %s", lbs_compressor_name(c), e.msg);
    cr_assert_leq(bytes, cap, "%s: %zu > max %zu", lbs_compressor_name(c),
                  bytes, cap);
    cr_assert_eq(lbs_decompress(c, p, bytes, n, layer, step, out, &e), 0,
                 "%s: %s", lbs_compressor_name(c), e.msg);
    if (payload)
        *payload = p;
    else
        free(p);
    return bytes;
}

static const struct {
    const char *spec;
    double max_rel;     /* ||x - D(C(x))|| / ||x|| on grad() */
} all[] = {
    {"none", 0},
    {"fp16", 1e-3},
    {"bf16", 5e-3},
    {"topk:k=0.05", 0.98},
    {"thresh:k=0.05", 0.98},
    {"randk:k=0.05", 0.99},
    {"cyclick:k=0.05", 0.99},
    {"sign", 0.9},
    {"sign:scale=l2", 1.0},
    {"qsgd", 0.2},
    {"qsgd:s=1000", 0.02},
    {"powersgd:r=2", 1.0},
};
#define NALL (sizeof all / sizeof all[0])

Test(compress, roundtrip_every_compressor)
{
    const size_t n = 20011;   /* odd: partial sign byte, padded PowerSGD */
    float *x = grad(n, 1), *out = malloc(n * sizeof *out);
    double xn = nrm(x, n);
    for (size_t t = 0; t < NALL; t++) {
        struct lbs_compressor *c = mk(all[t].spec);
        size_t wire = lbs_compress_wire_bytes(c, n, 3, 7);
        size_t bytes = roundtrip(c, x, n, 3, 7, out, NULL);
        if (strncmp(all[t].spec, "thresh", 6))
            cr_assert_eq(bytes, wire, "%s: payload %zu, wire_bytes %zu",
                         all[t].spec, bytes, wire);
        else
            cr_assert_eq(wire, 0, "thresh: size depends on the data");
        for (size_t i = 0; i < n; i++)
            cr_assert(isfinite(out[i]), "%s: out[%zu] = %g", all[t].spec, i,
                      out[i]);
        double d = 0;
        for (size_t i = 0; i < n; i++)
            d += ((double)x[i] - out[i]) * ((double)x[i] - out[i]);
        double rel = sqrt(d) / xn;
        cr_assert_leq(rel, all[t].max_rel + 1e-9, "%s: rel err %g > %g",
                      all[t].spec, rel, all[t].max_rel);
        cr_assert_lt(bytes, 4 * n + 8, "%s", all[t].spec);
        lbs_compressor_free(c);
    }
    free(x);
    free(out);
}

Test(compress, error_feedback_conserves_the_signal)
{
    const size_t n = 5003;
    const char *specs[] = {"topk:k=0.02,ef=1", "thresh:k=0.02,ef=1",
                           "randk:k=0.1,ef=1", "randk:k=0.1,scale=1,ef=1",
                           "cyclick:k=0.1,ef=1", "sign:ef=1", "qsgd:s=3,ef=1",
                           "powersgd:r=1,ef=1"};
    float *out = malloc(n * sizeof *out), *eold = malloc(n * sizeof *eold);
    for (size_t t = 0; t < sizeof specs / sizeof *specs; t++) {
        struct lbs_compressor *c = mk(specs[t]);
        cr_assert(lbs_compressor_ef(c));
        for (long step = 1; step <= 4; step++) {
            float *g = grad(n, (uint64_t)step * 11);
            size_t en;
            const float *e = lbs_compress_residual(c, 2, &en);
            if (e)
                memcpy(eold, e, n * sizeof *e);
            else
                memset(eold, 0, n * sizeof *eold);
            roundtrip(c, g, n, 2, step, out, NULL);
            e = lbs_compress_residual(c, 2, &en);
            cr_assert(e && en == n, "%s: no residual", specs[t]);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++) {
                double lhs = (double)out[i] + e[i],
                       rhs = (double)g[i] + eold[i];
                double tol = 2e-7 * (fabs(out[i]) + fabs(e[i]) +
                                     fabs(g[i]) + fabs(eold[i])) + 1e-30;
                bad += fabs(lhs - rhs) > tol;
            }
            cr_assert_eq(bad, 0, "%s step %ld: %zu elements break "
                         "D + e_new == g + e_old", specs[t], step, bad);
            free(g);
        }
        lbs_compressor_free(c);
    }
    free(out);
    free(eold);
}

/* ---------------------------------------------------------------- topk */

/* a: the magnitude bits, which order as |x| and put NaN above inf */
struct ent { uint32_t a; uint32_t i; };

static int by_mag_then_index(const void *pa, const void *pb)
{
    const struct ent *a = pa, *b = pb;
    if (a->a != b->a)
        return a->a > b->a ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static int cmp_desc(const void *pa, const void *pb)
{
    float a = *(const float *)pa, b = *(const float *)pb;
    return (a < b) - (a > b);
}

static int by_index(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a > b) - (a < b);
}

/* The reference: sort by (|x| desc, index asc), take K, sort indices. */
static void check_topk(const float *x, size_t n, double k, int threads)
{
    omp_set_num_threads(threads);
    char spec[64];
    snprintf(spec, sizeof spec, "topk:k=%.17g", k);
    struct lbs_compressor *c = mk(spec);
    void *p;
    float *out = malloc(n * sizeof *out);
    size_t bytes = roundtrip(c, x, n, 0, 1, out, &p);
    size_t K = bytes / 8, want = (size_t)(k * (double)n + 0.5);
    want = want < 1 ? 1 : want > n ? n : want;
    cr_assert_eq(K, want, "n=%zu k=%g: K=%zu want %zu", n, k, K, want);
    struct ent *r = malloc(n * sizeof *r);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        r[i] = (struct ent){u & 0x7fffffffu, (uint32_t)i};
    }
    qsort(r, n, sizeof *r, by_mag_then_index);
    uint32_t *ref = malloc(K * sizeof *ref);
    for (size_t j = 0; j < K; j++)
        ref[j] = r[j].i;
    qsort(ref, K, sizeof *ref, by_index);
    const uint32_t *idx = p;
    const float *val = (const float *)p + K;
    for (size_t j = 0; j < K; j++) {
        cr_assert_eq(idx[j], ref[j], "n=%zu k=%g threads=%d: entry %zu has "
                     "index %u, want %u", n, k, threads, j, idx[j], ref[j]);
        cr_assert(!memcmp(&val[j], &x[idx[j]], 4), "value of entry %zu",
                  j);
    }
    free(r);
    free(ref);
    free(p);
    free(out);
    lbs_compressor_free(c);
    omp_set_num_threads(2);
}

/* The simulator's memory model of a compressor (lbs_compress_traffic):
 * the numbers of top-k's file, error feedback's read of g, rmw of e and
 * decode of its own payload on top, gathered vs summed payloads, and no
 * model where the cost is not memory traffic. */
Test(compress, traffic_model)
{
    struct lbs_compressor *c;
    struct lbs_err e;
    struct lbs_compress_traffic t;
    cr_assert_eq(lbs_compressor_new("topk:k=0.01", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_compress_traffic(c, 0.08, &t), 0);
    cr_assert_float_eq(t.compress, 8.08, 1e-12);
    cr_assert_float_eq(t.decompress_once, 4, 1e-12);
    cr_assert_float_eq(t.decompress_part, 0.16, 1e-12);
    cr_assert(t.per_rank);
    cr_assert_eq(lbs_compress_traffic(c, -1, &t), -ENOTSUP);
    lbs_compressor_free(c);
    cr_assert_eq(lbs_compressor_new("topk:k=0.01,ef=1", &c, &e), 0);
    cr_assert_eq(lbs_compress_traffic(c, 0.08, &t), 0);
    cr_assert_float_eq(t.compress, 8.08 + 12 + 4 + 0.16, 1e-12);
    lbs_compressor_free(c);
    cr_assert_eq(lbs_compressor_new("fp16", &c, &e), 0);
    cr_assert_eq(lbs_compress_traffic(c, 2, &t), 0);
    cr_assert_float_eq(t.compress, 6, 1e-12);
    cr_assert_float_eq(t.decompress_part, 10, 1e-12);
    cr_assert(!t.per_rank);
    lbs_compressor_free(c);
    /* PowerSGD: its products' traffic at small r (powersgd.c) */
    cr_assert_eq(lbs_compressor_new("powersgd:r=4", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_compress_traffic(c, 0.1, &t), 0);
    cr_assert_float_eq(t.compress, 8, 1e-12);
    cr_assert_float_eq(t.decompress_once, 0, 1e-12);
    cr_assert_float_eq(t.decompress_part, 8.1, 1e-12);
    cr_assert(!t.per_rank);
    lbs_compressor_free(c);
    const char *none[] = {"none"};
    for (size_t i = 0; i < 1; i++) {
        cr_assert_eq(lbs_compressor_new(none[i], &c, &e), 0, "%s", e.msg);
        cr_assert_eq(lbs_compress_traffic(c, 0.1, &t), -ENOTSUP, "%s",
                     none[i]);
        lbs_compressor_free(c);
    }
    /* every other compressor states one */
    const char *all[] = {"bf16", "thresh:k=0.01", "randk:k=0.01",
                         "cyclick:k=0.01", "sign", "qsgd"};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        cr_assert_eq(lbs_compressor_new(all[i], &c, &e), 0, "%s", e.msg);
        cr_assert_eq(lbs_compress_traffic(c, 0.1, &t), 0, "%s", all[i]);
        cr_assert(t.compress >= 4 && t.decompress_once >= 4, "%s", all[i]);
        lbs_compressor_free(c);
    }
}

/* The CPU bytes model of `lbscale compress`'s roofline: the 4n input
 * except where a call reads only what it keeps (cyclick and randk without
 * ef). */
Test(compress, cpu_bytes_model)
{
    struct lbs_compressor *c;
    struct lbs_err e;
    const size_t n = 1000000;
    const char *whole[] = {"topk:k=0.01", "randk:k=0.01,ef=1", "sign",
                           "qsgd", "cyclick:k=0.01,ef=1"};
    for (size_t i = 0; i < sizeof whole / sizeof *whole; i++) {
        cr_assert_eq(lbs_compressor_new(whole[i], &c, &e), 0, "%s", e.msg);
        cr_assert_float_eq(lbs_compress_cpu_bytes(c, n), 4.0 * n, 1e-6,
                           "%s", whole[i]);
        lbs_compressor_free(c);
    }
    /* k = 1: every line, every index, every value: 12 bytes each */
    cr_assert_eq(lbs_compressor_new("cyclick:k=1", &c, &e), 0);
    cr_assert_float_eq(lbs_compress_cpu_bytes(c, n), 12.0 * n, 1e-6);
    lbs_compressor_free(c);
    /* k = 0.01: 15% of the 64-byte lines (1 - 0.99^16 = 0.1486) plus 8
     * bytes per kept value: 0.674 per element */
    cr_assert_eq(lbs_compressor_new("cyclick:k=0.01", &c, &e), 0);
    double b = lbs_compress_cpu_bytes(c, n) / (double)n;
    cr_assert(b > 0.67 && b < 0.68, "%g bytes per element", b);
    lbs_compressor_free(c);
    /* randk: the same lines, and its mask's indices written and read
     * back: 0.594 + 12 x 0.01 = 0.714 per element; k = 1: 16 bytes */
    cr_assert_eq(lbs_compressor_new("randk:k=0.01", &c, &e), 0);
    b = lbs_compress_cpu_bytes(c, n) / (double)n;
    cr_assert(b > 0.71 && b < 0.72, "%g bytes per element", b);
    lbs_compressor_free(c);
    cr_assert_eq(lbs_compressor_new("randk:k=1", &c, &e), 0);
    cr_assert_float_eq(lbs_compress_cpu_bytes(c, n), 16.0 * n, 1e-6);
    lbs_compressor_free(c);
}

Test(topk, exactly_the_k_largest_with_ties_to_low_indices)
{
    size_t n = 150001;   /* above the pre-filter's 65536 */
    float *x = grad(n, 5);
    for (int th = 1; th <= 2; th++) {
        check_topk(x, n, 0.01, th);     /* gather path */
        check_topk(x, n, 0.3, th);
        check_topk(x, 60000, 0.01, th); /* below the pre-filter size */
        check_topk(x, 1000, 1e-9, th);  /* K = 1 */
        check_topk(x, 1000, 1, th);     /* K = n */
    }
    /* heavy ties: magnitudes from 7 values, signs mixed */
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int)(i * 2654435761u % 7) - 3) * 0.5f;
    check_topk(x, n, 0.05, 2);
    check_topk(x, n, 0.5, 2);
    /* all equal: the bin never shrinks, three levels + direct output */
    for (size_t i = 0; i < n; i++)
        x[i] = (i & 1) ? -1.5f : 1.5f;
    check_topk(x, n, 0.01, 2);
    check_topk(x, n, 0.01, 1);
    /* one top-level bin, distinct lower bits: level 1 then gather */
    for (size_t i = 0; i < n; i++)
        x[i] = 1.0f + (float)(i * 40503u % 65536) / 300000.0f;
    check_topk(x, n, 0.02, 2);
    /* the radix path with several blocks (> 2 x 262144 elements) */
    size_t big = 600011;
    float *y = grad(big, 13);
    check_topk(y, big, 0.3, 2);             /* no pre-filter: gather */
    for (size_t i = 0; i < big; i += 3)
        y[i] = 2.0f;                        /* a third tie at the top */
    check_topk(y, big, 0.2, 2);             /* pre-filter overflows */
    free(y);
    /* zeros with a few spikes */
    memset(x, 0, n * sizeof *x);
    for (size_t i = 0; i < n; i += 997)
        x[i] = -(float)i;
    check_topk(x, n, 0.001, 2);
    check_topk(x, n, 0.01, 2);
    free(x);
}

/* The pre-filter's candidate select (topk.c): the K-th largest inside a
 * run of ties that spans blocks (the tie quota ends in the first block,
 * in the second, or takes every tie), ties at the largest magnitude (the
 * last bin, T + 1 = 2^31 for NaN bits), a NaN among the kept, a bracket
 * much wider than the data's spread, 1 to 3 blocks. */
Test(topk, prefilter_candidates_ties_across_blocks)
{
    size_t n = 300007, K = 3000;   /* k = 0.01 */
    float *x = grad(n, 21), *y = malloc(n * sizeof *y);
    /* v: about the 0.6 % quantile of |x|, so ~0.6 % lie above it */
    float *srt = malloc(n * sizeof *srt);
    for (size_t i = 0; i < n; i++)
        srt[i] = fabsf(x[i]);
    qsort(srt, n, sizeof *srt, cmp_desc);
    float v = srt[(size_t)(0.006 * (double)n)];
    /* ties at v on every 23rd element of [lo, n): the quota (about 0.4 %
     * of n) ends in block 0, in block 1, or needs them all */
    const size_t lo[] = {0, n / 3, n / 2 + n / 4, n - 20000};
    for (size_t c = 0; c < sizeof lo / sizeof *lo; c++) {
        memcpy(y, x, n * sizeof *y);
        for (size_t i = lo[c]; i < n; i += 23)
            y[i] = (i & 1) ? -v : v;
        for (int th = 1; th <= 3; th++)
            check_topk(y, n, (double)K / (double)n, th);
    }
    /* ties at the top, NaN and inf among them: the last bin; then the
     * largest NaN as the K-th itself (T + 1 = 2^31 selects nothing) */
    memcpy(y, x, n * sizeof *y);
    uint32_t nanb = 0x7fffffffu;
    for (size_t i = 7; i < n; i += 97)
        y[i] = (i % 3) ? -3e38f : 3e38f;
    memcpy(&y[1234], &nanb, 4);
    y[4321] = -INFINITY;
    check_topk(y, n, (double)K / (double)n, 2);
    check_topk(y, n, 0.002, 2);
    for (size_t i = 5; i < n; i += 61)
        memcpy(&y[i], &nanb, 4);
    check_topk(y, n, (double)K / (double)n, 2);
    /* a narrow cluster near the K-th and a far tail: a wide bracket */
    for (size_t i = 0; i < n; i++)
        y[i] = (i % 101 == 0) ? 1e30f * (float)(i % 7 + 1)
                              : 1.0f + (float)(i % 4099) * 1e-7f;
    for (int th = 1; th <= 3; th++)
        check_topk(y, n, 0.02, th);
    free(srt);
    free(x);
    free(y);
}

Test(thresh, selects_a_magnitude_prefix_within_bounds)
{
    size_t n = 400000;
    float *x = grad(n, 9), *out = malloc(n * sizeof *out);
    const double ks[] = {0.001, 0.01, 0.1};
    for (size_t t = 0; t < 3; t++) {
        char spec[64];
        snprintf(spec, sizeof spec, "thresh:k=%g", ks[t]);
        struct lbs_compressor *c = mk(spec);
        for (long step = 1; step <= 3; step++) {
            size_t bytes = roundtrip(c, x, n, 1, step, out, NULL);
            size_t cnt = bytes / 8, K = (size_t)(ks[t] * n + 0.5);
            cr_assert_geq(cnt, (size_t)ceil(0.8 * K), "%s: %zu < 0.8 K",
                          spec, cnt);
            cr_assert_leq(cnt, (size_t)floor(1.3 * K), "%s: %zu > 1.3 K",
                          spec, cnt);
            float minsel = INFINITY, maxun = 0;
            size_t nz = 0;
            for (size_t i = 0; i < n; i++) {
                if (out[i] != 0) {
                    cr_assert_eq(out[i], x[i]);
                    minsel = fminf(minsel, fabsf(x[i]));
                    nz++;
                } else {
                    maxun = fmaxf(maxun, fabsf(x[i]));
                }
            }
            cr_assert_eq(nz, cnt);
            cr_assert_leq(maxun, minsel, "%s: unselected %g > selected %g",
                          spec, maxun, minsel);
        }
        lbs_compressor_free(c);
    }
    /* all zeros: every correction fails, the exact select bounds it */
    memset(x, 0, n * sizeof *x);
    struct lbs_compressor *c = mk("thresh:k=0.01");
    size_t bytes = roundtrip(c, x, n, 1, 1, out, NULL);
    cr_assert_leq(bytes / 8, (size_t)(1.3 * 0.01 * n));
    lbs_compressor_free(c);
    free(x);
    free(out);
}

/* --------------------------------------------------------- random masks */

static void nonzero_pattern(const char *spec, const float *x, size_t n,
                            long step, int rank, uint8_t *pat)
{
    struct lbs_compressor *c = mk(spec);
    lbs_compressor_set_rank(c, rank);
    float *out = malloc(n * sizeof *out);
    roundtrip(c, x, n, 4, step, out, NULL);
    for (size_t i = 0; i < n; i++)
        pat[i] = out[i] != 0;
    free(out);
    lbs_compressor_free(c);
}

Test(randk, masks_agree_across_ranks_and_have_density_k)
{
    const size_t n = 300000;
    const double k = 0.01;
    float *x1 = grad(n, 1), *x2 = grad(n, 2);
    uint8_t *a = malloc(n), *b = malloc(n);
    for (long step = 1; step <= 2; step++) {
        nonzero_pattern("randk:k=0.01,seed=7", x1, n, step, 0, a);
        nonzero_pattern("randk:k=0.01,seed=7", x2, n, step, 3, b);
        cr_assert(!memcmp(a, b, n), "step %ld: ranks disagree", step);
        nonzero_pattern("cyclick:k=0.01,seed=7", x1, n, step, 0, a);
        nonzero_pattern("cyclick:k=0.01,seed=7", x2, n, step, 5, b);
        cr_assert(!memcmp(a, b, n), "cyclic step %ld: ranks disagree", step);
    }
    /* density: Binomial(n, k) per step, 5 sigma over 10 steps pooled */
    struct lbs_compressor *c = mk("randk:k=0.01,seed=7");
    double total = 0;
    for (long s = 0; s < 10; s++)
        total += (double)lbs_compress_wire_bytes(c, n, 4, s) / 4;
    double mean = 10 * k * n, sd = sqrt(10 * n * k * (1 - k));
    cr_assert_lt(fabs(total - mean), 5 * sd, "randk density: %g kept of "
                 "%g expected", total, mean);
    /* different steps draw different masks */
    cr_assert_neq(lbs_compress_wire_bytes(c, n, 4, 1),
                  lbs_compress_wire_bytes(c, n, 4, 2));
    lbs_compressor_free(c);
    free(x1);
    free(x2);
    free(a);
    free(b);
}

/* core/mask.c's sweep (the kernel table's, 64 elements per step) against
 * the definition written out in full: i is in the mask iff the 61-bit
 * u_i = (byte i % 8 of draw i / 8) 2^53 + (draw 2^63 + i) >> 11 is below
 * k 2^61; the tie case is not special here (u_i is formed for every i). */
Test(randk, bernoulli_mask_matches_its_definition)
{
    const size_t n = 100003;
    uint32_t *idx = malloc(n * sizeof *idx), *ref = malloc(n * sizeof *ref);
    const double ks[] = {0.001, 0.01, 0.3, 1.0};
    for (int th = 1; th <= 2; th++) {
        omp_set_num_threads(th);
        for (size_t j = 0; j < 4; j++) {
            uint64_t key = lbs_rng_key(9, 4, 2);
            size_t m = 0;
            for (size_t i = 0; i < n; i++) {
                uint64_t top = lbs_rng_u64(key, i / 8) >> (8 * (i % 8)) & 255;
                uint64_t u = top << 53 | lbs_rng_u64(key, 1ull << 63 | i) >> 11;
                if (ks[j] >= 1 || u < (uint64_t)(ks[j] * 0x1p61))
                    ref[m++] = (uint32_t)i;
            }
            size_t got = lbs_mask_bernoulli(9, 4, 2, n, ks[j], idx);
            cr_assert_eq(got, m, "k=%g threads=%d: %zu vs %zu", ks[j], th,
                         got, m);
            cr_assert(!memcmp(idx, ref, m * sizeof *idx), "k=%g threads=%d",
                      ks[j], th);
        }
    }
    omp_set_num_threads(2);
    free(idx);
    free(ref);
}

Test(cyclick, every_coordinate_once_per_cycle)
{
    const size_t n = 10007;
    float *x = grad(n, 3), *out = malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] == 0 ? 1 : x[i];
    int *seen = calloc(n, sizeof *seen);
    struct lbs_compressor *c = mk("cyclick:k=0.125");
    for (long s = 16; s < 24; s++) {   /* 8 chunks, any 8 steps in a row */
        roundtrip(c, x, n, 0, s, out, NULL);
        for (size_t i = 0; i < n; i++)
            seen[i] += out[i] != 0;
    }
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(seen[i], 1, "coordinate %zu seen %d times", i, seen[i]);
    lbs_compressor_free(c);
    free(seen);
    free(x);
    free(out);
}

/* ------------------------------------------------------ quantisers */

Test(qsgd, unbiased_over_many_draws)
{
    const size_t n = 64;
    const long T = 4000;
    float *x = grad(n, 4), *out = malloc(n * sizeof *out);
    double *sum = calloc(n, sizeof *sum);
    struct lbs_compressor *c = mk("qsgd:s=2");
    for (long t = 0; t < T; t++) {
        roundtrip(c, x, n, 0, t, out, NULL);
        for (size_t i = 0; i < n; i++)
            sum[i] += out[i];
    }
    double xn = nrm(x, n);
    /* one draw deviates by at most norm/s: 6 sigma of the mean */
    double tol = 6 * (xn / 2) / 2 / sqrt((double)T);
    for (size_t i = 0; i < n; i++)
        cr_assert_lt(fabs(sum[i] / T - x[i]), tol, "element %zu: mean %g vs "
                     "%g", i, sum[i] / T, x[i]);
    lbs_compressor_free(c);
    free(x);
    free(out);
    free(sum);
}

/* QSGD's statistics against a double-precision model of the quantiser
 * (independent of the float kernel): per element, y = s |x| / ||x_B||,
 * the level is floor(y) or floor(y) + 1 with P(+1) = frac(y), so the mean
 * of D(x)_i is x_i and its variance (||x_B|| / s)^2 f (1 - f).  Over T
 * steps: every level in {floor(y), ceil(y)}, every mean within 5 sigma of
 * x_i, the summed sample variance within 3% of the model's, and the mean
 * squared error within the paper's bound min(n_B/s^2, sqrt(n_B)/s)
 * ||x_B||^2. */
Test(qsgd, mean_and_variance_match_the_model)
{
    const size_t n = 512, B = 64;
    const long T = 3000;
    const double s = 5;
    float *x = grad(n, 11), *out = malloc(n * sizeof *out);
    double *sum = calloc(n, sizeof *sum), *sq = calloc(n, sizeof *sq);
    double ref_nb[512 / 64], mse = 0;
    for (size_t b = 0; b < n / B; b++)
        ref_nb[b] = nrm(x + b * B, B);
    struct lbs_compressor *c = mk("qsgd:s=5,bucket=64");
    for (long t = 0; t < T; t++) {
        roundtrip(c, x, n, 3, t, out, NULL);
        for (size_t i = 0; i < n; i++) {
            double nb = ref_nb[i / B], y = s * fabs(x[i]) / nb;
            double lvl = fabs(out[i]) * s / nb;   /* the decoded level */
            cr_assert(lvl > floor(y) - 1e-4 && lvl < floor(y) + 1 + 1e-4,
                      "element %zu: level %g for y = %g", i, lvl, y);
            double d = out[i] - x[i];
            sum[i] += out[i];
            sq[i] += d * d;
            mse += d * d;
        }
    }
    double vsum = 0, vref = 0;
    for (size_t i = 0; i < n; i++) {
        double nb = ref_nb[i / B], y = s * fabs(x[i]) / nb, f = y - floor(y);
        double var = nb / s * nb / s * f * (1 - f);
        double sd = sqrt(var / T) + 1e-6 * fabs(x[i]);
        cr_assert_leq(fabs(sum[i] / T - x[i]), 5 * sd, "element %zu: mean %g "
                      "vs %g (sd %g)", i, sum[i] / T, x[i], sd);
        vsum += sq[i] / T;
        vref += var;
    }
    cr_assert_lt(fabs(vsum / vref - 1), 0.03, "variance %g, model %g", vsum,
                 vref);
    double bound = 0;
    for (size_t b = 0; b < n / B; b++)
        bound += fmin(B / (s * s), sqrt((double)B) / s) * ref_nb[b] * ref_nb[b];
    cr_assert_leq(mse / T, bound, "mse %g above the bound %g", mse / T, bound);
    lbs_compressor_free(c);
    free(x);
    free(out);
    free(sum);
    free(sq);
}

/* The draws are independent where QSGD needs them to be.  With |x_i|
 * all equal, n = 4096 and s = 32, y = s |x_i| / ||x|| = 1/2 exactly, so a
 * level is 1 with probability 1/2 from the top bit of its draw: the bits
 * of neighbours (lags 1 to 8), of two ranks on the same element and of
 * consecutive steps must be uncorrelated (|corr| < 5 / sqrt(samples)) and
 * balanced.  And reproducible: the same (seed, step, layer, rank) gives
 * the same payload at 1 and 2 threads, on the bucketed and the
 * whole-layer paths. */
Test(qsgd, draws_independent_and_reproducible)
{
    const size_t n = 4096;
    const long T = 50;
    float *x = malloc(n * sizeof *x), *o0 = malloc(n * sizeof *o0),
          *o1 = malloc(n * sizeof *o1), *prev = calloc(n, sizeof *prev);
    for (size_t i = 0; i < n; i++)
        x[i] = i % 3 ? 0.25f : -0.25f;
    struct lbs_compressor *c0 = mk("qsgd:s=32,bucket=0"),
                          *c1 = mk("qsgd:s=32,bucket=0");
    lbs_compressor_set_rank(c1, 1);
    double lag[9] = {0}, ranks = 0, steps = 0, ones = 0;
    for (long t = 0; t < T; t++) {
        roundtrip(c0, x, n, 0, t, o0, NULL);
        roundtrip(c1, x, n, 0, t, o1, NULL);
        for (size_t i = 0; i < n; i++) {
            double b0 = o0[i] != 0 ? 1 : -1, b1 = o1[i] != 0 ? 1 : -1;
            ones += b0;
            ranks += b0 * b1;
            if (t > 0)
                steps += b0 * (prev[i] != 0 ? 1 : -1);
            for (size_t l = 1; l <= 8 && i + l < n; l++)
                lag[l] += b0 * (o0[i + l] != 0 ? 1 : -1);
        }
        memcpy(prev, o0, n * sizeof *o0);
    }
    double m = (double)n * T, lim = 5 / sqrt(m * 0.99);
    cr_assert_lt(fabs(ones / m), lim, "level 1 in %g of draws",
                 (ones / m + 1) / 2);
    cr_assert_lt(fabs(ranks / m), lim, "ranks correlated: %g", ranks / m);
    cr_assert_lt(fabs(steps / (m - n)), lim * 1.01, "steps correlated: %g",
                 steps / (m - n));
    for (size_t l = 1; l <= 8; l++)
        cr_assert_lt(fabs(lag[l] / (m - (double)l * T)), lim * 1.01,
                     "lag %zu correlated: %g", l, lag[l] / (m - (double)l * T));
    lbs_compressor_free(c0);
    lbs_compressor_free(c1);
    free(x);
    free(o0);
    free(o1);
    free(prev);
    const char *specs[] = {"qsgd", "qsgd:bucket=0,s=300"};
    const size_t big = 100003;   /* above LBS_PAR_MIN: threads split it */
    float *xb = grad(big, 13);
    for (int k = 0; k < 2; k++) {
        void *p[3];
        struct lbs_compressor *c = mk(specs[k]);
        float *ob = malloc(big * sizeof *ob);
        for (int th = 1; th <= 2; th++) {
            omp_set_num_threads(th);
            roundtrip(c, xb, big, 2, 7, ob, &p[th - 1]);
        }
        roundtrip(c, xb, big, 2, 8, ob, &p[2]);
        size_t bytes = lbs_compress_max_bytes(c, big);
        cr_assert(!memcmp(p[0], p[1], bytes), "%s: 1 and 2 threads differ",
                  specs[k]);
        cr_assert(memcmp(p[0], p[2], bytes), "%s: steps 7 and 8 agree",
                  specs[k]);
        for (int j = 0; j < 3; j++)
            free(p[j]);
        free(ob);
        lbs_compressor_free(c);
    }
    omp_set_num_threads(2);
    free(xb);
}

/* PowerSGD's flop model and sgemm shapes (lbs_compress_flops): the
 * factors are the wire payload, the sgemm calls cover the full rows of
 * the layer, the counts follow powersgd.c's formulas; a compressor with no
 * matrix products, and a layer sent raw, answer -ENOTSUP. */
Test(powersgd, flop_model_and_shapes)
{
    const size_t n = 10007 * 3 + 5;
    struct lbs_compressor *c = mk("powersgd:r=3");
    struct lbs_compress_flops f;
    cr_assert_eq(lbs_compress_flops(c, n, &f), 0);
    cr_assert_eq(4 * (f.p_elems + f.q_elems),
                 lbs_compress_wire_bytes(c, n, 0, 0));
    cr_assert_eq(f.ngemm, 3);
    size_t full = f.g[0].m, cols = f.g[0].k, rows = f.p_elems / 3;
    cr_assert_eq(f.g[1].m, cols);
    cr_assert_eq(f.g[1].k, full);
    cr_assert_eq(f.g[2].m * f.g[2].n, full * cols);
    cr_assert(full * cols <= n && n - full * cols < cols);
    cr_assert_eq(f.q_elems, cols * 3);
    cr_assert_float_eq(f.compress, 4.0 * n * 3 + 2 * (2.0 * rows * 9 - 18),
                       1e-6);
    cr_assert_float_eq(f.decompress, 2.0 * n * 3, 1e-6);
    cr_assert_float_eq(f.gemm, 6.0 * full * cols * 3, 1e-6);
    cr_assert_eq(lbs_compress_flops(c, 8, &f), -ENOTSUP, "raw layer");
    lbs_compressor_free(c);
    c = mk("topk:k=0.01");
    cr_assert_eq(lbs_compress_flops(c, n, &f), -ENOTSUP);
    lbs_compressor_free(c);
}

Test(sign, decodes_to_plus_minus_mean_abs)
{
    const size_t n = 1003;
    float *x = grad(n, 8), *out = malloc(n * sizeof *out);
    x[5] = 0.0f;
    x[6] = -0.0f;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += fabs(x[i]);
    s /= n;
    struct lbs_compressor *c = mk("sign");
    cr_assert_eq(roundtrip(c, x, n, 0, 1, out, NULL), 4 + (n + 7) / 8);
    for (size_t i = 0; i < n; i++) {
        cr_assert_float_eq(fabs(out[i]), s, 1e-6 * s);
        cr_assert_eq(out[i] < 0, x[i] < 0, "element %zu", i);
    }
    lbs_compressor_free(c);
    free(x);
    free(out);
}

Test(fp16, software_rounding_matches_the_hardware)
{
    size_t bad = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += 4099) {
        uint32_t v = (uint32_t)u;
        float f;
        memcpy(&f, &v, 4);
        _Float16 h = (_Float16)f;
        uint16_t hb;
        memcpy(&hb, &h, 2);
        uint16_t sb = lbs_f32_to_f16_bits(f);
        if (isnan(f))
            bad += (sb & 0x7c00) != 0x7c00 || !(sb & 0x3ff);
        else
            bad += sb != hb;
        float back = lbs_f16_bits_to_f32(hb);
        if (!isnan(f) && back != (float)h)
            bad++;
    }
    cr_assert_eq(bad, 0, "%zu conversions differ from _Float16", bad);
    /* and the compressor (F16C when present) agrees with the cast */
    const size_t n = 4099;
    float *x = grad(n, 6), *out = malloc(n * sizeof *out);
    x[0] = 70000.0f;
    x[1] = 1e-8f;
    struct lbs_compressor *c = mk("fp16");
    roundtrip(c, x, n, 0, 0, out, NULL);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(out[i], (float)(_Float16)x[i], "element %zu", i);
    lbs_compressor_free(c);
    free(x);
    free(out);
}

Test(powersgd, reproduces_a_low_rank_matrix)
{
    const size_t R = 60, C = 50, n = R * C;
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    for (size_t i = 0; i < R; i++)
        for (size_t j = 0; j < C; j++)
            x[i * C + j] = (float)(sin(0.1 * i + 1) * cos(0.3 * j) +
                                   0.5 * cos(0.2 * i) * sin(0.7 * j + 2));
    struct lbs_compressor *c = mk("powersgd:r=2,rows=60");
    cr_assert_eq(lbs_compress_wire_bytes(c, n, 0, 1), 4 * 2 * (R + C));
    roundtrip(c, x, n, 0, 1, out, NULL);
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d += ((double)x[i] - out[i]) * ((double)x[i] - out[i]);
    cr_assert_lt(sqrt(d) / nrm(x, n), 1e-4, "rank-2 matrix not reproduced: "
                 "rel err %g", sqrt(d) / nrm(x, n));
    lbs_compressor_free(c);
    /* a tiny layer travels raw */
    c = mk("powersgd:r=4");
    cr_assert_eq(lbs_compress_wire_bytes(c, 30, 0, 1), 120);
    lbs_compressor_free(c);
    free(x);
    free(out);
}

/* ---------------------------------------------- exchange and record */

Test(exchange, record_bytes_equal_wire_bytes)
{
    const size_t n = 10007;
    const int P = 4;
    float *x = grad(n, 12), *g = malloc(n * sizeof *g),
          *ref = malloc(n * sizeof *ref);
    for (size_t t = 0; t < NALL; t++) {
        struct lbs_comm *comm;
        struct lbs_err e = {{0}};
        cr_assert_eq(lbs_comm_record_new(P, &comm, &e), 0);
        struct lbs_compressor *c = mk(all[t].spec), *c1 = mk(all[t].spec);
        for (long step = 1; step <= 2; step++) {
            lbs_comm_record_clear(comm);
            size_t wire = lbs_compress_wire_bytes(c, n, 5, step);
            size_t bytes = roundtrip(c1, x, n, 5, step, ref, NULL);
            memcpy(g, x, n * sizeof *g);
            cr_assert_eq(lbs_compress_exchange(c, comm, g, n, 5, step, &e), 0,
                         "%s: %s", all[t].spec, e.msg);
            size_t tot[LBS_COLL_COUNT], calls[LBS_COLL_COUNT];
            lbs_comm_record_totals(comm, tot, calls);
            enum lbs_coll k = lbs_compressor_collective(c);
            if (wire == 0) {   /* thresh: the compressed size + 8 B sizes */
                cr_assert_eq(k, LBS_COLL_ALLGATHERV);
                cr_assert_eq(tot[k], bytes, "%s: logged %zu, payload %zu",
                             all[t].spec, tot[k], bytes);
                cr_assert_eq(tot[LBS_COLL_ALLGATHER], 8);
            } else {
                cr_assert_eq(tot[k], wire, "%s: logged %zu in %s, wire %zu",
                             all[t].spec, tot[k], lbs_coll_name(k), wire);
                cr_assert_eq(bytes, wire);
            }
            size_t other = 0;
            for (int j = 0; j < LBS_COLL_COUNT; j++)
                other += j != (int)k && j != LBS_COLL_ALLGATHER ? tot[j] : 0;
            cr_assert_eq(other, 0, "%s: bytes in other collectives",
                         all[t].spec);
            size_t ne;
            const struct lbs_comm_record_entry *en =
                lbs_comm_record_entries(comm, &ne);
            for (size_t j = 0; j < ne; j++) {
                cr_assert_eq(en[j].layer, 5);
                cr_assert_eq(en[j].step, step);
            }
            /* P identical ranks average to one rank's D(C(x)) */
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < n; i++)
                if (fabs(g[i] - ref[i]) > 1e-5 * (fabs(ref[i]) + 1e-3) &&
                    !bad++)
                    first = i;
            cr_assert_eq(bad, 0, "%s: %zu elements differ, first %zu: %g vs "
                         "%g", all[t].spec, bad, first, g[first], ref[first]);
        }
        lbs_compressor_free(c);
        lbs_compressor_free(c1);
        lbs_comm_free(comm);
    }
    free(x);
    free(g);
    free(ref);
}

/* fp16 and bf16 are one allreduce of n elements of their own 2-byte
 * type (was: an allgather of bytes), and what comes back is the mean:
 * record:3 sums 3 identical ranks with one rounding, so the result is
 * D(C(x)) to one more rounding of the format; at 4096 ranks 20.0 sums
 * past binary16's 65504 to inf, while bfloat16 has fp32's range. */
Test(exchange, half_compressors_allreduce_in_their_format)
{
    static const struct {
        const char *spec;
        enum lbs_dtype t;
        double u;                   /* unit roundoff */
    } h[] = {{"fp16", LBS_FLOAT16, 0x1p-11}, {"bf16", LBS_BFLOAT16, 0x1p-8}};
    const size_t n = 4099;
    float *x = grad(n, 21), *g = malloc(n * sizeof *g),
          *ref = malloc(n * sizeof *ref);
    for (size_t t = 0; t < 2; t++) {
        struct lbs_compressor *c = mk(h[t].spec);
        struct lbs_comm *comm;
        struct lbs_err e;
        cr_assert_eq(lbs_compressor_collective(c), LBS_COLL_ALLREDUCE);
        cr_assert_eq(lbs_comm_record_new(3, &comm, &e), 0);
        roundtrip(c, x, n, 2, 1, ref, NULL);
        memcpy(g, x, n * sizeof *g);
        cr_assert_eq(lbs_compress_exchange(c, comm, g, n, 2, 1, &e), 0, "%s",
                     e.msg);
        size_t ne;
        const struct lbs_comm_record_entry *en =
            lbs_comm_record_entries(comm, &ne);
        cr_assert_eq(ne, 1, "%s: %zu calls", h[t].spec, ne);
        cr_assert_eq(en[0].kind, LBS_COLL_ALLREDUCE, "%s", h[t].spec);
        cr_assert_eq(en[0].dtype, h[t].t, "%s", h[t].spec);
        cr_assert_eq(en[0].count, n);
        cr_assert_eq(en[0].bytes, 2 * n);
        for (size_t i = 0; i < n; i++)
            cr_assert_leq(fabs(g[i] - ref[i]),   /* + float's own 1/3 */
                          (h[t].u + 0x1p-21) * fabs(ref[i]),
                          "%s element %zu: %g vs %g", h[t].spec, i, g[i],
                          ref[i]);
        lbs_comm_free(comm);
        cr_assert_eq(lbs_comm_record_new(4096, &comm, &e), 0);
        float v = 20.0f;
        cr_assert_eq(lbs_compress_exchange(c, comm, &v, 1, 3, 1, &e), 0);
        if (h[t].t == LBS_FLOAT16)
            cr_assert(isinf(v), "fp16: 4096 x 20 summed to %g", v);
        else
            cr_assert_float_eq(v, 20.0f, 0, "bf16: 4096 x 20 / 4096 = %g", v);
        lbs_comm_free(comm);
        lbs_compressor_free(c);
    }
    free(x);
    free(g);
    free(ref);
}

Test(exchange, powersgd_uses_two_allreduces)
{
    struct lbs_comm *comm;
    struct lbs_err e;
    cr_assert_eq(lbs_comm_new("record:8", &comm, &e), 0, "%s", e.msg);
    cr_assert_eq(comm->size, 8);
    const size_t n = 64 * 100;
    float *g = grad(n, 2);
    struct lbs_compressor *c = mk("powersgd:r=3,rows=64,ef=1");
    cr_assert_eq(lbs_compress_exchange(c, comm, g, n, 0, 1, &e), 0, "%s",
                 e.msg);
    size_t ne;
    const struct lbs_comm_record_entry *en = lbs_comm_record_entries(comm, &ne);
    cr_assert_eq(ne, 2);
    cr_assert_eq(en[0].kind, LBS_COLL_ALLREDUCE);
    cr_assert_eq(en[0].bytes, 4 * 3 * 64);
    cr_assert_eq(en[1].bytes, 4 * 3 * 100);
    lbs_compressor_free(c);
    lbs_comm_free(comm);
    free(g);
}

Test(record, byte_convention)
{
    struct lbs_comm *c;
    struct lbs_err e;
    cr_assert_eq(lbs_comm_record_new(3, &c, &e), 0);
    float buf[12] = {1, 2, 3, 4};
    lbs_comm_set_step(c, 9);
    cr_assert_eq(lbs_allreduce(c, buf, 4, LBS_FLOAT32, LBS_SUM, 2), 0);
    cr_assert_float_eq(buf[1], 6.0f, 0);
    cr_assert_eq(lbs_allgather(c, buf, buf, 4, LBS_FLOAT32, 2), 0);
    cr_assert_float_eq(buf[9], 6.0f, 0);
    int64_t big[9] = {0};
    cr_assert_eq(lbs_alltoall(c, big, big, 3, LBS_INT64, -1), 0);
    cr_assert_eq(lbs_barrier(c), 0);
    size_t ne;
    const struct lbs_comm_record_entry *en = lbs_comm_record_entries(c, &ne);
    cr_assert_eq(ne, 4);
    cr_assert_eq(en[0].bytes, 16);
    cr_assert_eq(en[0].step, 9);
    cr_assert_eq(en[0].layer, 2);
    cr_assert_eq(en[1].bytes, 16);
    cr_assert_eq(en[2].bytes, 3 * 3 * 8);
    cr_assert_eq(en[3].bytes, 0);
    cr_assert_str_eq(lbs_coll_name(en[2].kind), "alltoall");
    lbs_comm_free(c);
    cr_assert_eq(lbs_comm_new("record:0", &c, &e), -EINVAL);
    cr_assert_eq(lbs_comm_new("record", &c, &e), 0);
    cr_assert_eq(c->size, 1);
    lbs_comm_free(c);
}

/* float16/bfloat16 through record and self: 2 bytes per element in the
 * log, SUM = size x value rounded once to the format (inf where it
 * overflows), MAX untouched, blocks of 2 bytes copied and no more. */
Test(record, half_dtypes)
{
    cr_assert_eq(lbs_dtype_size(LBS_FLOAT16), 2);
    cr_assert_eq(lbs_dtype_size(LBS_BFLOAT16), 2);
    cr_assert_eq(lbs_dtype_size((enum lbs_dtype)99), 0);
    struct lbs_comm *c;
    struct lbs_err e;
    cr_assert_eq(lbs_comm_record_new(3, &c, &e), 0);
    const float v[4] = {1.5f, -0.1f, 30000.0f, 1.0f / 3};
    uint16_t h[4], b[4], orig[4];
    for (int i = 0; i < 4; i++) {
        h[i] = lbs_f32_to_f16_bits(v[i]);
        b[i] = lbs_f32_to_bf16_bits(i == 2 ? 3e38f : v[i]);
    }
    memcpy(orig, h, sizeof h);
    cr_assert_eq(lbs_allreduce(c, h, 4, LBS_FLOAT16, LBS_MAX, 1), 0);
    cr_assert_eq(memcmp(h, orig, sizeof h), 0, "MAX changed the values");
    cr_assert_eq(lbs_allreduce(c, h, 4, LBS_FLOAT16, LBS_SUM, 1), 0);
    cr_assert_eq(lbs_allreduce(c, b, 4, LBS_BFLOAT16, LBS_SUM, 2), 0);
    for (int i = 0; i < 4; i++) {
        float wh = 3 * lbs_f16_bits_to_f32(orig[i]);
        cr_assert_eq(h[i], lbs_f32_to_f16_bits(wh), "f16 %d: 0x%04x", i, h[i]);
        float wb = 3 * lbs_bf16_bits_to_f32(lbs_f32_to_bf16_bits(
                           i == 2 ? 3e38f : v[i]));
        cr_assert_eq(b[i], lbs_f32_to_bf16_bits(wb), "bf16 %d: 0x%04x", i,
                     b[i]);
    }
    cr_assert_eq(lbs_f16_bits_to_f32(h[0]), 4.5f);
    cr_assert(isinf(lbs_f16_bits_to_f32(h[2])), "3 x 30000 fits binary16?");
    cr_assert(isinf(lbs_bf16_bits_to_f32(b[2])), "3 x 3e38 fits bfloat16?");
    cr_assert_eq(lbs_bf16_bits_to_f32(b[0]), 4.5f);
    uint16_t ag[13];
    ag[12] = 0xbeef;
    cr_assert_eq(lbs_allgather(c, b, ag, 4, LBS_BFLOAT16, 2), 0);
    for (int r = 0; r < 3; r++)
        cr_assert_eq(memcmp(ag + 4 * r, b, sizeof b), 0, "block %d", r);
    cr_assert_eq(ag[12], 0xbeef, "wrote past 3 blocks of 4 halves");
    size_t ne;
    const struct lbs_comm_record_entry *en = lbs_comm_record_entries(c, &ne);
    cr_assert_eq(ne, 4);
    cr_assert_eq(en[0].dtype, LBS_FLOAT16);
    cr_assert_eq(en[1].bytes, 8);
    cr_assert_eq(en[2].dtype, LBS_BFLOAT16);
    cr_assert_eq(en[2].bytes, 8);
    cr_assert_eq(en[3].bytes, 8);   /* allgather: the send count */
    lbs_comm_free(c);
    cr_assert_eq(lbs_comm_self_new(&c, &e), 0);
    uint16_t one[5] = {1, 2, 3, 4, 0xbeef};
    memcpy(ag, h, sizeof h);
    cr_assert_eq(lbs_allreduce(c, ag, 4, LBS_FLOAT16, LBS_SUM, 0), 0);
    cr_assert_eq(memcmp(ag, h, sizeof h), 0, "self SUM is not a no-op");
    cr_assert_eq(lbs_allgather(c, h, one, 4, LBS_FLOAT16, 0), 0);
    cr_assert_eq(memcmp(one, h, sizeof h), 0);
    cr_assert_eq(one[4], 0xbeef);
    lbs_comm_free(c);
}

/* ------------------------------------------------------------ bad input */

static void bad(const char *spec, int code, const char *needle)
{
    struct lbs_compressor *c = NULL;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_compressor_new(spec, &c, &e), code, "'%s' -> %s", spec,
                 e.msg);
    cr_assert_null(c);
    cr_assert(strstr(e.msg, needle), "'%s' -> '%s' lacks '%s'", spec, e.msg,
              needle);
    cr_assert(!strchr(e.msg, '\n'));
}

Test(compress, bad_specs_fail_clearly)
{
    bad("topk:k=0", -EINVAL, "'k'");
    bad("topk:k=-0.1", -EINVAL, "out of range");
    bad("thresh:k=1.5", -EINVAL, "'k'");
    bad("randk:k=2", -EINVAL, "'k'");
    bad("powersgd:r=0", -EINVAL, "'r'");
    bad("powersgd:r=1.5", -EINVAL, "integer");
    bad("qsgd:s=0", -EINVAL, "'s'");
    bad("zip", -ENOENT, "unknown compressor 'zip'");
    bad("none:ef=1", -EINVAL, "lossless");
    bad("fp16:ef=1", -EINVAL, "ef=1");
    bad("bf16:ef=1", -EINVAL, "ef=1");
    bad("bf16:type=fp16", -ENOENT, "lbscale compress --help bf16");
    bad("topk:zz=1", -ENOENT, "lbscale compress --help topk");
    bad("topk:k=abc", -EINVAL, "not a finite number");
    bad("sign:scale=l3", -EINVAL, "unknown choice");
    bad("", -EINVAL, "empty");
    /* ef=0 is always accepted, and the effective keys are listed */
    struct lbs_compressor *c = mk("fp16:ef=0");
    lbs_compressor_free(c);
    c = mk("topk:ef=1");
    cr_assert_str_eq(lbs_compressor_params(c), "k=0.01,ef=1");
    lbs_compressor_free(c);
    /* a layer may not change size under a stateful compressor */
    c = mk("topk:k=0.5,ef=1");
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, p[64];
    size_t b;
    struct lbs_err e;
    cr_assert_eq(lbs_compress(c, x, 8, 0, 1, p, &b, &e), 0);
    cr_assert_eq(lbs_compress(c, x, 4, 0, 2, p, &b, &e), -EINVAL);
    cr_assert(strstr(e.msg, "changed size"), "%s", e.msg);
    cr_assert_eq(lbs_compress(c, x, 0, 1, 2, p, &b, &e), -EINVAL);
    cr_assert_eq(lbs_compress(c, x, 4, -1, 2, p, &b, &e), -EINVAL);
    lbs_compressor_free(c);
    cr_assert_eq(lbs_compressor_help("nope", stdout), -ENOENT);
}

/* lbs_compressor_param: what the CUDA compressors read their keys from. */
Test(compress, param_reads_effective_keys)
{
    struct lbs_compressor *c = mk("randk:k=0.25,seed=7,ef=1");
    double v = -1;
    cr_assert_eq(lbs_compressor_param(c, "k", &v), 0);
    cr_assert_eq(v, 0.25);
    cr_assert_eq(lbs_compressor_param(c, "seed", &v), 0);
    cr_assert_eq(v, 7);
    cr_assert_eq(lbs_compressor_param(c, "scale", &v), 0);   /* default */
    cr_assert_eq(v, 0);
    cr_assert_eq(lbs_compressor_param(c, "ef", &v), 0);
    cr_assert_eq(v, 1);
    cr_assert_eq(lbs_compressor_param(c, "r", &v), -ENOENT);
    lbs_compressor_free(c);
    c = mk("sign:scale=l2");   /* an enum key gives its index */
    cr_assert_eq(lbs_compressor_param(c, "scale", &v), 0);
    cr_assert_eq(v, 1);
    lbs_compressor_free(c);
}
