/* plot.c - figures from a results run (`lbscale plot RUN` in
 * bench/results_verbs.c, and after a suite), drawn by the
 * gnuplot scripts in plots/ (one script per figure kind).  The JSONL files
 * are turned into whitespace tables under RUN/plots/ first, so each script
 * stays a plain gnuplot script that can be rerun by hand (the -e
 * assignments it needs are in its header comment).
 *
 * One function per figure kind; a kind whose results file is absent (or
 * has no usable rows) is skipped quietly.  Kinds:
 *   roofline     optim.jsonl     achieved GB/s per optimizer step vs in-place
 *   scaling      sim.jsonl       scaling efficiency vs GPUs per model/platform
 *   itersplit    sim.jsonl       compute / optimizer / exposed comm bars
 *   busbw        coll.jsonl      bus bandwidth vs message size per collective
 *   compress     compress.jsonl  fraction of STREAM vs relative error
 *   wire         compress.jsonl  bits on the wire per gradient element
 *   convergence  train.jsonl (+ sim.jsonl) accuracy vs step and vs
 *                simulated wall-clock at 1,024 GPUs (runs of a seed study
 *                left out: they have their own figure)
 *   study        train.jsonl runs repeated over seeds (issue 17's study):
 *                tools/study.py report, drawn by plots/study.gp
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbs_config.h"
#include "lbscale/file.h"
#include "plot.h"
#include "results.h"
#include "stats.h"
#include "strbuf.h"

extern char **environ;

/* The options of the plot_run_ex under way (set for its duration). */
static const char *plot_scales = PLOT_SCALES_DEFAULT;  /* itersplit bars */
static int plot_verbose;      /* print each PNG's path */
static int plot_drawn;        /* figures drawn by this plot_run */
static json_t *plot_json;     /* plot --json: the figures drawn */

/* A figure that would set unlike runs side by side is not drawn: one line
 * on stderr naming what differs, its old PNG/SVG removed (a figure from an
 * earlier plot of the run must not stand in for it), and with --json an
 * object {"figure", "refused"}. */
static void refuse(const char *outdir, const char *base, const char *why)
{
    fprintf(stderr, "lbscale: plot: %s not drawn: %s\n", base, why);
    static const char *const ext[] = {"png", "svg", "dat", "caption"};
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s.%s", outdir, base, ext[i]);
        unlink(path);
    }
    if (plot_json)
        json_array_append_new(plot_json, json_pack("{s:s,s:s}", "figure",
                                                   base, "refused", why));
}

const char *plot_scripts_dir(void)
{
    const char *e = getenv("LBSCALE_PLOTS");
    return e && *e ? e : LBS_PLOTS_DIR;
}

/* ------------------------------------------------------------------ */
/* captions                                                             */

/* What to look at in each figure kind, in one sentence: `plot --help`
 * lists them, plot writes <figure>.caption next to each figure (with what
 * that figure adds, e.g. an anchor's source) and the report prints it
 * under the figure.  prefix: the figure files' names (prefix then '.' or
 * '_'). */
static const struct figkind {
    const char *prefix, *input, *caption;
} figkinds[] = {
    {"roofline", "optim.jsonl",
     "Each optimizer step's achieved memory bandwidth, labelled with its "
     "fraction of the in-place bandwidth (a = a + s*c, which moves what it "
     "counts, as the in-place optimizer updates do) measured in the same "
     "run: the optimizer step is memory-bound, so the gap to the red tick "
     "is what a better kernel could still win."},
    {"scaling", "sim.jsonl (+ sim_anchors.jsonl)",
     "Simulated weak-scaling efficiency per optimizer (left) and the "
     "efficiency lost, 1 - E, on a log scale (right, where lines near 100% "
     "come apart); look at where each line crosses 90% and at the "
     "published anchors (filled diamonds) beside lbscale's prediction of "
     "the same setup (open diamonds)."},
    {"itersplit", "sim.jsonl",
     "Where a simulated iteration's time goes at a few GPU counts: the red "
     "part, communication not hidden behind compute, is what grows with "
     "scale and what communication-efficient optimizers remove."},
    {"busbw", "coll.jsonl",
     "Time per call (left, log-log as OSU prints it, bars from the fastest "
     "to the slowest call) and nccl-tests bus bandwidth (right, log scale) "
     "against message size: small messages are latency-bound, large ones "
     "should approach the memory line; dashed lines have more ranks than "
     "the machine has cores, so their times include waiting for a core."},
    {"compression_tradeoff", "train.jsonl + sim.jsonl",
     "LAMB's final test accuracy with each compressor (real 4-rank "
     "training) against the simulated BERT-Large step time at 1,024 GPUs "
     "on two networks: up and to the left is better, and a compressor "
     "pays off only where it saves more time than it costs accuracy."},
    {"compress", "compress.jsonl",
     "One row per compressor, sorted from exact to lossy: its compression "
     "and decompression throughput as a fraction of STREAM, the relative "
     "error one step introduces, and how much smaller than fp32 its wire "
     "format is (log scales); an error near 1 means a step keeps almost "
     "nothing of the gradient, which error feedback makes up over later "
     "steps."},
    {"wire", "compress.jsonl",
     "Bits each compressor sends per gradient element (log scale) against "
     "dense fp32's 32, with the reduction on each bar and the collective "
     "it needs: allgather payloads grow with the rank count, allreduce "
     "payloads do not."},
    {"convergence", "train.jsonl (+ sim.jsonl)",
     "Test accuracy of the real training runs against optimizer step "
     "(left) and against simulated wall-clock (right: the MLP's steps "
     "times the simulated BERT-Large step time of the same optimizer at "
     "1,024 GPUs): an optimizer that needs fewer steps is not faster if "
     "each step is slower at scale."},
    {"study", "train.jsonl (seed studies, via tools/study.py report)",
     "Runs repeated over seeds at one learning rate (issue 17's "
     "convergence study; the demo runs a small subset): left, final test "
     "accuracy against global batch per optimizer, mean and 95% "
     "confidence interval over seeds; right, test accuracy per epoch at "
     "the largest batch, mean and +-1 sd band.  Statistics and verdicts "
     "are in plots/study/ (table.md, verdicts.md)."},
    {"netsweep", "sim_netsweep.jsonl",
     "Simulated scaling efficiency at one GPU count as the network per "
     "node grows: where a line crosses 90% is the network that optimizer "
     "needs; dashed verticals are interconnects nodes are sold with."},
};

const char *plot_caption(const char *file)
{
    for (size_t i = 0; i < sizeof figkinds / sizeof figkinds[0]; i++) {
        size_t l = strlen(figkinds[i].prefix);
        if (!strncmp(file, figkinds[i].prefix, l) &&
            (file[l] == '.' || file[l] == '_' || !file[l]))
            return figkinds[i].caption;
    }
    return "";
}

/* ------------------------------------------------------------------ */
/* helpers                                                              */

/* A word safe inside a gnuplot '...' string and a file name. */
static void safe(const char *in, char *out, size_t len)
{
    size_t i = 0;
    for (; in && in[i] && i + 1 < len; i++)
        out[i] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789_.:+=,-", in[i]) ? in[i] : '_';
    out[i] = '\0';
    if (!i && len > 1)
        snprintf(out, len, "unknown");
}

/* Title-case a preset name for titles: bert-large -> BERT-Large. */
static void pretty(const char *in, char *out, size_t len)
{
    static const struct { const char *from, *to; } known[] = {
        {"bert-large", "BERT-Large"}, {"bert-xl", "BERT-XL"},
        {"gpt2-xl", "GPT-2 XL"}, {"swin-t", "Swin-T"}, {"swin-b", "Swin-B"},
        {"resnet-50", "ResNet-50"}, {"dgx-a100", "DGX-A100"},
        {"dgx-h100", "DGX-H100"}, {"eth-25g", "25G Ethernet"},
        {"eth-100g", "100G Ethernet"}, {"local", "this machine"}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(in, known[i].from)) {
            snprintf(out, len, "%s", known[i].to);
            return;
        }
    safe(in, out, len);
}

static const char *sget(json_t *r, const char *k)
{
    const char *s = json_string_value(lbs_row_field(r, k));
    return s ? s : "";
}

static double nget(json_t *r, const char *k)
{
    return lbs_row_num(lbs_row_field(r, k));
}

static double nget2(json_t *r, const char *a, const char *b)
{
    double v = nget(r, a);
    return isnan(v) ? nget(r, b) : v;
}

static json_t *rows_of(const char *run, const char *verb, struct lbs_err *err,
                       int *rc)
{
    json_t *rows = lbs_run_rows(run, verb, err);
    *rc = rows ? 0 : -EINVAL;
    if (rows && !json_array_size(rows)) {
        json_decref(rows);
        rows = NULL;
    }
    return rows;
}

/* Run gnuplot in dir with -e assignments and a script; 0 on success.
 * Running in the figures' own directory keeps every path out of the
 * gnuplot code: a run directory named x'; system('...'); y=' is only ever
 * a directory, never something gnuplot evaluates. */
