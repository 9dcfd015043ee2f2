/* measured.c - compute from measurement: a model whose layer times come
 * from a training trace (results/schema/train-trace-v1.md) instead of
 * FLOPs, so that a user's own run drives the extrapolation.
 *
 * Per layer, the forward and backward times are the medians over the
 * trace's step lines (step 1 left out when there are three or more: it
 * pays first-touch and warm-up costs), in the trace's time unit (ms); the
 * weight-gradient share of the backward pass is sum(wgrad_ms) /
 * sum(bwd_ms) over the steps that kept every layer.  The per-GPU batch is
 * the trace's local batch.  Times measured on this machine are taken as
 * they are on every platform: the platform then only prices communication
 * and the optimizer.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define MAX_STEP_LINES 1000000

/* The header: layers (name, n, ndim) and the local batch. */
static int read_header(const struct sj *c, const json_t *h,
                       struct lbs_sim_model *m)
{
    const json_t *fmt = json_object_get(h, "format");
    if (!json_is_string(fmt) ||
        strcmp(json_string_value(fmt), "lbscale-train-trace"))
        return sj_fail(c, "", "format", "a training trace (\"lbscale-train-"
                       "trace\", lbscale train) is needed for measured "
                       "compute times");
    int rc = sj_num(c, h, "", "local_batch", SJ_REQ, 0, 1, 1e9,
                    &m->batch_per_gpu);
    const json_t *ls = json_object_get(h, "layers");
    size_t n = json_array_size(ls);
    if (!rc && (!json_is_array(ls) || !n || n > 1000000))
        rc = sj_fail(c, "", "layers", "must be a non-empty array");
    if (!rc && !(m->l = calloc(n, sizeof *m->l)))
        rc = lbs_err_set(c->err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
        const json_t *o = json_array_get(ls, i);
        char path[40];
        double v;
        snprintf(path, sizeof path, "layers[%zu].", i);
        const json_t *nm = json_object_get(o, "name");
        if (!json_is_string(nm))
            return sj_fail(c, path, "name", "must be a string");
        m->l[i].name = strdup(json_string_value(nm));
        m->nlayers = i + 1;
        if (!m->l[i].name)
            return lbs_err_set(c->err, -ENOMEM, "out of memory");
        if ((rc = sj_num(c, o, path, "n", SJ_REQ | SJ_INT, 0, 1, 1e13,
                         &m->l[i].n)) ||
            (rc = sj_num(c, o, path, "ndim", SJ_INT, 2, 1, 8, &v)))
            return rc;
        m->l[i].ndim = (int)v;
        m->params += m->l[i].n;
    }
    return rc;
}

/* One per-layer array of a step line into row[0..L). */
static int read_times(const struct sj *c, const json_t *s, const char *key,
                      size_t L, double *row, size_t k)
{
    const json_t *a = json_object_get(s, key);
    if (!json_is_array(a) || json_array_size(a) != L)
        return sj_fail(c, "", key, "step line %zu: must be an array of %zu "
                       "numbers (one per layer)", k + 1, L);
    for (size_t i = 0; i < L; i++) {
        const json_t *x = json_array_get(a, i);
        double v = json_number_value(x);
        if (!json_is_number(x) || !(v >= 0) || v > 1e7)
            return sj_fail(c, "", key, "step line %zu, layer %zu: not a time "
                           "in [0, 1e7] ms", k + 1, i);
        row[i] = v;
    }
    return 0;
}

/* Times per step, step-major: t[(step * 3 + kind) * L + layer]. */
struct steps {
    double *t;
    double *other;      /* per step: step_ms - layers - optim_ms, or NAN */
    size_t n, cap, L;
};

static int add_step(const struct sj *c, struct steps *st, const json_t *o)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 64;
        double *t = st->n < MAX_STEP_LINES
                    ? realloc(st->t, cap * 3 * st->L * sizeof *t) : NULL;
        if (!t)
            return lbs_err_set(c->err, -ENOMEM, "%s: out of memory or more "
                               "than %d step lines", c->file, MAX_STEP_LINES);
        st->t = t;
        double *o2 = realloc(st->other, cap * sizeof *o2);
        if (!o2)
            return lbs_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
        st->other = o2;
        st->cap = cap;
    }
    double *row = st->t + st->n * 3 * st->L;
    int rc = read_times(c, o, "fwd_ms", st->L, row, st->n);
    if (!rc) rc = read_times(c, o, "bwd_ms", st->L, row + st->L, st->n);
    if (!rc) rc = read_times(c, o, "wgrad_ms", st->L, row + 2 * st->L,
                             st->n);
    /* the step's time outside its layers and the optimizer (optional
     * keys: NAN when absent or not plausible) */
    const json_t *sm = json_object_get(o, "step_ms"),
                 *om = json_object_get(o, "optim_ms");
    double other = NAN;
    if (json_is_number(sm) && json_is_number(om)) {
        double lay = 0;
        for (size_t i = 0; i < 2 * st->L; i++)
            lay += row[i];
        other = json_number_value(sm) - lay - json_number_value(om);
        if (!(other >= 0 && other <= 1e7))
            other = NAN;
    }
    if (!rc)
        st->other[st->n] = other;
    st->n += !rc;
    return rc;
}

static int is_step_line(const json_t *o)
{
    const json_t *t = json_object_get(o, "type");
    return json_is_string(t) && !strcmp(json_string_value(t), "step");
}

