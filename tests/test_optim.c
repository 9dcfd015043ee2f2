/* test_optim.c - the dense optimizers (sgd, lars, lamb, adamw) against the
 * independent numpy reference in tests/ref/optim_ref.json (written by
 * tests/ref/gen_ref.py), plus invariants: LAMB with its trust ratio pinned
 * to 1 is AdamW, a non-finite gradient skips a step without a trace, spec
 * and layer errors, determinism, the learning-rate scale. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/optim.h"

#define RTOL 1e-5      /* |c - ref| <= RTOL * max(1, |ref|) */
#define MAX_CASES 128
#define MAX_LAYERS 16

/* ------------------------------------------------------------ reference */

static json_t *load_ref(void)
{
    const char *dir = getenv("LBS_TEST_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/ref/optim_ref.json", dir ? dir : "tests");
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    cr_assert(root, "cannot load %s: %s (line %d)", path, je.text, je.line);
    return root;
}

static size_t count_cases(void)
{
    const char *dir = getenv("LBS_TEST_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/ref/optim_ref.json", dir ? dir : "tests");
    json_t *root = json_load_file(path, 0, NULL);
    size_t n = root ? json_array_size(json_object_get(root, "cases")) : 0;
    json_decref(root);
    return n;
}

/* Copy a JSON array of numbers into x (exactly n of them). */
static void get_floats(json_t *a, float *x, size_t n, const char *what)
{
    cr_assert(json_is_array(a) && json_array_size(a) == n,
              "%s: expected %zu numbers, got %zu", what, n,
              json_array_size(a));
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        cr_assert(json_is_number(v), "%s[%zu] is not a number", what, i);
        x[i] = (float)json_number_value(v);
    }
}

struct ref_case {
    const char *name, *spec;
    size_t nlayers;
    struct lbs_layer layers[MAX_LAYERS];
    json_t *grads, *expected;   /* [step][layer][elem] */
};

static void ref_case_load(json_t *c, struct ref_case *rc)
{
    memset(rc, 0, sizeof *rc);
    rc->name = json_string_value(json_object_get(c, "name"));
    rc->spec = json_string_value(json_object_get(c, "spec"));
    cr_assert(rc->name && rc->spec, "case without name/spec");
    json_t *ls = json_object_get(c, "layers");
    rc->nlayers = json_array_size(ls);
    cr_assert(rc->nlayers > 0 && rc->nlayers <= MAX_LAYERS, "%s: %zu layers",
              rc->name, rc->nlayers);
    for (size_t i = 0; i < rc->nlayers; i++) {
        json_t *l = json_array_get(ls, i);
        struct lbs_layer *L = &rc->layers[i];
        L->name = json_string_value(json_object_get(l, "name"));
        L->ndim = (int)json_integer_value(json_object_get(l, "ndim"));
        json_t *shape = json_object_get(l, "shape");
        cr_assert(L->ndim >= 1 && L->ndim <= LBS_MAX_DIMS &&
                  json_array_size(shape) == (size_t)L->ndim,
                  "%s: layer %zu: bad shape", rc->name, i);
        L->n = 1;
        for (int d = 0; d < L->ndim; d++) {
            L->shape[d] = (size_t)json_integer_value(json_array_get(shape, d));
            L->n *= L->shape[d];
        }
        L->w = calloc(L->n, sizeof(float));
        L->g = calloc(L->n, sizeof(float));
        cr_assert(L->w && L->g);
        get_floats(json_object_get(l, "w"), L->w, L->n, "w");
    }
    rc->grads = json_object_get(c, "grads");
    rc->expected = json_object_get(c, "expected");
    cr_assert(json_array_size(rc->grads) >= 4 &&
              json_array_size(rc->grads) == json_array_size(rc->expected),
              "%s: needs >= 4 steps of grads and expected w", rc->name);
}

static void ref_case_free(struct ref_case *rc)
{
    for (size_t i = 0; i < rc->nlayers; i++) {
        free(rc->layers[i].w);
        free(rc->layers[i].g);
    }
}

