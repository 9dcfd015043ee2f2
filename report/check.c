/* check.c - regression gates behind `lbscale check RUN --baseline NAME`
 * (bench/results_verbs.c) and the report's verdicts.
 *
 * A baseline (results/baselines/NAME.json, format "lbscale-baseline" v1,
 * described in results/baselines/README.md) lists metrics: which rows of
 * which JSONL file ("where": field values to match), which field, the
 * baseline value and the rule:
 *   exact  every matching row equals the baseline (wire bytes)
 *   rel    |median - b| <= tol |b| + abs_tol (deterministic simulator)
 *   drop   fail only when median < b (1 - margin) (higher is better:
 *          throughput as a fraction of the bandwidth measured in the same run)
 *   rise   fail only when median > b (1 + margin) (lower is better)
 * For drop and rise the margin is never smaller than the run's own spread
 * (the coefficient of variation of its matching rows): a change inside
 * the noise the run itself measured is no evidence (compare.c holds its
 * minimum effect to the same floor).
 * A metric with no matching row fails ("missing").  Prints one line per
 * metric (metric, baseline, value, delta, rule, pass/FAIL) and exits 1 on
 * any regression, 2 on bad input.  --update rewrites the baseline values
 * from the run (after an intended change; review the diff).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "lbs_config.h"
#include "lbscale/file.h"
#include "results.h"
#include "stats.h"

/* Largest baseline file read (the checked-in ones are a few KB). */
#define BASELINE_MAX_BYTES ((size_t)16 << 20)

static void baseline_path(const char *name, char *out, size_t len)
{
    size_t l = strlen(name);
    if (strchr(name, '/') || (l > 5 && !strcmp(name + l - 5, ".json"))) {
        snprintf(out, len, "%s", name);
        return;
    }
    const char *env = getenv("LBSCALE_BASELINES");
    if (env && *env) {
        snprintf(out, len, "%s/%s.json", env, name);
        return;
    }
    /* the source tree's results/baselines, next to plots/ */
    char root[PATH_MAX - 64];
    snprintf(root, sizeof root, "%s", LBS_PLOTS_DIR);
    char *s = strrchr(root, '/');
    if (s)
        *s = '\0';
    snprintf(out, len, "%s/results/baselines/%s.json", root, name);
}

static int match(json_t *row, json_t *where)
{
    const char *k;
    json_t *v;
    json_object_foreach(where, k, v) {
        json_t *x = lbs_row_field(row, k);
        if (!x)
            return 0;
        if (json_is_number(v)) {
            if (!json_is_number(x) ||
                json_number_value(x) != json_number_value(v))
                return 0;
        } else if (!json_equal(x, v)) {
            return 0;
        }
    }
    return 1;
}

static void label(json_t *m, char *out, size_t len)
{
    const char *lab = json_string_value(json_object_get(m, "label"));
    if (lab) {
        snprintf(out, len, "%s", lab);
        return;
    }
    snprintf(out, len, "%s[", json_string_value(json_object_get(m, "file")));
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach(json_object_get(m, "where"), k, v) {
        char val[64];
        if (json_is_string(v))
            snprintf(val, sizeof val, "%s", json_string_value(v));
        else if (json_number_value(v) == floor(json_number_value(v)))
            snprintf(val, sizeof val, "%.0f", json_number_value(v));
        else
            snprintf(val, sizeof val, "%g", json_number_value(v));
        snprintf(out + strlen(out), len - strlen(out), "%s%s=%s",
                 first ? "" : ",", k, val);
        first = 0;
    }
    snprintf(out + strlen(out), len - strlen(out), "].%s",
             json_string_value(json_object_get(m, "field")));
}

struct bl {
    char path[PATH_MAX];
    json_t *root;
};

