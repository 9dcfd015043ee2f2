/* optim_bench.c - `lbscale optim`: one optimizer step, timed, against the
 * machine's memory bandwidth measured in the same run.
 *
 * Effective GB/s = elements x bytes_per_element / step time, where the
 * bytes model is the optimizer's own (lbs_optim_bytes_per_elem, documented
 * in each core/optim file: e.g. LAMB 40 B = two fused passes).  The
 * roofline fraction is that divided by the GB/s of an in-place a += s*c
 * timed before every step, which updates in place as the optimizers do and
 * so moves exactly the bytes it counts (STREAM's triad would not:
 * bench/stream.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "driver.h"
#include "layers.h"
#include "lbs_cuda.h"
#include "lbs_cuda_optim.h"
#include "lbscale/optim.h"
#include "optim_bench.h"
#include "lbscale/isa.h"

static long count_nonfinite(const struct layer_set *s)
{
    long bad = 0;
    for (size_t l = 0; l < s->n; l++) {
        const float *w = s->l[l].w;
        size_t n = s->l[l].n;
#pragma omp parallel for reduction(+ : bad) schedule(static)
        for (size_t i = 0; i < n; i++)
            bad += !isfinite(w[i]);
    }
    return bad;
}

/* ------------------------------------------------------------ kernel */

/* The timed call: optimizer A's step and, with --pair, B's step on its
 * own copy of the layers right after it (A B A B ...), each after a
 * barrier so every rank starts together. */
struct optim_kernel {
    struct lbs_optim *o, *ob;
    struct lbs_comm *comm;
    struct layer_set set, setb;
    double slow, slowb;   /* planted slowdowns (cli_slowdown), 1: none */
    double setup_s;       /* lbs_optim_new (+ its compressor): state and
                             masks, what a process pays before its first
                             step beyond its own model's arrays */
};

static int optim_call(void *ctx, long i, double *t, struct lbs_err *err)
{
    struct optim_kernel *k = ctx;
    (void)i;
    if (k->comm)
        lbs_barrier(k->comm);
    double t0 = cli_now();
    int rc = lbs_optim_step(k->o, err);
    if (k->slow > 1)
        cli_slowdown_spin(k->slow, cli_now() - t0);
    t[0] = cli_now() - t0;
    if (k->ob && !rc) {
        if (k->comm)
            lbs_barrier(k->comm);
        double t1 = cli_now();
        rc = lbs_optim_step(k->ob, err);
        if (k->slowb > 1)
            cli_slowdown_spin(k->slowb, cli_now() - t1);
        t[1] = cli_now() - t1;
    }
    return rc;
}

static long optim_check(void *ctx, struct lbs_err *err)
{
    (void)err;
    return count_nonfinite(&((struct optim_kernel *)ctx)->set);
}

static void optim_kernel_free(struct optim_kernel *k)
{
    if (k->ob)
        lbs_optim_free(k->ob);
    if (k->setb.l)
        layers_free(&k->setb);
    if (k->o)
        lbs_optim_free(k->o);
    if (k->set.l)
        layers_free(&k->set);
}

/* Layers, optimizer (and compressor), --pair's copy; *rss gets what the
 * optimizer added (state + scratch, zeroed at init, so resident). */
static int optim_kernel_new(const struct optim_bench_args *a,
                            struct lbs_comm *comm, struct optim_kernel *k,
                            double *rss, struct lbs_err *err)
{
    *k = (struct optim_kernel){.comm = comm,
                               .slow = cli_slowdown("optim", a->spec),
                               .slowb = cli_slowdown("optim", a->pair)};
    int rc = layers_make(a->layers, a->elements, 1, &k->set, err);
    if (rc)
        return rc;
    double rss0 = cli_rss_mib(), t0 = cli_now();
    if ((rc = lbs_optim_new(a->spec, k->set.l, k->set.n, comm, &k->o, err)))
        k->o = NULL;
    else if (a->compress)
        rc = lbs_optim_set_compressor(k->o, a->compress, err);
    k->setup_s = cli_now() - t0;
    *rss = cli_rss_mib() - rss0;
    if (!rc && a->pair &&
        !(rc = layers_make(a->layers, a->elements, 1, &k->setb, err)) &&
        (rc = lbs_optim_new(a->pair, k->setb.l, k->setb.n, comm, &k->ob,
                            err)))
        k->ob = NULL;
    if (rc)
        optim_kernel_free(k);
    return rc;
}

