/* device.cu - CUDA device discovery; later kernels live beside it. */
#include <cuda_runtime.h>
#include <stdio.h>

#include "lbs_cuda.h"

extern "C" int lbs_cuda_probe(char *name, size_t len, struct lbs_err *err)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0)
        return lbs_err_set(err, -ENODEV, "no CUDA GPU: cudaGetDeviceCount: %s",
                           rc == cudaSuccess ? "0 devices"
                                             : cudaGetErrorString(rc));
    cudaDeviceProp p;
    rc = cudaGetDeviceProperties(&p, 0);
    if (rc != cudaSuccess)
        return lbs_err_set(err, -EIO, "cudaGetDeviceProperties: %s",
                           cudaGetErrorString(rc));
    snprintf(name, len, "%s", p.name);
    return n;
}
