/* none.c - no compression: the payload is the fp32 values, averaged with
 * one allreduce.  The baseline every ratio is taken against. */
#include <string.h>

#include "compress_impl.h"


static size_t none_bytes(struct lbs_compressor *c, size_t n,
                         const struct lbs_cctx *ctx)
{
    (void)c; (void)ctx;
    return 4 * n;
}

static size_t none_max(const struct lbs_compressor *c, size_t n)
{
    (void)c;
    return 4 * n;
}

static int none_compress(struct lbs_compressor *c, const float *x, size_t n,
                         const struct lbs_cctx *ctx, void *payload,
                         size_t *bytes, struct lbs_err *err)
{
    (void)c; (void)ctx; (void)err;
    float *p = payload;
#pragma omp parallel for simd schedule(static) if (n > LBS_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        p[i] = x[i];
    *bytes = 4 * n;
    return 0;
}

static int none_decompress_add(struct lbs_compressor *c, const void *payload,
                               size_t bytes, size_t n,
                               const struct lbs_cctx *ctx, float alpha,
                               float *out, struct lbs_err *err)
{
    (void)ctx;
    int rc = lbs_cmp_expect_bytes(c, bytes, 4 * n, err);
    if (rc)
        return rc;
    const float *p = payload;
#pragma omp parallel for simd schedule(static) if (n > LBS_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        out[i] += alpha * p[i];
    return 0;
}

/* In place: no payload copy, the plain data-parallel average. */
static int none_exchange(struct lbs_compressor *c, struct lbs_comm *comm,
                         float *x, float *out, size_t n,
                         const struct lbs_cctx *ctx, struct lbs_err *err)
{
    (void)c; (void)err;
    if (x != out)
        memcpy(out, x, n * sizeof *out);
    return lbs_allreduce_mean_f32(comm, out, n, ctx->layer);
}

/* Invariant (lbs_compress_wrong): lossless, out == x bit for bit. */
static long none_wrong(const struct lbs_compressor *c,
                       struct lbs_compress_check *ck)
{
    long bad = 0;
    (void)c;
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (size_t i = 0; i < ck->n; i++)
        bad += ck->out[i] != ck->x[i];
    return bad;
}

const struct lbs_compress_ops lbs_cmp_none = {
    .name = "none",
    .summary = "no compression: fp32 values, one allreduce",
    .params = lbs_cmp_no_params,
    .cfg_size = 0,
    .coll = LBS_COLL_ALLREDUCE,
    .ef_ok = 0,
    .ef_why = "the compressor is lossless, the residual would stay 0",
    .wire_bytes = none_bytes,
    .max_bytes = none_max,
    .compress = none_compress,
    .decompress_add = none_decompress_add,
    .exchange = none_exchange,
    .wrong = none_wrong,
};
