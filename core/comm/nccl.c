/* nccl.c - the NCCL backend: one rank per GPU, device buffers.
 *
 * Bootstrap over MPI (an mpi lbs_comm kept inside; in a build without
 * MPI, the self comm, for one rank only): rank and size are
 * MPI_COMM_WORLD's, rank 0 makes the ncclUniqueId and broadcasts it, and
 * each rank takes the GPU of its index among the ranks on its host (host
 * names gathered over MPI).  A host with more ranks than GPUs is refused:
 * NCCL rejects two ranks on one device.  Every rank learns whether all
 * ranks found their GPU before ncclCommInitRank, so a bad rank makes
 * every rank fail instead of leaving the others waiting in NCCL.
 *
 * Every buffer given to a collective must be device memory on this rank's
 * GPU.  A call enqueues on the comm's own stream and waits for it
 * (cudaStreamSynchronize), so calls are blocking like the mpi backend's
 * and an error is reported by the call that caused it, naming the failing
 * NCCL or CUDA call.  allgatherv, alltoall and the neighbour exchange are
 * one group of ncclSend/ncclRecv each; the block a rank sends to itself is
 * a device copy on the same stream.  Transfers of 0 elements are skipped
 * on both sides (counts are known to every rank).  The barrier is MPI's.
 * Layers and steps are not used.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_check.h"
#include "lbscale/comm.h"

struct nccl_impl {
    struct lbs_comm *boot;   /* mpi: rank, size, the unique id, barrier */
    ncclComm_t comm;
    cudaStream_t stream;
};

static struct nccl_impl *impl(struct lbs_comm *c)
{
    return c->impl;
}

/* ncclBfloat16 exists from NCCL 2.10 on, and there only when CUDA's
 * bfloat16 header was found (CUDA >= 11): nccl.h declares it under
 * __CUDA_BF16_TYPES_EXIST__. */
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0) && \
    defined(__CUDA_BF16_TYPES_EXIST__)
#define HAVE_NCCL_BF16 1
#else
#define HAVE_NCCL_BF16 0
#endif

/* NCCL's native types; halves are reduced by NCCL in half arithmetic
 * (correctly rounded per addition, as the mpi backend's ops are).
 * ncclNumTypes: not carried by this NCCL (check_type refuses it). */
static ncclDataType_t nc_type(enum lbs_dtype t)
{
    switch (t) {
    case LBS_FLOAT32: return ncclFloat32;
    case LBS_FLOAT64: return ncclFloat64;
    case LBS_INT32: return ncclInt32;
    case LBS_INT64: return ncclInt64;
    case LBS_UINT8: return ncclUint8;
    case LBS_FLOAT16: return ncclFloat16;
    case LBS_BFLOAT16:
#if HAVE_NCCL_BF16
        return ncclBfloat16;
#else
        return ncclNumTypes;
#endif
    }
    return ncclNumTypes;
}

/* Before anything is enqueued, so every rank (all pass the same dtype)
 * fails alike and none waits in NCCL for the others. */
static int check_type(struct lbs_comm *c, enum lbs_dtype t)
{
    if (nc_type(t) != ncclNumTypes)
        return 0;
    if (t == LBS_BFLOAT16)
        return lbs_err_set(c->err, -ENOTSUP, "nccl: this NCCL (%d) has no "
                           "bfloat16 (it needs NCCL >= 2.10 built with CUDA "
                           ">= 11)", NCCL_VERSION_CODE);
    return lbs_err_set(c->err, -EINVAL, "nccl: unknown dtype %d", (int)t);
}

/* What every collective starts with: the dtype refused before anything is
 * enqueued (check_type), then err (where LBS_NCCL and LBS_CU report) and m,
 * this comm's NCCL state.  The layer is only for the record comm. */
#define NCCL_CALL_BEGIN(c, t, layer)                                        \
    (void)(layer);                                                          \
    int trc_ = check_type(c, t);                                            \
    if (trc_)                                                               \
        return trc_;                                                        \
    struct lbs_err *err = (c)->err;                                         \
    struct nccl_impl *m = impl(c)

static ncclRedOp_t nc_op(enum lbs_redop op)
{
    return op == LBS_MAX ? ncclMax : op == LBS_MIN ? ncclMin : ncclSum;
}

/* Wait for this call's work; a kernel or transport fault surfaces here.
 * The stream is polled together with NCCL's asynchronous error (as
 * nccl-tests does): a peer that died or a broken link would otherwise
 * leave this rank spinning in the NCCL kernel for ever.  On such an error
 * the communicator is aborted, which also ends the kernel. */
