/* lamb_tmpl.c - LAMB's pass 1 (lamb.c, lamb_kernel.h), one table per
 * level (core/kern/kfam.h): m, v, u elementwise, ||w||^2 and ||u||^2 as
 * float sums over LBS_NORM_BLOCK blocks, double across blocks. */
#include "kern_tmpl.h"
#include "lamb_kernel.h"

static void F(lamb)(const struct lbs_lamb_coef *k, const float *g, float *m,
                    float *v, const float *w, float *u, size_t n, double *sw,
                    double *su)
{
    const float b1 = k->b1, b2 = k->b2, c1 = k->c1, c2 = k->c2,
                ibc1 = k->ibc1, ibc2 = k->ibc2, eps = k->eps, wd = k->wd,
                gscale = k->gscale;
    for (size_t b = 0; b < n; b += LBS_NORM_BLOCK) {
        size_t e = b + LBS_NORM_BLOCK < n ? b + LBS_NORM_BLOCK : n;
        float fw = 0, fu = 0;
#pragma omp simd reduction(+ : fw, fu)
        for (size_t i = b; i < e; i++) {
            float gi = g[i] * gscale;
            float mi = b1 * m[i] + c1 * gi;
            float vi = b2 * v[i] + c2 * gi * gi;
            m[i] = mi;
            v[i] = vi;
            float wi = w[i];
            float ui = (mi * ibc1) / (sqrtf(vi * ibc2) + eps) + wd * wi;
            u[i] = ui;
            fw += wi * wi;
            fu += ui * ui;
        }
        *sw += fw;
        *su += fu;
    }
}

static void F(lamb_chunks)(const struct lbs_lamb_coef *k, const float *g,
                           float *m, float *v, const float *w, float *u,
                           size_t n, size_t c0, size_t c1, double *pw,
                           double *pu)
{
    for (size_t c = c0; c < c1; c++) {
        size_t lo = lbs_chunk_lo(n, c), hi = lbs_chunk_lo(n, c + 1);
        pw[c] = pu[c] = 0;
        F(lamb)(k, g + lo, m + lo, v + lo, w + lo, u + lo, hi - lo, &pw[c],
                &pu[c]);
    }
}
const struct lbs_lamb_kern F(lbs_lamb_kern) = {F(lamb), F(lamb_chunks)};

#ifdef KERN_REF
/* The plain pass, then the chunked form in two calls (as two threads
 * make them): the same u, and per chunk the same partials as the plain
 * pass over that chunk at the same level (exactly), within the bound of
 * the reference's at another. */
static void check(const void *t, struct lbs_kcheck *r)
{
    const struct lbs_lamb_kern *K = t;
    enum { N = 10007 };
    const struct lbs_lamb_coef k = {
        .b1 = 0.9f, .b2 = 0.999f, .c1 = 0.1f, .c2 = 0.001f, .ibc1 = 3.1f,
        .ibc2 = 7.7f, .eps = 1e-6f, .wd = 0.01f, .gscale = 0.75f};
    const float *g = lbs_kcheck_f32(r, N, 2, 0),
                *m0 = lbs_kcheck_f32(r, N, 0.1f, 0),
                *v0 = lbs_kcheck_f32(r, N, 0.01f, 1),
                *w = lbs_kcheck_f32(r, N, 1, 0);
    float *m = lbs_kcheck_dup(r, m0, N), *v = lbs_kcheck_dup(r, v0, N),
          *u = lbs_kcheck_f32(r, N, 1, 0);
    double sw = 0, su = 0;
    LBS_KCALL(r, "lamb", N, K->lamb(&k, g, m, v, w, u, N, &sw, &su));
    lbs_kcheck_bits(r, "lamb m", m, N * sizeof *m);
    lbs_kcheck_bits(r, "lamb v", v, N * sizeof *v);
    lbs_kcheck_bits(r, "lamb u", u, N * sizeof *u);
    lbs_kcheck_sum(r, "lamb ||w||^2", sw, LBS_KBOUND_NORM);
    lbs_kcheck_sum(r, "lamb ||u||^2", su, LBS_KBOUND_NORM);

    double *pw = lbs_kcheck_zalloc(r, LBS_CHUNKS * sizeof *pw),
           *pu = lbs_kcheck_zalloc(r, LBS_CHUNKS * sizeof *pu);
    float *uc = lbs_kcheck_f32(r, N, 1, 0);
    for (int half = 0; half < 2; half++) {
        size_t c0 = half ? LBS_CHUNKS / 2 : 0,
               c1 = half ? LBS_CHUNKS : LBS_CHUNKS / 2;
        m = lbs_kcheck_dup(r, m0, N), v = lbs_kcheck_dup(r, v0, N);
        LBS_KCALL(r, "lamb_chunks", N / 2,
                  K->lamb_chunks(&k, g, m, v, w, uc, N, c0, c1, pw, pu));
    }
    lbs_kcheck_bits(r, "lamb_chunks u", uc, N * sizeof *uc);
    int same = 1;
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        size_t lo = lbs_chunk_lo(N, c), hi = lbs_chunk_lo(N, c + 1);
        double cw = 0, cu = 0;
        m = lbs_kcheck_dup(r, m0 + lo, hi - lo);
        v = lbs_kcheck_dup(r, v0 + lo, hi - lo);
        K->lamb(&k, g + lo, m, v, w + lo, u, hi - lo, &cw, &cu);
        same &= cw == pw[c] && cu == pu[c];
        lbs_kcheck_sum(r, "lamb_chunks ||w||^2", pw[c], LBS_KBOUND_NORM);
        lbs_kcheck_sum(r, "lamb_chunks ||u||^2", pu[c], LBS_KBOUND_NORM);
    }
    lbs_kcheck_true(r, "lamb_chunks partials = lamb per chunk", same);
}
LBS_KFAM(lbs_lamb, check);
#endif
