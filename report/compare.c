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
 *            the medians.  Every such metric with >= 2 samples a side is
 *            a hypothesis of the comparison's family (but see "paired
 *            ratios" below); each gets the
 *            exact one-sided Mann-Whitney p of "B is worse" (and of "B is
 *            better"), and Holm's correction over the family keeps the
 *            chance of any false alarm in the whole comparison at alpha
 *            (default 0.05).  A change counts only beyond the floor:
 *            --min-effect (default 5%) or the samples' own spread (their
 *            coefficient of variation), whichever is larger.  A real
 *            change beyond the floor in the bad direction is SLOWER
 *            (WORSE for rates).  Where the test cannot reach alpha at
 *            all (too few samples for the family: at 3 a side the best
 *            one-sided p is 1/20), only a change beyond --margin-single
 *            (default 25%, and the spread) counts, and the row says so.
 *   paired ratios  a kernel's time over a reference of the machine
 *            measured next to it, interleaved (roofline_frac,
 *            stream_frac, sgemm_frac).  Where a configuration has one
 *            tested, it alone is in the family; that configuration's raw
 *            timings and rates, and the STREAM rows, are "reported", not
 *            tested: between two runs minutes apart the machine's
 *            bandwidth moves 10-20% and the raw rates with it, while the
 *            ratios hold (the gate benchmark: 4 of 20 A/A pairs flagged
 *            with every metric tested, 1 of 20 with the ratios alone).
 *            --family all tests every timing and rate (two machines).
 * Each tested row says what change its samples could have detected (80%
 * power; sigtest.h's lbs_detectable) and how many repeats a side a 10%
 * change needs; docs/regression-gates.md has the reasoning.
 * Exit 0 when nothing regressed, 1 on a regression, 2 on bad input.
 * Output: a text table, --json (one object per metric, then a summary
 * object) or --markdown (a table for a CI job summary).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "results.h"
#include "sigtest.h"
#include "stats.h"

enum kind { EXACT, LOWER, HIGHER };

/* ratio > 0: a paired ratio (the header's "paired ratios"); where a
 * configuration has two tested, the higher rank stands for it. */
struct metric { const char *field; enum kind kind; int ratio; };

struct verbdef {
    const char *verb;
    const char *keys[10];
    struct metric m[8];
};

/* What identifies a row of each verb, and which fields are compared. */
static const struct verbdef verbs[] = {
    {"optim", {"optim", "params", "elements", "layers", "threads", "ranks",
               "compress", "device", NULL},
     {{"step_ms_median", LOWER, 0}, {"roofline_frac", HIGHER, 1},
      {"wrong", EXACT, 0}, {NULL, 0, 0}}},
    {"compress", {"compressor", "params", "elements", "threads", "device",
                  NULL},
     /* sgemm_frac: PowerSGD's time is its matrix products, so its ratio
      * to cblas_sgemm on the same shapes (interleaved) is the one that
      * stays put (CV 3.3% across the gate benchmark's 147 processes,
      * stream_frac's 10.3%); only its rows have it */
     {{"gbps", HIGHER, 0}, {"decompress_gbps", HIGHER, 0},
      {"stream_frac", HIGHER, 1}, {"sgemm_frac", HIGHER, 2},
      {"wire_bytes", EXACT, 0}, {"wrong", EXACT, 0},
      {NULL, 0, 0}}},
    {"coll", {"coll", "backend", "ranks", "size", "density", NULL},
     {{"time_us", LOWER, 0}, {"busbw_gbps", HIGHER, 0}, {"wrong", EXACT, 0},
      {NULL, 0, 0}}},
    {"stream", {"elements", "threads", "device", NULL},
     {{"triad_gbps", HIGHER, 0}, {"copy_gbps", HIGHER, 0},
      {"wrong", EXACT, 0}, {NULL, 0, 0}}},
    {"sim", {"model", "platform", "optim", "gpus", "grad_dtype", "accum",
             "batch_per_gpu", NULL},
     {{"iter_ms", EXACT, 0}, {"exposed_comm_ms", EXACT, 0},
      {"scaling_efficiency", EXACT, 0}, {"bytes_per_gpu", EXACT, 0},
      {NULL, 0, 0}}},
    {"sim_netsweep", {"model", "platform", "optim", "gpus", "node_gbps",
                      NULL},
     {{"scaling_efficiency", EXACT, 0}, {NULL, 0, 0}}},
    {"train", {"optim", "spec", "model", "dataset", "global_batch", "seed",
               "ranks", "compress", NULL},
     {{"test_accuracy", EXACT, 0}, {"sent_bytes_per_rank", EXACT, 0},
      {"wall_s", LOWER, 0}, {NULL, 0, 0}}},
};


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


/* The change whose repeats each row suggests (the CI target). */
#define COMPARE_TARGET 0.10
/* Most repeats a side a suggestion goes to. */
#define COMPARE_NMAX 1000

/* One compared metric of one configuration, before the family's
 * correction. */
struct entry {
    const struct verbdef *d;
    const struct metric *m;
    char cfg[1024];
    double ma, mb;        /* medians */
    double cva, cvb;      /* coefficients of variation, sd / |mean| */
    double cvp;           /* pooled */
    size_t na, nb;
    double p_worse, p_better;   /* one-sided; NaN outside the family */
    const char *held_by;  /* reported, not tested: the paired ratio that
                           * is (NULL: judged itself) */
};

struct entries {
    struct entry *v;
    size_t n, cap;
};

static double cv_of(double *x, size_t n)
{
    struct cli_stats s = cli_stats(x, n);
    return s.mean != 0 ? s.sd / fabs(s.mean) : 0;
}

/* A timing or rate with >= 2 samples a side (at 1 a side no rank test
 * exists). */
static int testable_alone(const struct entry *e)
{
    return e->m->kind != EXACT && e->na >= 2 && e->nb >= 2;
}

/* One hypothesis of the family: testable and not held by a ratio. */
static int in_family(const struct entry *e)
{
    return testable_alone(e) && !e->held_by;
}

static int add_entry(struct entries *es, const struct verbdef *d,
                     const struct metric *m, const char *cfg, double *xa,
                     size_t na, double *xb, size_t nb)
{
    if (es->n == es->cap) {
        size_t cap = es->cap ? 2 * es->cap : 64;
        struct entry *v = realloc(es->v, cap * sizeof *v);
        if (!v)
            return -1;
        es->v = v;
        es->cap = cap;
    }
    struct entry *e = &es->v[es->n++];
    *e = (struct entry){.d = d, .m = m, .na = na, .nb = nb,
                        .p_worse = NAN, .p_better = NAN};
    snprintf(e->cfg, sizeof e->cfg, "%s", cfg);
    if (testable_alone(e)) {   /* before cli_stats sorts the samples */
        double pg, pl;    /* P(A's ranks as high / as low as seen) */
        lbs_mwu(xa, na, xb, nb, &pg, &pl);
        e->p_worse = m->kind == LOWER ? pl : pg;   /* B above A: slower */
        e->p_better = m->kind == LOWER ? pg : pl;
    }
    e->cva = cv_of(xa, na);
    e->cvb = cv_of(xb, nb);
    e->ma = cli_stats(xa, na).median;
    e->mb = cli_stats(xb, nb).median;
    e->cvp = na + nb > 2 ? sqrt(((double)(na - 1) * e->cva * e->cva +
                                 (double)(nb - 1) * e->cvb * e->cvb) /
                                (double)(na + nb - 2))
                         : 0;
    return 0;
}

/* Every metric of one verb the two runs share, into es.  0, or -EINVAL
 * with err set. */
static int gather_verb(const char *ra, const char *rb,
                       const struct verbdef *d, struct entries *es,
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
    int rc = 0;
    json_array_foreach(A, i, r) {
        char cfg[1024];
        config_of(d, r, cfg, sizeof cfg);
        if (json_object_get(seen, cfg))
            continue;
        json_object_set_new(seen, cfg, json_true());
        for (int k = 0; d->m[k].field && !rc; k++) {
            double xa[512], xb[512];
            size_t na = samples(A, d, cfg, d->m[k].field, xa, 512);
            size_t nb = samples(B, d, cfg, d->m[k].field, xb, 512);
            if (na && nb && add_entry(es, d, &d->m[k], cfg, xa, na, xb, nb))
                rc = lbs_err_set(err, -ENOMEM, "out of memory");
        }
    }
    json_decref(seen);
    json_decref(A);
    json_decref(B);
    return rc;
}

/* The paired ratio tested for entry i's configuration: the highest
 * ranked ratio metric of the same verb and configuration with samples
 * enough to test (NULL: none). */
static const struct entry *ratio_of(const struct entries *es, size_t i)
{
    const struct entry *e = &es->v[i], *best = NULL;
    for (size_t j = 0; j < es->n; j++) {
        const struct entry *c = &es->v[j];
        if (c->d == e->d && c->m->ratio && testable_alone(c) &&
            !strcmp(c->cfg, e->cfg) && (!best || c->m->ratio > best->m->ratio))
            best = c;
    }
    return best;
}

/* e is reported beside by, not tested: out of the family, no p. */
static void hold(struct entry *e, const char *by)
{
    e->held_by = by;
    e->p_worse = e->p_better = NAN;
}

/* The ratio family (compare's default; docs/regression-gates.md): where
 * a configuration's paired ratio is tested, its raw timings and rates,
 * and the STREAM rows those ratios are taken over, are reported beside
 * it but not tested.  With --family all, everything is tested. */
static void hold_by_ratios(struct entries *es, const struct compare_opts *o)
{
    if (o->family_all)
        return;
    int any = 0;
    for (size_t i = 0; i < es->n; i++) {
        struct entry *e = &es->v[i];
        const struct entry *r = e->m->kind != EXACT ? ratio_of(es, i) : NULL;
        any |= r != NULL;
        if (r && r != e)
            hold(e, r->m->field);
    }
    for (size_t i = 0; i < es->n && any; i++)
        if (!strcmp(es->v[i].d->verb, "stream") && es->v[i].m->kind != EXACT)
            hold(&es->v[i], "the kernels' paired ratios");
}

/* The family's size and Holm-adjusted p's (NaN outside it). */
struct family {
    size_t m;
    double *worse, *better;
};

static int family_of(const struct entries *es, struct family *f)
{
    f->m = 0;
    f->worse = malloc((es->n + 1) * sizeof *f->worse);
    f->better = malloc((es->n + 1) * sizeof *f->better);
    if (!f->worse || !f->better)
        return -1;
    for (size_t i = 0; i < es->n; i++) {
        f->worse[i] = es->v[i].p_worse;
        f->better[i] = es->v[i].p_better;
        f->m += in_family(&es->v[i]);
    }
    /* two families of one-sided hypotheses, each held at alpha: "B is
     * worse" (the gate) and "B is better" (the report's improvements) */
    lbs_holm(f->worse, es->n, f->worse);
    lbs_holm(f->better, es->n, f->better);
    return 0;
}

/* The level the first Holm step holds a p to: what a metric must reach
 * to count at all. */
static double first_step(const struct family *f,
                         const struct compare_opts *o)
{
    return f->m ? o->alpha / (double)f->m : o->alpha;
}

/* What the samples of e could have detected, in words and numbers:
 * *det (INFINITY: nothing) and *nfor (repeats a side for
 * COMPARE_TARGET, 0: none). */
static void detect_text(const struct entry *e, const struct family *f,
                        const struct compare_opts *o, double floor,
                        double *det, size_t *nfor, char *out, size_t len)
{
    double al = first_step(f, o);
    *det = INFINITY;
    *nfor = 0;
    if (e->m->kind == EXACT) {
        snprintf(out, len, "deterministic: any change");
        return;
    }
    if (e->held_by) {
        snprintf(out, len, "not tested: %s %s (--family all tests it)",
                 e->held_by, strchr(e->held_by, ' ') ? "are" : "is");
        return;
    }
    *nfor = lbs_repeats_for(COMPARE_TARGET, e->cvp, al, floor, COMPARE_NMAX);
    char need[96];
    if (*nfor)
        snprintf(need, sizeof need, "%.0f%% needs n = %zu a side",
                 100 * COMPARE_TARGET, *nfor);
    else if (floor > COMPARE_TARGET)
        snprintf(need, sizeof need, "%.0f%% is inside the spread (%.1f%%)",
                 100 * COMPARE_TARGET, 100 * floor);
    else
        snprintf(need, sizeof need, "%.0f%% needs over %d a side",
                 100 * COMPARE_TARGET, COMPARE_NMAX);
    if (!in_family(e)) {
        snprintf(out, len, "n = %zu/%zu: no test, only > %.0f%% counts; %s",
                 e->na, e->nb, 100 * fmax(o->margin_single, floor), need);
        return;
    }
    *det = lbs_detectable(e->cvp, e->na, e->nb, al, floor);
    if (isinf(*det))
        snprintf(out, len, "n = %zu/%zu cannot reach p <= %.2g (best %.2g), "
                 "only > %.0f%% counts; %s", e->na, e->nb, al,
                 lbs_mwu_min_p(e->na, e->nb),
                 100 * fmax(o->margin_single, floor), need);
    else if (e->na == e->nb)
        snprintf(out, len, "n = %zu can detect >= %.1f%% here; %s", e->na,
                 100 * *det, need);
    else
        snprintf(out, len, "n = %zu/%zu can detect >= %.1f%% here; %s",
                 e->na, e->nb, 100 * *det, need);
}

/* The verdict of entry i (sets *regress). */
static const char *verdict(const struct entry *e, double pw, double pb,
                           double al, const struct compare_opts *o,
                           double floor, int *regress)
{
    *regress = 0;
    double a = e->ma, b = e->mb;
    if (e->held_by)
        return "reported";
    if (e->m->kind == EXACT) {
        int same = a == b || fabs(b - a) <= 1e-9 * fmax(fabs(a), fabs(b));
        *regress = !same;
        return same ? "same" : "CHANGED";
    }
    double r = a != 0 ? b / a : (b == 0 ? 1 : INFINITY);
    if (!isfinite(r))
        return "no change";
    double bad = e->m->kind == LOWER ? r - 1 : 1 - r;   /* > 0: worse */
    double chg = fabs(r - 1), p = bad > 0 ? pw : pb;
    const char *worse = e->m->kind == LOWER ? "SLOWER" : "WORSE";
    int testable = in_family(e) &&
                   lbs_mwu_min_p(e->na, e->nb) <= al * (1 + 1e-12);
    if (!testable) {
        if (chg <= fmax(o->margin_single, floor))
            return "no change";
        *regress = bad > 0;
        return bad > 0 ? worse : "better";
    }
    if (chg < o->min_effect)
        return p <= o->alpha ? "below min effect" : "no change";
    if (chg < floor)
        return "noise (within spread)";
    if (!(p <= o->alpha))
        return "noise (not significant)";
    *regress = bad > 0;
    return bad > 0 ? worse : "better";
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* Entry i as the object --json prints, tallied in t. */
static json_t *entry_row(const struct entries *es, size_t i,
                         const struct family *f,
                         const struct compare_opts *o,
                         struct compare_tally *t)
{
    const struct entry *e = &es->v[i];
    double floor = fmax(o->min_effect, fmax(e->cva, e->cvb)), det;
    size_t nfor;
    char txt[256];
    detect_text(e, f, o, floor, &det, &nfor, txt, sizeof txt);
    int reg;
    const char *v = verdict(e, f->worse[i], f->better[i], first_step(f, o),
                            o, floor, &reg);
    t->compared++;
    t->regressed += reg;
    t->improved += !strcmp(v, "better");
    t->changed += !strcmp(v, "CHANGED");
    t->reported += e->held_by != NULL;
    double delta = e->ma != 0 ? e->mb / e->ma - 1 : 0;
    int worse = e->m->kind == LOWER ? delta > 0 : delta < 0;
    double p = worse ? e->p_worse : e->p_better,
           ph = worse ? f->worse[i] : f->better[i];
    int exact = e->m->kind == EXACT;
    return json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:I,s:I,s:o,s:o,s:o,s:o,s:o,"
                     "s:o,s:s,s:s,s:b}", "verb", e->d->verb, "config", e->cfg,
                     "metric", e->m->field, "a", e->ma, "b", e->mb, "change",
                     delta, "n_a", (json_int_t)e->na, "n_b",
                     (json_int_t)e->nb, "p", num_or_null(p), "p_holm",
                     num_or_null(ph), "spread",
                     exact ? json_null() : json_real(fmax(e->cva, e->cvb)),
                     "floor", exact ? json_null() : json_real(floor),
                     "detectable", num_or_null(det), "repeats_for_10pct",
                     nfor ? json_integer((json_int_t)nfor) : json_null(),
                     "detect", txt, "verdict", v, "regression", reg);
}

static void print_row(json_t *row, const struct compare_opts *o)
{
    if (o->json) {
        char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(s ? s : "{}");
        free(s);
        return;
    }
    double p = json_real_value(json_object_get(row, "p_holm"));
    char ps[16] = "-";
    if (json_is_real(json_object_get(row, "p_holm")))
        snprintf(ps, sizeof ps, "%.3g", p);
    const char *fmt = o->markdown
        ? "| %s | %s | %s | %.6g | %.6g | %+.2f%% | %lld/%lld | %s | %s | %s |\n"
        : "  %-8s %-44.44s %-18s %12.6g %12.6g %+8.2f%% %3lld/%-3lld %8s  "
          "%-24s %s\n";
    printf(fmt, json_string_value(json_object_get(row, "verb")),
           json_string_value(json_object_get(row, "config")),
           json_string_value(json_object_get(row, "metric")),
           json_real_value(json_object_get(row, "a")),
           json_real_value(json_object_get(row, "b")),
           100 * json_real_value(json_object_get(row, "change")),
           (long long)json_integer_value(json_object_get(row, "n_a")),
           (long long)json_integer_value(json_object_get(row, "n_b")), ps,
           json_string_value(json_object_get(row, "verdict")),
           json_string_value(json_object_get(row, "detect")));
}

/* Both runs' metrics judged as one family: the rows (objects as --json
 * prints them) in *rows, the family in t.  0, or -EINVAL with err set. */
static int judge_all(const char *ra, const char *rb,
                     const struct compare_opts *o, json_t **rows,
                     struct compare_tally *t, struct lbs_err *err)
{
    struct entries es = {0};
    struct family f = {0};
    int rc = 0;
    *t = (struct compare_tally){0};
    *rows = NULL;
    for (size_t k = 0; k < sizeof verbs / sizeof verbs[0] && !rc; k++)
        rc = gather_verb(ra, rb, &verbs[k], &es, err);
    if (!rc)
        hold_by_ratios(&es, o);
    if (!rc && family_of(&es, &f))
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    if (!rc) {
        *rows = json_array();
        size_t most = 0, cannot = 0;
        for (size_t i = 0; i < es.n; i++) {
            json_t *row = entry_row(&es, i, &f, o, t);
            if (in_family(&es.v[i])) {
                json_t *n = json_object_get(row, "repeats_for_10pct");
                cannot += !json_is_integer(n);
                if ((size_t)json_integer_value(n) > most)
                    most = (size_t)json_integer_value(n);
            }
            json_array_append_new(*rows, row);
        }
        t->family = (int)f.m;
        t->first_step = first_step(&f, o);
        t->repeats_for_10pct = (int)most;
        t->cannot_10pct = (int)cannot;
    }
    free(es.v);
    free(f.worse);
    free(f.better);
    return rc;
}

json_t *compare_summary(const struct compare_tally *t,
                        const struct compare_opts *o)
{
    return json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:f,s:f,s:i,s:f,"
                     "s:o,s:i}",
                     "summary", "compare", "compared", t->compared,
                     "regressed", t->regressed, "changed", t->changed,
                     "improved", t->improved, "reported", t->reported,
                     "family_rule", o->family_all ? "all" : "ratio",
                     "min_effect", o->min_effect,
                     "margin_single", o->margin_single, "alpha", o->alpha,
                     "family", t->family, "first_step", t->first_step,
                     "repeats_for_10pct", t->repeats_for_10pct
                         ? json_integer(t->repeats_for_10pct) : json_null(),
                     "cannot_10pct", t->cannot_10pct);
}

