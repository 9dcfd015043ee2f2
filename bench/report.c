/* report.c - `lbscale report RUN`: RUN/report.html, one self-contained page
 * (figures embedded as base64 PNG, inline CSS, no external references)
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

#include "cli.h"
#include "git_rev.h"
#include "lbs_config.h"
#include "suite.h"

/* ------------------------------------------------------------------ */
/* text building                                                        */

struct sb {
    char *p;
    size_t len, cap;
};

static void sb_add(struct sb *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *t = realloc(b->p, cap);
        if (!t)
            return;
        b->p = t;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(struct sb *b, const char *s) { sb_add(b, s, strlen(s)); }

static void sb_printf(struct sb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *t = malloc((size_t)n + 1);
    if (!t)
        return;
    va_start(ap, fmt);
    vsnprintf(t, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_add(b, t, (size_t)n);
    free(t);
}

static void sb_html(struct sb *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': sb_puts(b, "&lt;"); break;
        case '>': sb_puts(b, "&gt;"); break;
        case '&': sb_puts(b, "&amp;"); break;
        case '"': sb_puts(b, "&quot;"); break;
        default: sb_add(b, s, 1);
        }
    }
}

static void sb_base64(struct sb *b, const unsigned char *d, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                            "0123456789+/";
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)d[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)d[i + 1] << 8;
        if (i + 2 < n)
            v |= d[i + 2];
        q[0] = t[v >> 18 & 63];
        q[1] = t[v >> 12 & 63];
        q[2] = i + 1 < n ? t[v >> 6 & 63] : '=';
        q[3] = i + 2 < n ? t[v & 63] : '=';
        sb_add(b, q, 4);
    }
}

/* ------------------------------------------------------------------ */
/* values                                                               */

static const char *str(json_t *r, const char *k)
{
    const char *s = json_string_value(suite_field(r, k));
    return s ? s : "";
}

static const char *nz(const char *s) { return s ? s : ""; }

static double num(json_t *r, const char *k) { return suite_num(suite_field(r, k)); }

/* First present numeric field of a list ("rel_err", "rel_error"). */
static double num2(json_t *r, const char *a, const char *b)
{
    double v = num(r, a);
    return isnan(v) && b ? num(r, b) : v;
}

static json_t *cell(const char *fmt, double v)
{
    char buf[64];
    if (isnan(v))
        return json_string("-");
    snprintf(buf, sizeof buf, fmt, v);
    return json_string(buf);
}

static json_t *cells(const char *s) { return json_string(s && *s ? s : "-"); }

static json_t *bytes_cell(double v)
{
    char buf[64];
    if (isnan(v))
        return json_string("-");
    const char *u[] = {"B", "KB", "MB", "GB", "TB"};
    int i = 0;
    while (fabs(v) >= 1000 && i < 4) {
        v /= 1000;
        i++;
    }
    snprintf(buf, sizeof buf, i ? "%.3g %s" : "%.0f %s", v, u[i]);
    return json_string(buf);
}

/* 100000000 -> "100M", 33554432 -> "33.6M" (SI, like the CLI's input) */
static json_t *count_cell(double v)
{
    char buf[64];
    if (isnan(v))
        return json_string("-");
    if (v >= 1e9)
        snprintf(buf, sizeof buf, "%.3gG", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
    else if (v >= 1e4)
        snprintf(buf, sizeof buf, "%.3gK", v / 1e3);
    else
        snprintf(buf, sizeof buf, "%.0f", v);
    return json_string(buf);
}

/* message sizes in binary units, as the busbw figure labels them */
static json_t *msg_cell(double v)
{
    char buf[64];
    if (isnan(v))
        return json_string("-");
    const char *u[] = {"B", "KiB", "MiB", "GiB"};
    int i = 0;
    while (v >= 1024 && i < 3) {
        v /= 1024;
        i++;
    }
    snprintf(buf, sizeof buf, "%.4g %s", v, u[i]);
    return json_string(buf);
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
                      json_pack("[s,s,s,s,s]", "doubles / array", "threads",
                                "copy GB/s", "triad GB/s", "#wrong"));
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
        add_row(t, json_pack("[o,o,o,o,o]", count_cell(num(r, "elements")),
                             cell("%.0f", num(r, "threads")),
                             cell("%.2f", num(r, "copy_gbps")),
                             cell("%.2f", num(r, "triad_gbps")),
                             cell("%.0f", num(r, "wrong"))));
    add_note(t, "GB/s = 1e9 bytes/s, best of the timed iterations (the "
             "STREAM convention); the other sections compare against triad.");
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
                                "STREAM GB/s", "of STREAM", "#wrong"));
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
             "model / median step time.");
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
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
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
        char name[96];
        snprintf(name, sizeof name, "%s%s%s", str(big, "coll"),
                 *str(big, "backend") ? " / " : "", str(big, "backend"));
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
    add_fig(t, "busbw");
    json_decref(groups);
    json_decref(order);
    json_decref(rows);
    return t;
}

