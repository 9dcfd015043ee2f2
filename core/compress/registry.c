/* registry.c - every compressor, by name.  Adding one = its file plus one line here. */
#include <stddef.h>

#include "compress_impl.h"

/* One X(name) line per compressor, in the order --list shows them: the line
 * both declares lbs_cmp_NAME (defined in its own file, core/compress/NAME.c, which
 * core/meson.build compiles) and registers it. */
#define LBS_COMPRESSORS(X) \
    X(none) \
    X(fp16) \
    X(bf16) \
    X(topk) \
    X(thresh) \
    X(randk) \
    X(cyclick) \
    X(sign) \
    X(qsgd) \
    X(powersgd)

#define DECLARE(name) extern const struct lbs_compress_ops lbs_cmp_##name;
LBS_COMPRESSORS(DECLARE)

#define ENTRY(name) &lbs_cmp_##name,
const struct lbs_compress_ops *const lbs_compress_registry[] = {LBS_COMPRESSORS(ENTRY) NULL};