/* --pair: B's step time over A's, pair by pair. */
static void optim_pair_cols(json_t *row, const struct optim_kernel *k,
                            const struct bench_result *r, long iters)
{
    double *pr = malloc((size_t)iters * sizeof *pr);
    if (!pr)
        return;
    for (long j = 0; j < iters; j++)
        pr[j] = r->t[1][j] / r->t[0][j];
    struct cli_stats ps = cli_stats(pr, (size_t)iters);
    free(pr);
    json_object_set_new(row, "pair_optim",
                        json_string(lbs_optim_params(k->ob)));
    json_object_set_new(row, "pair_name", json_string(lbs_optim_name(k->ob)));
    json_object_set_new(row, "pair_ratio_median", json_real(ps.median));
    json_object_set_new(row, "pair_ratio_min", json_real(ps.min));
    json_object_set_new(row, "pair_ratio_max", json_real(ps.max));
}

static json_t *optim_row(const struct optim_bench_args *a,
                         const struct optim_kernel *k,
                         const struct bench_result *r, double bpe,
                         double rss_optim)
{
    const struct cli_stats *st = &r->st[0];
    double n = (double)k->set.elements;
    json_t *row = json_pack(
        "{s:s,s:s,s:s,s:I,s:I,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
        "s:f,s:I}",
        "bench", "optim", "optim", lbs_optim_name(k->o), "params",
        lbs_optim_params(k->o), "elements", (json_int_t)k->set.elements,
        "layers", (json_int_t)k->set.n, "threads", a->threads, "ranks",
        k->comm ? k->comm->size : 1, "warmup", (int)a->warmup, "iters",
        (int)a->iters, "step_ms_median", st->median * 1e3, "step_ms_min",
        st->min * 1e3, "step_ms_max", st->max * 1e3, "melem_per_s",
        n / st->median / 1e6, "bytes_per_elem", bpe, "gbps", r->gbps,
        "stream_gbps", r->ref.median, "roofline_frac", r->ratio.median,
        "wrong", (json_int_t)r->wrong);
    json_object_set_new(row, "roofline_min", json_real(r->ratio.min));
    json_object_set_new(row, "roofline_max", json_real(r->ratio.max));
    json_object_set_new(row, "stream_ref", json_string(
        r->paired ? "in-place a += s*c interleaved with the steps (median "
                    "of the pairs)" : "given (--stream-gbps)"));
    json_object_set_new(row, "isa", json_string(lbs_isa_name()));
    json_object_set_new(row, "peak_rss_mib", json_real(cli_peak_rss_mib()));
    json_object_set_new(row, "optim_rss_mib", json_real(rss_optim));
    json_object_set_new(row, "setup_ms", json_real(k->setup_s * 1e3));
    json_object_set_new(row, "huge_mib", cli_huge_mib());
    json_object_set_new(row, "step_ms_mean", json_real(st->mean * 1e3));
    json_object_set_new(row, "step_ms_sd", json_real(st->sd * 1e3));
    json_object_set_new(row, "outliers", json_integer((json_int_t)st->outliers));
    if (k->ob)
        optim_pair_cols(row, k, r, a->iters);
    json_object_set_new(row, "layer_preset", json_string(a->layers));
    json_object_set_new(row, "compress", a->compress
                        ? json_string(a->compress) : json_null());
    return row;
}

