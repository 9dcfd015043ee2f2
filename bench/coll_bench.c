/* coll_bench.c - `lbscale coll`: collective benchmark in the style of
 * nccl-tests, over the lbs_comm interface (mpi under mpirun, self alone,
 * nccl with --backend nccl: one rank per GPU, device buffers).
 *
 * One shared driver, one small ops table per pattern (the nccl-tests
 * layout): setup (sizes, buffers, data), prep (untimed, before each call:
 * restore in-place buffers, poison outputs before the last call), run (the
 * timed call) and check (count wrong elements).  Every rank fills its
 * input from a pattern of (rank, index) with small integers, so float sums
 * are exact and each rank can compute every other rank's contribution:
 * the check after the last timed iteration is exact, #wrong is summed over
 * ranks.
 *
 * Sizes follow nccl-tests: `size` is the whole buffer of the operation
 * (allreduce/bcast: the buffer; allgather(v): the gathered output;
 * reduce-scatter: the input; alltoall: the send buffer), rounded down so
 * it divides as the collective needs.  The JSON `bytes` is the trace-v1
 * payload this rank contributes (results/schema/trace-v1.md), the value
 * `lbscale sim calibrate` reads: allreduce/bcast/alltoall/reduce-scatter
 * size, allgather size/P, allgatherv the mean per-rank payload (size/P),
 * neighbour what goes to each destination.
 *
 * Time: each iteration is barrier, t0, call, t1 on every rank; the
 * per-iteration times are reduced with MAX over ranks, and time_us is the
 * median of those over the timed iterations (min and max reported too).
 *
 * Reduce-scatter is not part of lbs_comm: it is called here through MPI
 * directly (MPI_Reduce_scatter_block over MPI_COMM_WORLD, the
 * communicator the mpi backend uses) and is a copy on the self backend;
 * the nccl backend leaves it out.
 *
 * nccl: setup, prep and check stay on host buffers; the driver uploads
 * them to device twins before each call and downloads after the last
 * one, all untimed (dev_* below), and the timings and #wrong travel over
 * a second, mpi comm, because NCCL takes device memory only.
 *
 * Ownership: everything is allocated and freed per (pattern, size) here. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "cli.h"
#include "driver.h"
#include "lbs_config.h"
#include "lbs_cuda.h"
#include "lbs_cuda_compress.h"
#include "lbscale/comm.h"
#include "lbscale/param.h"
#include "lbscale/topology.h"

#if LBS_HAVE_MPI
#include <mpi.h>
#endif

struct cctx {
    struct lbs_comm *c;
    int rank, P;
    double density;
    int root;
    struct lbs_topology *topo;
    /* filled by setup */
    size_t count;       /* elements reported (nccl-tests `count`) */
    size_t size;        /* bytes reported (nccl-tests `size`) */
    double payload;     /* trace-v1 bytes of this rank */
    size_t n1, n2;      /* pattern-specific element counts */
    void *a, *b, *d;    /* buffers */
    size_t na, nb, nd;  /* their bytes (hmalloc) */
    void *da, *db, *dd; /* nccl: device twins of a, b, d */
    size_t *counts, *displs;
    int *from, *to, nfrom, nto;
    double *w;
    long step;
};

/* malloc that records the size: the nccl backend mirrors a, b, d on the
 * GPU. */
static void *hmalloc(size_t *rec, size_t bytes)
{
    *rec = bytes;
    return malloc(bytes);
}

/* Small integers: float sums over any rank count stay exact. */
static inline float pat(int r, size_t i)
{
    return (float)(((unsigned)r * 7u + (unsigned)(i % 13)) % 13u);
}
/* sum over r < P of pat(r, i), by i mod 13 */
static float sum_tab[13];
static void sum_tab_init(int P)
{
    for (int m = 0; m < 13; m++) {
        double s = 0;
        for (int r = 0; r < P; r++)
            s += pat(r, (size_t)m);
        sum_tab[m] = (float)s;
    }
}
static inline unsigned char bpat(int r, size_t j, unsigned salt)
{
    return (unsigned char)(((unsigned)r * 31u + (unsigned)j * 7u + salt) &
                           0xffu);
}

static void fill(float *x, size_t n, int r, size_t off)
{
    for (size_t i = 0; i < n; i++)
        x[i] = pat(r, off + i);
}
static void poison(void *x, size_t bytes)
{
    memset(x, 0xff, bytes);   /* NaN as float, -1 as int32, 255 as byte */
}

/* ---- allreduce (also SLAMB's masked allreduce: k*n floats) ---------- */
static int ar_setup_n(struct cctx *x, size_t n)
{
    if (!n)
        return 1;
    x->n1 = n;
    x->a = hmalloc(&x->na, n * sizeof(float));
    return x->a ? 0 : -ENOMEM;
}
static int ar_setup(struct cctx *x, size_t S)
{
    x->count = S / 4;
    x->size = x->payload = x->count * 4;
    return ar_setup_n(x, x->count);
}
static void ar_prep(struct cctx *x, int last)
{
    (void)last;
    fill(x->a, x->n1, x->rank, 0);
}
static int ar_run(struct cctx *x)
{
    return lbs_allreduce(x->c, x->a, x->n1, LBS_FLOAT32, LBS_SUM, -1);
}
static long ar_check(struct cctx *x)
{
    long bad = 0;
    const float *a = x->a;
    for (size_t i = 0; i < x->n1; i++)
        bad += a[i] != sum_tab[i % 13];
    return bad;
}
static int mar_setup(struct cctx *x, size_t S)
{
    x->count = S / 4;
    x->size = x->count * 4;
    size_t k = (size_t)llround(x->density * (double)x->count);
    if (x->count && !k)
        k = 1;
    x->payload = (double)k * 4;
    return ar_setup_n(x, k);
}

/* ---- allgather -------------------------------------------------------- */
static int ag_setup(struct cctx *x, size_t S)
{
    x->n1 = S / 4 / (size_t)x->P;
    if (!x->n1)
        return 1;
    x->count = x->n1 * (size_t)x->P;
    x->size = x->count * 4;
    x->payload = (double)x->n1 * 4;
    x->a = hmalloc(&x->na, x->n1 * 4);
    x->b = hmalloc(&x->nb, x->count * 4);
    if (!x->a || !x->b)
        return -ENOMEM;
    fill(x->a, x->n1, x->rank, 0);
    return 0;
}
static void ag_prep(struct cctx *x, int last)
{
    if (last)
        poison(x->b, x->count * 4);
}
static int ag_run(struct cctx *x)
{
    return lbs_allgather(x->c, x->a, x->b, x->n1, LBS_FLOAT32, -1);
}
static long ag_check(struct cctx *x)
{
    long bad = 0;
    const float *b = x->b;
    for (int r = 0; r < x->P; r++)
        for (size_t i = 0; i < x->n1; i++)
            bad += b[(size_t)r * x->n1 + i] != pat(r, i);
    return bad;
}

