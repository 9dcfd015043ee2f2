/* train_agree.c - what `lbscale train` checks and writes across ranks:
 * agreement on return codes and options (hashed), the printed rows, and
 * the per-step trace files. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cnn.h"
#include "train_int.h"

/* ---- agreement across ranks -------------------------------------------- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return s ? h : 0x5bd1e995u;
}

/* Hash every option that must be equal on all ranks and compare with MIN
 * and MAX allreduces.  Returns the index of the first differing option or
 * -1; <-1 on a communication failure. */
int train_options_differ(struct lbs_comm *c,
                         const struct lbs_train_config *t,
                         const char *const **names_out)
{
    static const char *const names[] = {
        "--optim", "--model", "--topology", "--dataset", "--data",
        "--global-batch", "--micro-batch", "--epochs", "--max-steps",
        "--warmup", "--decay", "--seed", "--subset", "--test-subset",
        "--threads", "--fault", "--compress", "--val", "--lr-base",
        "--lr-ref-batch", "--lr-scaling", "--shards", "--consensus-every",
    };
    enum { K = sizeof names / sizeof names[0] };
    char buf[K][64];
    snprintf(buf[0], 64, "%ld", t->global_batch);
    snprintf(buf[1], 64, "%ld", t->micro_batch);
    snprintf(buf[2], 64, "%.17g", t->epochs);
    snprintf(buf[3], 64, "%ld", t->max_steps);
    snprintf(buf[4], 64, "%.17g", t->warmup);
    snprintf(buf[5], 64, "%ld", t->seed);
    snprintf(buf[6], 64, "%ld", t->subset);
    snprintf(buf[7], 64, "%ld", t->test_subset);
    snprintf(buf[8], 64, "%ld", t->threads);
    snprintf(buf[9], 64, "%ld", t->val);
    snprintf(buf[10], 64, "%.17g", t->lr_base);
    snprintf(buf[11], 64, "%ld", t->lr_ref_batch);
    snprintf(buf[12], 64, "%ld", t->consensus_every);
    const char *val[K] = {
        t->spec, t->model, t->topology, t->dataset, t->data_dir, buf[0],
        buf[1], buf[2], buf[3], buf[4], t->decay, buf[5], buf[6], buf[7],
        buf[8], t->fault_str, t->compress, buf[9], buf[10], buf[11],
        t->lr_scaling, t->shards, buf[12],
    };
    int64_t mn[K], mx[K];
    for (int k = 0; k < K; k++)
        mn[k] = mx[k] = (int64_t)(fnv1a(val[k]) >> 1);
    *names_out = names;
    if (c->size == 1)
        return -1;
    if (lbs_allreduce(c, mn, K, LBS_INT64, LBS_MIN, -1) ||
        lbs_allreduce(c, mx, K, LBS_INT64, LBS_MAX, -1))
        return -2;
    for (int k = 0; k < K; k++)
        if (mn[k] != mx[k])
            return k;
    return -1;
}

/* ---- string buffer for the trace ----------------------------------------- */

void train_sb_ms_array(struct strbuf *b, const char *key, const double *x,
                       size_t n)
{
    sb_printf(b, ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++)
        sb_printf(b, "%s%.4f", i ? "," : "", x[i] * 1e3);
    sb_printf(b, "]");
}

void train_print_row(const json_t *row, int json)
{
    if (json) {
        char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
        fflush(stdout);
        return;
    }
    const char *ev = json_string_value(json_object_get(row, "event"));
    if (!strcmp(ev, "epoch")) {
        printf("  %6.2f %7lld %9.3g %9.4f %8.2f%% %9.4f %8.2f%% %7lld "
               "%9.1f\n",
               json_real_value(json_object_get(row, "epoch")),
               (long long)json_integer_value(json_object_get(row, "step")),
               json_real_value(json_object_get(row, "lr")),
               json_number_value(json_object_get(row, "train_loss")),
               100 * json_number_value(json_object_get(row, "train_accuracy")),
               json_real_value(json_object_get(row, "test_loss")),
               100 * json_real_value(json_object_get(row, "test_accuracy")),
               (long long)json_integer_value(
                   json_object_get(row, "skipped_steps")),
               json_real_value(json_object_get(row, "wall_s")));
    } else {
        printf("final: test_accuracy %.2f%% after %lld steps (%lld skipped), "
               "%.1f s; %.3g MB sent per rank; fwd %.2f s, bwd %.2f s "
               "(weight-grad %.2f s), optimizer %.2f s (comm %.2f s)\n",
               100 * json_real_value(json_object_get(row, "test_accuracy")),
               (long long)json_integer_value(json_object_get(row, "steps")),
               (long long)json_integer_value(
                   json_object_get(row, "skipped_steps")),
               json_real_value(json_object_get(row, "wall_s")),
               json_integer_value(json_object_get(row, "sent_bytes_per_rank"))
                   / 1e6,
               json_real_value(json_object_get(row, "fwd_s")),
               json_real_value(json_object_get(row, "bwd_s")),
               json_real_value(json_object_get(row, "wgrad_s")),
               json_real_value(json_object_get(row, "optim_s")),
               json_real_value(json_object_get(row, "comm_s")));
    }
    fflush(stdout);
}


/* The trace file name's stem for this run, by what it holds:
 * train-trace-OPTIM[-COMPRESSOR] (the optimizer's and the compressor's
 * names, without parameters); write_trace adds -2, -3, ... when another
 * run in the same directory (a suite, a concurrent run) has taken it. */
