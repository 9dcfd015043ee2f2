/* sim_cli.c - `lbscale sim ...`: the simulator from the command line.
 *
 *   sim sweep      iteration time, exposed communication, scaling
 *                  efficiency over a range of GPU counts, per optimizer
 *   sim step       one point with its timeline
 *   sim coll       one collective: every algorithm x protocol, the choice
 *   sim anchors    published figures beside lbscale's predictions
 *   sim speed      how fast the simulator itself is (benchmark figures)
 *   sim calibrate  fit the `local` platform from `lbscale coll` results
 *   sim list       presets
 *
 * Presets live in <data>/platforms/NAME.json, <data>/models/NAME.json and
 * <data>/traces/OPTIM-MODEL*.jsonl; <data> is $LBSCALE_SIM_DATA, else the
 * source tree's sim/data, else the installed copy.  Every input is loaded
 * and checked before a results directory is created, so bad input leaves
 * nothing behind (exit 2, one line on stderr).
 */
#include <dirent.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "lbs_sim_paths.h"
#include "lbscale/file.h"
#include "lbscale/optim.h"
#include "lbscale/param.h"
#include "lbscale_sim.h"

#define DP_OPTIMS "sgd, lars, lamb, adamw"

static const char *data_dir(void)
{
    const char *e = getenv("LBSCALE_SIM_DATA");
    struct stat st;
    if (e && *e)
        return e;
    if (!stat(LBS_SIM_DATA_SRC, &st) && S_ISDIR(st.st_mode))
        return LBS_SIM_DATA_SRC;
    return LBS_SIM_DATA_INSTALLED;
}

static int is_path(const char *s, const char *ext)
{
    size_t n = strlen(s), e = strlen(ext);
    return strchr(s, '/') || (n > e && !strcmp(s + n - e, ext));
}

/* "dgx-a100" -> <data>/platforms/dgx-a100.json; paths stay as they are. */
static int preset_path(const char *kind, const char *arg, char *buf,
                       size_t len, struct lbs_err *err)
{
    struct stat st;
    if (is_path(arg, ".json")) {
        snprintf(buf, len, "%s", arg);
        return 0;
    }
    for (const char *c = arg; *c; c++)
        if (!(*c == '-' || *c == '_' || *c == '.' || (*c >= '0' && *c <= '9') ||
              (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            return lbs_err_set(err, -ENOENT, "unknown %s '%.60s'", kind,
                               arg);
    snprintf(buf, len, "%s/%ss/%s.json", data_dir(), kind, arg);
    if (stat(buf, &st)) {
        char names[160] = "";
        size_t o = 0;
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%ss", data_dir(), kind);
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            size_t n = strlen(de->d_name);
            if (n > 5 && !strcmp(de->d_name + n - 5, ".json") &&
                o + n < sizeof names - 8)
                o += (size_t)snprintf(names + o, sizeof names - o, "%s%.*s",
                                      o ? ", " : "", (int)(n - 5), de->d_name);
        }
        if (d)
            closedir(d);
        if (!strcmp(arg, "local") && !strcmp(kind, "platform"))
            return lbs_err_set(err, -ENOENT, "no 'local' platform yet: run "
                               "'lbscale sim calibrate COLL.jsonl' first");
        return lbs_err_set(err, -ENOENT, "unknown %s '%.40s' (presets: %s; "
                           "or a .json file)", kind, arg, names);
    }
    return 0;
}

static int load_platform(const char *arg, struct lbs_sim_platform **p,
                         struct lbs_err *err)
{
    char path[1024];
    int rc = preset_path("platform", arg, path, sizeof path, err);
    return rc ? rc : lbs_sim_platform_load(path, p, err);
}

static int load_model(const char *arg, struct lbs_sim_model **m,
                      struct lbs_err *err)
{
    char path[1024];
    int rc = preset_path("model", arg, path, sizeof path, err);
    return rc ? rc : lbs_sim_model_load(path, m, err);
}

/* Optimizer memory traffic from core's own model (lbs_optim_bytes_per_elem);
 * 44 (LAMB's) when this build does not know the optimizer. */
static double optim_bpe(const char *name, const char *params, int *assumed)
{
    char spec[320];
    double b;
    *assumed = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0 && params && *params)
            snprintf(spec, sizeof spec, "%s:%s", name, params);
        else
            snprintf(spec, sizeof spec, "%s", name);
        if (!lbs_optim_spec_bytes_per_elem(spec, &b, NULL))
            return b;
    }
    *assumed = 1;
    return 44;
}

/* ---- optimizer entries: a data-parallel plan or one or more traces ---- */

struct entry {
    char name[LBS_SIM_NAME_MAX];
    char source[LBS_SIM_FILE_MAX];   /* "data-parallel" or trace file(s) */
    struct lbs_sim_plan **plans;     /* bound to the model */
    size_t nplans;
    double bpe;
    int bpe_assumed;
};

static void entry_free(struct entry *e)
{
    for (size_t i = 0; i < e->nplans; i++)
        lbs_sim_plan_free(e->plans[i]);
    free(e->plans);
}

static int add_trace(struct entry *e, const char *path,
                     const struct lbs_sim_model *m, struct lbs_err *err)
{
    struct lbs_sim_plan *raw, *bound;
    int rc = lbs_sim_trace_load(path, &raw, err);
    if (rc)
        return rc;
    rc = lbs_sim_plan_bind(raw, m, &bound, err);
    if (!rc) {
        void *q = realloc(e->plans, (e->nplans + 1) * sizeof *e->plans);
        if (!q) {
            lbs_sim_plan_free(bound);
            rc = lbs_err_set(err, -ENOMEM, "out of memory");
        } else {
            e->plans = q;
            e->plans[e->nplans++] = bound;
            if (e->nplans == 1) {
                /* a compressed exchange is its own line: "lamb+topk:k=0.01"
                 * never stands in for plain LAMB in a table or a gate */
                int cmp = raw->compress[0] && strcmp(raw->compress, "none");
                snprintf(e->name, sizeof e->name, "%.24s%s%.38s", raw->optim,
                         cmp ? "+" : "", cmp ? raw->compress : "");
                e->bpe = optim_bpe(raw->optim, raw->params, &e->bpe_assumed);
            }
        }
    }
    lbs_sim_plan_free(raw);
    return rc;
}

/* Can the simulator plan it without a trace: one allreduce of every
 * layer per step?  Core's properties say so (dense, all layers). */
static int is_dp(const char *s)
{
    struct lbs_optim_props p;
    return !lbs_optim_props(s, &p, NULL) && p.dense && !p.samples_layers;
}

static int make_entry(const char *item, const struct lbs_sim_model *m,
                      double grad_bytes, struct entry *e,
                      struct lbs_err *err)
{
    memset(e, 0, sizeof *e);
    if (is_path(item, ".jsonl")) {
        snprintf(e->source, sizeof e->source, "%s", item);
        return add_trace(e, item, m, err);
    }
    for (const char *c = item; *c; c++)
        if (!(*c == '-' || *c == '_' || (*c >= '0' && *c <= '9') ||
              (*c >= 'a' && *c <= 'z')))
            return lbs_err_set(err, -ENOENT, "--optim: '%.60s' is neither "
                               "an optimizer name nor a .jsonl trace", item);
    char pat[1024];
    glob_t gl;
    snprintf(pat, sizeof pat, "%s/traces/%s-%s*.jsonl", data_dir(), item,
             m->name);
    if (!glob(pat, 0, NULL, &gl) && gl.gl_pathc > 0) {
        int rc = 0;
        snprintf(e->source, sizeof e->source, "%s%s", gl.gl_pathv[0],
                 gl.gl_pathc > 1 ? " (+ more ranks)" : "");
        for (size_t i = 0; i < gl.gl_pathc && !rc; i++)
            rc = add_trace(e, gl.gl_pathv[i], m, err);
        globfree(&gl);
        return rc;
    }
    globfree(&gl);
    if (!is_dp(item))
        return lbs_err_set(err, -ENOENT, "--optim: no trace for '%s' on "
                           "model %s (looked for %s); record one with the "
                           "record comm backend and pass the .jsonl file",
                           item, m->name, pat);
    snprintf(e->name, sizeof e->name, "%s", item);
    snprintf(e->source, sizeof e->source, "data-parallel");
    e->plans = calloc(1, sizeof *e->plans);
    if (!e->plans)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = lbs_sim_plan_dp_bytes(m, item, grad_bytes, &e->plans[0], err);
    if (!rc)
        e->nplans = 1;
    e->bpe = optim_bpe(item, NULL, &e->bpe_assumed);
    return rc;
}

/* The trace recorded at P ranks, else the nearest rank count (log scale). */
static const struct lbs_sim_plan *plan_for(const struct entry *e, long P)
{
    const struct lbs_sim_plan *best = e->plans[0];
    double bd = INFINITY;
    for (size_t i = 0; i < e->nplans; i++) {
        const struct lbs_sim_plan *p = e->plans[i];
        if (p->ranks == 0 || p->ranks == P)
            return p;
        double d = fabs(log((double)p->ranks / (double)P));
        if (d < bd) {
            bd = d;
            best = p;
        }
    }
    return best;
}

static int load_entries(const char *list, const struct lbs_sim_model *m,
                        double grad_bytes, struct entry **out, size_t *n,
                        struct lbs_err *err)
{
    char *dup = strdup(list), *save = NULL;
    struct entry *v = NULL;
    size_t cnt = 0;
    int rc = 0;
    if (!dup)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    for (char *t = strtok_r(dup, ",", &save); t && !rc;
         t = strtok_r(NULL, ",", &save)) {
        void *q = realloc(v, (cnt + 1) * sizeof *v);
        if (!q) {
            rc = lbs_err_set(err, -ENOMEM, "out of memory");
            break;
        }
        v = q;
        rc = make_entry(t, m, grad_bytes, &v[cnt], err);
        cnt++;
    }
    free(dup);
    if (!rc && cnt == 0)
        rc = lbs_err_set(err, -EINVAL, "--optim: empty list");
    if (rc) {
        for (size_t i = 0; i < cnt; i++)
            entry_free(&v[i]);
        free(v);
        return rc;
    }
    *out = v;
    *n = cnt;
    return 0;
}

/* ---- shared option parsing ------------------------------------------ */

struct simargs {
    struct cli_common com;
    const char *model, *platform, *optim, *gpus, *coll, *bytes, *node_gbps;
    const char *compute;    /* --compute RUN or train trace */
    const char *compress_run;   /* --compress-run RUN */
    double comp_gbps, decomp_gbps;  /* --compress-gbps C,D */
    double bucket_mb;
    int timeline;
    double batch;           /* --batch-per-gpu (0: the model's) */
    double grad_bytes;      /* --grad-dtype: 4 fp32, 2 fp16/bf16 */
    const char *grad_dtype;
    long accum;             /* --accum */
    int check;              /* anchors --check */
    int no_overlap, no_slowdown;
};

static int need(const char *o, const char *v)
{
    if (!v) {
        cli_error(o, "missing value");
        return -1;
    }
    return 0;
}

