/* test_slamb.c - SLAMB and 1-bit LAMB on one process.
 *
 *  - SLAMB with k = 1 is LAMB with the same clamp bounds, bit for bit, step
 *    for step (both mask schedules, exclude_1d on and off);
 *  - SLAMB with k < 1 against an independent double-precision model of the
 *    equations (staleness blend of lr and trust ratio), on one rank and on
 *    a fake 4-rank comm (identical data) where lr_min = lr/2;
 *  - the cyclic mask syncs every coordinate once per ceil(1/k) steps; the
 *    staleness counters follow the masks of lbscale/mask.h;
 *  - bad keys fail naming the key;
 *  - 1-bit LAMB is LAMB (bias_correction=0, cmin=0.01, cmax=10) during the
 *    warm-up, then its compressed steps pass the bytes of the formula to
 *    the comm (fake 3- and 4-rank comms count them).
 * Multi-rank behaviour (real MPI) is in mpi_slamb.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/lbscale.h"
#include "slamb.h"

/* ------------------------------------------------------------- layers */

#define MAXL 6

struct net {
    size_t nl;
    struct lbs_layer L[MAXL];
};

static const struct {
    const char *name;
    int ndim;
    size_t s0, s1;
} shapes[] = {
    {"fc1.weight", 2, 100, 120},   /* 12000: partial mask */
    {"fc1.bias", 1, 120, 0},       /* 1-D: always synced */
    {"fc2.weight", 2, 30, 40},     /* 1200 < 9000: always synced */
    {"big.weight", 2, 256, 300},   /* 76800: the parallel chunk path */
    {"ln.weight", 1, 300, 0},
};

static void net_make(struct net *n, size_t nl)
{
    memset(n, 0, sizeof *n);
    n->nl = nl;
    for (size_t i = 0; i < nl; i++) {
        struct lbs_layer *L = &n->L[i];
        L->name = shapes[i].name;
        L->ndim = shapes[i].ndim;
        L->shape[0] = shapes[i].s0;
        L->shape[1] = shapes[i].s1;
        L->n = shapes[i].s0 * (shapes[i].ndim == 2 ? shapes[i].s1 : 1);
        L->w = malloc(L->n * sizeof(float));
        L->g = malloc(L->n * sizeof(float));
        cr_assert(L->w && L->g);
        uint64_t key = lbs_rng_key(7, 0, i);
        for (size_t j = 0; j < L->n; j++)
            L->w[j] = (float)(lbs_rng_uniform(key, j) - 0.5) * 0.2f;
    }
}

static void net_copy(struct net *d, const struct net *s)
{
    net_make(d, s->nl);
    for (size_t i = 0; i < s->nl; i++)
        memcpy(d->L[i].w, s->L[i].w, s->L[i].n * sizeof(float));
}

static void net_free(struct net *n)
{
    for (size_t i = 0; i < n->nl; i++) {
        free(n->L[i].w);
        free(n->L[i].g);
    }
}

/* Gradient of step t: noisy, per-layer scale, some exact zeros. */
static void net_grad(struct net *n, long t, uint64_t salt)
{
    for (size_t i = 0; i < n->nl; i++) {
        uint64_t key = lbs_rng_key(1000 + salt, (uint64_t)t, i);
        float scale = 0.01f * (float)(i + 1);
        for (size_t j = 0; j < n->L[i].n; j++) {
            double r = lbs_rng_uniform(key, j);
            n->L[i].g[j] = r < 0.02 ? 0.0f : (float)(r - 0.45) * scale;
        }
    }
}

static struct lbs_optim *mk(const char *spec, struct net *n,
                            struct lbs_comm *c)
{
    struct lbs_optim *o;
    struct lbs_err e = {{0}};
    int rc = lbs_optim_new(spec, n->L, n->nl, c, &o, &e);
    cr_assert_eq(rc, 0, "%s: %s", spec, e.msg);
    return o;
}

static void step(struct lbs_optim *o)
{
    struct lbs_err e = {{0}};
    int rc = lbs_optim_step(o, &e);
    cr_assert_eq(rc, 0, "%s step %ld: %s", lbs_optim_name(o),
                 lbs_optim_steps(o) + 1, e.msg);
}

static void same_w(const struct net *a, const struct net *b, long t,
                   const char *what)
{
    for (size_t i = 0; i < a->nl; i++)
        for (size_t j = 0; j < a->L[i].n; j++)
            cr_assert(a->L[i].w[j] == b->L[i].w[j],
                      "%s: step %ld layer %s [%zu]: %.9g vs %.9g", what, t,
                      a->L[i].name, j, a->L[i].w[j], b->L[i].w[j]);
}

/* ------------------------------------------- a fake P-rank comm (counts) */

/* Stands for P ranks that all hold this process's data: allreduce SUM
 * multiplies by P, allgather / alltoall replicate what rank 0 would get.
 * With fake_shift != 0 rank r holds x + r fake_shift in an allreduce, so
 * a float mean comes out (P-1)/2 fake_shift above this rank's x.
 * Counts bytes as lbscale's record backend does (the payload this rank
 * passes: count x size, the whole send buffer for alltoall). */
struct fake { size_t bytes, calls; };
static float fake_shift;

