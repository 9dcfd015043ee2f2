/* test_decentral.c - topologies / mixing matrices, and DmSGD / DecentLaM
 * on one rank (the multi-rank behaviour is tests/mpi_decentral.c).
 *
 *  - every kind for n = 1..40 and a few larger n: each phase validates
 *    (doubly stochastic, union connected), has the documented weights and
 *    neighbours, and the per-rank peer lists agree with the dense matrix;
 *  - one-peer exponential: period ceil(log2 n); the product over one period
 *    is the exact average for n a power of two, and not for other n
 *    (where repeated periods still converge);
 *  - the validator rejects non-stochastic, negative and disconnected
 *    matrices and accepts a time-varying sequence connected only in union;
 *  - on one rank dmsgd is sgd bit for bit, decentlam is sgd to rounding;
 *    spec errors; stats (consensus distance 0 on one rank).
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/optim.h"
#include "lbscale/topology.h"

static struct lbs_topology *topo(enum lbs_topo k, int n)
{
    struct lbs_topology *t = NULL;
    struct lbs_err e = {{0}};
    int r = lbs_topology_new(k, n, &t, &e);
    cr_assert_eq(r, 0, "%s n=%d: %d %s", lbs_topo_names[k], n, r, e.msg);
    return t;
}

static int ceil_log2(int n)
{
    int t = 0;
    while ((1 << t) < n)
        t++;
    return t;
}

/* The weight the documentation promises for W[i][j] at phase ph. */
static double expected_w(enum lbs_topo k, int n, int ph, int i, int j)
{
    if (n == 1)
        return 1;
    int tau = ceil_log2(n), d = ((i - j) % n + n) % n;  /* j = i - d */
    double w = 0;
    switch (k) {
    case LBS_TOPO_RING:
        w += d == 0 ? 1.0 / 3 : 0;
        w += d == 1 ? 1.0 / 3 : 0;
        w += d == n - 1 ? 1.0 / 3 : 0;
        return w;
    case LBS_TOPO_EXPONENTIAL:
        if (d == 0)
            return 1.0 / (tau + 1);
        for (int t = 0; t < tau; t++)
            if (d == (1 << t))
                return 1.0 / (tau + 1);
        return 0;
    case LBS_TOPO_ONEPEER:
        return d == 0 ? 0.5 : d == (1 << ph) ? 0.5 : 0;
    case LBS_TOPO_SYMEXP: {
        int deg = 0, isnb = 0;
        for (int o = 1; o < n; o++) {
            int hit = 0;
            for (int t = 0; t < tau; t++)
                hit |= o == (1 << t) || o == n - (1 << t);
            deg += hit;
            isnb |= hit && o == d;
        }
        return d == 0 || isnb ? 1.0 / (deg + 1) : 0;
    }
    default:
        return 1.0 / n;
    }
}