/* Returns 1 when argv[*i] was one of the shared sim options. */
static int sim_opt(struct simargs *a, int argc, char **argv, int *i)
{
    const char *o = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    const char **slot = !strcmp(o, "--model") ? &a->model
                        : !strcmp(o, "--platform") ? &a->platform
                        : !strcmp(o, "--optim") ? &a->optim
                        : !strcmp(o, "--gpus") ? &a->gpus
                        : !strcmp(o, "--coll") ? &a->coll
                        : !strcmp(o, "--bytes") ? &a->bytes
                        : !strcmp(o, "--compute") ? &a->compute
                        : !strcmp(o, "--compress-run") ? &a->compress_run
                        : NULL;
    if (slot) {
        if (need(o, v))
            return -1;
        *slot = v;
        (*i)++;
        return 1;
    }
    if (!strcmp(o, "--bucket-mb")) {
        if (cli_double(o, v, 1e-6, 1e9, &a->bucket_mb))
            return -1;
        (*i)++;
        return 1;
    }
    if (!strcmp(o, "--batch-per-gpu")) {
        long b;
        if (cli_int(o, v, 1, 10000000, &b))
            return -1;
        a->batch = (double)b;
        (*i)++;
        return 1;
    }
    if (!strcmp(o, "--accum")) {
        if (cli_int(o, v, 1, 1000000, &a->accum))
            return -1;
        (*i)++;
        return 1;
    }
    if (!strcmp(o, "--grad-dtype")) {
        if (need(o, v))
            return -1;
        if (strcmp(v, "fp32") && strcmp(v, "fp16") && strcmp(v, "bf16")) {
            cli_error(o, "'%s': fp32, fp16 or bf16", v);
            return -1;
        }
        a->grad_dtype = v;
        a->grad_bytes = strcmp(v, "fp32") ? 2 : 4;
        (*i)++;
        return 1;
    }
    if (!strcmp(o, "--compress-gbps")) {
        char tail;
        if (need(o, v))
            return -1;
        if (sscanf(v, "%lf,%lf%c", &a->comp_gbps, &a->decomp_gbps, &tail)
                != 2 || !(a->comp_gbps > 0 && a->comp_gbps < 1e6) ||
            !(a->decomp_gbps > 0 && a->decomp_gbps < 1e6)) {
            cli_error(o, "'%s': two rates in GB/s, C,D (compress, "
                      "decompress), in (0, 1e6)", v);
            return -1;
        }
        (*i)++;
        return 1;
    }
    if (!strcmp(o, "--node-gbps")) {
        if (need(o, v))
            return -1;
        a->node_gbps = v;
        (*i)++;
        return 1;
    }
    if (!strcmp(o, "--no-overlap") || !strcmp(o, "--no-slowdown")) {
        *(o[5] == 'o' ? &a->no_overlap : &a->no_slowdown) = 1;
        return 1;
    }
    return 0;
}

/* The options every simulated step takes from the command line. */
static struct lbs_sim_opts sim_opts(const struct simargs *a)
{
    return (struct lbs_sim_opts){.bucket_bytes = a->bucket_mb * 1048576.0,
                                 .accum = a->accum,
                                 .no_overlap = a->no_overlap,
                                 .no_slowdown = a->no_slowdown,
                                 .compress_gbps = a->comp_gbps,
                                 .decompress_gbps = a->decomp_gbps};
}

static int compress_rates(const char *run, const char *spec, double *c,
                          double *d, char *src, size_t srclen,
                          struct lbs_err *e);

/* How compression is priced for plan (says so in src): measured rates
 * (--compress-gbps, --compress-run), else the trace's bytes model at the
 * platform's memory bandwidth; nothing when the plan is not compressed. */
static int compress_cost(const struct simargs *a,
                         const struct lbs_sim_plan *plan,
                         const struct lbs_sim_platform *pl,
                         struct lbs_sim_opts *o, char *src, size_t srclen,
                         struct lbs_err *e)
{
    o->compress_gbps = a->comp_gbps;
    o->decompress_gbps = a->decomp_gbps;
    if (!plan->compress[0]) {
        snprintf(src, srclen, "none (not compressed)");
        return 0;
    }
    if (a->comp_gbps > 0) {
        snprintf(src, srclen, "measured: --compress-gbps %g,%g",
                 a->comp_gbps, a->decomp_gbps);
        return 0;
    }
    if (a->compress_run)
        return compress_rates(a->compress_run, plan->compress,
                              &o->compress_gbps, &o->decompress_gbps, src,
                              srclen, e);
    if (plan->comp_bpe > 0 || plan->decomp_bpe > 0)
        snprintf(src, srclen, "bytes model of %s (compress %g, decompress "
                 "%g + %g%s B/elem) at %g GB/s", plan->compress,
                 plan->comp_bpe, plan->decomp_once_bpe, plan->decomp_bpe,
                 plan->decomp_per_rank ? " x P" : "", pl->mem_bw / 1e9);
    else
        snprintf(src, srclen, "not modelled: the trace has no "
                 "compress_traffic (re-record it, or --compress-gbps)");
    return 0;
}

/* --compress-run RUN: the median compress/decompress rates of RUN's
 * compress.jsonl rows for the trace's compressor, GPU rows preferred;
 * src says what was used. */
static int compress_rates(const char *run, const char *spec, double *c,
                          double *d, char *src, size_t srclen,
                          struct lbs_err *e)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(spec, ":"), spec);
    json_t *rows = lbs_run_rows(run, "compress", e);
    if (!rows)
        return -EINVAL;
    double cs[256], ds[256];
    size_t n = 0;
    for (int gpu = 1; gpu >= 0 && !n; gpu--) {
        size_t i;
        json_t *r;
        json_array_foreach(rows, i, r) {
            const char *nm = json_string_value(json_object_get(r,
                                                               "compressor"));
            int is_gpu = json_object_get(r, "gpu") != NULL;
            if (nm && !strcmp(nm, name) && is_gpu == gpu && n < 256) {
                cs[n] = json_number_value(json_object_get(r, "gbps"));
                ds[n++] = json_number_value(json_object_get(r,
                                                    "decompress_gbps"));
            }
        }
        if (n)
            snprintf(src, srclen, "measured: %s/compress.jsonl, %zu %s row%s",
                     run, n, gpu ? "GPU" : "CPU", n == 1 ? "" : "s");
    }
    json_decref(rows);
    if (!n)
        return lbs_err_set(e, -EINVAL, "--compress-run %s: no compress.jsonl "
                           "row for compressor '%s'", run, name);
    *c = cli_stats(cs, n).median;
    *d = cli_stats(ds, n).median;
    if (!(*c > 0 && *d > 0))
        return lbs_err_set(e, -EINVAL, "--compress-run %s: rows for '%s' "
                           "without positive gbps/decompress_gbps", run, name);
    return 0;
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
static int load_sim_model(const struct simargs *a, struct lbs_sim_model **m,
                          struct lbs_err *e)
{
    struct lbs_sim_model *meas = NULL;
    int rc = a->compute ? measured_model(a->compute, &meas, e) : 0;
    if (!rc && !a->model) {
        *m = meas;
        meas = NULL;
    } else if (!rc) {
        rc = load_model(a->model, m, e);
        if (!rc && meas)
            rc = lbs_sim_model_use_times(*m, meas, e);
    }
    lbs_sim_model_free(meas);
    if (!rc && a->batch > 0)
        rc = lbs_sim_model_set_batch(*m, a->batch, e);
    return rc;
}

static void print_json(const json_t *row)
{
    char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (s)
        puts(s);
    free(s);
}

/* ---- sweep / step ---------------------------------------------------- */

#define SWEEP_HELP \
"usage: lbscale sim sweep --model M --platform P --optim LIST\n" \
"                         [--gpus 8..16384] [--bucket-mb MB] [--json]\n" \
"\n" \
"Simulates one training step per (optimizer, GPU count) and prints the\n" \
"iteration time split into compute (forward + backward), optimizer step\n" \
"and exposed communication (iteration - compute - optimizer), the payload\n" \
"bytes each GPU hands to collectives per step, and the scaling efficiency\n" \
"  E(P) = T(one node, gpus_per_node GPUs) / T(P)\n" \
"at the same per-GPU batch (weak scaling).  Trace plans are averaged over\n" \
"their steps (SLAMB's periodic averaging and 1-bit LAMB's warm-up weigh as\n" \
"often as they occur); 'final' is the average over the trace's last phase\n" \
"(1-bit LAMB: the compressed phase).\n" \
"\n" \
"  --model M       preset name (bert-large, bert-xl, gpt2-xl, swin-t,\n" \
"                  swin-b, resnet-50) or a model JSON file\n" \
"  --platform P    preset (dgx-a100, dgx-h100, eth-25g, eth-100g, local)\n" \
"                  or a platform JSON file\n" \
"  --optim LIST    comma list; each item a trace-v1 .jsonl file, or a name:\n" \
"                  <data>/traces/NAME-MODEL*.jsonl when present (one per\n" \
"                  recorded rank count; the one at P, else the nearest),\n" \
"                  else for " DP_OPTIMS " the data-parallel\n" \
"                  contract (every layer's fp32 gradient allreduced in\n" \
"                  DDP buckets)\n" \
"  --gpus LIST     8..16384 (powers of two), 8,64,1024, or a mix\n" \
"  --bucket-mb MB  DDP bucket cap in MiB (default: the model's, 25)\n" \
"  --compute RUN   per-layer forward/backward times measured by lbscale\n" \
"                  train (RUN's train-trace*.jsonl, or the file) instead of\n" \
"                  the model's FLOPs; alone, the measured model itself\n" \
"  --batch-per-gpu B  scale the model's FLOPs/times to B samples per GPU\n" \
"  --accum K       K micro-batches per optimizer step (gradient\n" \
"                  accumulation; communication after the last)\n" \
"  --no-overlap    every collective waits for the end of the backward pass\n" \
"  --no-slowdown   ignore the platform's compute slowdown while overlapped\n" \
"  --grad-dtype D  fp32 (default), fp16 or bf16: what dense data-parallel\n" \
"                  baselines allreduce (traces keep their recorded bytes)\n" \
"  --compress-gbps C,D  compressed traces: measured compress and decompress\n" \
"                  rates (GB/s of fp32 input, e.g. lbscale compress --device\n" \
"                  cuda); default: the trace's bytes model at the GPU's\n" \
"                  memory bandwidth\n" \
"  --compress-run RUN  the same from RUN's compress.jsonl (GPU rows first)\n" \
"Files must be regular files (not FIFOs or devices) of at most 1 MiB\n" \
"(platform), 64 MiB (model) and 1 GiB (trace); every physical quantity\n" \
"in them must lie in the range sim/README.md states (\"Ranges\").\n"

/* One sweep row: the point's result and how it was obtained. */
static json_t *sweep_row(const struct simargs *a, const struct entry *en,
                         const struct lbs_sim_plan *plan,
                         const struct lbs_sim_model *m,
                         const struct lbs_sim_platform *pl,
                         const struct lbs_sim_opts *o,
                         const struct lbs_sim_result *r, double eff)
{
    json_t *row = json_pack(
        "{s:s,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:s,s:s,s:I,"
        "s:f,s:I,s:f,s:f,s:f,s:b}",
        "optim", en->name, "gpus", (json_int_t)r->P, "iter_ms",
        r->iter * 1e3, "compute_ms", r->compute * 1e3, "optimizer_ms",
        r->optim * 1e3, "exposed_comm_ms", r->exposed * 1e3, "comm_ms",
        r->comm * 1e3, "bytes_per_gpu", r->bytes, "wire_bytes_per_gpu",
        r->wire, "scaling_efficiency", eff, "model", m->name,
        "platform", pl->name, "plan", en->source, "trace_ranks",
        (json_int_t)plan->ranks, "final_phase_iter_ms",
        r->final_iter * 1e3, "final_phase_from_step",
        (json_int_t)r->final_from, "collectives_per_step", r->calls,
        "bucket_mb",
        (o->bucket_bytes > 0 ? o->bucket_bytes : m->bucket_bytes) /
            1048576.0,
        "optim_bytes_per_elem", en->bpe, "optim_bytes_assumed",
        en->bpe_assumed);
    if (row) {
        int dp = !strcmp(en->source, "data-parallel");
        json_object_set_new(row, "slowdown_ms", json_real(r->slowdown * 1e3));
        json_object_set_new(row, "compute_slowdown", json_real(
            o->no_slowdown ? 0 : pl->overlap_slowdown));
        json_object_set_new(row, "overlap", json_boolean(!o->no_overlap));
        json_object_set_new(row, "accum", json_integer(o->accum > 1
                                                        ? o->accum : 1));
        json_object_set_new(row, "batch_per_gpu",
                            json_real(m->batch_per_gpu));
        json_object_set_new(row, "grad_dtype", dp ? json_string(a->grad_dtype)
                                                  : json_string("trace"));
        json_object_set_new(row, "collectives", json_string(
            pl->nccl_model ? "nccl-2.21-tuner" : "mpi-alpha-beta"));
        if (plan->compress[0])   /* the trace's compressor ("none" too) */
            json_object_set_new(row, "compress", json_string(plan->compress));
    }
    return row;
}

