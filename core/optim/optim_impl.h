/* optim_impl.h - what an optimizer file implements (internal to core).
 *
 * One file per optimizer fills one struct lbs_optim_ops and adds one row to
 * core/meson.build's optimizers (registry.c).  The driver (optim.c) parses
 * the spec against ops->params into a freshly allocated config of
 * ops->cfg_size bytes, calls init, and on every lbs_optim_step() advances
 * o->t (1-based) and calls step.  A step talks to other ranks only through
 * o->comm.
 */
#ifndef LBS_OPTIM_IMPL_H
#define LBS_OPTIM_IMPL_H

#include <stdint.h>

#include "lbscale/compress.h"
#include "lbscale/mem.h"
#include "lbscale/optim.h"
#include "lbscale/param.h"
#include "chunks.h"
#include "par.h"

struct lbs_optim;
struct lbs_kfam;

struct lbs_optim_ops {
    const char *name;
    const char *summary;                  /* one line for --help */
    const struct lbs_param_spec *params;  /* {NULL}-terminated */
    size_t cfg_size;                      /* a struct of doubles */
    /* Data-parallel: the driver averages g over the comm before step().
     * Optimizers that communicate otherwise (SLAMB, decentralized) set 0:
     * they do their own communication and refuse a compressor
     * (lbs_optim_props: dense, own_comm). */
    int dense;
    /* Per-coordinate adaptive step (Adam's second moment underneath):
     * the learning rate is scaled with the square root of the batch
     * (Krizhevsky 2014; the LAMB paper), not linearly (Goyal et al.). */
    int adaptive;
    /* Optional: a key whose default is a fraction of the run's steps, for
     * a trainer that knows the run's length (1-bit LAMB's freeze_step:
     * DeepSpeed warms up for 15-25% of training), or NULL. */
    const char *run_key;
    double run_fraction;
    /* Optional: the tuned learning-rate rule (lbscale/optim.h), defined
     * beside the sweep it came from; NULL = untuned. */
    const struct lbs_optim_lr_rule *lr_rule;
    /* Optional: cross-key checks of a parsed config (cmin <= cmax, ...)
     * that need no layers, so lbs_optim_check answers exactly what
     * lbs_optim_new would; name is ops->name for the message.  Called
     * by the driver right after parsing, before init. */
    int (*check)(const void *cfg, const char *name, struct lbs_err *err);
    /* Bytes moved per element by step() alone (roofline model); the
     * driver adds 4 for its gradient check pass. */
    double (*bytes_per_elem)(const struct lbs_optim *o);
    int (*init)(struct lbs_optim *o, struct lbs_err *err);
    int (*step)(struct lbs_optim *o, struct lbs_err *err);
    /* Optional, for layer-sampling optimizers (JointSpar): decide which
     * layers step `step` will use (keep[i] = 1) and which it ignores (0),
     * so the trainer can skip their weight-gradient GEMMs.  Called once
     * per step number before step(); the driver caches the answer in
     * o->keep and skips dropped layers in its gradient check.  The same
     * answer must come out on every rank (use lbscale/rng.h).  Having a
     * plan is what lbs_optim_props reports as samples_layers. */
    void (*plan)(struct lbs_optim *o, long step, uint8_t *keep);
    /* Optional named statistics for lbs_optim_stat(): stats lists the
     * names (NULL-terminated), stat fills *value or returns -ENOENT for a
     * name it does not know.  A stat may communicate (then every rank must
     * ask for it at the same point) and must not change the optimizer's
     * trajectory. */
    const char *const *stats;
    int (*stat)(const struct lbs_optim *o, const char *name, double *value,
                struct lbs_err *err);
    void (*fini)(struct lbs_optim *o);
    /* Optional GPU override (lbscale/optim.h: struct lbs_optim_device);
     * NULL = CPU only. */
    const struct lbs_optim_device *device;
    /* Optional: the optimizer's own kernel family (core/kern/kfam.h), the
     * one tests/test_isa.c checks at every level, or NULL. */
    const struct lbs_kfam *kern;
    /* The CPU step is bit for bit the same at every kernel level: no sum
     * taken in a level-dependent order feeds the update (a trust ratio
     * does).  tests/test_isa.c holds every optimizer to its flag. */
    int exact;
};