static int f_allreduce(struct lbs_comm *c, void *buf, size_t count,
                       enum lbs_dtype t, enum lbs_redop op, int layer)
{
    (void)layer;
    struct fake *f = c->impl;
    f->bytes += count * lbs_dtype_size(t);
    f->calls++;
    if (op == LBS_SUM && t == LBS_FLOAT32)
        for (size_t i = 0; i < count; i++)
            ((float *)buf)[i] = ((float *)buf)[i] * (float)c->size +
                                fake_shift * (float)(c->size *
                                                     (c->size - 1) / 2);
    else
        cr_assert(op != LBS_SUM, "fake comm: SUM of dtype %d", (int)t);
    return 0;
}

static int f_allgather(struct lbs_comm *c, const void *send, void *recv,
                       size_t count, enum lbs_dtype t, int layer)
{
    (void)layer;
    struct fake *f = c->impl;
    size_t b = count * lbs_dtype_size(t);
    f->bytes += b;
    f->calls++;
    for (int r = 0; r < c->size; r++)
        memcpy((char *)recv + (size_t)r * b, send, b);
    return 0;
}

static int f_alltoall(struct lbs_comm *c, const void *send, void *recv,
                      size_t count, enum lbs_dtype t, int layer)
{
    (void)layer;
    struct fake *f = c->impl;
    size_t b = count * lbs_dtype_size(t);
    f->bytes += (size_t)c->size * b;
    f->calls++;
    for (int r = 0; r < c->size; r++)   /* every peer's block for rank 0 */
        memcpy((char *)recv + (size_t)r * b, send, b);
    return 0;
}

static int f_barrier(struct lbs_comm *c) { (void)c; return 0; }
static void f_free(struct lbs_comm *c) { (void)c; }

static const struct lbs_comm_ops fake_ops = {
    .name = "fake",
    .allreduce = f_allreduce,
    .allgather = f_allgather,
    .alltoall = f_alltoall,
    .barrier = f_barrier,
    .free = f_free,
};

static void fake_init(struct lbs_comm *c, struct fake *f, int P)
{
    memset(c, 0, sizeof *c);
    memset(f, 0, sizeof *f);
    c->ops = &fake_ops;
    c->size = P;
    c->impl = f;
}

/* ------------------------------------------------ SLAMB k=1 == LAMB */

static void k1_vs_lamb(const char *slamb, const char *lamb, int steps)
{
    struct net a, b;
    net_make(&a, 5);
    net_copy(&b, &a);
    struct lbs_optim *os = mk(slamb, &a, NULL), *ol = mk(lamb, &b, NULL);
    for (long t = 1; t <= steps; t++) {
        net_grad(&a, t, 0);
        net_grad(&b, t, 0);
        step(os);
        step(ol);
        same_w(&a, &b, t, slamb);
    }
    lbs_optim_free(os);
    lbs_optim_free(ol);
    net_free(&a);
    net_free(&b);
}

Test(slamb, k1_equals_lamb_defaults)
{
    /* the authors' default: 1-D tensors get the plain, unclamped LAMB
     * ratio with wd; other tensors the clamped one - with the clamp out of
     * reach that is lamb with exclude_1d=0 and its (open) default clamp */
    k1_vs_lamb("slamb:k=1,cmin=0,cmax=1e9", "lamb:exclude_1d=0", 8);
}

Test(slamb, k1_equals_lamb_lbscale_variants)
{
    /* lbscale's variants by name: exclude_1d = lamb's default treatment
     * of 1-D tensors; clamp_1d = lamb with exclude_1d=0 and the clamp */
    k1_vs_lamb("slamb:k=1,exclude_1d=1", "lamb:cmin=0.01,cmax=1000", 8);
    k1_vs_lamb("slamb:k=1,clamp_1d=1",
               "lamb:cmin=0.01,cmax=1000,exclude_1d=0", 8);
}

Test(slamb, k1_equals_lamb_bernoulli_exclude1d_off)
{
    k1_vs_lamb("slamb:k=1,mask=bernoulli,clamp_1d=1,beta3=0.9,H=2",
               "lamb:cmin=0.01,cmax=1000,exclude_1d=0", 8);
}

Test(slamb, k1_equals_lamb_tight_clamp_other_hyper)
{
    /* cmax = 2 clamps the trust ratio: the clamp bounds must match too */
    k1_vs_lamb("slamb:k=1,lr=0.05,b1=0.8,b2=0.99,eps=1e-8,wd=0.1,cmin=0.5,"
               "cmax=2,small=0,exclude_1d=1",
               "lamb:lr=0.05,b1=0.8,b2=0.99,eps=1e-8,wd=0.1,cmin=0.5,cmax=2",
               6);
}

/* ------------------------- SLAMB k<1 against a double-precision model */

struct model {
    size_t n;
    double *w, *m, *v;
    long *c;
};

static double rat(double a, double b) { return a > 0 && b > 0 ? a / b : 1; }

/* One step of layer L of the model (one process, or P identical ranks). */
/* is1d: a 1-D layer; excl: exclude_1d=1 (phi = 1, no wd for 1-D);
 * clamp1d: clamp_1d=1 (else the authors' unclamped 1-D ratio). */
