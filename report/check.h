/* check.h - regression gates: a results run against checked-in baselines
 * (report/check.c; `lbscale check` in bench/results_verbs.c, the report's
 * verdicts).
 *
 * A baseline (results/baselines/NAME.json, format "lbscale-baseline" v1,
 * described in results/baselines/README.md) lists metrics: which rows of
 * which JSONL file, which field, the baseline value and the rule (exact,
 * rel, drop, rise).  NAME is looked up in $LBSCALE_BASELINES, else the
 * source tree's results/baselines/; a name with '/' or ending in .json is
 * a path.
 *
 * Ownership: the json_t results are new references. */
#ifndef LBS_CHECK_H
#define LBS_CHECK_H

#include <jansson.h>

#include "lbscale/error.h"

/* Most baselines one check reads. */
#define CHECK_BASELINES_MAX 16

struct check_opts {
    int update;   /* rewrite the baselines' values from the run */
    int json;     /* one JSON object per metric instead of the table */
    int strict;   /* a metric the run lacks fails instead of being skipped */
    /* a line on stderr for what does not stop the check (a baseline
     * --update could not rewrite), as the CLI prints its errors; called
     * only with update */
    void (*warn)(const char *what, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
};

/* Metrics seen, failed, and skipped (not in the run, without strict). */
struct check_tally { int total, fails, skipped; };

/* Check (or with o->update, refresh) run against the baselines
 * names[0..nb-1]: a table per baseline on stdout (or, with o->json, one
 * JSON object per metric; with update, the values taken).  0 with *t
 * filled; -EINVAL with err set when a baseline is unreadable or not a
 * baseline, or a results file of the run is not JSONL (printed tables of
 * the baselines before stay). */
int check_run(const char *run, const char *const *names, int nb,
              const struct check_opts *o, struct check_tally *t,
              struct lbs_err *err);

/* {"summary": "check", "metrics", "passed", "failed", "skipped",
 * "strict"}: the last line of `check --json`. */
json_t *check_summary(const struct check_tally *t, int strict);

/* The verdicts as data, for the report: {"metrics": [one object per
 * metric, as --json prints them, with "delta" and "rule_text"],
 * "summary": {...}}.  NULL with err set on bad input. */
json_t *check_verdicts(const char *run, const char *const *names, int nb,
                       int strict, struct lbs_err *err);

#endif
