/* slamb.c - SLAMB (Xu et al., ICML 2023): LAMB with sparse momentum sync.
 *
 * No gradient allreduce (.dense = 0).  At step t (1-based) on each of the
 * N ranks of o->comm, for every layer:
 *
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2     (g: the LOCAL gradient)
 *   S = mask(t): all coordinates if the layer is 1-D or has n < small,
 *       else cyclic(k) chunk t mod ceil(1/k), or Bernoulli(k) drawn from
 *       (seed, t, layer) - lbscale/mask.h; identical on every rank
 *   m[S] = allreduce_sum(m[S]) / N   (one allreduce of the compacted
 *                                     values, written back; m[~S] stays)
 *   c = 0 on S, c + 1 elsewhere        (per-element staleness counters)
 *   u = (m/bc1) / (sqrt(v/bc2) + eps) + wd w      (bc = 1 - b^t)
 *   phi_max = ||w_S||/||u_S||,  phi_min = ||w_~S||/||u_~S||
 *                                                 (1 when a norm is 0)
 *   per element, s = beta3^c:
 *     lr_e  = s lr + (1-s) lr/sqrt(N)
 *     phi_e = clamp(s phi_max + (1-s) phi_min, cmin, cmax)
 *     w -= lr_e phi_e u
 *   with exclude_1d (default) a 1-D layer uses phi_e = 1 and wd = 0.
 *
 * and after the layer loop, when (t-1) mod H == 0, w = allreduce_sum(w)/N
 * (dense parameter averaging, one allreduce per layer).
 *
 * Equivalence: with k=1 on one rank every coordinate is synced every step,
 * so c = 0, s = 1, lr_e = lr and phi_e = clamp(phi_max) - the spec
 *   slamb:k=1,lr=L,b1=B1,b2=B2,eps=E,wd=W,cmin=A,cmax=B,exclude_1d=X
 * equals, step for step,
 *   lamb:lr=L,b1=B1,b2=B2,eps=E,wd=W,cmin=A,cmax=B,exclude_1d=X,
 *        bias_correction=1,clip=0
 * i.e. with the defaults of both: "slamb:k=1" == "lamb:cmin=0.01,cmax=1000"
 * (H, beta3, small, mask, seed do not matter there).  A layer whose whole
 * mask is synced computes u, the norms (same chunks and blocks) and the
 * update with lamb.c's arithmetic, so the result is bit-identical to
 * lamb's, not merely close (tests/test_slamb.c checks it).
 *
 * Where this follows the authors' public code (hangxu0304/SLAMB, class
 * Slamb, the cyclic "randomk" variant; their fused Slamb_V2 draws a
 * Bernoulli mask per step but also leaves wd out of the norms, moves eps
 * to eps/sqrt(bc2) and marks the UNmasked coordinates fresh - we take the
 * Slamb class as the reference and only its mask schedule from V2):
 *   - m and v from the local gradient, masked momentum averaged and written
 *     back, v never communicated; 1-D tensors and tensors with fewer than
 *     grad_size_thr = 9000 elements always synced;
 *   - counter c reset on the mask, +1 elsewhere, s = beta3^c, the lr and
 *     phi blends above, clamp of the blended phi to [c_min, c_max] =
 *     [0.01, 1000]; phi_max/phi_min are 1 when a norm is 0; wd*w is part
 *     of u both for the norms and for the update; bias correction on;
 *   - parameter averaging when global_step % local_steps == 1, i.e. after
 *     steps 1, H+1, 2H+1, ...  We write (t-1) mod H == 0, which is the same
 *     for H > 1 and also averages every step for H = 1 (the authors' test
 *     never fires there).
 * Where it follows DESIGN.md / the rest of lbscale instead:
 *   - masks per layer from lbscale/mask.h keyed by (seed, layer) rather
 *     than one torch.randperm over the flattened model; the cyclic mask
 *     has ceil(1/k) chunks (the authors' int(1/k) chunks; same for k = 1/C);
 *     Bernoulli(k) (the authors' Slamb_V2) draws a fresh mask per step;
 *   - one allreduce per layer (layer index in the trace) instead of one
 *     over the flattened model, so the record backend attributes bytes to
 *     layers and the simulator can bucket them as it likes;
 *   - 1-D layers: the authors' code gives them a trust ratio (unclamped)
 *     and leaves wd to the parameter groups (0 for biases/LayerNorm in
 *     their recipes); here exclude_1d=1 (default, as lamb) means phi = 1,
 *     wd = 0, and exclude_1d=0 means the full trust ratio clamped to
 *     [cmin, cmax] with wd - both choices match lamb's key of that name;
 *   - no gradient pre-normalisation (the authors' default is off too).
 *
 * Memory traffic per element: a layer with a partial mask takes 3 passes
 * (moments + counters: read g,m,v,c, write m,v,c = 28; norms: read
 * m,v,w,c, write u = 20; update: read u,c,w, write w = 16) plus the
 * gather/scatter of the k n synced values (idx, m, vals, c: ~24 per synced
 * element) = 64 + 24k; an always-synced layer moves 20 + 16 + 12 = 48.
 * Norms are summed in fixed chunks (optim_impl.h), so they do not depend
 * on the thread count.  State: m, v (8 bytes per element) + c (4) for
 * partial-mask layers, the cyclic permutations (4), and scratch u (and
 * vals, idx) of the largest layer.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/mask.h"
#include "optim_impl.h"
#include "slamb.h"

enum { MASK_CYCLIC, MASK_BERNOULLI };
static const char *const mask_names[] = {"cyclic", "bernoulli", NULL};

struct slamb_cfg {
    double lr, b1, b2, eps, wd, k, beta3, H, cmin, cmax, small, mask, seed,
        exclude_1d;
};

#define K(f) offsetof(struct slamb_cfg, f)
static const struct lbs_param_spec slamb_params[] = {
    {"lr", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(lr), "learning rate", NULL},
    {"b1", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, K(b1), "first-moment decay", NULL},
    {"b2", LBS_P_REAL, 0.999, 0, 1, LBS_P_MAX_OPEN, K(b2), "second-moment decay", NULL},
    {"eps", LBS_P_REAL, 1e-6, 0, 1, LBS_P_MIN_OPEN, K(eps), "added to sqrt(v)", NULL},
    {"wd", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(wd), "decoupled weight decay", NULL},
    {"k", LBS_P_REAL, 0.1, 0, 1, LBS_P_MIN_OPEN, K(k), "fraction of momentum coordinates synced per step", NULL},
    {"beta3", LBS_P_REAL, 0.99, 0, 1, LBS_P_MAX_OPEN, K(beta3), "staleness decay: s = beta3^c", NULL},
    {"H", LBS_P_INT, 100, 1, 1e12, 0, K(H), "average parameters every H steps", NULL},
    {"cmin", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(cmin), "lower clamp of the blended trust ratio", NULL},
    {"cmax", LBS_P_REAL, 1000, 0, INFINITY, LBS_P_MIN_OPEN, K(cmax), "upper clamp of the blended trust ratio", NULL},
    {"small", LBS_P_INT, 9000, 0, 4294967295.0, 0, K(small), "layers with fewer elements are always synced", NULL},
    {"mask", LBS_P_ENUM, MASK_CYCLIC, 0, 0, 0, K(mask), "mask schedule", mask_names},
    {"seed", LBS_P_INT, 1, 0, 9007199254740992.0, 0, K(seed), "mask seed (shared by all ranks)", NULL},
    {"exclude_1d", LBS_P_BOOL, 1, 0, 1, 0, K(exclude_1d), "no trust ratio/wd for 1-D tensors", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K

/* beta3^c for c below this comes from a table, above from powf */
#define SPOW_TABLE 4096

