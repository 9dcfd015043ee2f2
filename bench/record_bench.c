/* record_bench.c - `lbscale optim --comm record[:P] --steps N`: what an
 * optimizer sends, measured by running the real optimizer code over the
 * record backend (no transfer, every call logged).
 *
 * Reports bytes per step averaged over N steps (this rank's payload, the
 * trace-v1 convention), split per collective kind, and the ratio to dense
 * data-parallel LAMB (one fp32 allreduce of every gradient: 4 bytes per
 * parameter).  --trace FILE writes the full call log as a trace-v1 file
 * (results/schema/trace-v1.md) for the simulator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layers.h"
#include "lbscale/compress.h"
#include "lbscale/optim.h"
#include "optim_bench.h"

/* The compressor's memory traffic for the simulator (trace-v1's
 * compress_traffic), its payload per element taken from the recorded
 * per-layer calls; NULL when there is no compressor or no model. */
static json_t *traffic_of(const char *spec, const struct layer_set *s,
                          struct lbs_comm *c, long steps)
{
    struct lbs_compressor *cmp;
    struct lbs_err e;
    struct lbs_compress_traffic t;
    size_t n;
    double payload = 0, elems = 0;
    if (!spec || lbs_compressor_new(spec, &cmp, &e))
        return NULL;
    const struct lbs_comm_record_entry *r = lbs_comm_record_entries(c, &n);
    for (size_t i = 0; i < n; i++)
        if (r[i].layer >= 0)
            payload += (double)r[i].bytes;
    for (size_t i = 0; i < s->n; i++)
        elems += (double)s->l[i].n;
    int rc = lbs_compress_traffic(cmp, payload / (elems * (double)steps),
                                  &t);
    lbs_compressor_free(cmp);
    if (rc)
        return NULL;
    return json_pack("{s:f,s:f,s:f,s:s}", "compress_bytes_per_elem",
                     t.compress, "decompress_bytes_per_elem",
                     t.decompress_part, "decompress_once_bytes_per_elem",
                     t.decompress_once, "decompress_parts",
                     t.per_rank ? "ranks" : "one");
}

/* trace-v1 header line (new reference).  rule_ranks > 0: the calls carry
 * the bytes rule derived with a recording at that many ranks; the header
 * says so before the (long) layer list. */
static json_t *trace_header(const struct lbs_optim *o,
                            const struct layer_set *s, struct lbs_comm *c,
                            int ranks, long steps, int rule_ranks)
{
    json_t *layers = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(layers, json_pack("{s:s,s:I,s:i}", "name",
            s->l[i].name, "n", (json_int_t)s->l[i].n, "ndim", s->l[i].ndim));
    const char *cmp = lbs_optim_compressor_spec(o);
    json_t *h = json_pack("{s:s,s:i,s:s,s:s,s:o,s:i,s:I}", "format",
                          "lbscale-trace", "version", 1, "optim",
                          lbs_optim_name(o), "params", lbs_optim_params(o),
                          "compress", cmp ? json_string(cmp) : json_null(),
                          "ranks", ranks, "steps", (json_int_t)steps);
    json_t *traffic = traffic_of(cmp, s, c, steps);
    if (traffic)
        json_object_set_new(h, "compress_traffic", traffic);
    if (rule_ranks > 0)
        json_object_set_new(h, "bytes_rule", json_pack(
            "{s:s,s:[i,i]}", "form", "a+ceil(b/P)", "from_ranks",
            ranks < rule_ranks ? ranks : rule_ranks,
            ranks < rule_ranks ? rule_ranks : ranks));
    struct lbs_optim_props pr;   /* what the simulator must not guess */
    if (!lbs_optim_props(lbs_optim_name(o), &pr, NULL))
        json_object_set_new(h, "samples_layers",
                            json_boolean(pr.samples_layers));
    json_object_set_new(h, "layers", layers);
    return h;
}

static int append_text(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 2 > *cap) {
        size_t c = (*len + n + 2) * 2;
        char *t = realloc(*buf, c);
        if (!t)
            return -ENOMEM;
        *buf = t;
        *cap = c;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[(*len)++] = '\n';
    return 0;
}

static int append_line(char **buf, size_t *len, size_t *cap, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!s)
        return -ENOMEM;
    int rc = append_text(buf, len, cap, s);
    free(s);
    return rc;
}

/* The whole log as trace-v1 text; written atomically by the caller.  The
 * header is jansson's, the call lines core's (lbs_trace_call_line).
 * split (NULL: no rule): each call's bytes_split, written when non-zero,
 * so calls whose bytes do not depend on P read as before. */
