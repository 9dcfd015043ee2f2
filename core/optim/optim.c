/* optim.c - the driver: spec parsing, lifetime, the step counter. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kfam.h"
#include "optim_impl.h"

extern const struct lbs_optim_ops *const lbs_optim_registry[];

/* The registry as param.c's registry calls see it. */
static const char *entry_name(size_t i)
{
    return lbs_optim_registry[i] ? lbs_optim_registry[i]->name : NULL;
}

static int entry_device(size_t i)
{
    return lbs_optim_registry[i]->device != NULL;
}

static void help_one(size_t i, FILE *f)
{
    const struct lbs_optim_ops *ops = lbs_optim_registry[i];
    double b = 0;
    fprintf(f, "  %s - %s\n", ops->name, ops->summary);
    /* the ops table's answers, so no help text elsewhere copies them */
    fprintf(f, "    %s\n", ops->dense
                ? "data-parallel: gradients averaged by allreduce "
                  "(--compress applies)"
                : "its own communication (--compress refused)");
    if (!lbs_optim_spec_bytes_per_elem(ops->name, &b, NULL))
        fprintf(f, "    traffic: %g B/elem a step at the defaults (check "
                "pass included)%s\n", b, ops->device ? "; GPU kernels" : "");
    lbs_params_print(ops->params, f);
}

static const struct lbs_spec_registry reg = {
    "optimizer", "optim", entry_name, entry_device, help_one,
};

static const struct lbs_optim_ops *lookup(const char *name)
{
    size_t i;
    return lbs_registry_index(&reg, name, &i) ? NULL : lbs_optim_registry[i];
}

const char *const *lbs_optim_names(void)
{
    static const char *names[64];
    return lbs_registry_names(&reg, names, 64);
}

int lbs_layers_check(const struct lbs_layer *l, size_t n, int need_buffers,
                     struct lbs_err *err)
{
    if (n == 0 || !l)
        return lbs_err_set(err, -EINVAL, "no layers given");
    for (size_t i = 0; i < n; i++) {
        const char *name = l[i].name ? l[i].name : "?";
        if (l[i].n == 0)
            return lbs_err_set(err, -EINVAL, "layer %zu ('%s'): empty", i,
                               name);
        if (need_buffers && (!l[i].w || !l[i].g))
            return lbs_err_set(err, -EINVAL,
                               "layer %zu ('%s'): NULL buffers", i, name);
        if (l[i].ndim < 1 || l[i].ndim > LBS_MAX_DIMS)
            return lbs_err_set(err, -EINVAL, "layer %zu ('%s'): ndim %d not "
                               "in 1..%d", i, name, l[i].ndim, LBS_MAX_DIMS);
        size_t prod = 1;
        for (int d = 0; d < l[i].ndim; d++)
            prod *= l[i].shape[d];
        if (prod != l[i].n)
            return lbs_err_set(err, -EINVAL, "layer %zu ('%s'): shape has %zu "
                               "elements but n = %zu", i, name, prod, l[i].n);
    }
    return 0;
}

/* The optimizer a spec names: its ops, and args pointing at "k=v,...". */
static int find(const char *spec, const struct lbs_optim_ops **ops,
                const char **args, struct lbs_err *err)
{
    size_t i;
    int rc = lbs_registry_find(&reg, spec, &i, args, err);
    if (!rc)
        *ops = lbs_optim_registry[i];
    return rc;
}

/* Parse args into cfg (ops->cfg_size bytes), format the effective list
 * into buf and run the cross-key check: everything lbs_optim_new does
 * with a spec before it looks at layers, in the same order. */
static int parse_cfg(const struct lbs_optim_ops *ops, const char *args,
                     void *cfg, char *buf, size_t len, struct lbs_err *err)
{
    int rc = lbs_params_parse(ops->params, ops->name, args, cfg, err);
    if (!rc)
        rc = lbs_params_effective(ops->params, ops->name, cfg, buf, len, err);
    if (rc)
        return rc;
    return ops->check ? ops->check(cfg, ops->name, err) : 0;
}

static int cfg_get(const struct lbs_optim_ops *ops, const void *cfg,
                   const char *key, double *value, struct lbs_err *err)
{
    if (!lbs_params_get(ops->params, cfg, key, value))
        return 0;
    return lbs_err_set(err, -ENOENT, "%s has no key '%s'", ops->name, key);
}

/* Free what lbs_optim_new allocates around the optimizer's own state. */
static void release(struct lbs_optim *o)
{
    lbs_compressor_free(o->cmp);
    if (o->own_comm)
        lbs_comm_free(o->comm);
    free(o->cfg);
    free(o->layers);
    free(o->gsq);
    free(o->gpart);
    free(o->keep);
    free(o);
}