static int run_gnuplot(const char *dir, const char *assign,
                       const char *script)
{
    char *argv[] = {"gnuplot", "-e", (char *)assign, (char *)script, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int st;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        return -ENOENT;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        return -EIO;
    return 0;
}

/* outdir/base.caption: the kind's sentence and what this figure adds
 * (extra: sentences with a leading space, or NULL). */
static int write_caption(const char *outdir, const char *base,
                         const char *extra, struct lbs_err *err)
{
    char path[PATH_MAX + 300];
    struct strbuf t = {0};
    sb_printf(&t, "%s%s\n", plot_caption(base), extra ? extra : "");
    snprintf(path, sizeof path, "%s/%s.caption", outdir, base);
    int rc = t.p ? lbs_write_atomic(path, t.p, t.len, err)
                 : lbs_err_set(err, -ENOMEM, "out of memory");
    free(t.p);
    return rc;
}

/* Whether name in dfd is a whole figure: a PNG ends with its IEND chunk,
 * an SVG with its closing tag.  gnuplot on a full disk can exit 0 with a
 * truncated file; such a file must never replace a good figure. */
static int figure_whole(int dfd, const char *name, int svg)
{
    static const unsigned char iend[8] = {'I', 'E', 'N', 'D',
                                          0xae, 0x42, 0x60, 0x82};
    char tail[64];
    struct stat st;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int ok = 0;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size >= 16) {
        off_t from = st.st_size > (off_t)sizeof tail
                     ? st.st_size - (off_t)sizeof tail : 0;
        ssize_t n = pread(fd, tail, sizeof tail, from);
        if (n >= 8 && svg)
            ok = memmem(tail, (size_t)n, "</svg>", 6) != NULL;
        else if (n >= 8)
            ok = !memcmp(tail + n - 8, iend, 8);
    }
    close(fd);
    return ok;
}

/* Move the figures gnuplot drew into the private directory tmp (in
 * outdir, open as dfd) to outdir/base.{png,svg}, both whole or neither;
 * then remove tmp. */
static int keep_figures(int dfd, const char *tmp, const char *base, int rc)
{
    static const char *const ext[] = {"png", "svg"};
    char from[2][400], to[2][300];
    for (int i = 0; i < 2; i++) {
        struct stat st;
        snprintf(from[i], sizeof from[i], "%s/%s.%s", tmp, base, ext[i]);
        snprintf(to[i], sizeof to[i], "%s.%s", base, ext[i]);
        if (!rc && !figure_whole(dfd, from[i], i))
            rc = -EFBIG;
        /* the final names are replaced only when they are regular files */
        if (!rc && !fstatat(dfd, to[i], &st, AT_SYMLINK_NOFOLLOW) &&
            !S_ISREG(st.st_mode))
            rc = -EEXIST;
    }
    for (int i = 0; i < 2; i++) {
        if (!rc && renameat(dfd, from[i], dfd, to[i]))
            rc = -EIO;
        unlinkat(dfd, from[i], 0);
    }
    unlinkat(dfd, tmp, AT_REMOVEDIR);
    return rc;
}

/* Write outdir/base.dat, then draw script.gp into outdir/base.{png,svg}
 * with "datafile='base.dat'; outbase='TMP/base'; <assign>", gnuplot
 * running in outdir, TMP a fresh private directory (lbs_tmp_create: an
 * unpredictable name, mode 0700, so nothing can be planted where gnuplot
 * writes).  base is a safe() word; assign holds only numbers and
 * assign_str() values. */
static int draw(const char *outdir, const char *base, const struct strbuf *dat,
                const char *script, const char *assign, struct lbs_err *err)
{
    char dpath[PATH_MAX + 300], gp[PATH_MAX + 64], sdir[PATH_MAX], tmp[64];
    snprintf(dpath, sizeof dpath, "%s/%s.dat", outdir, base);
    int rc = lbs_write_atomic(dpath, dat->p ? dat->p : "", dat->len, err);
    if (rc)
        return rc;
    if (!realpath(plot_scripts_dir(), sdir))
        return lbs_err_set(err, -ENOENT, "gnuplot scripts: %s: %s",
                           plot_scripts_dir(), strerror(errno));
    snprintf(gp, sizeof gp, "%s/%s.gp", sdir, script);
    int dfd = open(outdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 || lbs_tmp_create(dfd, tmp, sizeof tmp, 1) < 0) {
        int e = errno;
        if (dfd >= 0)
            close(dfd);
        return lbs_err_set(err, -EIO, "cannot create a temporary directory "
                           "in %s: %s", outdir, strerror(e));
    }
    size_t alen = strlen(assign) + 2 * strlen(base) + 128;
    char *a = malloc(alen);
    if (!a) {
        unlinkat(dfd, tmp, AT_REMOVEDIR);
        close(dfd);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    snprintf(a, alen, "datafile='%s.dat'; outbase='%s/%s'; %s", base, tmp,
             base, assign);
    rc = run_gnuplot(outdir, a, gp);
    free(a);
    rc = keep_figures(dfd, tmp, base, rc);
    close(dfd);
    if (rc == -ENOENT)
        return lbs_err_set(err, rc, "gnuplot not found (apt-get install "
                           "gnuplot-nox)");
    if (rc == -EFBIG)
        return lbs_err_set(err, -EIO, "gnuplot wrote a truncated %s figure "
                           "in %s (a full disk?); the old one is kept", base,
                           outdir);
    if (rc == -EEXIST)
        return lbs_err_set(err, -EINVAL, "%s/%s.png or .svg exists and is "
                           "not a regular file; not replaced", outdir, base);
    if (rc)
        return lbs_err_set(err, rc, "gnuplot failed on %s for %s.dat", gp,
                           base);
    if ((rc = write_caption(outdir, base, NULL, err)))
        return rc;
    plot_drawn++;
    if (plot_json) {
        char png[PATH_MAX + 300], svg[PATH_MAX + 300];
        snprintf(png, sizeof png, "%s/%s.png", outdir, base);
        snprintf(svg, sizeof svg, "%s/%s.svg", outdir, base);
        json_array_append_new(plot_json, json_pack("{s:s,s:s,s:s,s:s}",
            "figure", base, "png", png, "svg", svg, "caption",
            plot_caption(base)));
    } else if (plot_verbose) {
        printf("%s/%s.png\n", outdir, base);
    }
    return 0;
}

/* Append "name='value'; " to an assignment string.  Only printable ASCII
 * without ' \ ` $ @ passes (and UTF-8 bytes): nothing that could end the
 * string, start a command substitution or a macro, or a new line. */
static void assign_str(struct strbuf *a, const char *name, const char *value)
{
    char v[256];
    size_t i = 0;
    for (; value[i] && i + 1 < sizeof v; i++) {
        unsigned char c = (unsigned char)value[i];
        v[i] = (c >= 0x80 || (c >= 0x20 && c < 0x7f && !strchr("'\\`$@", c)))
               ? (char)c : '_';
    }
    v[i] = '\0';
    sb_printf(a, "%s='%s'; ", name, v);
}

/* Distinct string values of key over rows, in order of appearance. */
static json_t *distinct(json_t *rows, const char *key)
{
    json_t *out = json_array();
    size_t i, j;
    json_t *r, *x;
    json_array_foreach(rows, i, r) {
        const char *v = sget(r, key);
        int seen = 0;
        json_array_foreach(out, j, x)
            seen |= !strcmp(json_string_value(x), v);
        if (!seen)
            json_array_append_new(out, json_string(v));
    }
    return out;
}

/* ------------------------------------------------------------------ */
/* roofline: optim.jsonl                                                */

static int fig_roofline(json_t *rows, const char *run, const char *outdir,
                        struct lbs_err *err)
{
    (void)run;
    int rc = 0;
    struct strbuf d = {0};
    sb_printf(&d, "# optim gbps stream_gbps roofline_frac elements threads\n");
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        char nm[64];
        safe(sget(r, "optim"), nm, sizeof nm);
        sb_printf(&d, "%s %.4f %.4f %.4f %.0f %.0f\n", nm, nget(r, "gbps"),
                nget(r, "stream_gbps"), nget(r, "roofline_frac"),
                nget(r, "elements"), nget(r, "threads"));
    }
    /* a ratio above 1.05 is a step faster than memory allows: the bytes
     * model or the reference is wrong; flagged on the bars (roofline.gp)
     * and in the caption, with how the reference was taken */
    struct strbuf over = {0}, a = {0};
    int given = 0;
    json_array_foreach(rows, i, r) {
        given |= !strncmp(sget(r, "stream_ref"), "given", 5);
        if (nget(r, "roofline_frac") > 1.05)
            sb_printf(&over, "%s%s %.2f", over.len ? ", " : "",
                      sget(r, "optim"), nget(r, "roofline_frac"));
    }
    json_decref(rows);
    sb_printf(&a, "ref_given=%d; ", given);
    rc = draw(outdir, "roofline", &d, "roofline", a.p, err);
    if (!rc && over.len) {
        char cap[1024];
        snprintf(cap, sizeof cap, " Above 1.05 of the in-place bandwidth, "
                 "faster than memory allows, so the bytes model or the "
                 "reference is wrong: %s%s.", over.p, given
                 ? " (reference given once with --stream-gbps, not measured "
                   "next to each step)" : "");
        rc = write_caption(outdir, "roofline", cap, err);
    }
    free(over.p);
    free(a.p);
    free(d.p);
    return rc;
}

/* ------------------------------------------------------------------ */
/* simulator figures: sim.jsonl                                         */

/* Rows of one (model, platform) with usable gpus, last one per
 * (optim, gpus) kept; new reference. */