void compare_family_line(const struct compare_tally *t,
                         const struct compare_opts *o, char *out, size_t len)
{
    int w = snprintf(out, len, "family: %d tested metrics, alpha %.2g for "
                     "the whole comparison (Holm; first step %.2g); a change "
                     "counts beyond %.0f%% or the samples' spread",
                     t->family, o->alpha, t->first_step, 100 * o->min_effect);
    if (w >= 0 && (size_t)w < len && t->reported)
        w += snprintf(out + w, len - (size_t)w, "; %d raw timings and rates "
                      "reported beside their paired ratios, not tested "
                      "(--family all tests them)", t->reported);
    if (w < 0 || (size_t)w >= len || !t->family)
        return;
    if (t->repeats_for_10pct)
        snprintf(out + w, len - (size_t)w, "; 10%% on every tested metric "
                 "needs %d repeats a side%s", t->repeats_for_10pct,
                 t->cannot_10pct ? " (but not on those whose spread is "
                                   "above 10%)" : "");
    else
        snprintf(out + w, len - (size_t)w, "; no repeat count reaches 10%% "
                 "here (spread above it)");
}

int compare_runs(const char *ra, const char *rb, const struct compare_opts *o,
                 struct compare_tally *t, struct lbs_err *err)
{
    json_t *rows;
    if (judge_all(ra, rb, o, &rows, t, err))
        return -EINVAL;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
        print_row(r, o);
    json_decref(rows);
    return 0;
}

json_t *compare_verdicts(const char *ra, const char *rb, struct lbs_err *err)
{
    const struct compare_opts o = COMPARE_OPTS_DEFAULT;
    struct compare_tally t;
    for (int k = 0; k < 2; k++)
        if (lbs_run_valid(k ? rb : ra, err))
            return NULL;
    json_t *rows;
    if (judge_all(ra, rb, &o, &rows, &t, err))
        return NULL;
    return json_pack("{s:s,s:s,s:o,s:o}", "a", ra, "b", rb, "metrics", rows,
                     "summary", compare_summary(&t, &o));
}
