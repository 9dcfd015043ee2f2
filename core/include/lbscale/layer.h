/* lbscale/layer.h - a parameter set is an array of layers.
 *
 * Ownership: the caller allocates and frees w and g (n floats each) and the
 * name string; lbscale only reads g and writes w (and, for data-parallel
 * optimizers, averages g in place across ranks).  Optimizers keep their own
 * per-layer state and never keep a pointer past lbs_optim_free().
 */
#ifndef LBSCALE_LAYER_H
#define LBSCALE_LAYER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LBS_MAX_DIMS 4

struct lbs_layer {
    const char *name;           /* e.g. "encoder.0.attn.q.weight" */
    float *w;                   /* parameters, n elements */
    float *g;                   /* gradient, n elements */
    size_t n;                   /* element count = product of shape */
    int ndim;                   /* 1 for biases / LayerNorm, 2+ for matrices */
    size_t shape[LBS_MAX_DIMS];
};

struct lbs_err;
/* Check a layer list: at least one layer; each with n > 0, ndim in
 * 1..LBS_MAX_DIMS and a shape whose product is n; with need_buffers, w
 * and g non-NULL.  0, or -EINVAL naming the first bad layer.  Every
 * optimizer constructor (CPU and CUDA) runs it. */
int lbs_layers_check(const struct lbs_layer *layers, size_t n,
                     int need_buffers, struct lbs_err *err);

#ifdef __cplusplus
}
#endif
#endif
