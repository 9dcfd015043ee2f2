/* topology.c - circulant mixing matrices (see lbscale/topology.h).
 *
 * A phase is a list of distinct offsets 0 < o < n (sorted ascending) with
 * one weight each, plus the self weight: W[i][(i - o) mod n] = w_o,
 * W[i][i] = wself.  Neighbour lists come out sorted without sorting: for
 * ascending o, i - o falls until it wraps below 0, i + o rises until it
 * wraps past n - 1, so each list is two runs walked in the right order.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/rng.h"
#include "lbscale/topology.h"

const char *const lbs_topo_names[] = {"ring", "exponential", "onepeer",
                                      "full", "symexp", NULL};

struct lbs_topology {
    enum lbs_topo kind;
    int n, period, degree;
    int *start;         /* period + 1: phase k's offsets are [start[k], start[k+1]) */
    int *off;           /* ascending within a phase */
    double *w;
    double *wself;      /* per phase */
};

/* ceil(log2 n) for n >= 1: the number of powers of two below n. */
static int ceil_log2(long n)
{
    int t = 0;
    while ((1L << t) < n)
        t++;
    return t;
}

static int period_of(enum lbs_topo kind, long n)
{
    return kind == LBS_TOPO_ONEPEER && n > 1 ? ceil_log2(n) : 1;
}

static int phase_of(enum lbs_topo kind, long n, long step)
{
    int period = period_of(kind, n);
    long k = (step - 1) % period;
    return (int)(k < 0 ? k + period : k);
}

/* Store o as the next of the offsets [0, *cnt), if it fits in cap. */
static void put(long *off, int cap, int *cnt, long o)
{
    if (*cnt < cap)
        off[*cnt] = o;
    (*cnt)++;
}

/* The one definition of every graph (topology.h): what the optimizers'
 * mixing matrices and the simulator's neighbour costs are built from. */
int lbs_topo_offsets(enum lbs_topo kind, long n, long step, long *off,
                     int cap)
{
    int tau = ceil_log2(n), cnt = 0;
    switch (kind) {
    case LBS_TOPO_RING:
        put(off, cap, &cnt, 1);
        put(off, cap, &cnt, -1);
        break;
    case LBS_TOPO_EXPONENTIAL:
        for (int k = 0; k < tau; k++)
            put(off, cap, &cnt, 1L << k);
        break;
    case LBS_TOPO_SYMEXP: {
        /* the undirected exponential graph: neighbours i +- 2^k, each
         * distinct one once, so the uniform weight stays symmetric and
         * doubly stochastic, as DecentLaM's analysis assumes */
        long seen[2 * 64];
        int deg = 0;
        for (int k = 0; k < tau; k++) {
            long c[2] = {1L << k, n - (1L << k)};
            for (int q = 0; q < 2; q++) {
                int dup = 0;
                for (int j = 0; j < deg && !dup; j++)
                    dup = seen[j] == c[q];
                if (!dup) {
                    seen[deg++] = c[q];
                    put(off, cap, &cnt, c[q]);
                }
            }
        }
        break;
    }
    case LBS_TOPO_ONEPEER:
        put(off, cap, &cnt, 1L << phase_of(kind, n, step));
        break;
    case LBS_TOPO_FULL:
    case LBS_TOPO_COUNT:
        for (long o = 1; o < n; o++)
            put(off, cap, &cnt, o);
        break;
    }
    return cnt;
}

/* Add weight w at offset o (mod n) to the phase being built in t at
 * [s, *end): merge with an equal offset, keep ascending order. */
static void add_offset(struct lbs_topology *t, int ph, int s, int *end,
                       long o, double w)
{
    int n = t->n;
    int r = (int)(((o % n) + n) % n);
    if (r == 0) {
        t->wself[ph] += w;
        return;
    }
    int k = s;
    if (*end > s && t->off[*end - 1] < r)
        k = *end;                       /* ascending inserts: append */
    while (k < *end && t->off[k] < r)
        k++;
    if (k < *end && t->off[k] == r) {
        t->w[k] += w;
        return;
    }
    memmove(&t->off[k + 1], &t->off[k], (size_t)(*end - k) * sizeof *t->off);
    memmove(&t->w[k + 1], &t->w[k], (size_t)(*end - k) * sizeof *t->w);
    t->off[k] = r;
    t->w[k] = w;
    (*end)++;
}

