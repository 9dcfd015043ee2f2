/* lbs_cuda_optim.h - optimizer steps on one CUDA GPU (internal to lbscale).
 *
 *   struct lbs_cuda_optim *h;
 *   struct lbs_err e;
 *   if (lbs_cuda_optim_new("lamb:lr=0.01", layers, nlayers, &h, &e)) ...
 *   for (size_t i = 0; i < nlayers; i++) {
 *       lbs_cuda_optim_write(h, "w", i, layers[i].w, &e);
 *       lbs_cuda_optim_write(h, "g", i, layers[i].g, &e);
 *   }
 *   lbs_cuda_optim_step(h, &e);        enqueues the step, returns at once
 *   lbs_cuda_optim_sync(h, &e);        waits; 1 if a step was skipped
 *   lbs_cuda_optim_read(h, "w", i, host, &e);
 *   lbs_cuda_optim_free(h);
 *
 * What runs: lamb, slamb, adamw and sgd, made from the same spec strings
 * and parsed by the same parser as lbscale/optim.h (unknown keys and bad
 * values fail with the same messages), computing what the CPU files
 * core/optim/{lamb,slamb,adamw,sgd}.c compute - those are the reference
 * and tests/gpu/check_optim.c compares against them.  Element-wise
 * arithmetic is bit-identical to the CPU's; the per-layer norms (LAMB and
 * SLAMB trust ratios, the clip factor) are sums in another order, so
 * quantities that depend on them agree to a few 1e-5 relative (see
 * check_optim.c for the bound).  SLAMB runs as one rank: the masked
 * momentum is compacted and scattered back as on the CPU, with nothing to
 * average it with, and the every-H parameter average is the identity.
 *
 * A step is a handful of kernel launches on the handle's own stream with
 * no host synchronisation: the gradient check, the clip factor, every
 * layer's norms and trust ratio stay on the device.  As on the CPU a
 * step whose gradients hold NaN/Inf leaves all state untouched; the host
 * learns it at the next lbs_cuda_optim_sync, which then corrects the step
 * counter.  Steps enqueued between a skipped step and that sync use a step
 * number one too high (bias correction, SLAMB's mask), so a trainer that
 * wants the CPU's behaviour after a NaN exactly syncs after every step.
 *
 * Ownership: _new allocates all device memory (w, g and the state, each
 * one flat buffer with the layers back to back in order) and reads only
 * n and ndim of each layer; the caller fills w and g with _write (or writes the device buffers from
 * lbs_cuda_optim_params / _grads itself).  _free releases everything.
 * One handle is driven by one thread.
 *
 * Errors: 0 or a negative code (lbscale/error.h) with one line in err;
 * every CUDA failure names the failing call (cuda_check.h).  Builds
 * without CUDA get stubs that return -ENOTSUP, "this lbscale was built
 * without CUDA".
 */
#ifndef LBS_CUDA_OPTIM_H
#define LBS_CUDA_OPTIM_H

#include <stddef.h>

#include "lbs_config.h"
#include "lbscale/error.h"
#include "lbscale/layer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lbs_cuda_optim;

#if LBS_HAVE_CUDA

/* Validate spec (same parser and messages as lbs_optim_new) and check
 * that it names an optimizer with CUDA kernels; needs no GPU.  -ENOENT /
 * -EINVAL for a bad spec, -ENOTSUP for an optimizer without kernels. */
int lbs_cuda_optim_check(const char *spec, struct lbs_err *err);
/* A handle for layers (n, ndim and shape are read; w, g may be NULL) on
 * the calling thread's current CUDA device (GPU 0 unless cudaSetDevice
 * chose another).  -ENODEV without a GPU, -ENOMEM (naming the cudaMalloc)
 * when the device memory does not suffice, else the errors of
 * lbs_cuda_optim_check and lbs_layers_check. */
int lbs_cuda_optim_new(const char *spec, const struct lbs_layer *layers,
                       size_t nlayers, struct lbs_cuda_optim **out,
                       struct lbs_err *err);
/* Host -> device copy of one layer's "w" or "g" (layers[layer].n floats).
 * Waits for the steps enqueued before. */
int lbs_cuda_optim_write(struct lbs_cuda_optim *h, const char *what,
                         size_t layer, const float *src, struct lbs_err *err);
/* Device -> host copy of one layer's "w", "g", "m" (first moment; sgd:
 * momentum buffer), "v" (second moment; not sgd) or "c" (slamb only:
 * uint32 staleness counters, all 0 for always-synced layers).  Waits for
 * the steps enqueued before (but does not report skips: see _sync). */
int lbs_cuda_optim_read(struct lbs_cuda_optim *h, const char *what,
                        size_t layer, void *dst, struct lbs_err *err);
/* Enqueue one step; returns without waiting.  Errors here are launch
 * failures only (the handle is then unusable); what the kernels found
 * comes out of _sync. */
