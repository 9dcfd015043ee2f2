/* coll.c - `lbscale sim coll`: one collective, every algorithm x
 * protocol, the choice; --nccl-tuner-csv. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cli.h"
#include "sim_cli.h"

/* ---- coll ------------------------------------------------------------- */

/* One sim coll row: the choice, algbw/busbw and every candidate;
 * -EINVAL when no enabled algorithm and protocol can carry the size. */
static int coll_row(const struct lbs_sim_net *net,
                    const struct lbs_sim_platform *pl, int k, long P,
                    double bytes, json_t **out, struct lbs_err *e)
{
    struct lbs_sim_cost c = lbs_sim_coll_cost(net, k, bytes,
                                              LBS_TOPO_RING, 1);
    *out = NULL;
    if (!isfinite(c.t))
        return lbs_err_set(e, -EINVAL, "%s: no enabled algorithm and "
                           "protocol can run %s of %.0f bytes on %ld GPUs",
                           pl->file, lbs_coll_name(k), bytes, P);
    double Pd = (double)P;
    double algbw = c.t > 0 ? bytes / c.t / 1e9 : 0;
    /* nccl-tests bus bandwidth factors */
    double f = k == LBS_COLL_ALLREDUCE ? 2 * (Pd - 1) / Pd
               : k == LBS_COLL_ALLGATHER || k == LBS_COLL_ALLGATHERV
                   ? (Pd - 1)
               : k == LBS_COLL_ALLTOALL ? (Pd - 1) / Pd : 1;
    json_t *row = json_pack("{s:s,s:s,s:I,s:f,s:f,s:s,s:s,s:f,s:f}",
                            "platform", pl->name, "coll",
                            lbs_coll_name(k), "gpus", (json_int_t)P,
                            "bytes", bytes, "time_us", c.t * 1e6, "algo",
                            lbs_sim_algo_name(c.algo), "proto",
                            lbs_sim_proto_name(c.proto), "algbw_gbs", algbw,
                            "busbw_gbs", algbw * f);
    json_t *all = json_object();
    if (!row || !all) {
        json_decref(row);
        json_decref(all);
        return lbs_err_set(e, -ENOMEM, "out of memory");
    }
    for (int al = 0; al < LBS_SIM_NALGO; al++)
        for (int p = 0; p < LBS_SIM_NPROTO; p++) {
            double t = lbs_sim_algo_time(net, al, p, bytes,
                                         LBS_TOPO_RING, 1, NULL);
            char key[48];
            if (!isfinite(t) || lbs_sim_algo_coll(al) !=
                (k == LBS_COLL_ALLGATHERV ? LBS_COLL_ALLGATHER
                                         : (enum lbs_coll)k))
                continue;
            snprintf(key, sizeof key, "%s/%s", lbs_sim_algo_name(al),
                     lbs_sim_proto_name(p));
            json_object_set_new(all, key, json_real(t * 1e6));
        }
    json_object_set_new(row, "candidates_us", all);
    if (pl->nccl_model) {
        int na;
        struct lbs_sim_cost c = lbs_sim_coll_cost(net, (enum lbs_coll)k,
                                                  bytes, LBS_TOPO_RING, 1);
        json_object_set_new(row, "channels", json_integer(
            lbs_sim_nccl_channels(net, c.algo, &na)));
        json_object_set_new(row, "nccl_algo", json_integer(na));
        json_object_set_new(row, "nccl_proto", json_integer((int)c.proto));
    }
    *out = row;
    return 0;
}

/* Every (P, size) row of sim coll before anything is printed or written. */
static int coll_rows(const struct lbs_sim_platform *pl, int k, const long *P,
                     size_t np, const double *sizes, size_t ns,
                     json_t **rows, struct lbs_err *e)
{
    int rc = 0;
    *rows = json_array();
    if (!*rows)
        return lbs_err_set(e, -ENOMEM, "out of memory");
    for (size_t i = 0; i < np && !rc; i++) {
        struct lbs_sim_net net;
        rc = lbs_sim_net_init(&net, pl, P[i], e);
        for (size_t j = 0; j < ns && !rc; j++) {
            json_t *row;
            if (!(rc = coll_row(&net, pl, k, P[i], sizes[j], &row, e)) &&
                json_array_append_new(*rows, row))
                rc = lbs_err_set(e, -ENOMEM, "out of memory");
        }
    }
    if (rc) {
        json_decref(*rows);
        *rows = NULL;
    }
    return rc;
}

