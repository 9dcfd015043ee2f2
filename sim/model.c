/* model.c - the model reader (format "lbscale-model", version 1).
 *
 *   {"format": "lbscale-model", "version": 1, "name": "bert-large",
 *    "description": "...", "sources": [...],
 *    "batch_per_gpu": 64, "seq_len": 128,
 *    "efficiency": 0.5,         fraction of the GPU's peak the kernels reach
 *    "bucket_mb": 25,           DDP bucket cap in MiB (PyTorch default)
 *    "wgrad_frac": 0.5,         weight-gradient share of a backward
 *    "layers": [{"name": "embeddings.word", "shape": [30522, 1024],
 *                "fwd_gflops": 0, "bwd_gflops": 0}, ...]}
 *
 * One entry per parameter tensor, in the order the optimizer sees them
 * (the same list a trace's header carries, so traces match by index; the
 * file is also a valid `lbscale optim --layers FILE.json`).  A tensor's
 * fwd_gflops is the forward work that produces its gradient (the GEMM it
 * belongs to, plus attention terms on the attention output weight) at the
 * stated per-GPU batch; bwd_gflops defaults to twice that.  Measured times
 * from a training trace may be given instead as fwd_ms / bwd_ms (bwd_ms
 * defaults to 2 fwd_ms); they win over FLOPs.  Compute time = FLOPs /
 * (gpu.peak_tflops x efficiency).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define MAX_LAYERS 1000000
/* Plausible ranges (sim/README.md, "Ranges"): a layer's forward work up
 * to 1e9 GFLOP (an exaFLOP) or 1e7 ms per step; efficiency at least 0.1%
 * of peak.  With the platform's ranges every time stays finite. */
#define GFLOP_MAX 1e9
#define MS_MAX 1e7
#define EFF_MIN 1e-3

static int read_layer(const struct sj *c, const json_t *o, size_t i,
                      struct lbs_sim_layer *l)
{
    static const char *const keys[] = {"name", "shape", "n", "ndim",
        "fwd_gflops", "bwd_gflops", "fwd_ms", "bwd_ms", "note", NULL};
    char path[40], name[256];
    double v = 0;
    snprintf(path, sizeof path, "layers[%zu].", i);
    if (!json_is_object(o))
        return sj_fail(c, path, "", "must be an object");
    int rc = sj_known(c, o, path, keys);
    if (!rc) rc = sj_str(c, o, path, "name", SJ_REQ, NULL, name, sizeof name);
    if (rc)
        return rc;
    const json_t *shape = json_object_get(o, "shape");
    if (shape) {
        size_t nd = json_array_size(shape);
        if (!json_is_array(shape) || nd < 1 || nd > 4)
            return sj_fail(c, path, "shape", "must be an array of 1..4 "
                           "positive integers");
        l->n = 1;
        for (size_t j = 0; j < nd; j++) {
            const json_t *d = json_array_get(shape, j);
            double x = json_is_integer(d) ? (double)json_integer_value(d) : 0;
            if (!json_is_integer(d) || x < 1 || x > 1e12)
                return sj_fail(c, path, "shape", "dimension %zu is not a "
                               "positive integer", j);
            l->n *= x;
        }
        if (l->n > 1e13)
            return sj_fail(c, path, "shape", "more than 1e13 parameters");
        l->ndim = (int)nd;
        if (json_object_get(o, "n"))
            return sj_fail(c, path, "n", "give shape or n, not both");
    } else {
        if ((rc = sj_num(c, o, path, "n", SJ_REQ | SJ_INT, 0, 1, 1e13, &l->n)))
            return rc;
        if ((rc = sj_num(c, o, path, "ndim", SJ_INT, 2, 1, 4, &v)))
            return rc;
        l->ndim = (int)v;
    }
    if ((rc = sj_num(c, o, path, "fwd_gflops", 0, 0, 0, GFLOP_MAX, &v)))
        return rc;
    l->fwd_flops = v * 1e9;
    if ((rc = sj_num(c, o, path, "bwd_gflops", 0, 2 * v, 0, 2 * GFLOP_MAX,
                     &v)))
        return rc;
    l->bwd_flops = v * 1e9;
    l->fwd_s = l->bwd_s = -1;
    if (json_object_get(o, "fwd_ms")) {
        if ((rc = sj_num(c, o, path, "fwd_ms", 0, 0, 0, MS_MAX, &v)))
            return rc;
        l->fwd_s = v * 1e-3;
        if ((rc = sj_num(c, o, path, "bwd_ms", 0, 2 * v, 0, 2 * MS_MAX, &v)))
            return rc;
        l->bwd_s = v * 1e-3;
    } else if (json_object_get(o, "bwd_ms")) {
        return sj_fail(c, path, "bwd_ms", "needs fwd_ms as well");
    }
    if (!(l->name = strdup(name)))
        return lbs_err_set(c->err, -ENOMEM, "out of memory");
    return 0;
}

