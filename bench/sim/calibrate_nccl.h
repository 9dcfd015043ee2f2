/* calibrate_nccl.h - `sim calibrate --nccl-model BASE` (calibrate_nccl.c). */
#ifndef LBS_SIM_CALIB_NCCL_H
#define LBS_SIM_CALIB_NCCL_H
#include <stddef.h>

#include "lbscale_sim.h"

struct calib_nccl_in {
    const char *base;           /* a GPU preset (or file) to fit over */
    long gpn, nodes;            /* --gpus-per-node, --nodes (0: measured) */
};
/* Fit, write the platform to the path path_of gives (called once the fit
 * is known good: it may open a run directory) and say what it holds;
 * doc carries the name, inputs and provenance.  0, or -errno after one
 * printed line. */
int calib_write_nccl(const struct calib_nccl_in *in,
                     const struct lbs_sim_samples *set,
                     const struct lbs_sim_calibrated *doc,
                     int (*path_of)(void *ctx, char *path, size_t len),
                     void *ctx);
#endif
