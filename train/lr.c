/* lr.c - the learning-rate rules of `lbscale train`: the tuned rules, the
 * effective spec and the schedule (lr.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lbscale/optim.h"
#include "lbscale/param.h"
#include "lr.h"

/* ---- per-optimizer defaults -------------------------------------------
 *
 * lr(B) = min(lr_max, lr_ref * (B / 1024)^alpha), B = the global batch,
 * unless the spec sets lr itself: the optimizer's tuned rule (struct
 * lbs_optim_lr_rule in its ops table, beside the sweep it came from);
 * without one, the optimizer's own lr default. */

/* The tuned rule of optimizer name, or NULL. */
static const struct lbs_optim_lr_rule *find_rule(const char *name)
{
    struct lbs_optim_props p;
    return lbs_optim_props(name, &p, NULL) ? NULL : p.lr_rule;
}

/* ---- the effective optimizer spec ------------------------------------- */

static int spec_has_key(const char *spec, const char *key)
{
    const char *a = strchr(spec, ':');
    size_t kl = strlen(key);
    while (a && *a) {
        a++;
        while (*a == ' ')
            a++;
        if (!strncmp(a, key, kl) && (a[kl] == '=' || a[kl] == ' '))
            return 1;
        a = strchr(a, ',');
    }
    return 0;
}

void lbs_train_spec_value(const char *spec, const char *key, char *out,
                       size_t len)
{
    out[0] = '\0';
    const char *a = strchr(spec, ':');
    size_t kl = strlen(key);
    while (a && *a) {
        a++;
        if (!strncmp(a, key, kl) && a[kl] == '=') {
            size_t n = strcspn(a + kl + 1, ",");
            snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1),
                     a + kl + 1);
            return;
        }
        a = strchr(a, ',');
    }
}

/* Does optimizer `name` accept `key`? (its key table in core) */
static int optim_has_key(const char *name, const char *key, const char *val)
{
    (void)val;
    return lbs_optim_has_key(name, key);
}

static void append_kv(char *spec, size_t len, const char *kv)
{
    size_t l = strlen(spec);
    snprintf(spec + l, len - l, "%s%s", strchr(spec, ':') ? "," : ":", kv);
}

/* --lr-scaling auto: linear for momentum-SGD-like methods (Goyal et al.;
 * LARS), square root for the Adam family (Krizhevsky; the LAMB paper):
 * the optimizer's ops table says which it is (props.adaptive). */
static const char *auto_scaling(const char *name)
{
    struct lbs_optim_props p;
    return !lbs_optim_props(name, &p, NULL) && p.adaptive ? "sqrt"
                                                          : "linear";
}

/* lr.h */
const char *lbs_train_lr_scaling(const struct lbs_train_config *t,
                                 const char *name)
{
    if (!(t->lr_base > 0))
        return NULL;
    if (!t->lr_scaling || !strcmp(t->lr_scaling, "auto"))
        return auto_scaling(name);
    return t->lr_scaling;
}

/* The lr an optimizer built from spec runs at (its key table's default
 * when the spec sets none), or NaN when it has no lr key. */
static void optim_lr(const char *spec, double *lr)
{
    struct lbs_optim_config *c;
    *lr = NAN;
    if (lbs_optim_config_new(spec, &c, NULL))
        return;
    if (lbs_optim_config_get(c, "lr", lr, NULL))
        *lr = NAN;
    lbs_optim_config_free(c);
}

