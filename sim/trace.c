/* trace.c - communication plans: the trace-v1 reader
 * (results/schema/trace-v1.md), the data-parallel contract, and the
 * scaling rule that binds a plan to a model.
 *
 * Reader rules beyond the schema: calls must come in non-decreasing step
 * order (the record backend appends as the optimizer runs); blank lines
 * are skipped; fields that v1 does not define are ignored on purpose
 * (writers may add diagnostics), while every defined field is checked.
 * Identical steps are stored once with a weight, so a 1,000-step trace of
 * a data-parallel optimizer costs one simulated step.
 *
 * The final phase is the longest run of last steps that use the same set
 * of collective kinds as the last step (1-bit LAMB: the compressed phase
 * after the warm-up; SLAMB: every step, its periodic dense averaging uses
 * allreduce like the masked steps).
 *
 * Training traces (results/schema/train-trace-v1.md, format
 * "lbscale-train-trace") extend trace-v1: their header has every trace-v1
 * field and their call lines are trace-v1 call lines plus a measured
 * "ms"; the plan is read from them the same way, skipping the lines that
 * carry a "type" key (per-step measurements), as that schema allows.
 *
 * Bytes that depend on P: a header "bytes_rule" (form "a+ceil(b/P)") lets
 * call lines carry "bytes_split" (b); the reader checks each against the
 * header's ranks (a >= 0, alltoall bytes a whole number of blocks) and
 * lbs_sim_step_calls evaluates the calls at the simulated P.
 *
 * Neighbour graphs: trace-v1 records bytes per neighbour, not the graph,
 * so the graph comes from the header's params ("topology=" or "topo=":
 * ring, exp, onepeer, full; default ring), as core's enum lbs_topo, whose
 * offsets (lbs_topo_offsets) coll.c and nccl.c price.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbscale/comm.h"   /* LBS_LAYER_ALL */
#include "lbscale/file.h"   /* lbs_text_next_line */
#include "sim_internal.h"

#define MAX_STEPS 100000000L
#define MAX_CALLS 100000000L

struct run {            /* the calls of one non-empty step */
    long step;
    size_t b, e;        /* [b, e) in the pool */
    unsigned kinds;
};

void lbs_sim_plan_free(struct lbs_sim_plan *p)
{
    if (!p)
        return;
    if (p->layer_name)
        for (size_t i = 0; i < p->nlayers; i++)
            free(p->layer_name[i]);
    free(p->layer_name);
    free(p->layer_n);
    free(p->step);
    free(p->pool);
    free(p);
}

/* The graph a value of "topology=" names: core's names (lbs_topo_names)
 * of the graphs the sim prices, plus the spellings traces written by
 * other tools use.  symexp is refused: coll.c has no cost for it yet. */
static int topo_named(const char *v, size_t vl, enum lbs_topo *t)
{
    static const struct { const char *name; enum lbs_topo t; } alias[] = {
        {"exp", LBS_TOPO_EXPONENTIAL}, {"static_exp", LBS_TOPO_EXPONENTIAL},
        {"one_peer", LBS_TOPO_ONEPEER}, {"one-peer", LBS_TOPO_ONEPEER},
        {"onepeer_exp", LBS_TOPO_ONEPEER},
        {"fully_connected", LBS_TOPO_FULL},
    };
    for (int k = 0; k < LBS_TOPO_COUNT; k++)
        if (k != LBS_TOPO_SYMEXP && strlen(lbs_topo_names[k]) == vl &&
            !strncmp(v, lbs_topo_names[k], vl)) {
            *t = (enum lbs_topo)k;
            return 1;
        }
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (strlen(alias[i].name) == vl && !strncmp(v, alias[i].name, vl)) {
            *t = alias[i].t;
            return 1;
        }
    return 0;
}

