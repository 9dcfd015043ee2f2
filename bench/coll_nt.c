/* coll_nt.c - `lbscale coll` in nccl-tests' layout: the text table (the
 * run's parameters, the devices, per collective a header with its
 * out-of-place and in-place column groups, the footer) and the -J JSON
 * document.  The layout was learnt from NVIDIA/nccl-tests 2.19.6
 * (src/util.cu: writeBenchmarkLinePreamble, writeBenchmarkLineBody,
 * writeResultHeader, writeResultFooter, jsonOutputInit; src/common.cu:
 * the options, BenchTime, the NCCL_TESTS_MIN_BW check), JSON_FILE_VERSION
 * 3; none of its code is used.  lbscale adds, labelled, its own clock
 * (`oop_med`, `ip_med`: the median over the timed calls of the slowest
 * rank) after nccl-tests' thirteen columns, so readers of nccl-tests'
 * logs that take columns by position still read it.
 *
 * Everything here runs on rank 0 only and reads the rows coll_bench.c
 * built (one JSON object per (pattern, size)); nothing is measured here.
 *
 * The -J file is written once, whole, at the end (lbs_write_unique). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_int.h"
#include "results.h"

extern char **environ;

/* -a: how nccl-tests reduces a rank's time over the ranks */
const char *const nt_average_names[4] = {"rank0", "avg", "min", "max"};

/* A number in at most `width` characters, as nccl-tests fits its
 * columns: 2 decimals, else 1, else none, else exponent form. */
static void fit(double v, int width, char *buf, size_t len)
{
    static const char *const f[] = {"%*.2f", "%*.1f", "%*.0f"};
    for (size_t i = 0; i < 3; i++)
        if (snprintf(buf, len, f[i], width, v) <= width)
            return;
    snprintf(buf, len, width >= 7 ? "%*.1e" : "%*.0e", width, v);
}

static void now_str(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

void nt_preamble(const struct coll_run *cr)
{
    int fac = cr->stepb == 0;
    printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) "
           "warmup iters: %ld iters: %ld agg iters: %ld validation: %d "
           "graph: 0\n#\n# Using devices\n", cr->minb, cr->maxb,
           fac ? cr->factor : cr->stepb, fac ? "factor" : "bytes",
           cr->warmup, cr->iters, cr->agg, cr->check);
    size_t i;
    json_t *d;
    json_array_foreach(cr->devices, i, d)
        printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n",
               (int)json_integer_value(json_object_get(d, "rank")), 0,
               (int)json_integer_value(json_object_get(d, "pid")),
               json_string_value(json_object_get(d, "hostname")),
               (int)json_integer_value(json_object_get(d, "device")),
               cr->comm->ops->name,
               json_string_value(json_object_get(d, "device_info")));
    printf("#\n# time: nccl-tests' clock: each rank's average over %ld x %ld "
           "back-to-back calls, %s over ranks (-a %ld)\n# oop_med, ip_med: "
           "lbscale's clock: the median over %ld barrier-started calls of "
           "the slowest rank\n# out of place: allreduce %s; bcast: the "
           "root's copy into the receive buffer, then the in-place call\n",
           cr->iters, cr->agg, nt_average_names[cr->average], cr->average,
           cr->iters, lbs_allreduce_to_native(cr->comm)
                          ? "into a second buffer (one call)"
                          : "emulated: a copy, then the in-place call");
}

/* The header of one collective: nccl-tests' three lines (groups, names,
 * units) after the line naming it. */
void nt_section(const struct coll_ops *op)
{
    printf("#\n# Collective test starting: %s\n#\n", op->name);
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place       "
           "                in-place           lbscale\n", "", "", "", "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
           "%6s  %7s  %7s\n", "size", "count", "type", "redop", "root",
           "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong", "oop_med", "ip_med");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
           "%6s  %7s  %7s\n", "(B)", "(elements)", "", "", "", "(us)",
           "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
           "(us)");
    fflush(stdout);
}

static double num(const json_t *row, const char *pre, const char *key)
{
    char k[32];
    snprintf(k, sizeof k, "%s_%s", pre, key);
    return json_number_value(json_object_get(row, k));
}

