/* torch_import.c - a model from a PyTorch profiler trace (sim model import).
 *
 * Reads the Chrome trace JSON that torch.profiler (Kineto: an object with
 * "traceEvents") or torch's legacy profiler (a bare event list, what
 * Debian's torch 1.13 writes) exports, and makes an "lbscale-model" with
 * measured times:
 *
 *  - steps: the "ProfilerStep#N" spans when the trace has them, else the
 *    stretches that end with each "Optimizer.step#..." event.  The first
 *    step is a warm-up and is left out when there are two or more; each
 *    figure below is the median over the steps used.
 *  - forward: from the step's first operator outside the optimizer's own
 *    events to its first "autograd::engine::evaluate_function:" event.
 *  - gradients: one "torch::autograd::AccumulateGrad" per parameter per
 *    backward; its end is when that gradient is ready, the moment
 *    DistributedDataParallel can add it to a bucket.  A gradient's bwd_ms
 *    is the time since the one before it was ready (the first: since the
 *    backward began), so the layer times add up to the backward until the
 *    last gradient and the simulator's buckets become ready when DDP's do.
 *  - sizes: Kineto's "Input Dims" of AccumulateGrad (record_shapes=True);
 *    the legacy profiler records none, so the parameter list is given
 *    apart (--params: model.named_parameters() names and shapes).
 *  - order: the model lists tensors as the optimizer sees them, which is
 *    the reverse of the order the gradients become ready (autograd walks
 *    the graph backwards; DDP buckets in this order too).  With both the
 *    trace's shapes and --params given, every shape is checked against it.
 *  - forward per tensor: the legacy trace cannot tell which module an
 *    operator belongs to, so the step's forward time is shared out in
 *    proportion to each tensor's backward time (a GEMM's backward is about
 *    twice its forward, whatever its size).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define TORCH_TRACE_MAX_BYTES ((size_t)1 << 30)
#define TORCH_MAX_GRADS 1000000
/* The model reader's bound on a layer's time (1e7 ms, model.c MS_MAX):
 * no step's forward or backward may exceed it. */
#define STEP_US_MAX 1e10

enum ev_kind { EV_OTHER, EV_STEP, EV_OPT_STEP, EV_OPT, EV_BWD, EV_ACC };

struct ev {
    double t0, t1;                /* microseconds */
    enum ev_kind kind;
    const json_t *dims;           /* EV_ACC: args["Input Dims"][0] or NULL */
};

struct evs {
    struct ev *e;
    double *optend;     /* [i]: the latest end of an optimizer event
                           (step, zero_grad) starting no later than e[i] */
    size_t n;
    int kineto;
};

static enum ev_kind kind_of(const char *name)
{
    if (!strncmp(name, "ProfilerStep#", 13))
        return EV_STEP;
    if (!strncmp(name, "Optimizer.step#", 15))
        return EV_OPT_STEP;
    if (!strncmp(name, "Optimizer.", 10))
        return EV_OPT;
    if (!strncmp(name, "autograd::engine::evaluate_function:", 36))
        return EV_BWD;
    if (!strcmp(name, "torch::autograd::AccumulateGrad"))
        return EV_ACC;
    return EV_OTHER;
}

static const json_t *acc_dims(const json_t *o)
{
    const json_t *d = json_object_get(json_object_get(o, "args"),
                                      "Input Dims");
    return json_is_array(d) ? json_array_get(d, 0) : NULL;
}

/* One complete ("ph": "X") event, or 0 for anything else (instant events,
 * flows, metadata: Kineto writes several kinds). */
