/* samples.c - what `lbscale sim calibrate` fits: the rows of `lbscale
 * coll` JSONL files read into lbs_sim_sample (lbscale_sim.h,
 * "Calibration"), and which format a file is (the others' readers are in
 * samples_ext.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/file.h"
#include "sim_internal.h"

/* Rows that are not a collective measurement: other benchmarks, wrong
 * results.  (Rows of several nodes with several ranks each are kept: the
 * sample carries its nodes and ranks per node.) */
static int foreign_row(const json_t *o)
{
    const char *bench = json_string_value(json_object_get(o, "bench"));
    json_t *wr = json_object_get(o, "wrong");
    return (bench && strcmp(bench, "coll")) ||
           (wr && json_is_number(wr) && json_number_value(wr) > 0);
}

/* nodes / ranks_per_node of a row: optional, positive integers up to
 * ranks; rows before ranks_per_node existed get ceil(ranks / nodes).
 * Returns the bad field's name or NULL. */
static const char *row_layout(const json_t *o, long ranks, long *nodes,
                              long *rpn)
{
    json_t *nd = json_object_get(o, "nodes"),
           *rp = json_object_get(o, "ranks_per_node");
    *nodes = 1;
    *rpn = ranks;
    if (nd) {
        if (!json_is_integer(nd) || json_integer_value(nd) < 1 ||
            json_integer_value(nd) > ranks)
            return "nodes";
        *nodes = (long)json_integer_value(nd);
        *rpn = (ranks + *nodes - 1) / *nodes;
    }
    if (rp) {
        if (!json_is_integer(rp) || json_integer_value(rp) < 1 ||
            json_integer_value(rp) > ranks ||
            json_integer_value(rp) * *nodes < ranks)
            return "ranks_per_node";
        *rpn = (long)json_integer_value(rp);
    }
    return NULL;
}

int lbs_sim_sample_add(struct lbs_sim_samples *set, struct lbs_sim_sample x,
                       struct lbs_err *err)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 256;
        void *q = realloc(set->s, cap * sizeof *set->s);
        if (!q)
            return lbs_err_set(err, -ENOMEM, "out of memory");
        set->s = q;
        set->cap = cap;
    }
    set->s[set->n++] = x;
    return 0;
}

/* One row (line no of path): a sample, skipped, or -EINVAL naming the
 * field. */
static int sample_row(const char *path, long no, const json_t *o,
                      struct lbs_sim_samples *set, struct lbs_err *err)
{
    if (foreign_row(o)) {
        set->skipped++;
        return 0;
    }
    const char *coll = json_string_value(json_object_get(o, "coll"));
    json_t *rk = json_object_get(o, "ranks"), *by = json_object_get(o,
                                                                "bytes");
    json_t *tu = json_object_get(o, "time_us");
    if (!tu)
        tu = json_object_get(o, "time_us_median");
    const char *bad = !coll ? "coll" : !json_is_integer(rk) ? "ranks"
                      : !json_is_number(by) ? "bytes"
                      : !json_is_number(tu) ? "time_us" : NULL;
    int k = coll ? lbs_coll_from_name(coll) : -1;
    /* patterns the fit has no form for (neighbor, reduce_scatter and
     * the compressed patterns `lbscale coll` also measures): skipped */
    int unfit = !bad && (k < 0 || k == LBS_COLL_NEIGHBOR);
    if (!bad && json_integer_value(rk) < 1)
        bad = "ranks";
    if (!bad && !(json_number_value(by) >= 0))
        bad = "bytes";
    if (!bad && !(json_number_value(tu) > 0))
        bad = "time_us";
    if (bad)
        return lbs_err_set(err, -EINVAL, "%s:%ld: field '%s' missing or "
                           "invalid", path, no, bad);
    long nodes = 1, rpn = 1;
    if (!bad && (bad = row_layout(o, (long)json_integer_value(rk), &nodes,
                                  &rpn)))
        return lbs_err_set(err, -EINVAL, "%s:%ld: field '%s' must be an "
                           "integer from 1 to ranks (and nodes x "
                           "ranks_per_node >= ranks)", path, no, bad);
    if (unfit || json_integer_value(rk) < 2) {
        set->skipped++;
        return 0;
    }
    return lbs_sim_sample_add(set, (struct lbs_sim_sample){
        k, (long)json_integer_value(rk), json_number_value(by),
        json_number_value(tu) * 1e-6, nodes, rpn}, err);
}

