/* train_int.h - what the files of `lbscale train` share (train.c,
 * train_opts.c, train_agree.c). */
#ifndef LBS_TRAIN_INT_H
#define LBS_TRAIN_INT_H

#include <stdint.h>

#include "cli.h"
#include "lbscale/comm.h"
#include "strbuf.h"
#include "train.h"

/* non-zero: suppress cli errors on this rank (train_opts.c) */
extern int train_quiet_rank;

/* bad input: one line (on a rank that speaks), then EXIT_BAD_INPUT */
#define FAIL(...)                                                           \
    do {                                                                    \
        if (!train_quiet_rank)                                              \
            cli_error(__VA_ARGS__);                                         \
        return EXIT_BAD_INPUT;                                              \
    } while (0)

/* The parsed command line: the run's configuration (train.h) and what only
 * the verb uses. */
struct train_opts {
    struct lbs_train_config c;
    const char *backend;
    const char *export_layers;
    long stall;             /* --stall-timeout: s, 0, LBS_STALL_AUTO */
    int trace, trace_all;
};

/* Everything one training run carries from step to step (verb_train). */
struct train_run {
    struct train_opts t;
    struct cli_common com;
    int argc;
    char **argv;
    struct lbs_err e;
    struct lbs_comm *comm;              /* the real comm (mpi or self) */
    struct lbs_comm *tcomm;             /* the timing wrapper around it */
    int rank, P;
    struct lbs_train *tr;
    const struct lbs_train_info *info;  /* tr's */
    struct lbs_run *run;
    json_t *curve;
    double train_s, comm_s;
    long steps;
    char rundir[4096], trbase[128];
    /* the optimizer's communication, metered over tcomm */
    double t_comm;
    size_t bytes[LBS_COLL_COUNT], calls[LBS_COLL_COUNT], sent;
    int64_t by[2 * LBS_COLL_COUNT + 1];    /* step 5: bytes, calls maximum */
    struct strbuf tr_lines;             /* the trace after its header */
    int tracing;                        /* this rank collects a trace */
};


/* train_opts.c */
int train_env_rank(void);
int train_under_mpirun(void);
int train_parse_args(int argc, char **argv, struct train_opts *t,
                     struct cli_common *com);

/* train_agree.c */
int train_options_differ(struct lbs_comm *c,
                         const struct lbs_train_config *t,
                         const char *const **names_out);
void train_sb_ms_array(struct strbuf *b, const char *key, const double *x,
                       size_t n);
void train_print_row(const json_t *row, int json);
void train_pick_trace_base(const char *spec, const char *compress,
                           char *base, size_t len);
int train_write_trace(struct train_run *r, struct lbs_err *err);
int train_export_layers(const struct train_opts *t);

#endif