/* ---- allgatherv: rank r sends a share proportional to r + 1 ---------- */
static int agv_setup(struct cctx *x, size_t S)
{
    size_t total = S / 4, P = (size_t)x->P;
    if (total < P)
        return 1;
    x->counts = malloc(P * sizeof *x->counts);
    x->displs = malloc(P * sizeof *x->displs);
    if (!x->counts || !x->displs)
        return -ENOMEM;
    size_t wsum = P * (P + 1) / 2, off = 0;
    for (size_t r = 0; r < P; r++) {
        x->counts[r] = r + 1 == P ? total - off
                                  : (size_t)((double)total * (double)(r + 1) /
                                             (double)wsum);
        x->displs[r] = off;
        off += x->counts[r];
    }
    x->count = total;
    x->size = total * 4;
    x->payload = (double)x->size / (double)P;
    x->n1 = x->counts[x->rank];
    x->a = hmalloc(&x->na, (x->n1 ? x->n1 : 1) * 4);
    x->b = hmalloc(&x->nb, total * 4);
    if (!x->a || !x->b)
        return -ENOMEM;
    fill(x->a, x->n1, x->rank, 0);
    return 0;
}
static void agv_prep(struct cctx *x, int last)
{
    if (last)
        poison(x->b, x->count * 4);
}
static int agv_run(struct cctx *x)
{
    return lbs_allgatherv(x->c, x->a, x->n1, x->b, x->counts, x->displs,
                          LBS_FLOAT32, -1);
}
static long agv_check(struct cctx *x)
{
    long bad = 0;
    const float *b = x->b;
    for (int r = 0; r < x->P; r++)
        for (size_t i = 0; i < x->counts[r]; i++)
            bad += b[x->displs[r] + i] != pat(r, i);
    return bad;
}

/* ---- reduce-scatter (MPI directly; copy on one rank) ------------------ */
/* P blocks of n1 floats to send; receive one block (reduce-scatter) or P
 * (alltoall). */
static int blocks_setup(struct cctx *x, size_t S, size_t recv_blocks)
{
    x->n1 = S / 4 / (size_t)x->P;
    if (!x->n1)
        return 1;
    x->count = x->n1 * (size_t)x->P;
    x->size = x->count * 4;
    x->payload = (double)x->size;
    x->a = hmalloc(&x->na, x->count * 4);
    x->b = hmalloc(&x->nb, x->n1 * recv_blocks * 4);
    if (!x->a || !x->b)
        return -ENOMEM;
    fill(x->a, x->count, x->rank, 0);
    return 0;
}
static int rs_setup(struct cctx *x, size_t S)
{
    return blocks_setup(x, S, 1);
}
static void rs_prep(struct cctx *x, int last)
{
    if (last)
        poison(x->b, x->n1 * 4);
}
static int rs_run(struct cctx *x)
{
    if (x->P == 1 && strcmp(x->c->ops->name, "mpi")) {
        memcpy(x->b, x->a, x->n1 * 4);
        return 0;
    }
#if LBS_HAVE_MPI
    if (!strcmp(x->c->ops->name, "mpi")) {
        if (x->n1 > INT_MAX)
            return lbs_err_set(x->c->err, -EINVAL, "reduce-scatter: %zu "
                               "elements exceed MPI's int count", x->n1);
        int mrc = MPI_Reduce_scatter_block(x->a, x->b, (int)x->n1, MPI_FLOAT,
                                           MPI_SUM, MPI_COMM_WORLD);
        return mrc == MPI_SUCCESS ? 0
               : lbs_err_set(x->c->err, -EIO, "MPI_Reduce_scatter_block "
                             "failed (%d)", mrc);
    }
#endif
    return lbs_err_set(x->c->err, -ENOTSUP, "reduce-scatter needs the mpi "
                       "backend");
}
static long rs_check(struct cctx *x)
{
    long bad = 0;
    const float *b = x->b;
    size_t off = (size_t)x->rank * x->n1;
    for (size_t i = 0; i < x->n1; i++)
        bad += b[i] != sum_tab[(off + i) % 13];
    return bad;
}

/* ---- alltoall --------------------------------------------------------- */
static int a2a_setup(struct cctx *x, size_t S)
{
    return blocks_setup(x, S, (size_t)x->P);
}
static void a2a_prep(struct cctx *x, int last)
{
    if (last)
        poison(x->b, x->count * 4);
}
static int a2a_run(struct cctx *x)
{
    return lbs_alltoall(x->c, x->a, x->b, x->n1, LBS_FLOAT32, -1);
}
static long a2a_check(struct cctx *x)
{
    long bad = 0;
    const float *b = x->b;
    size_t off = (size_t)x->rank * x->n1;
    for (int s = 0; s < x->P; s++)
        for (size_t i = 0; i < x->n1; i++)
            bad += b[(size_t)s * x->n1 + i] != pat(s, off + i);
    return bad;
}

/* ---- broadcast -------------------------------------------------------- */
static int bc_setup(struct cctx *x, size_t S)
{
    x->count = x->n1 = S / 4;
    if (!x->n1)
        return 1;
    x->size = x->count * 4;
    x->payload = (double)x->size;
    x->a = hmalloc(&x->na, x->n1 * 4);
    if (!x->a)
        return -ENOMEM;
    if (x->rank == x->root)
        fill(x->a, x->n1, x->root, 0);
    else
        poison(x->a, x->n1 * 4);
    return 0;
}
static void bc_prep(struct cctx *x, int last)
{
    if (last && x->rank != x->root)
        poison(x->a, x->n1 * 4);
}
static int bc_run(struct cctx *x)
{
    return lbs_bcast(x->c, x->a, x->n1, LBS_FLOAT32, x->root, -1);
}
static long bc_check(struct cctx *x)
{
    long bad = 0;
    const float *a = x->a;
    for (size_t i = 0; i < x->n1; i++)
        bad += a[i] != pat(x->root, i);
    return bad;
}

/* ---- neighbour exchange on a topology --------------------------------- */
static int nb_setup(struct cctx *x, size_t S)
{
    x->count = x->n1 = S / 4;
    if (!x->n1)
        return 1;
    int deg = lbs_topology_degree(x->topo);
    x->size = x->count * 4;
    x->payload = (double)x->size;
    x->a = hmalloc(&x->na, x->n1 * 4);
    x->b = hmalloc(&x->nb, x->n1 * 4 * (size_t)(deg ? deg : 1));
    x->from = malloc((size_t)(deg ? deg : 1) * sizeof(int));
    x->to = malloc((size_t)(deg ? deg : 1) * sizeof(int));
    x->w = malloc((size_t)(deg ? deg : 1) * sizeof(double));
    if (!x->a || !x->b || !x->from || !x->to || !x->w)
        return -ENOMEM;
    fill(x->a, x->n1, x->rank, 0);
    x->step = 0;
    return 0;
}
static void nb_prep(struct cctx *x, int last)
{
    struct lbs_topo_peers p = {.from = x->from, .to = x->to, .w = x->w};
    lbs_topology_peers(x->topo, x->rank, ++x->step, &p);
    x->nfrom = p.nfrom;
    x->nto = p.nto;
    if (last)
        poison(x->b, x->n1 * 4 * (size_t)(p.nfrom ? p.nfrom : 1));
}
static int nb_run(struct cctx *x)
{
    if (!x->nto && !x->nfrom)
        return 0;
    return lbs_neighbor_exchange(x->c, x->a, x->n1, LBS_FLOAT32, x->to,
                                 x->nto, x->from, x->nfrom, x->b, -1);
}
static long nb_check(struct cctx *x)
{
    long bad = 0;
    const float *b = x->b;
    for (int j = 0; j < x->nfrom; j++)
        for (size_t i = 0; i < x->n1; i++)
            bad += b[(size_t)j * x->n1 + i] != pat(x->from[j], i);
    return bad;
}

