/* comm.c - the collectives' names and the dispatch from the lbs_* calls
 * to a backend's ops table. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "lbscale/comm.h"
#include "lbscale/param.h"

/* The one name table (trace-v1's `coll` values), in enum order. */
static const char *const coll_names[LBS_COLL_COUNT] = {
    [LBS_COLL_ALLREDUCE] = "allreduce",
    [LBS_COLL_ALLGATHER] = "allgather",
    [LBS_COLL_ALLGATHERV] = "allgatherv",
    [LBS_COLL_ALLTOALL] = "alltoall",
    [LBS_COLL_BCAST] = "bcast",
    [LBS_COLL_BARRIER] = "barrier",
    [LBS_COLL_NEIGHBOR] = "neighbor",
};

const char *lbs_coll_name(enum lbs_coll k)
{
    return (unsigned)k < LBS_COLL_COUNT ? coll_names[k] : "?";
}

int lbs_coll_from_name(const char *s)
{
    for (int k = 0; k < LBS_COLL_COUNT; k++)
        if (!strcmp(s, coll_names[k]))
            return k;
    return -1;
}

size_t lbs_dtype_size(enum lbs_dtype t)
{
    switch (t) {
    case LBS_FLOAT32: case LBS_INT32: return 4;
    case LBS_FLOAT64: case LBS_INT64: return 8;
    case LBS_FLOAT16: case LBS_BFLOAT16: return 2;
    case LBS_UINT8: return 1;
    }
    return 0;
}

int lbs_comm_new(const char *backend, struct lbs_comm **out,
                 struct lbs_err *err)
{
    if (!strcmp(backend, "self"))
        return lbs_comm_self_new(out, err);
    if (!strcmp(backend, "mpi"))
        return lbs_comm_mpi_new(out, err);
    if (!strcmp(backend, "nccl"))
        return lbs_comm_nccl_new(out, err);
    if (!strcmp(backend, "record"))
        return lbs_comm_record_new(1, out, err);
    if (!strncmp(backend, "record:", 7)) {
        double p;
        if (lbs_parse_double(backend + 7, &p) || p < 1 || p > 1 << 24 ||
            p != (double)(int)p)
            return lbs_err_set(err, -EINVAL, "comm backend '%s': rank count "
                               "must be an integer in [1, 16777216]", backend);
        return lbs_comm_record_new((int)p, out, err);
    }
    return lbs_err_set(err, -ENOENT, "unknown comm backend '%s' (self, mpi, "
                       "nccl, record, record:P)", backend);
}

void lbs_comm_free(struct lbs_comm *c)
{
    if (c)
        c->ops->free(c);
}

int lbs_allreduce(struct lbs_comm *c, void *buf, size_t count,
                  enum lbs_dtype t, enum lbs_redop op, int layer)
{
    return c->ops->allreduce(c, buf, count, t, op, layer);
}

int lbs_allreduce_to(struct lbs_comm *c, const void *send, void *recv,
                     size_t count, enum lbs_dtype t, enum lbs_redop op,
                     int layer)
{
    if (send == recv)
        return lbs_allreduce(c, recv, count, t, op, layer);
    if (c->ops->allreduce_to)
        return c->ops->allreduce_to(c, send, recv, count, t, op, layer);
    memmove(recv, send, count * lbs_dtype_size(t));
    return lbs_allreduce(c, recv, count, t, op, layer);
}

int lbs_allreduce_to_native(const struct lbs_comm *c)
{
    return c->ops->allreduce_to != NULL;
}

int lbs_allgather(struct lbs_comm *c, const void *send, void *recv,
                  size_t count, enum lbs_dtype t, int layer)
{
    return c->ops->allgather(c, send, recv, count, t, layer);
}

int lbs_allgatherv(struct lbs_comm *c, const void *send, size_t count,
                   void *recv, const size_t *counts, const size_t *displs,
                   enum lbs_dtype t, int layer)
{
    return c->ops->allgatherv(c, send, count, recv, counts, displs, t, layer);
}

int lbs_alltoall(struct lbs_comm *c, const void *send, void *recv,
                 size_t count, enum lbs_dtype t, int layer)
{
    return c->ops->alltoall(c, send, recv, count, t, layer);
}

int lbs_bcast(struct lbs_comm *c, void *buf, size_t count, enum lbs_dtype t,
              int root, int layer)
{
    return c->ops->bcast(c, buf, count, t, root, layer);
}

int lbs_barrier(struct lbs_comm *c)
{
    return c->ops->barrier(c);
}

int lbs_comm_agree(struct lbs_comm *c, int rc, int *who, struct lbs_err *err)
{
    int me = c ? c->rank : 0, dummy;
    if (!who)
        who = &dummy;
    *who = rc ? me : -1;
    if (!c || c->size < 2)
        return rc;
    /* the lowest failing rank, then its code from it */
    int32_t v[2] = {rc ? me : INT32_MAX, 0};
    if (lbs_allreduce(c, v, 1, LBS_INT32, LBS_MIN, -1))
        return rc ? rc : -EIO;
    if (v[0] == INT32_MAX) {
        *who = -1;
        return 0;
    }
    *who = v[0];
    v[1] = rc;
    if (lbs_bcast(c, &v[1], 1, LBS_INT32, v[0], -1))
        return rc ? rc : -EIO;
    if (v[0] != me)
        lbs_err_set(err, v[1], "rank %d failed (its own line says why)",
                    (int)v[0]);
    return v[1];
}

int lbs_neighbor_exchange(struct lbs_comm *c, const void *send, size_t count,
                          enum lbs_dtype t, const int *to, int nto,
                          const int *from, int nfrom, void *recv, int layer)
{
    if (!c->ops->neighbors)
        return lbs_err_set(c->err, -ENOTSUP, "the %s comm backend has no "
                           "neighbour exchange", c->ops->name);
    for (int j = 0; j < nto; j++)
        if (to[j] < 0 || to[j] >= c->size)
            return lbs_err_set(c->err, -EINVAL, "neighbour rank %d not in "
                               "0..%d", to[j], c->size - 1);
    for (int j = 0; j < nfrom; j++)
        if (from[j] < 0 || from[j] >= c->size)
            return lbs_err_set(c->err, -EINVAL, "neighbour rank %d not in "
                               "0..%d", from[j], c->size - 1);
    return c->ops->neighbors(c, send, count, t, to, nto, from, nfrom, recv,
                             layer);
}

int lbs_allreduce_mean_f32(struct lbs_comm *c, float *buf, size_t count,
                           int layer)
{
    int rc = lbs_allreduce(c, buf, count, LBS_FLOAT32, LBS_SUM, layer);
    if (rc || c->size == 1)
        return rc;
    const float inv = 1.0f / (float)c->size;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < count; i++)
        buf[i] *= inv;
    return 0;
}
