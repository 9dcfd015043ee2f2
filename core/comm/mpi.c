/* mpi.c - Open MPI backend over MPI_COMM_WORLD.
 *
 * Counts above INT_MAX are sent in chunks (allreduce, bcast) or refused
 * with -EINVAL (the v-collectives, whose displacements are int in MPI-3).
 * Every MPI error is returned as -EIO naming the call; MPI's own error
 * handler is switched to MPI_ERRORS_RETURN so nothing aborts behind us.
 */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>

#include "lbscale/comm.h"

struct mpi_impl {
    MPI_Comm comm;
    int we_initialized;
};

static MPI_Datatype mpi_type(enum lbs_dtype t)
{
    switch (t) {
    case LBS_FLOAT32: return MPI_FLOAT;
    case LBS_FLOAT64: return MPI_DOUBLE;
    case LBS_INT32: return MPI_INT32_T;
    case LBS_INT64: return MPI_INT64_T;
    case LBS_UINT8: return MPI_UINT8_T;
    }
    return MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(enum lbs_redop op)
{
    return op == LBS_MAX ? MPI_MAX : op == LBS_MIN ? MPI_MIN : MPI_SUM;
}

static int fail(struct lbs_comm *c, const char *call, int mrc)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(mrc, s, &len);
    return lbs_err_set(c->err, -EIO, "%s failed on rank %d: %s", call,
                       c->rank, s);
}

static MPI_Comm world(struct lbs_comm *c)
{
    return ((struct mpi_impl *)c->impl)->comm;
}

#define CHUNK ((size_t)1 << 30)

static int m_allreduce(struct lbs_comm *c, void *buf, size_t count,
                       enum lbs_dtype t, enum lbs_redop op, int layer)
{
    (void)layer;
    size_t es = lbs_dtype_size(t);
    for (size_t off = 0; off < count; off += CHUNK) {
        size_t n = count - off < CHUNK ? count - off : CHUNK;
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * es, (int)n,
                               mpi_type(t), mpi_op(op), world(c));
        if (rc != MPI_SUCCESS)
            return fail(c, "MPI_Allreduce", rc);
    }
    return 0;
}

static int too_big(struct lbs_comm *c, const char *call, size_t n)
{
    return lbs_err_set(c->err, -EINVAL, "%s: %zu elements exceed INT_MAX",
                       call, n);
}

static int m_allgather(struct lbs_comm *c, const void *send, void *recv,
                       size_t count, enum lbs_dtype t, int layer)
{
    (void)layer;
    if (count > INT_MAX)
        return too_big(c, "MPI_Allgather", count);
    int rc = MPI_Allgather(send, (int)count, mpi_type(t), recv, (int)count,
                           mpi_type(t), world(c));
    return rc == MPI_SUCCESS ? 0 : fail(c, "MPI_Allgather", rc);
}

static int m_allgatherv(struct lbs_comm *c, const void *send, size_t count,
                        void *recv, const size_t *counts, const size_t *displs,
                        enum lbs_dtype t, int layer)
{
    (void)layer;
    int p = c->size;
    int *ic = malloc(2 * (size_t)p * sizeof *ic);
    if (!ic)
        return lbs_err_set(c->err, -ENOMEM, "out of memory");
    for (int r = 0; r < p; r++) {
        if (counts[r] > INT_MAX || displs[r] > INT_MAX) {
            free(ic);
            return too_big(c, "MPI_Allgatherv", counts[r] + displs[r]);
        }
        ic[r] = (int)counts[r];
        ic[p + r] = (int)displs[r];
    }
    int rc = count > INT_MAX ? MPI_ERR_COUNT
             : MPI_Allgatherv(send, (int)count, mpi_type(t), recv, ic, ic + p,
                              mpi_type(t), world(c));
    free(ic);
    return rc == MPI_SUCCESS ? 0 : fail(c, "MPI_Allgatherv", rc);
}