/* ---- top-k allgather: k*n (int32 index, fp32 value) pairs ------------- */
struct kv { int32_t idx; float val; };
static int tk_setup(struct cctx *x, size_t S)
{
    x->count = S / 4;
    if (!x->count)
        return 1;
    x->size = x->count * 4;
    size_t k = (size_t)llround(x->density * (double)x->count);
    x->n1 = k ? k : 1;
    x->payload = (double)x->n1 * sizeof(struct kv);
    struct kv *a = hmalloc(&x->na, x->n1 * sizeof *a);
    x->a = a;
    x->b = hmalloc(&x->nb, x->n1 * (size_t)x->P * sizeof *a);
    if (!x->a || !x->b)
        return -ENOMEM;
    for (size_t j = 0; j < x->n1; j++)
        a[j] = (struct kv){(int32_t)((j * 131 + (size_t)x->rank) % x->count),
                           pat(x->rank, j)};
    return 0;
}
static void tk_prep(struct cctx *x, int last)
{
    if (last)
        poison(x->b, x->n1 * (size_t)x->P * sizeof(struct kv));
}
static int tk_run(struct cctx *x)
{
    return lbs_allgather(x->c, x->a, x->b, 2 * x->n1, LBS_INT32, -1);
}
static long tk_check(struct cctx *x)
{
    long bad = 0;
    const struct kv *b = x->b;
    for (int r = 0; r < x->P; r++)
        for (size_t j = 0; j < x->n1; j++) {
            const struct kv *e = &b[(size_t)r * x->n1 + j];
            bad += e->idx != (int32_t)((j * 131 + (size_t)r) % x->count) ||
                   e->val != pat(r, j);
        }
    return bad;
}

/* ---- 1-bit: alltoall of n/8 bytes + allgather of n/(8P) bytes --------- */
static int ob_setup(struct cctx *x, size_t S)
{
    size_t P = (size_t)x->P;
    x->count = S / 4 / (8 * P) * (8 * P);
    if (!x->count)
        return 1;
    x->size = x->count * 4;
    x->n1 = x->count / 8 / P;             /* bytes per block */
    x->payload = (double)(x->count / 8 + x->n1);
    x->a = hmalloc(&x->na, x->n1 * P);        /* packed signs, P blocks */
    x->b = hmalloc(&x->nb, x->n1 * P);        /* received blocks */
    x->d = hmalloc(&x->nd, x->n1 * (P + 1));  /* own + gathered chunks */
    if (!x->a || !x->b || !x->d)
        return -ENOMEM;
    unsigned char *a = x->a, *d = x->d;
    for (size_t j = 0; j < x->n1 * P; j++)
        a[j] = bpat(x->rank, j, 0);
    for (size_t j = 0; j < x->n1; j++)
        d[j] = bpat(x->rank, j, 101);
    return 0;
}
static void ob_prep(struct cctx *x, int last)
{
    if (last) {
        poison(x->b, x->n1 * (size_t)x->P);
        poison((unsigned char *)x->d + x->n1, x->n1 * (size_t)x->P);
    }
}
static int ob_run(struct cctx *x)
{
    unsigned char *d = x->d;
    int rc = lbs_alltoall(x->c, x->a, x->b, x->n1, LBS_UINT8, -1);
    return rc ? rc : lbs_allgather(x->c, d, d + x->n1, x->n1, LBS_UINT8, -1);
}
static long ob_check(struct cctx *x)
{
    long bad = 0;
    const unsigned char *b = x->b, *g = (const unsigned char *)x->d + x->n1;
    size_t off = (size_t)x->rank * x->n1;
    for (int s = 0; s < x->P; s++)
        for (size_t j = 0; j < x->n1; j++) {
            bad += b[(size_t)s * x->n1 + j] != bpat(s, off + j, 0);
            bad += g[(size_t)s * x->n1 + j] != bpat(s, j, 101);
        }
    return bad;
}

/* ---- the table ---------------------------------------------------------- */
enum bw_kind { BW_AR, BW_AG, BW_ONE, BW_DEG };
struct coll_ops {
    const char *name, *alias, *type;
    enum bw_kind bw;
    int compressed;
    int (*setup)(struct cctx *x, size_t S);
    void (*prep)(struct cctx *x, int last);
    int (*run)(struct cctx *x);
    long (*check)(struct cctx *x);
};
static const struct coll_ops colls[] = {
    {"allreduce", NULL, "float", BW_AR, 0, ar_setup, ar_prep, ar_run, ar_check},
    {"allgather", NULL, "float", BW_AG, 0, ag_setup, ag_prep, ag_run, ag_check},
    {"allgatherv", NULL, "float", BW_AG, 0, agv_setup, agv_prep, agv_run,
     agv_check},
    {"reduce_scatter", "reduce-scatter", "float", BW_AG, 0, rs_setup, rs_prep,
     rs_run, rs_check},
    {"alltoall", NULL, "float", BW_AG, 0, a2a_setup, a2a_prep, a2a_run,
     a2a_check},
    {"bcast", "broadcast", "float", BW_ONE, 0, bc_setup, bc_prep, bc_run,
     bc_check},
    {"neighbor", "neighbour", "float", BW_DEG, 0, nb_setup, nb_prep, nb_run,
     nb_check},
    {"masked_allreduce", "slamb", "float", BW_AR, 1, mar_setup, ar_prep,
     ar_run, ar_check},
    {"topk_allgather", "topk", "i32+f32", BW_AR, 1, tk_setup, tk_prep, tk_run,
     tk_check},
    {"onebit", "1bit", "uint8", BW_AR, 1, ob_setup, ob_prep, ob_run,
     ob_check},
};
#define NCOLL (sizeof colls / sizeof colls[0])

static double bw_factor(const struct coll_ops *o, int P, int deg)
{
    switch (o->bw) {
    case BW_AR: return 2.0 * (P - 1) / P;
    case BW_AG: return (double)(P - 1) / P;
    case BW_ONE: return 1.0;
    case BW_DEG: return deg;
    }
    return 1.0;
}

static void cctx_free(struct cctx *x)
{
    free(x->a); free(x->b); free(x->d);
    lbs_cuda_mem_free(x->da); lbs_cuda_mem_free(x->db);
    lbs_cuda_mem_free(x->dd);
    x->da = x->db = x->dd = NULL;
    x->na = x->nb = x->nd = 0;
    free(x->counts); free(x->displs);
    free(x->from); free(x->to); free(x->w);
    x->a = x->b = x->d = NULL;
    x->counts = x->displs = NULL;
    x->from = x->to = NULL;
    x->w = NULL;
}

/* The smallest size of the sweep minb, minb*f, ... <= maxb that holds at
 * least one element per rank of op, or 0 when none does (a table with no
 * row is refused as bad input instead of printed empty). */
static size_t first_fit(const struct coll_ops *op, const struct cctx *x,
                        size_t minb, size_t maxb, size_t factor)
{
    for (size_t S = minb; S <= maxb;) {
        struct cctx c = {.c = x->c, .rank = x->rank, .P = x->P,
                         .density = x->density, .root = x->root,
                         .topo = x->topo};
        int s = op->setup(&c, S);
        cctx_free(&c);
        if (s <= 0)            /* fits (or out of memory: let it report) */
            return S;
        if (S > maxb / factor)
            break;
        S *= factor;
    }
    return 0;
}

/* ---- nccl: the same patterns on device twins of a, b, d ---------------- */
/* Host buffers stay where setup, prep and check work; around each call
 * the host data is uploaded (untimed) and the pointers swapped for the
 * device ones, and after the last call the results come back. */
