/* test_calib_nccl.c - sim calibrate --nccl-model (sim/calib_nccl.c): the
 * fit of a GPU platform's NCCL-model bandwidths recovers known factors.
 * The "measurements" are the simulator's own prices on the base preset
 * with its node's links and its network scaled by chosen factors (what
 * the fit must find), clean and with +-4% deterministic noise; a base of
 * another kind of GPU, rows missing per group, and mixed node layouts are
 * checked as well. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "sim_internal.h"

static struct lbs_sim_platform *preset(const char *name)
{
    struct lbs_sim_platform *p = NULL;
    struct lbs_err e;
    cr_assert_eq(lbs_sim_platform_find(name, &p, &e), 0, "%s", e.msg);
    return p;
}

/* allreduce and allgather, 8 KB .. 1 GB by 4x, at P GPUs of g per node,
 * priced on base scaled by (x, y); noise: a fixed +-4% pattern. */
static size_t samples(const struct lbs_sim_platform *base, double x, double y,
                      long g, const long *P, int nP, int noise,
                      struct lbs_sim_sample *s)
{
    struct lbs_sim_platform truth;
    lbs_sim_nccl_scaled(base, g, x, y, &truth);
    size_t n = 0;
    for (int k = 0; k < nP; k++)
        for (int c = 0; c < 2; c++)
            for (double b = 8192; b <= 1 << 30; b *= 4) {
                struct lbs_sim_net net;
                struct lbs_err e;
                enum lbs_coll coll = c ? LBS_COLL_ALLGATHER
                                       : LBS_COLL_ALLREDUCE;
                cr_assert_eq(lbs_sim_net_init(&net, &truth, P[k], &e), 0,
                             "%s", e.msg);
                double t = lbs_sim_coll_cost(&net, coll, b, LBS_TOPO_RING,
                                             0).t;
                double f = noise ? 1 + 0.04 * ((n % 3) - 1.0) : 1;
                s[n++] = (struct lbs_sim_sample){coll, P[k], b, t * f,
                    P[k] > g ? P[k] / g : 1, P[k] > g ? g : P[k]};
            }
    return n;
}

static void check(const char *name, double x, double y, int noise,
                  double tol)
{
    struct lbs_sim_platform *base = preset(name);
    static struct lbs_sim_sample s[512];
    const long P[] = {8, 16, 64};
    size_t n = samples(base, x, y, 8, P, 3, noise, s);
    struct lbs_sim_nccl_fit fit;
    struct lbs_err e;
    cr_assert_eq(lbs_sim_fit_nccl(s, n, base, &fit, &e), 0, "%s", e.msg);
    cr_expect(fabs(fit.x / x - 1) < tol, "%s: x %g, truth %g", name, fit.x,
              x);
    cr_expect(fabs(fit.y / y - 1) < tol, "%s: y %g, truth %g", name, fit.y,
              y);
    cr_expect_eq(fit.g, 8);
    cr_expect_eq(fit.n_intra, 18);
    cr_expect_eq(fit.n_inter, 36);
    cr_expect(fit.held_intra.n > 0 && fit.held_inter.n > 0);
    cr_expect(fit.fit_err.med <= fit.base_err.med + 1e-12,
              "the fit is no better than the base: %g vs %g",
              fit.fit_err.med, fit.base_err.med);
    if (!noise)
        cr_expect(fit.fit_err.max < 1e-3 && fit.held_inter.max < 1e-3,
                  "%s: errors %g, %g on its own prices", name,
                  fit.fit_err.max, fit.held_inter.max);
    lbs_sim_platform_free(base);
}

Test(calib_nccl, recovers_known_factors)
{
    check("dgx-a100", 0.8, 0.55, 0, 0.01);
    check("dgx-h100", 1.2, 0.3, 0, 0.01);
}

Test(calib_nccl, recovers_through_noise)
{
    check("dgx-a100", 0.8, 0.55, 1, 0.06);
    check("dgx-h100", 0.5, 1.5, 1, 0.06);
}

