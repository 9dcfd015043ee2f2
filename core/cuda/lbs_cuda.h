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

/* Device-to-device copy bandwidth of GPU 0 over two buffers of n floats
 * (stream.cu): cudaMemcpy and a copy kernel, best of iters each after a
 * warm-up, GB/s = 1e9 bytes/s counting read + write (8 bytes per float,
 * the STREAM copy convention); wrong counts floats of the copy that are
 * not the source's.  Errors as lbs_cuda_probe, or a failed CUDA call. */
struct lbs_cuda_stream {
    size_t n;
    double memcpy_gbps, kernel_gbps;
    long wrong;
    char gpu[256];                /* the GPU's name */
};
int lbs_cuda_stream(size_t n, int iters, struct lbs_cuda_stream *r,
                    struct lbs_err *err);

#ifdef __cplusplus
}
#endif
#endif