ParameterizedTestParameters(optim, reference)
{
    static int idx[MAX_CASES];
    size_t n = count_cases();
    if (n == 0)
        n = 1;          /* case 0 then fails loudly instead of vanishing */
    if (n > MAX_CASES)
        n = MAX_CASES;
    for (size_t i = 0; i < n; i++)
        idx[i] = (int)i;
    return cr_make_param_array(int, idx, n);
}

/* Replay one reference case through the real optimizer, comparing w after
 * every step, and check that g is only read. */
ParameterizedTest(int *ci, optim, reference)
{
    json_t *root = load_ref();
    json_t *cases = json_object_get(root, "cases");
    cr_assert(json_array_size(cases) > (size_t)*ci, "no case %d", *ci);
    struct ref_case rc;
    ref_case_load(json_array_get(cases, (size_t)*ci), &rc);
    struct lbs_optim *o;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_optim_new(rc.spec, rc.layers, rc.nlayers, NULL, &o, &e),
                 0, "%s: '%s': %s", rc.name, rc.spec, e.msg);
    size_t steps = json_array_size(rc.grads);
    for (size_t t = 0; t < steps; t++) {
        json_t *gs = json_array_get(rc.grads, t), *ws = json_array_get(rc.expected, t);
        cr_assert(json_array_size(gs) == rc.nlayers &&
                  json_array_size(ws) == rc.nlayers, "%s: step %zu: layer "
                  "count", rc.name, t + 1);
        for (size_t i = 0; i < rc.nlayers; i++)
            get_floats(json_array_get(gs, i), rc.layers[i].g, rc.layers[i].n,
                       "g");
        int r = lbs_optim_step(o, &e);
        cr_assert_eq(r, 0, "%s: step %zu returned %d: %s", rc.name, t + 1, r,
                     e.msg);
        for (size_t i = 0; i < rc.nlayers; i++) {
            const struct lbs_layer *L = &rc.layers[i];
            float *want = malloc(L->n * sizeof(float));
            get_floats(json_array_get(ws, i), want, L->n, "expected");
            for (size_t j = 0; j < L->n; j++) {
                double a = L->w[j], b = want[j];
                cr_expect(fabs(a - b) <= RTOL * fmax(1.0, fabs(b)),
                          "%s ('%s'): step %zu, layer '%s'[%zu]: C %.9g, "
                          "reference %.9g (diff %.3g)", rc.name, rc.spec,
                          t + 1, L->name, j, a, b, a - b);
            }
            /* the optimizer must not have touched g (one rank: the
             * average is a no-op; clipping scales a copy, not g) */
            get_floats(json_array_get(gs, i), want, L->n, "g");
            cr_expect(memcmp(want, L->g, L->n * sizeof(float)) == 0,
                      "%s: step %zu: layer '%s' gradient was modified",
                      rc.name, t + 1, L->name);
            free(want);
        }
    }
    cr_expect_eq(lbs_optim_steps(o), (long)steps);
    cr_expect_eq(lbs_optim_skipped(o), 0);
    lbs_optim_free(o);
    ref_case_free(&rc);
    json_decref(root);
}

/* The reference file itself: enough cases, every optimizer covered. */
Test(optim, reference_file_coverage)
{
    json_t *root = load_ref();
    json_t *cases = json_object_get(root, "cases");
    size_t n = json_array_size(cases);
    cr_assert_geq(n, 16, "only %zu reference cases", n);
    cr_assert_leq(n, MAX_CASES);
    cr_assert_leq(json_number_value(json_object_get(root, "rtol")), RTOL,
                  "the reference asks for a looser tolerance than the test");
    const char *need[] = {"sgd", "lars", "lamb", "adamw"};
    for (size_t k = 0; k < 4; k++) {
        int found = 0;
        for (size_t i = 0; i < n; i++) {
            const char *opt = json_string_value(
                json_object_get(json_array_get(cases, i), "optimizer"));
            found += opt && !strcmp(opt, need[k]);
        }
        cr_expect_geq(found, 3, "only %d reference cases for %s", found,
                      need[k]);
    }
    json_decref(root);
}

/* ------------------------------------------------- synthetic parameter sets */

/* A small deterministic parameter set: matrix, 1-D bias, 3-D tensor. */
struct params {
    size_t n;
    struct lbs_layer l[3];
    uint64_t seed;
};

