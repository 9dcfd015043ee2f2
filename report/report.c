/* report.c - the report of a results run (`lbscale report RUN` in
 * bench/results_verbs.c, and after a suite): RUN/report.html, one
 * self-contained page (figures embedded as base64 PNG, inline CSS, no external references)
 * with the machine from meta.json, a summary table per section, the
 * figures under each section and the exact command lines; and the same
 * summary tables as plain text for the end of a suite.
 *
 * Every section is built from the run's files alone (JSONL per verb,
 * meta.json, suite.jsonl, the PNGs in plots/) as a table object
 *   {"id", "title", "cols": [...], "rows": [[str...]...], "notes": [...],
 *    "figs": [png prefixes]}
 * and rendered twice: HTML and text.  A section whose file is absent is
 * left out. */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "git_rev.h"
#include "lbs_config.h"
#include "lbscale/file.h"
#include "plot.h"
#include "report.h"
#include "results.h"
#include "stats.h"
#include "strbuf.h"

/* ------------------------------------------------------------------ */
/* values                                                               */

static const char *str(json_t *r, const char *k)
{
    const char *s = json_string_value(lbs_row_field(r, k));
    return s ? s : "";
}

static const char *nz(const char *s) { return s ? s : ""; }

static double num(json_t *r, const char *k) { return lbs_row_num(lbs_row_field(r, k)); }

/* First present numeric field of a list ("rel_err", "rel_error"). */
static double num2(json_t *r, const char *a, const char *b)
{
    double v = num(r, a);
    return isnan(v) && b ? num(r, b) : v;
}

/* A numeric cell: its text and its value (the report sorts on the value
 * and right-aligns the column); "-" for a missing value. */
static json_t *numcell(const char *text, double v)
{
    if (isnan(v))
        return json_string("-");
    return json_pack("{s:s,s:f}", "t", text, "v", v);
}

/* The text of a cell, numeric or not. */
static const char *ctext(json_t *c)
{
    const char *s = json_is_object(c)
                        ? json_string_value(json_object_get(c, "t"))
                        : json_string_value(c);
    return s ? s : "";
}

static json_t *cell(const char *fmt, double v)
{
    char buf[64];
    if (isnan(v))
        return json_string("-");
    snprintf(buf, sizeof buf, fmt, v);
    return numcell(buf, v);
}

static json_t *cells(const char *s) { return json_string(s && *s ? s : "-"); }

static json_t *bytes_cell(double v)
{
    char buf[64];
    if (isnan(v))
        return json_string("-");
    const char *u[] = {"B", "KB", "MB", "GB", "TB"};
    double x = v;
    int i = 0;
    while (fabs(x) >= 1000 && i < 4) {
        x /= 1000;
        i++;
    }
    snprintf(buf, sizeof buf, i ? "%.3g %s" : "%.0f %s", x, u[i]);
    return numcell(buf, v);
}

/* 100000000 -> "100M", 33554432 -> "33.6M" (SI, like the CLI's input) */
static void count_text(double v, char *buf, size_t len)
{
    if (v >= 1e9)
        snprintf(buf, len, "%.3gG", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, len, "%.3gM", v / 1e6);
    else if (v >= 1e4)
        snprintf(buf, len, "%.3gK", v / 1e3);
    else
        snprintf(buf, len, "%.0f", v);
}

static json_t *count_cell(double v)
{
    char buf[64];
    if (isnan(v))
        return json_string("-");
    count_text(v, buf, sizeof buf);
    return numcell(buf, v);
}

/* message sizes in binary units, as the busbw figure labels them */
static void msg_text(double v, char *buf, size_t len)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB"};
    int i = 0;
    while (v >= 1024 && i < 3) {
        v /= 1024;
        i++;
    }
    snprintf(buf, len, "%.4g %s", v, u[i]);
}

static json_t *msg_cell(double v)
{
    char buf[64];
    if (isnan(v))
        return json_string("-");
    msg_text(v, buf, sizeof buf);
    return numcell(buf, v);
}

static json_t *load(const char *run, const char *name)
{
    struct lbs_err e;
    json_t *rows = lbs_run_rows(run, name, &e);
    if (!rows)
        fprintf(stderr, "lbscale: report: %s (section left out)\n", e.msg);
    return rows;
}

static json_t *table(const char *id, const char *title, json_t *cols)
{
    return json_pack("{s:s,s:s,s:o,s:[],s:[],s:[]}", "id", id, "title", title,
                     "cols", cols, "rows", "notes", "figs");
}

static void add_row(json_t *t, json_t *row)
{
    json_array_append_new(json_object_get(t, "rows"), row);
}

static void add_note(json_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_note(json_t *t, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(json_object_get(t, "notes"), json_string(buf));
}

static void add_fig(json_t *t, const char *prefix)
{
    json_array_append_new(json_object_get(t, "figs"), json_string(prefix));
}

/* ------------------------------------------------------------------ */
/* sections                                                             */

static json_t *sec_suite(const char *run)
{
    json_t *rows = load(run, "suite");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("suite", "Suite entries",
                      json_pack("[s,s,s,s,s,s,s]", "#", "entry", "verb",
                                "ranks", "status", "seconds", "note"));
    /* the latest row per entry and repetition */
    json_t *last = json_object(), *order = json_array();
    size_t i;
    json_t *r;
    int runs = 0;
    json_array_foreach(rows, i, r) {
        const char *ev = str(r, "event");
        if (!strcmp(ev, "start"))
            runs++;
        if (strcmp(ev, "entry"))
            continue;
        char key[256];
        snprintf(key, sizeof key, "%s#%lld", str(r, "name"),
                 (long long)json_integer_value(json_object_get(r, "rep")));
        if (!json_object_get(last, key))
            json_array_append_new(order, json_string(key));
        json_object_set(last, key, r);
    }
    int ok = 0, failed = 0, skipped = 0;
    json_array_foreach(order, i, r) {
        json_t *e = json_object_get(last, json_string_value(r));
        const char *st = str(e, "status");
        ok += !strcmp(st, "ok");
        skipped += !strcmp(st, "skipped");
        failed += strcmp(st, "ok") && strcmp(st, "skipped");
        char nm[160], note[400] = "";
        long long rep = json_integer_value(json_object_get(e, "rep"));
        if (json_integer_value(json_object_get(e, "repeat")) > 1)
            snprintf(nm, sizeof nm, "%s #%lld", str(e, "name"), rep);
        else
            snprintf(nm, sizeof nm, "%s", str(e, "name"));
        snprintf(note, sizeof note, "%s", str(e, "note"));
        if (strcmp(st, "ok") && strcmp(st, "skipped")) {
            const char *tl = str(e, "stderr_tail"), *nl = strrchr(tl, '\n');
            if (*tl)
                snprintf(note + strlen(note), sizeof note - strlen(note),
                         "%sstderr: %s", *note ? "; " : "", nl ? nl + 1 : tl);
        }
        add_row(t, json_pack("[o,s,s,o,s,o,o]",
                             cell("%.0f", (double)json_integer_value(
                                 json_object_get(e, "index")) + 1),
                             nm, str(e, "verb"), cell("%.0f", num(e, "ranks")),
                             st, cell("%.1f", num(e, "seconds")),
                             cells(note)));
    }
    add_note(t, "%d ok, %d failed, %d skipped%s", ok, failed, skipped,
             runs > 1 ? " (the run was resumed; the latest attempt of each "
                        "entry is shown)" : "");
    json_decref(last);
    json_decref(order);
    json_decref(rows);
    return t;
}

static json_t *sec_stream(const char *run)
{
    json_t *rows = load(run, "stream");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("stream", "Memory bandwidth (STREAM)",
                      json_pack("[s,s,s,s,s,s]", "doubles / array",
                                "threads", "copy GB/s", "triad GB/s",
                                "in-place GB/s", "#wrong"));
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
        add_row(t, json_pack("[o,o,o,o,o,o]", count_cell(num(r, "elements")),
                             cell("%.0f", num(r, "threads")),
                             cell("%.2f", num(r, "copy_gbps")),
                             cell("%.2f", num(r, "triad_gbps")),
                             cell("%.2f", num(r, "rmw_gbps")),
                             cell("%.0f", num(r, "wrong"))));
    add_note(t, "GB/s = 1e9 bytes/s, best of the timed iterations (the "
             "STREAM convention); in-place is a = a + s*c, 24 bytes per "
             "element, all moved (the triad's store also reads its line: "
             "32 moved).  Optimizer steps, which update in place, are "
             "compared with in-place; compressors with triad.");
    json_decref(rows);
    return t;
}

static json_t *sec_optim(const char *run)
{
    json_t *rows = load(run, "optim");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("optim", "Optimizer step vs STREAM",
                      json_pack("[s,s,s,s,s,s,s,s]", "optimizer", "elements",
                                "threads", "step ms (median)", "GB/s",
                                "in-place GB/s", "of in-place", "#wrong"));
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
        add_row(t, json_pack("[s,o,o,o,o,o,o,o]", str(r, "optim"),
                             count_cell(num(r, "elements")),
                             cell("%.0f", num(r, "threads")),
                             cell("%.2f", num(r, "step_ms_median")),
                             cell("%.2f", num(r, "gbps")),
                             cell("%.2f", num(r, "stream_gbps")),
                             cell("%.2f", num(r, "roofline_frac")),
                             cell("%.0f", num(r, "wrong"))));
    add_note(t, "GB/s = elements x bytes/element of the optimizer's traffic "
             "model / median step time; in-place = the GB/s of a = a + s*c "
             "measured in the same run (the optimizers' memory limit).");
    add_fig(t, "roofline");
    json_decref(rows);
    return t;
}

static json_t *sec_compress(const char *run)
{
    json_t *rows = load(run, "compress");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("compress", "Gradient compressors",
                      json_pack("[s,s,s,s,s,s,s,s,s]", "compressor",
                                "collective", "elements", "GB/s", "of STREAM",
                                "wire bytes", "x smaller", "rel. error",
                                "#wrong"));
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        double g = num(r, "gbps"), sg = num(r, "stream_gbps");
        double frac = num(r, "stream_frac");
        if (isnan(frac) && sg > 0)
            frac = g / sg;
        double ratio = num2(r, "compression_ratio", "ratio");
        add_row(t, json_pack("[s,s,o,o,o,o,o,o,o]", str(r, "compressor"),
                             str(r, "collective"),
                             count_cell(num(r, "elements")),
                             cell("%.2f", g), cell("%.2f", frac),
                             bytes_cell(num(r, "wire_bytes")),
                             cell("%.1f", ratio),
                             cell("%.3g", num2(r, "rel_err", "rel_error")),
                             cell("%.0f", num(r, "wrong"))));
    }
    add_note(t, "GB/s = 4 bytes x elements / median compress time; rel. "
             "error = ||x - D(C(x))|| / ||x||.");
    add_fig(t, "compress");
    add_fig(t, "wire");
    json_decref(rows);
    return t;
}

