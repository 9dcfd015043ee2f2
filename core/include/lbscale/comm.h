/* lbscale/comm.h - the communication interface every optimizer talks to.
 *
 * A struct lbs_comm is a process group with one backend behind it:
 *   self  one process; collectives are copies or no-ops (always built)
 *   mpi   Open MPI over MPI_COMM_WORLD (built when MPI is found)
 *   record no transfer; logs every call (see "Record backend" below)
 *   nccl  NCCL, one rank per GPU, bootstrapped over MPI (built when CUDA
 *         and NCCL are found); every buffer is DEVICE memory
 *
 * Every call carries the layer index it moves (-1: not layer-specific,
 * LBS_LAYER_ALL: one buffer fused over every layer) and the comm remembers the current optimizer step (lbs_comm_set_step), so a
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

/* The layer index of a call that moves one buffer fused over all layers
 * (1-bit LAMB's compressed momentum): its bytes grow with the model's
 * parameter count, which trace-v1 readers use to scale a recording made
 * on a smaller copy of a model (results/schema/trace-v1.md). */
#define LBS_LAYER_ALL (-2)

/* Element types.  LBS_FLOAT16 is IEEE binary16, LBS_BFLOAT16 bfloat16
 * (lbscale/half.h), both 2 bytes, stored as uint16_t bit patterns (C11
 * has no half type).  Reductions on them work on the values, in every
 * backend:
 *   SUM      each addition is rounded once to the format, to nearest
 *            even: mpi converts both operands to float, adds, rounds
 *            back (float's 24 bits >= 2 x 11 + 2, so this is the
 *            correctly rounded half addition; the same holds for
 *            bfloat16); NCCL adds in its native half arithmetic, also
 *            correctly rounded per addition.  The order of the additions
 *            is the library's: any order of P - 1 such additions lies
 *            within g sum|x_r| of the exact sum, g = (P-1)u / (1-(P-1)u),
 *            u = 2^-11 (binary16) or 2^-8 (bfloat16), so the result
 *            agrees with a sum in rank order to within 2 g sum|x_r|, not
 *            bit for bit (tests/mpi_comm.c checks this bound, and that
 *            every rank gets the same bits).  A binary16 sum beyond
 *            65504 is inf: scale first.
 *   MAX/MIN  the larger/smaller value, bits unchanged; a NaN loses to a
 *            number (IEEE maxNum/minNum, as CUDA's __hmax/__hmin).
 * New values go at the end: the numbering is part of the ABI. */
enum lbs_dtype {
    LBS_FLOAT32, LBS_FLOAT64, LBS_INT32, LBS_UINT8, LBS_INT64,
    LBS_FLOAT16, LBS_BFLOAT16
};
enum lbs_redop { LBS_SUM, LBS_MAX, LBS_MIN };

/* Bytes per element: 4, 8, 4, 1, 8, 2, 2; 0 for a value outside the
 * enum. */
size_t lbs_dtype_size(enum lbs_dtype t);

/* ---- The collectives: the one vocabulary ----
 *
 * Every layer names a collective with this enum and these names: the
 * record backend's log, trace-v1's `coll` field (results/schema/
 * trace-v1.md), the compressors' lbs_compressor_collective, the
 * benchmarks' per-collective totals and the simulator's cost models
 * (sim/lbscale_sim.h).  New kinds go before LBS_COLL_COUNT, with their
 * name in comm.c's table. */
enum lbs_coll {
    LBS_COLL_ALLREDUCE,
    LBS_COLL_ALLGATHER,
    LBS_COLL_ALLGATHERV,
    LBS_COLL_ALLTOALL,
    LBS_COLL_BCAST,
    LBS_COLL_BARRIER,
    LBS_COLL_NEIGHBOR,
    LBS_COLL_COUNT
};
/* "allreduce", "allgather", "allgatherv", "alltoall", "bcast", "barrier",
 * "neighbor" (trace-v1's `coll` names); "?" out of range. */
const char *lbs_coll_name(enum lbs_coll k);
/* The kind named s (exact, case-sensitive), -1 for any other string. */
int lbs_coll_from_name(const char *s);

struct lbs_comm;