static float rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void params_init(struct params *p, size_t scale, uint64_t seed)
{
    static const char *names[3] = {"w2d", "bias", "w3d"};
    memset(p, 0, sizeof *p);
    p->n = 3;
    p->seed = seed;
    size_t shapes[3][3] = {{7 * scale, 5, 0}, {3 * scale, 0, 0},
                           {4 * scale, 3, 2}};
    int ndims[3] = {2, 1, 3};
    for (size_t i = 0; i < 3; i++) {
        struct lbs_layer *L = &p->l[i];
        L->name = names[i];
        L->ndim = ndims[i];
        L->n = 1;
        for (int d = 0; d < L->ndim; d++) {
            L->shape[d] = shapes[i][d];
            L->n *= L->shape[d];
        }
        L->w = malloc(L->n * sizeof(float));
        L->g = malloc(L->n * sizeof(float));
        cr_assert(L->w && L->g);
        for (size_t j = 0; j < L->n; j++)
            L->w[j] = 0.5f * rnd(&p->seed);
    }
}

/* Fresh gradients for step t (same sequence for the same seed). */
static void params_grad(struct params *p)
{
    for (size_t i = 0; i < p->n; i++)
        for (size_t j = 0; j < p->l[i].n; j++)
            p->l[i].g[j] = 0.3f * rnd(&p->seed);
}

static void params_free(struct params *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->l[i].w);
        free(p->l[i].g);
    }
}

static struct lbs_optim *make(const char *spec, struct params *p)
{
    struct lbs_optim *o = NULL;
    struct lbs_err e = {{0}};
    int r = lbs_optim_new(spec, p->l, p->n, NULL, &o, &e);
    cr_assert_eq(r, 0, "'%s': %d %s", spec, r, e.msg);
    return o;
}

static void step_ok(struct lbs_optim *o, const char *what)
{
    struct lbs_err e = {{0}};
    int r = lbs_optim_step(o, &e);
    cr_assert_eq(r, 0, "%s: step returned %d: %s", what, r, e.msg);
}

/* LAMB whose trust ratio is pinned to 1 (cmin=cmax=1), with weight decay
 * on every tensor and no clipping, is AdamW: same trajectory to rounding. */
static void lamb_vs_adamw(const char *lamb, const char *adamw)
{
    struct params a, b;
    params_init(&a, 1, 42);
    params_init(&b, 1, 42);
    struct lbs_optim *oa = make(lamb, &a), *ob = make(adamw, &b);
    for (int t = 1; t <= 12; t++) {
        params_grad(&a);
        params_grad(&b);
        step_ok(oa, lamb);
        step_ok(ob, adamw);
        for (size_t i = 0; i < a.n; i++)
            for (size_t j = 0; j < a.l[i].n; j++) {
                double x = a.l[i].w[j], y = b.l[i].w[j];
                cr_assert(fabs(x - y) <= 2 * FLT_EPSILON * fmax(fabs(y), 1e-3),
                          "step %d layer %zu[%zu]: lamb %.9g adamw %.9g", t,
                          i, j, x, y);
            }
    }
    lbs_optim_free(oa);
    lbs_optim_free(ob);
    params_free(&a);
    params_free(&b);
}

Test(optim, lamb_with_unit_trust_ratio_is_adamw)
{
    lamb_vs_adamw("lamb:lr=0.01,b1=0.9,b2=0.999,eps=1e-8,wd=0.01,cmin=1,"
                  "cmax=1,exclude_1d=0,clip=0",
                  "adamw:lr=0.01,b1=0.9,b2=0.999,eps=1e-8,wd=0.01");
    lamb_vs_adamw("lamb:lr=0.003,b1=0.8,b2=0.95,eps=1e-4,wd=0.1,cmin=1,"
                  "cmax=1,exclude_1d=0,bias_correction=0",
                  "adamw:lr=0.003,b1=0.8,b2=0.95,eps=1e-4,wd=0.1,"
                  "bias_correction=0");
}

/* Lion (core/optim/lion.c) against the paper's Algorithm 2 written out
 * in double: c = b1 m + (1 - b1) g, w -= lr (sign(c) + wd w), m = b2 m +
 * (1 - b2) g, sign(0) = 0; the same trajectory to float rounding. */