/* Every (entry, P) point simulated into rows before anything is printed
 * or written: an input that fails at some point must leave no table
 * header, no partial table and no run directory behind. */
static int sweep_rows(const struct simargs *a,
                      const struct lbs_sim_platform *pl,
                      const struct lbs_sim_model *m, struct entry *ent,
                      size_t nent, const long *P, size_t np, long base_p,
                      struct lbs_sim_opts *o, json_t **rows,
                      struct lbs_err *e)
{
    int rc = 0;
    *rows = json_array();
    if (!*rows)
        return lbs_err_set(e, -ENOMEM, "out of memory");
    for (size_t k = 0; k < nent && !rc; k++) {
        struct lbs_sim_result base, r;
        char csrc[LBS_SIM_FILE_MAX + 64];
        o->optim_bytes_per_elem = ent[k].bpe;
        if ((rc = compress_cost(a, ent[k].plans[0], pl, o, csrc,
                                sizeof csrc, e)))
            break;
        rc = lbs_sim_run(pl, m, plan_for(&ent[k], base_p), base_p, o, &base,
                         e);
        for (size_t i = 0; i < np && !rc; i++) {
            const struct lbs_sim_plan *plan = plan_for(&ent[k], P[i]);
            if ((rc = lbs_sim_run(pl, m, plan, P[i], o, &r, e)))
                break;
            json_t *row = sweep_row(a, &ent[k], plan, m, pl, o, &r,
                                    r.iter > 0 ? base.iter / r.iter : 1);
            if (row) {
                json_object_set_new(row, "compress_ms",
                                    json_real(r.compress * 1e3));
                json_object_set_new(row, "compress_cost", json_string(csrc));
            }
            if (!row || json_array_append_new(*rows, row))
                rc = lbs_err_set(e, -ENOMEM, "out of memory");
        }
    }
    if (rc) {
        json_decref(*rows);
        *rows = NULL;
    }
    return rc;
}

#define NUM(r, k) json_number_value(json_object_get(r, k))

static void print_sweep_row(const json_t *r)
{
    printf("  %-18s %6.0f %9.2f %9.2f %8.2f %9.2f %9.2f %8.2f %8.1f %6.3f "
           "%9.2f\n",
           json_string_value(json_object_get(r, "optim")), NUM(r, "gpus"),
           NUM(r, "iter_ms"), NUM(r, "compute_ms"), NUM(r, "optimizer_ms"),
           NUM(r, "exposed_comm_ms"), NUM(r, "comm_ms"), NUM(r, "slowdown_ms"),
           NUM(r, "bytes_per_gpu") / 1e6, NUM(r, "scaling_efficiency"),
           NUM(r, "final_phase_iter_ms"));
}

static int run_entries(const struct simargs *a, int argc, char **argv,
                       int step_mode)
{
    struct lbs_err e;
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL;
    struct entry *ent = NULL;
    size_t nent = 0, np = 0;
    long *P = NULL;
    struct lbs_run *run = NULL;
    json_t *rows = NULL;
    int rc;
    const char *what = step_mode ? "sim step" : "sim sweep";
    if ((!a->model && !a->compute) || !a->platform || !a->optim) {
        cli_error(what, "--model (or --compute), --platform and --optim are "
                  "required (see --help)");
        return EXIT_BAD_INPUT;
    }
    if ((rc = load_sim_model(a, &m, &e)) ||
        (rc = load_platform(a->platform, &pl, &e)) ||
        (rc = load_entries(a->optim, m, a->grad_bytes, &ent, &nent, &e))) {
        cli_error(what, "%s", e.msg);
        goto out;
    }
    {
        /* default: one node, then powers of two up to max_gpus (sweep);
         * 1,024 or max_gpus (step) */
        char def[64];
        long top = pl->max_gpus;
        if (step_mode)
            snprintf(def, sizeof def, "%ld", top < 1024 ? top : 1024L);
        else
            snprintf(def, sizeof def, "%ld..%ld", (long)pl->gpus_per_node <
                     top ? (long)pl->gpus_per_node : top, top);
        if ((rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : def, &P, &np,
                                     &e))) {
            cli_error(what, "%s", e.msg);
            goto out;
        }
    }
    if (step_mode && (np != 1 || nent != 1)) {
        cli_error(what, "one --optim and one --gpus value (use sim sweep for "
                  "lists)");
        rc = -EINVAL;
        goto out;
    }
    struct lbs_sim_opts o = sim_opts(a);
    /* validate every point before anything is written */
    for (size_t i = 0; i < np && !rc; i++) {
        struct lbs_sim_net net;
        rc = lbs_sim_net_init(&net, pl, P[i], &e);
    }
    if (!rc && o.bucket_bytes > 4 * m->params)
        rc = lbs_err_set(&e, -EINVAL, "--bucket-mb: %g MiB is larger than "
                         "model %s (%.4g MiB of fp32 gradients)", a->bucket_mb,
                         m->name, 4 * m->params / 1048576.0);
    if (rc) {
        cli_error(what, "%s", e.msg);
        goto out;
    }
    long base_p = pl->gpus_per_node < pl->max_gpus ? pl->gpus_per_node
                                                   : pl->max_gpus;
    if ((rc = sweep_rows(a, pl, m, ent, nent, P, np, base_p, &o, &rows,
                         &e))) {
        cli_error(what, "%s", e.msg);
        goto out;
    }
    /* sweep and step rows go to sim.jsonl (what `lbscale report` reads) */
    if ((rc = cli_open_run(&a->com, "sim", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        printf("# %s on %s (%s, %d GPUs/node), per-GPU batch %g x %g, "
               "bucket %g MiB; E = T(%ld GPUs)/T(P)\n"
               "# collectives: %s; dense baselines send %s gradients; %ld "
               "micro-batch%s per step; comm %s the backward pass; compute "
               "slowdown while overlapped %.1f%%\n"
               "# %-18s %6s %9s %9s %8s %9s %9s %8s %8s %6s %9s\n",
               m->name, pl->name, pl->gpu, pl->gpus_per_node,
               m->batch_per_gpu, m->seq_len,
               (o.bucket_bytes > 0 ? o.bucket_bytes : m->bucket_bytes) /
                   1048576.0,
               base_p, pl->nccl_model ? "NCCL 2.21 tuner model"
                                      : "MPI alpha-beta model",
               a->grad_dtype, o.accum > 1 ? o.accum : 1L,
               o.accum > 1 ? "es" : "", o.no_overlap ? "after"
                                                      : "overlaps",
               o.no_slowdown ? 0 : 100 * pl->overlap_slowdown,
               "optim", "gpus", "iter(ms)", "compute", "optim",
               "exposed", "comm", "slowdn", "MB/GPU", "eff", "final(ms)");
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        if (a->com.json)
            print_json(row);
        else
            print_sweep_row(row);
        if (run && (rc = lbs_run_append(run, "sim", json_incref(row), &e))) {
            cli_error(what, "%s", e.msg);
            break;
        }
    }
    if (!rc && run && !a->com.json)
        fprintf(stderr, "results: %s/sim.jsonl\n", lbs_run_dir(run));
out:
    json_decref(rows);
    lbs_run_close(run);
    for (size_t k = 0; k < nent; k++)
        entry_free(&ent[k]);
    free(ent);
    free(P);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return cli_exit_code(rc);
}

struct tl_ctx {
    const struct lbs_sim_model *m;
    int json;
    long bwd_events;
};

static void on_event(void *ctx, const struct lbs_sim_event *ev)
{
    struct tl_ctx *t = ctx;
    static const char *const kinds[] = {"forward", "backward", "comm",
                                        "optimizer"};
    if (ev->kind == LBS_SIM_EV_BWD) {
        t->bwd_events++;
        return;
    }
    if (t->json) {
        json_t *o = json_pack("{s:s,s:f,s:f,s:f}", "event", kinds[ev->kind],
                              "ready_ms", ev->ready * 1e3, "start_ms",
                              ev->start * 1e3, "end_ms", ev->end * 1e3);
        if (o && ev->kind == LBS_SIM_EV_COMM) {
            json_object_set_new(o, "coll", json_string(
                                    lbs_sim_coll_name(ev->coll)));
            json_object_set_new(o, "bytes", json_real(ev->bytes));
            json_object_set_new(o, "algo", json_string(
                                    lbs_sim_algo_name(ev->cost.algo)));
            json_object_set_new(o, "proto", json_string(
                                    lbs_sim_proto_name(ev->cost.proto)));
            json_object_set_new(o, "layers", json_pack("[i,i]", ev->layer,
                                                       ev->layer_last));
            json_object_set_new(o, "calls", json_integer(ev->calls));
            /* waits for another call or the whole backward pass, not
             * just its layer's gradient (engine.c) */
            json_object_set_new(o, "dependent", json_boolean(ev->post));
        }
        if (o)
            print_json(o);
        json_decref(o);
        return;
    }
    if (ev->kind != LBS_SIM_EV_COMM) {
        printf("  %-9s %10s %10.3f %10.3f\n", kinds[ev->kind], "",
               ev->start * 1e3, ev->end * 1e3);
        return;
    }
    printf("  %-9s %10.3f %10.3f %10.3f %10.2f  %-9s %-17s %-6s layers "
           "%d..%d (%d call%s)%s\n", kinds[ev->kind], ev->ready * 1e3,
           ev->start * 1e3, ev->end * 1e3, ev->bytes / 1e6,
           lbs_sim_coll_name(ev->coll), lbs_sim_algo_name(ev->cost.algo),
           lbs_sim_proto_name(ev->cost.proto), ev->layer, ev->layer_last,
           ev->calls, ev->calls == 1 ? "" : "s",
           ev->post ? (ev->layer < 0 ? " whole-model" : " needs an earlier call")
                    : "");
}

static int sim_step_timeline(const struct simargs *a)
{
    struct lbs_err e;
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL;
    struct entry *ent = NULL;
    size_t nent = 0, np = 0;
    long *P = NULL;
    int rc;
    if ((rc = load_sim_model(a, &m, &e)) ||
        (rc = load_platform(a->platform, &pl, &e)) ||
        (rc = load_entries(a->optim, m, a->grad_bytes, &ent, &nent, &e)) ||
        (rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "1024", &P, &np, &e))) {
        cli_error("sim step", "%s", e.msg);
        goto out;
    }
    struct tl_ctx t = {m, a->com.json, 0};
    struct lbs_sim_opts o = sim_opts(a);
    o.optim_bytes_per_elem = ent[0].bpe;
    o.on_event = on_event;
    o.ctx = &t;
    struct lbs_sim_opts quiet = o;
    quiet.on_event = NULL;
    quiet.ctx = NULL;
    struct lbs_sim_result r;
    /* once without events first: a point that fails prints nothing */
    if ((rc = lbs_sim_run(pl, m, plan_for(&ent[0], P[0]), P[0], &quiet, &r,
                          &e))) {
        cli_error("sim step", "%s", e.msg);
        goto out;
    }
    if (!a->com.json)
        printf("# timeline of the first distinct step: %s, %s, %s, %ld GPUs\n"
               "  %-9s %10s %10s %10s %10s  %-9s %-17s %-6s\n", ent[0].name,
               m->name, pl->name, P[0], "event", "ready(ms)", "start", "end",
               "MB", "coll", "algorithm", "proto");
    rc = lbs_sim_run(pl, m, plan_for(&ent[0], P[0]), P[0], &o, &r, &e);
    if (rc)
        cli_error("sim step", "%s", e.msg);
    else if (!a->com.json)
        printf("# %ld backward events (one per layer) not shown; iteration "
               "%.3f ms = compute %.3f + optimizer %.3f + exposed %.3f\n",
               t.bwd_events, r.iter * 1e3, r.compute * 1e3, r.optim * 1e3,
               r.exposed * 1e3);
out:
    for (size_t k = 0; k < nent; k++)
        entry_free(&ent[k]);
    free(ent);
    free(P);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return cli_exit_code(rc);
}

