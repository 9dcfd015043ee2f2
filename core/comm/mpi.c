/* mpi.c - Open MPI backend over MPI_COMM_WORLD.
 *
 * Counts above INT_MAX are sent in chunks (allreduce, bcast) or refused
 * with -EINVAL (the v-collectives, whose displacements are int in MPI-3).
 * Every MPI error is returned as -EIO naming the call; MPI's own error
 * handler is switched to MPI_ERRORS_RETURN so nothing aborts behind us.
 *
 * Half precision: MPI has no binary16 or bfloat16 type (Open MPI 4 has no
 * MPI_FLOAT16 / MPIX_C_FLOAT16 either), so each comm makes one 2-byte
 * contiguous datatype per format and user-defined SUM/MAX/MIN ops on it.
 * They move like any 2-byte type; reductions convert to float, operate,
 * and (SUM) round back to nearest even: one correctly rounded half
 * addition per pair (see comm.h).  Declared commutative, so Open MPI
 * keeps its usual algorithms; it still assumes associativity, which
 * rounded addition only has approximately: hence comm.h's bound.
 */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

#include "lbscale/comm.h"
#include "lbscale/half.h"

enum { F16, BF16, NHALF };

struct mpi_impl {
    MPI_Comm comm;
    int we_initialized;
    MPI_Datatype half[NHALF];          /* 2 contiguous bytes each */
    MPI_Op half_op[NHALF][3];          /* [format][LBS_SUM, _MAX, _MIN] */
    int nhalf_types, nhalf_ops;        /* how many were made (to free) */
};

static int half_index(enum lbs_dtype t)
{
    return t == LBS_FLOAT16 ? F16 : t == LBS_BFLOAT16 ? BF16 : -1;
}

static MPI_Datatype mpi_type(const struct lbs_comm *c, enum lbs_dtype t)
{
    const struct mpi_impl *m = c->impl;
    switch (t) {
    case LBS_FLOAT32: return MPI_FLOAT;
    case LBS_FLOAT64: return MPI_DOUBLE;
    case LBS_INT32: return MPI_INT32_T;
    case LBS_INT64: return MPI_INT64_T;
    case LBS_UINT8: return MPI_UINT8_T;
    case LBS_FLOAT16: return m->half[F16];
    case LBS_BFLOAT16: return m->half[BF16];
    }
    return MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(const struct lbs_comm *c, enum lbs_dtype t,
                     enum lbs_redop op)
{
    int h = half_index(t);
    if (h >= 0)
        return ((const struct mpi_impl *)c->impl)
            ->half_op[h][(unsigned)op < 3 ? op : LBS_SUM];
    return op == LBS_MAX ? MPI_MAX : op == LBS_MIN ? MPI_MIN : MPI_SUM;
}

/* ---- the half-precision reductions: inout[i] = in[i] (op) inout[i] ---- */

/* A block at a time through float, on the stack (L1-resident). */
#define HBLK 256

static void half_reduce(const uint16_t *in, uint16_t *io, int len, int bf,
                        enum lbs_redop op)
{
    float a[HBLK], b[HBLK];
    for (int i = 0; i < len; i += HBLK) {
        size_t m = (size_t)(len - i < HBLK ? len - i : HBLK);
        if (bf) {
            lbs_bf16_to_f32_array(in + i, a, m);
            lbs_bf16_to_f32_array(io + i, b, m);
        } else {
            lbs_f16_to_f32_array(in + i, a, m);
            lbs_f16_to_f32_array(io + i, b, m);
        }
        if (op == LBS_SUM) {
            for (size_t j = 0; j < m; j++)
                a[j] += b[j];
            if (bf)
                lbs_f32_to_bf16_array(a, io + i, m);
            else
                lbs_f32_to_f16_array(a, io + i, m);
            continue;
        }
        /* maxNum/minNum: keep inout unless in beats it or inout is NaN;
         * the winner's bits travel unchanged (no rounding) */
        for (size_t j = 0; j < m; j++)
            if (isnan(b[j]) || (op == LBS_MAX ? a[j] > b[j] : a[j] < b[j]))
                io[i + j] = in[i + j];
    }
}

#define HALF_OP(name, bf, op)                                            \
    static void name(void *in, void *io, int *len, MPI_Datatype *dt)     \
    {                                                                    \
        (void)dt;                                                        \
        half_reduce(in, io, *len, bf, op);                               \
    }
HALF_OP(f16_sum, 0, LBS_SUM)
HALF_OP(f16_max, 0, LBS_MAX)
HALF_OP(f16_min, 0, LBS_MIN)
HALF_OP(bf16_sum, 1, LBS_SUM)
HALF_OP(bf16_max, 1, LBS_MAX)
HALF_OP(bf16_min, 1, LBS_MIN)

static MPI_User_function *const half_fn[NHALF][3] = {
    {f16_sum, f16_max, f16_min}, {bf16_sum, bf16_max, bf16_min}};

/* The types and ops of one comm; -EIO naming the call on failure (what
 * was made is freed by free_half). */
static int make_half(struct mpi_impl *m, struct lbs_err *err)
{
    for (int h = 0; h < NHALF; h++) {
        int rc = MPI_Type_contiguous(2, MPI_BYTE, &m->half[h]);
        if (rc == MPI_SUCCESS && (rc = MPI_Type_commit(&m->half[h])) !=
                                     MPI_SUCCESS)
            MPI_Type_free(&m->half[h]);
        if (rc != MPI_SUCCESS)
            return lbs_err_set(err, -EIO, "MPI_Type_contiguous/commit (2-byte "
                               "half type) failed");
        m->nhalf_types++;
    }
    for (int k = 0; k < NHALF * 3; k++) {
        if (MPI_Op_create(half_fn[k / 3][k % 3], 1,
                          &m->half_op[k / 3][k % 3]) != MPI_SUCCESS)
            return lbs_err_set(err, -EIO, "MPI_Op_create (half-precision "
                               "reduction) failed");
        m->nhalf_ops++;
    }
    return 0;
}

static void free_half(struct mpi_impl *m)
{
    for (int k = 0; k < m->nhalf_ops; k++)
        MPI_Op_free(&m->half_op[k / 3][k % 3]);
    for (int h = 0; h < m->nhalf_types; h++)
        MPI_Type_free(&m->half[h]);
    m->nhalf_ops = m->nhalf_types = 0;
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
                               mpi_type(c, t), mpi_op(c, t, op), world(c));
        if (rc != MPI_SUCCESS)
            return fail(c, "MPI_Allreduce", rc);
    }
    return 0;
}

