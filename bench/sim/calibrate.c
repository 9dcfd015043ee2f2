/* calibrate.c - `lbscale sim calibrate`: fit a platform from `lbscale
 * coll`, nccl-tests or OSU results. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../cli.h"
#include "calibrate_nccl.h"
#include "sim_cli.h"

/* ---- calibrate --------------------------------------------------------- */

static const char calib_about[] =
    "Fits the alpha-beta constants of a machine or cluster from measured\n"
    "collectives and writes a platform file, usable as --platform FILE.\n"
    "Without --out it goes into a new run directory (results/<run>/\n"
    "platform-NAME.json; the root from $LBSCALE_RESULTS), never into the\n"
    "source tree.  Inputs (each a regular file of at most 256 MiB; the\n"
    "format is recognised from the content):\n"
    "  lbscale coll JSONL  rows {coll, ranks, bytes, time_us or\n"
    "                      time_us_median; optional nodes, ranks_per_node,\n"
    "                      wrong, bench}\n"
    "  nccl-tests output   the text table (every version's columns, found by\n"
    "                      name: out-of-place time; rows with #wrong > 0\n"
    "                      skipped; must end with '# Avg bus bandwidth'),\n"
    "                      or the JSON of -J FILE; ranks and nodes from its\n"
    "                      '#  Rank N ... on HOST' lines / devices\n"
    "  OSU latency table   osu_allreduce, osu_allgather(v), osu_alltoall,\n"
    "                      osu_bcast, osu_barrier ('# Size  Avg\n"
    "                      Latency(us)'): give --ranks (and --ranks-per-node)\n"
    "Sizes become lbscale's per-rank payload (trace-v1): nccl-tests\n"
    "allgather size / P; OSU alltoall size x P.  Collectives without a\n"
    "fitted form (reduce_scatter, reduce, neighbor, compressed patterns),\n"
    "rows with 1 rank and rows with wrong elements are skipped.\n"
    "Model (ring forms; steps and volume per collective as in sim/README.md):\n"
    "  t = base + steps (hop + [step message > eager_max] rndv)\n"
    "      + volume / bw(coll) + [allreduce] (P-1)/P bytes / reduce_bw\n"
    "fitted apart to the rows of one node (the link inside a node) and to\n"
    "the rows of several nodes (the network: the ring's exit from a node,\n"
    "written as the node's NIC rate and the inter-node step latency).\n"
    "eager_max (MPI's eager limit) and reduce_bw are fitted when the data\n"
    "supports them.  Prints two held-out errors per fit (every other message\n"
    "size; each rank count from the others) and how well the written\n"
    "platform, priced by the simulator itself, reproduces every sample.\n"
    "The cluster: --gpus-per-node (default the ranks per node measured),\n"
    "--nodes (default the most nodes measured) and --fabric describe the\n"
    "machine to simulate, so max_gpus = nodes x gpus-per-node.  Each input's\n"
    "path, format, CRC-32 and size are recorded in calibration.inputs.\n"
    "GPU measurements (nccl-tests): --nccl-model BASE fits NCCL's own\n"
    "model instead, over a GPU preset of the same kind (sim list): one\n"
    "factor on the node's links (intra graph bandwidth per channel) from\n"
    "one-node rows and one on the network (inter graph, p2p, NICs) from\n"
    "rows of several nodes, least squares on log time; NCCL 2.21.5's\n"
    "latencies and protocol rules are kept, and the error of the base and\n"
    "of the fit on every row, and held-out sizes, are printed.";

struct calib_args {
    const char *out, *name, *coll;
    const char *nccl_base;        /* --nccl-model BASE: fit over a preset */
    double peak, mem;
    size_t blo, bhi;
    long nodes, gpn, ranks, rpn;
    const char *fabric;           /* "flat" or "fat-tree" */
    long leaf;
    double oversub, spine_us;
    struct cli_common com;        /* the run directory without --out */
    int argc;
    char **argv;
};

