/* compare.h - every metric two results runs share, with a verdict each
 * (report/compare.c; `lbscale compare` in bench/results_verbs.c, the
 * report's verdicts).
 *
 * Rows are matched on their verb's key fields; deterministic metrics must
 * be equal (else CHANGED), timings and rates are judged by the ratio of
 * the medians, an exact one-sided Mann-Whitney U test per metric with
 * Holm's correction over the comparison, and a floor (the minimum effect
 * or the samples' spread); where a kernel has a paired ratio (its time
 * over the machine's reference measured next to it) only that ratio is
 * tested and its raw times and rates are reported; compare.c's header
 * has the rules.
 *
 * Ownership: the json_t results are new references. */
#ifndef LBS_COMPARE_H
#define LBS_COMPARE_H

#include <jansson.h>

#include "lbscale/error.h"

struct compare_opts {
    double min_effect;     /* smallest relative change that counts (the
                            * samples' spread raises it) */
    double margin_single;  /* the change that counts where the test
                            * cannot reach alpha (too few samples) */
    double alpha;          /* family-wise error rate of one comparison */
    int json;              /* one JSON object per metric on stdout */
    int markdown;          /* a markdown table row per metric */
    int family_all;        /* test every timing and rate, not only the
                            * paired ratios where a kernel has one */
};
#define COMPARE_OPTS_DEFAULT \
    {.min_effect = 0.05, .margin_single = 0.25, .alpha = 0.05}

/* Metrics compared, regressed (of which CHANGED), better; the tested
 * family's size, the level its first Holm step holds a p to, the most
 * repeats a side any tested metric needs for a 10% change (0: none
 * does), and the tested metrics no repeat count brings to 10%. */
struct compare_tally {
    int compared, regressed, improved, changed;
    int reported;          /* raw metrics held by a paired ratio */
    int family;
    double first_step;
    int repeats_for_10pct, cannot_10pct;
};

/* Print one line per shared metric of runs ra and rb (A and B) on stdout:
 * a text table row, o->json's object or o->markdown's row (the caller
 * prints any header).  0 with *t filled, or -EINVAL with err set when a
 * results file is not JSONL.  The runs are not validated here
 * (lbs_run_valid). */
int compare_runs(const char *ra, const char *rb, const struct compare_opts *o,
                 struct compare_tally *t, struct lbs_err *err);

/* {"summary": "compare", "compared", "regressed", "changed", "improved",
 * "reported", "family_rule" ("ratio" or "all"), "min_effect", "margin_single", "alpha", "family", "first_step",
 * "repeats_for_10pct", "cannot_10pct"}: the last line of `compare
 * --json`. */
json_t *compare_summary(const struct compare_tally *t,
                        const struct compare_opts *o);

/* One line on the family (its size, alpha, the floor, the repeats a 10%
 * change needs) into out, for the text and markdown outputs. */
void compare_family_line(const struct compare_tally *t,
                         const struct compare_opts *o, char *out,
                         size_t len);

/* The verdicts as data, for the report, with the default margins: {"a",
 * "b", "metrics": [one object per metric, as --json prints them],
 * "summary": {...}}.  NULL with err set on bad input. */
json_t *compare_verdicts(const char *ra, const char *rb, struct lbs_err *err);

#endif
