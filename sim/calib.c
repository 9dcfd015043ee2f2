/* calib.c - least-squares alpha-beta fit of measured collectives.
 *
 * Each sample gives x = (1, steps(P), volume(P, bytes)) and a time t; the
 * fit finds base, hop >= 0 and 1/bw > 0 minimising the RELATIVE error
 * sum ((x . c - t) / t)^2, so microsecond latencies and 100 ms transfers
 * count alike.  The forms are those of the ring algorithms coll.c uses on
 * one node (allreduce 2(P-1) steps, 2(P-1)/P n; allgather P-1, (P-1) n;
 * alltoall P-1, (P-1)/P n; bcast P-1, n; barrier ceil(log2 P), 0), so a
 * platform written from the fit predicts exactly what was fitted.  When a
 * coefficient comes out negative (or the data cannot separate it, e.g.
 * every sample at the same P makes hop collinear with base) it is pinned
 * to 0 and the rest refitted; the feasible fit with the least error wins.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale_sim.h"

static int clog2l(long x)
{
    int k = 0;
    while (((long)1 << k) < x)
        k++;
    return k;
}

static int features(const struct lbs_sim_sample *s, double x[3])
{
    double P = (double)s->ranks, n = s->bytes;
    x[0] = 1;
    switch (s->coll) {
    case LBS_SIM_ALLREDUCE:
        x[1] = 2 * (P - 1);
        x[2] = 2 * (P - 1) / P * n;
        break;
    case LBS_SIM_ALLGATHER:
    case LBS_SIM_ALLGATHERV: x[1] = P - 1; x[2] = (P - 1) * n; break;
    case LBS_SIM_ALLTOALL: x[1] = P - 1; x[2] = (P - 1) / P * n; break;
    case LBS_SIM_BCAST: x[1] = P - 1; x[2] = n; break;
    case LBS_SIM_BARRIER: x[1] = clog2l(s->ranks); x[2] = 0; break;
    default: return -1;
    }
    return 0;
}

/* Weighted least squares over the coefficients in mask (bit i = c[i]
 * free); returns the weighted squared relative error or INFINITY when the
 * system is singular or a coefficient comes out negative.  Columns are
 * normalised first (bytes and counts differ by 1e9). */
static double solve(const struct lbs_sim_sample *s, const size_t *idx,
                    size_t n, unsigned mask, double c[3])
{
    double A[3][4] = {{0}}, sc[3] = {0, 0, 0};
    int k[3], m = 0;
    for (int i = 0; i < 3; i++)
        if (mask >> i & 1)
            k[m++] = i;
    for (size_t j = 0; j < n; j++) {
        double x[3];
        features(&s[idx[j]], x);
        double wt = 1.0 / (s[idx[j]].t * s[idx[j]].t);
        for (int a = 0; a < m; a++)
            sc[a] += wt * x[k[a]] * x[k[a]];
    }
    for (int a = 0; a < m; a++) {
        if (!(sc[a] > 0) || !isfinite(sc[a]))
            return INFINITY;
        sc[a] = sqrt(sc[a]);
    }
    for (size_t j = 0; j < n; j++) {
        double x[3];
        features(&s[idx[j]], x);
        double wt = 1.0 / (s[idx[j]].t * s[idx[j]].t);
        for (int a = 0; a < m; a++) {
            for (int b = 0; b < m; b++)
                A[a][b] += wt * x[k[a]] / sc[a] * x[k[b]] / sc[b];
            A[a][m] += wt * x[k[a]] / sc[a] * s[idx[j]].t;
        }
    }
    /* Gauss-Jordan with partial pivoting on the unit-diagonal system */
    for (int col = 0; col < m; col++) {
        int piv = col;
        for (int r = col + 1; r < m; r++)
            if (fabs(A[r][col]) > fabs(A[piv][col]))
                piv = r;
        if (!(fabs(A[piv][col]) > 1e-9))
            return INFINITY;
        for (int b = 0; b <= m; b++) {
            double t = A[col][b];
            A[col][b] = A[piv][b];
            A[piv][b] = t;
        }
        for (int r = 0; r < m; r++) {
            if (r == col)
                continue;
            double f = A[r][col] / A[col][col];
            for (int b = col; b <= m; b++)
                A[r][b] -= f * A[col][b];
        }
    }
    c[0] = c[1] = c[2] = 0;
    for (int a = 0; a < m; a++)
        c[k[a]] = A[a][m] / A[a][a] / sc[a];
    for (int i = 0; i < 3; i++)
        if (!isfinite(c[i]) || c[i] < 0)
            return INFINITY;
    if (!(c[2] > 0))
        return INFINITY;
    double err = 0;
    for (size_t j = 0; j < n; j++) {
        double x[3];
        features(&s[idx[j]], x);
        double e = (x[0] * c[0] + x[1] * c[1] + x[2] * c[2] - s[idx[j]].t) /
                   s[idx[j]].t;
        err += e * e;
    }
    return err;
}