static int drain(struct lbs_comm *c)
{
    struct lbs_err *err = c->err;
    struct nccl_impl *m = impl(c);
    for (;;) {
        cudaError_t q = cudaStreamQuery(m->stream);
        if (q == cudaSuccess)
            return 0;
        if (q != cudaErrorNotReady)
            return lbs_err_set(err, -EIO, "rank %d: cudaStreamQuery: %s",
                               c->rank, cudaGetErrorString(q));
        ncclResult_t ar = ncclSuccess;
        ncclResult_t nr = ncclCommGetAsyncError(m->comm, &ar);
        if (nr == ncclSuccess && (ar == ncclSuccess || ar == ncclInProgress))
            continue;
        ncclCommAbort(m->comm);
        m->comm = NULL;
        return lbs_err_set(err, -EIO, "rank %d: NCCL failed asynchronously "
                           "(communicator aborted): %s", c->rank,
                           ncclGetErrorString(nr != ncclSuccess ? nr : ar));
    }
}

static int group_fail(struct lbs_comm *c, const char *call, ncclResult_t r)
{
    return lbs_err_set(c->err, -EIO, "%s failed on rank %d: %s", call,
                       c->rank, ncclGetErrorString(r));
}

/* Close a group (always, even after a failed call inside it), then wait
 * for its work.  nr and what: the first failed call inside the group. */
static int group_end(struct lbs_comm *c, const char *op, ncclResult_t nr,
                     const char *what)
{
    ncclResult_t ne = ncclGroupEnd();
    if (nr != ncclSuccess)
        return group_fail(c, what, nr);
    if (ne != ncclSuccess) {
        char call[64];
        snprintf(call, sizeof call, "ncclGroupEnd (%s)", op);
        return group_fail(c, call, ne);
    }
    return drain(c);
}

static int n_allreduce(struct lbs_comm *c, void *buf, size_t count,
                       enum lbs_dtype t, enum lbs_redop op, int layer)
{
    NCCL_CALL_BEGIN(c, t, layer);
    LBS_NCCL(ncclAllReduce(buf, buf, count, nc_type(t), nc_op(op), m->comm,
                           m->stream));
    return drain(c);
}

static int n_allreduce_to(struct lbs_comm *c, const void *send, void *recv,
                          size_t count, enum lbs_dtype t, enum lbs_redop op,
                          int layer)
{
    NCCL_CALL_BEGIN(c, t, layer);
    LBS_NCCL(ncclAllReduce(send, recv, count, nc_type(t), nc_op(op), m->comm,
                           m->stream));
    return drain(c);
}

static int n_allgather(struct lbs_comm *c, const void *send, void *recv,
                       size_t count, enum lbs_dtype t, int layer)
{
    NCCL_CALL_BEGIN(c, t, layer);
    LBS_NCCL(ncclAllGather(send, recv, count, nc_type(t), m->comm,
                           m->stream));
    return drain(c);
}

/* Own block first (a device copy), then one group: send ours to every
 * peer, receive every peer's block at its displacement. */
static int n_allgatherv(struct lbs_comm *c, const void *send, size_t count,
                        void *recv, const size_t *counts, const size_t *displs,
                        enum lbs_dtype t, int layer)
{
    NCCL_CALL_BEGIN(c, t, layer);
    size_t es = lbs_dtype_size(t);
    char *r8 = recv;
    if (count && r8 + displs[c->rank] * es != (const char *)send)
        LBS_CU(cudaMemcpyAsync(r8 + displs[c->rank] * es, send, count * es,
                               cudaMemcpyDeviceToDevice, m->stream));
    ncclResult_t nr = ncclGroupStart();
    const char *what = "ncclGroupStart";
    for (int r = 0; r < c->size && nr == ncclSuccess; r++) {
        if (r == c->rank)
            continue;
        if (count && (nr = ncclSend(send, count, nc_type(t), r, m->comm,
                                    m->stream)) != ncclSuccess)
            what = "ncclSend (allgatherv)";
        else if (counts[r] &&
                 (nr = ncclRecv(r8 + displs[r] * es, counts[r], nc_type(t), r,
                                m->comm, m->stream)) != ncclSuccess)
            what = "ncclRecv (allgatherv)";
    }
    return group_end(c, "allgatherv", nr, what);
}

