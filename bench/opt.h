/* opt.h - command-line options declared as data (bench/ only).
 *
 * A verb describes its options as a table of struct cli_opt rows; one
 * parser (getopt_long underneath, so '--opt value', '--opt=value' and
 * unique prefixes all work) checks each value and stores it, and the same
 * rows print the option part of --help.  Adding an option is one row.
 *
 * Ownership: the tables are static data of each verb; cli_parse() stores
 * pointers into argv (which must outlive the values) and allocates
 * nothing. */
#ifndef LBS_OPT_H
#define LBS_OPT_H

#include <stddef.h>
#include <stdio.h>

#include "check.h"

enum cli_type {
    CLI_END = 0,  /* terminates a table */
    CLI_FLAG,     /* no value: *(int *)dst = set (0 means 1) */
    CLI_CLEAR,    /* no value: *(int *)dst = 0 (e.g. --no-save) */
    CLI_STR,      /* *(const char **)dst = the value */
    CLI_LONG,     /* *(long *)dst, an integer in [lo, hi] */
    CLI_DOUBLE,   /* *(double *)dst, finite, in [lo, hi] */
    CLI_SIZE,     /* *(size_t *)dst, a positive count (K M G Ki Mi Gi),
                     at most hi when hi > 0 */
    CLI_CHOICE,   /* *(int *)dst = the index of the value in .choices */
    CLI_CALL,     /* fn(opt, value, dst); value is NULL when .arg is NULL */
    CLI_INCLUDE,  /* dst is another table (e.g. the common options) */
};

/* fn's return: 0 stored, CLI_EXIT to stop parsing and exit 0 (it printed
 * what was asked, e.g. --list), negative after printing one error line. */
#define CLI_EXIT 1

struct cli_opt {
    const char *name;    /* long name without "--", e.g. "elements" */
    enum cli_type type;
    void *dst;
    const char *arg;     /* the value's name in --help ("N"); NULL: a flag
                            (CLI_CALL without a value) */
    const char *help;    /* its --help text; '\n' starts a continued line;
                            NULL hides the option from --help */
    double lo, hi;       /* CLI_LONG, CLI_DOUBLE range; CLI_SIZE maximum */
    int set;             /* CLI_FLAG: the value stored (0 means 1) */
    char short_name;     /* e.g. 'h', or 0 */
    const char *const *choices;   /* CLI_CHOICE: NULL-terminated */
    int (*fn)(const char *opt, const char *value, void *dst);
};

/* One verb's command line: what --help prints, in this order: usage, the
 * about text, "options:", the rows, then the epilog. */
struct cli_verb {
    const char *name;            /* error prefix: "lbscale NAME: ..." */
    const char *usage;           /* "usage: lbscale optim --optim SPEC ..." */
    const char *about;           /* paragraphs before the options, or NULL */
    const struct cli_opt *opts;  /* ends with a CLI_END row */
    const char *epilog;          /* text after the options, or NULL */
    /* A verb over a registry (optim, compress): --list prints every
     * entry, --help NAME one entry (topic_help(NULL or NAME, f), -ENOENT
     * for an unknown NAME); topic names an entry in messages. */
    const char *topic;
    int (*topic_help)(const char *name, FILE *f);
};

/* Parse argv[1..argc-1] (argv[0] is the verb's name) against v->opts.
 * -h/--help prints cli_usage(v, stdout) unless the table has its own
 * "help" row; with topic_help, --help NAME and --list print entries.
 * Operands (non-options; argv is permuted so they come last)
 * are returned through pos/npos; when npos is NULL an operand is an
 * error.  Returns 0 to go on, CLI_EXIT when the caller should exit 0
 * (help or a CLI_CALL that printed), or -EINVAL after one printed line
 * naming the option ("unknown option", "missing value", a bad value). */
int cli_parse(const struct cli_verb *v, int argc, char **argv, char ***pos,
              int *npos);

/* The help text of v, generated from its rows. */
void cli_usage(const struct cli_verb *v, FILE *f);

/* --isa c|avx2|avx512 (cli_isa: refused when unknown or beyond the CPU) */
int cli_isa_opt(const char *opt, const char *value, void *unused);
#define CLI_ISA_OPT                                                          \
    {.name = "isa", .type = CLI_CALL, .fn = cli_isa_opt, .arg = "L",         \
     .help = "kernel level: c (portable), avx2 or avx512; at most what\n"    \
             "the CPU has (else one line, exit 2); default the best,\n"      \
             "or LBSCALE_ISA.  Shown in the isa column and meta.json"}

