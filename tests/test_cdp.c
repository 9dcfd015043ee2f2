/* test_cdp.c - compressed data parallelism: a compressor between the
 * backward pass and any data-parallel optimizer (lbs_optim_set_compressor).
 *
 *  - with the `none` compressor every dense optimizer's weights (and the
 *    averaged gradients) are bit-identical to the uncompressed optimizer;
 *  - with error feedback on one rank, the sum over steps of the applied
 *    (averaged) gradient equals the sum of the gradients minus the final
 *    residual, to float rounding, for several compressors;
 *  - refusals: optimizers that communicate themselves (-EINVAL, the message
 *    names the compressor and the optimizer), unknown compressor / key
 *    (-ENOENT), ef=1 where it makes no sense, a compressor set after the
 *    first step;
 *  - a step skipped for a NaN gradient resets the residual memory, and the
 *    next finite step is applied.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/lbscale.h"

enum { NL = 3 };
static const size_t dims[NL][2] = {{64, 300}, {300, 1}, {300, 300}};

struct net {
    struct lbs_layer l[NL];
    float *w[NL], *g[NL];
};

static float uni(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) / 9007199254740992.0 - 0.5);
}

static void net_init(struct net *m)
{
    uint64_t s = 42;
    for (int i = 0; i < NL; i++) {
        size_t n = dims[i][0] * dims[i][1];
        m->w[i] = malloc(n * sizeof(float));
        m->g[i] = calloc(n, sizeof(float));
        cr_assert(m->w[i] && m->g[i]);
        for (size_t j = 0; j < n; j++)
            m->w[i][j] = uni(&s);
        m->l[i] = (struct lbs_layer){.name = "l", .w = m->w[i], .g = m->g[i],
                                     .n = n, .ndim = dims[i][1] > 1 ? 2 : 1,
                                     .shape = {dims[i][0], dims[i][1]}};
        if (dims[i][1] == 1)
            m->l[i].shape[1] = 0;
    }
}

static void net_free(struct net *m)
{
    for (int i = 0; i < NL; i++) {
        free(m->w[i]);
        free(m->g[i]);
    }
}

/* Gradients of step t (same on every call with the same t). */
static void fill(struct net *m, long t)
{
    uint64_t s = 1000 + (uint64_t)t;
    for (int i = 0; i < NL; i++)
        for (size_t j = 0; j < m->l[i].n; j++)
            m->g[i][j] = uni(&s) * (float)(1 + i);
}

static struct lbs_optim *mk(struct net *m, const char *spec, const char *cmp)
{
    struct lbs_optim *o;
    struct lbs_err e;
    int rc = lbs_optim_new(spec, m->l, NL, NULL, &o, &e);
    cr_assert_eq(rc, 0, "%s: %s", spec, e.msg);
    if (cmp) {
        rc = lbs_optim_set_compressor(o, cmp, &e);
        cr_assert_eq(rc, 0, "%s + %s: %s", spec, cmp, e.msg);
        cr_assert_str_eq(lbs_optim_compressor_spec(o), cmp);
    } else {
        cr_assert_null(lbs_optim_compressor_spec(o));
    }
    return o;
}

Test(cdp, none_is_bit_identical)
{
    static const char *const opts[] = {
        "sgd:lr=0.1,momentum=0.9", "lars", "lamb:lr=0.01,wd=0.01", "adamw",
        "jointspar", "jointspar_lars",
    };
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++) {
        struct net a, b;
        net_init(&a);
        net_init(&b);
        struct lbs_optim *oa = mk(&a, opts[k], NULL);
        struct lbs_optim *ob = mk(&b, opts[k], "none");
        struct lbs_err e;
        for (long t = 1; t <= 5; t++) {
            fill(&a, t);
            fill(&b, t);
            cr_assert_eq(lbs_optim_step(oa, &e), 0, "%s", e.msg);
            cr_assert_eq(lbs_optim_step(ob, &e), 0, "%s", e.msg);
            for (int i = 0; i < NL; i++) {
                size_t n = a.l[i].n * sizeof(float);
                cr_assert(!memcmp(a.g[i], b.g[i], n),
                          "%s step %ld layer %d: gradients differ", opts[k],
                          t, i);
                cr_assert(!memcmp(a.w[i], b.w[i], n),
                          "%s step %ld layer %d: weights differ", opts[k], t,
                          i);
            }
        }
        lbs_optim_free(oa);
        lbs_optim_free(ob);
        net_free(&a);
        net_free(&b);
    }
}