static int topo_from_params(const struct sj *c, const char *params,
                            enum lbs_topo *t)
{
    *t = LBS_TOPO_RING;
    for (const char *s = params; s && *s;) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        const char *eq = memchr(s, '=', len);
        if (eq && ((eq - s == 8 && !strncmp(s, "topology", 8)) ||
                   (eq - s == 4 && !strncmp(s, "topo", 4)))) {
            size_t vl = len - (size_t)(eq + 1 - s);
            if (topo_named(eq + 1, vl, t))
                return 0;
            return sj_fail(c, "", "params", "unknown topology '%.*s' (ring, "
                           "exp, onepeer, full)", (int)(vl > 40 ? 40 : vl),
                           eq + 1);
        }
        s = end ? end + 1 : NULL;
    }
    return 0;
}

/* "compress_traffic": {"compress_bytes_per_elem": a,
 * "decompress_bytes_per_elem": b, "decompress_once_bytes_per_elem": c
 * (optional, 0), "decompress_parts": "ranks" | "one"}
 * (optional): the compressor's memory-traffic model, as its source file
 * states it, written by the record writer for `optim --compress`. */
static int read_traffic(const struct sj *c, const json_t *h,
                        struct lbs_sim_plan *p)
{
    static const char *const keys[] = {"compress_bytes_per_elem",
        "decompress_bytes_per_elem", "decompress_once_bytes_per_elem",
        "decompress_parts", NULL};
    json_t *o;
    char parts[16];
    int rc = sj_obj(c, h, "", "compress_traffic", 0, &o);
    if (rc || !o)
        return rc;
    if ((rc = sj_known(c, o, "compress_traffic.", keys)) ||
        (rc = sj_num(c, o, "compress_traffic.", "compress_bytes_per_elem",
                     SJ_REQ, 0, 0, 1e4, &p->comp_bpe)) ||
        (rc = sj_num(c, o, "compress_traffic.", "decompress_bytes_per_elem",
                     SJ_REQ, 0, 0, 1e4, &p->decomp_bpe)) ||
        (rc = sj_num(c, o, "compress_traffic.",
                     "decompress_once_bytes_per_elem", 0, 0, 0, 1e4,
                     &p->decomp_once_bpe)) ||
        (rc = sj_str(c, o, "compress_traffic.", "decompress_parts", SJ_REQ,
                     NULL, parts, sizeof parts)))
        return rc;
    if (strcmp(parts, "ranks") && strcmp(parts, "one"))
        return sj_fail(c, "compress_traffic.", "decompress_parts", "\"%s\": "
                       "ranks or one", parts);
    p->decomp_per_rank = !strcmp(parts, "ranks");
    return 0;
}

#define RULE_FORM "a+ceil(b/P)"

/* The optional bytes_rule object: a form this reader knows and the two
 * rank counts it came from, one of them the header's.  Sets p->bytes_rule
 * (calls may then carry bytes_split). */
static int read_rule(const struct sj *c, const json_t *h,
                     struct lbs_sim_plan *p)
{
    static const char *const keys[] = {"form", "from_ranks", NULL};
    json_t *r;
    char form[32];
    int rc = sj_obj(c, h, "", "bytes_rule", 0, &r);
    if (rc || !r)
        return rc;
    if ((rc = sj_known(c, r, "bytes_rule.", keys)) ||
        (rc = sj_str(c, r, "bytes_rule.", "form", SJ_REQ, NULL, form,
                     sizeof form)))
        return rc;
    if (strcmp(form, RULE_FORM))
        return sj_fail(c, "bytes_rule.", "form", "unknown rule \"%s\" (this "
                       "reader knows \"" RULE_FORM "\")", form);
    const json_t *fr = json_object_get(r, "from_ranks");
    if (!fr)
        return sj_fail(c, "bytes_rule.", "from_ranks", "missing (required)");
    if (!json_is_array(fr) || json_array_size(fr) != 2)
        return sj_fail(c, "bytes_rule.", "from_ranks", "must be an array of "
                       "the two recorded rank counts");
    double q[2];
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = json_array_get(fr, i);
        q[i] = json_is_integer(v) ? (double)json_integer_value(v) : 0;
        if (q[i] < 1 || q[i] > 1e8)
            return sj_fail(c, "bytes_rule.", "from_ranks", "[%zu] must be an "
                           "integer in [1, 1e8]", i);
    }
    if (q[0] == q[1] || (q[0] != (double)p->ranks && q[1] != (double)p->ranks))
        return sj_fail(c, "bytes_rule.", "from_ranks", "must be two "
                       "different rank counts, one of them the header's "
                       "ranks (%ld); got [%.0f, %.0f]", p->ranks, q[0], q[1]);
    p->bytes_rule = 1;
    return 0;
}

