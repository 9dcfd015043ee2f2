/* optim_bench.c - `lbscale optim`: one optimizer step, timed, against the
 * machine's STREAM triad bandwidth measured in the same run.
 *
 * Effective GB/s = elements x bytes_per_element / step time, where the
 * bytes model is the optimizer's own (lbs_optim_bytes_per_elem, documented
 * in each core/optim file: e.g. LAMB 40 B = two fused passes).  The
 * roofline fraction is that divided by STREAM triad, which counts bytes
 * the same way (no write-allocate traffic). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
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

/* STREAM triad arrays for the interleaved reference: 32M doubles each
 * (768 MiB in all), far beyond any cache, as `lbscale stream`. */
#define PAIR_N 32000000

int optim_bench_run(const struct optim_bench_args *a, struct lbs_comm *comm,
                    json_t **row, struct lbs_err *err)
{
    struct layer_set set;
    int rc = layers_make(a->layers, a->elements, 1, &set, err);
    if (rc)
        return rc;
    double rss0 = cli_rss_mib();
    struct lbs_optim *o;
    rc = lbs_optim_new(a->spec, set.l, set.n, comm, &o, err);
    if (rc) {
        layers_free(&set);
        return rc;
    }
    if (a->compress && (rc = lbs_optim_set_compressor(o, a->compress, err))) {
        lbs_optim_free(o);
        layers_free(&set);
        return rc;
    }
    double rss_optim = cli_rss_mib() - rss0;   /* state + scratch (zeroed
                                                  at init, so resident) */
    /* The roofline reference: a STREAM triad before every step, warm-up
     * included (A B A B ...), so each step has a triad measured next to
     * it under the same conditions; the ratio of each pair is the
     * roofline sample.  --stream-gbps X gives a fixed reference instead. */
    struct stream_pair sp = {0};
    struct layer_set setb = {0};   /* --pair's layers and optimizer */
    struct lbs_optim *ob = NULL;
    double *pr = NULL;
    const int pair = a->stream_gbps <= 0;
    double *t = calloc((size_t)a->iters, sizeof *t),
           *tri = calloc((size_t)a->iters, sizeof *tri),
           *ratio = calloc((size_t)a->iters, sizeof *ratio);
    if (!t || !tri || !ratio ||
        (pair && stream_pair_open(&sp, PAIR_N))) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    double bpe = lbs_optim_bytes_per_elem(o);
    /* --pair: optimizer B on its own copy of the same layers, one B step
     * after every A step, so both see the same machine state */
    if (a->pair) {
        if (!(pr = calloc((size_t)a->iters, sizeof *pr)) ||
            (rc = layers_make(a->layers, a->elements, 1, &setb, err)) ||
            (rc = lbs_optim_new(a->pair, setb.l, setb.n, comm, &ob, err))) {
            if (!rc)
                rc = lbs_err_set(err, -ENOMEM, "out of memory");
            goto out;
        }
    }
    for (long i = 0; i < a->warmup + a->iters && !rc; i++) {
        double tg = pair ? stream_pair_triad(&sp) : a->stream_gbps;
        if (comm)
            lbs_barrier(comm);
        double t0 = cli_now();
        rc = lbs_optim_step(o, err);
        if (i >= a->warmup) {
            long j = i - a->warmup;
            t[j] = cli_now() - t0;
            tri[j] = tg;
            ratio[j] = (double)set.elements * bpe / t[j] / 1e9 / tg;
        }
        if (ob && !rc) {
            if (comm)
                lbs_barrier(comm);
            double t1 = cli_now();
            rc = lbs_optim_step(ob, err);
            if (i >= a->warmup)
                pr[i - a->warmup] = (cli_now() - t1) / t[i - a->warmup];
        }
    }
    if (rc)
        goto out;
    if (pair && stream_pair_close(&sp) != 0) {
        rc = lbs_err_set(err, -EIO, "STREAM triad reference computed wrong "
                         "values");
        goto out;
    }
    struct cli_stats st = cli_stats(t, (size_t)a->iters);
    struct cli_stats ts = cli_stats(tri, (size_t)a->iters);
    char what[160];
    snprintf(what, sizeof what, "optim %s", lbs_optim_name(o));
    double gbps = (double)set.elements * bpe / st.median / 1e9;
    /* measured pairs: their median [min, max], warned above 1.05; a given
     * reference (--stream-gbps): GB/s over it, as before, no warning */
    struct cli_stats rs = pair ? roofline_pairs(what, ratio,
                                                (size_t)a->iters)
        : (struct cli_stats){.median = gbps / a->stream_gbps,
                             .min = (double)set.elements * bpe / st.max /
                                    1e9 / a->stream_gbps,
                             .max = (double)set.elements * bpe / st.min /
                                    1e9 / a->stream_gbps};
    long wrong = count_nonfinite(&set);
    *row = json_pack(
        "{s:s,s:s,s:s,s:I,s:I,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
        "s:f,s:I}",
        "bench", "optim", "optim", lbs_optim_name(o), "params",
        lbs_optim_params(o), "elements", (json_int_t)set.elements, "layers",
        (json_int_t)set.n, "threads", a->threads, "ranks",
        comm ? comm->size : 1, "warmup", (int)a->warmup, "iters",
        (int)a->iters, "step_ms_median", st.median * 1e3, "step_ms_min",
        st.min * 1e3, "step_ms_max", st.max * 1e3, "melem_per_s",
        (double)set.elements / st.median / 1e6, "bytes_per_elem", bpe,
        "gbps", gbps, "stream_gbps", ts.median, "roofline_frac", rs.median,
        "wrong", (json_int_t)wrong);
    json_object_set_new(*row, "roofline_min", json_real(rs.min));
    json_object_set_new(*row, "roofline_max", json_real(rs.max));
    json_object_set_new(*row, "stream_ref", json_string(
        pair ? "triad interleaved with the steps (median of the pairs)"
             : "given (--stream-gbps)"));
    json_object_set_new(*row, "isa", json_string(lbs_isa_name()));
    json_object_set_new(*row, "peak_rss_mib", json_real(cli_peak_rss_mib()));
    json_object_set_new(*row, "optim_rss_mib", json_real(rss_optim));
    json_object_set_new(*row, "step_ms_mean", json_real(st.mean * 1e3));
    json_object_set_new(*row, "step_ms_sd", json_real(st.sd * 1e3));
    json_object_set_new(*row, "outliers", json_integer((json_int_t)st.outliers));
    if (ob) {
        struct cli_stats ps = cli_stats(pr, (size_t)a->iters);
        json_object_set_new(*row, "pair_optim",
                            json_string(lbs_optim_params(ob)));
        json_object_set_new(*row, "pair_name",
                            json_string(lbs_optim_name(ob)));
        json_object_set_new(*row, "pair_ratio_median", json_real(ps.median));
        json_object_set_new(*row, "pair_ratio_min", json_real(ps.min));
        json_object_set_new(*row, "pair_ratio_max", json_real(ps.max));
    }
    json_object_set_new(*row, "layer_preset", json_string(a->layers));
    json_object_set_new(*row, "compress", a->compress
                        ? json_string(a->compress) : json_null());
out:
    if (pair)
        stream_pair_close(&sp);
    if (ob)
        lbs_optim_free(ob);
    if (setb.l)
        layers_free(&setb);
    free(pr);
    free(t);
    free(tri);
    free(ratio);
    lbs_optim_free(o);
    layers_free(&set);
    return rc;
}

