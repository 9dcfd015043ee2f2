/* sgd.c - momentum SGD, PyTorch's formulation (dampening 0).
 *
 *   d = g + wd w;   b = mu b + d;   step = nesterov ? d + mu b : b
 *   w -= lr step
 *
 * One fused pass (lbs_momentum_layers: every layer in one parallel
 * region): reads g, b, w and writes b, w = 20 bytes/element.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "optim_impl.h"

struct sgd_cfg {
    double lr, momentum, wd, nesterov;
};

#define K(f) offsetof(struct sgd_cfg, f)
static const struct lbs_param_spec sgd_params[] = {
    {"lr", LBS_P_REAL, 0.1, 0, INFINITY, 0, K(lr), "learning rate", NULL},
    {"momentum", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, K(momentum), "momentum factor mu", NULL},
    {"wd", LBS_P_REAL, 0, 0, INFINITY, 0, K(wd), "L2 weight decay (added to g)", NULL},
    {"nesterov", LBS_P_BOOL, 0, 0, 1, 0, K(nesterov), "Nesterov momentum", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};
#undef K

static int sgd_check(const void *cfg, const char *name, struct lbs_err *err)
{
    const struct sgd_cfg *c = cfg;
    (void)name;
    if (c->nesterov && c->momentum == 0)
        return lbs_err_set(err, -EINVAL, "sgd: nesterov=1 needs momentum > 0");
    return 0;
}

static int sgd_init(struct lbs_optim *o, struct lbs_err *err)
{
    if (!(o->state = lbs_alloc_layer_state(o)))
        return lbs_err_set(err, -ENOMEM, "sgd: out of memory for state");
    return 0;
}

static int sgd_step(struct lbs_optim *o, struct lbs_err *err)
{
    const struct sgd_cfg *c = o->cfg;
    float **b = o->state;
    const struct lbs_momentum mp = {
        .gs = 1, .wd = (float)c->wd, .mu = (float)c->momentum, .a = 1,
        .k = (float)(c->lr * o->lr_scale), .nesterov = c->nesterov != 0,
    };
    /* all layers in one parallel region; a non-finite sum names the
     * first such layer (every layer has been updated by then) */
    size_t bad = lbs_momentum_layers(&mp, o->layers, b, o->nlayers);
    return bad < o->nlayers ? lbs_check_finite(o, bad, NAN, err) : 0;
}

static void sgd_fini(struct lbs_optim *o)
{
    lbs_free_layer_state(o, o->state);
}

/* Bytes per element of a step, CPU and GPU alike: one pass reading g, b,
 * w and writing b, w. */
#define SGD_BYTES 20.0

static double sgd_bytes(const struct lbs_optim *o)
{
    (void)o;
    return SGD_BYTES;
}

/* The GPU kernels (core/cuda/optim.cu) and the specs tests/gpu/
 * check_optim.c compares them with this file on. */
static const char *const sgd_gpu_checks[] = {
    "sgd:lr=0.1,momentum=0.9,wd=0.0001",
    "sgd:lr=0.05,momentum=0.8,nesterov=1,wd=0.001",
    NULL,
};
static void sgd_gpu_hp(const void *cfg, struct lbs_optim_device_hp *hp)
{
    const struct sgd_cfg *c = cfg;
    hp->lr = c->lr;
    hp->momentum = c->momentum;
    hp->wd = c->wd;
    hp->nesterov = c->nesterov;
}
/* The GPU kernel (k_sgd) is the same single pass. */
static double sgd_gpu_bytes(const void *cfg, const struct lbs_layer *l,
                            size_t nl)
{
    (void)cfg, (void)l, (void)nl;
    return SGD_BYTES;
}
static const struct lbs_optim_device sgd_gpu = {
    .hparams = sgd_gpu_hp,
    .bytes_per_elem = sgd_gpu_bytes,
    .kernel = LBS_KERNEL_SGD,
    .exact = 1,
    .checks = sgd_gpu_checks,
};

/* lbscale train's rate when told none (lbscale/optim.h: the sweep's
 * set-up): B=1024: lr 0.05/0.1/0.2 -> 88.4/89.1/88.9%; B=8192: lr
 * 0.1/0.2/0.4/0.8 -> 83.1/82.0/10/10% (linear scaling diverges, hence the
 * low cap).  DmSGD and DecentLaM (momentum SGD underneath) borrow it. */
const struct lbs_optim_lr_rule lbs_lr_sgd = {0.1, 0.5, 0.15};

const struct lbs_optim_ops lbs_optim_sgd = {
    .name = "sgd",
    .summary = "momentum SGD (optionally Nesterov), PyTorch semantics",
    .params = sgd_params,
    .lr_rule = &lbs_lr_sgd,
    .dense = 1,
    .cfg_size = sizeof(struct sgd_cfg),
    .bytes_per_elem = sgd_bytes,
    .check = sgd_check,
    .init = sgd_init,
    .step = sgd_step,
    .fini = sgd_fini,
    .device = &sgd_gpu,
    .kern = &lbs_momentum_kfam,
    .exact = 1,
};