Test(optim, lion_matches_double_reference)
{
    const double lr = 0.01, b1 = 0.9, b2 = 0.99, wd = 0.1;
    struct params p;
    params_init(&p, 3, 7);
    struct lbs_optim *o = make("lion:lr=0.01,b1=0.9,b2=0.99,wd=0.1", &p);
    double *w[3], *m[3];
    for (size_t i = 0; i < p.n; i++) {
        w[i] = malloc(p.l[i].n * sizeof(double));
        m[i] = calloc(p.l[i].n, sizeof(double));
        cr_assert(w[i] && m[i]);
        for (size_t j = 0; j < p.l[i].n; j++)
            w[i][j] = p.l[i].w[j];
    }
    for (int t = 1; t <= 10; t++) {
        params_grad(&p);
        for (size_t i = 0; i < p.n; i++)
            for (size_t j = 0; j < p.l[i].n; j++) {
                double g = p.l[i].g[j], c = b1 * m[i][j] + (1 - b1) * g;
                double s = c > 0 ? 1 : c < 0 ? -1 : 0;
                w[i][j] -= lr * (s + wd * w[i][j]);
                m[i][j] = b2 * m[i][j] + (1 - b2) * g;
            }
        step_ok(o, "lion");
        for (size_t i = 0; i < p.n; i++)
            for (size_t j = 0; j < p.l[i].n; j++)
                cr_assert(fabs(p.l[i].w[j] - w[i][j]) <=
                              1e-5 * fmax(1.0, fabs(w[i][j])),
                          "step %d layer %zu[%zu]: lion %.9g, reference "
                          "%.9g", t, i, j, p.l[i].w[j], w[i][j]);
    }
    lbs_optim_free(o);
    for (size_t i = 0; i < p.n; i++) {
        free(w[i]);
        free(m[i]);
    }
    params_free(&p);
}

static void bits_equal(const struct params *a, const struct params *b,
                       const char *what, int t)
{
    for (size_t i = 0; i < a->n; i++)
        cr_assert(memcmp(a->l[i].w, b->l[i].w, a->l[i].n * sizeof(float)) == 0,
                  "%s: step %d: layer '%s' differs", what, t, a->l[i].name);
}

static const char *const every_spec[] = {
    "sgd:lr=0.1,momentum=0.9,wd=0.01,nesterov=1",
    "lars:lr=5,eta=0.01,wd=0.001",
    "lamb:lr=0.01,wd=0.01,clip=1,cmin=0.1,cmax=10",
    "adamw:lr=0.001",
};

/* A NaN or Inf anywhere in the gradients: step returns 1, w and the
 * optimizer state are untouched, the step counter does not move, the skip
 * is counted, and the run continues exactly as if that step never came. */
Test(optim, nonfinite_gradient_skips_step)
{
    for (size_t k = 0; k < 4; k++) {
        const char *spec = every_spec[k];
        struct params a, b;
        params_init(&a, 1, 7);
        params_init(&b, 1, 7);
        struct lbs_optim *oa = make(spec, &a), *ob = make(spec, &b);
        int applied = 0;
        for (int t = 1; t <= 6; t++) {
            params_grad(&a);
            params_grad(&b);
            step_ok(oa, spec);
            step_ok(ob, spec);
            applied++;
            if (t == 2 || t == 4) {
                /* a's extra step, with one bad element in one layer */
                float *w[3];
                for (size_t i = 0; i < a.n; i++) {
                    w[i] = malloc(a.l[i].n * sizeof(float));
                    memcpy(w[i], a.l[i].w, a.l[i].n * sizeof(float));
                }
                params_grad(&a);
                size_t li = t == 2 ? 0 : 1;
                a.l[li].g[a.l[li].n / 2] = t == 2 ? NAN : -INFINITY;
                struct lbs_err e = {{0}};
                int r = lbs_optim_step(oa, &e);
                cr_assert_eq(r, 1, "%s: non-finite gradient: step returned "
                             "%d (%s)", spec, r, e.msg);
                cr_expect(strstr(e.msg, "skipped"), "%s: message '%s'", spec,
                          e.msg);
                for (size_t i = 0; i < a.n; i++) {
                    cr_assert(memcmp(w[i], a.l[i].w,
                                     a.l[i].n * sizeof(float)) == 0,
                              "%s: skipped step changed w of '%s'", spec,
                              a.l[i].name);
                    free(w[i]);
                }
                cr_assert_eq(lbs_optim_skipped(oa), t == 2 ? 1 : 2);
                cr_assert_eq(lbs_optim_steps(oa), applied, "%s: steps %ld",
                             spec, lbs_optim_steps(oa));
                /* b never saw that gradient: re-sync b's generator */
                b.seed = a.seed;
            }
            bits_equal(&a, &b, spec, t);
        }
        /* continue after the skips: still identical */
        for (int t = 7; t <= 9; t++) {
            params_grad(&a);
            params_grad(&b);
            step_ok(oa, spec);
            step_ok(ob, spec);
            bits_equal(&a, &b, spec, t);
        }
        cr_expect_eq(lbs_optim_skipped(oa), 2);
        cr_expect_eq(lbs_optim_skipped(ob), 0);
        cr_expect_eq(lbs_optim_steps(oa), 9);
        lbs_optim_free(oa);
        lbs_optim_free(ob);
        params_free(&a);
        params_free(&b);
    }
}

