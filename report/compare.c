/* compare.c - what `lbscale compare RUN_A RUN_B` (bench/results_verbs.c)
 * and the report show: every metric two results runs share, side by side,
 * with a verdict per metric (pytest-benchmark/asv style), for CI summaries
 * and before/after studies.
 *
 * Rows are matched on their configuration (the key fields of their verb
 * in the table below); all rows of a configuration in a run are its
 * samples (a suite's "repeat", or several runs into one directory).
 * Metric kinds and verdicts:
 *   exact    deterministic values (wire bytes, simulated times, training
 *            accuracies of a seeded run): any relative difference above
 *            1e-9 is CHANGED, a regression;
 *   lower / higher  timings and rates, noisy: the change is the ratio of
 *            the medians; with >= 3 samples on each side a two-sided
 *            Mann-Whitney U test decides whether it is real (p < alpha,
 *            default 0.05: the false-alarm rate per metric), and a real
 *            change beyond --margin (default 10%) in the bad direction is
 *            SLOWER; with fewer samples no test is possible and only a
 *            change beyond --margin-single (default 25%) counts.
 * Exit 0 when nothing regressed, 1 on a regression, 2 on bad input.
 * Output: a text table, --json (one object per metric, then a summary
 * object) or --markdown (a table for a CI job summary).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "stats.h"
#include "results.h"

enum kind { EXACT, LOWER, HIGHER };

struct metric { const char *field; enum kind kind; };

struct verbdef {
    const char *verb;
    const char *keys[10];
    struct metric m[8];
};

/* What identifies a row of each verb, and which fields are compared. */
static const struct verbdef verbs[] = {
    {"optim", {"optim", "params", "elements", "layers", "threads", "ranks",
               "compress", "device", NULL},
     {{"step_ms_median", LOWER}, {"roofline_frac", HIGHER},
      {"wrong", EXACT}, {NULL, 0}}},
    {"compress", {"compressor", "params", "elements", "threads", "device",
                  NULL},
     {{"gbps", HIGHER}, {"decompress_gbps", HIGHER}, {"stream_frac", HIGHER},
      {"wire_bytes", EXACT}, {"wrong", EXACT}, {NULL, 0}}},
    {"coll", {"coll", "backend", "ranks", "size", "density", NULL},
     {{"time_us", LOWER}, {"busbw_gbps", HIGHER}, {"wrong", EXACT},
      {NULL, 0}}},
    {"stream", {"elements", "threads", "device", NULL},
     {{"triad_gbps", HIGHER}, {"copy_gbps", HIGHER}, {"wrong", EXACT},
      {NULL, 0}}},
    {"sim", {"model", "platform", "optim", "gpus", "grad_dtype", "accum",
             "batch_per_gpu", NULL},
     {{"iter_ms", EXACT}, {"exposed_comm_ms", EXACT},
      {"scaling_efficiency", EXACT}, {"bytes_per_gpu", EXACT}, {NULL, 0}}},
    {"sim_netsweep", {"model", "platform", "optim", "gpus", "node_gbps",
                      NULL},
     {{"scaling_efficiency", EXACT}, {NULL, 0}}},
    {"train", {"optim", "spec", "model", "dataset", "global_batch", "seed",
               "ranks", "compress", NULL},
     {{"test_accuracy", EXACT}, {"sent_bytes_per_rank", EXACT},
      {"wall_s", LOWER}, {NULL, 0}}},
};


/* Two-sided p-value of the Mann-Whitney U test of samples a and b (normal
 * approximation with tie correction and continuity correction; exact
 * enough at n >= 3 for a 5% decision, and what scipy's asymptotic method
 * computes). */