static void check_kind(enum lbs_topo k, int n)
{
    struct lbs_topology *t = topo(k, n);
    int period = lbs_topology_period(t), deg = lbs_topology_degree(t);
    cr_assert_eq(lbs_topology_size(t), n);
    cr_assert_eq(lbs_topology_kind(t), k);
    cr_assert_eq(period, k == LBS_TOPO_ONEPEER && n > 1 ? ceil_log2(n) : 1,
                 "%s n=%d: period %d", lbs_topo_names[k], n, period);
    double *W = malloc((size_t)n * n * period * sizeof *W);
    int *from = malloc((size_t)(deg + 1) * sizeof *from);
    int *to = malloc((size_t)(deg + 1) * sizeof *to);
    double *w = malloc((size_t)(deg + 1) * sizeof *w);
    for (int ph = 0; ph < period; ph++) {
        long step = ph + 1 + 3L * period;   /* phase = (step - 1) mod period */
        cr_assert_eq(lbs_topology_phase(t, step), ph);
        double *M = W + (size_t)ph * n * n;
        lbs_topology_matrix(t, step, M);
        for (int i = 0; i < n; i++) {
            struct lbs_topo_peers p = {0, 0, from, w, to, 0};
            lbs_topology_peers(t, i, step, &p);
            cr_assert_leq(p.nfrom, deg);
            cr_assert(fabs(p.wself - M[(size_t)i * n + i]) < 1e-15);
            int nz = 0;
            for (int j = 0; j < n; j++) {
                double m = M[(size_t)i * n + j];
                cr_assert(fabs(m - expected_w(k, n, ph, i, j)) < 1e-15,
                          "%s n=%d phase %d: W[%d][%d] = %.17g, want %.17g",
                          lbs_topo_names[k], n, ph, i, j, m,
                          expected_w(k, n, ph, i, j));
                nz += j != i && m > 0;
            }
            cr_assert_eq(p.nfrom, nz, "%s n=%d rank %d: %d in-neighbours, "
                         "matrix has %d", lbs_topo_names[k], n, i, p.nfrom, nz);
            for (int a = 0; a < p.nfrom; a++) {
                cr_assert(a == 0 || from[a] > from[a - 1], "not ascending");
                cr_assert(fabs(w[a] - M[(size_t)i * n + from[a]]) < 1e-15);
            }
            /* out-neighbours: exactly the ranks whose row lists i */
            int a = 0;
            for (int j = 0; j < n; j++)
                if (j != i && M[(size_t)j * n + i] > 0) {
                    cr_assert_lt(a, p.nto);
                    cr_assert_eq(to[a], j, "%s n=%d rank %d: to[%d] = %d, "
                                 "want %d", lbs_topo_names[k], n, i, a,
                                 to[a], j);
                    a++;
                }
            cr_assert_eq(a, p.nto);
        }
        /* a one-peer phase alone is the cycle structure of i -> i + 2^ph:
         * connected iff gcd(2^ph, n) = 1 */
        int alone_ok = k != LBS_TOPO_ONEPEER || ph == 0 || n % 2 == 1;
        struct lbs_err e = {{0}};
        cr_assert_eq(lbs_mixing_validate(M, 1, n, 1e-12, &e),
                     alone_ok ? 0 : -EINVAL,
                     "%s n=%d phase %d: %s", lbs_topo_names[k], n, ph, e.msg);
    }
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_mixing_validate(W, period, n, 1e-12, &e), 0,
                 "%s n=%d: %s", lbs_topo_names[k], n, e.msg);
    free(W);
    free(from);
    free(to);
    free(w);
    lbs_topology_free(t);
}

Test(topology, every_kind_and_size)
{
    for (int k = 0; k < LBS_TOPO_COUNT; k++) {
        for (int n = 1; n <= 40; n++)
            check_kind((enum lbs_topo)k, n);
        check_kind((enum lbs_topo)k, 64);
        check_kind((enum lbs_topo)k, 100);
    }
}

Test(topology, degrees_and_large_sizes)
{
    static const int want[LBS_TOPO_COUNT] = {2, 10, 1, 1023, 19};
    for (int k = 0; k < LBS_TOPO_COUNT; k++) {
        struct lbs_topology *t = topo((enum lbs_topo)k, 1024);
        cr_expect_eq(lbs_topology_degree(t), want[k], "%s",
                     lbs_topo_names[k]);
        lbs_topology_free(t);
    }
    /* a big sparse graph validates quickly (O(n deg) memory) */
    struct lbs_topology *t = topo(LBS_TOPO_EXPONENTIAL, 16384);
    cr_expect_eq(lbs_topology_degree(t), 14);
    lbs_topology_free(t);
    t = topo(LBS_TOPO_ONEPEER, 5000);
    cr_expect_eq(lbs_topology_period(t), 13);
    lbs_topology_free(t);
    /* small-n merges: 2-rank ring = [[1/3, 2/3], [2/3, 1/3]] */
    t = topo(LBS_TOPO_RING, 2);
    double W[4];
    lbs_topology_matrix(t, 1, W);
    cr_expect(fabs(W[0] - 1.0 / 3) < 1e-16 && fabs(W[1] - 2.0 / 3) < 1e-16);
    cr_expect_eq(lbs_topology_degree(t), 1);
    lbs_topology_free(t);
}

