/* test_stats.c - cli_stats (report/stats.c): the statistics behind the
 * hyperfine-style timing lines of optim and compress. */
#include <criterion/criterion.h>
#include <math.h>

#include "../report/stats.h"

Test(stats, mean_sd_median_odd)
{
    double x[] = {3, 1, 2, 5, 4};
    struct cli_stats s = cli_stats(x, 5);
    cr_expect_eq(s.n, 5);
    cr_expect_float_eq(s.mean, 3.0, 1e-12);
    cr_expect_float_eq(s.sd, sqrt(2.5), 1e-12);   /* sample sd */
    cr_expect_float_eq(s.median, 3.0, 1e-12);
    cr_expect_float_eq(s.min, 1.0, 0);
    cr_expect_float_eq(s.max, 5.0, 0);
    cr_expect_eq(s.outliers, 0);
}

Test(stats, median_even)
{
    double x[] = {4, 1, 3, 2};
    struct cli_stats s = cli_stats(x, 4);
    cr_expect_float_eq(s.median, 2.5, 1e-12);
}

Test(stats, one_sample)
{
    double x[] = {7};
    struct cli_stats s = cli_stats(x, 1);
    cr_expect_float_eq(s.mean, 7.0, 0);
    cr_expect_float_eq(s.sd, 0.0, 0);
    cr_expect_eq(s.outliers, 0);
}

/* one run 10x slower among ten steady ones: one outlier (modified
 * Z-score 0.6745 |x - median| / MAD > 3.5); the median does not move */
Test(stats, outlier_flagged)
{
    double x[] = {10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 10.1, 9.9, 10.0, 100.0};
    struct cli_stats s = cli_stats(x, 10);
    cr_expect_eq(s.outliers, 1);
    cr_expect_float_eq(s.median, 10.0, 1e-12);
    cr_expect_gt(s.mean, 18.0);
}

/* a spread without a far sample: no warning */
Test(stats, no_outlier_in_spread)
{
    double x[] = {8, 9, 10, 11, 12, 9.5, 10.5, 10};
    struct cli_stats s = cli_stats(x, 8);
    cr_expect_eq(s.outliers, 0);
}

/* identical samples: MAD 0, no division by zero, no outliers */
Test(stats, constant)
{
    double x[] = {2, 2, 2, 2};
    struct cli_stats s = cli_stats(x, 4);
    cr_expect_eq(s.outliers, 0);
    cr_expect_float_eq(s.sd, 0.0, 0);
}

/* The roofline warning reads the median of the pairs (issue 34): LARS's
 * row with pairs up to 3.57 around a median below 1 is no verdict; a
 * median above the limit is, and counts its pairs above. */
Test(ratio, single_pairs_above_are_no_verdict)
{
    double r[] = {0.91, 3.57, 0.95, 1.12, 0.97, 0.93, 1.08};
    struct cli_stats st;
    cr_expect_eq(cli_ratio_over(r, 7, 1.05, &st), 0);
    cr_expect_float_eq(st.median, 0.97, 1e-12);
    cr_expect_float_eq(st.max, 3.57, 1e-12);
}

Test(ratio, median_above_is_a_verdict)
{
    double r[] = {1.07, 0.98, 1.10, 1.06, 1.02};
    struct cli_stats st;
    cr_expect_eq(cli_ratio_over(r, 5, 1.05, &st), 3);
    cr_expect_float_eq(st.median, 1.06, 1e-12);
    double even[] = {1.04, 1.08};   /* median 1.06: the mean of the two */
    cr_expect_eq(cli_ratio_over(even, 2, 1.05, &st), 1);
    double at[] = {1.05, 1.05, 1.2};   /* at the limit is not above it */
    cr_expect_eq(cli_ratio_over(at, 3, 1.05, &st), 0);
}