/* One form's four columns (N/A where the pattern has no such form). */
static void form_cols(const json_t *row, const char *pre)
{
    char k[32], t[16], a[16], b[16], w[16] = "N/A";
    snprintf(k, sizeof k, "%s_time_us", pre);
    if (!json_object_get(row, k)) {
        printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
        return;
    }
    fit(num(row, pre, "time_us"), 7, t, sizeof t);
    fit(num(row, pre, "algbw_gbps"), 6, a, sizeof a);
    fit(num(row, pre, "busbw_gbps"), 6, b, sizeof b);
    snprintf(k, sizeof k, "%s_wrong", pre);
    const json_t *wv = json_object_get(row, k);
    if (json_is_integer(wv))
        snprintf(w, sizeof w, "%g", (double)json_integer_value(wv));
    printf("  %7s  %6s  %6s  %6s", t, a, b, w);
}

static void med_col(const json_t *row, const char *pre)
{
    char k[32], m[16] = "N/A";
    snprintf(k, sizeof k, "%s_median_us", pre);
    if (json_object_get(row, k))
        fit(num(row, pre, "median_us"), 7, m, sizeof m);
    printf("  %7s", m);
}

void nt_row(const struct coll_run *cr, const json_t *row)
{
    (void)cr;
    printf("%12lld  %12lld  %8s  %6s  %6lld",
           (long long)json_integer_value(json_object_get(row, "size")),
           (long long)json_integer_value(json_object_get(row, "nt_count")),
           json_string_value(json_object_get(row, "type")),
           json_string_value(json_object_get(row, "redop")),
           (long long)json_integer_value(json_object_get(row, "nt_root")));
    form_cols(row, "oop");
    form_cols(row, "ip");
    med_col(row, "oop");
    med_col(row, "ip");
    printf("\n");
}

void nt_footer(const struct coll_run *cr, double avg, int failed)
{
    printf("# %-20s : %ld %s\n", "Out of bounds values", cr->total_wrong,
           !cr->check ? "(not checked)" : cr->total_wrong ? "FAILED" : "OK");
    printf("# %-20s : %g %s\n", "Avg bus bandwidth", avg,
           cr->min_bw <= 0 ? "" : failed ? "FAILED" : "OK");
    printf("#   (nccl-tests' busbw, mean over %ld out-of-place and in-place "
           "results; compressed patterns left out)\n#\n"
           "# Collective test concluded: lbscale coll\n#\n", cr->busbw_n);
}

/* ---- -J FILE ------------------------------------------------------------ */

/* Before the run: the start time, and a FILE that output may go to (a
 * device, FIFO, directory or link is refused now, not after the run). */
int nt_json_check(struct coll_run *cr)
{
    now_str(cr->start, sizeof cr->start);
    return lbs_out_file_check(cr->json_path, &cr->e);
}

/* -J's names, as nccl-tests: FILE, then FILE.0, FILE.1, ... (the base
 * name, in FILE's directory). */
static int json_candidate(void *ctx, int dfd, int i, char *buf, size_t len)
{
    (void)dfd;
    int w = i == 1 ? snprintf(buf, len, "%s", (const char *)ctx)
                   : snprintf(buf, len, "%s.%d", (const char *)ctx, i - 2);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* The file's environment list: the variables that steer the run (NCCL,
 * UCX, Open MPI's MCA and lbscale's), not the whole environment that
 * nccl-tests copies - a results file should not carry tokens. */
static json_t *env_list(void)
{
    static const char *const keep[] = {"NCCL_", "UCX_", "OMPI_MCA_",
                                       "LBSCALE_", "OMP_"};
    json_t *a = json_array();
    for (char **e = environ; a && e && *e; e++)
        for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
            if (!strncmp(*e, keep[i], strlen(keep[i]))) {
                json_array_append_new(a, json_string(*e));
                break;
            }
    return a;
}

static json_t *config(const struct coll_run *cr)
{
    json_t *c = json_pack(
        "{s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:i,s:i,s:b,s:b,s:i,s:b,s:O}",
        "nthreads", 1, "ngpus", 1, "minimum_bytes", (json_int_t)cr->minb,
        "maximum_bytes", (json_int_t)cr->maxb, "warmup_iters",
        (json_int_t)cr->warmup, "iterations", (json_int_t)cr->iters,
        "aggregated_iterations", (json_int_t)cr->agg, "validation",
        cr->check, "graph", 0, "blocking_collectives", 0, "per_iter_timing",
        0, "per_iter_skip", 0, "parallel_init", 0, "devices", cr->devices);
    if (c)
        json_object_set_new(c, cr->stepb ? "step_bytes" : "step_factor",
                            json_integer((json_int_t)(cr->stepb ? cr->stepb
                                                                : cr->factor)));
    return c;
}

