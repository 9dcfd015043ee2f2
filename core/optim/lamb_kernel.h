/* lamb_kernel.h - the Adam family's shared pieces (internal to core):
 * the keys adamw.c, lamb.c and onebit_lamb.c start their configs with,
 * their coefficients and GPU mapping, and LAMB's two fused passes and
 * layer loop, shared by lamb.c and the dense warm-up and compressed
 * phases of onebit_lamb.c.  Defined in lamb.c. */
#ifndef LBS_LAMB_KERNEL_H
#define LBS_LAMB_KERNEL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

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
extern const struct lbs_kfam lbs_lamb_kfam, lbs_adamw_kfam, lbs_onebit_kfam;

/* 1-bit LAMB's compressed update pass (onebit_lamb.c): k with ibc2 the
 * frozen v's correction, ibc2r v_fresh's; x = the averaged momentum times
 * sc, read from a buffer x, or, when g is given, (b1 m + c1 g) sc
 * computed in place (one rank: no buffer), or, when both are NULL,
 * decoded from the server signs: element i of the layer is bit off + i
 * of bits, +-ssc[(off + i) / chunk].  p[0] += ||p||^2, p[1] += ||u||^2,
 * *fmax = max(d/d'). */
struct lbs_onebit_coef {
    struct lbs_lamb_coef k;
    float ibc2r, sc;
    const uint8_t *bits;
    const float *ssc;
    size_t chunk, off;
};

/* 1-bit LAMB's kernel family (onebit_lamb_tmpl.c, core/kern/kfam.h). */
struct lbs_onebit_kern {
    /* The compressed phase.  An error buffer e
     * holds the last step's x, the subtraction of its scale s deferred to
     * this pass (sign(e) = e >= 0 ? 1 : -1).  The worker's, in place over
     * [0, n), element 0 being element j0 of the fused buffer:
     *   e = (b1 m + c1 g) sc + (e - s sign(e));
     * the bits (bit 1: e >= 0, indexed like the fused buffer) of the
     * bytes wholly inside [j0, j0 + n); returns sum e^2 over
     * LBS_NORM_BLOCK blocks */
    double (*onebit_fill_feed)(const struct lbs_onebit_coef *k,
                               const float *g, const float *m, float *e,
                               float s, uint8_t *bits, size_t j0, size_t n);
    /* bits (bit 1: x >= 0) of bytes [b0, b1) of x */
    void (*onebit_pack)(const float *x, uint8_t *bits, size_t b0,
                        size_t b1);
    /* the server's, over [j0, j1) of its chunk (cb bytes per worker):
     * e[j] = (0 + sum_q (bit j of rbits + q cb) ? wsc[q] invP : -(..),
     * ascending q) + (e[j] - s sign(e[j])); bits of e (as the worker's)
     * of the bytes wholly inside [j0, j1); returns sum e^2 over
     * LBS_NORM_BLOCK blocks from j0 */
    double (*onebit_server)(const uint8_t *rbits, size_t cb, size_t P,
                            const float *wsc, float invP, float *e, float s,
                            uint8_t *bits, size_t j0, size_t j1);
    /* x[j] = (bit j0 + j of bits) ? s : -s over j in [0, n) (the update
     * pass's decoder, in the table for the tests) */
    void (*onebit_unpack)(const uint8_t *bits, size_t j0, float s, float *x,
                          size_t n);
    /* chunks [c0, c1) of the update pass (struct lbs_onebit_coef: x, g
     * or k's bits); part[c] = {||p||^2, ||u||^2}, fm[c] = max */
    void (*onebit_fresh_chunks)(const struct lbs_onebit_coef *k,
                                const float *x, const float *g, float *m,
                                const float *v, float *vf, const float *w,
                                float *u, size_t n, size_t c0, size_t c1,
                                double (*part)[2], float *fm);
};

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
