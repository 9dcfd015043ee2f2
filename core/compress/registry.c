/* registry.c - every compressor, by name.  Adding one = one line here. */
#include <stddef.h>

#include "compress_impl.h"

const struct lbs_compress_ops *const lbs_compress_registry[] = {
    &lbs_cmp_none,
    &lbs_cmp_fp16,
    &lbs_cmp_bf16,
    &lbs_cmp_topk,
    &lbs_cmp_thresh,
    &lbs_cmp_randk,
    &lbs_cmp_cyclick,
    &lbs_cmp_sign,
    &lbs_cmp_qsgd,
    &lbs_cmp_powersgd,
    NULL,
};
