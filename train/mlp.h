/* mlp.h - a multilayer perceptron classifier for `lbscale train`
 * (bench/ only).
 *
 * dims[0] -> dims[1] -> ... -> dims[nd]: nd dense layers, ReLU between
 * them, softmax cross-entropy on the last.  Every matrix product is an
 * OpenBLAS cblas_sgemm (row-major):
 *   forward   Z_i = X_i W_i^T + b_i           W_i is [out, in]
 *   backward  dW_i = dZ_i^T X_i               (the weight-gradient GEMM)
 *             db_i = column sums of dZ_i
 *             dX_i = dZ_i W_i, masked by ReLU' (the activation gradient)
 *
 * Parameters are exposed as 2*nd struct lbs_layer entries in the order
 * W0, b0, W1, b1, ...: weights 2-D {out, in}, biases 1-D {out}, all in one
 * contiguous w (and g) buffer.  mlp_backward takes a keep[] per lbs_layer
 * (lbs_optim_next_keep): a layer with keep 0 gets no weight-gradient GEMM
 * (or bias sum) at all and its g is left untouched, but the activation
 * gradient still flows through its weights to the layers below.
 *
 * Timing: each call adds seconds to t_fwd/t_bwd/t_wgrad (per lbs_layer,
 * reset by the caller).  A weight layer's t_fwd is its GEMM, its bias
 * layer's t_fwd the bias add and ReLU; a weight layer's t_bwd is its dW
 * GEMM (also in t_wgrad) plus its dX GEMM and ReLU mask; a bias layer's
 * t_bwd (= t_wgrad) is its column sum.
 *
 * Determinism: the results depend only on the inputs and on OpenBLAS's
 * thread count (fix it with openblas_set_num_threads); the elementwise
 * parts are serial.
 * Ownership: mlp_new allocates everything, mlp_free releases it.
 */
#ifndef LBS_MLP_H
#define LBS_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "lbscale/error.h"
#include "lbscale/layer.h"

#define MLP_MAX_DENSE 16
#define MLP_DEFAULT "mlp:784-512-256-10"
/* `--model mlp8`: 8 weight layers (16 tensors) for JointSpar. */
#define MLP8_SPEC "mlp:784-256-256-256-256-256-256-256-10"

struct mlp {
    void *cnn;                          /* non-NULL: the CNN (cnn.h) */
    int nd;                             /* dense layers (CNN: 1, logits) */
    size_t dims[MLP_MAX_DENSE + 1];
    size_t nparams;
    float *w, *g;                       /* all parameters / gradients */
    size_t nlayers;                     /* 2 * nd */
    struct lbs_layer layers[2 * MLP_MAX_DENSE];
    char names[2 * MLP_MAX_DENSE][24];   /* CNN: 8 tensors */
    size_t max_batch;
    float *act[MLP_MAX_DENSE + 1];      /* act[i+1]: output of layer i */
    float *d0, *d1;                     /* activation-gradient ping-pong */
    double t_fwd[2 * MLP_MAX_DENSE], t_bwd[2 * MLP_MAX_DENSE],
        t_wgrad[2 * MLP_MAX_DENSE];
};

/* "mlp:784-512-256-10" -> dims, nd.  -EINVAL naming the problem. */
int mlp_parse(const char *spec, size_t *dims, int *nd, struct lbs_err *err);
int mlp_new(const size_t *dims, int nd, size_t max_batch, struct mlp **out,
            struct lbs_err *err);
void mlp_free(struct mlp *m);
/* He-normal weights (std sqrt(2/in)) from the counter generator keyed by
 * seed and layer; zero biases. */
void mlp_init(struct mlp *m, uint64_t seed);
/* Forward b <= max_batch rows of x with parameters w (m->w or a copy of
 * the same layout); logits end in m->act[nd]. */
void mlp_forward(struct mlp *m, const float *w, const float *x, size_t b);
/* Softmax cross-entropy of the logits against y: returns the summed loss,
 * adds correct predictions to *correct, and (when grad != 0) leaves
 * (softmax - onehot) * scale in m->d0 for mlp_backward. */
double mlp_loss(struct mlp *m, const uint8_t *y, size_t b, int grad,
                float scale, long *correct);
/* Backward over the last forward's b rows (x as given to it), gradients
 * into m->g: accumulate 0 overwrites, 1 adds.  keep may be NULL (all). */
void mlp_backward(struct mlp *m, const float *x, size_t b,
                  const uint8_t *keep, int accumulate);
void mlp_reset_times(struct mlp *m);

#endif
