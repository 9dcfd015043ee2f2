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
#include <math.h>
#include "compress_impl.h"

static const struct lbs_param_spec fp16_params[] = {
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

/* Invariant (lbs_compress_wrong): round to nearest, so |out - x| is at
 * most the unit roundoff 2^-11 of |x|, plus half the smallest subnormal
 * (0x1p-25) for values that underflow. */
static long fp16_wrong(const struct lbs_compressor *c,
                       struct lbs_compress_check *ck)
{
    long bad = 0;
    (void)c;
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (size_t i = 0; i < ck->n; i++)
        bad += fabs((double)ck->out[i] - ck->x[i]) >
               ldexp(fabs((double)ck->x[i]), -11) + 0x1p-25;
    return bad;
}

const struct lbs_compress_ops lbs_cmp_fp16 = {
    .name = "fp16",
    .summary = "IEEE half precision, round to nearest even (2 B/element), "
               "summed in fp16",
    .params = fp16_params,
    .cfg_size = 0,
    .coll = LBS_COLL_ALLREDUCE,
    /* memory traffic (lbs_compress_traffic): x read once, halves written;
     * decoding the summed halves updates every element */
    .traffic = {.comp = 4, .comp_w = 1, .dec_once = 4,
                .dec_part = 8, .dec_w = 1, .known = 1},
    .dtype = LBS_FLOAT16,
    .ef_ok = 0,
    .ef_why = "fp16's error is round-to-nearest (relative <= 2^-11, "
              "unbiased); a residual would double the state for nothing",
    .wire_bytes = lbs_cmp_half_bytes,
    .max_bytes = lbs_cmp_half_max,
    .compress = lbs_cmp_half_compress,
    .decompress_add = lbs_cmp_half_decompress_add,
    .wrong = fp16_wrong,
};
