/* sim_cli.c - `lbscale sim ...`: the simulator from the command line.
 *
 *   sim sweep      iteration time, exposed communication, scaling
 *                  efficiency over a range of GPU counts, per optimizer
 *   sim step       one point with its timeline
 *   sim coll       one collective: every algorithm x protocol, the choice
 *   sim anchors    published figures beside lbscale's predictions
 *   sim netsweep   scaling efficiency against the network per node
 *   sim speed      how fast the simulator itself is (benchmark figures)
 *   sim calibrate  fit a platform from `lbscale coll`, nccl-tests or OSU
 *                  results
 *   sim list       presets
 *
 * This file parses options (one table per subcommand, bench/opt.h) and
 * prints; the simulator's substance (presets, optimizer entries, sweeps,
 * anchors, the speed benchmark, calibration input and the platform
 * writer) is the library's (sim/lbscale_sim.h).  Every input is loaded
 * and checked before a results directory is created, so bad input leaves
 * nothing behind (exit 2, one line on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <zlib.h>

#include "cli.h"
#include "sim_calib_nccl.h"
#include "sim_model.h"
#include "lbs_sim_paths.h"
#include "lbscale/file.h"
#include "lbscale/optim.h"
#include "lbscale/param.h"
#include "lbscale_sim.h"
#include "opt.h"

/* ---- options ----------------------------------------------------------- */

struct simargs {
    struct cli_common com;
    const char *model, *platform, *optim, *gpus, *coll, *bytes, *node_gbps;
    const char *compute;    /* --compute RUN or train trace */
    const char *compress_run;   /* --compress-run RUN */
    double comp_gbps, decomp_gbps;  /* --compress-gbps C,D */
    double bucket_mb;
    int timeline;
    long batch;             /* --batch-per-gpu (0: the model's) */
    double grad_bytes;      /* --grad-dtype: 4 fp32, 2 fp16/bf16 */
    const char *grad_dtype;
    long accum;             /* --accum */
    int check;              /* anchors --check */
    int no_overlap, no_slowdown;
    double compute_cv, overhead_ms;     /* --compute-cv, --overhead-ms */
    int cv_given, overhead_given;
    const char *tuner_csv;  /* sim coll --nccl-tuner-csv FILE */
};

/* --compute-cv X / --overhead-ms T (dst: struct simargs) */
static int job_opt(const char *opt, const char *v, void *dst)
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
static int grad_dtype_opt(const char *opt, const char *v, void *dst)
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
static int compress_gbps_opt(const char *opt, const char *v, void *dst)
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

/* The rows shared by the subcommands, each declared once. */
#define SIM_MODEL_ROW(a)                                                     \
    {.name = "model", .type = CLI_STR, .dst = &(a)->model, .arg = "M",       \
     .help = "a model preset (lbscale sim list) or a model JSON\n"          \
             "file"}
#define SIM_PLATFORM_ROW(a)                                                  \
    {.name = "platform", .type = CLI_STR, .dst = &(a)->platform, .arg = "P", \
     .help = "a platform preset (lbscale sim list) or a platform\n"        \
             "JSON file"}
#define SIM_OPTIM_ROW(a, text)                                               \
    {.name = "optim", .type = CLI_STR, .dst = &(a)->optim, .arg = "LIST",    \
     .help = text}
#define SIM_GPUS_ROW(a, text)                                                \
    {.name = "gpus", .type = CLI_STR, .dst = &(a)->gpus, .arg = "LIST",      \
     .help = text}

#define OPTIM_LIST_HELP                                                      \
    "comma list; each item a trace-v1 .jsonl file, or a name:\n"             \
    "<data>/traces/NAME-MODEL*.jsonl when present (one per\n"                \
    "recorded rank count; the one at P, else the nearest),\n"                \
    "else, for an optimizer core calls data-parallel (dense,\n"              \
    "every layer; lbscale sim list names them), the contract:\n"             \
    "every layer's fp32 gradient allreduced in DDP buckets"

/* How a simulated step runs: sweep, step and netsweep take them all. */
#define SIM_STEP_ROWS(a)                                                     \
    {.name = "bucket-mb", .type = CLI_DOUBLE, .dst = &(a)->bucket_mb,        \
     .arg = "MB", .lo = 1e-6, .hi = 1e9,                                     \
     .help = "DDP bucket cap in MiB (default: the model's, 25)"},            \
    {.name = "compute", .type = CLI_STR, .dst = &(a)->compute, .arg = "RUN", \
     .help = "per-layer forward/backward times measured by lbscale\n"        \
             "train (RUN's train-trace*.jsonl, or the file) instead of\n"    \
             "the model's FLOPs; alone, the measured model itself"},         \
    {.name = "batch-per-gpu", .type = CLI_LONG, .dst = &(a)->batch,          \
     .arg = "B", .lo = 1, .hi = 10000000,                                    \
     .help = "scale the model's FLOPs/times to B samples per GPU"},          \
    {.name = "accum", .type = CLI_LONG, .dst = &(a)->accum, .arg = "K",      \
     .lo = 1, .hi = 1000000,                                                 \
     .help = "K micro-batches per optimizer step (gradient\n"                \
             "accumulation; communication after the last)"},                 \
    {.name = "no-overlap", .type = CLI_FLAG, .dst = &(a)->no_overlap,        \
     .help = "every collective waits for the end of the backward pass"},     \
    {.name = "no-slowdown", .type = CLI_FLAG, .dst = &(a)->no_slowdown,      \
     .help = "ignore the platform's compute slowdown while overlapped"},     \
    {.name = "compute-cv", .type = CLI_CALL, .fn = job_opt, .dst = (a),      \
     .arg = "X",                                                             \
     .help = "per-rank compute spread (coefficient of variation):\n"         \
             "a step waits for the slowest of P ranks (default: the\n"      \
             "--compute run's measured spread, else the platform's\n"       \
             "\"job\")"},                                                    \
    {.name = "overhead-ms", .type = CLI_CALL, .fn = job_opt, .dst = (a),     \
     .arg = "T",                                                             \
     .help = "per-step overhead in ms (data, framework; default as\n"       \
             "--compute-cv)"},                                               \
    {.name = "grad-dtype", .type = CLI_CALL, .fn = grad_dtype_opt,           \
     .dst = (a), .arg = "D",                                                 \
     .help = "fp32 (default), fp16 or bf16: what dense data-parallel\n"      \
             "baselines allreduce (traces keep their recorded bytes)"},      \
    {.name = "compress-gbps", .type = CLI_CALL, .fn = compress_gbps_opt,     \
     .dst = (a), .arg = "C,D",                                               \
     .help = "compressed traces: measured compress and decompress\n"         \
             "rates (GB/s of fp32 input, e.g. lbscale compress --device\n"   \
             "cuda); default: the trace's bytes model at the GPU's\n"        \
             "memory bandwidth"},                                            \
    {.name = "compress-run", .type = CLI_STR, .dst = &(a)->compress_run,     \
     .arg = "RUN",                                                           \
     .help = "the same from RUN's compress.jsonl (GPU rows first)"}

/* Everything sweep takes (step and netsweep include it). */
#define SIM_SWEEP_ROWS(a)                                                    \
    SIM_MODEL_ROW(a), SIM_PLATFORM_ROW(a),                                   \
    SIM_OPTIM_ROW(a, OPTIM_LIST_HELP),                                       \
    SIM_GPUS_ROW(a, "8..16384 (powers of two), 8,64,1024, or a mix"),        \
    SIM_STEP_ROWS(a)

#define FILES_NOTE                                                           \
    "Files must be regular files (not FIFOs or devices) of at most 1 MiB\n"  \
    "(platform), 64 MiB (model) and 1 GiB (trace); every physical quantity\n" \
    "in them must lie in the range sim/README.md states (\"Ranges\")."

static struct lbs_sim_opts sim_opts(const struct simargs *a)
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
static void job_source(const struct simargs *a, const struct lbs_sim_model *m,
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

static void print_json(const json_t *row)
{
    char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (s)
        puts(s);
    free(s);
}

#define NUM(r, k) json_number_value(json_object_get(r, k))

/* ---- the model, compression costs ------------------------------------ */

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
        double x = 0;
        for (size_t i = 0; i < plan->nsteps; i++)
            x = fmax(x, plan->step[i].extra_bpe);     /* at large P */
        if (x > 0)
            snprintf(src, srclen, "inside the optimizer: core's traffic "
                     "model, %.4g B/elem more in its compressing phase, at "
                     "%g GB/s", x, pl->mem_bw / 1e9);
        else
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
        rc = lbs_sim_model_find(a->model, m, e);
        if (!rc && meas)
            rc = lbs_sim_model_use_times(*m, meas, e);
    }
    lbs_sim_model_free(meas);
    if (!rc && a->batch > 0)
        rc = lbs_sim_model_set_batch(*m, (double)a->batch, e);
    return rc;
}

