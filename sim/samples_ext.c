/* samples_ext.c - `sim calibrate`'s readers of the measurements people
 * already have: nccl-tests output (the text table every version prints,
 * its columns found by name in the header, and the JSON document of
 * `-J FILE`, version 2), and the latency tables of the OSU
 * micro-benchmarks' collective tests (osu_allreduce, osu_allgather,
 * osu_alltoall, osu_bcast, osu_barrier).  Each turns a row into an
 * lbs_sim_sample in lbscale coll's convention (trace-v1 bytes: what one
 * rank contributes):
 *
 *   nccl-tests size S (the whole buffer): allreduce S, allgather S / P,
 *     alltoall S (the send buffer), broadcast S; time = out-of-place.
 *   OSU size s (per rank, per peer for alltoall): allreduce s,
 *     allgather(v) s, alltoall P s, bcast s, barrier 0; time = the
 *     average latency column.
 *
 * lbscale coll's own text in nccl-tests' layout reads the same way: its
 * "# lbscale coll:" line lets one file hold one table per collective,
 * each under its "# Collective test starting: NAME" (lbscale's names,
 * lbscale/comm.h's vocabulary; allgatherv S / P like allgather).
 *
 * Ranks, nodes and ranks per node come from the file where it states them
 * (nccl-tests' "#  Rank N ... on HOST" lines, or the JSON's devices), else
 * from the caller (--ranks, --ranks-per-node); the collective from the
 * file ("# Collective test starting: all_reduce_perf", args[0], OSU's
 * title), else from the caller (--coll).  Rows of collectives the fit has
 * no form for (reduce, reduce_scatter, sendrecv, ...) and rows with wrong
 * elements are counted as skipped.  Anything else that does not parse is
 * refused naming the file, the line and what is wrong. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/file.h"
#include "sim_internal.h"

#define MAXTOK 48

/* The collective of an nccl-tests program ("all_reduce_perf", a path to
 * it, "all_reduce"): its lbs_coll, -1 for one without a fitted form, -2
 * when the name is not an nccl-tests collective. */
static int nccl_prog_coll(const char *prog)
{
    static const struct {
        const char *name;
        int coll;
    } t[] = {{"all_reduce", LBS_COLL_ALLREDUCE},
             {"all_gather", LBS_COLL_ALLGATHER},
             {"alltoall", LBS_COLL_ALLTOALL},
             {"broadcast", LBS_COLL_BCAST},
             {"reduce_scatter", -1}, {"reduce", -1}, {"sendrecv", -1},
             {"gather", -1}, {"scatter", -1}, {"hypercube", -1}};
    const char *b = strrchr(prog, '/');
    b = b ? b + 1 : prog;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t n = strlen(t[i].name);
        if (!strncmp(b, t[i].name, n) &&
            (!b[n] || !strcmp(b + n, "_perf") || !strncmp(b + n, "_perf_",
                                                          6) ||
             !strcmp(b + n, "_perf_mpi")))
            return t[i].coll;
    }
    return -2;
}

/* --coll as given by the caller: an lbs_coll name, or an nccl-tests
 * program name. */
static int caller_coll(const struct lbs_sim_samples_in *in)
{
    if (!in->coll)
        return -2;
    int k = lbs_coll_from_name(in->coll);
    return k >= 0 ? k : nccl_prog_coll(in->coll);
}

/* Hosts seen in a rank list: nodes and the most ranks on one. */
struct hosts {
    char (*name)[64];
    long *count;
    size_t n, cap;
    long ranks;
};

static int hosts_add(struct hosts *h, const char *name)
{
    h->ranks++;
    for (size_t i = 0; i < h->n; i++)
        if (!strncmp(h->name[i], name, 63)) {
            h->count[i]++;
            return 0;
        }
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        void *a = realloc(h->name, cap * sizeof *h->name);
        if (a)
            h->name = a;
        void *b = a ? realloc(h->count, cap * sizeof *h->count) : NULL;
        if (!b)
            return -ENOMEM;
        h->count = b;
        h->cap = cap;
    }
    snprintf(h->name[h->n], 64, "%s", name);
    h->count[h->n++] = 1;
    return 0;
}