static int read_header(const struct sj *c, const json_t *h,
                       struct lbs_sim_plan *p)
{
    double v = 0;   /* a failed read leaves it: the casts below stay defined */
    const char *f = json_string_value(json_object_get(h, "format"));
    int rc = sj_header(c, h, f && !strcmp(f, "lbscale-train-trace")
                                 ? "lbscale-train-trace" : "lbscale-trace", 1);
    if (!rc) rc = sj_str(c, h, "", "optim", SJ_REQ, NULL, p->optim,
                         sizeof p->optim);
    if (!rc && !p->optim[0])
        rc = sj_fail(c, "", "optim", "must not be empty");
    if (!rc && json_is_null(json_object_get(h, "params")))
        p->params[0] = '\0';
    else if (!rc)
        rc = sj_str(c, h, "", "params", 0, "", p->params, sizeof p->params);
    if (!rc) {
        const json_t *cp = json_object_get(h, "compress");
        if (cp && !json_is_null(cp) && !json_is_string(cp))
            rc = sj_fail(c, "", "compress", "must be a string or null");
        if (json_is_string(cp))
            snprintf(p->compress, sizeof p->compress, "%s",
                     json_string_value(cp));
    }
    if (!rc) rc = sj_num(c, h, "", "ranks", SJ_REQ | SJ_INT, 0, 1, 1e8, &v);
    p->ranks = (long)v;
    if (!rc) rc = sj_num(c, h, "", "steps", SJ_REQ | SJ_INT, 0, 1, MAX_STEPS,
                         &v);
    p->steps = (long)v;
    if (!rc) rc = topo_from_params(c, p->params, &p->topo);
    if (!rc) rc = read_traffic(c, h, p);
    if (!rc) rc = read_rule(c, h, p);
    if (rc)
        return rc;
    /* the optimizer's property, as core stated it when recording; traces
     * from before the field: the old rule (JointSpar samples layers) */
    const json_t *sl = json_object_get(h, "samples_layers");
    if (sl && !json_is_boolean(sl))
        return sj_fail(c, "", "samples_layers", "must be true or false");
    p->skip_wgrad = sl ? json_is_true(sl)
                       : !strncmp(p->optim, "jointspar", 9);
    const json_t *ls = json_object_get(h, "layers");
    size_t n = json_array_size(ls);
    if (!ls)
        return sj_fail(c, "", "layers", "missing (required)");
    if (!json_is_array(ls) || n == 0)
        return sj_fail(c, "", "layers", "must be a non-empty array");
    if (!(p->layer_n = calloc(n, sizeof *p->layer_n)) ||
        !(p->layer_name = calloc(n, sizeof *p->layer_name)))
        return lbs_err_set(c->err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(ls, i);
        char path[40], name[256];
        snprintf(path, sizeof path, "layers[%zu].", i);
        if (!json_is_object(o))
            return sj_fail(c, path, "", "must be an object");
        if ((rc = sj_str(c, o, path, "name", SJ_REQ, NULL, name,
                         sizeof name)) ||
            (rc = sj_num(c, o, path, "n", SJ_REQ | SJ_INT, 0, 1, 1e13,
                         &p->layer_n[i])) ||
            (rc = sj_num(c, o, path, "ndim", SJ_INT, 2, 1, 8, &v)))
            return rc;
        if (!(p->layer_name[i] = strdup(name)))
            return lbs_err_set(c->err, -ENOMEM, "out of memory");
        p->nlayers = i + 1;
    }
    return 0;
}

static unsigned long long ceil_div(unsigned long long x, unsigned long long d)
{
    return x / d + (x % d != 0);
}

/* The rule's unit: one destination's block for alltoall, else the bytes. */
static double unit_of(const struct lbs_sim_call *c, long P)
{
    return c->coll == LBS_COLL_ALLTOALL ? c->bytes / (double)P : c->bytes;
}