/* "LO..HI" (sizes with suffixes; either side may be empty) */
static int parse_range(const char *opt, const char *v, size_t *lo,
                       size_t *hi)
{
    const char *dots = v ? strstr(v, "..") : NULL;
    char a[64];
    if (!dots || (size_t)(dots - v) >= sizeof a) {
        cli_error(opt, "'%s': give MIN..MAX, e.g. 256..2Mi or 8Mi..",
                  v ? v : "");
        return -EINVAL;
    }
    memcpy(a, v, (size_t)(dots - v));
    a[dots - v] = '\0';
    if ((a[0] && lbs_parse_size(a, lo)) ||
        (dots[2] && lbs_parse_size(dots + 2, hi)) || *lo > *hi) {
        cli_error(opt, "'%s': give MIN..MAX sizes, MIN <= MAX (e.g. "
                  "256..2Mi)", v);
        return -EINVAL;
    }
    return 0;
}

/* --bytes LO..HI (dst: struct calib_args) */
static int range_opt(const char *opt, const char *v, void *dst)
{
    struct calib_args *c = dst;
    return parse_range(opt, v, &c->blo, &c->bhi);
}

/* --fabric flat | fat-tree:nodes_per_leaf=L[,oversubscription=R]
 * [,lat_spine_us=X] (the platform's own field names; dst: calib_args) */
static int fabric_opt(const char *opt, const char *v, void *dst)
{
    struct calib_args *c = dst;
    char buf[256];
    if (!v || !strcmp(v, "flat")) {
        c->fabric = "flat";
        return 0;
    }
    if (strncmp(v, "fat-tree:", 9) || strlen(v) >= sizeof buf) {
        cli_error(opt, "'%s': give flat or fat-tree:nodes_per_leaf=L"
                  "[,oversubscription=R][,lat_spine_us=X]", v);
        return -EINVAL;
    }
    snprintf(buf, sizeof buf, "%s", v + 9);
    c->fabric = "fat-tree";
    c->leaf = 0;
    c->oversub = 1;
    c->spine_us = 0;
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '='), *end;
        double x = eq ? strtod(eq + 1, &end) : NAN;
        int okv = eq && end != eq + 1 && !*end && isfinite(x);
        if (okv && !strncmp(kv, "nodes_per_leaf=", 15) && x >= 1 &&
            x <= 1e9 && x == floor(x))
            c->leaf = (long)x;
        else if (okv && !strncmp(kv, "oversubscription=", 17) && x >= 1 &&
                 x <= 1000)
            c->oversub = x;
        else if (okv && !strncmp(kv, "lat_spine_us=", 13) && x >= 0 &&
                 x <= 1e6)
            c->spine_us = x;
        else {
            cli_error(opt, "'%s': unknown or out-of-range '%s' (nodes_per_"
                      "leaf 1..1e9, oversubscription 1..1000, lat_spine_us "
                      "0..1e6)", v, kv);
            return -EINVAL;
        }
    }
    if (!c->leaf) {
        cli_error(opt, "'%s': a fat-tree needs nodes_per_leaf=L", v);
        return -EINVAL;
    }
    return 0;
}

static void print_heldout(const char *what, const struct lbs_sim_heldout *h,
                          const char *why_na)
{
    if (h->med >= 0)
        printf("%s (%zu samples): median %.1f%%, worst %.1f%%\n", what,
               h->n, 100 * h->med, 100 * h->max);
    else
        printf("%s: n/a (%s)\n", what, why_na);
}

static void print_fit(const char *lead, const struct lbs_sim_fit *fit,
                      const char *per)
{
    printf("%s: base %.2f us, per step %.3f us, bandwidth %.3f GB/s %s\n",
           lead, fit->base_lat * 1e6, fit->hop_lat * 1e6, fit->bw / 1e9,
           per);
    if (fit->eager_max > 0 && fit->rndv_lat > 0)
        printf("  rendezvous: +%.3f us per step above %.0f bytes\n",
               fit->rndv_lat * 1e6, fit->eager_max);
    printf("  per collective (GB/s):");
    for (int k = 0; k < LBS_COLL_COUNT; k++)
        if (k != LBS_COLL_ALLGATHERV && fit->coll_bw[k] > 0)
            printf(" %s %.3f", lbs_coll_name(k), fit->coll_bw[k] / 1e9);
    printf("\n");
    if (fit->reduce_bw > 0)
        printf("  reduction: %.3f GB/s\n", fit->reduce_bw / 1e9);
    print_heldout("  held-out sizes", &fit->sizes, "fewer than 6 samples");
    print_heldout("  held-out rank counts", &fit->ranks,
                  "samples at one rank count only");
}

