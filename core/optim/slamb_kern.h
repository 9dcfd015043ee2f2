/* slamb_kern.h - SLAMB's kernel family (slamb_tmpl.c, core/kern/kfam.h;
 * internal to core): its per-step coefficients and the passes slamb.c
 * runs over a layer, one table per level. */
#ifndef LBS_SLAMB_KERN_H
#define LBS_SLAMB_KERN_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* SLAMB's per-step coefficients (slamb.c). */
struct lbs_slamb_coef {
    float b1, b2, c1, c2, ibc1, ibc2, eps, wd;
};
struct lbs_slamb_blend {
    float step_synced;            /* lr * clamp(phi_max): s = 1 */
    float lr, lr_min, phi_max, phi_min, cmin, cmax, beta3;
    int clamp;                    /* clamp the blended phi to [cmin, cmax] */
};

/* The step lr_e phi_e of an element of staleness ci > 0: s = beta3^ci
 * from spow below ntab (powf at or past it), lr and phi blended by s,
 * phi clamped to [cmin, cmax] when b->clamp.  One rule for slamb.c's
 * per-chunk table and the counter form's update (slamb_tmpl.c). */
static inline float lbs_slamb_stale_step(const struct lbs_slamb_blend *b,
                                         const float *spow, size_t ntab,
                                         uint64_t ci)
{
    float s = ci < ntab ? spow[ci] : powf(b->beta3, (float)ci);
    float lr_e = s * b->lr + (1 - s) * b->lr_min;
    float phi_e = s * b->phi_max + (1 - s) * b->phi_min;
    if (b->clamp)
        phi_e = phi_e < b->cmin ? b->cmin : phi_e > b->cmax ? b->cmax : phi_e;
    return lr_e * phi_e;
}

/* SLAMB's chunk-id layer at one step (slamb.c): q holds each element's
 * chunk, chunk cur is synced; off (poff) is qoff's row for cur (prev):
 * where each parallel chunk's share starts in the compact values. */
struct lbs_slamb_qbuf {
    const uint8_t *q;
    unsigned cur, prev;
    const uint32_t *off, *poff;
    float *cm, *cv, *cw;          /* compact m, v (u_S after the fix-up),
                                     w of chunk cur */
    const float *pm;              /* averaged m of chunk prev from the
                                     last step, or NULL */
};

struct lbs_slamb_kern {
    /* SLAMB: local moments (and c += 1, saturating, when c != NULL) */
    void (*slamb_moments)(const struct lbs_slamb_coef *k, const float *g,
                          float *m, float *v, uint32_t *c, size_t n);
    /* SLAMB: u = direction; p += {||w_S||^2, ||u_S||^2, ||w_~S||^2,
     * ||u_~S||^2} split by synced: c[i] == 0 (counters); c NULL: all
     * synced (p[2], p[3] stay).  Chunk-id layers: slamb_q1_chunks */
    void (*slamb_split)(const struct lbs_slamb_coef *k, const float *m,
                        const float *v, const float *w, const uint32_t *c,
                        float *u, size_t n, double p[4]);
    /* SLAMB: w -= lr_e phi_e u, s = beta3^c from spow[c] below ntab */
    void (*slamb_update)(const struct lbs_slamb_blend *b, const float *spow,
                         size_t ntab, const float *u, const uint32_t *c,
                         float *w, size_t n);
    /* slamb_split over chunks [c0, c1) of LBS_CHUNKS (chunks.h), one
     * partial per chunk */
    void (*slamb_split_chunks)(const struct lbs_slamb_coef *k,
                               const float *m, const float *v,
                               const float *w, const uint32_t *c, float *u,
                               size_t n, size_t c0, size_t c1,
                               double (*part)[4]);
    /* SLAMB on chunk-id layers (slamb.c, struct lbs_slamb_qbuf), chunks
     * [c0, c1) of a layer of n elements.  Pass 1: m = pm where q == prev
     * (pm given), the moments, u (every element), part[c][2..3] += the
     * stale sums (q != cur), part[c][0..1] = 0, and m, v, w where q ==
     * cur appended to cm, cv, cw from off[c] on.  The fix-up, over the
     * compact values only: pm = cm inv, cv = u_S from pm, cv, cw, and
     * part[c][0..1] += ||w_S||^2, ||u_S||^2.  The update: w -= tab[q] u,
     * u_S taken from cv where q == cur (tab: 256 entries, q < nq) */
    void (*slamb_q1_chunks)(const struct lbs_slamb_coef *k, const float *g,
                            float *m, float *v, const float *w, float *u,
                            const struct lbs_slamb_qbuf *B, size_t n,
                            size_t c0, size_t c1, double (*part)[4]);
    void (*slamb_qfix_chunks)(const struct lbs_slamb_coef *k,
                              const struct lbs_slamb_qbuf *B, float inv,
                              float *pm, size_t c0, size_t c1,
                              double (*part)[4]);
    void (*slamb_qupd_chunks)(const float *tab, unsigned nq,
                              const struct lbs_slamb_qbuf *B, const float *u,
                              float *w, size_t n, size_t c0, size_t c1);
    /* out[o++] = x[i] for q[i] == qc, and x[i] = in[o++] inv for
     * q[i] == qc, over [0, n); both return o (the tests' handles, and
     * expand_eq lbs_slamb_momentum's) */
    size_t (*compact_eq)(const float *x, const uint8_t *q, uint8_t qc,
                         float *out, size_t n);
    size_t (*expand_eq)(float *x, const uint8_t *q, uint8_t qc,
                        const float *in, float inv, size_t n);
};
struct lbs_kfam;
extern const struct lbs_kfam lbs_slamb_kfam;

#endif