struct slamb_layer {
    int always;                   /* 1-D or small: synced every step */
    struct lbs_mask_cyclic *cyc;  /* cyclic schedule, partial layers */
    uint32_t *c;                  /* staleness counters, partial layers */
    size_t synced;                /* |S| at the last step */
};

struct slamb_state {
    float **m, **v;
    struct slamb_layer *L;
    float *u;                     /* update direction, largest layer */
    float *vals;                  /* compacted m[S], largest partial layer */
    uint32_t *idx;                /* Bernoulli indices, largest partial */
    float spow[SPOW_TABLE];       /* beta3^c */
};

struct slamb_coef {
    float b1, b2, c1, c2, ibc1, ibc2, eps, wd;
};

static inline float slamb_u(const struct slamb_coef *k, float m, float v,
                            float w)
{
    return (m * k->ibc1) / (sqrtf(v * k->ibc2) + k->eps) + k->wd * w;
}

/* Local moments; counters (when present) age by one step, saturating. */
static void slamb_moments(const struct slamb_coef *k, const float *g,
                          float *m, float *v, uint32_t *c, size_t n)
{
    if (c) {
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) {
            float gi = g[i];
            m[i] = k->b1 * m[i] + k->c1 * gi;
            v[i] = k->b2 * v[i] + k->c2 * gi * gi;
            c[i] += c[i] != UINT32_MAX;
        }
    } else {
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) {
            float gi = g[i];
            m[i] = k->b1 * m[i] + k->c1 * gi;
            v[i] = k->b2 * v[i] + k->c2 * gi * gi;
        }
    }
}

