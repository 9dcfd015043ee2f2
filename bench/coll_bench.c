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
 * Two forms per pattern where it has them (nccl-tests' out-of-place and
 * in-place columns), and two clocks per form, both printed, each
 * labelled:
 *   lbscale's: each iteration is barrier, t0, call, t1 on every rank;
 *     the per-iteration times are reduced with MAX over ranks, and the
 *     median of those over the timed iterations is `med` (time_us in
 *     the JSON, of the pattern's native form; min and max too);
 *   nccl-tests': after that, one barrier, then N x M calls back to
 *     back, nothing between them; each rank's elapsed time / (N x M),
 *     reduced over ranks as -a says (average by default) - the `time`
 *     of nccl-tests' columns.
 * The check is lbscale's: the last call of the first loop, prepared.
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
 * Ownership: everything is allocated and freed per (pattern, size) here.
 *
 * Files: the patterns and their table are coll_patterns.c, the command
 * line coll_parse.c, nccl-tests' text layout and -J document coll_nt.c;
 * this file runs a sweep.  What they share is coll_int.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
/* the one-group table of lbscale before nccl-tests' layout (--layout
 * lbscale) */
static const struct bench_table nccl_table = {"", "", nccl_cols};
static const struct bench_table osu_table = {"", "", osu_cols};

/* Nodes and ranks per node of the communicator, from every rank's host
 * name (what MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups by on a
 * cluster, and what a network-namespace host with its own UTS namespace
 * changes): *rpn is the most ranks any node holds, so a run of 2 nodes x
 * 4 ranks says nodes 2, ranks_per_node 4.  One node on failure. */
enum { HN = 64 };
/* nccl-tests' config.devices entry of rank r (pid from *pids, its host,
 * its GPU: the index among its host's ranks under nccl, -1 on CPUs). */
static json_t *device_entry(const struct coll_run *cr, int r, const int *pids,
                            const char *host, int local)
{
    return json_pack("{s:i,s:i,s:i,s:s,s:i,s:s,s:s}", "rank", r, "group", 0,
                     "pid", pids[r], "hostname", host, "device",
                     cr->dev ? local : -1, "device_hex", "", "device_info",
                     cr->dev ? cr->gpu : "cpu");
}

/* Nodes and the most ranks on one node (*rpn), from every rank's host
 * name; rank 0 also keeps nccl-tests' device list (cr->devices). */
static int count_nodes(struct coll_run *cr, struct lbs_comm *c, int *rpn)
{
    char me[HN] = {0};
    int pid = (int)getpid();
    gethostname(me, HN - 1);
    char *all = calloc((size_t)c->size, HN);
    int *pids = calloc((size_t)c->size, sizeof *pids);
    *rpn = c->size;
    if (!all || !pids || lbs_allgather(c, me, all, HN, LBS_UINT8, -1) ||
        lbs_allgather(c, &pid, pids, 1, LBS_INT32, -1)) {
        free(all);
        free(pids);
        return 1;
    }
    int nodes = 0, most = 0;
    for (int r = 0; r < c->size; r++) {
        int first = -1, here = 0, local = 0;
        for (int q = 0; q < c->size; q++)
            if (!strncmp(all + (size_t)q * HN, all + (size_t)r * HN, HN)) {
                if (first < 0)
                    first = q;
                local += q < r;
                here++;
            }
        nodes += first == r;
        most = here > most ? here : most;
        if (cr->devices)
            json_array_append_new(cr->devices,
                                  device_entry(cr, r, pids,
                                               all + (size_t)r * HN, local));
    }
    free(all);
    free(pids);
    *rpn = most;
    return nodes;
}

/* ---- the driver's kernel: one (pattern, size, form) ------------------ */
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

/* One rank's seconds per call reduced over ranks as nccl-tests' -a:
 * 0 rank 0's, 1 the average, 2 the least, 3 the most. */
static int nt_reduce(struct coll_run *cr, double *sec)
{
    struct lbs_comm *ctl = cr->ctl;
    switch (cr->average) {
    case 0: return lbs_bcast(ctl, sec, 1, LBS_FLOAT64, 0, -1);
    case 2: return lbs_allreduce(ctl, sec, 1, LBS_FLOAT64, LBS_MIN, -1);
    case 3: return lbs_allreduce(ctl, sec, 1, LBS_FLOAT64, LBS_MAX, -1);
    }
    int rc = lbs_allreduce(ctl, sec, 1, LBS_FLOAT64, LBS_SUM, -1);
    *sec /= ctl->size;
    return rc;
}

/* nccl-tests' clock: one barrier, N x M calls with nothing between them
 * (no prep: in-place data is whatever the last call left, as there),
 * the elapsed time over N x M.  nccl: each lbs_comm call waits for its
 * stream, so the calls do not queue up behind each other as nccl-tests'
 * do (--help). */
static int coll_b2b(struct coll_run *cr, const struct coll_ops *op,
                    double *sec)
{
    struct cctx *c = &cr->x;
    long n = cr->iters * cr->agg;
    int rc = 0;
    op->prep(c, 0);
    if (cr->dev && (rc = dev_put(c, &cr->e)))
        return rc;
    if (cr->dev)
        dev_swap(c);
    if (!(rc = lbs_barrier(cr->comm))) {
        double t0 = cli_now();
        for (long i = 0; i < n && !rc; i++)
            rc = op->run(c);
        *sec = (cli_now() - t0) / (double)n;
    }
    if (cr->dev)
        dev_swap(c);
    return rc ? rc : nt_reduce(cr, sec);
}

/* One form: lbscale's loop (prepared, barrier-started calls, the last
 * checked), then nccl-tests' back-to-back calls. */
static int coll_form(struct coll_run *cr, struct coll_kernel *k, int ip,
                     struct form_res *f)
{
    cr->x.ip = ip;
    const struct bench_kernel kern = {
        .what = k->op->name, .ctx = k, .nphase = 1, .call = coll_call,
        .check = coll_check, .gather = coll_gather, .peers = cr->ctl};
    const struct bench_loop loop = {.warmup = cr->warmup,
                                    .iters = cr->iters};
    struct bench_result r;
    int rc = bench_time(&kern, &loop, &r, &cr->e);
    if (rc)
        return rc;
    f->ran = 1;
    f->st = r.st[0];
    f->wrong = r.wrong;
    bench_result_free(&r);
    return coll_b2b(cr, k->op, &f->nt);
}

/* nccl-tests' columns of one form: time, algbw, busbw, #wrong (absent
 * when the pattern has no such form); lbscale's median beside them. */
static void form_keys(json_t *row, const char *pre, const struct form_res *f,
                      double size, double factor, int checked)
{
    char k[32];
#define PUT(name, v) (snprintf(k, sizeof k, "%s_%s", pre, name), \
                      json_object_set_new(row, k, v))
    if (!f->ran)
        return;
    double alg = size / f->nt / 1e9;
    PUT("time_us", json_real(f->nt * 1e6));
    PUT("algbw_gbps", json_real(alg));
    PUT("busbw_gbps", json_real(alg * factor));
    PUT("wrong", checked ? json_integer(f->wrong) : json_null());
    PUT("median_us", json_real(f->st.median * 1e6));
#undef PUT
}

