/* coll_parse.c - `lbscale coll`'s command line: nccl-tests' options and
 * sizes, --coll lists, and the checks of what they select. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <fcntl.h>

#include "lbs_config.h"
#include "lbs_cuda.h"
#include "lbscale/param.h"
#include "coll_int.h"

/* ---- CLI ---------------------------------------------------------------- */
static const char coll_usage[] =
"usage: lbscale coll [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-n ITERS]\n"
"                    [-w WARMUP] [-m AGG] [-N CYCLES] [-a 0|1|2|3]\n"
"                    [-J FILE.json] [--coll LIST] [--topo T] [-k DENSITY]\n"
"                    [-r R] [--backend auto|mpi|self|nccl]\n"
"                    [--layout nccl-tests|lbscale] [--json] [--out DIR]\n"
"                    [--no-save]\n"
"       mpirun -np P lbscale coll ...     (any P; only rank 0 prints/writes)";

static const char coll_about[] =
"Collective benchmark with nccl-tests' options, columns and -J JSON.  For\n"
"each collective and each size MIN, MIN*F, ... <= MAX (or MIN, MIN+I, ...\n"
"with -i), each form the pattern has - out of place (separate send and\n"
"receive buffers) and in place (MPI_IN_PLACE; nccl-tests' in-place) - is\n"
"timed by two clocks, both printed:\n"
"  time (nccl-tests'): one barrier, then N x M calls back to back; each\n"
"    rank's elapsed time / (N x M), averaged over ranks (-a changes it).\n"
"  oop_med, ip_med (lbscale's, time_us in the JSON): W untimed calls,\n"
"    then N timed ones, each after a barrier; per call the slowest rank,\n"
"    and the median over the N calls (min and max in the JSON).\n"
"Data is fp32 sum.  Forms: allreduce out of place is the backend's own\n"
"call into a second buffer (MPI_Allreduce, ncclAllReduce); allgather(v),\n"
"alltoall, reduce_scatter in place are MPI_IN_PLACE (nccl: allgather in\n"
"place is ncclAllGather's; alltoall has no in-place form there: N/A);\n"
"bcast has one buffer in MPI and lbs_comm, so its out-of-place form is\n"
"the root's copy into the receive buffer plus the in-place call, timed\n"
"together; neighbor and the compressed topk_allgather and onebit have\n"
"only the out-of-place form (in place: N/A).  nccl: every lbs_comm call\n"
"waits for its stream, so back-to-back calls do not overlap as in\n"
"nccl-tests, and -m's calls are not grouped (ncclGroupStart).\n"
"\n"
"Layout (--layout nccl-tests, the default): nccl-tests' '#' lines (nThread\n"
"line, '# Using devices' with one '#  Rank' line per rank), then per\n"
"collective '# Collective test starting: NAME' and the columns\n"
"  size(B) count(elements) type redop root | out-of-place: time(us)\n"
"  algbw(GB/s) busbw(GB/s) #wrong | in-place: the same | lbscale:\n"
"  oop_med(us) ip_med(us)\n"
"then '# Out of bounds values', '# Avg bus bandwidth' (nccl-tests' busbw,\n"
"mean over every out-of-place and in-place result of the dense patterns).\n"
"count is nccl-tests' (allgather: each rank's block; reduce_scatter: each\n"
"rank's result; alltoall: one peer's block; allgatherv: size/4/P); root is\n"
"-1 but for bcast.  --layout lbscale: the one-group table of lbscale 0.1\n"
"(coll first; time = lbscale's median of the pattern's native form).\n"
"\n"
"Columns: size = bytes of the whole buffer as in nccl-tests (allreduce,\n"
"bcast, neighbor: the buffer; allgather(v): the gathered output;\n"
"reduce_scatter: the input; alltoall: the send buffer), rounded down to\n"
"what divides; count = its elements (the JSON's count; the table's is\n"
"nccl-tests', above); algbw = size / time;\n"
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
"the result of the last timed call of lbscale's loop exactly; summed over\n"
"ranks (exit 1 if any).  NCCL_TESTS_MIN_BW=X (GB/s), as in nccl-tests: an\n"
"average bus bandwidth below 0.9 X fails the run: the footer says FAILED,\n"
"-J's average_bus_bandwidth.okay is false, exit 1 (nccl-tests exits 7).\n"
"JSON rows (--json, <run>/coll.jsonl): bench coll, ranks,\n"
"nodes (distinct host names), ranks_per_node (the most ranks on one host),\n"
"bytes (trace-v1: the payload this rank contributes; allgatherv: the mean),\n"
"size, count (size/4), time_us, time_us_min, time_us_max, algbw_gbps,\n"
"busbw_gbps (lbscale's clock, of the form named by `form`: allreduce,\n"
"bcast, masked_allreduce in place, the others out of place, as lbscale\n"
"0.1 timed them), wrong (both forms) - the rows `lbscale sim calibrate`\n"
"fits - and nccl-tests' columns: oop_time_us, oop_algbw_gbps,\n"
"oop_busbw_gbps, oop_wrong, oop_median_us and ip_* the same (absent\n"
"without that form), nt_count, redop, nt_root, agg_iters, average.\n"
"-J FILE.json: nccl-tests' JSON document (version 3: args, env - only\n"
"NCCL_, UCX_, OMPI_MCA_, OMP_, LBSCALE_ variables -, config with devices,\n"
"results with out_of_place/in_place {time, alg_bw, bus_bw, nwrong} or\n"
"null, out_of_bounds, average_bus_bandwidth), each result also naming its\n"
"collective (coll, experiment_name) and lbscale's medians; an existing\n"
"FILE is kept and FILE.0, FILE.1, ... written instead, as nccl-tests.\n"
"sim calibrate reads the text and the -J file too.";

