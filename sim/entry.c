/* entry.c - what `--optim LIST` names: per item, a data-parallel plan or
 * one or more recorded traces bound to the model (lbscale_sim.h,
 * "Optimizer entries"). */
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/optim.h"
#include "lbscale/param.h"
#include "sim_internal.h"

/* Optimizer memory traffic from core's own model
 * (lbs_optim_spec_bytes_per_elem); 44 (LAMB's) when this build does not
 * know the optimizer. */
static double optim_bpe(const char *name, const char *params, int *assumed)
{
    char spec[320];
    double b;
    *assumed = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0 && params && *params)
            snprintf(spec, sizeof spec, "%s:%s", name, params);
        else
            snprintf(spec, sizeof spec, "%s", name);
        if (!lbs_optim_spec_bytes_per_elem(spec, &b, NULL))
            return b;
    }
    *assumed = 1;
    return 44;
}

static void entry_free(struct lbs_sim_entry *e)
{
    for (size_t i = 0; i < e->nplans; i++)
        lbs_sim_plan_free(e->plans[i]);
    free(e->plans);
}

void lbs_sim_entries_free(struct lbs_sim_entry *e, size_t n)
{
    for (size_t k = 0; e && k < n; k++)
        entry_free(&e[k]);
    free(e);
}

/* The first trace names the entry and prices its optimizer step. */
static void name_entry(struct lbs_sim_entry *e, const struct lbs_sim_plan *raw)
{
    /* a compressed exchange is its own line: "lamb+topk:k=0.01"
     * never stands in for plain LAMB in a table or a gate */
    int cmp = raw->compress[0] && strcmp(raw->compress, "none");
    snprintf(e->name, sizeof e->name, "%.24s%s%.38s", raw->optim,
             cmp ? "+" : "", cmp ? raw->compress : "");
    e->bpe = optim_bpe(raw->optim, raw->params, &e->bpe_assumed);
}

/* Each distinct step's optimizer traffic beyond the first step's, from
 * core's model at that step (lbs_optim_spec_bytes_at): phases that
 * compress inside the optimizer (1-bit LAMB) pay their passes as
 * compression.  The model may depend on the rank count as a + b/P (1-bit
 * LAMB's server share: 56 + 8/P), the bytes rule's form: it is read at 2
 * and 65,536 ranks and evaluated at the simulated P by the engine.  A
 * build that does not know the optimizer leaves 0. */
static void step_extra_bpe(struct lbs_sim_plan *p)
{
    char spec[320];
    const double P1 = 2, P2 = 65536;
    snprintf(spec, sizeof spec, "%s%s%s", p->optim, p->params[0] ? ":" : "",
             p->params);
    double f1, f2;      /* the first step's, the base of the extra */
    if (lbs_optim_spec_bytes_at(spec, 1, (long)P1, &f1, NULL) ||
        lbs_optim_spec_bytes_at(spec, 1, (long)P2, &f2, NULL))
        return;
    for (size_t i = 0; i < p->nsteps; i++) {
        double x1, x2;
        if (lbs_optim_spec_bytes_at(spec, p->step[i].first, (long)P1, &x1,
                                    NULL) ||
            lbs_optim_spec_bytes_at(spec, p->step[i].first, (long)P2, &x2,
                                    NULL))
            return;
        double d1 = fmax(0, x1 - f1), d2 = fmax(0, x2 - f2);
        double b = (d1 - d2) / (1 / P1 - 1 / P2);
        p->step[i].extra_bpe_p = b;
        p->step[i].extra_bpe = d2 - b / P2;
    }
}

static int add_trace(struct lbs_sim_entry *e, const char *path,
                     const struct lbs_sim_model *m, struct lbs_err *err)
{
    struct lbs_sim_plan *raw, *bound;
    int rc = lbs_sim_trace_load(path, &raw, err);
    if (rc)
        return rc;
    rc = lbs_sim_plan_bind(raw, m, &bound, err);
    if (!rc) {
        void *q = realloc(e->plans, (e->nplans + 1) * sizeof *e->plans);
        if (!q) {
            lbs_sim_plan_free(bound);
            rc = lbs_err_set(err, -ENOMEM, "out of memory");
        } else {
            e->plans = q;
            step_extra_bpe(bound);
            e->plans[e->nplans++] = bound;
            if (e->nplans == 1)
                name_entry(e, raw);
        }
    }
    lbs_sim_plan_free(raw);
    return rc;
}

/* Can the simulator plan it without a trace: one allreduce of every
 * layer per step?  Core's properties say so (dense, all layers). */
int lbs_sim_is_data_parallel(const char *name)
{
    struct lbs_optim_props p;
    return !lbs_optim_props(name, &p, NULL) && p.dense && !p.samples_layers;
}

