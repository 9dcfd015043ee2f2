/* stats.h - statistics of timed repetitions (report/stats.c). */
#ifndef LBS_STATS_H
#define LBS_STATS_H

#include <stddef.h>

/* Statistics of n >= 1 timed repetitions (sorts x): median, min, max,
 * mean, sample standard deviation (0 for n = 1), and outliers: samples
 * whose modified Z-score 0.6745 |x - median| / MAD exceeds 3.5 (Iglewicz
 * and Hoaglin; what hyperfine warns about; none when MAD is 0 or n < 3). */
struct cli_stats {
    double median, min, max, mean, sd;
    size_t n, outliers;
};
struct cli_stats cli_stats(double *x, size_t n);
/* The roofline verdict of n paired ratios (kernel GB/s over the reference
 * GB/s measured right before it), with their statistics in *st (sorts r):
 * the number of pairs above limit when their median is above it, else 0.
 * A single pair above the limit is no verdict: one reference call slowed
 * by another process on a shared machine makes one. */
size_t cli_ratio_over(double *r, size_t n, double limit, struct cli_stats *st);
/* qsort's comparison of doubles, ascending. */
int cli_cmp_double(const void *a, const void *b);

#endif