void optim_bench_header(void)
{
    printf("# %-11s %11s %6s %7s %10s %9s %9s %9s %6s %8s %8s %8s %15s "
           "%-6s %8s %8s %6s\n",
           "optim", "elements", "layers", "threads", "step(ms)", "min(ms)",
           "max(ms)", "Melem/s", "B/elem", "GB/s", "STREAM", "roofline",
           "[min, max]", "isa", "rss(MiB)", "peak", "#wrong");
}

void optim_bench_print(const json_t *r)
{
    printf("  %-11s %11lld %6lld %7lld %10.2f %9.2f %9.2f %9.1f %6.0f %8.2f "
           "%8.2f %8.3f  [%5.3f, %5.3f] %-6s %8.0f %8.0f %6lld\n",
           json_string_value(json_object_get(r, "optim")),
           (long long)json_integer_value(json_object_get(r, "elements")),
           (long long)json_integer_value(json_object_get(r, "layers")),
           (long long)json_integer_value(json_object_get(r, "threads")),
           json_real_value(json_object_get(r, "step_ms_median")),
           json_real_value(json_object_get(r, "step_ms_min")),
           json_real_value(json_object_get(r, "step_ms_max")),
           json_real_value(json_object_get(r, "melem_per_s")),
           json_real_value(json_object_get(r, "bytes_per_elem")),
           json_real_value(json_object_get(r, "gbps")),
           json_real_value(json_object_get(r, "stream_gbps")),
           json_real_value(json_object_get(r, "roofline_frac")),
           json_real_value(json_object_get(r, "roofline_min")),
           json_real_value(json_object_get(r, "roofline_max")),
           json_string_value(json_object_get(r, "isa")) ?
               json_string_value(json_object_get(r, "isa")) : "-",
           json_real_value(json_object_get(r, "optim_rss_mib")),
           json_real_value(json_object_get(r, "peak_rss_mib")),
           (long long)json_integer_value(json_object_get(r, "wrong")));
}