int optim_bench_run(const struct optim_bench_args *a, struct lbs_comm *comm,
                    json_t **row, struct lbs_err *err)
{
    struct optim_kernel k;
    double rss_optim = 0;
    int rc = optim_kernel_new(a, comm, &k, &rss_optim, err);
    int arc = lbs_comm_agree(comm, rc, NULL, err);   /* no rank waits alone */
    if (arc) {
        if (!rc)
            optim_kernel_free(&k);
        return arc;
    }
    double bpe = lbs_optim_bytes_per_elem(k.o);
    char what[160];
    snprintf(what, sizeof what, "optim %s", lbs_optim_name(k.o));
    /* the roofline reference: an in-place a += s*c before every step,
     * warm-up included (A B A B ...); --stream-gbps X gives a fixed one */
    const struct bench_kernel kern = {
        .what = what, .ctx = &k, .nphase = k.ob ? 2 : 1, .call = optim_call,
        .check = optim_check, .bytes = (double)k.set.elements * bpe,
        .peers = comm};
    const struct bench_loop loop = {.warmup = a->warmup, .iters = a->iters,
                                    .ref_gbps = a->stream_gbps, .rmw = 1};
    struct bench_result r;
    if (!(rc = bench_time(&kern, &loop, &r, err))) {
        *row = optim_row(a, &k, &r, bpe, rss_optim);
        bench_result_free(&r);
    }
    optim_kernel_free(&k);
    return rc;
}

/* ---------------------------------------------------------- printing */

static const struct bench_col optim_cols[] = {
    BENCH_COL("optim", "%-11s", "%-11s", "optim"),
    BENCH_COL("elements", "%11s", "%11lld", "elements"),
    BENCH_COL("layers", "%6s", "%6lld", "layers"),
    BENCH_COL("threads", "%7s", "%7lld", "threads"),
    BENCH_COL("step(ms)", "%10s", "%10.2f", "step_ms_median"),
    BENCH_COL("min(ms)", "%9s", "%9.2f", "step_ms_min"),
    BENCH_COL("max(ms)", "%9s", "%9.2f", "step_ms_max"),
    BENCH_COL("Melem/s", "%9s", "%9.1f", "melem_per_s"),
    BENCH_COL("B/elem", "%6s", "%6.0f", "bytes_per_elem"),
    BENCH_COL("GB/s", "%8s", "%8.2f", "gbps"),
    BENCH_COL("in-place", "%8s", "%8.2f", "stream_gbps"),
    BENCH_COL("roofline", "%8s", "%8.3f", "roofline_frac"),
    BENCH_COL2("[min, max]", "%15s", " [%5.3f, %5.3f]", "roofline_min", "roofline_max"),
    BENCH_COL("isa", "%-6s", "%-6s", "isa"),
    BENCH_COL("setup(ms)", "%9s", "%9.1f", "setup_ms"),
    BENCH_COL("rss(MiB)", "%8s", "%8.0f", "optim_rss_mib"),
    BENCH_COL("peak", "%8s", "%8.0f", "peak_rss_mib"),
    BENCH_COL("huge", "%6s", "%6.0f", "huge_mib"),
    BENCH_COL("#wrong", "%6s", "%6lld", "wrong"),
    {0}};
static const struct bench_table optim_table = {"# ", "  ", optim_cols};

/* --device cuda: name the GPU and its copy reference first. */
static const struct bench_col optim_cuda_cols[] = {
    BENCH_COL("optim", "%-11s", "%-11s", "optim"),
    BENCH_COL("elements", "%11s", "%11lld", "elements"),
    BENCH_COL("layers", "%6s", "%6lld", "layers"),
    BENCH_COL("step(ms)", "%10s", "%10.3f", "step_ms_median"),
    BENCH_COL("min(ms)", "%9s", "%9.3f", "step_ms_min"),
    BENCH_COL("max(ms)", "%9s", "%9.3f", "step_ms_max"),
    BENCH_COL("Melem/s", "%9s", "%9.1f", "melem_per_s"),
    BENCH_COL("B/elem", "%6s", "%6.1f", "bytes_per_elem"),
    BENCH_COL("GB/s", "%8s", "%8.1f", "gbps"),
    BENCH_COL("copy", "%8s", "%8.1f", "stream_gbps"),
    BENCH_COL("of copy", "%7s", "%7.3f", "roofline_frac"),
    BENCH_COL("#wrong", "%6s", "%6lld", "wrong"),
    {0}};
static const struct bench_table optim_cuda_table = {"# ", "  ",
                                                     optim_cuda_cols};

