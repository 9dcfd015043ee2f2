/* cuda_check.h - CUDA/NCCL error reporting for the .cu files and nccl.c.
 *
 * Every CUDA runtime or NCCL call goes through one of these macros, so a
 * failure is never ignored: it returns from the calling function with a
 * negative code and err naming the failing call and CUDA's own message,
 * e.g. "cudaMalloc(&d, bytes): out of memory".  The function using them
 * needs a `struct lbs_err *err` in scope.  A cleanup label can be used
 * with the _GOTO forms (rc must be an int in scope).
 */
#ifndef LBS_CUDA_CHECK_H
#define LBS_CUDA_CHECK_H

#include <errno.h>
#include "lbscale/error.h"

#define LBS_CU(call)                                                        \
    do {                                                                    \
        cudaError_t lbs_cu_rc_ = (call);                                    \
        if (lbs_cu_rc_ != cudaSuccess)                                      \
            return lbs_err_set(err, -EIO, "%s: %s", #call,                  \
                               cudaGetErrorString(lbs_cu_rc_));             \
    } while (0)

#define LBS_CU_GOTO(call, label)                                            \
    do {                                                                    \
        cudaError_t lbs_cu_rc_ = (call);                                    \
        if (lbs_cu_rc_ != cudaSuccess) {                                    \
            rc = lbs_err_set(err, -EIO, "%s: %s", #call,                    \
                             cudaGetErrorString(lbs_cu_rc_));               \
            goto label;                                                     \
        }                                                                   \
    } while (0)

/* A kernel launch: the launch error now (bad configuration), the
 * execution error at the next synchronising call's LBS_CU. */
#define LBS_CU_LAUNCHED() LBS_CU(cudaGetLastError())

#define LBS_NCCL(call)                                                      \
    do {                                                                    \
        ncclResult_t lbs_nc_rc_ = (call);                                   \
        if (lbs_nc_rc_ != ncclSuccess)                                      \
            return lbs_err_set(err, -EIO, "%s: %s", #call,                  \
                               ncclGetErrorString(lbs_nc_rc_));             \
    } while (0)

#endif