/* --bytes: a list of sizes with K/M/G suffixes, or A..B (x4 steps);
 * at most 64 sizes into sizes; -EINVAL after one printed line. */
static int parse_sizes(const char *arg, double *sizes, size_t *ns)
{
    char buf[256];
    char *save = NULL;
    int rc = 0;
    *ns = 0;
    snprintf(buf, sizeof buf, "%s", arg ? arg : "1K..1G");
    for (char *t = strtok_r(buf, ",", &save); t && !rc;
         t = strtok_r(NULL, ",", &save)) {
        char *dots = strstr(t, "..");
        size_t lo, hi;
        if (dots) {
            *dots = '\0';
            if (lbs_parse_size(t, &lo) || lbs_parse_size(dots + 2, &hi) ||
                hi < lo || lo == 0)
                rc = -EINVAL;
            for (double x = (double)lo; !rc && x <= (double)hi && *ns < 64;
                 x *= 4)
                sizes[(*ns)++] = x;
        } else if (lbs_parse_size(t, &lo) || *ns >= 64) {
            rc = -EINVAL;
        } else {
            sizes[(*ns)++] = (double)lo;
        }
    }
    if (rc || *ns == 0) {
        cli_error("--bytes", "'%s' is not a size list (e.g. 1K..1G or "
                  "4M,64M; K M G, Ki Mi Gi)", arg ? arg : "");
        return -EINVAL;
    }
    /* a trace's largest call (sim/README.md "Ranges") */
    for (size_t i = 0; i < *ns; i++)
        if (!(sizes[i] >= 1 && sizes[i] <= 9e15)) {
            cli_error("--bytes", "'%s': every size must be 1 .. 9e15 bytes",
                      arg);
            return -EINVAL;
        }
    return 0;
}

/* --timeline: NCCL_DEBUG=INFO's tuning line for the choice (enqueue.cc:
 * "%ld Bytes -> Algo %d proto %d time %f", NCCL's numbers), with the
 * names and the channels it would use. */
static void print_coll_tuning(const json_t *row)
{
    json_t *na = json_object_get(row, "nccl_algo");
    if (!na) {
        printf("  (MPI alpha-beta platform: no NCCL tuning line)\n");
        return;
    }
    if (json_integer_value(na) < 0) {
        printf("  NCCL INFO %.0f Bytes -> point-to-point sends (no tuner "
               "line), %lld channels\n", NUM(row, "bytes"),
               (long long)json_integer_value(json_object_get(row,
                                                             "channels")));
        return;
    }
    printf("  NCCL INFO %.0f Bytes -> Algo %lld proto %lld time %f  "
           "(%s/%s, %lld channels)\n", NUM(row, "bytes"),
           (long long)json_integer_value(na),
           (long long)json_integer_value(json_object_get(row, "nccl_proto")),
           NUM(row, "time_us"),
           json_string_value(json_object_get(row, "algo")),
           json_string_value(json_object_get(row, "proto")),
           (long long)json_integer_value(json_object_get(row, "channels")));
}

static void print_coll_row(const json_t *row)
{
    char ch[48];
    snprintf(ch, sizeof ch, "%s/%s",
             json_string_value(json_object_get(row, "algo")),
             json_string_value(json_object_get(row, "proto")));
    printf("  %-6.0f %12.0f  %-22s %10.2f %9.2f %9.2f\n", NUM(row, "gpus"),
           NUM(row, "bytes"), ch, NUM(row, "time_us"), NUM(row, "algbw_gbs"),
           NUM(row, "busbw_gbs"));
}

static void print_coll_timeline(const json_t *row)
{
    print_coll_row(row);
    print_coll_tuning(row);
}

/* ---- --nccl-tuner-csv -------------------------------------------------- */