/* ---- coll ------------------------------------------------------------- */

/* One sim coll row: the choice, algbw/busbw and every candidate;
 * -EINVAL when no enabled algorithm and protocol can carry the size. */
static int coll_row(const struct lbs_sim_net *net,
                    const struct lbs_sim_platform *pl, int k, long P,
                    double bytes, json_t **out, struct lbs_err *e)
{
    struct lbs_sim_cost c = lbs_sim_coll_cost(net, k, bytes,
                                              LBS_SIM_TOPO_RING, 1);
    *out = NULL;
    if (!isfinite(c.t))
        return lbs_err_set(e, -EINVAL, "%s: no enabled algorithm and "
                           "protocol can run %s of %.0f bytes on %ld GPUs",
                           pl->file, lbs_sim_coll_name(k), bytes, P);
    double Pd = (double)P;
    double algbw = c.t > 0 ? bytes / c.t / 1e9 : 0;
    /* nccl-tests bus bandwidth factors */
    double f = k == LBS_SIM_ALLREDUCE ? 2 * (Pd - 1) / Pd
               : k == LBS_SIM_ALLGATHER || k == LBS_SIM_ALLGATHERV
                   ? (Pd - 1)
               : k == LBS_SIM_ALLTOALL ? (Pd - 1) / Pd : 1;
    json_t *row = json_pack("{s:s,s:s,s:I,s:f,s:f,s:s,s:s,s:f,s:f}",
                            "platform", pl->name, "coll",
                            lbs_sim_coll_name(k), "gpus", (json_int_t)P,
                            "bytes", bytes, "time_us", c.t * 1e6, "algo",
                            lbs_sim_algo_name(c.algo), "proto",
                            lbs_sim_proto_name(c.proto), "algbw_gbs", algbw,
                            "busbw_gbs", algbw * f);
    json_t *all = json_object();
    if (!row || !all) {
        json_decref(row);
        json_decref(all);
        return lbs_err_set(e, -ENOMEM, "out of memory");
    }
    for (int al = 0; al < LBS_SIM_NALGO; al++)
        for (int p = 0; p < LBS_SIM_NPROTO; p++) {
            double t = lbs_sim_algo_time(net, al, p, bytes,
                                         LBS_SIM_TOPO_RING, 1, NULL);
            char key[48];
            if (!isfinite(t) || lbs_sim_algo_coll(al) !=
                (k == LBS_SIM_ALLGATHERV ? LBS_SIM_ALLGATHER
                                         : (enum lbs_sim_coll)k))
                continue;
            snprintf(key, sizeof key, "%s/%s", lbs_sim_algo_name(al),
                     lbs_sim_proto_name(p));
            json_object_set_new(all, key, json_real(t * 1e6));
        }
    json_object_set_new(row, "candidates_us", all);
    *out = row;
    return 0;
}

/* Every (P, size) row of sim coll before anything is printed or written. */
static int coll_rows(const struct lbs_sim_platform *pl, int k, const long *P,
                     size_t np, const double *sizes, size_t ns,
                     json_t **rows, struct lbs_err *e)
{
    int rc = 0;
    *rows = json_array();
    if (!*rows)
        return lbs_err_set(e, -ENOMEM, "out of memory");
    for (size_t i = 0; i < np && !rc; i++) {
        struct lbs_sim_net net;
        rc = lbs_sim_net_init(&net, pl, P[i], e);
        for (size_t j = 0; j < ns && !rc; j++) {
            json_t *row;
            if (!(rc = coll_row(&net, pl, k, P[i], sizes[j], &row, e)) &&
                json_array_append_new(*rows, row))
                rc = lbs_err_set(e, -ENOMEM, "out of memory");
        }
    }
    if (rc) {
        json_decref(*rows);
        *rows = NULL;
    }
    return rc;
}

