/* test_jointspar.c - JointSpar and JointSpar-LARS on one rank.
 *
 *  - the capped-simplex projection: budget and bounds exact, the KL form
 *    p = clamp(c q), plain renormalisation when no bound binds, agreement
 *    with a bisection reference, degenerate and infeasible cases;
 *  - unbiasedness: with the weights reset before every step, one step of
 *    jointspar (momentum 0, lr 1) writes -g^ into w, so the mean of -w over
 *    many steps (fixed seed, p learning online) must be g within 5 sigma,
 *    sigma from the p actually used; jointspar_lars's mean step must be the
 *    dense LARS step (the 1/p_d rescale after the trust ratio);
 *  - the online p: sum = s D, pmin <= p <= 1 after every step even with
 *    gradient norms 12 orders apart, and p -> ~ ||g_d|| for fixed norms;
 *  - s = 1 is sgd / lars bit for bit; the keep plan is a function of the
 *    seed, is what the step uses, never reads dropped gradients; lazy; the
 *    systematic sampler keeps exactly s D layers; spec errors and stats.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jointspar.h"
#include "lbscale/optim.h"

#define MAXL 8

struct net {
    size_t n;
    struct lbs_layer l[MAXL];
};

static float urand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* nl layers, layer i has sizes[i] elements (1-D when ndim1[i]). */
static void net_init(struct net *t, size_t nl, const size_t *sizes,
                     uint64_t seed)
{
    static const char *names[MAXL] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    memset(t, 0, sizeof *t);
    t->n = nl;
    for (size_t i = 0; i < nl; i++) {
        struct lbs_layer *L = &t->l[i];
        L->name = names[i];
        L->n = sizes[i];
        L->ndim = i % 3 == 1 ? 1 : 2;
        if (L->ndim == 1) {
            L->shape[0] = L->n;
        } else {
            L->shape[0] = L->n / 2;
            L->shape[1] = 2;
            cr_assert(L->n % 2 == 0);
        }
        L->w = malloc(L->n * sizeof(float));
        L->g = malloc(L->n * sizeof(float));
        for (size_t j = 0; j < L->n; j++) {
            L->w[j] = 0.5f * urand(&seed);
            L->g[j] = 0.3f * urand(&seed);
        }
    }
}

static void net_free(struct net *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->l[i].w);
        free(t->l[i].g);
    }
}

static struct lbs_optim *make(const char *spec, struct net *t)
{
    struct lbs_optim *o = NULL;
    struct lbs_err e = {{0}};
    int r = lbs_optim_new(spec, t->l, t->n, NULL, &o, &e);
    cr_assert_eq(r, 0, "'%s': %d %s", spec, r, e.msg);
    return o;
}

static void step_ok(struct lbs_optim *o)
{
    struct lbs_err e = {{0}};
    int r = lbs_optim_step(o, &e);
    cr_assert_eq(r, 0, "%s: step returned %d: %s", lbs_optim_name(o), r,
                 e.msg);
}

static double stat(const struct lbs_optim *o, const char *name)
{
    double v = NAN;
    struct lbs_err e = {{0}};
    int r = lbs_optim_stat(o, name, &v, &e);
    cr_assert_eq(r, 0, "stat '%s': %d %s", name, r, e.msg);
    return v;
}

static double p_of(const struct lbs_optim *o, size_t d)
{
    char name[32];
    snprintf(name, sizeof name, "p.%zu", d);
    return stat(o, name);
}

/* ------------------------------------------------------------ projection */

