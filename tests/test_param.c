/* test_param.c - the spec-string parser every optimizer and compressor
 * shares: strict numbers, ranges, unknown and duplicate keys. */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "lbscale/param.h"

struct cfg { double lr, b1, flag, mode, n; };
static const char *const modes[] = {"cyclic", "bernoulli", NULL};
static const struct lbs_param_spec table[] = {
    {"lr", LBS_P_REAL, 0.1, 0, INFINITY, 0, offsetof(struct cfg, lr), "", NULL},
    {"b1", LBS_P_REAL, 0.9, 0, 1, LBS_P_MAX_OPEN, offsetof(struct cfg, b1), "", NULL},
    {"flag", LBS_P_BOOL, 0, 0, 1, 0, offsetof(struct cfg, flag), "", NULL},
    {"mode", LBS_P_ENUM, 0, 0, 0, 0, offsetof(struct cfg, mode), "", modes},
    {"n", LBS_P_INT, 5, 1, 100, 0, offsetof(struct cfg, n), "", NULL},
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

Test(param, defaults_and_values)
{
    struct cfg c;
    struct lbs_err e;
    cr_assert_eq(lbs_params_parse(table, "t", "", &c, &e), 0);
    cr_assert_float_eq(c.lr, 0.1, 0);
    cr_assert_eq(lbs_params_parse(table, "t", "lr=0.5,flag=on,mode=bernoulli,n=7",
                                  &c, &e), 0, "%s", e.msg);
    cr_assert_float_eq(c.lr, 0.5, 0);
    cr_assert_float_eq(c.flag, 1, 0);
    cr_assert_float_eq(c.mode, 1, 0);
    cr_assert_float_eq(c.n, 7, 0);
}

static void bad(const char *args, int code, const char *needle)
{
    struct cfg c;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_params_parse(table, "t", args, &c, &e), code, "args '%s'",
                 args);
    cr_assert(strstr(e.msg, needle), "'%s' -> '%s' lacks '%s'", args, e.msg,
              needle);
}

Test(param, rejects_bad_input)
{
    bad("lr=-1", -EINVAL, "'lr'");
    bad("b1=1", -EINVAL, "out of range");
    bad("lr=1e", -EINVAL, "not a finite number");
    bad("lr=abc", -EINVAL, "not a finite number");
    bad("lr=10Q", -EINVAL, "not a finite number");
    bad("lr=nan", -EINVAL, "not a finite number");
    bad("lr=inf", -EINVAL, "not a finite number");
    bad("lr=", -EINVAL, "not a finite number");
    bad("zz=1", -ENOENT, "unknown key 'zz'");
    bad("lr=1,lr=2", -EINVAL, "given twice");
    bad("lr", -EINVAL, "key=value");
    bad("lr=1,", -EINVAL, "trailing");
    bad("n=2.5", -EINVAL, "not an integer");
    bad("flag=2", -EINVAL, "boolean");
    bad("mode=foo", -EINVAL, "unknown choice");
}

Test(param, sizes)
{
    size_t n;
    cr_assert_eq(lbs_parse_size("100M", &n), 0);
    cr_assert_eq(n, 100000000u);
    cr_assert_eq(lbs_parse_size("4Ki", &n), 0);
    cr_assert_eq(n, 4096u);
    cr_assert_neq(lbs_parse_size("-1", &n), 0);
    cr_assert_neq(lbs_parse_size("10Q", &n), 0);
    cr_assert_neq(lbs_parse_size("1.5", &n), 0);
}

Test(param, split)
{
    char name[16];
    const char *args;
    struct lbs_err e;
    cr_assert_eq(lbs_spec_split("lamb:lr=1", name, sizeof name, &args, &e), 0);
    cr_assert_str_eq(name, "lamb");
    cr_assert_str_eq(args, "lr=1");
    cr_assert_eq(lbs_spec_split("sgd", name, sizeof name, &args, &e), 0);
    cr_assert_str_eq(args, "");
    cr_assert_neq(lbs_spec_split(":lr=1", name, sizeof name, &args, &e), 0);
    cr_assert_neq(lbs_spec_split("", name, sizeof name, &args, &e), 0);
    /* issue 33: a ':' with nothing after it is refused, not ignored */
    cr_assert_eq(lbs_spec_split("lamb:", name, sizeof name, &args, &e),
                 -EINVAL);
    cr_assert(strstr(e.msg, "nothing after ':'"), "%s", e.msg);
}