int coll_quiet;
#define BAD(...)                                                            \
    do {                                                                    \
        if (!coll_quiet)                                                    \
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
        if (!coll_quiet)
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
        if (!coll_quiet)
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
        if (!coll_quiet)
            cli_error(TYPED(o, v), "'%s' is not a fraction in (0, 1]", v);
        return -EINVAL;
    }
    return 0;
}
/* -f: dst is the coll_cmd (a given -f wins over -i, as in nccl-tests) */
static int q_factor_opt(const char *o, const char *v, void *dst)
{
    struct coll_cmd *c = dst;
    c->factor_set = 1;
    return q_long(TYPED(o, v), v, 2, 1024, &c->factor) ? -EINVAL : 0;
}
/* -m is nccl-tests' aggregated iterations; OSU's MIN:MAX moved to
 * --message-size, which the message names when a range is given. */
static int q_agg_opt(const char *o, const char *v, void *dst)
{
    if (v && strchr(v, ':')) {
        if (!coll_quiet)
            cli_error(TYPED(o, v), "'%s' looks like OSU's MIN:MAX: -m is "
                      "nccl-tests' aggregated iterations (use --message-size "
                      "%s)", v, v);
        return -EINVAL;
    }
    return q_long(TYPED(o, v), v, 1, 1000000, dst) ? -EINVAL : 0;
}
/* -t threads per process, -g GPUs per thread: one rank per process and
 * one device per rank here (dst: "threads" or "GPUs"). */
