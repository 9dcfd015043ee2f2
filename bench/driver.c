/* driver.c - one timing loop and one row printer for the benchmark verbs
 * (driver.h). */
#include "driver.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lbs_cuda.h"
#include "lbscale/comm.h"

void bench_result_free(struct bench_result *r)
{
    for (int p = 0; p < BENCH_PHASES; p++)
        free(r->t[p]);
    *r = (struct bench_result){0};
}

/* Statistics of a copy: the raw samples keep their call order, which
 * per-pair quantities (optim --pair) need after the loop. */
static struct cli_stats stats_of(const double *x, size_t n, double *tmp)
{
    memcpy(tmp, x, n * sizeof *tmp);
    return cli_stats(tmp, n);
}

/* The loop proper: per call, the reference first (when paired), then the
 * kernel; timed calls store their phases, the reference and the ratio. */
static int run_loop(const struct bench_kernel *k, const struct bench_loop *l,
                    struct stream_pair *sp, struct bench_result *r,
                    double *tri, double *ratio, struct lbs_err *err)
{
    if (k->batch) {
        for (long j = 0; j < l->iters; j++)
            tri[j] = l->ref_gbps;
        return k->batch(k->ctx, l->warmup, l->iters, r->t[0], err);
    }
    int rc = 0;
    for (long i = 0; i < l->warmup + l->iters && !rc; i++) {
        double tg = r->paired ? stream_pair_ref(sp) : l->ref_gbps;
        double s[BENCH_PHASES] = {0};
        rc = k->call(k->ctx, i, s, err);
        if (i < l->warmup)
            continue;
        long j = i - l->warmup;
        for (int p = 0; p < k->nphase; p++)
            r->t[p][j] = s[p];
        tri[j] = tg;
        if (k->bytes > 0)
            ratio[j] = k->bytes / s[0] / 1e9 / tg;
    }
    return rc;
}

/* Median and spread of each phase, the reference and the ratio: measured
 * pairs give their own median [min, max] (warned above ROOFLINE_WARN); a
 * given reference divides GB/s at the median, max and min times. */
static void summarize(const struct bench_kernel *k, const struct bench_loop *l,
                      struct bench_result *r, double *tri, double *ratio,
                      double *tmp)
{
    size_t n = (size_t)l->iters;
    for (int p = 0; p < k->nphase; p++)
        r->st[p] = stats_of(r->t[p], n, tmp);
    r->ref = cli_stats(tri, n);
    if (k->bytes <= 0)
        return;
    r->gbps = k->bytes / r->st[0].median / 1e9;
    if (r->paired)
        r->ratio = roofline_pairs(k->what, ratio, n, l->rmw ? ROOFLINE_WARN
                                                            : ROOFLINE_WARN_TRIAD);
    else
        r->ratio = (struct cli_stats){
            .median = r->gbps / l->ref_gbps,
            .min = k->bytes / r->st[0].max / 1e9 / l->ref_gbps,
            .max = k->bytes / r->st[0].min / 1e9 / l->ref_gbps};
}

int bench_time(const struct bench_kernel *k, const struct bench_loop *l,
               struct bench_result *r, struct lbs_err *err)
{
    size_t n = (size_t)l->iters;
    *r = (struct bench_result){
        .paired = k->bytes > 0 && l->ref_gbps <= 0 && !k->batch};
    struct stream_pair sp = {0};
    double *tri = calloc(n, sizeof *tri), *ratio = calloc(n, sizeof *ratio),
           *tmp = calloc(n, sizeof *tmp);
    int rc = 0, ok = tri && ratio && tmp;
    for (int p = 0; p < k->nphase && ok; p++)
        ok = (r->t[p] = calloc(n, sizeof *r->t[p])) != NULL;
    if (!ok || (r->paired && stream_pair_open(&sp, BENCH_REF_N, l->rmw)))
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
    if ((rc = lbs_comm_agree(k->peers, rc, NULL, err)) ||
        (rc = run_loop(k, l, &sp, r, tri, ratio, err)))
        goto out;
    if (r->paired && stream_pair_close(&sp) != 0) {
        rc = lbs_err_set(err, -EIO, "the %s reference computed wrong "
                         "values", l->rmw ? "in-place" : "STREAM triad");
        goto out;
    }
    if (k->check && (r->wrong = k->check(k->ctx, err)) < 0) {
        rc = (int)r->wrong;
        goto out;
    }
    if (k->gather && (rc = k->gather(k->ctx, r, err)))
        goto out;
    summarize(k, l, r, tri, ratio, tmp);
out:
    if (r->paired)
        stream_pair_close(&sp);
    free(tri);
    free(ratio);
    free(tmp);
    if (rc)
        bench_result_free(r);
    return rc;
}

