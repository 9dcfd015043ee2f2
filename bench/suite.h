/* suite.h - suites of benchmark entries, the HTML report and the plain-
 * text summary (bench/ only; suite.c and demo.c).
 *
 * A suite is a JSON file (format in bench/suites/README.md):
 *
 *   {"suite": "quick", "vars": {"elements": "16M"},
 *    "entries": [
 *      {"verb": "stream"},
 *      {"name": "optim-{optim}", "verb": "optim",
 *       "args": ["--optim", "{optim}", "--elements", "{elements}",
 *                "--stream-gbps", "{stream.triad_gbps}"],
 *       "foreach": {"optim": "@optimizers"}},
 *      {"verb": "train", "ranks": 4, "args": ["--optim", "lamb"]}]}
 *
 * Every entry runs as a child process of this binary (mpirun -np N for
 * ranks > 1) with --out RUN, so all rows land in one results run.  The
 * runner records each entry in RUN/suite.jsonl (atomically), which
 * --resume reads to skip what already succeeded.
 */
#ifndef LBS_SUITE_H
#define LBS_SUITE_H

#include <jansson.h>
#include <stdio.h>

#include "lbscale/error.h"

/* --jobs: at most this many entries at once (a many-core machine's
 * training grid; each entry is a process with its own pipes). */
#define SUITE_MAX_JOBS 64

struct suite_opts {
    const char *file;      /* path (or a name for messages when text set) */
    const char *text;      /* JSON text; NULL = read file */
    const char *out;       /* --out DIR or NULL (new run) */
    const char *resume;    /* --resume RUN or NULL */
    json_t *vars;          /* --set overrides, object of strings (borrowed) */
    int json;              /* --json: entry rows and summary as JSON lines */
    int dry_run;           /* validate and list, run nothing */
    int no_plot;           /* no figures, no report */
    long jobs;             /* --jobs: entries at once (0 or 1: one) */
    const char *what;      /* verb name for messages ("suite", "demo") */
    int argc;              /* the command line, for meta.json */
    char **argv;
};

/* Validate, run, plot, report and summarise; returns the exit code
 * (0 all ok, 1 an entry failed, 2 bad input). */
int suite_main(const struct suite_opts *o);

/* Parse and expand a suite document only (no binary probe, nothing
 * validated against the verbs, nothing run): 0 and the entry count, or
 * -EINVAL after one printed line.  The fuzz harness's entry point. */
int suite_parse_text(const char *text, size_t *entries);

/* --set KEY=VALUE into vars (suite and demo); -EINVAL printed. */
int suite_set_opt(json_t *vars, const char *what, const char *v);
/* The same as a CLI_CALL (opt.h): dst is the struct suite_opts, whose
 * vars and what are set before parsing. */
int suite_set_call(const char *opt, const char *value, void *dst);

/* The option rows suite and demo share (opt.h), o a struct suite_opts *:
 * --out, --resume, --set, --dry-run, --no-plot, --json. */
#define SUITE_RUN_OPTS(o)                                                    \
    {.name = "out", .type = CLI_STR, .dst = &(o)->out, .arg = "DIR",         \
     .help = "write into run directory DIR (default: a new\n"               \
             "results/<UTC time>-<git rev>/)"},                              \
    {.name = "resume", .type = CLI_STR, .dst = &(o)->resume, .arg = "RUN",   \
     .help = "continue an interrupted or partly failed run: entries\n"      \
             "recorded as ok there (same name and arguments) are\n"         \
             "skipped, the others run again"},                               \
    {.name = "set", .type = CLI_CALL, .fn = suite_set_call, .dst = (o),      \
     .arg = "KEY=VALUE",                                                     \
     .help = "override one of the suite's \"vars\" (repeatable)"},          \
    {.name = "dry-run", .type = CLI_FLAG, .dst = &(o)->dry_run,              \
     .help = "validate and list the expanded entries; run nothing"},         \
    {.name = "no-plot", .type = CLI_FLAG, .dst = &(o)->no_plot,              \
     .help = "no figures and no report at the end"},                         \
    {.name = "json", .type = CLI_FLAG, .dst = &(o)->json,                    \
     .help = "one JSON object per finished entry on stdout, and a\n"        \
             "final summary object (instead of the text summary)"}

#endif