static json_t *coll_row(struct coll_run *cr, const struct coll_kernel *k,
                        const struct form_res f[2])
{
    const struct coll_ops *op = k->op;
    const struct form_res *nat = &f[op->native == F_IP];
    const struct cli_stats *st = &nat->st;
    int P = cr->comm->size;
    double fac = bw_factor(op, P, k->deg),
           algbw = (double)cr->x.size / st->median / 1e9, busbw = algbw * fac;
    json_t *row = json_pack(
        "{s:s,s:s,s:s,s:i,s:i,s:f,s:I,s:I,s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,"
        "s:I}",
        "bench", "coll", "coll", op->name, "backend", cr->comm->ops->name,
        "ranks", P, "nodes", cr->nodes, "bytes", cr->x.payload, "size",
        (json_int_t)cr->x.size, "count", (json_int_t)cr->x.count, "type",
        op->type, "iters", (int)cr->iters, "warmup", (int)cr->warmup,
        "time_us", st->median * 1e6, "time_us_min", st->min * 1e6,
        "time_us_max", st->max * 1e6, "algbw_gbps", algbw, "busbw_gbps",
        busbw, "wrong", (json_int_t)(f[0].wrong + f[1].wrong));
    if (!row)
        return NULL;
    json_object_set_new(row, "ranks_per_node", json_integer(cr->rpn));
    json_object_set_new(row, "time_us_mean", json_real(st->mean * 1e6));
    json_object_set_new(row, "checked", json_boolean(cr->check));
    json_object_set_new(row, "form", json_string(op->native == F_IP
                                                 ? "in-place"
                                                 : "out-of-place"));
    json_object_set_new(row, "nt_count",
                        json_integer((json_int_t)nt_count(op, &cr->x)));
    json_object_set_new(row, "redop", json_string(op->redop));
    json_object_set_new(row, "nt_root", json_integer(op->bw == BW_ONE
                                                     ? cr->root : -1));
    json_object_set_new(row, "agg_iters", json_integer(cr->agg));
    json_object_set_new(row, "average",
                        json_string(nt_average_names[cr->average]));
    form_keys(row, "oop", &f[0], (double)cr->x.size, fac, cr->check);
    form_keys(row, "ip", &f[1], (double)cr->x.size, fac, cr->check);
    /* nccl-tests' average: every form's busbw; the classic table's:
     * lbscale's busbw of each row */
    for (int i = 0; i < 2 && !op->compressed; i++)
        if (cr->classic ? i == 0 : f[i].ran) {
            cr->busbw_sum += cr->classic ? busbw
                             : (double)cr->x.size / f[i].nt / 1e9 * fac;
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

/* Rank 0: the row printed (JSON, nccl-tests' columns or the classic
 * table) and kept. */
static int coll_emit(struct coll_run *cr, json_t *row)
{
    int rc = 0;
    if (!cr->bo.json && !cr->osu && !cr->classic)
        nt_row(cr, row);
    else
        rc = bench_emit(&cr->bo, row, 0);
    cr->silent = rc != 0;   /* bench_emit printed it */
    fflush(stdout);
    if (cr->rows)
        json_array_append(cr->rows, row);
    return rc;
}

/* One size of one pattern: setup, each form, the row on rank 0. */
static int coll_size(struct coll_run *cr, const struct coll_ops *op, size_t S)
{
    struct cctx *c = &cr->x;
    c->count = c->size = c->n1 = 0;
    c->payload = 0;
    int s = op->setup(c, S), rc = 0;
    if (s < 0)
        rc = lbs_err_set(&cr->e, s, "out of memory at %zu bytes", S);
    else if (!s && cr->dev)
        rc = dev_alloc(c, &cr->e);
    /* one rank short of memory stops them all before the first barrier */
    int who, arc = lbs_comm_agree(cr->ctl, rc, &who, &cr->e);
    if (arc && who != cr->x.rank)
        cr->silent = 1;   /* the rank that failed says why */
    if (arc || s)
        return arc;
    struct coll_kernel k = {.cr = cr, .op = op};
    struct form_res f[2] = {{0}, {0}};
    unsigned forms = coll_forms(op, c);
    for (int ip = 0; ip < 2 && !rc; ip++)
        if (forms & (ip ? F_IP : F_OOP))
            rc = coll_form(cr, &k, ip, &f[ip]);
    if (rc)
        return rc;
    if (cr->lead) {
        json_t *row = coll_row(cr, &k, f);
        rc = row ? coll_emit(cr, row)
                 : lbs_err_set(&cr->e, -ENOMEM, "out of memory");
        json_decref(row);
    }
    cr->total_wrong += f[0].wrong + f[1].wrong;
    return rc;
}

/* The sizes minb, minb*f, ... <= maxb (or minb, minb+i, ...) of one
 * pattern; every rank stops together when one failed (rank 0 may have
 * failed writing). */
static int coll_sweep(struct coll_run *cr, const struct coll_ops *op)
{
    int rc = 0;
    if (cr->lead && !cr->bo.json && !cr->osu && !cr->classic)
        nt_section(op);
    for (size_t S = cr->minb; S && S <= cr->maxb && !rc;
         S = next_size(S, cr->factor, cr->stepb)) {
        rc = coll_size(cr, op, S);
        cctx_free(&cr->x);
        int stop = rc ? 1 : 0;
        if (lbs_allreduce(cr->ctl, &stop, 1, LBS_INT32, LBS_MAX, -1) ||
            stop) {
            if (!rc)
                rc = -EIO, cr->silent = 1;
            break;
        }
    }
    return rc;
}

/* ---- the verb ------------------------------------------------------- */
/* The comms (nccl: timings, #wrong and flags live in host memory and go
 * over a second, mpi comm on the same ranks; MPI is already up), the
 * root and the topology.  0, or the exit code after one printed line. */
static int coll_open(struct coll_run *cr, const struct coll_cmd *c)
{
    struct lbs_err *e = &cr->e;
    int rc = lbs_comm_new(c->backend, &cr->comm, e);
    if (rc) {
        if (!coll_quiet)
            cli_error("--backend", "%s", e->msg);
        return rc == -ENODEV ? EXIT_BAD_INPUT : cli_exit_code(rc);
    }
    cr->comm->err = e;
    cr->ctl = cr->comm;
    if (cr->dev && (rc = lbs_comm_mpi_new(&cr->ctl, e))) {
        if (!coll_quiet)
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
                             cr->factor, cr->stepb) > 0;
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
    if (!cr->osu && !cr->classic) {
        nt_preamble(cr);
        return;
    }
    printf("# time = median over iters of the max over ranks; busbw "
           "factors as nccl-tests (see --help)\n");
    if (cr->osu)
        printf("# OSU-style latency: per call, max over ranks; avg over "
               "the timed calls\n");
    bench_header(cr->bo.table, stdout);
}

/* Rows are saved only when every size of every pattern ran: a run whose
 * rank died leaves no rows that look complete (one locked write, whole
 * or absent), only what it printed. */
static int coll_keep(struct coll_run *cr)
{
    int rc = 0;
    if (cr->run && json_array_size(cr->rows) &&
        (rc = lbs_run_append_rows(cr->run, "coll", cr->rows, &cr->e))) {
        cli_error("coll", "%s", cr->e.msg);
        cr->silent = 1;
    }
    if (!rc && cr->rows && (cr->exp.csv || cr->exp.md) &&
        (rc = cli_export_write(&cr->exp, "coll", cr->rows, export_cols)))
        cr->silent = 1;   /* printed */
    return rc;
}

/* NCCL_TESTS_MIN_BW as nccl-tests: the run fails when the average bus
 * bandwidth is below 0.9 x the floor (nccl-tests' tolerance; it exits
 * with its testNumResults, lbscale with 1, its runtime failure). */
static int below_floor(const struct coll_run *cr, double avg)
{
    return cr->min_bw > 0 && !cr->osu && cr->busbw_n &&
           avg < 0.9 * cr->min_bw;
}

/* The closing lines: nccl-tests' footer, or the classic one. */
static void coll_footer(const struct coll_run *cr, double avg, int failed)
{
    if (!cr->osu && !cr->classic) {
        nt_footer(cr, avg, failed);
        return;
    }
    if (!cr->osu && cr->busbw_n)
        printf("# Out of bounds values : %ld %s\n# Avg bus bandwidth    : "
               "%g GB/s (mean over %ld rows, compressed patterns left "
               "out)\n", cr->total_wrong,
               !cr->check ? "(not checked)" : cr->total_wrong ? "FAILED"
                                                            : "OK",
               avg, cr->busbw_n);
}

/* The sweeps (-N times; 0: until interrupted), the rows kept, the
 * closing lines and the -J document. */
static int coll_main(struct coll_run *cr, const struct coll_cmd *c)
{
    int rc = 0;
    if (cr->lead && !cr->bo.json)
        coll_preamble(cr);
    for (long cyc = 0; !rc && (!cr->cycles || cyc < cr->cycles); cyc++)
        for (size_t k = 0; k < NCOLL && !rc; k++)
            if (c->sel[k])
                rc = coll_sweep(cr, &colls[k]);
    if (!rc)
        rc = coll_keep(cr);
    double avg = cr->busbw_n ? cr->busbw_sum / (double)cr->busbw_n : 0;
    int failed = !rc && cr->lead && below_floor(cr, avg);
    if (!rc && cr->lead && cr->json_path)
        rc = nt_json_write(cr, avg, failed);
    if (rc) {
        if (!cr->silent)
            cli_error("coll", "%s", cr->e.msg);
        return rc;
    }
    if (cr->lead && !cr->bo.json)
        coll_footer(cr, avg, failed);
    if (cr->total_wrong) {
        if (cr->lead)
            cli_error("coll", "%ld wrong elements (see #wrong)",
                      cr->total_wrong);
        return -EIO;
    }
    if (cr->lead && !cr->bo.json) {
        struct bench_out saved = cr->bo;
        saved.run = cr->run;
        bench_saved(&saved);
    }
    if (failed) {
        if (!cr->bo.json)
            printf("# Check failed: avg bus bandwidth %g GB/s < 0.9 x "
                   "NCCL_TESTS_MIN_BW %g\n", avg, cr->min_bw);
        cli_error("coll", "average bus bandwidth %g GB/s is below 0.9 x "
                  "NCCL_TESTS_MIN_BW=%g", avg, cr->min_bw);
        return -EIO;
    }
    return 0;
}

/* NCCL_TESTS_MIN_BW (GB/s; unset or empty: no floor). */
static int min_bw_env(double *min_bw)
{
    const char *mbw = getenv("NCCL_TESTS_MIN_BW");
    *min_bw = 0;
    if (mbw && *mbw && cli_double("NCCL_TESTS_MIN_BW", mbw, 0, 1e9, min_bw))
        return EXIT_BAD_INPUT;
    return 0;
}

/* Rank 0 opens the results run and checks the -J path; every rank learns
 * whether it could (0 or the exit code). */
static int coll_outputs(struct coll_run *cr, struct cli_common *com)
{
    int orc = 0;
    if (cr->lead) {
        orc = cli_open_run(com, "coll", cr->argc, cr->argv, &cr->run);
        if (!orc && cr->json_path && (orc = nt_json_check(cr)))
            cli_error("-J", "%s", cr->e.msg);
    }
    if (lbs_bcast(cr->ctl, &orc, 1, LBS_INT32, 0, -1))
        return EXIT_RUNTIME;
    return orc ? cli_exit_code(orc) : 0;
}

int verb_coll(int argc, char **argv)
{
    struct cli_common com = {.save = 1};
    struct coll_cmd c = {.minb = 8, .maxb = (size_t)16 << 20, .check = 1,
                         .factor = 2, .iters = 20, .warmup = 5, .agg = 1,
                         .cycles = 1, .average = 1, .threads = 1, .gpus = 1,
                         .density = 0.1, .list = "all", .topo = "ring",
                         .backend = "auto"};
    coll_quiet = env_rank() != 0;
    char gpu[256] = "";
    double min_bw;
    int rc = coll_parse(argc, argv, &com, &c);
    if (rc || (rc = coll_args_check(&c, gpu, sizeof gpu)) ||
        (rc = min_bw_env(&min_bw)))
        return rc < 0 ? 0 : rc;
    struct coll_run cr = {
        .dev = !strcmp(c.backend, "nccl"), .check = c.check, .osu = c.osu,
        .classic = c.classic, .gpu = gpu, .topo = c.topo, .minb = c.minb,
        .maxb = c.maxb, .factor = (size_t)c.factor,
        .stepb = c.factor_set ? 0 : c.stepb, .iters = c.iters,
        .warmup = c.warmup, .root = c.root, .agg = c.agg,
        .cycles = c.cycles, .average = c.average, .density = c.density,
        .exp = c.exp, .min_bw = min_bw, .json_path = c.json_file,
        .argc = argc, .argv = argv,
        .bo = {.verb = "coll", .json = com.json,
               .table = c.osu ? &osu_table : &nccl_table}};
    if ((rc = coll_open(&cr, &c)))
        return rc;
    if ((rc = coll_fits(&cr, &c))) {
        lbs_topology_free(cr.x.topo);
        comms_free(cr.comm, cr.ctl);
        return rc;
    }
    if (cr.lead)
        cr.devices = json_array();
    cr.nodes = count_nodes(&cr, cr.ctl, &cr.rpn);
    /* -N 0 never ends: nothing to save, rows not kept */
    if (cr.lead && cr.cycles)
        cr.rows = json_array();
    sum_tab_init(cr.x.P);
    int orc = coll_outputs(&cr, &com);
    rc = orc ? 0 : coll_main(&cr, &c);
    json_decref(cr.rows);
    json_decref(cr.devices);
    lbs_run_close(cr.run);
    lbs_topology_free(cr.x.topo);
    comms_free(cr.comm, cr.ctl);
    return orc ? orc : cli_exit_code(rc);
}