Test(calib_nccl, one_node_rows_only_keep_the_network)
{
    struct lbs_sim_platform *base = preset("dgx-a100");
    static struct lbs_sim_sample s[128];
    const long P[] = {4, 8};
    size_t n = samples(base, 0.7, 1, 8, P, 2, 0, s);
    struct lbs_sim_nccl_fit fit;
    struct lbs_err e;
    cr_assert_eq(lbs_sim_fit_nccl(s, n, base, &fit, &e), 0, "%s", e.msg);
    cr_expect(fabs(fit.x / 0.7 - 1) < 0.01, "x %g", fit.x);
    cr_expect_eq(fit.y, 1);
    cr_expect_eq(fit.n_inter, 0);
    lbs_sim_platform_free(base);
}

Test(calib_nccl, refuses_what_it_cannot_fit)
{
    struct lbs_sim_platform *base = preset("dgx-a100"), *cpu = preset("eth-25g");
    cpu->nccl_model = 0;            /* an alpha-beta (MPI) platform */
    static struct lbs_sim_sample s[256];
    const long P[] = {16};
    size_t n = samples(base, 1, 1, 8, P, 1, 0, s);
    struct lbs_sim_nccl_fit fit;
    struct lbs_err e;
    cr_expect_eq(lbs_sim_fit_nccl(s, n, cpu, &fit, &e), -EINVAL);
    cr_expect(strstr(e.msg, "NCCL-model") != NULL, "%s", e.msg);
    const long Q[] = {16};
    size_t m = samples(base, 1, 1, 4, Q, 1, 0, s + n);
    cr_expect_eq(lbs_sim_fit_nccl(s, n + m, base, &fit, &e), -EINVAL);
    cr_expect(strstr(e.msg, "GPUs per node") != NULL, "%s", e.msg);
    s[0].ranks = 1;
    cr_expect_eq(lbs_sim_fit_nccl(s, 1, base, &fit, &e), -EINVAL);
    lbs_sim_platform_free(base);
    lbs_sim_platform_free(cpu);
}

Test(calib_nccl, the_written_platform_prices_as_the_fit)
{
    struct lbs_sim_platform *base = preset("dgx-a100"), *w = NULL;
    static struct lbs_sim_sample s[512];
    const long P[] = {8, 16, 64};
    size_t n = samples(base, 0.8, 0.55, 8, P, 3, 0, s);
    struct lbs_sim_nccl_fit fit;
    struct lbs_err e;
    char path[512], *btext = NULL, *text = NULL;
    size_t blen = 0, len = 0;
    cr_assert_eq(lbs_sim_fit_nccl(s, n, base, &fit, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_sim_preset_path("platform", "dgx-a100", path,
                                     sizeof path, &e), 0, "%s", e.msg);
    cr_assert_eq(sj_read_file(path, 1 << 20, 0, &btext, &blen, &e), 0);
    const struct lbs_sim_calibrated c = {.name = "fitted", .nodes = 128};
    cr_assert_eq(lbs_sim_platform_nccl_calibrated(btext, "dgx-a100", &fit,
                 &c, "fitted.json", &text, &len, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_sim_platform_parse(text, "fitted.json", &w, &e), 0,
                 "%s", e.msg);
    cr_expect_str_eq(w->name, "fitted");
    cr_expect_eq(w->max_gpus, 1024);
    cr_expect(fabs(w->nccl.intra.bw / (base->nccl.intra.bw * fit.x) - 1) <
              1e-9);
    cr_expect(fabs(w->nccl.inter.bw / (base->nccl.inter.bw * fit.y) - 1) <
              1e-9);
    cr_expect(fabs(w->nic_bw / (base->nic_bw * fit.y) - 1) < 1e-9);
    for (size_t i = 0; i < n; i++) {       /* its prices are the truth's */
        struct lbs_sim_net net;
        cr_assert_eq(lbs_sim_net_init(&net, w, s[i].ranks, &e), 0);
        double t = lbs_sim_coll_cost(&net, s[i].coll, s[i].bytes,
                                     LBS_TOPO_RING, 0).t;
        cr_expect(fabs(t / s[i].t - 1) < 2e-3, "row %zu: %g vs %g", i, t,
                  s[i].t);
    }
    free(btext);
    free(text);
    lbs_sim_platform_free(w);
    lbs_sim_platform_free(base);
}
