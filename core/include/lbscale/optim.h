/* lbscale/optim.h - optimizers made from spec strings.
 *
 *   struct lbs_optim *o;
 *   struct lbs_err e;
 *   if (lbs_optim_new("lamb:lr=0.01,wd=0.01", layers, nlayers, comm, &o, &e))
 *       fprintf(stderr, "%s\n", e.msg);
 *   for (...) { fill layers[i].g; lbs_optim_step(o, &e); }
 *   lbs_optim_free(o);
 *
 * Ownership: lbs_optim_new copies the layer array (not the w/g buffers, nor
 * the name strings, which must outlive the optimizer) and allocates all
 * per-layer state; lbs_optim_free releases it.  comm may be NULL (a private
 * "self" comm is created and owned); otherwise it is borrowed and must
 * outlive the optimizer.
 *
 * What a step does: data-parallel optimizers (sgd, lars, lamb, adamw,
 * jointspar, jointspar_lars) average every layer's g across the comm's
 * ranks in place (so g holds the averaged gradient afterwards; JointSpar
 * averages only the layers it keeps that step, see lbs_optim_next_keep);
 * then every optimizer reads all (kept) gradients once to measure their
 * norms and to refuse NaN/Inf (the step is skipped on every rank and
 * counted, state untouched); then it updates w.
 *
 * Threading: one optimizer is driven by one thread; the kernels inside use
 * OpenMP (omp_set_num_threads / OMP_NUM_THREADS choose how many threads).
 * Distinct optimizer objects are independent.
 *
 * Errors: 0 or a negative code (lbscale/error.h) with a one-line message.
 * Unknown optimizer or key: -ENOENT; bad value: -EINVAL; a non-finite
 * update despite finite gradients (e.g. NaN parameters): -EDOM naming the
 * layer - that step may have been partly applied.
 */
#ifndef LBSCALE_OPTIM_H
#define LBSCALE_OPTIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "lbscale/comm.h"
#include "lbscale/compress.h"
#include "lbscale/error.h"
#include "lbscale/layer.h"
#include "lbscale/param.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lbs_optim;

int lbs_optim_new(const char *spec, const struct lbs_layer *layers,
                  size_t nlayers, struct lbs_comm *comm,
                  struct lbs_optim **out, struct lbs_err *err);
/* Returns 0 when the step was applied, 1 when it was skipped because a
 * gradient held NaN/Inf on some rank (every rank skips the same step; err
 * says so), or a negative code. */
int lbs_optim_step(struct lbs_optim *o, struct lbs_err *err);
/* Which layers the next lbs_optim_step() will read gradients of: keep has
 * one entry per layer, 1 = needed, 0 = ignored (JointSpar's dropped layers;
 * all 1 for other optimizers).  A trainer calls it before the backward pass
 * and may skip the weight-gradient computation of dropped layers; their g
 * is then never read.  Every rank gets the same answer. */
void lbs_optim_next_keep(struct lbs_optim *o, uint8_t *keep);
/* Gradient compression between the backward pass and the optimizer
 * (GRACE's compressor / memory / communicator split): from the next step
 * on, every kept layer's g goes through lbs_compress_exchange
 * (lbscale/compress.h) instead of the plain fp32 allreduce: add the
 * error-feedback residual (ef=1), compress, move the payload with the
 * compressor's collective (allgatherv after a size allgather for
 * variable-size payloads), decompress and average over ranks, update the
 * residual; the optimizer then sees the averaged D(C(g)).  This happens on
 * one rank too, so error feedback and the compression error apply there
 * as well.  spec is a compressor spec ("topk:k=0.01,ef=1"); NULL or ""
 * removes the compressor.  The compressor is owned by the optimizer and
 * freed by lbs_optim_free.  A step skipped for non-finite gradients also
 * resets the compressor's memory (residuals, warm starts).
 * Errors: -EINVAL when o has steps already, or when the optimizer does its
 * own communication (SLAMB, 1-bit LAMB, DmSGD, DecentLaM: not
 * data-parallel) - the message names both; the codes of
 * lbs_compressor_new for a bad spec (-ENOENT unknown compressor or key,
 * -EINVAL bad value or ef=1 where refused). */
