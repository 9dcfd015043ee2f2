/* compare.h - every metric two results runs share, with a verdict each
 * (report/compare.c; `lbscale compare` in bench/results_verbs.c, the
 * report's verdicts).
 *
 * Rows are matched on their verb's key fields; deterministic metrics must
 * be equal (else CHANGED), timings and rates are judged by the ratio of
 * the medians and, with >= 3 samples a side, a two-sided Mann-Whitney U
 * test (compare.c's header has the rules).
 *
 * Ownership: the json_t results are new references. */
#ifndef LBS_COMPARE_H
#define LBS_COMPARE_H

#include <jansson.h>

#include "lbscale/error.h"

struct compare_opts {
    double margin;         /* relative change that matters, tested */
    double margin_single;  /* the same without a test (< 3 samples) */
    double alpha;          /* significance level of the test */
    int json;              /* one JSON object per metric on stdout */
    int markdown;          /* a markdown table row per metric */
};
#define COMPARE_OPTS_DEFAULT \
    {.margin = 0.10, .margin_single = 0.25, .alpha = 0.05}

/* Metrics compared, regressed (of which CHANGED), better. */
struct compare_tally { int compared, regressed, improved, changed; };

/* Print one line per shared metric of runs ra and rb (A and B) on stdout:
 * a text table row, o->json's object or o->markdown's row (the caller
 * prints any header).  0 with *t filled, or -EINVAL with err set when a
 * results file is not JSONL.  The runs are not validated here
 * (lbs_run_valid). */
int compare_runs(const char *ra, const char *rb, const struct compare_opts *o,
                 struct compare_tally *t, struct lbs_err *err);

/* {"summary": "compare", "compared", "regressed", "changed", "improved",
 * "margin", "margin_single", "alpha"}: the last line of `compare --json`. */
json_t *compare_summary(const struct compare_tally *t,
                        const struct compare_opts *o);

/* The verdicts as data, for the report, with the default margins: {"a",
 * "b", "metrics": [one object per metric, as --json prints them],
 * "summary": {...}}.  NULL with err set on bad input. */
json_t *compare_verdicts(const char *ra, const char *rb, struct lbs_err *err);

#endif