/* Every phase from lbs_topo_offsets: weight 1/(offsets + 1) for each
 * offset and for self, merged mod n (topology.h's small-n rule).  -ENOMEM
 * when the phase's offsets do not fit in memory. */
static int build(struct lbs_topology *t)
{
    int n = t->n, end = 0;
    int most = lbs_topo_offsets(t->kind, n, 1, NULL, 0);
    long *offs = malloc((size_t)(most > 0 ? most : 1) * sizeof *offs);
    if (!offs)
        return -ENOMEM;
    for (int ph = 0; ph < t->period; ph++) {
        int s = end;
        t->start[ph] = s;
        t->wself[ph] = 0;
        if (n == 1) {
            t->wself[ph] = 1;
            continue;
        }
        int cnt = lbs_topo_offsets(t->kind, n, ph + 1, offs, most);
        double w = 1.0 / (cnt + 1);
        t->wself[ph] = w;
        for (int j = 0; j < cnt; j++)
            add_offset(t, ph, s, &end, offs[j], w);
        if (end - s > t->degree)
            t->degree = end - s;
    }
    t->start[t->period] = end;
    free(offs);
    return 0;
}

/* ---- validation: one routine over rows, for dense matrices and ours ---- */

/* Row i of phase ph: count entries (self included, any order) into
 * cols/w, which hold at least maxrow entries. */
typedef int (*row_fn)(const void *ctx, int ph, int i, int *cols, double *w);

static int uf_find(int *parent, int i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

static int validate_rows(const void *ctx, row_fn row, int nphases, int n,
                         int maxrow, double tol, const char *what,
                         struct lbs_err *err)
{
    int rc = 0;
    int *cols = malloc((size_t)maxrow * sizeof *cols);
    double *w = malloc((size_t)maxrow * sizeof *w);
    double *colsum = malloc((size_t)n * sizeof *colsum);
    int *parent = malloc((size_t)n * sizeof *parent);
    if (!cols || !w || !colsum || !parent) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++)
        parent[i] = i;
    int comps = n;
    for (int ph = 0; ph < nphases; ph++) {
        for (int j = 0; j < n; j++)
            colsum[j] = 0;
        for (int i = 0; i < n; i++) {
            int cnt = row(ctx, ph, i, cols, w);
            double rs = 0;
            for (int k = 0; k < cnt; k++) {
                if (!(w[k] >= 0) || !isfinite(w[k])) {
                    rc = lbs_err_set(err, -EINVAL, "%s: phase %d: W[%d][%d] = "
                                     "%g is not a finite nonnegative weight",
                                     what, ph, i, cols[k], w[k]);
                    goto out;
                }
                rs += w[k];
                colsum[cols[k]] += w[k];
                if (w[k] > 0) {
                    int a = uf_find(parent, i), b = uf_find(parent, cols[k]);
                    if (a != b) {
                        parent[a] = b;
                        comps--;
                    }
                }
            }
            if (fabs(rs - 1) > tol) {
                rc = lbs_err_set(err, -EINVAL, "%s: phase %d: row %d sums to "
                                 "%.17g, not 1 (not row stochastic)", what,
                                 ph, i, rs);
                goto out;
            }
        }
        for (int j = 0; j < n; j++)
            if (fabs(colsum[j] - 1) > tol) {
                rc = lbs_err_set(err, -EINVAL, "%s: phase %d: column %d sums "
                                 "to %.17g, not 1 (not column stochastic)",
                                 what, ph, j, colsum[j]);
                goto out;
            }
    }
    if (comps != 1)
        rc = lbs_err_set(err, -EINVAL, "%s: the graph%s is not connected "
                         "(%d components)", what,
                         nphases > 1 ? " (union over the phases)" : "", comps);
out:
    free(cols);
    free(w);
    free(colsum);
    free(parent);
    return rc;
}