/* Tuned rules that optimizers without a sweep of their own borrow (lamb.c,
 * sgd.c). */
extern const struct lbs_optim_lr_rule lbs_lr_lamb, lbs_lr_sgd;

struct lbs_optim {
    const struct lbs_optim_ops *ops;
    struct lbs_layer *layers;   /* owned copy of the caller's array */
    size_t nlayers;
    struct lbs_comm *comm;
    int own_comm;
    void *cfg;                  /* owned, ops->cfg_size bytes */
    void *state;                /* owned by the optimizer file */
    long t;                     /* steps applied, 1-based during step() */
    long skipped;               /* steps skipped for non-finite gradients */
    double *gsq;                /* per layer ||g||^2 after averaging, set by
                                   the driver before step() */
    double gnorm;               /* global ||g|| over kept layers */
    double *gpart;              /* nlayers x LBS_CHUNKS chunk sums of the
                                   check pass (lbs_sumsq_layers) */
    uint8_t *keep;              /* per layer: used by the coming step? */
    long keep_step;             /* the step o->keep was planned for */
    double lr_scale;            /* schedule factor, 1 by default */
    struct lbs_compressor *cmp; /* owned, or NULL: lbs_optim_set_compressor */
    char cmp_spec[256];         /* the spec it was made from ("" if none) */
    char params_str[1024];   /* the effective spec (lbs_params_format) */
};

/* ---- helpers shared by optimizer files (kernels.c) ---- */

/* Average every kept layer's gradient over the comm (no-op on one rank);
 * layers with o->keep[i] == 0 (JointSpar's dropped ones) are not read.
 * With a compressor (o->cmp) every kept layer goes through
 * lbs_compress_exchange instead, also on one rank, so error feedback and
 * the compression error apply there too. */
int lbs_optim_average_grads(struct lbs_optim *o, struct lbs_err *err);
/* min(1, max_norm / o->gnorm), or 1 when max_norm == 0: apex-style global
 * gradient clipping from the norm the driver already measured. */
double lbs_clip_scale(const struct lbs_optim *o, double max_norm);
/* A trust-ratio clamp's cross-key check (ops->check of lamb, slamb,
 * onebit_lamb): 0, or -EINVAL "NAME: cmin (..) > cmax (..)". */
int lbs_check_clamp(const char *name, double cmin, double cmax,
                    struct lbs_err *err);
/* Deterministic parallel sums: LBS_NORM_BLOCK, LBS_CHUNKS, lbs_chunk_lo
 * and lbs_sum_chunks (core/kern/chunks.h says how and why). */
/* below this a layer is processed serially (par.h says why this value) */
#define LBS_PAR_MIN LBS_PAR_MIN_OPTIM
/* The one-region passes over all layers (lbs_sumsq_layers): chunks
 * [c0, c1) of layer i for thread t of T.  A layer below LBS_PAR_MIN goes
 * whole to one thread (i mod T), as LBS_KERN_CHUNKED runs it whole on the
 * caller; above it the thread's share of the chunks.  0: none for t. */
static inline int lbs_layer_share(size_t n, size_t i, size_t t, size_t T,
                                  size_t *c0, size_t *c1)
{
    if (n < LBS_PAR_MIN) {
        *c0 = 0, *c1 = LBS_CHUNKS;
        return i % T == t;
    }
    *c0 = LBS_CHUNKS * t / T, *c1 = LBS_CHUNKS * (t + 1) / T;
    return 1;
}
/* Elements in all layers (whether one region is worth forking). */
static inline size_t lbs_layers_total(const struct lbs_layer *L, size_t nl)
{
    size_t s = 0;
    for (size_t i = 0; i < nl; i++)
        s += L[i].n;
    return s;
}
/* Sum of squares, deterministic as above. */
double lbs_sumsq(const float *x, size_t n);
/* out[i] = lbs_sumsq(L[i].g, L[i].n), bit for bit, for every layer with
 * keep[i] (0 elsewhere), in ONE parallel region over all layers (part:
 * nl x LBS_CHUNKS scratch).  A region per layer costs a fork and a
 * barrier per layer, and on a busy machine a barrier waits for whichever
 * thread was descheduled: the driver's check pass over 16 layers ran at a
 * tenth of its quiet speed that way. */