/* A call's optional bytes_split (b): only under the header's bytes_rule,
 * and only where the recorded bytes leave a = unit - ceil(b/ranks) >= 0
 * (an alltoall's bytes must hold whole blocks). */
static int read_split(const struct sj *c, const json_t *o,
                      const struct lbs_sim_plan *p, struct lbs_sim_call *call)
{
    double b = 0;
    int rc = sj_num(c, o, "", "bytes_split", SJ_INT, 0, 1, 9.0e15, &b);
    if (rc || !json_object_get(o, "bytes_split"))
        return rc;
    if (!p->bytes_rule)
        return sj_fail(c, "", "bytes_split", "needs the header's bytes_rule "
                       "(which says what it means)");
    if (call->coll == LBS_COLL_ALLTOALL &&
        fmod(call->bytes, (double)p->ranks) != 0)
        return sj_fail(c, "", "bytes", "an alltoall with bytes_split sends "
                       "ranks (%ld) equal blocks; %.0f is not a multiple",
                       p->ranks, call->bytes);
    double share = (double)ceil_div((unsigned long long)b,
                                    (unsigned long long)p->ranks);
    if (share > unit_of(call, p->ranks))
        return sj_fail(c, "", "bytes_split", "%.0f: its share on %ld ranks "
                       "(%.0f bytes) exceeds the call's %s (%.0f)", b,
                       p->ranks, share, call->coll == LBS_COLL_ALLTOALL
                       ? "block (bytes / ranks)" : "bytes",
                       unit_of(call, p->ranks));
    call->split = b;
    return 0;
}

static int read_call(const struct sj *c, const json_t *o,
                     const struct lbs_sim_plan *p, long *step,
                     struct lbs_sim_call *call)
{
    double s = 0, l = 0, b = 0;
    char coll[32];
    int rc = sj_num(c, o, "", "step", SJ_REQ | SJ_INT, 0, 1, (double)p->steps,
                    &s);
    if (!rc) rc = sj_num(c, o, "", "layer", SJ_REQ | SJ_INT, 0,
                         LBS_LAYER_ALL, (double)p->nlayers - 1, &l);
    if (!rc) rc = sj_str(c, o, "", "coll", SJ_REQ, NULL, coll, sizeof coll);
    if (!rc) rc = sj_num(c, o, "", "bytes", SJ_REQ | SJ_INT, 0, 0, 9.0e15,
                         &b);
    if (rc)
        return rc;
    int k = lbs_coll_from_name(coll);
    if (k < 0)
        return sj_fail(c, "", "coll", "unknown collective \"%s\"", coll);
    if (k == LBS_COLL_BARRIER && b != 0)
        return sj_fail(c, "", "bytes", "a barrier carries 0 bytes (got %g)",
                       b);
    *step = (long)s;
    *call = (struct lbs_sim_call){(int)l, (enum lbs_coll)k, b, 0, 1};
    return read_split(c, o, p, call);
}

static uint64_t hash_run(const struct lbs_sim_call *c, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        uint64_t w[4] = {(uint64_t)(int64_t)c[i].layer, (uint64_t)c[i].coll,
                         (uint64_t)c[i].bytes, (uint64_t)c[i].split};
        for (int j = 0; j < 4; j++) {
            h ^= w[j];
            h *= 1099511628211ull;
        }
    }
    return h;
}

static int same_run(const struct lbs_sim_call *a, const struct lbs_sim_call *b,
                    size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].layer != b[i].layer || a[i].coll != b[i].coll ||
            a[i].bytes != b[i].bytes || a[i].split != b[i].split)
            return 0;
    return 1;
}

/* Group runs into distinct steps and find the final phase. */
static int finish(struct lbs_sim_plan *p, struct run *runs, size_t nruns,
                  struct lbs_err *err)
{
    /* final phase: walk back from the last step while the mask holds;
     * an empty step (mask 0) in between ends it */
    unsigned last = nruns && runs[nruns - 1].step == p->steps
                        ? runs[nruns - 1].kinds : 0;
    long from;
    if (last == 0) {
        from = nruns ? runs[nruns - 1].step + 1 : 1;
    } else {
        from = p->steps;
        for (size_t i = nruns - 1; i-- > 0;) {
            if (runs[i].step != from - 1 || runs[i].kinds != last)
                break;
            from = runs[i].step;
        }
    }
    p->final_from = from;