int lbs_optim_set_compressor(struct lbs_optim *o, const char *spec,
                             struct lbs_err *err);
/* The spec given to lbs_optim_set_compressor, or NULL when none; the
 * compressor itself (for lbs_compress_residual and the like), or NULL. */
const char *lbs_optim_compressor_spec(const struct lbs_optim *o);
const struct lbs_compressor *lbs_optim_compressor(const struct lbs_optim *o);
/* Steps skipped so far for non-finite gradients. */
long lbs_optim_skipped(const struct lbs_optim *o);
void lbs_optim_free(struct lbs_optim *o);

/* Name of the algorithm ("lamb") and the effective "key=value,..." list. */
const char *lbs_optim_name(const struct lbs_optim *o);
const char *lbs_optim_params(const struct lbs_optim *o);
/* The effective value of one spec key (defaults applied; booleans and
 * enums as 0/1/index), e.g. lr of "lamb:lr=0.01" -> 0.01: 0, or -ENOENT
 * naming the key when this optimizer has no such key.  Lets another
 * implementation of the same optimizer (the CUDA kernels) take its
 * hyperparameters from the one parser. */
int lbs_optim_get(const struct lbs_optim *o, const char *key, double *value,
                  struct lbs_err *err);
/* Steps taken so far. */
long lbs_optim_steps(const struct lbs_optim *o);
/* Scale every learning rate by f from the next step on (schedules). */
void lbs_optim_set_lr_scale(struct lbs_optim *o, double f);

/* Memory traffic model of one step, bytes per parameter element, for
 * roofline reports: the optimizer's own passes (documented in its source
 * file) plus 4 for the driver's gradient check; the gradient average is
 * communication and not counted. */
double lbs_optim_bytes_per_elem(const struct lbs_optim *o);

/* Named statistics of an optimizer, for logs and reports: 0 and *value
 * set, or -ENOENT (message in err) when this optimizer has no statistic of
 * that name.  lbs_optim_stat_names lists the ones it has (NULL-terminated,
 * static; empty for most).  Current names:
 *   jointspar, jointspar_lars:
 *     kept_layers  layers kept at the last applied step
 *     bytes        gradient bytes this rank allreduced at that step
 *     p_sum, p_min, p_max  sum / smallest / largest keep probability now
 *     p.<i>        keep probability of layer i now (not listed)
 *   dmsgd, decentlam:
 *     consensus_distance  mean over ranks of ||x_i - x_bar|| (all layers
 *                  as one vector).  COLLECTIVE: it allreduces the
 *                  parameters, so every rank must ask at the same point
 *                  (a record comm logs those calls like any other)
 *     bytes        bytes this rank sent to neighbours at the last step
 *     degree       neighbours this rank sent to at the last step
 * Asking never changes the optimizer's trajectory. */
int lbs_optim_stat(const struct lbs_optim *o, const char *name,
                   double *value, struct lbs_err *err);
const char *const *lbs_optim_stat_names(const struct lbs_optim *o);

/* ---- questions answered from the ops tables (no layers needed) ----
 *
 * The outer floors (CLI, suites, the simulator, the CUDA kernels) ask
 * these instead of building a throwaway optimizer or keeping lists of
 * names. */

/* A GPU implementation hung on an optimizer's ops table, the way dav1d's
 * C init fills the functions and an arch init replaces them: the C file
 * stays the reference, core/cuda/optim.cu runs the kernel family named
 * here from the same parsed configuration (lbs_optim_config), and
 * tests/gpu/check_optim.c checks every optimizer in the registry that has
 * one, with the specs listed here, against the C table. */