static json_t *sim_group(json_t *rows, const char *model, const char *plat)
{
    json_t *g = json_array();
    size_t i, j;
    json_t *r, *x;
    json_array_foreach(rows, i, r) {
        /* a compressed trace's rows belong to compression_tradeoff, not
         * to the optimizer's line */
        if (strcmp(sget(r, "model"), model) || strcmp(sget(r, "platform"), plat)
            || isnan(nget(r, "gpus")) || !*sget(r, "optim") ||
            *sget(r, "compress"))
            continue;
        int replaced = 0;
        json_array_foreach(g, j, x)
            if (!strcmp(sget(x, "optim"), sget(r, "optim")) &&
                nget(x, "gpus") == nget(r, "gpus")) {
                json_array_set(g, j, r);
                replaced = 1;
                break;
            }
        if (!replaced)
            json_array_append(g, r);
    }
    return g;
}

static double eff_of(json_t *r)
{
    double e = nget(r, "scaling_efficiency");
    return e > 1.5 ? e / 100 : e;   /* a percentage written by mistake */
}

/* One optimizer's efficiency curve, sorted by GPU count. */
struct curve {
    char name[256];      /* "sgd = lars = adamw" once grouped */
    double p[64], e[64], it[64];
    size_t np;
    double spread;       /* largest gap to the curves grouped into it */
};

/* Optimizers whose curves agree within this (0.25 percentage points) at
 * every GPU count are one line: seven lines drawn on top of each other
 * cannot be told apart, one line naming all seven can. */
#define SCALING_SAME 0.0025

static double curve_gap(const struct curve *a, const struct curve *b)
{
    if (a->np != b->np)
        return INFINITY;
    double gap = 0;
    for (size_t i = 0; i < a->np; i++) {
        if (a->p[i] != b->p[i])
            return INFINITY;
        gap = fmax(gap, fabs(a->e[i] - b->e[i]));
    }
    return gap;
}

static int cmp_curve_pt(const void *a, const void *b)
{
    return cli_cmp_double(a, b);
}

/* The curves of g, one per optimizer, those within SCALING_SAME merged
 * into the first of them.  Returns the count; c has room for cap. */
static size_t scaling_curves(json_t *g, struct curve *c, size_t cap)
{
    json_t *optims = distinct(g, "optim"), *o, *r;
    size_t i, j, n = 0;
    json_array_foreach(optims, i, o) {
        if (n == cap)
            break;
        struct curve *x = &c[n];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", json_string_value(o));
        double pts[64][3];
        json_array_foreach(g, j, r)
            if (!strcmp(sget(r, "optim"), x->name) && !isnan(eff_of(r)) &&
                x->np < 64) {
                pts[x->np][0] = nget(r, "gpus");
                pts[x->np][1] = eff_of(r);
                pts[x->np++][2] = nget(r, "iter_ms");
            }
        if (!x->np)
            continue;
        qsort(pts, x->np, sizeof pts[0], cmp_curve_pt);
        for (j = 0; j < x->np; j++) {
            x->p[j] = pts[j][0];
            x->e[j] = pts[j][1];
            x->it[j] = pts[j][2];
        }
        size_t k;
        for (k = 0; k < n; k++) {
            double gap = curve_gap(&c[k], x);
            if (gap <= SCALING_SAME) {
                size_t l = strlen(c[k].name);
                snprintf(c[k].name + l, sizeof c[k].name - l, " = %s",
                         x->name);
                c[k].spread = fmax(c[k].spread, gap);
                break;
            }
        }
        n += k == n;   /* a new line unless merged */
    }
    json_decref(optims);
    return n;
}

/* Published anchors of this model and platform (sim_anchors.jsonl rows
 * that name where they belong, `lbscale sim anchors`): one data block
 * "gpus published lbscale label", and a caption sentence per anchor. */
static int scaling_anchors(const char *run, const char *model,
                           const char *plat, struct strbuf *d, struct strbuf *cap,
                           char *title, size_t tlen)
{
    struct lbs_err e;
    int rc, n = 0;
    json_t *rows = rows_of(run, "sim_anchors", &e, &rc), *r;
    size_t i;
    json_array_foreach(rows, i, r) {
        double pub = nget(r, "published"), pred = nget(r, "lbscale");
        if (strcmp(sget(r, "model"), model) || strcmp(sget(r, "platform"),
                                                      plat) ||
            isnan(pub) || isnan(nget(r, "gpus")))
            continue;
        if (!n)
            sb_printf(d, "# published anchors: gpus published lbscale "
                       "label setup\n");
        char lab[200];
        safe(sget(r, "anchor"), lab, sizeof lab);
        for (char *q = lab; *q; q++)   /* safe() keeps no spaces */
            *q = *q == '_' ? ' ' : *q;
        char ps[32] = "?";   /* no prediction: gnuplot's missing value */
        if (!isnan(pred))
            snprintf(ps, sizeof ps, "%.6f", pred);
        sb_printf(d, "%.0f %.6f %s \"%s\" \"%s\"\n", nget(r, "gpus"), pub, ps,
                lab, sget(r, "setup"));
        /* the legend names a lone anchor, else points to the caption */
        if (!n)
            snprintf(title, tlen, "published: %s %.3g", sget(r, "optim"),
                     pub);
        else
            snprintf(title, tlen, "published anchors (see caption)");
        sb_printf(cap, " Anchor (filled diamond): %s = %.3g, published by %s",
                sget(r, "anchor"), pub, sget(r, "source"));
        if (!isnan(pred))
            sb_printf(cap, "; open diamond: lbscale's prediction for that "
                    "setup, %.3g (%s)", pred, sget(r, "note"));
        sb_printf(cap, ".");
        n++;
    }
    if (n)
        sb_printf(d, "\n\n");
    json_decref(rows);
    return n;
}

static int fig_scaling_one(json_t *g, const char *run, const char *model,
                           const char *plat, const char *outdir,
                           struct lbs_err *err)
{
    struct curve *c = calloc(64, sizeof *c);
    if (!c)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    size_t n = scaling_curves(g, c, 64);
    struct strbuf d = {0}, a = {0}, cap = {0};
    sb_printf(&d, "# gpus scaling_efficiency iter_ms (one block per line; "
                "optimizers within %.2f percentage points share one)\n",
            100 * SCALING_SAME);
    double maxp = 0, emin = 1;
    for (size_t i = 0; i < n; i++) {
        sb_printf(&d, "# %s (largest gap %.3f pp)\n", c[i].name,
                100 * c[i].spread);
        for (size_t x = 0; x < c[i].np; x++) {
            sb_printf(&d, "%.0f %.6f %.6f\n", c[i].p[x], c[i].e[x], c[i].it[x]);
            maxp = fmax(maxp, c[i].p[x]);
            emin = fmin(emin, c[i].e[x]);
        }
        sb_printf(&d, "\n\n");
        char var[32];
        snprintf(var, sizeof var, "t%zu", i + 1);
        assign_str(&a, var, c[i].name);
    }
    free(c);
    char atitle[256] = "";
    int nanch = n ? scaling_anchors(run, model, plat, &d, &cap, atitle,
                                    sizeof atitle) : 0;
    int rc = 0;
    if (n) {
        char sm[64], sp[64], pm[64], pp[64], base[200];
        safe(model, sm, sizeof sm);
        safe(plat, sp, sizeof sp);
        pretty(model, pm, sizeof pm);
        pretty(plat, pp, sizeof pp);
        snprintf(base, sizeof base, "scaling_%s_%s", sm, sp);
        sb_printf(&a, "n=%zu; nanch=%d; maxgpus=%.0f; emin=%.6f; same=%g; ", n,
                nanch, maxp, emin, 100 * SCALING_SAME);
        assign_str(&a, "model", pm);
        assign_str(&a, "platform", pp);
        assign_str(&a, "anchtitle", atitle);
        rc = draw(outdir, base, &d, "scaling", a.p, err);
        if (!rc)
            rc = write_caption(outdir, base, cap.p, err);
    }
    free(d.p);
    free(a.p);
    free(cap.p);
    return rc;
}

