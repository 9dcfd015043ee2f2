/* cnn_dump.c - one forward/backward of the CNN on a fixed batch, printed
 * as JSON (parameters, input, labels, logits, loss, gradients) for
 * tests/cnn_ref.py's numpy reference. */
#include <stdio.h>

#include <cblas.h>

#include "../train/cnn.h"
#include "../train/mlp.h"
#include "lbscale/rng.h"

#define B 4

static void arr(const char *k, const float *v, size_t n, int last)
{
    printf("\"%s\":[", k);
    for (size_t i = 0; i < n; i++)
        printf("%s%.9g", i ? "," : "", (double)v[i]);
    printf("]%s\n", last ? "" : ",");
}

int main(void)
{
    openblas_set_num_threads(1);
    struct mlp *m;
    struct lbs_err e;
    if (cnn_new(B, &m, &e))
        return 1;
    mlp_init(m, 11);
    for (size_t l = 0; l < m->nlayers; l++)
        if (m->layers[l].ndim == 1)
            for (size_t j = 0; j < m->layers[l].n; j++)
                m->layers[l].w[j] = 0.02f * (float)((int)(j % 7) - 3);
    static float x[B * 784];
    uint8_t y[B] = {1, 4, 9, 0};
    uint64_t k = lbs_rng_key(2, 3, 4);
    for (int i = 0; i < B * 784; i++)
        x[i] = (float)(2.0 * lbs_rng_uniform(k, (uint64_t)i) - 1.0);
    long c = 0;
    mlp_forward(m, m->w, x, B);
    double loss = mlp_loss(m, y, B, 1, 1.0f / B, &c) / B;
    mlp_backward(m, x, B, NULL, 0);
    printf("{\"loss\":%.12g,\n", loss);
    printf("\"y\":[%d,%d,%d,%d],\n", y[0], y[1], y[2], y[3]);
    arr("x", x, B * 784, 0);
    arr("logits", m->act[1], B * 10, 0);
    printf("\"layers\":[");
    for (size_t l = 0; l < m->nlayers; l++) {
        const struct lbs_layer *L = &m->layers[l];
        printf("%s{\"name\":\"%s\",\"shape\":[", l ? "," : "", L->name);
        for (int d = 0; d < L->ndim; d++)
            printf("%s%zu", d ? "," : "", L->shape[d]);
        printf("],\n");
        arr("w", L->w, L->n, 0);
        arr("g", L->g, L->n, 1);
        printf("}");
    }
    printf("]}\n");
    mlp_free(m);
    return 0;
}
