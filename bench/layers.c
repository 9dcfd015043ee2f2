/* layers.c - benchmark parameter sets, filled with reproducible values. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "lbscale/param.h"

static float *alloc_f32(size_t n)
{
    return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
}

/* Values in [-1, 1) from a per-layer hash; threads touch their own pages
 * first, like the kernels that later stream over them. */
static void fill(float *x, size_t n, uint64_t seed, float scale)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x[i] = scale * ((float)(z >> 40) / (float)(1 << 23) - 1.0f);
    }
}

static int add(struct layer_set *s, size_t cap, const char *name, int ndim,
               size_t d0, size_t d1)
{
    if (s->n == cap)
        return -ENOMEM;
    struct lbs_layer *L = &s->l[s->n];
    L->n = ndim == 1 ? d0 : d0 * d1;
    L->ndim = ndim;
    L->shape[0] = d0;
    L->shape[1] = d1;
    L->name = strdup(name);
    L->w = alloc_f32(L->n);
    L->g = alloc_f32(L->n);
    if (!L->name || !L->w || !L->g) {
        free((void *)L->name);
        free(L->w);
        free(L->g);
        return -ENOMEM;
    }
    s->n++;
    s->elements += L->n;
    return 0;
}

static int make_bert(struct layer_set *s, size_t cap, size_t elements)
{
    /* per block: q,k,v,o (d x d), ffn (d x 4d, 4d x d) = 12 d^2 weights,
     * plus biases and LayerNorm vectors */
    size_t d = (size_t)sqrt((double)elements / (24.0 * 12.0));
    if (d < 1)
        d = 1;
    char name[64];
    static const char *mat[] = {"q", "k", "v", "o"};
    for (int b = 0; b < 24; b++) {
        for (int j = 0; j < 4; j++) {
            snprintf(name, sizeof name, "block%d.attn.%s.weight", b, mat[j]);
            if (add(s, cap, name, 2, d, d)) return -ENOMEM;
            snprintf(name, sizeof name, "block%d.attn.%s.bias", b, mat[j]);
            if (add(s, cap, name, 1, d, 0)) return -ENOMEM;
        }
        snprintf(name, sizeof name, "block%d.ffn.in.weight", b);
        if (add(s, cap, name, 2, 4 * d, d)) return -ENOMEM;
        snprintf(name, sizeof name, "block%d.ffn.in.bias", b);
        if (add(s, cap, name, 1, 4 * d, 0)) return -ENOMEM;
        snprintf(name, sizeof name, "block%d.ffn.out.weight", b);
        if (add(s, cap, name, 2, d, 4 * d)) return -ENOMEM;
        snprintf(name, sizeof name, "block%d.ffn.out.bias", b);
        if (add(s, cap, name, 1, d, 0)) return -ENOMEM;
        for (int j = 0; j < 2; j++) {
            snprintf(name, sizeof name, "block%d.ln%d.weight", b, j);
            if (add(s, cap, name, 1, d, 0)) return -ENOMEM;
        }
    }
    return 0;
}

int layers_make(const char *preset, size_t elements, unsigned seed,
                struct layer_set *out, struct lbs_err *err)
{
    memset(out, 0, sizeof *out);
    size_t k = 0, cap;
    int bert = 0;
    if (!strcmp(preset, "flat")) {
        k = 1;
    } else if (!strncmp(preset, "uniform:", 8)) {
        if (lbs_parse_size(preset + 8, &k) || k == 0 || k > 100000)
            return lbs_err_set(err, -EINVAL, "--layers: '%s': K must be an "
                               "integer in 1..100000", preset);
    } else if (!strcmp(preset, "bert")) {
        bert = 1;
    } else {
        return lbs_err_set(err, -EINVAL, "--layers: unknown preset '%s' "
                           "(flat, uniform:K, bert)", preset);
    }
    if (!bert && elements < k)
        return lbs_err_set(err, -EINVAL, "--layers: %zu elements cannot "
                           "fill %zu layers", elements, k);
    cap = bert ? 24 * 14 : k;
    out->l = calloc(cap, sizeof *out->l);
    if (!out->l)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    int rc = 0;
    if (bert) {
        rc = make_bert(out, cap, elements);
    } else {
        char name[64];
        for (size_t i = 0; i < k && !rc; i++) {
            size_t n = elements / k + (i < elements % k);
            snprintf(name, sizeof name, "layer%zu.weight", i);
            rc = add(out, cap, name, 2, 1, n);
        }
    }
    if (rc) {
        layers_free(out);
        return lbs_err_set(err, -ENOMEM, "cannot allocate %zu elements of "
                           "parameters and gradients", elements);
    }
    for (size_t i = 0; i < out->n; i++) {
        fill(out->l[i].w, out->l[i].n, seed * 1000003ull + 2 * i, 0.1f);
        fill(out->l[i].g, out->l[i].n, seed * 1000003ull + 2 * i + 1, 0.01f);
    }
    return 0;
}

void layers_free(struct layer_set *s)
{
    for (size_t i = 0; s->l && i < s->n; i++) {
        free((void *)s->l[i].name);
        free(s->l[i].w);
        free(s->l[i].g);
    }
    free(s->l);
    memset(s, 0, sizeof *s);
}
