/* lion_tmpl.c - Lion's fused step (lion.c, lion_kern.h), one table per
 * level (core/kern/kfam.h).  Elementwise but for the sum of m, a NaN
 * detector. */
#include "kern_tmpl.h"
#include "lion_kern.h"

static double F(lion)(const struct lbs_lion_coef *k, const float *g,
                      float *m, float *w, size_t n)
{
    const float b1 = k->b1, c1 = k->c1, b2 = k->b2, c2 = k->c2, lr = k->lr,
                wd = k->wd;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < n; i++) {
        float gi = g[i], mi = m[i], wi = w[i];
        float c = b1 * mi + c1 * gi;
        /* sign(c), 0 at 0 and at NaN: two compares and two blends */
        float s = c > 0.0f ? 1.0f : 0.0f;
        s = c < 0.0f ? -1.0f : s;
        w[i] = wi - lr * (s + wd * wi);
        float mn = b2 * mi + c2 * gi;
        m[i] = mn;
        sum += mn;
    }
    return sum;
}

const struct lbs_lion_kern F(lbs_lion_kern) = {F(lion)};

#ifdef KERN_REF
/* An odd length off alignment, with c exactly 0 and signed zeros. */
static void check(const void *t, struct lbs_kcheck *r)
{
    const struct lbs_lion_kern *K = t;
    enum { N = 10007 };
    const struct lbs_lion_coef k = {.b1 = 0.9f, .c1 = 0.1f, .b2 = 0.99f,
                                    .c2 = 0.01f, .lr = 1e-3f, .wd = 0.1f};
    float *g = lbs_kcheck_f32(r, N, 2, 0), *m = lbs_kcheck_f32(r, N, 0.1f, 0),
          *w = lbs_kcheck_f32(r, N, 1, 0);
    g[7] = m[7] = 0;
    g[8] = -0.0f, m[8] = 0;
    double s;
    LBS_KCALL(r, "lion", N, s = K->lion(&k, g, m, w, N));
    lbs_kcheck_true(r, "lion sum finite", isfinite(s));
    lbs_kcheck_bits(r, "lion m", m, N * sizeof *m);
    lbs_kcheck_bits(r, "lion w", w, N * sizeof *w);
}
LBS_KFAM(lbs_lion, check);
#endif
