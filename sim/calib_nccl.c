/* calib_nccl.c - a GPU platform's NCCL-model bandwidths fitted to
 * measured collectives (sim calibrate --nccl-model BASE).
 *
 * calib.c fits an alpha-beta model, the right form for MPI on CPUs.  On
 * GPUs the simulator prices collectives with NCCL's own tuner model
 * (nccl.c): latencies and protocol factors are NCCL 2.21.5's constant
 * tables, and what a machine contributes is what NCCL's topology search
 * finds on it: the bandwidth per channel inside a node and across nodes.
 * So this fit starts from a GPU preset of the same kind (its arch,
 * channels, algorithms, protocols) and finds two factors:
 *
 *   x  on the node's links: nccl.intra_graph.bw_gbs and node.intra_bw_gbs
 *      (and the NVLS graph where there is one), from the one-node rows;
 *   y  on the network: nccl.inter_graph.bw_gbs, tree_bw_intra_gbs,
 *      p2p_gbs and node.nic_gbps, from the rows of several nodes, x fixed;
 *
 * each minimising the sum of squared log errors of the simulator's own
 * price (lbs_sim_coll_cost, NCCL's tuner choosing algorithm and protocol
 * per call) against the measured times: a scan of log-factors over
 * [1/64, 64] and a golden-section refinement around the best.  Latencies
 * stay NCCL's: where small messages disagree, the held-out error says so
 * instead of a fitted constant hiding it.  A group without rows keeps the
 * base's factor 1 and is reported as not measured.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define LOG_SPAN 4.1588830833596715   /* ln 64 */
#define SCAN 97
#define GOLD_ITERS 60

struct nfit {
    const struct lbs_sim_platform *base;
    const struct lbs_sim_sample *s;
    const size_t *idx;
    size_t n;
    long g;                 /* GPUs per node of the samples */
    double x;               /* the fixed intra factor (fitting y) */
    int inter;              /* fitting y (else x) */
};

/* The base with the node's links scaled by x and the network by y. */
void lbs_sim_nccl_scaled(const struct lbs_sim_platform *base, long g,
                         double x, double y, struct lbs_sim_platform *out)
{
    *out = *base;
    if (g > 0)
        out->gpus_per_node = (int)g;
    out->intra_bw *= x;
    out->nccl.intra.bw *= x;
    out->nccl.nvls.bw *= x;
    out->nic_bw *= y;
    out->nccl.inter.bw *= y;
    out->nccl.inter.tree_bw_intra *= y;
    out->nccl.p2p_bw *= y;
}

/* The simulator's time for sample s on platform pl, or -1. */
static double price(const struct lbs_sim_platform *pl,
                    const struct lbs_sim_sample *s)
{
    struct lbs_sim_net net;
    struct lbs_err e;
    if (lbs_sim_net_init(&net, pl, s->ranks, &e))
        return -1;
    return lbs_sim_coll_cost(&net, s->coll, s->bytes, LBS_TOPO_RING, 0).t;
}

static double sq_log_err(const struct nfit *f, double lf)
{
    struct lbs_sim_platform pl;
    double x = f->inter ? f->x : exp(lf), y = f->inter ? exp(lf) : 1, sum = 0;
    lbs_sim_nccl_scaled(f->base, f->g, x, y, &pl);
    for (size_t i = 0; i < f->n; i++) {
        const struct lbs_sim_sample *s = &f->s[f->idx[i]];
        double t = price(&pl, s);
        double r = t > 0 && s->t > 0 ? log(t / s->t) : 50;
        sum += r * r;
    }
    return sum;
}

/* argmin over ln(factor) in [-LOG_SPAN, LOG_SPAN]: scan, then golden
 * section in the bracket around the best point. */
static double minimise(const struct nfit *f)
{
    double best = 0, bv = INFINITY, h = 2 * LOG_SPAN / (SCAN - 1);
    for (int i = 0; i < SCAN; i++) {
        double lf = -LOG_SPAN + i * h, v = sq_log_err(f, lf);
        if (v < bv) {
            bv = v;
            best = lf;
        }
    }
    const double r = 0.6180339887498949;
    double a = best - h, b = best + h;
    double c = b - r * (b - a), d = a + r * (b - a);
    double fc = sq_log_err(f, c), fd = sq_log_err(f, d);
    for (int it = 0; it < GOLD_ITERS; it++) {
        if (fc < fd) {
            b = d; d = c; fd = fc;
            c = b - r * (b - a); fc = sq_log_err(f, c);
        } else {
            a = c; c = d; fc = fd;
            d = a + r * (b - a); fd = sq_log_err(f, d);
        }
    }
    return exp((a + b) / 2);
}

