/* stats.c - statistics of timed repetitions (cli_stats, stats.h): pure C,
 * no lbscale dependencies, so the unit tests compile it alone. */
#include <math.h>
#include <stdlib.h>

#include "stats.h"

int cli_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct cli_stats cli_stats(double *x, size_t n)
{
    qsort(x, n, sizeof *x, cli_cmp_double);
    struct cli_stats s = {.median = x[n / 2], .min = x[0], .max = x[n - 1],
                          .n = n};
    if (n % 2 == 0)
        s.median = 0.5 * (x[n / 2 - 1] + x[n / 2]);
    double sum = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    s.mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (x[i] - s.mean) * (x[i] - s.mean);
    s.sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
    /* median absolute deviation; the modified Z-score of each sample */
    double *d = n > 2 ? malloc(n * sizeof *d) : NULL;
    if (d) {
        for (size_t i = 0; i < n; i++)
            d[i] = fabs(x[i] - s.median);
        qsort(d, n, sizeof *d, cli_cmp_double);
        double mad = n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2]);
        for (size_t i = 0; i < n && mad > 0; i++)
            s.outliers += 0.6745 * fabs(x[i] - s.median) / mad > 3.5;
        free(d);
    }
    return s;
}


size_t cli_ratio_over(double *r, size_t n, double limit, struct cli_stats *st)
{
    *st = cli_stats(r, n);
    if (!(st->median > limit))
        return 0;
    size_t over = 0;
    for (size_t i = 0; i < n; i++)
        over += r[i] > limit;
    return over;
}
