/* layers.c - benchmark parameter sets, filled with reproducible values. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "layers.h"
#include "lbscale/file.h"
#include "lbscale/mem.h"
#include "lbscale/param.h"
#include "memsize.h"

static float *alloc_f32(size_t n)
{
    return lbs_array_alloc(n, sizeof(float));
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
    if (ndim == 1)
        L->n = d0;
    else if (__builtin_mul_overflow(d0, d1, &L->n))
        return -ENOMEM;
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

/* BERT-Large (Devlin et al.): hidden 1024, 24 blocks, FFN 4096, vocab
 * 30522, 512 positions, 2 token types, pooler and MLM transform head. */
static int make_bert_large(struct layer_set *s, size_t cap)
{
    const size_t h = 1024, f = 4096;
    char name[64];
    static const char *ln = "LayerNorm";
    int rc = add(s, cap, "embeddings.word", 2, 30522, h) |
             add(s, cap, "embeddings.position", 2, 512, h) |
             add(s, cap, "embeddings.token_type", 2, 2, h) |
             add(s, cap, "embeddings.LayerNorm.weight", 1, h, 0) |
             add(s, cap, "embeddings.LayerNorm.bias", 1, h, 0);
    static const char *att[] = {"query", "key", "value", "output"};
    for (int b = 0; b < 24 && !rc; b++) {
        for (int j = 0; j < 4; j++) {
            snprintf(name, sizeof name, "layer%d.attention.%s.weight", b, att[j]);
            rc |= add(s, cap, name, 2, h, h);
            snprintf(name, sizeof name, "layer%d.attention.%s.bias", b, att[j]);
            rc |= add(s, cap, name, 1, h, 0);
        }
        snprintf(name, sizeof name, "layer%d.attention.%s.weight", b, ln);
        rc |= add(s, cap, name, 1, h, 0);
        snprintf(name, sizeof name, "layer%d.attention.%s.bias", b, ln);
        rc |= add(s, cap, name, 1, h, 0);
        snprintf(name, sizeof name, "layer%d.intermediate.weight", b);
        rc |= add(s, cap, name, 2, f, h);
        snprintf(name, sizeof name, "layer%d.intermediate.bias", b);
        rc |= add(s, cap, name, 1, f, 0);
        snprintf(name, sizeof name, "layer%d.output.weight", b);
        rc |= add(s, cap, name, 2, h, f);
        snprintf(name, sizeof name, "layer%d.output.bias", b);
        rc |= add(s, cap, name, 1, h, 0);
        snprintf(name, sizeof name, "layer%d.output.%s.weight", b, ln);
        rc |= add(s, cap, name, 1, h, 0);
        snprintf(name, sizeof name, "layer%d.output.%s.bias", b, ln);
        rc |= add(s, cap, name, 1, h, 0);
    }
    if (rc)
        return -ENOMEM;
    return add(s, cap, "pooler.weight", 2, h, h) |
           add(s, cap, "pooler.bias", 1, h, 0) |
           add(s, cap, "cls.transform.weight", 2, h, h) |
           add(s, cap, "cls.transform.bias", 1, h, 0) |
           add(s, cap, "cls.transform.LayerNorm.weight", 1, h, 0) |
           add(s, cap, "cls.transform.LayerNorm.bias", 1, h, 0) |
           add(s, cap, "cls.decoder.bias", 1, 30522, 0);
}

static int too_big(const char *path, const char *layer, struct lbs_err *err)
{
    return lbs_err_set(err, -EINVAL, "--layers %s: layer '%s': more "
                       "parameters than the address space holds", path,
                       layer);
}

/* Largest --layers file read (BERT-Large's is 30 KB). */
#define LAYERS_FILE_MAX_BYTES ((size_t)64 << 20)

/* Top-level keys a --layers file may hold: "layers", what train
 * --export-layers writes beside it ("model", "parameters"), and the rest
 * of a simulator model file (sim/data/models/), which is read as is.  Any
 * other key is a typo or another format: refused, not ignored. */
static const char *const layers_file_keys[] = {
    "layers", "model", "parameters", "format", "version", "name",
    "description", "sources", "notes", "batch_per_gpu", "seq_len",
    "bucket_mb", "efficiency", NULL};