int lbs_optim_new(const char *spec, const struct lbs_layer *layers,
                  size_t nlayers, struct lbs_comm *comm,
                  struct lbs_optim **out, struct lbs_err *err)
{
    const struct lbs_optim_ops *ops;
    const char *args;
    *out = NULL;
    int rc = find(spec, &ops, &args, err);
    if (rc)
        return rc;
    rc = lbs_layers_check(layers, nlayers, 1, err);
    if (rc)
        return rc;
    struct lbs_optim *o = calloc(1, sizeof *o);
    if (!o)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    o->ops = ops;
    o->lr_scale = 1.0;
    o->cfg = calloc(1, ops->cfg_size);
    o->layers = malloc(nlayers * sizeof *layers);
    o->gsq = calloc(nlayers, sizeof *o->gsq);
    o->gpart = malloc(nlayers * LBS_CHUNKS * sizeof *o->gpart);
    o->keep = calloc(nlayers, sizeof *o->keep);
    if (!o->cfg || !o->layers || !o->gsq || !o->gpart || !o->keep) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto fail;
    }
    memcpy(o->layers, layers, nlayers * sizeof *layers);
    o->nlayers = nlayers;
    rc = parse_cfg(ops, args, o->cfg, o->params_str, sizeof o->params_str,
                   err);
    if (rc)
        goto fail;
    if (comm) {
        o->comm = comm;
    } else {
        rc = lbs_comm_self_new(&o->comm, err);
        if (rc)
            goto fail;
        o->own_comm = 1;
    }
    rc = ops->init(o, err);
    if (rc)
        goto fail;
    *out = o;
    return 0;
fail:
    release(o);
    return rc;
}

/* Measure every layer's ||g||^2 (the optimizers reuse it for clipping and
 * trust ratios) and agree across ranks whether any gradient is non-finite.
 * After a dense average a NaN on one rank is a NaN on all of them; without
 * one, a single-int MAX allreduce makes every rank take the same decision,
 * so no rank can apply a step that another skipped. */
static int grads_finite(struct lbs_optim *o, int *finite, struct lbs_err *err)
{
    double total = 0;
    int bad = 0;
    /* not kept: gsq 0, not computed this step, never read */
    lbs_sumsq_layers(o->layers, o->nlayers, o->keep, o->gpart, o->gsq);
    for (size_t i = 0; i < o->nlayers; i++) {
        if (!o->keep[i])
            continue;
        bad |= !isfinite(o->gsq[i]);
        total += o->gsq[i];
    }
    o->gnorm = sqrt(total);
    if (!o->ops->dense && o->comm->size > 1) {
        int32_t flag = bad;
        o->comm->err = err;
        int rc = lbs_allreduce(o->comm, &flag, 1, LBS_INT32, LBS_MAX, -1);
        if (rc)
            return rc;
        bad = flag != 0;
    }
    *finite = !bad;
    return 0;
}

static void plan(struct lbs_optim *o, long step)
{
    if (o->keep_step == step)
        return;
    memset(o->keep, 1, o->nlayers);
    if (o->ops->plan)
        o->ops->plan(o, step, o->keep);
    o->keep_step = step;
}

void lbs_optim_next_keep(struct lbs_optim *o, uint8_t *keep)
{
    plan(o, o->t + 1);
    memcpy(keep, o->keep, o->nlayers);
}

int lbs_optim_step(struct lbs_optim *o, struct lbs_err *err)
{
    lbs_comm_set_step(o->comm, o->t + 1);
    plan(o, o->t + 1);
    int rc = o->ops->dense ? lbs_optim_average_grads(o, err) : 0;
    int finite = 1;
    if (!rc)
        rc = grads_finite(o, &finite, err);
    if (rc)
        return rc;
    if (!finite) {
        o->skipped++;
        if (o->cmp)   /* a NaN/Inf kept in a residual would poison every
                         later step: start the memory afresh */
            lbs_compressor_reset(o->cmp);
        lbs_err_set(err, 1, "%s: step %ld skipped: non-finite gradient on "
                    "some rank (%ld skipped so far)", o->ops->name, o->t + 1,
                    o->skipped);
        return 1;
    }
    o->t++;
    return o->ops->step(o, err);
}

long lbs_optim_skipped(const struct lbs_optim *o) { return o->skipped; }

/* May ops take the compressor spec (non-empty)?  The length and the
 * data-parallel rule; the spec itself is the compressor driver's. */
