/* lamb_kernel.h - LAMB's two fused passes, shared by lamb.c and the dense
 * warm-up and compressed phases of onebit_lamb.c (internal to core). */
#ifndef LBS_LAMB_KERNEL_H
#define LBS_LAMB_KERNEL_H

#include <math.h>
#include <stddef.h>

/* Per-step coefficients: moment decays b and 1-b (c), inverse bias
 * corrections (1 when off), eps, weight decay of this layer, and the
 * global gradient-clipping scale (1 when off). */
struct lbs_lamb_coef {
    float b1, b2, c1, c2, ibc1, ibc2, eps, wd, gscale;
};

/* The update direction u = m^ / (sqrt(v^) + eps) + wd w of one element. */
static inline float lbs_lamb_u(const struct lbs_lamb_coef *k, float m,
                               float v, float w)
{
    return (m * k->ibc1) / (sqrtf(v * k->ibc2) + k->eps) + k->wd * w;
}

/* Pass 1: m, v from g (scaled by gscale), u into the scratch array, and
 * ||w||, ||u|| as deterministic chunked sums (optim_impl.h). */
void lbs_lamb_pass1(const struct lbs_lamb_coef *k, const float *g, float *m,
                    float *v, const float *w, float *u, size_t n,
                    double *wn, double *un);
/* Pass 2: w -= step * u. */
void lbs_lamb_apply(const float *u, float *w, size_t n, float step);

#endif