static int dev_alloc(struct cctx *x, struct lbs_err *err)
{
    int rc = 0;
    if (x->na && !rc) rc = lbs_cuda_mem_alloc(&x->da, x->na, err);
    if (x->nb && !rc) rc = lbs_cuda_mem_alloc(&x->db, x->nb, err);
    if (x->nd && !rc) rc = lbs_cuda_mem_alloc(&x->dd, x->nd, err);
    return rc;
}
static int dev_put(struct cctx *x, struct lbs_err *err)
{
    int rc = 0;
    if (x->na && !rc) rc = lbs_cuda_mem_put(x->da, x->a, x->na, err);
    if (x->nb && !rc) rc = lbs_cuda_mem_put(x->db, x->b, x->nb, err);
    if (x->nd && !rc) rc = lbs_cuda_mem_put(x->dd, x->d, x->nd, err);
    return rc;
}
static int dev_get(struct cctx *x, struct lbs_err *err)
{
    int rc = 0;
    if (x->na && !rc) rc = lbs_cuda_mem_get(x->a, x->da, x->na, err);
    if (x->nb && !rc) rc = lbs_cuda_mem_get(x->b, x->db, x->nb, err);
    if (x->nd && !rc) rc = lbs_cuda_mem_get(x->d, x->dd, x->nd, err);
    return rc;
}
static void dev_swap(struct cctx *x)
{
    void *t;
    t = x->a; x->a = x->da; x->da = t;
    t = x->b; x->b = x->db; x->db = t;
    t = x->d; x->d = x->dd; x->dd = t;
}

/* ---- CLI ---------------------------------------------------------------- */
static const char coll_usage[] =
"usage: lbscale coll [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]\n"
"                    [--coll LIST] [--topo T] [-k DENSITY] [--root R]\n"
"                    [--backend auto|mpi|self|nccl] [--json] [--out DIR]\n"
"                    [--no-save]\n"
"       mpirun -np P lbscale coll ...     (any P; only rank 0 prints/writes)";

static const char coll_about[] =
"Collective benchmark in the style of nccl-tests.  For each collective and\n"
"each size MIN, MIN*F, ... <= MAX: W untimed calls, then N timed ones, each\n"
"after a barrier; the per-call time is the max over ranks, and time is the\n"
"median over the N calls (min and max in the JSON).  Data is fp32 sum.\n"
"\n"
"Columns: size = bytes of the whole buffer as in nccl-tests (allreduce,\n"
"bcast, neighbor: the buffer; allgather(v): the gathered output;\n"
"reduce_scatter: the input; alltoall: the send buffer), rounded down to\n"
"what divides; count = its elements; algbw = size / time;\n"
"busbw = algbw x factor (nccl-tests):\n"
"  allreduce 2(P-1)/P   allgather(v), reduce_scatter, alltoall (P-1)/P\n"
"  bcast 1   neighbor: the out-degree (bytes each rank sends / time)\n"
"Compressed patterns report the DENSE-equivalent size n fp32 (4n bytes):\n"
"  masked_allreduce  SLAMB: allreduce of k*n floats\n"
"  topk_allgather    allgather of k*n (int32 index, fp32 value) pairs\n"
"  onebit            1-bit LAMB: alltoall of n/8 bytes + allgather of\n"
"                    n/(8P) bytes (n rounded down to a multiple of 8P)\n"
"  with busbw = algbw x 2(P-1)/P: the bus bandwidth a dense fp32 allreduce\n"
"  would need to take the same time.\n"
"#wrong: every rank fills a verifiable pattern of (rank, index) and checks\n"
"the result of the last timed call exactly; summed over ranks (exit 1 if\n"
"any).  NCCL_TESTS_MIN_BW=X (GB/s), as in nccl-tests: an average bus\n"
"bandwidth below X fails the run (exit 1).  JSON rows: bench coll, ranks,\n"
"nodes (distinct host names), ranks_per_node (the most ranks on one host),\n"
"bytes (trace-v1: the payload this rank contributes; allgatherv: the mean),\n"
"size, count, time_us, time_us_min, time_us_max, algbw_gbps, busbw_gbps,\n"
"wrong - the rows `lbscale sim calibrate` fits.";

/* The bookkeeping comm (a second mpi comm under nccl) goes first: the
 * nccl comm's own MPI bootstrap finalizes MPI. */
static void comms_free(struct lbs_comm *comm, struct lbs_comm *ctl)
{
    if (ctl != comm)
        lbs_comm_free(ctl);
    lbs_comm_free(comm);
}

static int env_rank(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_RANK");
    if (!v)
        v = getenv("PMI_RANK");
    return v ? atoi(v) : 0;
}

static int quiet;
#define BAD(...)                                                            \
    do {                                                                    \
        if (!quiet)                                                         \
            cli_error(__VA_ARGS__);                                         \
        return EXIT_BAD_INPUT;                                              \
    } while (0)

/* Sizes as nccl-tests reads them: K, M, G are powers of 1024 here (as
 * are Ki, Mi, Gi), unlike the decimal suffixes of the other verbs. */
static int q_size(const char *o, const char *v, size_t *out)
{
    char buf[64];
    if (!v)
        BAD(o, "missing value");
    size_t n = strlen(v);
    int bin = n > 1 && n < sizeof buf - 2 && strchr("KMG", v[n - 1]);
    snprintf(buf, sizeof buf, "%s%s", v, bin ? "i" : "");
    if (lbs_parse_size(buf, out) || !*out)
        BAD(o, "'%s' is not a positive size (e.g. 8, 64M = 64 x 2^20)", v);
    return 0;
}

/* OSU's -m MIN:MAX (either side may be empty). */
static int q_range(const char *o, const char *v, size_t *lo, size_t *hi)
{
    char a[64], b[64];
    const char *colon = v ? strchr(v, ':') : NULL;
    if (!v || !colon || (size_t)(colon - v) >= sizeof a ||
        strlen(colon + 1) >= sizeof b)
        BAD(o, "'%s' is not MIN:MAX (e.g. 8:1M)", v ? v : "");
    snprintf(a, sizeof a, "%.*s", (int)(colon - v), v);
    snprintf(b, sizeof b, "%s", colon + 1);
    if (!a[0] && !b[0])
        BAD(o, "'%s' names neither MIN nor MAX (e.g. 8:1M, :1M or 8:)", v);
    int rc = 0;
    if (a[0])
        rc = q_size(o, a, lo);
    if (!rc && b[0])
        rc = q_size(o, b, hi);
    return rc;
}
static int q_long(const char *o, const char *v, long lo, long hi, long *out)
{
    char *end;
    if (!v)
        BAD(o, "missing value");
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi)
        BAD(o, "'%s' is not an integer in %ld..%ld", v, lo, hi);
    *out = x;
    return 0;
}

/* The option as the user typed it ("-e", "--maxbytes"), found from its
 * value's place in argv: the messages name what was written. */
static char **q_argv;
static const char *typed(const char *opt, const char *v, char *buf,
                         size_t len)
{
    for (int j = 1; v && q_argv && q_argv[j]; j++) {
        const char *a = q_argv[j];
        if (v == a)
            return q_argv[j - 1];
        if (v > a && v <= a + strlen(a)) {   /* -eVALUE or --opt=VALUE */
            snprintf(buf, len, "%.*s", (int)(v - a) - (a[1] == '-'), a);
            return buf;
        }
    }
    return opt;
}
#define TYPED(o, v) typed(o, v, (char[64]){0}, 64)

