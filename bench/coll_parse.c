/* coll_parse.c - `lbscale coll`'s command line: nccl-tests' options and
 * sizes, --coll lists, and the checks of what they select. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "lbs_config.h"
#include "lbs_cuda.h"
#include "lbscale/param.h"
#include "coll_int.h"

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
