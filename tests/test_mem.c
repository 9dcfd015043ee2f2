/* test_mem.c - the arrays the kernels stream (lbscale/mem.h): alignment,
 * zeroing, refused sizes and the LBSCALE_HUGEPAGES switch.  Whether Linux
 * actually backs an advised array with huge pages depends on its THP mode
 * and on fragmentation, so no test asserts it; the benchmarks print it
 * (the huge column, meta.json's hugepages). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/mem.h"

#define MIB ((size_t)1 << 20)

Test(mem, small_arrays_are_cache_line_aligned)
{
    unsetenv("LBSCALE_HUGEPAGES");
    for (size_t n = 1; n < 5000; n = n * 3 + 1) {
        void *p = lbs_array_alloc(n, sizeof(float));
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % 64, 0, "n %zu", n);
        memset(p, 1, n * sizeof(float));   /* all of it is ours (ASan) */
        free(p);
    }
}

Test(mem, large_arrays_start_on_a_huge_page_unless_switched_off)
{
    unsetenv("LBSCALE_HUGEPAGES");
    cr_assert(lbs_hugepages_on());
    void *p = lbs_array_alloc(3 * MIB + 12, 1);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % (2 * MIB), 0);
    memset(p, 7, 3 * MIB + 12);
    free(p);
    setenv("LBSCALE_HUGEPAGES", "0", 1);
    cr_assert_not(lbs_hugepages_on());
    p = lbs_array_alloc(3 * MIB, 1);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 64, 0);
    free(p);
    unsetenv("LBSCALE_HUGEPAGES");
}

Test(mem, zalloc_zeroes_reused_memory)
{
    for (int round = 0; round < 3; round++) {
        size_t n = round ? 5 * MIB / 4 : 1000;
        uint32_t *p = lbs_array_alloc(n, sizeof *p);
        cr_assert_not_null(p);
        memset(p, 0xff, n * sizeof *p);
        free(p);
        p = lbs_array_zalloc(n, sizeof *p);
        cr_assert_not_null(p);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(p[i], 0u, "element %zu of %zu", i, n);
        free(p);
    }
}

Test(mem, sizes_that_overflow_are_refused_and_zero_is_an_array)
{
    cr_assert_null(lbs_array_alloc(SIZE_MAX / 2, 4));
    cr_assert_null(lbs_array_zalloc(SIZE_MAX / 8 + 1, 8));
    void *p = lbs_array_alloc(0, 4);
    cr_assert_not_null(p);
    free(p);
}

Test(mem, the_switch_takes_0_or_1_only)
{
    struct lbs_err e;
    unsetenv("LBSCALE_HUGEPAGES");
    cr_assert_eq(lbs_hugepages_from_env(&e), 0);
    const char *good[] = {"0", "1"}, *bad[] = {"", "2", "yes", "01"};
    for (size_t i = 0; i < 2; i++) {
        setenv("LBSCALE_HUGEPAGES", good[i], 1);
        cr_assert_eq(lbs_hugepages_from_env(&e), 0, "%s", good[i]);
    }
    for (size_t i = 0; i < 4; i++) {
        setenv("LBSCALE_HUGEPAGES", bad[i], 1);
        cr_assert_eq(lbs_hugepages_from_env(&e), -EINVAL, "'%s'", bad[i]);
        cr_assert(strstr(e.msg, "not 0 or 1"), "%s", e.msg);
    }
    unsetenv("LBSCALE_HUGEPAGES");
}

Test(mem, huge_page_reading_is_a_count_or_unknown)
{
    long kib = lbs_hugepages_kib();
    if (kib < 0)
        cr_skip_test("/proc/self/smaps_rollup is not readable here "
                     "(not Linux, or a kernel before 4.14)");
    cr_assert_geq(kib, 0);
}