static double mann_whitney_p(const double *a, size_t na, const double *b,
                             size_t nb)
{
    size_t n = na + nb;
    double *v = malloc(n * sizeof *v);
    if (!v)
        return 1;
    memcpy(v, a, na * sizeof *v);
    memcpy(v + na, b, nb * sizeof *v);
    qsort(v, n, sizeof *v, cli_cmp_double);
    /* rank sum of a, with ties averaged; tie term for the variance */
    double ra = 0, ties = 0;
    for (size_t i = 0; i < na; i++) {
        size_t lo = 0, hi = 0;
        for (size_t k = 0; k < n; k++) {
            lo += v[k] < a[i];
            hi += v[k] <= a[i];
        }
        ra += (double)(lo + hi + 1) / 2;
    }
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && v[j] == v[i])
            j++;
        double t = (double)(j - i);
        ties += t * t * t - t;
        i = j;
    }
    free(v);
    double u = ra - (double)na * (double)(na + 1) / 2;
    double mu = (double)na * (double)nb / 2;
    double var = (double)na * (double)nb / 12 *
                 ((double)(n + 1) - ties / ((double)n * (double)(n - 1)));
    if (!(var > 0))
        return 1;
    double z = (fabs(u - mu) - 0.5) / sqrt(var);
    return z <= 0 ? 1 : erfc(z / sqrt(2));
}

/* "optim=lamb,elements=16000000,..." from a row's key fields. */
static void config_of(const struct verbdef *d, json_t *row, char *out,
                      size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (int k = 0; d->keys[k] && o + 1 < len; k++) {
        json_t *v = json_object_get(row, d->keys[k]);
        if (!v || json_is_null(v))
            continue;
        char *s = json_is_string(v) ? NULL
                  : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        int w = snprintf(out + o, len - o, "%s%s=%s", o ? "," : "",
                         d->keys[k], json_is_string(v) ? json_string_value(v)
                                                       : s ? s : "?");
        free(s);
        if (w > 0)
            o += (size_t)w;
    }
}

/* The values of field over the rows of one configuration. */
static size_t samples(json_t *rows, const struct verbdef *d, const char *cfg,
                      const char *field, double *x, size_t cap)
{
    size_t n = 0, i;
    json_t *r;
    char c[1024];
    json_array_foreach(rows, i, r) {
        config_of(d, r, c, sizeof c);
        json_t *v = json_object_get(r, field);
        if (!strcmp(c, cfg) && json_is_number(v) && n < cap)
            x[n++] = json_number_value(v);
    }
    return n;
}

static const char *verdict(enum kind k, double a, double b, size_t na,
                           size_t nb, double p, const struct compare_opts *o,
                           int *regress)
{
    *regress = 0;
    if (k == EXACT) {
        int same = a == b || fabs(b - a) <= 1e-9 * fmax(fabs(a), fabs(b));
        *regress = !same;
        return same ? "same" : "CHANGED";
    }
    double r = a != 0 ? b / a : (b == 0 ? 1 : INFINITY);
    double bad = k == LOWER ? r - 1 : 1 - r;   /* > 0: worse */
    int tested = na >= 3 && nb >= 3;
    double margin = tested ? o->margin : o->margin_single;
    int real = tested ? p < o->alpha : 1;
    if (fabs(r - 1) <= margin || !isfinite(r))
        return tested && real ? "within margin" : "no change";
    if (!real)
        return "noise (not significant)";
    *regress = bad > 0;
    return bad > 0 ? (k == LOWER ? "SLOWER" : "WORSE") : "better";
}

/* One verb's shared metrics: printed, or with collect (non-NULL) added
 * to it as objects.  0, or -EINVAL with err set. */