static int read_event(const json_t *o, struct ev *out)
{
    const char *ph = json_string_value(json_object_get(o, "ph"));
    const char *name = json_string_value(json_object_get(o, "name"));
    const json_t *ts = json_object_get(o, "ts"), *dur = json_object_get(o,
                                                                       "dur");
    if (!ph || strcmp(ph, "X") || !name || !json_is_number(ts) ||
        !json_is_number(dur))
        return 0;
    double t = json_number_value(ts), d = json_number_value(dur);
    if (!isfinite(t) || !isfinite(d) || d < 0 || fabs(t) > 1e18)
        return 0;
    *out = (struct ev){t, t + d, kind_of(name), NULL};
    if (out->kind == EV_ACC)
        out->dims = acc_dims(o);
    return 1;
}

static int cmp_t0(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;   /* an enclosing event first */
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return x->t1 > y->t1 ? -1 : x->t1 < y->t1;
}

static int read_events(const char *file, const json_t *root, struct evs *E,
                       struct lbs_err *err)
{
    const json_t *list = root;
    E->kineto = json_is_object(root);
    if (E->kineto)
        list = json_object_get(root, "traceEvents");
    if (!json_is_array(list))
        return lbs_err_set(err, -EINVAL, "%s: not a PyTorch profiler trace "
                           "(neither an event list nor an object with "
                           "\"traceEvents\")", file);
    size_t n = json_array_size(list);
    if (!(E->e = calloc(n ? n : 1, sizeof *E->e)))
        return lbs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        E->n += (size_t)read_event(json_array_get(list, i), &E->e[E->n]);
    qsort(E->e, E->n, sizeof *E->e, cmp_t0);
    if (!(E->optend = calloc(E->n ? E->n : 1, sizeof *E->optend)))
        return lbs_err_set(err, -ENOMEM, "out of memory");
    double end = -INFINITY;
    for (size_t i = 0; i < E->n; i++) {
        if (E->e[i].kind == EV_OPT || E->e[i].kind == EV_OPT_STEP)
            end = fmax(end, E->e[i].t1);
        E->optend[i] = end;
    }
    return 0;
}

/* ---- steps ------------------------------------------------------------ */

struct win {
    double t0, t1;
};

static size_t count_kind(const struct evs *E, enum ev_kind k)
{
    size_t c = 0;
    for (size_t i = 0; i < E->n; i++)
        c += E->e[i].kind == k;
    return c;
}

/* The steps: ProfilerStep spans, else (previous Optimizer.step's end,
 * this one's end]. */
static int find_steps(const char *file, const struct evs *E, struct win **w,
                      size_t *nw, struct lbs_err *err)
{
    enum ev_kind k = count_kind(E, EV_STEP) ? EV_STEP : EV_OPT_STEP;
    size_t n = count_kind(E, k), j = 0;
    if (!n)
        return lbs_err_set(err, -EINVAL, "%s: no training step found (no "
                           "\"ProfilerStep#\" or \"Optimizer.step#\" events: "
                           "profile whole steps, optimizer included)", file);
    if (!(*w = calloc(n, sizeof **w)))
        return lbs_err_set(err, -ENOMEM, "out of memory");
    double prev = -INFINITY;
    for (size_t i = 0; i < E->n; i++) {
        if (E->e[i].kind != k)
            continue;
        (*w)[j].t0 = k == EV_STEP ? E->e[i].t0 : prev;
        (*w)[j].t1 = E->e[i].t1;
        prev = E->e[i].t1;
        j++;
    }
    *nw = n;
    return 0;
}

static int inside(const struct ev *e, const struct win *w)
{
    return e->t0 >= w->t0 && e->t1 <= w->t1;
}

