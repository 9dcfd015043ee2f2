/* common.c - what the `lbscale sim` subcommands share: the options read
 * into struct simargs, the model and point loading, row printing. */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../cli.h"
#include "sim_cli.h"

/* --compute-cv X / --overhead-ms T (dst: struct simargs) */
int job_opt(const char *opt, const char *v, void *dst)
{
    struct simargs *a = dst;
    int cv = !strcmp(opt, "--compute-cv");
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0) || x > (cv ? 1 : 1e7)) {
        cli_error(opt, "'%s': %s", v, cv ? "a coefficient of variation in "
                  "[0, 1]" : "milliseconds in [0, 1e7]");
        return -EINVAL;
    }
    if (cv) {
        a->compute_cv = x;
        a->cv_given = 1;
    } else {
        a->overhead_ms = x;
        a->overhead_given = 1;
    }
    return 0;
}

/* --grad-dtype fp32|fp16|bf16 (dst: struct simargs) */
int grad_dtype_opt(const char *opt, const char *v, void *dst)
{
    struct simargs *a = dst;
    if (strcmp(v, "fp32") && strcmp(v, "fp16") && strcmp(v, "bf16")) {
        cli_error(opt, "'%s': fp32, fp16 or bf16", v);
        return -EINVAL;
    }
    a->grad_dtype = v;
    a->grad_bytes = strcmp(v, "fp32") ? 2 : 4;
    return 0;
}

/* --compress-gbps C,D (dst: struct simargs) */
int compress_gbps_opt(const char *opt, const char *v, void *dst)
{
    struct simargs *a = dst;
    char tail;
    if (sscanf(v, "%lf,%lf%c", &a->comp_gbps, &a->decomp_gbps, &tail) != 2 ||
        !(a->comp_gbps > 0 && a->comp_gbps < 1e6) ||
        !(a->decomp_gbps > 0 && a->decomp_gbps < 1e6)) {
        cli_error(opt, "'%s': two rates in GB/s, C,D (compress, "
                  "decompress), in (0, 1e6)", v);
        return -EINVAL;
    }
    return 0;
}

struct lbs_sim_opts sim_opts(const struct simargs *a)
{
    return (struct lbs_sim_opts){.bucket_bytes = a->bucket_mb * 1048576.0,
                                 .accum = a->accum,
                                 .no_overlap = a->no_overlap,
                                 .no_slowdown = a->no_slowdown,
                                 .compress_gbps = a->comp_gbps,
                                 .decompress_gbps = a->decomp_gbps,
                                 .cv_set = a->cv_given,
                                 .compute_cv = a->compute_cv,
                                 .overhead_set = a->overhead_given,
                                 .overhead_s = a->overhead_ms * 1e-3};
}

/* The job's compute spread and overhead for o: the options, else what a
 * --compute run measured, else the platform's "job"; src says which. */
void job_source(const struct simargs *a, const struct lbs_sim_model *m,
                const struct lbs_sim_platform *pl,
                struct lbs_sim_opts *o, char *src, size_t len)
{
    int meas_cv = !a->cv_given && m->compute_cv >= 0,
        meas_ovh = !a->overhead_given && m->overhead_s >= 0;
    if (meas_cv) {
        o->cv_set = 1;
        o->compute_cv = m->compute_cv;
    }
    if (meas_ovh) {
        o->overhead_set = 1;
        o->overhead_s = m->overhead_s;
    }
    if (a->cv_given && a->overhead_given)
        snprintf(src, len, "--compute-cv %g --overhead-ms %g", a->compute_cv,
                 a->overhead_ms);
    else if (meas_cv || meas_ovh)
        snprintf(src, len, "measured by %s over %zu steps (spread%s, "
                 "overhead%s)%s%s", m->file, m->measured_steps,
                 meas_cv ? "" : " not", meas_ovh ? "" : " not",
                 a->cv_given ? "; --compute-cv" : "",
                 a->overhead_given ? "; --overhead-ms" : "");
    else if (a->cv_given || a->overhead_given)
        snprintf(src, len, "%s; otherwise platform %s: %s",
                 a->cv_given ? "--compute-cv" : "--overhead-ms", pl->name,
                 pl->job_source);
    else
        snprintf(src, len, "platform %s: %s", pl->name, pl->job_source);
}

