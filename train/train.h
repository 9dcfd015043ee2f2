/* train.h - one training run of `lbscale train` as a library: data set,
 * shard, model, effective optimizer spec, the steps and the evaluations
 * (train/ only; the verb in bench/train.c drives it).
 *
 * One step (iteration it, 1-based) on every rank:
 *   lr factor from the schedule -> lbs_optim_set_lr_scale
 *   keep[] = lbs_optim_next_keep (JointSpar drops layers; others keep all)
 *   local batch = global / ranks samples from this rank's shard, in
 *   micro-batches (gradient accumulation): forward, softmax CE, backward
 *   without the weight-gradient GEMMs of dropped layers
 *   lbs_optim_step over the comm given to lbs_train_optim (the caller's:
 *   the verb passes a timing wrapper and meters it)
 * At every epoch boundary (and after the last step) lbs_train_evaluate
 * scores the test set on the ranks' average model (identical to every
 * rank's model for data-parallel optimizers; the consensus for
 * decentralized ones), each rank its slice; with --consensus-every N the
 * caller also calls lbs_train_consensus after every N-th step.
 * Shards: iid (data.h) or Dirichlet label-skewed (shards.h).
 *
 * The caller agrees on failures across ranks: every phase returns this
 * rank's code (0 or negative, with err filled) and does no collective
 * except lbs_train_evaluate and lbs_train_totals, which every rank calls.
 * Nothing here prints or writes files; rows come back as jansson objects
 * (keys in the order of results/schema), the per-step facts a trace needs
 * as struct lbs_train_step.
 *
 * Order of calls: lbs_train_parse_model (before MPI: checks --model),
 * lbs_train_new, lbs_train_load, lbs_train_shard, lbs_train_model,
 * lbs_train_optim; then for it = 1..total lbs_train_step and, when the
 * step says so, lbs_train_evaluate; lbs_train_totals, lbs_train_final_row;
 * lbs_train_free.
 *
 * Ownership: the run borrows the config (which must outlive it) and both
 * comms; lbs_train_free releases the rest.
 */
#ifndef LBS_TRAIN_H
#define LBS_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "data.h"
#include "lbscale/comm.h"
#include "lbscale/error.h"
#include "lbscale/optim.h"
#include "mlp.h"

/* --fault K:R:S: at step S rank R injects a NaN gradient (here), or kills
 * itself or hangs (the caller's: it owns the process). */
enum lbs_train_fault {
    LBS_TRAIN_FAULT_NONE, LBS_TRAIN_FAULT_NAN, LBS_TRAIN_FAULT_KILL,
    LBS_TRAIN_FAULT_HANG
};

/* The parsed command line of a run (the verb's option table fills it). */
struct lbs_train_config {
    const char *spec;       /* --optim SPEC */
    const char *compress;   /* --compress SPEC or NULL */
    const char *model;      /* "mlp:...", "cnn" (lbs_train_parse_model) */
    const char *topology;   /* --topology or NULL */
    const char *dataset;    /* auto, fashion-mnist, teacher */
    const char *data_dir;   /* --data or NULL */
    const char *decay;      /* cosine, linear, step, none */
    long global_batch, micro_batch, max_steps, subset, test_subset, seed;
    long threads;
    long val;               /* --val: held-out training samples */
    double lr_base;         /* --lr-base (0: the tuned rules) */
    long lr_ref_batch;      /* --lr-ref-batch */
    const char *lr_scaling; /* --lr-scaling auto|linear|sqrt|none */
    int no_augment;         /* --no-augment (CNN) */
    const char *shards;     /* --shards as given (NULL: iid) */
    double shard_alpha;     /* its Dirichlet alpha; 0: iid (shards.h) */
    long consensus_every;   /* --consensus-every N (0: off) */
    double epochs, warmup;
    enum lbs_train_fault fault;
    long fault_rank, fault_step;
    const char *fault_str;  /* as given */
    double wall0;           /* the run's start (lbs_train_now): wall_s */
    /* filled by lbs_train_parse_model */
    size_t dims[MLP_MAX_DENSE + 1];
    int nd, is_cnn;
};