/* One sweep row: the point's result and how it was obtained. */
static json_t *sweep_row(const struct simargs *a, const struct lbs_sim_entry *en,
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
    /* E is defined from one node up: below it T(node)/T(P) compares a
     * run with more GPUs against one with fewer */
    if (row && r->P < (pl->gpus_per_node < pl->max_gpus ? pl->gpus_per_node
                                                       : pl->max_gpus))
        json_object_set_new(row, "scaling_efficiency", json_null());
    if (row) {
        int dp = !strcmp(en->source, "data-parallel");
        json_object_set_new(row, "slowdown_ms", json_real(r->slowdown * 1e3));
        json_object_set_new(row, "straggle_ms", json_real(r->straggle * 1e3));
        json_object_set_new(row, "overhead_ms", json_real(r->overhead * 1e3));
        json_object_set_new(row, "compute_cv", json_real(
            o->cv_set ? o->compute_cv : pl->compute_cv));
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

/* ---- sweep / step ---------------------------------------------------- */

static const char sweep_usage[] =
    "usage: lbscale sim sweep --model M --platform P --optim LIST\n"
    "                         [--gpus 8..16384] [--bucket-mb MB] [--json]";
static const char sweep_about[] =
    "Simulates one training step per (optimizer, GPU count) and prints the\n"
    "iteration time split into compute (forward + backward), optimizer step\n"
    "and exposed communication (iteration - compute - optimizer), the payload\n"
    "bytes each GPU hands to collectives per step, and the scaling efficiency\n"
    "  E(P) = T(one node, gpus_per_node GPUs) / T(P)\n"
    "at the same per-GPU batch (weak scaling).  Trace plans are averaged over\n"
    "their steps (SLAMB's periodic averaging and 1-bit LAMB's warm-up weigh as\n"
    "often as they occur); 'final' is the average over the trace's last phase\n"
    "(1-bit LAMB: the compressed phase).";

/* Every (entry, P) point simulated into rows before anything is printed
 * or written: an input that fails at some point must leave no table
 * header, no partial table and no run directory behind. */
static int sweep_rows(const struct simargs *a,
                      const struct lbs_sim_platform *pl,
                      const struct lbs_sim_model *m,
                      const struct lbs_sim_entry *ent, size_t nent,
                      const long *P, size_t np, long base_p,
                      struct lbs_sim_opts *o, json_t **rows,
                      struct lbs_err *e)
{
    struct lbs_sim_result *res = calloc(np, sizeof *res);
    double *eff = calloc(np, sizeof *eff);
    int rc = 0;
    *rows = json_array();
    if (!*rows || !res || !eff)
        rc = lbs_err_set(e, -ENOMEM, "out of memory");
    char jsrc[LBS_SIM_FILE_MAX + 800];
    job_source(a, m, pl, o, jsrc, sizeof jsrc);
    for (size_t k = 0; k < nent && !rc; k++) {
        char csrc[LBS_SIM_FILE_MAX + 64];
        o->optim_bytes_per_elem = ent[k].bpe;
        if ((rc = compress_cost(a, ent[k].plans[0], pl, o, csrc,
                                sizeof csrc, e)) ||
            (rc = lbs_sim_entry_sweep(pl, m, &ent[k], P, np, base_p, o, res,
                                      eff, e)))
            break;
        for (size_t i = 0; i < np && !rc; i++) {
            json_t *row = sweep_row(a, &ent[k], lbs_sim_entry_plan(&ent[k],
                                    P[i]), m, pl, o, &res[i], eff[i]);
            if (row) {
                json_object_set_new(row, "compress_ms",
                                    json_real(res[i].compress * 1e3));
                json_object_set_new(row, "compress_cost", json_string(csrc));
                json_object_set_new(row, "job_source", json_string(jsrc));
            }
            if (!row || json_array_append_new(*rows, row))
                rc = lbs_err_set(e, -ENOMEM, "out of memory");
        }
    }
    free(res);
    free(eff);
    if (rc) {
        json_decref(*rows);
        *rows = NULL;
    }
    return rc;
}

static void print_sweep_head(const struct simargs *a,
                             const struct lbs_sim_model *m,
                             const struct lbs_sim_platform *pl,
                             const struct lbs_sim_opts *o, long base_p)
{
    printf("# %s on %s (%s, %d GPUs/node), per-GPU batch %g x %g, "
           "bucket %g MiB; E = T(%ld GPUs)/T(P)\n"
           "# collectives: %s; dense baselines send %s gradients; %ld "
           "micro-batch%s per step; comm %s the backward pass; compute "
           "slowdown while overlapped %.1f%%\n"
           "# %-18s %6s %9s %9s %8s %9s %9s %8s %8s %6s %9s\n",
           m->name, pl->name, pl->gpu, pl->gpus_per_node, m->batch_per_gpu,
           m->seq_len,
           (o->bucket_bytes > 0 ? o->bucket_bytes : m->bucket_bytes) /
               1048576.0,
           base_p, pl->nccl_model ? "NCCL 2.21 tuner model"
                                  : "MPI alpha-beta model",
           a->grad_dtype, o->accum > 1 ? o->accum : 1L,
           o->accum > 1 ? "es" : "", o->no_overlap ? "after" : "overlaps",
           o->no_slowdown ? 0 : 100 * pl->overlap_slowdown, "optim", "gpus",
           "iter(ms)", "compute", "optim", "exposed", "comm", "slowdn",
           "MB/GPU", "eff", "final(ms)");
}

static void print_sweep_row(const json_t *r)
{
    char eff[16] = "     -";   /* below one node E is not defined */
    if (json_is_number(json_object_get(r, "scaling_efficiency")))
        snprintf(eff, sizeof eff, "%6.3f", NUM(r, "scaling_efficiency"));
    printf("  %-18s %6.0f %9.2f %9.2f %8.2f %9.2f %9.2f %8.2f %8.1f %s "
           "%9.2f\n",
           json_string_value(json_object_get(r, "optim")), NUM(r, "gpus"),
           NUM(r, "iter_ms"), NUM(r, "compute_ms"), NUM(r, "optimizer_ms"),
           NUM(r, "exposed_comm_ms"), NUM(r, "comm_ms"), NUM(r, "slowdown_ms"),
           NUM(r, "bytes_per_gpu") / 1e6, eff,
           NUM(r, "final_phase_iter_ms"));
}

/* Print rows (one JSON object each, or fmt's line) and append them to
 * the run's KIND.jsonl. */
static int emit_rows(const struct simargs *a, struct lbs_run *run,
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

/* What a sweep or step needs, loaded and checked. */
struct point_in {
    struct lbs_sim_model *m;
    struct lbs_sim_platform *pl;
    struct lbs_sim_entry *ent;
    size_t nent, np;
    long *P;
};

static void point_in_free(struct point_in *in)
{
    lbs_sim_entries_free(in->ent, in->nent);
    free(in->P);
    lbs_sim_model_free(in->m);
    lbs_sim_platform_free(in->pl);
}

/* The model, platform and entries of sweep, step and netsweep. */
static int point_load(const struct simargs *a, struct point_in *in,
                      struct lbs_err *e)
{
    int rc = load_sim_model(a, &in->m, e);
    if (!rc) rc = lbs_sim_platform_find(a->platform, &in->pl, e);
    if (!rc) rc = lbs_sim_entries_load(a->optim, in->m, a->grad_bytes,
                                       &in->ent, &in->nent, e);
    return rc;
}

/* Every point valid before anything is written. */
static int point_check(const struct simargs *a, const struct point_in *in,
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

static int need_point_args(const struct simargs *a, const char *what)
{
    if ((!a->model && !a->compute) || !a->platform || !a->optim) {
        cli_error(what, "--model (or --compute), --platform and --optim are "
                  "required (see --help)");
        return -EINVAL;
    }
    return 0;
}

/* NCCL 2.21.5 has no algorithm with a logarithmic step count for
 * allgather or alltoall: say so where a plan uses them at a scale where
 * their P - 1 steps of latency matter, rather than inventing one. */
static void note_linear_steps(const struct point_in *in)
{
    long maxp = 0;
    unsigned lin = 1u << LBS_COLL_ALLGATHER | 1u << LBS_COLL_ALLGATHERV |
                   1u << LBS_COLL_ALLTOALL;
    for (size_t i = 0; i < in->np; i++)
        maxp = in->P[i] > maxp ? in->P[i] : maxp;
    if (!in->pl->nccl_model || maxp < 1024)
        return;
    for (size_t k = 0; k < in->nent; k++)
        for (size_t j = 0; j < in->ent[k].nplans; j++) {
            const struct lbs_sim_plan *pl = in->ent[k].plans[j];
            for (size_t i = 0; i < pl->nsteps; i++)
                if (pl->step[i].kinds & lin) {
                    printf("# note: NCCL 2.21.5 runs allgather and alltoall "
                           "in P - 1 steps (ring, point-to-point; no "
                           "logarithmic algorithm), so at %ld GPUs their "
                           "latency is %ld steps; priced as NCCL would run "
                           "them\n", maxp, maxp - 1);
                    return;
                }
        }
}

static int run_entries(const struct simargs *a, int argc, char **argv,
                       int step_mode)
{
    struct lbs_err e;
    struct point_in in = {0};
    struct lbs_run *run = NULL;
    json_t *rows = NULL;
    const char *what = step_mode ? "sim step" : "sim sweep";
    if (need_point_args(a, what))
        return EXIT_BAD_INPUT;
    /* default: one node, then powers of two up to max_gpus (sweep);
     * 1,024 or max_gpus (step) */
    char def[64];
    int rc = point_load(a, &in, &e);
    if (!rc) {
        long top = in.pl->max_gpus;
        if (step_mode)
            snprintf(def, sizeof def, "%ld", top < 1024 ? top : 1024L);
        else
            snprintf(def, sizeof def, "%ld..%ld", (long)in.pl->gpus_per_node <
                     top ? (long)in.pl->gpus_per_node : top, top);
        rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : def, &in.P, &in.np, &e);
    }
    if (rc) {
        cli_error(what, "%s", e.msg);
        goto out;
    }
    if (step_mode && (in.np != 1 || in.nent != 1)) {
        cli_error(what, "one --optim and one --gpus value (use sim sweep for "
                  "lists)");
        rc = -EINVAL;
        goto out;
    }
    struct lbs_sim_opts o = sim_opts(a);
    long base_p = in.pl->gpus_per_node < in.pl->max_gpus
                      ? in.pl->gpus_per_node : in.pl->max_gpus;
    if ((rc = point_check(a, &in, &o, &e)) ||
        (rc = sweep_rows(a, in.pl, in.m, in.ent, in.nent, in.P, in.np,
                         base_p, &o, &rows, &e))) {
        cli_error(what, "%s", e.msg);
        goto out;
    }
    /* sweep and step rows go to sim.jsonl (what `lbscale report` reads) */
    if ((rc = cli_open_run(&a->com, "sim", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        print_sweep_head(a, in.m, in.pl, &o, base_p);
    rc = emit_rows(a, run, "sim", what, rows, print_sweep_row);
    if (!rc && !a->com.json)
        note_linear_steps(&in);
    if (!rc && run && !a->com.json)
        fprintf(stderr, "results: %s/sim.jsonl\n", lbs_run_dir(run));
out:
    json_decref(rows);
    lbs_run_close(run);
    point_in_free(&in);
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
                                    lbs_coll_name(ev->coll)));
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
           lbs_coll_name(ev->coll), lbs_sim_algo_name(ev->cost.algo),
           lbs_sim_proto_name(ev->cost.proto), ev->layer, ev->layer_last,
           ev->calls, ev->calls == 1 ? "" : "s",
           ev->post ? (ev->layer < 0 ? " whole-model" : " needs an earlier call")
                    : "");
}

static int sim_step_timeline(const struct simargs *a)
{
    struct lbs_err e;
    struct point_in in = {0};
    int rc = point_load(a, &in, &e);
    if (!rc)
        rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "1024", &in.P, &in.np,
                                &e);
    if (rc) {
        cli_error("sim step", "%s", e.msg);
        goto out;
    }
    const struct lbs_sim_plan *plan = lbs_sim_entry_plan(&in.ent[0],
                                                         in.P[0]);
    struct tl_ctx t = {in.m, a->com.json, 0};
    struct lbs_sim_opts o = sim_opts(a);
    char jsrc[LBS_SIM_FILE_MAX + 800];
    job_source(a, in.m, in.pl, &o, jsrc, sizeof jsrc);
    o.optim_bytes_per_elem = in.ent[0].bpe;
    struct lbs_sim_opts quiet = o;
    o.on_event = on_event;
    o.ctx = &t;
    struct lbs_sim_result r;
    /* once without events first: a point that fails prints nothing */
    if ((rc = lbs_sim_run(in.pl, in.m, plan, in.P[0], &quiet, &r, &e))) {
        cli_error("sim step", "%s", e.msg);
        goto out;
    }
    if (!a->com.json)
        printf("# timeline of the first distinct step: %s, %s, %s, %ld GPUs\n"
               "  %-9s %10s %10s %10s %10s  %-9s %-17s %-6s\n",
               in.ent[0].name, in.m->name, in.pl->name, in.P[0], "event",
               "ready(ms)", "start", "end", "MB", "coll", "algorithm",
               "proto");
    rc = lbs_sim_run(in.pl, in.m, plan, in.P[0], &o, &r, &e);
    if (rc)
        cli_error("sim step", "%s", e.msg);
    else if (!a->com.json)
        printf("# %ld backward events (one per layer) not shown; iteration "
               "%.3f ms = compute %.3f + optimizer %.3f + exposed %.3f + "
               "slowest rank %.3f + overhead %.3f (%s)\n",
               t.bwd_events, r.iter * 1e3, r.compute * 1e3, r.optim * 1e3,
               r.exposed * 1e3, r.straggle * 1e3, r.overhead * 1e3, jsrc);
out:
    point_in_free(&in);
    return cli_exit_code(rc);
}

static int cmd_sweep(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {SIM_SWEEP_ROWS(a), CLI_COMMON_OPTS(&a->com),
                                   {0}};
    const struct cli_verb v = {.name = "sim sweep", .usage = sweep_usage,
                               .about = sweep_about, .opts = opts,
                               .epilog = FILES_NOTE};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return run_entries(a, argc, argv, 0);
}

static int cmd_step(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        {.name = "timeline", .type = CLI_FLAG, .dst = &a->timeline,
         .help = "print every collective of the first distinct step with\n"
                 "its algorithm, start and end"},
        SIM_SWEEP_ROWS(a), CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim step",
        .usage = "usage: lbscale sim step --model M --platform P --optim NAME "
                 "[--gpus 1024]\n"
                 "                        [--timeline] [--json]",
        .about = "One simulated training step of one optimizer at one GPU "
                 "count (default\n1024): one row of `lbscale sim sweep`, "
                 "with the same options.",
        .opts = opts, .epilog = FILES_NOTE};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (!a->timeline)
        return run_entries(a, argc, argv, 1);
    if (need_point_args(a, "sim step"))
        return EXIT_BAD_INPUT;
    return sim_step_timeline(a);
}

/* ---- coll ------------------------------------------------------------- */

/* One sim coll row: the choice, algbw/busbw and every candidate;
 * -EINVAL when no enabled algorithm and protocol can carry the size. */
static int coll_row(const struct lbs_sim_net *net,
                    const struct lbs_sim_platform *pl, int k, long P,
                    double bytes, json_t **out, struct lbs_err *e)
{
    struct lbs_sim_cost c = lbs_sim_coll_cost(net, k, bytes,
                                              LBS_TOPO_RING, 1);
    *out = NULL;
    if (!isfinite(c.t))
        return lbs_err_set(e, -EINVAL, "%s: no enabled algorithm and "
                           "protocol can run %s of %.0f bytes on %ld GPUs",
                           pl->file, lbs_coll_name(k), bytes, P);
    double Pd = (double)P;
    double algbw = c.t > 0 ? bytes / c.t / 1e9 : 0;
    /* nccl-tests bus bandwidth factors */
    double f = k == LBS_COLL_ALLREDUCE ? 2 * (Pd - 1) / Pd
               : k == LBS_COLL_ALLGATHER || k == LBS_COLL_ALLGATHERV
                   ? (Pd - 1)
               : k == LBS_COLL_ALLTOALL ? (Pd - 1) / Pd : 1;
    json_t *row = json_pack("{s:s,s:s,s:I,s:f,s:f,s:s,s:s,s:f,s:f}",
                            "platform", pl->name, "coll",
                            lbs_coll_name(k), "gpus", (json_int_t)P,
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
                                         LBS_TOPO_RING, 1, NULL);
            char key[48];
            if (!isfinite(t) || lbs_sim_algo_coll(al) !=
                (k == LBS_COLL_ALLGATHERV ? LBS_COLL_ALLGATHER
                                         : (enum lbs_coll)k))
                continue;
            snprintf(key, sizeof key, "%s/%s", lbs_sim_algo_name(al),
                     lbs_sim_proto_name(p));
            json_object_set_new(all, key, json_real(t * 1e6));
        }
    json_object_set_new(row, "candidates_us", all);
    if (pl->nccl_model) {
        int na;
        struct lbs_sim_cost c = lbs_sim_coll_cost(net, (enum lbs_coll)k,
                                                  bytes, LBS_TOPO_RING, 1);
        json_object_set_new(row, "channels", json_integer(
            lbs_sim_nccl_channels(net, c.algo, &na)));
        json_object_set_new(row, "nccl_algo", json_integer(na));
        json_object_set_new(row, "nccl_proto", json_integer((int)c.proto));
    }
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

/* --bytes: a list of sizes with K/M/G suffixes, or A..B (x4 steps);
 * at most 64 sizes into sizes; -EINVAL after one printed line. */
static int parse_sizes(const char *arg, double *sizes, size_t *ns)
{
    char buf[256];
    char *save = NULL;
    int rc = 0;
    *ns = 0;
    snprintf(buf, sizeof buf, "%s", arg ? arg : "1K..1G");
    for (char *t = strtok_r(buf, ",", &save); t && !rc;
         t = strtok_r(NULL, ",", &save)) {
        char *dots = strstr(t, "..");
        size_t lo, hi;
        if (dots) {
            *dots = '\0';
            if (lbs_parse_size(t, &lo) || lbs_parse_size(dots + 2, &hi) ||
                hi < lo || lo == 0)
                rc = -EINVAL;
            for (double x = (double)lo; !rc && x <= (double)hi && *ns < 64;
                 x *= 4)
                sizes[(*ns)++] = x;
        } else if (lbs_parse_size(t, &lo) || *ns >= 64) {
            rc = -EINVAL;
        } else {
            sizes[(*ns)++] = (double)lo;
        }
    }
    if (rc || *ns == 0) {
        cli_error("--bytes", "'%s' is not a size list (e.g. 1K..1G or "
                  "4M,64M; K M G, Ki Mi Gi)", arg ? arg : "");
        return -EINVAL;
    }
    /* a trace's largest call (sim/README.md "Ranges") */
    for (size_t i = 0; i < *ns; i++)
        if (!(sizes[i] >= 1 && sizes[i] <= 9e15)) {
            cli_error("--bytes", "'%s': every size must be 1 .. 9e15 bytes",
                      arg);
            return -EINVAL;
        }
    return 0;
}

/* --timeline: NCCL_DEBUG=INFO's tuning line for the choice (enqueue.cc:
 * "%ld Bytes -> Algo %d proto %d time %f", NCCL's numbers), with the
 * names and the channels it would use. */
static void print_coll_tuning(const json_t *row)
{
    json_t *na = json_object_get(row, "nccl_algo");
    if (!na) {
        printf("  (MPI alpha-beta platform: no NCCL tuning line)\n");
        return;
    }
    if (json_integer_value(na) < 0) {
        printf("  NCCL INFO %.0f Bytes -> point-to-point sends (no tuner "
               "line), %lld channels\n", NUM(row, "bytes"),
               (long long)json_integer_value(json_object_get(row,
                                                             "channels")));
        return;
    }
    printf("  NCCL INFO %.0f Bytes -> Algo %lld proto %lld time %f  "
           "(%s/%s, %lld channels)\n", NUM(row, "bytes"),
           (long long)json_integer_value(na),
           (long long)json_integer_value(json_object_get(row, "nccl_proto")),
           NUM(row, "time_us"),
           json_string_value(json_object_get(row, "algo")),
           json_string_value(json_object_get(row, "proto")),
           (long long)json_integer_value(json_object_get(row, "channels")));
}

static void print_coll_row(const json_t *row)
{
    char ch[48];
    snprintf(ch, sizeof ch, "%s/%s",
             json_string_value(json_object_get(row, "algo")),
             json_string_value(json_object_get(row, "proto")));
    printf("  %-6.0f %12.0f  %-22s %10.2f %9.2f %9.2f\n", NUM(row, "gpus"),
           NUM(row, "bytes"), ch, NUM(row, "time_us"), NUM(row, "algbw_gbs"),
           NUM(row, "busbw_gbs"));
}

static void print_coll_timeline(const json_t *row)
{
    print_coll_row(row);
    print_coll_tuning(row);
}

/* ---- --nccl-tuner-csv -------------------------------------------------- */

/* The simulator's choice for one call, in the words of NCCL's example
 * tuner plugin (ext-tuner/example in NVIDIA/nccl: algorithm tree, ring,
 * nvls, nvls_tree; protocol ll, ll128, simple) and the channels. */
struct tuner_choice {
    const char *algo, *proto;
    int channels;
};

static struct tuner_choice tuner_choose(const struct lbs_sim_net *net, int k,
                                        double bytes)
{
    static const char *const protos[] = {"ll", "ll128", "simple"};
    struct lbs_sim_cost c = lbs_sim_coll_cost(net, (enum lbs_coll)k, bytes,
                                              LBS_TOPO_RING, 1);
    int na = -1;
    int ch = lbs_sim_nccl_channels(net, c.algo, &na);
    const char *algo = na == 0 ? "tree" : na == 1 ? "ring"
                       : na == 4 ? "nvls" : na == 5 ? "nvls_tree" : NULL;
    return (struct tuner_choice){algo, (unsigned)c.proto < 3
                                           ? protos[c.proto] : NULL, ch};
}

static int tuner_same(struct tuner_choice a, struct tuner_choice b)
{
    return a.algo == b.algo && a.proto == b.proto && a.channels == b.channels;
}

/* NCCL's nBytes of a call of trace-v1 bytes (enqueue.cc: an allgather's
 * count is per rank, its nBytes the whole output). */
static double tuner_nbytes(int k, long P, double bytes)
{
    return k == LBS_COLL_ALLGATHER ? bytes * (double)P : bytes;
}

static struct tuner_choice tuner_at(const struct lbs_sim_net *net, int k,
                                    double nbytes)
{
    return tuner_choose(net, k, k == LBS_COLL_ALLGATHER
                                    ? nbytes / (double)net->P : nbytes);
}

/* The first NCCL size in (a, b] whose choice differs from a's, a's choice
 * being ca and b's differing from it: bisection on whole bytes. */
static double tuner_switch(const struct lbs_sim_net *net, int k, double a,
                           double b, struct tuner_choice ca)
{
    while (b - a > 1) {
        double m = floor((a + b) / 2);
        if (tuner_same(tuner_at(net, k, m), ca))
            a = m;
        else
            b = m;
    }
    return b;
}

static int cmp_size(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One collective at one GPU count: rows over [lo, hi] (NCCL bytes), a row
 * per run of equal choices.  The choice is probed at every size of the
 * table (nb[0..nn-1], NCCL bytes) and on a grid of 16 points per
 * doubling; between two probes that differ the switch is found to the
 * byte.  (A choice that holds only between two neighbouring grid points,
 * under 4.4% of the size, can be missed.) */
static int tuner_rows(FILE *f, const struct lbs_sim_net *net, int k,
                      double lo, double hi, const double *nb, size_t nn)
{
    const char *name = k == LBS_COLL_BCAST ? "broadcast" : lbs_coll_name(k);
    size_t cap = nn + 16 * 64 + 2, n = 0;
    double *pr = malloc(cap * sizeof *pr);
    if (!pr)
        return -ENOMEM;
    for (size_t i = 0; i < nn; i++)
        pr[n++] = nb[i];
    for (double x = lo; x < hi && n < cap - 1; x *= pow(2, 1.0 / 16))
        pr[n++] = floor(x);
    pr[n++] = hi;
    qsort(pr, n, sizeof *pr, cmp_size);
    double start = lo;
    struct tuner_choice cur = tuner_at(net, k, lo);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (pr[i] <= start && i + 1 < n)
            continue;
        struct tuner_choice c = tuner_at(net, k, pr[i]);
        if (!cur.algo || !cur.proto) {
            rc = -EINVAL;
            break;
        }
        if (tuner_same(c, cur) && i + 1 < n)
            continue;
        double end = tuner_same(c, cur) ? hi
            : tuner_switch(net, k, i ? fmax(start, pr[i - 1]) : start,
                           pr[i], cur) - 1;
        fprintf(f, "%s,%.0f,%.0f,%s,%s,%d,%ld,%ld,-1,-1\n", name, start, end,
                cur.algo, cur.proto, cur.channels, net->N, net->P);
        start = end + 1;
        cur = tuner_at(net, k, start);
        if (start <= pr[i])
            i--;        /* probe pr[i] again against the new run */
        if (start > hi)
            break;
    }
    free(pr);
    return rc;
}

/* The CSV text for the collectives ks at every P over the sizes' span;
 * -EINVAL (said) when NCCL's tuner has nothing to take. */
static int tuner_csv(const struct lbs_sim_platform *pl, const int *ks,
                     int nk, const long *P, size_t np, const double *sizes,
                     size_t ns, char **text, size_t *len)
{
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < ns; i++) {
        lo = fmin(lo, sizes[i]);
        hi = fmax(hi, sizes[i]);
    }
    if (!pl->nccl_model) {
        cli_error("--nccl-tuner-csv", "%s has no \"nccl\" model: the "
                  "simulator makes no NCCL choice to write (use an NCCL "
                  "platform such as dgx-h100)", pl->name);
        return -EINVAL;
    }
    FILE *f = open_memstream(text, len);
    if (!f)
        return -ENOMEM;
    fprintf(f, "# lbscale sim coll --nccl-tuner-csv: the simulator's choice "
            "(NCCL 2.21.5 tuner model) on platform %s\n# format: NCCL's "
            "example tuner plugin (NVIDIA/nccl ext-tuner/example; "
            "NCCL_TUNER_CONFIG_FILE)\n# sizes: NCCL's nBytes (allgather: "
            "bytes per rank x nRanks), inclusive, over the simulated span\n"
            "# collective_type,min_bytes,max_bytes,algorithm,protocol,"
            "channels,nNodes,nRanks,numPipeOps,regBuff\n", pl->name);
    int rc = 0;
    for (int i = 0; i < nk && !rc; i++)
        for (size_t j = 0; j < np && !rc; j++) {
            struct lbs_sim_net net;
            struct lbs_err e;
            if (P[j] < 2) {
                fprintf(f, "# %s on 1 GPU: no collective, no row\n",
                        lbs_coll_name(ks[i]));
                continue;
            }
            if ((rc = lbs_sim_net_init(&net, pl, P[j], &e))) {
                cli_error("sim coll", "%s", e.msg);
                break;
            }
            double nb[64];
            for (size_t q = 0; q < ns; q++)
                nb[q] = tuner_nbytes(ks[i], P[j], sizes[q]);
            rc = tuner_rows(f, &net, ks[i],
                            ceil(tuner_nbytes(ks[i], P[j], lo)),
                            floor(tuner_nbytes(ks[i], P[j], hi)), nb, ns);
            if (rc)
                cli_error("--nccl-tuner-csv", "%s at %ld GPUs: a choice NCCL's "
                          "tuner cannot take", lbs_coll_name(ks[i]), P[j]);
        }
    if (fclose(f) && !rc)
        rc = -ENOMEM;
    if (rc) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

/* The collectives of the CSV: --coll if given, else every one NCCL's
 * tuner takes that lbscale models. */
static int tuner_colls(const struct simargs *a, int k, int ks[3])
{
    if (!a->coll) {
        ks[0] = LBS_COLL_ALLREDUCE;
        ks[1] = LBS_COLL_ALLGATHER;
        ks[2] = LBS_COLL_BCAST;
        return 3;
    }
    if (k != LBS_COLL_ALLREDUCE && k != LBS_COLL_ALLGATHER &&
        k != LBS_COLL_BCAST) {
        cli_error("--nccl-tuner-csv", "%s is not a collective NCCL's tuner "
                  "chooses for (allreduce, allgather, bcast here)",
                  lbs_coll_name(k));
        return -EINVAL;
    }
    ks[0] = k;
    return 1;
}

static int sim_coll(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_sim_platform *pl = NULL;
    struct lbs_run *run = NULL;
    json_t *rows = NULL;
    long *P = NULL;
    size_t np = 0, ns = 0;
    double sizes[64];
    int rc, k;
    if (!a->platform) {
        cli_error("sim coll", "--platform is required (see --help)");
        return EXIT_BAD_INPUT;
    }
    k = lbs_coll_from_name(a->coll ? a->coll : "allreduce");
    if (k < 0) {
        cli_error("--coll", "unknown collective '%s'", a->coll);
        return EXIT_BAD_INPUT;
    }
    if ((rc = lbs_sim_platform_find(a->platform, &pl, &e)) ||
        (rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "8", &P, &np, &e))) {
        cli_error("sim coll", "%s", e.msg);
        goto out;
    }
    if ((rc = parse_sizes(a->bytes, sizes, &ns)))
        goto out;
    for (size_t i = 0; i < np; i++)
        if (P[i] < 2) {
            cli_error("--gpus", "%ld: a collective needs at least 2 GPUs",
                      P[i]);
            rc = -EINVAL;
            goto out;
        }
    if ((rc = coll_rows(pl, k, P, np, sizes, ns, &rows, &e))) {
        cli_error("sim coll", "%s", e.msg);
        goto out;
    }
    if (a->tuner_csv) {
        int ks[3], nk = tuner_colls(a, k, ks);
        char *csv = NULL;
        size_t len = 0;
        rc = nk < 0 ? nk : tuner_csv(pl, ks, nk, P, np, sizes, ns, &csv,
                                     &len);
        if (!rc && (rc = lbs_write_atomic(a->tuner_csv, csv, len, &e)))
            cli_error("--nccl-tuner-csv", "%s", e.msg);
        free(csv);
        if (rc)
            goto out;
    }
    if ((rc = cli_open_run(&a->com, "sim_coll", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        printf("# %s on %s: time (us) of every algorithm/protocol, the "
               "choice, and busbw\n# %-6s %12s  %-22s %10s %9s %9s\n",
               lbs_coll_name(k), pl->name, "gpus", "bytes", "choice",
               "time(us)", "algbw", "busbw");
    rc = emit_rows(a, run, "sim_coll", "sim coll", rows,
                   a->timeline ? print_coll_timeline : print_coll_row);
out:
    json_decref(rows);
    lbs_run_close(run);
    free(P);
    lbs_sim_platform_free(pl);
    return cli_exit_code(rc);
}

static int cmd_coll(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        SIM_PLATFORM_ROW(a),
        {.name = "coll", .type = CLI_STR, .dst = &a->coll, .arg = "C",
         .help = "allreduce (default), allgather, allgatherv, alltoall,\n"
                 "bcast, barrier or neighbor"},
        SIM_GPUS_ROW(a, "GPU counts (default 8): 8,64 or A..B"),
        {.name = "bytes", .type = CLI_STR, .dst = &a->bytes, .arg = "LIST",
         .help = "sizes: 1K..1G (x4 steps, the default) or 4M,64M"},
        {.name = "timeline", .type = CLI_FLAG, .dst = &a->timeline,
         .help = "under each row, the choice as NCCL_DEBUG=INFO's tuning\n"
                 "line prints it (NCCL's algorithm and protocol numbers)\n"
                 "with the channels"},
        {.name = "nccl-tuner-csv", .type = CLI_STR, .dst = &a->tuner_csv,
         .arg = "FILE",
         .help = "also write the choices (algorithm, protocol, channels)\n"
                 "per collective, GPU count and size range, every switch\n"
                 "to the byte, over the span of --bytes, in the CSV of\n"
                 "NCCL's example tuner plugin (NCCL_TUNER_CONFIG_FILE);\n"
                 "sizes in NCCL's nBytes; without --coll: allreduce,\n"
                 "allgather and broadcast"},
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim coll",
        .usage = "usage: lbscale sim coll --platform P [--coll allreduce] "
                 "[--gpus 8] [--bytes 1K..1G]\n"
                 "                        [--timeline] [--nccl-tuner-csv "
                 "FILE]",
        .about = "Cost of one collective under every algorithm and protocol "
                 "the\nplatform enables, the fastest (NCCL-style choice), "
                 "and nccl-tests'\nalgbw = bytes/time and busbw (allreduce "
                 "x 2(P-1)/P).  The platform file: a regular file of at "
                 "most\n1 MiB.",
        .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_coll(a, argc, argv);
}

/* ---- anchors ---------------------------------------------------------- */

static json_t *anchor_row(const struct lbs_sim_anchor *an, const char *band,
                          int ok)
{
    double ratio = an->predicted / an->published;
    json_t *row = json_pack("{s:s,s:s,s:o,s:o,s:o,s:s,s:s,s:s,s:b}",
        "anchor", an->what, "source", an->source, "published",
        isfinite(an->published) ? json_real(an->published) : json_null(),
        "lbscale", isfinite(an->predicted) ? json_real(an->predicted)
                                           : json_null(),
        "ratio", isfinite(ratio) ? json_real(ratio) : json_null(),
        "unit", an->unit, "note", an->note, "band", band, "in_band", ok);
    if (row && an->model) {
        json_object_set_new(row, "model", json_string(an->model));
        json_object_set_new(row, "platform", json_string(an->platform));
        json_object_set_new(row, "optim", json_string(an->optim));
        json_object_set_new(row, "gpus", json_integer(an->gpus));
        json_object_set_new(row, "setup", json_string(an->setup));
    }
    return row;
}

/* One anchor printed and appended; 1 when it is out of band. */
static int emit_anchor(const struct simargs *a, struct lbs_run *run,
                       const struct lbs_sim_anchor *an, int *rc)
{
    struct lbs_err e;
    int ok = lbs_sim_anchor_in_band(an);
    char band[32] = "shown only";
    if (an->band > 0)
        snprintf(band, sizeof band, an->kind == 'a' ? "+-%g" :
                 an->kind == 'f' ? "x/%g" : "+-%g%%",
                 an->kind == 'r' ? 100 * an->band : an->band);
    json_t *row = anchor_row(an, band, ok);
    if (a->com.json)
        print_json(row);
    else
        printf("  %-48s %9.4g %9.4g %7.3f %-12s %s%s %s\n", an->what,
               an->published, an->predicted, an->predicted / an->published,
               band, ok ? "" : "OUT OF BAND ", an->unit, an->note);
    if (run && (*rc = lbs_run_append(run, "sim_anchors", row, &e)))
        cli_error("sim anchors", "%s", e.msg);
    if (!run)
        json_decref(row);
    return !ok;
}

static int sim_anchors(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_run *run = NULL;
    struct lbs_sim_anchor an[LBS_SIM_ANCHORS_MAX];
    int na = 0, out_of_band = 0;
    /* --optim FILE: the SLAMB trace to use (default: the preset lookup) */
    int rc = lbs_sim_anchors(a->optim, an, &na, &e);
    if (rc) {
        cli_error("sim anchors", "%s", e.msg);
        return cli_exit_code(rc);
    }
    if ((rc = cli_open_run(&a->com, "sim_anchors", argc, argv, &run)))
        return cli_exit_code(rc);
    if (!a->com.json)
        printf("# published anchors beside lbscale's predictions (never "
               "tuned to them; 'band' gates `sim anchors --check`)\n"
               "# %-48s %9s %9s %7s %-12s %s\n", "anchor", "published",
               "lbscale", "ratio", "band", "");
    for (int i = 0; i < na && !rc; i++)
        out_of_band += emit_anchor(a, run, &an[i], &rc);
    if (!rc && !a->com.json)
        printf("# sources of the published figures: lbscale sim anchors "
               "--json (field source)\n");
    if (!rc && a->check && out_of_band) {
        cli_error("sim anchors", "%d anchor%s out of band", out_of_band,
                  out_of_band == 1 ? "" : "s");
        rc = -EIO;
    }
    lbs_run_close(run);
    return cli_exit_code(rc);
}

static int cmd_anchors(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        SIM_OPTIM_ROW(a, "the SLAMB trace of bert-xl (default:\n"
                         "<data>/traces/slamb-bert-xl*.jsonl)"),
        {.name = "check", .type = CLI_FLAG, .dst = &a->check,
         .help = "exit 1 when a prediction leaves its band"},
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim anchors",
        .usage = "usage: lbscale sim anchors [--optim SLAMB.jsonl] [--json]",
        .about = "Prints the published anchors (NVLink allreduce busbw on "
                 "8xA100\nand 8xH100, per-NIC bandwidth, SLAMB's 90% scaling "
                 "efficiency for\nBERT-XL on 1,024 A100s, from a SLAMB trace "
                 "of bert-xl: --optim FILE or\n<data>/traces/"
                 "slamb-bert-xl*.jsonl) beside what the presets predict.",
        .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_anchors(a, argc, argv);
}

/* ---- export: one simulated step as Chakra execution traces ------------ */

static int sim_export(const struct simargs *a, const char *dir,
                      const char *prefix, long ranks, int final)
{
    struct lbs_err e;
    struct point_in in = {0};
    int rc = point_load(a, &in, &e);
    if (!rc)
        rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "8", &in.P, &in.np, &e);
    if (!rc && (in.np != 1 || in.nent != 1))
        rc = lbs_err_set(&e, -EINVAL, "export takes one optimizer and one "
                         "GPU count (--optim, --gpus)");
    struct lbs_sim_opts o = sim_opts(a);
    char jsrc[LBS_SIM_FILE_MAX + 800];
    if (!rc) {
        job_source(a, in.m, in.pl, &o, jsrc, sizeof jsrc);
        o.optim_bytes_per_elem = in.ent[0].bpe;
        rc = point_check(a, &in, &o, &e);
    }
    long n = ranks > 0 ? ranks : (!rc ? in.P[0] : 1);
    if (!rc)
        rc = lbs_sim_chakra_export(in.pl, in.m,
                                   lbs_sim_entry_plan(&in.ent[0], in.P[0]),
                                   in.P[0], &o, final, dir, prefix, n, &e);
    if (rc)
        cli_error("sim export", "%s", e.msg);
    else if (!a->com.json)
        printf("# %s on %s, %s, %ld GPUs, %s step: %ld Chakra execution "
               "traces (schema 1.0.2-chakra.1.0.0) in %s/%s.<rank>.et\n",
               in.ent[0].name, in.pl->name, in.m->name, in.P[0],
               final ? "final-phase" : "first", n, dir, prefix);
    point_in_free(&in);
    return cli_exit_code(rc);
}

static int cmd_export(int argc, char **argv, struct simargs *a)
{
    const char *dir = NULL, *prefix = "et";
    long ranks = 0;
    int final = 0;
    const struct cli_opt opts[] = {
        {.name = "chakra", .type = CLI_STR, .dst = &dir, .arg = "DIR",
         .help = "write DIR/PREFIX.<rank>.et (DIR must not exist)"},
        {.name = "prefix", .type = CLI_STR, .dst = &prefix, .arg = "P",
         .help = "file name prefix (default et, as Chakra's converters)"},
        {.name = "ranks", .type = CLI_LONG, .dst = &ranks, .arg = "N",
         .lo = 1, .hi = 100000,
         .help = "files for ranks 0..N-1 only (default: every GPU)"},
        {.name = "final", .type = CLI_FLAG, .dst = &final,
         .help = "the final phase's step (1-bit LAMB's compressed one)\n"
                 "instead of the first"},
        SIM_SWEEP_ROWS(a), CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim export",
        .usage = "usage: lbscale sim export --chakra DIR --model M "
                 "--platform P --optim NAME [--gpus 8]",
        .about = "One simulated training step as MLCommons Chakra execution "
                 "traces (one\nfile per rank), for ASTRA-sim and the other "
                 "tools that replay them:\nforward, backward per layer, "
                 "every collective (comm_type, comm_size)\nwith the "
                 "dependencies the engine ran it with, neighbour exchanges "
                 "as\nsend/receive pairs, the optimizer step.  Schema: "
                 "sim/chakra/chakra_et.proto.",
        .opts = opts, .epilog = FILES_NOTE};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (!dir) {
        cli_error("sim export", "--chakra DIR is required");
        return EXIT_BAD_INPUT;
    }
    if (need_point_args(a, "sim export"))
        return EXIT_BAD_INPUT;
    return sim_export(a, dir, prefix, ranks, final);
}

/* ---- import: a Chakra trace's collectives as a trace-v1 plan ----------- */

static int cmd_import(int argc, char **argv, struct simargs *a)
{
    const char *file = NULL, *outp = NULL;
    long ranks = 0;
    const struct cli_opt opts[] = {
        {.name = "chakra", .type = CLI_STR, .dst = &file, .arg = "FILE",
         .help = "one rank's Chakra execution trace (.et)"},
        SIM_MODEL_ROW(a),
        {.name = "out", .type = CLI_CALL, .fn = cli_out_file, .dst = &outp,
         .arg = "TRACE",
         .help = "the trace-v1 file to write (must not exist)"},
        {.name = "ranks", .type = CLI_LONG, .dst = &ranks, .arg = "P",
         .lo = 1, .hi = 100000000,
         .help = "the rank count it was made for (default: the\n"
                 "metadata's \"gpus\")"},
        {0}};
    const struct cli_verb v = {
        .name = "sim import",
        .usage = "usage: lbscale sim import --chakra FILE --model M --out "
                 "TRACE.jsonl [--ranks P]",
        .about = "Reads the collectives of a Chakra execution trace "
                 "(comm_type, comm_size,\nthe layer whose backward node "
                 "each waits for) into a trace-v1 plan for\nmodel M, which "
                 "`sim sweep --optim TRACE.jsonl` replays.  Point-to-point\n"
                 "nodes are counted, not imported (trace-v1 has no peer "
                 "list).",
        .opts = opts};
    struct lbs_err e;
    struct lbs_sim_model *m = NULL;
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (!file || !a->model || !outp) {
        cli_error("sim import", "--chakra, --model and --out are required");
        return EXIT_BAD_INPUT;
    }
    if ((rc = lbs_sim_model_find(a->model, &m, &e))) {
        cli_error("sim import", "%s", e.msg);
        return cli_exit_code(rc);
    }
    int fd = open(outp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        cli_error("--out", "%s: %s%s", outp, strerror(errno),
                  errno == EEXIST ? " (give a new file)" : "");
        rc = errno == EEXIST || errno == ENOENT || errno == ELOOP ? -EINVAL
                                                                  : -EIO;
        if (fd >= 0)
            close(fd);
        lbs_sim_model_free(m);
        return cli_exit_code(rc);
    }
    size_t n = 0, skipped = 0;
    rc = lbs_sim_chakra_import(file, m, ranks, f, &n, &skipped, &e);
    if (fclose(f) && !rc)
        rc = lbs_err_set(&e, -EIO, "%s: %s", outp, strerror(errno));
    if (rc) {
        unlink(outp);       /* nothing partial */
        cli_error("sim import", "%s", e.msg);
    } else {
        printf("# %s: %zu collectives into %s (model %s)%s\n", file, n, outp,
               m->name, skipped ? "; point-to-point nodes not imported" : "");
        if (skipped)
            printf("# %zu point-to-point nodes skipped\n", skipped);
    }
    lbs_sim_model_free(m);
    return cli_exit_code(rc);
}

/* ---- validate: published end-to-end figures, none fitted -------------- */

static int sim_validate(const struct simargs *a, const char *manifest,
                        int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_run *run = NULL;
    struct lbs_sim_validation v;
    int rc = lbs_sim_validate(manifest, &v, &e);
    if (rc) {
        cli_error("sim validate", "%s", e.msg);
        return cli_exit_code(rc);
    }
    if ((rc = cli_open_run(&a->com, "sim_validate", argc, argv, &run))) {
        lbs_sim_validation_free(&v);
        return cli_exit_code(rc);
    }
    if (!a->com.json)
        printf("# published end-to-end figures beside lbscale's predictions "
               "(chosen and committed before any prediction; shown, not "
               "gated: docs/validation.md \"e\")\n"
               "# %-5s %-62s %9s %9s %7s %7s\n", "id", "figure", "published",
               "lbscale", "ratio", "error");
    for (size_t i = 0; i < v.n && !rc; i++) {
        const struct lbs_sim_vrow *r = &v.row[i];
        double ratio = r->predicted / r->published;
        json_t *row = json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
            "id", r->id, "what", r->what, "source", r->source,
            "published", r->published, "predicted", r->predicted,
            "ratio", ratio, "error", ratio - 1, "warmup", r->warmup,
            "num_iter_ms", r->num_s * 1e3, "den_iter_ms", r->den_s * 1e3);
        if (!row) {
            rc = lbs_err_set(&e, -ENOMEM, "out of memory");
            cli_error("sim validate", "%s", e.msg);
            break;
        }
        if (a->com.json)
            print_json(row);
        else
            printf("  %-5s %-62.62s %9.4g %9.4g %7.3f %+6.1f%%\n", r->id,
                   r->what, r->published, r->predicted, ratio,
                   100 * (ratio - 1));
        if (run && (rc = lbs_run_append(run, "sim_validate", row, &e)))
            cli_error("sim validate", "%s", e.msg);
        else if (!run)
            json_decref(row);
    }
    if (!rc && !a->com.json)
        printf("# %zu rows: geometric mean of |prediction/published - 1| "
               "%.1f%%, worst %.1f%% (%s)\n", v.n, 100 * v.gmean,
               100 * v.worst, v.row[v.worst_row].id);
    lbs_run_close(run);
    lbs_sim_validation_free(&v);
    return cli_exit_code(rc);
}

static int cmd_validate(int argc, char **argv, struct simargs *a)
{
    const char *manifest = NULL;
    const struct cli_opt opts[] = {
        {.name = "manifest", .type = CLI_STR, .dst = &manifest, .arg = "FILE",
         .help = "the rows to simulate (default:\n"
                 "<data>/validation/validation.json)"},
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim validate",
        .usage = "usage: lbscale sim validate [--manifest FILE] [--json]",
        .about = "Simulates every published end-to-end figure of the "
                 "validation list\n(docs/validation.md \"e\": throughput, "
                 "scaling efficiency and speedups\nof compressed optimizers "
                 "on Ethernet and InfiniBand clusters) and prints\neach "
                 "beside its published value, with the geometric mean of "
                 "the\nerrors and the worst row.  Shown, not gated: nothing "
                 "was fitted to it.",
        .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_validate(a, manifest, argc, argv);
}

/* ---- netsweep: efficiency against the network a node is sold with ------ */

static const char netsweep_about[] =
    "Scaling efficiency E = T(one node)/T(P) at one GPU count as the network\n"
    "bandwidth per node varies: every NIC of the platform runs at node_gbps /\n"
    "nics; NCCL's multi-node channels and point-to-point rate scale with it\n"
    "(the preset's ratio to the line rate kept, e.g. 24 of 25 GB/s on HDR);\n"
    "latencies, NVLink and the fat-tree stay.  Ends with, per optimizer, the\n"
    "lowest bandwidth at which E reaches 0.90 (log-linear interpolation).\n"
    "Reference points: 100 Gb/s (one 100 GbE NIC), 200 (one HDR NIC or two\n"
    "100 GbE), 400 (one NDR NIC), 1,600 (DGX A100: 8 x HDR), 3,200 (DGX\n"
    "H100: 8 x NDR).  Also takes sweep's --batch-per-gpu, --accum,\n"
    "--no-overlap, --no-slowdown, --grad-dtype, --bucket-mb.";

/* Every (entry, bandwidth) point into rows before anything is printed. */
static int netsweep_rows(const struct simargs *a, const struct point_in *in,
                         const long *B, size_t nb,
                         long P, long base_p, struct lbs_sim_opts *o,
                         json_t *rows, struct lbs_err *e)
{
    struct lbs_sim_result *res = calloc(nb, sizeof *res);
    double *eff = calloc(nb, sizeof *eff);
    int rc = res && eff ? 0 : lbs_err_set(e, -ENOMEM, "out of memory");
    char jsrc[LBS_SIM_FILE_MAX + 800];
    job_source(a, in->m, in->pl, o, jsrc, sizeof jsrc);
    for (size_t k = 0; k < in->nent && !rc; k++) {
        const struct lbs_sim_entry *en = &in->ent[k];
        o->optim_bytes_per_elem = en->bpe;
        rc = lbs_sim_netsweep(in->pl, in->m, en, P, base_p, B, nb, o, res,
                              eff, e);
        for (size_t i = 0; i < nb && !rc; i++) {
            const struct lbs_sim_result *r = &res[i];
            json_t *row = json_pack("{s:s,s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:f,"
                                    "s:f,s:s}", "optim", en->name, "model",
                in->m->name, "platform", in->pl->name, "gpus", (json_int_t)P,
                "node_gbps", (json_int_t)B[i], "iter_ms", r->iter * 1e3,
                "exposed_comm_ms", r->exposed * 1e3, "compute_ms",
                r->compute * 1e3, "scaling_efficiency", eff[i],
                "bytes_per_gpu", r->bytes, "plan", en->source);
            if (row)
                json_object_set_new(row, "job_source", json_string(jsrc));
            if (!row || json_array_append_new(rows, row))
                rc = lbs_err_set(e, -ENOMEM, "out of memory");
        }
    }
    free(res);
    free(eff);
    return rc;
}

static void print_netsweep_row(const json_t *row)
{
    printf("  %-12s %10.0f %9.2f %9.2f %6.3f\n",
           json_string_value(json_object_get(row, "optim")),
           NUM(row, "node_gbps"), NUM(row, "iter_ms"),
           NUM(row, "exposed_comm_ms"), NUM(row, "scaling_efficiency"));
}

/* Per optimizer: the bandwidth where E first reaches 0.90. */
static void print_reaches(const struct point_in *in, json_t *rows)
{
    size_t n = json_array_size(rows);
    double *b = calloc(n ? n : 1, sizeof *b), *ef = calloc(n ? n : 1,
                                                           sizeof *ef);
    for (size_t k = 0; b && ef && k < in->nent; k++) {
        size_t i, m = 0;
        json_t *row;
        json_array_foreach(rows, i, row) {
            if (strcmp(json_string_value(json_object_get(row, "optim")),
                       in->ent[k].name))
                continue;
            b[m] = NUM(row, "node_gbps");
            ef[m++] = NUM(row, "scaling_efficiency");
        }
        double at = lbs_sim_eff_reaches(b, ef, m, 0.90);
        if (isnan(at))
            printf("# %-12s E < 0.90 over the whole range\n",
                   in->ent[k].name);
        else
            printf("# %-12s E reaches 0.90 at %.0f Gb/s per node\n",
                   in->ent[k].name, at);
    }
    free(b);
    free(ef);
}

/* netsweep's inputs: the point's, then --gpus (one count) and
 * --node-gbps. */
static int netsweep_load(const struct simargs *a, struct point_in *in,
                         long **B, size_t *nb, struct lbs_err *e)
{
    int rc = point_load(a, in, e);
    if (!rc) rc = lbs_sim_parse_gpus(a->gpus ? a->gpus : "1024", &in->P,
                                     &in->np, e);
    if (!rc) rc = lbs_sim_parse_gpus(a->node_gbps ? a->node_gbps
                                                  : "25..3200", B, nb, e);
    if (rc) {
        /* the list parser speaks of --gpus; the bad list may be this one */
        int bw = !strncmp(e->msg, "--gpus", 6) && in->P && !*B;
        cli_error("sim netsweep", "%s%s", bw ? "--node-gbps" : "",
                  bw ? e->msg + 6 : e->msg);
        return rc;
    }
    if (in->np != 1) {
        cli_error("sim netsweep", "--gpus: one GPU count");
        return -EINVAL;
    }
    return 0;
}

static int sim_netsweep(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct point_in in = {0};
    struct lbs_run *run = NULL;
    json_t *rows = json_array();
    size_t nb = 0;
    long *B = NULL;
    int rc;
    if (need_point_args(a, "sim netsweep")) {
        json_decref(rows);
        return EXIT_BAD_INPUT;
    }
    if ((rc = netsweep_load(a, &in, &B, &nb, &e)))
        goto out;
    long P = in.P[0], base_p = in.pl->gpus_per_node < in.pl->max_gpus
                                   ? in.pl->gpus_per_node : in.pl->max_gpus;
    struct lbs_sim_opts o = sim_opts(a);
    if ((rc = netsweep_rows(a, &in, B, nb, P, base_p, &o, rows, &e))) {
        cli_error("sim netsweep", "%s", e.msg);
        goto out;
    }
    if ((rc = cli_open_run(&a->com, "sim_netsweep", argc, argv, &run)))
        goto out;
    if (!a->com.json)
        printf("# %s on %s at %ld GPUs: scaling efficiency (T(%ld GPUs) / "
               "T(%ld)) against the network bandwidth per node\n"
               "# %-12s %10s %9s %9s %6s\n", in.m->name, in.pl->name, P,
               base_p, P, "optim", "Gb/s/node", "iter(ms)", "exposed", "eff");
    rc = emit_rows(a, run, "sim_netsweep", "sim netsweep", rows,
                   print_netsweep_row);
    if (!rc && !a->com.json)
        print_reaches(&in, rows);
out:
    json_decref(rows);
    lbs_run_close(run);
    free(B);
    point_in_free(&in);
    return cli_exit_code(rc);
}

static int cmd_netsweep(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        SIM_SWEEP_ROWS(a),
        {.name = "node-gbps", .type = CLI_STR, .dst = &a->node_gbps,
         .arg = "LIST",
         .help = "Gb/s per node: 100,400 or A..B (powers of two from A)"},
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim netsweep",
        .usage = "usage: lbscale sim netsweep --model M --platform P --optim "
                 "LIST\n                            [--gpus 1024] "
                 "[--node-gbps 25..3200] [--json]",
        .about = netsweep_about, .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_netsweep(a, argc, argv);
}

/* ---- speed ------------------------------------------------------------- */

/* The peak resident set of this process (getrusage: KiB on Linux). */
static double peak_rss_mib(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) ? NAN : (double)ru.ru_maxrss / 1024;
}

static json_t *speed_row(const struct lbs_sim_speed *sp,
                         const struct cli_stats *st,
                         const struct cli_stats *sws)
{
    json_t *row = json_pack("{s:s,s:s,s:s,s:i,s:f,s:f,s:b,s:i,s:i,s:f,s:f,"
                            "s:b}", "bench", "sim_speed", "model", sp->model,
                            "platform", sp->platform, "step_gpus", 1024,
                            "step_ms_median", st->median * 1e3, "step_ms_max",
                            st->max * 1e3, "step_ok_1ms", st->median <= 1e-3,
                            "sweep_optims", (int)sp->nent, "sweep_scales",
                            (int)sp->ncost, "sweep_s_median", sws->median,
                            "sweep_s_max", sws->max, "sweep_ok_2s",
                            sws->median <= 2.0);
    json_t *growth = json_array();
    for (size_t i = 0; i < sp->ncost; i++) {
        const struct lbs_sim_speed_cost *c = &sp->cost[i];
        json_array_append_new(growth, json_pack("{s:I,s:f,s:f,s:f,s:f,s:f}",
            "gpus", (json_int_t)c->gpus, "net_init_ns", c->net_init * 1e9,
            "allreduce_ns", c->coll[0] * 1e9, "allgather_ns", c->coll[1] * 1e9,
            "alltoall_ns", c->coll[2] * 1e9, "neighbor_ns", c->coll[3] * 1e9));
    }
    json_object_set_new(row, "cost_vs_gpus", growth);
    json_object_set_new(row, "sweep_max_gpus", json_integer(sp->top_gpus));
    json_object_set_new(row, "peak_rss_mib", json_real(peak_rss_mib()));
    return row;
}

static void print_speed(const struct lbs_sim_speed *sp,
                        const struct cli_stats *st,
                        const struct cli_stats *sws)
{
    int ok_step = st->median <= 1e-3, ok_sweep = sws->median <= 2.0;
    printf("# simulator speed (%s, %s)\n"
           "  one %s step at 1,024 GPUs: %.3f ms median (max %.3f) %s\n"
           "  sweep %zu optimizers x %zu scales (8..%ld, loading "
           "included): %.3f s median (max %.3f) %s\n"
           "  peak resident memory of this process: %.1f MiB %s\n"
           "# cost of one collective vs P (ns per call; closed forms, "
           "O(log P) at most)\n  %6s %10s %10s %10s %10s %10s\n",
           sp->model, sp->platform, sp->step_optim, st->median * 1e3,
           st->max * 1e3, ok_step ? "(<= 1 ms: ok)" : "(> 1 ms: SLOW)",
           sp->nent, sp->ncost, sp->top_gpus, sws->median, sws->max,
           ok_sweep ? "(<= 2 s: ok)" : "(> 2 s: SLOW)", peak_rss_mib(),
           peak_rss_mib() <= 100 ? "(<= 100 MiB: ok)" : "(> 100 MiB: BIG)",
           "gpus", "net_init",
           "allreduce", "allgather", "alltoall", "neighbor");
    for (size_t i = 0; i < sp->ncost; i++) {
        const struct lbs_sim_speed_cost *c = &sp->cost[i];
        printf("  %6ld %10.0f %10.0f %10.0f %10.0f %10.0f\n", c->gpus,
               c->net_init * 1e9, c->coll[0] * 1e9, c->coll[1] * 1e9,
               c->coll[2] * 1e9, c->coll[3] * 1e9);
    }
}

static int sim_speed(const struct simargs *a, int argc, char **argv)
{
    struct lbs_err e;
    struct lbs_run *run = NULL;
    struct lbs_sim_speed sp;
    /* every optimizer lbscale implements: data-parallel ones by their
     * contract, the others by their recorded traces */
    const struct lbs_sim_speed_in in = {
        .model = a->model ? a->model : "bert-large",
        .platform = a->platform ? a->platform : "dgx-h100",
        .optims = a->optim ? a->optim
            : "sgd,lars,lamb,adamw,slamb,onebit_lamb,jointspar,"
              "jointspar_lars,dmsgd,decentlam"};
    int rc = lbs_sim_speed(&in, &sp, &e);
    if (rc) {
        cli_error("sim speed", "%s", e.msg);
        return cli_exit_code(rc);
    }
    if (!(rc = cli_open_run(&a->com, "sim_speed", argc, argv, &run))) {
        struct cli_stats st = cli_stats(sp.step_s, LBS_SIM_SPEED_STEPS);
        struct cli_stats sws = cli_stats(sp.sweep_s, LBS_SIM_SPEED_SWEEPS);
        json_t *row = speed_row(&sp, &st, &sws);
        if (a->com.json)
            print_json(row);
        else
            print_speed(&sp, &st, &sws);
        if (run && (rc = lbs_run_append(run, "sim_speed", row, &e)))
            cli_error("sim speed", "%s", e.msg);
        else if (!run)
            json_decref(row);
    }
    lbs_run_close(run);
    lbs_sim_speed_free(&sp);
    return cli_exit_code(rc);
}

static int cmd_speed(int argc, char **argv, struct simargs *a)
{
    const struct cli_opt opts[] = {
        SIM_MODEL_ROW(a), SIM_PLATFORM_ROW(a),
        SIM_OPTIM_ROW(a, "optimizers (default: every one lbscale\n"
                         "implements)"),
        CLI_COMMON_OPTS(&a->com), {0}};
    const struct cli_verb v = {
        .name = "sim speed",
        .usage = "usage: lbscale sim speed [--model M] [--platform P] "
                 "[--optim LIST] [--json]",
        .about = "Times one step at 1,024 GPUs, a sweep over 12 scales, and "
                 "the cost of\none collective as P grows.",
        .opts = opts};
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_speed(a, argc, argv);
}

/* ---- calibrate --------------------------------------------------------- */

static const char calib_about[] =
    "Fits the alpha-beta constants of a machine or cluster from measured\n"
    "collectives and writes a platform file, usable as --platform FILE.\n"
    "Without --out it goes into a new run directory (results/<run>/\n"
    "platform-NAME.json; the root from $LBSCALE_RESULTS), never into the\n"
    "source tree.  Inputs (each a regular file of at most 256 MiB; the\n"
    "format is recognised from the content):\n"
    "  lbscale coll JSONL  rows {coll, ranks, bytes, time_us or\n"
    "                      time_us_median; optional nodes, ranks_per_node,\n"
    "                      wrong, bench}\n"
    "  nccl-tests output   the text table (every version's columns, found by\n"
    "                      name: out-of-place time; rows with #wrong > 0\n"
    "                      skipped; must end with '# Avg bus bandwidth'),\n"
    "                      or the JSON of -J FILE; ranks and nodes from its\n"
    "                      '#  Rank N ... on HOST' lines / devices\n"
    "  OSU latency table   osu_allreduce, osu_allgather(v), osu_alltoall,\n"
    "                      osu_bcast, osu_barrier ('# Size  Avg\n"
    "                      Latency(us)'): give --ranks (and --ranks-per-node)\n"
    "Sizes become lbscale's per-rank payload (trace-v1): nccl-tests\n"
    "allgather size / P; OSU alltoall size x P.  Collectives without a\n"
    "fitted form (reduce_scatter, reduce, neighbor, compressed patterns),\n"
    "rows with 1 rank and rows with wrong elements are skipped.\n"
    "Model (ring forms; steps and volume per collective as in sim/README.md):\n"
    "  t = base + steps (hop + [step message > eager_max] rndv)\n"
    "      + volume / bw(coll) + [allreduce] (P-1)/P bytes / reduce_bw\n"
    "fitted apart to the rows of one node (the link inside a node) and to\n"
    "the rows of several nodes (the network: the ring's exit from a node,\n"
    "written as the node's NIC rate and the inter-node step latency).\n"
    "eager_max (MPI's eager limit) and reduce_bw are fitted when the data\n"
    "supports them.  Prints two held-out errors per fit (every other message\n"
    "size; each rank count from the others) and how well the written\n"
    "platform, priced by the simulator itself, reproduces every sample.\n"
    "The cluster: --gpus-per-node (default the ranks per node measured),\n"
    "--nodes (default the most nodes measured) and --fabric describe the\n"
    "machine to simulate, so max_gpus = nodes x gpus-per-node.  Each input's\n"
    "path, format, CRC-32 and size are recorded in calibration.inputs.\n"
    "GPU measurements (nccl-tests): --nccl-model BASE fits NCCL's own\n"
    "model instead, over a GPU preset of the same kind (sim list): one\n"
    "factor on the node's links (intra graph bandwidth per channel) from\n"
    "one-node rows and one on the network (inter graph, p2p, NICs) from\n"
    "rows of several nodes, least squares on log time; NCCL 2.21.5's\n"
    "latencies and protocol rules are kept, and the error of the base and\n"
    "of the fit on every row, and held-out sizes, are printed.";

struct calib_args {
    const char *out, *name, *coll;
    const char *nccl_base;        /* --nccl-model BASE: fit over a preset */
    double peak, mem;
    size_t blo, bhi;
    long nodes, gpn, ranks, rpn;
    const char *fabric;           /* "flat" or "fat-tree" */
    long leaf;
    double oversub, spine_us;
    struct cli_common com;        /* the run directory without --out */
    int argc;
    char **argv;
};

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

/* --bytes LO..HI (dst: struct calib_args) */
static int range_opt(const char *opt, const char *v, void *dst)
{
    struct calib_args *c = dst;
    return parse_range(opt, v, &c->blo, &c->bhi);
}

/* --fabric flat | fat-tree:nodes_per_leaf=L[,oversubscription=R]
 * [,lat_spine_us=X] (the platform's own field names; dst: calib_args) */
static int fabric_opt(const char *opt, const char *v, void *dst)
{
    struct calib_args *c = dst;
    char buf[256];
    if (!v || !strcmp(v, "flat")) {
        c->fabric = "flat";
        return 0;
    }
    if (strncmp(v, "fat-tree:", 9) || strlen(v) >= sizeof buf) {
        cli_error(opt, "'%s': give flat or fat-tree:nodes_per_leaf=L"
                  "[,oversubscription=R][,lat_spine_us=X]", v);
        return -EINVAL;
    }
    snprintf(buf, sizeof buf, "%s", v + 9);
    c->fabric = "fat-tree";
    c->leaf = 0;
    c->oversub = 1;
    c->spine_us = 0;
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '='), *end;
        double x = eq ? strtod(eq + 1, &end) : NAN;
        int okv = eq && end != eq + 1 && !*end && isfinite(x);
        if (okv && !strncmp(kv, "nodes_per_leaf=", 15) && x >= 1 &&
            x <= 1e9 && x == floor(x))
            c->leaf = (long)x;
        else if (okv && !strncmp(kv, "oversubscription=", 17) && x >= 1 &&
                 x <= 1000)
            c->oversub = x;
        else if (okv && !strncmp(kv, "lat_spine_us=", 13) && x >= 0 &&
                 x <= 1e6)
            c->spine_us = x;
        else {
            cli_error(opt, "'%s': unknown or out-of-range '%s' (nodes_per_"
                      "leaf 1..1e9, oversubscription 1..1000, lat_spine_us "
                      "0..1e6)", v, kv);
            return -EINVAL;
        }
    }
    if (!c->leaf) {
        cli_error(opt, "'%s': a fat-tree needs nodes_per_leaf=L", v);
        return -EINVAL;
    }
    return 0;
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