static void optim_note(const json_t *r, int when, FILE *f)
{
#define D(k) json_real_value(json_object_get(r, k))
#define S(k) json_string_value(json_object_get(r, k))
    if (when == 1 && S("pair_name"))
        fprintf(f, "# pair: %s step time / %s step time = %.3f [%.3f, %.3f] "
                "(median [min, max] of %d A B pairs)\n", S("pair_name"),
                S("optim"), D("pair_ratio_median"), D("pair_ratio_min"),
                D("pair_ratio_max"),
                (int)json_integer_value(json_object_get(r, "iters")));
    if (when == 0 && S("gpu")) {
        fprintf(f, "# GPU: %s; copy reference %.1f GB/s", S("gpu"),
                D("stream_gbps"));
        if (json_object_get(r, "memcpy_gbps"))
            fprintf(f, " (cudaMemcpy %.1f, copy kernel %.1f)",
                    D("memcpy_gbps"), D("copy_kernel_gbps"));
        fputc('\n', f);
    }
#undef D
#undef S
}

static const char *const optim_export_cols[] = {
    "optim", "elements", "threads", "iters", "step_ms_mean", "step_ms_sd",
    "step_ms_median", "step_ms_min", "step_ms_max", "outliers", "gbps",
    "stream_gbps", "roofline_frac", "wrong", NULL};

/* ------------------------------------------------------------- options */

static const char optim_usage[] =
"usage: lbscale optim --optim SPEC [--elements N] [--layers PRESET]\n"
"                     [--threads T] [--iters K] [--warmup W]\n"
"                     [--stream-gbps X] [--comm self|mpi]\n"
"                     [--isa c|avx2|avx512] [--pair SPEC]\n"
"                     [--compress SPEC] [--device cpu|cuda] [--json]\n"
"       lbscale optim --optim SPEC [--compress SPEC] --comm record[:P]\n"
"                     [--steps N]\n"
"                     [--layers PRESET] [--trace FILE [--trace-rule Q]]\n"
"                     [--json]\n"
"       lbscale optim --list            optimizers and their keys\n"
"       lbscale optim --help [NAME]     this help, or one optimizer's keys";

static const char optim_about[] =
"Times one optimizer step over N fp32 parameters (warm-up W steps, then K\n"
"timed steps; median, min, max).  GB/s = N x bytes/elem / median time,\n"
"where bytes/elem is the optimizer's documented traffic model plus 4 for\n"
"the gradient check pass (--list gives each model at its defaults).\n"
"roofline: an in-place a = a + s*c (2 x 32M doubles, 512 MB, in the\n"
"peak; same threads, 24 bytes per element, all of them moved) runs right\n"
"before every step, warm-up included (A B A B ...); each pair gives\n"
"ratio = step GB/s / in-place GB/s, and the row shows their median\n"
"[min, max] (in-place = median reference GB/s).  The optimizers update\n"
"in place, so this is their limit; STREAM's triad is not (its store reads\n"
"the line first and moves 32 bytes per element for the 24 it counts).\n"
"A median ratio above 1.05 prints a warning: the bytes model or the\n"
"measurement is wrong.\n"
"--stream-gbps X divides by X instead (no pairs, no warning; give the\n"
"in-place GB/s of `lbscale stream`).  rss = resident memory the\n"
"optimizer added (state, scratch; /proc/self/statm), peak = the process's\n"
"getrusage peak (layers and the reference's arrays included), huge = the\n"
"process's memory on transparent huge pages (lbscale/mem.h), MiB.\n"
"setup = the optimizer's construction (its state, scratch and masks: what\n"
"a training process pays before its first step besides its model), ms.\n"
"#wrong counts non-finite parameters.";

static const char optim_epilog[] =
"layer presets (--layers P):\n"
LAYERS_PRESETS_HELP;

/* What the command line asks besides struct optim_bench_args. */
struct optim_cmd {
    const char *backend, *trace;
    long steps, threads, rule;
    int device;         /* 0 cpu, 1 cuda */
};

