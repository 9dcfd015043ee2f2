/* registry.c - every optimizer, by name.  Adding one = its file plus one
 * row in core/meson.build. */
#include <stddef.h>

#include "optim_impl.h"
#include "registry_list.h"

/* LBS_OPTIMIZERS(X) holds one X(name) per optimizer, in the order --list
 * shows them (registry_list.h, made by core/meson.build from the rows that
 * also compile each file, core/optim/NAME.c).  Each X(name) both
 * declares lbs_optim_NAME (defined in its file) and registers it. */
#define DECLARE(name) extern const struct lbs_optim_ops lbs_optim_##name;
LBS_OPTIMIZERS(DECLARE)

#define ENTRY(name) &lbs_optim_##name,
const struct lbs_optim_ops *const lbs_optim_registry[] = {LBS_OPTIMIZERS(ENTRY) NULL};
