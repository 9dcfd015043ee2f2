/* cnn.h - the small CNN of `lbscale train --model cnn` (bench/ only).
 *
 * 28x28x1 input -> conv3x3(16, pad 1) -> ReLU -> maxpool 2 ->
 * conv3x3(32, pad 1) -> ReLU -> maxpool 2 -> FC(1568 -> 128) -> ReLU ->
 * FC(128 -> 10); softmax cross-entropy.  Activations are NHWC (sample,
 * row, column, channel) so that a convolution over the whole batch is one
 * im2col and one OpenBLAS sgemm:
 *   col[b*H*W][9*Cin]  (row: the 3x3xCin patch, (kh, kw, ci) order, zero
 *                       padding outside the image)
 *   out[b*H*W][Cout] = col W^T + bias,  W is [Cout][3][3][Cin]
 *   backward: dW = dOut^T col, db = column sums of dOut,
 *             dcol = dOut W, scattered back (col2im) into dIn.
 * The FC layers are the MLP's (row-major, W [out][in]); fc1's input is the
 * NHWC-flattened 7x7x32 map.  tests/cnn_ref.py recomputes all of it in
 * numpy from cnn_dump's output.
 *
 * Parameters: 8 lbs_layer tensors in the order conv1.weight {16,3,3,1},
 * conv1.bias, conv2.weight {32,3,3,16}, conv2.bias, fc1.weight {128,1568},
 * fc1.bias, fc2.weight {10,128}, fc2.bias.
 *
 * It lives inside struct mlp (mlp.h): cnn_new fills one whose m->cnn is
 * set, and mlp_forward/mlp_loss/mlp_backward/mlp_init/mlp_free dispatch
 * here, so `lbscale train` drives both models the same way.  keep[] drops
 * a tensor's gradient computation as for the MLP.
 */
#ifndef LBS_CNN_H
#define LBS_CNN_H

#include <stddef.h>
#include <stdint.h>

#include "lbscale/error.h"

struct mlp;

#define CNN_SPEC "cnn"

int cnn_new(size_t max_batch, struct mlp **out, struct lbs_err *err);
void cnn_free_state(struct mlp *m);
/* He-normal weights (fan-in 9*Cin for the convolutions), zero biases. */
void cnn_init(struct mlp *m, uint64_t seed);
void cnn_forward(struct mlp *m, const float *w, const float *x, size_t b);
void cnn_backward(struct mlp *m, const float *x, size_t b,
                  const uint8_t *keep, int accumulate);

/* Training augmentation in place on b 28x28 images (normalised floats):
 * random crop with padding `pad` (the shifted-out border filled with the
 * value of a black pixel, `fill`) and a horizontal flip with probability
 * 1/2; draws keyed by (seed, step, sample). */
void cnn_augment(float *x, size_t b, int pad, float fill, uint64_t seed,
                 uint64_t step, uint64_t first_sample);

#endif