/* Norms: chunked like lamb.c (see optim_impl.h) so they are the same for
 * any thread count - and, for a fully synced layer, bit-identical to
 * lamb's.  u is stored in a scratch of the largest layer for the update. */
static void full_range(const struct slamb_coef *k, const float *m,
                       const float *v, const float *w, float *u, size_t lo,
                       size_t hi, double *sw, double *su)
{
    for (size_t b = lo; b < hi; b += LBS_NORM_BLOCK) {
        size_t e = b + LBS_NORM_BLOCK < hi ? b + LBS_NORM_BLOCK : hi;
        float fw = 0, fu = 0;
#pragma omp simd reduction(+ : fw, fu)
        for (size_t i = b; i < e; i++) {
            float ui = slamb_u(k, m[i], v[i], w[i]);
            u[i] = ui;
            fw += w[i] * w[i];
            fu += ui * ui;
        }
        *sw += fw;
        *su += fu;
    }
}

/* ||w||, ||u|| over the whole layer (every coordinate synced). */
static void slamb_norms_full(const struct slamb_coef *k, const float *m,
                             const float *v, const float *w, float *u,
                             size_t n, double *wn, double *un)
{
    double pw[LBS_CHUNKS] = {0}, pu[LBS_CHUNKS] = {0};
#pragma omp parallel for schedule(static) if (n >= LBS_PAR_MIN)
    for (size_t c = 0; c < LBS_CHUNKS; c++)
        full_range(k, m, v, w, u, lbs_chunk_lo(n, c), lbs_chunk_lo(n, c + 1),
                   &pw[c], &pu[c]);
    *wn = sqrt(lbs_sum_chunks(pw));
    *un = sqrt(lbs_sum_chunks(pu));
}