static void matmul(const double *A, const double *B, double *C, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += A[i * n + k] * B[k * n + j];
            C[i * n + j] = s;
        }
}

/* max |P - J| for P the product of `periods` full periods of one-peer. */
static double onepeer_product_error(int n, int periods)
{
    struct lbs_topology *t = topo(LBS_TOPO_ONEPEER, n);
    int tau = lbs_topology_period(t);
    double *P = calloc((size_t)n * n, sizeof *P), *W = malloc(n * n * 8);
    double *T = malloc(n * n * 8);
    for (int i = 0; i < n; i++)
        P[i * n + i] = 1;
    for (long s = 1; s <= (long)tau * periods; s++) {
        lbs_topology_matrix(t, s, W);
        matmul(W, P, T, n);     /* later steps act on the left */
        memcpy(P, T, n * n * 8);
    }
    double err = 0;
    for (int i = 0; i < n * n; i++)
        err = fmax(err, fabs(P[i] - 1.0 / n));
    free(P);
    free(W);
    free(T);
    lbs_topology_free(t);
    return err;
}

Test(topology, onepeer_exact_average_for_powers_of_two)
{
    for (int n = 2; n <= 32; n *= 2)
        cr_expect(onepeer_product_error(n, 1) < 1e-15, "n=%d: one period is "
                  "not the exact average (%.3g)", n, onepeer_product_error(n, 1));
    static const int odd[] = {3, 5, 6, 7, 12};
    for (int k = 0; k < 5; k++) {
        int n = odd[k];
        cr_expect(onepeer_product_error(n, 1) > 1e-3, "n=%d: exact after one "
                  "period?", n);
        cr_expect(onepeer_product_error(n, 60) < 1e-6, "n=%d: no consensus "
                  "after 60 periods (%.3g)", n, onepeer_product_error(n, 60));
    }
}

Test(topology, validator_rejects)
{
    struct lbs_err e = {{0}};
    double ok[4] = {0.5, 0.5, 0.5, 0.5};
    cr_expect_eq(lbs_mixing_validate(ok, 1, 2, 1e-12, &e), 0, "%s", e.msg);
    double row[4] = {0.6, 0.5, 0.4, 0.5};           /* row 0 sums to 1.1 */
    cr_expect_eq(lbs_mixing_validate(row, 1, 2, 1e-12, &e), -EINVAL);
    cr_expect(strstr(e.msg, "row 0"), "%s", e.msg);
    double col[9] = {0.5, 0.5, 0, 0.5, 0.5, 0, 0.5, 0, 0.5};  /* rows fine */
    cr_expect_eq(lbs_mixing_validate(col, 1, 3, 1e-12, &e), -EINVAL);
    cr_expect(strstr(e.msg, "column 0"), "%s", e.msg);
    double neg[4] = {1.5, -0.5, -0.5, 1.5};
    cr_expect_eq(lbs_mixing_validate(neg, 1, 2, 1e-12, &e), -EINVAL);
    cr_expect(strstr(e.msg, "nonnegative"), "%s", e.msg);
    double id[9] = {1, 0, 0, 0, 0.5, 0.5, 0, 0.5, 0.5};  /* 2 components */
    cr_expect_eq(lbs_mixing_validate(id, 1, 3, 1e-12, &e), -EINVAL);
    cr_expect(strstr(e.msg, "not connected"), "%s", e.msg);
    double nan[4] = {NAN, 0.5, 0.5, 0.5};
    cr_expect_eq(lbs_mixing_validate(nan, 1, 2, 1e-12, &e), -EINVAL);
    /* two phases, each disconnected, connected in union */
    double seq[2][9] = {{0.5, 0.5, 0, 0.5, 0.5, 0, 0, 0, 1},
                        {1, 0, 0, 0, 0.5, 0.5, 0, 0.5, 0.5}};
    cr_expect_eq(lbs_mixing_validate(seq[0], 2, 3, 1e-12, &e), 0, "%s",
                 e.msg);
    cr_expect_eq(lbs_mixing_validate(seq[0], 1, 3, 1e-12, &e), -EINVAL);
    cr_expect(strstr(e.msg, "not connected"), "%s", e.msg);
}