/* Relative errors of pl's prices over samples idx[0..n): median, max. */
static void errors(const struct lbs_sim_platform *pl,
                   const struct lbs_sim_sample *s, const size_t *idx,
                   size_t n, struct lbs_sim_heldout *h)
{
    double *re = malloc((n ? n : 1) * sizeof *re);
    h->n = 0;
    h->med = h->max = -1;
    if (!re)
        return;
    for (size_t i = 0; i < n; i++) {
        double t = price(pl, &s[idx[i]]);
        if (t > 0)
            re[h->n++] = fabs(t - s[idx[i]].t) / s[idx[i]].t;
    }
    if (h->n) {
        h->max = 0;
        for (size_t i = 0; i < h->n; i++)
            h->max = fmax(h->max, re[i]);
        h->med = sj_median(re, h->n);
    }
    free(re);
}

static int by_bytes(const void *a, const void *b, void *ctx)
{
    const struct lbs_sim_sample *s = ctx;
    double x = s[*(const size_t *)a].bytes, y = s[*(const size_t *)b].bytes;
    return x < y ? -1 : x > y;
}

/* Fit one group (idx, n rows): the factor from all rows, and the held-out
 * error of a fit to every other size (ascending) predicting the rest. */
static double fit_group(struct nfit f, struct lbs_sim_heldout *held)
{
    double k = minimise(&f);
    size_t *tr = malloc((f.n ? f.n : 1) * sizeof *tr), *te = tr ? malloc(
                     (f.n ? f.n : 1) * sizeof *te) : NULL;
    held->n = 0;
    held->med = held->max = -1;
    if (te && f.n >= 4) {
        size_t nt, ne;
        qsort_r((size_t *)f.idx, f.n, sizeof *f.idx, by_bytes,
                (void *)f.s);
        sj_alternate(f.idx, f.n, tr, &nt, te, &ne);
        const size_t *all = f.idx;
        f.idx = tr;
        f.n = nt;
        double kh = minimise(&f);
        struct lbs_sim_platform pl;
        lbs_sim_nccl_scaled(f.base, f.g, f.inter ? f.x : kh,
                            f.inter ? kh : 1, &pl);
        errors(&pl, f.s, te, ne, held);
        f.idx = all;
    }
    free(tr);
    free(te);
    return k;
}

static int group_g(const struct lbs_sim_sample *s, const size_t *idx,
                   size_t n, long *g, const char *file, struct lbs_err *err)
{
    for (size_t i = 0; i < n; i++) {
        long r = s[idx[i]].rpn > 0 ? s[idx[i]].rpn : s[idx[i]].ranks;
        if (*g && r != *g)
            return lbs_err_set(err, -EINVAL, "%s: rows with %ld and %ld "
                               "GPUs per node: fit one node layout at a "
                               "time", file, *g, r);
        *g = r;
    }
    return 0;
}

int lbs_sim_fit_nccl(const struct lbs_sim_sample *s, size_t n,
                     const struct lbs_sim_platform *base,
                     struct lbs_sim_nccl_fit *fit, struct lbs_err *err)
{
    memset(fit, 0, sizeof *fit);
    fit->x = fit->y = 1;
    if (!base->nccl_model)
        return lbs_err_set(err, -EINVAL, "%s: not an NCCL-model platform "
                           "(--nccl-model takes a GPU preset such as "
                           "dgx-a100)", base->name);
    size_t *one = calloc(n ? n : 1, sizeof *one),
           *multi = calloc(n ? n : 1, sizeof *multi), n1 = 0, nm = 0;
    if (!one || !multi) {
        free(one);
        free(multi);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        if (s[i].ranks >= 2 && s[i].nodes > 1)
            multi[nm++] = i;
        else if (s[i].ranks >= 2)
            one[n1++] = i;
    long g1 = 0, g = 0;     /* one node: its largest P (fewer GPUs of a
                               node are one-node rows too) */
    for (size_t i = 0; i < n1; i++)
        g1 = s[one[i]].ranks > g1 ? s[one[i]].ranks : g1;
    int rc = group_g(s, multi, nm, &g, base->name, err);
    if (!rc && !n1 && !nm)
        rc = lbs_err_set(err, -EINVAL, "no rows of two or more ranks to fit");
    if (!rc && g && g1 > g)
        rc = lbs_err_set(err, -EINVAL, "one-node rows of %ld GPUs but %ld "
                         "GPUs per node across nodes", g1, g);
    if (!rc) {
        fit->g = g ? g : g1;
        struct nfit f = {base, s, one, n1, fit->g, 1, 0};
        if (n1)
            fit->x = fit_group(f, &fit->held_intra);
        f = (struct nfit){base, s, multi, nm, fit->g, fit->x, 1};
        if (nm)
            fit->y = fit_group(f, &fit->held_inter);
        fit->n_intra = n1;
        fit->n_inter = nm;
        struct lbs_sim_platform pl;
        lbs_sim_nccl_scaled(base, fit->g, 1, 1, &pl);
        for (size_t i = 0; i < nm; i++)
            one[n1 + i] = multi[i];
        errors(&pl, s, one, n1 + nm, &fit->base_err);
        lbs_sim_nccl_scaled(base, fit->g, fit->x, fit->y, &pl);
        errors(&pl, s, one, n1 + nm, &fit->fit_err);
    }
    free(one);
    free(multi);
    return rc;
}
