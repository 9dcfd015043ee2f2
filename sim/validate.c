/* validate.c - published end-to-end figures beside the simulator's
 * predictions (docs/validation.md, "e"): the manifest
 * <data>/validation/validation.json lists each row's published value and
 * the two simulated points whose iteration-time ratio is the quantity
 * (an efficiency T(base)/T(P), a strong-scaling ratio T(1 node, long
 * accumulation)/T(P), a speedup T(dense)/T(compressed)); an end-to-end
 * speedup with a warm-up share w is 1 / (w + (1 - w) / ratio).  Nothing is
 * fitted to these rows and none is dropped: every row is simulated, and a
 * point that cannot be is an error naming the row.
 *
 *   {"format": "lbscale-validation", "version": 1, "rows": [
 *     {"id": "V1", "what": "...", "source": "...", "published": 0.90,
 *      "num": POINT, "den": POINT, "warmup": 0.15 (optional)}]}
 *   POINT: {"platform": P, "model": M, "optim": O, "gpus": n,
 *           "accum": 1, "grad_dtype": "fp32", "no_overlap": false,
 *           "phase": "mean" | "final"}
 * P and M: preset names, or paths relative to the data directory.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define VMAX_BYTES ((size_t)1 << 20)
#define VMAX_ROWS 200

/* A preset name, or a path relative to the data directory (which holds
 * platforms/, models/, traces/ and validation/). */
static void data_path(const char *arg, char *buf, size_t len)
{
    if (strchr(arg, '/') && arg[0] != '/')
        snprintf(buf, len, "%s/%s", lbs_sim_data_dir(), arg);
    else
        snprintf(buf, len, "%s", arg);
}

/* One simulated point's iteration time (s). */
static int point_time(const struct sj *c, const json_t *pt, const char *path,
                      double *t)
{
    static const char *const keys[] = {"platform", "model", "optim", "gpus",
        "accum", "grad_dtype", "no_overlap", "phase", "note", NULL};
    char plat[256], model[256], optim[256], dt[8], phase[8], buf[1024];
    double gpus, accum;
    int rc = sj_known(c, pt, path, keys);
    if (!rc) rc = sj_str(c, pt, path, "platform", SJ_REQ, NULL, plat,
                         sizeof plat);
    if (!rc) rc = sj_str(c, pt, path, "model", SJ_REQ, NULL, model,
                         sizeof model);
    if (!rc) rc = sj_str(c, pt, path, "optim", SJ_REQ, NULL, optim,
                         sizeof optim);
    if (!rc) rc = sj_num(c, pt, path, "gpus", SJ_REQ | SJ_INT, 0, 1, 1e8,
                         &gpus);
    if (!rc) rc = sj_num(c, pt, path, "accum", SJ_INT, 1, 1, 1e6, &accum);
    if (!rc) rc = sj_str(c, pt, path, "grad_dtype", 0, "fp32", dt, sizeof dt);
    if (!rc) rc = sj_str(c, pt, path, "phase", 0, "mean", phase,
                         sizeof phase);
    if (rc)
        return rc;
    if (strcmp(dt, "fp32") && strcmp(dt, "fp16") && strcmp(dt, "bf16"))
        return sj_fail(c, path, "grad_dtype", "\"%s\": fp32, fp16 or bf16",
                       dt);
    if (strcmp(phase, "mean") && strcmp(phase, "final"))
        return sj_fail(c, path, "phase", "\"%s\": mean or final", phase);
    const json_t *no = json_object_get(pt, "no_overlap");
    if (no && !json_is_boolean(no))
        return sj_fail(c, path, "no_overlap", "must be true or false");

    struct lbs_sim_platform *pl = NULL;
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_entry *ent = NULL;
    size_t nent = 0;
    data_path(plat, buf, sizeof buf);
    rc = lbs_sim_platform_find(buf, &pl, c->err);
    if (!rc) {
        data_path(model, buf, sizeof buf);
        rc = lbs_sim_model_find(buf, &m, c->err);
    }
    if (!rc) {
        data_path(optim, buf, sizeof buf);
        rc = lbs_sim_entries_load(buf, m, strcmp(dt, "fp32") ? 2 : 4, &ent,
                                  &nent, c->err);
    }
    if (!rc) {
        struct lbs_sim_opts o = {.optim_bytes_per_elem = ent[0].bpe,
                                 .accum = (long)accum,
                                 .no_overlap = json_is_true(no)};
        struct lbs_sim_result r;
        const struct lbs_sim_plan *plan = lbs_sim_entry_plan(&ent[0],
                                                             (long)gpus);
        rc = lbs_sim_run(pl, m, plan, (long)gpus, &o, &r, c->err);
        *t = !strcmp(phase, "final") ? r.final_iter : r.iter;
    }
    lbs_sim_entries_free(ent, nent);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return rc;
}