static void split_range(const struct slamb_coef *k, const float *m,
                        const float *v, const float *w, const uint32_t *c,
                        float *u, size_t lo, size_t hi, double p[4])
{
    for (size_t b = lo; b < hi; b += LBS_NORM_BLOCK) {
        size_t e = b + LBS_NORM_BLOCK < hi ? b + LBS_NORM_BLOCK : hi;
        float ws = 0, us = 0, wr = 0, ur = 0;
#pragma omp simd reduction(+ : ws, us, wr, ur)
        for (size_t i = b; i < e; i++) {
            float ui = slamb_u(k, m[i], v[i], w[i]);
            u[i] = ui;
            float w2 = w[i] * w[i], u2 = ui * ui;
            int synced = c[i] == 0;
            ws += synced ? w2 : 0.0f;
            us += synced ? u2 : 0.0f;
            wr += synced ? 0.0f : w2;
            ur += synced ? 0.0f : u2;
        }
        p[0] += ws;
        p[1] += us;
        p[2] += wr;
        p[3] += ur;
    }
}

/* The same split by synced (c == 0) and stale coordinates:
 * nrm = {||w_S||, ||u_S||, ||w_~S||, ||u_~S||}. */
static void slamb_norms_split(const struct slamb_coef *k, const float *m,
                              const float *v, const float *w,
                              const uint32_t *c, float *u, size_t n,
                              double nrm[4])
{
    double part[LBS_CHUNKS][4];
    memset(part, 0, sizeof part);
#pragma omp parallel for schedule(static) if (n >= LBS_PAR_MIN)
    for (size_t j = 0; j < LBS_CHUNKS; j++)
        split_range(k, m, v, w, c, u, lbs_chunk_lo(n, j),
                    lbs_chunk_lo(n, j + 1), part[j]);
    for (int q = 0; q < 4; q++) {
        double s = 0;
        for (size_t j = 0; j < LBS_CHUNKS; j++)
            s += part[j][q];
        nrm[q] = sqrt(s);
    }
}

static void slamb_update_full(const float *u, float *w, size_t n, float step)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++)
        w[i] -= step * u[i];
}

struct slamb_blend {
    float step_synced;            /* lr * clamp(phi_max): s = 1 */
    float lr, lr_min, phi_max, phi_min, cmin, cmax, beta3;
};

static inline float clampf(float x, float lo, float hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

static void slamb_update_split(const struct slamb_blend *b,
                               const float *spow, const float *u,
                               const uint32_t *c, float *w, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float step;
        uint32_t ci = c[i];
        if (ci == 0) {
            step = b->step_synced;
        } else {
            float s = ci < SPOW_TABLE ? spow[ci] : powf(b->beta3, (float)ci);
            float lr_e = s * b->lr + (1 - s) * b->lr_min;
            float phi_e = clampf(s * b->phi_max + (1 - s) * b->phi_min,
                                 b->cmin, b->cmax);
            step = lr_e * phi_e;
        }
        w[i] -= step * u[i];
    }
}

static void slamb_fini(struct lbs_optim *o)
{
    struct slamb_state *s = o->state;
    if (!s)
        return;
    lbs_free_layer_state(o, s->m);
    lbs_free_layer_state(o, s->v);
    if (s->L)
        for (size_t i = 0; i < o->nlayers; i++) {
            lbs_mask_cyclic_free(s->L[i].cyc);
            free(s->L[i].c);
        }
    free(s->L);
    free(s->u);
    free(s->vals);
    free(s->idx);
    free(s);
    o->state = NULL;
}

