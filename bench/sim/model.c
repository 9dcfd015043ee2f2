/* model.c - `lbscale sim model import`: a user's model from a PyTorch
 * profiler trace (the reading is sim/torch_import.c's). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../cli.h"
#include "lbscale/file.h"
#include "lbscale_sim.h"
#include "sim_cli.h"

static const char import_about[] =
    "Makes an lbscale model from a PyTorch profiler trace: the Chrome trace\n"
    "JSON that torch.profiler writes (prof.export_chrome_trace; Kineto's\n"
    "{\"traceEvents\": [...]} or the legacy profiler's bare list; a regular\n"
    "file of at most 1 GiB, which takes about 15x its size in memory).  Profile\n"
    "two or more whole training steps, optimizer step included, with\n"
    "record_shapes=True; the first step is a warm-up and is left out.\n\n"
    "Read from the trace: each step's forward time (its first operator to\n"
    "its first autograd::engine event) and, per parameter, when its\n"
    "gradient was ready (the end of its AccumulateGrad): a tensor's bwd_ms\n"
    "is the time since the gradient before it, so the simulator's buckets\n"
    "fill when DistributedDataParallel's do.  Medians over the steps.\n"
    "Gradient sizes come from AccumulateGrad's \"Input Dims\"; a trace\n"
    "without them (the legacy profiler, Debian's torch 1.13) needs --params,\n"
    "a JSON list of {\"name\", \"shape\"} in model.parameters() order:\n"
    "  json.dump([{\"name\": n, \"shape\": list(p.shape)}\n"
    "             for n, p in model.named_parameters()], open(F, \"w\"))\n"
    "Gradients are taken to be ready in reverse parameter order (as DDP\n"
    "assumes); with both shapes and --params every shape is checked.  The\n"
    "forward time is shared out over tensors in proportion to bwd_ms (the\n"
    "legacy trace does not say which module an operator belongs to).\n\n"
    "The times are the profiled device's: use the model with a platform of\n"
    "the same GPU (its efficiency field is not used).  The file is written\n"
    "whole or not at all, and is read back before it is written.";

static int write_model(const char *outp, const char *text,
                       struct lbs_err *e)
{
    struct lbs_sim_model *m = NULL;
    int rc = lbs_sim_model_parse(text, outp, &m, e);   /* loadable? */
    lbs_sim_model_free(m);
    return rc ? rc : lbs_write_atomic(outp, text, strlen(text), e);
}

static int file_sum(const char *path, char *sum, size_t len, size_t *bytes,
                    struct lbs_err *e)
{
    char *text = NULL;
    int rc = lbs_read_file(path, (size_t)1 << 30, &text, bytes, e);
    if (!rc)
        snprintf(sum, len, "crc32:%08lx",
                 crc32(0L, (const Bytef *)text, (uInt)*bytes));
    free(text);
    return rc;
}

static void print_summary(const struct lbs_sim_torch_opts *o,
                          const struct lbs_sim_torch_info *in,
                          const char *outp)
{
    printf("# %s: %zu gradients, %.6g parameters (%.3g MiB fp32), %s layout\n"
           "# steps %zu..%zu of %zu (median): forward %.3f ms, backward to "
           "the last gradient %.3f ms\n"
           "# model '%s' (batch %g per GPU, %.4g MiB buckets%s) written to "
           "%s\n",
           o->trace, in->grads, in->params, in->params * 4 / 1048576.0,
           in->kineto ? "Kineto" : "legacy-profiler",
           in->steps_total - in->steps_used + 1, in->steps_total,
           in->steps_total, in->fwd_ms, in->bwd_ms, o->name,
           o->batch_per_gpu, in->bucket_mb, in->bucket_mb < o->bucket_mb ?
           ": one, the whole model" : "", outp);
}

static int model_import(int argc, char **argv)
{
    const char *outp = NULL, *name = NULL;
    struct lbs_sim_torch_opts o = {.bucket_mb = 25};
    const struct cli_opt opts[] = {
        {.name = "params", .type = CLI_STR, .dst = &o.params, .arg = "FILE",
         .help = "parameter names and shapes (for traces without shapes)"},
        {.name = "batch-per-gpu", .type = CLI_DOUBLE, .dst = &o.batch_per_gpu,
         .arg = "B", .lo = 1, .hi = 1e9,
         .help = "the per-GPU batch the profile ran (required)"},
        {.name = "bucket-mb", .type = CLI_DOUBLE, .dst = &o.bucket_mb,
         .arg = "MB", .lo = 1e-3, .hi = 1e6,
         .help = "DDP's bucket cap in MiB (default 25, PyTorch's)"},
        {.name = "name", .type = CLI_STR, .dst = &name, .arg = "NAME",
         .help = "the model's name (default: the trace's file name)"},
        {.name = "out", .type = CLI_CALL, .fn = cli_out_file, .dst = &outp,
         .arg = "FILE", .help = "the model file to write (required)"},
        {0}};
    const struct cli_verb v = {
        .name = "sim model import",
        .usage = "usage: lbscale sim model import TRACE.json --batch-per-gpu B "
                 "--out MODEL.json [--params FILE] [--bucket-mb MB] "
                 "[--name NAME]",
        .about = import_about, .opts = opts};
    char **pos = NULL;
    int npos = 0;
    int rc = cli_parse(&v, argc - 2, argv + 2, &pos, &npos);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (npos != 1 || !outp || !o.batch_per_gpu) {
        cli_error("sim model import", "%s", npos != 1 ? "give one TRACE.json"
                  : "--batch-per-gpu and --out are required");
        return EXIT_BAD_INPUT;
    }
    o.trace = pos[0];
    const char *base = strrchr(o.trace, '/');
    char stem[128];
    snprintf(stem, sizeof stem, "%s", base ? base + 1 : o.trace);
    char *dot = strrchr(stem, '.');
    if (dot && dot != stem)
        *dot = '\0';                 /* mlp-profile.json: mlp-profile */
    o.name = name ? name : stem;
    char tsum[24] = "", psum[24] = "";
    size_t pbytes = 0;
    struct lbs_sim_torch_info in;
    struct lbs_err e;
    char *text = NULL;
    o.trace_sum = tsum;
    o.params_sum = psum;
    rc = file_sum(o.trace, tsum, sizeof tsum, &o.trace_bytes, &e);
    if (!rc && o.params)
        rc = file_sum(o.params, psum, sizeof psum, &pbytes, &e);
    if (!rc)
        rc = lbs_sim_torch_import(&o, &text, &in, &e);
    if (!rc)
        rc = write_model(outp, text, &e);
    free(text);
    if (rc) {
        cli_error("sim model import", "%s", e.msg);
        return cli_exit_code(rc);
    }
    print_summary(&o, &in, outp);
    return 0;
}

int cmd_model(int argc, char **argv, struct simargs *a)
{
    (void)a;
    if (argc >= 3 && !strcmp(argv[2], "import"))
        return model_import(argc, argv);
    if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
        printf("usage: lbscale sim model import TRACE.json ...\n\n"
               "  import   a model from a PyTorch profiler trace "
               "(sim model import --help)\n");
        return 0;
    }
    cli_error("sim model", "%s", argc < 3 ? "which command? (import)"
              : "unknown command (the one there is: import)");
    return EXIT_BAD_INPUT;
}