static json_t *sec_train(const char *run)
{
    json_t *rows = load(run, "train");
    if (!rows || !json_array_size(rows)) {
        json_decref(rows);
        return NULL;
    }
    json_t *t = table("train", "Training (convergence)",
                      json_pack("[s,s,s,s,s,s,s,s,s]", "optimizer", "dataset",
                                "ranks", "global batch", "steps",
                                "test accuracy", "best", "wall s",
                                "sent / rank"));
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
        add_row(t, json_pack("[s,s,o,o,o,o,o,o,o]",
                             *str(r, "spec") ? str(r, "spec") : str(r, "optim"),
                             str(r, "dataset"), cell("%.0f", num(r, "ranks")),
                             cell("%.0f", num(r, "global_batch")),
                             cell("%.0f", num(r, "steps")),
                             cell("%.2f%%", acc), cell("%.2f%%", best),
                             cell("%.1f", num(r, "wall_s")), bytes_cell(sent)));
    }
    add_fig(t, "convergence");
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

/* Every section that has data, in reading order. */
static json_t *sections(const char *run, json_t *meta)
{
    json_t *all = json_array();
    json_t *(*fn[])(const char *) = {sec_suite, sec_stream, sec_optim,
                                     sec_compress, sec_coll, sec_train,
                                     sec_sim};
    json_t *m = sec_machine(meta);
    if (m)
        json_array_append_new(all, m);
    for (size_t i = 0; i < sizeof fn / sizeof fn[0]; i++) {
        json_t *t = fn[i](run);
        if (t)
            json_array_append_new(all, t);
    }
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
            size_t l = strlen(nz(json_string_value(json_array_get(r, j))));
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
            const char *s = nz(json_string_value(json_array_get(r, j)));
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

static void html_figure(struct sb *b, const char *run, const char *png)
{
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/plots/%s", run, png);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    struct sb img = {0};
    unsigned char chunk[65536];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, f)) > 0)
        sb_add(&img, (const char *)chunk, r);
    fclose(f);
    sb_puts(b, "<figure><img alt=\"");
    sb_html(b, png);
    sb_puts(b, "\" src=\"data:image/png;base64,");
    sb_base64(b, (const unsigned char *)img.p, img.len);
    sb_puts(b, "\"><figcaption>plots/");
    sb_html(b, png);
    sb_puts(b, " (SVG next to it)</figcaption></figure>\n");
    free(img.p);
}

static void html_table(struct sb *b, json_t *t, int header)
{
    size_t i, j;
    json_t *r, *c;
    sb_puts(b, "<table>\n");
    if (header) {
        sb_puts(b, "<tr>");
        json_array_foreach(json_object_get(t, "cols"), j, c) {
            sb_puts(b, "<th>");
            sb_html(b, json_string_value(c));
            sb_puts(b, "</th>");
        }
        sb_puts(b, "</tr>\n");
    }
    json_array_foreach(json_object_get(t, "rows"), i, r) {
        const char *st = header ? NULL : "";
        (void)st;
        sb_puts(b, "<tr>");
        json_array_foreach(r, j, c) {
            const char *s = json_string_value(c);
            int fail = !strcmp(s, "failed") || !strcmp(s, "interrupted");
            sb_puts(b, j == 0 && !header ? "<th>" : fail ? "<td class=\"bad\">"
                                                      : "<td>");
            sb_html(b, s);
            sb_puts(b, j == 0 && !header ? "</th>" : "</td>");
        }
        sb_puts(b, "</tr>\n");
    }
    sb_puts(b, "</table>\n");
}

static void sh_quote(struct sb *b, const char *s)
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
static void sh_line(struct sb *b, json_t *argv)
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

