/* registry.c - every optimizer, by name.  Adding one = its file plus one line here. */
#include <stddef.h>

#include "optim_impl.h"

/* One X(name) line per optimizer, in the order --list shows them: the line
 * both declares lbs_optim_NAME (defined in its own file, core/optim/NAME.c, which
 * core/meson.build compiles) and registers it. */
#define LBS_OPTIMIZERS(X) \
    X(sgd) \
    X(lars) \
    X(lamb) \
    X(adamw) \
    X(slamb) \
    X(onebit_lamb) \
    X(jointspar) \
    X(jointspar_lars) \
    X(dmsgd) \
    X(decentlam) \
    X(lion)

#define DECLARE(name) extern const struct lbs_optim_ops lbs_optim_##name;
LBS_OPTIMIZERS(DECLARE)

#define ENTRY(name) &lbs_optim_##name,
const struct lbs_optim_ops *const lbs_optim_registry[] = {LBS_OPTIMIZERS(ENTRY) NULL};