/* The simulator's choice for one call, in the words of NCCL's example
 * tuner plugin (ext-tuner/example in NVIDIA/nccl: algorithm tree, ring,
 * nvls, nvls_tree; protocol ll, ll128, simple) and the channels. */
struct tuner_choice {
    const char *algo, *proto;
    int channels;
};

static struct tuner_choice tuner_choose(const struct lbs_sim_net *net, int k,
                                        double bytes)
{
    static const char *const protos[] = {"ll", "ll128", "simple"};
    struct lbs_sim_cost c = lbs_sim_coll_cost(net, (enum lbs_coll)k, bytes,
                                              LBS_TOPO_RING, 1);
    int na = -1;
    int ch = lbs_sim_nccl_channels(net, c.algo, &na);
    const char *algo = na == 0 ? "tree" : na == 1 ? "ring"
                       : na == 4 ? "nvls" : na == 5 ? "nvls_tree" : NULL;
    return (struct tuner_choice){algo, (unsigned)c.proto < 3
                                           ? protos[c.proto] : NULL, ch};
}

static int tuner_same(struct tuner_choice a, struct tuner_choice b)
{
    return a.algo == b.algo && a.proto == b.proto && a.channels == b.channels;
}

/* NCCL's nBytes of a call of trace-v1 bytes (enqueue.cc: an allgather's
 * count is per rank, its nBytes the whole output). */
static double tuner_nbytes(int k, long P, double bytes)
{
    return k == LBS_COLL_ALLGATHER ? bytes * (double)P : bytes;
}

static struct tuner_choice tuner_at(const struct lbs_sim_net *net, int k,
                                    double nbytes)
{
    return tuner_choose(net, k, k == LBS_COLL_ALLGATHER
                                    ? nbytes / (double)net->P : nbytes);
}

/* The first NCCL size in (a, b] whose choice differs from a's, a's choice
 * being ca and b's differing from it: bisection on whole bytes. */
static double tuner_switch(const struct lbs_sim_net *net, int k, double a,
                           double b, struct tuner_choice ca)
{
    while (b - a > 1) {
        double m = floor((a + b) / 2);
        if (tuner_same(tuner_at(net, k, m), ca))
            a = m;
        else
            b = m;
    }
    return b;
}

static int cmp_size(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One collective at one GPU count: rows over [lo, hi] (NCCL bytes), a row
 * per run of equal choices.  The choice is probed at every size of the
 * table (nb[0..nn-1], NCCL bytes) and on a grid of 16 points per
 * doubling; between two probes that differ the switch is found to the
 * byte.  (A choice that holds only between two neighbouring grid points,
 * under 4.4% of the size, can be missed.) */
static int tuner_rows(FILE *f, const struct lbs_sim_net *net, int k,
                      double lo, double hi, const double *nb, size_t nn)
{
    const char *name = k == LBS_COLL_BCAST ? "broadcast" : lbs_coll_name(k);
    size_t cap = nn + 16 * 64 + 2, n = 0;
    double *pr = malloc(cap * sizeof *pr);
    if (!pr)
        return -ENOMEM;
    for (size_t i = 0; i < nn; i++)
        pr[n++] = nb[i];
    for (double x = lo; x < hi && n < cap - 1; x *= pow(2, 1.0 / 16))
        pr[n++] = floor(x);
    pr[n++] = hi;
    qsort(pr, n, sizeof *pr, cmp_size);
    double start = lo;
    struct tuner_choice cur = tuner_at(net, k, lo);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (pr[i] <= start && i + 1 < n)
            continue;
        struct tuner_choice c = tuner_at(net, k, pr[i]);
        if (!cur.algo || !cur.proto) {
            rc = -EINVAL;
            break;
        }
        if (tuner_same(c, cur) && i + 1 < n)
            continue;
        double end = tuner_same(c, cur) ? hi
            : tuner_switch(net, k, i ? fmax(start, pr[i - 1]) : start,
                           pr[i], cur) - 1;
        fprintf(f, "%s,%.0f,%.0f,%s,%s,%d,%ld,%ld,-1,-1\n", name, start, end,
                cur.algo, cur.proto, cur.channels, net->N, net->P);
        start = end + 1;
        cur = tuner_at(net, k, start);
        if (start <= pr[i])
            i--;        /* probe pr[i] again against the new run */
        if (start > hi)
            break;
    }
    free(pr);
    return rc;
}

