/* coll_int.h - what the files of `lbscale coll` share (coll_bench.c,
 * coll_patterns.c, coll_parse.c). */
#ifndef LBS_COLL_INT_H
#define LBS_COLL_INT_H

#include <stddef.h>

#include "cli.h"
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
};


/* One pattern: sizes, buffers and data (setup), untimed preparation
 * (prep), the timed call (run), wrong elements (check). */
enum bw_kind { BW_AR, BW_AG, BW_ONE, BW_DEG };
struct coll_ops {
    const char *name, *alias, *type;
    enum bw_kind bw;
    int compressed;
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
    size_t minb, maxb;
    int check, osu, help;
    long factor, iters, warmup, root;
    double density;
    const char *list, *topo, *backend;
    struct cli_export exp;
    int sel[NCOLL];
    int tk;   /* the topology's index */
};

/* coll_patterns.c */
void sum_tab_init(int P);
double bw_factor(const struct coll_ops *o, int P, int deg);
void cctx_free(struct cctx *x);
size_t first_fit(const struct coll_ops *op, const struct cctx *x,
                 size_t minb, size_t maxb, size_t factor);
int dev_alloc(struct cctx *x, struct lbs_err *err);
int dev_put(struct cctx *x, struct lbs_err *err);
int dev_get(struct cctx *x, struct lbs_err *err);
void dev_swap(struct cctx *x);

/* coll_parse.c */
int coll_parse(int argc, char **argv, struct cli_common *com,
               struct coll_cmd *c);
int coll_args_check(struct coll_cmd *c, char *gpu, size_t len);

#endif