/* The combinations that cannot run; 0 to go on, else the exit code. */
static int optim_args_check(const struct optim_cmd *c,
                            const struct optim_bench_args *a)
{
    /* the CPU optimizers' buffers are host memory, which NCCL cannot
     * read; NCCL is measured by `coll --backend nccl` */
    if (!strcmp(c->backend, "nccl")) {
        cli_error("--comm", "nccl: the optimizers here keep their tensors "
                  "in host memory; use mpi, or `lbscale coll --backend "
                  "nccl` for NCCL");
        return EXIT_BAD_INPUT;
    }
    if (!a->spec) {
        cli_error("optim", "--optim SPEC is required (see --list)");
        return EXIT_BAD_INPUT;
    }
    if ((a->exp.csv || a->exp.md) &&
        (c->device || !strncmp(c->backend, "record", 6))) {
        cli_error("optim", "--export-csv/--export-markdown: the timed CPU "
                  "step only (not --device cuda or --comm record)");
        return EXIT_BAD_INPUT;
    }
    if (c->device && (strcmp(c->backend, "self") || c->steps || c->trace ||
                      a->compress || a->rule_ranks)) {
        cli_error("optim", "--device cuda: runs one GPU alone: no --comm "
                  "other than self, --steps, --trace or --compress");
        return EXIT_BAD_INPUT;
    }
    if (!c->device && a->rule_ranks && !c->trace) {
        cli_error("--trace-rule", "needs --trace FILE (the rule is written "
                  "into the trace)");
        return EXIT_BAD_INPUT;
    }
    return 0;
}

static int optim_bench_main2(struct optim_bench_args *a, const char *backend,
                             long steps, const char *trace,
                             const struct cli_common *com, int argc,
                             char **argv);
static int optim_bench_cuda(struct optim_bench_args *a,
                            const struct cli_common *com, int argc,
                            char **argv);

int verb_optim(int argc, char **argv)
{
    struct cli_common com = {.save = 1};
    struct optim_bench_args a = {.elements = 100000000, .layers = "uniform:16",
                                 .iters = 10, .warmup = 2};
    struct optim_cmd c = {.backend = "self"};
    const struct cli_opt opts[] = {
        {.name = "optim", .type = CLI_STR, .dst = &a.spec, .arg = "SPEC",
         .help = "e.g. lamb or lamb:lr=0.01,wd=0.01 (see --list)"},
        {.name = "compress", .type = CLI_STR, .dst = &a.compress,
         .arg = "SPEC",
         .help = "compress the gradients before the optimizer sees them,\n"
                 "e.g. topk:k=0.01,ef=1 (lbscale compress --list); only\n"
                 "for data-parallel optimizers (--list says which);\n"
                 "applies on one rank too"},
        CLI_ELEMENTS_OPT(&a.elements, 0,
                         "parameters (default 100M; suffixes K M G, Ki Mi "
                         "Gi)"),
        {.name = "layers", .type = CLI_STR, .dst = &a.layers, .arg = "P",
         .help = "layer preset (default uniform:16; see below)"},
        CLI_THREADS_OPT(&c.threads),
        CLI_ITERS_OPT(&a.iters, 0, 1000000, "timed steps (default 10)"),
        CLI_WARMUP_OPT(&a.warmup, 0, "untimed steps first (default 2)"),
        CLI_STREAM_GBPS_OPT(&a.stream_gbps,
                            "skip the STREAM measurement and use X GB/s"),
        {.name = "pair", .type = CLI_STR, .dst = &a.pair, .arg = "SPEC",
         .help = "also step optimizer SPEC on its own copy of the layers,\n"
                 "one of its steps after every timed step (A B A B ...);\n"
                 "the row adds pair_ratio_median/min/max = B's step time\n"
                 "over A's, pair by pair (printed as a second line)"},
        CLI_ISA_OPT,
        CLI_DEVICE_OPT(&c.device,
            "cpu (default) or cuda: time the step on GPU 0 with the\n"
            "fused kernels of core/cuda/optim.cu (--list: \"GPU\n"
            "kernels\"; the same spec and bytes/elem model), against the\n"
            "device-to-device copy GB/s measured in the same run (the\n"
            "better of cudaMemcpy and a copy kernel, 1 GiB buffers;\n"
            "--stream-gbps X gives it instead).  One GPU: --comm self\n"
            "only, no --compress.  Without a GPU or a CUDA build: one\n"
            "line on stderr, exit 2"),
        {.name = "comm", .type = CLI_STR, .dst = &c.backend, .arg = "B",
         .help = "self (default) or mpi (under mpirun; gradients are\n"
                 "averaged across ranks inside the timed step), or\n"
                 "record[:P]: no timing; run --steps N steps (default 100)\n"
                 "of the real optimizer as rank 0 of P logical ranks over\n"
                 "the record backend and report bytes sent per step (this\n"
                 "rank's payload per call, results/schema/trace-v1.md),\n"
                 "per collective kind and as a fraction of dense fp32\n"
                 "allreduce (4 bytes per parameter)"},
        {.name = "steps", .type = CLI_LONG, .dst = &c.steps, .arg = "N",
         .lo = 1, .hi = 100000000,
         .help = "steps to record (record backend only)"},
        {.name = "trace", .type = CLI_CALL, .fn = cli_out_file, .dst = &c.trace,
         .arg = "FILE",
         .help = "write the recorded calls as a trace-v1 file"},
        {.name = "trace-rule", .type = CLI_LONG, .dst = &c.rule, .arg = "Q",
         .lo = 2, .hi = 1 << 24,
         .help = "also run the same steps over Q ranks (Q != P, >= 2)\n"
                 "and state in the trace, per call whose bytes depend on\n"
                 "the rank count, the rule bytes(P) = a + ceil(b/P)\n"
                 "(results/schema/trace-v1.md, bytes_rule); exact at\n"
                 "every multiple of min(P, Q), so take Q small (8).\n"
                 "Refused, nothing written, when the two runs' calls\n"
                 "differ beyond their sizes"},
        CLI_EXPORT_OPTS(&a.exp),
        CLI_COMMON_OPTS(&com),
        {0}};
    const struct cli_verb verb = {
        .name = "optim", .usage = optim_usage, .about = optim_about,
        .opts = opts, .epilog = optim_epilog, .topic = "optimizer",
        .topic_help = lbs_optim_help};
    int rc = cli_parse(&verb, argc, argv, NULL, NULL);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    a.rule_ranks = (int)c.rule;
    if ((rc = optim_args_check(&c, &a)))
        return rc;
    a.threads = cli_threads(c.threads);
    if (c.device)
        return optim_bench_cuda(&a, &com, argc, argv);
    return optim_bench_main2(&a, c.backend, c.steps, c.trace, &com, argc,
                             argv);
}

