/* cli.h - shared pieces of the lbscale command line (bench/ only). */
#ifndef LBS_CLI_H
#define LBS_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "lbscale/error.h"
#include "results.h"
#include "opt.h"
#include "stats.h"

/* Exit codes: 0 ok, 1 runtime failure, 2 bad input. */
#define EXIT_BAD_INPUT 2
#define EXIT_RUNTIME 1

/* Print "lbscale: <what>: <why>" on stderr. */
void cli_error(const char *what, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Exit code for a library return code. */
int cli_exit_code(int rc);

/* Strict option values; on failure print the error and return -EINVAL. */
int cli_size(const char *opt, const char *s, size_t *out);
int cli_int(const char *opt, const char *s, long lo, long hi, long *out);
int cli_double(const char *opt, const char *s, double lo, double hi,
               double *out);
/* --isa LEVEL: force the kernel level (lbs_isa_select), refused when
 * unknown or beyond the CPU. */
int cli_isa(const char *opt, const char *s);

/* Monotonic seconds. */
double cli_now(void);


/* The planted slowdown, a test-only knob for benchmarking the regression
 * gates (docs/regression-gates.md): LBSCALE_TEST_SLOWDOWN=VERB/NAME=F
 * (VERB optim or compress, NAME an optimizer or compressor name, F in
 * (1, 100]) makes that kernel's timed calls take F times as long (a
 * compressor's compress and its decompress each), by spinning after
 * each inside its timed window.  Never active unless the
 * variable is set.  cli_slowdown_check: 0, or -EINVAL with e set when
 * the variable is set but malformed (main refuses it, exit 2). */
int cli_slowdown_check(struct lbs_err *e);
/* F for the kernel spec (its name before any ':') of verb, else 1. */
double cli_slowdown(const char *verb, const char *spec);
/* Spin (f - 1) x elapsed seconds: the planted slowdown of one call. */
void cli_slowdown_spin(double f, double elapsed);
/* hyperfine-style lines for s (samples in seconds x scale, e.g. 1e3 and
 * "ms"): "Time (mean +- sd)", "Range (min ... max)" and, when there are
 * outliers, a warning line; each prefixed with indent. */
void cli_timing_print(FILE *f, const char *indent, const char *what,
                      const struct cli_stats *s, double scale,
                      const char *unit);

/* --export-csv FILE / --export-markdown FILE of the verbs that time
 * repetitions (the option rows: CLI_EXPORT_OPTS of opt.h). */
struct cli_export { const char *csv, *md; };
/* Write the fields cols[0..] (NULL-terminated) of row, or of each row
 * when it is an array of rows, to the files x names (a header line, then
 * one line per row); -errno after a printed line. */
int cli_export_write(const struct cli_export *x, const char *verb,
                     json_t *row, const char *const *cols);

/* Threads: set OpenMP's count (0 = leave default) and return it. */
int cli_threads(long t);

/* Options every benchmark verb shares. */
struct cli_common {
    int json;            /* --json: one JSON object per result line */
    int save;            /* write results/ (default on; --no-save) */
    const char *out;     /* --out DIR: results into this run directory */
};
/* Their rows: CLI_COMMON_OPTS (opt.h). */

/* The machine description meta.json holds (bench/meta.c; new reference):
 * lbs_run_open's lbs_meta_fn. */
json_t *lbs_meta_collect(int argc, char **argv);

/* Open the results run for a verb according to c (NULL run when
 * --no-save).  argc/argv are recorded in meta.json. */
int cli_open_run(const struct cli_common *c, const char *verb, int argc,
                 char **argv, struct lbs_run **run);

/* Verbs. */
int verb_stream(int argc, char **argv);
int verb_optim(int argc, char **argv);
int verb_demo(int argc, char **argv);
int verb_compress(int argc, char **argv);
int verb_plot(int argc, char **argv);
int verb_suite(int argc, char **argv);
int verb_report(int argc, char **argv);
int verb_check(int argc, char **argv);
int verb_compare(int argc, char **argv);
int verb_train(int argc, char **argv);
int verb_sim(int argc, char **argv);
int verb_coll(int argc, char **argv);
/* STREAM kernels callable from other verbs: measures triad and copy with
 * the current thread count over n doubles per array.  Returns 0 or -ENOMEM. */
struct stream_result {
    double copy_gbps, triad_gbps;   /* best of iters, STREAM convention */
    double rmw_gbps;                /* in-place a = a + s*c, 24 B/elem */
    long wrong;                     /* elements failing the value check */
    size_t n;
};
int stream_measure(size_t n, int iters, struct stream_result *r);

/* The roofline's reference interleaved with a kernel (A B A B ...): the
 * arrays stay allocated, and each stream_pair_ref() times one reference
 * call over them and returns its GB/s (24 bytes per element): the STREAM
 * triad a = b + 3c, or with rmw the in-place a = a +- 3c, which moves
 * what it counts (stream.c says why the optimizers need it).  Close
 * checks every element and returns how many are wrong, or -1. */
struct stream_pair {
    double *a, *b, *c;
    size_t n;
    int rmw;
    long calls;
};
int stream_pair_open(struct stream_pair *s, size_t n, int rmw);
double stream_pair_ref(struct stream_pair *s);
long stream_pair_close(struct stream_pair *s);
/* The paired ratios r[i] = kernel GB/s / reference GB/s of one run:
 * median, min, max, and a warning line on stderr (naming `what`) when
 * their median is above `bound` - the bytes model or the measurement is
 * wrong then (cli_ratio_over: single pairs above it are noise). */
struct cli_stats roofline_pairs(const char *what, double *r, size_t n,
                                double bound);
/* Against a reference that moves every byte it counts (the in-place
 * a += s*c of the optimizer steps): 1.05, 5% for noise. */
#define ROOFLINE_WARN 1.05
/* Against STREAM's triad, which counts 24 bytes per element but moves 32
 * (its store reads the line first): a kernel whose bytes model counts
 * reads only (the compressors' input) can run at up to 32/24 of it
 * before it beats memory, and 5% for noise on top. */
#define ROOFLINE_WARN_TRIAD (ROOFLINE_WARN * 32.0 / 24.0)
/* Peak resident memory of the process (getrusage), MiB, and the current
 * resident set (/proc/self/statm), MiB (0 when unreadable). */
double cli_peak_rss_mib(void);
double cli_rss_mib(void);
/* This process's memory on transparent huge pages, MiB (null: unknown). */
json_t *cli_huge_mib(void);

#endif