Test(topology, creation_errors)
{
    struct lbs_topology *t = (struct lbs_topology *)&t;
    struct lbs_err e = {{0}};
    cr_expect_eq(lbs_topology_new(LBS_TOPO_RING, 0, &t, &e), -EINVAL);
    cr_expect_null(t);
    cr_expect_eq(lbs_topology_new(LBS_TOPO_COUNT, 4, &t, &e), -EINVAL);
    cr_expect_eq(lbs_topology_new_name("star", 4, &t, &e), -ENOENT);
    cr_expect(strstr(e.msg, "star") && strstr(e.msg, "onepeer"), "%s", e.msg);
    cr_expect_eq(lbs_topology_new_name("onepeer", 4, &t, &e), 0, "%s", e.msg);
    cr_expect_eq(lbs_topology_period(t), 2);
    lbs_topology_free(t);
    lbs_topology_free(NULL);
}

/* ------------------------------------------------------------ optimizers */

struct params {
    struct lbs_layer l[3];
};

static void params_init(struct params *p, uint64_t seed)
{
    static const char *names[3] = {"w", "b", "v"};
    static const size_t sizes[3] = {300, 7, 70000};     /* one split by OMP */
    memset(p, 0, sizeof *p);
    for (int i = 0; i < 3; i++) {
        struct lbs_layer *L = &p->l[i];
        L->name = names[i];
        L->n = sizes[i];
        L->ndim = 1;
        L->shape[0] = sizes[i];
        L->w = malloc(L->n * sizeof(float));
        L->g = malloc(L->n * sizeof(float));
        for (size_t j = 0; j < L->n; j++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            L->w[j] = (float)((double)(seed >> 11) * 0x1p-53 - 0.5);
        }
    }
}

static void params_grad(struct params *p, int t)
{
    for (int i = 0; i < 3; i++)
        for (size_t j = 0; j < p->l[i].n; j++)
            p->l[i].g[j] = 0.01f * (float)((j * 7 + (size_t)t * 13 + i) % 17)
                           - 0.08f;
}

static void params_free(struct params *p)
{
    for (int i = 0; i < 3; i++) {
        free(p->l[i].w);
        free(p->l[i].g);
    }
}

static struct lbs_optim *make(const char *spec, struct params *p)
{
    struct lbs_optim *o = NULL;
    struct lbs_err e = {{0}};
    int r = lbs_optim_new(spec, p->l, 3, NULL, &o, &e);
    cr_assert_eq(r, 0, "'%s': %d %s", spec, r, e.msg);
    return o;
}

static void step_ok(struct lbs_optim *o)
{
    struct lbs_err e = {{0}};
    int r = lbs_optim_step(o, &e);
    cr_assert_eq(r, 0, "%s: %d %s", lbs_optim_name(o), r, e.msg);
}

/* On one rank W = [1]: dmsgd is sgd bit for bit, decentlam to rounding
 * (g~ = (x - (x - lr g))/lr). */
