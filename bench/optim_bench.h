/* optim_bench.h - the optimizer-step benchmark, shared by optim and demo. */
#ifndef LBS_OPTIM_BENCH_H
#define LBS_OPTIM_BENCH_H

#include <jansson.h>
#include <stddef.h>

#include "cli.h"
#include "lbscale/comm.h"

struct optim_bench_args {
    const char *spec;
    size_t elements;
    const char *layers;
    long iters, warmup;
    int threads;
    double stream_gbps;   /* <= 0: measure */
    const char *pair;     /* --pair SPEC: a second optimizer on its own
                             copy of the layers, stepped alternately
                             (A B A B), step-time ratio B/A (or NULL) */
    const char *compress; /* compressor spec (lbs_optim_set_compressor),
                             or NULL */
    int rule_ranks;       /* record backend: also record on this many
                             ranks and write the bytes rule (0: no) */
    struct cli_export exp; /* --export-csv / --export-markdown */
};

/* Run one benchmark; *row gets a new JSON object on success. */
int optim_bench_run(const struct optim_bench_args *a, struct lbs_comm *comm,
                    json_t **row, struct lbs_err *err);
int optim_bench_main(struct optim_bench_args *a, const char *backend,
                     const struct cli_common *com, int argc, char **argv);
/* --comm record[:P]: run `steps` steps, report bytes sent (record_bench.c) */
int optim_record_main(const struct optim_bench_args *a, struct lbs_comm *c,
                      long steps, const char *trace,
                      const struct cli_common *com, int argc, char **argv);

#endif