void print_json(const json_t *row)
{
    char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (s)
        puts(s);
    free(s);
}

/* --compute: a train trace, or a run directory holding one. */
static int measured_model(const char *arg, struct lbs_sim_model **out,
                          struct lbs_err *e)
{
    char path[PATH_MAX];
    struct stat st;
    if (!stat(arg, &st) && S_ISDIR(st.st_mode)) {
        glob_t gl;
        char pat[PATH_MAX];
        snprintf(pat, sizeof pat, "%s/train-trace*.jsonl", arg);
        int n = glob(pat, 0, NULL, &gl) ? 0 : (int)gl.gl_pathc;
        if (n == 1)
            snprintf(path, sizeof path, "%s", gl.gl_pathv[0]);
        globfree(&gl);
        if (n != 1)
            return lbs_err_set(e, -EINVAL, "--compute %s: %s train-trace "
                               "file in that run (name one)", arg,
                               n ? "more than one" : "no");
        arg = path;
    }
    return lbs_sim_model_from_trace(arg, out, e);
}

/* The model: --model, with --compute's measured layer times when given;
 * or, with --compute alone, the measured run's own model.  Then
 * --batch-per-gpu. */
int load_sim_model(const struct simargs *a, struct lbs_sim_model **m,
                   struct lbs_err *e)
{
    struct lbs_sim_model *meas = NULL;
    int rc = a->compute ? measured_model(a->compute, &meas, e) : 0;
    if (!rc && !a->model) {
        *m = meas;
        meas = NULL;
    } else if (!rc) {
        rc = lbs_sim_model_find(a->model, m, e);
        if (!rc && meas)
            rc = lbs_sim_model_use_times(*m, meas, e);
    }
    lbs_sim_model_free(meas);
    if (!rc && a->batch > 0)
        rc = lbs_sim_model_set_batch(*m, (double)a->batch, e);
    return rc;
}

/* Print rows (one JSON object each, or fmt's line) and append them to
 * the run's KIND.jsonl. */
int emit_rows(const struct simargs *a, struct lbs_run *run,
              const char *kind, const char *what, json_t *rows,
              void (*line)(const json_t *))
{
    struct lbs_err e;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        if (a->com.json)
            print_json(row);
        else
            line(row);
        int rc = run ? lbs_run_append(run, kind, json_incref(row), &e) : 0;
        if (rc) {
            cli_error(what, "%s", e.msg);
            return rc;
        }
    }
    return 0;
}

void point_in_free(struct point_in *in)
{
    lbs_sim_entries_free(in->ent, in->nent);
    free(in->P);
    lbs_sim_model_free(in->m);
    lbs_sim_platform_free(in->pl);
}

/* The model, platform and entries of sweep, step and netsweep. */
int point_load(const struct simargs *a, struct point_in *in,
               struct lbs_err *e)
{
    int rc = load_sim_model(a, &in->m, e);
    if (!rc) rc = lbs_sim_platform_find(a->platform, &in->pl, e);
    if (!rc) rc = lbs_sim_entries_load(a->optim, in->m, a->grad_bytes,
                                       &in->ent, &in->nent, e);
    return rc;
}

/* Every point valid before anything is written. */
int point_check(const struct simargs *a, const struct point_in *in,
                const struct lbs_sim_opts *o, struct lbs_err *e)
{
    int rc = 0;
    for (size_t i = 0; i < in->np && !rc; i++) {
        struct lbs_sim_net net;
        rc = lbs_sim_net_init(&net, in->pl, in->P[i], e);
    }
    if (!rc && o->bucket_bytes > 4 * in->m->params)
        rc = lbs_err_set(e, -EINVAL, "--bucket-mb: %g MiB is larger than "
                         "model %s (%.4g MiB of fp32 gradients)",
                         a->bucket_mb, in->m->name,
                         4 * in->m->params / 1048576.0);
    return rc;
}

int need_point_args(const struct simargs *a, const char *what)
{
    if ((!a->model && !a->compute) || !a->platform || !a->optim) {
        cli_error(what, "--model (or --compute), --platform and --optim are "
                  "required (see --help)");
        return -EINVAL;
    }
    return 0;
}
