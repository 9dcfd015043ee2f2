/* test_sigtest.c - the regression gate's statistics (report/sigtest.c)
 * against values computed independently: the exact p-values by
 * enumerating every assignment of the pooled values in Python (itertools,
 * fractions), the normal quantiles by Python's statistics.NormalDist, and
 * Holm by hand.  The script is in the comment of each value's test. */
#include <criterion/criterion.h>
#include <math.h>

#include "../report/sigtest.h"

static void expect_p(const double *a, size_t na, const double *b, size_t nb,
                     double want_g, double want_l, int exact)
{
    double g, l;
    cr_expect_eq(lbs_mwu(a, na, b, nb, &g, &l), exact);
    cr_expect_float_eq(g, want_g, 1e-12, "p(a greater) %.17g, want %.17g", g,
                       want_g);
    cr_expect_float_eq(l, want_l, 1e-12, "p(a less) %.17g, want %.17g", l,
                       want_l);
}

/* 3 against 3, apart: 1 assignment of C(6,3) = 20 is as extreme, so the
 * one-sided p is 0.05 (the old normal approximation gave 0.0809 two-sided
 * and 0.04 one-sided never reached by the exact test) */
Test(sigtest, apart_3_vs_3)
{
    double a[] = {1, 2, 3}, b[] = {4, 5, 6};
    expect_p(a, 3, b, 3, 1, 0.05, 1);
    expect_p(b, 3, a, 3, 0.05, 1, 1);
}

Test(sigtest, apart_5_vs_5)
{
    double a[] = {5, 1, 3, 2, 4}, b[] = {10, 6, 9, 7, 8};
    expect_p(a, 5, b, 5, 1, 1.0 / 252, 1);
}

/* itertools over the 126 assignments, mid-ranks for the ties */
Test(sigtest, ties_exact)
{
    double a[] = {1, 2, 2, 3}, b[] = {2, 3, 4, 5, 5};
    expect_p(a, 4, b, 5, 0.99206349206349209, 0.055555555555555552, 1);
}

Test(sigtest, interleaved_values)
{
    double a[] = {10.1, 9.8, 10.4, 10.0, 9.9},
           b[] = {10.3, 10.6, 10.2, 10.8, 10.5};
    expect_p(a, 5, b, 5, 0.99206349206349209, 0.015873015873015872, 1);
    double c[] = {1, 3, 5}, d[] = {2, 4, 6};
    expect_p(c, 3, d, 3, 0.8, 0.35, 1);
}

/* 31 against 31: above LBS_MWU_EXACT_MAX, the normal approximation
 * (0.5 erfc((R - mu -+ 0.5) / sd / sqrt 2), computed in Python) */
Test(sigtest, normal_above_exact_limit)
{
    double a[31], b[31];
    for (int i = 0; i < 31; i++) {
        a[i] = i;
        b[i] = i + 10.5;
    }
    expect_p(a, 31, b, 31, 0.99993198940001704, 7.1994186151362949e-05, 0);
}

Test(sigtest, identical_samples_are_not_significant)
{
    double a[] = {7, 7, 7}, b[] = {7, 7, 7};
    expect_p(a, 3, b, 3, 1, 1, 1);
}

Test(sigtest, min_p)
{
    cr_expect_float_eq(lbs_mwu_min_p(3, 3), 0.05, 1e-15);
    cr_expect_float_eq(lbs_mwu_min_p(6, 6), 1.0 / 924, 1e-15);
    cr_expect_float_eq(lbs_mwu_min_p(1, 1), 0.5, 1e-15);
}

/* sorted 0.005 0.01 0.03 0.04 -> x4 0.02, x3 0.03, x2 0.06, x1 0.04 ->
 * running max 0.02 0.03 0.06 0.06 */
Test(sigtest, holm_by_hand)
{
    double p[] = {0.01, 0.04, 0.03, 0.005, NAN}, adj[5];
    lbs_holm(p, 5, adj);
    cr_expect_float_eq(adj[0], 0.03, 1e-15);
    cr_expect_float_eq(adj[1], 0.06, 1e-15);
    cr_expect_float_eq(adj[2], 0.06, 1e-15);
    cr_expect_float_eq(adj[3], 0.02, 1e-15);
    cr_expect(isnan(adj[4]));
    lbs_holm(p, 5, p);   /* in place */
    cr_expect_float_eq(p[1], 0.06, 1e-15);
    double one[] = {0.05};
    lbs_holm(one, 1, one);
    cr_expect_float_eq(one[0], 0.05, 1e-15);
    double big[] = {0.6, 0.9};
    lbs_holm(big, 2, big);
    cr_expect_float_eq(big[0], 1, 0);
}

Test(sigtest, normal_quantiles)
{
    cr_expect_float_eq(lbs_norm_isf(0.05), 1.6448536269514715, 1e-9);
    cr_expect_float_eq(lbs_norm_isf(0.2), 0.84162123357291441, 1e-9);
}

/* (isf(0.05/24) + isf(0.2)) 0.02 sqrt(2/6) / sqrt(3/pi) in Python */
Test(sigtest, detectable)
{
    double al = 0.05 / 24;
    cr_expect_float_eq(lbs_detectable(0.02, 6, 6, al, 0), 0.043801842267219331,
                       1e-9);
    cr_expect_float_eq(lbs_detectable(0.02, 6, 6, al, 0.05), 0.05, 0);
    /* 3 against 3 cannot reach 0.05 / 24 at all (its best p is 0.05) */
    cr_expect(isinf(lbs_detectable(0.001, 3, 3, al, 0.05)));
    /* ... but reaches 0.05 alone */
    cr_expect(isfinite(lbs_detectable(0.001, 3, 3, 0.05, 0.05)));
}

Test(sigtest, repeats_for_ten_percent)
{
    double al = 0.05 / 24;
    cr_expect_eq(lbs_repeats_for(0.10, 0.04, al, 0.05, 100), 6);
    cr_expect_eq(lbs_repeats_for(0.10, 0.04, al, 0.12, 100), 0); /* floor */
}
