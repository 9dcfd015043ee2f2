/* ef.c - error feedback (residual memory) as a decorator on any compressor.
 *
 *   x = g + e;   p = C(x);   e = x - D(p)
 *
 * The residual is allocated, zeroed, on a layer's first use and keyed by
 * the layer index.  e itself holds x between the two halves, so no extra
 * n-float buffer is needed, and e -= D(p) goes through the compressor's
 * decompress_add with alpha = -1: a sparse compressor touches only its K
 * selected entries (which become exactly 0), a dense one makes one pass.
 * Cost: one read of g and one read-modify-write of e on top of C and D.
 */
#include <stdlib.h>
#include <string.h>

#include "compress_impl.h"

int lbs_ef_begin(struct lbs_compressor *c, const float *g, size_t n,
                 int layer, float **x, struct lbs_err *err)
{
    void *p;
    int rc = lbs_cslot_get(&c->resid, layer, n, &p, err);
    if (rc)
        return rc;
    float *e = p;
    if (!e) {
        e = lbs_array_alloc(n, sizeof *e);
        if (!e)
            return lbs_err_set(err, -ENOMEM, "%s: out of memory for the "
                               "residual of layer %d", c->ops->name, layer);
        if ((rc = lbs_cslot_put(&c->resid, layer, n, e, err))) {
            free(e);
            return rc;
        }
        /* first use: x = g exactly (e = 0) */
#pragma omp parallel for simd schedule(static) if (n > LBS_PAR_MIN)
        for (size_t i = 0; i < n; i++)
            e[i] = g[i];
    } else {
#pragma omp parallel for simd schedule(static) if (n > LBS_PAR_MIN)
        for (size_t i = 0; i < n; i++)
            e[i] += g[i];
    }
    *x = e;
    return 0;
}

int lbs_ef_end(struct lbs_compressor *c, float *e, const void *payload,
               size_t bytes, size_t n, const struct lbs_cctx *ctx,
               struct lbs_err *err)
{
    return c->ops->decompress_add(c, payload, bytes, n, ctx, -1.0f, e, err);
}