/* Same inputs, same bits: two independent runs (OpenMP reductions
 * included, large enough layers to be split across threads). */
Test(optim, deterministic)
{
    for (size_t k = 0; k < 4; k++) {
        struct params a, b;
        params_init(&a, 600, 99);
        params_init(&b, 600, 99);
        struct lbs_optim *oa = make(every_spec[k], &a);
        struct lbs_optim *ob = make(every_spec[k], &b);
        for (int t = 1; t <= 4; t++) {
            params_grad(&a);
            params_grad(&b);
            step_ok(oa, every_spec[k]);
            step_ok(ob, every_spec[k]);
            bits_equal(&a, &b, every_spec[k], t);
        }
        lbs_optim_free(oa);
        lbs_optim_free(ob);
        params_free(&a);
        params_free(&b);
    }
}

/* lbs_optim_set_lr_scale(0.5) behaves as half the learning rate. */
Test(optim, lr_scale_halves_lr)
{
    static const char *const pairs[][2] = {
        {"sgd:lr=0.1,wd=0.01", "sgd:lr=0.05,wd=0.01"},
        {"lars:lr=4,eta=0.01", "lars:lr=2,eta=0.01"},
        {"lamb:lr=0.02,clip=1", "lamb:lr=0.01,clip=1"},
        {"adamw:lr=0.002", "adamw:lr=0.001"},
    };
    for (size_t k = 0; k < 4; k++) {
        struct params a, b;
        params_init(&a, 1, 5);
        params_init(&b, 1, 5);
        struct lbs_optim *oa = make(pairs[k][0], &a);
        struct lbs_optim *ob = make(pairs[k][1], &b);
        lbs_optim_set_lr_scale(oa, 0.5);
        for (int t = 1; t <= 4; t++) {
            params_grad(&a);
            params_grad(&b);
            step_ok(oa, pairs[k][0]);
            step_ok(ob, pairs[k][1]);
            for (size_t i = 0; i < a.n; i++)
                for (size_t j = 0; j < a.l[i].n; j++) {
                    double x = a.l[i].w[j], y = b.l[i].w[j];
                    cr_assert(fabs(x - y) <= 2 * FLT_EPSILON * fmax(fabs(y), 1e-3),
                              "%s x0.5 vs %s: step %d: %.9g vs %.9g",
                              pairs[k][0], pairs[k][1], t, x, y);
                }
        }
        lbs_optim_free(oa);
        lbs_optim_free(ob);
        params_free(&a);
        params_free(&b);
    }
}

/* ------------------------------------------------------------- errors */

