/* coll_patterns.c - the patterns of `lbscale coll` (bench/coll_bench.c
 * says how they are sized, filled and checked): one small ops table per
 * collective (setup, prep, run, check), the table colls[], and the nccl
 * backend's device twins of the buffers. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"
#include "lbs_config.h"
#include "lbs_cuda.h"
#include "lbs_cuda_compress.h"
#include "lbscale/comm.h"
#include "lbscale/param.h"
#include "lbscale/topology.h"
#include "coll_int.h"

#if LBS_HAVE_MPI
#include <mpi.h>
#endif

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
void sum_tab_init(int P)
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
/* a: the input (and the in-place result); b: the out-of-place result */
static int ar_setup_n(struct cctx *x, size_t n)
{
    if (!n)
        return 1;
    x->n1 = n;
    x->a = hmalloc(&x->na, n * sizeof(float));
    x->b = hmalloc(&x->nb, n * sizeof(float));
    return x->a && x->b ? 0 : -ENOMEM;
}
static int ar_setup(struct cctx *x, size_t S)
{
    x->count = S / 4;
    x->size = x->payload = x->count * 4;
    return ar_setup_n(x, x->count);
}
static void ar_prep(struct cctx *x, int last)
{
    fill(x->a, x->n1, x->rank, 0);
    if (last && !x->ip)
        poison(x->b, x->n1 * 4);
}
static int ar_run(struct cctx *x)
{
    if (x->ip)
        return lbs_allreduce(x->c, x->a, x->n1, LBS_FLOAT32, LBS_SUM, -1);
    return lbs_allreduce_to(x->c, x->a, x->b, x->n1, LBS_FLOAT32, LBS_SUM,
                            -1);
}
static long ar_check(struct cctx *x)
{
    long bad = 0;
    const float *a = x->ip ? x->a : x->b;
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
/* In place (nccl-tests, MPI_IN_PLACE): the input is this rank's block of
 * b, copied from a before each call. */
static void ag_prep(struct cctx *x, int last)
{
    if (last)
        poison(x->b, x->count * 4);
    if (x->ip)
        memcpy((float *)x->b + (size_t)x->rank * x->n1, x->a, x->n1 * 4);
}
static int ag_run(struct cctx *x)
{
    const float *send = x->ip ? (float *)x->b + (size_t)x->rank * x->n1
                              : x->a;
    return lbs_allgather(x->c, send, x->b, x->n1, LBS_FLOAT32, -1);
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
    if (x->ip)
        memcpy((float *)x->b + x->displs[x->rank], x->a, x->n1 * 4);
}
static int agv_run(struct cctx *x)
{
    const float *send = x->ip ? (float *)x->b + x->displs[x->rank] : x->a;
    return lbs_allgatherv(x->c, send, x->n1, x->b, x->counts, x->displs,
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
/* b holds P blocks: the in-place form (MPI_IN_PLACE) reduces the whole
 * of b, refilled before each call, into its first block. */
static int rs_setup(struct cctx *x, size_t S)
{
    return blocks_setup(x, S, (size_t)x->P);
}
static void rs_prep(struct cctx *x, int last)
{
    if (x->ip)
        memcpy(x->b, x->a, x->count * 4);
    else if (last)
        poison(x->b, x->n1 * 4);
}
static int rs_run(struct cctx *x)
{
    if (x->P == 1 && strcmp(x->c->ops->name, "mpi")) {
        if (!x->ip)
            memcpy(x->b, x->a, x->n1 * 4);
        return 0;
    }
#if LBS_HAVE_MPI
    if (!strcmp(x->c->ops->name, "mpi")) {
        if (x->n1 > INT_MAX)
            return lbs_err_set(x->c->err, -EINVAL, "reduce-scatter: %zu "
                               "elements exceed MPI's int count", x->n1);
        const void *send = x->ip ? MPI_IN_PLACE : x->a;
        int mrc = MPI_Reduce_scatter_block(send, x->b, (int)x->n1, MPI_FLOAT,
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
/* In place: send == recv == b, refilled from a before each call. */
static void a2a_prep(struct cctx *x, int last)
{
    if (x->ip)
        memcpy(x->b, x->a, x->count * 4);
    else if (last)
        poison(x->b, x->count * 4);
}
static int a2a_run(struct cctx *x)
{
    return lbs_alltoall(x->c, x->ip ? x->b : x->a, x->b, x->n1, LBS_FLOAT32,
                        -1);
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
    x->b = hmalloc(&x->nb, x->n1 * 4);
    if (!x->a || !x->b)
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
        poison(x->ip ? x->a : x->b, x->n1 * 4);
}
/* lbs_bcast has one buffer (MPI_Bcast has no other): out of place is the
 * root's copy of its send buffer a into b, then the call on b, timed
 * together (--help says so). */
static int bc_run(struct cctx *x)
{
    if (!x->ip && x->rank == x->root)
        memcpy(x->b, x->a, x->n1 * 4);
    return lbs_bcast(x->c, x->ip ? x->a : x->b, x->n1, LBS_FLOAT32, x->root,
                     -1);
}
static long bc_check(struct cctx *x)
{
    long bad = 0;
    const float *a = x->ip ? x->a : x->b;
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
#define BOTH (F_OOP | F_IP)
const struct coll_ops colls[] = {
    {"allreduce", NULL, "float", BW_AR, 0, BOTH, F_IP, "sum", ar_setup,
     ar_prep, ar_run, ar_check},
    {"allgather", NULL, "float", BW_AG, 0, BOTH, F_OOP, "none", ag_setup,
     ag_prep, ag_run, ag_check},
    {"allgatherv", NULL, "float", BW_AG, 0, BOTH, F_OOP, "none", agv_setup,
     agv_prep, agv_run, agv_check},
    {"reduce_scatter", "reduce-scatter", "float", BW_AG, 0, BOTH, F_OOP,
     "sum", rs_setup, rs_prep, rs_run, rs_check},
    {"alltoall", NULL, "float", BW_AG, 0, BOTH, F_OOP, "none", a2a_setup,
     a2a_prep, a2a_run, a2a_check},
    {"bcast", "broadcast", "float", BW_ONE, 0, BOTH, F_IP, "none", bc_setup,
     bc_prep, bc_run, bc_check},
    /* a neighbour exchange receives one block per peer: no in-place form */
    {"neighbor", "neighbour", "float", BW_DEG, 0, F_OOP, F_OOP, "none",
     nb_setup, nb_prep, nb_run, nb_check},
    {"masked_allreduce", "slamb", "float", BW_AR, 1, BOTH, F_IP, "sum",
     mar_setup, ar_prep, ar_run, ar_check},
    /* the compressors' calls as the optimizers make them: out of place */
    {"topk_allgather", "topk", "i32+f32", BW_AR, 1, F_OOP, F_OOP, "none",
     tk_setup, tk_prep, tk_run, tk_check},
    {"onebit", "1bit", "uint8", BW_AR, 1, F_OOP, F_OOP, "none", ob_setup,
     ob_prep, ob_run, ob_check},
};
_Static_assert(sizeof colls / sizeof colls[0] == NCOLL,
               "NCOLL (coll_int.h): the entries of colls[]");

double bw_factor(const struct coll_ops *o, int P, int deg)
{
    switch (o->bw) {
    case BW_AR: return 2.0 * (P - 1) / P;
    case BW_AG: return (double)(P - 1) / P;
    case BW_ONE: return 1.0;
    case BW_DEG: return deg;
    }
    return 1.0;
}

/* The forms op runs on x's backend: nccl has no in-place alltoall
 * (lbscale/comm.h). */
unsigned coll_forms(const struct coll_ops *o, const struct cctx *x)
{
    if (!strcmp(o->name, "alltoall") && !strcmp(x->c->ops->name, "nccl"))
        return F_OOP;
    return o->forms;
}

/* nccl-tests' count column: the elements of one call's count argument
 * (allgather: each rank's block; reduce_scatter: each rank's result;
 * alltoall: each block sent to one peer; otherwise the whole buffer);
 * allgatherv has no nccl-tests twin: the mean block, size / 4 / P. */
size_t nt_count(const struct coll_ops *o, const struct cctx *x)
{
    if (!strcmp(o->name, "allgather") || !strcmp(o->name, "reduce_scatter") ||
        !strcmp(o->name, "alltoall"))
        return x->n1;
    if (!strcmp(o->name, "allgatherv"))
        return x->count / (size_t)x->P;
    return x->count;
}

/* The size after S: times factor, or plus step when -i set one (as
 * nccl-tests); 0 past SIZE_MAX. */
size_t next_size(size_t S, size_t factor, size_t step)
{
    if (step)
        return S > SIZE_MAX - step ? 0 : S + step;
    return S > SIZE_MAX / factor ? 0 : S * factor;
}

void cctx_free(struct cctx *x)
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
size_t first_fit(const struct coll_ops *op, const struct cctx *x,
                 size_t minb, size_t maxb, size_t factor, size_t step)
{
    for (size_t S = minb; S && S <= maxb; S = next_size(S, factor, step)) {
        struct cctx c = {.c = x->c, .rank = x->rank, .P = x->P,
                         .density = x->density, .root = x->root,
                         .topo = x->topo};
        int s = op->setup(&c, S);
        cctx_free(&c);
        if (s <= 0)            /* fits (or out of memory: let it report) */
            return S;
    }
    return 0;
}

/* ---- nccl: the same patterns on device twins of a, b, d ---------------- */
/* Host buffers stay where setup, prep and check work; around each call
 * the host data is uploaded (untimed) and the pointers swapped for the
 * device ones, and after the last call the results come back. */
int dev_alloc(struct cctx *x, struct lbs_err *err)
{
    int rc = 0;
    if (x->na && !rc) rc = lbs_cuda_mem_alloc(&x->da, x->na, err);
    if (x->nb && !rc) rc = lbs_cuda_mem_alloc(&x->db, x->nb, err);
    if (x->nd && !rc) rc = lbs_cuda_mem_alloc(&x->dd, x->nd, err);
    return rc;
}
int dev_put(struct cctx *x, struct lbs_err *err)
{
    int rc = 0;
    if (x->na && !rc) rc = lbs_cuda_mem_put(x->da, x->a, x->na, err);
    if (x->nb && !rc) rc = lbs_cuda_mem_put(x->db, x->b, x->nb, err);
    if (x->nd && !rc) rc = lbs_cuda_mem_put(x->dd, x->d, x->nd, err);
    return rc;
}
int dev_get(struct cctx *x, struct lbs_err *err)
{
    int rc = 0;
    if (x->na && !rc) rc = lbs_cuda_mem_get(x->a, x->da, x->na, err);
    if (x->nb && !rc) rc = lbs_cuda_mem_get(x->b, x->db, x->nb, err);
    if (x->nd && !rc) rc = lbs_cuda_mem_get(x->d, x->dd, x->nd, err);
    return rc;
}
void dev_swap(struct cctx *x)
{
    void *t;
    t = x->a; x->a = x->da; x->da = t;
    t = x->b; x->b = x->db; x->db = t;
    t = x->d; x->d = x->dd; x->dd = t;
}