static void usage(FILE *f)
{
    fprintf(f,
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
"       lbscale optim --help [NAME]     this help, or one optimizer's keys\n"
"\n"
"Times one optimizer step over N fp32 parameters (warm-up W steps, then K\n"
"timed steps; median, min, max).  GB/s = N x bytes/elem / median time,\n"
"where bytes/elem is the optimizer's documented traffic model plus 4 for\n"
"the gradient check pass (lamb 44, adamw 32, lars 28, sgd 24).\n"
"roofline: a STREAM triad (3 x 32M doubles, same threads) runs right\n"
"before every step, warm-up included (A B A B ...); each pair gives\n"
"ratio = step GB/s / triad GB/s, and the row shows their median [min,\n"
"max] (STREAM = median triad GB/s).  A ratio above 1.05 prints a warning:\n"
"the bytes model or the measurement is wrong.  --stream-gbps X divides by\n"
"X instead (no pairs, no warning).  rss = resident memory the optimizer added (state, scratch;\n"
"/proc/self/statm), peak = the process's getrusage peak (layers and the\n"
"STREAM arrays included), MiB.  #wrong counts non-finite parameters.\n"
"\n"
"  --optim SPEC    e.g. lamb or lamb:lr=0.01,wd=0.01 (see --list)\n"
"  --compress SPEC compress the gradients before the optimizer sees them,\n"
"                  e.g. topk:k=0.01,ef=1 (lbscale compress --list); only\n"
"                  for data-parallel optimizers (not slamb, onebit_lamb,\n"
"                  dmsgd, decentlam); applies on one rank too\n"
"  --elements N    parameters (default 100M; suffixes K M G, Ki Mi Gi)\n"
"  --layers P      layer preset (default uniform:16):\n"
LAYERS_PRESETS_HELP
"  --threads T     OpenMP threads (default: OMP_NUM_THREADS or all cores)\n"
"  --iters K       timed steps (default 10)\n"
"  --warmup W      untimed steps first (default 2)\n"
"  --stream-gbps X skip the STREAM measurement and use X GB/s\n"
"  --pair SPEC     also step optimizer SPEC on its own copy of the layers,\n"
"                  one of its steps after every timed step (A B A B ...);\n"
"                  the row adds pair_ratio_median/min/max = B's step time\n"
"                  over A's, pair by pair (printed as a second line)\n"
"  --isa L         kernel level: c (portable), avx2 or avx512; at most what\n"
"                  the CPU has (else one line, exit 2); default the best,\n"
"                  or LBSCALE_ISA.  Shown in the isa column and meta.json\n"
"  --device D      cpu (default) or cuda: time the step on GPU 0 with the\n"
"                  fused kernels of core/cuda/optim.cu (lamb, slamb, adamw,\n"
"                  sgd; the same spec and bytes/elem model), against the\n"
"                  device-to-device copy GB/s measured in the same run (the\n"
"                  better of cudaMemcpy and a copy kernel, 1 GiB buffers;\n"
"                  --stream-gbps X gives it instead).  One GPU: --comm self\n"
"                  only, no --compress.  Without a GPU or a CUDA build: one\n"
"                  line on stderr, exit 2\n"
"  --comm B        self (default) or mpi (under mpirun; gradients are\n"
"                  averaged across ranks inside the timed step), or\n"
"                  record[:P]: no timing; run --steps N steps (default 100)\n"
"                  of the real optimizer as rank 0 of P logical ranks over\n"
"                  the record backend and report bytes sent per step (this\n"
"                  rank's payload per call, results/schema/trace-v1.md),\n"
"                  per collective kind and as a fraction of dense fp32\n"
"                  allreduce (4 bytes per parameter)\n"
"  --steps N       steps to record (record backend only)\n"
"  --trace FILE    write the recorded calls as a trace-v1 file\n"
"  --trace-rule Q  also run the same steps over Q ranks (Q != P, >= 2)\n"
"                  and state in the trace, per call whose bytes depend on\n"
"                  the rank count, the rule bytes(P) = a + ceil(b/P)\n"
"                  (results/schema/trace-v1.md, bytes_rule); exact at\n"
"                  every multiple of min(P, Q), so take Q small (8).\n"
"                  Refused, nothing written, when the two runs' calls\n"
"                  differ beyond their sizes\n"
CLI_EXPORT_HELP CLI_COMMON_HELP);
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
    const char *backend = "self", *trace = NULL, *device = "cpu";
    long steps = 0;
    long threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int c = cli_common_opt(&com, argc, argv, &i);
        if (!c)
            c = cli_export_opt(&a.exp, argc, argv, &i);
        if (c < 0)
            return EXIT_BAD_INPUT;
        if (c)
            continue;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            if (v && v[0] != '-') {
                if (lbs_optim_help(v, stdout)) {
                    cli_error("optim", "unknown optimizer '%s' (see --list)",
                              v);
                    return EXIT_BAD_INPUT;
                }
                return 0;
            }
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--list")) {
            lbs_optim_help(NULL, stdout);
            return 0;
        } else if (!strcmp(o, "--optim")) {
            if (!v) { cli_error(o, "missing value"); return EXIT_BAD_INPUT; }
            a.spec = v;
            i++;
        } else if (!strcmp(o, "--pair")) {
            if (!v) { cli_error(o, "missing value"); return EXIT_BAD_INPUT; }
            a.pair = v;
            i++;
        } else if (!strcmp(o, "--compress")) {
            if (!v) { cli_error(o, "missing value"); return EXIT_BAD_INPUT; }
            a.compress = v;
            i++;
        } else if (!strcmp(o, "--elements")) {
            if (cli_size(o, v, &a.elements)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--layers")) {
            if (!v) { cli_error(o, "missing value"); return EXIT_BAD_INPUT; }
            a.layers = v;
            i++;
        } else if (!strcmp(o, "--threads")) {
            if (cli_int(o, v, 1, 4096, &threads)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--iters")) {
            if (cli_int(o, v, 1, 1000000, &a.iters)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--warmup")) {
            if (cli_int(o, v, 0, 1000000, &a.warmup)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--isa")) {
            if (cli_isa(o, v)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--stream-gbps")) {
            if (cli_double(o, v, 1e-3, 1e6, &a.stream_gbps))
                return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--steps")) {
            if (cli_int(o, v, 1, 100000000, &steps)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--trace-rule")) {
            long q;
            if (cli_int(o, v, 2, 1 << 24, &q)) return EXIT_BAD_INPUT;
            a.rule_ranks = (int)q;
            i++;
        } else if (!strcmp(o, "--trace")) {
            if (!v) { cli_error(o, "missing file name"); return EXIT_BAD_INPUT; }
            trace = v;
            i++;
        } else if (!strcmp(o, "--comm")) {
            if (!v) { cli_error(o, "missing value"); return EXIT_BAD_INPUT; }
            /* the CPU optimizers' buffers are host memory, which NCCL
             * cannot read; NCCL is measured by `coll --backend nccl` */
            if (!strcmp(v, "nccl")) {
                cli_error(o, "nccl: the optimizers here keep their tensors "
                          "in host memory; use mpi, or `lbscale coll "
                          "--backend nccl` for NCCL");
                return EXIT_BAD_INPUT;
            }
            backend = v;
            i++;
        } else if (!strcmp(o, "--device")) {
            if (!v || (strcmp(v, "cpu") && strcmp(v, "cuda"))) {
                cli_error(o, "expected cpu or cuda, got '%s'", v ? v : "");
                return EXIT_BAD_INPUT;
            }
            device = v;
            i++;
        } else {
            cli_error("optim", "unknown option '%s' (see --help)", o);
            return EXIT_BAD_INPUT;
        }
    }
    if (!a.spec) {
        cli_error("optim", "--optim SPEC is required (see --list)");
        return EXIT_BAD_INPUT;
    }
    if ((a.exp.csv || a.exp.md) &&
        (!strcmp(device, "cuda") || !strncmp(backend, "record", 6))) {
        cli_error("optim", "--export-csv/--export-markdown: the timed CPU "
                  "step only (not --device cuda or --comm record)");
        return EXIT_BAD_INPUT;
    }
    a.threads = cli_threads(threads);
    if (!strcmp(device, "cuda")) {
        if (strcmp(backend, "self") || steps || trace || a.compress ||
            a.rule_ranks) {
            cli_error("optim", "--device cuda: runs one GPU alone: no --comm "
                      "other than self, --steps, --trace or --compress");
            return EXIT_BAD_INPUT;
        }
        return optim_bench_cuda(&a, &com, argc, argv);
    }
    if (a.rule_ranks && !trace) {
        cli_error("--trace-rule", "needs --trace FILE (the rule is written "
                  "into the trace)");
        return EXIT_BAD_INPUT;
    }
    return optim_bench_main2(&a, backend, steps, trace, &com, argc, argv);
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
    if (orc) {
        lbs_comm_free(comm);
        return cli_exit_code(orc);
    }
    json_t *row = NULL;
    rc = optim_bench_run(a, comm, &row, &e);
    if (rc) {
        cli_error("optim", "%s", e.msg);
        goto out;
    }
    if (lead) {
        if (com->json) {
            char *s = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
            puts(s);
            free(s);
        } else {
            optim_bench_header();
            optim_bench_print(row);
            struct cli_stats st = {
                .mean = json_real_value(json_object_get(row, "step_ms_mean")),
                .sd = json_real_value(json_object_get(row, "step_ms_sd")),
                .median = json_real_value(json_object_get(row,
                                                          "step_ms_median")),
                .min = json_real_value(json_object_get(row, "step_ms_min")),
                .max = json_real_value(json_object_get(row, "step_ms_max")),
                .n = (size_t)a->iters,
                .outliers = (size_t)json_integer_value(
                    json_object_get(row, "outliers"))};
            cli_timing_print(stdout, "  ", "step", &st, 1, "ms");
            if (json_object_get(row, "pair_name"))
                printf("# pair: %s step time / %s step time = %.3f "
                       "[%.3f, %.3f] (median [min, max] of %d A B pairs)\n",
                       json_string_value(json_object_get(row, "pair_name")),
                       json_string_value(json_object_get(row, "optim")),
                       json_real_value(json_object_get(row,
                                                       "pair_ratio_median")),
                       json_real_value(json_object_get(row, "pair_ratio_min")),
                       json_real_value(json_object_get(row, "pair_ratio_max")),
                       (int)json_integer_value(json_object_get(row, "iters")));
        }
        static const char *const cols[] = {
            "optim", "elements", "threads", "iters", "step_ms_mean",
            "step_ms_sd", "step_ms_median", "step_ms_min", "step_ms_max",
            "outliers", "gbps", "stream_gbps", "roofline_frac", "wrong", NULL};
        if (!rc && (rc = cli_export_write(&a->exp, "optim", row, cols)))
            goto out_row;
        if (run && (rc = lbs_run_append(run, "optim", json_incref(row), &e)))
            cli_error("optim", "%s", e.msg);
        else if (run && !com->json)
            fprintf(stderr, "results: %s/optim.jsonl\n", lbs_run_dir(run));
    }
    if (!rc && json_integer_value(json_object_get(row, "wrong"))) {
        cli_error("optim", "non-finite parameters after the run");
        rc = -EDOM;
    }
out_row:
    json_decref(row);
out:
    lbs_run_close(run);
    lbs_comm_free(comm);
    return cli_exit_code(rc);
}

/* --device cuda: the step on GPU 0 (core/cuda/optim.cu) over the same
 * layers, timed with CUDA events around each step, against the device's
 * own copy bandwidth measured in the same run.  Every check that can fail
 * on input (spec, preset, an optimizer without kernels, no GPU, no CUDA
 * build) runs before the results directory is opened. */
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
    rc = 0;
    struct lbs_run *run = NULL;
    int orc = cli_open_run(com, "optim", argc, argv, &run);
    if (orc)
        return cli_exit_code(orc);
    struct layer_set set = {0};
    struct lbs_cuda_optim *h = NULL;
    double *t = calloc((size_t)a->iters, sizeof *t);
    json_t *row = NULL;
    struct lbs_cuda_stream cs = {0};
    if (!t) {
        rc = lbs_err_set(&e, -ENOMEM, "out of memory");
        goto out;
    }
    if (a->stream_gbps <= 0) {
        if ((rc = lbs_cuda_stream((size_t)1 << 28, 5, &cs, &e)))
            goto out;
        if (cs.wrong) {
            rc = lbs_err_set(&e, -EIO, "device copy reference: %ld floats "
                             "copied wrong", cs.wrong);
            goto out;
        }
        a->stream_gbps = cs.memcpy_gbps > cs.kernel_gbps ? cs.memcpy_gbps
                                                          : cs.kernel_gbps;
    }
    if ((rc = layers_make(a->layers, a->elements, 1, &set, &e)) ||
        (rc = lbs_cuda_optim_new(a->spec, set.l, set.n, &h, &e)))
        goto out;
    for (size_t i = 0; i < set.n && !rc; i++)
        if (!(rc = lbs_cuda_optim_write(h, "w", i, set.l[i].w, &e)))
            rc = lbs_cuda_optim_write(h, "g", i, set.l[i].g, &e);
    if (rc || (rc = lbs_cuda_optim_time(h, a->warmup, a->iters, t, &e)) < 0)
        goto out;
    long wrong = rc;           /* 1: a step was skipped (NaN gradient) */
    rc = 0;
    for (size_t i = 0; i < set.n && !rc; i++)
        rc = lbs_cuda_optim_read(h, "w", i, set.l[i].w, &e);
    if (rc)
        goto out;
    wrong += count_nonfinite(&set);
    struct cli_stats st = cli_stats(t, (size_t)a->iters);   /* ms */
    double bpe = lbs_cuda_optim_bytes_per_elem(h);
    double gbps = (double)set.elements * bpe / (st.median * 1e-3) / 1e9;
    row = json_pack(
        "{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f,"
        "s:f,s:f,s:f,s:I}",
        "bench", "optim", "device", "cuda", "gpu", gpu, "optim",
        a->spec, "params", "", "elements", (json_int_t)set.elements,
        "layers", (json_int_t)set.n, "threads", 0, "ranks", 1, "warmup",
        (int)a->warmup, "iters", (int)a->iters, "step_ms_median", st.median,
        "step_ms_min", st.min, "step_ms_max", st.max, "melem_per_s",
        (double)set.elements / (st.median * 1e-3) / 1e6, "bytes_per_elem",
        bpe, "gbps", gbps, "stream_gbps", a->stream_gbps, "roofline_frac",
        gbps / a->stream_gbps, "wrong", (json_int_t)wrong);
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
        cs.n ? "cuda d2d copy (best of cudaMemcpy and a copy kernel)"
             : "given (--stream-gbps)"));
    if (cs.n) {
        json_object_set_new(row, "memcpy_gbps", json_real(cs.memcpy_gbps));
        json_object_set_new(row, "copy_kernel_gbps",
                            json_real(cs.kernel_gbps));
    }
    if (com->json) {
        char *j = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(j);
        free(j);
    } else {
        printf("# GPU: %s; copy reference %.1f GB/s", gpu, a->stream_gbps);
        if (cs.n)
            printf(" (cudaMemcpy %.1f, copy kernel %.1f)", cs.memcpy_gbps,
                   cs.kernel_gbps);
        printf("\n# %-11s %11s %6s %10s %9s %9s %9s %6s %8s %8s %7s %6s\n",
               "optim", "elements", "layers", "step(ms)", "min(ms)",
               "max(ms)", "Melem/s", "B/elem", "GB/s", "copy", "of copy",
               "#wrong");
        printf("  %-11s %11zu %6zu %10.3f %9.3f %9.3f %9.1f %6.1f %8.1f "
               "%8.1f %7.3f %6ld\n",
               json_string_value(json_object_get(row, "optim")),
               set.elements, set.n, st.median, st.min, st.max,
               (double)set.elements / (st.median * 1e-3) / 1e6, bpe, gbps,
               a->stream_gbps, gbps / a->stream_gbps, wrong);
    }
    if (run && (rc = lbs_run_append(run, "optim", json_incref(row), &e)))
        goto out;
    if (run && !com->json)
        fprintf(stderr, "results: %s/optim.jsonl\n", lbs_run_dir(run));
    if (wrong)
        rc = lbs_err_set(&e, -EDOM, "non-finite parameters or a skipped "
                         "step after the run");
out:
    if (rc)
        cli_error("optim", "--device cuda: %s", e.msg);
    json_decref(row);
    lbs_cuda_optim_free(h);
    if (set.l)
        layers_free(&set);
    free(t);
    lbs_run_close(run);
    return cli_exit_code(rc);
}
