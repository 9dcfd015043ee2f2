/* lamb_kernel.h - the Adam family's shared pieces (internal to core):
 * the keys adamw.c, lamb.c and onebit_lamb.c start their configs with,
 * their coefficients and GPU mapping, and LAMB's two fused passes and
 * layer loop, shared by lamb.c and the dense warm-up and compressed
 * phases of onebit_lamb.c.  Defined in lamb.c. */
#ifndef LBS_LAMB_KERNEL_H
#define LBS_LAMB_KERNEL_H

#include <math.h>
#include <stddef.h>

struct lbs_err;
struct lbs_optim;
struct lbs_optim_device_hp;

/* The Adam keys, first in each family member's config struct (their
 * rows in its params table point here: offsetof(struct x_cfg, a.lr)). */
struct lbs_adam_cfg {
    double lr, b1, b2, eps, wd, bias_correction;
};

/* Per-step coefficients: moment decays b and 1-b (c), inverse bias
 * corrections (1 when off), eps, weight decay of this layer, and the
 * global gradient-clipping scale (1 when off). */
struct lbs_lamb_coef {
    float b1, b2, c1, c2, ibc1, ibc2, eps, wd, gscale;
};

/* AdamW's fused step (adamw.c): Adam's coefficients, its decay and rate. */
struct lbs_adamw_coef {
    float b1, b2, c1, c2, ibc1, ibc2, eps, wd, lr;
};

/* The kernel families (core/kern/kfam.h) beside lamb.c and adamw.c:
 *   lamb: pass 1 over n elements, adding ||w||^2, ||u||^2 to *sw, *su;
 *     its chunked form, chunks [c0, c1) of LBS_CHUNKS over a layer of n
 *     elements, one partial per chunk (a call per thread per layer)
 *   adamw: the fused step; returns the sum of u (a NaN detector) */
struct lbs_lamb_kern {
    void (*lamb)(const struct lbs_lamb_coef *k, const float *g, float *m,
                 float *v, const float *w, float *u, size_t n, double *sw,
                 double *su);
    void (*lamb_chunks)(const struct lbs_lamb_coef *k, const float *g,
                        float *m, float *v, const float *w, float *u,
                        size_t n, size_t c0, size_t c1, double *pw,
                        double *pu);
};
struct lbs_adamw_kern {
    double (*adamw)(const struct lbs_adamw_coef *k, const float *g, float *m,
                    float *v, float *w, size_t n);
};
struct lbs_kfam;
extern const struct lbs_kfam lbs_lamb_kfam, lbs_adamw_kfam;

/* The coefficients of step t (1-based): decays, inverse bias corrections
 * (1 when bias_correction is off), eps, gscale; wd is left 0 (per layer). */
struct lbs_lamb_coef lbs_adam_coef(const struct lbs_adam_cfg *a, long t,
                                   double gscale);
/* The Adam keys -> the GPU kernels' hyperparameters. */
void lbs_adam_device_hp(const struct lbs_adam_cfg *a,
                        struct lbs_optim_device_hp *hp);

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
/* One LAMB step over every layer of o: pass 1 with a's keys and gscale
 * (wd 0 on a 1-D layer when exclude_1d), the finite check, the trust
 * ratio phi clamped to [cmin, cmax] (1 on such a layer), pass 2 with
 * lr phi; after(o, i, phi, plain), when given, follows each layer. */
int lbs_lamb_layers(struct lbs_optim *o, const struct lbs_adam_cfg *a,
                    double cmin, double cmax, double exclude_1d,
                    double gscale, float **m, float **v, float *u,
                    void (*after)(struct lbs_optim *o, size_t i, double phi,
                                  int plain),
                    struct lbs_err *err);

#endif
