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
 * Ownership: everything is allocated and freed per (pattern, size) here.
 *
 * Files: the patterns and their table are coll_patterns.c, the command
 * line coll_parse.c; this file runs a sweep and prints it.  What they
 * share is coll_int.h. */
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
    coll_quiet = env_rank() != 0;
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