static int q_size_opt(const char *o, const char *v, void *dst)
{
    return q_size(TYPED(o, v), v, dst) ? -EINVAL : 0;
}
/* -m MIN:MAX stores both ends: dst is {&minb, &maxb} */
static int q_range_opt(const char *o, const char *v, void *dst)
{
    size_t **mm = dst;
    return q_range(TYPED(o, v), v, mm[0], mm[1]) ? -EINVAL : 0;
}
static int q_check_opt(const char *o, const char *v, void *dst)
{
    if (strcmp(v, "0") && strcmp(v, "1")) {
        if (!quiet)
            cli_error(TYPED(o, v), "'%s': 1 (check every result, default) "
                      "or 0", v);
        return -EINVAL;
    }
    *(int *)dst = v[0] == '1';
    return 0;
}
/* -d float and -o sum: the only datatype and operation implemented */
static int q_only_opt(const char *o, const char *v, void *only)
{
    if (strcmp(v, only)) {
        if (!quiet)
            cli_error(TYPED(o, v), "'%s': only %s is implemented", v,
                      !strcmp(only, "float") ? "float (fp32)"
                                             : (const char *)only);
        return -EINVAL;
    }
    return 0;
}
static int q_density_opt(const char *o, const char *v, void *dst)
{
    double *d = dst;
    if (lbs_parse_double(v, d) || !(*d > 0) || *d > 1) {
        if (!quiet)
            cli_error(TYPED(o, v), "'%s' is not a fraction in (0, 1]", v);
        return -EINVAL;
    }
    return 0;
}
static int q_factor_opt(const char *o, const char *v, void *dst)
{
    return q_long(TYPED(o, v), v, 2, 1024, dst) ? -EINVAL : 0;
}

static int parse_colls(const char *list, int sel[NCOLL])
{
    if (!strcmp(list, "all")) {
        for (size_t k = 0; k < NCOLL; k++)
            sel[k] = 1;
        return 0;
    }
    char *dup = strdup(list), *rest;
    if (!dup)
        BAD("coll", "out of memory");
    int any = 0;
    rest = dup;
    /* strsep, not strtok: "allreduce,,bcast" has an empty item, refused */
    for (char *t; (t = strsep(&rest, ","));) {
        if (!*t) {
            if (!quiet)
                cli_error("--coll", "'%s' has an empty item", list);
            free(dup);
            return EXIT_BAD_INPUT;
        }
        size_t k = 0;
        while (k < NCOLL && strcmp(t, colls[k].name) &&
               !(colls[k].alias && !strcmp(t, colls[k].alias)))
            k++;
        if (k == NCOLL) {
            if (!quiet)
                cli_error("--coll", "unknown collective '%s' (allreduce, "
                          "allgather, allgatherv, reduce_scatter, alltoall, "
                          "bcast, neighbor, masked_allreduce, topk_allgather,"
                          " onebit, all)", t);
            free(dup);
            return EXIT_BAD_INPUT;
        }
        sel[k] = any = 1;
    }
    free(dup);
    if (!any)
        BAD("--coll", "empty list");
    return 0;
}

/* nccl-tests' columns, or OSU's latency table (--latency). */
static void wrong_str(const json_t *r, char *buf, size_t len)
{
    snprintf(buf, len, "N/A");
    if (json_is_true(json_object_get(r, "checked")))
        snprintf(buf, len, "%lld",
                 (long long)json_integer_value(json_object_get(r, "wrong")));
}
static const struct bench_col nccl_cols[] = {
    BENCH_COL("# coll", "%-17s", "%-17s", "coll"),
    BENCH_COL("size(B)", "%12s", "%12lld", "size"),
    BENCH_COL("count", "%11s", "%11lld", "count"),
    BENCH_COL("type", "%7s", "%7s", "type"),
    BENCH_COL("time(us)", "%11s", "%11.2f", "time_us"),
    BENCH_COL("algbw(GB/s)", "%11s", "%11.3f", "algbw_gbps"),
    BENCH_COL("busbw(GB/s)", "%11s", "%11.3f", "busbw_gbps"),
    {.head = "#wrong", .hfmt = "%7s", .fmt = "%7s", .str = wrong_str},
    {0}};
static const struct bench_col osu_cols[] = {
    BENCH_COL("# coll", "%-17s", "%-17s", "coll"),
    BENCH_COL("Size", "%12s", "%12lld", "size"),
    BENCH_COL("Avg Latency(us)", "%15s", "%15.2f", "time_us_mean"),
    BENCH_COL("Min Latency(us)", "%15s", "%15.2f", "time_us_min"),
    BENCH_COL("Max Latency(us)", "%15s", "%15.2f", "time_us_max"),
    BENCH_COL("Iterations", "%10s", "%10lld", "iters"),
    {0}};
static const char *const export_cols[] = {
    "coll", "backend", "ranks", "nodes", "ranks_per_node", "type", "bytes",
    "size", "count",
    "iters", "time_us", "time_us_min", "time_us_max", "time_us_mean",
    "algbw_gbps", "busbw_gbps", "wrong", NULL};
static const struct bench_table nccl_table = {"", "", nccl_cols};
static const struct bench_table osu_table = {"", "", osu_cols};

/* Nodes and ranks per node of the communicator, from every rank's host
 * name (what MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups by on a
 * cluster, and what a network-namespace host with its own UTS namespace
 * changes): *rpn is the most ranks any node holds, so a run of 2 nodes x
 * 4 ranks says nodes 2, ranks_per_node 4.  One node on failure. */
static int count_nodes(struct lbs_comm *c, int *rpn)
{
    enum { HN = 64 };
    char me[HN] = {0};
    gethostname(me, HN - 1);
    char *all = calloc((size_t)c->size, HN);
    *rpn = c->size;
    if (!all || lbs_allgather(c, me, all, HN, LBS_UINT8, -1)) {
        free(all);
        return 1;
    }
    int nodes = 0, most = 0;
    for (int r = 0; r < c->size; r++) {
        int first = -1, here = 0;
        for (int q = 0; q < c->size; q++)
            if (!strncmp(all + (size_t)q * HN, all + (size_t)r * HN, HN)) {
                if (first < 0)
                    first = q;
                here++;
            }
        nodes += first == r;
        most = here > most ? here : most;
    }
    free(all);
    *rpn = most;
    return nodes;
}

/* ---- the driver's kernel: one (pattern, size) ------------------------ */
/* What a sweep needs besides the pattern: the comms, the loop, the
 * options that go into rows, and what the closing lines sum up. */
struct coll_run {
    struct cctx x;
    struct lbs_comm *comm, *ctl;   /* ctl: timings and #wrong (mpi) */
    int dev, check, osu, lead, nodes, rpn, silent;
    const char *gpu, *topo;
    size_t minb, maxb, factor;
    long iters, warmup, root;
    double density;
    struct bench_out bo;     /* printing only: bo.run stays NULL */
    struct lbs_run *run;     /* rank 0's results run, or NULL */
    struct cli_export exp;   /* --export-csv/--export-markdown: all rows */
    json_t *rows;            /* rank 0's rows, saved and exported at the end */
    long total_wrong, busbw_n;
    double busbw_sum;
    double min_bw;   /* NCCL_TESTS_MIN_BW (GB/s), 0: none */
    struct lbs_err e;
};
struct coll_kernel {
    struct coll_run *cr;
    const struct coll_ops *op;
    int deg;
};

/* prep (untimed; nccl: upload and swap in the device twins), barrier,
 * the timed call. */
