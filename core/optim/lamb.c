/* lamb.c - LAMB (You et al. 2019), layer-wise adaptive Adam.
 *
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *   u = (m/bc1) / (sqrt(v/bc2) + eps) + wd w     (bc = 1 - b^t, or 1 when
 *                                                 bias correction is off)
 *   phi = clamp(||w|| / ||u||, cmin, cmax)       (ratio 1 if a norm is 0)
 *   w  -= lr phi u
 *
 * g is first averaged over ranks and, when clip > 0, scaled by
 * min(1, clip/||g||_global) (apex FusedLAMB's max_grad_norm).  With
 * exclude_1d (the default, like apex with its usual parameter groups)
 * 1-D tensors - biases, LayerNorm - get phi = 1 and no weight decay.
 *
 * Two fused passes per layer: pass 1 reads g, m, v, w and writes m, v and
 * u (into a scratch buffer the size of the largest layer, not of the
 * model) while summing ||w||^2 and ||u||^2; pass 2 reads u, w and writes
 * w.  Storing u instead of recomputing it in pass 2 moves the same bytes
 * (16 + 12, then 8 + 4 = 40 per element) but computes the sqrt and the
 * division once: on 2 cores recomputing them made the step compute-bound
 * (measured 0.55 of STREAM triad vs 0.8+ with the stored u).  The global
 * gradient norm for clipping comes free from the driver's check pass.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "kfam.h"
#include "lamb_kernel.h"
#include "optim_impl.h"

struct lamb_cfg {
    struct lbs_adam_cfg a;
    double cmin, cmax, clip, exclude_1d;
};

#define K(f) offsetof(struct lamb_cfg, f)
static const struct lbs_param_spec lamb_params[] = {
    {"lr", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(a.lr), "learning rate", NULL},
    {"b1", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, K(a.b1), "first-moment decay", NULL},
    {"b2", LBS_P_REAL, 0.999, 0, 1, LBS_P_MAX_OPEN, K(a.b2), "second-moment decay", NULL},
    {"eps", LBS_P_REAL, 1e-6, 0, 1, LBS_P_MIN_OPEN, K(a.eps), "added to sqrt(v)", NULL},
    {"wd", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(a.wd), "decoupled weight decay", NULL},
    {"bias_correction", LBS_P_BOOL, 1, 0, 1, 0, K(a.bias_correction), "divide m, v by 1-b^t", NULL},
    {"cmin", LBS_P_REAL, 0, 0, INFINITY, 0, K(cmin), "lower clamp of the trust ratio", NULL},
    {"cmax", LBS_P_REAL, 1e9, 0, INFINITY, LBS_P_MIN_OPEN, K(cmax), "upper clamp of the trust ratio", NULL},
    {"clip", LBS_P_REAL, 0, 0, INFINITY, 0, K(clip), "global grad-norm clip (0: off)", NULL},
    {"exclude_1d", LBS_P_BOOL, 1, 0, 1, 0, K(exclude_1d), "no trust ratio/wd for 1-D tensors", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K

struct lamb_state {
    float **m, **v;
    float *u;          /* scratch, largest layer */
};

/* Chunked so the norms are deterministic (see optim_impl.h); the loop
 * itself is the dispatched kernel (lamb_tmpl.c, core/kern/kfam.h). */
void lbs_lamb_pass1(const struct lbs_lamb_coef *k, const float *g, float *m,
                       float *v, const float *w, float *u, size_t n,
                       double *wn, double *un)
{
    double pw[LBS_CHUNKS] = {0}, pu[LBS_CHUNKS] = {0};
    const struct lbs_lamb_kern *K = lbs_kfam_cur(&lbs_lamb_kfam);
    LBS_KERN_CHUNKED(n, K->lamb_chunks(k, g, m, v, w, u, n, c0, c1, pw, pu));
    *wn = sqrt(lbs_sum_chunks(pw));
    *un = sqrt(lbs_sum_chunks(pu));
}

void lbs_lamb_apply(const float *u, float *w, size_t n, float step)
{
    const struct lbs_kern *K = lbs_kern();
    if (n < LBS_PAR_MIN) {
        K->axpy(w, u, step, n);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        size_t lo = lbs_chunk_lo(n, c), hi = lbs_chunk_lo(n, c + 1);
        K->axpy(w + lo, u + lo, step, hi - lo);
    }
}

struct lbs_lamb_coef lbs_adam_coef(const struct lbs_adam_cfg *a, long t,
                                   double gscale)
{
    struct lbs_lamb_coef k = {
        .b1 = (float)a->b1, .b2 = (float)a->b2,
        .c1 = (float)(1 - a->b1), .c2 = (float)(1 - a->b2),
        .ibc1 = 1.0f, .ibc2 = 1.0f, .eps = (float)a->eps,
        .gscale = (float)gscale,
    };
    if (a->bias_correction) {
        k.ibc1 = (float)(1.0 / (1.0 - pow(a->b1, (double)t)));
        k.ibc2 = (float)(1.0 / (1.0 - pow(a->b2, (double)t)));
    }
    return k;
}

void lbs_adam_device_hp(const struct lbs_adam_cfg *a,
                        struct lbs_optim_device_hp *hp)
{
    hp->lr = a->lr;
    hp->b1 = a->b1;
    hp->b2 = a->b2;
    hp->eps = a->eps;
    hp->wd = a->wd;
    hp->bias_correction = a->bias_correction;
}

