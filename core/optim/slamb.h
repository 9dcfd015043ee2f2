/* slamb.h - inspection hooks of the SLAMB and 1-bit LAMB optimizers.
 *
 * Internal to core (tests and reports include it through core/optim); the
 * optimizers themselves are reached only through lbscale/optim.h.  Every
 * hook returns NULL / 0 / -1 when o is not an optimizer of that kind or
 * layer is out of range.  Pointers stay valid until lbs_optim_free(o) and
 * are read-only views of live state (updated by every lbs_optim_step).
 */
#ifndef LBS_SLAMB_H
#define LBS_SLAMB_H

#include <stddef.h>
#include <stdint.h>

struct lbs_optim;

/* ---- slamb ---- */
/* The momentum m of a layer (n floats). */
const float *lbs_slamb_momentum(const struct lbs_optim *o, size_t layer);
/* Staleness counters c (n entries, steps since the coordinate was last
 * synced; 0 = synced at the last step), or NULL for an always-synced layer
 * (1-D or smaller than `small`), whose counters are all 0. */
const uint32_t *lbs_slamb_staleness(const struct lbs_optim *o, size_t layer);
/* Coordinates of the layer synced at the last step (its allreduce count). */
size_t lbs_slamb_synced(const struct lbs_optim *o, size_t layer);
/* The density k_t of step t (1-based) under the k warm-up of kwarm steps
 * per stage (slamb.c: the authors' CIFAR schedule, floored at k); k when
 * kwarm is 0. */
double lbs_slamb_k_at(double k, double kwarm, long t);

/* ---- onebit_lamb ---- */
/* 1 once the warm-up is over (steps taken >= freeze_step: the next step
 * compresses), else 0; -1 if not a onebit_lamb optimizer. */
int lbs_onebit_lamb_compressing(const struct lbs_optim *o);
/* Bytes this rank passes to collectives in one compressed step (see the
 * formula in onebit_lamb.c), excluding the driver's 4-byte finite flag;
 * 0 on one rank (nothing is communicated there). */
double lbs_onebit_lamb_step_bytes(const struct lbs_optim *o);
/* The warm-up EMA of the layer's trust ratio (the frozen LAMB coefficient). */
double lbs_onebit_lamb_coeff_freeze(const struct lbs_optim *o, size_t layer);
/* The scaling factor of the layer's last compressed step (1 before). */
double lbs_onebit_lamb_factor(const struct lbs_optim *o, size_t layer);
/* The momentum m of a layer (n floats). */
const float *lbs_onebit_lamb_momentum(const struct lbs_optim *o, size_t layer);
/* The error-feedback state of the compressed allreduce: this rank's worker
 * error over the fused, padded momentum (*npad floats, layers in order)
 * and its server error over its chunk (*chunk floats: elements
 * [rank chunk, (rank+1) chunk) of the fused buffer), as copies valid until
 * the next step or call.  0, or -1 before the first compressed step on
 * several ranks (or out of memory for the copies). */
int lbs_onebit_lamb_errors(const struct lbs_optim *o, const float **worker,
                           const float **server, size_t *npad, size_t *chunk);

#endif