enum lbs_optim_kernel {
    LBS_KERNEL_LAMB,
    LBS_KERNEL_SLAMB,
    LBS_KERNEL_ADAMW,
    LBS_KERNEL_SGD,
};
/* What the kernels of core/cuda/optim.cu read: one flat set of
 * hyperparameters for every kernel family, each the double the parser
 * stored (booleans and enums as 0/1/index, as lbs_optim_get gives them).
 * An optimizer's device hook fills the fields of the keys it has from its
 * own parsed config (hparams below); the others keep the neutral values
 * lbs_optim_config_device sets first: bias_correction = 1, cmax = 1e300,
 * clamp_1d = 1, everything else 0. */
struct lbs_optim_device_hp {
    double lr, b1, b2, eps, wd;
    double bias_correction;         /* lamb, adamw: 0 = off */
    double cmin, cmax;              /* trust-ratio clamp (lamb, slamb) */
    double clip;                    /* lamb: global-norm clip, 0 = off */
    double exclude_1d, clamp_1d;    /* lamb, slamb: 1-D layer rules */
    double momentum, nesterov;      /* sgd */
    double k, beta3, H, small, seed;   /* slamb */
    double bernoulli;               /* slamb: 1 = Bernoulli masks, 0 = cyclic */
    double kwarm;                   /* slamb: k warm-up stage length, 0 = off
                                       (the kernels have none: refused) */
};
struct lbs_optim_device {
    enum lbs_optim_kernel kernel;   /* which family in core/cuda/optim.cu */
    /* 1: w is bit-identical to the CPU's after every step (element-wise
     * math only); 0: it depends on per-layer norms the GPU sums in
     * another order (bounded relative error, see check_optim.c). */
    int exact;
    const char *const *checks;      /* specs the check runs, NULL-ended */
    /* The optimizer's parsed config (its own struct, the one its ops
     * table's params point into) -> the kernels' hyperparameters: the one
     * mapping between the two, beside the config's definition. */
    void (*hparams)(const void *cfg, struct lbs_optim_device_hp *hp);
    /* Bytes per element the kernels move in one step, without the 4 of
     * the gradient check (as ops->bytes_per_elem, for the GPU figure of
     * lbs_cuda_optim_bytes_per_elem); layers as given to the GPU handle.
     * Lives next to the CPU model in the optimizer's file, which says why
     * the two differ where they do. */
    double (*bytes_per_elem)(const void *cfg, const struct lbs_layer *layers,
                             size_t nlayers);
};

/* A tuned learning-rate rule, for a trainer told no rate (lbscale train):
 * at global batch B, lr = min(lr_max, lr_ref (B / LBS_OPTIM_LR_REF_BATCH)
 * ^ alpha).  Each optimizer file that has one states the sweep it came
 * from beside it: Fashion-MNIST, mlp:784-512-256-10, 10 epochs, cosine
 * decay, 10% warm-up, test accuracy (1 process unless it says otherwise).
 * alpha 0.5 is the square-root rule (Krizhevsky 2014, the LAMB paper).
 * An optimizer without one trains at its own lr default. */
#define LBS_OPTIM_LR_REF_BATCH 1024.0
struct lbs_optim_lr_rule {
    double lr_ref, alpha, lr_max;
};

/* What an optimizer is, from its ops table.  All pointers are static. */
struct lbs_optim_props {
    const char *name, *summary;
    /* Keys, defaults, ranges and help ({NULL}-terminated, lbscale/param.h) */
    const struct lbs_param_spec *params;
    /* Data-parallel: the driver averages every (kept) gradient with one
     * allreduce before the update (sgd, lars, lamb, adamw, jointspar*). */
    int dense;
    /* Uses only a sampled subset of layers per step (JointSpar): a trainer
     * may skip the dropped layers' weight gradients, and the simulator
     * does (lbs_optim_next_keep). */
    int samples_layers;
    /* Does its own communication (SLAMB, 1-bit LAMB, DmSGD, DecentLaM):
     * not data-parallel, refuses a compressor (= !dense). */
    int own_comm;
    /* Adam family: lr scales with sqrt(batch) rather than linearly. */
    int adaptive;
    /* A key whose default is run_fraction x the run's steps (1-bit LAMB's
     * freeze_step), or NULL. */
    const char *run_key;
    double run_fraction;
    /* The tuned learning-rate rule, or NULL when there is none. */
    const struct lbs_optim_lr_rule *lr_rule;
    /* GPU kernels, or NULL when the optimizer runs on the CPU only. */
    const struct lbs_optim_device *device;
};
/* The properties of the optimizer spec names ("lamb" or a whole spec:
 * only the name is read).  0, or -ENOENT for an unknown optimizer, -EINVAL
 * for a malformed spec, with the message lbs_optim_new would give. */
