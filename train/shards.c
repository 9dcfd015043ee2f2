/* shards.c - the Dirichlet label partition of `train --shards` (shards.h
 * has the method, its source and how the per-rank batch stays equal). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/rng.h"
#include "shards.h"

int shards_parse(const char *s, double *alpha, struct lbs_err *err)
{
    *alpha = 0;
    if (!strcmp(s, "iid"))
        return 0;
    const char *pre = "dirichlet:alpha=";
    if (strncmp(s, pre, strlen(pre)))
        return lbs_err_set(err, -EINVAL, "'%s': expected iid or "
                           "dirichlet:alpha=A", s);
    const char *v = s + strlen(pre);
    char *end;
    errno = 0;
    double a = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(a))
        return lbs_err_set(err, -EINVAL, "'%s': alpha '%s' is not a number",
                           s, v);
    if (!(a > 0 && a <= 1e6))
        return lbs_err_set(err, -EINVAL, "'%s': alpha %g is out of range "
                           "(0, 1e6]", s, a);
    *alpha = a;
    return 0;
}

/* A stream of uniform draws in (0, 1) (never 0: logarithms are taken). */
struct draws {
    uint64_t key, i;
};

static double uniform01(struct draws *g)
{
    return ((double)(lbs_rng_u64(g->key, g->i++) >> 11) + 0.5) * 0x1.0p-53;
}

static double normal(struct draws *g)
{
    double u1 = uniform01(g), u2 = uniform01(g);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* log of a Gamma(a, 1) variate: Marsaglia and Tsang (2000), "A simple
 * method for generating gamma variables", for a >= 1; for a < 1 their
 * boost Gamma(a) = Gamma(a + 1) U^(1/a), kept in logarithms. */
static double log_gamma_draw(struct draws *g, double a)
{
    double boost = 0;
    if (a < 1) {
        boost = log(uniform01(g)) / a;
        a += 1;
    }
    double d = a - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = normal(g), v = 1 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        if (log(uniform01(g)) < 0.5 * x * x + d - d * v + d * log(v))
            return log(d * v) + boost;
    }
}

/* Class c's cut points for one attempt: cut[0] = 0 .. cut[P] = nc, rank r
 * taking [cut[r], cut[r+1]).  lp: P doubles of scratch. */
static void class_cuts(uint64_t seed, double alpha, long attempt, size_t c,
                       int P, size_t nc, double *lp, size_t *cut)
{
    struct draws g = {lbs_rng_key(seed ^ 0xd1c41e7ull, (uint64_t)attempt,
                                  (uint64_t)c), 0};
    double mx = -INFINITY, sum = 0, cum = 0;
    for (int r = 0; r < P; r++) {
        lp[r] = log_gamma_draw(&g, alpha);
        mx = lp[r] > mx ? lp[r] : mx;
    }
    for (int r = 0; r < P; r++)
        sum += lp[r] = exp(lp[r] - mx);
    cut[0] = 0;
    for (int r = 0; r < P; r++) {
        cum += lp[r] / sum;
        size_t k = (size_t)floor(cum * (double)nc);
        cut[r + 1] = r == P - 1 || k > nc ? nc : k;
        if (cut[r + 1] < cut[r])
            cut[r + 1] = cut[r];
    }
}

/* The samples of each class in the seed's permutation order: byclass
 * (n_train), start[c] .. start[c + 1]. */