static int coll_call(void *ctx, long i, double *t, struct lbs_err *err)
{
    struct coll_kernel *k = ctx;
    struct coll_run *cr = k->cr;
    struct cctx *c = &cr->x;
    int rc;
    k->op->prep(c, i == cr->warmup + cr->iters - 1);
    if (cr->dev && (rc = dev_put(c, err)))
        return rc;
    if (cr->dev)
        dev_swap(c);
    if (!(rc = lbs_barrier(cr->comm))) {
        double t0 = cli_now();
        rc = k->op->run(c);
        t[0] = cli_now() - t0;
    }
    if (cr->dev)
        dev_swap(c);
    return rc;
}

/* The last call's result, exactly (nccl: downloaded first). */
static long coll_check(void *ctx, struct lbs_err *err)
{
    struct coll_kernel *k = ctx;
    int rc = k->cr->dev ? dev_get(&k->cr->x, err) : 0;
    if (rc)
        return rc;
    k->deg = k->cr->x.nto;
    return k->cr->check ? k->op->check(&k->cr->x) : 0;
}

/* Per call the max over ranks, #wrong summed, the largest out-degree. */
static int coll_gather(void *ctx, struct bench_result *r, struct lbs_err *err)
{
    struct coll_kernel *k = ctx;
    struct lbs_comm *ctl = k->cr->ctl;
    long long wrong = r->wrong;
    (void)err;
    int rc = lbs_allreduce(ctl, r->t[0], (size_t)k->cr->iters, LBS_FLOAT64,
                           LBS_MAX, -1);
    if (!rc)
        rc = lbs_allreduce(ctl, &wrong, 1, LBS_INT64, LBS_SUM, -1);
    r->wrong = (long)wrong;
    if (!rc && k->op->bw == BW_DEG)
        rc = lbs_allreduce(ctl, &k->deg, 1, LBS_INT32, LBS_MAX, -1);
    return rc;
}

static json_t *coll_row(struct coll_run *cr, const struct coll_kernel *k,
                        const struct bench_result *r)
{
    const struct coll_ops *op = k->op;
    const struct cli_stats *st = &r->st[0];
    int P = cr->comm->size;
    double algbw = (double)cr->x.size / st->median / 1e9,
           busbw = algbw * bw_factor(op, P, k->deg);
    json_t *row = json_pack(
        "{s:s,s:s,s:s,s:i,s:i,s:f,s:I,s:I,s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,"
        "s:I}",
        "bench", "coll", "coll", op->name, "backend", cr->comm->ops->name,
        "ranks", P, "nodes", cr->nodes, "bytes", cr->x.payload, "size",
        (json_int_t)cr->x.size, "count", (json_int_t)cr->x.count, "type",
        op->type, "iters", (int)cr->iters, "warmup", (int)cr->warmup,
        "time_us", st->median * 1e6, "time_us_min", st->min * 1e6,
        "time_us_max", st->max * 1e6, "algbw_gbps", algbw, "busbw_gbps",
        busbw, "wrong", (json_int_t)r->wrong);
    if (!row)
        return NULL;
    json_object_set_new(row, "ranks_per_node", json_integer(cr->rpn));
    json_object_set_new(row, "time_us_mean", json_real(st->mean * 1e6));
    json_object_set_new(row, "checked", json_boolean(cr->check));
    if (!op->compressed) {
        cr->busbw_sum += busbw;
        cr->busbw_n++;
    }
    if (op->compressed)
        json_object_set_new(row, "density", json_real(cr->density));
    if (op->bw == BW_DEG) {
        json_object_set_new(row, "topo", json_string(cr->topo));
        json_object_set_new(row, "degree", json_integer(k->deg));
    }
    if (op->bw == BW_ONE)
        json_object_set_new(row, "root", json_integer(cr->root));
    if (cr->dev)
        json_object_set_new(row, "gpu", json_string(cr->gpu));
    return row;
}

/* One size of one pattern: setup, the driver's loop, the row on rank 0. */
static int coll_size(struct coll_run *cr, const struct coll_ops *op, size_t S)
{
    struct cctx *c = &cr->x;
    c->count = c->size = c->n1 = 0;
    c->payload = 0;
    int s = op->setup(c, S), rc = 0;
    if (s < 0)
        return lbs_err_set(&cr->e, s, "out of memory at %zu bytes", S);
    if (s || (cr->dev && (rc = dev_alloc(c, &cr->e))))
        return rc;
    struct coll_kernel k = {.cr = cr, .op = op};
    const struct bench_kernel kern = {
        .what = op->name, .ctx = &k, .nphase = 1, .call = coll_call,
        .check = coll_check, .gather = coll_gather};
    const struct bench_loop loop = {.warmup = cr->warmup,
                                    .iters = cr->iters};
    struct bench_result r;
    if ((rc = bench_time(&kern, &loop, &r, &cr->e)))
        return rc;
    if (cr->lead) {
        json_t *row = coll_row(cr, &k, &r);
        if (!row) {
            rc = lbs_err_set(&cr->e, -ENOMEM, "out of memory");
        } else {
            rc = bench_emit(&cr->bo, row, 0);
            cr->silent = rc != 0;   /* bench_emit printed it */
            fflush(stdout);
            if (cr->rows)
                json_array_append(cr->rows, row);
            json_decref(row);
        }
    }
    cr->total_wrong += r.wrong;
    bench_result_free(&r);
    return rc;
}

/* The sizes minb, minb*f, ... <= maxb of one pattern; every rank stops
 * together when one failed (rank 0 may have failed writing). */
static int coll_sweep(struct coll_run *cr, const struct coll_ops *op)
{
    int rc = 0;
    for (size_t S = cr->minb; S <= cr->maxb && !rc;) {
        rc = coll_size(cr, op, S);
        cctx_free(&cr->x);
        int stop = rc ? 1 : 0;
        if (lbs_allreduce(cr->ctl, &stop, 1, LBS_INT32, LBS_MAX, -1) ||
            stop) {
            if (!rc)
                rc = -EIO, cr->silent = 1;
            break;
        }
        if (S > cr->maxb / cr->factor)
            break;
        S *= cr->factor;
    }
    return rc;
}

/* ---- the verb ------------------------------------------------------- */
/* The command line: options, then what they select. */
struct coll_cmd {
    size_t minb, maxb;
    int check, osu, help;
    long factor, iters, warmup, root;
    double density;
    const char *list, *topo, *backend;
    struct cli_export exp;
    int sel[NCOLL];
    int tk;   /* the topology's index */
};

/* Parse argv into c; on ranks other than 0 errors are not printed (only
 * rank 0 speaks).  0 to go on, -1 to exit 0, else the exit code. */