static json_t *sec_coll(const char *run)
{
    json_t *rows = load(run, "coll");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("coll", "Collectives",
                      json_pack("[s,s,s,s,s,s,s]", "collective", "ranks",
                                "sizes", "largest size", "time us",
                                "peak busbw GB/s", "#wrong"));
    /* one line per (backend, collective, ranks): the peak and largest */
    json_t *groups = json_object(), *order = json_array();
    size_t i, self = 0, dense_eq = 0;
    json_t *r;
    json_array_foreach(rows, i, r) {
        if (num(r, "ranks") <= 1) {   /* a copy in memory, no collective */
            self++;
            continue;
        }
        char key[160];
        snprintf(key, sizeof key, "%s|%s|%.0f", str(r, "backend"),
                 str(r, "coll"), num(r, "ranks"));
        json_t *g = json_object_get(groups, key);
        if (!g) {
            g = json_array();
            json_object_set_new(groups, key, g);
            json_array_append_new(order, json_string(key));
        }
        json_array_append(g, r);
    }
    json_array_foreach(order, i, r) {
        json_t *g = json_object_get(groups, json_string_value(r)), *x,
               *big = NULL;
        size_t j;
        double peak = NAN, wrong = 0, bmax = -1;
        json_array_foreach(g, j, x) {
            double b = num2(x, "busbw_gbps", "busbw");
            double sz = num2(x, "size", "bytes");
            if (!isnan(b) && (isnan(peak) || b > peak))
                peak = b;
            if (sz > bmax) {
                bmax = sz;
                big = x;
            }
            if (!isnan(num(x, "wrong")))
                wrong += num(x, "wrong");
        }
        char name[128];
        snprintf(name, sizeof name, "%s%s%s%s", str(big, "coll"),
                 *str(big, "backend") ? " / " : "", str(big, "backend"),
                 json_object_get(big, "density") ? " (dense-equivalent)"
                                                 : "");
        dense_eq += json_object_get(big, "density") != NULL;
        add_row(t, json_pack("[s,o,o,o,o,o,o]", name,
                             cell("%.0f", num(big, "ranks")),
                             cell("%.0f", (double)json_array_size(g)),
                             msg_cell(bmax), cell("%.1f",
                                                    num(big, "time_us")),
                             cell("%.2f", peak), cell("%.0f", wrong)));
    }
    add_note(t, "busbw follows nccl-tests: algbw x 2(n-1)/n for allreduce, "
             "x (n-1)/n for allgather, reduce_scatter and alltoall; time "
             "and size of the largest message (nccl-tests size: the whole "
             "buffer).");
    if (dense_eq)
        add_note(t, "(dense-equivalent): a compressed pattern (onebit, "
                 "masked_allreduce, topk_allgather); its busbw is the bus "
                 "bandwidth a dense fp32 allreduce of the same gradient would "
                 "need to finish in the same time, not bytes on the bus.");
    if (self)
        add_note(t, "%zu row%s measured on 1 rank left out: with one rank a "
                 "collective is a copy in memory, and its \"bus bandwidth\" "
                 "says nothing about communication (they stay in coll.jsonl).",
                 self, self == 1 ? "" : "s");
    add_fig(t, "busbw");
    json_decref(groups);
    json_decref(order);
    json_decref(rows);
    return t;
}

/* A training run's optimizer as the figures name it: spec[+compressor]. */
static void train_name(json_t *r, char *out, size_t len)
{
    snprintf(out, len, "%s%s%s", *str(r, "spec") ? str(r, "spec")
                                                 : str(r, "optim"),
             *str(r, "compress") ? "+" : "", str(r, "compress"));
}

static json_t *sec_train(const char *run)
{
    json_t *rows = load(run, "train");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("train", "Training (convergence)",
                      json_pack("[s,s,s,s,s,s,s,s,s,s]", "optimizer", "dataset",
                                "ranks", "global batch", "steps",
                                "test accuracy", "best", "wall s",
                                "sent / rank", "trace file"));
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *ev = str(r, "event");
        if (*ev && strcmp(ev, "final"))
            continue;
        double acc = num(r, "test_accuracy"), best = num(r, "best_test_accuracy");
        if (acc <= 1)
            acc *= 100;
        if (best <= 1)
            best *= 100;
        double sent = num(r, "sent_bytes_per_rank");
        if (isnan(sent))
            sent = num(r, "comm_bytes_per_rank");
        char name[256];
        train_name(r, name, sizeof name);
        const char *tf = strrchr(str(r, "trace"), '/');
        tf = tf ? tf + 1 : str(r, "trace");
        add_row(t, json_pack("[s,s,o,o,o,o,o,o,o,o]", name,
                             str(r, "dataset"), cell("%.0f", num(r, "ranks")),
                             cell("%.0f", num(r, "global_batch")),
                             cell("%.0f", num(r, "steps")),
                             cell("%.2f%%", acc), cell("%.2f%%", best),
                             cell("%.1f", num(r, "wall_s")), bytes_cell(sent),
                             cells(tf)));
    }
    add_fig(t, "convergence");
    add_fig(t, "study");
    json_decref(rows);
    return t;
}

static json_t *sec_sim(const char *run)
{
    json_t *rows = load(run, "sim");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("sim", "Simulator: scaling",
                      json_pack("[s,s,s,s,s,s,s,s,s]", "model", "platform",
                                "optimizer", "GPUs", "iteration ms",
                                "compute ms", "exposed comm ms",
                                "bytes / GPU", "scaling eff."));
    /* the largest scale of each (model, platform, optimizer) */
    json_t *best = json_object(), *order = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        if (isnan(num(r, "gpus")))
            continue;
        char key[256];
        snprintf(key, sizeof key, "%s|%s|%s", str(r, "model"),
                 str(r, "platform"), str(r, "optim"));
        json_t *b = json_object_get(best, key);
        if (!b)
            json_array_append_new(order, json_string(key));
        if (!b || num(r, "gpus") >= num(b, "gpus"))
            json_object_set(best, key, r);
    }
    json_array_foreach(order, i, r) {
        json_t *b = json_object_get(best, json_string_value(r));
        double eff = num(b, "scaling_efficiency");
        add_row(t, json_pack("[s,s,s,o,o,o,o,o,o]", str(b, "model"),
                             str(b, "platform"), str(b, "optim"),
                             cell("%.0f", num(b, "gpus")),
                             cell("%.2f", num(b, "iter_ms")),
                             cell("%.2f", num(b, "compute_ms")),
                             cell("%.2f", num(b, "exposed_comm_ms")),
                             bytes_cell(num(b, "bytes_per_gpu")),
                             cell(eff > 1.5 ? "%.1f%%" : "%.3f", eff)));
    }
    add_note(t, "At the largest simulated scale of each optimizer; scaling "
             "efficiency = T(one node) / T(P) at the same per-GPU batch.");
    add_fig(t, "scaling");
    add_fig(t, "compression_tradeoff");
    add_fig(t, "itersplit");
    json_decref(best);
    json_decref(order);
    json_decref(rows);
    return t;
}

