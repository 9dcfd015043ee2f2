/* mask_build.c - time lbs_mask_cyclic_new alone, in one process (a
 * throwaway harness kept with the study so its numbers can be checked;
 * not part of the build).  Usage: mask_build N K [REPEATS].
 *   gcc -O2 -I core/include mask_build.c -o /tmp/mask_build \
 *       -L BUILD/core -llbscale -Wl,-rpath,BUILD/core
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lbscale/lbscale.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    size_t n = strtoull(argv[1], 0, 10);
    double k = atof(argv[2]);
    int reps = argc > 3 ? atoi(argv[3]) : 1;
    for (int r = 0; r < reps; r++) {
        struct lbs_mask_cyclic *m;
        struct lbs_err e;
        double t0 = now();
        if (lbs_mask_cyclic_new(1, 0, n, k, &m, &e)) {
            puts(e.msg);
            return 1;
        }
        double t1 = now();
        const uint32_t *idx;
        size_t c;
        lbs_mask_cyclic_get(m, 3, &idx, &c);   /* a value, to compare */
        printf("%.3f s  chunk 3 middle %u\n", t1 - t0, idx[c / 2]);
        lbs_mask_cyclic_free(m);
    }
    return 0;
}