static int coll_parse(int argc, char **argv, struct cli_common *com,
                      struct coll_cmd *c)
{
    size_t *range[2] = {&c->minb, &c->maxb};
    const struct cli_opt opts[] = {
        {.name = "minbytes", .short_name = 'b', .type = CLI_CALL,
         .fn = q_size_opt, .dst = &c->minb, .arg = "S",
         .help = "smallest size (default 8; K M G (and Ki Mi Gi) are\n"
                 "2^10, 2^20, 2^30 as in nccl-tests)"},
        {.name = "maxbytes", .short_name = 'e', .type = CLI_CALL,
         .fn = q_size_opt, .dst = &c->maxb, .arg = "S",
         .help = "largest size (default 16M = 16 x 2^20)"},
        {.name = "message-size", .short_name = 'm', .type = CLI_CALL,
         .fn = q_range_opt, .dst = range, .arg = "MIN:MAX",
         .help = "OSU's form of -b and -e"},
        {.name = "check", .short_name = 'c', .type = CLI_CALL,
         .fn = q_check_opt, .dst = &c->check, .arg = "0|1",
         .help = "check every result (default 1; 0: #wrong is N/A)"},
        {.name = "datatype", .short_name = 'd', .type = CLI_CALL,
         .fn = q_only_opt, .dst = "float", .arg = "T",
         .help = "float only (the patterns are fp32)"},
        {.name = "op", .short_name = 'o', .type = CLI_CALL, .fn = q_only_opt,
         .dst = "sum", .arg = "O", .help = "sum only"},
        {.name = "latency", .type = CLI_FLAG, .dst = &c->osu,
         .help = "print OSU's latency table (size, avg/min/max us,\n"
                 "iterations) instead of nccl-tests' columns"},
        {.name = "stepfactor", .short_name = 'f', .type = CLI_CALL,
         .fn = q_factor_opt, .dst = &c->factor, .arg = "F",
         .help = "multiply the size by integer F >= 2 (default 2)"},
        CLI_ITERS_OPT(&c->iters, 'n', 1000000,
                      "timed calls per size (default 20)"),
        CLI_WARMUP_OPT(&c->warmup, 'w', "untimed calls first (default 5)"),
        {.name = "coll", .type = CLI_STR, .dst = &c->list, .arg = "LIST",
         .help = "comma-separated, or all (default): allreduce,\n"
                 "allgather, allgatherv, reduce_scatter, alltoall,\n"
                 "bcast, neighbor, masked_allreduce, topk_allgather,\n"
                 "onebit"},
        {.name = "topo", .type = CLI_STR, .dst = &c->topo, .arg = "T",
         .help = "neighbor graph: ring (default), exponential, onepeer\n"
                 "(phase advances every call), full"},
        {.name = "density", .short_name = 'k', .type = CLI_CALL,
         .fn = q_density_opt, .dst = &c->density, .arg = "K",
         .help = "compressed patterns' kept fraction (default 0.1)"},
        {.name = "root", .type = CLI_LONG, .dst = &c->root, .arg = "R",
         .lo = 0, .hi = INT_MAX, .help = "bcast root (default 0)"},
        {.name = "backend", .type = CLI_STR, .dst = &c->backend, .arg = "B",
         .help = "auto (default: mpi under mpirun, else self), mpi,\n"
                 "self, nccl.  reduce_scatter calls\n"
                 "MPI_Reduce_scatter_block directly (not in lbs_comm),\n"
                 "so it runs on mpi and self only (nccl: left out of\n"
                 "all).  nccl: one rank per GPU (mpirun -np <GPUs>;\n"
                 "alone: 1 rank), buffers in GPU memory, each call\n"
                 "waits for its stream; data is uploaded before and\n"
                 "checked after, untimed; needs a CUDA+NCCL build and a\n"
                 "GPU (else one line on stderr, exit 2)."},
        {.name = "comm", .type = CLI_STR, .dst = &c->backend, .arg = "B",
         .help = "the same as --backend"},
        CLI_EXPORT_OPTS(&c->exp),
        CLI_COMMON_OPTS(com),
        {.name = "help", .type = CLI_FLAG, .dst = &c->help,
         .short_name = 'h', .help = "this help"},
        {0}};
    const struct cli_verb verb = {.name = "coll", .usage = coll_usage,
                                  .about = coll_about, .opts = opts};
    q_argv = argv;
    int se = -1;
    if (quiet) {   /* the parser prints its errors itself */
        fflush(stderr);
        se = dup(2);
        int nul = open("/dev/null", O_WRONLY);
        if (nul >= 0) {
            dup2(nul, 2);
            close(nul);
        }
    }
    int rc = cli_parse(&verb, argc, argv, NULL, NULL);
    if (se >= 0) {
        fflush(stderr);
        dup2(se, 2);
        close(se);
    }
    q_argv = NULL;
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : -1;
    if (c->help && !quiet)
        cli_usage(&verb, stdout);
    return c->help ? -1 : 0;
}

/* The checks that need no comm: sizes, collectives, topology, backend;
 * nccl: a build with NCCL and a GPU (before MPI starts). */
static int coll_args_check(struct coll_cmd *c, char *gpu, size_t len)
{
    if (c->minb > c->maxb)
        BAD("coll", "-b %zu is larger than -e %zu", c->minb, c->maxb);
    if (c->maxb > (size_t)1 << 36)
        BAD("-e", "%zu bytes is more than this benchmark allocates (64Gi)",
            c->maxb);
    int prc = parse_colls(c->list, c->sel);
    if (prc)
        return prc;
    while (lbs_topo_names[c->tk] && strcmp(lbs_topo_names[c->tk], c->topo))
        c->tk++;
    if (!lbs_topo_names[c->tk])
        BAD("--topo", "unknown topology '%s' (ring, exponential, onepeer, "
            "full)", c->topo);
    if (!strcmp(c->backend, "auto"))
        c->backend = (LBS_HAVE_MPI && (getenv("OMPI_COMM_WORLD_SIZE") ||
                                       getenv("PMI_SIZE"))) ? "mpi" : "self";
    else if (strcmp(c->backend, "mpi") && strcmp(c->backend, "self") &&
             strcmp(c->backend, "nccl"))
        BAD("--backend", "'%s': use auto, mpi, self or nccl", c->backend);
    if (strcmp(c->backend, "nccl"))
        return 0;
    struct lbs_err pe = {{0}};
    if (!LBS_HAVE_NCCL)
        BAD("coll", "--backend nccl: this lbscale was built without "
            "NCCL (needs CUDA and libnccl at configure time)");
    if (lbs_cuda_probe(gpu, len, &pe) < 0)
        BAD("coll", "--backend nccl: %s", pe.msg);
    size_t k = 0;
    while (k < NCOLL && strcmp(colls[k].name, "reduce_scatter"))
        k++;
    if (k < NCOLL && c->sel[k] && strcmp(c->list, "all"))
        BAD("--coll", "reduce_scatter is not in lbs_comm (the mpi "
            "backend calls MPI directly): not with --backend nccl");
    if (k < NCOLL)
        c->sel[k] = 0;
    return 0;
}

/* The comms (nccl: timings, #wrong and flags live in host memory and go
 * over a second, mpi comm on the same ranks; MPI is already up), the
 * root and the topology.  0, or the exit code after one printed line. */
static int coll_open(struct coll_run *cr, const struct coll_cmd *c)
{
    struct lbs_err *e = &cr->e;
    int rc = lbs_comm_new(c->backend, &cr->comm, e);
    if (rc) {
        if (!quiet)
            cli_error("--backend", "%s", e->msg);
        return rc == -ENODEV ? EXIT_BAD_INPUT : cli_exit_code(rc);
    }
    cr->comm->err = e;
    cr->ctl = cr->comm;
    if (cr->dev && (rc = lbs_comm_mpi_new(&cr->ctl, e))) {
        if (!quiet)
            cli_error("--backend", "%s", e->msg);
        lbs_comm_free(cr->comm);
        return cli_exit_code(rc);
    }
    cr->ctl->err = e;
    int P = cr->comm->size;
    cr->lead = cr->comm->rank == 0;
    if (c->root >= P) {
        if (cr->lead)
            cli_error("--root", "%ld is not a rank (0..%d)", c->root, P - 1);
        comms_free(cr->comm, cr->ctl);
        return EXIT_BAD_INPUT;
    }
    cr->x = (struct cctx){.c = cr->comm, .rank = cr->comm->rank, .P = P,
                          .density = c->density, .root = (int)c->root};
    if ((rc = lbs_topology_new((enum lbs_topo)c->tk, P, &cr->x.topo, e))) {
        if (cr->lead)
            cli_error("--topo", "%s", e->msg);
        comms_free(cr->comm, cr->ctl);
        return cli_exit_code(rc);
    }
    return 0;
}