static int slamb_init(struct lbs_optim *o, struct lbs_err *err)
{
    const struct slamb_cfg *c = o->cfg;
    int rc;
    if (c->cmin > c->cmax)
        return lbs_err_set(err, -EINVAL, "slamb: cmin (%g) > cmax (%g)",
                           c->cmin, c->cmax);
    struct slamb_state *s = calloc(1, sizeof *s);
    if (!s)
        return lbs_err_set(err, -ENOMEM, "slamb: out of memory for state");
    o->state = s;
    s->m = lbs_alloc_layer_state(o);
    s->v = lbs_alloc_layer_state(o);
    s->L = calloc(o->nlayers, sizeof *s->L);
    if (!s->m || !s->v || !s->L)
        goto nomem;
    size_t maxn = 0, big = 0;
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        struct slamb_layer *sl = &s->L[i];
        big = L->n > big ? L->n : big;
        sl->always = lbs_layer_is_1d(o, i) || (double)L->n < c->small;
        if (sl->always)
            continue;
        if (L->n > UINT32_MAX) {
            rc = lbs_err_set(err, -EINVAL, "slamb: layer %zu ('%s') has %zu "
                             "elements (masks index with uint32)", i,
                             L->name ? L->name : "?", L->n);
            goto fail;
        }
        if (!(sl->c = calloc(L->n, sizeof *sl->c)))
            goto nomem;
        if ((int)c->mask == MASK_CYCLIC &&
            (rc = lbs_mask_cyclic_new((uint64_t)c->seed, (int)i, L->n, c->k,
                                      &sl->cyc, err)))
            goto fail;
        if (L->n > maxn)
            maxn = L->n;
    }
    if (!(s->u = lbs_zalloc_f32(big)))
        goto nomem;
    if (maxn) {
        if (!(s->vals = lbs_zalloc_f32(maxn)))
            goto nomem;
        if ((int)c->mask == MASK_BERNOULLI &&
            !(s->idx = malloc(maxn * sizeof *s->idx)))
            goto nomem;
    }
    for (size_t j = 0; j < SPOW_TABLE; j++)
        s->spow[j] = (float)pow(c->beta3, (double)j);
    return 0;
nomem:
    rc = lbs_err_set(err, -ENOMEM, "slamb: out of memory for state");
fail:
    slamb_fini(o);
    return rc;
}

/* Trust ratio with SLAMB's convention: 1 when either norm is 0, unclamped
 * (only the blend is clamped). */
static double ratio(double wn, double un)
{
    return (wn > 0 && un > 0) ? wn / un : 1.0;
}

/* Average m over the mask S of layer i and reset the counters there. */
static int slamb_sync(struct lbs_optim *o, size_t i, const uint32_t *idx,
                      size_t cnt)
{
    struct slamb_state *s = o->state;
    float *m = s->m[i], *vals = s->vals;
    uint32_t *c = s->L[i].c;
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < cnt; j++)
        vals[j] = m[idx[j]];
    int rc = lbs_allreduce(o->comm, vals, cnt, LBS_FLOAT32, LBS_SUM, (int)i);
    if (rc)
        return rc;
    const float inv = 1.0f / (float)o->comm->size;
    const int scale = o->comm->size > 1;
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < cnt; j++) {
        m[idx[j]] = scale ? vals[j] * inv : vals[j];
        c[idx[j]] = 0;
    }
    return 0;
}