/* lbscale coll JSONL: one object per line. */
static int read_lbscale(const char *path, const char *text, size_t len,
                        struct lbs_sim_samples *set, struct lbs_err *err)
{
    long no = 0;
    size_t pos = 0, ll;
    const char *line;
    int ended, rc = 0;
    while (!rc && lbs_text_next_line(text, len, &pos, &no, &line, &ll,
                                     &ended)) {
        json_error_t je;
        json_t *o = json_loadb(line, ll, 0, &je);
        if (!o || !json_is_object(o))
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: not a JSON object%s",
                             path, no, ended ? "" : " (truncated: the last "
                             "line has no newline)");
        else
            rc = sample_row(path, no, o, set, err);
        json_decref(o);
    }
    return rc;
}

const char *lbs_sim_samples_fmt_name(enum lbs_sim_samples_fmt f)
{
    static const char *const names[] = {"lbscale-coll", "nccl-tests",
                                        "nccl-tests-json", "osu"};
    return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "?";
}

/* Does some line of text start with prefix (after leading spaces)? */
static int has_line(const char *text, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; i < len; i++) {
        if (i && text[i - 1] != '\n')
            continue;
        size_t j = i;
        while (j < len && (text[j] == ' ' || text[j] == '\t'))
            j++;
        if (len - j >= n && !strncmp(text + j, prefix, n))
            return 1;
    }
    return 0;
}

int lbs_sim_samples_parse(const char *path, const char *text, size_t len,
                          const struct lbs_sim_samples_in *in,
                          struct lbs_sim_samples *set,
                          enum lbs_sim_samples_fmt *fmt, size_t *rows,
                          struct lbs_err *err)
{
    static const struct lbs_sim_samples_in none = {0};
    size_t before = set->n;
    int rc;
    if (!in)
        in = &none;
    if (memchr(text, '\0', len))
        return lbs_err_set(err, -EINVAL, "%s: a binary file (NUL bytes), "
                           "not lbscale coll JSONL, nccl-tests output or an "
                           "OSU table", path);
    size_t i = 0;
    while (i < len && strchr(" \t\r\n", text[i]))
        i++;
    if (i == len)
        return lbs_err_set(err, -EINVAL, "%s: empty: no rows", path);
    if (text[i] == '{' && lbs_sim_nccl_json_is(text, len)) {
        *fmt = LBS_SIM_FMT_NCCL_JSON;
        rc = lbs_sim_read_nccl_json(path, text, len, in, set, err);
    } else if (text[i] == '{') {
        *fmt = LBS_SIM_FMT_LBSCALE;
        rc = read_lbscale(path, text, len, set, err);
    } else if (has_line(text, len, "# OSU")) {
        *fmt = LBS_SIM_FMT_OSU;
        rc = lbs_sim_read_osu(path, text, len, in, set, err);
    } else if (has_line(text, len, "# nThread") ||
               has_line(text, len, "# Collective test starting") ||
               has_line(text, len, "# Avg bus bandwidth")) {
        *fmt = LBS_SIM_FMT_NCCL_TEXT;
        rc = lbs_sim_read_nccl_text(path, text, len, in, set, err);
    } else {
        return lbs_err_set(err, -EINVAL, "%s: not a format sim calibrate "
                           "reads (lbscale coll JSONL, nccl-tests output or "
                           "-J JSON, an OSU latency table)", path);
    }
    if (rc)
        set->n = before;    /* nothing of a refused file */
    *rows = set->n - before;
    return rc;
}

int lbs_sim_samples_read(const char *path, struct lbs_sim_samples *set,
                         struct lbs_err *err)
{
    char *text;
    size_t len, rows;
    enum lbs_sim_samples_fmt fmt;
    int rc = lbs_read_file(path, LBS_SIM_SAMPLES_MAX_BYTES, &text, &len, err);
    if (rc)
        return rc;
    rc = lbs_sim_samples_parse(path, text, len, NULL, set, &fmt, &rows, err);
    free(text);
    return rc;
}

void lbs_sim_samples_keep_bytes(struct lbs_sim_samples *set, double lo,
                                double hi)
{
    size_t kept = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (set->s[i].bytes >= lo && set->s[i].bytes <= hi)
            set->s[kept++] = set->s[i];
        else
            set->skipped++;
    }
    set->n = kept;
}

void lbs_sim_samples_free(struct lbs_sim_samples *set)
{
    free(set->s);
    *set = (struct lbs_sim_samples){0};
}