static void model_step(struct model *M, const struct lbs_layer *L, long t,
                       const uint8_t *in_s, int always, int is1d, int excl,
                       int clamp1d, int P, double shift)
{
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-6;
    const int plain = is1d && excl;
    const double wd = plain ? 0 : 0.01, beta3 = 0.9, cmin = 0.01,
                 cmax = 1000;
    double bc1 = 1 - pow(b1, (double)t), bc2 = 1 - pow(b2, (double)t);
    double *u = malloc(M->n * sizeof *u);
    double s2[4] = {0};
    for (size_t j = 0; j < M->n; j++) {
        double g = L->g[j];
        M->m[j] = b1 * M->m[j] + (1 - b1) * g;
        M->v[j] = b2 * M->v[j] + (1 - b2) * g * g;
        int syn = always || in_s[j];
        M->m[j] += syn ? shift : 0;   /* the mean over ranks */
        M->c[j] = syn ? 0 : M->c[j] + 1;
        u[j] = (M->m[j] / bc1) / (sqrt(M->v[j] / bc2) + eps) + wd * M->w[j];
        s2[syn ? 0 : 2] += M->w[j] * M->w[j];
        s2[syn ? 1 : 3] += u[j] * u[j];
    }
    double pmax = rat(sqrt(s2[0]), sqrt(s2[1]));
    double pmin = rat(sqrt(s2[2]), sqrt(s2[3]));
    for (size_t j = 0; j < M->n; j++) {
        double s = pow(beta3, (double)M->c[j]);
        double lre = s * lr + (1 - s) * lr / sqrt((double)P);
        double phi = s * pmax + (1 - s) * pmin;
        if (!is1d || clamp1d)
            phi = phi < cmin ? cmin : phi > cmax ? cmax : phi;
        if (plain)
            phi = 1;
        M->w[j] -= lre * phi * u[j];
    }
    free(u);
}

/* shift: the ranks' allreduced values differ (fake_shift), so a synced
 * m is not this rank's own m; the parameter averaging (H = 1000: after
 * step 1 only) shifts w as much. */
static void model_vs_slamb(const char *spec, int P, float shift)
{
    fake_shift = shift;
    const double mshift = (double)shift * (P - 1) / 2;
    struct net a;
    net_make(&a, 5);
    struct lbs_comm fc;
    struct fake f;
    fake_init(&fc, &f, P);
    struct lbs_optim *o = mk(spec, &a, P > 1 ? &fc : NULL);
    struct model M[MAXL];
    for (size_t i = 0; i < a.nl; i++) {
        size_t n = a.L[i].n;
        M[i] = (struct model){n, calloc(n, 8), calloc(n, 8), calloc(n, 8),
                              calloc(n, sizeof(long))};
        for (size_t j = 0; j < n; j++)
            M[i].w[j] = a.L[i].w[j];
    }
    uint8_t *in_s = malloc(100000);
    for (long t = 1; t <= 7; t++) {
        net_grad(&a, t, 0);
        step(o);
        for (size_t i = 0; i < a.nl; i++) {
            const uint32_t *c = lbs_slamb_staleness(o, i);
            for (size_t j = 0; j < a.L[i].n; j++)
                in_s[j] = c ? c[j] == 0 : 1;
            model_step(&M[i], &a.L[i], t, in_s, c == NULL,
                       a.L[i].ndim == 1, strstr(spec, "exclude_1d=1") != 0,
                       strstr(spec, "clamp_1d=1") != 0, P, mshift);
            if (t == 1 && mshift != 0)
                for (size_t j = 0; j < a.L[i].n; j++)
                    M[i].w[j] += mshift;
            for (size_t j = 0; j < a.L[i].n; j++) {
                if (c)
                    cr_assert_eq((long)c[j], M[i].c[j]);
                double d = fabs(a.L[i].w[j] - M[i].w[j]);
                cr_assert(d <= 2e-6 * fmax(1e-2, fabs(M[i].w[j])),
                          "%s P=%d step %ld %s[%zu]: %.9g vs model %.9g",
                          spec, P, t, a.L[i].name, j, a.L[i].w[j],
                          M[i].w[j]);
            }
        }
    }
    for (size_t i = 0; i < a.nl; i++) {
        free(M[i].w);
        free(M[i].m);
        free(M[i].v);
        free(M[i].c);
    }
    free(in_s);
    lbs_optim_free(o);
    net_free(&a);
    fake_shift = 0;
}

Test(slamb, blend_matches_model_one_rank)
{
    model_vs_slamb("slamb:k=0.25,beta3=0.9", 1, 0);
    model_vs_slamb("slamb:k=0.3,beta3=0.9,mask=bernoulli,seed=9", 1, 0);
    model_vs_slamb("slamb:k=0.25,beta3=0.9,exclude_1d=1", 1, 0);
    model_vs_slamb("slamb:k=0.25,beta3=0.9,clamp_1d=1", 1, 0);
    /* 300 chunks: too many for chunk ids, the counters path */
    model_vs_slamb("slamb:k=0.0033,beta3=0.9,small=0", 1, 0);
}

Test(slamb, blend_matches_model_fake_4_ranks)
{
    /* identical data on 4 ranks: m[S] averages to itself, lr_min = lr/2;
     * H = 1000 keeps the (identity) parameter averaging out of the way */
    model_vs_slamb("slamb:k=0.25,beta3=0.9,H=1000", 4, 0);
}

Test(slamb, blend_matches_model_fake_4_ranks_that_differ)
{
    /* the averages differ from the local m: a chunk-id layer keeps them
     * compact until the next step's pass 1 (slamb.c), and the counted
     * layers scatter them at once */
    model_vs_slamb("slamb:k=0.25,beta3=0.9,H=1000", 4, 1e-3f);
    model_vs_slamb("slamb:k=0.3,beta3=0.9,H=1000,mask=bernoulli", 4, 1e-3f);
}

/* --------------------------------------------- masks and staleness */