static int trace_text(const struct lbs_optim *o, const struct layer_set *s,
                      struct lbs_comm *c, int ranks, long steps,
                      const unsigned long long *split, int rule_ranks,
                      char **out, size_t *len)
{
    size_t cap = 1 << 16, n;
    *len = 0;
    *out = malloc(cap);
    if (!*out)
        return -ENOMEM;
    int rc = append_line(out, len, &cap,
                         trace_header(o, s, c, ranks, steps, rule_ranks));
    const struct lbs_comm_record_entry *e = lbs_comm_record_entries(c, &n);
    for (size_t i = 0; i < n && !rc; i++) {
        char line[LBS_TRACE_LINE_MAX];
        lbs_trace_call_line(line, sizeof line, &e[i], split ? split[i] : 0,
                            0);
        rc = append_text(out, len, &cap, line);
    }
    return rc;
}

/* mkdir -p the directory part of path, so a suite can name a fresh one. */
static int make_parent(const char *path, struct lbs_err *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    if (lbs_mkdir_p(dir))
        return lbs_err_set(err, -EIO, "cannot create %s: %s", dir,
                           strerror(errno));
    return 0;
}

static json_t *bytes_row(const struct lbs_optim *o, const struct layer_set *s,
                         struct lbs_comm *c, int ranks, long steps,
                         long skipped)
{
    size_t bytes[LBS_COLL_COUNT], calls[LBS_COLL_COUNT], total = 0;
    lbs_comm_record_totals(c, bytes, calls);
    json_t *kinds = json_object();
    for (int k = 0; k < LBS_COLL_COUNT; k++) {
        total += bytes[k];
        if (calls[k])
            json_object_set_new(kinds, lbs_coll_name((enum lbs_coll)k),
                json_pack("{s:f,s:f}", "bytes_per_step",
                          (double)bytes[k] / (double)steps, "calls_per_step",
                          (double)calls[k] / (double)steps));
    }
    double dense = 4.0 * (double)s->elements;
    double per = (double)total / (double)steps;
    const char *cmp = lbs_optim_compressor_spec(o);
    return json_pack("{s:s,s:s,s:s,s:o,s:I,s:I,s:i,s:I,s:I,s:f,s:f,s:f,s:o}",
                     "bench", "optim-record", "optim", lbs_optim_name(o),
                     "params", lbs_optim_params(o), "compress",
                     cmp ? json_string(cmp) : json_null(), "elements",
                     (json_int_t)s->elements, "layers", (json_int_t)s->n,
                     "ranks", ranks, "steps", (json_int_t)steps, "skipped",
                     (json_int_t)skipped, "bytes_per_step", per,
                     "dense_bytes_per_step", dense, "fraction_of_dense",
                     per / dense, "per_collective", kinds);
}

static void print_row(const json_t *r)
{
    printf("# %-12s %11s %6s %5s %6s %16s %16s %9s\n", "optim", "elements",
           "layers", "ranks", "steps", "bytes/step", "dense(B/step)",
           "fraction");
    printf("  %-12s %11lld %6lld %5lld %6lld %16.0f %16.0f %9.4f\n",
           json_string_value(json_object_get(r, "optim")),
           (long long)json_integer_value(json_object_get(r, "elements")),
           (long long)json_integer_value(json_object_get(r, "layers")),
           (long long)json_integer_value(json_object_get(r, "ranks")),
           (long long)json_integer_value(json_object_get(r, "steps")),
           json_real_value(json_object_get(r, "bytes_per_step")),
           json_real_value(json_object_get(r, "dense_bytes_per_step")),
           json_real_value(json_object_get(r, "fraction_of_dense")));
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(r, "per_collective"), k, v)
        printf("    %-10s %16.0f bytes/step %8.2f calls/step\n", k,
               json_real_value(json_object_get(v, "bytes_per_step")),
               json_real_value(json_object_get(v, "calls_per_step")));
}

/* Make the layers and the optimizer and run `steps` steps over c (the
 * same seed every time: two runs differ only in c's size).  The caller
 * frees *o and *set, also on failure. */