/* Validate the spec and the layer preset before anything is measured or
 * written: a bad input must not leave a results directory behind. */
static int optim_bench_check(const struct optim_bench_args *a,
                             struct lbs_err *err)
{
    int rc = layers_check(a->layers, a->elements, err);
    if (rc)
        return rc;
    rc = lbs_optim_check(a->spec, a->compress, err);
    if (!rc && a->pair)     /* the pair's spec too, before any run */
        rc = lbs_optim_check(a->pair, NULL, err);
    return rc;
}

int optim_bench_main(struct optim_bench_args *a, const char *backend,
                     const struct cli_common *com, int argc, char **argv)
{
    return optim_bench_main2(a, backend, 0, NULL, com, argc, argv);
}

static int optim_bench_main2(struct optim_bench_args *a, const char *backend,
                             long steps, const char *trace,
                             const struct cli_common *com, int argc,
                             char **argv)
{
    struct lbs_err e;
    struct lbs_comm *comm = NULL;
    int rc = optim_bench_check(a, &e);
    if (rc) {
        cli_error("optim", "%s", e.msg);
        return cli_exit_code(rc);
    }
    rc = lbs_comm_new(backend, &comm, &e);
    if (rc) {
        cli_error("--comm", "%s", e.msg);
        return cli_exit_code(rc);
    }
    if (!strncmp(backend, "record", 6)) {
        if (a->rule_ranks == comm->size) {
            cli_error("--trace-rule", "%d is the recorded rank count; give "
                      "another (e.g. 8)", a->rule_ranks);
            lbs_comm_free(comm);
            return EXIT_BAD_INPUT;
        }
        rc = optim_record_main(a, comm, steps ? steps : 100, trace, com, argc,
                               argv);
        lbs_comm_free(comm);
        return rc;
    }
    if (steps || trace) {
        cli_error("optim", "--steps, --trace and --trace-rule need --comm "
                  "record[:P]");
        lbs_comm_free(comm);
        return EXIT_BAD_INPUT;
    }
    struct lbs_run *run = NULL;
    int lead = comm->rank == 0;
    int orc = lead ? cli_open_run(com, "optim", argc, argv, &run) : 0;
    if ((orc = lbs_comm_agree(comm, orc, NULL, NULL))) {
        lbs_comm_free(comm);
        return cli_exit_code(orc);
    }
    json_t *row = NULL;
    rc = optim_bench_run(a, comm, &row, &e);
    if (rc) {
        cli_error("optim", "%s", e.msg);
        goto out;
    }
    const struct bench_out bo = {
        .verb = "optim", .json = com->json, .table = &optim_table,
        .timing = "step", .timing_key = "step_ms", .note = optim_note,
        .exp = &a->exp, .exp_cols = optim_export_cols, .run = run};
    if (lead && !(rc = bench_emit(&bo, row, 1)))
        bench_saved(&bo);
    if (!rc && json_integer_value(json_object_get(row, "wrong"))) {
        cli_error("optim", "non-finite parameters after the run");
        rc = -EDOM;
    }
    json_decref(row);
out:
    lbs_run_close(run);
    lbs_comm_free(comm);
    return cli_exit_code(rc);
}