static void html_commands(struct sb *b, const char *run, json_t *meta)
{
    sb_puts(b, "<h2 id=\"commands\">Command lines</h2>\n"
               "<p>The run directory was created by:</p>\n<pre>");
    if (json_array_size(json_object_get(meta, "command")))
        sh_line(b, json_object_get(meta, "command"));
    sb_puts(b, "</pre>\n");
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/suite.jsonl", run);
    struct lbs_err e;
    json_t *rows = suite_load_jsonl(path, &e);
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
"margin:2em auto;padding:0 1em;color:#222;line-height:1.4}"
"h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px "
"solid #ccc;padding-bottom:.2em}"
"table{border-collapse:collapse;margin:.8em 0;font-size:.9em}"
"th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}"
"th{background:#f3f5f7;text-align:left}tr:nth-child(even) td{background:#fafafa}"
"td.bad{color:#b03030;font-weight:bold}"
"pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:.85em}"
"figure{margin:1em 0}img{max-width:100%;border:1px solid #eee}"
"figcaption{font-size:.8em;color:#666}.note{color:#555;font-size:.9em}"
"nav a{margin-right:1em}";

int report_write(const char *run, struct lbs_err *err)
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
    char *used = calloc(1024, 1);
    const char *id = strrchr(run, '/');
    id = id && id[1] ? id + 1 : run;

    struct sb b = {0};
    sb_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset="
                "\"utf-8\">\n<title>lbscale results ");
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
                "same run, never with numbers from another machine.</p>\n"
                "<nav>");
    size_t i;
    json_t *t;
    json_array_foreach(all, i, t) {
        sb_printf(&b, "<a href=\"#%s\">", str(t, "id"));
        sb_html(&b, str(t, "title"));
        sb_puts(&b, "</a>");
    }
    sb_puts(&b, "<a href=\"#commands\">Command lines</a></nav>\n");
    json_array_foreach(all, i, t) {
        sb_printf(&b, "<h2 id=\"%s\">", str(t, "id"));
        sb_html(&b, str(t, "title"));
        sb_puts(&b, "</h2>\n");
        html_table(&b, t, strcmp(str(t, "id"), "machine") != 0);
        size_t j;
        json_t *x;
        json_array_foreach(json_object_get(t, "notes"), j, x) {
            sb_puts(&b, "<p class=\"note\">");
            sb_html(&b, json_string_value(x));
            sb_puts(&b, "</p>\n");
        }
        json_array_foreach(json_object_get(t, "figs"), j, x) {
            const char *pre = json_string_value(x);
            for (size_t k = 0; pngs && pngs[k] && k < 1024; k++)
                if (!used[k] && !strncmp(pngs[k], pre, strlen(pre))) {
                    html_figure(&b, run, pngs[k]);
                    used[k] = 1;
                }
        }
    }
    int other = 0;
    for (size_t k = 0; pngs && pngs[k] && k < 1024; k++)
        if (!used[k]) {
            if (!other++)
                sb_puts(&b, "<h2 id=\"other\">Other figures</h2>\n");
            html_figure(&b, run, pngs[k]);
        }
    html_commands(&b, run, meta);
    sb_printf(&b, "<p class=\"note\">Written by lbscale %s (git %s) "
                  "<code>report</code>; redraw the figures with "
                  "<code>lbscale plot RUN</code>, regenerate this page with "
                  "<code>lbscale report RUN</code>.</p>\n</body></html>\n",
              LBS_VERSION, LBS_GIT_REV);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/report.html", run);
    int rc = b.p ? lbs_write_atomic(path, b.p, b.len, err)
                 : lbs_err_set(err, -ENOMEM, "out of memory");
    free(b.p);
    for (size_t k = 0; pngs && pngs[k]; k++)
        free(pngs[k]);
    free(pngs);
    free(used);
    json_decref(all);
    json_decref(meta);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: lbscale report RUN_DIR [--text]\n"
"\n"
"Writes RUN_DIR/report.html: one self-contained page (figures embedded,\n"
"no external files) with the machine description from meta.json, a\n"
"summary table per section (suite entries, STREAM, optimizer steps,\n"
"compressors, collectives, training, simulator), the figures that\n"
"`lbscale plot` drew under RUN_DIR/plots/, and the exact command lines.\n"
"Run `lbscale plot RUN_DIR` first to (re)draw the figures.  The run's\n"
"*.jsonl files must be regular files of at most 256 MiB each.\n"
"\n"
"  --text      also print the summary tables on stdout\n"
"  -h, --help  this help\n");
}

int verb_report(int argc, char **argv)
{
    const char *run = NULL;
    int text = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--text")) {
            text = 1;
        } else if (argv[i][0] == '-') {
            cli_error("report", "unknown option '%s' (see --help)", argv[i]);
            return EXIT_BAD_INPUT;
        } else if (run) {
            cli_error("report", "one results directory only (see --help)");
            return EXIT_BAD_INPUT;
        } else {
            run = argv[i];
        }
    }
    if (!run) {
        cli_error("report", "expected a results directory (see --help)");
        return EXIT_BAD_INPUT;
    }
    struct lbs_err e;
    int rc = report_write(run, &e);
    if (rc) {
        cli_error("report", "%s", e.msg);
        return EXIT_BAD_INPUT;
    }
    if (text)
        report_summary_text(run, stdout);
    fprintf(stderr, "report: %s/report.html\n", run);
    return 0;
}