static int q_one_opt(const char *o, const char *v, void *what)
{
    long n;
    if (q_long(TYPED(o, v), v, 1, 1 << 20, &n))
        return -EINVAL;
    if (n != 1) {
        if (!coll_quiet)
            cli_error(TYPED(o, v), "%ld %s: lbscale coll runs one rank per "
                      "process on one %s (use mpirun -np RANKS)", n,
                      (const char *)what, !strcmp(what, "threads")
                                              ? "thread" : "device");
        return -EINVAL;
    }
    return 0;
}
/* -J: nccl-tests infers the type from the suffix and writes only json */
static int q_json_opt(const char *o, const char *v, void *dst)
{
    size_t n = strlen(v);
    if (n < 5 || strcasecmp(v + n - 5, ".json")) {
        if (!coll_quiet)
            cli_error(TYPED(o, v), "'%s': only JSON is written, to a name "
                      "ending in .json (as nccl-tests)", v);
        return -EINVAL;
    }
    *(const char **)dst = v;
    return 0;
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
            if (!coll_quiet)
                cli_error("--coll", "'%s' has an empty item", list);
            free(dup);
            return EXIT_BAD_INPUT;
        }
        size_t k = 0;
        while (k < NCOLL && strcmp(t, colls[k].name) &&
               !(colls[k].alias && !strcmp(t, colls[k].alias)))
            k++;
        if (k == NCOLL) {
            if (!coll_quiet)
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

/* Parse argv into c; on ranks other than 0 errors are not printed (only
 * rank 0 speaks).  0 to go on, -1 to exit 0, else the exit code. */
int coll_parse(int argc, char **argv, struct cli_common *com,
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
        {.name = "message-size", .type = CLI_CALL,
         .fn = q_range_opt, .dst = range, .arg = "MIN:MAX",
         .help = "OSU's -m: -b and -e in one (bytes)"},
        {.name = "stepbytes", .short_name = 'i', .type = CLI_CALL,
         .fn = q_size_opt, .dst = &c->stepb, .arg = "S",
         .help = "add S bytes per step instead of -f (nccl-tests; a\n"
                 "given -f wins)"},
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
         .fn = q_factor_opt, .dst = c, .arg = "F",
         .help = "multiply the size by integer F >= 2 (default 2)"},
        CLI_ITERS_OPT(&c->iters, 'n', 1000000,
                      "timed iterations per size and form (default 20)"),
        CLI_WARMUP_OPT(&c->warmup, 'w', "untimed calls first, per size and "
                       "form (default 5)"),
        {.name = "agg_iters", .short_name = 'm', .type = CLI_CALL,
         .fn = q_agg_opt, .dst = &c->agg, .arg = "M",
         .help = "calls per timed iteration of nccl-tests' clock\n"
                 "(default 1): N x M back to back, time / (N x M)"},
        {.name = "run_cycles", .short_name = 'N', .type = CLI_LONG,
         .dst = &c->cycles, .arg = "C", .lo = 0, .hi = 1000000,
         .help = "run and print the whole sweep C times (default 1;\n"
                 "0: until interrupted, rows neither saved nor -J)"},
        {.name = "average", .short_name = 'a', .type = CLI_LONG,
         .dst = &c->average, .arg = "A", .lo = 0, .hi = 3,
         .help = "nccl-tests' time over ranks: 0 rank 0's, 1 the\n"
                 "average (default), 2 the least, 3 the most"},
        {.name = "output_file", .short_name = 'J', .type = CLI_CALL,
         .fn = q_json_opt, .dst = &c->json_file, .arg = "FILE.json",
         .help = "also write nccl-tests' JSON document (rank 0)"},
        {.name = "nthreads", .short_name = 't', .type = CLI_CALL,
         .fn = q_one_opt, .dst = "threads", .arg = "1",
         .help = "threads per process: 1 only (one rank per process)"},
        {.name = "ngpus", .short_name = 'g', .type = CLI_CALL,
         .fn = q_one_opt, .dst = "GPUs", .arg = "1",
         .help = "GPUs per thread: 1 only (nccl: one rank per GPU)"},
        {.name = "layout", .type = CLI_CHOICE, .dst = &c->classic,
         .arg = "L", .choices = (const char *const[]){"nccl-tests",
                                                      "lbscale", NULL},
         .help = "text table: nccl-tests (default: two column groups)\n"
                 "or lbscale (one group, lbscale's median)"},
        {.name = "coll", .type = CLI_STR, .dst = &c->list, .arg = "LIST",
         .help = "comma-separated, or all (default): allreduce,\n"
                 "allgather, allgatherv, reduce_scatter, alltoall,\n"
                 "bcast, neighbor, masked_allreduce, topk_allgather,\n"
                 "onebit"},
        {.name = "topo", .type = CLI_STR, .dst = &c->topo, .arg = "T",
         .help = "neighbor graph: ring (default), exponential, onepeer\n"
                 "(phase advances every call of lbscale's loop;\n"
                 "nccl-tests' clock keeps the last), full"},
        {.name = "density", .short_name = 'k', .type = CLI_CALL,
         .fn = q_density_opt, .dst = &c->density, .arg = "K",
         .help = "compressed patterns' kept fraction (default 0.1)"},
        {.name = "root", .short_name = 'r', .type = CLI_LONG, .dst = &c->root,
         .arg = "R", .lo = 0, .hi = INT_MAX,
         .help = "bcast root (default 0)"},
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
    if (coll_quiet) {   /* the parser prints its errors itself */
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
    if (c->help && !coll_quiet)
        cli_usage(&verb, stdout);
    return c->help ? -1 : 0;
}

/* The checks that need no comm: sizes, collectives, topology, backend;
 * nccl: a build with NCCL and a GPU (before MPI starts). */
int coll_args_check(struct coll_cmd *c, char *gpu, size_t len)
{
    if (c->minb > c->maxb)
        BAD("coll", "-b %zu is larger than -e %zu", c->minb, c->maxb);
    if (c->json_file && !c->cycles)
        BAD("-J", "-N 0 runs until interrupted: the JSON document would "
            "never be written");
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
