/* lbs_cuda.h - the CUDA side of core (internal).  Built only when meson
 * finds nvcc; cuda_none.c stands in otherwise.  Every call returns 0 or a
 * negative code and names the failing CUDA call in err. */
#ifndef LBS_CUDA_H
#define LBS_CUDA_H

#include <stddef.h>
#include "lbscale/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable GPUs (>= 1) and the first one's name, or -ENOTSUP
 * (no CUDA build) / -ENODEV (no GPU or driver). */
int lbs_cuda_probe(char *name, size_t len, struct lbs_err *err);

#ifdef __cplusplus
}
#endif
#endif
