/* report.h - the HTML report and the plain-text summary of a results run
 * (report/report.c; used by suite.c after a suite and by `lbscale report`
 * in bench/results_verbs.c). */
#ifndef LBS_REPORT_H
#define LBS_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "lbscale/error.h"

/* RUN/report.html, self-contained (figures embedded). */
int report_write(const char *run, struct lbs_err *err);
/* The same with verdicts: NULL or {"check": ..., "compare": ...} as
 * check_verdicts and compare_verdicts return them; *found (when not
 * NULL): the findings, a new reference. */
int report_write_ex(const char *run, json_t *verdicts, json_t **found,
                    struct lbs_err *err);
/* The per-section summary tables as plain text. */
void report_summary_text(const char *run, FILE *f);

#endif
