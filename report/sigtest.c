/* sigtest.c - the exact Mann-Whitney U test, Holm's correction and the
 * detectable change (sigtest.h).  Pure C: the unit tests compile it
 * alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sigtest.h"

static int cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Twice the mid-rank of every pooled value (integers, so the rank sums
 * can index an array) in r, in the order of v (a then b); the tie term
 * sum(t^3 - t) in *ties.  0, or -1 without memory. */
static int doubled_ranks(const double *v, size_t n, long *r, double *ties)
{
    double *s = malloc(n * sizeof *s);
    if (!s)
        return -1;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_dbl);
    *ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] == s[i])
            j++;
        double t = (double)(j - i);
        *ties += t * t * t - t;
        i = j;
    }
    for (size_t i = 0; i < n; i++) {
        size_t lo = 0, hi = 0;   /* values below, and at or below, v[i] */
        for (size_t k = 0; k < n; k++) {
            lo += s[k] < v[i];
            hi += s[k] <= v[i];
        }
        r[i] = (long)(lo + hi + 1);   /* 2 x (lo + 1 + hi) / 2 */
    }
    free(s);
    return 0;
}

/* The permutation distribution of a's doubled rank sum: ways[s] = the
 * number of na-subsets of the n pooled values whose doubled ranks sum to
 * s (a knapsack count, row k = subsets of size k).  p's from it. */
static int mwu_exact(const long *r, size_t na, size_t n, long obs,
                     double *pg, double *pl)
{
    long smax = 0;
    for (size_t i = 0; i < n; i++)
        smax += r[i];
    size_t w = (size_t)smax + 1;
    double *ways = calloc((na + 1) * w, sizeof *ways);
    if (!ways)
        return -1;
    ways[0] = 1;
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1 < na ? i + 1 : na; k >= 1; k--)
            for (long s = smax; s >= r[i]; s--)
                ways[k * w + (size_t)s] += ways[(k - 1) * w + (size_t)(s - r[i])];
    double tot = 0, ge = 0, le = 0;
    for (long s = 0; s <= smax; s++) {
        double c = ways[na * w + (size_t)s];
        tot += c;
        ge += s >= obs ? c : 0;
        le += s <= obs ? c : 0;
    }
    free(ways);
    *pg = ge / tot;
    *pl = le / tot;
    return 1;
}

/* The normal approximation of the same (tie-corrected variance,
 * continuity correction of half a rank). */
static int mwu_normal(size_t na, size_t nb, double ra, double ties,
                      double *pg, double *pl)
{
    double n = (double)(na + nb);
    double mu = (double)na * (n + 1) / 2;
    double var = (double)na * (double)nb / 12 *
                 ((n + 1) - ties / (n * (n - 1)));
    if (!(var > 0)) {
        *pg = *pl = 1;
        return 0;
    }
    *pg = 0.5 * erfc((ra - mu - 0.5) / sqrt(var) / sqrt(2));
    *pl = 0.5 * erfc((mu - ra - 0.5) / sqrt(var) / sqrt(2));
    *pg = fmin(1, *pg);
    *pl = fmin(1, *pl);
    return 0;
}

int lbs_mwu(const double *a, size_t na, const double *b, size_t nb,
            double *p_a_greater, double *p_a_less)
{
    *p_a_greater = *p_a_less = 1;
    size_t n = na + nb;
    if (!na || !nb)
        return -1;
    double *v = malloc(n * sizeof *v);
    long *r = malloc(n * sizeof *r);
    double ties;
    if (!v || !r || (memcpy(v, a, na * sizeof *v),
                     memcpy(v + na, b, nb * sizeof *v),
                     doubled_ranks(v, n, r, &ties))) {
        free(v);
        free(r);
        return -1;
    }
    long obs = 0;
    for (size_t i = 0; i < na; i++)
        obs += r[i];
    int rc = n <= LBS_MWU_EXACT_MAX
             ? mwu_exact(r, na, n, obs, p_a_greater, p_a_less)
             : mwu_normal(na, nb, (double)obs / 2, ties, p_a_greater,
                          p_a_less);
    free(v);
    free(r);
    return rc;
}

double lbs_mwu_min_p(size_t na, size_t nb)
{
    double c = 1;   /* C(na + nb, na), built up as a product */
    for (size_t k = 1; k <= na; k++)
        c = c * (double)(nb + k) / (double)k;
    return 1 / c;
}

void lbs_holm(const double *p, size_t m, double *adj)
{
    size_t *ord = malloc(m * sizeof *ord), k = 0;
    if (!ord) {   /* Bonferroni: never less strict than Holm */
        for (size_t i = 0; i < m; i++)
            adj[i] = isnan(p[i]) ? NAN : fmin(1, p[i] * (double)m);
        return;
    }
    for (size_t i = 0; i < m; i++)
        if (isnan(p[i]))
            adj[i] = NAN;
        else
            ord[k++] = i;
    /* ascending p (insertion sort: families are tens of metrics) */
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && p[ord[j]] < p[ord[j - 1]]; j--) {
            size_t t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    /* in place is safe: p[ord[i]] is read before adj[ord[i]] is set,
     * and never again */
    double run = 0;
    for (size_t i = 0; i < k; i++) {
        run = fmax(run, fmin(1, (double)(k - i) * p[ord[i]]));
        adj[ord[i]] = run;
    }
    free(ord);
}

double lbs_norm_isf(double p)
{
    double lo = -40, hi = 40;
    while (hi - lo > 1e-12) {
        double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(mid / sqrt(2)) > p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

double lbs_detectable(double cv, size_t na, size_t nb, double alpha,
                      double floor)
{
    if (!na || !nb || lbs_mwu_min_p(na, nb) > alpha * (1 + 1e-12))
        return INFINITY;
    const double pi = 3.14159265358979323846;
    double d = (lbs_norm_isf(alpha) + lbs_norm_isf(0.2)) * cv *
               sqrt(1.0 / (double)na + 1.0 / (double)nb) / sqrt(3 / pi);
    return fmax(d, floor);
}

size_t lbs_repeats_for(double target, double cv, double alpha, double floor,
                       size_t nmax)
{
    if (floor > target)
        return 0;
    for (size_t n = 2; n <= nmax; n++)
        if (lbs_detectable(cv, n, n, alpha, floor) <= target)
            return n;
    return 0;
}
