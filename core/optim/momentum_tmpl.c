/* momentum_tmpl.c - the momentum pass's kernels (lbs_momentum_pass,
 * optim_impl.h: sgd, lars, jointspar, dmsgd), one table per level
 * (core/kern/kfam.h).  Elementwise but for the sum of s, a NaN detector. */
#include "kern_tmpl.h"
#include "optim_impl.h"

static double F(momentum)(const struct lbs_momentum *p, const float *g,
                          float *v, float *w, size_t n)
{
    const float gs = p->gs, wd = p->wd, mu = p->mu, a = p->a, k = p->k;
    float sum = 0;
    if (!g) {
        if (p->nesterov) {
#pragma omp simd reduction(+ : sum)
            for (size_t i = 0; i < n; i++) {
                float vi = mu * v[i];
                v[i] = vi;
                float s = mu * vi;
                sum += s;
                w[i] -= k * s;
            }
        } else {
#pragma omp simd reduction(+ : sum)
            for (size_t i = 0; i < n; i++) {
                float vi = mu * v[i];
                v[i] = vi;
                sum += vi;
                w[i] -= k * vi;
            }
        }
        return sum;
    }
    if (p->nesterov) {
#pragma omp simd reduction(+ : sum)
        for (size_t i = 0; i < n; i++) {
            float d = gs * g[i] + wd * w[i];
            float vi = mu * v[i] + a * d;
            v[i] = vi;
            float s = a * d + mu * vi;
            sum += s;
            w[i] -= k * s;
        }
    } else {
#pragma omp simd reduction(+ : sum)
        for (size_t i = 0; i < n; i++) {
            float d = gs * g[i] + wd * w[i];
            float vi = mu * v[i] + a * d;
            v[i] = vi;
            sum += vi;
            w[i] -= k * vi;
        }
    }
    return sum;
}
const struct lbs_momentum_kern F(lbs_momentum_kern) = {F(momentum)};

#ifdef KERN_REF
/* Each form (with and without g, heavy ball and Nesterov) over an odd
 * length from misaligned arrays. */
static void check(const void *t, struct lbs_kcheck *r)
{
    const struct lbs_momentum_kern *K = t;
    enum { N = 10007 };
    const float *g = lbs_kcheck_f32(r, N, 2, 0),
                *v0 = lbs_kcheck_f32(r, N, 0.01f, 1),
                *w0 = lbs_kcheck_f32(r, N, 1, 0);
    static const char *const form[2][2] = {
        {"momentum (no g)", "momentum"},
        {"momentum nesterov (no g)", "momentum nesterov"}};
    for (int nest = 0; nest < 2; nest++)
        for (int hasg = 0; hasg < 2; hasg++) {
            const struct lbs_momentum p = {.gs = 0.5f, .wd = 1e-4f,
                                           .mu = 0.9f, .a = 0.1f, .k = 0.3f,
                                           .nesterov = nest};
            float *v = lbs_kcheck_dup(r, v0, N), *w = lbs_kcheck_dup(r, w0, N);
            double s;
            LBS_KCALL(r, form[nest][hasg], N,
                      s = K->momentum(&p, hasg ? g : NULL, v, w, N));
            lbs_kcheck_true(r, "momentum sum finite", isfinite(s));
            lbs_kcheck_bits(r, "momentum v", v, N * sizeof *v);
            lbs_kcheck_bits(r, "momentum w", w, N * sizeof *w);
        }
}
LBS_KFAM(lbs_momentum, check);
#endif