static int fig_itersplit_one(json_t *g, const char *model, const char *plat,
                             const char *outdir, struct lbs_err *err)
{
    /* the scales: those of --scales present in the data, else the
     * smallest, a middle and the largest */
    double have[4096], want[64];
    size_t nh = 0, nw = 0, i, j;
    json_t *r;
    json_array_foreach(g, i, r) {
        double p = nget(r, "gpus");
        int seen = 0;
        for (j = 0; j < nh; j++)
            seen |= have[j] == p;
        if (!seen && nh < 4096)
            have[nh++] = p;
    }
    if (!nh)
        return 0;
    qsort(have, nh, sizeof *have, cli_cmp_double);
    char sc[256];
    snprintf(sc, sizeof sc, "%s", plot_scales);
    for (char *t = strtok(sc, ","); t && nw < 64; t = strtok(NULL, ",")) {
        double v = atof(t);
        for (j = 0; j < nh; j++)
            if (have[j] == v)
                want[nw++] = v;
    }
    if (!nw) {
        want[nw++] = have[0];
        if (nh > 2)
            want[nw++] = have[nh / 2];
        if (nh > 1)
            want[nw++] = have[nh - 1];
    }
    json_t *optims = distinct(g, "optim");
    struct strbuf d = {0}, a = {0};
    sb_printf(&d, "# x optim gpus compute_ms optimizer_ms exposed_comm_ms "
                "(stacked bars; x positions with gaps between scales)\n");
    double x = 0;
    int ng = 0;
    for (size_t w = 0; w < nw; w++) {
        double x0 = x;
        int nb = 0;
        json_t *o;
        json_array_foreach(optims, i, o) {
            json_array_foreach(g, j, r) {
                if (strcmp(sget(r, "optim"), json_string_value(o)) ||
                    nget(r, "gpus") != want[w])
                    continue;
                double it = nget(r, "iter_ms"), c = nget(r, "compute_ms"),
                       ex = nget(r, "exposed_comm_ms"),
                       op = nget2(r, "optimizer_ms", "optim_ms");
                if (isnan(c) || isnan(ex))
                    continue;
                if (isnan(op))
                    op = isnan(it) ? 0 : fmax(0, it - c - ex);
                char nm[64];
                safe(json_string_value(o), nm, sizeof nm);
                sb_printf(&d, "%.1f %s %.0f %.6f %.6f %.6f\n", x, nm, want[w],
                        c, op, ex);
                x += 1;
                nb++;
                break;
            }
        }
        if (nb) {
            ng++;
            sb_printf(&a, "g%d='%.0f GPUs'; gx%d=%.2f; ", ng, want[w], ng,
                    (x0 + x - 1) / 2);
            x += 1;   /* gap */
        }
    }
    json_decref(optims);
    int rc = 0;
    if (ng) {
        char sm[64], sp[64], pm[64], pp[64], base[200];
        safe(model, sm, sizeof sm);
        safe(plat, sp, sizeof sp);
        pretty(model, pm, sizeof pm);
        pretty(plat, pp, sizeof pp);
        snprintf(base, sizeof base, "itersplit_%s_%s", sm, sp);
        sb_printf(&a, "ng=%d; xmax=%.1f; ", ng, x - 1);
        assign_str(&a, "model", pm);
        assign_str(&a, "platform", pp);
        rc = draw(outdir, base, &d, "itersplit", a.p, err);
    }
    free(d.p);
    free(a.p);
    return rc;
}

static int fig_sim(json_t *rows, const char *run, const char *outdir,
                   struct lbs_err *err, int which)
{
    int rc = 0;
    json_t *models = distinct(rows, "model");
    size_t i, j;
    json_t *m, *p;
    json_array_foreach(models, i, m) {
        json_t *plats = distinct(rows, "platform");
        json_array_foreach(plats, j, p) {
            json_t *g = sim_group(rows, json_string_value(m),
                                  json_string_value(p));
            if (json_array_size(g) && !rc)
                rc = which == 0
                    ? fig_scaling_one(g, run, json_string_value(m),
                                      json_string_value(p), outdir, err)
                    : fig_itersplit_one(g, json_string_value(m),
                                        json_string_value(p), outdir, err);
            json_decref(g);
        }
        json_decref(plats);
    }
    json_decref(models);
    json_decref(rows);
    return rc;
}

static int fig_scaling(json_t *rows, const char *run, const char *outdir,
                       struct lbs_err *err)
{
    return fig_sim(rows, run, outdir, err, 0);
}

static int fig_itersplit(json_t *rows, const char *run, const char *outdir,
                         struct lbs_err *err)
{
    return fig_sim(rows, run, outdir, err, 1);
}

/* ------------------------------------------------------------------ */
/* busbw: coll.jsonl                                                    */

static double last_num(const char *run, const char *verb, const char *field)
{
    struct lbs_err e;
    int rc;
    json_t *rows = rows_of(run, verb, &e, &rc);
    double v = NAN;
    for (size_t i = rows ? json_array_size(rows) : 0; isnan(v) && i-- > 0;)
        v = nget(json_array_get(rows, i), field);
    json_decref(rows);
    return v;
}

/* coll rows: nccl-tests "size" (else the payload "bytes"), GB/s fields
 * busbw_gbps/algbw_gbps (else busbw/algbw). */
static double coll_size(json_t *r) { return nget2(r, "size", "bytes"); }
static double coll_busbw(json_t *r) { return nget2(r, "busbw_gbps", "busbw"); }

/* The cores of the machine the run was made on (meta.json topology),
 * 0 when unknown: more ranks than cores means ranks take turns. */
static double run_cores(const char *run)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", run);
    json_t *m = json_load_file(path, 0, NULL);
    double c = nget(m, "topology.cores");
    if (!(c > 0))
        c = nget(m, "online_cpus");
    json_decref(m);
    return c > 0 ? c : 0;
}

/* Compressed patterns: the fraction of the dense-equivalent bytes they
 * move (lbscale coll --help), as text for the figure; NULL for dense
 * collectives. */
static const char *dense_fraction(const char *coll, double k, char *buf,
                                  size_t len)
{
    if (isnan(k))
        k = 0.1;   /* coll's default -k */
    if (!strcmp(coll, "masked_allreduce"))
        snprintf(buf, len, "k = %g", k);
    else if (!strcmp(coll, "topk_allgather"))
        snprintf(buf, len, "2k = %g (index + value)", 2 * k);
    else if (!strcmp(coll, "onebit"))
        snprintf(buf, len, "about 1/32 (one bit per value)");
    else
        return NULL;
    return buf;
}

/* One point of a busbw line. */
struct bpt { double b, bw, ab, tu, tmin, tmax; };

static int cmp_bpt(const void *a, const void *b)
{
    return cli_cmp_double(a, b);   /* by size, the first member */
}

/* The points of one (backend, collective, ranks), sorted by size, a
 * repeated size replacing the earlier row. */
static size_t busbw_points(json_t *rows, const char *backend,
                           const char *coll, double ranks, struct bpt *p,
                           size_t cap, double *density)
{
    size_t np = 0, i, j;
    json_t *r;
    json_array_foreach(rows, i, r) {
        if (strcmp(sget(r, "backend"), backend) || strcmp(sget(r, "coll"),
                                                          coll) ||
            nget(r, "ranks") != ranks || isnan(coll_busbw(r)) ||
            isnan(coll_size(r)))
            continue;
        size_t at = np;
        for (j = 0; j < np; j++)
            if (p[j].b == coll_size(r))
                at = j;
        if (at == cap)
            continue;
        p[at] = (struct bpt){coll_size(r), coll_busbw(r),
                             nget2(r, "algbw_gbps", "algbw"),
                             nget(r, "time_us"), nget(r, "time_us_min"),
                             nget(r, "time_us_max")};
        if (!isnan(nget(r, "density")))
            *density = nget(r, "density");
        np += at == np;
    }
    qsort(p, np, sizeof *p, cmp_bpt);
    return np;
}

static void num_or_missing(struct strbuf *d, const char *fmt, double v)
{
    if (isnan(v))
        sb_printf(d, " ?");
    else
        sb_printf(d, fmt, v);
}

static int fig_busbw_one(json_t *rows, const char *backend, const char *coll,
                         double link, const char *linkname, double cores,
                         const char *outdir, struct lbs_err *err)
{
    double ranks[256];
    size_t nr = 0, i, j;
    json_t *r;
    json_array_foreach(rows, i, r) {
        double n = nget(r, "ranks");
        if (strcmp(sget(r, "backend"), backend) ||
            strcmp(sget(r, "coll"), coll) || !(n >= 2))
            continue;   /* busbw of one rank is 0 by definition */
        int seen = 0;
        for (j = 0; j < nr; j++)
            seen |= ranks[j] == n;
        if (!seen && nr < 256)
            ranks[nr++] = n;
    }
    qsort(ranks, nr, sizeof *ranks, cli_cmp_double);
    struct strbuf d = {0}, a = {0};
    sb_printf(&d, "# bytes busbw_gbps algbw_gbps time_us time_us_min "
                "time_us_max (one block per rank count; ? = not recorded)\n");
    int n = 0, hasrange = 0;
    double density = NAN;
    struct bpt *p = malloc(4096 * sizeof *p);
    for (size_t q = 0; p && q < nr; q++) {
        double nodes = 1;
        json_array_foreach(rows, i, r)
            if (!strcmp(sget(r, "coll"), coll) && nget(r, "ranks") == ranks[q]
                && nget(r, "nodes") > nodes)
                nodes = nget(r, "nodes");
        size_t np = busbw_points(rows, backend, coll, ranks[q], p, 4096,
                                 &density);
        if (!np)
            continue;
        /* more ranks than cores (on every node): ranks wait for a core */
        int over = cores > 0 && ranks[q] > cores * nodes;
        sb_printf(&d, "# %.0f ranks%s\n", ranks[q], over ? " (oversubscribed)"
                                                       : "");
        for (size_t x = 0; x < np; x++) {
            sb_printf(&d, "%.0f %.6f", p[x].b, p[x].bw);
            num_or_missing(&d, " %.6f", p[x].ab);
            num_or_missing(&d, " %.3f", p[x].tu);
            num_or_missing(&d, " %.3f", p[x].tmin);
            num_or_missing(&d, " %.3f", p[x].tmax);
            sb_printf(&d, "\n");
            hasrange |= !isnan(p[x].tmin) && !isnan(p[x].tmax);
        }
        sb_printf(&d, "\n\n");
        n++;
        sb_printf(&a, "t%d='%.0f rank%s%s'; o%d=%d; ", n, ranks[q],
                ranks[q] == 1 ? "" : "s",
                over ? " (oversubscribed)" : "", n, over);
    }
    free(p);
    int rc = 0;
    if (n) {
        char sc[64], sb[64], base[160], frac[96];
        safe(coll, sc, sizeof sc);
        safe(backend, sb, sizeof sb);
        snprintf(base, sizeof base, "busbw_%s%s%s", sc, *backend ? "_" : "",
                 *backend ? sb : "");
        const char *df = dense_fraction(coll, density, frac, sizeof frac);
        sb_printf(&a, "n=%d; link=%.6f; cores=%.0f; dense=%d; hasrange=%d; ",
                n, isnan(link) ? 0.0 : link, cores, df != NULL, hasrange);
        assign_str(&a, "coll", sc);
        assign_str(&a, "backend", sb);
        assign_str(&a, "linkname", linkname);
        assign_str(&a, "densefrac", df ? df : "");
        rc = draw(outdir, base, &d, "busbw", a.p, err);
        if (!rc && df) {
            struct strbuf cap = {0};
            sb_printf(&cap, " %s is a compressed pattern: its busbw is the "
                    "dense-equivalent one (the bus bandwidth a dense fp32 "
                    "allreduce would need to take the same time) while it "
                    "moves only %s of those bytes, so it can lie above the "
                    "memory line.", coll, df);
            rc = write_caption(outdir, base, cap.p, err);
            free(cap.p);
        }
    }
    free(d.p);
    free(a.p);
    return rc;
}