static int parse_root(const struct sj *c, const json_t *root,
                      struct lbs_sim_model *m)
{
    static const char *const top[] = {"format", "version", "name",
        "description", "sources", "notes", "batch_per_gpu", "seq_len",
        "efficiency", "bucket_mb", "wgrad_frac", "layers", NULL};
    double v = 0;
    int rc = sj_header(c, root, "lbscale-model", 1);
    if (!rc) rc = sj_known(c, root, "", top);
    if (!rc) rc = sj_str(c, root, "", "name", SJ_REQ, NULL, m->name,
                         sizeof m->name);
    if (!rc && !m->name[0])
        rc = sj_fail(c, "", "name", "must not be empty");
    if (!rc) rc = sj_num(c, root, "", "batch_per_gpu", 0, 1, 1e-3, 1e9,
                         &m->batch_per_gpu);
    if (!rc) rc = sj_num(c, root, "", "seq_len", 0, 1, 1, 1e9, &m->seq_len);
    if (!rc) rc = sj_num(c, root, "", "efficiency", SJ_REQ, 0, EFF_MIN, 1,
                         &m->efficiency);
    if (!rc) rc = sj_num(c, root, "", "bucket_mb", 0, 25, 1e-6, 1e9, &v);
    m->bucket_bytes = v * 1048576.0;
    if (!rc) rc = sj_num(c, root, "", "wgrad_frac", 0, 0.5, 0, 1,
                         &m->wgrad_frac);
    if (rc)
        return rc;
    const json_t *ls = json_object_get(root, "layers");
    size_t n = json_array_size(ls);
    if (!ls)
        return sj_fail(c, "", "layers", "missing (required)");
    if (!json_is_array(ls) || n == 0)
        return sj_fail(c, "", "layers", "must be a non-empty array");
    if (n > MAX_LAYERS)
        return sj_fail(c, "", "layers", "more than %d layers", MAX_LAYERS);
    if (!(m->l = calloc(n, sizeof *m->l)))
        return lbs_err_set(c->err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if ((rc = read_layer(c, json_array_get(ls, i), i, &m->l[i])))
            return rc;
        m->nlayers = i + 1;
        m->params += m->l[i].n;
    }
    if (m->bucket_bytes > 4 * m->params)
        return sj_fail(c, "", "bucket_mb", "a %g MiB bucket is larger than "
                       "the model's %.3g MiB of fp32 gradients", v,
                       4 * m->params / 1048576.0);
    return 0;
}

int lbs_sim_model_parse(const char *text, const char *file,
                        struct lbs_sim_model **out, struct lbs_err *err)
{
    struct sj c = {file, err};
    json_t *root;
    *out = NULL;
    int rc = sj_load(&c, text, strlen(text), &root);
    if (rc)
        return rc;
    struct lbs_sim_model *m = calloc(1, sizeof *m);
    if (!m) {
        json_decref(root);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    sj_copy_path(m->file, sizeof m->file, file);
    m->compute_cv = m->overhead_s = -1;     /* not measured */
    rc = parse_root(&c, root, m);
    json_decref(root);
    if (rc) {
        lbs_sim_model_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

static int parse_file(const char *text, size_t len, const char *file,
                      void *out, struct lbs_err *err)
{
    (void)len;   /* a C string: sj_read_file refused NUL bytes */
    return lbs_sim_model_parse(text, file, out, err);
}

int lbs_sim_model_load(const char *path, struct lbs_sim_model **out,
                       struct lbs_err *err)
{
    *out = NULL;
    return sj_load_file(path, LBS_SIM_MODEL_MAX_BYTES, 0, parse_file, out,
                        err);
}

void lbs_sim_model_free(struct lbs_sim_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nlayers; i++)
        free(m->l[i].name);
    free(m->l);
    free(m);
}

double lbs_sim_layer_fwd(const struct lbs_sim_model *m,
                         const struct lbs_sim_platform *pl, size_t i)
{
    const struct lbs_sim_layer *l = &m->l[i];
    return l->fwd_s >= 0 ? l->fwd_s
                         : l->fwd_flops / (pl->peak_flops * m->efficiency);
}

double lbs_sim_layer_bwd(const struct lbs_sim_model *m,
                         const struct lbs_sim_platform *pl, size_t i)
{
    const struct lbs_sim_layer *l = &m->l[i];
    return l->bwd_s >= 0 ? l->bwd_s
                         : l->bwd_flops / (pl->peak_flops * m->efficiency);
}

int lbs_sim_model_set_batch(struct lbs_sim_model *m, double batch,
                            struct lbs_err *err)
{
    if (!(batch >= 1 && batch <= 1e7) || batch != floor(batch))
        return lbs_err_set(err, -EINVAL, "batch per GPU %g: an integer in "
                           "[1, 1e7]", batch);
    if (!(m->batch_per_gpu > 0))
        return lbs_err_set(err, -EINVAL, "model %s states no batch_per_gpu "
                           "to scale from", m->name);
    double f = batch / m->batch_per_gpu;
    for (size_t i = 0; i < m->nlayers; i++) {
        struct lbs_sim_layer *l = &m->l[i];
        l->fwd_flops *= f;
        l->bwd_flops *= f;
        if (l->fwd_s >= 0)
            l->fwd_s *= f;
        if (l->bwd_s >= 0)
            l->bwd_s *= f;
    }
    m->batch_per_gpu = batch;
    return 0;
}