static int sim_coll(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_sim_platform *pl = NULL;
    struct lbs_run *run = NULL;
    json_t *rows = NULL;
    long *P = NULL;
    size_t np = 0;
    int rc, k;
    if (!a->platform) {
        cli_error("sim coll", "--platform is required (see --help)");
        return EXIT_BAD_INPUT;
    }
    k = lbs_sim_coll_from_name(a->coll ? a->coll : "allreduce");
    if (k < 0) {
        cli_error("--coll", "unknown collective '%s'", a->coll);
        return EXIT_BAD_INPUT;
    }
    if ((rc = load_platform(a->platform, &pl, &e)) ||
        (rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "8", &P, &np, &e))) {
        cli_error("sim coll", "%s", e.msg);
        goto out;
    }
    /* sizes: a list of sizes with K/M/G suffixes, or A..B (x4 steps) */
    double sizes[64];
    size_t ns = 0;
    {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", a->bytes ? a->bytes : "1K..1G");
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t && !rc;
             t = strtok_r(NULL, ",", &save)) {
            char *dots = strstr(t, "..");
            size_t lo, hi;
            if (dots) {
                *dots = '\0';
                if (lbs_parse_size(t, &lo) || lbs_parse_size(dots + 2, &hi) ||
                    hi < lo || lo == 0)
                    rc = -EINVAL;
                for (double x = (double)lo; !rc && x <= (double)hi && ns < 64;
                     x *= 4)
                    sizes[ns++] = x;
            } else if (lbs_parse_size(t, &lo) || ns >= 64) {
                rc = -EINVAL;
            } else {
                sizes[ns++] = (double)lo;
            }
        }
        if (rc || ns == 0) {
            cli_error("--bytes", "'%s' is not a size list (e.g. 1K..1G or "
                      "4M,64M; K M G, Ki Mi Gi)", a->bytes ? a->bytes : "");
            rc = -EINVAL;
            goto out;
        }
    }
    if ((rc = coll_rows(pl, k, P, np, sizes, ns, &rows, &e))) {
        cli_error("sim coll", "%s", e.msg);
        goto out;
    }
    if ((rc = cli_open_run(&a->com, "sim_coll", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        printf("# %s on %s: time (us) of every algorithm/protocol, the "
               "choice, and busbw\n# %-6s %12s  %-22s %10s %9s %9s\n",
               lbs_sim_coll_name(k), pl->name, "gpus", "bytes", "choice",
               "time(us)", "algbw", "busbw");
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        if (a->com.json) {
            print_json(row);
        } else {
            char ch[48];
            snprintf(ch, sizeof ch, "%s/%s",
                     json_string_value(json_object_get(row, "algo")),
                     json_string_value(json_object_get(row, "proto")));
            printf("  %-6.0f %12.0f  %-22s %10.2f %9.2f %9.2f\n",
                   NUM(row, "gpus"), NUM(row, "bytes"), ch,
                   NUM(row, "time_us"), NUM(row, "algbw_gbs"),
                   NUM(row, "busbw_gbs"));
        }
        if (run && (rc = lbs_run_append(run, "sim_coll", json_incref(row),
                                        &e))) {
            cli_error("sim coll", "%s", e.msg);
            break;
        }
    }
out:
    json_decref(rows);
    lbs_run_close(run);
    free(P);
    lbs_sim_platform_free(pl);
    return cli_exit_code(rc);
}

/* ---- anchors ---------------------------------------------------------- */

/* nccl-tests' figures of one collective on pl: busbw (GB/s) or time (us). */
static double coll_fig(const struct lbs_sim_platform *pl, int k, long P,
                       double n, int want_time)
{
    struct lbs_sim_net net;
    if (lbs_sim_net_init(&net, pl, P, NULL))
        return NAN;
    struct lbs_sim_cost c = lbs_sim_coll_cost(&net, k, n, LBS_SIM_TOPO_RING,
                                              1);
    if (want_time)
        return c.t * 1e6;
    double Pd = (double)P;
    /* nccl-tests: allgather's algbw counts the whole output (P n) */
    double algbw = (k == LBS_SIM_ALLGATHER ? Pd * n : n) / c.t / 1e9;
    double f = k == LBS_SIM_ALLREDUCE ? 2 * (Pd - 1) / Pd : (Pd - 1) / Pd;
    return algbw * f;
}

static int efficiency(const char *model, const char *platform,
                      const char *optim, long P, double *eff, char *src,
                      size_t srclen)
{
    struct lbs_err e;
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL;
    struct entry *ent = NULL;
    size_t n = 0;
    int rc = load_model(model, &m, &e);
    if (!rc) rc = load_platform(platform, &pl, &e);
    if (!rc) rc = load_entries(optim, m, 4, &ent, &n, &e);
    if (!rc) {
        struct lbs_sim_opts o = {.optim_bytes_per_elem = ent[0].bpe};
        struct lbs_sim_result b, r;
        long bp = pl->gpus_per_node;
        rc = lbs_sim_run(pl, m, plan_for(&ent[0], bp), bp, &o, &b, &e);
        if (!rc)
            rc = lbs_sim_run(pl, m, plan_for(&ent[0], P), P, &o, &r, &e);
        if (!rc)
            *eff = b.iter / r.iter;
    }
    snprintf(src, srclen, "%s", rc ? e.msg : ent[0].source);
    for (size_t k = 0; k < n; k++)
        entry_free(&ent[k]);
    free(ent);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return rc;
}

/* NVIDIA's BERT-Large phase-1 recipe on DGX-A100 (DeepLearningExamples
 * PyTorch BERT README, multi-node table): seq 128, 256 sequences per GPU
 * per micro-batch, AMP, global batch 65,536 held fixed (gradient
 * accumulation 32 on one node, 1 on 32 nodes), fp16 gradients allreduced
 * once after the accumulation (allreduce_post_accumulation_fp16: not
 * overlapped), LAMB.  Per-GPU sequences/s on 1 and 32 nodes. */
static int bert_phase1(double *thr1, double *thr32, struct lbs_err *e)
{
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL;
    struct entry *ent = NULL;
    size_t n = 0;
    int rc = load_model("bert-large", &m, e);
    if (!rc) rc = lbs_sim_model_set_batch(m, 256, e);
    if (!rc) rc = load_platform("dgx-a100", &pl, e);
    if (!rc) rc = load_entries("lamb", m, 2, &ent, &n, e);
    static const long nodes[2] = {1, 32};
    for (int i = 0; i < 2 && !rc; i++) {
        long P = 8 * nodes[i];
        struct lbs_sim_opts o = {.optim_bytes_per_elem = ent[0].bpe,
                                 .accum = 65536 / (256 * P), .no_overlap = 1};
        struct lbs_sim_result r;
        rc = lbs_sim_run(pl, m, ent[0].plans[0], P, &o, &r, e);
        if (!rc)
            *(i ? thr32 : thr1) = (double)o.accum * 256 / r.iter;
    }
    for (size_t k = 0; k < n; k++)
        entry_free(&ent[k]);
    free(ent);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return rc;
}

/* A published figure beside the prediction.  band > 0: the prediction must
 * lie within published x (1 +- band) (rel), published +- band (abs), or a
 * factor of band (fac); band 0: shown, not gated. */
struct anchor {
    const char *what, *source;
    double published, predicted;
    const char *unit;
    char kind;              /* 'r' relative, 'a' absolute, 'f' factor */
    double band;
    const char *note;
};

/* Where `lbscale plot` marks an anchor: on the scaling figure of this
 * model and platform, at gpus, next to this optimizer's line. */
struct anchor_place {
    const char *model, *platform, *optim;
    long gpus;
    const char *setup;   /* how it differs from the figure's lines */
};

static int in_band(const struct anchor *a)
{
    double p = a->published, x = a->predicted;
    if (!(a->band > 0))
        return 1;
    if (!isfinite(x))
        return 0;
    return a->kind == 'a' ? fabs(x - p) <= a->band
         : a->kind == 'f' ? x <= p * a->band && x >= p / a->band
                          : fabs(x / p - 1) <= a->band;
}

static int sim_anchors(const struct simargs *a, int argc, char **argv,
                       int check)
{
    struct lbs_err e;
    struct lbs_sim_platform *a100 = NULL, *h100 = NULL;
    struct lbs_run *run = NULL;
    int rc;
    if ((rc = load_platform("dgx-a100", &a100, &e)) ||
        (rc = load_platform("dgx-h100", &h100, &e))) {
        cli_error("sim anchors", "%s", e.msg);
        goto out;
    }
    struct anchor an[20];
    struct anchor_place place[20] = {{0}};
    int na = 0;
    const double GiB = 1073741824.0;
    const char *ndmv4 = "microsoft/mscclpp docs/performance-ndmv4.md "
                        "(Azure NDmv4, 8 x A100-80GB, 8 x HDR, NCCL 2.17.1)";
    const char *ndv5 = "Azure/msccl docs/performance-nd-h100-v5.md (8 x "
                       "H100, NCCL 2.18.3)";
    an[na++] = (struct anchor){"8xA100 NVLink allreduce busbw, 1 GiB",
        "S. Jeaugey, NVIDIA/nccl-tests#149 (~230 GB/s)", 230,
        coll_fig(a100, LBS_SIM_ALLREDUCE, 8, GiB, 0), "GB/s", 'r', 0.05,
        "NCCL's model: 12 ch x 20 GB/s = 240 before latency"};
    an[na++] = (struct anchor){"8xH100 NVLink allreduce busbw (ring), 1 GiB",
        "S. Jeaugey, NVIDIA/nccl-tests#212 (~370 GB/s ring)", 370,
        coll_fig(h100, LBS_SIM_ALLREDUCE, 8, GiB, 0), "GB/s", 'r', 0.05,
        "graph 12 x 30 GB/s derived from NCCL's search (not logged)"};
    an[na++] = (struct anchor){"2 x DGX-A100 allreduce busbw / HDR NIC, 1 GiB",
        "AddyLaddy, NVIDIA/nccl#812 (192 GB/s over 8 NICs)", 24,
        coll_fig(a100, LBS_SIM_ALLREDUCE, 16, GiB, 0) / a100->nics_per_node,
        "GB/s", 'r', 0.05, "8 channels x 24 GB/s"};
    an[na++] = (struct anchor){"2 x DGX-H100 allreduce busbw / NDR NIC, 1 GiB",
        "AddyLaddy, NVIDIA/nccl-tests#267 (48-49 GB/s per CX-7)", 48,
        coll_fig(h100, LBS_SIM_ALLREDUCE, 16, GiB, 0) / h100->nics_per_node,
        "GB/s", 'r', 0.05, "8 channels x 48 GB/s"};
    an[na++] = (struct anchor){"8xA100 allreduce time, 1 KB", ndmv4, 16.96,
        coll_fig(a100, LBS_SIM_ALLREDUCE, 8, 1024, 1), "us", 'f', 2, ""};
    an[na++] = (struct anchor){"2 x 8 A100 (HDR) allreduce time, 1 KB", ndmv4,
        35.85, coll_fig(a100, LBS_SIM_ALLREDUCE, 16, 1024, 1), "us", 'f', 2,
        ""};
    an[na++] = (struct anchor){"8xH100 allreduce time, 1 KB", ndv5, 13.12,
        coll_fig(h100, LBS_SIM_ALLREDUCE, 8, 1024, 1), "us", 'f', 2, ""};
    an[na++] = (struct anchor){"8xH100 allreduce time, 1 MiB", ndv5, 31.94,
        coll_fig(h100, LBS_SIM_ALLREDUCE, 8, 1048576, 1), "us", 'f', 2, ""};
    an[na++] = (struct anchor){"8xA100 allgather busbw, 1 GiB", ndmv4, 253.59,
        coll_fig(a100, LBS_SIM_ALLGATHER, 8, GiB / 8, 0), "GB/s", 'r', 0.10,
        "no reduction: above NCCL's 240 model"};
    an[na++] = (struct anchor){"2 x 8 A100 alltoall busbw, 1 GiB", ndmv4,
        37.80, coll_fig(a100, LBS_SIM_ALLTOALL, 16, GiB, 0), "GB/s", 'r',
        0.25, "p2p model (NCCL's tuner has none): one NIC per GPU"};
    double thr1 = NAN, thr32 = NAN;
    int brc = bert_phase1(&thr1, &thr32, &e);
    if (brc) {
        cli_error("sim anchors", "%s", e.msg);
        rc = brc;
        goto out;
    }
    an[na++] = (struct anchor){"BERT-Large ph.1 seq/s per A100, 1 node (8 GPUs)",
        "NVIDIA DeepLearningExamples BERT README: 4553/8", 569.1, thr1,
        "seq/s", 'r', 0.10, "efficiency calibrated on the 1-GPU row (580)"};
    place[na] = (struct anchor_place){"bert-large", "dgx-a100", "lamb", 256,
                                      "strong scaling, B = 65,536"};
    an[na++] = (struct anchor){"BERT-Large ph.1 strong scaling, 32 DGX-A100",
        "NVIDIA DeepLearningExamples BERT README: 30.37x on 32 nodes", 0.949,
        thr32 / thr1, "", 'a', 0.03,
        "fixed global batch 65,536; fp16 grads after accumulation"};
    char src[LBS_SIM_FILE_MAX + 64];
    double eff = NAN;
    /* --optim FILE: the SLAMB trace to use (default: the preset lookup) */
    int erc = efficiency("bert-xl", "dgx-a100", a->optim ? a->optim
                         : "slamb", 1024, &eff, src, sizeof src);
    if (erc && a->optim) {   /* a trace the user named must work */
        cli_error("sim anchors", "%s", src);
        rc = erc;
        goto out;
    }
    int have = !erc;
    place[na] = (struct anchor_place){"bert-xl", "dgx-a100", "slamb", 1024,
                                      ""};
    an[na++] = (struct anchor){"SLAMB scaling efficiency, BERT-XL, 1,024 A100",
        "Xu et al., ICML 2023 (abstract; network not stated)", 0.90,
        have ? eff : NAN, "", 'a', 0, have ? "on dgx-a100 (8 x HDR per "
        "node); sim netsweep varies the network" : "no SLAMB trace for "
        "bert-xl (--optim FILE, or record one into sim/data/traces/)"};
    double effl = NAN;
    char srcl[LBS_SIM_FILE_MAX + 64];
    int havel = !efficiency("bert-xl", "dgx-a100", "lamb", 1024, &effl, srcl,
                            sizeof srcl);
    an[na++] = (struct anchor){"LAMB scaling efficiency, BERT-XL, 1,024 A100",
        "(the paper's baseline; no number quoted here)", NAN,
        havel ? effl : NAN, "", 'a', 0, "data-parallel contract, same "
        "platform"};
    if ((rc = cli_open_run(&a->com, "sim_anchors", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        printf("# published anchors beside lbscale's predictions (never "
               "tuned to them; 'band' gates `sim anchors --check`)\n"
               "# %-48s %9s %9s %7s %-12s %s\n", "anchor", "published",
               "lbscale", "ratio", "band", "");
    int out_of_band = 0;
    for (int i = 0; i < na; i++) {
        double ratio = an[i].predicted / an[i].published;
        int ok = in_band(&an[i]);
        char band[32] = "shown only";
        if (an[i].band > 0)
            snprintf(band, sizeof band, an[i].kind == 'a' ? "+-%g" :
                     an[i].kind == 'f' ? "x/%g" : "+-%g%%",
                     an[i].kind == 'r' ? 100 * an[i].band : an[i].band);
        out_of_band += !ok;
        json_t *row = json_pack("{s:s,s:s,s:o,s:o,s:o,s:s,s:s,s:s,s:b}",
            "anchor", an[i].what, "source", an[i].source, "published",
            isfinite(an[i].published) ? json_real(an[i].published)
                                      : json_null(),
            "lbscale", isfinite(an[i].predicted) ? json_real(an[i].predicted)
                                                 : json_null(),
            "ratio", isfinite(ratio) ? json_real(ratio) : json_null(),
            "unit", an[i].unit, "note", an[i].note, "band", band,
            "in_band", ok);
        if (row && place[i].model) {
            json_object_set_new(row, "model", json_string(place[i].model));
            json_object_set_new(row, "platform",
                                json_string(place[i].platform));
            json_object_set_new(row, "optim", json_string(place[i].optim));
            json_object_set_new(row, "gpus", json_integer(place[i].gpus));
            json_object_set_new(row, "setup", json_string(place[i].setup));
        }
        if (a->com.json)
            print_json(row);
        else
            printf("  %-48s %9.4g %9.4g %7.3f %-12s %s%s %s\n", an[i].what,
                   an[i].published, an[i].predicted, ratio, band,
                   ok ? "" : "OUT OF BAND ", an[i].unit, an[i].note);
        if (run && (rc = lbs_run_append(run, "sim_anchors", row, &e))) {
            cli_error("sim anchors", "%s", e.msg);
            goto out;
        }
        if (!run)
            json_decref(row);
    }
    if (!a->com.json)
        printf("# sources of the published figures: lbscale sim anchors "
               "--json (field source)\n");
    if (check && out_of_band) {
        cli_error("sim anchors", "%d anchor%s out of band", out_of_band,
                  out_of_band == 1 ? "" : "s");
        rc = -EIO;
    }
out:
    lbs_run_close(run);
    lbs_sim_platform_free(a100);
    lbs_sim_platform_free(h100);
    return cli_exit_code(rc);
}

/* ---- netsweep: efficiency against the network a node is sold with ------ */

#define NETSWEEP_HELP \
"usage: lbscale sim netsweep --model M --platform P --optim LIST\n" \
"                            [--gpus 1024] [--node-gbps 25..3200] [--json]\n" \
"\n" \
"Scaling efficiency E = T(one node)/T(P) at one GPU count as the network\n" \
"bandwidth per node varies: every NIC of the platform runs at node_gbps /\n" \
"nics; NCCL's multi-node channels and point-to-point rate scale with it\n" \
"(the preset's ratio to the line rate kept, e.g. 24 of 25 GB/s on HDR);\n" \
"latencies, NVLink and the fat-tree stay.  Ends with, per optimizer, the\n" \
"lowest bandwidth at which E reaches 0.90 (log-linear interpolation).\n" \
"Reference points: 100 Gb/s (one 100 GbE NIC), 200 (one HDR NIC or two\n" \
"100 GbE), 400 (one NDR NIC), 1,600 (DGX A100: 8 x HDR), 3,200 (DGX\n" \
"H100: 8 x NDR).  Also takes sweep's --batch-per-gpu, --accum,\n" \
"--no-overlap, --no-slowdown, --grad-dtype, --bucket-mb.\n" \
"  --node-gbps LIST  Gb/s per node: 100,400 or A..B (powers of two from A)\n"

/* pl with its NICs at node_gbps per node; NCCL's multi-node graph and
 * point-to-point rate move in proportion to the line rate. */
static void set_node_gbps(struct lbs_sim_platform *pl,
                          const struct lbs_sim_platform *ref, double gbps)
{
    double nic = gbps * 1e9 / 8 / ref->nics_per_node;
    double f = nic / ref->nic_bw;
    pl->nic_bw = nic;
    pl->nccl.inter.bw = ref->nccl.inter.bw * f;
    pl->nccl.p2p_bw = ref->nccl.p2p_bw * f;
}

static int sim_netsweep(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL, work;
    struct entry *ent = NULL;
    struct lbs_run *run = NULL;
    json_t *rows = json_array();
    size_t nent = 0, nb = 0, np = 0;
    long *B = NULL, *Pl = NULL;
    int rc;
    if ((!a->model && !a->compute) || !a->platform || !a->optim) {
        cli_error("sim netsweep", "--model (or --compute), --platform and "
                  "--optim are required (see --help)");
        json_decref(rows);
        return EXIT_BAD_INPUT;
    }
    if ((rc = load_sim_model(a, &m, &e)) ||
        (rc = load_platform(a->platform, &pl, &e)) ||
        (rc = load_entries(a->optim, m, a->grad_bytes, &ent, &nent, &e)) ||
        (rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "1024", &Pl, &np,
                                 &e)) ||
        (rc = lbs_sim_parse_gpus(a->node_gbps ? a->node_gbps : "25..3200",
                                 &B, &nb, &e))) {
        /* the list parser speaks of --gpus; the bad list may be this one */
        int bw = !strncmp(e.msg, "--gpus", 6) && Pl && !B;
        cli_error("sim netsweep", "%s%s", bw ? "--node-gbps" : "",
                  bw ? e.msg + 6 : e.msg);
        goto out;
    }
    if (np != 1) {
        cli_error("sim netsweep", "--gpus: one GPU count");
        rc = -EINVAL;
        goto out;
    }
    long P = Pl[0], base_p = pl->gpus_per_node < pl->max_gpus
                                 ? pl->gpus_per_node : pl->max_gpus;
    struct lbs_sim_opts o = sim_opts(a);
    work = *pl;
    /* every point before anything is printed or written */
    for (size_t k = 0; k < nent && !rc; k++) {
        struct lbs_sim_result base, r;
        o.optim_bytes_per_elem = ent[k].bpe;
        rc = lbs_sim_run(pl, m, plan_for(&ent[k], base_p), base_p, &o, &base,
                         &e);
        for (size_t i = 0; i < nb && !rc; i++) {
            set_node_gbps(&work, pl, (double)B[i]);
            if ((rc = lbs_sim_run(&work, m, plan_for(&ent[k], P), P, &o, &r,
                                  &e)))
                break;
            json_t *row = json_pack("{s:s,s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:f,"
                                    "s:f,s:s}", "optim", ent[k].name, "model",
                m->name, "platform", pl->name, "gpus", (json_int_t)P,
                "node_gbps", (json_int_t)B[i], "iter_ms", r.iter * 1e3,
                "exposed_comm_ms", r.exposed * 1e3, "compute_ms",
                r.compute * 1e3, "scaling_efficiency", base.iter / r.iter,
                "bytes_per_gpu", r.bytes, "plan", ent[k].source);
            if (!row || json_array_append_new(rows, row))
                rc = lbs_err_set(&e, -ENOMEM, "out of memory");
        }
    }
    if (rc) {
        cli_error("sim netsweep", "%s", e.msg);
        goto out;
    }
    if ((rc = cli_open_run(&a->com, "sim_netsweep", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        printf("# %s on %s at %ld GPUs: scaling efficiency (T(%ld GPUs) / "
               "T(%ld)) against the network bandwidth per node\n"
               "# %-12s %10s %9s %9s %6s\n", m->name, pl->name, P, base_p, P,
               "optim", "Gb/s/node", "iter(ms)", "exposed", "eff");
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        if (a->com.json)
            print_json(row);
        else
            printf("  %-12s %10.0f %9.2f %9.2f %6.3f\n",
                   json_string_value(json_object_get(row, "optim")),
                   NUM(row, "node_gbps"), NUM(row, "iter_ms"),
                   NUM(row, "exposed_comm_ms"), NUM(row, "scaling_efficiency"));
        if (run && (rc = lbs_run_append(run, "sim_netsweep", json_incref(row),
                                        &e))) {
            cli_error("sim netsweep", "%s", e.msg);
            goto out;
        }
    }
    /* the bandwidth where E first reaches 0.90, per optimizer */
    for (size_t k = 0; k < nent && !a->com.json; k++) {
        double prev_b = NAN, prev_e = NAN, at = NAN;
        json_array_foreach(rows, i, row) {
            if (strcmp(json_string_value(json_object_get(row, "optim")),
                       ent[k].name))
                continue;
            double b = NUM(row, "node_gbps"), ef = NUM(row,
                                                       "scaling_efficiency");
            if (ef >= 0.90 && isnan(at))
                at = isnan(prev_b) ? b : exp(log(prev_b) + (0.90 - prev_e) /
                     (ef - prev_e) * (log(b) - log(prev_b)));
            prev_b = b;
            prev_e = ef;
        }
        if (isnan(at))
            printf("# %-12s E < 0.90 over the whole range\n", ent[k].name);
        else
            printf("# %-12s E reaches 0.90 at %.0f Gb/s per node\n",
                   ent[k].name, at);
    }
out:
    json_decref(rows);
    lbs_run_close(run);
    for (size_t k = 0; k < nent; k++)
        entry_free(&ent[k]);
    free(ent);
    free(B);
    free(Pl);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return cli_exit_code(rc);
}

/* ---- speed ------------------------------------------------------------- */

static int sim_speed(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL;
    struct entry *ent = NULL;
    struct lbs_run *run = NULL;
    size_t nent = 0, np = 0;
    long *P = NULL;
    int rc;
    const char *model = a->model ? a->model : "bert-large";
    const char *plat = a->platform ? a->platform : "dgx-a100";
    /* every optimizer lbscale implements: data-parallel ones by their
     * contract, the others by their recorded traces */
    const char *optims = a->optim ? a->optim
        : "sgd,lars,lamb,adamw,slamb,onebit_lamb,jointspar,jointspar_lars,"
          "dmsgd,decentlam";
    if ((rc = load_model(model, &m, &e)) ||
        (rc = load_platform(plat, &pl, &e)) ||
        (rc = load_entries(optims, m, 4, &ent, &nent, &e))) {
        cli_error("sim speed", "%s", e.msg);
        goto out;
    }
    lbs_sim_parse_gpus("8..16384", &P, &np, NULL);
    /* every point the timings below simulate, once, before anything is
     * printed or written */
    for (size_t k = 0; k < nent && !rc; k++) {
        struct lbs_sim_opts q = {.optim_bytes_per_elem = ent[k].bpe};
        struct lbs_sim_result x;
        rc = lbs_sim_run(pl, m, plan_for(&ent[k], 1024), 1024, &q, &x, &e);
        for (size_t i = 0; i < np && !rc; i++)
            rc = lbs_sim_run(pl, m, plan_for(&ent[k], P[i]), P[i], &q, &x,
                             &e);
    }
    if (rc) {
        cli_error("sim speed", "%s", e.msg);
        goto out;
    }
    if ((rc = cli_open_run(&a->com, "sim_speed", argc, argv, &run)))
        goto out;
    /* 1. one step at 1,024 GPUs (lamb's plan or the first entry's) */
    size_t li = 0;
    for (size_t k = 0; k < nent; k++)
        if (!strcmp(ent[k].name, "lamb"))
            li = k;
    struct lbs_sim_opts o = {.optim_bytes_per_elem = ent[li].bpe};
    struct lbs_sim_result r;
    double ts[51];
    for (int i = 0; i < 51 && !rc; i++) {
        double t0 = cli_now();
        rc = lbs_sim_run(pl, m, plan_for(&ent[li], 1024), 1024, &o, &r, &e);
        ts[i] = cli_now() - t0;
    }
    if (rc) {
        cli_error("sim speed", "%s", e.msg);
        goto out;
    }
    struct cli_stats st = cli_stats(ts, 51);
    /* 2. the whole sweep, loading included, 8..16384 = 12 scales */
    double sw[5];
    for (int rep = 0; rep < 5 && !rc; rep++) {
        double t0 = cli_now();
        struct lbs_sim_model *m2 = NULL;
        struct lbs_sim_platform *p2 = NULL;
        struct entry *e2 = NULL;
        size_t n2 = 0;
        rc = load_model(model, &m2, &e);
        if (!rc) rc = load_platform(plat, &p2, &e);
        if (!rc) rc = load_entries(optims, m2, 4, &e2, &n2, &e);
        for (size_t k = 0; k < n2 && !rc; k++) {
            struct lbs_sim_result res[64], b;
            struct lbs_sim_opts q = {.optim_bytes_per_elem = e2[k].bpe};
            rc = lbs_sim_run(p2, m2, plan_for(&e2[k], 8), 8, &q, &b, &e);
            for (size_t i = 0; i < np && !rc; i++)
                rc = lbs_sim_run(p2, m2, plan_for(&e2[k], P[i]), P[i], &q,
                                 &res[i], &e);
        }
        sw[rep] = cli_now() - t0;
        for (size_t k = 0; k < n2; k++)
            entry_free(&e2[k]);
        free(e2);
        lbs_sim_model_free(m2);
        lbs_sim_platform_free(p2);
    }
    if (rc) {
        cli_error("sim speed", "%s", e.msg);
        goto out;
    }
    struct cli_stats sws = cli_stats(sw, 5);
    int ok_step = st.median <= 1e-3, ok_sweep = sws.median <= 2.0;
    json_t *row = json_pack("{s:s,s:s,s:s,s:i,s:f,s:f,s:b,s:i,s:i,s:f,s:f,"
                            "s:b}", "bench", "sim_speed", "model", m->name,
                            "platform", pl->name, "step_gpus", 1024,
                            "step_ms_median", st.median * 1e3, "step_ms_max",
                            st.max * 1e3, "step_ok_1ms", ok_step,
                            "sweep_optims", (int)nent, "sweep_scales",
                            (int)np, "sweep_s_median", sws.median,
                            "sweep_s_max", sws.max, "sweep_ok_2s", ok_sweep);
    /* 3. growth with P: one cost evaluation per collective and algorithm */
    json_t *growth = json_array();
    if (!a->com.json)
        printf("# simulator speed (%s, %s)\n"
               "  one %s step at 1,024 GPUs: %.3f ms median (max %.3f) %s\n"
               "  sweep %zu optimizers x %zu scales (8..16384, loading "
               "included): %.3f s median (max %.3f) %s\n"
               "# cost of one collective vs P (ns per call; closed forms, "
               "O(log P) at most)\n  %6s %10s %10s %10s %10s %10s\n",
               m->name, pl->name, ent[li].name, st.median * 1e3, st.max * 1e3,
               ok_step ? "(<= 1 ms: ok)" : "(> 1 ms: SLOW)", nent, np,
               sws.median, sws.max, ok_sweep ? "(<= 2 s: ok)" : "(> 2 s: SLOW)",
               "gpus", "net_init", "allreduce", "allgather", "alltoall",
               "neighbor");
    /* best of 7 rounds per cell: the machine is shared, the minimum is
     * the cost of the code */
    for (size_t i = 0; i < np; i++) {
        struct lbs_sim_net net;
        const int reps = 300;
        double tinit = INFINITY, tc[4] = {INFINITY, INFINITY, INFINITY,
                                          INFINITY};
        static const enum lbs_sim_coll cs[4] = {LBS_SIM_ALLREDUCE,
            LBS_SIM_ALLGATHER, LBS_SIM_ALLTOALL, LBS_SIM_NEIGHBOR};
        volatile double sink = 0;
        for (int round = 0; round < 7; round++) {
            double t0 = cli_now();
            for (int j = 0; j < 5; j++)
                lbs_sim_net_init(&net, pl, P[i], NULL);
            tinit = fmin(tinit, (cli_now() - t0) / 5);
            for (int c = 0; c < 4; c++) {
                t0 = cli_now();
                for (int j = 0; j < reps; j++)
                    sink += lbs_sim_coll_cost(&net, cs[c], 1e6 + j,
                                              LBS_SIM_TOPO_EXP, j).t;
                tc[c] = fmin(tc[c], (cli_now() - t0) / reps);
            }
        }
        (void)sink;
        json_array_append_new(growth, json_pack("{s:I,s:f,s:f,s:f,s:f,s:f}",
            "gpus", (json_int_t)P[i], "net_init_ns", tinit * 1e9,
            "allreduce_ns", tc[0] * 1e9, "allgather_ns", tc[1] * 1e9,
            "alltoall_ns", tc[2] * 1e9, "neighbor_ns", tc[3] * 1e9));
        if (!a->com.json)
            printf("  %6ld %10.0f %10.0f %10.0f %10.0f %10.0f\n", P[i],
                   tinit * 1e9, tc[0] * 1e9, tc[1] * 1e9, tc[2] * 1e9,
                   tc[3] * 1e9);
    }
    json_object_set_new(row, "cost_vs_gpus", growth);
    if (a->com.json)
        print_json(row);
    if (run && (rc = lbs_run_append(run, "sim_speed", row, &e)))
        cli_error("sim speed", "%s", e.msg);
    else if (!run)
        json_decref(row);
out:
    free(P);
    lbs_run_close(run);
    for (size_t k = 0; k < nent; k++)
        entry_free(&ent[k]);
    free(ent);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return cli_exit_code(rc);
}

/* ---- calibrate --------------------------------------------------------- */

#define CALIB_HELP \
"usage: lbscale sim calibrate COLL.jsonl... [--out FILE] [--name local]\n" \
"                             [--bytes MIN..MAX] [--peak-tflops X]\n" \
"                             [--mem-bw-gbs X]\n" \
"\n" \
"Fits the alpha-beta constants of this machine from `lbscale coll` results\n" \
"and writes a platform file (default <data>/platforms/local.json, written\n" \
"atomically), usable as --platform local.  COLL.jsonl: regular files of at\n" \
"most 256 MiB.  Rows used: one JSON object per line with\n" \
"  coll     allreduce | allgather | allgatherv | alltoall | bcast | barrier\n" \
"  ranks    process count (>= 2; rows with 1 rank are skipped)\n" \
"  bytes    payload per rank, trace-v1 convention\n" \
"  time_us  measured time of one call (median); time_us_median also read\n" \
"Rows of other collectives (neighbor, reduce_scatter, compressed\n" \
"patterns) are skipped.\n" \
"optional: nodes (rows with 1 < nodes < ranks are skipped: the fit has\n" \
"one link per rank, which holds on one node or with one rank per node),\n" \
"wrong (rows with wrong > 0 are skipped), bench (rows whose bench is not\n" \
"\"coll\" are skipped).\n" \
"Model (ring forms; steps and volume per collective as in sim/README.md):\n" \
"  t = base + steps (hop + [step message > eager_max] rndv)\n" \
"      + volume / bw(coll) + [allreduce] (P-1)/P bytes / reduce_bw\n" \
"with one bandwidth per collective (written as intra_bw_gbs = the\n" \
"fastest and coll_bw_factor for the rest); eager_max (MPI's eager\n" \
"limit) and reduce_bw are fitted when the data supports them.  Prints two held-out errors (median and worst relative\n" \
"error of predictions for samples left out of the fit): every other\n" \
"message size, and each rank count predicted from the other rank counts.\n" \
"  --bytes MIN..MAX only rows whose bytes lie in the range (one regime:\n" \
"                   e.g. messages that stay in cache); either side may be\n" \
"                   left empty\n" \
"  --peak-tflops X  compute peak per rank for the platform (default 1,\n" \
"                   marked as assumed)\n" \
"  --mem-bw-gbs X   memory bandwidth (default: STREAM triad measured now)\n"

static int read_samples(const char *path, struct lbs_sim_sample **s,
                        size_t *n, size_t *cap, size_t *skipped,
                        struct lbs_err *err)
{
    char *text;
    size_t len;
    long no = 0;
    int rc = lbs_read_file(path, LBS_SIM_SAMPLES_MAX_BYTES, &text, &len, err);
    if (rc)
        return rc;
    for (size_t pos = 0; !rc && pos < len;) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + 1;
        no++;
        if (strspn(line, " \t\r") >= ll)
            continue;
        json_error_t je;
        json_t *o = json_loadb(line, ll, 0, &je);
        if (!o || !json_is_object(o)) {
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: not a JSON object", path,
                             no);
            json_decref(o);
            break;
        }
        const char *bench = json_string_value(json_object_get(o, "bench"));
        json_t *wr = json_object_get(o, "wrong"), *nd = json_object_get(o,
                                                                    "nodes");
        if ((bench && strcmp(bench, "coll")) ||
            (wr && json_is_number(wr) && json_number_value(wr) > 0) ||
            (nd && json_is_number(nd) && json_number_value(nd) > 1 &&
             json_number_value(nd) !=
                 json_number_value(json_object_get(o, "ranks")))) {
            (*skipped)++;
            json_decref(o);
            continue;
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
        int k = coll ? lbs_sim_coll_from_name(coll) : -1;
        /* patterns the fit has no form for (neighbor, reduce_scatter and
         * the compressed patterns `lbscale coll` also measures): skipped */
        int unfit = !bad && (k < 0 || k == LBS_SIM_NEIGHBOR);
        if (!bad && json_integer_value(rk) < 1)
            bad = "ranks";
        if (!bad && !(json_number_value(by) >= 0))
            bad = "bytes";
        if (!bad && !(json_number_value(tu) > 0))
            bad = "time_us";
        if (bad) {
            rc = lbs_err_set(err, -EINVAL, "%s:%ld: field '%s' missing or "
                             "invalid", path, no, bad);
        } else if (unfit || json_integer_value(rk) < 2) {
            (*skipped)++;
        } else {
            if (*n == *cap) {
                *cap = *cap ? 2 * *cap : 256;
                void *q = realloc(*s, *cap * sizeof **s);
                if (!q)
                    rc = lbs_err_set(err, -ENOMEM, "out of memory");
                else
                    *s = q;
            }
            if (!rc)
                (*s)[(*n)++] = (struct lbs_sim_sample){
                    k, (long)json_integer_value(rk), json_number_value(by),
                    json_number_value(tu) * 1e-6};
        }
        json_decref(o);
    }
    free(text);
    return rc;
}

static json_t *heldout_json(const struct lbs_sim_heldout *h)
{
    return json_pack("{s:I,s:o,s:o}", "samples", (json_int_t)h->n,
                     "median_rel_err", h->med >= 0 ? json_real(h->med)
                                                   : json_null(),
                     "worst_rel_err", h->max >= 0 ? json_real(h->max)
                                                  : json_null());
}

static void print_heldout(const char *what, const struct lbs_sim_heldout *h,
                          const char *why_na)
{
    if (h->med >= 0)
        printf("%s (%zu samples): median %.1f%%, worst %.1f%%\n", what,
               h->n, 100 * h->med, 100 * h->max);
    else
        printf("%s: n/a (%s)\n", what, why_na);
}

/* One protocol of the calibrated platform (latencies in s). */
static json_t *calib_proto(double base, double hop, double max_bytes)
{
    json_t *o = json_pack("{s:f,s:f,s:f,s:f}", "base_lat_us", base * 1e6,
                          "intra_hop_us", hop * 1e6, "inter_hop_us",
                          hop * 1e6, "bw_factor", 1.0);
    if (o && max_bytes > 0)
        json_object_set_new(o, "max_bytes", json_real(max_bytes));
    return o;
}

/* The platform document `sim calibrate` writes: one flat node of maxr
 * ranks whose algorithms are the ring forms the fit used.  With an eager
 * limit, LL stands for MPI's eager protocol (up to eager_max bytes per
 * step) and Simple for rendezvous (hop + rndv). */
static json_t *calib_platform(const struct lbs_sim_fit *fit, json_t *files,
                              size_t skipped, const char *name, long maxr,
                              double peak, double mem, int mem_measured)
{
    json_t *cal = json_pack(
        "{s:o,s:I,s:I,s:o,s:o,s:s,s:f,s:f,s:f,s:f,s:f,s:f}", "from", files,
        "samples", (json_int_t)fit->used, "skipped", (json_int_t)skipped,
        "held_out_sizes", heldout_json(&fit->sizes),
        "held_out_ranks", heldout_json(&fit->ranks),
        "model", "t = base + steps(P) (hop + [step > eager_max] rndv) + "
        "volume(P, bytes) / bw(coll) + [allreduce] (P-1)/P bytes / reduce_bw "
        "(ring forms), weighted least squares on relative error",
        "base_lat_us", fit->base_lat * 1e6, "hop_lat_us", fit->hop_lat * 1e6,
        "rndv_lat_us", fit->rndv_lat * 1e6, "eager_max_bytes",
        fit->eager_max, "bw_gbs", fit->bw / 1e9, "reduce_gbs",
        fit->reduce_bw / 1e9);
    json_t *protos = json_object();
    if (fit->eager_max > 0) {
        json_object_set_new(protos, "LL", calib_proto(fit->base_lat,
                                                      fit->hop_lat,
                                                      fit->eager_max));
        json_object_set_new(protos, "Simple",
                            calib_proto(fit->base_lat,
                                        fit->hop_lat + fit->rndv_lat, 0));
    } else {
        json_object_set_new(protos, "Simple", calib_proto(fit->base_lat,
                                                          fit->hop_lat, 0));
    }
    /* each fitted collective's bandwidth as a factor on the fastest's */
    json_t *cbw = json_object();
    for (int k = 0; k < LBS_SIM_NCOLL; k++)
        if (k != LBS_SIM_ALLGATHERV && fit->coll_bw[k] > 0)
            json_object_set_new(cbw, lbs_sim_coll_name(k),
                                json_real(fit->coll_bw[k] / fit->bw));
    return json_pack(
        "{s:s,s:i,s:s,s:s,s:{s:s,s:f,s:f,s:s},s:{s:I,s:s,s:f,s:i,s:f,s:f},"
        "s:{s:s,s:f},s:I,s:o,s:[s,s,s,s,s,s],s:o,s:o}",
        "format", "lbscale-platform", "version", 1, "name", name,
        "description", "this machine, fitted by lbscale sim calibrate "
        "(one node; ring forms)",
        "gpu", "name", "local rank", "peak_tflops", peak > 0 ? peak : 1.0,
        "mem_bw_gbs", mem, "note", peak > 0 ? "given"
            : mem_measured ? "peak assumed (1 TFLOP/s); memory "
              "bandwidth = STREAM triad" : "peak assumed (1 TFLOP/s)",
        "node", "gpus", (json_int_t)maxr, "intra", "measured",
        "intra_bw_gbs", fit->bw / 1e9, "nics", 1, "nic_gbps",
        fit->bw * 8 / 1e9, "reduce_gbs", fit->reduce_bw / 1e9,
        "fabric", "kind", "flat", "lat_us", 0.0,
        "max_gpus", (json_int_t)maxr, "protocols", protos,
        "algorithms", "ring", "allgather-ring", "alltoall-pairwise",
        "bcast-pipeline", "barrier-dissemination", "neighbor-direct",
        "coll_bw_factor", cbw, "calibration", cal);
}

/* "LO..HI" (sizes with suffixes; either side may be empty) */
static int parse_range(const char *opt, const char *v, size_t *lo,
                       size_t *hi)
{
    const char *dots = v ? strstr(v, "..") : NULL;
    char a[64];
    if (!dots || (size_t)(dots - v) >= sizeof a) {
        cli_error(opt, "'%s': give MIN..MAX, e.g. 256..2Mi or 8Mi..",
                  v ? v : "");
        return -EINVAL;
    }
    memcpy(a, v, (size_t)(dots - v));
    a[dots - v] = '\0';
    if ((a[0] && lbs_parse_size(a, lo)) ||
        (dots[2] && lbs_parse_size(dots + 2, hi)) || *lo > *hi) {
        cli_error(opt, "'%s': give MIN..MAX sizes, MIN <= MAX (e.g. "
                  "256..2Mi)", v);
        return -EINVAL;
    }
    return 0;
}

static int sim_calibrate(int argc, char **argv)
{
    struct lbs_err e;
    const char *out = NULL, *name = "local";
    double peak = 0, mem = 0;
    size_t blo = 0, bhi = SIZE_MAX;
    struct lbs_sim_sample *s = NULL;
    size_t n = 0, cap = 0, skipped = 0, nfiles = 0;
    int rc = 0;
    json_t *files = json_array();
    for (int i = 1; i < argc && !rc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            fputs(CALIB_HELP, stdout);
            json_decref(files);
            free(s);
            return 0;
        } else if (!strcmp(o, "--out") || !strcmp(o, "--name")) {
            if (need(o, v)) {
                rc = -EINVAL;
                break;
            }
            *(!strcmp(o, "--out") ? &out : &name) = v;
            i++;
        } else if (!strcmp(o, "--bytes")) {
            rc = parse_range(o, v, &blo, &bhi);
            i++;
        } else if (!strcmp(o, "--peak-tflops")) {
            rc = cli_double(o, v, 1e-6, 1e6, &peak);
            i++;
        } else if (!strcmp(o, "--mem-bw-gbs")) {
            rc = cli_double(o, v, 1e-6, 1e6, &mem);
            i++;
        } else if (o[0] == '-') {
            cli_error("sim calibrate", "unknown option '%s' (see --help)", o);
            rc = -EINVAL;
        } else {
            nfiles++;
            json_array_append_new(files, json_string(o));
            if ((rc = read_samples(o, &s, &n, &cap, &skipped, &e)))
                cli_error("sim calibrate", "%s", e.msg);
        }
    }
    if (!rc && !nfiles) {
        cli_error("sim calibrate", "give one or more coll JSONL files (see "
                  "--help)");
        rc = -EINVAL;
    }
    for (const char *c = name; !rc && *c; c++)
        if (!(*c == '-' || *c == '_' || (*c >= '0' && *c <= '9') ||
              (*c >= 'a' && *c <= 'z'))) {
            cli_error("--name", "'%s': use a-z 0-9 - _", name);
            rc = -EINVAL;
        }
    /* --bytes: keep one regime (e.g. messages that stay in cache) */
    size_t kept = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (s[i].bytes >= (double)blo && s[i].bytes <= (double)bhi)
            s[kept++] = s[i];
        else
            skipped++;
    }
    n = rc ? n : kept;
    struct lbs_sim_fit fit;
    if (!rc && (rc = lbs_sim_fit(s, n, &fit, &e)))
        cli_error("sim calibrate", "%s", e.msg);
    long maxr = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].ranks > maxr)
            maxr = s[i].ranks;
    char path[1024];
    if (!rc) {
        if (out)
            snprintf(path, sizeof path, "%s", out);
        else
            snprintf(path, sizeof path, "%s/platforms/%s.json", data_dir(),
                     name);
    }
    int mem_measured = 0;
    if (!rc && mem <= 0) {
        struct stream_result sr;
        if (stream_measure(16000000, 3, &sr) || sr.wrong) {
            cli_error("sim calibrate", "STREAM measurement failed; give "
                      "--mem-bw-gbs");
            rc = -EIO;
        } else {
            mem = sr.triad_gbps;
            mem_measured = 1;
        }
    }
    if (!rc) {
        json_t *doc = calib_platform(&fit, files, skipped, name, maxr, peak,
                                     mem, mem_measured);
        files = NULL;
        char *text = doc ? json_dumps(doc, JSON_INDENT(2) |
                                               JSON_PRESERVE_ORDER)
                         : NULL;
        if (!text) {
            cli_error("sim calibrate", "out of memory");
            rc = -ENOMEM;
        } else {
            size_t len = strlen(text);
            char *t2 = malloc(len + 2);
            if (!t2) {
                rc = -ENOMEM;
            } else {
                memcpy(t2, text, len);
                t2[len] = '\n';
                t2[len + 1] = '\0';
                struct lbs_sim_platform *chk;
                /* the file must read back (catches any writer bug) */
                if ((rc = lbs_sim_platform_parse(t2, path, &chk, &e)))
                    cli_error("sim calibrate", "%s", e.msg);
                lbs_sim_platform_free(chk);
                if (!rc && (rc = lbs_write_atomic(path, t2, len + 1, &e)))
                    cli_error("sim calibrate", "%s", e.msg);
                free(t2);
            }
            free(text);
        }
        json_decref(doc);
        if (!rc) {
            printf("calibrated %s from %zu samples (%zu skipped): base %.2f "
                   "us, per step %.3f us, bandwidth %.3f GB/s per rank\n",
                   name, fit.used, skipped, fit.base_lat * 1e6,
                   fit.hop_lat * 1e6, fit.bw / 1e9);
            if (fit.eager_max > 0)
                printf("  rendezvous: +%.3f us per step above %.0f bytes\n",
                       fit.rndv_lat * 1e6, fit.eager_max);
            printf("  per collective (GB/s):");
            for (int k = 0; k < LBS_SIM_NCOLL; k++)
                if (k != LBS_SIM_ALLGATHERV && fit.coll_bw[k] > 0)
                    printf(" %s %.3f", lbs_sim_coll_name(k),
                           fit.coll_bw[k] / 1e9);
            printf("\n");
            if (fit.reduce_bw > 0)
                printf("  reduction: %.3f GB/s\n", fit.reduce_bw / 1e9);
            print_heldout("held-out sizes", &fit.sizes,
                          "fewer than 6 samples");
            print_heldout("held-out rank counts", &fit.ranks,
                          "samples at one rank count only");
            printf("wrote %s\n", path);
        }
    }
    json_decref(files);
    free(s);
    return cli_exit_code(rc);
}