void train_pick_trace_base(const char *spec, const char *compress,
                           char *base, size_t len)
{
    char tag[40];
    size_t o = 0;
    for (int part = 0; part < 2; part++) {
        const char *p = part ? compress : spec;
        if (!p || !*p)
            continue;
        if (o && o + 1 < sizeof tag)
            tag[o++] = '-';
        for (; *p && *p != ':' && o + 1 < sizeof tag; p++)
            tag[o++] = (char)((*p >= 'a' && *p <= 'z') ||
                              (*p >= '0' && *p <= '9') || *p == '_'
                                  ? *p : *p >= 'A' && *p <= 'Z' ? *p + 32
                                                                : '_');
    }
    tag[o] = '\0';
    snprintf(base, len, "train-trace-%s", tag);
}

struct trace_name { const char *stem; int all; };

/* lbs_name_fn: candidate i of the trace's name, STEM[-i].jsonl (or
 * .rank0.jsonl with --trace-all-ranks); skipped when the name is taken in
 * the other form.  The rename that claims it never replaces, so two runs
 * racing into one directory each keep their own trace. */
static int trace_candidate(void *ctx, int dfd, int i, char *buf, size_t len)
{
    const struct trace_name *t = ctx;
    char other[128];
    int w = i == 1 ? snprintf(buf, len, "%s", t->stem)
                   : snprintf(buf, len, "%s-%d", t->stem, i);
    if (w < 0 || (size_t)w + 16 >= len)
        return -1;
    snprintf(other, sizeof other, "%s%s", buf, t->all ? ".jsonl"
                                                      : ".rank0.jsonl");
    strcat(buf, t->all ? ".rank0.jsonl" : ".jsonl");
    return faccessat(dfd, other, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The trace file: rank 0 (or the one rank) claims a new name (r->trbase
 * becomes its stem); with --trace-all-ranks the others then write theirs
 * under the stem rank 0 broadcast. */
int train_write_trace(struct train_run *r, struct lbs_err *err)
{
    const struct train_opts *t = &r->t;
    const struct lbs_train_info *i = r->info;
    json_t *h = json_pack(
        "{s:s,s:i,s:s,s:s,s:s,s:o,s:i,s:i,s:I,s:o,s:s,s:s,s:s,s:I,s:I,s:I,"
        "s:i,s:I,s:s}",
        "format", "lbscale-train-trace", "version", 1, "extends",
        "lbscale-trace/1", "optim", lbs_optim_name(i->optim), "params",
        lbs_optim_params(i->optim), "compress",
        t->c.compress ? json_string(t->c.compress) : json_null(), "ranks",
        r->P, "rank", r->rank, "steps", (json_int_t)r->steps, "layers",
        lbs_train_layers_json(i->model), "spec", i->spec, "model",
        t->c.model, "dataset", i->data->name, "global_batch",
        (json_int_t)t->c.global_batch, "local_batch", (json_int_t)i->local,
        "micro_batch", (json_int_t)i->micro, "threads", (int)t->c.threads,
        "seed", (json_int_t)t->c.seed, "time_unit", "ms");
    /* under a suite: the attempt that wrote this file, so that a resumed
     * suite can remove the trace of an attempt that never committed */
    const char *att = getenv(LBS_ATTEMPT_ENV);
    if (att && *att)
        json_object_set_new(h, "attempt", json_string(att));
    char *hs = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    const struct strbuf *tl = &r->tr_lines;
    if (!hs || tl->oom) {
        free(hs);
        return lbs_err_set(err, -ENOMEM, "trace: out of memory");
    }
    size_t hl = strlen(hs);
    char *all = malloc(hl + 1 + tl->len);
    if (!all) {
        free(hs);
        return lbs_err_set(err, -ENOMEM, "trace: out of memory");
    }
    memcpy(all, hs, hl);
    all[hl] = '\n';
    if (tl->len)
        memcpy(all + hl + 1, tl->p, tl->len);
    int rc;
    if (r->rank == 0) {
        char stem[sizeof r->trbase], chosen[sizeof r->trbase + 16];
        snprintf(stem, sizeof stem, "%s", r->trbase);
        struct trace_name tn = {stem, t->trace_all};
        rc = lbs_write_unique(r->rundir, trace_candidate, &tn, all,
                              hl + 1 + tl->len, chosen, sizeof chosen, err);
        if (!rc)    /* the stem: the name less .jsonl / .rank0.jsonl */
            snprintf(r->trbase, sizeof r->trbase, "%.*s",
                     (int)(strlen(chosen) - (t->trace_all ? 12 : 6)),
                     chosen);
    } else {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s.rank%d.jsonl", r->rundir,
                 r->trbase, r->rank);
        rc = lbs_write_atomic(path, all, hl + 1 + tl->len, err);
    }
    free(all);
    free(hs);
    return rc;
}

/* --export-layers FILE: the model's tensors as {"model":..., "layers":
 * [{"name":..., "shape":[...]}]}, the format optim/sim --layers read. */
int train_export_layers(const struct train_opts *t)
{
    struct mlp *m;
    struct lbs_err e;
    if (t->c.is_cnn ? cnn_new(1, &m, &e)
                    : mlp_new(t->c.dims, t->c.nd, 1, &m, &e)) {
        cli_error("train", "%s", e.msg);
        return EXIT_RUNTIME;
    }
    json_t *root = json_pack("{s:s,s:o,s:I}", "model", t->c.model, "layers",
                             lbs_train_layers_json(m), "parameters",
                             (json_int_t)m->nparams);
    mlp_free(m);
    char *txt = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(root);
    int rc = txt ? lbs_write_atomic(t->export_layers, txt, strlen(txt), &e)
                 : lbs_err_set(&e, -ENOMEM, "out of memory");
    free(txt);
    if (rc) {
        cli_error("--export-layers", "%s", e.msg);
        return cli_exit_code(rc);
    }
    return 0;
}