/* --device cuda: the step on GPU 0 (core/cuda/optim.cu) over the same
 * layers, timed with CUDA events around each step (the kernel times its
 * whole loop: bench_kernel.batch), against the device's own copy
 * bandwidth measured in the same run.  Times stay in ms as the events
 * give them. */
struct optim_cuda_kernel {
    struct lbs_cuda_optim *h;
    struct layer_set set;
    long skipped;   /* 1: a step was skipped (NaN gradient) */
};

static int optim_cuda_batch(void *ctx, long warmup, long iters, double *ms,
                            struct lbs_err *err)
{
    struct optim_cuda_kernel *k = ctx;
    int rc = lbs_cuda_optim_time(k->h, warmup, iters, ms, err);
    if (rc < 0)
        return rc;
    k->skipped = rc;
    return 0;
}

static long optim_cuda_check(void *ctx, struct lbs_err *err)
{
    struct optim_cuda_kernel *k = ctx;
    for (size_t i = 0; i < k->set.n; i++) {
        int rc = lbs_cuda_optim_read(k->h, "w", i, k->set.l[i].w, err);
        if (rc)
            return rc;
    }
    return k->skipped + count_nonfinite(&k->set);
}

static int optim_cuda_new(const struct optim_bench_args *a,
                          struct optim_cuda_kernel *k, struct lbs_err *e)
{
    int rc;
    *k = (struct optim_cuda_kernel){0};
    if ((rc = layers_make(a->layers, a->elements, 1, &k->set, e)) ||
        (rc = lbs_cuda_optim_new(a->spec, k->set.l, k->set.n, &k->h, e)))
        return rc;
    for (size_t i = 0; i < k->set.n && !rc; i++)
        if (!(rc = lbs_cuda_optim_write(k->h, "w", i, k->set.l[i].w, e)))
            rc = lbs_cuda_optim_write(k->h, "g", i, k->set.l[i].g, e);
    return rc;
}

