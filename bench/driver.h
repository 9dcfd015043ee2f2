/* driver.h - the one benchmark driver of optim, compress, coll and stream
 * (the nccl-tests layout: common.cu drives, each benchmark is a small file
 * that describes its kernel).
 *
 * A benchmark fills a struct bench_kernel (one timed call, an optional
 * check and its bytes model) and calls bench_time(): warm-up calls, timed
 * calls, the machine's limit next to them (a STREAM triad before every
 * call, A B A B ..., or a given GB/s), then median and spread of every
 * timed phase, the roofline ratios and #wrong.  Its rows are JSON objects
 * that one printer shows as a text table (columns declared as data, struct
 * bench_col) or as JSON lines, with hyperfine-style timing lines, the
 * --export-csv/--export-markdown files and the results run.
 *
 * Ownership: bench_time() allocates the samples in struct bench_result;
 * bench_result_free() releases them.  Rows belong to the caller. */
#ifndef LBS_DRIVER_H
#define LBS_DRIVER_H

#include <jansson.h>
#include <stdio.h>

#include "cli.h"

#define BENCH_PHASES 3   /* timed phases per call (compress, decompress;
                            STREAM's copy, triad, in-place) */

/* Arrays of the interleaved reference: 32M doubles each, far beyond any
 * cache, as `lbscale stream`: three for the triad (768 MB), two for the
 * in-place a += s*c (512 MB; bench/stream.c, stream_pair_open). */
#define BENCH_REF_N 32000000

struct bench_result;

struct bench_kernel {
    const char *what;    /* "optim lamb": names the roofline warning */
    void *ctx;
    int nphase;          /* phases timed per call, 1..BENCH_PHASES */
    /* Call i (0-based, warm-up first; timed = i >= warm-up): run the
     * kernel once, untimed preparation included, and store each phase's
     * seconds in t[0..nphase-1].  0 or a negative code (err filled). */
    int (*call)(void *ctx, long i, double *t, struct lbs_err *err);
    /* Or the whole loop at once, when the kernel times itself (CUDA
     * events): t[0][0..iters-1] in seconds, warm-up not stored. */
    int (*batch)(void *ctx, long warmup, long iters, double *t,
                 struct lbs_err *err);
    /* #wrong after the loop (>= 0), or a negative code; NULL: 0. */
    long (*check)(void *ctx, struct lbs_err *err);
    /* After the check: combine the raw samples and #wrong of the ranks
     * (MAX and SUM over ranks for collectives), in place; NULL: one
     * process. */
    int (*gather)(void *ctx, struct bench_result *r, struct lbs_err *err);
    double bytes;        /* bytes phase 0 moves per call (the bytes model):
                            GB/s and the ratio to the reference; 0: none */
    /* The ranks that run this loop together (their calls meet in
     * barriers): every rank's allocations are agreed on before the first
     * call (lbs_comm_agree).  NULL: one process. */
    struct lbs_comm *peers;
};

struct bench_loop {
    long warmup, iters;
    double ref_gbps;     /* > 0: the reference is given (--stream-gbps,
                            the device copy GB/s); 0 with bytes > 0: a
                            reference call before every kernel call */
    int rmw;             /* that reference is the in-place a += s*c (the
                            kernel updates in place), not the triad */
};

struct bench_result {
    double *t[BENCH_PHASES];     /* raw samples, seconds, in call order */
    struct cli_stats st[BENCH_PHASES];   /* their statistics */
    struct cli_stats ref;        /* the reference GB/s (median = STREAM) */
    struct cli_stats ratio;      /* GB/s / reference: median [min, max] */
    double gbps;                 /* bytes / median time of phase 0 */
    int paired;                  /* the reference was measured in pairs */
    long wrong;
};

/* Run the loop of k as l says.  0, or a negative code with err filled
 * (nothing to free then).  Prints the roofline warning on stderr when a
 * paired ratio is above ROOFLINE_WARN. */
int bench_time(const struct bench_kernel *k, const struct bench_loop *l,
               struct bench_result *r, struct lbs_err *err);
void bench_result_free(struct bench_result *r);

/* ---------------------------------------------------------- printing */

/* One column of a text table: the header printed with hfmt, the value
 * of key (and key2, a second real: "[min, max]") with fmt, which takes
 * what the JSON holds: const char * (NULL shown as "-"), long long, or
 * double.  str, when set, formats the value itself (fmt takes a string). */
struct bench_col {
    const char *head, *hfmt, *fmt, *key, *key2;
    void (*str)(const json_t *row, char *buf, size_t len);
};

/* A column of value `key` (a designated initializer, so tables stay short);
 * BENCH_COL2 shows two reals (key, key2) in one column. */
#define BENCH_COL(h, hf, f, k) {.head = (h), .hfmt = (hf), .fmt = (f), .key = (k)}
#define BENCH_COL2(h, hf, f, k, k2)                                          \
    {.head = (h), .hfmt = (hf), .fmt = (f), .key = (k), .key2 = (k2)}

/* A table: the header and row line prefixes ("# " and "  ") and the
 * columns, ending with an empty one; columns are separated by a space. */
struct bench_table {
    const char *hpre, *rpre;
    const struct bench_col *cols;
};

void bench_header(const struct bench_table *t, FILE *f);
void bench_row(const struct bench_table *t, const json_t *row, FILE *f);

/* How a verb shows and keeps its rows. */
struct bench_out {
    const char *verb;        /* error prefix and results file VERB.jsonl */
    int json;                /* --json: one JSON object per row instead */
    const struct bench_table *table;
    /* hyperfine-style lines from KEY_mean, KEY_sd, KEY_median, KEY_min,
     * KEY_max (ms), iters and outliers, labelled `timing`; NULL: none */
    const char *timing, *timing_key;
    /* lines before the header (when) 0 and after the row (1); NULL: none */
    void (*note)(const json_t *row, int when, FILE *f);
    const struct cli_export *exp;     /* NULL: no export */
    const char *const *exp_cols;
    struct lbs_run *run;              /* NULL: not saved */
    const char *what;   /* prefix of an append failure's message, or NULL */
};

/* Print one row (JSON, or the table's header when `header`, the row, the
 * timing lines and the notes), write the exports, append it to the run.
 * Returns 0 or a negative code after one printed line. */
int bench_emit(const struct bench_out *o, json_t *row, int header);
/* "results: DIR/VERB.jsonl" on stderr, when saved and not --json. */
void bench_saved(const struct bench_out *o);

/* The device-to-device copy reference of the CUDA paths: the better of
 * cudaMemcpy and a copy kernel over n floats, best of iters; a wrong copy
 * is an error.  cs keeps both figures. */
struct lbs_cuda_stream;
int bench_cuda_copy_ref(size_t n, int iters, struct lbs_cuda_stream *cs,
                        double *gbps, struct lbs_err *err);

/* The hyperfine-style timing lines of row (KEY_mean ... in ms). */
void bench_timing(const json_t *row, const char *what, const char *key,
                  FILE *f);

#endif
