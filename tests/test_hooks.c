/* test_hooks.c - the questions the ops tables answer without layers, and
 * their GPU hooks, against what the optimizers and compressors do.
 *
 *   - lbs_optim_check / lbs_compressor_check give exactly the code and
 *     message of lbs_optim_new (on real layers) / lbs_compressor_new, for
 *     every registered one, on specs made from its own key table: good,
 *     unknown key, malformed and out-of-range values, cross-key rules.
 *   - props match behaviour: a dense optimizer under the record backend
 *     allreduces every kept layer's gradient (its size, fp32), own_comm
 *     ones refuse a compressor, samples_layers ones drop layers; a
 *     compressor's exchange moves its declared collective, ef_ok says
 *     whether ef=1 is taken.
 *   - the device hooks: each optimizer's and compressor's mapping of its
 *     parsed config gives, key by key, what the parser stored; the GPU
 *     bytes model equals the CPU's except where the optimizer's file says
 *     why not (SLAMB with cyclic masks).
 * All of it iterates the registries, so a new optimizer or compressor is
 * covered without editing this file.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/comm.h"
#include "lbscale/compress.h"
#include "lbscale/optim.h"

/* ---- specs from a key table ---- */

#define MAXSPEC 64
struct specs {
    char s[MAXSPEC][160];
    int bad[MAXSPEC];   /* 1: must be refused */
    int n;
};

static void add(struct specs *sp, int bad, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(struct specs *sp, int bad, const char *fmt, ...)
{
    cr_assert(sp->n < MAXSPEC);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sp->s[sp->n], sizeof sp->s[0], fmt, ap);
    va_end(ap);
    sp->bad[sp->n++] = bad;
}

static int has_key(const struct lbs_param_spec *t, const char *key)
{
    for (; t->key; t++)
        if (!strcmp(t->key, key))
            return 1;
    return 0;
}

/* name, name:<every key at its default>, unknown key, malformed value and
 * values out of range for each key. */
static void make_specs(const char *name, const struct lbs_param_spec *t,
                       struct specs *sp)
{
    sp->n = 0;
    add(sp, 0, "%s", name);
    add(sp, 1, "%s:no_such_key=1", name);
    for (const struct lbs_param_spec *p = t; p->key; p++) {
        switch (p->type) {
        case LBS_P_BOOL:
            add(sp, 0, "%s:%s=%d", name, p->key, p->def == 0);
            add(sp, 1, "%s:%s=2", name, p->key);
            break;
        case LBS_P_ENUM:
            add(sp, 0, "%s:%s=%s", name, p->key, p->choices[0]);
            add(sp, 1, "%s:%s=no_such_choice", name, p->key);
            break;
        default:
            add(sp, 0, "%s:%s=%.17g", name, p->key, p->def);
            add(sp, 1, "%s:%s=abc", name, p->key);
            if (isfinite(p->min))
                add(sp, 1, "%s:%s=%.17g", name, p->key, p->min - 1);
            if (isfinite(p->max) && p->max < 1e15)
                add(sp, 1, "%s:%s=%.17g", name, p->key, p->max + 1);
            break;
        }
    }
}

/* ---- a real model ---- */

#define NL 8
struct model {
    struct lbs_layer l[NL];
    float *buf;
};

static void model_make(struct model *m)
{
    /* 2-D layers above slamb's default small (9000), biases below */
    static const size_t rows[NL] = {100, 100, 64, 64, 128, 128, 40, 40};
    static const size_t cols[NL] = {100, 0, 160, 0, 90, 0, 30, 0};
    size_t total = 0;
    for (int i = 0; i < NL; i++)
        total += rows[i] * (cols[i] ? cols[i] : 1);
    m->buf = malloc(2 * total * sizeof *m->buf);
    cr_assert(m->buf);
    float *p = m->buf;
    for (int i = 0; i < NL; i++) {
        struct lbs_layer *L = &m->l[i];
        memset(L, 0, sizeof *L);
        L->name = cols[i] ? "w" : "b";
        L->ndim = cols[i] ? 2 : 1;
        L->shape[0] = rows[i];
        L->shape[1] = cols[i];
        L->n = rows[i] * (cols[i] ? cols[i] : 1);
        L->w = p;
        L->g = p + L->n;
        for (size_t j = 0; j < L->n; j++) {
            L->w[j] = 0.01f * (float)((j * 7 + (size_t)i) % 13) - 0.06f;
            L->g[j] = 0.001f * (float)((j * 5 + (size_t)i) % 11) - 0.005f;
        }
        p += 2 * L->n;
    }
}