static void print_fit(const char *lead, const struct lbs_sim_fit *fit,
                      const char *per)
{
    printf("%s: base %.2f us, per step %.3f us, bandwidth %.3f GB/s %s\n",
           lead, fit->base_lat * 1e6, fit->hop_lat * 1e6, fit->bw / 1e9,
           per);
    if (fit->eager_max > 0 && fit->rndv_lat > 0)
        printf("  rendezvous: +%.3f us per step above %.0f bytes\n",
               fit->rndv_lat * 1e6, fit->eager_max);
    printf("  per collective (GB/s):");
    for (int k = 0; k < LBS_COLL_COUNT; k++)
        if (k != LBS_COLL_ALLGATHERV && fit->coll_bw[k] > 0)
            printf(" %s %.3f", lbs_coll_name(k), fit->coll_bw[k] / 1e9);
    printf("\n");
    if (fit->reduce_bw > 0)
        printf("  reduction: %.3f GB/s\n", fit->reduce_bw / 1e9);
    print_heldout("  held-out sizes", &fit->sizes, "fewer than 6 samples");
    print_heldout("  held-out rank counts", &fit->ranks,
                  "samples at one rank count only");
}

/* The memory bandwidth: --mem-bw-gbs, else STREAM's triad now. */
static int calib_mem(struct calib_args *c, int *measured)
{
    struct stream_result sr;
    *measured = 0;
    if (c->mem > 0)
        return 0;
    if (stream_measure(16000000, 3, &sr) || sr.wrong) {
        cli_error("sim calibrate", "STREAM measurement failed; give "
                  "--mem-bw-gbs");
        return -EIO;
    }
    c->mem = sr.triad_gbps;
    *measured = 1;
    return 0;
}