static json_t *load_meta(const char *run)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", run);
    return json_load_file(path, 0, NULL);
}

static json_t *sec_machine(json_t *m)
{
    if (!m)
        return NULL;
    json_t *t = table("machine", "Machine and build",
                      json_pack("[s,s]", "", ""));
    char buf[512];
#define KV(k, v) add_row(t, json_pack("[s,s]", k, v))
    KV("CPU", str(m, "cpu_model"));
    snprintf(buf, sizeof buf, "%.0f online CPUs; %.0f packages, %.0f NUMA "
             "nodes, %.0f cores, %.0f hardware threads",
             num(m, "online_cpus"), num(m, "topology.packages"),
             num(m, "topology.numa_nodes"), num(m, "topology.cores"),
             num(m, "topology.pus"));
    KV("cores", buf);
    snprintf(buf, sizeof buf, "%.1f GiB; L2 %.0f KiB x %.0f, L3 %.1f MiB x "
             "%.0f", num(m, "topology.memory_bytes") / 1073741824.0,
             num(m, "topology.l2_bytes") / 1024, num(m, "topology.l2_count"),
             num(m, "topology.l3_bytes") / 1048576, num(m, "topology.l3_count"));
    KV("memory", buf);
    KV("GPU", json_is_string(json_object_get(m, "gpu")) ? str(m, "gpu")
                                                        : "none");
    KV("OS", str(m, "os"));
    KV("host", str(m, "hostname"));
    KV("created (UTC)", str(m, "created_utc"));
    KV("git revision", str(m, "git_rev"));
    json_t *v = json_object_get(m, "versions");
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        char val[256];
        if (json_is_string(x))
            snprintf(val, sizeof val, "%s", json_string_value(x));
        else if (json_is_boolean(x))
            snprintf(val, sizeof val, "%s", json_is_true(x) ? "yes" : "no");
        else
            snprintf(val, sizeof val, "-");
        snprintf(buf, sizeof buf, "version: %s", k);
        KV(buf, val);
    }
#undef KV
    return t;
}

/* The network sweep (sim_netsweep.jsonl, `lbscale sim netsweep`): each
 * optimizer's simulated step against the node bandwidth - the answer to
 * which optimizer pays on which network. */
static json_t *sec_netsweep(const char *run)
{
    json_t *rows = load(run, "sim_netsweep");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("netsweep", "Simulator: which network each optimizer "
                      "needs", json_pack("[s,s,s,s,s,s,s,s]", "model",
                                         "platform", "GPUs", "optimizer",
                                         "node Gb/s", "iteration ms",
                                         "exposed comm ms", "scaling eff."));
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
        add_row(t, json_pack("[s,s,o,s,o,o,o,o]", str(r, "model"),
                             str(r, "platform"), cell("%.0f", num(r, "gpus")),
                             str(r, "optim"),
                             cell("%.0f", num(r, "node_gbps")),
                             cell("%.2f", num(r, "iter_ms")),
                             cell("%.2f", num(r, "exposed_comm_ms")),
                             cell("%.3f", num(r, "scaling_efficiency"))));
    add_note(t, "Scaling efficiency = T(one node) / T(P) at the same per-GPU "
             "batch, with the inter-node bandwidth per node swept.");
    add_fig(t, "netsweep");
    json_decref(rows);
    return t;
}

/* The simulator's published anchors (sim_anchors.jsonl, `lbscale sim
 * anchors`): beside the scaling answer, how far to trust it. */
static json_t *sec_anchors(const char *run)
{
    json_t *rows = load(run, "sim_anchors");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("anchors", "Simulator: published anchors",
                      json_pack("[s,s,s,s,s,s,s]", "anchor", "published",
                                "lbscale", "ratio", "band", "in band",
                                "source"));
    size_t i, in = 0;
    json_t *r;
    json_array_foreach(rows, i, r) {
        in += json_is_true(json_object_get(r, "in_band"));
        add_row(t, json_pack("[s,o,o,o,s,s,s]", str(r, "anchor"),
                             cell("%.4g", num(r, "published")),
                             cell("%.4g", num(r, "lbscale")),
                             cell("%.3f", num(r, "ratio")), str(r, "band"),
                             json_is_true(json_object_get(r, "in_band"))
                                 ? "yes" : "NO", str(r, "source")));
    }
    add_note(t, "%zu of %zu published numbers within their band: the "
             "simulator's scaling answer above is only as good as these.",
             in, json_array_size(rows));
    json_decref(rows);
    return t;
}

/* Every section that has data, in the order a reader decides: the answer
 * (the simulated scaling, which optimizer and compressor pays on which
 * network, the anchors it rests on), then the evidence (convergence,
 * kernels, collectives), then the machine and the suite's entries. */
static json_t *sections(const char *run, json_t *meta)
{
    json_t *all = json_array();
    json_t *(*fn[])(const char *) = {sec_netsweep, sec_sim, sec_anchors,
                                     sec_train,
                                     sec_stream, sec_optim, sec_compress,
                                     sec_coll};
    for (size_t i = 0; i < sizeof fn / sizeof fn[0]; i++) {
        json_t *t = fn[i](run);
        if (t)
            json_array_append_new(all, t);
    }
    json_t *m = sec_machine(meta);
    if (m)
        json_array_append_new(all, m);
    json_t *t = sec_suite(run);
    if (t)
        json_array_append_new(all, t);
    return all;
}

/* ------------------------------------------------------------------ */
/* findings: the numbers a reader came for, each linked to its table and
 * figure                                                               */

/* "#fig-NAME" of the first figure whose file name starts with prefix and
 * then '.' or '_'; "" when there is none. */
static void fig_href(char **pngs, const char *prefix, char *out, size_t len)
{
    size_t l = strlen(prefix);
    out[0] = '\0';
    for (size_t k = 0; pngs && pngs[k]; k++)
        if (!strncmp(pngs[k], prefix, l) &&
            (pngs[k][l] == '.' || pngs[k][l] == '_')) {
            snprintf(out, len, "#fig-%.*s", (int)(strlen(pngs[k]) - 4),
                     pngs[k]);
            return;
        }
}

/* One finding: {"id", "label", "text", "value" (the headline number or
 * null), "links": [{"href", "text"}]}: the table #id and, when drawn, the
 * first figure of kind fig. */