/* ---- list -------------------------------------------------------------- */

static int cmp_name(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a),
                  json_string_value(*(json_t *const *)b));
}

/* The preset names of one kind (file names less ext), sorted. */
static json_t *list_dir(const char *kind, const char *ext)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", data_dir(), kind);
    DIR *d = opendir(dir);
    struct dirent *de;
    json_t *names = json_array();
    while (d && (de = readdir(d))) {
        size_t n = strlen(de->d_name), e = strlen(ext);
        if (n > e && !strcmp(de->d_name + n - e, ext))
            json_array_append_new(names, json_stringn(de->d_name, n - e));
    }
    if (d)
        closedir(d);
    size_t n = json_array_size(names);
    json_t **v = malloc((n ? n : 1) * sizeof *v), *sorted = json_array();
    for (size_t i = 0; v && i < n; i++)
        v[i] = json_array_get(names, i);
    if (v)
        qsort(v, n, sizeof *v, cmp_name);
    for (size_t i = 0; v && i < n; i++)
        json_array_append(sorted, v[i]);
    free(v);
    json_decref(names);
    return sorted;
}

static int sim_list(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: lbscale sim list [--json]\n\n"
                   "The platform, model and trace presets the simulator "
                   "reads (from\n$LBSCALE_SIM_DATA, else %s), sorted by "
                   "name.\n\n"
                   "  --json      one JSON object: {\"data\", "
                   "\"platforms\", \"models\", \"traces\"}\n"
                   "  -h, --help  this help\n", LBS_SIM_DATA_SRC);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            cli_error("sim list", "unknown argument '%s' (see lbscale sim "
                      "list --help)", argv[i]);
            return EXIT_BAD_INPUT;
        }
    }
    static const char *const kinds[][2] = {{"platforms", ".json"},
                                           {"models", ".json"},
                                           {"traces", ".jsonl"}};
    json_t *o = json_pack("{s:s}", "data", data_dir());
    for (int k = 0; k < 3; k++)
        json_object_set_new(o, kinds[k][0], list_dir(kinds[k][0],
                                                     kinds[k][1]));
    if (json) {
        char *t = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(t ? t : "{}");
        free(t);
    } else {
        for (int k = 0; k < 3; k++) {
            size_t i;
            json_t *x;
            printf("%s (%s/%s):\n", kinds[k][0], data_dir(), kinds[k][0]);
            json_array_foreach(json_object_get(o, kinds[k][0]), i, x)
                printf("  %s\n", json_string_value(x));
        }
    }
    json_decref(o);
    return 0;
}