static int fig_busbw(json_t *rows, const char *run, const char *outdir,
                     struct lbs_err *err)
{
    int rc = 0;
    /* the link limit: rows' own field, else STREAM copy of this run */
    double link = NAN;
    const char *linkname = "link limit";
    size_t i, j, k;
    json_t *r;
    json_array_foreach(rows, i, r) {
        double l = nget2(r, "link_gbps", "limit_gbps");
        if (!isnan(l) && (isnan(link) || l > link))
            link = l;
    }
    if (isnan(link)) {
        link = last_num(run, "stream", "copy_gbps");
        linkname = "STREAM copy (shared-memory limit)";
    }
    /* one figure per (backend, collective) */
    json_t *keys = json_array();
    json_array_foreach(rows, i, r) {
        char key[128];
        snprintf(key, sizeof key, "%s|%s", sget(r, "backend"), sget(r, "coll"));
        if (!*sget(r, "coll") || isnan(coll_size(r)) ||
            isnan(coll_busbw(r)) || !(nget(r, "ranks") >= 2))
            continue;
        int seen = 0;
        json_t *x;
        json_array_foreach(keys, j, x)
            seen |= !strcmp(json_string_value(x), key);
        if (!seen)
            json_array_append_new(keys, json_string(key));
    }
    double cores = run_cores(run);
    json_t *key;
    json_array_foreach(keys, k, key) {
        if (rc)
            break;
        char backend[64], coll[64];
        const char *bar = strchr(json_string_value(key), '|');
        snprintf(backend, sizeof backend, "%.*s",
                 (int)(bar - json_string_value(key)), json_string_value(key));
        snprintf(coll, sizeof coll, "%s", bar + 1);
        rc = fig_busbw_one(rows, backend, coll, link, linkname, cores, outdir,
                           err);
    }
    json_decref(keys);
    json_decref(rows);
    return rc;
}

/* ------------------------------------------------------------------ */
/* compressors: compress.jsonl                                          */

/* The last row per (compressor, params, elements); new reference. */
static json_t *compress_rows(json_t *rows)
{
    json_t *out = json_array();
    size_t i, j;
    json_t *r, *x;
    json_array_foreach(rows, i, r) {
        if (!*sget(r, "compressor") || isnan(nget(r, "gbps")))
            continue;
        int replaced = 0;
        json_array_foreach(out, j, x)
            if (!strcmp(sget(x, "compressor"), sget(r, "compressor")) &&
                !strcmp(sget(x, "params"), sget(r, "params")) &&
                nget(x, "elements") == nget(r, "elements")) {
                json_array_set(out, j, r);
                replaced = 1;
                break;
            }
        if (!replaced)
            json_array_append(out, r);
    }
    return out;
}

/* Label: the compressor, with its params when two rows share a name. */
static void compress_label(json_t *rows, json_t *r, char *out, size_t len)
{
    size_t i;
    json_t *x;
    int dup = 0;
    json_array_foreach(rows, i, x)
        dup += !strcmp(sget(x, "compressor"), sget(r, "compressor"));
    char buf[160];
    if (dup > 1 && *sget(r, "params"))
        snprintf(buf, sizeof buf, "%s:%s", sget(r, "compressor"),
                 sget(r, "params"));
    else
        snprintf(buf, sizeof buf, "%s", sget(r, "compressor"));
    safe(buf, out, len);
}

/* The smaller of a and b counting only positive values (NaN, 0 skipped). */
static double fmin_pos(double a, double b)
{
    return b > 0 && !(b >= a) ? b : a;
}

static double decade_below(double v) { return pow(10, floor(log10(v))); }
static double decade_above(double v) { return pow(10, ceil(log10(v))); }

/* One compressor's row of the dot plot. */
struct crow {
    char name[160], coll[64];
    double frac, dfrac, err, gbps, stream, elems, ratio;
};

static int cmp_crow(const void *a, const void *b)
{
    const struct crow *x = a, *y = b;
    return (x->err > y->err) - (x->err < y->err);
}

