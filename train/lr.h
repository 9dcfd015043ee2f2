/* lr.h - the learning-rate rules of `lbscale train` (train/ only): the
 * optimizers' tuned rules (their ops tables, lbscale/optim.h: struct
 * lbs_optim_lr_rule), --lr-base scaling, the effective spec the optimizer
 * is built from, and the warm-up/decay schedule.
 */
#ifndef LBS_TRAIN_LR_H
#define LBS_TRAIN_LR_H

#include <stddef.h>

#include "lbscale/error.h"
#include "train.h"

/* Build the spec actually used: the user's keys win; lr from --lr-base or
 * the optimizer's tuned rule, topology from --topology, the run-sized key
 * (freeze_step, kwarm) and seed as documented.  rule: how lr was chosen;
 * *lr_used: the rate chosen (the optimizer's own default when it has no
 * tuned rule), NaN when the spec gives lr. */
int lbs_train_effective_spec(const struct lbs_train_config *t,
                             long total_steps, char *spec, size_t len,
                             char *rule, size_t rlen, double *lr_used,
                             struct lbs_err *err);
/* The scaling applied under --lr-base ("linear", "sqrt", "none") for
 * optimizer `name`; NULL without --lr-base. */
const char *lbs_train_lr_scaling(const struct lbs_train_config *t,
                                 const char *name);
/* The schedule's factor at step it of total (warm-up, then decay). */
double lbs_train_lr_factor(const char *decay, long warmup_steps,
                           long total_steps, long it);
/* The value of key in spec into out ("" when absent). */
void lbs_train_spec_value(const char *spec, const char *key, char *out,
                          size_t len);

#endif