static int load_baseline(const char *name, struct bl *b, struct lbs_err *err)
{
    baseline_path(name, b->path, sizeof b->path);
    json_error_t je;
    struct lbs_err e;
    char *text;
    size_t len;
    /* a regular file within the cap: a FIFO or /dev/zero must not hang */
    if (lbs_read_file(b->path, BASELINE_MAX_BYTES, &text, &len, &e)) {
        return lbs_err_set(err, -EINVAL, "baseline '%s': %s", name, e.msg);
    }
    b->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!b->root) {
        return lbs_err_set(err, -EINVAL, "baseline '%s': %s: %s", name,
                           b->path, je.text);
    }
    const char *fmt = json_string_value(json_object_get(b->root, "format"));
    json_t *ms = json_object_get(b->root, "metrics");
    if (!fmt || strcmp(fmt, "lbscale-baseline") || !json_is_array(ms)) {
        return lbs_err_set(err, -EINVAL, "%s: not an lbscale baseline (needs "
                           "\"format\": \"lbscale-baseline\" and \"metrics\": "
                           "[...])", b->path);
    }
    size_t i;
    json_t *m;
    json_array_foreach(ms, i, m) {
        const char *rule = json_string_value(json_object_get(m, "rule"));
        if (!rule)
            rule = json_string_value(json_object_get(b->root, "rule"));
        if (!json_is_object(m) ||
            !json_is_string(json_object_get(m, "file")) ||
            !json_is_string(json_object_get(m, "field")) ||
            (json_object_get(m, "where") &&
             !json_is_object(json_object_get(m, "where"))) ||
            !(json_is_number(json_object_get(m, "baseline")) ||
              json_is_null(json_object_get(m, "baseline")))) {
            return lbs_err_set(err, -EINVAL, "%s: metric %zu needs \"file\", "
                               "\"field\", \"where\" (object) and "
                               "\"baseline\" (number)", b->path, i + 1);
        }
        if (!rule || (strcmp(rule, "exact") && strcmp(rule, "rel") &&
                      strcmp(rule, "drop") && strcmp(rule, "rise"))) {
            return lbs_err_set(err, -EINVAL, "%s: metric %zu: \"rule\" must be "
                               "exact, rel, drop or rise", b->path, i + 1);
        }
    }
    return 0;
}

static double param(json_t *m, json_t *root, const char *k, double def)
{
    json_t *v = json_object_get(m, k);
    if (!v)
        v = json_object_get(root, k);
    return json_is_number(v) ? json_number_value(v) : def;
}

/* Integers (byte counts) in full, never as 1.2842e+06. */
static void fmt_val(char *out, size_t len, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(out, len, "%.0f", v);
    else
        snprintf(out, len, "%.6g", v);
}

/* One metric's verdict (check_one). */
struct verdict {
    char name[256], rdesc[48], res[32], bs[32], vs[32], ds[32];
    const char *rule;
    double *v, val, base;   /* v: the run's values, sorted */
    double spread;          /* the run's coefficient of variation */
    size_t n;
    int ok, skip;
};

/* What every metric of a check shares. */
struct check_ctx {
    const char *run;
    struct bl *b;
    int update, json, strict, w, fails;
    int *total, *skipped;
    json_t *collect, *cache;   /* cache: rows by file */
    struct lbs_err *err;
};

/* The rows of run/<file>.jsonl, read once per check; NULL with c->err set. */
static json_t *metric_rows(struct check_ctx *c, const char *file)
{
    json_t *rows = json_object_get(c->cache, file);
    if (!rows) {
        rows = lbs_run_rows(c->run, file, c->err);
        if (!rows)
            return NULL;
        json_object_set_new(c->cache, file, rows);
    }
    return rows;
}

/* The values of field in the rows matching the metric's "where". */
static size_t metric_values(json_t *m, json_t *rows, const char *field,
                            double *v)
{
    size_t n = 0, j;
    json_t *r;
    json_array_foreach(rows, j, r)
        if (match(r, json_object_get(m, "where"))) {
            double x = lbs_row_num(lbs_row_field(r, field));
            if (!isnan(x))
                v[n++] = x;
        }
    return n;
}