/* ---- dispatch ---------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: lbscale sim COMMAND [options]   (lbscale sim COMMAND "
          "--help)\n\n"
          "  sweep      iteration time, exposed communication and scaling\n"
          "             efficiency per optimizer over 8..16384 GPUs\n"
          "  step       one (optimizer, GPU count) point; --timeline shows\n"
          "             every collective with its algorithm\n"
          "  coll       one collective: cost of every algorithm/protocol\n"
          "  anchors    published figures beside lbscale's predictions\n"
          "  netsweep   scaling efficiency against network bandwidth per node\n"
          "  speed      how fast the simulator is (benchmark figures)\n"
          "  calibrate  fit the 'local' platform from `lbscale coll` JSONL\n"
          "  list       platform, model and trace presets\n\n"
          "Scaling efficiency E(P) = T(one node: gpus_per_node GPUs) / T(P)\n"
          "at the same per-GPU batch (weak scaling).  Presets are read from\n"
          "$LBSCALE_SIM_DATA, else " LBS_SIM_DATA_SRC ".\n", f);
}

int verb_sim(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_BAD_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "calibrate"))
        return sim_calibrate(argc - 1, argv + 1);
    if (!strcmp(cmd, "list"))
        return sim_list(argc - 1, argv + 1);
    static const char *const cmds[] = {"sweep", "step", "coll", "anchors",
                                       "speed", "netsweep", NULL};
    int which = -1;
    for (int i = 0; cmds[i]; i++)
        if (!strcmp(cmd, cmds[i]))
            which = i;
    if (which < 0) {
        cli_error("sim", "unknown command '%s' (see lbscale sim --help)", cmd);
        return EXIT_BAD_INPUT;
    }
    struct simargs a = {.com = {.save = 1}, .grad_bytes = 4,
                        .grad_dtype = "fp32"};
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        int c = cli_common_opt(&a.com, argc, argv, &i);
        if (c < 0)
            return EXIT_BAD_INPUT;
        if (c)
            continue;
        if ((c = sim_opt(&a, argc, argv, &i)) < 0)
            return EXIT_BAD_INPUT;
        if (c)
            continue;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            if (which == 0)
                fputs(SWEEP_HELP, stdout);
            else if (which == 1)
                printf("usage: lbscale sim step --model M --platform P "
                       "--optim NAME [--gpus 1024]\n"
                       "                        [--timeline] [--json]\n\n"
                       "One simulated training step of one optimizer at one "
                       "GPU count (default\n1024): one row of `lbscale sim "
                       "sweep`, with the same options.\n\n"
                       "  --timeline      print every collective of the first "
                       "distinct step with\n"
                       "                  its algorithm, start and end\n%s",
                       strstr(SWEEP_HELP, "  --model M"));
            else if (which == 2)
                fputs("usage: lbscale sim coll --platform P [--coll "
                      "allreduce] [--gpus 8] [--bytes 1K..1G]\n\nCost of one "
                      "collective under every algorithm and protocol the\n"
                      "platform enables, the fastest (NCCL-style choice), "
                      "and nccl-tests'\nalgbw = bytes/time and busbw "
                      "(allreduce x 2(P-1)/P).  The platform file: a regular file of at most\n"
                      "1 MiB.\n", stdout);
            else if (which == 3)
                fputs("usage: lbscale sim anchors [--optim SLAMB.jsonl] "
                      "[--json]\n\nPrints the published anchors (NVLink "
                      "allreduce busbw on 8xA100\nand 8xH100, per-NIC "
                      "bandwidth, SLAMB's 90% scaling efficiency for\n"
                      "BERT-XL on 1,024 A100s, from a SLAMB trace of bert-xl:"
                      " --optim FILE or\n<data>/traces/slamb-bert-xl*.jsonl)"
                      " beside what the presets predict.\n", stdout);
            else if (which == 5)
                fputs(NETSWEEP_HELP, stdout);
            else
                fputs("usage: lbscale sim speed [--model M] [--platform P] "
                      "[--optim LIST] [--json]\n\nTimes one step at 1,024 "
                      "GPUs, a sweep over 12 scales, and the cost of\none "
                      "collective as P grows.\n", stdout);
            fputs(CLI_COMMON_HELP, stdout);
            return 0;
        }
        if (which == 1 && !strcmp(o, "--timeline")) {
            a.timeline = 1;
            continue;
        }
        if (which == 3 && !strcmp(o, "--check")) {
            a.check = 1;
            continue;
        }
        cli_error("sim", "unknown option '%s' (see lbscale sim %s --help)", o,
                  cmd);
        return EXIT_BAD_INPUT;
    }
    switch (which) {
    case 0: return run_entries(&a, argc, argv, 0);
    case 1:
        if (a.timeline) {
            if ((!a.model && !a.compute) || !a.platform || !a.optim) {
                cli_error("sim step", "--model (or --compute), --platform "
                          "and --optim are required (see --help)");
                return EXIT_BAD_INPUT;
            }
            return sim_step_timeline(&a);
        }
        return run_entries(&a, argc, argv, 1);
    case 2: return sim_coll(&a, argc, argv);
    case 3: return sim_anchors(&a, argc, argv, a.check);
    case 5: return sim_netsweep(&a, argc, argv);
    default: return sim_speed(&a, argc, argv);
    }
}
