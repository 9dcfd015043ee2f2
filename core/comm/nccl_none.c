/* nccl_none.c - stands in for nccl.c in builds without NCCL (or CUDA). */
#include "lbscale/comm.h"

int lbs_comm_nccl_new(struct lbs_comm **out, struct lbs_err *err)
{
    *out = NULL;
    return lbs_err_set(err, -ENOTSUP,
                       "this lbscale was built without NCCL (needs CUDA "
                       "and libnccl at configure time)");
}
