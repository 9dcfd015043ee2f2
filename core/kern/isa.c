/* isa.c - runtime choice of the kernel table (kern.h, lbscale/isa.h).
 * Compiled for baseline x86-64: nothing here may use a wider vector. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "lbscale/isa.h"

const struct lbs_kern *lbs_kern_cur;

static const char *const names[LBS_ISA_COUNT] = {"c", "avx2", "avx512"};
static const struct lbs_kern *const tabs[LBS_ISA_COUNT] = {
    &lbs_kern_c, &lbs_kern_avx2, &lbs_kern_avx512};

static enum lbs_isa cpu_best(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("bmi2"))
        return LBS_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("bmi2"))
        return LBS_ISA_AVX2;
#endif
    return LBS_ISA_C;
}

/* LBSCALE_CPU_MAX=c|avx2 makes the CPU look as if it had no more than
 * that (a test hook: the refusal of a level the CPU lacks can be tested
 * on any machine). */
static enum lbs_isa best(void)
{
    enum lbs_isa b = cpu_best();
    const char *e = getenv("LBSCALE_CPU_MAX");
    if (e)
        for (int i = 0; i < (int)b; i++)
            if (!strcmp(e, names[i]))
                return (enum lbs_isa)i;
    return b;
}

const struct lbs_kern *lbs_kern_of(enum lbs_isa isa)
{
    if ((int)isa < 0 || isa >= LBS_ISA_COUNT || isa > best())
        return NULL;
    return tabs[isa];
}

const struct lbs_kern *lbs_kern_init(void)
{
    /* LBSCALE_ISA when valid and supported (the CLI refuses a bad one
     * with exit 2 before any kernel runs), else the best level */
    const struct lbs_kern *k = tabs[best()];
    const char *e = getenv("LBSCALE_ISA");
    if (e && *e)
        for (int i = 0; i < LBS_ISA_COUNT; i++)
            if (!strcmp(e, names[i]) && lbs_kern_of((enum lbs_isa)i))
                k = tabs[i];
    const struct lbs_kern *expect = NULL;
    __atomic_compare_exchange_n(&lbs_kern_cur, &expect, k, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&lbs_kern_cur, __ATOMIC_ACQUIRE);
}

const char *lbs_isa_name(void)
{
    return lbs_kern()->name;
}

const char *lbs_isa_best(void)
{
    return names[best()];
}

int lbs_isa_select(const char *name, struct lbs_err *err)
{
    for (int i = 0; i < LBS_ISA_COUNT; i++) {
        if (strcmp(name, names[i]))
            continue;
        const struct lbs_kern *k = lbs_kern_of((enum lbs_isa)i);
        if (!k)
            return lbs_err_set(err, -ENOTSUP, "ISA level '%s' is not "
                               "supported by this CPU (best: %s)", name,
                               names[best()]);
        __atomic_store_n(&lbs_kern_cur, k, __ATOMIC_RELEASE);
        return 0;
    }
    return lbs_err_set(err, -EINVAL, "unknown ISA level '%s' (expected c, "
                       "avx2 or avx512)", name);
}

int lbs_isa_from_env(struct lbs_err *err)
{
    const char *e = getenv("LBSCALE_ISA");
    if (!e)
        return 0;
    return lbs_isa_select(e, err);
}
