/* self.c - the one-process backend: every collective is a copy or nothing.
 * Layers and steps are ignored; nothing can fail after construction. */
#include <stdlib.h>
#include <string.h>

#include "lbscale/comm.h"

static int self_allreduce(struct lbs_comm *c, void *buf, size_t count,
                          enum lbs_dtype t, enum lbs_redop op, int layer)
{
    (void)c; (void)buf; (void)count; (void)t; (void)op; (void)layer;
    return 0;
}

static int self_allreduce_to(struct lbs_comm *c, const void *send,
                             void *recv, size_t count, enum lbs_dtype t,
                             enum lbs_redop op, int layer)
{
    (void)c; (void)op; (void)layer;
    memmove(recv, send, count * lbs_dtype_size(t));
    return 0;
}

static int self_allgather(struct lbs_comm *c, const void *send, void *recv,
                          size_t count, enum lbs_dtype t, int layer)
{
    (void)c; (void)layer;
    if (send != recv)
        memmove(recv, send, count * lbs_dtype_size(t));
    return 0;
}

static int self_allgatherv(struct lbs_comm *c, const void *send, size_t count,
                           void *recv, const size_t *counts,
                           const size_t *displs, enum lbs_dtype t, int layer)
{
    (void)c; (void)layer; (void)counts;
    size_t es = lbs_dtype_size(t);
    if ((char *)recv + displs[0] * es != send)
        memmove((char *)recv + displs[0] * es, send, count * es);
    return 0;
}

static int self_alltoall(struct lbs_comm *c, const void *send, void *recv,
                         size_t count, enum lbs_dtype t, int layer)
{
    return self_allgather(c, send, recv, count, t, layer);
}

static int self_bcast(struct lbs_comm *c, void *buf, size_t count,
                      enum lbs_dtype t, int root, int layer)
{
    (void)c; (void)buf; (void)count; (void)t; (void)root; (void)layer;
    return 0;
}

static int self_barrier(struct lbs_comm *c)
{
    (void)c;
    return 0;
}

/* One rank: every neighbour is rank 0, i.e. ourselves. */
static int self_neighbors(struct lbs_comm *c, const void *send, size_t count,
                          enum lbs_dtype t, const int *to, int nto,
                          const int *from, int nfrom, void *recv, int layer)
{
    (void)c; (void)to; (void)nto; (void)from; (void)layer;
    size_t bytes = count * lbs_dtype_size(t);
    for (int j = 0; j < nfrom; j++)
        memmove((char *)recv + (size_t)j * bytes, send, bytes);
    return 0;
}

static void self_free(struct lbs_comm *c)
{
    free(c);
}

static const struct lbs_comm_ops self_ops = {
    .name = "self",
    .allreduce = self_allreduce,
    .allreduce_to = self_allreduce_to,
    .allgather = self_allgather,
    .allgatherv = self_allgatherv,
    .alltoall = self_alltoall,
    .bcast = self_bcast,
    .barrier = self_barrier,
    .neighbors = self_neighbors,
    .free = self_free,
};

int lbs_comm_self_new(struct lbs_comm **out, struct lbs_err *err)
{
    struct lbs_comm *c = calloc(1, sizeof *c);
    if (!c)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    c->ops = &self_ops;
    c->rank = 0;
    c->size = 1;
    *out = c;
    return 0;
}
