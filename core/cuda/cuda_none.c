/* cuda_none.c - stands in for the CUDA sources in builds without nvcc. */
#include "lbs_cuda.h"

int lbs_cuda_probe(char *name, size_t len, struct lbs_err *err)
{
    if (len)
        name[0] = '\0';
    return lbs_err_set(err, -ENOTSUP, "this lbscale was built without CUDA "
                       "(nvcc not found at configure time, or -Dcuda=disabled)");
}

int lbs_cuda_stream(size_t n, int iters, struct lbs_cuda_stream *r,
                    struct lbs_err *err)
{
    (void)n, (void)iters;
    return lbs_cuda_probe(r->gpu, sizeof r->gpu, err);
}
