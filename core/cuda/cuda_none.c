/* cuda_none.c - stands in for the CUDA sources in builds without nvcc. */
#include "lbs_cuda.h"

int lbs_cuda_probe(char *name, size_t len, struct lbs_err *err)
{
    if (len)
        name[0] = '\0';
    return lbs_err_set(err, -ENOTSUP, "this lbscale was built without CUDA "
                       "(nvcc not found at configure time)");
}
