/* mem.c - arrays on huge pages where the kernel gives them (lbscale/mem.h). */
#include <errno.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lbscale/mem.h"

#define HUGE_SZ ((size_t)2 << 20)

int lbs_hugepages_on(void)
{
    const char *e = getenv("LBSCALE_HUGEPAGES");
    return !e || strcmp(e, "0") != 0;
}

int lbs_hugepages_from_env(struct lbs_err *err)
{
    const char *e = getenv("LBSCALE_HUGEPAGES");
    if (!e || !strcmp(e, "0") || !strcmp(e, "1"))
        return 0;
    return lbs_err_set(err, -EINVAL, "'%s' is not 0 or 1 (0: no huge-page "
                       "advice for the arrays)", e);
}

void *lbs_array_alloc(size_t count, size_t size)
{
    if (size && count > (SIZE_MAX - HUGE_SZ) / size)
        return NULL;
    size_t bytes = (count * size + 63) / 64 * 64;
    if (bytes == 0)
        bytes = 64;
    if (bytes < HUGE_SZ || !lbs_hugepages_on())
        return aligned_alloc(64, bytes);
    /* posix_memalign: C11's aligned_alloc wants a size that is a multiple
     * of the alignment, and rounding up to 2 MiB would touch more pages */
    void *p;
    if (posix_memalign(&p, HUGE_SZ, bytes))
        return NULL;
#ifdef MADV_HUGEPAGE
    /* the whole 2 MiB pages inside the array only; advice: a kernel
     * without THP says EINVAL and the array keeps its 4 KiB pages */
    (void)madvise(p, bytes / HUGE_SZ * HUGE_SZ, MADV_HUGEPAGE);
#endif
    return p;
}

/* Zeroed by the threads in the static split the kernels use (each thread
 * a contiguous share), so that on a NUMA machine each share's pages are
 * placed first-touch where its thread runs. */
void *lbs_array_zalloc(size_t count, size_t size)
{
    char *p = lbs_array_alloc(count, size);
    size_t bytes = count * size;
    if (!p)
        return NULL;
#pragma omp parallel if (bytes >= HUGE_SZ)
    {
        size_t T = (size_t)omp_get_num_threads(),
               t = (size_t)omp_get_thread_num();
        size_t lo = bytes / T * t;
        size_t hi = t + 1 == T ? bytes : bytes / T * (t + 1);
        memset(p + lo, 0, hi - lo);
    }
    return p;
}

long lbs_hugepages_kib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}
