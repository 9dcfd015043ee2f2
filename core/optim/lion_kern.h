/* lion_kern.h - Lion's kernel family (lion_tmpl.c, core/kern/kfam.h;
 * internal to core): the per-step coefficients and the fused pass. */
#ifndef LBS_LION_KERN_H
#define LBS_LION_KERN_H

#include <stddef.h>

/* b1, c1 = 1 - b1 (the interpolation the sign is taken of), b2, c2 =
 * 1 - b2 (the momentum's decay), the step's rate and decoupled decay. */
struct lbs_lion_coef {
    float b1, c1, b2, c2, lr, wd;
};

struct lbs_lion_kern {
    /* over [0, n): c = b1 m + c1 g; w -= lr (sign(c) + wd w);
     * m = b2 m + c2 g.  Returns the sum of the new m (a NaN detector that
     * costs no memory traffic). */
    double (*lion)(const struct lbs_lion_coef *k, const float *g, float *m,
                   float *w, size_t n);
};
struct lbs_kfam;
extern const struct lbs_kfam lbs_lion_kfam;

#endif
