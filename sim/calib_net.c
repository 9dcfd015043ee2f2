/* calib_net.c - the network's constants from collectives measured across
 * nodes, given the constants of one node (calib.c's fit of one-node
 * rows), in the form coll.c prices a calibrated platform with.
 *
 * A sample of P ranks on N nodes of g ranks crosses, on its slowest
 * chain, some intra-node and some inter-node steps, and moves some bytes
 * through the node's exit; coll.c counts them per algorithm (the ones a
 * calibrated platform enables):
 *
 *   collective  inter-node steps        intra-node steps  bytes out (x 1/Bn)
 *   allreduce   2N (g>=3), 2N-1 (g=2),  2(P-1) - inter    2(P-1)/P n
 *               2(N-1) (g=1)            (ring, ar_ring)
 *   allgather   N (g>=2), N-1 (g=1)     (P-1) - inter     (P-1) m
 *   alltoall    P-g                     g-1               (P-g)/P S g
 *               (pairwise: a GPU's share Bn/g of the node's NICs)
 *   bcast       N-1                     P-N               n (pipeline)
 *   barrier     ceil(log2 P)            0                 -
 *
 * so with the one-node fit's base latency, intra-node step latency and
 * rendezvous cost (per step above its eager limit) fixed,
 *
 *   t - base - intra (hop + rndv [m > E]) = inter x an + bytes out / Bn(coll)
 *
 * (a rendezvous found on one node says nothing of the network's
 * transport: inter-node steps pay an alone, net->rndv_lat = 0)
 *
 * is linear in the inter-node step latency an and one inverse bandwidth
 * per collective: weighted least squares on the relative error, as
 * calib.c, with an pinned to 0 if it comes out negative.  These are the
 * small- and large-message limits of coll.c's formulas; in between its
 * pipelined ring overlaps latencies with transfers (ring_crit), which
 * `sim calibrate` reports as the written platform's own error. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define NV 4                        /* allreduce, allgather, alltoall, bcast */
#define NU (1 + NV)                 /* an, then 1/Bn per collective */


/* Steps and bytes of one sample: x[0] inter-node steps, x[1 + k] bytes
 * through the exit in collective k's column; *fixed the one-node part. */
static int net_features(const struct lbs_sim_sample *s,
                        const struct lbs_sim_fit *in, double x[NU],
                        double *fixed)
{
    double P = (double)s->ranks, N = (double)(s->nodes > 1 ? s->nodes : 1);
    double g = (double)(s->rpn > 0 ? s->rpn : s->ranks), n = s->bytes;
    double inter, intra, vol = 0;
    memset(x, 0, NU * sizeof *x);
    switch (s->coll) {
    case LBS_COLL_ALLREDUCE:
        inter = g >= 3 ? 2 * N : g == 2 ? 2 * N - 1 : 2 * (N - 1);
        intra = 2 * (P - 1) - inter;
        vol = 2 * (P - 1) / P * n;
        break;
    case LBS_COLL_ALLGATHER:
    case LBS_COLL_ALLGATHERV:
        inter = g >= 2 ? N : N - 1;
        intra = (P - 1) - inter;
        vol = (P - 1) * n;
        break;
    case LBS_COLL_ALLTOALL:
        inter = P - g;
        intra = g - 1;
        vol = (P - g) / P * n * g;
        break;
    case LBS_COLL_BCAST:
        inter = N - 1;
        intra = P - N;
        vol = n;
        break;
    case LBS_COLL_BARRIER:
        inter = (double)sj_clog2(s->ranks);
        intra = 0;
        break;
    default:
        return -1;
    }
    if (intra < 0)
        intra = 0;
    int rndv = in->eager_max > 0 &&
               lbs_sim_step_bytes(s->coll, s->ranks, n) > in->eager_max;
    x[0] = inter;
    if (sj_calib_col(s->coll) >= 0)
        x[1 + sj_calib_col(s->coll)] = vol;
    *fixed = in->base_lat + intra * (in->hop_lat + (rndv ? in->rndv_lat
                                                            : 0));
    return 0;
}

