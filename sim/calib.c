/* calib.c - least-squares fit of measured collectives to the cost model
 * coll.c prices a calibrated platform with.
 *
 * Each sample gives features x and a time t:
 *   x0 = 1                      base latency, once per call
 *   x1 = steps(P)               per-step latency (hop)
 *   x2 = steps(P) [m > E]       extra per-step latency above the eager
 *                               limit E (MPI's rendezvous handshake);
 *                               m = lbs_sim_step_bytes
 *   x3 = (P-1)/P bytes          allreduce only: bytes each rank reduces
 *   x4+k = volume(P, bytes)     bytes each rank sends, in the column of
 *                               the sample's collective k (allreduce,
 *                               allgather(v), alltoall, bcast): one link
 *                               bandwidth per collective
 * with the ring forms (allreduce 2(P-1) steps, 2(P-1)/P n; allgather P-1,
 * (P-1) n; alltoall P-1, (P-1)/P n; bcast P-1, n; barrier ceil(log2 P),
 * 0), so a platform written from the fit (protocols LL = eager with
 * max_bytes E, Simple = rendezvous; node.intra_bw_gbs = the fastest
 * collective's bandwidth and coll_bw_factor the others' ratios to it;
 * node.reduce_gbs) predicts exactly what was fitted.  Per-collective
 * bandwidths because MPI's shared-memory collectives copy at different
 * rates (NCCL's tuner also scales bandwidth per collective); an allreduce
 * reduction rate is then only separable from allreduce's bandwidth by
 * its different step structure, and is dropped when it is not.
 * The coefficients minimise the RELATIVE error sum ((x . c - t) / t)^2,
 * so microsecond latencies and 100 ms transfers count alike.  A latency
 * or reduction coefficient that comes out negative, or that the data
 * cannot separate (every sample at one P makes hop collinear with base),
 * is pinned to 0 and the rest refitted; over every subset of them and
 * every candidate E (each step size in the data, or none) the feasible
 * fit with the least error wins.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define NV 4                   /* bandwidth columns: allreduce, allgather, */
#define NF (4 + NV)            /* alltoall, bcast */
#define RNDV_BIT (1u << 2)

int sj_clog2(long x)
{
    int k = 0;
    while (((long)1 << k) < x)
        k++;
    return k;
}

int sj_calib_col(enum lbs_coll c)
{
    switch (c) {
    case LBS_COLL_ALLREDUCE: return 0;
    case LBS_COLL_ALLGATHER:
    case LBS_COLL_ALLGATHERV: return 1;
    case LBS_COLL_ALLTOALL: return 2;
    case LBS_COLL_BCAST: return 3;
    default: return -1;
    }
}

/* E < 0: no eager limit (x2 = 0). */
static int features(const struct lbs_sim_sample *s, double E, double x[NF])
{
    double P = (double)s->ranks, n = s->bytes, vol = 0;
    memset(x, 0, NF * sizeof *x);
    x[0] = 1;
    switch (s->coll) {
    case LBS_COLL_ALLREDUCE:
        x[1] = 2 * (P - 1);
        vol = 2 * (P - 1) / P * n;
        x[3] = (P - 1) / P * n;
        break;
    case LBS_COLL_ALLGATHER:
    case LBS_COLL_ALLGATHERV: x[1] = P - 1; vol = (P - 1) * n; break;
    case LBS_COLL_ALLTOALL: x[1] = P - 1; vol = (P - 1) / P * n; break;
    case LBS_COLL_BCAST: x[1] = P - 1; vol = n; break;
    case LBS_COLL_BARRIER: x[1] = sj_clog2(s->ranks); break;
    default: return -1;
    }
    if (sj_calib_col(s->coll) >= 0)
        x[4 + sj_calib_col(s->coll)] = vol;
    x[2] = E >= 0 && lbs_sim_step_bytes(s->coll, s->ranks, n) > E ? x[1] : 0;
    return 0;
}

static double predict(const struct lbs_sim_sample *s, double E,
                      const double c[NF])
{
    double x[NF], p = 0;
    features(s, E, x);
    for (int i = 0; i < NF; i++)
        p += x[i] * c[i];
    return p;
}