static int by_class(const struct dataset *d, uint64_t seed, size_t **byclass,
                    size_t *start)
{
    size_t n = d->n_train, K = d->classes;
    size_t *perm = malloc(n * sizeof *perm), *out = malloc(n * sizeof *out);
    if (!perm || !out) {
        free(perm);
        free(out);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    data_permute(perm, n, lbs_rng_key(seed, 0x5a4dull, 0));
    memset(start, 0, (K + 1) * sizeof *start);
    for (size_t i = 0; i < n; i++)
        start[d->y_train[i] + 1]++;
    for (size_t c = 0; c < K; c++)
        start[c + 1] += start[c];
    size_t *fill = calloc(K, sizeof *fill);
    if (!fill) {
        free(perm);
        free(out);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        size_t c = d->y_train[perm[i]];
        out[start[c] + fill[c]++] = perm[i];
    }
    free(fill);
    free(perm);
    *byclass = out;
    return 0;
}

/* The first attempt whose smallest shard has at least `need` samples:
 * its cut points into cuts (classes x (P + 1)); -1 when none does. */
static long find_attempt(const struct dataset *d, uint64_t seed,
                         double alpha, int P, const size_t *start,
                         size_t need, double *lp, size_t *cuts,
                         size_t *sizes)
{
    size_t K = d->classes;
    for (long a = 0; a < SHARDS_DIRICHLET_TRIES; a++) {
        memset(sizes, 0, (size_t)P * sizeof *sizes);
        for (size_t c = 0; c < K; c++) {
            size_t *cut = cuts + c * (size_t)(P + 1);
            class_cuts(seed, alpha, a, c, P, start[c + 1] - start[c], lp,
                       cut);
            for (int r = 0; r < P; r++)
                sizes[r] += cut[r + 1] - cut[r];
        }
        size_t mn = sizes[0];
        for (int r = 1; r < P; r++)
            mn = sizes[r] < mn ? sizes[r] : mn;
        if (mn >= need)
            return a;
    }
    return -1;
}

/* This rank's indices from the chosen cut points (counts filled). */
static int take_shard(const struct dataset *d, int rank, int P,
                      const size_t *byclass, const size_t *start,
                      const size_t *cuts, const size_t *sizes, size_t **idx,
                      size_t *n, size_t *counts)
{
    size_t K = d->classes, o = 0;
    size_t *mine = malloc((sizes[rank] ? sizes[rank] : 1) * sizeof *mine);
    if (!mine)
        return -ENOMEM;
    for (size_t c = 0; c < K; c++) {
        const size_t *cut = cuts + c * (size_t)(P + 1);
        for (size_t j = cut[rank]; j < cut[rank + 1]; j++)
            mine[o++] = byclass[start[c] + j];
        if (counts)
            for (int r = 0; r < P; r++)
                counts[(size_t)r * K + c] = cut[r + 1] - cut[r];
    }
    *idx = mine;
    *n = o;
    return 0;
}

int shards_dirichlet(const struct dataset *d, uint64_t seed, double alpha,
                     int rank, int size, size_t **idx, size_t *n,
                     size_t *counts, struct lbs_err *err)
{
    size_t K = d->classes, P = (size_t)size;
    *idx = NULL;
    *n = 0;
    if (d->n_train < P)
        return lbs_err_set(err, -EINVAL, "%zu training samples cannot be "
                           "split over %d ranks", d->n_train, size);
    size_t need = d->n_train / P < SHARDS_DIRICHLET_MIN
                      ? d->n_train / P : SHARDS_DIRICHLET_MIN;
    size_t *start = malloc((K + 1) * sizeof *start);
    size_t *cuts = malloc(K * (P + 1) * sizeof *cuts);
    size_t *sizes = malloc(P * sizeof *sizes);
    double *lp = malloc(P * sizeof *lp);
    size_t *byclass = NULL;
    int rc = !start || !cuts || !sizes || !lp ? -ENOMEM
             : by_class(d, seed, &byclass, start);
    if (!rc) {
        long a = find_attempt(d, seed, alpha, size, start, need, lp, cuts,
                              sizes);
        rc = a < 0 ? lbs_err_set(err, -EINVAL, "--shards dirichlet:alpha=%g: "
                                 "no draw in %d gives each of the %d ranks "
                                 "%zu samples (alpha too small for this "
                                 "many ranks and classes)", alpha,
                                 SHARDS_DIRICHLET_TRIES, size, need)
                   : take_shard(d, rank, size, byclass, start, cuts, sizes,
                                idx, n, counts);
    }
    if (rc == -ENOMEM)
        lbs_err_set(err, -ENOMEM, "out of memory");
    free(start);
    free(cuts);
    free(sizes);
    free(lp);
    free(byclass);
    return rc;
}

double shards_label_tv(const size_t *counts, int size, size_t classes)
{
    double tot = 0, *glob = calloc(classes, sizeof *glob), tv = 0;
    if (!glob)
        return NAN;
    for (int r = 0; r < size; r++)
        for (size_t c = 0; c < classes; c++)
            glob[c] += (double)counts[(size_t)r * classes + c];
    for (size_t c = 0; c < classes; c++)
        tot += glob[c];
    for (int r = 0; r < size; r++) {
        double nr = 0, s = 0;
        for (size_t c = 0; c < classes; c++)
            nr += (double)counts[(size_t)r * classes + c];
        for (size_t c = 0; c < classes && nr > 0; c++)
            s += fabs((double)counts[(size_t)r * classes + c] / nr -
                      glob[c] / tot);
        tv += 0.5 * s;
    }
    free(glob);
    return tv / size;
}
