/* fp16.c - IEEE binary16, round to nearest even; 2 bytes per element.
 *
 * Values beyond the half range become +-inf and tiny ones half subnormals
 * or 0, exactly as a cast would (loss scaling is the caller's business).
 * The conversions are lbscale/half.h's (F16C when the CPU has it, else
 * the bit-exact software routine).
 *
 * Collective: allgather.  An fp16 allreduce (NCCL's ncclHalf, Horovod's
 * fp16 compression) would be cheaper at many ranks, but lbs_comm has no
 * half dtype and MPI no half sum, so every rank's halves are gathered
 * and summed in fp32 (exact accumulation, volume grows with the ranks).
 */
#include <omp.h>
#include <stdint.h>

#include "compress_impl.h"
#include "lbscale/half.h"

static const struct lbs_param_spec fp16_params[] = {
    {NULL, 0, 0, 0, 0, 0, 0, NULL, NULL},
};

static size_t fp16_bytes(struct lbs_compressor *c, size_t n,
                         const struct lbs_cctx *ctx)
{
    (void)c; (void)ctx;
    return 2 * n;
}

static size_t fp16_max(const struct lbs_compressor *c, size_t n)
{
    (void)c;
    return 2 * n;
}

/* Static blocks per thread, so the vector body sees long runs. */
#define BLOCK_RANGE(n, lo, hi)                                           \
    size_t lo = (n) * (size_t)omp_get_thread_num() /                     \
                (size_t)omp_get_num_threads();                           \
    size_t hi = (n) * (size_t)(omp_get_thread_num() + 1) /               \
                (size_t)omp_get_num_threads()

static int fp16_compress(struct lbs_compressor *c, const float *x, size_t n,
                         const struct lbs_cctx *ctx, void *payload,
                         size_t *bytes, struct lbs_err *err)
{
    (void)c; (void)ctx; (void)err;
    uint16_t *h = payload;
#pragma omp parallel if (n > LBS_PAR_MIN)
    {
        BLOCK_RANGE(n, lo, hi);
        lbs_f32_to_f16_array(x + lo, h + lo, hi - lo);
    }
    *bytes = 2 * n;
    return 0;
}

static int fp16_decompress_add(struct lbs_compressor *c, const void *payload,
                               size_t bytes, size_t n,
                               const struct lbs_cctx *ctx, float alpha,
                               float *out, struct lbs_err *err)
{
    (void)ctx;
    int rc = lbs_cmp_expect_bytes(c, bytes, 2 * n, err);
    if (rc)
        return rc;
    const uint16_t *h = payload;
#pragma omp parallel if (n > LBS_PAR_MIN)
    {
        BLOCK_RANGE(n, lo, hi);
        float v[512];   /* decoded a block at a time: it stays in L1 */
        for (size_t i = lo; i < hi; i += 512) {
            size_t m = hi - i < 512 ? hi - i : 512;
            lbs_f16_to_f32_array(h + i, v, m);
            for (size_t j = 0; j < m; j++)
                out[i + j] += alpha * v[j];
        }
    }
    return 0;
}

const struct lbs_compress_ops lbs_cmp_fp16 = {
    .name = "fp16",
    .summary = "IEEE half precision, round to nearest even (2 B/element)",
    .params = fp16_params,
    .cfg_size = 0,
    .coll = LBS_COLL_ALLGATHER,
    .ef_ok = 0,
    .ef_why = "fp16's error is round-to-nearest (relative <= 2^-11, "
              "unbiased); a residual would double the state for nothing",
    .wire_bytes = fp16_bytes,
    .max_bytes = fp16_max,
    .compress = fp16_compress,
    .decompress_add = fp16_decompress_add,
};