static double sum(const double *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

/* Reference: bisection on c in log space, 200 rounds. */
static void project_ref(const double *q, size_t n, double S, double lo,
                        double hi, double *p)
{
    double a = -800, b = 800;
    for (int it = 0; it < 400; it++) {
        double m = 0.5 * (a + b), c = exp(m), f = 0;
        for (size_t d = 0; d < n; d++)
            f += fmin(hi, fmax(lo, c * q[d]));
        if (f < S)
            a = m;
        else
            b = m;
    }
    double c = exp(0.5 * (a + b));
    for (size_t d = 0; d < n; d++)
        p[d] = fmin(hi, fmax(lo, c * q[d]));
}

Test(jointspar, projection_budget_bounds_and_form)
{
    uint64_t seed = 12345;
    double q[64], p[64], r[64];
    for (int trial = 0; trial < 2000; trial++) {
        size_t n = 1 + (size_t)(fabs(urand(&seed)) * 63);
        double lo = trial % 7 == 0 ? 0 : 0.2 * fabs(urand(&seed)) / (double)1;
        double hi = trial % 5 == 0 ? 1 : lo + fabs(urand(&seed));
        double u = fabs(urand(&seed));
        double S = n * lo + u * n * (hi - lo);
        for (size_t d = 0; d < n; d++) {
            /* spread over many orders of magnitude, some exact zeros */
            q[d] = exp(12 * urand(&seed));
            if (trial % 11 == 0 && d % 4 == 3)
                q[d] = 0;
        }
        int rc = lbs_capped_simplex_project(q, n, S, lo, hi, p, NULL);
        if (rc == -EINVAL) {
            /* only legitimate when the positive q cannot reach S */
            size_t pos = 0;
            for (size_t d = 0; d < n; d++)
                pos += q[d] > 0;
            cr_assert_lt((n - pos) * lo + pos * hi, S * (1 + 1e-12),
                         "trial %d: feasible case refused", trial);
            continue;
        }
        cr_assert_eq(rc, 0, "trial %d: rc %d", trial, rc);
        for (size_t d = 0; d < n; d++)
            cr_assert(p[d] >= lo && p[d] <= hi, "trial %d: p[%zu] = %.17g "
                      "outside [%g, %g]", trial, d, p[d], lo, hi);
        cr_assert(fabs(sum(p, n) - S) <= 1e-12 * fmax(S, 1), "trial %d: sum "
                  "%.17g, budget %.17g", trial, sum(p, n), S);
        /* the KL form: every coordinate strictly inside has the same p/q */
        double ratio = -1;
        for (size_t d = 0; d < n; d++)
            if (p[d] > lo && p[d] < hi && q[d] > 0) {
                double rr = p[d] / q[d];
                if (ratio < 0)
                    ratio = rr;
                cr_assert(fabs(rr - ratio) <= 1e-9 * ratio, "trial %d: p/q "
                          "%.17g vs %.17g", trial, rr, ratio);
            }
        project_ref(q, n, S, lo, hi, r);
        for (size_t d = 0; d < n; d++)
            cr_assert(fabs(p[d] - r[d]) <= 1e-9 * fmax(1, hi), "trial %d: "
                      "p[%zu] %.17g, bisection %.17g", trial, d, p[d], r[d]);
    }
}

Test(jointspar, projection_special_cases)
{
    double q[4] = {1, 2, 3, 4}, p[4], scratch[8];
    /* no bound active: plain renormalisation S q / sum q */
    cr_assert_eq(lbs_capped_simplex_project(q, 4, 2.0, 0.01, 1, p, scratch),
                 0);
    for (int d = 0; d < 4; d++)
        cr_expect(fabs(p[d] - 0.2 * (d + 1)) < 1e-15, "p[%d] = %.17g", d,
                  p[d]);
    /* the cap binds: 3 q/10 would give 1.2 for the last one */
    cr_assert_eq(lbs_capped_simplex_project(q, 4, 3.0, 0.01, 1, p, NULL), 0);
    cr_expect_eq(p[3], 1.0);
    for (int d = 0; d < 3; d++)
        cr_expect(fabs(p[d] - 2.0 / 6 * (d + 1)) < 1e-15, "p[%d] = %.17g",
                  d, p[d]);
    /* the floor binds */
    double q2[4] = {1e-9, 1, 1, 1};
    cr_assert_eq(lbs_capped_simplex_project(q2, 4, 1.0, 0.1, 1, p, NULL), 0);
    cr_expect_eq(p[0], 0.1);
    for (int d = 1; d < 4; d++)
        cr_expect(fabs(p[d] - 0.3) < 1e-15, "p[%d] = %.17g", d, p[d]);
    /* S at the ends of the feasible range; aliasing p = q */
    cr_assert_eq(lbs_capped_simplex_project(q, 4, 0.4, 0.1, 1, p, NULL), 0);
    for (int d = 0; d < 4; d++)
        cr_expect_eq(p[d], 0.1);
    double a[4] = {5, 1, 7, 2};
    cr_assert_eq(lbs_capped_simplex_project(a, 4, 4.0, 0.1, 1, a, NULL), 0);
    for (int d = 0; d < 4; d++)
        cr_expect_eq(a[d], 1.0);
    /* infeasible budgets and bad input */
    cr_expect_eq(lbs_capped_simplex_project(q, 4, 0.39, 0.1, 1, p, NULL),
                 -EINVAL);
    cr_expect_eq(lbs_capped_simplex_project(q, 4, 4.01, 0.1, 1, p, NULL),
                 -EINVAL);
    double z[4] = {0, 0, 0, 1};
    cr_expect_eq(lbs_capped_simplex_project(z, 4, 2.0, 0.1, 1, p, NULL),
                 -EINVAL);
    double bad[2] = {1, NAN};
    cr_expect_eq(lbs_capped_simplex_project(bad, 2, 1.0, 0.1, 1, p, NULL),
                 -EINVAL);
}

/* ------------------------------------------------------------ unbiasedness */

/* Mean over nsteps of the one-step displacement w0 - w (w reset to w0
 * before every step) compared with `want` (per element), within 5 sigma
 * where sigma^2 = sum_t want^2 (1/p_t - 1) / nsteps^2 over the p_t each
 * step used.  Returns the largest |error| / sigma seen. */
static double check_unbiased(const char *spec, const char *dense_spec,
                             int nsteps)
{
    static const size_t sizes[6] = {8, 6, 12, 4, 10, 2};
    struct net t, ref;
    net_init(&t, 6, sizes, 77);
    net_init(&ref, 6, sizes, 77);
    /* very different layer norms, so the learned p differ */
    for (size_t i = 0; i < t.n; i++)
        for (size_t j = 0; j < t.l[i].n; j++) {
            t.l[i].g[j] *= (float)(i + 1) * (i == 3 ? 5 : 1);
            ref.l[i].g[j] = t.l[i].g[j];
        }
    /* the expected displacement: one dense step from w0 */
    struct lbs_optim *od = make(dense_spec, &ref);
    step_ok(od);
    lbs_optim_free(od);
    double *want[MAXL], *mean[MAXL], var[MAXL] = {0};
    float *w0[MAXL];
    for (size_t i = 0; i < t.n; i++) {
        size_t n = t.l[i].n;
        want[i] = calloc(n, sizeof(double));
        mean[i] = calloc(n, sizeof(double));
        w0[i] = malloc(n * sizeof(float));
        memcpy(w0[i], t.l[i].w, n * sizeof(float));
        for (size_t j = 0; j < n; j++)
            want[i][j] = (double)w0[i][j] - ref.l[i].w[j];
    }
    struct lbs_optim *o = make(spec, &t);
    for (int s = 0; s < nsteps; s++) {
        for (size_t i = 0; i < t.n; i++) {
            double p = p_of(o, i);
            var[i] += 1 / p - 1;
            memcpy(t.l[i].w, w0[i], t.l[i].n * sizeof(float));
        }
        step_ok(o);
        for (size_t i = 0; i < t.n; i++)
            for (size_t j = 0; j < t.l[i].n; j++)
                mean[i][j] += (double)w0[i][j] - t.l[i].w[j];
    }
    double worst = 0;
    int moved = 0;
    for (size_t i = 0; i < t.n; i++) {
        double p = p_of(o, i);
        moved |= fabs(p - p_of(o, 0)) > 0.05;
        for (size_t j = 0; j < t.l[i].n; j++) {
            double m = mean[i][j] / nsteps, wv = want[i][j];
            double sigma = fabs(wv) * sqrt(var[i]) / nsteps + 1e-6 * fabs(wv);
            double z = fabs(m - wv) / sigma;
            worst = fmax(worst, z);
            cr_expect(z < 5, "%s: layer %zu[%zu]: mean step %.9g, dense %.9g "
                      "(%.1f sigma; p now %.3f)", spec, i, j, m, wv, z, p);
        }
        free(want[i]);
        free(mean[i]);
        free(w0[i]);
    }
    cr_expect(moved, "%s: p did not adapt (test would be trivial)", spec);
    lbs_optim_free(o);
    net_free(&t);
    net_free(&ref);
    return worst;
}

Test(jointspar, rescaled_gradient_is_unbiased)
{
    check_unbiased("jointspar:lr=1,momentum=0,wd=0,s=0.5,pmin=0.1,eta_p=0.05,"
                   "seed=3", "sgd:lr=1,momentum=0,wd=0", 20000);
    check_unbiased("jointspar:lr=1,momentum=0,wd=0.1,s=0.5,pmin=0.1,"
                   "eta_p=0.05,sampler=systematic,seed=4",
                   "sgd:lr=1,momentum=0,wd=0.1", 20000);
}

/* LARS: the 1/p_d factor sits after the trust ratio, so the mean step is
 * the dense LARS step (rescaling g before the trust ratio would cancel and
 * leave the mean at p_d times the dense step: many sigma off). */
Test(jointspar, lars_variant_mean_step_is_dense_lars)
{
    check_unbiased("jointspar_lars:lr=2,momentum=0,wd=0.01,eta=0.01,s=0.5,"
                   "pmin=0.1,eta_p=0.05,seed=5",
                   "lars:lr=2,momentum=0,wd=0.01,eta=0.01", 20000);
}

/* ------------------------------------------------------------ online p */

Test(jointspar, probabilities_keep_budget_and_bounds)
{
    static const size_t sizes[8] = {4, 4, 6, 2, 8, 2, 4, 6};
    static const char *const specs[] = {
        "jointspar:s=0.375,pmin=0.02,eta_p=0.01",
        "jointspar:s=0.5,pmin=0.2,eta_p=0.05,sampler=systematic",
        /* far too large a step (exponents ~ eta_p/p = 10): p jumps
         * around, and must still stay on the budget and in bounds */
        "jointspar_lars:s=0.25,pmin=0.1,eta_p=1,lazy=1",
    };
    for (size_t k = 0; k < 3; k++) {
        struct net t;
        net_init(&t, 8, sizes, 9 + k);
        /* norms from 1e-6 to 1e6 */
        for (size_t i = 0; i < t.n; i++)
            for (size_t j = 0; j < t.l[i].n; j++)
                t.l[i].g[j] *= (float)pow(10.0, -6.0 + 12.0 * i / 7.0);
        struct lbs_optim *o = make(specs[k], &t);
        double s = strstr(specs[k], "s=0.375") ? 0.375
                   : strstr(specs[k], "s=0.5") ? 0.5 : 0.25;
        double pmin = strstr(specs[k], "pmin=0.02") ? 0.02
                      : strstr(specs[k], "pmin=0.2") ? 0.2 : 0.1;
        for (int st = 0; st < 3000; st++) {
            for (size_t i = 0; i < t.n; i++)
                memset(t.l[i].w, 0, t.l[i].n * sizeof(float));
            step_ok(o);
            double S = stat(o, "p_sum");
            cr_assert(fabs(S - s * 8) <= 1e-12 * 8, "%s: step %d: sum p = "
                      "%.17g", specs[k], st, S);
            cr_assert_geq(stat(o, "p_min"), pmin, "%s: step %d", specs[k], st);
            cr_assert_leq(stat(o, "p_max"), 1.0, "%s: step %d", specs[k], st);
        }
        /* with a sane step the small layers sit at the floor, the largest
         * at the cap (the optimum for norms this far apart) */
        if (k < 2) {
            cr_expect_eq(stat(o, "p_min"), pmin, "%s: p_min %.17g", specs[k],
                         stat(o, "p_min"));
            cr_expect_gt(p_of(o, 7), 0.8, "%s: p of the largest layer %.3f",
                         specs[k], p_of(o, 7));
        }
        lbs_optim_free(o);
        net_free(&t);
    }
}

/* Fixed gradient norms 1 : 2 : 3 : 4, budget 2 of 4 layers: the variance
 * optimum p ~ ||g_d|| is (0.2, 0.4, 0.6, 0.8), inside the bounds. */
Test(jointspar, probabilities_learn_norm_proportional)
{
    static const size_t sizes[4] = {16, 16, 16, 16};
    struct net t;
    net_init(&t, 4, sizes, 21);
    for (size_t i = 0; i < 4; i++) {
        double nn = 0;
        for (size_t j = 0; j < 16; j++)
            nn += (double)t.l[i].g[j] * t.l[i].g[j];
        for (size_t j = 0; j < 16; j++)
            t.l[i].g[j] = (float)(t.l[i].g[j] * (i + 1) / sqrt(nn));
    }
    struct lbs_optim *o = make("jointspar:s=0.5,pmin=0.05,eta_p=0.02,lr=0,"
                               "seed=8", &t);
    double avg[4] = {0};
    const int steps = 30000, tail = 10000;
    for (int st = 0; st < steps; st++) {
        step_ok(o);
        if (st >= steps - tail)
            for (size_t i = 0; i < 4; i++)
                avg[i] += p_of(o, i) / tail;
    }
    for (size_t i = 0; i < 4; i++)
        cr_expect(fabs(avg[i] - 0.2 * (i + 1)) < 0.05, "p[%zu] averages %.3f,"
                  " optimum %.3f", i, avg[i], 0.2 * (i + 1));
    lbs_optim_free(o);
    net_free(&t);
}

/* ------------------------------------------------------------ equivalences */

static void same_as(const char *js, const char *base)
{
    static const size_t sizes[4] = {40, 10, 64, 6};
    struct net a, b;
    net_init(&a, 4, sizes, 31);
    net_init(&b, 4, sizes, 31);
    struct lbs_optim *oa = make(js, &a), *ob = make(base, &b);
    uint64_t seed = 5;
    for (int t = 1; t <= 8; t++) {
        for (size_t i = 0; i < a.n; i++)
            for (size_t j = 0; j < a.l[i].n; j++)
                a.l[i].g[j] = b.l[i].g[j] = 0.2f * urand(&seed);
        step_ok(oa);
        step_ok(ob);
        cr_assert_eq(stat(oa, "kept_layers"), 4.0);
        for (size_t i = 0; i < a.n; i++)
            cr_assert(!memcmp(a.l[i].w, b.l[i].w, a.l[i].n * sizeof(float)),
                      "%s vs %s: step %d layer %zu differs", js, base, t, i);
    }
    lbs_optim_free(oa);
    lbs_optim_free(ob);
    net_free(&a);
    net_free(&b);
}

Test(jointspar, full_budget_is_the_base_optimizer)
{
    same_as("jointspar:s=1,lr=0.05,momentum=0.8,wd=0.01,pmin=0.3,eta_p=1",
            "sgd:lr=0.05,momentum=0.8,wd=0.01");
    same_as("jointspar:s=1,sampler=systematic", "sgd");
    same_as("jointspar_lars:s=1,lr=3,eta=0.02,wd=0.001,momentum=0.7",
            "lars:lr=3,eta=0.02,wd=0.001,momentum=0.7");
    same_as("jointspar_lars:s=1,exclude_1d=0", "lars:exclude_1d=0");
}

/* ------------------------------------------------------------ plan */

static void keep_seq(const char *spec, uint8_t out[][MAXL], int steps,
                     int poison)
{
    static const size_t sizes[8] = {4, 4, 4, 4, 4, 4, 4, 4};
    struct net t;
    net_init(&t, 8, sizes, 1);
    struct lbs_optim *o = make(spec, &t);
    for (int s = 0; s < steps; s++) {
        lbs_optim_next_keep(o, out[s]);
        uint8_t again[MAXL];
        lbs_optim_next_keep(o, again);
        cr_assert(!memcmp(out[s], again, 8), "next_keep not stable");
        size_t kept = 0;
        for (size_t i = 0; i < 8; i++) {
            kept += out[s][i];
            if (poison && !out[s][i])   /* a trainer skipped this layer */
                for (size_t j = 0; j < 4; j++)
                    t.l[i].g[j] = NAN;
            else
                for (size_t j = 0; j < 4; j++)
                    t.l[i].g[j] = 0.1f * (float)(i + 1) * (j % 2 ? 1 : -1);
        }
        step_ok(o);     /* a NaN in a dropped layer must not be seen */
        cr_assert_eq(stat(o, "kept_layers"), (double)kept);
        cr_assert_eq(stat(o, "bytes"), 16.0 * kept);
        for (size_t i = 0; i < 8; i++)
            for (size_t j = 0; j < 4; j++)
                cr_assert(isfinite(t.l[i].w[j]), "w became non-finite");
    }
    lbs_optim_free(o);
    net_free(&t);
}

Test(jointspar, plan_depends_on_seed_only_and_skips_dropped)
{
    enum { T = 200 };
    static uint8_t a[T][MAXL], b[T][MAXL], c[T][MAXL], d[T][MAXL];
    keep_seq("jointspar:seed=11,eta_p=0.1,pmin=0.1", a, T, 1);
    keep_seq("jointspar:seed=11,eta_p=0.1,pmin=0.1", b, T, 0);
    keep_seq("jointspar:seed=12,eta_p=0.1,pmin=0.1", c, T, 0);
    cr_expect(!memcmp(a, b, sizeof a), "same seed, different layers");
    cr_expect(memcmp(a, c, sizeof a), "different seeds, same layers");
    /* systematic: exactly s D = 4 of 8 every step */
    keep_seq("jointspar:sampler=systematic,seed=2,eta_p=0.1,pmin=0.1", d, T,
             1);
    for (int s = 0; s < T; s++) {
        int k = 0;
        for (int i = 0; i < 8; i++)
            k += d[s][i];
        cr_expect_eq(k, 4, "step %d kept %d layers", s + 1, k);
    }
}

/* lazy=1 leaves dropped layers alone; lazy=0 keeps their momentum going. */
Test(jointspar, dropped_layers_lazy_or_momentum)
{
    static const size_t sizes[4] = {6, 6, 6, 6};
    for (int lazy = 0; lazy <= 1; lazy++) {
        struct net t;
        net_init(&t, 4, sizes, 4);
        char spec[128];
        snprintf(spec, sizeof spec, "jointspar:s=0.5,pmin=0.1,momentum=0.9,"
                 "lazy=%d,seed=1", lazy);
        struct lbs_optim *o = make(spec, &t);
        int checked = 0, seen[4] = {0};
        for (int s = 0; s < 40; s++) {
            uint8_t keep[4];
            lbs_optim_next_keep(o, keep);
            float before[4][6];
            for (size_t i = 0; i < 4; i++)
                memcpy(before[i], t.l[i].w, sizeof before[i]);
            step_ok(o);
            for (size_t i = 0; i < 4; i++) {
                if (keep[i] || !seen[i]) {
                    seen[i] |= keep[i];     /* momentum nonzero from now */
                    continue;
                }
                int same = !memcmp(before[i], t.l[i].w, sizeof before[i]);
                cr_expect_eq(same, lazy, "lazy=%d: dropped layer %zu %s at "
                             "step %d", lazy, i, same ? "frozen" : "moved",
                             s + 1);
                checked++;
            }
        }
        cr_expect_gt(checked, 10);
        lbs_optim_free(o);
        net_free(&t);
    }
}

/* ------------------------------------------------------------ errors, stats */

static void rejects(const char *spec, int code, const char *needle)
{
    static const size_t sizes[2] = {4, 4};
    struct net t;
    net_init(&t, 2, sizes, 1);
    struct lbs_optim *o = NULL;
    struct lbs_err e = {{0}};
    int r = lbs_optim_new(spec, t.l, t.n, NULL, &o, &e);
    cr_expect_eq(r, code, "'%s': %d (%s)", spec, r, e.msg);
    cr_expect_null(o);
    cr_expect(strstr(e.msg, needle), "'%s': message '%s' lacks '%s'", spec,
              e.msg, needle);
    if (!r)
        lbs_optim_free(o);
    net_free(&t);
}

Test(jointspar, spec_errors)
{
    rejects("jointspar:s=0", -EINVAL, "'s'");
    rejects("jointspar:s=1.5", -EINVAL, "'s'");
    rejects("jointspar:pmin=0", -EINVAL, "'pmin'");
    rejects("jointspar:s=0.2,pmin=0.3", -EINVAL, "pmin");
    rejects("jointspar:eta_p=-1", -EINVAL, "'eta_p'");
    rejects("jointspar:sampler=poisson", -EINVAL, "'sampler'");
    rejects("jointspar:seed=1.5", -EINVAL, "'seed'");
    rejects("jointspar:eta=0.01", -ENOENT, "'eta'");
    rejects("jointspar_lars:eta=0", -EINVAL, "'eta'");
    rejects("jointspar_lars:nesterov=1", -ENOENT, "'nesterov'");
}

Test(jointspar, stats_and_help)
{
    static const size_t sizes[3] = {4, 6, 8};
    struct net t;
    net_init(&t, 3, sizes, 1);
    struct lbs_optim *o = make("jointspar:s=0.5,pmin=0.1", &t);
    const char *const *names = lbs_optim_stat_names(o);
    int n = 0;
    for (; names[n]; n++)
        stat(o, names[n]);
    cr_expect_eq(n, 5);
    cr_expect_eq(stat(o, "p_sum"), 1.5);
    cr_expect_eq(stat(o, "p.2"), 0.5);
    double v;
    struct lbs_err e = {{0}};
    cr_expect_eq(lbs_optim_stat(o, "p.3", &v, &e), -ENOENT);
    cr_expect_eq(lbs_optim_stat(o, "p.", &v, &e), -ENOENT);
    cr_expect_eq(lbs_optim_stat(o, "p.-1", &v, &e), -ENOENT);
    cr_expect_eq(lbs_optim_stat(o, "consensus_distance", &v, &e), -ENOENT);
    cr_expect(strstr(e.msg, "consensus_distance"), "%s", e.msg);
    /* expected kept fraction 0.5: 0.5*20 + 0.5*16, + 4 for the check */
    cr_expect(fabs(lbs_optim_bytes_per_elem(o) - 22.0) < 1e-12, "%g",
              lbs_optim_bytes_per_elem(o));
    lbs_optim_free(o);
    /* sgd has no statistics at all */
    o = make("sgd", &t);
    cr_expect_null(lbs_optim_stat_names(o)[0]);
    cr_expect_eq(lbs_optim_stat(o, "bytes", &v, &e), -ENOENT);
    lbs_optim_free(o);
    net_free(&t);
    FILE *f = tmpfile();
    cr_expect_eq(lbs_optim_help("jointspar_lars", f), 0);
    fclose(f);
}

/* A NaN in a kept layer skips the step like any other optimizer. */
Test(jointspar, nonfinite_kept_gradient_skips)
{
    static const size_t sizes[2] = {4, 4};
    struct net t;
    net_init(&t, 2, sizes, 1);
    struct lbs_optim *o = make("jointspar:s=1", &t);
    t.l[1].g[2] = INFINITY;
    struct lbs_err e = {{0}};
    cr_expect_eq(lbs_optim_step(o, &e), 1, "%s", e.msg);
    cr_expect_eq(lbs_optim_skipped(o), 1);
    lbs_optim_free(o);
    net_free(&t);
}