static int record_run(const struct optim_bench_args *a, struct lbs_comm *c,
                      long steps, struct layer_set *set,
                      struct lbs_optim **o, struct lbs_err *e)
{
    *o = NULL;
    memset(set, 0, sizeof *set);
    int rc = layers_make(a->layers, a->elements, 1, set, e);
    if (rc)
        return rc;
    c->err = e;
    if ((rc = lbs_optim_new(a->spec, set->l, set->n, c, o, e)))
        return rc;
    if (a->compress && (rc = lbs_optim_set_compressor(*o, a->compress, e)))
        return rc;
    for (long t = 0; t < steps; t++) {
        rc = lbs_optim_step(*o, e);
        if (rc < 0)
            return rc;
        if (isatty(2) && (t + 1) % 10 == 0)
            fprintf(stderr, "\roptim record: %d ranks, step %ld of %ld",
                    c->size, t + 1, steps);
    }
    if (isatty(2))
        fputc('\n', stderr);
    return 0;
}

/* --trace-rule Q: the same run over Q ranks, its log kept in *other and
 * everything else freed before the main run starts (one model in memory
 * at a time). */
static int record_other(const struct optim_bench_args *a, long steps,
                        struct lbs_comm **other, struct lbs_err *e)
{
    struct layer_set set = {0};
    struct lbs_optim *o = NULL;
    int rc = lbs_comm_record_new(a->rule_ranks, other, e);
    if (!rc)
        rc = record_run(a, *other, steps, &set, &o, e);
    lbs_optim_free(o);
    layers_free(&set);
    return rc;
}

/* Write the trace (with per-call rules when other != NULL) atomically. */
static int write_trace(const char *trace, const struct lbs_optim *o,
                       const struct layer_set *set, struct lbs_comm *c,
                       struct lbs_comm *other, long steps, size_t *ruled,
                       struct lbs_err *e)
{
    size_t n;
    unsigned long long *split = NULL;
    char *text = NULL;
    size_t len;
    int rc = 0;
    lbs_comm_record_entries(c, &n);
    *ruled = 0;
    if (other) {
        if (!(split = calloc(n + 1, sizeof *split)))
            return lbs_err_set(e, -ENOMEM, "out of memory");
        if ((rc = lbs_comm_record_rule(c, other, split, e))) {
            char why[LBS_ERR_MSG_MAX];
            snprintf(why, sizeof why, "%s", e->msg);
            free(split);
            return lbs_err_set(e, rc, "--trace-rule %d: %s", other->size,
                               why);
        }
        for (size_t i = 0; i < n; i++)
            *ruled += split[i] != 0;
    }
    rc = trace_text(o, set, c, c->size, steps, split,
                    other ? other->size : 0, &text, &len);
    if (rc)
        lbs_err_set(e, rc, "out of memory for the trace");
    if (!rc)
        rc = make_parent(trace, e);
    if (!rc)
        rc = lbs_write_atomic(trace, text, len, e);
    free(text);
    free(split);
    return rc;
}

int optim_record_main(const struct optim_bench_args *a, struct lbs_comm *c,
                      long steps, const char *trace,
                      const struct cli_common *com, int argc, char **argv)
{
    struct lbs_err e;
    struct layer_set set = {0};
    struct lbs_optim *o = NULL;
    struct lbs_comm *other = NULL;
    struct lbs_run *run = NULL;
    json_t *row = NULL;
    int rc = 0;
    if (a->rule_ranks && (rc = record_other(a, steps, &other, &e)))
        goto fail;
    if ((rc = record_run(a, c, steps, &set, &o, &e)))
        goto fail;
    row = bytes_row(o, &set, c, c->size, steps, lbs_optim_skipped(o));
    if (trace) {
        size_t ruled;
        if ((rc = write_trace(trace, o, &set, c, other, steps, &ruled, &e)))
            goto fail;
        json_object_set_new(row, "trace", json_string(trace));
        if (other) {
            json_object_set_new(row, "rule_ranks",
                                json_integer(other->size));
            json_object_set_new(row, "rule_calls",
                                json_integer((json_int_t)ruled));
        }
    }
    json_object_set_new(row, "layer_preset", json_string(a->layers));
    if (com->json) {
        char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
    } else {
        print_row(row);
        if (other && trace)
            printf("    bytes rule from %d and %d ranks: %lld calls "
                   "depend on P\n", c->size, other->size, (long long)
                   json_integer_value(json_object_get(row, "rule_calls")));
    }
    if ((rc = cli_open_run(com, "optim", argc, argv, &run)))
        goto out;
    if (run && (rc = lbs_run_append(run, "optim-record", json_incref(row), &e)))
        goto fail;
    goto out;
fail:
    cli_error("optim", "%s", e.msg);
out:
    json_decref(row);
    lbs_run_close(run);
    lbs_optim_free(o);
    layers_free(&set);
    lbs_comm_free(other);
    return cli_exit_code(rc);
}