/* One form of a result: nccl-tests' time, alg_bw, bus_bw, nwrong (null
 * when not checked); null when the pattern has no such form. */
static json_t *form_obj(const json_t *row, const char *pre)
{
    char k[32];
    snprintf(k, sizeof k, "%s_time_us", pre);
    if (!json_object_get(row, k))
        return json_null();
    snprintf(k, sizeof k, "%s_wrong", pre);
    const json_t *w = json_object_get(row, k);
    return json_pack("{s:f,s:f,s:f,s:o}", "time", num(row, pre, "time_us"),
                     "alg_bw", num(row, pre, "algbw_gbps"), "bus_bw",
                     num(row, pre, "busbw_gbps"), "nwrong",
                     json_is_integer(w)
                         ? json_real((double)json_integer_value(w))
                         : json_null());
}

static json_t *result(const json_t *row)
{
    char root[16];
    snprintf(root, sizeof root, "%6lld",
             (long long)json_integer_value(json_object_get(row, "nt_root")));
    json_t *med = json_object();
    for (int i = 0; i < 2 && med; i++) {
        const char *pre = i ? "ip" : "oop";
        char k[32];
        snprintf(k, sizeof k, "%s_median_us", pre);
        json_t *v = json_object_get(row, k);
        json_object_set_new(med, i ? "in_place_median_us"
                                   : "out_of_place_median_us",
                            v ? json_real(json_number_value(v)) : json_null());
    }
    return json_pack(
        "{s:O,s:O,s:O,s:O,s:s,s:o,s:o,s:O,s:O,s:O,s:o}", "size",
        json_object_get(row, "size"), "count",
        json_object_get(row, "nt_count"), "type", json_object_get(row, "type"),
        "redop", json_object_get(row, "redop"), "root", root, "out_of_place",
        form_obj(row, "oop"), "in_place", form_obj(row, "ip"),
        "actual_iterations", json_object_get(row, "iters"),
        "experiment_name", json_object_get(row, "coll"), "coll",
        json_object_get(row, "coll"), "lbscale", med);
}

static json_t *document(const struct coll_run *cr, double avg, int failed)
{
    char end[64];
    now_str(end, sizeof end);
    json_t *args = json_array(), *res = json_array();
    for (int i = 0; args && i < cr->argc; i++)
        json_array_append_new(args, json_string(cr->argv[i]));
    size_t i;
    json_t *row;
    json_array_foreach(cr->rows, i, row)
        json_array_append_new(res, result(row));
    json_t *bw_ok = cr->min_bw > 0 ? json_boolean(!failed)
                                   : json_string("unchecked");
    return json_pack(
        "{s:i,s:s,s:o,s:o,s:i,s:o,s:o,s:{s:I,s:b},s:{s:f,s:o},s:[],s:s}",
        "version", 3, "start_time", cr->start, "args", args, "env",
        env_list(), "nccl_version", 0, "config", config(cr), "results", res,
        "out_of_bounds", "count", (json_int_t)cr->total_wrong, "okay",
        cr->total_wrong == 0, "average_bus_bandwidth", "bandwidth", avg,
        "okay", bw_ok, "errors", "end_time", end);
}

/* The document, written whole under the first free name (never over an
 * existing file, and nothing at all when the run fails before it). */
int nt_json_write(struct coll_run *cr, double avg, int failed)
{
    json_t *doc = document(cr, avg, failed);
    char *text = doc ? json_dumps(doc, JSON_INDENT(1)) : NULL;
    json_decref(doc);
    if (!text)
        return lbs_err_set(&cr->e, -ENOMEM, "out of memory");
    const char *path = cr->json_path, *base;
    char dir[PATH_MAX], chosen[PATH_MAX];
    int rc = lbs_path_split(path, dir, sizeof dir, &base);
    if (rc) {
        free(text);
        return lbs_err_set(&cr->e, rc, "-J %s: %s", path, strerror(-rc));
    }
    size_t n = strlen(text);
    text[n] = '\n';    /* json_dumps' NUL: the file ends with a newline */
    rc = lbs_write_unique(dir, json_candidate, (void *)base, text, n + 1,
                          chosen, sizeof chosen, &cr->e);
    free(text);
    if (!rc && !cr->bo.json)
        printf("# Writing JSON output to %.*s%s\n", (int)(base - path), path,
               chosen);
    return rc;
}