/* ------------------------------------------------------------ printing */

/* The conversion that ends fmt: s, d (long long) or a real. */
static char conv_of(const char *fmt)
{
    char c = 0;
    for (const char *p = fmt; *p; p++)
        if (strchr("sdfeg", *p))
            c = *p;
    return c;
}

void bench_header(const struct bench_table *t, FILE *f)
{
    fputs(t->hpre, f);
    for (const struct bench_col *c = t->cols; c->head; c++) {
        if (c != t->cols)
            fputc(' ', f);
        /* every column has one; the fallback keeps GCC's format check
         * (-Wformat-overflow under sanitizers) from seeing the
         * terminator's NULL */
        fprintf(f, c->hfmt ? c->hfmt : "%s", c->head);
    }
    fputc('\n', f);
}

static void print_cell(const struct bench_col *c, const json_t *row, FILE *f)
{
    const json_t *v = json_object_get(row, c->key);
    char buf[64];
    if (c->str) {
        c->str(row, buf, sizeof buf);
        fprintf(f, c->fmt, buf);
    } else if (c->key2) {
        fprintf(f, c->fmt, json_real_value(v),
                json_real_value(json_object_get(row, c->key2)));
    } else if (conv_of(c->fmt) == 's') {
        fprintf(f, c->fmt, json_string_value(v) ? json_string_value(v)
                                                : "-");
    } else if (json_is_null(v)) {
        /* a value that could not be measured: "-", not a zero */
        fprintf(f, "%*s", atoi(c->fmt + 1), "-");
    } else if (conv_of(c->fmt) == 'd') {
        fprintf(f, c->fmt, (long long)json_integer_value(v));
    } else {
        fprintf(f, c->fmt, json_real_value(v));
    }
}

void bench_row(const struct bench_table *t, const json_t *row, FILE *f)
{
    fputs(t->rpre, f);
    for (const struct bench_col *c = t->cols; c->head; c++) {
        if (c != t->cols)
            fputc(' ', f);
        print_cell(c, row, f);
    }
    fputc('\n', f);
}

void bench_timing(const json_t *row, const char *what, const char *key,
                  FILE *f)
{
    char k[64];
#define GET(s) (snprintf(k, sizeof k, "%s_%s", key, s),                   \
                json_real_value(json_object_get(row, k)))
    struct cli_stats st = {
        .mean = GET("mean"), .sd = GET("sd"), .median = GET("median"),
        .min = GET("min"), .max = GET("max"),
        .n = (size_t)json_integer_value(json_object_get(row, "iters")),
        .outliers = (size_t)json_integer_value(
            json_object_get(row, "outliers"))};
#undef GET
    cli_timing_print(f, "  ", what, &st, 1, "ms");
}

int bench_emit(const struct bench_out *o, json_t *row, int header)
{
    if (o->json) {
        char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
    } else {
        if (o->note)
            o->note(row, 0, stdout);
        if (header)
            bench_header(o->table, stdout);
        bench_row(o->table, row, stdout);
        if (o->timing)
            bench_timing(row, o->timing, o->timing_key, stdout);
        if (o->note)
            o->note(row, 1, stdout);
    }
    int rc = 0;
    if (o->exp && (rc = cli_export_write(o->exp, o->verb, row, o->exp_cols)))
        return rc;
    struct lbs_err e;
    if (o->run && (rc = lbs_run_append(o->run, o->verb, json_incref(row),
                                       &e)))
        cli_error(o->verb, "%s%s", o->what ? o->what : "", e.msg);
    return rc;
}

void bench_saved(const struct bench_out *o)
{
    if (o->run && !o->json)
        fprintf(stderr, "results: %s/%s.jsonl\n", lbs_run_dir(o->run),
                o->verb);
}

int bench_cuda_copy_ref(size_t n, int iters, struct lbs_cuda_stream *cs,
                        double *gbps, struct lbs_err *err)
{
    int rc = lbs_cuda_stream(n, iters, cs, err);
    if (rc)
        return rc;
    if (cs->wrong)
        return lbs_err_set(err, -EIO, "device copy reference: %ld floats "
                           "copied wrong", cs->wrong);
    *gbps = cs->memcpy_gbps > cs->kernel_gbps ? cs->memcpy_gbps
                                              : cs->kernel_gbps;
    return 0;
}