/* What the caller may read of a run; valid until lbs_train_free, each
 * field once the phase that fills it has run. */
struct lbs_train_info {
    int rank, ranks;
    size_t local, micro;            /* lbs_train_load */
    const struct dataset *data;
    const char *note;               /* "" or why the teacher task was used */
    double n_used;                  /* lbs_train_shard: samples trained on */
    long total_steps, warmup_steps;
    const struct mlp *model;        /* lbs_train_model */
    const char *spec;               /* the effective spec */
    const char *lr_rule;
    double lr;                      /* NaN: the optimizer's own */
    const char *warning;            /* "" or decentlam on a directed graph */
    struct lbs_optim *optim;        /* lbs_train_optim */
};

/* What one step did, for the caller's trace (valid until the next step). */
struct lbs_train_step {
    long it;
    int skipped;                /* the optimizer skipped it (NaN) */
    int evaluate;               /* an epoch ended (or the last step) */
    double lr_scale, loss;      /* the schedule's factor; mean local loss */
    size_t nlayers;
    const uint8_t *keep;        /* per layer */
    const double *fwd_s, *bwd_s, *wgrad_s;  /* per layer */
    double data_s, optim_s;
};

/* What the caller measured of the optimizer's communication, over ranks
 * (times averaged, bytes the maximum), for the final row. */
struct lbs_train_costs {
    double train_s, comm_s;
    long long comm_bytes, sent_bytes, comm_calls;
    json_t *comm_by_kind;       /* stolen */
};

struct lbs_train;

/* CLOCK_MONOTONIC seconds (config.wall0, the verb's timings). */
double lbs_train_now(void);
/* --model: "mlp8" -> MLP8_SPEC, "cnn", or mlp:... -> c->dims, nd, is_cnn. */
int lbs_train_parse_model(struct lbs_train_config *c, struct lbs_err *err);
/* The model's layers as [{"name","n","ndim","shape"}] (trace, export). */
json_t *lbs_train_layers_json(const struct mlp *m);

int lbs_train_new(const struct lbs_train_config *c, struct lbs_comm *comm,
                  struct lbs_train **out, struct lbs_err *err);
const struct lbs_train_info *lbs_train_info(const struct lbs_train *r);
/* Batch shapes and the data set (global_batch divides by the ranks). */
int lbs_train_load(struct lbs_train *r, struct lbs_err *err);
/* This rank's shard and the step counts (set even on failure). */
int lbs_train_shard(struct lbs_train *r, struct lbs_err *err);
/* The model, initialised, and the effective spec with its lr rule. */
int lbs_train_model(struct lbs_train *r, struct lbs_err *err);
/* The optimizer over comm (and the compressor), the batch buffers. */
int lbs_train_optim(struct lbs_train *r, struct lbs_comm *comm,
                    struct lbs_err *err);
/* Step it: lbs_optim_step's code (0, 1 skipped, <0 with err). */
int lbs_train_step(struct lbs_train *r, long it, struct lbs_train_step *st,
                   struct lbs_err *err);
/* Collective: evaluate after step it; *row: the epoch row (caller's). */
int lbs_train_evaluate(struct lbs_train *r, long it, json_t **row,
                       struct lbs_err *err);
/* Collective: the RMS distance of the ranks' models from their average
 * after step it into *rms (as the epoch rows' consensus_rms), kept for
 * the final row's consensus_curve. */
int lbs_train_consensus(struct lbs_train *r, long it, double *rms,
                        struct lbs_err *err);
/* Collective: the time totals over ranks (averaged). */
int lbs_train_totals(struct lbs_train *r, struct lbs_err *err);
/* The final row up to comm_by_kind (the caller adds argv, parameters,
 * trace); NULL for out of memory. */
json_t *lbs_train_final_row(struct lbs_train *r,
                            const struct lbs_train_costs *c);
void lbs_train_free(struct lbs_train *r);

#endif