static long hosts_rpn(const struct hosts *h)
{
    long m = 0;
    for (size_t i = 0; i < h->n; i++)
        m = h->count[i] > m ? h->count[i] : m;
    return m;
}

static void hosts_free(struct hosts *h)
{
    free(h->name);
    free(h->count);
}

/* Whitespace-separated tokens of line (ll bytes) into tok (NUL-ended
 * copies in buf); returns how many (at most MAXTOK). */
static int tokens(const char *line, size_t ll, char *buf, size_t blen,
                  char *tok[MAXTOK])
{
    int n = 0;
    size_t o = 0;
    for (size_t i = 0; i < ll && n < MAXTOK;) {
        while (i < ll && isspace((unsigned char)line[i]))
            i++;
        if (i == ll)
            break;
        if (o >= blen - 1)
            break;
        tok[n++] = buf + o;
        while (i < ll && !isspace((unsigned char)line[i]) && o < blen - 1)
            buf[o++] = line[i++];
        buf[o++] = '\0';
    }
    return n;
}

/* A finite number that fills the whole token. */
static int num_tok(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end && isfinite(*v);
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* One measured row: the sample in lbscale's convention, or skipped. */
static int add_row(struct lbs_sim_samples *set, int coll, long P,
                   long nodes, long rpn, double bytes, double t_us,
                   struct lbs_err *err)
{
    if (coll < 0 || coll == LBS_COLL_NEIGHBOR || P < 2) {
        set->skipped++;
        return 0;
    }
    return lbs_sim_sample_add(set, (struct lbs_sim_sample){
        (enum lbs_coll)coll, P, bytes, t_us * 1e-6, nodes, rpn}, err);
}

/* The rank layout a file does not state: --ranks and --ranks-per-node. */
static int caller_layout(const char *path, const char *what,
                         const struct lbs_sim_samples_in *in, long *P,
                         long *nodes, long *rpn, struct lbs_err *err)
{
    if (in->ranks < 1)
        return lbs_err_set(err, -EINVAL, "%s: %s does not state its rank "
                           "count: give --ranks P (and --ranks-per-node R "
                           "when the ranks span nodes)", path, what);
    *P = in->ranks;
    *rpn = in->rpn > 0 && in->rpn < *P ? in->rpn : *P;
    *nodes = (*P + *rpn - 1) / *rpn;
    return 0;
}

/* ---- nccl-tests text ------------------------------------------------- */

/* The columns of nccl-tests' header line ("#  size  count  type  redop
 * [root]  time  algbw  busbw  #wrong|error  time ..."), found by name so
 * that every version's layout reads: the first time (or cputime) column
 * is the out-of-place one, and the column after busbw its #wrong or
 * error. */
struct ncols {
    int n, size, time, wrong;
};

static int nccl_header(char **tok, int n, struct ncols *out)
{
    struct ncols c = {n - 1, 0, -1, -1};
    if (n < 4 || strcmp(tok[0], "#") || strcmp(tok[1], "size"))
        return 0;
    for (int i = 1; i < n; i++)
        if (c.time < 0 && (!strcmp(tok[i], "time") ||
                           !strcmp(tok[i], "cputime")))
            c.time = i - 1;
    if (c.time < 0)
        return 0;       /* *out untouched: not a header */
    if (c.time + 3 < c.n && (!strcmp(tok[c.time + 4], "#wrong") ||
                             !strcmp(tok[c.time + 4], "error")))
        c.wrong = c.time + 3;
    *out = c;
    return 1;
}

/* The collective of a table's "# Collective test starting: NAME": an
 * nccl-tests program, or in lbscale coll's output (lb) lbscale's name of
 * a collective (its compressed patterns: -1, no fitted form). */
static int table_coll(const char *prog, int lb)
{
    if (!lb)
        return nccl_prog_coll(prog);
    int k = lbs_coll_from_name(prog);
    return k >= 0 ? k : -1;
}

/* The rows of one table, read with P = 0, given their collective and the
 * ranks (from the '#  Rank' lines, else the caller): allgather(v) sizes
 * become per-rank bytes; rows no fit takes are counted as skipped. */
static int table_fixup(const char *path, struct lbs_sim_samples *set,
                       size_t first, const char *prog, int lb,
                       const struct lbs_sim_samples_in *in,
                       const struct hosts *h, struct lbs_err *err)
{
    int coll = prog[0] ? table_coll(prog, lb) : -2;
    if (coll == -2 && (coll = caller_coll(in)) == -2)
        return lbs_err_set(err, -EINVAL, "%s: cannot tell the collective: "
                           "no '# Collective test starting' line%s (give "
                           "--coll allreduce|allgather|alltoall|bcast)", path,
                           prog[0] ? " naming an nccl-tests program" : "");
    long P = h->ranks, nodes = (long)h->n, rpn = hosts_rpn(h);
    int rc = 0;
    if (!P && (rc = caller_layout(path, "this nccl-tests output (no '#  "
                                  "Rank' lines)", in, &P, &nodes, &rpn,
                                  err)))
        return rc;
    size_t kept = first;
    for (size_t i = first; i < set->n; i++) {
        struct lbs_sim_sample *s = &set->s[i];
        if (coll < 0 || coll == LBS_COLL_NEIGHBOR || P < 2) {
            set->skipped++;
            continue;
        }
        s->coll = (enum lbs_coll)coll;
        s->ranks = P;
        s->nodes = nodes;
        s->rpn = rpn;
        if (coll == LBS_COLL_ALLGATHER || coll == LBS_COLL_ALLGATHERV)
            s->bytes /= (double)P;
        set->s[kept++] = *s;
    }
    set->n = kept;
    return 0;
}

int lbs_sim_read_nccl_text(const char *path, const char *text, size_t len,
                           const struct lbs_sim_samples_in *in,
                           struct lbs_sim_samples *set, struct lbs_err *err)
{
    struct hosts h = {0};
    struct ncols c = {0};
    char prog[256] = "", buf[4096], *tok[MAXTOK];
    size_t pos = 0, ll, first = set->n, skipped0 = set->skipped,
           start = set->n;
    long no = 0, hline = 0;
    const char *line;
    int ended, rc = 0, footer = 0, lb = 0;
    /* rows wait in set until the ranks and the collective are known:
     * store them with P = 0 and fix them up at the end */
    while (!rc && lbs_text_next_line(text, len, &pos, &no, &line, &ll,
                                     &ended)) {
        int n = tokens(line, ll, buf, sizeof buf, tok);
        if (!n)
            continue;
        if (tok[0][0] == '#') {
            const char *st = "# Collective test starting:";
            char host[64];
            int r, starting = ll > strlen(st) &&
                                  !strncmp(line, st, strlen(st));
            int rows_read = set->n > first || set->skipped > skipped0;
            /* line is not terminated: compare within its ll bytes */
            if (ll >= 15 && !memcmp(line, "# lbscale coll:", 15))
                lb = 1;
            /* lbscale coll: the next collective's table */
            if (lb && rows_read && starting) {
                if ((rc = table_fixup(path, set, first, prog, lb, in, &h,
                                      err)))
                    break;
                first = set->n;
                skipped0 = set->skipped;
                hline = 0;
                rows_read = 0;
            }
            if (rows_read && (nccl_header(tok, n, &(struct ncols){0}) ||
                              starting)) {
                rc = lbs_err_set(err, -EINVAL, "%s:%ld: a second nccl-tests "
                                 "table after rows of the first (one run per "
                                 "file: split it)", path, no);
                break;
            }
            if (starting && n >= 5)
                snprintf(prog, sizeof prog, "%s", tok[4]);
            else if (n >= 5 && !strcmp(tok[1], "Rank") &&
                     sscanf(tok[2], "%d", &r) == 1) {
                /* "#  Rank  3 Group  0 Pid  123 on HOST device ..." (no
                 * Group in old versions): the host follows "on" */
                int on = 3;
                while (on < n - 1 && strcmp(tok[on], "on"))
                    on++;
                if (on >= n - 1) {
                    rc = lbs_err_set(err, -EINVAL, "%s:%ld: a '#  Rank' "
                                     "line without 'on HOST'", path, no);
                    break;
                }
                snprintf(host, sizeof host, "%s", tok[on + 1]);
                if (hosts_add(&h, host))
                    rc = lbs_err_set(err, -ENOMEM, "out of memory");
            } else if (nccl_header(tok, n, &c)) {
                hline = no;
            } else if (n >= 4 && !strcmp(tok[1], "Avg") &&
                       !strcmp(tok[2], "bus")) {
                footer = 1;
            }
            continue;
        }
        if (!all_digits(tok[0]))
            continue;               /* NCCL INFO lines and other logs */
        if (!hline)
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: a data row before the "
                             "header line ('#  size  count ...  time')",
                             path, no);
        else if (n < c.time + 3 || (!ended && !footer))
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: %d columns where the "
                             "header (line %ld) has %d (truncated?)", path,
                             no, n, hline, c.n);
        if (rc)
            break;
        double S, t, w = 0;
        if (!num_tok(tok[c.size], &S) || S < 0 || !num_tok(tok[c.time], &t) ||
            !(t > 0))
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: size '%s' or out-of-place "
                             "time '%s' is not a number > 0", path, no,
                             tok[c.size], tok[c.time]);
        else if (c.wrong >= 0 && c.wrong < n && num_tok(tok[c.wrong], &w) &&
                 w > 0)
            set->skipped++;
        else
            rc = lbs_sim_sample_add(set, (struct lbs_sim_sample){
                LBS_COLL_ALLREDUCE, 0, S, t * 1e-6, 0, 0}, err);
    }
    if (!rc && !footer)
        rc = lbs_err_set(err, -EINVAL, "%s: truncated: no '# Avg bus "
                         "bandwidth' line after the table", path);
    if (!rc && set->n == first && set->skipped == skipped0 &&
        (!lb || set->n == start))
        rc = lbs_err_set(err, -EINVAL, "%s: no data rows under the header",
                         path);
    if (!rc)
        rc = table_fixup(path, set, first, prog, lb, in, &h, err);
    hosts_free(&h);
    return rc;
}