static double best_fit(const struct lbs_sim_sample *s, const size_t *idx,
                       size_t n, double c[3])
{
    static const unsigned masks[] = {7, 5, 6, 4};
    double best = INFINITY;
    for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
        double t[3];
        double e = solve(s, idx, n, masks[i], t);
        if (e < best * (1 - 1e-9)) {
            best = e;
            memcpy(c, t, sizeof t);
        }
    }
    return best;
}

static int cmp_sample(const void *a, const void *b, void *ctx)
{
    const struct lbs_sim_sample *s = ctx;
    const struct lbs_sim_sample *x = &s[*(const size_t *)a],
                                *y = &s[*(const size_t *)b];
    if (x->coll != y->coll)
        return x->coll < y->coll ? -1 : 1;
    if (x->ranks != y->ranks)
        return x->ranks < y->ranks ? -1 : 1;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int lbs_sim_fit(const struct lbs_sim_sample *s, size_t n,
                struct lbs_sim_fit *fit, struct lbs_err *err)
{
    memset(fit, 0, sizeof *fit);
    fit->med_err = fit->max_err = -1;
    size_t *idx = malloc((n + 1) * sizeof *idx);
    if (!idx)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        double x[3];
        if (features(&s[i], x) || s[i].ranks < 2 || !(s[i].t > 0) ||
            !isfinite(s[i].t) || !(s[i].bytes >= 0))
            continue;
        idx[m++] = i;
    }
    if (m < 2) {
        free(idx);
        return lbs_err_set(err, -EINVAL, "calibration needs at least 2 usable "
                           "samples (ranks >= 2, time > 0), got %zu", m);
    }
    qsort_r(idx, m, sizeof *idx, cmp_sample, (void *)s);
    double c[3] = {0, 0, 0};
    if (!isfinite(best_fit(s, idx, m, c))) {
        free(idx);
        return lbs_err_set(err, -EINVAL, "calibration: the samples do not "
                           "determine a bandwidth (need several message "
                           "sizes)");
    }
    fit->base_lat = c[0];
    fit->hop_lat = c[1];
    fit->bw = 1 / c[2];
    fit->used = m;
    /* held out: fit on every other sample of the sorted list, test on the
     * rest (each size class is split, so both halves span the sizes) */
    if (m >= 6) {
        size_t *tr = malloc(m * sizeof *tr);
        double *re = malloc(m * sizeof *re);
        size_t ntr = 0, nte = 0;
        if (!tr || !re) {
            free(tr);
            free(re);
            free(idx);
            return lbs_err_set(err, -ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < m; i += 2)
            tr[ntr++] = idx[i];
        double h[3] = {0, 0, 0};
        if (isfinite(best_fit(s, tr, ntr, h))) {
            for (size_t i = 1; i < m; i += 2) {
                double x[3];
                const struct lbs_sim_sample *q = &s[idx[i]];
                features(q, x);
                double p = x[0] * h[0] + x[1] * h[1] + x[2] * h[2];
                re[nte++] = fabs(p - q->t) / q->t;
            }
            qsort(re, nte, sizeof *re, cmp_d);
            fit->held_out = nte;
            fit->med_err = nte % 2 ? re[nte / 2]
                                   : 0.5 * (re[nte / 2 - 1] + re[nte / 2]);
            fit->max_err = re[nte - 1];
        }
        free(tr);
        free(re);
    }
    free(idx);
    return 0;
}