static int compressor_allowed(const struct lbs_optim_ops *ops,
                              const char *spec, struct lbs_err *err)
{
    size_t max = sizeof ((struct lbs_optim *)0)->cmp_spec - 1;
    if (strlen(spec) > max)
        return lbs_err_set(err, -EINVAL, "compressor spec too long (%zu "
                           "characters, at most %zu)", strlen(spec), max);
    if (!ops->dense) {
        char name[64];
        const char *colon = strchr(spec, ':');
        size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), spec);
        return lbs_err_set(err, -EINVAL, "compressor '%s' cannot be combined "
                           "with optimizer '%s', which does its own "
                           "communication (not data-parallel)", name,
                           ops->name);
    }
    return 0;
}

int lbs_optim_set_compressor(struct lbs_optim *o, const char *spec,
                             struct lbs_err *err)
{
    if (o->t > 0 || o->skipped > 0)
        return lbs_err_set(err, -EINVAL, "%s: a compressor must be set "
                           "before the first step", o->ops->name);
    if (!spec || !*spec) {
        lbs_compressor_free(o->cmp);
        o->cmp = NULL;
        o->cmp_spec[0] = 0;
        return 0;
    }
    int rc = compressor_allowed(o->ops, spec, err);
    if (rc)
        return rc;
    struct lbs_compressor *c;
    rc = lbs_compressor_new(spec, &c, err);
    if (rc)
        return rc;
    lbs_compressor_free(o->cmp);
    o->cmp = c;
    snprintf(o->cmp_spec, sizeof o->cmp_spec, "%s", spec);
    return 0;
}

const char *lbs_optim_compressor_spec(const struct lbs_optim *o)
{
    return o->cmp ? o->cmp_spec : NULL;
}

const struct lbs_compressor *lbs_optim_compressor(const struct lbs_optim *o)
{
    return o->cmp;
}

void lbs_optim_free(struct lbs_optim *o)
{
    if (!o)
        return;
    o->ops->fini(o);
    release(o);
}

const char *lbs_optim_name(const struct lbs_optim *o) { return o->ops->name; }
const char *lbs_optim_params(const struct lbs_optim *o) { return o->params_str; }
int lbs_optim_get(const struct lbs_optim *o, const char *key, double *value,
                  struct lbs_err *err)
{
    return cfg_get(o->ops, o->cfg, key, value, err);
}

long lbs_optim_steps(const struct lbs_optim *o) { return o->t; }
void lbs_optim_set_lr_scale(struct lbs_optim *o, double f) { o->lr_scale = f; }

double lbs_optim_bytes_per_elem(const struct lbs_optim *o)
{
    return o->ops->bytes_per_elem(o) + 4.0;   /* + the gradient check */
}

int lbs_optim_stat(const struct lbs_optim *o, const char *name,
                   double *value, struct lbs_err *err)
{
    int rc = o->ops->stat && name ? o->ops->stat(o, name, value, err)
                                  : -ENOENT;
    if (rc == -ENOENT)
        return lbs_err_set(err, -ENOENT, "%s has no statistic '%s'",
                           o->ops->name, name ? name : "");
    return rc;
}

const char *const *lbs_optim_stat_names(const struct lbs_optim *o)
{
    static const char *const none[] = {NULL};
    return o->ops->stats ? o->ops->stats : none;
}

int lbs_optim_help(const char *name, FILE *f)
{
    return lbs_registry_help(&reg, name, f);
}

/* ---- questions answered from the ops tables, without layers ---- */

int lbs_optim_props(const char *spec, struct lbs_optim_props *p,
                    struct lbs_err *err)
{
    const struct lbs_optim_ops *ops;
    const char *args;
    int rc = find(spec, &ops, &args, err);
    if (rc)
        return rc;
    *p = (struct lbs_optim_props){
        .name = ops->name,
        .summary = ops->summary,
        .params = ops->params,
        .dense = ops->dense,
        .samples_layers = ops->plan != NULL,
        .own_comm = !ops->dense,
        .adaptive = ops->adaptive,
        .run_key = ops->run_key,
        .run_fraction = ops->run_fraction,
        .lr_rule = ops->lr_rule,
        .device = ops->device,
    };
    return 0;
}

struct lbs_optim_config {
    const struct lbs_optim_ops *ops;
    void *cfg;                  /* owned, ops->cfg_size bytes */
    char params_str[sizeof ((struct lbs_optim *)0)->params_str];
};

