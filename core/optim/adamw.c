/* adamw.c - AdamW (Loshchilov & Hutter), decoupled weight decay.
 *
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *   w -= lr ( (m/bc1) / (sqrt(v/bc2) + eps) + wd w )
 *
 * This is PyTorch's AdamW (w *= 1 - lr wd; w -= lr m^/(sqrt(v^)+eps))
 * written as one expression; it is also LAMB with the trust ratio fixed
 * at 1, which the tests check.  Weight decay applies to every tensor.
 * One fused pass: reads g, m, v, w and writes m, v, w = 28 bytes/element.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "kfam.h"
#include "lamb_kernel.h"
#include "optim_impl.h"

/* The Adam keys are all AdamW has. */
#define K(f) offsetof(struct lbs_adam_cfg, f)
static const struct lbs_param_spec adamw_params[] = {
    {"lr", LBS_P_REAL, 0.001, 0, INFINITY, 0, K(lr), "learning rate", NULL},
    {"b1", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, K(b1), "first-moment decay", NULL},
    {"b2", LBS_P_REAL, 0.999, 0, 1, LBS_P_MAX_OPEN, K(b2), "second-moment decay", NULL},
    {"eps", LBS_P_REAL, 1e-8, 0, 1, LBS_P_MIN_OPEN, K(eps), "added to sqrt(v)", NULL},
    {"wd", LBS_P_REAL, 0.01, 0, INFINITY, 0, K(wd), "decoupled weight decay", NULL},
    {"bias_correction", LBS_P_BOOL, 1, 0, 1, 0, K(bias_correction), "divide m, v by 1-b^t", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K

struct adamw_state {
    float **m, **v;
};

static int adamw_init(struct lbs_optim *o, struct lbs_err *err)
{
    struct adamw_state *s = calloc(1, sizeof *s);
    if (!s || !(s->m = lbs_alloc_layer_state(o)) ||
        !(s->v = lbs_alloc_layer_state(o))) {
        if (s)
            lbs_free_layer_state(o, s->m);
        free(s);
        return lbs_err_set(err, -ENOMEM, "adamw: out of memory for state");
    }
    o->state = s;
    return 0;
}

static double adamw_layer(const struct lbs_adamw_coef *k, const float *g,
                          float *m, float *v, float *w, size_t n)
{
    const struct lbs_adamw_kern *K = lbs_kfam_cur(&lbs_adamw_kfam);
    if (n < LBS_PAR_MIN)
        return K->adamw(k, g, m, v, w, n);
    double su = 0; /* only to detect NaN/Inf; costs no memory traffic */
#pragma omp parallel for schedule(static) reduction(+ : su)
    for (size_t c = 0; c < LBS_CHUNKS; c++) {
        size_t lo = lbs_chunk_lo(n, c), hi = lbs_chunk_lo(n, c + 1);
        su += K->adamw(k, g + lo, m + lo, v + lo, w + lo, hi - lo);
    }
    return su;
}

static int adamw_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct lbs_adam_cfg *c = o->cfg;
    struct adamw_state *s = o->state;
    int rc;
    const struct lbs_lamb_coef a = lbs_adam_coef(c, o->t, 1.0);
    const struct lbs_adamw_coef k = {
        .b1 = a.b1, .b2 = a.b2, .c1 = a.c1, .c2 = a.c2,
        .ibc1 = a.ibc1, .ibc2 = a.ibc2, .eps = a.eps, .wd = (float)c->wd,
        .lr = (float)(c->lr * o->lr_scale),
    };
    for (size_t i = 0; i < o->nlayers; i++) {
        const struct lbs_layer *L = &o->layers[i];
        double su = adamw_layer(&k, L->g, s->m[i], s->v[i], L->w, L->n);
        if ((rc = lbs_check_finite(o, i, su, err)))
            return rc;
    }
    return 0;
}

static void adamw_fini(struct lbs_optim *o)
{
    struct adamw_state *s = o->state;
    if (!s)
        return;
    lbs_free_layer_state(o, s->m);
    lbs_free_layer_state(o, s->v);
    free(s);
}

/* Bytes per element of a step, CPU and GPU alike: one pass reading g, m,
 * v, w and writing m, v, w. */
#define ADAMW_BYTES 28.0

static double adamw_bytes(const struct lbs_optim *o)
{
    (void)o;
    return ADAMW_BYTES;
}

/* The GPU kernels (core/cuda/optim.cu) and the specs tests/gpu/
 * check_optim.c compares them with this file on. */
static const char *const adamw_gpu_checks[] = {
    "adamw:lr=0.001,wd=0.01",
    "adamw:lr=0.01,wd=0,bias_correction=0",
    NULL,
};
static void adamw_gpu_hp(const void *cfg, struct lbs_optim_device_hp *hp)
{
    lbs_adam_device_hp(cfg, hp);
}
/* The GPU kernel (k_adamw) is the same single pass. */
static double adamw_gpu_bytes(const void *cfg, const struct lbs_layer *l,
                              size_t nl)
{
    (void)cfg, (void)l, (void)nl;
    return ADAMW_BYTES;
}
static const struct lbs_optim_device adamw_gpu = {
    .hparams = adamw_gpu_hp,
    .bytes_per_elem = adamw_gpu_bytes,
    .kernel = LBS_KERNEL_ADAMW,
    .exact = 1,
    .checks = adamw_gpu_checks,
};

/* lbscale train's rate when told none (lbscale/optim.h: the sweep's
 * set-up): B=1024: lr 0.001/0.002/0.004 -> 88.6/89.1/89.6%; B=8192: lr
 * 0.008/0.016/0.032 -> 84.4/84.5/83.7%. */
static const struct lbs_optim_lr_rule adamw_lr = {0.004, 0.5, 0.03};

const struct lbs_optim_ops lbs_optim_adamw = {
    .name = "adamw",
    .summary = "AdamW: Adam with decoupled weight decay",
    .params = adamw_params,
    .lr_rule = &adamw_lr,
    .dense = 1,
    .adaptive = 1,
    .cfg_size = sizeof(struct lbs_adam_cfg),
    .bytes_per_elem = adamw_bytes,
    .init = adamw_init,
    .step = adamw_step,
    .fini = adamw_fini,
    .device = &adamw_gpu,
    .kern = &lbs_adamw_kfam,
    .exact = 1,
};