struct lbs_comm_ops {
    const char *name;
    int (*allreduce)(struct lbs_comm *c, void *buf, size_t count,
                     enum lbs_dtype t, enum lbs_redop op, int layer);
    /* Out of place: send is left alone, the result lands in recv (the
     * two do not overlap; lbs_allreduce_to sends send == recv to
     * allreduce).  May be NULL: the dispatcher then copies send to recv
     * and reduces recv in place. */
    int (*allreduce_to)(struct lbs_comm *c, const void *send, void *recv,
                        size_t count, enum lbs_dtype t, enum lbs_redop op,
                        int layer);
    /* send: count elements; recv: size*count elements, rank order.  In
     * place (MPI_IN_PLACE, nccl-tests' in-place allgather): send ==
     * recv + rank*count elements, where the rank's block already is. */
    int (*allgather)(struct lbs_comm *c, const void *send, void *recv,
                     size_t count, enum lbs_dtype t, int layer);
    /* counts[r] elements from rank r land at recv + displs[r] elements;
     * send == recv + displs[rank] elements is the in-place form */
    int (*allgatherv)(struct lbs_comm *c, const void *send, size_t count,
                      void *recv, const size_t *counts, const size_t *displs,
                      enum lbs_dtype t, int layer);
    /* send/recv: size blocks of count elements; block r goes to rank r.
     * send == recv is the in-place form (MPI_IN_PLACE) on self, mpi and
     * record; nccl refuses it (-ENOTSUP: its send/recv pairs would
     * overwrite blocks not yet sent). */
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
/* NCCL over MPI_COMM_WORLD's ranks, each on the GPU of its index among
 * the ranks of its host (cudaSetDevice); -ENOTSUP without NCCL or MPI in
 * this build, -ENODEV without a GPU, -EINVAL with more ranks on a host
 * than GPUs.  Collectives take device pointers of that GPU and return
 * when the transfer is complete. */
int lbs_comm_nccl_new(struct lbs_comm **out, struct lbs_err *err);
/* "self", "mpi", "nccl", "record" (one logical rank) or "record:P" (P
 * ranks) */
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
/* recv = the reduction of every rank's send (count elements), send left
 * alone; send == recv is lbs_allreduce.  Backends without allreduce_to:
 * a copy, then the in-place call (lbs_allreduce_to_native says which). */
int lbs_allreduce_to(struct lbs_comm *c, const void *send, void *recv,
                     size_t count, enum lbs_dtype t, enum lbs_redop op,
                     int layer);
/* 1 when c's backend reduces out of place itself, 0 when the dispatcher
 * emulates it with a copy (what benchmarks label). */
int lbs_allreduce_to_native(const struct lbs_comm *c);
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

/* Every rank's outcome of a local step (an allocation, opening a file)
 * combined before the next collective, so that a rank that failed alone
 * never leaves its peers waiting in that collective (a barrier against
 * nothing: a hang).  Every rank passes its own rc; all get the code of
 * the lowest failing rank (0 if none), so all exit alike.  *who (may be
 * NULL): that rank, or -1.  On the other ranks err (may be NULL) says
 * which rank failed; the failing rank prints its own line.  A comm of one
 * rank (or NULL) returns rc.  Callers on a record comm of logical ranks
 * must not call it: its collectives enter the trace. */
int lbs_comm_agree(struct lbs_comm *c, int rc, int *who, struct lbs_err *err);

/* Sum-allreduce float32 then divide by size: the data-parallel average. */
int lbs_allreduce_mean_f32(struct lbs_comm *c, float *buf, size_t count,
                           int layer);

/* ---- Record backend ----
 *
 * lbs_comm_record_new(size) makes a comm of `size` logical ranks (this
 * process is rank 0) that moves nothing and appends one entry per call.
 * The simulator prices each collective by (kind, bytes), so the byte
 * convention is exact and the same for every kind:
 *
 *   bytes = the payload THIS rank contributes to the call
 *     allreduce   count * dtype size          (float16/bfloat16: count * 2)
 *     allgather   count * dtype size          (send count, not recv)
 *     allgatherv  count * dtype size          (own count)
 *     alltoall    size * count * dtype size   (all blocks it sends)
 *     bcast       count * dtype size          (logged on every rank)
 *     barrier     0
 *     neighbor    count * dtype size          (sent to EACH of `peers`
 *                                              destinations)
 * (the `bytes` of results/schema/trace-v1.md).
 *
 * Results are what `size` ranks holding identical data would get, so code
 * that runs over it computes the same values as on one rank: allreduce
 * SUM multiplies by size (float16/bfloat16: in float, rounded once to the
 * format; integers wrap; MAX/MIN leave buf alone), allgather(v) fills
 * every rank's block with this rank's send data, alltoall fills every
 * received block with send block 0 (what each peer addresses to rank 0),
 * neighbor fills every received block with the send buffer, bcast and
 * barrier do nothing.  Receive buffers must be sized for `size`
 * ranks as with any backend.
 *
 * lbs_comm_record_wrap(inner) makes a record comm that forwards every
 * call to `inner` (mpi, self, nccl, ...), so the data really moves and
 * the results are inner's; it takes inner's rank and size, logs the same
 * entries (with inner's size in alltoall's bytes) and times each call:
 * `seconds` is the wall time of the forwarded call on this rank.  A call
 * inner fails is not logged (its error wins); before each call inner gets
 * the wrapper's err and step.  It is how `lbscale train` traces real runs.
 *
 * Ownership: the log belongs to the comm; entries returned by
 * lbs_comm_record_entries stay valid until the next call on the comm,
 * lbs_comm_record_clear or lbs_comm_free.  A wrapping comm borrows inner,
 * which must outlive it; lbs_comm_free(wrapper) leaves inner alone.  The
 * lbs_comm_record_* readers return 0/NULL on a comm of another backend. */
struct lbs_comm_record_entry {
    enum lbs_coll kind;
    enum lbs_dtype dtype;
    size_t count;       /* elements as passed to the call */
    size_t bytes;       /* see the convention above */
    int layer;          /* as passed (-1: not layer-specific,
                           LBS_LAYER_ALL: fused over all layers) */
    int peers;          /* neighbor: destinations (nto); 0 otherwise */
    long step;          /* the comm's step at the time of the call */
    double seconds;     /* wrapping comm: wall time of the forwarded call
                           on this rank; 0 when nothing is forwarded */
};

int lbs_comm_record_new(int size, struct lbs_comm **out, struct lbs_err *err);
int lbs_comm_record_wrap(struct lbs_comm *inner, struct lbs_comm **out,
                         struct lbs_err *err);
const struct lbs_comm_record_entry *lbs_comm_record_entries(
    const struct lbs_comm *c, size_t *count);
/* Sum of bytes (and number of calls, when calls != NULL) per kind;
 * arrays of LBS_COLL_COUNT entries. */
void lbs_comm_record_totals(const struct lbs_comm *c,
                            size_t bytes[LBS_COLL_COUNT],
                            size_t calls[LBS_COLL_COUNT]);
void lbs_comm_record_clear(struct lbs_comm *c);

/* ---- trace-v1 call lines: the one writer ----
 *
 * Entry e as one call line of results/schema/trace-v1.md, without the
 * newline, into buf (snprintf's contract: the length of the whole line is
 * returned, the text is cut to len - 1 characters):
 *   {"step":S,"layer":L,"coll":"NAME","bytes":B}
 * with ,"bytes_split":b before the brace when split != 0 (the bytes rule
 * below), and with flag LBS_TRACE_TIMED the train-trace extension
 * (results/schema/train-trace-v1.md): ,"ms":T (e->seconds in ms, 4
 * decimals) and, for neighbour calls, ,"peers":N.  S is e->step.  A line
 * never needs more than LBS_TRACE_LINE_MAX bytes (NUL included). */
#define LBS_TRACE_TIMED 1u
#define LBS_TRACE_LINE_MAX 512
int lbs_trace_call_line(char *buf, size_t len,
                        const struct lbs_comm_record_entry *e,
                        unsigned long long split, unsigned flags);

/* ---- Bytes at another rank count (trace-v1's bytes_rule) ----
 *
 * Some calls carry a per-rank share of a buffer split over the ranks
 * (1-bit LAMB's server phase: n/P, padded), so their bytes depend on P.
 * Recording the same run at two sizes pins, per call, the rule
 *
 *   unit(P) = a + ceil(b / P),   a >= 0, b >= 0 integers,
 *
 * where unit is the call's bytes, except for alltoall, whose unit is one
 * destination's block (bytes / P; bytes(P) = P unit(P)).  b = 0: the
 * bytes do not depend on P.  Of the rules that reproduce both recordings
 * the smallest a is taken, then the largest b: for a share ceil(m/P) of an
 * m-byte buffer that gives b = m rounded up to a multiple of the smaller
 * recorded size, exact at every P that is a multiple of it.
 *
 * lbs_comm_record_rule: split[i] = b for entry i of `at` (the trace's
 * recording); `other` is the same run at another size.  -EINVAL (with
 * the first call named) when the logs differ in length or in a call's
 * step, layer or kind, or a call's bytes fit no such rule (bytes that
 * grow with P, or b above LBS_COMM_RULE_MAX). */
#define LBS_COMM_RULE_MAX 9000000000000000ull   /* trace-v1's byte cap */
int lbs_comm_record_rule(const struct lbs_comm *at,
                         const struct lbs_comm *other,
                         unsigned long long *split, struct lbs_err *err);
/* The bytes entry e, logged on `ranks` ranks with rule split b, carries on
 * P ranks (e->bytes when b == 0 or P == ranks). */
unsigned long long lbs_comm_record_bytes_at(
    const struct lbs_comm_record_entry *e, int ranks,
    unsigned long long split, long P);

#ifdef __cplusplus
}
#endif
#endif