/* The CSV text for the collectives ks at every P over the sizes' span;
 * -EINVAL (said) when NCCL's tuner has nothing to take. */
static int tuner_csv(const struct lbs_sim_platform *pl, const int *ks,
                     int nk, const long *P, size_t np, const double *sizes,
                     size_t ns, char **text, size_t *len)
{
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < ns; i++) {
        lo = fmin(lo, sizes[i]);
        hi = fmax(hi, sizes[i]);
    }
    if (!pl->nccl_model) {
        cli_error("--nccl-tuner-csv", "%s has no \"nccl\" model: the "
                  "simulator makes no NCCL choice to write (use an NCCL "
                  "platform such as dgx-h100)", pl->name);
        return -EINVAL;
    }
    FILE *f = open_memstream(text, len);
    if (!f)
        return -ENOMEM;
    fprintf(f, "# lbscale sim coll --nccl-tuner-csv: the simulator's choice "
            "(NCCL 2.21.5 tuner model) on platform %s\n# format: NCCL's "
            "example tuner plugin (NVIDIA/nccl ext-tuner/example; "
            "NCCL_TUNER_CONFIG_FILE)\n# sizes: NCCL's nBytes (allgather: "
            "bytes per rank x nRanks), inclusive, over the simulated span\n"
            "# collective_type,min_bytes,max_bytes,algorithm,protocol,"
            "channels,nNodes,nRanks,numPipeOps,regBuff\n", pl->name);
    int rc = 0;
    for (int i = 0; i < nk && !rc; i++)
        for (size_t j = 0; j < np && !rc; j++) {
            struct lbs_sim_net net;
            struct lbs_err e;
            if (P[j] < 2) {
                fprintf(f, "# %s on 1 GPU: no collective, no row\n",
                        lbs_coll_name(ks[i]));
                continue;
            }
            if ((rc = lbs_sim_net_init(&net, pl, P[j], &e))) {
                cli_error("sim coll", "%s", e.msg);
                break;
            }
            double nb[64];
            for (size_t q = 0; q < ns; q++)
                nb[q] = tuner_nbytes(ks[i], P[j], sizes[q]);
            rc = tuner_rows(f, &net, ks[i],
                            ceil(tuner_nbytes(ks[i], P[j], lo)),
                            floor(tuner_nbytes(ks[i], P[j], hi)), nb, ns);
            if (rc)
                cli_error("--nccl-tuner-csv", "%s at %ld GPUs: a choice NCCL's "
                          "tuner cannot take", lbs_coll_name(ks[i]), P[j]);
        }
    if (fclose(f) && !rc)
        rc = -ENOMEM;
    if (rc) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

/* The collectives of the CSV: --coll if given, else every one NCCL's
 * tuner takes that lbscale models. */
static int tuner_colls(const struct simargs *a, int k, int ks[3])
{
    if (!a->coll) {
        ks[0] = LBS_COLL_ALLREDUCE;
        ks[1] = LBS_COLL_ALLGATHER;
        ks[2] = LBS_COLL_BCAST;
        return 3;
    }
    if (k != LBS_COLL_ALLREDUCE && k != LBS_COLL_ALLGATHER &&
        k != LBS_COLL_BCAST) {
        cli_error("--nccl-tuner-csv", "%s is not a collective NCCL's tuner "
                  "chooses for (allreduce, allgather, bcast here)",
                  lbs_coll_name(k));
        return -EINVAL;
    }
    ks[0] = k;
    return 1;
}

