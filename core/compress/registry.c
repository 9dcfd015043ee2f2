/* registry.c - every compressor, by name.  Adding one = its file plus one
 * row in core/meson.build. */
#include <stddef.h>

#include "compress_impl.h"
#include "registry_list.h"

/* LBS_COMPRESSORS(X) holds one X(name) per compressor, in the order --list
 * shows them (registry_list.h, made by core/meson.build from the rows that
 * also compile each file, core/compress/NAME.c).  Each X(name) both
 * declares lbs_cmp_NAME (defined in its file) and registers it. */
#define DECLARE(name) extern const struct lbs_compress_ops lbs_cmp_##name;
LBS_COMPRESSORS(DECLARE)

#define ENTRY(name) &lbs_cmp_##name,
const struct lbs_compress_ops *const lbs_compress_registry[] = {LBS_COMPRESSORS(ENTRY) NULL};