static int slamb_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct slamb_cfg *c = o->cfg;
    struct slamb_state *s = o->state;
    const int N = o->comm->size;
    int rc;
    struct slamb_coef k = {
        .b1 = (float)c->b1, .b2 = (float)c->b2,
        .c1 = (float)(1 - c->b1), .c2 = (float)(1 - c->b2),
        .ibc1 = (float)(1.0 / (1.0 - pow(c->b1, (double)o->t))),
        .ibc2 = (float)(1.0 / (1.0 - pow(c->b2, (double)o->t))),
        .eps = (float)c->eps,
    };
    const double lr = c->lr * o->lr_scale;
    o->comm->err = err;
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        struct slamb_layer *sl = &s->L[i];
        const int plain = c->exclude_1d && lbs_layer_is_1d(o, i);
        k.wd = plain ? 0.0f : (float)c->wd;
        slamb_moments(&k, L->g, s->m[i], s->v[i], sl->c, L->n);

        size_t cnt = L->n;
        if (sl->always) {
            rc = lbs_allreduce_mean_f32(o->comm, s->m[i], L->n, (int)i);
        } else {
            const uint32_t *idx;
            if (sl->cyc) {
                lbs_mask_cyclic_get(sl->cyc, o->t, &idx, &cnt);
            } else {
                cnt = lbs_mask_bernoulli((uint64_t)c->seed, o->t, (int)i,
                                         L->n, c->k, s->idx);
                idx = s->idx;
            }
            rc = slamb_sync(o, i, idx, cnt);
        }
        if (rc)
            return rc;
        sl->synced = cnt;

        if (cnt == L->n) {
            /* every coordinate synced: s = 1 everywhere, plain LAMB */
            double wn, un;
            slamb_norms_full(&k, s->m[i], s->v[i], L->w, s->u, L->n, &wn,
                             &un);
            if ((rc = lbs_check_finite(o, i, un, err)))
                return rc;
            double phi = plain ? 1.0
                               : lbs_trust_ratio(wn, un, c->cmin, c->cmax);
            slamb_update_full(s->u, L->w, L->n, (float)(lr * phi));
            continue;
        }
        double nrm[4];
        slamb_norms_split(&k, s->m[i], s->v[i], L->w, sl->c, s->u, L->n,
                          nrm);
        if ((rc = lbs_check_finite(o, i, nrm[1] + nrm[3], err)))
            return rc;
        double pmax = ratio(nrm[0], nrm[1]), pmin = ratio(nrm[2], nrm[3]);
        double smax = pmax < c->cmin ? c->cmin : pmax > c->cmax ? c->cmax
                                                                 : pmax;
        struct slamb_blend b = {
            .step_synced = (float)(lr * smax),
            .lr = (float)lr, .lr_min = (float)(lr / sqrt((double)N)),
            .phi_max = (float)pmax, .phi_min = (float)pmin,
            .cmin = (float)c->cmin, .cmax = (float)c->cmax,
            .beta3 = (float)c->beta3,
        };
        slamb_update_split(&b, s->spow, s->u, sl->c, L->w, L->n);
    }
    if ((o->t - 1) % (long)c->H == 0)
        for (size_t i = 0; i < o->nlayers; i++)
            if ((rc = lbs_allreduce_mean_f32(o->comm, o->layers[i].w,
                                             o->layers[i].n, (int)i)))
                return rc;
    return 0;
}

static double slamb_bytes(const struct lbs_optim *o)
{
    const struct slamb_cfg *c = o->cfg;
    const struct slamb_state *s = o->state;
    double bytes = 0, n = 0;
    for (size_t i = 0; i < o->nlayers; i++) {
        double ni = (double)o->layers[i].n;
        bytes += ni * (s->L[i].always ? 48.0 : 64.0 + 24.0 * c->k);
        n += ni;
    }
    return n > 0 ? bytes / n : 0;
}

const struct lbs_optim_ops lbs_optim_slamb = {
    .name = "slamb",
    .summary = "SLAMB: local LAMB moments, random-k momentum sync with "
               "staleness-blended lr and trust ratio, params averaged every H",
    .params = slamb_params,
    .dense = 0,
    .cfg_size = sizeof(struct slamb_cfg),
    .bytes_per_elem = slamb_bytes,
    .init = slamb_init,
    .step = slamb_step,
    .fini = slamb_fini,
};

static const struct slamb_state *state_of(const struct lbs_optim *o,
                                          size_t layer)
{
    if (!o || o->ops != &lbs_optim_slamb || layer >= o->nlayers)
        return NULL;
    return o->state;
}

const float *lbs_slamb_momentum(const struct lbs_optim *o, size_t layer)
{
    const struct slamb_state *s = state_of(o, layer);
    return s ? s->m[layer] : NULL;
}

const uint32_t *lbs_slamb_staleness(const struct lbs_optim *o, size_t layer)
{
    const struct slamb_state *s = state_of(o, layer);
    return s ? s->L[layer].c : NULL;
}

size_t lbs_slamb_synced(const struct lbs_optim *o, size_t layer)
{
    const struct slamb_state *s = state_of(o, layer);
    return s ? s->L[layer].synced : 0;
}