static int sim_coll(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_sim_platform *pl = NULL;
    struct lbs_run *run = NULL;
    json_t *rows = NULL;
    long *P = NULL;
    size_t np = 0, ns = 0;
    double sizes[64];
    int rc, k;
    if (!a->platform) {
        cli_error("sim coll", "--platform is required (see --help)");
        return EXIT_BAD_INPUT;
    }
    k = lbs_coll_from_name(a->coll ? a->coll : "allreduce");
    if (k < 0) {
        cli_error("--coll", "unknown collective '%s'", a->coll);
        return EXIT_BAD_INPUT;
    }
    if ((rc = lbs_sim_platform_find(a->platform, &pl, &e)) ||
        (rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "8", &P, &np, &e))) {
        cli_error("sim coll", "%s", e.msg);
        goto out;
    }
    if ((rc = parse_sizes(a->bytes, sizes, &ns)))
        goto out;
    for (size_t i = 0; i < np; i++)
        if (P[i] < 2) {
            cli_error("--gpus", "%ld: a collective needs at least 2 GPUs",
                      P[i]);
            rc = -EINVAL;
            goto out;
        }
    if ((rc = coll_rows(pl, k, P, np, sizes, ns, &rows, &e))) {
        cli_error("sim coll", "%s", e.msg);
        goto out;
    }
    if (a->tuner_csv) {
        int ks[3], nk = tuner_colls(a, k, ks);
        char *csv = NULL;
        size_t len = 0;
        rc = nk < 0 ? nk : tuner_csv(pl, ks, nk, P, np, sizes, ns, &csv,
                                     &len);
        if (!rc && (rc = lbs_write_atomic(a->tuner_csv, csv, len, &e)))
            cli_error("--nccl-tuner-csv", "%s", e.msg);
        free(csv);
        if (rc)
            goto out;
    }
    if ((rc = cli_open_run(&a->com, "sim_coll", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        printf("# %s on %s: time (us) of every algorithm/protocol, the "
               "choice, and busbw\n# %-6s %12s  %-22s %10s %9s %9s\n",
               lbs_coll_name(k), pl->name, "gpus", "bytes", "choice",
               "time(us)", "algbw", "busbw");
    rc = emit_rows(a, run, "sim_coll", "sim coll", rows,
                   a->timeline ? print_coll_timeline : print_coll_row);
out:
    json_decref(rows);
    lbs_run_close(run);
    free(P);
    lbs_sim_platform_free(pl);
    return cli_exit_code(rc);
}

int cmd_coll(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        SIM_PLATFORM_ROW(a),
        {.name = "coll", .type = CLI_STR, .dst = &a->coll, .arg = "C",
         .help = "allreduce (default), allgather, allgatherv, alltoall,\n"
                 "bcast, barrier or neighbor"},
        SIM_GPUS_ROW(a, "GPU counts (default 8): 8,64 or A..B"),
        {.name = "bytes", .type = CLI_STR, .dst = &a->bytes, .arg = "LIST",
         .help = "sizes: 1K..1G (x4 steps, the default) or 4M,64M"},
        {.name = "timeline", .type = CLI_FLAG, .dst = &a->timeline,
         .help = "under each row, the choice as NCCL_DEBUG=INFO's tuning\n"
                 "line prints it (NCCL's algorithm and protocol numbers)\n"
                 "with the channels"},
        {.name = "nccl-tuner-csv", .type = CLI_STR, .dst = &a->tuner_csv,
         .arg = "FILE",
         .help = "also write the choices (algorithm, protocol, channels)\n"
                 "per collective, GPU count and size range, every switch\n"
                 "to the byte, over the span of --bytes, in the CSV of\n"
                 "NCCL's example tuner plugin (NCCL_TUNER_CONFIG_FILE);\n"
                 "sizes in NCCL's nBytes; without --coll: allreduce,\n"
                 "allgather and broadcast"},
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim coll",
        .usage = "usage: lbscale sim coll --platform P [--coll allreduce] "
                 "[--gpus 8] [--bytes 1K..1G]\n"
                 "                        [--timeline] [--nccl-tuner-csv "
                 "FILE]",
        .about = "Cost of one collective under every algorithm and protocol "
                 "the\nplatform enables, the fastest (NCCL-style choice), "
                 "and nccl-tests'\nalgbw = bytes/time and busbw (allreduce "
                 "x 2(P-1)/P).  The platform file: a regular file of at "
                 "most\n1 MiB.",
        .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_coll(a, argc, argv);
}