/* The first event starting at or after t (events sorted by t0). */
static size_t first_after(const struct evs *E, double t)
{
    size_t lo = 0, hi = E->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (E->e[mid].t0 >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* One step's forward time and gradient ready times (ascending). */
struct step {
    double fwd;                   /* microseconds */
    double *bwd;                  /* per gradient, in ready order */
    const json_t **dims;
    size_t ngrad;
};

static int cmp_t1(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    return x->t1 < y->t1 ? -1 : x->t1 > y->t1;
}

static int read_step(const char *file, const struct evs *E,
                     const struct win *w, size_t si, struct step *s,
                     struct lbs_err *err)
{
    double fwd0 = INFINITY, bwd0 = INFINITY;
    size_t na = 0;
    struct ev *acc = calloc(E->n ? E->n : 1, sizeof *acc);
    if (!acc)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = first_after(E, w->t0); i < E->n && E->e[i].t0 <= w->t1;
         i++) {
        const struct ev *e = &E->e[i];
        if (!inside(e, w))
            continue;
        if (e->kind == EV_BWD && e->t0 < bwd0)
            bwd0 = e->t0;
        else if (e->kind == EV_ACC)
            acc[na++] = *e;
        else if (e->kind == EV_OTHER && e->t0 < fwd0 &&
                 E->optend[i] < e->t1)
            fwd0 = e->t0;
    }
    size_t keep = 0;    /* a gradient is ready during the backward only */
    for (size_t k = 0; k < na; k++)
        if (acc[k].t0 >= bwd0)
            acc[keep++] = acc[k];
    na = keep;
    int rc = 0;
    if (!na || !isfinite(bwd0) || !(fwd0 < bwd0))
        rc = lbs_err_set(err, -EINVAL, "%s: step %zu has no %s", file,
                         si + 1, !na ? "AccumulateGrad events (no parameter "
                         "received a gradient)" : !isfinite(bwd0) ?
                         "backward (autograd::engine) events" :
                         "forward operators before its backward");
    else if (na > TORCH_MAX_GRADS)
        rc = lbs_err_set(err, -EINVAL, "%s: more than %d gradients in a "
                         "step", file, TORCH_MAX_GRADS);
    else if (!(s->bwd = calloc(na, sizeof *s->bwd)) ||
             !(s->dims = calloc(na, sizeof *s->dims)))
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    if (!rc) {
        qsort(acc, na, sizeof *acc, cmp_t1);
        s->fwd = bwd0 - fwd0;
        s->ngrad = na;
        for (size_t k = 0; k < na; k++) {
            s->bwd[k] = acc[k].t1 - (k ? acc[k - 1].t1 : bwd0);
            s->dims[k] = acc[k].dims;
        }
    }
    free(acc);
    return rc;
}

/* ---- shapes ----------------------------------------------------------- */

#define MAX_DIMS 4

struct shape {
    int nd;
    long long d[MAX_DIMS];
};

/* A JSON shape: an array of 0..4 positive integers ([] is a scalar, kept
 * as [1]); 0 when it is not one. */
static int read_shape(const json_t *a, struct shape *s)
{
    size_t n = json_array_size(a);
    if (!json_is_array(a) || n > MAX_DIMS)
        return 0;
    s->nd = n ? (int)n : 1;
    s->d[0] = 1;
    for (size_t j = 0; j < n; j++) {
        const json_t *v = json_array_get(a, j);
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > 1000000000000LL)
            return 0;
        s->d[j] = json_integer_value(v);
    }
    return 1;
}

static int same_shape(const struct shape *a, const struct shape *b)
{
    return a->nd == b->nd && !memcmp(a->d, b->d, sizeof(long long) *
                                     (size_t)a->nd);
}