static int fig_compress(json_t *all, const char *run, const char *outdir,
                        struct lbs_err *err)
{
    (void)run;
    int rc = 0;
    json_t *rows = compress_rows(all);
    json_decref(all);
    size_t i, n = 0;
    json_t *r;
    struct crow *c = calloc(json_array_size(rows) + 1, sizeof *c);
    if (!c) {
        json_decref(rows);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    json_array_foreach(rows, i, r) {
        struct crow *x = &c[n];
        x->gbps = nget(r, "gbps");
        x->stream = nget(r, "stream_gbps");
        x->frac = nget(r, "stream_frac");
        if (isnan(x->frac) && x->stream > 0)
            x->frac = x->gbps / x->stream;
        /* decompression: the same STREAM as the denominator */
        x->dfrac = x->stream > 0 ? nget(r, "decompress_gbps") / x->stream
                                 : NAN;
        x->err = nget2(r, "rel_err", "rel_error");
        if (isnan(x->frac) || isnan(x->err))
            continue;
        x->elems = nget(r, "elements");
        x->ratio = nget2(r, "compression_ratio", "ratio");
        if (isnan(x->ratio) && nget(r, "wire_bytes") > 0)
            x->ratio = 4 * x->elems / nget(r, "wire_bytes");
        compress_label(rows, r, x->name, sizeof x->name);
        safe(*sget(r, "collective") ? sget(r, "collective") : "-", x->coll,
             sizeof x->coll);
        n++;
    }
    json_decref(rows);
    /* exact compressors first, then by growing error: reading down the
     * rows is reading from lossless to lossy */
    qsort(c, n, sizeof *c, cmp_crow);
    struct strbuf d = {0}, a = {0};
    sb_printf(&d, "# row compressor stream_frac rel_err gbps stream_gbps "
                "elements decompress_frac ratio collective (rel_err 0 = "
                "exact; -1 = not measured)\n");
    double elems = 0, sg = 0, flow = 1, fmx = 1, emin = 1, rmax = 10;
    int hasdec = 0;
    for (i = 0; i < n; i++) {
        hasdec |= !isnan(c[i].dfrac);
        flow = fmin_pos(fmin_pos(flow, c[i].frac), c[i].dfrac);
        fmx = fmax(fmx, fmax(c[i].frac, isnan(c[i].dfrac) ? 0 : c[i].dfrac));
        emin = fmin_pos(emin, c[i].err);
        rmax = fmax(rmax, isnan(c[i].ratio) ? 0 : c[i].ratio);
        sb_printf(&d, "%zu %s %.6f %.6g %.4f %.4f %.0f %.6f %.6g %s\n", i,
                c[i].name, c[i].frac, c[i].err, c[i].gbps, c[i].stream,
                c[i].elems, isnan(c[i].dfrac) ? -1 : c[i].dfrac,
                isnan(c[i].ratio) ? -1 : c[i].ratio, c[i].coll);
        elems = fmax(elems, c[i].elems);
        sg = isnan(c[i].stream) ? sg : c[i].stream;
    }
    free(c);
    if (n) {
        /* log axes in whole decades around the data; the error axis
         * reaches at least 1e-2 so "exact" has room on its left */
        sb_printf(&a, "n=%zu; elems=%.0f; stream=%.4f; flo=%g; fhi=%g; "
                "elo=%g; rhi=%g; hasdec=%d; ", n, elems, sg, decade_below(flow),
                fmx > 1.5 ? decade_above(fmx * 1.05) : 2,
                fmin(decade_below(emin), 1e-2), decade_above(rmax * 1.5),
                hasdec);
        rc = draw(outdir, "compress", &d, "compress", a.p, err);
    }
    free(d.p);
    free(a.p);
    return rc;
}

static int fig_wire(json_t *all, const char *run, const char *outdir,
                    struct lbs_err *err)
{
    (void)run;
    int rc = 0;
    json_t *rows = compress_rows(all);
    json_decref(all);
    struct strbuf d = {0};
    sb_printf(&d, "# compressor bits_per_element wire_bytes ratio elements "
                "collective\n");
    size_t i;
    json_t *r;
    int n = 0;
    double elems = 0;
    json_array_foreach(rows, i, r) {
        double w = nget(r, "wire_bytes"), el = nget(r, "elements");
        if (isnan(w) || !(el > 0))
            continue;
        char nm[160], coll[64];
        compress_label(rows, r, nm, sizeof nm);
        safe(*sget(r, "collective") ? sget(r, "collective") : "-", coll,
             sizeof coll);
        double ratio = nget2(r, "compression_ratio", "ratio");
        if (isnan(ratio))
            ratio = 4 * el / w;
        sb_printf(&d, "%s %.6g %.0f %.6g %.0f %s\n", nm, 8 * w / el, w, ratio,
                el, coll);
        elems = fmax(elems, el);
        n++;
    }
    json_decref(rows);
    if (n) {
        char a[64];
        snprintf(a, sizeof a, "elems=%.0f; ", elems);
        rc = draw(outdir, "wire", &d, "wire", a, err);
    }
    free(d.p);
    return rc;
}

/* ------------------------------------------------------------------ */
/* convergence: train.jsonl (+ sim.jsonl)                               */

/* The sim rows used for simulated wall-clock: at 1,024 GPUs (else the
 * largest scale), model bert-large when present (else the first),
 * platform dgx-a100 when present (else the first). */
static json_t *pick_sim(const char *run, char *desc, size_t dlen)
{
    struct lbs_err e;
    int rc;
    json_t *rows = rows_of(run, "sim", &e, &rc);
    desc[0] = '\0';
    if (!rows)
        return NULL;
    json_t *models = distinct(rows, "model"), *plats = distinct(rows,
                                                                "platform");
    const char *model = json_string_value(json_array_get(models, 0));
    const char *plat = json_string_value(json_array_get(plats, 0));
    if (!model || !plat) {      /* no sim row names a model and platform */
        json_decref(models);
        json_decref(plats);
        json_decref(rows);
        return NULL;
    }
    size_t i;
    json_t *x;
    json_array_foreach(models, i, x)
        if (!strcmp(json_string_value(x), "bert-large"))
            model = "bert-large";
    json_array_foreach(plats, i, x)
        if (!strcmp(json_string_value(x), "dgx-a100"))
            plat = "dgx-a100";
    json_t *g = sim_group(rows, model, plat);
    double P = 0;
    json_array_foreach(g, i, x)
        if (nget(x, "gpus") == 1024 || (P != 1024 && nget(x, "gpus") > P))
            P = nget(x, "gpus");
    json_t *out = json_array();
    json_array_foreach(g, i, x)
        if (nget(x, "gpus") == P && !isnan(nget(x, "iter_ms")))
            json_array_append(out, x);
    char pm[64], pp[64];
    pretty(model ? model : "", pm, sizeof pm);
    pretty(plat ? plat : "", pp, sizeof pp);
    snprintf(desc, dlen, "%.0f GPUs (%s step time on %s)", P, pm, pp);
    json_decref(g);
    json_decref(models);
    json_decref(plats);
    json_decref(rows);
    if (!json_array_size(out)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* At most this many series in one panel (legible lines and legend): more
 * runs are split over convergence_1, convergence_2, ... (the report shows
 * them together, each with the same caption). */
#define PLOT_SERIES_MAX 8

/* One convergence panel of runs[from, to) (runs with a curve), as base;
 * left/why: the runs of another configuration left out, for the caption. */
static int draw_convergence(const char *outdir, const char *base,
                            json_t *runs, size_t from, size_t to,
                            json_t *sim, const char *desc, size_t left,
                            const char *why, struct lbs_err *err)
{
    int rc = 0;
    struct strbuf d = {0}, a = {0};
    sb_printf(&d, "# step test_accuracy_pct simulated_s (one block per run; "
                "? = no simulator row for this optimizer)\n");
    int n = 0, nsim = 0;
    struct strbuf simidx = {0}, nosim = {0};
    sb_printf(&simidx, "%s", "");
    sb_printf(&nosim, "%s", "");
    for (size_t i = from; i < to; i++) {
        json_t *x = json_array_get(runs, i);
        json_t *c = json_object_get(x, "curve");
        double iter_s = NAN;
        json_t *s;
        size_t k;
        json_array_foreach(sim, k, s)
            if (!strcmp(sget(s, "optim"), sget(x, "optim")))
                iter_s = nget(s, "iter_ms") / 1e3;
        nsim += !isnan(iter_s);
        /* the label: optimizer name (+ compressor), the spec when names
         * repeat */
        const char *nm = *sget(x, "name") ? sget(x, "name")
                                          : sget(x, "optim");
        int dup = 0;
        json_t *y;
        json_array_foreach(runs, k, y)
            dup += !strcmp(*sget(y, "name") ? sget(y, "name")
                                            : sget(y, "optim"), nm);
        /* same optimizer at several batch sizes (a convergence study):
         * name the batch, else the spec tells the runs apart */
        char lab[160], tmp[300];
        json_int_t batch = json_integer_value(json_object_get(x, "batch"));
        if (dup > 1 && batch > 0)
            snprintf(tmp, sizeof tmp, "%s B=%lld", nm, (long long)batch);
        else
            snprintf(tmp, sizeof tmp, "%s", dup > 1 ? sget(x, "spec") : nm);
        safe(tmp, lab, sizeof lab);
        sb_printf(&d, "# %s\n", lab);
        json_array_foreach(c, k, y) {
            double acc = nget(y, "test_accuracy"), st = nget(y, "step");
            if (isnan(acc) || isnan(st))
                continue;
            if (acc <= 1)
                acc *= 100;
            if (isnan(iter_s))
                sb_printf(&d, "%.0f %.4f ?\n", st, acc);
            else
                sb_printf(&d, "%.0f %.4f %.6g\n", st, acc, st * iter_s);
        }
        sb_printf(&d, "\n\n");
        n++;
        char var[16];
        snprintf(var, sizeof var, "t%d", n);
        assign_str(&a, var, lab);
        if (isnan(iter_s))
            sb_printf(&nosim, "%s%s", nosim.len ? " " : "", lab);
        else
            sb_printf(&simidx, "%s%d", simidx.len ? " " : "", n);
    }
    if (n) {
        /* the batch the panel's runs share, in its title (the legend
         * names it only where an optimizer repeats) */
        json_int_t b0 = json_integer_value(
            json_object_get(json_array_get(runs, from), "batch"));
        for (size_t i = from; i < to; i++)
            if (json_integer_value(json_object_get(json_array_get(runs, i),
                                                   "batch")) != b0)
                b0 = 0;
        char cfg[64] = "";
        if (b0 > 0)
            snprintf(cfg, sizeof cfg, "global batch %lld", (long long)b0);
        sb_printf(&a, "n=%d; has_sim=%d; ", n, nsim > 0);
        assign_str(&a, "cfg", cfg);
        assign_str(&a, "simdesc", desc);
        assign_str(&a, "simidx", simidx.p);
        assign_str(&a, "nosim", nosim.p);
        rc = draw(outdir, base, &d, "convergence", a.p, err);
        if (!rc && left) {   /* said on the figure and on stderr */
            char cap[400];
            snprintf(cap, sizeof cap, " %zu run%s of another configuration "
                     "left out (%s): only like runs are set side by side.",
                     left, left > 1 ? "s" : "", why);
            if (!strcmp(base, "convergence") || !strcmp(base, "convergence_1"))
                fprintf(stderr, "lbscale: plot: convergence:%s\n", cap);
            rc = write_caption(outdir, base, cap, err);
        }
    }
    free(d.p);
    free(a.p);
    free(simidx.p);
    free(nosim.p);
    return rc;
}

/* A final row of a seed study: --lr-base given (lr_base recorded) and
 * another final row of the same spec, batch, ranks and rate with another
 * seed.  fig_study draws these; fig_convergence leaves them out. */
static int study_row(json_t *rows, json_t *r)
{
    if (strcmp(sget(r, "event"), "final") || isnan(nget(r, "lr_base")))
        return 0;
    size_t i;
    json_t *x;
    json_array_foreach(rows, i, x)
        if (x != r && !strcmp(sget(x, "event"), "final") &&
            !strcmp(sget(x, "spec"), sget(r, "spec")) &&
            nget(x, "global_batch") == nget(r, "global_batch") &&
            nget(x, "ranks") == nget(r, "ranks") &&
            nget(x, "lr_base") == nget(r, "lr_base") &&
            nget(x, "seed") != nget(r, "seed"))
            return 1;
    return 0;
}

static int fig_convergence(json_t *rows, const char *run, const char *outdir,
                           struct lbs_err *err)
{
    int rc = 0;
    char desc[256];
    json_t *sim = pick_sim(run, desc, sizeof desc);
    /* runs: final rows with a curve; or bare epoch rows grouped by optim */
    json_t *runs = json_array(), *ref = NULL;
    size_t i, j, left = 0;
    json_t *r, *x;
    char why[256] = "";
    json_array_foreach(rows, i, r) {
        if (study_row(rows, r))
            continue;
        if (json_is_array(json_object_get(r, "curve"))) {
            /* like with like: runs of the first run's configuration only */
            if (!lbs_train_like_first(&ref, r, &left, why, sizeof why))
                continue;
            /* the label: LAMB with a compressor is another line than
             * plain LAMB (the simulated time stays the optimizer's) */
            char nm[256];
            snprintf(nm, sizeof nm, "%s%s%s", sget(r, "optim"),
                     *sget(r, "compress") ? "+" : "", sget(r, "compress"));
            json_array_append_new(runs, json_pack("{s:s,s:s,s:s,s:O,s:I}",
                "optim", sget(r, "optim"), "name", nm, "spec",
                sget(r, "spec"), "curve", json_object_get(r, "curve"),
                "batch",
                json_integer_value(json_object_get(r, "global_batch"))));
        } else if (!strcmp(sget(r, "event"), "epoch")) {
            json_t *hit = NULL;
            json_array_foreach(runs, j, x)
                if (!strcmp(sget(x, "optim"), sget(r, "optim")) &&
                    json_is_true(json_object_get(x, "bare")))
                    hit = x;
            if (!hit) {
                hit = json_pack("{s:s,s:s,s:[],s:b}", "optim",
                                sget(r, "optim"), "spec", sget(r, "optim"),
                                "curve", "bare", 1);
                json_array_append_new(runs, hit);
            }
            json_array_append(json_object_get(hit, "curve"), r);
        }
    }
    json_decref(rows);
    /* the runs with a curve, in panels of at most PLOT_SERIES_MAX */
    json_t *drawn = json_array();
    json_array_foreach(runs, i, x)
        if (json_array_size(json_object_get(x, "curve")))
            json_array_append(drawn, x);
    size_t nr = json_array_size(drawn);
    size_t panels = (nr + PLOT_SERIES_MAX - 1) / PLOT_SERIES_MAX;
    rc = 0;
    for (size_t p = 0; p < panels && !rc; p++) {
        char base[32] = "convergence";
        if (panels > 1)
            snprintf(base, sizeof base, "convergence_%zu", p + 1);
        /* even panels: 9 runs are 5 + 4, not 8 + 1 */
        size_t from = p * nr / panels, to = (p + 1) * nr / panels;
        rc = draw_convergence(outdir, base, drawn, from, to, sim, desc, left,
                              why, err);
    }
    json_decref(drawn);
    json_decref(runs);
    json_decref(sim);
    return rc;
}

/* ------------------------------------------------------------------ */
/* study: train.jsonl runs repeated over seeds                          */

/* tools/study.py: $LBSCALE_STUDY, else the source tree's. */
static const char *plot_study_script(void)
{
    const char *e = getenv("LBSCALE_STUDY");
    return e && *e ? e : LBS_STUDY_PY;
}

/* tools/study.py report ROWS --out outdir/study (ROWS: a directory with
 * the seed study's rows alone), its output in outdir/study.log: 0,
 * -ENOENT when it cannot be started, -EIO when it fails. */
static int run_study_py(const char *rowsdir, const char *outdir)
{
    char sdir[PATH_MAX + 16], log[PATH_MAX + 16];
    snprintf(sdir, sizeof sdir, "%s/study", outdir);
    snprintf(log, sizeof log, "%s/study.log", outdir);
    char *argv[] = {(char *)plot_study_script(), "report", (char *)rowsdir,
                    "--out", sdir, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int st;
    posix_spawn_file_actions_init(&fa);
    /* O_NOFOLLOW: a link planted at plots/study.log is not written
     * through (the spawn fails instead) */
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT |
                                     O_TRUNC | O_NOFOLLOW, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        return -ENOENT;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        return -EIO;
    return 0;
}

/* outdir/study-rows/train.jsonl: the study rows of rows (study_row), so
 * that tools/study.py reads the seed study without the run's other
 * training runs.  Sets the largest batch, seed and epoch count. */
static int write_study_rows(json_t *rows, const char *outdir, double *big,
                            double *seeds, double *epochs,
                            struct lbs_err *err)
{
    char dir[PATH_MAX + 16], path[PATH_MAX + 32], sdir[PATH_MAX + 16];
    /* both directories real ones of the run: study.py writes into study/ */
    int rc = lbs_run_subdir(outdir, "study-rows", dir, sizeof dir, err);
    if (rc)
        return rc;
    snprintf(path, sizeof path, "%s/train.jsonl", dir);
    struct strbuf t = {0};
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        if (!study_row(rows, r))
            continue;
        char *line = json_dumps(r, JSON_COMPACT);
        if (line)
            sb_printf(&t, "%s\n", line);
        free(line);
        *big = fmax(*big, nget(r, "global_batch"));
        *seeds = fmax(*seeds, nget(r, "seed"));
        *epochs = fmax(*epochs, nget(r, "epochs"));
    }
    if (*big > 0)
        rc = lbs_run_subdir(outdir, "study", sdir, sizeof sdir, err);
    if (!rc && *big > 0)
        rc = lbs_write_atomic(path, t.p ? t.p : "", t.len, err);
    free(t.p);
    return rc;
}

/* Runs repeated over seeds (study_row): tools/study.py report computes
 * the statistics into plots/study/ and plots/study.gp draws them, the
 * figure of the full study (docs/studies.md) at the run's size.  A
 * failed entry of the study (no row) is not counted here, where
 * study.py, given the run's directory, would count it as diverged. */
/* Whether tools/study.py report found points, in both panels, for an
 * optimizer that plots/study.gp draws (its study/study_have.gp: bhave,
 * ehave): a study of DmSGD and DecentLaM seeds alone has none, and
 * gnuplot refuses an empty plot list. */
static int study_has_points(const char *outdir)
{
    char path[PATH_MAX + 32], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/study/study_have.gp", outdir);
    if (lbs_read_file(path, 64 << 10, &text, &len, NULL))
        return 1;       /* let gnuplot say what is wrong */
    /* both panels need a line: an empty one is an error to gnuplot */
    int both = strstr(text, "bhave = \"\"") == NULL &&
               strstr(text, "ehave = \"\"") == NULL;
    free(text);
    return both;
}

static int fig_study(json_t *rows, const char *run, const char *outdir,
                     struct lbs_err *err)
{
    int rc = 0;
    double big = 0, seeds = 0, epochs = 0;
    rc = write_study_rows(rows, outdir, &big, &seeds, &epochs, err);
    json_decref(rows);
    if (rc || big <= 0)
        return rc;
    char rowsdir[PATH_MAX + 16];
    snprintf(rowsdir, sizeof rowsdir, "%s/study-rows", outdir);
    if ((rc = run_study_py(rowsdir, outdir)))
        return lbs_err_set(err, rc == -ENOENT ? -EIO : rc, "%s: %s report "
                           "failed (see %s/study.log)", run,
                           plot_study_script(), outdir);
    if (!study_has_points(outdir))
        return 0;   /* seeds of no optimizer study.gp draws (DmSGD...) */
    struct strbuf d = {0}, a = {0};
    sb_printf(&d, "# statistics and verdicts: study/ (tools/study.py "
                  "report): table.md, verdicts.md, study.json\n");
    char note[128];
    snprintf(note, sizeof note, "seeds 1-%.0f, %.3g epochs per run; "
             "statistics in plots/study/", seeds, epochs);
    sb_printf(&a, "big='%.0f'; dir='study'; ", big);
    assign_str(&a, "note", note);
    rc = d.p && a.p ? draw(outdir, "study", &d, "study", a.p, err)
                    : lbs_err_set(err, -ENOMEM, "out of memory");
    free(d.p);
    free(a.p);
    return rc;
}

/* ------------------------------------------------------------------ */
/* compression_tradeoff: train.jsonl + sim.jsonl                        */

/* A compressor setting without error feedback and seeds, as the
 * compression study names it: "topk:k=0.01,ef=1" -> "topk:k=0.01",
 * "powersgd:r=4,ef=1" -> "powersgd:r=4", "" or "none" -> "none". */
static void comp_key(const char *spec, char *out, size_t len)
{
    if (!spec || !*spec || !strcmp(spec, "none")) {
        snprintf(out, len, "none");
        return;
    }
    const char *colon = strchr(spec, ':');
    int nl = colon ? (int)(colon - spec) : (int)strlen(spec);
    snprintf(out, len, "%.*s", nl, spec);
    for (const char *p = colon; p && *p; p = strchr(p + 1, ',')) {
        const char *kv = p + 1;
        if ((kv[0] == 'k' || kv[0] == 'r') && kv[1] == '=') {
            snprintf(out + strlen(out), len - strlen(out), ":%c=%g", kv[0],
                     atof(kv + 2));
            return;
        }
    }
}

/* LAMB's final test accuracy (%) per compressor key, the last run of
 * each; new object {key: row}.  Like with like: every compressed run
 * must share the configuration of the first (ranks, epochs, batch, model,
 * data: lbs_train_config_differs), and "none" is the last dense LAMB run
 * of that same configuration, not merely the last dense LAMB run (the
 * demo's 1-rank study runs are dense LAMB too).  NULL with why set when
 * the runs differ. */
static json_t *tradeoff_accuracy(const char *run, char *why, size_t len)
{
    struct lbs_err e;
    int rc;
    json_t *rows = rows_of(run, "train", &e, &rc), *r, *out = json_object();
    json_t *ref = NULL, *dense = NULL;
    size_t i;
    char d[256];
    int unlike = 0, ndense = 0;
    json_array_foreach(rows, i, r) {
        const char *ev = sget(r, "event");
        if ((*ev && strcmp(ev, "final")) || strcmp(sget(r, "optim"), "lamb")
            || isnan(nget(r, "test_accuracy")))
            continue;
        char key[128];
        comp_key(sget(r, "compress"), key, sizeof key);
        if (!strcmp(key, "none"))
            continue;
        if (!ref)
            ref = r;
        else if (!unlike && lbs_train_config_differs(ref, r, d, sizeof d)) {
            snprintf(why, len, "the compressed LAMB runs differ in %s", d);
            unlike = 1;
        }
        json_object_set(out, key, r);
    }
    json_array_foreach(rows, i, r) {   /* the dense point */
        const char *ev = sget(r, "event");
        if ((*ev && strcmp(ev, "final")) || strcmp(sget(r, "optim"), "lamb")
            || isnan(nget(r, "test_accuracy")) || *sget(r, "compress"))
            continue;
        ndense++;
        if (!ref || !lbs_train_config_differs(ref, r, d, sizeof d))
            dense = r;
        else if (!unlike && ndense == 1)
            snprintf(why, len, "no dense LAMB run of the compressed runs' "
                     "configuration (%s)", d);
    }
    if (dense)
        json_object_set(out, "none", dense);
    else if (ref && ndense && !unlike)
        unlike = 1;   /* why was set at the first dense run */
    json_decref(rows);
    if (unlike) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The simulated BERT-Large rows of LAMB, dense and compressed, at the
 * largest GPU count that has a compressed one (1,024 in the demo). */
static json_t *tradeoff_sim(const char *run, double *P)
{
    struct lbs_err e;
    int rc;
    json_t *rows = rows_of(run, "sim", &e, &rc), *r, *out = json_array();
    size_t i;
    *P = 0;
    json_array_foreach(rows, i, r)
        if (!strcmp(sget(r, "model"), "bert-large") && *sget(r, "compress")
            && strcmp(sget(r, "compress"), "none"))
            *P = fmax(*P, nget(r, "gpus"));
    json_array_foreach(rows, i, r) {
        const char *o = sget(r, "optim");
        if (!strcmp(sget(r, "model"), "bert-large") && nget(r, "gpus") == *P
            && !isnan(nget(r, "iter_ms")) &&
            (!strcmp(o, "lamb") || !strncmp(o, "lamb+", 5)))
            json_array_append(out, r);
    }
    json_decref(rows);
    return out;
}

static int fig_tradeoff(json_t *rows, const char *run, const char *outdir,
                        struct lbs_err *err)
{
    (void)rows;   /* reads its own (tradeoff_accuracy, the sims) */
    double P;
    char why[512] = "";
    json_t *acc = tradeoff_accuracy(run, why, sizeof why);
    if (!acc) {
        refuse(outdir, "compression_tradeoff", why);
        return 0;
    }
    json_t *sim = tradeoff_sim(run, &P);
    json_t *plats = distinct(sim, "platform"), *pl, *r;
    struct strbuf d = {0}, a = {0}, cap = {0};
    sb_printf(&d, "# simulated_ms_per_step accuracy_pct label (one block per "
                "platform)\n");
    size_t i, j;
    int nb = 0, npts = 0, nocost = 0;
    json_t *any = NULL;
    json_array_foreach(plats, i, pl) {
        int n = 0;
        json_array_foreach(sim, j, r) {
            char key[128];
            if (strcmp(sget(r, "platform"), json_string_value(pl)))
                continue;
            comp_key(sget(r, "compress"), key, sizeof key);
            json_t *t = json_object_get(acc, key);
            if (!t)
                continue;
            double ac = nget(t, "test_accuracy");
            if (!n++)
                sb_printf(&d, "# %s\n", json_string_value(pl));
            sb_printf(&d, "%.4f %.4f \"%s\"\n", nget(r, "iter_ms"),
                    ac <= 1 ? 100 * ac : ac, key);
            nocost |= strcmp(key, "none") && !(nget(r, "compress_ms") > 0);
            any = t;
        }
        if (!n)
            continue;
        sb_printf(&d, "\n\n");
        char var[32], pp[64];
        pretty(json_string_value(pl), pp, sizeof pp);
        snprintf(var, sizeof var, "t%d", ++nb);
        assign_str(&a, var, pp);
        npts += n;
    }
    int rc = 0;
    /* one compressor beside dense LAMB at least, or there is no trade */
    if (nb && npts > nb) {
        char ds[64];
        safe(sget(any, "dataset"), ds, sizeof ds);
        sb_printf(&a, "n=%d; gpus=%.0f; ranks=%.0f; ", nb, P,
                nget(any, "ranks"));
        assign_str(&a, "dataset", ds);
        if (nocost)
            sb_printf(&cap, " The simulated times leave out the compressors' "
                    "own GPU time: their traces carry no compress_traffic "
                    "model.");
        rc = draw(outdir, "compression_tradeoff", &d, "compression_tradeoff",
                  a.p, err);
        if (!rc && cap.len)
            rc = write_caption(outdir, "compression_tradeoff", cap.p, err);
    }
    free(d.p);
    free(a.p);
    free(cap.p);
    json_decref(plats);
    json_decref(sim);
    json_decref(acc);
    return rc;
}

/* ------------------------------------------------------------------ */
/* netsweep: sim_netsweep.jsonl, one figure per (model, platform, GPUs)  */

static int cmp_row_gbps(const void *a, const void *b)
{
    double x = nget(*(json_t *const *)a, "node_gbps");
    double y = nget(*(json_t *const *)b, "node_gbps");
    return (x > y) - (x < y);
}

static int fig_netsweep(json_t *rows, const char *run, const char *outdir,
                        struct lbs_err *err)
{
    (void)run;
    int rc = 0;
    /* the last sweep of the run: its model, platform and GPU count */
    json_t *last = json_array_get(rows, json_array_size(rows) - 1);
    const char *model = sget(last, "model"), *plat = sget(last, "platform");
    double gpus = nget(last, "gpus");
    json_t *g = json_array(), *r;
    size_t i;
    json_array_foreach(rows, i, r)
        if (!strcmp(sget(r, "model"), model) &&
            !strcmp(sget(r, "platform"), plat) && nget(r, "gpus") == gpus)
            json_array_append(g, r);
    json_t *optims = distinct(g, "optim"), *o;
    struct strbuf d = {0}, a = {0};
    sb_printf(&d, "# node_gbps scaling_efficiency iter_ms (one block per "
                "optimizer)\n");
    int n = 0;
    json_array_foreach(optims, i, o) {
        json_t *pr[512];
        size_t np = 0, j;
        json_array_foreach(g, j, r)
            if (!strcmp(sget(r, "optim"), json_string_value(o)) && np < 512)
                pr[np++] = r;
        qsort(pr, np, sizeof *pr, cmp_row_gbps);
        sb_printf(&d, "# %s\n", json_string_value(o));
        for (size_t x = 0; x < np; x++)
            sb_printf(&d, "%.0f %.6f %.6f\n", nget(pr[x], "node_gbps"),
                    nget(pr[x], "scaling_efficiency"), nget(pr[x], "iter_ms"));
        sb_printf(&d, "\n\n");
        char var[16];
        snprintf(var, sizeof var, "t%d", ++n);
        assign_str(&a, var, json_string_value(o));
    }
    char sm[64], sp[64], pm[64], pp[64], base[200];
    safe(model, sm, sizeof sm);
    safe(plat, sp, sizeof sp);
    pretty(model, pm, sizeof pm);
    pretty(plat, pp, sizeof pp);
    snprintf(base, sizeof base, "netsweep_%s_%s_%.0f", sm, sp, gpus);
    sb_printf(&a, "n=%d; gpus=%.0f; ", n, gpus);
    assign_str(&a, "model", pm);
    assign_str(&a, "platform", pp);
    rc = n ? draw(outdir, base, &d, "netsweep", a.p, err) : 0;
    free(d.p);
    free(a.p);
    json_decref(optims);
    json_decref(g);
    json_decref(rows);
    return rc;
}

/* ------------------------------------------------------------------ */

static int plot_kinds(const char *run, struct lbs_err *err)
{
    int vrc = lbs_run_valid(run, err);
    if (vrc)
        return vrc;
    char outdir[PATH_MAX];
    int src = lbs_run_subdir(run, "plots", outdir, sizeof outdir, err);
    if (src)
        return src;
    lbs_clean_stale_tmp(outdir);   /* figures of a plot that was killed */
    /* each figure with the rows of RUN/KIND.jsonl (it takes the
     * reference); none there: nothing to draw, which is not an error */
    static const struct {
        const char *kind;   /* NULL: the figure reads what it needs */
        int (*draw)(json_t *rows, const char *run, const char *outdir,
                    struct lbs_err *err);
    } figs[] = {{"optim", fig_roofline},   {"sim", fig_scaling},
                {"sim", fig_itersplit},    {"coll", fig_busbw},
                {"compress", fig_compress}, {"compress", fig_wire},
                {"train", fig_convergence}, {"train", fig_study},
                {"sim_netsweep", fig_netsweep}, {NULL, fig_tradeoff}};
    /* one kind failing does not stop the others; the first error wins */
    int first = 0;
    struct lbs_err e;
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++) {
        int rc = 0;
        json_t *rows = figs[i].kind ? rows_of(run, figs[i].kind, &e, &rc)
                                    : NULL;
        if (rows || !figs[i].kind)
            rc = figs[i].draw(rows, run, outdir, &e);
        if (rc == -ENOENT && !first) {   /* no gnuplot: no use going on */
            *err = e;
            return rc;
        }
        if (rc && !first) {
            first = rc;
            *err = e;
        }
    }
    return first;
}

int plot_run_ex(const char *run, const struct plot_opts *o, int *drawn,
                struct lbs_err *err)
{
    plot_scales = o->scales ? o->scales : PLOT_SCALES_DEFAULT;
    plot_verbose = o->print;
    plot_json = o->figures;
    plot_drawn = 0;
    int rc = plot_kinds(run, err);
    if (drawn)
        *drawn = plot_drawn;
    plot_scales = PLOT_SCALES_DEFAULT;
    plot_verbose = 0;
    plot_json = NULL;
    return rc;
}

int plot_run(const char *run, struct lbs_err *err)
{
    const struct plot_opts o = {0};
    return plot_run_ex(run, &o, NULL, err);
}
