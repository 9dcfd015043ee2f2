/* qsgd_tmpl.c - QSGD's levels (qsgd.c, qsgd_kern.h), one table per level
 * (core/kern/kfam.h); elementwise, the same bits at every level. */
#include "kern_tmpl.h"
#include "qsgd_kern.h"

/* QSGD's levels (qsgd.c, where the hash and the rounding are explained).
 * All float, all 32-bit integer: every step is one IEEE operation or an
 * exact one, so the loop vectorises at every level (32-bit multiplies,
 * truncating conversions, compares) and gives the same bits at each. */
static inline uint32_t F(qsgd_hash)(uint32_t i, uint32_t k0, uint32_t k1)
{
    uint32_t h = i ^ k0;   /* lowbias32 (Wellons), keyed before each round */
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    h ^= k1;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    return h ^ (h >> 16);
}

static inline int F(qsgd_level)(float x, float sc, float s, uint32_t h)
{
    float y = fabsf(x) * sc;
    y = y < s ? y : s;                    /* NaN and rounding above s: s */
    int32_t t = (int32_t)y;               /* floor: y >= 0 */
    float f = y - (float)t;               /* exact: the fraction of y */
    float u = (float)(int32_t)(h >> 8) * 0x1.0p-24f;   /* 24 bits, exact */
    int32_t l = t + (u < f);
    return x < 0 ? -l : l;
}

static void F(qsgd_levels)(const float *x, size_t lo, size_t hi, float sc,
                           float s, uint64_t key, void *lvp, int wide)
{
    int8_t *l8 = lvp;
    int16_t *l16 = lvp;
    const uint32_t k0 = (uint32_t)key;
    while (lo < hi) {   /* the counter is i mod 2^32; i / 2^32 joins k1 */
        size_t e = ((lo >> 32) + 1) << 32;   /* and m fits a uint32_t */
        e = e < hi && e > lo ? e : hi;
        e = e - lo > 0x80000000u ? lo + 0x80000000u : e;
        const uint32_t k1 = (uint32_t)(key >> 32) ^
                            (uint32_t)(lo >> 32) * 0x9e3779b9u;
        const uint32_t c0 = (uint32_t)lo, m = (uint32_t)(e - lo);
        const float *xs = x + lo;
        if (wide) {
            int16_t *o = l16 + lo;
#pragma omp simd
            for (uint32_t j = 0; j < m; j++)
                o[j] = (int16_t)F(qsgd_level)(xs[j], sc, s,
                                              F(qsgd_hash)(c0 + j, k0, k1));
        } else {
            int8_t *o = l8 + lo;
#pragma omp simd
            for (uint32_t j = 0; j < m; j++)
                o[j] = (int8_t)F(qsgd_level)(xs[j], sc, s,
                                             F(qsgd_hash)(c0 + j, k0, k1));
        }
        lo = e;
    }
}

const struct lbs_qsgd_kern F(lbs_qsgd_kern) = {F(qsgd_levels)};

#ifdef KERN_REF
/* int8 and int16 levels over a range with an odd head and an even tail. */
static void check(const void *t, struct lbs_kcheck *r)
{
    const struct lbs_qsgd_kern *K = t;
    enum { N = 10007 };
    const float *x = lbs_kcheck_f32(r, N, 1, 0);
    int8_t *l8 = lbs_kcheck_zalloc(r, N);
    int16_t *l16 = lbs_kcheck_zalloc(r, 2 * N);
    LBS_KCALL(r, "qsgd_levels int8", N - 5,
              K->qsgd_levels(x, 3, N - 2, 127 / 2.0f, 127,
                             0x123456789abcdefull, l8, 0));
    LBS_KCALL(r, "qsgd_levels int16", N - 5,
              K->qsgd_levels(x, 3, N - 2, 300 / 2.0f, 300,
                             0x123456789abcdefull, l16, 1));
    lbs_kcheck_bits(r, "qsgd int8 levels", l8, N);
    lbs_kcheck_bits(r, "qsgd int16 levels", l16, 2 * N);
}
LBS_KFAM(lbs_qsgd, check);
#endif
