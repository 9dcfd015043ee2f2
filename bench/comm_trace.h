/* comm_trace.h - a timing record wrapper around a real comm (bench/ only).
 *
 * comm_trace_new(inner) returns a struct lbs_comm whose every op forwards
 * to `inner` (mpi, self, ...) unchanged and appends one entry: the kind,
 * the bytes this rank contributes (the convention of
 * results/schema/trace-v1.md and lbscale/comm.h's record backend), the
 * layer, the trainer's iteration (comm_trace_set_iter) and the measured
 * wall time of the call on this rank.  Unlike the `record` backend it moves
 * the data; it is how `lbscale train` traces real runs.
 *
 * Ownership: the wrapper borrows inner (which must outlive it);
 * lbs_comm_free(wrapper) frees the wrapper and its log only.  Entries
 * returned by comm_trace_entries stay valid until the next call on the
 * wrapper or comm_trace_clear.
 */
#ifndef LBS_COMM_TRACE_H
#define LBS_COMM_TRACE_H

#include <stddef.h>

#include "lbscale/comm.h"

enum trace_kind {
    TRACE_ALLREDUCE, TRACE_ALLGATHER, TRACE_ALLGATHERV, TRACE_ALLTOALL,
    TRACE_BCAST, TRACE_BARRIER, TRACE_NEIGHBOR, TRACE_KINDS
};
/* "allreduce", ..., "neighbor" (the names of trace-v1's `coll`). */
const char *trace_kind_name(enum trace_kind k);

struct trace_entry {
    enum trace_kind kind;
    size_t bytes;       /* trace-v1 convention (neighbor: per neighbour) */
    size_t sent;        /* bytes this rank injects: bytes, x peers for
                           neighbor */
    int layer;          /* as passed (-1: not layer-specific) */
    int peers;          /* neighbor: destinations; 0 otherwise */
    long iter;          /* comm_trace_set_iter's value at the call */
    double seconds;     /* wall time of the forwarded call on this rank */
};

int comm_trace_new(struct lbs_comm *inner, struct lbs_comm **out,
                   struct lbs_err *err);
void comm_trace_set_iter(struct lbs_comm *c, long iter);
const struct trace_entry *comm_trace_entries(const struct lbs_comm *c,
                                             size_t *n);
void comm_trace_clear(struct lbs_comm *c);

#endif