/* Judge metric m on the n values in d->v by its rule. */
static void judge(const struct check_ctx *c, json_t *m, struct verdict *d)
{
    json_t *root = c->b->root;
    int strict = c->strict, update = c->update;
    size_t n = d->n;
    double *v = d->v;
    snprintf(d->res, sizeof d->res, "pass");
    d->ds[0] = '\0';
    const char *rule = json_string_value(json_object_get(m, "rule"));
    if (!rule)
        rule = json_string_value(json_object_get(root, "rule"));
    double base = lbs_row_num(json_object_get(m, "baseline"));
    double tol = param(m, root, "tol", 1e-9);
    double abs_tol = param(m, root, "abs_tol", 0);
    double margin = param(m, root, "margin", 0.25);
    label(m, d->name, sizeof d->name);
    double val = NAN;
    int ok = 1;
    int skip = n == 0 && !strict && !update;
    if (skip) {
        snprintf(d->res, sizeof d->res, "skip (not run)");
    } else if (n == 0) {
        ok = 0;
        snprintf(d->res, sizeof d->res, "FAIL (missing)");
    } else {
        struct cli_stats st = cli_stats(v, n);   /* sorts v */
        val = st.median;
        d->spread = st.mean != 0 ? st.sd / fabs(st.mean) : 0;
        if (!strcmp(rule, "exact")) {
            ok = v[0] == base && v[n - 1] == base;
            if (!ok && v[0] != base)
                val = v[0];
            else if (!ok)
                val = v[n - 1];
        }
    }
    if (!strcmp(rule, "exact"))
        snprintf(d->rdesc, sizeof d->rdesc, "exact");
    else if (!strcmp(rule, "rel"))
        snprintf(d->rdesc, sizeof d->rdesc, "rel %.0e", tol);
    else   /* drop, rise: the run's own noise is the floor */
        snprintf(d->rdesc, sizeof d->rdesc, "%s <= %.0f%%%s", rule,
                 fmax(margin, d->spread) * 100,
                 d->spread > margin ? " (spread)" : "");
    margin = fmax(margin, d->spread);
    if (n && strcmp(rule, "exact")) {
        if (isnan(base))
            ok = 0;
        else if (!strcmp(rule, "rel"))
            ok = fabs(val - base) <= tol * fabs(base) + abs_tol;
        else if (!strcmp(rule, "drop"))
            ok = val >= base * (1 - margin);
        else
            ok = val <= base * (1 + margin);
    }
    if (n && !ok)
        snprintf(d->res, sizeof d->res, "FAIL");
    if (isnan(base))
        snprintf(d->bs, sizeof d->bs, "(unset)");
    else
        fmt_val(d->bs, sizeof d->bs, base);
    if (n)
        fmt_val(d->vs, sizeof d->vs, val);
    else
        snprintf(d->vs, sizeof d->vs, "-");
    if (n && !isnan(base)) {
        if (base != 0 && strcmp(rule, "exact"))
            snprintf(d->ds, sizeof d->ds, "%+.2f%%",
                     100 * (val - base) / fabs(base));
        else
            snprintf(d->ds, sizeof d->ds, "%+.6g", val - base);
    }
    d->rule = rule;
    d->val = val;
    d->base = base;
    d->ok = ok;
    d->skip = skip;
}

/* Count, and print (or collect, or take into the baseline with update)
 * one metric's verdict. */
static void emit_metric(struct check_ctx *c, json_t *m,
                        const struct verdict *d)
{
    (*c->total)++;
    *c->skipped += d->skip;
    if (c->update) {
        if (d->n) {
            double nv = !strcmp(d->rule, "exact") ? d->v[0] : d->val;
            json_object_set_new(m, "baseline",
                nv == floor(nv) && fabs(nv) < 9e15
                    ? json_integer((json_int_t)nv) : json_real(nv));
            if (!c->json)
                printf("  %-*s %14s -> %.6g%s\n", c->w, d->name, d->bs, nv,
                       d->n > 1 ? " (median)" : "");
        } else {
            c->fails++;
            if (!c->json)
                printf("  %-*s %14s    missing in the run\n", c->w, d->name,
                       d->bs);
        }
    } else {
        c->fails += !d->ok;
        if (c->json) {
            json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:s,s:b,s:i,s:f}",
                "baseline_file", c->b->path, "metric", d->name, "rule",
                d->rule, "baseline",
                isnan(d->base) ? json_null() : json_real(d->base), "value",
                d->n ? json_real(d->val) : json_null(), "result", d->res,
                "pass", d->ok, "rows", (int)d->n, "spread", d->spread);
            if (c->collect) {
                json_object_set_new(o, "delta", json_string(d->ds));
                json_object_set_new(o, "rule_text", json_string(d->rdesc));
                json_array_append_new(c->collect, o);
            } else {
                char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
                puts(t);
                free(t);
                json_decref(o);
            }
        } else {
            printf("  %-*s %14s %14s %10s  %-14s %s\n", c->w, d->name, d->bs, d->vs,
                   d->ds, d->rdesc, d->res);
        }
    }
}

/* One metric of the baseline: 0, or -1 on a bad run (c->err set). */
static int check_metric(struct check_ctx *c, json_t *m)
{
    const char *file = json_string_value(json_object_get(m, "file"));
    const char *field = json_string_value(json_object_get(m, "field"));
    json_t *rows = metric_rows(c, file);
    if (!rows)
        return -1;
    struct verdict d = {.v = malloc((json_array_size(rows) + 1) *
                                    sizeof *d.v)};
    d.n = metric_values(m, rows, field, d.v);
    judge(c, m, &d);
    emit_metric(c, m, &d);
    free(d.v);
    return 0;
}

