/* lbscale/comm.h - the communication interface every optimizer talks to.
 *
 * A struct lbs_comm is a process group with one backend behind it:
 *   self  one process; collectives are copies or no-ops (always built)
 *   mpi   Open MPI over MPI_COMM_WORLD (built when MPI is found)
 *   (record and nccl backends plug into the same ops table)
 *
 * Every call carries the layer index it moves (-1: not layer-specific) and
 * the comm remembers the current optimizer step (lbs_comm_set_step), so a
 * recording backend can log (collective, bytes, layer, step) with no help
 * from the optimizer.
 *
 * Ownership: lbs_comm_*_new() allocates; lbs_comm_free() releases it (and,
 * for mpi, finalizes MPI if this library initialised it).  Buffers are the
 * caller's.  Threading: a comm is used by one thread at a time.
 * Errors: 0 or negative code (see lbscale/error.h); a backend failure is
 * -EIO with the failing call named in err.
 */
#ifndef LBSCALE_COMM_H
#define LBSCALE_COMM_H

#include <stddef.h>
#include "lbscale/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum lbs_dtype { LBS_FLOAT32, LBS_FLOAT64, LBS_INT32, LBS_UINT8, LBS_INT64 };
enum lbs_redop { LBS_SUM, LBS_MAX, LBS_MIN };

size_t lbs_dtype_size(enum lbs_dtype t);

struct lbs_comm;

struct lbs_comm_ops {
    const char *name;
    int (*allreduce)(struct lbs_comm *c, void *buf, size_t count,
                     enum lbs_dtype t, enum lbs_redop op, int layer);
    /* send: count elements; recv: size*count elements, rank order */
    int (*allgather)(struct lbs_comm *c, const void *send, void *recv,
                     size_t count, enum lbs_dtype t, int layer);
    /* counts[r] elements from rank r land at recv + displs[r] elements */
    int (*allgatherv)(struct lbs_comm *c, const void *send, size_t count,
                      void *recv, const size_t *counts, const size_t *displs,
                      enum lbs_dtype t, int layer);
    /* send/recv: size blocks of count elements; block r goes to rank r */
    int (*alltoall)(struct lbs_comm *c, const void *send, void *recv,
                    size_t count, enum lbs_dtype t, int layer);
    int (*bcast)(struct lbs_comm *c, void *buf, size_t count,
                 enum lbs_dtype t, int root, int layer);
    int (*barrier)(struct lbs_comm *c);
    /* Gossip: send the same count elements to every rank in to[0..nto),
     * receive count elements from each rank in from[0..nfrom) into
     * recv + j*count.  Directed graphs (exponential) have to != from.
     * May be NULL in a backend: the dispatcher then returns -ENOTSUP. */
    int (*neighbors)(struct lbs_comm *c, const void *send, size_t count,
                     enum lbs_dtype t, const int *to, int nto,
                     const int *from, int nfrom, void *recv, int layer);
    void (*free)(struct lbs_comm *c);
};

struct lbs_comm {
    const struct lbs_comm_ops *ops;
    int rank, size;
    long step;              /* current optimizer step, set by the driver */
    struct lbs_err *err;    /* where backends write failures; may be NULL */
    void *impl;             /* backend state */
};

/* Constructors.  lbs_comm_mpi_new initialises MPI when needed and returns
 * -ENOTSUP when this build has no MPI. */
int lbs_comm_self_new(struct lbs_comm **out, struct lbs_err *err);
int lbs_comm_mpi_new(struct lbs_comm **out, struct lbs_err *err);
/* "self" or "mpi" */
int lbs_comm_new(const char *backend, struct lbs_comm **out,
                 struct lbs_err *err);
void lbs_comm_free(struct lbs_comm *c);

static inline void lbs_comm_set_step(struct lbs_comm *c, long step)
{
    c->step = step;
}

/* Thin dispatchers, so call sites read like MPI. */
int lbs_allreduce(struct lbs_comm *c, void *buf, size_t count,
                  enum lbs_dtype t, enum lbs_redop op, int layer);
int lbs_allgather(struct lbs_comm *c, const void *send, void *recv,
                  size_t count, enum lbs_dtype t, int layer);
int lbs_allgatherv(struct lbs_comm *c, const void *send, size_t count,
                   void *recv, const size_t *counts, const size_t *displs,
                   enum lbs_dtype t, int layer);
int lbs_alltoall(struct lbs_comm *c, const void *send, void *recv,
                 size_t count, enum lbs_dtype t, int layer);
int lbs_bcast(struct lbs_comm *c, void *buf, size_t count, enum lbs_dtype t,
              int root, int layer);
int lbs_barrier(struct lbs_comm *c);
int lbs_neighbor_exchange(struct lbs_comm *c, const void *send, size_t count,
                          enum lbs_dtype t, const int *to, int nto,
                          const int *from, int nfrom, void *recv, int layer);

/* Sum-allreduce float32 then divide by size: the data-parallel average. */
int lbs_allreduce_mean_f32(struct lbs_comm *c, float *buf, size_t count,
                           int layer);

#ifdef __cplusplus
}
#endif
#endif