static void cyclic_visits(double k)
{
    struct net a;
    net_make(&a, 4);
    char spec[128];
    snprintf(spec, sizeof spec, "slamb:k=%g,seed=5", k);
    struct lbs_optim *o = mk(spec, &a, NULL);
    const size_t C = (size_t)ceil(1.0 / k - 1e-12);
    size_t *hits[MAXL] = {0};
    for (size_t i = 0; i < a.nl; i++)
        hits[i] = calloc(a.L[i].n, sizeof(size_t));
    for (long t = 1; t <= (long)(3 * C); t++) {
        net_grad(&a, t, 0);
        step(o);
        for (size_t i = 0; i < a.nl; i++) {
            const uint32_t *c = lbs_slamb_staleness(o, i);
            if (!c) {   /* 1-D and small layers: everything every step */
                cr_assert(a.L[i].ndim == 1 || a.L[i].n < 9000, "%s",
                          a.L[i].name);
                cr_assert_eq(lbs_slamb_synced(o, i), a.L[i].n);
                continue;
            }
            size_t synced = 0;
            for (size_t j = 0; j < a.L[i].n; j++) {
                synced += c[j] == 0;
                hits[i][j] += c[j] == 0;
                if (t >= (long)C)
                    cr_assert(c[j] < C, "k=%g step %ld %s[%zu]: c = %u",
                              k, t, a.L[i].name, j, c[j]);
            }
            cr_assert_eq(synced, lbs_slamb_synced(o, i));
            size_t lo = a.L[i].n / C, hi = (a.L[i].n + C - 1) / C;
            cr_assert(synced >= lo && synced <= hi, "%zu synced of %zu",
                      synced, a.L[i].n);
            if (t % (long)C == 0)   /* a full cycle: each coordinate once */
                for (size_t j = 0; j < a.L[i].n; j++) {
                    cr_assert_eq(hits[i][j], 1, "k=%g step %ld %s[%zu]", k,
                                 t, a.L[i].name, j);
                    hits[i][j] = 0;
                }
        }
    }
    for (size_t i = 0; i < a.nl; i++)
        free(hits[i]);
    lbs_optim_free(o);
    net_free(&a);
}

Test(slamb, cyclic_visits_all_every_ceil_1_over_k)
{
    cyclic_visits(0.25);
    cyclic_visits(0.3);    /* 4 chunks */
    cyclic_visits(0.1);
}

Test(slamb, staleness_follows_the_masks)
{
    struct net a;
    net_make(&a, 4);
    struct lbs_optim *oc = mk("slamb:k=0.2,seed=3", &a, NULL);
    struct net b;
    net_copy(&b, &a);
    struct lbs_optim *ob = mk("slamb:k=0.2,seed=3,mask=bernoulli", &b, NULL);
    const size_t li[2] = {0, 3};   /* the partial-mask layers */
    struct lbs_mask_cyclic *cm[2];
    uint32_t *exp_c[2], *exp_b[2], *idx = malloc(76800 * sizeof *idx);
    for (int q = 0; q < 2; q++) {
        struct lbs_err e;
        cr_assert_eq(lbs_mask_cyclic_new(3, (int)li[q], a.L[li[q]].n, 0.2,
                                         &cm[q], &e), 0);
        exp_c[q] = calloc(a.L[li[q]].n, sizeof(uint32_t));
        exp_b[q] = calloc(a.L[li[q]].n, sizeof(uint32_t));
    }
    size_t bern_synced = 0, bern_total = 0;
    for (long t = 1; t <= 12; t++) {
        net_grad(&a, t, 0);
        net_grad(&b, t, 0);
        step(oc);
        step(ob);
        for (int q = 0; q < 2; q++) {
            size_t i = li[q], n = a.L[i].n, cnt;
            const uint32_t *ci;
            for (size_t j = 0; j < n; j++) {
                exp_c[q][j]++;
                exp_b[q][j]++;
            }
            lbs_mask_cyclic_get(cm[q], t, &ci, &cnt);
            for (size_t j = 0; j < cnt; j++)
                exp_c[q][ci[j]] = 0;
            cnt = lbs_mask_bernoulli(3, t, (int)i, n, 0.2, idx);
            for (size_t j = 0; j < cnt; j++)
                exp_b[q][idx[j]] = 0;
            bern_synced += cnt;
            bern_total += n;
            cr_assert_eq(lbs_slamb_synced(ob, i), cnt);
            cr_assert_eq(memcmp(lbs_slamb_staleness(oc, i), exp_c[q],
                                n * sizeof(uint32_t)), 0,
                         "cyclic counters, step %ld layer %zu", t, i);
            cr_assert_eq(memcmp(lbs_slamb_staleness(ob, i), exp_b[q],
                                n * sizeof(uint32_t)), 0,
                         "bernoulli counters, step %ld layer %zu", t, i);
        }
    }
    double frac = (double)bern_synced / (double)bern_total;
    cr_assert(fabs(frac - 0.2) < 0.01, "Bernoulli density %g", frac);
    cr_assert_null(lbs_slamb_staleness(oc, 1));
    cr_assert_null(lbs_slamb_staleness(oc, 2));
    cr_assert_null(lbs_slamb_momentum(oc, 99));
    for (int q = 0; q < 2; q++) {
        lbs_mask_cyclic_free(cm[q]);
        free(exp_c[q]);
        free(exp_b[q]);
    }
    free(idx);
    lbs_optim_free(oc);
    lbs_optim_free(ob);
    net_free(&a);
    net_free(&b);
}

/* ------------------------------------------------- the k warm-up */

