/* memsize.c - see memsize.h. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "memsize.h"

int lbs_array_bytes(size_t n, size_t elem, size_t align, size_t *out)
{
    size_t b;
    if (__builtin_mul_overflow(n, elem, &b) ||
        __builtin_add_overflow(b, align - 1, &b))
        return -EOVERFLOW;
    *out = b / align * align;
    return 0;
}

/* Bytes this process can still get: the kernel's MemAvailable estimate
 * (free memory plus what it can reclaim), else the physical total. */
static double avail_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    if (kb)
        return (double)kb * 1024.0;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0;
}

int lbs_buffers_fit(size_t n, size_t elem, size_t count, const char *what,
                    struct lbs_err *err)
{
    size_t one, all;
    double have = 0.9 * avail_bytes();   /* room for everything else */
    if (lbs_array_bytes(n, elem, 64, &one) ||
        __builtin_mul_overflow(one, count, &all))
        return lbs_err_set(err, -EINVAL, "%s: %zu array(s) of %zu %zu-byte "
                           "values are larger than the address space",
                           what, count, n, elem);
    if (have > 0 && (double)all > have)
        return lbs_err_set(err, -EINVAL, "%s: needs %.3g GB (%zu array(s) "
                           "of %zu %zu-byte values), more than 90%% of the "
                           "%.3g GB of memory available", what, (double)all / 1e9, count, n,
                           elem, have / 0.9 / 1e9);
    return 0;
}
