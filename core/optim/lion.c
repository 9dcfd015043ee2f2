/* lion.c - Lion (Chen et al. 2023, "Symbolic Discovery of Optimization
 * Algorithms", Algorithm 2):
 *
 *   c = b1 m + (1 - b1) g;   w -= lr (sign(c) + wd w);
 *   m = b2 m + (1 - b2) g
 *
 * sign(0) = 0, as torch.sign in the authors' code.  The decay is
 * decoupled (AdamW's); defaults b1 = 0.9, b2 = 0.99, wd = 0 (the paper's;
 * its lr is 3-10x below AdamW's, hence 1e-4).  One fused pass over all
 * layers in one parallel region (lbs_layers_pass, the kernel in
 * lion_tmpl.c): reads g, m, w and writes m, w = 20 bytes/element,
 * momentum SGD's traffic.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "kfam.h"
#include "lion_kern.h"
#include "optim_impl.h"

struct lion_cfg {
    double lr, b1, b2, wd;
};

#define K(f) offsetof(struct lion_cfg, f)
static const struct lbs_param_spec lion_params[] = {
    {"lr", LBS_P_REAL, 1e-4, 0, INFINITY, 0, K(lr), "learning rate", NULL},
    {"b1", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, K(b1), "interpolation of m and g whose sign is the update", NULL},
    {"b2", LBS_P_REAL, 0.99, 0, 1, LBS_P_MAX_OPEN, K(b2), "momentum decay", NULL},
    {"wd", LBS_P_REAL, 0, 0, INFINITY, 0, K(wd), "decoupled weight decay", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K

static int lion_init(struct lbs_optim *o, struct lbs_err *err)
{
    if (!(o->state = lbs_alloc_layer_state(o)))
        return lbs_err_set(err, -ENOMEM, "lion: out of memory for state");
    return 0;
}

struct lion_ctx {
    const struct lbs_lion_kern *K;
    const struct lbs_lion_coef *k;
    const struct lbs_layer *L;
    float *const *m;
};

static double lion_chunk(const void *ctx, size_t i, size_t lo, size_t hi)
{
    const struct lion_ctx *x = ctx;
    const struct lbs_layer *L = &x->L[i];
    return x->K->lion(x->k, L->g + lo, x->m[i] + lo, L->w + lo, hi - lo);
}

static int lion_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct lion_cfg *c = o->cfg;
    const struct lbs_lion_coef k = {
        .b1 = (float)c->b1, .c1 = (float)(1 - c->b1), .b2 = (float)c->b2,
        .c2 = (float)(1 - c->b2), .lr = (float)(c->lr * o->lr_scale),
        .wd = (float)c->wd};
    /* every layer in one parallel region; a non-finite sum of m names
     * the first such layer (every layer has been updated by then) */
    const struct lion_ctx x = {lbs_kfam_cur(&lbs_lion_kfam), &k, o->layers,
                               o->state};
    size_t bad = lbs_layers_pass(o->layers, o->nlayers, lion_chunk, &x);
    return bad < o->nlayers ? lbs_check_finite(o, bad, NAN, err) : 0;
}

static void lion_fini(struct lbs_optim *o)
{
    lbs_free_layer_state(o, o->state);
}

static double lion_bytes(const struct lbs_optim *o)
{
    (void)o;
    return 20.0;   /* reads g, m, w; writes m, w */
}

const struct lbs_optim_ops lbs_optim_lion = {
    .name = "lion",
    .summary = "Lion: the sign of an interpolated momentum, decoupled decay",
    .params = lion_params,
    .dense = 1,
    .cfg_size = sizeof(struct lion_cfg),
    .bytes_per_elem = lion_bytes,
    .init = lion_init,
    .step = lion_step,
    .fini = lion_fini,
    .kern = &lbs_lion_kfam,
    .exact = 1,
};