/* The authors' Cifar10/main.py schedule, written out independently:
 * epoch e uses max(k, r[e]), r held at 0.001 after its 17 entries. */
static double authors_k(double k, long stage)
{
    static const double r[] = {0.5, 0.5, 0.2, 0.1, 0.1, 0.05, 0.04, 0.03,
                               0.02, 0.01, 0.008, 0.008, 0.006, 0.006,
                               0.003, 0.003, 0.001};
    double x = stage < 17 ? r[stage] : 0.001;
    return x > k ? x : k;
}

Test(slamb, kwarm_schedule)
{
    for (long t = 1; t <= 60; t++) {
        cr_expect_eq(lbs_slamb_k_at(0.1, 0, t), 0.1);     /* off */
        cr_expect_eq(lbs_slamb_k_at(0.1, 1, t), authors_k(0.1, t - 1));
        cr_expect_eq(lbs_slamb_k_at(0.1, 3, t), authors_k(0.1, (t - 1) / 3));
        cr_expect_eq(lbs_slamb_k_at(0.0005, 2, t),
                     authors_k(0.0005, (t - 1) / 2));
        cr_expect_eq(lbs_slamb_k_at(0.6, 1, t), 0.6);     /* k above all */
    }
    /* k = 0.1, 2 steps a stage: 0.5 for steps 1-4, 0.2 for 5-6, then k */
    const double want[] = {0.5, 0.5, 0.5, 0.5, 0.2, 0.2, 0.1, 0.1};
    for (long t = 1; t <= 8; t++)
        cr_expect_eq(lbs_slamb_k_at(0.1, 2, t), want[t - 1], "t=%ld", t);
    cr_expect_eq(lbs_slamb_k_at(0.0005, 1, 1000000), 0.001);
}

/* Counters and synced counts of a warm-up run against the masks of
 * lbscale/mask.h at the schedule's density, step by step, through the
 * stages and past the switch to chunk ids (cyclic) C steps after. */
static void kwarm_masks(const char *mask)
{
    struct net a;
    net_make(&a, 4);
    char spec[128];
    snprintf(spec, sizeof spec, "slamb:k=0.1,seed=3,kwarm=2,mask=%s", mask);
    struct lbs_optim *o = mk(spec, &a, NULL);
    const int bern = !strcmp(mask, "bernoulli");
    const size_t li[2] = {0, 3};
    uint32_t *exp[2], *idx = malloc(76800 * sizeof *idx);
    for (int q = 0; q < 2; q++)
        exp[q] = calloc(a.L[li[q]].n, sizeof(uint32_t));
    for (long t = 1; t <= 30; t++) {   /* warm-up ends at 6, ids at 17 */
        net_grad(&a, t, 0);
        step(o);
        double kt = authors_k(0.1, (t - 1) / 2);
        for (int q = 0; q < 2; q++) {
            size_t i = li[q], n = a.L[i].n, cnt;
            const uint32_t *ci;
            for (size_t j = 0; j < n; j++)
                exp[q][j]++;
            struct lbs_mask_cyclic *cm = NULL;
            if (bern) {
                cnt = lbs_mask_bernoulli(3, t, (int)i, n, kt, idx);
                ci = idx;
            } else {
                struct lbs_err e;
                cr_assert_eq(lbs_mask_cyclic_new(3, (int)i, n, kt, &cm, &e),
                             0);
                lbs_mask_cyclic_get(cm, t, &ci, &cnt);
                cr_assert_eq(cnt, n / (size_t)lround(1 / kt) +
                             (cnt > n / (size_t)lround(1 / kt)));
            }
            for (size_t j = 0; j < cnt; j++)
                exp[q][ci[j]] = 0;
            lbs_mask_cyclic_free(cm);
            cr_assert_eq(lbs_slamb_synced(o, i), cnt, "%s step %ld", mask,
                         t);
            cr_assert_eq(memcmp(lbs_slamb_staleness(o, i), exp[q],
                                n * sizeof(uint32_t)), 0,
                         "%s counters, step %ld layer %zu", mask, t, i);
        }
    }
    for (int q = 0; q < 2; q++)
        free(exp[q]);
    free(idx);
    lbs_optim_free(o);
    net_free(&a);
}

Test(slamb, kwarm_masks_follow_the_schedule)
{
    kwarm_masks("cyclic");
    kwarm_masks("bernoulli");
}

Test(slamb, kwarm_blend_matches_model)
{
    /* k = 0.25: stages 0.5, 0.5, then k; counters until step 6, chunk
     * ids from step 7 - the model sees both */
    model_vs_slamb("slamb:k=0.25,beta3=0.9,kwarm=1", 1, 0);
    model_vs_slamb("slamb:k=0.25,beta3=0.9,kwarm=1,H=1000", 4, 0);
    model_vs_slamb("slamb:k=0.1,beta3=0.9,kwarm=2,mask=bernoulli", 1, 0);
}

/* With the warm-up off - kwarm=0, or a k no stage exceeds - the run is
 * the one without the key, bit for bit. */
static void kwarm_off(const char *with, const char *without)
{
    struct net a, b;
    net_make(&a, 5);
    net_copy(&b, &a);
    struct lbs_optim *o1 = mk(with, &a, NULL), *o2 = mk(without, &b, NULL);
    for (long t = 1; t <= 25; t++) {
        net_grad(&a, t, 0);
        net_grad(&b, t, 0);
        step(o1);
        step(o2);
        same_w(&a, &b, t, with);
    }
    lbs_optim_free(o1);
    lbs_optim_free(o2);
    net_free(&a);
    net_free(&b);
}

