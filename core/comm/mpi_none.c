/* mpi_none.c - stands in for mpi.c in builds without MPI. */
#include "lbscale/comm.h"

int lbs_comm_mpi_new(struct lbs_comm **out, struct lbs_err *err)
{
    *out = NULL;
    return lbs_err_set(err, -ENOTSUP,
                       "this lbscale was built without MPI (install "
                       "libopenmpi-dev and rebuild)");
}