struct dense_ctx {
    const double *W;
    int n;
};

static int dense_row(const void *ctx, int ph, int i, int *cols, double *w)
{
    const struct dense_ctx *d = ctx;
    const double *r = d->W + ((size_t)ph * d->n + i) * d->n;
    for (int j = 0; j < d->n; j++) {
        cols[j] = j;
        w[j] = r[j];
    }
    return d->n;
}

int lbs_mixing_validate(const double *W, int nphases, int n, double tol,
                        struct lbs_err *err)
{
    if (n < 1 || nphases < 1 || !W)
        return lbs_err_set(err, -EINVAL, "mixing matrix: need n >= 1 and at "
                           "least one phase");
    struct dense_ctx d = {W, n};
    return validate_rows(&d, dense_row, nphases, n, n, tol, "mixing matrix",
                         err);
}

/* Unsorted row of a topology: self, then i - o for each offset. */
static int topo_row(const void *ctx, int ph, int i, int *cols, double *w)
{
    const struct lbs_topology *t = ctx;
    int c = 0;
    cols[c] = i;
    w[c++] = t->wself[ph];
    for (int k = t->start[ph]; k < t->start[ph + 1]; k++) {
        cols[c] = (i - t->off[k] + t->n) % t->n;
        w[c++] = t->w[k];
    }
    return c;
}

/* Every in-edge (j -> i) listed by receivers must be an out-edge listed by
 * the sender, or MPI receives would wait forever: compare the two edge
 * multisets through a sum of 64-bit hashes. */
static int check_matching(const struct lbs_topology *t, struct lbs_err *err)
{
    int d = t->degree > 0 ? t->degree : 1;
    int *from = malloc((size_t)d * sizeof *from);
    int *to = malloc((size_t)d * sizeof *to);
    double *w = malloc((size_t)d * sizeof *w);
    int rc = 0;
    if (!from || !to || !w) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (int ph = 0; ph < t->period; ph++) {
        uint64_t hin = 0, hout = 0;
        for (int i = 0; i < t->n; i++) {
            struct lbs_topo_peers p = {0, 0, from, w, to, 0};
            lbs_topology_peers(t, i, ph + 1, &p);
            if (p.nfrom != p.nto) {
                rc = lbs_err_set(err, -EINVAL, "topology %s: rank %d has %d "
                                 "in- but %d out-neighbours",
                                 lbs_topo_names[t->kind], i, p.nfrom, p.nto);
                goto out;
            }
            for (int k = 0; k < p.nfrom; k++) {
                hin += lbs_mix64((uint64_t)from[k] << 32 | (uint32_t)i);
                hout += lbs_mix64((uint64_t)i << 32 | (uint32_t)to[k]);
                if ((k && (from[k] <= from[k - 1] || to[k] <= to[k - 1])) ||
                    from[k] == i || to[k] == i) {
                    rc = lbs_err_set(err, -EINVAL, "topology %s: rank %d: "
                                     "neighbour lists not strictly ascending "
                                     "or contain self",
                                     lbs_topo_names[t->kind], i);
                    goto out;
                }
            }
        }
        if (hin != hout) {
            rc = lbs_err_set(err, -EINVAL, "topology %s, phase %d: senders' "
                             "and receivers' neighbour lists disagree",
                             lbs_topo_names[t->kind], ph);
            goto out;
        }
    }
out:
    free(from);
    free(to);
    free(w);
    return rc;
}

