/* bf16.c - bfloat16, round to nearest even; 2 bytes per element.
 *
 * The top half of each fp32 (8 exponent bits, 7 fraction bits): fp32's
 * range, so no overflow or loss scaling to think of, and a relative
 * rounding error of at most 2^-8 (8 times fp16's).  The mixed-precision
 * format of A100/H100 training and what torch's bf16_compress_hook sends.
 * Conversions: lbscale/half.h.
 *
 * Collective: allreduce of the bfloat16 values in bfloat16 (LBS_BFLOAT16:
 * NCCL's ncclBfloat16, a user-defined sum on the mpi backend), rounded
 * after every addition (comm.h states the bound); n x 2 bytes per rank.
 * The driver divides by P in float while decoding.
 *
 * A file of its own rather than a key of fp16: the two are different
 * formats with different error bounds, results tables name compressors,
 * and the payload is not binary16 at all.
 */
#include "compress_impl.h"

/* Invariant (lbs_compress_wrong): round to nearest, so |out - x| is at
 * most the unit roundoff 2^-8 of |x|, plus half the smallest subnormal
 * (0x1p-134) for values that underflow. */
static long bf16_wrong(const struct lbs_compressor *c,
                       struct lbs_compress_check *ck)
{
    (void)c;
    return lbs_cmp_half_wrong(ck, -8, 0x1p-134);
}

const struct lbs_compress_ops lbs_cmp_bf16 = {
    .name = "bf16",
    .summary = "bfloat16 (fp32's top 16 bits), round to nearest even "
               "(2 B/element), summed in bf16",
    LBS_CMP_HALF_OPS,
    .dtype = LBS_BFLOAT16,
    .ef_why = "bf16's error is round-to-nearest (relative <= 2^-8, "
              "unbiased); a residual would double the state for nothing",
    .wrong = bf16_wrong,
};