int lbs_optim_config_new(const char *spec, struct lbs_optim_config **out,
                         struct lbs_err *err)
{
    const struct lbs_optim_ops *ops;
    const char *args;
    *out = NULL;
    int rc = find(spec, &ops, &args, err);
    if (rc)
        return rc;
    struct lbs_optim_config *c = calloc(1, sizeof *c);
    if (!c || !(c->cfg = calloc(1, ops->cfg_size))) {
        free(c);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    c->ops = ops;
    rc = parse_cfg(ops, args, c->cfg, c->params_str, sizeof c->params_str,
                   err);
    if (rc) {
        lbs_optim_config_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void lbs_optim_config_free(struct lbs_optim_config *c)
{
    if (!c)
        return;
    free(c->cfg);
    free(c);
}

const char *lbs_optim_config_name(const struct lbs_optim_config *c)
{
    return c->ops->name;
}

const char *lbs_optim_config_params(const struct lbs_optim_config *c)
{
    return c->params_str;
}

int lbs_optim_config_get(const struct lbs_optim_config *c, const char *key,
                         double *value, struct lbs_err *err)
{
    return cfg_get(c->ops, c->cfg, key, value, err);
}

int lbs_optim_config_device(const struct lbs_optim_config *c,
                            struct lbs_optim_device_hp *hp,
                            struct lbs_err *err)
{
    const struct lbs_optim_device *d = c->ops->device;
    if (!d || !d->hparams) {
        char have[256];
        lbs_registry_device_names(&reg, have, sizeof have);
        return lbs_err_set(err, -ENOTSUP, "optimizer '%s' has no CUDA "
                           "kernels (%s have)", c->ops->name, have);
    }
    /* keys the optimizer lacks keep these neutral values */
    *hp = (struct lbs_optim_device_hp){.bias_correction = 1, .cmax = 1e300,
                                       .clamp_1d = 1};
    d->hparams(c->cfg, hp);
    return 0;
}

double lbs_optim_config_device_bytes(const struct lbs_optim_config *c,
                                     const struct lbs_layer *layers,
                                     size_t nlayers)
{
    const struct lbs_optim_device *d = c->ops->device;
    if (!d || !d->bytes_per_elem)
        return 0;
    return d->bytes_per_elem(c->cfg, layers, nlayers) + 4.0;
}

int lbs_optim_check(const char *spec, const char *compress,
                    struct lbs_err *err)
{
    struct lbs_optim_config *c;
    int rc = lbs_optim_config_new(spec, &c, err);
    if (rc)
        return rc;
    if (compress && *compress)
        rc = compressor_allowed(c->ops, compress, err);
    if (!rc && compress && *compress)
        rc = lbs_compressor_check(compress, err);
    lbs_optim_config_free(c);
    return rc;
}

int lbs_optim_has_key(const char *name, const char *key)
{
    const struct lbs_optim_ops *ops = lookup(name);
    return ops && !lbs_params_get(ops->params, NULL, key, NULL);
}

/* The roofline model needs an optimizer object (state, layers, step):
 * ask it of one made on a single 1x1 layer, one rank, before any step.
 * This is the one place that builds such a layer. */
int lbs_optim_spec_bytes_at(const char *spec, long step, long ranks,
                            double *bpe, struct lbs_err *err)
{
    float w = 0, g = 0;
    const struct lbs_layer one = {.name = "nominal", .w = &w, .g = &g,
                                  .n = 1, .ndim = 2, .shape = {1, 1}};
    struct lbs_comm *comm = NULL;
    struct lbs_optim *o;
    if (step < 1 || ranks < 1 || ranks > INT_MAX)
        return lbs_err_set(err, -EINVAL, "step %ld on %ld ranks: both must "
                           "be >= 1", step, ranks);
    int rc = lbs_comm_record_new((int)ranks, &comm, err);
    if (!rc)
        rc = lbs_optim_new(spec, &one, 1, comm, &o, err);
    if (!rc) {
        o->t = step - 1;        /* the model describes the coming step */
        *bpe = lbs_optim_bytes_per_elem(o);
        lbs_optim_free(o);
    }
    lbs_comm_free(comm);
    return rc;
}

int lbs_optim_spec_bytes_per_elem(const char *spec, double *bpe,
                                  struct lbs_err *err)
{
    float w = 0, g = 0;
    const struct lbs_layer one = {.name = "nominal", .w = &w, .g = &g,
                                  .n = 1, .ndim = 2, .shape = {1, 1}};
    struct lbs_optim *o;
    int rc = lbs_optim_new(spec, &one, 1, NULL, &o, err);
    if (rc)
        return rc;
    *bpe = lbs_optim_bytes_per_elem(o);
    lbs_optim_free(o);
    return 0;
}

size_t lbs_optim_kfams(const struct lbs_kfam **out, size_t n, size_t cap)
{
    for (size_t i = 0; lbs_optim_registry[i]; i++)
        n = lbs_kfam_add(out, n, cap, lbs_optim_registry[i]->kern);
    return n;
}