/* point_time with every error naming the manifest and the point (a
 * platform, model or run error names only its own file or preset). */
static int point_named(const struct sj *c, const json_t *pt, const char *path,
                       double *t)
{
    char p2[48];
    snprintf(p2, sizeof p2, "%s.", path);
    int rc = point_time(c, pt, p2, t);
    if (rc && strncmp(c->err->msg, c->file, strlen(c->file))) {
        char msg[sizeof c->err->msg];
        snprintf(msg, sizeof msg, "%s", c->err->msg);
        lbs_err_set(c->err, rc, "%s: %s: %s", c->file, path, msg);
    }
    return rc;
}

static int read_row(const struct sj *c, const json_t *o, size_t i,
                    struct lbs_sim_vrow *v)
{
    static const char *const keys[] = {"id", "what", "source", "published",
        "num", "den", "warmup", "note", NULL};
    char path[32], p2[40];
    double tn = 0, td = 0;
    snprintf(path, sizeof path, "rows[%zu].", i);
    int rc = sj_known(c, o, path, keys);
    if (!rc) rc = sj_str(c, o, path, "id", SJ_REQ, NULL, v->id, sizeof v->id);
    if (!rc) rc = sj_str(c, o, path, "what", SJ_REQ, NULL, v->what,
                         sizeof v->what);
    if (!rc) rc = sj_str(c, o, path, "source", SJ_REQ, NULL, v->source,
                         sizeof v->source);
    if (!rc) rc = sj_num(c, o, path, "published", SJ_REQ | SJ_LO_OPEN, 0, 0,
                         1e9, &v->published);
    if (!rc) rc = sj_num(c, o, path, "warmup", 0, 0, 0, 0.999, &v->warmup);
    json_t *num = json_object_get(o, "num"), *den = json_object_get(o, "den");
    if (!rc && !json_is_object(num))
        rc = sj_fail(c, path, "num", "must be a point object");
    if (!rc && !json_is_object(den))
        rc = sj_fail(c, path, "den", "must be a point object");
    snprintf(p2, sizeof p2, "%snum", path);
    if (!rc) rc = point_named(c, num, p2, &tn);
    snprintf(p2, sizeof p2, "%sden", path);
    if (!rc) rc = point_named(c, den, p2, &td);
    if (rc)
        return rc;
    if (!(tn > 0 && td > 0))
        return sj_fail(c, path, "num", "a point simulated to zero time");
    v->num_s = tn;
    v->den_s = td;
    double ratio = tn / td;
    v->predicted = v->warmup > 0
        ? 1 / (v->warmup + (1 - v->warmup) / ratio) : ratio;
    return 0;
}

static int parse_manifest(const char *text, size_t len, const char *file,
                          void *out, struct lbs_err *err)
{
    struct lbs_sim_validation *val = out;
    struct sj c = {file, err};
    static const char *const top[] = {"format", "version", "description",
                                      "rows", NULL};
    json_t *root;
    int rc = sj_load(&c, text, len, &root);
    if (rc)
        return rc;
    rc = sj_header(&c, root, "lbscale-validation", 1);
    if (!rc) rc = sj_known(&c, root, "", top);
    const json_t *rows = json_object_get(root, "rows");
    size_t n = json_array_size(rows);
    if (!rc && (!json_is_array(rows) || !n || n > VMAX_ROWS))
        rc = sj_fail(&c, "", "rows", "must be an array of 1..%d rows",
                     VMAX_ROWS);
    if (!rc && !(val->row = calloc(n, sizeof *val->row)))
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
        rc = read_row(&c, json_array_get(rows, i), i, &val->row[i]);
        val->n = i + 1;
    }
    json_decref(root);
    if (rc)
        return rc;
    /* geometric mean of |pred/pub - 1| (each at least 1e-4, so an exact
     * row does not send it to zero) and the worst row */
    double lsum = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(val->row[i].predicted / val->row[i].published - 1);
        lsum += log(fmax(e, 1e-4));
        if (e > val->worst) {
            val->worst = e;
            val->worst_row = i;
        }
    }
    val->gmean = exp(lsum / (double)n);
    return 0;
}

int lbs_sim_validate(const char *manifest, struct lbs_sim_validation *out,
                     struct lbs_err *err)
{
    char buf[1024];
    memset(out, 0, sizeof *out);
    if (!manifest)
        snprintf(buf, sizeof buf, "%s/validation/validation.json",
                 lbs_sim_data_dir());
    else
        snprintf(buf, sizeof buf, "%s", manifest);
    int rc = sj_load_file(buf, VMAX_BYTES, 0, parse_manifest, out, err);
    if (rc)
        lbs_sim_validation_free(out);
    return rc;
}

void lbs_sim_validation_free(struct lbs_sim_validation *v)
{
    free(v->row);
    v->row = NULL;
    v->n = 0;
}
