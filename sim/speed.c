/* speed.c - how fast the simulator itself is: the body of `lbscale sim
 * speed` (one step, a whole sweep with loading, one collective's cost as
 * P grows).  Raw timings only; the caller summarises and prints. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_internal.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every point the timings simulate, once: a failing one is reported
 * before anything is timed. */
static int speed_check(const struct lbs_sim_platform *pl,
                       const struct lbs_sim_model *m,
                       const struct lbs_sim_entry *ent, size_t nent,
                       const long *P, size_t np, struct lbs_err *e)
{
    int rc = 0;
    for (size_t k = 0; k < nent && !rc; k++) {
        struct lbs_sim_opts q = {.optim_bytes_per_elem = ent[k].bpe};
        struct lbs_sim_result x;
        rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(&ent[k], 1024), 1024, &q,
                         &x, e);
        for (size_t i = 0; i < np && !rc; i++)
            rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(&ent[k], P[i]), P[i],
                             &q, &x, e);
    }
    return rc;
}

/* One whole sweep, loading included (what a user waits for). */
static int speed_sweep(const struct lbs_sim_speed_in *in, const long *P,
                       size_t np, struct lbs_err *e)
{
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL;
    struct lbs_sim_entry *ent = NULL;
    size_t n = 0;
    int rc = lbs_sim_model_find(in->model, &m, e);
    if (!rc) rc = lbs_sim_platform_find(in->platform, &pl, e);
    if (!rc) rc = lbs_sim_entries_load(in->optims, m, 4, &ent, &n, e);
    for (size_t k = 0; k < n && !rc; k++) {
        struct lbs_sim_result res[64], b;
        struct lbs_sim_opts q = {.optim_bytes_per_elem = ent[k].bpe};
        rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(&ent[k], 8), 8, &q, &b, e);
        for (size_t i = 0; i < np && !rc; i++)
            rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(&ent[k], P[i]), P[i],
                             &q, &res[i], e);
    }
    lbs_sim_entries_free(ent, n);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return rc;
}

/* Best of 7 rounds per cell: the machine is shared, the minimum is the
 * cost of the code. */
static void speed_cost(const struct lbs_sim_platform *pl, long P,
                       struct lbs_sim_speed_cost *c)
{
    struct lbs_sim_net net;
    const int reps = 300;
    static const enum lbs_coll cs[4] = {LBS_COLL_ALLREDUCE,
        LBS_COLL_ALLGATHER, LBS_COLL_ALLTOALL, LBS_COLL_NEIGHBOR};
    volatile double sink = 0;
    c->gpus = P;
    c->net_init = INFINITY;
    for (int k = 0; k < 4; k++)
        c->coll[k] = INFINITY;
    for (int round = 0; round < 7; round++) {
        double t0 = now();
        for (int j = 0; j < 5; j++)
            lbs_sim_net_init(&net, pl, P, NULL);
        c->net_init = fmin(c->net_init, (now() - t0) / 5);
        for (int k = 0; k < 4; k++) {
            t0 = now();
            for (int j = 0; j < reps; j++)
                sink += lbs_sim_coll_cost(&net, cs[k], 1e6 + j,
                                          LBS_TOPO_EXPONENTIAL, j).t;
            c->coll[k] = fmin(c->coll[k], (now() - t0) / reps);
        }
    }
    (void)sink;
}

/* The timings once the inputs are loaded and checked. */
static int speed_time(const struct lbs_sim_speed_in *in,
                      const struct lbs_sim_platform *pl,
                      const struct lbs_sim_model *m,
                      const struct lbs_sim_entry *ent, size_t nent,
                      const long *P, size_t np, struct lbs_sim_speed *out,
                      struct lbs_err *e)
{
    /* 1. one step at 1,024 GPUs (lamb's plan or the first entry's) */
    size_t li = 0;
    for (size_t k = 0; k < nent; k++)
        if (!strcmp(ent[k].name, "lamb"))
            li = k;
    snprintf(out->step_optim, sizeof out->step_optim, "%s", ent[li].name);
    struct lbs_sim_opts o = {.optim_bytes_per_elem = ent[li].bpe};
    struct lbs_sim_result r;
    int rc = 0;
    for (int i = 0; i < LBS_SIM_SPEED_STEPS && !rc; i++) {
        double t0 = now();
        rc = lbs_sim_run(pl, m, lbs_sim_entry_plan(&ent[li], 1024), 1024, &o,
                         &r, e);
        out->step_s[i] = now() - t0;
    }
    /* 2. the whole sweep, loading included */
    for (int rep = 0; rep < LBS_SIM_SPEED_SWEEPS && !rc; rep++) {
        double t0 = now();
        rc = speed_sweep(in, P, np, e);
        out->sweep_s[rep] = now() - t0;
    }
    if (rc)
        return rc;
    /* 3. growth with P: one cost evaluation per collective */
    out->cost = calloc(np, sizeof *out->cost);
    if (!out->cost)
        return lbs_err_set(e, -ENOMEM, "out of memory");
    for (size_t i = 0; i < np; i++)
        speed_cost(pl, P[i], &out->cost[i]);
    return 0;
}

int lbs_sim_speed(const struct lbs_sim_speed_in *in,
                  struct lbs_sim_speed *out, struct lbs_err *e)
{
    struct lbs_sim_model *m = NULL;
    struct lbs_sim_platform *pl = NULL;
    struct lbs_sim_entry *ent = NULL;
    size_t nent = 0, np = 0;
    long *P = NULL;
    memset(out, 0, sizeof *out);
    int rc = lbs_sim_model_find(in->model, &m, e);
    if (!rc) rc = lbs_sim_platform_find(in->platform, &pl, e);
    if (!rc) rc = lbs_sim_entries_load(in->optims, m, 4, &ent, &nent, e);
    /* 8, 16, ... up to 131,072 GPUs, or the platform's limit */
    long top = 8;
    while (!rc && top * 2 <= LBS_SIM_SPEED_MAX_GPUS && top * 2 <= pl->max_gpus)
        top *= 2;
    char range[32];
    snprintf(range, sizeof range, "8..%ld", top);
    if (!rc) rc = lbs_sim_parse_gpus(range, &P, &np, e);
    if (!rc) rc = speed_check(pl, m, ent, nent, P, np, e);
    if (!rc) {
        snprintf(out->model, sizeof out->model, "%s", m->name);
        snprintf(out->platform, sizeof out->platform, "%s", pl->name);
        out->nent = nent;
        out->ncost = np;
        out->top_gpus = top;
        rc = speed_time(in, pl, m, ent, nent, P, np, out, e);
    }
    if (rc)
        lbs_sim_speed_free(out);
    free(P);
    lbs_sim_entries_free(ent, nent);
    lbs_sim_model_free(m);
    lbs_sim_platform_free(pl);
    return rc;
}

void lbs_sim_speed_free(struct lbs_sim_speed *s)
{
    free(s->cost);
    s->cost = NULL;
}
