/* test_cnn.c - the CNN of `lbscale train --model cnn` (train/cnn.c):
 * gradients against central finite differences (in double via the loss's
 * double sum), keep[] leaving dropped tensors untouched, augmentation. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "../train/cnn.h"
#include "../train/mlp.h"
#include "lbscale/rng.h"

#define B 3

static void inputs(float *x, uint8_t *y)
{
    uint64_t k = lbs_rng_key(5, 1, 2);
    for (int i = 0; i < B * 784; i++)
        x[i] = (float)(2.0 * lbs_rng_uniform(k, (uint64_t)i) - 1.0);
    for (int i = 0; i < B; i++)
        y[i] = (uint8_t)(i * 3 % 10);
}

static double loss_at(struct mlp *m, const float *x, const uint8_t *y)
{
    long c = 0;
    mlp_forward(m, m->w, x, B);
    return mlp_loss(m, y, B, 0, 0, &c) / B;
}

Test(cnn, gradients_match_finite_differences)
{
    openblas_set_num_threads(1);
    struct mlp *m;
    struct lbs_err e;
    cr_assert_eq(cnn_new(B, &m, &e), 0);
    mlp_init(m, 3);
    /* non-zero biases so that their gradients are exercised too */
    for (size_t l = 0; l < m->nlayers; l++)
        if (m->layers[l].ndim == 1)
            for (size_t j = 0; j < m->layers[l].n; j++)
                m->layers[l].w[j] = 0.05f * (float)((int)(j % 5) - 2);
    float x[B * 784];
    uint8_t y[B];
    inputs(x, y);
    long c = 0;
    mlp_forward(m, m->w, x, B);
    mlp_loss(m, y, B, 1, 1.0f / B, &c);
    mlp_backward(m, x, B, NULL, 0);
    float *g = malloc(m->nparams * sizeof *g);
    memcpy(g, m->g, m->nparams * sizeof *g);
    int checked = 0, bad = 0;
    for (size_t l = 0; l < m->nlayers; l++) {
        struct lbs_layer *L = &m->layers[l];
        uint64_t k = lbs_rng_key(9, 4, l);
        for (int t = 0; t < 12; t++) {
            size_t j = (size_t)lbs_rng_below(k, (uint64_t)t, L->n);
            size_t idx = (size_t)(L->w - m->w) + j;
            float w0 = m->w[idx];
            const float h = 1e-3f;
            m->w[idx] = w0 + h;
            double lp = loss_at(m, x, y);
            m->w[idx] = w0 - h;
            double lm = loss_at(m, x, y);
            m->w[idx] = w0;
            double fd = (lp - lm) / (2.0 * h), an = g[idx];
            checked++;
            if (fabs(fd - an) > 2e-3 + 3e-2 * fabs(an)) {
                bad++;
                fprintf(stderr, "%s[%zu]: fd %.6g analytic %.6g\n", L->name, j, fd,
                            an);
            }
        }
    }
    /* a max-pool or ReLU kink inside +-h spoils a few differences (4 of
     * 96 here); tests/cnn_ref.py checks every gradient exactly */
    cr_expect(bad <= checked / 10, "%d of %d gradients off", bad, checked);
    free(g);
    mlp_free(m);
}

Test(cnn, dropped_tensors_keep_their_gradient)
{
    openblas_set_num_threads(1);
    struct mlp *m;
    struct lbs_err e;
    cr_assert_eq(cnn_new(B, &m, &e), 0);
    mlp_init(m, 1);
    float x[B * 784];
    uint8_t y[B];
    inputs(x, y);
    for (size_t i = 0; i < m->nparams; i++)
        m->g[i] = 7.0f;
    uint8_t keep[8] = {0, 1, 1, 1, 1, 1, 0, 1};
    long c = 0;
    mlp_forward(m, m->w, x, B);
    mlp_loss(m, y, B, 1, 1.0f / B, &c);
    mlp_backward(m, x, B, keep, 0);
    for (size_t l = 0; l < 8; l++) {
        int same = 1;
        for (size_t j = 0; j < m->layers[l].n; j++)
            same &= m->layers[l].g[j] == 7.0f;
        cr_expect_eq(same, !keep[l], "%s", m->layers[l].name);
        if (!keep[l])
            cr_expect_eq(m->t_wgrad[l], 0.0);
    }
    cr_expect_eq(m->nlayers, 8u);
    cr_expect_eq(m->nparams, 16u * 9 + 16 + 32 * 144 + 32 + 128 * 1568 +
                             128 + 10 * 128 + 10);
    mlp_free(m);
}

Test(cnn, augmentation_crops_and_flips)
{
    float img[2 * 784], orig[2 * 784];
    for (int i = 0; i < 2 * 784; i++)
        img[i] = orig[i] = (float)i;
    cnn_augment(img, 2, 0, -1.0f, 1, 1, 0);   /* pad 0: flip at most */
    for (int s = 0; s < 2; s++) {
        const float *a = img + s * 784, *o = orig + s * 784;
        int same = !memcmp(a, o, 784 * sizeof(float)), flipped = 1;
        for (int r = 0; r < 28; r++)
            for (int c = 0; c < 28; c++)
                flipped &= a[r * 28 + c] == o[r * 28 + 27 - c];
        cr_expect(same || flipped, "sample %d neither kept nor flipped", s);
    }
    /* pad 2: every pixel is a source pixel or the fill; same draw, same
     * result */
    float a1[784], a2[784];
    for (int i = 0; i < 784; i++)
        a1[i] = a2[i] = (float)i;
    cnn_augment(a1, 1, 2, -1.0f, 4, 9, 3);
    cnn_augment(a2, 1, 2, -1.0f, 4, 9, 3);
    cr_expect(!memcmp(a1, a2, sizeof a1));
    for (int i = 0; i < 784; i++)
        cr_expect(a1[i] == -1.0f || (a1[i] >= 0 && a1[i] < 784));
}