static int layers_file_key_ok(const char *k)
{
    for (size_t i = 0; layers_file_keys[i]; i++)
        if (!strcmp(k, layers_file_keys[i]))
            return 1;
    return 0;
}

/* Layers from a JSON file: {"layers": [{"name": s, "shape": [d0, ...]}]};
 * a dry run only validates and adds up s->elements. */
static int make_from_file(const char *path, struct layer_set *s, int dry,
                          struct lbs_err *err)
{
    json_error_t je;
    char *text;
    size_t len;
    struct lbs_err re;
    int rc = lbs_read_file(path, LAYERS_FILE_MAX_BYTES, &text, &len, &re);
    if (rc)
        return lbs_err_set(err, rc, "--layers %s", re.msg);
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root)
        return lbs_err_set(err, -EINVAL, "--layers %s: %s (line %d)", path,
                           je.text, je.line);
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
        if (!layers_file_key_ok(key)) {
            rc = lbs_err_set(err, -EINVAL, "--layers %s: unknown key '%s' "
                             "(a layers file holds \"layers\" and, from "
                             "train --export-layers, \"model\" and "
                             "\"parameters\")", path, key);
            goto out;
        }
    json_t *arr = json_object_get(root, "layers");
    size_t n = json_array_size(arr);
    if (!json_is_array(arr) || n == 0) {
        rc = lbs_err_set(err, -EINVAL, "--layers %s: needs a non-empty "
                         "\"layers\" array", path);
        goto out;
    }
    if (!dry && !(s->l = calloc(n, sizeof *s->l))) {
        rc = lbs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *L = json_array_get(arr, i), *shape = json_object_get(L, "shape");
        const char *name = json_string_value(json_object_get(L, "name"));
        size_t nd = json_array_size(shape), d[2] = {1, 1};
        if (!name || !json_is_array(shape) || nd < 1 || nd > LBS_MAX_DIMS) {
            rc = lbs_err_set(err, -EINVAL, "--layers %s: layer %zu needs "
                             "\"name\" and a \"shape\" of 1..%d positive "
                             "integers", path, i, LBS_MAX_DIMS);
            goto out;
        }
        /* collapse to 2-D: the optimizers only care about 1-D vs more */
        for (size_t j = 0; j < nd; j++) {
            json_int_t v = json_integer_value(json_array_get(shape, j));
            if (!json_is_integer(json_array_get(shape, j)) || v <= 0 ||
                v > ((json_int_t)1 << 34)) {
                rc = lbs_err_set(err, -EINVAL, "--layers %s: layer '%s': "
                                 "dimension %zu is not a positive integer",
                                 path, name, j);
                goto out;
            }
            if (__builtin_mul_overflow(d[j == 0 ? 0 : 1], (size_t)v,
                                       &d[j == 0 ? 0 : 1])) {
                rc = too_big(path, name, err);
                goto out;
            }
        }
        size_t prod;
        if (__builtin_mul_overflow(d[0], d[1], &prod) ||
            (dry && __builtin_add_overflow(s->elements, prod,
                                           &s->elements))) {
            rc = too_big(path, name, err);
            goto out;
        }
        if (!dry && add(s, n, name, nd == 1 ? 1 : 2, d[0], d[1])) {
            rc = lbs_err_set(err, -ENOMEM, "--layers %s: out of memory", path);
            goto out;
        }
    }
out:
    json_decref(root);
    return rc;
}

enum preset_kind { P_UNIFORM, P_BERT, P_BERT_LARGE, P_FILE };

/* Parameters of the bert preset for `elements` (make_bert's shapes: per
 * block 12 d^2 weights and 11 d vectors); 0 when it overflows. */
static size_t bert_elements(size_t elements)
{
    size_t d = (size_t)sqrt((double)elements / (24.0 * 12.0)), a, b;
    if (d < 1)
        d = 1;
    if (__builtin_mul_overflow(d, d, &a) || __builtin_mul_overflow(a, 12, &a) ||
        __builtin_mul_overflow(d, 11, &b) || __builtin_add_overflow(a, b, &a) ||
        __builtin_mul_overflow(a, 24, &a))
        return 0;
    return a;
}