/* ---- nccl-tests -J JSON (version 2) ----------------------------------- */

int lbs_sim_nccl_json_is(const char *text, size_t len)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    int is = o && json_is_object(o) &&
             json_is_array(json_object_get(o, "results")) &&
             (json_object_get(o, "nccl_version") ||
              json_object_get(o, "config"));
    json_decref(o);
    if (!o) {   /* truncated: still ours when it says so early on */
        size_t head = len < 65536 ? len : 65536;
        const char *k = "\"nccl_version\"";
        for (size_t i = 0; i + strlen(k) <= head && !is; i++)
            is = !strncmp(text + i, k, strlen(k));
    }
    return is;
}

/* A result's time (us) and #wrong: out_of_place, else in_place (trace
 * replays write out_of_place null). */
static int nccl_json_time(const json_t *r, double *t, double *wrong)
{
    const json_t *m = json_object_get(r, "out_of_place");
    if (!json_is_object(m))
        m = json_object_get(r, "in_place");
    const json_t *tv = json_object_get(m, "time");
    if (!tv)
        tv = json_object_get(m, "cpu_time");
    const json_t *w = json_object_get(m, "nwrong");
    *wrong = json_is_number(w) ? json_number_value(w) : 0;
    *t = json_is_number(tv) ? json_number_value(tv) : -1;
    return *t > 0 && isfinite(*t);
}