int lbs_lamb_layers(struct lbs_optim *o, const struct lbs_adam_cfg *a,
                    double cmin, double cmax, double exclude_1d,
                    double gscale, float **m, float **v, float *u,
                    void (*after)(struct lbs_optim *o, size_t i, double phi,
                                  int plain),
                    struct lbs_err *err)
{
    struct lbs_lamb_coef k = lbs_adam_coef(a, o->t, gscale);
    const double lr = a->lr * o->lr_scale;
    int rc;
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        int plain = exclude_1d && lbs_layer_is_1d(o, i);
        k.wd = plain ? 0.0f : (float)a->wd;
        double wn, un;
        lbs_lamb_pass1(&k, L->g, m[i], v[i], L->w, u, L->n, &wn, &un);
        if ((rc = lbs_check_finite(o, i, un, err)))
            return rc;
        double phi = plain ? 1.0 : lbs_trust_ratio(wn, un, cmin, cmax);
        if (after)
            after(o, i, phi, plain);
        lbs_lamb_apply(u, L->w, L->n, (float)(lr * phi));
    }
    return 0;
}

static int lamb_check(const void *cfg, const char *name, struct lbs_err *err)
{
    const struct lamb_cfg *c = cfg;
    return lbs_check_clamp(name, c->cmin, c->cmax, err);
}

static int lamb_init(struct lbs_optim *o, struct lbs_err *err)
{
    struct lamb_state *s = calloc(1, sizeof *s);
    size_t big = 0;
    for (size_t i = 0; i < o->nlayers; i++)
        big = o->layers[i].n > big ? o->layers[i].n : big;
    if (!s || !(s->m = lbs_alloc_layer_state(o)) ||
        !(s->v = lbs_alloc_layer_state(o)) || !(s->u = lbs_zalloc_f32(big))) {
        if (s) {
            lbs_free_layer_state(o, s->m);
            lbs_free_layer_state(o, s->v);
        }
        free(s);
        return lbs_err_set(err, -ENOMEM, "lamb: out of memory for state");
    }
    o->state = s;
    return 0;
}

static int lamb_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct lamb_cfg *c = o->cfg;
    struct lamb_state *s = o->state;
    return lbs_lamb_layers(o, &c->a, c->cmin, c->cmax, c->exclude_1d,
                           lbs_clip_scale(o, c->clip), s->m, s->v, s->u,
                           NULL, err);
}

static void lamb_fini(struct lbs_optim *o)
{
    struct lamb_state *s = o->state;
    if (!s)
        return;
    lbs_free_layer_state(o, s->m);
    lbs_free_layer_state(o, s->v);
    free(s->u);
    free(s);
}

/* Bytes per element of a step, CPU and GPU alike: moments + norms read
 * g, m, v, w and write m, v, u (28); the update reads u, w and writes w
 * (12). */
#define LAMB_BYTES 40.0

static double lamb_bytes(const struct lbs_optim *o)
{
    (void)o;
    return LAMB_BYTES;
}

/* The GPU kernels (core/cuda/optim.cu) and the specs tests/gpu/
 * check_optim.c compares them with this file on. */
static const char *const lamb_gpu_checks[] = {
    "lamb",
    "lamb:clip=0.5,exclude_1d=0,cmin=0.01,cmax=10",
    "lamb:bias_correction=0,wd=0,lr=0.002",
    NULL,
};
static void lamb_gpu_hp(const void *cfg, struct lbs_optim_device_hp *hp)
{
    const struct lamb_cfg *c = cfg;
    lbs_adam_device_hp(&c->a, hp);
    hp->cmin = c->cmin;
    hp->cmax = c->cmax;
    hp->clip = c->clip;
    hp->exclude_1d = c->exclude_1d;
}
/* The GPU kernels (k_lamb1, k_apply) make the same passes as this file. */
static double lamb_gpu_bytes(const void *cfg, const struct lbs_layer *l,
                             size_t nl)
{
    (void)cfg, (void)l, (void)nl;
    return LAMB_BYTES;
}
static const struct lbs_optim_device lamb_gpu = {
    .kernel = LBS_KERNEL_LAMB,
    .exact = 0,
    .checks = lamb_gpu_checks,
    .hparams = lamb_gpu_hp,
    .bytes_per_elem = lamb_gpu_bytes,
};

/* lbscale train's rate when told none (lbscale/optim.h: the sweep's
 * set-up): B=1024: lr 0.005/0.01/0.02 -> 89.5/89.9/88.9%; B=8192: lr
 * 0.02/0.04/0.08 -> 86.2/86.7/80.9%.  SLAMB and 1-bit LAMB borrow it. */
const struct lbs_optim_lr_rule lbs_lr_lamb = {0.01, 0.5, 0.04};

const struct lbs_optim_ops lbs_optim_lamb = {
    .name = "lamb",
    .summary = "LAMB: Adam direction scaled per layer by ||w||/||u||",
    .params = lamb_params,
    .lr_rule = &lbs_lr_lamb,
    .dense = 1,
    .adaptive = 1,
    .cfg_size = sizeof(struct lamb_cfg),
    .bytes_per_elem = lamb_bytes,
    .check = lamb_check,
    .init = lamb_init,
    .step = lamb_step,
    .fini = lamb_fini,
    .device = &lamb_gpu,
    .kern = &lbs_lamb_kfam,
    .exact = 0,
};