static void vs_sgd(const char *spec, const char *sgd, double tol)
{
    struct params a, b;
    params_init(&a, 1);
    params_init(&b, 1);
    struct lbs_optim *oa = make(spec, &a), *ob = make(sgd, &b);
    for (int t = 1; t <= 10; t++) {
        params_grad(&a, t);
        params_grad(&b, t);
        step_ok(oa);
        step_ok(ob);
        for (int i = 0; i < 3; i++) {
            if (tol == 0) {
                cr_assert(!memcmp(a.l[i].w, b.l[i].w, a.l[i].n * 4), "%s vs "
                          "%s: step %d layer %d differs", spec, sgd, t, i);
                continue;
            }
            for (size_t j = 0; j < a.l[i].n; j++)
                cr_assert(fabs(a.l[i].w[j] - b.l[i].w[j]) <= tol, "%s vs %s: "
                          "step %d layer %d[%zu]: %.9g vs %.9g", spec, sgd, t,
                          i, j, a.l[i].w[j], b.l[i].w[j]);
        }
    }
    lbs_optim_free(oa);
    lbs_optim_free(ob);
    params_free(&a);
    params_free(&b);
}

Test(decentral, one_rank_is_sgd)
{
    for (int k = 0; k < LBS_TOPO_COUNT; k++) {
        char spec[128];
        snprintf(spec, sizeof spec, "dmsgd:topology=%s,lr=0.05,momentum=0.8,"
                 "wd=0.01", lbs_topo_names[k]);
        vs_sgd(spec, "sgd:lr=0.05,momentum=0.8,wd=0.01", 0);
        snprintf(spec, sizeof spec, "decentlam:topology=%s,lr=0.05,"
                 "momentum=0.8,wd=0.01", lbs_topo_names[k]);
        /* |x| <= 0.5: rounding of z is ~3e-8 / lr per step in g~ */
        vs_sgd(spec, "sgd:lr=0.05,momentum=0.8,wd=0.01", 2e-6);
    }
}

/* lr * scale = 0: decentlam only mixes (W = [1]: nothing moves). */
Test(decentral, decentlam_zero_lr_only_mixes)
{
    struct params a;
    params_init(&a, 3);
    float *w0 = malloc(a.l[2].n * 4);
    memcpy(w0, a.l[2].w, a.l[2].n * 4);
    struct lbs_optim *o = make("decentlam:lr=0.1", &a);
    lbs_optim_set_lr_scale(o, 0);
    params_grad(&a, 1);
    step_ok(o);
    cr_expect(!memcmp(w0, a.l[2].w, a.l[2].n * 4));
    lbs_optim_set_lr_scale(o, 1);
    step_ok(o);
    cr_expect(memcmp(w0, a.l[2].w, a.l[2].n * 4));
    free(w0);
    lbs_optim_free(o);
    params_free(&a);
}

Test(decentral, specs_stats_help)
{
    struct params a;
    params_init(&a, 2);
    struct lbs_optim *o = NULL;
    struct lbs_err e = {{0}};
    cr_expect_eq(lbs_optim_new("dmsgd:topology=star", a.l, 3, NULL, &o, &e),
                 -EINVAL);
    cr_expect(strstr(e.msg, "'topology'"), "%s", e.msg);
    cr_expect_eq(lbs_optim_new("decentlam:momentum=1", a.l, 3, NULL, &o, &e),
                 -EINVAL);
    cr_expect_eq(lbs_optim_new("dmsgd:eta=1", a.l, 3, NULL, &o, &e), -ENOENT);
    o = make("dmsgd:topology=onepeer", &a);
    cr_expect(strstr(lbs_optim_params(o), "topology=onepeer"), "%s",
              lbs_optim_params(o));
    params_grad(&a, 1);
    step_ok(o);
    const char *const *names = lbs_optim_stat_names(o);
    int n = 0;
    double v = -1;
    for (; names[n]; n++) {
        cr_expect_eq(lbs_optim_stat(o, names[n], &v, &e), 0, "%s", e.msg);
        cr_expect_eq(v, 0.0, "%s = %g on one rank", names[n], v);
    }
    cr_expect_eq(n, 3);
    cr_expect_eq(lbs_optim_stat(o, "kept_layers", &v, &e), -ENOENT);
    cr_expect_eq(lbs_optim_bytes_per_elem(o), 24.0);
    lbs_optim_free(o);
    params_free(&a);
    FILE *f = tmpfile();
    cr_expect_eq(lbs_optim_help("decentlam", f), 0);
    fclose(f);
}
