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
}
