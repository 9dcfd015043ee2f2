/* decentlam_tmpl.c - DecentLaM's passes (decentlam.c, gossip.h: struct
 * lbs_decentlam_kern), one table per level (core/kern/kfam.h).  The mix
 * is gossip_mix's block (core/kern/mix_tmpl.h).  tests/test_isa.c also
 * holds each level to the plain loops these replaced. */
#include "kern_tmpl.h"
#include "gossip.h"
#include "mix_tmpl.h"

static void F(decentlam_z)(const struct lbs_decentlam_coef *k,
                           const float *restrict g, const float *restrict x,
                           float *restrict z, size_t n)
{
    const float lr = k->lr, wd = k->wd;
#pragma omp simd
    for (size_t e = 0; e < n; e++)
        z[e] = x[e] - lr * (g[e] + wd * x[e]);
}

static double F(decentlam_update)(const struct lbs_decentlam_coef *k,
                                  const float *const *src, const double *w,
                                  int ns, const float *g, float *m, float *x,
                                  size_t lo, size_t hi)
{
    const double inv = k->inv, ws = k->wself;
    const float lr = k->lr, wd = k->wd, mu = k->mu;
    double sum = 0;
    if (!src) {   /* alone: z, its mix ws z and the update in one pass */
        float bad = 0;   /* mi - mi: 0, or NaN where mi is not finite */
#pragma omp simd reduction(+ : bad)
        for (size_t e = lo; e < hi; e++) {
            float xe = x[e];
            float z = xe - lr * (g[e] + wd * xe);
            double mix = 0;
            mix += ws * (double)z;
            float gt = (float)(((double)xe - mix) * inv);
            float mi = mu * m[e] + gt;
            m[e] = mi;
            bad += mi - mi;
            x[e] = xe - lr * mi;
        }
        return bad;
    }
    double acc[MIX_BLOCK];
    for (size_t b = lo; b < hi; b += MIX_BLOCK) {
        size_t len = hi - b < MIX_BLOCK ? hi - b : MIX_BLOCK;
        lbs_mix_block(src, w, ns, b, len, acc);
        float *restrict xb = x + b, *restrict mb = m + b;
#pragma omp simd reduction(+ : sum)
        for (size_t j = 0; j < len; j++) {
            float gt = (float)(((double)xb[j] - acc[j]) * inv);
            float mi = mu * mb[j] + gt;
            mb[j] = mi;
            sum += mi;
            xb[j] -= lr * mi;
        }
    }
    return sum;
}

const struct lbs_decentlam_kern F(lbs_decentlam_kern) = {
    F(decentlam_z), F(decentlam_update)};

#ifdef KERN_REF
/* z over two ranges; the update from three sources (in place of the
 * middle one) and alone, each over two ranges split off a block. */
static void check(const void *t, struct lbs_kcheck *r)
{
    const struct lbs_decentlam_kern *K = t;
    enum { N = 10007, CUT = 3001 };
    const struct lbs_decentlam_coef k = {.inv = 1 / 0.07, .wself = 0.4,
                                         .lr = 0.07f, .wd = 0.01f,
                                         .mu = 0.9f};
    const double w3[3] = {0.25, 0.5, 0.25};
    const float *g = lbs_kcheck_f32(r, N, 2, 0),
                *x0 = lbs_kcheck_f32(r, N, 1, 0),
                *m0 = lbs_kcheck_f32(r, N, 0.1f, 0),
                *r0 = lbs_kcheck_f32(r, N, 1, 0),
                *r1 = lbs_kcheck_f32(r, N, 1, 0);
    float *z = lbs_kcheck_zalloc(r, N * sizeof *z);
    LBS_KCALL(r, "decentlam_z", CUT, K->decentlam_z(&k, g, x0, z, CUT));
    LBS_KCALL(r, "decentlam_z", N - CUT,
              K->decentlam_z(&k, g + CUT, x0 + CUT, z + CUT, N - CUT));
    lbs_kcheck_bits(r, "decentlam z", z, N * sizeof *z);
    for (int alone = 0; alone < 2; alone++) {
        float *m = lbs_kcheck_dup(r, m0, N), *x = lbs_kcheck_dup(r, x0, N);
        const float *src[3] = {r0, z, r1};
        const char *what = alone ? "decentlam_update alone"
                                 : "decentlam_update";
        double s = 0;
        LBS_KCALL(r, what, CUT,
                  s += K->decentlam_update(&k, alone ? NULL : src, w3, 3,
                                           g, m, x, 0, CUT));
        LBS_KCALL(r, what, N - CUT,
                  s += K->decentlam_update(&k, alone ? NULL : src, w3, 3,
                                           g, m, x, CUT, N));
        lbs_kcheck_true(r, "decentlam detector finite", isfinite(s));
        lbs_kcheck_bits(r, "decentlam m", m, N * sizeof *m);
        lbs_kcheck_bits(r, "decentlam x", x, N * sizeof *x);
    }
}
LBS_KFAM(lbs_decentlam, check);
#endif