/* A collective named in --coll must get rows; of "all", at least one. */
static int coll_fits(struct coll_run *cr, const struct coll_cmd *c)
{
    int any = 0, all = !strcmp(c->list, "all");
    for (size_t k = 0; k < NCOLL; k++) {
        if (!c->sel[k])
            continue;
        int fits = first_fit(&colls[k], &cr->x, c->minb, c->maxb,
                             (size_t)c->factor) > 0;
        any |= fits;
        if (!fits && (!all || (k == NCOLL - 1 && !any))) {
            if (cr->lead)
                cli_error("coll", "-b %zu -e %zu: no size in that range "
                          "holds one element per rank of %s at %d ranks "
                          "(raise -e)", c->minb, c->maxb,
                          all ? "any collective" : colls[k].name, cr->x.P);
            return EXIT_BAD_INPUT;
        }
    }
    return 0;
}

static void coll_preamble(const struct coll_run *cr)
{
    printf("# lbscale coll: %d ranks on %d node(s), at most %d per node, "
           "backend %s, %ld iters after %ld warm-up, topo %s, density %g\n",
           cr->x.P, cr->nodes, cr->rpn, cr->comm->ops->name, cr->iters,
           cr->warmup, cr->topo,
           cr->density);
    if (cr->dev)
        printf("# gpu (rank 0): %s; buffers in device memory\n", cr->gpu);
    printf("# time = median over iters of the max over ranks; busbw "
           "factors as nccl-tests (see --help)\n");
    if (cr->osu)
        printf("# OSU-style latency: per call, max over ranks; avg over "
               "the timed calls\n");
    bench_header(cr->bo.table, stdout);
}

/* The sweeps and the closing lines (nccl-tests' average over the sizes
 * of its one collective; here over every dense row printed). */
static int coll_main(struct coll_run *cr, const struct coll_cmd *c)
{
    int rc = 0;
    if (cr->lead && !cr->bo.json)
        coll_preamble(cr);
    for (size_t k = 0; k < NCOLL && !rc; k++)
        if (c->sel[k])
            rc = coll_sweep(cr, &colls[k]);
    /* rows are saved only when every size of every pattern ran: a run
     * whose rank died leaves no rows that look complete (one locked write,
     * whole or absent), only what it printed */
    if (!rc && cr->run && json_array_size(cr->rows) &&
        (rc = lbs_run_append_rows(cr->run, "coll", cr->rows, &cr->e))) {
        cli_error("coll", "%s", cr->e.msg);
        cr->silent = 1;
    }
    if (!rc && cr->rows && (cr->exp.csv || cr->exp.md) &&
        (rc = cli_export_write(&cr->exp, "coll", cr->rows, export_cols)))
        cr->silent = 1;   /* printed */
    if (rc) {
        if (!cr->silent)
            cli_error("coll", "%s", cr->e.msg);
    } else if (cr->total_wrong) {
        if (cr->lead)
            cli_error("coll", "%ld wrong elements (see #wrong)",
                      cr->total_wrong);
        rc = -EIO;
    } else if (cr->lead && !cr->bo.json) {
        if (!cr->osu && cr->busbw_n)
            printf("# Out of bounds values : %ld %s\n# Avg bus bandwidth    : "
                   "%g GB/s (mean over %ld rows, compressed patterns left "
                   "out)\n", cr->total_wrong,
                   cr->check ? "OK" : "(not checked)",
                   cr->busbw_sum / (double)cr->busbw_n, cr->busbw_n);
        struct bench_out saved = cr->bo;
        saved.run = cr->run;
        bench_saved(&saved);
    }
    /* NCCL_TESTS_MIN_BW, as nccl-tests: an average bus bandwidth below it
     * fails the run (the rows are kept) */
    double avg = cr->busbw_n ? cr->busbw_sum / (double)cr->busbw_n : 0;
    if (!rc && cr->lead && cr->min_bw > 0 && !cr->osu && cr->busbw_n &&
        avg < cr->min_bw) {
        if (!cr->bo.json)
            printf("# Check failed: avg bus bandwidth %g GB/s < "
                   "NCCL_TESTS_MIN_BW %g\n", avg, cr->min_bw);
        cli_error("coll", "average bus bandwidth %g GB/s is below "
                  "NCCL_TESTS_MIN_BW=%g", avg, cr->min_bw);
        rc = -EIO;
    }
    return rc;
}

int verb_coll(int argc, char **argv)
{
    struct cli_common com = {.save = 1};
    struct coll_cmd c = {.minb = 8, .maxb = (size_t)16 << 20, .check = 1,
                         .factor = 2, .iters = 20, .warmup = 5,
                         .density = 0.1, .list = "all", .topo = "ring",
                         .backend = "auto"};
    quiet = env_rank() != 0;
    char gpu[256] = "";
    int rc = coll_parse(argc, argv, &com, &c);
    if (rc || (rc = coll_args_check(&c, gpu, sizeof gpu)))
        return rc < 0 ? 0 : rc;
    /* nccl-tests' floor on the average bus bandwidth, in GB/s */
    double min_bw = 0;
    const char *mbw = getenv("NCCL_TESTS_MIN_BW");
    if (mbw && *mbw && cli_double("NCCL_TESTS_MIN_BW", mbw, 0, 1e9, &min_bw))
        return EXIT_BAD_INPUT;
    struct coll_run cr = {
        .dev = !strcmp(c.backend, "nccl"), .check = c.check, .osu = c.osu,
        .gpu = gpu, .topo = c.topo, .minb = c.minb, .maxb = c.maxb,
        .factor = (size_t)c.factor, .iters = c.iters, .warmup = c.warmup,
        .root = c.root, .density = c.density, .exp = c.exp,
        .min_bw = min_bw,
        .bo = {.verb = "coll", .json = com.json,
               .table = c.osu ? &osu_table : &nccl_table}};
    if ((rc = coll_open(&cr, &c)))
        return rc;
    if ((rc = coll_fits(&cr, &c))) {
        lbs_topology_free(cr.x.topo);
        comms_free(cr.comm, cr.ctl);
        return rc;
    }
    cr.nodes = count_nodes(cr.ctl, &cr.rpn);
    if (cr.lead)
        cr.rows = json_array();
    sum_tab_init(cr.x.P);
    int orc = cr.lead ? cli_open_run(&com, "coll", argc, argv, &cr.run) : 0;
    /* every rank must learn whether rank 0 could open the run */
    if (lbs_bcast(cr.ctl, &orc, 1, LBS_INT32, 0, -1) || orc)
        rc = orc ? orc : -EIO;
    else
        rc = coll_main(&cr, &c);
    json_decref(cr.rows);
    lbs_run_close(cr.run);
    lbs_topology_free(cr.x.topo);
    comms_free(cr.comm, cr.ctl);
    return orc ? cli_exit_code(orc) : cli_exit_code(rc);
}