static void shape_str(const struct shape *s, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int j = 0; j < s->nd && o < len; j++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", j ? ", " : "",
                              s->d[j]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

static json_t *shape_json(const struct shape *s)
{
    json_t *a = json_array();
    for (int j = 0; a && j < s->nd; j++)
        json_array_append_new(a, json_integer(s->d[j]));
    return a;
}

/* ---- the --params file: {"params": [{"name", "shape"}]} or the list -- */

struct params {
    size_t n;
    char **name;
    struct shape *shape;
};

static void params_free(struct params *p)
{
    for (size_t i = 0; p->name && i < p->n; i++)
        free(p->name[i]);
    free(p->name);
    free(p->shape);
}

static int read_params(const char *file, struct params *p,
                       struct lbs_err *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = sj_read_file(file, LBS_SIM_MODEL_MAX_BYTES, 0, &text, &len, err);
    if (rc)
        return rc;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root)
        return lbs_err_set(err, -EINVAL, "%s: line %d: not valid JSON: %s",
                           file, je.line, je.text);
    const json_t *l = json_is_object(root) ? json_object_get(root, "params")
                                           : root;
    size_t n = json_array_size(l);
    if (!json_is_array(l) || !n || n > TORCH_MAX_GRADS)
        rc = lbs_err_set(err, -EINVAL, "%s: expected a non-empty list of "
                         "{\"name\", \"shape\"} (or {\"params\": [...]})",
                         file);
    else if (!(p->name = calloc(n, sizeof *p->name)) ||
             !(p->shape = calloc(n, sizeof *p->shape)))
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++, p->n = i) {
        const json_t *o = json_array_get(l, i);
        const char *nm = json_string_value(json_object_get(o, "name"));
        if (!nm || !*nm || strlen(nm) > 255 ||
            !read_shape(json_object_get(o, "shape"), &p->shape[i]))
            rc = lbs_err_set(err, -EINVAL, "%s: params[%zu] needs a "
                             "\"name\" (1..255 characters) and a \"shape\" "
                             "(0..4 positive integers)", file, i);
        else if (!(p->name[i] = strdup(nm)))
            rc = lbs_err_set(err, -ENOMEM, "out of memory");
    }
    json_decref(root);
    return rc;
}

/* ---- the model -------------------------------------------------------- */

/* The trace's shape of the gradient ready k-th, the same in every step. */
static int trace_shape(const char *file, const struct step *s, size_t ns,
                       size_t k, struct shape *out, struct lbs_err *err)
{
    struct shape sh;
    for (size_t i = 0; i < ns; i++) {
        if (!s[i].dims[k] || !read_shape(s[i].dims[k], &sh))
            return lbs_err_set(err, -EINVAL, "%s: gradient %zu of step "
                               "%zu has no valid \"Input Dims\"", file, k + 1,
                               i + 1);
        if (i && !same_shape(&sh, out))
            return lbs_err_set(err, -EINVAL, "%s: gradient %zu changes "
                               "shape between steps", file, k + 1);
        *out = sh;
    }
    return 0;
}

/* The shape of the gradient ready k-th: the trace's (checked against
 * --params when given) or --params' reversed. */
static int grad_shape(const char *file, const struct step *s, size_t ns,
                      size_t k, const struct params *p, struct shape *out,
                      struct lbs_err *err)
{
    size_t j = s[0].ngrad - 1 - k;
    if (!s[0].dims[k]) {
        if (!p->n)
            return lbs_err_set(err, -EINVAL, "%s: the trace records no "
                               "tensor shapes (the legacy profiler, or "
                               "record_shapes=False): give --params", file);
        *out = p->shape[j];
        return 0;
    }
    int rc = trace_shape(file, s, ns, k, out, err);
    if (!rc && p->n && !same_shape(&p->shape[j], out)) {
        char a[96], b[96];
        shape_str(&p->shape[j], a, sizeof a);
        shape_str(out, b, sizeof b);
        rc = lbs_err_set(err, -EINVAL, "parameter %zu ('%s') has shape %s "
                         "but gradient %zu of the trace has %s (gradients "
                         "are taken to be ready in reverse parameter order)",
                         j, p->name[j], a, k + 1, b);
    }
    return rc;
}

