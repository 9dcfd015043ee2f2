/* report.h - the HTML report and the plain-text summary of a results run
 * (report.c; used by suite.c after a suite and by `lbscale report`). */
#ifndef LBS_REPORT_H
#define LBS_REPORT_H

#include <stdio.h>

#include "lbscale/error.h"

/* RUN/report.html, self-contained (figures embedded). */
int report_write(const char *run, struct lbs_err *err);
/* The per-section summary tables as plain text. */
void report_summary_text(const char *run, FILE *f);

#endif
