/* sim_cli.h - what the files of `lbscale sim` share (bench/sim/: one file
 * per subcommand, main.c dispatches): the options every subcommand parses
 * into, the option rows declared once, and the loading and printing
 * helpers of common.c. */
#ifndef LBS_BENCH_SIM_CLI_H
#define LBS_BENCH_SIM_CLI_H

#include <stdio.h>

#include "../cli.h"
#include "../opt.h"
#include "lbscale/file.h"
#include "lbscale/optim.h"
#include "lbscale/param.h"
#include "lbscale_sim.h"

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

/* the CLI_CALL parsers of the rows below (dst: struct simargs) */
int job_opt(const char *opt, const char *v, void *dst);
int grad_dtype_opt(const char *opt, const char *v, void *dst);
int compress_gbps_opt(const char *opt, const char *v, void *dst);

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

#define NUM(r, k) json_number_value(json_object_get(r, k))

/* What a sweep, step, export or netsweep needs, loaded and checked. */
struct point_in {
    struct lbs_sim_model *m;
    struct lbs_sim_platform *pl;
    struct lbs_sim_entry *ent;
    size_t nent, np;
    long *P;
};

struct lbs_sim_opts sim_opts(const struct simargs *a);
/* The job's compute spread and overhead for o: the options, else what a
 * --compute run measured, else the platform's "job"; src says which. */
void job_source(const struct simargs *a, const struct lbs_sim_model *m,
                const struct lbs_sim_platform *pl, struct lbs_sim_opts *o,
                char *src, size_t len);
void print_json(const json_t *row);
/* --model, with --compute's measured layer times; then --batch-per-gpu */
int load_sim_model(const struct simargs *a, struct lbs_sim_model **m,
                   struct lbs_err *e);
/* Print rows (one JSON object each, or line's) and append them to the
 * run's KIND.jsonl. */
int emit_rows(const struct simargs *a, struct lbs_run *run, const char *kind,
              const char *what, json_t *rows, void (*line)(const json_t *));
void point_in_free(struct point_in *in);
/* The model, platform and entries of sweep, step and netsweep. */
int point_load(const struct simargs *a, struct point_in *in,
               struct lbs_err *e);
/* Every point valid before anything is written. */
int point_check(const struct simargs *a, const struct point_in *in,
                const struct lbs_sim_opts *o, struct lbs_err *e);
/* --model (or --compute), --platform and --optim given, else -EINVAL. */
int need_point_args(const struct simargs *a, const char *what);
/* sweep's rows (step_mode: sim step's one row), sweep.c */
int run_entries(const struct simargs *a, int argc, char **argv,
                int step_mode);

/* one per subcommand, each in its own file */
int cmd_sweep(int argc, char **argv, struct simargs *a);
int cmd_step(int argc, char **argv, struct simargs *a);
int cmd_coll(int argc, char **argv, struct simargs *a);
int cmd_anchors(int argc, char **argv, struct simargs *a);
int cmd_validate(int argc, char **argv, struct simargs *a);
int cmd_export(int argc, char **argv, struct simargs *a);
int cmd_import(int argc, char **argv, struct simargs *a);
int cmd_speed(int argc, char **argv, struct simargs *a);
int cmd_netsweep(int argc, char **argv, struct simargs *a);
int cmd_calibrate(int argc, char **argv, struct simargs *a);
int cmd_list(int argc, char **argv, struct simargs *a);
int cmd_model(int argc, char **argv, struct simargs *a);

#endif