int lbs_sim_read_nccl_json(const char *path, const char *text, size_t len,
                           const struct lbs_sim_samples_in *in,
                           struct lbs_sim_samples *set, struct lbs_err *err)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    struct hosts h = {0};
    int rc = 0;
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return lbs_err_set(err, -EINVAL, "%s:%d: nccl-tests JSON that does "
                           "not parse (truncated?): %s", path, je.line,
                           je.text);
    }
    json_t *res = json_object_get(o, "results");
    json_t *devs = json_object_get(json_object_get(o, "config"), "devices");
    const char *prog = json_string_value(json_array_get(
        json_object_get(o, "args"), 0));
    int coll = prog ? nccl_prog_coll(prog) : -2;
    if (coll == -2)
        coll = caller_coll(in);
    if (!json_is_array(res) || !json_array_size(res))
        rc = lbs_err_set(err, -EINVAL, "%s: field 'results' missing or "
                         "empty", path);
    else if (coll == -2 &&
             !json_is_string(json_object_get(json_array_get(res, 0),
                                             "coll")))
        rc = lbs_err_set(err, -EINVAL, "%s: cannot tell the collective: "
                         "args[0] is not an nccl-tests program (give --coll)",
                         path);
    size_t i;
    json_t *d;
    json_array_foreach(devs, i, d) {
        const char *hn = json_string_value(json_object_get(d, "hostname"));
        if (!rc && !hn)
            rc = lbs_err_set(err, -EINVAL, "%s: field 'config.devices[%zu]."
                             "hostname' missing", path, i);
        if (!rc && hosts_add(&h, hn))
            rc = lbs_err_set(err, -ENOMEM, "out of memory");
    }
    long P = h.ranks, nodes = (long)h.n, rpn = hosts_rpn(&h);
    if (!rc && !P)
        rc = caller_layout(path, "this nccl-tests JSON (no config.devices)",
                           in, &P, &nodes, &rpn, err);
    json_t *r;
    json_array_foreach(res, i, r) {
        if (rc)
            break;
        json_t *sz = json_object_get(r, "size");
        double t, w;
        if (!json_is_integer(sz) || json_integer_value(sz) < 0)
            rc = lbs_err_set(err, -EINVAL, "%s: field 'results[%zu].size' "
                             "missing or invalid", path, i);
        else if (!nccl_json_time(r, &t, &w))
            rc = lbs_err_set(err, -EINVAL, "%s: field 'results[%zu]."
                             "out_of_place.time' missing or not > 0", path,
                             i);
        else if (w > 0)
            set->skipped++;
        else {
            /* lbscale coll's -J holds every collective: each result
             * names its own (lbscale's names) */
            const char *own = json_string_value(json_object_get(r, "coll"));
            int k = own ? table_coll(own, 1) : coll;
            double S = (double)json_integer_value(sz);
            rc = add_row(set, k, P, nodes, rpn,
                         k == LBS_COLL_ALLGATHER || k == LBS_COLL_ALLGATHERV
                             ? S / (double)P : S, t, err);
        }
    }
    hosts_free(&h);
    json_decref(o);
    return rc;
}

