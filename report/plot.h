/* plot.h - the figures of a results run, drawn by gnuplot from the
 * scripts in plots/ (report/plot.c; `lbscale plot` in
 * bench/results_verbs.c, suite.c after a suite, the report's captions).
 *
 * Each figure lands as RUN/plots/<figure>.{png,svg} with the .dat table it
 * was drawn from and a .caption; a kind whose results are absent is
 * skipped. */
#ifndef LBS_PLOT_H
#define LBS_PLOT_H

#include <jansson.h>

#include "lbscale/error.h"

/* GPU counts of the iteration-time bars when none are given, and the
 * longest list taken (bytes, with its NUL). */
#define PLOT_SCALES_DEFAULT "8,128,1024"
#define PLOT_SCALES_MAX 256

struct plot_opts {
    const char *scales;  /* itersplit's GPU counts ("8,128,1024"; digits
                            and commas, shorter than PLOT_SCALES_MAX);
                            NULL: PLOT_SCALES_DEFAULT */
    int print;           /* print each PNG's path on stdout */
    json_t *figures;     /* non-NULL: instead of printing, append
                            {"figure", "png", "svg", "caption"} per figure */
};

/* Draw every figure run allows; *drawn (when not NULL): how many.  One
 * kind failing does not stop the others; the first error is returned
 * (-ENOENT when gnuplot is missing: then nothing more is tried). */
int plot_run_ex(const char *run, const struct plot_opts *o, int *drawn,
                struct lbs_err *err);
/* The same, quietly, with the default scales. */
int plot_run(const char *run, struct lbs_err *err);

/* One sentence on what to look at in a figure, by its file name
 * ("scaling_bert-xl_dgx-a100.png"); "" for an unknown kind. */
const char *plot_caption(const char *file);

/* The gnuplot scripts' directory: $LBSCALE_PLOTS, else the source tree's
 * plots/. */
const char *plot_scripts_dir(void);

#endif