static double net_predict(const struct lbs_sim_sample *s,
                          const struct lbs_sim_fit *in, const double u[NU])
{
    double x[NU], p;
    net_features(s, in, x, &p);
    for (int i = 0; i < NU; i++)
        p += x[i] * u[i];
    return p;
}

/* Weighted least squares over the unknowns in mask on samples idx;
 * the squared relative error, INFINITY when singular or infeasible. */
static double net_solve(const struct lbs_sim_sample *s, const size_t *idx,
                        size_t n, const struct lbs_sim_fit *in,
                        unsigned mask, double u[NU])
{
    double A[NU][NU + 1] = {{0}}, sc[NU] = {0};
    int k[NU], m = 0;
    for (int i = 0; i < NU; i++)
        if (mask >> i & 1)
            k[m++] = i;
    for (int pass = 0; pass < 2; pass++)
        for (size_t j = 0; j < n; j++) {
            double x[NU], f, t = s[idx[j]].t, wt = 1.0 / (t * t);
            net_features(&s[idx[j]], in, x, &f);
            for (int a = 0; a < m; a++) {
                if (!pass) {
                    sc[a] += wt * x[k[a]] * x[k[a]];
                    continue;
                }
                for (int b = 0; b < m; b++)
                    A[a][b] += wt * x[k[a]] / sc[a] * x[k[b]] / sc[b];
                A[a][m] += wt * x[k[a]] / sc[a] * (t - f);
            }
            if (!pass && j == n - 1)
                for (int a = 0; a < m; a++) {
                    if (!(sc[a] > 0) || !isfinite(sc[a]))
                        return INFINITY;
                    sc[a] = sqrt(sc[a]);
                }
        }
    if (sj_gauss_jordan(&A[0][0], m, NU + 1))
        return INFINITY;
    memset(u, 0, NU * sizeof *u);
    for (int a = 0; a < m; a++)
        u[k[a]] = A[a][m] / A[a][a] / sc[a];
    for (int i = 0; i < NU; i++)
        if (!isfinite(u[i]) || u[i] < 0 || (i && (mask >> i & 1) &&
                                            !(u[i] > 0)))
            return INFINITY;
    double err = 0;
    for (size_t j = 0; j < n; j++) {
        double e = (net_predict(&s[idx[j]], in, u) - s[idx[j]].t) /
                   s[idx[j]].t;
        err += e * e;
    }
    return err;
}

/* The latency free if it helps (and stays >= 0), every bandwidth of a
 * collective present. */
static double net_best(const struct lbs_sim_sample *s, const size_t *idx,
                       size_t n, const struct lbs_sim_fit *in, double u[NU])
{
    unsigned vm = 0;
    for (size_t j = 0; j < n; j++)
        if (sj_calib_col(s[idx[j]].coll) >= 0)
            vm |= 1u << (1 + sj_calib_col(s[idx[j]].coll));
    if (!vm)
        return INFINITY;
    double a[NU], b[NU];
    double e0 = net_solve(s, idx, n, in, vm, a);
    double e1 = net_solve(s, idx, n, in, vm | 1u, b);
    if (e1 < e0 * (1 - 1e-6) - 1e-24) {
        memcpy(u, b, sizeof b);
        return e1;
    }
    memcpy(u, a, sizeof a);
    return e0;
}

/* Held-out rank counts: for each P among the usable samples, fit the
 * others and predict every sample at P (needs two or more counts). */