Test(cdp, error_feedback_conserves_the_gradient)
{
    static const char *const cmps[] = {
        "topk:k=0.05,ef=1", "sign:ef=1", "randk:k=0.1,ef=1", "qsgd:ef=1",
        "thresh:k=0.05,ef=1", "powersgd:r=2,ef=1",
    };
    enum { STEPS = 6 };
    for (size_t k = 0; k < sizeof cmps / sizeof *cmps; k++) {
        struct net m;
        net_init(&m);
        struct lbs_optim *o = mk(&m, "lamb:lr=0.001", cmps[k]);
        double *sg[NL], *sa[NL], *sabs[NL];
        for (int i = 0; i < NL; i++) {
            sg[i] = calloc(m.l[i].n, sizeof(double));
            sa[i] = calloc(m.l[i].n, sizeof(double));
            sabs[i] = calloc(m.l[i].n, sizeof(double));
        }
        struct lbs_err e;
        int changed = 0;
        for (long t = 1; t <= STEPS; t++) {
            fill(&m, t);
            for (int i = 0; i < NL; i++)
                for (size_t j = 0; j < m.l[i].n; j++) {
                    sg[i][j] += m.g[i][j];
                    sabs[i][j] += fabs(m.g[i][j]);
                }
            float before = m.g[2][7];
            cr_assert_eq(lbs_optim_step(o, &e), 0, "%s", e.msg);
            changed |= m.g[2][7] != before;
            for (int i = 0; i < NL; i++)
                for (size_t j = 0; j < m.l[i].n; j++)
                    sa[i][j] += m.g[i][j];   /* what the optimizer got */
        }
        cr_assert(changed, "%s: the gradient was not compressed", cmps[k]);
        const struct lbs_compressor *c = lbs_optim_compressor(o);
        cr_assert_not_null(c);
        double worst = 0;
        for (int i = 0; i < NL; i++) {
            size_t rn;
            const float *r = lbs_compress_residual(c, i, &rn);
            cr_assert_not_null(r, "%s: no residual for layer %d", cmps[k], i);
            cr_assert_eq(rn, m.l[i].n);
            for (size_t j = 0; j < rn; j++) {
                double d = fabs(sa[i][j] - (sg[i][j] - r[j]));
                double tol = 1e-5 * (sabs[i][j] + fabs(r[j])) * STEPS + 1e-6;
                if (d / tol > worst)
                    worst = d / tol;
                cr_assert(d <= tol, "%s layer %d [%zu]: applied %.9g, "
                          "grads - residual %.9g", cmps[k], i, j, sa[i][j],
                          sg[i][j] - r[j]);
            }
        }
        for (int i = 0; i < NL; i++) {
            free(sg[i]);
            free(sa[i]);
            free(sabs[i]);
        }
        lbs_optim_free(o);
        net_free(&m);
    }
}

Test(cdp, refusals)
{
    struct net m;
    net_init(&m);
    struct lbs_err e;
    /* every optimizer that does its own communication (the registry's
     * props), so a new one is covered with no edit */
    int own = 0;
    for (const char *const *n = lbs_optim_names(); *n; n++) {
        struct lbs_optim_props p;
        struct lbs_optim *o;
        cr_assert_eq(lbs_optim_props(*n, &p, &e), 0, "%s", e.msg);
        if (!p.own_comm)
            continue;
        own++;
        cr_assert_eq(lbs_optim_new(*n, m.l, NL, NULL, &o, &e), 0, "%s",
                     e.msg);
        cr_assert_eq(lbs_optim_set_compressor(o, "topk:k=0.01,ef=1", &e),
                     -EINVAL);
        cr_assert(strstr(e.msg, *n) && strstr(e.msg, "topk") &&
                  !strchr(e.msg, '\n'), "%s", e.msg);
        cr_assert_null(lbs_optim_compressor(o));
        lbs_optim_free(o);
    }
    cr_assert_gt(own, 0, "no optimizer with its own communication");
    struct lbs_optim *o = mk(&m, "lamb", NULL);
    cr_assert_eq(lbs_optim_set_compressor(o, "zip", &e), -ENOENT);
    cr_assert(strstr(e.msg, "zip"), "%s", e.msg);
    cr_assert_eq(lbs_optim_set_compressor(o, "topk:zz=1", &e), -ENOENT);
    cr_assert(strstr(e.msg, "zz"), "%s", e.msg);
    cr_assert_eq(lbs_optim_set_compressor(o, "none:ef=1", &e), -EINVAL);
    cr_assert_eq(lbs_optim_set_compressor(o, "fp16:ef=1", &e), -EINVAL);
    cr_assert_eq(lbs_optim_set_compressor(o, "topk:k=0", &e), -EINVAL);
    cr_assert_null(lbs_optim_compressor(o), "a refused spec left one set");
    /* set, replace, remove: all before the first step */
    cr_assert_eq(lbs_optim_set_compressor(o, "sign", &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_optim_set_compressor(o, "fp16", &e), 0, "%s", e.msg);
    cr_assert_str_eq(lbs_optim_compressor_spec(o), "fp16");
    cr_assert_eq(lbs_optim_set_compressor(o, NULL, &e), 0, "%s", e.msg);
    cr_assert_null(lbs_optim_compressor(o));
    fill(&m, 1);
    cr_assert_eq(lbs_optim_step(o, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_optim_set_compressor(o, "topk", &e), -EINVAL);
    cr_assert(strstr(e.msg, "before the first step"), "%s", e.msg);
    lbs_optim_free(o);
    net_free(&m);
}

Test(cdp, nan_step_resets_the_memory)
{
    struct net m;
    net_init(&m);
    struct lbs_optim *o = mk(&m, "sgd:lr=0.01", "topk:k=0.05,ef=1");
    const struct lbs_compressor *c = lbs_optim_compressor(o);
    struct lbs_err e;
    size_t rn;
    fill(&m, 1);
    cr_assert_eq(lbs_optim_step(o, &e), 0, "%s", e.msg);
    cr_assert_not_null(lbs_compress_residual(c, 0, &rn));
    fill(&m, 2);
    m.g[1][3] = NAN;
    cr_assert_eq(lbs_optim_step(o, &e), 1, "%s", e.msg);
    cr_assert_eq(lbs_optim_skipped(o), 1);
    for (int i = 0; i < NL; i++)
        cr_assert_null(lbs_compress_residual(c, i, &rn),
                       "layer %d kept its residual after a skipped step", i);
    fill(&m, 3);
    cr_assert_eq(lbs_optim_step(o, &e), 0, "%s", e.msg);
    for (int i = 0; i < NL; i++)
        for (size_t j = 0; j < m.l[i].n; j++)
            cr_assert(isfinite(m.w[i][j]) && isfinite(m.g[i][j]));
    lbs_optim_free(o);
    net_free(&m);
}
