/* results_verbs.c - the verbs that read results runs: check, compare,
 * plot and report.  Each is its option table, its checks of the command
 * line, the calls into the results library (report/: check.h, compare.h,
 * plot.h, report.h) and its exit code: 0 ok, 1 a regression (check,
 * compare) or a failure, 2 bad input. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"
#include "compare.h"
#include "plot.h"
#include "report.h"
#include "results.h"

/* ------------------------------------------------------------------ */
/* lbscale check                                                        */

static const char check_usage[] =
"usage: lbscale check RUN_DIR --baseline NAME [--baseline NAME...]\n"
"                     [--strict] [--update] [--json]";

static const char check_about[] =
"Compares a results run with checked-in baselines and prints, per metric,\n"
"the baseline, the run's value (median over matching rows), the delta,\n"
"the rule and pass/FAIL.  A metric whose configuration (the sizes,\n"
"threads, ... of its \"where\") the run does not have is skipped, so a run\n"
"made with other settings is compared on what it shares (to compare two\n"
"runs with each other: lbscale compare).  Exit 0 when all pass, 1 on a\n"
"regression (or, with --strict, a missing metric), 2 on bad input or when\n"
"no configuration matches.  Rules: exact (wire bytes), rel (the\n"
"deterministic simulator, within tol), drop (throughput as a fraction of\n"
"the STREAM measured in the same run: fail only on a drop beyond margin),\n"
"rise (times: fail only on a rise beyond margin).  The run's *.jsonl\n"
"files must be regular files of at most 256 MiB each, a baseline at most\n"
"16 MiB.";

static const char check_epilog[] =
"CI: lbscale suite bench/suites/ci.json --out R && lbscale check R \\\n"
"      --strict --baseline wire --baseline kernels   (results/baselines/)";

int cli_baseline_opt(const char *opt, const char *value, void *names)
{
    struct cli_names *b = names;
    if (b->n == CLI_BASELINES_MAX) {
        cli_error(opt, "at most %d baselines", CLI_BASELINES_MAX);
        return -EINVAL;
    }
    b->v[b->n++] = value;
    return 0;
}