static int compare_verb(const char *ra, const char *rb,
                        const struct verbdef *d, const struct compare_opts *o,
                        json_t *collect, struct compare_tally *t,
                        struct lbs_err *err)
{
    json_t *A = lbs_run_rows(ra, d->verb, err), *B = NULL;
    if (!A)
        return -EINVAL;
    if (!(B = lbs_run_rows(rb, d->verb, err))) {
        json_decref(A);
        return -EINVAL;
    }
    json_t *seen = json_object();
    size_t i;
    json_t *r;
    json_array_foreach(A, i, r) {
        char cfg[1024];
        config_of(d, r, cfg, sizeof cfg);
        if (json_object_get(seen, cfg))
            continue;
        json_object_set_new(seen, cfg, json_true());
        for (int k = 0; d->m[k].field; k++) {
            double xa[512], xb[512];
            size_t na = samples(A, d, cfg, d->m[k].field, xa, 512);
            size_t nb = samples(B, d, cfg, d->m[k].field, xb, 512);
            if (!na || !nb)
                continue;
            double p = na >= 3 && nb >= 3 ? mann_whitney_p(xa, na, xb, nb)
                                          : NAN;
            double ma = cli_stats(xa, na).median,
                   mb = cli_stats(xb, nb).median;
            int reg;
            const char *v = verdict(d->m[k].kind, ma, mb, na, nb, p, o, &reg);
            t->compared++;
            t->regressed += reg;
            t->improved += !strcmp(v, "better");
            t->changed += !strcmp(v, "CHANGED");
            double delta = ma != 0 ? mb / ma - 1 : 0;
            char ps[16] = "-";
            if (!isnan(p))
                snprintf(ps, sizeof ps, "%.3g", p);
            if (o->json || collect) {
                json_t *row = json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:I,s:I,"
                                        "s:o,s:s,s:b}", "verb", d->verb,
                    "config", cfg, "metric", d->m[k].field, "a", ma, "b", mb,
                    "change", delta, "n_a", (json_int_t)na, "n_b",
                    (json_int_t)nb, "p", isnan(p) ? json_null() : json_real(p),
                    "verdict", v, "regression", reg);
                if (collect) {
                    json_array_append_new(collect, row);
                    continue;
                }
                char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
                puts(s ? s : "{}");
                free(s);
                json_decref(row);
            } else if (o->markdown) {
                printf("| %s | %s | %s | %.6g | %.6g | %+.2f%% | %zu/%zu | %s "
                       "| %s |\n", d->verb, cfg, d->m[k].field, ma, mb,
                       100 * delta, na, nb, ps, v);
            } else {
                printf("  %-8s %-44.44s %-18s %12.6g %12.6g %+8.2f%% %3zu/%-3zu "
                       "%8s  %s\n", d->verb, cfg, d->m[k].field, ma, mb,
                       100 * delta, na, nb, ps, v);
            }
        }
    }
    json_decref(seen);
    json_decref(A);
    json_decref(B);
    return 0;
}

json_t *compare_summary(const struct compare_tally *t,
                        const struct compare_opts *o)
{
    return json_pack("{s:s,s:i,s:i,s:i,s:i,s:f,s:f,s:f}", "summary",
                     "compare", "compared", t->compared, "regressed",
                     t->regressed, "changed", t->changed, "improved",
                     t->improved, "margin", o->margin, "margin_single",
                     o->margin_single, "alpha", o->alpha);
}

int compare_runs(const char *ra, const char *rb, const struct compare_opts *o,
                 struct compare_tally *t, struct lbs_err *err)
{
    *t = (struct compare_tally){0};
    for (size_t k = 0; k < sizeof verbs / sizeof verbs[0]; k++)
        if (compare_verb(ra, rb, &verbs[k], o, NULL, t, err))
            return -EINVAL;
    return 0;
}

json_t *compare_verdicts(const char *ra, const char *rb, struct lbs_err *err)
{
    const struct compare_opts o = COMPARE_OPTS_DEFAULT;
    struct compare_tally t = {0};
    for (int k = 0; k < 2; k++)
        if (lbs_run_valid(k ? rb : ra, err))
            return NULL;
    json_t *collect = json_array();
    for (size_t k = 0; k < sizeof verbs / sizeof verbs[0]; k++)
        if (compare_verb(ra, rb, &verbs[k], &o, collect, &t, err)) {
            json_decref(collect);
            return NULL;
        }
    json_t *out = json_pack("{s:s,s:s,s:O,s:o}", "a", ra, "b", rb, "metrics",
                            collect, "summary", compare_summary(&t, &o));
    json_decref(collect);
    return out;
}