/* Weighted least squares over the coefficients in mask (bit i = c[i]
 * free); returns the weighted squared relative error, or INFINITY when
 * the system is singular or a coefficient comes out negative.  Columns
 * are normalised first (bytes and counts differ by 1e9). */
static double solve(const struct lbs_sim_sample *s, const size_t *idx,
                    size_t n, double E, unsigned mask, double c[NF])
{
    double A[NF][NF + 1] = {{0}}, sc[NF] = {0};
    int k[NF], m = 0;
    for (int i = 0; i < NF; i++)
        if (mask >> i & 1)
            k[m++] = i;
    for (size_t j = 0; j < n; j++) {
        double x[NF], wt = 1.0 / (s[idx[j]].t * s[idx[j]].t);
        features(&s[idx[j]], E, x);
        for (int a = 0; a < m; a++)
            sc[a] += wt * x[k[a]] * x[k[a]];
    }
    for (int a = 0; a < m; a++) {
        if (!(sc[a] > 0) || !isfinite(sc[a]))
            return INFINITY;
        sc[a] = sqrt(sc[a]);
    }
    for (size_t j = 0; j < n; j++) {
        double x[NF], wt = 1.0 / (s[idx[j]].t * s[idx[j]].t);
        features(&s[idx[j]], E, x);
        for (int a = 0; a < m; a++) {
            for (int b = 0; b < m; b++)
                A[a][b] += wt * x[k[a]] / sc[a] * x[k[b]] / sc[b];
            A[a][m] += wt * x[k[a]] / sc[a] * s[idx[j]].t;
        }
    }
    if (sj_gauss_jordan(&A[0][0], m, NF + 1))
        return INFINITY;
    memset(c, 0, NF * sizeof *c);
    for (int a = 0; a < m; a++)
        c[k[a]] = A[a][m] / A[a][a] / sc[a];
    for (int i = 0; i < NF; i++)
        if (!isfinite(c[i]) || c[i] < 0)
            return INFINITY;
    for (int k = 0; k < NV; k++)    /* every fitted collective moves data */
        if ((mask >> (4 + k) & 1) && !(c[4 + k] > 0))
            return INFINITY;
    double err = 0;
    for (size_t j = 0; j < n; j++) {
        double e = (predict(&s[idx[j]], E, c) - s[idx[j]].t) / s[idx[j]].t;
        err += e * e;
    }
    return err;
}

/* Subsets in order of how many latency/reduction coefficients they free,
 * so that among fits of equal error the simplest is kept. */
static int popcount(unsigned x)
{
    int k = 0;
    for (; x; x &= x - 1)
        k++;
    return k;
}

/* The best (E, mask) fit of the samples idx; *E = -1 for no eager limit.
 * The bandwidth of every collective present is always fitted; a richer
 * fit must beat the best so far by more than rounding. */