/* ---- OSU micro-benchmarks ---------------------------------------------- */

/* The collective of an OSU title ("# OSU MPI Allreduce Latency Test
 * v7.3", "# OSU MPI-CUDA All-to-All Personalized Exchange Latency Test"):
 * its lbs_coll, -1 for one without a fitted form. */
static int osu_title_coll(const char *line, size_t ll)
{
    char low[256];
    size_t n = ll < sizeof low - 1 ? ll : sizeof low - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)line[i]);
    low[n] = '\0';
    if (strstr(low, "non-blocking") || strstr(low, "persistent"))
        return -1;
    if (strstr(low, "allreduce"))
        return LBS_COLL_ALLREDUCE;
    if (strstr(low, "allgatherv"))
        return LBS_COLL_ALLGATHERV;
    if (strstr(low, "allgather"))
        return LBS_COLL_ALLGATHER;
    if ((strstr(low, "all-to-all") || strstr(low, "alltoall")) &&
        !strstr(low, "alltoallv") && !strstr(low, "vector"))
        return LBS_COLL_ALLTOALL;
    if (strstr(low, "broadcast") || strstr(low, "bcast"))
        return LBS_COLL_BCAST;
    if (strstr(low, "barrier"))
        return LBS_COLL_BARRIER;
    return -1;
}