int lbs_cuda_optim_step(struct lbs_cuda_optim *h, struct lbs_err *err);
/* Wait for every enqueued step.  0; 1 when steps were skipped since the
 * last sync for non-finite gradients (err says how many and from which
 * step; the step counter no longer counts them); -EDOM naming the first
 * step and layer whose update was non-finite (as lbs_optim_step: that
 * step was partly applied, but not only up to that layer as on the CPU:
 * adamw and sgd update every other layer, lamb and slamb hold back w from
 * that layer on but update m, v (and c) everywhere; free the handle);
 * -EIO naming a failed CUDA call. */
int lbs_cuda_optim_sync(struct lbs_cuda_optim *h, struct lbs_err *err);
/* Run warmup + iters steps and write the device time of each timed step
 * into ms[0..iters-1] (CUDA events around the step's kernels); then sync
 * and return what _sync returns. */
int lbs_cuda_optim_time(struct lbs_cuda_optim *h, long warmup, long iters,
                        double *ms, struct lbs_err *err);
/* Scale every learning rate by f from the next step on (schedules). */
void lbs_cuda_optim_set_lr_scale(struct lbs_cuda_optim *h, double f);
/* Steps counted so far (skips subtracted at each sync). */
long lbs_cuda_optim_steps(const struct lbs_cuda_optim *h);
/* The kernels' traffic model, bytes per element, from the optimizer's
 * device hook (lbs_optim_config_device_bytes: beside the CPU model in the
 * optimizer's file).  The same as lbs_optim_bytes_per_elem for the same
 * spec and layers, except SLAMB with cyclic masks, whose kernels keep
 * staleness counters where the CPU keeps chunk ids (64 + 24k per
 * partial-layer element on the GPU, less on the CPU: slamb_bytes). */
double lbs_cuda_optim_bytes_per_elem(const struct lbs_cuda_optim *h);
/* The flat device buffers of parameters and gradients (layer i starts at
 * the sum of the earlier layers' n), for trainers that keep the model on
 * the GPU. */
float *lbs_cuda_optim_params(struct lbs_cuda_optim *h);
float *lbs_cuda_optim_grads(struct lbs_cuda_optim *h);
void lbs_cuda_optim_free(struct lbs_cuda_optim *h);

#else /* !LBS_HAVE_CUDA: every entry point says so */

#define LBS_CUDA_OPTIM_NONE(err)                                            \
    lbs_err_set(err, -ENOTSUP, "this lbscale was built without CUDA")

static inline int lbs_cuda_optim_check(const char *spec, struct lbs_err *err)
{
    (void)spec;
    return LBS_CUDA_OPTIM_NONE(err);
}
static inline int lbs_cuda_optim_new(const char *spec,
                                     const struct lbs_layer *layers,
                                     size_t nlayers,
                                     struct lbs_cuda_optim **out,
                                     struct lbs_err *err)
{
    (void)spec, (void)layers, (void)nlayers;
    *out = NULL;
    return LBS_CUDA_OPTIM_NONE(err);
}
static inline int lbs_cuda_optim_write(struct lbs_cuda_optim *h,
                                       const char *what, size_t layer,
                                       const float *src, struct lbs_err *err)
{
    (void)h, (void)what, (void)layer, (void)src;
    return LBS_CUDA_OPTIM_NONE(err);
}
static inline int lbs_cuda_optim_read(struct lbs_cuda_optim *h,
                                      const char *what, size_t layer,
                                      void *dst, struct lbs_err *err)
{
    (void)h, (void)what, (void)layer, (void)dst;
    return LBS_CUDA_OPTIM_NONE(err);
}
static inline int lbs_cuda_optim_step(struct lbs_cuda_optim *h,
                                      struct lbs_err *err)
{
    (void)h;
    return LBS_CUDA_OPTIM_NONE(err);
}
static inline int lbs_cuda_optim_sync(struct lbs_cuda_optim *h,
                                      struct lbs_err *err)
{
    (void)h;
    return LBS_CUDA_OPTIM_NONE(err);
}
static inline int lbs_cuda_optim_time(struct lbs_cuda_optim *h, long warmup,
                                      long iters, double *ms,
                                      struct lbs_err *err)
{
    (void)h, (void)warmup, (void)iters, (void)ms;
    return LBS_CUDA_OPTIM_NONE(err);
}
static inline void lbs_cuda_optim_set_lr_scale(struct lbs_cuda_optim *h,
                                               double f)
{
    (void)h, (void)f;
}
static inline long lbs_cuda_optim_steps(const struct lbs_cuda_optim *h)
{
    (void)h;
    return 0;
}
static inline double
lbs_cuda_optim_bytes_per_elem(const struct lbs_cuda_optim *h)
{
    (void)h;
    return 0;
}
static inline float *lbs_cuda_optim_params(struct lbs_cuda_optim *h)
{
    (void)h;
    return NULL;
}
static inline float *lbs_cuda_optim_grads(struct lbs_cuda_optim *h)
{
    (void)h;
    return NULL;
}
static inline void lbs_cuda_optim_free(struct lbs_cuda_optim *h)
{
    (void)h;
}

#endif /* LBS_HAVE_CUDA */

#ifdef __cplusplus
}
#endif
#endif