int verb_check(int argc, char **argv)
{
    struct cli_names bl = {.n = 0};
    int update = 0, json = 0, strict = 0;
    const struct cli_opt opts[] = {
        CLI_BASELINE_OPT(&bl,
            "results/baselines/NAME.json in the source tree (or\n"
            "$LBSCALE_BASELINES/NAME.json, or a path to a file)"),
        {.name = "update", .type = CLI_FLAG, .dst = &update,
         .help = "rewrite the baselines' values from this run instead\n"
                 "of checking (after an intended change)"},
        {.name = "strict", .type = CLI_FLAG, .dst = &strict,
         .help = "a metric missing from the run fails (CI, whose suite\n"
                 "makes every configuration)"},
        {.name = "json", .type = CLI_FLAG, .dst = &json,
         .help = "one JSON object per metric on stdout, then a summary"},
        {0}};
    const struct cli_verb verb = {.name = "check", .usage = check_usage,
                                  .about = check_about, .opts = opts,
                                  .epilog = check_epilog};
    char **pos;
    int npos;
    int rc = cli_parse(&verb, argc, argv, &pos, &npos);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (npos > 1) {
        cli_error("check", "one results directory only (see --help)");
        return EXIT_BAD_INPUT;
    }
    const char *run = npos ? pos[0] : NULL, *const *names = bl.v;
    int nb = bl.n;
    if (!run || !nb) {
        cli_error("check", "usage: lbscale check RUN_DIR --baseline NAME "
                  "(see --help)");
        return EXIT_BAD_INPUT;
    }
    struct lbs_err ve;
    if (lbs_run_valid(run, &ve)) {
        cli_error("check", "%s", ve.msg);
        return EXIT_BAD_INPUT;
    }
    const struct check_opts o = {.update = update, .json = json,
                                 .strict = strict, .warn = cli_error};
    struct check_tally t;
    if (check_run(run, names, nb, &o, &t, &ve)) {
        cli_error("check", "%s", ve.msg);
        return EXIT_BAD_INPUT;
    }
    int fails = t.fails, total = t.total, skipped = t.skipped;
    if (!update && total > 0 && skipped == total) {
        cli_error("check", "%s has none of the configurations the "
                  "baseline%s name%s (sizes, threads, ...): nothing to check",
                  run, nb > 1 ? "s" : "", nb > 1 ? "" : "s");
        return EXIT_BAD_INPUT;
    }
    if (json && !update) {
        json_t *s = check_summary(&t, strict);
        char *txt = json_dumps(s, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(txt ? txt : "{}");
        free(txt);
        json_decref(s);
    } else if (!update) {
        printf("check: %d metrics, %d passed, %d failed, %d skipped (their "
               "configuration is not in this run%s)%s\n", total,
               total - fails - skipped, fails, skipped,
               strict ? "" : "; --strict fails them",
               fails ? " (regression)" : "");
    }
    return fails ? EXIT_RUNTIME : 0;
}

/* ------------------------------------------------------------------ */
/* lbscale compare                                                      */

static const char compare_usage[] =
"usage: lbscale compare RUN_A RUN_B [--min-effect F] [--margin-single F]\n"
"                       [--alpha P] [--family ratio|all]\n"
"                       [--json | --markdown]";

static const char compare_about[] =
"Every metric the two results runs share, matched on configuration (the\n"
"verb's key fields: optim/compressor/collective, sizes, threads, ...),\n"
"side by side: median of A, median of B, change, samples, verdict.\n"
"Deterministic metrics (wire bytes, simulated times, seeded accuracies)\n"
"must be equal (else CHANGED).  Timings and rates (2 or more samples a\n"
"side, e.g. a suite's \"repeat\"): an exact one-sided Mann-Whitney test\n"
"per metric, Holm's correction over all of them (alpha is the chance of\n"
"any false alarm in the whole comparison), and a change counts only\n"
"beyond --min-effect or the samples' own spread (coefficient of\n"
"variation), whichever is larger.  Where the samples are too few for the\n"
"test to reach alpha (at 3 a side its best p is 1/20, so 3 repeats cannot\n"
"be tested among many metrics), only a change beyond --margin-single\n"
"counts.  Where a kernel has a paired ratio (an optimizer's\n"
"roofline_frac, a compressor's stream_frac, PowerSGD's sgemm_frac: its\n"
"time against the machine's reference measured next to it), that ratio\n"
"alone is tested; its raw times and rates, and the STREAM rows, are\n"
"reported but not tested, because between two runs the machine's\n"
"bandwidth moves 10-20% while the ratios hold (--family all tests\n"
"everything).  Each row says what change its samples could detect and\n"
"how many repeats a side a 10% change needs (docs/regression-gates.md).\n"
"Exit 0: no regression; 1: a metric regressed or changed; 2: bad input.";

int verb_compare(int argc, char **argv)
{
    struct compare_opts o = COMPARE_OPTS_DEFAULT;
    const struct cli_opt opts[] = {
        {.name = "min-effect", .type = CLI_DOUBLE, .dst = &o.min_effect,
         .arg = "F", .lo = 1e-6, .hi = 0.99,
         .help = "smallest relative change that counts, raised to the\n"
                 "samples' spread where that is larger (default 0.05)"},
        {.name = "margin", .type = CLI_DOUBLE, .dst = &o.min_effect,
         .arg = "F", .lo = 1e-6, .hi = 0.99,
         .help = "the older name of --min-effect"},
        {.name = "margin-single", .type = CLI_DOUBLE, .dst = &o.margin_single,
         .arg = "F", .lo = 1e-6, .hi = 0.99,
         .help = "the change that counts where the test cannot decide\n"
                 "(too few samples; default 0.25)"},
        {.name = "alpha", .type = CLI_DOUBLE, .dst = &o.alpha, .arg = "P",
         .lo = 1e-6, .hi = 0.99,
         .help = "family-wise significance level: the chance of any\n"
                 "false alarm in the comparison (default 0.05)"},
        {.name = "family", .type = CLI_CHOICE, .dst = &o.family_all,
         .arg = "F", .choices = (const char *const[]){"ratio", "all", NULL},
         .help = "what is tested: ratio (default: a kernel's paired\n"
                 "ratio alone where it has one) or all (every timing\n"
                 "and rate, e.g. to compare two machines)"},
        {.name = "json", .type = CLI_FLAG, .dst = &o.json,
         .help = "one JSON object per metric, then a summary object"},
        {.name = "markdown", .type = CLI_FLAG, .dst = &o.markdown,
         .help = "a markdown table (CI job summaries)"},
        {0}};
    const struct cli_verb verb = {.name = "compare", .usage = compare_usage,
                                  .about = compare_about, .opts = opts};
    char **run;
    int nrun;
    int rc = cli_parse(&verb, argc, argv, &run, &nrun);
    if (rc)
        return rc < 0 ? EXIT_BAD_INPUT : 0;
    if (nrun > 2) {
        cli_error("compare", "more than two runs ('%s')", run[2]);
        return EXIT_BAD_INPUT;
    }
    if (nrun != 2) {
        cli_error("compare", "usage: lbscale compare RUN_A RUN_B (see "
                  "--help)");
        return EXIT_BAD_INPUT;
    }
    if (o.json && o.markdown) {
        cli_error("compare", "--json and --markdown exclude each other");
        return EXIT_BAD_INPUT;
    }
    struct lbs_err e;
    for (int k = 0; k < 2; k++)
        if (lbs_run_valid(run[k], &e)) {
            cli_error("compare", "%s", e.msg);
            return EXIT_BAD_INPUT;
        }
    if (o.markdown)
        printf("| verb | configuration | metric | A | B | change | samples "
               "| p (Holm) | verdict | could detect |\n"
               "|---|---|---|--:|--:|--:|--:|--:|---|---|\n");
    else if (!o.json)
        printf("# A = %s\n# B = %s\n  %-8s %-44s %-18s %12s %12s %9s %7s "
               "%8s  %-24s %s\n", run[0], run[1], "verb", "configuration",
               "metric", "A (median)", "B (median)", "change", "n A/B",
               "p (Holm)", "verdict", "could detect");
    struct compare_tally t;
    if (compare_runs(run[0], run[1], &o, &t, &e)) {
        cli_error("compare", "%s", e.msg);
        return EXIT_BAD_INPUT;
    }
    if (o.json) {
        json_t *s = compare_summary(&t, &o);
        char *txt = json_dumps(s, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(txt ? txt : "{}");
        free(txt);
        json_decref(s);
    } else {
        char fam[512];
        compare_family_line(&t, &o, fam, sizeof fam);
        printf("%scompare: %d metrics, %d regressed (%d changed), %d better"
               "\n%s%s\n", o.markdown ? "\n" : "", t.compared, t.regressed,
               t.changed, t.improved, o.markdown ? "\n" : "", fam);
    }
    if (t.compared == 0) {
        cli_error("compare", "the two runs share no metric");
        return EXIT_BAD_INPUT;
    }
    return t.regressed ? EXIT_RUNTIME : 0;
}

/* ------------------------------------------------------------------ */
/* lbscale plot                                                         */

static const char plot_usage[] =
"usage: lbscale plot RUN_DIR [--scales LIST] [--json]";

/* %s: the gnuplot scripts' directory (plot_scripts_dir()). */
static const char plot_about_fmt[] =
"Draws every figure the run's results allow, as PNG and SVG under\n"
"RUN_DIR/plots/ (with the .dat table each was drawn from), with the\n"
"gnuplot scripts in %s (or $LBSCALE_PLOTS), and prints the PNG paths.\n"
"Kinds whose results are absent are skipped.\n"
"  roofline     optim.jsonl: achieved GB/s per optimizer step vs STREAM\n"
"  scaling      sim.jsonl: scaling efficiency vs GPUs, one line per\n"
"               optimizer, one figure per model and platform\n"
"  itersplit    sim.jsonl: iteration time split (compute, optimizer,\n"
"               exposed communication) as stacked bars at chosen scales\n"
"  busbw        coll.jsonl: bus bandwidth vs message size per collective,\n"
"               with the link limit (or this run's STREAM copy)\n"
"  compress     compress.jsonl: throughput (fraction of STREAM) vs error\n"
"  wire         compress.jsonl: bits on the wire per gradient element\n"
"  convergence  train.jsonl: test accuracy vs step, and vs simulated\n"
"               wall-clock at 1,024 GPUs (sim.jsonl rows at that scale)\n"
"  netsweep     sim_netsweep.jsonl: scaling efficiency vs network Gb/s per\n"
"               node, one line per optimizer (lbscale sim netsweep)\n"
"  compression_tradeoff  train.jsonl + sim.jsonl: LAMB's final accuracy\n"
"               with each compressor vs the simulated BERT-Large step at\n"
"               the largest GPU count with a compressed trace";

static const char plot_epilog[] =
"Exit 0 when figures were drawn, 1 when gnuplot failed, 2 on bad input and\n"
"when the run has nothing to draw (an empty directory, no results yet).";

/* --scales LIST: GPU counts, kept as the text the gnuplot script reads. */
static int scales_opt(const char *opt, const char *v, void *dst)
{
    (void)opt;
    if (!*v || strspn(v, "0123456789,") != strlen(v) ||
        strlen(v) >= PLOT_SCALES_MAX) {
        cli_error("--scales", "expected GPU counts like 8,128,1024");
        return -EINVAL;
    }
    *(const char **)dst = v;
    return 0;
}

/* The option table and parse of `lbscale plot`; 0 with *run set, CLI_EXIT
 * after --help, or -EINVAL after one printed line. */
static int plot_args(int argc, char **argv, const char **run, int *json,
                     const char **scales)
{
    char about[sizeof plot_about_fmt + PATH_MAX];
    snprintf(about, sizeof about, plot_about_fmt, plot_scripts_dir());
    const struct cli_opt opts[] = {
        {.name = "scales", .type = CLI_CALL, .fn = scales_opt, .dst = scales,
         .arg = "LIST",
         .help = "GPU counts of the itersplit bars (default 8,128,1024;\n"
                 "those present in the run are used)"},
        {.name = "json", .type = CLI_FLAG, .dst = json,
         .help = "instead of the paths, one JSON object: {\"run\",\n"
                 "\"figures\": [{\"figure\", \"png\", \"svg\", \"caption\"}]}"},
        {0}};
    const struct cli_verb verb = {.name = "plot", .usage = plot_usage,
                                  .about = about, .opts = opts,
                                  .epilog = plot_epilog};
    char **pos;
    int npos;
    int rc = cli_parse(&verb, argc, argv, &pos, &npos);
    if (rc)
        return rc;
    if (npos != 1) {
        cli_error("plot", "expected exactly one results directory (see "
                  "--help)");
        return -EINVAL;
    }
    *run = pos[0];
    return 0;
}

int verb_plot(int argc, char **argv)
{
    const char *run = NULL, *scales = NULL;
    int json = 0;
    int prc = plot_args(argc, argv, &run, &json, &scales);
    if (prc)
        return prc < 0 ? EXIT_BAD_INPUT : 0;
    struct lbs_err e;
    /* an empty directory: say so rather than "meta.json is missing" */
    DIR *d = opendir(run);
    if (d) {
        struct dirent *de;
        int any = 0;
        while (!any && (de = readdir(d)))
            any = strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
        closedir(d);
        if (!any) {
            cli_error("plot", "%s is an empty directory: nothing to plot (a "
                      "results run comes from lbscale demo, suite or a verb "
                      "with --out)", run);
            return EXIT_BAD_INPUT;
        }
    }
    json_t *figures = json ? json_array() : NULL;
    const struct plot_opts o = {.scales = scales, .print = 1,
                                .figures = figures};
    int drawn = 0;
    int rc = plot_run_ex(run, &o, &drawn, &e);
    if (rc) {
        cli_error("plot", "%s", e.msg);
        json_decref(figures);
        return cli_exit_code(rc);
    }
    if (!drawn) {
        char dir[PATH_MAX + 8];
        snprintf(dir, sizeof dir, "%s/plots", run);
        rmdir(dir);   /* only when plot_run just made it and it is empty */
        cli_error("plot", "%s has no results to draw (no optim, sim, coll, "
                  "compress, train or sim_netsweep rows)", run);
        json_decref(figures);
        return EXIT_BAD_INPUT;
    }
    if (figures) {
        json_t *out = json_pack("{s:s,s:O}", "run", run, "figures", figures);
        char *t = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(t ? t : "{}");
        free(t);
        json_decref(out);
        json_decref(figures);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* lbscale report                                                       */

static const char report_usage[] =
"usage: lbscale report RUN_DIR [--baseline NAME...] [--compare RUN_B]\n"
"                      [--text | --json]";

static const char report_about[] =
"Writes RUN_DIR/report.html: one self-contained page (figures embedded,\n"
"no external files, a few lines of inline script to sort tables) that\n"
"opens with the findings (the headline numbers, each linked to its table\n"
"and figure), then the regression verdicts when asked for, the figures\n"
"with their captions, a table per section (STREAM, optimizer steps,\n"
"compressors, collectives, training, simulator; click a header to sort),\n"
"the machine, the suite's entries and the exact command lines.\n"
"Run `lbscale plot RUN_DIR` first to (re)draw the figures.  The run's\n"
"*.jsonl files must be regular files of at most 256 MiB each.";

static const char report_epilog[] =
"The page shows the verdicts; it does not gate on them: exit 0 when the\n"
"page was written (use check or compare for a CI gate), 2 on bad input.";

/* --compare RUN_B, once. */
static int compare_opt(const char *opt, const char *value, void *dst)
{
    const char **cmp = dst;
    if (*cmp) {
        cli_error(opt, "one run to compare with only");
        return -EINVAL;
    }
    *cmp = value;
    return 0;
}

int verb_report(int argc, char **argv)
{
    struct cli_names bl = {.n = 0};
    const char *cmp = NULL;
    int text = 0, json = 0;
    const struct cli_opt opts[] = {
        CLI_BASELINE_OPT(&bl,
            "add `lbscale check RUN_DIR --baseline NAME`'s verdicts\n"
            "(repeatable; a metric the run lacks is skipped)"),
        {.name = "compare", .type = CLI_CALL, .fn = compare_opt, .dst = &cmp,
         .arg = "RUN_B",
         .help = "add `lbscale compare RUN_DIR RUN_B`'s verdicts (A =\n"
                 "this run)"},
        {.name = "text", .type = CLI_FLAG, .dst = &text,
         .help = "also print the findings and summary tables on stdout"},
        {.name = "json", .type = CLI_FLAG, .dst = &json,
         .help = "print one JSON object on stdout: the report's path,\n"
                 "the findings and the verdicts' summaries"},
        {0}};
    const struct cli_verb verb = {.name = "report", .usage = report_usage,
                                  .about = report_about, .opts = opts,
                                  .epilog = report_epilog};
    char **pos;
    int npos;
    int prc = cli_parse(&verb, argc, argv, &pos, &npos);
    if (prc)
        return prc < 0 ? EXIT_BAD_INPUT : 0;
    if (npos > 1) {
        cli_error("report", "one results directory only (see --help)");
        return EXIT_BAD_INPUT;
    }
    const char *run = npos ? pos[0] : NULL, *const *names = bl.v;
    int nb = bl.n;
    if (!run) {
        cli_error("report", "expected a results directory (see --help)");
        return EXIT_BAD_INPUT;
    }
    if (text && json) {
        cli_error("report", "--text and --json exclude each other");
        return EXIT_BAD_INPUT;
    }
    struct lbs_err e;
    if (lbs_run_valid(run, &e)) {
        cli_error("report", "%s", e.msg);
        return EXIT_BAD_INPUT;
    }
    char page[PATH_MAX + 16];
    snprintf(page, sizeof page, "%s/report.html", run);
    if (lbs_out_file_check(page, &e)) {   /* before any work */
        cli_error("report", "%s", e.msg);
        return EXIT_BAD_INPUT;
    }
    json_t *verdicts = json_object();
    if (nb) {
        json_t *c = check_verdicts(run, names, nb, 0, &e);
        if (!c) {
            cli_error("check", "%s", e.msg);
            json_decref(verdicts);
            return EXIT_BAD_INPUT;
        }
        json_object_set_new(verdicts, "check", c);
    }
    if (cmp) {
        json_t *c = compare_verdicts(run, cmp, &e);
        if (!c) {
            cli_error("compare", "%s", e.msg);
            json_decref(verdicts);
            return EXIT_BAD_INPUT;
        }
        json_object_set_new(verdicts, "compare", c);
    }
    json_t *fnd = NULL;
    int rc = report_write_ex(run, verdicts, &fnd, &e);
    if (rc) {
        cli_error("report", "%s", e.msg);
        json_decref(verdicts);
        return cli_exit_code(rc);   /* a full disk is the machine's: 1 */
    }
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/report.html", run);
    if (json) {
        json_t *o = json_pack("{s:s,s:O}", "report", path, "findings", fnd);
        const char *k[] = {"check", "compare"};
        for (int j = 0; j < 2; j++) {
            json_t *v = json_object_get(verdicts, k[j]);
            if (v)
                json_object_set(o, k[j], json_object_get(v, "summary"));
        }
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        puts(s ? s : "{}");
        free(s);
        json_decref(o);
    } else if (text) {
        report_summary_text(run, stdout);
    }
    json_decref(fnd);
    json_decref(verdicts);
    fprintf(stderr, "report: %s\n", path);
    return 0;
}
