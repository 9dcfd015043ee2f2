/* adamw_tmpl.c - AdamW's fused step (adamw.c), one table per level
 * (core/kern/kfam.h).  Elementwise but for the sum of u, a NaN detector. */
#include "kern_tmpl.h"
#include "lamb_kernel.h"

static double F(adamw)(const struct lbs_adamw_coef *k, const float *g,
                       float *m, float *v, float *w, size_t n)
{
    const float b1 = k->b1, b2 = k->b2, c1 = k->c1, c2 = k->c2,
                ibc1 = k->ibc1, ibc2 = k->ibc2, eps = k->eps, wd = k->wd,
                lr = k->lr;
    float su = 0;   /* only to detect NaN/Inf */
#pragma omp simd reduction(+ : su)
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = b1 * m[i] + c1 * gi;
        float vi = b2 * v[i] + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float u = (mi * ibc1) / (sqrtf(vi * ibc2) + eps) + wd * w[i];
        su += u;
        w[i] -= lr * u;
    }
    return su;
}
const struct lbs_adamw_kern F(lbs_adamw_kern) = {F(adamw)};

#ifdef KERN_REF
static void check(const void *t, struct lbs_kcheck *r)
{
    const struct lbs_adamw_kern *K = t;
    enum { N = 10007 };
    const struct lbs_adamw_coef k = {
        .b1 = 0.9f, .b2 = 0.999f, .c1 = 0.1f, .c2 = 0.001f, .ibc1 = 10.0f,
        .ibc2 = 1000.0f, .eps = 1e-8f, .wd = 0.01f, .lr = 1e-3f};
    const float *g = lbs_kcheck_f32(r, N, 2, 0);
    float *m = lbs_kcheck_f32(r, N, 0.1f, 0), *v = lbs_kcheck_f32(r, N, 0.01f, 1),
          *w = lbs_kcheck_f32(r, N, 1, 0);
    double su;
    LBS_KCALL(r, "adamw", N, su = K->adamw(&k, g, m, v, w, N));
    lbs_kcheck_true(r, "adamw sum finite", isfinite(su));
    lbs_kcheck_bits(r, "adamw m", m, N * sizeof *m);
    lbs_kcheck_bits(r, "adamw v", v, N * sizeof *v);
    lbs_kcheck_bits(r, "adamw w", w, N * sizeof *w);
}
LBS_KFAM(lbs_adamw, check);
#endif
