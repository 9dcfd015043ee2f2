/* coll_int.h - what the files of `lbscale coll` share (coll_bench.c,
 * coll_patterns.c, coll_parse.c). */
#ifndef LBS_COLL_INT_H
#define LBS_COLL_INT_H

#include <stddef.h>

#include <jansson.h>

#include "cli.h"
#include "driver.h"
#include "lbscale/comm.h"
#include "lbscale/topology.h"

/* set on ranks other than 0: only rank 0 prints errors (coll_parse.c) */
extern int coll_quiet;

struct cctx {
    struct lbs_comm *c;
    int rank, P;
    double density;
    int root;
    struct lbs_topology *topo;
    /* filled by setup */
    size_t count;       /* elements reported (nccl-tests `count`) */
    size_t size;        /* bytes reported (nccl-tests `size`) */
    double payload;     /* trace-v1 bytes of this rank */
    size_t n1, n2;      /* pattern-specific element counts */
    void *a, *b, *d;    /* buffers */
    size_t na, nb, nd;  /* their bytes (hmalloc) */
    void *da, *db, *dd; /* nccl: device twins of a, b, d */
    size_t *counts, *displs;
    int *from, *to, nfrom, nto;
    double *w;
    long step;
    int ip;             /* the form being run: 0 out of place, 1 in place */
};


/* One pattern: sizes, buffers and data (setup), untimed preparation
 * (prep), the timed call (run), wrong elements (check); prep, run and
 * check serve both forms, x->ip says which (nccl-tests' out-of-place and
 * in-place columns). */
enum bw_kind { BW_AR, BW_AG, BW_ONE, BW_DEG };
enum coll_form { F_OOP = 1, F_IP = 2 };
struct coll_ops {
    const char *name, *alias, *type;
    enum bw_kind bw;
    int compressed;
    unsigned forms;       /* F_OOP | F_IP: the forms the pattern has */
    enum coll_form native;/* the form the JSON's time_us keys time: the
                             call lbscale made before it had two */
    const char *redop;    /* nccl-tests' redop column: "sum" or "none" */
    int (*setup)(struct cctx *x, size_t S);
    void (*prep)(struct cctx *x, int last);
    int (*run)(struct cctx *x);
    long (*check)(struct cctx *x);
};

/* the patterns, in --coll all's order (coll_patterns.c checks the count) */
#define NCOLL 10
extern const struct coll_ops colls[NCOLL];

/* The command line: options, then what they select. */
struct coll_cmd {
    size_t minb, maxb, stepb;   /* stepb: -i, additive steps (0: -f) */
    int check, osu, help, classic, factor_set;
    long factor, iters, warmup, root, agg, cycles, average, threads, gpus;
    const char *json_file;      /* -J FILE: nccl-tests' JSON document */
    double density;
    const char *list, *topo, *backend;
    struct cli_export exp;
    int sel[NCOLL];
    int tk;   /* the topology's index */
};

/* One form (out of place or in place) of one (pattern, size): lbscale's
 * statistics over per-call times (each the slowest rank's), and
 * nccl-tests' time (the average over back-to-back calls, reduced over
 * ranks as -a says). */
struct form_res {
    int ran;               /* the pattern has this form on this backend */
    struct cli_stats st;   /* seconds */
    double nt;             /* seconds per call */
    long wrong;
};

/* What a sweep needs besides the pattern: the comms, the loop, the
 * options that go into rows, and what the closing lines sum up. */
struct coll_run {
    struct cctx x;
    struct lbs_comm *comm, *ctl;   /* ctl: timings and #wrong (mpi) */
    int dev, check, osu, classic, lead, nodes, rpn, silent;
    const char *gpu, *topo;
    size_t minb, maxb, factor, stepb;
    long iters, warmup, root, agg, cycles, average;
    double density;
    struct bench_out bo;     /* printing only: bo.run stays NULL */
    struct lbs_run *run;     /* rank 0's results run, or NULL */
    struct cli_export exp;   /* --export-csv/--export-markdown: all rows */
    json_t *rows;            /* rank 0's rows, saved and exported at the end */
    json_t *devices;         /* rank 0: nccl-tests' config.devices */
    long total_wrong, busbw_n;
    double busbw_sum;
    double min_bw;   /* NCCL_TESTS_MIN_BW (GB/s), 0: none */
    const char *json_path;   /* -J: written at the end, FILE or FILE.N */
    char start[64];          /* the run's start, nccl-tests' format */
    int argc;
    char **argv;
    struct lbs_err e;
};

/* coll_nt.c: nccl-tests' layout (text and -J JSON) */
extern const char *const nt_average_names[4];
void nt_preamble(const struct coll_run *cr);
void nt_section(const struct coll_ops *op);
void nt_row(const struct coll_run *cr, const json_t *row);
void nt_footer(const struct coll_run *cr, double avg, int failed);
int nt_json_check(struct coll_run *cr);
int nt_json_write(struct coll_run *cr, double avg, int failed);

/* coll_patterns.c */
void sum_tab_init(int P);
double bw_factor(const struct coll_ops *o, int P, int deg);
unsigned coll_forms(const struct coll_ops *o, const struct cctx *x);
size_t nt_count(const struct coll_ops *o, const struct cctx *x);
size_t next_size(size_t S, size_t factor, size_t step);
void cctx_free(struct cctx *x);
size_t first_fit(const struct coll_ops *op, const struct cctx *x,
                 size_t minb, size_t maxb, size_t factor, size_t step);
int dev_alloc(struct cctx *x, struct lbs_err *err);
int dev_put(struct cctx *x, struct lbs_err *err);
int dev_get(struct cctx *x, struct lbs_err *err);
void dev_swap(struct cctx *x);

/* coll_parse.c */
int coll_parse(int argc, char **argv, struct cli_common *com,
               struct coll_cmd *c);
int coll_args_check(struct coll_cmd *c, char *gpu, size_t len);

#endif