int lbs_optim_props(const char *spec, struct lbs_optim_props *p,
                    struct lbs_err *err);
/* Does the optimizer called name have the key?  0 for an unknown name. */
int lbs_optim_has_key(const char *name, const char *key);
/* Check a spec without layers: 0, or exactly the code and message that
 * lbs_optim_new would give for it (every key, range and cross-key rule).
 * With compress (NULL or "" for none) also what lbs_optim_set_compressor
 * would say on a new optimizer: the data-parallel rule and
 * lbs_compressor_check of the compressor spec. */
int lbs_optim_check(const char *spec, const char *compress,
                    struct lbs_err *err);
/* The roofline model (lbs_optim_bytes_per_elem) of spec on a nominal
 * model: one rank, one 1x1 layer, before the first step.  What the
 * simulator charges per element when it has no layers of its own. */
int lbs_optim_spec_bytes_per_elem(const char *spec, double *bpe,
                                  struct lbs_err *err);
/* The same model for step `step` (1-based) of a run on `ranks` ranks
 * (a record comm of that size: nothing moves): what an optimizer whose
 * passes change with its phase or with P moves then (1-bit LAMB's
 * compressed phase packs, feeds back and unpacks: 56 + 8/P against 40 in
 * its warm-up).  -EINVAL for step or ranks < 1. */
int lbs_optim_spec_bytes_at(const char *spec, long step, long ranks,
                            double *bpe, struct lbs_err *err);

/* A parsed spec without layers: what lbs_optim_new parses, kept for
 * another implementation of the same optimizer (the CUDA kernels) to
 * read its values from.  _new allocates (errors: those of
 * lbs_optim_check), _free releases; name and params (the effective
 * "key=value,..." list, as lbs_optim_params) live as long as it. */
struct lbs_optim_config;
int lbs_optim_config_new(const char *spec, struct lbs_optim_config **out,
                         struct lbs_err *err);
void lbs_optim_config_free(struct lbs_optim_config *c);
const char *lbs_optim_config_name(const struct lbs_optim_config *c);
const char *lbs_optim_config_params(const struct lbs_optim_config *c);
/* As lbs_optim_get: the effective value of key, or -ENOENT. */
int lbs_optim_config_get(const struct lbs_optim_config *c, const char *key,
                         double *value, struct lbs_err *err);
/* The GPU's view of the same config, through the optimizer's device hook
 * (struct lbs_optim_device): 0 and *hp filled (neutral values first, then
 * the hook's mapping), or -ENOTSUP naming the optimizers that have GPU
 * kernels when this one has none. */
int lbs_optim_config_device(const struct lbs_optim_config *c,
                            struct lbs_optim_device_hp *hp,
                            struct lbs_err *err);
/* The device hook's bytes model for layers, plus the driver's 4-byte
 * gradient check: what lbs_cuda_optim_bytes_per_elem reports.  0 when
 * the optimizer has no device hook or the layers hold no elements. */
double lbs_optim_config_device_bytes(const struct lbs_optim_config *c,
                                     const struct lbs_layer *layers,
                                     size_t nlayers);

/* Registry: the names in registration order, NULL-terminated. */
const char *const *lbs_optim_names(void);
/* Print "name - summary" and the key table of one optimizer (or all when
 * name is NULL).  Returns -ENOENT for an unknown name. */
int lbs_optim_help(const char *name, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