static json_t *layer_json(const char *name, const struct shape *sh,
                          double fwd_us, double bwd_us)
{
    json_t *o = json_object();
    if (o && (json_object_set_new(o, "name", json_string(name)) ||
              json_object_set_new(o, "shape", shape_json(sh)) ||
              json_object_set_new(o, "fwd_ms", json_real(fwd_us * 1e-3)) ||
              json_object_set_new(o, "bwd_ms", json_real(bwd_us * 1e-3)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The layers, optimizer order: layer j is the gradient ready L-1-j. */
static int build_layers(const char *file, const struct step *s, size_t ns,
                        const struct params *p, json_t *layers,
                        struct lbs_sim_torch_info *info, struct lbs_err *err)
{
    size_t L = s[0].ngrad;
    double *x = calloc(ns * (L + 1), sizeof *x), *bwd = x + ns, tot = 0;
    if (!x)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < ns; i++)
        x[i] = s[i].fwd;
    double fwd = sj_median(x, ns);
    for (size_t k = 0; k < L; k++) {
        for (size_t i = 0; i < ns; i++)
            x[i] = s[i].bwd[k];
        bwd[k] = sj_median(x, ns);
        tot += bwd[k];
    }
    int rc = 0;
    for (size_t j = 0; j < L && !rc; j++) {
        size_t k = L - 1 - j;
        struct shape sh;
        char nm[32];
        snprintf(nm, sizeof nm, "grad%zu", j);
        if ((rc = grad_shape(file, s, ns, k, p, &sh, err)))
            break;
        double f = tot > 0 ? fwd * bwd[k] / tot : fwd / (double)L;
        json_t *o = layer_json(p->n ? p->name[j] : nm, &sh, f, bwd[k]);
        if (!o || json_array_append_new(layers, o))
            rc = lbs_err_set(err, -ENOMEM, "out of memory");
        double n = 1;
        for (int d = 0; d < sh.nd; d++)
            n *= (double)sh.d[d];
        info->params += n;
    }
    info->fwd_ms = fwd * 1e-3;
    info->bwd_ms = tot * 1e-3;
    if (!rc && (fwd > STEP_US_MAX || tot > STEP_US_MAX))
        rc = lbs_err_set(err, -EINVAL, "%s: a step of %.3g s (forward) and "
                         "%.3g s (backward): more than the %g s a model "
                         "layer may take", file, fwd * 1e-6, tot * 1e-6,
                         STEP_US_MAX * 1e-6);
    free(x);
    return rc;
}

static int read_steps(const char *file, const struct evs *E,
                      struct step **out, size_t *nused,
                      struct lbs_sim_torch_info *info, struct lbs_err *err)
{
    struct win *w = NULL;
    size_t nw = 0;
    int rc = find_steps(file, E, &w, &nw, err);
    if (rc)
        return rc;
    size_t first = nw >= 2 ? 1 : 0, ns = nw - first;
    struct step *s = calloc(ns, sizeof *s);
    if (!s)
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < ns; i++) {
        rc = read_step(file, E, &w[first + i], first + i, &s[i], err);
        if (!rc && s[i].ngrad != s[0].ngrad)
            rc = lbs_err_set(err, -EINVAL, "%s: step %zu has %zu gradients, "
                             "step %zu %zu", file, first + i + 1,
                             s[i].ngrad, first + 1, s[0].ngrad);
    }
    info->steps_total = nw;
    info->steps_used = ns;
    *out = s;
    *nused = ns;
    free(w);
    return rc;
}

static void steps_free(struct step *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) {
        free(s[i].bwd);
        free(s[i].dims);
    }
    free(s);
}

static json_t *model_root(const struct lbs_sim_torch_opts *o,
                          const struct lbs_sim_torch_info *info)
{
    char src[600], note[400];
    snprintf(src, sizeof src, "%s (%s, %zu bytes; %s layout; steps %zu..%zu "
             "of %zu, median)", o->trace, o->trace_sum, o->trace_bytes,
             info->kineto ? "Kineto" : "legacy profiler",
             info->steps_total - info->steps_used + 1, info->steps_total,
             info->steps_total);
    snprintf(note, sizeof note, "imported by `lbscale sim model import`: "
             "measured times (efficiency is not used); a tensor's bwd_ms is "
             "the time since the gradient before it was ready, its fwd_ms "
             "the step's forward shared out in proportion to bwd_ms "
             "(sim/torch_import.c)");
    json_t *r = json_pack("{s:s, s:i, s:s, s:s, s:[s], s:s, s:f, s:f, s:f}",
                          "format", "lbscale-model", "version", 1, "name",
                          o->name, "description", "a PyTorch profiler trace",
                          "sources", src, "notes", note, "batch_per_gpu",
                          o->batch_per_gpu, "efficiency", 0.5, "bucket_mb",
                          o->bucket_mb);
    if (r && o->params) {
        snprintf(src, sizeof src, "%s (%s): parameter names and shapes",
                 o->params, o->params_sum);
        json_array_append_new(json_object_get(r, "sources"),
                              json_string(src));
    }
    return r;
}

/* The model from a parsed trace. */
static int import_root(const struct lbs_sim_torch_opts *o, const json_t *root,
                       json_t **model, struct lbs_sim_torch_info *info,
                       struct lbs_err *err)
{
    size_t ns = 0;
    struct evs E = {0};
    struct params p = {0};
    struct step *s = NULL;
    int rc = read_events(o->trace, root, &E, err);
    if (!rc && o->params) rc = read_params(o->params, &p, err);
    if (!rc) rc = read_steps(o->trace, &E, &s, &ns, info, err);
    if (!rc && p.n && p.n != s[0].ngrad)
        rc = lbs_err_set(err, -EINVAL, "%s lists %zu parameters but each "
                         "step of %s has %zu gradients", o->params, p.n,
                         o->trace, s[0].ngrad);
    info->kineto = E.kineto;
    json_t *m = rc ? NULL : model_root(o, info), *layers = json_array();
    if (!rc && (!m || !layers || json_object_set(m, "layers", layers)))
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    if (!rc) rc = build_layers(o->trace, s, ns, &p, layers, info, err);
    if (!rc) info->grads = s[0].ngrad;
    info->bucket_mb = o->bucket_mb;
    if (!rc && o->bucket_mb * 1048576.0 > 4 * info->params) {
        /* DDP puts a model smaller than its cap into one bucket; the
         * model reader refuses a cap beyond the model, so say that. */
        info->bucket_mb = floor(4 * info->params / 1048576.0 * 1e6) / 1e6;
        if (json_object_set_new(m, "bucket_mb", json_real(info->bucket_mb)))
            rc = lbs_err_set(err, -ENOMEM, "out of memory");
    }
    json_decref(layers);
    if (rc)
        json_decref(m);
    else
        *model = m;
    steps_free(s, ns);
    params_free(&p);
    free(E.e);
    free(E.optend);
    return rc;
}

int lbs_sim_torch_import_mem(const struct lbs_sim_torch_opts *o,
                             const char *text, size_t len, char **model,
                             struct lbs_sim_torch_info *info,
                             struct lbs_err *err)
{
    json_error_t je;
    json_t *m = NULL, *root = json_loadb(text, len, 0, &je);
    *model = NULL;
    memset(info, 0, sizeof *info);
    if (!root)
        return lbs_err_set(err, -EINVAL, "%s: line %d: not valid JSON: %s",
                           o->trace, je.line, je.text);
    int rc = import_root(o, root, &m, info, err);
    json_decref(root);
    if (!rc && !(*model = json_dumps(m, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                                            JSON_REAL_PRECISION(9))))
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    json_decref(m);
    return rc;
}

int lbs_sim_torch_import(const struct lbs_sim_torch_opts *o, char **model,
                         struct lbs_sim_torch_info *info, struct lbs_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *model = NULL;
    memset(info, 0, sizeof *info);
    int rc = sj_read_file(o->trace, TORCH_TRACE_MAX_BYTES, 0, &text, &len,
                          err);
    if (!rc)
        rc = lbs_sim_torch_import_mem(o, text, len, model, info, err);
    free(text);
    return rc;
}