Test(slamb, kwarm_off_changes_nothing)
{
    kwarm_off("slamb:k=0.1,kwarm=0", "slamb:k=0.1");
    kwarm_off("slamb:k=0.5,kwarm=3", "slamb:k=0.5");
    kwarm_off("slamb:k=0.6,kwarm=1,mask=bernoulli", "slamb:k=0.6,mask=bernoulli");
}

/* ... and with it on, the run differs from the one without (the test
 * above could not fail if the key were ignored). */
Test(slamb, kwarm_on_changes_the_run)
{
    struct net a, b;
    net_make(&a, 5);
    net_copy(&b, &a);
    struct lbs_optim *o1 = mk("slamb:k=0.1,kwarm=1", &a, NULL),
                     *o2 = mk("slamb:k=0.1", &b, NULL);
    net_grad(&a, 1, 0);
    net_grad(&b, 1, 0);
    step(o1);
    step(o2);
    cr_expect_eq(lbs_slamb_synced(o1, 0), a.L[0].n / 2);
    cr_expect_eq(lbs_slamb_synced(o2, 0), a.L[0].n / 10);
    lbs_optim_free(o1);
    lbs_optim_free(o2);
    net_free(&a);
    net_free(&b);
}

Test(slamb, wrong_optimizer_hooks_return_nothing)
{
    struct net a;
    net_make(&a, 2);
    struct lbs_optim *o = mk("lamb", &a, NULL);
    cr_assert_null(lbs_slamb_momentum(o, 0));
    cr_assert_null(lbs_onebit_lamb_momentum(o, 0));
    cr_assert_eq(lbs_onebit_lamb_compressing(o), -1);
    lbs_optim_free(o);
    net_free(&a);
}

/* ---------------------------------------------------------- bad keys */

static void bad(const char *spec, int code, const char *needle)
{
    struct net a;
    net_make(&a, 2);
    struct lbs_optim *o = NULL;
    struct lbs_err e = {{0}};
    int rc = lbs_optim_new(spec, a.L, a.nl, NULL, &o, &e);
    cr_assert_eq(rc, code, "'%s' gave %d (%s)", spec, rc, e.msg);
    cr_assert_null(o);
    cr_assert(strstr(e.msg, needle), "'%s' -> '%s' lacks '%s'", spec, e.msg,
              needle);
    net_free(&a);
}

Test(slamb, bad_keys_name_the_key)
{
    bad("slamb:k=0", -EINVAL, "'k'");
    bad("slamb:k=1.5", -EINVAL, "'k'");
    bad("slamb:k=-0.1", -EINVAL, "'k'");
    bad("slamb:beta3=1", -EINVAL, "'beta3'");
    bad("slamb:beta3=-0.5", -EINVAL, "'beta3'");
    bad("slamb:H=0", -EINVAL, "'H'");
    bad("slamb:H=2.5", -EINVAL, "'H'");
    bad("slamb:mask=topk", -EINVAL, "'mask'");
    bad("slamb:small=-1", -EINVAL, "'small'");
    bad("slamb:cmin=5,cmax=2", -EINVAL, "cmin");
    bad("slamb:freeze_step=10", -ENOENT, "'freeze_step'");
    bad("slamb:momentum=0.9", -ENOENT, "'momentum'");
    bad("onebit_lamb:freeze_step=0", -EINVAL, "'freeze_step'");
    bad("onebit_lamb:factor_min=0", -EINVAL, "'factor_min'");
    bad("onebit_lamb:factor_max=0.5", -EINVAL, "'factor_max'");
    bad("onebit_lamb:coeff_beta=1", -EINVAL, "'coeff_beta'");
    bad("onebit_lamb:k=0.1", -ENOENT, "'k'");
    bad("onebit_lamb:beta3=0.99", -ENOENT, "'beta3'");
}

Test(slamb, registered_with_help)
{
    int have_s = 0, have_o = 0;
    for (const char *const *n = lbs_optim_names(); *n; n++) {
        have_s |= !strcmp(*n, "slamb");
        have_o |= !strcmp(*n, "onebit_lamb");
    }
    cr_assert(have_s && have_o);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(lbs_optim_help("slamb", f), 0);
    cr_assert_eq(lbs_optim_help("onebit_lamb", f), 0);
    fclose(f);
    const char *keys[] = {"lr", "b1", "b2", "eps", "wd", "k", "beta3", "H",
                          "cmin", "cmax", "small", "mask", "seed",
                          "freeze_step", "coeff_beta", "factor_max",
                          "factor_min", "factor_threshold"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, " %s ", keys[i]);
        cr_assert(strstr(buf, pat), "help lacks key %s:\n%s", keys[i], buf);
    }
    free(buf);
}

/* ------------------------------------------------------- 1-bit LAMB */