/* Medians per layer (leaving out step 1 of three or more) and the
 * weight-gradient share of the backward pass. */
static int summarise(struct steps *st, struct lbs_sim_model *m)
{
    size_t skip = st->n >= 3 ? 1 : 0, k = st->n - skip, L = st->L;
    double *col = malloc(k * sizeof *col), wg = 0, bw = 0;
    if (!col)
        return -ENOMEM;
    for (size_t i = 0; i < L; i++)
        for (int kind = 0; kind < 2; kind++) {
            for (size_t s = 0; s < k; s++)
                col[s] = st->t[((s + skip) * 3 + (size_t)kind) * L + i];
            double v = 1e-3 * sj_median(col, k);
            *(kind ? &m->l[i].bwd_s : &m->l[i].fwd_s) = v;
        }
    for (size_t s = skip; s < st->n; s++)
        for (size_t i = 0; i < L; i++) {
            bw += st->t[(s * 3 + 1) * L + i];
            wg += st->t[(s * 3 + 2) * L + i];
        }
    m->wgrad_frac = bw > 0 ? fmin(1, wg / bw) : 0.5;
    /* per-step compute: its spread across steps stands for the spread
     * across ranks (each rank's own noise, as a real job's) */
    double s1 = 0, s2 = 0;
    size_t no = 0;
    for (size_t s = skip; s < st->n; s++) {
        double v = 0;
        for (size_t i = 0; i < 2 * L; i++)
            v += st->t[s * 3 * L + i];
        s1 += v;
        s2 += v * v;
        if (!isnan(st->other[s]))
            col[no++] = st->other[s];
    }
    double mean = s1 / (double)k;
    m->compute_cv = k >= 3 && mean > 0
        ? sqrt(fmax(0, (s2 - s1 * mean) / (double)(k - 1))) / mean : -1;
    m->overhead_s = no >= 1 ? 1e-3 * sj_median(col, no) : -1;
    m->measured_steps = k;
    free(col);
    return 0;
}

/* The train trace's text (sj_parse_fn): one JSON object per line. */
static int parse_trace(const char *text, size_t len, const char *path,
                       void *out, struct lbs_err *err)
{
    struct sj c = {path, err};
    int rc = 0;
    struct lbs_sim_model *m = calloc(1, sizeof *m);
    struct steps st = {0};
    if (!m)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    sj_copy_path(m->file, sizeof m->file, path);
    m->efficiency = 1;
    m->seq_len = 1;
    m->bucket_bytes = 25 * 1048576.0;
    for (const char *p = text, *nl; !rc && p < text + len; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(text + len - p));
        if (!nl)
            nl = text + len;
        json_error_t je;
        json_t *o = json_loadb(p, (size_t)(nl - p), 0, &je);
        if (!json_is_object(o)) {
            if (strspn(p, " \t\r") < (size_t)(nl - p))
                rc = sj_fail(&c, "", "line", "not a JSON object");
        } else if (p == text) {
            rc = read_header(&c, o, m);
            st.L = m->nlayers;
        } else if (is_step_line(o)) {
            rc = add_step(&c, &st, o);
        }
        json_decref(o);
    }
    if (!rc && !st.n)
        rc = sj_fail(&c, "", "steps", "no step lines (a trace written by "
                     "lbscale train has one per step)");
    if (!rc && summarise(&st, m))
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    if (!rc) {
        const char *b = strrchr(path, '/');
        snprintf(m->name, sizeof m->name, "measured:%.40s", b ? b + 1 : path);
        if (m->bucket_bytes > 4 * m->params)
            m->bucket_bytes = 4 * m->params;
    }
    free(st.t);
    free(st.other);
    if (rc) {
        lbs_sim_model_free(m);
        return rc;
    }
    *(struct lbs_sim_model **)out = m;
    return 0;
}

int lbs_sim_model_from_trace(const char *path, struct lbs_sim_model **out,
                             struct lbs_err *err)
{
    *out = NULL;
    return sj_load_file(path, LBS_SIM_TRACE_MAX_BYTES, 1, parse_trace, out,
                        err);
}

int lbs_sim_model_use_times(struct lbs_sim_model *m,
                            const struct lbs_sim_model *measured,
                            struct lbs_err *err)
{
    if (m->nlayers != measured->nlayers)
        return lbs_err_set(err, -EINVAL, "--compute %s: %zu layers, model %s "
                           "has %zu (measure the model you simulate)",
                           measured->file, measured->nlayers, m->name,
                           m->nlayers);
    for (size_t i = 0; i < m->nlayers; i++)
        if (m->l[i].n != measured->l[i].n)
            return lbs_err_set(err, -EINVAL, "--compute %s: layer %zu has "
                               "%.0f parameters, model %s's %.0f",
                               measured->file, i, measured->l[i].n, m->name,
                               m->l[i].n);
    for (size_t i = 0; i < m->nlayers; i++) {
        m->l[i].fwd_s = measured->l[i].fwd_s;
        m->l[i].bwd_s = measured->l[i].bwd_s;
    }
    m->batch_per_gpu = measured->batch_per_gpu;
    m->wgrad_frac = measured->wgrad_frac;
    m->compute_cv = measured->compute_cv;
    m->overhead_s = measured->overhead_s;
    m->measured_steps = measured->measured_steps;
    return 0;
}