/* The memory bandwidth: --mem-bw-gbs, else STREAM's triad now. */
static int calib_mem(struct calib_args *c, int *measured)
{
    struct stream_result sr;
    *measured = 0;
    if (c->mem > 0)
        return 0;
    if (stream_measure(16000000, 3, &sr) || sr.wrong) {
        cli_error("sim calibrate", "STREAM measurement failed; give "
                  "--mem-bw-gbs");
        return -EIO;
    }
    c->mem = sr.triad_gbps;
    *measured = 1;
    return 0;
}

/* The samples of one node (nodes <= 1) or of several, and their fit. */
struct calib_class {
    struct lbs_sim_sample *s;
    size_t n;
    struct lbs_sim_fit fit;
    long most_ranks, most_rpn, most_nodes;
};

static int calib_class_fit(struct calib_class *k, const char *what)
{
    struct lbs_err e;
    if (!k->n)
        return 0;
    int rc = lbs_sim_fit(k->s, k->n, &k->fit, &e);
    if (rc)
        cli_error("sim calibrate", "%s: %s", what, e.msg);
    return rc;
}

/* Split the samples by node count and fit each class present. */
static int calib_split(const struct lbs_sim_samples *set,
                       struct calib_class *one, struct calib_class *multi)
{
    *one = (struct calib_class){0};
    *multi = (struct calib_class){0};
    one->s = malloc((set->n + 1) * sizeof *one->s);
    multi->s = malloc((set->n + 1) * sizeof *multi->s);
    if (!one->s || !multi->s) {
        cli_error("sim calibrate", "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < set->n; i++) {
        const struct lbs_sim_sample *x = &set->s[i];
        struct calib_class *k = x->nodes > 1 ? multi : one;
        long rpn = x->rpn > 0 ? x->rpn : x->ranks;
        k->s[k->n++] = *x;
        k->most_ranks = x->ranks > k->most_ranks ? x->ranks : k->most_ranks;
        k->most_rpn = rpn > k->most_rpn ? rpn : k->most_rpn;
        k->most_nodes = x->nodes > k->most_nodes ? x->nodes : k->most_nodes;
    }
    if (!one->n && !multi->n) {
        cli_error("sim calibrate", "calibration needs at least 2 usable "
                  "samples (ranks >= 2, time > 0), got 0");
        return -EINVAL;
    }
    int rc = calib_class_fit(one, "the rows of one node");
    if (!rc && multi->n && one->n) {
        /* the node's own constants known: fit only the network's */
        struct lbs_err e;
        if ((rc = lbs_sim_fit_net(multi->s, multi->n, &one->fit,
                                  &multi->fit, &e)))
            cli_error("sim calibrate", "the rows of several nodes: %s",
                      e.msg);
    } else if (!rc) {
        rc = calib_class_fit(multi, "the rows of several nodes");
    }
    return rc;
}

/* GPUs per node and nodes of the written platform, checked against what
 * was measured. */
static int calib_layout(const struct calib_args *c,
                        const struct calib_class *one,
                        const struct calib_class *multi, long *gpn,
                        long *nodes, char *note, size_t nl)
{
    long need = multi->n ? multi->most_rpn : 0;
    if (one->most_ranks > need)
        need = one->most_ranks;
    *gpn = c->gpn ? c->gpn : multi->n ? multi->most_rpn : one->most_ranks;
    *nodes = c->nodes ? c->nodes : multi->n ? multi->most_nodes : 1;
    if (*gpn < need) {
        cli_error("--gpus-per-node", "%ld is fewer than the %ld ranks one "
                  "node ran in the measurements", *gpn, need);
        return -EINVAL;
    }
    if (multi->n && *nodes < multi->most_nodes) {
        cli_error("--nodes", "%ld is fewer than the %ld nodes measured",
                  *nodes, multi->most_nodes);
        return -EINVAL;
    }
    snprintf(note, nl, "%ld node(s) x %ld GPU(s) per node: nodes %s, GPUs "
             "per node %s", *nodes, *gpn, c->nodes ? "given (--nodes)"
             : multi->n ? "as measured" : "one (no multi-node rows)",
             c->gpn ? "given (--gpus-per-node)" : multi->n
             ? "the ranks per node measured" : "the most ranks measured");
    return 0;
}

static int cmp_rel(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* How well the written platform, priced by the simulator, reproduces the
 * samples whose layout it holds (P GPUs as P/g nodes of g). */
static void calib_check(const char *text, const char *path,
                        const struct lbs_sim_samples *set)
{
    struct lbs_sim_platform *pl;
    struct lbs_err e;
    double *re = malloc((set->n + 1) * sizeof *re);
    size_t n = 0;
    if (!re || lbs_sim_platform_parse(text, path, &pl, &e)) {
        free(re);
        return;
    }
    for (size_t i = 0; i < set->n; i++) {
        const struct lbs_sim_sample *x = &set->s[i];
        struct lbs_sim_net net;
        long nodes = x->nodes > 1 ? x->nodes : 1;
        if (lbs_sim_net_init(&net, pl, x->ranks, &e) || net.N != nodes)
            continue;
        double t = lbs_sim_coll_cost(&net, x->coll, x->bytes,
                                     LBS_TOPO_RING, 1).t;
        if (isfinite(t))
            re[n++] = fabs(t - x->t) / x->t;
    }
    lbs_sim_platform_free(pl);
    if (n) {
        qsort(re, n, sizeof *re, cmp_rel);
        printf("the written platform (lbscale sim coll) on %zu of %zu "
               "samples: median %.1f%%, worst %.1f%%\n", n, set->n,
               100 * re[n / 2], 100 * re[n - 1]);
    }
    free(re);
}

/* Read every input: samples, and each file's provenance. */
static int calib_read(const struct calib_args *c, char **files, int nfiles,
                      struct lbs_sim_samples *set,
                      struct lbs_sim_calib_file *src, char (*sum)[24])
{
    const struct lbs_sim_samples_in in = {c->coll, c->ranks, c->rpn};
    for (int i = 0; i < nfiles; i++) {
        struct lbs_err e;
        char *text;
        size_t len, rows;
        enum lbs_sim_samples_fmt fmt;
        int rc = lbs_read_file(files[i], LBS_SIM_SAMPLES_MAX_BYTES, &text,
                               &len, &e);
        if (!rc) {
            snprintf(sum[i], sizeof sum[i], "crc32:%08lx",
                     crc32(0L, (const Bytef *)text, (uInt)len));
            rc = lbs_sim_samples_parse(files[i], text, len, &in, set, &fmt,
                                       &rows, &e);
            free(text);
        }
        if (rc) {
            cli_error("sim calibrate", "%s", e.msg);
            return rc;
        }
        src[i] = (struct lbs_sim_calib_file){files[i],
            lbs_sim_samples_fmt_name(fmt), sum[i], len, rows};
    }
    return 0;
}

/* Where the platform goes: --out FILE, else a new run directory (opened
 * only now, once the input is known good). */
static int calib_path(struct calib_args *c, struct lbs_run **run,
                      char *path, size_t pl)
{
    *run = NULL;
    if (c->out) {
        snprintf(path, pl, "%s", c->out);
        return 0;
    }
    int rc = cli_open_run(&c->com, "sim_calibrate", c->argc, c->argv, run);
    if (rc)
        return rc;
    snprintf(path, pl, "%s/platform-%s.json", lbs_run_dir(*run), c->name);
    return 0;
}

struct calib_ctx {
    struct calib_args *c;
    struct lbs_run *run;
};

static int calib_path_of(void *ctx, char *path, size_t len)
{
    struct calib_ctx *x = ctx;
    return calib_path(x->c, &x->run, path, len);
}

/* --nccl-model: the NCCL-model fit over a GPU preset (calibrate_nccl.c) */
static int calib_nccl(struct calib_args *c, struct lbs_sim_samples *set,
                      char **files, const struct lbs_sim_calib_file *src,
                      size_t nfiles)
{
    const struct calib_nccl_in in = {c->nccl_base, c->gpn, c->nodes};
    const struct lbs_sim_calibrated doc = {
        .name = c->name, .files = (const char *const *)files,
        .nfiles = nfiles, .skipped = set->skipped, .src = src};
    struct calib_ctx x = {c, NULL};
    int rc = calib_write_nccl(&in, set, &doc, calib_path_of, &x);
    lbs_run_close(x.run);
    return rc;
}

/* Fit, write the platform and say what it holds. */
static int calib_write(struct calib_args *c, struct lbs_sim_samples *set,
                       char **files, const struct lbs_sim_calib_file *src,
                       size_t nfiles)
{
    struct lbs_err e;
    struct calib_class one, multi;
    char note[256], path[1024];
    long gpn = 0, nodes = 0;
    int rc = calib_split(set, &one, &multi), measured = 0;
    if (!rc)
        rc = calib_layout(c, &one, &multi, &gpn, &nodes, note, sizeof note);
    if (!rc)
        rc = calib_mem(c, &measured);
    const struct lbs_sim_fit *prim = one.n ? &one.fit : &multi.fit;
    const struct lbs_sim_calibrated doc = {
        .fit = prim, .name = c->name, .files = (const char *const *)files,
        .nfiles = nfiles, .skipped = set->skipped, .ranks = gpn,
        .peak_tflops = c->peak, .mem_bw_gbs = c->mem,
        .mem_measured = measured, .inter = multi.n ? &multi.fit : NULL,
        .src = src, .gpus_per_node = gpn, .nodes = nodes,
        .fabric = c->fabric, .nodes_per_leaf = c->leaf,
        .oversub = c->oversub, .lat_spine_us = c->spine_us,
        .cluster_note = note};
    char *text = NULL;
    size_t len;
    struct lbs_run *run = NULL;
    if (!rc && (rc = lbs_sim_platform_calibrated(&doc, c->out ? c->out
                                                 : "platform", &text, &len,
                                                 &e)))
        cli_error("sim calibrate", "%s", e.msg);
    if (!rc)
        rc = calib_path(c, &run, path, sizeof path);
    if (!rc && (rc = lbs_write_atomic(path, text, len, &e)))
        cli_error("sim calibrate", "%s", e.msg);
    if (!rc) {
        if (one.n)
            print_fit("calibrated one node", &one.fit, "per rank");
        if (multi.n)
            print_fit("calibrated across nodes", &multi.fit,
                      "per node (the ring's exit)");
        printf("calibrated %s from %zu samples (%zu skipped; %zu of one "
               "node, %zu of several)\ncluster: %s; max_gpus %ld; fabric "
               "%s\n", c->name, one.n + multi.n, set->skipped, one.n,
               multi.n, note, gpn * nodes, c->fabric);
        calib_check(text, path, set);
        printf("wrote %s\n", path);
    }
    lbs_run_close(run);
    free(text);
    free(one.s);
    free(multi.s);
    return rc;
}

static int sim_calibrate(struct calib_args *c, char **files, int nfiles)
{
    struct lbs_sim_samples set = {0};
    struct lbs_sim_calib_file *src = calloc((size_t)nfiles + 1, sizeof *src);
    char (*sum)[24] = calloc((size_t)nfiles + 1, sizeof *sum);
    int rc = src && sum ? 0 : -ENOMEM;
    if (rc)
        cli_error("sim calibrate", "out of memory");
    if (!rc && !nfiles) {
        cli_error("sim calibrate", "give one or more files of measurements "
                  "(see --help)");
        rc = -EINVAL;
    }
    for (const char *ch = c->name; !rc && *ch; ch++)
        if (!(*ch == '-' || *ch == '_' || (*ch >= '0' && *ch <= '9') ||
              (*ch >= 'a' && *ch <= 'z'))) {
            cli_error("--name", "'%s': use a-z 0-9 - _", c->name);
            rc = -EINVAL;
        }
    if (!rc && c->coll && lbs_coll_from_name(c->coll) < 0) {
        cli_error("--coll", "'%s': not a collective (allreduce, allgather, "
                  "alltoall, bcast, barrier)", c->coll);
        rc = -EINVAL;
    }
    if (!rc)
        rc = calib_read(c, files, nfiles, &set, src, sum);
    /* --bytes: keep one regime (e.g. messages that stay in cache) */
    if (!rc) {
        lbs_sim_samples_keep_bytes(&set, (double)c->blo, (double)c->bhi);
        rc = c->nccl_base ? calib_nccl(c, &set, files, src, (size_t)nfiles)
                          : calib_write(c, &set, files, src, (size_t)nfiles);
    }
    lbs_sim_samples_free(&set);
    free(src);
    free(sum);
    return cli_exit_code(rc);
}

int cmd_calibrate(int argc, char **argv, struct simargs *unused)
{
    struct calib_args c = {.name = "local", .bhi = SIZE_MAX,
                           .fabric = "flat", .com = {.save = 1},
                           .argc = argc, .argv = argv};
    const struct cli_opt opts[] = {
        {.name = "out", .type = CLI_CALL, .fn = cli_out_file, .dst = &c.out,
         .arg = "FILE",
         .help = "where to write the platform (default: a new run\n"
                 "directory, results/<run>/platform-NAME.json)"},
        {.name = "name", .type = CLI_STR, .dst = &c.name, .arg = "NAME",
         .help = "the platform's name (default local; a-z 0-9 - _)"},
        {.name = "bytes", .type = CLI_CALL, .fn = range_opt, .dst = &c,
         .arg = "MIN..MAX",
         .help = "only rows whose bytes lie in the range (one regime:\n"
                 "e.g. messages that stay in cache); either side may be\n"
                 "left empty"},
        {.name = "nodes", .type = CLI_LONG, .dst = &c.nodes, .arg = "N",
         .lo = 1, .hi = 1e8,
         .help = "nodes of the cluster to simulate (default: the most\n"
                 "nodes measured, else 1)"},
        {.name = "gpus-per-node", .type = CLI_LONG, .dst = &c.gpn,
         .arg = "G", .lo = 1, .hi = 65536,
         .help = "GPUs (ranks) per node (default: the ranks per node\n"
                 "measured)"},
        {.name = "fabric", .type = CLI_CALL, .fn = fabric_opt, .dst = &c,
         .arg = "SPEC",
         .help = "flat (default) or fat-tree:nodes_per_leaf=L\n"
                 "[,oversubscription=R][,lat_spine_us=X]"},
        {.name = "ranks", .type = CLI_LONG, .dst = &c.ranks, .arg = "P",
         .lo = 1, .hi = 1e8,
         .help = "rank count of inputs that do not state it (OSU)"},
        {.name = "ranks-per-node", .type = CLI_LONG, .dst = &c.rpn,
         .arg = "R", .lo = 1, .hi = 65536,
         .help = "ranks per node of such inputs (default: all on one)"},
        {.name = "coll", .type = CLI_STR, .dst = &c.coll, .arg = "C",
         .help = "the collective of nccl-tests output that does not name\n"
                 "it (allreduce, allgather, alltoall, bcast)"},
        {.name = "nccl-model", .type = CLI_STR, .dst = &c.nccl_base,
         .arg = "BASE",
         .help = "GPU measurements: fit NCCL's model over the GPU preset\n"
                 "BASE (e.g. dgx-h100): its bandwidth per channel inside a\n"
                 "node and across nodes; latencies stay NCCL's"},
        {.name = "peak-tflops", .type = CLI_DOUBLE, .dst = &c.peak,
         .arg = "X", .lo = 1e-6, .hi = 1e6,
         .help = "compute peak per rank for the platform (default 1,\n"
                 "marked as assumed)"},
        {.name = "mem-bw-gbs", .type = CLI_DOUBLE, .dst = &c.mem, .arg = "X",
         .lo = 1e-6, .hi = 1e6,
         .help = "memory bandwidth (default: STREAM triad measured now)"},
        {0}};
    const struct cli_verb v = {
        .name = "sim calibrate",
        .usage = "usage: lbscale sim calibrate FILE... [--out FILE] "
                 "[--name local]\n"
                 "                             [--nodes N] [--gpus-per-node "
                 "G] [--fabric SPEC]\n"
                 "                             [--ranks P] [--ranks-per-node "
                 "R] [--coll C]\n"
                 "                             [--bytes MIN..MAX] "
                 "[--peak-tflops X]\n"
                 "                             [--mem-bw-gbs X] "
                 "[--nccl-model BASE]",
        .about = calib_about, .opts = opts};
    char **files;
    int nfiles;
    (void)unused;
    int rc = cli_parse(&v, argc - 1, argv + 1, &files, &nfiles);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_calibrate(&c, files, nfiles);
}