/* ---- issue 14 (12): recorded specs reproduce their runs -------------- */

#include "lbscale/compress.h"
#include "lbscale/optim.h"

/* Values that %.10g lost: 12-digit seeds, 2^53 - 1, reals needing 17
 * significant digits, the extremes of double. */
static const char *const hard[] = {
    "123456789012", "9007199254740991", "0.30000000000000004",
    "0.123456789012345678", "1.0000000000000002", "1e-300",
    "2.2250738585072014e-308", "1.7976931348623157e308",
    "123456.78901234567", "3", "0.5", "1", NULL,
};

static int bits_eq(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

Test(param, format_round_trips_bit_for_bit)
{
    static const struct lbs_param_spec t[] = {
        {"x", LBS_P_REAL, 0, -INFINITY, INFINITY, 0, 0, "", NULL},
        {"n", LBS_P_INT, 0, 0, 9007199254740992.0, 0, sizeof(double), "",
         NULL},
        {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
    };
    for (int i = 0; hard[i]; i++) {
        double in[2], out[2];
        char args[128], rec[256];
        struct lbs_err e = {{0}};
        int integral = !strchr(hard[i], '.') && !strchr(hard[i], 'e');
        snprintf(args, sizeof args, "x=%s%s%s", hard[i],
                 integral ? ",n=" : "", integral ? hard[i] : "");
        cr_assert_eq(lbs_params_parse(t, "t", args, in, &e), 0, "%s", e.msg);
        size_t need = lbs_params_format(t, in, rec, sizeof rec);
        cr_assert_lt(need, sizeof rec);
        cr_assert_eq(lbs_params_parse(t, "t", rec, out, &e), 0, "%s: %s",
                     rec, e.msg);
        cr_assert(bits_eq(in[0], out[0]) && bits_eq(in[1], out[1]),
                  "'%s' recorded as '%s'", args, rec);
        if (integral)   /* integers exactly, as given */
            cr_assert(strstr(rec, hard[i]), "'%s' recorded as '%s'", args,
                      rec);
    }
    /* the length is reported when the buffer is too small, and nothing
     * after a missing item is written */
    double v[2] = {0.1, 7};
    char small[8];
    cr_assert_eq(lbs_params_format(t, v, small, sizeof small),
                 strlen("x=0.1,n=7"));
    cr_assert_str_eq(small, "x=0.1");
}

/* One step of a fresh optimizer from spec on a fixed 2-layer problem;
 * the weights after it go into w (3 + 4 floats). */
static void one_step(const char *spec, float w[7], char *params, size_t len)
{
    float w0[3] = {0.5f, -0.25f, 1}, w1[4] = {1, 2, 3, -4};
    float g0[3] = {0.1f, 0.2f, -0.3f}, g1[4] = {-1, 0.5f, 0.25f, 2};
    struct lbs_layer l[2] = {
        {.name = "a", .w = w0, .g = g0, .n = 3, .ndim = 1, .shape = {3}},
        {.name = "b", .w = w1, .g = g1, .n = 4, .ndim = 2, .shape = {2, 2}},
    };
    struct lbs_optim *o;
    struct lbs_err e = {{0}};
    cr_assert_eq(lbs_optim_new(spec, l, 2, NULL, &o, &e), 0, "%s: %s", spec,
                 e.msg);
    cr_assert_eq(lbs_optim_step(o, &e), 0, "%s: %s", spec, e.msg);
    snprintf(params, len, "%s", lbs_optim_params(o));
    lbs_optim_free(o);
    memcpy(w, w0, sizeof w0);
    memcpy(w + 3, w1, sizeof w1);
}

static int optim_ok(const char *spec)
{
    float w = 0, g = 0;
    struct lbs_layer l = {.name = "p", .w = &w, .g = &g, .n = 1, .ndim = 1,
                          .shape = {1}};
    struct lbs_optim *o;
    if (lbs_optim_new(spec, &l, 1, NULL, &o, NULL))
        return 0;
    lbs_optim_free(o);
    return 1;
}

static int compressor_ok(const char *spec)
{
    struct lbs_compressor *c;
    if (lbs_compressor_new(spec, &c, NULL))
        return 0;
    lbs_compressor_free(c);
    return 1;
}

/* name:key=v,... with, for each numeric key of the effective list
 * `params`, the first hard value the parser accepts alone. */
static void hard_spec(const char *name, const char *params, int (*ok)(const
                      char *), char *spec, size_t len)
{
    char keys[2048];
    size_t o = (size_t)snprintf(spec, len, "%s:", name);
    snprintf(keys, sizeof keys, "%s", params);
    for (char *sv, *kv = strtok_r(keys, ",", &sv); kv;
         kv = strtok_r(NULL, ",", &sv)) {
        char *eq = strchr(kv, '=');
        cr_assert_not_null(eq);
        *eq = '\0';
        for (int i = 0; hard[i]; i++) {
            char one[256];
            snprintf(one, sizeof one, "%s:%s=%s", name, kv, hard[i]);
            if (ok(one)) {
                char trial[4096];
                snprintf(trial, sizeof trial, "%s%s%s=%s", spec,
                         spec[o - 1] == ':' ? "" : ",", kv, hard[i]);
                if (strlen(trial) < len && ok(trial)) {   /* some keys
                                                     constrain each other */
                    snprintf(spec, len, "%s", trial);
                    o = strlen(spec);
                }
                break;
            }
        }
    }
    if (spec[o - 1] == ':')
        spec[o - 1] = '\0';
}

/* The recorded spec (name:effective params) must run the same step bit
 * for bit, and record itself unchanged. */
Test(param, recorded_optimizer_specs_reproduce)
{
    const char *const *names = lbs_optim_names();
    for (size_t i = 0; names[i]; i++) {
        char spec[2048], p1[1100], p2[1100], rec[1200];
        float w1[7], w2[7];
        one_step(names[i], w1, p1, sizeof p1);   /* defaults: the keys */
        hard_spec(names[i], p1, optim_ok, spec, sizeof spec);
        one_step(spec, w1, p1, sizeof p1);
        snprintf(rec, sizeof rec, "%s:%s", names[i], p1);
        one_step(rec, w2, p2, sizeof p2);
        cr_expect_str_eq(p2, p1, "%s", spec);
        cr_expect_eq(memcmp(w1, w2, sizeof w1), 0, "'%s' recorded as '%s' "
                     "steps differently", spec, rec);
    }
}

Test(param, recorded_compressor_specs_reproduce)
{
    const char *const *names = lbs_compressor_names();
    for (size_t i = 0; names[i]; i++) {
        struct lbs_compressor *a, *b;
        struct lbs_err e = {{0}};
        char spec[2048], rec[1200];
        cr_assert_eq(lbs_compressor_new(names[i], &a, &e), 0, "%s", e.msg);
        hard_spec(names[i], lbs_compressor_params(a), compressor_ok, spec,
                  sizeof spec);
        lbs_compressor_free(a);
        cr_assert_eq(lbs_compressor_new(spec, &a, &e), 0, "%s", e.msg);
        snprintf(rec, sizeof rec, "%s:%s", names[i], lbs_compressor_params(a));
        cr_assert_eq(lbs_compressor_new(rec, &b, &e), 0, "%s: %s", rec,
                     e.msg);
        cr_expect_str_eq(lbs_compressor_params(b), lbs_compressor_params(a));
        char keys[1024];
        snprintf(keys, sizeof keys, "%s", lbs_compressor_params(a));
        for (char *sv, *kv = strtok_r(keys, ",", &sv); kv;
             kv = strtok_r(NULL, ",", &sv)) {
            double va, vb;
            *strchr(kv, '=') = '\0';
            cr_assert_eq(lbs_compressor_param(a, kv, &va), 0);
            cr_assert_eq(lbs_compressor_param(b, kv, &vb), 0);
            cr_expect(bits_eq(va, vb), "%s: key %s: %.17g recorded as %.17g "
                      "(%s)", spec, kv, va, vb, rec);
        }
        lbs_compressor_free(a);
        lbs_compressor_free(b);
    }
}