static int m_allreduce_to(struct lbs_comm *c, const void *send, void *recv,
                          size_t count, enum lbs_dtype t, enum lbs_redop op,
                          int layer)
{
    (void)layer;
    size_t es = lbs_dtype_size(t);
    for (size_t off = 0; off < count; off += CHUNK) {
        size_t n = count - off < CHUNK ? count - off : CHUNK;
        int rc = MPI_Allreduce((const char *)send + off * es,
                               (char *)recv + off * es, (int)n,
                               mpi_type(c, t), mpi_op(c, t, op), world(c));
        if (rc != MPI_SUCCESS)
            return fail(c, "MPI_Allreduce", rc);
    }
    return 0;
}

/* MPI forbids aliased send and receive buffers: the in-place forms of
 * comm.h are MPI_IN_PLACE. */
static const void *in_place(const void *send, const void *at)
{
    return send == at ? MPI_IN_PLACE : send;
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
    const char *own = (const char *)recv +
                      (size_t)c->rank * count * lbs_dtype_size(t);
    int rc = MPI_Allgather(in_place(send, own), (int)count, mpi_type(c, t),
                           recv, (int)count, mpi_type(c, t), world(c));
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
             : MPI_Allgatherv(in_place(send, (const char *)recv +
                                        displs[c->rank] * lbs_dtype_size(t)),
                              (int)count, mpi_type(c, t), recv, ic, ic + p,
                              mpi_type(c, t), world(c));
    free(ic);
    return rc == MPI_SUCCESS ? 0 : fail(c, "MPI_Allgatherv", rc);
}

static int m_alltoall(struct lbs_comm *c, const void *send, void *recv,
                      size_t count, enum lbs_dtype t, int layer)
{
    (void)layer;
    if (count > INT_MAX)
        return too_big(c, "MPI_Alltoall", count);
    int rc = MPI_Alltoall(in_place(send, recv), (int)count, mpi_type(c, t),
                          recv, (int)count, mpi_type(c, t), world(c));
    return rc == MPI_SUCCESS ? 0 : fail(c, "MPI_Alltoall", rc);
}

static int m_bcast(struct lbs_comm *c, void *buf, size_t count,
                   enum lbs_dtype t, int root, int layer)
{
    (void)layer;
    size_t es = lbs_dtype_size(t);
    for (size_t off = 0; off < count; off += CHUNK) {
        size_t n = count - off < CHUNK ? count - off : CHUNK;
        int rc = MPI_Bcast((char *)buf + off * es, (int)n, mpi_type(c, t),
                           root, world(c));
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
                       mpi_type(c, t), from[j], layer & 0x7fff, world(c),
                       &rq[nr++]);
    for (int j = 0; j < nto && rc == MPI_SUCCESS; j++)
        rc = MPI_Isend(send, (int)count, mpi_type(c, t), to[j], layer & 0x7fff,
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
    if (!fin)
        free_half(m);
    if (m->we_initialized && !fin)
        MPI_Finalize();
    free(m);
    free(c);
}

static const struct lbs_comm_ops mpi_ops = {
    .name = "mpi",
    .allreduce = m_allreduce,
    .allreduce_to = m_allreduce_to,
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
    int rc = make_half(m, err);
    if (rc) {
        free_half(m);
        if (m->we_initialized)
            MPI_Finalize();
        free(c);
        free(m);
        return rc;
    }
    MPI_Comm_rank(m->comm, &c->rank);
    MPI_Comm_size(m->comm, &c->size);
    c->ops = &mpi_ops;
    c->impl = m;
    *out = c;
    return 0;
}