Test(onebit_lamb, warmup_equals_lamb)
{
    struct net a, b;
    net_make(&a, 5);
    net_copy(&b, &a);
    struct lbs_optim *o1 = mk("onebit_lamb:freeze_step=6", &a, NULL);
    struct lbs_optim *ol = mk("lamb:bias_correction=0,cmin=0.01,cmax=10",
                              &b, NULL);
    for (long t = 1; t <= 6; t++) {
        net_grad(&a, t, 0);
        net_grad(&b, t, 0);
        cr_assert_eq(lbs_onebit_lamb_compressing(o1), 0);
        step(o1);
        step(ol);
        same_w(&a, &b, t, "onebit_lamb warm-up");
    }
    cr_assert_eq(lbs_onebit_lamb_compressing(o1), 1);
    /* the EMA of the trust ratio was tracked for the >=2-D layers only */
    cr_assert(lbs_onebit_lamb_coeff_freeze(o1, 0) > 0);
    cr_assert(lbs_onebit_lamb_coeff_freeze(o1, 1) == 0);
    /* compressed steps on one rank: no compression, still sane */
    for (long t = 7; t <= 12; t++) {
        net_grad(&a, t, 0);
        step(o1);
    }
    for (size_t i = 0; i < a.nl; i++)
        for (size_t j = 0; j < a.L[i].n; j++)
            cr_assert(isfinite(a.L[i].w[j]));
    cr_assert_eq(lbs_onebit_lamb_step_bytes(o1), 0);
    lbs_optim_free(o1);
    lbs_optim_free(ol);
    net_free(&a);
    net_free(&b);
}

Test(onebit_lamb, warmup_equals_lamb_with_options)
{
    struct net a, b;
    net_make(&a, 5);
    net_copy(&b, &a);
    struct lbs_optim *o1 = mk("onebit_lamb:freeze_step=5,bias_correction=1,"
                              "exclude_1d=0,wd=0.1,cmin=0.5,cmax=3,lr=0.02",
                              &a, NULL);
    struct lbs_optim *ol = mk("lamb:bias_correction=1,exclude_1d=0,wd=0.1,"
                              "cmin=0.5,cmax=3,lr=0.02", &b, NULL);
    for (long t = 1; t <= 5; t++) {
        net_grad(&a, t, 0);
        net_grad(&b, t, 0);
        step(o1);
        step(ol);
        same_w(&a, &b, t, "onebit_lamb warm-up (options)");
    }
    lbs_optim_free(o1);
    lbs_optim_free(ol);
    net_free(&a);
    net_free(&b);
}

/* Bytes passed to the comm per step: the warm-up averages every layer
 * (4 n); a compressed step passes n_pad/8 (alltoall) + 4 + n_pad/(8P) + 4
 * with n_pad = n rounded up to a multiple of 8P. */
static void onebit_bytes(int P)
{
    struct net a;
    net_make(&a, 5);
    struct lbs_comm fc;
    struct fake f;
    fake_init(&fc, &f, P);
    struct lbs_optim *o = mk("onebit_lamb:freeze_step=3", &a, &fc);
    size_t n = 0;
    for (size_t i = 0; i < a.nl; i++)
        n += a.L[i].n;
    const size_t npad = (n + 8 * (size_t)P - 1) / (8 * (size_t)P) * 8 * P;
    const size_t expect = npad / 8 + 4 + npad / (8 * (size_t)P) + 4;
    for (long t = 1; t <= 8; t++) {
        net_grad(&a, t, 0);
        size_t before = f.bytes;
        step(o);
        size_t got = f.bytes - before;
        if (t <= 3)   /* the driver's finite flag + the dense average */
            cr_assert_eq(got, 4 + 4 * n, "P=%d warm-up step %ld", P, t);
        else
            cr_assert_eq(got, 4 + expect, "P=%d step %ld: %zu bytes, "
                         "formula %zu + 4", P, t, got, expect);
    }
    cr_assert_eq((size_t)lbs_onebit_lamb_step_bytes(o), expect);
    /* ~1/32 of the dense payload (send side), 1/16 counting receives */
    cr_assert(expect < 4 * n / 16, "%zu vs dense %zu", expect, 4 * n);
    for (size_t i = 0; i < a.nl; i++)
        for (size_t j = 0; j < a.L[i].n; j++)
            cr_assert(isfinite(a.L[i].w[j]));
    lbs_optim_free(o);
    net_free(&a);
}

Test(onebit_lamb, compressed_bytes_match_formula)
{
    onebit_bytes(4);
    onebit_bytes(3);   /* n not a multiple of 8P: padding */
}

/* SLAMB's bytes per step on the fake comm: the finite flag, 4 |S| per
 * layer, and every H-th step (t = 1, H+1, ...) the dense parameters. */
Test(slamb, bytes_per_step)
{
    struct net a;
    net_make(&a, 5);
    struct lbs_comm fc;
    struct fake f;
    fake_init(&fc, &f, 4);
    struct lbs_optim *o = mk("slamb:k=0.1,H=4", &a, &fc);
    size_t n = 0;
    for (size_t i = 0; i < a.nl; i++)
        n += a.L[i].n;
    for (long t = 1; t <= 9; t++) {
        net_grad(&a, t, 0);
        size_t before = f.bytes;
        step(o);
        size_t expect = 4;
        for (size_t i = 0; i < a.nl; i++)
            expect += 4 * lbs_slamb_synced(o, i);
        if ((t - 1) % 4 == 0)
            expect += 4 * n;
        cr_assert_eq(f.bytes - before, expect, "step %ld", t);
    }
    lbs_optim_free(o);
    net_free(&a);
}

/* 1-bit LAMB on one rank (no compression there, as DeepSpeed) against a
 * double-precision model of the whole algorithm: warm-up LAMB with the
 * trust-ratio EMA, then frozen v, v_fresh from the reconstructed gradient,
 * the scaling factor max(d/d') (blended by ||p||/||u|| when wd > 0),
 * bounded to [factor_min, factor_max] and to +-factor_threshold per step.
 * After the warm-up the gradients shrink 10x, so v_fresh falls below the
 * frozen v, d/d' grows and the factor climbs by the threshold each step
 * until factor_max stops it. */