    size_t cap = 2 * nruns + 2, nuniq = 0;
    size_t *tab = malloc(cap * sizeof *tab);
    uint64_t *hs = malloc((nruns + 1) * sizeof *hs);
    p->step = calloc(nruns + 1, sizeof *p->step);
    if (!tab || !hs || !p->step) {
        free(tab);
        free(hs);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < cap; i++)
        tab[i] = SIZE_MAX;
    long empty = p->steps - (long)nruns, empty_final = p->steps - from + 1;
    for (size_t i = 0; i < nruns; i++)
        if (runs[i].step >= from)
            empty_final--;
    for (size_t i = 0; i < nruns; i++) {
        const struct lbs_sim_call *c = p->pool + runs[i].b;
        size_t n = runs[i].e - runs[i].b;
        uint64_t h = hash_run(c, n);
        size_t slot = (size_t)(h % cap);
        for (;;) {
            size_t u = tab[slot];
            if (u == SIZE_MAX) {
                tab[slot] = nuniq;
                hs[nuniq] = h;
                p->step[nuniq++] = (struct lbs_sim_step){
                    n, (struct lbs_sim_call *)c, runs[i].step, 0, 0,
                    runs[i].kinds, 0, 0};
                u = nuniq - 1;
            } else if (hs[u] != h || p->step[u].ncalls != n ||
                       !same_run(p->step[u].calls, c, n)) {
                slot = (slot + 1) % cap;
                continue;
            }
            p->step[u].weight += 1;
            if (runs[i].step >= from)
                p->step[u].final_weight += 1;
            break;
        }
    }
    if (empty > 0) {
        long first = 1;
        for (size_t i = 0; i < nruns && runs[i].step == first; i++)
            first++;
        p->step[nuniq++] = (struct lbs_sim_step){0, NULL, first,
            (double)empty, (double)empty_final, 0, 0, 0};
    }
    p->nsteps = nuniq;
    free(tab);
    free(hs);
    return 0;
}