/* The samples of one node (nodes <= 1) or of several, and their fit. */
struct calib_class {
    struct lbs_sim_sample *s;
    size_t n;
    struct lbs_sim_fit fit;
    long most_ranks, most_rpn, most_nodes;
};

static int calib_class_fit(struct calib_class *k, const char *what)
{
    struct lbs_err e;
    if (!k->n)
        return 0;
    int rc = lbs_sim_fit(k->s, k->n, &k->fit, &e);
    if (rc)
        cli_error("sim calibrate", "%s: %s", what, e.msg);
    return rc;
}

/* Split the samples by node count and fit each class present. */
static int calib_split(const struct lbs_sim_samples *set,
                       struct calib_class *one, struct calib_class *multi)
{
    *one = (struct calib_class){0};
    *multi = (struct calib_class){0};
    one->s = malloc((set->n + 1) * sizeof *one->s);
    multi->s = malloc((set->n + 1) * sizeof *multi->s);
    if (!one->s || !multi->s) {
        cli_error("sim calibrate", "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < set->n; i++) {
        const struct lbs_sim_sample *x = &set->s[i];
        struct calib_class *k = x->nodes > 1 ? multi : one;
        long rpn = x->rpn > 0 ? x->rpn : x->ranks;
        k->s[k->n++] = *x;
        k->most_ranks = x->ranks > k->most_ranks ? x->ranks : k->most_ranks;
        k->most_rpn = rpn > k->most_rpn ? rpn : k->most_rpn;
        k->most_nodes = x->nodes > k->most_nodes ? x->nodes : k->most_nodes;
    }
    if (!one->n && !multi->n) {
        cli_error("sim calibrate", "calibration needs at least 2 usable "
                  "samples (ranks >= 2, time > 0), got 0");
        return -EINVAL;
    }
    int rc = calib_class_fit(one, "the rows of one node");
    if (!rc && multi->n && one->n) {
        /* the node's own constants known: fit only the network's */
        struct lbs_err e;
        if ((rc = lbs_sim_fit_net(multi->s, multi->n, &one->fit,
                                  &multi->fit, &e)))
            cli_error("sim calibrate", "the rows of several nodes: %s",
                      e.msg);
    } else if (!rc) {
        rc = calib_class_fit(multi, "the rows of several nodes");
    }
    return rc;
}

/* GPUs per node and nodes of the written platform, checked against what
 * was measured. */
static int calib_layout(const struct calib_args *c,
                        const struct calib_class *one,
                        const struct calib_class *multi, long *gpn,
                        long *nodes, char *note, size_t nl)
{
    long need = multi->n ? multi->most_rpn : 0;
    if (one->most_ranks > need)
        need = one->most_ranks;
    *gpn = c->gpn ? c->gpn : multi->n ? multi->most_rpn : one->most_ranks;
    *nodes = c->nodes ? c->nodes : multi->n ? multi->most_nodes : 1;
    if (*gpn < need) {
        cli_error("--gpus-per-node", "%ld is fewer than the %ld ranks one "
                  "node ran in the measurements", *gpn, need);
        return -EINVAL;
    }
    if (multi->n && *nodes < multi->most_nodes) {
        cli_error("--nodes", "%ld is fewer than the %ld nodes measured",
                  *nodes, multi->most_nodes);
        return -EINVAL;
    }
    snprintf(note, nl, "%ld node(s) x %ld GPU(s) per node: nodes %s, GPUs "
             "per node %s", *nodes, *gpn, c->nodes ? "given (--nodes)"
             : multi->n ? "as measured" : "one (no multi-node rows)",
             c->gpn ? "given (--gpus-per-node)" : multi->n
             ? "the ranks per node measured" : "the most ranks measured");
    return 0;
}

static int cmp_rel(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* How well the written platform, priced by the simulator, reproduces the
 * samples whose layout it holds (P GPUs as P/g nodes of g). */
static void calib_check(const char *text, const char *path,
                        const struct lbs_sim_samples *set)
{
    struct lbs_sim_platform *pl;
    struct lbs_err e;
    double *re = malloc((set->n + 1) * sizeof *re);
    size_t n = 0;
    if (!re || lbs_sim_platform_parse(text, path, &pl, &e)) {
        free(re);
        return;
    }
    for (size_t i = 0; i < set->n; i++) {
        const struct lbs_sim_sample *x = &set->s[i];
        struct lbs_sim_net net;
        long nodes = x->nodes > 1 ? x->nodes : 1;
        if (lbs_sim_net_init(&net, pl, x->ranks, &e) || net.N != nodes)
            continue;
        double t = lbs_sim_coll_cost(&net, x->coll, x->bytes,
                                     LBS_TOPO_RING, 1).t;
        if (isfinite(t))
            re[n++] = fabs(t - x->t) / x->t;
    }
    lbs_sim_platform_free(pl);
    if (n) {
        qsort(re, n, sizeof *re, cmp_rel);
        printf("the written platform (lbscale sim coll) on %zu of %zu "
               "samples: median %.1f%%, worst %.1f%%\n", n, set->n,
               100 * re[n / 2], 100 * re[n - 1]);
    }
    free(re);
}

/* Read every input: samples, and each file's provenance. */
static int calib_read(const struct calib_args *c, char **files, int nfiles,
                      struct lbs_sim_samples *set,
                      struct lbs_sim_calib_file *src, char (*sum)[24])
{
    const struct lbs_sim_samples_in in = {c->coll, c->ranks, c->rpn};
    for (int i = 0; i < nfiles; i++) {
        struct lbs_err e;
        char *text;
        size_t len, rows;
        enum lbs_sim_samples_fmt fmt;
        int rc = lbs_read_file(files[i], LBS_SIM_SAMPLES_MAX_BYTES, &text,
                               &len, &e);
        if (!rc) {
            snprintf(sum[i], sizeof sum[i], "crc32:%08lx",
                     crc32(0L, (const Bytef *)text, (uInt)len));
            rc = lbs_sim_samples_parse(files[i], text, len, &in, set, &fmt,
                                       &rows, &e);
            free(text);
        }
        if (rc) {
            cli_error("sim calibrate", "%s", e.msg);
            return rc;
        }
        src[i] = (struct lbs_sim_calib_file){files[i],
            lbs_sim_samples_fmt_name(fmt), sum[i], len, rows};
    }
    return 0;
}

/* Where the platform goes: --out FILE, else a new run directory (opened
 * only now, once the input is known good). */
static int calib_path(struct calib_args *c, struct lbs_run **run,
                      char *path, size_t pl)
{
    *run = NULL;
    if (c->out) {
        snprintf(path, pl, "%s", c->out);
        return 0;
    }
    int rc = cli_open_run(&c->com, "sim_calibrate", c->argc, c->argv, run);
    if (rc)
        return rc;
    snprintf(path, pl, "%s/platform-%s.json", lbs_run_dir(*run), c->name);
    return 0;
}

struct calib_ctx {
    struct calib_args *c;
    struct lbs_run *run;
};

static int calib_path_of(void *ctx, char *path, size_t len)
{
    struct calib_ctx *x = ctx;
    return calib_path(x->c, &x->run, path, len);
}

/* --nccl-model: the NCCL-model fit over a GPU preset (sim_calib_nccl.c) */
static int calib_nccl(struct calib_args *c, struct lbs_sim_samples *set,
                      char **files, const struct lbs_sim_calib_file *src,
                      size_t nfiles)
{
    const struct calib_nccl_in in = {c->nccl_base, c->gpn, c->nodes};
    const struct lbs_sim_calibrated doc = {
        .name = c->name, .files = (const char *const *)files,
        .nfiles = nfiles, .skipped = set->skipped, .src = src};
    struct calib_ctx x = {c, NULL};
    int rc = calib_write_nccl(&in, set, &doc, calib_path_of, &x);
    lbs_run_close(x.run);
    return rc;
}

/* Fit, write the platform and say what it holds. */
static int calib_write(struct calib_args *c, struct lbs_sim_samples *set,
                       char **files, const struct lbs_sim_calib_file *src,
                       size_t nfiles)
{
    struct lbs_err e;
    struct calib_class one, multi;
    char note[256], path[1024];
    long gpn = 0, nodes = 0;
    int rc = calib_split(set, &one, &multi), measured = 0;
    if (!rc)
        rc = calib_layout(c, &one, &multi, &gpn, &nodes, note, sizeof note);
    if (!rc)
        rc = calib_mem(c, &measured);
    const struct lbs_sim_fit *prim = one.n ? &one.fit : &multi.fit;
    const struct lbs_sim_calibrated doc = {
        .fit = prim, .name = c->name, .files = (const char *const *)files,
        .nfiles = nfiles, .skipped = set->skipped, .ranks = gpn,
        .peak_tflops = c->peak, .mem_bw_gbs = c->mem,
        .mem_measured = measured, .inter = multi.n ? &multi.fit : NULL,
        .src = src, .gpus_per_node = gpn, .nodes = nodes,
        .fabric = c->fabric, .nodes_per_leaf = c->leaf,
        .oversub = c->oversub, .lat_spine_us = c->spine_us,
        .cluster_note = note};
    char *text = NULL;
    size_t len;
    struct lbs_run *run = NULL;
    if (!rc && (rc = lbs_sim_platform_calibrated(&doc, c->out ? c->out
                                                 : "platform", &text, &len,
                                                 &e)))
        cli_error("sim calibrate", "%s", e.msg);
    if (!rc)
        rc = calib_path(c, &run, path, sizeof path);
    if (!rc && (rc = lbs_write_atomic(path, text, len, &e)))
        cli_error("sim calibrate", "%s", e.msg);
    if (!rc) {
        if (one.n)
            print_fit("calibrated one node", &one.fit, "per rank");
        if (multi.n)
            print_fit("calibrated across nodes", &multi.fit,
                      "per node (the ring's exit)");
        printf("calibrated %s from %zu samples (%zu skipped; %zu of one "
               "node, %zu of several)\ncluster: %s; max_gpus %ld; fabric "
               "%s\n", c->name, one.n + multi.n, set->skipped, one.n,
               multi.n, note, gpn * nodes, c->fabric);
        calib_check(text, path, set);
        printf("wrote %s\n", path);
    }
    lbs_run_close(run);
    free(text);
    free(one.s);
    free(multi.s);
    return rc;
}

static int sim_calibrate(struct calib_args *c, char **files, int nfiles)
{
    struct lbs_sim_samples set = {0};
    struct lbs_sim_calib_file *src = calloc((size_t)nfiles + 1, sizeof *src);
    char (*sum)[24] = calloc((size_t)nfiles + 1, sizeof *sum);
    int rc = src && sum ? 0 : -ENOMEM;
    if (rc)
        cli_error("sim calibrate", "out of memory");
    if (!rc && !nfiles) {
        cli_error("sim calibrate", "give one or more files of measurements "
                  "(see --help)");
        rc = -EINVAL;
    }
    for (const char *ch = c->name; !rc && *ch; ch++)
        if (!(*ch == '-' || *ch == '_' || (*ch >= '0' && *ch <= '9') ||
              (*ch >= 'a' && *ch <= 'z'))) {
            cli_error("--name", "'%s': use a-z 0-9 - _", c->name);
            rc = -EINVAL;
        }
    if (!rc && c->coll && lbs_coll_from_name(c->coll) < 0) {
        cli_error("--coll", "'%s': not a collective (allreduce, allgather, "
                  "alltoall, bcast, barrier)", c->coll);
        rc = -EINVAL;
    }
    if (!rc)
        rc = calib_read(c, files, nfiles, &set, src, sum);
    /* --bytes: keep one regime (e.g. messages that stay in cache) */
    if (!rc) {
        lbs_sim_samples_keep_bytes(&set, (double)c->blo, (double)c->bhi);
        rc = c->nccl_base ? calib_nccl(c, &set, files, src, (size_t)nfiles)
                          : calib_write(c, &set, files, src, (size_t)nfiles);
    }
    lbs_sim_samples_free(&set);
    free(src);
    free(sum);
    return cli_exit_code(rc);
}

static int cmd_calibrate(int argc, char **argv, struct simargs *unused)
{
    struct calib_args c = {.name = "local", .bhi = SIZE_MAX,
                           .fabric = "flat", .com = {.save = 1},
                           .argc = argc, .argv = argv};
    const struct cli_opt opts[] = {
        {.name = "out", .type = CLI_CALL, .fn = cli_out_file, .dst = &c.out,
         .arg = "FILE",
         .help = "where to write the platform (default: a new run\n"
                 "directory, results/<run>/platform-NAME.json)"},
        {.name = "name", .type = CLI_STR, .dst = &c.name, .arg = "NAME",
         .help = "the platform's name (default local; a-z 0-9 - _)"},
        {.name = "bytes", .type = CLI_CALL, .fn = range_opt, .dst = &c,
         .arg = "MIN..MAX",
         .help = "only rows whose bytes lie in the range (one regime:\n"
                 "e.g. messages that stay in cache); either side may be\n"
                 "left empty"},
        {.name = "nodes", .type = CLI_LONG, .dst = &c.nodes, .arg = "N",
         .lo = 1, .hi = 1e8,
         .help = "nodes of the cluster to simulate (default: the most\n"
                 "nodes measured, else 1)"},
        {.name = "gpus-per-node", .type = CLI_LONG, .dst = &c.gpn,
         .arg = "G", .lo = 1, .hi = 65536,
         .help = "GPUs (ranks) per node (default: the ranks per node\n"
                 "measured)"},
        {.name = "fabric", .type = CLI_CALL, .fn = fabric_opt, .dst = &c,
         .arg = "SPEC",
         .help = "flat (default) or fat-tree:nodes_per_leaf=L\n"
                 "[,oversubscription=R][,lat_spine_us=X]"},
        {.name = "ranks", .type = CLI_LONG, .dst = &c.ranks, .arg = "P",
         .lo = 1, .hi = 1e8,
         .help = "rank count of inputs that do not state it (OSU)"},
        {.name = "ranks-per-node", .type = CLI_LONG, .dst = &c.rpn,
         .arg = "R", .lo = 1, .hi = 65536,
         .help = "ranks per node of such inputs (default: all on one)"},
        {.name = "coll", .type = CLI_STR, .dst = &c.coll, .arg = "C",
         .help = "the collective of nccl-tests output that does not name\n"
                 "it (allreduce, allgather, alltoall, bcast)"},
        {.name = "nccl-model", .type = CLI_STR, .dst = &c.nccl_base,
         .arg = "BASE",
         .help = "GPU measurements: fit NCCL's model over the GPU preset\n"
                 "BASE (e.g. dgx-h100): its bandwidth per channel inside a\n"
                 "node and across nodes; latencies stay NCCL's"},
        {.name = "peak-tflops", .type = CLI_DOUBLE, .dst = &c.peak,
         .arg = "X", .lo = 1e-6, .hi = 1e6,
         .help = "compute peak per rank for the platform (default 1,\n"
                 "marked as assumed)"},
        {.name = "mem-bw-gbs", .type = CLI_DOUBLE, .dst = &c.mem, .arg = "X",
         .lo = 1e-6, .hi = 1e6,
         .help = "memory bandwidth (default: STREAM triad measured now)"},
        {0}};
    const struct cli_verb v = {
        .name = "sim calibrate",
        .usage = "usage: lbscale sim calibrate FILE... [--out FILE] "
                 "[--name local]\n"
                 "                             [--nodes N] [--gpus-per-node "
                 "G] [--fabric SPEC]\n"
                 "                             [--ranks P] [--ranks-per-node "
                 "R] [--coll C]\n"
                 "                             [--bytes MIN..MAX] "
                 "[--peak-tflops X]\n"
                 "                             [--mem-bw-gbs X] "
                 "[--nccl-model BASE]",
        .about = calib_about, .opts = opts};
    char **files;
    int nfiles;
    (void)unused;
    int rc = cli_parse(&v, argc - 1, argv + 1, &files, &nfiles);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_calibrate(&c, files, nfiles);
}

/* ---- list -------------------------------------------------------------- */

static int sim_list(int json)
{
    static const char *const kinds[][2] = {{"platforms", ".json"},
                                           {"models", ".json"},
                                           {"traces", ".jsonl"}};
    json_t *o = json_pack("{s:s}", "data", lbs_sim_data_dir());
    for (int k = 0; k < 3; k++) {
        char **names = lbs_sim_preset_names(kinds[k][0], kinds[k][1]);
        json_t *arr = json_array();
        for (size_t i = 0; names && names[i]; i++)
            json_array_append_new(arr, json_string(names[i]));
        lbs_sim_names_free(names);
        json_object_set_new(o, kinds[k][0], arr);
    }
    /* the optimizers planned without a trace, as core's props say */
    json_t *dp = json_array();
    for (const char *const *n = lbs_optim_names(); *n; n++)
        if (lbs_sim_is_data_parallel(*n))
            json_array_append_new(dp, json_string(*n));
    json_object_set_new(o, "data_parallel", dp);
    if (json) {
        print_json(o);
    } else {
        for (int k = 0; k < 3; k++) {
            size_t i;
            json_t *x;
            printf("%s (%s/%s):\n", kinds[k][0], lbs_sim_data_dir(),
                   kinds[k][0]);
            json_array_foreach(json_object_get(o, kinds[k][0]), i, x)
                printf("  %s\n", json_string_value(x));
        }
        size_t i;
        json_t *x;
        printf("data-parallel optimizers (no trace needed):\n");
        json_array_foreach(dp, i, x)
            printf("  %s\n", json_string_value(x));
    }
    json_decref(o);
    return 0;
}

static int cmd_list(int argc, char **argv, struct simargs *unused)
{
    int json = 0;
    const struct cli_opt opts[] = {
        {.name = "json", .type = CLI_FLAG, .dst = &json,
         .help = "one JSON object: {\"data\", \"platforms\", \"models\", "
                 "\"traces\", \"data_parallel\"}"},
        {0}};
    const struct cli_verb v = {
        .name = "sim list", .usage = "usage: lbscale sim list [--json]",
        .about = "The platform, model and trace presets the simulator reads "
                 "(from\n$LBSCALE_SIM_DATA, else " LBS_SIM_DATA_SRC "), "
                 "sorted by name.",
        .opts = opts};
    (void)unused;
    int rc = cli_parse(&v, argc - 1, argv + 1, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    return sim_list(json);
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
          "  export     one simulated step as Chakra execution traces\n"
          "  import     a Chakra trace's collectives as a trace-v1 plan\n"
          "  validate   published end-to-end figures (none fitted) beside\n"
          "             the predictions, with the geometric-mean error\n"
          "  netsweep   scaling efficiency against network bandwidth per node\n"
          "  speed      how fast the simulator is (benchmark figures)\n"
          "  calibrate  fit a platform from `lbscale coll` JSONL, nccl-tests\n"
          "             or OSU output (--nodes, --gpus-per-node: its size)\n"
          "  list       platform, model and trace presets\n\n"
          "Scaling efficiency E(P) = T(one node: gpus_per_node GPUs) / T(P)\n"
          "at the same per-GPU batch (weak scaling).  Presets are read from\n"
          "$LBSCALE_SIM_DATA, else " LBS_SIM_DATA_SRC ".\n", f);
}

static int cmd_model(int argc, char **argv, struct simargs *a)
{
    (void)a;
    return sim_model_cmd(argc, argv);
}

int verb_sim(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int argc, char **argv, struct simargs *a);
    } cmds[] = {{"sweep", cmd_sweep}, {"step", cmd_step}, {"coll", cmd_coll},
                {"anchors", cmd_anchors}, {"validate", cmd_validate},
                {"export", cmd_export}, {"import", cmd_import},
                {"speed", cmd_speed},
                {"netsweep", cmd_netsweep}, {"calibrate", cmd_calibrate},
                {"list", cmd_list}, {"model", cmd_model}};
    if (argc < 2) {
        cli_error("sim", "which command? (lbscale sim --help lists them)");
        return EXIT_BAD_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    const char *data = getenv("LBSCALE_SIM_DATA");
    struct stat st;
    if (data && *data && (stat(data, &st) || !S_ISDIR(st.st_mode))) {
        cli_error("LBSCALE_SIM_DATA", "'%.200s' is not a directory (it "
                  "holds platforms/, models/, traces/)", data);
        return EXIT_BAD_INPUT;
    }
    struct simargs a = {.com = {.save = 1}, .grad_bytes = 4,
                        .grad_dtype = "fp32"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name))
            return cmds[i].run(argc, argv, &a);
    cli_error("sim", "unknown command '%s' (see lbscale sim --help)", cmd);
    return EXIT_BAD_INPUT;
}
