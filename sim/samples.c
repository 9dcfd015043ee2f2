/* samples.c - what `lbscale sim calibrate` fits: the rows of `lbscale
 * coll` JSONL files read into lbs_sim_sample (lbscale_sim.h,
 * "Calibration"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/file.h"
#include "sim_internal.h"

/* Rows that are not one of this machine's collective measurements: other
 * benchmarks, wrong results, several ranks per node on several nodes. */
static int foreign_row(const json_t *o)
{
    const char *bench = json_string_value(json_object_get(o, "bench"));
    json_t *wr = json_object_get(o, "wrong"), *nd = json_object_get(o,
                                                                "nodes");
    return (bench && strcmp(bench, "coll")) ||
           (wr && json_is_number(wr) && json_number_value(wr) > 0) ||
           (nd && json_is_number(nd) && json_number_value(nd) > 1 &&
            json_number_value(nd) !=
                json_number_value(json_object_get(o, "ranks")));
}

static int add_sample(struct lbs_sim_samples *set, struct lbs_sim_sample x,
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
    if (unfit || json_integer_value(rk) < 2) {
        set->skipped++;
        return 0;
    }
    return add_sample(set, (struct lbs_sim_sample){
        k, (long)json_integer_value(rk), json_number_value(by),
        json_number_value(tu) * 1e-6}, err);
}

int lbs_sim_samples_read(const char *path, struct lbs_sim_samples *set,
                         struct lbs_err *err)
{
    char *text;
    size_t len;
    long no = 0;
    int rc = lbs_read_file(path, LBS_SIM_SAMPLES_MAX_BYTES, &text, &len, err);
    if (rc)
        return rc;
    size_t pos = 0, ll;
    const char *line;
    int ended;
    while (!rc && lbs_text_next_line(text, len, &pos, &no, &line, &ll,
                                     &ended)) {
        json_error_t je;
        json_t *o = json_loadb(line, ll, 0, &je);
        if (!o || !json_is_object(o))
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: not a JSON object", path,
                             no);
        else
            rc = sample_row(path, no, o, set, err);
        json_decref(o);
    }
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