static double best_fit(const struct lbs_sim_sample *s, const size_t *idx,
                       size_t n, double c[NF], double *E)
{
    unsigned vmask = 0;
    for (size_t j = 0; j < n; j++)
        if (sj_calib_col(s[idx[j]].coll) >= 0)
            vmask |= 1u << (4 + sj_calib_col(s[idx[j]].coll));
    double best = INFINITY;
    *E = -1;
    if (!vmask)
        return best;
    for (int bits = 0; bits <= 4; bits++)
        for (unsigned lat = 0; lat < 16; lat++) {
            if (popcount(lat) != bits)
                continue;
            unsigned mask = lat | vmask;
            /* candidate limits: each sample's step size; none when the
             * rendezvous coefficient is pinned */
            for (size_t e = 0; e < ((mask & RNDV_BIT) ? n : 1); e++) {
                double cand = !(mask & RNDV_BIT) ? -1
                    : lbs_sim_step_bytes(s[idx[e]].coll, s[idx[e]].ranks,
                                         s[idx[e]].bytes);
                double t[NF];
                double err = solve(s, idx, n, cand, mask, t);
                if (err < best * (1 - 1e-6) - 1e-24) {
                    best = err;
                    *E = cand;
                    memcpy(c, t, sizeof t);
                }
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

/* Fit on tr, then the relative errors on te into re (sorted); returns the
 * count, 0 when the training half determines no fit. */
static size_t held_out(const struct lbs_sim_sample *s, const size_t *tr,
                       size_t ntr, const size_t *te, size_t nte, double *re)
{
    double h[NF], E;
    if (!ntr || !isfinite(best_fit(s, tr, ntr, h, &E)))
        return 0;
    for (size_t i = 0; i < nte; i++)
        re[i] = fabs(predict(&s[te[i]], E, h) - s[te[i]].t) / s[te[i]].t;
    return nte;
}

static void summarise(double *re, size_t n, struct lbs_sim_heldout *h)
{
    h->n = n;
    h->med = h->max = -1;
    if (!n)
        return;
    h->med = sj_median(re, n);   /* sorts re */
    h->max = re[n - 1];
}

int lbs_sim_fit(const struct lbs_sim_sample *s, size_t n,
                struct lbs_sim_fit *fit, struct lbs_err *err)
{
    memset(fit, 0, sizeof *fit);
    fit->sizes.med = fit->sizes.max = fit->ranks.med = fit->ranks.max = -1;
    size_t *idx = malloc((n + 1) * sizeof *idx);
    size_t *tr = malloc((n + 1) * sizeof *tr);
    size_t *te = malloc((n + 1) * sizeof *te);
    double *re = malloc((n + 1) * sizeof *re);
    int rc = 0;
    if (!idx || !tr || !te || !re) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        double x[NF];
        if (features(&s[i], -1, x) || s[i].ranks < 2 || !(s[i].t > 0) ||
            !isfinite(s[i].t) || !(s[i].bytes >= 0))
            continue;
        idx[m++] = i;
    }
    if (m < 2) {
        rc = lbs_err_set(err, -EINVAL, "calibration needs at least 2 usable "
                         "samples (ranks >= 2, time > 0), got %zu", m);
        goto out;
    }
    qsort_r(idx, m, sizeof *idx, cmp_sample, (void *)s);
    double c[NF], E;
    if (!isfinite(best_fit(s, idx, m, c, &E))) {
        rc = lbs_err_set(err, -EINVAL, "calibration: the samples do not "
                         "determine a bandwidth (need several message "
                         "sizes)");
        goto out;
    }
    fit->base_lat = c[0];
    fit->hop_lat = c[1];
    fit->rndv_lat = c[2];
    fit->eager_max = c[2] > 0 ? E : 0;
    fit->reduce_bw = c[3] > 0 ? 1 / c[3] : 0;
    static const enum lbs_coll vc[NV] = {LBS_COLL_ALLREDUCE,
        LBS_COLL_ALLGATHER, LBS_COLL_ALLTOALL, LBS_COLL_BCAST};
    for (int k = 0; k < NV; k++) {
        double b = c[4 + k] > 0 ? 1 / c[4 + k] : 0;
        fit->coll_bw[vc[k]] = b;
        if (b > fit->bw)
            fit->bw = b;
    }
    fit->coll_bw[LBS_COLL_ALLGATHERV] = fit->coll_bw[LBS_COLL_ALLGATHER];
    fit->used = m;
    /* held-out sizes: fit on every other sample of the sorted list, test
     * on the rest (each (coll, ranks) class is split, so both halves span
     * the sizes) */
    if (m >= 6) {
        size_t ntr, nte;
        sj_alternate(idx, m, tr, &ntr, te, &nte);
        summarise(re, held_out(s, tr, ntr, te, nte, re), &fit->sizes);
    }
    /* held-out rank counts: for each P, fit on the other rank counts and
     * predict every sample at P */
    size_t nre = 0;
    for (size_t i = 0; i < m; i++) {
        long P = s[idx[i]].ranks;
        int first = 1;
        for (size_t j = 0; j < i; j++)
            first &= s[idx[j]].ranks != P;
        if (!first)
            continue;
        size_t ntr = 0, nte = 0;
        for (size_t j = 0; j < m; j++) {
            if (s[idx[j]].ranks == P)
                te[nte++] = idx[j];
            else
                tr[ntr++] = idx[j];
        }
        nre += held_out(s, tr, ntr, te, nte, re + nre);
    }
    summarise(re, nre, &fit->ranks);
out:
    free(idx);
    free(tr);
    free(te);
    free(re);
    return rc;
}