static void rejects(const char *spec, int code, const char *needle)
{
    struct params p;
    params_init(&p, 1, 3);
    struct lbs_optim *o = (struct lbs_optim *)&p;   /* must become NULL */
    struct lbs_err e = {{0}};
    int r = lbs_optim_new(spec, p.l, p.n, NULL, &o, &e);
    cr_expect_eq(r, code, "'%s': returned %d, want %d (%s)", spec, r, code,
                 e.msg);
    cr_expect_null(o, "'%s': out not NULL after failure", spec);
    cr_expect(strstr(e.msg, needle), "'%s': message '%s' lacks '%s'", spec,
              e.msg, needle);
    if (r == 0)
        lbs_optim_free(o);
    params_free(&p);
}

Test(optim, unknown_optimizer)
{
    rejects("nosuch:lr=1", -ENOENT, "nosuch");
    rejects("Lamb", -ENOENT, "Lamb");
    rejects("", -EINVAL, "empty");
    rejects(":lr=1", -EINVAL, "no name");
}

Test(optim, bad_keys_and_values)
{
    rejects("lamb:lr=-1", -EINVAL, "'lr'");
    rejects("lamb:b1=1", -EINVAL, "'b1'");
    rejects("lamb:b2=1.5", -EINVAL, "'b2'");
    rejects("lamb:eps=0", -EINVAL, "'eps'");
    rejects("lamb:cmax=0", -EINVAL, "'cmax'");
    rejects("lamb:cmin=2,cmax=1", -EINVAL, "cmin");
    rejects("lamb:clip=-1", -EINVAL, "'clip'");
    rejects("lamb:lr=abc", -EINVAL, "'lr'");
    rejects("lamb:lr=nan", -EINVAL, "'lr'");
    rejects("lamb:exclude_1d=2", -EINVAL, "'exclude_1d'");
    rejects("lamb:bias_correction=maybe", -EINVAL, "'bias_correction'");
    rejects("lamb:lr=0.1,lr=0.2", -EINVAL, "'lr'");
    rejects("lamb:zz=1", -ENOENT, "'zz'");
    rejects("sgd:momentum=1", -EINVAL, "'momentum'");
    rejects("sgd:nesterov=1,momentum=0", -EINVAL, "nesterov");
    rejects("sgd:wd=-0.1", -EINVAL, "'wd'");
    rejects("lars:eta=0", -EINVAL, "'eta'");
    rejects("lars:momentum=-0.1", -EINVAL, "'momentum'");
    rejects("adamw:eps=2", -EINVAL, "'eps'");
    rejects("adamw:b1=-0.5", -EINVAL, "'b1'");
}

/* Every optimizer rejects the keys that belong to another one. */
Test(optim, keys_of_other_optimizers_rejected)
{
    rejects("sgd:b1=0.9", -ENOENT, "'b1'");
    rejects("sgd:eta=0.001", -ENOENT, "'eta'");
    rejects("lars:clip=1", -ENOENT, "'clip'");
    rejects("lars:nesterov=1", -ENOENT, "'nesterov'");
    rejects("lamb:momentum=0.9", -ENOENT, "'momentum'");
    rejects("lamb:eta=0.001", -ENOENT, "'eta'");
    rejects("adamw:clip=1", -ENOENT, "'clip'");
    rejects("adamw:cmax=10", -ENOENT, "'cmax'");
    rejects("adamw:exclude_1d=0", -ENOENT, "'exclude_1d'");
}

static void bad_layers(struct lbs_layer *l, size_t n, const char *needle)
{
    struct lbs_optim *o = NULL;
    struct lbs_err e = {{0}};
    static const char *const specs[] = {"sgd", "lars", "lamb", "adamw"};
    for (size_t k = 0; k < 4; k++) {
        int r = lbs_optim_new(specs[k], l, n, NULL, &o, &e);
        cr_expect_eq(r, -EINVAL, "%s: bad layers accepted (%d)", specs[k], r);
        cr_expect_null(o);
        cr_expect(strstr(e.msg, needle), "%s: message '%s' lacks '%s'",
                  specs[k], e.msg, needle);
        if (r == 0)
            lbs_optim_free(o);
    }
}