static int n_alltoall(struct lbs_comm *c, const void *send, void *recv,
                      size_t count, enum lbs_dtype t, int layer)
{
    NCCL_CALL_BEGIN(c, t, layer);
    size_t bytes = count * lbs_dtype_size(t);
    const char *s8 = send;
    char *r8 = recv;
    if (!count)
        return 0;
    if (send == recv)
        return lbs_err_set(err, -ENOTSUP, "nccl: in-place alltoall (send "
                           "== recv) is not implemented");
    LBS_CU(cudaMemcpyAsync(r8 + (size_t)c->rank * bytes,
                           s8 + (size_t)c->rank * bytes, bytes,
                           cudaMemcpyDeviceToDevice, m->stream));
    ncclResult_t nr = ncclGroupStart();
    const char *what = "ncclGroupStart";
    for (int r = 0; r < c->size && nr == ncclSuccess; r++) {
        if (r == c->rank)
            continue;
        if ((nr = ncclSend(s8 + (size_t)r * bytes, count, nc_type(t), r,
                           m->comm, m->stream)) != ncclSuccess)
            what = "ncclSend (alltoall)";
        else if ((nr = ncclRecv(r8 + (size_t)r * bytes, count, nc_type(t), r,
                                m->comm, m->stream)) != ncclSuccess)
            what = "ncclRecv (alltoall)";
    }
    return group_end(c, "alltoall", nr, what);
}

static int n_bcast(struct lbs_comm *c, void *buf, size_t count,
                   enum lbs_dtype t, int root, int layer)
{
    NCCL_CALL_BEGIN(c, t, layer);
    LBS_NCCL(ncclBroadcast(buf, buf, count, nc_type(t), root, m->comm,
                           m->stream));
    return drain(c);
}

static int n_barrier(struct lbs_comm *c)
{
    struct nccl_impl *m = impl(c);
    int rc = drain(c);   /* nothing of ours still in flight */
    if (rc)
        return rc;
    m->boot->err = c->err;
    return lbs_barrier(m->boot);
}

static int n_neighbors(struct lbs_comm *c, const void *send, size_t count,
                       enum lbs_dtype t, const int *to, int nto,
                       const int *from, int nfrom, void *recv, int layer)
{
    NCCL_CALL_BEGIN(c, t, layer);
    size_t bytes = count * lbs_dtype_size(t);
    char *r8 = recv;
    if (!count)
        return 0;
    for (int j = 0; j < nfrom; j++)   /* a self-loop: our own vector */
        if (from[j] == c->rank)
            LBS_CU(cudaMemcpyAsync(r8 + (size_t)j * bytes, send, bytes,
                                   cudaMemcpyDeviceToDevice, m->stream));
    ncclResult_t nr = ncclGroupStart();
    const char *what = "ncclGroupStart";
    for (int j = 0; j < nfrom && nr == ncclSuccess; j++)
        if (from[j] != c->rank &&
            (nr = ncclRecv(r8 + (size_t)j * bytes, count, nc_type(t),
                           from[j], m->comm, m->stream)) != ncclSuccess)
            what = "ncclRecv (neighbours)";
    for (int j = 0; j < nto && nr == ncclSuccess; j++)
        if (to[j] != c->rank &&
            (nr = ncclSend(send, count, nc_type(t), to[j], m->comm,
                           m->stream)) != ncclSuccess)
            what = "ncclSend (neighbours)";
    return group_end(c, "neighbours", nr, what);
}

static void n_free(struct lbs_comm *c)
{
    struct nccl_impl *m = impl(c);
    if (m->comm)
        ncclCommDestroy(m->comm);   /* teardown: errors have no reader */
    if (m->stream)
        cudaStreamDestroy(m->stream);
    lbs_comm_free(m->boot);         /* finalizes MPI if it started it */
    free(m);
    free(c);
}

static const struct lbs_comm_ops nccl_ops = {
    .name = "nccl",
    .allreduce = n_allreduce,
    .allreduce_to = n_allreduce_to,
    .allgather = n_allgather,
    .allgatherv = n_allgatherv,
    .alltoall = n_alltoall,
    .bcast = n_bcast,
    .barrier = n_barrier,
    .neighbors = n_neighbors,
    .free = n_free,
};

/* This rank's index among the ranks on its host, and how many there are
 * (host names gathered over MPI: a collective, so every rank calls it). */
static int local_rank(struct lbs_comm *boot, char *host, size_t hn,
                      int *local, int *nlocal, struct lbs_err *err)
{
    memset(host, 0, hn);
    gethostname(host, hn - 1);
    char *all = calloc((size_t)boot->size, hn);
    if (!all)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = lbs_allgather(boot, host, all, hn, LBS_UINT8, -1);
    *local = *nlocal = 0;
    for (int r = 0; r < boot->size && !rc; r++)
        if (!strncmp(all + (size_t)r * hn, host, hn)) {
            *local += r < boot->rank;
            ++*nlocal;
        }
    free(all);
    return rc;
}