static void net_heldout_ranks(const struct lbs_sim_sample *s, size_t n,
                              const struct lbs_sim_fit *in,
                              struct lbs_sim_fit *net)
{
    size_t *tr = malloc((n + 1) * sizeof *tr);
    double *re = malloc((n + 1) * sizeof *re);
    size_t nre = 0;
    for (size_t i = 0; tr && re && i < n; i++) {
        double x[NU], f, u[NU];
        int first = 1;
        for (size_t j = 0; j < i; j++)
            first &= s[j].ranks != s[i].ranks;
        if (!first || net_features(&s[i], in, x, &f))
            continue;
        size_t ntr = 0;
        for (size_t j = 0; j < n; j++)
            if (s[j].ranks != s[i].ranks && !net_features(&s[j], in, x, &f) &&
                s[j].ranks >= 2 && s[j].t > 0 && isfinite(s[j].t))
                tr[ntr++] = j;
        if (!ntr || !isfinite(net_best(s, tr, ntr, in, u)))
            continue;
        for (size_t j = 0; j < n; j++)
            if (s[j].ranks == s[i].ranks && s[j].t > 0 && isfinite(s[j].t) &&
                !net_features(&s[j], in, x, &f))
                re[nre++] = fabs(net_predict(&s[j], in, u) - s[j].t) /
                            s[j].t;
    }
    if (nre) {
        net->ranks.n = nre;
        net->ranks.med = sj_median(re, nre);
        net->ranks.max = re[nre - 1];
    }
    free(tr);
    free(re);
}

int lbs_sim_fit_net(const struct lbs_sim_sample *s, size_t n,
                    const struct lbs_sim_fit *in, struct lbs_sim_fit *net,
                    struct lbs_err *err)
{
    size_t *idx = malloc((n + 1) * sizeof *idx);
    size_t *te = malloc((n + 1) * sizeof *te);
    double *re = malloc((n + 1) * sizeof *re);
    size_t m = 0;
    int rc = 0;
    *net = *in;
    net->sizes = (struct lbs_sim_heldout){0, -1, -1};
    net->ranks = (struct lbs_sim_heldout){0, -1, -1};
    memset(net->coll_bw, 0, sizeof net->coll_bw);
    net->bw = 0;
    if (!idx || !te || !re) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        double x[NU], f;
        if (!net_features(&s[i], in, x, &f) && s[i].ranks >= 2 &&
            s[i].t > 0 && isfinite(s[i].t) && s[i].bytes >= 0)
            idx[m++] = i;
    }
    double u[NU];
    if (m < 2 || !isfinite(net_best(s, idx, m, in, u))) {
        rc = lbs_err_set(err, -EINVAL, "the network's constants are not "
                         "determined by %zu usable samples (need several "
                         "message sizes of each collective)", m);
        goto out;
    }
    net->hop_lat = u[0];
    net->rndv_lat = 0;
    net->used = m;
    static const enum lbs_coll vc[NV] = {LBS_COLL_ALLREDUCE,
        LBS_COLL_ALLGATHER, LBS_COLL_ALLTOALL, LBS_COLL_BCAST};
    for (int k = 0; k < NV; k++) {
        double b = u[1 + k] > 0 ? 1 / u[1 + k] : 0;
        net->coll_bw[vc[k]] = b;
        net->bw = b > net->bw ? b : net->bw;
    }
    net->coll_bw[LBS_COLL_ALLGATHERV] = net->coll_bw[LBS_COLL_ALLGATHER];
    /* held-out sizes: fit every other sample, predict the rest */
    if (m >= 6) {
        size_t ntr, nte;
        sj_alternate(idx, m, idx, &ntr, te, &nte);
        double h[NU];
        if (isfinite(net_best(s, idx, ntr, in, h))) {
            for (size_t i = 0; i < nte; i++)
                re[i] = fabs(net_predict(&s[te[i]], in, h) - s[te[i]].t) /
                        s[te[i]].t;
            net->sizes.n = nte;
            net->sizes.med = sj_median(re, nte);
            net->sizes.max = re[nte - 1];
        }
    }
    net_heldout_ranks(s, n, in, net);
out:
    free(idx);
    free(te);
    free(re);
    return rc;
}