/* <data>/traces/ITEM-MODEL*.jsonl into e; 1 when there is none. */
static int preset_traces(const char *item, const struct lbs_sim_model *m,
                         struct lbs_sim_entry *e, char *pat, size_t patlen,
                         struct lbs_err *err)
{
    glob_t gl;
    snprintf(pat, patlen, "%s/traces/%s-%s*.jsonl", lbs_sim_data_dir(), item,
             m->name);
    if (glob(pat, 0, NULL, &gl) || gl.gl_pathc == 0) {
        globfree(&gl);
        return 1;
    }
    int rc = 0;
    snprintf(e->source, sizeof e->source, "%s%s", gl.gl_pathv[0],
             gl.gl_pathc > 1 ? " (+ more ranks)" : "");
    for (size_t i = 0; i < gl.gl_pathc && !rc; i++)
        rc = add_trace(e, gl.gl_pathv[i], m, err);
    globfree(&gl);
    return rc;
}

static int make_entry(const char *item, const struct lbs_sim_model *m,
                      double grad_bytes, struct lbs_sim_entry *e,
                      struct lbs_err *err)
{
    memset(e, 0, sizeof *e);
    if (sim_is_path(item, ".jsonl")) {
        snprintf(e->source, sizeof e->source, "%s", item);
        return add_trace(e, item, m, err);
    }
    for (const char *c = item; *c; c++)
        if (!(*c == '-' || *c == '_' || (*c >= '0' && *c <= '9') ||
              (*c >= 'a' && *c <= 'z')))
            return lbs_err_set(err, -ENOENT, "--optim: '%.60s' is neither "
                               "an optimizer name nor a .jsonl trace", item);
    char pat[1024];
    int rc = preset_traces(item, m, e, pat, sizeof pat, err);
    if (rc <= 0)
        return rc;
    if (!lbs_sim_is_data_parallel(item))
        return lbs_err_set(err, -ENOENT, "--optim: no trace for '%s' on "
                           "model %s (looked for %s); record one with the "
                           "record comm backend and pass the .jsonl file",
                           item, m->name, pat);
    snprintf(e->name, sizeof e->name, "%s", item);
    snprintf(e->source, sizeof e->source, "data-parallel");
    e->plans = calloc(1, sizeof *e->plans);
    if (!e->plans)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    rc = lbs_sim_plan_dp_bytes(m, item, grad_bytes, &e->plans[0], err);
    if (!rc)
        e->nplans = 1;
    e->bpe = optim_bpe(item, NULL, &e->bpe_assumed);
    return rc;
}

const struct lbs_sim_plan *lbs_sim_entry_plan(const struct lbs_sim_entry *e,
                                              long P)
{
    const struct lbs_sim_plan *best = e->plans[0];
    double bd = INFINITY;
    for (size_t i = 0; i < e->nplans; i++) {
        const struct lbs_sim_plan *p = e->plans[i];
        if (p->ranks == 0 || p->ranks == P)
            return p;
        double d = fabs(log((double)p->ranks / (double)P));
        if (d < bd) {
            bd = d;
            best = p;
        }
    }
    return best;
}

int lbs_sim_entries_load(const char *list, const struct lbs_sim_model *m,
                         double grad_bytes, struct lbs_sim_entry **out,
                         size_t *n, struct lbs_err *err)
{
    char *dup = strdup(list), *save = NULL;
    struct lbs_sim_entry *v = NULL;
    size_t cnt = 0;
    int rc = 0;
    if (!dup)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    size_t len = strlen(list);
    if (len && (list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,"))) {
        free(dup);
        return lbs_err_set(err, -EINVAL, "--optim: '%.80s' has an empty "
                           "item", list);
    }
    for (char *t = strtok_r(dup, ",", &save); t && !rc;
         t = strtok_r(NULL, ",", &save)) {
        void *q = realloc(v, (cnt + 1) * sizeof *v);
        if (!q) {
            rc = lbs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
        v = q;
        rc = make_entry(t, m, grad_bytes, &v[cnt], err);
        cnt++;
    }
    free(dup);
    if (!rc && cnt == 0)
        rc = lbs_err_set(err, -EINVAL, "--optim: empty list");
    if (rc) {
        lbs_sim_entries_free(v, cnt);
        return rc;
    }
    *out = v;
    *n = cnt;
    return 0;
}

int lbs_sim_entry_sweep(const struct lbs_sim_platform *pl,
                        const struct lbs_sim_model *m,
                        const struct lbs_sim_entry *e, const long *P,
                        size_t n, long base_p, const struct lbs_sim_opts *o,
                        struct lbs_sim_result *res, double *eff,
                        struct lbs_err *err)
{
    struct lbs_sim_result base;
    int rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(e, base_p), base_p, o,
                         &base, err);
    for (size_t i = 0; i < n && !rc; i++) {
        rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(e, P[i]), P[i], o, &res[i],
                         err);
        if (!rc)
            eff[i] = res[i].iter > 0 ? base.iter / res[i].iter : 1;
    }
    return rc;
}