/* ---- check == new ---- */

static void optim_same(const char *spec, const char *cmp, int bad,
                       struct model *m)
{
    struct lbs_err a = {{0}}, b = {{0}};
    struct lbs_optim *o = NULL;
    int rc_check = lbs_optim_check(spec, cmp, &a);
    int rc_new = lbs_optim_new(spec, m->l, NL, NULL, &o, &b);
    if (!rc_new && cmp)
        rc_new = lbs_optim_set_compressor(o, cmp, &b);
    lbs_optim_free(o);
    cr_expect_eq(rc_check, rc_new, "%s [%s]: check %d '%s', new %d '%s'",
                 spec, cmp ? cmp : "", rc_check, a.msg, rc_new, b.msg);
    if (rc_new)
        cr_expect_str_eq(a.msg, b.msg, "%s [%s]", spec, cmp ? cmp : "");
    if (bad)
        cr_expect_neq(rc_new, 0, "%s [%s] was accepted", spec,
                      cmp ? cmp : "");
    else if (!cmp)
        cr_expect_eq(rc_new, 0, "%s: %s", spec, b.msg);
}

Test(hooks, optim_check_is_new)
{
    struct model m;
    model_make(&m);
    int n = 0;
    for (const char *const *nm = lbs_optim_names(); *nm; nm++, n++) {
        struct lbs_optim_props p;
        cr_assert_eq(lbs_optim_props(*nm, &p, NULL), 0, "%s", *nm);
        struct specs sp;
        make_specs(*nm, p.params, &sp);
        if (has_key(p.params, "cmin") && has_key(p.params, "cmax"))
            add(&sp, 1, "%s:cmin=2,cmax=1", *nm);
        if (has_key(p.params, "pmin") && has_key(p.params, "s"))
            add(&sp, 1, "%s:s=0.1,pmin=0.5", *nm);
        /* a key of another optimizer */
        add(&sp, !has_key(p.params, "beta3"), "%s:beta3=0.5", *nm);
        for (int i = 0; i < sp.n; i++)
            optim_same(sp.s[i], NULL, sp.bad[i], &m);
        /* with a compressor: the data-parallel rule, then its own check */
        optim_same(*nm, "topk:k=0.1", p.own_comm, &m);
        optim_same(*nm, "topk:k=2", 1, &m);
        optim_same(*nm, "nosuch", 1, &m);
    }
    cr_expect_gt(n, 5);
    free(m.buf);
}

Test(hooks, compressor_check_is_new)
{
    int n = 0;
    for (const char *const *nm = lbs_compressor_names(); *nm; nm++, n++) {
        struct lbs_compressor_props p;
        cr_assert_eq(lbs_compressor_props(*nm, &p, NULL), 0, "%s", *nm);
        struct specs sp;
        make_specs(*nm, p.params, &sp);
        add(&sp, !p.ef_ok, "%s:ef=1", *nm);
        add(&sp, 1, "%s:ef=2", *nm);
        if (has_key(p.params, "lower") && has_key(p.params, "upper"))
            add(&sp, 0, "%s:lower=1,upper=1", *nm);
        for (int i = 0; i < sp.n; i++) {
            struct lbs_err a = {{0}}, b = {{0}};
            struct lbs_compressor *c = NULL;
            int rc_check = lbs_compressor_check(sp.s[i], &a);
            int rc_new = lbs_compressor_new(sp.s[i], &c, &b);
            lbs_compressor_free(c);
            cr_expect_eq(rc_check, rc_new, "%s: check %d '%s', new %d '%s'",
                         sp.s[i], rc_check, a.msg, rc_new, b.msg);
            if (rc_new)
                cr_expect_str_eq(a.msg, b.msg, "%s", sp.s[i]);
            cr_expect_eq(rc_new != 0, sp.bad[i], "%s: %d '%s'", sp.s[i],
                         rc_new, b.msg);
        }
    }
    cr_expect_gt(n, 5);
    struct lbs_err a, b;
    struct lbs_compressor *c = NULL;
    cr_expect_eq(lbs_compressor_check("nosuch", &a),
                 lbs_compressor_new("nosuch", &c, &b));
    cr_expect_str_eq(a.msg, b.msg);
}