static int m_alltoall(struct lbs_comm *c, const void *send, void *recv,
                      size_t count, enum lbs_dtype t, int layer)
{
    (void)layer;
    if (count > INT_MAX)
        return too_big(c, "MPI_Alltoall", count);
    int rc = MPI_Alltoall(send, (int)count, mpi_type(t), recv, (int)count,
                          mpi_type(t), world(c));
    return rc == MPI_SUCCESS ? 0 : fail(c, "MPI_Alltoall", rc);
}

static int m_bcast(struct lbs_comm *c, void *buf, size_t count,
                   enum lbs_dtype t, int root, int layer)
{
    (void)layer;
    size_t es = lbs_dtype_size(t);
    for (size_t off = 0; off < count; off += CHUNK) {
        size_t n = count - off < CHUNK ? count - off : CHUNK;
        int rc = MPI_Bcast((char *)buf + off * es, (int)n, mpi_type(t), root,
                           world(c));
        if (rc != MPI_SUCCESS)
            return fail(c, "MPI_Bcast", rc);
    }
    return 0;
}

static int m_barrier(struct lbs_comm *c)
{
    int rc = MPI_Barrier(world(c));
    return rc == MPI_SUCCESS ? 0 : fail(c, "MPI_Barrier", rc);
}

static int m_neighbors(struct lbs_comm *c, const void *send, size_t count,
                       enum lbs_dtype t, const int *to, int nto,
                       const int *from, int nfrom, void *recv, int layer)
{
    if (count > INT_MAX)
        return too_big(c, "neighbour exchange", count);
    MPI_Request *rq = malloc((size_t)(nto + nfrom) * sizeof *rq);
    if (!rq)
        return lbs_err_set(c->err, -ENOMEM, "out of memory");
    size_t bytes = count * lbs_dtype_size(t);
    int rc = MPI_SUCCESS, nr = 0;
    for (int j = 0; j < nfrom && rc == MPI_SUCCESS; j++)
        rc = MPI_Irecv((char *)recv + (size_t)j * bytes, (int)count,
                       mpi_type(t), from[j], layer & 0x7fff, world(c),
                       &rq[nr++]);
    for (int j = 0; j < nto && rc == MPI_SUCCESS; j++)
        rc = MPI_Isend(send, (int)count, mpi_type(t), to[j], layer & 0x7fff,
                       world(c), &rq[nr++]);
    if (rc == MPI_SUCCESS)
        rc = MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
    free(rq);
    return rc == MPI_SUCCESS ? 0 : fail(c, "MPI_Isend/Irecv (neighbours)", rc);
}

static void m_free(struct lbs_comm *c)
{
    struct mpi_impl *m = c->impl;
    int fin = 0;
    MPI_Finalized(&fin);
    if (m->we_initialized && !fin)
        MPI_Finalize();
    free(m);
    free(c);
}

static const struct lbs_comm_ops mpi_ops = {
    .name = "mpi",
    .allreduce = m_allreduce,
    .allgather = m_allgather,
    .allgatherv = m_allgatherv,
    .alltoall = m_alltoall,
    .bcast = m_bcast,
    .barrier = m_barrier,
    .neighbors = m_neighbors,
    .free = m_free,
};

int lbs_comm_mpi_new(struct lbs_comm **out, struct lbs_err *err)
{
    struct lbs_comm *c = calloc(1, sizeof *c);
    struct mpi_impl *m = calloc(1, sizeof *m);
    if (!c || !m) {
        free(c);
        free(m);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) !=
            MPI_SUCCESS) {
            free(c);
            free(m);
            return lbs_err_set(err, -EIO, "MPI_Init_thread failed");
        }
        m->we_initialized = 1;
    }
    m->comm = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &c->rank);
    MPI_Comm_size(m->comm, &c->size);
    c->ops = &mpi_ops;
    c->impl = m;
    *out = c;
    return 0;
}