static json_t *optim_cuda_row(const struct optim_bench_args *a,
                              const struct optim_cuda_kernel *k,
                              const struct bench_result *r, const char *gpu,
                              const struct lbs_cuda_stream *cs)
{
    const struct cli_stats *st = &r->st[0];   /* ms */
    size_t n = k->set.elements;
    double bpe = lbs_cuda_optim_bytes_per_elem(k->h);
    double gbps = (double)n * bpe / (st->median * 1e-3) / 1e9;
    json_t *row = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,"
        "s:f,s:f,s:f,s:I}",
        "bench", "optim", "device", "cuda", "gpu", gpu, "optim",
        a->spec, "params", "", "elements", (json_int_t)n,
        "layers", (json_int_t)k->set.n, "threads", 0, "ranks", 1, "warmup",
        (int)a->warmup, "iters", (int)a->iters, "step_ms_median", st->median,
        "step_ms_min", st->min, "step_ms_max", st->max, "melem_per_s",
        (double)n / (st->median * 1e-3) / 1e6, "bytes_per_elem",
        bpe, "gbps", gbps, "stream_gbps", a->stream_gbps, "roofline_frac",
        gbps / a->stream_gbps, "wrong", (json_int_t)r->wrong);
    /* optim and params as the CPU rows have them: name, effective keys */
    struct lbs_optim_config *oc;
    if (!lbs_optim_config_new(a->spec, &oc, NULL)) {
        json_object_set_new(row, "optim",
                            json_string(lbs_optim_config_name(oc)));
        json_object_set_new(row, "params",
                            json_string(lbs_optim_config_params(oc)));
        lbs_optim_config_free(oc);
    }
    json_object_set_new(row, "layer_preset", json_string(a->layers));
    json_object_set_new(row, "stream_ref", json_string(
        cs->n ? "cuda d2d copy (best of cudaMemcpy and a copy kernel)"
              : "given (--stream-gbps)"));
    if (cs->n) {
        json_object_set_new(row, "memcpy_gbps", json_real(cs->memcpy_gbps));
        json_object_set_new(row, "copy_kernel_gbps",
                            json_real(cs->kernel_gbps));
    }
    return row;
}

/* Time, check and show the step; 0 or a code after one printed line. */
static int optim_cuda_run(struct optim_bench_args *a, const char *gpu,
                          const struct bench_out *bo, struct lbs_err *e)
{
    struct lbs_cuda_stream cs = {0};
    int rc = 0;
    if (a->stream_gbps <= 0 &&
        (rc = bench_cuda_copy_ref((size_t)1 << 28, 5, &cs, &a->stream_gbps,
                                  e)))
        goto out;
    struct optim_cuda_kernel k = {0};
    struct bench_result r = {0};
    const struct bench_kernel kern = {
        .what = "optim --device cuda", .ctx = &k, .nphase = 1,
        .batch = optim_cuda_batch, .check = optim_cuda_check};
    const struct bench_loop loop = {.warmup = a->warmup, .iters = a->iters};
    if (!(rc = optim_cuda_new(a, &k, e)) &&
        !(rc = bench_time(&kern, &loop, &r, e))) {
        json_t *row = optim_cuda_row(a, &k, &r, gpu, &cs);
        int erc = bench_emit(bo, row, 1);   /* prints its own failure */
        if (!erc)
            bench_saved(bo);
        if (!erc && r.wrong)
            rc = lbs_err_set(e, -EDOM, "non-finite parameters or a skipped "
                             "step after the run");
        json_decref(row);
        if (erc) {
            rc = erc;
            goto release;
        }
    }
out:
    if (rc)
        cli_error("optim", "--device cuda: %s", e->msg);
release:
    bench_result_free(&r);
    lbs_cuda_optim_free(k.h);
    if (k.set.l)
        layers_free(&k.set);
    return rc;
}

/* Every check that can fail on input (spec, preset, an optimizer without
 * kernels, no GPU, no CUDA build) runs before the results directory is
 * opened. */
static int optim_bench_cuda(struct optim_bench_args *a,
                            const struct cli_common *com, int argc,
                            char **argv)
{
    struct lbs_err e;
    char gpu[256];
    int rc = optim_bench_check(a, &e);
    if (rc) {
        cli_error("optim", "%s", e.msg);
        return cli_exit_code(rc);
    }
    if ((rc = lbs_cuda_optim_check(a->spec, &e)) ||
        (rc = lbs_cuda_probe(gpu, sizeof gpu, &e)) < 0) {
        cli_error("optim", "--device cuda: %s", e.msg);
        return EXIT_BAD_INPUT;   /* no GPU here is the user's input too */
    }
    struct lbs_run *run = NULL;
    int orc = cli_open_run(com, "optim", argc, argv, &run);
    if (orc)
        return cli_exit_code(orc);
    const struct bench_out bo = {.verb = "optim", .json = com->json,
                                 .table = &optim_cuda_table,
                                 .note = optim_note, .run = run,
                                 .what = "--device cuda: "};
    rc = optim_cuda_run(a, gpu, &bo, &e);
    lbs_run_close(run);
    return cli_exit_code(rc);
}