/* ---- props against behaviour ---- */

/* One step under a record comm of 4 ranks: which layers got an fp32
 * allreduce of exactly their size at step 1. */
static void record_step(const char *spec, struct model *m, uint8_t *keep,
                        int *reduced)
{
    struct lbs_comm *rec;
    struct lbs_optim *o;
    struct lbs_err e;
    cr_assert_eq(lbs_comm_record_new(4, &rec, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_optim_new(spec, m->l, NL, rec, &o, &e), 0, "%s: %s",
                 spec, e.msg);
    lbs_optim_next_keep(o, keep);
    int rc = lbs_optim_step(o, &e);
    cr_assert(rc >= 0, "%s: %s", spec, e.msg);
    size_t cnt;
    const struct lbs_comm_record_entry *en = lbs_comm_record_entries(rec,
                                                                    &cnt);
    memset(reduced, 0, NL * sizeof *reduced);
    for (size_t j = 0; j < cnt; j++)
        if (en[j].kind == LBS_COLL_ALLREDUCE && en[j].dtype == LBS_FLOAT32 &&
            en[j].layer >= 0 && en[j].layer < NL &&
            en[j].count == m->l[en[j].layer].n &&
            en[j].bytes == 4 * m->l[en[j].layer].n)
            reduced[en[j].layer]++;
    lbs_optim_free(o);
    lbs_comm_free(rec);
}

Test(hooks, optim_props_match_behaviour)
{
    struct model m;
    model_make(&m);
    int dense = 0, sampling = 0;
    for (const char *const *nm = lbs_optim_names(); *nm; nm++) {
        struct lbs_optim_props p;
        struct lbs_err e;
        cr_assert_eq(lbs_optim_props(*nm, &p, NULL), 0);
        cr_expect_eq(p.own_comm, !p.dense, "%s", *nm);
        dense += p.dense;
        sampling += p.samples_layers;
        /* own_comm: a compressor is refused, by new and by check */
        struct lbs_optim *o;
        cr_assert_eq(lbs_optim_new(*nm, m.l, NL, NULL, &o, &e), 0);
        int rc = lbs_optim_set_compressor(o, "topk:k=0.1", &e);
        cr_expect_eq(rc, p.own_comm ? -EINVAL : 0, "%s: %d %s", *nm, rc,
                     e.msg);
        /* samples_layers: over 16 steps' plans some layer is dropped;
         * otherwise every layer is kept every time */
        uint8_t keep[NL];
        int dropped = 0;
        for (long t = 0; t < 16; t++) {
            lbs_optim_next_keep(o, keep);
            for (int i = 0; i < NL; i++)
                dropped += !keep[i];
            cr_assert(lbs_optim_step(o, &e) >= 0, "%s: %s", *nm, e.msg);
        }
        lbs_optim_free(o);
        if (p.samples_layers)
            cr_expect_gt(dropped, 0, "%s samples layers but kept all", *nm);
        else
            cr_expect_eq(dropped, 0, "%s dropped %d layers", *nm, dropped);
        /* dense: the kept layers' gradients, each one fp32 allreduce of
         * its size at the step; the dropped ones not at all */
        int red[NL];
        record_step(*nm, &m, keep, red);
        if (p.dense)
            for (int i = 0; i < NL; i++)
                cr_expect_eq(red[i], keep[i] ? 1 : 0, "%s layer %d: %d "
                             "allreduces (kept %d)", *nm, i, red[i],
                             keep[i]);
    }
    cr_expect_gt(dense, 2);
    cr_expect_gt(sampling, 0);
    free(m.buf);
}

Test(hooks, compressor_props_match_behaviour)
{
    enum { N = 4096 };
    float *g = malloc(N * sizeof *g);
    cr_assert(g);
    for (const char *const *nm = lbs_compressor_names(); *nm; nm++) {
        struct lbs_compressor_props p;
        struct lbs_err e;
        cr_assert_eq(lbs_compressor_props(*nm, &p, NULL), 0);
        char spec[64];
        snprintf(spec, sizeof spec, "%s%s", *nm, p.ef_ok ? ":ef=1" : "");
        struct lbs_compressor *c;
        struct lbs_comm *rec;
        cr_assert_eq(lbs_compressor_new(spec, &c, &e), 0, "%s: %s", spec,
                     e.msg);
        cr_expect_eq(lbs_compressor_collective(c), p.coll, "%s", spec);
        cr_expect_eq(lbs_compressor_ef(c), p.ef_ok, "%s", spec);
        cr_assert_eq(lbs_comm_record_new(2, &rec, &e), 0);
        for (size_t i = 0; i < N; i++)
            g[i] = 0.001f * (float)((i * 7) % 19) - 0.009f;
        cr_assert_eq(lbs_compress_exchange(c, rec, g, N, 0, 1, &e), 0,
                     "%s: %s", spec, e.msg);
        /* every call is the declared collective, or the 8-byte size
         * allgather ahead of an allgatherv */
        size_t cnt, nd = 0;
        const struct lbs_comm_record_entry *en =
            lbs_comm_record_entries(rec, &cnt);
        for (size_t j = 0; j < cnt; j++) {
            int size_call = p.coll == LBS_COLL_ALLGATHERV &&
                            en[j].kind == LBS_COLL_ALLGATHER &&
                            en[j].bytes == 8;
            nd += en[j].kind == p.coll;
            cr_expect(en[j].kind == p.coll || size_call, "%s: a %s call",
                      spec, lbs_coll_name(en[j].kind));
        }
        cr_expect_gt(nd, 0, "%s: no %s", spec, lbs_coll_name(p.coll));
        /* ef_ok: a residual is kept */
        size_t rn = 0;
        const float *r = lbs_compress_residual(c, 0, &rn);
        cr_expect_eq(r != NULL, p.ef_ok, "%s: residual %p", spec,
                     (const void *)r);
        lbs_comm_free(rec);
        lbs_compressor_free(c);
    }
    free(g);
}

/* ---- the device hooks ---- */

/* The kernels' hyperparameters by spec key (mask: Bernoulli = 1). */
static const struct {
    const char *key;
    size_t off;
} hp_keys[] = {
#define F(k) {#k, offsetof(struct lbs_optim_device_hp, k)}
    F(lr), F(b1), F(b2), F(eps), F(wd), F(bias_correction), F(cmin),
    F(cmax), F(clip), F(exclude_1d), F(clamp_1d), F(momentum), F(nesterov),
    F(k), F(beta3), F(H), F(small), F(seed), F(kwarm),
    {"mask", offsetof(struct lbs_optim_device_hp, bernoulli)},
#undef F
};
#define NHP (sizeof hp_keys / sizeof hp_keys[0])
/* keys a GPU kernel family does not read, with the reason */
static const char *const gpu_unused[] = {
    "slamb.avg",   /* one rank: the parameter average is the identity */
    NULL,
};

static double hp_at(const struct lbs_optim_device_hp *hp, size_t i)
{
    return *(const double *)((const char *)hp + hp_keys[i].off);
}

/* A legal value other than the default (for the mapping to show). */
static double other_value(const struct lbs_param_spec *p)
{
    switch (p->type) {
    case LBS_P_BOOL: return p->def == 0;
    case LBS_P_ENUM: return p->choices[(size_t)p->def + 1] ? p->def + 1 : 0;
    case LBS_P_INT: return p->def + 1 <= p->max ? p->def + 1 : p->def - 1;
    default:
        return isfinite(p->max) ? (p->def + p->max) / 2
                                : p->def * 2 + 0.375;
    }
}

Test(hooks, optim_device_hook_maps_every_key)
{
    int n = 0;
    for (const char *const *nm = lbs_optim_names(); *nm; nm++) {
        struct lbs_optim_props p;
        cr_assert_eq(lbs_optim_props(*nm, &p, NULL), 0);
        struct lbs_optim_config *c;
        struct lbs_optim_device_hp hp;
        struct lbs_err e;
        if (!p.device) {
            cr_assert_eq(lbs_optim_config_new(*nm, &c, &e), 0);
            cr_expect_eq(lbs_optim_config_device(c, &hp, &e), -ENOTSUP);
            cr_expect(strstr(e.msg, *nm), "%s", e.msg);
            lbs_optim_config_free(c);
            continue;
        }
        n++;
        cr_expect(p.device->hparams && p.device->bytes_per_elem, "%s", *nm);
        cr_expect(p.device->checks && p.device->checks[0], "%s", *nm);
        for (const struct lbs_param_spec *k = p.params; k->key; k++) {
            char full[64], spec[160];
            snprintf(full, sizeof full, "%s.%s", *nm, k->key);
            int unused = 0;
            for (const char *const *u = gpu_unused; *u; u++)
                unused |= !strcmp(*u, full);
            size_t i = 0;
            while (i < NHP && strcmp(hp_keys[i].key, k->key))
                i++;
            cr_expect(unused || i < NHP, "%s: no device field", full);
            if (unused || i == NHP)
                continue;
            double v = other_value(k);
            if (k->type == LBS_P_ENUM)
                snprintf(spec, sizeof spec, "%s:%s=%s", *nm, k->key,
                         k->choices[(size_t)v]);
            else
                snprintf(spec, sizeof spec, "%s:%s=%.17g", *nm, k->key, v);
            if (lbs_optim_config_new(spec, &c, &e))
                continue;    /* a cross-key rule: covered by the checks */
            cr_assert_eq(lbs_optim_config_device(c, &hp, &e), 0, "%s", spec);
            /* every key the optimizer has, as the parser stored it */
            for (size_t j = 0; j < NHP; j++) {
                double want;
                if (!lbs_optim_config_get(c, hp_keys[j].key, &want, NULL))
                    cr_expect_eq(hp_at(&hp, j), want, "%s: %s = %g, "
                                 "parsed %g", spec, hp_keys[j].key,
                                 hp_at(&hp, j), want);
            }
            cr_expect_eq(hp_at(&hp, i), v, "%s", spec);
            lbs_optim_config_free(c);
        }
        /* the neutral values of keys it lacks */
        cr_assert_eq(lbs_optim_config_new(*nm, &c, &e), 0);
        cr_assert_eq(lbs_optim_config_device(c, &hp, &e), 0);
        double want;
        if (lbs_optim_config_get(c, "cmax", &want, NULL))
            cr_expect_eq(hp.cmax, 1e300);
        if (lbs_optim_config_get(c, "bias_correction", &want, NULL))
            cr_expect_eq(hp.bias_correction, 1);
        if (lbs_optim_config_get(c, "clip", &want, NULL))
            cr_expect_eq(hp.clip, 0);
        lbs_optim_config_free(c);
    }
    cr_expect_gt(n, 0);
}

/* The GPU bytes model against the CPU's, on the same layers: equal, but
 * for SLAMB's cyclic layers (slamb.c says why). */
Test(hooks, optim_device_bytes_beside_cpu)
{
    struct model m;
    model_make(&m);
    for (const char *const *nm = lbs_optim_names(); *nm; nm++) {
        struct lbs_optim_props p;
        cr_assert_eq(lbs_optim_props(*nm, &p, NULL), 0);
        if (!p.device)
            continue;
        for (const char *const *s = p.device->checks; *s; s++) {
            struct lbs_optim_config *c;
            struct lbs_optim *o;
            struct lbs_err e;
            cr_assert_eq(lbs_optim_config_new(*s, &c, &e), 0, "%s", *s);
            cr_assert_eq(lbs_optim_new(*s, m.l, NL, NULL, &o, &e), 0);
            double gpu = lbs_optim_config_device_bytes(c, m.l, NL),
                   cpu = lbs_optim_bytes_per_elem(o);
            double mask = 0, k = 0, small = 0;
            int cyclic = !lbs_optim_config_get(c, "mask", &mask, NULL) &&
                         mask == 0;
            if (cyclic) {
                lbs_optim_config_get(c, "k", &k, NULL);
                lbs_optim_config_get(c, "small", &small, NULL);
                double np = 0, na = 0;
                for (int i = 0; i < NL; i++)
                    if (m.l[i].ndim > 1 && (double)m.l[i].n >= small)
                        np += (double)m.l[i].n;
                    else
                        na += (double)m.l[i].n;
                cr_expect_gt(np, 0, "%s: no partial layer", *s);
                double want_gpu = (np * (64 + 24 * k) + na * 48) / (np + na),
                       want_cpu = (np * (42 + 40 * k) + na * 48) /
                                  (np + na);
                cr_expect_float_eq(gpu, want_gpu + 4, 1e-12, "%s: %g", *s,
                                   gpu);
                cr_expect_float_eq(cpu, want_cpu + 4, 1e-12, "%s: %g", *s,
                                   cpu);
            } else {
                cr_expect_eq(gpu, cpu, "%s: GPU %g, CPU %g", *s, gpu, cpu);
            }
            lbs_optim_free(o);
            lbs_optim_config_free(c);
        }
    }
    free(m.buf);
}

Test(hooks, compressor_device_hook_maps_the_config)
{
    int n = 0;
    for (const char *const *nm = lbs_compressor_names(); *nm; nm++) {
        struct lbs_compressor_props p;
        cr_assert_eq(lbs_compressor_props(*nm, &p, NULL), 0);
        struct lbs_compressor *c;
        const struct lbs_compress_device *d;
        struct lbs_compress_device_hp hp;
        struct lbs_err e;
        if (!p.device) {
            cr_assert_eq(lbs_compressor_new(*nm, &c, &e), 0);
            cr_expect_eq(lbs_compressor_device(c, &d, &hp, &e), -ENOTSUP);
            cr_expect(strstr(e.msg, *nm), "%s", e.msg);
            lbs_compressor_free(c);
            continue;
        }
        n++;
        cr_expect(p.device->checks && p.device->checks[0].spec, "%s", *nm);
        for (const struct lbs_compress_device_check *k = p.device->checks;
             k->spec; k++) {
            cr_assert_eq(lbs_compressor_new(k->spec, &c, &e), 0, "%s: %s",
                         k->spec, e.msg);
            cr_assert_eq(lbs_compressor_device(c, &d, &hp, &e), 0);
            cr_expect_eq(d, p.device);
            double v;
            if (!lbs_compressor_param(c, "k", &v))
                cr_expect_eq(hp.k, v, "%s", k->spec);
            if (!lbs_compressor_param(c, "seed", &v))
                cr_expect_eq(hp.seed, v, "%s", k->spec);
            if (!lbs_compressor_param(c, "scale", &v))
                cr_expect_eq(hp.scale, v != 0, "%s", k->spec);
            lbs_compressor_free(c);
        }
    }
    cr_expect_gt(n, 0);
}