int lbs_topology_new(enum lbs_topo kind, int n, struct lbs_topology **out,
                     struct lbs_err *err)
{
    *out = NULL;
    if ((int)kind < 0 || kind >= LBS_TOPO_COUNT)
        return lbs_err_set(err, -EINVAL, "topology: unknown kind %d",
                           (int)kind);
    if (n < 1 || n > (1 << 24))
        return lbs_err_set(err, -EINVAL, "topology %s: rank count %d not in "
                           "1..16777216", lbs_topo_names[kind], n);
    struct lbs_topology *t = calloc(1, sizeof *t);
    if (!t)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    t->kind = kind;
    t->n = n;
    t->period = period_of(kind, n);
    size_t cap = (size_t)t->period * (kind == LBS_TOPO_FULL ? (size_t)n
                                      : 2 * (size_t)ceil_log2(n) + 2);
    t->start = calloc((size_t)t->period + 1, sizeof *t->start);
    t->off = calloc(cap, sizeof *t->off);
    t->w = calloc(cap, sizeof *t->w);
    t->wself = calloc((size_t)t->period, sizeof *t->wself);
    int rc;
    if (!t->start || !t->off || !t->w || !t->wself) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto fail;
    }
    if (build(t)) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto fail;
    }
    char what[64];
    snprintf(what, sizeof what, "topology %s (%d ranks)", lbs_topo_names[kind],
             n);
    rc = validate_rows(t, topo_row, t->period, n, t->degree + 1, 1e-12, what,
                       err);
    if (!rc)
        rc = check_matching(t, err);
    if (rc)
        goto fail;
    *out = t;
    return 0;
fail:
    lbs_topology_free(t);
    return rc;
}

int lbs_topology_new_name(const char *name, int n, struct lbs_topology **out,
                          struct lbs_err *err)
{
    for (int k = 0; k < LBS_TOPO_COUNT; k++)
        if (name && !strcmp(name, lbs_topo_names[k]))
            return lbs_topology_new((enum lbs_topo)k, n, out, err);
    *out = NULL;
    return lbs_err_set(err, -ENOENT, "unknown topology '%s' (ring, "
                       "exponential, onepeer, full, symexp)", name ? name : "");
}

void lbs_topology_free(struct lbs_topology *t)
{
    if (!t)
        return;
    free(t->start);
    free(t->off);
    free(t->w);
    free(t->wself);
    free(t);
}

enum lbs_topo lbs_topology_kind(const struct lbs_topology *t) { return t->kind; }
int lbs_topology_size(const struct lbs_topology *t) { return t->n; }
int lbs_topology_period(const struct lbs_topology *t) { return t->period; }
int lbs_topology_degree(const struct lbs_topology *t) { return t->degree; }

int lbs_topology_phase(const struct lbs_topology *t, long step)
{
    return phase_of(t->kind, t->n, step);
}

void lbs_topology_peers(const struct lbs_topology *t, int rank, long step,
                        struct lbs_topo_peers *p)
{
    int ph = lbs_topology_phase(t, step), n = t->n;
    int s = t->start[ph], e = t->start[ph + 1], c;
    p->wself = t->wself[ph];
    p->nfrom = p->nto = e - s;
    /* m = offsets <= rank: j = rank - o in [0, rank), falling with o */
    int m = s;
    while (m < e && t->off[m] <= rank)
        m++;
    c = 0;
    for (int k = m - 1; k >= s; k--) {
        p->from[c] = rank - t->off[k];
        p->w[c++] = t->w[k];
    }
    for (int k = e - 1; k >= m; k--) {
        p->from[c] = rank - t->off[k] + n;
        p->w[c++] = t->w[k];
    }
    /* to: offsets >= n - rank wrap to [0, rank), the rest go to (rank, n) */
    int q = s;
    while (q < e && t->off[q] < n - rank)
        q++;
    c = 0;
    for (int k = q; k < e; k++)
        p->to[c++] = rank + t->off[k] - n;
    for (int k = s; k < q; k++)
        p->to[c++] = rank + t->off[k];
}

void lbs_topology_matrix(const struct lbs_topology *t, long step, double *W)
{
    int n = t->n, ph = lbs_topology_phase(t, step);
    memset(W, 0, (size_t)n * n * sizeof *W);
    for (int i = 0; i < n; i++) {
        W[(size_t)i * n + i] += t->wself[ph];
        for (int k = t->start[ph]; k < t->start[ph + 1]; k++)
            W[(size_t)i * n + (i - t->off[k] + n) % n] += t->w[k];
    }
}
