/* check_common.h - what the checkasm-style GPU checks share: the wall
 * clock, the median of a sample, and whether they may skip (exit 77).
 *
 * lbs_cuda_probe fails the same way ("CUDA driver version is insufficient
 * for CUDA runtime version") on a machine with no GPU at all and on a GPU
 * machine whose driver is too old for this CUDA or is otherwise broken.
 * Skipping in the second case would let meson test, and so
 * bench/gpu-check.sh, report a GPU machine as "ok" without having run one
 * kernel.  So the check programs skip only when the build has no CUDA or
 * the kernel driver shows no NVIDIA GPU at all, and fail otherwise. */
#ifndef LBS_TESTS_CHECK_COMMON_H
#define LBS_TESTS_CHECK_COMMON_H

#include <dirent.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline double check_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int check_cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of x[0..n) (sorts x). */
static inline double check_median(double *x, size_t n)
{
    qsort(x, n, sizeof *x, check_cmp_d);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* 1 if an NVIDIA GPU is visible to this process (a device node or the
 * driver's per-GPU /proc entries), whether or not CUDA can use it. */
static inline int lbs_gpu_present(void)
{
    if (access("/dev/nvidia0", F_OK) == 0)
        return 1;
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    int n = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            n += e->d_name[0] != '.';
        closedir(d);
    }
    return n > 0;
}

#endif
