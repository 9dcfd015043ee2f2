/* registry.c - every optimizer, by name.  Adding one = one line here. */
#include <stddef.h>

#include "optim_impl.h"

const struct lbs_optim_ops *const lbs_optim_registry[] = {
    &lbs_optim_sgd,
    &lbs_optim_lars,
    &lbs_optim_lamb,
    &lbs_optim_adamw,
    &lbs_optim_slamb,
    &lbs_optim_onebit_lamb,
    &lbs_optim_jointspar,
    &lbs_optim_jointspar_lars,
    &lbs_optim_dmsgd,
    &lbs_optim_decentlam,
    NULL,
};
