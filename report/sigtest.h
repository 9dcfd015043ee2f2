/* sigtest.h - the statistics of a regression gate (report/sigtest.c):
 * the exact Mann-Whitney U test, Holm's family-wise correction, and what
 * change a number of repeats can detect.  Pure C, no lbscale dependency,
 * so the unit tests compile it alone (tests/test_sigtest.c).
 *
 * Used by `lbscale compare` (report/compare.c) and `lbscale check`
 * (report/check.c); docs/regression-gates.md says why each piece is
 * there. */
#ifndef LBS_SIGTEST_H
#define LBS_SIGTEST_H

#include <stddef.h>

/* Largest pooled sample (na + nb) whose U distribution is computed
 * exactly; above it the normal approximation (tie- and continuity-
 * corrected) is used.  At 60 the exact counts reach C(60, 30) ~ 1.2e17,
 * still exact enough in a double for a p-value. */
#define LBS_MWU_EXACT_MAX 60

/* One-sided p-values of the Mann-Whitney U test of samples a and b
 * (na, nb >= 1): *p_a_greater = P(the rank sum of a is >= the one
 * observed), *p_a_less = P(<= observed), under the null hypothesis that
 * every assignment of the pooled values to the two samples is equally
 * likely (the permutation distribution, ties as mid-ranks, so exact with
 * ties too).  Returns 1 when computed exactly, 0 when approximated (na +
 * nb > LBS_MWU_EXACT_MAX), -1 on a bad argument or no memory (p's = 1).
 * The two-sided p is min(1, 2 min(p_a_greater, p_a_less)). */
int lbs_mwu(const double *a, size_t na, const double *b, size_t nb,
            double *p_a_greater, double *p_a_less);

/* The smallest one-sided p the exact test can give at na against nb:
 * 1 / C(na + nb, na) (samples apart, no ties). */
double lbs_mwu_min_p(size_t na, size_t nb);

/* Holm's step-down adjustment of m p-values (adj may be p): adj[i] =
 * max over the j ranked at or before i of min(1, (m - rank_j) p_j), so
 * rejecting every adj <= alpha keeps the family-wise error rate at
 * alpha.  NaN p's are left out of the family and stay NaN. */
void lbs_holm(const double *p, size_t m, double *adj);

/* z with P(Z > z) = p for a standard normal Z, 0 < p < 1 (bisection on
 * erfc, 1e-12). */
double lbs_norm_isf(double p);

/* The smallest relative change (0.07 = 7%) a one-sided test at level
 * alpha detects with 80% power between na and nb samples of relative
 * spread cv (the pooled coefficient of variation), never below floor:
 * (z_alpha + z_0.8) cv sqrt(1/na + 1/nb) / sqrt(3/pi) (the normal
 * approximation, with the rank test's efficiency 3/pi against the t
 * test), and INFINITY when the exact test cannot reach alpha at all
 * (lbs_mwu_min_p(na, nb) > alpha). */
double lbs_detectable(double cv, size_t na, size_t nb, double alpha,
                      double floor);

/* The repeats per side (2 to nmax) that make lbs_detectable(cv, n, n,
 * alpha, floor) <= target; 0 when none does (floor or cv too large). */
size_t lbs_repeats_for(double target, double cv, double alpha, double floor,
                       size_t nmax);

#endif