/* lr.h */
int lbs_train_effective_spec(const struct lbs_train_config *t,
                             long total_steps, char *spec, size_t len,
                             char *rule, size_t rlen, double *lr_used,
                             struct lbs_err *err)
{
    char name[64];
    const char *args;
    int rc = lbs_spec_split(t->spec, name, sizeof name, &args, err);
    if (rc)
        return rc;
    snprintf(spec, len, "%s", t->spec);
    if (spec[strlen(spec) - 1] == ':')
        spec[strlen(spec) - 1] = '\0';
    *lr_used = NAN;
    int untuned = 0;
    const struct lbs_optim_lr_rule *d = find_rule(name);
    char kv[96];
    const char *sc = lbs_train_lr_scaling(t, name);
    if (spec_has_key(spec, "lr")) {
        snprintf(rule, rlen, "given in the spec");
    } else if (sc) {
        double r = (double)t->global_batch / (double)t->lr_ref_batch;
        double lr = t->lr_base * (!strcmp(sc, "linear") ? r
                                  : !strcmp(sc, "sqrt") ? sqrt(r) : 1.0);
        *lr_used = lr;
        snprintf(kv, sizeof kv, "lr=%.6g", lr);
        append_kv(spec, len, kv);
        if (!strcmp(sc, "none"))
            snprintf(rule, rlen, "none: %g at every batch", t->lr_base);
        else
            snprintf(rule, rlen, "%s: %g x %s(%ld/%ld)", sc, t->lr_base,
                     !strcmp(sc, "sqrt") ? "sqrt" : "", t->global_batch,
                     t->lr_ref_batch);
    } else if (d) {
        double lr = d->lr_ref * pow((double)t->global_batch /
                                    LBS_OPTIM_LR_REF_BATCH, d->alpha);
        if (lr > d->lr_max)
            lr = d->lr_max;
        *lr_used = lr;
        snprintf(kv, sizeof kv, "lr=%.6g", lr);
        append_kv(spec, len, kv);
        snprintf(rule, rlen, "%g x (%ld/%g)^%g, max %g", d->lr_ref,
                 t->global_batch, LBS_OPTIM_LR_REF_BATCH, d->alpha,
                 d->lr_max);
    } else {
        untuned = 1;
        snprintf(rule, rlen, "the optimizer's default (no tuned entry)");
    }
    if (t->topology && !spec_has_key(spec, "topology") &&
        !optim_has_key(name, "topology", t->topology))
        return lbs_err_set(err, -EINVAL, "--topology: optimizer '%s' has no "
                           "topology (only decentralized ones do)", name);
    if (!spec_has_key(spec, "topology") &&
        optim_has_key(name, "topology", "ring")) {
        /* ring unless told: symmetric W for both gossip methods (see
         * --help: DecentLaM diverges on the directed exponential graph) */
        snprintf(kv, sizeof kv, "topology=%s",
                 t->topology ? t->topology : "ring");
        append_kv(spec, len, kv);
    }
    struct lbs_optim_props p;
    if (!lbs_optim_props(name, &p, NULL) && p.run_key &&
        !spec_has_key(spec, p.run_key)) {
        /* a key sized to the run (1-bit LAMB's freeze_step, SLAMB's
         * kwarm: issue 17, not a fixed step count that a short run never
         * leaves).  Earlier
         * short runs at B=8192 (73 steps) diverged at 20% and needed 50%:
         * the study reports such runs as diverged rather than hiding them */
        long f = lround(p.run_fraction * (double)total_steps);
        snprintf(kv, sizeof kv, "%s=%ld", p.run_key, f < 1 ? 1 : f);
        append_kv(spec, len, kv);
    }
    if (!spec_has_key(spec, "seed") && optim_has_key(name, "seed", "1")) {
        snprintf(kv, sizeof kv, "seed=%ld", t->seed);
        append_kv(spec, len, kv);
    }
    if (untuned)   /* the rate it runs at, from the whole spec */
        optim_lr(spec, lr_used);
    return 0;
}

/* lr.h */
double lbs_train_lr_factor(const char *d, long w, long T, long it)
{
    if (it <= w)
        return (double)it / (double)(w + 1);
    double p = T > w ? (double)(it - w - 1) / (double)(T - w) : 0;
    if (!strcmp(d, "cosine"))
        return 0.5 * (1 + cos(M_PI * p));
    if (!strcmp(d, "linear"))
        return 1 - p;
    if (!strcmp(d, "step"))
        return p < 0.5 ? 1 : p < 0.75 ? 0.1 : 0.01;
    return 1;
}