struct ob_model {
    size_t n;
    double *w, *m, *v, *vf, ema, last;
};

static void onebit_vs_model(const char *spec, double wd, double b2,
                            double shrink)
{
    const double lr = 0.01, b1 = 0.9, eps = 1e-6;
    const double f_lo = 0.5, f_hi = 4, th = 0.1;
    const long F = 4;
    struct net a;
    net_make(&a, 5);
    struct lbs_optim *o = mk(spec, &a, NULL);
    struct ob_model M[MAXL];
    for (size_t i = 0; i < a.nl; i++) {
        size_t n = a.L[i].n;
        M[i] = (struct ob_model){n, calloc(n, 8), calloc(n, 8), calloc(n, 8),
                                 calloc(n, 8), 0, 1};
        for (size_t j = 0; j < n; j++)
            M[i].w[j] = a.L[i].w[j];
    }
    int hit_threshold = 0, hit_max = 0;
    for (long t = 1; t <= 24; t++) {
        net_grad(&a, t, 0);
        if (t > F)
            for (size_t i = 0; i < a.nl; i++)
                for (size_t j = 0; j < a.L[i].n; j++)
                    a.L[i].g[j] *= (float)shrink;
        step(o);
        for (size_t i = 0; i < a.nl; i++) {
            struct ob_model *q = &M[i];
            const struct lbs_layer *L = &a.L[i];
            int plain = L->ndim == 1;
            double w_d = plain ? 0 : wd, ww = 0, uu = 0, pp = 0, fm = 0;
            double *u = malloc(q->n * 8);
            for (size_t j = 0; j < q->n; j++) {
                double g = L->g[j];
                if (t <= F) {
                    q->m[j] = b1 * q->m[j] + (1 - b1) * g;
                    q->v[j] = b2 * q->v[j] + (1 - b2) * g * g;
                    u[j] = q->m[j] / (sqrt(q->v[j]) + eps) + w_d * q->w[j];
                } else {
                    double mn = b1 * q->m[j] + (1 - b1) * g;
                    double gr = (mn - b1 * q->m[j]) / (1 - b1);
                    q->vf[j] = b2 * q->vf[j] + (1 - b2) * gr * gr;
                    q->m[j] = mn;
                    double d = sqrt(q->v[j]) + eps;
                    fm = fmax(fm, d / (sqrt(q->vf[j]) + eps));
                    double p = mn / d;
                    u[j] = p + w_d * q->w[j];
                    pp += p * p;
                }
                ww += q->w[j] * q->w[j];
                uu += u[j] * u[j];
            }
            double coeff;
            if (t <= F) {
                coeff = plain ? 1 : ww > 0 && uu > 0 ? sqrt(ww / uu) : 1;
                coeff = fmin(10, fmax(0.01, coeff));
                if (!plain && coeff != 1)
                    q->ema = 0.9 * q->ema + 0.1 * coeff;
                if (t == F)
                    memcpy(q->vf, q->v, q->n * 8);
            } else if (plain) {
                coeff = 1;
            } else {
                double f = fm;
                if (w_d > 0) {
                    double r = fmin(1, sqrt(pp) / sqrt(uu));
                    f = f * r + (1 - r);
                }
                f = fmin(f_hi, fmax(f_lo, f));
                double hi = q->last * (1 + th), lo = q->last * (1 - th);
                hit_threshold |= f > hi * (1 + 1e-9);
                f = f > hi ? hi : f < lo ? lo : f;
                hit_max |= f == f_hi;
                q->last = f;
                coeff = q->ema * f;
                double got = lbs_onebit_lamb_factor(o, i);
                cr_assert(fabs(got - f) <= 1e-4 * f, "%s step %ld %s: "
                          "factor %.8g, model %.8g", spec, t, L->name, got,
                          f);
                cr_assert(got >= f_lo && got <= f_hi);
            }
            for (size_t j = 0; j < q->n; j++) {
                q->w[j] -= lr * coeff * u[j];
                double d = fabs(L->w[j] - q->w[j]);
                cr_assert(d <= 1e-5 * fmax(1e-2, fabs(q->w[j])),
                          "%s step %ld %s[%zu]: %.9g vs model %.9g", spec, t,
                          L->name, j, L->w[j], q->w[j]);
            }
            free(u);
        }
        if (t == F)
            for (size_t i = 0; i < a.nl; i++)
                cr_assert(fabs(lbs_onebit_lamb_coeff_freeze(o, i) - M[i].ema)
                          <= 1e-6 * fmax(1, M[i].ema));
    }
    if (shrink < 1)
        cr_assert(hit_threshold && hit_max, "%s: threshold %d, max %d", spec,
                  hit_threshold, hit_max);
    for (size_t i = 0; i < a.nl; i++) {
        free(M[i].w);
        free(M[i].m);
        free(M[i].v);
        free(M[i].vf);
    }
    lbs_optim_free(o);
    net_free(&a);
}

Test(onebit_lamb, compressed_phase_matches_model)
{
    onebit_vs_model("onebit_lamb:freeze_step=4,wd=0,b2=0.5", 0, 0.5, 0.1);
    onebit_vs_model("onebit_lamb:freeze_step=4,wd=0.01,b2=0.5", 0.01, 0.5,
                    0.1);
    onebit_vs_model("onebit_lamb:freeze_step=4,wd=0.5,b2=0.9", 0.5, 0.9, 1);
}