/* GPU `local` of this host, refusing more ranks than GPUs.  A rank that
 * sees one GPU while others share its host was given its own by the
 * launcher (CUDA_VISIBLE_DEVICES per rank, e.g. Slurm --gpus-per-task=1):
 * it takes that one, and NCCL itself refuses two ranks on one GPU. */
static int use_device(int local, int nlocal, const char *host,
                      struct lbs_err *err)
{
    int ndev = 0;
    cudaError_t cr = cudaGetDeviceCount(&ndev);
    if (cr != cudaSuccess || ndev == 0)
        return lbs_err_set(err, -ENODEV, "no CUDA GPU on %s: "
                           "cudaGetDeviceCount: %s", host,
                           cr == cudaSuccess ? "0 devices"
                                             : cudaGetErrorString(cr));
    if (ndev == 1)
        local = 0;
    else if (nlocal > ndev)
        return lbs_err_set(err, -EINVAL, "%d ranks on %s but %d GPU(s) "
                           "visible (CUDA_VISIBLE_DEVICES): the nccl backend "
                           "needs one GPU per rank", nlocal, host, ndev);
    LBS_CU(cudaSetDevice(local));
    return 0;
}

int lbs_comm_nccl_new(struct lbs_comm **out, struct lbs_err *err)
{
    *out = NULL;
    struct lbs_comm *boot = NULL;
    int rc = lbs_comm_mpi_new(&boot, err);
    if (rc == -ENOTSUP) {
        /* No MPI in this build: one rank needs no unique id to be passed,
         * so it boots from the self comm; under a launcher that started
         * several ranks each would wrongly be a world of one. */
        const char *n = getenv("OMPI_COMM_WORLD_SIZE");
        if (!n)
            n = getenv("PMI_SIZE");
        if (n && atoi(n) > 1)
            return lbs_err_set(err, -ENOTSUP, "the nccl backend passes its "
                               "unique id over MPI, and this lbscale was "
                               "built without MPI (%s ranks were started)",
                               n);
        rc = lbs_comm_self_new(&boot, err);
    }
    if (rc)
        return rc;
    boot->err = err;
    char host[64];
    int local = 0, nlocal = 0;
    rc = local_rank(boot, host, sizeof host, &local, &nlocal, err);
    if (rc) {
        lbs_comm_free(boot);
        return rc;
    }
    /* from here on a failure is local: the status allreduce below makes
     * every rank stop, before anyone waits in NCCL */
    struct lbs_comm *c = calloc(1, sizeof *c);
    struct nccl_impl *m = calloc(1, sizeof *m);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (!c || !m)
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    if (!rc)
        rc = use_device(local, nlocal, host, err);
    if (!rc) {
        cudaError_t cr = cudaStreamCreateWithFlags(&m->stream,
                                                   cudaStreamNonBlocking);
        if (cr != cudaSuccess)
            rc = lbs_err_set(err, -EIO, "cudaStreamCreateWithFlags: %s",
                             cudaGetErrorString(cr));
    }
    if (!rc && boot->rank == 0) {
        ncclResult_t nr = ncclGetUniqueId(&id);
        if (nr != ncclSuccess)
            rc = lbs_err_set(err, -EIO, "ncclGetUniqueId: %s",
                             ncclGetErrorString(nr));
    }
    /* all ranks go on together, or all stop */
    int bad = rc != 0, arc;
    struct lbs_err e2 = {{0}};
    boot->err = &e2;
    arc = lbs_allreduce(boot, &bad, 1, LBS_INT32, LBS_MAX, -1);
    if (!arc && bad && !rc)
        rc = lbs_err_set(err, -EIO, "the nccl backend could not start on "
                         "another rank");
    if (arc && !rc)
        rc = lbs_err_set(err, arc, "%s", e2.msg);
    if (!rc && (arc = lbs_bcast(boot, &id, sizeof id, LBS_UINT8, 0, -1)))
        rc = lbs_err_set(err, arc, "%s", e2.msg);
    boot->err = NULL;
    if (!rc) {
        ncclResult_t nr = ncclCommInitRank(&m->comm, boot->size, id,
                                           boot->rank);
        if (nr != ncclSuccess)
            rc = lbs_err_set(err, -EIO, "ncclCommInitRank (rank %d of %d): "
                             "%s", boot->rank, boot->size,
                             ncclGetErrorString(nr));
    }
    if (rc) {
        if (m && m->stream)
            cudaStreamDestroy(m->stream);
        lbs_comm_free(boot);
        free(m);
        free(c);
        return rc;
    }
    m->boot = boot;
    c->ops = &nccl_ops;
    c->rank = boot->rank;
    c->size = boot->size;
    c->impl = m;
    *out = c;
    return 0;
}