int lbs_sim_trace_parse(const char *text, size_t len, const char *file,
                        struct lbs_sim_plan **out, struct lbs_err *err)
{
    char where[LBS_SIM_FILE_MAX + 24];
    struct sj c = {where, err};
    struct lbs_sim_plan *p = calloc(1, sizeof *p);
    struct run *runs = NULL;
    size_t nruns = 0, rcap = 0, ncalls = 0, ccap = 0;
    long line = 0, last_step = 0;
    int rc = 0, have_header = 0;
    *out = NULL;
    if (!p)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    sj_copy_path(p->file, sizeof p->file, file);
    size_t pos = 0, l;
    const char *s;
    int ended;
    while (!rc && lbs_text_next_line(text, len, &pos, &line, &s, &l,
                                     &ended)) {
        snprintf(where, sizeof where, "%s:%ld", p->file, line);
        json_error_t je;
        json_t *o = json_loadb(s, l, JSON_REJECT_DUPLICATES, &je);
        if (!o) {
            rc = lbs_err_set(err, -EINVAL, "%s: not valid JSON: %s", where,
                             je.text);
            break;
        }
        if (!json_is_object(o)) {
            rc = lbs_err_set(err, -EINVAL, "%s: each line must be a JSON "
                             "object", where);
        } else if (!have_header) {
            rc = read_header(&c, o, p);
            have_header = 1;
        } else if (json_object_get(o, "type")) {
            ;   /* a training trace's step line: not part of the plan */
        } else {
            struct lbs_sim_call call = {0, LBS_COLL_ALLREDUCE, 0, 0, 1};
            long st = 0;
            rc = read_call(&c, o, p, &st, &call);
            if (!rc && st < last_step)
                rc = sj_fail(&c, "", "step", "%ld after step %ld: calls must "
                             "come in step order", st, last_step);
            if (!rc && ncalls >= (size_t)MAX_CALLS)
                rc = lbs_err_set(err, -EINVAL, "%s: more than %ld calls",
                                 where, MAX_CALLS);
            if (!rc && ncalls == ccap) {
                size_t nc = ccap ? 2 * ccap : 1024;
                void *q = realloc(p->pool, nc * sizeof *p->pool);
                if (!q)
                    rc = lbs_err_set(err, -ENOMEM, "out of memory");
                else {
                    p->pool = q;
                    ccap = nc;
                }
            }
            if (!rc && st != last_step) {
                if (nruns == rcap) {
                    size_t nc = rcap ? 2 * rcap : 64;
                    void *q = realloc(runs, nc * sizeof *runs);
                    if (!q)
                        rc = lbs_err_set(err, -ENOMEM, "out of memory");
                    else {
                        runs = q;
                        rcap = nc;
                    }
                }
                if (!rc)
                    runs[nruns++] = (struct run){st, ncalls, ncalls, 0};
                last_step = st;
            }
            if (!rc) {
                p->pool[ncalls++] = call;
                runs[nruns - 1].e = ncalls;
                runs[nruns - 1].kinds |= 1u << call.coll;
            }
        }
        json_decref(o);
    }
    if (!rc && !have_header)
        rc = lbs_err_set(err, -EINVAL, "%s: empty trace (no header line)",
                         p->file);
    /* a header alone would simulate as a step without communication: an
     * optimizer that talks to nobody is a cut or failed recording */
    if (!rc && ncalls == 0)
        rc = lbs_err_set(err, -EINVAL, "%s: no calls after the header "
                         "(empty trace)", p->file);
    if (!rc) {
        /* the pool may have moved while growing: runs hold indices only */
        rc = finish(p, runs, nruns, err);
    }
    free(runs);
    if (rc) {
        lbs_sim_plan_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

static int parse_file(const char *text, size_t len, const char *file,
                      void *out, struct lbs_err *err)
{
    return lbs_sim_trace_parse(text, len, file, out, err);
}

int lbs_sim_trace_load(const char *path, struct lbs_sim_plan **out,
                       struct lbs_err *err)
{
    *out = NULL;
    return sj_load_file(path, LBS_SIM_TRACE_MAX_BYTES, 1, parse_file, out,
                        err);
}

int lbs_sim_plan_dp(const struct lbs_sim_model *m, const char *optim,
                    struct lbs_sim_plan **out, struct lbs_err *err)
{
    return lbs_sim_plan_dp_bytes(m, optim, 4, out, err);
}

int lbs_sim_plan_dp_bytes(const struct lbs_sim_model *m, const char *optim,
                          double elem_bytes, struct lbs_sim_plan **out,
                          struct lbs_err *err)
{
    if (elem_bytes != 2 && elem_bytes != 4)
        return lbs_err_set(err, -EINVAL, "gradient element of %g bytes: 2 "
                           "(fp16, bf16) or 4 (fp32)", elem_bytes);
    struct lbs_sim_plan *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p || !(p->pool = calloc(m->nlayers, sizeof *p->pool)) ||
        !(p->step = calloc(1, sizeof *p->step)) ||
        !(p->layer_n = calloc(m->nlayers, sizeof *p->layer_n))) {
        lbs_sim_plan_free(p);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    snprintf(p->optim, sizeof p->optim, "%s", optim);
    p->steps = 1;
    p->final_from = 1;
    p->nlayers = m->nlayers;
    for (size_t i = 0; i < m->nlayers; i++) {
        p->layer_n[i] = m->l[i].n;
        p->pool[i] = (struct lbs_sim_call){(int)i, LBS_COLL_ALLREDUCE,
                                           elem_bytes * m->l[i].n,
                                           0, 1};
    }
    p->step[0] = (struct lbs_sim_step){m->nlayers, p->pool, 1, 1, 1,
                                       1u << LBS_COLL_ALLREDUCE, 0, 0};
    p->nsteps = 1;
    *out = p;
    return 0;
}

int lbs_sim_plan_bind(const struct lbs_sim_plan *plan,
                      const struct lbs_sim_model *m,
                      struct lbs_sim_plan **out, struct lbs_err *err)
{
    *out = NULL;
    if (plan->nlayers != m->nlayers)
        return lbs_err_set(err, -EINVAL, "%s: field 'layers': %zu layers, "
                           "but model %s has %zu (record the trace with "
                           "--layers %s)", plan->file[0] ? plan->file : "plan",
                           plan->nlayers, m->name, m->nlayers, m->file);
    struct lbs_sim_plan *p = calloc(1, sizeof *p);
    size_t total = 0;
    for (size_t i = 0; i < plan->nsteps; i++)
        total += plan->step[i].ncalls;
    if (!p || !(p->step = calloc(plan->nsteps + 1, sizeof *p->step)) ||
        !(p->pool = calloc(total + 1, sizeof *p->pool)) ||
        !(p->layer_n = calloc(m->nlayers, sizeof *p->layer_n))) {
        lbs_sim_plan_free(p);
        return lbs_err_set(err, -ENOMEM, "out of memory");
    }
    memcpy(p->optim, plan->optim, sizeof p->optim);
    memcpy(p->params, plan->params, sizeof p->params);
    memcpy(p->file, plan->file, sizeof p->file);
    p->ranks = plan->ranks;
    p->steps = plan->steps;
    p->final_from = plan->final_from;
    p->topo = plan->topo;
    p->skip_wgrad = plan->skip_wgrad;
    p->comp_bpe = plan->comp_bpe;
    p->decomp_bpe = plan->decomp_bpe;
    p->decomp_once_bpe = plan->decomp_once_bpe;
    p->decomp_per_rank = plan->decomp_per_rank;
    memcpy(p->compress, plan->compress, sizeof p->compress);
    p->bytes_rule = plan->bytes_rule;
    p->nlayers = m->nlayers;
    for (size_t i = 0; i < m->nlayers; i++)
        p->layer_n[i] = m->l[i].n;
    /* a buffer fused over all layers grows with the whole model */
    double ntrace = 0;
    for (size_t i = 0; i < plan->nlayers; i++)
        ntrace += plan->layer_n[i];
    const double whole = m->params / ntrace;
    size_t k = 0;
    for (size_t i = 0; i < plan->nsteps; i++) {
        const struct lbs_sim_step *s = &plan->step[i];
        p->step[i] = *s;
        p->step[i].calls = p->pool + k;
        for (size_t j = 0; j < s->ncalls; j++, k++) {
            struct lbs_sim_call c = s->calls[j];
            double f = c.layer >= 0 ? m->l[c.layer].n / plan->layer_n[c.layer]
                     : c.layer == LBS_LAYER_ALL ? whole : 1;
            c.bytes *= f;
            c.split_scale *= f;
            p->pool[k] = c;
        }
    }
    p->nsteps = plan->nsteps;
    *out = p;
    return 0;
}

double lbs_sim_call_bytes(const struct lbs_sim_plan *plan,
                          const struct lbs_sim_call *c, long P)
{
    long R = plan->ranks;
    if (!(c->split > 0) || P == R || R < 1 || P < 1)
        return c->bytes;
    /* the recording's unit changes by ceil(b/P) - ceil(b/R): integers,
     * exact; the model scaling multiplies that change like the bytes */
    unsigned long long b = (unsigned long long)c->split;
    double d = (double)ceil_div(b, (unsigned long long)P) -
               (double)ceil_div(b, (unsigned long long)R);
    double u = unit_of(c, R) + c->split_scale * d;
    return c->coll == LBS_COLL_ALLTOALL ? u * (double)P : u;
}

const struct lbs_sim_call *lbs_sim_step_calls(const struct lbs_sim_plan *plan,
                                              const struct lbs_sim_step *st,
                                              long P,
                                              struct lbs_sim_call *buf)
{
    if (!plan->bytes_rule || P == plan->ranks)
        return st->calls;
    for (size_t i = 0; i < st->ncalls; i++) {
        buf[i] = st->calls[i];
        buf[i].bytes = lbs_sim_call_bytes(plan, &st->calls[i], P);
    }
    return buf;
}
