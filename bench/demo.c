/* demo.c - `lbscale demo`: the default suite on built-in defaults.
 * For now: STREAM, then one step benchmark per registered optimizer, all
 * into one results run, ending with a roofline table. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lbscale/optim.h"
#include "optim_bench.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: lbscale demo [--elements N] [--threads T] [--out DIR] [--json]\n"
"\n"
"Runs the default suite: STREAM (copy, triad), then the step benchmark of\n"
"every optimizer (%s...) at N parameters (default 100M, uniform:16\n"
"layers), all into one results/<run-id>/, and prints a roofline table.\n"
"\n"
"  --elements N    parameters per optimizer benchmark (default 100M)\n"
"  --threads T     OpenMP threads (default: all cores)\n"
CLI_COMMON_HELP, lbs_optim_names()[0]);
}

int verb_demo(int argc, char **argv)
{
    struct cli_common com = {.save = 1};
    struct optim_bench_args a = {.elements = 100000000, .layers = "uniform:16",
                                 .iters = 10, .warmup = 2};
    long threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int c = cli_common_opt(&com, argc, argv, &i);
        if (c < 0)
            return EXIT_BAD_INPUT;
        if (c)
            continue;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--elements")) {
            if (cli_size(o, v, &a.elements)) return EXIT_BAD_INPUT;
            i++;
        } else if (!strcmp(o, "--threads")) {
            if (cli_int(o, v, 1, 4096, &threads)) return EXIT_BAD_INPUT;
            i++;
        } else {
            cli_error("demo", "unknown option '%s' (see --help)", o);
            return EXIT_BAD_INPUT;
        }
    }
    a.threads = cli_threads(threads);
    struct lbs_run *run = NULL;
    if (cli_open_run(&com, "demo", argc, argv, &run))
        return EXIT_RUNTIME;
    struct lbs_err e;
    int rc = 0;
    struct stream_result s;
    fprintf(stderr, "demo: STREAM over 3 x 32M doubles, %d threads\n",
            a.threads);
    if (stream_measure(32000000, 10, &s) || s.wrong) {
        cli_error("demo", "STREAM measurement failed");
        lbs_run_close(run);
        return EXIT_RUNTIME;
    }
    a.stream_gbps = s.triad_gbps;
    json_t *srow = json_pack("{s:s,s:I,s:i,s:i,s:f,s:f,s:I}", "bench",
                             "stream", "elements", (json_int_t)s.n, "threads",
                             a.threads, "iters", 10, "copy_gbps", s.copy_gbps,
                             "triad_gbps", s.triad_gbps, "wrong",
                             (json_int_t)s.wrong);
    if (run && (rc = lbs_run_append(run, "stream", srow, &e)))
        goto fail;
    if (!run)
        json_decref(srow);
    if (!com.json)
        printf("STREAM: copy %.2f GB/s, triad %.2f GB/s (%d threads)\n\n",
               s.copy_gbps, s.triad_gbps, a.threads);
    json_t *rows = json_array();
    for (const char *const *n = lbs_optim_names(); *n; n++) {
        fprintf(stderr, "demo: optim %s, %zu elements\n", *n, a.elements);
        a.spec = *n;
        json_t *row;
        if ((rc = optim_bench_run(&a, NULL, &row, &e)))
            break;
        json_array_append(rows, row);
        if (run && (rc = lbs_run_append(run, "optim", row, &e)))
            break;
        if (!run)
            json_decref(row);
    }
    if (!rc) {
        size_t i;
        json_t *r;
        if (!com.json)
            optim_bench_header();
        json_array_foreach(rows, i, r) {
            if (com.json) {
                char *t = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
                puts(t);
                free(t);
            } else
                optim_bench_print(r);
        }
        if (run) {
            fprintf(stderr, "results: %s\n", lbs_run_dir(run));
            /* figures are a bonus: a missing gnuplot must not fail a demo */
            struct lbs_err pe;
            if (plot_run(lbs_run_dir(run), &pe))
                cli_error("demo", "no plots: %s", pe.msg);
        }
    }
    json_decref(rows);
fail:
    if (rc)
        cli_error("demo", "%s", e.msg);
    lbs_run_close(run);
    return cli_exit_code(rc);
}