static void finding(json_t *all, char **pngs, const char *id,
                    const char *fig, const char *label, double value,
                    const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void finding(json_t *all, char **pngs, const char *id,
                    const char *fig, const char *label, double value,
                    const char *fmt, ...)
{
    char text[1024], href[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_t *links = json_array();
    snprintf(href, sizeof href, "#%s", id);
    json_array_append_new(links, json_pack("{s:s,s:s}", "href", href, "text",
                                           "table"));
    if (fig) {
        fig_href(pngs, fig, href, sizeof href);
        if (*href)
            json_array_append_new(links, json_pack("{s:s,s:s}", "href", href,
                                                   "text", "figure"));
    }
    json_array_append_new(all, json_pack("{s:s,s:s,s:s,s:o,s:o}", "id", id,
        "label", label, "text", text, "value",
        isnan(value) ? json_null() : json_real(value), "links", links));
}

/* Rows of RUN/name.jsonl without a message (the section says it). */
static json_t *rows_quiet(const char *run, const char *name)
{
    struct lbs_err e;
    json_t *r = lbs_run_rows(run, name, &e);
    return r ? r : json_array();
}

/* Append to a text buffer. */
static void cat(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cat(char *out, size_t len, const char *fmt, ...)
{
    size_t l = strlen(out);
    if (l + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + l, len - l, fmt, ap);
    va_end(ap);
}

static int cmp_eff_desc(const void *a, const void *b)
{
    double x = num(*(json_t *const *)a, "scaling_efficiency");
    double y = num(*(json_t *const *)b, "scaling_efficiency");
    return (x < y) - (x > y);
}

/* Scaling efficiencies are fractions (1.0); show them as percent. */
static double pct(double e) { return e <= 1.5 ? 100 * e : e; }

static void find_stream_optim(json_t *all, const char *run, char **pngs)
{
    json_t *rows = rows_quiet(run, "stream"), *r, *best = NULL;
    size_t i;
    json_array_foreach(rows, i, r)
        if (!best || num(r, "triad_gbps") > num(best, "triad_gbps"))
            best = r;
    if (best && !isnan(num(best, "triad_gbps")))
        finding(all, pngs, "stream", NULL, "Memory bandwidth",
                num(best, "triad_gbps"),
                "STREAM triad %.1f GB/s with %.0f threads (best of the timed "
                "iterations); the bandwidths below are fractions of it.",
                num(best, "triad_gbps"), num(best, "threads"));
    json_decref(rows);

    /* optimizer steps: the best fraction of the in-place GB/s per optimizer */
    rows = rows_quiet(run, "optim");
    json_t *per = json_object();
    json_array_foreach(rows, i, r) {
        double f = num(r, "roofline_frac");
        json_t *o = json_object_get(per, str(r, "optim"));
        if (!isnan(f) && (!o || f > num(o, "roofline_frac")))
            json_object_set(per, str(r, "optim"), r);
    }
    json_t *hi = NULL, *lo = NULL;
    const char *k;
    json_object_foreach(per, k, r) {
        if (!hi || num(r, "roofline_frac") > num(hi, "roofline_frac"))
            hi = r;
        if (!lo || num(r, "roofline_frac") < num(lo, "roofline_frac"))
            lo = r;
    }
    if (hi) {
        char more[256] = "", el[64], over[512] = "";
        count_text(num(hi, "elements"), el, sizeof el);
        if (lo != hi)
            snprintf(more, sizeof more, "; slowest: %s at %.2f, of %zu "
                     "optimizers", str(lo, "optim"), num(lo, "roofline_frac"),
                     json_object_size(per));
        /* above 1.05 a step beats memory: the bytes model or the
         * reference is wrong, and the finding says so (with how the
         * reference was taken) instead of calling it the fastest */
        int given = 0;
        json_object_foreach(per, k, r) {
            given |= !strncmp(str(r, "stream_ref"), "given", 5);
            if (num(r, "roofline_frac") > 1.05)
                cat(over, sizeof over, "%s%s %.2f", *over ? ", " : "",
                    str(r, "optim"), num(r, "roofline_frac"));
        }
        if (*over)
            cat(over, sizeof over, "%s", given
                ? " (reference given once with --stream-gbps, not measured "
                  "next to each step)" : "");
        finding(all, pngs, "optim", "roofline", "Optimizer step",
                num(hi, "roofline_frac"),
                "fastest kernel %s at %.2f of the in-place bandwidth (%.1f "
                "GB/s, %s parameters)%s.  The step is memory-bound: 1.00 is "
                "the roofline.%s%s%s", str(hi, "optim"),
                num(hi, "roofline_frac"), num(hi, "gbps"), el, more,
                *over ? "  Above 1.05, faster than memory allows, so the "
                        "bytes model or the reference is wrong: " : "",
                over, *over ? "." : "");
    }
    json_decref(per);
    json_decref(rows);
}

static double comp_frac(json_t *r)
{
    double f = num(r, "stream_frac");
    if (isnan(f) && num(r, "stream_gbps") > 0)
        f = num(r, "gbps") / num(r, "stream_gbps");
    return f;
}

static void find_compress(json_t *all, const char *run, char **pngs)
{
    json_t *rows = rows_quiet(run, "compress"), *r, *fast = NULL,
           *small = NULL;
    size_t i, n = 0;
    json_array_foreach(rows, i, r) {
        n++;
        if (!strcmp(str(r, "compressor"), "none"))
            continue;   /* the dense copy, the others' reference */
        double f = comp_frac(r);
        if (!isnan(f) && (!fast || f > comp_frac(fast)))
            fast = r;
        double c = num2(r, "compression_ratio", "ratio");
        if (!isnan(c) && (!small || c > num2(small, "compression_ratio",
                                              "ratio")))
            small = r;
    }
    if (fast && small)
        finding(all, pngs, "compress", "compress", "Gradient compressors",
                num2(small, "compression_ratio", "ratio"),
                "%zu measured; the smallest wire format is %s's, %.0fx "
                "smaller than fp32 at a one-step relative error of %.3g; the "
                "fastest is %s at %.2f of STREAM.", n,
                str(small, "compressor"),
                num2(small, "compression_ratio", "ratio"),
                num2(small, "rel_err", "rel_error"), str(fast, "compressor"),
                comp_frac(fast));
    json_decref(rows);
}

static void find_coll(json_t *all, const char *run, char **pngs)
{
    json_t *rows = rows_quiet(run, "coll"), *r, *peak = NULL, *lat = NULL;
    size_t i;
    json_array_foreach(rows, i, r) {
        /* 1 rank: a copy; a density: a compressed pattern's busbw is the
         * dense fp32 equivalent, not bytes that crossed the bus */
        if (num(r, "ranks") <= 1 || json_object_get(r, "density"))
            continue;
        double b = num2(r, "busbw_gbps", "busbw");
        if (!isnan(b) && (!peak || b > num2(peak, "busbw_gbps", "busbw")))
            peak = r;
    }
    /* latency: the smallest message of the peak's collective at its ranks */
    json_array_foreach(rows, i, r)
        if (peak && num(r, "ranks") == num(peak, "ranks") &&
            !strcmp(str(r, "coll"), str(peak, "coll")) &&
            !strcmp(str(r, "backend"), str(peak, "backend")) &&
            (!lat || num2(r, "size", "bytes") < num2(lat, "size", "bytes")))
            lat = r;
    if (peak) {
        char ps[64], ls[64];
        msg_text(num2(peak, "size", "bytes"), ps, sizeof ps);
        msg_text(num2(lat, "size", "bytes"), ls, sizeof ls);
        finding(all, pngs, "coll", "busbw", "Collectives",
                num2(peak, "busbw_gbps", "busbw"),
                "peak bus bandwidth %.2f GB/s (%s%s%s, %.0f ranks, %s); "
                "%.1f us per call at %s.", num2(peak, "busbw_gbps", "busbw"),
                str(peak, "coll"), *str(peak, "backend") ? " / " : "",
                str(peak, "backend"), num(peak, "ranks"), ps,
                num(lat, "time_us"), ls);
    }
    json_decref(rows);
}

static void find_sim(json_t *all, const char *run, char **pngs)
{
    json_t *rows = rows_quiet(run, "sim"), *r;
    json_t *top = json_object(), *order = json_array();
    size_t i;
    /* the largest GPU count of each (model, platform) */
    json_array_foreach(rows, i, r) {
        if (isnan(num(r, "gpus")) || isnan(num(r, "scaling_efficiency")))
            continue;
        char key[256];
        snprintf(key, sizeof key, "%s|%s", str(r, "model"),
                 str(r, "platform"));
        json_t *g = json_object_get(top, key);
        if (!g) {
            json_array_append_new(order, json_string(key));
            json_object_set_new(top, key, json_real(num(r, "gpus")));
        } else if (num(r, "gpus") > json_real_value(g)) {
            json_real_set(g, num(r, "gpus"));
        }
    }
    json_array_foreach(order, i, r) {
        const char *key = json_string_value(r);
        double gpus = json_real_value(json_object_get(top, key));
        json_t *at = json_array(), *x, *seen = json_object();
        size_t j;
        json_array_foreach(rows, j, x) {
            char kx[256];
            snprintf(kx, sizeof kx, "%s|%s", str(x, "model"),
                     str(x, "platform"));
            if (!strcmp(kx, key) && num(x, "gpus") == gpus &&
                !isnan(num(x, "scaling_efficiency")) &&
                !json_object_get(seen, str(x, "optim"))) {
                json_object_set_new(seen, str(x, "optim"), json_true());
                json_array_append(at, x);
            }
        }
        size_t n = json_array_size(at);
        json_t **v = calloc(n ? n : 1, sizeof *v);
        for (j = 0; v && j < n; j++)
            v[j] = json_array_get(at, j);
        if (v)
            qsort(v, n, sizeof *v, cmp_eff_desc);
        char text[900] = "", label[160];
        cat(text, sizeof text, "simulated weak-scaling efficiency at "
            "%.0f GPUs: ", gpus);
        for (j = 0; v && j < n; j++)
            cat(text, sizeof text, "%s%s %.1f%%", j ? ", " : "",
                str(v[j], "optim"), pct(num(v[j], "scaling_efficiency")));
        cat(text, sizeof text, ".");
        if (v && n) {
            snprintf(label, sizeof label, "Scaling: %s on %s",
                     str(v[0], "model"), str(v[0], "platform"));
            finding(all, pngs, "sim", "scaling", label,
                    pct(num(v[0], "scaling_efficiency")), "%s", text);
        }
        free(v);
        json_decref(at);
        json_decref(seen);
    }
    json_decref(top);
    json_decref(order);
    json_decref(rows);
}

/* The Convergence finding: mean final accuracy per optimizer over the
 * runs of one configuration - the first final row's (ranks, epochs,
 * batch, model, data: lbs_train_config_differs); runs of another are left
 * out, counted and the first differing key named, never averaged in. */
static void find_train(json_t *all, const char *run, char **pngs)
{
    json_t *rows = rows_quiet(run, "train"), *r, *ref = NULL;
    json_t *acc = json_object(), *order = json_array();
    size_t i, left = 0;
    char why[256] = "";
    json_array_foreach(rows, i, r) {
        const char *ev = str(r, "event");
        double a = num(r, "test_accuracy");
        if ((*ev && strcmp(ev, "final")) || isnan(a))
            continue;
        if (!lbs_train_like_first(&ref, r, &left, why, sizeof why))
            continue;
        char name[256];
        train_name(r, name, sizeof name);
        json_t *l = json_object_get(acc, name);
        if (!l) {
            l = json_array();
            json_object_set_new(acc, name, l);
            json_array_append_new(order, json_string(name));
        }
        json_array_append_new(l, json_real(a <= 1 ? 100 * a : a));
    }
    if (json_array_size(order)) {
        char text[1200] = "";
        double first = NAN;
        const char *dataset = str(ref, "dataset");
        cat(text, sizeof text, "final test accuracy on %s with %.0f ranks",
            *dataset ? dataset : "the data set", num(ref, "ranks"));
        if (!isnan(num(ref, "global_batch")))
            cat(text, sizeof text, ", batch %.0f", num(ref, "global_batch"));
        if (!isnan(num(ref, "epochs")))
            cat(text, sizeof text, ", %g epochs", num(ref, "epochs"));
        cat(text, sizeof text, ": ");
        json_array_foreach(order, i, r) {
            json_t *l = json_object_get(acc, json_string_value(r)), *x;
            size_t j, n = json_array_size(l);
            double s = 0, s2 = 0;
            json_array_foreach(l, j, x) {
                s += json_real_value(x);
                s2 += json_real_value(x) * json_real_value(x);
            }
            double m = s / (double)n;
            if (isnan(first))
                first = m;
            cat(text, sizeof text, "%s%s %.2f%%", i ? ", " : "",
                json_string_value(r), m);
            if (n > 1)
                cat(text, sizeof text, " +- %.2f (%zu runs)",
                    sqrt(fmax(0, (s2 - s * m) / (double)(n - 1))), n);
        }
        cat(text, sizeof text, ".");
        if (left)
            cat(text, sizeof text, " %zu run%s left out: %s (not the same "
                "configuration, not averaged in).", left,
                left > 1 ? "s" : "", why);
        finding(all, pngs, "train", "convergence", "Convergence", first, "%s",
                text);
    }
    json_decref(acc);
    json_decref(order);
    json_decref(rows);
}

/* The verdicts given to the report (NULL: none): {"check": {...},
 * "compare": {...}} as check_verdicts and compare_verdicts return them. */
static void find_verdicts(json_t *all, json_t *verdicts)
{
    json_t *c = json_object_get(verdicts, "check");
    if (c) {
        json_t *s = json_object_get(c, "summary");
        long long f = json_integer_value(json_object_get(s, "failed"));
        char text[512];
        long long m = json_integer_value(json_object_get(s, "metrics"));
        long long sk = json_integer_value(json_object_get(s, "skipped"));
        snprintf(text, sizeof text, "%lld metrics against the baselines: "
                 "%lld passed, %lld failed, %lld skipped (not in this run)%s.",
                 m, json_integer_value(json_object_get(s, "passed")), f, sk,
                 f ? ": a regression"
                 : m && sk == m ? ": the run has none of the baselines' "
                                  "configurations (sizes, threads), nothing "
                                  "was checked" : "");
        json_array_append_new(all, json_pack("{s:s,s:s,s:s,s:f,s:[{s:s,s:s}]}",
            "id", "check", "label", "Check against baselines", "text", text,
            "value", (double)f, "links", "href", "#check", "text", "table"));
    }
    c = json_object_get(verdicts, "compare");
    if (c) {
        json_t *s = json_object_get(c, "summary");
        long long r = json_integer_value(json_object_get(s, "regressed"));
        char text[PATH_MAX + 256];
        snprintf(text, sizeof text, "against %s: %lld shared metrics, %lld "
                 "regressed (%lld changed), %lld better.", str(c, "b"),
                 json_integer_value(json_object_get(s, "compared")), r,
                 json_integer_value(json_object_get(s, "changed")),
                 json_integer_value(json_object_get(s, "improved")));
        json_array_append_new(all, json_pack("{s:s,s:s,s:s,s:f,s:[{s:s,s:s}]}",
            "id", "compare", "label", "Compared with another run", "text",
            text, "value", (double)r, "links", "href", "#compare", "text",
            "table"));
    }
}

/* A row whose own paired reference reads below REF_LOW times the median
 * of the other rows' (same verb, same threads, at least two of them) is
 * a reference problem: its ratio is measured against a reference that
 * something else slowed (issue 34: JointSpar's read 39-48 GB/s where the
 * other optimizers' read 74-87, and its median ratio crossed 1.05). */
#define REF_LOW 0.75

static int paired_ref(json_t *r)
{
    const char *how = str(r, "stream_ref");
    return strstr(how, "interleaved") && num(r, "stream_gbps") > 0;
}

static void find_low_refs(json_t *all, char **pngs, const char *run,
                          const char *bench, const char *name,
                          const char *frac)
{
    json_t *rows = rows_quiet(run, bench), *r, *o;
    size_t i, j, n = json_array_size(rows);
    double *ref = malloc((n ? n : 1) * sizeof *ref);
    json_array_foreach(rows, i, r) {
        if (!ref || !paired_ref(r))
            continue;
        size_t m = 0;
        json_array_foreach(rows, j, o)
            if (j != i && paired_ref(o) &&
                num(o, "threads") == num(r, "threads"))
                ref[m++] = num(o, "stream_gbps");
        if (m < 2)
            continue;
        double med = cli_stats(ref, m).median, own = num(r, "stream_gbps");
        if (own >= REF_LOW * med)
            continue;
        finding(all, pngs, bench, NULL, "Reference problem", own / med,
                "%s %s: its reference read %.1f GB/s, %.2f of the median of "
                "the run's %zu other %s rows (%.1f GB/s), so its ratio %.3f "
                "says more about the reference than the kernel; rerun it "
                "(another process shared the memory while its reference "
                "ran).", bench, str(r, name), own, own / med, m, bench, med,
                num(r, frac));
    }
    free(ref);
    json_decref(rows);
}

/* The answer first: per swept (model, platform, GPUs) of
 * sim_netsweep.jsonl, the node bandwidth from which each optimizer
 * reaches 90% scaling efficiency (the lowest swept one; "not within"
 * the sweep where none does), fastest to reach it first. */
/* A bandwidth no swept one reaches (jansson stores no infinity). */
#define NOT_REACHED 1e300

static void find_netsweep(json_t *all, const char *run, char **pngs)
{
    json_t *rows = rows_quiet(run, "sim_netsweep"), *r, *x;
    json_t *groups = json_object(), *order = json_array();
    size_t i;
    json_array_foreach(rows, i, r) {
        char key[256];
        snprintf(key, sizeof key, "%s|%s|%.0f", str(r, "model"),
                 str(r, "platform"), num(r, "gpus"));
        json_t *g = json_object_get(groups, key);
        if (!g) {
            g = json_object();   /* optim -> lowest gbps reaching 0.9 */
            json_object_set_new(groups, key, g);
            json_array_append_new(order, json_string(key));
        }
        double at = num(r, "scaling_efficiency") >= 0.9 ? num(r, "node_gbps")
                                                         : NOT_REACHED;
        json_t *o = json_object_get(g, str(r, "optim"));
        if (!o)
            json_object_set_new(g, str(r, "optim"), json_real(at));
        else if (at < json_real_value(o))
            json_real_set(o, at);
    }
    json_array_foreach(order, i, x) {
        json_t *g = json_object_get(groups, json_string_value(x));
        char text[900] = "", label[200], model[64] = "", plat[64] = "";
        double gpus = 0;
        sscanf(json_string_value(x), "%63[^|]|%63[^|]|%lf", model, plat,
               &gpus);
        cat(text, sizeof text, "%s at %.0f GPUs (%s nodes, the network "
            "swept): 90%% scaling efficiency ", model, gpus, plat);
        double best = NOT_REACHED;
        for (int pass = 0; pass < 2; pass++) {   /* reached, then not */
            const char *k;
            json_t *v;
            /* ascending bandwidth: insertion by repeated minimum */
            json_t *done = json_object();
            for (;;) {
                const char *mk = NULL;
                double mv = INFINITY;
                json_object_foreach(g, k, v)
                    if (!json_object_get(done, k) &&
                        (pass ? json_real_value(v) >= NOT_REACHED
                              : json_real_value(v) < NOT_REACHED) &&
                        (!mk || json_real_value(v) < mv)) {
                        mk = k;
                        mv = json_real_value(v);
                    }
                if (!mk)
                    break;
                json_object_set_new(done, mk, json_true());
                best = fmin(best, mv);
                if (!pass)
                    cat(text, sizeof text, "%s%s from %.0f Gb/s per node",
                        json_object_size(done) > 1 ? ", " : "", mk, mv);
                else
                    cat(text, sizeof text, "%s%s not within the sweep",
                        text[strlen(text) - 1] == ' ' ? "" : "; ", mk);
            }
            json_decref(done);
        }
        cat(text, sizeof text, ".");
        snprintf(label, sizeof label, "Answer: which optimizer pays on "
                 "which network (%s)", model);
        finding(all, pngs, "netsweep", "netsweep", label,
                best >= NOT_REACHED ? NAN : best, "%s", text);
    }
    json_decref(groups);
    json_decref(order);
    json_decref(rows);
}

static json_t *findings(const char *run, char **pngs, json_t *verdicts)
{
    json_t *all = json_array();
    /* the answer first (which optimizer pays on which network, at
     * scale), then the evidence it rests on */
    find_verdicts(all, verdicts);
    find_netsweep(all, run, pngs);
    find_sim(all, run, pngs);
    find_train(all, run, pngs);
    find_stream_optim(all, run, pngs);
    find_low_refs(all, pngs, run, "optim", "optim", "roofline_frac");
    find_compress(all, run, pngs);
    find_low_refs(all, pngs, run, "compress", "compressor", "stream_frac");
    find_coll(all, run, pngs);
    return all;
}

/* ------------------------------------------------------------------ */
/* text                                                                 */

static void text_table(json_t *t, FILE *f)
{
    json_t *cols = json_object_get(t, "cols"), *rows = json_object_get(t,
                                                                       "rows");
    size_t nc = json_array_size(cols), w[32] = {0}, i, j;
    json_t *r, *c;
    if (nc > 32)
        nc = 32;
    for (j = 0; j < nc; j++)
        w[j] = strlen(json_string_value(json_array_get(cols, j)));
    json_array_foreach(rows, i, r)
        for (j = 0; j < nc; j++) {
            size_t l = strlen(ctext(json_array_get(r, j)));
            if (l > w[j])
                w[j] = l > 60 ? 60 : l;
        }
    fprintf(f, "%s\n", json_string_value(json_object_get(t, "title")));
    fprintf(f, " ");
    json_array_foreach(cols, j, c)
        if (j < nc)
            fprintf(f, j ? " %*s" : " %-*s", (int)w[j], json_string_value(c));
    fputc('\n', f);
    json_array_foreach(rows, i, r) {
        fprintf(f, " ");
        for (j = 0; j < nc; j++) {
            const char *s = ctext(json_array_get(r, j));
            if (j == 0)
                fprintf(f, " %-*.*s", (int)w[j], 60, s);
            else
                fprintf(f, " %*.*s", (int)w[j], 60, s);
        }
        fputc('\n', f);
    }
    fputc('\n', f);
}

void report_summary_text(const char *run, FILE *f)
{
    json_t *meta = load_meta(run);
    json_t *all = sections(run, NULL);
    if (meta)
        fprintf(f, "machine: %s, %.0f CPUs, %.1f GiB%s%s\n\n",
                str(meta, "cpu_model"), num(meta, "online_cpus"),
                num(meta, "topology.memory_bytes") / 1073741824.0,
                json_is_string(json_object_get(meta, "gpu")) ? ", GPU " : "",
                json_is_string(json_object_get(meta, "gpu")) ? str(meta, "gpu")
                                                             : "");
    size_t i;
    json_t *t;
    json_t *fnd = findings(run, NULL, NULL);
    if (json_array_size(fnd))
        fprintf(f, "Findings\n");
    json_array_foreach(fnd, i, t)
        fprintf(f, "  %s: %s\n", str(t, "label"), str(t, "text"));
    if (json_array_size(fnd))
        fputc('\n', f);
    json_decref(fnd);
    json_array_foreach(all, i, t) {
        const char *id = str(t, "id");
        if (!strcmp(id, "suite") || !strcmp(id, "machine"))
            continue;   /* the suite prints its own entry list */
        text_table(t, f);
    }
    json_decref(all);
    json_decref(meta);
}

/* ------------------------------------------------------------------ */
/* HTML                                                                 */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* PNG names under RUN/plots, sorted (malloc'ed, NULL-terminated). */
static char **list_pngs(const char *run)
{
    char dir[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/plots", run);
    DIR *d = opendir(dir);
    size_t n = 0, cap = 16;
    char **v = calloc(cap, sizeof *v);
    struct dirent *de;
    while (d && v && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".png"))
            continue;
        if (n + 2 > cap) {
            char **t = realloc(v, (cap *= 2) * sizeof *v);
            if (!t)
                break;
            v = t;
        }
        v[n++] = strdup(de->d_name);
        v[n] = NULL;
    }
    if (d)
        closedir(d);
    if (v)
        qsort(v, n, sizeof *v, cmp_str);
    return v;
}

/* Figure file name without ".png", for ids and captions. */
static void png_base(const char *png, char *out, size_t len)
{
    size_t l = strlen(png);
    snprintf(out, len, "%.*s", (int)(l > 4 ? l - 4 : l), png);
}

/* The caption plot wrote next to a figure (plots/<base>.caption), else
 * the kind's sentence; malloc'ed. */
static char *fig_caption(const char *run, const char *png)
{
    char base[PATH_MAX], path[PATH_MAX * 2];
    png_base(png, base, sizeof base);
    snprintf(path, sizeof path, "%s/plots/%s.caption", run, base);
    struct lbs_err e;
    char *text = NULL;
    size_t len;
    if (lbs_read_file(path, 64 << 10, &text, &len, &e) == 0) {
        while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
            text[--len] = '\0';
        return text;
    }
    return strdup(plot_caption(png));
}

/* One figure: the PNG embedded, its caption, its file and a link to the
 * table of the numbers it draws (table_id, or NULL). */
static void html_figure(struct strbuf *b, const char *run, const char *png,
                        const char *table_id, const char *table_title)
{
    char path[PATH_MAX + 300], base[PATH_MAX];
    snprintf(path, sizeof path, "%s/plots/%s", run, png);
    struct lbs_err e;
    char *img = NULL;
    size_t len;
    if (lbs_read_file(path, (size_t)64 << 20, &img, &len, &e))
        return;
    png_base(png, base, sizeof base);
    sb_puts(b, "<figure id=\"fig-");
    sb_html(b, base);
    sb_puts(b, "\"><img alt=\"");
    sb_html(b, png);
    sb_puts(b, "\" src=\"data:image/png;base64,");
    sb_base64(b, (const unsigned char *)img, len);
    sb_puts(b, "\"><figcaption>");
    char *cap = fig_caption(run, png);
    if (cap && *cap) {
        sb_html(b, cap);
        sb_puts(b, " ");
    }
    free(cap);
    sb_puts(b, "<span class=\"file\">plots/");
    sb_html(b, png);
    sb_puts(b, " (SVG next to it)");
    if (table_id) {
        sb_printf(b, "; numbers: <a href=\"#%s\">", table_id);
        sb_html(b, table_title);
        sb_puts(b, "</a>");
    }
    sb_puts(b, "</span></figcaption></figure>\n");
    free(img);
}

static int bad_word(const char *s)
{
    static const char *const w[] = {"failed", "interrupted", "FAIL",
                                    "FAIL (missing)", "SLOWER", "WORSE",
                                    "CHANGED"};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (!strcmp(s, w[i]))
            return 1;
    return 0;
}

/* A table: sortable by a click on a column header (header set), numeric
 * columns (any cell with a value) right-aligned and sorted on the value,
 * text left-aligned.  Without header (the machine): key/value rows. */
static void html_table(struct strbuf *b, json_t *t, int header)
{
    size_t i, j;
    json_t *r, *c, *rows = json_object_get(t, "rows");
    char isnum[64] = {0};
    json_array_foreach(rows, i, r)
        json_array_foreach(r, j, c)
            if (j < sizeof isnum && json_is_object(c))
                isnum[j] = 1;
    if (header) {
        sb_puts(b, "<table class=\"sort\">\n<thead><tr>");
        json_array_foreach(json_object_get(t, "cols"), j, c) {
            sb_puts(b, j < sizeof isnum && isnum[j] ? "<th class=\"n\">"
                                                    : "<th>");
            sb_html(b, json_string_value(c));
            sb_puts(b, "</th>");
        }
        sb_puts(b, "</tr></thead>\n");
    } else {
        sb_puts(b, "<table>\n");
    }
    sb_puts(b, "<tbody>\n");
    json_array_foreach(rows, i, r) {
        sb_puts(b, "<tr>");
        json_array_foreach(r, j, c) {
            const char *s = ctext(c), *tag = j == 0 && !header ? "th" : "td";
            int n = j < sizeof isnum && isnum[j];
            sb_printf(b, "<%s", tag);
            if (n || bad_word(s))
                sb_printf(b, " class=\"%s%s%s\"", n ? "n" : "",
                          n && bad_word(s) ? " " : "", bad_word(s) ? "bad"
                                                                   : "");
            if (json_is_object(c))
                sb_printf(b, " data-v=\"%.17g\"",
                          json_number_value(json_object_get(c, "v")));
            sb_puts(b, ">");
            sb_html(b, s);
            sb_printf(b, "</%s>", tag);
        }
        sb_puts(b, "</tr>\n");
    }
    sb_puts(b, "</tbody></table>\n");
}

static void sh_quote(struct strbuf *b, const char *s)
{
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789_./:=,+-@%") == strlen(s)) {
        sb_html(b, s);
        return;
    }
    sb_puts(b, "'");
    for (; *s; s++) {
        if (*s == '\'')
            sb_puts(b, "'\\''");
        else {
            char c[2] = {*s, 0};
            sb_html(b, c);
        }
    }
    sb_puts(b, "'");
}

/* One command line; a verb's own argv (meta.json "command" starts at the
 * verb) gets the "lbscale" it was run as. */
static void sh_line(struct strbuf *b, json_t *argv)
{
    size_t i;
    json_t *a;
    const char *a0 = json_string_value(json_array_get(argv, 0));
    if (a0 && strcmp(a0, "lbscale") && strchr(a0, '/') == NULL)
        sb_puts(b, "lbscale ");
    json_array_foreach(argv, i, a) {
        if (i)
            sb_puts(b, " ");
        sh_quote(b, nz(json_string_value(a)));
    }
    sb_puts(b, "\n");
}

static void html_commands(struct strbuf *b, const char *run, json_t *meta)
{
    sb_puts(b, "<h2 id=\"commands\">Command lines</h2>\n"
               "<p>The run directory was created by:</p>\n<pre>");
    if (json_array_size(json_object_get(meta, "command")))
        sh_line(b, json_object_get(meta, "command"));
    sb_puts(b, "</pre>\n");
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/suite.jsonl", run);
    struct lbs_err e;
    json_t *rows = lbs_jsonl_load(path, &e);
    if (rows && json_array_size(rows)) {
        sb_puts(b, "<p>Suite invocations and the exact command line of "
                   "every entry, in the order they ran:</p>\n<pre>");
        size_t i;
        json_t *r;
        json_array_foreach(rows, i, r) {
            const char *ev = str(r, "event");
            if (!strcmp(ev, "start")) {
                sb_puts(b, "# ");
                sh_line(b, json_object_get(r, "command"));
            } else if (!strcmp(ev, "entry") &&
                       json_is_array(json_object_get(r, "argv"))) {
                sh_line(b, json_object_get(r, "argv"));
            }
        }
        sb_puts(b, "</pre>\n");
    }
    json_decref(rows);
}

static const char css[] =
"body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;max-width:1100px;"
"margin:2em auto;padding:0 1em;color:#222;line-height:1.4;"
"overflow-wrap:anywhere}"
"h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px "
"solid #ccc;padding-bottom:.2em}h3{margin-top:1.5em}"
"table{border-collapse:collapse;margin:.8em 0;font-size:.9em;"
"display:block;max-width:100%;overflow-x:auto}"
"th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;"
"vertical-align:top}.n{text-align:right;font-variant-numeric:tabular-nums}"
"thead th{background:#f3f5f7}tbody th{background:#f8f9fa;font-weight:normal}"
"tr:nth-child(even) td{background:#fafafa}"
"table.sort thead th{cursor:pointer;user-select:none}"
"table.sort thead th:hover{background:#e6eaee}"
"th[aria-sort=ascending]::after{content:' \\25B2';font-size:.7em}"
"th[aria-sort=descending]::after{content:' \\25BC';font-size:.7em}"
"td.bad{color:#b03030;font-weight:bold}"
"pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:.85em}"
"figure{margin:1.5em 0}img{max-width:100%;border:1px solid #eee}"
"figcaption{font-size:.9em;color:#333;max-width:60em}"
"figcaption .file{color:#777;font-size:.9em}.note{color:#555;font-size:.9em}"
"ul.findings{padding-left:1.2em}ul.findings li{margin:.35em 0}"
"ul.findings a{font-size:.85em;margin-left:.4em}"
"nav a{margin-right:1em}";

/* Click a column header to sort by it (again: the other way); numbers on
 * their data-v, text in natural order, "-" last; stable. */
static const char sort_js[] =
"document.querySelectorAll('table.sort thead th').forEach(function(h){"
"h.title='sort by this column';"
"h.addEventListener('click',function(){"
"var t=h.closest('table'),b=t.tBodies[0],i=h.cellIndex,"
"up=h.getAttribute('aria-sort')!=='ascending';"
"t.querySelectorAll('thead th').forEach(function(x){"
"x.removeAttribute('aria-sort')});"
"h.setAttribute('aria-sort',up?'ascending':'descending');"
"function key(r){var c=r.cells[i];if(!c)return null;"
"var v=c.getAttribute('data-v');if(v!==null)return parseFloat(v);"
"var s=c.textContent.trim();return s==='-'||s===''?null:s}"
"Array.from(b.rows).map(function(r,n){return[key(r),n,r]})"
".sort(function(x,y){var p=x[0],q=y[0],d;"
"if(p===null||q===null)d=p===q?0:p===null?1:-1;"
"else{d=typeof p==='number'&&typeof q==='number'?p-q:"
"String(p).localeCompare(String(q),undefined,{numeric:true});"
"if(!up)d=-d}return d||x[1]-y[1]})"
".forEach(function(e){b.appendChild(e[2])})})});";

static void html_findings(struct strbuf *b, json_t *f)
{
    size_t i, j;
    json_t *x, *l;
    sb_puts(b, "<h2 id=\"findings\">Findings</h2>\n<ul class=\"findings\">\n");
    json_array_foreach(f, i, x) {
        sb_puts(b, "<li><b>");
        sb_html(b, str(x, "label"));
        sb_puts(b, "</b>: ");
        sb_html(b, str(x, "text"));
        json_array_foreach(json_object_get(x, "links"), j, l) {
            sb_puts(b, " <a href=\"");
            sb_html(b, str(l, "href"));
            sb_puts(b, "\">[");
            sb_html(b, str(l, "text"));
            sb_puts(b, "]</a>");
        }
        sb_puts(b, "</li>\n");
    }
    if (!json_array_size(f))
        sb_puts(b, "<li>This run has no measurements yet.</li>\n");
    sb_puts(b, "</ul>\n");
}

/* The check and compare verdicts as tables (ids check, compare). */
static void html_verdicts(struct strbuf *b, json_t *v)
{
    json_t *c = json_object_get(v, "check"), *m;
    size_t i;
    if (!c && !json_object_get(v, "compare"))
        return;
    sb_puts(b, "<h2 id=\"verdicts\">Regression checks</h2>\n");
    if (c) {
        json_t *t = table("check", "", json_pack("[s,s,s,s,s,s]", "metric",
                          "baseline", "value", "delta", "rule", "result"));
        json_array_foreach(json_object_get(c, "metrics"), i, m) {
            char bs[32], vs[32];
            double bv = num(m, "baseline"), vv = num(m, "value");
            snprintf(bs, sizeof bs, bv == floor(bv) ? "%.0f" : "%.6g", bv);
            snprintf(vs, sizeof vs, vv == floor(vv) ? "%.0f" : "%.6g", vv);
            add_row(t, json_pack("[s,o,o,s,s,s]", str(m, "metric"),
                                 numcell(bs, bv), numcell(vs, vv),
                                 *str(m, "delta") ? str(m, "delta") : "-",
                                 str(m, "rule_text"), str(m, "result")));
        }
        json_t *s = json_object_get(c, "summary");
        sb_printf(b, "<h3 id=\"check\">Check against baselines</h3>\n"
                  "<p class=\"note\">%lld metrics: %lld passed, %lld failed, "
                  "%lld skipped (their configuration is not in this run); "
                  "<code>lbscale check</code> gives the same verdicts and "
                  "exits 1 on a regression.</p>\n",
                  json_integer_value(json_object_get(s, "metrics")),
                  json_integer_value(json_object_get(s, "passed")),
                  json_integer_value(json_object_get(s, "failed")),
                  json_integer_value(json_object_get(s, "skipped")));
        html_table(b, t, 1);
        json_decref(t);
    }
    c = json_object_get(v, "compare");
    if (c) {
        json_t *t = table("compare", "", json_pack("[s,s,s,s,s,s,s,s,s,s]",
                          "verb", "configuration", "metric", "A (median)",
                          "B (median)", "change", "n A/B", "p (Holm)",
                          "verdict", "could detect"));
        json_array_foreach(json_object_get(c, "metrics"), i, m) {
            char a[32], bb[32], ch[32], n[32];
            snprintf(a, sizeof a, "%.6g", num(m, "a"));
            snprintf(bb, sizeof bb, "%.6g", num(m, "b"));
            snprintf(ch, sizeof ch, "%+.2f%%", 100 * num(m, "change"));
            snprintf(n, sizeof n, "%.0f/%.0f", num(m, "n_a"), num(m, "n_b"));
            add_row(t, json_pack("[s,s,s,o,o,o,s,o,s,s]", str(m, "verb"),
                                 str(m, "config"), str(m, "metric"),
                                 numcell(a, num(m, "a")),
                                 numcell(bb, num(m, "b")),
                                 numcell(ch, 100 * num(m, "change")), n,
                                 cell("%.3g", num(m, "p_holm")),
                                 str(m, "verdict"), str(m, "detect")));
        }
        json_t *s = json_object_get(c, "summary");
        sb_puts(b, "<h3 id=\"compare\">Compared with another run</h3>\n"
                   "<p class=\"note\">A = this run, B = ");
        sb_html(b, str(c, "b"));
        sb_printf(b, ": %lld shared metrics, %lld regressed (%lld changed), "
                  "%lld better.  Timings: an exact one-sided Mann-Whitney "
                  "test per metric with Holm's correction over the %lld "
                  "tested (alpha %.2g for the whole comparison), counted "
                  "beyond %.0f%% or the samples' spread (%.0f%% where the "
                  "samples are too few for the test); %lld raw times and "
                  "rates reported beside their kernels' paired ratios, not "
                  "tested; exact metrics must be "
                  "equal.  <code>lbscale compare</code> gives the same "
                  "verdicts and exits 1 on a regression.</p>\n",
                  json_integer_value(json_object_get(s, "compared")),
                  json_integer_value(json_object_get(s, "regressed")),
                  json_integer_value(json_object_get(s, "changed")),
                  json_integer_value(json_object_get(s, "improved")),
                  json_integer_value(json_object_get(s, "family")),
                  num(s, "alpha"), 100 * num(s, "min_effect"),
                  100 * num(s, "margin_single"),
                  json_integer_value(json_object_get(s, "reported")));
        html_table(b, t, 1);
        json_decref(t);
    }
}

int report_write_ex(const char *run, json_t *verdicts, json_t **found,
                    struct lbs_err *err)
{
    int vrc = lbs_run_valid(run, err);
    if (vrc)
        return vrc;
    json_t *meta = load_meta(run);
    if (!meta)
        return lbs_err_set(err, -EINVAL, "%s/meta.json is missing or not "
                           "JSON: not a results run", run);
    json_t *all = sections(run, meta);
    char **pngs = list_pngs(run);
    json_t *fnd = findings(run, pngs, verdicts);
    size_t npng = 0;
    while (pngs && pngs[npng])
        npng++;
    char *used = calloc(npng + 1, 1);
    const char *id = strrchr(run, '/');
    id = id && id[1] ? id + 1 : run;

    struct strbuf b = {0};
    sb_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset="
                "\"utf-8\">\n<meta name=\"viewport\" content=\"width="
                "device-width, initial-scale=1\">\n<title>lbscale results ");
    sb_html(&b, id);
    sb_printf(&b, "</title>\n<style>%s</style></head><body>\n", css);
    sb_puts(&b, "<h1>lbscale results: ");
    sb_html(&b, id);
    sb_puts(&b, "</h1>\n<p class=\"note\">");
    sb_html(&b, str(meta, "cpu_model"));
    sb_printf(&b, ", %.0f CPUs", num(meta, "online_cpus"));
    if (json_is_string(json_object_get(meta, "gpu"))) {
        sb_puts(&b, ", ");
        sb_html(&b, str(meta, "gpu"));
    }
    sb_puts(&b, "; created ");
    sb_html(&b, str(meta, "created_utc"));
    sb_puts(&b, " at git revision ");
    sb_html(&b, str(meta, "git_rev"));
    sb_puts(&b, ".  Every number below comes from this run's files; "
                "bandwidths are compared with the STREAM measured in the "
                "same run, never with numbers from another machine.  Click "
                "a table's column header to sort by it.</p>\n"
                "<nav><a href=\"#findings\">Findings</a>");
    if (json_object_size(verdicts))
        sb_puts(&b, "<a href=\"#verdicts\">Regression checks</a>");
    if (npng)
        sb_puts(&b, "<a href=\"#figures\">Figures</a>");
    size_t i;
    json_t *t, *x;
    json_array_foreach(all, i, t) {
        sb_printf(&b, "<a href=\"#%s\">", str(t, "id"));
        sb_html(&b, str(t, "title"));
        sb_puts(&b, "</a>");
    }
    sb_puts(&b, "<a href=\"#commands\">Command lines</a></nav>\n");

    html_findings(&b, fnd);
    html_verdicts(&b, verdicts);

    /* figures, in the order of the sections whose numbers they draw */
    if (npng)
        sb_puts(&b, "<h2 id=\"figures\">Figures</h2>\n");
    json_array_foreach(all, i, t) {
        size_t j;
        json_array_foreach(json_object_get(t, "figs"), j, x) {
            const char *pre = json_string_value(x);
            size_t l = strlen(pre);
            for (size_t k = 0; k < npng; k++)
                if (!used[k] && !strncmp(pngs[k], pre, l) &&
                    (pngs[k][l] == '.' || pngs[k][l] == '_')) {
                    html_figure(&b, run, pngs[k], str(t, "id"),
                                str(t, "title"));
                    used[k] = 1;
                }
        }
    }
    for (size_t k = 0; k < npng; k++)
        if (!used[k])
            html_figure(&b, run, pngs[k], NULL, NULL);

    /* tables, then the machine and the suite's entries */
    json_array_foreach(all, i, t) {
        sb_printf(&b, "<h2 id=\"%s\">", str(t, "id"));
        sb_html(&b, str(t, "title"));
        sb_puts(&b, "</h2>\n");
        html_table(&b, t, strcmp(str(t, "id"), "machine") != 0);
        size_t j;
        json_array_foreach(json_object_get(t, "notes"), j, x) {
            sb_puts(&b, "<p class=\"note\">");
            sb_html(&b, json_string_value(x));
            sb_puts(&b, "</p>\n");
        }
    }
    html_commands(&b, run, meta);
    sb_printf(&b, "<p class=\"note\">Written by lbscale %s (git %s) "
                  "<code>report</code>; redraw the figures with "
                  "<code>lbscale plot RUN</code>, regenerate this page with "
                  "<code>lbscale report RUN</code>.</p>\n<script>%s</script>"
                  "\n</body></html>\n", LBS_VERSION, LBS_GIT_REV, sort_js);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/report.html", run);
    int rc = b.p ? lbs_write_atomic(path, b.p, b.len, err)
                 : lbs_err_set(err, -ENOMEM, "out of memory");
    free(b.p);
    for (size_t k = 0; k < npng; k++)
        free(pngs[k]);
    free(pngs);
    free(used);
    json_decref(all);
    json_decref(meta);
    if (found && !rc)
        *found = fnd;
    else
        json_decref(fnd);
    return rc;
}

int report_write(const char *run, struct lbs_err *err)
{
    return report_write_ex(run, NULL, NULL, err);
}