/* The average-latency column of OSU's header ("# Size  Avg Latency(us)
 * [Min Latency(us)  Max Latency(us)  Iterations]"; barrier: "# Avg
 * Latency(us)" with no size): columns are split at runs of two or more
 * spaces.  -1 when line is not such a header. */
static int osu_header(const char *line, size_t ll, int *has_size)
{
    int col = 0, found = -1;
    size_t i = 1;   /* after '#' */
    *has_size = 0;
    while (i < ll) {
        while (i < ll && isspace((unsigned char)line[i]))
            i++;
        if (i == ll)
            break;
        size_t s = i;
        while (i < ll && !(isspace((unsigned char)line[i]) &&
                           (i + 1 == ll ||
                            isspace((unsigned char)line[i + 1]))))
            i++;
        if (i - s == 4 && !strncmp(line + s, "Size", 4) && col == 0)
            *has_size = 1;
        if (found < 0 && i - s >= 11 && !strncmp(line + s, "Avg Latency",
                                                 11))
            found = col;
        col++;
    }
    return found;
}

int lbs_sim_read_osu(const char *path, const char *text, size_t len,
                     const struct lbs_sim_samples_in *in,
                     struct lbs_sim_samples *set, struct lbs_err *err)
{
    char buf[4096], *tok[MAXTOK];
    size_t pos = 0, ll, first = set->n, skipped0 = set->skipped;
    long no = 0, P = 0, nodes = 0, rpn = 0;
    const char *line;
    int ended, rc = 0, coll = -2, avg = -1, has_size = 0;
    while (!rc && lbs_text_next_line(text, len, &pos, &no, &line, &ll,
                                     &ended)) {
        if (line[0] == '#') {
            int hs, a;
            if (ll > 5 && !strncmp(line, "# OSU", 5)) {
                if (set->n > first || set->skipped > skipped0) {
                    rc = lbs_err_set(err, -EINVAL, "%s:%ld: a second OSU "
                                     "table after rows of the first (one "
                                     "test per file: split it)", path, no);
                    break;
                }
                coll = osu_title_coll(line, ll);
            }
            else if ((a = osu_header(line, ll, &hs)) >= 0) {
                avg = a;
                has_size = hs;
            }
            continue;
        }
        int n = tokens(line, ll, buf, sizeof buf, tok);
        if (!n)
            continue;
        if (avg < 0)
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: a data row before the "
                             "'# Size  Avg Latency(us)' header", path, no);
        else if (!P)
            rc = caller_layout(path, "an OSU table", in, &P, &nodes, &rpn,
                               err);
        if (rc)
            break;
        double s = 0, t;
        if (n <= avg || !ended)
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: %d columns, the "
                             "latency is column %d (truncated?)", path, no,
                             n, avg + 1);
        else if ((has_size && (!num_tok(tok[0], &s) || s < 0)) ||
                 !num_tok(tok[avg], &t) || !(t > 0))
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: size '%s' or average "
                             "latency '%s' is not a number > 0", path, no,
                             tok[0], tok[avg]);
        else
            rc = add_row(set, coll == -2 ? -1 : coll, P, nodes, rpn,
                         coll == LBS_COLL_ALLTOALL ? s * (double)P
                         : coll == LBS_COLL_BARRIER ? 0 : s, t, err);
    }
    if (!rc && coll == -2)
        rc = lbs_err_set(err, -EINVAL, "%s: no '# OSU MPI ... Latency Test' "
                         "title line", path);
    if (!rc && set->n == first && set->skipped == skipped0)
        rc = lbs_err_set(err, -EINVAL, "%s: no data rows under the '# Size  "
                         "Avg Latency(us)' header", path);
    return rc;
}