void lbs_sumsq_layers(const struct lbs_layer *L, size_t nl,
                      const uint8_t *keep, double *part, double *out);
/* Trust ratio ||w||/||u|| (1 when either is 0) clamped to [lo, hi]. */
double lbs_trust_ratio(double wnorm, double unorm, double lo, double hi);
/* -EDOM naming the layer when x (a norm or sum) is not finite. */
int lbs_check_finite(const struct lbs_optim *o, size_t layer, double x,
                     struct lbs_err *err);
/* Zeroed float array of n elements (aligned), or NULL. */
float *lbs_zalloc_f32(size_t n);
/* Per-layer float state: nlayers arrays of layers[i].n zeros. */
float **lbs_alloc_layer_state(const struct lbs_optim *o);
void lbs_free_layer_state(const struct lbs_optim *o, float **s);
/* One fused momentum pass over a layer, shared by sgd, lars, jointspar
 * and dmsgd (the field names are the multipliers in):
 *
 *   d = gs g + wd w;   v = mu v + a d;   s = nesterov ? a d + mu v : v;
 *   w -= k s
 *
 * sgd: gs = a = 1, k = lr.  lars: gs = 1, a = lr local_lr, k = 1.  With
 * g == NULL the gradient is taken as absent: d = 0 (no weight decay
 * either), so v decays and w keeps moving by its momentum (JointSpar's
 * dropped layers); g is then never read.  Returns the sum of s, a NaN/Inf
 * detector that costs no memory traffic.  Reads g, v, w, writes v, w:
 * 20 bytes per element (16 without g).  Multipliers equal to 1 are exact,
 * so sgd and lars compute bit for bit what their own loops did. */
struct lbs_momentum {
    float gs, wd, mu, a, k;
    int nesterov;
};
double lbs_momentum_pass(const struct lbs_momentum *p, const float *g,
                         float *v, float *w, size_t n);
/* Its kernel family (momentum_tmpl.c, core/kern/kfam.h): the pass over
 * one range, serial. */
struct lbs_momentum_kern {
    double (*momentum)(const struct lbs_momentum *p, const float *g,
                       float *v, float *w, size_t n);
};
extern const struct lbs_kfam lbs_momentum_kfam;
/* One elementwise pass over every layer in one parallel region (see
 * lbs_sumsq_layers for why): each thread takes its share of each layer
 * (lbs_layer_share) and calls chunk(ctx, i, lo, hi) chunk by chunk.
 * Every layer is passed; returns the first layer i for which a call
 * returned a sum that is not finite (the kernels' NaN detectors), or nl. */
size_t lbs_layers_pass(const struct lbs_layer *L, size_t nl,
                       double (*chunk)(const void *ctx, size_t i, size_t lo,
                                       size_t hi),
                       const void *ctx);
/* lbs_momentum_pass over every layer (g from L[i].g, w = L[i].w, v[i]) in
 * one parallel region (see lbs_sumsq_layers for why); the same v and w
 * bit for bit.  Every layer is updated; returns the index of the first
 * layer whose sum is not finite, or nl. */
size_t lbs_momentum_layers(const struct lbs_momentum *p,
                           const struct lbs_layer *L, float *const *v,
                           size_t nl);
/* LARS's layer-wise rate for layer i (lars, jointspar_lars): *wd_eff = wd,
 * or 0 for a 1-D layer when exclude_1d; *local = eta ||w|| / (||g|| +
 * wd_eff ||w||) with ||g||^2 from o->gsq[i], or 1 when the layer is 1-D
 * and excluded or either norm is 0.  Measures ||w|| (reads w: 4 bytes per
 * element); -EDOM when it is not finite. */
int lbs_lars_local(const struct lbs_optim *o, size_t i, double eta, double wd,
                   int exclude_1d, double *local, double *wd_eff,
                   struct lbs_err *err);
/* Is layer i excluded from trust ratio and weight decay (1-D tensors)? */
static inline int lbs_layer_is_1d(const struct lbs_optim *o, size_t i)
{
    return o->layers[i].ndim <= 1;
}

#endif