/* Check (or, with update, refresh) every metric of b against run.
 * Returns the number of failures, or -1 on a bad run (err set). */
static int check_one(const char *run, struct bl *b,
                     const struct check_opts *o, int *total, int *skipped,
                     json_t *collect, struct lbs_err *err)
{
    int update = o->update, json = o->json, strict = o->strict;
    if (collect)
        json = 1;   /* the per-metric objects go into collect, not stdout */
    json_t *cache = json_object();
    json_t *ms = json_object_get(b->root, "metrics");
    const char *bname = json_string_value(json_object_get(b->root, "name"));
    int fails = 0, w = 6;
    size_t i;
    json_t *m;
    json_array_foreach(ms, i, m) {   /* the metric column's width */
        char name[256];
        label(m, name, sizeof name);
        if ((int)strlen(name) > w)
            w = (int)strlen(name) > 100 ? 100 : (int)strlen(name);
    }
    if (!json)
        printf("baseline %s (%s): %zu metrics\n", bname ? bname : "?",
               b->path, json_array_size(ms));
    if (!json && !update)
        printf("  %-*s %14s %14s %10s  %-14s %s\n", w, "metric", "baseline",
               "value", "delta", "rule", "result");
    struct check_ctx c = {.run = run, .b = b, .update = update,
                          .json = json, .strict = strict, .w = w,
                          .total = total, .skipped = skipped,
                          .collect = collect, .cache = cache, .err = err};
    json_array_foreach(ms, i, m)
        if (check_metric(&c, m)) {
            json_decref(cache);
            return -1;
        }
    fails = c.fails;
    json_decref(cache);
    if (update && !fails) {
        char *t = json_dumps(b->root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        size_t l = t ? strlen(t) : 0;
        char *t2 = t ? realloc(t, l + 2) : NULL;
        struct lbs_err e;
        if (!t2) {
            free(t);
            o->warn("check", "out of memory writing %s", b->path);
            fails++;
        } else {
            strcpy(t2 + l, "\n");
            if (lbs_write_atomic(b->path, t2, l + 1, &e)) {
                o->warn("check", "%s", e.msg);
                fails++;
            } else if (!json) {
                printf("updated %s\n", b->path);
            }
            free(t2);
        }
    } else if (update) {
        o->warn("check", "%s not updated: %d metric(s) missing in %s",
                b->path, fails, run);
    }
    return fails;
}

json_t *check_summary(const struct check_tally *t, int strict)
{
    return json_pack("{s:s,s:i,s:i,s:i,s:i,s:b}", "summary", "check",
                     "metrics", t->total, "passed",
                     t->total - t->fails - t->skipped, "failed", t->fails,
                     "skipped", t->skipped, "strict", strict);
}

/* Every baseline loaded, then each checked in turn (collect: the
 * per-metric objects go there instead of stdout). */
static int check_all(const char *run, const char *const *names, int nb,
                     const struct check_opts *o, json_t *collect,
                     struct check_tally *t, struct lbs_err *err)
{
    struct bl b[CHECK_BASELINES_MAX] = {{{0}, NULL}};
    int rc = 0;
    *t = (struct check_tally){0};
    if (nb < 1 || nb > CHECK_BASELINES_MAX)
        return lbs_err_set(err, -EINVAL, "1 to %d baselines",
                           CHECK_BASELINES_MAX);
    for (int i = 0; i < nb && !rc; i++)
        rc = load_baseline(names[i], &b[i], err);
    for (int i = 0; i < nb && !rc; i++) {
        int f = check_one(run, &b[i], o, &t->total, &t->skipped, collect,
                          err);
        if (f < 0)
            rc = -EINVAL;
        else
            t->fails += f;
    }
    for (int i = 0; i < nb; i++)
        json_decref(b[i].root);
    return rc;
}

int check_run(const char *run, const char *const *names, int nb,
              const struct check_opts *o, struct check_tally *t,
              struct lbs_err *err)
{
    return check_all(run, names, nb, o, NULL, t, err);
}

json_t *check_verdicts(const char *run, const char *const *names, int nb,
                       int strict, struct lbs_err *err)
{
    const struct check_opts o = {.json = 1, .strict = strict};
    struct check_tally t;
    json_t *out = NULL, *metrics = json_array();
    if (!check_all(run, names, nb, &o, metrics, &t, err))
        out = json_pack("{s:O,s:o}", "metrics", metrics, "summary",
                        check_summary(&t, strict));
    json_decref(metrics);
    return out;
}