/* BERT-Large's parameters (make_bert_large's shapes). */
static size_t bert_large_elements(void)
{
    const size_t h = 1024, f = 4096, vocab = 30522;
    size_t emb = (vocab + 512 + 2) * h + 2 * h;
    size_t block = 4 * (h * h + h) + 2 * h + f * h + f + h * f + h + 2 * h;
    size_t tail = 2 * (h * h + h) + 2 * h + vocab;
    return emb + 24 * block + tail;
}

/* Parse preset (no allocation; a file preset is read and validated) and
 * count its parameters into *total (0: more than size_t holds). */
static int parse_preset(const char *preset, size_t elements, size_t *kp,
                        enum preset_kind *kind, size_t *total,
                        struct lbs_err *err)
{
    size_t k = 0, len = strlen(preset);
    *kind = P_UNIFORM;
    if (!strcmp(preset, "flat")) {
        k = 1;
    } else if (!strncmp(preset, "uniform:", 8)) {
        if (lbs_parse_size(preset + 8, &k) || k == 0 || k > 100000)
            return lbs_err_set(err, -EINVAL, "--layers: '%s': K must be an "
                               "integer in 1..100000", preset);
    } else if (!strcmp(preset, "bert")) {
        *kind = P_BERT;
    } else if (!strcmp(preset, "bert-large")) {
        *kind = P_BERT_LARGE;
    } else if (len > 5 && !strcmp(preset + len - 5, ".json")) {
        struct layer_set none = {0};
        *kind = P_FILE;
        int rc = make_from_file(preset, &none, 1, err);
        *total = none.elements;
        return rc;
    } else {
        return lbs_err_set(err, -EINVAL, "--layers: unknown preset '%s' "
                           "(flat, uniform:K, bert, bert-large, FILE.json)",
                           preset);
    }
    if (*kind == P_UNIFORM && elements < k)
        return lbs_err_set(err, -EINVAL, "--layers: %zu elements cannot "
                           "fill %zu layers", elements, k);
    *kp = k;
    *total = *kind == P_BERT ? bert_elements(elements)
             : *kind == P_BERT_LARGE ? bert_large_elements() : elements;
    return 0;
}

int layers_check(const char *preset, size_t elements, struct lbs_err *err)
{
    size_t k, total = 0;
    enum preset_kind kind;
    char what[320];
    int rc = parse_preset(preset, elements, &k, &kind, &total, err);
    if (rc)
        return rc;
    /* name what the user gave: the count, or the preset that fixes it */
    if (kind == P_UNIFORM || kind == P_BERT)
        snprintf(what, sizeof what, "--elements %zu", elements);
    else
        snprintf(what, sizeof what, "--layers %.200s (%zu parameters)",
                 preset, total);
    if (total == 0)
        return lbs_err_set(err, -EINVAL, "%s: more parameters than the "
                           "address space holds", what);
    /* parameters and gradients, fp32: what layers_make allocates */
    return lbs_buffers_fit(total, sizeof(float), 2, what, err);
}

static int make_uniform(struct layer_set *s, size_t k, size_t elements)
{
    char name[64];
    int rc = 0;
    for (size_t i = 0; i < k && !rc; i++) {
        size_t n = elements / k + (i < elements % k);
        snprintf(name, sizeof name, "layer%zu.weight", i);
        rc = add(s, k, name, 2, 1, n);
    }
    return rc;
}

int layers_make(const char *preset, size_t elements, unsigned seed,
                struct layer_set *out, struct lbs_err *err)
{
    memset(out, 0, sizeof *out);
    size_t k = 0;
    enum preset_kind kind;
    size_t total = 0;
    int rc = parse_preset(preset, elements, &k, &kind, &total, err);
    if (rc)
        return rc;
    if (kind == P_FILE) {
        rc = make_from_file(preset, out, 0, err);
        if (rc) {
            layers_free(out);
            return rc;
        }
    } else {
        size_t cap = kind == P_BERT ? 24 * 14 : kind == P_BERT_LARGE ? 24 * 16 + 12 : k;
        if (!(out->l = calloc(cap, sizeof *out->l)))
            return lbs_err_set(err, -ENOMEM, "out of memory");
        rc = kind == P_BERT ? make_bert(out, cap, elements)
             : kind == P_BERT_LARGE ? make_bert_large(out, cap)
             : make_uniform(out, k, elements);
        if (rc) {
            layers_free(out);
            return lbs_err_set(err, -ENOMEM, "out of memory for %zu "
                               "parameters and their gradients", total);
        }
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