/* Rows every benchmark verb shares (struct cli_common of cli.h):
 * --json, --out DIR, --no-save. */
#define CLI_COMMON_OPTS(c)                                                   \
    {.name = "json", .type = CLI_FLAG, .dst = &(c)->json,                    \
     .help = "one JSON object per result line on stdout"},                   \
    {.name = "out", .type = CLI_STR, .dst = &(c)->out, .arg = "DIR",         \
     .help = "write results into run directory DIR (default: a new\n"        \
             "results/<UTC time>-<git rev>/, root from $LBSCALE_RESULTS)"},  \
    {.name = "no-save", .type = CLI_CLEAR, .dst = &(c)->save,                \
     .help = "do not write results files"}

/* --export-csv FILE / --export-markdown FILE (struct cli_export): a file
 * whose directory cannot take it is refused before any work. */
int cli_export_path(const char *opt, const char *value, void *dst);
/* An output FILE option (--trace, --export-layers, --save-input): a path
 * that exists and is not a regular file is refused before any work
 * (lbs_out_file_check); the directory may be made later. */
int cli_out_file(const char *opt, const char *value, void *dst);
#define CLI_EXPORT_OPTS(x)                                                   \
    {.name = "export-csv", .type = CLI_CALL, .fn = cli_export_path,          \
     .dst = &(x)->csv, .arg = "FILE",                                        \
     .help = "also write the result as CSV (hyperfine's\n"                   \
             "convention: a header line, one row)"},                         \
    {.name = "export-markdown", .type = CLI_CALL, .fn = cli_export_path,     \
     .dst = &(x)->md, .arg = "FILE",                                         \
     .help = "also write it as a markdown table"}

/* Rows the timing verbs share (optim, compress, stream, coll): declared
 * once here, each verb giving its own help text (what a step is) and,
 * where nccl-tests has one, a short letter (sh, 0 for none). */
#define CLI_THREADS_OPT(t)                                                   \
    {.name = "threads", .type = CLI_LONG, .dst = (t), .arg = "T",            \
     .lo = 1, .hi = 4096,                                                    \
     .help = "OpenMP threads (default: OMP_NUM_THREADS or all cores)"}
/* --elements N: a positive count (K M G, Ki Mi Gi), at most hi (0: any) */
#define CLI_ELEMENTS_OPT(n, max, text)                                       \
    {.name = "elements", .type = CLI_SIZE, .dst = (n), .arg = "N",           \
     .hi = (max), .help = text}
#define CLI_ITERS_OPT(k, sh, max, text)                                      \
    {.name = "iters", .type = CLI_LONG, .dst = (k), .arg = "K",              \
     .short_name = (sh), .lo = 1, .hi = (max), .help = text}
#define CLI_WARMUP_OPT(w, sh, text)                                          \
    {.name = "warmup", .type = CLI_LONG, .dst = (w), .arg = "W",             \
     .short_name = (sh), .lo = 0, .hi = 1000000, .help = text}
/* --stream-gbps X: the reference given instead of measured */
#define CLI_STREAM_GBPS_OPT(x, text)                                         \
    {.name = "stream-gbps", .type = CLI_DOUBLE, .dst = (x), .arg = "X",      \
     .lo = 1e-3, .hi = 1e6, .help = text}
/* --device cpu|cuda: *(int *)d = 0 or 1 */
#define CLI_DEVICE_OPT(d, text)                                              \
    {.name = "device", .type = CLI_CHOICE, .dst = (d), .arg = "D",           \
     .choices = (const char *const[]){"cpu", "cuda", NULL}, .help = text}

/* --baseline NAME, repeatable, up to CLI_BASELINES_MAX (check, report):
 * the names in order into a struct cli_names (cli_baseline_opt is in
 * results_verbs.c; report/check.c reads the baselines).  text: the verb's
 * --help line. */
#define CLI_BASELINES_MAX CHECK_BASELINES_MAX
struct cli_names {
    const char *v[CLI_BASELINES_MAX];
    int n;
};
int cli_baseline_opt(const char *opt, const char *value, void *names);
#define CLI_BASELINE_OPT(names, text)                                        \
    {.name = "baseline", .type = CLI_CALL, .fn = cli_baseline_opt,           \
     .dst = (names), .arg = "NAME", .help = (text)}

#endif
