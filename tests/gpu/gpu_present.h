/* gpu_present.h - may a GPU check skip (exit 77)?
 *
 * lbs_cuda_probe fails the same way ("CUDA driver version is insufficient
 * for CUDA runtime version") on a machine with no GPU at all and on a GPU
 * machine whose driver is too old for this CUDA or is otherwise broken.
 * Skipping in the second case would let meson test, and so
 * bench/gpu-check.sh, report a GPU machine as "ok" without having run one
 * kernel.  So the check programs skip only when the build has no CUDA or
 * the kernel driver shows no NVIDIA GPU at all, and fail otherwise. */
#ifndef LBS_TESTS_GPU_PRESENT_H
#define LBS_TESTS_GPU_PRESENT_H

#include <dirent.h>
#include <unistd.h>

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
