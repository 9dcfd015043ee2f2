/* fp16.c - IEEE binary16, round to nearest even; 2 bytes per element.
 *
 * Values beyond the half range become +-inf and tiny ones half subnormals
 * or 0, exactly as a cast would (loss scaling is the caller's business).
 * The conversions are lbscale/half.h's (F16C when the CPU has it, else
 * the bit-exact software routine).
 *
 * Collective: allreduce of the halves in binary16 (LBS_FLOAT16: NCCL's
 * ncclHalf, a user-defined sum on the mpi backend), as PyTorch DDP's
 * fp16_compress_hook and Horovod's fp16 compression do: n x 2 bytes per
 * rank whatever the rank count.  The sum is rounded to binary16 after
 * every addition (comm.h states the bound) and overflows to inf beyond
 * 65504; the driver divides by P in float while decoding (compress.c
 * says why after and not before).
 */
#include "compress_impl.h"

/* Invariant (lbs_compress_wrong): round to nearest, so |out - x| is at
 * most the unit roundoff 2^-11 of |x|, plus half the smallest subnormal
 * (0x1p-25) for values that underflow. */
static long fp16_wrong(const struct lbs_compressor *c,
                       struct lbs_compress_check *ck)
{
    (void)c;
    return lbs_cmp_half_wrong(ck, -11, 0x1p-25);
}

const struct lbs_compress_ops lbs_cmp_fp16 = {
    .name = "fp16",
    .summary = "IEEE half precision, round to nearest even (2 B/element), "
               "summed in fp16",
    LBS_CMP_HALF_OPS,
    .dtype = LBS_FLOAT16,
    .ef_why = "fp16's error is round-to-nearest (relative <= 2^-11, "
              "unbiased); a residual would double the state for nothing",
    .wrong = fp16_wrong,
};