Test(optim, bad_layers_rejected)
{
    float w[6] = {1, 2, 3, 4, 5, 6}, g[6] = {0};
    struct lbs_layer l[2] = {
        {"ok", w, g, 6, 2, {2, 3}},
        {"empty", w, g, 0, 1, {0}},
    };
    bad_layers(l, 2, "'empty'");           /* n = 0 */
    bad_layers(l, 0, "no layers");          /* no layers at all */
    bad_layers(NULL, 1, "no layers");
    l[1] = (struct lbs_layer){"nullw", NULL, g, 6, 1, {6}};
    bad_layers(l, 2, "'nullw'");
    l[1] = (struct lbs_layer){"nullg", w, NULL, 6, 1, {6}};
    bad_layers(l, 2, "'nullg'");
    l[1] = (struct lbs_layer){"shape", w, g, 6, 2, {2, 2}};
    bad_layers(l, 2, "'shape'");
    l[1] = (struct lbs_layer){"ndim0", w, g, 6, 0, {6}};
    bad_layers(l, 2, "'ndim0'");
    l[1] = (struct lbs_layer){"ndim5", w, g, 6, LBS_MAX_DIMS + 1, {6}};
    bad_layers(l, 2, "'ndim5'");
}

/* lbs_layers_check without buffers (the CUDA optimizer's use): NULL w and
 * g pass, the shape checks still apply. */
Test(optim, layers_check_without_buffers)
{
    struct lbs_err e = {0};
    struct lbs_layer l[2] = {
        {"a", NULL, NULL, 6, 2, {2, 3}},
        {"b", NULL, NULL, 4, 1, {4}},
    };
    cr_assert_eq(lbs_layers_check(l, 2, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(lbs_layers_check(l, 2, 1, &e), -EINVAL);
    cr_assert(strstr(e.msg, "'a'") && strstr(e.msg, "NULL"), "%s", e.msg);
    l[1].shape[0] = 5;
    cr_assert_eq(lbs_layers_check(l, 2, 0, &e), -EINVAL);
    cr_assert(strstr(e.msg, "'b'") && strstr(e.msg, "shape has 5"), "%s",
              e.msg);
}

/* Names, effective parameters, help. */
Test(optim, names_params_help)
{
    const char *const *names = lbs_optim_names();
    static const char *const need[] = {"sgd", "lars", "lamb", "adamw"};
    for (size_t k = 0; k < 4; k++) {
        int found = 0;
        for (size_t i = 0; names[i]; i++)
            found |= !strcmp(names[i], need[k]);
        cr_expect(found, "'%s' not registered", need[k]);
    }
    struct params p;
    params_init(&p, 1, 1);
    struct lbs_optim *o = make("lamb:lr=0.02,clip=1", &p);
    cr_expect_str_eq(lbs_optim_name(o), "lamb");
    const char *s = lbs_optim_params(o);
    cr_expect(strstr(s, "lr=0.02") && strstr(s, "clip=1") &&
              strstr(s, "b2=0.999") && strstr(s, "exclude_1d=1"),
              "params '%s'", s);
    cr_expect_gt(lbs_optim_bytes_per_elem(o), 4.0);
    lbs_optim_free(o);
    params_free(&p);
    FILE *f = tmpfile();
    cr_assert(f);
    cr_expect_eq(lbs_optim_help("lamb", f), 0);
    cr_expect_eq(lbs_optim_help("nosuch", f), -ENOENT);
    fclose(f);
}

/* lbs_optim_get: the effective value of a key (what the CUDA kernels take
 * their hyperparameters from), defaults included; other keys -ENOENT. */
Test(optim, get_effective_keys)
{
    struct params p;
    params_init(&p, 1, 1);
    struct lbs_optim *o = make("slamb:lr=0.02,mask=bernoulli", &p);
    struct lbs_err e;
    double v = -1;
    cr_expect_eq(lbs_optim_get(o, "lr", &v, &e), 0);
    cr_expect_eq(v, 0.02);
    cr_expect_eq(lbs_optim_get(o, "k", &v, &e), 0);
    cr_expect_eq(v, 0.1, "default k: %g", v);
    cr_expect_eq(lbs_optim_get(o, "mask", &v, &e), 0);
    cr_expect_eq(v, 1, "enum as its index: %g", v);
    cr_expect_eq(lbs_optim_get(o, "clip", &v, &e), -ENOENT);
    cr_expect(strstr(e.msg, "clip") && strstr(e.msg, "slamb"), "%s", e.msg);
    lbs_optim_free(o);
    params_free(&p);
}
