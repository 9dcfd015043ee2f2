/* comm_trace.c - the timing record wrapper (see comm_trace.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_trace.h"

struct trace_impl {
    struct lbs_comm *inner;
    long iter;
    struct trace_entry *e;
    size_t n, cap;
};

static const char *const kind_names[TRACE_KINDS] = {
    "allreduce", "allgather", "allgatherv", "alltoall", "bcast", "barrier",
    "neighbor",
};

const char *trace_kind_name(enum trace_kind k)
{
    return (unsigned)k < TRACE_KINDS ? kind_names[k] : "?";
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static struct trace_impl *impl(struct lbs_comm *c)
{
    return c->impl;
}

/* Before forwarding: the inner comm reports into our err and sees our
 * step (the optimizer driver sets both on the wrapper). */
static struct lbs_comm *inner(struct lbs_comm *c)
{
    struct lbs_comm *in = impl(c)->inner;
    in->err = c->err;
    in->step = c->step;
    return in;
}

/* Log one finished call (nothing for a failed one: its error wins).  An
 * allocation failure of the log is an error: a trace missing calls would
 * mislead the simulator. */
static int log_call(struct lbs_comm *c, int rc, enum trace_kind k,
                    size_t bytes, size_t sent, int layer, int peers,
                    double t0)
{
    double dt = now() - t0;
    if (rc)
        return rc;
    struct trace_impl *t = impl(c);
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        struct trace_entry *e = realloc(t->e, cap * sizeof *e);
        if (!e)
            return lbs_err_set(c->err, -ENOMEM, "comm trace: out of memory");
        t->e = e;
        t->cap = cap;
    }
    t->e[t->n++] = (struct trace_entry){k, bytes, sent, layer, peers,
                                        t->iter, dt};
    return 0;
}

static int t_allreduce(struct lbs_comm *c, void *buf, size_t count,
                       enum lbs_dtype ty, enum lbs_redop op, int layer)
{
    double t0 = now();
    int rc = lbs_allreduce(inner(c), buf, count, ty, op, layer);
    size_t b = count * lbs_dtype_size(ty);
    return log_call(c, rc, TRACE_ALLREDUCE, b, b, layer, 0, t0);
}

static int t_allgather(struct lbs_comm *c, const void *send, void *recv,
                       size_t count, enum lbs_dtype ty, int layer)
{
    double t0 = now();
    int rc = lbs_allgather(inner(c), send, recv, count, ty, layer);
    size_t b = count * lbs_dtype_size(ty);
    return log_call(c, rc, TRACE_ALLGATHER, b, b, layer, 0, t0);
}

static int t_allgatherv(struct lbs_comm *c, const void *send, size_t count,
                        void *recv, const size_t *counts,
                        const size_t *displs, enum lbs_dtype ty, int layer)
{
    double t0 = now();
    int rc = lbs_allgatherv(inner(c), send, count, recv, counts, displs, ty,
                            layer);
    size_t b = count * lbs_dtype_size(ty);
    return log_call(c, rc, TRACE_ALLGATHERV, b, b, layer, 0, t0);
}

static int t_alltoall(struct lbs_comm *c, const void *send, void *recv,
                      size_t count, enum lbs_dtype ty, int layer)
{
    double t0 = now();
    int rc = lbs_alltoall(inner(c), send, recv, count, ty, layer);
    size_t b = (size_t)c->size * count * lbs_dtype_size(ty);
    return log_call(c, rc, TRACE_ALLTOALL, b, b, layer, 0, t0);
}

static int t_bcast(struct lbs_comm *c, void *buf, size_t count,
                   enum lbs_dtype ty, int root, int layer)
{
    double t0 = now();
    int rc = lbs_bcast(inner(c), buf, count, ty, root, layer);
    size_t b = count * lbs_dtype_size(ty);
    return log_call(c, rc, TRACE_BCAST, b, b, layer, 0, t0);
}

static int t_barrier(struct lbs_comm *c)
{
    double t0 = now();
    int rc = lbs_barrier(inner(c));
    return log_call(c, rc, TRACE_BARRIER, 0, 0, -1, 0, t0);
}

static int t_neighbors(struct lbs_comm *c, const void *send, size_t count,
                       enum lbs_dtype ty, const int *to, int nto,
                       const int *from, int nfrom, void *recv, int layer)
{
    double t0 = now();
    int rc = lbs_neighbor_exchange(inner(c), send, count, ty, to, nto, from,
                                   nfrom, recv, layer);
    size_t b = count * lbs_dtype_size(ty);
    return log_call(c, rc, TRACE_NEIGHBOR, b, b * (size_t)nto, layer, nto,
                    t0);
}

static void t_free(struct lbs_comm *c)
{
    free(impl(c)->e);
    free(c->impl);
    free(c);
}

static const struct lbs_comm_ops trace_ops = {
    .name = "trace",
    .allreduce = t_allreduce,
    .allgather = t_allgather,
    .allgatherv = t_allgatherv,
    .alltoall = t_alltoall,
    .bcast = t_bcast,
    .barrier = t_barrier,
    .neighbors = t_neighbors,
    .free = t_free,
};

int comm_trace_new(struct lbs_comm *in, struct lbs_comm **out,
                   struct lbs_err *err)
{
    struct lbs_comm *c = calloc(1, sizeof *c);
    struct trace_impl *t = calloc(1, sizeof *t);
    if (!c || !t) {
        free(c);
        free(t);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    t->inner = in;
    c->ops = &trace_ops;
    c->rank = in->rank;
    c->size = in->size;
    c->err = in->err;
    c->impl = t;
    *out = c;
    return 0;
}

void comm_trace_set_iter(struct lbs_comm *c, long iter)
{
    impl(c)->iter = iter;
}

const struct trace_entry *comm_trace_entries(const struct lbs_comm *c,
                                             size_t *n)
{
    const struct trace_impl *t = c->impl;
    *n = t->n;
    return t->e;
}

void comm_trace_clear(struct lbs_comm *c)
{
    impl(c)->n = 0;
}
